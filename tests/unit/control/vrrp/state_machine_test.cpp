// The VRRPv3 state machine (RFC 9568 §6.4) with injected time.  Expected
// times are worked out by hand: Skew_Time = (256 - priority) * interval / 256
// centiseconds, Active_Down_Interval = 3 * interval + Skew_Time.
#include "control/vrrp/state_machine.hpp"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace mcgw::vrrp {
namespace {

using namespace std::chrono_literals;
using proto::IpAddr;

// What the state machine asked for, in order: "advert 100", "announce",
// "Backup -> Active (reason)".
struct Recorder : Output {
  std::vector<std::string> events;
  void sendAdvert(uint8_t priority) override {
    events.push_back("advert " + std::to_string(priority));
  }
  void announce() override { events.push_back("announce"); }
  void transitioned(const Transition& t) override {
    events.push_back(std::string(displayName(t.from)) + " -> " + std::string(displayName(t.to)) +
                     " (" + t.reason + ")");
  }
  std::vector<std::string> take() { return std::exchange(events, {}); }
};

using Events = std::vector<std::string>;

const TimePoint t0 = TimePoint{} + 1000s;
const IpAddr kOwn = IpAddr::v4(10, 1, 0, 2);
const IpAddr kLower = IpAddr::v4(10, 1, 0, 1);
const IpAddr kHigher = IpAddr::v4(10, 1, 0, 3);

Params params(uint8_t priority, uint16_t interval_cs = 100, bool preempt = true) {
  Params p;
  p.vrid = 10;
  p.priority = priority;
  p.advert_interval_cs = interval_cs;
  p.preempt = preempt;
  p.primary = kOwn;
  return p;
}

Advert advert(uint8_t priority, const IpAddr& from, uint16_t interval_cs = 100) {
  return Advert{priority, interval_cs, from};
}

// A state machine brought to Active at t0 + its down interval, events cleared.
struct Fixture {
  Recorder out;
  StateMachine sm;
  explicit Fixture(const Params& p) : sm(p, out) {}
  TimePoint makeActive() {
    sm.start(t0);
    TimePoint at = *sm.nextDeadline();
    sm.expire(at);
    EXPECT_EQ(sm.state(), State::kActive);
    out.take();
    return at;
  }
};

TEST(VrrpStateMachine, TimersFollowTheRfcFormulas) {
  EXPECT_EQ(skewTime(100, 100), 609375us);  // 156 * 100 / 256 = 60.9375 cs
  EXPECT_EQ(downInterval(100, 100), 3609375us);
  EXPECT_EQ(skewTime(150, 10), 41406250ns);  // 106 * 10 / 256 = 4.140625 cs
  EXPECT_EQ(downInterval(150, 10), 341406250ns);
  EXPECT_EQ(skewTime(254, 1), 78125ns);         // 2 * 1 / 256 cs
  EXPECT_EQ(skewTime(1, 4095), 40790039062ns);  // 255 * 4095 / 256 cs, truncated to ns
}

TEST(VrrpStateMachine, StartsInBackupWithTheDownTimer) {
  Fixture f(params(100));
  EXPECT_EQ(f.sm.state(), State::kInitialize);
  EXPECT_FALSE(f.sm.nextDeadline());
  f.sm.start(t0);
  EXPECT_EQ(f.out.take(), Events{"Initialize -> Backup (startup)"});
  EXPECT_EQ(f.sm.state(), State::kBackup);
  EXPECT_EQ(f.sm.skew(), 609375us);
  EXPECT_EQ(f.sm.activeDownInterval(), 3609375us);
  EXPECT_EQ(f.sm.activeAdverIntervalCs(), 100);
  EXPECT_EQ(*f.sm.nextDeadline(), t0 + 3609375us);
  EXPECT_FALSE(f.sm.activeAddress());
  ASSERT_TRUE(f.sm.lastTransition());
  EXPECT_EQ(f.sm.lastTransition()->at, t0);
  EXPECT_EQ(f.sm.lastTransition()->reason, "startup");
  EXPECT_EQ(f.sm.counters().transitions, 1u);
  f.sm.start(t0 + 1s);  // already running: nothing
  EXPECT_TRUE(f.out.take().empty());
}

TEST(VrrpStateMachine, BackupBecomesActiveExactlyAtTheDownInterval) {
  Fixture f(params(100));
  f.sm.start(t0);
  f.out.take();
  f.sm.expire(t0 + 3609374999ns);
  EXPECT_EQ(f.sm.state(), State::kBackup);
  EXPECT_TRUE(f.out.take().empty());
  f.sm.expire(t0 + 3609375us);
  EXPECT_EQ(f.sm.state(), State::kActive);
  EXPECT_EQ(f.out.take(),
            (Events{"Backup -> Active (active down timer expired)", "advert 100", "announce"}));
  EXPECT_EQ(*f.sm.nextDeadline(), t0 + 4609375us);
  EXPECT_EQ(f.sm.activeAddress(), kOwn);
  EXPECT_EQ(f.sm.counters().became_active, 1u);
  EXPECT_EQ(f.sm.counters().adverts_sent, 1u);
  EXPECT_EQ(f.sm.lastTransition()->at, t0 + 3609375us);
}

TEST(VrrpStateMachine, ActiveSendsAdvertsAtTheInterval) {
  Fixture f(params(150, 10));
  TimePoint at = f.makeActive();
  EXPECT_EQ(at, t0 + 341406250ns);
  f.sm.expire(at + 99ms);
  EXPECT_TRUE(f.out.take().empty());
  f.sm.expire(at + 100ms);
  f.sm.expire(at + 150ms);
  f.sm.expire(at + 200ms);
  f.sm.expire(at + 300ms);
  EXPECT_EQ(f.out.take(), (Events{"advert 150", "advert 150", "advert 150"}));
  EXPECT_EQ(*f.sm.nextDeadline(), at + 400ms);
  EXPECT_EQ(f.sm.counters().adverts_sent, 4u);
}

TEST(VrrpStateMachine, BackupTakesOverAfterSkewOnPriorityZero) {
  Fixture f(params(100));
  f.sm.start(t0);
  EXPECT_EQ(f.sm.receive(t0 + 1s, advert(200, kHigher)), Received::kAccepted);
  EXPECT_EQ(f.sm.activeAddress(), kHigher);
  EXPECT_EQ(f.sm.receive(t0 + 2s, advert(0, kHigher)), Received::kPriorityZero);
  EXPECT_EQ(*f.sm.nextDeadline(), t0 + 2609375us);
  f.out.take();
  f.sm.expire(t0 + 2609375us);
  EXPECT_EQ(f.out.take(),
            (Events{"Backup -> Active (priority 0 from the active)", "advert 100", "announce"}));
  EXPECT_EQ(f.sm.counters().priority_zero, 1u);
  EXPECT_EQ(f.sm.counters().accepted, 1u);
}

TEST(VrrpStateMachine, BackupAdoptsTheActivesInterval) {
  Fixture f(params(150, 100));
  f.sm.start(t0);
  EXPECT_EQ(*f.sm.nextDeadline(), t0 + 3414062500ns);  // 3 s + 106 * 100 / 256 cs
  f.sm.receive(t0 + 1s, advert(200, kHigher, 10));
  EXPECT_EQ(f.sm.activeAdverIntervalCs(), 10);
  EXPECT_EQ(f.sm.skew(), 41406250ns);
  EXPECT_EQ(f.sm.activeDownInterval(), 341406250ns);
  EXPECT_EQ(*f.sm.nextDeadline(), t0 + 1341406250ns);
  // Silence: the Backup takes over one adopted down interval later.
  f.out.take();
  f.sm.expire(t0 + 1341406250ns);
  EXPECT_EQ(f.sm.state(), State::kActive);
  // Its own adverts still go at its own interval, which the views show now.
  EXPECT_EQ(*f.sm.nextDeadline(), t0 + 2341406250ns);
  EXPECT_EQ(f.sm.activeAdverIntervalCs(), 100);
  EXPECT_EQ(f.sm.skew(), 414062500ns);
}

// The Output reads the state machine from inside transitioned().
struct Observer : Output {
  const StateMachine* sm = nullptr;
  std::vector<std::optional<TimePoint>> deadlines;
  std::vector<State> states;
  void sendAdvert(uint8_t) override {}
  void announce() override {}
  void transitioned(const Transition&) override {
    deadlines.push_back(sm->nextDeadline());
    states.push_back(sm->state());
  }
};

TEST(VrrpStateMachine, TheOutputSeesTheNewStateAndDeadline) {
  Observer o;
  StateMachine sm(params(100), o);
  o.sm = &sm;
  sm.start(t0);
  sm.expire(t0 + 3609375us);
  sm.shutdown(t0 + 4s);
  EXPECT_EQ(o.states, (std::vector<State>{State::kBackup, State::kActive, State::kInitialize}));
  EXPECT_EQ(o.deadlines,
            (std::vector<std::optional<TimePoint>>{t0 + 3609375us, t0 + 4609375us, std::nullopt}));
}

TEST(VrrpStateMachine, ActiveStepsDownForAHigherPriority) {
  Fixture f(params(100));
  TimePoint at = f.makeActive();
  EXPECT_EQ(f.sm.receive(at + 10ms, advert(200, kLower, 50)), Received::kSteppedDown);
  EXPECT_EQ(f.out.take(), Events{"Active -> Backup (higher priority 200 from 10.1.0.1)"});
  EXPECT_EQ(f.sm.state(), State::kBackup);
  EXPECT_EQ(f.sm.activeAddress(), kLower);
  EXPECT_EQ(f.sm.activeAdverIntervalCs(), 50);
  // 3 * 50 cs + 156 * 50 / 256 cs = 1.5 s + 304.6875 ms
  EXPECT_EQ(*f.sm.nextDeadline(), at + 10ms + 1804687500ns);
  EXPECT_EQ(f.sm.counters().stepped_down, 1u);
}

TEST(VrrpStateMachine, EqualPriorityFromAHigherAddressWins) {
  Fixture f(params(100));
  TimePoint at = f.makeActive();
  EXPECT_EQ(f.sm.receive(at, advert(100, kHigher)), Received::kSteppedDown);
  EXPECT_EQ(f.out.take(),
            Events{"Active -> Backup (equal priority 100 from higher address 10.1.0.3)"});
}

TEST(VrrpStateMachine, EqualPriorityFromALowerAddressIsDiscarded) {
  Fixture f(params(100));
  TimePoint at = f.makeActive();
  EXPECT_EQ(f.sm.receive(at, advert(100, kLower)), Received::kDiscardedLower);
  EXPECT_EQ(f.sm.receive(at, advert(99, kHigher)), Received::kDiscardedLower);
  EXPECT_EQ(f.sm.state(), State::kActive);
  EXPECT_TRUE(f.out.take().empty());
  EXPECT_EQ(f.sm.counters().discarded_lower, 2u);
}

TEST(VrrpStateMachine, AddressesCompareAsNumbers) {
  // 10.1.0.10 is above 10.1.0.9 (as text it would sort below).
  Params p = params(100);
  p.primary = IpAddr::v4(10, 1, 0, 9);
  Fixture f(p);
  TimePoint at = f.makeActive();
  EXPECT_EQ(f.sm.receive(at, advert(100, IpAddr::v4(10, 1, 0, 10))), Received::kSteppedDown);

  // IPv6 bytewise: fe80::1:0 above fe80::ffff.
  Params p6 = params(100);
  p6.primary = IpAddr::v6From({0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff});
  const IpAddr higher6 = IpAddr::v6From({0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0});
  const IpAddr lower6 = IpAddr::v6From({0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1});
  Fixture f6(p6);
  at = f6.makeActive();
  EXPECT_EQ(f6.sm.receive(at, advert(100, lower6)), Received::kDiscardedLower);
  EXPECT_EQ(f6.sm.receive(at, advert(100, higher6)), Received::kSteppedDown);
  EXPECT_EQ(f6.out.take(),
            Events{"Active -> Backup (equal priority 100 from higher address fe80::1:0)"});
}

TEST(VrrpStateMachine, BackupWithPreemptTakesOverFromALowerPriority) {
  Fixture f(params(150));
  f.sm.start(t0);  // down interval 3414.0625 ms
  f.out.take();
  EXPECT_EQ(f.sm.receive(t0 + 1s, advert(90, kHigher)), Received::kDiscardedLower);
  EXPECT_EQ(f.sm.receive(t0 + 2s, advert(90, kHigher)), Received::kDiscardedLower);
  EXPECT_EQ(f.sm.activeAddress(), kHigher);
  EXPECT_EQ(*f.sm.nextDeadline(), t0 + 3414062500ns);
  f.sm.expire(t0 + 3414062500ns);
  EXPECT_EQ(f.out.take(),
            (Events{"Backup -> Active (preempted lower priority 90)", "advert 150", "announce"}));
}

TEST(VrrpStateMachine, BackupWithoutPreemptFollowsALowerPriority) {
  Fixture f(params(150, 100, false));
  f.sm.start(t0);
  f.out.take();
  for (int i = 1; i <= 10; ++i) {
    EXPECT_EQ(f.sm.receive(t0 + i * 1s, advert(90, kHigher)), Received::kAccepted);
    f.sm.expire(t0 + i * 1s + 1ms);
  }
  EXPECT_EQ(f.sm.state(), State::kBackup);
  EXPECT_TRUE(f.out.take().empty());
  EXPECT_EQ(*f.sm.nextDeadline(), t0 + 10s + 3414062500ns);
}

TEST(VrrpStateMachine, PreemptDelayHoldsTheLowerActiveForItsDuration) {
  Params p = params(150);
  p.preempt_delay = 5s;
  Fixture f(p);
  f.sm.start(t0);
  f.out.take();
  // The first lower advert at t0 + 1 s starts the delay; until t0 + 6 s they
  // count as valid.
  for (int i = 1; i <= 5; ++i) {
    EXPECT_EQ(f.sm.receive(t0 + i * 1s, advert(90, kHigher)), Received::kPreemptDelayed) << i;
  }
  EXPECT_EQ(*f.sm.nextDeadline(), t0 + 5s + 3414062500ns);
  for (int i = 6; i <= 8; ++i) {
    EXPECT_EQ(f.sm.receive(t0 + i * 1s, advert(90, kHigher)), Received::kDiscardedLower) << i;
  }
  f.sm.expire(t0 + 8414062499ns);
  EXPECT_EQ(f.sm.state(), State::kBackup);
  f.sm.expire(t0 + 8414062500ns);
  EXPECT_EQ(f.out.take(),
            (Events{"Backup -> Active (preempted lower priority 90)", "advert 150", "announce"}));
  EXPECT_EQ(f.sm.counters().preempt_delayed, 5u);
  EXPECT_EQ(f.sm.counters().discarded_lower, 3u);
}

TEST(VrrpStateMachine, PreemptDelayStartsAgainAfterAHigherAdvert) {
  Params p = params(150);
  p.preempt_delay = 5s;
  Fixture f(p);
  f.sm.start(t0);
  EXPECT_EQ(f.sm.receive(t0 + 1s, advert(90, kHigher)), Received::kPreemptDelayed);
  EXPECT_EQ(f.sm.receive(t0 + 2s, advert(200, kHigher)), Received::kAccepted);
  // The delay counts from here again.
  EXPECT_EQ(f.sm.receive(t0 + 3s, advert(90, kHigher)), Received::kPreemptDelayed);
  EXPECT_EQ(f.sm.receive(t0 + 7s, advert(90, kHigher)), Received::kPreemptDelayed);
  EXPECT_EQ(f.sm.receive(t0 + 8s, advert(90, kHigher)), Received::kDiscardedLower);
}

TEST(VrrpStateMachine, ShutdownOfTheActiveSendsPriorityZero) {
  Fixture f(params(100));
  TimePoint at = f.makeActive();
  f.sm.shutdown(at + 1s);
  EXPECT_EQ(f.out.take(), (Events{"advert 0", "Active -> Initialize (shutdown)"}));
  EXPECT_EQ(f.sm.state(), State::kInitialize);
  EXPECT_FALSE(f.sm.nextDeadline());
  EXPECT_FALSE(f.sm.activeAddress());
  EXPECT_EQ(f.sm.receive(at + 2s, advert(200, kHigher)), Received::kIgnored);
  f.sm.shutdown(at + 3s);
  EXPECT_TRUE(f.out.take().empty());
  // And it can start again.
  f.sm.start(at + 4s);
  EXPECT_EQ(f.out.take(), Events{"Initialize -> Backup (startup)"});
}

TEST(VrrpStateMachine, ShutdownOfABackupSendsNothing) {
  Fixture f(params(100));
  f.sm.start(t0);
  f.out.take();
  f.sm.shutdown(t0 + 1s);
  EXPECT_EQ(f.out.take(), Events{"Backup -> Initialize (shutdown)"});
  EXPECT_EQ(f.sm.counters().adverts_sent, 0u);
}

TEST(VrrpStateMachine, ActiveAnswersPriorityZeroAtOnce) {
  Fixture f(params(100));
  TimePoint at = f.makeActive();
  EXPECT_EQ(f.sm.receive(at + 300ms, advert(0, kHigher)), Received::kPriorityZero);
  EXPECT_EQ(f.out.take(), Events{"advert 100"});
  EXPECT_EQ(*f.sm.nextDeadline(), at + 1300ms);
  EXPECT_EQ(f.sm.state(), State::kActive);
}

TEST(VrrpStateMachine, ActiveSendsALoweredPriorityInItsNextAdvert) {
  Fixture f(params(150));
  TimePoint at = f.makeActive();
  f.sm.setPriority(at + 10ms, 100);
  EXPECT_TRUE(f.out.take().empty());
  EXPECT_EQ(f.sm.priority(), 100);
  EXPECT_EQ(f.sm.configuredPriority(), 150);
  f.sm.expire(at + 1s);
  EXPECT_EQ(f.out.take(), Events{"advert 100"});
  // At 100 now, an Active at 120 wins.
  EXPECT_EQ(f.sm.receive(at + 1100ms, advert(120, kLower)), Received::kSteppedDown);
}

TEST(VrrpStateMachine, BackupSkewFollowsThePriorityAtTheNextReset) {
  Fixture f(params(100));
  f.sm.start(t0);
  f.sm.setPriority(t0 + 1s, 200);
  EXPECT_EQ(f.sm.skew(), 609375us);  // the running timer keeps its skew
  EXPECT_EQ(*f.sm.nextDeadline(), t0 + 3609375us);
  // The Active at 220 is followed; the timer now uses priority 200.
  f.sm.receive(t0 + 2s, advert(220, kHigher));
  EXPECT_EQ(f.sm.skew(), 218750us);  // 56 * 100 / 256 cs
  EXPECT_EQ(*f.sm.nextDeadline(), t0 + 2s + 3218750us);
  // A Backup whose priority rises above the Active's preempts it.
  f.sm.setPriority(t0 + 3s, 254);
  EXPECT_EQ(f.sm.receive(t0 + 4s, advert(220, kHigher)), Received::kDiscardedLower);
}

TEST(VrrpStateMachine, PriorityIsKeptInRange) {
  Fixture f(params(100));
  f.sm.setPriority(t0, 0);
  EXPECT_EQ(f.sm.priority(), 1);
  f.sm.setPriority(t0, 255);
  EXPECT_EQ(f.sm.priority(), 254);
}

TEST(VrrpStateMachine, TheAddressOwnerStartsActive) {
  Fixture f(params(255));
  f.sm.start(t0);
  EXPECT_EQ(f.out.take(), (Events{"Initialize -> Active (startup as the address owner)",
                                  "advert 255", "announce"}));
  EXPECT_EQ(*f.sm.nextDeadline(), t0 + 1s);
  // A lower priority (all others are) is discarded.
  EXPECT_EQ(f.sm.receive(t0, advert(254, kHigher)), Received::kDiscardedLower);
}

TEST(VrrpStateMachine, CountsWhatItReceives) {
  Fixture f(params(100));
  f.sm.receive(t0, advert(100, kHigher));
  f.sm.start(t0);
  f.sm.receive(t0, advert(100, kHigher));
  f.sm.receive(t0, advert(0, kHigher));
  const Counters& c = f.sm.counters();
  EXPECT_EQ(c.adverts_received, 3u);
  EXPECT_EQ(c.ignored, 1u);
  EXPECT_EQ(c.accepted, 1u);
  EXPECT_EQ(c.priority_zero, 1u);
}

}  // namespace
}  // namespace mcgw::vrrp
