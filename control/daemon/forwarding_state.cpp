#include "control/daemon/forwarding_state.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "control/frr/frr_routes.hpp"

namespace mcgw::daemon {

// A mapped range is translated only where its real range lives: at its
// `site`, or, when it names none, at the site of the VPC whose range is its
// real one (where routing announces it, control/frr/render.cpp).  Its
// tenant is the one the plan gives the mapped range (frr::Tenancy: the VPC
// at that site holding the real range, else the single tenant).
engine::TablesInput tablesInput(const config::Config& c,
                                std::map<std::string, engine::OpenPort> ports, unsigned workers,
                                std::vector<std::string>* not_translated) {
  engine::TablesInput in = engine::TablesInput::fromConfig(c, std::move(ports), workers);
  const auto& plan = c.address_plan;
  if (plan.mapped_ranges.empty()) {
    return in;
  }
  const frr::Tenancy tenancy(c);
  for (const auto& m : plan.mapped_ranges) {
    const std::string site = config::siteOf(c, m);
    if (site.empty() || site != c.node.site) {
      continue;
    }
    auto claim = tenancy.claim(m.mapped);
    if (!claim) {
      if (not_translated) {
        not_translated->push_back("mapped range " + m.name + " (" + m.real.toString() + " as " +
                                  m.mapped.toString() +
                                  ") is not translated here: " + claim.error());
      }
      continue;
    }
    in.mapped[claim->tenant].push_back({m.name, m.real, m.mapped});
  }
  return in;
}

namespace {

engine::RouteSpec localRoute(const config::IpAddress& a) {
  engine::RouteSpec r;
  r.prefix = {a, static_cast<uint8_t>(a.bits())};
  r.vias = {engine::Via{engine::Via::Kind::kLocal, {}, {}, {}}};
  r.distance = engine::defaultDistance(engine::RouteSource::kLocal);
  return r;
}

}  // namespace

Result<bool, std::string> ForwardingState::setAccepted(
    const config::Config& c, const std::vector<config::IpAddress>& addresses) {
  std::vector<engine::RouteUpdate> updates;
  auto contains = [](const std::vector<config::IpAddress>& v, const config::IpAddress& a) {
    return std::find(v.begin(), v.end(), a) != v.end();
  };
  for (const auto& tc : c.tenants) {
    for (const auto& a : accepted_) {
      if (!contains(addresses, a)) {
        engine::RouteUpdate u;
        u.tenant = tc.name;
        u.source = engine::RouteSource::kLocal;
        u.prefix = {a, static_cast<uint8_t>(a.bits())};
        u.withdraw = true;
        updates.push_back(std::move(u));
      }
    }
    for (const auto& a : addresses) {
      if (!contains(accepted_, a)) {
        const engine::RouteSpec r = localRoute(a);
        updates.push_back(
            {tc.name, engine::RouteSource::kLocal, r.prefix, false, r.vias, r.distance});
      }
    }
  }
  if (auto r = applyRoutes(updates); !r) {
    return r;
  }
  accepted_ = addresses;
  return true;
}

engine::TablesInput ForwardingState::input(const config::Config& c,
                                           const std::map<std::string, engine::OpenPort>& ports) {
  std::vector<std::string> not_translated;
  auto in = tablesInput(c, ports, dataplane_.workers(), &not_translated);
  if (sa_source_) {
    in.sas = sa_source_();
  }
  for (auto& [tenant, sources] : in.routes) {
    for (const auto& a : accepted_) {
      sources[engine::RouteSource::kLocal].push_back(localRoute(a));
    }
  }
  if (not_translated != not_translated_) {  // logged when it changes, not per neighbour event
    for (const auto& why : not_translated) {
      spdlog::warn("{}", why);
    }
    not_translated_ = std::move(not_translated);
  }
  return in;
}

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
  auto tables = builder_.build(input(c, ports), [this] { dataplane_.synchronize(); });
  if (!tables) {
    return unexpected(tables.error());
  }
  makeLive(std::move(*tables));
  return true;
}

Result<bool, std::string> ForwardingState::updateNeighbors(const config::Config& c) {
  auto ports = openPorts();
  auto lines = builder_.updateNeighbors(input(c, ports), [this] { dataplane_.synchronize(); });
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
  if (before_publish_) {
    before_publish_();
  }
  for (uint16_t slot : builder_.freshLineSlots()) {
    dataplane_.resetLineSlot(slot);
  }
  for (uint16_t slot : builder_.freshTunnelSlots()) {
    dataplane_.resetTunnelSlot(slot);
  }
  dataplane_.resetPolicySlots(builder_.freshPolicySlots());
  dataplane_.resetTenantLineSlots(builder_.freshTenantLineSlots());
  for (uint16_t slot : builder_.freshMappedSlots()) {
    dataplane_.resetMappedSlot(slot);
  }
  lines_.beforePublish(*tables);
  dataplane_.publish(std::move(tables));
}

Result<bool, std::string> ForwardingState::prepare(const ReloadPlan& plan) {
  auto ports = openPorts();
  for (const auto& [name, port] : ports_.prepared()) {
    ports[name] = {port->id(), port->mac(), port->rxQueues()};
  }
  auto tables = builder_.build(input(*plan.next, ports), [this] { dataplane_.synchronize(); });
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
