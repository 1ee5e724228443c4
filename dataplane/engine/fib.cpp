// TenantFib: per family a range array (small) or rte_fib / rte_fib6 held
// twice and updated left-right (see fib.hpp and docs/architecture.md).
#include "dataplane/engine/fib.hpp"

#include <rte_errno.h>
#include <rte_memory.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <map>
#include <set>

namespace mcgw::engine {

namespace {

using Map = std::map<config::IpPrefix, uint32_t>;
using U128 = unsigned __int128;

// What one table copy is built for.
struct Shape {
  bool large = false;   // DIR-24-8 / TRIE, else the range array
  uint32_t routes = 0;  // RIB capacity (rte_fib gives it twice as many nodes)
  uint32_t tbl8 = 0;    // tbl8 groups (large only)
  bool operator==(const Shape&) const = default;
};

constexpr uint32_t kMinRoutes = 64;
constexpr uint32_t kMinTbl8 = 64;
// Capacity above the count a table is built with, so that adds do not
// rebuild it at once: a quarter more (RIB nodes are most of the memory).
uint32_t withHeadroom(size_t n, uint32_t floor) {
  const size_t v = std::max<size_t>(n + n / 4, floor);
  return static_cast<uint32_t>(std::min<size_t>(v, (1u << 30)));
}

std::string uniqueName(const char* kind) {
  // rte_rib names its node mempool "MP_" + name and the memzone under it
  // adds "MP_" again: 32 bytes in all, so the names stay short.
  static std::atomic<uint32_t> serial{0};
  return std::string(kind) + std::to_string(serial++);
}

// The two families behind one template.  kNodeBytes is what one RIB node
// takes in the rte_mempool rte_rib/rte_rib6 allocate, header and padding
// included: 205-207 bytes for both families with DPDK 22.11 on x86-64,
// measured with rte_malloc_get_socket_stats around rte_fib_create.
struct V4 {
  using Fib = rte_fib;
  using View = TenantFib::Table4;
  using Key = uint32_t;
  static constexpr U128 kMax = 0xffffffffu;
  static U128 start(const config::IpPrefix& p) { return host(p); }
  static Key key(U128 v) { return static_cast<Key>(v); }
  static constexpr size_t kNodeBytes = 206;
  static constexpr size_t kEntryBytes = 4;
  static Fib* create(const Shape& s) {
    rte_fib_conf c{};
    c.type = RTE_FIB_DIR24_8;
    c.default_nh = (1u << 31) - 1;
    c.max_routes = static_cast<int>(s.routes);
    c.dir24_8.nh_sz = RTE_FIB_DIR24_8_4B;
    c.dir24_8.num_tbl8 = s.tbl8;
    return rte_fib_create(uniqueName("f4_").c_str(), SOCKET_ID_ANY, &c);
  }
  static void destroy(Fib* f) { rte_fib_free(f); }
  static uint32_t host(const config::IpPrefix& p) {
    const auto& b = p.address.bytes;
    return static_cast<uint32_t>(b[0]) << 24 | b[1] << 16 | b[2] << 8 | b[3];
  }
  static int add(Fib* f, const config::IpPrefix& p, uint32_t nh) {
    return rte_fib_add(f, host(p), p.length, nh);
  }
  static int remove(Fib* f, const config::IpPrefix& p) {
    return rte_fib_delete(f, host(p), p.length);
  }
  static size_t tableBytes(const Shape& s) {
    // tbl24 + tbl8 groups (+1 spare DPDK allocates) + the free-group bitmap.
    return (size_t{1} << 24) * kEntryBytes + (size_t{s.tbl8} + 1) * 256 * kEntryBytes + s.tbl8 / 8;
  }
  // tbl8 groups a DIR-24-8 table needs: one per /24 holding a longer route.
  static size_t tbl8Needed(const Map& m) {
    size_t n = 0;
    uint32_t last = 0;
    bool any = false;
    for (const auto& [p, nh] : m) {
      if (p.length > 24) {
        const uint32_t k = host(p) >> 8;
        if (!any || k != last) {
          ++n;
        }
        any = true;
        last = k;
      }
    }
    return n;
  }
};

struct V6 {
  using Fib = rte_fib6;
  using View = TenantFib::Table6;
  using Key = TenantFib::Key6;
  static constexpr U128 kMax = ~U128{0};
  static U128 start(const config::IpPrefix& p) {
    U128 v = 0;
    for (uint8_t b : p.address.bytes) {
      v = v << 8 | b;
    }
    return v;
  }
  static Key key(U128 v) { return {static_cast<uint64_t>(v >> 64), static_cast<uint64_t>(v)}; }
  static constexpr size_t kNodeBytes = 206;
  static constexpr size_t kEntryBytes = 4;
  static Fib* create(const Shape& s) {
    rte_fib6_conf c{};
    c.type = RTE_FIB6_TRIE;
    c.default_nh = (1u << 31) - 1;
    c.max_routes = static_cast<int>(s.routes);
    c.trie.nh_sz = RTE_FIB6_TRIE_4B;
    c.trie.num_tbl8 = s.tbl8;
    return rte_fib6_create(uniqueName("f6_").c_str(), SOCKET_ID_ANY, &c);
  }
  static void destroy(Fib* f) { rte_fib6_free(f); }
  static int add(Fib* f, const config::IpPrefix& p, uint32_t nh) {
    return rte_fib6_add(f, p.address.bytes.data(), p.length, nh);
  }
  static int remove(Fib* f, const config::IpPrefix& p) {
    return rte_fib6_delete(f, p.address.bytes.data(), p.length);
  }
  static size_t tableBytes(const Shape& s) {
    // tbl24 + tbl8 groups (+1 spare) + the free-group stack.
    return (size_t{1} << 24) * kEntryBytes + (size_t{s.tbl8} + 1) * 256 * kEntryBytes +
           size_t{s.tbl8} * 4;
  }
  // tbl8 groups a TRIE needs.  DPDK's TRIE refuses an add (ENOSPC) on what
  // it reserves, not on the groups it uses: a route longer than /24 that is
  // the first inside its block (the route rounded down to a byte) reserves
  // one group per byte between its nearest covering route (or /24) and its
  // own length.  This follows that for routes added in map order (covering
  // routes first), counting a block once per rounded length, which can only
  // count more than DPDK does.
  static size_t tbl8Needed(const Map& m) {
    size_t n = 0;
    std::vector<config::IpPrefix> covering;  // the chain of routes holding the current one
    std::set<std::pair<std::array<uint8_t, 16>, uint8_t>> blocks;
    for (const auto& [p, nh] : m) {
      while (!covering.empty() && !contains(covering.back(), p)) {
        covering.pop_back();
      }
      if (p.length > 24) {
        const uint8_t floor8 = static_cast<uint8_t>(p.length & ~7u);
        config::IpPrefix block = p;
        block.length = floor8;
        if (blocks.insert({block.network().address.bytes, floor8}).second) {
          const unsigned parent =
              covering.empty() ? 24u : std::max(24u, unsigned{covering.back().length});
          const unsigned levels = ((p.length + 7u) / 8) - ((parent + 7u) / 8);
          n += levels;
        }
      }
      covering.push_back(p);
    }
    return n;
  }
  static bool contains(const config::IpPrefix& outer, const config::IpPrefix& inner) {
    if (outer.length > inner.length) {
      return false;
    }
    config::IpPrefix cut = inner;
    cut.length = outer.length;
    return cut.network().address == outer.address;
  }
};

template <class F>
size_t copyBytes(const Shape& s) {
  // rte_fib asks rte_rib for two nodes per route (a route may split an edge).
  return 2 * size_t{s.routes} * F::kNodeBytes + F::tableBytes(s);
}

// The routes as ranges of addresses, each with the next hop of the longest
// prefix covering it: a start wherever the answer changes.  The map is in
// address order with covering prefixes first, so one pass with the stack
// of prefixes holding the current address does it.
template <class F>
void buildRanges(const Map& m, std::vector<typename F::Key>& starts, std::vector<uint32_t>& hops) {
  struct Open {
    U128 end;
    uint32_t hop;
  };
  std::vector<Open> open{{F::kMax, TenantFib::kNoRoute}};
  std::vector<std::pair<U128, uint32_t>> out{{0, TenantFib::kNoRoute}};
  auto emit = [&](U128 at, uint32_t hop) {
    if (out.back().first == at) {
      out.back().second = hop;  // a longer prefix starts at the same address
    } else if (out.back().second != hop) {
      out.push_back({at, hop});
    }
  };
  for (const auto& [p, nh] : m) {
    const unsigned host_bits = p.address.bits() - p.length;
    const U128 first = F::start(p);
    const U128 last = first | (host_bits >= 128 ? ~U128{0} : (U128{1} << host_bits) - 1);
    while (open.back().end < first) {
      const U128 end = open.back().end;
      open.pop_back();
      emit(end + 1, open.back().hop);
    }
    emit(first, nh);
    open.push_back({last, nh});
  }
  while (open.size() > 1) {
    const U128 end = open.back().end;
    open.pop_back();
    if (end != F::kMax) {
      emit(end + 1, open.back().hop);
    }
  }
  starts.clear();
  hops.clear();
  for (const auto& [at, hop] : out) {
    starts.push_back(F::key(at));
    hops.push_back(hop);
  }
}

std::string errorText(int rc) {
  return rte_strerror(rc < 0 ? -rc : rc);
}

// One family's tables and the writer's record of its routes.
template <class F>
struct Family {
  // One copy of the family's table: the DPDK table (large) or the range
  // array; `view` is what find4/find6 read.
  struct Copy {
    typename F::View view;
    typename F::Fib* fib = nullptr;
    std::vector<typename F::Key> starts;
    std::vector<uint32_t> hops;
    Shape shape;
    ~Copy() {
      if (fib) {
        F::destroy(fib);
      }
    }
    size_t bytes() const {
      return shape.large ? copyBytes<F>(shape)
                         : starts.capacity() * sizeof(typename F::Key) + hops.capacity() * 4;
    }
  };
  // A change to make, with what the route was before it.
  struct Op {
    config::IpPrefix prefix;
    std::optional<uint32_t> now;
  };

