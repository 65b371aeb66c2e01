#!/usr/bin/env python3
"""The operator's binaries configure and are buildable without LibTorch.

The controller's and the agent's image builders configure with -DWAVEPOOL_WITH_TORCH=OFF and
install no LibTorch (images/controller, images/agent). This configures the project that way in
a scratch directory and checks that the binaries those images build are targets, that nothing
that needs LibTorch is, and that LibTorch was not looked for.
"""
import argparse
import pathlib
import subprocess
import sys
import tempfile

OPERATOR_BINARIES = ("wavepool-controller", "wavepool-agent", "wavepool-gpus")
TORCH_BINARIES = ("wavepool-worker", "wavepool")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source-dir", type=pathlib.Path, required=True)
    parser.add_argument("--cmake", default="cmake")
    args = parser.parse_args()
    problems = []
    with tempfile.TemporaryDirectory() as build:
        configure = subprocess.run(
            [args.cmake, "-S", str(args.source_dir), "-B", build, "-G", "Ninja",
             "-DWAVEPOOL_WITH_TORCH=OFF", "-DWAVEPOOL_BUILD_TESTS=OFF",
             "-DWAVEPOOL_BUILD_BENCHMARKS=OFF"],
            capture_output=True, text=True)
        if configure.returncode != 0:
            print(f"configuring with -DWAVEPOOL_WITH_TORCH=OFF failed:\n{configure.stderr}",
                  file=sys.stderr)
            return 1
        targets = subprocess.run(["ninja", "-C", build, "-t", "targets", "all"],
                                 capture_output=True, text=True, check=True).stdout
        names = {line.split(":")[0].rsplit("/", 1)[-1] for line in targets.splitlines()}
        for binary in OPERATOR_BINARIES:
            if binary not in names:
                problems.append(f"{binary} is not a target without LibTorch")
        for binary in TORCH_BINARIES:
            if binary in names:
                problems.append(f"{binary} is a target without LibTorch, but it links LibTorch")
        cache = (pathlib.Path(build) / "CMakeCache.txt").read_text()
        if "Torch_DIR" in cache or "LibTorch" in configure.stdout:
            problems.append("LibTorch was looked for although WAVEPOOL_WITH_TORCH=OFF")
    for problem in problems:
        print(problem, file=sys.stderr)
    if not problems:
        print(f"configured without LibTorch: {', '.join(OPERATOR_BINARIES)} buildable")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
