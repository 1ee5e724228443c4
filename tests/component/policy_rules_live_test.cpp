// Live policy rules (docs/policy.md, "Changing rules live"): the requests
// policy-rules-set and policy-rules-clear through daemon::handleRequest on a
// real Gateway (net_null ports, EAL --no-huge, the process in a network
// namespace of its own, its state and config file in a temporary
// directory), and what reloads of that file do with them.  Each success is
// checked by what `show policy` shows afterwards (the rules compiled into
// the tables, their source), each refusal by its message and by the rules
// in force staying as they were.
//
//   lan0 (t1) 10.1.0.1/24, lan1 (t2) 10.5.0.1/24, wan0 203.0.113.1/24
//   t1: config rule cfg-web (tcp dport 443); t2: no rules; t3: no ports
//   address plan: VPC gpu-b 10.2.0.0/16 (cloud aws, tenant t1)
#include <gtest/gtest.h>
#include <sched.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "control/daemon/gateway.hpp"
#include "control/daemon/requests.hpp"

namespace mcgw::daemon {
namespace {

using nlohmann::json;

struct FileShape {
  size_t t2_rules = 0;               // rules of t2 in the file (allow udp dport N)
  bool with_t3 = true;               // tenant t3 (no ports)
  std::string t1_rule_port = "443";  // cfg-web's destination port
};

std::string gatewayConfig(const std::string& prefix, const std::string& socket,
                          const FileShape& f) {
  std::string t2_policy;
  if (f.t2_rules > 0) {
    t2_policy = "    policy:\n      rules:\n";
    for (size_t i = 0; i < f.t2_rules; ++i) {
      t2_policy += "        - {name: r" + std::to_string(i) +
                   ", action: allow, protocol: udp, destination-ports: \"" +
                   std::to_string(1000 + i % 60000) + "\"}\n";
    }
  }
  return R"(node:
  name: gw-rules
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
    policy:
      rules:
        - name: cfg-web
          action: allow
          protocol: tcp
          destination-ports: ")" +
         f.t1_rule_port + R"("
  - name: t2
    vni: 5002
    routes:
      - prefix: 10.3.0.0/16
        peer: site-b
)" + t2_policy +
         (f.with_t3 ? "  - name: t3\n    vni: 5003\n" : "") + R"(peers:
  - name: site-b
    lines:
      - name: l1
        port: wan0
        local-vtep: 203.0.113.1
        remote-vtep: 203.0.113.10
address-plan:
  clouds:
    - name: aws
      regions:
        - name: r1
          vpcs:
            - name: gpu-b
              prefixes: [10.2.0.0/16]
              tenant: t1
api:
  socket: )" +
         socket + "\n";
}

// One Gateway per test process (the EAL starts once per process; ctest runs
// each test in its own).
class GatewayEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    ASSERT_EQ(::unshare(CLONE_NEWNET), 0) << std::strerror(errno);
    char tmpl[] = "/tmp/mcgw-policy-rules-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr) << std::strerror(errno);
    dir = tmpl;
    writeFile({});
    spdlog::set_level(spdlog::level::warn);
    auto loaded = loadConfig(path());
    ASSERT_TRUE(loaded) << (loaded ? "" : loaded.error().front().toString());
    auto started = Gateway::start(path(), std::move(*loaded), "policy_rules_live_test",
                                  {"warn", dir + "/state", std::nullopt});
    ASSERT_TRUE(started) << (started ? "" : started.error().front());
    gw = std::move(*started);
  }
  void TearDown() override {
    gw.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
  static std::string path() { return dir + "/mcgw.yaml"; }
  static void writeFile(const FileShape& f) {
    std::ofstream(path()) << gatewayConfig("mcgwrules" + std::to_string(::getpid()),
                                           dir + "/mcgw.sock", f);
  }
  static inline std::unique_ptr<Gateway> gw;
  static inline std::string dir;
};

const auto* const kEnv = ::testing::AddGlobalTestEnvironment(new GatewayEnvironment);

class PolicyRulesLiveTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(GatewayEnvironment::gw) << "the gateway did not start"; }

  static json call(const std::string& command, const json& args,
                   const std::string& who = "tester") {
    Gateway& gw = *GatewayEnvironment::gw;
    json r = handleRequest(
        gw, command, args, [&gw] { return gw.reload(); }, who);
    EXPECT_TRUE(r.is_object() && r.contains("ok") && r["ok"].is_boolean()) << r.dump();
    return r;
  }
  static json okResult(const std::string& command, const json& args) {
    json r = call(command, args);
    EXPECT_EQ(r["ok"], true) << command << " " << args.dump() << ": " << r.dump();
    return r.value("result", json::object());
  }
  // The refusal's message and details (all of them in one string).
  static std::string refused(const std::string& command, const json& args) {
    json r = call(command, args);
    EXPECT_EQ(r["ok"], false) << command << " " << args.dump() << ": " << r.dump();
    if (r["ok"] != false) {
      return "";
    }
    std::string out = r["error"].value("message", "");
    for (const auto& d : r["error"].value("details", json::array())) {
      out += "\n" + d.get<std::string>();
    }
    return out;
  }
  // `show policy`'s entry of a tenant.
  static json tenantView(const std::string& tenant) {
    const json v = okResult("show-policy", {{"tenant", tenant}});
    EXPECT_EQ(v["tenants"].size(), 1u) << v.dump();
    return v["tenants"].size() == 1 ? v["tenants"][0] : json::object();
  }
  static std::vector<std::string> ruleNames(const std::string& tenant) {
    std::vector<std::string> out;
    const json view = tenantView(tenant);
    for (const auto& r : view["rules"]) {
      out.push_back(r["name"].get<std::string>());
    }
    return out;
  }
  static json denyPing() {
    return {{"default", "allow"},
            {"rules",
             {{{"name", "no-ping"}, {"action", "deny"}, {"protocol", "icmp"}},
              {{"name", "to-gpu"},
               {"action", "allow"},
               {"protocol", "tcp"},
               {"destination", {"vpc gpu-b"}},
               {"destination-ports", "20000-30000"}}}}};
  }
  static ReloadOutcome reload() { return GatewayEnvironment::gw->reload(); }
};

TEST_F(PolicyRulesLiveTest, SetIsInForceWhenItAnswersAndClearGoesBackToTheConfig) {
  json t1 = tenantView("t1");
  EXPECT_EQ(t1["rules_source"], "config");
  EXPECT_EQ(ruleNames("t1"), std::vector<std::string>{"cfg-web"});

  json r = okResult("policy-rules-set", {{"tenant", "t1"}, {"policy", denyPing()}});
  EXPECT_EQ(r["message"], "tenant t1: 2 live rules, default allow, in force") << r.dump();
  // In the tables the workers use now: compiled, with classifier entries
  // (vpc gpu-b resolved against the plan: no note).
  t1 = tenantView("t1");
  ASSERT_EQ(t1["rules"].size(), 2u) << t1.dump();
  EXPECT_EQ(t1["rules"][0]["name"], "no-ping");
  EXPECT_EQ(t1["rules"][0]["action"], "deny");
  EXPECT_EQ(t1["rules"][0]["match"], "icmp any -> any");
  EXPECT_GE(t1["rules"][0]["entries"].get<int>(), 1);
  EXPECT_EQ(t1["rules"][1]["name"], "to-gpu");
  EXPECT_FALSE(t1["rules"][1].contains("note")) << t1.dump();
  EXPECT_EQ(t1["rules"][1]["match"], "tcp any -> vpc gpu-b dport 20000-30000");
  EXPECT_EQ(t1["default"], "allow");
  EXPECT_TRUE(t1["rules_source"].get<std::string>().starts_with("live by tester since 20"))
      << t1.dump();
  // The others keep the config's.
  EXPECT_EQ(tenantView("t2")["rules_source"], "config");
  EXPECT_EQ(tenantView("t2")["rules"].size(), 0u);

  // Set again (default deny, one rule): replaces the live rules whole.
  r = okResult("policy-rules-set",
               {{"tenant", "t1"},
                {"policy",
                 {{"default", "deny"},
                  {"rules", {{{"name", "ping"}, {"action", "allow"}, {"protocol", "icmp"}}}}}}});
  EXPECT_EQ(r["message"], "tenant t1: 1 live rule, default deny, in force") << r.dump();
  EXPECT_EQ(ruleNames("t1"), std::vector<std::string>{"ping"});
  EXPECT_EQ(tenantView("t1")["default"], "deny");
  // No rules, default allow: said explicitly (an empty policy is refused).
  okResult("policy-rules-set", {{"tenant", "t1"}, {"policy", {{"default", "allow"}}}});
  EXPECT_TRUE(ruleNames("t1").empty());
  EXPECT_EQ(tenantView("t1")["default"], "allow");

  r = okResult("policy-rules-clear", {{"tenant", "t1"}});
  EXPECT_EQ(r["message"], "tenant t1: back to the config's rules");
  EXPECT_EQ(ruleNames("t1"), std::vector<std::string>{"cfg-web"});
  EXPECT_EQ(tenantView("t1")["rules_source"], "config");
  r = okResult("policy-rules-clear", {{"tenant", "t1"}});
  EXPECT_EQ(r["message"], "tenant t1: no live rules; the config's rules are in force");
  // A tenant without a policy in the file gets one.
  okResult("policy-rules-set", {{"tenant", "t3"}, {"policy", denyPing()}});
  EXPECT_EQ(ruleNames("t3"), (std::vector<std::string>{"no-ping", "to-gpu"}));
  // A live change is not a reload: status's last reload stays as it was.
  EXPECT_TRUE(GatewayEnvironment::gw->status()["config"]["last_reload"].is_null())
      << GatewayEnvironment::gw->status()["config"].dump();
}

