// The IPFIX export (control/flows/ipfix_exporter.hpp, libfixbuf) sent over
// UDP to a socket on loopback: the messages checked byte by byte against
// RFC 7011's layout (message header, template set, data sets), then written
// to a pcap and decoded by tshark, which must find every field and nothing
// malformed.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "control/flows/ipfix_exporter.hpp"

namespace mcgw::flows {
namespace {

using Datagram = std::vector<uint8_t>;

uint16_t be16(const uint8_t* p) {
  return static_cast<uint16_t>(p[0] << 8 | p[1]);
}
uint32_t be32(const uint8_t* p) {
  return uint32_t{be16(p)} << 16 | be16(p + 2);
}
uint64_t be64(const uint8_t* p) {
  return uint64_t{be32(p)} << 32 | be32(p + 4);
}

// A UDP socket on 127.0.0.1, an ephemeral port.
struct Collector {
  int fd = -1;
  uint16_t port = 0;
  explicit Collector(uint16_t at = 0) {
    fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(at);
    EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    socklen_t len = sizeof a;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    port = ntohs(a.sin_port);
  }
  ~Collector() { ::close(fd); }
  std::vector<Datagram> receive() {
    std::vector<Datagram> out;
    pollfd p{fd, POLLIN, 0};
    while (::poll(&p, 1, 200) == 1) {
      Datagram d(65536);
      const ssize_t n = ::recv(fd, d.data(), d.size(), 0);
      if (n <= 0) {
        break;
      }
      d.resize(static_cast<size_t>(n));
      out.push_back(std::move(d));
    }
    return out;
  }
};

ExportFlow flow4() {
  ExportFlow x;
  FlowRecord& r = x.flow;
  r.key.vni = 1001;
  r.key.line = 6;  // interface 7
  r.key.direction = static_cast<uint8_t>(engine::FlowDirection::kToTunnel);
  r.key.ip_version = 4;
  r.key.protocol = 6;
  const uint8_t src[4] = {10, 1, 0, 10}, dst[4] = {10, 2, 0, 10};
  std::memcpy(r.key.src, src, 4);
  std::memcpy(r.key.dst, dst, 4);
  r.key.src_port = 40000;
  r.key.dst_port = 5201;
  r.packets = 7000;
  r.bytes = 10485760;
  r.first_ms = 1764900000123;
  r.last_ms = 1764900004567;
  r.tcp_flags = 0x1b;
  r.end_reason = EndReason::kIdle;
  x.vrf = 1001;
  return x;
}

ExportFlow flow6() {
  ExportFlow x = flow4();
  FlowRecord& r = x.flow;
  r.key.ip_version = 6;
  r.key.protocol = 17;
  r.key.direction = static_cast<uint8_t>(engine::FlowDirection::kFromTunnel);
  std::memset(r.key.src, 0, 16);
  std::memset(r.key.dst, 0, 16);
  r.key.src[0] = 0xfd;
  r.key.src[15] = 1;
  r.key.dst[0] = 0xfd;
  r.key.dst[15] = 2;
  r.key.src_port = 5353;
  r.key.dst_port = 53;
  r.tcp_flags = 0;
  r.end_reason = EndReason::kActive;
  return x;
}

// The templates the messages carry: template id -> [(element id, length)].
using Templates = std::map<uint16_t, std::vector<std::pair<uint16_t, uint16_t>>>;

// flow4's 5-tuple denied by a policy rule (from a LAN port: no line), and
// dropped red by the meter on line slot 6.
ExportFlow denied4() {
  ExportFlow x = flow4();
  x.flow.key.status = static_cast<uint8_t>(engine::FlowStatus::kPolicyDeny);
  x.flow.key.rule = 12;
  x.flow.key.line = engine::kNoLine;
  x.flow.key.peer = engine::kNoPeer;
  x.flow.rule_name = "no-ssh";
  return x;
}
ExportFlow red4() {
  ExportFlow x = flow4();
  x.flow.key.status = static_cast<uint8_t>(engine::FlowStatus::kRateLimit);
  return x;
}
ExportFlow isolated6() {
  ExportFlow x = flow6();
  x.flow.key.status = static_cast<uint8_t>(engine::FlowStatus::kIsolation);
  x.flow.key.rule = 3;
  return x;
}

// Walks one IPFIX message (RFC 7011 3.1, 3.3, 3.4.1); returns the data
// records' bytes by template id.
std::vector<std::pair<uint16_t, Datagram>> walk(const Datagram& m, Templates& templates) {
  std::vector<std::pair<uint16_t, Datagram>> records;
  EXPECT_GE(m.size(), 16u);
  EXPECT_EQ(be16(&m[0]), 10);  // version
  EXPECT_EQ(be16(&m[2]), m.size());
  EXPECT_EQ(be32(&m[12]), 0u);  // observation domain
  size_t at = 16;
  while (at + 4 <= m.size()) {
    const uint16_t id = be16(&m[at]);
    const uint16_t len = be16(&m[at + 2]);
    EXPECT_GE(len, 4);
    EXPECT_LE(at + len, m.size());
    if (len < 4 || at + len > m.size()) {
      break;
    }
    const size_t end = at + len;
    size_t p = at + 4;
    if (id == 2) {  // template set
      while (p + 4 <= end) {
        const uint16_t tid = be16(&m[p]);
        const uint16_t count = be16(&m[p + 2]);
        p += 4;
        auto& fields = templates[tid];
        fields.clear();
        for (uint16_t i = 0; i < count; ++i) {
          EXPECT_EQ(m[p] & 0x80, 0) << "no enterprise element expected";
          fields.push_back({be16(&m[p]), be16(&m[p + 2])});
          p += 4;
        }
      }
    } else if (id >= 256) {
      auto t = templates.find(id);
      EXPECT_NE(t, templates.end()) << "data set " << id << " before its template";
      if (t != templates.end()) {
        size_t rl = 0;
        for (auto& f : t->second) {
          rl += f.second;
        }
        while (p + rl <= end) {
          records.push_back({id, Datagram(m.begin() + static_cast<long>(p),
                                          m.begin() + static_cast<long>(p + rl))});
          p += rl;
        }
        EXPECT_LT(end - p, 4u) << "padding only after the records";
      }
    }
    at = end;
  }
  EXPECT_EQ(at, m.size());
  return records;
}

// field id -> value bytes of one record.
std::map<uint16_t, Datagram> fields(const Templates& templates, uint16_t tid, const Datagram& r) {
  std::map<uint16_t, Datagram> out;
  size_t p = 0;
  for (auto& [id, len] : templates.at(tid)) {
    out[id] = Datagram(r.begin() + static_cast<long>(p), r.begin() + static_cast<long>(p + len));
    p += len;
  }
  return out;
}

TEST(IpfixExport, MessagesFollowRfc7011) {
  Collector c;
  auto e = IpfixExporter::open({*config::IpAddress::parse("127.0.0.1"), c.port}, 0);
  ASSERT_TRUE(e) << e.error();
  ASSERT_TRUE((*e)->sendTemplates()) << (*e)->stats().last_error;
  std::vector<ExportFlow> flows = {flow4(), flow6(), flow4(), denied4(), red4(), isolated6()};
  ASSERT_TRUE((*e)->send(flows)) << (*e)->stats().last_error;
  EXPECT_EQ((*e)->stats().records, 6u);
  EXPECT_EQ((*e)->stats().errors, 0u);
  const auto messages = c.receive();
  ASSERT_GE(messages.size(), 2u);
  Templates templates;
  std::vector<std::pair<uint16_t, Datagram>> records;
  uint32_t sequence = 0;
  for (const auto& m : messages) {
    EXPECT_EQ(be32(&m[8]), sequence) << "sequence: data records before this message";
    auto r = walk(m, templates);
    sequence += static_cast<uint32_t>(r.size());
    records.insert(records.end(), r.begin(), r.end());
  }
  ASSERT_TRUE(templates.count(kTemplateIpv4));
  ASSERT_TRUE(templates.count(kTemplateIpv6));
  // No samplingPacketInterval (305): the counts are already scaled.
  const std::vector<uint16_t> v4 = {152, 153, 2, 1, 8, 12, 234, 10, 14, 7, 11, 6, 4, 61, 136, 89};
  std::vector<uint16_t> got4;
  for (auto& f : templates[kTemplateIpv4]) {
    got4.push_back(f.first);
  }
  EXPECT_EQ(got4, v4);
  // forwardingStatus in one octet (IANA: unsigned8), in both templates.
  EXPECT_EQ(templates[kTemplateIpv4].back(), (std::pair<uint16_t, uint16_t>{89, 1}));
  EXPECT_EQ(templates[kTemplateIpv6].back(), (std::pair<uint16_t, uint16_t>{89, 1}));
  ASSERT_EQ(records.size(), 6u);
  EXPECT_EQ(records[0].first, kTemplateIpv4);
  EXPECT_EQ(records[1].first, kTemplateIpv6);
  auto f = fields(templates, kTemplateIpv4, records[0].second);
  EXPECT_EQ(be64(f[152].data()), 1764900000123u);
  EXPECT_EQ(be64(f[153].data()), 1764900004567u);
  EXPECT_EQ(be64(f[2].data()), 7000u);
  EXPECT_EQ(be64(f[1].data()), 10485760u);
  EXPECT_EQ(f[8], (Datagram{10, 1, 0, 10}));
  EXPECT_EQ(f[12], (Datagram{10, 2, 0, 10}));
  EXPECT_EQ(be32(f[234].data()), 1001u);
  EXPECT_EQ(be32(f[10].data()), 0u);
  EXPECT_EQ(be32(f[14].data()), 7u);
  EXPECT_EQ(be16(f[7].data()), 40000);
  EXPECT_EQ(be16(f[11].data()), 5201);
  EXPECT_EQ(be16(f[6].data()), 0x1b);
  EXPECT_EQ(f[4], Datagram{6});
  EXPECT_EQ(f[61], Datagram{1});     // egress: into the tunnel
  EXPECT_EQ(f[136], Datagram{1});    // idle timeout
  EXPECT_EQ(f[89], Datagram{0x40});  // forwarded (reason unknown)
  auto g = fields(templates, kTemplateIpv6, records[1].second);
  ASSERT_EQ(g[27].size(), 16u);
  EXPECT_EQ(g[27][0], 0xfd);
  EXPECT_EQ(g[27][15], 1);
  EXPECT_EQ(g[28][15], 2);
  EXPECT_EQ(be32(g[10].data()), 7u);  // out of a tunnel: the line is the ingress interface
  EXPECT_EQ(be32(g[14].data()), 0u);
  EXPECT_EQ(g[61], Datagram{0});
  EXPECT_EQ(g[136], Datagram{2});
  EXPECT_EQ(g[89], Datagram{0x40});
  // The denied and dropped ones: RFC 7270's status in the two high bits
  // (2: dropped), the reason in the low six (1: ACL deny, 10: policer).
  auto d = fields(templates, kTemplateIpv4, records[3].second);
  EXPECT_EQ(d[89], Datagram{0x81});
  EXPECT_EQ(be32(d[10].data()), 0u);  // from a LAN port: no line either way
  EXPECT_EQ(be32(d[14].data()), 0u);
  EXPECT_EQ(d[8], (Datagram{10, 1, 0, 10}));
  auto red = fields(templates, kTemplateIpv4, records[4].second);
  EXPECT_EQ(red[89], Datagram{0x8a});
  EXPECT_EQ(be32(red[14].data()), 7u);  // the line whose meter dropped it
  EXPECT_EQ(records[5].first, kTemplateIpv6);
  auto iso = fields(templates, kTemplateIpv6, records[5].second);
  EXPECT_EQ(iso[89], Datagram{0x81});
}

TEST(IpfixExport, ForwardingStatusCodes) {
  using engine::FlowStatus;
  EXPECT_EQ(forwardingStatus(static_cast<uint8_t>(FlowStatus::kForwarded)), 64);
  EXPECT_EQ(forwardingStatus(static_cast<uint8_t>(FlowStatus::kPolicyDeny)), 129);
  EXPECT_EQ(forwardingStatus(static_cast<uint8_t>(FlowStatus::kIsolation)), 129);
  EXPECT_EQ(forwardingStatus(static_cast<uint8_t>(FlowStatus::kRateLimit)), 138);
  EXPECT_EQ(forwardingStatus(static_cast<uint8_t>(FlowStatus::kLineFull)), 128);
  EXPECT_EQ(forwardingStatus(200), 128);  // none of ours: dropped, unknown
  EXPECT_STREQ(statusName(static_cast<uint8_t>(FlowStatus::kPolicyDeny)), "policy-deny");
  EXPECT_STREQ(statusName(static_cast<uint8_t>(FlowStatus::kIsolation)), "tenant-isolation");
  EXPECT_STREQ(statusName(static_cast<uint8_t>(FlowStatus::kRateLimit)), "rate-limit");
  EXPECT_STREQ(statusName(static_cast<uint8_t>(FlowStatus::kForwarded)), "forwarded");
  EXPECT_STREQ(statusName(static_cast<uint8_t>(FlowStatus::kLineFull)), "line-full");
  EXPECT_EQ(lineInterface(engine::kNoLine), 0u);
  EXPECT_EQ(lineInterface(0), 1u);
}

// The datagrams as a pcap (Ethernet, IPv4, UDP to port 4739).
void writePcap(const std::string& path, const std::vector<Datagram>& messages) {
  std::ofstream out(path, std::ios::binary);
  auto put = [&](const void* p, size_t n) { out.write(static_cast<const char*>(p), n); };
  const uint32_t header[6] = {0xa1b2c3d4, 0x00040002, 0, 0, 65535, 1};
  put(header, sizeof header);
  uint32_t ts = 1764900000;
  for (const auto& m : messages) {
    std::vector<uint8_t> f(14 + 20 + 8 + m.size());
    f[12] = 0x08;
    uint8_t* ip = &f[14];
    ip[0] = 0x45;
    ip[2] = static_cast<uint8_t>((20 + 8 + m.size()) >> 8);
    ip[3] = static_cast<uint8_t>(20 + 8 + m.size());
    ip[8] = 64;
    ip[9] = 17;
    ip[12] = 127, ip[15] = 1, ip[16] = 127, ip[19] = 1;
    uint8_t* udp = ip + 20;
    udp[0] = 0xc0, udp[1] = 0x00;
    udp[2] = 4739 >> 8, udp[3] = 4739 & 0xff;
    udp[4] = static_cast<uint8_t>((8 + m.size()) >> 8);
    udp[5] = static_cast<uint8_t>(8 + m.size());
    std::memcpy(udp + 8, m.data(), m.size());
    const uint32_t rec[4] = {ts++, 0, static_cast<uint32_t>(f.size()),
                             static_cast<uint32_t>(f.size())};
    put(rec, sizeof rec);
    put(f.data(), f.size());
  }
}

std::string run(const std::string& cmd) {
  std::string out;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) {
    return out;
  }
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) {
    out.append(buf, n);
  }
  ::pclose(p);
  return out;
}

