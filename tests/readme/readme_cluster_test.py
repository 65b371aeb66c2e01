#!/usr/bin/env python3
"""Runs the README's cluster walk-through ("A cluster on one machine") as written.

  readme_cluster_test.py --source-dir DIR --bin-dir DIR [--timeout SECONDS]

The section starts at the comment `<!-- readme-test: cluster` and ends at the next `## ` heading;
its fenced `sh` blocks run, unchanged and in order, in one bash (`set -euo pipefail`, so every
command must succeed) in a scratch directory that looks like the repository root: every top-level
entry of the source tree is linked there, and `build/bin` is the build tree's bin directory. The
README starts everything on port 0 (free ports), so parallel runs never clash. Before the last
block (which stops everything) the test saves the TrainingJobs as JSON. Then it checks what the
README promises:
  - the agent's GPUNode node-0 is listed with its agent version and a heartbeat;
  - `kubectl get tj` (and `-o wide`) shows vgg16 and resnet50-background planned (GPUs, strategy)
    and placed, with no Iter or Slowdown; conditions Planned and Placed True, Running False with
    reason PodsStarting; one Pending pod on node-0 per planned GPU;
  - the controller's /metrics has wavepool_controller lines, two jobs counted as Placed;
  - the last block stopped every process the walk-through started and removed its directory.
On failure or timeout the whole process group is killed, so nothing outlives the test.

Exit status: 0 passed, 1 failed (the problems, the commands run, their output and the logs are
printed), 77 skipped (no kubectl 1.31 or newer, which `kubectl wait --for=create` needs, or no
curl).
"""
import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

SKIP = 77
MARKER = "<!-- readme-test: cluster"
MIN_KUBECTL_MINOR = 31
MAX_LINES = 400  # of the walk-through's output printed on failure
PLAN_STRATEGIES = {"DataParallel", "BurstParallel", "TickTock", "ModelParallelWaves"}
# The README's jobs: role, model, spec.gpus and strategy (None: the planner's choice) of their
# manifests in examples/.
JOBS = {"vgg16": ("Foreground", "vgg16", 8, "BurstParallel"),
        "resnet50-background": ("Background", "resnet50", 1, None)}


# ---------------------------------------------------------------------------------------------
# The section's commands.

def section_blocks(readme_path):
    """The fenced sh blocks from MARKER to the next `## ` heading, each as one string."""
    with open(readme_path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith(MARKER)]
    if len(starts) != 1:
        raise ValueError(f"{readme_path}: expected one line starting with '{MARKER}', "
                         f"found {len(starts)}")
    blocks, block = [], None
    for number, line in enumerate(lines[starts[0] + 1:], start=starts[0] + 2):
        if block is None and line.startswith("## "):
            break
        if block is None and line.strip().startswith("```"):
            if line.strip() != "```sh":
                raise ValueError(f"{readme_path}:{number}: a code block of the tested section "
                                 f"must be ```sh, got {line.strip()!r}")
            block = []
        elif block is not None and line.strip() == "```":
            blocks.append("\n".join(block))
            block = None
        elif block is not None:
            block.append(line)
    if block is not None:
        raise ValueError(f"{readme_path}: the last sh block of the tested section is not closed")
    if len(blocks) < 2:
        raise ValueError(f"{readme_path}: the tested section has {len(blocks)} sh block(s); "
                         "expected the walk-through and a last block that stops it")
    return blocks


def walkthrough_script(blocks, probe_path):
    """One bash script: the blocks as written, and before the last one the test's probe."""
    parts = ["set -euo pipefail", "PS4='+ '", "set -x"]
    for i, block in enumerate(blocks):
        if i == len(blocks) - 1:
            # The test's only addition: the jobs as the API server has them, before the stop.
            parts.append(f"kubectl get tj -o json > '{probe_path}'")
        parts.append(f"# README block {i + 1}")
        parts.append(block)
    return "\n".join(parts) + "\n"


# ---------------------------------------------------------------------------------------------
# Running it.

