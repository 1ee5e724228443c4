// The Internet checksum (RFC 1071), pseudo-headers, and the incremental
// update of RFC 1624 for a field rewritten in place.
#pragma once

#include <cstdint>
#include <cstring>

#include "dataplane/proto/bytes.hpp"

namespace mcgw::proto {

// One's-complement sum of b as 16-bit big-endian words (an odd last byte is
// padded with zero), added to `initial`; folded once only (up to 17 bits), so
// that it can be added to further: checksumFold() finishes it.
uint32_t checksumAdd(Bytes b, uint32_t initial = 0);

// Folds a 32-bit sum to 16 bits.
constexpr uint16_t checksumFold(uint32_t sum) {
  sum = (sum & 0xffff) + (sum >> 16);
  sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<uint16_t>(sum);
}

// The checksum to store: the complement of the folded sum.
inline uint16_t internetChecksum(Bytes b, uint32_t initial = 0) {
  return static_cast<uint16_t>(~checksumFold(checksumAdd(b, initial)));
}

// Whether an IPv4 header of `hl` bytes (a multiple of 4) carries a valid
// checksum: its one's-complement sum is 0xffff.  The sum is taken over
// 32-bit words in the machine's byte order (RFC 1071 2(A), (B) and (C):
// byte order and word width do not change the folded result), a few cycles
// for 20 bytes.
inline bool ipv4HeaderChecksumOk(const uint8_t* h, size_t hl) {
  uint64_t sum = 0;
  if (hl == 20) {  // no options: five words, unrolled
    uint32_t w[5];
    std::memcpy(w, h, 20);
    sum = uint64_t{w[0]} + w[1] + w[2] + w[3] + w[4];
    hl = 0;
  }
  for (size_t i = 0; i + 4 <= hl; i += 4) {
    uint32_t w;
    std::memcpy(&w, h + i, 4);
    sum += w;
  }
  sum = (sum & 0xffffffff) + (sum >> 32);
  sum = (sum & 0xffffffff) + (sum >> 32);
  return checksumFold(static_cast<uint32_t>(sum)) == 0xffff;
}

// Sum of the IPv4 / IPv6 pseudo-header for an upper-layer checksum.
uint32_t pseudoHeaderV4(const uint8_t src[4], const uint8_t dst[4], uint8_t protocol,
                        uint16_t length);
uint32_t pseudoHeaderV6(const uint8_t src[16], const uint8_t dst[16], uint8_t next_header,
                        uint32_t length);

// RFC 1624 eqn. 3: the new checksum when a 16-bit word changes from
// old_value to new_value: HC' = ~(~HC + ~m + m').
constexpr uint16_t checksumUpdate16(uint16_t checksum, uint16_t old_value, uint16_t new_value) {
  uint32_t sum = static_cast<uint16_t>(~checksum) +
                 static_cast<uint32_t>(static_cast<uint16_t>(~old_value)) + new_value;
  return static_cast<uint16_t>(~checksumFold(sum));
}

}  // namespace mcgw::proto
