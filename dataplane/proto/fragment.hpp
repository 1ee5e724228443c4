// IPv4 fragmentation (RFC 791) of a packet without DF into caller-provided
// buffers, for a packet bigger than the egress MTU.  Standard library only;
// nothing here allocates.
#pragma once

#include <cstddef>

#include "dataplane/proto/bytes.hpp"

namespace mcgw::proto {

// Number of fragments `packet` (an IPv4 packet; bytes past its total length
// are ignored) needs at `mtu`: 1 when it fits (DF or not); 0 when it can't be
// fragmented: malformed (parseIpv4 refuses it), or, when it does not fit: DF
// set, mtu < header + 8, options that can't be walked, or (being a fragment
// itself) data ending past byte 65535 of the datagram.  Later
// fragments can have a shorter header than the first (only copied options),
// so they can carry more data.
size_t ipv4FragmentCount(Bytes packet, size_t mtu);

// Writes fragment `index` (0-based) of `packet` at `mtu` into `out`:
//  * IP header: the first fragment keeps all options; later ones only the
//    options with the copied flag, padded with End of Option List to a
//    multiple of 4 bytes (RFC 791);
//  * data: the largest multiple of 8 bytes that fits in mtu (the last one:
//    what remains);
//  * fragment offset in 8-byte units, added to the packet's own offset when
//    it is itself a fragment; MF set on all but the last, which keeps the
//    packet's own MF; DF clear, the reserved bit kept; total length; header
//    checksum recomputed.
// When the packet fits (count 1), fragment 0 is the packet, copied as is.
// Returns the fragment's length; 0 when `out` is too small, index is out of
// range, or the packet can't be fragmented (ipv4FragmentCount() == 0).
// `out` must not overlap `packet`.
size_t writeIpv4Fragment(Bytes packet, size_t mtu, size_t index, MutableBytes out);

}  // namespace mcgw::proto
