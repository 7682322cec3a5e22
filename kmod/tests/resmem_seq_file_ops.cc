// resmem_seq's ops on the module's files and their oracles (resmem_seq_run.h): open with every
// flag, close, ioctl (valid, wrong size, random numbers, bad pointers), read/write/pread/pwrite
// and lseek, each checked against kmod/resmem.c and the VFS code in front of it.
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstring>

#include "kmod/tests/resmem_seq_run.h"
#include "kmod/tests/resmem_seq_util.h"
#include "kmod/uapi/resmem_ioctl.h"

#ifndef O_TMPFILE
#define O_TMPFILE (020000000 | O_DIRECTORY)
#endif

namespace resmem::seq {
namespace {

// The ioctl types the VFS answers itself (fs/ioctl.c do_vfs_ioctl): left out of random numbers.
bool VfsIoctlType(unsigned type) {
  return type == 0 || type == 'T' || type == 'X' || type == 'f' || type == 0x94 || type == 'x';
}

}  // namespace

void DoOpen(Run* r, ThreadState& t, long idx, const Op& op) {
  static const int kExtra[] = {O_NONBLOCK, O_SYNC,   O_APPEND,    O_CLOEXEC,    O_NOCTTY,
                               O_DSYNC,    O_DIRECT, O_NOATIME,   O_PATH,       O_TRUNC,
                               O_CREAT,    O_EXCL,   O_DIRECTORY, O_NOFOLLOW,   O_LARGEFILE,
                               O_TMPFILE,  O_ASYNC};
  static const int kAcc[] = {O_RDONLY, O_WRONLY, O_RDWR, O_RDWR, O_RDWR, O_RDWR, 3};
  if (t.fds.size() >= 12) {  // bounded: close the oldest first
    close(t.fds.front().fd);
    t.fds.erase(t.fds.begin());
  }
  int ndev = static_cast<int>(r->w->devices.size());
  bool missing = op.p[0] % 16 == 15;
  int dev = static_cast<int>(op.p[0] % ndev);
  std::string path = missing ? "/dev/resmem7x" : r->w->devices[dev].path;
  int flags = kAcc[op.p[1] % 7];
  // Each extra flag with a chance of 1 in 16 (bits 4i..4i+3 of p[2]).
  for (size_t i = 0; i < sizeof kExtra / sizeof kExtra[0] && i < 16; ++i)
    if (((op.p[2] >> (i * 4)) & 15) == 0) flags |= kExtra[i];
  if (op.p[3] % 32 == 0) flags |= kExtra[16];
  if ((flags & O_TMPFILE) == O_TMPFILE && (op.p[3] % 4)) flags &= ~O_TMPFILE | O_DIRECTORY;  // rarer
  if (missing) flags &= ~O_CREAT;  // never create files in /dev
  // Every error that applies is allowed (their order is the kernel's business); success only
  // when none does.
  std::set<int> allowed;
  if (missing) allowed.insert(ENOENT);
  if (flags & O_PATH) {
    // fs/open.c build_open_how: O_PATH keeps only O_DIRECTORY|O_NOFOLLOW|O_CLOEXEC.
    if (flags & O_DIRECTORY) allowed.insert(ENOTDIR);
  } else {
    if ((flags & O_TMPFILE) == O_TMPFILE) allowed.insert({EINVAL, ENOTDIR, EISDIR, ENOENT, EOPNOTSUPP});
    if ((flags & O_CREAT) && (flags & O_EXCL)) allowed.insert(EEXIST);
    if (flags & O_DIRECTORY) allowed.insert({ENOTDIR, EINVAL, EISDIR});
    if (flags & O_DIRECT) allowed.insert(EINVAL);  // fs/open.c do_dentry_open: no direct_IO
  }
  int fd = open(path.c_str(), flags, 0600);
  int err = errno;
  if (!Expect(r, idx, op, Fmt("open(%s, 0%o)", path.c_str(), flags).c_str(), fd, err, allowed)) {
    if (fd >= 0) close(fd);
    return;
  }
  if (fd < 0) return;
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISCHR(st.st_mode)) {
    Failure(r, idx, &op, path + " is not a character device after open");
    close(fd);
    return;
  }
  t.fds.push_back({fd, dev, (flags & O_PATH) ? (O_PATH | O_RDONLY) : flags, 0});
}

void DoClose(Run* r, ThreadState& t, long idx, const Op& op) {
  if (t.fds.empty()) return;
  size_t i = op.p[0] % t.fds.size();
  int rc = close(t.fds[i].fd);
  Expect(r, idx, op, "close", rc, errno, {});
  t.fds.erase(t.fds.begin() + i);
}

