#!/usr/bin/env bash
# The ThreadSanitizer lane (.bazelrc --config=tsan): the whole suite but the static QEMU guest
# parts (tag no_sanitizer), with ci/test.sh's set-up, per-lane summary from the JUnit XML and
# FUSE-mount check. Not part of .ci/run (CI may skip it: its cold build is a second full build of
# the tree); its last result is in docs/reliability.md. Arguments go to `bazel test`.
exec env RESMEM_CI_LANES=tsan "$(dirname "$0")/test.sh" "$@"