TEST_F(PolicyRulesLiveTest, BadInputIsLocatedAndChangesNothing) {
  okResult("policy-rules-set", {{"tenant", "t1"}, {"policy", denyPing()}});
  const std::string source = tenantView("t1")["rules_source"];
  auto rule = [](json extra) {
    json r = {{"name", "x"}, {"action", "deny"}};
    if (extra.is_object()) {
      r.update(extra);
    }
    return r;
  };
  auto policyOf = [](json rules) { return json{{"default", "deny"}, {"rules", rules}}; };
  struct Case {
    json policy;
    std::string want;  // in the message
  };
  const std::vector<Case> cases = {
      {policyOf({rule({}), rule({{"name", "y"}, {"source", {"10.0.0.0/8", "10.1.2.3/8"}}})}),
       "tenant \"t1\": policy.rules[1].source[1]: "},
      {policyOf({rule({{"action", "maybe"}})}), "tenant \"t1\": policy.rules[0].action: "},
      {policyOf({rule({{"sorce", {"10.0.0.0/8"}}})}), "tenant \"t1\": policy.rules[0].sorce: "},
      {policyOf({{{"name", "x"}}}), "tenant \"t1\": policy.rules[0]: "},
      {policyOf({rule({{"destination-ports", "443"}})}),
       "tenant \"t1\": policy.rules[0].destination-ports: ports need protocol tcp, udp or sctp"},
      {policyOf({rule({{"protocol", "tcp"}, {"destination-ports", "90-80"}})}),
       "tenant \"t1\": policy.rules[0].destination-ports: port range \"90-80\" ends below its "
       "start"},
      {policyOf({rule({{"protocol", "300"}})}), "tenant \"t1\": policy.rules[0].protocol: "},
      {policyOf({rule({{"dscp", "64"}})}), "tenant \"t1\": policy.rules[0].dscp: "},
      {policyOf({rule({{"source", {"vpcc gpu-b"}}})}),
       "tenant \"t1\": policy.rules[0].source[0]: "},
      {policyOf({rule({}), rule({})}),
       "tenant \"t1\": policy.rules[1].name: duplicate rule \"x\" (first defined at "
       "policy.rules[0])"},
      {policyOf({rule({{"name", "caf\u00e9\U0001F600"}})}),
       "tenant \"t1\": policy.rules[0].name: "},
      {policyOf({rule({{"name", "a\nb"}})}), "tenant \"t1\": policy.rules[0].name: "},
      // Columns count bytes: after 40 bytes of non-ASCII text, still the right key.
      {policyOf({rule({{"destination",
                        {"vpc " + std::string(20, 'x') +
                         "\u00e9\u00e9\u00e9\u00e9"
                         "\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9"
                         "\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9"}},
                       {"protocol", "bogus"}})}),
       "tenant \"t1\": policy.rules[0].protocol: "},
      {json{{"default", "perhaps"}}, "tenant \"t1\": policy.default: "},
      {json{{"rules", "none"}}, "tenant \"t1\": policy.rules: "},
  };
  for (const Case& c : cases) {
    const std::string m = refused("policy-rules-set", {{"tenant", "t1"}, {"policy", c.policy}});
    EXPECT_TRUE(m.starts_with("policy-rules-set: ")) << m;
    EXPECT_NE(m.find(c.want), std::string::npos) << c.policy.dump() << "\n" << m;
    EXPECT_NE(m.find("; nothing changed"), std::string::npos) << m;
  }
  // 65 sources: the model's bound of 64.
  json many = json::array();
  for (int i = 0; i < 65; ++i) {
    many.push_back("10.9." + std::to_string(i) + ".0/24");
  }
  std::string m = refused("policy-rules-set",
                          {{"tenant", "t1"}, {"policy", policyOf({rule({{"source", many}})})}});
  EXPECT_NE(m.find("tenant \"t1\": policy.rules[0].source"), std::string::npos) << m;
  // 10,001 rules: the bound per tenant.
  json rules = json::array();
  for (int i = 0; i < 10001; ++i) {
    rules.push_back({{"name", "r" + std::to_string(i)}, {"action", "deny"}});
  }
  m = refused("policy-rules-set", {{"tenant", "t1"}, {"policy", policyOf(rules)}});
  EXPECT_NE(m.find("tenant \"t1\": policy.rules"), std::string::npos) << m.substr(0, 2000);
  // Arguments.
  EXPECT_EQ(refused("policy-rules-set", {{"tenant", "nope"}, {"policy", denyPing()}}),
            "policy-rules-set: no tenant \"nope\"; nothing changed\nno tenant \"nope\"");
  // Null, empty or not an object (a failed pipe into a client): refused,
  // not read as "no rules, allow".
  for (const json& empty : {json(), json::object(), json::array(), json("deny")}) {
    EXPECT_NE(refused("policy-rules-set", {{"tenant", "t1"}, {"policy", empty}})
                  .find("\"policy\" must be an object with \"default\" and/or \"rules\""),
              std::string::npos)
        << empty.dump();
  }
  EXPECT_NE(refused("policy-rules-set", {{"tenant", "t1"}}).find("argument \"policy\" is missing"),
            std::string::npos);
  EXPECT_NE(refused("policy-rules-set", {{"policy", denyPing()}}).find("\"tenant\" is missing"),
            std::string::npos);
  EXPECT_NE(refused("policy-rules-set", {{"tenant", "t1"}, {"policy", denyPing()}, {"x", 1}})
                .find("unknown argument \"x\""),
            std::string::npos);
  EXPECT_NE(refused("policy-rules-clear", {{"tenant", "nope"}}).find("no tenant \"nope\""),
            std::string::npos);

  // Nothing changed: the live rules set first, from the same client and time.
  EXPECT_EQ(ruleNames("t1"), (std::vector<std::string>{"no-ping", "to-gpu"}));
  EXPECT_EQ(tenantView("t1")["rules_source"], source);
  EXPECT_EQ(tenantView("t1")["default"], "allow");

  // A plan object the plan does not have is a warning, as in a file; the
  // rule matches nothing until the plan has it.
  json r = okResult(
      "policy-rules-set",
      {{"tenant", "t1"}, {"policy", policyOf({rule({{"destination", {"vpc nowhere"}}})})}});
  EXPECT_NE(r["message"].get<std::string>().find("\nwarning: tenant \"t1\": "
                                                 "policy.rules[0].destination[0]: "),
            std::string::npos)
      << r.dump();
  EXPECT_TRUE(tenantView("t1")["rules"][0].contains("note")) << tenantView("t1").dump();
}

