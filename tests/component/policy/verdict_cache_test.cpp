// The per-worker verdict cache (dataplane/policy/verdict_cache.hpp) on a
// real EAL (--no-huge) and real rte_acl classifiers: every answer through
// the cache equals the classifier's own and the plain reference's (warm,
// cold, with evictions, both families); a key that differs in any one byte,
// or a serial that differs, misses even in the same set; a new serial (a
// rebuilt classifier) misses and its verdicts follow the new rules.
#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <random>
#include <vector>

#include "dataplane/policy/acl.hpp"
#include "dataplane/policy/verdict_cache.hpp"
#include "tests/support/eal.hpp"

namespace mcgw::policy {
namespace {

const auto* const kEal =
    ::testing::AddGlobalTestEnvironment(new test::EalEnvironment("verdict_cache_test", 512));

struct Random {
  std::mt19937_64 rng;
  uint32_t below(uint32_t n) { return static_cast<uint32_t>(rng() % n); }
  // Addresses from a small pool, so that rules and keys meet often.
  void address(uint8_t* out, size_t bytes) {
    static const uint8_t kBase[4][16] = {
        {10, 0, 0, 0}, {10, 1, 2, 0}, {172, 16, 0, 0}, {0x20, 0x01, 0x0d, 0xb8}};
    std::memcpy(out, kBase[below(4)], bytes);
    out[bytes - 1] = static_cast<uint8_t>(below(8));
    if (below(2)) {
      out[bytes - 2] = static_cast<uint8_t>(below(4));
    }
  }
  Rule rule(bool v6, uint32_t id) {
    Rule r;
    r.v6 = v6;
    r.id = id;
    r.action = below(2) ? Action::kAllow : Action::kDeny;
    const size_t bytes = v6 ? 16 : 4;
    const uint8_t max = v6 ? 128 : 32;
    if (below(2)) {
      address(r.source.address.data(), bytes);
      r.source.length = static_cast<uint8_t>(max - below(6));
    }
    address(r.destination.address.data(), bytes);
    r.destination.length = static_cast<uint8_t>(max - below(6));
    if (below(3) != 0) {
      r.protocol = below(2) ? 6 : 17;
      if (below(2)) {
        r.destination_ports.lo = static_cast<uint16_t>(below(4));
        r.destination_ports.hi = static_cast<uint16_t>(r.destination_ports.lo + below(3));
      }
    }
    if (below(5) == 0) {
      r.dscp = static_cast<uint8_t>(below(3));
    }
    return r;
  }
  template <class Key>
  Key key() {
    Key k{};
    k.protocol = below(2) ? 6 : 17;
    address(k.source, sizeof(k.source));
    address(k.destination, sizeof(k.destination));
    if (below(4) != 0) {
      k.destination_port[1] = static_cast<uint8_t>(below(6));
      k.source_port[1] = static_cast<uint8_t>(below(3));
      k.flags = kKeyHasPorts;
    }
    k.dscp = static_cast<uint8_t>(below(3));
    return k;
  }
};

std::unique_ptr<Classifier> build(const std::vector<Rule>& rules) {
  auto c = Classifier::build("verdict-cache-test", rules);
  EXPECT_TRUE(static_cast<bool>(c)) << (c ? "" : c.error());
  return c ? std::move(*c) : nullptr;
}

template <class Key>
std::vector<const uint8_t*> pointers(const std::vector<Key>& keys) {
  std::vector<const uint8_t*> p;
  for (const Key& k : keys) {
    p.push_back(reinterpret_cast<const uint8_t*>(&k));
  }
  return p;
}

// Classifies `keys` through `cache` in bursts of `burst`; checks every
// answer against the classifier and the reference; returns the misses.
template <class Key>
unsigned throughCache(VerdictCache& cache, uint64_t serial, const Classifier& acl,
                      const std::vector<Rule>& rules, const std::vector<Key>& keys,
                      unsigned burst) {
  constexpr bool kV6 = sizeof(Key) == sizeof(Key6);
  const auto ptrs = pointers(keys);
  std::vector<uint32_t> cached(keys.size()), direct(keys.size());
  unsigned misses = 0;
  for (size_t base = 0; base < keys.size(); base += burst) {
    const unsigned n = static_cast<unsigned>(std::min<size_t>(burst, keys.size() - base));
    if constexpr (kV6) {
      misses += classifyCached6(cache, serial, acl, ptrs.data() + base, cached.data() + base, n);
      acl.classify6(ptrs.data() + base, direct.data() + base, n);
    } else {
      misses += classifyCached4(cache, serial, acl, ptrs.data() + base, cached.data() + base, n);
      acl.classify4(ptrs.data() + base, direct.data() + base, n);
    }
  }
  for (size_t i = 0; i < keys.size(); ++i) {
    uint32_t want;
    if constexpr (kV6) {
      want = referenceClassify6(rules, keys[i]);
    } else {
      want = referenceClassify4(rules, keys[i]);
    }
    EXPECT_EQ(direct[i], want) << "key " << i;
    EXPECT_EQ(cached[i], want) << "key " << i << " serial " << serial;
  }
  return misses;
}

template <class Key>
void sameVerdicts(bool v6, uint64_t seed) {
  Random g{std::mt19937_64(seed)};
  std::vector<Rule> rules;
  for (uint32_t id = 0; id < 300; ++id) {
    rules.push_back(g.rule(v6, id));
  }
  auto acl = build(rules);
  ASSERT_TRUE(acl);
  std::vector<Key> keys;
  for (int i = 0; i < 2000; ++i) {
    keys.push_back(g.template key<Key>());
  }
  size_t matched = 0;
  for (const Key& k : keys) {
    matched += (v6 ? referenceClassify6(rules, reinterpret_cast<const Key6&>(k))
                   : referenceClassify4(rules, reinterpret_cast<const Key4&>(k))) != kNoMatch;
  }
  // The verdicts are not all "no match" (nor all one rule).
  EXPECT_GT(matched, keys.size() / 10);
  EXPECT_LT(matched, keys.size());

  // A cache much larger than the keys: cold, then warm (hits but for the
  // few keys of a set with more keys than ways).
  VerdictCache big(1 << 16, 1 << 15);
  const unsigned cold = throughCache(big, 1, *acl, rules, keys, 32);
  EXPECT_GT(cold, 0u);
  EXPECT_LE(cold, keys.size());
  EXPECT_LE(throughCache(big, 1, *acl, rules, keys, 32), keys.size() / 100);
  // A small cache (evictions, keys of one set colliding): still the same
  // verdicts.
  VerdictCache small(64, 16);
  for (int pass = 0; pass < 3; ++pass) {
    EXPECT_GT(throughCache(small, 7, *acl, rules, keys, 32), 0u);
  }
  // Bursts longer than the internal chunk of 64.
  VerdictCache other;
  const unsigned first = throughCache(other, 9, *acl, rules, keys, 200);
  EXPECT_LT(throughCache(other, 9, *acl, rules, keys, 200), first);
}

TEST(VerdictCacheTest, AnswersAsTheClassifierIPv4) {
  sameVerdicts<Key4>(false, 11);
}
TEST(VerdictCacheTest, AnswersAsTheClassifierIPv6) {
  sameVerdicts<Key6>(true, 12);
}

// Every way of one set taken by keys that differ from the probe in one
// byte (or by the probe under another serial): the probe misses.
template <class Table, class Key>
void collidingKeysMiss(Table& table) {
  static_assert(sizeof(Key) <= 64);
  Random g{std::mt19937_64(5)};
  const Key probe = g.template key<Key>();
  const uint32_t h = Table::hash(3, probe);
  for (size_t byte = 0; byte < sizeof(Key); ++byte) {
    for (uint8_t bit : {uint8_t{0x01}, uint8_t{0x80}}) {
      Key other = probe;
      reinterpret_cast<uint8_t*>(&other)[byte] ^= bit;
      table.clear();
      table.insert(3, other, h, 42);  // stored in the probe's set
      uint32_t id = 0;
      EXPECT_FALSE(table.find(3, probe, h, &id)) << "byte " << byte;
      EXPECT_TRUE(table.find(3, other, h, &id));
      EXPECT_EQ(id, 42u);
    }
  }
  table.clear();
  table.insert(3, probe, h, 17);
  uint32_t id = 0;
  EXPECT_TRUE(table.find(3, probe, h, &id));
  EXPECT_EQ(id, 17u);
  EXPECT_FALSE(table.find(4, probe, h, &id));  // another policy
  EXPECT_FALSE(table.find(0, probe, h, &id));  // the empty entries' serial
  // A cleared or fresh table has nothing, not even the all-zero key.
  table.clear();
  const Key zero{};
  EXPECT_FALSE(table.find(3, probe, h, &id));
  EXPECT_FALSE(table.find(0, zero, Table::hash(0, zero), &id));
  EXPECT_FALSE(table.find(1, zero, Table::hash(1, zero), &id));
  // More keys than ways in one set: the oldest go, the answers stay right.
  std::vector<Key> keys;
  for (int i = 0; i < 9; ++i) {
    Key k = probe;
    k.dscp = static_cast<uint8_t>(10 + i);
    keys.push_back(k);
    table.insert(3, k, h, static_cast<uint32_t>(100 + i));
  }
  unsigned present = 0;
  for (int i = 0; i < 9; ++i) {
    if (table.find(3, keys[i], h, &id)) {
      ++present;
      EXPECT_EQ(id, static_cast<uint32_t>(100 + i));
    }
  }
  EXPECT_EQ(present, Table::kWays);
}

TEST(VerdictCacheTest, CollidingKeyMissesIPv4) {
  VerdictTable4 t(16);
  collidingKeysMiss<VerdictTable4, Key4>(t);
}
TEST(VerdictCacheTest, CollidingKeyMissesIPv6) {
  VerdictTable6 t(16);
  collidingKeysMiss<VerdictTable6, Key6>(t);
}

TEST(VerdictCacheTest, SizesArePowersOfTwo) {
  VerdictCache c(1000, 100);
  EXPECT_EQ(c.v4().entries(), 512u);
  EXPECT_EQ(c.v6().entries(), 64u);
  VerdictCache d;
  EXPECT_EQ(d.v4().entries(), VerdictCache::kDefaultEntries4);
  EXPECT_EQ(d.v6().entries(), VerdictCache::kDefaultEntries6);
}

Key4 key4(uint8_t d0, uint8_t d1, uint8_t d2, uint8_t d3, uint16_t dport) {
  Key4 k{};
  k.protocol = 6;
  k.source[0] = 192;
  k.source[1] = 0;
  k.source[2] = 2;
  k.source[3] = 1;
  k.destination[0] = d0;
  k.destination[1] = d1;
  k.destination[2] = d2;
  k.destination[3] = d3;
  k.source_port[0] = 0x80;
  k.destination_port[0] = static_cast<uint8_t>(dport >> 8);
  k.destination_port[1] = static_cast<uint8_t>(dport);
  k.flags = kKeyHasPorts;
  return k;
}

Rule toDestination(uint8_t d0, uint8_t d1, uint8_t length, uint32_t id, Action a) {
  Rule r;
  r.destination.address[0] = d0;
  r.destination.address[1] = d1;
  r.destination.length = length;
  r.id = id;
  r.action = a;
  return r;
}

// A rebuilt rule set is a new classifier with a new serial: nothing of the
// old one answers, and the verdicts are the new rules'.
TEST(VerdictCacheTest, NewSerialFollowsTheNewRules) {
  const std::vector<Rule> before = {toDestination(10, 0, 8, 0, Action::kDeny),
                                    toDestination(172, 16, 12, 1, Action::kAllow)};
  std::vector<Rule> after = {toDestination(172, 16, 12, 0, Action::kDeny),
                             toDestination(10, 1, 16, 1, Action::kAllow)};
  after[1].protocol = 6;
  after[1].destination_ports = {443, 443};
  auto acl1 = build(before);
  auto acl2 = build(after);
  ASSERT_TRUE(acl1 && acl2);
  const std::vector<Key4> keys = {key4(10, 1, 0, 5, 443), key4(10, 2, 0, 5, 443),
                                  key4(172, 16, 3, 3, 80), key4(192, 168, 1, 1, 22)};
  VerdictCache cache;
  EXPECT_EQ(throughCache(cache, 1, *acl1, before, keys, 32), keys.size());
  EXPECT_EQ(throughCache(cache, 1, *acl1, before, keys, 32), 0u);
  const auto ptrs = pointers(keys);
  std::array<uint32_t, 4> ids{};
  classifyCached4(cache, 1, *acl1, ptrs.data(), ids.data(), 4);
  EXPECT_EQ(ids, (std::array<uint32_t, 4>{0, 0, 1, kNoMatch}));
  // The rebuild: every key misses once, then hits; the answers are new.
  EXPECT_EQ(classifyCached4(cache, 2, *acl2, ptrs.data(), ids.data(), 4), 4u);
  EXPECT_EQ(ids, (std::array<uint32_t, 4>{1, kNoMatch, 0, kNoMatch}));
  EXPECT_EQ(classifyCached4(cache, 2, *acl2, ptrs.data(), ids.data(), 4), 0u);
  EXPECT_EQ(ids, (std::array<uint32_t, 4>{1, kNoMatch, 0, kNoMatch}));
  // The old policy's entries are still there for a worker that has not
  // moved on yet (both serials live side by side).
  EXPECT_EQ(classifyCached4(cache, 1, *acl1, ptrs.data(), ids.data(), 4), 0u);
  EXPECT_EQ(ids, (std::array<uint32_t, 4>{0, 0, 1, kNoMatch}));
  // Serial 0 never uses the cache.
  EXPECT_EQ(classifyCached4(cache, 0, *acl2, ptrs.data(), ids.data(), 4), 4u);
  EXPECT_EQ(classifyCached4(cache, 0, *acl2, ptrs.data(), ids.data(), 4), 4u);
  EXPECT_EQ(ids, (std::array<uint32_t, 4>{1, kNoMatch, 0, kNoMatch}));
}

}  // namespace
}  // namespace mcgw::policy
