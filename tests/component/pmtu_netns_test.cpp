// Path MTU discovery for real: the ICMP listener and the prober in network
// namespaces of their own.  Gateway A and gateway B are joined through a
// router namespace whose interface towards B has MTU 1400, so the router's
// kernel answers A's larger DF packets with real frag-needed / Packet Too
// Big.  Root (CAP_NET_ADMIN, CAP_NET_RAW); the namespaces are removed after
// each test.
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "control/pmtu/service.hpp"

namespace mcgw::pmtu {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

config::IpAddress ip(const char* s) {
  return *config::IpAddress::parse(s);
}

bool sh(const std::string& cmd) {
  return std::system((cmd + " >/dev/null 2>&1").c_str()) == 0;
}

class PmtuNetns : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) {
      GTEST_SKIP() << "needs root (network namespaces, raw sockets)";
    }
    prefix_ = "mcgwpmtu" + std::to_string(::getpid());
    a_ = prefix_ + "-a";
    r_ = prefix_ + "-r";
    b_ = prefix_ + "-b";
    self_ = ::open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
    ASSERT_GE(self_, 0);
    const std::vector<std::string> cmds = {
        "ip netns add " + a_,
        "ip netns add " + r_,
        "ip netns add " + b_,
        "ip link add a0 netns " + a_ + " type veth peer name r0 netns " + r_,
        "ip link add b0 netns " + b_ + " type veth peer name r1 netns " + r_,
        "ip -n " + r_ + " link set r1 mtu 1400",
        "ip -n " + b_ + " link set b0 mtu 1400",
        "ip netns exec " + r_ + " sysctl -qw net.ipv4.ip_forward=1",
        "ip netns exec " + r_ + " sysctl -qw net.ipv6.conf.all.forwarding=1",
        "ip netns exec " + r_ + " sysctl -qw net.ipv4.icmp_ratelimit=0",
        "ip netns exec " + r_ + " sysctl -qw net.ipv6.icmp.ratelimit=0",
        "ip -n " + a_ + " addr add 100.64.1.1/30 dev a0",
        "ip -n " + a_ + " addr add fd00:64:1::1/64 dev a0 nodad",
        "ip -n " + r_ + " addr add 100.64.1.2/30 dev r0",
        "ip -n " + r_ + " addr add fd00:64:1::2/64 dev r0 nodad",
        "ip -n " + r_ + " addr add 100.64.3.2/30 dev r1",
        "ip -n " + r_ + " addr add fd00:64:3::2/64 dev r1 nodad",
        "ip -n " + b_ + " addr add 100.64.3.1/30 dev b0",
        "ip -n " + b_ + " addr add fd00:64:3::1/64 dev b0 nodad",
        "ip -n " + a_ + " link set a0 up",
        "ip -n " + r_ + " link set r0 up",
        "ip -n " + r_ + " link set r1 up",
        "ip -n " + b_ + " link set b0 up",
        "ip -n " + a_ + " route add 100.64.3.0/30 via 100.64.1.2",
        "ip -n " + a_ + " route add fd00:64:3::/64 via fd00:64:1::2",
        "ip -n " + b_ + " route add 100.64.1.0/30 via 100.64.3.2",
        "ip -n " + b_ + " route add fd00:64:1::/64 via fd00:64:3::2",
    };
    for (const auto& c : cmds) {
      ASSERT_TRUE(sh(c)) << c;
    }
    // Neighbours resolved before the test's packets (a ping each way).
    sh("ip netns exec " + a_ + " ping -c1 -W2 100.64.3.1");
    sh("ip netns exec " + a_ + " ping -6 -c1 -W2 fd00:64:3::1");
  }

  void TearDown() override {
    if (self_ >= 0) {
      ::setns(self_, CLONE_NEWNET);
      ::close(self_);
    }
    for (const auto& n : {a_, r_, b_}) {
      if (!n.empty()) {
        sh("ip netns del " + n);
      }
    }
  }

  void enter(const std::string& ns) {
    const int fd = ::open(("/run/netns/" + ns).c_str(), O_RDONLY | O_CLOEXEC);
    ASSERT_GE(fd, 0) << ns;
    ASSERT_EQ(::setns(fd, CLONE_NEWNET), 0) << std::strerror(errno);
    ::close(fd);
  }

  static ServiceLine line(const char* key, const char* local, const char* remote) {
    return {{key, ip(local), ip(remote), 4789}, 1500};
  }

  // Polls the services' sockets and timers for up to `limit`, until done().
  template <typename Done>
  static void run(std::vector<PathMtuService*> services, milliseconds limit, Done done) {
    const TimePoint end = Clock::now() + limit;
    while (Clock::now() < end && !done()) {
      std::vector<pollfd> fds;
      std::vector<PathMtuService*> owner;
      for (auto* s : services) {
        for (int fd : s->fds()) {
          fds.push_back({fd, POLLIN, 0});
          owner.push_back(s);
        }
      }
      ::poll(fds.data(), fds.size(), 20);
      for (size_t i = 0; i < fds.size(); ++i) {
        if (fds[i].revents & POLLIN) {
          owner[i]->onReadable(fds[i].fd, Clock::now());
        }
      }
      for (auto* s : services) {
        s->poll(Clock::now());
      }
    }
  }

  std::string prefix_, a_, r_, b_;
  int self_ = -1;
};

