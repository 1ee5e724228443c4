// mcgwd started for real on net_null vdevs (EAL --no-huge): API, mcgwctl,
// reload by SIGHUP and by the API, and the systemd notify protocol.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <atomic>
#include <nlohmann/json.hpp>
#include <regex>

#include "tests/support/daemon.hpp"

namespace mcgw::test {
namespace {

using nlohmann::json;

TEST_F(DaemonTest, AnswersStatusJson) {
  writeFile(config_, nullConfig(socket_, prefix_));
  start();
  CommandResult r = ctl("status --json");
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  json s = json::parse(r.out);
  EXPECT_EQ(s["schema"], "mcgw.status/1");
  EXPECT_EQ(s["health"]["state"], "healthy");
  EXPECT_EQ(s["node"]["name"], "gw-test");
  EXPECT_EQ(s["daemon"]["pid"], daemon_->pid());
  EXPECT_EQ(s["config"]["file"], config_);
  EXPECT_EQ(s["config"]["checksum"].get<std::string>().size(), 64u);
  ASSERT_EQ(s["ports"].size(), 2u);
  EXPECT_EQ(s["ports"][0]["name"], "lan0");
  EXPECT_EQ(s["ports"][0]["role"], "lan");
  EXPECT_EQ(s["ports"][0]["driver"], "net_null");
  EXPECT_EQ(s["ports"][0]["link"]["up"], true);
  EXPECT_EQ(s["ports"][1]["name"], "wan0");
  EXPECT_TRUE(s["ports"][1]["counters"].contains("rx_packets"));

  // The human view: health first, nothing on stderr.
  r = ctl("status");
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.out.rfind("mcgw gw-test (site lab): HEALTHY", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("wan0"), std::string::npos);
  EXPECT_EQ(r.err, "");

  // The API socket is for root and the socket's group only.
  struct stat st {};
  ASSERT_EQ(::stat(socket_.c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0660u);

  r = ctl("show config");
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("vdev: net_null1"), std::string::npos) << r.out;
}

TEST_F(DaemonTest, NotifyProtocol) {
  writeFile(config_, nullConfig(socket_, prefix_));
  start({{"WATCHDOG_USEC", "200000"}});
  int ready = notify_->waitFor("READY=1", 1s);
  int first_status = notify_->waitFor("STATUS=", 1s);
  ASSERT_GE(first_status, 0);
  EXPECT_LT(first_status, ready) << "STATUS= lines come before READY=1 while starting";
  EXPECT_TRUE(
      NotifyListener::hasLine(notify_->messages()[static_cast<size_t>(ready)],
                              "STATUS=healthy: 2 ports (2 up), config " +
                                  status()["config"]["checksum"].get<std::string>().substr(0, 12)));
  // The watchdog is kicked every WATCHDOG_USEC / 2.
  int w1 = notify_->waitFor("WATCHDOG=1", 5s);
  ASSERT_GE(w1, 0) << log();
  EXPECT_GE(notify_->waitFor("WATCHDOG=1", 5s, static_cast<size_t>(w1) + 1), 0);

  hangup();  // RELOADING=1 ... READY=1

  size_t seen = notify_->messages().size();
  daemon_->signal(SIGTERM);
  EXPECT_EQ(daemon_->wait(30s), 0) << log();
  EXPECT_GE(notify_->waitFor("STOPPING=1", 1s, seen), 0);
}

TEST_F(DaemonTest, SighupWithBrokenFileKeepsOldConfig) {
  writeFile(config_, nullConfig(socket_, prefix_));
  start();
  std::string before = status()["config"]["checksum"];

  writeFile(config_, nullConfig(socket_, prefix_, "tenants:\n  - name: blue\n    vni: 0\n"));
  hangup();
  json s = status();
  EXPECT_EQ(s["config"]["checksum"], before) << "a broken file must change nothing";
  EXPECT_EQ(s["health"]["state"], "degraded");
  EXPECT_EQ(s["config"]["last_reload"]["ok"], false);
  ASSERT_EQ(s["config"]["last_reload"]["errors"].size(), 1u);
  std::string err = s["config"]["last_reload"]["errors"][0];
  EXPECT_NE(err.find(config_ + ":18:10:"), std::string::npos) << err;
  EXPECT_NE(err.find("vni"), std::string::npos) << err;
  EXPECT_EQ(ctl("status").code, 1) << "degraded exits 1";
  EXPECT_NE(log().find("reload of " + config_ + " refused"), std::string::npos);

  // A good file is applied, and only the difference.
  writeFile(config_, nullConfig(socket_, prefix_,
                                "  - name: lan1\n    role: lan\n    vdev: net_null2\n"
                                "tenants:\n  - name: blue\n    vni: 100\n"));
  hangup();
  s = status();
  EXPECT_NE(s["config"]["checksum"], before);
  EXPECT_EQ(s["health"]["state"], "healthy");
  EXPECT_EQ(s["config"]["last_reload"]["ok"], true);
  ASSERT_EQ(s["ports"].size(), 3u);
  EXPECT_EQ(s["ports"][2]["name"], "lan1");
  json changes = s["config"]["last_reload"]["changes"];
  EXPECT_EQ(changes.size(), 3u) << changes.dump();  // and lan0 now carries blue
  EXPECT_NE(changes.dump().find("port lan1: added"), std::string::npos);
  EXPECT_NE(changes.dump().find("tenant blue: added"), std::string::npos);
}

TEST_F(DaemonTest, ApiReloadReturnsErrorsAndRefusesRestartChanges) {
  writeFile(config_, nullConfig(socket_, prefix_));
  start();
  std::string before = status()["config"]["checksum"];

  writeFile(config_, nullConfig(socket_, prefix_, "peers:\n  - name: b\n    linez: []\n"));
  CommandResult r = ctl("reload");
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("reload refused"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(":18:5:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("did you mean 'lines'"), std::string::npos) << r.err;

  // EAL settings cannot change under a running DPDK: refused, not half-applied.
  std::string text = nullConfig(socket_, prefix_);
  text.replace(text.find("memory-mb: 512"), 14, "memory-mb: 640");
  writeFile(config_, text);
  r = ctl("reload");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("needs a restart"), std::string::npos) << r.err;
  EXPECT_EQ(status()["config"]["checksum"], before);

  writeFile(config_, nullConfig(socket_, prefix_) + "logging:\n  level: warning\n");
  r = ctl("reload");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("logging: changed (level info -> warning)"), std::string::npos) << r.out;
}

// Port changes by reload: renames, swaps, removals, a new queue layout, and
// failures that must leave the running ports exactly as they were.
std::string twoPorts(const std::string& socket, const std::string& prefix, const std::string& a,
                     const std::string& a_dev, const std::string& b, const std::string& b_dev,
                     const std::string& extra = "") {
  return "node:\n  name: gw-test\n  site: lab\n"
         "eal:\n  hugepages: false\n  memory-mb: 512\n  mbufs: 2047\n  file-prefix: " +
         prefix + "\nports:\n  - name: " + a + "\n    role: lan\n    vdev: \"" + a_dev +
         "\"\n  - name: " + b + "\n    role: wan\n    vdev: \"" + b_dev + "\"\n" + extra +
         "api:\n  socket: " + socket + "\n";
}

std::string portsOf(const json& status) {
  std::string out;
  for (const auto& p : status["ports"]) {
    out += (out.empty() ? "" : " ") + p["name"].get<std::string>() + "=" +
           p["device"].get<std::string>() + (p["link"]["up"].get<bool>() ? "" : "(down)");
  }
  return out;
}

TEST_F(DaemonTest, ReloadRenamesSwapsAndRemovesPorts) {
  writeFile(config_, twoPorts(socket_, prefix_, "lan0", "net_null0", "wan0", "net_null1"));
  start();
  // Rename: the device moves from lan0 to lan1.
  writeFile(config_, twoPorts(socket_, prefix_, "lan1", "net_null0", "wan0", "net_null1"));
  CommandResult r = ctl("reload");
  ASSERT_EQ(r.code, 0) << r.err << log();
  json s = status();
  EXPECT_EQ(portsOf(s), "lan1=net_null0 wan0=net_null1");
  EXPECT_EQ(s["health"]["state"], "healthy");

  // Swap the devices of the two ports.
  writeFile(config_, twoPorts(socket_, prefix_, "lan1", "net_null1", "wan0", "net_null0"));
  r = ctl("reload");
  ASSERT_EQ(r.code, 0) << r.err << log();
  EXPECT_EQ(portsOf(status()), "lan1=net_null1 wan0=net_null0");

  // A new queue layout reopens the same device.
  std::string text = twoPorts(socket_, prefix_, "lan1", "net_null1", "wan0", "net_null0");
  text.replace(text.find("    role: wan\n"), 14, "    role: wan\n    rx-queues: 2\n");
  writeFile(config_, text);
  r = ctl("reload");
  ASSERT_EQ(r.code, 0) << r.err << log();
  s = status();
  EXPECT_EQ(portsOf(s), "lan1=net_null1 wan0=net_null0");
  EXPECT_EQ(s["ports"][1]["rx_queues"], 2);

  // Remove a port: one left.
  writeFile(config_, nullConfig(socket_, prefix_).substr(0, 0) +
                         "node:\n  name: gw-test\n  site: lab\neal:\n  hugepages: false\n"
                         "  memory-mb: 512\n  mbufs: 2047\n  file-prefix: " +
                         prefix_ +
                         "\nports:\n  - name: lan1\n    role: lan\n    vdev: "
                         "net_null1\napi:\n  socket: " +
                         socket_ + "\n");
  r = ctl("reload");
  ASSERT_EQ(r.code, 0) << r.err << log();
  EXPECT_EQ(portsOf(status()), "lan1=net_null1");
  EXPECT_TRUE(daemon_->running());
}

TEST_F(DaemonTest, ReloadThatFailsWhileApplyingRestoresThePorts) {
  writeFile(config_, twoPorts(socket_, prefix_, "lan0", "net_null0", "wan0", "net_null1"));
  start();
  std::string before = status()["config"]["checksum"];

  // A new device that cannot be opened: refused before anything is closed.
  writeFile(
      config_,
      twoPorts(socket_, prefix_, "lan0", "net_null0", "wan0", "net_null1",
               "  - name: lan9\n    role: lan\n    vdev: \"net_af_packet9,iface=no-such-if\"\n"));
  CommandResult r = ctl("reload");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("port lan9: cannot attach device"), std::string::npos) << r.err;
  json s = status();
  EXPECT_EQ(portsOf(s), "lan0=net_null0 wan0=net_null1");
  EXPECT_EQ(s["config"]["checksum"], before);