// The ioctl types the VFS answers itself (fs/ioctl.c do_vfs_ioctl): left out of random numbers.
void DoIoctl(Run* r, ThreadState& t, long idx, const Op& op) {
  int fi = t.fds.empty() ? -1 : static_cast<int>(op.p[0] % t.fds.size());
  int fd = fi < 0 ? 1000 : t.fds[fi].fd;
  const Device* d = fi < 0 ? nullptr : &r->w->devices[t.fds[fi].dev];
  unsigned long cmd;
  switch (op.p[1] % 8) {
    case 0: cmd = RESMEM_IOC_INFO; break;
    case 1: cmd = RESMEM_IOC_LENGTH; break;
    case 2: cmd = RESMEM_IOC_PHYS; break;
    case 3: cmd = RESMEM_IOC_TEST_PIN; break;
    case 4: cmd = _IOC(_IOC_READ, RESMEM_IOC_MAGIC, 1 + op.p[3] % 3, 1 + op.p[4] % 200); break;
    case 5: cmd = _IOC(op.p[3] % 4, RESMEM_IOC_MAGIC, op.p[4] % 256, op.p[5] % 0x4000); break;
    default: {
      unsigned type = 1 + op.p[3] % 255;
      if (VfsIoctlType(type)) type = RESMEM_IOC_MAGIC;
      cmd = (op.p[1] % 8 == 6) ? _IOC(op.p[4] % 4, type, op.p[5] % 256, (op.p[5] >> 8) % 0x4000)
                               : static_cast<uint32_t>(op.p[4]);
      if (VfsIoctlType(_IOC_TYPE(cmd))) cmd = _IOC(_IOC_NONE, RESMEM_IOC_MAGIC, 200, 0);
    }
  }
  bool valid_cmd = cmd == RESMEM_IOC_INFO || cmd == RESMEM_IOC_LENGTH || cmd == RESMEM_IOC_PHYS;
  size_t want = cmd == RESMEM_IOC_INFO ? sizeof(resmem_info) : 8;
  uint64_t valid = 0;
  uint8_t* buf = PickBuffer(t, r, op.p[2], want, &valid, false);
  if (buf == t.scratch.data()) std::memset(buf, 0xa5, want);
  std::set<int> allowed;
  bool test_build = d && (d->info.flags & RESMEM_INFO_FAULT_INJECTION);
  if (fi < 0 || (t.fds[fi].flags & O_PATH)) allowed = {EBADF};
  else if (cmd == RESMEM_IOC_TEST_PIN && test_build) allowed = {EINVAL, EFAULT, ENOMEM, 0};
  else if (!valid_cmd) allowed = {ENOTTY};
  else if (valid < want) allowed = {EFAULT};
  long rc = ioctl(fd, cmd, buf);
  int err = errno;
  if (allowed.count(0)) {  // the test build's pin: any answer but a crash
    r->c->ok++;
    return;
  }
  if (!Expect(r, idx, op, Fmt("ioctl(%s, 0x%lx, %p)", d ? d->path.c_str() : "bad fd", cmd, buf).c_str(), rc, err, allowed) || rc != 0)
    return;
  // The answer must be the device's own.
  resmem_info info;
  uint64_t v;
  std::memcpy(cmd == RESMEM_IOC_INFO ? static_cast<void*>(&info) : &v, buf, want);
  bool right = cmd == RESMEM_IOC_INFO
                   ? info.abi_version == RESMEM_ABI_VERSION && info.phys_addr == d->info.phys_addr &&
                         info.size == d->info.size && std::strcmp(info.name, d->info.name) == 0
                   : v == (cmd == RESMEM_IOC_LENGTH ? d->info.size : d->info.phys_addr);
  if (!right) Failure(r, idx, &op, Fmt("ioctl 0x%lx on %s answered another device's facts", cmd, d->path.c_str()));
}

