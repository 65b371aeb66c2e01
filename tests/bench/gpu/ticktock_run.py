#!/usr/bin/env python3
"""Tick-tock against data parallel on one GPU, with the node agent's memory waves.

Starts a wavepool-agent (NVML where it finds a GPU), runs ticktock_bench once per mode with the
agent's directory (each mode registers as a foreground task), scrapes the agent's /metrics while a
mode runs, and writes OUTDIR/ticktock.json: each mode's throughput and the memory-wave series the
agent recorded for it (docs/performance.md, "Tick-tock on one GPU").

With --batch largest it first searches the largest per-wave batch that one wave (data parallel)
trains without running out of device memory (doubling from --start-batch, then bisecting to
--batch-step), records the probes, and runs both modes at that batch: Wavelet's setting, where
tick-tock's two waves fit only because their peaks interleave.

Usage: ticktock_run.py OUTDIR --bench BIN --agent "CMD" [--batch B|largest] [--steps N]
                       [--warmup N] [--model M] [--device D] [--metrics-port P]
                       [--start-batch B] [--max-batch B] [--batch-step B]
"""
import argparse, json, os, subprocess, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from colloc_run import Agent, free_port  # noqa: E402

MODES = ("DataParallel", "TickTock")
WAVE_SERIES = ("wavepool_gpu_memory_wave_peak_bytes", "wavepool_gpu_memory_wave_trough_bytes",
               "wavepool_gpu_memory_wave_period_seconds",
               "wavepool_gpu_memory_wave_phase_offset_seconds",
               "wavepool_gpu_memory_wave_phase_offset_ratio")


def wave_lines(path):
    try:
        return [line.strip() for line in open(path)
                if line.startswith(WAVE_SERIES)]
    except OSError:
        return []


def largest_fitting(fits, start, limit, step):
    """The largest batch in [start, limit] for which fits(batch) is true, to within `step`:
    doubles from `start` until it does not fit (or passes `limit`), then bisects. None when even
    `start` does not fit. fits() may raise to end the search."""
    if not fits(start):
        return None
    good, bad = start, None
    while bad is None:
        if good >= limit:
            return good
        trial = min(2 * good, limit)
        if fits(trial):
            good = trial
        else:
            bad = trial
    while bad - good > step:
        middle = (good + bad) // 2 // step * step
        if middle <= good:
            break
        if fits(middle):
            good = middle
        else:
            bad = middle
    return good


class OutOfMemoryProbe:
    """fits(batch): whether one wave (data parallel) of `batch` trains a few steps on the device.
    True when the bench exits 0; False when it ran out of device memory; any other failure
    raises, naming the probe's log."""

    def __init__(self, args):
        self.args, self.probes = args, []

    def __call__(self, batch):
        log_path = f"{self.args.outdir}/probe-batch-{batch}.log"
        cmd = [self.args.bench, "--modes", "DataParallel", "--model", self.args.model,
               "--batch", str(batch), "--steps", "2", "--warmup", "1",
               "--device", self.args.device]
        with open(log_path, "w") as log:
            code = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT).returncode
        text = open(log_path, errors="replace").read()
        out_of_memory = "out of memory" in text.lower()
        self.probes.append({"batch": batch, "exit": code, "out_of_memory": out_of_memory})
        print(json.dumps({"probe": self.probes[-1]}), flush=True)
        if code == 0:
            return True
        if out_of_memory:
            return False
        raise RuntimeError(f"batch {batch}: exit {code}, not out of memory; see {log_path}")


def run_mode(args, agent, mode):
    cmd = [args.bench, "--modes", mode, "--model", args.model, "--batch", str(args.batch),
           "--steps", str(args.steps), "--warmup", str(args.warmup), "--device", args.device,
           "--agent-dir", agent.dir]
    log = open(f"{args.outdir}/ticktock-{mode}.log", "w")
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=log, text=True)
    # The latest scrape taken while the mode trains holds its memory waves.
    while proc.poll() is None:
        time.sleep(2)
        if proc.poll() is None:
            agent.scrape(f"running-{mode}")
    out = proc.stdout.read()
    result = {"mode": mode, "exit": proc.returncode}
    for line in out.splitlines():
        if line.startswith("{"):
            result.update(json.loads(line))
    result["memory_waves"] = wave_lines(
        f"{args.outdir}/agent-metrics-ticktock-running-{mode}.txt")
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("outdir")
    parser.add_argument("--bench", required=True)
    parser.add_argument("--agent", required=True)
    parser.add_argument("--model", default="resnet50")
    parser.add_argument("--batch", default="128", help="per-wave batch, or 'largest'")
    parser.add_argument("--start-batch", type=int, default=64)
    parser.add_argument("--max-batch", type=int, default=8192)
    parser.add_argument("--batch-step", type=int, default=8)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--warmup", type=int, default=8)
    parser.add_argument("--device", default="cuda:0")
    parser.add_argument("--metrics-port", type=int, default=19403, help="0: any free port")
    args = parser.parse_args()
    os.makedirs(args.outdir, exist_ok=True)
    if args.metrics_port == 0:
        args.metrics_port = free_port()
    results = []
    if args.batch == "largest":
        probe = OutOfMemoryProbe(args)
        largest = largest_fitting(probe, args.start_batch, args.max_batch, args.batch_step)
        results.append({"mode": "largest_one_wave_batch", "batch": largest,
                        "limit": args.max_batch, "probes": probe.probes})
        print(json.dumps(results[-1]), flush=True)
        if largest is None:
            json.dump(results, open(f"{args.outdir}/ticktock.json", "w"), indent=1)
            return 1
        args.batch = largest
    args.batch = int(args.batch)
    with Agent(args, "ticktock", results) as agent:
        for mode in MODES:
            results.append(run_mode(args, agent, mode))
            print(json.dumps(results[-1]), flush=True)
    by_mode = {r["mode"]: r for r in results if r.get("mode") in MODES}
    if all(by_mode.get(m, {}).get("samples_per_s") for m in MODES):
        results.append({"mode": "ratio", "ticktock_over_dp": round(
            by_mode["TickTock"]["samples_per_s"] / by_mode["DataParallel"]["samples_per_s"], 3)})
        print(json.dumps(results[-1]), flush=True)
    json.dump(results, open(f"{args.outdir}/ticktock.json", "w"), indent=1)
    return 0 if all(r.get("exit", 0) == 0 for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
