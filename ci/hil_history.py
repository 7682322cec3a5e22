#!/usr/bin/env python3
"""The hardware-in-the-loop history as one static page: docs/hil/history.html.

usage: ci/hil_history.py [--thresholds FILE] [--out FILE] [--data FILE] [--check] [DIR...]
  DIR           dated report folders (default: every docs/hil/20*/, and a subfolder of one that
                holds its own summary.json, such as 2026-11-23-h100-calib-range/nightly)
  --thresholds  the regression thresholds the points are judged against (ci/hil-thresholds.json)
  --out         the page (docs/hil/history.html); its links to each night's report are relative
  --data        also write the figures the page plots, as JSON (the test compares the page with it)
  --check       write nothing; exit 1 when --out is not what this run would write (stale)

Each folder is one point on every plot's x axis, in the order of their names (dated). The page has
one trend plot per metric, drawn here as inline SVG (no script, no server, nothing fetched), a
table of the plotted figures beneath each plot, the points that break ci/hil-thresholds.json
marked (a red ring) and listed, which folder holds which metric (and which hold none), and a link
to each folder's report. What is read, per folder (the newest run's file where a session holds
several; the file's name is shown with its figure):
  bench.json, else runN-bench*.json: pinned, registered and staged copies at each size (% of pinned)
  nvbandwidth.json, else *nvbw-256*.json / nvbandwidth-256.json: NVIDIA's copy-engine baseline
  staged_probe --ceiling lines in *.log, else a report.md table row "H2D ceiling ...": the ceiling
  stream-{rate,flat,staged}.json (runN-stream-staged*.json): p99 latency, drops, % of pinned
  registration.json / reg-main.json: cudaHostRegister seconds per GiB at 1 GiB
  fidelity.json, else a fidelity report's "## Disagreements (N)": disagreements with the simulator
  scenarios*.json (sim, cuda), else the summary line of scenarios*.log: cases per verdict
  summary.json: the night's own verdict and regressions
Python 3 standard library only. Exit 0; 1 --check found the page stale; 2 bad usage.
"""
import argparse
import glob
import html
import json
import math
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PASSING = ("REPRODUCED", "FIXED", "PASSED")
SIZES = [1 << 20, 4 << 20, 16 << 20, 64 << 20, 256 << 20]
COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22"]


# ---- reading a folder -------------------------------------------------------------------------

def load(path):
    """The JSON in `path`, or None when it is absent or does not parse."""
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def run_number(name):
    """The run a file belongs to ("run12-bench.json" -> 12), 0 for a night's own files."""
    m = re.match(r"run(\d+)", os.path.basename(name))
    return int(m.group(1)) if m else 0


def newest(paths, prefer=()):
    """The file of the newest run among `paths` (an exact name in `prefer` first), or None."""
    for p in paths:
        if os.path.basename(p) in prefer:
            return p
    return sorted(paths, key=lambda p: (-run_number(p), os.path.basename(p)))[0] if paths else None


def size_label(size):
    return f"{size >> 20} MiB" if size >= 1 << 20 else f"{size >> 10} KiB"


def read_bench(folder, night):
    """Pinned GB/s and each path's % of pinned, at every size of the folder's bench."""
    files = [p for p in glob.glob(os.path.join(folder, "*.json"))
             if any(c.get("path") == "pinned" for c in (load(p) or {}).get("cells", []) or [])]
    path = newest(files, prefer=("bench.json",))
    if not path:
        return
    cells = load(path)["cells"]
    top = max(c["size"] for c in cells)
    night["sources"]["bench"] = os.path.basename(path)
    for c in cells:
        key = f"{c['path']} {c['direction']} {size_label(c['size'])}"
        night["bench"][key] = {"gbps": c["median_gbps"], "pct": 100 * c["ratio_to_pinned"],
                               "top": c["size"] == top}


def read_nvbandwidth(folder, night):
    files = [p for p in glob.glob(os.path.join(folder, "*.json"))
             if os.path.basename(p) == "nvbandwidth.json" or re.search(r"(nvbw|nvbandwidth)-256", p)]
    path = newest(files, prefer=("nvbandwidth.json",))
    data = load(path) if path else None
    if not data:
        return
    night["sources"]["nvbandwidth"] = os.path.basename(path)
    for t in data["nvbandwidth"].get("testcases", []):
        d = {"host_to_device_memcpy_ce": "H2D", "device_to_host_memcpy_ce": "D2H"}.get(t.get("name"))
        if d and "sum" in t:
            night["nvbandwidth"][d] = t["sum"]


