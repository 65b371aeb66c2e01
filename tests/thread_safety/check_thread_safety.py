#!/usr/bin/env python3
"""Runs clang's thread-safety analysis over wavepool's own sources.

Every source in compile_commands.json that takes a lock, or includes (directly or through other
project headers) a header declaring lock-annotated members, is parsed with
`clang++ -fsyntax-only -Wthread-safety -Werror` and the defines, include paths and language flags
CMake gave GCC. The project's own warning flags are left out: GCC builds enforce them, and here
only the lock annotations are being checked. LibTorch sources are left out (their headers take
~15 s each to parse and nothing in them is annotated) unless they take a lock themselves. Exits
77 (a CTest skip) when clang++ is missing.

Usage: check_thread_safety.py --compile-commands build/compile_commands.json \
           --source-dir . [--clang clang++] [--jobs 2] [--list] [--only REGEX]
"""

import argparse
import concurrent.futures
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time

SKIP = 77
CLANG_NAMES = ["clang++", "clang++-16", "clang++-15", "clang++-14"]  # Debian's, newest first

# What makes a file worth analysing: a lock, a condition wait or a lock annotation.
LOCKING = re.compile(r"\babsl::(Mutex|MutexLock|ReleasableMutexLock|Condition)\b|"
                     r"\bstd::(mutex|lock_guard|unique_lock|scoped_lock)\b|"
                     r"\bABSL_(GUARDED_BY|PT_GUARDED_BY|EXCLUSIVE_LOCKS_REQUIRED|"
                     r"SHARED_LOCKS_REQUIRED|LOCKS_EXCLUDED)\b")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.MULTILINE)

# The output, and GCC's precompiled header (clang cannot read it; the sources include what it
# holds themselves).
DROPPED_WITH_VALUE = {"-o", "-include"}


def read(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return ""


class IncludeGraph:
    """Resolves a source's quoted includes against its -I directories, project files only."""

    def __init__(self, source_dir):
        self.source_dir = source_dir
        self.locking = {}  # path -> whether it or a project header it includes takes a lock

    def in_project(self, path):
        # Not outside the tree, not a hidden folder (.devdeps), not a build directory.
        top = os.path.relpath(path, self.source_dir).split(os.sep)[0]
        return not top.startswith(".") and not top.startswith("build")

    def resolve(self, name, including_dir, include_dirs):
        for directory in [including_dir] + include_dirs:
            candidate = os.path.normpath(os.path.join(directory, name))
            if os.path.isfile(candidate):
                return candidate
        return None

    def takes_locks(self, path, include_dirs, visiting=None):
        if path in self.locking:
            return self.locking[path]
        visiting = visiting if visiting is not None else set()
        if path in visiting:
            return False
        visiting.add(path)
        text = read(path)
        result = bool(LOCKING.search(text))
        if not result:
            for name in INCLUDE.findall(text):
                header = self.resolve(name, os.path.dirname(path), include_dirs)
                if (header and self.in_project(header) and
                        self.takes_locks(header, include_dirs, visiting)):
                    result = True
                    break
        self.locking[path] = result
        return result


def clang_arguments(entry, clang):
    args = entry["arguments"] if "arguments" in entry else shlex.split(entry["command"])
    out = [clang]
    skip_next = False
    for arg in args[1:]:
        if skip_next:
            skip_next = False
            continue
        if arg in DROPPED_WITH_VALUE:
            skip_next = True
            continue
        # -c: -fsyntax-only instead; -W*, -pedantic: the project's warnings are GCC's to enforce.
        if arg == "-c" or arg.startswith("-W") or arg.startswith("-pedantic"):
            continue
        out.append(arg)
    return out + ["-fsyntax-only", "-Wthread-safety", "-Werror"]


def include_dirs_of(arguments, directory):
    dirs = []
    for i, arg in enumerate(arguments):
        value = None
        if arg in ("-I", "-isystem") and i + 1 < len(arguments):
            value = arguments[i + 1]
        elif arg.startswith("-I") and len(arg) > 2:
            value = arg[2:]
        if value is not None:
            dirs.append(value if os.path.isabs(value) else os.path.join(directory, value))
    return dirs


def uses_torch(arguments):
    return any("/torch" in arg for arg in arguments)  # LibTorch's include directories


def select(entries, source_dir, clang):
    graph = IncludeGraph(source_dir)
    chosen, seen = [], set()
    for entry in entries:
        path = os.path.normpath(os.path.join(entry["directory"], entry["file"]))
        if path in seen or not graph.in_project(path) or not path.endswith((".cpp", ".cc")):
            continue
        seen.add(path)
        arguments = clang_arguments(entry, clang)
        if uses_torch(arguments):
            # Only a LibTorch source that locks something itself is worth its parse time.
            if not LOCKING.search(read(path)):
                continue
        elif not graph.takes_locks(path, include_dirs_of(arguments, entry["directory"])):
            continue
        chosen.append((path, entry["directory"], arguments))
    return chosen


def check(item):
    path, directory, arguments = item
    started = time.monotonic()
    result = subprocess.run(arguments, cwd=directory, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    return path, result.returncode, result.stdout, time.monotonic() - started


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--compile-commands", required=True)
    parser.add_argument("--source-dir", required=True)
    parser.add_argument("--clang", default="clang++")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--list", action="store_true", help="print the chosen sources and stop")
    parser.add_argument("--only", metavar="REGEX",
                        help="check only the chosen sources whose path (relative to --source-dir) "
                        "matches")
    options = parser.parse_args()

    candidates = (shutil.which(name) for name in [options.clang] + CLANG_NAMES)
    clang = next((found for found in candidates if found), None)
    if clang is None:
        print(f"thread-safety analysis skipped: {options.clang} not found (install Debian's clang)")
        return SKIP
    try:
        with open(options.compile_commands, encoding="utf-8") as f:
            entries = json.load(f)
    except (OSError, ValueError) as error:
        print(f"{options.compile_commands}: cannot read the compile commands: {error} "
              "(configure with CMAKE_EXPORT_COMPILE_COMMANDS=ON)")
        return 1

    chosen = select(entries, os.path.realpath(options.source_dir), clang)
    if not chosen:
        print(f"{options.compile_commands}: no project source takes a lock; wrong build directory?")
        return 1
    if options.only:
        only = re.compile(options.only)
        chosen = [c for c in chosen if only.search(os.path.relpath(c[0], options.source_dir))]
    if options.list:
        for path, _, _ in chosen:
            print(os.path.relpath(path, options.source_dir))
        return 0

    started = time.monotonic()
    failures = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, options.jobs)) as pool:
        for path, code, output, seconds in pool.map(check, chosen):
            if code != 0:
                failures.append(path)
                sys.stdout.write(output)
            elif os.environ.get("WAVEPOOL_THREAD_SAFETY_VERBOSE"):
                print(f"ok {seconds:5.1f}s {os.path.relpath(path, options.source_dir)}")
    elapsed = time.monotonic() - started
    print(f"clang -Wthread-safety: {len(chosen) - len(failures)} of {len(chosen)} sources clean "
          f"in {elapsed:.0f} s with {options.jobs} jobs")
    for path in failures:
        print(f"FAILED {os.path.relpath(path, options.source_dir)}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