TEST(IpfixExport, TsharkDecodesEveryFieldAndNothingMalformed) {
  Collector c;
  auto e = IpfixExporter::open({*config::IpAddress::parse("127.0.0.1"), c.port}, 0);
  ASSERT_TRUE(e) << e.error();
  // One record per message: tshark prints a frame's fields together.
  std::vector<ExportFlow> one = {flow4()}, other = {flow6()}, denied = {denied4()}, red = {red4()};
  ASSERT_TRUE((*e)->send(one)) << (*e)->stats().last_error;  // templates go first
  ASSERT_TRUE((*e)->send(other)) << (*e)->stats().last_error;
  ASSERT_TRUE((*e)->send(denied)) << (*e)->stats().last_error;
  ASSERT_TRUE((*e)->send(red)) << (*e)->stats().last_error;
  EXPECT_EQ((*e)->stats().templates, 1u);
  const auto messages = c.receive();
  ASSERT_FALSE(messages.empty());
  char dir[] = "/tmp/mcgw-ipfix-XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  const std::string pcap = std::string(dir) + "/ipfix.pcap";
  writePcap(pcap, messages);
  const std::string tshark = "tshark -n -r " + pcap + " -d udp.port==4739,cflow ";
  EXPECT_EQ(run(tshark + "-Y _ws.malformed 2>/dev/null"), "");
  EXPECT_EQ(run(tshark + "-Y _ws.expert.severity==error 2>/dev/null"), "");
  EXPECT_EQ(run(tshark + "-Y cflow 2>/dev/null | wc -l"), std::to_string(messages.size()) + "\n");
  const std::string got =
      run(tshark +
          "-Y cflow.srcport -T fields -E separator=\\; -e cflow.srcaddr -e cflow.srcaddrv6 "
          "-e cflow.dstaddr -e cflow.dstaddrv6 -e cflow.srcport -e cflow.dstport -e cflow.protocol "
          "-e cflow.packets -e cflow.octets -e cflow.ingress_vrfid -e cflow.inputint "
          "-e cflow.outputint -e cflow.direction -e cflow.flow_end_reason -e cflow.tcpflags "
          "2>/dev/null");
  EXPECT_NE(got.find("10.1.0.10;;10.2.0.10;;40000;5201;6;7000;10485760;1001;0;7;1;1;0x001b\n"),
            std::string::npos)
      << got;
  EXPECT_NE(got.find("\n;fd00::1;;fd00::2;5353;53;17;7000;10485760;1001;7;0;0;2;0x0000\n"),
            std::string::npos)
      << got;
  // forwardingStatus as Wireshark reads RFC 7270: the status (1 forwarded,
  // 2 dropped) and its reason code, frame by frame.
  const std::string status =
      run(tshark +
          "-Y cflow.forwarding_status -T fields -E separator=\\; -e cflow.forwarding_status "
          "-e cflow.forwarding_status_forward_code -e cflow.forwarding_status_drop_code "
          "-e cflow.outputint 2>/dev/null");
  EXPECT_EQ(status, "1;0;;7\n1;0;;0\n2;;1;0\n2;;10;7\n") << status;
  const std::string named = run(tshark + "-Y cflow.forwarding_status -V 2>/dev/null");
  EXPECT_NE(named.find("Drop ACL Deny"), std::string::npos) << named;
  EXPECT_NE(named.find("Drop Policer"), std::string::npos) << named;
  const std::string times = run(
      tshark + "-Y cflow.srcport -T fields -e cflow.abstimestart -e cflow.abstimeend 2>/dev/null");
  EXPECT_NE(times.find("Dec  5, 2025 02:00:00.123000000 UTC\tDec  5, 2025 02:00:04.567000000 UTC"),
            std::string::npos)
      << times;
  run("rm -rf " + std::string(dir));
}

