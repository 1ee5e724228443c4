// The probe packet codec and the parsing and matching of ICMP frag-needed /
// Packet Too Big and port unreachable messages.
#include <gtest/gtest.h>

#include <vector>

#include "control/pmtu/probe_codec.hpp"

namespace mcgw::pmtu {
namespace {

config::IpAddress ip(const char* s) {
  return *config::IpAddress::parse(s);
}

std::vector<std::byte> bytes(std::initializer_list<int> v) {
  std::vector<std::byte> out;
  for (int b : v) {
    out.push_back(std::byte(b));
  }
  return out;
}

TEST(ProbeCodec, RequestRoundTripAndPadding) {
  auto p = encodeProbe({false, 0x0102030405060708ull, 1400, 0}, probePayloadLength(false, 1400));
  EXPECT_EQ(p.size(), 1400u - 28u);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(p.data()), 9), "MCGWPROBE");
  EXPECT_EQ(p[9], std::byte{1});
  EXPECT_EQ(p[10], std::byte{1});
  EXPECT_EQ(p[12], std::byte{1});
  EXPECT_EQ(p[19], std::byte{8});
  EXPECT_EQ(p[20], std::byte{0x05});  // 1400 = 0x0578
  EXPECT_EQ(p[21], std::byte{0x78});
  auto m = decodeProbe(p);
  ASSERT_TRUE(m);
  EXPECT_FALSE(m->reply);
  EXPECT_EQ(m->nonce, 0x0102030405060708ull);
  EXPECT_EQ(m->size, 1400);
  EXPECT_EQ(probePayloadLength(true, 1280), 1280u - 48u);
  EXPECT_EQ(probePayloadLength(false, 10), kProbeHeadLength);  // never below the head
}

TEST(ProbeCodec, ReplyIsTheHeadAlone) {
  auto p = encodeProbe({true, 42, 1500, 1472}, 9000);
  EXPECT_EQ(p.size(), kProbeHeadLength);
  auto m = decodeProbe(p);
  ASSERT_TRUE(m);
  EXPECT_TRUE(m->reply);
  EXPECT_EQ(m->nonce, 42u);
  EXPECT_EQ(m->size, 1500);
  EXPECT_EQ(m->received, 1472);
}

TEST(ProbeCodec, RejectsOtherPayloads) {
  auto p = encodeProbe({false, 1, 100, 0}, 100);
  auto bad = p;
  bad[0] = std::byte{'X'};
  EXPECT_FALSE(decodeProbe(bad));
  bad = p;
  bad[9] = std::byte{2};  // version
  EXPECT_FALSE(decodeProbe(bad));
  bad = p;
  bad[10] = std::byte{3};  // type
  EXPECT_FALSE(decodeProbe(bad));
  EXPECT_FALSE(decodeProbe(proto::Bytes(p.data(), kProbeHeadLength - 1)));
}

// An IPv4 frag-needed from 100.64.1.2 quoting a VXLAN packet
// 100.64.1.1 -> 100.64.3.1, UDP 51000 -> dport, with next-hop MTU mtu.
std::vector<std::byte> fragNeeded(uint16_t dport, uint16_t mtu, uint8_t proto = 17) {
  auto v = bytes({0x45, 0, 0, 56, 0, 0, 0, 0, 64, 1, 0, 0, 100, 64, 1, 2, 100, 64, 1, 1,
                  // ICMP 3/4, checksum, unused, MTU
                  3, 4, 0, 0, 0, 0, mtu >> 8, mtu & 0xff,
                  // quoted IPv4: total length 1500, DF, UDP
                  0x45, 0, 0x05, 0xdc, 0, 0, 0x40, 0, 64, proto, 0, 0, 100, 64, 1, 1, 100, 64, 3, 1,
                  // quoted UDP
                  0xc7, 0x38, dport >> 8, dport & 0xff, 0x05, 0xc8, 0, 0});
  return v;
}

TEST(IcmpParse, FragNeeded) {
  auto pkt = fragNeeded(4789, 1400);
  IcmpError r = parseIcmp4(pkt);
  ASSERT_EQ(r.verdict, IcmpVerdict::kTooBig);
  EXPECT_EQ(r.mtu, 1400u);
  EXPECT_EQ(r.from, ip("100.64.1.2"));
  EXPECT_EQ(r.quoted_src, ip("100.64.1.1"));
  EXPECT_EQ(r.quoted_dst, ip("100.64.3.1"));
  EXPECT_EQ(r.quoted_dport, 4789);

  std::vector<LineAddresses> lines{
      {"b/line2", ip("100.64.2.1"), ip("100.64.4.1"), 4789},
      {"b/line1", ip("100.64.1.1"), ip("100.64.3.1"), 4789},
  };
  const LineAddresses* l = matchLine(r, lines, 4788);
  ASSERT_NE(l, nullptr);
  EXPECT_EQ(l->key, "b/line1");
  // The probe port matches too; another port (host traffic) does not.
  EXPECT_NE(matchLine(parseIcmp4(fragNeeded(4788, 1400)), lines, 4788), nullptr);
  EXPECT_EQ(matchLine(parseIcmp4(fragNeeded(6081, 1400)), lines, 4788), nullptr);
  lines[1].tunnel_port = 6081;  // a Geneve line
  EXPECT_NE(matchLine(parseIcmp4(fragNeeded(6081, 1400)), lines, 4788), nullptr);
  EXPECT_EQ(matchLine(parseIcmp4(fragNeeded(4789, 1400)), lines, 4788), nullptr);
}