# staged_probe --ceiling's line per size; the first figure is the ceiling (older probes: "(lanes
# alone)", newer: "(every rate at its better figure)").
CEILING_LOG = re.compile(r"ceiling (H2D|D2H)\s+(\d+) (KiB|MiB)\s+([\d.]+)% of pinned \((?:lanes alone|every rate)")


def read_ceiling(folder, night):
    """The staged path's ceiling per size: staged_probe --ceiling in the logs (newest run last),
    else a report.md table row "| H2D ceiling ... |" under a header of sizes."""
    logs = sorted(glob.glob(os.path.join(folder, "**", "*.log"), recursive=True),
                  key=lambda p: (run_number(p), p))
    found, src = {}, None
    for p in logs:
        for m in CEILING_LOG.finditer(open(p, errors="replace").read()):
            size = int(m.group(2)) << (20 if m.group(3) == "MiB" else 10)
            found[f"{m.group(1)} {size_label(size)}"] = float(m.group(4))
            src = os.path.basename(p)
    if not found and os.path.exists(os.path.join(folder, "report.md")):
        header = []
        for line in open(os.path.join(folder, "report.md"), errors="replace"):
            cols = [c.strip().strip("*") for c in line.strip().strip("|").split("|")]
            if len(cols) > 2 and all(re.fullmatch(r"\d+ MiB", c) for c in cols[1:]):
                header = cols[1:]
            m = re.match(r"(H2D|D2H) ceiling", cols[0]) if header else None
            if m and len(cols) - 1 == len(header):
                for size, v in zip(header, cols[1:]):
                    if re.fullmatch(r"[\d.]+", v):
                        found[f"{m.group(1)} {size}"], src = float(v), "report.md"
    night["ceiling"].update(found)
    if found:
        night["sources"]["ceiling"] = src


def read_streams(folder, night):
    for kind in ("rate", "flat", "staged"):
        files = glob.glob(os.path.join(folder, f"stream-{kind}.json")) + \
            glob.glob(os.path.join(folder, f"run*-stream-{kind}*.json"))
        path = newest(files, prefer=(f"stream-{kind}.json",))
        s = load(path) if path else None
        if not s:
            continue
        night["sources"]["stream"] = os.path.basename(path)
        night["stream"][kind] = {"p99_ms": s["latency_ms"]["p99"], "dropped": s["dropped"],
                                 "pct": 100 * s.get("ratio_to_pinned", 0)}


def read_registration(folder, night):
    path = newest([p for p in (os.path.join(folder, "registration.json"),
                               os.path.join(folder, "reg-main.json")) if os.path.exists(p)],
                  prefer=("registration.json",))
    data = load(path) if path else None
    if not data:
        return
    night["sources"]["registration"] = os.path.basename(path)
    for r in data.get("rows", []):
        if r["size"] == 1 << 30 and not r.get("skipped") and not r.get("error"):
            key = f"{r['backing']} {'touched' if r['touched'] else 'untouched'}"
            night["registration"][key] = r["register_seconds_per_gib"]


def read_fidelity(folder, night):
    fid = load(os.path.join(folder, "fidelity.json"))
    if fid and "disagreements" in fid:
        night["fidelity"] = len(fid["disagreements"])
        night["sources"]["fidelity"] = "fidelity.json"
        return
    for p in sorted(glob.glob(os.path.join(folder, "*.md")), key=lambda p: (-run_number(p), p)):
        m = re.search(r"^## Disagreements \((\d+)\)", open(p, errors="replace").read(), re.M)
        if m:
            night["fidelity"] = int(m.group(1))
            night["sources"]["fidelity"] = os.path.basename(p)
            return


SUMMARY_LINE = re.compile(r"(\d+) scenario cases: (\d+) bugs reproduced, (\d+) fixes working, "
                          r"(\d+) checks passed, (\d+) failed, (\d+) errors, (\d+) not applicable, "
                          r"(\d+) unavailable")


