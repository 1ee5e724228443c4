// What differs between a running config and a new one.  mcgwd logs the
// changes and applies only them; changes that need a restart are refused by
// a reload (the old config stays in force).
#pragma once

#include <string>
#include <vector>

#include "config/config.hpp"

namespace mcgw::config {

struct ConfigChange {
  enum class Kind { kAdded, kRemoved, kChanged };
  std::string section;  // "port", "tenant", "peer", "eal", ...
  std::string name;     // the entry's key, empty for single sections
  Kind kind = Kind::kChanged;
  std::string detail;  // e.g. "mtu 1500 -> 9000"
  bool needs_restart = false;

  std::string toString() const;
};

std::vector<ConfigChange> diffConfigs(const Config& before, const Config& after);

}  // namespace mcgw::config
