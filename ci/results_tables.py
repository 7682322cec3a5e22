#!/usr/bin/env python3
"""Rewrites the generated tables of docs/results.md from the JSON kept under docs/hil/.

Each generated section sits between `<!-- results:begin NAME -->` and `<!-- results:end NAME -->`;
everything outside the markers is written by hand and left alone. Running it twice changes
nothing. Python 3 standard library only.

usage: python3 ci/results_tables.py            rewrite the sections (from the repo root)
       python3 ci/results_tables.py --check    exit 1, with a diff, when a section is stale
options: --root DIR (the repo root; default: this script's), --page FILE (default
         ROOT/docs/results.md)
Tested by //ci:results_tables_test.
"""
import argparse
import difflib
import glob
import json
import os
import re
import sys

HIL = 'docs/hil'
MIB = 1 << 20
GIB = 1 << 30


# ---- helpers ----

def load(root, rel):
    with open(os.path.join(root, rel)) as f:
        return json.load(f)


def files(root, pattern):
    """Paths (relative to root) matching a glob under docs/hil, sorted."""
    found = glob.glob(os.path.join(root, HIL, pattern), recursive=True)
    rels = set(os.path.relpath(p, root) for p in found)
    return sorted(rels, key=lambda r: (folder_of(r), natural(in_folder(r))))


def natural(s):
    return [int(t) if t.isdigit() else t for t in re.split(r'(\d+)', s)]


def folder_of(rel):
    """The dated folder under docs/hil a file belongs to."""
    return rel.split('/')[2]


def link(root, folder):
    """A link from docs/results.md to a folder's report."""
    for name in ('report.md', 'README.md', 'findings.md'):
        if os.path.exists(os.path.join(root, HIL, folder, name)):
            return '[%s](hil/%s/%s)' % (folder, folder, name)
    return '[%s](hil/%s/)' % (folder, folder)


def in_folder(rel):
    """A file's path inside its dated folder."""
    return '/'.join(rel.split('/')[3:])


def machine(folder):
    m = re.match(r'\d{4}-\d\d-\d\d-(h\d+)', folder)
    return m.group(1).upper() if m else '?'


