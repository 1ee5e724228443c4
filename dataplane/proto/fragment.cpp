#include "dataplane/proto/fragment.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "dataplane/proto/checksum.hpp"
#include "dataplane/proto/ipv4.hpp"

namespace mcgw::proto {

namespace {

const uint8_t* u8(Bytes b) {
  return reinterpret_cast<const uint8_t*>(b.data());
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
