// Two VRRP routers for real: VrrpService instances, each on its own thread,
// event loop and network namespace, joined by a veth pair.  What the
// gateway would do with a state change (the port's virtual MACs, BGP's
// standing) is recorded by the hooks; the link and tracked objects are
// flags the test sets.  Root (network namespaces, AF_PACKET and raw
// sockets); the namespaces are removed after each test.
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "config/loader.hpp"
#include "control/core/event_loop.hpp"
#include "control/vrrp/vrrp_service.hpp"

namespace mcgw::vrrp {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

bool sh(const std::string& cmd) {
  return std::system((cmd + " >/dev/null 2>&1").c_str()) == 0;
}

std::string capture(const std::string& cmd) {
  std::string out;
  if (FILE* f = ::popen(cmd.c_str(), "r")) {
    char buf[512];
    while (size_t n = std::fread(buf, 1, sizeof buf, f)) {
      out.append(buf, n);
    }
    ::pclose(f);
  }
  return out;
}

void enter(const std::string& ns) {
  const int fd = ::open(("/run/netns/" + ns).c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0) << ns;
  ASSERT_EQ(::setns(fd, CLONE_NEWNET), 0) << std::strerror(errno);
  ::close(fd);
}

// A gateway's config around its VRRP groups (`groups` is YAML under vrrp:).
config::ConfigPtr gatewayConfig(const std::string& name, const std::string& lan4,
                                const std::string& lan6, const std::string& groups) {
  const std::string text = "node: {name: " + name +
                           ", site: a}\n"
                           "eal: {hugepages: false}\n"
                           "ports:\n"
                           "  - {name: lan0, role: lan, vdev: net_null0, addresses: [" +
                           lan4 + ", " + lan6 +
                           "], tenant: t}\n"
                           "  - {name: wan0, role: wan, vdev: net_null1, addresses: "
                           "[203.0.113.1/29]}\n"
                           "tenants: [{name: t, vni: 100}]\n"
                           "vrrp:\n" +
                           groups;
  auto r = config::loadConfigText(text, name + ".yaml");
  EXPECT_TRUE(r.ok()) << text << (r.ok() ? "" : r.error().front().toString());
  return r.ok() ? *r : nullptr;
}

// One VRRP router: a thread in its namespace running an event loop with a
// VrrpService; the test talks to it through call().
class Router {
 public:
  Router(std::string ns, std::string ifname, config::ConfigPtr config)
      : ns_(std::move(ns)), ifname_(std::move(ifname)), config_(std::move(config)) {
    std::promise<void> ready;
    auto started = ready.get_future();
    thread_ = std::thread([this, &ready] {
      enter(ns_);
      loop_ = std::move(*core::EventLoop::create());
      const int ifindex = static_cast<int>(::if_nametoindex(ifname_.c_str()));
      Hooks h;
      h.kernel_side = [this, ifindex](const std::string&) {
        return KernelSideRef{ifname_, ifindex};
      };
      // The MAC by ioctl: /sys shows the namespace it was mounted in.
      h.port_mac = [this](const std::string&) -> std::optional<proto::Mac> {
        const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        ifreq req{};
        std::strncpy(req.ifr_name, ifname_.c_str(), IFNAMSIZ - 1);
        const bool ok = fd >= 0 && ::ioctl(fd, SIOCGIFHWADDR, &req) == 0;
        if (fd >= 0) {
          ::close(fd);
        }
        if (!ok) {
          return std::nullopt;
        }
        proto::Mac m{};
        std::memcpy(m.data(), req.ifr_hwaddr.sa_data, 6);
        return m;
      };
      h.link_up = [this](const std::string&) { return link_.load(); };
      h.tracked_up = [this](const config::VrrpTrack&) { return tracked_.load(); };
      h.set_virtual_macs = [this](const std::string& port, const std::vector<proto::Mac>& macs) {
        std::lock_guard<std::mutex> l(mutex_);
        macs_[port] = macs;
      };
      h.bgp_standing = [this](const BgpStanding& s) {
        std::lock_guard<std::mutex> l(mutex_);
        standings_.push_back(s);
      };
      h.site_reachable = [this](bool reachable) {
        std::lock_guard<std::mutex> l(mutex_);
        site_.push_back(reachable);
      };
      h.accepted_addresses = [this](const std::vector<config::IpAddress>& a) {
        std::string s;
        for (const auto& x : a) {
          s += (s.empty() ? "" : " ") + x.toString();
        }
        std::lock_guard<std::mutex> l(mutex_);
        accepted_.push_back(s);
      };
      service_ = std::make_unique<VrrpService>(config_, h);
      service_->attach(*loop_);
      ready.set_value();
      loop_->run();
      service_.reset();
      loop_.reset();
    });
    started.wait();
  }
  ~Router() {
    loop_->post([this] { loop_->exit(0); });
    thread_.join();
  }

