#include "control/vrrp/state_machine.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <utility>

namespace mcgw::vrrp {

std::string_view toString(State s) {
  switch (s) {
    case State::kInitialize:
      return "initialize";
    case State::kBackup:
      return "backup";
    case State::kActive:
      return "active";
  }
  return "unknown";
}

std::string_view displayName(State s) {
  switch (s) {
    case State::kInitialize:
      return "Initialize";
    case State::kBackup:
      return "Backup";
    case State::kActive:
      return "Active";
  }
  return "Unknown";
}

StateMachine::StateMachine(const Params& params, Output& out)
    : params_(params),
      out_(out),
      priority_(params.priority),
      active_interval_cs_(params.advert_interval_cs) {}

void StateMachine::changeState(TimePoint now, State to, std::string reason) {
  Transition t{state_, to, std::move(reason), now};
  spdlog::info("vrid {}: {} -> {} ({})", params_.vrid, displayName(t.from), displayName(t.to),
               t.reason);
  state_ = to;
  ++counters_.transitions;
  if (to == State::kActive) {
    ++counters_.became_active;
  }
  last_ = t;
  out_.transitioned(*last_);
}

void StateMachine::sendAdvert(uint8_t priority) {
  ++counters_.adverts_sent;
  out_.sendAdvert(priority);
}

void StateMachine::resetDownTimer(TimePoint now, uint16_t active_interval_cs) {
  active_interval_cs_ = active_interval_cs;
  skew_ = skewTime(priority_, active_interval_cs_);
  down_interval_ = downInterval(priority_, active_interval_cs_);
  deadline_ = now + down_interval_;
  released_ = false;
  discarded_lower_.reset();
}

void StateMachine::becomeActive(TimePoint now, std::string reason) {
  preempt_since_.reset();
  released_ = false;
  discarded_lower_.reset();
  // While Active the Active's interval is the own one (what the views show).
  active_interval_cs_ = params_.advert_interval_cs;
  skew_ = skewTime(priority_, active_interval_cs_);
  down_interval_ = downInterval(priority_, active_interval_cs_);
  // Timers are set before the Output hears of the change, so that it can
  // read nextDeadline() there.
  deadline_ = now + params_.advert_interval_cs * kCentisecond;
  changeState(now, State::kActive, std::move(reason));
  sendAdvert(priority_);
  out_.announce();
}

void StateMachine::becomeBackup(TimePoint now, uint16_t active_interval_cs, std::string reason) {
  preempt_since_.reset();
  resetDownTimer(now, active_interval_cs);
  changeState(now, State::kBackup, std::move(reason));
}

void StateMachine::start(TimePoint now, std::string reason) {
  if (state_ != State::kInitialize) {
    return;
  }
  active_seen_.reset();
  if (priority_ == 255) {
    becomeActive(now, "startup as the address owner");
    return;
  }
  becomeBackup(now, params_.advert_interval_cs, std::move(reason));
}

void StateMachine::shutdown(TimePoint now, std::string reason) {
  if (state_ == State::kInitialize) {
    return;
  }
  if (state_ == State::kActive) {
    // The Backups take over after their Skew_Time instead of the whole
    // Active_Down_Interval.  Sent before the transition, while the caller
    // still holds the virtual MAC.
    sendAdvert(0);
  }
  changeState(now, State::kInitialize, std::move(reason));
  preempt_since_.reset();
  active_seen_.reset();
}

Received StateMachine::receive(TimePoint now, const Advert& a) {
  ++counters_.adverts_received;
  if (state_ == State::kInitialize) {
    ++counters_.ignored;
    return Received::kIgnored;
  }
  if (state_ == State::kBackup) {
    active_seen_ = a.sender;
    if (a.priority == 0) {
      // The Active stops: take over after Skew_Time, not Active_Down_Interval.
      ++counters_.priority_zero;
      preempt_since_.reset();
      skew_ = skewTime(priority_, active_interval_cs_);
      deadline_ = now + skew_;
      released_ = true;
      discarded_lower_.reset();
      return Received::kPriorityZero;
    }
    if (!params_.preempt || a.priority >= priority_) {
      ++counters_.accepted;
      preempt_since_.reset();
      resetDownTimer(now, a.interval_cs);
      return Received::kAccepted;
    }
    // A lower-priority Active and preempt on: held during the preempt delay,
    // discarded after it so that the down timer runs out.
    if (params_.preempt_delay > Duration::zero()) {
      if (!preempt_since_) {
        preempt_since_ = now;
      }
      if (now - *preempt_since_ < params_.preempt_delay) {
        ++counters_.preempt_delayed;
        resetDownTimer(now, a.interval_cs);
        return Received::kPreemptDelayed;
      }
    }
    ++counters_.discarded_lower;
    discarded_lower_ = a.priority;
    return Received::kDiscardedLower;
  }

  // Active.
  if (a.priority == 0) {
    // Another Active stops: make sure the Backups hear this one at once.
    ++counters_.priority_zero;
    sendAdvert(priority_);
    deadline_ = now + params_.advert_interval_cs * kCentisecond;
    return Received::kPriorityZero;
  }
  const bool higher = a.priority > priority_;
  if (higher || (a.priority == priority_ && compareAddresses(a.sender, params_.primary) > 0)) {
    ++counters_.stepped_down;
    std::string reason = (higher ? "higher priority " : "equal priority ") +
                         std::to_string(a.priority) +
                         (higher ? " from " : " from higher address ") + proto::toString(a.sender);
    active_seen_ = a.sender;
    becomeBackup(now, a.interval_cs, std::move(reason));
    return Received::kSteppedDown;
  }
  ++counters_.discarded_lower;
  return Received::kDiscardedLower;
}

void StateMachine::expire(TimePoint now) {
  if (state_ == State::kInitialize || now < deadline_) {
    return;
  }
  if (state_ == State::kActive) {
    sendAdvert(priority_);
    deadline_ = now + params_.advert_interval_cs * kCentisecond;
    return;
  }
  std::string reason = released_ ? "priority 0 from the active"
                       : discarded_lower_
                           ? "preempted lower priority " + std::to_string(*discarded_lower_)
                           : "active down timer expired";
  becomeActive(now, std::move(reason));
}

void StateMachine::setPriority(TimePoint /*now*/, uint8_t effective) {
  // Takes effect at the next advertisement (Active) or timer reset (Backup).
  priority_ = std::max<uint8_t>(effective, 1);
  if (priority_ == 255 && params_.priority != 255) {
    priority_ = 254;
  }
}

std::optional<TimePoint> StateMachine::nextDeadline() const {
  if (state_ == State::kInitialize) {
    return std::nullopt;
  }
  return deadline_;
}

std::optional<proto::IpAddr> StateMachine::activeAddress() const {
  switch (state_) {
    case State::kActive:
      return params_.primary;
    case State::kBackup:
      return active_seen_;
    case State::kInitialize:
      break;
  }
  return std::nullopt;
}

}  // namespace mcgw::vrrp
