#!/usr/bin/env python3
"""Checks that docs/hil/*/runs.txt reproduce the device runs' old scripts.

Every device run of docs/hil/ used to be a script of its own (docs/hil/SESSION/runN.sh,
161 of them). They became one parametrised script, ci/hil-run.sh, and each folder's runs.txt
lists, per old script, the invocation of ci/hil-run.sh that reproduces it. This tool proves it:
for each entry it runs the old script (taken from git, REV:docs/hil/SESSION/runN.sh) with stub
binaries that record their command lines, and compares those with what the invocation prints
under --dry-run; then it runs the invocation for real under the same stubs.

What a command line is here: a carried binary or ci/ script (or tar, or a write into /proc/sys or
/sys) with its arguments, the environment it got (LD_LIBRARY_PATH, RESMEM_*...), its timeout,
and the file under $OUT its output went to. What the old scripts printed around them (awk and
grep summaries of the output, nvidia-smi and /proc facts, dates) is presentation: ci/hil-run.sh
keeps each command's whole output in the log instead, and prints the machine's facts itself.

usage: ci/hil_run_check.py [--rev REV] [--session S]...     check every runs.txt (from the repo root;
                                                            REV: where the old scripts are, found
                                                            in git history by default)
       ci/hil_run_check.py --draft [--rev REV] --session S   print a runs.txt for S's old scripts
       ci/hil_run_check.py --capture FILE...                  print what old scripts ran
Python 3 standard library only. Exit 0 when every entry matches, 1 otherwise. Tested by
//ci:hil_run_check_test (the sessions recorded with ci/hil-run.sh from the start, which need no
git history, and a made-up one with bad entries).
"""
import argparse
import difflib
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# The stub every carried binary (and tar, cp) becomes: one line per call in $HIL_LOG.
STUB = r'''#!/bin/bash
hq() { if [[ -n $1 && $1 =~ ^[][A-Za-z0-9_./:=,+@%^*{}\$-]+$ ]]; then printf '%s' "$1"; else printf "'%s'" "${1//\'/\'\\\'\'}"; fi; }
t=$(readlink /proc/$$/fd/1)
{
  line=""
  for v in $(compgen -e | LC_ALL=C sort); do
    case $v in PATH|HOME|OUT|PWD|OLDPWD|SHLVL|_|HIL_*|LANG|TERM|TMPDIR) continue ;; esac
    val=${!v}
    [ "$v" = LD_LIBRARY_PATH ] && val=$(realpath -m --relative-to="$HIL_REPO" "$val")
    line+="$(hq "$v=$val") "
  done
  [ -n "${HIL_TIMEOUT:-}" ] && line+="timeout $HIL_TIMEOUT "
  case $0 in "$HIL_PATHSTUBS"/*) line+=${0##*/} ;; *) line+=$(realpath -m --relative-to="$HIL_REPO" "$0") ;; esac
  for a in "$@"; do
    a=${a//$OUT/\$OUT}; a=${a//$HIL_SCRATCH/\/tmp}; a=${a//$HIL_REPO\//}
    line+=" $(hq "$a")"
  done
  case $t in "$OUT"/*) line+=" > \$OUT/${t#"$OUT"/}" ;; "$HIL_SCRATCH"/*) line+=" > /tmp/${t#"$HIL_SCRATCH"/}" ;; esac
  printf '%s\n' "$line"
} >> "$HIL_LOG"
# The output the run kept under that name, for a script that reads it back (staged5's --costs)
case $t in "$OUT"/*)
  name=${t#"$OUT"/}
  for m in ${HIL_REPLAY_MAP:-}; do [ "${m%%:*}" = "$name" ] && name=${m#*:}; done
  [ -n "${HIL_REPLAY_DIR:-}" ] && [ -f "$HIL_REPLAY_DIR/$name" ] && cat "$HIL_REPLAY_DIR/$name" ;;
esac
exit 0
'''
TIMEOUT = '#!/bin/bash\nexport HIL_TIMEOUT="$1"; shift\nexec "$@"\n'
QUIET = '#!/bin/bash\nexit 0\n'
# Outputs a run read back whose file did not come back under its own name: (session, run) ->
# {name under $OUT: the kept file that holds its lines}. Run 1 of staged5 derived --costs from
# its ceiling log; the log was not kept, but the call's output (run1/run1.log) printed it whole.
REPLAY = {('2026-11-24-h100-staged5', '1'): {'run1-ceiling.log': 'run1/run1.log'}}
SYSFS_WRITE = re.compile(r'echo (\S+) > (/proc/sys/[^\s;]+|/sys/[^\s;]+|\$g)(?=\s|;|$)')


