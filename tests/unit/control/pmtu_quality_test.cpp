// Line quality: the codec of the quality probes (types 3 and 4) and the
// estimator (RTT, jitter, loss over 10 s and 60 s) over an injected clock.
#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <functional>
#include <optional>
#include <set>
#include <vector>

#include "control/pmtu/probe_codec.hpp"
#include "control/pmtu/quality.hpp"

namespace mcgw::pmtu {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

TEST(QualityCodec, RequestAndReplyRoundTrip) {
  auto p = encodeQuality({false, 0x0102030405060708ull, 0x1112131415161718ull});
  ASSERT_EQ(p.size(), kQualityLength);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(p.data()), 9), "MCGWPROBE");
  EXPECT_EQ(p[9], std::byte{1});   // version
  EXPECT_EQ(p[10], std::byte{3});  // request
  EXPECT_EQ(p[11], std::byte{0});
  EXPECT_EQ(p[12], std::byte{0x01});  // sequence, big-endian
  EXPECT_EQ(p[19], std::byte{0x08});
  EXPECT_EQ(p[20], std::byte{0x11});  // send time
  EXPECT_EQ(p[27], std::byte{0x18});
  for (size_t i = 28; i < 32; ++i) {
    EXPECT_EQ(p[i], std::byte{0});
  }
  EXPECT_EQ(probeType(p), kQualityRequest);
  auto m = decodeQuality(p);
  ASSERT_TRUE(m);
  EXPECT_FALSE(m->reply);
  EXPECT_EQ(m->sequence, 0x0102030405060708ull);
  EXPECT_EQ(m->sent_ns, 0x1112131415161718ull);

  auto r = encodeQuality({true, 7, 123456789});
  ASSERT_EQ(r.size(), kQualityLength);  // no amplification: as long as the request
  EXPECT_EQ(r[10], std::byte{4});
  auto mr = decodeQuality(r);
  ASSERT_TRUE(mr);
  EXPECT_EQ(*mr, (QualityMessage{true, 7, 123456789}));
  // Trailing bytes are ignored.
  r.resize(64, std::byte{0xff});
  EXPECT_EQ(decodeQuality(r), (QualityMessage{true, 7, 123456789}));
}

TEST(QualityCodec, MalformedIsRefusedNeverRead) {
  const auto good = encodeQuality({false, 1, 2});
  auto bad = good;
  bad.resize(kQualityLength - 1);  // short
  EXPECT_FALSE(decodeQuality(bad));
  bad = good;
  bad[0] = std::byte{'X'};  // magic
  EXPECT_FALSE(decodeQuality(bad));
  EXPECT_EQ(probeType(bad), 0);
  bad = good;
  bad[9] = std::byte{2};  // version
  EXPECT_FALSE(decodeQuality(bad));
  bad = good;
  bad[10] = std::byte{5};  // an unknown type
  EXPECT_FALSE(decodeQuality(bad));
  EXPECT_EQ(probeType(bad), 5);
  EXPECT_FALSE(decodeQuality(std::vector<std::byte>{}));
  EXPECT_FALSE(decodeQuality(std::vector<std::byte>(5, std::byte{'M'})));
  // A path MTU probe is not a quality probe, and a responder that knows
  // only types 1 and 2 refuses quality probes (counts them as malformed).
  EXPECT_FALSE(decodeQuality(encodeProbe({false, 1, 100, 0}, 100)));
  EXPECT_FALSE(decodeProbe(good));
  EXPECT_FALSE(decodeProbe(encodeQuality({true, 1, 2})));
}

// Drives an estimator through time in 10 ms steps; each probe is answered
// after rtt(sequence) (nullopt: never).  peer_known: the peer answered a path
// MTU probe at t0 (quality probes at the full rate from the start).
class Sim {
 public:
  explicit Sim(bool peer_known = true) {
    q.setLines({"p/l1"}, now);
    if (peer_known) {
      q.onPeerAnswers("p/l1", now);
    }
  }
  void run(TimePoint until, const std::function<std::optional<milliseconds>(uint64_t)>& rtt) {
    while (now < until) {
      now += milliseconds(10);
      while (!pending.empty() && pending.front().at <= now) {
        auto p = pending.front();
        pending.pop_front();
        last = q.onReply("p/l1", p.sequence, p.sent_ns, p.at);
      }
      for (const auto& p : q.poll(now)) {
        ++sent;
        sent_at.push_back(now);
        if (auto r = rtt(p.sequence)) {
          pending.push_back({now + *r, p.sequence, p.sent_ns});
          std::sort(pending.begin(), pending.end(),
                    [](const auto& a, const auto& b) { return a.at < b.at; });
        }
      }
    }
  }
  QualityView view() const { return q.compute("p/l1", now); }

