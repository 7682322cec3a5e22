#!/usr/bin/env bash
# Bazel test wrapper: runs one scenario file and passes when resmem says every case held.
# args: RESMEM FILE BACKEND
set -u
resmem=$1 file=$2 backend=$3
"$resmem" run "$file" --backend "$backend" --verbose
rc=$?
case $rc in
  0) echo "scenario $file: every case as expected" ;;
  3) echo "scenario $file: backend $backend unavailable here (see above)"; ;;
  *) echo "scenario $file: FAILED (exit $rc)" ;;
esac
exit $rc
