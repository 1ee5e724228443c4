// What mcgw-bench's scenario files share: failing and notes, the config
// pieces of the benchmark's topology, and the net_ring ports packets are
// fed through (main.cpp and pipeline_policy_bench.cpp).
#pragma once

#include <cstdint>
#include <string>

#include "config/config.hpp"
#include "dataplane/engine/tables.hpp"

struct rte_mempool;
struct rte_ring;

namespace mcgw::bench {

// Prints "mcgw-bench: FAILED: message" and exits 1: a benchmark of a path
// that does not do its work is worthless.
[[noreturn]] void fail(const std::string& message);
void note(const std::string& message);

// Config values the benchmark writes itself (a bad one is a bug: fail).
config::IpAddress ip(const char* text);
config::IpPrefix prefix(const std::string& text);
config::MacAddress mac(const engine::Mac& m);
// A port of the benchmark's config (its LAN ports carry tenant "bench").
config::PortConfig port(const char* name, config::PortRole role, const char* address);

// An ethdev over one rte_ring (RX and TX on the same ring).
struct RingPort {
  uint16_t id = 0;
  rte_ring* ring = nullptr;
};
RingPort ringPort(const char* name, rte_mempool* pool);
// Packets the port has sent.
uint64_t txPackets(uint16_t port);

}  // namespace mcgw::bench
