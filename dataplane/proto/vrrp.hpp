// VRRPv3 (RFC 9568) advertisements, and the frames a VRRP router sends and
// reads on a LAN port's kernel side: ARP (RFC 826, RFC 5227 gratuitous form)
// and IPv6 Neighbor Discovery (RFC 4861) for the virtual addresses.
//
// The VRRP packet (RFC 9568 §5.1), after an IPv4 header (protocol 112, TTL
// 255, to 224.0.0.18 in multicast) or an IPv6 header (next header 112, hop
// limit 255, to ff02::12):
//
//    0                   1                   2                   3
//    0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//   +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//   |Version| Type  | Virtual Rtr ID|   Priority    |Count IPvX Addr|
//   +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//   |(rsvd) |     Max Adver Int     |          Checksum             |
//   +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//   |                      IPvX Address(es)                         |
//   |               (Count × 4 bytes IPv4, × 16 bytes IPv6)         |
//   +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// Version 3, Type 1 (advertisement); Max Adver Int in centiseconds (12
// bits); the checksum is the Internet checksum of the VRRP message with the
// IPv4 / IPv6 pseudo-header (source, destination, protocol 112, VRRP length)
// in front (RFC 9568 §5.2.8) — for IPv4 too, unlike VRRPv2.
//
// ARP for IPv4 over Ethernet (28 bytes after the Ethernet header):
//   | htype 1 (2) | ptype 0x0800 (2) | hlen 6 | plen 4 | oper (2): 1 request, 2 reply |
//   | sender MAC (6) | sender IP (4) | target MAC (6) | target IP (4) |
// Neighbor Solicitation / Advertisement (ICMPv6 135 / 136):
//   | type | code 0 | checksum (2) | NA: R S O flags + 29 reserved bits; NS: reserved (4) |
//   | target address (16) | options: type (1) | length in 8-byte units (1) | ... |
//   option 1: source link-layer address (NS), option 2: target link-layer address (NA).
//
// Standard library only.  Parsers read spans and never allocate; builders
// write into a caller's buffer and return the bytes written (0: the buffer is
// too small or the input is invalid).  Frames are written without Ethernet
// padding (the kernel or NIC pads short frames).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

#include "dataplane/proto/bytes.hpp"

namespace mcgw::proto {

inline constexpr uint8_t kIpProtoVrrp = 112;
inline constexpr uint8_t kVrrpVersion = 3;
inline constexpr uint8_t kVrrpTypeAdvertisement = 1;
// The TTL / hop limit every VRRP packet is sent with and must arrive with
// (RFC 9568 §5.1.1.3 / §5.1.2.3); also the hop limit of ND messages.
inline constexpr uint8_t kVrrpTtl = 255;
// Max Adver Int is 12 bits of centiseconds.
inline constexpr uint16_t kVrrpMaxIntervalCs = 0x0fff;
// IPv4 / IPv6 DSCP class selector 6 (internetwork control), as routers send
// their control traffic (keepalived does the same for VRRP).
inline constexpr uint8_t kVrrpTos = 0xc0;

using Mac = std::array<uint8_t, 6>;  // the same type as engine::Mac

// An IPv4 or IPv6 address in network byte order; IPv4 in the first 4 bytes,
// the other 12 zero.
struct IpAddr {
  bool v6 = false;
  std::array<uint8_t, 16> bytes{};

