#include "dataplane/engine/policy_tables.hpp"

#include <algorithm>
#include <atomic>
#include <set>

#include "dataplane/engine/tables.hpp"
#include "dataplane/policy/expand.hpp"

namespace mcgw::engine {

namespace {

using config::Family;
using config::IpPrefix;

// A tenant's own destinations: its static routes, LAN subnets and VPCs.
std::vector<std::vector<IpPrefix>> ownPrefixes(const config::Config& c) {
  std::vector<std::vector<IpPrefix>> own(c.tenants.size());
  auto indexOf = [&](const std::string& name) {
    for (size_t i = 0; i < c.tenants.size(); ++i) {
      if (c.tenants[i].name == name) {
        return i;
      }
    }
    return c.tenants.size();
  };
  for (size_t i = 0; i < c.tenants.size(); ++i) {
    for (const auto& r : c.tenants[i].routes) {
      own[i].push_back(r.prefix.network());
    }
  }
  for (const auto& p : c.ports) {
    if (const size_t i = indexOf(p.tenant); p.role == config::PortRole::kLan && i < own.size()) {
      for (const auto& a : p.addresses) {
        own[i].push_back(a.network());
      }
    }
  }
  for (const auto& v : c.address_plan.vpcs) {
    if (const size_t i = indexOf(v.tenant); i < own.size()) {
      for (const auto& p : v.prefixes) {
        own[i].push_back(p.network());
      }
    }
  }
  for (auto& v : own) {
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
  }
  return own;
}

// Whether p overlaps a prefix of `sorted` (it contains p, or p contains it).
bool overlapsAny(const std::vector<IpPrefix>& sorted, const std::set<IpPrefix>& set,
                 const IpPrefix& p) {
  for (int len = 0; len <= p.length; ++len) {  // one of them contains p
    IpPrefix a{p.address, static_cast<uint8_t>(len)};
    if (set.count(a.network())) {
      return true;
    }
  }
  // p contains one of them: the first at or after p's network address.
  auto it = std::lower_bound(sorted.begin(), sorted.end(), p.network());
  return it != sorted.end() && it->address.family == p.address.family && p.contains(it->address);
}

// Beyond this much work (tenants × all tenants' prefixes), isolation is not
// told from no-route: docs/policy.md.
constexpr size_t kIsolationBudget = 500'000;

// The last TenantPolicy::serial given (builds may run on any thread).
std::atomic<uint64_t> policy_serial{0};

}  // namespace

PolicyBuilder::PolicyBuilder() : slots_(std::make_unique<SlotMap>(kMaxPolicySlots)) {}
PolicyBuilder::~PolicyBuilder() = default;

Result<std::vector<TenantPolicyTables>, std::string> PolicyBuilder::build(const config::Config& c) {
  pending_slots_.reset();
  SlotMap slots = *slots_;
  std::vector<std::string> names;
  std::vector<uint16_t> fresh_slots;
  auto slot = [&](const std::string& name) -> std::optional<uint16_t> {
    bool is_fresh = false;
    auto s = slots.assign(name, &is_fresh);
    if (s && is_fresh) {
      fresh_slots.push_back(*s);
    }
    names.push_back(name);
    return s;
  };
  std::map<std::string, std::shared_ptr<const TenantPolicy>> rules_cache;
  std::map<std::string, std::shared_ptr<const TenantIsolation>> isolation_cache;
  std::vector<TenantPolicyTables> out(c.tenants.size());

  for (size_t ti = 0; ti < c.tenants.size(); ++ti) {
    const config::TenantConfig& t = c.tenants[ti];
    auto iso = slot(t.name + "/(isolation)");
    if (!iso) {
      return unexpected("more than " + std::to_string(kMaxPolicySlots) + " policy counters");
    }
    out[ti].isolation_slot = *iso;
    if (t.policy.rules.empty() && !t.policy.default_deny) {
      continue;
    }
    policy::Expanded e = policy::expand(c, t);
    if (!e.too_many.empty()) {
      return unexpected("tenant " + t.name + ": policy: " + e.too_many);
    }
    std::vector<uint16_t> rule_slots;
    for (const auto& r : t.policy.rules) {
      auto s = slot(t.name + "/" + r.name);
      if (!s) {
        return unexpected("more than " + std::to_string(kMaxPolicySlots) + " policy counters");
      }
      rule_slots.push_back(*s);
    }
    auto dflt = slot(t.name + "/(default)");
    if (!dflt) {
      return unexpected("more than " + std::to_string(kMaxPolicySlots) + " policy counters");
    }
    // The slots are part of the key: the cached views carry them.
    std::string key = e.key + std::to_string(*dflt);
    for (uint16_t s : rule_slots) {
      key += "," + std::to_string(s);
    }
    std::shared_ptr<const TenantPolicy> compiled;
    if (auto it = rules_cache_.find(key); it != rules_cache_.end()) {
      compiled = it->second;
    } else {
      auto p = std::make_shared<TenantPolicy>();
      p->serial = ++policy_serial;
      p->default_deny = t.policy.default_deny;
      p->default_slot = *dflt;
      p->slot_of_rule = rule_slots;
      for (const auto& r : t.policy.rules) {
        p->deny_of_rule.push_back(r.deny ? 1 : 0);
      }
      p->rules = std::move(e.views);
      for (size_t i = 0; i < p->rules.size(); ++i) {
        p->rules[i].slot = rule_slots[i];
      }
      if (!e.entries.empty()) {
        auto acl = policy::Classifier::build("policy-" + t.name, e.entries);
        if (!acl) {
          return unexpected("tenant " + t.name + ": policy: " + acl.error());
        }
        p->build_seconds = (*acl)->buildSeconds();
        p->acl = std::move(*acl);
      }
      compiled = std::move(p);
    }
    rules_cache.emplace(key, compiled);
    out[ti].rules = compiled;
  }

  // Isolation: per tenant, the other tenants' destinations that overlap
  // none of its own.
  // Its inputs (each tenant's own prefixes and isolation slot) rarely
  // change between builds (a neighbour, a route from FRR, new SAs): the
  // last result is kept with their text and used again as it is.
  const auto own = ownPrefixes(c);
  size_t all = 0;
  std::string fingerprint;
  for (size_t ti = 0; ti < c.tenants.size(); ++ti) {
    all += own[ti].size();
    fingerprint += c.tenants[ti].name + "@" + std::to_string(out[ti].isolation_slot) + ":";
    for (const auto& p : own[ti]) {
      fingerprint += p.toString() + ",";
    }
    fingerprint += ";";
  }
  pending_isolation_fingerprint_ = fingerprint;
  pending_isolation_by_tenant_.assign(c.tenants.size(), nullptr);
  if (fingerprint == isolation_fingerprint_ && isolation_by_tenant_.size() == c.tenants.size()) {
    for (size_t ti = 0; ti < c.tenants.size(); ++ti) {
      out[ti].isolation = isolation_by_tenant_[ti];
      pending_isolation_by_tenant_[ti] = isolation_by_tenant_[ti];
    }
    isolation_cache = isolation_cache_;
  } else if (all * c.tenants.size() <= kIsolationBudget) {
    for (size_t ti = 0; ti < c.tenants.size(); ++ti) {
      const std::set<IpPrefix> mine(own[ti].begin(), own[ti].end());
      std::vector<policy::Rule> entries;
      std::string key;
      for (size_t ui = 0; ui < c.tenants.size(); ++ui) {
        if (ui == ti) {
          continue;
        }
        for (const auto& p : own[ui]) {
          // A tenant has few prefixes of its own, mostly: compared one by
          // one; many: looked up (ancestors, then the first descendant).
          const bool overlaps = own[ti].size() <= 32
                                    ? std::any_of(own[ti].begin(), own[ti].end(),
                                                  [&](const IpPrefix& o) { return o.overlaps(p); })
                                    : overlapsAny(own[ti], mine, p);
          if (overlaps) {
            continue;
          }
          policy::Rule r;
          r.v6 = p.address.family == Family::V6;
          r.destination = policy::toPrefix(p);
          r.action = policy::Action::kDeny;
          r.id = static_cast<uint32_t>(ui);
          entries.push_back(r);
          key += std::to_string(ui) + ":" + p.toString() + ",";
        }
      }
      if (entries.empty()) {
        continue;
      }
      key += "@" + std::to_string(out[ti].isolation_slot);
      std::shared_ptr<const TenantIsolation> compiled;
      if (auto it = isolation_cache_.find(key); it != isolation_cache_.end()) {
        compiled = it->second;
      } else {
        auto acl = policy::Classifier::build("isolation-" + c.tenants[ti].name, entries);
        if (!acl) {
          // Too many prefixes: this tenant's misses count as no-route.
          continue;
        }
        auto iso = std::make_shared<TenantIsolation>();
        iso->foreign = std::move(*acl);
        iso->slot = out[ti].isolation_slot;
        iso->prefixes = entries.size();
        compiled = std::move(iso);
      }
      isolation_cache.emplace(key, compiled);
      out[ti].isolation = compiled;
      pending_isolation_by_tenant_[ti] = compiled;
    }
  }

  slots.retain(names);
  pending_slots_ = std::make_unique<SlotMap>(std::move(slots));
  pending_fresh_ = std::move(fresh_slots);
  pending_rules_ = std::move(rules_cache);
  pending_isolation_ = std::move(isolation_cache);
  return out;
}

void PolicyBuilder::commit() {
  if (!pending_slots_) {
    return;
  }
  slots_ = std::move(pending_slots_);
  fresh_ = std::move(pending_fresh_);
  rules_cache_ = std::move(pending_rules_);
  isolation_cache_ = std::move(pending_isolation_);
  isolation_fingerprint_ = std::move(pending_isolation_fingerprint_);
  isolation_by_tenant_ = std::move(pending_isolation_by_tenant_);
}

}  // namespace mcgw::engine