  struct Pending {
    TimePoint at;
    uint64_t sequence;
    uint64_t sent_ns;
  };
  QualityEstimator q;
  TimePoint t0 = TimePoint{} + seconds(1000);
  TimePoint now = t0;
  std::deque<Pending> pending;
  QualityEstimator::Reply last{};
  unsigned sent = 0;
  std::vector<TimePoint> sent_at;
};

TEST(QualityEstimator, KnownRttSequenceGivesExactFigures) {
  QualityEstimator q;
  const TimePoint t0 = TimePoint{} + seconds(1000);
  q.setLines({"p/l1"}, t0);
  q.onPeerAnswers("p/l1", t0);
  const int rtts[] = {10, 20, 15, 30, 10};
  for (int i = 0; i < 5; ++i) {
    const TimePoint now = t0 + milliseconds(100 * i);
    auto probes = q.poll(now);
    ASSERT_EQ(probes.size(), 1u) << i;
    EXPECT_EQ(probes[0].line, "p/l1");
    EXPECT_EQ(probes[0].sequence, static_cast<uint64_t>(i + 1));
    EXPECT_EQ(probes[0].sent_ns, toWireTime(now));
    EXPECT_EQ(q.onReply("p/l1", probes[0].sequence, probes[0].sent_ns, now + milliseconds(rtts[i])),
              QualityEstimator::Reply::kAnswered);
  }
  const QualityView v = q.compute("p/l1", t0 + seconds(2));
  EXPECT_EQ(v.state, QualityState::kOk);
  for (const QualityWindow* w : {&v.window10s, &v.window60s}) {
    EXPECT_EQ(w->probes, 5u);
    EXPECT_EQ(w->lost, 0u);
    EXPECT_DOUBLE_EQ(w->loss_ratio, 0.0);
    EXPECT_EQ(w->rtt_samples, 5u);
    EXPECT_DOUBLE_EQ(w->rtt_ms_min, 10.0);
    EXPECT_DOUBLE_EQ(w->rtt_ms_max, 30.0);
    EXPECT_DOUBLE_EQ(w->rtt_ms_mean, 17.0);
    EXPECT_DOUBLE_EQ(w->rtt_ms_last, 10.0);
    // |20-10| + |15-20| + |30-15| + |10-30| = 50 over 4 pairs.
    EXPECT_EQ(w->jitter_samples, 4u);
    EXPECT_DOUBLE_EQ(w->jitter_ms, 12.5);
  }
  EXPECT_EQ(v.counters.sent, 5u);
  EXPECT_EQ(v.counters.answered, 5u);
  // A probe still in flight counts for no window's loss.
  EXPECT_EQ(q.compute("p/l1", t0 + milliseconds(950)).window10s.probes, 0u);
  EXPECT_EQ(q.compute("p/l1", t0 + milliseconds(1000)).window10s.probes, 1u);
}

TEST(QualityEstimator, FiveOfHundredWithheldGiveFivePercentAndTheWindowsSlide) {
  Sim sim;
  const std::set<uint64_t> withheld = {3, 20, 41, 77, 99};
  auto rtt = [&](uint64_t seq) -> std::optional<milliseconds> {
    if (withheld.count(seq)) {
      return std::nullopt;
    }
    return milliseconds(5);
  };
  // Probes 1..100 are sent at t0+10ms .. t0+9.91s (the first reply, 5 ms
  // after the first probe, sets the pace); their timeouts expire by
  // t0+10.91s, when the 10 s window holds exactly them.
  sim.run(sim.t0 + milliseconds(10910), rtt);
  ASSERT_EQ(sim.sent_at[0], sim.t0 + milliseconds(10));
  ASSERT_EQ(sim.sent_at[1], sim.t0 + milliseconds(110));
  ASSERT_EQ(sim.sent_at[99], sim.t0 + milliseconds(9910));
  QualityView v = sim.view();
  EXPECT_EQ(v.window10s.probes, 100u);
  EXPECT_EQ(v.window10s.lost, 5u);
  EXPECT_DOUBLE_EQ(v.window10s.loss_ratio, 0.05);
  EXPECT_EQ(v.window60s.probes, 100u);
  EXPECT_EQ(v.window60s.lost, 5u);
  EXPECT_DOUBLE_EQ(v.window10s.rtt_ms_mean, 5.0);
  EXPECT_DOUBLE_EQ(v.window10s.jitter_ms, 0.0);
  EXPECT_EQ(v.counters.lost, 5u);
  EXPECT_EQ(v.state, QualityState::kOk);
  // The cached view of poll() is no older than 100 ms.
  const QualityView* cached = sim.q.view("p/l1");
  ASSERT_NE(cached, nullptr);
  EXPECT_LE(sim.now - cached->at, milliseconds(100));
  EXPECT_EQ(cached->window60s.lost, 5u);

  // 10 s later the losses have left the 10 s window, not the 60 s one.
  sim.run(sim.t0 + seconds(21), rtt);
  v = sim.view();
  EXPECT_EQ(v.window10s.probes, 100u);
  EXPECT_EQ(v.window10s.lost, 0u);
  EXPECT_DOUBLE_EQ(v.window10s.loss_ratio, 0.0);
  EXPECT_EQ(v.window60s.lost, 5u);
  // And after 60 s the 60 s window too; the ring (611 probes at 100 ms)
  // has wrapped around by then.
  sim.run(sim.t0 + seconds(75), rtt);
  v = sim.view();
  EXPECT_EQ(v.window60s.probes, 600u);
  EXPECT_EQ(v.window60s.lost, 0u);
  EXPECT_EQ(v.window60s.rtt_samples, 600u);  // sent in (15 s, 75 s]
  EXPECT_EQ(v.counters.lost, 5u);
  EXPECT_EQ(v.counters.answered, sim.sent - 5 - sim.pending.size());
}

