#include "control/daemon/gateway.hpp"

#include "control/metrics/metrics.hpp"
#include "control/plan/in_force.hpp"
#include "control/policy/policy_view.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>

namespace mcgw::daemon {

using nlohmann::json;

Result<LoadedConfig, config::ConfigErrors> loadConfig(const std::string& path) {
  auto text = config::readConfigFile(path);
  if (!text) {
    return unexpected(text.error());
  }
  auto loaded = config::loadConfigText(*text, path);
  if (!loaded) {
    return unexpected(loaded.error());
  }
  // At start and at every reload (ErrorSink made them safe to print).
  for (const auto& w : (*loaded)->warnings) {
    spdlog::warn("config: {}", w.toString());
  }
  return LoadedConfig{*loaded, std::move(*text)};
}

namespace {

std::vector<std::string> errorLines(const config::ConfigErrors& errors) {
  std::vector<std::string> out;
  for (const auto& e : errors) {
    out.push_back(e.toString());
  }
  return out;
}

}  // namespace

// What VRRP needs of the other subsystems; every hook runs on the loop.
vrrp::Hooks Gateway::vrrpHooks(Gateway* g) {
  // The link now, not as of the lines' last 100 ms refresh: a LAN cut
  // must reach the remote sites (BFD held) within a VRRP interval.
  auto link = [](const engine::Port* p) { return p != nullptr && p->linkUp(); };
  auto link_of = [g, link](const std::string& port) { return link(g->ports_->find(port)); };
  return {
      .kernel_side =
          [g](const std::string& port) {
            const kernel::KernelSide* k = g->kernel_->find(port);
            return k ? vrrp::KernelSideRef{k->ifname, k->ifindex} : vrrp::KernelSideRef{};
          },
      .port_mac = [g](const std::string& port) -> std::optional<proto::Mac> {
        const engine::Port* p = g->ports_->find(port);
        return p ? std::optional<proto::Mac>(p->mac()) : std::nullopt;
      },
      .link_up = link_of,
      .tracked_up =
          [g, link_of](const config::VrrpTrack& t) {
            switch (t.kind) {
              case config::VrrpTrack::Kind::kPort:
                return link_of(t.name);
              case config::VrrpTrack::Kind::kPeer: {
                const engine::ForwardingTables* tables = g->dataplane_->tables();
                if (!tables) {
                  return false;
                }
                return std::any_of(
                    tables->lines.begin(), tables->lines.end(), [&](const engine::LineEntry& l) {
                      return l.peer == t.name && l.resolved && g->dataplane_->lineUp(l.slot);
                    });
              }
              case config::VrrpTrack::Kind::kBgp:
                // Unknown (FRR not asked yet) counts as down: a gateway
                // whose sessions are not up yet does not take over.
                return g->frr_->sessionEstablished(t.name).value_or(false);
              case config::VrrpTrack::Kind::kFpm:
                return g->frr_->fpmConnected();
            }
            return true;
          },
      .set_virtual_macs =
          [g](const std::string& port, const std::vector<proto::Mac>& macs) {
            if (auto r = g->ports_->setVirtualMacs(port, macs); !r) {
              spdlog::error("vrrp: port {}: {}", port, r.error());
            }
          },
      .bgp_standing =
          [g](const vrrp::BgpStanding& s) {
            frr::BgpStanding f;
            f.mode = s.mode == vrrp::BgpStanding::Mode::kPrepend ? frr::BgpStanding::Mode::kPrepend
                     : s.mode == vrrp::BgpStanding::Mode::kWithdraw
                         ? frr::BgpStanding::Mode::kWithdraw
                         : frr::BgpStanding::Mode::kActive;
            f.prepend = std::max<uint8_t>(1, s.prepend);
            g->frr_->setStanding(f);
          },
      .site_reachable = [g](bool reachable) { g->kernel_->setSiteReachable(reachable); },
      .accepted_addresses =
          [g](const std::vector<config::IpAddress>& addresses) {
            g->kernel_->setAcceptedAddresses(addresses);
            if (auto r = g->forwarding_->setAccepted(*g->config_, addresses); !r) {
              spdlog::error("vrrp accept mode: {}", r.error());
            }
          },
  };
}

Result<std::unique_ptr<Gateway>, std::vector<std::string>> Gateway::start(
    const std::string& path, LoadedConfig loaded, const std::string& program,
    StartOptions options) {
  auto fail = [](std::string why) { return unexpected(std::vector<std::string>{std::move(why)}); };
  const std::string log_level = options.log_level_override.empty() ? loaded.config->logging.level
                                                                   : options.log_level_override;
  std::unique_ptr<Gateway> gw(new Gateway());
  gw->path_ = path;
  gw->log_level_override_ = options.log_level_override;
  gw->last_good_ = std::make_unique<LastGoodStore>(options.state_dir, path);
  gw->fallback_ = std::move(options.fallback);
  gw->state_dir_ = options.state_dir;
  gw->file_config_ = loaded.config;
  gw->config_ = std::move(loaded.config);
  gw->config_text_ = std::move(loaded.text);
  // The address plan's store: its VPCs join the file's before anything
  // starts (the cached copy when the store does not answer).
  if (auto store = plan::openStoreFor(*gw->file_config_); !store) {
    return fail(store.error());
  } else if (*store) {
    auto first =
        plan::firstSnapshot(**store, plan::cachePath(gw->state_dir_, (*store)->describe()));
    if (auto merged = plan::inForce(*gw->file_config_, first.snapshot); merged) {
      gw->config_ = *merged;
    } else {
      spdlog::error(
          "address plan: store revision {} conflicts with {}; starting with the "
          "file's plan alone:",
          first.snapshot.revision, path);
      for (const auto& e : merged.error()) {
        spdlog::error("  {}", e);
      }
      first.snapshot = plan::Snapshot{};
      first.cached.clear();
    }
    gw->plan_ =
        std::make_unique<plan::PlanFollower>(std::move(*store), std::move(first.snapshot),
                                             std::move(first.error), std::move(first.cached));
  }
  gw->started_at_ = gw->loaded_at_ = std::chrono::system_clock::now();
  gw->started_ = std::chrono::steady_clock::now();

  auto eal = engine::Eal::init(*gw->config_, program, log_level);
  if (!eal) {
    return fail(eal.error());
  }
  gw->eal_ = std::move(*eal);
  auto dp = engine::Dataplane::start(gw->config_->eal.workers, gw->eal_->mempool());
  if (!dp) {
    return fail(dp.error());
  }
  gw->dataplane_ = std::move(*dp);
  auto ports =
      ports::PortSet::open(gw->config_, gw->eal_->mempool(),
                           static_cast<uint16_t>(gw->dataplane_->workers()), gw->dataplane_.get());
  if (!ports) {
    return fail(ports.error());
  }
  gw->ports_ = std::move(*ports);
  gw->kernel_ = std::make_unique<kernel::KernelSides>(*gw->ports_, gw->config_);
  auto neighbors = kernel::NeighborResolver::open(*gw->kernel_, *gw->dataplane_, gw->config_);
  if (!neighbors) {
    return fail(neighbors.error());
  }
  gw->neighbors_ = std::move(*neighbors);
  gw->lines_ = std::make_unique<lines::UnderlayLines>(*gw->dataplane_, *gw->ports_, gw->config_);
  gw->forwarding_ = std::make_unique<ForwardingState>(*gw->dataplane_, *gw->ports_, *gw->kernel_,
                                                      *gw->neighbors_, *gw->lines_);
  Gateway* g = gw.get();
  gw->frr_ = std::make_unique<frr::FrrRouting>(
      gw->config_,
      [g](std::span<const engine::RouteUpdate> updates) {
        return g->forwarding_->applyRoutes(updates);
      },
      [g] {
        if (const engine::ForwardingTables* t = g->dataplane_->tables()) {
          g->lines_->refresh(*t);
        }
      });
  gw->frr_->setRouteLister([g] {
    engine::RouteFilter f;
    f.source = engine::RouteSource::kFrr;
    return g->forwarding_->routes(SIZE_MAX, f);
  });
  gw->frr_->setWanInterfaces([g] {
    std::vector<std::string> out;
    for (const auto& pc : g->config_->ports) {
      if (pc.role == config::PortRole::kWan) {
        if (const kernel::KernelSide* k = g->kernel_->find(pc.name)) {
          out.push_back(k->ifname);
        }
      }
    }
    return out;
  });
  gw->frr_->setPortsByIfindex([g] {
    frr::PortsByIfindex out;
    for (const auto& [port, side] : g->kernel_->sides()) {
      if (side.ifindex > 0) {
        out[static_cast<uint32_t>(side.ifindex)] = port;
      }
    }
    return out;
  });
  // A line whose BFD session to the peer gateway is down is not used.
  gw->lines_->addStateInput(
      {"bfd", [g](const engine::LineEntry& l, const engine::ForwardingTables&) {
         return g->frr_->lineUp(l.peer, l.name);
       }});
  gw->ports_->setHooks({
      .withdraw =
          [g](const std::set<std::string>& closing) {
            return g->forwarding_->publish(*g->config_, g->forwarding_->openPorts(closing));
          },
      .closing = [g](const std::string& name) { g->kernel_->forget(name); },
  });
  // A change in the kernel neighbour table: the tables take the new MACs.
  gw->neighbors_->setOnChange([g] {
    if (auto r = g->forwarding_->updateNeighbors(*g->config_); !r) {
      spdlog::error("neighbour change: {}", r.error());
    }
  });
  gw->vrrp_ = std::make_unique<vrrp::VrrpService>(gw->config_, vrrpHooks(g));
  gw->kernel_->setSiteReachable(gw->vrrp_->siteReachableNow());
  gw->capture_ = std::make_unique<capture::CaptureService>(gw->config_, *gw->dataplane_);
  gw->flows_ = std::make_unique<flows::FlowAudit>(gw->config_, *gw->dataplane_);
  gw->policy_ =
      std::make_unique<policyview::PolicyService>(gw->config_, *gw->dataplane_, gw->state_dir_);
  gw->forwarding_->setBeforePublish([g] { g->policy_->sampleUsage(); });
  gw->encryption_ = std::make_unique<encryption::EncryptionService>(
      gw->config_, gw->dataplane_->workers(), gw->state_dir_, [g] {
        auto r = g->forwarding_->publish(*g->config_);
        if (!r) {
          spdlog::warn("encryption: the new SAs wait for the next table build: {}", r.error());
        }
        return static_cast<bool>(r);
      });
  if (auto r = gw->encryption_->start(); !r) {
    return fail(r.error());
  }
  gw->forwarding_->setSaSource([g] { return g->encryption_->sas(); });
  gw->metrics_ = std::make_unique<metrics::MetricsService>(gw->config_, [g] {
    metrics::CollectExtras x;
    x.file_differs = g->file_watch_.differs(g->path_, g->file_config_->checksum);
    return metrics::collect(g->state(), g->facts(), x);
  });
  gw->kernel_->setUp();
  gw->kernel_->removeStaleAcceptedAddresses();
  gw->neighbors_->keepNextHopsResolved();
  if (auto r = gw->forwarding_->publish(*gw->config_); !r) {
    return fail(r.error());
  }
  gw->policy_->refresh();  // the meters of the first tables' (tenant, line) pairs
  spdlog::info("fast path: {} worker(s), {} tunnel(s), {} line(s)", gw->dataplane_->workers(),
               gw->dataplane_->tables()->tunnels.size(), gw->dataplane_->tables()->lines.size());
  return gw;
}

Gateway::~Gateway() {
  metrics_.reset();     // no scrape reads the subsystems from here on
  capture_.reset();     // its callbacks leave the ports before they close
  flows_.reset();       // its last records exported while the tables are there
  encryption_.reset();  // its key agreement's connections and loop sources
  vrrp_.reset();
  frr_.reset();  // its sources and sockets first
  lines_.reset();
  dataplane_.reset();   // workers stop before their ports close
  forwarding_.reset();  // the FIBs and the neighbour table (DPDK memory), before the EAL goes
  if (kernel_) {
    kernel_->clear();  // TAPs
  }
  if (ports_) {
    ports_->clear();  // before the EAL goes
  }
  eal_.reset();
  neighbors_.reset();  // removes the kernel entries it created
}

api::GatewayState Gateway::state() const {
  return {*config_,       *dataplane_,  *ports_,           *kernel_,         *neighbors_,
          *lines_,        *forwarding_, frr_.get(),        plan_.get(),      vrrp_.get(),
          capture_.get(), flows_.get(), encryption_.get(), &policy_->usage()};
}

DaemonFacts Gateway::facts() const {
  return {MCGW_VERSION,       path_,
          started_at_,        started_,
          loaded_at_,         last_reload_,
          last_good_->path(), last_good_->savedAt(),
          last_good_error_,   fallback_,
          generation_,        reloads_ok_,
          reloads_failed_,    metrics_ ? metrics_->facts() : MetricsFacts{},
          https_problem_};
}

std::vector<Subsystem*> Gateway::subsystems() const {
  // FRR before the forwarding tables: its prepare can fail (a new FPM
  // address), theirs must be the last that can.
  // The capture first: a reload that closes a captured port ends it before.
  // Metrics and the flow audit can fail too (a listen address or a
  // collector that cannot be opened): before the forwarding tables.
  // Encryption before the tables: they are built with its prepared SAs.
  return {capture_.get(), ports_.get(),  lines_.get(),      frr_.get(),
          metrics_.get(), flows_.get(),  encryption_.get(), forwarding_.get(),
          policy_.get(),  kernel_.get(), neighbors_.get(),  vrrp_.get()};
}

void Gateway::attach(core::EventLoop& loop) {
  loop_ = &loop;
  neighbors_->attach(loop);
  lines_->attach(loop);
  frr_->attach(loop);
  vrrp_->attach(loop);
  metrics_->attach(loop);
  flows_->attach(loop);
  policy_->attach(loop);
  encryption_->attach(loop);
  capture_->attach(loop);
}

void Gateway::stop() {
  policy_->closeUsage();   // the last usage records written
  vrrp_->shutdown();       // priority 0: the Backup takes over after its skew time
  frr_->withdrawOnStop();  // and the remote sites route around this gateway
}

void Gateway::setPaused(bool paused) {
  neighbors_->setPaused(paused);
  lines_->setPaused(paused);
  frr_->setPaused(paused);
  vrrp_->setPaused(paused);
  metrics_->setPaused(paused);
  capture_->setPaused(paused);
  flows_->setPaused(paused);
  policy_->setPaused(paused);
  encryption_->setPaused(paused);
  if (plan_) {
    plan_->setPaused(paused);
  }
}

void Gateway::followPlan(std::function<void(const plan::Snapshot&)> on_change) {
  if (plan_ && loop_) {
    plan_->attach(*loop_, std::move(on_change));
  }
}

std::optional<plan::Snapshot> Gateway::pendingPlan() const {
  return plan_ ? plan_->pending() : std::nullopt;
}

void Gateway::cachePlan(const plan::Snapshot& snapshot) {
  if (!plan_) {
    return;
  }
  if (auto r = plan::writeCache(plan::cachePath(state_dir_, plan_->store().describe()), snapshot);
      !r) {
    spdlog::warn("address plan: cannot keep a copy of revision {}: {}", snapshot.revision,
                 r.error());
  }
}

ReloadOutcome Gateway::adoptPlan(const plan::Snapshot& snapshot) {
  spdlog::info("address plan: applying store revision {} ({} stored VPCs)", snapshot.revision,
               snapshot.vpcs.size());
  ReloadOutcome out = reloadWith({file_config_, config_text_}, snapshot, false);
  if (out.ok) {
    cachePlan(snapshot);
  }
  return out;
}

void Gateway::planApplied(const plan::Snapshot& snapshot, const ReloadOutcome* outcome) {
  if (!plan_) {
    return;
  }
  if (outcome && outcome->ok) {
    plan_->adopted(snapshot);
  } else {
    plan_->refused(snapshot, outcome
                                 ? outcome->errors
                                 : std::vector<std::string>{"applying it failed (see the log)"});
  }
}

Result<std::string, std::string> Gateway::setLineAdmin(const std::string& peer,
                                                       const std::string& line, bool up) {
  auto r = lines_->setAdmin(peer, line, up);
  if (r) {
    if (const engine::ForwardingTables* t = dataplane_->tables()) {
      lines_->refresh(*t);  // now, not at the next refresh
    }
  }
  return r;
}

void Gateway::saveLastGood() {
  if (auto r = last_good_->save(config_text_); !r) {
    if (last_good_error_ != r.error()) {
      spdlog::error("last good config: {}", r.error());
    }
    last_good_error_ = r.error();
  } else {
    if (!last_good_error_.empty()) {
      spdlog::info("last good config: saved to {} again", last_good_->path());
    }
    last_good_error_.clear();
  }
}

ReloadOutcome Gateway::finish(ReloadOutcome o, const plan::Snapshot* store_revision,
                              const std::string& live) {
  const std::string what =
      !live.empty()    ? live
      : store_revision ? "address plan store revision " + std::to_string(store_revision->revision)
                       : "reload of " + path_;
  if (o.ok) {
    o.summary = o.changes.empty() ? "no changes"
                                  : "applied " + std::to_string(o.changes.size()) + " change" +
                                        (o.changes.size() == 1 ? "" : "s");
    spdlog::info("{}: {}", what, o.summary);
  } else {
    o.summary = "refused (" + std::to_string(o.errors.size()) + " error" +
                (o.errors.size() == 1 ? "" : "s") + "); the running config is unchanged";
    spdlog::error("{} {}:", what, o.summary);
    for (const auto& e : o.errors) {
      spdlog::error("  {}", e);
    }
  }
  // A store revision's outcome is the plan's to show (status address_plan).
  if (!store_revision && live.empty()) {
    last_reload_ = {true, o.ok, std::chrono::system_clock::now(), o.errors, o.changes};
    ++(o.ok ? reloads_ok_ : reloads_failed_);
  }
  return o;
}

void Gateway::restoreAfterAbort() {
  kernel_->setUp();
  neighbors_->keepNextHopsResolved();
  if (auto r = forwarding_->publish(*config_); !r) {
    spdlog::error("reload rollback: {}", r.error());
  }
}

// load → validate → plan → prepare each subsystem (a failure aborts those
// prepared, newest first) → apply each → commit.
ReloadOutcome Gateway::reload() {
  ReloadOutcome out;
  auto loaded = loadConfig(path_);
  if (!loaded) {
    out.errors = errorLines(loaded.error());
    return finish(out);
  }
  // Live rules stay over the new file while their tenants exist.
  std::vector<std::string> ended;
  if (!liveRulesOver(*loaded, out.errors, ended)) {
    return finish(out);
  }
  out = reloadWith(std::move(*loaded), plan_ ? plan_->snapshot() : plan::Snapshot{}, true);
  if (out.ok) {
    liveRulesEnded(ended);
  }
  return out;
}

ReloadOutcome Gateway::reloadWith(LoadedConfig loaded, const plan::Snapshot& snapshot,
                                  bool file_read, const std::string& live) {
  ReloadOutcome out;
  // What the outcome is logged as: the file's reload, or the store's revision.
  const plan::Snapshot* as = file_read || !live.empty() ? nullptr : &snapshot;
  // The follower is made at start: adding, removing or changing the store
  // it follows needs a restart.
  if (plan::storeSettings(*loaded.config) != plan::storeSettings(*file_config_)) {
    out.errors.push_back(
        "address-plan.store changed (or pools were added to or removed from a plan without "
        "etcd): the store a gateway follows is chosen at start; restart to change it "
        "(systemctl restart mcgw)");
    return finish(out, as, live);
  }
  auto in_force = plan::inForce(*loaded.config, snapshot);
  if (!in_force) {
    for (const auto& e : in_force.error()) {
      out.errors.push_back("address plan store revision " + std::to_string(snapshot.revision) +
                           ": " + e);
    }
    return finish(out, as, live);
  }
  config::ConfigPtr next = *in_force;
  const std::vector<Subsystem*> order = subsystems();
  out.errors = validateAll(order, *next);
  if (!out.errors.empty()) {
    return finish(out, as, live);
  }
  ReloadPlan rp = planReload(*config_, *next);
  rp.next = next;
  if (!rp.restart_required.empty()) {
    out.errors = rp.restart_required;
    return finish(out, as, live);
  }
  if (auto r = prepareAndApply(order, rp); !r) {
    restoreAfterAbort();
    out.errors.push_back(r.error() + "; nothing was applied");
    return finish(out, as, live);
  }

  // Commit: nothing below can fail.  The kernel sides of new ports exist
  // now, so their TAPs join the tables.
  config_ = next;
  file_config_ = loaded.config;
  if (auto r = forwarding_->publish(*config_); !r) {
    spdlog::error("reload: {}", r.error());
  }
  if (log_level_override_.empty()) {
    spdlog::set_level(spdlog::level::from_str(next->logging.level));
  }
  for (const auto& c : rp.changes) {
    out.changes.push_back(c.toString());
    spdlog::info("{}: {}", live.empty() ? "reload" : live, c.toString());
  }
  config_text_ = std::move(loaded.text);
  loaded_at_ = std::chrono::system_clock::now();
  ++generation_;
  if (fallback_ && file_read) {
    spdlog::warn("reload of {}: the file is valid again; the last good copy is no longer in force",
                 path_);
    fallback_.reset();
  }
  saveLastGood();
  out.ok = true;
  return finish(out, as, live);
}

bool Gateway::healthy() const {
  return api::healthReasons(state(), facts(), ports_->status()).empty();
}

std::string Gateway::summary() const {
  auto ports = ports_->status();
  size_t up = std::count_if(ports.begin(), ports.end(), [](const auto& s) { return s.link_up; });
  return std::string(api::healthReasons(state(), facts(), ports).empty() ? "healthy" : "degraded") +
         ": " + std::to_string(ports.size()) + " ports (" + std::to_string(up) + " up), config " +
         config_->checksum.substr(0, 12);
}

json Gateway::status() const {
  return api::statusView(state(), facts());
}
json Gateway::tunnels() const {
  return api::tunnelsView(state());
}
json Gateway::routes(const engine::RouteFilter& filter) const {
  return api::routesView(state(), filter);
}
json Gateway::policy(const std::string& tenant) const {
  const engine::CountersSnapshot c = dataplane_->counters();
  json v = policyview::policyView(dataplane_->tables(), c, tenant);
  for (auto& t : v["tenants"]) {
    t["bandwidth"] = policy_->bandwidthView(c, t["name"].get<std::string>());
    t["rules_source"] = rulesSource(t["name"].get<std::string>());
  }
  return v;
}

json Gateway::counters() const {
  return api::countersView(state());
}
json Gateway::neighbors() const {
  return api::neighborsView(state());
}

}  // namespace mcgw::daemon