  const char* label;
  std::atomic<const typename F::View*>* published;
  const TenantFib::Sizing* sizing;
  Map routes;
  std::unique_ptr<Copy> active;  // what `published` points to
  // Large form: the other copy, nobody reads it; null when it has to be
  // rebuilt.  Always null in the array form (each apply builds a new array).
  std::unique_ptr<Copy> standby;
  size_t builds = 0;  // DPDK table copies built since create()

  // The shape for n routes given the form the family has now (the array
  // becomes a table above small_routes and comes back below half of it).
  Shape shapeFor(const Map& m, bool large_now) const {
    const size_t n = m.size();
    Shape s;
    s.large = large_now ? n >= sizing->small_routes / 2 && n > 0 : n > sizing->small_routes;
    s.routes = withHeadroom(n, kMinRoutes);
    if (s.large) {
      s.tbl8 = withHeadroom(F::tbl8Needed(m), kMinTbl8);
    }
    return s;
  }

  // Whether the copies can take the family from its current size to n
  // routes in place: same form, room for them, not four times too big.
  bool fitsInPlace(size_t n) const {
    if (!active || !standby || !active->shape.large) {
      return false;
    }
    const Shape& s = active->shape;
    const bool large = s.large ? n >= sizing->small_routes / 2 && n > 0 : n > sizing->small_routes;
    return large == s.large && n <= s.routes && (s.routes <= kMinRoutes * 2 || n * 4 >= s.routes);
  }

