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
#include <vector>

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
  // False (and the table left as it was) when two `from` ranges of the same
  // family overlap.
  bool assign(std::vector<PrefixRule> rules);
  bool empty() const { return rules_.empty(); }
  size_t size() const { return rules_.size(); }
  const std::vector<PrefixRule>& rules() const { return rules_; }

  // The rule whose `from` range holds the address, or null.
  const PrefixRule* find4(const uint8_t* address) const;
  const PrefixRule* find6(const uint8_t* address) const;
  const PrefixRule* find(const uint8_t* address, bool v6) const {
    return v6 ? find6(address) : find4(address);
  }

 private:
  struct Range4 {
    uint32_t first, last;
    uint16_t rule;
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
// total length; IPv6: version, payload length, the extension headers).  L4
// and quoted headers cut short are left as they are.
MapResult mapPacket(uint8_t* ip, size_t len, bool v6, AddressField field,
                    const PrefixMapTable& table);

}  // namespace mcgw::proto
