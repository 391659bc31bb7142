#!/usr/bin/env python3
"""Measurements for scripts/bench-fleet-store.sh, one store at one size at a time, as JSON lines;
then the tables for docs/benchmarks.md from them.

  bench_fleet_store.py wait --url URL --nodes N [--timeout S]
      until the store has N targets up (count(up{job="p2pnode"} == 1))
  bench_fleet_store.py measure --store prometheus|victoriametrics --url URL --nodes N --base-port P
        --expected FILE --grafana DIR --data DIR --pid NAME=PID... [--pause PID...]
        [--vmalert URL] [--alertmanager URL] [--rounds R]
      one JSON line: series per scrape round, each named process's RSS, peak and CPU (the
      processes of one name summed), the store's disk and bytes per sample, ingest (samples/s over
      30 s), each rule group's evaluation time, the alerts against the faulty nodes, and every
      dashboard query's p50/p99 over R runs as Grafana asks it (the fleet dashboard for every
      cluster, the node dashboard with one 8-GPU node selected), the --pause processes stopped
      (SIGSTOP) while the queries run
  bench_fleet_store.py table RESULTS.jsonl
      the markdown tables, and the per-node memory curve (a least-squares line) of each store
"""
import argparse
import json
import math
import os
import re
import signal
import statistics
import subprocess
import sys
import time
import urllib.parse
import urllib.request


def get(url, timeout=120):
    return json.load(urllib.request.urlopen(url, timeout=timeout))


def query(url, expr):
    return get(url + "/api/v1/query?" + urllib.parse.urlencode({"query": expr}))["data"]["result"]


def one(url, expr):
    r = query(url, expr)
    return float(r[0]["value"][1]) if r else float("nan")


def wait(a):
    deadline, n = time.time() + a.timeout, -1
    while time.time() < deadline:
        try:
            n = int(one(a.url, 'count(up{job="p2pnode"} == 1)'))
            if n == a.nodes:
                return
        except Exception:
            pass
        time.sleep(5)
    sys.exit("%s: %d of %d targets up after %d s" % (a.url, n, a.nodes, a.timeout))


def own_metrics(url):
    """The store's own /metrics as {name: sum over its series}."""
    out = {}
    for line in urllib.request.urlopen(url + "/metrics", timeout=60).read().decode().splitlines():
        if line and not line.startswith("#"):
            name = line.split("{", 1)[0].split(" ", 1)[0]
            labels = line[len(name):].rsplit(" ", 1)[0]
            out[name] = out.get(name, 0.0) + float(line.rsplit(" ", 1)[1])
            out[name + labels] = float(line.rsplit(" ", 1)[1])
    return out


def memory(pids):
    out = {"rss_mib": 0.0, "peak_mib": 0.0}
    for pid in pids:
        st = dict(l.split(":", 1) for l in open("/proc/%s/status" % pid))
        out["rss_mib"] += int(st["VmRSS"].split()[0]) / 1024
        out["peak_mib"] += int(st["VmHWM"].split()[0]) / 1024
    return out


def cpu_seconds(pids):
    """User and system CPU of the processes (and their reaped children), in seconds."""
    tick = os.sysconf("SC_CLK_TCK")
    return sum(sum(int(x) for x in open("/proc/%s/stat" % p).read().rsplit(")", 1)[1].split()[11:15]) / tick for p in pids)


def du(path):
    return int(subprocess.run(["du", "-sb", path], capture_output=True, text=True).stdout.split()[0])


