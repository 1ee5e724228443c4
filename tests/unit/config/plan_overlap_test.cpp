// The address plan's overlap checks as a table: each case is a small plan
// under one fixed gateway config, with every error and warning it must give,
// word for word, at its line; an error names both objects and the line of
// the one it is not placed at.
#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config/loader.hpp"

namespace mcgw::config {
namespace {

constexpr const char* kFile = "plan.yaml";

// The gateway every case shares: a wan port (the underlay, both families)
// and a line to a peer.  Its last line is "address-plan:" (line 21); a case's
// plan text starts on line 22.
constexpr std::string_view kGateway = R"yaml(node:
  name: gw-a1
  site: idc-a
eal:
  hugepages: false
ports:
  - name: lan0
    role: lan
    vdev: net_null0
  - name: wan0
    role: wan
    vdev: net_null1
    addresses: [203.0.113.1/29, 2001:db8:ffff::1/64]
peers:
  - name: site-b
    lines:
      - name: line1
        port: wan0
        local-vtep: 203.0.113.1
        remote-vtep: 198.51.100.7
address-plan:
)yaml";
// Lines of kGateway: 13 wan0 addresses  19 local-vtep  20 remote-vtep.

// What every refused overlap between two plan ranges ends with.
constexpr std::string_view kOverlapFree =
    "; the plan must be overlap-free (a legacy VPC that cannot be renumbered keeps its prefix "
    "with a mapped-range whose real is that prefix)";
constexpr std::string_view kSameSite =
    "; the real ranges of one site must not overlap (a mapped range lets only other sites see "
    "past an overlap)";
constexpr std::string_view kPoolsDisjoint =
    "; pools must not overlap (an allocation must have one pool)";

std::string cat(std::string_view a, std::string_view b) {
  return std::string(a) + std::string(b);
}

struct Finding {
  int line;
  std::string message;
  bool operator==(const Finding&) const = default;
};

void PrintTo(const Finding& f, std::ostream* os) {
  *os << "\n    line " << f.line << ": " << f.message;
}

struct PlanCase {
  const char* name;
  const char* plan;  // the address-plan body, from line 22
  std::vector<Finding> errors;
  std::vector<Finding> warnings;  // checked when there are no errors
};

void PrintTo(const PlanCase& c, std::ostream* os) {
  *os << c.name;
}

std::vector<PlanCase> planCases() {
  return {
      // --- VPC against VPC, IPv4
      {"VpcPartialOverlap",
       R"(  clouds:
    - name: aws
      regions:
        - name: r1
          vpcs:
            - {name: a, prefixes: [10.1.0.0/16]}
            - {name: b, prefixes: [10.1.128.0/17, 10.9.0.0/16]}
)",
       {{28,
         cat("10.1.128.0/17 of VPC aws/r1/b overlaps 10.1.0.0/16 of VPC aws/r1/a at plan.yaml:27",
             kOverlapFree)}},
       {}},
      {"VpcNestedInsideAnEarlierOne",
       R"(  clouds:
    - name: aws
      regions:
        - name: r1
          vpcs:
            - {name: a, prefixes: [10.1.0.0/16]}
            - {name: b, prefixes: [10.1.7.0/24]}
)",
       {{28, cat("10.1.7.0/24 of VPC aws/r1/b overlaps 10.1.0.0/16 of VPC aws/r1/a at plan.yaml:27",
                 kOverlapFree)}},
       {}},
      {"VpcContainingAnEarlierOne",
       R"(  clouds:
    - name: aws
      regions:
        - name: r1
          vpcs:
            - {name: a, prefixes: [10.1.7.0/24]}
            - {name: b, prefixes: [10.0.0.0/8]}
)",
       {{28, cat("10.0.0.0/8 of VPC aws/r1/b overlaps 10.1.7.0/24 of VPC aws/r1/a at plan.yaml:27",
                 kOverlapFree)}},
       {}},
      {"VpcIdenticalAcrossClouds",
       R"(  clouds:
    - name: aws
      regions:
        - name: us-east-1
          vpcs:
            - {name: train, prefixes: [172.16.0.0/16]}
    - name: idc
      regions:
        - name: shanghai
          vpcs:
            - {name: dc1, prefixes: [172.16.0.0/16]}
)",
       {{32, cat("172.16.0.0/16 of VPC idc/shanghai/dc1 overlaps 172.16.0.0/16 of VPC "
                 "aws/us-east-1/train at plan.yaml:27",
                 kOverlapFree)}},
       {}},
      {"VpcAdjacentDoNotOverlap",
       R"(  clouds:
    - name: aws
      regions:
        - name: r1
          vpcs:
            - {name: a, prefixes: [10.1.0.0/16]}
            - {name: b, prefixes: [10.2.0.0/15]}
            - {name: c, prefixes: [10.0.255.0/24]}
)",
       {},
       {}},
      {"VpcOverlappingTwoNamesOne",
       R"(  clouds:
    - name: aws
      regions:
        - name: r1
          vpcs:
            - {name: a, prefixes: [10.1.0.0/16]}
            - {name: b, prefixes: [10.3.0.0/16]}
            - {name: c, prefixes: [10.0.0.0/14]}
)",
       {{29, cat("10.0.0.0/14 of VPC aws/r1/c overlaps 10.3.0.0/16 of VPC aws/r1/b at plan.yaml:28",
                 kOverlapFree)}},
       {}},
      // --- IPv6, and the two families
      {"Ipv6Nested",
       R"(  clouds:
    - name: aws
      regions:
        - name: r1
          vpcs:
            - {name: a, prefixes: [2001:db8:1::/48]}
            - {name: b, prefixes: [2001:db8:1:42::/64]}
)",
       {{28, cat("2001:db8:1:42::/64 of VPC aws/r1/b overlaps 2001:db8:1::/48 of VPC aws/r1/a at "
                 "plan.yaml:27",
                 kOverlapFree)}},
       {}},
      {"Ipv6Partial",
       R"(  clouds:
    - name: aws
      regions:
        - name: r1
          vpcs:
            - {name: a, prefixes: [2001:db8:1::/48]}
            - {name: b, prefixes: [2001:db8::/46]}
)",
       {{28, cat("2001:db8::/46 of VPC aws/r1/b overlaps 2001:db8:1::/48 of VPC aws/r1/a at "
                 "plan.yaml:27",
                 kOverlapFree)}},
       {}},
      {"Ipv6AdjacentDoNotOverlap",
       R"(  clouds:
    - name: aws
      regions:
        - name: r1
          vpcs:
            - {name: a, prefixes: [2001:db8:1::/48]}
            - {name: b, prefixes: [2001:db8:2::/47]}
            - {name: c, prefixes: [2001:db8::/48]}
)",
       {},
       {}},
      // 10.0.0.0/8 and 0a00::/8 have the same bytes; the families never meet.
      {"Ipv4AndIpv6NeverOverlap",
       R"(  clouds:
    - name: aws
      regions:
        - name: r1
          vpcs:
            - {name: a, prefixes: [10.0.0.0/8]}
            - {name: b, prefixes: [a00::/8, "::ffff:10.0.0.0/104"]}
)",
       {},
       {}},
      // --- reserved ranges
      {"LinkLocalIpv4",
       R"(  clouds:
    - name: aws
      regions:
        - name: r1
          vpcs:
            - {name: a, prefixes: [169.254.16.0/20]}
)",
       {{27,
         "169.254.16.0/20 of VPC aws/r1/a overlaps reserved range 169.254.0.0/16 (link-local)"}},
       {}},
      {"LinkLocalIpv6",
       R"(  clouds:
    - name: aws
      regions:
        - name: r1
          vpcs:
            - {name: a, prefixes: [fe80::/64]}
)",
       {{27, "fe80::/64 of VPC aws/r1/a overlaps reserved range fe80::/10 (link-local)"}},
       {}},
      {"Loopback",
       R"(  clouds:
    - name: aws
      regions:
        - name: r1
          vpcs:
            - {name: a, prefixes: [120.0.0.0/5]}
            - {name: b, prefixes: ["::/127"]}
)",
       {{27, "120.0.0.0/5 of VPC aws/r1/a overlaps reserved range 127.0.0.0/8 (loopback)"},
        {28, "::/127 of VPC aws/r1/b overlaps reserved range ::1/128 (loopback)"}},
       {}},
      {"Multicast",
       R"(  clouds:
    - name: aws
      regions:
        - name: r1
          vpcs:
            - {name: a, prefixes: [239.1.0.0/16]}
            - {name: b, prefixes: ["ff02::/16"]}
)",
       {{27, "239.1.0.0/16 of VPC aws/r1/a overlaps reserved range 224.0.0.0/4 (multicast)"},
        {28, "ff02::/16 of VPC aws/r1/b overlaps reserved range ff00::/8 (multicast)"}},
       {}},
      {"UnderlayWanPortSubnet",
       R"(  clouds:
    - name: aws
      regions:
        - name: r1
          vpcs:
            - {name: a, prefixes: [203.0.113.0/30]}
            - {name: b, prefixes: [203.0.112.0/23]}
            - {name: c, prefixes: ["2001:db8:ffff::/48"]}
)",
       {{27,
         "203.0.113.0/30 of VPC aws/r1/a overlaps reserved range 203.0.113.0/29 (underlay: "
         "address 203.0.113.1/29 of wan port 'wan0' at plan.yaml:13)"},
        {28,
         "203.0.112.0/23 of VPC aws/r1/b overlaps reserved range 203.0.113.0/29 (underlay: "
         "address 203.0.113.1/29 of wan port 'wan0' at plan.yaml:13)"},
        {29,
         "2001:db8:ffff::/48 of VPC aws/r1/c overlaps reserved range 2001:db8:ffff::/64 "
         "(underlay: address 2001:db8:ffff::1/64 of wan port 'wan0' at plan.yaml:13)"}},
       {}},
      {"UnderlayPeerVtep",
       R"(  clouds:
    - name: aws
      regions:
        - name: r1
          vpcs:
            - {name: a, prefixes: [198.51.100.0/24]}
            - {name: b, prefixes: [198.51.101.0/24]}
)",
       {{27,
         "198.51.100.0/24 of VPC aws/r1/a overlaps reserved range 198.51.100.7/32 (underlay: "
         "remote-vtep of line site-b/line1 at plan.yaml:20)"}},
       {}},
      // A cloud VM's wan interface is in a subnet of its own VPC: the VPCs of
      // this gateway's site (idc-a) may hold its wan subnets and local VTEP,
      // those of the peer's site (site-b) the peer's VTEP.
      {"UnderlayInsideTheVpcsOfItsOwnSite",
       R"(  clouds:
    - name: aws
      regions:
        - name: r1
          vpcs:
            - {name: here, prefixes: [203.0.112.0/23, "2001:db8:ff00::/40"], site: idc-a}
            - {name: peer, prefixes: [198.51.100.0/24], site: site-b}
)",
       {},
       {}},
      {"UnderlayInsideTheVpcOfAnotherSite",
       R"(  clouds:
    - name: aws
      regions:
        - name: r1
          vpcs:
            - {name: a, prefixes: [203.0.112.0/23], site: site-b}
            - {name: b, prefixes: [198.51.100.0/24], site: idc-a}
)",
       {{27,
         "203.0.112.0/23 of VPC aws/r1/a overlaps reserved range 203.0.113.0/29 (underlay: "
         "address 203.0.113.1/29 of wan port 'wan0' at plan.yaml:13)"},
        {28,
         "198.51.100.0/24 of VPC aws/r1/b overlaps reserved range 198.51.100.7/32 (underlay: "
         "remote-vtep of line site-b/line1 at plan.yaml:20)"}},
       {}},
      // The operator's range counts even where the port's subnet does not.
      {"OperatorReservedAroundAnExemptUnderlay",
       R"(  reserved:
    - {name: dmz, prefix: 203.0.113.0/24}
  clouds:
    - name: aws
      regions:
        - name: r1
          vpcs:
            - {name: here, prefixes: [203.0.113.0/28], site: idc-a}
)",
       {{29,
         "203.0.113.0/28 of VPC aws/r1/here overlaps reserved range 203.0.113.0/24 "
         "(address-plan.reserved 'dmz' at plan.yaml:23)"}},
       {}},
      {"SharedSpaceWithAliyunInThePlan",
       R"(  clouds:
    - name: aliyun
      regions:
        - name: cn-shanghai
          vpcs:
            - {name: infer-sh, prefixes: [10.3.0.0/16]}
    - name: aws
      regions:
        - name: r1
          vpcs:
            - {name: a, prefixes: [100.100.0.0/16]}
)",
       {{32,
         "100.100.0.0/16 of VPC aws/r1/a overlaps reserved range 100.64.0.0/10 (Alibaba Cloud "
         "keeps it for its services, and the plan holds VPC aliyun/cn-shanghai/infer-sh at "
         "plan.yaml:27)"}},
       {}},
      {"SharedSpaceWithHuaweiCloudInThePlan",
       R"(  clouds:
    - name: aws
      regions:
        - name: r1
          vpcs:
            - {name: a, prefixes: [10.1.0.0/16]}
    - name: huaweicloud
      regions:
        - name: cn-south-1
          vpcs:
            - {name: gz, prefixes: [100.64.0.0/16]}
)",
       {{32,
         "100.64.0.0/16 of VPC huaweicloud/cn-south-1/gz overlaps reserved range "
         "100.64.0.0/10 (Huawei Cloud keeps it for its services, and the plan holds VPC "
         "huaweicloud/cn-south-1/gz at plan.yaml:32)"}},
       {}},
      {"SharedSpaceFreeWithoutACloudThatKeepsIt",
       R"(  clouds:
    - name: aws
      regions:
        - name: r1
          vpcs:
            - {name: a, prefixes: [100.100.0.0/16]}
    - name: idc
      regions:
        - name: sh
          vpcs:
            - {name: b, prefixes: [100.64.0.0/16]}
)",
       {},
       {}},
      {"OperatorReserved",
       R"(  reserved:
    - {name: mgmt, prefix: 10.250.0.0/16}
    - {name: mgmt-v6, prefix: "2001:db8:250::/48"}
  clouds:
    - name: aws
      regions:
        - name: r1
          vpcs:
            - {name: a, prefixes: [10.250.1.0/24]}
            - {name: b, prefixes: ["2001:db8:250:1::/64", 10.251.0.0/16]}
)",
       {{30,
         "10.250.1.0/24 of VPC aws/r1/a overlaps reserved range 10.250.0.0/16 "
         "(address-plan.reserved 'mgmt' at plan.yaml:23)"},
        {31,
         "2001:db8:250:1::/64 of VPC aws/r1/b overlaps reserved range 2001:db8:250::/48 "
         "(address-plan.reserved 'mgmt-v6' at plan.yaml:24)"}},
       {}},
      // The most specific reserved range is named: the port's subnet inside
      // the operator's underlay range.
      {"OperatorReservedHoldingThePortSubnet",
       R"(  reserved:
    - {name: underlay, prefix: 203.0.112.0/22}
  clouds:
    - name: aws
      regions:
        - name: r1
          vpcs:
            - {name: a, prefixes: [203.0.113.4/30]}
            - {name: b, prefixes: [203.0.114.0/24]}
)",
       {{29,
         "203.0.113.4/30 of VPC aws/r1/a overlaps reserved range 203.0.113.0/29 (underlay: "
         "address 203.0.113.1/29 of wan port 'wan0' at plan.yaml:13)"},
        {30,
         "203.0.114.0/24 of VPC aws/r1/b overlaps reserved range 203.0.112.0/22 "
         "(address-plan.reserved 'underlay' at plan.yaml:23)"}},
       {}},
      // --- mapped ranges
      {"MappedOverlapsAnEarlierVpc",
       R"(  clouds:
    - name: aws
      regions:
        - name: r1
          vpcs:
            - {name: a, prefixes: [10.200.0.0/16]}
  mapped-ranges:
    - {name: m, real: 10.1.0.0/24, mapped: 10.200.3.0/24}
)",
       {{29, cat("10.200.3.0/24 of mapped range m overlaps 10.200.0.0/16 of VPC aws/r1/a at "
                 "plan.yaml:27",
                 kOverlapFree)}},
       {}},
      {"VpcOverlapsAnEarlierMappedRange",
       R"(  mapped-ranges:
    - {name: m, real: 10.1.0.0/16, mapped: 10.200.0.0/16}
  clouds:
    - name: aws
      regions:
        - name: r1
          vpcs:
            - {name: a, prefixes: [10.200.128.0/17]}
)",
       {{29, cat("10.200.128.0/17 of VPC aws/r1/a overlaps 10.200.0.0/16 of mapped range m at "
                 "plan.yaml:23",
                 kOverlapFree)}},
       {}},
      {"MappedOverlapsMapped",
       R"(  mapped-ranges:
    - {name: m1, real: 10.1.0.0/16, mapped: 10.200.0.0/16}
    - {name: m2, real: "fd00:1::/48", mapped: "fd00:2::/48"}
    - {name: m3, real: 10.2.0.0/15, mapped: 10.200.0.0/15}
    - {name: m4, real: "fd00:4::/47", mapped: "fd00:2::/47"}
)",
       {{25, cat("10.200.0.0/15 of mapped range m3 overlaps 10.200.0.0/16 of mapped range m1 at "
                 "plan.yaml:23",
                 kOverlapFree)},
        {26, cat("fd00:2::/47 of mapped range m4 overlaps fd00:2::/48 of mapped range m2 at "
                 "plan.yaml:24",
                 kOverlapFree)}},
       {}},
      {"MappedInReservedRanges",
       R"(  clouds:
    - name: huawei
      regions:
        - name: r1
          vpcs:
            - {name: a, prefixes: [10.1.0.0/16]}
  mapped-ranges:
    - {name: m1, real: 10.2.0.0/16, mapped: 100.65.0.0/16}
    - {name: m2, real: 10.3.0.0/16, mapped: 169.254.0.0/16}
)",
       {{29,
         "100.65.0.0/16 of mapped range m1 overlaps reserved range 100.64.0.0/10 (Huawei "
         "Cloud keeps it for its services, and the plan holds VPC huawei/r1/a at "
         "plan.yaml:27)"},
        {30,
         "169.254.0.0/16 of mapped range m2 overlaps reserved range 169.254.0.0/16 "
         "(link-local)"}},
       {}},
      // --- legacy overlaps: a VPC whose prefix is the real range of a
      // mapped range at its site
      {"LegacyOverlapAtItsSite",
       R"(  clouds:
    - name: idc
      regions:
        - name: r1
          vpcs:
            - {name: a, prefixes: [10.1.0.0/16], site: idc-a}
            - {name: erp, prefixes: [10.1.0.0/16], site: huawei-gz}
  mapped-ranges:
    - {name: legacy-erp, real: 10.1.0.0/16, mapped: 10.201.0.0/16, site: huawei-gz}
)",
       {},
       {}},
      {"LegacyOverlapMappingWithoutSite",
       R"(  clouds:
    - name: idc
      regions:
        - name: r1
          vpcs:
            - {name: erp, prefixes: [10.1.0.0/16], site: huawei-gz}
            - {name: a, prefixes: [10.1.0.0/16], site: idc-a}
  mapped-ranges:
    - {name: legacy-erp, real: 10.1.0.0/16, mapped: 10.201.0.0/16}
)",
       // Without a site the mapping stands for every VPC with that prefix:
       // at two sites the rest of the plan would not know which one it is.
       {{30,
         "mapped range legacy-erp names no site, and its real range 10.1.0.0/16 is a prefix "
         "of VPC idc/r1/erp at plan.yaml:27 (site 'huawei-gz') and of VPC idc/r1/a at "
         "plan.yaml:28 (site 'idc-a'); give it the site of the legacy VPC"}},
       {}},
      {"LegacyMappingAtAnotherSiteExemptsNothing",
       R"(  clouds:
    - name: idc
      regions:
        - name: r1
          vpcs:
            - {name: a, prefixes: [10.1.0.0/16], site: idc-a}
            - {name: erp, prefixes: [10.1.0.0/16], site: huawei-gz}
  mapped-ranges:
    - {name: legacy-erp, real: 10.1.0.0/16, mapped: 10.201.0.0/16, site: aws-use1}
)",
       {{28, cat("10.1.0.0/16 of VPC idc/r1/erp overlaps 10.1.0.0/16 of VPC idc/r1/a at "
                 "plan.yaml:27",
                 kOverlapFree)}},
       {}},
      {"LegacyMappingOfAnotherLengthExemptsNothing",
       R"(  clouds:
    - name: idc
      regions:
        - name: r1
          vpcs:
            - {name: a, prefixes: [10.1.0.0/16], site: idc-a}
            - {name: erp, prefixes: [10.1.0.0/16], site: huawei-gz}
  mapped-ranges:
    - {name: legacy-erp, real: 10.1.0.0/17, mapped: 10.201.0.0/17, site: huawei-gz}
)",
       {{28, cat("10.1.0.0/16 of VPC idc/r1/erp overlaps 10.1.0.0/16 of VPC idc/r1/a at "
                 "plan.yaml:27",
                 kOverlapFree)}},
       {}},
      {"LegacyRealRangesOfOneSiteOverlap",
       R"(  clouds:
    - name: idc
      regions:
        - name: r1
          vpcs:
            - {name: a, prefixes: [10.1.0.0/16], site: idc-a}
            - {name: erp, prefixes: [10.1.0.0/16], site: huawei-gz}
            - {name: crm, prefixes: [10.1.0.0/17], site: huawei-gz}
  mapped-ranges:
    - {name: legacy-erp, real: 10.1.0.0/16, mapped: 10.201.0.0/16, site: huawei-gz}
    - {name: legacy-crm, real: 10.1.0.0/17, mapped: 10.202.0.0/17, site: huawei-gz}
)",
       {{29, cat("10.1.0.0/17 of VPC idc/r1/crm overlaps 10.1.0.0/16 of VPC idc/r1/erp at "
                 "plan.yaml:28, both at site 'huawei-gz'",
                 kSameSite)}},
       {}},
      {"LegacyVpcStillKeepsOutOfReservedRanges",
       R"(  clouds:
    - name: idc
      regions:
        - name: r1
          vpcs:
            - {name: old, prefixes: [169.254.0.0/16], site: huawei-gz}
  mapped-ranges:
    - {name: legacy-old, real: 169.254.0.0/16, mapped: 10.201.0.0/16, site: huawei-gz}
)",
       {{27,
         "169.254.0.0/16 of VPC idc/r1/old overlaps reserved range 169.254.0.0/16 "
         "(link-local)"}},
       {}},
      // A mapped range whose real range is no VPC of the plan (written
      // before legacy VPCs were declared): its site's VPCs must not overlap it.
      {"RealRangeOverlapsAVpcOfItsSite",
       R"(  clouds:
    - name: idc
      regions:
        - name: r1
          vpcs:
            - {name: a, prefixes: [10.1.0.0/24], site: huawei-gz}
  mapped-ranges:
    - {name: legacy, real: 10.1.0.0/16, mapped: 10.201.0.0/16, site: huawei-gz}
    - {name: elsewhere, real: 10.1.0.0/16, mapped: 10.202.0.0/16, site: idc-b}
)",
       {{29, cat("10.1.0.0/16 of mapped range legacy (real) overlaps 10.1.0.0/24 of VPC "
                 "idc/r1/a at plan.yaml:27, both at site 'huawei-gz'",
                 kSameSite)}},
       {}},
      // --- pools
      {"PoolsOverlap",
       R"(  pools:
    - {name: p1, prefixes: [10.64.0.0/10]}
    - {name: p2, prefixes: [10.128.0.0/10, 10.96.0.0/11]}
    - {name: p3, prefixes: ["fd00::/32"], allocation-length: 48}
    - {name: p4, prefixes: ["fd00:0:8000::/33"], allocation-length: 48}
)",
       {{24, cat("10.96.0.0/11 of pool p2 overlaps 10.64.0.0/10 of pool p1 at plan.yaml:23",
                 kPoolsDisjoint)},
        {26, cat("fd00:0:8000::/33 of pool p4 overlaps fd00::/32 of pool p3 at plan.yaml:25",
                 kPoolsDisjoint)}},
       {}},
      {"PoolsAdjacentAndPoolsHoldingVpcs",
       R"(  pools:
    - {name: p1, prefixes: [10.64.0.0/10]}
    - {name: p2, prefixes: [10.128.0.0/10]}
  clouds:
    - name: aws
      regions:
        - name: r1
          vpcs:
            - {name: a, prefixes: [10.64.0.0/16]}
            - {name: b, prefixes: [10.128.0.0/16]}
)",
       {},
       {}},
      // --- warnings: outside every pool
      {"VpcOutsideEveryPool",
       R"(  pools:
    - {name: p1, prefixes: [10.64.0.0/10]}
    - {name: p6, prefixes: ["fd00::/32"], allocation-length: 48}
  clouds:
    - name: aws
      regions:
        - name: r1
          vpcs:
            - {name: a, prefixes: [172.16.0.0/16, "fd00:0:1::/48"]}
            - {name: b, prefixes: [10.0.0.0/9]}
            - {name: c, prefixes: ["fd01::/48"]}
)",
       // b holds all of pool p1 and is still outside it.
       {},
       {{30, "172.16.0.0/16 of VPC aws/r1/a is outside every pool (p1, p6)"},
        {31, "10.0.0.0/9 of VPC aws/r1/b is outside every pool (p1, p6)"},
        {32, "fd01::/48 of VPC aws/r1/c is outside every pool (p1, p6)"}}},
      {"NoPoolsNoWarnings",
       R"(  clouds:
    - name: aws
      regions:
        - name: r1
          vpcs:
            - {name: a, prefixes: [10.1.0.0/16]}
)",
       {},
       {}},
      {"VpcInAPoolOfOtherClouds",
       R"(  pools:
    - {name: p-ali, prefixes: [10.64.0.0/10], clouds: [aliyun, huaweicloud]}
    - {name: p-any, prefixes: [10.128.0.0/10]}
  clouds:
    - name: aws
      regions:
        - name: r1
          vpcs:
            - {name: a, prefixes: [10.64.0.0/16]}
            - {name: b, prefixes: [10.128.0.0/16]}
    - name: aliyun
      regions:
        - name: r1
          vpcs:
            - {name: c, prefixes: [10.65.0.0/16]}
)",
       {},
       {{30,
         "10.64.0.0/16 of VPC aws/r1/a lies in 10.64.0.0/10 of pool p-ali at plan.yaml:23, "
         "which serves only aliyun, huaweicloud, not 'aws'"}}},
      {"MappedRangeOutsideEveryPool",
       R"(  pools:
    - {name: p1, prefixes: [10.64.0.0/10]}
  clouds:
    - name: idc
      regions:
        - name: r1
          vpcs:
            - {name: a, prefixes: [10.65.0.0/16], site: idc-a}
            - {name: erp, prefixes: [10.65.0.0/16], site: huawei-gz}
  mapped-ranges:
    - {name: legacy-erp, real: 10.65.0.0/16, mapped: 10.66.0.0/16, site: huawei-gz}
    - {name: legacy-2, real: 10.1.0.0/16, mapped: 10.200.0.0/16, site: idc-b}
)",
       // The legacy VPC's real range is outside by nature: no warning.
       {},
       {{33, "10.200.0.0/16 of mapped range legacy-2 is outside every pool (p1)"}}},
  };
}