class Sandbox:
    """A scratch repository root with stub binaries, and the environment to run a script in."""

    def __init__(self, tmp, session, run):
        self.tmp = tmp
        # a stub whose output went to $OUT/NAME prints what the run kept as NAME, if anything
        self.replay_dir = os.path.join(ROOT, 'docs/hil', session)
        self.replay_map = ' '.join('%s:%s' % kv for kv in REPLAY.get((session, run), {}).items())
        self.repo = os.path.join(tmp, 'repo')
        self.pathstubs = os.path.join(tmp, 'bin')
        self.scratch = os.path.join(tmp, 'scratch')
        # ci/hil-run.sh's `set` writes under here, never into this machine's /proc/sys or /sys
        self.sysfs = os.path.join(tmp, 'sysfs')
        for d in ('proc/sys/vm', 'sys/kernel/mm/hugepages/hugepages-1048576kB'):
            os.makedirs(os.path.join(self.sysfs, d), exist_ok=True)
        for d in (self.repo, self.pathstubs, self.scratch):
            os.makedirs(d, exist_ok=True)
        for name, text in (('timeout', TIMEOUT), ('nvidia-smi', QUIET), ('dmesg', QUIET), ('tar', STUB),
                           ('cp', STUB), ('sleep', STUB)):
            self._write(os.path.join(self.pathstubs, name), text)
        for d in ('ci', 'docs/hil/perf', '.carry/perf'):  # where runs found their binaries
            os.makedirs(os.path.join(self.repo, d), exist_ok=True)
        shutil.copy(os.path.join(ROOT, 'ci/hil-run.sh'), os.path.join(self.repo, 'ci/hil-run.sh'))
        self.stubs = set()

    @staticmethod
    def _write(path, text):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, 'w') as f:
            f.write(text)
        os.chmod(path, 0o755)

    def run(self, argv):
        """Runs argv from the scratch root until every carried binary it names has a stub;
        returns the recorded command lines."""
        for _ in range(20):
            for s in self.stubs:
                p = os.path.join(self.repo, s)
                if not os.path.exists(p):
                    self._write(p, STUB)
            out = os.path.join(self.tmp, 'out')
            shutil.rmtree(out, ignore_errors=True)
            os.makedirs(out)
            log = os.path.join(self.tmp, 'calls.txt')
            xtrace = os.path.join(self.tmp, 'xtrace.txt')
            open(log, 'w').close()
            env = {'PATH': self.pathstubs + ':/usr/bin:/bin', 'HOME': self.tmp, 'OUT': out,
                   'HIL_LOG': log, 'HIL_REPO': self.repo, 'HIL_PATHSTUBS': self.pathstubs,
                   'HIL_SCRATCH': self.scratch, 'HIL_XTRACE': xtrace, 'TMPDIR': self.scratch,
                   'HIL_RUN_SYSFS_ROOT': self.sysfs, 'HIL_REPLAY_DIR': self.replay_dir,
                   'HIL_REPLAY_MAP': self.replay_map, 'LANG': 'C'}
            # xtrace (on a descriptor of its own, which no redirection in the script touches)
            # names every program the script tried, even where its error output went nowhere.
            wrapped = ['bash', '-c', 'exec 7>"$HIL_XTRACE"; BASH_XTRACEFD=7; set -x; . "$0" "$@"'] + argv
            subprocess.run(wrapped, cwd=self.repo, env=env, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, timeout=300)
            missing = set()
            with open(xtrace, errors='replace') as f:
                for tok in re.findall(r"[^\s'\"=;()<>|&]+", f.read()):
                    if not tok.startswith(('docs/hil/', '.carry/', 'ci/', self.repo + '/')):
                        continue
                    path = os.path.normpath(os.path.join(self.repo, tok))
                    rel = os.path.relpath(path, self.repo)
                    if (path.startswith(self.repo + '/') and not os.path.exists(path)
                            and not path.startswith(out) and not rel.endswith('/lib')):
                        missing.add(rel)
            if not missing - self.stubs:
                with open(log) as f:
                    return f.read().splitlines()
            self.stubs |= missing
        raise RuntimeError('the stubs never settled for %s' % argv)