def verdict_counts(path):
    """Cases per verdict of a `resmem run` report (.json) or its table (.log, the last summary)."""
    if path.endswith(".json"):
        data = load(path)
        if not data or "scenarios" not in data:
            return None
        counts = {"passing": 0, "failed": 0, "n/a": 0, "unavailable": 0}
        for c in data["scenarios"]:
            v = c["verdict"]
            counts["passing" if v in PASSING else "n/a" if v == "N/A" else
                   "unavailable" if v == "UNAVAILABLE" else "failed"] += 1
        return counts
    lines = SUMMARY_LINE.findall(open(path, errors="replace").read())
    if not lines:
        return None
    n = [int(x) for x in lines[-1]]
    return {"passing": n[1] + n[2] + n[3], "failed": n[4] + n[5], "n/a": n[6], "unavailable": n[7]}


def read_scenarios(folder, night):
    names = {"sim": ["scenarios-sim.json", "scenarios-sim.log"]}
    cuda = [p for p in glob.glob(os.path.join(folder, "*.json")) + glob.glob(os.path.join(folder, "*.log"))
            if re.search(r"(^|-)(scenarios(-cuda[^/]*)?|card-cuda\d*)\.(json|log)$", os.path.basename(p))
            and "scenarios-sim" not in p and "skipped" not in p]
    for backend, paths in (("sim", [os.path.join(folder, n) for n in names["sim"]]), ("cuda", cuda)):
        paths = [p for p in paths if os.path.exists(p)]
        # the newest run; a run's JSON before its log
        for p in sorted(paths, key=lambda p: (-run_number(p), not p.endswith(".json"), p)):
            counts = verdict_counts(p)
            if counts:
                night["scenarios"][backend] = counts
                night["sources"][f"scenarios {backend}"] = os.path.basename(p)
                break


def read_night(folder, label):
    night = {"name": label, "bench": {}, "nvbandwidth": {}, "ceiling": {}, "stream": {},
             "registration": {}, "fidelity": None, "scenarios": {}, "sources": {}, "summary": None}
    for reader in (read_bench, read_nvbandwidth, read_ceiling, read_streams, read_registration,
                   read_fidelity, read_scenarios):
        reader(folder, night)
    s = load(os.path.join(folder, "summary.json"))
    if s:
        night["summary"] = {"complete": s.get("complete", True), "regressions": s.get("regressions", [])}
    for doc in ("report.md", "README.md", "findings.md"):
        if os.path.exists(os.path.join(folder, doc)):
            night["report"] = doc
            break
    return night


def find_folders(base):
    out = []
    for d in sorted(glob.glob(os.path.join(base, "20*/"))):
        out.append(d.rstrip("/"))
        out += sorted(os.path.dirname(p) for p in glob.glob(os.path.join(d, "*", "summary.json")))
    return out


# ---- the metrics: series of (night, value), and what breaks a threshold ------------------------

