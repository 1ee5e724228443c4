// The plan a gateway runs: its config file's plan plus the VPCs of the
// store it follows, checked as one (docs/address-plan.md, "Stores").
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "config/config.hpp"
#include "config/result.hpp"
#include "control/plan/plan.hpp"

namespace mcgw::plan {

// The store the config names (the file store by default).
Result<std::unique_ptr<Store>, std::string> openStore(const config::Config& config);
// The same, or null when a gateway has none to follow: a plan without pools
// and with the file store allocates nothing.
Result<std::unique_ptr<Store>, std::string> openStoreFor(const config::Config& config);

// What decides which store a gateway follows (a change needs a restart).
using StoreSettings = std::tuple<bool, std::string, std::string, std::vector<std::string>,
                                 std::string, std::string, std::string, std::string>;
StoreSettings storeSettings(const config::Config& config);

// The file's config with the snapshot's VPCs, or why they cannot run
// together (overlaps, unknown tenants, names used twice).
Result<config::ConfigPtr, std::vector<std::string>> inForce(const config::Config& file,
                                                            const Snapshot& snapshot);

// Where a gateway keeps the last plan it ran from `store` (its describe()),
// in its state directory.
std::string cachePath(const std::string& state_dir, const std::string& store);
Result<bool, std::string> writeCache(const std::string& path, const Snapshot& snapshot);

// The snapshot a gateway starts with: the store's, or when it does not
// answer the cached copy (error says why; revision 0 when there is none).
struct FirstSnapshot {
  Snapshot snapshot;
  std::optional<std::string> error;  // why the store did not answer
  std::string cached;                // "; running the cached plan (revision N) from PATH", or ""
};
FirstSnapshot firstSnapshot(Store& store, const std::string& cache_path);

}  // namespace mcgw::plan