  static constexpr IpAddr v4(uint8_t a, uint8_t b, uint8_t c, uint8_t d) {
    IpAddr r;
    r.bytes[0] = a;
    r.bytes[1] = b;
    r.bytes[2] = c;
    r.bytes[3] = d;
    return r;
  }
  static constexpr IpAddr v6From(const std::array<uint8_t, 16>& b) {
    IpAddr r;
    r.v6 = true;
    r.bytes = b;
    return r;
  }
  // From 4 or 16 bytes in network byte order.
  static IpAddr fromBytes(bool v6, const uint8_t* p);
  size_t size() const { return v6 ? 16 : 4; }
  bool operator==(const IpAddr&) const = default;
};

// "10.1.0.3", "fe80::1" (RFC 5952: lower case, longest zero run as "::").
std::string toString(const IpAddr& a);

// RFC 9568 §7.2's order of primary addresses for an equal-priority tie:
// IPv4 as unsigned 32-bit numbers, IPv6 bytewise (the same as numerically).
// Negative, 0, positive as a < b, a == b, a > b.  Both of one family.
int compareAddresses(const IpAddr& a, const IpAddr& b);

// 00-00-5E-00-01-{VRID} (IPv4) / 00-00-5E-00-02-{VRID} (IPv6), RFC 9568 §7.3.
constexpr Mac virtualMac(uint8_t vrid, bool ipv6) {
  return Mac{0x00, 0x00, 0x5e, 0x00, static_cast<uint8_t>(ipv6 ? 0x02 : 0x01), vrid};
}

// The link-local address fe80::/64 with the modified EUI-64 interface
// identifier of `mac` (RFC 4291 appendix A: U/L bit flipped, ff:fe in the
// middle), as Linux gives an interface: 02:00:00:00:00:02 → fe80::ff:fe00:2.
// The default source of a multicast IPv6 group's advertisements.
constexpr IpAddr eui64LinkLocal(const Mac& mac) {
  IpAddr r;
  r.v6 = true;
  r.bytes = {
      0xfe,   0x80,   0,    0,    0,      0,      0,     0, static_cast<uint8_t>(mac[0] ^ 0x02),
      mac[1], mac[2], 0xff, 0xfe, mac[3], mac[4], mac[5]};
  return r;
}

// 224.0.0.18 / ff02::12 and their Ethernet group addresses (RFC 1112 /
// RFC 2464: 01:00:5e + low 23 bits / 33:33 + low 32 bits).
inline constexpr IpAddr kVrrpGroupV4 = IpAddr::v4(224, 0, 0, 18);
inline constexpr IpAddr kVrrpGroupV6 =
    IpAddr::v6From({0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x12});
inline constexpr Mac kVrrpGroupMacV4 = {0x01, 0x00, 0x5e, 0x00, 0x00, 0x12};
inline constexpr Mac kVrrpGroupMacV6 = {0x33, 0x33, 0x00, 0x00, 0x00, 0x12};
// ff02::1, all nodes, where an unsolicited NA goes.
inline constexpr IpAddr kAllNodesV6 =
    IpAddr::v6From({0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01});
inline constexpr Mac kAllNodesMac = {0x33, 0x33, 0x00, 0x00, 0x00, 0x01};
inline constexpr Mac kBroadcastMac = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};

struct VrrpHeader {
  uint8_t version_type;  // version (4) | type (4)
  uint8_t vrid;
  uint8_t priority;
  uint8_t count;       // Count IPvX Addr
  Be16 rsvd_interval;  // reserved (4) | Max Adver Int in centiseconds (12)
  Be16 checksum;

  uint8_t version() const { return version_type >> 4; }
  uint8_t type() const { return version_type & 0x0f; }
  uint16_t interval() const { return rsvd_interval.get() & kVrrpMaxIntervalCs; }
};
static_assert(sizeof(VrrpHeader) == 8);

// Why a packet or frame was not (or not usably) read.  One list: the enum,
// its names (counter keys).  The first group is "not for VRRP" (FrameKind
// kOther), the second malformed (FrameKind kMalformed; isMalformed()).
#define MCGW_VRRP_ERRORS(X)                                      \
  X(kOk, "ok")                                                   \
  X(kOtherEtherType, "other ethertype")                          \
  X(kOtherProtocol, "other IP protocol")                         \
  X(kOtherArp, "ARP other than an IPv4 request")                 \
  X(kOtherIcmpv6, "ICMPv6 other than a neighbor solicitation")   \
  X(kFragment, "IP fragment")                                    \
  X(kTruncated, "truncated")                                     \
  X(kBadVersion, "bad version")                                  \
  X(kBadType, "bad type")                                        \
  X(kBadChecksum, "bad checksum")                                \
  X(kBadAddressCount, "address count does not match the length") \
  X(kZeroInterval, "zero advertisement interval")                \
  X(kBadIpv4Header, "bad IPv4 header")                           \
  X(kBadIpv4Checksum, "bad IPv4 header checksum")                \
  X(kBadIpv6Header, "bad IPv6 header")                           \
  X(kBadNeighborSolicit, "malformed neighbor solicitation")      \
  X(kBadIcmpv6Checksum, "bad ICMPv6 checksum")                   \
  X(kBadHopLimit, "neighbor solicitation with a hop limit other than 255")

