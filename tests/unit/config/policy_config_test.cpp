// Tenant policy rules in the config (tenants[].policy, docs/policy.md): what
// the reader makes of every key and its defaults, the protocol and port
// helpers, each semantic error and warning at its file:line:col, what the
// YANG model refuses, and the reload's diff of a changed policy.
#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "config/diff.hpp"
#include "config/loader.hpp"

namespace mcgw::config {
namespace {

constexpr const char* kFile = "policy.yaml";

// Two tenants and an address plan with a VPC of each.  Its last line is
// line 26; a case's text starts on line 27 inside tenant blue (indent 4).
constexpr std::string_view kBase = R"yaml(node:
  name: gw-a1
  site: idc-a
eal:
  hugepages: false
ports:
  - name: lan0
    role: lan
    vdev: net_null0
    tenant: blue
  - name: wan0
    role: wan
    vdev: net_null1
address-plan:
  clouds:
    - name: aws
      regions:
        - name: us-east-1
          vpcs:
            - {name: gpu-a, prefixes: [10.1.0.0/16, "2001:db8:1::/48"], tenant: blue, site: idc-a}
            - {name: gpu-b, prefixes: [10.2.0.0/16], tenant: red, site: idc-b}
tenants:
  - name: red
    vni: 200
  - name: blue
    vni: 100
)yaml";

LoadResult load(std::string_view blue_policy) {
  return loadConfigText(std::string(kBase) + std::string(blue_policy), kFile);
}

std::string all(const ConfigErrors& errors) {
  std::string out;
  for (const auto& e : errors) {
    out += e.toString() + "\n";
  }
  return out;
}

std::string errors(const LoadResult& r) {
  return r.ok() ? std::string() : all(r.error());
}

const TenantConfig& blue(const LoadResult& r) {
  return (*r)->tenants.at(1);
}

// The one error a case must give: at `line`:`col`, containing `message`.
void expectOneError(std::string_view policy, int line, int col, std::string_view message) {
  SCOPED_TRACE(std::string(policy));
  LoadResult r = load(policy);
  ASSERT_FALSE(r.ok());
  ASSERT_EQ(r.error().size(), 1u) << errors(r);
  const ConfigError& e = r.error()[0];
  EXPECT_EQ(e.file, kFile);
  EXPECT_EQ(e.line, line) << errors(r);
  EXPECT_EQ(e.column, col) << errors(r);
  EXPECT_NE(e.message.find(message), std::string::npos) << errors(r);
}

// ------------------------------------------------------------------ reader

TEST(PolicyConfig, NoPolicyIsDefaultAllowWithoutRules) {
  LoadResult r = load("");
  ASSERT_TRUE(r.ok()) << errors(r);
  for (const auto& t : (*r)->tenants) {
    EXPECT_FALSE(t.policy.default_deny) << t.name;
    EXPECT_TRUE(t.policy.rules.empty()) << t.name;
  }
}

TEST(PolicyConfig, ReadsEveryKey) {
  LoadResult r = load(R"yaml(    policy:
      default: deny
      rules:
        - name: web
          action: allow
          source: [10.1.0.0/16, "2001:db8:1::/48", vpc gpu-a]
          destination: [site idc-b, cloud aws]
          protocol: tcp
          source-ports: 1024-65535
          destination-ports: "443"
          dscp: 46
        - name: no-gre
          action: deny
          protocol: "47"
)yaml");
  ASSERT_TRUE(r.ok()) << errors(r);
  const TenantPolicy& p = blue(r).policy;
  EXPECT_TRUE(p.default_deny);
  ASSERT_EQ(p.rules.size(), 2u);
  const PolicyRule& web = p.rules[0];
  EXPECT_EQ(web.name, "web");
  EXPECT_FALSE(web.deny);
  EXPECT_EQ(web.source, (std::vector<std::string>{"10.1.0.0/16", "2001:db8:1::/48", "vpc gpu-a"}));
  EXPECT_EQ(web.destination, (std::vector<std::string>{"site idc-b", "cloud aws"}));
  EXPECT_EQ(web.protocol, std::optional<uint8_t>(6));
  EXPECT_EQ(web.sport_lo, 1024);
  EXPECT_EQ(web.sport_hi, 65535);
  EXPECT_EQ(web.dport_lo, 443);
  EXPECT_EQ(web.dport_hi, 443);
  EXPECT_EQ(web.dscp, std::optional<uint8_t>(46));
  const PolicyRule& gre = p.rules[1];
  EXPECT_EQ(gre.name, "no-gre");
  EXPECT_TRUE(gre.deny);
  EXPECT_EQ(gre.protocol, std::optional<uint8_t>(47));
  // Red has no policy: untouched.
  EXPECT_EQ((*r)->tenants[0].policy, TenantPolicy{});
}

TEST(PolicyConfig, DefaultsOfARule) {
  LoadResult r = load(R"yaml(    policy:
      rules:
        - name: any
          action: deny
)yaml");
  ASSERT_TRUE(r.ok()) << errors(r);
  const TenantPolicy& p = blue(r).policy;
  EXPECT_FALSE(p.default_deny);  // default allow
  ASSERT_EQ(p.rules.size(), 1u);
  const PolicyRule& a = p.rules[0];
  EXPECT_TRUE(a.deny);
  EXPECT_TRUE(a.source.empty());
  EXPECT_TRUE(a.destination.empty());
  EXPECT_EQ(a.protocol, std::nullopt);  // protocol any
  EXPECT_EQ(a.sport_lo, 0);
  EXPECT_EQ(a.sport_hi, 65535);
  EXPECT_EQ(a.dport_lo, 0);
  EXPECT_EQ(a.dport_hi, 65535);
  EXPECT_EQ(a.dscp, std::nullopt);
}

TEST(PolicyConfig, OrderIsKeptNotSorted) {
  LoadResult r = load(R"yaml(    policy:
      rules:
        - {name: zeta, action: deny}
        - {name: alpha, action: allow}
        - {name: mid, action: deny, protocol: any}
        - {name: beta, action: allow, protocol: "0"}
)yaml");
  ASSERT_TRUE(r.ok()) << errors(r);
  std::vector<std::string> names;
  for (const auto& rule : blue(r).policy.rules) {
    names.push_back(rule.name);
  }
  EXPECT_EQ(names, (std::vector<std::string>{"zeta", "alpha", "mid", "beta"}));
  EXPECT_EQ(blue(r).policy.rules[2].protocol, std::nullopt);
  EXPECT_EQ(blue(r).policy.rules[3].protocol, std::optional<uint8_t>(0));
}

// ------------------------------------------------------------ the helpers

TEST(PolicyConfig, ProtocolNumber) {
  const std::pair<const char*, std::optional<uint8_t>> cases[] = {
      {"icmp", 1},
      {"tcp", 6},
      {"udp", 17},
      {"gre", 47},
      {"esp", 50},
      {"icmpv6", 58},
      {"sctp", 132},
      {"0", 0},
      {"255", 255},
      {"89", 89},
      {"007", 7},
      {"any", std::nullopt},
      {"", std::nullopt},
      {"256", std::nullopt},
      {"65536", std::nullopt},
      {"4294967302", std::nullopt},  // would wrap to 6 in 32 bits
      {"TCP", std::nullopt},
      {"-1", std::nullopt},
      {"1x", std::nullopt}};
  for (const auto& [text, want] : cases) {
    EXPECT_EQ(protocolNumber(text), want) << text;
  }
}

TEST(PolicyConfig, ProtocolName) {
  EXPECT_EQ(protocolName(1), "icmp");
  EXPECT_EQ(protocolName(6), "tcp");
  EXPECT_EQ(protocolName(17), "udp");
  EXPECT_EQ(protocolName(47), "gre");
  EXPECT_EQ(protocolName(50), "esp");
  EXPECT_EQ(protocolName(58), "icmpv6");
  EXPECT_EQ(protocolName(132), "sctp");
  EXPECT_EQ(protocolName(0), "0");
  EXPECT_EQ(protocolName(89), "89");
  EXPECT_EQ(protocolName(255), "255");
  // Every name reads back as its number.
  for (unsigned p = 0; p <= 255; ++p) {
    EXPECT_EQ(protocolNumber(protocolName(static_cast<uint8_t>(p))), std::optional<uint8_t>(p));
  }
}

TEST(PolicyConfig, PortRange) {
  using Range = std::pair<uint16_t, uint16_t>;
  const std::pair<const char*, Range> cases[] = {
      {"", {0, 65535}},          {"0", {0, 0}},
      {"443", {443, 443}},       {"8000-8100", {8000, 8100}},
      {"0-65535", {0, 65535}},   {"65535", {65535, 65535}},
      {"65536", {65535, 65535}},  // clamped: the semantic checks refuse it
      {"99999-1", {65535, 1}},   {"100-50", {100, 50}},
      {"1-99999", {1, 65535}},   {"4294967297", {65535, 65535}},  // no wrap to 1
  };
  for (const auto& [text, want] : cases) {
    EXPECT_EQ(portRange(text), want) << text;
  }
}

// -------------------------------------------------------- semantic errors

// Line 27 "    policy:", 28 "      rules:", 29 "        - name: r", 30 the
// rule's first key after its name.
TEST(PolicyConfig, PortAbove65535) {
  expectOneError(R"yaml(    policy:
      rules:
        - name: r
          action: deny
          protocol: tcp
          destination-ports: 65536
)yaml",
                 32, 30, "port \"65536\" is not 0..65535");
  expectOneError(R"yaml(    policy:
      rules:
        - name: r
          action: deny
          protocol: udp
          source-ports: 1-99999
)yaml",
                 32, 25, "port \"99999\" is not 0..65535");
}

