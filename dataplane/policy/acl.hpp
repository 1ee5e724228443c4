// Tenant policy rules in the fast path (issue 19, docs/policy.md): the rule
// classifier over DPDK's rte_acl.
//
// A config rule (ordered allow/deny list of a tenant) expands into one or
// more match entries (`Rule`), all with the config rule's index as `id` (a
// plan object is several prefixes).  Classification is first match: of the
// entries a packet matches, the one with the lowest id wins, as in a
// firewall's ordered list.
//
// Per packet, the fast path makes a key (fillKey4 / fillKey6) from the IP
// header, then a Classifier answers a burst of keys with the winning id or
// kNoMatch.  A Classifier is built once from all entries and is immutable
// afterwards (a new rule set is a new Classifier, published like tables).
//
// What a key holds, and what a rule can match:
//   - protocol: IPv4's Protocol; IPv6's upper-layer protocol after the
//     extension headers that parseIpv6 walks (hop-by-hop, routing, fragment,
//     destination options; at most proto::kMaxIpv6ExtensionHeaders), so a
//     deny rule on TCP cannot be bypassed by inserting a destination-options
//     header.  Anything else (AH, ESP, No Next Header, ...) is the protocol.
//     In an IPv6 non-first fragment it is the Fragment header's Next Header.
//   - source and destination address (prefix match; host bits of a rule's
//     prefix are ignored);
//   - source and destination ports: only for TCP, UDP and SCTP, when the
//     packet is not a non-first fragment (IPv4 offset != 0, IPv6 Fragment
//     offset != 0) and the L4 header's first 4 bytes (the ports) lie within
//     `len`.  Otherwise the key has no ports (zeros, kKeyHasPorts clear), and
//     a rule with a port range (anything narrower than 0..65535 in either
//     direction) never matches it;
//   - DSCP (the Traffic Class / TOS's upper 6 bits).
//
// rte_acl's input layout rules: the first field is one byte (the protocol);
// every later field belongs to a group of 4 consecutive bytes read as one
// input word ("input index").  Field sizes are 1, 2, 4 or 8.  So the DSCP
// cannot be a lone 1-byte field: it shares a 4-byte "meta" word with the
// flags byte (kKeyHasPorts) and two zero bytes, matched as one 32-bit
// bitmask field.  Key words are in network byte order (as rte_acl reads
// them); rule values are in host order (as rte_acl wants them).
//
//   Key4 (20 bytes)                       Key6 (44 bytes)
//   0  protocol        (input 0)          0  protocol             (input 0)
//   1  zero x3         (never read)       1  zero x3              (never read)
//   4  source      [4] (input 1)          4  source      [16] (inputs 1..4)
//   8  destination [4] (input 2)          20 destination [16] (inputs 5..8)
//   12 source port [2] \ (input 3)        36 source port  [2] \ (input 9)
//   14 dest. port  [2] /                  38 dest. port   [2] /
//   16 dscp, flags, 0, 0 (input 4)        40 dscp, flags, 0, 0 (input 10)
//
// No locks, allocation, syscalls or exceptions in fillKey* or classify*.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "config/result.hpp"

struct rte_acl_ctx;

namespace mcgw::policy {

inline constexpr uint8_t kIpProtoSctp = 132;

enum class Action : uint8_t { kAllow, kDeny };

// A prefix of the rule's family: the first `length` bits of `address`
// (IPv4 in the first 4 bytes).  Length 0: any address.
struct Prefix {
  std::array<uint8_t, 16> address{};
  uint8_t length = 0;
};

// An inclusive range of ports; 0..65535 is any port.
struct PortRange {
  uint16_t lo = 0;
  uint16_t hi = 65535;
  bool any() const { return lo == 0 && hi == 65535; }
};

// One match entry.
struct Rule {
  bool v6 = false;
  Prefix source;
  Prefix destination;
  std::optional<uint8_t> protocol;  // none: any protocol
  PortRange source_ports;           // a range other than any needs protocol
  PortRange destination_ports;      //   TCP, UDP, SCTP or any (see above)
  std::optional<uint8_t> dscp;      // none: any; else 0..63
  Action action = Action::kDeny;
  uint32_t id = 0;  // the config rule's index: lower wins; at most kMaxId

