// Bandwidth meters of tenant policy (docs/policy.md, "Bandwidth"): RFC 2698
// two-rate three-colour marking, colour-blind, on DPDK's rte_meter, with
// rates that the control plane changes live.
//
//   control thread                          worker w (one per lcore)
//   MeterTable::set(slot, Rate) ──publish──► WorkerMeters::check(slot, tsc, bytes)
//     a new immutable Profile per slot        one acquire load of the slot's
//     (atomic pointer), the old one freed     Profile; its own token buckets
//     after a grace period (Synchronize)      (rte_meter_trtcm) per slot, no
//                                             atomics, locks or allocation
//
// * Live change.  rte_meter_trtcm_color_blind_check() takes the profile
//   (rates, bucket sizes) apart from the state (tokens, times) and clamps the
//   tokens to the bucket sizes of the profile it is given.  So a new rate is a
//   new profile: the next packet a worker meters uses it, its tokens are kept
//   (not refilled: no burst beyond the buckets), and smaller buckets clamp
//   them.  A slot that was unmetered (or cleared) and is set starts with full
//   buckets: each Profile carries an epoch that changes only then.
// * Rates shared among workers.  Each worker meters its own packets of a slot
//   with its own buckets, so a Profile holds one token-bucket profile per
//   worker: by default each worker gets rate / N and bucket / N (at least one
//   maximum-size frame: with N workers the slot's total burst may exceed its
//   configured burst by up to N x 1518 bytes when the buckets are small).
//   Exact when the slot's traffic spreads evenly over the workers (many flows
//   through RSS); a single flow, which RSS keeps on one worker, gets 1/N of
//   the rate.  apply() also takes per-worker weights: the control plane
//   moves the shares towards the workers that carry the slot's traffic
//   (control/policy/bandwidth.cpp, from the per-worker counters, every
//   second) without touching the fast path; a shared bucket would need an
//   atomic per packet on a cache line every worker writes.
// * The token-bucket profile.  DPDK's rte_meter_trtcm_profile_config() takes
//   the TSC rate from the EAL (before rte_eal_init it is 0, and the profile
//   it gives divides by zero) and updates the buckets every 100 to 200
//   cycles, a period rounded down to whole cycles: up to 1 % more than the
//   configured rate.  makeTrtcmProfile() fills the same public structure for
//   a given TSC rate (tests use a fixed one, without the EAL), with an update
//   period of about 65,536 cycles (25 us at 2.6 GHz; bytes per update at most
//   a quarter of the bucket), rounded to the nearest cycle: the rate is within
//   0.0015 % (0.5 / 32,768) whenever the bucket holds 4 updates of 32,768
//   cycles (at 2 GHz and 100 Gbit/s: a bucket of 820 kB or more; smaller
//   buckets get shorter periods and DPDK's precision at worst).
// * The check.  rte_meter_trtcm_color_blind_check() divides the time since
//   the last update by each bucket's period: two 64-bit divisions per packet.
//   check() first looks whether a whole period passed for either bucket; if
//   not (a slot's packets within one burst, or closer than the period) it
//   computes what DPDK's function gives then (clamp, colour, tokens taken)
//   without dividing; else it calls DPDK's function.

#pragma once

#include <rte_meter.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "config/result.hpp"
#include "config/units.hpp"

namespace mcgw::policy {

// ------------------------------------------------------------ rates and sizes

// Rates and sizes as the config and the API spell them: config/units.hpp.
using config::formatRate;
using config::kMaxRateBits;
using config::kMaxSizeBytes;
using config::kMinBurstBytes;
using config::kMinRateBits;
using config::parseRate;
using config::parseSize;

// A two-rate three-colour meter's parameters (RFC 2698), in bytes as
// rte_meter counts them: rates in bytes per second, bursts in bytes.
struct Rate {
  uint64_t cir = 0;  // committed information rate, bytes per second
  uint64_t pir = 0;  // peak information rate, bytes per second
  uint64_t cbs = 0;  // committed burst size, bytes
  uint64_t pbs = 0;  // peak burst size, bytes

