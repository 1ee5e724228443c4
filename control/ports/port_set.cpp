#include "control/ports/port_set.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "ebpf/xdp_maps.hpp"

namespace mcgw::ports {

namespace {

// The af_xdp PMD loads mcgw's XDP program unless the operator named one.
std::string extraDevargs(const config::PortConfig& pc) {
  if (pc.vdev.rfind("net_af_xdp", 0) == 0 && pc.vdev.find("xdp_prog=") == std::string::npos) {
    return ",xdp_prog=" + ebpf::defaultXdpObjectPath();
  }
  return "";
}

}  // namespace

Result<std::unique_ptr<PortSet>, std::string> PortSet::open(config::ConfigPtr config,
                                                            rte_mempool* pool, uint16_t tx_queues) {
  std::unique_ptr<PortSet> set(new PortSet());
  set->config_ = std::move(config);
  set->pool_ = pool;
  set->tx_queues_ = tx_queues;
  for (const auto& pc : set->config_->ports) {
    auto port = engine::Port::open(pc, pool, tx_queues, extraDevargs(pc));
    if (!port) {
      return unexpected(port.error());
    }
    spdlog::info("port {}: {} opened as DPDK port {} ({})", pc.name,
                 pc.pci.empty() ? pc.vdev : pc.pci, (*port)->id(), config::toString(pc.role));
    set->ports_.push_back(std::move(*port));
  }
  return set;
}

engine::Port* PortSet::find(const std::string& name) const {
  for (const auto& p : ports_) {
    if (p->config().name == name) {
      return p.get();
    }
  }
  return nullptr;
}

std::vector<engine::PortStatus> PortSet::status() const {
  std::vector<engine::PortStatus> out;
  for (const auto& p : ports_) {
    out.push_back(p->status());
  }
  return out;
}

Result<bool, std::string> PortSet::openPrepared(const config::PortConfig& pc) {
  auto port = engine::Port::open(pc, pool_, tx_queues_, extraDevargs(pc));
  if (!port) {
    return unexpected(port.error());
  }
  opened_[pc.name] = std::move(*port);
  undo_.push_back([this, name = pc.name] { opened_.erase(name); });
  return true;
}

Result<bool, std::string> PortSet::prepare(const daemon::ReloadPlan& plan) {
  next_ = plan.next;
  undo_.clear();
  opened_.clear();
  auto r = prepareSteps(plan);
  if (!r) {
    abort();  // the steps taken so far, newest first
  }
  return r;
}

// Devices no running port holds are opened before anything is closed;
// devices of ports that close are reopened after.  Every step records how
// to undo itself.
Result<bool, std::string> PortSet::prepareSteps(const daemon::ReloadPlan& plan) {
  std::vector<std::string> to_close;
  std::vector<const config::PortConfig*> to_open;
  std::vector<std::pair<engine::Port*, const config::PortConfig*>> in_place;
  for (const auto& name : plan.close) {
    to_close.push_back(name);
  }
  for (const auto& name : plan.open) {
    to_open.push_back(next_->findPort(name));
  }
  for (const auto& name : plan.adjust) {
    const config::PortConfig* want = next_->findPort(name);
    if (engine::Port* running = find(name)) {
      in_place.emplace_back(running, want);
    } else {
      to_open.push_back(want);  // not open (a rollback could not reopen it)
    }
  }
  std::set<std::string> held;  // devices of running ports
  for (const auto& p : ports_) {
    held.insert(p->config().deviceName());
  }

  for (const auto* pc : to_open) {
    if (!held.count(pc->deviceName())) {
      if (auto r = openPrepared(*pc); !r) {
        return r;
      }
    }
  }
  // Workers stop using the ports that close (RCU) before they close; the
  // other ports forward throughout.
  if (!to_close.empty()) {
    std::set<std::string> closing(to_close.begin(), to_close.end());
    if (auto r = hooks_.withdraw(closing); !r) {
      return r;
    }
  }
  for (const auto& name : to_close) {
    auto it = std::find_if(ports_.begin(), ports_.end(),
                           [&](const auto& p) { return p->config().name == name; });
    if (it == ports_.end()) {
      continue;
    }
    config::PortConfig old = (*it)->config();
    hooks_.closing(name);
    ports_.erase(it);  // stops and closes the device
    undo_.push_back([this, old] {
      auto port = engine::Port::open(old, pool_, tx_queues_, extraDevargs(old));
      if (port) {
        ports_.push_back(std::move(*port));
      } else {
        spdlog::error("reload rollback: {}", port.error());
      }
    });
  }
  for (const auto* pc : to_open) {
    if (held.count(pc->deviceName())) {
      if (auto r = openPrepared(*pc); !r) {
        return r;
      }
    }
  }
  for (auto& [port, want] : in_place) {
    config::PortConfig old = port->config();
    if (want->mtu != old.mtu) {
      auto r = port->setMtu(want->mtu);
      if (!r) {
        return unexpected(r.error());
      }
      if (!*r) {
        spdlog::warn("port {}: the device keeps its own MTU", want->name);
      }
    }
    port->adoptConfig(*want);
    undo_.push_back([port = port, old] {
      if (auto r = port->setMtu(old.mtu); !r) {
        spdlog::error("port {}: cannot restore MTU {}: {}", old.name, old.mtu, r.error());
      }
      port->adoptConfig(old);
    });
  }
  return true;
}

void PortSet::apply() {
  for (auto& [name, port] : opened_) {
    ports_.push_back(std::move(port));
  }
  opened_.clear();
  undo_.clear();
  config_ = std::move(next_);
  sortBy(*config_);
}

void PortSet::abort() {
  for (auto it = undo_.rbegin(); it != undo_.rend(); ++it) {
    (*it)();
  }
  undo_.clear();
  opened_.clear();
  next_.reset();
  sortBy(*config_);
}

// Ports in the order the config lists them (a rollback may have appended).
void PortSet::sortBy(const config::Config& order) {
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

}  // namespace mcgw::ports
