// TenantFib on real rte_fib / rte_fib6 tables (EAL --no-huge): longest-prefix
// match in both forms (range array, DIR-24-8 / TRIE), in-place changes, growth
// and shrinking, failed applies, and a reader looking up while the writer
// changes the routes.
#include "dataplane/engine/fib.hpp"
#include "tests/support/eal.hpp"

#include <gtest/gtest.h>
#include <rte_eal.h>
#include <rte_malloc.h>
#include <rte_rcu_qsbr.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace mcgw::engine {
namespace {

// Large-form copies take 64 MiB each (two per family): room for a few.
const auto* const kEal =
    ::testing::AddGlobalTestEnvironment(new test::EalEnvironment("fib_test", 1536));

using Change = TenantFib::Change;

config::IpPrefix prefix(const char* s) {
  return *config::IpPrefix::parse(s);
}
config::IpAddress addr(const char* s) {
  return *config::IpAddress::parse(s);
}

std::optional<uint32_t> lookup(const TenantFib& fib, const config::IpAddress& a) {
  return a.family == config::Family::V4 ? fib.lookup4(a.bytes.data()) : fib.lookup6(a.bytes.data());
}
std::optional<uint32_t> lookup(const TenantFib& fib, const char* dst) {
  return lookup(fib, addr(dst));
}

Change add(const char* p, uint32_t nh) {
  return {prefix(p), nh, false};
}
Change withdraw(const char* p) {
  return {prefix(p), 0, true};
}

// The sizing that gives each form: the range array (default, few routes) or the
// DIR-24-8 / TRIE table from the first route on.
TenantFib::Sizing sizingFor(bool large) {
  TenantFib::Sizing s;
  if (large) {
    s.small_routes = 0;
  }
  return s;
}

// Counts grace periods; no reader in these tests.
struct CountingSync {
  int calls = 0;
  TenantFib::Synchronize fn() {
    return [this] { ++calls; };
  }
};

class BothForms : public ::testing::TestWithParam<bool> {};

TEST_P(BothForms, LongestPrefixWinsForBothFamilies) {
  auto fib = TenantFib::create("blue",
                               {{prefix("0.0.0.0/0"), 9},
                                {prefix("10.0.0.0/8"), 1},
                                {prefix("10.2.0.0/16"), 2},
                                {prefix("10.2.3.0/24"), 3},
                                {prefix("10.2.3.4/32"), 4},
                                {prefix("2001:db8::/32"), 5},
                                {prefix("2001:db8:1::/48"), 6},
                                {prefix("2001:db8:1:2::/64"), 7},
                                {prefix("2001:db8:1:2::9/128"), 10},
                                {prefix("::/0"), 8}},
                               sizingFor(GetParam()));
  ASSERT_TRUE(fib.ok()) << fib.error();
  EXPECT_EQ((*fib)->routes(), 10u);
  EXPECT_EQ((*fib)->large4(), GetParam());
  EXPECT_EQ((*fib)->large6(), GetParam());
  struct {
    const char* dst;
    std::optional<uint32_t> next_hop;
  } cases[] = {
      {"10.2.3.4", 4},
      {"10.2.3.5", 3},
      {"10.2.3.3", 3},
      {"10.2.4.1", 2},
      {"10.9.9.9", 1},
      {"192.0.2.1", 9},
      {"0.0.0.0", 9},
      {"255.255.255.255", 9},
      {"2001:db8:1:2::9", 10},
      {"2001:db8:1:2::8", 7},
      {"2001:db8:1:2::a", 7},
      {"2001:db8:1:3::1", 6},
      {"2001:db8:ffff::1", 5},
      {"2001:db9::1", 8},
      {"fe80::1", 8},
      {"::", 8},
      {"ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", 8},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.dst);
    EXPECT_EQ(lookup(**fib, c.dst), c.next_hop);
  }
}

