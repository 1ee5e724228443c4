// Loading a configuration: YAML (yaml-cpp) → the YANG model (libyang) →
// semantic checks → one immutable Config.  Nothing is half-loaded: either
// every check passes and a Config comes back, or every error found does.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "config/config.hpp"
#include "config/result.hpp"

namespace mcgw::config {

// One problem in a config file.  line and column are 1-based (0: unknown).
struct ConfigError {
  std::string file;
  int line = 0;
  int column = 0;
  std::string path;     // YANG data path such as /mcgw:ports/port[name='wan0']/mtu
  std::string message;  // what was expected and what was found

  // "file:line:column: path: message", the form every front-end prints.
  std::string toString() const;
};

using ConfigErrors = std::vector<ConfigError>;
using LoadResult = Result<ConfigPtr, ConfigErrors>;

// Reads and checks a config file.  Errors are sorted by line.
LoadResult loadConfigFile(const std::string& path);

// Reads a config file whole (a directory or an unreadable file is an error).
Result<std::string, ConfigErrors> readConfigFile(const std::string& path);

// Checks config text; file_name is only used in messages and Config::source.
LoadResult loadConfigText(std::string_view text, const std::string& file_name);

}  // namespace mcgw::config