  // Builds a copy holding m; the tbl8 groups double until they suffice.
  Result<std::unique_ptr<Copy>, std::string> build(const Map& m, Shape s) {
    if (!s.large) {
      auto c = std::make_unique<Copy>();
      c->shape = s;
      buildRanges<F>(m, c->starts, c->hops);
      c->view.starts = c->starts.data();
      c->view.hops = c->hops.data();
      c->view.n = static_cast<uint32_t>(c->starts.size());
      return c;
    }
    for (;;) {
      const size_t bytes = copyBytes<F>(s);
      if (bytes > sizing->max_copy_bytes) {
        return unexpected(std::string("out of memory: the ") + label + " table would take " +
                          std::to_string(bytes >> 20) + " MiB");
      }
      auto c = std::make_unique<Copy>();
      ++builds;
      c->shape = s;
      c->fib = F::create(s);
      c->view.fib = c->fib;
      if (!c->fib) {
        return unexpected(std::string("cannot create the ") + label + " table (" +
                          std::to_string(bytes >> 20) + " MiB): " + errorText(rte_errno));
      }
      int rc = 0;
      config::IpPrefix failed;
      for (const auto& [p, nh] : m) {
        rc = F::add(c->fib, p, nh);
        if (rc < 0) {
          failed = p;
          break;
        }
      }
      if (rc == -ENOSPC && s.large) {
        s.tbl8 = s.tbl8 * 2;
        continue;
      }
      if (rc < 0) {
        return unexpected("cannot add " + failed.toString() + ": " + errorText(rc));
      }
      return c;
    }
  }

