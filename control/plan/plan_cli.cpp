#include "control/plan/plan_cli.hpp"

#include <fstream>
#include <iostream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "config/loader.hpp"
#include "config/text.hpp"
#include "control/api/json_text.hpp"
#include "control/plan/allocator.hpp"
#include "control/plan/cloud_import.hpp"
#include "control/plan/in_force.hpp"

namespace mcgw::plan {

using nlohmann::json;

namespace {

constexpr int kOk = 0;
constexpr int kRefused = 1;
constexpr int kUnreachable = 2;

std::string familyName(config::Family f) {
  return f == config::Family::V4 ? "ipv4" : "ipv6";
}

json vpcJson(const StoredVpc& v) {
  json prefixes = json::array();
  for (const auto& p : v.prefixes) {
    prefixes.push_back(p.toString());
  }
  return {{"name", v.name}, {"cloud", v.cloud},   {"region", v.region}, {"prefixes", prefixes},
          {"pool", v.pool}, {"tenant", v.tenant}, {"site", v.site},     {"source", v.source}};
}

std::string prefixList(const std::vector<IpPrefix>& ps) {
  std::string out;
  for (const auto& p : ps) {
    out += (out.empty() ? "" : ", ") + p.toString();
  }
  return out;
}

int exitFor(const StoreError& e) {
  return e.kind == StoreError::Kind::kUnreachable || e.kind == StoreError::Kind::kRefused
             ? kUnreachable
             : kRefused;
}

}  // namespace

PlanCommands::PlanCommands(CLI::App& app) {
  plan_ = app.add_subcommand("plan",
                             "The global address plan: check, allocate, release, show, "
                             "import (works on the config file and its store)");
  plan_->require_subcommand(1);
  plan_->add_option("-c,--config", config_path_, "mcgw config file (its address-plan section)")
      ->capture_default_str();
  plan_->add_flag("--json", json_, "Print JSON");
  plan_->fallthrough();

  check_ = plan_->add_subcommand(
      "check", "Check a config file's plan (overlaps, reserved ranges) and its store (exit 0/1)");
  check_->add_option("FILE", check_file_, "Config file")->required();

  allocate_ = plan_->add_subcommand(
      "allocate", "The lowest free block of a pool for a VPC (idempotent by VPC name)");
  allocate_->add_option("--cloud", cloud_, "Cloud (address-plan.clouds name)")->required();
  allocate_->add_option("--region", region_, "Region")->required();
  allocate_->add_option("--vpc", vpc_, "VPC name, unique in the plan")->required();
  allocate_->add_option("--length", length_, "Prefix length (default: the pool's)")
      ->check(CLI::Range(1, 128));
  allocate_->add_option("--family", family_, "Address family")
      ->check(CLI::IsMember({"ipv4", "ipv6"}))
      ->capture_default_str();
  allocate_->add_option("--tenant", tenant_, "Tenant of the VPC");
  allocate_->add_option("--site", site_, "Site whose gateways serve the VPC");
  allocate_->add_option("--pool", pool_, "Pool (default: the first that serves the cloud)");

  release_ = plan_->add_subcommand("release", "Give a stored VPC's block back to its pool");
  release_->add_option("NAME", release_name_, "VPC name")->required();

  show_ = plan_->add_subcommand("show", "Pools: size, used, free blocks; the stored VPCs");

  import_ = plan_->add_subcommand(
      "import", "Check a cloud's VPC listing against the plan; --apply adds those that fit");
  import_->add_option("--from", from_, "Which listing")
      ->required()
      ->check(CLI::IsMember({"aws", "aliyun", "huawei"}));
  import_->add_option("FILE", import_file_, "The listing's JSON (- for stdin)")->required();
  import_->add_option("--region", region_, "Region of VPCs the listing does not name one for");
  import_->add_flag("--apply", apply_, "Add the VPCs that fit to the store");
}

bool PlanCommands::chosen() const {
  return plan_ && *plan_;
}

int PlanCommands::run(const Print& out, const Print& err) {
  // The boundary: nothing a config, a store or a listing holds ends the
  // process with an exception.
  try {
    return runChosen(out, err);
  } catch (const std::exception& e) {
    err("mcgwctl: plan: internal error: " + text::escape(e.what(), 512) + "\n");
  } catch (...) {
    err("mcgwctl: plan: internal error\n");
  }
  return kRefused;
}

int PlanCommands::runChosen(const Print& out, const Print& err) {
  // `plan check FILE` checks that file; the others read --config.
  const std::string path = *check_ ? check_file_ : config_path_;
  auto loaded = config::loadConfigFile(path);
  if (!loaded) {
    std::string text;
    for (const auto& e : loaded.error()) {
      text += e.toString() + "\n";
    }
    text += path + ": invalid (" + std::to_string(loaded.error().size()) + " error" +
            (loaded.error().size() == 1 ? "" : "s") + ")\n";
    if (json_ && *check_) {
      json errors = json::array();
      for (const auto& e : loaded.error()) {
        errors.push_back(e.toString());
      }
      out(api::dump(json({{"file", path}, {"valid", false}, {"errors", errors}}), 2) + "\n");
    }
    err(text);
    return kRefused;
  }
  const config::Config& cfg = **loaded;
  const std::vector<IpPrefix> reserved = prefixesOf(reservedRanges(cfg));
  auto store = openStore(cfg);
  if (!store) {
    err("mcgwctl: " + store.error() + "\n");
    return kRefused;
  }

  if (*check_) {
    json warnings = json::array();
    std::string text;
    for (const auto& w : cfg.warnings) {
      text += "warning: " + w.toString() + "\n";
      warnings.push_back(w.toString());
    }
    // The store's VPCs are checked against the file too, when it has one.
    json store_j = nullptr;
    int rc = kOk;
    auto follows = openStoreFor(cfg);
    if (follows && *follows) {
      auto snap = (*follows)->load();
      if (!snap) {
        text += "warning: store " + (*follows)->describe() +
                " not checked: " + snap.error().message + "\n";
        store_j = {{"store", (*follows)->describe()}, {"error", snap.error().message}};
      } else {
        json problems = json::array();
        for (const auto& p : checkSnapshot(cfg, *snap, reserved)) {
          const bool error = p.severity == PlanProblem::Severity::kError;
          text += std::string(error ? "error" : "warning") + ": store " + (*follows)->describe() +
                  ": " + p.message + "\n";
          problems.push_back(
              {{"severity", error ? "error" : "warning"}, {"vpc", p.vpc}, {"message", p.message}});
          rc = error ? kRefused : rc;
        }
        store_j = {{"store", (*follows)->describe()},
                   {"revision", snap->revision},
                   {"vpcs", snap->vpcs.size()},
                   {"problems", problems}};
      }
    }
    if (json_) {
      out(api::dump(json({{"file", path},
                          {"valid", rc == kOk},
                          {"errors", json::array()},
                          {"warnings", warnings},
                          {"store", store_j}}),
                    2) +
          "\n");
      return rc;
    }
    err(text);
    out(path + ": plan " + (rc == kOk ? "valid" : "INVALID") + " (" +
        std::to_string(cfg.address_plan.vpcs.size()) + " VPCs, " +
        std::to_string(cfg.address_plan.mapped_ranges.size()) + " mapped ranges, " +
        std::to_string(cfg.address_plan.pools.size()) + " pools, " +
        std::to_string(cfg.warnings.size()) + " warning" + (cfg.warnings.size() == 1 ? "" : "s") +
        ")\n");
    return rc;
  }

  if (*allocate_) {
    Request req;
    req.cloud = cloud_;
    req.region = region_;
    req.vpc = vpc_;
    req.length = static_cast<uint8_t>(length_);
    req.family = family_ == "ipv6" ? config::Family::V6 : config::Family::V4;
    req.tenant = tenant_;
    req.site = site_;
    req.pool = pool_;
    std::optional<Allocation> got;
    auto r = (*store)->update([&](Snapshot& s) -> Result<bool, std::string> {
      auto a = allocate(cfg, s, req, prefixesOf(reservedRanges(cfg, &s)));
      if (!a) {
        return unexpected(a.error());
      }
      got = *a;
      if (a->created) {
        insert(s, a->vpc);
      }
      return a->created;
    });
    if (!r) {
      err("mcgwctl: plan allocate: " + r.error().message + "\n");
      return exitFor(r.error());
    }
    if (json_) {
      json j = vpcJson(got->vpc);
      j["created"] = got->created;
      j["revision"] = r->revision;
      j["store"] = (*store)->describe();
      out(api::dump(j, 2) + "\n");
    } else {
      out(std::string(got->created ? "allocated " : "already allocated ") +
          prefixList(got->vpc.prefixes) + " to VPC " + got->vpc.cloud + "/" + got->vpc.region +
          "/" + got->vpc.name + " from pool " + got->vpc.pool + " (" + (*store)->describe() +
          ", revision " + std::to_string(r->revision) + ")\n");
    }
    return kOk;
  }

  if (*release_) {
    std::optional<StoredVpc> gone;
    auto r = (*store)->update([&](Snapshot& s) -> Result<bool, std::string> {
      auto v = release(cfg, s, release_name_);
      if (!v) {
        return unexpected(v.error());
      }
      gone = *v;
      return true;
    });
    if (!r) {
      err("mcgwctl: plan release: " + r.error().message + "\n");
      return exitFor(r.error());
    }
    if (json_) {
      json j = vpcJson(*gone);
      j["released"] = true;
      j["revision"] = r->revision;
      out(api::dump(j, 2) + "\n");
    } else {
      out("released " + prefixList(gone->prefixes) + " of VPC " + gone->name + " (" +
          (*store)->describe() + ", revision " + std::to_string(r->revision) + ")\n");
    }
    return kOk;
  }

  if (*show_) {
    auto snap = (*store)->load();
    if (!snap) {
      err("mcgwctl: plan show: " + snap.error().message + "\n");
      return exitFor(snap.error());
    }
    const auto pools = usage(cfg, *snap, reserved);
    if (json_) {
      json pj = json::array();
      for (const auto& u : pools) {
        json prefixes = json::array(), free_blocks = json::array();
        for (const auto& p : u.prefixes) {
          prefixes.push_back(p.toString());
        }
        for (const auto& p : u.free_blocks) {
          free_blocks.push_back(p.toString());
        }
        pj.push_back(
            {{"pool", u.pool},
             {"family", familyName(u.family)},
             {"prefixes", prefixes},
             {"size", u.size.toString()},
             {"used", u.used.toString()},
             {"free", u.free.toString()},
             {"free_blocks", free_blocks},
             {"free_block_count", u.free_block_count},
             {"largest_free", u.largest_free ? json(u.largest_free->toString()) : json(nullptr)}});
      }
      json vj = json::array();
      for (const auto& v : snap->vpcs) {
        vj.push_back(vpcJson(v));
      }
      out(api::dump(json({{"store", (*store)->describe()},
                          {"revision", snap->revision},
                          {"pools", pj},
                          {"stored_vpcs", vj}}),
                    2) +
          "\n");
      return kOk;
    }
    std::ostringstream o;
    o << "Store " << (*store)->describe() << ", revision " << snap->revision << "\n";
    for (const auto& u : pools) {
      o << "\nPool " << u.pool << " (" << familyName(u.family) << ") " << prefixList(u.prefixes)
        << "\n  size " << u.size.toString() << ", used " << u.used.toString() << ", free "
        << u.free.toString() << " addresses; largest free block "
        << (u.largest_free ? u.largest_free->toString() : std::string("none")) << "\n  "
        << u.free_block_count << " free block" << (u.free_block_count == 1 ? "" : "s");
      if (!u.free_blocks.empty()) {
        o << ": " << prefixList(u.free_blocks);
        if (u.free_block_count > u.free_blocks.size()) {
          o << " (and " << u.free_block_count - u.free_blocks.size() << " more; --json)";
        }
      }
      o << "\n";
    }
    o << "\nStored VPCs: " << snap->vpcs.size() << "\n";
    for (const auto& v : snap->vpcs) {
      o << "  " << v.cloud << "/" << v.region << "/" << v.name << "  " << prefixList(v.prefixes)
        << "  " << (v.pool.empty() ? v.source : "pool " + v.pool)
        << (v.tenant.empty() ? "" : "  tenant " + v.tenant)
        << (v.site.empty() ? "" : "  site " + v.site) << "\n";
    }
    out(o.str());
    return kOk;
  }

  if (*import_) {
    std::string text;
    {
      std::ifstream in;
      std::istream* is = &std::cin;
      if (import_file_ != "-") {
        in.open(import_file_, std::ios::binary);
        if (!in) {
          err("mcgwctl: plan import: cannot read " + import_file_ + "\n");
          return kRefused;
        }
        is = &in;
      }
      // Read at most one byte past the bound, so that a larger file is
      // refused without being read whole.
      text.resize(kMaxListingBytes + 1);
      is->read(text.data(), static_cast<std::streamsize>(text.size()));
      text.resize(static_cast<size_t>(is->gcount()));
    }
    const Cloud from = *cloudFromFlag(from_);
    auto listing = parseListing(from, text, region_);
    if (!listing) {
      err("mcgwctl: plan import: " + import_file_ + ": " + listing.error().toString() + "\n");
      return kRefused;
    }
    ImportReport report;
    // The listing is checked against the store as update() reads it, so
    // what --apply adds fits the plan as it is when it is written.
    auto r = (*store)->update([&](Snapshot& s) -> Result<bool, std::string> {
      if (!apply_) {
        report = findConflicts(cfg, s, *listing);
        return false;
      }
      auto applied = applyListing(cfg, *listing, s);
      if (!applied) {
        return unexpected(applied.error());
      }
      report = std::move(*applied);
      return report.count(VpcVerdict::Status::kFits) > 0;
    });
    if (!r) {
      err("mcgwctl: plan import: " + r.error().message + "\n");
      return exitFor(r.error());
    }
    const size_t conflicts = report.count(VpcVerdict::Status::kConflicts);
    const size_t fits = report.count(VpcVerdict::Status::kFits);
    if (json_) {
      json j = toJson(report);
      j["applied"] = apply_;
      j["store"] = (*store)->describe();
      j["revision"] = r->revision;
      out(api::dump(j, 2) + "\n");
    } else {
      out(toText(report));
      out(apply_ ? (std::to_string(fits) + " VPC" + (fits == 1 ? "" : "s") + " added to " +
                    (*store)->describe() + " (revision " + std::to_string(r->revision) + ")\n")
                 : std::string("nothing written (--apply adds the VPCs that fit)\n"));
    }
    return conflicts == 0 ? kOk : kRefused;
  }
  return kOk;
}

}  // namespace mcgw::plan
