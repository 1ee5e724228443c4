// mcgw's XDP program (ebpf/mcgw_xdp.bpf.c) as the build made it: loaded with
// libbpf and run on packet fixtures with BPF_PROG_TEST_RUN, its maps filled
// and read through XdpMaps; then attached for real to a veth pair in a
// private network namespace.  Needs root (CAP_BPF, CAP_NET_ADMIN).
//
// Under BPF_PROG_TEST_RUN the packet arrives on queue 0, where xsks_map has
// no socket, so a redirect falls back to XDP_PASS: the decision shows in the
// counters (the verdict, plus redirect-no-socket for a redirect), not in the
// return code.  The fixture binds a real AF_XDP socket to queue 1 of a veth
// in a private namespace and puts it into xsks_map[1], as the af_xdp PMD
// does: the fast path counts as alive, so BGP and BFD pass to the kernel
// (without it they are dropped, drop-no-fast-path).
#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/bpf.h>
#include <linux/if_link.h>
#include <linux/if_packet.h>
#include <linux/if_xdp.h>
#include <net/if.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "ebpf/xdp_maps.hpp"
#include "tests/support/netns.hpp"
#include "tests/support/process.hpp"

namespace mcgw::ebpf {
namespace {

using Bytes = std::vector<uint8_t>;
using Mac = std::array<uint8_t, 6>;

constexpr Mac kPortMac{0x02, 0, 0, 0, 0, 0x01};
constexpr Mac kPeerMac{0x02, 0, 0, 0, 0, 0x02};
constexpr Mac kBroadcastMac{0xff, 0xff, 0xff, 0xff, 0xff, 0xff};

// Our addresses in the fixtures.
constexpr const char* kVtep4 = "198.51.100.1";  // VTEP (also where BGP may go)
constexpr const char* kVtep6 = "2001:db8:f::1";
constexpr const char* kWan4 = "203.0.113.1";  // a local WAN address
constexpr const char* kLan4 = "10.1.0.1";     // the LAN gateway address
constexpr const char* kLan6 = "2001:db8:1::1";
constexpr const char* kLinkLocal6 = "fe80::1";
constexpr const char* kPeer4 = "198.51.100.2";
constexpr const char* kPeer6 = "2001:db8:f::2";
// A VRRP virtual address on the LAN (not in the local-address map) and the
// group's virtual MAC (VRID 10).
constexpr const char* kVirtual4 = "10.1.0.254";
constexpr const char* kVirtual6 = "2001:db8:1::fe";
constexpr Mac kVirtualMac{0x00, 0x00, 0x5e, 0x00, 0x01, 0x0a};

config::IpAddress addr(const char* s) {
  auto a = config::IpAddress::parse(s);
  EXPECT_TRUE(a.has_value()) << s;
  return a.value_or(config::IpAddress{});
}

// --- packet building ---------------------------------------------------------

void put16(Bytes& b, uint16_t v) {
  b.push_back(static_cast<uint8_t>(v >> 8));
  b.push_back(static_cast<uint8_t>(v));
}

void append(Bytes& b, const Bytes& more) {
  b.insert(b.end(), more.begin(), more.end());
}

Bytes ip4(const char* s) {
  Bytes b(4);
  EXPECT_EQ(inet_pton(AF_INET, s, b.data()), 1) << s;
  return b;
}

Bytes ip6(const char* s) {
  Bytes b(16);
  EXPECT_EQ(inet_pton(AF_INET6, s, b.data()), 1) << s;
  return b;
}

uint16_t checksum(const uint8_t* p, size_t n) {
  uint32_t sum = 0;
  for (size_t i = 0; i + 1 < n; i += 2) {
    sum += static_cast<uint32_t>(p[i] << 8 | p[i + 1]);
  }
  if (n % 2) {
    sum += static_cast<uint32_t>(p[n - 1] << 8);
  }
  while (sum >> 16) {
    sum = (sum & 0xffff) + (sum >> 16);
  }
  return static_cast<uint16_t>(~sum);
}

Bytes ethernet(const Mac& dst, uint16_t type, const Bytes& payload) {
  Bytes b(dst.begin(), dst.end());
  b.insert(b.end(), kPeerMac.begin(), kPeerMac.end());
  put16(b, type);
  append(b, payload);
  return b;
}

Bytes vlan(uint16_t tpid, uint16_t vid, uint16_t type, const Bytes& payload) {
  Bytes b(kPortMac.begin(), kPortMac.end());
  b.insert(b.end(), kPeerMac.begin(), kPeerMac.end());
  put16(b, tpid);
  put16(b, vid);
  put16(b, type);
  append(b, payload);
  return b;
}

struct Ipv4Options {
  uint8_t option_words = 0;  // 32-bit words of options (IHL = 5 + this)
  uint16_t frag = 0x4000;    // DF
  int ihl = -1;              // override the IHL nibble
  int total = -1;            // override the total length
};

Bytes ipv4(const char* src, const char* dst, uint8_t proto, const Bytes& payload,
           const Ipv4Options& o = {}) {
  const size_t hlen = 20 + 4u * o.option_words;
  Bytes b;
  b.push_back(static_cast<uint8_t>(0x40 | (o.ihl >= 0 ? o.ihl : static_cast<int>(hlen / 4))));
  b.push_back(0);
  put16(b, static_cast<uint16_t>(o.total >= 0 ? o.total : static_cast<int>(hlen + payload.size())));
  put16(b, 0x1234);
  put16(b, o.frag);
  b.push_back(64);
  b.push_back(proto);
  put16(b, 0);
  append(b, ip4(src));
  append(b, ip4(dst));
  for (size_t i = 20; i < hlen; ++i) {
    b.push_back(0x01);  // NOP options
  }
  uint16_t c = checksum(b.data(), hlen);
  b[10] = static_cast<uint8_t>(c >> 8);
  b[11] = static_cast<uint8_t>(c);
  append(b, payload);
  return b;
}

Bytes ipv6(const char* src, const char* dst, uint8_t next, const Bytes& payload) {
  Bytes b{0x60, 0, 0, 0};
  put16(b, static_cast<uint16_t>(payload.size()));
  b.push_back(next);
  b.push_back(64);
  append(b, ip6(src));
  append(b, ip6(dst));
  append(b, payload);
  return b;
}

Bytes udp(uint16_t sport, uint16_t dport, const Bytes& payload) {
  Bytes b;
  put16(b, sport);
  put16(b, dport);
  put16(b, static_cast<uint16_t>(8 + payload.size()));
  put16(b, 0);
  append(b, payload);
  return b;
}

Bytes tcpSyn(uint16_t sport, uint16_t dport) {
  Bytes b;
  put16(b, sport);
  put16(b, dport);
  b.insert(b.end(), {0, 0, 0, 1, 0, 0, 0, 0, 0x50, 0x02, 0xff, 0xff, 0, 0, 0, 0});
  return b;
}

Bytes icmpEcho() {
  Bytes b{8, 0, 0, 0, 0x12, 0x34, 0, 1, 'p', 'i', 'n', 'g'};
  uint16_t c = checksum(b.data(), b.size());
  b[2] = static_cast<uint8_t>(c >> 8);
  b[3] = static_cast<uint8_t>(c);
  return b;
}

Bytes icmp6(uint8_t type, const Bytes& body) {
  Bytes b{type, 0, 0, 0};  // checksum not checked by the program
  append(b, body);
  return b;
}

Bytes arp(uint16_t op, const char* sender, const char* target) {
  Bytes b;
  put16(b, 1);       // Ethernet
  put16(b, 0x0800);  // IPv4
  b.push_back(6);
  b.push_back(4);
  put16(b, op);
  b.insert(b.end(), kPeerMac.begin(), kPeerMac.end());
  append(b, ip4(sender));
  b.insert(b.end(), op == 2 ? kPortMac.begin() : kBroadcastMac.begin(),
           op == 2 ? kPortMac.end() : kBroadcastMac.end());
  append(b, ip4(target));
  return b;
}

Bytes innerFrame() {
  return ethernet(kPortMac, 0x0800, ipv4("10.2.0.5", "10.1.0.5", IPPROTO_UDP, udp(1000, 2000, {})));
}

Bytes vxlan(uint32_t vni) {
  Bytes b{0x08,
          0,
          0,
          0,
          static_cast<uint8_t>(vni >> 16),
          static_cast<uint8_t>(vni >> 8),
          static_cast<uint8_t>(vni),
          0};
  append(b, innerFrame());
  return b;
}

Bytes geneve(uint32_t vni) {
  Bytes b{0,
          0,
          0x65,
          0x58,
          static_cast<uint8_t>(vni >> 16),
          static_cast<uint8_t>(vni >> 8),
          static_cast<uint8_t>(vni),
          0};
  append(b, innerFrame());
  return b;
}

Bytes frame4(const char* src, const char* dst, uint8_t proto, const Bytes& l4,
             const Ipv4Options& o = {}) {
  return ethernet(kPortMac, 0x0800, ipv4(src, dst, proto, l4, o));
}

Bytes frame6(const char* src, const char* dst, uint8_t next, const Bytes& l4,
             const Mac& mac = kPortMac) {
  return ethernet(mac, 0x86dd, ipv6(src, dst, next, l4));
}

Bytes truncated(Bytes b, size_t n) {
  b.resize(n);
  return b;
}

// --- the program -------------------------------------------------------------

// mcgw_xdp.bpf.o from the build tree, loaded (not attached).
class LoadedProgram {
 public:
  LoadedProgram() {
    obj_ = bpf_object__open_file(kXdpObjectBuildPath, nullptr);
    if (obj_ == nullptr) {
      error_ = std::string("opening ") + kXdpObjectBuildPath + ": " + std::strerror(errno);
      return;
    }
    int ret = bpf_object__load(obj_);
    if (ret < 0) {
      error_ = std::string("loading ") + kXdpObjectBuildPath + ": " + std::strerror(-ret);
      return;
    }
    bpf_program* prog = bpf_object__next_program(obj_, nullptr);  // as the af_xdp PMD does
    fd_ = prog ? bpf_program__fd(prog) : -1;
    if (fd_ < 0) {
      error_ = "no program in the object";
    }
  }
  ~LoadedProgram() { bpf_object__close(obj_); }
  LoadedProgram(const LoadedProgram&) = delete;
  LoadedProgram& operator=(const LoadedProgram&) = delete;

