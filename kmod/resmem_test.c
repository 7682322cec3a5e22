// SPDX-License-Identifier: GPL-2.0
/*
 * The test build of resmem: the same driver compiled with RESMEM_TEST_FAULTS, which adds the
 * fault= parameter (the seeds' bugs) and RESMEM_IOC_TEST_PIN. Never load it on a real system.
 */
#define RESMEM_TEST_FAULTS 1
#include "resmem.c"
