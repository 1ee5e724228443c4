#include "control/daemon/gateway.hpp"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <fstream>
#include <map>
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
    const std::string& log_level) {
  std::unique_ptr<Gateway> gw(new Gateway());
  gw->path_ = path;
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

  auto loaded = loadConfig(path_);
  if (!loaded) {
    out.errors = errorLines(loaded.error());
    return finish(out);
  }
  config::ConfigPtr next = loaded->config;
  auto changes = config::diffConfigs(*config_, *next);
  for (const auto& c : changes) {
    if (c.needs_restart) {
      out.errors.push_back(c.section + " changed (" + c.detail +
                           "): this needs a restart (systemctl restart mcgw); nothing was applied");
    }
  }
  if (!out.errors.empty()) {
    return finish(out);
  }

  // Prepare: open the ports that are new, or whose device must be reopened
  // and is a different device.  Any failure undoes everything opened so far.
  std::map<std::string, std::unique_ptr<engine::Port>> opened;
  for (const auto& c : changes) {
    if (c.section != "port") {
      continue;
    }
    const config::PortConfig* want = next->findPort(c.name);
    const config::PortConfig* have = config_->findPort(c.name);
    bool open_new = c.kind == config::ConfigChange::Kind::kAdded ||
                    (c.kind == config::ConfigChange::Kind::kChanged && needsReopen(*have, *want) &&
                     have->deviceName() != want->deviceName());
    if (!open_new) {
      continue;
    }
    auto port = engine::Port::open(*want, eal_->mempool());
    if (!port) {
      out.errors.push_back(port.error() + "; nothing was applied");
      return finish(out);  // `opened` closes what it holds
    }
    opened[c.name] = std::move(*port);
  }

  // Commit.
  for (const auto& c : changes) {
    out.changes.push_back(c.toString());
    spdlog::info("reload: {}", c.toString());
    if (c.section == "port") {
      const config::PortConfig* want = next->findPort(c.name);
      if (c.kind == config::ConfigChange::Kind::kRemoved) {
        std::erase_if(ports_, [&](const auto& p) { return p->config().name == c.name; });
      } else if (opened.count(c.name)) {
        std::erase_if(ports_, [&](const auto& p) { return p->config().name == c.name; });
        ports_.push_back(std::move(opened[c.name]));
      } else if (engine::Port* port = findPort(c.name)) {
        if (needsReopen(port->config(), *want)) {
          // Same device, new queue layout: it has to be closed first.
          std::erase_if(ports_, [&](const auto& p) { return p->config().name == c.name; });
          auto reopened = engine::Port::open(*want, eal_->mempool());
          if (!reopened) {
            spdlog::error("reload: {}", reopened.error());
            out.errors.push_back(reopened.error());
            continue;
          }
          ports_.push_back(std::move(*reopened));
        } else {
          if (want->mtu != port->config().mtu) {
            auto r = port->setMtu(want->mtu);
            if (!r) {
              out.errors.push_back(r.error());
            } else if (!*r) {
              spdlog::warn("port {}: the device keeps its own MTU", c.name);
            }
          }
          port->adoptConfig(*want);
        }
      }
    } else if (c.section == "logging") {
      spdlog::set_level(spdlog::level::from_str(next->logging.level));
    }
  }
  // Keep the ports in config order.
  std::vector<std::unique_ptr<engine::Port>> ordered;
  for (const auto& pc : next->ports) {
    for (auto& p : ports_) {
      if (p && p->config().name == pc.name) {
        ordered.push_back(std::move(p));
      }
    }
  }
  ports_ = std::move(ordered);

  config_ = next;
  config_text_ = std::move(loaded->text);
  loaded_at_ = std::chrono::system_clock::now();
  out.ok = out.errors.empty();
  if (changes.empty()) {
    out.changes.push_back("no changes");
  }
  return finish(out);
}

std::vector<std::string> Gateway::healthReasons() const {
  std::vector<std::string> reasons;
  for (const auto& p : ports_) {
    if (!p->status().link_up) {
      reasons.push_back("port " + p->config().name + " link is down");
    }
  }
  if (last_reload_.attempted && !last_reload_.ok) {
    reasons.push_back("last reload failed at " + isoTime(last_reload_.at) +
                      "; the file on disk is not in force");
  }
  return reasons;
}

bool Gateway::healthy() const {
  return healthReasons().empty();
}

std::string Gateway::summary() const {
  size_t up = 0;
  for (const auto& p : ports_) {
    up += p->status().link_up ? 1 : 0;
  }
  return std::string(healthy() ? "healthy" : "degraded") + ": " + std::to_string(ports_.size()) +
         " ports (" + std::to_string(up) + " up), config " + config_->checksum.substr(0, 12);
}

json Gateway::status() const {
  auto reasons = healthReasons();
  json ports = json::array();
  for (const auto& p : ports_) {
    engine::PortStatus s = p->status();
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
