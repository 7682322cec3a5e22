#!/bin/sh
echo "coverage is unsupported offline (Bazel 4.2.3 stand-in, see docs/build.md)" >&2
exit 1
