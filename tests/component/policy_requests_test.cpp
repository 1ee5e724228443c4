// The tenant-policy commands of the operator API (control/daemon/
// requests.cpp: policy-set, show-usage, show-policy) through
// daemon::handleRequest on a real Gateway: net_null ports (EAL --no-huge),
// the whole process in a private network namespace of its own (the kernel
// sides of the LAN ports are made there), its state in a temporary
// directory.  Each refusal is checked by its message, each success by what
// the gateway shows afterwards (`show policy`'s bandwidth source "live by
// WHO", the rates in force).
//
//   lan0 (t1) 10.1.0.1/24, lan1 (t2) 10.5.0.1/24, wan0 203.0.113.1/24
//   site-b: l1, l2 (every tenant); site-c: l1 (t2 only)
//   t1: 100M on site-b/l1 in the config; t2: no limit
#include <gtest/gtest.h>
#include <sched.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "control/daemon/gateway.hpp"
#include "control/daemon/requests.hpp"

namespace mcgw::daemon {
namespace {

using nlohmann::json;

std::string gatewayConfig(const std::string& prefix, const std::string& socket) {
  return R"(node:
  name: gw-req
  site: site-a
eal:
  hugepages: false
  memory-mb: 512
  mbufs: 2047
  file-prefix: )" +
         prefix + R"(
ports:
  - name: lan0
    role: lan
    vdev: net_null0
    addresses: [10.1.0.1/24]
    tenant: t1
  - name: lan1
    role: lan
    vdev: net_null1
    addresses: [10.5.0.1/24]
    tenant: t2
  - name: wan0
    role: wan
    vdev: net_null2
    addresses: [203.0.113.1/24]
tenants:
  - name: t1
    vni: 5001
    routes:
      - prefix: 10.2.0.0/16
        peer: site-b
    bandwidth:
      limits:
        - line: site-b/l1
          rate: 100M
  - name: t2
    vni: 5002
    routes:
      - prefix: 10.3.0.0/16
        peer: site-c
peers:
  - name: site-b
    lines:
      - name: l1
        port: wan0
        local-vtep: 203.0.113.1
        remote-vtep: 203.0.113.10
      - name: l2
        port: wan0
        local-vtep: 203.0.113.1
        remote-vtep: 203.0.113.11
  - name: site-c
    tenants: [t2]
    lines:
      - name: l1
        port: wan0
        local-vtep: 203.0.113.1
        remote-vtep: 203.0.113.20
api:
  socket: )" +
         socket + "\n";
}

// One Gateway for the whole binary (the EAL starts once per process).
class GatewayEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    // Before any thread exists: every thread the gateway starts (EAL,
    // workers) inherits the namespace.
    ASSERT_EQ(::unshare(CLONE_NEWNET), 0) << std::strerror(errno);
    char tmpl[] = "/tmp/mcgw-policy-requests-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr) << std::strerror(errno);
    dir_ = tmpl;
    const std::string path = dir_ + "/mcgw.yaml";
    std::ofstream(path) << gatewayConfig("mcgwpolreq" + std::to_string(::getpid()),
                                         dir_ + "/mcgw.sock");
    spdlog::set_level(spdlog::level::warn);
    auto loaded = loadConfig(path);
    ASSERT_TRUE(loaded) << (loaded ? "" : loaded.error().front().toString());
    auto started = Gateway::start(path, std::move(*loaded), "policy_requests_test",
                                  {"warn", dir_ + "/state", std::nullopt});
    ASSERT_TRUE(started) << (started ? "" : started.error().front());
    gw = std::move(*started);
  }
  void TearDown() override {
    gw.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  static inline std::unique_ptr<Gateway> gw;

 private:
  std::string dir_;
};

const auto* const kEnv = ::testing::AddGlobalTestEnvironment(new GatewayEnvironment);

class PolicyRequestsTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(GatewayEnvironment::gw) << "the gateway did not start"; }
  void TearDown() override {
    // No live rate outlives a test.
    for (const char* line : {"site-b/l1", "site-b", "site-b/l2"}) {
      for (const char* tenant : {"t1", "t2"}) {
        call("policy-set", {{"tenant", tenant}, {"line", line}, {"clear", true}});
      }
    }
  }

  static json call(const std::string& command, const json& args, const std::string& who = "") {
    Gateway& gw = *GatewayEnvironment::gw;
    auto reload = [&gw] { return gw.reload(); };
    json r = who.empty() ? handleRequest(gw, command, args, reload)
                         : handleRequest(gw, command, args, reload, who);
    EXPECT_TRUE(r.is_object() && r.contains("ok") && r["ok"].is_boolean()) << r.dump();
    return r;
  }
  // The result of a command that must succeed.
  static json okResult(const std::string& command, const json& args, const std::string& who = "") {
    json r = call(command, args, who);
    EXPECT_EQ(r["ok"], true) << command << " " << args.dump() << ": " << r.dump();
    return r.value("result", json::object());
  }
  // The message of a command that must be refused.
  static std::string refused(const std::string& command, const json& args) {
    json r = call(command, args);
    EXPECT_EQ(r["ok"], false) << command << " " << args.dump() << ": " << r.dump();
    if (r["ok"] != false || !r["error"]["message"].is_string()) {
      return "";
    }
    return r["error"]["message"].get<std::string>();
  }
  // `show policy`'s bandwidth entry of tenant on site-b/LINE.
  static json bandwidthOf(const std::string& tenant, const std::string& peer,
                          const std::string& line) {
    const json v = okResult("show-policy", {{"tenant", tenant}});
    EXPECT_EQ(v["tenants"].size(), 1u) << v.dump();
    if (v["tenants"].size() != 1) {
      return json::object();
    }
    for (const json& b : v["tenants"][0]["bandwidth"]) {
      if (b["peer"] == peer && b["line"] == line) {
        return b;
      }
    }
    ADD_FAILURE() << "no bandwidth entry " << peer << "/" << line << " in " << v.dump();
    return json::object();
  }
};

// ----------------------------------------------------------------- policy-set

TEST_F(PolicyRequestsTest, PolicySetNeedsTenantAndLineStrings) {
  const char* usage = "(policy-set takes {\"tenant\": NAME";
  for (const auto& [args, want] :
       {std::pair{json{{"line", "site-b/l1"}, {"rate", "10M"}},
                  "policy-set: argument \"tenant\" is missing"},
        std::pair{json{{"tenant", "t1"}, {"rate", "10M"}},
                  "policy-set: argument \"line\" is missing"},
        std::pair{json{{"tenant", 1}, {"line", "site-b/l1"}, {"rate", "10M"}},
                  "policy-set: argument \"tenant\" must be a string"},
        std::pair{json{{"tenant", "t1"}, {"line", json::array()}, {"rate", "10M"}},
                  "policy-set: argument \"line\" must be a string"},
        std::pair{json{{"tenant", "t1"}, {"line", "site-b/l1"}, {"rate", 10000000}},
                  "policy-set: argument \"rate\" must be a string"},
        std::pair{json{{"tenant", "t1"}, {"line", "site-b/l1"}, {"rate", "10M"}, {"burst", 2000}},
                  "policy-set: argument \"burst\" must be a string"}}) {
    const std::string m = refused("policy-set", args);
    EXPECT_EQ(m.rfind(want, 0), 0u) << m;
    EXPECT_NE(m.find(usage), std::string::npos) << m;
  }
  EXPECT_EQ(refused("policy-set", {{"tenant", "t1"}, {"line", "site-b/l1"}, {"speed", "1M"}}),
            "policy-set: unknown argument \"speed\"");
  EXPECT_EQ(bandwidthOf("t1", "site-b", "l1")["source"], "config");
}

