#include "tests/fuzz/fuzz_gateway.hpp"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "control/daemon/gateway.hpp"
#include "control/daemon/requests.hpp"

namespace mcgw::fuzz {

std::string startConfig(const std::string& file_prefix, const std::string& socket) {
  return "node:\n  name: gw-fuzz\n  site: fuzz\n"
         "eal:\n  hugepages: false\n  memory-mb: 512\n  mbufs: 2047\n  file-prefix: " +
         file_prefix +
         "\nports:\n"
         "  - name: lan0\n    role: lan\n    vdev: net_null0\n"
         "  - name: wan0\n    role: wan\n    vdev: net_null1\n"
         "api:\n  socket: " +
         socket + "\n";
}

struct FuzzGateway::Impl {
  std::unique_ptr<daemon::Gateway> gw;
};

FuzzGateway::FuzzGateway() : impl_(new Impl) {
  // A byte that is not UTF-8 in the path: every status (config.file) and
  // every config error (file:line:col) then goes through the escaping.
  char tmpl[] = "/tmp/mcgw-api-fuzz-caf\xE9-XXXXXX";
  if (!::mkdtemp(tmpl)) {
    std::perror("mkdtemp");
    std::abort();
  }
  dir_ = tmpl;
  path_ = dir_ + "/mcgw.yaml";
  prefix_ = "mcgwfuzz" + std::to_string(::getpid());
  // In the config's text, which must be UTF-8; nothing listens on it.
  socket_ = "/tmp/mcgw-api-fuzz-" + std::to_string(::getpid()) + ".sock";
  static std::string remove_at_exit;
  remove_at_exit = dir_;
  std::atexit([] { std::filesystem::remove_all(remove_at_exit); });
  std::ofstream(path_) << startConfig(prefix_, socket_);
  // The fuzzer runs thousands of reloads a second: only errors are logged.
  spdlog::set_level(spdlog::level::critical);
  auto loaded = daemon::loadConfig(path_);
  if (!loaded) {
    std::fprintf(stderr, "api_fuzz: the start config is invalid\n");
    std::abort();
  }
  auto started = daemon::Gateway::start(path_, std::move(*loaded), "api_fuzz",
                                        {"critical", dir_ + "/state", std::nullopt});
  if (!started) {
    for (const auto& e : started.error()) {
      std::fprintf(stderr, "api_fuzz: %s\n", e.c_str());
    }
    std::abort();
  }
  impl_->gw = std::move(*started);
}

FuzzGateway& FuzzGateway::get() {
  static FuzzGateway* instance = new FuzzGateway();  // lives until exit: the EAL cannot stop
  return *instance;
}

nlohmann::json FuzzGateway::handle(const std::string& command, const nlohmann::json& args) {
  daemon::Gateway& gw = *impl_->gw;
  return daemon::handleRequest(gw, command, args, [&gw] { return gw.reload(); });
}

}  // namespace mcgw::fuzz