def disk(a):
    """The data directory's size, and bytes per sample as the store keeps them."""
    if a.store == "victoriametrics":
        urllib.request.urlopen(a.url + "/internal/force_flush", timeout=120).read()
        time.sleep(2)
        m = own_metrics(a.url)
        samples = m.get('vm_rows{type="storage/small"}', 0) + m.get('vm_rows{type="storage/big"}', 0)
        data = m.get('vm_data_size_bytes{type="storage/small"}', 0) + m.get('vm_data_size_bytes{type="storage/big"}', 0)
        return {"disk_bytes": du(a.data), "samples_on_disk": samples, "bytes_per_sample": data / samples if samples else None,
                "index_bytes": m.get('vm_data_size_bytes{type="indexdb"}', 0)}
    # Prometheus: the head as a block (a snapshot), which is what it compacts to every 2 hours.
    before = set(os.listdir(os.path.join(a.data, "snapshots"))) if os.path.isdir(os.path.join(a.data, "snapshots")) else set()
    req = urllib.request.Request(a.url + "/api/v1/admin/tsdb/snapshot", method="POST")
    name = json.load(urllib.request.urlopen(req, timeout=600))["data"]["name"]
    snap = os.path.join(a.data, "snapshots", name)
    blocks = [os.path.join(snap, b) for b in os.listdir(snap)]
    samples = sum(json.load(open(os.path.join(b, "meta.json")))["stats"]["numSamples"] for b in blocks)
    size = sum(du(os.path.join(b, "chunks")) for b in blocks)
    index = sum(os.path.getsize(os.path.join(b, "index")) for b in blocks)
    subprocess.run(["rm", "-rf", snap])
    return {"disk_bytes": du(os.path.join(a.data, "wal")) + du(os.path.join(a.data, "chunks_head")), "samples_on_disk": samples,
            "bytes_per_sample": size / samples if samples else None, "index_bytes": index}


def rules(a):
    """{group: {"ms": evaluation time, "slowest": (rule, direct ms), "each": [(rule, ms, direct ms)]}} from
    Prometheus or vmalert (/api/v1/rules). direct: the rule's query asked of the store at once (the
    median of three, without VictoriaMetrics' cache), beside the rule engine's own figure, which on
    vmalert also holds the time its writes of the results wait for the store."""
    groups = get((a.vmalert or a.url) + "/api/v1/rules")["data"]["groups"]
    out = {}
    for g in groups:
        times = [(r["name"], r.get("evaluationTime", 0) * 1000) for r in g["rules"]]
        # vmalert (1.79) has no group figure, and its rule's figure runs from the start of the group's
        # evaluation (its rules run one after the other: each figure is the one before it plus that
        # rule's query, as asked directly below), so the group took the largest.
        ms = g["evaluationTime"] * 1000 if "evaluationTime" in g else max(t for _, t in times)
        each = []
        for r, (name, t) in zip(g["rules"], times):
            params = {"query": r["query"], "time": "%.3f" % time.time()}
            if a.store == "victoriametrics":
                params["nocache"] = "1"
            direct = []
            for _ in range(3):
                t0 = time.perf_counter()
                urllib.request.urlopen(a.url + "/api/v1/query?" + urllib.parse.urlencode(params), timeout=120).read()
                direct.append((time.perf_counter() - t0) * 1000)
            each.append((name, t, statistics.median(direct)))
        slowest = max(each, key=lambda e: e[2])
        out[g["name"]] = {"ms": ms, "interval_s": g.get("interval"), "slowest": (slowest[0], slowest[2]), "each": each}
    return out


GRID_PX = 1870  # a dashboard's 24 columns on a 1,920-pixel screen: a panel's width sets its step
MIN_STEP_S = 30  # the data source's scrape interval, Grafana's least step
# Grafana's rangeutil.roundInterval: (below this many seconds, this step)
ROUND_S = [(0.015, 0.01), (0.035, 0.02), (0.075, 0.05), (0.15, 0.1), (0.35, 0.2), (0.75, 0.5), (1.5, 1), (3.5, 2), (7.5, 5),
           (12.5, 10), (17.5, 15), (25, 20), (45, 30), (90, 60), (210, 120), (450, 300), (750, 600), (1050, 900), (1500, 1200),
           (2700, 1800), (5400, 3600), (9000, 7200), (16200, 10800), (32400, 21600), (float("inf"), 43200)]


def grafana_step(range_s, width_cols):
    """The step Grafana asks for: the range over the panel's width in pixels, rounded as Grafana
    rounds it, at least MIN_STEP_S."""
    raw = range_s / max(1, width_cols * GRID_PX / 24)
    return max(next(step for below, step in ROUND_S if raw < below), MIN_STEP_S)