  // The same device reopened with arguments it rejects: lan0 is closed, the
  // reopen fails, and lan0 must come back as it was.
  writeFile(config_,
            twoPorts(socket_, prefix_, "lan0", "net_null0,size=oops", "wan0", "net_null1"));
  r = ctl("reload");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.err.find("nothing was applied"), std::string::npos) << r.err;
  s = status();
  EXPECT_EQ(portsOf(s), "lan0=net_null0 wan0=net_null1") << log();
  EXPECT_EQ(s["config"]["checksum"], before);
  EXPECT_EQ(s["health"]["reasons"].size(), 1u) << s["health"].dump();  // only the refused reload

  // A renamed port may not take over a device another port keeps.
  writeFile(config_, twoPorts(socket_, prefix_, "lan0", "net_null0", "wan0", "net_null0"));
  r = ctl("reload");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("already used by port 'lan0'"), std::string::npos) << r.err;
  EXPECT_EQ(portsOf(status()), "lan0=net_null0 wan0=net_null1");
}

TEST_F(DaemonTest, RefusesToReplaceAFileThatIsNotASocket) {
  writeFile(socket_, "precious\n");
  writeFile(config_, nullConfig(socket_, prefix_));
  Process p({kMcgwd, "--config", config_, "--state-dir", stateDir()}, {}, dir_.file("mcgwd.log"));
  EXPECT_EQ(p.wait(30s), 1);
  EXPECT_EQ(readFile(socket_), "precious\n");
  EXPECT_NE(log().find("exists and is not a socket"), std::string::npos) << log();
}

