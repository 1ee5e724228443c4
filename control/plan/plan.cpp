#include "control/plan/plan.hpp"

#include <algorithm>

namespace mcgw::plan {

const StoredVpc* Snapshot::find(const std::string& name) const {
  auto it = std::lower_bound(vpcs.begin(), vpcs.end(), name,
                             [](const StoredVpc& v, const std::string& n) { return v.name < n; });
  return it != vpcs.end() && it->name == name ? &*it : nullptr;
}

}  // namespace mcgw::plan