def dashboard_queries(grafana, node):
    """(dashboard, panel, path, params) for every query the two dashboards send as Grafana opens
    them now: their variables (label values over the range), each instant target at now, each
    other target over the dashboard's range at its step, start and end aligned to the step."""
    out = []
    now = time.time()
    for f, one_node in (("p2pnode-fleet.json", False), ("p2pnode-cluster.json", True)):
        d = json.load(open(os.path.join(grafana, f)))
        range_s = {"now-6h": 6 * 3600, "now-24h": 86400, "now-1h": 3600}[d["time"]["from"]]
        name = f.replace(".json", "")
        for v in d["templating"]["list"]:
            m = re.match(r"label_values\((?:(\w+)(\{.*\})?, )?(\w+)\)", (v.get("query") or {}).get("query", "") if isinstance(v.get("query"), dict) else "")
            if m:
                sel = m.group(1) + (m.group(2) or "").replace('=~"$cluster"', '=~".*"')
                out.append((name, "variable " + v["name"], "/api/v1/label/%s/values" % m.group(3),
                            {"match[]": sel, "start": "%d" % (now - range_s), "end": "%d" % now}))
        # Grafana escapes a regex variable's dots (one node selected); "All" is its allValue, .*
        inst = '"%s"' % node.replace(".", "\\\\.") if one_node else '".*"'
        for p in d["panels"]:
            for t in p.get("targets", []):
                expr = t["expr"].replace('"$instance"', inst).replace("$cluster", ".*")
                title = p["title"] + ("" if len(p["targets"]) == 1 else " " + t["refId"])
                if t.get("instant"):
                    out.append((name, title, "/api/v1/query", {"query": expr, "time": "%.3f" % now}))
                else:
                    step = grafana_step(range_s, p["gridPos"]["w"])
                    end = math.floor(now / step) * step
                    out.append((name, title, "/api/v1/query_range", {"query": expr, "start": "%d" % (math.floor((now - range_s) / step) * step),
                                                                      "end": "%d" % end, "step": "%g" % step}))
    return out


def dashboards(a):
    """Every query's latency over a.rounds runs. VictoriaMetrics asked without its result cache
    (nocache=1), as a dashboard's first opening: a store's own work, like Prometheus' (which has none)."""
    rows = []
    for dash, panel, path, params in dashboard_queries(a.grafana, "127.0.0.1:%d" % a.base_port):  # node 0: an 8-GPU node
        if a.store == "victoriametrics":
            params = dict(params, nocache="1")
        url = a.url + path + "?" + urllib.parse.urlencode(params)
        times, n = [], 0
        for _ in range(a.rounds):
            t0 = time.perf_counter()
            r = json.load(urllib.request.urlopen(url, timeout=120))
            times.append((time.perf_counter() - t0) * 1000)
            if r.get("status") != "success":
                sys.exit("%s: %s" % (url, r))
            n = len(r["data"]) if path.startswith("/api/v1/label") else len(r["data"]["result"])
        times.sort()
        rows.append({"dashboard": dash, "panel": panel, "kind": "range" if "step" in params else "instant" if "query" in params else "labels",
                     "step": params.get("step"), "series": n, "p50_ms": statistics.median(times),
                     "p99_ms": times[min(len(times) - 1, int(round(0.99 * (len(times) - 1))))], "max_ms": times[-1]})
    return rows


