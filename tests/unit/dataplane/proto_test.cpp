// Byte-table tests of the pure codecs: {name, bytes, expected}.
#include <gtest/gtest.h>

#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "dataplane/proto/checksum.hpp"
#include "dataplane/proto/ethernet.hpp"
#include "dataplane/proto/geneve.hpp"
#include "dataplane/proto/icmp.hpp"
#include "dataplane/proto/ipv4.hpp"
#include "dataplane/proto/ipv6.hpp"
#include "dataplane/proto/tcp.hpp"
#include "dataplane/proto/udp.hpp"
#include "dataplane/proto/vxlan.hpp"
#include "tests/support/hex.hpp"

namespace mcgw::proto {
namespace {

using test::hex;

Bytes span(const std::vector<std::byte>& v) {
  return Bytes(v.data(), v.size());
}

// --- Ethernet ---------------------------------------------------------------

struct EthCase {
  const char* name;
  const char* bytes;
  ParseError error;
  uint16_t ether_type;
  uint16_t vlan;
  size_t header_length;
};

TEST(Ethernet, Table) {
  const char* macs = "02 00 00 00 00 01 | 02 00 00 00 00 02";
  EthCase cases[] = {
      {"untagged", "08 00 | 45", ParseError::kOk, kEtherTypeIpv4, 0, 14},
      {"vlan", "81 00 00 64 | 86 dd | 60", ParseError::kOk, kEtherTypeIpv6, 100, 18},
      {"qinq", "88 a8 00 0a | 81 00 00 14 | 08 00", ParseError::kOk, kEtherTypeIpv4, 10, 22},
      {"vlan truncated", "81 00 00", ParseError::kTruncated, 0, 0, 0},
      {"no type", "", ParseError::kTruncated, 0, 0, 0},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    auto b = hex(std::string(macs) + c.bytes);
    EthernetFrame f = parseEthernet(span(b));
    EXPECT_EQ(f.eth.error, c.error);
    if (c.error == ParseError::kOk) {
      EXPECT_EQ(f.ether_type, c.ether_type);
      EXPECT_EQ(f.vlan, c.vlan);
      EXPECT_EQ(f.eth.header_length, c.header_length);
      EXPECT_EQ(f.eth.payload.size(), b.size() - c.header_length);
    }
  }
}

// --- IPv4 -------------------------------------------------------------------

struct Ipv4Case {
  const char* name;
  const char* bytes;
  ParseError error;
  size_t header_length;
  size_t payload;
};

TEST(Ipv4, Table) {
  Ipv4Case cases[] = {
      {"udp, 8 bytes",
       "45 00 00 1c 00 01 40 00 40 11 00 00 0a 01 00 0a 0a 02 00 0a | 11 22 33 44 55 66 77 88",
       ParseError::kOk, 20, 8},
      {"options (IHL 6)",
       "46 00 00 1c 00 01 00 00 40 06 00 00 0a 01 00 0a 0a 02 00 0a 01 01 01 00 | aa bb cc dd",
       ParseError::kOk, 24, 4},
      {"ethernet padding is not payload",
       "45 00 00 18 00 01 00 00 40 11 00 00 0a 01 00 0a 0a 02 00 0a | 01 02 03 04 | 00 00 00 00 00 "
       "00",
       ParseError::kOk, 20, 4},
      {"version 6", "65 00 00 14 00 01 00 00 40 11 00 00 0a 01 00 0a 0a 02 00 0a",
       ParseError::kBadVersion, 0, 0},
      {"IHL 4", "44 00 00 14 00 01 00 00 40 11 00 00 0a 01 00 0a 0a 02 00 0a",
       ParseError::kBadHeaderLength, 0, 0},
      {"IHL beyond the data", "4f 00 00 3c 00 01 00 00 40 11 00 00 0a 01 00 0a 0a 02 00 0a",
       ParseError::kBadHeaderLength, 0, 0},
      {"total length beyond the data",
       "45 00 05 dc 00 01 00 00 40 11 00 00 0a 01 00 0a 0a 02 00 0a", ParseError::kBadTotalLength,
       0, 0},
      {"total length below IHL", "45 00 00 10 00 01 00 00 40 11 00 00 0a 01 00 0a 0a 02 00 0a",
       ParseError::kBadTotalLength, 0, 0},
      {"truncated", "45 00 00 1c 00 01", ParseError::kTruncated, 0, 0},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    auto b = hex(c.bytes);
    auto p = parseIpv4(span(b));
    EXPECT_EQ(p.error, c.error) << toString(p.error);
    if (c.error == ParseError::kOk) {
      EXPECT_EQ(p.header_length, c.header_length);
      EXPECT_EQ(p.payload.size(), c.payload);
    }
  }
}

TEST(Ipv4, FieldsAndFragments) {
  //            tos: DSCP 46 ECN 1           DF, offset 0              src 10.1.0.10
  auto b = hex("45 b9 00 14 12 34 40 00 3f 06 00 00 0a 01 00 0a 0a 02 00 0a");
  auto p = parseIpv4(span(b));
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p.header->dscp(), 46);
  EXPECT_EQ(p.header->ecn(), 1);
  EXPECT_TRUE(p.header->dontFragment());
  EXPECT_FALSE(p.header->isFragment());
  EXPECT_EQ(p.header->ttl, 0x3f);
  EXPECT_EQ(p.header->protocol, kIpProtoTcp);
  // MF set: first fragment; offset 185 (1480 bytes): a later one.
  auto first = hex("45 00 00 14 12 34 20 00 40 06 00 00 0a 01 00 0a 0a 02 00 0a");
  auto later = hex("45 00 00 14 12 34 00 b9 40 06 00 00 0a 01 00 0a 0a 02 00 0a");
  EXPECT_TRUE(parseIpv4(span(first)).header->isFragment());
  EXPECT_EQ(parseIpv4(span(first)).header->fragmentOffset(), 0);
  EXPECT_EQ(parseIpv4(span(later)).header->fragmentOffset(), 185);
}

// --- IPv6 -------------------------------------------------------------------

const char* kV6Addrs =
    "fd 00 00 01 00 00 00 00 00 00 00 00 00 00 00 0a | fd 00 00 02 00 00 00 00 00 00 00 00 00 00 "
    "00 0a";

std::vector<std::byte> v6(const char* next_header, const std::string& payload_hex,
                          const char* tc_flow = "60 00 00 00") {
  auto payload = hex(payload_hex);
  char len[8];
  std::snprintf(len, sizeof len, "%02x %02x", static_cast<unsigned>(payload.size() >> 8),
                static_cast<unsigned>(payload.size() & 0xff));
  return hex(std::string(tc_flow) + len + next_header + " 40 " + kV6Addrs + payload_hex);
}

struct Ipv6Case {
  const char* name;
  std::vector<std::byte> bytes;
  ParseError error;
  uint8_t upper;
  size_t upper_size;
  bool fragment;
  bool first_fragment;
};

TEST(Ipv6, ExtensionHeaderWalk) {
  const std::string udp = "04 d2 10 e1 00 08 00 00";
  const std::string tcp = "04 d2 00 50 00 00 00 01 00 00 00 00 50 02 ff ff 00 00 00 00";
  Ipv6Case cases[] = {
      {"plain udp", v6("11", udp), ParseError::kOk, kIpProtoUdp, 8, false, true},
      {"hop-by-hop, dest opts, tcp",
       v6("00", "3c 00 01 04 00 00 00 00 | 06 00 01 04 00 00 00 00 |" + tcp), ParseError::kOk,
       kIpProtoTcp, 20, false, true},
      {"routing header (len 2 = 24 bytes)",
       v6("2b",
          "06 02 00 00 00 00 00 00 | 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 |" + tcp),
       ParseError::kOk, kIpProtoTcp, 20, false, true},
      {"first fragment", v6("2c", "06 00 00 01 00 00 00 2a |" + tcp), ParseError::kOk, kIpProtoTcp,
       20, true, true},
      {"later fragment: the walk stops, no upper header",
       v6("2c", "06 00 05 c8 00 00 00 2a |" + tcp), ParseError::kOk, kIpProtoTcp, 0, true, false},
      {"later fragment whose data looks like headers",
       v6("2c", "00 00 05 c8 00 00 00 2a | 00 ff 00 00 00 00 00 00"), ParseError::kOk, 0, 0, true,
       false},
      {"atomic fragment (offset 0, M clear) is whole", v6("2c", "06 00 00 00 00 00 00 2a |" + tcp),
       ParseError::kOk, kIpProtoTcp, 20, false, true},
      {"nine destination options headers",
       v6("3c",
          [] {
            std::string s;
            for (int i = 0; i < 9; ++i) {
              s += "3c 00 01 04 00 00 00 00 ";
            }
            return s;
          }()),
       ParseError::kTooManyExtensionHeaders, 0, 0, false, true},
      {"extension header longer than the packet", v6("00", "06 04 01 04 00 00 00 00"),
       ParseError::kTruncated, 0, 0, false, true},
      {"version 4", v6("11", udp, "40 00 00 00"), ParseError::kBadVersion, 0, 0, false, true},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    Ipv6Packet p = parseIpv6(span(c.bytes));
    EXPECT_EQ(p.ip.error, c.error) << toString(p.ip.error);
    if (c.error == ParseError::kOk) {
      EXPECT_EQ(p.upper_protocol, c.upper);
      EXPECT_EQ(p.upper.size(), c.upper_size);
      EXPECT_EQ(p.fragment, c.fragment);
      EXPECT_EQ(p.first_fragment, c.first_fragment);
    }
  }
  // Payload length beyond the data.
  auto b = v6("11", udp);
  b.resize(b.size() - 1);
  EXPECT_EQ(parseIpv6(span(b)).ip.error, ParseError::kBadTotalLength);
}

TEST(Ipv6, TrafficClass) {
  auto b = v6("11", "04 d2 10 e1 00 08 00 00", "6b 90 00 00");  // TC 0xb9: DSCP 46, ECN 1
  auto p = parseIpv6(span(b));
  ASSERT_TRUE(p.ip.ok());
  EXPECT_EQ(p.ip.header->dscp(), 46);
  EXPECT_EQ(p.ip.header->ecn(), 1);
}

// --- UDP, ICMP --------------------------------------------------------------

TEST(Udp, Table) {
  struct {
    const char* name;
    const char* bytes;
    ParseError error;
    size_t payload;
  } cases[] = {
      {"ok", "04 d2 12 b5 00 0c 00 00 | de ad be ef", ParseError::kOk, 4},
      {"trailing bytes are not payload", "04 d2 12 b5 00 09 00 00 | de ad", ParseError::kOk, 1},
      {"length below 8", "04 d2 12 b5 00 07 00 00", ParseError::kBadTotalLength, 0},
      {"length beyond the data", "04 d2 12 b5 00 10 00 00 | de ad", ParseError::kBadTotalLength, 0},
      {"truncated", "04 d2 12", ParseError::kTruncated, 0},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    auto b = hex(c.bytes);
    auto p = parseUdp(span(b));
    EXPECT_EQ(p.error, c.error);
    if (p.ok()) {
      EXPECT_EQ(p.payload.size(), c.payload);
      EXPECT_EQ(p.header->dst_port.get(), kVxlanPort);
    }
  }
}

TEST(Icmp, FragNeededMtu) {
  auto b = hex("03 04 00 00 12 34 05 78 | 45 00");  // a non-zero unused field
  auto p = parseIcmp(span(b));
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p.header->type, kIcmpDestUnreachable);
  EXPECT_EQ(p.header->code, kIcmpFragNeededCode);
  EXPECT_EQ(p.header->mtu4(), 1400u);
  EXPECT_EQ(p.header->mtu6(), 0x12340578u);
  EXPECT_EQ(p.payload.size(), 2u);
  EXPECT_TRUE(isIcmpError(kIcmpDestUnreachable));
  EXPECT_FALSE(isIcmpError(kIcmpEchoRequest));
  EXPECT_TRUE(isIcmp6Error(kIcmp6PacketTooBig));
  EXPECT_FALSE(isIcmp6Error(kIcmp6EchoRequest));
  EXPECT_EQ(parseIcmp(Bytes()).error, ParseError::kTruncated);
}

