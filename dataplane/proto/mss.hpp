// TCP MSS clamping (RFC 9293 §3.7.1, RFC 6691): lower the MSS option of a SYN
// or SYN-ACK to what a tunnel's path MTU can carry, and optionally add one to
// a SYN that has none (a peer then assumes 536 / 1220, RFC 9293 §3.7.1).
//
// The packet is rewritten in place; the TCP checksum is updated incrementally
// (RFC 1624), so it stays right for an IPv4 first fragment too, whose
// checksum covers the whole segment.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "dataplane/proto/ipv4.hpp"
#include "dataplane/proto/ipv6.hpp"
#include "dataplane/proto/tcp.hpp"

namespace mcgw::proto {

#define MCGW_MSS_VERDICTS(X)                                                      \
  X(kNone, "none")                  /* not TCP, not a SYN, or a later fragment */ \
  X(kClamped, "clamped")            /* an MSS option above max_mss was lowered */ \
  X(kAlreadyBelow, "already-below") /* every MSS option was <= max_mss */         \
  X(kNoOption, "no-option")         /* a SYN without MSS option, none inserted */ \
  X(kInserted, "inserted")          /* an MSS option was inserted */              \
  X(kMalformed, "malformed")        /* a (claimed) TCP SYN that does not parse: kept */

enum class MssVerdict : uint8_t {
#define MCGW_X(name, text) name,
  MCGW_MSS_VERDICTS(MCGW_X)
#undef MCGW_X
};

constexpr std::string_view toString(MssVerdict v) {
  switch (v) {
#define MCGW_X(name, text) \
  case MssVerdict::name:   \
    return text;
    MCGW_MSS_VERDICTS(MCGW_X)
#undef MCGW_X
  }
  return "unknown";
}

// The pre-check the pipeline makes on every packet before clampMss(): false
// means "certainly not a TCP SYN to clamp" (a handful of loads and compares).
// IPv4: protocol TCP, fragment offset 0, and the SYN bit in the flags byte
// the IHL points at.  IPv6: next header TCP with SYN set, or a hop-by-hop,
// routing, destination-options header or a first fragment's header
// (clampMss walks those).
// ip: the IP packet from its first byte, len: its length in the buffer.
inline bool mayBeTcpSyn(const uint8_t* ip, size_t len, bool v6) {
  if (!v6) {
    if (len < sizeof(Ipv4Header) || ip[9] != kIpProtoTcp || ((ip[6] & 0x1f) | ip[7]) != 0) {
      return false;
    }
    const size_t flags = static_cast<size_t>(ip[0] & 0x0f) * 4 + 13;
    return flags < len && (ip[flags] & kTcpSyn) != 0;
  }
  if (len < sizeof(Ipv6Header) + 14) {
    return false;
  }
  const uint8_t next = ip[6];
  if (next == kIpProtoTcp) {
    return (ip[sizeof(Ipv6Header) + 13] & kTcpSyn) != 0;
  }
  if (next == kIpv6Fragment) {
    // Straight after the fixed header: a later fragment (offset != 0) is
    // never clamped, so it need not be walked.
    const uint8_t* f = ip + sizeof(Ipv6Header);
    return ((f[2] << 8 | f[3]) & 0xfff8) == 0;
  }
  return next == kIpv6HopByHop || next == kIpv6Routing || next == kIpv6DestinationOptions;
}

// Clamps the MSS option of a TCP segment with SYN set (SYN and SYN-ACK) to
// max_mss: only ever lowers it (every MSS option, if a SYN carries several).
//
// ip: the IP packet from its first byte (IPv4, or IPv6 when v6), *len its
// length in the buffer (the IP length field may be shorter: Ethernet
// padding); capacity: bytes writable from ip (>= *len), room for an insert.
//
// insert: a SYN without MSS option gets one (value min(max_mss, 536 / 1220):
// never more than the sender's silence meant, RFC 9293 3.7.1), placed first
// among the options, if the TCP header has room (a data offset of at most 56
// bytes before, so at most 60 after), capacity allows, the IP length stays
// <= 65535 and the packet is not a fragment (an IPv4 first fragment or an
// IPv6 fragment with offset 0 may be clamped, never grown).  The options and
// data behind it move 4 bytes on; IP total / payload length, the IPv4 header
// checksum, the TCP data offset and the TCP checksum (pseudo-header length
// included) are updated, and *len grows by 4.  Otherwise kNoOption.
//
// Safe on any bytes, with or without mayBeTcpSyn() first.  kMalformed, with
// the packet unchanged: fewer than 20 bytes of IPv4, an IPv4 header that
// claims TCP at fragment offset 0 and does not parse, an IPv6 header or
// extension header chain that does not parse, a TCP header cut short, or a
// SYN whose data offset is < 5 or beyond the segment, or whose options do
// not walk (an option of length 0 or 1, or overrunning the data offset, an
// MSS option of length != 4).  Options after an EOL are not looked at.
MssVerdict clampMss(uint8_t* ip, size_t* len, size_t capacity, bool v6, uint16_t max_mss,
                    bool insert);

}  // namespace mcgw::proto
