#!/usr/bin/env bash
# Builds NVIDIA's nvbandwidth (the reference bandwidth tool the H100 figures are checked against,
# issue 11) from its public source on the build machine, for carrying to the GPU machine beside
# resmem. nvbandwidth stays out of this repository: give its source folder (a checkout or an
# unpacked release, v0.8 tested) and an output folder.
#
#   ci/nvbandwidth/build.sh SRC_DIR OUT_DIR
#
# The build machine has the CUDA toolkit but no NVML (nvml.h, libnvidia-ml): FACTS.md records that
# a header declaring the six NVML entry points nvbandwidth calls, and a link stub with soname
# libnvidia-ml.so.1, are enough; at run time the GPU machine's real libnvidia-ml.so.1 and
# libcuda.so.1 are loaded. Needs cmake, g++ and libboost-program-options-dev (installed here when
# missing, as root). CUDA architecture 90 (H100) unless CUDA_ARCHS says otherwise.
set -euo pipefail
src=${1:?usage: ci/nvbandwidth/build.sh SRC_DIR OUT_DIR (SRC_DIR: nvbandwidth source, v0.8 tested)}
out=${2:?usage: ci/nvbandwidth/build.sh SRC_DIR OUT_DIR}
[[ -f $src/CMakeLists.txt && -f $src/nvbandwidth.cpp ]] ||
  { echo "build.sh: $src is not an nvbandwidth source folder (no CMakeLists.txt / nvbandwidth.cpp)" >&2; exit 2; }
cuda=${CUDA_HOME:-/usr/local/cuda}
[[ -x $cuda/bin/nvcc ]] || { echo "build.sh: no nvcc under $cuda (set CUDA_HOME)" >&2; exit 3; }
if ! dpkg-query -W -f='${Status}' libboost-program-options-dev 2>/dev/null | grep -q "install ok installed"; then
  [[ $(id -u) == 0 ]] || { echo "build.sh: needs libboost-program-options-dev (sudo apt-get install it)" >&2; exit 3; }
  apt-get install -y -q --no-install-recommends -o DPkg::Lock::Timeout=300 libboost-program-options-dev cmake >/tmp/nvbandwidth-apt.log 2>&1 ||
    { tail -5 /tmp/nvbandwidth-apt.log >&2; exit 3; }
fi
mkdir -p "$out"
out=$(cd "$out" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The NVML declarations nvbandwidth uses (names and values from NVIDIA's public NVML API).
mkdir -p "$work/nvml/include" "$work/nvml/lib"
cat > "$work/nvml/include/nvml.h" <<'H'
#ifndef RESMEM_NVML_STANDIN_H_
#define RESMEM_NVML_STANDIN_H_
#ifdef __cplusplus
extern "C" {
#endif
typedef enum { NVML_SUCCESS = 0, NVML_ERROR_NOT_SUPPORTED = 3 } nvmlReturn_t;
typedef struct nvmlDevice_st* nvmlDevice_t;
#define NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE 80
nvmlReturn_t nvmlInit_v2(void);
#define nvmlInit nvmlInit_v2
const char* nvmlErrorString(nvmlReturn_t result);
nvmlReturn_t nvmlSystemGetDriverVersion(char* version, unsigned int length);
nvmlReturn_t nvmlDeviceGetHandleByUUID(const char* uuid, nvmlDevice_t* device);
nvmlReturn_t nvmlDeviceSetCpuAffinity(nvmlDevice_t device);
#ifdef __cplusplus
}
#endif
#endif
H
cat > "$work/nvml/stub.c" <<'C'
#include "nvml.h"
nvmlReturn_t nvmlInit_v2(void) { return NVML_ERROR_NOT_SUPPORTED; }
const char* nvmlErrorString(nvmlReturn_t r) { (void)r; return "link stub: the real libnvidia-ml.so.1 was not loaded"; }
nvmlReturn_t nvmlSystemGetDriverVersion(char* v, unsigned int n) { (void)v; (void)n; return NVML_ERROR_NOT_SUPPORTED; }
nvmlReturn_t nvmlDeviceGetHandleByUUID(const char* u, nvmlDevice_t* d) { (void)u; (void)d; return NVML_ERROR_NOT_SUPPORTED; }
nvmlReturn_t nvmlDeviceSetCpuAffinity(nvmlDevice_t d) { (void)d; return NVML_ERROR_NOT_SUPPORTED; }
C
gcc -shared -fPIC -I"$work/nvml/include" -Wl,-soname,libnvidia-ml.so.1 -o "$work/nvml/lib/libnvidia-ml.so" "$work/nvml/stub.c"
cmake -S "$src" -B "$work/build" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CUDA_COMPILER="$cuda/bin/nvcc" -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCHS:-90}" \
  -DCMAKE_CXX_FLAGS="-I$work/nvml/include" -DCMAKE_CUDA_FLAGS="-I$work/nvml/include" \
  -DCMAKE_EXE_LINKER_FLAGS="-L$work/nvml/lib -L$cuda/lib64/stubs" >"$work/cmake.log" 2>&1 ||
  { tail -20 "$work/cmake.log" >&2; exit 4; }
nice -n 10 cmake --build "$work/build" -j "$(nproc)" >"$work/make.log" 2>&1 ||
  { tail -30 "$work/make.log" >&2; exit 4; }
cp "$work/build/nvbandwidth" "$out/nvbandwidth"
echo "build.sh: $out/nvbandwidth ($(cd "$src" && (git describe --always --tags 2>/dev/null || echo unversioned)))"