  // Runs f on the router's loop and waits for it.
  template <typename F>
  auto call(F f) {
    std::packaged_task<decltype(f())()> task(std::move(f));
    auto result = task.get_future();
    loop_->post([&task] { task(); });
    return result.get();
  }
  json view() {
    return call([this] { return service_->view(); });
  }
  json group(size_t i = 0) { return view()["groups"][i]; }
  std::string state(size_t i = 0) { return group(i)["state"].get<std::string>(); }
  void shutdown() {
    call([this] {
      service_->shutdown();
      return 0;
    });
  }
  // A reload as the Gateway runs it: paused, prepared and applied off the
  // groups' state, resumed on the loop.
  void reload(config::ConfigPtr next) {
    call([this, next] {
      service_->setPaused(true);
      daemon::ReloadPlan plan;
      plan.next = next;
      EXPECT_TRUE(service_->prepare(plan).ok());
      service_->apply();
      service_->setPaused(false);
      return 0;
    });
  }
  std::vector<proto::Mac> macs() {
    std::lock_guard<std::mutex> l(mutex_);
    return macs_["lan0"];
  }
  std::vector<BgpStanding> standings() {
    std::lock_guard<std::mutex> l(mutex_);
    return standings_;
  }
  // What hooks.accepted_addresses was told, in order (addresses joined).
  std::vector<std::string> accepted() {
    std::lock_guard<std::mutex> l(mutex_);
    return accepted_;
  }
  // What hooks.site_reachable was told, in order.
  std::vector<bool> site() {
    std::lock_guard<std::mutex> l(mutex_);
    return site_;
  }
  bool siteReachableNow() {
    return call([this] { return service_->siteReachableNow(); });
  }
  // Polls until the group's state is `want` or `limit` passes; the time it took.
  std::optional<std::chrono::milliseconds> waitState(const std::string& want,
                                                     std::chrono::milliseconds limit,
                                                     size_t i = 0) {
    const auto t0 = std::chrono::steady_clock::now();
    while (std::chrono::steady_clock::now() - t0 < limit) {
      if (state(i) == want) {
        return std::chrono::duration_cast<std::chrono::milliseconds>(
            std::chrono::steady_clock::now() - t0);
      }
      std::this_thread::sleep_for(5ms);
    }
    return std::nullopt;
  }

  std::atomic<bool> link_{true};
  std::atomic<bool> tracked_{true};