// Forged reports: a quoted packet that fit the reported MTU, or a tunnel
// packet from a source port the fast path never uses, lowers nothing.
TEST(IcmpParse, ForgedReportsAreNotMatched) {
  std::vector<LineAddresses> lines{{"b/line1", ip("100.64.1.1"), ip("100.64.3.1"), 4789}};
  IcmpError r = parseIcmp4(fragNeeded(4789, 1400));
  EXPECT_EQ(r.quoted_length, 1500u);
  EXPECT_EQ(r.quoted_sport, 0xc738);
  EXPECT_NE(matchLine(r, lines, 4788), nullptr);
  // The quoted packet (1500) fit an MTU of 1500 / 1600: not why it was dropped.
  EXPECT_EQ(matchLine(parseIcmp4(fragNeeded(4789, 1500)), lines, 4788), nullptr);
  EXPECT_EQ(matchLine(parseIcmp4(fragNeeded(4789, 1600)), lines, 4788), nullptr);
  // A report of 0 (pre-RFC 1191 router) says nothing to check the length against.
  EXPECT_NE(matchLine(parseIcmp4(fragNeeded(4789, 0)), lines, 4788), nullptr);
  // Tunnel packets leave from UDP ports 49152-65535.
  auto low = fragNeeded(4789, 1400);
  low[48] = std::byte{0x80};  // source port 0x8038 = 32824
  EXPECT_EQ(matchLine(parseIcmp4(low), lines, 4788), nullptr);
  // Probes leave from the kernel's ephemeral ports: any source port.
  auto probe = fragNeeded(4788, 1400);
  probe[48] = std::byte{0x80};
  EXPECT_NE(matchLine(parseIcmp4(probe), lines, 4788), nullptr);
}

TEST(IcmpParse, OtherMessagesAndBrokenQuotes) {
  auto pkt = fragNeeded(4789, 1400);
  pkt[21] = std::byte{1};  // host unreachable
  EXPECT_EQ(parseIcmp4(pkt).verdict, IcmpVerdict::kOtherType);
  EXPECT_EQ(parseIcmp4(fragNeeded(4789, 1400, 6)).verdict, IcmpVerdict::kNotUdp);
  pkt = fragNeeded(4789, 1400);
  EXPECT_EQ(parseIcmp4(proto::Bytes(pkt.data(), pkt.size() - 1)).verdict,
            IcmpVerdict::kMalformed);  // the UDP header cut short
  EXPECT_EQ(parseIcmp4(proto::Bytes(pkt.data(), 10)).verdict, IcmpVerdict::kMalformed);
}

// The peer's kernel refuses a probe (no responder on the probe port): port
// unreachable from the peer's VTEP quoting 100.64.1.1 -> 100.64.3.1 UDP 4788.
// A port unreachable from `from` quoting a probe request (nonce 77) to dport;
// with_probe false: quoting only the IP and UDP headers.
std::vector<std::byte> portUnreachable(const char* from, uint16_t dport, bool with_probe = true) {
  auto v = fragNeeded(dport, 0);
  v[21] = std::byte{3};  // code 3: port unreachable
  const auto f = ip(from);
  std::copy_n(reinterpret_cast<const std::byte*>(f.bytes.data()), 4, v.begin() + 12);
  if (with_probe) {
    auto head = encodeProbe({false, 77, 1400, 0}, kProbeHeadLength);
    v.insert(v.end(), head.begin(), head.end());
  }
  return v;
}

