// The fixture of the component tests that run mcgwd for real on net_null
// vdevs (EAL --no-huge): a temporary directory with the config, the socket,
// the log and the state directory; start(), mcgwctl, SIGHUP.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/support/process.hpp"

namespace mcgw::test {

inline std::atomic<int> instance{0};

inline std::string nullConfig(const std::string& socket, const std::string& prefix,
                              const std::string& extra = "") {
  return "node:\n  name: gw-test\n  site: lab\n"
         "eal:\n  hugepages: false\n  memory-mb: 512\n  mbufs: 2047\n  file-prefix: " +
         prefix +
         "\n"
         "ports:\n"
         "  - name: lan0\n    role: lan\n    vdev: net_null0\n"
         "  - name: wan0\n    role: wan\n    vdev: net_null1\n" +
         extra + "api:\n  socket: " + socket + "\n";
}

class DaemonTest : public ::testing::Test {
 protected:
  void SetUp() override {
    socket_ = dir_.file("mcgw.sock");
    config_ = dir_.file("mcgw.yaml");
    prefix_ = "mcgwt" + std::to_string(::getpid()) + "x" + std::to_string(instance++);
  }

  // Starts mcgwd on the current config file and waits for READY=1.
  // args: more mcgwd arguments.
  void start(std::map<std::string, std::string> env = {},
             const std::vector<std::string>& args = {}) {
    // Again after a stop: the old listener goes (and its socket file) first.
    daemon_.reset();
    notify_.reset();
    ::unlink(dir_.file("notify.sock").c_str());
    notify_ = std::make_unique<NotifyListener>(dir_.file("notify.sock"));
    env["NOTIFY_SOCKET"] = notify_->path();
    std::vector<std::string> argv{kMcgwd,     "--config",    config_, "--state-dir",
                                  stateDir(), "--log-level", "debug"};
    argv.insert(argv.end(), args.begin(), args.end());
    daemon_ = std::make_unique<Process>(argv, env, dir_.file("mcgwd.log"));
    ASSERT_GE(notify_->waitFor("READY=1", 60s), 0) << "mcgwd never became ready:\n" << log();
  }

  std::string log() const { return readFile(dir_.file("mcgwd.log")); }
  // Where this test's mcgwd keeps its last good copy (never /var/lib/mcgw).
  std::string stateDir() const { return dir_.file("state"); }
  CommandResult ctl(const std::string& args) {
    return run(kMcgwctl + " --socket " + socket_ + " " + args);
  }
  nlohmann::json status() {
    CommandResult r = ctl("status --json");
    nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << r.out << r.err;
    return j;
  }
  // SIGHUP, then wait for the READY=1 that ends the reload.
  void hangup() {
    size_t seen = notify_->messages().size();
    daemon_->signal(SIGHUP);
    int reloading = notify_->waitFor("RELOADING=1", 30s, seen);
    ASSERT_GE(reloading, 0) << log();
    ASSERT_GE(notify_->waitFor("READY=1", 30s, static_cast<size_t>(reloading)), 0) << log();
  }

  TempDir dir_;
  std::string socket_, config_, prefix_;
  std::unique_ptr<NotifyListener> notify_;
  std::unique_ptr<Process> daemon_;
};

}  // namespace mcgw::test
