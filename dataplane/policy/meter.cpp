#include "dataplane/policy/meter.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <new>

namespace mcgw::policy {
namespace {

using u128 = unsigned __int128;

// Bytes per bucket update and the update period in cycles for `rate` bytes
// per second and a bucket of `bucket` bytes (docs at the top of meter.hpp).
constexpr uint64_t kTargetPeriod = 65536;

void tokenParams(uint64_t rate, uint64_t bucket, uint64_t hz, uint64_t& period, uint64_t& bytes) {
  const u128 want = (static_cast<u128>(rate) * kTargetPeriod + hz / 2) / hz;
  const uint64_t cap = std::max<uint64_t>(1, bucket / 4);
  bytes = static_cast<uint64_t>(std::clamp<u128>(want, 1, cap));
  const u128 p = (static_cast<u128>(hz) * bytes + rate / 2) / rate;
  period = static_cast<uint64_t>(std::clamp<u128>(p, 1, std::numeric_limits<uint64_t>::max() / 4));
}

// Cycles for an empty bucket to fill.
u128 fillCycles(uint64_t bucket, uint64_t period, uint64_t bytes) {
  return static_cast<u128>((bucket + bytes - 1) / bytes) * period;
}

uint64_t share(uint64_t value, uint32_t weight, uint64_t total) {
  return static_cast<uint64_t>(static_cast<u128>(value) * weight / total);
}

}  // namespace

Result<Rate, std::string> Rate::make(uint64_t cir, uint64_t pir, uint64_t cbs, uint64_t pbs) {
  constexpr uint64_t kMaxRate = kMaxRateBits / 8;
  auto n = [](uint64_t v) { return std::to_string(v); };
  if (cir == 0) {
    return unexpected(std::string("cir must be more than 0 bytes/s"));
  }
  if (pir < cir) {
    return unexpected("pir (" + n(pir) + " bytes/s) must be at least cir (" + n(cir) + " bytes/s)");
  }
  if (pir > kMaxRate) {
    return unexpected("pir (" + n(pir) + " bytes/s) is above the maximum " + n(kMaxRate) +
                      " bytes/s (" + formatRate(kMaxRateBits) + "bit/s)");
  }
  for (auto [name, v] : {std::pair{"cbs", cbs}, std::pair{"pbs", pbs}}) {
    if (v < kMinBurstBytes) {
      return unexpected(std::string(name) + " (" + n(v) +
                        " bytes) must hold one maximum-size frame (" + n(kMinBurstBytes) +
                        " bytes)");
    }
    if (v > kMaxSizeBytes) {
      return unexpected(std::string(name) + " (" + n(v) + " bytes) is above the maximum " +
                        n(kMaxSizeBytes) + " bytes");
    }
  }
  return Rate{cir, pir, cbs, pbs};
}

uint64_t Rate::defaultBurst(uint64_t rate_bytes) {
  return std::clamp<uint64_t>(rate_bytes * kDefaultBurstMs / 1000, kMinBurstBytes, kMaxSizeBytes);
}

Result<Rate, std::string> Rate::fromBits(uint64_t cir_bits, uint64_t pir_bits, uint64_t cbs,
                                         uint64_t pbs) {
  const uint64_t cir = cir_bits / 8, pir = pir_bits / 8;
  const uint64_t c = cbs ? cbs : defaultBurst(cir);
  // A committed burst given alone also widens the peak bucket: else the
  // peak bucket (the rate's default) would be the tighter one and the
  // burst would change nothing when peak-rate is the rate.
  const uint64_t p = pbs ? pbs : std::max(c, defaultBurst(pir));
  return make(cir, pir, c, p);
}

rte_meter_trtcm_profile makeTrtcmProfile(const Rate& rate, uint64_t tsc_hz) {
  rte_meter_trtcm_profile p{};
  p.cbs = rate.cbs;
  p.pbs = rate.pbs;
  tokenParams(rate.cir, rate.cbs, tsc_hz, p.cir_period, p.cir_bytes_per_period);
  tokenParams(rate.pir, rate.pbs, tsc_hz, p.pir_period, p.pir_bytes_per_period);
  return p;
}

// ------------------------------------------------------------ MeterTable

MeterTable::MeterTable(unsigned workers, uint64_t tsc_hz, Synchronize synchronize)
    : workers_(std::max(1u, workers)),
      tsc_hz_(tsc_hz),
      synchronize_(std::move(synchronize)),
      slots_(new std::atomic<Profile*>[kMaxMeters]) {
  for (uint32_t i = 0; i < kMaxMeters; ++i) {
    slots_[i].store(nullptr, std::memory_order_relaxed);
  }
}

MeterTable::~MeterTable() {
  for (uint32_t i = 0; i < kMaxMeters; ++i) {
    freeProfile(slots_[i].load(std::memory_order_relaxed));
  }
}

MeterTable::Profile* MeterTable::newProfile(unsigned workers) {
  const size_t bytes = sizeof(Profile) + sizeof(WorkerProfile) * workers;
  void* raw = ::operator new (bytes, std::align_val_t{alignof(Profile)}, std::nothrow);
  if (raw == nullptr) {
    return nullptr;
  }
  auto* p = new (raw) Profile{};
  p->per_worker = new (static_cast<std::byte*>(raw) + sizeof(Profile)) WorkerProfile[workers]{};
  return p;
}

void MeterTable::freeProfile(Profile* p) {
  if (p != nullptr) {
    // Profile and WorkerProfile are trivially destructible.
    ::operator delete (p, std::align_val_t{alignof(Profile)});
  }
}

Result<bool, std::string> MeterTable::apply(std::span<const Change> changes) {
  // Check everything first.
  for (const Change& c : changes) {
    const std::string where = "meter slot " + std::to_string(c.slot);
    if (c.slot >= kMaxMeters) {
      return unexpected(where + ": out of range (at most " + std::to_string(kMaxMeters - 1) + ")");
    }
    if (!c.rate) {
      continue;
    }
    if (auto r = Rate::make(c.rate->cir, c.rate->pir, c.rate->cbs, c.rate->pbs); !r) {
      return unexpected(where + ": " + r.error());
    }
    if (!c.weights.empty()) {
      if (c.weights.size() != workers_) {
        return unexpected(where + ": " + std::to_string(c.weights.size()) + " weights for " +
                          std::to_string(workers_) + " workers");
      }
      if (std::all_of(c.weights.begin(), c.weights.end(), [](uint32_t w) { return w == 0; })) {
        return unexpected(where + ": every weight is 0");
      }
    }
  }
  // Build every profile before publishing any.
  std::vector<Profile*> fresh(changes.size(), nullptr);
  for (size_t i = 0; i < changes.size(); ++i) {
    const Change& c = changes[i];
    if (!c.rate) {
      continue;
    }
    Profile* p = newProfile(workers_);
    if (p == nullptr) {
      for (Profile* f : fresh) {
        freeProfile(f);
      }
      return unexpected(std::string("meter profiles: out of memory"));
    }
    p->rate = *c.rate;
    uint64_t total = 0;
    for (unsigned w = 0; w < workers_; ++w) {
      total += c.weights.empty() ? 1 : c.weights[w];
    }
    for (unsigned w = 0; w < workers_; ++w) {
      const uint32_t weight = c.weights.empty() ? 1 : c.weights[w];
      Rate r;
      r.cir = std::max<uint64_t>(1, share(c.rate->cir, weight, total));
      r.pir = std::max(r.cir, share(c.rate->pir, weight, total));
      r.cbs = std::max(kMinBurstBytes, share(c.rate->cbs, weight, total));
      r.pbs = std::max(kMinBurstBytes, share(c.rate->pbs, weight, total));
      WorkerProfile& wp = p->per_worker[w];
      wp.rate = r;
      wp.trtcm = makeTrtcmProfile(r, tsc_hz_);
      const u128 fill =
          std::max(fillCycles(r.cbs, wp.trtcm.cir_period, wp.trtcm.cir_bytes_per_period),
                   fillCycles(r.pbs, wp.trtcm.pir_period, wp.trtcm.pir_bytes_per_period)) +
          wp.trtcm.cir_period + wp.trtcm.pir_period;
      wp.refill_cycles =
          static_cast<uint64_t>(std::min<u128>(fill, std::numeric_limits<uint64_t>::max() / 2));
    }
    fresh[i] = p;
  }
  // Publish; a slot that was unmetered starts a new epoch (full buckets).
  std::vector<Profile*> retired;
  for (size_t i = 0; i < changes.size(); ++i) {
    std::atomic<Profile*>& slot = slots_[changes[i].slot];
    Profile* old = slot.load(std::memory_order_relaxed);
    if (fresh[i] != nullptr) {
      fresh[i]->epoch = old != nullptr ? old->epoch : next_epoch_++;
    }
    slot.store(fresh[i], std::memory_order_release);
    if (old != nullptr) {
      retired.push_back(old);
    }
  }
  if (!retired.empty()) {
    if (synchronize_) {
      synchronize_();
    }
    for (Profile* p : retired) {
      freeProfile(p);
    }
  }
  return true;
}

Result<bool, std::string> MeterTable::set(uint32_t slot, const Rate& rate) {
  const Change c{slot, rate, {}};
  return apply({&c, 1});
}

Result<bool, std::string> MeterTable::clear(uint32_t slot) {
  const Change c{slot, std::nullopt, {}};
  return apply({&c, 1});
}

std::optional<Rate> MeterTable::rate(uint32_t slot) const {
  if (slot >= kMaxMeters) {
    return std::nullopt;
  }
  const Profile* p = slots_[slot].load(std::memory_order_acquire);
  return p ? std::optional<Rate>(p->rate) : std::nullopt;
}

std::optional<Rate> MeterTable::workerRate(uint32_t slot, unsigned worker) const {
  if (slot >= kMaxMeters || worker >= workers_) {
    return std::nullopt;
  }
  const Profile* p = slots_[slot].load(std::memory_order_acquire);
  if (p == nullptr) {
    return std::nullopt;
  }
  return p->per_worker[worker].rate;
}

// ------------------------------------------------------------ WorkerMeters

WorkerMeters::WorkerMeters(const MeterTable& table, unsigned worker)
    : slots_(table.slots_.get()),
      worker_(std::min(worker, table.workers() - 1)),
      state_(new State[MeterTable::kMaxMeters]()) {}

Colour WorkerMeters::meter(const MeterTable::Profile& p, uint32_t slot, uint64_t tsc,
                           uint32_t bytes) {
  State& s = state_[slot];
  const MeterTable::WorkerProfile& wp = p.per_worker[worker_];
  if (s.epoch != p.epoch || tsc - s.trtcm.time_tc > wp.refill_cycles) [[unlikely]] {
    fill(s, wp, p.epoch, tsc);
  }
  rte_meter_trtcm& m = s.trtcm;
  const rte_meter_trtcm_profile& t = wp.trtcm;
  if (tsc - m.time_tc < t.cir_period && tsc - m.time_tp < t.pir_period) {
    // No whole update period since the last packet (the usual case within
    // a burst): what rte_meter_trtcm_color_blind_check() computes when both
    // of its divisions give 0, without them.
    const uint64_t tc = m.tc < t.cbs ? m.tc : t.cbs;
    const uint64_t tp = m.tp < t.pbs ? m.tp : t.pbs;
    // Without branches (the colours of interleaved slots are hard to
    // predict): red takes nothing, yellow P's tokens, green both.
    const bool red = tp < bytes;
    const bool yellow = !red && tc < bytes;
    m.tp = tp - (red ? 0 : bytes);
    m.tc = tc - (red || yellow ? 0 : bytes);
    return static_cast<Colour>(static_cast<uint8_t>(red) * 2 + static_cast<uint8_t>(yellow));
  }
  // rte_meter takes non-const profiles but never writes them.
  return static_cast<Colour>(
      rte_meter_trtcm_color_blind_check(&m, const_cast<rte_meter_trtcm_profile*>(&t), tsc, bytes));
}

void WorkerMeters::fill(State& s, const MeterTable::WorkerProfile& wp, uint64_t epoch,
                        uint64_t tsc) {
  s.trtcm.time_tc = tsc;
  s.trtcm.time_tp = tsc;
  s.trtcm.tc = wp.trtcm.cbs;
  s.trtcm.tp = wp.trtcm.pbs;
  s.epoch = epoch;
}

}  // namespace mcgw::policy
