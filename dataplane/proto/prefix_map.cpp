#include "dataplane/proto/prefix_map.hpp"

#include <algorithm>
#include <cstring>

#include "dataplane/proto/checksum.hpp"
#include "dataplane/proto/icmp.hpp"
#include "dataplane/proto/ipv4.hpp"
#include "dataplane/proto/ipv6.hpp"

namespace mcgw::proto {
namespace prefix_map_detail {
namespace {

uint32_t load32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) << 24 | static_cast<uint32_t>(p[1]) << 16 |
         static_cast<uint32_t>(p[2]) << 8 | p[3];
}

uint64_t load64(const uint8_t* p) {
  return static_cast<uint64_t>(load32(p)) << 32 | load32(p + 4);
}

// The checksum at `at` adjusted by delta.  UDP: 0 means "no checksum" and
// stays; a computed 0 is sent as 0xffff (RFC 768, RFC 8200 8.1).  Returns
// the old and new values for a checksum over these bytes (an ICMP error's).
struct Change {
  uint16_t before, after;
};
Change adjustAt(uint8_t* at, uint16_t delta, bool udp) {
  const uint16_t before = load16(at);
  if (udp && before == 0) {
    return {0, 0};
  }
  uint16_t after = checksumAdjust(before, delta);
  if (udp && after == 0) {
    after = 0xffff;
  }
  store16(at, after);
  return {before, after};
}

// Where the L4 checksum is in a transport header of `protocol`, and whether
// it is UDP's; -1: none this translation touches (ICMPv4 has no
// pseudo-header; anything else is not known).
int checksumOffset(uint8_t protocol, bool v6) {
  switch (protocol) {
    case kIpProtoTcp:
      return 16;
    case kIpProtoUdp:
      return 6;
    case kIpProtoIpv6Icmp:
      return v6 ? 2 : -1;
    default:
      return -1;
  }
}

// The transport checksum of a packet (or a quote) whose pseudo-header
// address changed by delta, when the bytes hold it.
Change adjustTransport(uint8_t* l4, size_t l4_len, uint8_t protocol, bool v6, uint16_t delta) {
  const int at = checksumOffset(protocol, v6);
  if (at < 0 || l4_len < static_cast<size_t>(at) + 2) {
    return {0, 0};
  }
  return adjustAt(l4 + at, delta, protocol == kIpProtoUdp);
}

}  // namespace