 private:
  std::string ns_, ifname_;
  config::ConfigPtr config_;
  std::unique_ptr<core::EventLoop> loop_;
  std::unique_ptr<VrrpService> service_;
  std::thread thread_;
  std::mutex mutex_;
  std::map<std::string, std::vector<proto::Mac>> macs_;
  std::vector<BgpStanding> standings_;
  std::vector<bool> site_;
  std::vector<std::string> accepted_;
};

// Sends from the interface `ifname` of namespace `ns` (a thread of its own
// enters it): send(sockets) writes the frames; then the routers get 200 ms
// to read them.
template <typename Send>
void sendFrom(const std::string& ns, const char* ifname, Send send) {
  std::thread sender([&] {
    enter(ns);
    auto s = PortSockets::open(ifname, static_cast<int>(::if_nametoindex(ifname)));
    ASSERT_TRUE(s.ok()) << s.error();
    send(*s);
  });
  sender.join();
  std::this_thread::sleep_for(200ms);
}

class VrrpNetns : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) {
      GTEST_SKIP() << "needs root (network namespaces, AF_PACKET sockets)";
    }
    prefix_ = "mcgwvrrp" + std::to_string(::getpid());
    a_ = prefix_ + "-a";
    b_ = prefix_ + "-b";
    for (const std::string& c : {
             "ip netns add " + a_,
             "ip netns add " + b_,
             "ip link add a0 netns " + a_ + " type veth peer name b0 netns " + b_,
             "ip -n " + a_ + " addr add 10.9.0.1/24 dev a0",
             "ip -n " + a_ + " addr add fd09::1/64 dev a0 nodad",
             "ip -n " + b_ + " addr add 10.9.0.2/24 dev b0",
             "ip -n " + b_ + " addr add fd09::2/64 dev b0 nodad",
             "ip -n " + a_ + " link set a0 up",
             "ip -n " + b_ + " link set b0 up",
         }) {
      ASSERT_TRUE(sh(c)) << c;
    }
  }
  void TearDown() override {
    for (const auto& n : {a_, b_}) {
      if (!n.empty()) {
        sh("ip netns del " + n);
      }
    }
  }

  static std::string group4(int priority, const std::string& extra = "") {
    return "  - {vrid: 10, port: lan0, priority: " + std::to_string(priority) +
           ", advert-interval-ms: 100, virtual-addresses: [10.9.0.254], "
           "announce-interval-ms: 0" +
           extra + "}\n";
  }

  std::string prefix_, a_, b_;
};

const proto::Mac kVmac10 = {0x00, 0x00, 0x5e, 0x00, 0x01, 0x0a};

TEST_F(VrrpNetns, HigherPriorityBecomesActiveAndAnswersArpWithTheVirtualMac) {
  Router a(a_, "a0", gatewayConfig("a", "10.9.0.1/24", "fd09::1/64", group4(200)));
  Router b(b_, "b0", gatewayConfig("b", "10.9.0.2/24", "fd09::2/64", group4(100)));
  // A Backup waits its Active-down interval (3 × 100 ms + skew) first.
  ASSERT_TRUE(a.waitState("active", 2s)) << a.group().dump();
  ASSERT_TRUE(b.waitState("backup", 2s)) << b.group().dump();
  std::this_thread::sleep_for(500ms);  // B hears A's advertisements and stays Backup
  EXPECT_EQ(b.state(), "backup");
  EXPECT_EQ(b.group()["active_address"], "10.9.0.1");
  EXPECT_EQ(a.group()["active_address"], "10.9.0.1");
  EXPECT_GE(b.group()["counters"]["accepted"].get<uint64_t>(), 3u);
  EXPECT_EQ(a.macs(), std::vector<proto::Mac>{kVmac10});
  EXPECT_TRUE(b.macs().empty());
  ASSERT_FALSE(b.standings().empty());
  EXPECT_EQ(b.standings().back().mode, BgpStanding::Mode::kPrepend);
  EXPECT_EQ(b.standings().back().prepend, 3);
  EXPECT_EQ(a.standings().back().mode, BgpStanding::Mode::kActive);

  // B's kernel asks for the virtual address; only A (Active) answers, with
  // the virtual MAC.
  sh("ip netns exec " + b_ + " ping -c1 -W1 10.9.0.254");
  const std::string neigh = capture("ip -n " + b_ + " neigh show 10.9.0.254");
  EXPECT_NE(neigh.find("00:00:5e:00:01:0a"), std::string::npos) << neigh;
  EXPECT_GE(a.group()["counters"]["arp_answered"].get<uint64_t>(), 1u);
  EXPECT_EQ(b.group()["counters"]["arp_answered"].get<uint64_t>(), 0u);
}