  int fd() const { return fd_; }
  const std::string& error() const { return error_; }
  bpf_object* object() const { return obj_; }

 private:
  bpf_object* obj_ = nullptr;
  int fd_ = -1;
  std::string error_;
};

// An AF_XDP socket bound (copy mode) to queue `queue` of `ifname`, with a
// small UMEM and rings: enough for the kernel to accept it into an XSKMAP.
// Nothing is ever received on it.
class XdpSocket {
 public:
  XdpSocket(const char* ifname, uint32_t queue) {
    fd_ = ::socket(AF_XDP, SOCK_RAW | SOCK_CLOEXEC, 0);
    if (fd_ < 0) {
      error_ = std::string("socket(AF_XDP): ") + std::strerror(errno);
      return;
    }
    umem_ = ::mmap(nullptr, kUmemSize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (umem_ == MAP_FAILED) {
      umem_ = nullptr;
      error_ = std::string("mmap: ") + std::strerror(errno);
      return;
    }
    xdp_umem_reg reg{};
    reg.addr = reinterpret_cast<uint64_t>(umem_);
    reg.len = kUmemSize;
    reg.chunk_size = 2048;
    const int ring = 64;
    sockaddr_xdp sa{};
    sa.sxdp_family = AF_XDP;
    sa.sxdp_ifindex = if_nametoindex(ifname);
    sa.sxdp_queue_id = queue;
    sa.sxdp_flags = XDP_COPY;
    if (::setsockopt(fd_, SOL_XDP, XDP_UMEM_REG, &reg, sizeof reg) != 0 ||
        ::setsockopt(fd_, SOL_XDP, XDP_UMEM_FILL_RING, &ring, sizeof ring) != 0 ||
        ::setsockopt(fd_, SOL_XDP, XDP_UMEM_COMPLETION_RING, &ring, sizeof ring) != 0 ||
        ::setsockopt(fd_, SOL_XDP, XDP_RX_RING, &ring, sizeof ring) != 0 ||
        ::bind(fd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) {
      error_ =
          std::string("setting up the AF_XDP socket on ") + ifname + ": " + std::strerror(errno);
    }
  }
  ~XdpSocket() {
    if (fd_ >= 0) {
      ::close(fd_);
    }
    if (umem_ != nullptr) {
      ::munmap(umem_, kUmemSize);
    }
  }
  XdpSocket(const XdpSocket&) = delete;
  XdpSocket& operator=(const XdpSocket&) = delete;

  int fd() const { return fd_; }
  const std::string& error() const { return error_; }

 private:
  static constexpr size_t kUmemSize = 64 * 2048;
  int fd_ = -1;
  void* umem_ = nullptr;
  std::string error_;
};

struct RunResult {
  int err = 0;
  uint32_t retval = 0;
};

RunResult testRun(int prog_fd, const Bytes& packet) {
  bpf_test_run_opts opts{};
  opts.sz = sizeof opts;
  opts.data_in = packet.data();
  opts.data_size_in = static_cast<uint32_t>(packet.size());
  opts.repeat = 1;
  RunResult r;
  r.err = bpf_prog_test_run_opts(prog_fd, &opts);
  r.retval = opts.retval;
  return r;
}

bool isRedirect(XdpVerdict v) {
  return v == XdpVerdict::kREDIRECT_OVERLAY || v == XdpVerdict::kREDIRECT_TRANSIT;
}

// What the program counted between two snapshots, as "name +n (bytes +b)".
std::string delta(const XdpCounters& before, const XdpCounters& after) {
  std::string s;
  for (size_t i = 0; i < kXdpVerdictCount; ++i) {
    if (after[i].packets != before[i].packets) {
      s += std::string(kXdpVerdicts[i].name) + " +" +
           std::to_string(after[i].packets - before[i].packets) + " (bytes +" +
           std::to_string(after[i].bytes - before[i].bytes) + ") ";
    }
  }
  return s.empty() ? "nothing" : s;
}

class XdpProgramTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(prog_.error(), "");
    // The fast path's socket, on a queue the test runs never use (queue 1).
    ASSERT_TRUE(netns_.ok()) << "unshare(CLONE_NEWNET): " << std::strerror(errno);
    auto r = test::run(
        "ip link add xsk0 numtxqueues 2 numrxqueues 2 type veth peer name xsk1 numtxqueues 2 "
        "numrxqueues 2 && ip link set xsk0 up && ip link set xsk1 up");
    ASSERT_EQ(r.code, 0) << r.err;
    xsk_.emplace("xsk0", 1);
    ASSERT_EQ(xsk_->error(), "");
    xsks_fd_ = bpf_object__find_map_fd_by_name(prog_.object(), "xsks_map");
    ASSERT_GE(xsks_fd_, 0);
    setFastPath(true);
    auto m = XdpMaps::fromProgram(prog_.fd());
    ASSERT_TRUE(m.ok()) << m.error();
    maps_.emplace(std::move(*m));
    ASSERT_TRUE(maps_->setVteps({addr(kVtep4), addr(kVtep6)}).ok());
    ASSERT_TRUE(
        maps_->setLocalAddresses({addr(kWan4), addr(kLan4), addr(kLan6), addr(kLinkLocal6)}).ok());
  }

