// mcgwctl's text for VRRP, from the JSON mcgwd sends.
#include <gtest/gtest.h>

#include "control/vrrp/vrrp_cli.hpp"

namespace mcgw::vrrp {
namespace {

using nlohmann::json;

TEST(VrrpCli, NoGroupsNoText) {
  EXPECT_EQ(renderVrrp(json{{"groups", json::array()}}), "");
  EXPECT_EQ(renderVrrp(json("not an object")), "");
}

TEST(VrrpCli, GroupWithTrackingAndLastTransition) {
  const json v = json::parse(R"({
    "groups": [{"vrid": 10, "port": "lan0", "family": "ipv4", "mode": "unicast",
                "state": "backup", "priority": {"configured": 200, "effective": 150},
                "active_address": "10.1.0.3", "virtual_addresses": ["10.1.0.254"],
                "virtual_mac": "00:00:5e:00:01:0a", "down_reason": null,
                "timers": {"advert_interval_ms": 100, "active_advert_interval_ms": 50,
                           "skew_ms": 20, "active_down_interval_ms": 170},
                "transitions": 2,
                "last_transition": {"from": "active", "to": "backup",
                                    "reason": "higher priority 254 from 10.1.0.3",
                                    "at": "2026-12-03T21:30:00.123Z"},
                "tracking": [{"object": "peer siteb", "weight": 50, "up": false}]}],
    "bgp_standing": {"mode": "prepend", "prepend": 3}})");
  EXPECT_EQ(renderVrrp(v),
            "  vrid 10 on lan0 (ipv4, unicast): backup, priority 150 (configured 200), active "
            "10.1.0.3, virtual 10.1.0.254 (00:00:5e:00:01:0a)\n"
            "    interval 100 ms (active's 50), down interval 170 ms, skew 20 ms; 2 transitions, "
            "last active -> backup (higher priority 254 from 10.1.0.3) at "
            "2026-12-03T21:30:00.123Z\n"
            "    track peer siteb weight 50: DOWN\n"
            "  BGP follows VRRP: prepend\n");
}

TEST(VrrpCli, GroupThatIsDownSaysWhy) {
  const json v = json::parse(R"({
    "groups": [{"vrid": 20, "port": "lan1", "family": "ipv6", "mode": "multicast",
                "state": "initialize", "priority": {"configured": 100, "effective": 100},
                "active_address": null, "virtual_addresses": ["fd00::1"],
                "virtual_mac": "00:00:5e:00:02:14", "down_reason": "port lan1 link down",
                "timers": {}, "transitions": 0, "last_transition": null, "tracking": []}],
    "site_reachable": false})");
  EXPECT_EQ(renderVrrp(v),
            "  vrid 20 on lan1 (ipv6, multicast): initialize, priority 100, active -, virtual "
            "fd00::1 (00:00:5e:00:02:14)\n"
            "    interval - ms (active's -), down interval - ms, skew - ms; 0 transitions\n"
            "    ! port lan1 link down\n"
            "  ! site LAN unreachable (a VRRP port without link): BFD held on af_xdp WAN ports\n");
}

}  // namespace
}  // namespace mcgw::vrrp
