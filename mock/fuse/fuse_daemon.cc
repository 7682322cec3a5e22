#include "mock/fuse/fuse_daemon.h"
#include "backends/api/uapi_info.h"

#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <linux/fuse.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <mutex>
#include <sstream>
#include <thread>

#include "kmod/uapi/resmem_ioctl.h"
#include "mock/fuse/control.h"

namespace resmem::fuse_emu {
namespace {

constexpr fuse_ino_t kRootIno = FUSE_ROOT_ID;  // 1
constexpr fuse_ino_t kControlIno = 2;
constexpr fuse_ino_t kFirstDeviceIno = 3;
constexpr double kAttrTimeout = 1.0;

// FUSE passthrough, kernel ABI 7.40 (include/uapi/linux/fuse.h of Linux 6.9+). The system's
// linux/fuse.h (7.38) and libfuse 3.14 predate it (libfuse has it from 3.17:
// fuse_passthrough_open), so the daemon speaks it itself: the INIT reply's flags2 and
// max_stack_depth, the open reply's backing_id, and the /dev/fuse ioctl that registers a file.
constexpr uint64_t kInitPassthrough = 1ull << 37;   // FUSE_PASSTHROUGH
constexpr uint32_t kOpenPassthrough = 1u << 7;      // FOPEN_PASSTHROUGH
constexpr size_t kInitOutFlags2At = 32;             // fuse_init_out.flags2
constexpr size_t kInitOutMaxStackDepthAt = 36;      // fuse_init_out.max_stack_depth
constexpr size_t kOpenOutBackingIdAt = 12;          // fuse_open_out.backing_id (was padding)
// The 7.38 header's layouts agree where the fields were padding then.
static_assert(offsetof(fuse_init_out, flags2) == kInitOutFlags2At, "fuse_init_out layout");
static_assert(sizeof(fuse_init_out) >= kInitOutMaxStackDepthAt + 4, "fuse_init_out size");
static_assert(sizeof(fuse_open_out) == kOpenOutBackingIdAt + 4, "fuse_open_out layout");
struct BackingMap {                                  // struct fuse_backing_map
  int32_t fd;
  uint32_t flags;
  uint64_t padding;
};
constexpr unsigned long kDevIocBackingOpen = _IOW(229, 1, BackingMap);  // FUSE_DEV_IOC_BACKING_OPEN

// The file handle (fuse_file_info::fh) says how a device file was opened, for the release.
enum FileMode : uint64_t { kDaemonFile = 1, kPassthroughFile = 2, kDirectFile = 3 };

// The open reply being sent on this thread carries this backing id (0: none): fuse_reply_open
// calls the session's writev on the calling thread, where IoWritev adds it.
thread_local int32_t tls_open_backing_id = 0;

struct Range {
  uint64_t start = 0, end = 0;  // [start, end)
  uint64_t delay_us = 0;
  bool Meets(uint64_t off, uint64_t len) const { return off < end && start < off + len; }
};

struct DeviceFaults {
  std::vector<Range> eio;
  std::vector<Range> delay;
  bool refuse_mmap = false;
  int refuse_open = 0;
};

struct ServedDevice {
  std::string name;  // "resmem0"
  std::string path;  // the provider's path, "/dev/resmem0"
  RegionInfo info;
  std::unique_ptr<RegionHandle> handle;
  std::unique_ptr<HostMemory> memory;
  Status unavailable;  // non-OK: the provider could not open or map it
  DeviceFaults faults;
  // Passthrough (guarded by State::mu): the kernel's id for the device's file (0: not registered
  // yet, < 0: cannot be, see passthrough_note), and the open files in each mode. The kernel
  // refuses a daemon-path open while a passthrough file of the inode is open and the reverse
  // (fs/fuse/iomode.c fuse_file_io_open: EIO), so an open follows the mode of those already open.
  int32_t backing_id = 0;
  std::string passthrough_note = "not tried yet";
  uint64_t passthrough_files = 0, daemon_files = 0;
  bool FaultArmed() const { return !faults.eio.empty() || !faults.delay.empty() || faults.refuse_mmap; }
};

int ErrnoOf(const Status& s) { return s.space() == ErrorSpace::kErrno && s.code() > 0 ? s.code() : EIO; }

}  // namespace

struct FuseDaemon::State {
  DaemonOptions options;
  std::vector<ServedDevice> devices;
  fuse_session* session = nullptr;
  std::string mount_dir;
  bool mounted = false;
  time_t start_time = time(nullptr);

  std::mutex mu;  // guards every DeviceFaults and last_error; never held across a notify
  std::string last_error;
  std::vector<std::string> applied;  // control commands that took effect, in order

  std::atomic<uint64_t> reads{0}, read_bytes{0}, writes{0}, write_bytes{0}, ioctls{0},
      opens{0}, refused_opens{0}, eio_replies{0}, delayed_reads{0}, passthrough_opens{0};