def metrics(nights, thr):
    """Each plot: title, unit, series {name: [value or None per night]}, threshold lines
    {series: (op, limit, rule)}, dashed series (ceilings)."""
    def series(get):
        return [get(n) for n in nights]

    def bench(key, field="pct"):
        return series(lambda n: n["bench"].get(key, {}).get(field))

    def top_of(n, path, d):
        tops = [v["pct"] for k, v in n["bench"].items() if k.startswith(f"{path} {d} ") and v["top"]]
        return tops[0] if tops else None

    plots = []
    plots.append({
        "id": "pinned", "short": "pinned",
        "title": "Pinned copies at 256 MiB: bench's cudaMallocHost row and nvbandwidth",
        "unit": "GB/s",
        "series": {"bench pinned H2D": bench("pinned H2D 256 MiB", "gbps"),
                   "bench pinned D2H": bench("pinned D2H 256 MiB", "gbps"),
                   "nvbandwidth H2D": series(lambda n: n["nvbandwidth"].get("H2D")),
                   "nvbandwidth D2H": series(lambda n: n["nvbandwidth"].get("D2H"))},
        "limits": {}})
    reg_min = 100 * thr["bench"]["registered_direct_ratio_min"]
    plots.append({
        "id": "registered", "short": "registered", "title": "Registered memory at the bench's largest size",
        "unit": "% of pinned",
        "series": {f"{p} {d}": series(lambda n, p=p, d=d: top_of(n, p, d))
                   for p in ("registered-direct", "registered-hugetlb") for d in ("H2D", "D2H")},
        "limits": {f"{p} {d}": (">=", reg_min, "bench.registered_direct_ratio_min")
                   for p in ("registered-direct", "registered-hugetlb") for d in ("H2D", "D2H")}})
    staged_min = 100 * thr["bench"]["staged_ratio_min"]
    for d in ("H2D", "D2H"):
        s, dashed = {}, {}
        for size in SIZES:
            s[f"staged {size_label(size)}"] = bench(f"staged {d} {size_label(size)}")
            dashed[f"ceiling {size_label(size)}"] = series(
                lambda n, size=size: n["ceiling"].get(f"{d} {size_label(size)}"))
        plots.append({
            "id": f"staged-{d.lower()}", "short": f"staged {d}", "title": f"Staged copies {d} per size, with the ceiling of "
            "any segment schedule (dashed) where a session measured it", "unit": "% of pinned",
            "series": {**s, **dashed}, "dashed": list(dashed),
            "limits": {"staged 256 MiB": (">=", staged_min, "bench.staged_ratio_min (largest size)")}})
    plots.append({
        "id": "stream-p99", "short": "stream p99", "title": "Stream latency p99 (16 MiB blocks)", "unit": "ms",
        "series": {k: series(lambda n, k=k: n["stream"].get(k, {}).get("p99_ms"))
                   for k in ("rate", "flat", "staged")}, "limits": {}})
    plots.append({
        "id": "stream-drops", "short": "stream drops", "title": "Stream drops", "unit": "blocks",
        "series": {k: series(lambda n, k=k: n["stream"].get(k, {}).get("dropped"))
                   for k in ("rate", "flat", "staged")},
        "limits": {k: ("<=", thr[f"stream_{k}"]["dropped_max"], f"stream_{k}.dropped_max")
                   for k in ("rate", "flat", "staged") if "dropped_max" in thr.get(f"stream_{k}", {})}})
    plots.append({
        "id": "stream-rate", "short": "stream rate", "title": "Stream flat out", "unit": "% of pinned",
        "series": {k: series(lambda n, k=k: n["stream"].get(k, {}).get("pct")) for k in ("flat", "staged")},
        "limits": {k: (">=", 100 * thr[f"stream_{k}"]["ratio_min"], f"stream_{k}.ratio_min")
                   for k in ("flat", "staged") if "ratio_min" in thr.get(f"stream_{k}", {})}})
    reg_keys = sorted({k for n in nights for k in n["registration"]})
    plots.append({
        "id": "registration", "short": "registration", "title": "Registration time at 1 GiB (cudaHostRegister)", "unit": "s/GiB",
        "series": {k: series(lambda n, k=k: n["registration"].get(k)) for k in reg_keys}, "limits": {}})
    plots.append({
        "id": "fidelity", "short": "fidelity", "title": "Fidelity: disagreements with the simulator", "unit": "count",
        "series": {"disagreements": series(lambda n: n["fidelity"])},
        "limits": {"disagreements": ("<=", thr["fidelity"]["disagreements_max"], "fidelity.disagreements_max")}})
    sc = {}
    for backend in ("sim", "cuda"):
        for v in ("passing", "failed", "n/a", "unavailable"):
            sc[f"{backend} {v}"] = series(lambda n, b=backend, v=v: n["scenarios"].get(b, {}).get(v))
    run_min = thr.get("scenarios", {}).get("run_min", 0)
    sc["cuda run"] = series(lambda n: None if "cuda" not in n["scenarios"] else
                            n["scenarios"]["cuda"]["passing"] + n["scenarios"]["cuda"]["failed"])
    plots.append({
        "id": "scenarios", "short": "scenarios", "title": "Scenario cases per verdict, simulator and GPU (passing: "
        "reproduced, fixed or passed; run: neither N/A nor unavailable)", "unit": "cases",
        "series": sc, "dashed": [k for k in sc if k.startswith("sim ")],
        "limits": {"cuda failed": ("<=", 0, "scenarios: every case that applies passes"),
                   "cuda run": (">=", run_min, "scenarios.run_min (nightlies: a whole scenarios/ run)")},
        "nightly_only": ["cuda run"]})
    return plots


def breaks(limit, v):
    op, bound, _ = limit
    return v is not None and (v < bound - 1e-9 if op == ">=" else v > bound + 1e-9)


def judged(plot, sname, night):
    """The threshold that `sname`'s point of `night` is judged against, or None."""
    if sname in plot.get("nightly_only", []) and not night["summary"]:
        return None
    return plot["limits"].get(sname)


