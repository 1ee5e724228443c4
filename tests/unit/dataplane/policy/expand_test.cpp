// A tenant's config rules expanded into classifier entries
// (dataplane/policy/expand.hpp): prefixes and address-plan objects resolved,
// the cross product per family, ids, the views' match text and notes, and
// the key that tells whether two expansions build the same classifier.
// No EAL: expand builds no Classifier.
#include "dataplane/policy/expand.hpp"

#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace mcgw::policy {
namespace {

using config::Config;
using config::IpPrefix;
using config::PolicyRule;
using config::TenantConfig;
using config::VpcConfig;

IpPrefix pfx(const char* text) {
  auto p = IpPrefix::parse(text);
  EXPECT_TRUE(p) << text;
  return p.value_or(IpPrefix{});
}

VpcConfig vpc(const char* cloud, const char* name, const char* site,
              std::vector<const char*> prefixes) {
  VpcConfig v;
  v.cloud = cloud;
  v.region = "r1";
  v.name = name;
  v.site = site;
  v.tenant = "blue";
  for (const char* p : prefixes) {
    v.prefixes.push_back(pfx(p));
  }
  return v;
}

// The plan: aws has gpu-a (site idc-a, both families) and gpu-b (idc-b);
// gcp has gpu-c (idc-b, both families).
Config plan() {
  Config c;
  c.address_plan.vpcs = {
      vpc("aws", "gpu-a", "idc-a", {"10.1.0.0/16", "2001:db8:1::/48"}),
      vpc("aws", "gpu-b", "idc-b", {"10.2.0.0/16"}),
      vpc("gcp", "gpu-c", "idc-b", {"10.3.0.0/16", "10.4.0.0/16", "2001:db8:3::/48"}),
  };
  return c;
}

PolicyRule rule(const char* name, std::vector<std::string> source,
                std::vector<std::string> destination, bool deny = true) {
  PolicyRule r;
  r.name = name;
  r.deny = deny;
  r.source = std::move(source);
  r.destination = std::move(destination);
  return r;
}

TenantConfig tenant(std::vector<PolicyRule> rules, bool default_deny = false) {
  TenantConfig t;
  t.name = "blue";
  t.vni = 100;
  t.policy.default_deny = default_deny;
  t.policy.rules = std::move(rules);
  return t;
}

std::string prefixText(const Prefix& p, bool v6) {
  char buf[INET6_ADDRSTRLEN];
  inet_ntop(v6 ? AF_INET6 : AF_INET, p.address.data(), buf, sizeof buf);
  return std::string(buf) + "/" + std::to_string(p.length);
}

// "v4 10.1.0.0/16 -> 10.2.0.0/16 #0", any side as "any".
std::string text(const Rule& r) {
  auto side = [&](const Prefix& p) { return p.length == 0 ? "any" : prefixText(p, r.v6); };
  return std::string(r.v6 ? "v6 " : "v4 ") + side(r.source) + " -> " + side(r.destination) + " #" +
         std::to_string(r.id);
}

std::vector<std::string> texts(const Expanded& e) {
  std::vector<std::string> out;
  for (const Rule& r : e.entries) {
    out.push_back(text(r));
  }
  return out;
}

using Texts = std::vector<std::string>;

TEST(PolicyExpand, PrefixesCrossProductPerFamily) {
  const Config c = plan();
  const Expanded e = expand(c, tenant({rule("r", {"10.1.0.0/16", "2001:db8:1::/48", "10.5.0.0/16"},
                                            {"10.2.0.0/16", "2001:db8:2::/48"})}));
  EXPECT_EQ(texts(e), (Texts{"v4 10.1.0.0/16 -> 10.2.0.0/16 #0", "v4 10.5.0.0/16 -> 10.2.0.0/16 #0",
                             "v6 2001:db8:1::/48 -> 2001:db8:2::/48 #0"}));
  ASSERT_EQ(e.views.size(), 1u);
  EXPECT_EQ(e.views[0].entries, 3u);
  EXPECT_EQ(e.views[0].note, "");
  EXPECT_EQ(e.views[0].name, "r");
  EXPECT_TRUE(e.views[0].deny);

  // 3 x 2 IPv4 and 1 x 2 IPv6.
  const Expanded big = expand(
      c, tenant({rule("r", {"10.1.0.0/16", "10.5.0.0/16", "10.6.0.0/16", "2001:db8:1::/48"},
                      {"10.2.0.0/16", "10.7.0.0/16", "2001:db8:2::/48", "2001:db8:7::/48"})}));
  EXPECT_EQ(big.entries.size(), 3u * 2 + 1 * 2);
  EXPECT_EQ(big.views[0].entries, 8u);
}

TEST(PolicyExpand, AnyOnOneSide) {
  const Config c = plan();
  EXPECT_EQ(texts(expand(c, tenant({rule("r", {}, {"10.2.0.0/16", "2001:db8:2::/48"})}))),
            (Texts{"v4 any -> 10.2.0.0/16 #0", "v6 any -> 2001:db8:2::/48 #0"}));
  EXPECT_EQ(texts(expand(c, tenant({rule("r", {"10.1.0.0/16"}, {})}))),
            (Texts{"v4 10.1.0.0/16 -> any #0"}));
  // Both sides any: one entry per family.
  EXPECT_EQ(texts(expand(c, tenant({rule("r", {}, {})}))),
            (Texts{"v4 any -> any #0", "v6 any -> any #0"}));
}

TEST(PolicyExpand, PlanObjectsResolved) {
  const Config c = plan();
  EXPECT_EQ(texts(expand(c, tenant({rule("r", {"vpc gpu-a"}, {"vpc gpu-b"})}))),
            (Texts{"v4 10.1.0.0/16 -> 10.2.0.0/16 #0"}));
  // A site: every VPC of it, across clouds.
  EXPECT_EQ(
      texts(expand(c, tenant({rule("r", {"vpc gpu-a"}, {"site idc-b"})}))),
      (Texts{"v4 10.1.0.0/16 -> 10.2.0.0/16 #0", "v4 10.1.0.0/16 -> 10.3.0.0/16 #0",
             "v4 10.1.0.0/16 -> 10.4.0.0/16 #0", "v6 2001:db8:1::/48 -> 2001:db8:3::/48 #0"}));
  // A cloud: its VPCs only.
  EXPECT_EQ(texts(expand(c, tenant({rule("r", {"cloud aws"}, {})}))),
            (Texts{"v4 10.1.0.0/16 -> any #0", "v4 10.2.0.0/16 -> any #0",
                   "v6 2001:db8:1::/48 -> any #0"}));
  EXPECT_EQ(texts(expand(c, tenant({rule("r", {}, {"cloud gcp"})}))),
            (Texts{"v4 any -> 10.3.0.0/16 #0", "v4 any -> 10.4.0.0/16 #0",
                   "v6 any -> 2001:db8:3::/48 #0"}));
  // The same prefix named twice (an object and a prefix) is one entry.
  EXPECT_EQ(texts(expand(c, tenant({rule("r", {"vpc gpu-b", "10.2.0.0/16"}, {})}))),
            (Texts{"v4 10.2.0.0/16 -> any #0"}));
  // The names of the three kinds are not mixed up: a VPC named like a site.
  Config c2 = plan();
  c2.address_plan.vpcs.push_back(vpc("azure", "idc-a", "idc-z", {"10.9.0.0/16"}));
  EXPECT_EQ(texts(expand(c2, tenant({rule("r", {"vpc idc-a"}, {})}))),
            (Texts{"v4 10.9.0.0/16 -> any #0"}));
  EXPECT_EQ(texts(expand(c2, tenant({rule("r", {"site idc-a"}, {})}))),
            (Texts{"v4 10.1.0.0/16 -> any #0", "v6 2001:db8:1::/48 -> any #0"}));
}

TEST(PolicyExpand, ResolvePolicyObject) {
  const Config c = plan();
  EXPECT_EQ(resolvePolicyObject(c, "vpc gpu-a"),
            (std::vector<IpPrefix>{pfx("10.1.0.0/16"), pfx("2001:db8:1::/48")}));
  EXPECT_EQ(resolvePolicyObject(c, "10.1.2.3/16"), (std::vector<IpPrefix>{pfx("10.1.0.0/16")}));
  EXPECT_TRUE(resolvePolicyObject(c, "vpc nope").empty());
  EXPECT_TRUE(resolvePolicyObject(c, "site nope").empty());
  EXPECT_TRUE(resolvePolicyObject(c, "cloud nope").empty());
  EXPECT_TRUE(resolvePolicyObject(c, "10.1.0.0/33").empty());
  // toPrefix: the network, in the first bytes.
  const Prefix p = toPrefix(pfx("10.1.2.3/16"));
  EXPECT_EQ(prefixText(p, false), "10.1.0.0/16");
  const Prefix p6 = toPrefix(pfx("2001:db8:1:2::5/48"));
  EXPECT_EQ(prefixText(p6, true), "2001:db8:1::/48");
}

TEST(PolicyExpand, UnresolvedObjectGivesNoEntryAndANote) {
  const Config c = plan();
  const Expanded e =
      expand(c, tenant({rule("a", {"vpc nope"}, {}), rule("b", {}, {"site gone", "cloud x"}),
                        rule("c", {"vpc nope", "10.1.0.0/16"}, {}), rule("d", {}, {})}));
  ASSERT_EQ(e.views.size(), 4u);
  EXPECT_EQ(e.views[0].entries, 0u);
  EXPECT_EQ(e.views[0].note, "vpc nope is not in the address plan in force: matches nothing");
  EXPECT_EQ(e.views[1].entries, 0u);
  EXPECT_EQ(e.views[1].note, "site gone is not in the address plan in force: matches nothing");
  // One of its objects resolves: its entries, no note.
  EXPECT_EQ(e.views[2].entries, 1u);
  EXPECT_EQ(e.views[2].note, "");
  EXPECT_EQ(e.views[3].entries, 2u);
  // The ids stay the rules' indexes although a and b have no entry.
  EXPECT_EQ(texts(e), (Texts{"v4 10.1.0.0/16 -> any #2", "v4 any -> any #3", "v6 any -> any #3"}));
}

TEST(PolicyExpand, FamiliesThatDoNotMeetGiveANote) {
  const Expanded e = expand(plan(), tenant({rule("r", {"10.1.0.0/16"}, {"2001:db8::/32"})}));
  EXPECT_TRUE(e.entries.empty());
  ASSERT_EQ(e.views.size(), 1u);
  EXPECT_EQ(e.views[0].note,
            "its sources and destinations share no address family: matches nothing");
  // A VPC of IPv4 only against an IPv6 prefix.
  const Expanded f = expand(plan(), tenant({rule("r", {"vpc gpu-b"}, {"2001:db8::/32"})}));
  EXPECT_TRUE(f.entries.empty());
  EXPECT_EQ(f.views[0].note,
            "its sources and destinations share no address family: matches nothing");
}

TEST(PolicyExpand, IdsAreRuleIndexesAndFieldsCarried) {
  PolicyRule web = rule("web", {}, {"10.2.0.0/16"}, false);
  web.protocol = 6;
  web.dport_lo = web.dport_hi = 443;
  PolicyRule dns = rule("dns", {"10.1.0.0/16"}, {}, true);
  dns.protocol = 17;
  dns.sport_lo = 1000;
  dns.sport_hi = 2000;
  dns.dport_lo = dns.dport_hi = 53;
  dns.dscp = 46;
  PolicyRule rest = rule("rest", {}, {});
  const Expanded e = expand(plan(), tenant({web, dns, rest}, true));
  ASSERT_EQ(e.entries.size(), 4u);
  EXPECT_EQ(texts(e), (Texts{"v4 any -> 10.2.0.0/16 #0", "v4 10.1.0.0/16 -> any #1",
                             "v4 any -> any #2", "v6 any -> any #2"}));
  const Rule& w = e.entries[0];
  EXPECT_EQ(w.action, Action::kAllow);
  EXPECT_EQ(w.protocol, std::optional<uint8_t>(6));
  EXPECT_TRUE(w.source_ports.any());
  EXPECT_EQ(w.destination_ports.lo, 443);
  EXPECT_EQ(w.destination_ports.hi, 443);
  EXPECT_EQ(w.dscp, std::nullopt);
  const Rule& d = e.entries[1];
  EXPECT_EQ(d.action, Action::kDeny);
  EXPECT_EQ(d.protocol, std::optional<uint8_t>(17));
  EXPECT_EQ(d.source_ports.lo, 1000);
  EXPECT_EQ(d.source_ports.hi, 2000);
  EXPECT_EQ(d.destination_ports.lo, 53);
  EXPECT_EQ(d.destination_ports.hi, 53);
  EXPECT_EQ(d.dscp, std::optional<uint8_t>(46));
  const Rule& r = e.entries[3];
  EXPECT_TRUE(r.v6);
  EXPECT_EQ(r.protocol, std::nullopt);
  EXPECT_FALSE(r.hasPorts());
  EXPECT_EQ(r.action, Action::kDeny);
  // Every entry is one the classifier takes.
  for (const Rule& x : e.entries) {
    EXPECT_EQ(checkRule(x), "") << text(x);
  }
}

TEST(PolicyExpand, MatchText) {
  PolicyRule ssh = rule("ssh", {"10.1.0.0/16"}, {"vpc gpu-b"});
  ssh.protocol = 6;
  ssh.dport_lo = ssh.dport_hi = 22;
  PolicyRule dns = rule("dns", {"vpc gpu-a", "2001:db8::/32"}, {}, false);
  dns.protocol = 17;
  dns.sport_lo = 1000;
  dns.sport_hi = 2000;
  dns.dport_lo = dns.dport_hi = 53;
  dns.dscp = 46;
  PolicyRule gre = rule("gre", {}, {"cloud gcp"});
  gre.protocol = 47;
  PolicyRule ospf = rule("ospf", {}, {});
  ospf.protocol = 89;
  PolicyRule dscp0 = rule("dscp0", {}, {});
  dscp0.dscp = 0;
  PolicyRule low = rule("low", {}, {});
  low.protocol = 6;
  low.dport_lo = 0;
  low.dport_hi = 1023;
  const Expanded e = expand(plan(), tenant({ssh, dns, gre, ospf, dscp0, low, rule("all", {}, {})}));
  std::vector<std::string> match;
  for (const auto& v : e.views) {
    match.push_back(v.match);
  }
  EXPECT_EQ(match, (Texts{"tcp 10.1.0.0/16 -> vpc gpu-b dport 22",
                          "udp vpc gpu-a,2001:db8::/32 -> any sport 1000-2000 dport 53 dscp 46",
                          "gre any -> cloud gcp", "89 any -> any", "any any -> any dscp 0",
                          "tcp any -> any dport 0-1023", "any any -> any"}));
}

// The key: equal exactly when the classifier (and the views) would be.
TEST(PolicyExpand, KeyEqualForSameInputs) {
  PolicyRule ssh = rule("ssh", {"vpc gpu-a"}, {"site idc-b"});
  ssh.protocol = 6;
  ssh.dport_lo = ssh.dport_hi = 22;
  const TenantConfig t = tenant({ssh, rule("rest", {}, {}, false)}, true);
  const Expanded a = expand(plan(), t);
  const Expanded b = expand(plan(), t);
  EXPECT_EQ(a.key, b.key);
  // Another tenant's name, and a VPC the rules do not name: same key.
  TenantConfig other = t;
  other.name = "red";
  other.vni = 7;
  Config more = plan();
  more.address_plan.vpcs.push_back(vpc("azure", "unrelated", "idc-q", {"10.77.0.0/16"}));
  EXPECT_EQ(expand(more, other).key, a.key);
}

TEST(PolicyExpand, KeyDiffersForAnyChange) {
  PolicyRule ssh = rule("ssh", {"vpc gpu-a"}, {"vpc gpu-b"});
  ssh.protocol = 6;
  ssh.dport_lo = ssh.dport_hi = 22;
  const TenantConfig t = tenant({ssh, rule("rest", {}, {}, false)}, true);
  const Config c = plan();
  const std::string key = expand(c, t).key;

  auto differs = [&](const char* what, const Config& c2, const TenantConfig& t2) {
    EXPECT_NE(expand(c2, t2).key, key) << what;
  };
  TenantConfig x = t;
  x.policy.rules[0].dport_lo = x.policy.rules[0].dport_hi = 23;
  differs("a port", c, x);
  x = t;
  x.policy.rules[0].sport_lo = 1;
  differs("a source port", c, x);
  x = t;
  x.policy.rules[0].protocol = 17;
  differs("the protocol", c, x);
  x = t;
  x.policy.rules[0].dscp = 10;
  differs("the DSCP", c, x);
  x = t;
  x.policy.rules[0].deny = false;
  differs("the action", c, x);
  x = t;
  x.policy.rules[0].name = "ssh2";
  differs("a rule's name", c, x);
  x = t;
  x.policy.default_deny = false;
  differs("the default", c, x);
  x = t;
  std::swap(x.policy.rules[0], x.policy.rules[1]);
  differs("the order", c, x);
  x = t;
  x.policy.rules.pop_back();
  differs("a rule removed", c, x);
  // The rule text is the same, the plan resolves it to other prefixes.
  Config moved = plan();
  moved.address_plan.vpcs[1].prefixes = {pfx("10.20.0.0/16")};
  differs("a resolved prefix", moved, t);
  Config grown = plan();
  grown.address_plan.vpcs[0].prefixes.push_back(pfx("10.11.0.0/16"));
  differs("a VPC's prefix added", grown, t);
}

}  // namespace
}  // namespace mcgw::policy