TEST_P(BothForms, DefaultRouteNeverHidesALongerOneWhateverTheOrder) {
  auto fib = TenantFib::create("order",
                               {{prefix("0.0.0.0/1"), 1},
                                {prefix("0.0.0.0/0"), 9},
                                {prefix("8000::/1"), 2},
                                {prefix("::/0"), 8}},
                               sizingFor(GetParam()));
  ASSERT_TRUE(fib.ok()) << fib.error();
  EXPECT_EQ(lookup(**fib, "10.1.1.1"), 1u);
  EXPECT_EQ(lookup(**fib, "192.0.2.1"), 9u);
  EXPECT_EQ(lookup(**fib, "fe80::1"), 2u);
  EXPECT_EQ(lookup(**fib, "2001:db8::1"), 8u);
}

TEST_P(BothForms, EmptyTableMissesAndHostBitsAreIgnored) {
  auto empty = TenantFib::create("empty", {}, sizingFor(GetParam()));
  ASSERT_TRUE(empty.ok()) << empty.error();
  EXPECT_EQ((*empty)->routes(), 0u);
  EXPECT_EQ(lookup(**empty, "10.0.0.1"), std::nullopt);
  EXPECT_EQ(lookup(**empty, "::1"), std::nullopt);
  EXPECT_EQ(lookup(**empty, "255.255.255.255"), std::nullopt);
  empty->reset();
  auto masked =
      TenantFib::create("masked", {{prefix("10.1.2.3/16"), 11}, {prefix("2001:db8::ff/32"), 12}},
                        sizingFor(GetParam()));
  ASSERT_TRUE(masked.ok());
  EXPECT_EQ(lookup(**masked, "10.1.200.200"), 11u);
  EXPECT_EQ(lookup(**masked, "10.2.0.0"), std::nullopt);
  EXPECT_EQ(lookup(**masked, "2001:db8:7::1"), 12u);
  // A change with host bits names the same route.
  CountingSync sync;
  std::vector<Change> w{withdraw("10.1.99.99/16"), withdraw("2001:db8::1/32")};
  ASSERT_TRUE((*masked)->apply(w, sync.fn()).ok());
  EXPECT_EQ((*masked)->routes(), 0u);
  EXPECT_EQ(lookup(**masked, "10.1.200.200"), std::nullopt);
  EXPECT_EQ(lookup(**masked, "2001:db8:7::1"), std::nullopt);
}

TEST_P(BothForms, AddReplaceWithdrawInPlace) {
  auto fib = TenantFib::create("edit", {{prefix("10.0.0.0/8"), 1}, {prefix("2001:db8::/32"), 2}},
                               sizingFor(GetParam()));
  ASSERT_TRUE(fib.ok()) << fib.error();
  TenantFib& f = **fib;
  CountingSync sync;

  std::vector<Change> batch1{add("0.0.0.0/0", 100),       add("10.1.1.1/32", 101),
                             add("10.0.0.0/8", 102),      add("::/0", 200),
                             add("2001:db8::1/128", 201), add("2001:db8:0:1::/64", 202),
                             withdraw("192.168.0.0/16"),  withdraw("fd00::/8")};
  auto r = f.apply(batch1, sync.fn());
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(sync.calls, 1);
  EXPECT_EQ(f.routes(), 7u);
  EXPECT_EQ(lookup(f, "10.1.1.1"), 101u);
  EXPECT_EQ(lookup(f, "10.1.1.2"), 102u);  // replaced
  EXPECT_EQ(lookup(f, "11.0.0.1"), 100u);
  EXPECT_EQ(lookup(f, "2001:db8::1"), 201u);
  EXPECT_EQ(lookup(f, "2001:db8::2"), 2u);
  EXPECT_EQ(lookup(f, "2001:db8:0:1::2"), 202u);
  EXPECT_EQ(lookup(f, "3fff::1"), 200u);

  // The second copy got the same changes: a further batch (applied to it
  // first) keeps everything the first batch made.
  std::vector<Change> batch2{withdraw("0.0.0.0/0"), withdraw("10.1.1.1/32"),
                             withdraw("2001:db8::1/128"), add("2001:db8::/32", 203),
                             add("2001:db8::/32", 204)};
  r = f.apply(batch2, sync.fn());
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(sync.calls, 2);
  EXPECT_EQ(f.routes(), 4u);
  EXPECT_EQ(lookup(f, "10.1.1.1"), 102u);
  EXPECT_EQ(lookup(f, "11.0.0.1"), std::nullopt);
  EXPECT_EQ(lookup(f, "2001:db8::1"), 204u);
  EXPECT_EQ(lookup(f, "2001:db8:0:1::2"), 202u);
  EXPECT_EQ(lookup(f, "3fff::1"), 200u);

  // Nothing left to change in the other copy either: a third batch that
  // only re-adds what is there answers the same.
  std::vector<Change> batch3{add("10.0.0.0/8", 102), withdraw("::/0")};
  r = f.apply(batch3, sync.fn());
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(f.routes(), 3u);
  EXPECT_EQ(lookup(f, "10.1.1.1"), 102u);
  EXPECT_EQ(lookup(f, "3fff::1"), std::nullopt);
  EXPECT_EQ(lookup(f, "2001:db8::1"), 204u);
  EXPECT_EQ(f.rebuilds(), 0u);  // every batch went in place
}

