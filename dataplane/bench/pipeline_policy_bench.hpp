// Whole-pipeline policy scenarios of mcgw-bench (issue 19; docs/performance.md,
// "Tenant policy (issue 19)", "Whole pipeline"): the encap scenario (LAN in,
// IPv4 route, VXLAN out to peer B) through the real engine::Pipeline over
// tables built by the real engine::TablesBuilder, the tenant with
//   pipeline-policy-0    no policy (the baseline; always runs)
//   pipeline-policy-1k   1,000 policy rules (996 deny rules the traffic does
//                        not match, 4 allow rules it does; default deny)
//   pipeline-policy-10k  the same with 10,000 rules
//   pipeline-meter       no policy, a meter on the tenant's line (peer-b/b1)
//                        whose rate makes every packet green
//   pipeline-meter-red   the same meter at 2/3 of the offered rate (the
//                        packets fed at a fixed pace, untimed): about a
//                        third of the packets red (dropped)
// Every scenario passes a policy::WorkerMeters to the Pipeline, as the
// daemon's workers do (unmetered slots cost a load and a branch).  The
// traffic is the encap scenario's: 4,096 UDP flows (one source, 4,096
// random destinations in 10.0.0.0/8, source ports 1024..5119, destination
// port 5001) fed in the same order again and again, so the verdict cache
// sees each flow once per 4,096 packets.  Output is captured and checked
// before timing; after each timed run the counters must account for every
// packet.  Needs the EAL with the vdevs net_null0 and net_null1.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace mcgw::bench {

struct PipelinePolicyBenchOptions {
  std::vector<std::string> scenarios;  // any of pipelinePolicyScenarioNames()
  uint64_t packets = 500'000;          // timed packets per run
  unsigned repeat = 5;                 // rounds; each runs every scenario once
  std::vector<size_t> sizes{64};       // inner frame sizes (Ethernet header, no FCS)
  uint64_t seed = 1;
};

bool isPipelinePolicyScenario(const std::string& name);
std::vector<std::string> pipelinePolicyScenarioNames();

// Prints the figures to stdout; exits the process (1) when a check fails.
void pipelinePolicyBench(const PipelinePolicyBenchOptions& o);

}  // namespace mcgw::bench