def alerts(a):
    """Each alert's nodes (pending or firing) against those the fleet made faulty among the first N,
    asked again every 10 s for up to --alert-wait seconds until they agree (vmalert asks the store for
    a 2-minute group's figures as of the last 2-minute mark, -datasource.queryTimeAlignment: a node
    added just before one shows there an evaluation later); and how many Alertmanager holds."""
    exp = {k: {i for i in v if int(i.rsplit(":", 1)[1]) - a.base_port < a.nodes} for k, v in json.load(open(a.expected)).items()}
    t0 = time.time()
    while True:
        got = {}
        for x in get((a.vmalert or a.url) + "/api/v1/alerts")["data"]["alerts"]:
            got.setdefault(x["labels"]["alertname"], set()).add(x["labels"]["instance"])
        wrong = {k: {"missing": len(exp.get(k, set()) - got.get(k, set())), "extra": len(got.get(k, set()) - exp.get(k, set()))}
                 for k in set(exp) | set(got) if exp.get(k, set()) != got.get(k, set())}
        if not wrong or time.time() - t0 > a.alert_wait:
            break
        time.sleep(10)
    out = {"names": len(set(exp) | set(got)), "alerts": sum(len(v) for v in got.values()), "wrong": wrong, "waited_s": time.time() - t0}
    if a.alertmanager:
        am = [x for x in get(a.alertmanager + "/api/v2/alerts") if x["status"]["state"] == "active"]
        out["alertmanager"] = len(am)
    return out


def measure(a):
    t_start = time.time()
    pids = {}
    for p in a.pid:
        k, v = p.split("=", 1)
        pids.setdefault(k, []).append(v)
    m0, t0, c0 = own_metrics(a.url), time.time(), {k: cpu_seconds(p) for k, p in pids.items()}
    time.sleep(30)
    m1, t1, c1 = own_metrics(a.url), time.time(), {k: cpu_seconds(p) for k, p in pids.items()}
    counter = "vm_rows_inserted_total" if a.store == "victoriametrics" else "prometheus_tsdb_head_samples_appended_total"
    ingest = (m1[counter] - m0[counter]) / (t1 - t0)
    r = {"store": a.store, "feeder": a.feeder, "nodes": a.nodes, "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
         "loadavg_before": open("/proc/loadavg").read().split()[:3],
         "series_per_round": one(a.url, 'sum(scrape_samples_scraped{job="p2pnode"})'),
         "scrape_p99_ms": one(a.url, 'quantile(0.99, scrape_duration_seconds{job="p2pnode"})') * 1000,
         "ingest_per_s": ingest, "memory": {k: memory(p) for k, p in pids.items()},
         "cpu_cores": {k: (c1[k] - c0[k]) / (t1 - t0) for k in pids}, "rules": rules(a)}
    if a.store == "prometheus":
        r["head_series"] = m1.get("prometheus_tsdb_head_series")
    if a.vmalert:  # how vmalert's writes of recorded series and alert states fare
        r["vmalert_remotewrite"] = [l for l in urllib.request.urlopen(a.vmalert + "/metrics", timeout=60).read().decode().splitlines()
                                    if l.startswith("vmalert_remotewrite")]
    r["disk"] = disk(a)
    for p in a.pause:
        os.kill(int(p), signal.SIGSTOP)
    try:
        time.sleep(1)
        r["loadavg_queries"] = open("/proc/loadavg").read().split()[:3]
        r["queries"] = dashboards(a)
    finally:
        for p in a.pause:
            os.kill(int(p), signal.SIGCONT)
    r["alerts"] = alerts(a)
    r["loadavg_after"] = open("/proc/loadavg").read().split()[:3]
    r["measure_s"] = time.time() - t_start
    print(json.dumps(r), flush=True)
    worst = max(r["queries"], key=lambda q: q["p99_ms"])
    print("%s at %d nodes: RSS %s; ingest %.0f/s; slowest query %s / %s p99 %.1f ms; alerts wrong: %s" % (
        a.store, a.nodes, ", ".join("%s %.0f MiB" % (k, v["rss_mib"]) for k, v in r["memory"].items()), ingest,
        worst["dashboard"], worst["panel"], worst["p99_ms"], r["alerts"]["wrong"] or "none"), file=sys.stderr)


def fit(points):
    """Least-squares line y = a + b x."""
    n = len(points)
    mx, my = sum(x for x, _ in points) / n, sum(y for _, y in points) / n
    sxx = sum((x - mx) ** 2 for x, _ in points)
    b = sum((x - mx) * (y - my) for x, y in points) / sxx if sxx else 0.0
    return my - b * mx, b


