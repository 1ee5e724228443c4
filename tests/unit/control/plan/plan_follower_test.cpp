// A gateway following its store (control/plan/plan_follower.hpp) on a real
// event loop, with a store whose answers the test scripts: new revisions are
// handed over (held while paused), adopted and refused ones are shown, an
// unreachable store is shown and healed, and a store whose revision goes
// back (restored, replaced) is taken as the plan now.
#include "control/plan/plan_follower.hpp"

#include <gtest/gtest.h>

#include <deque>
#include <mutex>
#include <thread>

namespace mcgw::plan {
namespace {

using namespace std::chrono_literals;

Snapshot at(uint64_t revision, const std::string& vpc = "") {
  Snapshot s;
  s.revision = revision;
  if (!vpc.empty()) {
    s.vpcs.push_back(
        {vpc, "aws", "r1", {*config::IpPrefix::parse("10.64.0.0/16")}, "", "", "", "allocate"});
  }
  return s;
}

// Answers waitChange from a script; with none left, the last snapshot after
// a short wait, as a store without news does at its timeout.
class ScriptedStore : public Store {
 public:
  void push(StoreResult<Snapshot> r) {
    std::lock_guard lock(mu_);
    script_.push_back(std::move(r));
  }
  StoreResult<Snapshot> load() override { return Snapshot{}; }
  StoreResult<Snapshot> update(const Change&) override {
    return unexpected(StoreError{StoreError::Kind::kAborted, "not in this test"});
  }
  StoreResult<Snapshot> waitChange(uint64_t after, std::chrono::milliseconds,
                                   const std::atomic<bool>&) override {
    {
      std::lock_guard lock(mu_);
      afters_.push_back(after);
      if (!script_.empty()) {
        auto r = std::move(script_.front());
        script_.pop_front();
        if (r) {
          last_ = *r;
        }
        return r;
      }
    }
    std::this_thread::sleep_for(150ms);
    std::lock_guard lock(mu_);
    return last_;
  }
  std::string describe() const override { return "scripted"; }
  std::vector<uint64_t> afters() {
    std::lock_guard lock(mu_);
    return afters_;
  }

 private:
  std::mutex mu_;
  std::deque<StoreResult<Snapshot>> script_;
  std::vector<uint64_t> afters_;
  Snapshot last_;
};

class PlanFollowerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto l = core::EventLoop::create();
    ASSERT_TRUE(l.ok()) << l.error();
    loop_ = std::move(*l);
  }
  void start(Snapshot adopted = at(0)) {
    auto store = std::make_unique<ScriptedStore>();
    store_ = store.get();
    follower_ = std::make_unique<PlanFollower>(std::move(store), std::move(adopted), std::nullopt);
  }
  void attach() {
    follower_->attach(*loop_, [this](const Snapshot& s) { heard_.push_back(s); });
  }
  void runUntil(const std::function<bool()>& done, std::chrono::seconds limit = 10s) {
    auto until = std::chrono::steady_clock::now() + limit;
    while (!done() && std::chrono::steady_clock::now() < until) {
      loop_->runOnce(20ms);
    }
  }
  void TearDown() override {
    follower_.reset();  // before the loop: its worker posts to it
  }

  std::unique_ptr<core::EventLoop> loop_;
  ScriptedStore* store_ = nullptr;
  std::unique_ptr<PlanFollower> follower_;
  std::vector<Snapshot> heard_;
};

TEST_F(PlanFollowerTest, HandsOverNewRevisionsAndShowsWhatBecameOfThem) {
  start();
  store_->push(at(3, "a"));
  attach();
  runUntil([&] { return !heard_.empty(); });
  ASSERT_EQ(heard_.size(), 1u);
  EXPECT_EQ(heard_[0].revision, 3u);
  ASSERT_TRUE(follower_->pending());
  EXPECT_EQ(follower_->pending()->revision, 3u);

  follower_->refused(heard_[0], {"10.64.0.0/16 overlaps something"});
  EXPECT_EQ(follower_->problem(),
            "address plan revision 3 refused (see status address_plan.refused); running "
            "revision 0");
  EXPECT_EQ(follower_->status()["refused"]["revision"], 3);
  EXPECT_EQ(follower_->pending()->revision, 3u) << "tried again after the next reload";

  follower_->adopted(heard_[0]);
  EXPECT_EQ(follower_->problem(), "");
  EXPECT_FALSE(follower_->pending());
  EXPECT_EQ(follower_->snapshot().revision, 3u);
  EXPECT_EQ(follower_->status()["stored_vpcs"], 1);
  // The store is asked from the newest revision seen.
  runUntil([&] { return store_->afters().size() >= 3; });
  const auto afters = store_->afters();
  ASSERT_GE(afters.size(), 2u);
  EXPECT_EQ(afters[0], 0u);
  EXPECT_EQ(afters[1], 3u);
}

TEST_F(PlanFollowerTest, ARevisionSeenWhilePausedIsHandedOverOnResume) {
  start();
  attach();
  follower_->setPaused(true);
  store_->push(at(5, "b"));
  runUntil([&] { return store_->afters().size() >= 3; });
  EXPECT_TRUE(heard_.empty()) << "nothing while paused";
  follower_->setPaused(false);
  ASSERT_EQ(heard_.size(), 1u);
  EXPECT_EQ(heard_[0].revision, 5u);
}

TEST_F(PlanFollowerTest, AnUnreachableStoreIsShownUntilItAnswers) {
  start(at(7, "c"));
  store_->push(unexpected(StoreError{StoreError::Kind::kUnreachable, "connection refused"}));
  attach();
  runUntil([&] { return follower_->status()["state"] == "unreachable"; });
  EXPECT_EQ(follower_->status()["state"], "unreachable");
  EXPECT_EQ(follower_->status()["error"], "connection refused");
  EXPECT_NE(follower_->problem().find("address plan store scripted unreachable since "),
            std::string::npos)
      << follower_->problem();
  EXPECT_NE(follower_->problem().find("; running plan revision 7"), std::string::npos);
  // Asked again after kRetry; the store answers with what it had.
  store_->push(at(7, "c"));
  runUntil([&] { return follower_->status()["state"] == "ok"; });
  EXPECT_EQ(follower_->status()["state"], "ok");
  EXPECT_EQ(follower_->problem(), "");
  EXPECT_TRUE(heard_.empty()) << "no new revision";
}

TEST_F(PlanFollowerTest, AStoreWhoseRevisionGoesBackIsThePlanNow) {
  start(at(40, "old"));
  store_->push(at(2, "new"));  // etcd replaced by a new cluster
  attach();
  runUntil([&] { return !heard_.empty(); });
  ASSERT_EQ(heard_.size(), 1u);
  EXPECT_EQ(heard_[0].revision, 2u);
  EXPECT_EQ(heard_[0].vpcs.at(0).name, "new");
  follower_->adopted(heard_[0]);
  EXPECT_EQ(follower_->snapshot().revision, 2u);
  // Asked from the new revision, not the old one.
  runUntil([&] { return store_->afters().size() >= 2; });
  EXPECT_EQ(store_->afters().at(1), 2u);
}

}  // namespace
}  // namespace mcgw::plan
