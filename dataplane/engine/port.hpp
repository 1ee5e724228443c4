// One DPDK port opened from a PortConfig: probed, configured, started; and
// what an operator asks of it (link, MTU, MAC, counters).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>

#include "config/config.hpp"
#include "config/result.hpp"

struct rte_mempool;

namespace mcgw::engine {

// A port's device counters (rte_eth_stats), one list for PortStatus, the
// JSON views (counters.<member>) and /metrics (mcgw_port_<metric>_total):
// X(member, metric, what it counts).
#define MCGW_PORT_COUNTERS(X)                                                                   \
  X(rx_packets, "rx_packets", "packets the device received")                                    \
  X(tx_packets, "tx_packets", "packets the device sent")                                        \
  X(rx_bytes, "rx_bytes", "bytes the device received")                                          \
  X(tx_bytes, "tx_bytes", "bytes the device sent")                                              \
  X(rx_missed, "rx_missed_packets", "packets the device dropped: its receive queues were full") \
  X(rx_errors, "rx_errors", "erroneous packets received")                                       \
  X(tx_errors, "tx_errors", "packets the device failed to send")                                \
  X(rx_nombuf, "rx_nombuf", "receive buffer allocation failures")

// mcgw's DPDK owner identity (rte_eth_dev_owner): every open Port's.
uint64_t ownerId();

struct PortStatus {
  std::string name;
  std::string device;
  std::string driver;
  uint16_t port_id = 0;
  bool link_up = false;
  uint32_t speed_mbps = 0;
  bool full_duplex = false;
  uint16_t mtu = 0;
  std::string mac;
  uint16_t rx_queues = 0;
#define MCGW_PORT_COUNTER_MEMBER(member, ...) uint64_t member = 0;
  MCGW_PORT_COUNTERS(MCGW_PORT_COUNTER_MEMBER)
#undef MCGW_PORT_COUNTER_MEMBER
};

class Port {
 public:
  // Probes the device (vdev args or PCI address), configures queues and MTU,
  // and starts it.  tx_queues: one per worker.  On failure nothing is left
  // behind.
  // extra_devargs is appended to a vdev's arguments (",xdp_prog=...").
  static Result<std::unique_ptr<Port>, std::string> open(const config::PortConfig& config,
                                                         rte_mempool* pool, uint16_t tx_queues,
                                                         const std::string& extra_devargs = "");
  ~Port();  // stops, closes and detaches the device
  Port(const Port&) = delete;
  Port& operator=(const Port&) = delete;

  const config::PortConfig& config() const { return config_; }
  uint16_t id() const { return port_id_; }
  uint16_t rxQueues() const { return rx_queues_; }
  std::array<uint8_t, 6> mac() const;
  PortStatus status() const;
  // The link now (DPDK's view and, with a kernel interface, the kernel's):
  // status().link_up without the rest, for VRRP's 20 ms tracking.
  bool linkUp() const;

  // Applies a new MTU to the running port.
  Result<bool, std::string> setMtu(uint16_t mtu);
  void adoptConfig(const config::PortConfig& c) { config_ = c; }

 private:
  Port(config::PortConfig c, uint16_t id, bool probed)
      : config_(std::move(c)), port_id_(id), probed_(probed) {}
  config::PortConfig config_;
  uint16_t port_id_;
  bool probed_;  // we attached the device, so we detach it
  uint16_t rx_queues_ = 1;
};

}  // namespace mcgw::engine