TEST(PolicyConfig, RangeEndingBelowItsStart) {
  expectOneError(R"yaml(    policy:
      rules:
        - name: r
          action: deny
          protocol: sctp
          destination-ports: 200-100
)yaml",
                 32, 30, "port range \"200-100\" ends below its start");
}

TEST(PolicyConfig, PortsNeedTcpUdpOrSctp) {
  for (const char* protocol : {"any", "icmp", "gre", "1", "47"}) {
    expectOneError(std::string(R"yaml(    policy:
      rules:
        - name: r
          action: deny
          protocol: )yaml") +
                       protocol + R"yaml(
          destination-ports: 22
)yaml",
                   32, 30, "ports need protocol tcp, udp or sctp");
  }
  // Without a protocol key: any.
  expectOneError(R"yaml(    policy:
      rules:
        - name: r
          action: deny
          source-ports: 22
)yaml",
                 31, 25, "ports need protocol tcp, udp or sctp");
  for (const char* protocol : {"tcp", "udp", "sctp", "6", "17", "132"}) {
    LoadResult r = load(std::string(R"yaml(    policy:
      rules:
        - name: r
          action: deny
          protocol: )yaml") +
                        protocol + R"yaml(
          destination-ports: 22
          source-ports: 0-65535
)yaml");
    EXPECT_TRUE(r.ok()) << protocol << ": " << errors(r);
  }
}

