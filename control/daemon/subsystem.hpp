// The reload phases every subsystem of the control core implements (see
// "Control core" in docs/architecture.md).  A reload loads the file, asks
// every subsystem to validate it, plans the reload (reload_plan.hpp), then
// prepares each subsystem in order; if one fails, those already prepared
// abort, newest first, and none applies; otherwise all apply, in order.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.hpp"
#include "config/result.hpp"
#include "control/daemon/reload_plan.hpp"

namespace mcgw::daemon {

class Subsystem {
 public:
  virtual ~Subsystem() = default;
  // For logs: "ports", "lines", ...
  virtual std::string_view name() const = 0;
  // Pure: what this subsystem cannot accept in `next` (nothing by default;
  // the config loader has checked the config as a whole).
  virtual std::vector<std::string> validate(const config::Config& next) const;
  // May fail.  Nothing traffic can see changes, except where the subsystem
  // documents it; whatever it acquires is held aside for apply() or abort().
  virtual Result<bool, std::string> prepare(const ReloadPlan& plan) = 0;
  // Cannot fail: makes the prepared state live.
  virtual void apply() = 0;
  // Undoes prepare() (called only after a successful prepare()).
  virtual void abort() = 0;
};

// validate() of every subsystem, errors in order.
std::vector<std::string> validateAll(std::span<Subsystem* const> subsystems,
                                     const config::Config& next);

// Prepares each subsystem in order; on the first failure aborts the ones
// already prepared, newest first, and returns the error (none applies).
// Otherwise applies all, in order.
Result<bool, std::string> prepareAndApply(std::span<Subsystem* const> subsystems,
                                          const ReloadPlan& plan);

}  // namespace mcgw::daemon
