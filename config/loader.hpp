// Loading a configuration: YAML (yaml-cpp) → the YANG model (libyang) →
// semantic checks → one immutable Config.  Nothing is half-loaded: either
// every check passes and a Config comes back, or every error found does.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.hpp"
#include "config/result.hpp"

namespace mcgw::config {

// The limits every config file is held to, whatever its content
// (docs/configuration.md, "Limits"); each list's own limit is its
// max-elements in the model.  A file beyond one is refused before it is
// walked, with an error that names the limit.
inline constexpr size_t kMaxFileBytes = size_t{4} << 20;
// Nested sequences and mappings (the model needs 9).
inline constexpr int kMaxDepth = 32;
// YAML nodes (keys, values, list items), an alias counting the nodes it
// stands for each time it is used.
inline constexpr uint64_t kMaxNodes = 1000000;
// One key or value: no leaf of the model needs more (the longest, a vdev
// argument string, is at most 1024 characters).
inline constexpr size_t kMaxValueBytes = 4096;
// All keys and values together, an alias counting the bytes of what it
// names each time it is used: what the loader copies and checks is bounded
// by this, not only by the number of nodes.
inline constexpr uint64_t kMaxExpandedBytes = uint64_t{32} << 20;
// Lines or values with bytes that are not text reported one by one.
inline constexpr size_t kMaxReported = 20;

// ConfigError and ConfigErrors are in config/config.hpp: a loaded Config
// carries its warnings in the same form.
using LoadResult = Result<ConfigPtr, ConfigErrors>;

// Reads and checks a config file.  Errors are sorted by line; a config
// that loads carries its warnings (Config::warnings), also sorted by line.
LoadResult loadConfigFile(const std::string& path);

// The sha256 of bytes, lower-case hex (Config::checksum of a file's text).
std::string sha256Hex(std::string_view data);

// Reads a config file whole (a directory, an unreadable file or one larger
// than kMaxFileBytes is an error; the size is checked before reading).
Result<std::string, ConfigErrors> readConfigFile(const std::string& path);

// Checks config text; file_name is only used in messages and Config::source.
LoadResult loadConfigText(std::string_view text, const std::string& file_name);

// A tenant's policy given apart from the file: the live rules an operator
// set through the API (docs/policy.md, "Changing rules live").  text is the
// YAML (or JSON) of a tenants[].policy.
struct PolicyOverlay {
  std::string tenant;
  std::string text;
  // The line the text's first line is numbered as in errors and warnings:
  // after the file's last line (and after the other overlays'), so that the
  // caller can tell which text a problem is in.
  int first_line = 0;
};

// loadConfigText with each overlay's policy in place of its tenant's (a
// tenant without one gets it): the same stages and checks as a file whose
// tenants held those policies.  An overlay whose tenant the file does not
// have is an error.  Config::checksum stays the file text's.
LoadResult loadConfigTextWith(std::string_view text, const std::string& file_name,
                              const std::vector<PolicyOverlay>& overlays);

}  // namespace mcgw::config
