// Every frame kind mcgw's VRRP sends (dataplane/proto/vrrp.hpp), decoded by
// a real dissector: tshark must read the fields back, find the VRRP, IPv4
// and ICMPv6 checksums good, and raise no expert info or malformed packet.
#include <gtest/gtest.h>
#include <pcap/pcap.h>

#include <sstream>
#include <vector>

#include "dataplane/proto/vrrp.hpp"
#include "tests/support/process.hpp"

namespace mcgw::test {
namespace {

using namespace mcgw::proto;

using Frame = std::vector<std::byte>;

template <typename Build>
Frame build(Build fn) {
  Frame f(256);
  size_t n = fn(MutableBytes(f));
  EXPECT_GT(n, 0u);
  f.resize(n);
  return f;
}

std::vector<std::string> decode(const std::vector<Frame>& frames, const std::string& fields) {
  TempDir dir;
  std::string file = dir.file("vrrp.pcap");
  pcap_t* dead = pcap_open_dead(DLT_EN10MB, 65535);
  pcap_dumper_t* dump = pcap_dump_open(dead, file.c_str());
  EXPECT_NE(dump, nullptr);
  for (const auto& f : frames) {
    pcap_pkthdr h{};
    h.caplen = h.len = static_cast<bpf_u_int32>(f.size());
    pcap_dump(reinterpret_cast<u_char*>(dump), &h, reinterpret_cast<const u_char*>(f.data()));
  }
  pcap_dump_close(dump);
  pcap_close(dead);
  CommandResult r = run("tshark -n -r " + file +
                        " -o ip.check_checksum:TRUE -T fields -E separator='|' " + fields);
  EXPECT_EQ(r.code, 0) << r.err;
  std::vector<std::string> lines;
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);) {
    lines.push_back(line);
  }
  return lines;
}

const IpAddr kSrc4 = IpAddr::v4(10, 1, 0, 2);
const IpAddr kVip4 = IpAddr::v4(10, 1, 0, 254);
const IpAddr kLinkLocal = IpAddr::v6From({0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01});
const IpAddr kVip6 =
    IpAddr::v6From({0x20, 0x01, 0x0d, 0xb8, 0, 0x01, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xfe});
const IpAddr kHost6 =
    IpAddr::v6From({0x20, 0x01, 0x0d, 0xb8, 0, 0x01, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x05});
const Mac kHostMac = {0x02, 0, 0, 0, 0, 0x05};

