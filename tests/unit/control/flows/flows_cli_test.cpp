// mcgwctl's text for `show flows` (control/flows/flows_cli.hpp) from the
// JSON mcgwd sends (schema mcgw.flows/1): the heading, a row per record
// with its status and rule, and what it makes of missing fields.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "control/flows/flows_cli.hpp"

namespace mcgw::flows {
namespace {

using nlohmann::json;

json view() {
  return json::parse(R"({
    "schema": "mcgw.flows/1", "enabled": true, "sampling": 1, "flows_active": 3, "matched": 2,
    "flows": [
      {"tenant": "train", "vni": 100, "family": "ipv4", "protocol": 17,
       "source": "10.1.0.10", "destination": "10.2.0.10", "source_port": 4711,
       "destination_port": 9, "direction": "from-lan", "peer": null, "line": null,
       "interface": 0, "packets": 20, "bytes": 2560, "tcp_flags": 0,
       "first": "2026-12-05T10:00:00.123Z", "last": "2026-12-05T10:00:00.223Z",
       "status": "policy-deny", "forwarding_status": 129, "rule": "no-discard"},
      {"tenant": "train", "vni": 100, "family": "ipv6", "protocol": 6,
       "source": "fd00:a::10", "destination": "fd00:b::10", "source_port": 40000,
       "destination_port": 5201, "direction": "to-tunnel", "peer": "site-b", "line": "l1",
       "interface": 1, "packets": 7507, "bytes": 10876132, "tcp_flags": 27,
       "first": "2026-12-05T10:00:01.000Z", "last": "2026-12-05T10:00:01.400Z",
       "status": "forwarded", "forwarding_status": 64, "rule": null}
    ]})");
}

TEST(FlowsCli, RowsWithStatusAndRule) {
  EXPECT_EQ(renderFlows(view()),
            "flows: 2 shown of 2 matching, 3 active; sampling 1-in-1 (packets and bytes are "
            "samples x 1)\n"
            "TENANT  PROTO  SOURCE              DESTINATION        DIRECTION  LINE       PACKETS"
            "     BYTES  STATUS       RULE\n"
            "train   udp    10.1.0.10:4711      10.2.0.10:9        from-lan   -               20"
            "      2560  policy-deny  no-discard\n"
            "train   tcp    [fd00:a::10]:40000  [fd00:b::10]:5201  to-tunnel  site-b/l1     7507"
            "  10876132  forwarded    -\n");
}

TEST(FlowsCli, OffAndEmptyAndMistyped) {
  EXPECT_EQ(renderFlows(json{{"enabled", false}}),
            "flow audit is off (flow-audit.sampling is not set)\n");
  json v = view();
  v["flows"] = json::array();
  v["matched"] = 0;
  EXPECT_EQ(renderFlows(v),
            "flows: 0 shown of 0 matching, 3 active; sampling 1-in-1 (packets and bytes are "
            "samples x 1)\n");
  // Fields missing or of the wrong type: placeholders, no exception.
  v["flows"] = json::array({json{{"packets", "many"}, {"protocol", 47}}, json(3)});
  EXPECT_EQ(renderFlows(v),
            "flows: 2 shown of 0 matching, 3 active; sampling 1-in-1 (packets and bytes are "
            "samples x 1)\n"
            "TENANT  PROTO  SOURCE  DESTINATION  DIRECTION  LINE  PACKETS  BYTES  STATUS  RULE\n"
            "?       47     ?       ?            ?          -           0      0  ?       -\n"
            "?       0      ?       ?            ?          -           0      0  ?       -\n");
  EXPECT_NO_THROW(renderFlows(json("nonsense")));
}

}  // namespace
}  // namespace mcgw::flows
