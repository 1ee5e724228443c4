// Flow audit's aggregation (control/flows/flow_table.hpp) over injected
// time: keys, scaling by the sampling rate, the OR of TCP flags, first and
// last seen, the idle and active timeouts and the bound; and the
// packet part of a sample (engine::fillFlowSample) on literal packets.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <map>
#include <vector>

#include "control/flows/flow_table.hpp"
#include "dataplane/engine/flow_sample.hpp"

namespace mcgw::flows {
namespace {

using engine::FlowDirection;
using engine::FlowSample;

FlowSample sample4(uint8_t last_src_octet, uint16_t sport, uint16_t len, uint8_t flags = 0x10,
                   FlowDirection dir = FlowDirection::kToTunnel, uint16_t line = 3) {
  FlowSample s;
  s.vni = 1001;
  s.tenant = 1;
  s.peer = 2;
  s.line = line;
  s.direction = static_cast<uint8_t>(dir);
  s.ip_version = 4;
  s.protocol = 6;
  const uint8_t src[4] = {10, 1, 0, last_src_octet}, dst[4] = {10, 2, 0, 9};
  std::memcpy(s.src, src, 4);
  std::memcpy(s.dst, dst, 4);
  s.src_port = sport;
  s.dst_port = 5201;
  s.ip_len = len;
  s.tcp_flags = flags;
  return s;
}

// The tenant is keyed by its VNI, taken with the sample: a reload that
// renumbers the tenants (the same index, another tenant) neither merges
// two tenants' flows nor exports one under the other's VNI.
TEST(FlowTable, TenantsAreKeyedByVniNotByTheirIndex) {
  FlowTable t;
  std::vector<FlowRecord> ended;
  t.add(sample4(1, 40000, 1500), 1000, 10, ended);
  FlowSample other = sample4(1, 40000, 1500);
  other.vni = 1002;  // after a reload: tenant index 1 is another tenant
  t.add(other, 1100, 10, ended);
  FlowSample moved = sample4(1, 40000, 1500);
  moved.tenant = 0;  // the first tenant, renumbered by a reload
  t.add(moved, 1200, 10, ended);
  EXPECT_EQ(t.size(), 2u);
  t.flush(ended);
  ASSERT_EQ(ended.size(), 2u);
  for (const auto& r : ended) {
    EXPECT_EQ(r.packets, r.key.vni == 1001 ? 20u : 10u) << r.key.vni;
    EXPECT_TRUE(r.key.vni == 1001 || r.key.vni == 1002) << r.key.vni;
  }
}

TEST(FlowTable, AggregatesByKeyScaledByTheSamplingRate) {
  FlowTable t;
  std::vector<FlowRecord> ended;
  t.add(sample4(1, 40000, 1500, 0x02), 1000, 100, ended);  // SYN
  t.add(sample4(1, 40000, 1000, 0x10), 1200, 100, ended);  // ACK
  t.add(sample4(1, 40000, 52, 0x11), 1100, 100, ended);    // FIN, drained late
  t.add(sample4(2, 40000, 1500), 1300, 100, ended);        // another source: another flow
  t.add(sample4(1, 40001, 1500), 1300, 100, ended);        // another port
  t.add(sample4(1, 40000, 1500, 0x10, FlowDirection::kFromTunnel), 1300, 100, ended);
  t.add(sample4(1, 40000, 1500, 0x10, FlowDirection::kToTunnel, 4), 1300, 100, ended);  // line
  EXPECT_TRUE(ended.empty());
  EXPECT_EQ(t.size(), 5u);
  t.flush(ended);
  ASSERT_EQ(ended.size(), 5u);
  const FlowRecord* first = nullptr;
  for (const auto& r : ended) {
    if (r.key.src[3] == 1 && r.key.src_port == 40000 && r.key.line == 3 &&
        r.key.direction == static_cast<uint8_t>(FlowDirection::kToTunnel)) {
      first = &r;
    }
    EXPECT_EQ(r.end_reason, EndReason::kForced);
  }
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(first->packets, 300u);
  EXPECT_EQ(first->bytes, (1500u + 1000u + 52u) * 100u);
  EXPECT_EQ(first->tcp_flags, 0x02 | 0x10 | 0x11);
  EXPECT_EQ(first->first_ms, 1000u);
  EXPECT_EQ(first->last_ms, 1200u);
  EXPECT_EQ(first->key.vni, 1001u);
  EXPECT_EQ(first->key.peer, 2);
  EXPECT_EQ(t.size(), 0u);
}

TEST(FlowTable, IdleTimeoutEndsASilentFlow) {
  FlowTable t;
  std::vector<FlowRecord> ended;
  t.add(sample4(1, 1, 100), 0, 1, ended);
  t.add(sample4(2, 1, 100), 0, 1, ended);
  t.add(sample4(2, 1, 100), 10000, 1, ended);  // still going
  t.expire(14999, 60000, 15000, ended);
  EXPECT_TRUE(ended.empty());
  t.expire(15000, 60000, 15000, ended);
  ASSERT_EQ(ended.size(), 1u);
  EXPECT_EQ(ended[0].key.src[3], 1);
  EXPECT_EQ(ended[0].end_reason, EndReason::kIdle);
  EXPECT_EQ(t.size(), 1u);
  ended.clear();
  t.expire(25000, 60000, 15000, ended);
  ASSERT_EQ(ended.size(), 1u);
  EXPECT_EQ(ended[0].key.src[3], 2);
  EXPECT_EQ(ended[0].packets, 2u);
}

TEST(FlowTable, ActiveTimeoutEndsALongFlowAndTheNextSampleStartsAnother) {
  FlowTable t;
  std::vector<FlowRecord> ended;
  for (uint64_t ms = 0; ms <= 60000; ms += 5000) {
    t.add(sample4(1, 1, 1000), ms, 10, ended);
    t.expire(ms, 60000, 15000, ended);
  }
  ASSERT_EQ(ended.size(), 1u);
  EXPECT_EQ(ended[0].end_reason, EndReason::kActive);
  EXPECT_EQ(ended[0].first_ms, 0u);
  EXPECT_EQ(ended[0].last_ms, 60000u);
  EXPECT_EQ(ended[0].packets, 13u * 10u);
  EXPECT_EQ(t.size(), 0u);
  t.add(sample4(1, 1, 1000), 61000, 10, ended);
  EXPECT_EQ(t.size(), 1u);
  t.flush(ended);
  ASSERT_EQ(ended.size(), 2u);
  EXPECT_EQ(ended[1].first_ms, 61000u);
  EXPECT_EQ(ended[1].packets, 10u);
}

TEST(FlowTable, AFullTableEndsTheLeastRecentlySeenFlow) {
  FlowTable t(3);
  std::vector<FlowRecord> ended;
  t.add(sample4(1, 1, 100), 1, 1, ended);
  t.add(sample4(2, 1, 100), 2, 1, ended);
  t.add(sample4(3, 1, 100), 3, 1, ended);
  t.add(sample4(1, 1, 100), 4, 1, ended);  // 1 seen again: 2 is now the oldest
  EXPECT_TRUE(ended.empty());
  t.add(sample4(4, 1, 100), 5, 1, ended);
  ASSERT_EQ(ended.size(), 1u);
  EXPECT_EQ(ended[0].key.src[3], 2);
  EXPECT_EQ(ended[0].end_reason, EndReason::kLackOfResources);
  EXPECT_EQ(t.size(), 3u);
  EXPECT_EQ(t.evicted(), 1u);
  t.add(sample4(5, 1, 100), 6, 1, ended);
  ASSERT_EQ(ended.size(), 2u);
  EXPECT_EQ(ended[1].key.src[3], 3);
  EXPECT_EQ(t.size(), 3u);
  EXPECT_EQ(t.capacity(), 3u);
}

// What became of the packets is part of the key: a flow's denied packets
// (by each rule apart), its packets dropped red and its forwarded ones are
// three records, each with its own counts; the record a sample lands in
// is returned (for its rule's name).
TEST(FlowTable, DeniedAndDroppedPacketsAreRecordsApart) {
  using engine::FlowStatus;
  FlowTable t;
  std::vector<FlowRecord> ended;
  FlowSample fwd = sample4(1, 40000, 100);
  FlowSample deny = fwd;
  deny.status = static_cast<uint8_t>(FlowStatus::kPolicyDeny);
  deny.rule = 7;
  deny.peer = engine::kNoPeer;
  deny.line = engine::kNoLine;
  FlowSample other_rule = deny;
  other_rule.rule = 8;
  FlowSample red = fwd;
  red.status = static_cast<uint8_t>(FlowStatus::kRateLimit);
  t.add(fwd, 1000, 10, ended);
  FlowRecord& d = t.add(deny, 1001, 10, ended);
  EXPECT_EQ(d.key.status, static_cast<uint8_t>(FlowStatus::kPolicyDeny));
  EXPECT_EQ(d.key.rule, 7);
  EXPECT_EQ(d.packets, 10u);
  d.rule_name = "no-ssh";
  FlowRecord& again = t.add(deny, 1002, 10, ended);
  EXPECT_EQ(&again, &d);
  EXPECT_EQ(again.rule_name, "no-ssh");
  t.add(other_rule, 1003, 10, ended);
  t.add(red, 1004, 10, ended);
  t.add(red, 1005, 10, ended);
  t.add(fwd, 1006, 10, ended);
  EXPECT_EQ(t.size(), 4u);
  std::map<std::pair<uint8_t, uint16_t>, uint64_t> packets;
  for (const FlowRecord& r : t.records()) {
    packets[{r.key.status, r.key.rule}] += r.packets;
  }
  using Key = std::pair<uint8_t, uint16_t>;
  EXPECT_EQ(
      packets,
      (std::map<Key, uint64_t>{
          {{0, engine::kNoRule}, 20}, {{1, 7}, 20}, {{1, 8}, 10}, {{3, engine::kNoRule}, 20}}));
  EXPECT_EQ(t.records().back().key.status, 0) << "the forwarded record was seen last";
}

TEST(FlowSample, ANewSampleIsForwardedWithoutARule) {
  static_assert(sizeof(FlowSample) == 64);
  FlowSample s;
  EXPECT_EQ(s.status, static_cast<uint8_t>(engine::FlowStatus::kForwarded));
  EXPECT_EQ(s.rule, engine::kNoRule);
  FlowSample z{};
  EXPECT_EQ(z.rule, engine::kNoRule);
  // The status and the rule are the sample's last four bytes (the ring's
  // element is the struct as it is).
  EXPECT_EQ(offsetof(FlowSample, status), 60u);
  EXPECT_EQ(offsetof(FlowSample, rule), 62u);
}

TEST(FlowSample, Ipv4TcpPortsFlagsAndLength) {
  // IPv4 (IHL 6: one option word), TCP 40000 -> 5201, flags PSH|ACK.
  uint8_t p[24 + 20] = {0x46, 0,    0,    44,   0, 1, 0x40, 0, 64, 6, 0, 0, 10,   1,
                        0,    7,    10,   2,    0, 9, 1,    1, 1,  1,  // the option word
                        0x9c, 0x40, 0x14, 0x51, 0, 0, 0,    1, 0,  0, 0, 0, 0x50, 0x18};
  FlowSample s;
  engine::fillFlowSample(s, p, sizeof p, false);
  EXPECT_EQ(s.ip_version, 4);
  EXPECT_EQ(s.protocol, 6);
  EXPECT_EQ(s.src_port, 40000);
  EXPECT_EQ(s.dst_port, 5201);
  EXPECT_EQ(s.tcp_flags, 0x18);
  EXPECT_EQ(s.ip_len, sizeof p);
  EXPECT_EQ(s.src[3], 7);
  EXPECT_EQ(s.dst[1], 2);
  EXPECT_EQ(s.src[4], 0);
  // A later fragment has no transport header: no ports.
  p[6] = 0x00;
  p[7] = 0x10;
  FlowSample f;
  engine::fillFlowSample(f, p, sizeof p, false);
  EXPECT_EQ(f.src_port, 0);
  EXPECT_EQ(f.tcp_flags, 0);
}

TEST(FlowSample, Ipv6Udp) {
  uint8_t p[40 + 8] = {0x60, 0, 0, 0, 0, 8, 17, 64};
  p[8] = 0x20;
  p[9] = 0x01;
  p[23] = 1;
  p[24] = 0x20;
  p[39] = 2;
  p[40] = 0x13;
  p[41] = 0x88;  // 5000
  p[42] = 0x00;
  p[43] = 0x35;  // 53
  FlowSample s;
  engine::fillFlowSample(s, p, sizeof p, true);
  EXPECT_EQ(s.ip_version, 6);
  EXPECT_EQ(s.protocol, 17);
  EXPECT_EQ(s.src_port, 5000);
  EXPECT_EQ(s.dst_port, 53);
  EXPECT_EQ(s.tcp_flags, 0);
  EXPECT_EQ(s.src[0], 0x20);
  EXPECT_EQ(s.src[15], 1);
  EXPECT_EQ(s.dst[15], 2);
}

}  // namespace
}  // namespace mcgw::flows
