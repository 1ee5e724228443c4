// libFuzzer target: any bytes as one tenant's policy block (the YAML under
// tenants[].policy, each line indented into place) inside a fixed config
// with an address plan, loaded by the config loader.  The loader must return
// a Config or errors, never crash.  For an accepted config every rule of
// every tenant is one the fast path can take: ports lo <= hi, ports only
// with protocol tcp, udp or sctp, DSCP <= 63; and policy::expand (DPDK-free)
// gives entries that hold what acl.hpp's checkRule asks of an entry (prefix
// lengths within the family, no host bits, lo <= hi, ports only with TCP,
// UDP or SCTP, DSCP <= 63, id <= kMaxId) and more: ids are the rules'
// indexes in order, each entry carries its rule's action, protocol, ports
// and DSCP, the views count the entries, a rule without entries has a note,
// and the key is the same for the same input.
//
// checkRule itself lives in acl.cpp with the rte_acl Classifier, which this
// DPDK-free target does not link.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "config/loader.hpp"
#include "config/text.hpp"
#include "dataplane/policy/expand.hpp"

namespace {

using mcgw::config::Config;
using mcgw::config::PolicyRule;
using mcgw::config::TenantConfig;
namespace policy = mcgw::policy;

[[noreturn]] void fail(const char* what, std::string_view s) {
  std::fprintf(stderr, "%s: %s\n", what, mcgw::text::escape(s, 512).c_str());
  std::abort();
}

void check(bool ok, const char* what, std::string_view s = "") {
  if (!ok) {
    fail(what, s);
  }
}

// Tenant blue's policy block goes after kHead, each line indented by 6.
constexpr std::string_view kHead = R"yaml(node:
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
            - {name: gpu-b, prefixes: [10.2.0.0/16, 10.3.0.0/24], tenant: red, site: idc-b}
    - name: gcp
      regions:
        - name: eu
          vpcs:
            - {name: gpu-c, prefixes: ["2001:db8:3::/48"], tenant: red, site: idc-b}
tenants:
  - name: red
    vni: 200
    policy:
      default: deny
      rules:
        - {name: web, action: allow, protocol: tcp, destination-ports: "443"}
  - name: blue
    vni: 100
    policy:
)yaml";

bool carriesPorts(uint8_t protocol) {
  return protocol == 6 || protocol == 17 || protocol == 132;
}

bool anyPorts(uint16_t lo, uint16_t hi) {
  return lo == 0 && hi == 65535;
}

void checkRule(const PolicyRule& r) {
  check(!mcgw::text::findProblem(r.name), "rule name", r.name);
  check(r.sport_lo <= r.sport_hi, "source ports lo > hi", r.name);
  check(r.dport_lo <= r.dport_hi, "destination ports lo > hi", r.name);
  if (!anyPorts(r.sport_lo, r.sport_hi) || !anyPorts(r.dport_lo, r.dport_hi)) {
    check(r.protocol && carriesPorts(*r.protocol), "ports without tcp, udp or sctp", r.name);
  }
  check(!r.dscp || *r.dscp <= 63, "DSCP above 63", r.name);
  for (const auto* side : {&r.source, &r.destination}) {
    check(side->size() <= 64, "more than 64 addresses", r.name);
    for (const auto& o : *side) {
      check(!mcgw::text::findProblem(o), "address object text", o);
    }
  }
}

// A prefix as an entry holds it: within the family, the bytes past it zero.
void checkPrefix(const policy::Prefix& p, bool v6, const std::string& rule) {
  const unsigned max = v6 ? 128 : 32;
  check(p.length <= max, "prefix length beyond the family", rule);
  for (unsigned bit = p.length; bit < 128; ++bit) {
    check((p.address[bit / 8] >> (7 - bit % 8) & 1) == 0, "host bits in an entry's prefix", rule);
  }
}

void checkExpansion(const Config& c, const TenantConfig& t) {
  const policy::Expanded e = policy::expand(c, t);
  check(e.views.size() == t.policy.rules.size(), "a view per rule", t.name);
  size_t counted = 0;
  for (size_t i = 0; i < e.views.size(); ++i) {
    const policy::RuleView& v = e.views[i];
    check(v.name == t.policy.rules[i].name, "view name", v.name);
    check(v.deny == t.policy.rules[i].deny, "view action", v.name);
    check((v.entries == 0) == !v.note.empty(), "a note exactly when no entry", v.name);
    check(!mcgw::text::findProblem(v.match), "match text", v.match);
    counted += v.entries;
  }
  check(counted == e.entries.size(), "views count the entries", t.name);
  uint32_t last = 0;
  for (const policy::Rule& x : e.entries) {
    check(x.id < t.policy.rules.size() && x.id <= policy::kMaxId, "entry id", t.name);
    check(x.id >= last, "entries in rule order", t.name);
    last = x.id;
    const PolicyRule& r = t.policy.rules[x.id];
    check(x.action == (r.deny ? policy::Action::kDeny : policy::Action::kAllow), "entry action",
          r.name);
    check(x.protocol == r.protocol, "entry protocol", r.name);
    check(x.source_ports.lo == r.sport_lo && x.source_ports.hi == r.sport_hi, "entry sports",
          r.name);
    check(x.destination_ports.lo == r.dport_lo && x.destination_ports.hi == r.dport_hi,
          "entry dports", r.name);
    check(x.dscp == r.dscp, "entry dscp", r.name);
    // What checkRule asks of an entry.
    checkPrefix(x.source, x.v6, r.name);
    checkPrefix(x.destination, x.v6, r.name);
    check(x.source_ports.lo <= x.source_ports.hi, "entry source ports lo > hi", r.name);
    check(x.destination_ports.lo <= x.destination_ports.hi, "entry destination ports lo > hi",
          r.name);
    if (x.hasPorts()) {
      check(x.protocol && carriesPorts(*x.protocol), "entry ports without tcp, udp or sctp",
            r.name);
    }
    check(!x.dscp || *x.dscp <= 63, "entry DSCP above 63", r.name);
    // Any on a side: the zero prefix.
    if (r.source.empty()) {
      check(x.source.length == 0, "any source", r.name);
    }
    if (r.destination.empty()) {
      check(x.destination.length == 0, "any destination", r.name);
    }
  }
  check(policy::expand(c, t).key == e.key, "the key is a function of the input", t.name);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 16384) {
    return 0;
  }
  std::string text(kHead);
  std::string_view in(reinterpret_cast<const char*>(data), size);
  while (!in.empty()) {
    const size_t nl = in.find('\n');
    text += "      ";
    text += in.substr(0, nl);
    text += '\n';
    in = nl == std::string_view::npos ? std::string_view() : in.substr(nl + 1);
  }
  auto r = mcgw::config::loadConfigText(text, "policy-fuzz.yaml");
  if (!r.ok()) {
    check(!r.error().empty(), "refused without an error");
    for (const auto& e : r.error()) {
      check(!mcgw::text::findProblem(e.toString()), "error text", e.toString());
    }
    return 0;
  }
  const Config& c = **r;
  check(c.tenants.size() == 2, "tenants");
  size_t all = 0;
  for (const auto& t : c.tenants) {
    check(t.policy.rules.size() <= 10000, "rules of one tenant", t.name);
    all += t.policy.rules.size();
    for (const auto& rule : t.policy.rules) {
      checkRule(rule);
    }
    checkExpansion(c, t);
  }
  check(all <= mcgw::config::kMaxPolicyRules, "rules of all tenants");
  return 0;
}
