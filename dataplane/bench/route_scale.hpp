// Route-scale scenarios of mcgw-bench (docs/performance.md, "Route scale"):
// fib-load builds one tenant's TenantFib with many routes; fib-churn applies
// route changes while another thread looks up.  Both need the EAL.
#pragma once

#include <cstddef>
#include <cstdint>

namespace mcgw::bench {

struct RouteScaleOptions {
  size_t routes4 = 1'000'000;
  size_t routes6 = 200'000;
  size_t batch = 1000;       // changes per apply() in fib-churn
  double churn_seconds = 5;  // how long fib-churn changes routes
  uint64_t seed = 1;
};

// Each prints its figures to stdout; fails the process on a wrong lookup.
void fibLoad(const RouteScaleOptions& o);
void fibChurn(const RouteScaleOptions& o);

}  // namespace mcgw::bench
