// One tenant's forwarding table: IPv4 and IPv6 longest-prefix match, changed
// in place by one writer while the workers read it.
//
// Readers (workers) call find4/find6: lock-free, no allocation, one atomic
// load and DPDK's lookup.  The writer (one thread at a time, never a worker)
// calls apply(); `synchronize` is the fast path's RCU grace period
// (Dataplane::synchronize): it returns once no worker still reads what was
// visible before the call.  A failed apply() changes nothing a reader can see.
//
// Tables are sized from the route count.  Up to Sizing::small_routes routes
// a family is a sorted array of address ranges (kilobytes), binary-searched,
// replaced whole by each apply().  Beyond, it is a DIR-24-8 (rte_fib, IPv4)
// or TRIE (rte_fib6, IPv6) table whose tbl8 groups and RIB nodes are sized
// from the routes, held twice (left-right): DPDK 22.11's rte_fib/rte_fib6
// have no RCU hook, so the writer changes only the copy no worker reads,
// publishes it with one atomic store, waits for the grace period and then
// makes the same changes to the other copy.  docs/architecture.md ("Tables
// and their publication") has the design and the memory per route.
#pragma once

#include <rte_byteorder.h>
#include <rte_fib.h>
#include <rte_fib6.h>

#include <atomic>
#include <compare>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
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
  // rte_fib and rte_fib6 with 4-byte entries hold 31 bits; the largest value
  // marks a miss.
  static constexpr uint32_t kMaxNextHop = (1u << 31) - 2;
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

  // How the tables are sized.  The defaults are what mcgwd uses.
  struct Sizing {
    // Per family: up to this many routes the family is a range array (16 to
    // 64 bytes per route, lookups binary-search it); above it the
    // 64 MiB-per-copy DIR-24-8 / TRIE form.  Back to the array below half.
    size_t small_routes = 4096;
    // Refuse to build a table copy estimated larger than this (tests use it
    // to provoke an out-of-memory failure).
    size_t max_copy_bytes = std::numeric_limits<size_t>::max();
  };

  // Needs the EAL.  Builds the tables holding `routes` (about a second per
  // million routes; any thread).  Fails with a message, nothing allocated.
  static Result<std::unique_ptr<TenantFib>, std::string> create(const std::string& name,
                                                                const std::vector<Route>& routes);
  static Result<std::unique_ptr<TenantFib>, std::string> create(const std::string& name,
                                                                const std::vector<Route>& routes,
                                                                const Sizing& sizing);
  ~TenantFib();
  TenantFib(const TenantFib&) = delete;
  TenantFib& operator=(const TenantFib&) = delete;

  // Applies the changes in order, in place (a table is rebuilt only when it
  // changes form or outgrows its size).  Fails (nothing changed) on an
  // over-large next hop or when memory runs out.
  Result<bool, std::string> apply(std::span<const Change> changes, const Synchronize& synchronize);

  // Longest-prefix match; the destination in network byte order as in the
  // packet.  kNoRoute on a miss.
  uint32_t find4(const uint8_t dst[4]) const {
    const Table4* t = table4_.load(std::memory_order_acquire);
    uint32_t be;
    std::memcpy(&be, dst, 4);
    uint32_t ip = rte_be_to_cpu_32(be);
    if (t->fib) {
      uint64_t nh;
      rte_fib_lookup_bulk(t->fib, &ip, &nh, 1);
      return nh == kMiss ? kNoRoute : static_cast<uint32_t>(nh);
    }
    // The last range starting at or below ip (starts[0] is 0).
    const uint32_t* base = t->starts;
    for (uint32_t len = t->n; len > 1;) {
      const uint32_t half = len / 2;
      base = base[half] <= ip ? base + half : base;
      len -= half;
    }
    return t->hops[base - t->starts];
  }
  uint32_t find6(const uint8_t dst[16]) const {
    const Table6* t = table6_.load(std::memory_order_acquire);
    if (t->fib) {
      uint8_t ip[1][RTE_FIB6_IPV6_ADDR_SIZE];
      std::memcpy(ip[0], dst, 16);
      uint64_t nh;
      rte_fib6_lookup_bulk(t->fib, ip, &nh, 1);
      return nh == kMiss ? kNoRoute : static_cast<uint32_t>(nh);
    }
    uint64_t hi, lo;
    std::memcpy(&hi, dst, 8);
    std::memcpy(&lo, dst + 8, 8);
    const Key6 ip{rte_be_to_cpu_64(hi), rte_be_to_cpu_64(lo)};
    const Key6* base = t->starts;
    for (uint32_t len = t->n; len > 1;) {
      const uint32_t half = len / 2;
      base = !(ip < base[half]) ? base + half : base;
      len -= half;
    }
    return t->hops[base - t->starts];
  }
  // The lookups of a burst (at most kMaxBulk): the same answers as find4 /
  // find6 for each destination (IPv4 in host byte order here), with the
  // table loads of the destinations overlapped instead of one after the
  // other: DPDK's bulk lookup (which prefetches), or the range array's
  // binary searches one after the other in a loop the core overlaps (they
  // do not depend on one another; searching in lockstep measured the same).
  static constexpr unsigned kMaxBulk = 64;
  void find4Bulk(uint32_t* ips, uint32_t* nh, unsigned n) const {
    const Table4* t = table4_.load(std::memory_order_acquire);
    if (t->fib) {
      uint64_t out[kMaxBulk];
      rte_fib_lookup_bulk(t->fib, ips, out, static_cast<int>(n));
      for (unsigned i = 0; i < n; ++i) {
        nh[i] = out[i] == kMiss ? kNoRoute : static_cast<uint32_t>(out[i]);
      }
      return;
    }
    // Each destination's search on its own: the searches do not depend on
    // one another, so the core runs several at once (the loop's trip count
    // is the same for all, and predicted).
    for (unsigned i = 0; i < n; ++i) {
      const uint32_t ip = ips[i];
      const uint32_t* base = t->starts;
      for (uint32_t len = t->n; len > 1;) {
        const uint32_t half = len / 2;
        base = base[half] <= ip ? base + half : base;
        len -= half;
      }
      nh[i] = t->hops[base - t->starts];
    }
  }
  void find6Bulk(uint8_t (*ips)[16], uint32_t* nh, unsigned n) const {
    const Table6* t = table6_.load(std::memory_order_acquire);
    if (t->fib) {
      uint64_t out[kMaxBulk];
      rte_fib6_lookup_bulk(t->fib, ips, out, static_cast<int>(n));
      for (unsigned i = 0; i < n; ++i) {
        nh[i] = out[i] == kMiss ? kNoRoute : static_cast<uint32_t>(out[i]);
      }
      return;
    }
    Key6 keys[kMaxBulk];
    const Key6* base[kMaxBulk];
    for (unsigned i = 0; i < n; ++i) {
      uint64_t hi, lo;
      std::memcpy(&hi, ips[i], 8);
      std::memcpy(&lo, ips[i] + 8, 8);
      keys[i] = Key6{rte_be_to_cpu_64(hi), rte_be_to_cpu_64(lo)};
      base[i] = t->starts;
    }
    for (uint32_t len = t->n; len > 1;) {
      const uint32_t half = len / 2;
      for (unsigned i = 0; i < n; ++i) {
        base[i] = !(keys[i] < base[i][half]) ? base[i] + half : base[i];
      }
      len -= half;
    }
    for (unsigned i = 0; i < n; ++i) {
      nh[i] = t->hops[base[i] - t->starts];
    }
  }
  // The same, for tests and the control plane.
  std::optional<uint32_t> lookup4(const uint8_t dst[4]) const;
  std::optional<uint32_t> lookup6(const uint8_t dst[16]) const;

  size_t routes() const;       // both families
  size_t memoryBytes() const;  // what the table copies take now (estimated from their sizes)
  const std::string& name() const;
  // Which form each family has now (for tests and the bench): true when it
  // is the DIR-24-8 / TRIE table, false for the range array.
  bool large4() const;
  bool large6() const;
  // Table copies built since create() (growth, form switches, repairs);
  // changes made in place do not count.
  size_t rebuilds() const;

  struct Impl;

  // What the workers read for one family, published as one pointer: the
  // DPDK table, or (fib null) n ranges, sorted by start, starts[0] == 0,
  // each answering its hop (kNoRoute where no route covers it).
  struct Key6 {
    uint64_t hi = 0, lo = 0;  // the address in host order
    auto operator<=>(const Key6&) const = default;
  };
  struct Table4 {
    rte_fib* fib = nullptr;
    const uint32_t* starts = nullptr;
    const uint32_t* hops = nullptr;
    uint32_t n = 0;
  };
  struct Table6 {
    rte_fib6* fib = nullptr;
    const Key6* starts = nullptr;
    const uint32_t* hops = nullptr;
    uint32_t n = 0;
  };

 private:
  // What the tables answer on a miss (the largest value they hold).
  static constexpr uint64_t kMiss = (1u << 31) - 1;

  TenantFib(std::unique_ptr<Impl> impl);
  // The copies the workers read now.
  std::atomic<const Table4*> table4_{nullptr};
  std::atomic<const Table6*> table6_{nullptr};
  std::unique_ptr<Impl> impl_;
};

}  // namespace mcgw::engine
