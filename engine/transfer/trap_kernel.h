// A kernel that dies, for the GPU tests (staged_cuda_test): one thread spins `cycles` clock
// cycles, then traps (__trap). A trap ends every kernel of its context with
// cudaErrorLaunchFailure and leaves the context unusable, as a program's faulting kernel would;
// a test that launches it runs in a process of its own (a death test).
#ifndef RESMEM_ENGINE_TRANSFER_TRAP_KERNEL_H_
#define RESMEM_ENGINE_TRANSFER_TRAP_KERNEL_H_

namespace resmem::transfer {

// Launches the kernel on a new non-blocking stream of the calling thread's current context and
// returns at once: the launch's cudaError_t (0: launched).
int LaunchTrapAfter(long long cycles);

}  // namespace resmem::transfer

#endif  // RESMEM_ENGINE_TRANSFER_TRAP_KERNEL_H_
