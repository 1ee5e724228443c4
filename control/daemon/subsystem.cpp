#include "control/daemon/subsystem.hpp"

namespace mcgw::daemon {

std::vector<std::string> Subsystem::validate(const config::Config&) const {
  return {};
}

std::vector<std::string> validateAll(std::span<Subsystem* const> subsystems,
                                     const config::Config& next) {
  std::vector<std::string> errors;
  for (const Subsystem* s : subsystems) {
    auto e = s->validate(next);
    errors.insert(errors.end(), e.begin(), e.end());
  }
  return errors;
}

Result<bool, std::string> prepareAndApply(std::span<Subsystem* const> subsystems,
                                          const ReloadPlan& plan) {
  for (size_t i = 0; i < subsystems.size(); ++i) {
    if (auto r = subsystems[i]->prepare(plan); !r) {
      for (size_t j = i; j-- > 0;) {
        subsystems[j]->abort();
      }
      return unexpected(r.error());
    }
  }
  for (Subsystem* s : subsystems) {
    s->apply();
  }
  return true;
}

}  // namespace mcgw::daemon
