// BGP follows VRRP (docs/routing.md "BGP follows VRRP") against a real FRR
// 8.4, through FrrRouting itself: gateway A's FRR is driven by an
// FrrRouting on a core::EventLoop (it renders and applies frr.conf with
// frr-reload.py, and a standing change with vtysh); gateway B's FRR is
// configured once with frr-reload.py.  Each FRR (zebra with dplane_fpm_nl,
// bgpd) runs in a network namespace of the test's own, joined by a veth
// pair: one line between site-a (AS 65001, announces 10.1.0.0/16) and
// site-b (AS 65002).  The test process itself runs in a private network
// namespace too (FrrRouting's FPM server listens and its nft guard loads
// there), never in the machine's.
//
// Checked: a standing set while the first frr-reload.py runs waits for it
// and is applied afterwards; B sees A's range with 65001 prepended 3 times,
// then without, then not at all (withdraw), then again; the session is
// never reset (B's connectionsEstablished stays 1, connectionsDropped 0);
// after each change frr-reload.py --test finds no difference between what
// FRR runs and the frr.conf FrrRouting wrote (the vtysh path changes exactly
// what the rendering says); status() shows the standing.  Prints the time
// from setStanding() to B's table showing the change.  Root; skipped
// without FRR.
#include <sched.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/loader.hpp"
#include "control/core/event_loop.hpp"
#include "control/core/process.hpp"
#include "control/frr/frr_routing.hpp"

