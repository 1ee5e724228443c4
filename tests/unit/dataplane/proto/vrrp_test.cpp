// The VRRPv3 codec and the ARP / ND frames of a VRRP router against byte
// tables captured from keepalived 2.2.7 and made by scapy 2.5.0
// (tests/unit/dataplane/proto/vrrp_vectors.py prints the latter).  The IPv4
// advertisement's VRRP checksum 0x4359 was also worked out by hand over the
// pseudo-header 10.1.0.2 → 224.0.0.18, protocol 112, length 12; keepalived
// sends the same bytes.
#include "dataplane/proto/vrrp.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

namespace mcgw::proto {
namespace {

using Frame = std::vector<std::byte>;

Frame frame(std::initializer_list<uint8_t> b) {
  Frame f;
  for (uint8_t x : b) {
    f.push_back(std::byte(x));
  }
  return f;
}

// Ethernet 00:00:5e:00:01:0a → 01:00:5e:00:00:12, IPv4 10.1.0.2 → 224.0.0.18
// TTL 255 TOS 0xc0, VRRPv3 vrid 10 priority 150 interval 10 cs, 10.1.0.254.
const Frame kAdvertV4 = frame({
    0x01, 0x00, 0x5e, 0x00, 0x00, 0x12, 0x00, 0x00, 0x5e, 0x00, 0x01, 0x0a,  //
    0x08, 0x00, 0x45, 0xc0, 0x00, 0x20, 0x00, 0x00, 0x00, 0x00, 0xff, 0x70,  //
    0xd0, 0x98, 0x0a, 0x01, 0x00, 0x02, 0xe0, 0x00, 0x00, 0x12, 0x31, 0x0a,  //
    0x96, 0x01, 0x00, 0x0a, 0x43, 0x59, 0x0a, 0x01, 0x00, 0xfe,
});

// Ethernet 00:00:5e:00:02:14 → 33:33:00:00:00:12, IPv6 fe80::1 → ff02::12
// hop limit 255 traffic class 0xc0, VRRPv3 vrid 20 priority 100 interval
// 100 cs, 2001:db8:1::fe and fe80::fe.
const Frame kAdvertV6 = frame({
    0x33, 0x33, 0x00, 0x00, 0x00, 0x12, 0x00, 0x00, 0x5e, 0x00, 0x02, 0x14,  //
    0x86, 0xdd, 0x6c, 0x00, 0x00, 0x00, 0x00, 0x28, 0x70, 0xff, 0xfe, 0x80,  //
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  //
    0x00, 0x01, 0xff, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  //
    0x00, 0x00, 0x00, 0x00, 0x00, 0x12, 0x31, 0x14, 0x64, 0x02, 0x00, 0x64,  //
    0x3e, 0x1f, 0x20, 0x01, 0x0d, 0xb8, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00,  //
    0x00, 0x00, 0x00, 0x00, 0x00, 0xfe, 0xfe, 0x80, 0x00, 0x00, 0x00, 0x00,  //
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xfe,
});

// Gratuitous ARP request: 00:00:5e:00:01:0a → broadcast, who-has 10.1.0.254
// tell 10.1.0.254, target MAC zero.
const Frame kGarp = frame({
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00, 0x00, 0x5e, 0x00, 0x01, 0x0a,  //
    0x08, 0x06, 0x00, 0x01, 0x08, 0x00, 0x06, 0x04, 0x00, 0x01, 0x00, 0x00,  //
    0x5e, 0x00, 0x01, 0x0a, 0x0a, 0x01, 0x00, 0xfe, 0x00, 0x00, 0x00, 0x00,  //
    0x00, 0x00, 0x0a, 0x01, 0x00, 0xfe,
});

// ARP reply: 10.1.0.254 is at 00:00:5e:00:01:0a, to 10.1.0.5 / 02:00:00:00:00:05.
const Frame kArpReply = frame({
    0x02, 0x00, 0x00, 0x00, 0x00, 0x05, 0x00, 0x00, 0x5e, 0x00, 0x01, 0x0a,  //
    0x08, 0x06, 0x00, 0x01, 0x08, 0x00, 0x06, 0x04, 0x00, 0x02, 0x00, 0x00,  //
    0x5e, 0x00, 0x01, 0x0a, 0x0a, 0x01, 0x00, 0xfe, 0x02, 0x00, 0x00, 0x00,  //
    0x00, 0x05, 0x0a, 0x01, 0x00, 0x05,
});

// Unsolicited NA: fe80::1 → ff02::1 (33:33:00:00:00:01), R and O set,
// target 2001:db8:1::fe, target link-layer option 00:00:5e:00:02:14.
const Frame kUnsolicitedNa = frame({
    0x33, 0x33, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x5e, 0x00, 0x02, 0x14,  //
    0x86, 0xdd, 0x60, 0x00, 0x00, 0x00, 0x00, 0x20, 0x3a, 0xff, 0xfe, 0x80,  //
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  //
    0x00, 0x01, 0xff, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  //
    0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x88, 0x00, 0x49, 0x51, 0xa0, 0x00,  //
    0x00, 0x00, 0x20, 0x01, 0x0d, 0xb8, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00,  //
    0x00, 0x00, 0x00, 0x00, 0x00, 0xfe, 0x02, 0x01, 0x00, 0x00, 0x5e, 0x00,  //
    0x02, 0x14,
});

// Solicited NA: 2001:db8:1::fe → 2001:db8:1::5 (02:00:00:00:00:05), S and O
// set, R clear, target link-layer option 00:00:5e:00:02:14.
const Frame kSolicitedNa = frame({
    0x02, 0x00, 0x00, 0x00, 0x00, 0x05, 0x00, 0x00, 0x5e, 0x00, 0x02, 0x14,  //
    0x86, 0xdd, 0x60, 0x00, 0x00, 0x00, 0x00, 0x20, 0x3a, 0xff, 0x20, 0x01,  //
    0x0d, 0xb8, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  //
    0x00, 0xfe, 0x20, 0x01, 0x0d, 0xb8, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00,  //
    0x00, 0x00, 0x00, 0x00, 0x00, 0x05, 0x88, 0x00, 0x2a, 0x60, 0x60, 0x00,  //
    0x00, 0x00, 0x20, 0x01, 0x0d, 0xb8, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00,  //
    0x00, 0x00, 0x00, 0x00, 0x00, 0xfe, 0x02, 0x01, 0x00, 0x00, 0x5e, 0x00,  //
    0x02, 0x14,
});

// Neighbor Solicitation 2001:db8:1::5 → ff02::1:ff00:fe for 2001:db8:1::fe,
// source link-layer option 02:00:00:00:00:05.
const Frame kSolicit = frame({
    0x33, 0x33, 0xff, 0x00, 0x00, 0xfe, 0x02, 0x00, 0x00, 0x00, 0x00, 0x05,  //
    0x86, 0xdd, 0x60, 0x00, 0x00, 0x00, 0x00, 0x20, 0x3a, 0xff, 0x20, 0x01,  //
    0x0d, 0xb8, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  //
    0x00, 0x05, 0xff, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  //
    0x00, 0x01, 0xff, 0x00, 0x00, 0xfe, 0x87, 0x00, 0x1a, 0x25, 0x00, 0x00,  //
    0x00, 0x00, 0x20, 0x01, 0x0d, 0xb8, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00,  //
    0x00, 0x00, 0x00, 0x00, 0x00, 0xfe, 0x01, 0x01, 0x02, 0x00, 0x00, 0x00,  //
    0x00, 0x05,
});

// ARP request who-has 10.1.0.254 tell 10.1.0.5, padded to 60 bytes.
const Frame kArpRequest = frame({
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0x00, 0x00, 0x00, 0x00, 0x05,  //
    0x08, 0x06, 0x00, 0x01, 0x08, 0x00, 0x06, 0x04, 0x00, 0x01, 0x02, 0x00,  //
    0x00, 0x00, 0x00, 0x05, 0x0a, 0x01, 0x00, 0x05, 0x00, 0x00, 0x00, 0x00,  //
    0x00, 0x00, 0x0a, 0x01, 0x00, 0xfe, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  //
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
});

// A VRRPv2 advertisement (RFC 3768) in its IPv4 packet, as scapy's VRRP().
const Frame kVrrpV2Packet = frame({
    0x45, 0x00, 0x00, 0x28, 0x00, 0x01, 0x00, 0x00, 0xff, 0x70, 0xd1, 0x4f,  //
    0x0a, 0x01, 0x00, 0x02, 0xe0, 0x00, 0x00, 0x12, 0x21, 0x0a, 0x96, 0x01,  //
    0x00, 0x01, 0x3d, 0xf4, 0x0a, 0x01, 0x00, 0xfe, 0x00, 0x00, 0x00, 0x00,  //
    0x00, 0x00, 0x00, 0x00,
});

// Adverts captured from Debian's keepalived 2.2.7 (vrrp_version 3, no use_vmac: the
// source MAC is the interface's 02:00:00:00:00:02) on a veth in a network namespace.
// 10.1.0.2 → 224.0.0.18, vrid 10, priority 150, 10 cs, 10.1.0.254
const Frame kKeepalivedV4 = frame({
    0x01, 0x00, 0x5e, 0x00, 0x00, 0x12, 0x02, 0x00, 0x00, 0x00, 0x00, 0x02,  //
    0x08, 0x00, 0x45, 0xc0, 0x00, 0x20, 0x00, 0x01, 0x00, 0x00, 0xff, 0x70,  //
    0xd0, 0x97, 0x0a, 0x01, 0x00, 0x02, 0xe0, 0x00, 0x00, 0x12, 0x31, 0x0a,  //
    0x96, 0x01, 0x00, 0x0a, 0x43, 0x59, 0x0a, 0x01, 0x00, 0xfe,
});
// the same group stopping: priority 0
const Frame kKeepalivedV4Stop = frame({
    0x01, 0x00, 0x5e, 0x00, 0x00, 0x12, 0x02, 0x00, 0x00, 0x00, 0x00, 0x02,  //
    0x08, 0x00, 0x45, 0xc0, 0x00, 0x20, 0x00, 0x37, 0x00, 0x00, 0xff, 0x70,  //
    0xd0, 0x61, 0x0a, 0x01, 0x00, 0x02, 0xe0, 0x00, 0x00, 0x12, 0x31, 0x0a,  //
    0x00, 0x01, 0x00, 0x0a, 0xd9, 0x59, 0x0a, 0x01, 0x00, 0xfe,
});
// fe80::2 → ff02::12, vrid 20, priority 100, 100 cs, 2001:db8:1::fe
const Frame kKeepalivedV6 = frame({
    0x33, 0x33, 0x00, 0x00, 0x00, 0x12, 0x02, 0x00, 0x00, 0x00, 0x00, 0x02,  //
    0x86, 0xdd, 0x6c, 0x03, 0xb1, 0x0b, 0x00, 0x18, 0x70, 0xff, 0xfe, 0x80,  //
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  //
    0x00, 0x02, 0xff, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  //
    0x00, 0x00, 0x00, 0x00, 0x00, 0x12, 0x31, 0x14, 0x64, 0x01, 0x00, 0x64,  //
    0x3d, 0xae, 0x20, 0x01, 0x0d, 0xb8, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00,  //
    0x00, 0x00, 0x00, 0x00, 0x00, 0xfe,
});
// the same group stopping: priority 0
const Frame kKeepalivedV6Stop = frame({
    0x33, 0x33, 0x00, 0x00, 0x00, 0x12, 0x02, 0x00, 0x00, 0x00, 0x00, 0x02,  //
    0x86, 0xdd, 0x6c, 0x03, 0xb1, 0x0b, 0x00, 0x18, 0x70, 0xff, 0xfe, 0x80,  //
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  //
    0x00, 0x02, 0xff, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  //
    0x00, 0x00, 0x00, 0x00, 0x00, 0x12, 0x31, 0x14, 0x00, 0x01, 0x00, 0x64,  //
    0xa1, 0xae, 0x20, 0x01, 0x0d, 0xb8, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00,  //
    0x00, 0x00, 0x00, 0x00, 0x00, 0xfe,
});

const Mac kVmac4 = {0x00, 0x00, 0x5e, 0x00, 0x01, 0x0a};
const Mac kVmac6 = {0x00, 0x00, 0x5e, 0x00, 0x02, 0x14};
const Mac kHostMac = {0x02, 0x00, 0x00, 0x00, 0x00, 0x05};
const IpAddr kSrc4 = IpAddr::v4(10, 1, 0, 2);
const IpAddr kVip4 = IpAddr::v4(10, 1, 0, 254);
const IpAddr kHost4 = IpAddr::v4(10, 1, 0, 5);
const IpAddr kLinkLocal1 =
    IpAddr::v6From({0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01});
const IpAddr kVip6 =
    IpAddr::v6From({0x20, 0x01, 0x0d, 0xb8, 0, 0x01, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xfe});
const IpAddr kVip6LinkLocal =
    IpAddr::v6From({0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xfe});
const IpAddr kHost6 =
    IpAddr::v6From({0x20, 0x01, 0x0d, 0xb8, 0, 0x01, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x05});

TEST(VrrpCodec, VirtualMacs) {
  EXPECT_EQ(virtualMac(10, false), (Mac{0x00, 0x00, 0x5e, 0x00, 0x01, 0x0a}));
  EXPECT_EQ(virtualMac(255, true), (Mac{0x00, 0x00, 0x5e, 0x00, 0x02, 0xff}));
}

TEST(VrrpCodec, BuildsTheIpv4AdvertFrameScapyBuilds) {
  const IpAddr vips[] = {kVip4};
  Frame out(100);
  size_t n = buildAdvertFrame(MutableBytes(out), {10, 150, 10, vips}, kSrc4);
  out.resize(n);
  EXPECT_EQ(out, kAdvertV4);
  EXPECT_EQ(advertFrameLength(false, 1), 46u);
}

TEST(VrrpCodec, BuildsTheIpv6AdvertFrameScapyBuilds) {
  const IpAddr vips[] = {kVip6, kVip6LinkLocal};
  Frame out(200);
  size_t n = buildAdvertFrame(MutableBytes(out), {20, 100, 100, vips}, kLinkLocal1);
  out.resize(n);
  EXPECT_EQ(out, kAdvertV6);
}

TEST(VrrpCodec, EncodesThePayloadAloneForARawSocket) {
  const IpAddr vips[] = {kVip4};
  Frame out(12);
  ASSERT_EQ(encodeVrrpAdvert(MutableBytes(out), {10, 150, 10, vips}, kSrc4, kVrrpGroupV4), 12u);
  EXPECT_EQ(out, Frame(kAdvertV4.begin() + 34, kAdvertV4.end()));
  // To a unicast peer 10.1.0.3 the checksum is 0x1968 (scapy).
  ASSERT_EQ(
      encodeVrrpAdvert(MutableBytes(out), {10, 150, 10, vips}, kSrc4, IpAddr::v4(10, 1, 0, 3)),
      12u);
  EXPECT_EQ(out[6], std::byte(0x19));
  EXPECT_EQ(out[7], std::byte(0x68));
}

TEST(VrrpCodec, EncodeRefusesWhatCannotBeSent) {
  const IpAddr vips[] = {kVip4};
  const IpAddr mixed[] = {kVip4, kVip6};
  Frame out(100);
  MutableBytes o(out);
  EXPECT_EQ(encodeVrrpAdvert(o, {10, 150, 0, vips}, kSrc4, kVrrpGroupV4), 0u);
  EXPECT_EQ(encodeVrrpAdvert(o, {10, 150, 4096, vips}, kSrc4, kVrrpGroupV4), 0u);
  EXPECT_EQ(encodeVrrpAdvert(o, {10, 150, 10, mixed}, kSrc4, kVrrpGroupV4), 0u);
  EXPECT_EQ(encodeVrrpAdvert(o, {10, 150, 10, vips}, kSrc4, kVrrpGroupV6), 0u);
  EXPECT_EQ(encodeVrrpAdvert(o.first(11), {10, 150, 10, vips}, kSrc4, kVrrpGroupV4), 0u);
  EXPECT_EQ(buildAdvertFrame(o.first(45), {10, 150, 10, vips}, kSrc4), 0u);
  EXPECT_EQ(encodeVrrpAdvert(o, {10, 150, 4095, vips}, kSrc4, kVrrpGroupV4), 12u);
}

TEST(VrrpCodec, BuildsTheArpFramesScapyBuilds) {
  Frame out(42);
  ASSERT_EQ(buildGratuitousArp(MutableBytes(out), kVmac4, kVip4), 42u);
  EXPECT_EQ(out, kGarp);
  ASSERT_EQ(buildArpReply(MutableBytes(out), kVmac4, kVip4, kHostMac, kHost4), 42u);
  EXPECT_EQ(out, kArpReply);
  EXPECT_EQ(buildGratuitousArp(MutableBytes(out).first(41), kVmac4, kVip4), 0u);
  EXPECT_EQ(buildGratuitousArp(MutableBytes(out), kVmac4, kVip6), 0u);
}

TEST(VrrpCodec, BuildsTheNeighborAdvertisementsScapyBuilds) {
  Frame out(86);
  ASSERT_EQ(buildUnsolicitedNa(MutableBytes(out), kVmac6, kLinkLocal1, kVip6, true), 86u);
  EXPECT_EQ(out, kUnsolicitedNa);
  ASSERT_EQ(buildSolicitedNa(MutableBytes(out), kVmac6, kVip6, false, kHost6, kHostMac), 86u);
  EXPECT_EQ(out, kSolicitedNa);
  EXPECT_EQ(buildUnsolicitedNa(MutableBytes(out).first(85), kVmac6, kLinkLocal1, kVip6, true), 0u);
}

TEST(VrrpCodec, AnswersDuplicateAddressDetectionAtAllNodes) {
  Frame out(86);
  ASSERT_EQ(buildSolicitedNa(MutableBytes(out), kVmac6, kVip6, false, IpAddr::v6From({}), kHostMac),
            86u);
  // Ethernet and IPv6 destination ff02::1, Solicited clear, Override set.
  EXPECT_EQ(out[0], std::byte(0x33));
  EXPECT_EQ(out[5], std::byte(0x01));
  EXPECT_EQ(out[38], std::byte(0xff));
  EXPECT_EQ(out[53], std::byte(0x01));
  EXPECT_EQ(out[58], std::byte(0x20));
}

TEST(VrrpCodec, ParsesTheIpv4Advert) {
  ReceivedFrame f = parseFrame(kAdvertV4);
  ASSERT_EQ(f.kind, FrameKind::kVrrpAdvert) << toString(f.error);
  EXPECT_EQ(f.src_mac, kVmac4);
  EXPECT_EQ(f.dst_mac, kVrrpGroupMacV4);
  EXPECT_EQ(f.src_ip, kSrc4);
  EXPECT_EQ(f.dst_ip, IpAddr::v4(224, 0, 0, 18));
  EXPECT_EQ(f.ttl, 255);
  EXPECT_EQ(f.advert.vrid, 10);
  EXPECT_EQ(f.advert.priority, 150);
  EXPECT_EQ(f.advert.interval_cs, 10);
  EXPECT_FALSE(f.advert.v6);
  ASSERT_EQ(f.advert.count, 1);
  EXPECT_EQ(f.advert.address(0), kVip4);
}

TEST(VrrpCodec, ParsesTheIpv6Advert) {
  ReceivedFrame f = parseFrame(kAdvertV6);
  ASSERT_EQ(f.kind, FrameKind::kVrrpAdvert) << toString(f.error);
  EXPECT_EQ(f.src_mac, kVmac6);
  EXPECT_EQ(f.src_ip, kLinkLocal1);
  EXPECT_EQ(f.ttl, 255);
  EXPECT_EQ(f.advert.vrid, 20);
  EXPECT_EQ(f.advert.priority, 100);
  EXPECT_EQ(f.advert.interval_cs, 100);
  EXPECT_TRUE(f.advert.v6);
  ASSERT_EQ(f.advert.count, 2);
  EXPECT_EQ(f.advert.address(0), kVip6);
  EXPECT_EQ(f.advert.address(1), kVip6LinkLocal);
}

TEST(VrrpCodec, ReadsKeepalivedsAdverts) {
  ReceivedFrame f = parseFrame(kKeepalivedV4);
  ASSERT_EQ(f.kind, FrameKind::kVrrpAdvert) << toString(f.error);
  EXPECT_EQ(f.src_ip, kSrc4);
  EXPECT_EQ(f.ttl, 255);
  EXPECT_EQ(f.advert.vrid, 10);
  EXPECT_EQ(f.advert.priority, 150);
  EXPECT_EQ(f.advert.interval_cs, 10);
  ASSERT_EQ(f.advert.count, 1);
  EXPECT_EQ(f.advert.address(0), kVip4);
  f = parseFrame(kKeepalivedV4Stop);
  ASSERT_EQ(f.kind, FrameKind::kVrrpAdvert) << toString(f.error);
  EXPECT_EQ(f.advert.priority, 0);

  const IpAddr fe80_2 = IpAddr::v6From({0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x02});
  f = parseFrame(kKeepalivedV6);
  ASSERT_EQ(f.kind, FrameKind::kVrrpAdvert) << toString(f.error);
  EXPECT_EQ(f.src_ip, fe80_2);
  EXPECT_EQ(f.dst_ip, kVrrpGroupV6);
  EXPECT_EQ(f.ttl, 255);
  EXPECT_EQ(f.advert.vrid, 20);
  EXPECT_EQ(f.advert.priority, 100);
  EXPECT_EQ(f.advert.interval_cs, 100);
  ASSERT_EQ(f.advert.count, 1);
  EXPECT_EQ(f.advert.address(0), kVip6);
  f = parseFrame(kKeepalivedV6Stop);
  ASSERT_EQ(f.kind, FrameKind::kVrrpAdvert) << toString(f.error);
  EXPECT_EQ(f.advert.priority, 0);
}

TEST(VrrpCodec, EncodesWhatKeepalivedSends) {
  const IpAddr v4[] = {kVip4};
  Frame out(20);
  ASSERT_EQ(encodeVrrpAdvert(MutableBytes(out), {10, 0, 10, v4}, kSrc4, kVrrpGroupV4), 12u);
  out.resize(12);
  EXPECT_EQ(out, Frame(kKeepalivedV4Stop.begin() + 34, kKeepalivedV4Stop.end()));
  const IpAddr v6[] = {kVip6};
  const IpAddr fe80_2 = IpAddr::v6From({0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x02});
  out.resize(24);
  ASSERT_EQ(encodeVrrpAdvert(MutableBytes(out), {20, 100, 100, v6}, fe80_2, kVrrpGroupV6), 24u);
  EXPECT_EQ(out, Frame(kKeepalivedV6.begin() + 54, kKeepalivedV6.end()));
}

TEST(VrrpCodec, ParsesAVlanTaggedAdvert) {
  Frame f(kAdvertV4.begin(), kAdvertV4.begin() + 12);
  for (uint8_t b : {0x81, 0x00, 0x00, 0x64}) {  // VLAN 100
    f.push_back(std::byte(b));
  }
  f.insert(f.end(), kAdvertV4.begin() + 12, kAdvertV4.end());
  ReceivedFrame r = parseFrame(f);
  EXPECT_EQ(r.kind, FrameKind::kVrrpAdvert);
  EXPECT_EQ(r.vlan, 100);
}

TEST(VrrpCodec, ReturnsAWrongTtlWithoutRefusingIt) {
  Frame f = kAdvertV4;
  f[22] = std::byte(64);
  f[24] = std::byte(0x8f);  // the IPv4 header checksum for TTL 64 (scapy)
  f[25] = std::byte(0x99);
  ReceivedFrame r = parseFrame(f);
  EXPECT_EQ(r.kind, FrameKind::kVrrpAdvert);
  EXPECT_EQ(r.ttl, 64);
}

TEST(VrrpCodec, ParsesARawSocketsIpv4Packet) {
  VrrpPacket p = parseVrrpPacket(Bytes(kAdvertV4).subspan(14), false);
  ASSERT_TRUE(p.ok()) << toString(p.error);
  EXPECT_EQ(p.src, kSrc4);
  EXPECT_EQ(p.advert.priority, 150);
  // An IPv6 raw socket gives the payload alone.
  AdvertResult a = parseVrrpAdvert(Bytes(kAdvertV6).subspan(54), kLinkLocal1, kVrrpGroupV6);
  ASSERT_TRUE(a.ok()) << toString(a.error);
  EXPECT_EQ(a.advert.count, 2);
  // The same bytes seen as sent to another address fail the checksum.
  EXPECT_EQ(parseVrrpAdvert(Bytes(kAdvertV6).subspan(54), kLinkLocal1, kVip6).error,
            VrrpError::kBadChecksum);
}

VrrpError advertError(Frame f) {
  ReceivedFrame r = parseFrame(f);
  EXPECT_EQ(r.kind, isMalformed(r.error) ? FrameKind::kMalformed : FrameKind::kOther);
  return r.error;
}

TEST(VrrpCodec, TellsWhyAnAdvertIsMalformed) {
  Frame f = kAdvertV4;
  f.resize(40);  // shorter than the IPv4 total length
  EXPECT_EQ(advertError(f), VrrpError::kBadIpv4Header);
  f = kAdvertV4;
  f.resize(10);
  EXPECT_EQ(advertError(f), VrrpError::kTruncated);

  f = kAdvertV4;
  f[34] = std::byte(0x21);  // version 2
  EXPECT_EQ(advertError(f), VrrpError::kBadVersion);
  f = kAdvertV4;
  f[34] = std::byte(0x32);  // type 2
  EXPECT_EQ(advertError(f), VrrpError::kBadType);
  f = kAdvertV4;
  f[41] ^= std::byte(1);  // checksum
  EXPECT_EQ(advertError(f), VrrpError::kBadChecksum);
  f = kAdvertV4;
  f[37] = std::byte(2);  // two addresses, one present
  EXPECT_EQ(advertError(f), VrrpError::kBadAddressCount);
  f = kAdvertV4;
  f[39] = std::byte(0);  // interval 0
  EXPECT_EQ(advertError(f), VrrpError::kZeroInterval);
  f = kAdvertV4;
  f[25] ^= std::byte(1);  // IPv4 header checksum
  EXPECT_EQ(advertError(f), VrrpError::kBadIpv4Checksum);
  f = kAdvertV4;
  f[14] = std::byte(0x44);  // IHL 4
  EXPECT_EQ(advertError(f), VrrpError::kBadIpv4Header);
  f = kAdvertV4;
  f[20] = std::byte(0x20);  // more fragments
  f[24] = std::byte(0xb0);  // header checksum for it
  EXPECT_EQ(advertError(f), VrrpError::kFragment);
  f = kAdvertV6;
  f[19] = std::byte(0x29);  // payload length past the frame
  EXPECT_EQ(advertError(f), VrrpError::kBadIpv6Header);
  f = kAdvertV6;
  f[80] ^= std::byte(0x80);  // an address bit
  EXPECT_EQ(advertError(f), VrrpError::kBadChecksum);

  EXPECT_EQ(parseVrrpPacket(kVrrpV2Packet, false).error, VrrpError::kBadVersion);
  EXPECT_EQ(parseVrrpAdvert(Bytes(kAdvertV4).subspan(34, 7), kSrc4, kVrrpGroupV4).error,
            VrrpError::kTruncated);
}

TEST(VrrpCodec, ParsesArpRequests) {
  ReceivedFrame r = parseFrame(kArpRequest);
  ASSERT_EQ(r.kind, FrameKind::kArpRequest) << toString(r.error);
  EXPECT_EQ(r.sender_mac, kHostMac);
  EXPECT_EQ(r.sender_ip, kHost4);
  EXPECT_EQ(r.target_ip, kVip4);
  // A gratuitous ARP is a request too (the other router's).
  r = parseFrame(kGarp);
  ASSERT_EQ(r.kind, FrameKind::kArpRequest);
  EXPECT_EQ(r.sender_ip, kVip4);
  EXPECT_EQ(r.target_ip, kVip4);
  EXPECT_EQ(r.sender_mac, kVmac4);

  r = parseFrame(kArpReply);
  EXPECT_EQ(r.kind, FrameKind::kOther);
  EXPECT_EQ(r.error, VrrpError::kOtherArp);
  Frame f = kArpRequest;
  f.resize(41);
  EXPECT_EQ(parseFrame(f).error, VrrpError::kTruncated);
}

TEST(VrrpCodec, ParsesNeighborSolicitations) {
  ReceivedFrame r = parseFrame(kSolicit);
  ASSERT_EQ(r.kind, FrameKind::kNeighborSolicit) << toString(r.error);
  EXPECT_EQ(r.src_ip, kHost6);
  EXPECT_EQ(r.target_ip, kVip6);
  EXPECT_TRUE(r.has_sender_mac);
  EXPECT_EQ(r.sender_mac, kHostMac);
  EXPECT_EQ(r.src_mac, kHostMac);

  Frame f = kSolicit;
  f[57] ^= std::byte(1);
  EXPECT_EQ(advertError(f), VrrpError::kBadIcmpv6Checksum);
  f = kSolicit;
  f[21] = std::byte(64);  // hop limit (not in the checksum)
  EXPECT_EQ(advertError(f), VrrpError::kBadHopLimit);
  f = kSolicit;
  f[79] = std::byte(0);  // option length 0; the checksum 0x1a25 becomes 0x1a26
  f[57] = std::byte(0x26);
  EXPECT_EQ(advertError(f), VrrpError::kBadNeighborSolicit);
}

TEST(VrrpCodec, SortsOtherTraffic) {
  // The unsolicited NA is ICMPv6 but no solicitation.
  EXPECT_EQ(advertError(kUnsolicitedNa), VrrpError::kOtherIcmpv6);
  Frame f = kAdvertV4;
  f[23] = std::byte(17);  // UDP (the header checksum is not looked at)
  EXPECT_EQ(advertError(f), VrrpError::kOtherProtocol);
  f = kAdvertV4;
  f[12] = std::byte(0x88);  // another ethertype
  f[13] = std::byte(0xcc);
  EXPECT_EQ(advertError(f), VrrpError::kOtherEtherType);
}

TEST(VrrpCodec, WritesAddresses) {
  EXPECT_EQ(toString(IpAddr::v4(10, 1, 0, 3)), "10.1.0.3");
  EXPECT_EQ(toString(kLinkLocal1), "fe80::1");
  EXPECT_EQ(toString(kVip6), "2001:db8:1::fe");
  EXPECT_EQ(toString(IpAddr::v6From({})), "::");
  EXPECT_EQ(toString(IpAddr::v6From({0, 1, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 3})),
            "1:0:0:2::3");
  EXPECT_EQ(toString(IpAddr::v6From({0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0})),
            "2001:db8:0:1::");
  EXPECT_EQ(toString(IpAddr::v6From({0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1})),
            "2001:db8:0:1:1:1:1:1");
}

TEST(VrrpCodec, DerivesTheLinkLocalAddressAsLinuxDoes) {
  // Linux gave the interface with MAC 02:00:00:00:00:02 fe80::ff:fe00:2 (it
  // solicited it for duplicate address detection in the keepalived capture).
  EXPECT_EQ(toString(eui64LinkLocal({0x02, 0, 0, 0, 0, 0x02})), "fe80::ff:fe00:2");
  EXPECT_EQ(toString(eui64LinkLocal({0x52, 0x54, 0x00, 0x12, 0x34, 0x56})),
            "fe80::5054:ff:fe12:3456");
}

TEST(VrrpCodec, OrdersPrimaryAddressesAsNumbers) {
  EXPECT_GT(compareAddresses(IpAddr::v4(10, 1, 0, 3), IpAddr::v4(10, 1, 0, 2)), 0);
  EXPECT_LT(compareAddresses(IpAddr::v4(9, 255, 255, 255), IpAddr::v4(10, 0, 0, 0)), 0);
  EXPECT_EQ(compareAddresses(kSrc4, kSrc4), 0);
  EXPECT_GT(compareAddresses(kVip6LinkLocal, kLinkLocal1), 0);
}

}  // namespace
}  // namespace mcgw::proto
