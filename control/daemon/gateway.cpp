#include "control/daemon/gateway.hpp"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "control/api/protocol.hpp"

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

std::string isoTime(std::chrono::system_clock::time_point t) {
  std::time_t tt = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// Port changes that need the device reopened rather than adjusted.
bool needsReopen(const config::PortConfig& a, const config::PortConfig& b) {
  return a.pci != b.pci || a.vdev != b.vdev || a.rx_queues != b.rx_queues ||
         a.rx_descriptors != b.rx_descriptors || a.tx_descriptors != b.tx_descriptors;
}

}  // namespace

Result<std::unique_ptr<Gateway>, std::vector<std::string>> Gateway::start(
    const std::string& path, LoadedConfig loaded, const std::string& program,
    const std::string& log_level_override) {
  const std::string log_level =
      log_level_override.empty() ? loaded.config->logging.level : log_level_override;
  std::unique_ptr<Gateway> gw(new Gateway());
  gw->path_ = path;
  gw->log_level_override_ = log_level_override;
  gw->config_ = std::move(loaded.config);
  gw->config_text_ = std::move(loaded.text);
  gw->started_at_ = gw->loaded_at_ = std::chrono::system_clock::now();
  gw->started_ = std::chrono::steady_clock::now();

  auto eal = engine::Eal::init(*gw->config_, program, log_level);
  if (!eal) {
    return unexpected(std::vector<std::string>{eal.error()});
  }
  gw->eal_ = std::move(*eal);
  for (const auto& pc : gw->config_->ports) {
    auto port = engine::Port::open(pc, gw->eal_->mempool());
    if (!port) {
      return unexpected(std::vector<std::string>{port.error()});
    }
    spdlog::info("port {}: {} opened as DPDK port {} ({})", pc.name,
                 pc.pci.empty() ? pc.vdev : pc.pci, (*port)->id(), config::toString(pc.role));
    gw->ports_.push_back(std::move(*port));
  }
  return gw;
}

Gateway::~Gateway() {
  ports_.clear();  // before the EAL goes
  eal_.reset();
}

engine::Port* Gateway::findPort(const std::string& name) const {
  for (const auto& p : ports_) {
    if (p->config().name == name) {
      return p.get();
    }
  }
  return nullptr;
}

ReloadOutcome Gateway::reload() {
  ReloadOutcome out;
  auto finish = [&](ReloadOutcome o) {
    last_reload_ = {true, o.ok, std::chrono::system_clock::now(), o.errors, o.changes};
    if (o.ok) {
      spdlog::info("reload of {}: applied {} change(s)", path_, o.changes.size());
    } else {
      spdlog::error("reload of {} refused; the running config is unchanged:", path_);
      for (const auto& e : o.errors) {
        spdlog::error("  {}", e);
      }
    }
    return o;
  };

  // Validate.
  auto loaded = loadConfig(path_);
  if (!loaded) {
    out.errors = errorLines(loaded.error());
    return finish(out);
  }
  config::ConfigPtr next = loaded->config;
  auto changes = config::diffConfigs(*config_, *next);
  for (const auto& c : changes) {
    if (c.needs_restart) {
      out.errors.push_back(c.toString() + ": this needs a restart (systemctl restart mcgw)");
    }
  }
  if (!out.errors.empty()) {
    return finish(out);
  }

  // Plan the port changes: which running ports close, which configs open,
  // which ports only change their MTU.
  std::vector<std::string> to_close;
  std::vector<const config::PortConfig*> to_open;
  std::vector<std::pair<engine::Port*, const config::PortConfig*>> in_place;
  for (const auto& c : changes) {
    if (c.section != "port") {
      continue;
    }
    const config::PortConfig* want = next->findPort(c.name);
    if (c.kind != config::ConfigChange::Kind::kAdded) {
      engine::Port* running = findPort(c.name);
      if (c.kind == config::ConfigChange::Kind::kChanged && running &&
          !needsReopen(running->config(), *want)) {
        in_place.emplace_back(running, want);
        continue;
      }
      to_close.push_back(c.name);
    }
    if (want) {
      to_open.push_back(want);
    }
  }
  std::set<std::string> held;  // devices of running ports
  for (const auto& p : ports_) {
    held.insert(p->config().deviceName());
  }

  // Apply as a transaction: every step records how to undo itself, and a
  // failure undoes the steps taken, newest first, so the old config stays in
  // force.  Devices no running port holds are opened before anything is
  // closed; devices of ports that close (renamed, swapped, new queue layout)
  // are reopened after.
  std::vector<std::function<void()>> undo;
  std::map<std::string, std::unique_ptr<engine::Port>> opened;
  auto rollback = [&](const std::string& why) {
    for (auto it = undo.rbegin(); it != undo.rend(); ++it) {
      (*it)();
    }
    sortPorts(*config_);
    out.errors.push_back(why + "; nothing was applied");
    return finish(out);
  };
  auto open = [&](const config::PortConfig& pc) -> std::optional<std::string> {
    auto port = engine::Port::open(pc, eal_->mempool());
    if (!port) {
      return port.error();
    }
    opened[pc.name] = std::move(*port);
    undo.push_back([&opened, name = pc.name] { opened.erase(name); });
    return std::nullopt;
  };
  for (const auto* pc : to_open) {
    if (!held.count(pc->deviceName())) {
      if (auto e = open(*pc)) {
        return rollback(*e);
      }
    }
  }
  for (const auto& name : to_close) {
    auto it = std::find_if(ports_.begin(), ports_.end(),
                           [&](const auto& p) { return p->config().name == name; });
    if (it == ports_.end()) {
      continue;
    }
    config::PortConfig old = (*it)->config();
    ports_.erase(it);  // stops and closes the device
    undo.push_back([this, old] {
      auto port = engine::Port::open(old, eal_->mempool());
      if (port) {
        ports_.push_back(std::move(*port));
      } else {
        spdlog::error("reload rollback: {}", port.error());
      }
    });
  }
  for (const auto* pc : to_open) {
    if (held.count(pc->deviceName())) {
      if (auto e = open(*pc)) {
        return rollback(*e);
      }
    }
  }
  for (auto& [port, want] : in_place) {
    config::PortConfig old = port->config();
    if (want->mtu != old.mtu) {
      auto r = port->setMtu(want->mtu);
      if (!r) {
        return rollback(r.error());
      }
      if (!*r) {
        spdlog::warn("port {}: the device keeps its own MTU", want->name);
      }
    }
    port->adoptConfig(*want);
    undo.push_back([port = port, old] {
      port->setMtu(old.mtu);
      port->adoptConfig(old);
    });
  }

  // Commit: nothing below can fail.
  for (auto& [name, port] : opened) {
    ports_.push_back(std::move(port));
  }
  sortPorts(*next);
  if (log_level_override_.empty()) {
    spdlog::set_level(spdlog::level::from_str(next->logging.level));
  }
  for (const auto& c : changes) {
    out.changes.push_back(c.toString());
    spdlog::info("reload: {}", c.toString());
  }
  if (changes.empty()) {
    out.changes.push_back("no changes");
  }
  config_ = next;
  config_text_ = std::move(loaded->text);
  loaded_at_ = std::chrono::system_clock::now();
  out.ok = true;
  return finish(out);
}

