// IPv4 packets built byte by byte for the proto tests (fragmentation, ICMP
// errors): a header with the fields a test sets, a counting-pattern payload
// and a correct header checksum.
#pragma once

#include <algorithm>
#include <cstring>
#include <vector>

#include "dataplane/proto/checksum.hpp"
#include "dataplane/proto/ipv4.hpp"

namespace mcgw::proto::test_packets {

using Packet = std::vector<uint8_t>;

inline Bytes span(const Packet& p) {
  return Bytes(reinterpret_cast<const std::byte*>(p.data()), p.size());
}

inline MutableBytes mspan(Packet& p) {
  return MutableBytes(reinterpret_cast<std::byte*>(p.data()), p.size());
}

inline uint16_t be16(const uint8_t* p) {
  return static_cast<uint16_t>(p[0] << 8 | p[1]);
}

inline bool ipv4HeaderChecksumOk(const uint8_t* ip) {
  const size_t hl = static_cast<size_t>(ip[0] & 0x0f) * 4;
  return internetChecksum(Bytes(reinterpret_cast<const std::byte*>(ip), hl)) == 0;
}

struct V4 {
  uint8_t src[4] = {10, 0, 0, 1};
  uint8_t dst[4] = {10, 1, 0, 1};
  uint8_t protocol = kIpProtoUdp;
  uint8_t ttl = 63;
  uint16_t frag_off = 0;  // flags | offset
  uint16_t id = 0x1234;
  Packet options;  // a multiple of 4 bytes
};

// An IPv4 packet of `total` bytes; the payload is a counting pattern
// (the first byte of an ICMP payload set by the caller).
inline Packet ipv4(const V4& v, size_t total) {
  const size_t hl = 20 + v.options.size();
  Packet p(total);
  p[0] = static_cast<uint8_t>(0x40 | hl / 4);
  p[2] = static_cast<uint8_t>(total >> 8);
  p[3] = static_cast<uint8_t>(total);
  p[4] = static_cast<uint8_t>(v.id >> 8);
  p[5] = static_cast<uint8_t>(v.id);
  p[6] = static_cast<uint8_t>(v.frag_off >> 8);
  p[7] = static_cast<uint8_t>(v.frag_off);
  p[8] = v.ttl;
  p[9] = v.protocol;
  std::memcpy(&p[12], v.src, 4);
  std::memcpy(&p[16], v.dst, 4);
  std::copy(v.options.begin(), v.options.end(), p.begin() + 20);
  for (size_t i = hl; i < total; ++i) {
    p[i] = static_cast<uint8_t>(i * 7 + 3);
  }
  const uint16_t c = internetChecksum(Bytes(reinterpret_cast<const std::byte*>(p.data()), hl));
  p[10] = static_cast<uint8_t>(c >> 8);
  p[11] = static_cast<uint8_t>(c);
  return p;
}

}  // namespace mcgw::proto::test_packets
