#include "dataplane/engine/fib.hpp"

#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_lpm.h>
#include <rte_lpm6.h>

#include <atomic>

namespace mcgw::engine {

namespace {

// rte_lpm names are memzone names: unique in the process, at most 31 chars.
std::string tableName(const char* kind, const std::string& name) {
  static std::atomic<uint32_t> serial{0};
  return std::string(kind) + std::to_string(serial++) + "_" + name.substr(0, 16);
}

}  // namespace

Result<std::unique_ptr<TenantFib>, std::string> TenantFib::build(const std::string& name,
                                                                 const std::vector<Route>& routes,
                                                                 const Limits& limits) {
  std::unique_ptr<TenantFib> fib(new TenantFib());
  rte_lpm_config c4{limits.max_rules_v4, limits.tbl8s_v4, 0};
  fib->v4_ = rte_lpm_create(tableName("l4", name).c_str(), static_cast<int>(rte_socket_id()), &c4);
  rte_lpm6_config c6{limits.max_rules_v6, limits.tbl8s_v6, 0};
  fib->v6_ = rte_lpm6_create(tableName("l6", name).c_str(), static_cast<int>(rte_socket_id()), &c6);
  if (!fib->v4_ || !fib->v6_) {
    return unexpected("FIB " + name +
                      ": cannot create the route tables: " + rte_strerror(rte_errno) +
                      " (each tenant needs about 130 MiB, twice while its routes change: "
                      "raise eal.memory-mb)");
  }
  for (const auto& r : routes) {
    if (r.next_hop > kMaxNextHop) {
      return unexpected("FIB " + name + ": next hop " + std::to_string(r.next_hop) + " of " +
                        r.prefix.toString() + " exceeds 21 bits");
    }
    config::IpPrefix p = r.prefix.network();
    const bool v4 = p.address.family == config::Family::V4;
    int rc = 0;
    if (p.length == 0) {
      (v4 ? fib->default_v4_ : fib->default_v6_) = r.next_hop;
    } else if (v4) {
      const auto& b = p.address.bytes;
      uint32_t host = static_cast<uint32_t>(b[0]) << 24 | b[1] << 16 | b[2] << 8 | b[3];
      rc = rte_lpm_add(fib->v4_, host, p.length, r.next_hop);
    } else {
      rc = rte_lpm6_add(fib->v6_, p.address.bytes.data(), p.length, r.next_hop);
    }
    if (rc < 0) {
      return unexpected("FIB " + name + ": cannot add " + p.toString() + ": " + rte_strerror(-rc) +
                        " (table limits reached?)");
    }
    ++fib->routes_;
  }
  fib->default4_ = fib->default_v4_.value_or(kNoRoute);
  fib->default6_ = fib->default_v6_.value_or(kNoRoute);
  return fib;
}

TenantFib::~TenantFib() {
  rte_lpm_free(v4_);
  rte_lpm6_free(v6_);
}

std::optional<uint32_t> TenantFib::lookup4(const uint8_t dst[4]) const {
  uint32_t host = static_cast<uint32_t>(dst[0]) << 24 | dst[1] << 16 | dst[2] << 8 | dst[3];
  uint32_t nh = 0;
  if (rte_lpm_lookup(v4_, host, &nh) != 0) {
    return default_v4_;
  }
  return nh;
}

std::optional<uint32_t> TenantFib::lookup6(const uint8_t dst[16]) const {
  uint32_t nh = 0;
  if (rte_lpm6_lookup(v6_, dst, &nh) != 0) {
    return default_v6_;
  }
  return nh;
}

}  // namespace mcgw::engine
