#!/usr/bin/env bash
# Set-up, build, run: `ci/resmem.sh run scenarios/` installs what is missing, builds the resmem
# command line with Bazel and runs it with the arguments given (default: every seed scenario on
# the simulator).
set -euo pipefail
cd "$(dirname "$0")/.."
ci/setup.sh
bazel build //engine/cli:resmem >/tmp/resmem-build.log 2>&1 || { tail -40 /tmp/resmem-build.log >&2; exit 4; }
if (($# == 0)); then set -- run scenarios/; fi
exec bazel-bin/engine/cli/resmem "$@"
