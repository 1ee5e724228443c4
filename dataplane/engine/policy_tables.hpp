// Tenant policy in the forwarding tables (docs/policy.md): each tenant's
// rules compiled into an rte_acl classifier (dataplane/policy/acl.hpp), and
// the prefixes that belong to other tenants only, which tell a packet
// without a route that was headed for another tenant ("tenant-isolation")
// from one that was headed nowhere ("no-route").
//
// Both are immutable parts of a snapshot.  The builder keeps the last ones
// by their inputs, so a reload or a route change that leaves a tenant's
// rules and the address plan alone reuses its classifier (10,000 rules take
// seconds to compile).
//
// Counters: every rule, every tenant's default and every tenant's isolation
// has a counter slot that stays with its name ("tenant/rule") across
// reloads; workers count the packets each one decided (WorkerCounters::
// policy).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "config/result.hpp"
#include "dataplane/policy/acl.hpp"
#include "dataplane/policy/expand.hpp"

namespace mcgw::engine {

class SlotMap;

// Rules of all tenants, plus a default and an isolation slot per tenant.
inline constexpr size_t kMaxPolicySlots = config::kMaxPolicyRules + 2 * 1024;

// A tenant's compiled rules: one classifier over the rules of both
// families, the action and counter slot of each rule by its index.
struct TenantPolicy {
  std::unique_ptr<policy::Classifier> acl;  // null: no rule has an entry
  // Unique in the process for every TenantPolicy compiled (never 0): the
  // workers' verdict caches (policy/verdict_cache.hpp) key on it, so a new
  // rule set never answers from an old one's entries.
  uint64_t serial = 0;
  bool default_deny = false;
  uint16_t default_slot = 0;
  std::vector<uint16_t> slot_of_rule;   // by rule index (the classifier's id)
  std::vector<uint8_t> deny_of_rule;    // by rule index: 1 = deny
  std::vector<policy::RuleView> rules;  // in order
  double build_seconds = 0;
};

// Destinations that belong to other tenants (their static routes, LAN
// subnets and address-plan VPCs) and overlap none of the tenant's own:
// consulted only for a packet the tenant's FIB has no route for.
struct TenantIsolation {
  std::unique_ptr<policy::Classifier> foreign;  // id: index of the other tenant
  uint16_t slot = 0;
  size_t prefixes = 0;
};

// Everything about one tenant's policy for a snapshot.
struct TenantPolicyTables {
  std::shared_ptr<const TenantPolicy> rules;         // null: no rules, default allow
  std::shared_ptr<const TenantIsolation> isolation;  // null: no foreign prefix
  uint16_t isolation_slot = 0;
};

// Compiles every tenant's policy for a build; keeps the classifiers it made
// for the next build and the counter slots by name.
class PolicyBuilder {
 public:
  PolicyBuilder();
  ~PolicyBuilder();
  // Per tenant of `config`, in its order.  Needs the EAL.  Changes nothing
  // until commit() (a build that fails later leaves the slots as they
  // were); fails on a rule set rte_acl refuses, too many entries, or no
  // counter slot left.
  Result<std::vector<TenantPolicyTables>, std::string> build(const config::Config& config);
  // Keeps what the last build made: its counter slots and classifiers.
  void commit();
  // Slots the last commit assigned afresh (their counters restart).
  const std::vector<uint16_t>& freshSlots() const { return fresh_; }

 private:
  std::unique_ptr<SlotMap> slots_, pending_slots_;
  std::vector<uint16_t> fresh_, pending_fresh_;
  std::map<std::string, std::shared_ptr<const TenantPolicy>> pending_rules_;
  std::map<std::string, std::shared_ptr<const TenantIsolation>> pending_isolation_;
  // The last isolation result by tenant, and the text of its inputs.
  std::string isolation_fingerprint_, pending_isolation_fingerprint_;
  std::vector<std::shared_ptr<const TenantIsolation>> isolation_by_tenant_,
      pending_isolation_by_tenant_;
  // Compiled classifiers by the text of their inputs.
  std::map<std::string, std::shared_ptr<const TenantPolicy>> rules_cache_;
  std::map<std::string, std::shared_ptr<const TenantIsolation>> isolation_cache_;
};

}  // namespace mcgw::engine
