#!/usr/bin/env bash
# Installs what resmem needs on a fresh Debian bookworm machine (root), and nothing that is
# already there. Sourced or run by ci/resmem.sh and ci/test.sh; safe to run again.
#   Bazel 4.2.3 (bazel-bootstrap), g++, GoogleTest/GoogleMock, toml++, nlohmann-json, CLI11,
#   libfuse3;
#   help2man (the packages' man pages) and dkms (//packaging:install_test_dkms, the QEMU lanes' driver);
#   slurm-wlm + munge for //ci/slurm:slurm_matrix_test (a one-machine Slurm cluster; its daemons
#   are started by the test alone: Debian's packages start none without systemd);
#   libxml2-utils (xmllint: the JUnit files against ci/junit/junit.xsd) and chromium (headless:
#   //ci:hil_history_test renders docs/hil/history.html);
#   busybox-static: the guest's shell, which //ci/qemu:guest_select_test runs on the host (a fresh
#   machine's run of 82c9546 failed it: the plain lane ran it before the kernel lane installed it);
#   the QEMU lane (ci/qemu/kmod_lane.sh) installs its own packages (qemu, kernel headers/image).
#   The CUDA 13.0 toolkit is expected at /usr/local/cuda (it is on the build machine image;
#   Debian has no CUDA 13 package): without it the CUDA backend's targets cannot build.
set -euo pipefail

need=(bazel-bootstrap g++ libgtest-dev libgmock-dev libtomlplusplus-dev nlohmann-json3-dev
      libcli11-dev libfuse3-dev fuse3 gnuplot-nox help2man dkms slurm-wlm munge
      libxml2-utils chromium busybox-static)
missing=()
for p in "${need[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  if [[ $(id -u) != 0 ]]; then
    echo "ci/setup.sh: missing ${missing[*]}; run as root or: sudo apt-get install ${missing[*]}" >&2
    exit 2
  fi
  echo "ci/setup.sh: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt_opts=(-y -q --no-install-recommends -o DPkg::Lock::Timeout=300)
  apt-get install "${apt_opts[@]}" "${missing[@]}" >/tmp/resmem-apt.log 2>&1 ||
    { apt-get update -q -o DPkg::Lock::Timeout=300 >>/tmp/resmem-apt.log 2>&1 &&
      apt-get install "${apt_opts[@]}" "${missing[@]}" >>/tmp/resmem-apt.log 2>&1; } ||
    { tail -20 /tmp/resmem-apt.log >&2; echo "ci/setup.sh: apt-get install failed" >&2; exit 2; }
fi
if [[ ! -f /usr/local/cuda/lib64/libcudart_static.a ]]; then
  echo "ci/setup.sh: no CUDA toolkit at /usr/local/cuda (libcudart_static.a); the CUDA backend cannot build" >&2
  exit 2
fi
# FUSE tests mount as root; a fresh machine may have /dev/fuse at 0600, which is fine for root.
[[ -e /dev/fuse ]] || echo "ci/setup.sh: /dev/fuse is missing: FUSE tests will report themselves unavailable" >&2
exit 0