std::string describe(const std::vector<ConfigError>& errors) {
  std::string out;
  for (const auto& e : errors) {
    out += "  " + e.toString() + "\n";
  }
  return out;
}

std::vector<Finding> findings(const std::vector<ConfigError>& errors) {
  std::vector<Finding> out;
  for (const auto& e : errors) {
    out.push_back({e.line, e.message});
  }
  return out;
}

class PlanOverlapTest : public ::testing::TestWithParam<PlanCase> {};

TEST_P(PlanOverlapTest, ErrorsAndWarningsAreExact) {
  const PlanCase& c = GetParam();
  const std::string text = std::string(kGateway) + c.plan;
  LoadResult r = loadConfigText(text, kFile);
  if (!c.errors.empty()) {
    ASSERT_FALSE(r.ok()) << "loaded, expected errors; the file:\n" << text;
    EXPECT_EQ(findings(r.error()), c.errors) << describe(r.error());
    return;
  }
  ASSERT_TRUE(r.ok()) << describe(r.error());
  EXPECT_EQ(findings((*r)->warnings), c.warnings) << describe((*r)->warnings);
}

INSTANTIATE_TEST_SUITE_P(Cases, PlanOverlapTest, ::testing::ValuesIn(planCases()),
                         [](const ::testing::TestParamInfo<PlanCase>& info) {
                           return std::string(info.param.name);
                         });