INSTANTIATE_TEST_SUITE_P(Forms, BothForms, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "Large" : "Array"; });

TEST(TenantFib, RefusesWhatTheTablesCannotHold) {
  auto big = TenantFib::create("bignh", {{prefix("2001:db8::/32"), TenantFib::kMaxNextHop + 1}});
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.error().find("too large"), std::string::npos) << big.error();
  // The largest next hop survives both forms of both tables.
  for (bool large : {false, true}) {
    auto max = TenantFib::create("maxnh",
                                 {{prefix("10.0.0.0/8"), TenantFib::kMaxNextHop},
                                  {prefix("2001:db8::/32"), TenantFib::kMaxNextHop}},
                                 sizingFor(large));
    ASSERT_TRUE(max.ok()) << max.error();
    EXPECT_EQ(lookup(**max, "10.1.1.1"), TenantFib::kMaxNextHop);
    EXPECT_EQ(lookup(**max, "2001:db8::1"), TenantFib::kMaxNextHop);
    EXPECT_EQ(lookup(**max, "11.1.1.1"), std::nullopt);
  }
}

// What lookups answer for a fixed set of destinations.
std::vector<std::optional<uint32_t>> answers(const TenantFib& fib,
                                             const std::vector<const char*>& d) {
  std::vector<std::optional<uint32_t>> out;
  for (const char* a : d) {
    out.push_back(lookup(fib, a));
  }
  return out;
}

TEST(TenantFib, FailedApplyChangesNothing) {
  const std::vector<const char*> probes{"10.1.1.1", "10.2.2.2", "9.9.9.9", "2001:db8::1", "::1"};
  const std::vector<std::optional<uint32_t>> before{1, 2, std::nullopt, 3, std::nullopt};

  // A next hop too large in the middle of a batch.
  {
    auto fib = TenantFib::create(
        "nhfail",
        {{prefix("10.0.0.0/8"), 1}, {prefix("10.2.0.0/16"), 2}, {prefix("2001:db8::/32"), 3}});
    ASSERT_TRUE(fib.ok()) << fib.error();
    CountingSync sync;
    std::vector<Change> bad{withdraw("10.0.0.0/8"), add("9.0.0.0/8", 4),
                            add("2001:db8::/32", TenantFib::kMaxNextHop + 1),
                            withdraw("10.2.0.0/16")};
    auto r = (*fib)->apply(bad, sync.fn());
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().find("too large"), std::string::npos) << r.error();
    EXPECT_EQ(sync.calls, 0);
    EXPECT_EQ((*fib)->routes(), 3u);
    EXPECT_EQ(answers(**fib, probes), before);
  }

  // Growing into the large form needs more memory than allowed.
  {
    TenantFib::Sizing s;
    s.small_routes = 8;
    s.max_copy_bytes = 1 << 20;
    auto fib = TenantFib::create(
        "oomfail",
        {{prefix("10.0.0.0/8"), 1}, {prefix("10.2.0.0/16"), 2}, {prefix("2001:db8::/32"), 3}}, s);
    ASSERT_TRUE(fib.ok()) << fib.error();
    CountingSync sync;
    std::vector<Change> grow{withdraw("10.0.0.0/8")};
    for (int i = 0; i < 20; ++i) {
      grow.push_back(add(("172.16." + std::to_string(i) + ".0/24").c_str(), 50));
    }
    auto r = (*fib)->apply(grow, sync.fn());
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().find("out of memory"), std::string::npos) << r.error();
    EXPECT_EQ(sync.calls, 0);
    EXPECT_EQ((*fib)->routes(), 3u);
    EXPECT_FALSE((*fib)->large4());
    EXPECT_EQ(answers(**fib, probes), before);
    EXPECT_EQ(lookup(**fib, "172.16.1.1"), std::nullopt);
    // Still usable: a change that fits goes through (and reaches both copies).
    std::vector<Change> ok{add("9.0.0.0/8", 4)};
    ASSERT_TRUE((*fib)->apply(ok, sync.fn()).ok());
    ASSERT_TRUE((*fib)->apply(std::vector<Change>{add("8.0.0.0/8", 5)}, sync.fn()).ok());
    EXPECT_EQ(lookup(**fib, "9.9.9.9"), 4u);
    EXPECT_EQ(lookup(**fib, "8.8.8.8"), 5u);
    EXPECT_EQ(lookup(**fib, "10.1.1.1"), 1u);
  }
}