config::PathMtuConfig fastProbing() {
  config::PathMtuConfig c;
  c.probe_interval_s = 2;
  c.probe_timeout_ms = 300;
  c.aging_s = 600;
  c.probe_port = 4788;
  return c;
}

// A DF packet too big for the router's next hop: its frag-needed / PTB,
// quoting our VXLAN packet, lowers the line; the same for host traffic (another
// port) does not.
TEST_F(PmtuNetns, RouterIcmpLowersTheLine) {
  enter(a_);
  config::PathMtuConfig c = fastProbing();
  c.probe = false;
  PathMtuService a;
  ASSERT_TRUE(a.errors().empty()) << a.errors().front();
  a.configure(
      c, {line("b/v4", "100.64.1.1", "100.64.3.1"), line("b/v6", "fd00:64:1::1", "fd00:64:3::1")},
      Clock::now());
  // Tunnel packets come from the fast path's source ports (49152-65535).
  auto sendBig = [](const char* local, const char* remote, uint16_t dport, size_t size) {
    const uint16_t sport = dport == 4789 ? 50000 : 0;
    const auto l = ip(local), r = ip(remote);
    const bool v6 = l.family == config::Family::V6;
    const int fd = ::socket(v6 ? AF_INET6 : AF_INET, SOCK_DGRAM, 0);
    int probe = v6 ? IPV6_PMTUDISC_PROBE : IP_PMTUDISC_PROBE;
    ::setsockopt(fd, v6 ? IPPROTO_IPV6 : IPPROTO_IP, v6 ? IPV6_MTU_DISCOVER : IP_MTU_DISCOVER,
                 &probe, sizeof probe);
    sockaddr_storage src{}, dst{};
    socklen_t len;
    if (v6) {
      auto* s = reinterpret_cast<sockaddr_in6*>(&src);
      auto* d = reinterpret_cast<sockaddr_in6*>(&dst);
      s->sin6_family = d->sin6_family = AF_INET6;
      std::memcpy(&s->sin6_addr, l.bytes.data(), 16);
      std::memcpy(&d->sin6_addr, r.bytes.data(), 16);
      d->sin6_port = htons(dport);
      s->sin6_port = htons(sport);
      len = sizeof(sockaddr_in6);
    } else {
      auto* s = reinterpret_cast<sockaddr_in*>(&src);
      auto* d = reinterpret_cast<sockaddr_in*>(&dst);
      s->sin_family = d->sin_family = AF_INET;
      std::memcpy(&s->sin_addr, l.bytes.data(), 4);
      std::memcpy(&d->sin_addr, r.bytes.data(), 4);
      d->sin_port = htons(dport);
      s->sin_port = htons(sport);
      len = sizeof(sockaddr_in);
    }
    ::bind(fd, reinterpret_cast<sockaddr*>(&src), len);
    std::vector<char> payload(size - (v6 ? 48 : 28), 'x');
    const ssize_t n =
        ::sendto(fd, payload.data(), payload.size(), 0, reinterpret_cast<sockaddr*>(&dst), len);
    ::close(fd);
    return n == static_cast<ssize_t>(payload.size());
  };
  // Host traffic: not one of our outer packets.
  ASSERT_TRUE(sendBig("100.64.1.1", "100.64.3.1", 5000, 1500));
  run({&a}, milliseconds(500), [] { return false; });
  EXPECT_EQ(a.tracker().mtu("b/v4"), 1500);
  EXPECT_GE(a.listener().counters().not_ours, 1u);
  // A VXLAN packet of the line.
  ASSERT_TRUE(sendBig("100.64.1.1", "100.64.3.1", 4789, 1500));
  ASSERT_TRUE(sendBig("fd00:64:1::1", "fd00:64:3::1", 4789, 1500));
  run({&a}, seconds(3),
      [&] { return a.tracker().mtu("b/v4") != 1500 && a.tracker().mtu("b/v6") != 1500; });
  EXPECT_EQ(a.tracker().mtu("b/v4"), 1400);
  EXPECT_EQ(a.tracker().view("b/v4")->source, Source::kIcmp);
  EXPECT_EQ(a.tracker().view("b/v4")->reason, "icmp from 100.64.1.2");
  EXPECT_EQ(a.tracker().mtu("b/v6"), 1400);
  EXPECT_EQ(a.tracker().view("b/v6")->source, Source::kIcmp);
  EXPECT_GE(a.listener().counters().matched, 2u);
  auto changes = a.takeChanges();
  EXPECT_EQ(changes.size(), 2u);
}

