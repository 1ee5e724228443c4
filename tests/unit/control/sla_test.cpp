// SLA steering (control/lines/sla.hpp) over an injected time: a breach takes
// a line out at once, it comes back only after keeping its SLA for the hold
// time (a flap resets the wait), the best line of a peer whose lines are
// all out is kept, and lines without an SLA or figures are left alone.
#include "control/lines/sla.hpp"

#include <gtest/gtest.h>

namespace mcgw::lines {
namespace {

using namespace std::chrono_literals;

pmtu::QualityView view(double loss, double rtt_ms, double jitter_ms = 0.1, uint32_t probes = 100) {
  pmtu::QualityView v;
  v.peer_responds = true;
  v.window10s.probes = probes;
  v.window10s.lost = static_cast<uint32_t>(loss * probes);
  v.window10s.loss_ratio = loss;
  v.window10s.rtt_samples = probes;
  v.window10s.rtt_ms_mean = rtt_ms;
  v.window10s.jitter_samples = probes - 1;
  v.window10s.jitter_ms = jitter_ms;
  return v;
}

config::SlaConfig sla() {
  config::SlaConfig s;
  s.max_loss = 0.01;
  s.max_rtt_ms = 30;
  s.max_jitter_ms = 5;
  s.hold_s = 10;
  return s;
}

TEST(SlaBreach, NamesTheFirstLimitBroken) {
  const config::SlaConfig s = sla();
  EXPECT_EQ(slaBreach(s, view(0.0, 1).window10s), std::nullopt);
  EXPECT_EQ(slaBreach(s, view(0.01, 30, 5).window10s), std::nullopt) << "at the limit is within";
  EXPECT_EQ(slaBreach(s, view(0.05, 1).window10s), "loss 5.0% > 1.0%");
  EXPECT_EQ(slaBreach(s, view(0.0, 45.5).window10s), "rtt 45.5 ms > 30 ms");
  EXPECT_EQ(slaBreach(s, view(0.0, 1, 7).window10s), "jitter 7.0 ms > 5 ms");
  config::SlaConfig rtt_only;
  rtt_only.max_rtt_ms = 30;
  EXPECT_EQ(slaBreach(rtt_only, view(0.5, 1).window10s), std::nullopt) << "no loss limit";
}

class SlaSteeringTest : public ::testing::Test {
 protected:
  std::vector<std::string> step(pmtu::QualityView a, pmtu::QualityView b, bool b_up = true) {
    qa_ = a;
    qb_ = b;
    now_ += 1s;
    return steering_.update({{"site-b", "line1", &sla_, &qa_, true},
                             {"site-b", "line2", &sla_, &qb_, b_up},
                             {"site-c", "line1", nullptr, &qa_, true}},
                            now_);
  }
  config::SlaConfig sla_ = sla();
  pmtu::QualityView qa_, qb_;
  pmtu::TimePoint now_{};
  SlaSteering steering_;
};

TEST_F(SlaSteeringTest, OutAtOnceBackAfterTheHoldTimeWithoutAFlap) {
  EXPECT_TRUE(step(view(0, 1), view(0, 1)).empty());
  EXPECT_TRUE(steering_.usable("site-b", "line1"));
  auto log = step(view(0.05, 1), view(0, 1));
  ASSERT_EQ(log.size(), 1u);
  EXPECT_EQ(log[0], "line site-b/line1: outside its SLA (loss 5.0% > 1.0%): taken out of use");
  EXPECT_FALSE(steering_.usable("site-b", "line1"));
  EXPECT_TRUE(steering_.usable("site-b", "line2"));
  // Within again for 9 s, then a breach: the wait starts over.
  for (int i = 0; i < 9; ++i) {
    EXPECT_TRUE(step(view(0, 1), view(0, 1)).empty());
    EXPECT_FALSE(steering_.usable("site-b", "line1")) << i;
  }
  step(view(0.02, 1), view(0, 1));
  EXPECT_FALSE(steering_.usable("site-b", "line1"));
  for (int i = 0; i < 10; ++i) {
    step(view(0, 1), view(0, 1));
  }
  EXPECT_FALSE(steering_.usable("site-b", "line1")) << "10 steps = 9 s within since the first";
  log = step(view(0, 1), view(0, 1));
  ASSERT_EQ(log.size(), 1u);
  EXPECT_EQ(log[0], "line site-b/line1: within its SLA for 10 s: in use again");
  EXPECT_TRUE(steering_.usable("site-b", "line1"));
  EXPECT_EQ(steering_.state("site-b", "line1")->changes, 2u);
  EXPECT_EQ(steering_.state("site-c", "line1"), nullptr) << "no sla: not judged";
  EXPECT_TRUE(steering_.usable("site-c", "line1"));
}

TEST_F(SlaSteeringTest, EveryLineOutKeepsTheBestOne) {
  step(view(0.05, 1), view(0.20, 1));
  EXPECT_TRUE(steering_.usable("site-b", "line1")) << "the best of two lines out";
  EXPECT_FALSE(steering_.usable("site-b", "line2"));
  EXPECT_TRUE(steering_.state("site-b", "line1")->kept_best);
  // The other gets a little better: line 1 stays (no swapping between alike lines).
  EXPECT_TRUE(step(view(0.05, 1), view(0.045, 1)).empty());
  EXPECT_TRUE(steering_.usable("site-b", "line1"));
  EXPECT_FALSE(steering_.usable("site-b", "line2"));
  // Clearly better: it is kept instead (still outside).
  auto log = step(view(0.05, 1), view(0.02, 1));
  EXPECT_FALSE(steering_.usable("site-b", "line1"));
  EXPECT_TRUE(steering_.usable("site-b", "line2"));
  ASSERT_FALSE(log.empty());
  EXPECT_EQ(log.back(),
            "peer site-b: every line is outside its SLA; using line2, the best (loss 2.0% > 1.0%)");
  // Line 2 down by another input: line 1 is the only one up, kept.
  step(view(0.05, 1), view(0.02, 1), false);
  EXPECT_TRUE(steering_.usable("site-b", "line1"));
}

TEST_F(SlaSteeringTest, TooFewProbesOrASilentPeerAreNotJudged) {
  step(view(0.5, 1, 0.1, 10), view(0, 1));
  EXPECT_TRUE(steering_.usable("site-b", "line1")) << "10 probes say nothing yet";
  pmtu::QualityView silent = view(1.0, 0);
  silent.peer_responds = false;
  step(silent, view(0, 1));
  EXPECT_TRUE(steering_.usable("site-b", "line1"));
}

}  // namespace
}  // namespace mcgw::lines
