// The tc ingress drop filter of af_packet ports (ebpf/tc_ingress_drop.*) on a
// veth pair in a private network namespace.  Needs root (CAP_BPF,
// CAP_NET_ADMIN).
//
// ICMP echo requests go into one end as raw frames.  The kernel's own count
// of echo requests (Icmp InEchos in the namespace's /proc/net/snmp) says
// whether it saw them; a packet socket on the same end says whether mcgwd
// would still see them.
#include <arpa/inet.h>
#include <bpf/libbpf.h>
#include <gtest/gtest.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "ebpf/tc_ingress_drop.hpp"
#include "tests/support/netns.hpp"
#include "tests/support/process.hpp"

namespace mcgw::ebpf {
namespace {

using Bytes = std::vector<uint8_t>;

constexpr uint16_t kEchoId = 0x6d63;  // "mc": tells our requests from anything else

// Icmp InEchos of the calling thread's network namespace.
long inEchos() {
  std::ifstream in("/proc/thread-self/net/snmp");
  std::string names, values;
  while (std::getline(in, names) && std::getline(in, values)) {
    if (names.rfind("Icmp:", 0) != 0) {
      continue;
    }
    std::istringstream n(names), v(values);
    std::string name, value;
    while (n >> name && v >> value) {
      if (name == "InEchos") {
        return std::stol(value);
      }
    }
  }
  return -1;
}

uint16_t internetChecksum(const uint8_t* p, size_t n) {
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

using test::macOf;

// An Ethernet frame with an ICMP echo request from 192.0.2.99 to 192.0.2.1.
Bytes echoRequest(const std::array<uint8_t, 6>& dst_mac, uint16_t seq) {
  Bytes f = {dst_mac[0], dst_mac[1], dst_mac[2], dst_mac[3], dst_mac[4], dst_mac[5], 0x02,
             0,          0,          0,          0,          0x99,       0x08,       0x00};
  const Bytes ip = {0x45, 0, 0, 28, 0, 0, 0x40, 0, 64, 1, 0, 0, 192, 0, 2, 99, 192, 0, 2, 1};
  const Bytes icmp = {8,
                      0,
                      0,
                      0,
                      kEchoId >> 8,
                      kEchoId & 0xff,
                      static_cast<uint8_t>(seq >> 8),
                      static_cast<uint8_t>(seq)};
  const size_t ip_at = f.size();
  f.insert(f.end(), ip.begin(), ip.end());
  const uint16_t ip_sum = internetChecksum(&f[ip_at], ip.size());
  f[ip_at + 10] = static_cast<uint8_t>(ip_sum >> 8);
  f[ip_at + 11] = static_cast<uint8_t>(ip_sum);
  const size_t icmp_at = f.size();
  f.insert(f.end(), icmp.begin(), icmp.end());
  const uint16_t icmp_sum = internetChecksum(&f[icmp_at], icmp.size());
  f[icmp_at + 2] = static_cast<uint8_t>(icmp_sum >> 8);
  f[icmp_at + 3] = static_cast<uint8_t>(icmp_sum);
  return f;
}

// A packet socket on one interface, as mcgwd's af_packet port has.
class PacketSocket {
 public:
  explicit PacketSocket(const char* ifname) {
    fd_ = ::socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, htons(ETH_P_ALL));
    sockaddr_ll at{};
    at.sll_family = AF_PACKET;
    at.sll_protocol = htons(ETH_P_ALL);
    at.sll_ifindex = static_cast<int>(if_nametoindex(ifname));
    if (fd_ >= 0 && ::bind(fd_, reinterpret_cast<sockaddr*>(&at), sizeof at) != 0) {
      ::close(fd_);
      fd_ = -1;
    }
  }
  ~PacketSocket() {
    if (fd_ >= 0) {
      ::close(fd_);
    }
  }
  PacketSocket(const PacketSocket&) = delete;
  PacketSocket& operator=(const PacketSocket&) = delete;
  bool ok() const { return fd_ >= 0; }

  bool send(const Bytes& frame) {
    return ::send(fd_, frame.data(), frame.size(), 0) == static_cast<ssize_t>(frame.size());
  }

  // Our echo requests received (not sent) within `wait`.
  int countEchoRequests(std::chrono::milliseconds wait) {
    int n = 0;
    const auto until = std::chrono::steady_clock::now() + wait;
    while (std::chrono::steady_clock::now() < until) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 20) <= 0) {
        continue;
      }
      uint8_t buf[2048];
      sockaddr_ll from{};
      socklen_t len = sizeof from;
      const ssize_t got =
          ::recvfrom(fd_, buf, sizeof buf, 0, reinterpret_cast<sockaddr*>(&from), &len);
      if (got >= 42 && from.sll_pkttype != PACKET_OUTGOING && buf[12] == 0x08 && buf[13] == 0 &&
          buf[23] == 1 && buf[34] == 8 && buf[38] == (kEchoId >> 8) &&
          buf[39] == (kEchoId & 0xff)) {
        ++n;
      }
    }
    return n;
  }

 private:
  int fd_ = -1;
};

class TcIngressDropTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(netns_.ok()) << "unshare(CLONE_NEWNET): " << std::strerror(errno);
    // No IPv6 chatter (DAD, router solicitations, MLD).
    std::ofstream("/proc/sys/net/ipv6/conf/default/disable_ipv6") << "1";
    auto r = test::run(
        "ip link add tc0 type veth peer name tc1 && ip addr add 192.0.2.1/24 dev tc0 && "
        "ip link set tc0 up && ip link set tc1 up");
    ASSERT_EQ(r.code, 0) << r.err;
  }

  // Sends `n` echo requests into tc0 (from tc1); returns how many the kernel
  // counted and how many the packet socket on tc0 saw.
  std::pair<long, int> sendEchos(int n) {
    PacketSocket port("tc0");
    PacketSocket peer("tc1");
    EXPECT_TRUE(port.ok() && peer.ok()) << std::strerror(errno);
    const auto mac = macOf("tc0");
    EXPECT_NE(mac, decltype(mac){}) << "no MAC address for tc0";
    const long before = inEchos();
    EXPECT_GE(before, 0);
    for (int i = 0; i < n; ++i) {
      EXPECT_TRUE(peer.send(echoRequest(mac, static_cast<uint16_t>(seq_++))));
    }
    const int seen = port.countEchoRequests(std::chrono::milliseconds(300));
    return {inEchos() - before, seen};
  }

  // The filters at tc0's ingress, as tc shows them (an outside view).
  static int filterCount() {
    auto r = test::run("tc filter show dev tc0 ingress | grep -c 'handle 0x1'");
    return std::atoi(r.out.c_str());
  }

  test::PrivateNetns netns_;
  int seq_ = 1;
};

TEST_F(TcIngressDropTest, KernelStopsSeeingFramesThePacketSocketStillGets) {
  auto before = sendEchos(5);
  EXPECT_EQ(before.first, 5) << "without the filter the kernel answers";
  EXPECT_EQ(before.second, 5);

  auto r = attachIngressDrop("tc0");
  ASSERT_TRUE(r.ok()) << r.error();
  auto after = sendEchos(5);
  EXPECT_EQ(after.first, 0) << "the filter lets frames through to the kernel";
  EXPECT_EQ(after.second, 5) << "the packet socket must still see every frame";
}

TEST_F(TcIngressDropTest, AttachingAgainReplacesTheFilter) {
  // What a restarted mcgwd does: the first filter is still there.
  ASSERT_TRUE(attachIngressDrop("tc0").ok());
  bpf_tc_hook hook;
  std::memset(&hook, 0, sizeof hook);  // libbpf wants the padding zero
  hook.sz = sizeof hook;
  hook.ifindex = static_cast<int>(if_nametoindex("tc0"));
  hook.attach_point = BPF_TC_INGRESS;
  bpf_tc_opts first;
  std::memset(&first, 0, sizeof first);
  first.sz = sizeof first;
  first.handle = 1;
  first.priority = 1;
  ASSERT_EQ(bpf_tc_query(&hook, &first), 0);

  auto again = attachIngressDrop("tc0");
  ASSERT_TRUE(again.ok()) << again.error();
  bpf_tc_opts second;
  std::memset(&second, 0, sizeof second);
  second.sz = sizeof second;
  second.handle = 1;
  second.priority = 1;
  ASSERT_EQ(bpf_tc_query(&hook, &second), 0);
  EXPECT_NE(second.prog_id, first.prog_id) << "the filter was not replaced";
  EXPECT_EQ(filterCount(), 1);
  EXPECT_EQ(sendEchos(3).first, 0);
}

TEST_F(TcIngressDropTest, ReplacesTheFilterTcUsedToMake) {
  // What mcgwd spawned before it used libbpf.
  auto r = test::run(
      "tc qdisc replace dev tc0 clsact && "
      "tc filter replace dev tc0 ingress pref 1 bpf da bytecode '1,6 0 0 2,'");
  ASSERT_EQ(r.code, 0) << r.err;
  ASSERT_EQ(filterCount(), 1);
  auto a = attachIngressDrop("tc0");
  ASSERT_TRUE(a.ok()) << a.error();
  EXPECT_EQ(filterCount(), 1);
  EXPECT_EQ(sendEchos(3).first, 0);
}

TEST_F(TcIngressDropTest, DetachLetsTheKernelSeeFramesAgain) {
  ASSERT_TRUE(attachIngressDrop("tc0").ok());
  EXPECT_EQ(sendEchos(2).first, 0);
  auto d = detachIngressDrop("tc0");
  ASSERT_TRUE(d.ok()) << d.error();
  EXPECT_TRUE(*d);
  EXPECT_EQ(filterCount(), 0);
  EXPECT_EQ(sendEchos(2).first, 2);

  auto twice = detachIngressDrop("tc0");
  ASSERT_TRUE(twice.ok()) << twice.error();
  EXPECT_FALSE(*twice) << "nothing left to detach";
}

TEST_F(TcIngressDropTest, DetachWithoutClsactIsNotAnError) {
  auto d = detachIngressDrop("tc1");
  ASSERT_TRUE(d.ok()) << d.error();
  EXPECT_FALSE(*d);
}

TEST_F(TcIngressDropTest, SaysWhichInterfaceFailed) {
  auto r = attachIngressDrop("mcgw-nonexist");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), "mcgw-nonexist: if_nametoindex: No such device");
}

}  // namespace
}  // namespace mcgw::ebpf
