/* The card: a DMA engine that writes a data-acquisition card's blocks into host memory (or into a
 * GPU buffer pinned for peer-to-peer DMA), the way an FPGA digitizer does. This header is its
 * whole interface - registers, descriptor ring, block format - in plain C, so a lab can write its
 * own driver against it (docs/digitizer.md). The same layout is used by the simulator's card
 * (mock/card), the QEMU lane's device process (ci/qemu, writing into the guest's RAM) and the
 * GPU machine's producer (engine/card).
 *
 * The card window: a physically contiguous range the host gives the card, 4 KiB aligned:
 *   [0, 4 KiB)          the register page (struct resmem_card_regs)
 *   [4 KiB, 4 KiB + N)  the descriptor ring, N = ring_entries * 32 bytes (struct resmem_card_desc)
 * Blocks go wherever descriptors point (targets); the data area usually follows the ring.
 *
 * Protocol (every field little-endian, every access 64-bit and single-copy atomic):
 *  1. The host writes ring_bus, ring_entries (a power of two), block_bytes, rate, then sets
 *     control = ENABLE.
 *  2. The host fills descriptors (target, length) and advances `head` (a count that only grows;
 *     slot = index % ring_entries).
 *  3. The card takes descriptors in order (`tail` follows `head`), writes one block into each
 *     target at its rate, writes the descriptor's completion (sequence, status, checksum, then
 *     flags = DONE last), advances `completed` and raises a completion (irq_count + 1).
 *  4. The host reads completions in order, checks each block (header, payload checksum,
 *     trailer), and reuses the slot by posting it again.
 *  When no descriptor is posted as a block is due, the block is lost and `overruns` counts it
 *  (a card's FIFO overflows; the sequence numbers of delivered blocks show the gap).
 *  Stopping: the host clears ENABLE and sets QUIESCE; the card finishes the block it is writing,
 *  writes no more, and clears STATUS_ACTIVE. A host that releases a target while ACTIVE is set
 *  may be written after the release (aes-stream-drivers PR #291).
 *  Link down: every register reads all ones (RESMEM_CARD_LINK_DOWN), the host's register writes
 *  are lost, no block and no completion is written until the link is back. A host that reads
 *  status == all ones knows (Xilinx dma_ip_drivers #133, #175: drivers that did not look).
 */
#ifndef RESMEM_BACKENDS_CARD_CARD_ABI_H_
#define RESMEM_BACKENDS_CARD_CARD_ABI_H_

#include <stdint.h>

#define RESMEM_CARD_MAGIC 0x31445241434d5352ull   /* "RSMCARD1" */
#define RESMEM_CARD_ABI 1
#define RESMEM_CARD_REGS_BYTES 4096u
#define RESMEM_CARD_DESC_BYTES 32u
#define RESMEM_CARD_LINK_DOWN 0xffffffffffffffffull /* what every register reads while the link is down */

/* control (host writes) */
#define RESMEM_CARD_CTRL_ENABLE 0x1ull   /* take descriptors and write blocks */
#define RESMEM_CARD_CTRL_QUIESCE 0x2ull  /* finish the block in flight, then write nothing */
#define RESMEM_CARD_CTRL_RESET 0x4ull    /* forget ring state and counters (card sets head/tail/completed/sequence
                                            to 0 and stops; a block in flight is lost; a hung engine restarts); the
                                            card clears the bit last, its registers already reset: the host then
                                            programs the ring and sets ENABLE as at start */

/* status (card writes) */
#define RESMEM_CARD_STATUS_ACTIVE 0x1ull   /* a descriptor is taken and its block not yet complete */
#define RESMEM_CARD_STATUS_LINK_UP 0x2ull
#define RESMEM_CARD_STATUS_ENABLED 0x4ull  /* the card saw ENABLE */
#define RESMEM_CARD_STATUS_ERROR 0x8ull    /* a descriptor failed (its status says why) */

