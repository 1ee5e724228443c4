// Fast-path counters.  Each worker owns one WorkerCounters and is its only
// writer (relaxed load + store: a plain add, no locked instruction); the
// control plane sums all workers' blocks into one snapshot for status, the
// CLI and (later) /metrics.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>

#include "dataplane/engine/drop_reason.hpp"
#include "dataplane/engine/tables.hpp"

namespace mcgw::engine {

class Counter {
 public:
  void add(uint64_t n = 1) {
    v_.store(v_.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }
  uint64_t get() const { return v_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> v_{0};
};

struct PacketsBytes {
  Counter packets, bytes;
  void add(uint64_t len) {
    packets.add();
    bytes.add(len);
  }
};

enum class WorkerState : uint8_t { kPolling, kPausing, kSleeping, kStopped };

struct alignas(64) WorkerCounters {
  std::array<Counter, kDropReasonCount> drops;
  std::array<PacketsBytes, kMaxLines> line_tx, line_rx;
  std::array<PacketsBytes, kMaxTunnels> tunnel_tx, tunnel_rx;
  PacketsBytes lan_rx, lan_tx, wan_rx, wan_tx;
  PacketsBytes to_kernel, from_kernel;  // the exception path (TAP ports)
  Counter held;                         // waited for a neighbour's MAC
  Counter neighbor_misses;              // resolutions asked of the control plane
  Counter icmp_sent;                    // ICMP errors generated (time exceeded)
  Counter icmp_suppressed;              // ... not sent: rate limit, no source address
  Counter polls, busy_polls;
  Counter busy_cycles;  // TSC cycles of polls that received packets
  Counter sleeps;
  std::atomic<WorkerState> state{WorkerState::kPolling};
  std::atomic<uint32_t> sleep_us{0};  // the current back-off sleep
};

}  // namespace mcgw::engine
