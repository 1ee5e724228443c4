// Route sources, next hops and each tenant's RIB: what the FIB is fed from.
//
// A source (the config's static routes, the LAN subnets, the gateway's own
// addresses, later FRR and the address plan's mapped ranges) offers at most
// one candidate per prefix; each candidate carries the source's
// administrative distance.  The best candidate of a prefix (lowest distance,
// then the source listed first in RouteSource) is the one in the FIB.
//
// Next hops live in a per-tenant NextHopTable: the FIB's values are its
// indexes.  Entries are reference-counted by the candidates (an ECMP group
// holds its members), equal next hops share one index, and an entry is never
// changed while it is referenced: an index freed by the last release is
// reused only after a grace period (reclaim() after the fast path's RCU
// synchronize), so a worker that still holds it reads what it read before.
//
// One writer at a time (any thread but a worker); workers only call
// NextHopTable::at().  Nothing here needs DPDK.
#pragma once

#include <array>
#include <atomic>
#include <compare>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "config/net.hpp"
#include "config/result.hpp"
#include "dataplane/engine/fib.hpp"

namespace mcgw::engine {

inline constexpr size_t kMaxEcmp = 8;        // members of an ECMP group
inline constexpr uint16_t kNoPort = 0xffff;  // a next hop on a port that is not open

// Where a route comes from, in the order that breaks a tie of distances.
enum class RouteSource : uint8_t {
  kLocal,      // the gateway's own addresses (/32, /128): handed to the kernel
  kConnected,  // the subnets of the tenant's LAN ports
  kStatic,     // tenants[].routes in the config
  kFrr,        // BGP through FRR (to come): eBGP 20, iBGP 200
  kPlan,       // the address plan's mapped ranges (to come)
};
inline constexpr size_t kRouteSourceCount = 5;
const char* toString(RouteSource s);
// The default administrative distance of a source: local 0, connected 0,
// static 1, FRR 20 (eBGP; FRR gives iBGP routes 200 itself), plan 10.
uint8_t defaultDistance(RouteSource s);

// A next hop as the workers read it.  Plain data, compared whole: two equal
// next hops share one index.
struct NextHop {
  enum class Kind : uint8_t {
    kTunnel,     // into the tunnel whose counter slot is `tunnel`
    kGateway,    // a router on LAN port `port`: its MAC from the neighbour table
    kConnected,  // the destination itself is on LAN port `port`: neighbour lookup
    kLocal,      // the gateway's own address: to the kernel, never forwarded
    kEcmp,       // one of `members` (next-hop indexes) by the flow hash
  };
  Kind kind = Kind::kLocal;
  uint8_t v6 = 0;         // kGateway: the family of `address`
  uint8_t n_members = 0;  // kEcmp
  uint16_t tunnel = 0;
  uint16_t port = kNoPort;
  std::array<uint8_t, 16> address{};
  std::array<uint32_t, kMaxEcmp> members{};  // ascending

  auto operator<=>(const NextHop&) const = default;
};

// One tenant's next hops.  Entries sit in pages of kPageSize that never move
// (the page table has room for kMaxNextHops indexes: 32 KiB per tenant), so a
// worker reads an entry with two loads and no lock, and the table grows
// without being republished.
class NextHopTable {
 public:
  static constexpr uint32_t kPageBits = 10;
  static constexpr uint32_t kPageSize = 1u << kPageBits;
  // Distinct next hops per tenant (routes share them: a full table from a
  // few BGP peers needs a handful).  Within what a FIB can hold.
  static constexpr uint32_t kMaxNextHops = 1u << 22;
  static_assert(kMaxNextHops - 1 <= TenantFib::kMaxNextHop);
  static constexpr uint32_t kPages = kMaxNextHops / kPageSize;

  NextHopTable() = default;
  ~NextHopTable();
  NextHopTable(const NextHopTable&) = delete;
  NextHopTable& operator=(const NextHopTable&) = delete;

  // Workers: the entry of an index a FIB returned.
  const NextHop& at(uint32_t index) const {
    return pages_[index >> kPageBits].load(std::memory_order_acquire)[index & (kPageSize - 1)];
  }

