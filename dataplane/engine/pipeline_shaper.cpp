// Shaped lines (docs/policy.md, "Priority when a line is full"): the route
// stage hands a packet into a line with a capacity to shape(), which queues
// it by its tenant's priority (policy::Shaper), or drops it (line-full) when
// that queue is full.  Every poll, serviceShapers() sends what the lines'
// rates let out.
//
// Each worker has its own shaper of a line; the line's shapers in all
// workers share the line's bucket (Dataplane::line_buckets_), so the line
// gets its capacity and strict priority holds across workers.
//
// An encrypted line's packets wait unsealed and are sealed as they leave
// (sealQueued): ESP numbers them in the order the line sends them, so the
// peer's replay window never sees a low priority's packets arrive behind
// thousands of later-numbered ones.
//
// A shaper lives as long as its line keeps its rate, queue and port across
// table changes.  A line whose shaping changes gets a new shaper; the old one
// keeps sending what it holds at the old rate, and the new one sends nothing
// of the line's until the old one is empty, so the line's packets stay in
// order.  A line that is gone or no longer shaped: its shaper drains the
// same way.
#include <rte_cycles.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>

#include <algorithm>
#include <bitset>

#include "dataplane/engine/pipeline.hpp"

namespace mcgw::engine {

Pipeline::Shaping Pipeline::shape(ShapedLine& s, uint8_t priority, uint16_t tenant_line,
                                  rte_mbuf* m) {
  if (!s.shaper->enqueue(m, priority)) {
    // For flow audit (routeSampled): the line (last_hop_) and why.
    last_drop_ = uint32_t{static_cast<uint8_t>(FlowStatus::kLineFull)} << 16 | kNoRule;
    counters_->line_full[tenant_line].add();
    drop(m, DropReason::kLINE_FULL);
    return Shaping::kDropped;
  }
  counters_->shaped.add();
  shaped_queued_ = true;
  return Shaping::kQueued;
}

void Pipeline::serviceShapers(const ForwardingTables& t) {
  if (!shaped_queued_) {
    return;
  }
  const uint64_t now = rte_rdtsc();
  // The lines whose draining shaper still holds packets: their new shaper waits.
  std::bitset<kMaxLines> waiting;
  bool any = false;
  for (int pass = 0; pass < 2; ++pass) {
    for (auto& sp : shaped_) {
      ShapedLine& s = *sp;
      if (s.draining != (pass == 0) || s.shaper->queued() == 0) {
        continue;
      }
      // Behind an older shaper of the line that still holds packets: a new
      // shaper, or (pass 0) a draining one after two quick changes.
      // shaped_ is oldest first.
      if (waiting.test(s.slot)) {
        any = true;
        continue;
      }
      rte_mbuf* out[kBurst];
      const unsigned n = s.shaper->dequeue(out, kBurst, now, s.draining);
      for (unsigned i = 0; i < n; ++i) {
        if (!s.esp_line || sealQueued(s, out[i])) {
          transmit(t, s.port, out[i]);
        }
      }
      if (s.shaper->queued() != 0) {
        any = true;
        if (pass == 0) {
          waiting.set(s.slot);
        }
      }
    }
  }
  flushRuns();
  shaped_queued_ = any;
  if (!any) {
    // Drained shapers go now; nothing they held is left.
    std::erase_if(shaped_, [](const auto& sp) { return sp->draining; });
  }
}

void Pipeline::adoptShapers(const ForwardingTables& t) {
  std::bitset<kMaxLines> wanted;
  for (const LineEntry& line : t.lines) {
    if (line.shape.rate_bytes == 0) {
      continue;
    }
    wanted.set(line.slot);
    ShapedLine* cur = shaper_of_slot_[line.slot];
    // The line's outbound SA, held by the shaper (the tables hold it too).
    auto sa = [&]() -> std::shared_ptr<EspSa> {
      for (const auto& s : t.sas) {
        if (s.get() == line.esp) {
          return s;
        }
      }
      return nullptr;
    };
    const bool esp_line = line.esp != nullptr;
    if (cur && cur->shaper->params() == line.shape && cur->port == line.port &&
        cur->esp_line == esp_line &&
        (!esp_line || (cur->esp_at == line.esp_at && cur->esp_udp == line.esp_udp &&
                       cur->outer_l4 == line.outer_l4))) {
      if (esp_line && cur->esp.get() != line.esp) {
        cur->esp = sa();  // a new SA (rekeyed): what leaves from now on is sealed with it
      }
      continue;
    }
    if (cur) {
      cur->draining = true;
      shaper_of_slot_[line.slot] = nullptr;
    }
    auto shaper = policy::Shaper::create(line.shape, static_cast<int>(rte_socket_id()), nullptr, 0,
                                         line_buckets_ ? &line_buckets_[line.slot] : nullptr);
    if (!shaper) {
      counters_->shaper_failed.add();
      continue;
    }
    auto s = std::make_unique<ShapedLine>();
    s->shaper = std::move(shaper);
    s->slot = line.slot;
    s->port = line.port;
    s->esp_line = esp_line;
    if (esp_line) {
      s->esp_udp = line.esp_udp;
      s->esp_at = line.esp_at;
      s->outer_l4 = line.outer_l4;
      s->esp = sa();
    }
    shaper_of_slot_[line.slot] = s.get();
    shaped_.push_back(std::move(s));
  }
  for (size_t slot = 0; slot < kMaxLines; ++slot) {
    if (shaper_of_slot_[slot] && !wanted.test(slot)) {
      shaper_of_slot_[slot]->draining = true;
      shaper_of_slot_[slot] = nullptr;
    }
  }
  // Shapers that hold nothing go at once.
  std::erase_if(shaped_, [](const auto& sp) { return sp->draining && sp->shaper->queued() == 0; });
  shaped_queued_ = std::any_of(shaped_.begin(), shaped_.end(),
                               [](const auto& sp) { return sp->shaper->queued() != 0; });
}

}  // namespace mcgw::engine