  XdpCounters counters() {
    auto c = maps_->counters();
    EXPECT_TRUE(c.ok()) << c.error();
    return c.ok() ? *c : XdpCounters{};
  }

  // Runs the packet and checks that exactly `verdict` was counted (and
  // redirect-no-socket besides a redirect), with the packet's length.
  void expectVerdict(XdpRole role, const Bytes& packet, XdpVerdict verdict,
                     uint32_t retval = XDP_PASS) {
    ASSERT_TRUE(maps_->setRole(role).ok());
    XdpCounters before = counters();
    RunResult r = testRun(prog_.fd(), packet);
    ASSERT_EQ(r.err, 0) << "BPF_PROG_TEST_RUN: " << std::strerror(-r.err);
    XdpCounters after = counters();
    EXPECT_EQ(r.retval, retval);
    XdpCounters want = before;
    at(want, verdict).packets += 1;
    at(want, verdict).bytes += packet.size();
    if (isRedirect(verdict)) {
      at(want, XdpVerdict::kREDIRECT_NO_SOCKET).packets += 1;
      at(want, XdpVerdict::kREDIRECT_NO_SOCKET).bytes += packet.size();
    }
    for (size_t i = 0; i < kXdpVerdictCount; ++i) {
      EXPECT_EQ(after[i].packets, want[i].packets) << kXdpVerdicts[i].name;
      EXPECT_EQ(after[i].bytes, want[i].bytes) << kXdpVerdicts[i].name;
    }
    EXPECT_EQ(delta(before, after), delta(before, want)) << "expected " << toString(verdict);
  }

  // Puts the socket into xsks_map[1] or takes it out (as closing it does).
  void setFastPath(bool alive) {
    const uint32_t key = 1;
    if (alive) {
      const int fd = xsk_->fd();
      ASSERT_EQ(bpf_map_update_elem(xsks_fd_, &key, &fd, BPF_ANY), 0) << std::strerror(errno);
    } else {
      ASSERT_EQ(bpf_map_delete_elem(xsks_fd_, &key), 0) << std::strerror(errno);
    }
  }