// Probing between two gateways with the router's ICMP ignored (no listener
// events: the line's MTU is found by the probe search alone), then with it.
TEST_F(PmtuNetns, ProbesFindThePathMtu) {
  enter(b_);
  PathMtuService b;  // gateway B: responder for its lines
  b.configure(
      fastProbing(),
      {line("a/v4", "100.64.3.1", "100.64.1.1"), line("a/v6", "fd00:64:3::1", "fd00:64:1::1")},
      Clock::now());
  ASSERT_TRUE(b.errors().empty()) << b.errors().front();
  enter(a_);
  // Gateway A's tracker and prober without the ICMP listener: a black-holing
  // underlay, as far as A can tell.
  PathMtuTracker tracker(toSettings(fastProbing()));
  Prober prober;
  const TimePoint start = Clock::now();
  tracker.setLines({{"b/v4", {false, 1500}}, {"b/v6", {true, 1500}}}, start);
  prober.configure({{"b/v4", ip("100.64.1.1"), ip("100.64.3.1")},
                    {"b/v6", ip("fd00:64:1::1"), ip("fd00:64:3::1")}},
                   4788);
  ASSERT_TRUE(prober.errors().empty()) << prober.errors().front();
  const TimePoint end = start + seconds(20);
  while (Clock::now() < end && (tracker.mtu("b/v4") == 1500 || tracker.mtu("b/v6") == 1500 ||
                                tracker.view("b/v4")->probe != ProbeState::kOk ||
                                tracker.view("b/v6")->probe != ProbeState::kOk)) {
    std::vector<pollfd> fds;
    for (int fd : prober.fds()) {
      fds.push_back({fd, POLLIN, 0});
    }
    for (int fd : b.fds()) {
      fds.push_back({fd, POLLIN, 0});
    }
    ::poll(fds.data(), fds.size(), 20);
    std::vector<uint64_t> answered;
    for (const auto& p : fds) {
      if (p.revents & POLLIN) {
        prober.receive(p.fd, answered, Clock::now());
        b.onReadable(p.fd, Clock::now());
      }
    }
    for (uint64_t id : answered) {
      tracker.onProbeReply(id, Clock::now());
    }
    for (const auto& p : tracker.poll(Clock::now())) {
      prober.send(p.line, p.id, p.size, Clock::now());
    }
  }
  const auto took = std::chrono::duration_cast<milliseconds>(Clock::now() - start);
  EXPECT_EQ(tracker.mtu("b/v4"), 1400);
  EXPECT_EQ(tracker.view("b/v4")->source, Source::kProbe);
  EXPECT_EQ(tracker.view("b/v4")->probe, ProbeState::kOk);
  EXPECT_EQ(tracker.mtu("b/v6"), 1400);
  EXPECT_EQ(tracker.view("b/v6")->source, Source::kProbe);
  EXPECT_LT(took, seconds(15)) << took.count() << " ms";
  EXPECT_GT(b.prober().counters().requests_answered, 0u);
  EXPECT_GT(prober.counters().replies, 0u);

  // The whole service on A, ICMP listener included: the first probe's
  // frag-needed / PTB sets the line at once, confirmed by the next probes.
  PathMtuService a;
  a.configure(
      fastProbing(),
      {line("b/v4", "100.64.1.1", "100.64.3.1"), line("b/v6", "fd00:64:1::1", "fd00:64:3::1")},
      Clock::now());
  run({&a, &b}, seconds(5), [&] {
    return a.tracker().view("b/v4")->probe == ProbeState::kOk &&
           a.tracker().view("b/v6")->probe == ProbeState::kOk && a.tracker().mtu("b/v4") == 1400 &&
           a.tracker().mtu("b/v6") == 1400;
  });
  EXPECT_EQ(a.tracker().mtu("b/v4"), 1400);
  EXPECT_EQ(a.tracker().view("b/v4")->source, Source::kIcmp);
  EXPECT_EQ(a.tracker().view("b/v4")->probe, ProbeState::kOk);
  EXPECT_EQ(a.tracker().mtu("b/v6"), 1400);
  EXPECT_EQ(a.tracker().view("b/v6")->probe, ProbeState::kOk);
}

