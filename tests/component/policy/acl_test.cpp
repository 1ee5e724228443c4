// The rte_acl rule classifier (dataplane/policy/acl.hpp) on a real EAL
// (--no-huge): a property test against the plain reference classifier
// (10,000 random rules, 100,000 random packets, both families, fixed seeds),
// and exact cases (first match, port range edges, DSCP, protocols, /0, /32,
// /128, empty rule sets, limits and refused rules).
#include <gtest/gtest.h>
#include <rte_acl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "dataplane/policy/acl.hpp"
#include "tests/support/eal.hpp"

namespace mcgw::policy {
namespace {

const auto* const kEal =
    ::testing::AddGlobalTestEnvironment(new test::EalEnvironment("policy_acl_test", 1024));

// ---------------------------------------------------------------- packets

struct Packet {
  bool v6 = false;
  std::array<uint8_t, 16> src{}, dst{};
  uint8_t protocol = 6;
  uint8_t tos = 0;  // DSCP << 2 | ECN
  uint16_t sport = 0, dport = 0;
  bool first_fragment = false;  // MF / M set, offset 0
  bool later_fragment = false;  // offset != 0
  int hop_by_hop = 0;           // IPv6: hop-by-hop / destination-options headers before
  size_t l4_bytes = 8;          // bytes of the L4 header present
};

std::vector<uint8_t> bytesOf(const Packet& p) {
  std::vector<uint8_t> l4(p.l4_bytes, 0);
  const uint8_t ports[4] = {static_cast<uint8_t>(p.sport >> 8), static_cast<uint8_t>(p.sport),
                            static_cast<uint8_t>(p.dport >> 8), static_cast<uint8_t>(p.dport)};
  std::memcpy(l4.data(), ports, std::min<size_t>(4, l4.size()));
  std::vector<uint8_t> b;
  if (!p.v6) {
    const size_t total = 20 + l4.size();
    const uint16_t frag = p.later_fragment ? 0x2000 | 37 : p.first_fragment ? 0x2000 : 0x4000;
    b = {0x45,
         p.tos,
         static_cast<uint8_t>(total >> 8),
         static_cast<uint8_t>(total),
         0x12,
         0x34,
         static_cast<uint8_t>(frag >> 8),
         static_cast<uint8_t>(frag),
         64,
         p.protocol,
         0,
         0};
    b.insert(b.end(), p.src.begin(), p.src.begin() + 4);
    b.insert(b.end(), p.dst.begin(), p.dst.begin() + 4);
  } else {
    std::vector<uint8_t> ext;
    // Hop-by-hop first (only there), then destination options, then the
    // fragment header, then L4.
    std::vector<uint8_t> chain;  // header numbers, the L4 protocol last
    for (int i = 0; i < p.hop_by_hop; ++i) {
      chain.push_back(i == 0 ? 0 : 60);
    }
    if (p.first_fragment || p.later_fragment) {
      chain.push_back(44);
    }
    chain.push_back(p.protocol);
    for (size_t i = 0; i + 1 < chain.size(); ++i) {
      if (chain[i] == 44) {
        const uint16_t off = p.later_fragment ? (37 << 3) | 1 : 1;
        ext.insert(ext.end(), {chain[i + 1], 0, static_cast<uint8_t>(off >> 8),
                               static_cast<uint8_t>(off), 1, 2, 3, 4});
      } else {
        ext.insert(ext.end(), {chain[i + 1], 0, 1, 4, 0, 0, 0, 0});
      }
    }
    const size_t payload = ext.size() + l4.size();
    b = {static_cast<uint8_t>(0x60 | p.tos >> 4),
         static_cast<uint8_t>(p.tos << 4),
         0,
         0,
         static_cast<uint8_t>(payload >> 8),
         static_cast<uint8_t>(payload),
         chain.front(),
         64};
    b.insert(b.end(), p.src.begin(), p.src.end());
    b.insert(b.end(), p.dst.begin(), p.dst.end());
    b.insert(b.end(), ext.begin(), ext.end());
  }
  b.insert(b.end(), l4.begin(), l4.end());
  return b;
}

std::string hexText(const uint8_t* p, size_t n) {
  std::string s;
  char b[4];
  for (size_t i = 0; i < n; ++i) {
    std::snprintf(b, sizeof(b), "%02x", p[i]);
    s += b;
    if (i % 4 == 3) {
      s += ' ';
    }
  }
  return s;
}

std::string describe(const Rule& r) {
  auto prefix = [&](const Prefix& p) {
    return hexText(p.address.data(), r.v6 ? 16 : 4) + "/" + std::to_string(p.length);
  };
  return std::string(r.v6 ? "v6" : "v4") + " id " + std::to_string(r.id) + " src " +
         prefix(r.source) + " dst " + prefix(r.destination) + " proto " +
         (r.protocol ? std::to_string(*r.protocol) : "any") + " sport " +
         std::to_string(r.source_ports.lo) + "-" + std::to_string(r.source_ports.hi) + " dport " +
         std::to_string(r.destination_ports.lo) + "-" + std::to_string(r.destination_ports.hi) +
         " dscp " + (r.dscp ? std::to_string(*r.dscp) : "any");
}

// ---------------------------------------------------------------- random

// Rules and packets drawn from a small pool of base addresses per family,
// so that prefixes overlap and packets fall inside them.
class Generator {
 public:
  explicit Generator(uint64_t seed) : rng_(seed) {
    for (auto* pool : {&bases4_, &bases6_}) {
      for (int i = 0; i < 48; ++i) {
        std::array<uint8_t, 16> a{};
        for (auto& x : a) {
          x = byte();
        }
        pool->push_back(a);
      }
    }
  }

