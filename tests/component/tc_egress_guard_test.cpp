// The egress guard of af_xdp interfaces (ebpf/tc_egress_guard.*,
// ebpf/mcgw_tc_egress.bpf.c) on a veth pair in a private network namespace.
// Needs root (CAP_BPF, CAP_NET_ADMIN).
//
// Packets leave gd0 towards 192.0.2.9 / 2001:db8::9 (static neighbours, no
// such host); a packet socket on the other end, gd1, says what left.  A
// guard held by a child process that is then SIGKILLed stands for a killed
// mcgwd.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>

#include "ebpf/tc_egress_guard.hpp"
#include "tests/support/netns.hpp"
#include "tests/support/process.hpp"

namespace mcgw::ebpf {
namespace {

// Frames to `port` (UDP or TCP destination port) that left gd0, seen on gd1
// within `wait` after `send` ran.
template <typename Send>
int leftGd0(uint8_t proto, uint16_t port, Send send,
            std::chrono::milliseconds wait = std::chrono::milliseconds(300)) {
  const int fd = ::socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, htons(ETH_P_ALL));
  EXPECT_GE(fd, 0) << std::strerror(errno);
  sockaddr_ll at{};
  at.sll_family = AF_PACKET;
  at.sll_protocol = htons(ETH_P_ALL);
  at.sll_ifindex = static_cast<int>(if_nametoindex("gd1"));
  EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&at), sizeof at), 0) << std::strerror(errno);
  send();
  int n = 0;
  const auto until = std::chrono::steady_clock::now() + wait;
  while (std::chrono::steady_clock::now() < until) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 20) <= 0) {
      continue;
    }
    uint8_t b[2048];
    const ssize_t got = ::recv(fd, b, sizeof b, 0);
    if (got < 14) {
      continue;
    }
    const uint16_t type = static_cast<uint16_t>(b[12] << 8 | b[13]);
    size_t l4 = 0;
    uint8_t p4 = 0;
    if (type == ETH_P_IP && got >= 34) {
      l4 = 14 + (b[14] & 0x0F) * 4u;
      p4 = b[23];
    } else if (type == ETH_P_IPV6 && got >= 54) {
      l4 = 54;
      p4 = b[20];
    }
    if (l4 && static_cast<size_t>(got) >= l4 + 4 && p4 == proto &&
        (b[l4 + 2] << 8 | b[l4 + 3]) == port) {
      ++n;
    }
  }
  ::close(fd);
  return n;
}

// One UDP datagram from the gateway's address to the absent host's `port`.
void udpTo(bool v6, uint16_t port) {
  sockaddr_storage to{};
  socklen_t len = 0;
  if (v6) {
    auto* a = reinterpret_cast<sockaddr_in6*>(&to);
    a->sin6_family = AF_INET6;
    a->sin6_port = htons(port);
    inet_pton(AF_INET6, "2001:db8::9", &a->sin6_addr);
    len = sizeof *a;
  } else {
    auto* a = reinterpret_cast<sockaddr_in*>(&to);
    a->sin_family = AF_INET;
    a->sin_port = htons(port);
    inet_pton(AF_INET, "192.0.2.9", &a->sin_addr);
    len = sizeof *a;
  }
  const int s = ::socket(to.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(s, 0);
  const char payload[24] = "mcgw egress guard test";
  EXPECT_EQ(::sendto(s, payload, sizeof payload, 0, reinterpret_cast<sockaddr*>(&to), len),
            static_cast<ssize_t>(sizeof payload))
      << std::strerror(errno);
  ::close(s);
}

// A TCP connection attempt (its SYN) to 192.0.2.9:port; never completes.
void synTo(uint16_t port) {
  const int s = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  ASSERT_GE(s, 0);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(port);
  inet_pton(AF_INET, "192.0.2.9", &to.sin_addr);
  (void)::connect(s, reinterpret_cast<sockaddr*>(&to), sizeof to);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ::close(s);
}

constexpr uint8_t kUdp = 17, kTcp = 6;

class EgressGuardTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(netns_.ok()) << "unshare(CLONE_NEWNET): " << std::strerror(errno);
    auto r = test::run(
        "ip link add gd0 type veth peer name gd1 && sysctl -qw net.ipv6.conf.gd0.accept_dad=0 && "
        "ip addr add 192.0.2.1/24 dev gd0 && ip addr add 2001:db8::1/64 dev gd0 nodad && "
        "ip link set gd0 up && ip link set gd1 up && "
        "ip neigh add 192.0.2.9 lladdr 02:00:00:00:00:09 dev gd0 && "
        "ip -6 neigh add 2001:db8::9 lladdr 02:00:00:00:00:09 dev gd0");
    ASSERT_EQ(r.code, 0) << r.err;
  }

  // Which of BFD (v4 and v6, single hop and multihop, echo), BGP and two
  // other protocols left gd0: "bfd4 bfd4mh bfd6mh bfd6 echo4 bgp other-udp
  // other-tcp".
  static std::string whatLeaves() {
    std::string out;
    auto add = [&](const char* name, int n) {
      if (n > 0) {
        out += std::string(out.empty() ? "" : " ") + name;
      }
    };
    add("bfd4", leftGd0(kUdp, 3784, [] { udpTo(false, 3784); }));
    add("bfd4mh", leftGd0(kUdp, 4784, [] { udpTo(false, 4784); }));
    add("bfd6mh", leftGd0(kUdp, 4784, [] { udpTo(true, 4784); }));
    add("bfd6", leftGd0(kUdp, 3784, [] { udpTo(true, 3784); }));
    add("echo4", leftGd0(kUdp, 3785, [] { udpTo(false, 3785); }));
    add("bgp", leftGd0(kTcp, 179, [] { synTo(179); }));
    add("other-udp", leftGd0(kUdp, 5001, [] { udpTo(false, 5001); }));
    add("other-tcp", leftGd0(kTcp, 8080, [] { synTo(8080); }));
    return out;
  }

  static int filterCount() {
    auto r = test::run("tc filter show dev gd0 egress | grep -c 'handle 0x1'");
    return std::atoi(r.out.c_str());
  }

  test::PrivateNetns netns_;
};

