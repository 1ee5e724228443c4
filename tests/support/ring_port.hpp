// A DPDK ethdev over one rte_ring (net_ring): RX and TX on the same ring,
// so a component test feeds the port's RX by enqueueing mbufs on `ring` and
// reads what the fast path transmitted from the same ring.  Needs the EAL
// (tests/support/eal.hpp).
#pragma once

#include <gtest/gtest.h>
#include <rte_errno.h>
#include <rte_eth_ring.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_ring.h>

#include <cstdint>
#include <string>
#include <vector>

namespace mcgw::test {

struct RingPort {
  uint16_t id = 0;
  rte_ring* ring = nullptr;  // RX and TX: the test reads what the port sent
};

// A started port on a new 1024-slot ring called `name`; failures are test
// failures.
inline RingPort ringPort(const char* name, rte_mempool* pool) {
  RingPort p;
  const int socket = static_cast<int>(rte_socket_id());
  p.ring = rte_ring_create(name, 1024, socket, RING_F_SP_ENQ | RING_F_SC_DEQ);
  EXPECT_NE(p.ring, nullptr) << rte_strerror(rte_errno);
  const int id = p.ring ? rte_eth_from_ring(p.ring) : -1;
  EXPECT_GE(id, 0) << rte_strerror(rte_errno);
  if (id < 0) {
    return p;  // one failure, not one per call below
  }
  p.id = static_cast<uint16_t>(id);
  rte_eth_conf conf{};
  EXPECT_EQ(rte_eth_dev_configure(p.id, 1, 1, &conf), 0);
  EXPECT_EQ(rte_eth_rx_queue_setup(p.id, 0, 1024, static_cast<unsigned>(socket), nullptr, pool), 0);
  EXPECT_EQ(rte_eth_tx_queue_setup(p.id, 0, 1024, static_cast<unsigned>(socket), nullptr), 0);
  EXPECT_EQ(rte_eth_dev_start(p.id), 0);
  return p;
}

// A started port over two rte_rings (named rx_NAME and tx_NAME, of the
// given sizes): `rx` the test fills and the port receives from, `tx` that
// every one of its `tx_queues` TX queues (one per worker) transmits into
// (multi-producer) and the test reads.
struct RingPair {
  uint16_t id = 0;
  rte_ring* rx = nullptr;
  rte_ring* tx = nullptr;
};
inline RingPair ringPair(const std::string& name, rte_mempool* pool, uint16_t tx_queues,
                         unsigned rx_size = 1024, unsigned tx_size = 1024) {
  RingPair p;
  const int socket = static_cast<int>(rte_socket_id());
  p.rx = rte_ring_create(("rx_" + name).c_str(), rx_size, socket, 0);
  p.tx = rte_ring_create(("tx_" + name).c_str(), tx_size, socket, 0);
  EXPECT_TRUE(p.rx && p.tx) << rte_strerror(rte_errno);
  if (!p.rx || !p.tx) {
    return p;
  }
  rte_ring* rx[1] = {p.rx};
  std::vector<rte_ring*> tx(tx_queues, p.tx);
  const int id =
      rte_eth_from_rings(name.c_str(), rx, 1, tx.data(), tx_queues, static_cast<unsigned>(socket));
  EXPECT_GE(id, 0) << "rte_eth_from_rings " << name << ": " << rte_strerror(rte_errno);
  if (id < 0) {
    return p;
  }
  p.id = static_cast<uint16_t>(id);
  rte_eth_conf conf{};
  EXPECT_EQ(rte_eth_dev_configure(p.id, 1, tx_queues, &conf), 0);
  EXPECT_EQ(rte_eth_rx_queue_setup(p.id, 0, 1024, static_cast<unsigned>(socket), nullptr, pool), 0);
  for (uint16_t q = 0; q < tx_queues; ++q) {
    EXPECT_EQ(rte_eth_tx_queue_setup(p.id, q, 1024, static_cast<unsigned>(socket), nullptr), 0);
  }
  EXPECT_EQ(rte_eth_dev_start(p.id), 0);
  return p;
}

}  // namespace mcgw::test
