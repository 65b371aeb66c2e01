#!/usr/bin/env python3
# The PyTorch baseline of foreground/background sharing on one GPU, kept unchanged so that
# docs/performance.md compares wavepool with exactly what it ran; colloc_run.py drives both.
"""Foreground/background collocation on one GPU, measured with real training steps.

What a user of a shared GPU can get without any wavepool mechanism, as the anchor for the
collocation goal: fg step time alone and beside a bg job under time-slicing, MPS, MPS with the
bg limited to a share of the SMs, and MPS with the bg at below-normal client priority.
Usage: colloc_probe.py OUTDIR   (starts and stops its own MPS daemon)
"""
import json, os, subprocess, sys, time, statistics

FG = dict(model="resnet50", batch=16, iters=100, warm=15)
BG = dict(model="resnet50", batch=64)

def worker(role, model, batch, iters, warm, ready_file, out_file, stop_file):
    import torch, torchvision
    torch.backends.cudnn.benchmark = True
    m = getattr(torchvision.models, model)().cuda().to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(m.parameters(), lr=0.01, momentum=0.9)
    x = torch.randn(batch, 3, 224, 224, device="cuda").to(memory_format=torch.channels_last)
    y = torch.randint(0, 1000, (batch,), device="cuda")
    prio = int(os.environ.get("PROBE_STREAM_PRIORITY", "0"))
    s = torch.cuda.Stream(priority=prio)
    def step():
        with torch.cuda.stream(s):
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = torch.nn.functional.cross_entropy(m(x), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
    for _ in range(warm):
        step()
    torch.cuda.synchronize()
    if role == "fg" and os.environ.get("PROBE_GRAPH") == "1":
        # The whole step as one CUDA graph, as a runtime without Python launch overhead runs it.
        g = torch.cuda.CUDAGraph()
        opt.zero_grad(set_to_none=True)
        with torch.cuda.graph(g, stream=s):
            with torch.autocast("cuda", dtype=torch.bfloat16, cache_enabled=False):
                loss = torch.nn.functional.cross_entropy(m(x), y)
            loss.backward()
            opt.step()
        def step():
            with torch.cuda.stream(s):
                g.replay()
        for _ in range(5):
            step()
        torch.cuda.synchronize()
    if role == "bg":
        open(ready_file, "w").close()
        done = []
        while not os.path.exists(stop_file):
            step(); s.synchronize(); done.append(time.time())
        json.dump({"batch": batch, "done": done}, open(out_file, "w"))
    else:
        times = []
        t_begin = time.time()
        for _ in range(iters):
            t = time.perf_counter(); step(); s.synchronize(); times.append(time.perf_counter() - t)
        json.dump({"median_ms": 1e3 * statistics.median(times),
                   "p90_ms": 1e3 * sorted(times)[int(0.9 * len(times))],
                   "imgs_per_s": batch * len(times) / sum(times),
                   "window": [t_begin, time.time()]}, open(out_file, "w"))

def spawn(role, cfg, tag, env_extra, d):
    env = dict(os.environ, **env_extra)
    files = [f"{d}/{tag}.{role}.{k}" for k in ("ready", "json", "stop")]
    for f in files:
        if os.path.exists(f): os.remove(f)
    args = [sys.executable, __file__, "--worker", role, cfg["model"], str(cfg["batch"]),
            str(cfg.get("iters", 0)), str(cfg.get("warm", 15)), *files]
    return subprocess.Popen(args, env=env), files

def run_mode(tag, d, fg_env=None, bg_env=None, with_fg=True, with_bg=True, bg_seconds=8):
    res = {"mode": tag}
    bg = None
    if with_bg:
        bg, bfiles = spawn("bg", BG, tag, bg_env or {}, d)
        while not os.path.exists(bfiles[0]):
            if bg.poll() is not None: res["error"] = "bg died"; return res
            time.sleep(0.2)
    t0 = time.time()
    if with_fg:
        fg, ffiles = spawn("fg", FG, tag, fg_env or {}, d)
        fg.wait()
        res["fg"] = json.load(open(ffiles[1])) if os.path.exists(ffiles[1]) else {"error": fg.returncode}
    else:
        time.sleep(bg_seconds)
    if bg:
        open(bfiles[2], "w").close(); bg.wait()
        if os.path.exists(bfiles[1]):
            b = json.load(open(bfiles[1]))
            lo, hi = res["fg"]["window"] if with_fg and "window" in res.get("fg", {}) else (b["done"][0], b["done"][-1])
            n = sum(1 for t in b["done"] if lo <= t <= hi)
            res["bg"] = {"imgs_per_s": n * b["batch"] / max(hi - lo, 1e-9), "steps_in_window": n}
        else:
            res["bg"] = {"error": bg.returncode}
    res["wall_s"] = round(time.time() - t0, 1)
    print(json.dumps(res), flush=True)
    return res

def mps(d, on):
    env = dict(os.environ, CUDA_MPS_PIPE_DIRECTORY=f"{d}/mps-pipe", CUDA_MPS_LOG_DIRECTORY=f"{d}/mps-log")
    os.makedirs(env["CUDA_MPS_PIPE_DIRECTORY"], exist_ok=True); os.makedirs(env["CUDA_MPS_LOG_DIRECTORY"], exist_ok=True)
    if on:
        subprocess.run(["nvidia-cuda-mps-control", "-d"], env=env, check=True)
        os.environ["CUDA_MPS_PIPE_DIRECTORY"] = env["CUDA_MPS_PIPE_DIRECTORY"]
        os.environ["CUDA_MPS_LOG_DIRECTORY"] = env["CUDA_MPS_LOG_DIRECTORY"]
        time.sleep(1)
    else:
        subprocess.run(["nvidia-cuda-mps-control"], input=b"quit\n", env=env)
        time.sleep(2)
        os.environ.pop("CUDA_MPS_PIPE_DIRECTORY", None); os.environ.pop("CUDA_MPS_LOG_DIRECTORY", None)

def main_graph(d):
    os.makedirs(d, exist_ok=True)
    out = []
    G = {"PROBE_GRAPH": "1"}
    out.append(run_mode("graph_fg_alone", d, fg_env=G, with_bg=False))
    out.append(run_mode("graph_timeslice", d, fg_env=G))
    try:
        mps(d, True)
        out.append(run_mode("graph_mps_fg_alone", d, fg_env=G, with_bg=False))
        out.append(run_mode("graph_mps", d, fg_env=G))
        out.append(run_mode("graph_mps_bg_prio1_fg_hiprio", d, fg_env=dict(G, PROBE_STREAM_PRIORITY="-1"),
                            bg_env={"CUDA_MPS_CLIENT_PRIORITY": "1"}))
        out.append(run_mode("graph_mps_bg_sm25", d, fg_env=G, bg_env={"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE": "25"}))
        out.append(run_mode("graph_mps_bg_sm50", d, fg_env=G, bg_env={"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE": "50"}))
    finally:
        mps(d, False)
    json.dump(out, open(f"{d}/colloc_graph.json", "w"), indent=1)

def main(d):
    os.makedirs(d, exist_ok=True)
    out = []
    out.append(run_mode("fg_alone", d, with_bg=False))
    out.append(run_mode("bg_alone", d, with_fg=False))
    out.append(run_mode("timeslice", d))
    try:
        mps(d, True)
        out.append(run_mode("mps_fg_alone", d, with_bg=False))
        out.append(run_mode("mps", d))
        out.append(run_mode("mps_bg_prio1", d, bg_env={"CUDA_MPS_CLIENT_PRIORITY": "1"}))
        out.append(run_mode("mps_bg_sm25", d, bg_env={"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE": "25"}))
        out.append(run_mode("mps_bg_sm25_prio1_fg_hiprio", d, fg_env={"PROBE_STREAM_PRIORITY": "-1"},
                            bg_env={"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE": "25", "CUDA_MPS_CLIENT_PRIORITY": "1"}))
    finally:
        mps(d, False)
    json.dump(out, open(f"{d}/colloc.json", "w"), indent=1)

if __name__ == "__main__":
    if sys.argv[1] == "--worker":
        a = sys.argv[2:]
        worker(a[0], a[1], int(a[2]), int(a[3]), int(a[4]), *a[5:8])
    elif len(sys.argv) > 2 and sys.argv[2] == "--graph":
        main_graph(sys.argv[1])
    else:
        main(sys.argv[1])