// --- TCP and its options ----------------------------------------------------

std::vector<std::byte> tcpWithOptions(const std::string& options_hex, int data_offset_words) {
  char off[4];
  std::snprintf(off, sizeof off, "%02x", data_offset_words << 4);
  return hex(std::string("04 d2 00 50 00 00 00 01 00 00 00 00 ") + off + " 02 ff ff 00 00 00 00 " +
             options_hex);
}

struct MssCase {
  const char* name;
  const char* options;
  int data_offset;
  ParseError header_error;
  ParseError option_error;
  int mss;  // -1: none
};

TEST(Tcp, OptionsTable) {
  MssCase cases[] = {
      {"mss only", "02 04 05 b4", 6, ParseError::kOk, ParseError::kOk, 1460},
      {"no options", "", 5, ParseError::kOk, ParseError::kOk, -1},
      {"nop nop sack-permitted ts ws mss",
       "01 01 04 02 08 0a 00 00 00 01 00 00 00 00 03 03 07 02 04 02 18 00 00 00", 11,
       ParseError::kOk, ParseError::kOk, 536},
      {"mss after eol is not seen", "00 00 00 00 02 04 05 b4", 7, ParseError::kOk, ParseError::kOk,
       -1},
      {"length 0", "02 00 05 b4", 6, ParseError::kOk, ParseError::kBadOption, -1},
      {"length 1", "08 01 02 04 05 b4 00 00", 7, ParseError::kOk, ParseError::kBadOption, -1},
      {"overruns the data offset", "01 01 08 0a 00 00", 6, ParseError::kOk, ParseError::kBadOption,
       -1},
      {"mss with length 3", "02 03 05 00", 6, ParseError::kOk, ParseError::kBadOption, -1},
      {"kind without length at the end", "01 01 01 02", 6, ParseError::kOk, ParseError::kBadOption,
       -1},
      {"data offset 4", "", 4, ParseError::kBadHeaderLength, ParseError::kOk, -1},
      {"data offset beyond the segment", "02 04 05 b4", 15, ParseError::kBadHeaderLength,
       ParseError::kOk, -1},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    auto b = tcpWithOptions(c.options, c.data_offset);
    auto t = parseTcp(span(b));
    EXPECT_EQ(t.error, c.header_error);
    if (!t.ok()) {
      continue;
    }
    EXPECT_TRUE(t.header->syn());
    ParseError e = ParseError::kOk;
    auto mss = findMss(tcpOptions(t), &e);
    EXPECT_EQ(e, c.option_error) << toString(e);
    EXPECT_EQ(mss ? mss->value : -1, c.mss);
    if (mss) {
      const auto* opts = reinterpret_cast<const uint8_t*>(tcpOptions(t).data());
      EXPECT_EQ(opts[mss->value_offset] << 8 | opts[mss->value_offset + 1], c.mss);
    }
  }
}