TEST(PolicyConfig, ProtocolAbove255) {
  expectOneError(R"yaml(    policy:
      rules:
        - name: r
          action: deny
          protocol: 256
)yaml",
                 31, 21, "protocol \"256\" is not 0..255");
  expectOneError(R"yaml(    policy:
      rules:
        - name: r
          action: deny
          protocol: 999
)yaml",
                 31, 21, "protocol \"999\" is not 0..255");
}

TEST(PolicyConfig, HostBitsInAPrefix) {
  expectOneError(
      R"yaml(    policy:
      rules:
        - name: r
          action: deny
          source: [10.2.0.0/16, 10.1.0.1/16]
)yaml",
      31, 33,
      "expected a network prefix, found \"10.1.0.1/16\" which has host bits set (did you "
      "mean '10.1.0.0/16'?)");
  expectOneError(R"yaml(    policy:
      rules:
        - name: r
          action: deny
          destination:
            - "2001:db8::1/64"
)yaml",
                 32, 15, "which has host bits set (did you mean '2001:db8::/64'?)");
}

// A refused prefix gives its own error only, not also one about the
// families of the rule's sides.
TEST(PolicyConfig, ARefusedPrefixIsOneError) {
  expectOneError(R"yaml(    policy:
      rules:
        - name: r
          action: deny
          source: [10.1.0.1/16]
          destination: [10.2.0.0/16]
)yaml",
                 31, 20, "which has host bits set");
  expectOneError(R"yaml(    policy:
      rules:
        - name: r
          action: deny
          source: [10.2.0.0/16]
          destination: ["10.1.0.0/40"]
)yaml",
                 32, 25, "expected a prefix such as 10.1.0.0/16, found \"10.1.0.0/40\"");
}