struct resmem_card_regs {
  uint64_t magic;        /* 0x00 RESMEM_CARD_MAGIC */
  uint64_t abi;          /* 0x08 RESMEM_CARD_ABI */
  uint64_t control;      /* 0x10 host: RESMEM_CARD_CTRL_* */
  uint64_t status;       /* 0x18 card: RESMEM_CARD_STATUS_* */
  uint64_t ring_bus;     /* 0x20 host: bus address of descriptor 0 */
  uint64_t ring_entries; /* 0x28 host: a power of two, 1..65536 */
  uint64_t head;         /* 0x30 host: descriptors posted, ever */
  uint64_t tail;         /* 0x38 card: descriptors taken, ever */
  uint64_t completed;    /* 0x40 card: descriptors completed, ever */
  uint64_t block_bytes;  /* 0x48 host: bytes per block, header and trailer included; multiple of 8, >= 64 */
  uint64_t rate;         /* 0x50 host: bytes per second the card produces; 0: as fast as it can */
  uint64_t overruns;     /* 0x58 card: blocks lost because no descriptor was posted */
  uint64_t irq_count;    /* 0x60 card: completions raised */
  uint64_t sequence;     /* 0x68 card: sequence number of the next block the card makes */
  uint64_t heartbeat;    /* 0x70 card: counts while the card runs (a watchdog reads it) */
  uint64_t errors;       /* 0x78 card: descriptors completed with a status other than OK */
};

/* Descriptor status (card writes) */
#define RESMEM_CARD_DESC_OK 0u
#define RESMEM_CARD_DESC_TIMEOUT 1u   /* the card gave up on this descriptor (no block written) */
#define RESMEM_CARD_DESC_SHORT 2u     /* length smaller than block_bytes: nothing written */

#define RESMEM_CARD_DESC_DONE 0x1u    /* flags: the card wrote this completion (written last) */

struct resmem_card_desc {
  uint64_t target;    /* host: bus address the block goes to */
  uint32_t length;    /* host: bytes available at target (>= block_bytes) */
  uint32_t flags;     /* host writes 0 when posting; card sets RESMEM_CARD_DESC_DONE */
  uint64_t sequence;  /* card: the block's sequence number */
  uint32_t status;    /* card: RESMEM_CARD_DESC_* */
  uint32_t checksum;  /* card: low 32 bits of the block's payload checksum */
};

/* A block: header, payload, trailer. Payload word k (little-endian 64-bit) of the block with
 * sequence s from a card seeded with `seed` is resmem_card_word(seed, s, k): a reader checks any
 * block knowing only the seed. The header's checksum is resmem_card_checksum of the payload (a
 * word-wise FNV-1a: 8 bytes a step, so a reader in a slow guest can afford it). A block whose
 * trailer's sequence differs from its header's was torn (written in part). */
#define RESMEM_CARD_BLOCK_MAGIC 0x4b434f4c424d5352ull  /* "RSMBLOCK" */
struct resmem_card_block_header {
  uint64_t magic;
  uint64_t sequence;
  uint64_t length;    /* payload bytes */
  uint64_t checksum;  /* FNV-1a 64 of the payload */
};
struct resmem_card_block_trailer {
  uint64_t sequence;
  uint64_t magic;
};
static inline uint64_t resmem_card_word(uint64_t seed, uint64_t sequence, uint64_t k) {
  return (seed * 0x9e3779b97f4a7c15ull) ^ (sequence * 0xc2b2ae3d27d4eb4full) ^ (k * 0x100000001b3ull) ^
         0x64726163ull;
}
static inline uint64_t resmem_card_checksum(const uint64_t* words, uint64_t n) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (uint64_t i = 0; i < n; i++) h = (h ^ words[i]) * 0x100000001b3ull;
  return h;
}
#define RESMEM_CARD_BLOCK_OVERHEAD (sizeof(struct resmem_card_block_header) + sizeof(struct resmem_card_block_trailer))

