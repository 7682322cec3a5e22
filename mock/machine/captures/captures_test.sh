#!/bin/bash
# Runs captures_test.py over the capture folders in the test's runfiles.
D="$TEST_SRCDIR/${TEST_WORKSPACE:-resmem}/mock/machine/captures"
exec python3 "$D/captures_test.py" "$D"/qemu-*/