  // Makes ops on one copy; false (the copy half changed) when one fails.
  static bool change(Copy& c, const std::vector<Op>& ops) {
    for (const auto& op : ops) {
      const int rc = op.now ? F::add(c.fib, op.prefix, *op.now) : F::remove(c.fib, op.prefix);
      if (rc < 0 && rc != -ENOENT) {
        return false;
      }
    }
    return true;
  }

  size_t bytes() const { return (active ? active->bytes() : 0) + (standby ? standby->bytes() : 0); }
};

}  // namespace

struct TenantFib::Impl {
  std::string name;
  Sizing sizing;
  Family<V4> v4;
  Family<V6> v6;
};

TenantFib::TenantFib(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

TenantFib::~TenantFib() = default;

namespace {

template <class F>
Result<bool, std::string> buildBoth(Family<F>& f, const Map& m) {
  const Shape s = f.shapeFor(m, m.size() > f.sizing->small_routes);
  auto a = f.build(m, s);
  if (!a) {
    return unexpected(a.error());
  }
  f.active = std::move(*a);
  if (f.active->shape.large) {
    auto b = f.build(m, f.active->shape);
    if (!b) {
      return unexpected(b.error());
    }
    f.standby = std::move(*b);
  }
  f.published->store(&f.active->view, std::memory_order_release);
  f.routes = m;
  return true;
}

}  // namespace

Result<std::unique_ptr<TenantFib>, std::string> TenantFib::create(
    const std::string& name, const std::vector<Route>& routes) {
  return create(name, routes, Sizing{});
}

Result<std::unique_ptr<TenantFib>, std::string> TenantFib::create(const std::string& name,
                                                                  const std::vector<Route>& routes,
                                                                  const Sizing& sizing) {
  auto impl = std::make_unique<Impl>();
  impl->name = name;
  impl->sizing = sizing;
  Map m4, m6;
  for (const auto& r : routes) {
    if (r.next_hop > kMaxNextHop) {
      return unexpected("FIB " + name + ": next hop " + std::to_string(r.next_hop) + " of " +
                        r.prefix.toString() + " is too large");
    }
    if (r.prefix.length > (r.prefix.address.family == config::Family::V4 ? 32 : 128)) {
      return unexpected("FIB " + name + ": prefix length " + std::to_string(r.prefix.length) +
                        " is beyond its family's");
    }
    (r.prefix.address.family == config::Family::V4 ? m4 : m6)[r.prefix.network()] = r.next_hop;
  }
  std::unique_ptr<TenantFib> fib(new TenantFib(std::move(impl)));
  Impl& i = *fib->impl_;
  i.v4.label = "IPv4";
  i.v4.published = &fib->table4_;
  i.v4.sizing = &i.sizing;
  i.v6.label = "IPv6";
  i.v6.published = &fib->table6_;
  i.v6.sizing = &i.sizing;
  if (auto r = buildBoth(i.v4, m4); !r) {
    return unexpected("FIB " + name + ": " + r.error());
  }
  if (auto r = buildBoth(i.v6, m6); !r) {
    return unexpected("FIB " + name + ": " + r.error());
  }
  i.v4.builds = 0;
  i.v6.builds = 0;
  return fib;
}

namespace {

// The ops a batch makes on one family, with the route count after it.
// Changes that change nothing (withdrawing an absent prefix, re-adding the
// same next hop) are left out.
template <class F>
size_t planOps(const Family<F>& f, const std::vector<const TenantFib::Change*>& changes,
               std::vector<typename Family<F>::Op>& ops) {
  std::map<config::IpPrefix, std::optional<uint32_t>> after;
  size_t count = f.routes.size();
  for (const auto* c : changes) {
    const config::IpPrefix p = c->prefix.network();
    std::optional<uint32_t> before;
    if (auto it = after.find(p); it != after.end()) {
      before = it->second;
    } else if (auto r = f.routes.find(p); r != f.routes.end()) {
      before = r->second;
    }
    const std::optional<uint32_t> now =
        c->withdraw ? std::nullopt : std::optional<uint32_t>(c->next_hop);
    if (now == before) {
      continue;
    }
    if (now && !before) {
      ++count;
    } else if (!now && before) {
      --count;
    }
    after[p] = now;
    ops.push_back({p, now});
  }
  return count;
}

template <class F>
void commitOps(Map& routes, const std::vector<typename Family<F>::Op>& ops) {
  for (const auto& op : ops) {
    if (op.now) {
      routes[op.prefix] = *op.now;
    } else {
      routes.erase(op.prefix);
    }
  }
}

// One family through an apply().  prepare() readies the copy to publish
// without touching what readers see; publish() stores it; finish() brings
// the other copy along after the grace period; abandon() undoes prepare().
template <class F>
class FamilyApply {
 public:
  using Copy = typename Family<F>::Copy;
  using Op = typename Family<F>::Op;

  FamilyApply(Family<F>& f, std::vector<Op> ops, size_t count)
      : f_(f), ops_(std::move(ops)), count_(count) {}

  Result<bool, std::string> prepare() {
    if (ops_.empty()) {
      return true;
    }
    bool out_of_groups = false;
    if (f_.fitsInPlace(count_)) {
      if (Family<F>::change(*f_.standby, ops_)) {
        in_place_ = true;
        return true;
      }
      // Out of tbl8 groups (the RIB has room for every route the shape
      // allows): the standby is half changed; a bigger pair is built below.
      out_of_groups = true;
    }
    // A rebuild: the standby goes first so that the family never takes more
    // than two copies (its memory is what the new copy reuses).
    f_.standby.reset();
    next_ = f_.routes;
    commitOps<F>(*next_, ops_);
    Shape s = f_.shapeFor(*next_, f_.active && f_.active->shape.large);
    if (out_of_groups && s.large) {
      s.tbl8 = std::max(s.tbl8, f_.active->shape.tbl8 * 2);
    }
    if (f_.active && s.large == f_.active->shape.large && count_ > f_.active->shape.routes) {
      // Outgrown: half as much again as before, so that a table filled by
      // many batches is rebuilt a logarithmic number of times.
      const size_t grown = size_t{f_.active->shape.routes} * 3 / 2;
      s.routes =
          static_cast<uint32_t>(std::min<size_t>(std::max<size_t>(s.routes, grown), 1u << 30));
    }
    auto c = f_.build(*next_, s);
    if (!c) {
      return unexpected(c.error());
    }
    fresh_ = std::move(*c);
    return true;
  }

  // Undoes prepare() when another family failed: the changed standby is
  // dropped (rebuilt by the next apply), a fresh copy freed.
  void abandon() {
    if (in_place_) {
      f_.standby.reset();
    }
    fresh_.reset();
  }

  void publish() {
    if (in_place_) {
      std::swap(f_.active, f_.standby);
    } else if (fresh_) {
      f_.standby = std::move(f_.active);
      f_.active = std::move(fresh_);
    } else {
      return;
    }
    f_.published->store(&f_.active->view, std::memory_order_release);
  }

  // After the grace period: the copy readers left gets the same changes.
  void finish(const std::string& name) {
    if (in_place_) {
      if (!Family<F>::change(*f_.standby, ops_)) {
        spdlog::warn(
            "FIB {}: the second {} copy failed to take the changes; rebuilt at the "
            "next change",
            name, f_.label);
        f_.standby.reset();
      }
      commitOps<F>(f_.routes, ops_);
      return;
    }
    if (!next_) {
      return;
    }
    f_.standby.reset();
    f_.routes = std::move(*next_);
    if (!f_.active->shape.large) {
      return;  // an array is replaced whole: no second copy
    }
    auto c = f_.build(f_.routes, f_.active->shape);
    if (!c) {
      spdlog::warn("FIB {}: cannot build the second {} copy ({}); rebuilt at the next change", name,
                   f_.label, c.error());
      return;
    }
    f_.standby = std::move(*c);
  }

 private:
  Family<F>& f_;
  std::vector<Op> ops_;
  size_t count_;
  bool in_place_ = false;
  std::optional<Map> next_;
  std::unique_ptr<Copy> fresh_;
};

}  // namespace

Result<bool, std::string> TenantFib::apply(std::span<const Change> changes,
                                           const Synchronize& synchronize) {
  Impl& i = *impl_;
  std::vector<const Change*> c4, c6;
  for (const auto& c : changes) {
    if (!c.withdraw && c.next_hop > kMaxNextHop) {
      return unexpected("FIB " + i.name + ": next hop " + std::to_string(c.next_hop) + " of " +
                        c.prefix.toString() + " is too large");
    }
    // A /33 IPv4 prefix would wrap the array form's host bits and make
    // rte_fib fail as if out of room: refused before anything changes.
    if (c.prefix.length > (c.prefix.address.family == config::Family::V4 ? 32 : 128)) {
      return unexpected("FIB " + i.name + ": prefix length " + std::to_string(c.prefix.length) +
                        " is beyond its family's");
    }
    (c.prefix.address.family == config::Family::V4 ? c4 : c6).push_back(&c);
  }
  std::vector<Family<V4>::Op> ops4;
  std::vector<Family<V6>::Op> ops6;
  const size_t n4 = planOps(i.v4, c4, ops4);
  const size_t n6 = planOps(i.v6, c6, ops6);
  FamilyApply<V4> a4(i.v4, std::move(ops4), n4);
  FamilyApply<V6> a6(i.v6, std::move(ops6), n6);
  if (auto r = a4.prepare(); !r) {
    a4.abandon();
    return unexpected("FIB " + i.name + ": " + r.error());
  }
  if (auto r = a6.prepare(); !r) {
    a6.abandon();
    a4.abandon();
    return unexpected("FIB " + i.name + ": " + r.error());
  }
  a4.publish();
  a6.publish();
  if (synchronize) {
    synchronize();
  }
  a4.finish(i.name);
  a6.finish(i.name);
  return true;
}

std::optional<uint32_t> TenantFib::lookup4(const uint8_t dst[4]) const {
  const uint32_t nh = find4(dst);
  return nh == kNoRoute ? std::nullopt : std::optional<uint32_t>(nh);
}

std::optional<uint32_t> TenantFib::lookup6(const uint8_t dst[16]) const {
  const uint32_t nh = find6(dst);
  return nh == kNoRoute ? std::nullopt : std::optional<uint32_t>(nh);
}

size_t TenantFib::routes() const {
  return impl_->v4.routes.size() + impl_->v6.routes.size();
}

size_t TenantFib::memoryBytes() const {
  return impl_->v4.bytes() + impl_->v6.bytes();
}

const std::string& TenantFib::name() const {
  return impl_->name;
}

bool TenantFib::large4() const {
  return impl_->v4.active && impl_->v4.active->shape.large;
}

size_t TenantFib::rebuilds() const {
  return impl_->v4.builds + impl_->v6.builds;
}

bool TenantFib::large6() const {
  return impl_->v6.active && impl_->v6.active->shape.large;
}

}  // namespace mcgw::engine