  // What the kernel's INIT request offered and what the reply asked for (IoRead/IoWritev).
  int fuse_fd = -1;
  uint64_t init_unique = 0;
  bool init_seen = false;
  uint32_t init_minor = 0;
  uint64_t init_flags = 0;  // flags | flags2 << 32
  bool passthrough_requested = false;
  std::atomic<bool> passthrough_granted{false};
  std::string PassthroughLine() const {
    std::ostringstream o;
    o << "passthrough: ";
    if (!options.passthrough) {
      o << "off (DaemonOptions::passthrough = false)";
    } else if (!init_seen) {
      o << "unknown (no INIT seen)";
    } else if (!(init_flags & kInitPassthrough)) {
      o << "unavailable: the kernel's INIT (7." << init_minor << ", flags 0x" << std::hex
        << init_flags << std::dec
        << ") does not offer FUSE_PASSTHROUGH (Linux 6.9+ with CONFIG_FUSE_PASSTHROUGH)";
    } else if (!passthrough_requested) {
      o << "not requested: the INIT reply could not carry it (FUSE_INIT_EXT missing, or "
           "writeback cache on)";
    } else {
      o << "requested in the INIT reply (kernel 7." << init_minor << " offered FUSE_PASSTHROUGH)";
      if (passthrough_granted) {
        // The kernel registers a backing file only on a connection whose INIT reply it accepted
        // with FUSE_PASSTHROUGH (fs/fuse/passthrough.c fuse_backing_open: EOPNOTSUPP otherwise).
        o << "; granted: FUSE_DEV_IOC_BACKING_OPEN accepted";
      }
    }
    return o.str();
  }

  // True when the scenario's injector may fire at a point the kernel would no longer ask the
  // daemon about (reads and writes of pages) if the file were opened for passthrough.
  bool InjectorWantsIo() const {
    if (!options.faults) return false;
    for (const auto& r : options.faults->rules()) {
      if (r.point == "region.read" || r.point == "region.write") return true;
    }
    return false;
  }

  // Registers the device's file with the kernel once (FUSE_DEV_IOC_BACKING_OPEN, which the kernel
  // grants only after an INIT reply with FUSE_PASSTHROUGH, to CAP_SYS_ADMIN: fs/fuse/passthrough.c
  // fuse_backing_open). Returns the id, or 0 when the device cannot use passthrough. Under mu.
  int32_t BackingId(ServedDevice& d) {
    if (d.backing_id != 0) return d.backing_id > 0 ? d.backing_id : 0;
    d.backing_id = -1;
    if (!passthrough_requested) {
      d.passthrough_note = "not requested at INIT";
      return 0;
    }
    std::optional<HostMemory::FileSpan> span = d.memory ? d.memory->file_span() : std::nullopt;
    if (!span || span->fd < 0) {
      d.passthrough_note = "its memory is not a plain file (pages come from the provider on request)";
      return 0;
    }
    if (span->offset != 0) {
      d.passthrough_note = "its memory starts at offset " + std::to_string(span->offset) +
                           " of its file; passthrough maps the file at the device's offsets";
      return 0;
    }
    BackingMap map{span->fd, 0, 0};
    int id = ioctl(fuse_fd, kDevIocBackingOpen, &map);
    if (id <= 0) {
      d.passthrough_note = std::string("FUSE_DEV_IOC_BACKING_OPEN refused: ") + std::strerror(errno);
      return 0;
    }
    d.backing_id = id;
    passthrough_granted = true;
    d.passthrough_note = "backing id " + std::to_string(id);
    return id;
  }

  ServedDevice* Device(fuse_ino_t ino) {
    if (ino < kFirstDeviceIno || ino - kFirstDeviceIno >= devices.size()) return nullptr;
    return &devices[ino - kFirstDeviceIno];
  }
  ServedDevice* DeviceNamed(const std::string& name) {
    for (auto& d : devices) {
      if (d.name == name) return &d;
    }
    return nullptr;
  }
  fuse_ino_t InoOf(const ServedDevice& d) const { return kFirstDeviceIno + (&d - devices.data()); }

  void Attr(fuse_ino_t ino, struct stat* st) {
    std::memset(st, 0, sizeof *st);
    st->st_ino = ino;
    st->st_uid = geteuid();  // the daemon's owner, who alone may reach the mount (Mount)
    st->st_gid = getegid();
    st->st_atime = st->st_mtime = st->st_ctime = start_time;
    st->st_blksize = 4096;
    if (ino == kRootIno) {
      st->st_mode = S_IFDIR | 0755;
      st->st_nlink = 2;
    } else if (ino == kControlIno) {
      st->st_mode = S_IFREG | 0600;
      st->st_nlink = 1;
    } else if (ServedDevice* d = Device(ino)) {
      st->st_mode = S_IFREG | 0660;
      st->st_nlink = 1;
      st->st_size = static_cast<off_t>(d->info.size);
      st->st_blocks = static_cast<blkcnt_t>((d->info.size + 511) / 512);
    }
  }

  // Fault points of the scenario's injector. Returns 0 to go on, or the errno to reply with.
  int InjectorCheck(const char* point, const ServedDevice& d, uint64_t off, uint64_t len) {
    if (!options.faults) return 0;
    FaultOutcome o = options.faults->Check(point, d.info.phys_addr + off, len);
    if (!o.fired) return 0;
    switch (o.effect) {
      case FaultEffect::kDelay:
        std::this_thread::sleep_for(std::chrono::duration<double>(o.delay_seconds));
        return 0;
      case FaultEffect::kError:
        return ErrnoOf(o.status);
      default:
        // A signal or corruption on the device side reaches a FUSE client as EIO (FACTS.md: EIO
        // from read is what becomes SIGBUS through a mapping).
        return EIO;
    }
  }