TEST_F(DaemonTest, LogLevelFromTheCommandLineSurvivesReloads) {
  // start() passes --log-level debug; the file asks for errors only.
  writeFile(config_, nullConfig(socket_, prefix_) + "logging:\n  level: error\n");
  start();
  ASSERT_EQ(ctl("reload").code, 0);
  writeFile(config_, nullConfig(socket_, prefix_) + "logging:\n  level: critical\n");
  ASSERT_EQ(ctl("reload").code, 0);
  // Info lines of both reloads are still logged: --log-level wins.  (The
  // first reload finds the file it started with.)
  std::string out = log();
  size_t first = out.find("reload of " + config_ + ": no changes");
  ASSERT_NE(first, std::string::npos) << out;
  EXPECT_NE(out.find("reload of " + config_ + ": applied 1 change", first + 1), std::string::npos)
      << out;
}

TEST_F(DaemonTest, MalformedRequestsGetErrorsAndDaemonSurvives) {
  writeFile(config_, nullConfig(socket_, prefix_));
  start();
  auto raw = [&](const std::string& line) {
    return run("printf '%s\\n' '" + line + "' | timeout 10 socat - UNIX-CONNECT:" + socket_);
  };
  struct Case {
    std::string request;
    std::string expect;
  } cases[] = {
      {"not json", "request is not valid JSON: at byte 2: invalid literal"},
      {"[1,2]", "not a JSON object"},
      {R"({"version":2,"command":"status"})", "unsupported API version"},
      {R"({"command":"status"})", "unsupported API version"},
      {R"({"version":1})", "no \"command\""},
      {R"({"version":1,"command":"format-disk"})", "unknown command \"format-disk\"; known: "},
      {R"({"version":1,"command":"status","args":5})", "\"args\" must be an object"},
      {R"({"version":1,"command":"status","args":{"verbose":true}})",
       "status takes no arguments; got \"verbose\""},
      {R"({"version":1,"command":"set-line","args":{"peer":1,"line":"l","state":"up"}})",
       "set-line: argument \"peer\" must be a string"},
      {R"({"version":1,"command":"set-line","args":{"peer":"p","line":"l","state":"sideways"}})",
       "set-line: \"state\" must be \"up\" or \"down\""},
  };
  for (const auto& c : cases) {
    CommandResult r = raw(c.request);
    SCOPED_TRACE(c.request);
    json j = json::parse(r.out, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << r.out << r.err;
    EXPECT_EQ(j["ok"], false);
    EXPECT_EQ(j["version"], 1);
    EXPECT_NE(j["error"]["message"].get<std::string>().find(c.expect), std::string::npos) << j;
  }
  // An endless line is cut off, not buffered for ever.
  CommandResult big =
      run("head -c 200000 /dev/zero | tr '\\0' 'x' | timeout 10 socat - UNIX-CONNECT:" + socket_);
  EXPECT_NE(big.out.find("request larger than"), std::string::npos) << big.out;
  EXPECT_TRUE(daemon_->running());
  EXPECT_EQ(ctl("status --json").code, 0);
}

// Config warnings are logged when the file is loaded: at start and at every
// reload.
TEST_F(DaemonTest, LogsConfigWarningsAtStartAndReload) {
  // The plan's store (followed: the plan has a pool) is the test's own.
  writeFile(config_, nullConfig(socket_, prefix_,
                                "address-plan:\n"
                                "  store: {type: file, path: " +
                                    dir_.file("plan.yaml") +
                                    "}\n"
                                    "  pools: [{name: p1, prefixes: [10.64.0.0/10]}]\n"
                                    "  clouds:\n"
                                    "    - {name: aws, regions: [{name: r1, vpcs: [{name: a, "
                                    "prefixes: [10.2.0.0/16]}]}]}\n"));
  start();
  const std::string warning = config_ +
                              ":20:68: /mcgw:address-plan/clouds/cloud[name='aws']/regions/"
                              "region[name='r1']/vpcs/vpc[name='a']/prefixes[.='10.2.0.0/16']: "
                              "10.2.0.0/16 of VPC aws/r1/a is outside every pool (p1)";
  std::string out = log();
  const size_t first = out.find(warning);
  ASSERT_NE(first, std::string::npos) << out;
  EXPECT_EQ(out.find(warning, first + 1), std::string::npos) << "once per load\n" << out;
  EXPECT_EQ(status()["health"]["state"], "healthy") << "a warning is not a fault";
  hangup();
  out = log();
  EXPECT_NE(out.find(warning, first + 1), std::string::npos) << out;
}

TEST_F(DaemonTest, InvalidConfigAtStartExits78WithEveryError) {
  writeFile(config_, nullConfig(socket_, prefix_, "tenants:\n  - name: a\n    vni: x\n") +
                         "logging:\n  levle: info\n");
  Process p({kMcgwd, "--config", config_, "--state-dir", stateDir()}, {}, dir_.file("mcgwd.log"));
  EXPECT_EQ(p.wait(30s), 78);
  std::string out = log();
  EXPECT_NE(out.find(config_ + ":18:10:"), std::string::npos) << out;
  EXPECT_NE(out.find("did you mean 'level'"), std::string::npos) << out;
}

TEST(Mcgwctl, UnreachableDaemonExits2) {
  CommandResult r = run(kMcgwctl + " --socket /nonexistent/mcgw.sock status");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("mcgwd is not reachable at /nonexistent/mcgw.sock"), std::string::npos);
  EXPECT_EQ(run(kMcgwctl + " --socket /nonexistent/mcgw.sock reload").code, 2);
}