// A peer without a probe responder (a Linux VXLAN site): its kernel refuses
// the probes (port unreachable), none is lost; "no answer"; the probes leave
// the MTU alone (the router's ICMP for the first big probe still lowers it).
TEST_F(PmtuNetns, SilentPeerIsNoAnswer) {
  enter(a_);
  PathMtuService a;
  a.configure(fastProbing(), {line("c/v4", "100.64.1.1", "100.64.3.1")}, Clock::now());
  run({&a}, seconds(5), [&] { return a.tracker().view("c/v4")->probe == ProbeState::kNoAnswer; });
  EXPECT_EQ(a.tracker().view("c/v4")->probe, ProbeState::kNoAnswer);
  EXPECT_EQ(a.tracker().mtu("c/v4"), 1400);
  EXPECT_EQ(a.tracker().view("c/v4")->source, Source::kIcmp);
  EXPECT_EQ(a.tracker().view("c/v4")->counters.probes_answered, 0u);
  EXPECT_GT(a.tracker().view("c/v4")->counters.probes_refused, 0u);
  EXPECT_EQ(a.tracker().view("c/v4")->counters.probes_lost, 0u);
  EXPECT_GT(a.listener().counters().refused, 0u);
  EXPECT_EQ(a.tracker().view("c/v4")->counters.searches, 0u);
}

