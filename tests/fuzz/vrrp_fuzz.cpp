// libFuzzer target: the VRRPv3 codec (dataplane/proto/vrrp.hpp) on any frame.
// Input: | flags (1) | bytes |
//   flags bit 0: the bytes are also read as an IPv6 (else IPv4) packet by
//   parseVrrpPacket; bit 1: the bytes, read as a bare VRRP message, get a
//   right checksum first (so that more inputs get past it).
// Checks: no access outside the spans (ASan: exact-size heap buffers), what
// parses re-encodes to something that parses the same, the answers built
// from a parsed ARP request / Neighbor Solicitation parse as what they are.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "dataplane/proto/checksum.hpp"
#include "dataplane/proto/vrrp.hpp"

using namespace mcgw::proto;

namespace {

void check(bool ok) {
  if (!ok) {
    __builtin_trap();
  }
}

Bytes bytes(const std::vector<uint8_t>& v) {
  return Bytes(reinterpret_cast<const std::byte*>(v.data()), v.size());
}
MutableBytes bytes(std::vector<uint8_t>& v) {
  return MutableBytes(reinterpret_cast<std::byte*>(v.data()), v.size());
}

// An advertisement that parsed: its fields are in range, and encoding them
// again gives a message that parses to the same fields.
void checkAdvert(const ParsedAdvert& a, const IpAddr& src, const IpAddr& dst) {
  check(a.v6 == src.v6);
  check(a.interval_cs >= 1 && a.interval_cs <= kVrrpMaxIntervalCs);
  check(a.addresses.size() == static_cast<size_t>(a.count) * (a.v6 ? 16 : 4));
  std::vector<IpAddr> addresses;
  for (size_t i = 0; i < a.count; ++i) {
    addresses.push_back(a.address(i));
  }
  std::vector<uint8_t> out(vrrpLength(a.v6, a.count));
  check(encodeVrrpAdvert(bytes(out), {a.vrid, a.priority, a.interval_cs, addresses}, src, dst) ==
        out.size());
  AdvertResult r = parseVrrpAdvert(bytes(out), src, dst);
  check(r.ok() && r.advert.vrid == a.vrid && r.advert.priority == a.priority &&
        r.advert.interval_cs == a.interval_cs && r.advert.count == a.count &&
        std::memcmp(r.advert.addresses.data(), a.addresses.data(), a.addresses.size()) == 0);
  if (src.v6 == dst.v6 && dst == (a.v6 ? kVrrpGroupV6 : kVrrpGroupV4)) {
    std::vector<uint8_t> frame(advertFrameLength(a.v6, a.count));
    check(buildAdvertFrame(bytes(frame), {a.vrid, a.priority, a.interval_cs, addresses}, src) ==
          frame.size());
    ReceivedFrame f = parseFrame(bytes(frame));
    check(f.kind == FrameKind::kVrrpAdvert && f.ttl == kVrrpTtl && f.src_ip == src &&
          f.src_mac == virtualMac(a.vrid, a.v6));
  }
}

void fuzzFrame(const std::vector<uint8_t>& in) {
  ReceivedFrame f = parseFrame(bytes(in));
  check(toString(f.error) != "unknown");
  check((f.kind == FrameKind::kMalformed) == isMalformed(f.error));
  switch (f.kind) {
    case FrameKind::kVrrpAdvert:
      check(f.error == VrrpError::kOk);
      checkAdvert(f.advert, f.src_ip, f.dst_ip);
      break;
    case FrameKind::kArpRequest: {
      std::vector<uint8_t> out(kArpFrameLength);
      check(buildArpReply(bytes(out), virtualMac(1, false), f.target_ip, f.sender_mac,
                          f.sender_ip) == out.size());
      ReceivedFrame r = parseFrame(bytes(out));
      check(r.kind == FrameKind::kOther && r.error == VrrpError::kOtherArp);
      check(buildGratuitousArp(bytes(out), virtualMac(1, false), f.target_ip) == out.size());
      r = parseFrame(bytes(out));
      check(r.kind == FrameKind::kArpRequest && r.sender_ip == f.target_ip);
      break;
    }
    case FrameKind::kNeighborSolicit: {
      check(f.ttl == kVrrpTtl && f.target_ip.v6);
      std::vector<uint8_t> out(kNeighborAdvertFrameLength);
      const Mac to = f.has_sender_mac ? f.sender_mac : f.src_mac;
      check(buildSolicitedNa(bytes(out), virtualMac(2, true), f.target_ip, true, f.src_ip, to) ==
            out.size());
      ReceivedFrame r = parseFrame(bytes(out));
      check(r.kind == FrameKind::kOther && r.error == VrrpError::kOtherIcmpv6);
      check(buildUnsolicitedNa(bytes(out), virtualMac(2, true), f.src_ip, f.target_ip, false) ==
            out.size());
      break;
    }
    case FrameKind::kOther:
    case FrameKind::kMalformed:
      check(f.error != VrrpError::kOk);
      break;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) {
    return 0;
  }
  const uint8_t flags = data[0];
  std::vector<uint8_t> in(data + 1, data + size);
  fuzzFrame(in);

  VrrpPacket p = parseVrrpPacket(bytes(in), flags & 1);
  if (p.ok()) {
    checkAdvert(p.advert, p.src, p.dst);
  }

  const bool v6 = flags & 1;
  const IpAddr src = v6 ? IpAddr::v6From({0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1})
                        : IpAddr::v4(10, 1, 0, 2);
  const IpAddr dst = v6 ? kVrrpGroupV6 : kVrrpGroupV4;
  if ((flags & 2) && in.size() >= 8) {
    in[6] = in[7] = 0;
    const uint16_t c = internetChecksum(
        bytes(in), v6 ? pseudoHeaderV6(src.bytes.data(), dst.bytes.data(), kIpProtoVrrp,
                                       static_cast<uint32_t>(in.size()))
                      : pseudoHeaderV4(src.bytes.data(), dst.bytes.data(), kIpProtoVrrp,
                                       static_cast<uint16_t>(in.size())));
    in[6] = static_cast<uint8_t>(c >> 8);
    in[7] = static_cast<uint8_t>(c);
  }
  AdvertResult a = parseVrrpAdvert(bytes(in), src, dst);
  if (a.ok()) {
    checkAdvert(a.advert, src, dst);
  }
  return 0;
}