/* ---- Lane extension: the QEMU lane's mailbox (not part of a card's ABI) ------------------------
 * In the QEMU lane the card is a host process (ci/qemu/card_device.cc) writing into the guest's RAM
 * through QEMU's shared memory-backend-file; it has no PCI function, no BAR and no interrupt. The
 * guest's driver reaches it through this mailbox, 2 KiB into a page of reserved RAM: by default
 * the register page at the start of the lane's first reservation (bus 0x40000800), above the
 * registers (which end at 0x80), where no block goes.
 *
 * Power-on handshake: the device process writes NOTHING into guest RAM until a guest asks, because
 * the module's load-time probe writes and reads back test words in the range (docs/kmod.md) and
 * other guest cases fill it with their own patterns. It only reads the mailbox. A guest asks by
 * writing the request fields, then magic = RESMEM_CARD_LANE_MAGIC, then request_seq + 1 (last, a
 * 64-bit store). The device acts on a request_seq it has not seen while magic is right, and
 * answers ack_status, then ack_seq = request_seq (last). POWER_ON: the device powers its engine
 * on at `window` (the register page: magic, abi, LINK_UP written, the rest zeroed - it restores
 * this mailbox if the window is its page) with `seed`, `flags` and the fault script in `text`,
 * and from then on writes as a card does. POWER_OFF: the engine stops at once and the device
 * writes nothing more. A guest that stops bumping `lease` for RESMEM_CARD_LANE_LEASE_SECONDS
 * (a crashed scenario) is powered off the same way.
 * FAULT: `text` is fault-script lines (card_fault.h), their times counted from now. RELEASED: the
 * host let the targets go (the engine counts what it writes after, after_release). SPRAY: the
 * throughput check: the device writes blocks round robin into `spray_slots` slots of
 * `spray_block` bytes from `spray_target` for `spray_ms` ms, as fast as it can, and reports.
 * A refused request: ack_status an errno and `text` the reason. While on, the device publishes its
 * counters (struct CardCounters) after each step of its engine. */
#define RESMEM_CARD_LANE_MAILBOX_OFFSET 0x800u
#define RESMEM_CARD_LANE_MAGIC 0x584f424c49414d52ull /* "RMAILBOX" */
#define RESMEM_CARD_LANE_TEXT_BYTES 1024u
#define RESMEM_CARD_LANE_LEASE_SECONDS 30
#define RESMEM_CARD_LANE_POWER_ON 1ull
#define RESMEM_CARD_LANE_POWER_OFF 2ull
#define RESMEM_CARD_LANE_FAULT 3ull
#define RESMEM_CARD_LANE_RELEASED 4ull
#define RESMEM_CARD_LANE_SPRAY 5ull
#define RESMEM_CARD_LANE_FLAG_MODEL_PAYLOAD 0x1ull  /* POWER_ON: header and trailer only */

struct resmem_card_lane_mailbox {
  uint64_t magic;         /* 0x00 host: RESMEM_CARD_LANE_MAGIC, written after request_seq */
  uint64_t request;       /* 0x08 host: RESMEM_CARD_LANE_POWER_ON ... */
  uint64_t request_seq;   /* 0x10 host: + 1 per request (never 0), the request's last change */
  uint64_t ack_seq;       /* 0x18 device: the request_seq it finished, written last */
  uint64_t ack_status;    /* 0x20 device: 0, or an errno with the reason in text */
  uint64_t window;        /* 0x28 host (POWER_ON): the register page's bus address */
  uint64_t seed;          /* 0x30 host (POWER_ON): the payload's seed */
  uint64_t flags;         /* 0x38 host (POWER_ON): RESMEM_CARD_LANE_FLAG_* */
  uint64_t lease;         /* 0x40 host: changed at least every LEASE_SECONDS while it uses the card */
  uint64_t powered;       /* 0x48 device: 1 while the engine runs */
  uint64_t heartbeat;     /* 0x50 device: counts while powered */
  /* 0x58 device: its counters (CardCounters), link down in microseconds */
  uint64_t blocks, bytes, overruns, timeouts, torn, after_release, duplicate, out_of_order,
      register_writes_lost, link_down_us;
  /* 0xa8 host (SPRAY): where and how long; device: what it wrote */
  uint64_t spray_target, spray_block, spray_slots, spray_ms;
  uint64_t spray_bytes, spray_ns, spray_last_sequence;
  uint64_t reserved[(0x200 - 0xe0) / 8];
  char text[RESMEM_CARD_LANE_TEXT_BYTES]; /* 0x200 host: fault script; device: why it refused */
};

#endif /* RESMEM_BACKENDS_CARD_CARD_ABI_H_ */