def normalise_old(lines):
    """What an old script ran, in ci/hil-run.sh's terms: a copy of a command's scratch output
    into $OUT is that command's `=> FILE`; other scratch output and copies are presentation."""
    result = []
    for line in lines:
        words = line.split()
        while words and re.match(r'[A-Z][A-Z0-9_]*=', words[0]):  # the environment the stub saw
            words = words[1:]
        if words[:1] != ['cp']:
            result.append(line)
            continue
        if len(words) == 3 and words[2].startswith('$OUT/'):
            source, target = words[1], words[2]
            for k in range(len(result) - 1, -1, -1):
                if result[k].endswith(' > ' + source):
                    result[k] = result[k][:-len(' > ' + source)] + ' => ' + target
                    break
            else:
                raise RuntimeError('a copy of %s that no command wrote: %s' % (source, line))
    return [re.sub(r' > /tmp/\S+$', '', l) for l in result]


def old_script(text, sandbox, session, run):
    """Runs an old run script (its text) in the sandbox; returns its normalised command lines."""
    text = text.replace('/tmp/', sandbox.scratch + '/')
    text = SYSFS_WRITE.sub(r'__hil_set \2 \1', text)
    first, rest = text.split('\n', 1)
    text = first + '\n__hil_set() { echo "set $1 $2" >> "$HIL_LOG"; }\n' + rest
    path = os.path.join(sandbox.repo, 'docs/hil', session, 'run%s.sh' % run)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w') as f:
        f.write(text)
    lines = sandbox.run(['docs/hil/%s/run%s.sh' % (session, run)])
    os.remove(path)
    return normalise_old(lines)


def git_show(rev, path):
    return subprocess.run(['git', 'show', '%s:%s' % (rev, path)], cwd=ROOT, check=True,
                          stdout=subprocess.PIPE).stdout.decode()


def session_rev(rev, session):
    """The revision to take a session's old scripts from: REV itself, or with 'auto' HEAD while
    it still has them and else the parent of the commit that deleted them."""
    if rev != 'auto':
        return rev
    try:
        if git_ls('HEAD', session):
            return 'HEAD'
    except subprocess.CalledProcessError:
        pass
    out = subprocess.run(['git', 'log', '-1', '--format=%H', '--diff-filter=D', '--',
                          'docs/hil/%s/run*.sh' % session], cwd=ROOT, stdout=subprocess.PIPE,
                         check=True).stdout.decode().strip()
    if not out:
        raise RuntimeError('no revision has the old scripts of %s' % session)
    return out + '^'


def git_ls(rev, session):
    out = subprocess.run(['git', 'ls-tree', '--name-only', '%s:docs/hil/%s' % (rev, session)], cwd=ROOT,
                         check=True, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL).stdout.decode().split()
    runs = [f for f in out if re.fullmatch(r'run[^/]*\.sh', f)]
    return sorted(runs, key=lambda f: [int(t) if t.isdigit() else t for t in re.split(r'(\d+)', f)])