enum class VrrpError : uint8_t {
#define MCGW_X(name, text) name,
  MCGW_VRRP_ERRORS(MCGW_X)
#undef MCGW_X
};

constexpr std::string_view toString(VrrpError e) {
  switch (e) {
#define MCGW_X(name, text) \
  case VrrpError::name:    \
    return text;
    MCGW_VRRP_ERRORS(MCGW_X)
#undef MCGW_X
  }
  return "unknown";
}

constexpr bool isMalformed(VrrpError e) {
  return e >= VrrpError::kTruncated;
}

// An advertisement to encode.
struct VrrpAdvertisement {
  uint8_t vrid = 0;
  uint8_t priority = 0;               // 0: the Active stops (RFC 9568 §5.2.4)
  uint16_t interval_cs = 0;           // 1..4095
  std::span<const IpAddr> addresses;  // the virtual addresses, all of one family
};

// An advertisement as parsed.  `addresses` points into the parsed buffer.
struct ParsedAdvert {
  uint8_t vrid = 0;
  uint8_t priority = 0;
  uint16_t interval_cs = 0;
  uint8_t count = 0;
  bool v6 = false;
  Bytes addresses;  // count × 4 or 16 bytes

  IpAddr address(size_t i) const;  // i < count
};

// Bytes of a VRRP message with `count` addresses.
constexpr size_t vrrpLength(bool v6, size_t count) {
  return sizeof(VrrpHeader) + count * (v6 ? 16 : 4);
}

// Writes the VRRP message (header, addresses, checksum over the
// pseudo-header of src → dst) into out: what a raw IP socket sends in unicast
// mode.  0 if out is too small, an interval is 0 or above 4095, there are
// more than 255 addresses, or the addresses, src and dst are not all of one
// family.
size_t encodeVrrpAdvert(MutableBytes out, const VrrpAdvertisement& a, const IpAddr& src,
                        const IpAddr& dst);

// Reads a VRRP message (`b` is exactly the IP payload) sent src → dst.
// Errors: kTruncated (shorter than the header), kBadVersion (not 3),
// kBadType (not 1), kBadAddressCount (the length is not header + count
// addresses of src's family), kZeroInterval, kBadChecksum.  A count of 0 is
// accepted (RFC 9568 asks for at least one; the state machine does not need
// them).  Whether the VRID, priority and addresses suit the group is the
// caller's business.
struct AdvertResult {
  ParsedAdvert advert;
  VrrpError error = VrrpError::kOk;
  bool ok() const { return error == VrrpError::kOk; }
};
AdvertResult parseVrrpAdvert(Bytes b, const IpAddr& src, const IpAddr& dst);

// A VRRP message in its IP packet (what an IPv4 raw socket reads; an IPv6 raw
// socket gives the payload only: use parseVrrpAdvert with the addresses from
// the socket).  IPv4: header length / total length / checksum checked
// (kBadIpv4Header, kBadIpv4Checksum), fragments refused (kFragment); IPv6:
// extension headers walked (kBadIpv6Header when they do not parse).  Not
// protocol 112 → kOtherProtocol.  The TTL / hop limit is returned, not
// checked: the caller counts a TTL other than 255.
struct VrrpPacket {
  IpAddr src, dst;
  uint8_t ttl = 0;  // IPv4 TTL / IPv6 hop limit
  ParsedAdvert advert;
  VrrpError error = VrrpError::kOk;
  bool ok() const { return error == VrrpError::kOk; }
};
VrrpPacket parseVrrpPacket(Bytes ip_packet, bool v6);