namespace mcgw::frr {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using Mode = BgpStanding::Mode;

constexpr const char* kFrrLib = "/usr/lib/frr";
const std::vector<std::string> kDaemons = {"zebra", "bgpd"};

bool sh(const std::string& cmd) {
  return std::system((cmd + " >/dev/null 2>&1").c_str()) == 0;
}

pid_t readPid(const std::string& file) {
  std::ifstream in(file);
  long pid = 0;
  in >> pid;
  return static_cast<pid_t>(pid);
}

// One end of the line; A's has the FRR directories of the test.
std::string gatewayYaml(bool a, const std::string& dir) {
  const std::string me = a ? "1" : "2", them = a ? "2" : "1";
  return std::string("node:\n  name: gw-") + (a ? "a" : "b") + "\n  site: site-" + (a ? "a" : "b") +
         "\neal:\n  hugepages: false\n"
         "ports:\n"
         "  - name: lan0\n    role: lan\n    vdev: net_null0\n    addresses: [10." +
         me +
         ".0.1/24]\n"
         "  - name: wan0\n    role: wan\n    vdev: net_null1\n    addresses: [192.0.2." +
         me +
         "/24]\n"
         "tenants:\n  - name: blue\n    vni: 1001\n"
         "peers:\n  - name: site-" +
         (a ? "b" : "a") + "\n    asn: 6500" + them +
         "\n    lines:\n      - name: l1\n        port: wan0\n"
         "        local-vtep: 192.0.2." +
         me + "\n        remote-vtep: 192.0.2." + them +
         "\n"
         "bgp:\n  asn: 6500" +
         me + "\n  router-id: 10.255.0." + me +
         "\n  bfd:\n    enabled: false\n"
         "  frr:\n    config-dir: " +
         dir + "\n    run-dir: " + dir +
         "\n"
         "address-plan:\n  clouds:\n    - name: idc\n      regions:\n        - name: r1\n"
         "          vpcs:\n"
         "            - {name: vpc-a, prefixes: [10.1.0.0/16], site: site-a}\n"
         "            - {name: vpc-b, prefixes: [10.2.0.0/16], site: site-b}\n";
}

class FrrStanding : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) {
      GTEST_SKIP() << "needs root (network namespaces)";
    }
    if (::access(kFrrReload, X_OK) != 0 || ::access(kVtysh, X_OK) != 0 || !sh("command -v nft")) {
      GTEST_SKIP() << "needs FRR (" << kFrrReload << ", " << kVtysh << ") and nft";
    }
    // The test's own network namespace: FrrRouting's FPM server and nft
    // guard act here.  Before any thread exists (a namespace is per thread).
    // And its own UTS namespace: FRR 8.4 shows the system's hostname, which
    // must be A's node.name for frr-reload.py --test to find no difference.
    ASSERT_EQ(::unshare(CLONE_NEWNET | CLONE_NEWUTS), 0);
    ASSERT_EQ(::sethostname("gw-a", 4), 0);
    ASSERT_TRUE(sh("ip link set lo up"));
    char tmpl[] = "/tmp/mcgw-standing-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    ::chmod(dir_.c_str(), 0755);
    prefix_ = "mcgwstand" + std::to_string(::getpid());
    for (const char* side : {"a", "b"}) {
      const std::string d = sideDir(side);
      ASSERT_EQ(::mkdir(d.c_str(), 0755), 0);
      ASSERT_TRUE(sh("chown frr:frr " + d));
      // frr-reload.py wants this line in vtysh.conf, as Debian ships it.
      std::ofstream(d + "/vtysh.conf") << "service integrated-vtysh-config\n";
      std::ofstream(d + "/empty.conf");
      ASSERT_TRUE(sh("ip netns add " + ns(side)));
      ASSERT_TRUE(sh("ip -n " + ns(side) + " link set lo up"));
    }
    ASSERT_TRUE(sh("ip link add vA netns " + ns("a") + " type veth peer name vB netns " + ns("b")));
    for (const auto& [side, dev, addr] :
         {std::tuple{"a", "vA", "192.0.2.1/24"}, std::tuple{"b", "vB", "192.0.2.2/24"}}) {
      ASSERT_TRUE(sh("ip -n " + ns(side) + " addr add " + addr + " dev " + dev));
      ASSERT_TRUE(sh("ip -n " + ns(side) + " link set " + dev + " up"));
    }
    for (const char* side : {"a", "b"}) {
      startFrr(side);
    }
    auto loop = core::EventLoop::create();
    ASSERT_TRUE(loop.ok()) << loop.error();
    loop_ = std::move(*loop);
  }

  void TearDown() override {
    frr_.reset();
    loop_.reset();
    for (const char* side : {"a", "b"}) {
      if (dir_.empty()) {
        break;
      }
      for (const auto& d : kDaemons) {
        stop(sideDir(side) + "/" + d + ".pid");
      }
      sh("ip netns del " + ns(side));
    }
    if (!dir_.empty() && !std::getenv("MCGW_KEEP")) {
      std::error_code ec;
      std::filesystem::remove_all(dir_, ec);
    }
  }

  std::string sideDir(const std::string& side) const { return dir_ + "/" + side; }
  std::string ns(const std::string& side) const { return prefix_ + "-" + side; }

  void startFrr(const std::string& side) {
    const std::string d = sideDir(side);
    for (const auto& daemon : kDaemons) {
      std::string cmd = "ip netns exec " + ns(side) + " " + kFrrLib + "/" + daemon + " -d -f " + d +
                        "/empty.conf --vty_socket " + d + " -z " + d + "/zserv.api -i " + d + "/" +
                        daemon + ".pid -u frr -g frr -P 0 --log file:" + d + "/" + daemon + ".log";
      if (daemon == "zebra") {
        cmd += " -M dplane_fpm_nl";  // the rendering's `fpm address`
      }
      ASSERT_TRUE(sh(cmd)) << cmd;
    }
    const auto end = Clock::now() + std::chrono::seconds(20);
    while (!sh(std::string(kVtysh) + " --vty_socket " + d + " -c 'show bgp summary'")) {
      ASSERT_LT(Clock::now(), end) << "FRR in " << ns(side) << " does not answer";
      ::usleep(100'000);
    }
  }

  static void stop(const std::string& pid_file) {
    const pid_t pid = readPid(pid_file);
    if (pid <= 0 || ::kill(pid, 0) != 0) {
      return;
    }
    ::kill(pid, SIGTERM);
    for (int i = 0; i < 100 && ::kill(pid, 0) == 0; ++i) {
      ::usleep(20'000);
    }
    if (::kill(pid, 0) == 0) {
      ::kill(pid, SIGKILL);
    }
  }

  FrrPaths paths(const std::string& side) const { return {sideDir(side), sideDir(side)}; }

  json vtyshJson(const std::string& side, const std::string& command) {
    auto r = core::runProcess(vtyshCommand(paths(side), {command}), std::chrono::seconds(10));
    if (!r.ok()) {
      ADD_FAILURE() << command << ": " << r.describe();
      return json::object();
    }
    return json::parse(r.out, nullptr, false);
  }

  // B's paths of A's range: "" when B has none.
  std::string pathAtB() {
    json t = vtyshJson("b", "show bgp ipv4 unicast json");
    if (!t.contains("routes") || !t["routes"].contains("10.1.0.0/16")) {
      return "";
    }
    return t["routes"]["10.1.0.0/16"][0].value("path", std::string("?"));
  }

  // B's session to A: (state, connectionsEstablished, connectionsDropped).
  std::tuple<std::string, int, int> sessionAtB() {
    json s = vtyshJson("b", "show bgp summary json");
    json p = s["ipv4Unicast"]["peers"]["192.0.2.1"];
    if (!p.is_object()) {
      return {"", -1, -1};
    }
    return {p.value("state", std::string()), p.value("connectionsEstablished", -1),
            p.value("connectionsDropped", -1)};
  }

  // Runs the loop until pred holds (checked every 5 ms of loop time, plus
  // what pred takes); false after timeout.
  bool runUntil(const std::function<bool()>& pred, std::chrono::milliseconds timeout) {
    const auto end = Clock::now() + timeout;
    while (Clock::now() < end) {
      loop_->runOnce(milliseconds(5));
      if (pred()) {
        return true;
      }
    }
    return false;
  }

  // What FRR runs is what FrrRouting wrote: frr-reload.py --test reports no
  // line to add or delete.
  void expectFrrRunsTheFile() {
    std::vector<std::string> argv = frrReloadCommand(paths("a"));
    argv[1] = "--test";
    auto r = core::runProcess(argv, std::chrono::seconds(60));
    EXPECT_TRUE(r.ok()) << r.describe();
    EXPECT_EQ(r.out.find("Lines To Delete"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("Lines To Add"), std::string::npos) << r.out;
  }

  // Sets the standing and waits for B's path to become want; prints the time.
  void change(const BgpStanding& s, const std::string& want, const char* what) {
    SCOPED_TRACE(what);
    const auto t0 = Clock::now();
    frr_->setStanding(s);
    std::string path;
    EXPECT_TRUE(runUntil([&] { return (path = pathAtB()) == want; }, std::chrono::seconds(30)))
        << "B's path of 10.1.0.0/16: '" << path << "', want '" << want << "'";
    const auto ms = std::chrono::duration_cast<milliseconds>(Clock::now() - t0).count();
    // FrrRouting's own view of when FRR took it.
    ASSERT_TRUE(runUntil([&] { return frr_->status()["standing"]["apply"]["state"] != "pending"; },
                         std::chrono::seconds(30)));
    const json st = frr_->status()["standing"];
    std::printf(
        "%s: B's table changed %lld ms after setStanding(); FrrRouting: applied with %s "
        "in %s ms\n",
        what, static_cast<long long>(ms), st["apply"]["via"].dump().c_str(),
        st["apply"]["took_ms"].dump().c_str());
    EXPECT_EQ(st["mode"], toString(s.mode));
    EXPECT_EQ(st["apply"]["state"], "applied");
    EXPECT_EQ(st["apply"]["via"], "vtysh");
    EXPECT_EQ(sessionAtB(), std::make_tuple(std::string("Established"), 1, 0));
    expectFrrRunsTheFile();
  }

  std::string dir_, prefix_;
  std::unique_ptr<core::EventLoop> loop_;
  std::unique_ptr<FrrRouting> frr_;
};

TEST_F(FrrStanding, PrependAndWithdrawWithoutSessionReset) {
  // B: once, with frr-reload.py, from its own rendering.
  auto b = config::loadConfigText(gatewayYaml(false, sideDir("b")), "b.yaml");
  ASSERT_TRUE(b.ok());
  std::ofstream(sideDir("b") + "/frr.conf") << renderFrrConfig(**b);
  auto r = core::runProcess(frrReloadCommand(paths("b")), std::chrono::seconds(60));
  ASSERT_TRUE(r.ok()) << r.describe() << r.err;

  // A: through FrrRouting.  A standing set while its first frr-reload.py
  // runs waits for it, then goes with vtysh.
  auto a = config::loadConfigText(gatewayYaml(true, sideDir("a")), "a.yaml");
  ASSERT_TRUE(a.ok());
  frr_ = std::make_unique<FrrRouting>(
      *a, [](std::span<const engine::RouteUpdate>) -> Result<bool, std::string> { return true; },
      nullptr);
  frr_->attach(*loop_);
  EXPECT_EQ(frr_->status()["frr_config"]["state"], "pending");
  frr_->setStanding({Mode::kPrepend, 3});
  EXPECT_EQ(frr_->status()["standing"]["apply"]["state"], "pending");
  EXPECT_EQ(frr_->status()["standing"]["mode"], "prepend");
  EXPECT_EQ(frr_->status()["standing"]["prepend"], 3);
  ASSERT_TRUE(runUntil([&] { return frr_->status()["standing"]["apply"]["state"] != "pending"; },
                       std::chrono::seconds(60)));
  EXPECT_EQ(frr_->status()["frr_config"]["state"], "applied")
      << frr_->status()["frr_config"].dump();
  EXPECT_EQ(frr_->status()["standing"]["apply"]["state"], "applied");
  EXPECT_EQ(frr_->status()["standing"]["apply"]["via"], "vtysh");
  expectFrrRunsTheFile();

  // The session comes up; B has A's range with the prepend.
  std::string path;
  ASSERT_TRUE(runUntil([&] { return (path = pathAtB()) == "65001 65001 65001 65001"; },
                       std::chrono::seconds(90)))
      << "B's path: '" << path << "'";
  ASSERT_EQ(sessionAtB(), std::make_tuple(std::string("Established"), 1, 0));

  change({Mode::kActive, 3}, "65001", "prepend -> active");
  change({Mode::kWithdraw, 3}, "", "active -> withdraw");
  change({Mode::kActive, 3}, "65001", "withdraw -> active");
  change({Mode::kPrepend, 3}, "65001 65001 65001 65001", "active -> prepend 3");
  change({Mode::kWithdraw, 3}, "", "prepend -> withdraw");
  change({Mode::kPrepend, 2}, "65001 65001 65001", "withdraw -> prepend 2");
  change({Mode::kActive, 3}, "65001", "prepend 2 -> active");

  // The same standing again does nothing.
  const json before = frr_->status()["standing"];
  frr_->setStanding({Mode::kActive, 9});
  EXPECT_EQ(frr_->status()["standing"], before);

  // For comparison (printed, docs/routing.md): the same change as a whole
  // frr-reload.py of the rendered file, the own ranges originated again and
  // the soft refresh, FrrRouting's way for a config change, behind
  // FrrRouting's back.
  std::ofstream(sideDir("a") + "/frr.conf") << renderFrrConfig(**a, {Mode::kPrepend, 3});
  const auto t0 = Clock::now();
  r = core::runProcess(frrReloadCommand(paths("a")), std::chrono::seconds(60));
  ASSERT_TRUE(r.ok()) << r.describe();
  const auto reloaded = Clock::now();
  std::vector<std::string> refresh = reoriginateCommands(**a);
  refresh.push_back(kSoftRefresh);
  r = core::runProcess(vtyshCommand(paths("a"), refresh), std::chrono::seconds(10));
  ASSERT_TRUE(r.ok()) << r.describe();
  EXPECT_TRUE(
      runUntil([&] { return pathAtB() == "65001 65001 65001 65001"; }, std::chrono::seconds(30)));
  std::printf(
      "active -> prepend 3 with frr-reload.py: B's table changed %lld ms after it started "
      "(frr-reload.py took %lld ms)\n",
      static_cast<long long>(std::chrono::duration_cast<milliseconds>(Clock::now() - t0).count()),
      static_cast<long long>(std::chrono::duration_cast<milliseconds>(reloaded - t0).count()));
  EXPECT_EQ(sessionAtB(), std::make_tuple(std::string("Established"), 1, 0));
}

}  // namespace
}  // namespace mcgw::frr
