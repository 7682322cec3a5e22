// The road from what a user writes to the kernel's command line, with each stage as the real
// programs compute it:
//   /etc/default/grub --dash (sourced by grub-mkconfig)--> GRUB_CMDLINE_LINUX[_DEFAULT]
//   --10_linux's here-doc--> the grub.cfg `linux` line --GRUB's lexer and executor--> the linux
//   command's argv --GRUB's Linux loader--> the kernel's command line (/proc/cmdline).
// Every rule cites its source: GRUB 2.06 (Debian 12 ships 2.06-13; the script lexer, executor,
// lib/cmdline.c and 10_linux's linux line are the same in 2.12), dash (POSIX sh), and
// mock/machine/testdata/grub_emu_transcript.txt, recorded from Debian's grub-emu and dash.
#ifndef RESMEM_MOCK_MACHINE_GRUB_H_
#define RESMEM_MOCK_MACHINE_GRUB_H_

#include <string>
#include <vector>

#include "backends/api/status.h"

namespace resmem::sim {

// Where MachineSpec::cmdline was written.
enum class CmdlineSource {
  kKernel,          // "kernel": literally what the kernel receives (/proc/cmdline)
  kGrubCfg,         // "grub-cfg" (old name "grub"): the arguments of a grub.cfg `linux` line
                    // after the kernel path, or the whole line ("linux /boot/vmlinuz-... args")
  kEtcDefaultGrub,  // "etc-default-grub": /etc/default/grub text: lines with at least one
                    // GRUB_...= assignment (GRUB_CMDLINE_LINUX=..., GRUB_CMDLINE_LINUX_DEFAULT=,
                    // others), or else only the right-hand side of GRUB_CMDLINE_LINUX= as
                    // written, quotes included
};

// "kernel" | "grub-cfg" | "grub" (old name of grub-cfg) | "etc-default-grub".
Result<CmdlineSource> ParseCmdlineSource(const std::string& name);
const char* CmdlineSourceName(CmdlineSource source);

// What the model assumes about the parts of the machine the text does not give. Each is noted in
// KernelCmdlineTrace::notes when it decides an outcome.
struct GrubAssumptions {
  // The menuentry's title: GRUB's positional parameter $1 inside the entry (menuentry.c passes
  // the title as the entry's only argument and prefixes its body with `setparams 'TITLE'`).
  // 10_linux writes "${GRUB_DISTRIBUTOR} GNU/Linux" for the first entry (Debian: Debian GNU/Linux).
  std::string menuentry_title = "Debian GNU/Linux";
  // The kernel path when the grub.cfg text does not give it (10_linux: ${rel_dirname}/${basename});
  // it decides how much of the command line fits (BOOT_IMAGE=PATH counts).
  std::string kernel_path = "/boot/vmlinuz-6.1.0-13-amd64";
  // The kernel's setup header cmdline_size (x86: COMMAND_LINE_SIZE - 1 = 2047 since Linux
  // 2.6.22; arch/x86/include/asm/setup.h, arch/x86/boot/header.S).
  unsigned kernel_cmdline_size = 2047;
};

struct KernelCmdlineTrace {
  CmdlineSource source = CmdlineSource::kKernel;
  std::string written;                     // the text as given
  // etc-default-grub: the GRUB_CMDLINE_LINUX[_DEFAULT]= assignments as written, "; "-joined.
  std::string written_assignments;
  // etc-default-grub: the two variables after dash has sourced the text.
  std::string grub_cmdline_linux;
  std::string grub_cmdline_linux_default;
  // grub-cfg and etc-default-grub: the text of the grub.cfg `linux` line after "root=... ro "
  // (for grub-cfg: after the kernel path), as GRUB's lexer reads it.
  std::string grub_cfg;
  std::vector<std::string> grub_argv;      // the linux command's arguments after the kernel path
  std::string kernel_path;                 // the path GRUB loads, when the text named it
  // What the kernel receives: the user's part of the line. With kernel_path given (a whole
  // `linux PATH ...` line) it starts "BOOT_IMAGE=PATH " as GRUB's loader writes it.
  std::string kernel;
  // The whole line as /proc/cmdline reads on a grub-mkconfig system: "BOOT_IMAGE=... root=... ro "
  // in front where the model assumed them (etc-default-grub), else equal to `kernel`.
  std::string kernel_full;
  std::vector<std::string> notes;          // "shell: ..." / "grub: ...": what was eaten or
                                           // changed at which stage, and the rule
  bool altered = false;                    // some rule changed the options themselves (a
                                           // variable expanded, words dropped or joined, the
                                           // loader's quoting), beyond removing the quotes and
                                           // escapes the writer meant
  bool Changed() const;                    // == altered
  // One line per stage, "stage: text", for reports (the doctor, `resmem boot`).
  std::vector<std::string> StageLines() const;
};

// The kernel command line for `text` written at `source`. An error only where the real tools
// give the kernel nothing from this text: dash stops (update-grub fails and grub.cfg keeps its
// old line) or GRUB's parser drops the menuentry (syntax error). The message names the problem,
// the rule and the way out.
Result<KernelCmdlineTrace> TraceKernelCmdline(const std::string& source, const std::string& text,
                                              const GrubAssumptions& assume = {});

// Stage functions, each usable alone.
// GRUB's expansion of a grub.cfg command's argument text (grub-core/script/yylex.l, script.y,
// execute.c grub_script_arglist_to_argv) inside a 10_linux menuentry. `next_line` is the
// grub.cfg line after it, read when the text ends in a backslash (line continuation).
Result<std::vector<std::string>> GrubExpandArguments(const std::string& text,
                                                     const std::string& next_line,
                                                     const GrubAssumptions& assume,
                                                     std::vector<std::string>* notes);
// GRUB's Linux loader: "BOOT_IMAGE=" + path + the arguments, each with \ ' " escaped and
// wrapped in double quotes when it holds a space (grub-core/lib/cmdline.c
// grub_create_loader_cmdline); arguments that no longer fit in cmdline_size are dropped.
// `path` empty: the arguments alone (the path still counts against the size, from `assume`).
std::string GrubLoaderCmdline(const std::string& path, const std::vector<std::string>& argv,
                              const GrubAssumptions& assume, std::vector<std::string>* notes);

// The kernel line for a grub.cfg linux argument text (TraceKernelCmdline("grub-cfg", line)
// .kernel); "" where GRUB drops the entry (a syntax error).
std::string ExpandGrubLine(const std::string& line);

// The boot loader file a scenario's command line was written in, as the machine holds it:
// etc-default-grub: "/etc/default/grub" with the text (a bare right-hand side on a
// GRUB_CMDLINE_LINUX= line); grub-cfg: "/boot/grub/grub.cfg" with a menuentry as 10_linux writes
// it, the text on its linux line (after "linux<TAB>PATH " unless the text is a whole linux line).
// kernel: path and text empty.
struct BootLoaderFile {
  std::string path;
  std::string text;
};
BootLoaderFile BootLoaderFileFor(const std::string& source, const std::string& cmdline,
                                 const GrubAssumptions& assume = {});
// The first linux / linux16 / linuxefi line of a grub.cfg text without its leading blanks (the
// first entry's: what boots with GRUB_DEFAULT=0); empty when there is none.
std::string FirstGrubCfgLinuxLine(const std::string& grub_cfg);

// The other direction, for `resmem plan`: what to write so that the kernel receives
// `kernel_options` (space-separated options, e.g. "mem=4G memmap=8G$4G").
struct GrubSpelling {
  std::string grub_cfg;                // for the grub.cfg linux line: memmap=8G\$4G
  std::string etc_default_grub_value;  // with its quotes: "memmap=8G\\\$4G"
  std::string etc_default_grub_line;   // GRUB_CMDLINE_LINUX="memmap=8G\\\$4G"
};
// Errors for what GRUB cannot pass unchanged: a ' " or \ (its loader puts a backslash before
// each), a newline, or an empty option.
Result<GrubSpelling> SpellKernelOptionsForGrub(const std::string& kernel_options);

}  // namespace resmem::sim

#endif  // RESMEM_MOCK_MACHINE_GRUB_H_