  test::PrivateNetns netns_;  // left last, taking the veth with it
  LoadedProgram prog_;
  std::optional<XdpSocket> xsk_;
  int xsks_fd_ = -1;
  std::optional<XdpMaps> maps_;
};

// --- the decision table ------------------------------------------------------

struct Case {
  const char* name;  // for the test's name
  XdpRole role;
  Bytes packet;
  XdpVerdict verdict;
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << c.name << " -> " << toString(c.verdict);
}

using V = XdpVerdict;
constexpr XdpRole kLan = XdpRole::kLan;
constexpr XdpRole kWan = XdpRole::kWan;
constexpr uint8_t kTcp = IPPROTO_TCP;
constexpr uint8_t kUdp = IPPROTO_UDP;
constexpr uint8_t kIcmp6 = 58;

std::vector<Case> decisionTable() {
  const Bytes vx = udp(49152, 4789, vxlan(1001));
  const Mac solicited_node_mac{0x33, 0x33, 0xff, 0x00, 0x00, 0x01};
  Bytes ns_body(4, 0);
  append(ns_body, ip6(kLan6));
  Bytes ns_virtual(4, 0);
  append(ns_virtual, ip6(kVirtual6));
  Bytes vrrp{0x31, 1, 100, 1, 0, 100, 0, 0};
  append(vrrp, ip4("10.1.0.254"));

  return {
      {"ArpRequest", kWan, ethernet(kBroadcastMac, 0x0806, arp(1, kPeer4, kWan4)), V::kPASS_ARP},
      {"ArpReply", kLan, ethernet(kPortMac, 0x0806, arp(2, "10.1.0.5", kLan4)), V::kPASS_ARP},
      // ARP and ND for a virtual address (VRRP: not one of the gateway's own
      // addresses) reach the kernel side, where mcgwd answers while Active.
      {"ArpRequestForAVirtualAddress", kLan,
       ethernet(kBroadcastMac, 0x0806, arp(1, "10.1.0.5", kVirtual4)), V::kPASS_ARP},
      {"UnicastArpRequestToTheVirtualMac", kLan,
       ethernet(kVirtualMac, 0x0806, arp(1, "10.1.0.5", kVirtual4)), V::kPASS_ARP},
      {"NeighbourSolicitationForAVirtualAddress", kLan,
       frame6("2001:db8:1::5", "ff02::1:ff00:fe", kIcmp6, icmp6(135, ns_virtual),
              Mac{0x33, 0x33, 0xff, 0x00, 0x00, 0xfe}),
       V::kPASS_ND},
      {"UnicastNeighbourSolicitationToTheVirtualAddress", kLan,
       frame6("2001:db8:1::5", kVirtual6, kIcmp6, icmp6(135, ns_virtual), kVirtualMac),
       V::kPASS_ND},
      {"TransitToTheVirtualMac", kLan,
       ethernet(kVirtualMac, 0x0800, ipv4("10.1.0.5", "10.2.0.5", kTcp, tcpSyn(40000, 443))),
       V::kREDIRECT_TRANSIT},
      {"VxlanToOurVtep", kWan, frame4(kPeer4, kVtep4, kUdp, vx), V::kREDIRECT_OVERLAY},
      {"GeneveToOurVtep", kWan, frame4(kPeer4, kVtep4, kUdp, udp(49152, 6081, geneve(1001))),
       V::kREDIRECT_OVERLAY},
      {"VxlanToOurVtepOnLanPort", kLan, frame4(kPeer4, kVtep4, kUdp, vx), V::kREDIRECT_OVERLAY},
      {"VxlanToAnotherVtep", kWan, frame4(kPeer4, "198.51.100.99", kUdp, vx),
       V::kPASS_NOT_OURS_WAN},
      {"Ipv6VxlanToOurVtep", kWan, frame6(kPeer6, kVtep6, kUdp, vx), V::kREDIRECT_OVERLAY},
      {"Ipv6GeneveToOurVtep", kWan, frame6(kPeer6, kVtep6, kUdp, udp(50000, 6081, geneve(7))),
       V::kREDIRECT_OVERLAY},
      {"BgpToOurAddress", kWan, frame4(kPeer4, kWan4, kTcp, tcpSyn(40000, 179)), V::kPASS_LOCAL},
      {"BgpToOurVtepAddress", kWan, frame4(kPeer4, kVtep4, kTcp, tcpSyn(40000, 179)),
       V::kPASS_LOCAL},
      {"BgpReplyFromPeer", kWan, frame4(kPeer4, kWan4, kTcp, tcpSyn(179, 40000)), V::kPASS_LOCAL},
      {"SshToLanAddress", kLan, frame4("10.1.0.5", kLan4, kTcp, tcpSyn(50000, 22)), V::kPASS_LOCAL},
      {"SshOverIpv6", kLan, frame6("2001:db8:1::5", kLan6, kTcp, tcpSyn(50000, 22)),
       V::kPASS_LOCAL},
      {"BfdToOurAddress", kWan, frame4(kPeer4, kWan4, kUdp, udp(49152, 3784, Bytes(24, 0))),
       V::kPASS_LOCAL},
      {"BfdMultihopToOurVtepAddress", kWan,
       frame4(kPeer4, kVtep4, kUdp, udp(49152, 4784, Bytes(24, 0))), V::kPASS_LOCAL},
      {"IcmpEchoToOurAddress", kLan, frame4("10.1.0.5", kLan4, IPPROTO_ICMP, icmpEcho()),
       V::kPASS_LOCAL},
      {"IcmpEchoToOurVtep", kWan, frame4(kPeer4, kVtep4, IPPROTO_ICMP, icmpEcho()), V::kPASS_LOCAL},
      {"NeighbourSolicitationToSolicitedNode", kLan,
       frame6("2001:db8:1::5", "ff02::1:ff00:1", kIcmp6, icmp6(135, ns_body), solicited_node_mac),
       V::kPASS_ND},
      {"NeighbourAdvertisementUnicast", kLan,
       frame6("fe80::5", "fe80::9", kIcmp6, icmp6(136, ns_body)), V::kPASS_ND},
      {"RouterAdvertisementOnWan", kWan,
       frame6("fe80::5", "ff02::1", kIcmp6, icmp6(134, Bytes(12, 0)), Mac{0x33, 0x33, 0, 0, 0, 1}),
       V::kPASS_ND},
      {"ToOurLinkLocal", kLan, frame6("fe80::5", kLinkLocal6, kUdp, udp(546, 547, {})),
       V::kPASS_LOCAL},
      {"Ipv6LinkLocalDestination", kLan, frame6("fe80::5", "fe80::9", kUdp, udp(1000, 2000, {})),
       V::kPASS_LINK_LOCAL_OR_MULTICAST},
      {"Ipv6Multicast", kLan,
       frame6("fe80::5", "ff02::fb", kUdp, udp(5353, 5353, {}), Mac{0x33, 0x33, 0, 0, 0, 0xfb}),
       V::kPASS_LINK_LOCAL_OR_MULTICAST},
      {"Ipv4Broadcast", kLan,
       ethernet(kBroadcastMac, 0x0800,
                ipv4("0.0.0.0", "255.255.255.255", kUdp, udp(68, 67, Bytes(20, 0)))),
       V::kPASS_LINK_LOCAL_OR_MULTICAST},
      {"Ipv4Multicast", kWan,
       ethernet(Mac{0x01, 0, 0x5e, 0, 0, 5}, 0x0800, ipv4(kPeer4, "224.0.0.5", 89, Bytes(20, 0))),
       V::kPASS_LINK_LOCAL_OR_MULTICAST},
      {"Ipv4LinkLocal", kLan, frame4("169.254.1.1", "169.254.1.2", kUdp, udp(1, 2, {})),
       V::kPASS_LINK_LOCAL_OR_MULTICAST},
      {"UnicastIpToGroupMac", kLan,
       ethernet(kBroadcastMac, 0x0800, ipv4("10.1.0.5", "10.9.0.1", kUdp, udp(1, 2, {}))),
       V::kPASS_LINK_LOCAL_OR_MULTICAST},
      {"TransitIpv4OnLan", kLan, frame4("10.1.0.5", "10.2.0.5", kTcp, tcpSyn(40000, 443)),
       V::kREDIRECT_TRANSIT},
      {"TransitIpv6OnLan", kLan, frame6("2001:db8:1::5", "2001:db8:2::5", kTcp, tcpSyn(1, 443)),
       V::kREDIRECT_TRANSIT},
      {"TransitFragmentOnLan", kLan,
       frame4("10.1.0.5", "10.2.0.5", kUdp, Bytes(64, 0), {.frag = 0x00b9}), V::kREDIRECT_TRANSIT},
      {"TransitOnWan", kWan, frame4(kPeer4, "10.2.0.5", kTcp, tcpSyn(40000, 443)),
       V::kPASS_NOT_OURS_WAN},
      {"TransitIpv6OnWan", kWan, frame6(kPeer6, "2001:db8:2::5", kUdp, udp(1, 2, {})),
       V::kPASS_NOT_OURS_WAN},
      {"TransitOnUnconfiguredPort", XdpRole::kNone,
       frame4("10.1.0.5", "10.2.0.5", kTcp, tcpSyn(40000, 443)), V::kPASS_UNCONFIGURED},
      {"VxlanOnUnconfiguredPort", XdpRole::kNone, frame4(kPeer4, kVtep4, kUdp, vx),
       V::kREDIRECT_OVERLAY},
      {"VrrpMulticastOnLan", kLan,
       ethernet(Mac{0x01, 0, 0x5e, 0, 0, 0x12}, 0x0800, ipv4("10.1.0.2", "224.0.0.18", 112, vrrp)),
       V::kPASS_VRRP},
      {"VrrpUnicastToOurLanAddress", kLan, frame4("10.1.0.2", kLan4, 112, vrrp), V::kPASS_VRRP},
      {"Ipv6VrrpMulticastOnLan", kLan,
       frame6("fe80::2", "ff02::12", 112, vrrp, Mac{0x33, 0x33, 0, 0, 0, 0x12}), V::kPASS_VRRP},
      {"VrrpOnWan", kWan,
       ethernet(Mac{0x01, 0, 0x5e, 0, 0, 0x12}, 0x0800, ipv4(kPeer4, "224.0.0.18", 112, vrrp)),
       V::kPASS_LINK_LOCAL_OR_MULTICAST},
      {"Ipv4OptionsIhl6VxlanToOurVtep", kWan, frame4(kPeer4, kVtep4, kUdp, vx, {.option_words = 1}),
       V::kREDIRECT_OVERLAY},
      {"Ipv4OptionsIhl15VxlanToOurVtep", kWan,
       frame4(kPeer4, kVtep4, kUdp, vx, {.option_words = 10}), V::kREDIRECT_OVERLAY},
      {"Ipv4OptionsBgpToOurAddress", kWan,
       frame4(kPeer4, kWan4, kTcp, tcpSyn(1, 179), {.option_words = 3}), V::kPASS_LOCAL},
      {"TruncatedTo14Bytes", kLan,
       truncated(frame4("10.1.0.5", "10.2.0.5", kTcp, tcpSyn(1, 2)), 14), V::kPASS_MALFORMED},
      {"TruncatedTo20Bytes", kLan,
       truncated(frame4("10.1.0.5", "10.2.0.5", kTcp, tcpSyn(1, 2)), 20), V::kPASS_MALFORMED},
      {"Ipv6TruncatedTo40Bytes", kLan,
       truncated(frame6("2001:db8:1::5", "2001:db8:2::5", kTcp, tcpSyn(1, 2)), 40),
       V::kPASS_MALFORMED},
      {"Ipv4IhlBeyondThePacket", kWan,
       frame4(kPeer4, kVtep4, kUdp, udp(1, 4789, {}), {.ihl = 15, .total = 60}),
       V::kPASS_MALFORMED},
      {"Ipv4IhlBelow5", kLan, frame4("10.1.0.5", "10.2.0.5", kTcp, tcpSyn(1, 2), {.ihl = 4}),
       V::kPASS_MALFORMED},
      {"Ipv4TotalLengthBeyondTheFrame", kLan,
       frame4("10.1.0.5", "10.2.0.5", kTcp, tcpSyn(1, 2), {.total = 1500}), V::kPASS_MALFORMED},
      {"Ipv4TotalLengthBelowTheHeader", kLan,
       frame4("10.1.0.5", "10.2.0.5", kTcp, tcpSyn(1, 2), {.total = 19}), V::kPASS_MALFORMED},
      {"Ipv6PayloadBeyondTheFrame", kWan, truncated(frame6(kPeer6, kVtep6, kUdp, vx), 14 + 40 + 8),
       V::kPASS_MALFORMED},
      {"UdpHeaderTruncatedToOurVtep", kWan,
       frame4(kPeer4, kVtep4, kUdp, Bytes{0xc0, 0x00, 0x12, 0xb5}), V::kPASS_MALFORMED},
      {"WrongIpVersion", kLan,
       ethernet(kPortMac, 0x0800,
                Bytes{0x65, 0, 0, 40, 0, 0, 0, 0, 64, 6, 0, 0, 10, 1, 0, 5, 10, 2, 0, 5,
                      0,    0, 0, 0,  0, 0, 0, 0, 0,  0, 0, 0, 0,  0, 0, 0, 0,  0, 0, 0}),
       V::kPASS_MALFORMED},
      {"VlanTaggedVxlanToOurVtep", kWan, vlan(0x8100, 100, 0x0800, ipv4(kPeer4, kVtep4, kUdp, vx)),
       V::kPASS_VLAN},
      {"QinQTagged", kLan, vlan(0x88a8, 200, 0x8100, Bytes(46, 0)), V::kPASS_VLAN},
      {"Lldp", kLan, ethernet(Mac{0x01, 0x80, 0xc2, 0, 0, 0x0e}, 0x88cc, Bytes(46, 0)),
       V::kPASS_NOT_IP},
      {"Ipv4LaterFragmentToOurVtep", kWan,
       frame4(kPeer4, kVtep4, kUdp, Bytes(64, 0xab), {.frag = 0x00b9}), V::kPASS_VTEP_FRAGMENT},
      {"Ipv4FirstFragmentVxlanToOurVtep", kWan, frame4(kPeer4, kVtep4, kUdp, vx, {.frag = 0x2000}),
       V::kPASS_VTEP_FRAGMENT},
      {"Ipv6FragmentToOurVtep", kWan,
       frame6(kPeer6, kVtep6, 44, Bytes{17, 0, 0, 1, 0, 0, 0, 1, 0xc0, 0, 0x12, 0xb5, 0, 8, 0, 0}),
       V::kPASS_VTEP_FRAGMENT},
      {"OtherUdpToOurVtep", kWan, frame4(kPeer4, kVtep4, kUdp, udp(1, 4790, {})), V::kPASS_LOCAL},
  };
}

class DecisionTable : public XdpProgramTest, public ::testing::WithParamInterface<Case> {};

TEST_P(DecisionTable, CountsTheVerdict) {
  const Case& c = GetParam();
  expectVerdict(c.role, c.packet, c.verdict);
}

INSTANTIATE_TEST_SUITE_P(XdpProgram, DecisionTable, ::testing::ValuesIn(decisionTable()),
                         [](const ::testing::TestParamInfo<Case>& i) {
                           return std::string(i.param.name);
                         });

// --- VRRP accept mode ---------------------------------------------------------

// A frame to a VRRP virtual MAC for a local address (an Active group's
// virtual address in accept mode) reaches the kernel with the interface's
// MAC (mcgw_port_cfg.mac); another host's MAC is left alone, and so is
// everything while no MAC is set.
TEST_F(XdpProgramTest, VirtualMacToALocalAddressGetsThePortsMac) {
  const Mac vmac4{0x00, 0x00, 0x5e, 0x00, 0x01, 0x0a}, vmac6{0x00, 0x00, 0x5e, 0x00, 0x02, 0x0b};
  const Mac other{0x02, 0x00, 0x00, 0x00, 0x00, 0x77};
  const Mac port{0x02, 0x00, 0x00, 0x00, 0x00, 0x55};
  auto destinationAfter = [&](const Bytes& packet) {
    Bytes out(packet.size() + 64);
    bpf_test_run_opts opts{};
    opts.sz = sizeof opts;
    opts.data_in = packet.data();
    opts.data_size_in = static_cast<uint32_t>(packet.size());
    opts.data_out = out.data();
    opts.data_size_out = static_cast<uint32_t>(out.size());
    opts.repeat = 1;
    EXPECT_EQ(bpf_prog_test_run_opts(prog_.fd(), &opts), 0);
    EXPECT_EQ(opts.retval, static_cast<uint32_t>(XDP_PASS));
    return Mac{out[0], out[1], out[2], out[3], out[4], out[5]};
  };
  auto toLan6 = [&](const Mac& dst) { return frame6(kPeer6, kLan6, kUdp, udp(1, 5001, {}), dst); };
  ASSERT_TRUE(maps_->setRole(kLan).ok());
  EXPECT_EQ(destinationAfter(toLan6(vmac6)), vmac6) << "no MAC set: unchanged";
  ASSERT_TRUE(maps_->setMac(port).ok());
  EXPECT_EQ(destinationAfter(toLan6(vmac6)), port);
  Bytes v4 = frame4(kPeer4, kLan4, kUdp, udp(1, 5001, {}));
  std::copy(vmac4.begin(), vmac4.end(), v4.begin());
  EXPECT_EQ(destinationAfter(v4), port);
  EXPECT_EQ(destinationAfter(toLan6(other)), other) << "not a virtual MAC";
  auto cfg = maps_->portConfig();
  ASSERT_TRUE(cfg.ok());
  EXPECT_EQ(cfg->role, MCGW_XDP_ROLE_LAN) << "setMac keeps the role";
}

// --- routing shares the fast path's fate -----------------------------------

// mcgwd killed: the program stays attached, the kernel takes the PMD's
// sockets out of xsks_map.  BGP and BFD to the gateway are then dropped (so
// the sessions go down and the remote sites route around it); everything
// else local still reaches the kernel (SSH, ping), and all of it passes
// again once a socket is back.
TEST_F(XdpProgramTest, RoutingProtocolsAreDroppedWithoutAFastPath) {
  struct Packet {
    const char* what;
    XdpRole role;
    Bytes frame;
    bool routing;
  };
  const Bytes bfd24(24, 0);
  const std::vector<Packet> packets = {
      {"BFD to a VTEP", kWan, frame4(kPeer4, kVtep4, kUdp, udp(49152, 3784, bfd24)), true},
      {"BFD echo to a VTEP", kWan, frame4(kPeer4, kVtep4, kUdp, udp(49152, 3785, bfd24)), true},
      {"multihop BFD over IPv6", kWan, frame6(kPeer6, kVtep6, kUdp, udp(49152, 4784, bfd24)), true},
      {"BGP SYN to a local address", kWan, frame4(kPeer4, kWan4, kTcp, tcpSyn(40000, 179)), true},
      {"BGP from the peer's port 179", kLan, frame4("10.1.0.5", kLan4, kTcp, tcpSyn(179, 40000)),
       true},
      {"SSH to the LAN address", kLan, frame4("10.1.0.5", kLan4, kTcp, tcpSyn(50000, 22)), false},
      {"ping to a VTEP", kWan, frame4(kPeer4, kVtep4, IPPROTO_ICMP, icmpEcho()), false},
      {"other UDP to a VTEP", kWan, frame4(kPeer4, kVtep4, kUdp, udp(1, 3786, {})), false},
  };
  setFastPath(false);
  for (const auto& p : packets) {
    SCOPED_TRACE(std::string(p.what) + ", no fast path");
    if (p.routing) {
      expectVerdict(p.role, p.frame, V::kDROP_NO_FAST_PATH, XDP_DROP);
    } else {
      expectVerdict(p.role, p.frame, V::kPASS_LOCAL);
    }
  }
  setFastPath(true);
  for (const auto& p : packets) {
    SCOPED_TRACE(std::string(p.what) + ", fast path back");
    expectVerdict(p.role, p.frame, V::kPASS_LOCAL);
  }
}

// --- the maps and their C++ side --------------------------------------------

TEST_F(XdpProgramTest, PassAllFlagSendsEverythingToTheKernel) {
  ASSERT_TRUE(maps_->setFlags(MCGW_XDP_FLAG_PASS_ALL).ok());
  expectVerdict(kWan, frame4(kPeer4, kVtep4, kUdp, udp(1, 4789, vxlan(1))), V::kPASS_ALL);
  expectVerdict(kLan, frame4("10.1.0.5", "10.2.0.5", kTcp, tcpSyn(1, 2)), V::kPASS_ALL);
  auto cfg = maps_->portConfig();
  ASSERT_TRUE(cfg.ok());
  EXPECT_EQ(cfg->role, MCGW_XDP_ROLE_LAN);  // setRole kept the flag
  EXPECT_EQ(cfg->flags, MCGW_XDP_FLAG_PASS_ALL);
  ASSERT_TRUE(maps_->setFlags(0).ok());
  expectVerdict(kLan, frame4("10.1.0.5", "10.2.0.5", kTcp, tcpSyn(1, 2)), V::kREDIRECT_TRANSIT);
}

TEST_F(XdpProgramTest, SettingAddressesReplacesTheSet) {
  auto v = maps_->vteps();
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v, (std::vector<config::IpAddress>{addr(kVtep4), addr(kVtep6)}));