TEST(Mcgwctl, CheckConfig) {
  CommandResult ok =
      run(kMcgwctl + " check-config " MCGW_SOURCE_DIR "/config/examples/overlay-vxlan-geneve.yaml");
  EXPECT_EQ(ok.code, 0) << ok.err;
  EXPECT_NE(ok.out.find("valid (node gw-a1, 3 ports, 2 tenants, 2 peers"), std::string::npos);

  TempDir dir;
  writeFile(dir.file("bad.yaml"),
            "node:\n  name: x\n  site: y\nports:\n  - name: p\n    role: lan\n"
            "    vdev: net_null0\n    mtu: 100\n");
  CommandResult bad = run(kMcgwctl + " check-config " + dir.file("bad.yaml"));
  EXPECT_EQ(bad.code, 1);
  EXPECT_EQ(bad.out, "");
  EXPECT_NE(bad.err.find(dir.file("bad.yaml") + ":8:10: /mcgw:ports/port[name='p']/mtu: expected "
                                                "an integer in 1280..9216, found \"100\""),
            std::string::npos)
      << bad.err;
}

// Warnings do not make a file invalid: printed like errors with
// "warning: ", exit 0, and the valid line says so.
TEST(Mcgwctl, CheckConfigPrintsWarnings) {
  TempDir dir;
  writeFile(
      dir.file("plan.yaml"),
      "node: {name: x, site: y}\n"
      "ports: [{name: p, role: lan, vdev: net_null0}]\n"
      "address-plan:\n"
      "  pools: [{name: p1, prefixes: [10.64.0.0/10]}]\n"
      "  clouds:\n"
      "    - {name: aws, regions: [{name: r1, vpcs: [{name: a, prefixes: [10.2.0.0/16]}]}]}\n");
  CommandResult r = run(kMcgwctl + " check-config " + dir.file("plan.yaml"));
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err, dir.file("plan.yaml") +
                       ":6:68: /mcgw:address-plan/clouds/cloud[name='aws']/regions/"
                       "region[name='r1']/vpcs/vpc[name='a']/prefixes[.='10.2.0.0/16']: warning: "
                       "10.2.0.0/16 of VPC aws/r1/a is outside every pool (p1)\n");
  EXPECT_NE(r.out.find("valid (node x, 1 ports, 0 tenants, 0 peers, sha256 "), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find(", with warnings)\n"), std::string::npos) << r.out;
}