// The packet quoted in the ICMP / ICMPv6 error at icmp (icmp_len bytes of
// ICMP message in this packet): its address on the other side of `field`
// translated, when the table holds it, with the quoted checksums and the
// error's own checksum.  The quote may be cut short anywhere: what is not in
// it is not touched.
const PrefixRule* mapQuote(uint8_t* icmp, size_t icmp_len, bool v6, AddressField field,
                           const PrefixMapTable& table) {
  uint8_t* q = icmp + sizeof(IcmpHeader);
  const size_t q_len = icmp_len - sizeof(IcmpHeader);
  uint16_t icmp_sum = load16(icmp + 2);
  const PrefixRule* r = nullptr;
  uint8_t* l4 = nullptr;  // the quoted transport header, if the quote reaches it
  size_t l4_len = 0;
  uint8_t protocol = 0;
  if (!v6) {
    if (q_len < sizeof(Ipv4Header) || (q[0] >> 4) != 4) {
      return nullptr;
    }
    const size_t hl = static_cast<size_t>(q[0] & 0x0f) * 4;
    if (hl < sizeof(Ipv4Header) || hl > q_len) {
      return nullptr;
    }
    uint8_t* a = q + (field == AddressField::kSource ? 16 : 12);
    r = table.find4(a);
    if (!r) {
      return nullptr;
    }
    r->rewrite(a);
    icmp_sum = checksumAdjust(icmp_sum, r->delta);
    const Change c = adjustAt(q + 10, r->delta, false);
    icmp_sum = checksumUpdate16(icmp_sum, c.before, c.after);
    if ((load16(q + 6) & 0x1fff) == 0) {
      protocol = q[9];
      l4 = q + hl;
      l4_len = q_len - hl;
    }
  } else {
    if (q_len < sizeof(Ipv6Header) || (q[0] >> 4) != 6) {
      return nullptr;
    }
    uint8_t* a = q + (field == AddressField::kSource ? 24 : 8);
    r = table.find6(a);
    if (!r) {
      return nullptr;
    }
    r->rewrite(a);
    icmp_sum = checksumAdjust(icmp_sum, r->delta);
    // The extension headers as far as the quote holds them.
    uint8_t next = q[6];
    size_t at = sizeof(Ipv6Header);
    bool reached = false;
    for (int n = 0; n <= kMaxIpv6ExtensionHeaders; ++n) {
      if (next == kIpv6HopByHop || next == kIpv6Routing || next == kIpv6DestinationOptions) {
        if (at + 2 > q_len) {
          break;
        }
        const size_t ext_len = (static_cast<size_t>(q[at + 1]) + 1) * 8;
        next = q[at];
        at += ext_len;
      } else if (next == kIpv6Fragment) {
        if (at + 8 > q_len || (load16(q + at + 2) & 0xfff8) != 0) {
          break;  // a later fragment carries no transport header
        }
        next = q[at];
        at += 8;
      } else {
        reached = at <= q_len;
        break;
      }
    }
    if (reached) {
      protocol = next;
      l4 = q + at;
      l4_len = q_len - at;
    }
  }
  if (l4) {
    const Change c = adjustTransport(l4, l4_len, protocol, v6, r->delta);
    icmp_sum = checksumUpdate16(icmp_sum, c.before, c.after);
  }
  store16(icmp + 2, icmp_sum);
  return r;
}

MapResult mapPacket6(uint8_t* ip, size_t len, AddressField field, const PrefixMapTable& table) {
  MapResult res;
  const Ipv6Packet p = parseIpv6(Bytes(reinterpret_cast<const std::byte*>(ip), len));
  if (!p.ip.ok()) {
    // Extension headers that do not parse (too many, cut short): the fixed
    // header's address is still translated, so that a real address never
    // leaves the site (at the far site it would pass for a local host); the
    // transport checksum, which cannot be found, is left, and the receiver
    // drops the packet.
    if (len >= sizeof(Ipv6Header) && (ip[0] >> 4) == 6) {
      uint8_t* a = ip + (field == AddressField::kSource ? 8 : 24);
      if (const PrefixRule* r = table.find6(a)) {
        r->rewrite(a);
        res.outer = r;
      }
    }
    return res;
  }
  // A later fragment has no transport header (p.upper is empty).
  uint8_t* l4 =
      p.upper.empty() ? nullptr : ip + (reinterpret_cast<const uint8_t*>(p.upper.data()) - ip);
  const size_t l4_len = p.upper.size();
  uint8_t* a = ip + (field == AddressField::kSource ? 8 : 24);
  if (const PrefixRule* r = table.find6(a)) {
    r->rewrite(a);
    if (p.first_fragment) {
      adjustTransport(l4, l4_len, p.upper_protocol, true, r->delta);
    }
    res.outer = r;
  }
  if (p.upper_protocol == kIpProtoIpv6Icmp && p.first_fragment && l4_len >= sizeof(IcmpHeader) &&
      isIcmp6Error(l4[0])) {
    res.inner = mapQuote(l4, l4_len, true, field, table);
  }
  return res;
}

}  // namespace prefix_map_detail

using prefix_map_detail::load32;
using prefix_map_detail::load64;

