#!/bin/sh
# --combined_report=lcov is not provided by this offline stand-in: ci/coverage.sh merges the
# per-test tracefiles (bazel-testlogs/**/coverage.dat) with Debian's lcov (docs/build.md).
echo "coverage_report_generator: use ci/coverage.sh for the combined report (docs/build.md)" >&2
exit 1