  std::string StatusText() {
    std::ostringstream o;
    o << "resmem fuse daemon pid " << getpid() << "\n";
    for (auto& d : devices) {
      o << "device " << d.name << " " << d.info.Describe();
      if (!d.unavailable.ok()) o << " UNAVAILABLE: " << d.unavailable.ToString();
      o << "\n";
    }
    {
      std::lock_guard<std::mutex> lock(mu);
      for (auto& d : devices) {
        for (auto& r : d.faults.eio) o << "fault eio " << d.name << " " << r.start << " " << r.end - r.start << "\n";
        for (auto& r : d.faults.delay)
          o << "fault delay " << d.name << " " << r.start << " " << r.end - r.start << " " << r.delay_us << "\n";
        if (d.faults.refuse_mmap) o << "fault refuse-mmap " << d.name << "\n";
        if (d.faults.refuse_open) o << "fault refuse-open " << d.name << " " << ErrnoName(d.faults.refuse_open) << "\n";
      }
      for (auto& a : applied) o << "applied " << a << "\n";
      o << "last_error: " << (last_error.empty() ? "none" : last_error) << "\n";
    }
    o << PassthroughLine() << "\n";
    {
      std::lock_guard<std::mutex> lock(mu);
      for (auto& d : devices) {
        o << "io " << d.name << " passthrough_files=" << d.passthrough_files
          << " daemon_files=" << d.daemon_files << " (" << d.passthrough_note << ")\n";
      }
    }
    // What the device's memory is and the page size a mapping of it gets, with the reason: a
    // passthrough mapping is that file's own mapping (docs/fuse.md "Cold read").
    for (auto& d : devices) {
      std::optional<HostMemory::FileSpan> span = d.memory ? d.memory->file_span() : std::nullopt;
      o << "backing " << d.name << " ";
      if (!span || span->fd < 0) {
        o << "the provider's own memory, not a file (the daemon path only)\n";
      } else {
        o << (span->backing.empty() ? "a file (the provider does not say which)" : span->backing)
          << "\n";
      }
    }
    o << "counters reads=" << reads << " read_bytes=" << read_bytes << " writes=" << writes
      << " write_bytes=" << write_bytes << " ioctls=" << ioctls << " opens=" << opens
      << " refused_opens=" << refused_opens << " eio_replies=" << eio_replies
      << " delayed_reads=" << delayed_reads << " passthrough_opens=" << passthrough_opens << "\n";
    o << "commands:\n" << ControlUsage();
    return o.str();
  }

