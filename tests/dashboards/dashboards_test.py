#!/usr/bin/env python3
"""Checks the Grafana dashboards and Prometheus alerts in dashboards/ (docs/dashboards.md).

  dashboards_test.py json     --source-dir DIR
      The dashboards' structure (schema version, the $datasource variable on every panel, target
      and query variable, the namespace/job/node variables, units, descriptions, SLO thresholds,
      variables defined before use), and that every metric a panel query, a variable query or an
      alert rule names is one the agent (agent/src/metrics/metric_families.cpp) or the controller
      (controller/src/metrics/metrics.cpp) registers. Needs nothing but python3.
  dashboards_test.py promtool --source-dir DIR --work-dir DIR [--promtool P]
      Every panel and variable query, written as a recording rule, and every alert rule pass
      `promtool check rules`; `promtool test rules dashboards/tests/*.yaml` passes; every alert is
      tested firing and not firing. Skipped (exit 77) without promtool.
  dashboards_test.py live     --source-dir DIR --work-dir DIR --wavepool BIN [--prometheus P]
      A real Prometheus scrapes `wavepool run --metrics-port` training a foreground and a
      background job: every metric the dashboards and alerts take from the agent is in the
      agent's /metrics, every alert rule evaluates without error, and every panel query over the
      agent's series returns data. Skipped (exit 77) without prometheus.

Exit status: 0 passed, 1 failed (each problem printed with the file, panel and query), 77 skipped.
"""
import argparse
import glob
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

SKIP = 77
DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}
MIN_SCHEMA_VERSION = 39
# Grafana's own variables; everything else a query uses must be a dashboard variable.
BUILTIN_VARIABLES = {"__rate_interval", "__interval", "__interval_ms", "__range", "__range_s",
                     "__range_ms", "__from", "__to", "__dashboard", "__name", "__org", "__user"}
REQUIRED_VARIABLES = ("namespace", "job", "node")
# Metrics Prometheus makes itself rather than scraping them from wavepool.
PROMETHEUS_METRICS = {"up"}
PROMQL_KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "and", "or",
                   "unless", "bool", "offset", "inf", "nan", "atan2"}
HISTOGRAM_SUFFIXES = ("_bucket", "_sum", "_count")
SLOWDOWN_METRIC = "wavepool_task_foreground_slowdown_ratio"
SLO_METRIC = "wavepool_task_foreground_slowdown_slo_ratio"
DEFAULT_SLO = 1.1  # api/include/wavepool/api/defaults.h: kDefaultMaxForegroundSlowdown


class Problems:
    def __init__(self):
        self.items = []

    def add(self, where, what):
        self.items.append(f"{where}: {what}")

    def report(self, name):
        for item in self.items:
            print(f"FAIL {item}")
        if self.items:
            print(f"{name}: {len(self.items)} problem(s)")
            return 1
        print(f"{name}: passed")
        return 0


# ---------------------------------------------------------------------------------------------
# Reading the dashboards, the rules and the metric names the code registers.

def exported_metrics(source_dir):
    """{family name: type} registered by the agent and the controller, read from their code."""
    families = {}
    for rel in ("agent/src/metrics/metric_families.cpp", "controller/src/metrics/metrics.cpp"):
        path = os.path.join(source_dir, rel)
        with open(path, encoding="utf-8") as f:
            text = f.read()
        names = re.findall(r'"(wavepool_[a-z0-9_]+)"', text)
        if not names:
            raise SystemExit(f"{rel}: no wavepool_* metric name found; the metric code moved?")
        histograms = set(re.findall(r'BuildHistogram\(\)\s*\.Name\("(wavepool_[a-z0-9_]+)"\)', text))
        for name in names:
            families[name] = "histogram" if name in histograms else (
                "counter" if name.endswith("_total") else "gauge")
    return families


def allowed_series_names(families):
    names = set(PROMETHEUS_METRICS)
    for name, kind in families.items():
        names.add(name)
        if kind == "histogram":
            names.update(name + s for s in HISTOGRAM_SUFFIXES)
    return names


