// The running fast path: worker lcores polling their RX queues, the
// published ForwardingTables, line health and the counters.
//
// Publication (rte_rcu_qsbr): control swaps the table pointer, then waits
// until every online worker has passed a quiescent point (the end of a poll
// loop, where a worker that sees new tables first flushes its TX buffers);
// only then is the old snapshot freed or a port it referenced closed.
// Forwarding never pauses.  A sleeping worker is offline and not waited for.
#pragma once

#include <atomic>
#include <memory>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "config/result.hpp"
#include "dataplane/engine/counters.hpp"
#include "dataplane/engine/pipeline.hpp"
#include "dataplane/engine/tables.hpp"
#include "dataplane/policy/meter.hpp"

struct rte_rcu_qsbr;
struct rte_mempool;

namespace mcgw::engine {

struct WorkerStatus {
  unsigned index = 0;
  int lcore = -1;  // -1: a registered non-EAL thread (no eal.workers)
  WorkerState state = WorkerState::kPolling;
  uint32_t sleep_us = 0;
  uint64_t polls = 0, busy_polls = 0, busy_cycles = 0, sleeps = 0;
  uint64_t packets = 0;  // received (LAN + WAN)
  std::vector<RxQueue> queues;
};

struct CountersSnapshot {
  std::array<uint64_t, kDropReasonCount> drops{};
  struct PB {
    uint64_t packets = 0, bytes = 0;
  };
  std::array<PB, kMaxLines> line_tx{}, line_rx{};
  std::array<PB, kMaxTunnels> tunnel_tx{}, tunnel_rx{};
  PB lan_rx, lan_tx, wan_rx, wan_tx, to_kernel, from_kernel;
  std::array<uint64_t, kMaxMapped> mapped_out{}, mapped_in{};  // packets, by mapped range slot
  std::vector<uint64_t> policy = std::vector<uint64_t>(kMaxPolicySlots);  // packets, by policy slot
  // By (tenant, line) slot.
  std::vector<PB> usage_tx = std::vector<PB>(kMaxTenantLines),
                  usage_rx = std::vector<PB>(kMaxTenantLines);
  std::vector<uint64_t> meter_yellow = std::vector<uint64_t>(kMaxTenantLines),
                        meter_red = std::vector<uint64_t>(kMaxTenantLines),
                        line_full = std::vector<uint64_t>(kMaxTenantLines);
#define MCGW_SNAPSHOT_MEMBER(name, ...) uint64_t name = 0;
  MCGW_EVENT_COUNTERS(MCGW_SNAPSHOT_MEMBER)
#undef MCGW_SNAPSHOT_MEMBER
  std::vector<WorkerStatus> workers;
};

class Dataplane {
 public:
  // Starts one worker per lcore in `lcores` (EAL worker lcores), or, when
  // the list is empty, `threads` registered threads that the kernel
  // schedules (mcgwd: one, as an empty eal.workers says; tests: more).
  // Workers poll nothing until tables are published.
  static Result<std::unique_ptr<Dataplane>, std::string> start(const std::vector<uint16_t>& lcores,
                                                               rte_mempool* pool,
                                                               unsigned threads = 1);
  ~Dataplane();  // stops the workers
  Dataplane(const Dataplane&) = delete;
  Dataplane& operator=(const Dataplane&) = delete;

  unsigned workers() const { return static_cast<unsigned>(workers_.size()); }

  // Publishes new tables and returns once no worker uses the old ones (which
  // are then freed).  Control thread only.
  void publish(std::unique_ptr<ForwardingTables> tables);
  // The fast path's RCU grace period: returns once every online worker has
  // passed a quiescent point after the call, so nothing a worker read
  // before it (a FIB entry, a next hop, a neighbour slot) is still in use.
  // Any thread but a worker's; what TablesBuilder and TenantFib::apply take
  // as `synchronize`.
  void synchronize();
  // The published tables, for the control thread (which alone replaces them).
  const ForwardingTables* tables() const { return current_.load(std::memory_order_acquire); }

