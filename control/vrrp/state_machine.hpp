// One VRRPv3 virtual router's state machine (RFC 9568 §6.4) as pure logic
// over an injected clock: no sockets, no timers of its own, no sleeps.  The
// caller hands it every valid advertisement of its VRID (receive), calls
// expire() at nextDeadline(), and does what the Output asks.
//
// RFC 9568 terms and how they are computed here:
//   Advertisement_Interval  own interval (Params), sent in every advertisement.
//   Active_Adver_Interval   the Active's interval: the own one at start, then
//                           the interval of every advertisement a Backup
//                           accepts (§6.4.2: the Backup adopts it).
//   Skew_Time               ((256 - Priority) * Active_Adver_Interval) / 256
//                           centiseconds, kept exact to the nanosecond
//                           (priority 100, 100 cs: 609.375 ms), with the
//                           effective priority at the time the timer is set.
//   Active_Down_Interval    3 * Active_Adver_Interval + Skew_Time.
//
// Transitions (and what the Output hears, in this order: transitioned, then
// sendAdvert / announce):
//   Initialize --start-->  Backup, Active_Down_Timer = Active_Down_Interval
//                          (priority 255, the address owner: Active at once)
//   Backup  --Active_Down_Timer-->  Active: sendAdvert, announce,
//                          Adver_Timer = Advertisement_Interval
//   Backup  --advert, priority 0-->  Active_Down_Timer = Skew_Time
//   Backup  --advert, preempt off or priority >= own-->  adopt its interval,
//                          Active_Down_Timer = Active_Down_Interval
//   Backup  --advert, preempt on and priority < own-->  discarded (the timer
//                          runs out: the Backup preempts)
//   Active  --Adver_Timer-->  sendAdvert, Adver_Timer = Advertisement_Interval
//   Active  --advert, priority 0-->  sendAdvert at once, Adver_Timer reset
//   Active  --advert, priority > own, or == own from a higher primary
//                          address (IPv4 as numbers, IPv6 bytewise)-->  Backup,
//                          adopt its interval, Active_Down_Timer set
//   Active  --advert, lower-->  discarded
//   any     --shutdown-->  Initialize (from Active: sendAdvert(0) first)
//
// Preempt delay (not in the RFC; keepalived has a similar knob): a Backup
// with preempt on and preempt_delay > 0 that hears a lower-priority Active
// treats its advertisements as valid (resets the down timer, adopts the
// interval) for preempt_delay from the first such advertisement; after that
// it discards them, so it takes over one Active_Down_Interval after the
// delay ends.  An advertisement at or above the own priority, a priority 0,
// or leaving Backup forgets the first one.  So a gateway that comes back
// (and whose tracked objects settle) does not preempt at once.
//
// Tracking: setPriority(now, p) sets the effective priority.  An Active
// sends it in its next advertisement (a Backup with preempt on then takes
// over); a Backup computes Skew_Time with it from its next timer reset on.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "dataplane/proto/vrrp.hpp"