def load_dashboards(source_dir, problems):
    dashboards = []
    paths = sorted(glob.glob(os.path.join(source_dir, "dashboards", "*.json")))
    if not paths:
        problems.add("dashboards/", "no *.json dashboard")
    for path in paths:
        rel = os.path.relpath(path, source_dir)
        try:
            with open(path, encoding="utf-8") as f:
                dashboards.append((rel, json.load(f)))
        except json.JSONDecodeError as e:
            problems.add(rel, f"not JSON: line {e.lineno} column {e.colno}: {e.msg}")
    return dashboards


def all_panels(dashboard):
    for panel in dashboard.get("panels", []):
        yield panel
        for inner in panel.get("panels", []) if panel.get("type") == "row" else []:
            yield inner


def variable_query(variable):
    query = variable.get("query")
    if isinstance(query, dict):
        query = query.get("query", "")
    return query if isinstance(query, str) else ""


def dashboard_queries(dashboards):
    """(where, expr) for every panel target and every query variable (as a selector)."""
    out = []
    for rel, d in dashboards:
        for panel in all_panels(d):
            for target in panel.get("targets", []) or []:
                where = f"{rel}: panel {panel.get('id')} \"{panel.get('title')}\" target {target.get('refId')}"
                out.append((where, target.get("expr", "")))
        for v in d.get("templating", {}).get("list", []):
            if v.get("type") == "query":
                selector = label_values_selector(variable_query(v))
                out.append((f"{rel}: variable {v.get('name')}", selector or variable_query(v)))
    return out


def label_values_selector(query):
    """The series selector of `label_values(selector, label)`, or None."""
    m = re.fullmatch(r"\s*label_values\((.*),\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\)\s*", query, re.S)
    return m.group(1) if m else None


def rule_exprs(path, problems):
    """(alert name, expr) of every rule of a plain rule file. A small reader for the subset of
    YAML the file uses (`expr:` on one line or as a `>-`/`|` block), since python3's standard
    library has no YAML; promtool parses the file for real in the promtool check."""
    rel = os.path.basename(path)
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    rules, name, i = [], None, 0
    while i < len(lines):
        line = lines[i]
        m = re.match(r"\s*-?\s*(alert|record):\s*(\S+)\s*$", line)
        if m:
            name = m.group(2)
        m = re.match(r"(\s*)expr:\s*(.*)$", line)
        if m:
            indent, value = len(m.group(1)), m.group(2).strip()
            if value in (">-", ">", "|", "|-"):
                block = []
                i += 1
                while i < len(lines) and (not lines[i].strip() or
                                          len(lines[i]) - len(lines[i].lstrip()) > indent):
                    block.append(lines[i].strip())
                    i += 1
                value = (" " if value.startswith(">") else "\n").join(block).strip()
                i -= 1
            if not value or name is None:
                problems.add(f"{rel} line {i + 1}", "expr without a rule name or value")
            rules.append((name, value))
        i += 1
    if not rules:
        problems.add(rel, "no rule found")
    return rules


# ---------------------------------------------------------------------------------------------
# PromQL helpers.

VARIABLE_RE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::[^}]*)?\}|\$([A-Za-z_][A-Za-z0-9_]*)")


def variables_used(text):
    return {a or b for a, b in VARIABLE_RE.findall(text)}


def substitute(expr, durations, value_for):
    """Grafana's interpolation for a check: durations for the interval variables, value_for(name)
    for the dashboard's own variables."""
    def repl(m):
        name = m.group(1) or m.group(2)
        if name in durations:
            return durations[name]
        return value_for(name)
    return VARIABLE_RE.sub(repl, expr)


def metric_names(expr):
    """The metric names a PromQL expression selects (not functions, labels or keywords)."""
    text = re.sub(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'', '""', expr)  # strings
    text = re.sub(r"\{[^}]*\}", "{}", text)  # label matchers
    text = re.sub(r"\[[^\]]*\]", "[]", text)  # ranges and subqueries
    text = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", text)
    names = set()
    for m in re.finditer(r"(?<![\w.:])([A-Za-z_:][A-Za-z0-9_:]*)(\s*\()?", text):
        word, call = m.group(1), m.group(2)
        if call or word.lower() in PROMQL_KEYWORDS:
            continue
        if re.fullmatch(r"\d+[smhdwy]", word):
            continue
        names.add(word)
    return names