  // Checks 0 < cir <= pir <= kMaxRateBits / 8 and kMinBurstBytes <= cbs, pbs
  // <= kMaxSizeBytes; the error names the field and both values.
  static Result<Rate, std::string> make(uint64_t cir, uint64_t pir, uint64_t cbs, uint64_t pbs);
  // From rates in bits per second (as parseRate gives them, rounded down to
  // whole bytes); a burst of 0 takes the default: kDefaultBurstMs at the
  // rate, at least kMinBurstBytes, at most kMaxSizeBytes; the peak burst's
  // default is at least the committed burst.
  //
  // 80 ms, measured: TCP (cubic) through a policer with 10 ms of credit
  // reached 46–47 of 50 Mbit/s and 180–184 of 200 (goodput), with 80 ms
  // 48.0–48.2 and 187–194: the lab's "within 5 %" (lab.bandwidth).
  static constexpr uint64_t kDefaultBurstMs = 80;
  static Result<Rate, std::string> fromBits(uint64_t cir_bits, uint64_t pir_bits, uint64_t cbs = 0,
                                            uint64_t pbs = 0);
  static uint64_t defaultBurst(uint64_t rate_bytes);
  bool operator==(const Rate&) const = default;
};

// The colours, as rte_meter returns them.
enum class Colour : uint8_t {
  kGreen = RTE_COLOR_GREEN,
  kYellow = RTE_COLOR_YELLOW,
  kRed = RTE_COLOR_RED
};

// rte_meter's token-bucket profile for `rate` and a TSC of `tsc_hz` (see the
// top of this file); `rate` must be valid (Rate::make).
rte_meter_trtcm_profile makeTrtcmProfile(const Rate& rate, uint64_t tsc_hz);

// ------------------------------------------------------------ the meter table

class WorkerMeters;

// The slots' published profiles.  One control thread at a time calls set,
// clear and apply; workers read through their WorkerMeters.
class MeterTable {
 public:
  // A slot: what the policy config maps a (tenant, line) pair to.
  static constexpr uint32_t kMaxMeters = 8192;  // engine::kMaxTenantLines
  // Waits until every worker has passed a quiescent point (the fast path's
  // RCU grace period: Dataplane::synchronize).  Must not run on a worker.
  using Synchronize = std::function<void()>;

  // workers: how many WorkerMeters there will be (indexes 0..workers-1);
  // tsc_hz: the TSC rate the workers' timestamps count (rte_get_tsc_hz()).
  MeterTable(unsigned workers, uint64_t tsc_hz, Synchronize synchronize);
  // Frees the profiles: no worker may check any more.
  ~MeterTable();
  MeterTable(const MeterTable&) = delete;
  MeterTable& operator=(const MeterTable&) = delete;

  struct Change {
    uint32_t slot = 0;
    std::optional<Rate> rate;  // nullopt: unmetered (clear)
    // Each worker's share of the rate and bursts, in proportion (empty:
    // equal shares); workers() entries, at least one of them non-zero.  A
    // worker whose weight is 0 gets the smallest profile (1 byte/s, buckets
    // of one frame): its packets are mostly red.
    std::vector<uint32_t> weights;
  };
  // Checks every change (slot, rate, weights) before publishing any; then
  // publishes them all, waits for one grace period and frees the profiles the
  // workers no longer see.  An error changes nothing.
  Result<bool, std::string> apply(std::span<const Change> changes);
  Result<bool, std::string> set(uint32_t slot, const Rate& rate);
  Result<bool, std::string> clear(uint32_t slot);
  // What the slot meters now (control side).
  std::optional<Rate> rate(uint32_t slot) const;
  // The share of the slot's rate and bursts one worker meters with
  // (control side).
  std::optional<Rate> workerRate(uint32_t slot, unsigned worker) const;

  unsigned workers() const { return workers_; }
  uint64_t tscHz() const { return tsc_hz_; }

 private:
  friend class WorkerMeters;
  // One worker's token buckets for a slot.  refill_cycles: an idle time
  // after which both buckets are certainly full again (the state is then
  // reset to full, which is what rte_meter would compute, and n x bytes per
  // period cannot overflow after a very long idle time).
  struct WorkerProfile {
    rte_meter_trtcm_profile trtcm;
    uint64_t refill_cycles;
    Rate rate;  // this worker's share (control side)
  };
  // Immutable once published; `per_worker` points just behind it, in the
  // same allocation.
  struct alignas(64) Profile {
    uint64_t epoch;  // changes when a slot goes from unmetered to metered
    Rate rate;
    WorkerProfile* per_worker;
  };
  static Profile* newProfile(unsigned workers);
  static void freeProfile(Profile* p);