  // The VTEP moves: packets to the old one are no longer overlay.
  ASSERT_TRUE(maps_->setVteps({addr(kVtep6), addr("198.51.100.7"), addr("198.51.100.7")}).ok());
  v = maps_->vteps();
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v, (std::vector<config::IpAddress>{addr("198.51.100.7"), addr(kVtep6)}));
  const Bytes vx = udp(49152, 4789, vxlan(5));
  expectVerdict(kWan, frame4(kPeer4, kVtep4, kUdp, vx), V::kPASS_NOT_OURS_WAN);
  expectVerdict(kWan, frame4(kPeer4, "198.51.100.7", kUdp, vx), V::kREDIRECT_OVERLAY);

  ASSERT_TRUE(maps_->setLocalAddresses({}).ok());
  auto l = maps_->localAddresses();
  ASSERT_TRUE(l.ok());
  EXPECT_TRUE(l->empty());
  expectVerdict(kWan, frame4(kPeer4, kWan4, kTcp, tcpSyn(1, 179)), V::kPASS_NOT_OURS_WAN);

  // A full map can be swapped for another full one (stale entries go first).
  std::vector<config::IpAddress> a, b;
  for (int i = 0; i < MCGW_XDP_MAX_LOCAL; ++i) {
    a.push_back(
        addr(("10.8." + std::to_string(i / 250) + "." + std::to_string(i % 250 + 1)).c_str()));
    b.push_back(
        addr(("10.9." + std::to_string(i / 250) + "." + std::to_string(i % 250 + 1)).c_str()));
  }
  ASSERT_TRUE(maps_->setLocalAddresses(a).ok());
  auto r = maps_->setLocalAddresses(b);
  ASSERT_TRUE(r.ok()) << r.error();
  l = maps_->localAddresses();
  ASSERT_TRUE(l.ok());
  std::sort(b.begin(), b.end());
  EXPECT_EQ(*l, b);