  // A fault cannot reach a file the kernel serves by passthrough: its mapping is the device's
  // file itself, and no request comes to the daemon. So a fault is armed only while no passthrough
  // file of the device is open; opens made while it is armed take the daemon path. Releases come
  // to the daemon after close(2) returns (fs/fuse/file.c fuse_file_put sends them in the
  // background): a close just made is waited for, up to 1 s.
  Status RefuseWhilePassthrough(const ControlCommand& c, const ServedDevice& d) {
    for (int i = 0; i < 500; ++i) {
      {
        std::lock_guard<std::mutex> lock(mu);
        if (d.passthrough_files == 0) return Status::Ok();
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    std::lock_guard<std::mutex> lock(mu);
    if (d.passthrough_files == 0) return Status::Ok();
    return Status::Error(
        kFailedPrecondition,
        "'" + c.Describe() + "': " + d.name + " has " + std::to_string(d.passthrough_files) +
            " file(s) open for passthrough (memory speed): the kernel maps them without the daemon, "
            "so a fault cannot reach them. Arm faults before the program opens the device, or "
            "mount with passthrough off (MountOptions::passthrough = false)");
  }

  // Applies parsed commands. Cached pages are dropped after the lock is released: the kernel may
  // write dirty pages back to us while invalidating (fuse_lowlevel.h: never notify while holding
  // a lock an operation needs).
  Status Apply(const std::vector<ControlCommand>& commands, bool* die) {
    struct Inval {
      fuse_ino_t ino;
      uint64_t off, len;
    };
    std::vector<Inval> invals;
    for (const auto& c : commands) {
      ServedDevice* d = nullptr;
      if (!c.device.empty()) {
        d = DeviceNamed(c.device);
        if (!d) {
          std::string names;
          for (auto& x : devices) names += (names.empty() ? "" : ", ") + x.name;
          return Status::InvalidArgument("'" + c.Describe() + "': no device '" + c.device +
                                         "' in this mount; devices: " + names);
        }
        if ((c.verb == ControlVerb::kEio || c.verb == ControlVerb::kDelay ||
             c.verb == ControlVerb::kFill) &&
            (c.offset >= d->info.size || c.length > d->info.size - c.offset)) {
          return Status::InvalidArgument("'" + c.Describe() + "': range is outside " + d->name +
                                         " (" + std::to_string(d->info.size) +
                                         " bytes): keep OFFSET+LENGTH within the size");
        }
      }
      if (c.verb == ControlVerb::kEio || c.verb == ControlVerb::kDelay ||
          c.verb == ControlVerb::kRefuseMmap) {
        Status busy = RefuseWhilePassthrough(c, *d);
        if (!busy.ok()) return busy;
      }
      switch (c.verb) {
        case ControlVerb::kEio: {
          std::lock_guard<std::mutex> lock(mu);
          d->faults.eio.push_back({c.offset, c.offset + c.length, 0});
          invals.push_back({InoOf(*d), c.offset, c.length});
          break;
        }
        case ControlVerb::kDelay: {
          std::lock_guard<std::mutex> lock(mu);
          d->faults.delay.push_back({c.offset, c.offset + c.length, c.delay_us});
          invals.push_back({InoOf(*d), c.offset, c.length});
          break;
        }
        case ControlVerb::kRefuseMmap: {
          std::lock_guard<std::mutex> lock(mu);
          d->faults.refuse_mmap = true;
          break;
        }
        case ControlVerb::kRefuseOpen: {
          std::lock_guard<std::mutex> lock(mu);
          d->faults.refuse_open = c.error;
          break;
        }
        case ControlVerb::kFill: {
          if (!d->memory) {
            return Status::Unavailable("'" + c.Describe() + "': " + d->name +
                                       " is unavailable: " + d->unavailable.ToString());
          }
          // The producer writes in 1 MiB pieces so a fill of a large range needs no large buffer.
          std::vector<uint64_t> words;
          for (uint64_t done = 0; done < c.length;) {
            uint64_t n = std::min<uint64_t>(c.length - done, 1 << 20);
            words.resize(n / 8);
            uint64_t first = (c.offset + done) / 8;
            for (uint64_t k = 0; k < words.size(); ++k) words[k] = FillPatternWord(c.seed, first + k);
            Status st = d->memory->Write(c.offset + done, words.data(), n);
            if (!st.ok()) return st.WithContext("'" + c.Describe() + "'");
            done += n;
          }
          invals.push_back({InoOf(*d), c.offset, c.length});
          break;
        }
        case ControlVerb::kDie:
          *die = true;
          break;
        case ControlVerb::kClear: {
          std::lock_guard<std::mutex> lock(mu);
          for (auto& x : devices) {
            if (d && &x != d) continue;
            for (auto& r : x.faults.delay) invals.push_back({InoOf(x), r.start, r.end - r.start});
            x.faults = DeviceFaults();
          }
          break;
        }
      }
      std::lock_guard<std::mutex> lock(mu);
      applied.push_back(c.Describe());
    }
    for (const auto& v : invals) {
      // Makes the daemon-side change visible to existing mappings (FACTS.md "FUSE": seen by a
      // mapping only after fuse_lowlevel_notify_inval_inode). ENOENT: the kernel has no inode
      // cached yet, so there is nothing to drop.
      int rc = fuse_lowlevel_notify_inval_inode(session, v.ino, static_cast<off_t>(v.off),
                                                static_cast<off_t>(v.len));
      if (rc != 0 && rc != -ENOENT) {
        return Status::Errno(-rc, "notify_inval_inode failed; the change may not be visible "
                                  "through existing mappings");
      }
    }
    return Status::Ok();
  }
};

namespace {

FuseDaemon::State* StateOf(fuse_req_t req) {
  return static_cast<FuseDaemon::State*>(fuse_req_userdata(req));
}

void OpLookup(fuse_req_t req, fuse_ino_t parent, const char* name) {
  auto* s = StateOf(req);
  fuse_ino_t ino = 0;
  if (parent == kRootIno) {
    if (std::strcmp(name, kControlName) == 0) {
      ino = kControlIno;
    } else if (ServedDevice* d = s->DeviceNamed(name)) {
      ino = s->InoOf(*d);
    }
  }
  if (!ino) {
    fuse_reply_err(req, ENOENT);
    return;
  }
  fuse_entry_param e{};
  e.ino = ino;
  e.attr_timeout = kAttrTimeout;
  e.entry_timeout = kAttrTimeout;
  s->Attr(ino, &e.attr);
  fuse_reply_entry(req, &e);
}

void OpGetattr(fuse_req_t req, fuse_ino_t ino, fuse_file_info*) {
  auto* s = StateOf(req);
  if (ino != kRootIno && ino != kControlIno && !s->Device(ino)) {
    fuse_reply_err(req, ENOENT);
    return;
  }
  struct stat st;
  s->Attr(ino, &st);
  fuse_reply_attr(req, &st, kAttrTimeout);
}

void OpSetattr(fuse_req_t req, fuse_ino_t ino, struct stat* attr, int to_set, fuse_file_info* fi) {
  auto* s = StateOf(req);
  struct stat st;
  s->Attr(ino, &st);
  // A device has the size of its reserved range, as the module's char device does:
  //  - open(O_TRUNC) arrives here without a file handle (OpInit turns atomic O_TRUNC off): the
  //    module's open ignores O_TRUNC (fs/namei.c do_open drops it for anything but a regular
  //    file), so the size stays and the open succeeds; the reply carries the unchanged size, which
  //    the kernel keeps (fs/fuse/dir.c fuse_do_setattr: i_size from the reply);
  //  - ftruncate(2) arrives with its handle: EINVAL, what do_sys_ftruncate (fs/open.c) answers for
  //    a file that is not S_ISREG.
  // Truncating the control file (echo > .control opens with O_TRUNC) is accepted and means nothing.
  if ((to_set & FUSE_SET_ATTR_SIZE) && ino != kControlIno && attr->st_size != st.st_size && fi) {
    fuse_reply_err(req, EINVAL);
    return;
  }
  fuse_reply_attr(req, &st, kAttrTimeout);
}

// O_TRUNC as a setattr (above) rather than inside open: with atomic O_TRUNC the kernel sets the
// file's size to 0 itself after the open (fs/fuse/file.c fuse_finish_open) until the next getattr,
// and a mapping touched in between gets SIGBUS (filemap_fault past i_size).
void OpInit(void*, fuse_conn_info* conn) { conn->want &= ~FUSE_CAP_ATOMIC_O_TRUNC; }

// The session's I/O (fuse_session_custom_io, libfuse 3.14): plain read/writev on /dev/fuse, plus
// what libfuse 3.14 cannot say. IoRead notes what the kernel's INIT offers; IoWritev asks for
// passthrough in the INIT reply (flags2 bit FUSE_PASSTHROUGH, max_stack_depth 1: the device files
// are on tmpfs, which stacks nothing; without writeback cache, which the kernel requires:
// fs/fuse/inode.c process_init_reply) and adds FOPEN_PASSTHROUGH and the backing id to an open
// reply that OpOpen marked. libfuse sends every reply as one writev whose iov[0] is the
// fuse_out_header and iov[1] the reply struct (lib/fuse_lowlevel.c send_reply_iov).
ssize_t IoRead(int fd, void* buf, size_t len, void* userdata) {
  ssize_t n = read(fd, buf, len);
  if (n >= static_cast<ssize_t>(sizeof(fuse_in_header) + 16)) {
    const auto* in = static_cast<const fuse_in_header*>(buf);
    if (in->opcode == FUSE_INIT) {
      auto* s = static_cast<FuseDaemon::State*>(userdata);
      const auto* init = reinterpret_cast<const fuse_init_in*>(in + 1);
      s->init_unique = in->unique;
      s->init_seen = true;
      s->init_minor = init->minor;
      s->init_flags = init->flags;
      if ((init->flags & FUSE_INIT_EXT) &&
          static_cast<size_t>(n) >= sizeof(fuse_in_header) + sizeof(fuse_init_in)) {
        s->init_flags |= static_cast<uint64_t>(init->flags2) << 32;
      }
    }
  }
  return n;
}

ssize_t IoWritev(int fd, struct iovec* iov, int count, void* userdata) {
  if (count >= 2 && iov[0].iov_len == sizeof(fuse_out_header)) {
    const auto* out = static_cast<const fuse_out_header*>(iov[0].iov_base);
    auto* arg = static_cast<uint8_t*>(iov[1].iov_base);
    auto* s = static_cast<FuseDaemon::State*>(userdata);
    if (tls_open_backing_id > 0 && out->error == 0 && iov[1].iov_len == sizeof(fuse_open_out)) {
      uint32_t open_flags;
      std::memcpy(&open_flags, arg + offsetof(fuse_open_out, open_flags), sizeof open_flags);
      open_flags |= kOpenPassthrough;
      std::memcpy(arg + offsetof(fuse_open_out, open_flags), &open_flags, sizeof open_flags);
      std::memcpy(arg + kOpenOutBackingIdAt, &tls_open_backing_id, sizeof(int32_t));
    } else if (s->init_seen && out->unique == s->init_unique && out->error == 0 &&
               s->options.passthrough && (s->init_flags & kInitPassthrough) &&
               iov[1].iov_len >= kInitOutMaxStackDepthAt + 4) {
      uint32_t flags, flags2;
      std::memcpy(&flags, arg + offsetof(fuse_init_out, flags), 4);
      std::memcpy(&flags2, arg + kInitOutFlags2At, 4);
      if ((flags & FUSE_INIT_EXT) && !(flags & FUSE_WRITEBACK_CACHE)) {
        flags2 |= static_cast<uint32_t>(kInitPassthrough >> 32);
        uint32_t depth = 1;
        std::memcpy(arg + kInitOutFlags2At, &flags2, 4);
        std::memcpy(arg + kInitOutMaxStackDepthAt, &depth, 4);
        s->passthrough_requested = true;
      }
    }
  }
  return writev(fd, iov, count);
}

void OpReaddir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info*) {
  auto* s = StateOf(req);
  if (ino != kRootIno) {
    fuse_reply_err(req, ENOTDIR);
    return;
  }
  std::vector<std::pair<std::string, fuse_ino_t>> entries = {
      {".", kRootIno}, {"..", kRootIno}, {kControlName, kControlIno}};
  for (auto& d : s->devices) entries.push_back({d.name, s->InoOf(d)});
  std::vector<char> buf(size);
  size_t used = 0;
  for (size_t i = static_cast<size_t>(off); i < entries.size(); ++i) {
    struct stat st;
    s->Attr(entries[i].second, &st);
    size_t need = fuse_add_direntry(req, nullptr, 0, entries[i].first.c_str(), nullptr, 0);
    if (used + need > size) break;
    fuse_add_direntry(req, buf.data() + used, size - used, entries[i].first.c_str(), &st,
                      static_cast<off_t>(i + 1));
    used += need;
  }
  fuse_reply_buf(req, buf.data(), used);
}

void OpOpen(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  auto* s = StateOf(req);
  if (ino == kControlIno) {
    fi->direct_io = 1;  // every read renders the state afresh
    fuse_reply_open(req, fi);
    return;
  }
  ServedDevice* d = s->Device(ino);
  if (!d) {
    fuse_reply_err(req, ino == kRootIno ? EISDIR : ENOENT);
    return;
  }
  s->opens++;
  int refuse = 0;
  bool direct = false;
  {
    std::lock_guard<std::mutex> lock(s->mu);
    refuse = d->faults.refuse_open;
    direct = d->faults.refuse_mmap;
  }
  if (!refuse && !d->unavailable.ok()) refuse = ErrnoOf(d->unavailable);
  if (!refuse) refuse = s->InjectorCheck("region.open", *d, 0, 0);
  // The module's node is a char device, whose inode has no direct_IO: open(O_DIRECT) is EINVAL
  // (fs/open.c do_dentry_open). A FUSE file would take it, so the daemon refuses it.
  if (!refuse && (fi->flags & O_DIRECT)) refuse = EINVAL;
  if (refuse) {
    s->refused_opens++;
    fuse_reply_err(req, refuse);
    return;
  }
  int32_t backing_id = 0;
  {
    std::lock_guard<std::mutex> lock(s->mu);
    // Passthrough when nothing needs the daemon to see page reads: no fault armed on the device
    // (refuse-mmap included), no scenario fault at region.read/write, and no daemon-path file of
    // the device open (the kernel would refuse to mix the modes).
    if (s->options.passthrough && !d->FaultArmed() && d->daemon_files == 0 &&
        !s->InjectorWantsIo()) {
      backing_id = s->BackingId(*d);
    }
    if (backing_id > 0) {
      d->passthrough_files++;
      fi->fh = kPassthroughFile;
    } else if (direct) {
      fi->fh = kDirectFile;  // no page cache, no io mode (fs/fuse/iomode.c)
    } else {
      d->daemon_files++;
      fi->fh = kDaemonFile;
    }
  }
  if (backing_id > 0) {
    // mmap goes to the device's file (fs/fuse/passthrough.c fuse_passthrough_mmap), read(2) and
    // write(2) still to the daemon: FOPEN_DIRECT_IO overrides FOPEN_PASSTHROUGH for them
    // (fs/fuse/file.c fuse_file_read_iter), so their answers stay the module's (ENOSPC at the end,
    // faults of read requests), where the file itself would grow.
    s->passthrough_opens++;
    fi->direct_io = 1;
    fi->keep_cache = 0;
    tls_open_backing_id = backing_id;
    fuse_reply_open(req, fi);
    tls_open_backing_id = 0;
    return;
  }
  // FOPEN_DIRECT_IO files cannot be mapped MAP_SHARED: the kernel's fuse_file_mmap answers ENODEV
  // (fs/fuse/file.c; FACTS.md "ENODEV from mmap (direct_io open)").
  fi->direct_io = direct ? 1 : 0;
  // The page cache stays valid across opens: the bytes change only through this mount or through
  // fill, which invalidates what it wrote.
  fi->keep_cache = direct ? 0 : 1;
  fuse_reply_open(req, fi);
}

void OpRead(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off_signed, fuse_file_info*) {
  auto* s = StateOf(req);
  uint64_t off = static_cast<uint64_t>(off_signed);
  if (ino == kControlIno) {
    std::string text = s->StatusText();
    if (off >= text.size()) {
      fuse_reply_buf(req, nullptr, 0);
    } else {
      fuse_reply_buf(req, text.data() + off, std::min<size_t>(size, text.size() - off));
    }
    return;
  }
  ServedDevice* d = s->Device(ino);
  if (!d || !d->memory) {
    fuse_reply_err(req, EIO);
    return;
  }
  if (off >= d->info.size) {
    fuse_reply_buf(req, nullptr, 0);
    return;
  }
  uint64_t len = std::min<uint64_t>(size, d->info.size - off);
  bool eio = false;
  uint64_t delay_us = 0;
  {
    std::lock_guard<std::mutex> lock(s->mu);
    for (auto& r : d->faults.eio) eio = eio || r.Meets(off, len);
    for (auto& r : d->faults.delay) {
      if (r.Meets(off, len)) delay_us = std::max(delay_us, r.delay_us);
    }
  }
  if (eio) {
    // The whole request fails: the kernel then reads the faulting page alone, so only pages in
    // the range end in SIGBUS (mm/filemap.c filemap_fault -> page_not_uptodate retry).
    s->eio_replies++;
    fuse_reply_err(req, EIO);
    return;
  }
  if (delay_us) {
    s->delayed_reads++;
    std::this_thread::sleep_for(std::chrono::microseconds(delay_us));
  }
  if (int err = s->InjectorCheck("region.read", *d, off, len)) {
    s->eio_replies += err == EIO;
    fuse_reply_err(req, err);
    return;
  }
  thread_local std::vector<uint8_t> buf;
  buf.resize(len);
  Status st = d->memory->Read(off, buf.data(), len);
  if (!st.ok()) {
    fuse_reply_err(req, ErrnoOf(st));
    return;
  }
  s->reads++;
  s->read_bytes += len;
  fuse_reply_buf(req, reinterpret_cast<const char*>(buf.data()), len);
}

void OpWrite(fuse_req_t req, fuse_ino_t ino, const char* data, size_t size, off_t off_signed,
             fuse_file_info*) {
  auto* s = StateOf(req);
  uint64_t off = static_cast<uint64_t>(off_signed);
  if (ino == kControlIno) {
    auto parsed = ParseControl(std::string(data, size));
    Status st = parsed.status();
    bool die = false;
    if (st.ok()) st = s->Apply(parsed.value(), &die);
    if (!st.ok()) {
      {
        std::lock_guard<std::mutex> lock(s->mu);
        s->last_error = st.message();
      }
      fuse_reply_err(req, st.space() == ErrorSpace::kErrno ? st.code() : EINVAL);
      return;
    }
    fuse_reply_write(req, size);
    if (die) {
      // The daemon dies as a crashed one would: no unmount, no goodbye. The kernel aborts the
      // connection when the last /dev/fuse descriptor closes (FACTS.md: ENOTCONN / SIGBUS).
      _exit(0);
    }
    return;
  }
  ServedDevice* d = s->Device(ino);
  if (!d || !d->memory) {
    fuse_reply_err(req, EIO);
    return;
  }
  // The size is fixed, as the module's is (kmod/resmem.c resmem_write, the convention of
  // block/fops.c blkdev_write_iter): a write at or past the end is ENOSPC, one that crosses it is
  // cut short at the end (the kernel returns the short count: fs/fuse/file.c fuse_perform_write).
  if (off >= d->info.size) {
    fuse_reply_err(req, ENOSPC);
    return;
  }
  size = std::min<uint64_t>(size, d->info.size - off);
  if (int err = s->InjectorCheck("region.write", *d, off, size)) {
    fuse_reply_err(req, err);
    return;
  }
  Status st = d->memory->Write(off, data, size);
  if (!st.ok()) {
    fuse_reply_err(req, ErrnoOf(st));
    return;
  }
  s->writes++;
  s->write_bytes += size;
  fuse_reply_write(req, size);
}

void OpIoctl(fuse_req_t req, fuse_ino_t ino, unsigned int cmd, void*, fuse_file_info*,
             unsigned flags, const void*, size_t, size_t out_bufsz) {
  auto* s = StateOf(req);
  ServedDevice* d = s->Device(ino);
  if (!d || !d->handle) {
    fuse_reply_err(req, ENOTTY);
    return;
  }
  s->ioctls++;
  if (flags & FUSE_IOCTL_COMPAT) {
    fuse_reply_err(req, ENOSYS);  // 32-bit callers: the module has no compat_ioctl either
    return;
  }
  if (int err = s->InjectorCheck("region.ioctl", *d, 0, 0)) {
    fuse_reply_err(req, err);
    return;
  }
  auto info = d->handle->Info();
  if (!info.ok()) {
    fuse_reply_err(req, ErrnoOf(info.status()));
    return;
  }
  switch (cmd) {
    case RESMEM_IOC_INFO: {
      const resmem_info out = UapiFromRegionInfo(*info, d->name);
      if (out_bufsz < sizeof out) {
        fuse_reply_err(req, EINVAL);
        return;
      }
      fuse_reply_ioctl(req, 0, &out, sizeof out);
      return;
    }
    case RESMEM_IOC_LENGTH:
    case RESMEM_IOC_PHYS: {
      __u64 v = cmd == RESMEM_IOC_LENGTH ? info->size : info->phys_addr;
      if (out_bufsz < sizeof v) {
        fuse_reply_err(req, EINVAL);
        return;
      }
      fuse_reply_ioctl(req, 0, &v, sizeof v);
      return;
    }
    default:
      // What a char driver answers for a command it does not know (FACTS.md: unknown ones ENOTTY).
      fuse_reply_err(req, ENOTTY);
  }
}

void OpFlush(fuse_req_t req, fuse_ino_t, fuse_file_info*) { fuse_reply_err(req, 0); }
void OpRelease(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  auto* s = StateOf(req);
  if (ServedDevice* d = s->Device(ino)) {
    std::lock_guard<std::mutex> lock(s->mu);
    if (fi->fh == kPassthroughFile && d->passthrough_files > 0) d->passthrough_files--;
    if (fi->fh == kDaemonFile && d->daemon_files > 0) d->daemon_files--;
  }
  fuse_reply_err(req, 0);
}
void OpFsync(fuse_req_t req, fuse_ino_t, int, fuse_file_info*) { fuse_reply_err(req, 0); }

fuse_lowlevel_ops MakeOps() {
  fuse_lowlevel_ops ops{};
  ops.init = OpInit;
  ops.lookup = OpLookup;
  ops.getattr = OpGetattr;
  ops.setattr = OpSetattr;
  ops.readdir = OpReaddir;
  ops.open = OpOpen;
  ops.read = OpRead;
  ops.write = OpWrite;
  ops.ioctl = OpIoctl;
  ops.flush = OpFlush;
  ops.release = OpRelease;
  ops.fsync = OpFsync;
  return ops;
}

}  // namespace

Result<std::unique_ptr<FuseDaemon>> FuseDaemon::Create(RegionProvider& provider,
                                                       DaemonOptions options) {
  auto listed = provider.List();
  if (!listed.ok()) return listed.status().WithContext("listing devices of " + provider.name());
  if (listed->empty()) {
    return Status::Error(kNotFound, "provider " + provider.name() +
                                        " offers no device: check its reserved ranges");
  }
  std::unique_ptr<FuseDaemon> daemon(new FuseDaemon());
  daemon->state_.reset(new State());
  State& s = *daemon->state_;
  s.options = std::move(options);
  s.devices.reserve(listed->size());
  for (const auto& path : listed.value()) {
    ServedDevice d;
    d.path = path;
    d.name = path.substr(path.rfind('/') + 1);
    if (d.name.empty() || d.name == kControlName || d.name[0] == '.') {
      return Status::InvalidArgument("device path '" + path +
                                     "' gives no usable file name: name devices /dev/resmemN");
    }
    OpenRequest req;
    req.path = path;
    auto handle = provider.Open(req);
    if (!handle.ok()) {
      d.unavailable = handle.status();
    } else {
      d.handle = std::move(handle).value();
      auto info = d.handle->Info();
      if (!info.ok()) {
        d.unavailable = info.status();
      } else {
        d.info = info.value();
        MapRequest m;
        m.length = d.info.size;
        auto mem = d.handle->Map(m);
        if (!mem.ok()) {
          d.unavailable = mem.status();
        } else {
          d.memory = std::move(mem).value();
        }
      }
    }
    if (d.info.device.empty()) d.info.device = path;
    s.devices.push_back(std::move(d));
  }
  return daemon;
}

FuseDaemon::~FuseDaemon() {
  if (state_ && state_->session) {
    if (state_->mounted) umount2(state_->mount_dir.c_str(), MNT_DETACH);
    fuse_session_destroy(state_->session);
  }
}

std::vector<std::string> FuseDaemon::device_names() const {
  std::vector<std::string> out;
  for (const auto& d : state_->devices) out.push_back(d.name);
  return out;
}

Status FuseDaemon::Mount(const std::string& dir, int fuse_fd) {
  State& s = *state_;
  // Mount ourselves with the descriptor (what fusermount3 does for users; as root mount(2) is
  // allowed directly, FACTS.md "FUSE"), then hand libfuse that fd (fuse_session_custom_io, below).
  // Access: no allow_other, so the kernel lets only processes of this uid/gid reach the mount
  // (fs/fuse/dir.c fuse_allow_current_process: -EACCES for anyone else, root included when it is
  // not user_id); default_permissions, so the kernel also checks the modes Attr() gives (the
  // device files 0660 and the control file 0600 of the daemon's owner, as kmod/99-resmem.rules
  // gives /dev/resmemN).
  std::string opts = "fd=" + std::to_string(fuse_fd) + ",rootmode=40000,user_id=" +
                     std::to_string(geteuid()) + ",group_id=" + std::to_string(getegid()) +
                     ",default_permissions,max_read=1048576";
  if (mount(kMountSource, dir.c_str(), kMountType, MS_NOSUID | MS_NODEV, opts.c_str()) != 0) {
    int err = errno;
    return Status::Errno(err, std::string("mount -t ") + kMountType + " on " + dir + ": " +
                                  std::strerror(err) +
                                  (err == EPERM ? ": mounting FUSE here needs root (CAP_SYS_ADMIN)"
                                                : ": is FUSE enabled in this kernel (/proc/filesystems)?"));
  }
  s.mounted = true;
  s.mount_dir = dir;
  const char* argv[] = {"resmem-fuse", nullptr};
  fuse_args args = FUSE_ARGS_INIT(1, const_cast<char**>(argv));
  fuse_lowlevel_ops ops = MakeOps();
  s.session = fuse_session_new(&args, &ops, sizeof ops, &s);
  if (!s.session) {
    umount2(dir.c_str(), MNT_DETACH);
    s.mounted = false;
    return Status::Internal("fuse_session_new failed (libfuse3 " + std::to_string(fuse_version()) +
                            "): see the daemon's stderr");
  }
  // The descriptor is served through our own read/writev (IoRead/IoWritev): libfuse 3.14 has no
  // passthrough, so the daemon adds it to the replies itself.
  fuse_custom_io io{};
  io.read = IoRead;
  io.writev = IoWritev;
  if (int rc = fuse_session_custom_io(s.session, &io, fuse_fd); rc != 0) {
    umount2(dir.c_str(), MNT_DETACH);
    s.mounted = false;
    return Status::Internal("libfuse3 did not accept /dev/fuse descriptor " +
                            std::to_string(fuse_fd) + " (fuse_session_custom_io: " +
                            std::strerror(-rc) + "; needs libfuse >= 3.14)");
  }
  s.fuse_fd = fuse_fd;
  return Status::Ok();
}

int FuseDaemon::Serve() {
  State& s = *state_;
  if (fuse_set_signal_handlers(s.session) != 0) return 4;
  fuse_loop_config config{};
  config.clone_fd = 0;
  config.max_idle_threads = s.options.max_idle_threads;
  int rc = fuse_session_loop_mt(s.session, &config);
  fuse_remove_signal_handlers(s.session);
  if (s.mounted) {
    umount2(s.mount_dir.c_str(), MNT_DETACH);
    s.mounted = false;
  }
  return rc < 0 ? 4 : 0;
}

}  // namespace resmem::fuse_emu
