// 1:1 stateless prefix translation for the address plan's mapped ranges: an
// address inside a range `from/len` becomes the same host bits under `to/len`
// (IPv4 and IPv6; RFC 6296 is the reference for IPv6 prefix translation).
//
// Checksums are updated incrementally (RFC 1624 eqn. 3).  Because only the
// prefix bits change and the host bits stay, the one's-complement difference
// new - old of the address words is the same for every address of a range:
// it is computed once per rule (PrefixRule::delta).  Unlike RFC 6296 §3.2 no
// "checksum-neutral" adjustment word is written into the address: the host
// bits stay exactly as the host has them (a /16 maps a host to the same
// host bits), and the transport checksums are updated instead.
//
// What is rewritten in the IP packet (mapPacket):
//   * the packet's own address (the source or the destination, `field`);
//   * the IPv4 header checksum;
//   * the L4 checksum whose pseudo-header holds the address: TCP, UDP (an
//     IPv4 or IPv6 UDP checksum of 0 means "none" and stays 0; a result of 0
//     is written 0xffff, RFC 768) and ICMPv6; ICMPv4 has no pseudo-header;
//     only in a first fragment (or no fragment): a later fragment carries
//     no L4 header, its checksum is in the first one;
//   * in an ICMP / ICMPv6 error, the quoted packet's address on the other
//     side (the error's source is the quoted packet's destination): its
//     address if the table holds it, the quoted IPv4 header checksum, the
//     quoted TCP (+16), UDP (+6, unless 0) or ICMPv6 (+2) checksum when the
//     quote holds it, and the error's own ICMP checksum over every quoted
//     byte changed.
// Standard library only; nothing here allocates except building a table.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "dataplane/proto/icmp.hpp"
#include "dataplane/proto/ipv4.hpp"

namespace mcgw::proto {

// One direction of one mapped range: from/length → to/length.
struct PrefixRule {
  std::array<uint8_t, 16> from{};  // network address, host bits zero (IPv4: the first 4 bytes)
  std::array<uint8_t, 16> to{};
  std::array<uint8_t, 16> mask{};  // the prefix bits
  uint8_t length = 0;
  bool v6 = false;
  // The one's-complement sum of (to - from) over the address's 16-bit words.
  uint16_t delta = 0;
  // The caller's name for the range (a counter slot).
  uint16_t slot = 0;
  // IPv4: mask and to as the 4 bytes lie in memory, for rewrite4().
  uint32_t mask4 = 0, to4 = 0;

  // A rule from/length → to/length (network addresses are masked here).
  static PrefixRule make(bool v6, const uint8_t* from, const uint8_t* to, uint8_t length,
                         uint16_t slot);
  // Whether the address (4 or 16 bytes) lies in from/length.
  bool contains(const uint8_t* address) const;
  // from/length → to/length in place (the caller checked contains()).
  void rewrite(uint8_t* address) const {
    const size_t n = v6 ? 16 : 4;
    for (size_t i = 0; i < n; ++i) {
      address[i] = static_cast<uint8_t>((address[i] & ~mask[i]) | to[i]);
    }
  }
  void rewrite4(uint8_t* address) const {
    uint32_t a;
    std::memcpy(&a, address, 4);
    a = (a & ~mask4) | to4;
    std::memcpy(address, &a, 4);
  }
};

// RFC 1624 eqn. 3 with the difference m' - m given as a one's-complement sum.
constexpr uint16_t checksumAdjust(uint16_t checksum, uint16_t delta) {
  uint32_t sum = static_cast<uint16_t>(~checksum) + static_cast<uint32_t>(delta);
  sum = (sum & 0xffff) + (sum >> 16);
  sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<uint16_t>(~sum);
}

// The rules of one direction, looked up by binary search over their sorted
// disjoint `from` ranges.  Built once (it allocates), then read only.
class PrefixMapTable {
 public:
  PrefixMapTable() = default;
  // Moved, never copied: the ranges point at the rules.
  PrefixMapTable(const PrefixMapTable&) = delete;
  PrefixMapTable& operator=(const PrefixMapTable&) = delete;
  PrefixMapTable(PrefixMapTable&&) = default;
  PrefixMapTable& operator=(PrefixMapTable&&) = default;

  // False (and the table left as it was) when two `from` ranges of the same
  // family overlap.
  bool assign(std::vector<PrefixRule> rules);
  bool empty() const { return rules_.empty(); }
  size_t size() const { return rules_.size(); }
  const std::vector<PrefixRule>& rules() const { return rules_; }

