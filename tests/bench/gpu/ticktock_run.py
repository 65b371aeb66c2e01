#!/usr/bin/env python3
"""Tick-tock against data parallel on one GPU, with the node agent's memory waves.

Starts a wavepool-agent (NVML where it finds a GPU), runs ticktock_bench once per mode with the
agent's directory (each mode registers as a foreground task), scrapes the agent's /metrics while a
mode runs, and writes OUTDIR/ticktock.json: each mode's throughput and the memory-wave series the
agent recorded for it (docs/performance.md, "Tick-tock on one GPU").

Usage: ticktock_run.py OUTDIR --bench BIN --agent "CMD" [--batch B] [--steps N] [--warmup N]
                       [--model M] [--device D] [--metrics-port P]
"""
import argparse, json, os, subprocess, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from colloc_run import Agent  # noqa: E402

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
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--warmup", type=int, default=8)
    parser.add_argument("--device", default="cuda:0")
    parser.add_argument("--metrics-port", type=int, default=19403)
    args = parser.parse_args()
    os.makedirs(args.outdir, exist_ok=True)
    results = []
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
