#!/usr/bin/env python3
"""Static checks of the container images' sources (docs/install.md, "Images").

    images_test.py check --source-dir DIR      checks images/*/Containerfile, .containerignore,
                                               scripts/build-images and the chart's values
    images_test.py self-test --source-dir DIR  breaks copies of those files one way at a time
                                               and expects `check` to name each problem

Needs only python3 (no buildah, no YAML module): CI runs it on every build. What is checked:
every Containerfile is multi-stage on Debian bookworm (the CUDA worker: a bookworm stage and
its CUDA base from an ARG without default), its builder installs CMake and Ninja, its runtime
stage installs no -dev package, runs as a numeric non-root USER (the agent as root, as the
chart's DaemonSet runs it) and carries the OCI labels; every binary it copies from the builder
and every target it builds is an add_executable of the project; .containerignore keeps build
directories out; the image names scripts/build-images produces are the chart's repositories.
"""

import argparse
import json
import pathlib
import re
import shutil
import sys
import tempfile

BOOKWORM = "debian:bookworm-slim"
LABELS = ("title", "description", "source", "licenses", "version")
IGNORED_DIRS = ("build*/", ".git/", ".tools/", ".devdeps/")
OPERATOR_IMAGES = {"controller", "agent"}  # built with -DWAVEPOOL_WITH_TORCH=OFF
ROOT_IMAGES = {"agent"}  # privileged: NVML and MPS (helm/wavepool/templates/agent-daemonset.yaml)


class Stage:
    def __init__(self, base, name, line):
        self.base, self.name, self.line = base, name, line
        self.instructions = []  # (keyword, arguments, line)

    def all(self, keyword):
        return [(args, line) for kw, args, line in self.instructions if kw == keyword]


def parse_containerfile(path):
    """Returns (global ARG names with their defaults, stages). Joins continued lines."""
    global_args, stages, pending, start = {}, [], "", 0
    for number, raw in enumerate(path.read_text().splitlines(), 1):
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if pending and line.startswith("#"):
            continue
        if not pending:
            start = number
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        text, pending = pending + line, ""
        keyword, _, args = text.partition(" ")
        keyword, args = keyword.upper(), args.strip()
        if keyword == "FROM":
            words = args.split()
            words = [w for w in words if not w.startswith("--")]
            name = words[2] if len(words) >= 3 and words[1].upper() == "AS" else None
            stages.append(Stage(words[0], name, start))
        elif not stages:
            if keyword == "ARG":
                key, _, default = args.partition("=")
                global_args[key] = default if "=" in args else None
        else:
            stages[-1].instructions.append((keyword, args, start))
    return global_args, stages


def apt_packages(stage):
    """Packages of every `apt-get install` in the stage's RUN instructions."""
    packages = []
    for args, _ in stage.all("RUN"):
        for command in re.split(r"&&|;|\|\|", args):
            words = command.split()
            if "apt-get" in words and "install" in words:
                after = words[words.index("install") + 1:]
                packages += [w for w in after if not w.startswith("-") and w != "\\"]
    return packages


def executables(source_dir):
    """Every add_executable name of the project's CMakeLists.txt files (build dirs excluded)."""
    names = set()
    for cmake in source_dir.rglob("CMakeLists.txt"):
        if any(part.startswith(("build", ".")) for part in cmake.relative_to(source_dir).parts):
            continue
        names.update(re.findall(r"add_executable\(\s*([\w.+-]+)", cmake.read_text()))
    return names


def build_images_table(script):
    """scripts/build-images' image keys -> names, and its default repository prefix."""
    text = script.read_text()
    table = re.search(r"declare -A image_name=\((.*?)\n\)", text, re.S)
    repository = re.search(r"^repository=(\S+)$", text, re.M)
    if not table or not repository:
        return None, None
    return dict(re.findall(r"\[([\w-]+)\]=(\S+)", table.group(1))), repository.group(1)


def yaml_scalar(path, keys):
    """The scalar at keys (nested mappings, block style) of a simple YAML file, or None."""
    depth, indent = 0, -1
    for raw in path.read_text().splitlines():
        line = raw.split(" #")[0].rstrip()
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        current = len(line) - len(line.lstrip())
        if current <= indent:
            return None  # left the mapping that should hold the next key
        key, sep, value = line.strip().partition(":")
        if not sep or key != keys[depth]:
            continue
        if depth == len(keys) - 1:
            return value.strip().strip('"').strip("'")
        depth, indent = depth + 1, current
    return None