// 300 /24 routes: the DIR-24-8 copies get room for 375 routes and 64 tbl8
// groups.  70 host routes in distinct /24s fit the route count but not the
// groups: the in-place change runs out half way.
std::vector<TenantFib::Route> threeHundredSlash24() {
  std::vector<TenantFib::Route> routes;
  for (int i = 0; i < 300; ++i) {
    routes.push_back(
        {prefix(
             ("10." + std::to_string(i / 256) + "." + std::to_string(i % 256) + ".0/24").c_str()),
         1});
  }
  return routes;
}
std::vector<Change> seventyHostRoutes() {
  std::vector<Change> c;
  for (int i = 0; i < 70; ++i) {
    c.push_back(add(("10.0." + std::to_string(i) + ".7/32").c_str(), 1000 + i));
  }
  return c;
}

TEST(TenantFib, RunningOutOfTbl8GroupsGrowsTheTable) {
  auto fib = TenantFib::create("tbl8grow", threeHundredSlash24(), sizingFor(true));
  ASSERT_TRUE(fib.ok()) << fib.error();
  const size_t before = (*fib)->memoryBytes();
  CountingSync sync;
  auto r = (*fib)->apply(seventyHostRoutes(), sync.fn());
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ((*fib)->routes(), 370u);
  EXPECT_EQ((*fib)->rebuilds(), 2u);  // both copies, with twice the groups
  EXPECT_GT((*fib)->memoryBytes(), before);
  EXPECT_EQ(lookup(**fib, "10.0.0.7"), 1000u);
  EXPECT_EQ(lookup(**fib, "10.0.69.7"), 1069u);
  EXPECT_EQ(lookup(**fib, "10.0.69.8"), 1u);
  EXPECT_EQ(lookup(**fib, "10.0.70.7"), 1u);
  EXPECT_EQ(lookup(**fib, "10.1.43.7"), 1u);
  EXPECT_EQ(lookup(**fib, "10.1.44.7"), std::nullopt);
  // Both copies hold them: withdrawing from the other copy works too.
  std::vector<Change> w{withdraw("10.0.0.7/32"), withdraw("10.0.69.7/32")};
  ASSERT_TRUE((*fib)->apply(w, sync.fn()).ok());
  EXPECT_EQ(lookup(**fib, "10.0.0.7"), 1u);
  EXPECT_EQ(lookup(**fib, "10.0.1.7"), 1001u);
  EXPECT_EQ(lookup(**fib, "10.0.69.7"), 1u);
}