TEST(QualityEstimator, DuplicateLateAndUnknownRepliesAreCounted) {
  QualityEstimator q;
  const TimePoint t0 = TimePoint{} + seconds(1000);
  q.setLines({"p/l1"}, t0);
  q.onPeerAnswers("p/l1", t0);
  auto a = q.poll(t0).at(0);
  using R = QualityEstimator::Reply;
  EXPECT_EQ(q.onReply("p/l1", a.sequence, a.sent_ns, t0 + milliseconds(3)), R::kAnswered);
  EXPECT_EQ(q.onReply("p/l1", a.sequence, a.sent_ns, t0 + milliseconds(4)), R::kDuplicate);
  auto b = q.poll(t0 + milliseconds(100)).at(0);
  // After the timeout: late, and the probe stays lost.
  EXPECT_EQ(q.onReply("p/l1", b.sequence, b.sent_ns, t0 + milliseconds(1100)), R::kLate);
  EXPECT_EQ(q.onReply("p/l1", 999, b.sent_ns, t0 + milliseconds(1100)), R::kUnknown);
  EXPECT_EQ(q.onReply("p/l1", 0, 0, t0 + milliseconds(1100)), R::kUnknown);
  // The right sequence with another send time (forged, or from before a
  // restart): unknown, and the probe is not answered by it.
  auto c = q.poll(t0 + milliseconds(200)).at(0);
  EXPECT_EQ(q.onReply("p/l1", c.sequence, c.sent_ns + 1, t0 + milliseconds(210)), R::kUnknown);
  EXPECT_EQ(q.onReply("p/other", c.sequence, c.sent_ns, t0 + milliseconds(210)), R::kUnknown);
  q.poll(t0 + milliseconds(1250));
  const QualityView v = q.compute("p/l1", t0 + milliseconds(1250));
  EXPECT_EQ(v.counters.sent, 4u);  // the poll at 1250 ms sent one more
  EXPECT_EQ(v.counters.answered, 1u);
  EXPECT_EQ(v.counters.duplicate, 1u);
  EXPECT_EQ(v.counters.late, 1u);
  EXPECT_EQ(v.counters.unknown, 3u);
  EXPECT_EQ(v.counters.lost, 2u);  // b (late) and c (forged reply only)
  EXPECT_EQ(v.window10s.probes, 3u);
  EXPECT_EQ(v.window10s.lost, 2u);
  EXPECT_EQ(v.window10s.rtt_samples, 1u);
  EXPECT_DOUBLE_EQ(v.window10s.rtt_ms_last, 3.0);
}

TEST(QualityEstimator, JitterSkipsLostProbes) {
  Sim sim;
  // RTTs 10, lost, 20, 10, 10, ...: pairs (10,20) and (20,10) then zeros.
  auto rtt = [](uint64_t seq) -> std::optional<milliseconds> {
    if (seq == 2) {
      return std::nullopt;
    }
    return milliseconds(seq == 3 ? 20 : 10);
  };
  sim.run(sim.t0 + milliseconds(500), rtt);  // probes 1..5 sent, all replies in
  QualityView v = sim.view();
  EXPECT_EQ(v.window10s.rtt_samples, 4u);
  EXPECT_EQ(v.window10s.jitter_samples, 3u);
  EXPECT_DOUBLE_EQ(v.window10s.jitter_ms, 20.0 / 3);
}

