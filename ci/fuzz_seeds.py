#!/usr/bin/env python3
"""Seeds for the fuzz targets, from the repo's own files (ci/fuzz.sh --seed).

Usage: fuzz_seeds.py REPO_ROOT OUT_DIR
Writes OUT_DIR/TARGET/NAME for every fuzz target of the tree (each sits beside the parser it
fuzzes, `bazel query 'attr(name, "_fuzz_lib$", //...)'`). ci/fuzz.sh then merges them into the
target's corpus, PACKAGE/fuzz_corpus/TARGET (e.g. mock/machine/fuzz_corpus/cmdline), with
libFuzzer's -merge=1, which keeps only the inputs that add coverage. Every seed is a file of the
repo or a line cut from one (the source is in the name).
"""
import glob
import hashlib
import os
import re
import struct
import sys

root, out = sys.argv[1], sys.argv[2]


def read(path):
    with open(os.path.join(root, path), "rb") as f:
        return f.read()


def put(target, data, source):
    d = os.path.join(out, target)
    os.makedirs(d, exist_ok=True)
    name = re.sub(r"[^A-Za-z0-9._-]", "_", source)[-60:] + "-" + hashlib.sha1(data).hexdigest()[:10]
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def files(pattern):
    return sorted(p for p in glob.glob(os.path.join(root, pattern), recursive=True) if os.path.isfile(p))


def rel(p):
    return os.path.relpath(p, root)


# Kernel command lines: scenario files' cmdline keys, the 6.1 lane's recorded cases, the
# corpus logs' "Command line:" lines, GRUB case files.
cmdlines = []
for p in files("scenarios/**/*.toml") + files("mock/machine/presets/*.toml"):
    for m in re.finditer(rb'^\s*cmdline\s*=\s*"((?:[^"\\]|\\.)*)"', read(rel(p)), re.M):
        cmdlines.append((m.group(1).replace(b"\\\\", b"\\"), rel(p)))
for line in read("mock/machine/testdata/linux-6.1-qemu/cases.tsv").splitlines():
    if b"\t" in line and not line.startswith(b"#"):
        cmdlines.append((line.split(b"\t", 1)[1], "linux-6.1-qemu/cases.tsv"))
for p in files("mock/machine/corpus/*.log"):
    for m in re.finditer(rb"Command line: ?(.*)", read(rel(p))):
        cmdlines.append((m.group(1).strip(), rel(p)))
grub = []
for name, source in (("etc_default_grub_cases.txt", 2), ("grub_cfg_cases.txt", 1)):
    for line in read("mock/machine/testdata/" + name).splitlines():
        if line and not line.startswith(b"#"):
            grub.append((bytes([source]) + line.replace(b"\\n", b"\n"), name))

# cmdline: selector byte (source, version, preset) + text.
for i, (text, src) in enumerate(cmdlines):
    put("cmdline", bytes([(i * 4) & 0xff & ~3]) + text, "cmdline-" + src)
for text, src in grub:
    put("cmdline", text, "grub-" + src)

# memmap_diff: preset byte + the lines that hold mem= or memmap=.
for i, (text, src) in enumerate(cmdlines):
    if b"mem" in text:
        put("memmap_diff", bytes([i % 7]) + text, "cmdline-" + src)

# scenario: every scenario file.
for p in files("scenarios/**/*.toml"):
    put("scenario", read(rel(p)), rel(p))

# machine_file: the presets and the machine tables of scenario files.
for p in files("mock/machine/presets/*.toml"):
    put("machine_file", read(rel(p)), rel(p))

# paste and proc_text: the corpus of real boot logs and the captured /proc, /sys texts.
for p in files("mock/machine/corpus/*.log") + files("mock/machine/captures/*/*.txt"):
    put("paste", read(rel(p)), rel(p))
    put("proc_text", read(rel(p)), rel(p))
for p in files("mock/machine/testdata/**/*.log"):
    put("proc_text", read(rel(p)), rel(p))

# calibration: the profiles measured on the H100, and each cut to two entries per list (the
# whole profiles are 70 KB: the cut ones keep every shape at a size fuzzing can mutate quickly).
import json


def cut(node):
    if isinstance(node, list):
        return [cut(v) for v in node[:2]]
    if isinstance(node, dict):
        return {k: cut(v) for k, v in node.items()}
    return node


for p in files("mock/gpu/profiles/*.json"):
    put("calibration", read(rel(p)), rel(p))
    small = json.dumps(cut(json.loads(read(rel(p)))), indent=1).encode()
    put("calibration", small, "cut-" + rel(p))

# fuse_control: the command lines of the control file's test and usage text.
text = read("mock/fuse/control_test.cc") + read("mock/fuse/control.h")
for m in re.finditer(rb'"((?:eio|delay|refuse-mmap|refuse-open|fill|die|clear)[^"]*)"', text):
    put("fuse_control", m.group(1).replace(b"\\n", b"\n"), "control_test")
for m in re.finditer(rb"^//   ((?:eio|delay|refuse-mmap|refuse-open|fill|die|clear)\b[^\n]*?)  ", text, re.M):
    put("fuse_control", m.group(1), "control.h")

# sim_driver: small programs (open, each ioctl, a map in range and one past it, a read and a
# write through it, a close), for each driver variant of the seeds (sim_driver_fuzz.cc).
def step(op, a, b):
    return bytes([op]) + struct.pack("<QQ", a, b)


program = (step(0, 0, 0) + step(1, 0, 0) + step(1, 1, 0) + step(1, 2, 0) + step(1 | 0x80, 0x5210, 0)
           + step(2 | 0x04, 0, 3) + step(2 | 0x08 | 0x04, 0, 1 << 40) + step(3, 0, 4096)
           + step(4, 4096, 8192) + step(5, 0, 0) + step(5 | 0x80, 0, 0))
for variant in (0, 1, 8, 16, 32, 16 | 32):
    put("sim_driver", bytes([variant, variant % 4]) + program, "program-%d" % variant)

# module_signature: the signed and unsigned fixtures, each fixture's PKCS#7 message alone, and
# the module policy's texts as the tests write them.
for p in files("backends/platform/testdata/*.ko"):
    data = read(rel(p))
    put("module_signature", data, rel(p))
    if data.endswith(b"~Module signature appended~\n"):
        n = struct.unpack(">I", data[-28 - 4:-28])[0]
        put("module_signature", data[-28 - 12 - n:-28 - 12], "pkcs7-" + rel(p))
for text in (b"none [integrity] confidentiality\n", b"Y\n", b"0\n", b"\x06\x00\x00\x00\x01",
             b"0c2e8d8c I------     1 perm 1f030000     0     0 asymmetri Debian Secure Boot CA: "
             b"6ccece7e4c6c0d1f6149f3dd27dfcc5cbb419ea1: X509.rsa a7d9cc0f []\n",
             b"file: /x.ko\ncompression: xz\nsigned: yes\nsigner: DKMS module signing key\nhash: sha256\n"):
    put("module_signature", text, "policy-text")