TEST_F(VrrpNetns, OrderlyShutdownHandsOverWithinSkewTime) {
  Router a(a_, "a0", gatewayConfig("a", "10.9.0.1/24", "fd09::1/64", group4(200)));
  Router b(b_, "b0", gatewayConfig("b", "10.9.0.2/24", "fd09::2/64", group4(100)));
  ASSERT_TRUE(a.waitState("active", 2s));
  ASSERT_TRUE(b.waitState("backup", 2s));
  std::this_thread::sleep_for(400ms);
  a.shutdown();
  // Priority 0: B takes over after its Skew_Time (61 ms at priority 100,
  // 100 ms interval), well before the 3 × 100 ms + skew it would wait.
  auto took = b.waitState("active", 2s);
  ASSERT_TRUE(took);
  EXPECT_LT(took->count(), 300) << "B took " << took->count() << " ms";
  EXPECT_EQ(b.group()["last_transition"]["reason"], "priority 0 from the active");
  EXPECT_EQ(a.state(), "initialize");
  EXPECT_TRUE(a.macs().empty());
  EXPECT_EQ(b.macs(), std::vector<proto::Mac>{kVmac10});
  EXPECT_EQ(b.standings().back().mode, BgpStanding::Mode::kActive);
}

TEST_F(VrrpNetns, LinkDownTakesTheGroupDownAndBackPreempts) {
  Router a(a_, "a0", gatewayConfig("a", "10.9.0.1/24", "fd09::1/64", group4(200)));
  Router b(b_, "b0", gatewayConfig("b", "10.9.0.2/24", "fd09::2/64", group4(100)));
  ASSERT_TRUE(a.waitState("active", 2s));
  ASSERT_TRUE(b.waitState("backup", 2s));
  a.link_ = false;
  ASSERT_TRUE(a.waitState("initialize", 1s));
  EXPECT_EQ(a.group()["last_transition"]["reason"], "port lan0 link down");
  EXPECT_EQ(a.group()["down_reason"], "port lan0 link down");
  ASSERT_TRUE(b.waitState("active", 2s));
  a.link_ = true;
  // A starts as Backup, hears B's lower priority and preempts after its
  // Active-down interval.
  ASSERT_TRUE(a.waitState("active", 2s));
  ASSERT_TRUE(b.waitState("backup", 1s));
  EXPECT_NE(b.group()["last_transition"]["reason"].get<std::string>().find("higher priority 200"),
            std::string::npos)
      << b.group()["last_transition"];
}

// The site is reachable while every port with a group has link: told at the
// first tracking tick and on each change (the Gateway holds BFD meanwhile);
// a reload to no groups makes it reachable again.
TEST_F(VrrpNetns, SiteReachabilityFollowsTheLinkOfTheGroupsPorts) {
  Router a(a_, "a0", gatewayConfig("a", "10.9.0.1/24", "fd09::1/64", group4(200)));
  ASSERT_TRUE(a.waitState("active", 2s));
  EXPECT_EQ(a.site(), std::vector<bool>{true}) << "told once, at the first tick";
  EXPECT_TRUE(a.siteReachableNow());
  EXPECT_EQ(a.view()["site_reachable"], true);
  a.link_ = false;
  ASSERT_TRUE(a.waitState("initialize", 1s));
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(a.site(), (std::vector<bool>{true, false}));
  EXPECT_FALSE(a.siteReachableNow());
  EXPECT_EQ(a.view()["site_reachable"], false);
  a.link_ = true;
  ASSERT_TRUE(a.waitState("active", 2s));
  EXPECT_EQ(a.site(), (std::vector<bool>{true, false, true}));
  a.link_ = false;
  ASSERT_TRUE(a.waitState("initialize", 1s));
  a.reload(gatewayConfig("a", "10.9.0.1/24", "fd09::1/64", " []\n"));
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(a.site(), (std::vector<bool>{true, false, true, false, true}))
      << "no group: nothing to deliver to, nothing held";
  EXPECT_TRUE(a.siteReachableNow());
}

// Accept mode: the Active group's virtual addresses are handed to the
// gateway while Active, taken back when it leaves Active; a group without
// accept mode hands nothing.
TEST_F(VrrpNetns, AcceptModeHandsTheVirtualAddressesOverWhileActive) {
  Router a(a_, "a0",
           gatewayConfig("a", "10.9.0.1/24", "fd09::1/64",
                         group4(200, ", accept-mode: true") +
                             "  - {vrid: 11, port: lan0, priority: 200, advert-interval-ms: 100, "
                             "virtual-addresses: [10.9.0.253], announce-interval-ms: 0}\n"));
  ASSERT_TRUE(a.waitState("active", 2s));
  ASSERT_TRUE(a.waitState("active", 2s, 1));
  EXPECT_EQ(a.accepted(), std::vector<std::string>{"10.9.0.254"});
  a.link_ = false;
  ASSERT_TRUE(a.waitState("initialize", 1s));
  EXPECT_EQ(a.accepted(), (std::vector<std::string>{"10.9.0.254", ""}));
  a.link_ = true;
  ASSERT_TRUE(a.waitState("active", 2s));
  a.shutdown();
  EXPECT_EQ(a.accepted(), (std::vector<std::string>{"10.9.0.254", "", "10.9.0.254", ""}));
}

