// PathMtuTracker on a fake clock: ICMP, probe confirmation and search,
// "no answer", aging, reconfiguration.
#include "control/pmtu/tracker.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <string>

namespace mcgw::pmtu {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr const char* kLine = "peer/l1";

Settings fast() {
  Settings s;
  s.probe_interval = seconds(2);
  s.probe_timeout = milliseconds(1000);
  s.aging = seconds(30);
  return s;
}

// A simulated underlay: a probe of `size` is answered after `rtt` when
// passes(size) says so (else refused after `rtt` when `refuse`); time goes in
// steps of the daemon's 20 ms tick.
struct Sim {
  PathMtuTracker& t;
  TimePoint now{};
  std::function<bool(uint16_t)> passes;
  unsigned sent = 0;
  uint64_t bytes = 0;  // of the probes sent
  bool refuse = false;
  milliseconds rtt{0};
  std::multimap<TimePoint, uint64_t> replies{};      // due -> probe id
  std::multimap<TimePoint, std::string> refusals{};  // due -> line

  void step() {
    for (auto it = replies.begin(); it != replies.end() && it->first <= now;) {
      t.onProbeReply(it->second, it->first);
      it = replies.erase(it);
    }
    for (auto it = refusals.begin(); it != refusals.end() && it->first <= now;) {
      t.onRefused(it->second, it->first);
      it = refusals.erase(it);
    }
    for (const auto& p : t.poll(now)) {
      ++sent;
      bytes += p.size;
      if (passes(p.size)) {
        replies.emplace(now + rtt, p.id);
      } else if (refuse) {
        refusals.emplace(now + rtt, p.line);
      }
    }
    now += milliseconds(20);
  }
  void run(milliseconds d) {
    const TimePoint end = now + d;
    while (now < end) {
      step();
    }
  }
  // Runs until the line's MTU is `mtu`; how long it took (or `limit`).
  milliseconds until(uint16_t mtu, milliseconds limit) {
    const TimePoint start = now;
    while (t.mtu(kLine) != mtu && now - start < limit) {
      step();
    }
    return std::chrono::duration_cast<milliseconds>(now - start);
  }
};

TEST(PathMtuTracker, StartsAtTheConfiguredMtuAndProbesIt) {
  PathMtuTracker t(fast());
  t.setLines({{kLine, {false, 1500}}}, TimePoint{});
  const LineView* v = t.view(kLine);
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v->mtu, 1500);
  EXPECT_EQ(v->source, Source::kConfigured);
  EXPECT_EQ(v->probe, ProbeState::kStarting);
  auto probes = t.poll(TimePoint{});
  ASSERT_EQ(probes.size(), 2u);
  EXPECT_EQ(probes[0].size, 1500);
  EXPECT_EQ(probes[1].size, kFloor4);  // the base probe
  t.onProbeReply(probes[0].id, TimePoint{});
  t.onProbeReply(probes[1].id, TimePoint{});
  EXPECT_TRUE(t.poll(TimePoint{} + milliseconds(10)).empty());
  EXPECT_EQ(t.view(kLine)->probe, ProbeState::kOk);
  // The next confirmation after probe-interval.
  EXPECT_TRUE(t.poll(TimePoint{} + milliseconds(1900)).empty());
  EXPECT_EQ(t.poll(TimePoint{} + milliseconds(2100)).size(), 2u);
  EXPECT_TRUE(t.takeChanges().empty());
}

