// The classification keys of hand-built packets, byte for byte (fillKey4,
// fillKey6), the rule checks and the plain reference classifier.  No EAL.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "dataplane/policy/acl.hpp"
#include "tests/support/hex.hpp"

namespace mcgw::policy {
namespace {

using test::hex;

struct KeyCase {
  const char* name;
  const char* packet;  // the IP packet
  int len;             // -1: the packet's size
  bool ok;
  const char* key;  // the whole key, every byte
};

template <typename Key>
std::vector<uint8_t> keyBytes(const Key& k) {
  std::vector<uint8_t> v(sizeof(k));
  std::memcpy(v.data(), &k, sizeof(k));
  return v;
}

std::string hexText(const std::vector<uint8_t>& v) {
  std::string s;
  char b[4];
  for (uint8_t x : v) {
    std::snprintf(b, sizeof(b), "%02x ", x);
    s += b;
  }
  return s;
}

// IPv4: TOS b8 (DSCP 46, ECN 0), 10.0.0.1 -> 10.0.0.2.
#define V4(tos, total, frag, proto) \
  "45 " tos " " total " | 00 01 " frag " | 40 " proto " 00 00 | 0a 00 00 01 | 0a 00 00 02 | "
#define ADDRS4 "0a 00 00 01 | 0a 00 00 02"

TEST(FillKey4, Table) {
  const KeyCase cases[] = {
      {"tcp, DSCP 46",
       V4("b8", "00 28", "40 00", "06") "04 d2 01 bb 00 00 00 01 00 00 00 00 "
                                        "50 02 ff ff 00 00 00 00",
       -1, true, "06 00 00 00 | " ADDRS4 " | 04 d2 01 bb | 2e 01 00 00"},
      {"udp, DSCP 0", V4("00", "00 1c", "00 00", "11") "00 35 c3 50 00 08 00 00", -1, true,
       "11 00 00 00 | " ADDRS4 " | 00 35 c3 50 | 00 01 00 00"},
      {"icmp echo: no ports", V4("00", "00 1c", "00 00", "01") "08 00 f7 ff 00 00 00 00", -1, true,
       "01 00 00 00 | " ADDRS4 " | 00 00 00 00 | 00 00 00 00"},
      {"sctp", V4("20", "00 20", "00 00", "84") "0b b8 0f a0 00 00 00 00 00 00 00 00", -1, true,
       "84 00 00 00 | " ADDRS4 " | 0b b8 0f a0 | 08 01 00 00"},
      {"gre: no ports", V4("00", "00 18", "00 00", "2f") "00 00 08 00", -1, true,
       "2f 00 00 00 | " ADDRS4 " | 00 00 00 00 | 00 00 00 00"},
      {"first fragment (MF, offset 0): ports",
       V4("00", "00 1c", "20 00", "11") "00 35 c3 50 00 08 00 00", -1, true,
       "11 00 00 00 | " ADDRS4 " | 00 35 c3 50 | 00 01 00 00"},
      {"non-first fragment (MF, offset 185): no ports",
       V4("00", "00 1c", "20 b9", "11") "00 35 c3 50 00 08 00 00", -1, true,
       "11 00 00 00 | " ADDRS4 " | 00 00 00 00 | 00 00 00 00"},
      {"last fragment (offset 1): no ports",
       V4("00", "00 1c", "00 01", "06") "00 35 c3 50 00 08 00 00", -1, true,
       "06 00 00 00 | " ADDRS4 " | 00 00 00 00 | 00 00 00 00"},
      {"offset bits in the high byte: no ports",
       V4("00", "00 1c", "01 00", "06") "00 35 c3 50 00 08 00 00", -1, true,
       "06 00 00 00 | " ADDRS4 " | 00 00 00 00 | 00 00 00 00"},
      {"DF and reserved flag are not fragments",
       V4("00", "00 1c", "c0 00", "11") "00 35 c3 50 00 08 00 00", -1, true,
       "11 00 00 00 | " ADDRS4 " | 00 35 c3 50 | 00 01 00 00"},
      {"L4 truncated to 3 bytes: no ports", V4("00", "00 17", "00 00", "06") "00 35 c3", -1, true,
       "06 00 00 00 | " ADDRS4 " | 00 00 00 00 | 00 00 00 00"},
      {"exactly the 4 port bytes: ports", V4("00", "00 18", "00 00", "06") "00 35 c3 50", -1, true,
       "06 00 00 00 | " ADDRS4 " | 00 35 c3 50 | 00 01 00 00"},
      {"bytes past len are not read", V4("00", "00 14", "00 00", "06") "00 35 c3 50", 20, true,
       "06 00 00 00 | " ADDRS4 " | 00 00 00 00 | 00 00 00 00"},
      {"options (IHL 6): ports after them",
       "46 00 00 20 | 00 01 00 00 | 40 11 00 00 | 0a 00 00 01 | 0a 00 00 02 | 01 01 01 00 | "
       "00 35 c3 50 00 08 00 00",
       -1, true, "11 00 00 00 | " ADDRS4 " | 00 35 c3 50 | 00 01 00 00"},
      {"TOS ff: DSCP 63 (ECN ignored)", V4("ff", "00 14", "00 00", "01"), -1, true,
       "01 00 00 00 | " ADDRS4 " | 00 00 00 00 | 3f 00 00 00"},
      {"TOS 03: DSCP 0", V4("03", "00 14", "00 00", "01"), -1, true,
       "01 00 00 00 | " ADDRS4 " | 00 00 00 00 | 00 00 00 00"},
      {"shorter than 20 bytes", V4("00", "00 14", "00 00", "06"), 19, false,
       "00 00 00 00 | 00 00 00 00 | 00 00 00 00 | 00 00 00 00 | 00 00 00 00"},
      {"IHL beyond len", "4f 00 00 14 | 00 01 00 00 | 40 06 00 00 | 0a 00 00 01 | 0a 00 00 02", -1,
       false, "00 00 00 00 | 00 00 00 00 | 00 00 00 00 | 00 00 00 00 | 00 00 00 00"},
      {"IHL below 5", "44 00 00 14 | 00 01 00 00 | 40 06 00 00 | 0a 00 00 01 | 0a 00 00 02", -1,
       false, "00 00 00 00 | 00 00 00 00 | 00 00 00 00 | 00 00 00 00 | 00 00 00 00"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const auto packet = hex<uint8_t>(c.packet);
    Key4 key;
    std::memset(&key, 0xa5, sizeof(key));  // every byte must be written
    const size_t len = c.len < 0 ? packet.size() : static_cast<size_t>(c.len);
    EXPECT_EQ(fillKey4(packet.data(), len, &key), c.ok);
    EXPECT_EQ(hexText(keyBytes(key)), hexText(hex<uint8_t>(c.key)));
  }
}

// IPv6: traffic class b8 (DSCP 46), 2001:db8::1 -> 2001:db8::2.
#define V6(tc_hi, tc_lo, plen, next)             \
  "6" tc_hi " " tc_lo "0 00 00 | " plen " " next \
  " 40 | 20 01 0d b8 00 00 00 00 00 00 00 00 "   \
  "00 00 00 01 | 20 01 0d b8 00 00 00 00 00 00 00 00 00 00 00 02 | "
#define ADDRS6                                         \
  "20 01 0d b8 00 00 00 00 00 00 00 00 00 00 00 01 | " \
  "20 01 0d b8 00 00 00 00 00 00 00 00 00 00 00 02"

TEST(FillKey6, Table) {
  const KeyCase cases[] = {
      {"tcp, DSCP 46",
       V6("b", "8", "00 14", "06") "04 d2 01 bb 00 00 00 01 00 00 00 00 "
                                   "50 02 ff ff 00 00 00 00",
       -1, true, "06 00 00 00 | " ADDRS6 " | 04 d2 01 bb | 2e 01 00 00"},
      {"udp, DSCP 0 (ECN 3)", V6("0", "3", "00 08", "11") "00 35 c3 50 00 08 00 00", -1, true,
       "11 00 00 00 | " ADDRS6 " | 00 35 c3 50 | 00 01 00 00"},
      {"DSCP 63", V6("f", "c", "00 08", "11") "00 35 c3 50 00 08 00 00", -1, true,
       "11 00 00 00 | " ADDRS6 " | 00 35 c3 50 | 3f 01 00 00"},
      {"icmpv6: no ports", V6("0", "0", "00 08", "3a") "80 00 00 00 00 01 00 01", -1, true,
       "3a 00 00 00 | " ADDRS6 " | 00 00 00 00 | 00 00 00 00"},
      {"sctp", V6("0", "0", "00 0c", "84") "0b b8 0f a0 00 00 00 00 00 00 00 00", -1, true,
       "84 00 00 00 | " ADDRS6 " | 0b b8 0f a0 | 00 01 00 00"},
      {"hop-by-hop, then udp: walked",
       V6("0", "0", "00 10", "00") "11 00 01 04 00 00 00 00 | 00 35 c3 50 00 08 00 00", -1, true,
       "11 00 00 00 | " ADDRS6 " | 00 35 c3 50 | 00 01 00 00"},
      {"destination options (16 bytes), routing, then tcp",
       V6("0", "0", "00 1c", "3c") "2b 01 01 0c 00 00 00 00 00 00 00 00 00 00 00 00 | "
                                   "06 00 00 00 00 00 00 00 | 00 16 c0 00",
       -1, true, "06 00 00 00 | " ADDRS6 " | 00 16 c0 00 | 00 01 00 00"},
      {"first fragment (offset 0, M): ports",
       V6("0", "0", "00 10", "2c") "11 00 00 01 12 34 56 78 | 00 35 c3 50 00 08 00 00", -1, true,
       "11 00 00 00 | " ADDRS6 " | 00 35 c3 50 | 00 01 00 00"},
      {"atomic fragment (offset 0, no M): ports",
       V6("0", "0", "00 10", "2c") "06 00 00 00 12 34 56 78 | 00 35 c3 50 00 08 00 00", -1, true,
       "06 00 00 00 | " ADDRS6 " | 00 35 c3 50 | 00 01 00 00"},
      {"non-first fragment (offset 23, M): protocol of the fragment header, no ports",
       V6("0", "0", "00 10", "2c") "11 00 00 b9 12 34 56 78 | 00 35 c3 50 00 08 00 00", -1, true,
       "11 00 00 00 | " ADDRS6 " | 00 00 00 00 | 00 00 00 00"},
      {"last fragment (offset 1, no M): no ports",
       V6("0", "0", "00 10", "2c") "06 00 00 08 12 34 56 78 | 00 35 c3 50 00 08 00 00", -1, true,
       "06 00 00 00 | " ADDRS6 " | 00 00 00 00 | 00 00 00 00"},
      {"esp: no ports", V6("0", "0", "00 08", "32") "00 00 10 00 00 00 00 01", -1, true,
       "32 00 00 00 | " ADDRS6 " | 00 00 00 00 | 00 00 00 00"},
      {"no next header", V6("0", "0", "00 00", "3b"), -1, true,
       "3b 00 00 00 | " ADDRS6 " | 00 00 00 00 | 00 00 00 00"},
      {"tcp truncated to 3 bytes: no ports", V6("0", "0", "00 03", "06") "00 35 c3", -1, true,
       "06 00 00 00 | " ADDRS6 " | 00 00 00 00 | 00 00 00 00"},
      {"udp after hop-by-hop, truncated: no ports",
       V6("0", "0", "00 0a", "00") "11 00 01 04 00 00 00 00 | 00 35", -1, true,
       "11 00 00 00 | " ADDRS6 " | 00 00 00 00 | 00 00 00 00"},
      {"extension header longer than the packet: malformed, stops there",
       V6("0", "0", "00 0c", "3c") "06 01 01 04 00 00 00 00 | 00 16 c0 00", -1, false,
       "3c 00 00 00 | " ADDRS6 " | 00 00 00 00 | 00 00 00 00"},
      {"extension header cut below 8 bytes: malformed", V6("0", "0", "00 04", "00") "11 00 01 04",
       -1, false, "00 00 00 00 | " ADDRS6 " | 00 00 00 00 | 00 00 00 00"},
      {"9 extension headers: malformed at the 9th",
       V6("0", "0", "00 4c", "3c") "3c 00 01 04 00 00 00 00 | 3c 00 01 04 00 00 00 00 | "
                                   "3c 00 01 04 00 00 00 00 | 3c 00 01 04 00 00 00 00 | "
                                   "3c 00 01 04 00 00 00 00 | 3c 00 01 04 00 00 00 00 | "
                                   "3c 00 01 04 00 00 00 00 | 3c 00 01 04 00 00 00 00 | "
                                   "11 00 01 04 00 00 00 00 | 00 35 c3 50",
       -1, false, "3c 00 00 00 | " ADDRS6 " | 00 00 00 00 | 00 00 00 00"},
      {"8 extension headers: walked",
       V6("0", "0", "00 44", "3c") "3c 00 01 04 00 00 00 00 | 3c 00 01 04 00 00 00 00 | "
                                   "3c 00 01 04 00 00 00 00 | 3c 00 01 04 00 00 00 00 | "
                                   "3c 00 01 04 00 00 00 00 | 3c 00 01 04 00 00 00 00 | "
                                   "3c 00 01 04 00 00 00 00 | 11 00 01 04 00 00 00 00 | "
                                   "00 35 c3 50",
       -1, true, "11 00 00 00 | " ADDRS6 " | 00 35 c3 50 | 00 01 00 00"},
      {"shorter than 40 bytes", V6("0", "0", "00 00", "06"), 39, false,
       "00 00 00 00 | 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 | "
       "00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 | 00 00 00 00 | 00 00 00 00"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const auto packet = hex<uint8_t>(c.packet);
    Key6 key;
    std::memset(&key, 0xa5, sizeof(key));
    const size_t len = c.len < 0 ? packet.size() : static_cast<size_t>(c.len);
    EXPECT_EQ(fillKey6(packet.data(), len, &key), c.ok);
    EXPECT_EQ(hexText(keyBytes(key)), hexText(hex<uint8_t>(c.key)));
  }
}

// ---------------------------------------------------------------- rules

Prefix p4(uint8_t a, uint8_t b, uint8_t c, uint8_t d, uint8_t len) {
  Prefix p;
  p.address = {a, b, c, d};
  p.length = len;
  return p;
}

Key4 key4(const char* packet) {
  const auto b = hex<uint8_t>(packet);
  Key4 k;
  EXPECT_TRUE(fillKey4(b.data(), b.size(), &k));
  return k;
}

TEST(CheckRule, RefusesWhatCannotMatch) {
  Rule ok;
  EXPECT_EQ(checkRule(ok), "");
  Rule r = ok;
  r.source.length = 33;
  EXPECT_EQ(checkRule(r), "prefix length 33 is beyond /32");
  r.v6 = true;
  EXPECT_EQ(checkRule(r), "");
  r.destination.length = 129;
  EXPECT_EQ(checkRule(r), "prefix length 129 is beyond /128");
  r = ok;
  r.destination_ports = {90, 80};
  EXPECT_EQ(checkRule(r), "port range 90-80 is empty (lo > hi)");
  r = ok;
  r.destination_ports = {80, 80};
  r.protocol = 1;
  EXPECT_EQ(checkRule(r), "ports need protocol tcp, udp, sctp or any, not 1");
  for (uint8_t p : {6, 17, 132}) {
    r.protocol = p;
    EXPECT_EQ(checkRule(r), "");
  }
  r.protocol.reset();
  EXPECT_EQ(checkRule(r), "");
  r = ok;
  r.dscp = 64;
  EXPECT_EQ(checkRule(r), "DSCP 64 is above 63");
  r.dscp = 63;
  EXPECT_EQ(checkRule(r), "");
  r = ok;
  r.id = kMaxId;
  EXPECT_EQ(checkRule(r), "");
  r.id = kMaxId + 1;
  EXPECT_EQ(checkRule(r), "rule id 536870911 is above 536870910");
}

TEST(ReferenceClassify, FirstMatchPrefixesPortsDscp) {
  // 10.1.2.3:1234 -> 10.200.0.9:443, TCP, DSCP 10.
  const Key4 tcp = key4(
      "45 28 00 28 00 01 00 00 40 06 00 00 0a 01 02 03 0a c8 00 09 04 d2 01 bb 00 00 00 00 00 00 "
      "00 00 50 02 ff ff 00 00 00 00");
  // A later fragment of the same flow: no ports.
  const Key4 frag =
      key4("45 28 00 1c 00 01 00 10 40 06 00 00 0a 01 02 03 0a c8 00 09 04 d2 01 bb 00 00 00 00");
  std::vector<Rule> rules;
  EXPECT_EQ(referenceClassify4(rules, tcp), kNoMatch);
  Rule any;  // matches everything of IPv4
  any.id = 50;
  rules.push_back(any);
  EXPECT_EQ(referenceClassify4(rules, tcp), 50u);
  Rule v6 = any;  // another family never matches
  v6.v6 = true;
  v6.id = 1;
  rules.push_back(v6);
  EXPECT_EQ(referenceClassify4(rules, tcp), 50u);
  Rule src;  // 10.1.2.0/23 has 10.1.2.3; 10.1.0.0/23 does not
  src.source = p4(10, 1, 2, 0, 23);
  src.id = 40;
  rules.push_back(src);
  EXPECT_EQ(referenceClassify4(rules, tcp), 40u);
  src.source = p4(10, 1, 0, 0, 23);
  src.id = 30;
  rules.push_back(src);
  EXPECT_EQ(referenceClassify4(rules, tcp), 40u);
  Rule host_bits;  // 10.200.0.255/24: host bits ignored
  host_bits.destination = p4(10, 200, 0, 255, 24);
  host_bits.id = 35;
  rules.push_back(host_bits);
  EXPECT_EQ(referenceClassify4(rules, tcp), 35u);
  Rule ports;  // 443 exactly; the fragment has no ports
  ports.protocol = 6;
  ports.destination_ports = {443, 443};
  ports.id = 20;
  rules.push_back(ports);
  EXPECT_EQ(referenceClassify4(rules, tcp), 20u);
  EXPECT_EQ(referenceClassify4(rules, frag), 35u);
  Rule zero_ports;  // 0..1023 would match the fragment's zero ports: it must not
  zero_ports.source_ports = {0, 1023};
  zero_ports.id = 15;
  rules.push_back(zero_ports);
  EXPECT_EQ(referenceClassify4(rules, tcp), 20u);
  EXPECT_EQ(referenceClassify4(rules, frag), 35u);
  Rule dscp;
  dscp.dscp = 10;
  dscp.id = 10;
  rules.push_back(dscp);
  EXPECT_EQ(referenceClassify4(rules, tcp), 10u);
  dscp.dscp = 11;
  dscp.id = 5;
  rules.push_back(dscp);
  EXPECT_EQ(referenceClassify4(rules, tcp), 10u);
  Rule udp;
  udp.protocol = 17;
  udp.id = 0;
  rules.push_back(udp);
  EXPECT_EQ(referenceClassify4(rules, tcp), 10u);
}

}  // namespace
}  // namespace mcgw::policy
