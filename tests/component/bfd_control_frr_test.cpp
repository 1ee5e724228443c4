// BFD state from a real bfdd (FRR, /usr/lib/frr/bfdd) through its control
// socket, on a core::EventLoop: two network namespaces of the test's own
// joined by a veth pair, one bfdd in each, a single-hop and a multihop
// session between them at 100 ms x 3.  The client must see both sessions
// up; then, once an nft rule in gateway A's namespace drops BFD's UDP ports,
// both down (the time from the cut to each notification is printed); then
// bfdd killed: disconnected, no states; bfdd started again: reconnected and
// both sessions up again.  Root (network namespaces); skipped without FRR.
//
// Each namespace has its own zebra too: bfdd learns interfaces from zebra,
// and a session bound to an interface ("interface line0", as a line's
// session is) stays down without it ("specified interface line0 doesn't
// exist").  Both daemons use a zebra socket in the test's own directory, so
// they never talk to a zebra of the machine.
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "control/core/event_loop.hpp"
#include "control/frr/bfd_control.hpp"

namespace mcgw::frr {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;
using State = BfdPeerState::State;

constexpr const char* kBfdd = "/usr/lib/frr/bfdd";
constexpr const char* kVtysh = "/usr/bin/vtysh";

config::IpAddress ip(const char* s) {
  return *config::IpAddress::parse(s);
}

bool sh(const std::string& cmd) {
  return std::system((cmd + " >/dev/null 2>&1").c_str()) == 0;
}

bool alive(pid_t pid) {
  return pid > 0 && ::kill(pid, 0) == 0;
}

pid_t readPid(const std::string& file) {
  std::ifstream in(file);
  long pid = 0;
  in >> pid;
  return static_cast<pid_t>(pid);
}

class BfdControlFrr : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) {
      GTEST_SKIP() << "needs root (network namespaces)";
    }
    if (::access(kBfdd, X_OK) != 0 || ::access(kVtysh, X_OK) != 0 || !sh("command -v nft")) {
      GTEST_SKIP() << "needs FRR (" << kBfdd << ", " << kVtysh << ") and nft";
    }
    char tmpl[] = "/tmp/mcgw-bfd-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    // bfdd drops to the frr user: it writes its pid file and sockets here.
    ::chmod(dir_.c_str(), 0755);
    for (const char* side : {"a", "b"}) {
      const std::string d = dir_ + "/" + side;
      ASSERT_EQ(::mkdir(d.c_str(), 0777), 0);
      ::chmod(d.c_str(), 0777);
    }
    prefix_ = "mcgwbfd" + std::to_string(::getpid());
    a_ = prefix_ + "-a";
    b_ = prefix_ + "-b";
    // Line 10.201.0.0/24 on the veth (single hop, bound to the interface);
    // 10.202.0.1 <-> 10.202.0.2 on the loopbacks, routed over it (multihop).
    const std::vector<std::string> cmds = {
        "ip netns add " + a_,
        "ip netns add " + b_,
        "ip link add line0 netns " + a_ + " type veth peer name line0 netns " + b_,
        "ip -n " + a_ + " addr add 10.201.0.1/24 dev line0",
        "ip -n " + b_ + " addr add 10.201.0.2/24 dev line0",
        "ip -n " + a_ + " addr add 10.202.0.1/32 dev lo",
        "ip -n " + b_ + " addr add 10.202.0.2/32 dev lo",
        "ip -n " + a_ + " link set lo up",
        "ip -n " + b_ + " link set lo up",
        "ip -n " + a_ + " link set line0 up",
        "ip -n " + b_ + " link set line0 up",
        "ip -n " + a_ + " route add 10.202.0.2/32 via 10.201.0.2",
        "ip -n " + b_ + " route add 10.202.0.1/32 via 10.201.0.1",
    };
    for (const auto& c : cmds) {
      ASSERT_TRUE(sh(c)) << c;
    }
    sh("ip netns exec " + a_ + " ping -c1 -W2 10.202.0.2");
    auto loop = core::EventLoop::create();
    ASSERT_TRUE(loop.ok()) << loop.error();
    loop_ = std::move(*loop);
  }

  void TearDown() override {
    client_.reset();
    loop_.reset();
    for (const char* side : {"a", "b"}) {
      if (!dir_.empty()) {
        stop(sideDir(side) + "/bgpd.pid");
        stopBfdd(side);
        stop(sideDir(side) + "/zebra.pid");
      }
    }
    for (const auto& n : {a_, b_}) {
      if (!n.empty()) {
        sh("ip netns del " + n);
      }
    }
    if (!dir_.empty()) {
      std::error_code ec;
      std::filesystem::remove_all(dir_, ec);
    }
  }

  std::string sideDir(const std::string& side) const { return dir_ + "/" + side; }
  std::string ctlPath(const std::string& side) const { return sideDir(side) + "/bfdd.sock"; }
  const std::string& ns(const std::string& side) const { return side == "a" ? a_ : b_; }

  void startZebra(const std::string& side) {
    const std::string d = sideDir(side);
    const std::string cmd = "cd " + d + " && ip netns exec " + ns(side) +
                            " /usr/lib/frr/zebra -d -z " + d + "/zserv.api --vty_socket " + d +
                            " -i " + d + "/zebra.pid -f /dev/null --log file:" + d + "/zebra.log";
    ASSERT_TRUE(sh(cmd)) << cmd;
    const auto end = Clock::now() + std::chrono::seconds(10);
    while (::access((d + "/zserv.api").c_str(), F_OK) != 0) {
      ASSERT_LT(Clock::now(), end) << "zebra in " << ns(side) << " does not start";
      ::usleep(50'000);
    }
  }

  void startBgpd(const std::string& side) {
    const std::string d = sideDir(side);
    const std::string cmd = "cd " + d + " && ip netns exec " + ns(side) +
                            " /usr/lib/frr/bgpd -d -z " + d + "/zserv.api --vty_socket " + d +
                            " -i " + d + "/bgpd.pid -f /dev/null --log file:" + d + "/bgpd.log";
    ASSERT_TRUE(sh(cmd)) << cmd;
    const auto end = Clock::now() + std::chrono::seconds(10);
    while (!vtysh(side, {"show bgp summary"})) {
      ASSERT_LT(Clock::now(), end) << "bgpd in " << ns(side) << " does not answer";
      ::usleep(50'000);
    }
  }

  void startBfdd(const std::string& side) {
    const std::string d = sideDir(side);
    const std::string cmd = "cd " + d + " && ip netns exec " + ns(side) + " " + kBfdd +
                            " -d --bfdctl " + ctlPath(side) + " --vty_socket " + d + " -z " + d +
                            "/zserv.api -i " + d + "/bfdd.pid -f /dev/null --log file:" + d +
                            "/bfdd.log";
    ASSERT_TRUE(sh(cmd)) << cmd;
    // Up once vtysh reaches it.
    const auto end = Clock::now() + std::chrono::seconds(10);
    while (!vtysh(side, {"show bfd peers brief"})) {
      ASSERT_LT(Clock::now(), end) << "bfdd in " << ns(side) << " does not answer";
      ::usleep(50'000);
    }
  }

  void stopBfdd(const std::string& side) { stop(sideDir(side) + "/bfdd.pid"); }

  static void stop(const std::string& pid_file) {
    const pid_t pid = readPid(pid_file);
    if (!alive(pid)) {
      return;
    }
    ::kill(pid, SIGTERM);
    for (int i = 0; i < 100 && alive(pid); ++i) {
      ::usleep(20'000);
    }
    if (alive(pid)) {
      ::kill(pid, SIGKILL);
      for (int i = 0; i < 100 && alive(pid); ++i) {
        ::usleep(20'000);
      }
    }
  }

  bool vtysh(const std::string& side, const std::vector<std::string>& commands) {
    std::string cmd = std::string(kVtysh) + " --vty_socket " + sideDir(side);
    for (const auto& c : commands) {
      cmd += " -c '" + c + "'";
    }
    return sh(cmd);
  }

  // Both sessions on one side at 100 ms x 3: a single hop on the line bound
  // to its interface, a multihop between the loopbacks.
  void configurePeers(const std::string& side) {
    const bool a = side == "a";
    const std::string me = a ? "1" : "2", them = a ? "2" : "1";
    ASSERT_TRUE(
        vtysh(side, {"configure", "bfd",
                     "peer 10.201.0." + them + " local-address 10.201.0." + me + " interface line0",
                     "receive-interval 100", "transmit-interval 100", "detect-multiplier 3"}));
    ASSERT_TRUE(vtysh(
        side,
        {"configure", "bfd", "peer 10.202.0." + them + " multihop local-address 10.202.0." + me,
         "receive-interval 100", "transmit-interval 100", "detect-multiplier 3"}));
  }

  void attachClient() {
    client_ = std::make_unique<BfdControlClient>(
        ctlPath("a"),
        [this](const BfdPeerState& s) {
          changes_.push_back({Clock::now(), s});
        },
        [this] { ++disconnects_; });
    client_->attach(*loop_, milliseconds(100));
  }

  // Runs the loop until done() or the limit; true when done.
  bool runUntil(const std::function<bool()>& done, milliseconds limit) {
    const auto end = Clock::now() + limit;
    while (!done()) {
      if (Clock::now() >= end) {
        return false;
      }
      loop_->runOnce(std::chrono::microseconds(10'000));
    }
    return true;
  }

  const BfdPeerState* find(const char* peer) const {
    for (const auto& s : client_->states()) {
      if (s.peer == ip(peer)) {
        return &s;
      }
    }
    return nullptr;
  }
  bool is(const char* peer, State st) const {
    const auto* s = find(peer);
    return s != nullptr && s->state == st;
  }
  bool bothUp() const { return is("10.201.0.2", State::kUp) && is("10.202.0.2", State::kUp); }

  // When the first notification of `peer` in `st` came after `since`.
  std::optional<Clock::time_point> firstChange(const char* peer, State st,
                                               Clock::time_point since) const {
    for (const auto& [at, s] : changes_) {
      if (at >= since && s.peer == ip(peer) && s.state == st) {
        return at;
      }
    }
    return std::nullopt;
  }

  std::string dir_, prefix_, a_, b_;
  std::unique_ptr<core::EventLoop> loop_;
  std::unique_ptr<BfdControlClient> client_;
  std::vector<std::pair<Clock::time_point, BfdPeerState>> changes_;
  int disconnects_ = 0;
};

TEST_F(BfdControlFrr, SessionsUpDownAndBfddRestart) {
  // The client first, before bfdd exists: it waits and retries.
  attachClient();
  EXPECT_FALSE(client_->connected());
  EXPECT_NE(client_->lastError(), "");
  startZebra("a");
  startZebra("b");
  startBfdd("a");
  startBfdd("b");
  ASSERT_TRUE(runUntil([&] { return client_->connected(); }, milliseconds(5000)))
      << client_->lastError();
  EXPECT_EQ(disconnects_, 0);
  configurePeers("a");
  configurePeers("b");
  ASSERT_TRUE(runUntil([&] { return bothUp(); }, milliseconds(15000))) << client_->lastError();

  // What bfdd says of each session, literally.
  const BfdPeerState* single = find("10.201.0.2");
  ASSERT_NE(single, nullptr);
  EXPECT_FALSE(single->multihop);
  EXPECT_EQ(single->local, ip("10.201.0.1"));
  EXPECT_EQ(single->interface, "line0");
  EXPECT_EQ(single->vrf, "");
  EXPECT_NE(single->id, 0u);
  const BfdPeerState* multi = find("10.202.0.2");
  ASSERT_NE(multi, nullptr);
  EXPECT_TRUE(multi->multihop);
  EXPECT_EQ(multi->local, ip("10.202.0.1"));
  EXPECT_EQ(multi->interface, "");
  EXPECT_EQ(multi->vrf, "default");
  EXPECT_EQ(client_->states().size(), 2u);

  // Let the timers settle at 100 ms (both ends agree after the first Poll).
  runUntil([] { return false; }, milliseconds(1000));
  ASSERT_TRUE(bothUp());

  // The cut: gateway A's namespace drops BFD control packets (single hop
  // 3784, multihop 4784), so A's detection time (3 x 100 ms) runs out.
  const std::string rule =
      "nft add table inet mcgwbfd \\; add chain inet mcgwbfd in "
      "'{ type filter hook input priority 0 ; }' \\; add rule inet mcgwbfd "
      "in udp dport '{ 3784, 4784 }' drop";
  ASSERT_TRUE(sh("ip netns exec " + a_ + " " + rule)) << rule;
  const auto cut = Clock::now();
  ASSERT_TRUE(
      runUntil([&] { return is("10.201.0.2", State::kDown) && is("10.202.0.2", State::kDown); },
               milliseconds(5000)));
  for (const char* peer : {"10.201.0.2", "10.202.0.2"}) {
    const auto at = firstChange(peer, State::kDown, cut);
    ASSERT_TRUE(at.has_value()) << peer;
    const auto ms = std::chrono::duration_cast<milliseconds>(*at - cut).count();
    std::printf("bfd: %s down %lld ms after the cut (100 ms x 3)\n", peer,
                static_cast<long long>(ms));
    EXPECT_LT(ms, 2000) << peer;
  }

  // The path back: both up again.
  ASSERT_TRUE(sh("ip netns exec " + a_ + " nft delete table inet mcgwbfd"));
  ASSERT_TRUE(runUntil([&] { return bothUp(); }, milliseconds(15000)));

  // bfdd goes away: the client drops every state and says so.
  stopBfdd("a");
  ASSERT_TRUE(runUntil([&] { return !client_->connected(); }, milliseconds(3000)));
  EXPECT_EQ(disconnects_, 1);
  EXPECT_TRUE(client_->states().empty());
  EXPECT_NE(client_->lastError(), "");
  // Retries against the stale socket file do not report again.
  runUntil([] { return false; }, milliseconds(500));
  EXPECT_EQ(disconnects_, 1);

  // bfdd back, configured again as FRR's startup would: the client
  // reconnects by itself and sees the sessions come up.
  startBfdd("a");
  ASSERT_TRUE(runUntil([&] { return client_->connected(); }, milliseconds(5000)))
      << client_->lastError();
  configurePeers("a");
  ASSERT_TRUE(runUntil([&] { return bothUp(); }, milliseconds(15000)));
  EXPECT_EQ(client_->states().size(), 2u);
  EXPECT_EQ(disconnects_, 1);
}

// A client that subscribes while sessions are up gets their state at once
// (one status per session, "up" from the first), and a paused client reads
// what waited, in order, on resume.
TEST_F(BfdControlFrr, SnapshotOnConnectAndPause) {
  startZebra("a");
  startZebra("b");
  startBfdd("a");
  startBfdd("b");
  configurePeers("a");
  configurePeers("b");
  attachClient();
  ASSERT_TRUE(runUntil([&] { return bothUp(); }, milliseconds(15000))) << client_->lastError();

  std::vector<BfdPeerState> late_changes;
  BfdControlClient late(ctlPath("a"), [&](const BfdPeerState& s) { late_changes.push_back(s); },
                        {});
  late.attach(*loop_, milliseconds(100));
  ASSERT_TRUE(runUntil([&] { return late_changes.size() >= 2; }, milliseconds(3000)))
      << late.lastError();
  EXPECT_TRUE(late.connected());
  ASSERT_EQ(late.states().size(), 2u);
  for (const auto& s : late_changes) {
    EXPECT_EQ(s.state, State::kUp) << s.peer.toString();
  }

  client_->setPaused(true);
  ASSERT_TRUE(vtysh(
      "a", {"configure", "bfd", "peer 10.202.0.2 multihop local-address 10.202.0.1", "shutdown"}));
  // The other client is not paused: it sees the change, so it was sent.
  ASSERT_TRUE(runUntil(
      [&] {
        return std::any_of(late.states().begin(), late.states().end(), [](const auto& s) {
          return s.peer == ip("10.202.0.2") && s.state == State::kAdminDown;
        });
      },
      milliseconds(3000)));
  EXPECT_TRUE(is("10.202.0.2", State::kUp)) << "nothing dispatched while paused";
  client_->setPaused(false);
  ASSERT_TRUE(runUntil([&] { return is("10.202.0.2", State::kAdminDown); }, milliseconds(3000)));
  EXPECT_TRUE(is("10.201.0.2", State::kUp));
}

// A session bgpd asks for ("neighbor X bfd", through zebra): bfdd reports
// it like a configured one (bound to the interface, with bgpd's local
// address once BGP is up), and when bgpd drops it bfdd sends no status, only
// the config "delete": the client reports the session gone (kUnknown) and
// forgets it.
TEST_F(BfdControlFrr, BgpSessionAndItsDeletion) {
  for (const char* side : {"a", "b"}) {
    startZebra(side);
    startBfdd(side);
    startBgpd(side);
  }
  attachClient();
  ASSERT_TRUE(runUntil([&] { return client_->connected(); }, milliseconds(5000)))
      << client_->lastError();
  for (const char* side : {"a", "b"}) {
    const bool a = std::string(side) == "a";
    const std::string them = a ? "10.201.0.2" : "10.201.0.1";
    ASSERT_TRUE(vtysh(side, {"configure", a ? "router bgp 65001" : "router bgp 65002",
                             a ? "bgp router-id 10.201.0.1" : "bgp router-id 10.201.0.2",
                             "no bgp ebgp-requires-policy",
                             "neighbor " + them + " remote-as " + (a ? "65002" : "65001"),
                             "neighbor " + them + " bfd"}));
  }
  // bgpd first registers the peer alone, then again with its local address
  // and interface once the BGP session is up (bfdd: "delete", then "add").
  ASSERT_TRUE(runUntil(
      [&] {
        const auto* s = find("10.201.0.2");
        return s != nullptr && s->state == State::kUp && s->local.has_value();
      },
      milliseconds(30000)))
      << client_->lastError();
  BfdPeerState session = *find("10.201.0.2");
  EXPECT_FALSE(session.multihop);
  EXPECT_EQ(session.local, ip("10.201.0.1"));
  EXPECT_EQ(session.interface, "line0");
  EXPECT_EQ(client_->states().size(), 1u);

  const auto before = changes_.size();
  ASSERT_TRUE(vtysh("a", {"configure", "router bgp 65001", "no neighbor 10.201.0.2 bfd"}));
  ASSERT_TRUE(runUntil([&] { return client_->states().empty(); }, milliseconds(5000)));
  ASSERT_GT(changes_.size(), before);
  BfdPeerState gone = session;
  gone.state = State::kUnknown;
  gone.id = 0;
  EXPECT_EQ(changes_.back().second, gone);
  EXPECT_TRUE(client_->connected());
}

}  // namespace
}  // namespace mcgw::frr
