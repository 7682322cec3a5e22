/*
 * A black-box program in the style of the forum's (seed 000): open the reserved-memory device,
 * ask its length with RESMEM_IOC_LENGTH, mmap it whole, memcpy a block out of it, check the data,
 * and hand the block to the GPU with cudaMemcpy when a GPU is there. It knows nothing of resmem
 * beyond the ioctl header: run it against the FUSE-emulated device through the LD_PRELOAD shim
 * (backends/fuse), exactly as it would run against the kernel module.
 *
 * usage: resmem_blackbox [--device PATH] [--offset BYTES] [--block BYTES]
 *                        [--expect-fill SEED] [--write-check]
 * Exit codes: 0 all good; 10 open failed; 11 ioctl failed; 12 mmap failed; 13 data mismatch;
 * 2 bad usage. A page the device cannot deliver kills it with SIGBUS, as it would the original.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "resmem_ioctl.h"

/* The control protocol's fill pattern (mock/fuse/control.h FillPatternWord), restated here so
 * this program stays independent of resmem's libraries. */
static uint64_t fill_word(uint64_t seed, uint64_t k) {
  return (seed * 0x9e3779b97f4a7c15ull) ^ (k * 0x100000001b3ull) ^ 0x7265736d656dull;
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* cudaMemcpy through the runtime if one is loadable and sees a GPU; otherwise say why not. */
static void gpu_copy(const void* block, size_t bytes) {
  const char* names[] = {"libcudart.so", "libcudart.so.13", "libcudart.so.12",
                         "/usr/local/cuda/lib64/libcudart.so"};
  void* lib = NULL;
  for (size_t i = 0; i < sizeof names / sizeof names[0] && !lib; i++) lib = dlopen(names[i], RTLD_NOW);
  if (!lib) {
    printf("cudaMemcpy: skipped (no CUDA runtime loadable)\n");
    return;
  }
  int (*getDeviceCount)(int*) = (int (*)(int*))dlsym(lib, "cudaGetDeviceCount");
  int (*cmalloc)(void**, size_t) = (int (*)(void**, size_t))dlsym(lib, "cudaMalloc");
  int (*cmemcpy)(void*, const void*, size_t, int) =
      (int (*)(void*, const void*, size_t, int))dlsym(lib, "cudaMemcpy");
  int (*cfree)(void*) = (int (*)(void*))dlsym(lib, "cudaFree");
  int count = 0;
  int rc = getDeviceCount ? getDeviceCount(&count) : -1;
  if (rc != 0 || count == 0) {
    printf("cudaMemcpy: skipped (no GPU: cudaGetDeviceCount returned %d, %d devices)\n", rc, count);
    return;
  }
  void* dev = NULL;
  rc = cmalloc(&dev, bytes);
  if (rc != 0) {
    printf("cudaMalloc failed: %d\n", rc);
    return;
  }
  double t0 = now();
  rc = cmemcpy(dev, block, bytes, 1 /* cudaMemcpyHostToDevice */);
  double t = now() - t0;
  printf("cudaMemcpy %zu bytes: rc %d, %.3f ms (%.0f MB/s)\n", bytes, rc, t * 1e3, bytes / t / 1e6);
  cfree(dev);
}

int main(int argc, char** argv) {
  const char* device = "/dev/resmem0";
  unsigned long long offset = 0, block = 16ull << 20, seed = 0;
  int expect_fill = 0, write_check = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--device") && i + 1 < argc) device = argv[++i];
    else if (!strcmp(argv[i], "--offset") && i + 1 < argc) offset = strtoull(argv[++i], NULL, 0);
    else if (!strcmp(argv[i], "--block") && i + 1 < argc) block = strtoull(argv[++i], NULL, 0);
    else if (!strcmp(argv[i], "--expect-fill") && i + 1 < argc) {
      expect_fill = 1;
      seed = strtoull(argv[++i], NULL, 0);
    } else if (!strcmp(argv[i], "--write-check")) write_check = 1;
    else {
      fprintf(stderr, "usage: %s [--device PATH] [--offset BYTES] [--block BYTES] "
                      "[--expect-fill SEED] [--write-check]\n", argv[0]);
      return 2;
    }
  }

  int fd = open(device, O_RDWR | O_SYNC);
  if (fd < 0) {
    printf("open %s failed: errno %d (%s)\n", device, errno, strerror(errno));
    return 10;
  }
  __u64 length = 0;
  if (ioctl(fd, RESMEM_IOC_LENGTH, &length) != 0) {
    printf("ioctl RESMEM_IOC_LENGTH failed: errno %d (%s)\n", errno, strerror(errno));
    return 11;
  }
  printf("%s: length %llu bytes\n", device, (unsigned long long)length);
  unsigned char* mem = mmap(NULL, length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (mem == MAP_FAILED) {
    printf("mmap failed: errno %d (%s)\n", errno, strerror(errno));
    return 12;
  }
  printf("mapped %llu bytes at %p\n", (unsigned long long)length, (void*)mem);
  fflush(stdout);  /* a SIGBUS below must not eat what was said so far */
  if (offset > length || block > length - offset) block = length - offset;

  unsigned char* buf = malloc(block);
  if (!buf) {
    printf("malloc of %llu bytes failed\n", block);
    return 12;
  }
  double t0 = now();
  memcpy(buf, mem + offset, block);
  double t = now() - t0;
  printf("memcpy %llu bytes from the mapping: %.3f ms (%.0f MB/s)\n", block, t * 1e3,
         block / t / 1e6);

  if (expect_fill) {
    const uint64_t* words = (const uint64_t*)buf;
    for (unsigned long long k = 0; k < block / 8; k++) {
      uint64_t want = fill_word(seed, offset / 8 + k);
      if (words[k] != want) {
        printf("data mismatch at byte %llu: got 0x%016llx want 0x%016llx\n", offset + k * 8,
               (unsigned long long)words[k], (unsigned long long)want);
        free(buf);
        return 13;
      }
    }
    printf("data ok: %llu bytes match fill seed %llu\n", block, seed);
  }
  if (write_check) {
    for (unsigned long long i = 0; i < block; i += 4096) mem[offset + i] = (unsigned char)(i >> 12);
    if (msync(mem, length, MS_SYNC) != 0) {
      printf("msync failed: errno %d (%s)\n", errno, strerror(errno));
      free(buf);
      return 13;
    }
    unsigned char back = 0;
    unsigned long long probe = block > 4096 ? 4096 : 0;
    if (pread(fd, &back, 1, offset + probe) != 1 || back != (unsigned char)(probe >> 12)) {
      printf("write check failed at byte %llu: read back %u\n", offset + probe, back);
      free(buf);
      return 13;
    }
    printf("write check ok\n");
  }
  gpu_copy(buf, block);
  free(buf);
  munmap(mem, length);
  close(fd);
  printf("RESULT ok\n");
  return 0;
}