TEST(VrrpFrames, DecodeCleanlyInTshark) {
  const IpAddr vips4[] = {kVip4, IpAddr::v4(10, 1, 0, 253)};
  const IpAddr vips6[] = {kVip6};
  const Mac vmac4 = virtualMac(10, false), vmac6 = virtualMac(20, true);
  std::vector<Frame> frames = {
      build([&](MutableBytes o) {
        return buildAdvertFrame(o, {10, 150, 10, vips4}, kSrc4);
      }),
      build([&](MutableBytes o) {
        return buildAdvertFrame(o, {20, 0, 4095, vips6}, kLinkLocal);
      }),
      build([&](MutableBytes o) { return buildGratuitousArp(o, vmac4, kVip4); }),
      build([&](MutableBytes o) {
        return buildArpReply(o, vmac4, kVip4, kHostMac, IpAddr::v4(10, 1, 0, 5));
      }),
      build([&](MutableBytes o) { return buildUnsolicitedNa(o, vmac6, kLinkLocal, kVip6, true); }),
      build([&](MutableBytes o) {
        return buildSolicitedNa(o, vmac6, kVip6, false, kHost6, kHostMac);
      }),
  };
  // A control: tshark does check the VRRPv3 checksum over the pseudo-header.
  Frame bad = frames[0];
  bad[40] ^= std::byte(0x01);
  frames.push_back(bad);
  // A unicast advertisement as the raw IP socket sends it (the kernel writes
  // the IPv4 header; here by hand): the VRRP checksum covers the pseudo-header
  // with the peer's unicast address.
  {
    const IpAddr peer = IpAddr::v4(10, 1, 0, 3);
    Frame payload(64);
    const size_t n = encodeVrrpAdvert(MutableBytes(payload), {10, 150, 10, vips4}, kSrc4, peer);
    ASSERT_GT(n, 0u);
    Frame f = {std::byte{2}, std::byte{0}, std::byte{0},    std::byte{0},   std::byte{0},
               std::byte{3}, std::byte{2}, std::byte{0},    std::byte{0},   std::byte{0},
               std::byte{0}, std::byte{2}, std::byte{0x08}, std::byte{0x00}};
    const size_t total = 20 + n;
    const uint8_t ip[20] = {0x45,
                            0xc0,
                            static_cast<uint8_t>(total >> 8),
                            static_cast<uint8_t>(total),
                            0,
                            0,
                            0,
                            0,
                            255,
                            112,
                            0,
                            0,
                            10,
                            1,
                            0,
                            2,
                            10,
                            1,
                            0,
                            3};
    for (uint8_t b : ip) {
      f.push_back(std::byte{b});
    }
    uint32_t sum = 0;
    for (size_t i = 0; i < 20; i += 2) {
      sum += (ip[i] << 8) | ip[i + 1];
    }
    while (sum >> 16) {
      sum = (sum & 0xffff) + (sum >> 16);
    }
    f[24] = std::byte(static_cast<uint8_t>(~sum >> 8));
    f[25] = std::byte(static_cast<uint8_t>(~sum));
    f.insert(f.end(), payload.begin(), payload.begin() + static_cast<std::ptrdiff_t>(n));
    frames.push_back(f);
  }
  std::vector<std::string> lines = decode(
      frames,
      "-e eth.src -e eth.dst -e ip.ttl -e ipv6.hlim -e ip.checksum.status -e vrrp.version "
      "-e vrrp.type -e vrrp.virt_rtr_id -e vrrp.prio -e vrrp.addr_count -e vrrp.short_adver_int "
      "-e vrrp.ip_addr -e vrrp.ipv6_addr -e vrrp.checksum.status -e arp.opcode "
      "-e arp.isgratuitous -e icmpv6.type -e icmpv6.checksum.status -e icmpv6.nd.na.flag.r "
      "-e icmpv6.nd.na.flag.s -e icmpv6.nd.na.flag.o -e icmpv6.opt.linkaddr "
      "-e _ws.malformed -e _ws.expert.severity");
  ASSERT_EQ(lines.size(), 8u);
  // Fields: eth src | eth dst | ip ttl | ipv6 hop limit | ip checksum status | vrrp version |
  // type | vrid | priority | count | interval | IPv4 addresses | IPv6 addresses | vrrp
  // checksum status | arp opcode | gratuitous | icmpv6 type | icmpv6 checksum status | NA R |
  // S | O | link-layer option | malformed | expert severity.  Checksum status 1: good, 0: bad.
  // The IPv4 advertisement: from the virtual MAC to 01:00:5e:00:00:12, TTL 255, both
  // checksums good, VRRPv3 type 1, VRID 10, priority 150, 10 cs, two addresses.
  EXPECT_EQ(
      lines[0],
      "00:00:5e:00:01:0a|01:00:5e:00:00:12|255||1|3|1|10|150|2|10|10.1.0.254,10.1.0.253||1|||||"
      "|||||");
  // The IPv6 one with priority 0 (a stopping Active) and the longest interval.
  EXPECT_EQ(
      lines[1],
      "00:00:5e:00:02:14|33:33:00:00:00:12||255||3|1|20|0|1|4095||2001:db8:1::fe|1||||||||||");
  // Gratuitous ARP (a request, recognised as gratuitous) and the ARP reply.
  EXPECT_EQ(lines[2], "00:00:5e:00:01:0a|ff:ff:ff:ff:ff:ff|||||||||||||1|1||||||||");
  EXPECT_EQ(lines[3], "00:00:5e:00:01:0a|02:00:00:00:00:05|||||||||||||2|||||||||");
  // Unsolicited NA to all nodes: Router and Override, not Solicited; solicited NA to the
  // solicitor: Solicited and Override; both with the virtual MAC as target link-layer address.
  EXPECT_EQ(lines[4],
            "00:00:5e:00:02:14|33:33:00:00:00:01||255|||||||||||||136|1|1|0|1|00:00:5e:00:02:14||");
  EXPECT_EQ(lines[5],
            "00:00:5e:00:02:14|02:00:00:00:00:05||255|||||||||||||136|1|0|1|1|00:00:5e:00:02:14||");
  // The corrupted copy: checksum bad, an expert error (PI_ERROR).
  EXPECT_EQ(
      lines[6],
      "00:00:5e:00:01:0a|01:00:5e:00:00:12|255||1|3|1|10|150|2|10|10.1.0.254,10.1.0.253||0|||||"
      "|||||6291456");
  // The unicast advertisement: both checksums good, nothing flagged.
  EXPECT_EQ(lines[7],
            "02:00:00:00:00:02|02:00:00:00:00:03|255||1|3|1|10|150|2|10|10.1.0.254,10.1.0.253||1|||"
            "|||||||");
}

}  // namespace
}  // namespace mcgw::test
