// The random sequences' bound on the P2P window's use (resmem_seq_p2p.cc): a record per pin that a
// device file may hold, so that a P2P_WRITE answering ENOMEM ("no BAR space for P2P mappings",
// nv_p2p_standin.c sp_check_pin) can be told apart from one the window had room for.
//
// The bound must never be lower than what the provider has pinned (kmod/nv_p2p_standin.c
// sp->pinned): a record goes only once the provider has given its share back. What it may not know
// it over-counts, never under-counts; each rule below says which driver order it rests on.
//
// Not thread-safe: the executor calls it under its registry lock.
#ifndef RESMEM_KMOD_TESTS_RESMEM_SEQ_PINS_H_
#define RESMEM_KMOD_TESTS_RESMEM_SEQ_PINS_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace resmem::seq::p2p {

// A pin a device file may hold.
struct PinRec {
  uint64_t id;
  uint32_t edu, ctx;  // the device file (executor-wide number) and the context of the range
  uint64_t va, len;
  bool released = false;  // its file let go during a revocation: the window gets it back later
  bool busy = false;      // a P2P_WRITE is using it now (its own new pin, or a cache hit)
  bool orphaned = false;  // a revocation's drop came while busy: the write decides at its end
};

// One P2P_WRITE's use of the ledger, from Begin to End.
struct PinClaim {
  uint64_t bound = 0;   // bytes of every record at the start
  uint64_t added0 = 0;  // pins registered before the start
  uint64_t rec = 0;     // the record the write uses (0: refused on its arguments, pins nothing)
  bool fresh = false;   // rec is new (not a cached pin of the same range)
};

// How a P2P_WRITE left its pin (resmem_edu_p2p.c edu_p2p_ioctl_write).
enum class PinAfterWrite {
  kCached,     // a cached write that succeeded, or failed copying the caller's data (EFAULT)
  kCancelled,  // ECANCELED: a revocation took the pin mid-way
  kLetGo,      // every other end: an uncached write unpins; a refused pin holds nothing
};

class PinLedger {
 public:
  // Whether a FREE or a context end may be revoking this record's allocation now.
  using Revoking = std::function<bool(const PinRec&)>;
  using Match = std::function<bool(const PinRec&)>;

  // Before a P2P_WRITE of [va, va+len) of context ctx through file edu: the bound, and, unless
  // the write pins nothing (refused on its arguments), the record it uses: the file's cached,
  // not released record of the same range when cached, else a new one (counted from now on).
  PinClaim Begin(uint32_t edu, uint32_t ctx, uint64_t va, uint64_t len, bool cached, bool pins);
  // After it: whether the window could have been full for its len bytes: the records at the start,
  // the pins others registered since, and its own.
  bool MayBeFull(const PinClaim& c, uint64_t len, uint64_t window) const;
  // ... and what becomes of its record. covered: a live allocation of its context holds the
  // range now (no FREE or context end of it under way or over). Says whether a revocation's drop
  // came during the write, and whether the record stayed then.
  enum class Orphan { kNo, kKept, kGone };
  Orphan End(const PinClaim& c, PinAfterWrite after, const Revoking& revoking, bool covered);

  // A device file lets go of the records `match` picks (its close, a P2P_FLUSH). Their share
  // comes back at once, unless a revocation of their allocation is under way: once its callback
  // has marked a pin, resmem_edu skips put_pages, and the provider gives a revoked table's share
  // back only when every callback of that FREE or context end has returned (nv_p2p_standin.c
  // sp_free_alloc), which can be after the close or flush returned. Such a record stays,
  // released, until that revocation's drop.
  void Release(const Match& match, const Revoking& revoking);
  // A FREE or a context end is over: every pin over its range was revoked and its share given
  // back (sp_free_alloc returns after that). Drops the records `match` picks, except those a
  // write in flight uses: that write may not have pinned yet and pin the allocation that took the
  // freed one's place (the next ALLOC of the context gets the same address: the stand-in's BAR is
  // first fit, and va = vaSpaceToken * 4 GiB + the BAR offset), so its record stays, orphaned,
  // until the write's End.
  void DropRevoked(const Match& match);

  // Everything back (the provider unloaded and loaded again: no pin survives it).
  void Clear() { pins_.clear(); }
  const std::vector<PinRec>& records() const { return pins_; }
  // The records, for a failure's message: "file 3 ctx 5 va 0x500050000 +0x30000 released, ...".
  std::string Describe() const;

 private:
  PinRec* Find(uint64_t id);
  void ReleaseOne(uint64_t id, const Revoking& revoking);

  std::vector<PinRec> pins_;
  uint64_t added_ = 0;  // bytes of pins ever registered (the bound's growth during a write)
  uint64_t next_ = 1;
};

}  // namespace resmem::seq::p2p

#endif  // RESMEM_KMOD_TESTS_RESMEM_SEQ_PINS_H_