TEST(PathMtuTracker, IcmpLowersAtOnceAndNeverRaises) {
  Settings s = fast();
  s.probe = false;
  PathMtuTracker t(s);
  const TimePoint t0{};
  t.setLines({{kLine, {false, 1500}}, {"peer/v6", {true, 1500}}}, t0);
  EXPECT_EQ(t.view(kLine)->probe, ProbeState::kOff);
  EXPECT_TRUE(t.onIcmp(kLine, 1400, "100.64.1.2", t0 + seconds(1)));
  EXPECT_EQ(t.mtu(kLine), 1400);
  EXPECT_EQ(t.view(kLine)->source, Source::kIcmp);
  EXPECT_EQ(t.view(kLine)->since, t0 + seconds(1));
  EXPECT_EQ(t.view(kLine)->reason, "icmp from 100.64.1.2");
  auto changes = t.takeChanges();
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].line, kLine);
  EXPECT_EQ(changes[0].from, 1500);
  EXPECT_EQ(changes[0].to, 1400);
  EXPECT_EQ(changes[0].source, Source::kIcmp);

  EXPECT_FALSE(t.onIcmp(kLine, 1400, "x", t0));  // not lower: ignored
  EXPECT_FALSE(t.onIcmp(kLine, 9000, "x", t0));
  EXPECT_EQ(t.view(kLine)->counters.icmp_ignored, 2u);
  EXPECT_EQ(t.view(kLine)->counters.icmp_accepted, 1u);

  // Below the floor: the floor (Linux min_pmtu 552, IPv6 1280).
  EXPECT_TRUE(t.onIcmp(kLine, 68, "x", t0));
  EXPECT_EQ(t.mtu(kLine), kFloor4);
  EXPECT_EQ(t.view(kLine)->reason, "icmp from x (reported 68)");
  EXPECT_FALSE(t.onIcmp(kLine, 100, "x", t0));
  EXPECT_TRUE(t.onIcmp("peer/v6", 1000, "fd00::2", t0));
  EXPECT_EQ(t.mtu("peer/v6"), kFloor6);
  EXPECT_FALSE(t.onIcmp("peer/v6", 1200, "fd00::2", t0));
  EXPECT_FALSE(t.onIcmp("no/such", 1200, "x", t0));
}

TEST(PathMtuTracker, IcmpWithoutMtuTakesTheNextPlateau) {
  PathMtuTracker t(fast());
  t.setLines({{kLine, {false, 1500}}}, TimePoint{});
  EXPECT_TRUE(t.onIcmp(kLine, 0, "x", TimePoint{}));
  EXPECT_EQ(t.mtu(kLine), 1492);  // RFC 1191 §7
  EXPECT_TRUE(t.onIcmp(kLine, 0, "x", TimePoint{}));
  EXPECT_EQ(t.mtu(kLine), 1006);
  EXPECT_TRUE(t.onIcmp(kLine, 0, "x", TimePoint{}));
  EXPECT_EQ(t.mtu(kLine), kFloor4);  // 508 is below the floor
}

TEST(PathMtuTracker, ProbeSearchFindsAPathMtuNoIcmpReported) {
  PathMtuTracker t(fast());
  t.setLines({{kLine, {false, 1500}}}, TimePoint{});
  Sim sim{t, {}, [](uint16_t size) { return size <= 1500; }};
  sim.rtt = milliseconds(5);
  sim.run(seconds(5));
  EXPECT_EQ(t.view(kLine)->probe, ProbeState::kOk);
  // The underlay shrinks to 1387 and black-holes bigger packets: found
  // within the next keepalive (2 s here) and a few rounds.
  sim.passes = [](uint16_t size) { return size <= 1387; };
  const auto took = sim.until(1387, seconds(60));
  EXPECT_EQ(t.mtu(kLine), 1387);
  EXPECT_LE(took, seconds(3)) << "found after " << took.count() << " ms";
  EXPECT_EQ(t.view(kLine)->source, Source::kProbe);
  EXPECT_EQ(t.view(kLine)->probe, ProbeState::kOk);
  EXPECT_EQ(t.view(kLine)->counters.searches, 1u);
  auto changes = t.takeChanges();
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].to, 1387);
  EXPECT_EQ(changes[0].source, Source::kProbe);
}

// The issue-11 goal: a path that starts black-holing packets above 1400
// without ICMP is found within 3 s with the default settings (a keepalive
// every second), whenever it narrows between two keepalives, on a lab's
// round trip and on a long one.
TEST(PathMtuTracker, BlackHoleFoundWithinThreeSeconds) {
  for (const milliseconds rtt : {milliseconds(1), milliseconds(100)}) {
    for (const milliseconds phase : {milliseconds(0), milliseconds(260), milliseconds(500),
                                     milliseconds(740), milliseconds(1000)}) {
      PathMtuTracker t;
      t.setLines({{kLine, {false, 1500}}}, TimePoint{});
      Sim sim{t, {}, [](uint16_t) { return true; }};
      sim.rtt = rtt;
      sim.run(seconds(10) + phase);
      ASSERT_EQ(t.view(kLine)->probe, ProbeState::kOk);
      sim.passes = [](uint16_t size) { return size <= 1400; };
      const auto took = sim.until(1400, seconds(30));
      EXPECT_EQ(t.mtu(kLine), 1400) << "rtt " << rtt.count() << " ms";
      EXPECT_LE(took, seconds(3)) << "rtt " << rtt.count() << " ms, narrowed at 10 s + "
                                  << phase.count() << " ms: " << took.count() << " ms";
      EXPECT_EQ(t.view(kLine)->source, Source::kProbe);
      EXPECT_EQ(t.view(kLine)->reason, "probe: 1500 bytes unanswered, 1400 the largest answered");
      EXPECT_EQ(t.view(kLine)->counters.searches, 1u);
    }
  }
}