constexpr const char* kAll = "bfd4 bfd4mh bfd6mh bfd6 echo4 bgp other-udp other-tcp";

TEST_F(EgressGuardTest, RoutingLeavesWhileTheHolderLivesAndNotAfterItIsKilled) {
  ASSERT_EQ(whatLeaves(), kAll) << "without a guard";
  int ready[2];
  ASSERT_EQ(::pipe2(ready, O_CLOEXEC), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // The "mcgwd": attaches, says so ("y", or the error), waits to be killed.
    auto g = EgressGuard::attach("gd0");
    const std::string said = g ? "y" : g.error();
    (void)!::write(ready[1], said.data(), said.size());
    if (!g) {
      ::_exit(1);
    }
    for (;;) {
      ::pause();
    }
  }
  ::close(ready[1]);
  char said[512] = {};
  ASSERT_GT(::read(ready[0], said, sizeof said - 1), 0);
  ::close(ready[0]);
  if (std::string(said) != "y") {
    ::kill(child, SIGKILL);
    ::waitpid(child, nullptr, 0);
    FAIL() << "the child could not attach the guard: " << said;
  }
  EXPECT_EQ(filterCount(), 1);
  EXPECT_EQ(whatLeaves(), kAll) << "the holder lives";

  ASSERT_EQ(::kill(child, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_EQ(filterCount(), 1) << "the filter outlives its holder";
  EXPECT_EQ(whatLeaves(), "bgp other-udp other-tcp") << "the holder was killed";

  // The next mcgwd replaces it (one filter) and routing leaves again.
  {
    auto g = EgressGuard::attach("gd0");
    ASSERT_TRUE(g) << g.error();
    EXPECT_EQ(filterCount(), 1);
    EXPECT_EQ(whatLeaves(), kAll);
  }
  // An orderly end detaches it.
  EXPECT_EQ(filterCount(), 0);
  EXPECT_EQ(whatLeaves(), kAll);
}

// The site's LAN unreachable: BFD is held, the rest leaves; back: all.
TEST_F(EgressGuardTest, SiteUnreachableHoldsBfdAlone) {
  auto g = EgressGuard::attach("gd0");
  ASSERT_TRUE(g) << g.error();
  auto r = (*g)->setSiteReachable(false);
  ASSERT_TRUE(r) << r.error();
  EXPECT_EQ(whatLeaves(), "bgp other-udp other-tcp");
  r = (*g)->setSiteReachable(false);  // again: no error
  ASSERT_TRUE(r) << r.error();
  r = (*g)->setSiteReachable(true);
  ASSERT_TRUE(r) << r.error();
  EXPECT_EQ(whatLeaves(), kAll);
}

TEST_F(EgressGuardTest, DetachRemovesAGuardAKilledProcessLeft) {
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto g = EgressGuard::attach("gd0");
    if (!g) {
      std::fprintf(stderr, "attach: %s\n", g.error().c_str());
    }
    ::_exit(g ? 0 : 1);  // exits without the destructor: as if killed
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the child could not attach";
  EXPECT_EQ(filterCount(), 1);
  EXPECT_EQ(whatLeaves(), "bgp other-udp other-tcp");
  auto r = detachEgressGuard("gd0");
  ASSERT_TRUE(r) << r.error();
  EXPECT_TRUE(*r);
  EXPECT_EQ(filterCount(), 0);
  EXPECT_EQ(whatLeaves(), kAll);
  r = detachEgressGuard("gd0");
  ASSERT_TRUE(r) << r.error();
  EXPECT_FALSE(*r) << "nothing left to detach";
}

TEST_F(EgressGuardTest, SaysWhatFailed) {
  auto g = EgressGuard::attach("no-such-if0");
  ASSERT_FALSE(g);
  EXPECT_NE(g.error().find("no-such-if0: if_nametoindex"), std::string::npos) << g.error();
  g = EgressGuard::attach("gd0", "/nonexistent/mcgw_tc_egress.bpf.o");
  ASSERT_FALSE(g);
  EXPECT_NE(g.error().find("opening /nonexistent/mcgw_tc_egress.bpf.o"), std::string::npos)
      << g.error();
  EXPECT_EQ(filterCount(), 0);
}

}  // namespace
}  // namespace mcgw::ebpf