  uint32_t below(uint32_t n) { return static_cast<uint32_t>(rng_() % n); }
  uint8_t byte() { return static_cast<uint8_t>(rng_()); }
  bool chance(unsigned percent) { return below(100) < percent; }

  // An address near a base: its first `keep` bits, the rest random.
  std::array<uint8_t, 16> near(bool v6, unsigned keep) {
    auto a = (v6 ? bases6_ : bases4_)[below(48)];
    randomizeFrom(a, keep, v6 ? 128 : 32);
    return a;
  }
  void randomizeFrom(std::array<uint8_t, 16>& a, unsigned keep, unsigned bits) {
    for (unsigned bit = keep; bit < bits; ++bit) {
      const uint8_t m = static_cast<uint8_t>(0x80 >> (bit % 8));
      a[bit / 8] = chance(50) ? a[bit / 8] | m : a[bit / 8] & ~m;
    }
  }

  // Lengths 0 (rare: a rule matching a whole family would hide every
  // rule after it), the full length, anything, and mostly long-ish ones
  // (many nest within the bases).
  uint8_t prefixLength(bool v6) {
    const unsigned max = v6 ? 128 : 32;
    const uint32_t r = below(64);
    if (r == 0) {
      return 0;
    }
    if (r < 8) {
      return static_cast<uint8_t>(max);
    }
    if (r < 16) {
      return static_cast<uint8_t>(below(max + 1));
    }
    return static_cast<uint8_t>(max / 4 + below(max - max / 4 + 1));
  }

  // How many bits of a base a prefix of `length` keeps: mostly all (rules
  // nest inside each other), else a few fewer (siblings and near misses).
  unsigned keep(unsigned length) {
    return chance(60) ? length : length - std::min(length, below(6));
  }

  uint16_t port() {
    static const uint16_t kCommon[] = {0, 1, 22, 53, 80, 443, 1023, 1024, 4789, 65534, 65535};
    return chance(60) ? kCommon[below(std::size(kCommon))] : static_cast<uint16_t>(rng_());
  }

  PortRange portRange() {
    PortRange r;
    switch (below(6)) {
      case 0:
      case 1:
        break;  // any
      case 2:
        r.lo = r.hi = port();
        break;
      case 3:
        r.lo = 0;
        r.hi = port();
        break;
      case 4:
        r.lo = port();
        r.hi = 65535;
        break;
      default: {
        uint16_t a = port(), b = port();
        r.lo = std::min(a, b);
        r.hi = std::max(a, b);
      }
    }
    return r;
  }

  uint8_t protocolOfPacket() {
    static const uint8_t kProtocols[] = {6, 6, 6, 17, 17, 17, 132, 1, 58, 47, 50};
    return chance(90) ? kProtocols[below(std::size(kProtocols))] : byte();
  }

  uint8_t dscp() {
    static const uint8_t kCommon[] = {0, 10, 26, 46, 63};
    return chance(70) ? kCommon[below(std::size(kCommon))] : static_cast<uint8_t>(below(64));
  }

  Rule rule(bool v6, uint32_t id) {
    Rule r;
    r.v6 = v6;
    r.id = id;
    r.action = id % 3 == 0 ? Action::kAllow : Action::kDeny;  // one action per id
    r.source.length = prefixLength(v6);
    r.source.address = near(v6, keep(r.source.length));
    // Destinations no shorter than a quarter of the address: a packet far
    // from every base matches no rule (/0 and short prefixes: Exact tests).
    r.destination.length = std::max<uint8_t>(prefixLength(v6), v6 ? 32 : 8);
    r.destination.address = near(v6, keep(r.destination.length));
    if (chance(15)) {
      r.source.length = 0;  // any source
    }
    switch (below(10)) {
      case 0:
      case 1:
      case 2:
        break;  // any protocol
      case 3:
      case 4:
      case 5:
        r.protocol = 6;
        break;
      case 6:
      case 7:
        r.protocol = 17;
        break;
      case 8:
        r.protocol = 132;
        break;
      default:
        r.protocol = protocolOfPacket();
    }
    if (!r.protocol || *r.protocol == 6 || *r.protocol == 17 || *r.protocol == 132) {
      if (chance(50)) {
        r.destination_ports = portRange();
      }
      if (chance(20)) {
        r.source_ports = portRange();
      }
    }
    if (chance(25)) {
      r.dscp = dscp();
    }
    return r;
  }

