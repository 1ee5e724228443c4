#include "control/plan/allocator.hpp"

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "config/prefix_index.hpp"
#include "config/text.hpp"

namespace mcgw::plan {

using config::IpAddress;
using Number = UsedSpace::Number;

namespace {

constexpr Number kAllOnes = ~Number{0};

unsigned bitsOf(Family f) {
  return f == Family::V4 ? 32 : 128;
}
const char* familyName(Family f) {
  return f == Family::V4 ? "IPv4" : "IPv6";
}

Number toNumber(const IpAddress& a) {
  Number n = 0;
  const unsigned bytes = a.bits() / 8;
  for (unsigned i = 0; i < bytes; ++i) {
    n = (n << 8) | a.bytes[i];
  }
  return n;
}

IpAddress fromNumber(Family family, Number n) {
  IpAddress a;
  a.family = family;
  const unsigned bytes = bitsOf(family) / 8;
  for (unsigned i = bytes; i-- > 0;) {
    a.bytes[i] = static_cast<uint8_t>(n & 0xff);
    n >>= 8;
  }
  return a;
}

// The mask of a block's host bits: 2^host - 1 (all ones for a whole IPv6 space).
Number hostMask(unsigned host) {
  return host >= 128 ? kAllOnes : (Number{1} << host) - 1;
}

// The first and last address of a prefix, as numbers.
std::pair<Number, Number> rangeOf(const IpPrefix& p) {
  const Number first = toNumber(p.network().address);
  return {first, first | hostMask(p.address.bits() - p.length)};
}

std::string prefixList(const std::vector<IpPrefix>& prefixes) {
  std::string out;
  for (const auto& p : prefixes) {
    out += (out.empty() ? "" : ", ") + p.toString();
  }
  return out;
}

std::string describe(const config::VpcConfig& v) {
  return "VPC " + v.cloud + "/" + v.region + "/" + v.name + " (config file)";
}

std::string describe(const StoredVpc& v) {
  return "stored VPC " + text::escape(v.cloud) + "/" + text::escape(v.region) + "/" +
         text::escape(v.name);
}

}  // namespace

// ---- AddressCount ----

AddressCount AddressCount::power(unsigned exponent) {
  AddressCount c;
  if (exponent >= 128) {
    c.top_ = true;
  } else {
    c.low_ = Number{1} << exponent;
  }
  return c;
}

AddressCount AddressCount::span(const IpAddress& first, const IpAddress& last) {
  AddressCount c;
  c.low_ = toNumber(last) - toNumber(first) + 1;  // wraps to 0 for the whole IPv6 space
  c.top_ = c.low_ == 0;
  return c;
}

AddressCount& AddressCount::operator+=(const AddressCount& other) {
  const Number sum = low_ + other.low_;
  const bool carry = sum < low_;
  low_ = sum;
  // A plan never holds more than 2^128 addresses of a family: no carry out of top_.
  top_ = top_ || other.top_ || carry;
  return *this;
}

AddressCount& AddressCount::operator-=(const AddressCount& other) {
  const bool borrow = other.low_ > low_;
  low_ -= other.low_;
  top_ = top_ && !other.top_ && !borrow;
  return *this;
}

std::strong_ordering AddressCount::operator<=>(const AddressCount& other) const {
  if (top_ != other.top_) {
    return top_ ? std::strong_ordering::greater : std::strong_ordering::less;
  }
  return low_ == other.low_  ? std::strong_ordering::equal
         : low_ < other.low_ ? std::strong_ordering::less
                             : std::strong_ordering::greater;
}

std::string AddressCount::toString() const {
  if (top_) {
    return "340282366920938463463374607431768211456";  // 2^128
  }
  if (low_ == 0) {
    return "0";
  }
  std::string digits;
  for (Number n = low_; n != 0; n /= 10) {
    digits.push_back(static_cast<char>('0' + static_cast<int>(n % 10)));
  }
  std::reverse(digits.begin(), digits.end());
  return digits;
}

double AddressCount::log2() const {
  if (top_) {
    return 128.0;
  }
  if (low_ == 0) {
    return 0.0;
  }
  // Exact for powers of two; otherwise close enough for a glance.
  const auto hi = static_cast<uint64_t>(low_ >> 64);
  const auto lo = static_cast<uint64_t>(low_);
  return std::log2(static_cast<double>(hi) * 18446744073709551616.0 + static_cast<double>(lo));
}

std::optional<uint64_t> AddressCount::toUint64() const {
  if (top_ || (low_ >> 64) != 0) {
    return std::nullopt;
  }
  return static_cast<uint64_t>(low_);
}

// ---- UsedSpace ----

UsedSpace::UsedSpace(const config::Config& config, const Snapshot& snapshot,
                     const std::vector<IpPrefix>& reserved) {
  for (const auto& v : config.address_plan.vpcs) {
    for (const auto& p : v.prefixes) {
      add(p);
    }
  }
  // Both sides of a mapped range: the mapped one is the plan's, the real
  // one the legacy VPC's own addresses at its site (a block there would be
  // translated as the legacy VPC's).
  for (const auto& m : config.address_plan.mapped_ranges) {
    add(m.mapped);
    add(m.real);
  }
  for (const auto& v : snapshot.vpcs) {
    for (const auto& p : v.prefixes) {
      add(p);
    }
  }
  for (const auto& p : reserved) {
    add(p);
  }
}

void UsedSpace::add(const IpPrefix& prefix) {
  auto& used = of(prefix.address.family);
  auto [first, last] = rangeOf(prefix);
  auto it = used.upper_bound(first);
  if (it != used.begin()) {
    auto before = std::prev(it);  // starts at or before first
    if (before->second >= first || before->second + 1 == first) {
      first = before->first;
      last = std::max(last, before->second);
      it = used.erase(before);
    }
  }
  // Swallow every range that starts inside or right after [first, last].
  while (it != used.end() && (it->first <= last || (last != kAllOnes && it->first == last + 1))) {
    last = std::max(last, it->second);
    it = used.erase(it);
  }
  used.emplace(first, last);
}

std::optional<IpPrefix> UsedSpace::lowestFree(const IpPrefix& within, uint8_t length) const {
  const Family f = within.address.family;
  const unsigned bits = bitsOf(f);
  if (length > bits || length < within.length) {
    return std::nullopt;
  }
  const auto& used = of(f);
  const auto [first, last] = rangeOf(within);
  const Number mask = hostMask(bits - length);
  Number candidate = first;  // aligned: length is at least within's
  while (true) {
    const Number candidate_last = candidate | mask;
    // The used range that ends at or after candidate and starts first.
    auto it = used.upper_bound(candidate);
    if (it != used.begin() && std::prev(it)->second >= candidate) {
      --it;
    }
    if (it == used.end() || it->first > candidate_last) {
      return IpPrefix{fromNumber(f, candidate), length};
    }
    // Jump past that range to the next aligned block.
    if (it->second >= last) {
      return std::nullopt;
    }
    const Number next = it->second + 1;
    if (next > kAllOnes - mask) {
      return std::nullopt;  // no aligned block above it (the top of the IPv6 space)
    }
    candidate = (next + mask) & ~mask;
    if (candidate > last) {
      return std::nullopt;
    }
  }
}

void UsedSpace::forEachGap(const IpPrefix& within,
                           const std::function<bool(Number, Number)>& visit) const {
  const auto& used = of(within.address.family);
  const auto [first, last] = rangeOf(within);
  Number cursor = first;
  auto it = used.upper_bound(first);
  if (it != used.begin() && std::prev(it)->second >= first) {
    --it;  // starts before within and reaches into it
  }
  for (; it != used.end() && it->first <= last; ++it) {
    if (it->first > cursor && !visit(cursor, it->first - 1)) {
      return;
    }
    if (it->second >= last) {
      return;
    }
    cursor = std::max(cursor, it->second + 1);
  }
  visit(cursor, last);
}

void UsedSpace::forEachFreeBlock(const IpPrefix& within,
                                 const std::function<bool(const IpPrefix&)>& visit) const {
  const Family f = within.address.family;
  const unsigned bits = bitsOf(f);
  forEachGap(within, [&](Number first, Number last) {
    // The largest aligned block starting at first that ends by last, then
    // the next one after it: a range as the fewest CIDR blocks.
    while (true) {
      unsigned host = 0;
      while (host < bits) {
        const Number wider = hostMask(host + 1);
        if ((first & wider) != 0 || (first | wider) > last) {
          break;
        }
        ++host;
      }
      if (!visit(IpPrefix{fromNumber(f, first), static_cast<uint8_t>(bits - host)})) {
        return false;
      }
      const Number block_last = first | hostMask(host);
      if (block_last >= last) {
        return true;
      }
      first = block_last + 1;
    }
  });
}

AddressCount UsedSpace::usedIn(const IpPrefix& within) const {
  AddressCount used = AddressCount::power(within.address.bits() - within.length);
  const Family f = within.address.family;
  forEachGap(within, [&](Number first, Number last) {
    used -= AddressCount::span(fromNumber(f, first), fromNumber(f, last));
    return true;
  });
  return used;
}

std::vector<std::pair<IpAddress, IpAddress>> UsedSpace::ranges(Family family) const {
  std::vector<std::pair<IpAddress, IpAddress>> out;
  for (const auto& [first, last] : of(family)) {
    out.emplace_back(fromNumber(family, first), fromNumber(family, last));
  }
  return out;
}

// ---- allocation ----

Result<const config::PoolConfig*, std::string> choosePool(const config::Config& config,
                                                          const Request& request) {
  const auto& pools = config.address_plan.pools;
  auto hasFamily = [&](const config::PoolConfig& pool) {
    return std::any_of(pool.prefixes.begin(), pool.prefixes.end(),
                       [&](const IpPrefix& p) { return p.address.family == request.family; });
  };
  // A pool's clouds (address-plan.pools[].clouds) limit whom it serves.
  auto servesCloud = [&](const config::PoolConfig& pool) {
    return pool.clouds.empty() ||
           std::find(pool.clouds.begin(), pool.clouds.end(), request.cloud) != pool.clouds.end();
  };
  auto cloudList = [](const config::PoolConfig& pool) {
    std::string out;
    for (const auto& c : pool.clouds) {
      out += (out.empty() ? "" : ", ") + c;
    }
    return out;
  };
  if (!request.pool.empty()) {
    auto it = std::find_if(pools.begin(), pools.end(),
                           [&](const config::PoolConfig& p) { return p.name == request.pool; });
    if (it == pools.end()) {
      return unexpected("no pool named " + text::quote(request.pool) + " in the config");
    }
    if (!hasFamily(*it)) {
      return unexpected("pool " + it->name + " has no " + familyName(request.family) + " prefix (" +
                        prefixList(it->prefixes) + ")");
    }
    if (!servesCloud(*it)) {
      return unexpected("pool " + it->name + " does not serve cloud " + text::quote(request.cloud) +
                        " (its clouds: " + cloudList(*it) + ")");
    }
    return &*it;
  }
  for (const auto& pool : pools) {
    if (hasFamily(pool) && servesCloud(pool)) {
      return &pool;
    }
  }
  return unexpected(pools.empty() ? std::string("the config has no address pool")
                                  : std::string("no pool of the config has an ") +
                                        familyName(request.family) + " prefix for cloud " +
                                        text::quote(request.cloud));
}

namespace {

std::optional<std::string> checkRequestNames(const Request& r) {
  struct Field {
    const char* what;
    const std::string& value;
    bool optional;
  };
  for (const Field& f : {Field{"VPC name", r.vpc, false}, Field{"cloud", r.cloud, false},
                         Field{"region", r.region, false}, Field{"tenant", r.tenant, true},
                         Field{"site", r.site, true}, Field{"pool", r.pool, true}}) {
    if ((f.optional && f.value.empty()) || isValidName(f.value)) {
      continue;
    }
    return std::string(f.what) + " " + text::quote(f.value) +
           " is not a valid name: 1..63 letters, digits, '_', '.', '-' starting with a letter";
  }
  return std::nullopt;
}

const config::VpcConfig* findConfigVpc(const config::Config& config, const std::string& name) {
  for (const auto& v : config.address_plan.vpcs) {
    if (v.name == name) {
      return &v;
    }
  }
  return nullptr;
}

// What differs between a stored VPC and a repeated request for its name, or "".
std::string differences(const StoredVpc& v, const Request& r, uint8_t length) {
  std::vector<std::string> diffs;
  auto field = [&](const char* what, const std::string& has, const std::string& asked) {
    if (has != asked) {
      diffs.push_back(std::string(what) + " " + (has.empty() ? "(none)" : text::quote(has)) +
                      ", asked " + (asked.empty() ? "(none)" : text::quote(asked)));
    }
  };
  field("cloud", v.cloud, r.cloud);
  field("region", v.region, r.region);
  if (v.prefixes.size() != 1) {
    diffs.push_back("it has " + std::to_string(v.prefixes.size()) + " prefixes (" +
                    prefixList(v.prefixes) + "), an allocation has one");
  } else {
    const IpPrefix& p = v.prefixes[0];
    if (p.address.family != r.family) {
      diffs.push_back(std::string("family ") + familyName(p.address.family) + ", asked " +
                      familyName(r.family));
    } else if (p.length != length) {
      diffs.push_back("length /" + std::to_string(p.length) + " (" + p.toString() + "), asked /" +
                      std::to_string(length));
    }
  }
  if (!r.pool.empty()) {
    field("pool", v.pool, r.pool);
  }
  field("tenant", v.tenant, r.tenant);
  field("site", v.site, r.site);
  std::string out;
  for (const auto& d : diffs) {
    out += (out.empty() ? "" : "; ") + d;
  }
  return out;
}

}  // namespace

Result<Allocation, std::string> allocate(const config::Config& config, const Snapshot& snapshot,
                                         const Request& request,
                                         const std::vector<IpPrefix>& reserved) {
  if (auto bad = checkRequestNames(request)) {
    return unexpected(*bad);
  }
  if (const config::VpcConfig* v = findConfigVpc(config, request.vpc)) {
    return unexpected("VPC " + request.vpc + " is in the config file (" + v->cloud + "/" +
                      v->region + ", " + prefixList(v->prefixes) +
                      "); a VPC name is unique in the whole plan");
  }
  if (!request.tenant.empty() && !config.findTenant(request.tenant)) {
    return unexpected("tenant " + request.tenant + " is not in the config");
  }
  auto pool = choosePool(config, request);
  if (!pool) {
    return unexpected(pool.error());
  }
  const config::PoolConfig& from = **pool;
  const uint8_t length = request.length != 0 ? request.length : from.allocation_length;

  if (const StoredVpc* existing = snapshot.find(request.vpc)) {
    std::string diff = differences(*existing, request, length);
    if (!diff.empty()) {
      return unexpected("VPC " + request.vpc + " is already in the store with other parameters: " +
                        diff + "; release it first to allocate it anew");
    }
    return Allocation{*existing, false};
  }
  if (snapshot.vpcs.size() >= kMaxStoredVpcs) {
    return unexpected("the store holds " + std::to_string(snapshot.vpcs.size()) +
                      " VPCs, the most it may");
  }

  const unsigned bits = bitsOf(request.family);
  if (length > bits) {
    return unexpected("length /" + std::to_string(length) + " is longer than an " +
                      familyName(request.family) + " address (/" + std::to_string(bits) + ")");
  }
  std::vector<IpPrefix> candidates;  // the pool's prefixes a block of length fits in
  std::vector<IpPrefix> of_family;
  for (const auto& p : from.prefixes) {
    if (p.address.family == request.family) {
      of_family.push_back(p);
      if (p.length <= length) {
        candidates.push_back(p);
      }
    }
  }
  if (candidates.empty()) {
    return unexpected("length /" + std::to_string(length) + " is shorter than every " +
                      familyName(request.family) + " prefix of pool " + from.name + " (" +
                      prefixList(of_family) + ")");
  }

  const UsedSpace used(config, snapshot, reserved);
  for (const auto& p : candidates) {
    if (auto block = used.lowestFree(p, length)) {
      StoredVpc vpc{request.vpc, request.cloud,  request.region, {*block},
                    from.name,   request.tenant, request.site,   "allocate"};
      return Allocation{std::move(vpc), true};
    }
  }
  return unexpected("pool " + from.name + " is full: no free /" + std::to_string(length) + " in " +
                    prefixList(candidates) + " (mcgwctl plan show lists its free blocks)");
}

void insert(Snapshot& snapshot, StoredVpc vpc) {
  auto it =
      std::lower_bound(snapshot.vpcs.begin(), snapshot.vpcs.end(), vpc.name,
                       [](const StoredVpc& v, const std::string& name) { return v.name < name; });
  if (it != snapshot.vpcs.end() && it->name == vpc.name) {
    *it = std::move(vpc);
  } else {
    snapshot.vpcs.insert(it, std::move(vpc));
  }
}

Result<StoredVpc, std::string> release(Snapshot& snapshot, const std::string& name) {
  auto it = std::lower_bound(snapshot.vpcs.begin(), snapshot.vpcs.end(), name,
                             [](const StoredVpc& v, const std::string& n) { return v.name < n; });
  if (it == snapshot.vpcs.end() || it->name != name) {
    return unexpected("VPC " + text::quote(name) + " is not in the store");
  }
  StoredVpc gone = std::move(*it);
  snapshot.vpcs.erase(it);
  return gone;
}

Result<StoredVpc, std::string> release(const config::Config& config, Snapshot& snapshot,
                                       const std::string& name) {
  if (!snapshot.find(name)) {
    if (const config::VpcConfig* v = findConfigVpc(config, name)) {
      return unexpected("VPC " + name + " is in the config file (" + v->cloud + "/" + v->region +
                        "), not in the store: remove it from the config file instead");
    }
  }
  return release(snapshot, name);
}

// ---- usage ----

std::vector<PoolUsage> usage(const config::Config& config, const Snapshot& snapshot,
                             const std::vector<IpPrefix>& reserved, size_t max_blocks) {
  const UsedSpace used(config, snapshot, reserved);
  std::vector<PoolUsage> out;
  for (const auto& pool : config.address_plan.pools) {
    for (Family f : {Family::V4, Family::V6}) {
      PoolUsage u;
      u.pool = pool.name;
      u.family = f;
      for (const auto& p : pool.prefixes) {
        if (p.address.family == f) {
          u.prefixes.push_back(p.network());
        }
      }
      if (u.prefixes.empty()) {
        continue;
      }
      for (const auto& p : u.prefixes) {
        u.size += AddressCount::power(bitsOf(f) - p.length);
        used.forEachFreeBlock(p, [&](const IpPrefix& block) {
          u.free += AddressCount::power(bitsOf(f) - block.length);
          ++u.free_block_count;
          if (u.free_blocks.size() < max_blocks) {
            u.free_blocks.push_back(block);
          }
          if (!u.largest_free || block.length < u.largest_free->length ||
              (block.length == u.largest_free->length && block.address < u.largest_free->address)) {
            u.largest_free = block;
          }
          return true;
        });
      }
      u.used = u.size;
      u.used -= u.free;
      out.push_back(std::move(u));
    }
  }
  return out;
}

// ---- checks ----

std::vector<PlanProblem> checkSnapshot(const config::Config& config, const Snapshot& snapshot,
                                       const std::vector<IpPrefix>& reserved) {
  using Severity = PlanProblem::Severity;
  std::vector<PlanProblem> problems;
  auto report = [&](Severity s, const StoredVpc& v, std::string message) {
    problems.push_back({s, v.name, describe(v) + ": " + std::move(message)});
  };

  struct Owner {
    IpPrefix prefix;
    std::string what;
  };
  // The config's ranges: a loaded config's are disjoint (its own checks).
  config::DisjointPrefixes<Owner> fixed;
  std::unordered_map<std::string, const config::VpcConfig*> config_names;
  for (const auto& v : config.address_plan.vpcs) {
    config_names.emplace(v.name, &v);
    for (const auto& p : v.prefixes) {
      if (!fixed.overlapping(p.network())) {
        fixed.add(p.network(), {p.network(), describe(v)});
      }
    }
  }
  for (const auto& m : config.address_plan.mapped_ranges) {
    if (!fixed.overlapping(m.mapped.network())) {
      fixed.add(m.mapped.network(),
                {m.mapped.network(), "mapped range " + m.name + " (config file)"});
    }
    if (!fixed.overlapping(m.real.network())) {
      fixed.add(m.real.network(),
                {m.real.network(), "the real range of mapped range " + m.name + " (config file)"});
    }
  }
  // Reserved ranges may nest: two prefixes either nest or are disjoint, so
  // sorted by first address then shortest first, a nested one follows the
  // one holding it and is skipped.
  std::vector<IpPrefix> reserved_sorted;
  for (const auto& p : reserved) {
    reserved_sorted.push_back(p.network());
  }
  std::sort(reserved_sorted.begin(), reserved_sorted.end(),
            [](const IpPrefix& a, const IpPrefix& b) {
              return a.address != b.address ? a.address < b.address : a.length < b.length;
            });
  config::DisjointPrefixes<Owner> reserved_index;
  for (const auto& p : reserved_sorted) {
    if (!reserved_index.overlapping(p)) {
      reserved_index.add(p, {p, "reserved range " + p.toString()});
    }
  }
  config::DisjointPrefixes<Owner> pools;
  for (const auto& pool : config.address_plan.pools) {
    for (const auto& p : pool.prefixes) {
      if (!pools.overlapping(p.network())) {
        pools.add(p.network(), {p.network(), pool.name});
      }
    }
  }

  config::DisjointPrefixes<Owner> stored;
  const StoredVpc* previous = nullptr;
  for (const auto& v : snapshot.vpcs) {
    if (!isValidName(v.name)) {
      report(Severity::kError, v, "the name is not valid");
    }
    if (!isValidName(v.cloud) || !isValidName(v.region)) {
      report(Severity::kError, v, "the cloud or region is not a valid name");
    }
    if (previous && previous->name == v.name) {
      report(Severity::kError, v, "the store holds this name twice");
    }
    previous = &v;
    if (auto it = config_names.find(v.name); it != config_names.end()) {
      report(Severity::kError, v,
             "its name is that of " + describe(*it->second) +
                 "; a VPC name is unique in the whole plan");
    }
    if (v.prefixes.empty() || v.prefixes.size() > kMaxPrefixesPerVpc) {
      report(Severity::kError, v,
             std::to_string(v.prefixes.size()) + " prefixes; a VPC has 1.." +
                 std::to_string(kMaxPrefixesPerVpc));
    }
    if (!v.tenant.empty() && !config.findTenant(v.tenant)) {
      report(Severity::kWarning, v, "tenant " + text::quote(v.tenant) + " is not in the config");
    }
    for (const auto& raw : v.prefixes) {
      if (raw.hasHostBits()) {
        report(Severity::kError, v,
               raw.toString() + " has host bits set (" + raw.network().toString() + ")");
      }
      const IpPrefix p = raw.network();
      bool clash = false;
      for (const auto* index : {&fixed, &reserved_index, &stored}) {
        if (const Owner* o = index->overlapping(p)) {
          report(Severity::kError, v,
                 p.toString() + " overlaps " + o->prefix.toString() + " of " + o->what);
          clash = true;
        }
      }
      if (!clash) {
        stored.add(p, {p, describe(v)});
      }
      const Owner* pool = pools.overlapping(p);
      if (!pool || pool->prefix.length > p.length) {
        report(Severity::kWarning, v, p.toString() + " is outside every pool");
      }
    }
  }
  return problems;
}

config::Config merged(const config::Config& config, const Snapshot& snapshot) {
  config::Config out = config;
  out.address_plan.vpcs.reserve(out.address_plan.vpcs.size() + snapshot.vpcs.size());
  for (const auto& v : snapshot.vpcs) {
    out.address_plan.vpcs.push_back({v.cloud, v.region, v.name, v.prefixes, v.tenant, v.site});
  }
  return out;
}

}  // namespace mcgw::plan
