#include "control/plan/in_force.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "control/plan/allocator.hpp"
#include "control/plan/etcd_store.hpp"
#include "control/plan/file_store.hpp"

namespace mcgw::plan {

using config::AddressPlanConfig;

Result<std::unique_ptr<Store>, std::string> openStore(const config::Config& config) {
  const AddressPlanConfig& p = config.address_plan;
  if (p.store == AddressPlanConfig::Store::kEtcd) {
    EtcdStoreOptions o;
    o.client.endpoints = p.etcd_endpoints;
    o.client.ca_file = p.etcd_ca_file;
    o.client.cert_file = p.etcd_cert_file;
    o.client.key_file = p.etcd_key_file;
    if (!p.etcd_prefix.empty()) {
      o.prefix = p.etcd_prefix;
    }
    return std::unique_ptr<Store>(std::make_unique<EtcdStore>(std::move(o)));
  }
  if (p.store_path.empty()) {
    return unexpected(std::string("address-plan.store.path is empty"));
  }
  return std::unique_ptr<Store>(std::make_unique<FileStore>(p.store_path));
}

Result<std::unique_ptr<Store>, std::string> openStoreFor(const config::Config& config) {
  const AddressPlanConfig& p = config.address_plan;
  if (p.store != AddressPlanConfig::Store::kEtcd && p.pools.empty()) {
    return std::unique_ptr<Store>();
  }
  return openStore(config);
}

StoreSettings storeSettings(const config::Config& config) {
  const AddressPlanConfig& p = config.address_plan;
  const bool follows = p.store == AddressPlanConfig::Store::kEtcd || !p.pools.empty();
  if (!follows) {
    return {};  // nothing followed: the store's keys do not matter
  }
  return {follows,         p.store == AddressPlanConfig::Store::kEtcd ? "etcd" : "file",
          p.store_path,    p.etcd_endpoints,
          p.etcd_ca_file,  p.etcd_cert_file,
          p.etcd_key_file, p.etcd_prefix};
}

Result<config::ConfigPtr, std::vector<std::string>> inForce(const config::Config& file,
                                                            const Snapshot& snapshot) {
  if (snapshot.vpcs.empty()) {
    return config::ConfigPtr(std::make_shared<config::Config>(file));
  }
  std::vector<std::string> errors;
  for (const PlanProblem& p :
       checkSnapshot(file, snapshot, prefixesOf(reservedRanges(file, &snapshot)))) {
    if (p.severity == PlanProblem::Severity::kError) {
      errors.push_back(p.message);
    }
  }
  if (!errors.empty()) {
    return unexpected(std::move(errors));
  }
  return config::ConfigPtr(std::make_shared<config::Config>(merged(file, snapshot)));
}

std::string cachePath(const std::string& state_dir, const std::string& store) {
  // FNV-1a of the store's description: a copy of another store's plan (the
  // config now names another etcd) is never taken for this one's.
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : store) {
    h = (h ^ c) * 0x100000001b3ULL;
  }
  char name[48];
  std::snprintf(name, sizeof name, "plan-cache-%016llx.yaml", static_cast<unsigned long long>(h));
  return (std::filesystem::path(state_dir) / name).string();
}

Result<bool, std::string> writeCache(const std::string& path, const Snapshot& snapshot) {
  // The store's own revision is kept, in the file store's format: written
  // whole to a temporary file and renamed over the copy.
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << formatPlanFile(snapshot);
    out.flush();
    if (!out) {
      return unexpected("cannot write " + tmp + ": " + std::strerror(errno));
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    return unexpected("cannot rename " + tmp + " to " + path + ": " + ec.message());
  }
  return true;
}

namespace {

StoreResult<Snapshot> readCache(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return unexpected(StoreError{StoreError::Kind::kUnreachable, "no copy at " + path});
  }
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return parsePlanFile(text, path);
}

}  // namespace

FirstSnapshot firstSnapshot(Store& store, const std::string& cache_path) {
  auto r = store.load();
  if (r) {
    return {std::move(*r), std::nullopt, ""};
  }
  FirstSnapshot out;
  out.error = r.error().message;
  if (auto c = readCache(cache_path); c) {
    out.snapshot = std::move(*c);
    out.cached = "; running the cached plan (revision " + std::to_string(out.snapshot.revision) +
                 ") from " + cache_path;
  } else {
    *out.error += "; no cached plan either (" + c.error().message + ")";
  }
  return out;
}

}  // namespace mcgw::plan