TEST(PolicyConfig, BadPrefix) {
  // The model's pattern lets these through; the prefix parser does not.
  for (const char* bad : {"10.1.0.0/33", "10.1.0/16", "1.2.3.4.5/8", "2001:db8::/129", "::::/8"}) {
    expectOneError(std::string(R"yaml(    policy:
      rules:
        - name: r
          action: deny
          source: [")yaml") +
                       bad + "\"]\n",
                   31, 20,
                   std::string("expected a prefix such as 10.1.0.0/16, found \"") + bad + "\"");
  }
}

TEST(PolicyConfig, FamiliesThatCannotMeet) {
  expectOneError(R"yaml(    policy:
      rules:
        - name: r
          action: deny
          source: [10.1.0.0/16, 10.3.0.0/16]
          destination: ["2001:db8::/32"]
)yaml",
                 29, 11,
                 "rule 'r' can match nothing: its sources and destinations are of different "
                 "address families");
  // One family in common, a plan object (both families), or an empty side:
  // fine.
  for (const char* rule :
       {"source: [10.1.0.0/16, \"2001:db8::/32\"], destination: [\"2001:db8:5::/48\"]",
        "source: [vpc gpu-a], destination: [\"2001:db8::/32\"]",
        "destination: [\"2001:db8::/32\"]"}) {
    LoadResult r =
        load(std::string("    policy:\n      rules:\n        - {name: r, action: deny, ") + rule +
             "}\n");
    EXPECT_TRUE(r.ok()) << rule << ": " << errors(r);
  }
}

// More than kMaxPolicyRules in all tenants (each tenant within the model's
// 10000): refused at the tenant that crosses the limit.
TEST(PolicyConfig, MoreThanMaxPolicyRulesInAllTenants) {
  ASSERT_GT(kMaxPolicyRules, 10000u);
  auto rules = [](size_t n) {
    std::string s = "    policy:\n      rules:\n";
    for (size_t i = 0; i < n; ++i) {
      s += "        - {name: r" + std::to_string(i) + ", action: deny}\n";
    }
    return s;
  };
  // red: line 23; its vni line 24 is followed by red's policy.
  auto config = [&](size_t red, size_t blue_rules) {
    std::string text(kBase);
    const std::string red_vni = "    vni: 200\n";
    text.insert(text.find(red_vni) + red_vni.size(), rules(red));
    return text + rules(blue_rules);
  };
  const size_t red = 10000, at_limit = kMaxPolicyRules - red;
  LoadResult ok = loadConfigText(config(red, at_limit), kFile);
  ASSERT_TRUE(ok.ok()) << errors(ok).substr(0, 2000);
  EXPECT_EQ((*ok)->tenants[0].policy.rules.size(), red);
  EXPECT_EQ((*ok)->tenants[1].policy.rules.size(), at_limit);

  LoadResult r = loadConfigText(config(red, at_limit + 1), kFile);
  ASSERT_FALSE(r.ok());
  ASSERT_EQ(r.error().size(), 1u) << errors(r).substr(0, 2000);
  const ConfigError& e = r.error()[0];
  // At blue's "rules:": after kBase's 26 lines, red's 10002, blue's
  // "policy:".
  EXPECT_EQ(e.line, 26 + 10002 + 2) << e.toString();
  EXPECT_EQ(e.column, 7) << e.toString();
  EXPECT_EQ(e.path, "/mcgw:tenants/tenant[name='blue']/policy");
  EXPECT_EQ(e.message, "tenant 'blue' brings the policy rules of all tenants to " +
                           std::to_string(kMaxPolicyRules + 1) + "; at most " +
                           std::to_string(kMaxPolicyRules) + " are allowed");
}