def read_runs_txt(path):
    """runs.txt: for each old script a line `## runN.sh` (a run recorded with ci/hil-run.sh from the
    start: `## runN`), its comments, then the invocation(s)
    that reproduce it (each continued with backslashes; a script run several times, with the
    environment it read, has one per call). Returns [(script name, [comment lines], [argv])]."""
    entries = []
    with open(path) as f:
        lines = f.read().split('\n')
    i = 0
    while i < len(lines):
        m = re.fullmatch(r'## (run\S*)', lines[i])
        if not m:
            i += 1
            continue
        name, comments, calls, i = m.group(1), [], [], i + 1
        while i < len(lines) and not lines[i].startswith('## '):
            if lines[i].startswith('#'):
                comments.append(lines[i])
                i += 1
                continue
            if not lines[i].strip():
                i += 1
                continue
            command = ''
            while i < len(lines):
                line = lines[i]
                i += 1
                if line.endswith('\\'):
                    command += line[:-1] + ' '
                else:
                    command += line
                    break
            argv = shlex.split(command)
            if not argv or argv[0] != 'ci/hil-run.sh':
                raise RuntimeError('%s: the entry for %s is not a ci/hil-run.sh invocation' % (path, name))
            calls.append(argv)
        if not calls:
            raise RuntimeError('%s: no invocation for %s' % (path, name))
        entries.append((name, comments, calls))
    return entries


def dry_run(argv):
    p = subprocess.run(['bash', os.path.join(ROOT, 'ci/hil-run.sh'), '--dry-run'] + argv[1:], cwd=ROOT,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=dict(os.environ, LC_ALL='C'))
    if p.returncode != 0:
        raise RuntimeError('ci/hil-run.sh --dry-run failed: ' + p.stderr.decode())
    return p.stdout.decode().splitlines()


def observable(lines):
    """What the stubs see of a run: no `=> FILE` (a pipe to tee) and no writes into /proc/sys."""
    return [re.sub(r' => \S+$', '', l) for l in lines if not l.startswith('set ')]


def check(rev, sessions):
    bad = 0
    total = 0
    for session in sessions:
        path = os.path.join(ROOT, 'docs/hil', session, 'runs.txt')
        try:
            entries = read_runs_txt(path)
        except (OSError, RuntimeError) as e:
            print('BAD  %s: %s (docs/hil/SESSION/runs.txt: `## runN`, comments, then ci/hil-run.sh '
                  'invocations; ci/hil-run.sh --help)' % (session, e))
            bad += 1
            continue
        names = [e[0] for e in entries]
        if not any(n.endswith('.sh') for n in names):
            # Recorded with ci/hil-run.sh from the start: no old script to compare; each
            # invocation must read as one (--dry-run).
            for name, _, calls in entries:
                total += 1
                try:
                    for argv in calls:
                        dry_run(argv)
                    print('ok   %s %s: %d invocation(s) read (no old script: recorded with ci/hil-run.sh)'
                          % (session, name, len(calls)))
                except RuntimeError as e:
                    print('BAD  %s %s: %s' % (session, name, e))
                    bad += 1
            continue
        srev = session_rev(rev, session)
        old = git_ls(srev, session)
        if sorted(names) != sorted(old):
            print('MISMATCH %s: runs.txt has %s, %s had %s' % (session, names, srev, old))
            bad += 1
        for name, _, calls in entries:
            total += 1
            problems = []
            with tempfile.TemporaryDirectory() as tmp:
                box = Sandbox(tmp, session, name[3:-3])
                want = old_script(git_show(srev, 'docs/hil/%s/%s' % (session, name)), box, session, name[3:-3])
                for argv in calls:
                    got = dry_run(argv)
                    real = box.run(['ci/hil-run.sh'] + argv[1:])
                    if got != want:
                        problems.append('--dry-run differs:\n' + '\n'.join(
                            difflib.unified_diff(want, got, 'old', 'new', lineterm='')))
                    final = {}
                    for line in want:
                        if line.startswith('set '):
                            _, path, value = line.split(' ', 2)
                            final[path] = value
                    for path, value in final.items():
                        with open(box.sysfs + path) as f:
                            if f.read().strip() != value:
                                problems.append("the real run left %s other than %r" % (path, value))
                    if observable(real) != observable(want):
                        problems.append('the real run under stubs differs:\n' + '\n'.join(
                            difflib.unified_diff(observable(want), observable(real), 'old', 'new', lineterm='')))
            if problems:
                bad += 1
                print('FAIL %s/%s\n%s' % (session, name, '\n'.join(problems)))
            else:
                print('ok   %s/%s: %d command lines%s' % (session, name, len(want),
                                                        ' (%d calls)' % len(calls) if len(calls) > 1 else ''))
    print('%d of %d runs reproduce their old scripts' % (total - bad, total) if not bad else
          '%d problem(s) in %d runs' % (bad, total))
    return 0 if bad == 0 else 1


