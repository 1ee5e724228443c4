// Bringing up the DPDK Environment Abstraction Layer from the config.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "config/result.hpp"

struct rte_mempool;

namespace mcgw::engine {

// The EAL arguments the config asks for (the program name first).  Pure:
// unit-testable without DPDK.
std::vector<std::string> ealArguments(const config::Config& config, const std::string& program,
                                      const std::string& log_level);

// Initialises the EAL, creates the packet mempool and chooses the ESP crypto
// engine (crypto::initEngine).  Once per process: the
// EAL cannot be re-initialised, so EAL changes need a restart.
class Eal {
 public:
  static Result<std::unique_ptr<Eal>, std::string> init(const config::Config& config,
                                                        const std::string& program,
                                                        const std::string& log_level);
  rte_mempool* mempool() const { return mempool_; }
  ~Eal();

 private:
  Eal() = default;
  rte_mempool* mempool_ = nullptr;
};

}  // namespace mcgw::engine
