// TenantFib on real rte_lpm / rte_lpm6 tables (EAL --no-huge).
#include "dataplane/engine/fib.hpp"

#include <gtest/gtest.h>
#include <rte_eal.h>
#include <unistd.h>

#include <string>
#include <vector>

namespace mcgw::engine {
namespace {

class Eal : public ::testing::Environment {
 public:
  void SetUp() override {
    std::string prefix = "fibtest" + std::to_string(::getpid());
    std::vector<std::string> args{"fib_test",
                                  "-l",
                                  "0",
                                  "--no-huge",
                                  "--no-shconf",
                                  "-m",
                                  "512",
                                  "--no-pci",
                                  "--file-prefix",
                                  prefix,
                                  "--log-level=*:error"};
    std::vector<char*> argv;
    for (auto& a : args) {
      argv.push_back(a.data());
    }
    ASSERT_GE(rte_eal_init(static_cast<int>(argv.size()), argv.data()), 0);
  }
  void TearDown() override { rte_eal_cleanup(); }
};
const auto* const kEal = ::testing::AddGlobalTestEnvironment(new Eal);

config::IpPrefix prefix(const char* s) {
  return *config::IpPrefix::parse(s);
}
config::IpAddress addr(const char* s) {
  return *config::IpAddress::parse(s);
}

std::optional<uint32_t> lookup(const TenantFib& fib, const char* dst) {
  config::IpAddress a = addr(dst);
  return a.family == config::Family::V4 ? fib.lookup4(a.bytes.data()) : fib.lookup6(a.bytes.data());
}

TEST(TenantFib, LongestPrefixWinsForBothFamilies) {
  auto fib = TenantFib::create("blue", {{prefix("0.0.0.0/0"), 9},
                                       {prefix("10.0.0.0/8"), 1},
                                       {prefix("10.2.0.0/16"), 2},
                                       {prefix("10.2.3.0/24"), 3},
                                       {prefix("10.2.3.4/32"), 4},
                                       {prefix("2001:db8::/32"), 5},
                                       {prefix("2001:db8:1::/48"), 6},
                                       {prefix("2001:db8:1:2::/64"), 7},
                                       {prefix("::/0"), 8}});
  ASSERT_TRUE(fib.ok()) << fib.error();
  EXPECT_EQ((*fib)->routes(), 9u);
  struct {
    const char* dst;
    std::optional<uint32_t> next_hop;
  } cases[] = {
      {"10.2.3.4", 4},    {"10.2.3.5", 3},        {"10.2.4.1", 2},        {"10.9.9.9", 1},
      {"192.0.2.1", 9},   {"2001:db8:1:2::1", 7}, {"2001:db8:1:3::1", 6}, {"2001:db8:ffff::1", 5},
      {"2001:db9::1", 8}, {"fe80::1", 8},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.dst);
    EXPECT_EQ(lookup(**fib, c.dst), c.next_hop);
  }
}

TEST(TenantFib, DefaultRouteNeverHidesALongerOneWhateverTheOrder) {
  auto fib = TenantFib::create("order", {{prefix("0.0.0.0/1"), 1},
                                        {prefix("0.0.0.0/0"), 9},
                                        {prefix("8000::/1"), 2},
                                        {prefix("::/0"), 8}});
  ASSERT_TRUE(fib.ok()) << fib.error();
  EXPECT_EQ(lookup(**fib, "10.1.1.1"), 1u);
  EXPECT_EQ(lookup(**fib, "192.0.2.1"), 9u);
  EXPECT_EQ(lookup(**fib, "fe80::1"), 2u);
  EXPECT_EQ(lookup(**fib, "2001:db8::1"), 8u);
}

TEST(TenantFib, EmptyTableMissesAndHostBitsAreIgnored) {
  auto empty = TenantFib::create("empty", {});
  ASSERT_TRUE(empty.ok()) << empty.error();
  EXPECT_EQ(lookup(**empty, "10.0.0.1"), std::nullopt);
  EXPECT_EQ(lookup(**empty, "::1"), std::nullopt);
  EXPECT_EQ(lookup(**empty, "255.255.255.255"), std::nullopt);
  empty->reset();
  auto masked = TenantFib::create("masked", {{prefix("10.1.2.3/16"), 11}});
  ASSERT_TRUE(masked.ok());
  EXPECT_EQ(lookup(**masked, "10.1.200.200"), 11u);
}

TEST(TenantFib, RefusesWhatTheTablesCannotHold) {
  auto big = TenantFib::create("bignh", {{prefix("2001:db8::/32"), TenantFib::kMaxNextHop + 1}});
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.error().find("too large"), std::string::npos) << big.error();
  // The largest next hop survives both tables.
  auto max = TenantFib::create("maxnh", {{prefix("10.0.0.0/8"), TenantFib::kMaxNextHop},
                                        {prefix("2001:db8::/32"), TenantFib::kMaxNextHop}});
  ASSERT_TRUE(max.ok()) << max.error();
  EXPECT_EQ(lookup(**max, "10.1.1.1"), TenantFib::kMaxNextHop);
  EXPECT_EQ(lookup(**max, "2001:db8::1"), TenantFib::kMaxNextHop);

}

}  // namespace
}  // namespace mcgw::engine