TEST(IpfixExport, ARefusedSendLosesItsBatchOnceBacksOffAndSendsTemplatesAgain) {
  // A collector that is not there yet (a closed port on loopback): the
  // ICMP port unreachable drawn by the templates' message fails the next
  // send on the connected socket with ECONNREFUSED.
  uint16_t port;
  {
    Collector gone;
    port = gone.port;
  }
  auto e = IpfixExporter::open({*config::IpAddress::parse("127.0.0.1"), port}, 0);
  ASSERT_TRUE(e) << e.error();
  const auto& s = (*e)->stats();
  // 50 records: several messages (kMaxMessage), all lost with the first.
  std::vector<ExportFlow> batch(50, flow4());
  for (size_t i = 0; i < batch.size(); ++i) {
    batch[i].flow.key.src_port = static_cast<uint16_t>(30000 + i);
  }
  const auto t0 = IpfixExporter::Clock::now();
  EXPECT_FALSE((*e)->send(batch, t0));
  EXPECT_EQ(s.templates, 1u);
  EXPECT_EQ(s.errors, 1u) << "one failed message, then the rest of the batch dropped";
  EXPECT_NE(s.last_error.find("Connection refused"), std::string::npos) << s.last_error;
  EXPECT_EQ(s.records, 0u);
  EXPECT_EQ(s.lost, 50u);
  EXPECT_TRUE((*e)->backingOff(t0 + kBackoff / 2));
  // Backing off: nothing is tried, the records are lost (counted).
  std::vector<ExportFlow> one = {flow4()};
  one[0].flow.key.src_port = 40001;
  EXPECT_FALSE((*e)->send(one, t0 + kBackoff / 2));
  EXPECT_FALSE((*e)->sendTemplates(t0 + kBackoff / 2));
  EXPECT_EQ(s.errors, 1u);
  EXPECT_EQ(s.lost, 51u);
  EXPECT_EQ(s.templates, 1u);
  // The collector comes up; after the back-off the templates go first,
  // then the record, once: nothing of the failed batch follows.
  Collector c(port);
  ASSERT_EQ(c.port, port);
  EXPECT_TRUE((*e)->send(one, t0 + kBackoff)) << s.last_error;
  EXPECT_EQ(s.errors, 1u);
  EXPECT_EQ(s.templates, 2u);
  EXPECT_EQ(s.records, 1u);
  EXPECT_EQ(s.lost, 51u);
  const auto messages = c.receive();
  ASSERT_EQ(messages.size(), 2u);
  Templates templates;
  std::vector<std::pair<uint16_t, Datagram>> records;
  for (const auto& m : messages) {
    EXPECT_EQ(be32(&m[8]), 0u) << "sequence: no data record was sent before";
    auto r = walk(m, templates);
    records.insert(records.end(), r.begin(), r.end());
  }
  EXPECT_TRUE(templates.count(kTemplateIpv4));
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(be16(fields(templates, kTemplateIpv4, records[0].second)[7].data()), 40001);
  // Going on: the sequence number counts the record sent.
  EXPECT_TRUE((*e)->send(one, t0 + kBackoff));
  const auto next = c.receive();
  ASSERT_EQ(next.size(), 1u);
  EXPECT_EQ(be32(&next[0][8]), 1u);
  EXPECT_EQ(s.records, 2u);
}