// A round does not wait for the timeout once its control probe is back:
// the others get max(50 ms, half its round trip) more.
TEST(PathMtuTracker, RoundEndsOnceTheControlProbeIsAnswered) {
  PathMtuTracker t;  // probe-timeout 1 s
  const TimePoint t0{};
  t.setLines({{kLine, {false, 1500}}}, t0);
  auto probes = t.poll(t0);
  ASSERT_EQ(probes.size(), 2u);
  EXPECT_EQ(probes[1].size, kFloor4);  // the control probe, last
  t.onProbeReply(probes[1].id, t0 + milliseconds(300));
  EXPECT_TRUE(t.poll(t0 + milliseconds(449)).empty());
  EXPECT_EQ(t.view(kLine)->probe, ProbeState::kStarting);
  // 300 + 150: the 1500 counts as lost, a search starts at once.
  probes = t.poll(t0 + milliseconds(450));
  EXPECT_EQ(t.view(kLine)->probe, ProbeState::kSearching);
  EXPECT_EQ(t.view(kLine)->counters.probes_lost, 1u);
  ASSERT_GE(probes.size(), 3u);
  EXPECT_EQ(probes.front().size, 1500);  // asked again
  EXPECT_EQ(probes.back().size, kFloor4);
  // Short round trips: at least 50 ms.
  t.onProbeReply(probes.back().id, t0 + milliseconds(451));
  EXPECT_TRUE(t.poll(t0 + milliseconds(500)).empty());
  EXPECT_FALSE(t.poll(t0 + milliseconds(501)).empty());
  // Without an answer to the control probe: the timeout.
  PathMtuTracker u;
  u.setLines({{kLine, {false, 1500}}}, t0);
  probes = u.poll(t0);
  u.onProbeReply(probes[0].id, t0 + milliseconds(10));  // 1500 back, the control not yet
  EXPECT_TRUE(u.poll(t0 + milliseconds(999)).empty());
  EXPECT_EQ(u.view(kLine)->probe, ProbeState::kStarting);
  u.poll(t0 + milliseconds(1000));
  EXPECT_EQ(u.view(kLine)->probe, ProbeState::kOk);
}

// A single lost probe on a healthy path never lowers the line, nor do two in
// a row: the size must go unanswered in three rounds.
TEST(PathMtuTracker, LostProbesOfTheCurrentSizeDoNotLower) {
  for (unsigned losses : {1u, 2u}) {
    PathMtuTracker t;
    t.setLines({{kLine, {false, 1500}}}, TimePoint{});
    Sim sim{t, {}, [](uint16_t) { return true; }};
    sim.rtt = milliseconds(1);
    sim.run(seconds(5));
    unsigned left = losses;
    sim.passes = [&](uint16_t size) {
      if (size == 1500 && left > 0) {
        --left;
        return false;
      }
      return true;
    };
    sim.run(seconds(10));
    EXPECT_EQ(left, 0u);
    EXPECT_EQ(t.mtu(kLine), 1500) << losses << " lost";
    EXPECT_EQ(t.view(kLine)->probe, ProbeState::kOk);
    EXPECT_EQ(t.view(kLine)->counters.probes_lost, losses);
    EXPECT_EQ(t.view(kLine)->counters.searches, 1u);
    EXPECT_TRUE(t.takeChanges().empty());
  }
}

