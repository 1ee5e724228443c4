// deriveMss against a literal table: VXLAN and Geneve, IPv4 and IPv6 outer
// headers, derived and fixed clamps, the 536 / 1220 floors.
#include "control/lines/mss_policy.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace mcgw::lines {
namespace {

using Mode = config::MssClamp::Mode;
using proto::Encapsulation;

struct Case {
  const char* name;
  config::MssClamp clamp;
  std::vector<LinePath> lines;
  TunnelMss want;
};

TEST(MssPolicyTest, LiteralTable) {
  const LinePath v4_1500{1500, false, Encapsulation::kVxlan};
  const LinePath v6_1500{1500, true, Encapsulation::kVxlan};
  const LinePath geneve_v4_1500{1500, false, Encapsulation::kGeneve};
  const LinePath geneve_v6_9000{9000, true, Encapsulation::kGeneve};
  const Case cases[] = {
      // 1500 - 50 (VXLAN/IPv4 incl. inner Ethernet) = 1450; - 40 / - 60.
      {"vxlan ipv4 outer, derived", {Mode::kAuto, 0}, {v4_1500}, {1410, 1390}},
      // 1500 - 70 = 1430.
      {"vxlan ipv6 outer, derived", {Mode::kAuto, 0}, {v6_1500}, {1390, 1370}},
      {"geneve ipv4 outer, derived", {Mode::kAuto, 0}, {geneve_v4_1500}, {1410, 1390}},
      {"geneve ipv6 outer 9000, derived", {Mode::kAuto, 0}, {geneve_v6_9000}, {8890, 8870}},
      // The lowest line decides.
      {"lowest line", {Mode::kAuto, 0}, {geneve_v6_9000, v6_1500, v4_1500}, {1390, 1370}},
      {"learned path MTU 1400",
       {Mode::kAuto, 0},
       {{1400, false, Encapsulation::kVxlan}},
       {1310, 1290}},
      // Fixed lowers the derived value (IPv6: value - 20) ...
      {"fixed below derived", {Mode::kFixed, 1300}, {v4_1500}, {1300, 1280}},
      // ... but never raises it.
      {"fixed above derived", {Mode::kFixed, 1460}, {v4_1500}, {1410, 1390}},
      // Floors: 536 for IPv4, 1220 for IPv6.
      {"fixed below the floors", {Mode::kFixed, 500}, {v4_1500}, {536, 1220}},
      {"tiny path MTU", {Mode::kAuto, 0}, {{576, false, Encapsulation::kVxlan}}, {536, 1220}},
      {"path MTU below the overhead",
       {Mode::kAuto, 0},
       {{40, true, Encapsulation::kGeneve}},
       {536, 1220}},
      {"ipv6 just above its floor",
       {Mode::kAuto, 0},
       {{1400, true, Encapsulation::kVxlan}},
       {1290, 1270}},
      // ESP (docs/encryption.md, "Overhead"): IP 20 | ESP 8 | IV 8 | UDP 8 |
      // VXLAN 8 | inner frame | pad 0..3 | 2 | ICV 16; payload + 2 a multiple
      // of 4.  1500: 1480 - 32 = 1448 -> payload 1446 -> frame 1430 -> 1416.
      {"esp vxlan ipv4 1500",
       {Mode::kAuto, 0},
       {{1500, false, Encapsulation::kVxlan, true, false}},
       {1376, 1356}},
      // NAT-T: 8 more: 1440 -> 1438 -> 1422 -> 1408.
      {"esp nat-t ipv4 1500",
       {Mode::kAuto, 0},
       {{1500, false, Encapsulation::kVxlan, true, true}},
       {1368, 1348}},
      // IPv6 outer: 1460 - 32 = 1428 -> 1426 -> 1410 -> 1396.
      {"esp vxlan ipv6 1500",
       {Mode::kAuto, 0},
       {{1500, true, Encapsulation::kVxlan, true, false}},
       {1356, 1336}},
      // The padding: 1503 gives no more than 1500 (1451 rounds down to
      // 1448), 1504 four bytes more.
      {"esp 1503",
       {Mode::kAuto, 0},
       {{1503, false, Encapsulation::kVxlan, true, false}},
       {1376, 1356}},
      {"esp 1504",
       {Mode::kAuto, 0},
       {{1504, false, Encapsulation::kVxlan, true, false}},
       {1380, 1360}},
      // An encrypted line among clear ones decides.
      {"esp lowest",
       {Mode::kAuto, 0},
       {v4_1500, {1500, false, Encapsulation::kGeneve, true, false}},
       {1376, 1356}},
      // Off: no clamp at all.
      {"off", {Mode::kOff, 0}, {v4_1500}, {0, 0}},
      {"off without lines", {Mode::kOff, 0}, {}, {0, 0}},
      // No lines: nothing lowers the 65535-byte inner limit.
      {"no lines", {Mode::kAuto, 0}, {}, {65495, 65475}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const TunnelMss got = deriveMss(c.clamp, c.lines);
    EXPECT_EQ(got.mss4, c.want.mss4);
    EXPECT_EQ(got.mss6, c.want.mss6);
  }
}

}  // namespace
}  // namespace mcgw::lines
