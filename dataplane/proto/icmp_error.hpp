// ICMP / ICMPv6 error messages about a packet the gateway cannot deliver
// (time exceeded, fragmentation needed / Packet Too Big).  IPv4 fragmentation
// is in fragment.hpp.  Standard library only; nothing here allocates.
//
// An error is a whole IP packet:
//   IPv4: | IPv4 header (20) | ICMP type code cksum | unused | next-hop MTU (16) | quote |
//   IPv6: | IPv6 header (40) | ICMPv6 type code cksum |          MTU (32)          | quote |
// The quote is the offending IP packet from its first byte, as much as fits
// in 576 (IPv4, RFC 1812 4.3.2.3) or 1280 (IPv6, RFC 4443 2.4(c)) bytes.
#pragma once

#include <cstddef>
#include <cstdint>

#include "dataplane/proto/bytes.hpp"

namespace mcgw::proto {

enum class IcmpErrorKind : uint8_t {
  kTimeExceeded,  // IPv4 type 11 code 0; ICMPv6 type 3 code 0
  kTooBig,        // IPv4 type 3 code 4 (RFC 1191); ICMPv6 type 2 (RFC 8201)
};

inline constexpr size_t kIcmpErrorMaxIpv4 = 576;   // RFC 1812 4.3.2.3
inline constexpr size_t kIcmpErrorMaxIpv6 = 1280;  // RFC 4443 2.4(c)
inline constexpr uint8_t kIcmpErrorTtl = 64;

// Whether an ICMP error may be sent about this IP packet (RFC 1812 4.3.2.7,
// RFC 4443 2.4(e)).  Not about an ICMP / ICMPv6 error (ICMPv6: behind any
// extension headers), nor about an ICMP packet whose type can't be read; not
// about a non-first fragment; not when the source is multicast, broadcast
// (IPv4: anything from 224.0.0.0 up, class E and 255.255.255.255 included),
// 0.0.0.0/8, 127.0.0.0/8, ::, ::1 or ff00::/8, nor when the destination is
// multicast or the limited broadcast.  (RFC 4443 2.4(e.3) would allow a
// Packet Too Big about a multicast destination; the gateway routes no
// multicast, so none is sent.)  A malformed packet (parseIpv4 / parseIpv6
// refuse it) → false.  `ip_packet` may run past the packet's own length
// (link padding).
bool mayAnswer(Bytes ip_packet, bool v6);

// Writes into `out` an IP packet (IPv4 or IPv6 header + ICMP) carrying the
// error about `offending` (the IP packet, from its first byte; bytes past its
// total / payload length are not quoted), from `source` (4 or 16 bytes) to
// the offending packet's source, TTL / hop limit 64, DSCP 0.
//   kTooBig: IPv4 type 3 code 4 with `mtu` in the low 16 bits of the second
//            word (RFC 1191); IPv6 type 2 with the 32-bit `mtu`.
//   kTimeExceeded: IPv4 type 11, IPv6 type 3, code 0.
// Quotes as much of the offending packet as fits in 576 / 1280 bytes total and
// in `out`.  ttl_restore: the gateway already decremented the offending
// packet's TTL / hop limit by this much; the quote shows it as the sender sent
// it (TTL += ttl_restore, modulo 256, and the quoted IPv4 header checksum
// updated incrementally, RFC 1624), `offending` itself is not modified.
// Returns the length of the IP packet written; 0 (nothing useful written)
// when mayAnswer() is false, source is null, or `out` cannot hold the headers
// and a quote of the offending IP header (IPv4: with its options; IPv6: the
// fixed 40 bytes) plus 8 bytes (RFC 792), or the whole offending packet when
// it is shorter than that.  `out` must not overlap `offending`.
size_t buildIcmpError(MutableBytes out, Bytes offending, bool v6, IcmpErrorKind kind, uint32_t mtu,
                      const uint8_t* source, uint8_t ttl_restore);

}  // namespace mcgw::proto
