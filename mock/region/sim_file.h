// The simulated /dev/resmemN as a program's system calls meet it: an open file description with
// kmod/resmem.c's file operations (read, write, llseek, mmap, ioctl) and the VFS rules around them
// (fs/open.c, fs/namei.c, fs/read_write.c, fs/stat.c, mm/mmap.c). The sim driver (sim_driver.h)
// has no file descriptor; this gives its device the same answers as the module's, operation by
// operation (docs/parity.md has the table; mock/parity's probe runs it).
#ifndef RESMEM_MOCK_REGION_SIM_FILE_H_
#define RESMEM_MOCK_REGION_SIM_FILE_H_

#include <cstdint>
#include <memory>
#include <string>

#include "backends/api/region.h"
#include "mock/sim/sim_world.h"

namespace resmem::sim {

// Errors are Status::Errno with the errno the real calls give; messages name the rule.
class SimDeviceFile {
 public:
  // open(2) of `path` on the sim driver's `provider` (MakeSimRegionProvider over `world`) with the
  // host's O_* `flags`:
  //   - the path is resolved first: unknown ENOENT, a range the driver refused: its load errno;
  //   - O_CREAT|O_EXCL of the existing node EEXIST (fs/namei.c open_last_lookups);
  //   - O_TRUNC is dropped for anything but a regular file (fs/namei.c do_open);
  //   - O_DIRECT EINVAL: a char device's mapping has no direct_IO (fs/open.c do_dentry_open);
  //   - O_SYNC and O_APPEND are kept (O_SYNC changes nothing: the cache type is the device's).
  static Result<std::unique_ptr<SimDeviceFile>> Open(std::shared_ptr<SimWorld> world,
                                                     RegionProvider& provider,
                                                     const std::string& path, int flags);

  // read(2)/write(2) at the file position (kmod/resmem.c resmem_read/resmem_write): a descriptor
  // without FMODE_READ/FMODE_WRITE EBADF (fs/read_write.c vfs_read/vfs_write); zero bytes 0;
  // reads stop at the end (short, 0 at or past it); writes are cut at the end (short), start at
  // the end with O_APPEND, and fail ENOSPC at or past the end. Fault points region.read /
  // region.write over the physical span.
  Result<uint64_t> Read(void* buf, uint64_t count);
  Result<uint64_t> Write(const void* buf, uint64_t count);
  // lseek(2) (kmod/resmem.c resmem_llseek = fs/read_write.c generic_file_llseek_size with the
  // range's size as the end): SEEK_SET/CUR/END, past the end allowed, negative EINVAL;
  // SEEK_DATA: the offset, SEEK_HOLE: the size, both ENXIO at or past the end; other whence
  // EINVAL.
  Result<int64_t> Seek(int64_t offset, int whence);

  // fstat(2) of the devtmpfs node: a character device of size 0 (the size is RESMEM_IOC_LENGTH).
  struct Stat {
    bool char_device = true;
    uint64_t size = 0;
  };
  Stat Fstat() const { return Stat(); }

  // mmap(2): PROT_READ needs FMODE_READ (EACCES, mm/mmap.c do_mmap), then the driver's Map.
  Result<std::unique_ptr<HostMemory>> Map(uint64_t offset, uint64_t length, bool prot_write,
                                          bool shared);
  // ioctl(2): the driver's.
  Status Ioctl(unsigned long cmd, void* arg) { return handle_->Ioctl(cmd, arg); }

 private:
  SimDeviceFile() = default;
  std::shared_ptr<SimWorld> world_;
  std::unique_ptr<RegionHandle> handle_;
  std::string path_;
  uint64_t phys_ = 0;
  uint64_t size_ = 0;
  bool readable_ = true;
  bool writable_ = true;
  bool append_ = false;
  int64_t pos_ = 0;
};

}  // namespace resmem::sim

#endif  // RESMEM_MOCK_REGION_SIM_FILE_H_
