// One tenant's forwarding table: IPv4 and IPv6 longest-prefix match, changed
// in place by one writer while the workers read it.
//
// Readers (workers) call find4/find6: lock-free, no allocation.  The writer
// (one thread at a time, never a worker) calls apply(); `synchronize` is the
// fast path's RCU grace period (Dataplane::synchronize): it returns once no
// worker still reads what was visible before the call.  A failed apply()
// changes nothing a reader can see.
//
// Tables are sized from the route count: a tenant with ten routes costs
// kilobytes, not the 64 MiB of a DIR-24-8 table; it grows as routes come.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "config/net.hpp"
#include "config/result.hpp"

namespace mcgw::engine {

class TenantFib {
 public:
  // A route's next hop is the caller's index (into the tenant's next hops).
  // rte_lpm6 (DPDK 22.11) stores 21 bits of it.
  static constexpr uint32_t kMaxNextHop = (1u << 21) - 1;
  static constexpr uint32_t kNoRoute = 0xffffffffu;

  struct Route {
    config::IpPrefix prefix;  // host bits are ignored; /0 is a default route
    uint32_t next_hop = 0;    // <= kMaxNextHop
  };
  // Adds or replaces the route for prefix, or (withdraw) removes it; removing
  // a prefix that is not there is not an error.
  struct Change {
    config::IpPrefix prefix;
    uint32_t next_hop = 0;
    bool withdraw = false;
  };
  using Synchronize = std::function<void()>;

  // Needs the EAL.  Builds the tables holding `routes` (may take seconds for
  // a million; any thread).  Fails with a message, nothing allocated.
  static Result<std::unique_ptr<TenantFib>, std::string> create(const std::string& name,
                                                                const std::vector<Route>& routes);
  ~TenantFib();
  TenantFib(const TenantFib&) = delete;
  TenantFib& operator=(const TenantFib&) = delete;

  // Applies the changes in order, in place.  Fails (nothing changed) on an
  // over-large next hop or when memory runs out.
  Result<bool, std::string> apply(std::span<const Change> changes, const Synchronize& synchronize);

  // Longest-prefix match; the destination in network byte order as in the
  // packet.  kNoRoute on a miss.
  uint32_t find4(const uint8_t dst[4]) const;
  uint32_t find6(const uint8_t dst[16]) const;
  // The same, for tests and the control plane.
  std::optional<uint32_t> lookup4(const uint8_t dst[4]) const;
  std::optional<uint32_t> lookup6(const uint8_t dst[16]) const;

  size_t routes() const;          // both families
  size_t memoryBytes() const;     // what the tables take now (all copies)
  const std::string& name() const;

  struct Impl;

 private:
  explicit TenantFib(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace mcgw::engine
