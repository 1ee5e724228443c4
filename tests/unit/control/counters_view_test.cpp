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

// `mcgwctl status`'s BGP block says the VRRP standing and how it reached FRR.
TEST(StatusViewTest, BgpStanding) {
  auto status = nlohmann::json::parse(R"({
    "health": {"state": "healthy", "reasons": []}, "node": {}, "config": {},
    "daemon": {"pid": 1, "uptime_s": 1}, "ports": [],
    "bgp": {"enabled": true, "asn": 65001, "router_id": "10.255.0.1",
      "frr_config": {"state": "applied", "file": "/etc/frr/frr.conf"},
      "standing": {"mode": "prepend", "prepend": 3, "since": "2026-12-03T21:40:53Z",
        "apply": {"state": "applied", "via": "vtysh", "at": "2026-12-03T21:40:53Z",
                  "took_ms": 240, "error": null}}}})");
  std::string text = renderStatus(status);
  EXPECT_NE(text.find("\n  standing prepend 3 since 2026-12-03T21:40:53Z: applied with vtysh in "
                      "240 ms\n"),
            std::string::npos)
      << text;
  status["bgp"]["standing"] = nlohmann::json::parse(R"({"mode": "active", "prepend": null,
    "since": null, "apply": {"state": "applied", "via": null, "at": null, "took_ms": null,
    "error": null}})");
  text = renderStatus(status);
  EXPECT_NE(text.find("\n  standing active: applied\n"), std::string::npos) << text;
}

}  // namespace
}  // namespace mcgw::cli
