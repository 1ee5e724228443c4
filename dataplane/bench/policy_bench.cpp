// Policy scenarios (see policy_bench.hpp).
//
// The rules imitate a tenant's policy on a private interconnect: sources
// mostly any or a VPC-sized prefix of 10.0.0.0/8, destinations /16, /24 or
// hosts in 10.0.0.0/8 and 172.16.0.0/12; TCP 45 %, UDP 35 %, any 20 %; a
// destination port (common services or a random high port) on most TCP/UDP
// rules, some ranges; DSCP on 10 %; one rule in ten is a plan object of 2-3
// prefixes (entries sharing an id); a tenth of the rules are IPv6 (built,
// not exercised by the IPv4 packets).  Packets: 60 % TCP, 40 % UDP, 64-byte
// frames; a third are made inside a random rule, the rest random in the
// same ranges with common ports.  Of those made inside a rule, half are
// inside one of the 1k set.
#include "dataplane/bench/policy_bench.hpp"

#include <rte_cycles.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <random>

#include "dataplane/policy/acl.hpp"
#include "dataplane/policy/verdict_cache.hpp"

namespace mcgw::bench {

namespace {

using policy::Classifier;
using policy::Rule;

constexpr unsigned kBurst = 32;
constexpr size_t kPackets = 4096;  // a power of two
constexpr size_t kFrame = 64;      // Ethernet + IPv4 + L4 + payload
constexpr size_t kEth = 14;

[[noreturn]] void die(const std::string& message) {
  std::fprintf(stderr, "mcgw-bench: FAILED: %s\n", message.c_str());
  std::fflush(stderr);
  std::_Exit(1);
}

struct Gen {
  std::mt19937_64 rng;
  uint32_t below(uint32_t n) { return static_cast<uint32_t>(rng() % n); }
  bool chance(unsigned percent) { return below(100) < percent; }

  policy::Prefix v4(uint32_t address, uint8_t length) {
    policy::Prefix p;
    for (int i = 0; i < 4; ++i) {
      p.address[i] = static_cast<uint8_t>(address >> (24 - 8 * i));
    }
    p.length = length;
    return p;
  }
  // An address of the tenant ranges: 10.0.0.0/8 (80 %) or 172.16.0.0/12.
  uint32_t address() {
    return chance(80) ? 0x0a000000u | below(1u << 24) : 0xac100000u | below(1u << 20);
  }
  uint16_t commonPort() {
    static const uint16_t kPorts[] = {22, 53, 80, 123, 443, 2049, 3306, 5432, 6379, 8080, 9092};
    return kPorts[below(std::size(kPorts))];
  }
  uint16_t port() { return chance(70) ? commonPort() : static_cast<uint16_t>(1024 + below(64512)); }

