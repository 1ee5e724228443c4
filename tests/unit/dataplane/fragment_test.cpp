// Byte-level tests of IPv4 fragmentation (dataplane/proto/fragment.hpp).
// Header checksums are checked by summing the header again (a correct one
// sums to 0xffff).
#include "dataplane/proto/fragment.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "dataplane/proto/checksum.hpp"
#include "dataplane/proto/ipv4.hpp"
#include "tests/support/ipv4_packet.hpp"

namespace mcgw::proto {
namespace {

using namespace test_packets;

struct Fragment {
  Packet bytes;
  uint16_t offset() const { return be16(&bytes[6]) & 0x1fff; }
  bool more() const { return be16(&bytes[6]) & 0x2000; }
  size_t header() const { return static_cast<size_t>(bytes[0] & 0x0f) * 4; }
  Packet data() const { return Packet(bytes.begin() + static_cast<long>(header()), bytes.end()); }
};

std::vector<Fragment> fragment(const Packet& p, size_t mtu) {
  std::vector<Fragment> out;
  const size_t count = ipv4FragmentCount(span(p), mtu);
  for (size_t i = 0; i < count; ++i) {
    Packet buf(mtu + 100, 0xee);
    const size_t n = writeIpv4Fragment(span(p), mtu, i, mspan(buf));
    EXPECT_GT(n, 0u);
    EXPECT_LE(n, mtu);
    buf.resize(n);
    EXPECT_EQ(be16(&buf[2]), n);
    EXPECT_TRUE(ipv4HeaderChecksumOk(buf.data()));
    EXPECT_TRUE(parseIpv4(span(buf)).ok());
    out.push_back({buf});
  }
  Packet buf(mtu + 100);
  EXPECT_EQ(writeIpv4Fragment(span(p), mtu, count, mspan(buf)), 0u);  // out of range
  return out;
}

// The data of the fragments in order, checking that they are contiguous.
Packet reassemble(const std::vector<Fragment>& fragments, uint16_t first_offset) {
  Packet data;
  for (const auto& f : fragments) {
    EXPECT_EQ(f.offset(), first_offset + data.size() / 8);
    const Packet d = f.data();
    data.insert(data.end(), d.begin(), d.end());
  }
  return data;
}

TEST(Ipv4Fragment, UdpPacketInTwo) {
  V4 v;
  const Packet p = ipv4(v, 1500);
  ASSERT_EQ(ipv4FragmentCount(span(p), 1450), 2u);
  const auto f = fragment(p, 1450);
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].bytes.size(), 20u + 1424u);
  EXPECT_EQ(f[0].offset(), 0);
  EXPECT_TRUE(f[0].more());
  EXPECT_EQ(f[1].bytes.size(), 20u + 56u);
  EXPECT_EQ(f[1].offset(), 178);
  EXPECT_FALSE(f[1].more());
  for (const auto& x : f) {
    // Everything else of the header as it was: id, TTL, protocol, addresses.
    EXPECT_EQ(std::memcmp(&x.bytes[0], &p[0], 2), 0);
    EXPECT_EQ(std::memcmp(&x.bytes[4], &p[4], 2), 0);
    EXPECT_EQ(std::memcmp(&x.bytes[8], &p[8], 2), 0);
    EXPECT_EQ(std::memcmp(&x.bytes[12], &p[12], 8), 0);
  }
  EXPECT_EQ(reassemble(f, 0), Packet(p.begin() + 20, p.end()));
}

TEST(Ipv4Fragment, FitsIsOneCopiedAsIs) {
  V4 v;
  v.frag_off = 0x4000;  // DF does not matter when it fits
  const Packet p = ipv4(v, 1450);
  Packet padded = p;
  padded.resize(1500, 0);
  ASSERT_EQ(ipv4FragmentCount(span(padded), 1450), 1u);
  Packet out(1500);
  ASSERT_EQ(writeIpv4Fragment(span(padded), 1450, 0, mspan(out)), 1450u);
  out.resize(1450);
  EXPECT_EQ(out, p);
}

TEST(Ipv4Fragment, CannotBeFragmented) {
  V4 v;
  v.frag_off = 0x4000;
  Packet out(2000);
  const Packet df = ipv4(v, 1500);
  EXPECT_EQ(ipv4FragmentCount(span(df), 1450), 0u);
  EXPECT_EQ(writeIpv4Fragment(span(df), 1450, 0, mspan(out)), 0u);

  v.frag_off = 0;
  const Packet p = ipv4(v, 1500);
  EXPECT_EQ(ipv4FragmentCount(span(p), 27), 0u);  // header + 8 does not fit
  EXPECT_EQ(ipv4FragmentCount(span(p), 0), 0u);
  EXPECT_EQ(writeIpv4Fragment(span(p), 27, 0, mspan(out)), 0u);
  ASSERT_EQ(ipv4FragmentCount(span(p), 28), 185u);  // 8 bytes each
  EXPECT_EQ(reassemble(fragment(p, 28), 0), Packet(p.begin() + 20, p.end()));

  EXPECT_EQ(ipv4FragmentCount(Bytes(span(p).first(1499)), 1450), 0u);  // truncated
  EXPECT_EQ(ipv4FragmentCount(Bytes(), 1450), 0u);

  // Options that can't be walked.
  v.options = {0x07, 0x09, 4, 0};  // record route running past the header
  EXPECT_EQ(ipv4FragmentCount(span(ipv4(v, 1500)), 1450), 0u);
  v.options = {0x01, 0x83, 0x01, 0};  // length 1
  EXPECT_EQ(ipv4FragmentCount(span(ipv4(v, 1500)), 1450), 0u);
  v.options = {0x01, 0x01, 0x01, 0x83};  // no length byte
  EXPECT_EQ(ipv4FragmentCount(span(ipv4(v, 1500)), 1450), 0u);
}

