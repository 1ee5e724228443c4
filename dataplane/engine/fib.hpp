// One tenant's forwarding table: IPv4 on rte_lpm, IPv6 on rte_lpm6.
//
// A TenantFib is built whole by the control plane and never changed after:
// a route change builds a new one, which is published to the workers (RCU)
// while they keep reading the old.  Lookups are lock-free and allocate
// nothing.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "config/net.hpp"
#include "config/result.hpp"

#include <rte_byteorder.h>
#include <rte_lpm.h>
#include <rte_lpm6.h>

namespace mcgw::engine {

class TenantFib {
 public:
  // A route's next hop is the caller's index (a tunnel, a LAN neighbour).
  // rte_lpm stores 24 bits of it, rte_lpm6 (DPDK 22.11) 21: one limit for both.
  static constexpr uint32_t kMaxNextHop = (1u << 21) - 1;

  struct Route {
    config::IpPrefix prefix;  // host bits are ignored
    uint32_t next_hop = 0;    // <= kMaxNextHop
                              // a default route (/0) is kept beside the tables
  };

  struct Limits {
    uint32_t max_rules_v4 = 1 << 16;
    uint32_t tbl8s_v4 = 1 << 12;
    uint32_t max_rules_v6 = 1 << 14;
    uint32_t tbl8s_v6 = 1 << 14;
  };

  // Needs the EAL.  Fails (nothing allocated) on an over-large next hop, a
  // table that cannot be created, or more routes than the limits allow.
  static Result<std::unique_ptr<TenantFib>, std::string> build(const std::string& name,
                                                               const std::vector<Route>& routes,
                                                               const Limits& limits);
  static Result<std::unique_ptr<TenantFib>, std::string> build(const std::string& name,
                                                               const std::vector<Route>& routes) {
    return build(name, routes, Limits{});
  }
  ~TenantFib();
  TenantFib(const TenantFib&) = delete;
  TenantFib& operator=(const TenantFib&) = delete;

  // Longest-prefix match; the destination in network byte order as in the packet.
  std::optional<uint32_t> lookup4(const uint8_t dst[4]) const;
  std::optional<uint32_t> lookup6(const uint8_t dst[16]) const;

  // The same for the fast path: inline, kNoRoute on a miss (no optional to
  // spill and reload).
  static constexpr uint32_t kNoRoute = 0xffffffffu;
  uint32_t find4(const uint8_t dst[4]) const {
    uint32_t be;
    __builtin_memcpy(&be, dst, 4);
    uint32_t nh;
    return rte_lpm_lookup(v4_, rte_be_to_cpu_32(be), &nh) == 0 ? nh : default4_;
  }
  uint32_t find6(const uint8_t dst[16]) const {
    uint32_t nh;
    return rte_lpm6_lookup(v6_, dst, &nh) == 0 ? nh : default6_;
  }
  size_t routes() const { return routes_; }

 private:
  TenantFib() = default;
  rte_lpm* v4_ = nullptr;
  rte_lpm6* v6_ = nullptr;
  // rte_lpm has no depth 0: the default routes answer a miss.
  std::optional<uint32_t> default_v4_;
  std::optional<uint32_t> default_v6_;
  uint32_t default4_ = kNoRoute;  // the same, for find4/find6
  uint32_t default6_ = kNoRoute;
  size_t routes_ = 0;
};

}  // namespace mcgw::engine