# ---- drawing ----------------------------------------------------------------------------------

W, H, L, R, T, B = 900, 300, 60, 180, 20, 110


def fmt(v):
    return "-" if v is None else (f"{v:.0f}" if float(v).is_integer() else f"{v:.4g}" if abs(v) < 1 else f"{v:.2f}")


def nice_range(values, limits):
    vals = [v for v in values if v is not None] + [b for _, b, _ in limits]
    lo, hi = min(vals + [0]), max(vals + [1])
    step = 10 ** math.floor(math.log10((hi - lo) or 1)) / 5
    return lo, math.ceil(hi * 1.05 / step) * step


def svg_plot(plot, nights):
    names = [n["name"] for n in nights]
    all_vals = [v for s in plot["series"].values() for v in s]
    lo, hi = nice_range(all_vals, list(plot["limits"].values()))
    x = lambda i: L + (W - L - R) * (i + 0.5) / len(names)
    y = lambda v: T + (H - T - B) * (1 - (v - lo) / ((hi - lo) or 1))
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" '
           f'role="img" aria-label="{html.escape(plot["title"])}">',
           f'<rect x="{L}" y="{T}" width="{W - L - R}" height="{H - T - B}" fill="#fafafa" stroke="#ccc"/>']
    for k in range(6):
        v = lo + (hi - lo) * k / 5
        out.append(f'<line x1="{L}" x2="{W - R}" y1="{y(v):.1f}" y2="{y(v):.1f}" stroke="#e4e4e4"/>'
                   f'<text x="{L - 6}" y="{y(v) + 4:.1f}" font-size="11" text-anchor="end">{fmt(v)}</text>')
    out.append(f'<text x="14" y="{(H - B + T) / 2:.0f}" font-size="12" transform="rotate(-90 14 '
               f'{(H - B + T) / 2:.0f})" text-anchor="middle">{html.escape(plot["unit"])}</text>')
    for i, name in enumerate(names):
        out.append(f'<text x="{x(i):.1f}" y="{H - B + 12}" font-size="10" text-anchor="end" '
                   f'transform="rotate(-50 {x(i):.1f} {H - B + 12})">{html.escape(name)}</text>')
    drawn_limits = set()
    for series_name, (op, bound, rule) in plot["limits"].items():
        if (bound, op) in drawn_limits or not any(v is not None for v in plot["series"].get(series_name, [])):
            continue
        drawn_limits.add((bound, op))
        out.append(f'<line class="threshold" x1="{L}" x2="{W - R}" y1="{y(bound):.1f}" y2="{y(bound):.1f}" '
                   f'stroke="#d62728" stroke-dasharray="6 3"/><text x="{W - R - 4}" y="{y(bound) - 4:.1f}" '
                   f'font-size="10" fill="#d62728" text-anchor="end">{op} {fmt(bound)} ({html.escape(rule)})</text>')
    legend_y = T
    # a dashed series (a ceiling, the simulator) takes the colour of the solid one it goes with:
    # the same name after the first word ("ceiling 1 MiB" with "staged 1 MiB")
    solid = [n for n in plot["series"] if n not in plot.get("dashed", [])]
    tail = lambda n: n.split(" ", 1)[-1]
    for sname, values in plot["series"].items():
        if all(v is None for v in values):
            continue
        dashed = sname in plot.get("dashed", [])
        mate = [k for k, n in enumerate(solid) if tail(n) == tail(sname)] if dashed else [solid.index(sname)]
        color = COLORS[(mate[0] if mate else len(solid) + list(plot["series"]).index(sname)) % len(COLORS)]
        pts = [(x(i), y(v)) for i, v in enumerate(values) if v is not None]
        dash = ' stroke-dasharray="4 3"' if dashed else ""
        if len(pts) > 1:
            coords = " ".join(f"{a:.1f},{b:.1f}" for a, b in pts)
            out.append(f'<polyline fill="none" stroke="{color}" stroke-width="1.5"{dash} points="{coords}"/>')
        for i, v in enumerate(values):
            if v is None:
                continue
            limit = judged(plot, sname, nights[i])
            bad = limit is not None and breaks(limit, v)
            out.append(f'<circle class="point{" regression" if bad else ""}" cx="{x(i):.1f}" cy="{y(v):.1f}" '
                       f'r="{3.5 if not dashed else 2.5}" fill="{"white" if dashed else color}" stroke="{color}" '
                       f'data-night="{html.escape(names[i])}" data-series="{html.escape(sname)}" '
                       f'data-value="{v!r}"><title>{html.escape(names[i])}: {html.escape(sname)} {fmt(v)} '
                       f'{html.escape(plot["unit"])}{" - REGRESSION" if bad else ""}</title></circle>')
            if bad:
                out.append(f'<circle cx="{x(i):.1f}" cy="{y(v):.1f}" r="8" fill="none" stroke="#d62728" stroke-width="2"/>')
        out.append(f'<line x1="{W - R + 10}" x2="{W - R + 30}" y1="{legend_y + 6}" y2="{legend_y + 6}" '
                   f'stroke="{color}" stroke-width="2"{dash}/>'
                   f'<text x="{W - R + 34}" y="{legend_y + 10}" font-size="11">{html.escape(sname)}</text>')
        legend_y += 15
    out.append("</svg>")
    return "\n".join(out)