// A file that is not text, or not an mcgw config at all: exit 1 with the
// located error, and nothing of the file echoed.
TEST(Mcgwctl, CheckConfigRefusesWhatIsNotAConfig) {
  TempDir dir;
  writeFile(dir.file("latin1.yaml"), "node:\n  name: x\n  site: y\n  description: caf\xE9\n");
  CommandResult latin1 = run(kMcgwctl + " check-config " + dir.file("latin1.yaml"));
  EXPECT_EQ(latin1.code, 1);
  EXPECT_EQ(latin1.out, "");
  EXPECT_NE(latin1.err.find(dir.file("latin1.yaml") +
                            ":4:19: not valid UTF-8 (byte 0xE9); a config file is UTF-8 text\n"),
            std::string::npos)
      << latin1.err;

  writeFile(dir.file("passwd"),
            "root:x:0:0:root:/root:/bin/bash\nalice:x:1000:1000:Alice:/home/alice:/bin/sh\n");
  CommandResult passwd = run(kMcgwctl + " check-config " + dir.file("passwd"));
  EXPECT_EQ(passwd.code, 1);
  EXPECT_NE(passwd.err.find(dir.file("passwd") +
                            ": not an mcgw config: the top level is a plain text value"),
            std::string::npos)
      << passwd.err;
  EXPECT_EQ(passwd.err.find("alice"), std::string::npos) << passwd.err;
  // A line ending in ':' makes it a YAML syntax error: nothing echoed either.
  writeFile(dir.file("passwd2"),
            "root:x:0:0:root:/root:/bin/bash\nalice:x:1000:1000::/home/alice:\n");
  CommandResult passwd2 = run(kMcgwctl + " check-config " + dir.file("passwd2"));
  EXPECT_EQ(passwd2.code, 1);
  EXPECT_NE(passwd2.err.find(dir.file("passwd2") + ":2:31: invalid YAML: illegal map value\n"),
            std::string::npos)
      << passwd2.err;
  EXPECT_EQ(passwd2.err.find("alice"), std::string::npos) << passwd2.err;

  const std::string big = dir.file("big.yaml");
  writeFile(big, "");
  std::filesystem::resize_file(big, 50 << 20);
  CommandResult size = run(kMcgwctl + " check-config " + big);
  EXPECT_EQ(size.code, 1);
  EXPECT_NE(size.err.find(big + ": 52428800 bytes; a config may be at most 4194304 bytes (4 MiB)"),
            std::string::npos)
      << size.err;
}