# ---------------------------------------------------------------------------------------------
# json: structure and metric names.

def check_structure(rel, d, problems):
    if not isinstance(d.get("schemaVersion"), int) or d["schemaVersion"] < MIN_SCHEMA_VERSION:
        problems.add(rel, f"schemaVersion {d.get('schemaVersion')!r}: want >= {MIN_SCHEMA_VERSION}")
    for key in ("uid", "title"):
        if not d.get(key):
            problems.add(rel, f"no {key}")
    variables = {v.get("name"): v for v in d.get("templating", {}).get("list", [])}
    ds = variables.get("datasource")
    if not ds or ds.get("type") != "datasource" or ds.get("query") != "prometheus":
        problems.add(rel, "no variable `datasource` of type datasource with query prometheus")
    for name in REQUIRED_VARIABLES:
        v = variables.get(name)
        if v is None:
            problems.add(rel, f"no `{name}` variable")
        elif v.get("type") != "query" or label_values_selector(variable_query(v)) is None:
            problems.add(rel, f"variable `{name}`: want a query variable with label_values(...)")
    for name, v in variables.items():
        if v.get("type") == "query":
            if v.get("datasource") != DATASOURCE:
                problems.add(rel, f"variable `{name}`: datasource {v.get('datasource')!r}, want {DATASOURCE}")
            if label_values_selector(variable_query(v)) is None:
                problems.add(rel, f"variable `{name}`: query {variable_query(v)!r} is not label_values(selector, label)")
    defined = set(variables) | BUILTIN_VARIABLES
    ids = set()
    for panel in all_panels(d):
        where = f"{rel}: panel {panel.get('id')} \"{panel.get('title')}\""
        if panel.get("id") in ids:
            problems.add(where, "id used twice")
        ids.add(panel.get("id"))
        grid = panel.get("gridPos", {})
        if not all(isinstance(grid.get(k), int) for k in ("h", "w", "x", "y")) or \
                grid.get("x", 0) + grid.get("w", 0) > 24:
            problems.add(where, f"gridPos {grid!r}: want integer h, w, x, y with x + w <= 24")
        for name in variables_used(panel.get("title", "")) - defined:
            problems.add(where, f"title uses ${name}, which is not a variable")
        if panel.get("repeat") and panel["repeat"] not in variables:
            problems.add(where, f"repeats over ${panel['repeat']}, which is not a variable")
        if panel.get("type") == "row":
            continue
        if panel.get("datasource") != DATASOURCE:
            problems.add(where, f"datasource {panel.get('datasource')!r}, want {DATASOURCE}")
        if not panel.get("description"):
            problems.add(where, "no description")
        if not panel.get("fieldConfig", {}).get("defaults", {}).get("unit"):
            problems.add(where, "no unit (fieldConfig.defaults.unit)")
        targets = panel.get("targets") or []
        if not targets:
            problems.add(where, "no target")
        refs = [t.get("refId") for t in targets]
        if len(set(refs)) != len(refs):
            problems.add(where, f"refIds {refs} repeat")
        for t in targets:
            if t.get("datasource") != DATASOURCE:
                problems.add(f"{where} target {t.get('refId')}",
                             f"datasource {t.get('datasource')!r}, want {DATASOURCE}")
            if not t.get("expr", "").strip():
                problems.add(f"{where} target {t.get('refId')}", "empty expr")
            for name in variables_used(t.get("expr", "")) - defined:
                problems.add(f"{where} target {t.get('refId')}", f"uses ${name}, which is not a variable")
        exprs = " ".join(t.get("expr", "") for t in targets)
        if SLOWDOWN_METRIC in exprs:
            steps = panel.get("fieldConfig", {}).get("defaults", {}).get("thresholds", {}).get("steps", [])
            has_slo_threshold = any(s.get("value") == DEFAULT_SLO for s in steps)
            if not has_slo_threshold and SLO_METRIC not in exprs:
                problems.add(where, f"shows {SLOWDOWN_METRIC} without an SLO line "
                             f"(a threshold at {DEFAULT_SLO} or a {SLO_METRIC} target)")