TEST(QualityEstimator, UnansweredPeerIsAskedRarelyAndRecovers) {
  Sim sim(false);
  bool answering = false;
  auto rtt = [&](uint64_t) -> std::optional<milliseconds> {
    return answering ? std::optional(milliseconds(2)) : std::nullopt;
  };
  // A peer not known to answer (no responder?) is asked every 5 s, the
  // first time 5 s after the line appeared.
  sim.run(sim.t0 + milliseconds(5500), rtt);
  EXPECT_EQ(sim.sent, 1u);
  EXPECT_EQ(sim.sent_at.at(0), sim.t0 + seconds(5));
  EXPECT_EQ(sim.view().state, QualityState::kStarting);
  sim.run(sim.t0 + milliseconds(6500), rtt);
  EXPECT_EQ(sim.view().state, QualityState::kNoAnswer);
  EXPECT_FALSE(sim.view().peer_responds);
  sim.run(sim.t0 + seconds(20), rtt);
  EXPECT_EQ(sim.sent, 4u);  // 5 s, 10 s, 15 s, 20 s
  // Its path MTU probes are answered: every 100 ms from 20.1 s ...
  sim.q.onPeerAnswers("p/l1", sim.now);
  EXPECT_TRUE(sim.q.compute("p/l1", sim.now).peer_responds);
  sim.run(sim.t0 + seconds(30), rtt);
  EXPECT_EQ(sim.sent, 4u + 100u);
  // ... until 10 s without a quality reply (an mcgw older than quality
  // probes): then once a second.
  sim.run(sim.t0 + seconds(40), rtt);
  EXPECT_EQ(sim.sent, 104u + 10u);
  QualityView v = sim.view();
  EXPECT_EQ(v.state, QualityState::kNoAnswer);
  EXPECT_DOUBLE_EQ(v.window10s.loss_ratio, 1.0);
  EXPECT_EQ(v.counters.lost, v.counters.sent - 1);  // the one sent at 40 s is in flight
  // Answers again: ok, every 100 ms.
  answering = true;
  sim.run(sim.t0 + seconds(42), rtt);
  EXPECT_EQ(sim.view().state, QualityState::kOk);
  const unsigned back = sim.sent;
  sim.run(sim.t0 + seconds(43), rtt);
  EXPECT_EQ(sim.sent - back, 10u);
}

TEST(QualityEstimator, RingIsBoundedAndSettingsApply) {
  EXPECT_EQ(QualityEstimator::ringCapacity(milliseconds(100)), 611u);
  EXPECT_EQ(QualityEstimator::ringCapacity(milliseconds(20)), 3051u);
  EXPECT_EQ(QualityEstimator::ringCapacity(milliseconds(1000)), 62u);
  EXPECT_EQ(QualityEstimator::ringCapacity(milliseconds(1)), 3051u);  // never below 20 ms

  QualityEstimator q;
  const TimePoint t0 = TimePoint{} + seconds(1000);
  q.setLines({"p/l1", "p/l2"}, t0);
  EXPECT_TRUE(q.poll(t0).empty());  // no peer known to answer yet: the first probe after 5 s
  q.onPeerAnswers("p/l1", t0);
  q.onPeerAnswers("p/l2", t0);
  EXPECT_EQ(q.poll(t0).size(), 2u);
  EXPECT_EQ(q.poll(t0 + milliseconds(50)).size(), 0u);
  // A line that stays keeps its probes; a new one starts; a gone one is forgotten.
  q.setLines({"p/l1", "p/l3"}, t0 + milliseconds(60));
  EXPECT_EQ(q.compute("p/l1", t0 + milliseconds(60)).counters.sent, 1u);
  EXPECT_EQ(q.view("p/l2"), nullptr);
  EXPECT_NE(q.view("p/l3"), nullptr);
  // Another interval starts afresh; 0 turns probing off.
  q.setSettings({milliseconds(200)}, t0 + milliseconds(70));
  EXPECT_EQ(q.compute("p/l1", t0 + milliseconds(70)).counters.sent, 0u);
  EXPECT_EQ(q.compute("p/l1", t0 + milliseconds(70)).interval, milliseconds(200));
  q.setSettings({milliseconds(0)}, t0 + milliseconds(80));
  EXPECT_TRUE(q.poll(t0 + seconds(5)).empty());
  EXPECT_EQ(q.view("p/l1"), nullptr);
  q.setLines({"p/l1"}, t0 + seconds(5));
  EXPECT_TRUE(q.lines().empty());
}

}  // namespace
}  // namespace mcgw::pmtu
