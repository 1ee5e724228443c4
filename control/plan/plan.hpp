// The living part of the global address plan: the VPC ranges a store holds
// (allocated from a pool by `mcgwctl plan allocate`, or imported from a
// cloud's VPC listing), shared by every gateway that uses the same store.
//
// The config file holds the static plan (pools, VPCs written by hand,
// mapped ranges, reserved ranges); the plan in force is the config's plus
// the store's, and it must be overlap-free as a whole (docs/address-plan.md).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.hpp"
#include "config/net.hpp"
#include "config/result.hpp"

namespace mcgw::plan {

using config::IpPrefix;

// A VPC the store holds.  Its name is unique across the whole plan (config
// and store): allocation is idempotent by name.
struct StoredVpc {
  std::string name;
  std::string cloud;
  std::string region;
  std::vector<IpPrefix> prefixes;
  std::string pool;    // the pool it was allocated from; "" when imported
  std::string tenant;  // "" = the config's single tenant
  std::string site;    // "" = served by no site yet
  std::string source;  // "allocate", "import:aws", "import:aliyun", "import:huawei"
  bool operator==(const StoredVpc&) const = default;
};

// What a store holds at one revision.
struct Snapshot {
  // Grows with every change: the file store counts its writes; etcd's is
  // the store revision of the last change under the plan's key prefix.
  uint64_t revision = 0;
  std::vector<StoredVpc> vpcs;  // sorted by name
  const StoredVpc* find(const std::string& name) const;
  bool operator==(const Snapshot&) const = default;
};

struct StoreError {
  enum class Kind {
    kUnreachable,  // etcd down, a timeout, the file's directory missing
    kRefused,      // TLS or permission refused: retrying will not help
    kCorrupt,      // the stored data does not parse or breaks a bound
    kAborted,      // the change function said no (its message)
    kContended,    // too many concurrent writers: retries exhausted
  } kind = Kind::kUnreachable;
  std::string message;  // for the operator: what, where, and why
};

template <typename T>
using StoreResult = Result<T, StoreError>;

// Bounds of what a store may hold (docs/address-plan.md, "Limits").
inline constexpr size_t kMaxStoredVpcs = 65536;
inline constexpr size_t kMaxPrefixesPerVpc = 64;
inline constexpr size_t kMaxStoreBytes = size_t{64} << 20;

// True when name is a valid `name` of the config's YANG model (1..63
// letters, digits, '_', '.', '-', starting with a letter): the store's
// names, clouds, regions, pools, tenants and sites follow the config's rule.
bool isValidName(std::string_view name);
// A stored VPC's source: up to 63 letters, digits, '_', '.', '-', ':'.
bool isValidSource(std::string_view source);
// What is wrong with one VPC as a store may hold it (names, source, the
// count of prefixes and their host bits), or "".  Every store checks what
// it reads and what it is asked to write with it.
std::string storedVpcProblem(const StoredVpc& vpc);

// A range no VPC or mapped range may use, and why.
struct Reserved {
  IpPrefix prefix;
  std::string why;  // "link-local", "the underlay: wan port wan0", ...
};
// The ranges a config keeps out of the plan: link-local, loopback,
// multicast, the underlay (WAN port prefixes, line VTEPs), 100.64.0.0/10
// when a VPC of a cloud that keeps it is in the plan (the file's, or with a
// snapshot the store's too), the operator's address-plan.reserved.  The
// load checks (config/semantic.cpp) refuse the same ranges with their lines.
std::vector<Reserved> reservedRanges(const config::Config& config,
                                     const Snapshot* snapshot = nullptr);
std::vector<IpPrefix> prefixesOf(const std::vector<Reserved>& reserved);

class Store {
 public:
  virtual ~Store() = default;

  // The store's content now.
  virtual StoreResult<Snapshot> load() = 0;

  // Reads the content, lets change edit it and writes it back atomically.
  // If another writer changed the store in between, reads again and calls
  // change again (bounded; kContended after that).  change returns an error
  // to write nothing (kAborted with its message).  Returns what was written.
  using Change = std::function<Result<bool, std::string>(Snapshot&)>;  // true: write
  virtual StoreResult<Snapshot> update(const Change& change) = 0;

  // Blocks until the content's revision is above `after`, `timeout` passes
  // or `stop` becomes true; returns the content then (unchanged on timeout
  // or stop).  Gateways call it on a thread of their own to follow the plan.
  virtual StoreResult<Snapshot> waitChange(uint64_t after, std::chrono::milliseconds timeout,
                                           const std::atomic<bool>& stop) = 0;

  // "file /var/lib/mcgw/plan.yaml", "etcd https://10.0.0.1:2379,...".
  virtual std::string describe() const = 0;
};

}  // namespace mcgw::plan
