// The doctor's part about loading resmem.ko: reads the module policy's files and the module's
// signature into MachineFacts::ModulePolicy, decides the load with the simulator's rules
// (mock/machine/module_policy.h), and names what stands in the way:
//   modules-disabled            error    /proc/sys/kernel/modules_disabled is 1
//   module-signature-rejected   error    resmem.ko unsigned, signed by a key the kernel does not
//                                        trust, or malformed, while sig_enforce, lockdown or
//                                        Secure Boot enforce signatures (named)
//   lockdown-refuses-addresses  warning  locked down: ranges=, phys=, size= are refused
//   secure-boot                 info     Secure Boot is on
#ifndef RESMEM_ENGINE_DOCTOR_MODULE_POLICY_DOCTOR_H_
#define RESMEM_ENGINE_DOCTOR_MODULE_POLICY_DOCTOR_H_

#include <functional>
#include <ostream>
#include <string>

#include "engine/doctor/doctor.h"
#include "nlohmann/json.hpp"

namespace resmem::engine {

// Fills f.module_policy from `platform` (the module named by `module`); reads f.cmdline, which
// must be collected first. A source that cannot be read is noted in f.unreadable.
void CollectModulePolicy(Platform& platform, const std::string& module, MachineFacts& f);

// The findings above, in that order.
void AddModulePolicyFindings(const MachineFacts& f, const std::function<void(Finding)>& add);

// The summary lines of `resmem doctor` ("  module policy: ...", "  resmem.ko: ...", "  load: ...").
void RenderModulePolicy(const MachineFacts::ModulePolicy& m, std::ostream& out);

// The "module_policy" object of the doctor's JSON.
nlohmann::ordered_json ModulePolicyJson(const MachineFacts::ModulePolicy& m);

}  // namespace resmem::engine

#endif  // RESMEM_ENGINE_DOCTOR_MODULE_POLICY_DOCTOR_H_