// --- VXLAN, Geneve ----------------------------------------------------------

TEST(Vxlan, Table) {
  auto ok = hex("08 00 00 00 12 34 56 00 | aa");
  auto p = parseVxlan(span(ok));
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p.header->vni(), 0x123456u);
  EXPECT_EQ(p.payload.size(), 1u);
  auto no_i = hex("00 00 00 00 12 34 56 00");
  EXPECT_EQ(parseVxlan(span(no_i)).error, ParseError::kBadFlags);
  EXPECT_EQ(parseVxlan(span(hex("08 00 00"))).error, ParseError::kTruncated);
  VxlanHeader h{};
  h.setVni(0xfedcba);
  // RFC 7348 5: the VNI is the first 24 bits of the second word.
  EXPECT_EQ(h.vni_reserved.b[0], 0xfe);
  EXPECT_EQ(h.vni_reserved.b[1], 0xdc);
  EXPECT_EQ(h.vni_reserved.b[2], 0xba);
  EXPECT_EQ(h.vni_reserved.b[3], 0);
}

struct GeneveCase {
  const char* name;
  const char* bytes;
  ParseError error;
  size_t header_length;
  bool unknown_critical;  // with only class 0x0102 type 0x81 known
};

TEST(Geneve, Table) {
  GeneveCase cases[] = {
      {"no options", "00 00 65 58 00 00 64 00 | aa", ParseError::kOk, 8, false},
      {"one non-critical option (4 bytes data)",
       "02 00 65 58 00 00 64 00 | 01 02 01 01 de ad be ef | aa", ParseError::kOk, 16, false},
      {"unknown critical option", "02 40 65 58 00 00 64 00 | ff ff 80 01 de ad be ef",
       ParseError::kOk, 16, true},
      {"known critical option", "02 40 65 58 00 00 64 00 | 01 02 81 01 de ad be ef",
       ParseError::kOk, 16, false},
      {"critical option after a non-critical one",
       "03 40 65 58 00 00 64 00 | 01 02 01 00 | ff ff 90 01 00 00 00 00", ParseError::kOk, 20,
       true},
      {"option longer than the options area", "01 00 65 58 00 00 64 00 | 01 02 01 02 de ad be ef",
       ParseError::kOk, 12, true},
      {"version 1", "40 00 65 58 00 00 64 00", ParseError::kBadVersion, 0, false},
      {"options beyond the data", "3f 00 65 58 00 00 64 00 | 00 00", ParseError::kBadHeaderLength,
       0, false},
  };
  auto known = [](uint16_t cls, uint8_t type) { return cls == 0x0102 && type == 0x81; };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    auto b = hex(c.bytes);
    auto g = parseGeneve(span(b));
    EXPECT_EQ(g.error, c.error) << toString(g.error);
    if (!g.ok()) {
      continue;
    }
    EXPECT_EQ(g.header_length, c.header_length);
    EXPECT_EQ(g.header->vni(), 100u);
    EXPECT_EQ(g.header->protocol.get(), kGeneveProtoEthernet);
    EXPECT_EQ(hasUnknownCriticalOption(g, known), c.unknown_critical);
  }
}