TEST(TenantFib, RunningOutOfTbl8GroupsWithoutMemoryChangesNothing) {
  TenantFib::Sizing s = sizingFor(true);
  // Room for the 64-group copy (64 MiB tbl24 + 65 KiB of groups + 151 KiB
  // of RIB nodes), not for one with 128 groups.
  s.max_copy_bytes = (size_t{64} << 20) + 250'000;
  auto fib = TenantFib::create("tbl8fail", threeHundredSlash24(), s);
  ASSERT_TRUE(fib.ok()) << fib.error();
  CountingSync sync;
  auto r = (*fib)->apply(seventyHostRoutes(), sync.fn());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("out of memory"), std::string::npos) << r.error();
  EXPECT_EQ(sync.calls, 0);
  EXPECT_EQ((*fib)->routes(), 300u);
  EXPECT_EQ(lookup(**fib, "10.0.0.7"), 1u);
  EXPECT_EQ(lookup(**fib, "10.0.69.7"), 1u);
  EXPECT_EQ(lookup(**fib, "10.2.0.1"), std::nullopt);
  // Afterwards a change that fits goes through, on both copies.
  for (uint32_t nh : {7u, 8u}) {
    std::vector<Change> c{add("10.0.5.0/24", nh), add("10.0.6.9/32", nh)};
    ASSERT_TRUE((*fib)->apply(c, sync.fn()).ok());
    EXPECT_EQ(lookup(**fib, "10.0.5.1"), nh);
    EXPECT_EQ(lookup(**fib, "10.0.6.9"), nh);
    EXPECT_EQ(lookup(**fib, "10.0.6.8"), 1u);
  }
}