  // Too many is refused and changes nothing.
  b.push_back(addr("10.10.0.1"));
  r = maps_->setLocalAddresses(b);
  EXPECT_FALSE(r.ok());
  l = maps_->localAddresses();
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->size(), static_cast<size_t>(MCGW_XDP_MAX_LOCAL));
}

TEST_F(XdpProgramTest, CountersSumBytesAndPackets) {
  const Bytes p = frame4("10.1.0.5", "10.2.0.5", kTcp, tcpSyn(1, 2));
  ASSERT_TRUE(maps_->setRole(kLan).ok());
  XdpCounters before = counters();
  for (int i = 0; i < 5; ++i) {
    ASSERT_EQ(testRun(prog_.fd(), p).err, 0);
  }
  XdpCounters after = counters();
  EXPECT_EQ(at(after, V::kREDIRECT_TRANSIT).packets - at(before, V::kREDIRECT_TRANSIT).packets, 5u);
  EXPECT_EQ(at(after, V::kREDIRECT_TRANSIT).bytes - at(before, V::kREDIRECT_TRANSIT).bytes,
            5u * p.size());
}

// The verdict names are what `mcgwctl show counters` and the JSON show, in
// the order of the counters map: a literal copy, so that changing one is
// deliberate.
TEST(XdpVerdicts, NamesAndOrderAreTheLiteralList) {
  struct Expected {
    XdpVerdict verdict;
    const char* name;
  };
  const Expected expected[] = {
      {V::kPASS_ALL, "pass-all"},
      {V::kPASS_MALFORMED, "pass-malformed"},
      {V::kPASS_VLAN, "pass-vlan"},
      {V::kPASS_ARP, "pass-arp"},
      {V::kPASS_NOT_IP, "pass-not-ip"},
      {V::kPASS_VRRP, "pass-vrrp"},
      {V::kPASS_VTEP_FRAGMENT, "pass-vtep-fragment"},
      {V::kREDIRECT_OVERLAY, "redirect-overlay"},
      {V::kPASS_LOCAL, "pass-local"},
      {V::kPASS_ND, "pass-nd"},
      {V::kPASS_LINK_LOCAL_OR_MULTICAST, "pass-link-local-or-multicast"},
      {V::kREDIRECT_TRANSIT, "redirect-transit"},
      {V::kPASS_NOT_OURS_WAN, "pass-not-ours-wan"},
      {V::kPASS_UNCONFIGURED, "pass-unconfigured"},
      {V::kREDIRECT_NO_SOCKET, "redirect-no-socket"},
      {V::kDROP_NO_FAST_PATH, "drop-no-fast-path"},
  };
  ASSERT_EQ(kXdpVerdictCount, 16u);
  for (size_t i = 0; i < std::size(expected); ++i) {
    EXPECT_EQ(static_cast<size_t>(expected[i].verdict), i) << expected[i].name;
    EXPECT_EQ(toString(expected[i].verdict), expected[i].name);
    EXPECT_STREQ(mcgw_xdp_verdict_names[i], expected[i].name);  // the plain C side
    EXPECT_FALSE(kXdpVerdicts[i].description.empty()) << expected[i].name;
  }
  EXPECT_EQ(toString(XdpVerdict::kCount), "unknown");
}