TEST_F(PolicyRulesLiveTest, LiveRulesStayOverReloadsWhileTheirTenantExists) {
  okResult("policy-rules-set", {{"tenant", "t1"}, {"policy", denyPing()}});
  okResult("policy-rules-set", {{"tenant", "t3"}, {"policy", denyPing()}});
  const std::string source = tenantView("t1")["rules_source"];

  // The file's t1 rule changes and t2 gets rules: t1 keeps its live rules,
  // t2 takes the file's.
  GatewayEnvironment::writeFile({.t2_rules = 2, .with_t3 = true, .t1_rule_port = "8443"});
  ReloadOutcome o = reload();
  ASSERT_TRUE(o.ok) << (o.errors.empty() ? "" : o.errors.front());
  EXPECT_EQ(ruleNames("t1"), (std::vector<std::string>{"no-ping", "to-gpu"}));
  EXPECT_EQ(tenantView("t1")["rules_source"], source);
  EXPECT_EQ(ruleNames("t2"), (std::vector<std::string>{"r0", "r1"}));
  EXPECT_EQ(tenantView("t2")["rules_source"], "config");

  // Clear: the new file's rule (dport 8443) is in force.
  okResult("policy-rules-clear", {{"tenant", "t1"}});
  json t1 = tenantView("t1");
  ASSERT_EQ(t1["rules"].size(), 1u) << t1.dump();
  EXPECT_EQ(t1["rules"][0]["match"], "tcp any -> any dport 8443");

  // A reload that removes t3 ends its live rules; t3 back in the file
  // comes with the file's (none).
  GatewayEnvironment::writeFile({.t2_rules = 2, .with_t3 = false});
  o = reload();
  ASSERT_TRUE(o.ok) << (o.errors.empty() ? "" : o.errors.front());
  GatewayEnvironment::writeFile({.t2_rules = 2, .with_t3 = true});
  o = reload();
  ASSERT_TRUE(o.ok) << (o.errors.empty() ? "" : o.errors.front());
  EXPECT_TRUE(ruleNames("t3").empty());
  EXPECT_EQ(tenantView("t3")["rules_source"], "config");
}