  void setLineUp(uint16_t slot, bool up) { health_.up[slot].store(up, std::memory_order_relaxed); }
  bool lineUp(uint16_t slot) const { return health_.up[slot].load(std::memory_order_relaxed); }
  void setLinePathMtu(uint16_t slot, uint16_t mtu) {
    health_.path_mtu[slot].store(mtu, std::memory_order_relaxed);
  }
  uint16_t linePathMtu(uint16_t slot) const {
    return health_.path_mtu[slot].load(std::memory_order_relaxed);
  }
  void setTunnelMss(uint16_t slot, uint16_t mss4, uint16_t mss6) {
    health_.mss4[slot].store(mss4, std::memory_order_relaxed);
    health_.mss6[slot].store(mss6, std::memory_order_relaxed);
  }
  uint16_t tunnelMss4(uint16_t slot) const {
    return health_.mss4[slot].load(std::memory_order_relaxed);
  }
  uint16_t tunnelMss6(uint16_t slot) const {
    return health_.mss6[slot].load(std::memory_order_relaxed);
  }
  // The virtual MACs (VRRP) the port with DPDK id `port` accepts besides
  // its own: the whole set, replaced at once, seen by the workers without a
  // table publication.  false (nothing changed): more than kMaxVirtualMacs
  // distinct MACs, or a port id >= kMaxPorts.  Keyed by port id: whoever
  // closes a port clears its set first (ports::PortSet does).  Control
  // thread only.
  bool setVirtualMacs(uint16_t port, std::span<const Mac> macs) {
    return health_.virtual_macs.set(port, macs);
  }
  std::vector<Mac> virtualMacs(uint16_t port) const { return health_.virtual_macs.get(port); }
  // Counters of slots that a new line or tunnel took over start from zero.
  void resetLineSlot(uint16_t slot);
  void resetTunnelSlot(uint16_t slot);
  void resetMappedSlot(uint16_t slot);
  void resetPolicySlots(const std::vector<uint16_t>& slots);
  void resetTenantLineSlots(const std::vector<uint16_t>& slots);

  // The tenants' meters by (tenant, line) slot (docs/policy.md,
  // "Bandwidth"): rates the control thread changes live, seen by the
  // workers at their next packet of the slot.
  policy::MeterTable& meters() { return *meters_; }
  const policy::MeterTable& meters() const { return *meters_; }

  CountersSnapshot counters() const;
  // Per worker, per (tenant, line) slot: the packets offered to the slot's
  // meter so far (passed into the line, and red), as the workers count
  // them (no baseline): what the workers' shares of a rate are weighed by.
  std::vector<std::vector<uint64_t>> meterDemand() const;

  // Neighbours the workers found unresolved since the last call.
  std::vector<NeighborMiss> takeMisses();

  // Flow audit: every worker samples 1-in-`every` of the packets it routes
  // into its flow ring (0: off).  Control thread only.
  void setFlowSampling(uint32_t every) {
    health_.flow_sampling.store(every, std::memory_order_relaxed);
  }
  uint32_t flowSampling() const { return health_.flow_sampling.load(std::memory_order_relaxed); }
  // Appends up to `max` samples from the workers' flow rings to `out`;
  // returns how many.  One consumer (the control thread).
  size_t takeFlowSamples(std::vector<FlowSample>& out, size_t max);

 private:
  struct Worker;
  Dataplane() = default;
  static int run(void* worker);
  void stop();

  rte_mempool* pool_ = nullptr;
  rte_rcu_qsbr* qsbr_ = nullptr;
  std::atomic<ForwardingTables*> current_{nullptr};
  std::atomic<bool> stop_{false};
  LiveState health_;
  std::unique_ptr<policy::MeterTable> meters_;
  // Each shaped line's bucket, by slot, shared by its shapers in all
  // workers (policy::Shaper); outlives the workers' pipelines.
  std::unique_ptr<std::array<policy::LineBucket, kMaxLines>> line_buckets_;
  std::vector<std::unique_ptr<Worker>> workers_;
  // Counter values at the time a slot was (re)assigned.
  std::unique_ptr<CountersSnapshot> baseline_;
};

}  // namespace mcgw::engine
