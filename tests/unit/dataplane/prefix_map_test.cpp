// Byte tables of the 1:1 prefix translation (dataplane/proto/prefix_map.hpp).
// The expected bytes were built by scapy with every checksum computed from
// scratch (tests/unit/dataplane/prefix_map_vectors.py prints them again);
// each result is also checked with a checksum computation written here.
// Ranges: 10.1.0.0/16 <-> 100.65.0.0/16 and fd12:3456:789a:1000::/52 <->
// fd99:8888:7777:6000::/52 (the /52 ends inside a byte).
#include <gtest/gtest.h>

#include <arpa/inet.h>

#include <cstring>
#include <string>
#include <vector>

#include "dataplane/proto/prefix_map.hpp"
#include "tests/support/hex.hpp"

namespace mcgw::proto {
namespace {

using Packet = std::vector<uint8_t>;

Packet hex(std::string_view s) {
  return test::hex<uint8_t>(s);
}

using test::toHex;

// The Internet checksum, written out again (not the library's).
uint32_t sum16(const uint8_t* p, size_t n, uint32_t sum = 0) {
  for (size_t i = 0; i + 1 < n; i += 2) {
    sum += static_cast<uint32_t>(p[i] << 8 | p[i + 1]);
  }
  if (n & 1) {
    sum += static_cast<uint32_t>(p[n - 1] << 8);
  }
  return sum;
}
uint16_t fold(uint32_t sum) {
  while (sum >> 16) {
    sum = (sum & 0xffff) + (sum >> 16);
  }
  return static_cast<uint16_t>(sum);
}

std::array<uint8_t, 16> addr(const char* text) {
  std::array<uint8_t, 16> a{};
  if (inet_pton(AF_INET, text, a.data()) != 1) {
    EXPECT_EQ(inet_pton(AF_INET6, text, a.data()), 1) << text;
  }
  return a;
}

PrefixRule rule(const char* from, const char* to, uint8_t length, uint16_t slot) {
  const bool v6 = std::strchr(from, ':') != nullptr;
  return PrefixRule::make(v6, addr(from).data(), addr(to).data(), length, slot);
}

// Real -> mapped (egress, keyed by the real ranges) and back (ingress).
PrefixMapTable outTable() {
  PrefixMapTable t;
  EXPECT_TRUE(t.assign({rule("10.1.0.0", "100.65.0.0", 16, 0),
                        rule("fd12:3456:789a:1000::", "fd99:8888:7777:6000::", 52, 1)}));
  return t;
}
PrefixMapTable inTable() {
  PrefixMapTable t;
  EXPECT_TRUE(t.assign({rule("100.65.0.0", "10.1.0.0", 16, 0),
                        rule("fd99:8888:7777:6000::", "fd12:3456:789a:1000::", 52, 1)}));
  return t;
}

// Every checksum the packet lets us verify is right: the IPv4 header; TCP,
// UDP (unless 0) and ICMPv6 over the pseudo-header, ICMP over its message,
// when the packet is whole; an ICMP error's quoted IPv4 header.
void expectChecksumsRight(const Packet& p, const std::string& name) {
  const bool v6 = (p[0] >> 4) == 6;
  size_t l4 = 0, l4_len = 0;
  uint8_t protocol = 0;
  bool whole = true;
  uint32_t pseudo = 0;
  if (!v6) {
    const size_t hl = (p[0] & 0x0f) * 4u;
    EXPECT_EQ(fold(sum16(p.data(), hl)), 0xffff) << name << ": IPv4 header";
    whole = (p[6] & 0x3f) == 0 && p[7] == 0;
    protocol = p[9];
    l4 = hl;
    l4_len = p.size() - hl;
    pseudo = sum16(p.data() + 12, 8) + protocol + static_cast<uint32_t>(l4_len);
  } else {
    protocol = p[6];
    l4 = 40;
    l4_len = p.size() - 40;
    whole = protocol != 44;
    pseudo = sum16(p.data() + 8, 32) + protocol + static_cast<uint32_t>(l4_len);
  }
  if (!whole) {
    return;
  }
  const uint8_t* t = p.data() + l4;
  if (protocol == 6 || (protocol == 17 && (t[6] | t[7])) || protocol == 58) {
    EXPECT_EQ(fold(sum16(t, l4_len, pseudo)), 0xffff) << name << ": L4 checksum";
  }
  if (protocol == 1) {
    EXPECT_EQ(fold(sum16(t, l4_len)), 0xffff) << name << ": ICMP checksum";
    if (t[0] == 3 || t[0] == 11) {
      const size_t hl = (t[8] & 0x0f) * 4u;
      EXPECT_EQ(fold(sum16(t + 8, hl)), 0xffff) << name << ": quoted IPv4 header";
    }
  }
}

struct Case {
  const char* name;
  const char* before;
  const char* after;
};

// Egress: the source (real -> mapped); an ICMP error's quoted destination.
const Case kEgress[] = {
    {"Tcp4",
     "45 00 00 3a 12 34 40 00 3f 06 13 80 0a 01 02 03 0a 02 00 05 9c 40 01 bb 00 00 03 e8 00 00 07 "
     "d0 50 18 01 f5 6a 91 00 00 68 65 6c 6c 6f 20 6d 61 70 70 65 64 20 77 6f 72 6c 64",
     "45 00 00 3a 12 34 40 00 3f 06 b9 3f 64 41 02 03 0a 02 00 05 9c 40 01 bb 00 00 03 e8 00 00 07 "
     "d0 50 18 01 f5 10 51 00 00 68 65 6c 6c 6f 20 6d 61 70 70 65 64 20 77 6f 72 6c 64"},
    {"Udp4",
     "45 00 00 24 00 07 00 00 40 11 64 b8 0a 01 02 03 0a 02 00 05 14 e9 00 35 00 10 72 68 12 34 71 "
     "75 65 72 79 21",
     "45 00 00 24 00 07 00 00 40 11 0a 78 64 41 02 03 0a 02 00 05 14 e9 00 35 00 10 18 28 12 34 71 "
     "75 65 72 79 21"},
    {"Udp4ZeroChecksum",
     "45 00 00 24 00 07 00 00 40 11 64 b8 0a 01 02 03 0a 02 00 05 14 e9 00 35 00 10 00 00 12 34 71 "
     "75 65 72 79 21",
     "45 00 00 24 00 07 00 00 40 11 0a 78 64 41 02 03 0a 02 00 05 14 e9 00 35 00 10 00 00 12 34 71 "
     "75 65 72 79 21"},
    {"Echo4",
     "45 00 00 2c 00 09 00 00 40 01 9e bf 0a 01 c8 01 0a 02 00 05 08 00 7c 42 00 77 00 03 70 69 6e "
     "67 70 69 6e 67 70 69 6e 67 70 69 6e 67",
     "45 00 00 2c 00 09 00 00 40 01 44 7f 64 41 c8 01 0a 02 00 05 08 00 7c 42 00 77 00 03 70 69 6e "
     "67 70 69 6e 67 70 69 6e 67 70 69 6e 67"},
    {"FragNeededQuotingTcp",
     "45 00 00 4c 00 01 00 00 40 01 66 a8 0a 01 00 01 0a 02 00 05 03 04 df dd 00 00 05 78 45 00 00 "
     "3a 12 34 40 00 3f 06 13 80 0a 02 00 05 0a 01 02 03 9c 40 01 bb 00 00 03 e8 00 00 07 d0 50 18 "
     "01 f5 6a 91 00 00 68 65 6c 6c 6f 20 6d 61",
     "45 00 00 4c 00 01 00 00 40 01 0c 68 64 41 00 01 0a 02 00 05 03 04 3a 1e 00 00 05 78 45 00 00 "
     "3a 12 34 40 00 3f 06 b9 3f 0a 02 00 05 64 41 02 03 9c 40 01 bb 00 00 03 e8 00 00 07 d0 50 18 "
     "01 f5 10 51 00 00 68 65 6c 6c 6f 20 6d 61"},
    {"FragNeededQuotingTcpHead",
     "45 00 00 38 00 01 00 00 40 01 66 bc 0a 01 00 01 0a 02 00 05 03 04 55 a0 00 00 05 78 45 00 00 "
     "3a 12 34 40 00 3f 06 13 80 0a 02 00 05 0a 01 02 03 9c 40 01 bb 00 00 03 e8",
     "45 00 00 38 00 01 00 00 40 01 0c 7c 64 41 00 01 0a 02 00 05 03 04 55 a0 00 00 05 78 45 00 00 "
     "3a 12 34 40 00 3f 06 b9 3f 0a 02 00 05 64 41 02 03 9c 40 01 bb 00 00 03 e8"},
    {"FragNeededQuotingUdp",
     "45 00 00 40 00 01 00 00 40 01 66 b4 0a 01 00 01 0a 02 00 05 03 04 0d b0 00 00 05 78 45 00 00 "
     "24 00 07 00 00 40 11 64 b8 0a 02 00 05 0a 01 02 03 14 e9 00 35 00 10 72 68 12 34 71 75 65 72 "
     "79 21",
     "45 00 00 40 00 01 00 00 40 01 0c 74 64 41 00 01 0a 02 00 05 03 04 67 f0 00 00 05 78 45 00 00 "
     "24 00 07 00 00 40 11 0a 78 0a 02 00 05 64 41 02 03 14 e9 00 35 00 10 18 28 12 34 71 75 65 72 "
     "79 21"},
    {"FragNeededFromOutsideQuotingUdp",
     "45 00 00 40 00 01 00 00 40 01 a7 0c c0 a8 09 01 0a 02 00 05 03 04 0d b0 00 00 05 78 45 00 00 "
     "24 00 07 00 00 40 11 64 b8 0a 02 00 05 0a 01 02 03 14 e9 00 35 00 10 72 68 12 34 71 75 65 72 "
     "79 21",
     "45 00 00 40 00 01 00 00 40 01 a7 0c c0 a8 09 01 0a 02 00 05 03 04 67 f0 00 00 05 78 45 00 00 "
     "24 00 07 00 00 40 11 0a 78 0a 02 00 05 64 41 02 03 14 e9 00 35 00 10 18 28 12 34 71 75 65 72 "
     "79 21"},
    {"FirstFragment4",
     "45 00 00 2c 42 42 20 00 40 11 02 75 0a 01 02 03 0a 02 00 05 00 07 00 09 00 38 bf 21 00 01 02 "
     "03 04 05 06 07 08 09 0a 0b 0c 0d 0e 0f",
     "45 00 00 2c 42 42 20 00 40 11 a8 34 64 41 02 03 0a 02 00 05 00 07 00 09 00 38 64 e1 00 01 02 "
     "03 04 05 06 07 08 09 0a 0b 0c 0d 0e 0f"},
    {"LaterFragment4",
     "45 00 00 2c 42 42 20 03 40 11 02 72 0a 01 02 03 0a 02 00 05 10 11 12 13 14 15 16 17 18 19 1a "
     "1b 1c 1d 1e 1f 20 21 22 23 24 25 26 27",
     "45 00 00 2c 42 42 20 03 40 11 a8 31 64 41 02 03 0a 02 00 05 10 11 12 13 14 15 16 17 18 19 1a "
     "1b 1c 1d 1e 1f 20 21 22 23 24 25 26 27"},
    {"Tcp6",
     "60 01 23 45 00 1c 06 3f fd 12 34 56 78 9a 1a bc 00 00 00 00 00 00 00 07 fd 00 00 00 00 00 00 "
     "00 00 00 00 00 00 00 00 05 9c 40 01 bb 00 00 00 01 00 00 00 02 50 10 02 58 f4 79 00 00 76 36 "
     "20 64 61 74 61 21",
     "60 01 23 45 00 1c 06 3f fd 99 88 88 77 77 6a bc 00 00 00 00 00 00 00 07 fd 00 00 00 00 00 00 "
     "00 00 00 00 00 00 00 00 05 9c 40 01 bb 00 00 00 01 00 00 00 02 50 10 02 58 50 e3 00 00 76 36 "
     "20 64 61 74 61 21"},
    {"Udp6",
     "60 00 00 00 00 0f 11 40 fd 12 34 56 78 9a 1a bc 00 00 00 00 00 00 00 07 fd 00 00 00 00 00 00 "
     "00 00 00 00 00 00 00 00 05 03 e8 07 d0 00 0f a1 1e 61 62 63 64 65 66 67",
     "60 00 00 00 00 0f 11 40 fd 99 88 88 77 77 6a bc 00 00 00 00 00 00 00 07 fd 00 00 00 00 00 00 "
     "00 00 00 00 00 00 00 00 05 03 e8 07 d0 00 0f fd 87 61 62 63 64 65 66 67"},
    {"Echo6",
     "60 00 00 00 00 0d 3a 40 fd 12 34 56 78 9a 1a bc 00 00 00 00 00 00 00 07 fd 00 00 00 00 00 00 "
     "00 00 00 00 00 00 00 00 05 80 00 a9 0f 00 05 00 06 70 69 6e 67 36",
     "60 00 00 00 00 0d 3a 40 fd 99 88 88 77 77 6a bc 00 00 00 00 00 00 00 07 fd 00 00 00 00 00 00 "
     "00 00 00 00 00 00 00 00 05 80 00 05 79 00 05 00 06 70 69 6e 67 36"},
    {"LaterFragment6",
     "60 00 00 00 00 1a 2c 40 fd 12 34 56 78 9a 1a bc 00 00 00 00 00 00 00 07 fd 00 00 00 00 00 00 "
     "00 00 00 00 00 00 00 00 05 11 00 00 40 00 00 ab cd 66 72 61 67 6d 65 6e 74 20 74 61 69 6c 20 "
     "64 61 74 61",
     "60 00 00 00 00 1a 2c 40 fd 99 88 88 77 77 6a bc 00 00 00 00 00 00 00 07 fd 00 00 00 00 00 00 "
     "00 00 00 00 00 00 00 00 05 11 00 00 40 00 00 ab cd 66 72 61 67 6d 65 6e 74 20 74 61 69 6c 20 "
     "64 61 74 61"},
};

// Ingress: the destination (mapped -> real); an ICMP error's quoted source.
const Case kIngress[] = {
    {"Tcp4In",
     "45 00 00 3a 12 34 40 00 3f 06 b9 3f 0a 02 00 05 64 41 02 03 9c 40 01 bb 00 00 03 e8 00 00 07 "
     "d0 50 18 01 f5 10 51 00 00 68 65 6c 6c 6f 20 6d 61 70 70 65 64 20 77 6f 72 6c 64",
     "45 00 00 3a 12 34 40 00 3f 06 13 80 0a 02 00 05 0a 01 02 03 9c 40 01 bb 00 00 03 e8 00 00 07 "
     "d0 50 18 01 f5 6a 91 00 00 68 65 6c 6c 6f 20 6d 61 70 70 65 64 20 77 6f 72 6c 64"},
    {"FragNeededInQuotingUdp",
     "45 00 00 40 00 01 00 00 40 01 0a 6f 0a 09 00 01 64 41 02 03 03 04 67 f0 00 00 05 78 45 00 00 "
     "24 00 07 00 00 40 11 0a 78 64 41 02 03 0a 02 00 05 14 e9 00 35 00 10 18 28 12 34 71 75 65 72 "
     "79 21",
     "45 00 00 40 00 01 00 00 40 01 64 af 0a 09 00 01 0a 01 02 03 03 04 0d b0 00 00 05 78 45 00 00 "
     "24 00 07 00 00 40 11 64 b8 0a 01 02 03 0a 02 00 05 14 e9 00 35 00 10 72 68 12 34 71 75 65 72 "
     "79 21"},
    {"PacketTooBigInQuotingTcp",
     "60 00 00 00 00 4c 3a 40 fd 00 00 00 00 00 00 00 00 00 00 00 00 00 00 01 fd 99 88 88 77 77 6a "
     "bc 00 00 00 00 00 00 00 07 02 00 09 9b 00 00 05 00 60 01 23 45 00 1c 06 3f fd 99 88 88 77 77 "
     "6a bc 00 00 00 00 00 00 00 07 fd 00 00 00 00 00 00 00 00 00 00 00 00 00 00 05 9c 40 01 bb 00 "
     "00 00 01 00 00 00 02 50 10 02 58 50 e3 00 00 76 36 20 64 61 74 61 21",
     "60 00 00 00 00 4c 3a 40 fd 00 00 00 00 00 00 00 00 00 00 00 00 00 00 01 fd 12 34 56 78 9a 1a "
     "bc 00 00 00 00 00 00 00 07 02 00 ad 31 00 00 05 00 60 01 23 45 00 1c 06 3f fd 12 34 56 78 9a "
     "1a bc 00 00 00 00 00 00 00 07 fd 00 00 00 00 00 00 00 00 00 00 00 00 00 00 05 9c 40 01 bb 00 "
     "00 00 01 00 00 00 02 50 10 02 58 f4 79 00 00 76 36 20 64 61 74 61 21"},
    {"PacketTooBigInQuotingEcho",
     "60 00 00 00 00 3d 3a 40 fd 00 00 00 00 00 00 00 00 00 00 00 00 00 00 01 fd 99 88 88 77 77 6a "
     "bc 00 00 00 00 00 00 00 07 02 00 f9 22 00 00 05 00 60 00 00 00 00 0d 3a 40 fd 99 88 88 77 77 "
     "6a bc 00 00 00 00 00 00 00 07 fd 00 00 00 00 00 00 00 00 00 00 00 00 00 00 05 80 00 05 79 00 "
     "05 00 06 70 69 6e 67 36",
     "60 00 00 00 00 3d 3a 40 fd 00 00 00 00 00 00 00 00 00 00 00 00 00 00 01 fd 12 34 56 78 9a 1a "
     "bc 00 00 00 00 00 00 00 07 02 00 9c b9 00 00 05 00 60 00 00 00 00 0d 3a 40 fd 12 34 56 78 9a "
     "1a bc 00 00 00 00 00 00 00 07 fd 00 00 00 00 00 00 00 00 00 00 00 00 00 00 05 80 00 a9 0f 00 "
     "05 00 06 70 69 6e 67 36"},
};

void run(const Case& c, AddressField field, const PrefixMapTable& table) {
  Packet p = hex(c.before);
  const Packet want = hex(c.after);
  ASSERT_EQ(p.size(), want.size()) << c.name;
  expectChecksumsRight(p, std::string(c.name) + " (input)");
  const MapResult r = mapPacket(p.data(), p.size(), (p[0] >> 4) == 6, field, table);
  EXPECT_TRUE(r.changed()) << c.name;
  EXPECT_EQ(toHex(p), toHex(want)) << c.name;
  expectChecksumsRight(p, c.name);
}

TEST(prefix_map, EgressByteTable) {
  const PrefixMapTable t = outTable();
  for (const Case& c : kEgress) {
    run(c, AddressField::kSource, t);
  }
}

TEST(prefix_map, IngressByteTable) {
  const PrefixMapTable t = inTable();
  for (const Case& c : kIngress) {
    run(c, AddressField::kDestination, t);
  }
}

// Translating the result back with the other direction's table on the same
// field gives the input again.
TEST(prefix_map, BackAndForthRestores) {
  const PrefixMapTable out = outTable(), in = inTable();
  for (const Case& c : kEgress) {
    Packet p = hex(c.after);
    mapPacket(p.data(), p.size(), (p[0] >> 4) == 6, AddressField::kSource, in);
    EXPECT_EQ(toHex(p), toHex(hex(c.before))) << c.name;
  }
  for (const Case& c : kIngress) {
    Packet p = hex(c.after);
    mapPacket(p.data(), p.size(), (p[0] >> 4) == 6, AddressField::kDestination, out);
    EXPECT_EQ(toHex(p), toHex(hex(c.before))) << c.name;
  }
}

TEST(prefix_map, WhichRuleIsReported) {
  const PrefixMapTable t = outTable();
  Packet p = hex(kEgress[0].before);  // TCP from 10.1.2.3
  MapResult r = mapPacket(p.data(), p.size(), false, AddressField::kSource, t);
  ASSERT_NE(r.outer, nullptr);
  EXPECT_EQ(r.outer->slot, 0);
  EXPECT_EQ(r.inner, nullptr);
  // frag-needed from outside the range quoting a mapped flow: the quote only.
  for (const Case& c : kEgress) {
    if (std::string(c.name) == "FragNeededFromOutsideQuotingUdp") {
      p = hex(c.before);
    }
  }
  r = mapPacket(p.data(), p.size(), false, AddressField::kSource, t);
  EXPECT_EQ(r.outer, nullptr);
  ASSERT_NE(r.inner, nullptr);
  EXPECT_EQ(r.inner->slot, 0);
}

TEST(prefix_map, OutsideTheRangesNothingChanges) {
  const PrefixMapTable t = outTable();
  // The TCP packet of the table, from 10.2.0.5 to 10.1.2.3: the source is
  // outside, and the destination is not the field translated.
  Packet p = hex(kIngress[0].after);
  const Packet before = p;
  EXPECT_FALSE(mapPacket(p.data(), p.size(), false, AddressField::kSource, t).changed());
  EXPECT_EQ(p, before);
  // 10.0.255.255 and 10.2.0.0 are just outside 10.1.0.0/16.
  EXPECT_EQ(t.find4(addr("10.0.255.255").data()), nullptr);
  EXPECT_EQ(t.find4(addr("10.2.0.0").data()), nullptr);
  EXPECT_NE(t.find4(addr("10.1.0.0").data()), nullptr);
  EXPECT_NE(t.find4(addr("10.1.255.255").data()), nullptr);
  EXPECT_EQ(t.find6(addr("fd12:3456:789a:0fff:ffff:ffff:ffff:ffff").data()), nullptr);
  EXPECT_NE(t.find6(addr("fd12:3456:789a:1000::").data()), nullptr);
  EXPECT_NE(t.find6(addr("fd12:3456:789a:1fff:ffff:ffff:ffff:ffff").data()), nullptr);
  EXPECT_EQ(t.find6(addr("fd12:3456:789a:2000::").data()), nullptr);
}

TEST(prefix_map, MalformedHeadersNothingChanges) {
  const PrefixMapTable t = outTable();
  Packet p = hex(kEgress[0].before);
  p[3] = static_cast<uint8_t>(p.size() + 1);  // total length beyond the bytes
  Packet before = p;
  EXPECT_FALSE(mapPacket(p.data(), p.size(), false, AddressField::kSource, t).changed());
  EXPECT_EQ(p, before);
  p = hex(kEgress[0].before);
  p[0] = 0x44;  // IHL 4
  before = p;
  EXPECT_FALSE(mapPacket(p.data(), p.size(), false, AddressField::kSource, t).changed());
  EXPECT_EQ(p, before);
  p.resize(19);
  before = p;
  EXPECT_FALSE(mapPacket(p.data(), p.size(), false, AddressField::kSource, t).changed());
  EXPECT_EQ(p, before);
}

// An IPv6 packet whose extension headers do not parse (a hop-by-hop header
// cut short) from a real address: the fixed header's source is still
// mapped, so the real address never leaves the site; nothing else changes.
TEST(prefix_map, Ipv6ExtensionHeadersThatDoNotParseStillMapTheAddress) {
  const PrefixMapTable t = outTable();
  // Version 6, payload length 4, next header 0 (hop-by-hop), hop limit 64,
  // src fd12:3456:789a:1234::5, dst 2001:db8::1, then 4 bytes of a
  // hop-by-hop header that claims 8.
  Packet p =
      hex("60000000 0004 00 40"
          "fd123456789a12340000000000000005"
          "20010db8000000000000000000000001"
          "11000000");
  const MapResult r = mapPacket(p.data(), p.size(), true, AddressField::kSource, t);
  ASSERT_NE(r.outer, nullptr);
  EXPECT_EQ(r.outer->slot, 1u);
  EXPECT_EQ(p, hex("60000000 0004 00 40"
                   "fd998888777762340000000000000005"
                   "20010db8000000000000000000000001"
                   "11000000"));
}

// Ethernet padding behind the IP packet is not part of it.
TEST(prefix_map, PaddingIsLeftAlone) {
  const PrefixMapTable t = outTable();
  Packet p = hex(kEgress[1].before);  // UDP, 36 bytes
  p.resize(p.size() + 10, 0xee);
  mapPacket(p.data(), p.size(), false, AddressField::kSource, t);
  Packet want = hex(kEgress[1].after);
  want.resize(want.size() + 10, 0xee);
  EXPECT_EQ(toHex(p), toHex(want));
}

TEST(prefix_map, OverlappingRangesAreRefused) {
  PrefixMapTable t;
  EXPECT_FALSE(
      t.assign({rule("10.1.0.0", "100.65.0.0", 16, 0), rule("10.1.128.0", "100.66.0.0", 17, 1)}));
  EXPECT_TRUE(t.empty());
  EXPECT_FALSE(t.assign({rule("fd00::", "fd01::", 16, 0), rule("fd00:1::", "fd02::", 32, 1)}));
  // Adjacent ranges and the same range in the other family are fine.
  EXPECT_TRUE(t.assign({rule("10.1.0.0", "100.65.0.0", 16, 0),
                        rule("10.2.0.0", "100.66.0.0", 16, 1), rule("::", "fd00::", 16, 2)}));
  EXPECT_EQ(t.size(), 3u);
}

// 4096 /28s (the YANG's most), looked up at both ends of every range and
// just beyond.
TEST(prefix_map, ManyRangesBinarySearch) {
  std::vector<PrefixRule> rules;
  for (uint32_t i = 0; i < 4096; ++i) {
    const uint32_t from = 0x0a000000u + i * 32;  // 10.0.0.0/28 every 32 addresses
    const uint32_t to = 0x64400000u + i * 16;
    const uint8_t f[4] = {uint8_t(from >> 24), uint8_t(from >> 16), uint8_t(from >> 8),
                          uint8_t(from)};
    const uint8_t m[4] = {uint8_t(to >> 24), uint8_t(to >> 16), uint8_t(to >> 8), uint8_t(to)};
    rules.push_back(PrefixRule::make(false, f, m, 28, static_cast<uint16_t>(4095 - i)));
  }
  PrefixMapTable t;
  ASSERT_TRUE(t.assign(std::move(rules)));
  for (uint32_t i = 0; i < 4096; ++i) {
    for (uint32_t off : {0u, 15u, 16u, 31u}) {
      const uint32_t a = 0x0a000000u + i * 32 + off;
      const uint8_t b[4] = {uint8_t(a >> 24), uint8_t(a >> 16), uint8_t(a >> 8), uint8_t(a)};
      const PrefixRule* r = t.find4(b);
      if (off < 16) {
        ASSERT_NE(r, nullptr) << i << "+" << off;
        EXPECT_EQ(r->slot, 4095 - i);
      } else {
        EXPECT_EQ(r, nullptr) << i << "+" << off;
      }
    }
  }
}

// The per-rule checksum difference: 10.1.0.0 -> 100.65.0.0 changes the
// first word from 0x0a01 to 0x6441: 0x6441 - 0x0a01 = 0x5a40.
TEST(prefix_map, DeltaIsTheDifferenceOfThePrefixWords) {
  EXPECT_EQ(rule("10.1.0.0", "100.65.0.0", 16, 0).delta, 0x5a40);
  EXPECT_EQ(rule("100.65.0.0", "10.1.0.0", 16, 0).delta, static_cast<uint16_t>(~0x5a40));
  EXPECT_EQ(rule("10.1.0.0", "10.1.0.0", 16, 0).delta, 0);
}

}  // namespace
}  // namespace mcgw::proto