// The bound of 16,384 rules in all tenants: live rules that fit the running
// file but not a new one refuse the reload, which names the tenant and says
// to clear them; cleared, the same file reloads.
TEST_F(PolicyRulesLiveTest, ReloadTheLiveRulesDoNotFitIsRefused) {
  json rules = json::array();
  for (int i = 0; i < 6385; ++i) {
    rules.push_back({{"name", "d" + std::to_string(i)},
                     {"action", "deny"},
                     {"protocol", "udp"},
                     {"destination-ports", std::to_string(2000 + i)}});
  }
  okResult("policy-rules-set", {{"tenant", "t1"}, {"policy", {{"rules", rules}}}});
  EXPECT_EQ(tenantView("t1")["rules"].size(), 6385u);

  // t2 with 10,000 rules: 16,385 with t1's live ones (the file alone has 10,001).
  GatewayEnvironment::writeFile({.t2_rules = 10000});
  ReloadOutcome o = reload();
  ASSERT_FALSE(o.ok);
  std::string all;
  for (const auto& e : o.errors) {
    all += e + "\n";
  }
  EXPECT_NE(all.find("tenant \"t1\" has live rules (set by tester at 20"), std::string::npos)
      << all;
  EXPECT_NE(all.find("Clear them first (mcgwctl policy rules clear t1) or change the file"),
            std::string::npos)
      << all;
  EXPECT_NE(all.find("brings the policy rules of all tenants to 16385; at most 16384 are allowed"),
            std::string::npos)
      << all;
  EXPECT_EQ(o.summary, "refused (" + std::to_string(o.errors.size()) +
                           " errors); the running config is unchanged");
  EXPECT_EQ(tenantView("t1")["rules"].size(), 6385u);
  EXPECT_TRUE(tenantView("t2")["rules"].empty());
  EXPECT_NE(tenantView("t1")["rules_source"], "config");

  okResult("policy-rules-clear", {{"tenant", "t1"}});
  o = reload();
  ASSERT_TRUE(o.ok) << (o.errors.empty() ? "" : o.errors.front());
  EXPECT_EQ(tenantView("t2")["rules"].size(), 10000u);
  EXPECT_EQ(ruleNames("t1"), std::vector<std::string>{"cfg-web"});
  // And now a live set that would cross the bound is refused the same way.
  const std::string m =
      refused("policy-rules-set", {{"tenant", "t1"}, {"policy", {{"rules", rules}}}});
  EXPECT_NE(m.find("at most 16384 are allowed"), std::string::npos) << m.substr(0, 2000);
  EXPECT_EQ(ruleNames("t1"), std::vector<std::string>{"cfg-web"});
}

}  // namespace
}  // namespace mcgw::daemon
