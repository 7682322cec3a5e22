#include "mock/region/sim_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>

namespace resmem::sim {
namespace {

// fs/read_write.c: MAX_RW_COUNT, the most one read/write moves.
constexpr uint64_t kMaxRwCount = INT_MAX & ~4095ull;
// include/linux/fs.h MAX_LFS_FILESIZE on 64-bit: the largest position lseek gives.
constexpr int64_t kMaxLfsFileSize = LLONG_MAX;

// Fault point `point` over the physical span of a read(2)/write(2). The copy runs in the kernel,
// so no signal reaches the caller: a signal effect (a bus error in the range) is EIO, as the FUSE
// daemon answers it (mock/fuse/fuse_daemon.cc InjectorCheck). A delay is charged to the clock.
Status CheckFault(SimWorld& world, const char* point, uint64_t phys, uint64_t len) {
  const FaultOutcome f = world.faults->Check(point, phys, len);
  if (!f.fired) return Status::Ok();
  if (f.effect == FaultEffect::kError) return f.status;
  if (f.effect == FaultEffect::kSignal)
    return Status::Errno(EIO, std::string(point) + ": " + f.status.message() +
                                  " (a bus error under read/write is EIO)");
  if (f.effect == FaultEffect::kDelay) world.clock->Charge(f.delay_seconds);
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<SimDeviceFile>> SimDeviceFile::Open(std::shared_ptr<SimWorld> world,
                                                           RegionProvider& provider,
                                                           const std::string& path, int flags) {
  const int acc = flags & O_ACCMODE;
  if (acc == O_ACCMODE)
    return Status::Errno(EINVAL, "open " + path + ": access mode 3 is not O_RDONLY, O_WRONLY "
                                                  "or O_RDWR");
  // The node exists: O_CREAT alone opens it, with O_EXCL it is EEXIST before the driver is asked
  // (fs/namei.c open_last_lookups -> do_open: "if ((open_flag & O_EXCL) && !(file->f_mode &
  // FMODE_CREATED))").
  if ((flags & O_CREAT) && (flags & O_EXCL)) {
    RESMEM_ASSIGN_OR_RETURN(std::vector<std::string> present, provider.List());
    for (const std::string& p : present)
      if (p == path)
        return Status::Errno(EEXIST, "open " + path + ": O_CREAT|O_EXCL of an existing device node");
  }
  OpenRequest req;
  req.path = path;
  req.sync = (flags & O_SYNC) == O_SYNC;
  req.writable = acc != O_RDONLY;
  RESMEM_ASSIGN_OR_RETURN(std::unique_ptr<RegionHandle> handle, provider.Open(req));
  // fs/open.c do_dentry_open: O_DIRECT needs the mapping's direct_IO (FMODE_CAN_ODIRECT); a char
  // device's inode has none.
  if (flags & O_DIRECT)
    return Status::Errno(EINVAL, "open " + path + ": O_DIRECT is for files and block devices; "
                                                  "a character device has no direct I/O");
  RESMEM_ASSIGN_OR_RETURN(RegionInfo info, handle->Info());
  std::unique_ptr<SimDeviceFile> f(new SimDeviceFile());
  f->world_ = std::move(world);
  f->handle_ = std::move(handle);
  f->path_ = path;
  f->phys_ = info.phys_addr;
  f->size_ = info.size;
  f->readable_ = acc != O_WRONLY;
  f->writable_ = acc != O_RDONLY;
  f->append_ = (flags & O_APPEND) != 0;
  return f;
}

Result<uint64_t> SimDeviceFile::Read(void* buf, uint64_t count) {
  if (!readable_)
    return Status::Errno(EBADF, "read " + path_ + ": the descriptor was opened O_WRONLY");
  count = std::min(count, kMaxRwCount);
  if (count == 0 || static_cast<uint64_t>(pos_) >= size_) return uint64_t{0};
  const uint64_t n = std::min(count, size_ - static_cast<uint64_t>(pos_));
  if (Status st = CheckFault(*world_, "region.read", phys_ + pos_, n); !st.ok()) return st;
  world_->memory.Read(phys_ + pos_, buf, n);
  pos_ += static_cast<int64_t>(n);
  return n;
}

Result<uint64_t> SimDeviceFile::Write(const void* buf, uint64_t count) {
  if (!writable_)
    return Status::Errno(EBADF, "write " + path_ + ": the descriptor was opened O_RDONLY");
  count = std::min(count, kMaxRwCount);
  if (count == 0) return uint64_t{0};
  // O_APPEND: the position is the end (mm/filemap.c generic_write_checks_count, as for a block
  // device's fixed size).
  const uint64_t at = append_ ? size_ : static_cast<uint64_t>(pos_);
  // block/fops.c blkdev_write_iter: "if (iocb->ki_pos >= size) return -ENOSPC;"
  if (at >= size_)
    return Status::Errno(ENOSPC, "write " + path_ + ": position is at or past the end of the "
                                                    "device; its size is fixed");
  const uint64_t n = std::min(count, size_ - at);
  if (Status st = CheckFault(*world_, "region.write", phys_ + at, n); !st.ok()) return st;
  world_->memory.Write(phys_ + at, buf, n);
  pos_ = static_cast<int64_t>(at + n);
  return n;
}

Result<int64_t> SimDeviceFile::Seek(int64_t offset, int whence) {
  const int64_t eof = static_cast<int64_t>(size_);
  int64_t to = 0;
  switch (whence) {
    case SEEK_SET:
      to = offset;
      break;
    case SEEK_CUR:
      if (__builtin_add_overflow(pos_, offset, &to))
        return Status::Errno(EINVAL, "lseek " + path_ + ": position overflows");
      break;
    case SEEK_END:
      if (__builtin_add_overflow(eof, offset, &to))
        return Status::Errno(EINVAL, "lseek " + path_ + ": position overflows");
      break;
    case SEEK_DATA:
      // The whole device is data.
      if (offset < 0 || offset >= eof)
        return Status::Errno(ENXIO, "lseek " + path_ + ": SEEK_DATA at or past the end");
      to = offset;
      break;
    case SEEK_HOLE:
      if (offset < 0 || offset >= eof)
        return Status::Errno(ENXIO, "lseek " + path_ + ": SEEK_HOLE at or past the end");
      to = eof;
      break;
    default:
      return Status::Errno(EINVAL, "lseek " + path_ + ": whence " + std::to_string(whence) +
                                       " is not SEEK_SET, SEEK_CUR, SEEK_END, SEEK_DATA or "
                                       "SEEK_HOLE");
  }
  // fs/read_write.c vfs_setpos: negative or beyond maxsize EINVAL.
  if (to < 0 || to > kMaxLfsFileSize)
    return Status::Errno(EINVAL, "lseek " + path_ + ": position " + std::to_string(to) +
                                     " is negative");
  pos_ = to;
  return to;
}

Result<std::unique_ptr<HostMemory>> SimDeviceFile::Map(uint64_t offset, uint64_t length,
                                                       bool prot_write, bool shared) {
  // mm/mmap.c do_mmap: every file mapping needs a descriptor open for reading (checked after the
  // length and the offset's alignment, which the driver's Map checks first).
  if (!readable_ && length != 0 && offset % 4096 == 0)
    return Status::Errno(EACCES, "mmap " + path_ + ": the descriptor was opened O_WRONLY");
  MapRequest req;
  req.offset = offset;
  req.length = length;
  req.writable = prot_write;
  req.shared = shared;
  return handle_->Map(req);
}

}  // namespace resmem::sim
