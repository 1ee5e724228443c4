#include "control/flows/flow_audit.hpp"

#include <rte_cycles.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <ctime>

#include "control/core/iso_time.hpp"
#include "dataplane/engine/policy_tables.hpp"

namespace mcgw::flows {

namespace {

// Samples taken per drain at most (the rest waits for the next one).
constexpr size_t kMaxSamplesPerDrain = 1 << 16;

}  // namespace

FlowAudit::FlowAudit(config::ConfigPtr config, engine::Dataplane& dataplane)
    : config_(std::move(config)), dp_(dataplane) {
  tsc_hz_ = std::max<uint64_t>(1, rte_get_tsc_hz());
  anchorClock();
  if (auto e = exportersFor(config_->flow_audit); e) {
    exporters_ = std::move(*e);
  } else {
    spdlog::error("flow audit: {}", e.error());
  }
}

FlowAudit::~FlowAudit() {
  timer_.reset();
  dp_.setFlowSampling(0);
  anchorClock();
  drain();
  table_.flush(ended_);
  exportEnded();
}

void FlowAudit::anchorClock() {
  tsc0_ = rte_rdtsc();
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  wall0_ms_ = static_cast<uint64_t>(ts.tv_sec) * 1000 + static_cast<uint64_t>(ts.tv_nsec) / 1000000;
}

uint64_t FlowAudit::nowMs() const {
  return wall0_ms_;
}

// A sample's time: its TSC relative to the latest (TSC, CLOCK_REALTIME)
// pair, taken on every poll, so the TSC's drift against the wall clock
// (and steps of the wall clock) never add up over a sample's few ms.
uint64_t FlowAudit::sampleMs(uint64_t tsc) const {
  auto ms = [this](uint64_t d) { return d / tsc_hz_ * 1000 + d % tsc_hz_ * 1000 / tsc_hz_; };
  if (tsc >= tsc0_) {
    return wall0_ms_ + ms(tsc - tsc0_);
  }
  const uint64_t back = ms(tsc0_ - tsc);
  return wall0_ms_ > back ? wall0_ms_ - back : 0;
}

Result<std::vector<std::unique_ptr<IpfixExporter>>, std::string> FlowAudit::exportersFor(
    const config::FlowAuditConfig& next) {
  std::vector<std::unique_ptr<IpfixExporter>> out;
  for (const auto& c : next.collectors) {
    auto open = IpfixExporter::open(c, 0);
    if (!open) {
      return unexpected("collector " + c.address.toString() + ":" + std::to_string(c.port) + ": " +
                        open.error());
    }
    out.push_back(std::move(*open));
  }
  return out;
}

void FlowAudit::attach(core::EventLoop& loop) {
  loop_ = &loop;
  timer_ = loop.every(
      std::chrono::duration_cast<std::chrono::microseconds>(kDrainPeriod), "flow-audit",
      [this] { poll(); }, core::Priority::kNormal);
  anchorClock();
  last_expire_ms_ = last_templates_ms_ = nowMs();
  if (config_->flow_audit.enabled()) {
    for (auto& e : exporters_) {
      e->sendTemplates();
    }
    dp_.setFlowSampling(config_->flow_audit.sampling);
    spdlog::info("flow audit: sampling 1-in-{}, {} collector(s)", config_->flow_audit.sampling,
                 exporters_.size());
  }
  updateTimer();
}

void FlowAudit::updateTimer() {
  if (timer_) {
    timer_.setEnabled(!paused_ && config_->flow_audit.enabled());
  }
}

void FlowAudit::setPaused(bool paused) {
  paused_ = paused;
  updateTimer();
}

void FlowAudit::drain() {
  samples_.clear();
  const size_t n = dp_.takeFlowSamples(samples_, kMaxSamplesPerDrain);
  drained_ += n;
  const uint32_t scale = std::max<uint32_t>(1, config_->flow_audit.sampling);
  for (const auto& s : samples_) {
    FlowRecord& r = table_.add(s, sampleMs(s.tsc), scale, ended_);
    // Named when the record begins: a later reload may give the slot of a
    // rule it removed to another rule.
    if (s.rule != engine::kNoRule && r.rule_name.empty()) {
      r.rule_name = ruleName(s.rule);
    }
  }
}

const std::string& FlowAudit::ruleName(uint16_t slot) {
  static const std::string kNone;
  const engine::ForwardingTables* t = dp_.tables();
  if (!t) {
    return kNone;
  }
  if (t != names_tables_ || t->generation != names_generation_) {
    names_tables_ = t;
    names_generation_ = t->generation;
    rule_names_.assign(engine::kMaxPolicySlots, std::string());
    for (const engine::TenantEntry& te : t->tenants) {
      rule_names_[te.isolation_slot] = "(isolation)";
      if (!te.policy) {
        continue;
      }
      rule_names_[te.policy->default_slot] = "(default)";
      for (size_t i = 0; i < te.policy->rules.size() && i < te.policy->slot_of_rule.size(); ++i) {
        rule_names_[te.policy->slot_of_rule[i]] = te.policy->rules[i].name;
      }
    }
  }
  return slot < rule_names_.size() ? rule_names_[slot] : kNone;
}

void FlowAudit::poll() {
  anchorClock();
  drain();
  const uint64_t now = nowMs();
  const auto& fa = config_->flow_audit;
  if (now >= last_expire_ms_ + kExpireEveryMs) {
    last_expire_ms_ = now;
    table_.expire(now, uint64_t{fa.active_timeout_s} * 1000, uint64_t{fa.idle_timeout_s} * 1000,
                  ended_);
  }
  if (now >= last_templates_ms_ + uint64_t{fa.template_refresh_s} * 1000) {
    last_templates_ms_ = now;
    for (auto& e : exporters_) {
      e->sendTemplates();
    }
  }
  exportEnded();
}

void FlowAudit::exportEnded() {
  if (ended_.empty()) {
    return;
  }
  std::vector<ExportFlow> out;
  out.reserve(ended_.size());
  for (const FlowRecord& r : ended_) {
    ExportFlow x;
    x.flow = r;
    x.vrf = r.key.vni;  // taken with the sample: right across reloads
    out.push_back(x);
  }
  ended_.clear();
  for (auto& e : exporters_) {
    e->send(out);  // failures are counted per collector
  }
  records_exported_ += out.size();
}

Result<bool, std::string> FlowAudit::prepare(const daemon::ReloadPlan& plan) {
  pending_.reset();
  Pending p;
  p.next = plan.next;
  if (!(plan.next->flow_audit.collectors == config_->flow_audit.collectors)) {
    auto e = exportersFor(plan.next->flow_audit);
    if (!e) {
      return unexpected("flow audit: " + e.error());
    }
    p.exporters = std::move(*e);
  }
  pending_ = std::move(p);
  return true;
}

void FlowAudit::apply() {
  if (!pending_) {
    return;
  }
  Pending p = std::move(*pending_);
  pending_.reset();
  const auto& before = config_->flow_audit;
  const auto& after = p.next->flow_audit;
  if (after.sampling != before.sampling) {
    // The records so far were counted at the old rate: they end now.
    dp_.setFlowSampling(0);
    anchorClock();
    drain();
    table_.flush(ended_);
    exportEnded();
  }
  if (!(after.collectors == before.collectors)) {
    // Collectors that stay keep their exporter (sequence numbers, counters).
    for (auto& fresh : p.exporters) {
      for (auto& old : exporters_) {
        if (old && old->collector() == fresh->collector()) {
          fresh = std::move(old);
          break;
        }
      }
    }
    for (auto& old : exporters_) {
      if (old) {
        removed_errors_ += old->stats().errors;
        removed_lost_ += old->stats().lost;
      }
    }
    exporters_ = std::move(p.exporters);
  }
  config_ = p.next;
  if (after.enabled()) {
    for (auto& e : exporters_) {
      if (e->stats().templates == 0) {
        e->sendTemplates();
      }
    }
  }
  dp_.setFlowSampling(after.sampling);
  // The drain timer is the loop's: setPaused(false) after the reload
  // enables or disables it for the new config (apply() runs off the loop).
}

void FlowAudit::abort() {
  pending_.reset();
}

Result<FlowsFilter, std::string> flowsFilter(const nlohmann::json& args) {
  FlowsFilter f;
  if (args.contains("tenant")) {
    if (!args["tenant"].is_string() || args["tenant"].get<std::string>().size() > 128) {
      return unexpected(
          std::string("show-flows: argument \"tenant\" must be a string of at most 128 bytes"));
    }
    f.tenant = args["tenant"].get<std::string>();
  }
  if (args.contains("denied")) {
    if (!args["denied"].is_boolean()) {
      return unexpected(std::string("show-flows: argument \"denied\" must be true or false"));
    }
    f.denied = args["denied"].get<bool>();
  }
  if (args.contains("limit")) {
    if (!args["limit"].is_number_unsigned() || args["limit"].get<uint64_t>() < 1 ||
        args["limit"].get<uint64_t>() > kMaxFlowsShown) {
      return unexpected("show-flows: argument \"limit\" must be a number from 1 to " +
                        std::to_string(kMaxFlowsShown));
    }
    f.limit = args["limit"].get<size_t>();
  }
  return f;
}

namespace {

std::string addressText(const uint8_t* a, bool v4) {
  config::IpAddress ip;
  ip.family = v4 ? config::Family::V4 : config::Family::V6;
  std::copy(a, a + (v4 ? 4 : 16), ip.bytes.begin());
  return ip.toString();
}

std::string msTime(uint64_t ms) {
  using namespace std::chrono;
  std::string s = core::isoTime(system_clock::time_point(milliseconds(ms)));
  // isoTime has whole seconds ("...:05Z"): the milliseconds go before the Z.
  if (!s.empty() && s.back() == 'Z') {
    char frac[8];
    std::snprintf(frac, sizeof frac, ".%03u", static_cast<unsigned>(ms % 1000));
    s.insert(s.size() - 1, frac);
  }
  return s;
}

}  // namespace

nlohmann::json FlowAudit::flows(const FlowsFilter& filter) const {
  using nlohmann::json;
  const auto& fa = config_->flow_audit;
  const engine::ForwardingTables* t = dp_.tables();
  json out = json::array();
  size_t matched = 0;
  const auto& records = table_.records();
  for (auto it = records.rbegin(); it != records.rend(); ++it) {
    const FlowRecord& r = *it;
    const FlowKey& k = r.key;
    std::string tenant;
    for (const auto& tc : config_->tenants) {
      if (tc.vni == k.vni) {
        tenant = tc.name;
        break;
      }
    }
    if (!filter.tenant.empty() && tenant != filter.tenant) {
      continue;
    }
    const bool dropped = k.status != static_cast<uint8_t>(engine::FlowStatus::kForwarded);
    if (filter.denied && !dropped) {
      continue;
    }
    if (++matched > filter.limit) {
      continue;  // counted, not shown
    }
    json peer = nullptr, line = nullptr;
    if (t && k.line != engine::kNoLine) {
      for (const auto& l : t->lines) {
        if (l.slot == k.line) {
          peer = l.peer;
          line = l.name;
          break;
        }
      }
    }
    const bool from_tunnel =
        k.direction == static_cast<uint8_t>(engine::FlowDirection::kFromTunnel);
    const char* direction = from_tunnel                 ? "from-tunnel"
                            : k.line == engine::kNoLine ? "from-lan"
                                                        : "to-tunnel";
    const bool v4 = k.ip_version == 4;
    out.push_back({{"tenant", tenant.empty() ? json(nullptr) : json(tenant)},
                   {"vni", k.vni},
                   {"family", v4 ? "ipv4" : "ipv6"},
                   {"protocol", k.protocol},
                   {"source", addressText(k.src, v4)},
                   {"destination", addressText(k.dst, v4)},
                   {"source_port", k.src_port},
                   {"destination_port", k.dst_port},
                   {"direction", direction},
                   {"peer", peer},
                   {"line", line},
                   {"interface", lineInterface(k.line)},
                   {"packets", r.packets},
                   {"bytes", r.bytes},
                   {"tcp_flags", r.tcp_flags},
                   {"first", msTime(r.first_ms)},
                   {"last", msTime(r.last_ms)},
                   {"status", statusName(k.status)},
                   {"forwarding_status", forwardingStatus(k.status)},
                   {"rule", k.rule == engine::kNoRule ? json(nullptr) : json(r.rule_name)}});
  }
  return {{"schema", "mcgw.flows/1"},      {"enabled", fa.enabled()}, {"sampling", fa.sampling},
          {"flows_active", table_.size()}, {"matched", matched},      {"flows", std::move(out)}};
}

nlohmann::json FlowAudit::status() const {
  using nlohmann::json;
  const auto& fa = config_->flow_audit;
  const engine::CountersSnapshot c = dp_.counters();
  json collectors = json::array();
  uint64_t errors = removed_errors_, lost = removed_lost_;
  for (const auto& e : exporters_) {
    const ExporterStats& s = e->stats();
    errors += s.errors;
    lost += s.lost;
    collectors.push_back(
        {{"address", e->collector().address.toString()},
         {"port", e->collector().port},
         {"records", s.records},
         {"records_lost", s.lost},
         {"template_sends", s.templates},
         {"errors", s.errors},
         {"last_error", s.last_error.empty() ? json(nullptr) : json(s.last_error)}});
  }
  json interfaces = json::array();
  if (const engine::ForwardingTables* t = dp_.tables()) {
    for (const auto& l : t->lines) {
      interfaces.push_back(
          {{"interface", lineInterface(l.slot)}, {"peer", l.peer}, {"line", l.name}});
    }
  }
  return {{"enabled", fa.enabled()},
          {"sampling", fa.sampling},
          {"active_timeout_s", fa.active_timeout_s},
          {"idle_timeout_s", fa.idle_timeout_s},
          {"template_refresh_s", fa.template_refresh_s},
          {"samples", c.flow_samples},
          {"ring_full", c.flow_ring_full},
          {"samples_drained", drained_},
          {"flows_active", table_.size()},
          {"flows_max", table_.capacity()},
          {"flows_evicted", table_.evicted()},
          {"records_exported", records_exported_},
          {"records_lost", lost},
          {"export_errors", errors},
          {"collectors", collectors},
          {"interfaces", interfaces}};
}

}  // namespace mcgw::flows