TEST_F(PolicyRequestsTest, PolicySetRateRequiredUnlessClearTrue) {
  std::string m = refused("policy-set", {{"tenant", "t1"}, {"line", "site-b/l1"}});
  EXPECT_EQ(m.rfind("policy-set: argument \"rate\" is missing", 0), 0u) << m;
  m = refused("policy-set", {{"tenant", "t1"}, {"line", "site-b/l1"}, {"peak_rate", "20M"}});
  EXPECT_EQ(m.rfind("policy-set: argument \"rate\" is missing", 0), 0u) << m;
  // "clear" must be the boolean true.
  for (const json& clear : {json(false), json("true"), json(1), json(nullptr)}) {
    m = refused("policy-set", {{"tenant", "t1"}, {"line", "site-b/l1"}, {"clear", clear}});
    EXPECT_EQ(m.rfind("policy-set: \"clear\" must be true", 0), 0u) << clear.dump() << ": " << m;
  }
  // clear takes no rates, whichever.
  for (const char* key : {"rate", "peak_rate", "burst", "peak_burst"}) {
    m = refused("policy-set",
                {{"tenant", "t1"}, {"line", "site-b/l1"}, {"clear", true}, {key, "10M"}});
    EXPECT_EQ(m.rfind("policy-set: \"clear\" takes no rates", 0), 0u) << key << ": " << m;
  }
  // Nothing to clear: refused, saying so.
  EXPECT_EQ(refused("policy-set", {{"tenant", "t1"}, {"line", "site-b/l1"}, {"clear", true}}),
            "policy-set: tenant \"t1\" has no live rate on \"site-b/l1\"");
  EXPECT_EQ(bandwidthOf("t1", "site-b", "l1")["source"], "config");
}

TEST_F(PolicyRequestsTest, PolicySetStringsAtMost128Bytes) {
  const std::string at_most(128, 'a'), over(129, 'a');
  const std::string too_long = "policy-set: an argument is longer than 128 bytes";
  EXPECT_EQ(refused("policy-set", {{"tenant", over}, {"line", "site-b/l1"}, {"rate", "10M"}}),
            too_long);
  EXPECT_EQ(refused("policy-set", {{"tenant", "t1"}, {"line", over}, {"rate", "10M"}}), too_long);
  EXPECT_EQ(refused("policy-set", {{"tenant", "t1"}, {"line", over}, {"clear", true}}), too_long);
  for (const char* key : {"rate", "peak_rate", "burst", "peak_burst"}) {
    json args = {{"tenant", "t1"}, {"line", "site-b/l1"}, {"rate", "10M"}};
    args[key] = over;
    EXPECT_EQ(refused("policy-set", args), too_long) << key;
  }
  // 128 bytes pass the length check: then the name is looked up (and
  // quoted shortened).
  const std::string m =
      refused("policy-set", {{"tenant", at_most}, {"line", "site-b/l1"}, {"rate", "10M"}});
  EXPECT_EQ(m.rfind("policy-set: no tenant \"aaaa", 0), 0u) << m;
  EXPECT_NE(m.find("(128 bytes)"), std::string::npos) << m;
  EXPECT_EQ(refused("policy-set", {{"tenant", "t1"}, {"line", at_most}, {"rate", "10M"}}),
            "policy-set: no peer \"" + at_most.substr(0, 64) + "\"...(128 bytes)");
  EXPECT_EQ(bandwidthOf("t1", "site-b", "l1")["source"], "config");
}

TEST_F(PolicyRequestsTest, PolicySetRefusesUnknownNamesAndBadRates) {
  auto set = [](const std::string& tenant, const std::string& line, json more = json::object()) {
    json args = {{"tenant", tenant}, {"line", line}, {"rate", "10M"}};
    args.update(more);
    return refused("policy-set", args);
  };
  EXPECT_EQ(set("nope", "site-b/l1"), "policy-set: no tenant \"nope\"");
  EXPECT_EQ(set("t1", "site-x/l1"), "policy-set: no peer \"site-x\"");
  EXPECT_EQ(set("t1", "site-x"), "policy-set: no peer \"site-x\"");
  EXPECT_EQ(set("t1", "site-b/l9"), "policy-set: peer \"site-b\" has no line \"l9\"");
  EXPECT_EQ(set("t1", "site-c/l1"), "policy-set: peer \"site-c\" does not carry tenant \"t1\"");
  EXPECT_EQ(set("t1", ""), "policy-set: no peer \"\"");
  // Rates the bandwidth code refuses: each says why.
  for (const json& more :
       {json{{"rate", "fast"}}, json{{"rate", "-5M"}}, json{{"rate", "0"}}, json{{"rate", ""}},
        json{{"rate", "10M"}, {"peak_rate", "5M"}}, json{{"rate", "10M"}, {"burst", "12"}},
        json{{"rate", "10M"}, {"peak_burst", "lots"}}, json{{"rate", "100T"}}}) {
    const std::string m = set("t1", "site-b/l1", more);
    EXPECT_EQ(m.rfind("policy-set: ", 0), 0u) << more.dump() << ": " << m;
    EXPECT_GT(m.size(), std::string("policy-set: ").size() + 5) << more.dump() << ": " << m;
  }
  EXPECT_EQ(bandwidthOf("t1", "site-b", "l1")["source"], "config");
  EXPECT_EQ(bandwidthOf("t1", "site-b", "l2")["source"], "unmetered");
}