TEST_F(VrrpNetns, TrackedObjectDownLowersPriorityAndThePeerPreempts) {
  const std::string track = ", track: [{object: port wan0, weight: 150}]";
  Router a(a_, "a0", gatewayConfig("a", "10.9.0.1/24", "fd09::1/64", group4(200, track)));
  Router b(b_, "b0", gatewayConfig("b", "10.9.0.2/24", "fd09::2/64", group4(100)));
  ASSERT_TRUE(a.waitState("active", 2s));
  ASSERT_TRUE(b.waitState("backup", 2s));
  a.tracked_ = false;
  ASSERT_TRUE(b.waitState("active", 2s)) << b.group();
  ASSERT_TRUE(a.waitState("backup", 1s));
  const json g = a.group();
  EXPECT_EQ(g["priority"]["configured"], 200);
  EXPECT_EQ(g["priority"]["effective"], 50);
  EXPECT_EQ(g["tracking"][0]["up"], false);
}

TEST_F(VrrpNetns, Ipv6GroupAnswersNeighborSolicitations) {
  const std::string g6 =
      "  - {vrid: 20, port: lan0, priority: PRIO, advert-interval-ms: 50, "
      "virtual-addresses: [fd09::fe], announce-interval-ms: 0}\n";
  auto with = [&](const char* p) {
    std::string s = g6;
    s.replace(s.find("PRIO"), 4, p);
    return s;
  };
  Router a(a_, "a0", gatewayConfig("a", "10.9.0.1/24", "fd09::1/64", with("200")));
  Router b(b_, "b0", gatewayConfig("b", "10.9.0.2/24", "fd09::2/64", with("100")));
  ASSERT_TRUE(a.waitState("active", 2s)) << a.group();
  ASSERT_TRUE(b.waitState("backup", 2s));
  // Multicast IPv6 groups send from the link-local address of the port's MAC.
  const std::string primary = a.group()["primary_address"];
  EXPECT_EQ(primary.rfind("fe80::", 0), 0u) << primary;
  EXPECT_EQ(b.group()["active_address"], primary);
  EXPECT_EQ(a.group()["virtual_mac"], "00:00:5e:00:02:14");
  sh("ip netns exec " + b_ + " ping -6 -c1 -W1 fd09::fe");
  const std::string neigh = capture("ip -n " + b_ + " -6 neigh show fd09::fe");
  EXPECT_NE(neigh.find("00:00:5e:00:02:14"), std::string::npos) << neigh;
  EXPECT_GE(a.group()["counters"]["nd_answered"].get<uint64_t>(), 1u);
  // The interface lets the solicited-node group of fd09::fe in (a NIC with a
  // multicast filter would otherwise drop the hosts' solicitations).
  const std::string maddr = capture("ip -n " + a_ + " maddr show dev a0");
  EXPECT_NE(maddr.find("33:33:ff:00:00:fe"), std::string::npos) << maddr;
}