  // A packet, often made to fall inside a random rule (its prefixes, ports,
  // protocol and DSCP), else near the bases or anywhere.
  Packet packet(const std::vector<Rule>& rules) {
    Packet p;
    p.v6 = chance(50);
    p.protocol = protocolOfPacket();
    if (p.v6 && (p.protocol == 0 || p.protocol == 43 || p.protocol == 44 || p.protocol == 60)) {
      p.protocol = 253;  // an IPv6 extension header would need a body
    }
    p.sport = port();
    p.dport = port();
    p.tos = static_cast<uint8_t>(dscp() << 2 | below(4));
    p.src = near(p.v6, below(p.v6 ? 129 : 33));
    p.dst = near(p.v6, below(p.v6 ? 129 : 33));
    if (chance(70) && !rules.empty()) {
      const Rule* r = &rules[below(static_cast<uint32_t>(rules.size()))];
      for (int tries = 0; tries < 8 && r->v6 != p.v6; ++tries) {
        r = &rules[below(static_cast<uint32_t>(rules.size()))];
      }
      if (r->v6 == p.v6) {
        const unsigned bits = p.v6 ? 128 : 32;
        p.src = r->source.address;
        randomizeFrom(p.src, r->source.length, bits);
        p.dst = r->destination.address;
        randomizeFrom(p.dst, r->destination.length, bits);
        if (r->protocol && chance(90) &&
            !(p.v6 && (*r->protocol == 0 || *r->protocol == 43 || *r->protocol == 44 ||
                       *r->protocol == 60))) {
          p.protocol = *r->protocol;
        }
        if (chance(85)) {
          p.sport = static_cast<uint16_t>(r->source_ports.lo +
                                          below(r->source_ports.hi - r->source_ports.lo + 1u));
          p.dport =
              static_cast<uint16_t>(r->destination_ports.lo +
                                    below(r->destination_ports.hi - r->destination_ports.lo + 1u));
        }
        if (r->dscp && chance(85)) {
          p.tos = static_cast<uint8_t>(*r->dscp << 2 | below(4));
        }
      }
    }
    switch (below(20)) {
      case 0:
        p.first_fragment = true;
        break;
      case 1:
        p.later_fragment = true;
        break;
      case 2:
        p.l4_bytes = below(4);  // truncated: no ports
        break;
      case 3:
        p.hop_by_hop = 1 + static_cast<int>(below(3));
        break;
      default:
        break;
    }
    return p;
  }