namespace {

// What a read/write op asks for: its words read against the file and the thread's stripe.
struct RwRequest {
  bool is_write, positional;
  uint64_t count;
  int64_t pos;
  uint8_t* buf;
  uint64_t valid;  // bytes of buf that can be copied (PickBuffer)
};

RwRequest PlanReadWrite(Run* r, ThreadState& t, const Op& op, const Fd& f, uint64_t size) {
  RwRequest q{op.kind == kWrite || op.kind == kPwrite, op.kind == kPread || op.kind == kPwrite, 0, 0, nullptr, 0};
  uint64_t lo, hi;
  Stripe(t, size, &lo, &hi);
  switch (op.p[1] % 5) {
    case 0: q.count = 0; break;
    case 1: q.count = 1 + op.p[1] / 5 % 16; break;
    case 2: q.count = kPage; break;
    default: q.count = 1 + op.p[1] / 5 % t.scratch.size(); break;
  }
  q.pos = q.positional ? 0 : static_cast<int64_t>(f.pos);
  if (q.positional) {
    switch (op.p[2] % 6) {
      case 0: q.pos = -static_cast<int64_t>(1 + op.p[2] / 6 % 4096); break;
      case 1: q.pos = static_cast<int64_t>(size); break;
      case 2: q.pos = static_cast<int64_t>(size + op.p[2] / 6 % (1ull << 40)); break;
      default: q.pos = static_cast<int64_t>(op.p[2] / 6 % size); break;
    }
  }
  // Writes stay in the thread's stripe: a write that would land elsewhere becomes a pwrite there.
  if (q.is_write && !(f.flags & O_APPEND) && q.pos >= 0 && static_cast<uint64_t>(q.pos) < size && Writable(f)) {
    if (static_cast<uint64_t>(q.pos) < lo || static_cast<uint64_t>(q.pos) >= hi) {
      q.positional = true;
      q.pos = static_cast<int64_t>(lo + op.p[3] % (hi - lo));
    }
    q.count = std::min<uint64_t>(q.count, hi - static_cast<uint64_t>(q.pos));
  }
  q.buf = PickBuffer(t, r, op.p[4], q.count, &q.valid, q.is_write);
  uint64_t pattern = op.p[5];
  if (q.is_write && q.buf == t.scratch.data())
    for (uint64_t k = 0; k < q.count; ++k)
      q.buf[k] = static_cast<uint8_t>(pattern >> (k % 8 * 8)) ^ static_cast<uint8_t>(k);
  return q;
}

// The outcomes a read/write may have: an errno of `allowed`, or expect_n bytes moved; with
// range_ok a count in [1, valid] too (a partial copy before a fault).
struct RwOracle {
  std::set<int> allowed;
  bool range_ok = true;
  uint64_t expect_n = 0;
};

// fs/read_write.c: ksys_pread64 (pos < 0), vfs_read/vfs_write (FMODE, access_ok,
// rw_verify_area), then the module's fixed-size file.
RwOracle ReadWriteOracle(const RwRequest& q, const Fd& f, uint64_t size) {
  RwOracle o;
  const bool append = f.flags & O_APPEND;
  const bool kernel_ptr = reinterpret_cast<uint64_t>(q.buf) >= 0x800000000000ull;
  const uint64_t pos = static_cast<uint64_t>(q.pos);
  if (q.positional && q.pos < 0) o.allowed = {EINVAL};
  else if ((f.flags & O_PATH) || (q.is_write ? !Writable(f) : !Readable(f))) o.allowed = {EBADF};
  else if (kernel_ptr) o.allowed = {EFAULT};
  else if (pos + q.count > static_cast<uint64_t>(INT64_MAX)) o.allowed = {EINVAL};
  else if (q.count == 0) o.expect_n = 0;
  else if (q.is_write && (append || pos >= size)) o.allowed = {ENOSPC};
  else if (!q.is_write && pos >= size) o.expect_n = 0;
  else {
    o.expect_n = std::min<uint64_t>(q.count, size - pos);
    if (q.valid < o.expect_n) {
      o.allowed = {EFAULT};
      o.range_ok = q.valid > 0;
    }
  }
  return o;
}

// After a write of rc bytes from the scratch buffer: pread through a readable fd of the device
// must give them back.
void VerifyWritten(Run* r, const ThreadState& t, long idx, const Op& op, const Fd& f, const RwRequest& q,
                   ssize_t rc, const std::string& what) {
  std::vector<uint8_t> back(rc);
  int rfd = FindFd(t, f.dev, true, false);
  if (rfd < 0) return;
  ssize_t got = pread(t.fds[rfd].fd, back.data(), rc, q.pos);
  if (got != rc || std::memcmp(back.data(), q.buf, rc) != 0) {
    Failure(r, idx, &op, what + Fmt(": pread of the %zd bytes written returned %zd and %s", rc, got,
                                    got == rc ? "different bytes" : "a short count"));
    return;
  }
  r->c->bytes_verified += rc;
}

}  // namespace