def check_containerfile(key, path, image, exes, values, errors):
    where = f"{path.relative_to(path.parents[2])}"
    global_args, stages = parse_containerfile(path)
    if len(stages) < 2:
        errors.append(f"{where}: {len(stages)} FROM; a multi-stage build needs a builder and a "
                      "runtime stage")
        return
    bases = [s.base for s in stages]
    if key == "worker-cuda":
        if BOOKWORM not in bases:
            errors.append(f"{where}: no stage FROM {BOOKWORM} (the Debian dependencies)")
        arg_bases = [b for b in bases if b.startswith("${")]
        for base in arg_bases:
            arg = base.strip("${}")
            if arg not in global_args:
                errors.append(f"{where}: FROM {base} but no ARG {arg} before the first FROM")
        if "CUDA_BASE" not in global_args or global_args["CUDA_BASE"]:
            errors.append(f"{where}: the CUDA base must be ARG CUDA_BASE, without a default "
                          "(built only where it is given)")
        if not stages[-1].base.startswith("${"):
            errors.append(f"{where}: the runtime stage must be FROM a base given as ARG, not "
                          f"{stages[-1].base}")
    else:
        for stage in stages:
            if stage.base != BOOKWORM:
                errors.append(f"{where}:{stage.line}: FROM {stage.base}; every stage must be "
                              f"FROM {BOOKWORM}")
    runtime = stages[-1]
    builders = {s.name: s for s in stages[:-1] if s.name}

    # The builder: CMake and Ninja, building only project targets.
    built = set()
    for stage in stages[:-1]:
        for args, line in stage.all("RUN"):
            for targets in re.findall(r"--target((?:\s+[\w.+-]+)+)", args):
                for target in targets.split():
                    built.add(target)
                    if target not in exes:
                        errors.append(f"{where}:{line}: builds '{target}', which no "
                                      "add_executable of the project defines")
    if not built:
        errors.append(f"{where}: no `cmake --build ... --target NAME` in a builder stage")
    if key != "worker-cuda":
        packages = set(apt_packages(stages[0]))
        for needed in ("cmake", "ninja-build"):
            if needed not in packages:
                errors.append(f"{where}: the builder stage does not install {needed}")
        if key in OPERATOR_IMAGES:
            # The operator's binaries link no LibTorch: configured without it, their builders
            # need none of its ~1 GB of packages.
            configures = " ".join(a for stage in stages[:-1] for a, _ in stage.all("RUN"))
            if "-DWAVEPOOL_WITH_TORCH=OFF" not in configures:
                errors.append(f"{where}: the builder does not configure with "
                              f"-DWAVEPOOL_WITH_TORCH=OFF (the {key} links no LibTorch)")
            if "libtorch-dev" in packages:
                errors.append(f"{where}: the builder installs libtorch-dev, which the {key} "
                              "does not use")

    # The runtime stage: libraries only, a numeric user, labels, binaries from the builder.
    for package in apt_packages(runtime):
        if package.endswith("-dev"):
            errors.append(f"{where}: the runtime stage installs {package}; it needs only the "
                          "runtime library package")
    users = runtime.all("USER")
    if not users:
        errors.append(f"{where}: the runtime stage sets no USER")
    else:
        user, line = users[-1]
        uid, _, gid = user.partition(":")
        if not uid.isdigit() or (gid and not gid.isdigit()):
            errors.append(f"{where}:{line}: USER {user} is not numeric (uid[:gid]); Kubernetes "
                          "checks runAsNonRoot only on a numeric user")
        elif key in ROOT_IMAGES and uid != "0":
            errors.append(f"{where}:{line}: USER {user}, but the chart runs the {key} as root "
                          "(runAsUser: 0)")
        elif key not in ROOT_IMAGES and uid == "0":
            errors.append(f"{where}:{line}: USER {user}: the {key} must not run as root")
        elif key == "controller":
            chart = yaml_scalar(values, ["controller", "podSecurityContext", "runAsUser"])
            if chart != uid:
                errors.append(f"{where}:{line}: USER {user}, but {values.name} runs the "
                              f"controller as {chart}")
    labels = {}
    for args, _ in runtime.all("LABEL"):
        for name, value in re.findall(r'org\.opencontainers\.image\.(\w+)="([^"]*)"', args):
            labels[name] = value
    for label in LABELS:
        if label not in labels:
            errors.append(f"{where}: the runtime stage has no org.opencontainers.image.{label} "
                          "label")
    if "title" in labels and labels["title"] != image:
        errors.append(f"{where}: org.opencontainers.image.title is '{labels['title']}', the "
                      f"image is {image}")
    if labels.get("version") != "${VERSION}" or not any(
            a.split("=")[0] == "VERSION" for a, _ in runtime.all("ARG")):
        errors.append(f"{where}: org.opencontainers.image.version must be ${{VERSION}} from an "
                      "ARG VERSION of the runtime stage (scripts/build-images passes the tag)")
    copied = set()
    for args, line in runtime.all("COPY"):
        stage = re.search(r"--from=(\S+)", args)
        if not stage:
            errors.append(f"{where}:{line}: the runtime stage copies from the context; only "
                          "the builder's outputs belong there")
            continue
        if stage.group(1) not in builders:
            errors.append(f"{where}:{line}: COPY --from={stage.group(1)}: no such stage")
        for source in args.split()[1:-1]:
            if source.startswith("--"):
                continue
            if "/bin/" in source:
                binary = source.rsplit("/", 1)[1]
                copied.add(binary)
                if binary not in exes:
                    errors.append(f"{where}:{line}: copies '{binary}', which no add_executable "
                                  "of the project defines")
                elif binary not in built:
                    errors.append(f"{where}:{line}: copies '{binary}', which no builder stage "
                                  "builds (--target)")
    if not copied:
        errors.append(f"{where}: the runtime stage copies no binary from the builder")
    entry = runtime.all("ENTRYPOINT")
    if entry:
        program = json.loads(entry[-1][0])[0].rsplit("/", 1)[-1]
        if program not in copied:
            errors.append(f"{where}: ENTRYPOINT {program} is not a binary the image copies")
    return copied


