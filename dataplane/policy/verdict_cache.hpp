// A worker's cache of policy verdicts (docs/policy.md): the classifier's
// answer for a (policy, key) pair seen before, without asking rte_acl again.
//
// What an entry holds: the policy's serial (TenantPolicy::serial: unique in
// the process for every classifier ever compiled; 0 is "empty"), the full
// key (Key4 or Key6, bytes as fillKey4/6 made them) and the winning id or
// kNoMatch.  A hit compares the serial and every key byte, so a colliding
// flow misses and is classified: the cache never answers anything rte_acl
// would not.  A new classifier has a new serial, so a rule change
// invalidates the old entries without touching them (they age out).
//
// Layout: one table per family, set-associative (4 ways of 32 bytes for
// IPv4, one 128-byte set; 2 ways of 64 bytes for IPv6), the set chosen by a
// CRC32 of the key (IPv4: its 16 bytes after the protocol) seeded with the
// serial.  A miss fills an empty way, else
// a way chosen round-robin.  A hit changes nothing (no writes on the hot
// path).
//
// One cache per worker: no locks, no atomics; all memory allocated in the
// constructor.  classifyCached4/6 are the burst operation the pipeline and
// the benchmark use.
#pragma once

#include <rte_hash_crc.h>
#include <rte_prefetch.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>

#include "dataplane/policy/acl.hpp"

namespace mcgw::policy {

template <class Key, unsigned Ways>
class VerdictTable {
 public:
  static constexpr unsigned kWays = Ways;
  struct Entry {
    uint64_t serial;  // 0: empty
    Key key;
    uint32_t id;
  };
  struct alignas(64) Set {
    Entry way[Ways];
  };

  // `entries`: rounded down to a power of two of at least Ways.
  explicit VerdictTable(size_t entries) {
    size_t sets = 1;
    while (sets * 2 * Ways <= entries) {
      sets *= 2;
    }
    sets_ = std::make_unique<Set[]>(sets);
    mask_ = static_cast<uint32_t>(sets - 1);
  }

  size_t entries() const { return (size_t{mask_} + 1) * Ways; }
  size_t bytes() const { return (size_t{mask_} + 1) * sizeof(Set); }

  static uint32_t hash(uint64_t serial, const Key& key) {
    if constexpr (sizeof(Key) == 20) {
      // IPv4: the addresses, ports, DSCP and flags (bytes 4..19) in two
      // 8-byte CRCs; the protocol is left to the full compare.
      uint64_t a, b;
      std::memcpy(&a, reinterpret_cast<const uint8_t*>(&key) + 4, 8);
      std::memcpy(&b, reinterpret_cast<const uint8_t*>(&key) + 12, 8);
      return rte_hash_crc_8byte(
          b, rte_hash_crc_8byte(a, static_cast<uint32_t>(serial ^ (serial >> 32))));
    }
    return rte_hash_crc(&key, sizeof(Key), static_cast<uint32_t>(serial ^ (serial >> 32)));
  }
  void prefetch(uint32_t h) const {
    const Set* s = &sets_[h & mask_];
    rte_prefetch0(s);
    if constexpr (sizeof(Set) > 64) {
      rte_prefetch0(reinterpret_cast<const char*>(s) + 64);
    }
  }
  // The cached id of (serial, key), or false (always for serial 0).
  bool find(uint64_t serial, const Key& key, uint32_t h, uint32_t* id) const {
    if (serial == 0) {  // the empty entries' serial
      return false;
    }
    const Set& s = sets_[h & mask_];
    for (unsigned w = 0; w < Ways; ++w) {
      const Entry& e = s.way[w];
      if (e.serial == serial && std::memcmp(&e.key, &key, sizeof(Key)) == 0) {
        *id = e.id;
        return true;
      }
    }
    return false;
  }
  // After a miss of (serial, key): remembers its id (not for serial 0).
  void insert(uint64_t serial, const Key& key, uint32_t h, uint32_t id) {
    if (serial == 0) {
      return;
    }
    Set& s = sets_[h & mask_];
    unsigned w = 0;
    while (w < Ways && s.way[w].serial != 0) {
      ++w;
    }
    if (w == Ways) {
      w = victim_++ % Ways;
    }
    s.way[w].serial = serial;
    std::memcpy(&s.way[w].key, &key, sizeof(Key));
    s.way[w].id = id;
  }
  void clear() {
    for (uint32_t i = 0; i <= mask_; ++i) {
      sets_[i] = Set{};
    }
  }

 private:
  std::unique_ptr<Set[]> sets_;
  uint32_t mask_ = 0;
  unsigned victim_ = 0;
};

using VerdictTable4 = VerdictTable<Key4, 4>;
using VerdictTable6 = VerdictTable<Key6, 2>;
static_assert(sizeof(VerdictTable4::Entry) == 32);
static_assert(sizeof(VerdictTable4::Set) == 128);
static_assert(sizeof(VerdictTable6::Entry) == 56);
static_assert(sizeof(VerdictTable6::Set) == 128);

class VerdictCache {
 public:
  // Default sizes: 32,768 IPv4 flows (1 MiB; with 16,384 a set of 4 ways
  // overflowed for 0.45 % of 4,096 flows, docs/performance.md) and 4,096
  // IPv6 flows (256 KiB) per worker.
  static constexpr size_t kDefaultEntries4 = 32768;
  static constexpr size_t kDefaultEntries6 = 4096;
  explicit VerdictCache(size_t entries4 = kDefaultEntries4, size_t entries6 = kDefaultEntries6)
      : t4_(entries4), t6_(entries6) {}

  VerdictTable4& v4() { return t4_; }
  VerdictTable6& v6() { return t6_; }
  const VerdictTable4& v4() const { return t4_; }
  const VerdictTable6& v6() const { return t6_; }

 private:
  VerdictTable4 t4_;
  VerdictTable6 t6_;
};

// For n keys (Key4* / Key6* as bytes) of the policy `serial` whose
// classifier is `acl`: the winning id or kNoMatch into ids[i], exactly as
// acl.classify4/6 would answer.  Cached answers are taken from the cache;
// the misses go to rte_acl in one call (per 64 keys) and into the cache.
// Returns how many missed.  Any n; no allocation, lock or exception.
// Serial 0 bypasses the cache (every key classified, n returned).
unsigned classifyCached4(VerdictCache& cache, uint64_t serial, const Classifier& acl,
                         const uint8_t* const* keys, uint32_t* ids, unsigned n) noexcept;
unsigned classifyCached6(VerdictCache& cache, uint64_t serial, const Classifier& acl,
                         const uint8_t* const* keys, uint32_t* ids, unsigned n) noexcept;

}  // namespace mcgw::policy
