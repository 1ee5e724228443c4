// The rule classifier over rte_acl (see acl.hpp).
#include "dataplane/policy/acl.hpp"

#include <rte_acl.h>
#include <rte_errno.h>
#include <rte_memory.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstring>
#include <unordered_map>
#include <vector>

#include "dataplane/proto/ipv6.hpp"

namespace mcgw::policy {

static_assert(kMaxId == RTE_ACL_MAX_PRIORITY - 1, "priority = RTE_ACL_MAX_PRIORITY - id >= 1");

namespace {

bool carriesPorts(uint8_t protocol) {
  return protocol == 6 || protocol == 17 || protocol == kIpProtoSctp;
}

bool isExtensionHeader(uint8_t next) {
  return next == proto::kIpv6HopByHop || next == proto::kIpv6Routing ||
         next == proto::kIpv6Fragment || next == proto::kIpv6DestinationOptions;
}

// ---------------------------------------------------------------- reference

// The first `p.length` bits of `a` and of the prefix agree (whole bytes,
// then the leading bits of one more byte).
bool prefixMatches(const uint8_t* a, const Prefix& p) {
  const unsigned whole = p.length / 8;
  if (std::memcmp(a, p.address.data(), whole) != 0) {
    return false;
  }
  const unsigned bits = p.length % 8;
  if (bits == 0) {
    return true;
  }
  const uint8_t mask = static_cast<uint8_t>(0xff << (8 - bits));
  return (a[whole] & mask) == (p.address[whole] & mask);
}

template <typename Key>
uint32_t referenceClassify(std::span<const Rule> rules, const Key& key, bool v6) {
  const uint16_t sport = static_cast<uint16_t>(key.source_port[0] << 8 | key.source_port[1]);
  const uint16_t dport =
      static_cast<uint16_t>(key.destination_port[0] << 8 | key.destination_port[1]);
  const bool has_ports = key.flags & kKeyHasPorts;
  uint32_t best = kNoMatch;
  for (const Rule& r : rules) {
    if (r.v6 != v6 || r.id >= best) {
      continue;
    }
    if (!prefixMatches(key.source, r.source) || !prefixMatches(key.destination, r.destination)) {
      continue;
    }
    if (r.protocol && *r.protocol != key.protocol) {
      continue;
    }
    if (r.dscp && *r.dscp != key.dscp) {
      continue;
    }
    if (r.hasPorts()) {
      if (!has_ports || sport < r.source_ports.lo || sport > r.source_ports.hi ||
          dport < r.destination_ports.lo || dport > r.destination_ports.hi) {
        continue;
      }
    }
    best = r.id;
  }
  return best;
}

// ---------------------------------------------------------------- rte_acl

// Field indexes of the rules (and their defs).
enum : uint8_t { kProto4, kSrc4, kDst4, kSport4, kDport4, kMeta4, kFields4 };
enum : uint8_t {
  kProto6,
  kSrc6,
  kDst6 = kSrc6 + 4,
  kSport6 = kDst6 + 4,
  kDport6,
  kMeta6,
  kFields6
};
RTE_ACL_RULE_DEF(Acl4Rule, kFields4);
RTE_ACL_RULE_DEF(Acl6Rule, kFields6);

rte_acl_field_def fieldDef(uint8_t type, uint8_t size, uint8_t field, uint8_t input,
                           size_t offset) {
  rte_acl_field_def d{};
  d.type = type;
  d.size = size;
  d.field_index = field;
  d.input_index = input;
  d.offset = static_cast<uint32_t>(offset);
  return d;
}

rte_acl_config config4() {
  rte_acl_config c{};
  c.num_categories = 1;
  c.num_fields = kFields4;
  c.defs[kProto4] = fieldDef(RTE_ACL_FIELD_TYPE_BITMASK, 1, kProto4, 0, offsetof(Key4, protocol));
  c.defs[kSrc4] = fieldDef(RTE_ACL_FIELD_TYPE_MASK, 4, kSrc4, 1, offsetof(Key4, source));
  c.defs[kDst4] = fieldDef(RTE_ACL_FIELD_TYPE_MASK, 4, kDst4, 2, offsetof(Key4, destination));
  c.defs[kSport4] = fieldDef(RTE_ACL_FIELD_TYPE_RANGE, 2, kSport4, 3, offsetof(Key4, source_port));
  c.defs[kDport4] =
      fieldDef(RTE_ACL_FIELD_TYPE_RANGE, 2, kDport4, 3, offsetof(Key4, destination_port));
  c.defs[kMeta4] = fieldDef(RTE_ACL_FIELD_TYPE_BITMASK, 4, kMeta4, 4, offsetof(Key4, dscp));
  return c;
}

rte_acl_config config6() {
  rte_acl_config c{};
  c.num_categories = 1;
  c.num_fields = kFields6;
  c.defs[kProto6] = fieldDef(RTE_ACL_FIELD_TYPE_BITMASK, 1, kProto6, 0, offsetof(Key6, protocol));
  for (uint8_t w = 0; w < 4; ++w) {
    c.defs[kSrc6 + w] = fieldDef(RTE_ACL_FIELD_TYPE_MASK, 4, kSrc6 + w, 1 + w,
                                 offsetof(Key6, source) + 4 * size_t{w});
    c.defs[kDst6 + w] = fieldDef(RTE_ACL_FIELD_TYPE_MASK, 4, kDst6 + w, 5 + w,
                                 offsetof(Key6, destination) + 4 * size_t{w});
  }
  c.defs[kSport6] = fieldDef(RTE_ACL_FIELD_TYPE_RANGE, 2, kSport6, 9, offsetof(Key6, source_port));
  c.defs[kDport6] =
      fieldDef(RTE_ACL_FIELD_TYPE_RANGE, 2, kDport6, 9, offsetof(Key6, destination_port));
  c.defs[kMeta6] = fieldDef(RTE_ACL_FIELD_TYPE_BITMASK, 4, kMeta6, 10, offsetof(Key6, dscp));
  return c;
}

// Word w (0..3) of a prefix as a host-order value and its length in that
// word, host bits cleared.
void addressWord(const Prefix& p, unsigned w, rte_acl_field* f) {
  const uint8_t* a = p.address.data() + 4 * w;
  const int len = std::clamp(static_cast<int>(p.length) - 32 * static_cast<int>(w), 0, 32);
  uint32_t v = static_cast<uint32_t>(a[0]) << 24 | static_cast<uint32_t>(a[1]) << 16 |
               static_cast<uint32_t>(a[2]) << 8 | a[3];
  v &= len == 0 ? 0 : ~uint32_t{0} << (32 - len);
  f->value.u32 = v;
  f->mask_range.u32 = static_cast<uint32_t>(len);
}

template <typename AclRule>
void fillCommon(const Rule& r, AclRule* a, unsigned proto, unsigned sport, unsigned dport,
                unsigned meta) {
  a->data.category_mask = 1;
  a->data.priority = static_cast<int32_t>(RTE_ACL_MAX_PRIORITY - r.id);
  a->data.userdata = r.id + 1;
  a->field[proto].value.u8 = r.protocol.value_or(0);
  a->field[proto].mask_range.u8 = r.protocol ? 0xff : 0;
  a->field[sport].value.u16 = r.source_ports.lo;
  a->field[sport].mask_range.u16 = r.source_ports.hi;
  a->field[dport].value.u16 = r.destination_ports.lo;
  a->field[dport].mask_range.u16 = r.destination_ports.hi;
  // The meta word, as the key holds it: dscp, flags, 0, 0.
  uint32_t value = 0, mask = 0;
  if (r.dscp) {
    value |= uint32_t{*r.dscp} << 24;
    mask |= 0xff000000u;
  }
  if (r.hasPorts()) {
    value |= uint32_t{kKeyHasPorts} << 16;
    mask |= uint32_t{kKeyHasPorts} << 16;
  }
  a->field[meta].value.u32 = value;
  a->field[meta].mask_range.u32 = mask;
}

Acl4Rule aclRule4(const Rule& r) {
  Acl4Rule a{};
  fillCommon(r, &a, kProto4, kSport4, kDport4, kMeta4);
  addressWord(r.source, 0, &a.field[kSrc4]);
  addressWord(r.destination, 0, &a.field[kDst4]);
  return a;
}

Acl6Rule aclRule6(const Rule& r) {
  Acl6Rule a{};
  fillCommon(r, &a, kProto6, kSport6, kDport6, kMeta6);
  for (unsigned w = 0; w < 4; ++w) {
    addressWord(r.source, w, &a.field[kSrc6 + w]);
    addressWord(r.destination, w, &a.field[kDst6 + w]);
  }
  return a;
}

std::atomic<uint64_t> context_counter{0};

// A context name unique in the process, within RTE_ACL_NAMESIZE.
std::string contextName(const std::string& name, const char* family) {
  const std::string suffix = family + std::to_string(context_counter++);
  const size_t room = RTE_ACL_NAMESIZE - 1 - 4 - std::min<size_t>(suffix.size(), 27);
  return ("pol_" + name.substr(0, room) + suffix).substr(0, RTE_ACL_NAMESIZE - 1);
}

std::string errnoText(int e) {
  return std::string(rte_strerror(e < 0 ? -e : e));
}

// Creates, fills and builds one family's context.
template <typename AclRule>
Result<rte_acl_ctx*, std::string> buildContext(const std::string& name, const char* family,
                                               const std::vector<AclRule>& rules,
                                               const rte_acl_config& cfg) {
  const std::string ctx_name = contextName(name, family);
  rte_acl_param param{};
  param.name = ctx_name.c_str();
  param.socket_id = SOCKET_ID_ANY;
  param.rule_size = sizeof(AclRule);
  param.max_rule_num = static_cast<uint32_t>(rules.size());
  rte_acl_ctx* ctx = rte_acl_create(&param);
  if (ctx == nullptr) {
    return unexpected("policy " + name + ": cannot create the " + family +
                      " rte_acl context: " + errnoText(rte_errno));
  }
  int rc = rte_acl_add_rules(ctx, reinterpret_cast<const rte_acl_rule*>(rules.data()),
                             static_cast<uint32_t>(rules.size()));
  if (rc == 0) {
    rc = rte_acl_build(ctx, &cfg);
  }
  if (rc != 0) {
    rte_acl_free(ctx);
    return unexpected("policy " + name + ": rte_acl could not build the " +
                      std::to_string(rules.size()) + " " + family + " entries: " + errnoText(rc));
  }
  return ctx;
}

void classifyOn(const rte_acl_ctx* ctx, const uint8_t* const* keys, uint32_t* ids,
                unsigned n) noexcept {
  if (ctx == nullptr) {
    std::fill_n(ids, n, kNoMatch);
    return;
  }
  // rte_acl's answer is the userdata (id + 1), or 0: minus one is the id or
  // kNoMatch.  It only reads the keys (the array is not const in its API).
  rte_acl_classify(ctx, const_cast<const uint8_t**>(keys), ids, n, 1);
  for (unsigned i = 0; i < n; ++i) {
    ids[i] -= 1;
  }
}

}  // namespace

// ---------------------------------------------------------------- keys

bool fillKey4(const uint8_t* l3, size_t len, Key4* key) noexcept {
  std::memset(key, 0, sizeof(*key));
  if (len < 20) {
    return false;
  }
  const size_t hl = static_cast<size_t>(l3[0] & 0x0f) * 4;
  if (hl < 20 || hl > len) {
    return false;
  }
  key->protocol = l3[9];
  key->dscp = l3[1] >> 2;
  std::memcpy(key->source, l3 + 12, 4);
  std::memcpy(key->destination, l3 + 16, 4);
  const bool later_fragment = ((l3[6] & 0x1f) | l3[7]) != 0;
  if (carriesPorts(key->protocol) && !later_fragment && hl + 4 <= len) {
    std::memcpy(key->source_port, l3 + hl, 4);  // both ports
    key->flags = kKeyHasPorts;
  }
  return true;
}

bool fillKey6(const uint8_t* l3, size_t len, Key6* key) noexcept {
  std::memset(key, 0, sizeof(*key));
  if (len < 40) {
    return false;
  }
  key->dscp = static_cast<uint8_t>(((l3[0] & 0x0f) << 4 | l3[1] >> 4) >> 2);
  std::memcpy(key->source, l3 + 8, 16);
  std::memcpy(key->destination, l3 + 24, 16);
  uint8_t next = l3[6];
  size_t off = 40;
  bool ok = true;
  bool ports_possible = true;
  for (int n = 0; isExtensionHeader(next); ++n) {
    if (n == proto::kMaxIpv6ExtensionHeaders || off + 8 > len) {
      ok = false;
      break;
    }
    const uint8_t* e = l3 + off;
    const size_t hlen = next == proto::kIpv6Fragment ? 8 : (static_cast<size_t>(e[1]) + 1) * 8;
    if (off + hlen > len) {
      ok = false;
      break;
    }
    if (next == proto::kIpv6Fragment && ((e[2] << 8 | e[3]) & 0xfff8) != 0) {
      // A later fragment: what follows is data, not headers.
      next = e[0];
      ports_possible = false;
      break;
    }
    next = e[0];
    off += hlen;
  }
  key->protocol = next;
  if (ok && ports_possible && carriesPorts(next) && off + 4 <= len) {
    std::memcpy(key->source_port, l3 + off, 4);
    key->flags = kKeyHasPorts;
  }
  return ok;
}

// ---------------------------------------------------------------- rules

std::string checkRule(const Rule& r) {
  const unsigned max_len = r.v6 ? 128 : 32;
  if (r.source.length > max_len || r.destination.length > max_len) {
    return "prefix length " + std::to_string(std::max(r.source.length, r.destination.length)) +
           " is beyond /" + std::to_string(max_len);
  }
  for (const PortRange* p : {&r.source_ports, &r.destination_ports}) {
    if (p->lo > p->hi) {
      return "port range " + std::to_string(p->lo) + "-" + std::to_string(p->hi) +
             " is empty (lo > hi)";
    }
  }
  if (r.hasPorts() && r.protocol && !carriesPorts(*r.protocol)) {
    return "ports need protocol tcp, udp, sctp or any, not " + std::to_string(*r.protocol);
  }
  if (r.dscp && *r.dscp > 63) {
    return "DSCP " + std::to_string(*r.dscp) + " is above 63";
  }
  if (r.id > kMaxId) {
    return "rule id " + std::to_string(r.id) + " is above " + std::to_string(kMaxId);
  }
  return {};
}

uint32_t referenceClassify4(std::span<const Rule> rules, const Key4& key) {
  return referenceClassify(rules, key, false);
}

uint32_t referenceClassify6(std::span<const Rule> rules, const Key6& key) {
  return referenceClassify(rules, key, true);
}

// ---------------------------------------------------------------- Classifier

Result<std::unique_ptr<Classifier>, std::string> Classifier::build(const std::string& name,
                                                                   std::span<const Rule> rules) {
  const auto started = std::chrono::steady_clock::now();
  std::vector<Acl4Rule> v4;
  std::vector<Acl6Rule> v6;
  std::unordered_map<uint32_t, Action> actions;
  size_t n4 = 0, n6 = 0;
  for (const Rule& r : rules) {
    (r.v6 ? n6 : n4) += 1;
  }
  for (const auto& [count, family] : {std::pair{n4, "IPv4"}, std::pair{n6, "IPv6"}}) {
    if (count > kMaxEntries) {
      return unexpected("policy " + name + ": " + std::to_string(count) + " " + family +
                        " entries, at most " + std::to_string(kMaxEntries));
    }
  }
  v4.reserve(n4);
  v6.reserve(n6);
  for (size_t i = 0; i < rules.size(); ++i) {
    const Rule& r = rules[i];
    if (std::string why = checkRule(r); !why.empty()) {
      return unexpected("policy " + name + ": entry " + std::to_string(i) + " (rule " +
                        std::to_string(r.id) + "): " + why);
    }
    auto [it, added] = actions.emplace(r.id, r.action);
    if (!added && it->second != r.action) {
      return unexpected("policy " + name + ": entries of rule " + std::to_string(r.id) +
                        " have different actions");
    }
    if (r.v6) {
      v6.push_back(aclRule6(r));
    } else {
      v4.push_back(aclRule4(r));
    }
  }
  std::unique_ptr<Classifier> c(new Classifier());
  c->entries4_ = v4.size();
  c->entries6_ = v6.size();
  if (!v4.empty()) {
    auto ctx = buildContext(name, "_4_", v4, config4());
    if (!ctx) {
      return unexpected(ctx.error());
    }
    c->ctx4_ = *ctx;
  }
  if (!v6.empty()) {
    auto ctx = buildContext(name, "_6_", v6, config6());
    if (!ctx) {
      return unexpected(ctx.error());  // c frees the IPv4 context
    }
    c->ctx6_ = *ctx;
  }
  c->build_seconds_ =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return c;
}

Classifier::~Classifier() {
  rte_acl_free(ctx4_);
  rte_acl_free(ctx6_);
}

void Classifier::classify4(const uint8_t* const* keys, uint32_t* ids, unsigned n) const noexcept {
  classifyOn(ctx4_, keys, ids, n);
}

void Classifier::classify6(const uint8_t* const* keys, uint32_t* ids, unsigned n) const noexcept {
  classifyOn(ctx6_, keys, ids, n);
}

std::string Classifier::defaultAlgorithm() {
  // rte_acl's order of preference (acl_get_best_alg: per architecture, the
  // widest first, scalar last); a method the CPU, the binary or the EAL's
  // max SIMD bitwidth does not allow is refused by rte_acl_set_ctx_classify.
  static const std::pair<enum rte_acl_classify_alg, const char*> kOrder[] = {
      {RTE_ACL_CLASSIFY_AVX512X32, "avx512x32"}, {RTE_ACL_CLASSIFY_AVX512X16, "avx512x16"},
      {RTE_ACL_CLASSIFY_AVX2, "avx2"},           {RTE_ACL_CLASSIFY_SSE, "sse"},
      {RTE_ACL_CLASSIFY_NEON, "neon"},           {RTE_ACL_CLASSIFY_ALTIVEC, "altivec"},
      {RTE_ACL_CLASSIFY_SCALAR, "scalar"},
  };
  const std::string ctx_name = contextName("probe", "_p_");
  rte_acl_param param{};
  param.name = ctx_name.c_str();
  param.socket_id = SOCKET_ID_ANY;
  param.rule_size = sizeof(Acl4Rule);
  param.max_rule_num = 1;
  rte_acl_ctx* ctx = rte_acl_create(&param);
  if (ctx == nullptr) {
    return "unknown (" + errnoText(rte_errno) + ")";
  }
  std::string chosen = "unknown";
  for (const auto& [alg, label] : kOrder) {
    if (rte_acl_set_ctx_classify(ctx, alg) == 0) {
      chosen = label;
      break;
    }
  }
  rte_acl_free(ctx);
  return chosen;
}

}  // namespace mcgw::policy