 private:
  std::mt19937_64 rng_;
  std::vector<std::array<uint8_t, 16>> bases4_, bases6_;
};

std::vector<Rule> randomRules(Generator& g, size_t n) {
  std::vector<Rule> rules;
  rules.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    // Ids below n: about a third of them shared by several entries.
    const uint32_t id = g.below(static_cast<uint32_t>(n * 2 / 3));
    rules.push_back(g.rule(g.chance(50), id));
  }
  return rules;
}

struct Outcome {
  size_t matched = 0;          // packets that matched some rule
  std::set<uint32_t> winners;  // the ids that won
};

// Runs `packets` through fillKey and both classifiers; fails (with the seed)
// on a difference.
Outcome compare(uint64_t seed, const std::vector<Rule>& rules, const Classifier& c, Generator& g,
                size_t packets) {
  Outcome out;
  size_t mismatches = 0;
  std::vector<Key4> k4(64);
  std::vector<Key6> k6(64);
  std::vector<const uint8_t*> p4(64), p6(64);
  std::vector<uint32_t> id4(64), id6(64);
  std::vector<Packet> burst4, burst6;
  for (size_t done = 0; done < packets && mismatches < 5;) {
    // Bursts of 1..64 packets of each family.
    const unsigned n = static_cast<unsigned>(std::min<size_t>(1 + g.below(64), packets - done));
    burst4.clear();
    burst6.clear();
    for (unsigned i = 0; i < n; ++i) {
      Packet p = g.packet(rules);
      (p.v6 ? burst6 : burst4).push_back(p);
    }
    done += n;
    for (size_t i = 0; i < burst4.size(); ++i) {
      const auto b = bytesOf(burst4[i]);
      EXPECT_TRUE(fillKey4(b.data(), b.size(), &k4[i]));
      p4[i] = reinterpret_cast<const uint8_t*>(&k4[i]);
    }
    for (size_t i = 0; i < burst6.size(); ++i) {
      const auto b = bytesOf(burst6[i]);
      EXPECT_TRUE(fillKey6(b.data(), b.size(), &k6[i]));
      p6[i] = reinterpret_cast<const uint8_t*>(&k6[i]);
    }
    c.classify4(p4.data(), id4.data(), static_cast<unsigned>(burst4.size()));
    c.classify6(p6.data(), id6.data(), static_cast<unsigned>(burst6.size()));
    auto check = [&](bool v6, size_t i, uint32_t got, uint32_t want, const uint8_t* key,
                     size_t key_size) {
      if (want != kNoMatch) {
        ++out.matched;
        out.winners.insert(want);
      }
      if (got == want || mismatches >= 5) {
        return;
      }
      ++mismatches;
      std::string why = "seed " + std::to_string(seed) + ": " + (v6 ? "IPv6" : "IPv4") + " key " +
                        hexText(key, key_size) + ": rte_acl " +
                        (got == kNoMatch ? "no match" : std::to_string(got)) + ", reference " +
                        (want == kNoMatch ? "no match" : std::to_string(want));
      for (const Rule& r : rules) {
        if (r.v6 == v6 && (r.id == got || r.id == want)) {
          why += "\n  " + describe(r);
        }
      }
      ADD_FAILURE() << why << " (packet " << i << " of its burst)";
    };
    for (size_t i = 0; i < burst4.size(); ++i) {
      check(false, i, id4[i], referenceClassify4(rules, k4[i]), p4[i], sizeof(Key4));
    }
    for (size_t i = 0; i < burst6.size(); ++i) {
      check(true, i, id6[i], referenceClassify6(rules, k6[i]), p6[i], sizeof(Key6));
    }
  }
  return out;
}

class AclProperty : public ::testing::TestWithParam<uint64_t> {};

TEST_P(AclProperty, RteAclAgreesWithTheReference) {
  const uint64_t seed = GetParam();
  SCOPED_TRACE("seed " + std::to_string(seed));
  Generator g(seed);
  const auto rules = randomRules(g, 10'000);
  const auto t0 = std::chrono::steady_clock::now();
  auto c = Classifier::build("property", rules);
  ASSERT_TRUE(c) << c.error();
  std::printf("seed %llu: %zu IPv4 + %zu IPv6 entries built in %.3f s\n",
              static_cast<unsigned long long>(seed), (*c)->entries4(), (*c)->entries6(),
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  const size_t packets = 100'000;
  const Outcome out = compare(seed, rules, **c, g, packets);
  std::printf("seed %llu: %zu of %zu packets matched a rule, %zu different rules won\n",
              static_cast<unsigned long long>(seed), out.matched, packets, out.winners.size());
  // The packets are biased towards the rules; a test where nothing or
  // everything matched, or a few rules won everything, would not test much.
  EXPECT_GT(out.matched, packets / 4);
  EXPECT_LT(out.matched, packets * 95 / 100);
  EXPECT_GT(out.winners.size(), 1000u);
}

INSTANTIATE_TEST_SUITE_P(Seeds, AclProperty, ::testing::Values(1u, 20261205u));

// ---------------------------------------------------------------- exact cases

Prefix v4(const char* text, uint8_t length) {
  Prefix p;
  unsigned a, b, c, d;
  EXPECT_EQ(std::sscanf(text, "%u.%u.%u.%u", &a, &b, &c, &d), 4);
  p.address = {static_cast<uint8_t>(a), static_cast<uint8_t>(b), static_cast<uint8_t>(c),
               static_cast<uint8_t>(d)};
  p.length = length;
  return p;
}

std::array<uint8_t, 16> a4(const char* text) {
  return v4(text, 32).address;
}

// 2001:db8::<last 8 bytes>.
std::array<uint8_t, 16> a6(uint64_t low, uint64_t high = 0x20010db800000000ull) {
  std::array<uint8_t, 16> a{};
  for (int i = 0; i < 8; ++i) {
    a[i] = static_cast<uint8_t>(high >> (56 - 8 * i));
    a[8 + i] = static_cast<uint8_t>(low >> (56 - 8 * i));
  }
  return a;
}

Rule rule4(uint32_t id, Prefix src, Prefix dst) {
  Rule r;
  r.id = id;
  r.source = src;
  r.destination = dst;
  return r;
}

Packet tcp4(const char* src, const char* dst, uint16_t sport, uint16_t dport) {
  Packet p;
  p.src = a4(src);
  p.dst = a4(dst);
  p.sport = sport;
  p.dport = dport;
  return p;
}

// What rte_acl answers for one packet; the reference must agree.
uint32_t classify(const Classifier& c, const std::vector<Rule>& rules, const Packet& p) {
  const auto b = bytesOf(p);
  uint32_t id = 12345, want;
  if (p.v6) {
    Key6 k;
    EXPECT_TRUE(fillKey6(b.data(), b.size(), &k));
    const uint8_t* keys[] = {reinterpret_cast<const uint8_t*>(&k)};
    c.classify6(keys, &id, 1);
    want = referenceClassify6(rules, k);
  } else {
    Key4 k;
    EXPECT_TRUE(fillKey4(b.data(), b.size(), &k));
    const uint8_t* keys[] = {reinterpret_cast<const uint8_t*>(&k)};
    c.classify4(keys, &id, 1);
    want = referenceClassify4(rules, k);
  }
  EXPECT_EQ(id, want) << "rte_acl and the reference disagree";
  return id;
}

std::unique_ptr<Classifier> build(const std::vector<Rule>& rules) {
  auto c = Classifier::build("exact", rules);
  EXPECT_TRUE(c) << c.error();
  return c ? std::move(*c) : nullptr;
}

TEST(AclExact, FirstMatchWinsWhateverTheOrder) {
  std::vector<Rule> rules = {
      rule4(5, v4("10.0.0.0", 8), {}),
      rule4(7, {}, {}),
      rule4(3, v4("10.1.0.0", 16), {}),
      // Rule 2: a plan object of two prefixes (two entries, one id).
      rule4(2, {}, v4("192.168.1.0", 24)),
      rule4(2, {}, v4("172.16.0.0", 12)),
  };
  rules[2].action = Action::kAllow;
  auto c = build(rules);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->entries4(), 5u);
  EXPECT_EQ(c->entries6(), 0u);
  EXPECT_EQ(classify(*c, rules, tcp4("10.1.2.3", "8.8.8.8", 1, 2)), 3u);
  EXPECT_EQ(classify(*c, rules, tcp4("10.2.2.3", "8.8.8.8", 1, 2)), 5u);
  EXPECT_EQ(classify(*c, rules, tcp4("11.0.0.1", "8.8.8.8", 1, 2)), 7u);
  EXPECT_EQ(classify(*c, rules, tcp4("10.1.2.3", "192.168.1.77", 1, 2)), 2u);
  EXPECT_EQ(classify(*c, rules, tcp4("10.1.2.3", "172.31.255.255", 1, 2)), 2u);
  EXPECT_EQ(classify(*c, rules, tcp4("10.1.2.3", "172.32.0.0", 1, 2)), 3u);
}

TEST(AclExact, PortRangeEdges) {
  std::vector<Rule> rules;
  Rule r;
  r.protocol = 6;
  r.destination_ports = {1000, 2000};
  r.id = 1;
  rules.push_back(r);
  r = {};
  r.protocol = 17;
  r.source_ports = {0, 0};
  r.id = 2;
  rules.push_back(r);
  r = {};
  r.protocol = 17;
  r.destination_ports = {65535, 65535};
  r.id = 3;
  rules.push_back(r);
  r = {};  // any protocol with ports: only packets that have ports
  r.source_ports = {5000, 5001};
  r.id = 4;
  rules.push_back(r);
  auto c = build(rules);
  ASSERT_TRUE(c);
  const char* s = "10.0.0.1";
  const char* d = "10.0.0.2";
  EXPECT_EQ(classify(*c, rules, tcp4(s, d, 9, 999)), kNoMatch);
  EXPECT_EQ(classify(*c, rules, tcp4(s, d, 9, 1000)), 1u);
  EXPECT_EQ(classify(*c, rules, tcp4(s, d, 9, 1500)), 1u);
  EXPECT_EQ(classify(*c, rules, tcp4(s, d, 9, 2000)), 1u);
  EXPECT_EQ(classify(*c, rules, tcp4(s, d, 9, 2001)), kNoMatch);
  Packet udp = tcp4(s, d, 0, 7);
  udp.protocol = 17;
  EXPECT_EQ(classify(*c, rules, udp), 2u);
  udp.sport = 1;
  EXPECT_EQ(classify(*c, rules, udp), kNoMatch);
  udp.dport = 65535;
  EXPECT_EQ(classify(*c, rules, udp), 3u);
  udp.dport = 65534;
  EXPECT_EQ(classify(*c, rules, udp), kNoMatch);
  udp.sport = 5001;
  EXPECT_EQ(classify(*c, rules, udp), 4u);
  Packet sctp = tcp4(s, d, 5000, 1500);
  sctp.protocol = kIpProtoSctp;
  EXPECT_EQ(classify(*c, rules, sctp), 4u);
  sctp.sport = 4999;
  EXPECT_EQ(classify(*c, rules, sctp), kNoMatch);
  // Packets without ports never match a port rule, even with zeros in
  // range (rule 2's source port 0): ICMP, a later fragment, a short L4.
  Packet icmp = tcp4(s, d, 0, 0);
  icmp.protocol = 1;
  EXPECT_EQ(classify(*c, rules, icmp), kNoMatch);
  Packet frag = tcp4(s, d, 0, 1500);
  frag.protocol = 17;
  frag.later_fragment = true;
  EXPECT_EQ(classify(*c, rules, frag), kNoMatch);
  frag.protocol = 6;
  EXPECT_EQ(classify(*c, rules, frag), kNoMatch);
  frag.later_fragment = false;
  frag.first_fragment = true;
  EXPECT_EQ(classify(*c, rules, frag), 1u);
  Packet short_udp = tcp4(s, d, 0, 0);
  short_udp.protocol = 17;
  short_udp.l4_bytes = 3;
  EXPECT_EQ(classify(*c, rules, short_udp), kNoMatch);
  short_udp.l4_bytes = 4;
  EXPECT_EQ(classify(*c, rules, short_udp), 2u);
}

TEST(AclExact, DscpAndProtocols) {
  std::vector<Rule> rules;
  Rule r;
  r.dscp = 46;
  r.id = 1;
  rules.push_back(r);
  r = {};
  r.protocol = 47;
  r.id = 2;
  rules.push_back(r);
  r = {};
  r.dscp = 0;
  r.protocol = 1;
  r.id = 3;
  rules.push_back(r);
  r = {};  // any protocol, any DSCP, any address
  r.id = 9;
  rules.push_back(r);
  r.v6 = true;
  r.dscp = 63;
  r.id = 4;
  rules.push_back(r);
  auto c = build(rules);
  ASSERT_TRUE(c);
  Packet p = tcp4("1.2.3.4", "5.6.7.8", 1, 2);
  p.tos = 46 << 2;
  EXPECT_EQ(classify(*c, rules, p), 1u);
  p.tos = 46 << 2 | 3;  // ECN bits are not DSCP
  EXPECT_EQ(classify(*c, rules, p), 1u);
  p.tos = 45 << 2;
  EXPECT_EQ(classify(*c, rules, p), 9u);
  p.tos = 47 << 2;
  EXPECT_EQ(classify(*c, rules, p), 9u);
  p.tos = 0;
  p.protocol = 47;
  EXPECT_EQ(classify(*c, rules, p), 2u);
  p.protocol = 1;
  EXPECT_EQ(classify(*c, rules, p), 3u);
  p.tos = 1 << 2;
  EXPECT_EQ(classify(*c, rules, p), 9u);
  p.protocol = 255;
  EXPECT_EQ(classify(*c, rules, p), 9u);
  p.protocol = 0;
  EXPECT_EQ(classify(*c, rules, p), 9u);
  Packet q;
  q.v6 = true;
  q.src = a6(1);
  q.dst = a6(2);
  q.protocol = 58;
  q.tos = 63 << 2;
  EXPECT_EQ(classify(*c, rules, q), 4u);
  q.tos = 62 << 2;
  EXPECT_EQ(classify(*c, rules, q), kNoMatch);
}

TEST(AclExact, PrefixLengthsZeroHostAndWordEdges) {
  std::vector<Rule> rules;
  Rule r = rule4(1, {}, v4("10.0.0.1", 32));
  rules.push_back(r);
  r = rule4(2, v4("0.0.0.0", 0), v4("0.0.0.0", 0));
  rules.push_back(r);
  // IPv6: /128, /0 and lengths either side of the 32-bit words rte_acl
  // splits an address into.
  const uint64_t hi = 0x20010db800000000ull;
  uint32_t id = 10;
  for (uint8_t len : {128, 127, 97, 96, 95, 65, 64, 63, 33, 32, 31, 1}) {
    Rule q;
    q.v6 = true;
    q.id = id++;
    q.destination.address = a6(0x0123456789abcdefull, hi);
    q.destination.length = len;
    rules.push_back(q);
  }
  Rule any6;
  any6.v6 = true;
  any6.id = 100;
  rules.push_back(any6);
  auto c = build(rules);
  ASSERT_TRUE(c);
  EXPECT_EQ(classify(*c, rules, tcp4("9.9.9.9", "10.0.0.1", 1, 2)), 1u);
  EXPECT_EQ(classify(*c, rules, tcp4("9.9.9.9", "10.0.0.0", 1, 2)), 2u);
  EXPECT_EQ(classify(*c, rules, tcp4("9.9.9.9", "10.0.0.3", 1, 2)), 2u);
  EXPECT_EQ(classify(*c, rules, tcp4("0.0.0.0", "255.255.255.255", 1, 2)), 2u);
  // Flipping bit b of the destination: the longest rule that still matches
  // is the one with length <= b.
  Packet p;
  p.v6 = true;
  p.src = a6(7);
  const auto base = a6(0x0123456789abcdefull, hi);
  p.dst = base;
  EXPECT_EQ(classify(*c, rules, p), 10u);
  const uint8_t lens[] = {128, 127, 97, 96, 95, 65, 64, 63, 33, 32, 31, 1};
  for (unsigned bit : {127u, 126u, 96u, 95u, 94u, 64u, 63u, 62u, 32u, 31u, 30u, 0u}) {
    SCOPED_TRACE("bit " + std::to_string(bit));
    p.dst = base;
    p.dst[bit / 8] ^= static_cast<uint8_t>(0x80 >> (bit % 8));
    uint32_t want = 100;
    for (unsigned i = 0; i < std::size(lens); ++i) {
      if (lens[i] <= bit) {
        want = 10 + i;
        break;
      }
    }
    EXPECT_EQ(classify(*c, rules, p), want);
  }
}

TEST(AclExact, EmptyRuleSetsAndBursts) {
  auto empty = build({});
  ASSERT_TRUE(empty);
  EXPECT_EQ(empty->entries4() + empty->entries6(), 0u);
  EXPECT_EQ(classify(*empty, {}, tcp4("1.1.1.1", "2.2.2.2", 3, 4)), kNoMatch);
  Packet q;
  q.v6 = true;
  EXPECT_EQ(classify(*empty, {}, q), kNoMatch);
  // IPv4 rules only: IPv6 never matches, and the other way round.
  const std::vector<Rule> only4 = {rule4(1, {}, {})};
  auto c4 = build(only4);
  ASSERT_TRUE(c4);
  EXPECT_EQ(classify(*c4, only4, tcp4("1.1.1.1", "2.2.2.2", 3, 4)), 1u);
  EXPECT_EQ(classify(*c4, only4, q), kNoMatch);
  std::vector<Rule> only6 = only4;
  only6[0].v6 = true;
  auto c6 = build(only6);
  ASSERT_TRUE(c6);
  EXPECT_EQ(classify(*c6, only6, tcp4("1.1.1.1", "2.2.2.2", 3, 4)), kNoMatch);
  EXPECT_EQ(classify(*c6, only6, q), 1u);
  // Bursts of 0, 1, 32, 33 and 200 keys; every other key matches.
  std::vector<Rule> rules = {rule4(4, v4("10.0.0.0", 8), {})};
  auto c = build(rules);
  ASSERT_TRUE(c);
  std::vector<Key4> keys(200);
  std::vector<const uint8_t*> ptrs(200);
  for (size_t i = 0; i < keys.size(); ++i) {
    const auto b = bytesOf(tcp4(i % 2 ? "10.9.9.9" : "11.9.9.9", "1.1.1.1", 1, 2));
    ASSERT_TRUE(fillKey4(b.data(), b.size(), &keys[i]));
    ptrs[i] = reinterpret_cast<const uint8_t*>(&keys[i]);
  }
  for (unsigned n : {0u, 1u, 32u, 33u, 200u}) {
    std::vector<uint32_t> ids(201, 777);
    c->classify4(ptrs.data(), ids.data(), n);
    for (unsigned i = 0; i < n; ++i) {
      EXPECT_EQ(ids[i], i % 2 ? 4u : kNoMatch) << "n " << n << " i " << i;
    }
    EXPECT_EQ(ids[n], 777u) << "wrote past n " << n;
    std::vector<uint32_t> none(n + 1, 777);
    empty->classify6(ptrs.data(), none.data(), n);  // no context: no key is read
    EXPECT_EQ(std::count(none.begin(), none.end(), kNoMatch), static_cast<long>(n));
  }
}

TEST(AclExact, LimitsAndRefusedRules) {
  // At most kMaxEntries per family: one more is refused, with the count.
  std::vector<Rule> many(kMaxEntries + 1);
  for (size_t i = 0; i < many.size(); ++i) {
    many[i].id = static_cast<uint32_t>(i);
    many[i].destination = v4("10.0.0.0", 32);
    many[i].destination.address[1] = static_cast<uint8_t>(i >> 8);
    many[i].destination.address[2] = static_cast<uint8_t>(i);
  }
  auto refused = Classifier::build("many", many);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error(), "policy many: 65537 IPv4 entries, at most 65536");
  // kMaxEntries of one family and some of the other: fine.
  many.back().v6 = true;
  many.back().destination.length = 128;
  auto full = Classifier::build("many", many);
  ASSERT_TRUE(full) << full.error();
  EXPECT_EQ((*full)->entries4(), kMaxEntries);
  EXPECT_EQ((*full)->entries6(), 1u);
  std::printf("%zu + 1 entries (host routes) built in %.3f s\n", kMaxEntries,
              (*full)->buildSeconds());
  EXPECT_EQ(classify(**full, many, tcp4("1.1.1.1", "10.1.2.0", 1, 2)), 0x0102u);

  std::vector<Rule> bad = {rule4(1, {}, {}), rule4(2, {}, {})};
  bad[1].destination.length = 33;
  auto e = Classifier::build("bad", bad);
  ASSERT_FALSE(e);
  EXPECT_EQ(e.error(), "policy bad: entry 1 (rule 2): prefix length 33 is beyond /32");
  bad[1] = rule4(2, {}, {});
  bad[1].protocol = 1;
  bad[1].destination_ports = {80, 80};
  e = Classifier::build("bad", bad);
  ASSERT_FALSE(e);
  EXPECT_EQ(e.error(),
            "policy bad: entry 1 (rule 2): ports need protocol tcp, udp, sctp or any, "
            "not 1");
  bad[1] = rule4(1, v4("10.0.0.0", 8), {});
  bad[1].action = Action::kAllow;
  e = Classifier::build("bad", bad);
  ASSERT_FALSE(e);
  EXPECT_EQ(e.error(), "policy bad: entries of rule 1 have different actions");
  bad[1].id = kMaxId + 1;
  e = Classifier::build("bad", bad);
  ASSERT_FALSE(e);
  EXPECT_EQ(e.error(),
            "policy bad: entry 1 (rule 536870911): rule id 536870911 is above "
            "536870910");
  // The largest id is a match (rte_acl's lowest priority, 1).
  bad[1].id = kMaxId;
  bad.resize(2);
  bad[0].id = kMaxId;
  bad[0].action = Action::kAllow;
  auto top = build(bad);
  ASSERT_TRUE(top);
  EXPECT_EQ(classify(*top, bad, tcp4("10.0.0.1", "1.1.1.1", 1, 2)), kMaxId);
}

// rte_acl names contexts globally (and rte_acl_create returns an existing
// context of the same name): classifiers of one name, even a long one, are
// distinct.
TEST(AclExact, SameNameTwice) {
  const std::string name = "tenant-with-a-name-longer-than-rte-acl-allows";
  const std::vector<Rule> one = {rule4(1, v4("10.0.0.0", 8), {})};
  const std::vector<Rule> two = {rule4(2, v4("11.0.0.0", 8), {})};
  auto a = Classifier::build(name, one);
  auto b = Classifier::build(name, two);
  ASSERT_TRUE(a) << a.error();
  ASSERT_TRUE(b) << b.error();
  EXPECT_EQ(classify(**a, one, tcp4("10.0.0.1", "1.1.1.1", 1, 2)), 1u);
  EXPECT_EQ(classify(**a, one, tcp4("11.0.0.1", "1.1.1.1", 1, 2)), kNoMatch);
  EXPECT_EQ(classify(**b, two, tcp4("10.0.0.1", "1.1.1.1", 1, 2)), kNoMatch);
  EXPECT_EQ(classify(**b, two, tcp4("11.0.0.1", "1.1.1.1", 1, 2)), 2u);
}

// rte_acl's chosen method, as Classifier::defaultAlgorithm reports it, is
// what rte_acl_dump prints for the contexts it builds ("alg=N").
TEST(AclExact, DefaultAlgorithmIsWhatRteAclUses) {
  const std::string alg = Classifier::defaultAlgorithm();
  std::printf("rte_acl default classify method on this machine: %s\n", alg.c_str());
  const std::pair<const char*, int> kNumbers[] = {
      {"scalar", RTE_ACL_CLASSIFY_SCALAR},      {"sse", RTE_ACL_CLASSIFY_SSE},
      {"avx2", RTE_ACL_CLASSIFY_AVX2},          {"neon", RTE_ACL_CLASSIFY_NEON},
      {"altivec", RTE_ACL_CLASSIFY_ALTIVEC},    {"avx512x16", RTE_ACL_CLASSIFY_AVX512X16},
      {"avx512x32", RTE_ACL_CLASSIFY_AVX512X32}};
  int number = -1;
  for (const auto& [name, n] : kNumbers) {
    if (alg == name) {
      number = n;
    }
  }
  ASSERT_GE(number, 0) << alg;
  const std::vector<Rule> rules = {rule4(1, {}, {})};
  auto c = build(rules);
  ASSERT_TRUE(c);
  // rte_acl_list_dump prints every context to stdout: catch it in a file.
  char path[] = "/tmp/policy_acl_dumpXXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  std::fflush(stdout);
  const int saved = dup(STDOUT_FILENO);
  dup2(fd, STDOUT_FILENO);
  rte_acl_list_dump();
  std::fflush(stdout);
  dup2(saved, STDOUT_FILENO);
  close(saved);
  close(fd);
  std::FILE* f = std::fopen(path, "r");
  ASSERT_TRUE(f);
  char line[256];
  int contexts = 0;
  while (std::fgets(line, sizeof(line), f)) {
    int n = -1;
    if (std::sscanf(line, " alg=%d", &n) == 1) {
      ++contexts;
      EXPECT_EQ(n, number) << line;
    }
  }
  std::fclose(f);
  unlink(path);
  EXPECT_GE(contexts, 1);
}

}  // namespace
}  // namespace mcgw::policy