TEST_F(XdpProgramTest, TestRunRefusesFramesShorterThanEthernet) {
  // The kernel's BPF_PROG_TEST_RUN for XDP wants at least ETH_HLEN bytes, so
  // the program's own short-Ethernet check is exercised only by real frames.
  EXPECT_EQ(testRun(prog_.fd(), Bytes(13, 0)).err, -EINVAL);
}

TEST(XdpMapsTest, RefusesAProgramThatIsNotMcgws) {
  // XDP_PASS and nothing else, like DPDK's default program minus xsks_map.
  const bpf_insn insns[] = {
      {BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, XDP_PASS},
      {BPF_JMP | BPF_EXIT, 0, 0, 0, 0},
  };
  int fd = bpf_prog_load(BPF_PROG_TYPE_XDP, "not_mcgw", "GPL", insns, 2, nullptr);
  ASSERT_GE(fd, 0) << std::strerror(-fd);
  auto m = XdpMaps::fromProgram(fd);
  ::close(fd);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.error().find("not mcgw's XDP program"), std::string::npos) << m.error();
}

// --- attached for real -------------------------------------------------------

using test::PrivateNetns;

// Sends raw Ethernet frames out of one interface.
class RawSender {
 public:
  explicit RawSender(const char* ifname) {
    fd_ = ::socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);  // protocol 0: receives nothing
    ifindex_ = static_cast<int>(if_nametoindex(ifname));
  }
  ~RawSender() {
    if (fd_ >= 0) {
      ::close(fd_);
    }
  }
  RawSender(const RawSender&) = delete;
  RawSender& operator=(const RawSender&) = delete;

  bool send(const Bytes& frame) {
    sockaddr_ll to{};
    to.sll_family = AF_PACKET;
    to.sll_ifindex = ifindex_;
    to.sll_halen = 6;
    std::memcpy(to.sll_addr, frame.data(), 6);
    return ::sendto(fd_, frame.data(), frame.size(), 0, reinterpret_cast<sockaddr*>(&to),
                    sizeof to) == static_cast<ssize_t>(frame.size());
  }

 private:
  int fd_ = -1;
  int ifindex_ = 0;
};

using test::macOf;