// A lossy path (a third of the probes above 1400 lost, the rest answered)
// never settles below what always gets through, and never stays searching.
TEST(PathMtuTracker, LossyPathNeverSettlesBelowWhatGetsThrough) {
  PathMtuTracker t;
  t.setLines({{kLine, {false, 1500}}}, TimePoint{});
  unsigned n = 0;
  Sim sim{t, {}, [&](uint16_t size) { return size <= 1400 || ++n % 3 != 0; }};
  sim.rtt = milliseconds(10);
  uint16_t lowest = 1500;
  for (int i = 0; i < 3000; ++i) {  // a minute
    sim.step();
    lowest = std::min(lowest, t.mtu(kLine));
  }
  EXPECT_GE(lowest, 1400);
  sim.passes = [](uint16_t size) { return size <= 1500; };
  sim.run(seconds(2));
  EXPECT_NE(t.view(kLine)->probe, ProbeState::kSearching);
}

// One lost probe during the search (the first candidate between 1300 and
// 1387, which fits) does not settle the line low: the size is asked again
// before it counts.
TEST(PathMtuTracker, ProbeSearchSurvivesALostProbe) {
  PathMtuTracker t(fast());
  t.setLines({{kLine, {false, 1500}}}, TimePoint{});
  Sim sim{t, {}, {}};
  bool lost = false;
  unsigned lost_size = 0;
  sim.passes = [&](uint16_t size) {
    if (!lost && size > 1300 && size <= 1387) {
      lost = true;  // the first answerable candidate of the train is lost
      lost_size = size;
      return false;
    }
    return size <= 1387;
  };
  sim.until(1387, seconds(60));
  EXPECT_TRUE(lost);
  EXPECT_EQ(t.mtu(kLine), 1387) << "a probe of " << lost_size << " was lost once";
  EXPECT_EQ(t.view(kLine)->probe, ProbeState::kOk);
  EXPECT_EQ(t.view(kLine)->counters.searches, 1u);
}

TEST(PathMtuTracker, ProbeSearchIPv6) {
  PathMtuTracker t(fast());
  t.setLines({{kLine, {true, 1500}}}, TimePoint{});
  Sim sim{t, {}, [](uint16_t size) { return size <= 1280; }};
  sim.until(1280, seconds(30));
  EXPECT_EQ(t.mtu(kLine), 1280);
  EXPECT_EQ(t.view(kLine)->source, Source::kProbe);
}

TEST(PathMtuTracker, SilentPeerIsNoAnswerAndKeepsTheMtu) {
  PathMtuTracker t(fast());
  t.setLines({{kLine, {false, 1500}}}, TimePoint{});
  Sim sim{t, {}, [](uint16_t) { return false; }};
  sim.run(seconds(20));
  EXPECT_EQ(t.mtu(kLine), 1500);
  EXPECT_EQ(t.view(kLine)->probe, ProbeState::kNoAnswer);
  EXPECT_EQ(t.view(kLine)->source, Source::kConfigured);
  EXPECT_EQ(t.view(kLine)->counters.searches, 0u);
  EXPECT_GT(t.view(kLine)->counters.probes_lost, 6u);
  // Three rounds a timeout apart, then after 2, 4, 8 s: not back to back.
  EXPECT_EQ(sim.sent, 12u);
  // The peer comes back: asked again within 10 s (and a round).
  sim.passes = [](uint16_t) { return true; };
  sim.run(seconds(11));
  EXPECT_EQ(t.view(kLine)->probe, ProbeState::kOk);
  EXPECT_EQ(t.mtu(kLine), 1500);
}

// What a line costs: a healthy one, a keepalive of the current size and the
// control probe about every probe-interval (default 1 s); one whose peer
// never answers (not an mcgw gateway), at most one such round every 10 s
// once it is "no answer".
TEST(PathMtuTracker, ProbeTrafficIsBounded) {
  PathMtuTracker t;  // the defaults
  EXPECT_EQ(t.settings().probe_interval, seconds(1));
  t.setLines({{kLine, {false, 1500}}, {"other/l1", {false, 1500}}}, TimePoint{});
  Sim sim{t, {}, [](uint16_t) { return true; }};
  sim.rtt = milliseconds(1);
  sim.run(seconds(60));
  // Two lines, a round (1500 + 552 bytes) every 1.02 s each.
  EXPECT_GE(sim.sent, 2u * 2 * 55);
  EXPECT_LE(sim.sent, 2u * 2 * 61);
  EXPECT_LE(sim.bytes, 2u * 61 * (1500 + 552));
  EXPECT_EQ(t.view(kLine)->counters.probes_lost, 0u);
  EXPECT_EQ(t.view(kLine)->counters.searches, 0u);

  PathMtuTracker silent;
  silent.setLines({{kLine, {false, 1500}}}, TimePoint{});
  Sim quiet{silent, {}, [](uint16_t) { return false; }};
  quiet.run(seconds(60));
  const unsigned first_minute = quiet.sent;
  quiet.run(seconds(600));
  EXPECT_EQ(silent.view(kLine)->probe, ProbeState::kNoAnswer);
  EXPECT_EQ(silent.mtu(kLine), 1500);
  EXPECT_LE(first_minute, 2u * 12);
  // Ten minutes later: a round of two probes every 11 s (10 s + the timeout).
  EXPECT_LE(quiet.sent - first_minute, 2u * 600 / 11 + 2);
}