namespace mcgw::vrrp {

using Clock = std::chrono::steady_clock;
using TimePoint = Clock::time_point;
using Duration = std::chrono::nanoseconds;

enum class State : uint8_t { kInitialize, kBackup, kActive };

// "initialize", "backup", "active" (views, JSON).
std::string_view toString(State s);
// "Initialize", "Backup", "Active" (the log line).
std::string_view displayName(State s);

// One centisecond, the unit of VRRP intervals.
inline constexpr Duration kCentisecond = std::chrono::milliseconds(10);

// Skew_Time for a priority and Active_Adver_Interval (centiseconds).
constexpr Duration skewTime(uint8_t priority, uint16_t active_interval_cs) {
  return Duration((256 - static_cast<int64_t>(priority)) * active_interval_cs *
                  kCentisecond.count() / 256);
}
// Active_Down_Interval = 3 * Active_Adver_Interval + Skew_Time.
constexpr Duration downInterval(uint8_t priority, uint16_t active_interval_cs) {
  return 3 * active_interval_cs * kCentisecond + skewTime(priority, active_interval_cs);
}

struct Params {
  uint8_t vrid = 1;
  uint8_t priority = 100;             // configured, 1..254 (255: the address owner)
  uint16_t advert_interval_cs = 100;  // Advertisement_Interval, 1..4095
  bool preempt = true;
  Duration preempt_delay{0};
  proto::IpAddr primary;  // the own primary address (source of the advertisements)
};

// What receive() needs of a valid advertisement for this VRID (the caller
// has checked TTL, checksum, VRID and, in unicast mode, that the sender is a
// peer, and dropped its own advertisements looped back by multicast).
struct Advert {
  uint8_t priority = 0;
  uint16_t interval_cs = 0;  // Max Adver Int
  proto::IpAddr sender;      // the IP source address: the sender's primary address
};

struct Transition {
  State from = State::kInitialize;
  State to = State::kInitialize;
  std::string reason;  // "active down timer expired", "higher priority 200 from 10.1.0.3", ...
  TimePoint at{};
};

// What the caller does for the state machine.  Called synchronously from
// inside start/shutdown/receive/expire/setPriority; must not call back in.
class Output {
 public:
  virtual ~Output() = default;
  // Send an advertisement now with this priority (0 when stopping).
  virtual void sendAdvert(uint8_t priority) = 0;
  // Gratuitous ARP / unsolicited NA for the virtual addresses (on becoming
  // Active; repeating them while Active is the caller's business).
  virtual void announce() = 0;
  // The state changed (called before the advert / announce of a takeover,
  // so the caller can take the virtual MAC first; after the priority 0
  // advert of a shutdown).  nextDeadline() is already the new one.
  virtual void transitioned(const Transition& t) = 0;
};

// How receive() took an advertisement (each has a counter).
enum class Received : uint8_t {
  kIgnored,         // in Initialize
  kAccepted,        // Backup: from an Active it follows; down timer reset
  kPreemptDelayed,  // Backup: lower priority, held as valid during the preempt delay
  kPriorityZero,    // the Active stops (Backup: takeover after Skew_Time; Active: advert sent)
  kDiscardedLower,  // lower priority (Active: or equal from a lower address; Backup: preempting)
  kSteppedDown,     // Active → Backup: higher priority, or equal from a higher address
};

struct Counters {
  uint64_t adverts_sent = 0;  // priority 0 included
  uint64_t adverts_received = 0;
  uint64_t ignored = 0;
  uint64_t accepted = 0;
  uint64_t preempt_delayed = 0;
  uint64_t priority_zero = 0;
  uint64_t discarded_lower = 0;
  uint64_t stepped_down = 0;
  uint64_t transitions = 0;
  uint64_t became_active = 0;
};

class StateMachine {
 public:
  // `out` must outlive the state machine.  Starts in Initialize.
  StateMachine(const Params& params, Output& out);

  // Initialize → Backup (or Active for priority 255); nothing in other states.
  // `reason` is the transition's ("startup", "port lan0 link up").
  void start(TimePoint now, std::string reason = "startup");
  // → Initialize; an Active first sends an advertisement with priority 0.
  void shutdown(TimePoint now, std::string reason = "shutdown");
  Received receive(TimePoint now, const Advert& a);
  // Runs the timer that is due at `now` (nothing if none is).
  void expire(TimePoint now);
  // The effective priority (tracking): 1..254 (0 is taken as 1; 255 only
  // for a configured owner).
  void setPriority(TimePoint now, uint8_t effective);

  // When expire() must be called next; nullopt in Initialize.
  std::optional<TimePoint> nextDeadline() const;

  State state() const { return state_; }
  const Params& params() const { return params_; }
  uint8_t configuredPriority() const { return params_.priority; }
  uint8_t priority() const { return priority_; }  // effective
  // Active_Adver_Interval (the own interval while Active).
  uint16_t activeAdverIntervalCs() const { return active_interval_cs_; }
  // Skew_Time and Active_Down_Interval as used for the running (or last)
  // down timer; while Active, computed from the own interval and priority.
  Duration skew() const { return skew_; }
  Duration activeDownInterval() const { return down_interval_; }
  // The Active's primary address as last seen: the own one while Active;
  // in Backup the sender of the last advertisement heard (nullopt before
  // the first one); nullopt in Initialize.
  std::optional<proto::IpAddr> activeAddress() const;
  const Counters& counters() const { return counters_; }
  const std::optional<Transition>& lastTransition() const { return last_; }

 private:
  // The one place the state changes: logs "vrid N: A -> B (reason)", counts,
  // remembers the transition and tells the Output.
  void changeState(TimePoint now, State to, std::string reason);
  void becomeActive(TimePoint now, std::string reason);
  void becomeBackup(TimePoint now, uint16_t active_interval_cs, std::string reason);
  // Active_Down_Timer = Active_Down_Interval with this Active_Adver_Interval.
  void resetDownTimer(TimePoint now, uint16_t active_interval_cs);
  void sendAdvert(uint8_t priority);

  Params params_;
  Output& out_;
  State state_ = State::kInitialize;
  uint8_t priority_;
  uint16_t active_interval_cs_;
  Duration skew_{0};
  Duration down_interval_{0};
  TimePoint deadline_{};  // Active: Adver_Timer; Backup: Active_Down_Timer
  // Backup: why the down timer would expire, for the transition's reason.
  bool released_ = false;                   // set to Skew_Time by a priority 0
  std::optional<uint8_t> discarded_lower_;  // priority of a lower Active discarded since the reset
  std::optional<TimePoint> preempt_since_;  // first lower-priority advert (preempt delay)
  std::optional<proto::IpAddr> active_seen_;
  Counters counters_;
  std::optional<Transition> last_;
};

}  // namespace mcgw::vrrp
