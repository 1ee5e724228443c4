// Allocation of VPC ranges from the plan's pools, and what the plan in
// force is: the config file's address plan (pools, VPCs, mapped ranges)
// plus the VPCs a store holds (docs/address-plan.md).
//
// Pure functions over values: no I/O, no clock, no randomness.  A caller
// reads a Snapshot from a Store, calls these, and writes the Snapshot back
// inside Store::update so that concurrent allocations never overlap.
#pragma once

#include <compare>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.hpp"
#include "config/net.hpp"
#include "config/result.hpp"
#include "control/plan/plan.hpp"

namespace mcgw::plan {

using config::Family;

// A number of addresses.  An IPv6 pool holds up to 2^128 addresses, more
// than uint64_t counts, so the count is kept in 129 bits and shown as
// decimal text (exact) or as a power of two (log2, for a glance).
class AddressCount {
 public:
  AddressCount() = default;
  // 2^exponent addresses (exponent <= 128): the size of a /(bits-exponent).
  static AddressCount power(unsigned exponent);
  // last - first + 1 addresses; first <= last, same family.
  static AddressCount span(const config::IpAddress& first, const config::IpAddress& last);

  AddressCount& operator+=(const AddressCount& other);
  // other <= *this.
  AddressCount& operator-=(const AddressCount& other);

  bool isZero() const { return !top_ && low_ == 0; }
  // The exact count in decimal: "65536", "340282366920938463463374607431768211456".
  std::string toString() const;
  // log2 of the count (0 for zero): 16 for a /16, 64 for a /64.
  double log2() const;
  // The count when it fits in 64 bits (every IPv4 count does).
  std::optional<uint64_t> toUint64() const;

  std::strong_ordering operator<=>(const AddressCount& other) const;
  bool operator==(const AddressCount& other) const = default;

 private:
  unsigned __int128 low_ = 0;  // the count modulo 2^128
  bool top_ = false;           // the 2^128 bit: a whole IPv6 space (::/0)
};

// The addresses in use in a plan, as disjoint sorted ranges per family.
// Adding a range merges it with its neighbours, so a run of adjacent
// allocations is one range and the allocator jumps over it in one step.
class UsedSpace {
 public:
  UsedSpace() = default;
  // Everything in use: the config's VPC prefixes, both sides of its mapped
  // ranges, the store's VPC prefixes and the reserved ranges.
  UsedSpace(const config::Config& config, const Snapshot& snapshot,
            const std::vector<IpPrefix>& reserved);

  void add(const IpPrefix& prefix);

  // The lowest block of `length` aligned on its size inside `within` that
  // overlaps nothing in use; nullopt when there is none (or length is shorter
  // than within's).  O(log n) per used range jumped over.
  std::optional<IpPrefix> lowestFree(const IpPrefix& within, uint8_t length) const;

  // The free part of `within` as the fewest aligned CIDR blocks, lowest
  // first.  visit(block) returns false to stop.
  void forEachFreeBlock(const IpPrefix& within,
                        const std::function<bool(const IpPrefix&)>& visit) const;

  // How many addresses of `within` are in use.
  AddressCount usedIn(const IpPrefix& within) const;

  // The in-use ranges of a family as inclusive first/last addresses in
  // ascending order (for tests and diagnostics).
  std::vector<std::pair<config::IpAddress, config::IpAddress>> ranges(Family family) const;

  // Internal: an address as a number (IPv4 in the low 32 bits).
  using Number = unsigned __int128;

 private:
  // The free gaps [first, last] of `within`, ascending; visit returns false to stop.
  void forEachGap(const IpPrefix& within,
                  const std::function<bool(Number first, Number last)>& visit) const;

  const std::map<Number, Number>& of(Family f) const { return f == Family::V4 ? v4_ : v6_; }
  std::map<Number, Number>& of(Family f) { return f == Family::V4 ? v4_ : v6_; }