PrefixRule PrefixRule::make(bool v6, const uint8_t* from, const uint8_t* to, uint8_t length,
                            uint16_t slot) {
  PrefixRule r;
  r.v6 = v6;
  const size_t n = v6 ? 16 : 4;
  r.length = static_cast<uint8_t>(std::min<size_t>(length, n * 8));
  for (size_t i = 0; i < n; ++i) {
    const size_t bits = std::min<size_t>(8, r.length > i * 8 ? r.length - i * 8 : 0);
    r.mask[i] = static_cast<uint8_t>(0xff00 >> bits);
    r.from[i] = from[i] & r.mask[i];
    r.to[i] = to[i] & r.mask[i];
  }
  // new - old = to - from word by word (the host bits are the same), in
  // one's complement: to + ~from.
  uint32_t sum = 0;
  for (size_t i = 0; i < n; i += 2) {
    sum += static_cast<uint32_t>(r.to[i] << 8 | r.to[i + 1]);
    sum += static_cast<uint16_t>(~(r.from[i] << 8 | r.from[i + 1]));
  }
  const uint16_t d = checksumFold(sum);
  r.delta = d == 0xffff ? 0 : d;  // one zero: adding 0 leaves every checksum as it is
  r.slot = slot;
  std::memcpy(&r.mask4, r.mask.data(), 4);
  std::memcpy(&r.to4, r.to.data(), 4);
  return r;
}

bool PrefixRule::contains(const uint8_t* address) const {
  const size_t n = v6 ? 16 : 4;
  for (size_t i = 0; i < n; ++i) {
    if ((address[i] & mask[i]) != from[i]) {
      return false;
    }
  }
  return true;
}

bool PrefixMapTable::assign(std::vector<PrefixRule> rules) {
  struct Build4 {
    uint32_t first, last;
    size_t rule;
  };
  std::vector<Build4> v4;
  std::vector<Range6> v6;
  for (size_t i = 0; i < rules.size(); ++i) {
    const PrefixRule& r = rules[i];
    if (!r.v6) {
      const uint32_t first = load32(r.from.data());
      const uint32_t host = r.length >= 32 ? 0 : ~uint32_t{0} >> r.length;
      v4.push_back({first, first | host, i});
    } else {
      const uint64_t hi = load64(r.from.data()), lo = load64(r.from.data() + 8);
      const uint64_t host_hi = r.length >= 64 ? 0 : ~uint64_t{0} >> r.length;
      const uint64_t host_lo = r.length >= 128  ? 0
                               : r.length <= 64 ? ~uint64_t{0}
                                                : ~uint64_t{0} >> (r.length - 64);
      v6.push_back({hi, lo, hi | host_hi, lo | host_lo, static_cast<uint16_t>(i)});
    }
  }
  std::sort(v4.begin(), v4.end(),
            [](const Build4& a, const Build4& b) { return a.first < b.first; });
  std::sort(v6.begin(), v6.end(), [](const Range6& a, const Range6& b) {
    return a.first_hi != b.first_hi ? a.first_hi < b.first_hi : a.first_lo < b.first_lo;
  });
  for (size_t i = 1; i < v4.size(); ++i) {
    if (v4[i].first <= v4[i - 1].last) {
      return false;
    }
  }
  for (size_t i = 1; i < v6.size(); ++i) {
    const Range6& a = v6[i - 1];
    const Range6& b = v6[i];
    if (b.first_hi < a.last_hi || (b.first_hi == a.last_hi && b.first_lo <= a.last_lo)) {
      return false;
    }
  }
  rules_ = std::move(rules);
  v4_.clear();
  for (const Build4& b : v4) {
    v4_.push_back({b.first, b.last, &rules_[b.rule]});
  }
  v6_ = std::move(v6);
  return true;
}

const PrefixRule* PrefixMapTable::find6(const uint8_t* address) const {
  const uint64_t ahi = load64(address), alo = load64(address + 8);
  size_t lo = 0, hi = v6_.size();
  while (lo < hi) {
    const size_t mid = (lo + hi) / 2;
    const Range6& r = v6_[mid];
    if (r.first_hi < ahi || (r.first_hi == ahi && r.first_lo <= alo)) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  if (lo == 0) {
    return nullptr;
  }
  const Range6& r = v6_[lo - 1];
  if (ahi > r.last_hi || (ahi == r.last_hi && alo > r.last_lo)) {
    return nullptr;
  }
  return &rules_[r.rule];
}

}  // namespace mcgw::proto
