#!/usr/bin/env python3
"""Foreground/background collocation on one GPU: wavepool beside the PyTorch baselines.

Runs, in one run on one GPU, the baselines of colloc_probe.py (the foreground alone as one
CUDA graph; the background alone; plain MPS; MPS with the background at 25% of the SMs) and
wavepool's tasks (colloc_bench: the step as CUDA-graph pieces through a real node agent's launch
gate, stream priorities, pause and slowdown feedback), and writes every figure to
OUTDIR/colloc.json, a table to OUTDIR/colloc.md and the agent's /metrics to OUTDIR.

Usage: colloc_run.py OUTDIR --bench BIN --agent "CMD" [--steps N] [--bg-seconds S] [--skip-baselines]
"""
import argparse, json, os, re, shlex, signal, socket, subprocess, sys, threading, time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import colloc_probe as probe  # noqa: E402

FG = dict(model="resnet50", batch=16)
BG = dict(model="resnet50", batch=64)


def wait_for(path, proc, timeout):
    deadline = time.time() + timeout
    while not os.path.exists(path):
        if proc.poll() is not None:
            return f"exited with {proc.returncode} before {os.path.basename(path)}"
        if time.time() > deadline:
            proc.send_signal(signal.SIGUSR1)  # colloc_bench prints where it is stuck
            time.sleep(1)
            proc.kill()
            return f"no {os.path.basename(path)} within {timeout} s"
        time.sleep(0.05)
    return None


def tail(path, chars=6000):
    try:
        return open(path, errors="replace").read()[-chars:]
    except OSError:
        return ""


def files(d, tag, role):
    names = {k: f"{d}/{tag}.{role}.{k}" for k in ("ready", "go", "stop", "json", "log")}
    for f in names.values():
        if os.path.exists(f):
            os.remove(f)
    return names


def spawn_bench(args, role, cfg, f, launch, agent_dir, env_extra):
    if args.smoke:  # the protocol on a CPU: a tiny model, eager steps
        cfg, launch = dict(cfg, model="mlp_tiny"), "eager"
    cmd = [args.bench, "--role", role, "--model", cfg["model"], "--batch", str(cfg["batch"]),
           "--launch", launch, "--ready", f["ready"], "--out", f["json"]]
    cmd += ["--steps", str(args.steps), "--warmup", "30", "--go", f["go"]] if role == "fg" \
        else ["--stop", f["stop"], "--warmup", "5"]
    if agent_dir:
        cmd += ["--agent-dir", agent_dir]
    if role == "bg" and args.bg_piece_us:
        low, high = args.bg_piece_us.split(":")
        cmd += ["--piece-min-us", low, "--piece-max-us", high]
    log = open(f["log"], "w")
    return subprocess.Popen(cmd, env=dict(os.environ, **env_extra), stdout=log, stderr=log)


def restart_mps(args):
    """After a task was killed, the MPS server may refuse new clients ('busy or unavailable'):
    the next mode gets a fresh one."""
    if args.mps_dir:
        probe.mps(args.mps_dir, False)
        probe.mps(args.mps_dir, True)


def run_ours(args, tag, fg_launch=None, bg_launch=None, agent=None, bg_env=None):
    """fg sets up and warms up first (the agent learns its solo piece times), then bg, then fg
    is timed while bg trains."""
    res = run_ours_once(args, tag, fg_launch, bg_launch, agent, bg_env)
    if "error" in res:
        restart_mps(args)
    return res


