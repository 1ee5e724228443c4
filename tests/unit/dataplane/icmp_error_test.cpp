// Byte-level tests of the ICMP error codec (dataplane/proto/icmp_error.hpp).  Checksums are checked
// by summing the whole header / message again (a correct one sums to 0xffff).
#include "dataplane/proto/icmp_error.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "dataplane/proto/checksum.hpp"
#include "dataplane/proto/icmp.hpp"
#include "dataplane/proto/ipv4.hpp"
#include "dataplane/proto/ipv6.hpp"
#include "tests/support/ipv4_packet.hpp"

namespace mcgw::proto {
namespace {

using namespace test_packets;

uint32_t be32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) << 24 | static_cast<uint32_t>(p[1]) << 16 |
         static_cast<uint32_t>(p[2]) << 8 | p[3];
}

struct V6 {
  uint8_t src[16] = {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
  uint8_t dst[16] = {0x20, 0x01, 0x0d, 0xb8, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
  uint8_t hop_limit = 63;
  Packet ext;  // extension headers, the first one's type in next_header
  uint8_t next_header = kIpProtoUdp;
};

Packet ipv6(const V6& v, size_t total) {
  Packet p(total);
  p[0] = 0x60;
  const size_t payload = total - 40;
  p[4] = static_cast<uint8_t>(payload >> 8);
  p[5] = static_cast<uint8_t>(payload);
  p[6] = v.next_header;
  p[7] = v.hop_limit;
  std::memcpy(&p[8], v.src, 16);
  std::memcpy(&p[24], v.dst, 16);
  for (size_t i = 40; i < total; ++i) {
    p[i] = static_cast<uint8_t>(i * 5 + 1);
  }
  std::copy(v.ext.begin(), v.ext.end(), p.begin() + 40);
  return p;
}

constexpr uint8_t kSource4[4] = {192, 0, 2, 1};
constexpr uint8_t kSource6[16] = {0x20, 0x01, 0x0d, 0xb8, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 9};

// Checks the IPv4 error's headers and checksums; returns the quote.
Packet checkIpv4Error(const Packet& out, size_t n, const Packet& offending) {
  EXPECT_EQ(out[0], 0x45);
  EXPECT_EQ(be16(&out[2]), n);
  EXPECT_EQ(out[8], 64);
  EXPECT_EQ(out[9], kIpProtoIcmp);
  EXPECT_EQ(std::memcmp(&out[12], kSource4, 4), 0);
  EXPECT_EQ(std::memcmp(&out[16], &offending[12], 4), 0);  // to the offending source
  EXPECT_TRUE(ipv4HeaderChecksumOk(out.data()));
  EXPECT_EQ(internetChecksum(Bytes(reinterpret_cast<const std::byte*>(&out[20]), n - 20)), 0);
  return Packet(out.begin() + 28, out.begin() + static_cast<long>(n));
}

Packet checkIpv6Error(const Packet& out, size_t n, const Packet& offending) {
  EXPECT_EQ(out[0], 0x60);
  EXPECT_EQ(be16(&out[4]), n - 40);
  EXPECT_EQ(out[6], kIpProtoIpv6Icmp);
  EXPECT_EQ(out[7], 64);
  EXPECT_EQ(std::memcmp(&out[8], kSource6, 16), 0);
  EXPECT_EQ(std::memcmp(&out[24], &offending[8], 16), 0);
  const uint32_t pseudo =
      pseudoHeaderV6(&out[8], &out[24], kIpProtoIpv6Icmp, static_cast<uint32_t>(n - 40));
  EXPECT_EQ(internetChecksum(Bytes(reinterpret_cast<const std::byte*>(&out[40]), n - 40), pseudo),
            0);
  return Packet(out.begin() + 48, out.begin() + static_cast<long>(n));
}

// --- ICMP errors ------------------------------------------------------------

TEST(IcmpError, FragNeededIpv4QuotesTo576) {
  V4 v;
  v.frag_off = 0x4000;  // DF
  const Packet p = ipv4(v, 1500);
  Packet out(2048, 0xee);
  const size_t n =
      buildIcmpError(mspan(out), span(p), false, IcmpErrorKind::kTooBig, 1450, kSource4, 0);
  ASSERT_EQ(n, 576u);
  EXPECT_EQ(out[20], 3);  // destination unreachable
  EXPECT_EQ(out[21], 4);  // fragmentation needed
  EXPECT_EQ(be16(&out[24]), 0);
  EXPECT_EQ(be16(&out[26]), 1450);
  const Packet quote = checkIpv4Error(out, n, p);
  ASSERT_EQ(quote.size(), 548u);
  EXPECT_EQ(quote, Packet(p.begin(), p.begin() + 548));
  EXPECT_EQ(out[576], 0xee);  // nothing written past the packet
}

TEST(IcmpError, FragNeededMtuIsLow16Bits) {
  V4 v;
  v.frag_off = 0x4000;
  const Packet p = ipv4(v, 100);
  Packet out(1500);
  const size_t n =
      buildIcmpError(mspan(out), span(p), false, IcmpErrorKind::kTooBig, 0x12345678, kSource4, 0);
  ASSERT_EQ(n, 128u);
  EXPECT_EQ(be32(&out[24]), 0x5678u);
}

TEST(IcmpError, PacketTooBigIpv6QuotesTo1280) {
  V6 v;
  const Packet p = ipv6(v, 1500);
  Packet out(2048);
  const size_t n =
      buildIcmpError(mspan(out), span(p), true, IcmpErrorKind::kTooBig, 1400, kSource6, 0);
  ASSERT_EQ(n, 1280u);
  EXPECT_EQ(out[40], 2);  // Packet Too Big
  EXPECT_EQ(out[41], 0);
  EXPECT_EQ(be32(&out[44]), 1400u);
  const Packet quote = checkIpv6Error(out, n, p);
  ASSERT_EQ(quote.size(), 1232u);
  EXPECT_EQ(quote, Packet(p.begin(), p.begin() + 1232));
}

TEST(IcmpError, TimeExceededIpv4WholeShortPacketWithoutPadding) {
  V4 v;
  const Packet p = ipv4(v, 46);
  Packet padded = p;
  padded.resize(60, 0);  // Ethernet minimum frame padding is not quoted
  Packet out(1500);
  const size_t n = buildIcmpError(mspan(out), span(padded), false, IcmpErrorKind::kTimeExceeded,
                                  1450, kSource4, 0);
  ASSERT_EQ(n, 28u + 46u);
  EXPECT_EQ(out[20], 11);
  EXPECT_EQ(out[21], 0);
  EXPECT_EQ(be32(&out[24]), 0u);  // unused
  EXPECT_EQ(checkIpv4Error(out, n, p), p);
}

TEST(IcmpError, TimeExceededIpv6) {
  V6 v;
  const Packet p = ipv6(v, 100);
  Packet out(1500);
  const size_t n =
      buildIcmpError(mspan(out), span(p), true, IcmpErrorKind::kTimeExceeded, 1400, kSource6, 0);
  ASSERT_EQ(n, 148u);
  EXPECT_EQ(out[40], 3);
  EXPECT_EQ(out[41], 0);
  EXPECT_EQ(be32(&out[44]), 0u);
  EXPECT_EQ(checkIpv6Error(out, n, p), p);
}

TEST(IcmpError, TtlRestoredInQuoteOnly) {
  V4 v;
  v.ttl = 0;  // decremented from 1
  const Packet p = ipv4(v, 200);
  const Packet before = p;
  Packet out(1500);
  const size_t n =
      buildIcmpError(mspan(out), span(p), false, IcmpErrorKind::kTimeExceeded, 0, kSource4, 1);
  ASSERT_EQ(n, 228u);
  EXPECT_EQ(p, before);  // the offending packet is left alone
  const Packet quote = checkIpv4Error(out, n, p);
  EXPECT_EQ(quote[8], 1);
  EXPECT_TRUE(ipv4HeaderChecksumOk(quote.data()));  // fixed incrementally
  V4 sent = v;
  sent.ttl = 1;
  EXPECT_EQ(quote, ipv4(sent, 200));  // as the sender sent it

  V6 v6;
  v6.hop_limit = 0;
  const Packet p6 = ipv6(v6, 90);
  const size_t n6 =
      buildIcmpError(mspan(out), span(p6), true, IcmpErrorKind::kTimeExceeded, 0, kSource6, 1);
  ASSERT_EQ(n6, 138u);
  const Packet quote6 = checkIpv6Error(out, n6, p6);
  EXPECT_EQ(quote6[7], 1);
  v6.hop_limit = 1;
  EXPECT_EQ(quote6, ipv6(v6, 90));
}

TEST(IcmpError, OutTooSmall) {
  V4 v;
  const Packet p = ipv4(v, 1500);
  // Headers (28) + the offending header (20) + 8 bytes.
  Packet out(55);
  EXPECT_EQ(
      buildIcmpError(mspan(out), span(p), false, IcmpErrorKind::kTimeExceeded, 0, kSource4, 0), 0u);
  out.resize(56);
  const size_t n =
      buildIcmpError(mspan(out), span(p), false, IcmpErrorKind::kTimeExceeded, 0, kSource4, 0);
  ASSERT_EQ(n, 56u);
  EXPECT_EQ(checkIpv4Error(out, n, p), Packet(p.begin(), p.begin() + 28));

  // Options count in the least quote.
  v.options = {1, 1, 1, 0};
  const Packet with_options = ipv4(v, 1500);
  out.assign(59, 0);
  EXPECT_EQ(buildIcmpError(mspan(out), span(with_options), false, IcmpErrorKind::kTimeExceeded, 0,
                           kSource4, 0),
            0u);
  out.resize(60);
  EXPECT_EQ(buildIcmpError(mspan(out), span(with_options), false, IcmpErrorKind::kTimeExceeded, 0,
                           kSource4, 0),
            60u);

  V6 v6;
  const Packet p6 = ipv6(v6, 1500);
  out.assign(95, 0);
  EXPECT_EQ(buildIcmpError(mspan(out), span(p6), true, IcmpErrorKind::kTooBig, 1280, kSource6, 0),
            0u);
  out.resize(96);
  EXPECT_EQ(buildIcmpError(mspan(out), span(p6), true, IcmpErrorKind::kTooBig, 1280, kSource6, 0),
            96u);
  // A packet shorter than header + 8 is quoted whole.
  const Packet tiny = ipv6(v6, 44);
  out.assign(48 + 44, 0);
  EXPECT_EQ(buildIcmpError(mspan(out), span(tiny), true, IcmpErrorKind::kTooBig, 1280, kSource6, 0),
            92u);
}

TEST(IcmpError, NotAnswerableOrNoSource) {
  V4 v;
  v.protocol = kIpProtoIcmp;
  Packet p = ipv4(v, 100);
  p[20] = kIcmpTimeExceeded;  // an error about an error
  Packet out(1500);
  EXPECT_EQ(
      buildIcmpError(mspan(out), span(p), false, IcmpErrorKind::kTimeExceeded, 0, kSource4, 0), 0u);
  p[20] = kIcmpEchoRequest;
  EXPECT_EQ(buildIcmpError(mspan(out), span(p), false, IcmpErrorKind::kTimeExceeded, 0, nullptr, 0),
            0u);
  EXPECT_EQ(
      buildIcmpError(mspan(out), span(p), false, IcmpErrorKind::kTimeExceeded, 0, kSource4, 0),
      128u);
}

// --- mayAnswer --------------------------------------------------------------

TEST(IcmpMayAnswer, Ipv4) {
  V4 udp;
  EXPECT_TRUE(mayAnswer(span(ipv4(udp, 100)), false));

  V4 icmp;
  icmp.protocol = kIpProtoIcmp;
  Packet p = ipv4(icmp, 100);
  p[20] = kIcmpEchoRequest;
  EXPECT_TRUE(mayAnswer(span(p), false));
  p[20] = kIcmpEchoReply;
  EXPECT_TRUE(mayAnswer(span(p), false));
  for (uint8_t type : {3, 4, 5, 11, 12}) {
    p[20] = type;
    EXPECT_FALSE(mayAnswer(span(p), false)) << int(type);
  }
  EXPECT_FALSE(mayAnswer(span(ipv4(icmp, 20)), false));  // no ICMP type to read

  V4 later = udp;
  later.frag_off = 0x2000 | 185;  // MF, offset 1480
  EXPECT_FALSE(mayAnswer(span(ipv4(later, 100)), false));
  later.frag_off = 185;  // the last fragment
  EXPECT_FALSE(mayAnswer(span(ipv4(later, 100)), false));
  V4 first = udp;
  first.frag_off = 0x2000;  // the first fragment
  EXPECT_TRUE(mayAnswer(span(ipv4(first, 100)), false));

  struct Address {
    uint8_t a[4];
    bool as_source;
    bool as_destination;
  };
  const Address addresses[] = {
      {{224, 0, 0, 1}, false, false},        // multicast
      {{239, 255, 255, 250}, false, false},  // multicast
      {{240, 0, 0, 1}, false, true},         // class E
      {{255, 255, 255, 255}, false, false},  // limited broadcast
      {{0, 0, 0, 0}, false, true},           // this network
      {{0, 1, 2, 3}, false, true},           // this network
      {{127, 0, 0, 1}, false, true},         // loopback
      {{127, 9, 9, 9}, false, true},         // loopback
      {{192, 0, 2, 255}, true, true},        // a directed broadcast can't be told apart
      {{223, 255, 255, 254}, true, true},
  };
  for (const auto& a : addresses) {
    V4 s = udp;
    std::memcpy(s.src, a.a, 4);
    EXPECT_EQ(mayAnswer(span(ipv4(s, 100)), false), a.as_source) << int(a.a[0]);
    V4 d = udp;
    std::memcpy(d.dst, a.a, 4);
    EXPECT_EQ(mayAnswer(span(ipv4(d, 100)), false), a.as_destination) << int(a.a[0]);
  }
}

TEST(IcmpMayAnswer, Ipv6) {
  V6 udp;
  EXPECT_TRUE(mayAnswer(span(ipv6(udp, 100)), true));

  V6 icmp;
  icmp.next_header = kIpProtoIpv6Icmp;
  Packet p = ipv6(icmp, 100);
  p[40] = kIcmp6EchoRequest;
  EXPECT_TRUE(mayAnswer(span(p), true));
  p[40] = kIcmp6NeighborSolicit;
  EXPECT_TRUE(mayAnswer(span(p), true));
  for (uint8_t type : {1, 2, 3, 4, 127}) {
    p[40] = type;
    EXPECT_FALSE(mayAnswer(span(p), true)) << int(type);
  }
  EXPECT_FALSE(mayAnswer(span(ipv6(icmp, 40)), true));  // no ICMPv6 type to read

  // An ICMPv6 error behind a hop-by-hop and a destination-options header.
  V6 behind;
  behind.next_header = kIpv6HopByHop;
  behind.ext = {kIpv6DestinationOptions, 0, 1, 4, 0, 0, 0, 0,
                kIpProtoIpv6Icmp,        0, 1, 4, 0, 0, 0, 0};
  Packet q = ipv6(behind, 100);
  q[56] = kIcmp6PacketTooBig;
  EXPECT_FALSE(mayAnswer(span(q), true));
  q[56] = kIcmp6EchoReply;
  EXPECT_TRUE(mayAnswer(span(q), true));

  // Fragments: the first may be answered, a later one not.
  V6 frag;
  frag.next_header = kIpv6Fragment;
  frag.ext = {kIpProtoUdp, 0, 0x00, 0x01, 0, 0, 0, 7};  // offset 0, M
  EXPECT_TRUE(mayAnswer(span(ipv6(frag, 100)), true));
  frag.ext = {kIpProtoUdp, 0, 0x05, 0xa8, 0, 0, 0, 7};  // offset 1448/8, last
  EXPECT_FALSE(mayAnswer(span(ipv6(frag, 100)), true));
  frag.ext = {kIpProtoIpv6Icmp, 0, 0x05, 0xa9, 0, 0, 0, 7};
  EXPECT_FALSE(mayAnswer(span(ipv6(frag, 100)), true));

  const uint8_t unspecified[16] = {};
  const uint8_t loopback[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
  const uint8_t multicast[16] = {0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
  const uint8_t link_local[16] = {0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
  for (const uint8_t* a : {unspecified, loopback, multicast}) {
    V6 s = udp;
    std::memcpy(s.src, a, 16);
    EXPECT_FALSE(mayAnswer(span(ipv6(s, 100)), true));
  }
  V6 d = udp;
  std::memcpy(d.dst, multicast, 16);
  EXPECT_FALSE(mayAnswer(span(ipv6(d, 100)), true));
  std::memcpy(d.dst, loopback, 16);  // not a source rule
  EXPECT_TRUE(mayAnswer(span(ipv6(d, 100)), true));
  V6 s = udp;
  std::memcpy(s.src, link_local, 16);
  EXPECT_TRUE(mayAnswer(span(ipv6(s, 100)), true));
}

TEST(IcmpMayAnswer, Malformed) {
  V4 v;
  Packet p = ipv4(v, 100);
  EXPECT_FALSE(mayAnswer(span(p), true));  // not IPv6
  EXPECT_FALSE(mayAnswer(Bytes(span(p).first(19)), false));
  EXPECT_FALSE(mayAnswer(Bytes(span(p).first(99)), false));  // shorter than total length
  Packet bad_ihl = p;
  bad_ihl[0] = 0x44;
  EXPECT_FALSE(mayAnswer(span(bad_ihl), false));
  Packet bad_total = p;
  bad_total[3] = 10;
  EXPECT_FALSE(mayAnswer(span(bad_total), false));
  EXPECT_FALSE(mayAnswer(Bytes(), false));

  V6 v6;
  Packet p6 = ipv6(v6, 100);
  EXPECT_FALSE(mayAnswer(span(p6), false));  // not IPv4
  EXPECT_FALSE(mayAnswer(Bytes(span(p6).first(99)), true));
  EXPECT_FALSE(mayAnswer(Bytes(span(p6).first(39)), true));
  V6 truncated_ext;
  truncated_ext.next_header = kIpv6HopByHop;
  truncated_ext.ext = {kIpProtoUdp, 9};  // 80 bytes, only 60 there
  EXPECT_FALSE(mayAnswer(span(ipv6(truncated_ext, 100)), true));
}

}  // namespace
}  // namespace mcgw::proto
