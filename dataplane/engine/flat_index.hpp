// A read-only hash index for the lookups a worker makes per tunnel packet
// (peer VTEP address -> peer and line; (peer, VNI) -> tunnel): built once
// with its snapshot, never changed after, so readers need no RCU of their
// own and no lock.  Open addressing with linear probing at most half full:
// one CRC32 instruction and, almost always, one slot compared.
//
// Written by hand rather than with rte_hash: rte_hash is built for a table
// that changes under its readers (signatures, buckets, an extendable
// table); a lookup costs a call through librte_hash, a 20-byte memcmp and
// its CRC over a runtime length (about 15 % of the route scenario's samples
// in the neighbour table).  These tables are a few entries, never change
// and need no DPDK memory.
#pragma once

#include <rte_hash_crc.h>

#include <bit>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>
#include <vector>

namespace mcgw::engine {

template <typename Key, typename Value>
class FlatIndex {
  static_assert(std::has_unique_object_representations_v<Key>,
                "keys are hashed and compared as bytes");

 public:
  // Holds exactly `entries`; of equal keys the first is kept.
  void build(const std::vector<std::pair<Key, Value>>& entries) {
    const size_t want = std::bit_ceil(std::max<size_t>(2 * entries.size(), 4));
    slots_.assign(want, Slot{});
    mask_ = static_cast<uint32_t>(want - 1);
    for (const auto& [k, v] : entries) {
      for (uint32_t i = hash(k) & mask_;; i = (i + 1) & mask_) {
        Slot& s = slots_[i];
        if (!s.used) {
          s = Slot{k, v, true};
          break;
        }
        if (std::memcmp(&s.key, &k, sizeof(Key)) == 0) {
          break;
        }
      }
    }
  }

  // The value for key, or null.
  const Value* find(const Key& key) const {
    if (slots_.empty()) {
      return nullptr;
    }
    for (uint32_t i = hash(key) & mask_;; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (!s.used) {
        return nullptr;
      }
      if (std::memcmp(&s.key, &key, sizeof(Key)) == 0) {
        return &s.value;
      }
    }
  }

  size_t capacity() const { return slots_.size(); }

 private:
  struct Slot {
    Key key{};
    Value value{};
    bool used = false;
  };
  static uint32_t hash(const Key& key) {
    if constexpr (sizeof(Key) == 4) {
      uint32_t w;
      std::memcpy(&w, &key, 4);
      return rte_hash_crc_4byte(w, 0x5bd1e995u);
    } else if constexpr (sizeof(Key) == 8) {
      uint64_t w;
      std::memcpy(&w, &key, 8);
      return rte_hash_crc_8byte(w, 0x5bd1e995u);
    } else {
      return rte_hash_crc(&key, sizeof(Key), 0x5bd1e995u);
    }
  }
  std::vector<Slot> slots_;
  uint32_t mask_ = 0;
};

}  // namespace mcgw::engine