def run_ours_once(args, tag, fg_launch, bg_launch, agent, bg_env):
    agent_dir = agent.dir if agent else None
    d, res = args.outdir, {"mode": tag}
    fg = bg = None
    if fg_launch:
        ff = files(d, tag, "fg")
        fg = spawn_bench(args, "fg", FG, ff, fg_launch, agent_dir, {})
        err = wait_for(ff["ready"], fg, args.setup_timeout)
        if err:
            res["error"] = "fg " + err
            res["fg_log"] = tail(ff["log"])
            return res
    if bg_launch:
        bf = files(d, tag, "bg")
        bg = spawn_bench(args, "bg", BG, bf, bg_launch, agent_dir, bg_env or {})
        err = wait_for(bf["ready"], bg, args.setup_timeout)
        if err:
            res["error"] = "bg " + err
            res["bg_log"] = tail(bf["log"])
            if fg:
                fg.kill()
            return res
    t0 = time.time()
    watch = SettlingWatch(agent) if agent else None
    if fg:
        open(ff["go"], "w").close()
        try:
            fg.wait(timeout=args.setup_timeout)
        except subprocess.TimeoutExpired:
            fg.kill()
        res["fg"] = json.load(open(ff["json"])) if os.path.exists(ff["json"]) else {"error": fg.returncode}
    else:
        time.sleep(args.bg_seconds)
    if watch:
        res["settled"] = watch.finish()  # what the feedback loop settled on while both ran
    if bg:
        open(bf["stop"], "w").close()
        try:
            bg.wait(timeout=60)
        except subprocess.TimeoutExpired:
            bg.kill()
        if os.path.exists(bf["json"]):
            b = json.load(open(bf["json"]))
            done = b["done"] or [0.0]
            lo, hi = res.get("fg", {}).get("window") or (done[0], done[-1])
            n = sum(1 for t in b["done"] if lo <= t <= hi)
            res["bg"] = {"imgs_per_s": n * b["batch"] / max(hi - lo, 1e-9), "steps_in_window": n,
                         "pieces": b.get("pieces"), "piece_solo_us": b.get("piece_solo_us")}
        else:
            res["bg"] = {"error": bg.returncode}
    res["wall_s"] = round(time.time() - t0, 1)
    print(json.dumps({k: v for k, v in res.items() if k != "bg" or "piece_solo_us" not in v}), flush=True)
    return res


def task_series(text, name):
    """{(role, pod): value} of a wavepool_task_* gauge or counter in a /metrics text."""
    found = {}
    for labels, value in re.findall(rf"^{name}\{{([^}}]*)\}} (\S+)$", text, re.M):
        fields = dict(re.findall(r'(\w+)="([^"]*)"', labels))
        found[(fields.get("role"), fields.get("pod"))] = float(value)
    return found


def settled_values(text):
    """What the agent's feedback loop had settled on, from one /metrics text: per role the
    slowdown, the sensitive op groups, the credit limits, the gate's waits and pauses."""
    out = {}
    for key, name in (("slowdown", "wavepool_task_foreground_slowdown_ratio"),
                      ("slo", "wavepool_task_foreground_slowdown_slo_ratio"),
                      ("sensitive_op_groups", "wavepool_task_sensitive_op_groups"),
                      ("credit_limit", "wavepool_task_launch_credit_limit"),
                      ("recommended_batch", "wavepool_task_recommended_batch_size"),
                      ("gate_wait_s", "wavepool_task_gate_wait_seconds_total"),
                      ("paused_s", "wavepool_task_paused_seconds_total"),
                      ("launches", "wavepool_task_launches_total")):
        for (role, _pod), value in task_series(text, name).items():
            out.setdefault(role or "unknown", {})[key] = value
    return out


class SettlingWatch:
    """Scrapes the agent every 100 ms while a mode runs and keeps the last scrape in which the
    foreground's task still shows: the agent drops a task's series when it ends, so a scrape after
    the foreground's timed window would miss what the feedback loop settled on."""

    def __init__(self, agent, period=0.1):
        self.agent, self.period, self.last = agent, period, None
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while not self.stop.is_set():
            text = self.agent.read_metrics()
            if text and 'role="foreground"' in text:
                self.last = text
            self.stop.wait(self.period)

    def finish(self):
        self.stop.set()
        self.thread.join()
        text = self.last or self.agent.read_metrics() or ""
        self.agent.save_metrics(text, "running")
        return settled_values(text)


class Results(list):
    """Every mode's figures, written to OUTDIR/colloc.json as soon as it is measured."""

    def __init__(self, path):
        super().__init__()
        self.path = path

    def append(self, result):
        super().append(result)
        json.dump(self, open(self.path, "w"), indent=1)