  unsigned workers_;
  uint64_t tsc_hz_;
  Synchronize synchronize_;
  uint64_t next_epoch_ = 1;
  std::unique_ptr<std::atomic<Profile*>[]> slots_;
};

// One worker's meter state: token buckets for every slot, written only by
// that worker.
class WorkerMeters {
 public:
  WorkerMeters(const MeterTable& table, unsigned worker);
  WorkerMeters(const WorkerMeters&) = delete;
  WorkerMeters& operator=(const WorkerMeters&) = delete;

  // The colour of a packet of `bytes` (the IP packet, as RFC 2698 and
  // rte_meter count) at TSC `tsc` for `slot` (< kMaxMeters, not checked);
  // green for an unmetered slot (one load and one branch).  A worker's TSC
  // values must not go back (a step back resets its buckets to full).
  // Inlined into the caller's burst loop: the unmetered case; a metered
  // slot takes one call.
  [[gnu::always_inline]] Colour check(uint32_t slot, uint64_t tsc, uint32_t bytes) {
    const MeterTable::Profile* p = slots_[slot].load(std::memory_order_acquire);
    if (p == nullptr) {
      return Colour::kGreen;
    }
    return meter(*p, slot, tsc, bytes);
  }

 private:
  struct alignas(64) State {
    rte_meter_trtcm trtcm;
    uint64_t epoch = 0;  // of the profile the buckets belong to; 0: none
  };
  static void fill(State& s, const MeterTable::WorkerProfile& wp, uint64_t epoch, uint64_t tsc);
  // check() of a metered slot (out of line: inlined into a burst loop, the
  // compiler lays its branches out worse, measured with mcgw-bench meter).
  [[gnu::noinline]] Colour meter(const MeterTable::Profile& p, uint32_t slot, uint64_t tsc,
                                 uint32_t bytes);

  const std::atomic<MeterTable::Profile*>* slots_;
  unsigned worker_;
  std::unique_ptr<State[]> state_;
};

// ------------------------------------------------------------ DSCP remarking

// Sets the DSCP of the IPv4 header at `ip` (20 bytes or more, not checked),
// keeping the ECN bits, and updates the header checksum incrementally (RFC
// 1624).  Nothing is written when the DSCP is already `dscp` (0..63).
inline void remarkDscp4(uint8_t* ip, uint8_t dscp);
// Sets the DSCP of the IPv6 header at `ip` (its traffic class's upper six
// bits), keeping the ECN bits and the flow label.  IPv6 has no header
// checksum, and the transport checksums do not cover the traffic class.
inline void remarkDscp6(uint8_t* ip, uint8_t dscp);

}  // namespace mcgw::policy

#include "dataplane/proto/checksum.hpp"

namespace mcgw::policy {

inline void remarkDscp4(uint8_t* ip, uint8_t dscp) {
  const uint8_t tos = ip[1];
  const uint8_t new_tos = static_cast<uint8_t>((dscp << 2) | (tos & 0x03));
  if (new_tos == tos) {
    return;
  }
  ip[1] = new_tos;
  // The first 16-bit word is version/IHL and TOS.
  const uint16_t before = static_cast<uint16_t>(ip[0] << 8 | tos);
  const uint16_t after = static_cast<uint16_t>(ip[0] << 8 | new_tos);
  const uint16_t checksum = static_cast<uint16_t>(ip[10] << 8 | ip[11]);
  const uint16_t updated = proto::checksumUpdate16(checksum, before, after);
  ip[10] = static_cast<uint8_t>(updated >> 8);
  ip[11] = static_cast<uint8_t>(updated);
}

inline void remarkDscp6(uint8_t* ip, uint8_t dscp) {
  // Version (4) | traffic class (8) | flow label (20): the DSCP's upper four
  // bits are the low nibble of byte 0, its lower two the top of byte 1.
  ip[0] = static_cast<uint8_t>((ip[0] & 0xf0) | (dscp >> 2));
  ip[1] = static_cast<uint8_t>((ip[1] & 0x3f) | ((dscp & 0x03) << 6));
}

}  // namespace mcgw::policy