# ---- --draft: an invocation that reproduces a list of command lines, loops folded ----

PIECE = re.compile(r'[A-Za-z0-9]+|.')


def align(seqs):
    """Positions of seqs[0] that every sequence shares, in order, and for each sequence where
    they are: (anchors, [ {ref position: position} ])."""
    ref = seqs[0]
    keep = set(range(len(ref)))
    maps = []
    for seq in seqs:
        m = {}
        for a, b, size in difflib.SequenceMatcher(None, ref, seq, autojunk=False).get_matching_blocks():
            for k in range(size):
                m[a + k] = b + k
        maps.append(m)
        keep &= set(m)
    return sorted(keep), maps


def gaps(seqs):
    """seqs cut at their shared elements: a list of ('same', items) and ('gap', [items per seq])."""
    anchors, maps = align(seqs)
    bounds = [-1] + anchors + [len(seqs[0])]
    parts = []
    for g in range(len(bounds) - 1):
        lo, hi = bounds[g], bounds[g + 1]
        vals = []
        for c, seq in enumerate(seqs):
            a = maps[c][lo] + 1 if lo >= 0 else 0
            b = maps[c][hi] if hi < len(seqs[0]) else len(seq)
            vals.append(seq[a:b])
        if all(v == vals[0] for v in vals):
            if vals[0]:
                parts.append(('same', vals[0]))
        else:
            parts.append(('gap', vals))
        if hi < len(seqs[0]):
            parts.append(('same', [seqs[0][hi]]))
    return parts


def fold(commands):
    """One step for commands that differ only in places: (loops, template), loops a list of
    levels, each a list of (name, values). Where a command line differs, the place is a loop
    variable: whole words ({cfg} with values '', '--frontier') or part of one word
    ($OUT/run1-r{round}-{tag}.json); each variable follows one level of nested loops."""
    n = len(commands)
    words = [c.split() for c in commands]
    template = []  # strings and slot numbers
    slots = []     # (kind, [value per command])
    for kind, items in gaps(words):
        if kind == 'same':
            template.append(' '.join(items))
        elif all(len(v) == 1 for v in items) and not all(
                re.fullmatch(r'[\w.-]*(resmem|staged|probe|test|dyn|fillx|hyb|smx)[\w.-]*', v[0]) for v in items):
            # one word each (not a program's name): fold inside the word
            word = []
            for k2, it in gaps([PIECE.findall(v[0]) for v in items]):
                if k2 == 'same':
                    word.append(''.join(it))
                else:
                    word.append(len(slots))
                    slots.append(('sub', [''.join(x) for x in it]))
            template.append(word)
        else:
            template.append(len(slots))
            slots.append(('word', [' '.join(v) for v in items]))
    for _, vals in slots:
        if any('|' in v or '{' in v for v in vals):
            return None
    best = None
    for factors in factorisations(n):
        levels = [[] for _ in factors]
        for k, (_, vals) in enumerate(slots):
            for lvl in range(len(factors)):
                table = {}
                if all(table.setdefault(digit(i, factors, lvl), v) == v for i, v in enumerate(vals)):
                    levels[lvl].append((k, [table[d] for d in range(factors[lvl])]))
                    break
            else:
                break
        else:
            cost = 0  # characters, and a value twice in one list costs as much as a loop
            for lvl, f in enumerate(factors):
                distinct = {tuple(v) for _, v in levels[lvl]}
                cost += sum(len('|'.join(v)) + 12 + 12 * (len(v) - len(set(v))) for v in distinct) if distinct else 8
            if best is None or cost < best[0]:
                best = (cost, factors, levels)
    _, factors, levels = best
    used, names, loops = set(), {}, []

    def fresh(base):
        name, i = base, 2
        while name in used:
            name, i = '%s%d' % (base, i), i + 1
        used.add(name)
        return name

    for lvl, f in enumerate(factors):
        level, seen = [], {}
        for k, vals in levels[lvl]:
            if tuple(vals) in seen:  # the same values: the same variable
                names[k] = seen[tuple(vals)]
                continue
            if all(v == '' or v.startswith('-') for v in vals):
                base = 'cfg'
            elif all(re.fullmatch(r'\d+', v) for v in vals):
                base = 'n'
            elif slots[k][0] == 'word' and all(re.search(r'resmem|staged|test|probe', v) for v in vals):
                base = 'bin'
            else:
                base = 'x'
            names[k] = seen[tuple(vals)] = fresh(base)
            level.append((names[k], vals))
        loops.append(level or [(fresh('round'), [str(d + 1) for d in range(f)])])
    text = []
    for t in template:
        if isinstance(t, int):
            text.append('{%s}' % names[t])
        elif isinstance(t, list):
            text.append(''.join(x if isinstance(x, str) else '{%s}' % names[x] for x in t))
        else:
            text.append(t)
    text = ' '.join(text)
    # a fold must read as a command: most of each command line stays literal
    if n > 1 and len(re.sub(r'\{\w+\}', '', text)) < 0.6 * sum(len(c) for c in commands) / n:
        return None
    return loops, text


