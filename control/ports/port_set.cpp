#include "control/ports/port_set.hpp"

#include <net/if.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>

#include "control/kernel/netlink.hpp"
#include "dataplane/engine/dataplane.hpp"
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

std::string macText(const engine::Mac& m) {
  char buf[18];
  std::snprintf(buf, sizeof buf, "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4],
                m[5]);
  return buf;
}

bool contains(const std::vector<engine::Mac>& v, const engine::Mac& m) {
  return std::find(v.begin(), v.end(), m) != v.end();
}

// Before the af_xdp PMD loads mcgw's program: one that a killed mcgwd left
// attached would make it fail (and, without DPDK's sockets, drops BGP and
// BFD to this gateway until it is gone).
void removeStaleXdpProgram(const config::PortConfig& pc) {
  if (extraDevargs(pc).empty()) {
    return;  // not af_xdp, or the operator's own program
  }
  const std::string iface = pc.kernelInterface();
  auto r = ebpf::detachStaleProgram(iface);
  if (!r) {
    spdlog::warn("port {}: {}", pc.name, r.error());
  } else if (*r) {
    spdlog::warn(
        "port {}: removed the XDP program a previous mcgwd left on {} (it ended "
        "without closing its ports)",
        pc.name, iface);
  }
}

}  // namespace

Result<std::unique_ptr<PortSet>, std::string> PortSet::open(config::ConfigPtr config,
                                                            rte_mempool* pool, uint16_t tx_queues,
                                                            engine::Dataplane* dataplane) {
  std::unique_ptr<PortSet> set(new PortSet());
  set->config_ = std::move(config);
  set->pool_ = pool;
  set->tx_queues_ = tx_queues;
  set->dataplane_ = dataplane;
  for (const auto& pc : set->config_->ports) {
    removeStaleXdpProgram(pc);
    auto port = engine::Port::open(pc, pool, tx_queues, extraDevargs(pc));
    if (!port) {
      return unexpected(port.error());
    }
    spdlog::info("port {}: {} opened as DPDK port {} ({})", pc.name,
                 pc.pci.empty() ? pc.vdev : pc.pci, (*port)->id(), config::toString(pc.role));
    set->ports_.push_back(std::move(*port));
    set->removeStaleVirtualMacs(pc);
  }
  return set;
}