// Line quality over real sockets (probe types 3 and 4) with path MTU probing
// off on both sides: each responder answers the other's quality probes (the
// first one 5 s after the lines appear, since no path MTU probe tells that
// a responder is there; then every 50 ms), IPv4 and IPv6: state ok, RTT >
// 0, no loss, and each side counted what it answered.
TEST_F(PmtuNetns, LineQualityWithPathMtuProbingOff) {
  config::PathMtuConfig c = fastProbing();
  c.probe = false;
  c.quality_interval_ms = 50;
  enter(b_);
  PathMtuService b;
  b.configure(
      c, {line("a/v4", "100.64.3.1", "100.64.1.1"), line("a/v6", "fd00:64:3::1", "fd00:64:1::1")},
      Clock::now());
  enter(a_);
  PathMtuService a;
  a.configure(
      c, {line("b/v4", "100.64.1.1", "100.64.3.1"), line("b/v6", "fd00:64:1::1", "fd00:64:3::1")},
      Clock::now());
  auto settled = [](const PathMtuService& s, const char* key) {
    const QualityView* v = s.quality().view(key);
    return v && v->state == QualityState::kOk && v->window10s.probes >= 20;
  };
  run({&a, &b}, seconds(12), [&] {
    return settled(a, "b/v4") && settled(a, "b/v6") && settled(b, "a/v4") && settled(b, "a/v6");
  });
  for (const auto& [s, key] : std::vector<std::pair<PathMtuService*, const char*>>{
           {&a, "b/v4"}, {&a, "b/v6"}, {&b, "a/v4"}, {&b, "a/v6"}}) {
    const QualityView* v = s->quality().view(key);
    ASSERT_NE(v, nullptr) << key;
    EXPECT_EQ(v->state, QualityState::kOk) << key;
    EXPECT_TRUE(v->peer_responds) << key;
    EXPECT_GE(v->window10s.probes, 20u) << key;
    EXPECT_EQ(v->window10s.lost, 0u) << key;
    EXPECT_GT(v->window10s.rtt_ms_min, 0.0) << key;
    EXPECT_LT(v->window10s.rtt_ms_max, 1000.0) << key;
    EXPECT_EQ(v->counters.late + v->counters.duplicate + v->counters.unknown, 0u) << key;
  }
  EXPECT_GT(a.prober().counters().quality_requests_answered, 0u);
  EXPECT_GT(b.prober().counters().quality_requests_answered, 0u);
  EXPECT_EQ(a.prober().counters().quality_replies_unmatched, 0u);
  EXPECT_EQ(a.prober().counters().malformed, 0u);
  // Path MTU probing stayed off: no path MTU probe was sent.
  EXPECT_EQ(a.prober().counters().sent, 0u);

  // From B's VTEP to A's probe port: a truncated quality reply and an
  // unknown type (malformed, counted), and a well-formed reply to no probe
  // sent (unknown).  Nothing else changes.
  enter(b_);
  const int fd = ::socket(AF_INET, SOCK_DGRAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in src{}, dst{};
  src.sin_family = dst.sin_family = AF_INET;
  std::memcpy(&src.sin_addr, ip("100.64.3.1").bytes.data(), 4);
  std::memcpy(&dst.sin_addr, ip("100.64.1.1").bytes.data(), 4);
  dst.sin_port = htons(4788);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&src), sizeof src), 0);
  auto reply = encodeQuality({true, 999999, 1});
  auto sendBytes = [&](const std::vector<std::byte>& p) {
    return ::sendto(fd, p.data(), p.size(), 0, reinterpret_cast<sockaddr*>(&dst), sizeof dst);
  };
  auto cut = reply;
  cut.resize(20);
  auto other = reply;
  other[10] = std::byte{9};
  EXPECT_EQ(sendBytes(cut), 20);
  EXPECT_EQ(sendBytes(other), static_cast<ssize_t>(kQualityLength));
  EXPECT_EQ(sendBytes(reply), static_cast<ssize_t>(kQualityLength));
  ::close(fd);
  const uint64_t answered = a.quality().view("b/v4")->counters.answered;
  run({&a, &b}, milliseconds(300), [] { return false; });
  EXPECT_EQ(a.prober().counters().malformed, 2u);
  EXPECT_EQ(a.quality().view("b/v4")->counters.unknown, 1u);
  EXPECT_GT(a.quality().view("b/v4")->counters.answered, answered);  // probing goes on
  EXPECT_EQ(a.quality().view("b/v4")->window10s.lost, 0u);
}

}  // namespace
}  // namespace mcgw::pmtu
