// A tenant's policy rules from the config (tenants[].policy) expanded into
// classifier entries (acl.hpp): address objects resolved against the
// address plan, one entry per source x destination prefix of a family.
// No DPDK: the config checks' fuzz target uses it too.
#pragma once

#include <string>
#include <vector>

#include "config/config.hpp"
#include "dataplane/policy/acl.hpp"

namespace mcgw::policy {

// One rule as `show policy` lists it.
struct RuleView {
  std::string name;
  bool deny = false;
  std::string match;   // "tcp 10.1.0.0/16 -> vpc gpu-b dport 22", "any any -> any"
  size_t entries = 0;  // classifier entries it expanded to (0: it matches nothing)
  uint16_t slot = 0;   // counter slot (set by the tables' builder)
  std::string note;    // why it matches nothing, or ""
};

// The tenant's rules expanded: entries (id = the rule's index), a view per
// rule, and a text that equals another's exactly when the classifiers
// built from them would be the same.
struct Expanded {
  std::vector<Rule> entries;
  std::vector<RuleView> views;
  std::string key;
  // Set when the rules would become more than kMaxEntries entries of one
  // family: expansion stopped there (plan objects can stand for many
  // prefixes), and this says which rule went over.
  std::string too_many;
};
Expanded expand(const config::Config& config, const config::TenantConfig& tenant);

// A config prefix as a rule's (its network: host bits cleared).
Prefix toPrefix(const config::IpPrefix& prefix);

// The prefixes a rule's address object names in `config`'s address plan
// ("vpc NAME", "site NAME", "cloud NAME": the prefixes of those VPCs), or
// the prefix itself; empty when nothing in the plan has that name.
std::vector<config::IpPrefix> resolvePolicyObject(const config::Config& config,
                                                  const std::string& object);

}  // namespace mcgw::policy