def find_kubectl(source_dir):
    """The kubectl the README's PATH line finds first: .tools/bin, else PATH; None if neither."""
    tools = os.path.join(source_dir, ".tools", "bin", "kubectl")
    if os.access(tools, os.X_OK):
        return tools
    return shutil.which("kubectl")


def kubectl_minor(kubectl):
    """kubectl's minor version, -1 when it cannot tell."""
    try:
        out = subprocess.run([kubectl, "version", "--client", "-o", "json"], capture_output=True,
                             text=True, timeout=30, check=False).stdout
        return int(re.match(r"\d+", json.loads(out)["clientVersion"]["minor"]).group(0))
    except (OSError, subprocess.TimeoutExpired, ValueError, KeyError, AttributeError, TypeError):
        return -1


def make_root(work, source_dir, bin_dir):
    """A directory that looks like the repository root, with build/bin = bin_dir."""
    root = os.path.join(work, "root")
    os.makedirs(os.path.join(root, "build"))
    for entry in os.listdir(source_dir):
        if entry not in (".git", "build"):
            os.symlink(os.path.join(source_dir, entry), os.path.join(root, entry))
    os.symlink(os.path.abspath(bin_dir), os.path.join(root, "build", "bin"))
    return root


def group_members(pgid):
    """The live (not zombie) processes of process group `pgid`, as (pid, command line)."""
    members = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as f:
                state, _, group = f.read().rsplit(")", 1)[1].split()[:3]
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                command = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
        except (OSError, ValueError):
            continue  # gone meanwhile
        if int(group) == pgid and state != "Z":
            members.append((int(pid), command))
    return members


def kill_group(proc, grace=5.0):
    """SIGTERM `proc`'s process group, SIGKILL what is left after `grace` s, reap `proc`; True
    once no live process of the group is left (orphans may stay zombies until init reaps them)."""
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 10.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            pass  # nothing left, not even a zombie
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            proc.poll()
            if not group_members(proc.pid):
                return True
            time.sleep(0.1)
    return False


