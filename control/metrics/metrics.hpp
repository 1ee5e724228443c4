// The gateway's Prometheus metrics (docs/monitoring.md): the catalog of
// every metric family mcgwd exports, and collect(), which reads them from
// the subsystems' state on the control loop.  The fast path's counters come
// from the same X-lists as `mcgwctl show counters` (drop reasons, event
// counters, port counters, XDP verdicts), read once per collection: a
// scrape touches the workers' counter blocks exactly as `show counters`
// does.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <prometheus/metric_family.h>

#include "control/api/views.hpp"
#include "control/daemon/daemon_facts.hpp"

namespace mcgw::metrics {

struct MetricInfo {
  std::string name;  // mcgw_..., counters end in _total
  prometheus::MetricType type;
  std::string labels;  // for the docs: "peer, line, direction"
  std::string help;
};

// Every family collect() may return, in the order docs/monitoring.md lists
// them.  Families with no sample (no lines, BGP off) are left out of a scrape.
const std::vector<MetricInfo>& catalog();
const MetricInfo* findMetric(std::string_view name);

using Labels = std::vector<std::pair<std::string, std::string>>;

// Families built sample by sample; a name outside the catalog throws
// std::logic_error (a programming error the unit tests catch).
class FamilyBuilder {
 public:
  void add(std::string_view name, const Labels& labels, double value);
  std::vector<prometheus::MetricFamily> take();

 private:
  std::vector<prometheus::MetricFamily> families_;
  std::unordered_map<std::string_view, size_t> index_;
};

// What the metrics service knows besides the gateway's state.
struct CollectExtras {
  // Whether the config file on disk differs from the config in force
  // (unknown: not set).
  std::optional<bool> file_differs;
};

// Every metric of a running gateway.  Loop thread (the subsystems are not
// thread-safe).
std::vector<prometheus::MetricFamily> collect(const api::GatewayState& s,
                                              const daemon::DaemonFacts& d,
                                              const CollectExtras& extras);

}  // namespace mcgw::metrics