  bool hasPorts() const { return !source_ports.any() || !destination_ports.any(); }
};

// The key's flags byte.
inline constexpr uint8_t kKeyHasPorts = 0x01;

struct Key4 {
  uint8_t protocol;
  uint8_t zero[3];
  uint8_t source[4];
  uint8_t destination[4];
  uint8_t source_port[2];  // network byte order
  uint8_t destination_port[2];
  uint8_t dscp;
  uint8_t flags;  // kKeyHasPorts
  uint8_t zero2[2];
};
static_assert(sizeof(Key4) == 20);

struct Key6 {
  uint8_t protocol;
  uint8_t zero[3];
  uint8_t source[16];
  uint8_t destination[16];
  uint8_t source_port[2];
  uint8_t destination_port[2];
  uint8_t dscp;
  uint8_t flags;
  uint8_t zero2[2];
};
static_assert(sizeof(Key6) == 44);

// The key of an IPv4 packet: `l3` is the IP header and `len` the IP
// packet's length (total length; the caller has validated the header and
// the length).  False (key zeroed) only when the header does not fit in
// `len` (fewer than 20 bytes, or than its IHL says).
bool fillKey4(const uint8_t* l3, size_t len, Key4* key) noexcept;
// The key of an IPv6 packet (`len`: the fixed header and its payload).
// False when `len` is less than the fixed header (key zeroed), or when the
// extension-header chain is malformed (truncated within `len`, or more than
// proto::kMaxIpv6ExtensionHeaders): then the key is still filled, with the
// protocol where the walk stopped and no ports, and the caller should drop
// the packet rather than classify it.
bool fillKey6(const uint8_t* l3, size_t len, Key6* key) noexcept;

inline constexpr uint32_t kNoMatch = ~0u;
// Ids at most kMaxId: rte_acl priorities are 1..2^29-1 (priority = 2^29-1 -
// id, so a lower id wins) and its answer is id + 1 (0 is "no match").
inline constexpr uint32_t kMaxId = (uint32_t{1} << 29) - 2;
// Entries per family in one Classifier.
inline constexpr size_t kMaxEntries = 65536;

// Why a rule cannot be classified (empty: it can): prefix length beyond the
// family, a port range with lo > hi, ports with a protocol other than TCP,
// UDP, SCTP or any, DSCP above 63, an id above kMaxId.
std::string checkRule(const Rule& rule);

// The plain reference: a linear first-match scan (the lowest id among the
// entries of the key's family that match it), or kNoMatch.  Independent of
// rte_acl, for tests and the benchmark.
uint32_t referenceClassify4(std::span<const Rule> rules, const Key4& key);
uint32_t referenceClassify6(std::span<const Rule> rules, const Key6& key);

class Classifier {
 public:
  // Builds both families' rte_acl contexts (none for a family without
  // entries).  `name` (any text) goes into the contexts' names with a
  // process-wide counter, since rte_acl names are global.  Errors (a bad
  // rule, too many entries, entries of one id with different actions,
  // rte_acl failures) are messages; nothing is thrown.  Needs the EAL.
  static Result<std::unique_ptr<Classifier>, std::string> build(const std::string& name,
                                                                std::span<const Rule> rules);
  ~Classifier();
  Classifier(const Classifier&) = delete;
  Classifier& operator=(const Classifier&) = delete;

  // For each of n keys (Key4* / Key6* as bytes), the winning id or kNoMatch
  // into ids[i].  Any n; no allocation, lock or exception.  Concurrent calls
  // from several workers are fine (read-only).
  void classify4(const uint8_t* const* keys, uint32_t* ids, unsigned n) const noexcept;
  void classify6(const uint8_t* const* keys, uint32_t* ids, unsigned n) const noexcept;

  size_t entries4() const { return entries4_; }
  size_t entries6() const { return entries6_; }
  // Wall time of build() (both families), seconds.
  double buildSeconds() const { return build_seconds_; }

  // The classify method rte_acl picks by default (RTE_ACL_CLASSIFY_DEFAULT,
  // which every context of this class uses) on this CPU and EAL SIMD
  // bitwidth: "avx512x32", "avx512x16", "avx2", "sse", "scalar", ...
  // Found by asking rte_acl in its own order of preference.  Needs the EAL.
  static std::string defaultAlgorithm();

 private:
  Classifier() = default;
  rte_acl_ctx* ctx4_ = nullptr;
  rte_acl_ctx* ctx6_ = nullptr;
  size_t entries4_ = 0;
  size_t entries6_ = 0;
  double build_seconds_ = 0;
};

}  // namespace mcgw::policy