// A live rate: in force for the pair at once, shown with its client; cleared,
// the config's rate is back.
TEST_F(PolicyRequestsTest, PolicySetShowsWhoSetTheRate) {
  json before = bandwidthOf("t1", "site-b", "l1");
  EXPECT_EQ(before["source"], "config");
  EXPECT_EQ(before["rate_bps"], 100'000'000);

  json r = okResult("policy-set",
                    {{"tenant", "t1"},
                     {"line", "site-b/l1"},
                     {"rate", "200M"},
                     {"peak_rate", "250M"},
                     {"burst", "1MB"},
                     {"peak_burst", "2MB"}},
                    "controller.example.net");
  EXPECT_EQ(r["message"], "tenant t1 on site-b/l1: rate 200M, peak 250M");
  json b = bandwidthOf("t1", "site-b", "l1");
  EXPECT_EQ(b["source"], "live by controller.example.net");
  EXPECT_EQ(b["rate_bps"], 200'000'000);
  EXPECT_EQ(b["peak_rate_bps"], 250'000'000);
  EXPECT_EQ(b["burst_bytes"], 1'000'000);
  EXPECT_EQ(b["peak_burst_bytes"], 2'000'000);
  EXPECT_EQ(b["rate"], "200M");
  // The other pairs are as they were.
  EXPECT_EQ(bandwidthOf("t1", "site-b", "l2")["source"], "unmetered");

  // Without `who`: the local socket.
  r = okResult("policy-set", {{"tenant", "t1"}, {"line", "site-b/l2"}, {"rate", "5M"}});
  EXPECT_EQ(r["message"], "tenant t1 on site-b/l2: rate 5M, peak 5M");
  EXPECT_EQ(bandwidthOf("t1", "site-b", "l2")["source"], "live by local socket");
  EXPECT_EQ(bandwidthOf("t1", "site-b", "l2")["rate_bps"], 5'000'000);

  r = okResult("policy-set", {{"tenant", "t1"}, {"line", "site-b/l1"}, {"clear", true}}, "ops");
  EXPECT_EQ(r["message"], "tenant t1 on site-b/l1: back to the config's rates");
  b = bandwidthOf("t1", "site-b", "l1");
  EXPECT_EQ(b["source"], "config");
  EXPECT_EQ(b["rate_bps"], 100'000'000);
  EXPECT_EQ(bandwidthOf("t1", "site-b", "l2")["source"], "live by local socket");

  // A peer: each of its lines, below a PEER/LINE rate.
  r = okResult("policy-set", {{"tenant", "t2"}, {"line", "site-b"}, {"rate", "40M"}}, "sdn-1");
  EXPECT_EQ(r["message"], "tenant t2 on site-b: rate 40M, peak 40M");
  for (const char* line : {"l1", "l2"}) {
    b = bandwidthOf("t2", "site-b", line);
    EXPECT_EQ(b["source"], "live by sdn-1") << line;
    EXPECT_EQ(b["rate_bps"], 40'000'000) << line;
  }
  EXPECT_EQ(bandwidthOf("t2", "site-c", "l1")["source"], "unmetered");
  okResult("policy-set", {{"tenant", "t2"}, {"line", "site-b/l2"}, {"rate", "1G"}}, "sdn-2");
  EXPECT_EQ(bandwidthOf("t2", "site-b", "l2")["source"], "live by sdn-2");
  EXPECT_EQ(bandwidthOf("t2", "site-b", "l1")["source"], "live by sdn-1");
}

// ----------------------------------------------------------------- show-usage

