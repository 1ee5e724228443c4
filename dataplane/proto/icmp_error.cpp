#include "dataplane/proto/icmp_error.hpp"

#include <algorithm>
#include <cstring>

#include "dataplane/proto/checksum.hpp"
#include "dataplane/proto/icmp.hpp"
#include "dataplane/proto/ipv4.hpp"
#include "dataplane/proto/ipv6.hpp"

namespace mcgw::proto {

namespace {

const uint8_t* u8(Bytes b) {
  return reinterpret_cast<const uint8_t*>(b.data());
}

bool ipv4Multicast(const uint8_t a[4]) {
  return a[0] >= 224 && a[0] <= 239;
}

bool ipv4LimitedBroadcast(const uint8_t a[4]) {
  return a[0] == 255 && a[1] == 255 && a[2] == 255 && a[3] == 255;
}

bool mayAnswer4(Bytes b) {
  const auto p = parseIpv4(b);
  if (!p.ok()) {
    return false;
  }
  const Ipv4Header& h = *p.header;
  if (h.fragmentOffset() != 0) {
    return false;
  }
  // Not a single host: multicast, class E, limited broadcast (all >= 224),
  // "this network", loopback.
  if (h.src[0] >= 224 || h.src[0] == 0 || h.src[0] == 127) {
    return false;
  }
  if (ipv4Multicast(h.dst) || ipv4LimitedBroadcast(h.dst)) {
    return false;
  }
  if (h.protocol == kIpProtoIcmp) {
    return !p.payload.empty() && !isIcmpError(u8(p.payload)[0]);
  }
  return true;
}

bool mayAnswer6(Bytes b) {
  static constexpr uint8_t kUnspecified[16] = {};
  static constexpr uint8_t kLoopback[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
  const Ipv6Packet p = parseIpv6(b);
  if (!p.ip.ok() || !p.first_fragment) {
    return false;
  }
  const Ipv6Header& h = *p.ip.header;
  if (h.src[0] == 0xff || std::memcmp(h.src, kUnspecified, 16) == 0 ||
      std::memcmp(h.src, kLoopback, 16) == 0 || h.dst[0] == 0xff) {
    return false;
  }
  if (p.upper_protocol == kIpProtoIpv6Icmp) {
    return !p.upper.empty() && !isIcmp6Error(u8(p.upper)[0]);
  }
  return true;
}

// The options of an IPv4 header with the copied flag (RFC 791: type bit 0),
// written to `out` (when not null; room for 40 bytes) unpadded.  Returns
// their length, or -1 when the options can't be walked.
int copiedOptions(const uint8_t* opts, size_t n, uint8_t* out) {
  size_t i = 0;
  int copied = 0;
  while (i < n) {
    const uint8_t type = opts[i];
    if (type == 0) {  // End of Option List
      break;
    }
    if (type == 1) {  // No Operation: copied flag clear
      ++i;
      continue;
    }
    if (i + 1 >= n) {
      return -1;
    }
    const size_t len = opts[i + 1];
    if (len < 2 || i + len > n) {
      return -1;
    }
    if (type & 0x80) {
      if (out) {
        std::memcpy(out + copied, opts + i, len);
      }
      copied += static_cast<int>(len);
    }
    i += len;
  }
  return copied;
}

// How a packet that does not fit is cut.
struct FragmentPlan {
  const Ipv4Header* header = nullptr;
  size_t first_header = 0;  // the packet's own header length
  size_t later_header = 0;  // 20 + copied options, padded to 4
  size_t data = 0;          // bytes after the header, up to total length
  size_t first_data = 0;    // data in the first fragment (a multiple of 8)
  size_t later_data = 0;    // data in each later one but the last (a multiple of 8)
  size_t count = 0;         // 0: can't be fragmented; 1: fits as it is
};

FragmentPlan plan(Bytes packet, size_t mtu) {
  FragmentPlan f;
  const auto p = parseIpv4(packet);
  if (!p.ok()) {
    return f;
  }
  const Ipv4Header& h = *p.header;
  f.header = &h;
  f.first_header = p.header_length;
  f.data = p.payload.size();
  if (f.first_header + f.data <= mtu) {
    f.count = 1;
    return f;
  }
  if (h.dontFragment() || mtu < f.first_header + 8) {
    return f;
  }
  // The fragments' offsets must fit in 13 bits of 8-byte units.
  if (static_cast<size_t>(h.fragmentOffset()) * 8 + f.data > 0xffff) {
    return f;
  }
  const int copied =
      copiedOptions(u8(packet) + sizeof(Ipv4Header), f.first_header - sizeof(Ipv4Header), nullptr);
  if (copied < 0) {
    return f;
  }
  f.later_header = sizeof(Ipv4Header) + ((static_cast<size_t>(copied) + 3) & ~size_t{3});
  f.first_data = (mtu - f.first_header) & ~size_t{7};
  f.later_data = (mtu - f.later_header) & ~size_t{7};  // later_header <= first_header
  const size_t rest = f.data - f.first_data;           // > 0: the packet does not fit
  f.count = 1 + (rest + f.later_data - 1) / f.later_data;
  return f;
}

}  // namespace

bool mayAnswer(Bytes ip_packet, bool v6) {
  return v6 ? mayAnswer6(ip_packet) : mayAnswer4(ip_packet);
}

size_t buildIcmpError(MutableBytes out, Bytes offending, bool v6, IcmpErrorKind kind, uint32_t mtu,
                      const uint8_t* source, uint8_t ttl_restore) {
  if (!source || !mayAnswer(offending, v6)) {
    return 0;
  }
  const uint8_t* orig = u8(offending);
  const size_t ip_header = v6 ? sizeof(Ipv6Header) : sizeof(Ipv4Header);
  const size_t head = ip_header + sizeof(IcmpHeader);
  // The offending packet's own length (without link padding), and the least
  // quote worth sending: its IP header and 8 bytes (RFC 792).
  size_t length;
  size_t min_quote;
  if (v6) {
    const auto* h = reinterpret_cast<const Ipv6Header*>(orig);
    length = sizeof(Ipv6Header) + h->payload_length.get();
    min_quote = std::min(length, sizeof(Ipv6Header) + 8);
  } else {
    const auto* h = reinterpret_cast<const Ipv4Header*>(orig);
    length = h->total_length.get();
    min_quote = std::min(length, h->headerLength() + 8);
  }
  const size_t room = std::min(out.size(), v6 ? kIcmpErrorMaxIpv6 : kIcmpErrorMaxIpv4);
  if (room < head + min_quote) {
    return 0;
  }
  const size_t quote = std::min(length, room - head);
  const size_t icmp_length = sizeof(IcmpHeader) + quote;
  auto* o = reinterpret_cast<uint8_t*>(out.data());

  // The quote, with the TTL / hop limit as the sender sent it.
  uint8_t* q = o + head;
  std::memcpy(q, orig, quote);
  if (ttl_restore) {
    if (v6) {
      q[7] = static_cast<uint8_t>(q[7] + ttl_restore);  // min_quote covers the header
    } else {
      const uint16_t before = static_cast<uint16_t>(q[8] << 8 | q[9]);
      q[8] = static_cast<uint8_t>(q[8] + ttl_restore);
      const uint16_t after = static_cast<uint16_t>(q[8] << 8 | q[9]);
      auto* qh = reinterpret_cast<Ipv4Header*>(q);
      qh->checksum.set(checksumUpdate16(qh->checksum.get(), before, after));
    }
  }

  auto* icmp = reinterpret_cast<IcmpHeader*>(o + ip_header);
  icmp->code = 0;
  icmp->rest.set(0);
  icmp->checksum.set(0);
  if (kind == IcmpErrorKind::kTooBig) {
    icmp->type = v6 ? kIcmp6PacketTooBig : kIcmpDestUnreachable;
    if (v6) {
      icmp->rest.set(mtu);
    } else {
      icmp->code = kIcmpFragNeededCode;
      icmp->rest.set(mtu & 0xffff);
    }
  } else {
    icmp->type = v6 ? kIcmp6TimeExceeded : kIcmpTimeExceeded;
  }
  const Bytes icmp_bytes(reinterpret_cast<const std::byte*>(icmp), icmp_length);

  if (v6) {
    const auto* oh = reinterpret_cast<const Ipv6Header*>(orig);
    auto* ip = reinterpret_cast<Ipv6Header*>(o);
    *ip = Ipv6Header{};
    ip->ver_tc_flow.set(6u << 28);
    ip->payload_length.set(static_cast<uint16_t>(icmp_length));
    ip->next_header = kIpProtoIpv6Icmp;
    ip->hop_limit = kIcmpErrorTtl;
    std::memcpy(ip->src, source, 16);
    std::memcpy(ip->dst, oh->src, 16);
    icmp->checksum.set(internetChecksum(
        icmp_bytes,
        pseudoHeaderV6(ip->src, ip->dst, kIpProtoIpv6Icmp, static_cast<uint32_t>(icmp_length))));
  } else {
    const auto* oh = reinterpret_cast<const Ipv4Header*>(orig);
    auto* ip = reinterpret_cast<Ipv4Header*>(o);
    *ip = Ipv4Header{};
    ip->version_ihl = 0x45;
    ip->total_length.set(static_cast<uint16_t>(ip_header + icmp_length));
    ip->ttl = kIcmpErrorTtl;
    ip->protocol = kIpProtoIcmp;
    std::memcpy(ip->src, source, 4);
    std::memcpy(ip->dst, oh->src, 4);
    ip->checksum.set(internetChecksum(Bytes(reinterpret_cast<const std::byte*>(ip), ip_header)));
    icmp->checksum.set(internetChecksum(icmp_bytes));
  }
  return ip_header + icmp_length;
}

size_t ipv4FragmentCount(Bytes packet, size_t mtu) {
  return plan(packet, mtu).count;
}

size_t writeIpv4Fragment(Bytes packet, size_t mtu, size_t index, MutableBytes out) {
  const FragmentPlan f = plan(packet, mtu);
  if (index >= f.count) {
    return 0;
  }
  const uint8_t* in = u8(packet);
  auto* o = reinterpret_cast<uint8_t*>(out.data());
  if (f.count == 1) {
    const size_t length = f.first_header + f.data;
    if (out.size() < length) {
      return 0;
    }
    std::memcpy(o, in, length);
    return length;
  }
  const size_t header = index == 0 ? f.first_header : f.later_header;
  const size_t start = index == 0 ? 0 : f.first_data + (index - 1) * f.later_data;
  const size_t data = std::min(index == 0 ? f.first_data : f.later_data, f.data - start);
  if (out.size() < header + data) {
    return 0;
  }
  if (index == 0) {
    std::memcpy(o, in, header);
  } else {
    std::memcpy(o, in, sizeof(Ipv4Header));
    const size_t copied = static_cast<size_t>(copiedOptions(
        in + sizeof(Ipv4Header), f.first_header - sizeof(Ipv4Header), o + sizeof(Ipv4Header)));
    std::memset(o + sizeof(Ipv4Header) + copied, 0, header - sizeof(Ipv4Header) - copied);
    o[0] = static_cast<uint8_t>(0x40 | header / 4);
  }
  std::memcpy(o + header, in + f.first_header + start, data);

  auto* ip = reinterpret_cast<Ipv4Header*>(o);
  const bool last = index + 1 == f.count;
  const uint16_t offset = static_cast<uint16_t>(f.header->fragmentOffset() + start / 8);
  const uint16_t flags =
      (f.header->frag_off.get() & 0x8000) | (!last || f.header->moreFragments() ? 0x2000 : 0);
  ip->frag_off.set(static_cast<uint16_t>(flags | offset));
  ip->total_length.set(static_cast<uint16_t>(header + data));
  ip->checksum.set(0);
  ip->checksum.set(internetChecksum(Bytes(reinterpret_cast<const std::byte*>(o), header)));
  return header + data;
}

}  // namespace mcgw::proto
