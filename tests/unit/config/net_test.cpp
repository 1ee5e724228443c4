// IpAddress and IpPrefix: parsing, printing, masking, containment, overlap.
#include "config/net.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mcgw::config {
namespace {

IpAddress ip(const char* text) {
  auto a = IpAddress::parse(text);
  EXPECT_TRUE(a.has_value()) << text;
  return a.value_or(IpAddress{});
}

IpPrefix pfx(const char* text) {
  auto p = IpPrefix::parse(text);
  EXPECT_TRUE(p.has_value()) << text;
  return p.value_or(IpPrefix{});
}

struct AddressCase {
  const char* text;
  Family family;
  std::vector<uint8_t> bytes;  // the leading bytes; the rest must be 0
  const char* printed;
};

TEST(IpAddressTest, ParsesAndPrints) {
  const AddressCase cases[] = {
      {"192.0.2.1", Family::V4, {192, 0, 2, 1}, "192.0.2.1"},
      {"0.0.0.0", Family::V4, {0, 0, 0, 0}, "0.0.0.0"},
      {"255.255.255.255", Family::V4, {255, 255, 255, 255}, "255.255.255.255"},
      {"2001:db8::1",
       Family::V6,
       {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1},
       "2001:db8::1"},
      {"2001:DB8:0:0:0:0:0:A",
       Family::V6,
       {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x0a},
       "2001:db8::a"},
      {"::", Family::V6, {}, "::"},
      {"::1", Family::V6, {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}, "::1"},
      {"::ffff:192.0.2.1",
       Family::V6,
       {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 192, 0, 2, 1},
       "::ffff:192.0.2.1"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.text);
    auto a = IpAddress::parse(c.text);
    ASSERT_TRUE(a.has_value());
    EXPECT_EQ(a->family, c.family);
    EXPECT_EQ(a->bits(), c.family == Family::V4 ? 32u : 128u);
    std::array<uint8_t, 16> expected{};
    std::copy(c.bytes.begin(), c.bytes.end(), expected.begin());
    EXPECT_EQ(a->bytes, expected);
    EXPECT_EQ(a->toString(), c.printed);
  }
}

TEST(IpAddressTest, RejectsMalformedText) {
  for (const char* text :
       {"", "1.2.3", "1.2.3.4.5", "256.1.1.1", "1.2.3.4/24", " 1.2.3.4", "1.2.3.4 ", "a.b.c.d",
        "2001:db8::g", "2001:db8:::1", "1:2:3:4:5:6:7:8:9", "fe80::1%eth0", "localhost"}) {
    SCOPED_TRACE(text);
    EXPECT_FALSE(IpAddress::parse(text).has_value());
  }
}

TEST(IpAddressTest, OrdersByFamilyThenBytes) {
  EXPECT_LT(ip("10.0.0.1"), ip("10.0.0.2"));
  EXPECT_LT(ip("9.255.255.255"), ip("10.0.0.0"));
  EXPECT_LT(ip("255.255.255.255"), ip("::"));
  EXPECT_EQ(ip("2001:db8::1"), ip("2001:0db8:0:0::1"));
  EXPECT_NE(ip("0.0.0.0"), ip("::"));
}

struct PrefixCase {
  const char* text;
  Family family;
  unsigned length;
  const char* printed;
  const char* network;
};

TEST(IpPrefixTest, ParsesPrintsAndMasks) {
  const PrefixCase cases[] = {
      {"10.1.0.0/16", Family::V4, 16, "10.1.0.0/16", "10.1.0.0/16"},
      {"10.1.2.3/16", Family::V4, 16, "10.1.2.3/16", "10.1.0.0/16"},
      {"10.1.255.255/23", Family::V4, 23, "10.1.255.255/23", "10.1.254.0/23"},
      {"192.0.2.77/29", Family::V4, 29, "192.0.2.77/29", "192.0.2.72/29"},
      {"192.0.2.77/32", Family::V4, 32, "192.0.2.77/32", "192.0.2.77/32"},
      {"10.1.2.3/0", Family::V4, 0, "10.1.2.3/0", "0.0.0.0/0"},
      {"0.0.0.0/0", Family::V4, 0, "0.0.0.0/0", "0.0.0.0/0"},
      {"2001:db8::/32", Family::V6, 32, "2001:db8::/32", "2001:db8::/32"},
      {"2001:DB8:abcd:12ff::1/52", Family::V6, 52, "2001:db8:abcd:12ff::1/52",
       "2001:db8:abcd:1000::/52"},
      {"2001:db8::1/64", Family::V6, 64, "2001:db8::1/64", "2001:db8::/64"},
      {"2001:db8::1/127", Family::V6, 127, "2001:db8::1/127", "2001:db8::/127"},
      {"::1/128", Family::V6, 128, "::1/128", "::1/128"},
      {"ffff::1/0", Family::V6, 0, "ffff::1/0", "::/0"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.text);
    auto p = IpPrefix::parse(c.text);
    ASSERT_TRUE(p.has_value());
    EXPECT_EQ(p->address.family, c.family);
    EXPECT_EQ(p->length, c.length);
    EXPECT_EQ(p->toString(), c.printed);
    EXPECT_EQ(p->network().toString(), c.network);
    EXPECT_EQ(p->network().length, c.length);
    EXPECT_EQ(p->hasHostBits(), std::string(c.printed) != c.network);
    EXPECT_FALSE(p->network().hasHostBits());
  }
}

TEST(IpPrefixTest, RejectsMalformedText) {
  for (const char* text :
       {"", "1.2.3.4/33", "1.2.3", "1.2.3/8", "::1/129", "10.0.0.0/", "10.0.0.0", "/8",
        "10.0.0.0/-1", "10.0.0.0/+8", "10.0.0.0/8x", "10.0.0.0/ 8", "10.0.0.0//8", "10.0.0.0/8/8",
        "10.0.0.0/256", "10.0.0.0/4294967304", "2001:db8::/", "2001:db8::g/32", "x/8"}) {
    SCOPED_TRACE(text);
    EXPECT_FALSE(IpPrefix::parse(text).has_value());
  }
}

struct ContainsCase {
  const char* prefix;
  const char* address;
  bool contains;
};

TEST(IpPrefixTest, Contains) {
  const ContainsCase cases[] = {
      {"10.0.0.0/8", "10.0.0.0", true},
      {"10.0.0.0/8", "10.255.255.255", true},
      {"10.0.0.0/8", "11.0.0.0", false},
      {"10.0.0.0/8", "9.255.255.255", false},
      {"10.1.2.3/16", "10.1.99.1", true},  // host bits of the prefix do not matter
      {"192.0.2.0/31", "192.0.2.1", true},
      {"192.0.2.0/31", "192.0.2.2", false},
      {"192.0.2.1/32", "192.0.2.1", true},
      {"192.0.2.1/32", "192.0.2.0", false},
      {"0.0.0.0/0", "203.0.113.9", true},
      {"0.0.0.0/0", "::", false},  // another family
      {"::/0", "2001:db8::1", true},
      {"::/0", "0.0.0.0", false},
      {"2001:db8::/32", "2001:db8:ffff::1", true},
      {"2001:db8::/32", "2001:db9::", false},
      {"2001:db8:0:1::/64", "2001:db8:0:1:ffff:ffff:ffff:ffff", true},
      {"2001:db8:0:1::/64", "2001:db8:0:2::", false},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(std::string(c.prefix) + " " + c.address);
    EXPECT_EQ(pfx(c.prefix).contains(ip(c.address)), c.contains);
  }
}

struct OverlapCase {
  const char* a;
  const char* b;
  bool overlaps;
};

TEST(IpPrefixTest, Overlaps) {
  const OverlapCase cases[] = {
      {"10.0.0.0/8", "10.1.0.0/16", true},
      {"10.0.0.0/16", "10.1.0.0/16", false},
      {"10.0.0.0/15", "10.1.0.0/16", true},
      {"10.2.0.0/16", "10.2.128.0/17", true},
      {"10.2.0.0/17", "10.2.128.0/17", false},
      {"10.2.0.0/16", "10.2.0.0/16", true},
      {"0.0.0.0/0", "192.0.2.0/24", true},
      {"192.0.2.0/24", "192.0.2.255/32", true},
      {"192.0.2.0/24", "192.0.3.0/32", false},
      {"10.0.0.0/8", "::/0", false},  // families never overlap
      {"2001:db8::/32", "2001:db8:1::/48", true},
      {"2001:db8::/48", "2001:db8:1::/48", false},
      {"::/0", "2001:db8::/32", true},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(std::string(c.a) + " vs " + c.b);
    EXPECT_EQ(pfx(c.a).overlaps(pfx(c.b)), c.overlaps);
    EXPECT_EQ(pfx(c.b).overlaps(pfx(c.a)), c.overlaps);  // symmetric
  }
}

struct MacCase {
  const char* text;
  std::array<uint8_t, 6> bytes;
  const char* printed;
  bool unicast;
};

TEST(MacAddressTest, ParsesAndPrints) {
  const MacCase cases[] = {
      {"02:00:00:00:00:01", {0x02, 0, 0, 0, 0, 0x01}, "02:00:00:00:00:01", true},
      {"52:54:00:ab:cd:ef", {0x52, 0x54, 0x00, 0xab, 0xcd, 0xef}, "52:54:00:ab:cd:ef", true},
      {"52:54:00:AB:CD:EF", {0x52, 0x54, 0x00, 0xab, 0xcd, 0xef}, "52:54:00:ab:cd:ef", true},
      {"aA:bB:cC:dD:eE:fE", {0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xfe}, "aa:bb:cc:dd:ee:fe", true},
      {"fe:ff:ff:ff:ff:ff", {0xfe, 0xff, 0xff, 0xff, 0xff, 0xff}, "fe:ff:ff:ff:ff:ff", true},
      {"00:00:00:00:00:01", {0, 0, 0, 0, 0, 0x01}, "00:00:00:00:00:01", true},
      {"00:00:00:00:00:00", {0, 0, 0, 0, 0, 0}, "00:00:00:00:00:00", false},           // all zeros
      {"01:00:5e:00:00:01", {0x01, 0, 0x5e, 0, 0, 0x01}, "01:00:5e:00:00:01", false},  // multicast
      {"33:33:00:00:00:01", {0x33, 0x33, 0, 0, 0, 0x01}, "33:33:00:00:00:01", false},
      {"ff:ff:ff:ff:ff:ff", {0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, "ff:ff:ff:ff:ff:ff", false},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.text);
    auto m = MacAddress::parse(c.text);
    ASSERT_TRUE(m.has_value());
    EXPECT_EQ(m->bytes, c.bytes);
    EXPECT_EQ(m->toString(), c.printed);
    EXPECT_EQ(m->isUnicast(), c.unicast);
    EXPECT_EQ(MacAddress::parse(m->toString()), m);  // round trip
  }
}

TEST(MacAddressTest, RejectsMalformedText) {
  for (const char* text :
       {"", "02:00:00:00:00", "02:00:00:00:00:01:02", "02:00:00:00:00:1", "2:00:00:00:00:01",
        "02:00:00:00:00:001", "02-00-00-00-00-01", "0200.0000.0001", "020000000001",
        "02:00:00:00:00:0g", "02:00:00:00:00:01 ", " 02:00:00:00:00:01",
        "02:00:00:00:00:01:", "02::00:00:00:00:01", "02:00:00:00:00:+1", "02:00:00:00:00:-1",
        "0x:00:00:00:00:01", "02;00:00:00:00:01"}) {
    SCOPED_TRACE(text);
    EXPECT_FALSE(MacAddress::parse(text).has_value());
  }
}

TEST(MacAddressTest, DefaultIsAllZerosAndOrdersByBytes) {
  EXPECT_EQ(MacAddress{}.toString(), "00:00:00:00:00:00");
  EXPECT_FALSE(MacAddress{}.isUnicast());
  EXPECT_LT(*MacAddress::parse("02:00:00:00:00:01"), *MacAddress::parse("02:00:00:00:00:02"));
  EXPECT_EQ(*MacAddress::parse("52:54:00:AB:CD:EF"), *MacAddress::parse("52:54:00:ab:cd:ef"));
}

}  // namespace
}  // namespace mcgw::config