TEST(Ipv4Fragment, OutTooSmall) {
  V4 v;
  const Packet p = ipv4(v, 1500);
  Packet out(1443);
  EXPECT_EQ(writeIpv4Fragment(span(p), 1450, 0, mspan(out)), 0u);
  out.resize(1444);
  EXPECT_EQ(writeIpv4Fragment(span(p), 1450, 0, mspan(out)), 1444u);
  out.resize(75);
  EXPECT_EQ(writeIpv4Fragment(span(p), 1450, 1, mspan(out)), 0u);
  out.resize(76);
  EXPECT_EQ(writeIpv4Fragment(span(p), 1450, 1, mspan(out)), 76u);
  out.resize(1449);  // a packet that fits is copied whole or not at all
  EXPECT_EQ(writeIpv4Fragment(span(p), 1500, 0, mspan(out)), 0u);
}

TEST(Ipv4Fragment, OptionsCopiedOrNot) {
  V4 v;
  // Record route (not copied), NOP, loose source route (copied), EOL.
  v.options = {0x07, 7, 4, 0, 0, 0, 0, 0x01, 0x83, 7, 4, 198, 51, 100, 1, 0x00};
  const Packet p = ipv4(v, 36 + 1000);
  ASSERT_EQ(ipv4FragmentCount(span(p), 500), 3u);  // 464 + 472 + 64
  const auto f = fragment(p, 500);
  ASSERT_EQ(f.size(), 3u);
  EXPECT_EQ(f[0].header(), 36u);
  EXPECT_EQ(Packet(f[0].bytes.begin() + 20, f[0].bytes.begin() + 36),
            Packet(p.begin() + 20, p.begin() + 36));
  EXPECT_EQ(f[0].data().size(), 464u);
  for (size_t i = 1; i < 3; ++i) {
    EXPECT_EQ(f[i].header(), 28u);
    EXPECT_EQ(Packet(f[i].bytes.begin() + 20, f[i].bytes.begin() + 28),
              (Packet{0x83, 7, 4, 198, 51, 100, 1, 0x00}));
  }
  EXPECT_EQ(f[1].data().size(), 472u);
  EXPECT_EQ(f[2].data().size(), 64u);
  EXPECT_EQ(reassemble(f, 0), Packet(p.begin() + 36, p.end()));
}

TEST(Ipv4Fragment, CountUsesTheShorterLaterHeader) {
  V4 v;
  // 40 bytes of record route: nothing is copied, later headers are 20 bytes.
  v.options.assign(40, 0);
  v.options[0] = 0x07;
  v.options[1] = 39;
  v.options[2] = 4;
  const Packet p = ipv4(v, 60 + 200);
  // 40 bytes in the first (60-byte header), 80 in each later one:
  // 3, where 60-byte headers throughout would need 5.
  ASSERT_EQ(ipv4FragmentCount(span(p), 100), 3u);
  const auto f = fragment(p, 100);
  ASSERT_EQ(f.size(), 3u);
  EXPECT_EQ(f[0].bytes.size(), 100u);
  EXPECT_EQ(f[1].bytes.size(), 100u);
  EXPECT_EQ(f[2].bytes.size(), 20u + 80u);
  EXPECT_EQ(f[1].header(), 20u);
  EXPECT_EQ(reassemble(f, 0), Packet(p.begin() + 60, p.end()));
  // A copied option that needs padding: 3 bytes → 4.
  v.options.assign(8, 0);
  v.options[0] = 0x88;  // stream id... with the copied flag, length 3 here
  v.options[1] = 3;
  v.options[3] = 0x01;
  const Packet q = ipv4(v, 28 + 100);
  const auto g = fragment(q, 60);
  ASSERT_EQ(g.size(), 4u);  // 32 + 32 + 32 + 4
  EXPECT_EQ(g[1].header(), 24u);
  EXPECT_EQ(g[1].bytes[23], 0);  // padded with End of Option List
  EXPECT_EQ(reassemble(g, 0), Packet(q.begin() + 28, q.end()));
}

TEST(Ipv4Fragment, FragmentOfAFragment) {
  V4 v;
  v.frag_off = 0x2000 | 100;  // MF, offset 800
  const Packet p = ipv4(v, 1500);
  auto f = fragment(p, 1000);
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].offset(), 100);
  EXPECT_EQ(f[1].offset(), 100 + 976 / 8);
  EXPECT_TRUE(f[0].more());
  EXPECT_TRUE(f[1].more());  // the packet's own MF
  EXPECT_EQ(reassemble(f, 100), Packet(p.begin() + 20, p.end()));

  v.frag_off = 100;  // the last fragment
  f = fragment(ipv4(v, 1500), 1000);
  ASSERT_EQ(f.size(), 2u);
  EXPECT_TRUE(f[0].more());
  EXPECT_FALSE(f[1].more());

  v.frag_off = 0x8000;  // the reserved bit is kept
  f = fragment(ipv4(v, 1500), 1000);
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].bytes[6] & 0xe0, 0xa0);
  EXPECT_EQ(f[1].bytes[6] & 0xe0, 0x80);

  // Data ending past byte 65535 of the datagram: offsets would not fit.
  v.frag_off = 8100;
  EXPECT_EQ(ipv4FragmentCount(span(ipv4(v, 1500)), 1000), 0u);
}

}  // namespace
}  // namespace mcgw::proto