def check(source_dir):
    errors = []
    script = source_dir / "scripts/build-images"
    values = source_dir / "helm/wavepool/values.yaml"
    names, repository = build_images_table(script)
    if names is None:
        return [f"{script}: no `declare -A image_name=(...)` table or `repository=` default"]
    exes = executables(source_dir)
    files = {p.parent.name: p for p in (source_dir / "images").glob("*/Containerfile")}
    for key in sorted(set(names) - set(files)):
        errors.append(f"scripts/build-images builds '{key}', but images/{key}/Containerfile "
                      "does not exist")
    for key in sorted(set(files) - set(names)):
        errors.append(f"images/{key}/Containerfile is not in scripts/build-images' image_name "
                      "table")
    copied = {}
    for key in sorted(set(files) & set(names)):
        copied[key] = check_containerfile(key, files[key], names[key], exes, values, errors)

    ignore = source_dir / ".containerignore"
    patterns = set(ignore.read_text().split()) if ignore.exists() else set()
    for pattern in IGNORED_DIRS:
        if pattern not in patterns and pattern.rstrip("/") not in patterns:
            errors.append(f".containerignore does not exclude {pattern}")

    for component in ("controller", "agent"):
        chart = yaml_scalar(values, [component, "image", "repository"])
        produced = f"{repository}/{names.get(component)}"
        if chart != produced:
            errors.append(f"helm/wavepool/values.yaml: {component}.image.repository is "
                          f"'{chart}', scripts/build-images produces {produced}")
        command = yaml_scalar(values, [component, "command"])
        program = json.loads(command)[0] if command else None
        if copied.get(component) is not None and program not in copied[component]:
            errors.append(f"helm/wavepool/values.yaml: {component}.command runs '{program}', "
                          f"which images/{component}/Containerfile does not hold")
    plan = source_dir / "images/smoke/mlp-tiny-plan.json"
    try:
        if json.loads(plan.read_text()).get("model") != "mlp_tiny":
            errors.append(f"{plan.relative_to(source_dir)}: not a plan of mlp_tiny")
    except (OSError, ValueError) as error:
        errors.append(f"{plan.relative_to(source_dir)}: {error}")
    return errors