TEST(Systemd, UnitVerifies) {
  CommandResult r = run("systemd-analyze verify " MCGW_BINARY_DIR "/systemd/test/mcgw.service");
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_EQ(r.err, "") << "systemd-analyze printed warnings";
  std::string unit = readFile(MCGW_BINARY_DIR "/systemd/mcgw.service");
  for (const char* line :
       {"Type=notify", "WatchdogSec=", "Restart=on-failure", "ExecReload=/bin/kill -HUP $MAINPID",
        "--preflight", "CapabilityBoundingSet=", "RestartPreventExitStatus=78"}) {
    EXPECT_NE(unit.find(line), std::string::npos) << line;
  }
}

}  // namespace
}  // namespace mcgw::test

namespace mcgw::test {
namespace {

TEST(Install, PutsFilesInTheirStandardPlaces) {
  TempDir dest;
  const std::string root = dest.path().string();
  const std::string prefix = MCGW_INSTALL_PREFIX, etc = MCGW_INSTALL_CONFIG_DIR;
  auto install = [&] { return run("DESTDIR=" + root + " cmake --install " MCGW_BINARY_DIR); };
  CommandResult r = install();
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  for (const std::string& f :
       {prefix + "/sbin/mcgwd", prefix + "/bin/mcgwctl",
        prefix + "/lib/systemd/system/mcgw.service", prefix + "/lib/tmpfiles.d/mcgw.conf",
        prefix + "/share/yang/modules/mcgw/mcgw.yang", etc + "/mcgw.yaml",
        prefix + "/share/doc/mcgw/configuration.md",
        prefix + "/share/doc/mcgw/examples/demo.yaml"}) {
    EXPECT_TRUE(fs::exists(root + f)) << f;
  }
  std::string unit = readFile(root + prefix + "/lib/systemd/system/mcgw.service");
  EXPECT_NE(unit.find("ExecStart=" + prefix + "/sbin/mcgwd --config " + etc + "/mcgw.yaml"),
            std::string::npos)
      << unit;
  // The installed example config is valid, and a second install keeps an
  // operator's edited file.
  EXPECT_EQ(run(kMcgwctl + " check-config " + root + etc + "/mcgw.yaml").code, 0);
  writeFile(root + etc + "/mcgw.yaml", "# edited by the operator\n");
  ASSERT_EQ(install().code, 0);
  EXPECT_EQ(readFile(root + etc + "/mcgw.yaml"), "# edited by the operator\n");
}

}  // namespace
}  // namespace mcgw::test