class Agent:
    def __init__(self, args, tag, results):
        self.dir = f"{args.outdir}/agent-{tag}"
        os.makedirs(self.dir, exist_ok=True)
        self.args, self.tag, self.proc, self.results = args, tag, None, results

    def __enter__(self):
        for devices in ("nvml", "simulated:1"):
            cmd = shlex.split(self.args.agent) + [
                # Every task is this benchmark's own process on one machine: --trust-register.
                "--dir", self.dir, "--devices", devices, "--mps", "off", "--no-publish",
                "--trust-register",
                "--metrics-address", "127.0.0.1", "--metrics-port", str(self.args.metrics_port),
                "--hostname", "bench"]
            self.log = open(f"{self.dir}/agent.log", "a")
            self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=self.log)
            if wait_for(f"{self.dir}/agent.sock", self.proc, 15) is None:
                self.devices = devices
                self.started = time.time()
                return self
        raise RuntimeError(f"the agent did not start; see {self.dir}/agent.log")

    def read_metrics(self):
        """The agent's /metrics text; None when it cannot be read."""
        try:
            return urllib.request.urlopen(
                f"http://127.0.0.1:{self.args.metrics_port}/metrics", timeout=5).read().decode()
        except OSError:
            return None

    def save_metrics(self, text, when):
        open(f"{self.args.outdir}/agent-metrics-{self.tag}-{when}.txt", "w").write(text)

    def scrape(self, when="end"):
        self.save_metrics(self.read_metrics() or "# scrape failed\n", when)

    def cpu_seconds(self):
        fields = open(f"/proc/{self.proc.pid}/stat").read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def __exit__(self, *exc):
        self.scrape()
        wall = time.time() - self.started
        info = {"mode": f"agent_{self.tag}", "devices": self.devices,
                "agent_cpu_percent": round(100 * self.cpu_seconds() / max(wall, 1e-9), 2),
                "wall_s": round(wall, 1)}
        self.results.append(info)
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def ours(args, out):
    out.append(run_ours(args, "wavepool_fg_alone_graph", fg_launch="graph"))
    with Agent(args, "fg_alone", out) as agent:
        out.append(run_ours(args, "wavepool_fg_alone_pieces", fg_launch="pieces",
                            agent=agent))
    with Agent(args, "bg_alone", out) as agent:
        bg_alone = run_ours(args, "wavepool_bg_alone_pieces", bg_launch="pieces", agent=agent)
        out.append(bg_alone)
    if "error" in bg_alone or "error" in bg_alone.get("bg", {}):
        # A background that cannot set up alone will not beside the foreground either.
        print("colloc_run: skipping the pairs: the background did not set up alone", flush=True)
        return
    # The pair: what the controller sets on an MPS node (the background's client priority).
    with Agent(args, "pair", out) as agent:
        out.append(run_ours(args, "wavepool", fg_launch="pieces", bg_launch="pieces",
                            agent=agent, bg_env={"CUDA_MPS_CLIENT_PRIORITY": "1"}))
    # Priorities and pieces without the gate: what pacing, pause and feedback add.
    out.append(run_ours(args, "pieces_priorities_no_gate", fg_launch="pieces", bg_launch="pieces",
                        bg_env={"CUDA_MPS_CLIENT_PRIORITY": "1"}))


def baselines(args, out):
    d, G = args.outdir, {"PROBE_GRAPH": "1"}
    probe.FG["iters"] = args.steps
    out.append(probe.run_mode("graph_fg_alone", d, fg_env=G, with_bg=False))
    out.append(probe.run_mode("bg_alone", d, with_fg=False, bg_seconds=args.bg_seconds))
    probe.mps(d, True)
    args.mps_dir = d
    try:
        out.append(probe.run_mode("graph_mps", d, fg_env=G))
        out.append(probe.run_mode("graph_mps_bg_sm25", d, fg_env=G,
                                  bg_env={"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE": "25"}))
        ours(args, out)
    finally:
        probe.mps(d, False)


