// Policy scenarios of mcgw-bench (issue 19: tenant policy rules): what the
// rule classifier (dataplane/policy/acl.hpp) costs per packet.
//   policy-0    fillKey4 only, over bursts of 32 (the baseline)
//   policy-1k   fillKey4 + Classifier::classify4 with 1,000 rules
//   policy-10k  the same with 10,000 rules
//   policy-cache-1k, policy-cache-10k: fillKey4 + classifyCached4 through a
//               warm per-worker verdict cache (policy/verdict_cache.hpp):
//               the 4,096 packets are 4,096 flows seen again and again
//   policy-miss-1k, policy-miss-10k: the same, but every packet is a flow
//               the cache has not seen (the serial changes every pass):
//               rte_acl plus the cache's own cost
// Memory only (no ports, no mbufs): 4,096 IPv4 TCP/UDP packets in a buffer,
// a share of them inside some rule.  Every answer is checked against the
// plain reference classifier before timing.  Needs the EAL.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mcgw::bench {

struct PolicyBenchOptions {
  std::vector<std::string> scenarios;  // any of policyScenarioNames()
  uint64_t packets = 500'000;          // timed packets per repetition
  unsigned repeat = 3;                 // rounds; each runs every scenario once
  uint64_t seed = 1;
};

bool isPolicyScenario(const std::string& name);
std::vector<std::string> policyScenarioNames();

// Prints the figures to stdout; exits the process (1) on a wrong answer.
void policyBench(const PolicyBenchOptions& o);

}  // namespace mcgw::bench
