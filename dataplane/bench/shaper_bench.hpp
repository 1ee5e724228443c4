// The line-shaping scenario of mcgw-bench (docs/performance.md, "Line
// shaping"): what a packet into a line with a capacity costs a worker, and
// the measurement that chose rte_sched over a hand-written queue.
//
//   shaper:    policy::Shaper, the one the fast path uses: a DPDK ring per
//              priority and a token bucket on the TSC; per burst of 32 each
//              packet enqueued, then dequeue() of up to 32;
//   shaper x2: the same in two threads at once, each its own shaper of one
//              line whose bucket they share (the cost of two workers
//              sending into one line: the bucket's cache line moves
//              between cores), and for comparison the same with a bucket
//              per thread (`x2 own`);
//   rte_sched: DPDK's hierarchical scheduler, which the issue names, with
//              the smallest tree the shaper needs (one subport, one pipe, a
//              traffic class per priority): per burst stamp each packet,
//              enqueue the burst, dequeue up to 32.
//
// 64-byte frames of priorities 0 and 6 mixed, a rate far above what the
// loop offers (every packet leaves: the cost of a line that is not full,
// the common case).  Rounds interleave the two; min..max printed.
#pragma once

#include <cstdint>

namespace mcgw::bench {

struct ShaperBenchOptions {
  uint64_t packets = 4'194'304;  // timed per round and scheme
  unsigned rounds = 3;
};

// Prints the figures; fails the process when a packet is lost.
void shaperBench(const ShaperBenchOptions& o);

}  // namespace mcgw::bench