def run_walkthrough(script, root, work, timeout):
    """Runs the script in its own process group. Returns (exit code or None on timeout, output,
    problems about processes left behind)."""
    tmp = os.path.join(work, "tmp")
    home = os.path.join(work, "home")
    os.makedirs(tmp)
    os.makedirs(home)
    env = {k: v for k, v in os.environ.items() if not k.startswith("KUBE")}
    env.update({"HOME": home, "TMPDIR": tmp})
    script_path = os.path.join(work, "walkthrough.sh")
    with open(script_path, "w", encoding="utf-8") as f:
        f.write(script)
    out_path = os.path.join(work, "output.txt")
    problems = []
    with open(out_path, "wb") as out:
        proc = subprocess.Popen(["bash", "--noprofile", "--norc", script_path], cwd=root, env=env,
                                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
        code = None
        try:
            code = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            problems.append(f"the walk-through did not finish within {timeout} s")
        finally:
            # Whatever the outcome (a timeout, a failed command, this test interrupted), nothing
            # the walk-through started may outlive it.
            left = group_members(proc.pid)
            if left and code == 0:  # the last block claims to stop everything
                problems.append("processes of the walk-through were still running after it: "
                                + "; ".join(f"{pid} {command}" for pid, command in left))
            if (left or proc.poll() is None) and not kill_group(proc):
                problems.append(f"processes of group {proc.pid} survived SIGKILL: "
                                f"{group_members(proc.pid)}")
    with open(out_path, encoding="utf-8", errors="replace") as f:
        output = f.read()
    if code is not None and code != 0:
        problems.append(f"the walk-through exited with status {code} (a command failed)")
    if code == 0 and os.listdir(tmp):
        problems.append(f"the last block left {os.listdir(tmp)} in $TMPDIR")
    return code, output, problems


# ---------------------------------------------------------------------------------------------
# What the output must show.

def tables(output, header_words):
    """Every table in `output` whose header starts with `header_words`: lists of rows (words)."""
    found, rows = [], None
    for line in output.splitlines():
        words = line.split()
        if words[:len(header_words)] == header_words:
            rows = []
            found.append(rows)
        elif rows is not None and words and not line.startswith("+ "):
            rows.append(words)
        else:
            rows = None
    return found


def row_of(table, name):
    return next((row for row in table if row[0] == name), None)


def check_gpunodes(output, problems):
    found = tables(output, ["NAME", "NODE", "AGENT", "HEARTBEAT", "AGE"])
    if not found:
        problems.append("no `kubectl get gpunodes` table in the output")
        return
    row = row_of(found[-1], "node-0")
    # NAME NODE AGENT HEARTBEAT AGE: the agent published its version and a heartbeat.
    if (row is None or len(row) != 5 or row[1] != "node-0" or not re.match(r"\d", row[2])
            or not re.match(r"\d", row[3])):
        problems.append(f"GPUNode node-0 not listed with node, agent and heartbeat: {row}")


def check_jobs(output, problems):
    plain = tables(output, ["NAME", "ROLE", "PHASE", "GPUS", "STRATEGY", "ITER", "SLOWDOWN",
                            "AGE"])
    wide = tables(output, ["NAME", "ROLE", "PHASE", "GPUS", "STRATEGY", "ITER", "SLOWDOWN", "AGE",
                           "MODEL", "RESTARTS", "MAXGPUS"])
    plain = [t for t in plain if t not in wide]
    if not plain or not wide:
        problems.append("no `kubectl get tj` and `kubectl get tj -o wide` tables in the output")
        return {}
    planned_gpus = {}
    for name, (role, model, max_gpus, strategy) in JOBS.items():
        strategies = {strategy} if strategy else PLAN_STRATEGIES
        row = row_of(plain[-1], name)
        # Iter and Slowdown stay empty without a kubelet: NAME ROLE PHASE GPUS STRATEGY AGE.
        if (row is None or len(row) != 6 or row[1] != role or row[2] != "Placed"
                or not row[3].isdigit() or not 1 <= int(row[3]) <= max_gpus
                or row[4] not in strategies):
            problems.append(f"`kubectl get tj`: {name} is not {role}, Placed, with 1..{max_gpus} "
                            f"GPUs and a strategy in {sorted(strategies)}: {row}")
            continue
        planned_gpus[name] = int(row[3])
        wide_row = row_of(wide[-1], name)
        if wide_row is None or wide_row[-3:] != [model, "0", str(max_gpus)]:
            problems.append(f"`kubectl get tj -o wide`: {name} does not end with model {model}, "
                            f"0 restarts, MaxGPUs {max_gpus}: {wide_row}")
    return planned_gpus


def check_pods(output, planned_gpus, problems):
    found = tables(output, ["NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP", "NODE"])
    if not found:
        problems.append("no `kubectl get pods -o wide` table in the output")
        return
    for name, gpus in planned_gpus.items():
        pods = [row for row in found[-1] if re.fullmatch(re.escape(name) + r"-g0-\d+", row[0])]
        if len(pods) != gpus or any(row[2] != "Pending" or row[6] != "node-0" for row in pods):
            problems.append(f"{name}: expected {gpus} Pending pod(s) on node-0 (one per GPU of "
                            f"its plan), got {pods}")


def check_conditions(probe_path, problems):
    try:
        with open(probe_path, encoding="utf-8") as f:
            items = json.load(f)["items"]
    except (OSError, ValueError, KeyError) as error:
        problems.append(f"cannot read the TrainingJobs saved before the last block: {error}")
        return
    # What the README says of the jobs without a kubelet: condition type -> (status, reason).
    expected = {"Planned": ("True", None), "Placed": ("True", None),
                "Running": ("False", "PodsStarting")}
    for job in items:
        conditions = {c.get("type"): (c.get("status"), c.get("reason"))
                      for c in job.get("status", {}).get("conditions", [])}
        for kind, (status, reason) in expected.items():
            got = conditions.get(kind)
            if got is None or got[0] != status or (reason and got[1] != reason):
                problems.append(f"{job['metadata']['name']}: expected condition {kind} {status}"
                                + (f" ({reason})" if reason else "") + f", got {conditions}")
    if sorted(job["metadata"]["name"] for job in items) != sorted(JOBS):
        problems.append(f"expected the TrainingJobs {sorted(JOBS)}, got "
                        f"{[job['metadata']['name'] for job in items]}")


def check_metrics(output, problems):
    lines = [line for line in output.splitlines() if line.startswith("wavepool_controller_")]
    if not lines:
        problems.append("no wavepool_controller lines from the controller's /metrics")
    elif 'wavepool_controller_jobs{phase="Placed"} 2' not in lines:
        problems.append("the controller's /metrics does not count two Placed jobs: "
                        + "; ".join(line for line in lines if "_jobs{" in line))


# ---------------------------------------------------------------------------------------------

def print_logs(work):
    for directory, _, files in os.walk(os.path.join(work, "tmp")):
        for name in sorted(files):
            if name.endswith(".log"):
                path = os.path.join(directory, name)
                with open(path, encoding="utf-8", errors="replace") as f:
                    print(f"--- {path} ---\n{f.read()[-6000:]}")


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--source-dir", required=True)
    parser.add_argument("--bin-dir", required=True)
    parser.add_argument("--readme", help="default: <source-dir>/README.md")
    parser.add_argument("--timeout", type=float, default=180,
                        help="seconds for the whole walk-through (below CTest's TIMEOUT)")
    parser.add_argument("--keep", action="store_true", help="keep the scratch directory")
    args = parser.parse_args()
    # SIGTERM (ctest, a CI runner) unwinds like Ctrl-C, so that the walk-through is killed too.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("readme_cluster_test: terminated"))
    source_dir = os.path.abspath(args.source_dir)
    readme = args.readme or os.path.join(source_dir, "README.md")

    # The section is read first, so that a README the test cannot run fails even where it skips.
    try:
        blocks = section_blocks(readme)
    except (OSError, ValueError) as error:
        print(f"FAIL {error}")
        return 1

    kubectl = find_kubectl(source_dir)
    if kubectl is None:
        print("SKIP: no kubectl in .tools/bin (scripts/setup) or on PATH")
        return SKIP
    if kubectl_minor(kubectl) < MIN_KUBECTL_MINOR:
        print(f"SKIP: {kubectl} is not kubectl 1.{MIN_KUBECTL_MINOR} or newer "
              "(the README's `kubectl wait --for=create`)")
        return SKIP

    if shutil.which("curl") is None:
        print("SKIP: no curl on PATH (the README reads the controller's /metrics with it)")
        return SKIP

    work = tempfile.mkdtemp(prefix="wavepool-readme-")
    try:
        root = make_root(work, source_dir, args.bin_dir)
        probe = os.path.join(work, "trainingjobs.json")
        script = walkthrough_script(blocks, probe)
        if kubectl != os.path.join(source_dir, ".tools", "bin", "kubectl"):
            print(f"kubectl: {kubectl}")
        code, output, problems = run_walkthrough(script, root, work, args.timeout)
        if code == 0:
            check_gpunodes(output, problems)
            check_pods(output, check_jobs(output, problems), problems)
            check_conditions(probe, problems)
            check_metrics(output, problems)
        if problems:
            lines = output.splitlines()
            print(f"--- the commands run (in {root}) and their output"
                  + (f", last {MAX_LINES} of {len(lines)} lines" if len(lines) > MAX_LINES else "")
                  + " ---\n" + "\n".join(lines[-MAX_LINES:]))
            print_logs(work)
            for problem in problems:
                print(f"FAIL {problem}")
            print(f"readme_cluster_test: {len(problems)} problem(s)")
            return 1
        print(output)
        print(f"readme_cluster_test: passed ({len(blocks)} blocks of {readme})")
        return 0
    finally:
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
