// The bound on the P2P window's use (resmem_seq_pins.h), one driver order per case: the record of
// each pin the provider may still count must be there when the next write begins.
#include "kmod/tests/resmem_seq_pins.h"

#include <gtest/gtest.h>

namespace resmem::seq::p2p {
namespace {

constexpr uint64_t kPage = 64 * 1024;
constexpr uint64_t kWindow = 8 * kPage;
constexpr uint32_t kCtx = 5;
constexpr uint64_t kVa = (uint64_t{kCtx} << 32) + 5 * kPage;  // va = vaSpaceToken * 4 GiB + BAR offset

const PinLedger::Revoking kNothingRevoking = [](const PinRec&) { return false; };
const PinLedger::Revoking kAllRevoking = [](const PinRec&) { return true; };

// The drop of a FREE of [kVa, kVa + 4 pages) of kCtx, once it returned.
void FreeOver(PinLedger* l) {
  l->DropRevoked([](const PinRec& p) { return p.ctx == kCtx && p.va >= kVa && p.va < kVa + 4 * kPage; });
}

uint64_t Bound(PinLedger* l) { return l->Begin(9, 1, 0, kPage, true, false).bound; }

// d_random_sequences_edu_p2p's fourth failure (2026-11-30, op 691 on 6.1): a cached write waits
// for the device (another file's transfer holds it: two ~100 ms commands a piece) while the owner
// frees its allocation and allocates again; the new allocation gets the freed one's BAR offset,
// so the same address, and the write pins it and caches the pin. The provider counts it from then
// on; the record must be there for the next write's bound.
TEST(PinLedger, AWriteThatWaitedOutTheFreeKeepsThePinOfTheAllocationInItsPlace) {
  PinLedger l;
  const PinClaim w = l.Begin(1, kCtx, kVa, 3 * kPage, true, true);
  FreeOver(&l);                                               // the FREE returned before the write pinned
  EXPECT_EQ(Bound(&l), 3 * kPage) << "the write may pin the next allocation at the address yet";
  EXPECT_EQ(l.End(w, PinAfterWrite::kCached, kNothingRevoking, true), PinLedger::Orphan::kKept);  // ALLOC took it
  EXPECT_EQ(Bound(&l), 3 * kPage);
  EXPECT_EQ(l.Describe(), "file 1 ctx 5 va 0x500050000 +0x30000");
  ASSERT_EQ(l.records().size(), 1u);
  EXPECT_FALSE(l.records()[0].busy || l.records()[0].orphaned || l.records()[0].released);
}

// The same with a cache hit: the record of an earlier write, dropped by the FREE while this write
// used it; the driver finds its pin revoked, pins again (the new allocation) and caches that.
TEST(PinLedger, ACacheHitThatWaitedOutTheFreeKeepsItsRecord) {
  PinLedger l;
  const PinClaim first = l.Begin(1, kCtx, kVa, 2 * kPage, true, true);
  l.End(first, PinAfterWrite::kCached, kNothingRevoking, true);
  const PinClaim hit = l.Begin(1, kCtx, kVa, 2 * kPage, true, true);
  EXPECT_EQ(hit.rec, first.rec);
  EXPECT_FALSE(hit.fresh);
  FreeOver(&l);
  l.End(hit, PinAfterWrite::kCached, kNothingRevoking, true);
  EXPECT_EQ(Bound(&l), 2 * kPage);
}

// With no allocation at the address when the write ends, whatever it pinned was revoked by a FREE
// that is over: the share is back, the record goes.
TEST(PinLedger, AnOrphanedRecordGoesWhenNoAllocationHoldsTheRange) {
  PinLedger l;
  const PinClaim w = l.Begin(1, kCtx, kVa, 3 * kPage, true, true);
  FreeOver(&l);
  EXPECT_EQ(l.End(w, PinAfterWrite::kCached, kNothingRevoking, false), PinLedger::Orphan::kGone);
  EXPECT_EQ(Bound(&l), 0u);
  const PinClaim u = l.Begin(2, kCtx, kVa, kPage, false, true);
  FreeOver(&l);
  l.End(u, PinAfterWrite::kLetGo, kNothingRevoking, true);  // uncached: unpinned at its end
  EXPECT_EQ(Bound(&l), 0u);
}

// Not orphaned: a FREE's drop after the write ended takes the record at once.
TEST(PinLedger, AFreeAfterTheWriteDropsItsRecord) {
  PinLedger l;
  const PinClaim w = l.Begin(1, kCtx, kVa, 3 * kPage, true, true);
  EXPECT_EQ(l.End(w, PinAfterWrite::kCached, kNothingRevoking, true), PinLedger::Orphan::kNo);
  FreeOver(&l);
  EXPECT_TRUE(l.records().empty());
}

// A cancelled write's record stays until the revocation that cancelled it is over; a new pin let
// go (uncached, or refused) goes at the write's end unless a revocation is under way.
TEST(PinLedger, CancelledStaysUntilTheDropLetGoGoesAtOnce) {
  PinLedger l;
  const PinClaim c = l.Begin(1, kCtx, kVa, kPage, true, true);
  l.End(c, PinAfterWrite::kCancelled, kNothingRevoking, true);
  EXPECT_EQ(Bound(&l), kPage);
  FreeOver(&l);
  EXPECT_EQ(Bound(&l), 0u);
  const PinClaim g = l.Begin(1, kCtx, kVa, kPage, false, true);
  l.End(g, PinAfterWrite::kLetGo, kNothingRevoking, true);
  EXPECT_EQ(Bound(&l), 0u);
  const PinClaim h = l.Begin(1, kCtx, kVa, kPage, false, true);
  l.End(h, PinAfterWrite::kLetGo, kAllRevoking, true);  // the callback marked it: no put_pages
  EXPECT_EQ(Bound(&l), kPage);
  FreeOver(&l);
  EXPECT_EQ(Bound(&l), 0u);
}

// A close or flush during a revocation: released, still counted, not a cache hit any more.
TEST(PinLedger, AReleasedRecordCountsUntilTheDropAndIsNoCacheHit) {
  PinLedger l;
  const PinClaim w = l.Begin(1, kCtx, kVa, kPage, true, true);
  l.End(w, PinAfterWrite::kCached, kNothingRevoking, true);
  l.Release([](const PinRec& p) { return p.edu == 1; }, kAllRevoking);
  EXPECT_EQ(Bound(&l), kPage);
  const PinClaim again = l.Begin(1, kCtx, kVa, kPage, true, true);
  EXPECT_TRUE(again.fresh) << "the driver's cache skips a revoked pin";
  l.End(again, PinAfterWrite::kLetGo, kNothingRevoking, false);
  FreeOver(&l);
  EXPECT_EQ(Bound(&l), 0u);
  const PinClaim x = l.Begin(1, kCtx, kVa, kPage, true, true);
  l.End(x, PinAfterWrite::kCached, kNothingRevoking, true);
  l.Release([](const PinRec& p) { return p.edu == 1; }, kNothingRevoking);
  EXPECT_EQ(Bound(&l), 0u);
}

// The window may be full when the records at the start, the pins others registered since and
// this one exceed it.
TEST(PinLedger, MayBeFullCountsTheStartOthersSinceAndItself) {
  PinLedger l;
  const PinClaim held = l.Begin(1, 1, kPage, 4 * kPage, true, true);
  l.End(held, PinAfterWrite::kCached, kNothingRevoking, true);
  const PinClaim w = l.Begin(2, 2, 0, 2 * kPage, true, true);
  EXPECT_FALSE(l.MayBeFull(w, 2 * kPage, kWindow));
  const PinClaim other = l.Begin(3, 3, 0, 2 * kPage, false, true);
  EXPECT_FALSE(l.MayBeFull(w, 2 * kPage, kWindow));  // 4 + 2 + 2 = 8 pages: fits
  const PinClaim third = l.Begin(4, 4, 0, kPage, false, true);
  EXPECT_TRUE(l.MayBeFull(w, 2 * kPage, kWindow));
  l.End(other, PinAfterWrite::kLetGo, kNothingRevoking, true);
  l.End(third, PinAfterWrite::kLetGo, kNothingRevoking, true);
  EXPECT_TRUE(l.MayBeFull(w, 2 * kPage, kWindow)) << "others pinned during the write, whenever they let go";
  const PinClaim hit = l.Begin(1, 1, kPage, 4 * kPage, true, true);
  EXPECT_FALSE(hit.fresh);
  EXPECT_EQ(hit.bound, 6 * kPage) << "held and w; other and third went at their ends";
  const PinClaim early = l.Begin(1, 1, kPage, 3, true, false);
  EXPECT_EQ(early.rec, 0u) << "refused on its arguments: pins nothing";
}

}  // namespace
}  // namespace resmem::seq::p2p
