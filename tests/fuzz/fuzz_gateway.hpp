// A real Gateway (EAL --no-huge, two net_null ports) for the API fuzz target,
// behind an interface without DPDK types: the target is compiled by clang
// with coverage instrumentation, this side by GCC with the rest of mcgwd.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace mcgw::fuzz {

// The config the gateway starts with; fuzzed configs keep its eal and api
// sections (they need a restart) and its two net_null ports.
std::string startConfig(const std::string& file_prefix, const std::string& socket);

class FuzzGateway {
 public:
  // The one gateway of this process, started on first use in a temporary
  // directory; the process aborts if it cannot start.
  static FuzzGateway& get();

  // The file a reload reads.
  const std::string& configPath() const { return path_; }
  const std::string& filePrefix() const { return prefix_; }
  const std::string& socket() const { return socket_; }

  // mcgwd's API dispatch (control/daemon/requests.cpp) on this gateway.
  nlohmann::json handle(const std::string& command, const nlohmann::json& args);

 private:
  FuzzGateway();
  std::string dir_, path_, prefix_, socket_;
  struct Impl;
  Impl* impl_;
};

}  // namespace mcgw::fuzz
