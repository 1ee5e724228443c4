// A line's shaper (docs/policy.md, "Priority when a line is full"): the
// packets into a line with a `capacity` wait in one queue per priority and
// leave at the line's rate, the highest priority first (strict priority).
//
// One DPDK ring (single producer, single consumer: the worker) per priority
// and a token bucket on the TSC.  DPDK's hierarchical scheduler (rte_sched)
// was measured first and cost 257..963 cycles per packet against 12.6..54.5 for
// this (mcgw-bench --scenario shaper, docs/performance.md "Line shaping"):
// it is built for thousands of pipes, and with one pipe per line most of
// its grinder steps find nothing to do.
//
// * The bucket counts in byte-cycles: every TSC cycle adds `rate_bytes`, a
//   packet of L bytes costs L x tsc_hz, the bucket holds `bucket` bytes'
//   worth.  Exact integer arithmetic, no rounding of the rate.
// * Strict priority: dequeue() serves the highest non-empty priority first;
//   when the bucket cannot pay for the head packet of that priority, nothing
//   leaves (a smaller packet of a lower priority does not overtake it).
// * Admission: enqueue() refuses a packet whose priority's queue is full;
//   the caller drops and counts it (line-full).  The destructor frees what
//   is still queued.
// * The rate counts the outer frames' bytes as the WAN port sends them
//   (mbuf pkt_len: no preamble, gap or FCS), the bytes of the line's TX
//   counters.  The bucket holds 5 ms at the rate by default (at least two
//   maximum-size frames): the line never sees more than that beyond its
//   rate, and a worker kept from polling for up to 5 ms loses nothing.
//
// Not thread-safe: one worker owns it.
#pragma once

#include <rte_mbuf.h>
#include <rte_ring.h>

#include <array>
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
  uint64_t rate_bytes = 0;  // bytes per second, 1 .. kMaxShapeRateBytes
  uint32_t queue = 0;       // packets per priority: a power of two in kMinQueue..kMaxQueue
  uint32_t mtu = 9216;      // the largest frame it will see (bucket floor)
  uint64_t bucket = 0;      // the token bucket, bytes; 0: 5 ms at the rate
  bool operator==(const ShapeParams&) const = default;
};
// The byte-cycle arithmetic stays within 64 bits up to this rate (at a TSC
// of up to 8 GHz, with the default bucket): 250 Gbit/s per worker.
inline constexpr uint64_t kMaxShapeRateBytes = 250'000'000'000 / 8;

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
  static std::unique_ptr<Shaper> create(const ShapeParams& p, int socket, std::string* error,
                                        uint64_t tsc_hz = 0);
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
  // Up to n packets whose time has come at TSC `now`, highest priority first.
  unsigned dequeue(rte_mbuf** out, unsigned n, uint64_t now);
  uint32_t queued() const { return total_; }
  uint32_t queued(uint8_t priority) const { return queued_[priority]; }

 private:
  Shaper() = default;
  ShapeParams params_;
  uint64_t hz_ = 0;
  uint64_t capacity_ = 0;  // the bucket in byte-cycles
  uint64_t tokens_ = 0;    // byte-cycles
  uint64_t last_ = 0;      // TSC of the last refill
  uint64_t max_gap_ = 0;   // cycles that fill an empty bucket
  std::array<rte_ring*, kPriorities> rings_{};
  std::array<rte_mbuf*, kPriorities> head_{};   // taken off its ring, waiting for tokens
  std::array<uint32_t, kPriorities> queued_{};  // including head_
  uint32_t total_ = 0;
};

}  // namespace mcgw::policy
