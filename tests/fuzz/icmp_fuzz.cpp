// libFuzzer target: the ICMP error codec and IPv4 fragmentation
// (dataplane/proto/icmp_error.hpp, fragment.hpp) on any packet, MTU and buffer size.
// Input: | flags (1) | ttl_restore (1) | mtu (2) | out size (2) | IP packet |
//   flags: bit 0 IPv6, bit 1 kTooBig, bit 2 make the IP length field match
//   the packet (so that more inputs get past the parsers).
// Checks: no access outside the spans (ASan: exact-size heap buffers),
// results within bounds, every produced packet parses and its checksums
// verify, the quote is the packet, fragments reassemble to the packet.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "dataplane/proto/checksum.hpp"
#include "dataplane/proto/fragment.hpp"
#include "dataplane/proto/icmp.hpp"
#include "dataplane/proto/icmp_error.hpp"
#include "dataplane/proto/ipv4.hpp"
#include "dataplane/proto/ipv6.hpp"

using namespace mcgw::proto;

namespace {

void check(bool ok) {
  if (!ok) {
    __builtin_trap();
  }
}

Bytes bytes(const std::vector<uint8_t>& v, size_t n) {
  return Bytes(reinterpret_cast<const std::byte*>(v.data()), n);
}

void fuzzError(const std::vector<uint8_t>& packet, bool v6, IcmpErrorKind kind, uint16_t mtu,
               uint8_t ttl_restore, size_t out_size) {
  static constexpr uint8_t kSource[16] = {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0,
                                          0,    0,    0,    0,    0, 0, 0, 1};
  const Bytes in = bytes(packet, packet.size());
  const bool may = mayAnswer(in, v6);
  std::vector<uint8_t> out(out_size);
  const size_t n = buildIcmpError(MutableBytes(reinterpret_cast<std::byte*>(out.data()), out_size),
                                  in, v6, kind, mtu, kSource, ttl_restore);
  check(n <= out_size && n <= (v6 ? kIcmpErrorMaxIpv6 : kIcmpErrorMaxIpv4));
  if (!n) {
    return;
  }
  check(may);
  const Bytes e = bytes(out, n);
  const size_t ip_header = v6 ? sizeof(Ipv6Header) : sizeof(Ipv4Header);
  const size_t head = ip_header + sizeof(IcmpHeader);
  check(n >= head + 1);
  const Bytes icmp = e.subspan(ip_header);
  const uint8_t* quote = out.data() + head;
  const size_t quote_length = n - head;
  if (v6) {
    const Ipv6Packet p = parseIpv6(e);
    check(p.ip.ok() && p.upper_protocol == kIpProtoIpv6Icmp && p.upper.size() == n - 40);
    check(
        internetChecksum(icmp, pseudoHeaderV6(p.ip.header->src, p.ip.header->dst, kIpProtoIpv6Icmp,
                                              static_cast<uint32_t>(icmp.size()))) == 0);
    check(out[40] == (kind == IcmpErrorKind::kTooBig ? kIcmp6PacketTooBig : kIcmp6TimeExceeded));
    check(quote_length <= packet.size() && quote_length >= sizeof(Ipv6Header));
    for (size_t i = 0; i < quote_length; ++i) {
      check(quote[i] == (i == 7 ? static_cast<uint8_t>(packet[i] + ttl_restore) : packet[i]));
    }
  } else {
    const auto p = parseIpv4(e);
    check(p.ok() && p.header->protocol == kIpProtoIcmp && p.payload.size() == n - 20);
    check(internetChecksum(e.first(sizeof(Ipv4Header))) == 0);
    check(internetChecksum(icmp) == 0);
    check(out[20] == (kind == IcmpErrorKind::kTooBig ? kIcmpDestUnreachable : kIcmpTimeExceeded));
    const size_t hl = static_cast<size_t>(packet[0] & 0x0f) * 4;
    check(quote_length <= packet.size() && quote_length >= hl);
    for (size_t i = 0; i < quote_length; ++i) {
      if (i == 8) {
        check(quote[i] == static_cast<uint8_t>(packet[i] + ttl_restore));
      } else if (i != 10 && i != 11) {
        check(quote[i] == packet[i]);
      }
    }
    // A correct header checksum stays correct with the TTL restored.
    if (internetChecksum(bytes(packet, hl)) == 0) {
      check(internetChecksum(Bytes(reinterpret_cast<const std::byte*>(quote), hl)) == 0);
    }
  }
}

void fuzzFragments(const std::vector<uint8_t>& packet, size_t mtu, size_t out_size) {
  const Bytes in = bytes(packet, packet.size());
  const size_t count = ipv4FragmentCount(in, mtu);
  check(count <= 65536 / 8 + 1);
  if (!count) {
    std::vector<uint8_t> out(out_size);
    check(writeIpv4Fragment(in, mtu, 0,
                            MutableBytes(reinterpret_cast<std::byte*>(out.data()), out_size)) == 0);
    return;
  }
  const auto original = parseIpv4(in);
  check(original.ok());
  const size_t total = original.header->total_length.get();
  if (count == 1) {
    check(total <= mtu);
  }
  // Into a buffer of the fuzzed size: within bounds, or 0.
  std::vector<uint8_t> small(out_size);
  const size_t n_small = writeIpv4Fragment(
      in, mtu, 0, MutableBytes(reinterpret_cast<std::byte*>(small.data()), out_size));
  check(n_small <= out_size);
  // Into exactly fitting buffers: reassembled, the data is the packet's.
  std::vector<uint8_t> data;
  size_t next_offset = static_cast<size_t>(original.header->fragmentOffset()) * 8;
  std::vector<uint8_t> buf(65536);
  for (size_t i = 0; i < count; ++i) {
    const size_t n = writeIpv4Fragment(
        in, mtu, i, MutableBytes(reinterpret_cast<std::byte*>(buf.data()), 65536));
    check(n > 0 && n <= total);
    if (i == 0) {
      check(n_small == 0 || n_small == n);
    }
    std::vector<uint8_t> exact(buf.begin(), buf.begin() + static_cast<long>(n));
    check(writeIpv4Fragment(in, mtu, i,
                            MutableBytes(reinterpret_cast<std::byte*>(exact.data()), n)) == n);
    if (n > 1) {
      check(writeIpv4Fragment(
                in, mtu, i, MutableBytes(reinterpret_cast<std::byte*>(exact.data()), n - 1)) == 0);
    }
    const auto f = parseIpv4(bytes(exact, n));
    check(f.ok() && f.header->total_length.get() == n);
    if (count > 1) {
      check(n <= mtu);
      check(internetChecksum(bytes(exact, f.header_length)) == 0);
      check(!f.header->dontFragment());
      check(static_cast<size_t>(f.header->fragmentOffset()) * 8 == next_offset);
      const bool last = i + 1 == count;
      check(f.header->moreFragments() == (!last || original.header->moreFragments()));
      check(last || f.payload.size() % 8 == 0);
    }
    next_offset += f.payload.size();
    const auto* d = reinterpret_cast<const uint8_t*>(f.payload.data());
    data.insert(data.end(), d, d + f.payload.size());
  }
  check(data.size() == original.payload.size() &&
        std::memcmp(data.data(), original.payload.data(), data.size()) == 0);
  check(writeIpv4Fragment(in, mtu, count,
                          MutableBytes(reinterpret_cast<std::byte*>(buf.data()), 65536)) == 0);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 6) {
    return 0;
  }
  const uint8_t flags = data[0];
  const uint8_t ttl_restore = data[1];
  const uint16_t mtu = static_cast<uint16_t>(data[2] << 8 | data[3]);
  const size_t out_size = static_cast<size_t>(data[4] << 8 | data[5]) % 2048;
  std::vector<uint8_t> packet(data + 6, data + size);
  const bool v6 = flags & 1;
  if (flags & 4) {
    if (v6 && packet.size() >= 40) {
      const size_t payload = std::min<size_t>(packet.size() - 40, 0xffff);
      packet[0] = static_cast<uint8_t>(0x60 | (packet[0] & 0x0f));
      packet[4] = static_cast<uint8_t>(payload >> 8);
      packet[5] = static_cast<uint8_t>(payload);
    } else if (!v6 && packet.size() >= 20) {
      const size_t total = std::min<size_t>(packet.size(), 0xffff);
      packet[0] = static_cast<uint8_t>(0x40 | (packet[0] & 0x0f));
      packet[2] = static_cast<uint8_t>(total >> 8);
      packet[3] = static_cast<uint8_t>(total);
    }
  }
  fuzzError(packet, v6, flags & 2 ? IcmpErrorKind::kTooBig : IcmpErrorKind::kTimeExceeded, mtu,
            ttl_restore, out_size);
  fuzzFragments(packet, mtu, out_size);
  return 0;
}