  std::map<Number, Number> v4_;  // first → last, disjoint, not adjacent
  std::map<Number, Number> v6_;
};

// What `mcgwctl plan allocate` asks for.
struct Request {
  std::string cloud;
  std::string region;
  std::string vpc;     // the new VPC's name, unique in the whole plan
  uint8_t length = 0;  // the block's prefix length; 0: the pool's allocation-length
  Family family = Family::V4;
  std::string tenant;  // "" = the config's single tenant
  std::string site;    // "" = served by no site yet
  std::string pool;    // "" = the first pool of the family serving the cloud
};

struct Allocation {
  StoredVpc vpc;
  bool created = false;  // false: the store already held it (an idempotent repeat)
};

// The pool a request allocates from: the named one, or the first pool in
// config order that has a prefix of the request's family and serves its
// cloud (a pool's `clouds`; none listed: every cloud).
Result<const config::PoolConfig*, std::string> choosePool(const config::Config& config,
                                                          const Request& request);

// The VPC a request gets.  A new one gets the lowest aligned free block of
// the pool (not yet in snapshot: the caller inserts it with insert()).  A
// name the store already holds with the same parameters returns that VPC
// unchanged (created = false); with other parameters it is an error saying
// what differs, as is a name the config file holds.
Result<Allocation, std::string> allocate(const config::Config& config, const Snapshot& snapshot,
                                         const Request& request,
                                         const std::vector<IpPrefix>& reserved);

// Adds vpc to snapshot, keeping it sorted by name (replaces one of the same name).
void insert(Snapshot& snapshot, StoredVpc vpc);

// Removes a stored VPC and returns it.  An error when the store does not
// hold it; with config, the error says when the name is the config file's.
Result<StoredVpc, std::string> release(Snapshot& snapshot, const std::string& name);
Result<StoredVpc, std::string> release(const config::Config& config, Snapshot& snapshot,
                                       const std::string& name);

// One pool's addresses of one family, for `mcgwctl plan show`.
struct PoolUsage {
  std::string pool;
  Family family = Family::V4;
  std::vector<IpPrefix> prefixes;        // the pool's prefixes of the family, config order
  AddressCount size;                     // addresses in those prefixes
  AddressCount used;                     // of them, in use (VPCs, mapped, reserved)
  AddressCount free;                     // size - used
  std::vector<IpPrefix> free_blocks;     // the first max_blocks free blocks, lowest first
  size_t free_block_count = 0;           // all free blocks (minimal aligned CIDR list)
  std::optional<IpPrefix> largest_free;  // the shortest free block, the lowest of ties
};

// Usage of every pool, one entry per pool and family it has (config order,
// IPv4 first).  free_blocks lists at most max_blocks blocks.
std::vector<PoolUsage> usage(const config::Config& config, const Snapshot& snapshot,
                             const std::vector<IpPrefix>& reserved, size_t max_blocks = 64);

// A problem with the store's content measured against the config.
struct PlanProblem {
  enum class Severity { kError, kWarning } severity = Severity::kError;
  std::string vpc;      // the stored VPC concerned
  std::string message;  // names both objects of an overlap or clash
};

// What is wrong with snapshot against config: errors (a stored VPC that
// overlaps a config VPC, a mapped range, a reserved range or another stored
// VPC; a name the config file holds; a duplicate or invalid name; a prefix
// with host bits; no prefix or too many) and warnings (an unknown tenant, a
// prefix outside every pool).  Empty when the plan in force is sound.
std::vector<PlanProblem> checkSnapshot(const config::Config& config, const Snapshot& snapshot,
                                       const std::vector<IpPrefix>& reserved);

// config with the store's VPCs added to address_plan.vpcs (after the file's
// own, in name order): the config the daemon runs.  Does not check: call
// checkSnapshot first.
config::Config merged(const config::Config& config, const Snapshot& snapshot);

}  // namespace mcgw::plan
