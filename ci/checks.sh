# The shell tests' check words, sourced by each test before its first check:
#   ok WHAT...   prints a check that held;
#   bad WHAT...  prints a check that failed, and counts it in $fails;
#   finish NAME  prints "NAME: N failed" and exits 1 when a check failed, 0 otherwise.
# Sourced from the runfiles root (Bazel's sh_test starts there; the test lists ci/checks.sh in its
# data) or, run by hand, from the repository root.
fails=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }
finish() {
  echo "$1: $fails failed"
  exit $((fails > 0))
}