TEST(IpfixExport, LargeBatchesAreSplitIntoMessagesThatFitTheMaximum) {
  Collector c;
  auto e = IpfixExporter::open({*config::IpAddress::parse("127.0.0.1"), c.port}, 0);
  ASSERT_TRUE(e) << e.error();
  std::vector<ExportFlow> batch;
  for (int i = 0; i < 100; ++i) {
    batch.push_back(i % 2 ? flow4() : flow6());
    batch.back().flow.key.src_port = static_cast<uint16_t>(20000 + i);
  }
  ASSERT_TRUE((*e)->send(batch)) << (*e)->stats().last_error;
  const auto messages = c.receive();
  ASSERT_GE(messages.size(), 3u);
  Templates templates;
  size_t records = 0;
  uint32_t sequence = 0;
  for (const auto& m : messages) {
    EXPECT_LE(m.size(), kMaxMessage);
    EXPECT_EQ(be32(&m[8]), sequence);
    const auto r = walk(m, templates);
    sequence += static_cast<uint32_t>(r.size());
    records += r.size();
  }
  EXPECT_EQ(records, 100u);
  EXPECT_EQ((*e)->stats().records, 100u);
  EXPECT_EQ((*e)->stats().lost, 0u);
}

}  // namespace
}  // namespace mcgw::flows