TEST(PlanOverlapTable, AtLeastThirtyCases) {
  EXPECT_GE(planCases().size(), 30u);
}

// Every gateway line and section above is where the cases say: the
// gateway alone loads, without warnings.
TEST(PlanOverlapTable, GatewayAloneLoads) {
  LoadResult r = loadConfigText(std::string(kGateway), kFile);
  ASSERT_TRUE(r.ok()) << describe(r.error());
  EXPECT_TRUE((*r)->warnings.empty());
}

// An error is printed with the file, line and column of the second object
// and the path of its node; the message carries the first one's place.
TEST(PlanOverlapTable, ErrorPrintsBothPlaces) {
  LoadResult r = loadConfigText(std::string(kGateway) + planCases()[0].plan, kFile);
  ASSERT_FALSE(r.ok());
  ASSERT_EQ(r.error().size(), 1u);
  EXPECT_EQ(r.error()[0].toString(),
            cat("plan.yaml:28:36: /mcgw:address-plan/clouds/cloud[name='aws']/regions/"
                "region[name='r1']/vpcs/vpc[name='b']/prefixes[.='10.1.128.0/17']: "
                "10.1.128.0/17 of VPC aws/r1/b overlaps 10.1.0.0/16 of VPC aws/r1/a at "
                "plan.yaml:27",
                kOverlapFree));
}

}  // namespace
}  // namespace mcgw::config