TEST_F(PolicyRequestsTest, ShowUsageArguments) {
  const std::string over(129, '1');
  for (const auto& [args, name] :
       {std::pair{json{{"since", 3600}}, "since"},
        std::pair{json{{"since", json::array()}}, "since"},
        std::pair{json{{"since", over}}, "since"}, std::pair{json{{"tenant", 1}}, "tenant"},
        std::pair{json{{"tenant", std::string(129, 't')}}, "tenant"}}) {
    EXPECT_EQ(refused("show-usage", args), std::string("show-usage: argument \"") + name +
                                               "\" must be a string of at most 128 bytes")
        << args.dump();
  }
  EXPECT_EQ(refused("show-usage", {{"from", "1h"}}), "show-usage: unknown argument \"from\"");
  // Times and ages it does not take: refused with the rule they broke.
  for (const char* since : {"", "yesterday", "1w", "0h", "2999-01-01T00:00:00Z",
                            "1990-01-01T00:00:00Z", "2026-13-01T00:00:00Z"}) {
    const std::string m = refused("show-usage", {{"since", since}});
    EXPECT_EQ(m.rfind("show-usage: ", 0), 0u) << since << ": " << m;
    EXPECT_GT(m.size(), std::string("show-usage: ").size() + 5) << since << ": " << m;
  }

  // Since mcgwd started.
  json v = okResult("show-usage", json::object());
  EXPECT_EQ(v["schema"], "mcgw.usage/1") << v.dump();
  EXPECT_FALSE(v.contains("since"));
  EXPECT_TRUE(v["pairs"].is_array());
  // A good age and a good RFC 3339 time: accepted, the JSON says from when.
  v = okResult("show-usage", {{"since", "1h"}});
  EXPECT_EQ(v["schema"], "mcgw.usage/1") << v.dump();
  EXPECT_TRUE(v["since"].is_string()) << v.dump();
  EXPECT_TRUE(v["pairs"].is_array());
  const std::time_t ten_minutes_ago = std::time(nullptr) - 600;
  std::tm tm{};
  ::gmtime_r(&ten_minutes_ago, &tm);
  char when[32];
  std::strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
  v = okResult("show-usage", {{"since", when}, {"tenant", "t2"}});
  EXPECT_EQ(v["schema"], "mcgw.usage/1") << v.dump();
  EXPECT_EQ(v["since"], when) << v.dump();
  for (const json& p : v["pairs"]) {
    EXPECT_EQ(p["tenant"], "t2") << v.dump();
  }
  // A 128-byte tenant passes the check (a removed tenant's usage may be
  // asked for): no pairs.
  v = okResult("show-usage", {{"tenant", std::string(128, 't')}});
  EXPECT_TRUE(v["pairs"].empty()) << v.dump();
}

// ---------------------------------------------------------------- show-policy

TEST_F(PolicyRequestsTest, ShowPolicyTenantFilter) {
  EXPECT_EQ(refused("show-policy", {{"tenant", "nope"}}), "show-policy: no tenant \"nope\"");
  EXPECT_EQ(refused("show-policy", {{"tenant", 5}}),
            "show-policy: argument \"tenant\" must be a string");
  EXPECT_EQ(refused("show-policy", {{"name", "t1"}}), "show-policy: unknown argument \"name\"");

  json all = okResult("show-policy", json::object());
  EXPECT_EQ(all["schema"], "mcgw.policy/1");
  ASSERT_EQ(all["tenants"].size(), 2u) << all.dump();
  EXPECT_EQ(all["tenants"][0]["name"], "t1");
  EXPECT_EQ(all["tenants"][1]["name"], "t2");
  // Each tenant's bandwidth: its pairs (t2 on site-b's two lines and
  // site-c's, t1 on site-b's).
  EXPECT_EQ(all["tenants"][0]["bandwidth"].size(), 2u) << all.dump();
  EXPECT_EQ(all["tenants"][1]["bandwidth"].size(), 3u) << all.dump();

  json t2 = okResult("show-policy", {{"tenant", "t2"}});
  ASSERT_EQ(t2["tenants"].size(), 1u) << t2.dump();
  EXPECT_EQ(t2["tenants"][0]["name"], "t2");
  EXPECT_EQ(t2["tenants"][0]["vni"], 5002);
  EXPECT_EQ(t2["tenants"][0], all["tenants"][1]);
}

}  // namespace
}  // namespace mcgw::daemon
