// The last good config: a copy of the text mcgwd last started or reloaded
// with successfully, kept so that a gateway whose config file was broken
// while it ran (or under a crash-restart) comes back with the config it had
// rather than not at all.  One copy per config file, in the state directory:
//   /etc/mcgw/mcgw.yaml -> STATE_DIR/etc-mcgw-mcgw.yaml.last-good (mode 0600)
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include "config/result.hpp"

namespace mcgw::daemon {

inline constexpr const char* kDefaultStateDir = "/var/lib/mcgw";

// The copy's file name for a config path, escaped as systemd-escape --path
// does: "/" becomes "-", bytes other than letters, digits, "_" and "." (and a
// leading ".") become \xNN; a name that would be too long is shortened and
// ends in a hash of the path.
std::string lastGoodFileName(const std::string& config_path);

class LastGoodStore {
 public:
  LastGoodStore(std::string state_dir, const std::string& config_path);

  // The copy's path.
  const std::string& path() const { return path_; }

  // Replaces the copy with text: written to a temporary file in the same
  // directory (created 0700 if missing), synced, then renamed over the copy,
  // so a crash leaves the old copy or the new one, never a torn one.
  Result<bool, std::string> save(std::string_view text);

  // When the copy was last written, or nullopt when there is none.
  std::optional<std::chrono::system_clock::time_point> savedAt() const;

  // When the copy was last written, or why it may not be used to start: it
  // does not exist, is not a regular file (a symbolic link is not
  // followed), is not owned by this user, or others may write it.
  Result<std::chrono::system_clock::time_point, std::string> usable() const;

 private:
  std::string dir_;
  std::string path_;
};

}  // namespace mcgw::daemon
