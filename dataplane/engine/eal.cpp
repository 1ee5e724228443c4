#include "dataplane/engine/eal.hpp"

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "dataplane/crypto/esp.hpp"

namespace mcgw::engine {

std::vector<std::string> ealArguments(const config::Config& c, const std::string& program,
                                      const std::string& log_level) {
  std::vector<uint16_t> lcores{c.eal.main_lcore};
  for (uint16_t w : c.eal.workers) {
    lcores.push_back(w);
  }
  std::sort(lcores.begin(), lcores.end());
  std::string list;
  for (uint16_t l : lcores) {
    list += (list.empty() ? "" : ",") + std::to_string(l);
  }
  std::vector<std::string> args{program,
                                "-l",
                                list,
                                "--main-lcore",
                                std::to_string(c.eal.main_lcore),
                                "-m",
                                std::to_string(c.eal.memory_mb),
                                "--file-prefix",
                                c.eal.file_prefix};
  if (!c.eal.hugepages) {
    // DPDK 22.11: --no-huge implies legacy memory, which refuses --in-memory;
    // --no-shconf keeps instances from sharing runtime files all the same.
    args.insert(args.end(), {"--no-huge", "--no-shconf"});
  }
  // PCI devices are allow-listed; vdevs are hot-plugged by Port::open so
  // that start and reload share one path.
  bool any_pci = false;
  for (const auto& p : c.ports) {
    if (!p.pci.empty()) {
      args.insert(args.end(), {"-a", p.deviceName()});
      any_pci = true;
    }
  }
  if (!any_pci) {
    args.push_back("--no-pci");
  }
  // DPDK's own log follows ours, one step quieter.
  std::string dpdk_level = "notice";
  if (log_level == "trace" || log_level == "debug") {
    dpdk_level = "info";
  } else if (log_level == "error" || log_level == "critical" || log_level == "off") {
    dpdk_level = "error";
  } else if (log_level == "warning") {
    dpdk_level = "warning";
  }
  args.push_back("--log-level=*:" + dpdk_level);
  for (const auto& extra : c.eal.extra_args) {
    args.push_back(extra);
  }
  return args;
}

Result<std::unique_ptr<Eal>, std::string> Eal::init(const config::Config& config,
                                                    const std::string& program,
                                                    const std::string& log_level) {
  std::vector<std::string> args = ealArguments(config, program, log_level);
  std::vector<char*> argv;
  for (auto& a : args) {
    argv.push_back(a.data());
  }
  argv.push_back(nullptr);
  if (rte_eal_init(static_cast<int>(args.size()), argv.data()) < 0) {
    return unexpected(std::string("DPDK EAL initialisation failed: ") + rte_strerror(rte_errno));
  }
  std::unique_ptr<Eal> eal(new Eal());
  // The AES-GCM engine of every SA made from now on (docs/encryption.md,
  // "Crypto engine"): cryptodev on intel-ipsec-mb, else OpenSSL EVP.
  const crypto::EngineChoice crypto = crypto::initEngine();
  if (crypto.engine == crypto::Engine::kCryptodev) {
    spdlog::info("ESP crypto engine: {} (crypto_aesni_gcm0, synchronous CPU crypto)",
                 crypto::engineName());
  } else {
    spdlog::warn("ESP crypto engine: {} ({})", crypto::engineName(), crypto.reason);
  }
  eal->mempool_ = rte_pktmbuf_pool_create("mcgw_mbufs", config.eal.mbufs, 256, 0,
                                          RTE_MBUF_DEFAULT_BUF_SIZE, rte_socket_id());
  if (!eal->mempool_) {
    return unexpected(std::string("cannot create the packet mempool (") +
                      std::to_string(config.eal.mbufs) + " mbufs): " + rte_strerror(rte_errno) +
                      "; raise eal.memory-mb or lower eal.mbufs");
  }
  return eal;
}

Eal::~Eal() {
  if (!crypto::shutdownEngine()) {
    spdlog::warn("ESP crypto engine: SAs still hold cryptodev sessions at exit; left to the EAL");
  }
  rte_mempool_free(mempool_);
  rte_eal_cleanup();
}

}  // namespace mcgw::engine