def table(plot, nights):
    cols = [s for s, vals in plot["series"].items() if any(v is not None for v in vals)]
    rows = []
    for i, n in enumerate(nights):
        cells = [plot["series"][c][i] for c in cols]
        if all(v is None for v in cells):
            continue
        tds = []
        for c, v in zip(cols, cells):
            limit = judged(plot, c, n)
            bad = limit is not None and breaks(limit, v)
            tds.append(f'<td class="{"regression" if bad else ""}" data-series="{html.escape(c)}" '
                       f'data-value="{"" if v is None else repr(v)}">{fmt(v)}</td>')
        rows.append(f'<tr><th><a href="{html.escape(n["link"])}">{html.escape(n["name"])}</a></th>{"".join(tds)}</tr>')
    head = "".join(f"<th>{html.escape(c)}</th>" for c in cols)
    return (f'<details><summary>the figures plotted ({len(rows)} runs)</summary><table class="figures">'
            f'<tr><th>night</th>{head}</tr>{"".join(rows)}</table></details>')


def regressions(plots, nights):
    out = []
    for p in plots:
        for sname in p["limits"]:
            for i, v in enumerate(p["series"].get(sname, [])):
                limit = judged(p, sname, nights[i])
                if limit is not None and breaks(limit, v):
                    out.append((nights[i]["name"], p["short"], sname, v, limit, nights[i]["link"]))
    return sorted(out)


CSS = """body{font-family:DejaVu Sans,Arial,sans-serif;margin:24px;color:#222;max-width:1200px}
h1{font-size:22px}h2{font-size:17px;margin-top:28px}table{border-collapse:collapse;font-size:12px;margin:8px 0}
td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}th:first-child{text-align:left}
td.regression{background:#fdd;color:#a00;font-weight:bold}.absent{color:#888}.note{font-size:13px;color:#444}
figure{margin:18px 0}figcaption{font-weight:bold;font-size:14px;margin-bottom:4px}
details{font-size:12px}summary{cursor:pointer;color:#555}"""


def coverage(nights):
    groups = [("bench", "bench"), ("nvbandwidth", "nvbandwidth"), ("ceiling", "ceiling"),
              ("stream", "stream"), ("registration", "registration"), ("fidelity", "fidelity"),
              ("scenarios sim", "scenarios sim"), ("scenarios cuda", "scenarios cuda")]
    rows = []
    for n in nights:
        tds = "".join(f'<td class="{"" if k in n["sources"] else "absent"}">{html.escape(n["sources"].get(k, "-"))}</td>'
                      for _, k in groups)
        s = n["summary"]
        verdict = "-" if not s else ("INCOMPLETE " if not s["complete"] else "") + (
            f'REGRESSION ({len(s["regressions"])})' if s["regressions"] else "PASS")
        rows.append(f'<tr><th><a href="{html.escape(n["link"])}">{html.escape(n["name"])}</a></th>'
                    f'<td>{html.escape(verdict)}</td>{tds}</tr>')
    head = "".join(f"<th>{g}</th>" for g, _ in groups)
    absent = [g for g, k in groups if not any(k in n["sources"] for n in nights)]
    return (f'<table id="nights"><tr><th>night (its report)</th><th>nightly verdict</th>{head}</tr>'
            f'{"".join(rows)}</table>'), absent