  Rule rule(uint32_t id) {
    Rule r;
    r.id = id;
    r.action = chance(60) ? policy::Action::kAllow : policy::Action::kDeny;
    if (!chance(40)) {
      static const uint8_t kLengths[] = {16, 20, 24, 24, 24, 32};
      r.source = v4(address(), kLengths[below(std::size(kLengths))]);
    }
    static const uint8_t kLengths[] = {16, 24, 24, 24, 28, 32, 32};
    r.destination = v4(address(), kLengths[below(std::size(kLengths))]);
    const uint32_t p = below(100);
    if (p < 45) {
      r.protocol = 6;
    } else if (p < 80) {
      r.protocol = 17;
    }
    if (r.protocol && chance(85)) {
      if (chance(85)) {
        r.destination_ports.lo = r.destination_ports.hi = port();
      } else {
        r.destination_ports.lo = static_cast<uint16_t>(1024 + below(60000));
        r.destination_ports.hi = static_cast<uint16_t>(r.destination_ports.lo + below(500));
      }
      if (chance(5)) {
        r.source_ports = {1024, 65535};
      }
    }
    if (chance(10)) {
      static const uint8_t kDscp[] = {0, 10, 18, 26, 34, 46};
      r.dscp = kDscp[below(std::size(kDscp))];
    }
    return r;
  }
};

std::vector<Rule> makeRules(Gen& g, size_t n) {
  std::vector<Rule> rules;
  for (uint32_t id = 0; id < n; ++id) {
    Rule r = g.rule(id);
    if (g.chance(10)) {
      r.v6 = true;
      r.source = {};
      r.destination.address = {0x20,
                               0x01,
                               0x0d,
                               0xb8,
                               static_cast<uint8_t>(g.below(256)),
                               static_cast<uint8_t>(g.below(256))};
      r.destination.length = 48;
    }
    rules.push_back(r);
    if (g.chance(10)) {  // a plan object: more prefixes, the same id
      for (uint32_t extra = 1 + g.below(2); extra > 0; --extra) {
        Rule more = r;
        if (!more.v6) {
          more.destination = g.v4(g.address(), 24);
        } else {
          more.destination.address[5] ^= 0x55;
        }
        rules.push_back(more);
      }
    }
  }
  return rules;
}

// One 64-byte Ethernet + IPv4 + TCP/UDP frame.
void makeFrame(uint8_t* f, uint32_t src, uint32_t dst, bool tcp, uint16_t sport, uint16_t dport,
               uint8_t dscp) {
  std::memset(f, 0, kFrame);
  f[12] = 0x08;
  uint8_t* ip = f + kEth;
  const size_t total = kFrame - kEth;
  ip[0] = 0x45;
  ip[1] = static_cast<uint8_t>(dscp << 2);
  ip[2] = static_cast<uint8_t>(total >> 8);
  ip[3] = static_cast<uint8_t>(total);
  ip[6] = 0x40;  // DF
  ip[8] = 64;
  ip[9] = tcp ? 6 : 17;
  for (int i = 0; i < 4; ++i) {
    ip[12 + i] = static_cast<uint8_t>(src >> (24 - 8 * i));
    ip[16 + i] = static_cast<uint8_t>(dst >> (24 - 8 * i));
  }
  uint8_t* l4 = ip + 20;
  l4[0] = static_cast<uint8_t>(sport >> 8);
  l4[1] = static_cast<uint8_t>(sport);
  l4[2] = static_cast<uint8_t>(dport >> 8);
  l4[3] = static_cast<uint8_t>(dport);
  if (tcp) {
    l4[12] = 0x50;
    l4[13] = 0x10;  // ACK
  } else {
    l4[5] = static_cast<uint8_t>(total - 20);
  }
}

uint32_t randomIn(Gen& g, const policy::Prefix& p) {
  uint32_t a = static_cast<uint32_t>(p.address[0]) << 24 | p.address[1] << 16 | p.address[2] << 8 |
               p.address[3];
  const uint32_t host = p.length == 32 ? 0 : (~0u >> p.length);
  return (a & ~host) | (static_cast<uint32_t>(g.rng()) & host);
}

std::vector<uint8_t> makePackets(Gen& g, const std::vector<Rule>& rules) {
  std::vector<uint8_t> buf(kPackets * kFrame);
  std::vector<const Rule*> v4, v4_1k;  // IPv4 rules: all, and those of the 1k set
  for (const Rule& r : rules) {
    if (!r.v6) {
      v4.push_back(&r);
      if (r.id < 1000) {
        v4_1k.push_back(&r);
      }
    }
  }
  for (size_t i = 0; i < kPackets; ++i) {
    bool tcp = g.chance(60);
    uint32_t src = g.address(), dst = g.address();
    uint16_t sport = static_cast<uint16_t>(1024 + g.below(64512)), dport = g.port();
    uint8_t dscp = g.chance(80) ? 0 : 46;
    if (!v4_1k.empty() && g.chance(33)) {
      const auto& from = g.chance(50) ? v4_1k : v4;
      const Rule& r = *from[g.below(static_cast<uint32_t>(from.size()))];
      src = randomIn(g, r.source);
      dst = randomIn(g, r.destination);
      if (r.protocol) {
        tcp = *r.protocol == 6;
      }
      sport = static_cast<uint16_t>(r.source_ports.lo +
                                    g.below(r.source_ports.hi - r.source_ports.lo + 1u));
      dport = static_cast<uint16_t>(r.destination_ports.lo +
                                    g.below(r.destination_ports.hi - r.destination_ports.lo + 1u));
      if (r.dscp) {
        dscp = *r.dscp;
      }
    }
    makeFrame(buf.data() + i * kFrame, src, dst, tcp, sport, dport, dscp);
  }
  return buf;
}

// How a scenario asks the classifier: directly, through a warm verdict
// cache (the same 4,096 flows again and again), or through a verdict cache
// that never hits (the policy's serial changes at every pass over the
// packets: each packet is a flow the cache has not seen).
enum class Mode : uint8_t { kDirect, kCached, kMiss };

struct Scenario {
  std::string name;
  size_t rules = 0;
  Mode mode = Mode::kDirect;
  std::vector<Rule> entries;
  std::shared_ptr<Classifier> classifier;
  std::vector<double> build_s;
  size_t hits = 0;  // of kPackets, by the reference
  std::vector<double> cycles;
  uint64_t lookups = 0, misses = 0;  // of the verdict cache, timed runs
};

struct ScenarioKind {
  const char* name;
  size_t rules;
  Mode mode;
};
constexpr ScenarioKind kKinds[] = {
    {"policy-0", 0, Mode::kDirect},
    {"policy-1k", 1000, Mode::kDirect},
    {"policy-10k", 10000, Mode::kDirect},
    {"policy-cache-1k", 1000, Mode::kCached},
    {"policy-cache-10k", 10000, Mode::kCached},
    {"policy-miss-1k", 1000, Mode::kMiss},
    {"policy-miss-10k", 10000, Mode::kMiss},
};

// Checks every packet's answer against the reference (bursts of 32).
void verify(Scenario& s, const std::vector<uint8_t>& packets) {
  std::array<policy::Key4, kBurst> keys;
  std::array<const uint8_t*, kBurst> ptrs;
  std::array<uint32_t, kBurst> ids;
  for (unsigned i = 0; i < kBurst; ++i) {
    ptrs[i] = reinterpret_cast<const uint8_t*>(&keys[i]);
  }
  s.hits = 0;
  for (size_t base = 0; base < kPackets; base += kBurst) {
    for (unsigned i = 0; i < kBurst; ++i) {
      if (!policy::fillKey4(packets.data() + (base + i) * kFrame + kEth, kFrame - kEth, &keys[i])) {
        die(s.name + ": fillKey4 refused packet " + std::to_string(base + i));
      }
    }
    s.classifier->classify4(ptrs.data(), ids.data(), kBurst);
    for (unsigned i = 0; i < kBurst; ++i) {
      const uint32_t want = policy::referenceClassify4(s.entries, keys[i]);
      s.hits += want != policy::kNoMatch;
      if (ids[i] != want) {
        die(s.name + ": packet " + std::to_string(base + i) + ": rte_acl " +
            std::to_string(ids[i]) + ", reference " + std::to_string(want));
      }
    }
  }
  if (s.mode == Mode::kDirect) {
    return;
  }
  // Through a small cache (collisions, evictions), two passes with one
  // serial (the second mostly hits), a third with another serial.
  policy::VerdictCache cache(1024, 64);
  for (unsigned pass = 0; pass < 3; ++pass) {
    for (size_t base = 0; base < kPackets; base += kBurst) {
      for (unsigned i = 0; i < kBurst; ++i) {
        policy::fillKey4(packets.data() + (base + i) * kFrame + kEth, kFrame - kEth, &keys[i]);
      }
      policy::classifyCached4(cache, pass < 2 ? 1 : 2, *s.classifier, ptrs.data(), ids.data(),
                              kBurst);
      for (unsigned i = 0; i < kBurst; ++i) {
        const uint32_t want = policy::referenceClassify4(s.entries, keys[i]);
        if (ids[i] != want) {
          die(s.name + ": pass " + std::to_string(pass) + ": packet " + std::to_string(base + i) +
              ": cached " + std::to_string(ids[i]) + ", reference " + std::to_string(want));
        }
      }
    }
  }
}

// Cycles per packet of fillKey4 (+ classify4 when there is a classifier,
// through a verdict cache of the default size in the cached modes) over
// `bursts` bursts of 32 packets, after a warm-up.
double measure(Scenario& s, const std::vector<uint8_t>& packets, uint64_t bursts, uint64_t* sink) {
  const Classifier* c = s.classifier.get();
  std::unique_ptr<policy::VerdictCache> cache;
  if (s.mode != Mode::kDirect) {
    cache = std::make_unique<policy::VerdictCache>();
  }
  uint64_t serial = 1, misses = 0;
  std::array<policy::Key4, kBurst> keys;
  std::array<const uint8_t*, kBurst> ptrs;
  std::array<uint32_t, kBurst> ids{};
  for (unsigned i = 0; i < kBurst; ++i) {
    ptrs[i] = reinterpret_cast<const uint8_t*>(&keys[i]);
  }
  const uint8_t* data = packets.data();
  auto run = [&](uint64_t n) {
    uint64_t acc = 0;
    size_t base = 0;
    for (uint64_t b = 0; b < n; ++b) {
      for (unsigned i = 0; i < kBurst; ++i) {
        policy::fillKey4(data + (base + i) * kFrame + kEth, kFrame - kEth, &keys[i]);
      }
      if (cache) {
        misses += policy::classifyCached4(*cache, serial, *c, ptrs.data(), ids.data(), kBurst);
      } else if (c) {
        c->classify4(ptrs.data(), ids.data(), kBurst);
      }
      for (unsigned i = 0; i < kBurst; ++i) {
        acc += ids[i] + keys[i].flags;  // what the pipeline would read next
      }
      base = (base + kBurst) & (kPackets - 1);
      if (base == 0 && s.mode == Mode::kMiss) {
        ++serial;  // a new policy: every key of the next pass is new to the cache
      }
    }
    return acc;
  };
  *sink += run(1024);  // warm-up: caches, branch predictors
  misses = 0;
  const uint64_t t0 = rte_rdtsc_precise();
  *sink += run(bursts);
  const uint64_t t1 = rte_rdtsc_precise();
  if (cache) {
    s.lookups += bursts * kBurst;
    s.misses += misses;
  }
  return static_cast<double>(t1 - t0) / static_cast<double>(bursts * kBurst);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

bool isPolicyScenario(const std::string& name) {
  return std::any_of(std::begin(kKinds), std::end(kKinds),
                     [&](const ScenarioKind& k) { return name == k.name; });
}

std::vector<std::string> policyScenarioNames() {
  std::vector<std::string> names;
  for (const auto& k : kKinds) {
    names.push_back(k.name);
  }
  return names;
}

void policyBench(const PolicyBenchOptions& o) {
  std::vector<Scenario> scenarios;
  // In kKinds' order: policy-0 first, the baseline of each round.
  for (const auto& k : kKinds) {
    if (std::find(o.scenarios.begin(), o.scenarios.end(), k.name) != o.scenarios.end()) {
      Scenario s;
      s.name = k.name;
      s.rules = k.rules;
      s.mode = k.mode;
      scenarios.push_back(std::move(s));
    }
  }
  Gen g{std::mt19937_64(o.seed)};
  const auto all_rules = makeRules(g, 10000);
  // The same packets for every scenario and selection (the 1k set is the
  // rules of ids below 1,000, a prefix of the 10k set).
  const auto packets = makePackets(g, all_rules);
  for (auto& s : scenarios) {
    if (s.rules == 0) {
      continue;
    }
    for (const Rule& r : all_rules) {
      if (r.id < s.rules) {
        s.entries.push_back(r);
      }
    }
    // The cached scenarios share the classifier of their rule count.
    for (const auto& other : scenarios) {
      if (other.rules == s.rules && other.classifier) {
        s.classifier = other.classifier;
        s.build_s = other.build_s;
        break;
      }
    }
    for (unsigned round = 0; s.build_s.size() < o.repeat; ++round) {
      auto c = Classifier::build(s.name, s.entries);
      if (!c) {
        die(s.name + ": " + c.error());
      }
      s.build_s.push_back((*c)->buildSeconds());
      s.classifier = std::move(*c);
    }
    verify(s, packets);
  }
  const uint64_t bursts = (o.packets + kBurst - 1) / kBurst;
  uint64_t sink = 0;
  for (unsigned round = 0; round < o.repeat; ++round) {
    for (auto& s : scenarios) {
      s.cycles.push_back(measure(s, packets, bursts, &sink));
    }
  }
  std::printf(
      "mcgw-bench policy: rte_acl classify method %s (RTE_ACL_CLASSIFY_DEFAULT), TSC %.3f GHz\n"
      "%zu IPv4 packets (60 %% TCP, 40 %% UDP), bursts of %u, %llu timed packets per run, "
      "%u rounds (scenarios interleaved); median and min..max of the rounds\n",
      Classifier::defaultAlgorithm().c_str(), static_cast<double>(rte_get_tsc_hz()) / 1e9, kPackets,
      kBurst, static_cast<unsigned long long>(bursts * kBurst), o.repeat);
  std::printf("%-16s %6s %8s %8s %18s %6s %7s %11s %15s %11s %15s\n", "scenario", "rules",
              "entries4", "entries6", "build s (min..max)", "hit %", "cache %", "cycles/pkt",
              "min..max", "+ policy-0", "+ per round");
  const Scenario* baseline = nullptr;
  for (const auto& s : scenarios) {
    const double med = median(s.cycles);
    if (s.rules == 0) {
      baseline = &s;
    }
    char build[64] = "-", hit[16] = "-", cached[16] = "-", above[16] = "-", rounds[32] = "-";
    if (!s.build_s.empty()) {
      std::snprintf(build, sizeof(build), "%.3f..%.3f",
                    *std::min_element(s.build_s.begin(), s.build_s.end()),
                    *std::max_element(s.build_s.begin(), s.build_s.end()));
      std::snprintf(hit, sizeof(hit), "%.1f",
                    100.0 * static_cast<double>(s.hits) / static_cast<double>(kPackets));
    }
    if (s.lookups != 0) {  // the verdict cache's hits in the timed runs
      std::snprintf(
          cached, sizeof(cached), "%.1f",
          100.0 * static_cast<double>(s.lookups - s.misses) / static_cast<double>(s.lookups));
    }
    if (baseline && s.rules != 0) {
      std::snprintf(above, sizeof(above), "%+.1f", med - median(baseline->cycles));
      std::vector<double> d;
      for (size_t r = 0; r < s.cycles.size(); ++r) {
        d.push_back(s.cycles[r] - baseline->cycles[r]);
      }
      std::snprintf(rounds, sizeof(rounds), "%+.1f..%+.1f", *std::min_element(d.begin(), d.end()),
                    *std::max_element(d.begin(), d.end()));
    }
    char range[32];
    std::snprintf(range, sizeof(range), "%.1f..%.1f",
                  *std::min_element(s.cycles.begin(), s.cycles.end()),
                  *std::max_element(s.cycles.begin(), s.cycles.end()));
    std::printf("%-16s %6zu %8zu %8zu %18s %6s %7s %11.1f %15s %11s %15s\n", s.name.c_str(),
                s.rules, s.classifier ? s.classifier->entries4() : 0,
                s.classifier ? s.classifier->entries6() : 0, build, hit, cached, med, range, above,
                rounds);
  }
  std::printf("(checksum %llu)\n", static_cast<unsigned long long>(sink & 0xffff));
}

}  // namespace mcgw::bench
