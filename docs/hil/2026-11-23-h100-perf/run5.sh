#!/usr/bin/env bash
# Device run 5 (issue 11): where a staged copy's time goes, on memfd (RAM), by phase.
B=$(dirname "$0")
exec > >(tee "$OUT/run5.log") 2>&1
date -u
$B/staged_probe --host memfd --sizes 1M,4M,16M,64M --copies 30 --blocks 200