TEST(TenantFib, GrowsFromTenToOneHundredThousandAndBack) {
  std::vector<TenantFib::Route> ten;
  for (int i = 0; i < 5; ++i) {
    ten.push_back({prefix(("192.0." + std::to_string(i) + ".0/24").c_str()), 1});
    ten.push_back({prefix(("2001:db8:" + std::to_string(i) + "::/48").c_str()), 2});
  }
  auto fib = TenantFib::create("grow", ten);
  ASSERT_TRUE(fib.ok()) << fib.error();
  TenantFib& f = **fib;
  EXPECT_FALSE(f.large4());
  EXPECT_FALSE(f.large6());
  const size_t small = f.memoryBytes();
  EXPECT_LT(small, size_t{1} << 20);  // not the 2 x 64 MiB of a DIR-24-8 table

  // 90,000 IPv4 /24s and /32s and 9,990 IPv6 /48s and /64s, in 10 batches;
  // next hops say which route answers.
  CountingSync sync;
  std::vector<Change> added;
  for (uint32_t i = 0; i < 90'000; ++i) {
    const uint32_t a = 0x0b000000u + i * 256 + (i % 3 == 0 ? 7 : 0);
    const std::string p = std::to_string(a >> 24) + "." + std::to_string((a >> 16) & 255) + "." +
                          std::to_string((a >> 8) & 255) + "." + std::to_string(a & 255) +
                          (i % 3 == 0 ? "/32" : "/24");
    added.push_back(add(p.c_str(), 10 + i));
  }
  for (uint32_t i = 0; i < 9'990; ++i) {
    char p[64];
    if (i % 2 == 0) {
      std::snprintf(p, sizeof p, "2001:db9:%x::/48", i / 2);
    } else {
      std::snprintf(p, sizeof p, "2001:dba:0:%x::/64", i / 2);
    }
    added.push_back(add(p, 100'000 + i));
  }
  for (size_t at = 0; at < added.size(); at += 10'000) {
    const size_t n = std::min<size_t>(10'000, added.size() - at);
    auto r = f.apply(std::span<const Change>(added).subspan(at, n), sync.fn());
    ASSERT_TRUE(r.ok()) << r.error();
  }
  EXPECT_EQ(f.routes(), 100'000u);
  EXPECT_TRUE(f.large4());
  EXPECT_TRUE(f.large6());
  EXPECT_GT(f.memoryBytes(), size_t{256} << 20);  // four 64 MiB tables at least
  EXPECT_EQ(lookup(f, "11.0.0.7"), 10u);
  EXPECT_EQ(lookup(f, "11.0.0.8"), std::nullopt);  // host route alone in its /24
  EXPECT_EQ(lookup(f, "11.0.1.200"), 11u);
  EXPECT_EQ(lookup(f, "11.1.95.7"), 10u + 351);  // 0x15f = 351: a /32
  EXPECT_EQ(lookup(f, "192.0.4.4"), 1u);
  EXPECT_EQ(lookup(f, "2001:db9::1"), 100'000u);
  EXPECT_EQ(lookup(f, "2001:db9:1:ffff::1"), 100'002u);
  EXPECT_EQ(lookup(f, "2001:dba::1"), 100'001u);
  EXPECT_EQ(lookup(f, "2001:dba:0:1:ffff::1"), 100'003u);
  EXPECT_EQ(lookup(f, "2001:dba:0:1388::1"), std::nullopt);  // 4995th /64: none
  EXPECT_EQ(lookup(f, "2001:db8:4::1"), 2u);

  // Back down to the ten: the array form comes back with its small size.
  std::vector<Change> removed;
  for (const auto& c : added) {
    removed.push_back({c.prefix, 0, true});
  }
  for (size_t at = 0; at < removed.size(); at += 25'000) {
    const size_t n = std::min<size_t>(25'000, removed.size() - at);
    auto r = f.apply(std::span<const Change>(removed).subspan(at, n), sync.fn());
    ASSERT_TRUE(r.ok()) << r.error();
  }
  EXPECT_EQ(f.routes(), 10u);
  EXPECT_FALSE(f.large4());
  EXPECT_FALSE(f.large6());
  EXPECT_EQ(f.memoryBytes(), small);
  EXPECT_EQ(lookup(f, "11.0.0.7"), std::nullopt);
  EXPECT_EQ(lookup(f, "192.0.4.4"), 1u);
  EXPECT_EQ(lookup(f, "2001:db8:4::1"), 2u);
  EXPECT_EQ(lookup(f, "2001:db9::1"), std::nullopt);
}

// A deliberately simple reference: longest match by scanning every route.
struct Reference {
  std::map<config::IpPrefix, uint32_t> routes;
  std::optional<uint32_t> find(const config::IpAddress& a) const {
    std::optional<uint32_t> best;
    int best_len = -1;
    for (const auto& [p, nh] : routes) {
      if (p.address.family == a.family && p.length > best_len && contains(p, a)) {
        best = nh;
        best_len = p.length;
      }
    }
    return best;
  }
  static bool contains(const config::IpPrefix& p, const config::IpAddress& a) {
    for (unsigned bit = 0; bit < p.length; ++bit) {
      const unsigned byte = bit / 8, mask = 0x80u >> (bit % 8);
      if ((p.address.bytes[byte] & mask) != (a.bytes[byte] & mask)) {
        return false;
      }
    }
    return true;
  }
};

// Prefixes drawn from a small space so that they nest and overlap.
config::IpPrefix randomPrefix(std::mt19937& rng, bool v6) {
  config::IpPrefix p;
  p.address.family = v6 ? config::Family::V6 : config::Family::V4;
  const unsigned bits = v6 ? 128 : 32;
  static const uint8_t kLen4[] = {0, 8, 12, 16, 20, 23, 24, 25, 28, 30, 31, 32};
  static const uint8_t kLen6[] = {0, 16, 24, 29, 32, 40, 44, 48, 56, 64, 100, 127, 128};
  p.length = v6 ? kLen6[rng() % std::size(kLen6)] : kLen4[rng() % std::size(kLen4)];
  // Leading bytes fixed-ish, the rest random: many routes share /24s.
  p.address.bytes[0] = v6 ? 0x20 : 10;
  for (unsigned i = 1; i < bits / 8; ++i) {
    p.address.bytes[i] = static_cast<uint8_t>(i < 3 ? rng() % 2 : rng() % 4);
  }
  return p.network();
}

config::IpAddress near(std::mt19937& rng, const config::IpPrefix& p) {
  config::IpAddress a = p.address;
  for (unsigned i = 0; i < (a.family == config::Family::V4 ? 4u : 16u); ++i) {
    if (rng() % 4 == 0) {
      a.bytes[i] = static_cast<uint8_t>(rng() % 4);
    }
  }
  return a;
}

TEST_P(BothForms, MatchesABruteForceReferenceThroughRandomChanges) {
  std::mt19937 rng(12);
  auto fib = TenantFib::create("random", {}, sizingFor(GetParam()));
  ASSERT_TRUE(fib.ok()) << fib.error();
  Reference ref;
  CountingSync sync;
  for (int round = 0; round < 40; ++round) {
    std::vector<Change> batch;
    for (int i = 0; i < 50; ++i) {
      Change c{randomPrefix(rng, rng() % 2 == 0), static_cast<uint32_t>(rng() % 1000),
               rng() % 3 == 0};
      batch.push_back(c);
      if (c.withdraw) {
        ref.routes.erase(c.prefix);
      } else {
        ref.routes[c.prefix] = c.next_hop;
      }
    }
    auto r = (*fib)->apply(batch, sync.fn());
    ASSERT_TRUE(r.ok()) << r.error();
    ASSERT_EQ((*fib)->routes(), ref.routes.size());
    for (int i = 0; i < 200; ++i) {
      const config::IpAddress a = near(rng, randomPrefix(rng, rng() % 2 == 0));
      ASSERT_EQ(lookup(**fib, a), ref.find(a)) << a.toString() << " round " << round;
    }
  }
}

// The bulk lookups of a burst answer what the brute-force reference (and
// find4 / find6) answer, for every count from 0 to kMaxBulk, in both forms.
TEST_P(BothForms, BulkLookupsAnswerAsTheReference) {
  std::mt19937 rng(31);
  std::vector<TenantFib::Route> routes;
  Reference ref;
  for (int i = 0; i < 400; ++i) {
    const config::IpPrefix p = randomPrefix(rng, i % 2 == 1);
    const auto nh = static_cast<uint32_t>(rng() % 1000);
    if (p.length == 0) {  // no default route: misses must be answered too
      continue;
    }
    if (ref.routes.emplace(p, nh).second) {
      routes.push_back({p, nh});
    }
  }
  auto fib = TenantFib::create("bulk", routes, sizingFor(GetParam()));
  ASSERT_TRUE(fib.ok()) << fib.error();
  ASSERT_EQ((*fib)->large4(), GetParam());
  ASSERT_EQ((*fib)->large6(), GetParam());
  size_t hits = 0, misses = 0;
  for (unsigned n = 0; n <= TenantFib::kMaxBulk; ++n) {
    for (int round = 0; round < 4; ++round) {
      std::vector<config::IpAddress> v4, v6;
      uint32_t keys4[TenantFib::kMaxBulk];
      uint8_t keys6[TenantFib::kMaxBulk][16];
      for (unsigned i = 0; i < n; ++i) {
        v4.push_back(near(rng, randomPrefix(rng, false)));
        v6.push_back(near(rng, randomPrefix(rng, true)));
        keys4[i] = static_cast<uint32_t>(v4[i].bytes[0]) << 24 | v4[i].bytes[1] << 16 |
                   v4[i].bytes[2] << 8 | v4[i].bytes[3];
        std::memcpy(keys6[i], v6[i].bytes.data(), 16);
      }
      uint32_t nh4[TenantFib::kMaxBulk + 1], nh6[TenantFib::kMaxBulk + 1];
      nh4[n] = nh6[n] = 0xdeadbeef;  // past the last: never written
      (*fib)->find4Bulk(keys4, nh4, n);
      (*fib)->find6Bulk(keys6, nh6, n);
      EXPECT_EQ(nh4[n], 0xdeadbeefu);
      EXPECT_EQ(nh6[n], 0xdeadbeefu);
      for (unsigned i = 0; i < n; ++i) {
        const auto want4 = ref.find(v4[i]);
        const auto want6 = ref.find(v6[i]);
        EXPECT_EQ(nh4[i], want4.value_or(TenantFib::kNoRoute)) << v4[i].toString() << " n " << n;
        EXPECT_EQ(nh6[i], want6.value_or(TenantFib::kNoRoute)) << v6[i].toString() << " n " << n;
        EXPECT_EQ(nh4[i], (*fib)->find4(v4[i].bytes.data()));
        EXPECT_EQ(nh6[i], (*fib)->find6(v6[i].bytes.data()));
        hits += want4.has_value() + want6.has_value();
        misses += !want4.has_value() + !want6.has_value();
      }
    }
  }
  EXPECT_GT(hits, 1000u) << "the destinations hit routes, not only misses";
  EXPECT_GT(misses, 1000u) << "and missed them too";
}

// A reader registered with an RCU variable looks up continuously while the
// writer applies thousands of changes (with form switches and growth): each
// answer must be a next hop some route covering the destination had.  Next
// hops encode the route: prefix index * 8 + version.
TEST(TenantFib, ReaderSeesOnlyNextHopsItsRoutesHad) {
  std::vector<config::IpPrefix> universe;
  std::mt19937 rng(7);
  for (int i = 0; i < 2000; ++i) {
    universe.push_back(randomPrefix(rng, i % 2 == 1));
  }
  std::sort(universe.begin(), universe.end());
  universe.erase(std::unique(universe.begin(), universe.end()), universe.end());
  std::vector<config::IpAddress> probes;
  for (int i = 0; i < 512; ++i) {
    probes.push_back(near(rng, universe[rng() % universe.size()]));
  }

  TenantFib::Sizing s;
  s.small_routes = 300;  // the churn crosses it both ways
  auto fib = TenantFib::create("churn", {}, s);
  ASSERT_TRUE(fib.ok()) << fib.error();
  TenantFib& f = **fib;

  const size_t qsbr_size = rte_rcu_qsbr_get_memsize(1);
  auto* qsbr = static_cast<rte_rcu_qsbr*>(rte_zmalloc("fibtest_qsbr", qsbr_size, 64));
  ASSERT_NE(qsbr, nullptr);
  ASSERT_EQ(rte_rcu_qsbr_init(qsbr, 1), 0);
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> lookups{0}, wrong{0};
  std::string first_wrong;
  std::thread reader([&] {
    rte_rcu_qsbr_thread_register(qsbr, 0);
    rte_rcu_qsbr_thread_online(qsbr, 0);
    uint64_t n = 0;
    while (!stop.load(std::memory_order_relaxed)) {
      for (const auto& a : probes) {
        const uint32_t nh =
            a.family == config::Family::V4 ? f.find4(a.bytes.data()) : f.find6(a.bytes.data());
        ++n;
        if (nh == TenantFib::kNoRoute) {
          continue;
        }
        const size_t idx = nh / 8;
        if (idx >= universe.size() || universe[idx].address.family != a.family ||
            !Reference::contains(universe[idx], a)) {
          if (wrong++ == 0) {
            first_wrong = a.toString() + " -> " + std::to_string(nh);
          }
        }
      }
      rte_rcu_qsbr_quiescent(qsbr, 0);
    }
    lookups = n;
    rte_rcu_qsbr_thread_offline(qsbr, 0);
    rte_rcu_qsbr_thread_unregister(qsbr, 0);
  });

  Reference ref;
  auto synchronize = [qsbr] { rte_rcu_qsbr_synchronize(qsbr, RTE_QSBR_THRID_INVALID); };
  size_t changes = 0;
  for (int round = 0; round < 150; ++round) {
    std::vector<Change> batch;
    // Mostly adds early on, mostly withdrawals later: the table grows past
    // small_routes and shrinks back below half of it.
    const int withdraw_pct = round < 60 ? 20 : (round < 100 ? 50 : 80);
    for (int i = 0; i < 40; ++i) {
      const size_t idx = rng() % universe.size();
      const bool w = static_cast<int>(rng() % 100) < withdraw_pct;
      Change c{universe[idx], static_cast<uint32_t>(idx * 8 + rng() % 8), w};
      batch.push_back(c);
      if (w) {
        ref.routes.erase(c.prefix);
      } else {
        ref.routes[c.prefix] = c.next_hop;
      }
    }
    auto r = f.apply(batch, synchronize);
    ASSERT_TRUE(r.ok()) << r.error();
    changes += batch.size();
  }
  stop = true;
  reader.join();
  rte_free(qsbr);
  EXPECT_EQ(wrong.load(), 0u) << first_wrong;
  EXPECT_GT(lookups.load(), 0u);
  EXPECT_EQ(changes, 6000u);
  // And the final table is the reference's.
  ASSERT_EQ(f.routes(), ref.routes.size());
  for (const auto& a : probes) {
    ASSERT_EQ(lookup(f, a), ref.find(a)) << a.toString();
  }
}

}  // namespace
}  // namespace mcgw::engine