def run_json(args):
    problems = Problems()
    families = exported_metrics(args.source_dir)
    allowed = allowed_series_names(families)
    dashboards = load_dashboards(args.source_dir, problems)
    uids = {}
    for rel, d in dashboards:
        check_structure(rel, d, problems)
        if d.get("uid") in uids:
            problems.add(rel, f"uid {d.get('uid')!r} also used by {uids[d.get('uid')]}")
        uids[d.get("uid")] = rel
    if len(dashboards) < 3:
        problems.add("dashboards/", f"{len(dashboards)} dashboards, want the cluster, node and job ones")
    queries = dashboard_queries(dashboards)
    alerts_path = os.path.join(args.source_dir, "dashboards", "alerts.yaml")
    queries += [(f"dashboards/alerts.yaml: {name}", expr)
                for name, expr in rule_exprs(alerts_path, problems)]
    used = set()
    for where, expr in queries:
        names = metric_names(substitute(expr, CHECK_DURATIONS, check_value))
        if not names:
            problems.add(where, f"selects no metric: {expr!r}")
        for name in sorted(names - allowed):
            problems.add(where, f"metric {name} is not exported by the agent or the controller")
        used |= names
    unused = sorted(n for n in families if not ({n} | {n + s for s in HISTOGRAM_SUFFIXES}) & used)
    print(f"{len(dashboards)} dashboards, {len(queries)} queries; metrics not used: {unused}")
    return problems.report("json")


# ---------------------------------------------------------------------------------------------
# promtool: parse every query, run the rule unit tests.

CHECK_DURATIONS = {"__rate_interval": "1m", "__interval": "1m", "__range": "1h"}


def check_value(name):
    return ".*"


def alert_test_coverage(source_dir, alert_names, problems):
    fired, quiet = set(), set()
    for path in sorted(glob.glob(os.path.join(source_dir, "dashboards", "tests", "*.yaml"))):
        lines = open(path, encoding="utf-8").read().splitlines()
        for i, line in enumerate(lines):
            m = re.match(r"\s*alertname:\s*(\S+)", line)
            if not m:
                continue
            for after in lines[i + 1:i + 3]:
                e = re.match(r"\s*exp_alerts:\s*(\S*)", after)
                if e:
                    (quiet if e.group(1) == "[]" else fired).add(m.group(1))
                    break
    for name in sorted(alert_names):
        if name not in fired:
            problems.add("dashboards/tests", f"no test where {name} fires")
        if name not in quiet:
            problems.add("dashboards/tests", f"no test where {name} does not fire")


def run_promtool(args):
    promtool = args.promtool or shutil.which("promtool")
    if not promtool or not os.path.exists(promtool):
        print("SKIP: promtool is not installed (Debian package prometheus; scripts/setup installs it)")
        return SKIP
    problems = Problems()
    dashboards = load_dashboards(args.source_dir, problems)
    os.makedirs(args.work_dir, exist_ok=True)
    groups, index = [], []
    for n, (where, expr) in enumerate(dashboard_queries(dashboards)):
        record = f"dashboard:query_{n}"
        index.append((record, where))
        groups.append({"record": record, "expr": substitute(expr, CHECK_DURATIONS, check_value)})
    generated = os.path.join(args.work_dir, "dashboard_queries.rules.json")
    with open(generated, "w", encoding="utf-8") as f:
        json.dump({"groups": [{"name": "dashboard-queries", "rules": groups}]}, f, indent=1)
    alerts = os.path.join(args.source_dir, "dashboards", "alerts.yaml")
    for path in (generated, alerts):
        r = subprocess.run([promtool, "check", "rules", path], capture_output=True, text=True)
        if r.returncode != 0:
            out = r.stdout + r.stderr
            # Name the panel of every query promtool refused.
            for record, where in index:
                if re.search(rf"\b{re.escape(record)}\b", out):
                    problems.add(where, "promtool refused its query")
            problems.add(os.path.basename(path), f"promtool check rules failed:\n{out}")
        else:
            print(f"promtool check rules {os.path.basename(path)}: {r.stdout.strip().splitlines()[-1]}")
    tests = sorted(glob.glob(os.path.join(args.source_dir, "dashboards", "tests", "*.yaml")))
    if not tests:
        problems.add("dashboards/tests", "no rule test")
    else:
        r = subprocess.run([promtool, "test", "rules", *tests], capture_output=True, text=True,
                           cwd=args.source_dir)
        print((r.stdout + r.stderr).strip())
        if r.returncode != 0:
            problems.add("dashboards/tests", "promtool test rules failed")
    rule_problems = Problems()
    names = {name for name, _ in rule_exprs(alerts, rule_problems)}
    problems.items += rule_problems.items
    alert_test_coverage(args.source_dir, names, problems)
    return problems.report("promtool")


