#include "dataplane/engine/dataplane.hpp"

#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_pause.h>
#include <rte_rcu_qsbr.h>
#include <rte_ring.h>
#include <rte_ring_elem.h>
#include <sys/prctl.h>
#include <time.h>

#include <algorithm>

namespace mcgw::engine {

namespace {

// Back-off of an idle worker: spin for kSpinPolls empty polls, then pause
// for kPausePolls more, then sleep 1, 2, 4, ... µs up to the configured bound.
constexpr unsigned kSpinPolls = 64;
constexpr unsigned kPausePolls = 1024;
constexpr unsigned kPausesPerPoll = 16;
// TX buffers are flushed at least this often while packets arrive.
constexpr uint64_t kDrainUs = 100;

}  // namespace

struct Dataplane::Worker {
  Dataplane* dp = nullptr;
  unsigned index = 0;
  int lcore = -1;
  std::thread thread;  // when lcore < 0
  std::unique_ptr<WorkerCounters> counters = std::make_unique<WorkerCounters>();
  std::atomic<bool> running{false};
  rte_ring* misses = nullptr;  // single producer (the worker), single consumer (control)
  rte_ring* flows = nullptr;   // flow-audit samples: the same
  std::unique_ptr<policy::WorkerMeters> meters;  // its token buckets of every meter
  ~Worker() {
    rte_ring_free(misses);
    rte_ring_free(flows);
  }
};

Result<std::unique_ptr<Dataplane>, std::string> Dataplane::start(
    const std::vector<uint16_t>& lcores, rte_mempool* pool, unsigned threads) {
  std::unique_ptr<Dataplane> dp(new Dataplane());
  dp->pool_ = pool;
  dp->baseline_ = std::make_unique<CountersSnapshot>();
  const unsigned n = lcores.empty() ? std::max(1u, threads) : static_cast<unsigned>(lcores.size());
  const size_t size = rte_rcu_qsbr_get_memsize(n);
  dp->qsbr_ = static_cast<rte_rcu_qsbr*>(rte_zmalloc("mcgw_qsbr", size, RTE_CACHE_LINE_SIZE));
  if (!dp->qsbr_ || rte_rcu_qsbr_init(dp->qsbr_, n) != 0) {
    return unexpected(std::string("cannot set up RCU for the workers"));
  }
  dp->meters_ = std::make_unique<policy::MeterTable>(n, rte_get_tsc_hz(),
                                                     [d = dp.get()] { d->synchronize(); });
  dp->line_buckets_ = std::make_unique<std::array<policy::LineBucket, kMaxLines>>();
  for (auto& b : *dp->line_buckets_) {
    b.tat.store(rte_rdtsc() << 8, std::memory_order_relaxed);  // every line starts idle
  }
  for (unsigned i = 0; i < n; ++i) {
    auto w = std::make_unique<Worker>();
    w->dp = dp.get();
    w->meters = std::make_unique<policy::WorkerMeters>(*dp->meters_, i);
    w->index = i;
    w->lcore = lcores.empty() ? -1 : lcores[i];
    const std::string ring = "mcgw_miss" + std::to_string(i);
    w->misses = rte_ring_create_elem(ring.c_str(), sizeof(NeighborMiss), 256, SOCKET_ID_ANY,
                                     RING_F_SP_ENQ | RING_F_SC_DEQ);
    if (!w->misses) {
      return unexpected(std::string("cannot create the neighbour-miss ring of worker ") +
                        std::to_string(i));
    }
    const std::string flows = "mcgw_flows" + std::to_string(i);
    w->flows = rte_ring_create_elem(flows.c_str(), sizeof(FlowSample), kFlowRingSize, SOCKET_ID_ANY,
                                    RING_F_SP_ENQ | RING_F_SC_DEQ);
    if (!w->flows) {
      return unexpected(std::string("cannot create the flow-audit ring of worker ") +
                        std::to_string(i));
    }
    dp->workers_.push_back(std::move(w));
  }
  for (auto& w : dp->workers_) {
    w->running = true;
    if (w->lcore < 0) {
      w->thread = std::thread([w = w.get()] { run(w); });
    } else if (int rc = rte_eal_remote_launch(run, w.get(), static_cast<unsigned>(w->lcore));
               rc != 0) {
      w->running = false;
      return unexpected("cannot start the worker on lcore " + std::to_string(w->lcore) +
                        " (is it in the EAL core list?)");
    }
  }
  return dp;
}

Dataplane::~Dataplane() {
  stop();
  delete current_.exchange(nullptr);
  rte_free(qsbr_);
}

void Dataplane::stop() {
  stop_.store(true);
  for (auto& w : workers_) {
    if (w->thread.joinable()) {
      w->thread.join();
    } else if (w->lcore >= 0 && w->running) {
      rte_eal_wait_lcore(static_cast<unsigned>(w->lcore));
    }
    w->running = false;
  }
}

void Dataplane::publish(std::unique_ptr<ForwardingTables> tables) {
  ForwardingTables* old = current_.exchange(tables.release(), std::memory_order_acq_rel);
  // Every online worker passes a quiescent point after the swap; a worker
  // that saw the old tables flushes its TX buffers before it does.
  rte_rcu_qsbr_synchronize(qsbr_, RTE_QSBR_THRID_INVALID);
  delete old;
}

void Dataplane::synchronize() {
  rte_rcu_qsbr_synchronize(qsbr_, RTE_QSBR_THRID_INVALID);
}

int Dataplane::run(void* arg) {
  auto* w = static_cast<Worker*>(arg);
  Dataplane* dp = w->dp;
  if (w->lcore < 0) {
    rte_thread_register();  // an lcore id: mempool caches for this thread
  }
  prctl(PR_SET_TIMERSLACK, 1000UL);  // short back-off sleeps stay short (ns)
  WorkerCounters& c = *w->counters;
  {
    Pipeline pipeline(static_cast<uint16_t>(w->index), dp->pool_, w->counters.get(), &dp->health_,
                      w->misses, w->flows, w->meters.get(), dp->line_buckets_->data());
    // The tables of the last poll.  Compared by address and generation: new
    // tables published twice while the worker slept may sit where the old
    // ones were freed.
    const ForwardingTables* last = nullptr;
    uint64_t last_generation = 0;
    rte_rcu_qsbr_thread_register(dp->qsbr_, w->index);
    rte_rcu_qsbr_thread_online(dp->qsbr_, w->index);
    const uint64_t drain_tsc = rte_get_tsc_hz() * kDrainUs / 1000000;
    uint64_t last_drain = rte_rdtsc();
    const uint64_t refresh_tsc = rte_get_tsc_hz();  // every second
    uint64_t last_refresh = last_drain;
    unsigned idle = 0;
    uint32_t sleep_us = 0;
    rte_mbuf* pkts[kBurst];
    while (!dp->stop_.load(std::memory_order_relaxed)) {
      const ForwardingTables* t = dp->current_.load(std::memory_order_acquire);
      const uint64_t start = rte_rdtsc();
      unsigned got = 0;
      uint32_t sleep_max = 0;
      if (t) {
        sleep_max = t->idle_sleep_max_us;
        const bool fresh = t != last || t->generation != last_generation;
        if (fresh) {
          pipeline.adoptShapers(*t);  // first: held packets retried below may be shaped
        }
        if (pipeline.held() && (fresh || rte_rdtsc() - last_drain >= drain_tsc)) {
          pipeline.retryHeld(*t);  // new neighbours, or time to give up on some
        }
        last = t;
        last_generation = t->generation;
        for (const RxQueue& q : t->poll[w->index]) {
          const uint16_t n = rte_eth_rx_burst(q.port, q.queue, pkts, kBurst);
          if (n) {
            pipeline.process(*t, q.port, pkts, n);
            got += n;
          }
        }
        pipeline.serviceShapers(*t);  // shaped lines: what their rates let out now
      }
      const uint64_t now = rte_rdtsc();
      if (w->index == 0 && now - last_refresh >= refresh_tsc) {
        // Idle shaped lines' buckets kept near the TSC (policy::LineBucket).
        for (auto& b : *dp->line_buckets_) {
          policy::refreshLineBucket(b, now);
        }
        last_refresh = now;
      }
      c.polls.add();
      if (got) {
        c.busy_polls.add();
        c.busy_cycles.add(now - start);
      }
      if (pipeline.pending() && (got == 0 || now - last_drain >= drain_tsc)) {
        pipeline.flush();
        last_drain = now;
      }
      if (t != dp->current_.load(std::memory_order_acquire)) {
        pipeline.flush();  // nothing of the old tables' ports stays buffered
        last = nullptr;    // the old tables may be freed after the quiescent point
      }
      // Quiescent only with nothing buffered: a packet buffered under old
      // tables must not outlive the grace period that lets control close
      // its port.  The drain timer bounds the wait to ~100 µs.
      if (!pipeline.pending()) {
        rte_rcu_qsbr_quiescent(dp->qsbr_, w->index);
      }
      if (got) {
        if (idle) {
          idle = 0;
          sleep_us = 0;
          c.sleep_us.store(0, std::memory_order_relaxed);
          c.state.store(WorkerState::kPolling, std::memory_order_relaxed);
        }
        continue;
      }
      ++idle;
      // Held packets wait for their MAC; shaped ones for their time.
      if (idle < kSpinPolls || pipeline.held() || pipeline.shaping()) {
        continue;
      }
      if (sleep_max == 0 || idle < kSpinPolls + kPausePolls) {
        c.state.store(WorkerState::kPausing, std::memory_order_relaxed);
        for (unsigned i = 0; i < kPausesPerPoll; ++i) {
          rte_pause();
        }
        continue;
      }
      sleep_us = std::min(sleep_max, sleep_us ? sleep_us * 2 : 1);
      c.state.store(WorkerState::kSleeping, std::memory_order_relaxed);
      c.sleep_us.store(sleep_us, std::memory_order_relaxed);
      c.sleeps.add();
      rte_rcu_qsbr_thread_offline(dp->qsbr_, w->index);
      timespec ts{0, static_cast<long>(sleep_us) * 1000};
      nanosleep(&ts, nullptr);
      rte_rcu_qsbr_thread_online(dp->qsbr_, w->index);
    }
    pipeline.flush();
    rte_rcu_qsbr_thread_offline(dp->qsbr_, w->index);
    rte_rcu_qsbr_thread_unregister(dp->qsbr_, w->index);
  }
  c.state.store(WorkerState::kStopped);
  if (w->lcore < 0) {
    rte_thread_unregister();
  }
  return 0;
}

CountersSnapshot Dataplane::counters() const {
  CountersSnapshot s;
  auto add = [](CountersSnapshot::PB& to, const PacketsBytes& from) {
    to.packets += from.packets.get();
    to.bytes += from.bytes.get();
  };
  const ForwardingTables* t = tables();
  for (const auto& w : workers_) {
    const WorkerCounters& c = *w->counters;
    for (size_t i = 0; i < kDropReasonCount; ++i) {
      s.drops[i] += c.drops[i].get();
    }
    for (size_t i = 0; i < kMaxLines; ++i) {
      add(s.line_tx[i], c.line_tx[i]);
      add(s.line_rx[i], c.line_rx[i]);
    }
    for (size_t i = 0; i < kMaxTunnels; ++i) {
      add(s.tunnel_tx[i], c.tunnel_tx[i]);
      add(s.tunnel_rx[i], c.tunnel_rx[i]);
    }
    add(s.lan_rx, c.lan_rx);
    add(s.lan_tx, c.lan_tx);
    add(s.wan_rx, c.wan_rx);
    add(s.wan_tx, c.wan_tx);
    add(s.to_kernel, c.to_kernel);
    add(s.from_kernel, c.from_kernel);
    for (size_t i = 0; i < kMaxMapped; ++i) {
      s.mapped_out[i] += c.mapped_out[i].get();
      s.mapped_in[i] += c.mapped_in[i].get();
    }
    for (size_t i = 0; i < kMaxPolicySlots; ++i) {
      s.policy[i] += c.policy[i].get();
    }
    for (size_t i = 0; i < kMaxTenantLines; ++i) {
      add(s.usage_tx[i], c.usage_tx[i]);
      add(s.usage_rx[i], c.usage_rx[i]);
      s.meter_yellow[i] += c.meter_yellow[i].get();
      s.meter_red[i] += c.meter_red[i].get();
      s.line_full[i] += c.line_full[i].get();
    }
#define MCGW_SUM_COUNTER(name, ...) s.name += c.name.get();
    MCGW_EVENT_COUNTERS(MCGW_SUM_COUNTER)
#undef MCGW_SUM_COUNTER
    WorkerStatus ws;
    ws.index = w->index;
    ws.lcore = w->lcore;
    ws.state = c.state.load(std::memory_order_relaxed);
    ws.sleep_us = c.sleep_us.load(std::memory_order_relaxed);
    ws.polls = c.polls.get();
    ws.busy_polls = c.busy_polls.get();
    ws.busy_cycles = c.busy_cycles.get();
    ws.sleeps = c.sleeps.get();
    ws.packets = c.lan_rx.packets.get() + c.wan_rx.packets.get();
    if (t && w->index < t->poll.size()) {
      ws.queues = t->poll[w->index];
    }
    s.workers.push_back(std::move(ws));
  }
  auto sub = [](CountersSnapshot::PB& v, const CountersSnapshot::PB& base) {
    v.packets -= std::min(v.packets, base.packets);
    v.bytes -= std::min(v.bytes, base.bytes);
  };
  for (size_t i = 0; i < kMaxLines; ++i) {
    sub(s.line_tx[i], baseline_->line_tx[i]);
    sub(s.line_rx[i], baseline_->line_rx[i]);
  }
  for (size_t i = 0; i < kMaxTunnels; ++i) {
    sub(s.tunnel_tx[i], baseline_->tunnel_tx[i]);
    sub(s.tunnel_rx[i], baseline_->tunnel_rx[i]);
  }
  for (size_t i = 0; i < kMaxMapped; ++i) {
    s.mapped_out[i] -= std::min(s.mapped_out[i], baseline_->mapped_out[i]);
    s.mapped_in[i] -= std::min(s.mapped_in[i], baseline_->mapped_in[i]);
  }
  for (size_t i = 0; i < kMaxPolicySlots; ++i) {
    s.policy[i] -= std::min(s.policy[i], baseline_->policy[i]);
  }
  for (size_t i = 0; i < kMaxTenantLines; ++i) {
    sub(s.usage_tx[i], baseline_->usage_tx[i]);
    sub(s.usage_rx[i], baseline_->usage_rx[i]);
    s.meter_yellow[i] -= std::min(s.meter_yellow[i], baseline_->meter_yellow[i]);
    s.meter_red[i] -= std::min(s.meter_red[i], baseline_->meter_red[i]);
    s.line_full[i] -= std::min(s.line_full[i], baseline_->line_full[i]);
  }
  return s;
}

std::vector<std::vector<uint64_t>> Dataplane::meterDemand() const {
  std::vector<std::vector<uint64_t>> out;
  out.reserve(workers_.size());
  for (const auto& w : workers_) {
    const WorkerCounters& c = *w->counters;
    std::vector<uint64_t> d(kMaxTenantLines);
    for (size_t i = 0; i < kMaxTenantLines; ++i) {
      d[i] = c.usage_tx[i].packets.get() + c.meter_red[i].get();
    }
    out.push_back(std::move(d));
  }
  return out;
}

std::vector<NeighborMiss> Dataplane::takeMisses() {
  std::vector<NeighborMiss> out;
  NeighborMiss batch[32];
  for (auto& w : workers_) {
    unsigned n;
    while ((n = rte_ring_sc_dequeue_burst_elem(w->misses, batch, sizeof(NeighborMiss), 32,
                                               nullptr)) > 0) {
      out.insert(out.end(), batch, batch + n);
    }
  }
  return out;
}

size_t Dataplane::takeFlowSamples(std::vector<FlowSample>& out, size_t max) {
  size_t taken = 0;
  FlowSample batch[64];
  for (auto& w : workers_) {
    unsigned n;
    while (taken < max &&
           (n = rte_ring_sc_dequeue_burst_elem(
                w->flows, batch, sizeof(FlowSample),
                static_cast<unsigned>(std::min<size_t>(64, max - taken)), nullptr)) > 0) {
      out.insert(out.end(), batch, batch + n);
      taken += n;
    }
  }
  return taken;
}

namespace {

// Moves a slot's baseline up to its current totals: its counters restart.
void rebase(CountersSnapshot::PB& base, const CountersSnapshot::PB& now) {
  base.packets += now.packets;
  base.bytes += now.bytes;
}

}  // namespace

void Dataplane::resetLineSlot(uint16_t slot) {
  CountersSnapshot now = counters();
  rebase(baseline_->line_tx[slot], now.line_tx[slot]);
  rebase(baseline_->line_rx[slot], now.line_rx[slot]);
  health_.path_mtu[slot].store(0, std::memory_order_relaxed);  // the new line's configured MTU
}

void Dataplane::resetTunnelSlot(uint16_t slot) {
  CountersSnapshot now = counters();
  rebase(baseline_->tunnel_tx[slot], now.tunnel_tx[slot]);
  rebase(baseline_->tunnel_rx[slot], now.tunnel_rx[slot]);
}

void Dataplane::resetMappedSlot(uint16_t slot) {
  CountersSnapshot now = counters();
  baseline_->mapped_out[slot] += now.mapped_out[slot];
  baseline_->mapped_in[slot] += now.mapped_in[slot];
}

void Dataplane::resetTenantLineSlots(const std::vector<uint16_t>& slots) {
  if (slots.empty()) {
    return;
  }
  CountersSnapshot now = counters();
  for (uint16_t slot : slots) {
    rebase(baseline_->usage_tx[slot], now.usage_tx[slot]);
    rebase(baseline_->usage_rx[slot], now.usage_rx[slot]);
    baseline_->meter_yellow[slot] += now.meter_yellow[slot];
    baseline_->meter_red[slot] += now.meter_red[slot];
    baseline_->line_full[slot] += now.line_full[slot];
  }
}

void Dataplane::resetPolicySlots(const std::vector<uint16_t>& slots) {
  if (slots.empty()) {
    return;
  }
  CountersSnapshot now = counters();
  for (uint16_t slot : slots) {
    baseline_->policy[slot] += now.policy[slot];
  }
}

}  // namespace mcgw::engine
