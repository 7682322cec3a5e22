"""Checks that each capture folder is one whole, untouched boot: every source present, the QEMU
machine type the folder names, the dmesg BIOS-e820 map equal to /sys/firmware/memmap (the
firmware's map as the kernel kept it: drivers/firmware/memmap.c, firmware_map_add_early() from
e820__memblock_setup's table), every memmap=nn$ss of /proc/cmdline reserved in dmesg's user map
and in /proc/iomem, MemTotal and the MTRR lines readable. A hand edit or a truncated recording
fails here."""
import os
import re
import sys

SOURCES = ["dmesg.txt", "dmesg-e820.txt", "iomem.txt", "firmware-memmap.txt", "mtrr.txt",
           "cmdline.txt", "cpuinfo-address-sizes.txt", "meminfo.txt", "qemu.txt"]
# dmesg's e820 type names -> /sys/firmware/memmap type strings (arch/x86/kernel/e820.c
# e820_type_to_string()).
TYPES = {"usable": "System RAM", "reserved": "Reserved", "ACPI data": "ACPI Tables",
         "ACPI NVS": "ACPI Non-volatile Storage", "unusable": "Unusable memory"}
E820 = re.compile(r"^\[ *[0-9.]+\] (BIOS-e820|user): \[mem (0x[0-9a-f]+)-(0x[0-9a-f]+)\] (.+)$")
SIZE = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def memmap_reservations(cmdline):
    out = []
    for opt in cmdline.split():
        m = re.fullmatch(r"memmap=(\d+)([KMGT])\$(0x[0-9a-fA-F]+)", opt)
        if m:
            start = int(m.group(3), 16)
            out.append((start, start + int(m.group(1)) * SIZE[m.group(2)] - 1))
    return out


def check(folder):
    name = os.path.basename(folder.rstrip("/"))
    problems = []
    text = {}
    for s in SOURCES:
        p = os.path.join(folder, s)
        if not os.path.isfile(p) or os.path.getsize(p) == 0:
            problems.append(f"{s} missing or empty")
        else:
            text[s] = open(p).read()
    if problems:
        return problems
    machine = re.search(r"-M (\S+)", text["qemu.txt"])
    want = name.split("-")[1]
    if not machine or machine.group(1) != want:
        problems.append(f"qemu.txt runs -M {machine.group(1) if machine else '?'}, folder says {want}")
    bios, user = [], []
    for line in text["dmesg-e820.txt"].splitlines():
        m = E820.match(line)
        if m:
            (bios if m.group(1) == "BIOS-e820" else user).append(
                (int(m.group(2), 16), int(m.group(3), 16), m.group(4)))
    if not bios or not user:
        problems.append(f"dmesg-e820.txt: {len(bios)} BIOS-e820 and {len(user)} user: lines")
    for line in text["dmesg-e820.txt"].splitlines():
        if line not in text["dmesg.txt"]:
            problems.append(f"dmesg-e820.txt line not in dmesg.txt: {line}")
            break
    fw = {}
    for line in text["firmware-memmap.txt"].splitlines():
        m = re.fullmatch(r"(\d+)/(start|end|type):(.*)", line)
        if not m:
            problems.append(f"firmware-memmap.txt: unreadable line {line!r}")
            continue
        fw.setdefault(int(m.group(1)), {})[m.group(2)] = m.group(3)
    fw_map = sorted((int(e["start"], 16), int(e["end"], 16), e["type"]) for e in fw.values())
    bios_map = [(s, e, TYPES.get(t, t)) for s, e, t in bios]
    if fw_map != bios_map:
        problems.append(f"/sys/firmware/memmap {fw_map} != BIOS-e820 {bios_map}")
    iomem_reserved = [tuple(int(x, 16) for x in m.groups()) for m in
                      re.finditer(r"^([0-9a-f]+)-([0-9a-f]+) : Reserved$", text["iomem.txt"], re.M)]
    for start, end in memmap_reservations(text["cmdline.txt"]):
        if not any(s <= start and end <= e and t == "reserved" for s, e, t in user):
            problems.append(f"memmap= [{start:#x}-{end:#x}] not reserved in dmesg's user map")
        if not any(s <= start and end <= e for s, e in iomem_reserved):
            problems.append(f"memmap= [{start:#x}-{end:#x}] not Reserved in /proc/iomem")
    if not re.search(r"^MemTotal: +\d+ kB$", text["meminfo.txt"], re.M):
        problems.append("meminfo.txt has no MemTotal")
    if not re.fullmatch(r"address sizes\t: \d+ bits physical, \d+ bits virtual\n", text["cpuinfo-address-sizes.txt"]):
        problems.append("cpuinfo-address-sizes.txt is not one 'address sizes' line")
    for line in text["mtrr.txt"].splitlines():
        if not re.fullmatch(r"reg\d\d: base=0x[0-9a-f]+ \( *\d+MB\), size= *\d+MB, count=\d+: \S+", line):
            problems.append(f"mtrr.txt: unreadable line {line!r}")
    return problems


def main(folders):
    if not folders:
        print("no capture folders given")
        return 1
    failed = 0
    for folder in folders:
        problems = check(folder)
        name = os.path.basename(folder.rstrip("/"))
        print(("ok   " if not problems else "FAIL ") + name)
        for p in problems:
            print("     " + p)
        failed += bool(problems)
    print(f"{len(folders)} capture folders, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