// Ports in the order the config lists them (rollback may have appended).
void Gateway::sortPorts(const config::Config& order) {
  std::vector<std::unique_ptr<engine::Port>> sorted;
  for (const auto& pc : order.ports) {
    for (auto& p : ports_) {
      if (p && p->config().name == pc.name) {
        sorted.push_back(std::move(p));
      }
    }
  }
  ports_ = std::move(sorted);
}

std::vector<std::string> Gateway::healthReasons(
    const std::vector<engine::PortStatus>& ports) const {
  std::vector<std::string> reasons;
  for (const auto& pc : config_->ports) {
    auto it =
        std::find_if(ports.begin(), ports.end(), [&](const auto& s) { return s.name == pc.name; });
    if (it == ports.end()) {
      reasons.push_back("port " + pc.name + " is configured but not open (see the log)");
    } else if (!it->link_up) {
      reasons.push_back("port " + pc.name + " link is down");
    }
  }
  if (last_reload_.attempted && !last_reload_.ok) {
    reasons.push_back("last reload failed at " + isoTime(last_reload_.at) +
                      "; the file on disk is not in force");
  }
  return reasons;
}

std::vector<engine::PortStatus> Gateway::portStatus() const {
  std::vector<engine::PortStatus> out;
  for (const auto& p : ports_) {
    out.push_back(p->status());
  }
  return out;
}

bool Gateway::healthy() const {
  return healthReasons(portStatus()).empty();
}

std::string Gateway::summary() const {
  auto ports = portStatus();
  size_t up = std::count_if(ports.begin(), ports.end(), [](const auto& s) { return s.link_up; });
  return std::string(healthReasons(ports).empty() ? "healthy" : "degraded") + ": " +
         std::to_string(ports.size()) + " ports (" + std::to_string(up) + " up), config " +
         config_->checksum.substr(0, 12);
}

json Gateway::status() const {
  auto statuses = portStatus();
  auto reasons = healthReasons(statuses);
  json ports = json::array();
  for (size_t i = 0; i < ports_.size(); ++i) {
    const auto& p = ports_[i];
    const engine::PortStatus& s = statuses[i];
    ports.push_back(
        {{"name", s.name},
         {"role", config::toString(p->config().role)},
         {"device", s.device},
         {"driver", s.driver},
         {"port_id", s.port_id},
         {"link",
          {{"up", s.link_up}, {"speed_mbps", s.speed_mbps}, {"full_duplex", s.full_duplex}}},
         {"mtu", s.mtu},
         {"configured_mtu", p->config().mtu},
         {"mac", s.mac},
         {"rx_queues", s.rx_queues},
         {"counters",
          {{"rx_packets", s.rx_packets},
           {"tx_packets", s.tx_packets},
           {"rx_bytes", s.rx_bytes},
           {"tx_bytes", s.tx_bytes},
           {"rx_missed", s.rx_missed},
           {"rx_errors", s.rx_errors},
           {"tx_errors", s.tx_errors},
           {"rx_nombuf", s.rx_nombuf}}}});
  }
  json last = nullptr;
  if (last_reload_.attempted) {
    last = {{"at", isoTime(last_reload_.at)},
            {"ok", last_reload_.ok},
            {"errors", last_reload_.errors},
            {"changes", last_reload_.changes}};
  }
  auto uptime =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - started_)
          .count();
  return {{"schema", api::kStatusSchema},
          {"health", {{"state", reasons.empty() ? "healthy" : "degraded"}, {"reasons", reasons}}},
          {"node", {{"name", config_->node.name}, {"site", config_->node.site}}},
          {"daemon",
           {{"version", MCGW_VERSION},
            {"pid", ::getpid()},
            {"started_at", isoTime(started_at_)},
            {"uptime_s", uptime}}},
          {"config",
           {{"file", path_},
            {"checksum", config_->checksum},
            {"loaded_at", isoTime(loaded_at_)},
            {"last_reload", last}}},
          {"ports", ports}};
}

}  // namespace mcgw::daemon
