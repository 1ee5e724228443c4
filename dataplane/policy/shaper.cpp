#include "dataplane/policy/shaper.hpp"

#include <rte_common.h>
#include <rte_cycles.h>
#include <rte_malloc.h>

#include <algorithm>

namespace mcgw::policy {

std::unique_ptr<Shaper> Shaper::create(const ShapeParams& p, int socket, std::string* error,
                                       uint64_t tsc_hz, LineBucket* line) {
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
  // 1/256 cycles per byte, << 16: at most 8e9 << 24 (2^57), rounded up (as
  // is each packet's cost) so that the line never gets more than its rate.
  // tau below 2^62: signed comparisons.
  const unsigned __int128 per_byte =
      ((static_cast<unsigned __int128>(hz) << 24) + p.rate_bytes - 1) / p.rate_bytes;
  const unsigned __int128 tau = (static_cast<unsigned __int128>(bucket) * per_byte) >> 16;
  if (tau >= (unsigned __int128){1} << 62) {
    return fail("bucket " + std::to_string(bucket) + " bytes is too large");
  }
  std::unique_ptr<Shaper> s(new Shaper());
  s->params_ = p;
  s->per_byte_ = static_cast<uint64_t>(per_byte);
  s->tau_ = static_cast<uint64_t>(tau);
  // The most a line can legitimately be busy (all in 1/256 cycles): each
  // of up to 128 workers (eal.workers' bound) that took tokens at the same
  // instant spent less than the bucket plus one largest frame, and at
  // least 60 s (a slower shaper of the line, after a reload, may leave it
  // busy longer than this one would: 128 x 0.23 s at 1M with jumbo
  // frames).  A backstop: refreshLineBucket keeps tat from wrapping.
  const unsigned __int128 frame_cost = (static_cast<unsigned __int128>(frame) * per_byte) >> 16;
  const unsigned __int128 minute = static_cast<unsigned __int128>(hz) * 60 << 8;
  s->stale_ = static_cast<uint64_t>(std::min<unsigned __int128>(
      (unsigned __int128){1} << 62, std::max(128 * (tau + frame_cost), minute)));
  if (line) {
    s->line_ = line;
  } else {
    s->own_ = std::make_unique<LineBucket>();
    s->line_ = s->own_.get();
    // A line starts idle; a caller's own clock starts at 0.
    s->line_->tat.store(tsc_hz ? 0 : rte_rdtsc() << 8, std::memory_order_relaxed);
  }
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
  if (published_) {
    line_->backlog.fetch_sub(published_, std::memory_order_relaxed);
  }
}

void Shaper::publish(bool draining) {
  uint64_t mine = 0;
  for (unsigned prio = 0; prio < kPriorities && !draining; ++prio) {
    mine |= uint64_t{queued_[prio] != 0} << (8 * prio);
  }
  if (mine != published_) {
    // One add: counts rise and fall in their own bytes, none below 0.
    line_->backlog.fetch_add(mine - published_, std::memory_order_relaxed);
    published_ = mine;
  }
}

void refreshLineBucket(LineBucket& line, uint64_t now) {
  const uint64_t now_fp = now << 8;
  uint64_t tat = line.tat.load(std::memory_order_relaxed);
  // Idle for more than ~2^32 cycles: the bucket is full either way.
  if (static_cast<int64_t>(now_fp - tat) > (int64_t{1} << 40)) {
    line.tat.compare_exchange_strong(tat, now_fp, std::memory_order_relaxed);
  }
}

unsigned Shaper::dequeue(rte_mbuf** out, unsigned n, uint64_t now, bool draining) {
  if (total_ == 0) {
    return 0;  // nothing published either: publish() ran when it emptied
  }
  // The lowest priority this shaper may send: the highest another holds.
  // A draining shaper's few packets go ahead of the line's new ones
  // anyway: it neither yields nor holds others back.
  const uint64_t others = line_->backlog.load(std::memory_order_relaxed) - published_;
  const int lowest = others && !draining ? (63 - __builtin_clzll(others)) / 8 : 0;
  // What the bucket lets go: tau less the time the line is still busy.
  const uint64_t now_fp = now << 8;
  uint64_t tat = line_->tat.load(std::memory_order_relaxed);
  int64_t busy = std::max<int64_t>(0, static_cast<int64_t>(tat - now_fp));
  if (busy > static_cast<int64_t>(stale_)) [[unlikely]] {
    // Not a line that is busy: a tat so far behind (idle for 2^55 cycles,
    // never with refreshLineBucket running) that it wrapped.
    line_->tat.compare_exchange_strong(tat, now_fp, std::memory_order_relaxed);
    busy = 0;
  }
  const int64_t room = static_cast<int64_t>(tau_) - busy;
  int64_t spent = 0;
  unsigned got = 0;
  bool blocked = false;  // a head packet waits for the bucket
  for (int prio = kPriorities - 1; prio >= lowest && got < n && !blocked; --prio) {
    while (got < n && queued_[prio] != 0) {
      rte_mbuf* m = head_[prio];
      if (!m) {
        void* obj;
        if (rte_ring_sc_dequeue(rings_[prio], &obj) != 0) [[unlikely]] {
          break;
        }
        m = static_cast<rte_mbuf*>(obj);
      }
      // GCRA's test: a packet conforms when the line is busy for less than
      // tau when it starts, whatever its size (so small packets of another
      // worker cannot keep a large one waiting for ever).
      if (spent >= room) {
        head_[prio] = m;  // it goes first when the bucket can pay for it
        blocked = true;   // and nothing of a lower priority before it
        break;
      }
      spent += static_cast<int64_t>(
          (static_cast<unsigned __int128>(m->pkt_len) * per_byte_ + 0xffff) >> 16);
      head_[prio] = nullptr;
      --queued_[prio];
      --total_;
      out[got++] = m;
    }
  }
  if (spent) {
    // Another worker may have moved tat since: the line then gets this
    // batch beyond the bucket once (see the header), never lost time.
    uint64_t next;
    do {
      next = (static_cast<int64_t>(tat - now_fp) > 0 ? tat : now_fp) + static_cast<uint64_t>(spent);
    } while (!line_->tat.compare_exchange_weak(tat, next, std::memory_order_relaxed));
  }
  publish(draining);
  return got;
}

}  // namespace mcgw::policy