TEST_F(VrrpNetns, UnicastGroupIgnoresAdvertisementsFromOthers) {
  // B lists only 10.9.0.1; C (10.9.0.3, also in A's namespace) is a stranger.
  ASSERT_TRUE(sh("ip -n " + a_ + " addr add 10.9.0.3/24 dev a0"));
  Router a(a_, "a0",
           gatewayConfig("a", "10.9.0.1/24", "fd09::1/64",
                         group4(200, ", unicast-peers: [10.9.0.2], source-address: 10.9.0.1")));
  Router b(
      b_, "b0",
      gatewayConfig("b", "10.9.0.2/24", "fd09::2/64", group4(100, ", unicast-peers: [10.9.0.1]")));
  ASSERT_TRUE(a.waitState("active", 2s));
  ASSERT_TRUE(b.waitState("backup", 2s));
  EXPECT_EQ(b.group()["mode"], "unicast");
  // C claims the group with priority 254: B must not follow it.
  std::vector<std::byte> buf(64);
  const proto::IpAddr c = proto::IpAddr::v4(10, 9, 0, 3), bip = proto::IpAddr::v4(10, 9, 0, 2);
  const proto::IpAddr vip = proto::IpAddr::v4(10, 9, 0, 254);
  proto::VrrpAdvertisement adv{10, 254, 10, std::span<const proto::IpAddr>(&vip, 1)};
  const size_t n = proto::encodeVrrpAdvert(buf, adv, c, bip);
  ASSERT_GT(n, 0u);
  sendFrom(a_, "a0", [&](PortSockets& s) {
    for (int i = 0; i < 5; ++i) {
      ASSERT_TRUE(s.sendRaw({reinterpret_cast<const uint8_t*>(buf.data()), n}, c, bip));
      std::this_thread::sleep_for(20ms);
    }
  });
  EXPECT_GE(b.group()["counters"]["not_a_peer"].get<uint64_t>(), 5u);
  EXPECT_EQ(b.group()["active_address"], "10.9.0.1");
  EXPECT_EQ(b.state(), "backup");
}

// A split brain heals: the Active hears another Active of lower priority
// (which will step down) and sends its gratuitous ARP again at once, at most
// once a second, so that switches and hosts learn the virtual MAC's place.
TEST_F(VrrpNetns, ActiveHearingALowerActiveAnnouncesAgain) {
  Router a(a_, "a0", gatewayConfig("a", "10.9.0.1/24", "fd09::1/64", group4(200)));
  ASSERT_TRUE(a.waitState("active", 2s));
  std::this_thread::sleep_for(200ms);
  const uint64_t before = a.group()["counters"]["announcements"].get<uint64_t>();
  std::vector<std::byte> buf(64);
  const proto::IpAddr bip = proto::IpAddr::v4(10, 9, 0, 2), aip = proto::IpAddr::v4(10, 9, 0, 1);
  const proto::IpAddr vip = proto::IpAddr::v4(10, 9, 0, 254);
  proto::VrrpAdvertisement adv{10, 100, 10, std::span<const proto::IpAddr>(&vip, 1)};
  const size_t n = proto::encodeVrrpAdvert(buf, adv, bip, aip);
  ASSERT_GT(n, 0u);
  sendFrom(b_, "b0", [&](PortSockets& s) {
    for (int i = 0; i < 3; ++i) {
      ASSERT_TRUE(s.sendRaw({reinterpret_cast<const uint8_t*>(buf.data()), n}, bip, aip));
      std::this_thread::sleep_for(50ms);
    }
  });
  const json g = a.group();
  EXPECT_EQ(g["state"], "active");
  EXPECT_EQ(g["counters"]["discarded_lower_priority"].get<uint64_t>(), 3u) << g["counters"];
  // One virtual address: one more gratuitous ARP, not three.
  EXPECT_EQ(g["counters"]["announcements"].get<uint64_t>(), before + 1) << g["counters"];
}

// The IPv4 header checksum of a frame's IP header (after 14 bytes of Ethernet).
void fixIpv4Checksum(std::vector<std::byte>& f) {
  f[24] = f[25] = std::byte{0};
  uint32_t sum = 0;
  for (size_t i = 14; i < 34; i += 2) {
    sum += (std::to_integer<uint32_t>(f[i]) << 8) | std::to_integer<uint32_t>(f[i + 1]);
  }
  while (sum >> 16) {
    sum = (sum & 0xffff) + (sum >> 16);
  }
  f[24] = std::byte(static_cast<uint8_t>(~sum >> 8));
  f[25] = std::byte(static_cast<uint8_t>(~sum));
}

