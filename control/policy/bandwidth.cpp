#include "control/policy/bandwidth.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>

#include "config/text.hpp"

namespace mcgw::policyview {

namespace {

using nlohmann::json;

// Minutes since midnight UTC.
unsigned minuteOfDay(Bandwidth::Clock::time_point now) {
  const auto s = std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count();
  return static_cast<unsigned>(((s % 86400) + 86400) % 86400 / 60);
}

bool covers(const config::BandwidthWindow& w, unsigned m) {
  return w.start_minute < w.end_minute ? m >= w.start_minute && m < w.end_minute
                                       : m >= w.start_minute || m < w.end_minute;
}

std::string hhmm(uint16_t m) {
  char b[8];
  std::snprintf(b, sizeof b, "%02u:%02u", m / 60u % 100u, m % 60u);
  return b;
}

const config::TenantConfig* tenantOf(const config::Config& c, const std::string& name) {
  return c.findTenant(name);
}

// Whether `spec` (PEER or PEER/LINE) names a line that carries the tenant.
Result<bool, std::string> checkLine(const config::Config& c, const std::string& tenant,
                                    const std::string& spec) {
  const auto slash = spec.find('/');
  const std::string peer_name = spec.substr(0, slash);
  const config::PeerConfig* peer = c.findPeer(peer_name);
  if (!peer) {
    return unexpected("no peer " + text::quote(peer_name));
  }
  if (!peer->tenants.empty() &&
      std::find(peer->tenants.begin(), peer->tenants.end(), tenant) == peer->tenants.end()) {
    return unexpected("peer " + text::quote(peer_name) + " does not carry tenant " +
                      text::quote(tenant));
  }
  if (slash != std::string::npos) {
    const std::string line = spec.substr(slash + 1);
    if (std::none_of(peer->lines.begin(), peer->lines.end(),
                     [&](const config::LineConfig& l) { return l.name == line; })) {
      return unexpected("peer " + text::quote(peer_name) + " has no line " + text::quote(line));
    }
  }
  return true;
}

}  // namespace

Result<policy::Rate, std::string> Bandwidth::toRate(const config::MeterRates& r) {
  auto cir = config::parseRate(r.rate);
  if (!cir) {
    return unexpected(cir.error());
  }
  uint64_t pir = *cir;
  if (!r.peak_rate.empty()) {
    auto p = config::parseRate(r.peak_rate);
    if (!p) {
      return unexpected(p.error());
    }
    if (*p < *cir) {
      return unexpected("peak rate " + r.peak_rate + " is below rate " + r.rate);
    }
    pir = *p;
  }
  uint64_t cbs = 0, pbs = 0;
  for (auto [text, out] : {std::pair{&r.burst, &cbs}, std::pair{&r.peak_burst, &pbs}}) {
    if (!text->empty()) {
      auto s = config::parseSize(*text);
      if (!s) {
        return unexpected(s.error());
      }
      *out = *s;
    }
  }
  return policy::Rate::fromBits(*cir, pir, cbs, pbs);
}

void Bandwidth::setConfig(config::ConfigPtr config) {
  std::lock_guard lock(mutex_);
  config_ = std::move(config);
  for (auto it = live_.begin(); it != live_.end();) {
    const auto& [tenant, line] = it->first;
    if (!tenantOf(*config_, tenant) || !checkLine(*config_, tenant, line)) {
      spdlog::warn("bandwidth: the live rate of tenant {} on {} ends: the config has no such {}",
                   tenant, line, tenantOf(*config_, tenant) ? "line" : "tenant");
      it = live_.erase(it);
    } else {
      ++it;
    }
  }
}

Result<std::string, std::string> Bandwidth::set(const std::string& tenant, const std::string& line,
                                                const std::optional<config::MeterRates>& rates,
                                                const std::string& who, Clock::time_point now) {
  std::lock_guard lock(mutex_);
  if (!tenantOf(*config_, tenant)) {
    return unexpected("no tenant " + text::quote(tenant));
  }
  if (auto ok = checkLine(*config_, tenant, line); !ok) {
    return unexpected(ok.error());
  }
  const auto key = std::make_pair(tenant, line);
  if (!rates) {
    if (live_.erase(key) == 0) {
      return unexpected("tenant " + text::quote(tenant) + " has no live rate on " +
                        text::quote(line));
    }
    spdlog::info("bandwidth: {} cleared the live rate of tenant {} on {}", who, tenant, line);
    return "tenant " + tenant + " on " + line + ": back to the config's rates";
  }
  auto rate = toRate(*rates);
  if (!rate) {
    return unexpected(rate.error());
  }
  live_[key] = {*rates, who, now};
  const std::string peak = rates->peak_rate.empty() ? rates->rate : rates->peak_rate;
  spdlog::info("bandwidth: {} set tenant {} on {} to rate {} peak {}{}{}", who, tenant, line,
               rates->rate, peak, rates->burst.empty() ? "" : " burst " + rates->burst,
               rates->peak_burst.empty() ? "" : " peak-burst " + rates->peak_burst);
  return "tenant " + tenant + " on " + line + ": rate " + rates->rate + ", peak " + peak;
}

std::optional<Bandwidth::InForce> Bandwidth::inForce(const std::string& tenant,
                                                     const std::string& peer,
                                                     const std::string& line,
                                                     Clock::time_point now) const {
  std::lock_guard lock(mutex_);
  return inForceLocked(tenant, peer, line, now);
}

std::optional<Bandwidth::InForce> Bandwidth::inForceLocked(const std::string& tenant,
                                                           const std::string& peer,
                                                           const std::string& line,
                                                           Clock::time_point now) const {
  const std::string specs[] = {peer + "/" + line, peer};
  auto make = [](const config::MeterRates& r, std::string source) -> std::optional<InForce> {
    auto rate = toRate(r);
    if (!rate) {
      return std::nullopt;  // checked when it came in: not expected
    }
    return InForce{*rate, r, std::move(source)};
  };
  for (const auto& spec : specs) {
    if (auto it = live_.find({tenant, spec}); it != live_.end()) {
      return make(it->second.rates, "live by " + it->second.who);
    }
  }
  const config::TenantConfig* t = tenantOf(*config_, tenant);
  if (!t) {
    return std::nullopt;
  }
  const unsigned m = minuteOfDay(now);
  for (const auto& spec : specs) {
    for (const auto& w : t->bandwidth.windows) {
      if (w.line == spec && covers(w, m)) {
        return make(w.rates, "window " + hhmm(w.start_minute) + "-" + hhmm(w.end_minute) + " UTC");
      }
    }
  }
  for (const auto& spec : specs) {
    for (const auto& l : t->bandwidth.limits) {
      if (l.line == spec) {
        return make(l.rates, "config");
      }
    }
  }
  return std::nullopt;
}

std::vector<uint32_t> shareWeights(const std::vector<uint64_t>& delta) {
  const size_t n = delta.size();
  uint64_t total = 0;
  for (uint64_t d : delta) {
    total += d;
  }
  if (n < 2 || total < kMinShareSample) {
    return {};
  }
  // Each worker's demand plus a floor of total / 4n; then scaled to
  // kShareScale, every worker at least 1.
  const double floor = static_cast<double>(total) / (4.0 * static_cast<double>(n));
  const double sum = static_cast<double>(total) + floor * static_cast<double>(n);
  std::vector<uint32_t> w(n);
  for (size_t i = 0; i < n; ++i) {
    const double share = (static_cast<double>(delta[i]) + floor) / sum;
    w[i] = std::max<uint32_t>(1, static_cast<uint32_t>(share * kShareScale + 0.5));
  }
  return w;
}

namespace {

// Whether two weight vectors give some worker a share that differs by more
// than 2 % of the rate (empty: equal shares).
bool sharesMoved(const std::vector<uint32_t>& a, const std::vector<uint32_t>& b, size_t workers) {
  auto share = [&](const std::vector<uint32_t>& w, size_t i) {
    if (w.empty()) {
      return 1.0 / static_cast<double>(workers);
    }
    double sum = 0;
    for (uint32_t x : w) {
      sum += x;
    }
    return static_cast<double>(w[i]) / sum;
  };
  for (size_t i = 0; i < workers; ++i) {
    if (std::abs(share(a, i) - share(b, i)) > 0.02) {
      return true;
    }
  }
  return false;
}

}  // namespace

void Bandwidth::apply(const std::vector<engine::TenantLineEntry>& pairs, policy::MeterTable& meters,
                      Clock::time_point now, const std::vector<std::vector<uint64_t>>* demand) {
  std::lock_guard lock(mutex_);
  std::map<uint16_t, Applied> want;
  for (const auto& p : pairs) {
    if (auto f = inForceLocked(p.tenant, p.peer, p.line, now)) {
      want[p.slot] = {f->rate, {}};
    }
  }
  // The workers' shares by what each offered since the last apply.
  const size_t workers = meters.workers();
  std::map<uint16_t, std::vector<uint64_t>> seen;
  if (demand && workers > 1 && demand->size() == workers) {
    for (auto& [slot, a] : want) {
      std::vector<uint64_t> cur(workers), delta(workers);
      for (size_t w = 0; w < workers; ++w) {
        cur[w] = slot < (*demand)[w].size() ? (*demand)[w][slot] : 0;
      }
      auto last = last_demand_.find(slot);
      for (size_t w = 0; w < workers; ++w) {
        const uint64_t before = last == last_demand_.end() ? cur[w] : last->second[w];
        delta[w] = cur[w] >= before ? cur[w] - before : cur[w];  // a rebased slot: from zero
      }
      auto old = applied_.find(slot);
      const std::vector<uint32_t> current =
          old == applied_.end() ? std::vector<uint32_t>{} : old->second.weights;
      // Too little traffic to tell (empty): the shares stay as they are.
      const std::vector<uint32_t> proposed = shareWeights(delta);
      a.weights = !proposed.empty() && sharesMoved(proposed, current, workers) ? proposed : current;
      seen[slot] = std::move(cur);
    }
  } else {
    for (auto& [slot, a] : want) {
      if (auto old = applied_.find(slot); old != applied_.end()) {
        a.weights = old->second.weights;
      }
    }
  }
  std::vector<policy::MeterTable::Change> changes;
  for (const auto& [slot, a] : want) {
    auto it = applied_.find(slot);
    if (it == applied_.end() || !(it->second.rate == a.rate) || it->second.weights != a.weights) {
      changes.push_back({slot, a.rate, a.weights});
    }
  }
  for (const auto& [slot, a] : applied_) {
    if (!want.count(slot)) {
      changes.push_back({slot, std::nullopt, {}});
    }
  }
  if (demand) {
    last_demand_ = std::move(seen);
  }
  if (changes.empty()) {
    return;
  }
  if (auto r = meters.apply(changes); !r) {
    spdlog::error("bandwidth: the meters could not be changed: {}", r.error());
    return;
  }
  applied_ = std::move(want);
}

std::vector<uint32_t> Bandwidth::weights(uint16_t slot) const {
  std::lock_guard lock(mutex_);
  auto it = applied_.find(slot);
  return it == applied_.end() ? std::vector<uint32_t>{} : it->second.weights;
}

json Bandwidth::view(const std::vector<engine::TenantLineEntry>& pairs,
                     const engine::CountersSnapshot& counters, const std::string& tenant,
                     Clock::time_point now) const {
  std::lock_guard lock(mutex_);
  json out = json::array();
  for (const auto& p : pairs) {
    if (p.tenant != tenant) {
      continue;
    }
    json e = {{"peer", p.peer},
              {"line", p.line},
              {"yellow_packets", counters.meter_yellow[p.slot]},
              {"red_packets", counters.meter_red[p.slot]},
              {"priority", p.priority}};
    if (p.capacity_bits) {
      e["line_capacity_bps"] = p.capacity_bits;
      e["line_capacity"] = config::formatRate(p.capacity_bits);
      e["line_full_packets"] = counters.line_full[p.slot];
    }
    if (auto f = inForceLocked(p.tenant, p.peer, p.line, now)) {
      e["rate_bps"] = f->rate.cir * 8;
      e["peak_rate_bps"] = f->rate.pir * 8;
      e["burst_bytes"] = f->rate.cbs;
      e["peak_burst_bytes"] = f->rate.pbs;
      e["rate"] = config::formatRate(f->rate.cir * 8);
      e["peak_rate"] = config::formatRate(f->rate.pir * 8);
      e["source"] = f->source;
      // The workers' shares in per mille (absent: equal shares).
      if (auto a = applied_.find(p.slot); a != applied_.end() && !a->second.weights.empty()) {
        e["worker_shares"] = a->second.weights;
      }
    } else {
      e["source"] = "unmetered";
    }
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace mcgw::policyview
