// libFuzzer target: proto::clampMss() on any bytes as an IPv4 or IPv6 packet.
//
// Input: max_mss (2 bytes, big-endian), a control byte (bit 0 insert, bit 1
// IPv6, bit 2 fix the checksums first, bits 3-5 room after the packet in
// 4-byte steps), then the packet.  The packet sits in a heap buffer of
// exactly `capacity` bytes, so ASan sees any access beyond it.  Checked:
//   * *len stays <= capacity, and grows by exactly 4 only on kInserted;
//   * any verdict but kClamped / kInserted leaves every byte as it was;
//   * kClamped / kInserted keep the TCP checksum's verification sum (over
//     the pseudo-header and the segment, recomputed from scratch) and the
//     IPv4 header's: a packet whose checksums were right still verifies;
//   * after kClamped every MSS option is <= max_mss; after kInserted the
//     first option is MSS max_mss;
//   * the pre-check mayBeTcpSyn() never says no to a packet clampMss acts on.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>

#include "dataplane/proto/checksum.hpp"
#include "dataplane/proto/ipv4.hpp"
#include "dataplane/proto/ipv6.hpp"
#include "dataplane/proto/mss.hpp"
#include "dataplane/proto/tcp.hpp"

using namespace mcgw::proto;

namespace {

#define CHECK(cond)     \
  do {                  \
    if (!(cond)) {      \
      __builtin_trap(); \
    }                   \
  } while (0)

struct Segment {
  size_t at = 0;      // TCP header, from the start of the packet
  size_t length = 0;  // TCP header and data within the IP length
  uint32_t pseudo = 0;
};

// Where the TCP segment of a first (or no) fragment is, as the IP headers say.
std::optional<Segment> tcpSegment(const uint8_t* ip, size_t len, bool v6) {
  const Bytes b(reinterpret_cast<const std::byte*>(ip), len);
  Segment s;
  if (!v6) {
    auto p = parseIpv4(b);
    if (!p.ok() || p.header->protocol != kIpProtoTcp || p.header->fragmentOffset() != 0) {
      return std::nullopt;
    }
    s.at = p.header_length;
    s.length = p.payload.size();
    s.pseudo =
        pseudoHeaderV4(p.header->src, p.header->dst, kIpProtoTcp, static_cast<uint16_t>(s.length));
  } else {
    auto p = parseIpv6(b);
    if (!p.ip.ok() || p.upper_protocol != kIpProtoTcp || !p.first_fragment) {
      return std::nullopt;
    }
    s.at = static_cast<size_t>(reinterpret_cast<const uint8_t*>(p.upper.data()) - ip);
    s.length = p.upper.size();
    s.pseudo = pseudoHeaderV6(p.ip.header->src, p.ip.header->dst, kIpProtoTcp,
                              static_cast<uint32_t>(s.length));
  }
  if (s.length < sizeof(TcpHeader)) {
    return std::nullopt;
  }
  return s;
}

// The folded one's-complement sum of pseudo-header and segment (0xffff when
// the checksum is right); 0 and 0xffff are the same number.
uint16_t tcpResidual(const uint8_t* ip, const Segment& s) {
  uint16_t r = checksumFold(
      checksumAdd(Bytes(reinterpret_cast<const std::byte*>(ip + s.at), s.length), s.pseudo));
  return r == 0 ? 0xffff : r;
}

uint16_t ipv4Residual(const uint8_t* ip) {
  const size_t hl = static_cast<size_t>(ip[0] & 0x0f) * 4;
  uint16_t r = checksumFold(checksumAdd(Bytes(reinterpret_cast<const std::byte*>(ip), hl)));
  return r == 0 ? 0xffff : r;
}

void store16(uint8_t* p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v >> 8);
  p[1] = static_cast<uint8_t>(v);
}

