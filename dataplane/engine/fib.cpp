// Interim implementation (to be replaced): rte_lpm / rte_lpm6 rebuilt whole
// on every apply() and swapped under RCU.
#include "dataplane/engine/fib.hpp"

#include <rte_byteorder.h>
#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_lpm.h>
#include <rte_lpm6.h>

#include <atomic>
#include <map>

namespace mcgw::engine {

namespace {

std::string tableName(const char* kind, const std::string& name) {
  static std::atomic<uint32_t> serial{0};
  return std::string(kind) + std::to_string(serial++) + "_" + name.substr(0, 16);
}

struct Tables {
  rte_lpm* v4 = nullptr;
  rte_lpm6* v6 = nullptr;
  uint32_t default4 = TenantFib::kNoRoute;
  uint32_t default6 = TenantFib::kNoRoute;
  ~Tables() {
    rte_lpm_free(v4);
    rte_lpm6_free(v6);
  }
};

}  // namespace

struct TenantFib::Impl {
  std::string name;
  std::map<config::IpPrefix, uint32_t> routes;
  std::atomic<Tables*> current{nullptr};

  static Result<std::unique_ptr<Tables>, std::string> build(
      const std::string& name, const std::map<config::IpPrefix, uint32_t>& routes) {
    auto t = std::make_unique<Tables>();
    rte_lpm_config c4{1u << 16, 1u << 12, 0};
    t->v4 = rte_lpm_create(tableName("l4", name).c_str(), static_cast<int>(rte_socket_id()), &c4);
    rte_lpm6_config c6{1u << 14, 1u << 14, 0};
    t->v6 = rte_lpm6_create(tableName("l6", name).c_str(), static_cast<int>(rte_socket_id()), &c6);
    if (!t->v4 || !t->v6) {
      return unexpected("FIB " + name + ": cannot create the route tables: " +
                        rte_strerror(rte_errno));
    }
    for (const auto& [p, nh] : routes) {
      const bool v4 = p.address.family == config::Family::V4;
      int rc = 0;
      if (p.length == 0) {
        (v4 ? t->default4 : t->default6) = nh;
      } else if (v4) {
        const auto& b = p.address.bytes;
        uint32_t host = static_cast<uint32_t>(b[0]) << 24 | b[1] << 16 | b[2] << 8 | b[3];
        rc = rte_lpm_add(t->v4, host, p.length, nh);
      } else {
        rc = rte_lpm6_add(t->v6, p.address.bytes.data(), p.length, nh);
      }
      if (rc < 0) {
        return unexpected("FIB " + name + ": cannot add " + p.toString() + ": " +
                          rte_strerror(-rc));
      }
    }
    return t;
  }
};

TenantFib::TenantFib(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

TenantFib::~TenantFib() {
  delete impl_->current.load();
}

Result<std::unique_ptr<TenantFib>, std::string> TenantFib::create(
    const std::string& name, const std::vector<Route>& routes) {
  auto impl = std::make_unique<Impl>();
  impl->name = name;
  for (const auto& r : routes) {
    if (r.next_hop > kMaxNextHop) {
      return unexpected("FIB " + name + ": next hop " + std::to_string(r.next_hop) + " of " +
                        r.prefix.toString() + " is too large");
    }
    impl->routes[r.prefix.network()] = r.next_hop;
  }
  auto t = Impl::build(name, impl->routes);
  if (!t) {
    return unexpected(t.error());
  }
  impl->current.store(t->release());
  return std::unique_ptr<TenantFib>(new TenantFib(std::move(impl)));
}

Result<bool, std::string> TenantFib::apply(std::span<const Change> changes,
                                           const Synchronize& synchronize) {
  auto next = impl_->routes;
  for (const auto& c : changes) {
    if (c.withdraw) {
      next.erase(c.prefix.network());
      continue;
    }
    if (c.next_hop > kMaxNextHop) {
      return unexpected("FIB " + impl_->name + ": next hop " + std::to_string(c.next_hop) +
                        " of " + c.prefix.toString() + " is too large");
    }
    next[c.prefix.network()] = c.next_hop;
  }
  auto t = Impl::build(impl_->name, next);
  if (!t) {
    return unexpected(t.error());
  }
  Tables* old = impl_->current.exchange(t->release(), std::memory_order_acq_rel);
  if (synchronize) {
    synchronize();
  }
  delete old;
  impl_->routes = std::move(next);
  return true;
}

uint32_t TenantFib::find4(const uint8_t dst[4]) const {
  const Tables* t = impl_->current.load(std::memory_order_acquire);
  uint32_t be;
  __builtin_memcpy(&be, dst, 4);
  uint32_t nh;
  return rte_lpm_lookup(t->v4, rte_be_to_cpu_32(be), &nh) == 0 ? nh : t->default4;
}

uint32_t TenantFib::find6(const uint8_t dst[16]) const {
  const Tables* t = impl_->current.load(std::memory_order_acquire);
  uint32_t nh;
  return rte_lpm6_lookup(t->v6, dst, &nh) == 0 ? nh : t->default6;
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
  return impl_->routes.size();
}

size_t TenantFib::memoryBytes() const {
  return 0;
}

const std::string& TenantFib::name() const {
  return impl_->name;
}

}  // namespace mcgw::engine
