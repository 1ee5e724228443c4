#include "control/daemon/forwarding_state.hpp"

#include <spdlog/spdlog.h>

namespace mcgw::daemon {

std::map<std::string, engine::OpenPort> ForwardingState::openPorts(
    const std::set<std::string>& without) const {
  std::map<std::string, engine::OpenPort> out;
  for (const auto& p : ports_.all()) {
    const std::string& name = p->config().name;
    if (without.count(name)) {
      continue;
    }
    engine::OpenPort op(p->id(), p->mac(), p->rxQueues());
    if (const kernel::KernelSide* k = kernel_.find(name)) {
      if (k->tap) {
        op.tap_port_id = k->tap->id();
      }
      op.neighbors = neighbors_.usableOn(k->ifindex);
    }
    out[name] = std::move(op);
  }
  return out;
}

Result<bool, std::string> ForwardingState::publish(
    const config::Config& c, const std::map<std::string, engine::OpenPort>& ports) {
  auto tables = builder_.build(engine::TablesInput::fromConfig(c, ports, dataplane_.workers()),
                               [this] { dataplane_.synchronize(); });
  if (!tables) {
    return unexpected(tables.error());
  }
  makeLive(std::move(*tables));
  return true;
}

Result<bool, std::string> ForwardingState::updateNeighbors(const config::Config& c) {
  auto ports = openPorts();
  auto lines =
      builder_.updateNeighbors(engine::TablesInput::fromConfig(c, ports, dataplane_.workers()),
                               [this] { dataplane_.synchronize(); });
  if (!lines) {
    return unexpected(lines.error());
  }
  if (const size_t left_out = builder_.neighborsLeftOut(); left_out != neighbors_left_out_) {
    if (left_out > 0) {  // logged when the number changes, not per event
      spdlog::warn("the fast path's neighbour table is full: {} neighbour(s) left out", left_out);
    }
    neighbors_left_out_ = left_out;
  }
  if (!*lines) {
    return false;
  }
  if (auto r = publish(c, ports); !r) {
    return unexpected(r.error());
  }
  return true;
}

void ForwardingState::makeLive(std::unique_ptr<engine::ForwardingTables> tables) {
  for (uint16_t slot : builder_.freshLineSlots()) {
    dataplane_.resetLineSlot(slot);
  }
  for (uint16_t slot : builder_.freshTunnelSlots()) {
    dataplane_.resetTunnelSlot(slot);
  }
  lines_.beforePublish(*tables);
  dataplane_.publish(std::move(tables));
}

Result<bool, std::string> ForwardingState::prepare(const ReloadPlan& plan) {
  auto ports = openPorts();
  for (const auto& [name, port] : ports_.prepared()) {
    ports[name] = {port->id(), port->mac(), port->rxQueues()};
  }
  auto tables =
      builder_.build(engine::TablesInput::fromConfig(*plan.next, ports, dataplane_.workers()),
                     [this] { dataplane_.synchronize(); });
  if (!tables) {
    return unexpected(tables.error());
  }
  prepared_ = std::move(*tables);
  return true;
}

void ForwardingState::apply() {
  makeLive(std::move(prepared_));
}

}  // namespace mcgw::daemon
