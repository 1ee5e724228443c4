// IPv6 (RFC 8200) and the walk over its extension headers.
//
//   +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//   |Version| Traffic Class |           Flow Label                  |
//   |         Payload Length        |  Next Header  |   Hop Limit   |
//   |                 Source Address (16)                           |
//   |               Destination Address (16)                        |
//   extension headers: Next Header (1) | Hdr Ext Len (1, 8-octet units
//   beyond the first 8) | ...; Fragment: Next Header | 0 | Offset+M | Id
#pragma once

#include "dataplane/proto/bytes.hpp"

namespace mcgw::proto {

inline constexpr uint8_t kIpv6HopByHop = 0;
inline constexpr uint8_t kIpv6Routing = 43;
inline constexpr uint8_t kIpv6Fragment = 44;
inline constexpr uint8_t kIpv6DestinationOptions = 60;
inline constexpr uint8_t kIpv6NoNextHeader = 59;
inline constexpr int kMaxIpv6ExtensionHeaders = 8;

struct Ipv6Header {
  Be32 ver_tc_flow;
  Be16 payload_length;
  uint8_t next_header;
  uint8_t hop_limit;
  uint8_t src[16];
  uint8_t dst[16];

  uint8_t version() const { return ver_tc_flow.b[0] >> 4; }
  uint8_t trafficClass() const { return static_cast<uint8_t>(ver_tc_flow.get() >> 20); }
  uint8_t dscp() const { return trafficClass() >> 2; }
  uint8_t ecn() const { return trafficClass() & 0x03; }
};
static_assert(sizeof(Ipv6Header) == 40);

struct Ipv6Packet {
  Parsed<Ipv6Header> ip;       // payload: everything after the fixed header
  uint8_t upper_protocol = 0;  // after the extension headers (TCP, UDP, ICMPv6, ...)
  Bytes upper;                 // the upper-layer header and data; empty in a later fragment
  bool fragment = false;       // a fragment (an atomic fragment is not one)
  bool first_fragment = true;  // fragment offset 0 (or no Fragment header)
};

// Parses the fixed header and walks hop-by-hop, routing, fragment and
// destination-options headers (at most kMaxIpv6ExtensionHeaders).
inline Ipv6Packet parseIpv6(Bytes b) {
  Ipv6Packet p;
  const auto* h = headerAt<Ipv6Header>(b);
  if (!h) {
    p.ip.error = ParseError::kTruncated;
    return p;
  }
  if (h->version() != 6) {
    p.ip.error = ParseError::kBadVersion;
    return p;
  }
  size_t payload = h->payload_length.get();
  if (sizeof(Ipv6Header) + payload > b.size()) {
    p.ip.error = ParseError::kBadTotalLength;
    return p;
  }
  p.ip = {h, sizeof(Ipv6Header), b.subspan(sizeof(Ipv6Header), payload), ParseError::kOk};
  Bytes rest = p.ip.payload;
  uint8_t next = h->next_header;
  for (int n = 0;; ++n) {
    bool ext = next == kIpv6HopByHop || next == kIpv6Routing || next == kIpv6Fragment ||
               next == kIpv6DestinationOptions;
    if (!ext) {
      break;
    }
    if (n == kMaxIpv6ExtensionHeaders) {
      p.ip.error = ParseError::kTooManyExtensionHeaders;
      return p;
    }
    if (rest.size() < 8) {
      p.ip.error = ParseError::kTruncated;
      return p;
    }
    const auto* e = reinterpret_cast<const uint8_t*>(rest.data());
    size_t len = next == kIpv6Fragment ? 8 : (static_cast<size_t>(e[1]) + 1) * 8;
    if (len > rest.size()) {
      p.ip.error = ParseError::kTruncated;
      return p;
    }
    if (next == kIpv6Fragment) {
      const bool first = ((e[2] << 8 | e[3]) & 0xfff8) == 0;
      const bool more = e[3] & 0x01;
      // An atomic fragment (offset 0, M clear) is a whole packet (RFC 8200 §4.5).
      p.fragment = !first || more;
      p.first_fragment = first;
      if (!first) {
        // What follows is fragment data, not headers.
        p.upper_protocol = e[0];
        p.upper = {};
        return p;
      }
    }
    next = e[0];
    rest = rest.subspan(len);
  }
  p.upper_protocol = next;
  p.upper = rest;
  return p;
}

}  // namespace mcgw::proto
