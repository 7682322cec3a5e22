#!/usr/bin/env bash
# Line coverage of the C++ code, offline (docs/build.md): `bazel coverage` of every test with the
# lcov merger stand-in (third_party/remote_coverage_tools), the per-test tracefiles merged with
# Debian's lcov, and the per-folder table with the least-covered files (ci/coverage_table.py).
#   ci/coverage.sh                 coverage of //..., table on stdout
#   ci/coverage.sh --write-doc     also rewrites docs/coverage.md
# Extra arguments after the options go to `bazel coverage` (e.g. a narrower target pattern is
# not possible: the table is of the whole tree). Merged tracefile: bazel-out/_coverage/resmem.info
# (genhtml bazel-out/_coverage/resmem.info -o DIR renders it as HTML).
set -uo pipefail
cd "$(dirname "$0")/.."
write_doc=()
if [ "${1:-}" = "--write-doc" ]; then write_doc=(--write-doc docs/coverage.md); shift; fi
ci/setup.sh || exit $?
if ! command -v lcov >/dev/null; then
  echo "ci/coverage.sh: installing Debian's lcov (merges the per-test tracefiles)"
  DEBIAN_FRONTEND=noninteractive apt-get install -y lcov >/dev/null || {
    echo "ci/coverage.sh: apt-get install lcov failed; install it by hand and run again" >&2; exit 2; }
fi
# The instrumented packages: the project's C++ (not third_party/, not the system libraries).
cov_start=$(date +%s)
bazel coverage -k --instrumentation_filter='^//(backends|mock|engine|kmod)[/:]' //... "$@"
rc=$?
echo "bazel coverage //... finished with exit code $rc"
mkdir -p bazel-out/_coverage
args=()
while IFS= read -r dat; do
  [ -s "$dat" ] && args+=(-a "$dat")
done < <(find -L bazel-testlogs/ -name coverage.dat | sort)
if [ ${#args[@]} -eq 0 ]; then
  echo "ci/coverage.sh: no test wrote a coverage.dat: nothing was measured" >&2
  exit 1
fi
echo "ci/coverage.sh: merging $(( ${#args[@]} / 2 )) tracefiles with lcov"
lcov -q "${args[@]}" -o bazel-out/_coverage/resmem.info || exit 1
# The page says when, at which commit (+ when the work tree differs) and how the run ended.
stamp="on $(date -u +%F) at commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
[ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ] && stamp+="+"
stamp+=": \`bazel coverage //...\` exit $rc, $(( $(date +%s) - cov_start )) s on $(nproc) cores"
[ ${#write_doc[@]} -gt 0 ] && write_doc+=("$stamp")
python3 ci/coverage_table.py bazel-out/_coverage/resmem.info "${write_doc[@]}" || exit 1
exit $rc