// Makes the checksums right, where the headers let us find them.
void fixChecksums(uint8_t* ip, size_t len, bool v6) {
  if (!v6 && len >= sizeof(Ipv4Header)) {
    const size_t hl = static_cast<size_t>(ip[0] & 0x0f) * 4;
    if (hl >= sizeof(Ipv4Header) && hl <= len) {
      store16(ip + 10, 0);
      store16(ip + 10, internetChecksum(Bytes(reinterpret_cast<const std::byte*>(ip), hl)));
    }
  }
  if (auto s = tcpSegment(ip, len, v6)) {
    store16(ip + s->at + 16, 0);
    store16(ip + s->at + 16,
            internetChecksum(Bytes(reinterpret_cast<const std::byte*>(ip + s->at), s->length),
                             s->pseudo));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 3) {
    return 0;
  }
  const auto max_mss = static_cast<uint16_t>(data[0] << 8 | data[1]);
  const bool insert = data[2] & 1;
  const bool v6 = data[2] & 2;
  const bool fix = data[2] & 4;
  const size_t room = static_cast<size_t>((data[2] >> 3) & 7) * 4;
  const size_t n = size - 3;
  const size_t capacity = n + room;

  std::unique_ptr<uint8_t[]> buf(new uint8_t[capacity ? capacity : 1]);
  std::memcpy(buf.get(), data + 3, n);
  if (fix) {
    fixChecksums(buf.get(), n, v6);
  }
  std::unique_ptr<uint8_t[]> before(new uint8_t[n ? n : 1]);
  std::memcpy(before.get(), buf.get(), n);
  const auto seg_before = tcpSegment(buf.get(), n, v6);
  const uint16_t tcp_before = seg_before ? tcpResidual(buf.get(), *seg_before) : 0;
  const uint16_t ip_before = !v6 && seg_before ? ipv4Residual(buf.get()) : 0;
  const bool pre = mayBeTcpSyn(buf.get(), n, v6);

  size_t len = n;
  const MssVerdict v = clampMss(buf.get(), &len, capacity, v6, max_mss, insert);
  CHECK(len <= capacity);

  if (v != MssVerdict::kClamped && v != MssVerdict::kInserted) {
    CHECK(len == n);
    CHECK(std::memcmp(buf.get(), before.get(), n) == 0);
  }
  if (v == MssVerdict::kClamped || v == MssVerdict::kInserted || v == MssVerdict::kAlreadyBelow ||
      v == MssVerdict::kNoOption) {
    CHECK(pre);
    CHECK(seg_before.has_value());
  }
  if (v == MssVerdict::kClamped || v == MssVerdict::kInserted) {
    CHECK(len == n + (v == MssVerdict::kInserted ? 4 : 0));
    const auto seg = tcpSegment(buf.get(), len, v6);
    CHECK(seg.has_value());
    CHECK(seg->length == seg_before->length + (v == MssVerdict::kInserted ? 4 : 0));
    CHECK(tcpResidual(buf.get(), *seg) == tcp_before);
    if (!v6) {
      CHECK(ipv4Residual(buf.get()) == ip_before);
    }
    const auto* t = buf.get() + seg->at;
    const size_t hl = static_cast<size_t>(t[12] >> 4) * 4;
    CHECK(hl >= sizeof(TcpHeader) && hl <= seg->length);
    const Bytes options(reinterpret_cast<const std::byte*>(t + sizeof(TcpHeader)),
                        hl - sizeof(TcpHeader));
    CHECK(forEachTcpOption(options, [&](const TcpOption& o) {
            if (o.kind == kTcpOptMss) {
              const auto* m = reinterpret_cast<const uint8_t*>(o.data.data());
              CHECK(o.data.size() == 2 && (m[0] << 8 | m[1]) <= max_mss);
            }
            return true;
          }) == ParseError::kOk);
    if (v == MssVerdict::kInserted) {
      CHECK(t[20] == kTcpOptMss && t[21] == 4 && (t[22] << 8 | t[23]) == max_mss);
      // Everything behind the new option moved 4 bytes on, unchanged.
      CHECK(std::memcmp(t + 24, before.get() + seg_before->at + 20, n - seg_before->at - 20) == 0);
    }
  }
  return 0;
}
