#!/usr/bin/env python3
"""Draws Grafana dashboards (grafana/*.json) as PNGs, each laid out on its own grid, from a real
Prometheus: every panel runs its own query as Grafana would (instant for tables and stats, a range
over what Prometheus holds for time series) and is drawn with matplotlib, with the panel's unit and
thresholds. Not Grafana: the panel types the dashboards use (row, stat, bargauge, timeseries, table,
and a table that groupingToMatrix turns into a GPU x peer GPU matrix) are drawn in their spirit.

usage: render_dashboards.py --prom URL --out DIR [--caption TEXT] [--start UNIX_TIME] DASHBOARD.json[:VAR=VALUE] ...
  A variable not given is its "All" (.*). Writes DIR/<dashboard uid>.png; exit 1 if a query fails.
"""
import argparse
import datetime
import json
import os
import re
import sys
import time
import urllib.parse
import urllib.request

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib import colormaps, dates, ticker  # noqa: E402
from PIL import Image  # noqa: E402

WIDTH_IN, DPI = 14.0, 100
UNIT_W = WIDTH_IN / 24
UNIT_H = UNIT_W * 0.47  # Grafana's grid: 30 px rows on columns of about 64 px
HIDDEN = {"Time", "__name__", "job", "__scheme__"}  # the dashboards' "organize" transformation
COLORS = {"green": "#37872d", "orange": "#e07000", "red": "#c4162a", "blue": "#1f60c4"}
FAILED = []


def prom_get(prom, path, **params):
    url = "%s/api/v1/%s?%s" % (prom, path, urllib.parse.urlencode(params))
    try:
        r = json.load(urllib.request.urlopen(url, timeout=30))
    except Exception as e:  # a bad query answers 400 with its error in the body
        body = getattr(e, "read", lambda: b"")().decode(errors="replace")
        FAILED.append("%s: %s %s" % (params.get("query"), e, body[:200]))
        return []
    return r["data"]["result"]


def scaled(v, steps, unit):
    for limit, suffix in steps:
        if abs(v) >= limit:
            return "%.3g %s%s" % (v / limit, suffix, unit)
    return "%.3g %s" % (v, unit)


