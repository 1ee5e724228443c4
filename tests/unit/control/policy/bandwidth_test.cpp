// Tenant bandwidth on the control side (control/policy/bandwidth.*): which
// rates each (tenant, line) pair has (live, window, limit; PEER/LINE before
// PEER), live changes checked and dropped with their line, and what apply()
// publishes to the meter table (no EAL: the meter table takes a TSC rate).
#include "control/policy/bandwidth.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <string_view>

#include "config/loader.hpp"

namespace mcgw::policyview {
namespace {

using namespace std::chrono_literals;
using Clock = Bandwidth::Clock;

constexpr std::string_view kConfig = R"yaml(node: {name: gw-a, site: a}
eal: {hugepages: false, memory-mb: 128}
ports:
  - {name: lan0, role: lan, vdev: net_null0, tenant: train, addresses: [10.1.0.1/24]}
  - {name: lan1, role: lan, vdev: net_null2, tenant: bulk, addresses: [10.9.0.1/24]}
  - {name: wan0, role: wan, vdev: net_null1, addresses: [192.0.2.1/24]}
tenants:
  - name: train
    vni: 100
    bandwidth:
      limits:
        - {line: site-b, rate: 10M}
        - {line: site-b/l1, rate: 50M, peak-rate: 60M, burst: 64k}
      windows:
        - {name: night, line: site-b/l1, start: "01:00", end: "06:00", rate: 200M}
        - {name: late, line: site-b, start: "23:00", end: "01:00", rate: 30M}
  - name: bulk
    vni: 200
peers:
  - name: site-b
    lines:
      - {name: l1, port: wan0, local-vtep: 192.0.2.1, remote-vtep: 192.0.2.2}
      - {name: l2, port: wan0, local-vtep: 192.0.2.1, remote-vtep: 192.0.2.3}
  - name: site-c
    tenants: [bulk]
    lines:
      - {name: l1, port: wan0, local-vtep: 192.0.2.1, remote-vtep: 192.0.2.4}
)yaml";

config::ConfigPtr load(std::string_view text) {
  auto r = config::loadConfigText(std::string(text), "bw.yaml");
  EXPECT_TRUE(r.ok());
  return r.ok() ? *r : nullptr;
}

// 1970-01-01 at hh:mm UTC (the windows only look at the time of day).
Clock::time_point at(int hh, int mm) {
  return Clock::time_point(std::chrono::hours(hh) + std::chrono::minutes(mm));
}

std::string source(const Bandwidth& b, const char* tenant, const char* peer, const char* line,
                   Clock::time_point now) {
  auto f = b.inForce(tenant, peer, line, now);
  return f ? f->source + " " + config::formatRate(f->rate.cir * 8) : "unmetered";
}

TEST(Bandwidth, ConfigLimitsAndWindowsByPrecedence) {
  Bandwidth b(load(kConfig));
  // PEER/LINE wins over PEER; a window over a limit.
  EXPECT_EQ(source(b, "train", "site-b", "l1", at(12, 0)), "config 50M");
  EXPECT_EQ(source(b, "train", "site-b", "l2", at(12, 0)), "config 10M");
  EXPECT_EQ(source(b, "train", "site-b", "l1", at(1, 0)), "window 01:00-06:00 UTC 200M");
  EXPECT_EQ(source(b, "train", "site-b", "l1", at(5, 59)), "window 01:00-06:00 UTC 200M");
  EXPECT_EQ(source(b, "train", "site-b", "l1", at(6, 0)), "config 50M");  // end is exclusive
  // A window past midnight, for the peer: l2 gets it; l1 too, as its own
  // PEER/LINE window is not in force then (windows before limits).
  EXPECT_EQ(source(b, "train", "site-b", "l2", at(23, 30)), "window 23:00-01:00 UTC 30M");
  EXPECT_EQ(source(b, "train", "site-b", "l2", at(0, 59)), "window 23:00-01:00 UTC 30M");
  EXPECT_EQ(source(b, "train", "site-b", "l1", at(23, 30)), "window 23:00-01:00 UTC 30M");
  EXPECT_EQ(source(b, "train", "site-b", "l2", at(1, 0)), "config 10M");
  EXPECT_EQ(source(b, "bulk", "site-c", "l1", at(12, 0)), "unmetered");
  // The limit's other values: peak, burst; defaults of 10 ms at the rate.
  auto f = b.inForce("train", "site-b", "l1", at(12, 0));
  ASSERT_TRUE(f);
  EXPECT_EQ(f->rate.cir, 50'000'000u / 8);
  EXPECT_EQ(f->rate.pir, 60'000'000u / 8);
  EXPECT_EQ(f->rate.cbs, 64'000u);
  EXPECT_EQ(f->rate.pbs, 60'000'000u / 8 * 80 / 1000);  // 80 ms at the peak rate
}

TEST(Bandwidth, LiveRatesWinAndAreChecked) {
  Bandwidth b(load(kConfig));
  const auto now = at(12, 0);
  config::MeterRates r{"200M", "", "", ""};
  auto ok = b.set("train", "site-b/l1", r, "sdn.example.net", now);
  ASSERT_TRUE(ok) << ok.error();
  EXPECT_EQ(*ok, "tenant train on site-b/l1: rate 200M, peak 200M");
  EXPECT_EQ(source(b, "train", "site-b", "l1", now), "live by sdn.example.net 200M");
  EXPECT_EQ(source(b, "train", "site-b", "l2", now), "config 10M");  // PEER/LINE only
  // Live beats a window too, and a live PEER rate beats the PEER/LINE limit.
  EXPECT_EQ(source(b, "train", "site-b", "l1", at(2, 0)), "live by sdn.example.net 200M");
  ASSERT_TRUE(b.set("train", "site-b", config::MeterRates{"1G", "", "", ""}, "ops", now));
  EXPECT_EQ(source(b, "train", "site-b", "l2", now), "live by ops 1G");
  EXPECT_EQ(source(b, "train", "site-b", "l1", now), "live by sdn.example.net 200M");
  // A live rate on a pair the config does not meter.
  ASSERT_TRUE(b.set("bulk", "site-c/l1", config::MeterRates{"5M", "", "", ""}, "ops", now));
  EXPECT_EQ(source(b, "bulk", "site-c", "l1", now), "live by ops 5M");

  // Refused, with the reason, and nothing changes.
  auto bad = [&](const char* tenant, const char* line, config::MeterRates rr) {
    auto e = b.set(tenant, line, rr, "ops", now);
    EXPECT_FALSE(e);
    return e ? std::string() : e.error();
  };
  EXPECT_EQ(bad("nope", "site-b", r), "no tenant \"nope\"");
  EXPECT_EQ(bad("train", "site-x", r), "no peer \"site-x\"");
  EXPECT_EQ(bad("train", "site-b/l9", r), "peer \"site-b\" has no line \"l9\"");
  EXPECT_EQ(bad("train", "site-c", r), "peer \"site-c\" does not carry tenant \"train\"");
  EXPECT_NE(bad("train", "site-b/l1", {"40X", "", "", ""}).find("unknown unit"), std::string::npos);
  EXPECT_EQ(bad("train", "site-b/l1", {"40M", "20M", "", ""}), "peak rate 20M is below rate 40M");
  EXPECT_NE(bad("train", "site-b/l1", {"40M", "", "100", ""}).find("cbs"), std::string::npos);
  EXPECT_EQ(source(b, "train", "site-b", "l1", now), "live by sdn.example.net 200M");

  // Clearing goes back to the config; clearing what is not set is an error.
  auto c = b.set("train", "site-b/l1", std::nullopt, "ops", now);
  ASSERT_TRUE(c);
  EXPECT_EQ(*c, "tenant train on site-b/l1: back to the config's rates");
  EXPECT_EQ(source(b, "train", "site-b", "l1", now), "live by ops 1G");  // the PEER one now
  EXPECT_FALSE(b.set("train", "site-b/l1", std::nullopt, "ops", now));
}

TEST(Bandwidth, ALiveRateEndsWithItsLine) {
  Bandwidth b(load(kConfig));
  const auto now = at(12, 0);
  ASSERT_TRUE(b.set("train", "site-b/l2", config::MeterRates{"1G", "", "", ""}, "ops", now));
  ASSERT_TRUE(b.set("train", "site-b/l1", config::MeterRates{"2G", "", "", ""}, "ops", now));
  // The reload removes line l2: its live rate goes, l1's stays.
  std::string next(kConfig);
  next.erase(next.find("      - {name: l2,"),
             std::string("      - {name: l2, port: wan0, local-vtep: 192.0.2.1, remote-vtep: "
                         "192.0.2.3}\n")
                 .size());
  b.setConfig(load(next));
  EXPECT_EQ(source(b, "train", "site-b", "l1", now), "live by ops 2G");
  EXPECT_FALSE(b.set("train", "site-b/l2", std::nullopt, "ops", now));  // nothing to clear
}

TEST(Bandwidth, ApplyPublishesOnlyWhatChanged) {
  Bandwidth b(load(kConfig));
  int grace_periods = 0;
  policy::MeterTable meters(1, 2'000'000'000, [&] { ++grace_periods; });
  const std::vector<engine::TenantLineEntry> pairs = {{"train", "site-b", "l1", 3},
                                                      {"train", "site-b", "l2", 4},
                                                      {"bulk", "site-b", "l1", 5},
                                                      {"bulk", "site-c", "l1", 6}};
  b.apply(pairs, meters, at(12, 0));
  ASSERT_TRUE(meters.rate(3));
  EXPECT_EQ(meters.rate(3)->cir, 50'000'000u / 8);
  EXPECT_EQ(meters.rate(4)->cir, 10'000'000u / 8);
  EXPECT_FALSE(meters.rate(5));
  EXPECT_FALSE(meters.rate(6));
  // Nothing changed: nothing published.
  const int before = grace_periods;
  b.apply(pairs, meters, at(12, 1));
  EXPECT_EQ(grace_periods, before);
  // The window starts: slot 3 changes.
  b.apply(pairs, meters, at(1, 0));
  EXPECT_EQ(meters.rate(3)->cir, 200'000'000u / 8);
  EXPECT_EQ(meters.rate(4)->cir, 10'000'000u / 8);
  // A slot no pair has any more is cleared.
  b.apply({{"train", "site-b", "l1", 3}}, meters, at(1, 0));
  EXPECT_FALSE(meters.rate(4));
  EXPECT_TRUE(meters.rate(3));
}

TEST(ShareWeights, ByDemandWithAFloorForIdleWorkers) {
  EXPECT_TRUE(shareWeights({1000}).empty());    // one worker: nothing to share
  EXPECT_TRUE(shareWeights({40, 23}).empty());  // 63 packets: too few to tell
  EXPECT_EQ(shareWeights({1000, 0}), (std::vector<uint32_t>{900, 100}));  // floor 1000/8
  EXPECT_EQ(shareWeights({500, 500}), (std::vector<uint32_t>{500, 500}));
  EXPECT_EQ(shareWeights({3000, 1000, 0, 0}), (std::vector<uint32_t>{650, 250, 50, 50}));
  EXPECT_EQ(shareWeights({64, 0}), (std::vector<uint32_t>{900, 100}));
}

// With two workers, each metered slot's rate is shared by what each worker
// offered since the last apply; too little traffic or a move of 2 % or less
// leaves the shares as they are (nothing published).
TEST(Bandwidth, WorkersShareARateByTheirDemand) {
  Bandwidth b(load(kConfig));
  int grace_periods = 0;
  policy::MeterTable meters(2, 2'000'000'000, [&] { ++grace_periods; });
  const std::vector<engine::TenantLineEntry> pairs = {{"train", "site-b", "l1", 3},
                                                      {"train", "site-b", "l2", 4}};
  std::vector<std::vector<uint64_t>> demand(2, std::vector<uint64_t>(8));
  b.apply(pairs, meters, at(12, 0), &demand);
  EXPECT_TRUE(b.weights(3).empty());
  EXPECT_EQ(meters.workerRate(3, 0)->cir, 50'000'000u / 8 / 2);
  // Worker 0 offered 1000 packets of slot 3, worker 1 none: 90 % / 10 %.
  demand[0][3] += 1000;
  b.apply(pairs, meters, at(12, 0), &demand);
  EXPECT_EQ(b.weights(3), (std::vector<uint32_t>{900, 100}));
  EXPECT_EQ(meters.workerRate(3, 0)->cir, 50'000'000u / 8 * 9 / 10);
  EXPECT_EQ(meters.workerRate(3, 1)->cir, 50'000'000u / 8 / 10);
  EXPECT_TRUE(b.weights(4).empty());  // slot 4 saw nothing: equal shares
  EXPECT_EQ(meters.workerRate(4, 1)->cir, 10'000'000u / 8 / 2);
  // The same split again, and then a trickle: nothing published.
  int before = grace_periods;
  demand[0][3] += 1000;
  b.apply(pairs, meters, at(12, 0), &demand);
  demand[1][3] += 10;
  b.apply(pairs, meters, at(12, 0), &demand);
  EXPECT_EQ(grace_periods, before);
  EXPECT_EQ(b.weights(3), (std::vector<uint32_t>{900, 100}));
  // Balanced: half each.
  demand[0][3] += 500;
  demand[1][3] += 500;
  b.apply(pairs, meters, at(12, 0), &demand);
  EXPECT_EQ(b.weights(3), (std::vector<uint32_t>{500, 500}));
  EXPECT_EQ(meters.workerRate(3, 1)->cir, 50'000'000u / 8 / 2);
  // A rate change keeps the shares.
  before = grace_periods;
  b.apply(pairs, meters, at(1, 0), &demand);  // the night window: 200M
  EXPECT_GT(grace_periods, before);
  EXPECT_EQ(meters.workerRate(3, 0)->cir, 200'000'000u / 8 / 2);
  EXPECT_EQ(b.weights(3), (std::vector<uint32_t>{500, 500}));
}

TEST(Bandwidth, ViewSaysWhereRatesComeFrom) {
  Bandwidth b(load(kConfig));
  engine::CountersSnapshot c;
  c.meter_yellow[3] = 7;
  c.meter_red[3] = 2;
  const std::vector<engine::TenantLineEntry> pairs = {{"train", "site-b", "l1", 3},
                                                      {"bulk", "site-b", "l1", 5}};
  auto v = b.view(pairs, c, "train", at(12, 0));
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0]["peer"], "site-b");
  EXPECT_EQ(v[0]["line"], "l1");
  EXPECT_EQ(v[0]["rate"], "50M");
  EXPECT_EQ(v[0]["peak_rate"], "60M");
  EXPECT_EQ(v[0]["rate_bps"], 50'000'000u);
  EXPECT_EQ(v[0]["burst_bytes"], 64'000u);
  EXPECT_EQ(v[0]["source"], "config");
  EXPECT_EQ(v[0]["yellow_packets"], 7u);
  EXPECT_EQ(v[0]["red_packets"], 2u);
  auto u = b.view(pairs, c, "bulk", at(12, 0));
  ASSERT_EQ(u.size(), 1u);
  EXPECT_EQ(u[0]["source"], "unmetered");
  EXPECT_FALSE(u[0].contains("rate"));
}

// The config checks of tenants[].bandwidth, each at its line.
TEST(BandwidthConfig, ErrorsNameTheEntry) {
  auto errors = [](const std::string& bandwidth) {
    std::string text(kConfig);
    const std::string from = "    bandwidth:\n";
    const size_t a = text.find(from);
    const size_t b = text.find("  - name: bulk");
    text.replace(a, b - a, bandwidth);
    auto r = config::loadConfigText(text, "bw.yaml");
    std::string all;
    if (!r.ok()) {
      for (const auto& e : r.error()) {
        all += e.toString() + "\n";
      }
    }
    return all;
  };
  EXPECT_EQ(errors("    bandwidth:\n      limits:\n        - {line: site-x, rate: 1M}\n"),
            "bw.yaml:12:18: /mcgw:tenants/tenant[name='train']/bandwidth/limits/"
            "limit[line='site-x']/line: no peer 'site-x' in peers\n");
  EXPECT_EQ(errors("    bandwidth:\n      limits:\n        - {line: site-c, rate: 1M}\n"),
            "bw.yaml:12:18: /mcgw:tenants/tenant[name='train']/bandwidth/limits/"
            "limit[line='site-c']/line: peer 'site-c' does not carry tenant 'train'\n");
  EXPECT_EQ(errors("    bandwidth:\n      limits:\n        - {line: site-b/l7, rate: 1M}\n"),
            "bw.yaml:12:18: /mcgw:tenants/tenant[name='train']/bandwidth/limits/"
            "limit[line='site-b/l7']/line: peer 'site-b' has no line 'l7'\n");
  EXPECT_NE(errors("    bandwidth:\n      limits:\n        - {line: site-b, rate: 10M, "
                   "peak-rate: 5M}\n")
                .find("peak-rate 5M is below rate 10M"),
            std::string::npos);
  EXPECT_NE(errors("    bandwidth:\n      limits:\n        - {line: site-b, rate: 10M, "
                   "burst: 1k}\n")
                .find("burst 1k is below one maximum-size frame (1518 bytes)"),
            std::string::npos);
  EXPECT_NE(errors("    bandwidth:\n      limits:\n        - {line: site-b, rate: 20T}\n")
                .find("above the maximum"),
            std::string::npos);
  EXPECT_NE(
      errors("    bandwidth:\n      windows:\n"
             "        - {name: a, line: site-b, start: \"22:00\", end: \"02:00\", rate: 1M}\n"
             "        - {name: b, line: site-b, start: \"01:00\", end: \"03:00\", rate: 1M}\n")
          .find("overlaps window 'a' of 'site-b' (22:00 to 02:00)"),
      std::string::npos);
  EXPECT_NE(
      errors("    bandwidth:\n      windows:\n"
             "        - {name: a, line: site-b, start: \"02:00\", end: \"02:00\", rate: 1M}\n")
          .find("the window is empty"),
      std::string::npos);
  // Windows of different lines may overlap.
  EXPECT_EQ(
      errors("    bandwidth:\n      windows:\n"
             "        - {name: a, line: site-b/l1, start: \"22:00\", end: \"02:00\", rate: 1M}\n"
             "        - {name: b, line: site-b/l2, start: \"01:00\", end: \"03:00\", rate: 1M}\n"),
      "");
}

}  // namespace
}  // namespace mcgw::policyview
