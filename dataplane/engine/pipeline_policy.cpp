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
//
// Flow audit: the denied packets are dropped at the end of the stage, so
// that while flow audit samples, sampleDenied can describe them first
// (they count down with the packets the route stage samples: one decision
// per packet).  With it off, that is one branch per burst with a deny.
#include <rte_cycles.h>
#include <rte_mbuf.h>
#include <rte_ring.h>
#include <rte_ring_elem.h>

#include <algorithm>

#include "dataplane/engine/pipeline.hpp"

namespace mcgw::engine {

namespace {
constexpr size_t kEth = 14;
}  // namespace

unsigned Pipeline::policy(const ForwardingTables& t, Packet* ps, unsigned n, uint32_t every) {
  PolicyScratch& s = policy_scratch_;
  // 0: not decided yet; 1: allowed or no rules; 2: denied (dropped at the
  // end); 3: dropped (malformed).
  std::array<uint8_t, kBurst> state{};
  std::array<uint16_t, kBurst> rule;  // the deciding slot, of denied packets only
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
        state[i] = 3;
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
      uint16_t slot;
      if (id == policy::kNoMatch) {
        deny = pol.default_deny;
        slot = pol.default_slot;
      } else {
        deny = pol.deny_of_rule[id] != 0;
        slot = pol.slot_of_rule[id];
      }
      count(slot);
      if (deny) {
        state[s.at[j]] = 2;
        rule[s.at[j]] = slot;
        denied = true;
      }
    }
  }
  if (run != 0) {
    counters_->policy[run_slot].add(run);
  }
  if (!denied) {  // a malformed packet counts as denied here: it left too
    return n;
  }
  if (every != 0) [[unlikely]] {
    sampleDenied(t, ps, n, state.data(), rule.data(), every);
  }
  unsigned kept = 0;
  for (unsigned i = 0; i < n; ++i) {
    if (state[i] == 1) {
      ps[kept++] = ps[i];
    } else if (state[i] == 2) {
      drop(ps[i].m, DropReason::kPOLICY_DENY);
    }
  }
  return kept;
}

// The denied packets' part of flow audit's countdown (the route stage
// counts down over the packets that remain): every `every`th is described
// as routeSampled describes a packet, with the deny and its rule's slot; out
// of a tunnel with the line it came in on, from a LAN port with no line.
void Pipeline::sampleDenied(const ForwardingTables& t, const Packet* ps, unsigned n,
                            const uint8_t* state, const uint16_t* rules, uint32_t every) {
  sample_left_ = std::min(sample_left_, every);
  uint64_t now = 0;  // the TSC, read for the burst's first sample
  for (unsigned i = 0; i < n; ++i) {
    if (state[i] != 2 || --sample_left_ != 0) {
      continue;
    }
    sample_left_ = every;
    if (now == 0) {
      now = rte_rdtsc();
    }
    const Packet& p = ps[i];
    FlowSample f{};
    f.tsc = now;
    f.tenant = p.tenant;
    f.vni = t.tenants[p.tenant].vni;
    fillFlowSample(f, rte_pktmbuf_mtod(p.m, const uint8_t*) + kEth, p.l3_len, p.v6);
    const bool from_tunnel = p.origin == Origin::kTunnel;
    f.direction =
        static_cast<uint8_t>(from_tunnel ? FlowDirection::kFromTunnel : FlowDirection::kToTunnel);
    f.peer = from_tunnel ? static_cast<uint16_t>(p.hop >> 16) : kNoPeer;
    f.line = from_tunnel ? static_cast<uint16_t>(p.hop) : kNoLine;
    f.status = static_cast<uint8_t>(FlowStatus::kPolicyDeny);
    f.rule = rules[i];
    if (flows_ && rte_ring_sp_enqueue_elem(flows_, &f, sizeof(f)) == 0) {
      counters_->flow_samples.add();
    } else {
      counters_->flow_ring_full.add();
    }
  }
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