// What a running group does with bad advertisements that would otherwise
// take it over (priority 254): counted by reason and ignored.  A TTL other
// than 255 (from beyond the LAN), VRRPv2, a wrong checksum, a frame cut
// short.
TEST_F(VrrpNetns, BadAdvertisementsAreCountedAndIgnored) {
  Router a(a_, "a0", gatewayConfig("a", "10.9.0.1/24", "fd09::1/64", group4(200)));
  ASSERT_TRUE(a.waitState("active", 2s));
  const proto::IpAddr bip = proto::IpAddr::v4(10, 9, 0, 2);
  const proto::IpAddr vip = proto::IpAddr::v4(10, 9, 0, 254);
  proto::VrrpAdvertisement adv{10, 254, 10, std::span<const proto::IpAddr>(&vip, 1)};
  std::vector<std::byte> good(proto::advertFrameLength(false, 1));
  ASSERT_EQ(proto::buildAdvertFrame(good, adv, bip), good.size());
  auto ttl64 = good;
  ttl64[22] = std::byte{64};
  fixIpv4Checksum(ttl64);
  auto v2 = good;
  v2[34] = std::byte{0x21};  // version 2, type 1
  auto bad_sum = good;
  bad_sum[40] ^= std::byte{0xff};  // the checksum's first byte (VRRP header + 6)
  auto cut = good;
  cut.resize(14 + 20 + 4);
  sendFrom(b_, "b0", [&](PortSockets& s) {
    for (const auto* f : {&ttl64, &v2, &bad_sum, &cut}) {
      ASSERT_TRUE(s.sendFrame({reinterpret_cast<const uint8_t*>(f->data()), f->size()}));
      std::this_thread::sleep_for(20ms);
    }
  });
  const json v = a.view();
  const json& g = v["groups"][0];
  EXPECT_EQ(g["state"], "active");
  EXPECT_EQ(g["active_address"], "10.9.0.1");
  EXPECT_EQ(g["counters"]["bad_ttl"], 1) << g["counters"];
  EXPECT_EQ(g["counters"]["stepped_down"], 0) << g["counters"];
  const json& m = v["ports"][0]["malformed"];
  EXPECT_EQ(m.value("bad version", 0), 1) << m;
  EXPECT_EQ(m.value("bad checksum", 0), 1) << m;
  uint64_t total = 0;
  for (const auto& [why, n] : m.items()) {
    total += n.get<uint64_t>();
  }
  EXPECT_EQ(total, 3u) << m;  // bad version, bad checksum and the cut frame (by its reason)
}

TEST_F(VrrpNetns, HangingNotifyIsKilledAndNeverHoldsTheStateMachine) {
  const std::string dir = "/tmp/" + prefix_;
  ASSERT_TRUE(sh("mkdir -p " + dir));
  {
    std::ofstream s(dir + "/hang.sh");
    s << "#!/bin/sh\necho \"$@\" >> " << dir << "/calls\nexec sleep 30\n";
  }
  ASSERT_TRUE(sh("chmod +x " + dir + "/hang.sh"));
  const std::string notify = ", notify: " + dir + "/hang.sh, notify-timeout-ms: 2000";
  Router b(b_, "b0", gatewayConfig("b", "10.9.0.2/24", "fd09::2/64", group4(100, notify)));
  // Alone, B goes Backup then Active (after 3 x 100 ms + skew) while its
  // first notify hangs for 2 s: a state machine that waited for it would
  // be Active only after that.
  const auto active = b.waitState("active", 1500ms);
  ASSERT_TRUE(active) << b.group().dump();
  EXPECT_LT(active->count(), 1500);
  EXPECT_EQ(b.group()["counters"]["notify_timed_out"], 0);  // the first one still hangs
  // One thread runs them in turn: the first killed at 2 s, the second at 4 s.
  json c;
  for (auto t0 = std::chrono::steady_clock::now(); std::chrono::steady_clock::now() - t0 < 10s;
       std::this_thread::sleep_for(50ms)) {
    c = b.group()["counters"];
    if (c["notify_timed_out"] == 2) {
      break;
    }
  }
  EXPECT_EQ(c["notify_run"], 2) << c;
  EXPECT_EQ(c["notify_timed_out"], 2) << c;
  std::ifstream in(dir + "/calls");
  std::string first, second;
  std::getline(in, first);
  std::getline(in, second);
  EXPECT_EQ(first, "10 initialize backup startup");
  EXPECT_EQ(second, "10 backup active active down timer expired");
  sh("rm -rf " + dir);
}

