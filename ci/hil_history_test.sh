#!/usr/bin/env bash
# ci/hil_history.py's page of the nightly history (docs/hil/history.html): current against the
# folders of docs/hil/, and, rendered in headless Chromium, not blank and holding the figures of
# the JSON it was built from: every plotted point with its value, and figures read here straight
# from the reports' own JSON (not through the script) at the points they belong to.
# Without chromium the render checks print "skipped: no chromium" (ci/setup.sh installs it).
set -u
T=${TEST_TMPDIR:-$(mktemp -d)}
source ci/checks.sh

if python3 ci/hil_history.py --check; then ok "docs/hil/history.html is current"
else bad "docs/hil/history.html is stale: run python3 ci/hil_history.py and commit it"; fi
python3 ci/hil_history.py --out "$T/history.html" --data "$T/data.json" > /dev/null ||
  bad "hil_history.py failed"
# Bad input: a folder that does not exist is named, exit 2.
out=$(python3 ci/hil_history.py --out "$T/x.html" docs/hil/no-such-night 2>&1); rc=$?
if [[ $rc == 2 ]] && grep -q "no such report folder: docs/hil/no-such-night" <<<"$out"; then
  ok "a missing folder is refused by name"
else bad "missing folder: rc $rc: $out"; fi

CHROMIUM=$(command -v chromium || command -v chromium-browser || true)
if [[ -z $CHROMIUM ]]; then
  echo "skipped: no chromium (apt-get install chromium; ci/setup.sh installs it): the page was not rendered"
  echo "hil_history_test: $fails failed"
  exit $((fails > 0))
fi
export HOME=$T  # chromium writes its profile under HOME
flags=(--headless --no-sandbox --disable-gpu --hide-scrollbars --no-first-run --user-data-dir="$T/profile")
timeout 120 "$CHROMIUM" "${flags[@]}" --window-size=1000,2400 --screenshot="$T/shot.png" \
  "file://$T/history.html" > "$T/shot.log" 2>&1 || { cat "$T/shot.log"; bad "chromium --screenshot failed"; }
timeout 120 "$CHROMIUM" "${flags[@]}" --dump-dom "file://$T/history.html" > "$T/dom.html" 2> "$T/dom.log" ||
  { cat "$T/dom.log"; bad "chromium --dump-dom failed"; }
python3 - "$T/shot.png" "$T/dom.html" "$T/data.json" <<'PY' || fails=$((fails + 1))
import json, os, struct, sys, zlib
from html.parser import HTMLParser

shot, dom_path, data_path = sys.argv[1:4]
fails = 0
def expect(what, cond):
    global fails
    print(("ok   " if cond else "FAIL ") + what)
    fails += not cond