NAME = {"victoriametrics": "VictoriaMetrics", "prometheus": "Prometheus"}
STORE = {"victoriametrics": "victoria-metrics", "prometheus": "prometheus"}
SIDE = {"victoriametrics": ("victoria-metrics", "scraper", "vmalert"), "prometheus": ("prometheus",)}  # what an operator runs for it


def side_mib(r):
    return sum(r["memory"][k]["rss_mib"] for k in SIDE[r["store"]] if k in r["memory"])


def per_day_mib(r):
    """Disk a node's samples take a day at the 30 s scrape (2,880 a series), at the bytes per sample measured."""
    return r["series_per_round"] / r["nodes"] * 2880 * (r["disk"]["bytes_per_sample"] or 0) / 2**20


def table(a):
    runs = sorted((json.loads(l) for l in open(a.results) if l.startswith("{")), key=lambda r: (r["nodes"], r["store"] != "victoriametrics"))
    head = ["%s %s" % (NAME[r["store"]], "{:,}".format(r["nodes"])) for r in runs]
    print("| | " + " | ".join(head) + " |\n|---|" + "---|" * len(runs))

    def row(label, f):
        print("| %s | %s |" % (label, " | ".join(f(r) for r in runs)))
    row("series per scrape round (per node)", lambda r: "{:,} ({:.0f})".format(int(r["series_per_round"]), r["series_per_round"] / r["nodes"]))
    row("ingest, samples/s", lambda r: "{:,.0f}".format(r["ingest_per_s"]))
    row("store RSS (per node)", lambda r: "%.0f MiB (%.0f KiB)" % (r["memory"][STORE[r["store"]]]["rss_mib"], r["memory"][STORE[r["store"]]]["rss_mib"] * 1024 / r["nodes"]))
    row("scraper + vmalert RSS", lambda r: "%s %.0f + %.0f MiB" % (r["feeder"], r["memory"]["scraper"]["rss_mib"], r["memory"]["vmalert"]["rss_mib"]) if "scraper" in r["memory"] else "–")
    row("all it runs, RSS (per node)", lambda r: "%.0f MiB (%.0f KiB)" % (side_mib(r), side_mib(r) * 1024 / r["nodes"]))
    row("CPU, cores (store; scraper; vmalert)", lambda r: "; ".join("%.2f" % r["cpu_cores"][k] for k in SIDE[r["store"]]))
    row("the fleet's simulator: RSS, CPU", lambda r: "%.0f MiB, %.2f cores" % (r["memory"]["fleet"]["rss_mib"], r["cpu_cores"]["fleet"]) if "fleet" in r["memory"] else "–")
    row("bytes per sample stored", lambda r: "%.2f" % r["disk"]["bytes_per_sample"] if r["disk"]["bytes_per_sample"] else "–")
    row("disk a node's samples take a day", lambda r: "%.1f MiB" % per_day_mib(r) if r["disk"]["bytes_per_sample"] else "–")
    row("data directory after the run", lambda r: "%.0f MiB" % (r["disk"]["disk_bytes"] / 2**20))
    groups = sorted({g for r in runs for g in r["rules"]})
    for g in groups:
        row("rule group `%s` (its slowest rule asked alone)" % g,
            lambda r, g=g: "%.0f ms (%s %.0f ms)" % (r["rules"][g]["ms"], r["rules"][g]["slowest"][0], r["rules"][g]["slowest"][1]) if g in r["rules"] else "–")
    for d in ("p2pnode-fleet", "p2pnode-cluster"):
        row("%s: slowest p50 / p99" % d, lambda r, d=d: "%.1f / %.1f ms" % (max(q["p50_ms"] for q in r["queries"] if q["dashboard"] == d),
                                                                             max(q["p99_ms"] for q in r["queries"] if q["dashboard"] == d)))
    row("queries over 100 ms p99", lambda r: "%d of %d" % (sum(q["p99_ms"] > 100 for q in r["queries"]), len(r["queries"])))
    row("alerts naming exactly the faulty nodes", lambda r: "all %d names (%d alerts)%s" % (r["alerts"]["names"], r["alerts"]["alerts"],
        " after %.0f s more" % r["alerts"]["waited_s"] if r["alerts"].get("waited_s", 0) > 5 else "")
        if not r["alerts"]["wrong"] else "WRONG: %s" % r["alerts"]["wrong"])
    row("load average: before; while querying", lambda r: "%s; %s" % (r["loadavg_before"][0], r.get("loadavg_queries", ["?"])[0]))
    print("\nPer query, p50 / p99 ms (range: over the dashboard's range at Grafana's step):\n\n| dashboard | panel | " +
          " | ".join(head) + " |\n|---|---|" + "---|" * len(runs))
    for i, q in enumerate(runs[0]["queries"]):
        print("| %s | %s%s | %s |" % (q["dashboard"].replace("p2pnode-", ""), q["panel"], " (range, %s s)" % q["step"] if q.get("step") else "", " | ".join(
            "%.1f / %.1f" % (r["queries"][i]["p50_ms"], r["queries"][i]["p99_ms"]) if i < len(r["queries"]) else "–" for r in runs)))
    print()
    lines = {}
    for s in ("victoriametrics", "prometheus"):
        for what, f in (("store", lambda r: r["memory"][STORE[r["store"]]]["rss_mib"]), ("all it runs", side_mib)):
            pts = [(r["nodes"], f(r)) for r in runs if r["store"] == s]
            if len(pts) < 2:
                continue
            c, b = fit(pts)
            lines[s, what] = b
            print("%s, %s: RSS ~ %.0f MiB + %.1f KiB per node (least squares over %s nodes; largest residual %.0f MiB): %s" % (
                NAME[s], what, c, b * 1024, ", ".join("{:,}".format(n) for n, _ in pts), max(abs(c + b * n - y) for n, y in pts),
                ", ".join("{:,} nodes {:.1f} GiB".format(n, (c + b * n) / 1024) for n in (10000, 20000, 50000, 100000))))
    for what in ("store", "all it runs"):
        if ("victoriametrics", what) in lines and ("prometheus", what) in lines:
            print("per node, VictoriaMetrics over Prometheus (%s): %.2f" % (what, lines["victoriametrics", what] / lines["prometheus", what]))
    for n in sorted({r["nodes"] for r in runs}):
        both = {r["store"]: r for r in runs if r["nodes"] == n}
        if len(both) == 2:
            v, p = both["victoriametrics"], both["prometheus"]
            print("at {:,} nodes, VictoriaMetrics over Prometheus: store RSS {:.2f}, all it runs {:.2f}, bytes per sample {}".format(
                n, v["memory"]["victoria-metrics"]["rss_mib"] / p["memory"]["prometheus"]["rss_mib"], side_mib(v) / side_mib(p),
                "%.2f" % (v["disk"]["bytes_per_sample"] / p["disk"]["bytes_per_sample"]) if v["disk"]["bytes_per_sample"] and p["disk"]["bytes_per_sample"] else "–"))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    w = sub.add_parser("wait")
    w.add_argument("--url", required=True)
    w.add_argument("--nodes", type=int, required=True)
    w.add_argument("--timeout", type=int, default=900)
    m = sub.add_parser("measure")
    m.add_argument("--store", choices=["prometheus", "victoriametrics"], required=True)
    for k in ("--url", "--expected", "--grafana", "--data"):
        m.add_argument(k, required=True)
    m.add_argument("--nodes", type=int, required=True)
    m.add_argument("--base-port", type=int, required=True)
    m.add_argument("--pid", action="append", default=[])
    m.add_argument("--pause", action="append", default=[])
    m.add_argument("--vmalert")
    m.add_argument("--feeder", help="what scrapes for the store: vmagent or agent (Prometheus in agent mode)")
    m.add_argument("--alertmanager")
    m.add_argument("--rounds", type=int, default=50)
    m.add_argument("--alert-wait", type=int, default=300)
    t = sub.add_parser("table")
    t.add_argument("results")
    a = p.parse_args()
    {"wait": wait, "measure": measure, "table": table}[a.command](a)


if __name__ == "__main__":
    main()