TEST(IcmpParse, PortUnreachableRefusesAProbe) {
  std::vector<LineAddresses> lines{{"b/line2", ip("100.64.2.1"), ip("100.64.4.1"), 4789},
                                   {"b/line1", ip("100.64.1.1"), ip("100.64.3.1"), 4789}};
  IcmpError r = parseIcmp4(portUnreachable("100.64.3.1", 4788));
  ASSERT_EQ(r.verdict, IcmpVerdict::kPortUnreachable);
  EXPECT_EQ(r.from, ip("100.64.3.1"));
  EXPECT_EQ(r.quoted_dport, 4788);
  EXPECT_EQ(r.quoted_nonce, std::optional<uint64_t>(77));
  const LineAddresses* l = matchRefusedProbe(r, lines, 4788);
  ASSERT_NE(l, nullptr);
  EXPECT_EQ(l->key, "b/line1");
  // Only quoting one of our probe requests (whose nonce the caller checks):
  // headers alone, or a reply's head, refuse nothing.
  IcmpError bare = parseIcmp4(portUnreachable("100.64.3.1", 4788, false));
  EXPECT_FALSE(bare.quoted_nonce);
  EXPECT_EQ(matchRefusedProbe(bare, lines, 4788), nullptr);
  auto reply = portUnreachable("100.64.3.1", 4788, false);
  auto head = encodeProbe({true, 77, 1400, 0}, kProbeHeadLength);
  reply.insert(reply.end(), head.begin(), head.end());
  EXPECT_EQ(matchRefusedProbe(parseIcmp4(reply), lines, 4788), nullptr);
  // Never a path MTU report.
  EXPECT_EQ(matchLine(r, lines, 4788), nullptr);
  // Only from the peer itself, only for the probe port.
  EXPECT_EQ(matchRefusedProbe(parseIcmp4(portUnreachable("100.64.1.2", 4788)), lines, 4788),
            nullptr);
  EXPECT_EQ(matchRefusedProbe(parseIcmp4(portUnreachable("100.64.3.1", 5000)), lines, 4788),
            nullptr);
  // A frag-needed is no refusal.
  EXPECT_EQ(matchRefusedProbe(parseIcmp4(fragNeeded(4788, 1400)), lines, 4788), nullptr);
  // Quoting something that is not UDP: not about a probe.
  auto tcp = portUnreachable("100.64.3.1", 4788);
  tcp[37] = std::byte{6};
  EXPECT_EQ(parseIcmp4(tcp).verdict, IcmpVerdict::kOtherType);
}

TEST(IcmpParse, PacketTooBig) {
  std::vector<std::byte> m = bytes({2, 0, 0, 0, 0, 0, 0x05, 0x00,  // PTB, MTU 1280
                                    0x60, 0, 0, 0, 0x05, 0xb4, 17, 64});
  const auto a = ip("fd00:64:1::1"), b = ip("fd00:64:3::1");
  for (auto x : a.bytes) {
    m.push_back(std::byte(x));
  }
  for (auto x : b.bytes) {
    m.push_back(std::byte(x));
  }
  for (int x : {0xc7, 0x38, 0x12, 0xb5, 0x05, 0xb4, 0, 0}) {
    m.push_back(std::byte(x));
  }
  IcmpError r = parseIcmp6(m, ip("fd00:64:1::2"));
  ASSERT_EQ(r.verdict, IcmpVerdict::kTooBig);
  EXPECT_EQ(r.mtu, 1280u);
  EXPECT_EQ(r.from, ip("fd00:64:1::2"));
  EXPECT_EQ(r.quoted_src, a);
  EXPECT_EQ(r.quoted_dst, b);
  EXPECT_EQ(r.quoted_dport, 4789);
  std::vector<LineAddresses> lines{{"b/line1", a, b, 4789}};
  EXPECT_NE(matchLine(r, lines, 4788), nullptr);
  // Reversed addresses (a packet towards us) are not ours.
  std::vector<LineAddresses> reversed{{"b/line1", b, a, 4789}};
  EXPECT_EQ(matchLine(r, reversed, 4788), nullptr);
  m[0] = std::byte{1};  // destination unreachable, no route
  EXPECT_EQ(parseIcmp6(m, a).verdict, IcmpVerdict::kOtherType);
  // Port unreachable from the peer, quoting a probe: refused.
  m[1] = std::byte{4};
  m[50] = std::byte{0x12};  // quoted destination port 4788
  m[51] = std::byte{0xb4};
  EXPECT_EQ(matchRefusedProbe(parseIcmp6(m, b), lines, 4788), nullptr) << "no probe quoted";
  auto probe = encodeProbe({false, 78, 1280, 0}, kProbeHeadLength);
  m.insert(m.end(), probe.begin(), probe.end());
  r = parseIcmp6(m, b);
  ASSERT_EQ(r.verdict, IcmpVerdict::kPortUnreachable);
  EXPECT_EQ(r.quoted_nonce, std::optional<uint64_t>(78));
  EXPECT_NE(matchRefusedProbe(r, lines, 4788), nullptr);
  EXPECT_EQ(matchLine(r, lines, 4788), nullptr);
  EXPECT_EQ(matchRefusedProbe(parseIcmp6(m, ip("fd00:64:1::2")), lines, 4788), nullptr);
}

}  // namespace
}  // namespace mcgw::pmtu