// A peer whose kernel refuses the probes (port unreachable: its mcgwd is not
// started yet): the probes are refused, not lost; a refused round ends at
// once, the next comes no sooner than the timeout; once the peer's responder
// runs, the line is ok and no probe was lost.
TEST(PathMtuTracker, RefusedProbesAreNotLost) {
  PathMtuTracker t(fast());
  const TimePoint t0{};
  t.setLines({{kLine, {false, 1500}}}, t0);
  ASSERT_EQ(t.poll(t0).size(), 2u);
  t.onRefused(kLine, t0 + milliseconds(1));
  EXPECT_TRUE(t.poll(t0 + milliseconds(20)).empty());
  EXPECT_EQ(t.view(kLine)->counters.probes_refused, 2u);
  EXPECT_EQ(t.view(kLine)->counters.probes_lost, 0u);
  EXPECT_TRUE(t.poll(t0 + milliseconds(990)).empty());
  auto probes = t.poll(t0 + milliseconds(1000));
  ASSERT_EQ(probes.size(), 2u);
  for (const auto& p : probes) {
    t.onProbeReply(p.id, t0 + milliseconds(1001));
  }
  t.onRefused(kLine, t0 + milliseconds(1002));  // a late refusal: answered already
  EXPECT_TRUE(t.poll(t0 + milliseconds(1020)).empty());
  EXPECT_EQ(t.view(kLine)->probe, ProbeState::kOk);
  EXPECT_EQ(t.view(kLine)->counters.probes_answered, 2u);
  EXPECT_EQ(t.view(kLine)->counters.probes_refused, 2u);
  EXPECT_EQ(t.view(kLine)->counters.probes_lost, 0u);
  EXPECT_EQ(t.mtu(kLine), 1500);
}

// A peer that is no mcgw gateway (a Linux VXLAN site) refuses every probe:
// "no answer" after three rounds, the MTU left alone, asked again later.
TEST(PathMtuTracker, RefusingPeerIsNoAnswer) {
  PathMtuTracker t(fast());
  t.setLines({{kLine, {false, 1500}}}, TimePoint{});
  Sim sim{t, {}, [](uint16_t) { return false; }};
  sim.refuse = true;
  sim.run(seconds(20));
  EXPECT_EQ(t.view(kLine)->probe, ProbeState::kNoAnswer);
  EXPECT_EQ(t.mtu(kLine), 1500);
  EXPECT_EQ(t.view(kLine)->counters.probes_lost, 0u);
  EXPECT_GE(t.view(kLine)->counters.probes_refused, 6u);
  EXPECT_LT(sim.sent, 30u);
}

TEST(PathMtuTracker, AgingRaisesOnlyWhenAProbeIsAnswered) {
  PathMtuTracker t(fast());
  t.setLines({{kLine, {false, 1500}}}, TimePoint{});
  Sim sim{t, {}, [](uint16_t) { return true; }};
  sim.run(seconds(1));
  sim.passes = [](uint16_t size) { return size <= 1400; };
  t.onIcmp(kLine, 1400, "r", sim.now);
  t.takeChanges();
  // The path stays at 1400: aging probes 1401..1500, nothing bigger answers.
  sim.run(seconds(35));
  EXPECT_EQ(t.mtu(kLine), 1400);
  EXPECT_EQ(t.view(kLine)->source, Source::kIcmp);
  EXPECT_TRUE(t.takeChanges().empty());
  // The path grows back: raised after the next aging period, by probe.
  sim.passes = [](uint16_t) { return true; };
  const auto took = sim.until(1500, seconds(60));
  EXPECT_EQ(t.mtu(kLine), 1500);
  EXPECT_GE(took, seconds(20));
  EXPECT_EQ(t.view(kLine)->source, Source::kProbe);
  auto changes = t.takeChanges();
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].from, 1400);
  EXPECT_EQ(changes[0].to, 1500);
}

