#include "control/policy/policy_service.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>

namespace mcgw::policyview {

namespace {

// Each tenant's limits and windows as meter rates: the errors of those
// that are not (the semantic checks parse them too; this is what the
// meters accept, e.g. a burst below one frame).
std::vector<std::string> rateErrors(const config::Config& c) {
  std::vector<std::string> errors;
  for (const auto& t : c.tenants) {
    auto check = [&](const config::MeterRates& r, const std::string& what) {
      if (auto rate = Bandwidth::toRate(r); !rate) {
        errors.push_back("tenant " + t.name + ", " + what + ": " + rate.error());
      }
    };
    for (const auto& l : t.bandwidth.limits) {
      check(l.rates, "bandwidth limit " + l.line);
    }
    for (const auto& w : t.bandwidth.windows) {
      check(w.rates, "bandwidth window " + w.line);
    }
  }
  return errors;
}

}  // namespace

PolicyService::PolicyService(config::ConfigPtr config, engine::Dataplane& dataplane,
                             std::string state_dir)
    : config_(config),
      dp_(dataplane),
      bandwidth_(config),
      state_dir_(std::move(state_dir)),
      usage_(std::make_unique<usage::UsageLedger>(usage::optionsFrom(config->usage, state_dir_),
                                                  std::chrono::system_clock::now())) {}

PolicyService::~PolicyService() = default;

void PolicyService::attach(core::EventLoop& loop) {
  loop_ = &loop;
  timer_ = loop.every(
      std::chrono::seconds(1), "policy", [this] { refresh(); }, core::Priority::kNormal);
  refresh();
  scheduleUsage();
}

void PolicyService::setPaused(bool paused) {
  paused_ = paused;
  if (timer_) {
    timer_.setEnabled(!paused);
  }
  if (paused) {
    usage_timer_ = {};
  } else if (loop_) {
    scheduleUsage();
  }
}

void PolicyService::scheduleUsage() {
  using namespace std::chrono;
  auto wait =
      duration_cast<microseconds>(usage_->nextBoundary() - system_clock::now()) + milliseconds(5);
  wait = std::clamp<microseconds>(wait, milliseconds(1), seconds(1));
  usage_timer_ = loop_->after(wait, "usage", [this] {
    sampleUsage();
    scheduleUsage();
  });
}

void PolicyService::sampleUsage() {
  static const std::vector<engine::TenantLineEntry> kNone;
  const engine::ForwardingTables* t = dp_.tables();
  usage_->sample(t ? t->tenant_lines : kNone, dp_.counters(), std::chrono::system_clock::now());
}

void PolicyService::closeUsage() {
  sampleUsage();
  usage_->close(std::chrono::system_clock::now());
}

std::vector<std::string> PolicyService::validate(const config::Config& next) const {
  return rateErrors(next);
}

Result<bool, std::string> PolicyService::prepare(const daemon::ReloadPlan& plan) {
  pending_ = plan.next;
  return true;
}

void PolicyService::apply() {
  if (pending_) {
    config_ = std::move(pending_);
    bandwidth_.setConfig(config_);
    usage_->configure(usage::optionsFrom(config_->usage, state_dir_));
  }
  refresh();
}

void PolicyService::abort() {
  pending_.reset();
}

void PolicyService::refresh() {
  if (const engine::ForwardingTables* t = dp_.tables()) {
    // With several workers each metered rate is shared by what each worker
    // offered its meter in the last second.
    const auto demand =
        dp_.meters().workers() > 1 ? dp_.meterDemand() : std::vector<std::vector<uint64_t>>{};
    bandwidth_.apply(t->tenant_lines, dp_.meters(), Bandwidth::Clock::now(),
                     demand.empty() ? nullptr : &demand);
  }
}

Result<std::string, std::string> PolicyService::setRate(
    const std::string& tenant, const std::string& line,
    const std::optional<config::MeterRates>& rates, const std::string& who) {
  auto r = bandwidth_.set(tenant, line, rates, who, Bandwidth::Clock::now());
  if (r) {
    refresh();
  }
  return r;
}

nlohmann::json PolicyService::bandwidthView(const engine::CountersSnapshot& counters,
                                            const std::string& tenant) const {
  const engine::ForwardingTables* t = dp_.tables();
  return t ? bandwidth_.view(t->tenant_lines, counters, tenant, Bandwidth::Clock::now())
           : nlohmann::json::array();
}

}  // namespace mcgw::policyview