def size_label(n):
    if n >= GIB and n % GIB == 0:
        return '%d GiB' % (n // GIB)
    if n >= MIB and n % MIB == 0:
        return '%d MiB' % (n // MIB)
    return '%d KiB' % (n // 1024)


def span(values, fmt='%.1f'):
    """'a' or 'a-b' over the values, as printed."""
    lo, hi = fmt % min(values), fmt % max(values)
    return lo if lo == hi else '%s-%s' % (lo, hi)


def table(header, rows):
    out = ['| ' + ' | '.join(header) + ' |', '|' + '---|' * len(header)]
    out += ['| ' + ' | '.join(str(c) for c in r) + ' |' for r in rows]
    return out


def staged_cells(doc):
    return [c for c in doc['cells'] if c['path'] == 'staged']


def staged_by_size(docs, direction, key):
    """{size: [100 * cell[key], one per doc]} over the docs' staged cells of one direction."""
    values = {}
    for d in docs:
        for c in staged_cells(d):
            if c['direction'] == direction:
                values.setdefault(c['size'], []).append(100 * c[key])
    return values


# ---- sections ----

def section_h200_staged(root):
    """H200 staged13 run 1: staged single copies in three alternated rounds."""
    folder = '2026-11-28-h200-staged13'
    configs = [('default (SMs host to device up to 16 MiB)', 'run1-r*-default.json'),
               ('DMAs (`--sm-copy-upto 0`)', 'run1-r*-smcopyupto0.json')]
    sizes = set()
    rows = []
    pinned = {}
    rounds = {}
    for label, pattern in configs:
        docs = [load(root, f) for f in files(root, folder + '/' + pattern)]
        rounds[label] = len(docs)
        for direction in ('H2D', 'D2H'):
            for d in docs:
                for c in d['cells']:
                    if c['direction'] == direction and c['path'] == 'pinned':
                        sizes.add(c['size'])
                        pinned.setdefault((direction, c['size']), []).append(c['median_gbps'])
            rows.append((direction, label, len(docs), staged_by_size(docs, direction, 'ratio_to_pinned')))
    sizes = sorted(sizes)
    header = ['staged, % of pinned', 'rounds'] + [size_label(s) for s in sizes]
    body = [['%s, %s' % (d, l), n] + [span(r[s]) if s in r else '' for s in sizes] for d, l, n, r in rows]
    for direction in ('H2D', 'D2H'):
        body.append(['pinned %s, GB/s' % direction, sum(rounds.values())] +
                    [span(pinned[(direction, s)], '%.2f') for s in sizes])
    ref = load(root, files(root, folder + '/run1-r1-default.json')[0]).get('reference') or {}
    out = table(header, body)
    out.append('')
    out.append('From `run1-r*-default.json` and `run1-r*-smcopyupto0.json` in %s (H200, 2026-11-28, '
               'run 1): ranges over the rounds kept as JSON.' % link(root, folder))
    if ref:
        out.append('Round 1 checked the pinned row against %s at %s: H2D %.2f, D2H %.2f GB/s.' % (
            ref['source'].split(' (')[0], size_label(ref['size']), ref['gbps']['H2D'], ref['gbps']['D2H']))
    return out


def ceiling_gbps(doc, direction, size):
    """The staged ceiling a bench run measured, in GB/s (its pinned median times the ratio)."""
    pinned = [c['median_gbps'] for c in doc['cells']
              if c['path'] == 'pinned' and c['direction'] == direction and c['size'] == size]
    ratio = [c['ratio_to_pinned'] for c in doc['ceiling']
             if c['direction'] == direction and c['size'] == size]
    return pinned[0] * ratio[0] if pinned and ratio else None


def ceiling_section(root, folder, run, configs, when):
    """Staged single copies as % of the ceiling the same bench run measured, per config over the
    alternated rounds of `run` in `folder` (runN/r*-NAME.json); the staged stream
    (runN/stream-r*-NAME.json) against the 256 MiB ceiling of the default bench round of the
    same number."""
    sizes, rows, ceiling = set(), [], {}
    for label, name in configs:
        docs = [load(root, f) for f in files(root, '%s/%s/r*-%s.json' % (folder, run, name))]
        for direction in ('H2D', 'D2H'):
            shares = staged_by_size(docs, direction, 'ratio_to_ceiling')
            sizes.update(shares)
            for d in docs:
                for c in d['ceiling']:
                    if c['direction'] == direction:
                        ceiling.setdefault((direction, c['size']), []).append(100 * c['ratio_to_pinned'])
            rows.append(('%s staged, %s' % (direction, label), len(docs), shares))
    sizes = sorted(sizes)
    header = ['% of the staged ceiling', 'rounds'] + [size_label(s) for s in sizes]
    body = []
    for direction in ('H2D', 'D2H'):
        body.append(['%s ceiling, %% of pinned' % direction, len(ceiling[(direction, sizes[0])])] +
                    [span(ceiling[(direction, s)]) for s in sizes])
    body += [[l, n] + [span(r[s]) if s in r else '' for s in sizes] for l, n, r in rows]
    out = table(header, body)
    out.append('')
    streams = []  # a line per config that has stream runs
    for label, name in configs:
        shares = []
        for f in files(root, '%s/%s/stream-r*-%s.json' % (folder, run, name)):
            rnd = os.path.basename(f).split('-')[1]
            bench = load(root, '%s/%s/%s/%s-default.json' % (HIL, folder, run, rnd))
            shares.append(100 * load(root, f)['gbps'] / ceiling_gbps(bench, 'H2D', 256 * MIB))
        if shares:
            streams.append('Staged stream, 16 MiB blocks flat out, %s: %s%% of the 256 MiB H2D '
                           'ceiling (%d rounds).' % (label, span(shares), len(shares)))
    names = ', '.join('`%s/r*-%s.json`' % (run, name) for _, name in configs)
    if streams:
        out += streams + ['']
        names += ' and `%s/stream-*.json`' % run
    out.append('From %s in %s (H200, %s): ranges over the rounds.' % (
        names, link(root, folder), when))
    return out


def section_h200_ceiling(root):
    """H200 h2d-ring run 4: the host-to-device defaults against the old ones."""
    return ceiling_section(root, '2026-11-29-h200-h2d-ring', 'run4',
                           [('default (4 MiB H2D segments, SMs H2D up to 64 MiB)', 'default'),
                            ('old (`--chunk-h2d 0 --sm-copy-upto 16M`)', 'old')],
                           '2026-11-29, run 4')


def section_h200_ceiling_ring(root):
    """H200 shared-words run 9: the rotating device-to-host ring against the fixed one."""
    return ceiling_section(root, '2026-11-29-h200-shared-words', 'run9',
                           [('default (rotating D2H ring, no drain demote, plan from 1 MiB)',
                             'default'),
                            ('old D2H (`--no-rotate-ring --demote-drain-upto 2M '
                             '--plan-d2h-from 64M`)', 'old')],
                           '2026-11-29, run 9')


LANE_WAKE = '2026-11-29-h200-lane-wake'


def spin_dma60(spin_us):
    """The lane-wake runs' candidate: lanes spinning spin_us, the DMAs from 16 MiB on the plan
    from a 60 GB/s fill."""
    return ('`--spin-us %d --sm-copy-upto 16M --costs 1,88,60,71.4,91.3,3.2,52.7,52.7,2.5`'
            % spin_us)


def section_h200_cold_cells(root):
    """H200 lane-wake run 6: bench's cells as they come, the defaults against the lanes' spin."""
    return ceiling_section(root, LANE_WAKE, 'run6',
                           [('default', 'default'), ('`--spin-us 200000`', 'spin'),
                            (spin_dma60(200000), 'spin16')],
                           '2026-11-29, run 6')


def section_h200_warm_cells(root):
    """H200 lane-wake run 4: every cell after an untimed copy of its own (--warm-cells)."""
    return ceiling_section(root, LANE_WAKE, 'run4',
                           [('default, `--warm-cells`', 'default'),
                            (spin_dma60(50000) + ', `--warm-cells`', 'sm16')],
                           '2026-11-29, run 4')


def section_h100_bench(root):
    """H100 perf bench of 2026-11-23: every path, interleaved, 7 passes."""
    folder = '2026-11-23-h100-perf'
    rel = folder + '/bench.json'
    doc = load(root, HIL + '/' + rel)
    sizes = sorted({c['size'] for c in doc['cells']})
    paths = []
    for c in doc['cells']:
        if c['path'] not in paths:
            paths.append(c['path'])
    cell = {(c['path'], c['direction'], c['size']): c for c in doc['cells']}
    body = []
    for path in paths:
        for direction in ('H2D', 'D2H'):
            row = ['%s %s' % (path, direction)]
            for s in sizes:
                c = cell.get((path, direction, s))
                if c is None:
                    row.append('')
                elif path == 'pinned':
                    row.append('%.2f GB/s' % c['median_gbps'])
                else:
                    row.append('%.1f%%' % (100 * c['ratio_to_pinned']))
            body.append(row)
    out = table(['path'] + [size_label(s) for s in sizes], body)
    out.append('')
    ref = doc.get('reference') or {}
    out.append('From `bench.json` in %s (H100, 2026-11-23, run 1): medians of 7 interleaved passes, '
               '%% of pinned in the same run%s. The staged rows are that call\'s, before the staged '
               'work of the sessions after it (section "The staged path, session by session").' % (
                   link(root, folder),
                   '; pinned checked against %s (%s: H2D %.2f, D2H %.2f GB/s)' % (
                       ref['source'].split(' (')[0], size_label(ref['size']), ref['gbps']['H2D'],
                       ref['gbps']['D2H']) if ref else ''))
    return out


def nvbandwidth_size(rel):
    name = os.path.basename(rel)
    m = re.search(r'-(\d+)(-after)?\.json$', name)
    if m:
        return int(m.group(1)), bool(m.group(2))
    return 256, False  # the nightly's nvbandwidth.json: ci/hil-nightly.sh passes -b 256


def section_nvbandwidth(root):
    body = []
    for rel in files(root, '**/*.json'):
        name = os.path.basename(rel)
        if not (name.startswith('nvbandwidth') or 'nvbw' in name):
            continue
        doc = load(root, rel)['nvbandwidth']
        sums = {t['name']: t.get('sum') for t in doc['testcases']}
        size, after = nvbandwidth_size(rel)
        gpu = ', '.join(re.sub(r'^\d+: (NVIDIA )?| \(.*$', '', g) for g in doc.get('GPU Device list', []))
        body.append([link(root, folder_of(rel)), '`%s`%s' % (in_folder(rel), ' (after bench)' if after else ''),
                     gpu, doc.get('version', ''), '%d MiB' % size,
                     '%.2f' % sums['host_to_device_memcpy_ce'], '%.2f' % sums['device_to_host_memcpy_ce']])
    out = table(['run', 'file', 'GPU', 'version', 'buffer', 'H2D GB/s', 'D2H GB/s'], body)
    out.append('')
    out.append('Copy engine, pinned memory (`-t host_to_device_memcpy_ce -t device_to_host_memcpy_ce '
               '-i 7`); the buffer size is the `-b` of the file\'s name (the nightly\'s `nvbandwidth.json`: '
               '256 MiB, ci/hil-nightly.sh). %d files.' % len(body))
    return out


def check_figure(checks, pattern):
    for c in checks:
        m = re.search(pattern, c)
        if m:
            return m.group(1)
    return ''


def section_nightly(root):
    body = []
    for rel in files(root, '**/summary.json'):
        doc = load(root, rel)
        folder = folder_of(rel)
        checks = doc.get('checks') or []
        head = doc.get('bench_headline') or ''
        pinned = re.findall(r'pinned ([\d.]+) GB/s', head)
        memfd = re.findall(r'registered memfd ([\d.]+)%', head)
        staged = re.findall(r'staged ([\d.]+)% \(target', head)
        streams = {k: v for k, v in (doc.get('streams') or {}).items() if v}
        rate = streams.get('rate')
        fid = check_figure(checks, r'fidelity: (\d+) disagreements')
        ran = [s.split('=')[0] for s in doc.get('steps', []) if not s.endswith('=skipped')]
        scen = check_figure(checks, r'scenarios on cuda: (\d+ of the \d+) cases that apply pass')
        regs = len(doc.get('regressions', []))
        body.append([
            link(root, folder) + ('' if in_folder(rel) == 'summary.json' else ' (`%s`)' % in_folder(rel)),
            machine(folder),
            'PASS' if regs == 0 else 'REGRESSION (%d)' % regs,
            ', '.join(ran),
            ' / '.join(pinned),
            ' / '.join(memfd),
            ' / '.join(staged),
            '%.1f%%' % (100 * streams['flat']['ratio_to_pinned']) if 'flat' in streams else '',
            '%.1f%%' % (100 * streams['staged']['ratio_to_pinned']) if 'staged' in streams else '',
            '%d dropped, p99 %.2f ms' % (rate['dropped'], rate['latency_ms']['p99']) if rate else '',
            scen,
            fid,
        ])
    out = table(['nightly', 'GPU', 'verdict', 'steps that ran', 'pinned GB/s H2D / D2H',
                 'registered memfd, % of pinned', 'staged, % of pinned', 'stream flat out',
                 'stream staged', 'stream at 10 Hz', 'scenarios on cuda (pass)', 'fidelity disagreements'],
                body)
    out.append('')
    out.append('From each run\'s `summary.json` (ci/hil-nightly.sh); 256 MiB copies, H2D / D2H; streams '
               'of 16 MiB blocks. A verdict counts the run\'s regressions against ci/hil-thresholds.json '
               'as it was that day.')
    return out


def short_path(path):
    m = re.match(r'took ([\w-]+)', path or '')
    return m.group(1) if m else (path or '')


def section_streams(root):
    body = []
    for rel in files(root, '**/*stream*.json'):
        doc = load(root, rel)
        if 'block_bytes' not in doc:
            continue
        lat = doc.get('latency_ms', {})
        body.append([link(root, folder_of(rel)), '`%s`' % in_folder(rel), machine(folder_of(rel)),
                     '%d x %s' % (doc['blocks'], size_label(doc['block_bytes'])),
                     'flat out' if not doc.get('rate_hz') else '%g Hz' % doc['rate_hz'],
                     '%s (%s)' % (short_path(doc.get('path')), doc.get('host_kind', '')),
                     '%.2f' % doc['gbps'], '%.1f%%' % (100 * doc['ratio_to_pinned']),
                     '%d / %d / %d' % (doc['dropped'], doc['corrupt'], doc.get('failed', 0)),
                     '%.2f / %.2f' % (lat.get('p50', 0), lat.get('p99', 0))])
    out = table(['run', 'file', 'GPU', 'blocks', 'rate', 'path (host memory)', 'GB/s', '% of pinned',
                 'dropped / corrupt / failed', 'latency p50 / p99 ms'], body)
    out.append('')
    out.append('`resmem stream --backend cuda` (engine/stream): every block checked on arrival. %d files.'
               % len(body))
    return out


def section_registration(root):
    rows = {}
    for rel in files(root, '**/registration.json') + files(root, '**/reg-*.json'):
        doc = load(root, rel)
        for r in doc.get('rows', []):
            if r.get('error') or r.get('skipped') or r.get('calls', 1) == 0:
                continue
            chunk = r.get('chunk', 0)
            key = (folder_of(rel), r['backing'], 'touched' if r['touched'] else 'untouched',
                   'in pieces of %s' % size_label(chunk) if chunk else 'one call')
            rows.setdefault(key, []).append((r['size'], r['register_seconds_per_gib'], r['register_seconds']))
    order = ['anon', 'memfd', 'anon-thp', 'hugetlb-2m', 'hugetlb-1g']
    body = []
    for key in sorted(rows, key=lambda k: (k[0], order.index(k[1]) if k[1] in order else 9, k[1], k[2] != 'untouched', k[3] != 'one call', k[3])):
        folder, backing, state, calls = key
        vals = rows[key]
        sizes = sorted({s for s, _, _ in vals})
        largest = max(vals)
        body.append([link(root, folder), machine(folder), '`%s`' % backing, state, calls,
                     ', '.join(size_label(s) for s in sizes),
                     span([p for _, p, _ in vals], '%.3f'),
                     '%.1f s (%s)' % (largest[2], size_label(largest[0]))])
    out = table(['run', 'GPU', 'backing', 'state', 'calls', 'sizes', 's per GiB', 'largest'], body)
    out.append('')
    out.append('`resmem bench --registration` (`registration.json` of a nightly, `reg-*.json` of a '
               'perf run): cudaHostRegister time per GiB; touched: the memory was written first (the '
               'touch is not counted). 4 KiB pages: anon, memfd; 2 MiB: anon-thp, hugetlb-2m; 1 GiB: '
               'hugetlb-1g.')
    return out


def section_calibration(root):
    folder = '2026-11-23-h100-calib-range'
    doc = load(root, '%s/%s/fidelity.json' % (HIL, folder))
    body = []
    for b in doc['bandwidth']:
        body.append([b['class'], b['direction'], size_label(b['size']),
                     '%.2f-%.2f' % (b['min_gbps'], b['max_gbps']), '%.2f' % b['median_gbps'],
                     '%.2f' % b['sim_gbps'], 'yes' if b['inside'] else '**no**'])
    out = table(['class', 'direction', 'size', 'GB/s over the runs', 'median', 'simulator (r580)',
                 'inside (margin %d%%)' % round(100 * doc['margin'])], body)
    out.append('')
    out.append('From `fidelity.json` in %s (H100): %d runs merged, %d return-code cases, %d bandwidth '
               'classes, %d disagreements.' % (link(root, folder), doc['runs'], doc['code_cases'],
                                              doc['bandwidth_cases'], len(doc['disagreements'])))
    out.append('')
    # the host's memcpy rates, per calibration profile (what the model replays pageable copies on)
    body = []
    for rel in files(root, '**/*.json'):
        name = os.path.basename(rel)
        if name.startswith(('bench', 'stream', 'summary', 'nvb', 'scenarios', 'reg', 'fidelity')):
            continue
        try:
            d = load(root, rel)
        except ValueError:
            continue
        if not isinstance(d, dict) or 'host_memcpy_gbps' not in d:
            continue
        runs = d.get('host_memcpy_runs') or {k: [v] for k, v in d['host_memcpy_gbps'].items()}
        threads = sorted(runs, key=int)
        body.append([link(root, folder_of(rel)), '`%s`' % in_folder(rel),
                     re.sub(r'^NVIDIA ', '', d.get('device', {}).get('name', '')),
                     len(next(iter(runs.values())))] + [span(runs[t]) for t in threads])
    out += table(['run', 'profile', 'GPU', 'runs', 'memcpy 1 thread GB/s', '2', '4', '8', '16'], body)
    out.append('')
    out.append('Host memcpy rates measured beside each calibration (`resmem calibrate`): the simulator '
               'replays a profile\'s pageable copies on these.')
    return out


SECTIONS = {
    'h200-ceiling': section_h200_ceiling,
    'h200-ceiling-ring': section_h200_ceiling_ring,
    'h200-cold-cells': section_h200_cold_cells,
    'h200-warm-cells': section_h200_warm_cells,
    'h200-staged': section_h200_staged,
    'h100-bench': section_h100_bench,
    'nvbandwidth': section_nvbandwidth,
    'nightly': section_nightly,
    'streams': section_streams,
    'registration': section_registration,
    'calibration': section_calibration,
}

MARK = re.compile(r'^<!-- results:(begin|end) ([\w-]+) -->$')


def render(root, text):
    """The page with every generated section rewritten."""
    lines = text.split('\n')
    out = []
    seen = set()
    i = 0
    while i < len(lines):
        m = MARK.match(lines[i])
        if not m:
            out.append(lines[i])
            i += 1
            continue
        kind, name = m.groups()
        if kind == 'end':
            raise SystemExit('results_tables: line %d: an end marker for %s with no begin' % (i + 1, name))
        if name not in SECTIONS:
            raise SystemExit('results_tables: line %d: no section %s (known: %s)' % (i + 1, name, ', '.join(SECTIONS)))
        if name in seen:
            raise SystemExit('results_tables: section %s twice' % name)
        seen.add(name)
        j = i + 1
        while j < len(lines) and lines[j] != '<!-- results:end %s -->' % name:
            if MARK.match(lines[j]):
                raise SystemExit('results_tables: line %d: a marker inside section %s' % (j + 1, name))
            j += 1
        if j == len(lines):
            raise SystemExit('results_tables: section %s has no end marker' % name)
        out.append(lines[i])
        out.append('<!-- generated by ci/results_tables.py from docs/hil/: edit that, not this -->')
        out += SECTIONS[name](root)
        out.append(lines[j])
        i = j + 1
    missing = set(SECTIONS) - seen
    if missing:
        raise SystemExit('results_tables: no markers for %s in the page' % ', '.join(sorted(missing)))
    return '\n'.join(out)


def main():
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--root', default=here, help='the repo root (default: %(default)s)')
    ap.add_argument('--page', help='the page to rewrite (default: ROOT/docs/results.md)')
    ap.add_argument('--check', action='store_true', help='change nothing; exit 1 when the page is stale')
    args = ap.parse_args()
    page = args.page or os.path.join(args.root, 'docs/results.md')
    with open(page) as f:
        old = f.read()
    new = render(args.root, old)
    if args.check:
        if new != old:
            sys.stdout.writelines(difflib.unified_diff(old.splitlines(True), new.splitlines(True),
                                                       page, page + ' (from docs/hil/)'))
            print('%s is stale: run python3 ci/results_tables.py' % page)
            return 1
        print('%s: every generated section is current' % page)
        return 0
    if new != old:
        with open(page, 'w') as f:
            f.write(new)
        print('rewrote %s' % page)
    else:
        print('%s: nothing to change' % page)
    return 0


if __name__ == '__main__':
    sys.exit(main())