# ---------------------------------------------------------------------------------------------
# live: a real Prometheus scraping `wavepool run`.

LIVE_DURATIONS = {"__rate_interval": "15s", "__interval": "15s", "__range": "5m"}
SCRAPE_JOB = "wavepool-agent"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_get(url, timeout=5):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read().decode("utf-8")


def prom_query(base, expr):
    body = http_get(f"{base}/api/v1/query?" + urllib.parse.urlencode({"query": expr}))
    reply = json.loads(body)
    if reply.get("status") != "success":
        raise RuntimeError(f"query failed: {reply}")
    result = reply["data"]["result"]
    if reply["data"]["resultType"] == "scalar":
        return [result]
    return result


def wait_for(what, predicate, timeout, proc_checks=()):
    deadline = time.monotonic() + timeout
    last_error = None
    while time.monotonic() < deadline:
        for name, proc, log in proc_checks:
            if proc.poll() is not None:
                raise RuntimeError(f"{name} exited with {proc.returncode} while waiting for "
                                   f"{what}; its log:\n{tail(log)}")
        try:
            if predicate():
                return
        except (OSError, urllib.error.URLError, RuntimeError, ValueError) as e:
            last_error = e
        time.sleep(0.5)
    raise RuntimeError(f"timed out after {timeout} s waiting for {what}"
                       + (f" (last error: {last_error})" if last_error else ""))


def tail(path, lines=30):
    try:
        return "\n".join(open(path, encoding="utf-8", errors="replace").read().splitlines()[-lines:])
    except OSError:
        return "(no log)"


def stop(proc, grace):
    if proc is None or proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def scrape_families(text):
    families = {}
    for line in text.splitlines():
        m = re.match(r"# TYPE (\S+) (\S+)", line)
        if m:
            families[m.group(1)] = m.group(2)
    return families