def step_text(loops, text):
    parts = []
    for level in loops:
        for k, (name, vals) in enumerate(level):
            parts.append('--%s %s' % ('for' if k == 0 else 'with', shlex.quote('%s=%s' % (name, '|'.join(vals)))))
    return parts + [shlex.quote(text)]


def fold_best(steps):
    """The shortest way to write consecutive steps: each a fold of a run of them."""
    n = len(steps)
    best = [(0, [])] + [None] * n
    for j in range(1, n + 1):
        for i in range(max(0, j - 64), j):
            if best[i] is None:
                continue
            f = fold(steps[i:j]) if j - i > 1 else ([], steps[i])
            if f is None:
                continue
            cost = best[i][0] + len(' '.join(step_text(*f))) + 3
            if best[j] is None or cost < best[j][0]:
                best[j] = (cost, best[i][1] + [f])
    return best[n][1]


def factorisations(n):
    """Ordered factorisations of n into factors >= 2 (n itself first); [[1]] for n = 1."""
    if n == 1:
        return [[1]]
    result = [[n]]
    for f in range(2, n):
        if n % f == 0:
            for rest in factorisations(n // f):
                result.append([f] + rest)
    return result


def digit(idx, factors, lvl):
    inner = 1
    for f in factors[lvl + 1:]:
        inner *= f
    return (idx // inner) % factors[lvl]


def draft_entry(session, run, lines):
    """The ci/hil-run.sh invocation for one old script's command lines."""
    progs = []
    libs = set()
    parsed = []
    for line in lines:
        words = line.split()
        env = [w for w in words if re.match(r'[A-Z][A-Z0-9_]*=', w)]
        rest = words[len(env):]
        lib = [e for e in env if e.startswith('LD_LIBRARY_PATH=')]
        libs.add(lib[0].split('=', 1)[1] if lib else None)
        env = [e for e in env if not e.startswith('LD_LIBRARY_PATH=')]
        parsed.append((env, rest))
        if rest and rest[0] != 'set':
            prog = rest[2] if rest[0] == 'timeout' else rest[0]
            if '/' in prog and not prog.startswith('ci/'):
                progs.append(os.path.dirname(prog))
    if len(libs - {None}) > 1:
        raise RuntimeError('%s run %s: more than one LD_LIBRARY_PATH' % (session, run))
    lib = next(iter(libs - {None}), None)
    binary = max(set(progs), key=progs.count) if progs else 'docs/hil/' + session
    steps = []
    for env, rest in parsed:
        if rest[0] == 'set':
            steps.append(' '.join(rest))
            continue
        i = 2 if rest[0] == 'timeout' else 0
        prog = rest[i]
        if os.path.dirname(prog) == binary:
            prog = os.path.basename(prog)
        elif '/' not in prog:
            prog = '@' + prog
        words = env + rest[:i] + [prog] + rest[i + 1:]
        text = ' '.join(words)
        if '--bin ' in text:  # ci/hil-nightly.sh --bin DIR: the carried binaries
            text = re.sub(r'(?<=--bin )' + re.escape(binary) + r'(?= |$)', '$BIN', text)
        steps.append(text)
    opts = []
    if binary != 'docs/hil/' + session:
        opts += ['--bin', binary]
    if lib:
        opts += ['--lib', lib]
    out = fold_best(steps)
    return opts, out


def format_entry(session, run, opts, steps, width=100):
    lines = []
    current = ' '.join(shlex.quote(w) for w in ['ci/hil-run.sh'] + opts + [session, run])
    for loops, text in steps:
        for part in step_text(loops, text):
            if len(current) + 1 + len(part) + 2 > width:
                lines.append(current + ' \\')
                current = '  ' + part
            else:
                current += ' ' + part
    lines.append(current)
    return lines


def draft(rev, session):
    rev = session_rev(rev, session)
    print('# docs/hil/%s: each device run of this folder as one invocation of ci/hil-run.sh,' % session)
    print('# from the repo root on the GPU machine, with $OUT the device tool\'s output folder.')
    print('# `ci/hil-run.sh --help` says how a step reads; `--dry-run` prints the command lines.')
    print('# Each entry keeps the comments of the run*.sh it replaces (git history keeps them);')
    print('# ci/hil_run_check.py proves that it runs the same command lines.')
    for name in git_ls(rev, session):
        text = git_show(rev, 'docs/hil/%s/%s' % (session, name))
        run = name[3:-3]
        with tempfile.TemporaryDirectory() as tmp:
            lines = old_script(text, Sandbox(tmp, session, run), session, run)
        opts, steps = draft_entry(session, run, lines)
        m = re.search(r'exec > >\(tee "\$OUT/([^"]+)"\)', text)
        if not m:
            opts += ['--log', 'none']
        elif m.group(1) != 'run%s.log' % run:
            opts += ['--log', m.group(1)]
        print()
        print('## ' + name)
        for line in text.split('\n')[1:]:
            if not line.startswith('#'):
                break
            print(line)
        for line in format_entry(session, run, opts, steps):
            print(line)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--rev', default='auto', help='the git revision that has the run*.sh (default auto: HEAD if it '
                    'still has them, else the parent of the commit that deleted them)')
    ap.add_argument('--session', action='append', help='a folder under docs/hil (default: every one with runs.txt)')
    ap.add_argument('--draft', action='store_true', help="print a runs.txt for the session's old scripts")
    ap.add_argument('--capture', nargs='+', metavar='FILE', help='print the command lines of old scripts')
    args = ap.parse_args()
    if args.capture:
        for f in args.capture:
            with tempfile.TemporaryDirectory() as tmp, open(f) as fh:
                print('# ' + f)
                session, run = os.path.basename(os.path.dirname(f)), os.path.basename(f)[3:-3]
                print('\n'.join(old_script(fh.read(), Sandbox(tmp, session, run), session, run)))
        return 0
    if args.draft:
        if not args.session or len(args.session) != 1:
            ap.error('--draft wants one --session')
        draft(args.rev, args.session[0])
        return 0
    sessions = args.session or sorted(d for d in os.listdir(os.path.join(ROOT, 'docs/hil'))
                                      if os.path.exists(os.path.join(ROOT, 'docs/hil', d, 'runs.txt')))
    return check(args.rev, sessions)


if __name__ == '__main__':
    sys.exit(main())
