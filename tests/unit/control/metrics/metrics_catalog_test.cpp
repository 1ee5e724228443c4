// The metrics catalog: Prometheus naming, the X-lists it is generated from,
// and docs/monitoring.md, which must list exactly its families.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "control/metrics/metrics.hpp"
#include "dataplane/engine/counters.hpp"
#include "dataplane/engine/drop_reason.hpp"
#include "dataplane/engine/port.hpp"

namespace mcgw::metrics {
namespace {

const char* typeName(prometheus::MetricType t) {
  return t == prometheus::MetricType::Counter ? "counter" : "gauge";
}

TEST(MetricsCatalogTest, NamesFollowPrometheusConventions) {
  const std::regex name("mcgw_[a-z0-9_]+");
  const std::regex label("[a-z_]+(, [a-z_]+)*");
  std::set<std::string> seen;
  for (const auto& m : catalog()) {
    EXPECT_TRUE(std::regex_match(m.name, name)) << m.name;
    EXPECT_TRUE(seen.insert(m.name).second) << "twice: " << m.name;
    const bool total = m.name.size() > 6 && m.name.ends_with("_total");
    if (m.type == prometheus::MetricType::Counter) {
      EXPECT_TRUE(total) << "a counter must end in _total: " << m.name;
    } else {
      EXPECT_EQ(m.type, prometheus::MetricType::Gauge) << m.name;
      EXPECT_FALSE(total) << "a gauge must not end in _total: " << m.name;
    }
    EXPECT_FALSE(m.help.empty()) << m.name;
    EXPECT_TRUE(m.labels.empty() || std::regex_match(m.labels, label))
        << m.name << ": " << m.labels;
    // Base units in the name (seconds, bytes), never milliseconds or kilobytes.
    EXPECT_FALSE(std::regex_search(m.name, std::regex("_(ms|milliseconds|kb|kilobytes)(_|$)")))
        << m.name;
  }
}

TEST(MetricsCatalogTest, GeneratedFromTheCounterLists) {
#define MCGW_EXPECT_EVENT(name, group, key, ...) \
  EXPECT_NE(findMetric(std::string("mcgw_") + group + "_" + key + "_total"), nullptr) << #name;
  MCGW_EVENT_COUNTERS(MCGW_EXPECT_EVENT)
#undef MCGW_EXPECT_EVENT
#define MCGW_EXPECT_PORT(member, metric, ...) \
  EXPECT_NE(findMetric(std::string("mcgw_port_") + metric + "_total"), nullptr) << #member;
  MCGW_PORT_COUNTERS(MCGW_EXPECT_PORT)
#undef MCGW_EXPECT_PORT
  const MetricInfo* drops = findMetric("mcgw_drops_total");
  ASSERT_NE(drops, nullptr);
  EXPECT_EQ(drops->labels, "reason");
}

TEST(MetricsCatalogTest, BuilderRefusesNamesOutsideTheCatalog) {
  FamilyBuilder b;
  b.add("mcgw_drops_total", {{"reason", "no-route"}}, 3);
  b.add("mcgw_drops_total", {{"reason", "malformed"}}, 4);
  b.add("mcgw_port_up", {{"port", "lan0"}, {"role", "lan"}}, 1);
  EXPECT_THROW(b.add("mcgw_not_a_metric", {}, 1), std::logic_error);
  auto f = b.take();
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].name, "mcgw_drops_total");
  EXPECT_EQ(f[0].type, prometheus::MetricType::Counter);
  ASSERT_EQ(f[0].metric.size(), 2u);
  EXPECT_EQ(f[0].metric[1].label.at(0).value, "malformed");
  EXPECT_EQ(f[0].metric[1].counter.value, 4);
  EXPECT_EQ(f[1].metric.at(0).gauge.value, 1);
}

// docs/monitoring.md: one table row per family, "| `name` | type | labels | help |".
TEST(MetricsCatalogTest, DocsListEveryMetric) {
  std::ifstream in(std::string(MCGW_SOURCE_DIR) + "/docs/monitoring.md");
  ASSERT_TRUE(in) << "docs/monitoring.md";
  const std::regex row(R"(\| `(mcgw_[a-z0-9_]+)` \| (counter|gauge) \| ([a-z_, ]*) \|.*)");
  std::map<std::string, std::string> documented;
  std::string line;
  while (std::getline(in, line)) {
    std::smatch m;
    if (std::regex_match(line, m, row)) {
      documented[m[1]] = std::string(m[2]) + " | " + std::string(m[3]);
    }
  }
  std::ostringstream missing;
  for (const auto& m : catalog()) {
    const std::string want = std::string(typeName(m.type)) + " | " + m.labels;
    auto it = documented.find(m.name);
    if (it == documented.end() || it->second != want) {
      missing << "| `" << m.name << "` | " << want << " | " << m.help << " |\n";
    }
    if (it != documented.end()) {
      documented.erase(it);
    }
  }
  EXPECT_EQ(missing.str(), "") << "rows docs/monitoring.md lacks or has wrong";
  for (const auto& [name, _] : documented) {
    ADD_FAILURE() << "docs/monitoring.md lists " << name << ", which mcgwd does not export";
  }
}

}  // namespace
}  // namespace mcgw::metrics