// ---------------------------------------------------------------- warnings

TEST(PolicyConfig, UnknownPlanObjectIsAWarning) {
  LoadResult r = load(R"yaml(    policy:
      rules:
        - name: r
          action: deny
          source: [vpc gpu-a, vpc nope]
          destination: [site idc-z, cloud gcp, site idc-b, cloud aws]
)yaml");
  ASSERT_TRUE(r.ok()) << errors(r);
  const std::string w = all((*r)->warnings);
  ASSERT_EQ((*r)->warnings.size(), 3u) << w;
  const ConfigError& nope = (*r)->warnings[0];
  EXPECT_EQ(nope.line, 31);
  EXPECT_EQ(nope.column, 31) << w;
  EXPECT_EQ(nope.message,
            "vpc 'nope' has no VPC in the config's address plan: the rule matches it only once the "
            "plan in force (its store) has one");
  EXPECT_EQ((*r)->warnings[1].line, 32);
  EXPECT_NE((*r)->warnings[1].message.find("site 'idc-z' has no VPC"), std::string::npos) << w;
  EXPECT_NE((*r)->warnings[2].message.find("cloud 'gcp' has no VPC"), std::string::npos) << w;
}

// ------------------------------------------------------------- the model

TEST(PolicyConfig, ModelRefusesABadObject) {
  for (const char* bad :
       {"foo 1.2.3.4", "vpc", "vpc ", "10.1.0.0", "host 10.1.0.1", "VPC a", "vpc 1bad", "any"}) {
    SCOPED_TRACE(bad);
    LoadResult r = load(std::string(R"yaml(    policy:
      rules:
        - name: r
          action: deny
          source: [")yaml") +
                        bad + "\"]\n");
    ASSERT_FALSE(r.ok());
    ASSERT_EQ(r.error().size(), 1u) << errors(r);
    EXPECT_EQ(r.error()[0].line, 31) << errors(r);
    EXPECT_NE(r.error()[0].message.find("a prefix such as 10.1.0.0/16"), std::string::npos)
        << errors(r);
  }
}

TEST(PolicyConfig, ModelRefusesBadValues) {
  const std::pair<const char*, const char*> cases[] = {
      {"action: maybe", "action"},
      {"protocol: ospf", "protocol"},
      {"protocol: 1000", "protocol"},
      {"destination-ports: 80,443", "destination-ports"},
      {"destination-ports: 123456", "destination-ports"},
      {"source-ports: \"-5\"", "source-ports"},
      {"dscp: 64", "dscp"},
  };
  for (const auto& [line, key] : cases) {
    SCOPED_TRACE(line);
    LoadResult r = load(std::string(R"yaml(    policy:
      rules:
        - name: r
          action: deny
          protocol: tcp
          )yaml") + line +
                        "\n");
    ASSERT_FALSE(r.ok());
    EXPECT_NE(errors(r).find(std::string("/") + key + ":"), std::string::npos) << errors(r);
  }
  LoadResult r = load("    policy:\n      default: maybe\n");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(errors(r).find("policy.yaml:28:"), std::string::npos) << errors(r);
  // A rule needs its action.
  r = load("    policy:\n      rules:\n        - name: r\n");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(errors(r).find("action"), std::string::npos) << errors(r);
}

TEST(PolicyConfig, ModelRefusesA10001stRuleInOneTenant) {
  auto rules = [](size_t n) {
    std::string s = "    policy:\n      rules:\n";
    for (size_t i = 0; i < n; ++i) {
      s += "        - {name: r" + std::to_string(i) + ", action: allow}\n";
    }
    return s;
  };
  LoadResult ok = load(rules(10000));
  ASSERT_TRUE(ok.ok()) << errors(ok).substr(0, 2000);
  EXPECT_EQ(blue(ok).policy.rules.size(), 10000u);
  LoadResult r = load(rules(10001));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(errors(r).find("rule"), std::string::npos) << errors(r).substr(0, 2000);
  EXPECT_NE(errors(r).find("10000"), std::string::npos) << errors(r).substr(0, 2000);
}

TEST(PolicyConfig, ModelRefusesAnUnknownKey) {
  LoadResult r = load(R"yaml(    policy:
      rules:
        - name: r
          action: deny
          port: 22
)yaml");
  ASSERT_FALSE(r.ok());
  ASSERT_EQ(r.error().size(), 1u) << errors(r);
  EXPECT_EQ(r.error()[0].line, 31) << errors(r);
  EXPECT_NE(r.error()[0].message.find("unknown key 'port'"), std::string::npos) << errors(r);
  r = load("    policy:\n      mode: strict\n");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(errors(r).find("unknown key 'mode'"), std::string::npos) << errors(r);
}

TEST(PolicyConfig, RuleNamesAreUnique) {
  LoadResult r = load(R"yaml(    policy:
      rules:
        - {name: r, action: deny}
        - {name: r, action: allow}
)yaml");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(errors(r).find("policy.yaml:30:"), std::string::npos) << errors(r);
}

// ------------------------------------------------------------------ diff

TEST(PolicyConfig, ChangedPolicyShowsInTheTenantsDiff) {
  const std::string before = R"yaml(    policy:
      rules:
        - {name: r, action: deny, protocol: tcp, destination-ports: "22"}
)yaml";
  LoadResult a = load(before);
  ASSERT_TRUE(a.ok()) << errors(a);
  const std::pair<const char*, const char*> edits[] = {
      {"destination-ports: \"22\"", "destination-ports: \"23\""},
      {"action: deny", "action: allow"},
      {"protocol: tcp", "protocol: udp"},
      {"{name: r,", "{name: s,"},
  };
  for (const auto& [from, to] : edits) {
    std::string after = before;
    after.replace(after.find(from), std::string_view(from).size(), to);
    LoadResult b = load(after);
    ASSERT_TRUE(b.ok()) << errors(b);
    const auto changes = diffConfigs(**a, **b);
    ASSERT_EQ(changes.size(), 1u) << to;
    EXPECT_EQ(changes[0].toString(), "tenant blue: changed (policy)") << to;
  }
  // The default alone, and a policy added to a tenant without one.
  LoadResult b =
      load("    policy:\n      default: deny\n" + before.substr(before.find("      rules")));
  ASSERT_TRUE(b.ok()) << errors(b);
  auto changes = diffConfigs(**a, **b);
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].toString(), "tenant blue: changed (policy)");
  LoadResult none = load("");
  ASSERT_TRUE(none.ok());
  changes = diffConfigs(**none, **a);
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].toString(), "tenant blue: changed (policy)");
  // The same policy: no change.
  LoadResult same = load(before);
  ASSERT_TRUE(same.ok());
  EXPECT_TRUE(diffConfigs(**a, **same).empty());
}

}  // namespace
}  // namespace mcgw::config
