// The reload phases over test doubles of subsystems: validate, prepare in
// order, abort in reverse on a failure (none applies), else apply in order.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "control/daemon/subsystem.hpp"

namespace mcgw::daemon {
namespace {

// Records every phase call as "name.phase" in a shared journal.
class Recorder : public Subsystem {
 public:
  Recorder(std::string name, std::vector<std::string>& journal, bool fail_prepare = false,
           std::vector<std::string> invalid = {})
      : name_(std::move(name)),
        journal_(journal),
        fail_prepare_(fail_prepare),
        invalid_(std::move(invalid)) {}
  std::string_view name() const override { return name_; }
  std::vector<std::string> validate(const config::Config&) const override {
    journal_.push_back(name_ + ".validate");
    return invalid_;
  }
  Result<bool, std::string> prepare(const ReloadPlan&) override {
    journal_.push_back(name_ + ".prepare");
    if (fail_prepare_) {
      return unexpected(name_ + " cannot");
    }
    return true;
  }
  void apply() override { journal_.push_back(name_ + ".apply"); }
  void abort() override { journal_.push_back(name_ + ".abort"); }

 private:
  std::string name_;
  std::vector<std::string>& journal_;
  bool fail_prepare_;
  std::vector<std::string> invalid_;
};

using Journal = std::vector<std::string>;

TEST(ReloadPhasesTest, SuccessPreparesAllThenAppliesAllInOrder) {
  Journal j;
  Recorder a("ports", j), b("lines", j), c("tables", j);
  std::vector<Subsystem*> all{&a, &b, &c};
  auto r = prepareAndApply(all, ReloadPlan{});
  ASSERT_TRUE(r);
  EXPECT_EQ(j, (Journal{"ports.prepare", "lines.prepare", "tables.prepare", "ports.apply",
                        "lines.apply", "tables.apply"}));
}

TEST(ReloadPhasesTest, LaterFailureAbortsEarlierOnesInReverseAndNoneApplies) {
  Journal j;
  Recorder a("ports", j), b("lines", j), c("tables", j, true), d("kernel", j);
  std::vector<Subsystem*> all{&a, &b, &c, &d};
  auto r = prepareAndApply(all, ReloadPlan{});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error(), "tables cannot");
  // The failing one undoes its own steps; kernel was never prepared.
  EXPECT_EQ(j, (Journal{"ports.prepare", "lines.prepare", "tables.prepare", "lines.abort",
                        "ports.abort"}));
}

TEST(ReloadPhasesTest, FirstFailureAbortsNothing) {
  Journal j;
  Recorder a("ports", j, true), b("lines", j);
  std::vector<Subsystem*> all{&a, &b};
  auto r = prepareAndApply(all, ReloadPlan{});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error(), "ports cannot");
  EXPECT_EQ(j, (Journal{"ports.prepare"}));
}

TEST(ReloadPhasesTest, ValidateAsksEverySubsystemAndKeepsTheirErrorsInOrder) {
  Journal j;
  Recorder a("ports", j, false, {"port x: no"}), b("lines", j), c("tables", j, false, {"t1", "t2"});
  std::vector<Subsystem*> all{&a, &b, &c};
  EXPECT_EQ(validateAll(all, config::Config{}), (Journal{"port x: no", "t1", "t2"}));
  EXPECT_EQ(j, (Journal{"ports.validate", "lines.validate", "tables.validate"}));
}

TEST(ReloadPhasesTest, DefaultValidateAcceptsAnything) {
  struct Plain : Subsystem {
    std::string_view name() const override { return "plain"; }
    Result<bool, std::string> prepare(const ReloadPlan&) override { return true; }
    void apply() override {}
    void abort() override {}
  } plain;
  EXPECT_TRUE(plain.validate(config::Config{}).empty());
}

}  // namespace
}  // namespace mcgw::daemon