// What an AF_PACKET socket on the port's kernel side reads, sorted.
enum class FrameKind : uint8_t {
  kVrrpAdvert,       // a well-formed VRRPv3 advertisement (TTL not checked)
  kArpRequest,       // an ARP request, IPv4 over Ethernet (gratuitous ones included)
  kNeighborSolicit,  // a valid Neighbor Solicitation (RFC 4861 §7.1.1)
  kOther,            // not for VRRP; `error` says what it is
  kMalformed,        // one of the above, broken; `error` says how
};

struct ReceivedFrame {
  FrameKind kind = FrameKind::kOther;
  VrrpError error = VrrpError::kOk;
  Mac src_mac{};  // the Ethernet source
  Mac dst_mac{};
  uint16_t vlan = 0;  // outermost VLAN ID, 0 if untagged
  // kVrrpAdvert and kNeighborSolicit: the IP header's addresses and TTL /
  // hop limit (an NS arrives only with 255, anything else is malformed).
  IpAddr src_ip, dst_ip;
  uint8_t ttl = 0;
  // kVrrpAdvert: the advertisement (points into the frame).
  ParsedAdvert advert;
  // kArpRequest: the sender's MAC and IP (sender_ip; 0.0.0.0 in an RFC 5227
  // probe) and the target_ip.
  // kNeighborSolicit: target_ip is the target address; sender_mac the source
  // link-layer address option if has_sender_mac (never with src_ip ::).
  Mac sender_mac{};
  bool has_sender_mac = false;
  IpAddr sender_ip, target_ip;
};

// Parses an Ethernet frame (up to two VLAN tags).  Payload bytes past the
// IP length (Ethernet padding) are ignored.
ReceivedFrame parseFrame(Bytes frame);

// Frame lengths (no padding).
inline constexpr size_t kArpFrameLength = 14 + 28;
inline constexpr size_t kNeighborAdvertFrameLength = 14 + 40 + 24 + 8;
constexpr size_t advertFrameLength(bool v6, size_t count) {
  return 14 + (v6 ? 40 : 20) + vrrpLength(v6, count);
}

// A multicast advertisement as a whole frame: Ethernet from the virtual MAC
// of (a.vrid, family) to 01:00:5e:00:00:12 / 33:33:00:00:00:12; IPv4 (TTL
// 255, DSCP CS6, no DF, id 0, header checksum) or IPv6 (hop limit 255,
// traffic class CS6) from `src` to 224.0.0.18 / ff02::12; the VRRP message.
size_t buildAdvertFrame(MutableBytes out, const VrrpAdvertisement& a, const IpAddr& src);

// A gratuitous ARP in its request form (RFC 5227 §3, what hosts and switches
// expect on a VRRP takeover): broadcast, from `vmac`, sender = target = vip,
// target MAC zero.
size_t buildGratuitousArp(MutableBytes out, const Mac& vmac, const IpAddr& vip);

// The answer to an ARP request for `vip`: from `vmac` to the requester.
size_t buildArpReply(MutableBytes out, const Mac& vmac, const IpAddr& vip, const Mac& requester_mac,
                     const IpAddr& requester_ip);

// An unsolicited Neighbor Advertisement for `target` (RFC 4861 §7.2.6):
// Ethernet vmac → 33:33:00:00:00:01, IPv6 `src` → ff02::1, hop limit 255;
// Override set, Solicited clear, Router as `router`; target link-layer
// address option = vmac; checksum.
size_t buildUnsolicitedNa(MutableBytes out, const Mac& vmac, const IpAddr& src,
                          const IpAddr& target, bool router);

// The answer to a Neighbor Solicitation for `target` (RFC 4861 §7.2.4):
// from target (the virtual address) and vmac, Solicited and Override set, to
// the solicitor's address and `solicitor_mac` (its source link-layer option,
// or the frame's source).  A solicitor of :: (duplicate address detection)
// is answered at ff02::1 / 33:33:00:00:00:01 with Solicited clear.
size_t buildSolicitedNa(MutableBytes out, const Mac& vmac, const IpAddr& target, bool router,
                        const IpAddr& solicitor_ip, const Mac& solicitor_mac);

}  // namespace mcgw::proto