def render(nights, plots, thr_path):
    regs = regressions(plots, nights)
    cov, absent = coverage(nights)
    body = [f"<h1>resmem hardware-in-the-loop history: {len(nights)} runs, "
            f"{html.escape(nights[0]['name'])} to {html.escape(nights[-1]['name'])}</h1>",
            '<p class="note">Built by <code>ci/hil_history.py</code> from the dated folders of docs/hil/ '
            f'(no server, nothing fetched). Points are judged against <code>{html.escape(thr_path)}</code>: '
            'a red ring marks a point past its threshold (dashed red line); '
            f'<a href="#regressions">{len(regs)} regressions</a> in all. A point\'s value is in its tooltip '
            'and in the figures under its plot; <a href="#nights">each run</a> links to its report and '
            'names the files each figure came from.'
            + (f' Absent from every run: {html.escape(", ".join(absent))}.' if absent else "") + "</p>"]
    for p in plots:
        empty = sum(all(s[i] is None for s in p["series"].values()) for i in range(len(nights)))
        body.append(f'<figure id="{p["id"]}" data-metric="{p["id"]}"><figcaption>{html.escape(p["title"])} '
                    f'({html.escape(p["unit"])}); absent in {empty} of {len(nights)} runs</figcaption>'
                    f'{svg_plot(p, nights)}{table(p, nights)}</figure>')
    body.append(f'<h2>Regressions against the thresholds ({len(regs)})</h2><table id="regressions">'
                '<tr><th>run</th><th>metric</th><th>series</th><th>value</th><th>threshold</th></tr>')
    for name, short, sname, v, (op, bound, rule), link in regs:
        body.append(f'<tr><th><a href="{html.escape(link)}">{html.escape(name)}</a></th><td>{html.escape(short)}</td>'
                    f'<td>{html.escape(sname)}</td><td class="regression">{fmt(v)}</td>'
                    f'<td>{op} {fmt(bound)} ({html.escape(rule)})</td></tr>')
    body.append('</table><h2>What each run holds</h2><p class="note">The file each figure came from; '
                '"-": the run holds none. The nightly verdict is the run\'s own summary.json.</p>' + cov)
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<title>resmem HIL history</title><style>" + CSS + "</style></head><body>\n"
            + "\n".join(body) + "\n</body></html>\n")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dirs", nargs="*")
    ap.add_argument("--thresholds", default=os.path.join(ROOT, "ci/hil-thresholds.json"))
    ap.add_argument("--out", default=os.path.join(ROOT, "docs/hil/history.html"))
    ap.add_argument("--data")
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args(argv)
    thr = load(a.thresholds)
    if thr is None:
        print(f"hil_history: cannot read the thresholds {a.thresholds} (--thresholds FILE)", file=sys.stderr)
        return 2
    folders = a.dirs or find_folders(os.path.join(ROOT, "docs/hil"))
    missing = [d for d in folders if not os.path.isdir(d)]
    if missing or not folders:
        print(f"hil_history: no such report folder: {', '.join(missing) or '(none given)'}", file=sys.stderr)
        return 2
    out_dir = os.path.dirname(os.path.abspath(a.out))
    nights = []
    for d in folders:
        d = d.rstrip("/")
        parent = os.path.basename(os.path.dirname(d))
        label = f"{parent}/{os.path.basename(d)}" if re.match(r"20\d\d-", parent) else os.path.basename(d)
        n = read_night(d, label)
        n["link"] = os.path.relpath(os.path.join(d, n.get("report", "")), out_dir).replace(os.sep, "/")
        nights.append(n)
    nights.sort(key=lambda n: n["name"])
    plots = metrics(nights, thr)
    thr_shown = os.path.relpath(a.thresholds, ROOT) if a.thresholds.startswith(ROOT) else a.thresholds
    page = render(nights, plots, thr_shown)
    if a.check:
        current = open(a.out).read() if os.path.exists(a.out) else ""
        if current != page:
            print(f"hil_history: {a.out} is stale: run python3 ci/hil_history.py and commit it", file=sys.stderr)
            return 1
        print(f"hil_history: {a.out} is current")
        return 0
    with open(a.out, "w") as f:
        f.write(page)
    if a.data:
        with open(a.data, "w") as f:
            json.dump({"nights": nights, "plots": plots}, f, indent=1)
    print(f"hil_history: {a.out}: {len(nights)} runs, {len(regressions(plots, nights))} regressions marked")
    return 0


if __name__ == "__main__":
    sys.exit(main())
