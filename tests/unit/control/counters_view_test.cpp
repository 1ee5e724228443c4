// `mcgwctl show counters` as text (control/cli/status_view.cpp): the mapped
// ranges' table, from the counters JSON that mcgwd sends.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "control/cli/status_view.hpp"

namespace mcgw::cli {
namespace {

TEST(CountersViewTest, MappedRangesAreListedWithBothDirections) {
  const auto counters = nlohmann::json::parse(R"({
    "schema": "mcgw.counters/1", "drops": {}, "drops_total": 0,
    "lan": {}, "wan": {}, "icmp": {},
    "mapped": [
      {"name": "legacy-erp", "tenant": "t1", "real": "10.1.0.0/16",
       "mapped": "100.65.0.0/16", "out": 1523, "in": 1498}
    ]})");
  const std::string text = renderCounters(counters);
  EXPECT_NE(text.find("Mapped ranges                   out pkts      in pkts\n"
                      "  legacy-erp                           1523         1498  10.1.0.0/16 as "
                      "100.65.0.0/16\n"),
            std::string::npos)
      << text;
}

TEST(CountersViewTest, NoMappedRangesNoTable) {
  const auto counters = nlohmann::json::parse(
      R"({"schema": "mcgw.counters/1", "drops": {}, "drops_total": 0,
          "lan": {}, "wan": {}, "icmp": {}, "mapped": []})");
  EXPECT_EQ(renderCounters(counters).find("Mapped ranges"), std::string::npos);
}

}  // namespace
}  // namespace mcgw::cli
