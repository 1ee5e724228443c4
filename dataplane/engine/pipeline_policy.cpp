// Tenant policy in the pipeline (docs/policy.md): the policy stage between
// the FIB lookup and the route stage (after the lookup, so that packets to
// the gateway itself are told apart and never dropped by a rule), and the
// isolation check of a packet without a route.  The classifier is dataplane/policy/acl.*; the
// tables are policy_tables.*.
//
// The stage takes the burst's packets of tenants that have rules, a
// (tenant, family) group at a time (a burst is mostly one group: one
// classify call), makes their keys, asks the tenant's classifier (through
// the worker's verdict cache: policy/verdict_cache.hpp), and drops what a
// deny rule or a deny default decides.  Each decision is counted in
// the rule's (or the default's) slot.  Packets of tenants without rules
// cost one load and branch each.
#include <rte_mbuf.h>

#include "dataplane/engine/pipeline.hpp"

namespace mcgw::engine {

namespace {
constexpr size_t kEth = 14;
}  // namespace

unsigned Pipeline::policy(const ForwardingTables& t, Packet* ps, unsigned n) {
  PolicyScratch& s = policy_scratch_;
  // 0: not decided yet; 1: allowed or no rules; 2: denied.
  std::array<uint8_t, kBurst> state{};
  unsigned undecided = 0;
  bool denied = false;
  // The decisions' counters, added once per run of one slot (a burst is
  // mostly one flow's or one rule's packets).
  uint32_t run_slot = UINT32_MAX, run = 0;
  auto count = [&](uint32_t slot) {
    if (slot != run_slot) {
      if (run != 0) {
        counters_->policy[run_slot].add(run);
      }
      run_slot = slot;
      run = 0;
    }
    ++run;
  };
  for (unsigned i = 0; i < n; ++i) {
    const TenantEntry& te = t.tenants[ps[i].tenant];
    // Packets to the gateway itself (BGP, BFD, ping of its address) are
    // not the tenant's traffic: the rules never drop them.
    if (te.policy && (ps[i].nh == TenantFib::kNoRoute ||
                      te.next_hops->at(ps[i].nh).kind != NextHop::Kind::kLocal)) {
      ++undecided;
    } else {
      state[i] = 1;
    }
  }
  while (undecided != 0) {
    // The group of the first undecided packet.
    unsigned first = 0;
    while (state[first] != 0) {
      ++first;
    }
    const uint16_t tenant = ps[first].tenant;
    const bool v6 = ps[first].v6;
    const TenantPolicy& pol = *t.tenants[tenant].policy;
    unsigned k = 0;
    for (unsigned i = first; i < n; ++i) {
      Packet& p = ps[i];
      if (state[i] != 0 || p.tenant != tenant || p.v6 != v6) {
        continue;
      }
      const uint8_t* l3 = rte_pktmbuf_mtod(p.m, const uint8_t*) + kEth;
      bool ok;
      if (!v6) {
        ok = policy::fillKey4(l3, p.l3_len, &s.key4[k]);
        s.keys[k] = reinterpret_cast<const uint8_t*>(&s.key4[k]);
      } else {
        ok = policy::fillKey6(l3, p.l3_len, &s.key6[k]);
        s.keys[k] = reinterpret_cast<const uint8_t*>(&s.key6[k]);
      }
      --undecided;
      if (!ok) {  // an IPv6 extension-header chain that does not parse
        state[i] = 2;
        denied = true;
        drop(p.m, DropReason::kMALFORMED);
        continue;
      }
      state[i] = 1;
      s.at[k++] = static_cast<uint8_t>(i);
    }
    if (k == 0) {
      continue;
    }
    if (pol.acl) {
      // Flows seen before answer from the worker's verdict cache; only the
      // misses go to rte_acl (one call).
      if (!v6) {
        policy::classifyCached4(s.verdicts, pol.serial, *pol.acl, s.keys.data(), s.ids.data(), k);
      } else {
        policy::classifyCached6(s.verdicts, pol.serial, *pol.acl, s.keys.data(), s.ids.data(), k);
      }
    } else {
      std::fill_n(s.ids.begin(), k, policy::kNoMatch);
    }
    for (unsigned j = 0; j < k; ++j) {
      const uint32_t id = s.ids[j];
      bool deny;
      if (id == policy::kNoMatch) {
        deny = pol.default_deny;
        count(pol.default_slot);
      } else {
        deny = pol.deny_of_rule[id] != 0;
        count(pol.slot_of_rule[id]);
      }
      if (deny) {
        state[s.at[j]] = 2;
        denied = true;
        drop(ps[s.at[j]].m, DropReason::kPOLICY_DENY);
      }
    }
  }
  if (run != 0) {
    counters_->policy[run_slot].add(run);
  }
  if (!denied) {  // a malformed packet counts as denied here: it left too
    return n;
  }
  unsigned kept = 0;
  for (unsigned i = 0; i < n; ++i) {
    if (state[i] == 1) {
      ps[kept++] = ps[i];
    }
  }
  return kept;
}

bool Pipeline::isolated(const TenantEntry& te, const uint8_t* l3, uint32_t len, bool v6) {
  PolicyScratch& s = policy_scratch_;
  uint32_t id = policy::kNoMatch;
  if (!v6) {
    policy::fillKey4(l3, len, &s.key4[0]);
    s.keys[0] = reinterpret_cast<const uint8_t*>(&s.key4[0]);
    te.isolation->foreign->classify4(s.keys.data(), &id, 1);
  } else {
    policy::fillKey6(l3, len, &s.key6[0]);
    s.keys[0] = reinterpret_cast<const uint8_t*>(&s.key6[0]);
    te.isolation->foreign->classify6(s.keys.data(), &id, 1);
  }
  return id != policy::kNoMatch;
}

}  // namespace mcgw::engine
