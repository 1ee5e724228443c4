// Prerequisite checks run before mcgwd starts (systemd ExecStartPre=
// `mcgwd --preflight`).  Each failed check names exactly what is missing and
// how to provide it.
#pragma once

#include <string>
#include <vector>

#include "config/config.hpp"

namespace mcgw::daemon {

struct Check {
  std::string what;
  bool ok = false;
  std::string detail;  // what is missing and how to fix it, or what was found
};

// Where the checks look; tests point these at fixtures.
struct PreflightRoots {
  std::string sys = "/sys";
  std::string proc = "/proc";
  std::string frr = "/usr/lib/frr";
  std::string frr_modules = "/usr/lib/x86_64-linux-gnu/frr/modules";
};

std::vector<Check> preflight(const config::Config& config, const PreflightRoots& roots = {});

}  // namespace mcgw::daemon