def run_live(args):
    prometheus = args.prometheus or shutil.which("prometheus")
    if not prometheus or not os.path.exists(prometheus):
        print("SKIP: prometheus is not installed (Debian package prometheus; scripts/setup installs it)")
        return SKIP
    if not args.wavepool or not os.access(args.wavepool, os.X_OK):
        print(f"FAIL --wavepool {args.wavepool!r}: not an executable")
        return 1
    problems = Problems()
    dashboards = load_dashboards(args.source_dir, problems)
    alerts = os.path.join(args.source_dir, "dashboards", "alerts.yaml")
    families = exported_metrics(args.source_dir)
    controller_metrics = {n for n in families if n.startswith("wavepool_controller_")}
    controller_series = allowed_series_names({n: families[n] for n in controller_metrics})

    work = os.path.abspath(args.work_dir)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    metrics_port, prom_port = free_port(), free_port()
    config = os.path.join(work, "prometheus.yml")
    with open(config, "w", encoding="utf-8") as f:
        f.write(f"""global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files:
  - {alerts}
scrape_configs:
  - job_name: {SCRAPE_JOB}
    honor_labels: true
    static_configs:
      - targets: ['127.0.0.1:{metrics_port}']
""")
    prom_log, run_log = os.path.join(work, "prometheus.log"), os.path.join(work, "run.log")
    manifest = os.path.join(args.source_dir, "tests", "dashboards", "fg-bg-long.yaml")
    base = f"http://127.0.0.1:{prom_port}"
    prom = run = None
    try:
        prom = subprocess.Popen(
            [prometheus, f"--config.file={config}", f"--storage.tsdb.path={work}/tsdb",
             f"--web.listen-address=127.0.0.1:{prom_port}"],
            stdout=open(prom_log, "w"), stderr=subprocess.STDOUT)
        run = subprocess.Popen(
            [args.wavepool, "run", manifest, "--metrics-port", str(metrics_port),
             "--out", f"{work}/run", "--checkpoint-root", f"{work}/checkpoints", "--fresh"],
            stdout=open(run_log, "w"), stderr=subprocess.STDOUT, cwd=work)
        procs = [("prometheus", prom, prom_log), ("wavepool run", run, run_log)]
        wait_for("Prometheus to be ready", lambda: "Ready" in http_get(f"{base}/-/ready"), 60, procs)

        def both_roles_trained():
            roles = {s["metric"].get("role") for s in prom_query(
                base, "wavepool_task_iteration_seconds_count > 5")}
            return {"foreground", "background"} <= roles
        wait_for("both jobs' workers to train", both_roles_trained, 240, procs)
        time.sleep(20)  # rate() windows of 15 s with both roles' samples in them

        # The agent's real /metrics: every metric the dashboards and alerts take from the agent.
        scraped = scrape_families(http_get(f"http://127.0.0.1:{metrics_port}/metrics"))
        scraped_series = allowed_series_names(scraped)
        queries = dashboard_queries(dashboards)
        rules = Problems()
        queries_and_rules = queries + [(f"dashboards/alerts.yaml: {n}", e)
                                       for n, e in rule_exprs(alerts, rules)]
        problems.items += rules.items
        for where, expr in queries_and_rules:
            expr = substitute(expr, CHECK_DURATIONS, check_value)
            for name in sorted(metric_names(expr) - scraped_series - controller_series
                               - PROMETHEUS_METRICS):
                problems.add(where, f"metric {name} is not in the agent's /metrics")

        # Every panel query over agent series returns data (controller panels have no
        # controller here).
        pending = [(w, substitute(e, LIVE_DURATIONS, check_value)) for w, e in queries
                   if not (metric_names(e) & controller_series)]
        deadline = time.monotonic() + 30
        while pending:
            still = []
            for where, expr in pending:
                try:
                    if not prom_query(base, expr):
                        still.append((where, expr))
                except (OSError, urllib.error.URLError, RuntimeError) as e:
                    problems.add(where, f"query failed: {e}: {expr}")
            pending = still
            if not pending or time.monotonic() > deadline or run.poll() is not None:
                break
            time.sleep(2)
        for where, expr in pending:
            problems.add(where, f"no data from a real scrape: {expr}")
        checked = len([1 for w, e in queries if not (metric_names(e) & controller_series)])
        print(f"{checked} agent queries checked against Prometheus, {len(pending)} without data")

        # The alert rules load and evaluate against real series without error.
        groups = json.loads(http_get(f"{base}/api/v1/rules"))["data"]["groups"]
        loaded = [r for g in groups for r in g["rules"]]
        if not loaded:
            problems.add("dashboards/alerts.yaml", "Prometheus loaded no rule")
        for r in loaded:
            if r.get("health") not in ("ok", "unknown") or r.get("lastError"):
                problems.add(f"dashboards/alerts.yaml: {r.get('name')}",
                             f"health {r.get('health')}: {r.get('lastError')}")
        print(f"{len(loaded)} alert rules loaded by Prometheus")
        if run.poll() is not None:
            problems.add("wavepool run", f"ended before the checks finished:\n{tail(run_log)}")
    except RuntimeError as e:
        problems.add("live", str(e))
    finally:
        stop(run, 90)
        stop(prom, 30)
    return problems.report("live")


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("check", choices=["json", "promtool", "live"])
    parser.add_argument("--source-dir", required=True)
    parser.add_argument("--work-dir", default="dashboards-test")
    parser.add_argument("--promtool")
    parser.add_argument("--prometheus")
    parser.add_argument("--wavepool")
    args = parser.parse_args()
    args.source_dir = os.path.abspath(args.source_dir)
    return {"json": run_json, "promtool": run_promtool, "live": run_live}[args.check](args)


if __name__ == "__main__":
    sys.exit(main())