// --- checksums --------------------------------------------------------------

TEST(Checksum, Rfc1071Example) {
  // RFC 1071 §3: the words 0001 f203 f4f5 f6f7 sum to ddf2.
  auto b = hex("00 01 f2 03 f4 f5 f6 f7");
  EXPECT_EQ(checksumFold(checksumAdd(span(b))), 0xddf2);
  EXPECT_EQ(internetChecksum(span(b)), 0x220d);
  // An odd length pads with a zero byte.
  auto odd = hex("00 01 f2");
  EXPECT_EQ(checksumFold(checksumAdd(span(odd))), 0xf201);
}

TEST(Checksum, Ipv4HeaderVerifies) {
  // A header with its checksum (b861) in place sums to ffff.
  auto h = hex("45 00 00 73 00 00 40 00 40 11 b8 61 c0 a8 00 01 c0 a8 00 c7");
  EXPECT_EQ(internetChecksum(span(h)), 0);
  h[10] = h[11] = std::byte{0};
  EXPECT_EQ(internetChecksum(span(h)), 0xb861);
}

TEST(Checksum, UdpOverIpv6WithPseudoHeader) {
  // fd00:1::a → fd00:2::a, UDP 1234 → 4321 carrying de ad be ef: scapy
  // 2.5 (IPv6()/UDP()/Raw()) puts 526d in the checksum field.
  auto b = v6("11", "04 d2 10 e1 00 0c 00 00 | de ad be ef");
  auto p = parseIpv6(span(b));
  ASSERT_TRUE(p.ip.ok());
  uint32_t pseudo = pseudoHeaderV6(p.ip.header->src, p.ip.header->dst, kIpProtoUdp,
                                   static_cast<uint32_t>(p.upper.size()));
  EXPECT_EQ(internetChecksum(p.upper, pseudo), 0x526d);
  // Stored, the segment then verifies to zero.
  auto* udp = reinterpret_cast<UdpHeader*>(b.data() + 40);
  udp->checksum.set(0x526d);
  EXPECT_EQ(internetChecksum(p.upper, pseudo), 0);
}

