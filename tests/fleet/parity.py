#!/usr/bin/env python3
"""The same answers from two stores: every recording rule, alert rule and dashboard query asked of
Prometheus and of VictoriaMetrics holding the same samples, and the alerts each rule engine holds.

  parity.py scale --by N --out DIR FILE...
      copies of rule files and dashboards with every duration cut N times ([10m] -> [10s] for
      N=60; offset, for:, interval: too), so a test whose simulated minute lasts a second fills a
      10-minute window in 10 seconds
  parity.py compare --a URL --b URL --rules DIR --dashboards DIR --instance HOST:PORT --at T
                    [--range S --step S] [--clock-slack S] [--expect-differ QUERY]
      asks both stores every rule's expression, every dashboard query (the fleet dashboard for
      every cluster and for one; the node dashboard for one node, as its drill-down opens it, and
      for every node; the instant ones at T, the others over [T-range, T] as Grafana draws them)
      and the dashboards' variables; prints each that differs (series or value) and exits 1 if
      any does. A query whose value is an age read from a recording rule (its rule calls time())
      may differ by --clock-slack seconds: each store's rule engine recorded it at its own instant.
      --expect-differ: a query that must come out different (the check can fail).
  parity.py alerts --prometheus URL --vmalert URL --alertmanager URL --expected FILE
      the alerts Prometheus and vmalert fire, and those Alertmanager holds, against the nodes
      the fleet made faulty (fleet.py's expected.json); exit 1 on any difference
"""
import argparse
import glob
import json
import math
import os
import re
import sys
import urllib.parse
import urllib.request

import yaml

UNIT = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
DURATION = re.compile(r"^(\d+)(ms|[smhdw])$")


def scale_duration(text, by):
    n, unit = DURATION.match(text).groups()
    seconds = int(n) * UNIT[unit] / by
    if seconds != int(seconds) or seconds < 1:
        sys.exit("parity.py scale: %s cut %d times is not a whole number of seconds" % (text, by))
    return "%ds" % seconds


def scale_promql(expr, by):
    """[10m] -> [10s], [1h:5m] -> [60s:5s], offset 10m -> offset 10s (N=60)."""
    expr = re.sub(r"\[(\d+(?:ms|[smhdw]))(?::(\d+(?:ms|[smhdw])))?\]",
                  lambda m: "[%s%s]" % (scale_duration(m.group(1), by), ":" + scale_duration(m.group(2), by) if m.group(2) else ""), expr)
    return re.sub(r"\boffset\s+(\d+(?:ms|[smhdw]))", lambda m: "offset " + scale_duration(m.group(1), by), expr)


def scale(a):
    os.makedirs(a.out, exist_ok=True)
    for f in a.files:
        out = os.path.join(a.out, os.path.basename(f))
        if f.endswith(".json"):
            d = json.load(open(f))
            for p in d["panels"]:
                for t in p.get("targets", []):
                    t["expr"] = scale_promql(t["expr"], a.by)
            json.dump(d, open(out, "w"), indent=1)
            continue
        d = yaml.safe_load(open(f))
        for g in d["groups"]:
            if "interval" in g:
                g["interval"] = scale_duration(g["interval"], a.by)
            for r in g["rules"]:
                r["expr"] = scale_promql(r["expr"], a.by)
                if "for" in r:
                    r["for"] = scale_duration(r["for"], a.by)
        yaml.safe_dump(d, open(out, "w"), sort_keys=False, width=200)


def api(url, path, **params):
    params["nocache"] = "1"  # VictoriaMetrics: no result cache, no shift of a recent time (Prometheus ignores it)
    r = json.load(urllib.request.urlopen(url + path + "?" + urllib.parse.urlencode(params, doseq=True), timeout=60))
    if r.get("status") != "success":
        raise RuntimeError("%s%s: %s" % (url, path, r))
    return r["data"]


def answer(url, q):
    """{labels: value} (instant) or {labels: ((t, value), ...)} (range); labels as a sorted tuple."""
    kind, expr, extra = q
    if kind == "values":
        return {tuple(sorted(api(url, "/api/v1/label/%s/values" % expr, **extra))): 0.0}
    data = api(url, "/api/v1/query" if kind == "instant" else "/api/v1/query_range", query=expr, **extra)
    out = {}
    for s in data["result"]:
        key = tuple(sorted(s["metric"].items()))
        out[key] = float(s["value"][1]) if kind == "instant" else tuple((t, float(v)) for t, v in s["values"])
    return out


def same_value(x, y, slack):
    if math.isnan(x) or math.isnan(y):
        return math.isnan(x) and math.isnan(y)
    return math.isclose(x, y, rel_tol=1e-9, abs_tol=max(slack, 1e-12))