// On an orderly stop the last transition's notify runs before shutdown()
// returns (a queued one would be dropped with the worker), within the
// stop's bound even when the command hangs.
TEST_F(VrrpNetns, ShutdownRunsTheLastNotifyBounded) {
  const std::string dir = "/tmp/" + prefix_ + "-stop";
  ASSERT_TRUE(sh("mkdir -p " + dir));
  {
    std::ofstream s(dir + "/notify.sh");
    s << "#!/bin/sh\necho \"$@\" >> " << dir << "/calls\n"
      << "[ \"$3\" = initialize ] && exec sleep 30\nexit 0\n";
  }
  ASSERT_TRUE(sh("chmod +x " + dir + "/notify.sh"));
  const std::string notify = ", notify: " + dir + "/notify.sh, notify-timeout-ms: 60000";
  Router a(a_, "a0", gatewayConfig("a", "10.9.0.1/24", "fd09::1/64", group4(200, notify)));
  ASSERT_TRUE(a.waitState("active", 2s));
  std::this_thread::sleep_for(300ms);  // the startup notifies ran on the worker
  const auto t0 = std::chrono::steady_clock::now();
  a.shutdown();
  const auto took = std::chrono::steady_clock::now() - t0;
  EXPECT_GE(took, 1900ms);  // it ran, and hung, on the stopping thread...
  EXPECT_LT(took, 4s);      // ...killed at the stop's bound, not at 60 s
  std::ifstream in(dir + "/calls");
  std::string line, last;
  while (std::getline(in, line)) {
    last = line;
  }
  EXPECT_EQ(last, "10 active initialize shutdown");
  const json c = a.group()["counters"];
  EXPECT_EQ(c["notify_timed_out"], 1) << c;
  sh("rm -rf " + dir);
}

// A reload keeps a group whose config is unchanged (its state, its
// transitions) and restarts a changed one, which an Active leaves with
// priority 0; the order of the groups does not matter.
TEST_F(VrrpNetns, ReloadKeepsUnchangedGroupsAndRestartsChangedOnes) {
  auto groups = [](int priority11) {
    return group4(200) + "  - {vrid: 11, port: lan0, priority: " + std::to_string(priority11) +
           ", advert-interval-ms: 100, virtual-addresses: [10.9.0.253], "
           "announce-interval-ms: 0}\n";
  };
  Router a(a_, "a0", gatewayConfig("a", "10.9.0.1/24", "fd09::1/64", groups(150)));
  ASSERT_TRUE(a.waitState("active", 2s, 0)) << a.view().dump();
  ASSERT_TRUE(a.waitState("active", 2s, 1)) << a.view().dump();
  const json before10 = a.group(0);
  a.reload(gatewayConfig("a", "10.9.0.1/24", "fd09::1/64", groups(160)));
  const json after10 = a.group(0);
  EXPECT_EQ(after10["state"], "active");
  EXPECT_EQ(after10["transitions"], before10["transitions"]) << after10.dump();
  const json g11 = a.group(1);
  EXPECT_EQ(g11["priority"]["configured"], 160) << g11.dump();
  EXPECT_NE(g11["state"], "active");  // started again, as Backup
  ASSERT_TRUE(a.waitState("active", 2s, 1)) << a.view().dump();
  // And a reload that removes the first group and keeps the second.
  a.reload(gatewayConfig("a", "10.9.0.1/24", "fd09::1/64",
                         "  - {vrid: 11, port: lan0, priority: 160, advert-interval-ms: 100, "
                         "virtual-addresses: [10.9.0.253], announce-interval-ms: 0}\n"));
  ASSERT_EQ(a.view()["groups"].size(), 1u);
  EXPECT_EQ(a.group(0)["vrid"], 11);
  EXPECT_EQ(a.state(0), "active");
  EXPECT_EQ(a.macs(), (std::vector<proto::Mac>{{0x00, 0x00, 0x5e, 0x00, 0x01, 0x0b}}));
}

}  // namespace
}  // namespace mcgw::vrrp
