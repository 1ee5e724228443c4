#include "dataplane/policy/verdict_cache.hpp"

#include <algorithm>
#include <array>

namespace mcgw::policy {

namespace {

constexpr unsigned kChunk = 64;

template <class Table, class Classify>
unsigned classifyCached(Table& table, uint64_t serial, const uint8_t* const* keys, uint32_t* ids,
                        unsigned n, Classify classify) {
  using Key = decltype(Table::Entry::key);
  std::array<uint32_t, kChunk> hashes;
  std::array<const uint8_t*, kChunk> miss_keys;
  std::array<uint32_t, kChunk> miss_ids;
  std::array<uint8_t, kChunk> miss_at;
  if (serial == 0) {  // not a compiled policy: 0 is the empty entries' serial
    for (unsigned base = 0; base < n; base += kChunk) {
      classify(keys + base, ids + base, std::min(kChunk, n - base));
    }
    return n;
  }
  unsigned missed = 0;
  for (unsigned base = 0; base < n; base += kChunk) {
    const unsigned c = std::min(kChunk, n - base);
    for (unsigned i = 0; i < c; ++i) {
      hashes[i] = Table::hash(serial, *reinterpret_cast<const Key*>(keys[base + i]));
      table.prefetch(hashes[i]);
    }
    unsigned m = 0;
    for (unsigned i = 0; i < c; ++i) {
      const Key& key = *reinterpret_cast<const Key*>(keys[base + i]);
      if (!table.find(serial, key, hashes[i], &ids[base + i])) {
        miss_keys[m] = keys[base + i];
        miss_at[m++] = static_cast<uint8_t>(i);
      }
    }
    if (m == 0) {
      continue;
    }
    classify(miss_keys.data(), miss_ids.data(), m);
    for (unsigned j = 0; j < m; ++j) {
      const unsigned i = miss_at[j];
      ids[base + i] = miss_ids[j];
      table.insert(serial, *reinterpret_cast<const Key*>(miss_keys[j]), hashes[i], miss_ids[j]);
    }
    missed += m;
  }
  return missed;
}

}  // namespace

unsigned classifyCached4(VerdictCache& cache, uint64_t serial, const Classifier& acl,
                         const uint8_t* const* keys, uint32_t* ids, unsigned n) noexcept {
  return classifyCached(
      cache.v4(), serial, keys, ids, n,
      [&](const uint8_t* const* k, uint32_t* out, unsigned m) { acl.classify4(k, out, m); });
}

unsigned classifyCached6(VerdictCache& cache, uint64_t serial, const Classifier& acl,
                         const uint8_t* const* keys, uint32_t* ids, unsigned n) noexcept {
  return classifyCached(
      cache.v6(), serial, keys, ids, n,
      [&](const uint8_t* const* k, uint32_t* out, unsigned m) { acl.classify6(k, out, m); });
}

}  // namespace mcgw::policy
