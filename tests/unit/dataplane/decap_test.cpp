// decapsulate(): byte tables built with the encoder, then broken on purpose.
#include "dataplane/engine/decap.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "dataplane/proto/checksum.hpp"
#include "dataplane/proto/ecn.hpp"
#include "dataplane/proto/tunnel.hpp"

namespace mcgw::engine {
namespace {

using namespace mcgw::proto;
using Kind = DecapResult::Kind;

const uint8_t kPeerV4[4] = {198, 51, 100, 2};
const uint8_t kUsV4[4] = {198, 51, 100, 1};
const uint8_t kPeerV6[16] = {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2};

// Peer 7 at 198.51.100.2 or 2001:db8::2 carries VNI 1001 as tenant 3; Geneve
// option class 0x0102 type 0x81 is understood.
struct Lookup {
  bool peer(bool ipv6, const uint8_t* src, uint32_t* id) const {
    bool ok = ipv6 ? std::memcmp(src, kPeerV6, 16) == 0 : std::memcmp(src, kPeerV4, 4) == 0;
    *id = 7;
    return ok;
  }
  bool tenant(uint32_t peer, uint32_t vni, uint32_t* id) const {
    *id = 3;
    return peer == 7 && vni == 1001;
  }
  bool knownGeneveOption(uint16_t cls, uint8_t type) const { return cls == 0x0102 && type == 0x81; }
};

std::vector<std::byte> innerFrame(uint8_t tos, bool ipv6 = false) {
  std::vector<uint8_t> f = {0x02, 0, 0, 0, 1, 1, 0x02, 0, 0, 0, 2, 2};
  if (!ipv6) {
    f.insert(f.end(),
             {0x08, 0x00, 0x45, tos, 0x00, 0x1c, 0x00, 0x01, 0x00, 0x00, 0x40, 0x11, 0,    0, 10,
              1,    0,    10,   10,  2,    0,    10,   0x30, 0x39, 0x27, 0x0f, 0x00, 0x08, 0, 0});
  } else {
    f.insert(f.end(), {0x86, 0xdd, static_cast<uint8_t>(0x60 | tos >> 4),
                       static_cast<uint8_t>((tos & 0x0f) << 4), 0, 0, 0x00, 0x08, 0x11, 0x40});
    for (int i = 0; i < 32; ++i) {
      f.push_back(static_cast<uint8_t>(i));
    }
    f.insert(f.end(), {0x30, 0x39, 0x27, 0x0f, 0x00, 0x08, 0, 0});
  }
  std::vector<std::byte> v(f.size());
  std::memcpy(v.data(), f.data(), f.size());
  if (!ipv6) {
    uint16_t c = internetChecksum(Bytes(v.data() + 14, 20));
    v[24] = std::byte(c >> 8);
    v[25] = std::byte(c & 0xff);
  }
  return v;
}

// A packet from the peer to us.
std::vector<std::byte> fromPeer(Encapsulation e, bool ipv6, uint32_t vni,
                                const std::vector<std::byte>& inner) {
  TunnelHeaderTemplate t;
  t.encapsulation = e;
  t.ipv6 = ipv6;
  if (ipv6) {
    std::memcpy(t.local, kPeerV6, 16);
  } else {
    std::memcpy(t.local, kPeerV4, 4);
    std::memcpy(t.remote, kUsV4, 4);
  }
  std::vector<std::byte> pkt(tunnelOverhead(ipv6, e));
  EXPECT_GT(encodeTunnelHeaders(MutableBytes(pkt), t, vni, Bytes(inner), 1), 0u);
  pkt.insert(pkt.end(), inner.begin(), inner.end());
  return pkt;
}

// Recomputes the outer IPv4 header checksum of a packet whose header a test
// changed (a frame from fromPeer(..., false, ...)).
std::vector<std::byte>& fixOuterChecksum(std::vector<std::byte>& pkt) {
  pkt[24] = pkt[25] = std::byte{0};
  const uint16_t c = internetChecksum(Bytes(pkt.data() + 14, 20));
  pkt[24] = std::byte(c >> 8);
  pkt[25] = std::byte(c & 0xff);
  return pkt;
}

// Inserts a Geneve option (class, type, 4 bytes of data) into an IPv4 packet
// made by fromPeer(kGeneve, false, ...), fixing the lengths.
std::vector<std::byte> withGeneveOption(std::vector<std::byte> pkt, uint16_t cls, uint8_t type) {
  const size_t geneve = 14 + 20 + 8;
  const uint8_t opt[8] = {
      static_cast<uint8_t>(cls >> 8), static_cast<uint8_t>(cls), type, 1, 0xde, 0xad, 0xbe, 0xef};
  std::vector<std::byte> o(8);
  std::memcpy(o.data(), opt, 8);
  pkt.insert(pkt.begin() + geneve + 8, o.begin(), o.end());
  auto* p = reinterpret_cast<uint8_t*>(pkt.data());
  p[geneve] = static_cast<uint8_t>(p[geneve] + 2);  // optlen += 2 words
  if (type & 0x80) {
    p[geneve + 1] |= 0x40;  // C: a critical option is present
  }
  uint16_t ip_len = static_cast<uint16_t>((p[16] << 8 | p[17]) + 8);
  p[16] = static_cast<uint8_t>(ip_len >> 8);
  p[17] = static_cast<uint8_t>(ip_len);
  uint16_t udp_len = static_cast<uint16_t>((p[38] << 8 | p[39]) + 8);
  p[38] = static_cast<uint8_t>(udp_len >> 8);
  p[39] = static_cast<uint8_t>(udp_len);
  return fixOuterChecksum(pkt);
}

DecapResult decap(std::vector<std::byte>& pkt) {
  return decapsulate(MutableBytes(pkt), Lookup{});
}

TEST(Decap, VxlanOverIpv4) {
  auto inner = innerFrame(0x00);
  auto pkt = fromPeer(Encapsulation::kVxlan, false, 1001, inner);
  DecapResult r = decap(pkt);
  ASSERT_EQ(r.kind, Kind::kInner) << toString(r.reason);
  EXPECT_EQ(r.vni, 1001u);
  EXPECT_EQ(r.peer, 7u);
  EXPECT_EQ(r.tenant, 3u);
  EXPECT_EQ(r.inner_offset, 50u);
  ASSERT_EQ(r.inner.size(), inner.size());
  EXPECT_EQ(std::memcmp(r.inner.data(), inner.data(), inner.size()), 0);
}

TEST(Decap, GeneveOverIpv6WithKnownCriticalOptionAndIpv6Inner) {
  auto inner = innerFrame(0x02, true);
  auto pkt = fromPeer(Encapsulation::kGeneve, true, 1001, inner);
  DecapResult r = decap(pkt);
  ASSERT_EQ(r.kind, Kind::kInner) << toString(r.reason);
  EXPECT_EQ(r.inner_offset, 70u);

  auto v4 =
      withGeneveOption(fromPeer(Encapsulation::kGeneve, false, 1001, innerFrame(0)), 0x0102, 0x81);
  r = decap(v4);
  ASSERT_EQ(r.kind, Kind::kInner) << toString(r.reason);
  EXPECT_EQ(r.inner_offset, 58u);
}

struct DropCase {
  const char* name;
  std::vector<std::byte> pkt;
  Kind kind;
  DropReason reason;
};

TEST(Decap, DropsAndPassesTable) {
  auto inner = innerFrame(0);
  auto vxlan = fromPeer(Encapsulation::kVxlan, false, 1001, inner);
  auto unknown_vtep = vxlan;
  unknown_vtep[29] = std::byte{99};  // outer source 198.51.100.99
  fixOuterChecksum(unknown_vtep);
  auto no_i_flag = vxlan;
  no_i_flag[42] = std::byte{0};
  auto fragment = vxlan;
  fragment[20] = std::byte{0x20};  // MF, offset 0: the first fragment
  fixOuterChecksum(fragment);
  auto later_fragment = vxlan;
  later_fragment[21] = std::byte{0xb9};  // offset 185: no UDP header to judge by
  fixOuterChecksum(later_fragment);
  auto dns = vxlan;
  dns[36] = std::byte{0};
  dns[37] = std::byte{53};
  auto arp = vxlan;
  arp[12] = std::byte{0x08};
  arp[13] = std::byte{0x06};
  auto truncated = std::vector<std::byte>(vxlan.begin(), vxlan.begin() + 10);
  auto short_inner = std::vector<std::byte>(vxlan.begin(), vxlan.begin() + 56);
  short_inner[17] = std::byte{56 - 14};  // IP total length
  short_inner[39] = std::byte{56 - 34};  // UDP length
  fixOuterChecksum(short_inner);
  // A first fragment (M=1, offset 0) of a VXLAN packet over IPv6.
  auto v6_fragment = fromPeer(Encapsulation::kVxlan, true, 1001, inner);
  const uint8_t frag[8] = {17, 0, 0x00, 0x01, 0, 0, 0, 42};
  std::vector<std::byte> fh(8);
  std::memcpy(fh.data(), frag, 8);
  v6_fragment.insert(v6_fragment.begin() + 54, fh.begin(), fh.end());
  v6_fragment[20] = std::byte{44};  // next header: Fragment
  uint16_t plen = static_cast<uint16_t>(
      (static_cast<uint8_t>(v6_fragment[18]) << 8 | static_cast<uint8_t>(v6_fragment[19])) + 8);
  v6_fragment[18] = std::byte(plen >> 8);
  v6_fragment[19] = std::byte(plen & 0xff);

  auto oam = fromPeer(Encapsulation::kGeneve, false, 1001, inner);
  oam[43] = std::byte{0x80};  // Geneve flags: O
  // C set, options length 1 word, but the option claims 2 words of data.
  auto c_malformed =
      withGeneveOption(fromPeer(Encapsulation::kGeneve, false, 1001, inner), 0x0102, 0x81);
  c_malformed[42 + 8 + 3] = std::byte{0x02};
  // An atomic fragment (offset 0, M clear) of a VXLAN packet over IPv6: whole.
  auto v6_atomic = v6_fragment;
  v6_atomic[54 + 3] = std::byte{0x00};

  DropCase cases[] = {
      {"unknown VTEP", unknown_vtep, Kind::kDrop, DropReason::kUNKNOWN_VTEP},
      {"unknown VNI", fromPeer(Encapsulation::kVxlan, false, 1002, inner), Kind::kDrop,
       DropReason::kUNKNOWN_VNI},
      {"VXLAN without the I flag", no_i_flag, Kind::kDrop, DropReason::kMALFORMED},
      {"outer IPv4 first fragment", fragment, Kind::kDrop, DropReason::kOUTER_FRAGMENT},
      {"outer IPv4 later fragment goes to other stages", later_fragment, Kind::kNotTunnel,
       DropReason::kMALFORMED},
      {"outer IPv6 first fragment", v6_fragment, Kind::kDrop, DropReason::kOUTER_FRAGMENT},
      {"unknown critical Geneve option",
       withGeneveOption(fromPeer(Encapsulation::kGeneve, false, 1001, inner), 0xffff, 0x80),
       Kind::kDrop, DropReason::kCRITICAL_OPTION},
      {"unknown non-critical Geneve option passes",
       withGeneveOption(fromPeer(Encapsulation::kGeneve, false, 1001, inner), 0xffff, 0x01),
       Kind::kInner, DropReason::kMALFORMED},
      {"Geneve control packet (O bit)", oam, Kind::kDrop, DropReason::kOAM},
      {"Geneve C flag with a malformed option area", c_malformed, Kind::kDrop,
       DropReason::kCRITICAL_OPTION},
      {"IPv6 atomic fragment is a whole packet", v6_atomic, Kind::kInner, DropReason::kMALFORMED},
      {"inner frame shorter than Ethernet", short_inner, Kind::kDrop, DropReason::kMALFORMED},
      {"truncated Ethernet", truncated, Kind::kDrop, DropReason::kMALFORMED},
      {"UDP to another port", dns, Kind::kNotTunnel, DropReason::kMALFORMED},
      {"ARP", arp, Kind::kNotTunnel, DropReason::kMALFORMED},
  };
  for (auto& c : cases) {
    SCOPED_TRACE(c.name);
    DecapResult r = decap(c.pkt);
    EXPECT_EQ(r.kind, c.kind);
    if (c.kind == Kind::kDrop) {
      EXPECT_EQ(r.reason, c.reason) << toString(r.reason);
    }
  }
}

// The outer IPv4 header checksum of a tunnel packet, bit by bit: a flipped
// bit in any field whose change alone leaves the packet a tunnel packet
// (the checksum field itself included) is caught; trusting the port's
// offload skips the check; packets that are not tunnel packets are left to
// the kernel, which checks them itself.
TEST(Decap, OuterIpv4ChecksumTable) {
  const auto good = fromPeer(Encapsulation::kVxlan, false, 1001, innerFrame(0));
  {
    auto pkt = good;
    ASSERT_EQ(decap(pkt).kind, Kind::kInner);
  }
  // Fields whose change alone keeps a packet a tunnel packet: TOS (1),
  // identification (4, 5), flags (6: DF and the reserved bit; MF and the
  // offset make a fragment), TTL (8), checksum (10, 11), source (12..15:
  // checked before the VTEP is looked up), destination (16..19).
  for (size_t byte : {1u, 4u, 5u, 6u, 8u, 10u, 11u, 12u, 13u, 14u, 15u, 16u, 17u, 18u, 19u}) {
    for (int bit = 0; bit < 8; ++bit) {
      if (byte == 6 && bit <= 5) {  // MF and the offset: a fragment
        continue;
      }
      SCOPED_TRACE("header byte " + std::to_string(byte) + " bit " + std::to_string(bit));
      auto pkt = good;
      pkt[14 + byte] ^= std::byte(1u << bit);
      DecapResult r = decap(pkt);
      EXPECT_EQ(r.kind, Kind::kDrop);
      EXPECT_EQ(r.reason, DropReason::kBAD_CHECKSUM) << toString(r.reason);
      auto trusted = good;
      trusted[14 + byte] ^= std::byte(1u << bit);
      r = decapsulate(MutableBytes(trusted), Lookup{}, /*verify_ipv4_checksum=*/false);
      if (byte >= 12 && byte <= 15) {  // another source: not a peer VTEP
        EXPECT_EQ(r.kind, Kind::kDrop);
        EXPECT_EQ(r.reason, DropReason::kUNKNOWN_VTEP) << toString(r.reason);
      } else {  // (one TOS bit: ECT(0) or ECT(1) over Not-ECT passes, RFC 6040)
        EXPECT_EQ(r.kind, Kind::kInner) << "the port said it checked: " << toString(r.reason);
      }
    }
  }
  // A header with options (IHL 6): the options are summed too.
  {
    auto pkt = good;
    const std::byte nop_opts[4] = {std::byte{1}, std::byte{1}, std::byte{1}, std::byte{0}};
    pkt.insert(pkt.begin() + 34, nop_opts, nop_opts + 4);
    pkt[14] = std::byte{0x46};
    const uint16_t total = static_cast<uint16_t>(pkt.size() - 14);
    pkt[16] = std::byte(total >> 8);
    pkt[17] = std::byte(total & 0xff);
    pkt[24] = pkt[25] = std::byte{0};
    const uint16_t c = internetChecksum(Bytes(pkt.data() + 14, 24));
    pkt[24] = std::byte(c >> 8);
    pkt[25] = std::byte(c & 0xff);
    DecapResult r = decap(pkt);
    ASSERT_EQ(r.kind, Kind::kInner) << toString(r.reason);
    EXPECT_EQ(r.inner_offset, 54u);
    pkt[36] ^= std::byte{0x02};  // an option byte
    r = decap(pkt);
    EXPECT_EQ(r.kind, Kind::kDrop);
    EXPECT_EQ(r.reason, DropReason::kBAD_CHECKSUM);
  }
  // Not a tunnel packet (UDP to port 53): the kernel's, checksum unread.
  {
    auto pkt = good;
    pkt[36] = std::byte{0};
    pkt[37] = std::byte{53};
    pkt[24] ^= std::byte{0xff};
    EXPECT_EQ(decap(pkt).kind, Kind::kNotTunnel);
  }
}

// The fixed-offset path for the common packet and the general parsers give
// the same verdict for every input: every value of every byte of the outer
// headers and the start of the inner frame, with the outer checksum left
// as it is and recomputed, checked and trusted, and every truncation.
TEST(Decap, FixedOffsetsAndGeneralParsersAgree) {
  const auto good = fromPeer(Encapsulation::kVxlan, false, 1001, innerFrame(0));
  auto same = [](std::vector<std::byte> frame, bool verify) {
    auto copy = frame;
    DecapResult fast, general;
    decapsulateInto(MutableBytes(frame), Lookup{}, verify, fast, true);
    decapsulateInto(MutableBytes(copy), Lookup{}, verify, general, false);
    if (fast.kind != general.kind) {
      return ::testing::AssertionFailure()
             << "kind " << static_cast<int>(fast.kind) << " vs " << static_cast<int>(general.kind);
    }
    if (fast.kind == Kind::kDrop && fast.reason != general.reason) {
      return ::testing::AssertionFailure()
             << "reason " << toString(fast.reason) << " vs " << toString(general.reason);
    }
    if (fast.kind == Kind::kInner &&
        (fast.vni != general.vni || fast.peer != general.peer || fast.tenant != general.tenant ||
         fast.inner_offset != general.inner_offset || fast.inner.size() != general.inner.size() ||
         frame != copy)) {
      return ::testing::AssertionFailure() << "inner results differ";
    }
    return ::testing::AssertionSuccess();
  };
  size_t inner_results = 0;
  for (size_t at = 0; at < 64; ++at) {
    for (unsigned v = 0; v < 256; ++v) {
      auto pkt = good;
      pkt[at] = std::byte(v);
      for (bool verify : {true, false}) {
        EXPECT_TRUE(same(pkt, verify)) << "byte " << at << " = " << v << " verify " << verify;
      }
      if (at >= 14 && at < 34) {  // and with a right checksum
        auto fixed = pkt;
        fixOuterChecksum(fixed);
        EXPECT_TRUE(same(fixed, true)) << "byte " << at << " = " << v << ", checksum fixed";
        auto copy = fixed;
        inner_results += decapsulate(MutableBytes(copy), Lookup{}).kind == Kind::kInner;
      }
    }
  }
  EXPECT_GT(inner_results, 20u * 16) << "the mutations reached the inner frame";
  for (size_t len = 0; len <= good.size(); ++len) {
    std::vector<std::byte> cut(good.begin(), good.begin() + static_cast<ptrdiff_t>(len));
    EXPECT_TRUE(same(cut, true)) << "cut at " << len;
  }
  // Outer total lengths below the IPv4 header (the fixed-offset path once
  // wrapped around on these) and UDP lengths around the IP payload.
  for (unsigned total = 0; total < 80; ++total) {
    for (unsigned udp : {0u, 8u, 29u, 30u, 44u, 45u, 64u, 65535u}) {
      auto pkt = good;
      pkt[16] = std::byte(total >> 8);
      pkt[17] = std::byte(total & 0xff);
      pkt[38] = std::byte(udp >> 8);
      pkt[39] = std::byte(udp & 0xff);
      fixOuterChecksum(pkt);
      EXPECT_TRUE(same(pkt, true)) << "total " << total << " udp " << udp;
      auto copy = pkt;
      const DecapResult r = decapsulate(MutableBytes(copy), Lookup{});
      if (r.kind == Kind::kInner) {
        EXPECT_LE(r.inner_offset + r.inner.size(), pkt.size()) << "total " << total;
      }
    }
  }
}

TEST(ProtoChecksum, Ipv4HeaderChecksumOkOnKnownHeaders) {
  // A header with a valid checksum (0xb861), and the same with each byte
  // changed.
  const uint8_t h[20] = {0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11,
                         0xb8, 0x61, 0xc0, 0xa8, 0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7};
  EXPECT_TRUE(ipv4HeaderChecksumOk(h, 20));
  for (size_t i = 0; i < 20; ++i) {
    uint8_t b[20];
    std::memcpy(b, h, 20);
    b[i] = static_cast<uint8_t>(b[i] + 1);
    EXPECT_FALSE(ipv4HeaderChecksumOk(b, 20)) << "byte " << i;
  }
  // Large words that carry out of 32 bits more than once.
  uint8_t ones[20];
  std::memset(ones, 0xff, 20);
  EXPECT_TRUE(ipv4HeaderChecksumOk(ones, 20));  // sum of 0xffff words is 0xffff
  ones[0] = 0xfe;
  EXPECT_FALSE(ipv4HeaderChecksumOk(ones, 20));
}

TEST(Decap, Rfc6040OnEveryCellForBothInnerFamilies) {
  const uint8_t codes[] = {kEcnNotEct, kEcnEct0, kEcnEct1, kEcnCe};
  // RFC 6040 section 4.2, figure 4: the inner packet's ECN after
  // decapsulation; rows inner, columns outer (Not-ECT, ECT(0), ECT(1), CE);
  // -1: drop.
  constexpr int kDrop = -1;
  const int table[4][4] = {
      {kEcnNotEct, kEcnNotEct, kEcnNotEct, kDrop},
      {kEcnEct0, kEcnEct0, kEcnEct1, kEcnCe},
      {kEcnEct1, kEcnEct1, kEcnEct1, kEcnCe},
      {kEcnCe, kEcnCe, kEcnCe, kEcnCe},
  };
  for (bool v6_inner : {false, true}) {
    for (size_t row = 0; row < 4; ++row) {
      for (size_t column = 0; column < 4; ++column) {
        const uint8_t in = codes[row];
        const uint8_t out = codes[column];
        const int want = table[row][column];
        SCOPED_TRACE(std::string(v6_inner ? "v6" : "v4") + " inner " + std::to_string(in) +
                     " outer " + std::to_string(out));
        auto pkt = fromPeer(Encapsulation::kVxlan, v6_inner, 1001, innerFrame(0xb8 | in, v6_inner));
        if (!v6_inner) {
          pkt[15] = std::byte((static_cast<uint8_t>(pkt[15]) & 0xfc) | out);  // outer IPv4 ECN
          fixOuterChecksum(pkt);
        } else {
          // Outer IPv6 traffic class: bits 4..11 of the first word; ECN its low two.
          uint8_t b1 = static_cast<uint8_t>(pkt[15]);
          pkt[15] = std::byte((b1 & 0xcf) | out << 4);
        }
        DecapResult r = decap(pkt);
        if (want == kDrop) {
          EXPECT_EQ(r.kind, Kind::kDrop);
          EXPECT_EQ(r.reason, DropReason::kECN);
          continue;
        }
        ASSERT_EQ(r.kind, Kind::kInner) << toString(r.reason);
        const auto* ip = reinterpret_cast<const uint8_t*>(r.inner.data()) + 14;
        if (!v6_inner) {
          EXPECT_EQ(ip[1], 0xb8 | want) << "DSCP kept, ECN per RFC 6040";
          EXPECT_EQ(internetChecksum(Bytes(r.inner.data() + 14, 20)), 0) << "inner checksum";
        } else {
          uint8_t tc = static_cast<uint8_t>((ip[0] & 0x0f) << 4 | ip[1] >> 4);
          EXPECT_EQ(tc, 0xb8 | want);
        }
      }
    }
  }
}

}  // namespace
}  // namespace mcgw::engine
