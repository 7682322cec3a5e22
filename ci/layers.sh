#!/usr/bin/env bash
# The layers (docs/architecture.md, "Layers") are Bazel visibility: an upward dependency fails the
# build. This script shows both halves:
#  1. every fixture under */layer_fixture (a deliberate upward or sideways dependency, tagged
#     manual) fails analysis, and with Bazel's visibility error, not some other one;
#  2. the tree itself (`bazel build --nobuild //...`) passes analysis;
#  3. no BUILD file of the project opens its package to everyone (//visibility:public), which would
#     switch the rule off for that package (third_party/ stand-ins excepted);
#  4. kmod/ stays the bottom layer with one exception, said here and in the root BUILD: its tests
#     package, kmod/tests (the module's guest programs), is the only package under kmod/ that a
#     group of the root BUILD names, in user_space: it may use the seams and kmod/uapi, and its
#     fixture (kmod/tests/layer_fixture, in check 1) shows it can use nothing above them.
# Run by ci/test.sh before the test suite; exit 0 when all four hold, 1 otherwise.
set -uo pipefail
cd "$(dirname "$0")/.."
failures=0
log=$(mktemp)
trap 'rm -f "$log"' EXIT

fixtures=$(find backends mock engine kmod ci scenarios -path '*/layer_fixture/BUILD' | sort)
if [ -z "$fixtures" ]; then
  echo "ci/layers.sh: no */layer_fixture/BUILD found: the check would prove nothing" >&2
  exit 1
fi
checked=0
for build in $fixtures; do
  pkg=${build%/BUILD}
  for name in $(sed -n 's/^ *name = "\([^"]*\)",.*/\1/p' "$build"); do
    target="//$pkg:$name"
    checked=$((checked + 1))
    if bazel build --nobuild "$target" >"$log" 2>&1; then
      echo "FAIL $target: an upward dependency built (the layer rule is not enforced)"
      failures=$((failures + 1))
    elif grep -q "is not visible from target" "$log"; then
      echo "ok   $target: refused: $(grep -m1 -o "target '[^']*' is not visible from target '[^']*'" "$log")"
    else
      echo "FAIL $target: failed, but not with a visibility error:"
      tail -5 "$log" | sed 's/^/       /'
      failures=$((failures + 1))
    fi
  done
done

if bazel build --nobuild //... >"$log" 2>&1; then
  echo "ok   //...: the tree obeys the layers"
else
  echo "FAIL //...: the tree does not pass analysis:"
  grep -E "ERROR|not visible" "$log" | head -20 | sed 's/^/       /'
  failures=$((failures + 1))
fi

public=$(grep -rl --include=BUILD --include=BUILD.bazel 'visibility:public' backends mock engine kmod ci scenarios BUILD 2>/dev/null || true)
if [ -n "$public" ]; then
  echo "FAIL these BUILD files open their package to everyone (use a group of //:BUILD instead):"
  echo "$public" | sed 's/^/       /'
  failures=$((failures + 1))
else
  echo "ok   no project BUILD file says //visibility:public"
fi

kmod_in_groups=$(sed -n 's|^ *"\(//kmod[^"]*\)",.*|\1|p' BUILD | sort -u | tr '\n' ' ')
if [ "$kmod_in_groups" = "//kmod/tests/... " ]; then
  echo "ok   kmod/: the root BUILD's groups name only kmod/tests/... (the module's guest programs, user space)"
else
  echo "FAIL the root BUILD's groups name these packages under kmod/: ${kmod_in_groups:-none} (want //kmod/tests/... alone)"
  failures=$((failures + 1))
fi

echo "ci/layers.sh: $checked fixture targets, $failures failure(s)"
[ "$failures" -eq 0 ]