TEST(PathMtuTracker, AgingWithoutProbingReturnsToTheConfiguredMtu) {
  Settings s = fast();
  s.probe = false;
  PathMtuTracker t(s);
  const TimePoint t0{};
  t.setLines({{kLine, {false, 1500}}}, t0);
  t.onIcmp(kLine, 1400, "r", t0);
  EXPECT_TRUE(t.poll(t0 + seconds(29)).empty());
  EXPECT_EQ(t.mtu(kLine), 1400);
  EXPECT_TRUE(t.poll(t0 + seconds(30)).empty());  // no probes when probing is off
  EXPECT_EQ(t.mtu(kLine), 1500);
  EXPECT_EQ(t.view(kLine)->source, Source::kConfigured);
}

TEST(PathMtuTracker, AgingWithASilentPeerReturnsToTheConfiguredMtu) {
  PathMtuTracker t(fast());
  t.setLines({{kLine, {false, 1500}}}, TimePoint{});
  Sim sim{t, {}, [](uint16_t) { return false; }};  // a Linux VXLAN site
  sim.run(seconds(1));
  t.onIcmp(kLine, 1300, "r", sim.now);
  sim.run(seconds(29));
  EXPECT_EQ(t.mtu(kLine), 1300);
  sim.run(seconds(2));
  EXPECT_EQ(t.mtu(kLine), 1500);
}

TEST(PathMtuTracker, ReconfigureKeepsUnchangedLines) {
  PathMtuTracker t(fast());
  const TimePoint t0{};
  t.setLines({{kLine, {false, 1500}}, {"peer/l2", {false, 1500}}}, t0);
  t.onIcmp(kLine, 1400, "r", t0);
  t.onIcmp("peer/l2", 1400, "r", t0);
  t.setLines({{kLine, {false, 1500}}, {"peer/l2", {false, 9000}}, {"peer/l3", {false, 1400}}},
             t0 + seconds(1));
  EXPECT_EQ(t.mtu(kLine), 1400);
  EXPECT_EQ(t.mtu("peer/l2"), 9000);  // changed: starts afresh
  EXPECT_EQ(t.mtu("peer/l3"), 1400);
  t.setLines({{"peer/l3", {false, 1400}}}, t0 + seconds(2));
  EXPECT_EQ(t.view(kLine), nullptr);
  // Probing turned off and on again.
  Settings s = fast();
  s.probe = false;
  t.setSettings(s, t0 + seconds(3));
  EXPECT_EQ(t.view("peer/l3")->probe, ProbeState::kOff);
  EXPECT_TRUE(t.poll(t0 + seconds(4)).empty());
  t.setSettings(fast(), t0 + seconds(5));
  EXPECT_EQ(t.poll(t0 + seconds(5)).size(), 2u);
}

TEST(PathMtuTracker, IcmpDuringASearchEndsIt) {
  PathMtuTracker t(fast());
  t.setLines({{kLine, {false, 1500}}}, TimePoint{});
  Sim sim{t, {}, [](uint16_t size) { return size <= 1300; }};
  // The first keepalive's 1500 goes unanswered: searching.
  while (t.view(kLine)->probe != ProbeState::kSearching && sim.now < TimePoint{} + seconds(20)) {
    sim.step();
  }
  ASSERT_EQ(t.view(kLine)->probe, ProbeState::kSearching);
  EXPECT_TRUE(t.onIcmp(kLine, 1300, "r", sim.now));
  EXPECT_EQ(t.view(kLine)->probe, ProbeState::kOk);
  sim.run(seconds(5));
  EXPECT_EQ(t.mtu(kLine), 1300);
  EXPECT_EQ(t.view(kLine)->source, Source::kIcmp);
}

}  // namespace
}  // namespace mcgw::pmtu