def differences(a, b, slack, ranked=None):
    """What differs between two answers, in words (empty: the same). ranked: "topk" or "bottomk",
    an instant one, whose ties at the edge (its k-th value) each engine may break its own way: the
    same values, and the same series wherever a value is not the edge's."""
    if ranked:
        va, vb = sorted(a.values()), sorted(b.values())
        if len(va) != len(vb) or not all(same_value(x, y, slack) for x, y in zip(va, vb)):
            return ["the ranked values differ: A %s, B %s" % (va[:5], vb[:5])]
        pick = (lambda v: v[-1]) if ranked == "bottomk" else (lambda v: v[0])
        if va:
            a = {k: v for k, v in a.items() if not same_value(v, pick(va), slack)}
            b = {k: v for k, v in b.items() if not same_value(v, pick(vb), slack)}
    out = []
    for k in sorted(set(a) - set(b))[:3]:
        out.append("only in A: %s" % dict(k))
    for k in sorted(set(b) - set(a))[:3]:
        out.append("only in B: %s" % dict(k))
    for k in sorted(set(a) & set(b)):
        x, y = a[k], b[k]
        if isinstance(x, float):
            if not same_value(x, y, slack):
                out.append("%s: A %r, B %r" % (dict(k), x, y))
        elif [t for t, _ in x] != [t for t, _ in y]:
            out.append("%s: points at different times (A %d, B %d)" % (dict(k), len(x), len(y)))
        else:
            bad = [(t, v, w) for (t, v), (_, w) in zip(x, y) if not same_value(v, w, slack)]
            if bad:
                out.append("%s: %d of %d points differ, first at %s: A %r, B %r" % ((dict(k), len(bad), len(x)) + bad[0]))
    return out


def queries(a):
    """(what, (kind, expr, params), clock slack) for every rule, dashboard query and variable."""
    rng = {"start": "%.3f" % (a.at - a.range), "end": "%.3f" % a.at, "step": "%ds" % a.step}
    at = {"time": "%.3f" % a.at}
    aged = set()  # recording rules whose value is an age (their expression calls time())
    out = []
    for f in sorted(glob.glob(os.path.join(a.rules, "*.yml"))):
        for g in yaml.safe_load(open(f))["groups"]:
            for r in g["rules"]:
                if "record" in r and "time()" in r["expr"]:
                    aged.add(r["record"])
                out.append(("%s %s" % ("recording rule" if "record" in r else "alert", r.get("record") or r.get("alert")),
                            ("instant", r["expr"], at), 0.0))
    for f in sorted(glob.glob(os.path.join(a.dashboards, "*.json"))):
        d = json.load(open(f))
        node = "instance" in {v["name"] for v in d["templating"]["list"]}
        # Grafana escapes a regex variable's dots as \\. in the query's string.
        choices = [('"%s"' % a.instance.replace(".", "\\\\."), "the node"), ('".*"', "every node")] if node else \
                  [('".*"', "every cluster"), ('"dc1"', "cluster dc1")]
        for v in d["templating"]["list"]:
            m = re.match(r"label_values\((?:(\w+)(\{.*\})?, )?(\w+)\)", (v.get("query") or {}).get("query", "") if isinstance(v.get("query"), dict) else "")
            if m:
                sel = m.group(1) + (m.group(2) or "").replace('=~"$cluster"', '=~".*"')
                out.append(("%s variable %s" % (d["uid"], v["name"]), ("values", m.group(3), {"match[]": sel, "start": rng["start"], "end": rng["end"]}), 0.0))
        for p in d["panels"]:
            for t in p.get("targets", []):
                for value, which in choices:
                    expr = t["expr"].replace('"$instance"', value) if node else t["expr"].replace('"$cluster"', value)
                    expr = expr.replace("$cluster", ".*")
                    slack = a.clock_slack if any(r in expr for r in aged) else 0.0
                    kind = "instant" if t.get("instant") else "range"
                    out.append(("%s: %s%s (%s)" % (d["uid"], p["title"], "" if len(p["targets"]) == 1 else " " + t["refId"], which),
                                (kind, expr, at if kind == "instant" else rng), slack))
    return out


