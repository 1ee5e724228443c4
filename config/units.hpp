// Rates and sizes as the config and the API spell them (tenants[].bandwidth,
// `mcgwctl policy set`): parsed with their bounds, errors as text.  No
// DPDK: the config checks use them (dataplane/policy/meter.hpp too).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "config/result.hpp"

namespace mcgw::config {

// Bounds of what parseRate accepts: 8 kbit/s .. 10 Tbit/s.
inline constexpr uint64_t kMinRateBits = 8'000;
inline constexpr uint64_t kMaxRateBits = 10'000'000'000'000;
// The line capacities (peers[].lines[].capacity) the shaper serves
// (dataplane/policy/shaper.hpp: its byte-cycle arithmetic within 64 bits).
inline constexpr uint64_t kMinCapacityBits = 1'000'000;
inline constexpr uint64_t kMaxCapacityBits = 250'000'000'000;
// Bounds of a shaped line's queue per priority, packets (a power of two).
inline constexpr uint32_t kMinShapeQueue = 16;
inline constexpr uint32_t kMaxShapeQueue = 16384;
// The queue a priority of a shaped line gets for `queue_ms` of traffic at
// `rate_bits` (one worker's share of the capacity) in 1500-byte packets,
// rounded up to a power of two within the bounds.
uint32_t shapeQueuePackets(uint64_t rate_bits, uint32_t queue_ms);
// Bounds of what parseSize accepts: 1 byte .. 4 GiB.
inline constexpr uint64_t kMaxSizeBytes = uint64_t{1} << 32;
// The smallest bucket: one maximum-size Ethernet frame (1500 bytes of IP and
// 18 of header and FCS), so that a large packet can be green at all.
inline constexpr uint64_t kMinBurstBytes = 1518;

// A rate in bits per second: a decimal number (digits, optionally a point and
// up to 9 more digits) and an optional SI multiplier k/K (10^3), M (10^6),
// G (10^9) or T (10^12), then optionally "bit/s" or "bps":
// "50M", "40G", "2.5G", "100k", "1000000", "10Gbps".  The value must be a
// whole number of bits per second within kMinRateBits..kMaxRateBits.  Errors
// say what is wrong: `rate "40X": unknown unit "X" (k, M, G or T, then
// optionally bit/s or bps)`.  Never throws.
Result<uint64_t, std::string> parseRate(std::string_view text);
// A size in bytes: a decimal number (as above) and an optional multiplier k/K
// (10^3), M (10^6), G (10^9), Ki (2^10), Mi (2^20) or Gi (2^30), then
// optionally "B": "1500", "64k", "1.5M", "256KiB", "1MiB".  A whole number
// of bytes within 1..kMaxSizeBytes.
Result<uint64_t, std::string> parseSize(std::string_view text);
// The shortest text parseRate reads back as `bits`: "40G", "2.5G", "1234".
std::string formatRate(uint64_t bits);

}  // namespace mcgw::config