TEST(Checksum, IncrementalUpdateMatchesRecompute) {
  auto h = hex("45 00 00 73 00 00 40 00 40 11 b8 61 c0 a8 00 01 c0 a8 00 c7");
  // Each edit applies to the header as the ones before left it; `sum` is the
  // header checksum recomputed in full after it (RFC 1071, by an independent
  // Python sum).
  struct {
    size_t word;  // byte offset of the 16-bit word that changes
    uint16_t value;
    uint16_t sum;
  } edits[] = {{0, 0x45bb, 0xb7a6},  {8, 0x3f11, 0xb8a6}, {2, 0x05dc, 0xb33d}, {12, 0xffff, 0x73e6},
               {12, 0x0000, 0x73e6}, {6, 0x0000, 0xb3e6}, {16, 0x3f57, 0x3538}};
  for (const auto& e : edits) {
    SCOPED_TRACE(e.word);
    auto* p = reinterpret_cast<uint8_t*>(h.data());
    uint16_t old_value = static_cast<uint16_t>(p[e.word] << 8 | p[e.word + 1]);
    uint16_t old_sum = static_cast<uint16_t>(p[10] << 8 | p[11]);
    p[e.word] = static_cast<uint8_t>(e.value >> 8);
    p[e.word + 1] = static_cast<uint8_t>(e.value);
    uint16_t updated = checksumUpdate16(old_sum, old_value, e.value);
    EXPECT_EQ(updated, e.sum) << std::hex << updated;
    p[10] = static_cast<uint8_t>(updated >> 8);
    p[11] = static_cast<uint8_t>(updated);
  }
}

