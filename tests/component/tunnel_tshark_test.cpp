// The outer headers mcgw encodes, decoded by a real dissector: tshark must
// read the VNI, ports, DSCP/ECN and verify the checksums, with no
// malformed-packet errors.
#include <gtest/gtest.h>
#include <pcap/pcap.h>

#include <cstring>
#include <sstream>

#include "dataplane/proto/checksum.hpp"
#include "dataplane/proto/tunnel.hpp"
#include "tests/support/process.hpp"

namespace mcgw::test {
namespace {

using namespace mcgw::proto;

std::vector<std::byte> innerFrame(uint8_t tos) {
  const uint8_t f[] = {0x02, 0,    0,    0,    1,    1,    0x02, 0,    0,    0,
                       2,    2,    0x08, 0x00,  // Ethernet
                       0x45, tos,  0x00, 0x20, 0x00, 0x01, 0x00, 0x00, 0x40, 0x11,
                       0x00, 0x00, 10,   1,    0,    10,   10,   2,    0,    10,  // IPv4
                       0x30, 0x39, 0x27, 0x0f, 0x00, 0x0c, 0x00, 0x00,  // UDP 12345 → 9999
                       0xde, 0xad, 0xbe, 0xef};
  std::vector<std::byte> v(sizeof f);
  std::memcpy(v.data(), f, sizeof f);
  // A correct inner IPv4 checksum, so that tshark has nothing to complain of.
  Bytes ip(v.data() + 14, 20);
  uint16_t c = internetChecksum(ip);
  v[24] = std::byte(c >> 8);
  v[25] = std::byte(c & 0xff);
  return v;
}

std::vector<std::byte> tunnelPacket(const TunnelHeaderTemplate& t, uint32_t vni, uint8_t tos) {
  auto inner = innerFrame(tos);
  std::vector<std::byte> pkt(tunnelOverhead(t.ipv6, t.encapsulation));
  EXPECT_GT(encodeTunnelHeaders(MutableBytes(pkt), t, vni, Bytes(inner), 0xbeef), 0u);
  pkt.insert(pkt.end(), inner.begin(), inner.end());
  return pkt;
}

TEST(TunnelHeaders, DecodeCleanlyInTshark) {
  TunnelHeaderTemplate v4;
  const uint8_t l4[4] = {198, 51, 100, 1}, r4[4] = {198, 51, 100, 2};
  std::memcpy(v4.local, l4, 4);
  std::memcpy(v4.remote, r4, 4);
  v4.src_mac[0] = v4.dst_mac[0] = 0x02;
  TunnelHeaderTemplate v6 = v4;
  v6.ipv6 = true;
  v6.encapsulation = Encapsulation::kGeneve;
  const uint8_t l6[16] = {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
  const uint8_t r6[16] = {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2};
  std::memcpy(v6.local, l6, 16);
  std::memcpy(v6.remote, r6, 16);

  TempDir dir;
  std::string file = dir.file("tunnel.pcap");
  pcap_t* dead = pcap_open_dead(DLT_EN10MB, 65535);
  pcap_dumper_t* dump = pcap_dump_open(dead, file.c_str());
  ASSERT_NE(dump, nullptr);
  for (const auto& pkt : {tunnelPacket(v4, 1001, 0xbb), tunnelPacket(v6, 2002, 0x29)}) {
    pcap_pkthdr h{};
    h.caplen = h.len = static_cast<bpf_u_int32>(pkt.size());
    pcap_dump(reinterpret_cast<u_char*>(dump), &h, reinterpret_cast<const u_char*>(pkt.data()));
  }
  pcap_dump_close(dump);
  pcap_close(dead);

  CommandResult r = run(
      "tshark -n -r " + file +
      " -o ip.check_checksum:TRUE -o udp.check_checksum:TRUE"
      " -d udp.port==6081,geneve -T fields -E separator='|' -e vxlan.vni -e geneve.vni"
      " -e udp.dstport -e ip.dsfield.dscp -e ip.dsfield.ecn -e ipv6.tclass.dscp -e ipv6.tclass.ecn"
      " -e ip.flags.df -e ip.checksum.status -e udp.checksum.status -e _ws.malformed"
      " -e _ws.expert.severity");
  ASSERT_EQ(r.code, 0) << r.err;
  std::istringstream lines(r.out);
  std::string vxlan, geneve;
  std::getline(lines, vxlan);
  std::getline(lines, geneve);
  // Fields: vxlan.vni | geneve.vni | udp.dstport | ip dscp | ip ecn | ipv6 dscp | ipv6 ecn |
  // ip DF | ip checksum status | udp checksum status | malformed | expert severity.
  // Checksum status: 1 good, 3 not present (UDP checksum 0).
  // VXLAN/IPv4: VNI 1001 to port 4789; DSCP 46 and CE copied from the inner
  // packet; DF on the outer header; outer IPv4 checksum good; outer UDP
  // checksum 0 as RFC 7348 allows; nothing malformed.
  EXPECT_EQ(vxlan, "1001||4789,9999|46,46|3,3|||1,0|1,1|3,3||") << r.out;
  // Geneve/IPv6: VNI 2002 (0x7d2) to port 6081; traffic class DSCP 10, ECN
  // ECT(1) copied; the outer UDP checksum present and good.
  EXPECT_EQ(geneve, "|0x0007d2|6081,9999|10|1|10|1|0|1|1,3||") << r.out;
}

}  // namespace
}  // namespace mcgw::test
