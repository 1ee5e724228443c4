#include "dataplane/policy/shaper.hpp"

#include <rte_common.h>
#include <rte_cycles.h>
#include <rte_malloc.h>

#include <algorithm>
#include <limits>

namespace mcgw::policy {

std::unique_ptr<Shaper> Shaper::create(const ShapeParams& p, int socket, std::string* error,
                                       uint64_t tsc_hz) {
  auto fail = [&](const std::string& why) -> std::unique_ptr<Shaper> {
    if (error) {
      *error = "shaper: " + why;
    }
    return nullptr;
  };
  const uint64_t hz = tsc_hz ? tsc_hz : rte_get_tsc_hz();
  if (p.rate_bytes == 0 || p.rate_bytes > kMaxShapeRateBytes) {
    return fail("rate " + std::to_string(p.rate_bytes) + " bytes/s is not within 1.." +
                std::to_string(kMaxShapeRateBytes));
  }
  if (p.queue < kMinQueue || p.queue > kMaxQueue || !rte_is_power_of_2(p.queue)) {
    return fail("queue " + std::to_string(p.queue) + " is not a power of two in 16..16384");
  }
  if (hz == 0 || hz > 8'000'000'000) {
    return fail("no usable TSC rate");
  }
  const uint64_t frame = uint64_t{p.mtu} + 128;  // a frame with the largest outer headers
  const uint64_t bucket = std::max(p.bucket ? p.bucket : p.rate_bytes / 200, 2 * frame);
  if (bucket > std::numeric_limits<uint64_t>::max() / 4 / hz) {
    return fail("bucket " + std::to_string(bucket) + " bytes is too large");
  }
  std::unique_ptr<Shaper> s(new Shaper());
  s->params_ = p;
  s->hz_ = hz;
  s->capacity_ = bucket * hz;
  s->tokens_ = s->capacity_;  // a line starts idle
  s->max_gap_ = s->capacity_ / p.rate_bytes + 1;
  s->last_ = tsc_hz ? 0 : rte_rdtsc();  // a caller's own clock starts at 0
  // A ring of 2 x queue slots holds 2 x queue - 1 packets, room() stops at
  // `queue`.  (RING_F_EXACT_SZ would size the ring itself at twice the
  // count rte_ring_get_memsize_elem is given.)
  const ssize_t size = rte_ring_get_memsize_elem(sizeof(void*), 2 * p.queue);
  if (size < 0) {
    return fail("rte_ring_get_memsize_elem refused the queue size");
  }
  for (auto& r : s->rings_) {
    r = static_cast<rte_ring*>(rte_zmalloc_socket("mcgw_shaper", static_cast<size_t>(size),
                                                  RTE_CACHE_LINE_SIZE,
                                                  socket < 0 ? SOCKET_ID_ANY : socket));
    // Not in DPDK's list of named rings: the name need not be unique.
    if (!r || rte_ring_init(r, "mcgw_shaper", 2 * p.queue, RING_F_SP_ENQ | RING_F_SC_DEQ) != 0) {
      return fail("no memory for a queue of " + std::to_string(p.queue) + " packets");
    }
  }
  return s;
}

Shaper::~Shaper() {
  for (unsigned prio = 0; prio < kPriorities; ++prio) {
    if (head_[prio]) {
      rte_pktmbuf_free(head_[prio]);
    }
    if (rte_ring* r = rings_[prio]) {
      void* m;
      while (rte_ring_sc_dequeue(r, &m) == 0) {
        rte_pktmbuf_free(static_cast<rte_mbuf*>(m));
      }
      rte_free(r);
    }
  }
}

unsigned Shaper::dequeue(rte_mbuf** out, unsigned n, uint64_t now) {
  if (total_ == 0) {
    return 0;
  }
  if (now > last_) {  // an earlier `now` (another worker's TSC reading) adds nothing
    const uint64_t gap = std::min(now - last_, max_gap_);
    tokens_ = std::min(capacity_, tokens_ + gap * params_.rate_bytes);
    last_ = now;
  }
  unsigned got = 0;
  for (int prio = kPriorities - 1; prio >= 0 && got < n; --prio) {
    while (got < n && queued_[prio] != 0) {
      rte_mbuf* m = head_[prio];
      if (!m) {
        void* obj;
        if (rte_ring_sc_dequeue(rings_[prio], &obj) != 0) [[unlikely]] {
          break;
        }
        m = static_cast<rte_mbuf*>(obj);
      }
      // A packet larger than the whole bucket (never: the bucket holds two
      // of the largest frames) goes when the bucket is full, not never.
      const uint64_t cost = std::min(uint64_t{m->pkt_len} * hz_, capacity_);
      if (tokens_ < cost) {
        head_[prio] = m;  // it goes first when the bucket can pay for it
        return got;
      }
      tokens_ -= cost;
      head_[prio] = nullptr;
      --queued_[prio];
      --total_;
      out[got++] = m;
    }
  }
  return got;
}

}  // namespace mcgw::policy
