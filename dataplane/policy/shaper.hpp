// A line's shaper (docs/policy.md, "Priority when a line is full"): the
// packets into a line with a `capacity` wait in one queue per priority and
// leave at the line's rate, the highest priority first (strict priority),
// across all the workers that send into the line.
//
// Each worker has its own shaper of the line: one DPDK ring (single
// producer, single consumer: the worker) per priority.  The line's rate is
// one token bucket that the line's shapers in all workers share
// (LineBucket).  DPDK's hierarchical scheduler (rte_sched) was measured
// first and cost 243..963 cycles per packet against 12.6..54.5 for this
// (14.4..15.3 with the shared bucket; mcgw-bench --scenario shaper,
// docs/performance.md "Line shaping"): it is
// built for thousands of pipes, and with one pipe per line most of its
// grinder steps find nothing to do.
//
// * The shared bucket is a GCRA (the virtual-scheduling form of a token
//   bucket): one atomic, the TSC time at which the line has sent all it
//   was given (`tat`, in 1/256 cycles, wrapping).  A packet conforms when
//   the line is busy for less than tau when it would start (GCRA's test:
//   max(tat, now) < now + tau, whatever its size); a batch of conforming
//   packets costing c moves tat to max(tat, now) + c with a
//   compare-and-swap.  tau is the bucket: 5 ms at the rate by default, at
//   least two maximum-size frames.  So the line gets less than the bucket
//   plus one packet beyond its rate, and a worker's large packets are not
//   kept waiting by another worker's small ones.  A worker checks against
//   the tat it read, so when two workers take tokens at the same instant
//   the line may get one batch (up to 32 packets) per such worker beyond
//   that; the long-run rate stays exact, as every byte moves tat.
// * Strict priority across workers: the bucket also counts, per priority,
//   the shapers that hold packets of it after their last dequeue
//   (`backlog`, eight 8-bit counts in one word).  A shaper sends nothing of
//   a priority below the highest one another shaper holds, so a worker's
//   bulk tenant yields the line to a training tenant whose packets another
//   worker queues.  Within a shaper, dequeue() serves the highest non-empty
//   priority first; when the bucket cannot pay for the head packet of that
//   priority, nothing leaves (a smaller packet of a lower priority does not
//   overtake it).
// * Admission: enqueue() refuses a packet whose priority's queue is full;
//   the caller drops and counts it (line-full).  The destructor frees what
//   is still queued and withdraws its backlog from the bucket.
// * The rate counts the outer frames' bytes as the WAN port sends them
//   (mbuf pkt_len: no preamble, gap or FCS), the bytes of the line's TX
//   counters.  A worker kept from polling for up to 5 ms loses nothing.
//
// A Shaper is not thread-safe: one worker owns it.  A LineBucket is shared.
#pragma once

#include <rte_mbuf.h>
#include <rte_ring.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "config/units.hpp"

namespace mcgw::policy {

inline constexpr unsigned kPriorities = 8;  // 0 (served last) .. 7 (first)
// Bounds of a priority's queue, packets (a power of two).
inline constexpr uint32_t kMinQueue = config::kMinShapeQueue;
inline constexpr uint32_t kMaxQueue = config::kMaxShapeQueue;

struct ShapeParams {
  uint64_t rate_bytes = 0;  // the line's bytes per second, 1 .. kMaxShapeRateBytes
  uint32_t queue = 0;       // packets per priority: a power of two in kMinQueue..kMaxQueue
  uint32_t mtu = 9216;      // the largest frame it will see (bucket floor)
  uint64_t bucket = 0;      // the token bucket, bytes; 0: 5 ms at the rate
  bool operator==(const ShapeParams&) const = default;
};
// The highest line rate: 250 Gbit/s (config's capacity bound).
inline constexpr uint64_t kMaxShapeRateBytes = 250'000'000'000 / 8;

// What the shapers of one line in all workers share (see above).  `tat`
// is compared with the TSC << 8 in wrapping arithmetic, which holds while
// the two are less than 2^55 cycles apart: its owner sets it to the TSC
// << 8 when it makes the bucket and calls refreshLineBucket every second
// or so (the Dataplane: its first worker).  A shaper that still finds a
// wrapped tat (far beyond what a busy line can reach) resets it.
struct LineBucket {
  alignas(64) std::atomic<uint64_t> tat{0};      // 1/256 TSC cycles
  alignas(64) std::atomic<uint64_t> backlog{0};  // byte p: shapers holding priority p
};
// A line idle for more than ~2^32 cycles: its tat moved up to `now` (its
// bucket stays full), so that it never falls 2^55 cycles behind.
void refreshLineBucket(LineBucket& line, uint64_t now);

// The queue a priority gets for `queue_ms` of traffic at `rate_bits` in
// 1500-byte packets, rounded up to a power of two within the bounds (the
// config's eal.mbufs check uses the same function).
inline uint32_t queuePackets(uint64_t rate_bits, uint32_t queue_ms) {
  return config::shapeQueuePackets(rate_bits, queue_ms);
}

class Shaper {
 public:
  // nullptr and `error` when the parameters are out of bounds or memory
  // runs out.  tsc_hz 0: rte_get_tsc_hz() and dequeue() gets rte_rdtsc();
  // else the caller's own clock at that rate, starting at 0 (tests).
  // line: the bucket shared with the line's other shapers (it must outlive
  // them all); nullptr: a bucket of its own.
  static std::unique_ptr<Shaper> create(const ShapeParams& p, int socket, std::string* error,
                                        uint64_t tsc_hz = 0, LineBucket* line = nullptr);
  ~Shaper();
  Shaper(const Shaper&) = delete;
  Shaper& operator=(const Shaper&) = delete;

  const ShapeParams& params() const { return params_; }
  bool room(uint8_t priority) const { return queued_[priority] < params_.queue; }
  // Queues the packet for its priority (0..7); false (the packet untouched)
  // when that queue is full.
  bool enqueue(rte_mbuf* m, uint8_t priority) {
    if (!room(priority) || rte_ring_sp_enqueue(rings_[priority], m) != 0) [[unlikely]] {
      return false;
    }
    ++queued_[priority];
    ++total_;
    return true;
  }
  // Up to n packets whose time has come at TSC `now`, highest priority
  // first, none of a priority below one another shaper of the line holds.
  // draining: a replaced shaper sending what it holds; it neither yields
  // to the other shapers' priorities nor tells them of its own (its
  // packets go ahead of the line's new ones anyway, and it must empty).
  unsigned dequeue(rte_mbuf** out, unsigned n, uint64_t now, bool draining = false);
  uint32_t queued() const { return total_; }
  uint32_t queued(uint8_t priority) const { return queued_[priority]; }

 private:
  Shaper() = default;
  // Tells the line which priorities this shaper holds now (none when
  // draining).
  void publish(bool draining);
  ShapeParams params_;
  LineBucket* line_ = nullptr;
  std::unique_ptr<LineBucket> own_;  // when no line bucket was given
  uint64_t tau_ = 0;                 // the bucket, 1/256 cycles
  uint64_t stale_ = 0;               // busy beyond this: a wrapped tat
  uint64_t per_byte_ = 0;            // 1/256 cycles per byte, << 16
  uint64_t published_ = 0;           // this shaper's share of line_->backlog
  std::array<rte_ring*, kPriorities> rings_{};
  std::array<rte_mbuf*, kPriorities> head_{};   // taken off its ring, waiting for tokens
  std::array<uint32_t, kPriorities> queued_{};  // including head_
  uint32_t total_ = 0;
};

}  // namespace mcgw::policy
