// The five presets as the C++ built them before they became data files (commit f9a9514,
// mock/machine/presets.cc), kept unchanged as the reference that preset_file_test compares each
// file in mock/machine/presets/ against. Test-only; the citations now live in the files.
#include <algorithm>

#include "mock/machine/testdata/legacy_presets.h"

namespace resmem::sim::legacy {
namespace {

constexpr uint64_t kKiB = 1ull << 10;
constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kGiB = 1ull << 30;

// The PC's first MiB as BIOSes and SeaBIOS report it: 639 KiB of RAM, the EBDA reserved up to
// 640 KiB, the VGA window and option ROMs, the system BIOS reserved at [0xF0000, 1 MiB).
void AddLegacyFirstMiB(MachineSpec& m) {
  m.firmware_e820.push_back({0, 0x9fc00, E820Type::kRam});
  m.firmware_e820.push_back({0x9fc00, 0xa0000, E820Type::kReserved});
  m.firmware_e820.push_back({0xf0000, 0x100000, E820Type::kReserved});
  m.mmio.push_back({0xa0000, 0xc0000, "Video RAM area"});
  m.mmio.push_back({0xc0000, 0xc8000, "Video ROM"});
  m.mmio.push_back({0xf0000, 0x100000, "System ROM"});
}

// The x86 chipset windows below 4 GiB: the PCI root bus from `pci_start`, IOAPIC, HPET, LAPIC.
void AddPciHole(MachineSpec& m, uint64_t pci_start) {
  m.mmio.push_back({pci_start, 0xfec00000, "PCI Bus 0000:00"});
  m.mmio.push_back({0xfec00000, 0xfec00400, "IOAPIC 0"});
  m.mmio.push_back({0xfed00000, 0xfed00400, "HPET 0"});
  m.mmio.push_back({0xfee00000, 0xfee01000, "Local APIC"});
}

MachineSpec Seed000() {
  MachineSpec m;
  m.name = "seed000-workstation";
  m.description =
      "seed 000 (2012): 192 GB RAM, Tesla M2090, Linux 2.6.32-40, driver 285.05.33, CUDA 4.1; "
      "mem=4G memmap=188G$4G reserves [4G, 192G); BIOS MTRRs cover only the first 128 GB WB";
  AddLegacyFirstMiB(m);
  m.firmware_e820.push_back({0x100000, 3 * kGiB, E820Type::kRam});
  m.firmware_e820.push_back({0xfec00000, 0xfec01000, E820Type::kReserved});
  m.firmware_e820.push_back({0xfee00000, 0xfee01000, E820Type::kReserved});
  m.firmware_e820.push_back({0xff000000, 4 * kGiB, E820Type::kReserved});
  m.firmware_e820.push_back({4 * kGiB, 193 * kGiB, E820Type::kRam});  // 3 GB + 189 GB = 192 GB
  AddPciHole(m, 3 * kGiB);
  m.mmio.push_back({0xff000000, 4 * kGiB, "BIOS ROM"});
  m.cmdline = "mem=4G memmap=188G$4G";  // seed 000, as the author wrote it
  // MTRRs: default UC; var0 [0, 128G) WB; var1 [3G, 4G) UC (UC wins where both match, SDM
  // 11.11.4.1). A reservation [4G, 68G) is uniformly WB, [4G, 132G) is not: the cliff of seed
  // 000's table between 64 GB and 128 GB comes from here, not from any size rule.
  m.mtrr.enabled = true;
  m.mtrr.default_type = MemoryType::kUncached;
  m.mtrr.variable = {{0, 128 * kGiB, MemoryType::kWriteBack, ""},
                     {3 * kGiB, 1 * kGiB, MemoryType::kUncached, ""}};
  m.phys_addr_bits = 40;
  // Fitted to seed 000's table (16 MiB blocks, MB = 1e6):
  m.perf.wb_copy_gbps = 3.93;       // run A, second pass: 3942/3948/3941/3903 MB/s
  m.perf.wc_write_gbps = 3.93;      // assumption: not measured in the seed
  m.perf.uc_load_latency_ns = 98;   // 8 B / 98 ns = 81.6 MB/s; seed: 80.55 and 83.62 MB/s
  m.perf.memcpy_load_bytes = 8;     // "memcpy ... the same as a loop copy of unsigned long's"
  m.perf.page_fault_us = 1.48;      // run A first pass minus second pass, over 4096 new pages
  m.perf.pin_gbps = 3.2;            // assumption: FACTS.md's figure, not measured in 2012
  m.perf.memcpy_threads_gbps = {3.93};
  // mem=4G leaves 0x9fc00 + (3G - 1M) bytes of RAM; MemTotal 3062532 kB keeps ~81 MB for the
  // kernel (seed 002 says the same of its twin: "free reports only 3GB").
  m.kernel_reserved_bytes = (0x9fc00 + 3 * kGiB - kMiB) - 3062532 * kKiB;
  return m;
}

MachineSpec Seed002() {
  MachineSpec m;
  m.name = "seed002-workstation";
  m.description =
      "seed 002 (2010): 12 GB RAM, Ubuntu 9.04, Linux 2.6.28; mem=4G memmap=8G$4G reserves "
      "[4G, 12G); free reports about 3 GB";
  m.firmware_e820.push_back({0, 0xa0000, E820Type::kRam});  // [0, 640K)
  m.firmware_e820.push_back({0xf0000, 0x100000, E820Type::kReserved});
  m.mmio.push_back({0xa0000, 0xc0000, "Video RAM area"});
  m.mmio.push_back({0xf0000, 0x100000, "System ROM"});
  m.firmware_e820.push_back({0x100000, 3 * kGiB, E820Type::kRam});
  m.firmware_e820.push_back({4 * kGiB, 13 * kGiB, E820Type::kRam});  // 3 GB + 9 GB = 12 GB
  AddPciHole(m, 3 * kGiB);
  m.cmdline = "mem=4G memmap=8G$4G";  // seed 002
  // All RAM WB (the seed shows no speed cliff): [0,8G) + [8G,12G) + [12G,13G) WB, hole UC.
  m.mtrr.default_type = MemoryType::kUncached;
  m.mtrr.variable = {{0, 8 * kGiB, MemoryType::kWriteBack, ""},
                     {8 * kGiB, 4 * kGiB, MemoryType::kWriteBack, ""},
                     {12 * kGiB, 1 * kGiB, MemoryType::kWriteBack, ""},
                     {3 * kGiB, 1 * kGiB, MemoryType::kUncached, ""}};
  m.phys_addr_bits = 36;
  m.perf = Seed000().perf;  // assumption: same era of workstation, same author; not measured
  m.kernel_reserved_bytes = 80 * kMiB;  // assumption; leaves "only 3GB" as the seed says
  return m;
}

// QEMU as FACTS.md booted it: no -M, so QEMU's default "pc" machine, whose low RAM ends at
// 3 GiB once -m reaches 3.5 GiB (hw/i386/pc_piix.c: lowmem 0xc0000000 with gigabyte
// alignment): FACTS.md's memmap= at 0xbe000000 was half RAM, half hole, and 0xc0000000 was in
// the PCI hole. Below that, all of -m is low RAM. The names keep "q35" for compatibility; the
// layout is the one FACTS.md observed. SeaBIOS e820 extras: [0xfeffc000, 0xff000000) and
// [0xfffc0000, 4G) reserved.
MachineSpec Qemu(const std::string& name, uint64_t ram) {
  MachineSpec m;
  m.name = name;
  const uint64_t lowmem = ram >= 0xe0000000 ? 3 * kGiB : ram;
  m.description = "QEMU -m " + std::to_string(ram / kGiB) +
                  "G as FACTS.md booted it (default pc machine, SeaBIOS, TCG); low RAM ends at " +
                  std::to_string(lowmem / kMiB) + " MiB";
  AddLegacyFirstMiB(m);
  m.firmware_e820.push_back({0x100000, lowmem, E820Type::kRam});
  m.firmware_e820.push_back({0xfeffc000, 0xff000000, E820Type::kReserved});
  m.firmware_e820.push_back({0xfffc0000, 4 * kGiB, E820Type::kReserved});
  if (ram > lowmem) m.firmware_e820.push_back({4 * kGiB, 4 * kGiB + (ram - lowmem), E820Type::kRam});
  AddPciHole(m, lowmem);  // the PCI hole starts where low RAM ends
  m.cmdline = "console=ttyS0 panic=-1";  // FACTS.md's -append, before memmap= is added
  m.mtrr.default_type = MemoryType::kWriteBack;  // FACTS.md: "PAT reports write-back"
  // SeaBIOS (src/fw/mtrr.c) marks the PCI hole [lowmem, 4G) UC; lowmem is 2G or 3G here, so
  // one aligned power-of-two MTRR covers it.
  m.mtrr.variable = {{lowmem, 4 * kGiB - lowmem, MemoryType::kUncached, ""}};
  m.phys_addr_bits = 40;                 // QEMU's default for TCG CPUs
  m.perf.wb_copy_gbps = 1.0;             // assumption: TCG emulation, caching ignored (FACTS.md)
  m.perf.wc_write_gbps = 1.0;
  m.perf.uc_load_latency_ns = 8.0;       // TCG ignores caching: UC costs what WB costs
  m.kernel_reserved_bytes = 64 * kMiB;   // assumption
  return m;
}

MachineSpec H100Host() {
  MachineSpec m;
  m.name = "h100-host";
  m.description =
      "FACTS.md's GPU machine: Firecracker guest, 128 GiB RAM, H100 80GB on PCIe Gen5 x16, "
      "driver 580, CUDA 13.0; no /dev/mem, no module loading";
  AddLegacyFirstMiB(m);
  m.firmware_e820.push_back({0x100000, 3 * kGiB, E820Type::kRam});
  m.firmware_e820.push_back({4 * kGiB, 4 * kGiB + 125 * kGiB, E820Type::kRam});  // 128 GiB
  AddPciHole(m, 3 * kGiB);
  m.cmdline = "console=ttyS0 reboot=k panic=1";  // assumption: no memmap= (nothing to reserve)
  m.mtrr.default_type = MemoryType::kWriteBack;  // assumption: all RAM WB
  m.mtrr.variable = {{3 * kGiB, 1 * kGiB, MemoryType::kUncached, ""}};
  m.phys_addr_bits = 46;  // assumption: not read on that machine
  m.perf.wb_copy_gbps = 11;                             // FACTS.md: one thread about 11 GB/s
  m.perf.memcpy_threads_gbps = {11, 17.5, 24, 40, 52};  // FACTS.md 1,4,8,16; 2 interpolated
  m.perf.wc_write_gbps = 11;                            // assumption
  m.perf.uc_load_latency_ns = 100;                      // assumption
  m.perf.page_fault_us = 0.25;                          // assumption (team brief), not timed
  m.perf.pin_gbps = 3.2;                                // FACTS.md: 8 GiB pinned in 2.65 s
  m.kernel_reserved_bytes = 2 * kGiB;                   // assumption
  return m;
}

}  // namespace

Result<MachineSpec> LegacyPreset(const std::string& name) {
  if (name == "seed000-workstation") return Seed000();
  if (name == "seed002-workstation") return Seed002();
  if (name == "qemu-q35-2g") return Qemu(name, 2 * kGiB);
  if (name == "qemu-q35-5g") return Qemu(name, 5 * kGiB);
  if (name == "h100-host") return H100Host();
  return Status::Error(kNotFound, "no legacy preset '" + name + "'");
}

std::vector<std::string> LegacyPresetNames() {
  return {"seed000-workstation", "seed002-workstation", "qemu-q35-2g", "qemu-q35-5g",
          "h100-host"};
}

}  // namespace resmem::sim::legacy