// read, write, pread, pwrite: the module's fixed-size-file rules (kmod/resmem.c resmem_read/write).
void DoReadWrite(Run* r, ThreadState& t, long idx, const Op& op) {
  int fi = t.fds.empty() ? -1 : static_cast<int>(op.p[0] % t.fds.size());
  if (fi < 0) {
    char c = 0;
    bool is_write = op.kind == kWrite || op.kind == kPwrite;
    long rc = is_write ? write(1000, &c, 1) : read(1000, &c, 1);
    Expect(r, idx, op, "read/write on a closed fd", rc, errno, {EBADF});
    return;
  }
  Fd& f = t.fds[fi];
  const Device& d = r->w->devices[f.dev];
  const RwRequest q = PlanReadWrite(r, t, op, f, d.info.size);
  const RwOracle o = ReadWriteOracle(q, f, d.info.size);
  ssize_t rc = q.is_write ? (q.positional ? pwrite(f.fd, q.buf, q.count, q.pos) : write(f.fd, q.buf, q.count))
                          : (q.positional ? pread(f.fd, q.buf, q.count, q.pos) : read(f.fd, q.buf, q.count));
  int err = errno;
  std::string what =
      Fmt("%s(%s, %p, %" PRIu64 ", pos %" PRId64 ")", KindName(op.kind), d.path.c_str(), q.buf, q.count, q.pos);
  if (rc >= 0 && !o.allowed.empty() && o.range_ok && o.allowed.count(EFAULT) && static_cast<uint64_t>(rc) >= 1 &&
      static_cast<uint64_t>(rc) <= q.valid) {
    r->c->ok++;
  } else if (!Expect(r, idx, op, what.c_str(), rc, err, o.allowed)) {
    return;
  } else if (rc >= 0 && static_cast<uint64_t>(rc) != o.expect_n) {
    Failure(r, idx, &op, what + Fmt(" moved %zd bytes, expected %" PRIu64, rc, o.expect_n));
    return;
  }
  if (rc > 0 && !q.positional) f.pos = static_cast<uint64_t>(q.pos) + rc;
  if (rc > 0 && q.is_write && q.buf == t.scratch.data()) VerifyWritten(r, t, idx, op, f, q, rc, what);  // read it back
}

void DoLseek(Run* r, ThreadState& t, long idx, const Op& op) {
  if (t.fds.empty()) return;
  Fd& f = t.fds[op.p[0] % t.fds.size()];
  int64_t size = static_cast<int64_t>(r->w->devices[f.dev].info.size);
  static const int kWhence[] = {SEEK_SET, SEEK_CUR, SEEK_END, SEEK_DATA, SEEK_HOLE, 7};
  int whence = kWhence[op.p[1] % 6];
  int64_t off;
  switch (op.p[2] % 7) {
    case 0: off = 0; break;
    case 1: off = static_cast<int64_t>(op.p[2] / 7 % size); break;
    case 2: off = size; break;
    case 3: off = -static_cast<int64_t>(op.p[2] / 7 % (2 * size)); break;
    case 4: off = static_cast<int64_t>(op.p[2] / 7 % (1ull << 50)); break;
    case 5: off = INT64_MAX - static_cast<int64_t>(op.p[2] / 7 % 4096); break;
    default: off = static_cast<int64_t>(op.p[2] / 7 % size) & ~static_cast<int64_t>(kPage - 1); break;
  }
  // fs/read_write.c generic_file_llseek_size with eof = the range's size, maxsize MAX_LFS_FILESIZE.
  std::set<int> allowed;
  int64_t cur = static_cast<int64_t>(f.pos), want = 0;
  if (f.flags & O_PATH) allowed = {EBADF};
  else {
    __int128 np = 0;
    switch (whence) {
      case SEEK_SET: np = off; break;
      case SEEK_CUR: np = off == 0 ? cur : static_cast<__int128>(cur) + off; break;
      case SEEK_END: np = static_cast<__int128>(size) + off; break;
      case SEEK_DATA: if (off < 0 || off >= size) allowed = {ENXIO}; np = off; break;
      case SEEK_HOLE: if (off < 0 || off >= size) allowed = {ENXIO}; np = size; break;
      default: allowed = {EINVAL};
    }
    if (allowed.empty() && (np < 0 || np > INT64_MAX)) allowed = {EINVAL};
    want = static_cast<int64_t>(np);
  }
  off_t rc = lseek(f.fd, off, whence);
  if (!Expect(r, idx, op, Fmt("lseek(%" PRId64 ", %d) from %" PRId64, off, whence, cur).c_str(), rc, errno, allowed) || rc < 0)
    return;
  if (rc != want) {
    Failure(r, idx, &op, Fmt("lseek(%" PRId64 ", %d) from %" PRId64 " returned %" PRId64 ", expected %" PRId64, off, whence,
                             cur, static_cast<int64_t>(rc), want));
    return;
  }
  f.pos = static_cast<uint64_t>(rc);
}


}  // namespace resmem::seq
