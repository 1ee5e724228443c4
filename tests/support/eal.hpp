// A DPDK EAL for a component test's process: one lcore, no hugepages, no
// PCI, a file prefix of its own (tests run in parallel), `memory_mb` of
// ordinary memory.  Register it once per test binary:
//   const auto* const kEal =
//       ::testing::AddGlobalTestEnvironment(new test::EalEnvironment("fib_test", 1536));
#pragma once

#include <gtest/gtest.h>
#include <rte_eal.h>
#include <unistd.h>

#include <string>
#include <vector>

namespace mcgw::test {

class EalEnvironment : public ::testing::Environment {
 public:
  EalEnvironment(std::string name, unsigned memory_mb)
      : name_(std::move(name)), memory_mb_(memory_mb) {}
  void SetUp() override {
    std::vector<std::string> args{name_,
                                  "-l",
                                  "0",
                                  "--no-huge",
                                  "--no-shconf",
                                  "-m",
                                  std::to_string(memory_mb_),
                                  "--no-pci",
                                  "--file-prefix",
                                  name_ + std::to_string(::getpid()),
                                  "--log-level=*:error"};
    std::vector<char*> argv;
    for (auto& a : args) {
      argv.push_back(a.data());
    }
    ASSERT_GE(rte_eal_init(static_cast<int>(argv.size()), argv.data()), 0);
  }
  void TearDown() override { rte_eal_cleanup(); }

 private:
  std::string name_;
  unsigned memory_mb_;
};

}  // namespace mcgw::test