def table(out):
    by = {r["mode"]: r for r in out}

    def get(mode, role, key):
        return by.get(mode, {}).get(role, {}).get(key)

    def num(v, spec):
        return format(v, spec) if isinstance(v, (int, float)) else ""

    def ratio(v, solo):
        return f"{v / solo:.2f}" if v and solo else ""

    solo = {"baseline": (get("graph_fg_alone", "fg", "median_ms"), get("bg_alone", "bg", "imgs_per_s")),
            "wavepool": (get("wavepool_fg_alone_pieces", "fg", "median_ms"),
                         get("wavepool_bg_alone_pieces", "bg", "imgs_per_s"))}
    lines = ["| setting | fg median ms | fg p90 ms | fg / solo | bg img/s | bg / solo |",
             "|---|---|---|---|---|---|"]
    for r in out:
        mode = r["mode"]
        if mode.startswith("agent_"):
            lines.append(f"| {mode} ({r['devices']}) | agent CPU {r['agent_cpu_percent']}% | | | | |")
            continue
        fg_solo, bg_solo = solo["baseline" if mode.startswith(("graph", "bg_alone")) else "wavepool"]
        fg_ms, bg_rate = get(mode, "fg", "median_ms"), get(mode, "bg", "imgs_per_s")
        error = r.get("error") or get(mode, "fg", "error") or get(mode, "bg", "error")
        lines.append(f"| {mode} | {num(fg_ms, '.2f')} | {num(get(mode, 'fg', 'p90_ms'), '.2f')} | "
                     f"{ratio(fg_ms, fg_solo)} | {num(bg_rate, '.0f')} | {ratio(bg_rate, bg_solo)} |"
                     + (f" error: {error}" if error else ""))
    lines += ["", "What the agent's feedback loop had settled on at the end of each mode's run:", "",
              "| setting | fg slowdown | fg SLO | fg sensitive groups | fg credits | "
              "bg credits | bg gate wait s | of it paused s | bg launches |",
              "|---|---|---|---|---|---|---|---|---|"]
    for r in out:
        if "settled" not in r:
            continue
        fg, bg = r["settled"].get("foreground", {}), r["settled"].get("background", {})
        lines.append(f"| {r['mode']} | {num(fg.get('slowdown'), '.3f')} | {num(fg.get('slo'), '.2f')} | "
                     f"{num(fg.get('sensitive_op_groups'), '.0f')} | "
                     f"{num(fg.get('credit_limit'), '.0f')} | {num(bg.get('credit_limit'), '.0f')} | "
                     f"{num(bg.get('gate_wait_s'), '.2f')} | {num(bg.get('paused_s'), '.2f')} | "
                     f"{num(bg.get('launches'), '.0f')} |")
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("outdir")
    parser.add_argument("--bench", required=True)
    parser.add_argument("--agent", required=True, help="command line that starts wavepool-agent")
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--bg-seconds", type=float, default=8)
    parser.add_argument("--metrics-port", type=int, default=9402, help="0: any free port")
    parser.add_argument("--setup-timeout", type=float, default=120,
                        help="seconds a task may take to set up (capture and split included)")
    parser.add_argument("--skip-baselines", action="store_true")
    parser.add_argument("--bg-piece-us", metavar="MIN:MAX",
                        help="the background's piece targets in microseconds (default 500:1000)")
    parser.add_argument("--mps", action="store_true",
                        help="with --skip-baselines: run wavepool's modes under an MPS server, "
                             "as they run after the baselines")
    parser.add_argument("--smoke", action="store_true",
                        help="check the driver on a CPU: wavepool's modes only, mlp_tiny, eager")
    args = parser.parse_args()
    # A time limit's SIGTERM still writes the table of what was measured.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    args.outdir = os.path.abspath(args.outdir)
    args.mps_dir = None  # set while the baselines' MPS server runs
    if args.metrics_port == 0:
        args.metrics_port = free_port()
    os.makedirs(args.outdir, exist_ok=True)
    out = Results(f"{args.outdir}/colloc.json")
    try:
        if (args.skip_baselines and args.mps) and not args.smoke:
            probe.mps(args.outdir, True)
            args.mps_dir = args.outdir
            try:
                ours(args, out)
            finally:
                probe.mps(args.outdir, False)
        elif args.skip_baselines or args.smoke:
            ours(args, out)
        else:
            baselines(args, out)
    finally:
        open(f"{args.outdir}/colloc.md", "w").write(table(out))
        print(table(out))
    failed = [r["mode"] for r in out if failure(r)]
    if failed:
        print(f"colloc_run: failed: {', '.join(failed)}", file=sys.stderr)
        sys.exit(1)


def failure(result):
    return result.get("error") or any(
        isinstance(result.get(role), dict) and "error" in result[role] for role in ("fg", "bg"))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


if __name__ == "__main__":
    main()
