// The plan's store in a local file: readable YAML that mcgwctl writes
// (docs/address-plan.md, "The file store").
//
// Every change runs under an exclusive flock on a lock file next to the
// plan (plan.yaml.lock) and replaces the file by an atomic rename of a
// fsynced temporary file, so a reader sees the old plan or the new one,
// never half of one, and writers on the same machine take turns.  Readers
// take no lock.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include "control/plan/plan.hpp"

namespace mcgw::plan {

class FileStore : public Store {
 public:
  static constexpr const char* kDefaultPath = "/var/lib/mcgw/plan.yaml";

  struct Options {
    // How long update() waits for another writer's lock before kContended.
    std::chrono::milliseconds lock_timeout{10000};
    // How often waitChange() looks at the file.
    std::chrono::milliseconds poll_interval{50};
  };

  explicit FileStore(std::string path = kDefaultPath) : FileStore(std::move(path), Options{}) {}
  FileStore(std::string path, Options options);

  StoreResult<Snapshot> load() override;
  StoreResult<Snapshot> update(const Change& change) override;
  StoreResult<Snapshot> waitChange(uint64_t after, std::chrono::milliseconds timeout,
                                   const std::atomic<bool>& stop) override;
  std::string describe() const override { return "file " + path_; }

  const std::string& path() const { return path_; }

  // What stat() says of the file (a rename always gives a new inode).
  struct FileVersion {
    bool exists = false;
    uint64_t inode = 0;
    int64_t size = 0;
    int64_t mtime_ns = 0;
    bool operator==(const FileVersion&) const = default;
  };

 private:
  std::string path_;
  Options options_;
  // waitChange's last look at the file and what it held (one thread: the
  // follower's).
  std::optional<FileVersion> seen_version_;
  std::optional<StoreResult<Snapshot>> seen_content_;
};

// The file's text for a snapshot: a header comment, `revision:` and `vpcs:`
// with every field of every VPC.
std::string formatPlanFile(const Snapshot& snapshot);

// A plan file's text as a snapshot (sorted by name).  kCorrupt, with
// file:line:column, when it is not YAML, has a key it does not know, lacks
// one it needs, or breaks a bound of plan.hpp or a rule of a name.  file
// names the file in messages.
StoreResult<Snapshot> parsePlanFile(std::string_view text, const std::string& file);

}  // namespace mcgw::plan