// Waits until `verdict` has counted `want` packets more than `base`.
bool waitForCount(const XdpMaps& maps, const XdpCounters& base, XdpVerdict verdict, uint64_t want,
                  XdpCounters* last) {
  for (int i = 0; i < 200; ++i) {
    auto c = maps.counters();
    if (c.ok()) {
      *last = *c;
      if (at(*c, verdict).packets - at(base, verdict).packets >= want) {
        return true;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

// Attaches the program to one end of a veth pair in `mode` (native or
// generic), finds its maps through the interface and watches frames sent from
// the other end being counted.
void attachedToAVeth(uint32_t mode) {
  PrivateNetns netns;
  ASSERT_TRUE(netns.ok()) << "unshare(CLONE_NEWNET): " << std::strerror(errno);
  // No IPv6 chatter (DAD, router solicitations, MLD) from the peer.
  std::ofstream("/proc/sys/net/ipv6/conf/default/disable_ipv6") << "1";
  auto r = test::run(
      "ip link add xdp0 type veth peer name xdp1 && ip link set xdp0 up && ip link set xdp1 up");
  ASSERT_EQ(r.code, 0) << r.err;

  LoadedProgram prog;
  ASSERT_EQ(prog.error(), "");
  const int ifindex = static_cast<int>(if_nametoindex("xdp0"));
  ASSERT_GT(ifindex, 0);
  int ret = bpf_xdp_attach(ifindex, prog.fd(), XDP_FLAGS_UPDATE_IF_NOEXIST | mode, nullptr);
  ASSERT_EQ(ret, 0) << "bpf_xdp_attach: " << std::strerror(-ret);

  auto maps = XdpMaps::attachToInterface("xdp0");
  ASSERT_TRUE(maps.ok()) << maps.error();
  bpf_prog_info info{};
  uint32_t len = sizeof info;
  ASSERT_EQ(bpf_obj_get_info_by_fd(prog.fd(), &info, &len), 0);
  EXPECT_EQ(maps->programId(), info.id);

  auto none = XdpMaps::attachToInterface("xdp1");
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().find("no XDP program"), std::string::npos) << none.error();
  EXPECT_FALSE(XdpMaps::attachToInterface("mcgw-nonexist").ok());

  const Mac port_mac = macOf("xdp0");
  ASSERT_NE(port_mac, Mac{}) << "no MAC address for xdp0";
  auto udpTo = [&](const char* dst) {
    return ethernet(port_mac, 0x0800, ipv4("192.0.2.2", dst, kUdp, udp(49152, 4789, vxlan(9))));
  };
  ASSERT_TRUE(maps->setRole(kWan).ok());
  RawSender peer("xdp1");
  auto base = maps->counters();
  ASSERT_TRUE(base.ok()) << base.error();
  XdpCounters now{};

  ASSERT_TRUE(peer.send(ethernet(kBroadcastMac, 0x0806, arp(1, "192.0.2.2", "192.0.2.1"))));
  EXPECT_TRUE(waitForCount(*maps, *base, V::kPASS_ARP, 1, &now)) << delta(*base, now);

  // Not yet our VTEP: the kernel's.
  ASSERT_TRUE(peer.send(udpTo("192.0.2.1")));
  EXPECT_TRUE(waitForCount(*maps, *base, V::kPASS_NOT_OURS_WAN, 1, &now)) << delta(*base, now);

  // Now it is: to DPDK (no AF_XDP socket here, so the kernel gets it after all).
  ASSERT_TRUE(maps->setVteps({addr("192.0.2.1")}).ok());
  ASSERT_TRUE(peer.send(udpTo("192.0.2.1")));
  EXPECT_TRUE(waitForCount(*maps, *base, V::kREDIRECT_OVERLAY, 1, &now)) << delta(*base, now);
  EXPECT_TRUE(waitForCount(*maps, *base, V::kREDIRECT_NO_SOCKET, 1, &now)) << delta(*base, now);
  EXPECT_EQ(at(now, V::kPASS_ARP).packets - at(*base, V::kPASS_ARP).packets, 1u);
  EXPECT_EQ(at(now, V::kPASS_NOT_OURS_WAN).packets - at(*base, V::kPASS_NOT_OURS_WAN).packets, 1u);
  EXPECT_EQ(at(now, V::kREDIRECT_OVERLAY).packets - at(*base, V::kREDIRECT_OVERLAY).packets, 1u);

  // A second XdpMaps on the same interface sees the same maps.
  auto again = XdpMaps::attachToInterface("xdp0");
  ASSERT_TRUE(again.ok()) << again.error();
  auto v = again->vteps();
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v, std::vector<config::IpAddress>{addr("192.0.2.1")});

  EXPECT_EQ(bpf_xdp_detach(ifindex, mode, nullptr), 0);
  EXPECT_FALSE(XdpMaps::attachToInterface("xdp0").ok());
}

// A killed mcgwd leaves its program attached; the next one removes it before
// the PMD attaches its own, and leaves another program alone.
TEST(XdpAttached, StaleMcgwProgramIsDetachedOthersAreNot) {
  PrivateNetns netns;
  ASSERT_TRUE(netns.ok()) << "unshare(CLONE_NEWNET): " << std::strerror(errno);
  auto r = test::run(
      "ip link add xdp0 type veth peer name xdp1 && ip link set xdp0 up && ip link set xdp1 up");
  ASSERT_EQ(r.code, 0) << r.err;
  const int ifindex = static_cast<int>(if_nametoindex("xdp0"));
  ASSERT_GT(ifindex, 0);
  auto attached = [&](uint32_t mode) {
    uint32_t id = 0;
    EXPECT_EQ(bpf_xdp_query_id(ifindex, mode, &id), 0);
    return id;
  };

  auto none = detachStaleProgram("xdp0");
  ASSERT_TRUE(none.ok()) << none.error();
  EXPECT_FALSE(*none);

  for (uint32_t mode : {XDP_FLAGS_DRV_MODE, XDP_FLAGS_SKB_MODE}) {
    SCOPED_TRACE(mode == XDP_FLAGS_DRV_MODE ? "native" : "generic");
    LoadedProgram prog;
    ASSERT_EQ(prog.error(), "");
    ASSERT_EQ(bpf_xdp_attach(ifindex, prog.fd(), XDP_FLAGS_UPDATE_IF_NOEXIST | mode, nullptr), 0);
    ASSERT_NE(attached(mode), 0u);
    auto removed = detachStaleProgram("xdp0");
    ASSERT_TRUE(removed.ok()) << removed.error();
    EXPECT_TRUE(*removed);
    EXPECT_EQ(attached(mode), 0u);
  }

  const bpf_insn insns[] = {
      {BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, XDP_PASS},
      {BPF_JMP | BPF_EXIT, 0, 0, 0, 0},
  };
  int other = bpf_prog_load(BPF_PROG_TYPE_XDP, "not_mcgw", "GPL", insns, 2, nullptr);
  ASSERT_GE(other, 0) << std::strerror(-other);
  ASSERT_EQ(bpf_xdp_attach(ifindex, other, XDP_FLAGS_DRV_MODE, nullptr), 0);
  auto kept = detachStaleProgram("xdp0");
  ASSERT_TRUE(kept.ok()) << kept.error();
  EXPECT_FALSE(*kept);
  EXPECT_NE(attached(XDP_FLAGS_DRV_MODE), 0u);
  EXPECT_EQ(bpf_xdp_detach(ifindex, XDP_FLAGS_DRV_MODE, nullptr), 0);
  ::close(other);
}

// What the af_xdp PMD gets where the driver supports XDP (veth does).
TEST(XdpAttached, NativeMode) {
  attachedToAVeth(XDP_FLAGS_DRV_MODE);
}

// What it gets on a driver without native XDP.
TEST(XdpAttached, GenericMode) {
  attachedToAVeth(XDP_FLAGS_SKB_MODE);
}

}  // namespace
}  // namespace mcgw::ebpf