def png_gray(path):
    """The PNG's pixels as gray levels (8-bit RGB or RGBA, every filter type)."""
    raw = open(path, "rb").read()
    assert raw[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, w = 8, b"", 0
    while pos < len(raw):
        n, kind = struct.unpack(">I4s", raw[pos:pos + 8])
        body = raw[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, color = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and color in (2, 6), f"PNG depth {depth} color {color}"
            bpp = 3 if color == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    data, stride, prev, gray = zlib.decompress(idat), w * bpp, bytearray(w * bpp), []
    for y in range(h):
        f, line = data[y * (stride + 1)], bytearray(data[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            p = a + b - c
            pred = (0, a, b, (a + b) // 2,
                    a if abs(p - a) <= abs(p - b) and abs(p - a) <= abs(p - c) else b if abs(p - b) <= abs(p - c) else c)[f]
            line[i] = (line[i] + pred) & 0xFF
        gray += [(line[i] + line[i + 1] + line[i + 2]) // 3 for i in range(0, stride, bpp * 4)]
        prev = line
    return w, h, gray

w, h, gray = png_gray(shot)
mean = sum(gray) / len(gray)
var = sum((g - mean) ** 2 for g in gray) / len(gray)
dark = sum(g < 128 for g in gray) / len(gray)
expect(f"screenshot {w}x{h} is not blank (gray variance {var:.0f}, {100 * dark:.1f}% dark pixels)",
       var > 100 and 0.005 < dark < 0.5)

class Dom(HTMLParser):
    def __init__(self):
        super().__init__()
        self.points, self.figures, self.cells = [], [], []
    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "circle" and "point" in a.get("class", ""):
            self.points.append((a["data-night"], a["data-series"], float(a["data-value"]), "regression" in a["class"]))
        if tag == "figure":
            self.figures.append(a.get("data-metric"))
        if tag == "td" and a.get("data-value"):
            self.cells.append((a["data-series"], float(a["data-value"])))
dom = Dom()
dom.feed(open(dom_path).read())
data = json.load(open(data_path))
names = [n["name"] for n in data["nights"]]
want = [(names[i], s, float(v)) for p in data["plots"] for s, vals in p["series"].items()
        for i, v in enumerate(vals) if v is not None]
have = {(n, s, v) for n, s, v, _ in dom.points}
expect(f"one figure per metric ({len(data['plots'])}): {', '.join(dom.figures)}",
       dom.figures == [p["id"] for p in data["plots"]])
expect(f"every figure of the JSON is a point in the DOM ({len(want)} of {len(dom.points)} points)",
       set(want) <= have and len(dom.points) == len(want))
expect("every figure of the JSON is in a table of the DOM", len(dom.cells) >= len(set((s, v) for _, s, v in want)) // 2)

# Figures read here from the reports' own JSON, found at their points.
hil = os.path.join("docs", "hil")
def j(*p): return json.load(open(os.path.join(hil, *p)))
def point(night, series):
    got = [(v, r) for n, s, v, r in dom.points if n == night and s == series]
    return got[0] if got else (None, None)
def near(a, b): return a is not None and abs(a - b) < 1e-9 * max(1, abs(b))
N = "2026-11-28-h200-nightly"
bench = j(N, "bench.json")["cells"]
pinned = [c["median_gbps"] for c in bench if c["path"] == "pinned" and c["direction"] == "H2D" and c["size"] == 256 << 20][0]
expect(f"{N} bench pinned H2D 256 MiB {pinned:.3f} GB/s", near(point(N, "bench pinned H2D")[0], pinned))
nv = [t["sum"] for t in j(N, "nvbandwidth.json")["nvbandwidth"]["testcases"] if t["name"] == "device_to_host_memcpy_ce"][0]
expect(f"{N} nvbandwidth D2H {nv:.3f} GB/s", near(point(N, "nvbandwidth D2H")[0], nv))
staged = [100 * c["ratio_to_pinned"] for c in bench if c["path"] == "staged" and c["direction"] == "H2D" and c["size"] == 256 << 20][0]
v, regression = point(N, "staged 256 MiB")
expect(f"{N} staged H2D 256 MiB {staged:.1f}% of pinned, marked a regression (min 90%)", near(v, staged) and regression)
p99 = j(N, "stream-flat.json")["latency_ms"]["p99"]
expect(f"{N} stream flat p99 {p99:.3f} ms", near(point(N, "flat")[0], p99))
reg = [r["register_seconds_per_gib"] for r in j(N, "registration.json")["rows"]
       if r["backing"] == "anon" and not r["touched"] and r["size"] == 1 << 30][0]
expect(f"{N} registration anon untouched {reg:.3f} s/GiB", near(point(N, "anon untouched")[0], reg))
S = "2026-11-21-h100-staged"
dis = len(j(S, "fidelity.json")["disagreements"])
v, regression = point(S, "disagreements")
expect(f"{S} fidelity {dis} disagreements, marked a regression (max 0)", near(v, dis) and regression)
C = "2026-11-23-h100-scenarios-merged"
sim = sum(c["verdict"] in ("REPRODUCED", "FIXED", "PASSED") for c in j(C, "scenarios-sim.json")["scenarios"])
cuda = sum(c["verdict"] in ("REPRODUCED", "FIXED", "PASSED") for c in j(C, "scenarios.json")["scenarios"])
expect(f"{C} scenario cases passing: sim {sim}, cuda {cuda}",
       near(point(C, "sim passing")[0], sim) and near(point(C, "cuda passing")[0], cuda))
sys.exit(1 if fails else 0)
PY
finish "hil_history_test"