def compare(a):
    bad, asked, empty = 0, 0, 0
    for what, q, slack in queries(a):
        asked += 1
        try:
            x, y = answer(a.a, q), answer(a.b, q)
        except Exception as e:  # an error on either side is a difference
            print("DIFF %s: %s\n     %s" % (what, e, q[1]))
            bad += 1
            continue
        ranked = re.match(r"\s*(topk|bottomk)\(", q[1]) if q[0] == "instant" else None
        d = differences(x, y, slack, ranked and ranked.group(1))
        empty += not x and not y
        if d:
            bad += 1
            print("DIFF %s (%d series in A, %d in B)\n     %s\n     %s" % (what, len(x), len(y), q[1], "\n     ".join(d[:4])))
    print("%d queries asked of both stores, %d with an empty answer on both, %d answered differently" % (asked, empty, bad))
    for expr in a.expect_differ or []:
        q = ("range", expr, {"start": "%.3f" % (a.at - a.range), "end": "%.3f" % a.at, "step": "%ds" % a.step})
        d = differences(answer(a.a, q), answer(a.b, q), 0.0)
        print("%s the check tells a query the stores answer differently apart: %s%s" % (
            "ok:  " if d else "FAIL:", expr, (" (%s)" % d[0]) if d else " came out the same"))
        bad += not d
    sys.exit(1 if bad else 0)


def get(url):
    return json.load(urllib.request.urlopen(url, timeout=30))


def alerts(a):
    """{alertname: {instance, ...}} of the firing alerts of each, and each alert's annotations."""
    held = {"Prometheus": [(x["labels"], x["annotations"]) for x in get(a.prometheus + "/api/v1/alerts")["data"]["alerts"] if x["state"] == "firing"],
            "vmalert": [(x["labels"], x["annotations"]) for x in get(a.vmalert + "/api/v1/alerts")["data"]["alerts"] if x["state"] == "firing"],
            "Alertmanager": [(x["labels"], x["annotations"]) for x in get(a.alertmanager + "/api/v2/alerts") if x["status"]["state"] == "active"]}
    expected = {k: set(v) for k, v in json.load(open(a.expected)).items()}
    bad = 0
    for who, got in held.items():
        names = {}
        for labels, _ in got:
            names.setdefault(labels["alertname"], set()).add(labels["instance"])
        wrong = ["%s: missing %s, extra %s" % (n, sorted(expected.get(n, set()) - names.get(n, set())), sorted(names.get(n, set()) - expected.get(n, set())))
                 for n in sorted(set(names) | set(expected)) if names.get(n) != expected.get(n)]
        print("%s %s: %d alerts firing, %d names%s" % ("ok  " if not wrong else "FAIL", who, len(got), len(names),
                                                        " - each names exactly the faulty nodes" if not wrong else ":\n     " + "\n     ".join(wrong)))
        bad += bool(wrong)
    # The same alerts with the same labels and texts from both rule engines, and in Alertmanager. The
    # texts up to their figures: each engine read them at its own instant (a rate a second later, an
    # age a second older); the figures at one instant are the compare step's.
    key = lambda labels: tuple(sorted(labels.items()))
    words = lambda notes: {k: re.sub(r"[0-9]+(\.[0-9]+)?", "#", v) for k, v in notes.items()}
    prom = {key(l): words(n) for l, n in held["Prometheus"]}
    for who in ("vmalert", "Alertmanager"):
        other = {key(l): words(n) for l, n in held[who]}
        d = ["only in Prometheus: %s" % dict(k) for k in sorted(set(prom) - set(other))][:3] + \
            ["only in %s: %s" % (who, dict(k)) for k in sorted(set(other) - set(prom))][:3] + \
            ["%s: %s differs: Prometheus %r, %s %r" % (dict(k)["alertname"], n, prom[k].get(n), who, other[k].get(n))
             for k in sorted(set(prom) & set(other)) for n in sorted(set(prom[k]) | set(other[k])) if prom[k].get(n) != other[k].get(n)][:5]
        print("%s Prometheus and %s: %s" % ("ok  " if not d else "FAIL", who, "the same labels and annotations (up to their figures) on every alert" if not d else "\n     " + "\n     ".join(d)))
        bad += bool(d)
    sys.exit(1 if bad else 0)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("scale")
    s.add_argument("--by", type=int, required=True)
    s.add_argument("--out", required=True)
    s.add_argument("files", nargs="+")
    c = sub.add_parser("compare")
    for k in ("--a", "--b", "--rules", "--dashboards", "--instance"):
        c.add_argument(k, required=True)
    c.add_argument("--at", type=float, required=True)
    c.add_argument("--range", type=int, default=60)
    c.add_argument("--step", type=int, default=5)
    c.add_argument("--clock-slack", type=float, default=0.0)
    c.add_argument("--expect-differ", action="append")
    al = sub.add_parser("alerts")
    for k in ("--prometheus", "--vmalert", "--alertmanager", "--expected"):
        al.add_argument(k, required=True)
    a = p.parse_args()
    {"scale": scale, "compare": compare, "alerts": alerts}[a.command](a)


if __name__ == "__main__":
    main()
