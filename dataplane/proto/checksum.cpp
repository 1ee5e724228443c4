#include "dataplane/proto/checksum.hpp"

namespace mcgw::proto {

uint32_t checksumAdd(Bytes b, uint32_t initial) {
  uint64_t sum = initial;
  const auto* p = reinterpret_cast<const uint8_t*>(b.data());
  size_t n = b.size();
  for (; n >= 2; p += 2, n -= 2) {
    sum += static_cast<uint32_t>(p[0] << 8 | p[1]);
  }
  if (n) {
    sum += static_cast<uint32_t>(p[0] << 8);
  }
  while (sum >> 32) {
    sum = (sum & 0xffffffff) + (sum >> 32);
  }
  // Keep the carry-free 32-bit form; checksumFold finishes.
  sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<uint32_t>(sum);
}

uint32_t pseudoHeaderV4(const uint8_t src[4], const uint8_t dst[4], uint8_t protocol,
                        uint16_t length) {
  uint32_t sum = static_cast<uint32_t>(src[0] << 8 | src[1]) + (src[2] << 8 | src[3]) +
                 (dst[0] << 8 | dst[1]) + (dst[2] << 8 | dst[3]);
  return sum + protocol + length;
}

uint32_t pseudoHeaderV6(const uint8_t src[16], const uint8_t dst[16], uint8_t next_header,
                        uint32_t length) {
  uint32_t sum = 0;
  for (int i = 0; i < 16; i += 2) {
    sum += static_cast<uint32_t>(src[i] << 8 | src[i + 1]) + (dst[i] << 8 | dst[i + 1]);
  }
  return sum + (length >> 16) + (length & 0xffff) + next_header;
}

}  // namespace mcgw::proto