  // Writer.  A reference to nh's index: the existing one, or a new index
  // whose entry is written before it is returned (a new ECMP group takes a
  // reference on each member).  Fails when the indexes run out.
  Result<uint32_t, std::string> acquire(const NextHop& nh);
  // An ECMP group over `members` (references the caller holds; they are
  // consumed): duplicates collapse, one distinct member is that member
  // itself, members beyond kMaxEcmp are refused (nothing taken then).
  Result<uint32_t, std::string> acquireGroup(std::vector<uint32_t> members);
  // Drops a reference; the last one retires the index (and a group's
  // references on its members).
  void release(uint32_t index);
  // Call after a grace period that began after the FIBs stopped returning
  // the retired indexes: they become free for reuse.
  void reclaim();
  bool retiring() const { return !retired_.empty(); }

  // For the control plane and tests.
  std::optional<uint32_t> find(const NextHop& nh) const;
  uint32_t refs(uint32_t index) const { return index < refs_.size() ? refs_[index] : 0; }
  size_t used() const { return index_.size(); }
  const std::map<NextHop, uint32_t>& entries() const { return index_; }

 private:
  NextHop* page(uint32_t index);
  std::array<std::atomic<NextHop*>, kPages> pages_{};
  std::map<NextHop, uint32_t> index_;
  std::vector<uint32_t> refs_;
  std::vector<uint32_t> free_, retired_;
  uint32_t high_ = 0;  // indexes below were handed out at some time
};

// A route offered by a source, by its next hop's index.
struct Candidate {
  RouteSource source = RouteSource::kStatic;
  uint8_t distance = 1;
  uint32_t next_hop = 0;
  bool operator==(const Candidate&) const = default;
};

// One tenant's routes from every source, with a staged change that is
// either committed or aborted whole:
//
//   set(...) ... (candidates change; references taken)
//   changes()    the FIB changes that make the FIB follow the best candidates
//   commit()     after the FIB took them: replaced candidates' references go
//   abort()      everything as before set(), the references taken dropped
//
// Control side only: workers never read it.
class TenantRib {
 public:
  explicit TenantRib(std::string name)
      : name_(std::move(name)), next_hops_(std::make_shared<NextHopTable>()) {}

  const std::string& name() const { return name_; }
  NextHopTable& nextHops() { return *next_hops_; }
  const NextHopTable& nextHops() const { return *next_hops_; }
  std::shared_ptr<const NextHopTable> sharedNextHops() const { return next_hops_; }

  // Sets source's candidate for prefix (host bits ignored), or withdraws it
  // (nullopt).  The candidate takes over one reference to its next hop that
  // the caller acquired.
  void set(const config::IpPrefix& prefix, RouteSource source, std::optional<Candidate> candidate);
  // The candidate source has for prefix now.
  std::optional<Candidate> candidate(const config::IpPrefix& prefix, RouteSource source) const;

  bool staged() const { return !before_.empty(); }
  // What the FIB needs to follow the staged change, and the reverse.
  std::vector<TenantFib::Change> changes() const;
  std::vector<TenantFib::Change> reverse() const;
  void commit();
  void abort();

  // The best candidate's next hop of each prefix: what the FIB holds.
  std::vector<TenantFib::Route> installed() const;
  std::optional<uint32_t> best(const config::IpPrefix& prefix) const;
  // Every prefix's candidates, best first.
  const std::map<config::IpPrefix, std::vector<Candidate>>& routes() const { return routes_; }
  // Prefixes source has a candidate for.
  std::vector<config::IpPrefix> prefixes(RouteSource source) const;

 private:
  static std::optional<uint32_t> bestOf(const std::vector<Candidate>* cs);
  std::vector<TenantFib::Change> difference(bool forward) const;
  std::string name_;
  std::shared_ptr<NextHopTable> next_hops_;
  std::map<config::IpPrefix, std::vector<Candidate>> routes_;
  // The staged change: each touched prefix's candidates before it (first
  // touch), the references taken and those to drop on commit.
  std::map<config::IpPrefix, std::vector<Candidate>> before_;
  std::vector<uint32_t> taken_, dropped_;
};

}  // namespace mcgw::engine
