// The metering scenario of mcgw-bench (docs/performance.md, "Metering"):
// what tenant bandwidth metering adds per packet in a worker's burst loop.
//
//   meter-off: for each burst of 32, one TSC value, then per packet
//              WorkerMeters::check() on an unmetered slot (green: the cost a
//              pipeline pays with metering configured off);
//   meter:     the same over slots with RFC 2698 profiles whose rates give
//              about a third of the bytes each colour, yellow packets
//              remarked (IPv4 with the checksum update, or IPv6), red ones
//              counted as dropped.
//
// The packets are headers in memory (half IPv4, half IPv6, 64 to 1500 bytes,
// 64 slots); the TSC value of each burst advances as if the packets arrived
// at the offered rate (the check's cost does not depend on where the value
// comes from; a worker reads the TSC once per burst).  The rounds interleave
// the two, and each scenario's min..max over the rounds is printed.  Needs
// the EAL (the TSC rate).
#pragma once

#include <cstdint>

namespace mcgw::bench {

struct MeterBenchOptions {
  uint64_t packets = 4'194'304;  // timed per round and scenario
  unsigned rounds = 3;
  uint32_t slots = 64;
  uint64_t seed = 1;
};

// Prints the figures; fails the process when a check goes wrong (a colour
// share far from a third, a remarked IPv4 header whose checksum is wrong).
void meterBench(const MeterBenchOptions& o);

}  // namespace mcgw::bench
