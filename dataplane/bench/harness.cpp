#include "dataplane/bench/harness.hpp"

#include <rte_errno.h>
#include <rte_eth_ring.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_ring.h>

#include <cstdio>
#include <cstdlib>

namespace mcgw::bench {

[[noreturn]] void fail(const std::string& message) {
  std::fprintf(stderr, "mcgw-bench: FAILED: %s\n", message.c_str());
  std::fflush(stderr);
  std::_Exit(1);
}

void note(const std::string& message) {
  std::fprintf(stderr, "%s\n", message.c_str());
}

config::IpAddress ip(const char* text) {
  auto a = config::IpAddress::parse(text);
  if (!a) {
    fail(std::string("bad address ") + text);
  }
  return *a;
}

config::IpPrefix prefix(const std::string& text) {
  auto p = config::IpPrefix::parse(text);
  if (!p) {
    fail("bad prefix " + text);
  }
  return *p;
}

config::MacAddress mac(const engine::Mac& m) {
  config::MacAddress out;
  out.bytes = m;
  return out;
}

config::PortConfig port(const char* name, config::PortRole role, const char* address) {
  config::PortConfig p;
  p.name = name;
  p.role = role;
  p.vdev = name;  // not used: the benchmark opens its ports itself
  p.mtu = 1500;
  p.addresses = {prefix(address)};
  if (role == config::PortRole::kLan) {
    p.tenant = "bench";
  }
  return p;
}

RingPort ringPort(const char* name, rte_mempool* pool) {
  RingPort p;
  const int socket = static_cast<int>(rte_socket_id());
  p.ring = rte_ring_create(name, 1024, socket, RING_F_SP_ENQ | RING_F_SC_DEQ);
  if (!p.ring) {
    fail(std::string("cannot create ring ") + name + ": " + rte_strerror(rte_errno));
  }
  const int id = rte_eth_from_ring(p.ring);
  if (id < 0) {
    fail(std::string("cannot create a net_ring port on ") + name + ": " + rte_strerror(rte_errno));
  }
  p.id = static_cast<uint16_t>(id);
  rte_eth_conf conf{};
  if (rte_eth_dev_configure(p.id, 1, 1, &conf) != 0 ||
      rte_eth_rx_queue_setup(p.id, 0, 1024, static_cast<unsigned>(socket), nullptr, pool) != 0 ||
      rte_eth_tx_queue_setup(p.id, 0, 1024, static_cast<unsigned>(socket), nullptr) != 0 ||
      rte_eth_dev_start(p.id) != 0) {
    fail(std::string("cannot start the net_ring port ") + name);
  }
  return p;
}

uint64_t txPackets(uint16_t port) {
  rte_eth_stats s{};
  if (rte_eth_stats_get(port, &s) != 0) {
    fail("cannot read port statistics");
  }
  return s.opackets;
}

}  // namespace mcgw::bench
