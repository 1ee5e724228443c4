// The counters JSON takes each event counter's group and key from
// MCGW_EVENT_COUNTERS: the keys operators, scripts and docs rely on.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "dataplane/engine/counters.hpp"

namespace mcgw::engine {
namespace {

TEST(CounterKeysTest, EventCountersKeepTheirJsonKeys) {
  std::vector<std::string> keys;
#define MCGW_KEY(name, group, key, ...) keys.push_back(std::string(group) + "." + key);
  MCGW_EVENT_COUNTERS(MCGW_KEY)
#undef MCGW_KEY
  const std::vector<std::string> expected = {
      "neighbors.held_packets",
      "neighbors.resolutions_asked",
      "icmp.sent",
      "icmp.time_exceeded",
      "icmp.frag_needed",
      "icmp.packet_too_big",
      "icmp.rate_limited",
      "icmp.not_allowed",
      "icmp.suppressed",
      "fragmentation.packets",
      "fragmentation.fragments",
      "mss.clamped",
      "mss.already_below",
      "mss.no_option",
      "mss.inserted",
      "mss.malformed",
      "vrrp.virtual_mac_frames",
      "sites.stand_in",
      "flow_audit.samples",
      "flow_audit.ring_full",
      "shaping.queued",
      "shaping.failed",
  };
  EXPECT_EQ(keys, expected);
}

}  // namespace
}  // namespace mcgw::engine