// A gateway killed while Active leaves its virtual MACs on the kernel
// interface's unicast list; a new process starts without them (as Backup),
// so it removes those of the groups configured on the port.
void PortSet::removeStaleVirtualMacs(const config::PortConfig& pc) const {
  const std::string iface = pc.kernelInterface();
  const int ifindex = iface.empty() ? 0 : static_cast<int>(if_nametoindex(iface.c_str()));
  if (ifindex == 0) {
    return;
  }
  for (const auto& g : config_->vrrp_groups) {
    if (g.port != pc.name) {
      continue;
    }
    const engine::Mac m{0x00,  0x00, 0x5e, 0x00, static_cast<uint8_t>(g.ipv6() ? 0x02 : 0x01),
                        g.vrid};
    if (auto r = kernel::rtnl::deleteUnicastAddress(ifindex, m); !r) {
      spdlog::warn("port {}: stale virtual MAC {}: {}", pc.name, macText(m), r.error());
    }
  }
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
  // A running port on the same interface holds the program there: it is
  // live, not stale (the open then fails and the reload is refused).
  const bool held = std::any_of(ports_.begin(), ports_.end(), [&](const auto& p) {
    return p->config().kernelInterface() == pc.kernelInterface();
  });
  if (!held) {
    removeStaleXdpProgram(pc);
  }
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
    forgetVirtualMacs(**it, true);
    ports_.erase(it);  // stops and closes the device
    undo_.push_back([this, old] {
      auto port = engine::Port::open(old, pool_, tx_queues_, extraDevargs(old));
      if (port) {
        restoreVirtualMacs(**port);
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
    restoreVirtualMacs(*port);
    ports_.push_back(std::move(port));
  }
  opened_.clear();
  undo_.clear();
  config_ = std::move(next_);
  for (auto it = virtual_macs_.begin(); it != virtual_macs_.end();) {
    it = config_->findPort(it->first) ? std::next(it) : virtual_macs_.erase(it);
  }
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
  for (auto& p : ports_) {
    if (p) {  // not in the config: it closes now
      forgetVirtualMacs(*p, true);
    }
  }
  ports_ = std::move(sorted);
}

PortSet::~PortSet() {
  clear();
}

void PortSet::clear() {
  for (auto& p : ports_) {
    forgetVirtualMacs(*p, false);
  }
  ports_.clear();
}

Result<bool, std::string> PortSet::setVirtualMacs(const std::string& port,
                                                  std::span<const engine::Mac> macs) {
  std::vector<engine::Mac> want;
  for (const engine::Mac& m : macs) {
    if ((m[0] & 1) || m == engine::Mac{}) {
      return unexpected("port " + port + ": " + macText(m) +
                        " cannot be a virtual MAC (group or zero address)");
    }
    if (!contains(want, m)) {
      want.push_back(m);
    }
  }
  if (want.size() > engine::kMaxVirtualMacs) {
    return unexpected("port " + port + ": " + std::to_string(want.size()) +
                      " virtual MACs, at most " + std::to_string(engine::kMaxVirtualMacs));
  }
  engine::Port* running = find(port);
  if (!running && !config_->findPort(port) && !(next_ && next_->findPort(port))) {
    return unexpected("no port " + port);
  }
  if (want.empty()) {
    virtual_macs_.erase(port);
  } else {
    virtual_macs_[port] = want;
  }
  if (!running) {
    return true;  // kept for when the port opens
  }
  return program(*running, want);
}

std::vector<engine::Mac> PortSet::virtualMacs(const std::string& port) const {
  auto it = virtual_macs_.find(port);
  return it == virtual_macs_.end() ? std::vector<engine::Mac>{} : it->second;
}

// New MACs go on the device and kernel interface before the workers take
// them; MACs that go leave the workers' set before the filters.
Result<bool, std::string> PortSet::program(engine::Port& port, const std::vector<engine::Mac>& macs,
                                           bool with_dataplane) {
  const std::string& name = port.config().name;
  Programmed& done = programmed_[&port];
  std::vector<std::string> errors;
  const std::string iface = port.config().kernelInterface();
  int ifindex = 0;
  if (!iface.empty()) {
    ifindex = static_cast<int>(if_nametoindex(iface.c_str()));
    if (ifindex == 0) {
      errors.push_back("kernel interface " + iface + " not found");
    }
  }
  auto device = [&](const engine::Mac& m, bool add) {
    if (done.no_device_filter) {
      return;
    }
    rte_ether_addr a;
    std::copy(m.begin(), m.end(), a.addr_bytes);
    const int rc = add ? rte_eth_dev_mac_addr_add(port.id(), &a, 0)
                       : rte_eth_dev_mac_addr_remove(port.id(), &a);
    if (rc == -ENOTSUP) {
      done.no_device_filter = true;
      spdlog::info("port {}: the device has no MAC filter (ENOTSUP){}", name,
                   iface.empty() ? "" : "; virtual MACs go on " + iface + "'s unicast list");
    } else if (rc != 0) {
      errors.push_back(std::string(add ? "cannot add " : "cannot remove ") + macText(m) +
                       " on the device: " + rte_strerror(-rc));
    }
  };
  auto kernel = [&](const engine::Mac& m, bool add) {
    if (ifindex == 0) {
      return;
    }
    auto r = add ? kernel::rtnl::addUnicastAddress(ifindex, m)
                 : kernel::rtnl::deleteUnicastAddress(ifindex, m);
    if (!r) {
      errors.push_back(iface + ": " + r.error());
    }
  };
  for (const engine::Mac& m : macs) {
    device(m, true);
    kernel(m, true);
  }
  if (with_dataplane && dataplane_ && !dataplane_->setVirtualMacs(port.id(), macs)) {
    errors.push_back("the fast path refused the set");
  }
  for (const engine::Mac& m : done.macs) {
    if (!contains(macs, m)) {
      device(m, false);
      kernel(m, false);
    }
  }
  done.macs = macs;
  if (!errors.empty()) {
    std::string all = "port " + name + ": virtual MACs:";
    for (const auto& e : errors) {
      all += " " + e + ";";
    }
    all.pop_back();
    return unexpected(all);
  }
  return true;
}

void PortSet::restoreVirtualMacs(engine::Port& port) {
  auto it = virtual_macs_.find(port.config().name);
  if (it == virtual_macs_.end()) {
    return;
  }
  if (auto r = program(port, it->second); !r) {
    spdlog::warn("{}", r.error());
  }
}

void PortSet::forgetVirtualMacs(engine::Port& port, bool with_dataplane) {
  auto it = programmed_.find(&port);
  if (it == programmed_.end()) {
    return;
  }
  if (auto r = program(port, {}, with_dataplane); !r) {
    spdlog::warn("{}", r.error());
  }
  programmed_.erase(it);
}

}  // namespace mcgw::ports