def fmt(v, unit=None, decimals=None):
    """A value as Grafana writes it for the panel's unit."""
    if isinstance(v, str):
        return v
    if unit == "Bps":
        return scaled(v, [(1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")], "B/s")
    if unit == "bytes":
        return scaled(v, [(2**40, "Ti"), (2**30, "Gi"), (2**20, "Mi"), (2**10, "Ki")], "B")
    if unit == "percentunit":
        return "%.*f%%" % (0 if decimals is None else decimals, v * 100)
    if unit == "s":
        for limit, name in ((86400, "day"), (3600, "h"), (60, "min"), (1, "s"), (1e-3, "ms"), (1e-6, "µs")):
            if abs(v) >= limit or limit == 1e-6:
                return "%.3g %s" % (v / limit, name)
    return "%.4g" % v


def threshold_color(v, fc, default="green"):
    steps = (fc.get("thresholds") or {}).get("steps") or []
    color = default
    for s in steps:
        if s["value"] is None or v >= s["value"]:
            color = s["color"]
    return COLORS.get(color, color)


def legend(template, labels):
    if template:
        return re.sub(r"\{\{\s*(\w+)\s*\}\}", lambda m: labels.get(m.group(1), ""), template)
    shown = ", ".join("%s=%s" % kv for kv in sorted(labels.items()) if kv[0] != "__name__")
    return "{%s}" % shown if shown else ""


def empty(ax, why):
    ax.text(0.5, 0.55, "No data", ha="center", va="center", fontsize=10, color="#555")
    ax.text(0.5, 0.3, why, ha="center", va="center", fontsize=7, color="#888", wrap=True)


def draw_stat(ax, p, results, bars=False):
    fc = p.get("fieldConfig", {}).get("defaults", {})
    if not results:
        return empty(ax, "no series")
    if bars:  # bargauge: one horizontal bar per query
        top = max(v for _, v in results) or 1
        for i, (label, v) in enumerate(results):
            y = len(results) - 1 - i
            ax.barh(y, v / top, color=threshold_color(v, fc), height=0.6)
            ax.text(-0.01, y, label, ha="right", va="center", fontsize=8)
            ax.text(v / top + 0.01, y, fmt(v, fc.get("unit")), ha="left", va="center", fontsize=9, weight="bold")
        ax.set_xlim(-0.25, 1.15)
        ax.set_ylim(-0.7, len(results) - 0.3)
        return
    n = len(results)
    for i, (label, v) in enumerate(results):
        x = (i + 0.5) / n
        ax.text(x, 0.5, fmt(v, fc.get("unit"), fc.get("decimals")), ha="center", va="center",
                fontsize=22 if n < 4 else 15, weight="bold", color=threshold_color(v, fc))
        ax.text(x, 0.12, label, ha="center", va="center", fontsize=8, color="#333")


def draw_timeseries(ax, p, series):
    unit = p.get("fieldConfig", {}).get("defaults", {}).get("unit")
    if not series:
        return empty(ax, "no series")
    ax.set_axis_on()
    for label, ts, vs in series[:12]:
        ax.plot([dates.date2num(datetime.datetime.fromtimestamp(t, datetime.timezone.utc)) for t in ts], vs, lw=1.2, label=label)
    ax.xaxis.set_major_formatter(dates.DateFormatter("%H:%M:%S"))
    ax.xaxis.set_major_locator(ticker.MaxNLocator(4))
    ax.yaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: fmt(v, unit)))
    ax.yaxis.set_major_locator(ticker.MaxNLocator(4))
    ax.tick_params(labelsize=7)
    ax.grid(alpha=0.3)
    if all(v == 0 for _, _, vs in series for v in vs):
        ax.text(0.5, 0.75, "0 throughout: the simulated fleet's counters do not move", transform=ax.transAxes,
                ha="center", fontsize=7, color="#888")
    more = " (+%d more)" % (len(series) - 12) if len(series) > 12 else ""
    ax.legend(fontsize=6, loc="lower left", ncol=3, frameon=False, title=more or None, title_fontsize=6)


def draw_matrix(ax, p, results, opts):
    fc = p.get("fieldConfig", {}).get("defaults", {})
    cells = {}
    for r in results:
        m = r["metric"]
        v = m.get(opts["valueField"]) if opts["valueField"] != "Value" else float(r["value"][1])
        cells[(m.get(opts["rowField"], ""), m.get(opts["columnField"], ""))] = v
    rows = sorted({k[0] for k in cells})
    cols = sorted({k[1] for k in cells})
    numbers = [v for v in cells.values() if not isinstance(v, str)]
    lo, hi = (min(numbers), max(numbers)) if numbers else (0, 1)
    cmap = colormaps["RdYlGn"]
    for i, r in enumerate(rows):
        for j, c in enumerate(cols):
            v = cells.get((r, c))
            if v is None:
                color = "#f2f2f2"
            elif isinstance(v, str):
                color = "#dde6f5"
            elif fc.get("color", {}).get("mode") == "continuous-RdYlGr":
                color = cmap(0.15 + 0.7 * ((v - lo) / (hi - lo) if hi > lo else 1))
            else:
                color = threshold_color(v, fc)
            ax.add_patch(plt.Rectangle((j, i), 1, 1, color=color, ec="white"))
            if v is not None:
                dark = not isinstance(v, str) and color in (COLORS["red"], COLORS["green"])
                ax.text(j + 0.5, i + 0.5, fmt(v, fc.get("unit"), fc.get("decimals")).replace(" ", "\n" if len(cols) > 6 else " "),
                        ha="center", va="center", fontsize=6 if len(cols) > 4 else 8, color="white" if dark else "black")
    short = lambda a: a.replace("0000:", "")  # noqa: E731 (the PCI domain is 0000 on every recorded box)
    ax.set_axis_on()
    ax.set_xlim(0, len(cols)); ax.set_ylim(len(rows), 0)
    ax.set_xticks([j + 0.5 for j in range(len(cols))], [short(c) for c in cols], fontsize=6)
    ax.set_yticks([i + 0.5 for i in range(len(rows))], [short(r) for r in rows], fontsize=6)
    ax.xaxis.tick_top()
    ax.tick_params(length=0)
    for s in ax.spines.values():
        s.set_visible(False)
    ax.set_ylabel("%s → %s" % (opts["rowField"], opts["columnField"]), fontsize=6)


def draw_table(ax, p, results):
    fc = p.get("fieldConfig", {}).get("defaults", {})
    if not results:
        return empty(ax, "nothing to list for the nodes shown")
    labels = sorted({k for r in results for k in r["metric"]} - HIDDEN,
                    key=lambda k: ((["node", "instance", "cluster"] + [k]).index(k), k))
    rows = [[r["metric"].get(k, "") for k in labels] + [float(r["value"][1])] for r in results]
    for s in (p.get("options", {}).get("sortBy") or [])[:1]:
        if s.get("displayName") == "Value":
            rows.sort(key=lambda row: row[-1], reverse=s.get("desc", False))
    header = labels + ["Value"]
    text = [[str(c) for c in row[:-1]] + [fmt(row[-1], fc.get("unit"), fc.get("decimals"))] for row in rows]
    # Columns in characters of 7 pt DejaVu Sans Mono: the widest shrinks (its cells cut with …) until all fit.
    box = ax.get_position()
    width_in, height_in = box.width * ax.figure.get_figwidth(), box.height * ax.figure.get_figheight()
    char_in, line_in = 0.6 * 7 / 72, 0.16
    widths = [max([len(h)] + [len(t[i]) for t in text]) for i, h in enumerate(header)]
    while sum(w + 2 for w in widths) > width_in / char_in and max(widths) > 5:
        widths[widths.index(max(widths))] -= 1
    cut = lambda t, w: t if len(t) <= w else t[:w - 1] + "…"  # noqa: E731
    fit = max(1, int(height_in / line_in) - 1)
    shown = text if len(text) <= fit else text[:fit - 1]
    x = 0.0
    for i, h in enumerate(header):
        ax.text(x, 1.0, cut(h, widths[i]), fontsize=7, weight="bold", va="top", family="DejaVu Sans Mono", color="#1f60c4")
        for k, t in enumerate(shown):
            value_col = i == len(header) - 1 and fc.get("thresholds")
            ax.text(x, 1.0 - (k + 1) * line_in / height_in, cut(t[i], widths[i]), fontsize=7, va="top", family="DejaVu Sans Mono",
                    color=threshold_color(rows[k][-1], fc, "black") if value_col else "black")
        x += (widths[i] + 2) * char_in / width_in
    if len(shown) < len(text):
        ax.text(0, 1.0 - (len(shown) + 1) * line_in / height_in, "… %d more rows" % (len(text) - len(shown)),
                fontsize=7, va="top", color="#888")


def palette():
    """A fixed palette of the colours drawn (each with its blends into white, for the edges of text),
    greys and the matrix's colour map: a small PNG in which no colour becomes another."""
    mix = lambda c, t: tuple(int(round(255 * (x + (1 - x) * t))) for x in c)  # noqa: E731
    drawn = list(COLORS.values()) + ["#dde6f5", "#1f60c4"] + plt.rcParams["axes.prop_cycle"].by_key()["color"]
    rgb = [mix(matplotlib.colors.to_rgb(c), t) for c in drawn for t in (0, 0.25, 0.5, 0.75)]
    rgb += [(v, v, v) for v in list(range(0, 255, 6)) + [255]] + [(244, 245, 245), (242, 242, 242), (208, 208, 208)]
    rgb += [mix(colormaps["RdYlGn"](0.15 + 0.7 * i / 47)[:3], 0) for i in range(48)]
    img = Image.new("P", (1, 1))
    img.putpalette([v for c in rgb[:256] for v in c] + [0] * 3 * (256 - len(rgb[:256])))
    return img


def panel_axes(fig, p, grid_h):
    """The panel's frame and title on the figure, and the axes its content goes in."""
    g = p["gridPos"]
    x0, y0 = g["x"] / 24, 1 - (g["y"] + 2 + g["h"]) / grid_h  # 2: the header's rows
    w, h = g["w"] / 24, g["h"] / grid_h
    if p["type"] == "row":
        ax = fig.add_axes([x0 + 0.004, y0, w - 0.008, h]); ax.axis("off")
        ax.text(0, 0.4, p["title"], fontsize=10, weight="bold", va="center")
        return None
    frame = fig.add_axes([x0 + 0.003, y0 + 0.002 / grid_h * 24, w - 0.006, h - 0.004 / grid_h * 24])
    frame.set_xticks([]); frame.set_yticks([])
    frame.set_facecolor("white")
    for s in frame.spines.values():
        s.set_color("#d0d0d0")
    frame.text(0.01, 1 - 0.3 / g["h"], p["title"], transform=frame.transAxes, fontsize=8.5, weight="bold", va="center")
    # Room for the title and the axes' labels: the time series' values, the matrix's GPUs (left and on top).
    matrix = any(t["id"] == "groupingToMatrix" for t in p.get("transformations", []))
    pad_l = {"timeseries": 0.12, "bargauge": 0.1}.get(p["type"], 0.07 * 12 / g["w"] if matrix else 0.02)
    pad_t = 0.75 / g["h"] + (0.3 / g["h"] if matrix else 0)
    ax = fig.add_axes([x0 + 0.003 + pad_l * w, y0 + 0.12 * h, (w - 0.012) * (1 - pad_l) - 0.004, h * (1 - pad_t) - 0.15 * h])
    ax.axis("off")
    return ax


def draw_panel(ax, p, variables, prom, start, now):
    """Runs the panel's queries and draws what they return; the number of series."""
    exprs = []
    for t in p.get("targets", []):
        e = t["expr"]
        for name, value in variables.items():
            e = e.replace("$" + name, value)
        exprs.append((t, e))
    if p["type"] == "timeseries":
        series = [(legend(t.get("legendFormat"), r["metric"]), [float(a) for a, _ in r["values"]], [float(b) for _, b in r["values"]])
                  for t, e in exprs
                  for r in prom_get(prom, "query_range", query=e, start=start, end=now, step=max(1, int((now - start) / 150)))]
        draw_timeseries(ax, p, series)
        return len(series)
    if p["type"] in ("stat", "bargauge"):
        results = [(legend(t.get("legendFormat"), r["metric"]), float(r["value"][1]))
                   for t, e in exprs for r in prom_get(prom, "query", query=e, time=now)]
        draw_stat(ax, p, sorted(results) if p["type"] == "stat" else results, bars=p["type"] == "bargauge")
        return len(results)
    results = [r for _, e in exprs for r in prom_get(prom, "query", query=e, time=now)]
    matrix = next((t["options"] for t in p.get("transformations", []) if t["id"] == "groupingToMatrix"), None)
    if matrix and results:
        draw_matrix(ax, p, results, matrix)
    else:
        draw_table(ax, p, results)
    return len(results)


def render(dashboard, given, prom, out, caption, start):
    d = json.load(open(dashboard))
    names = [v["name"] for v in d["templating"]["list"] if v["name"] != "datasource"]
    variables = {n: given.get(n, ".*") for n in names}
    grid_h = max(p["gridPos"]["y"] + p["gridPos"]["h"] for p in d["panels"]) + 2  # + the header
    fig = plt.figure(figsize=(WIDTH_IN, grid_h * UNIT_H), dpi=DPI, facecolor="#f4f5f5")
    head = fig.add_axes([0, 1 - 2 / grid_h, 1, 2 / grid_h]); head.axis("off")
    head.text(0.01, 0.62, d["title"], fontsize=15, weight="bold", va="center")
    head.text(0.01, 0.2, "%s   |   %s   |   drawn by scripts/render_dashboards.py"
              % (", ".join("%s = %s" % (n, given.get(n, "All")) for n in names), caption), fontsize=8, color="#555", va="center")
    now = time.time()
    counts = []
    for p in d["panels"]:
        ax = panel_axes(fig, p, grid_h)
        if ax is not None:
            counts.append("%s: %d" % (p["title"], draw_panel(ax, p, variables, prom, start, now)))
    path = os.path.join(out, d["uid"] + ".png")
    fig.savefig(path, dpi=DPI, facecolor=fig.get_facecolor())
    plt.close(fig)
    Image.open(path).convert("RGB").quantize(palette=palette(), dither=Image.Dither.NONE).save(path, optimize=True)
    print("%s: %d KiB; series per panel: %s" % (path, os.path.getsize(path) // 1024, ", ".join(counts)))


def main():
    a = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    a.add_argument("--prom", required=True)
    a.add_argument("--out", required=True)
    a.add_argument("--caption", default="")
    a.add_argument("--start", type=float, help="where the time series begin (Unix time; default 5 minutes ago)")
    a.add_argument("dashboards", nargs="+")
    args = a.parse_args()
    for spec in args.dashboards:
        path, _, rest = spec.partition(":")
        variables = dict(kv.split("=", 1) for kv in rest.split(",") if kv)
        render(path, variables, args.prom, args.out, args.caption, args.start or time.time() - 300)
    for f in FAILED:
        print("query failed:", f, file=sys.stderr)
    sys.exit(1 if FAILED else 0)


if __name__ == "__main__":
    main()