# Each breakage: (file, old text, new text, a phrase the error must contain).
BREAKAGES = [
    ("images/controller/Containerfile", "USER 65532:65532", "USER wavepool", "is not numeric"),
    ("images/controller/Containerfile", "USER 65532:65532", "USER 0", "must not run as root"),
    ("images/controller/Containerfile", "USER 65532:65532", "USER 1000", "runs the controller as"),
    ("images/worker-cpu/Containerfile", "USER 65532:65532\n", "", "sets no USER"),
    ("images/agent/Containerfile", "USER 0:0", "USER 65532", "runs the agent as root"),
    ("images/agent/Containerfile", "FROM debian:bookworm-slim\n", "FROM ubuntu:24.04\n",
     "every stage must be FROM"),
    ("images/controller/Containerfile", "org.opencontainers.image.licenses=", "x.licenses=",
     "no org.opencontainers.image.licenses label"),
    ("images/controller/Containerfile", 'image.version="${VERSION}"', 'image.version="0.1"',
     "must be ${VERSION}"),
    ("images/agent/Containerfile", "/build/bin/wavepool-gpus /usr",
     "/build/bin/wavepool-gpus /build/bin/wavepool-nvml /usr", "'wavepool-nvml', which no"),
    ("images/worker-cpu/Containerfile", "--target wavepool-worker", "--target wavepool",
     "which no builder stage builds"),
    ("images/worker-cpu/Containerfile", "libtorch1.13 libgloo0", "libtorch-dev libgloo0",
     "installs libtorch-dev"),
    ("images/controller/Containerfile", "g++ cmake ninja-build", "g++ cmake",
     "does not install ninja-build"),
    ("images/agent/Containerfile", "-DWAVEPOOL_WITH_TORCH=OFF", "-DWAVEPOOL_WITH_TORCH=ON",
     "does not configure with -DWAVEPOOL_WITH_TORCH=OFF"),
    ("images/controller/Containerfile", "libssl-dev", "libssl-dev libtorch-dev",
     "installs libtorch-dev, which the controller"),
    ("images/worker-cuda/Containerfile", "ARG CUDA_BASE\n", "ARG CUDA_BASE=nvidia/cuda\n",
     "without a default"),
    ("images/worker-cuda/Containerfile", "FROM ${CUDA_RUNTIME_BASE}", "FROM ubuntu:24.04",
     "runtime stage must be FROM a base given as ARG"),
    (".containerignore", "build*/\n", "", "does not exclude build*/"),
    ("scripts/build-images", "[agent]=wavepool-agent", "[agent]=wavepool-node-agent",
     "agent.image.repository is 'wavepool/wavepool-agent'"),
    ("scripts/build-images", "  [worker-cuda]=wavepool-worker-cuda\n", "",
     "images/worker-cuda/Containerfile is not in"),
]
COPIED = ["images", "scripts/build-images", ".containerignore", "helm/wavepool/values.yaml"]


def self_test(source_dir):
    """Each breakage of a copy must be reported; the unbroken copy must pass."""
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        copy = pathlib.Path(tmp)
        for cmake in source_dir.rglob("CMakeLists.txt"):
            relative = cmake.relative_to(source_dir)
            if any(part.startswith(("build", ".")) for part in relative.parts):
                continue
            (copy / relative).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(cmake, copy / relative)
        for item in COPIED:
            source = source_dir / item
            (copy / item).parent.mkdir(parents=True, exist_ok=True)
            if source.is_dir():
                shutil.copytree(source, copy / item)
            else:
                shutil.copy(source, copy / item)
        clean = check(copy)
        if clean:
            failures.append(f"the unbroken copy fails: {clean}")
        for file, old, new, phrase in BREAKAGES:
            target = copy / file
            original = target.read_text()
            if old not in original:
                failures.append(f"{file}: the text to break is gone: {old!r}")
                continue
            target.write_text(original.replace(old, new, 1))
            errors = check(copy)
            target.write_text(original)
            if not any(phrase in e for e in errors):
                failures.append(f"{file}: {old!r} -> {new!r} was not reported as '{phrase}' "
                                f"(errors: {errors})")
    return failures


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=["check", "self-test"])
    parser.add_argument("--source-dir", type=pathlib.Path, required=True)
    args = parser.parse_args()
    source_dir = args.source_dir.resolve()
    problems = check(source_dir) if args.mode == "check" else self_test(source_dir)
    for problem in problems:
        print(problem, file=sys.stderr)
    if args.mode == "self-test" and not problems:
        print(f"every one of {len(BREAKAGES)} breakages was reported")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