TEST(ParseError, NamesComeFromOneList) {
  EXPECT_EQ(toString(ParseError::kOk), "ok");
  EXPECT_EQ(toString(ParseError::kBadOption), "bad option");
  EXPECT_EQ(toString(ParseError::kTooManyExtensionHeaders), "too many extension headers");
}

}  // namespace
}  // namespace mcgw::proto

#include "dataplane/proto/ecn.hpp"

namespace mcgw::proto {
namespace {

TEST(Ecn, Rfc6040DecapsulationTable) {
  constexpr int kDrop = -1;
  const uint8_t order[] = {kEcnNotEct, kEcnEct0, kEcnEct1, kEcnCe};
  // Rows: inner; columns: outer, in the order Not-ECT, ECT(0), ECT(1), CE.
  const int table[4][4] = {
      {kEcnNotEct, kEcnNotEct, kEcnNotEct, kDrop},
      {kEcnEct0, kEcnEct0, kEcnEct1, kEcnCe},
      {kEcnEct1, kEcnEct1, kEcnEct1, kEcnCe},
      {kEcnCe, kEcnCe, kEcnCe, kEcnCe},
  };
  for (int i = 0; i < 4; ++i) {
    for (int o = 0; o < 4; ++o) {
      SCOPED_TRACE("inner " + std::to_string(order[i]) + " outer " + std::to_string(order[o]));
      auto r = ecnOnDecap(order[i], order[o]);
      EXPECT_EQ(r ? *r : kDrop, table[i][o]);
    }
  }
}

TEST(Ecn, EncapsulationCopies) {
  for (uint8_t e : {kEcnNotEct, kEcnEct0, kEcnEct1, kEcnCe}) {
    EXPECT_EQ(ecnOnEncap(static_cast<uint8_t>(0xb8 | e)), e);
  }
}

}  // namespace
}  // namespace mcgw::proto