  // The rule whose `from` range holds the address, or null.  IPv4 inline:
  // a binary search without data-dependent branches (the last range that
  // starts at or before the address, then its end).
  const PrefixRule* find4(const uint8_t* address) const {
    size_t n = v4_.size();
    if (n == 0) {
      return nullptr;
    }
    const uint32_t a = static_cast<uint32_t>(address[0]) << 24 |
                       static_cast<uint32_t>(address[1]) << 16 |
                       static_cast<uint32_t>(address[2]) << 8 | address[3];
    const Range4* base = v4_.data();
    while (n > 1) {
      const size_t half = n / 2;
      base = base[half].first <= a ? base + half : base;
      n -= half;
    }
    return base->first <= a && a <= base->last ? base->rule : nullptr;
  }
  const PrefixRule* find6(const uint8_t* address) const;
  const PrefixRule* find(const uint8_t* address, bool v6) const {
    return v6 ? find6(address) : find4(address);
  }

 private:
  struct Range4 {
    uint32_t first, last;
    const PrefixRule* rule;  // in rules_
  };
  struct Range6 {
    uint64_t first_hi, first_lo, last_hi, last_lo;
    uint16_t rule;
  };
  std::vector<PrefixRule> rules_;
  std::vector<Range4> v4_;  // by first
  std::vector<Range6> v6_;
};

enum class AddressField : uint8_t {
  kSource,       // the packet's source; an ICMP error's quoted destination
  kDestination,  // the packet's destination; an ICMP error's quoted source
};

struct MapResult {
  const PrefixRule* outer = nullptr;  // the rule applied to the packet's own address
  const PrefixRule* inner = nullptr;  // the rule applied to an ICMP error's quote
  bool changed() const { return outer || inner; }
};

// Translates the packet's `field` address when `table` holds it, and an ICMP
// error's quoted address on the other side when the table holds that (the
// two independently: an error from the gateway's own address may quote a
// mapped packet).  ip: the IP packet from its first byte, len: bytes in the
// buffer (at least the IP length; padding behind it is not touched).
// Nothing changes when the IP header does not parse (IPv4: version, IHL,
// total length; IPv6: version, payload length), and an IPv6 packet whose
// extension headers do not parse gets only its fixed header's address
// translated.  L4 and quoted headers cut short are left as they are.
// (IPv4 without ICMP errors inline: the fast path's common case.)
inline MapResult mapPacket(uint8_t* ip, size_t len, bool v6, AddressField field,
                           const PrefixMapTable& table);

namespace prefix_map_detail {

// Out of line: IPv6, and the quote of an ICMP / ICMPv6 error (icmp: the
// ICMP header, icmp_len bytes of message in this packet, at least 8).
MapResult mapPacket6(uint8_t* ip, size_t len, AddressField field, const PrefixMapTable& table);
const PrefixRule* mapQuote(uint8_t* icmp, size_t icmp_len, bool v6, AddressField field,
                           const PrefixMapTable& table);

inline uint16_t load16(const uint8_t* p) {
  return static_cast<uint16_t>(p[0] << 8 | p[1]);
}
inline void store16(uint8_t* p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v >> 8);
  p[1] = static_cast<uint8_t>(v);
}

}  // namespace prefix_map_detail

// Always inlined: the fast path calls it from one place per direction, and
// out of line it pays a call and five saved registers per packet.
[[gnu::always_inline]] inline MapResult mapPacket(uint8_t* ip, size_t len, bool v6,
                                                  AddressField field, const PrefixMapTable& table) {
  using namespace prefix_map_detail;
  if (v6) {
    return mapPacket6(ip, len, field, table);
  }
  MapResult res;
  if (len < sizeof(Ipv4Header) || (ip[0] >> 4) != 4) {
    return res;
  }
  const size_t hl = static_cast<size_t>(ip[0] & 0x0f) * 4;
  const size_t total = load16(ip + 2);
  if (hl < sizeof(Ipv4Header) || total < hl || total > len) {
    return res;
  }
  const uint8_t protocol = ip[9];
  const bool first = (load16(ip + 6) & 0x1fff) == 0;
  uint8_t* l4 = ip + hl;
  const size_t l4_len = total - hl;
  uint8_t* a = ip + (field == AddressField::kSource ? 12 : 16);
  if (const PrefixRule* r = table.find4(a)) {
    r->rewrite4(a);
    store16(ip + 10, checksumAdjust(load16(ip + 10), r->delta));
    if (first) {
      if (protocol == kIpProtoTcp && l4_len >= 18) {
        store16(l4 + 16, checksumAdjust(load16(l4 + 16), r->delta));
      } else if (protocol == kIpProtoUdp && l4_len >= 8) {
        // 0: no checksum, stays; a computed 0 is sent as 0xffff (RFC 768).
        if (const uint16_t c = load16(l4 + 6); c != 0) {
          const uint16_t n = checksumAdjust(c, r->delta);
          store16(l4 + 6, n == 0 ? 0xffff : n);
        }
      }
    }
    res.outer = r;
  }
  if (protocol == kIpProtoIcmp && first && l4_len >= sizeof(IcmpHeader) && isIcmpError(l4[0]))
      [[unlikely]] {
    res.inner = mapQuote(l4, l4_len, false, field, table);
  }
  return res;
}

}  // namespace mcgw::proto
