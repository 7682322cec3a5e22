// The doctor's view of how the kernel's command line was made: /etc/default/grub through dash
// and grub-mkconfig, /boot/grub/grub.cfg through GRUB's lexer and loader
// (mock/machine/grub.h), each stage shown where the machine has the file.
#ifndef RESMEM_ENGINE_DOCTOR_GRUB_STAGES_H_
#define RESMEM_ENGINE_DOCTOR_GRUB_STAGES_H_

#include <vector>

#include "backends/api/platform.h"
#include "engine/doctor/doctor.h"

namespace resmem::engine {

// For each of /etc/default/grub and /boot/grub/grub.cfg (its first linux line) the platform has:
//   "grub-changed-cmdline" (warning): a stage changed the options written there (a $ expanded,
//       words dropped or joined); evidence: every stage, before and after, and what was eaten;
//   "grub-config-broken" (error): dash stops on the file (update-grub fails) or GRUB drops the
//       menuentry (a syntax error);
//   "grub-cmdline-stages" (info): the stages, where nothing changed.
// A machine without the files gets no finding from here.
std::vector<Finding> GrubStageFindings(Platform& platform);

}  // namespace resmem::engine

#endif  // RESMEM_ENGINE_DOCTOR_GRUB_STAGES_H_