#include "dataplane/proto/tunnel.hpp"

namespace mcgw::proto {
namespace {

// An inner Ethernet + IPv4 + UDP frame with the given TOS.
std::vector<std::byte> innerFrame(uint8_t tos) {
  char t[4];
  std::snprintf(t, sizeof t, "%02x", tos);
  return hex(std::string("02 00 00 00 01 01 02 00 00 00 02 02 08 00 | 45 ") + t +
             " 00 20 00 01 00 00 40 11 00 00 0a 01 00 0a 0a 02 00 0a | 30 39 00 35 00 0c 00 00 "
             "de ad be ef");
}

TunnelHeaderTemplate v4Template() {
  TunnelHeaderTemplate t;
  const uint8_t smac[6] = {0x02, 0, 0, 0, 0xa0, 0x01}, dmac[6] = {0x02, 0, 0, 0, 0xb0, 0x01};
  std::memcpy(t.src_mac, smac, 6);
  std::memcpy(t.dst_mac, dmac, 6);
  const uint8_t l[4] = {198, 51, 100, 1}, r[4] = {198, 51, 100, 2};
  std::memcpy(t.local, l, 4);
  std::memcpy(t.remote, r, 4);
  t.ttl = 64;
  return t;
}

TEST(Tunnel, VxlanOverIpv4IsByteExact) {
  auto inner = innerFrame(0xbb);  // DSCP 46, ECN CE
  std::vector<std::byte> out(tunnelOverhead(false, Encapsulation::kVxlan));
  ASSERT_EQ(encodeTunnelHeaders(MutableBytes(out), v4Template(), 1001, span(inner), 0x1234), 50u);
  // 14 + 20 + 8 + 8 bytes of headers; inner frame 46 bytes: IP total 82, UDP 62.
  // Header checksum e575 as scapy 2.5 computes it; source port 49152 + (hash
  // folded to 14 bits) = 0xc000 + 0x1234 = 0xd234.
  auto expected =
      hex("02 00 00 00 b0 01 02 00 00 00 a0 01 08 00 |"
          "45 bb 00 52 00 00 40 00 40 11 e5 75 c6 33 64 01 c6 33 64 02 |"
          "d2 34 12 b5 00 3e 00 00 | 08 00 00 00 00 03 e9 00");
  EXPECT_EQ(out, expected);
}

TEST(Tunnel, Ipv4HeaderChecksumAndFields) {
  auto inner = innerFrame(0x2a);  // DSCP 10, ECN ECT(0)
  std::vector<std::byte> pkt(50);
  ASSERT_EQ(encodeTunnelHeaders(MutableBytes(pkt), v4Template(), 7, span(inner), 99), 50u);
  pkt.insert(pkt.end(), inner.begin(), inner.end());
  EthernetFrame f = parseEthernet(span(pkt));
  ASSERT_EQ(f.ether_type, kEtherTypeIpv4);
  auto ip = parseIpv4(f.eth.payload);
  ASSERT_TRUE(ip.ok()) << toString(ip.error);
  EXPECT_EQ(internetChecksum(Bytes(f.eth.payload.data(), 20)), 0) << "header checksum";
  EXPECT_TRUE(ip.header->dontFragment());
  EXPECT_EQ(ip.header->dscp(), 10);
  EXPECT_EQ(ip.header->ecn(), kEcnEct0);
  auto udp = parseUdp(ip.payload);
  ASSERT_TRUE(udp.ok());
  auto vx = parseVxlan(udp.payload);
  ASSERT_TRUE(vx.ok());
  EXPECT_EQ(vx.header->vni(), 7u);
  EXPECT_EQ(vx.payload.size(), inner.size());
}

TEST(Tunnel, GeneveOverIpv6CarriesAValidUdpChecksum) {
  TunnelHeaderTemplate t = v4Template();
  t.ipv6 = true;
  t.encapsulation = Encapsulation::kGeneve;
  t.ttl = 32;
  auto l = hex("20 01 0d b8 00 00 00 01 00 00 00 00 00 00 00 01");
  auto r = hex("20 01 0d b8 00 00 00 01 00 00 00 00 00 00 00 02");
  std::memcpy(t.local, l.data(), 16);
  std::memcpy(t.remote, r.data(), 16);
  auto inner = innerFrame(0x01);  // ECT(1)
  std::vector<std::byte> pkt(tunnelOverhead(true, Encapsulation::kGeneve));
  ASSERT_EQ(encodeTunnelHeaders(MutableBytes(pkt), t, 0xabcdef, span(inner), 5), 70u);
  pkt.insert(pkt.end(), inner.begin(), inner.end());
  EthernetFrame f = parseEthernet(span(pkt));
  ASSERT_EQ(f.ether_type, kEtherTypeIpv6);
  Ipv6Packet ip = parseIpv6(f.eth.payload);
  ASSERT_TRUE(ip.ip.ok());
  EXPECT_EQ(ip.ip.header->hop_limit, 32);
  EXPECT_EQ(ip.ip.header->ecn(), kEcnEct1);
  ASSERT_EQ(ip.upper_protocol, kIpProtoUdp);
  uint32_t pseudo = pseudoHeaderV6(ip.ip.header->src, ip.ip.header->dst, kIpProtoUdp,
                                   static_cast<uint32_t>(ip.upper.size()));
  auto udp = parseUdp(ip.upper);
  ASSERT_TRUE(udp.ok());
  // scapy 2.5 gives this packet (flow label 5, source port 0xc005) 55a8.
  EXPECT_EQ(udp.header->checksum.get(), 0x55a8);
  EXPECT_EQ(internetChecksum(ip.upper, pseudo), 0) << "UDP checksum over IPv6";
  EXPECT_EQ(udp.header->dst_port.get(), kGenevePort);
  auto g = parseGeneve(udp.payload);
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g.header->vni(), 0xabcdefu);
  EXPECT_EQ(g.header->protocol.get(), kGeneveProtoEthernet);
  EXPECT_EQ(g.payload.size(), inner.size());
}

TEST(Tunnel, RefusesASmallBuffer) {
  auto inner = innerFrame(0);
  std::vector<std::byte> small(49);
  EXPECT_EQ(encodeTunnelHeaders(MutableBytes(small), v4Template(), 1, span(inner), 0), 0u);
}

TEST(Tunnel, SourcePortIsInTheDynamicRange) {
  // RFC 7348 5: 49152-65535; the hash's halves folded into 14 bits.
  EXPECT_EQ(tunnelSourcePort(0), 49152);
  EXPECT_EQ(tunnelSourcePort(0x3fff), 65535);
  EXPECT_EQ(tunnelSourcePort(0x4000), 49152);
  EXPECT_EQ(tunnelSourcePort(0x00010000), 49153);
  EXPECT_EQ(tunnelSourcePort(0xffffffff), 49152);
}

TEST(Tunnel, SourcePortSpreadsAndStaysInRange) {
  std::set<uint16_t> ports;
  for (uint32_t h = 0; h < 1000; ++h) {
    uint16_t p = tunnelSourcePort(h * 2654435761u);
    EXPECT_GE(p, 49152);
    ports.insert(p);
  }
  EXPECT_GT(ports.size(), 900u);
}

}  // namespace
}  // namespace mcgw::proto
