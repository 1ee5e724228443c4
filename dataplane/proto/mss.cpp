#include "dataplane/proto/mss.hpp"

#include <cstring>

#include "dataplane/proto/checksum.hpp"

namespace mcgw::proto {
namespace {

constexpr size_t kTcpMaxHeader = 60;
constexpr size_t kMssOptionLength = 4;

uint16_t load16(const uint8_t* p) {
  return static_cast<uint16_t>(p[0] << 8 | p[1]);
}

void store16(uint8_t* p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v >> 8);
  p[1] = static_cast<uint8_t>(v);
}

uint16_t swap16(uint16_t v) {
  return static_cast<uint16_t>(v << 8 | v >> 8);
}

}  // namespace

MssVerdict clampMss(uint8_t* ip, size_t* len, size_t capacity, bool v6, uint16_t max_mss,
                    bool insert) {
  const size_t n = *len;
  const Bytes packet(reinterpret_cast<const std::byte*>(ip), n);
  size_t tcp_at = 0;      // the TCP header, from ip
  size_t segment = 0;     // TCP header and data in this packet (up to the IP length)
  size_t length_at = 0;   // the IP total length (IPv4) / payload length (IPv6) field
  bool fragment = false;  // a first fragment: clamp, never insert
  if (!v6) {
    if (n < sizeof(Ipv4Header)) {
      return MssVerdict::kMalformed;
    }
    const auto* h = reinterpret_cast<const Ipv4Header*>(ip);
    if (h->protocol != kIpProtoTcp || h->fragmentOffset() != 0) {
      return MssVerdict::kNone;
    }
    const auto p = parseIpv4(packet);
    if (!p.ok()) {
      return MssVerdict::kMalformed;
    }
    fragment = h->moreFragments();
    tcp_at = p.header_length;
    segment = p.payload.size();
    length_at = 2;
  } else {
    const Ipv6Packet p = parseIpv6(packet);
    if (!p.ip.ok()) {
      return MssVerdict::kMalformed;
    }
    if (p.upper_protocol != kIpProtoTcp || !p.first_fragment) {
      return MssVerdict::kNone;
    }
    fragment = p.fragment;
    tcp_at = static_cast<size_t>(reinterpret_cast<const uint8_t*>(p.upper.data()) - ip);
    segment = p.upper.size();
    length_at = 4;
  }

  uint8_t* t = ip + tcp_at;
  if (segment < 14) {  // not even the flags byte
    return MssVerdict::kMalformed;
  }
  if (!(t[13] & kTcpSyn)) {
    return MssVerdict::kNone;
  }
  if (segment < sizeof(TcpHeader)) {
    return MssVerdict::kMalformed;
  }
  const size_t hl = static_cast<size_t>(t[12] >> 4) * 4;
  if (hl < sizeof(TcpHeader) || hl > segment) {
    return MssVerdict::kMalformed;
  }

  // Walk the whole option list before touching anything, so that a
  // malformed one leaves the packet as it was.  An MSS option takes 4 of at
  // most 40 bytes: at most 10 of them.
  size_t mss_at[(kTcpMaxHeader - sizeof(TcpHeader)) / kMssOptionLength];
  size_t count = 0;
  for (size_t i = sizeof(TcpHeader); i < hl;) {
    const uint8_t kind = t[i];
    if (kind == kTcpOptEol) {
      break;
    }
    if (kind == kTcpOptNop) {
      ++i;
      continue;
    }
    if (i + 1 >= hl) {
      return MssVerdict::kMalformed;
    }
    const size_t option_length = t[i + 1];
    if (option_length < 2 || option_length > hl - i) {
      return MssVerdict::kMalformed;
    }
    if (kind == kTcpOptMss) {
      if (option_length != kMssOptionLength) {
        return MssVerdict::kMalformed;
      }
      mss_at[count++] = i + 2;
    }
    i += option_length;
  }

  uint16_t checksum = load16(t + 16);
  if (count > 0) {
    bool lowered = false;
    for (size_t k = 0; k < count; ++k) {
      uint8_t* v = t + mss_at[k];
      const uint16_t old_value = load16(v);
      if (old_value <= max_mss) {
        continue;
      }
      store16(v, max_mss);
      // The checksum adds 16-bit words from the start of the TCP header.  A
      // value at an odd offset is the low byte of one word and the high byte
      // of the next: its contribution to the one's-complement sum is the
      // value byte-swapped (RFC 1071 §2(B)).
      if (mss_at[k] & 1) {
        checksum = checksumUpdate16(checksum, swap16(old_value), swap16(max_mss));
      } else {
        checksum = checksumUpdate16(checksum, old_value, max_mss);
      }
      lowered = true;
    }
    if (!lowered) {
      return MssVerdict::kAlreadyBelow;
    }
    store16(t + 16, checksum);
    return MssVerdict::kClamped;
  }

  const uint16_t ip_length = load16(ip + length_at);
  if (!insert || fragment || hl + kMssOptionLength > kTcpMaxHeader ||
      capacity < n + kMssOptionLength || ip_length > 0xffff - kMssOptionLength) {
    return MssVerdict::kNoOption;
  }
  // The new option goes first, before any EOL: everything behind it moves 4
  // bytes (two whole words, so their checksum sum is unchanged).
  uint8_t* options = t + sizeof(TcpHeader);
  std::memmove(options + kMssOptionLength, options, n - tcp_at - sizeof(TcpHeader));
  options[0] = kTcpOptMss;
  options[1] = kMssOptionLength;
  store16(options + 2, max_mss);
  const uint16_t old_offset_word = load16(t + 12);
  t[12] = static_cast<uint8_t>(t[12] + (kMssOptionLength / 4 << 4));
  checksum = checksumUpdate16(checksum, old_offset_word, load16(t + 12));
  checksum = checksumUpdate16(checksum, 0, kTcpOptMss << 8 | kMssOptionLength);
  checksum = checksumUpdate16(checksum, 0, max_mss);
  // The pseudo-header's TCP length (< 65536 here: the upper 16 bits of the
  // IPv6 32-bit length stay 0).
  checksum = checksumUpdate16(checksum, static_cast<uint16_t>(segment),
                              static_cast<uint16_t>(segment + kMssOptionLength));
  store16(t + 16, checksum);
  const auto new_ip_length = static_cast<uint16_t>(ip_length + kMssOptionLength);
  store16(ip + length_at, new_ip_length);
  if (!v6) {
    store16(ip + 10, checksumUpdate16(load16(ip + 10), ip_length, new_ip_length));
  }
  *len = n + kMssOptionLength;
  return MssVerdict::kInserted;
}

}  // namespace mcgw::proto
