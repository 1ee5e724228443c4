// FlatIndex (dataplane/engine/flat_index.hpp): the read-only hash index of
// the decapsulation lookups.
#include "dataplane/engine/flat_index.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <map>
#include <random>
#include <utility>
#include <vector>

namespace mcgw::engine {
namespace {

TEST(FlatIndex, EmptyAndUnbuiltFindNothing) {
  FlatIndex<uint32_t, uint16_t> unbuilt;
  EXPECT_EQ(unbuilt.find(0), nullptr);
  EXPECT_EQ(unbuilt.find(12345), nullptr);
  FlatIndex<uint32_t, uint16_t> empty;
  empty.build({});
  EXPECT_EQ(empty.capacity(), 4u);
  EXPECT_EQ(empty.find(0), nullptr);
  EXPECT_EQ(empty.find(0xffffffffu), nullptr);
}

TEST(FlatIndex, FirstOfEqualKeysWins) {
  FlatIndex<uint64_t, uint16_t> idx;
  idx.build({{7, 1}, {8, 2}, {7, 3}});
  ASSERT_NE(idx.find(7), nullptr);
  EXPECT_EQ(*idx.find(7), 1);
  EXPECT_EQ(*idx.find(8), 2);
  EXPECT_EQ(idx.find(9), nullptr);
}

// Every key of a random set is found with its value, every other key of a
// larger random set is not; the table is at most half full, so a probe for
// a missing key ends at an empty slot.
TEST(FlatIndex, MatchesAMapForManySizes) {
  std::mt19937_64 rng(5);
  for (size_t n : {1u, 2u, 3u, 5u, 8u, 31u, 64u, 100u, 1000u}) {
    std::map<std::array<uint8_t, 16>, uint32_t> want;
    std::vector<std::pair<std::array<uint8_t, 16>, uint32_t>> entries;
    while (want.size() < n) {
      std::array<uint8_t, 16> k{};
      for (auto& b : k) {
        b = static_cast<uint8_t>(rng() % 3);  // few distinct bytes: similar keys
      }
      if (want.emplace(k, static_cast<uint32_t>(rng())).second) {
        entries.emplace_back(k, want[k]);
      }
    }
    FlatIndex<std::array<uint8_t, 16>, uint32_t> idx;
    idx.build(entries);
    EXPECT_GE(idx.capacity(), 2 * n);
    for (const auto& [k, v] : want) {
      ASSERT_NE(idx.find(k), nullptr) << n;
      EXPECT_EQ(*idx.find(k), v);
    }
    size_t absent = 0;
    for (int i = 0; i < 2000; ++i) {
      std::array<uint8_t, 16> k{};
      for (auto& b : k) {
        b = static_cast<uint8_t>(rng() % 3);
      }
      if (!want.count(k)) {
        EXPECT_EQ(idx.find(k), nullptr);
        ++absent;
      }
    }
    EXPECT_GT(absent, 1000u);
  }
}

// Keys that all land in the same few slots: probing wraps around the end of
// the table and still finds each, and a missing key stops.
TEST(FlatIndex, CollidingKeysWrapAround) {
  // 4 keys whose hash (FlatIndex's: CRC32 with its seed) picks the last
  // slot of the 8-slot table 4 entries get.
  // A fifth such key stays out: its probe wraps around through all four
  // before it reaches an empty slot.
  std::vector<std::pair<uint32_t, uint16_t>> entries;
  uint32_t missing = 0;
  for (uint32_t k = 0; k < 100000; ++k) {
    if (rte_hash_crc_4byte(k, 0x5bd1e995u) % 8 == 7) {
      if (entries.size() < 4) {
        entries.emplace_back(k, static_cast<uint16_t>(entries.size() + 10));
      } else {
        missing = k;
        break;
      }
    }
  }
  ASSERT_EQ(entries.size(), 4u);
  ASSERT_NE(missing, 0u);
  FlatIndex<uint32_t, uint16_t> idx;
  idx.build(entries);
  ASSERT_EQ(idx.capacity(), 8u);
  for (const auto& [k, v] : entries) {
    ASSERT_NE(idx.find(k), nullptr);
    EXPECT_EQ(*idx.find(k), v);
  }
  EXPECT_EQ(idx.find(missing), nullptr);
}

}  // namespace
}  // namespace mcgw::engine
