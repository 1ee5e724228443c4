// The allocator on literal plans: which block a request gets, idempotency,
// release, usage and the snapshot's checks; a property test of random
// allocate/release; a plan of 60,000 VPCs.
#include "control/plan/allocator.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

namespace mcgw::plan {
namespace {

using config::Config;
using config::IpPrefix;

IpPrefix P(const char* text) {
  auto p = IpPrefix::parse(text);
  EXPECT_TRUE(p) << text;
  return p ? *p : IpPrefix{};
}

std::vector<std::string> strings(const std::vector<IpPrefix>& prefixes) {
  std::vector<std::string> out;
  for (const auto& p : prefixes) {
    out.push_back(p.toString());
  }
  return out;
}

Config planConfig() {
  Config c;
  c.tenants.push_back({"blue", 100, {}, {}, {}});
  c.address_plan.pools.push_back({"main", {P("10.0.0.0/8")}, 16, {}});
  return c;
}

Request req(const std::string& name, uint8_t length) {
  Request r;
  r.cloud = "aws";
  r.region = "us-east-1";
  r.vpc = name;
  r.length = length;
  return r;
}

// Allocates and stores; the block as text, or the error prefixed with "error: ".
std::string take(const Config& c, Snapshot& s, const Request& r,
                 const std::vector<IpPrefix>& reserved = {}) {
  auto a = allocate(c, s, r, reserved);
  if (!a) {
    return "error: " + a.error();
  }
  EXPECT_EQ(a->vpc.prefixes.size(), 1u);
  if (a->created) {
    insert(s, a->vpc);
  }
  return a->vpc.prefixes.at(0).toString();
}

TEST(Allocator, LowestBlocksFirst) {
  const Config c = planConfig();
  Snapshot s;
  EXPECT_EQ(take(c, s, req("a", 16)), "10.0.0.0/16");
  EXPECT_EQ(take(c, s, req("b", 16)), "10.1.0.0/16");
  EXPECT_EQ(take(c, s, req("c", 24)), "10.2.0.0/24");
  EXPECT_EQ(take(c, s, req("d", 24)), "10.2.1.0/24");
  // Aligned on its size: the next /20 after 10.2.0.0-10.2.1.255 is 10.2.16.0.
  EXPECT_EQ(take(c, s, req("e", 20)), "10.2.16.0/20");
  EXPECT_EQ(take(c, s, req("f", 23)), "10.2.2.0/23");
  // The pool's allocation-length when no length is asked.
  EXPECT_EQ(take(c, s, req("g", 0)), "10.3.0.0/16");
  const StoredVpc* a = s.find("a");
  ASSERT_TRUE(a);
  EXPECT_EQ(*a,
            (StoredVpc{"a", "aws", "us-east-1", {P("10.0.0.0/16")}, "main", "", "", "allocate"}));
  EXPECT_EQ(s.vpcs.size(), 7u);
}

TEST(Allocator, JumpsOverConfigVpcsMappedAndReservedRanges) {
  Config c = planConfig();
  c.address_plan.vpcs.push_back(
      {"idc", "bj", "legacy", {P("10.0.0.0/16"), P("10.1.0.0/17")}, "", ""});
  // Both sides of a mapped range are in use: the mapped one (10.4.0.0/16)
  // is the plan's, the real one (10.5.0.0/16) the legacy VPC's at its site.
  c.address_plan.mapped_ranges.push_back({"old", P("10.5.0.0/16"), P("10.4.0.0/16"), ""});
  const std::vector<IpPrefix> reserved = {P("10.2.0.0/15"), P("10.6.1.0/24")};
  Snapshot s;
  EXPECT_EQ(take(c, s, req("a", 16), reserved), "10.7.0.0/16");
  EXPECT_EQ(take(c, s, req("b", 17), reserved), "10.1.128.0/17");
  EXPECT_EQ(take(c, s, req("c", 16), reserved), "10.8.0.0/16");
  EXPECT_EQ(take(c, s, req("d", 24), reserved), "10.6.0.0/24");
  EXPECT_EQ(take(c, s, req("e", 24), reserved), "10.6.2.0/24");
}

TEST(Allocator, PoolPrefixesInConfigOrder) {
  Config c = planConfig();
  c.address_plan.pools[0].prefixes = {P("192.168.0.0/24"), P("172.16.0.0/12")};
  Snapshot s;
  EXPECT_EQ(take(c, s, req("a", 25)), "192.168.0.0/25");
  // A /20 does not fit in the /24: the next prefix.
  EXPECT_EQ(take(c, s, req("b", 20)), "172.16.0.0/20");
  EXPECT_EQ(take(c, s, req("c", 25)), "192.168.0.128/25");
  EXPECT_EQ(take(c, s, req("d", 25)), "172.16.16.0/25");
}

TEST(Allocator, Ipv6) {
  Config c = planConfig();
  c.address_plan.pools.push_back({"six", {P("fd00:10::/48")}, 56, {}});
  c.address_plan.vpcs.push_back({"idc", "bj", "v6", {P("fd00:10:0:100::/56")}, "", ""});
  Snapshot s;
  Request r = req("a", 56);
  r.family = Family::V6;
  // The first pool with an IPv6 prefix is "six".
  EXPECT_EQ(take(c, s, r), "fd00:10::/56");
  r.vpc = "b";
  EXPECT_EQ(take(c, s, r), "fd00:10:0:200::/56");
  r.vpc = "c";
  r.length = 64;
  EXPECT_EQ(take(c, s, r), "fd00:10:0:300::/64");
  r.vpc = "d";
  r.length = 52;
  EXPECT_EQ(take(c, s, r), "fd00:10:0:1000::/52");
  EXPECT_EQ(s.find("a")->pool, "six");
  r.vpc = "e";
  r.length = 129;
  EXPECT_EQ(take(c, s, r), "error: length /129 is longer than an IPv6 address (/128)");
}

TEST(Allocator, PoolFullNamesThePool) {
  Config c = planConfig();
  c.address_plan.pools[0] = {"small", {P("192.0.2.0/24")}, 25, {}};
  Snapshot s;
  EXPECT_EQ(take(c, s, req("a", 25)), "192.0.2.0/25");
  EXPECT_EQ(take(c, s, req("b", 26)), "192.0.2.128/26");
  EXPECT_EQ(take(c, s, req("c", 25)),
            "error: pool small is full: no free /25 in 192.0.2.0/24 (mcgwctl plan show lists its "
            "free blocks)");
  EXPECT_EQ(take(c, s, req("d", 26)), "192.0.2.192/26");
  EXPECT_EQ(s.vpcs.size(), 3u);
}

TEST(Allocator, LengthsOutsideThePool) {
  const Config c = planConfig();
  Snapshot s;
  EXPECT_EQ(take(c, s, req("a", 33)), "error: length /33 is longer than an IPv4 address (/32)");
  EXPECT_EQ(take(c, s, req("a", 7)),
            "error: length /7 is shorter than every IPv4 prefix of pool main (10.0.0.0/8)");
  EXPECT_EQ(take(c, s, req("a", 8)), "10.0.0.0/8");
  EXPECT_EQ(take(c, s, req("b", 32)),
            "error: pool main is full: no free /32 in 10.0.0.0/8 "
            "(mcgwctl plan show lists its free blocks)");
}

TEST(Allocator, ChoosesThePool) {
  Config c = planConfig();
  c.address_plan.pools.push_back({"second", {P("172.16.0.0/12")}, 20, {}});
  Snapshot s;
  Request r = req("a", 0);
  r.pool = "second";
  EXPECT_EQ(take(c, s, r), "172.16.0.0/20");
  EXPECT_EQ(s.find("a")->pool, "second");
  r.vpc = "b";
  r.pool = "third";
  EXPECT_EQ(take(c, s, r), "error: no pool named \"third\" in the config");
  r.pool = "second";
  r.family = Family::V6;
  EXPECT_EQ(take(c, s, r), "error: pool second has no IPv6 prefix (172.16.0.0/12)");
  r.pool = "";
  EXPECT_EQ(take(c, s, r), "error: no pool of the config has an IPv6 prefix for cloud \"aws\"");
  c.address_plan.pools.clear();
  EXPECT_EQ(take(c, s, r), "error: the config has no address pool");
}

// A pool's clouds: the first pool that serves the cloud, and a named pool
// that does not serve it is refused.
TEST(Allocator, PoolsServeTheirClouds) {
  Config c = planConfig();
  c.address_plan.pools[0].clouds = {"idc"};
  c.address_plan.pools.push_back({"clouds", {P("172.16.0.0/12")}, 20, {"aws", "aliyun"}});
  Snapshot s;
  EXPECT_EQ(take(c, s, req("a", 0)), "172.16.0.0/20");  // aws: the second pool
  Request idc = req("b", 0);
  idc.cloud = "idc";
  EXPECT_EQ(take(c, s, idc), "10.0.0.0/16");
  Request named = req("c", 0);
  named.pool = "main";
  EXPECT_EQ(take(c, s, named), "error: pool main does not serve cloud \"aws\" (its clouds: idc)");
  Request other = req("d", 0);
  other.cloud = "huaweicloud";
  EXPECT_EQ(take(c, s, other),
            "error: no pool of the config has an IPv4 prefix for cloud \"huaweicloud\"");
}

TEST(Allocator, IdempotentByName) {
  Config c = planConfig();
  c.address_plan.vpcs.push_back({"idc", "bj", "legacy", {P("10.0.0.0/16")}, "", ""});
  Snapshot s;
  Request r = req("web", 16);
  r.tenant = "blue";
  EXPECT_EQ(take(c, s, r), "10.1.0.0/16");
  auto again = allocate(c, s, r, {});
  ASSERT_TRUE(again) << again.error();
  EXPECT_FALSE(again->created);
  EXPECT_EQ(again->vpc, *s.find("web"));
  // The default length is the pool's /16: the same request.
  r.length = 0;
  EXPECT_TRUE(allocate(c, s, r, {}));

  r.length = 20;
  EXPECT_EQ(take(c, s, r),
            "error: VPC web is already in the store with other parameters: length /16 "
            "(10.1.0.0/16), asked /20; release it first to allocate it anew");
  r.length = 16;
  r.cloud = "aliyun";
  r.tenant = "";
  EXPECT_EQ(take(c, s, r),
            "error: VPC web is already in the store with other parameters: cloud \"aws\", asked "
            "\"aliyun\"; tenant \"blue\", asked (none); release it first to allocate it anew");
  r = req("web", 16);
  r.tenant = "blue";
  r.family = Family::V6;
  c.address_plan.pools[0].prefixes.push_back(P("fd00::/40"));
  EXPECT_EQ(take(c, s, r),
            "error: VPC web is already in the store with other parameters: family IPv4, asked "
            "IPv6; release it first to allocate it anew");
  EXPECT_EQ(take(c, s, req("legacy", 16)),
            "error: VPC legacy is in the config file (idc/bj, 10.0.0.0/16); a VPC name is unique "
            "in the whole plan");
  EXPECT_EQ(s.vpcs.size(), 1u);
}

TEST(Allocator, RefusesBadNamesAndTenants) {
  const Config c = planConfig();
  Snapshot s;
  EXPECT_EQ(take(c, s, req("9lives", 16)),
            "error: VPC name \"9lives\" is not a valid name: 1..63 letters, digits, '_', '.', '-' "
            "starting with a letter");
  Request r = req("a", 16);
  r.region = "us east";
  EXPECT_EQ(take(c, s, r),
            "error: region \"us east\" is not a valid name: 1..63 letters, digits, '_', '.', '-' "
            "starting with a letter");
  r = req("a", 16);
  r.tenant = "red";
  EXPECT_EQ(take(c, s, r), "error: tenant red is not in the config");
  EXPECT_TRUE(s.vpcs.empty());
}

TEST(Allocator, ReleaseThenAllocateReusesTheLowestBlock) {
  Config c = planConfig();
  c.address_plan.vpcs.push_back({"idc", "bj", "legacy", {P("10.9.0.0/16")}, "", ""});
  Snapshot s;
  EXPECT_EQ(take(c, s, req("a", 16)), "10.0.0.0/16");
  EXPECT_EQ(take(c, s, req("b", 16)), "10.1.0.0/16");
  EXPECT_EQ(take(c, s, req("c", 16)), "10.2.0.0/16");
  auto gone = release(c, s, "b");
  ASSERT_TRUE(gone) << gone.error();
  EXPECT_EQ(gone->prefixes.at(0).toString(), "10.1.0.0/16");
  EXPECT_EQ(take(c, s, req("d", 17)), "10.1.0.0/17");
  EXPECT_EQ(take(c, s, req("e", 16)), "10.3.0.0/16");
  EXPECT_EQ(take(c, s, req("f", 17)), "10.1.128.0/17");

  auto absent = release(c, s, "b");
  ASSERT_FALSE(absent);
  EXPECT_EQ(absent.error(), "VPC \"b\" is not in the store");
  auto in_config = release(c, s, "legacy");
  ASSERT_FALSE(in_config);
  EXPECT_EQ(in_config.error(),
            "VPC legacy is in the config file (idc/bj), not in the store: remove it from the "
            "config file instead");
  EXPECT_EQ(s.vpcs.size(), 5u);
}

TEST(Allocator, InsertKeepsNameOrder) {
  Snapshot s;
  insert(s, {"m", "aws", "r", {P("10.0.0.0/16")}, "", "", "", "allocate"});
  insert(s, {"b", "aws", "r", {P("10.1.0.0/16")}, "", "", "", "allocate"});
  insert(s, {"z", "aws", "r", {P("10.2.0.0/16")}, "", "", "", "allocate"});
  insert(s, {"m", "aws", "r", {P("10.3.0.0/16")}, "", "", "", "allocate"});
  ASSERT_EQ(s.vpcs.size(), 3u);
  EXPECT_EQ(s.vpcs[0].name, "b");
  EXPECT_EQ(s.vpcs[1].name, "m");
  EXPECT_EQ(s.vpcs[1].prefixes[0].toString(), "10.3.0.0/16");
  EXPECT_EQ(s.vpcs[2].name, "z");
}

TEST(Usage, FreeBlocksSizesAndLargest) {
  Config c = planConfig();
  c.address_plan.vpcs.push_back({"idc", "bj", "legacy", {P("10.0.0.0/16")}, "", ""});
  Snapshot s;
  insert(s, {"a", "aws", "r", {P("10.2.0.0/16")}, "main", "", "", "allocate"});
  const std::vector<IpPrefix> reserved = {P("10.255.255.0/24"), P("192.168.0.0/16")};
  auto u = usage(c, s, reserved, 5);
  ASSERT_EQ(u.size(), 1u);
  EXPECT_EQ(u[0].pool, "main");
  EXPECT_EQ(u[0].family, Family::V4);
  EXPECT_EQ(strings(u[0].prefixes), std::vector<std::string>{"10.0.0.0/8"});
  EXPECT_EQ(u[0].size.toString(), "16777216");
  EXPECT_EQ(u[0].used.toString(), "131328");
  EXPECT_EQ(u[0].free.toString(), "16645888");
  EXPECT_EQ(u[0].used.toUint64(), 131328u);
  EXPECT_EQ(strings(u[0].free_blocks),
            (std::vector<std::string>{"10.1.0.0/16", "10.3.0.0/16", "10.4.0.0/14", "10.8.0.0/13",
                                      "10.16.0.0/12"}));
  EXPECT_EQ(u[0].free_block_count, 22u);
  ASSERT_TRUE(u[0].largest_free);
  EXPECT_EQ(u[0].largest_free->toString(), "10.64.0.0/10");

  auto all = usage(c, s, reserved, 100);
  EXPECT_EQ(strings(all[0].free_blocks),
            (std::vector<std::string>{
                "10.1.0.0/16",     "10.3.0.0/16",     "10.4.0.0/14",     "10.8.0.0/13",
                "10.16.0.0/12",    "10.32.0.0/11",    "10.64.0.0/10",    "10.128.0.0/10",
                "10.192.0.0/11",   "10.224.0.0/12",   "10.240.0.0/13",   "10.248.0.0/14",
                "10.252.0.0/15",   "10.254.0.0/16",   "10.255.0.0/17",   "10.255.128.0/18",
                "10.255.192.0/19", "10.255.224.0/20", "10.255.240.0/21", "10.255.248.0/22",
                "10.255.252.0/23", "10.255.254.0/24"}));
}

TEST(Usage, Ipv6SizesBeyond64Bits) {
  Config c;
  c.address_plan.pools.push_back({"mixed", {P("10.0.0.0/8"), P("fd00::/8")}, 16, {}});
  c.address_plan.pools.push_back({"all", {P("::/0")}, 64, {}});
  Snapshot s;
  insert(s, {"a", "aws", "r", {P("fd00::/16")}, "mixed", "", "", "allocate"});
  auto u = usage(c, s, {}, 3);
  ASSERT_EQ(u.size(), 3u);
  EXPECT_EQ(u[0].family, Family::V4);
  EXPECT_EQ(u[1].pool, "mixed");
  EXPECT_EQ(u[1].family, Family::V6);
  EXPECT_EQ(u[1].size.toString(), "1329227995784915872903807060280344576");  // 2^120
  EXPECT_EQ(u[1].used.toString(), "5192296858534827628530496329220096");     // 2^112
  EXPECT_EQ(u[1].free.toString(), "1324035698926381045275276563951124480");
  EXPECT_DOUBLE_EQ(u[1].size.log2(), 120.0);
  EXPECT_FALSE(u[1].size.toUint64());
  EXPECT_EQ(strings(u[1].free_blocks),
            (std::vector<std::string>{"fd01::/16", "fd02::/15", "fd04::/14"}));
  EXPECT_EQ(u[1].free_block_count, 8u);
  EXPECT_EQ(u[1].largest_free->toString(), "fd80::/9");
  // A pool of the whole IPv6 space holds 2^128 addresses; the fd00::/16
  // allocated from "mixed" lies in it too.
  EXPECT_EQ(u[2].pool, "all");
  EXPECT_EQ(u[2].size.toString(), "340282366920938463463374607431768211456");
  EXPECT_DOUBLE_EQ(u[2].size.log2(), 128.0);
  EXPECT_EQ(u[2].used.toString(), "5192296858534827628530496329220096");
  EXPECT_EQ(u[2].free.toString(), "340277174624079928635746076935438991360");
  EXPECT_EQ(u[2].largest_free->toString(), "::/1");
  EXPECT_EQ(u[2].free_block_count, 16u);

  // Allocation at the very top of the IPv6 space.
  Config top;
  top.address_plan.pools.push_back(
      {"top", {P("ffff:ffff:ffff:ffff:ffff:ffff:ffff:fff0/124")}, 126, {}});
  Request r = req("a", 126);
  r.family = Family::V6;
  Snapshot t;
  EXPECT_EQ(take(top, t, r), "ffff:ffff:ffff:ffff:ffff:ffff:ffff:fff0/126");
  r.vpc = "b";
  r.length = 125;
  EXPECT_EQ(take(top, t, r), "ffff:ffff:ffff:ffff:ffff:ffff:ffff:fff8/125");
  r.vpc = "c";
  r.length = 126;
  EXPECT_EQ(take(top, t, r), "ffff:ffff:ffff:ffff:ffff:ffff:ffff:fff4/126");
  r.vpc = "d";
  EXPECT_EQ(take(top, t, r).rfind("error: pool top is full: no free /126", 0), 0u);
  auto tu = usage(top, t, {});
  EXPECT_EQ(tu[0].free.toString(), "0");
  EXPECT_EQ(tu[0].free_block_count, 0u);
  EXPECT_FALSE(tu[0].largest_free);
}

std::vector<std::string> rangesOf(const UsedSpace& u, Family f) {
  std::vector<std::string> out;
  for (const auto& [first, last] : u.ranges(f)) {
    out.push_back(first.toString() + "-" + last.toString());
  }
  return out;
}

TEST(UsedSpace, MergesNeighboursAndNestedRanges) {
  UsedSpace u;
  u.add(P("10.0.1.0/24"));
  u.add(P("10.0.0.0/24"));  // adjacent below
  u.add(P("10.0.3.0/24"));
  EXPECT_EQ(rangesOf(u, Family::V4),
            (std::vector<std::string>{"10.0.0.0-10.0.1.255", "10.0.3.0-10.0.3.255"}));
  u.add(P("10.0.0.128/25"));  // nested
  u.add(P("10.0.2.0/23"));    // fills the gap and covers 10.0.3.0/24
  u.add(P("10.0.5.0/24"));
  EXPECT_EQ(rangesOf(u, Family::V4),
            (std::vector<std::string>{"10.0.0.0-10.0.3.255", "10.0.5.0-10.0.5.255"}));
  u.add(P("10.0.4.0/24"));  // adjacent on both sides
  EXPECT_EQ(rangesOf(u, Family::V4), std::vector<std::string>{"10.0.0.0-10.0.5.255"});
  EXPECT_EQ(u.usedIn(P("10.0.0.0/16")).toString(), "1536");
  EXPECT_EQ(u.usedIn(P("10.0.4.0/23")).toString(), "512");
  EXPECT_EQ(u.usedIn(P("10.1.0.0/16")).toString(), "0");
  EXPECT_EQ(u.lowestFree(P("10.0.0.0/16"), 22)->toString(), "10.0.8.0/22");
  EXPECT_EQ(u.lowestFree(P("10.0.0.0/16"), 23)->toString(), "10.0.6.0/23");
  EXPECT_FALSE(u.lowestFree(P("10.0.0.0/16"), 15));
  EXPECT_TRUE(rangesOf(u, Family::V6).empty());

  u.add(P("ffff::/16"));
  u.add(P("::/1"));
  EXPECT_EQ(rangesOf(u, Family::V6),
            (std::vector<std::string>{"::-7fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
                                      "ffff::-ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"}));
  EXPECT_EQ(u.lowestFree(P("::/0"), 1).has_value(), false);
  EXPECT_EQ(u.lowestFree(P("::/0"), 2)->toString(), "8000::/2");
  u.add(P("8000::/2"));
  u.add(P("c000::/2"));
  EXPECT_EQ(rangesOf(u, Family::V6),
            std::vector<std::string>{"::-ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"});
  EXPECT_EQ(u.usedIn(P("::/0")).toString(), "340282366920938463463374607431768211456");
  EXPECT_FALSE(u.lowestFree(P("::/0"), 128));
  // The IPv4 ranges are apart from the IPv6 ones.
  EXPECT_EQ(rangesOf(u, Family::V4), std::vector<std::string>{"10.0.0.0-10.0.5.255"});
}

TEST(AddressCount, Arithmetic) {
  AddressCount a = AddressCount::power(128);
  a -= AddressCount::power(0);
  EXPECT_EQ(a.toString(), "340282366920938463463374607431768211455");
  a += AddressCount::power(0);
  EXPECT_EQ(a.toString(), "340282366920938463463374607431768211456");
  EXPECT_GT(a, AddressCount::power(127));
  AddressCount b = AddressCount::power(32);
  b -= AddressCount::power(31);
  EXPECT_EQ(b.toUint64(), 2147483648u);
  EXPECT_TRUE(AddressCount().isZero());
  EXPECT_EQ(AddressCount().toString(), "0");
}

TEST(CheckSnapshot, NamesBothObjects) {
  Config c = planConfig();
  c.address_plan.vpcs.push_back({"idc", "bj", "legacy", {P("10.0.0.0/16")}, "", ""});
  c.address_plan.mapped_ranges.push_back({"old", P("192.168.0.0/16"), P("10.4.0.0/16"), ""});
  Snapshot s;
  insert(s, {"a", "aws", "r", {P("10.0.3.0/24")}, "main", "", "", "allocate"});
  insert(s, {"b", "aws", "r", {P("10.4.0.0/15")}, "main", "", "", "allocate"});
  insert(s, {"c", "aws", "r", {P("10.8.0.0/16")}, "main", "", "", "allocate"});
  insert(s, {"d", "aws", "r", {P("10.8.128.0/17")}, "main", "", "", "allocate"});
  insert(s, {"e", "aws", "r", {P("10.99.0.0/16")}, "main", "", "", "allocate"});
  insert(s, {"legacy", "aws", "r", {P("10.20.0.0/16")}, "main", "", "", "import:aws"});
  insert(s,
         {"f", "aws", "r", {P("172.16.0.0/16"), P("10.30.1.1/16")}, "", "red", "", "import:aws"});
  insert(s, {"ok", "aws", "r", {P("10.40.0.0/16")}, "main", "blue", "bj", "allocate"});
  const std::vector<IpPrefix> reserved = {P("10.99.0.0/17"), P("10.99.0.0/24")};
  auto problems = checkSnapshot(c, s, reserved);
  std::vector<std::string> got;
  for (const auto& p : problems) {
    got.push_back(std::string(p.severity == PlanProblem::Severity::kError ? "E " : "W ") + p.vpc +
                  ": " + p.message);
  }
  EXPECT_EQ(got,
            (std::vector<std::string>{
                "E a: stored VPC aws/r/a: 10.0.3.0/24 overlaps 10.0.0.0/16 of VPC idc/bj/legacy "
                "(config file)",
                "E b: stored VPC aws/r/b: 10.4.0.0/15 overlaps 10.4.0.0/16 of mapped range old "
                "(config file)",
                "E d: stored VPC aws/r/d: 10.8.128.0/17 overlaps 10.8.0.0/16 of stored VPC aws/r/c",
                "E e: stored VPC aws/r/e: 10.99.0.0/16 overlaps 10.99.0.0/17 of reserved range "
                "10.99.0.0/17",
                "W f: stored VPC aws/r/f: tenant \"red\" is not in the config",
                "W f: stored VPC aws/r/f: 172.16.0.0/16 is outside every pool",
                "E f: stored VPC aws/r/f: 10.30.1.1/16 has host bits set (10.30.0.0/16)",
                "E legacy: stored VPC aws/r/legacy: its name is that of VPC idc/bj/legacy (config "
                "file); a VPC name is unique in the whole plan",
            }));
  Snapshot clean;
  insert(clean, s.vpcs.back());
  EXPECT_TRUE(checkSnapshot(c, clean, reserved).empty());
}

TEST(Merged, AddsTheStoresVpcs) {
  Config c = planConfig();
  c.address_plan.vpcs.push_back({"idc", "bj", "legacy", {P("10.0.0.0/16")}, "", ""});
  Snapshot s;
  insert(s, {"web", "aws", "us-east-1", {P("10.1.0.0/16")}, "main", "blue", "bj", "allocate"});
  const Config m = merged(c, s);
  ASSERT_EQ(m.address_plan.vpcs.size(), 2u);
  EXPECT_EQ(m.address_plan.vpcs[0], c.address_plan.vpcs[0]);
  EXPECT_EQ(m.address_plan.vpcs[1],
            (config::VpcConfig{"aws", "us-east-1", "web", {P("10.1.0.0/16")}, "blue", "bj"}));
  EXPECT_EQ(m.address_plan.pools, c.address_plan.pools);
  EXPECT_EQ(m.tenants, c.tenants);
}

// ---- property: random allocate/release ----

// Every prefix of the plan in force; sorted by address, a pair of CIDR
// prefixes that overlap is next to each other (prefixes nest or are disjoint).
void expectNoOverlap(const Config& c, const Snapshot& s, const std::vector<IpPrefix>& reserved,
                     int step) {
  std::vector<IpPrefix> all = reserved;
  for (const auto& v : c.address_plan.vpcs) {
    all.insert(all.end(), v.prefixes.begin(), v.prefixes.end());
  }
  for (const auto& v : s.vpcs) {
    all.insert(all.end(), v.prefixes.begin(), v.prefixes.end());
  }
  std::sort(all.begin(), all.end());
  for (size_t i = 1; i < all.size(); ++i) {
    ASSERT_FALSE(all[i - 1].overlaps(all[i]))
        << "step " << step << ": " << all[i - 1].toString() << " and " << all[i].toString();
  }
}

TEST(AllocatorProperty, RandomAllocateReleaseNeverOverlapsNorLeaks) {
  Config c = planConfig();
  c.address_plan.pools[0] = {"prop", {P("10.0.0.0/12"), P("172.16.0.0/20")}, 20, {}};
  c.address_plan.vpcs.push_back({"idc", "bj", "legacy", {P("10.5.0.0/16")}, "", ""});
  const std::vector<IpPrefix> reserved = {P("10.9.128.0/17"), P("172.16.4.0/22")};
  const std::vector<IpPrefix> pool_prefixes = c.address_plan.pools[0].prefixes;
  const uint8_t lengths[] = {16, 18, 20, 22, 24, 26, 28};

  std::mt19937 rng(20261203);
  Snapshot s;
  int allocated = 0, released = 0, full = 0, repeats = 0;
  for (int step = 0; step < 10000; ++step) {
    const std::string name = "v" + std::to_string(rng() % 600);
    if (s.find(name) && rng() % 10 < 4) {
      ASSERT_TRUE(release(c, s, name)) << step;
      ++released;
    } else {
      Request r = req(name, lengths[rng() % std::size(lengths)]);
      if (const StoredVpc* v = s.find(name)) {
        r.length = v->prefixes[0].length;  // a repeat: same parameters
      }
      // The lowest aligned free block, worked out from the free blocks: the
      // first free block at least as large as asked starts it.
      std::optional<IpPrefix> lowest;
      for (const auto& u : usage(c, s, reserved, SIZE_MAX)) {
        for (const auto& b : u.free_blocks) {
          if (b.length <= r.length) {
            lowest = IpPrefix{b.address, r.length};
            break;
          }
        }
      }
      const bool repeat = s.find(name) != nullptr;
      auto a = allocate(c, s, r, reserved);
      if (!a) {
        ASSERT_FALSE(repeat) << step << ": " << a.error();
        ASSERT_FALSE(lowest) << step << ": " << a.error() << " but " << lowest->toString()
                             << " is free";
        ASSERT_NE(a.error().find("pool prop is full"), std::string::npos) << a.error();
        ++full;
        continue;
      }
      if (repeat) {
        ASSERT_FALSE(a->created);
        ASSERT_EQ(a->vpc, *s.find(name));
        ++repeats;
        continue;
      }
      ASSERT_TRUE(a->created);
      const IpPrefix& b = a->vpc.prefixes.at(0);
      ASSERT_EQ(b.length, r.length);
      ASSERT_FALSE(b.hasHostBits()) << b.toString();
      ASSERT_TRUE(std::any_of(pool_prefixes.begin(), pool_prefixes.end(), [&](const IpPrefix& p) {
        return p.length <= b.length && p.contains(b.address);
      })) << b.toString();
      ASSERT_TRUE(lowest);
      ASSERT_EQ(b, *lowest) << step;
      insert(s, a->vpc);
      ++allocated;
    }
    expectNoOverlap(c, s, reserved, step);
    if (HasFatalFailure()) {
      return;
    }
  }
  // Every kind of step happened.
  EXPECT_GT(allocated, 1000);
  EXPECT_GT(released, 1000);
  EXPECT_GT(full, 100);
  EXPECT_GT(repeats, 100);

  while (!s.vpcs.empty()) {
    ASSERT_TRUE(release(s, s.vpcs.front().name));
  }
  auto u = usage(c, s, reserved, SIZE_MAX);
  ASSERT_EQ(u.size(), 1u);
  // Only the config VPC and the reserved ranges are in use: no leaked block.
  EXPECT_EQ(u[0].size.toString(), "1052672");
  EXPECT_EQ(u[0].used.toString(), "99328");  // 65536 + 32768 + 1024
  EXPECT_EQ(strings(u[0].free_blocks),
            (std::vector<std::string>{"10.0.0.0/14", "10.4.0.0/16", "10.6.0.0/15", "10.8.0.0/16",
                                      "10.9.0.0/17", "10.10.0.0/15", "10.12.0.0/14",
                                      "172.16.0.0/22", "172.16.8.0/21"}));
}

// ---- scale ----

TEST(AllocatorScale, SixtyThousandVpcs) {
  Config c = planConfig();
  Snapshot s;
  // 60,000 /24s side by side from 10.0.0.0: even ones in the config file,
  // odd ones in the store.
  for (uint32_t i = 0; i < 60000; ++i) {
    IpPrefix p;
    p.address.bytes = {10, static_cast<uint8_t>(i >> 8), static_cast<uint8_t>(i & 0xff), 0};
    p.length = 24;
    const std::string name = "vpc" + std::to_string(i);
    if (i % 2 == 0) {
      c.address_plan.vpcs.push_back({"idc", "bj", name, {p}, "", ""});
    } else {
      s.vpcs.push_back({name, "aws", "r", {p}, "main", "", "", "allocate"});
    }
  }
  std::sort(s.vpcs.begin(), s.vpcs.end(),
            [](const StoredVpc& a, const StoredVpc& b) { return a.name < b.name; });
  EXPECT_EQ(take(c, s, req("n1", 24)), "10.234.96.0/24");  // 60000 = 234 * 256 + 96
  EXPECT_EQ(take(c, s, req("n2", 16)), "10.235.0.0/16");
  EXPECT_EQ(take(c, s, req("n3", 28)), "10.234.97.0/28");
  EXPECT_TRUE(checkSnapshot(c, s, {}).empty());
  auto u = usage(c, s, {}, 4);
  EXPECT_EQ(u[0].used.toString(), std::to_string(60001 * 256 + 65536 + 16));
  EXPECT_EQ(merged(c, s).address_plan.vpcs.size(), 60003u);
}

}  // namespace
}  // namespace mcgw::plan
