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

// The plain event counters, one list for the workers' counters, the
// snapshot, the aggregation and the counters JSON:
// X(name, JSON group, JSON key, what it counts).  `mcgwctl show counters
// --json` shows each as counters[group][key].
#define MCGW_EVENT_COUNTERS(X)                                                                     \
  X(held, "neighbors", "held_packets", "packets that waited for a neighbour's MAC")                \
  X(neighbor_misses, "neighbors", "resolutions_asked", "resolutions asked of the control plane")   \
  X(icmp_sent, "icmp", "sent", "ICMP errors generated (all kinds)")                                \
  X(icmp_time_exceeded, "icmp", "time_exceeded", "ICMP / ICMPv6 time exceeded sent")               \
  X(icmp_frag_needed, "icmp", "frag_needed",                                                       \
    "ICMP fragmentation needed sent (IPv4 DF packets too big)")                                    \
  X(icmp_packet_too_big, "icmp", "packet_too_big", "ICMPv6 Packet Too Big sent")                   \
  X(icmp_rate_limited, "icmp", "rate_limited",                                                     \
    "ICMP errors not sent: the per-source or worker rate limit")                                   \
  X(icmp_not_allowed, "icmp", "not_allowed",                                                       \
    "ICMP errors not sent: about an ICMP error, a fragment, multicast ...")                        \
  X(icmp_suppressed, "icmp", "suppressed", "ICMP errors not sent: no source address or no buffer") \
  X(fragmented, "fragmentation", "packets",                                                        \
    "IPv4 packets without DF fragmented before encapsulation or on a LAN port")                    \
  X(fragments, "fragmentation", "fragments", "fragments those made")                               \
  X(mss_clamped, "mss", "clamped", "SYN / SYN-ACK whose MSS option was lowered")                   \
  X(mss_below, "mss", "already_below",                                                             \
    "SYN / SYN-ACK whose MSS was already at or below the clamp")                                   \
  X(mss_no_option, "mss", "no_option", "SYN / SYN-ACK without an MSS option (passed unchanged)")   \
  X(mss_inserted, "mss", "inserted", "SYN / SYN-ACK that got an MSS option inserted (mss-insert)") \
  X(mss_malformed, "mss", "malformed",                                                             \
    "SYN / SYN-ACK with malformed TCP options (forwarded unchanged)")                              \
  X(virtual_mac, "vrrp", "virtual_mac_frames",                                                     \
    "unicast frames to a port's active virtual MAC, handled as if to the port's MAC")              \
  X(stand_in, "sites", "stand_in",                                                                 \
    "packets sent to another gateway of the peer's site: no line of the routed one was usable")    \
  X(flow_samples, "flow_audit", "samples",                                                         \
    "packets sampled for flow audit (1-in-N of those routed into or out of a tunnel)")             \
  X(flow_ring_full, "flow_audit", "ring_full",                                                     \
    "flow-audit samples dropped: the worker's ring to the control plane was full")                 \
  X(shaped, "shaping", "queued", "packets queued in a shaped line's priority queues")              \
  X(shaper_failed, "shaping", "failed",                                                            \
    "shapers a worker could not create (no memory): that line's packets left unshaped")

enum class WorkerState : uint8_t { kPolling, kPausing, kSleeping, kStopped };
inline constexpr WorkerState kWorkerStates[] = {WorkerState::kPolling, WorkerState::kPausing,
                                                WorkerState::kSleeping, WorkerState::kStopped};

// "polling", "pausing", "sleeping", "stopped".
constexpr const char* toString(WorkerState s) {
  switch (s) {
    case WorkerState::kPolling:
      return "polling";
    case WorkerState::kPausing:
      return "pausing";
    case WorkerState::kSleeping:
      return "sleeping";
    case WorkerState::kStopped:
      return "stopped";
  }
  return "unknown";
}

struct alignas(64) WorkerCounters {
  std::array<Counter, kDropReasonCount> drops;
  std::array<PacketsBytes, kMaxLines> line_tx, line_rx;
  std::array<PacketsBytes, kMaxTunnels> tunnel_tx, tunnel_rx;
  PacketsBytes lan_rx, lan_tx, wan_rx, wan_tx;
  PacketsBytes to_kernel, from_kernel;  // the exception path (TAP ports)
  // Per mapped range (its slot): packets whose source was mapped on the way
  // into a tunnel, and whose destination was unmapped on the way out of one.
  std::array<Counter, kMaxMapped> mapped_out, mapped_in;
  // Per policy counter slot (policy_tables.hpp): packets a rule, a tenant's
  // default or its isolation decided.
  std::array<Counter, kMaxPolicySlots> policy;
  // Per (tenant, line) slot: the tenant's packets and bytes into (tx) and
  // out of (rx) the line, as the line counters count them (the tunnel
  // packet on the wire, Ethernet header included), and the packets its
  // meter coloured yellow (remarked) and red (dropped), and those dropped
  // because the queue of its priority on a shaped line was full.
  std::array<PacketsBytes, kMaxTenantLines> usage_tx, usage_rx;
  std::array<Counter, kMaxTenantLines> meter_yellow, meter_red, line_full;
#define MCGW_COUNTER_MEMBER(name, ...) Counter name;
  MCGW_EVENT_COUNTERS(MCGW_COUNTER_MEMBER)
#undef MCGW_COUNTER_MEMBER
  Counter polls, busy_polls;
  Counter busy_cycles;  // TSC cycles of polls that received packets
  Counter sleeps;
  std::atomic<WorkerState> state{WorkerState::kPolling};
  std::atomic<uint32_t> sleep_us{0};  // the current back-off sleep
};

}  // namespace mcgw::engine
