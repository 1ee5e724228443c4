#include "dataplane/engine/tables.hpp"

#include <rte_errno.h>
#include <rte_hash.h>
#include <rte_hash_crc.h>
#include <rte_lcore.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <set>

#include "dataplane/proto/checksum.hpp"

namespace mcgw::engine {

namespace {

struct NeighborKey {
  uint16_t port = 0;
  uint8_t v6 = 0;
  uint8_t pad = 0;
  uint8_t address[16] = {};
};
static_assert(sizeof(NeighborKey) == 20);

NeighborKey neighborKey(uint16_t port, bool v6, const uint8_t* address) {
  NeighborKey k;
  k.port = port;
  k.v6 = v6 ? 1 : 0;
  std::memcpy(k.address, address, v6 ? 16 : 4);
  return k;
}

Mac toMac(const config::MacAddress& m) {
  Mac out;
  std::copy(m.bytes.begin(), m.bytes.end(), out.begin());
  return out;
}

bool sameRoutes(const std::vector<TenantFib::Route>& a, const std::vector<TenantFib::Route>& b) {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(), [](const auto& x, const auto& y) {
           return x.prefix == y.prefix && x.next_hop == y.next_hop;
         });
}

// A neighbour's MAC: what the kernel resolved, else the config's entry.
const config::MacAddress* findNeighbor(const config::PortConfig& pc, const OpenPort* op,
                                       const config::IpAddress& a) {
  if (op) {
    for (const auto& n : op->neighbors) {
      if (n.address == a) {
        return &n.mac;
      }
    }
  }
  for (const auto& n : pc.neighbors) {
    if (n.address == a) {
      return &n.mac;
    }
  }
  return nullptr;
}

}  // namespace

ForwardingTables::~ForwardingTables() {
  if (neighbors_) {
    rte_hash_free(neighbors_);
  }
}

bool ForwardingTables::neighbor(uint16_t port, bool v6, const uint8_t* address, Mac* mac) const {
  if (!neighbors_) {
    return false;
  }
  NeighborKey k = neighborKey(port, v6, address);
  void* data = nullptr;
  if (rte_hash_lookup_data(neighbors_, &k, &data) < 0) {
    return false;
  }
  *mac = neighbor_macs_[reinterpret_cast<uintptr_t>(data)];
  return true;
}

bool ForwardingTables::isLocal(bool v6, const uint8_t* address) const {
  if (v6) {
    for (const auto& a : local6) {
      if (std::memcmp(a.data(), address, 16) == 0) {
        return true;
      }
    }
    return false;
  }
  for (const auto& a : local4) {
    if (std::memcmp(a.data(), address, 4) == 0) {
      return true;
    }
  }
  return false;
}

std::optional<uint16_t> SlotMap::assign(const std::string& name, bool* fresh) {
  *fresh = false;
  if (auto it = slots_.find(name); it != slots_.end()) {
    return it->second;
  }
  std::vector<bool> used(capacity_, false);
  for (const auto& [n, s] : slots_) {
    used[s] = true;
  }
  for (size_t s = 0; s < capacity_; ++s) {
    if (!used[s]) {
      slots_[name] = static_cast<uint16_t>(s);
      *fresh = true;
      return static_cast<uint16_t>(s);
    }
  }
  return std::nullopt;
}

void SlotMap::retain(const std::vector<std::string>& keep) {
  std::set<std::string> k(keep.begin(), keep.end());
  std::erase_if(slots_, [&](const auto& e) { return !k.count(e.first); });
}

Result<std::unique_ptr<ForwardingTables>, std::string> TablesBuilder::build(
    const config::Config& c, const std::map<std::string, OpenPort>& open_ports, unsigned workers,
    const ForwardingTables* previous) {
  using config::Family;
  std::unique_ptr<ForwardingTables> t(new ForwardingTables());
  t->generation = ++generation_;
  t->idle_sleep_max_us = c.fast_path.idle_sleep_max_us;
  fresh_lines_.clear();
  fresh_tunnels_.clear();

  auto tenantIndex = [&](const std::string& name) -> uint16_t {
    for (size_t i = 0; i < c.tenants.size(); ++i) {
      if (c.tenants[i].name == name) {
        return static_cast<uint16_t>(i);
      }
    }
    return kNoTenant;
  };

  // Ports, by DPDK port id; the gateway's own addresses.
  std::map<std::string, uint16_t> port_ids;
  for (const auto& pc : c.ports) {
    auto it = open_ports.find(pc.name);
    if (it == open_ports.end()) {
      continue;  // configured but not open: status says so
    }
    const OpenPort& op = it->second;
    if (op.port_id >= kMaxPorts) {
      return unexpected("port " + pc.name + ": DPDK port id " + std::to_string(op.port_id) +
                        " is beyond the fast path's " + std::to_string(kMaxPorts));
    }
    PortEntry& pe = t->ports[op.port_id];
    pe.present = true;
    pe.lan = pc.role == config::PortRole::kLan;
    pe.tenant = pe.lan ? tenantIndex(pc.tenant) : kNoTenant;
    pe.mtu = pc.mtu;
    pe.mac = op.mac;
    pe.name = pc.name;
    pe.addresses = pc.addresses;
    port_ids[pc.name] = op.port_id;
    if (op.tap_port_id) {
      if (*op.tap_port_id >= kMaxPorts) {
        return unexpected("port " + pc.name +
                          ": its TAP's DPDK port id is beyond the fast path's " +
                          std::to_string(kMaxPorts));
      }
      pe.exception = *op.tap_port_id;
      PortEntry& tap = t->ports[*op.tap_port_id];
      tap.present = true;
      tap.tap = true;
      tap.phys = op.port_id;
      tap.lan = pe.lan;
      tap.tenant = kNoTenant;
      tap.mtu = pc.mtu;
      tap.mac = op.mac;
      tap.name = pc.name + " (kernel)";
    }
    for (const auto& a : pc.addresses) {
      if (a.address.family == Family::V4) {
        std::array<uint8_t, 4> b;
        std::copy_n(a.address.bytes.begin(), 4, b.begin());
        t->local4.push_back(b);
        if (!pe.icmp_source4) {
          pe.icmp_source4 = b;
        }
      } else {
        t->local6.push_back(a.address.bytes);
        if (!pe.icmp_source6) {
          pe.icmp_source6 = a.address.bytes;
        }
      }
    }
  }

  // Tenants and the source of their ICMP errors.
  for (const auto& tc : c.tenants) {
    TenantEntry te;
    te.name = tc.name;
    te.vni = tc.vni;
    for (const auto& pc : c.ports) {
      if (pc.role != config::PortRole::kLan || pc.tenant != tc.name) {
        continue;
      }
      for (const auto& a : pc.addresses) {
        if (a.address.family == Family::V4 && !te.icmp_source4) {
          std::array<uint8_t, 4> b;
          std::copy_n(a.address.bytes.begin(), 4, b.begin());
          te.icmp_source4 = b;
        } else if (a.address.family == Family::V6 && !te.icmp_source6) {
          te.icmp_source6 = a.address.bytes;
        }
      }
    }
    t->tenants.push_back(std::move(te));
  }

  // Lines, peer VTEPs and tunnels (one per peer and carried tenant).
  std::vector<std::string> line_names, tunnel_names;
  std::map<std::pair<size_t, size_t>, uint16_t> tunnel_of;  // (peer, tenant) -> tunnel
  t->peer_vnis.resize(c.peers.size());
  for (size_t pi = 0; pi < c.peers.size(); ++pi) {
    const auto& peer = c.peers[pi];
    t->peer_names.push_back(peer.name);
    if (peer.lines.size() > kMaxLinesPerPeer) {
      return unexpected("peer " + peer.name + ": more than " + std::to_string(kMaxLinesPerPeer) +
                        " lines");
    }
    std::vector<uint16_t> line_indexes;
    for (const auto& lc : peer.lines) {
      LineEntry le;
      const std::string key = peer.name + "/" + lc.name;
      bool fresh = false;
      auto slot = line_slots_.assign(key, &fresh);
      if (!slot) {
        return unexpected("more than " + std::to_string(kMaxLines) + " lines");
      }
      if (fresh) {
        fresh_lines_.push_back(*slot);
      }
      line_names.push_back(key);
      le.slot = *slot;
      le.peer = peer.name;
      le.name = lc.name;
      le.mtu = lc.mtu;
      le.next_hop = lc.next_hop.value_or(lc.remote_vtep);
      le.header.ipv6 = lc.remote_vtep.family == Family::V6;
      le.header.ttl = lc.outer_ttl;
      le.header.encapsulation = peer.encapsulation == config::Encapsulation::kGeneve
                                    ? proto::Encapsulation::kGeneve
                                    : proto::Encapsulation::kVxlan;
      std::copy(lc.local_vtep.bytes.begin(), lc.local_vtep.bytes.end(), le.header.local);
      std::copy(lc.remote_vtep.bytes.begin(), lc.remote_vtep.bytes.end(), le.header.remote);
      const config::PortConfig* pc = c.findPort(lc.port);
      if (auto it = port_ids.find(lc.port); it != port_ids.end() && pc) {
        le.port = it->second;
        std::copy_n(t->ports[le.port].mac.begin(), 6, le.header.src_mac);
        if (const auto* mac = findNeighbor(*pc, &open_ports.at(lc.port), le.next_hop)) {
          std::copy(mac->bytes.begin(), mac->bytes.end(), le.header.dst_mac);
          le.resolved = true;
        }
      }
      {
        const std::array<std::byte, 14> no_inner{};
        le.outer_len = static_cast<uint8_t>(proto::encodeTunnelHeaders(
            proto::MutableBytes(reinterpret_cast<std::byte*>(le.outer.data()), le.outer.size()),
            le.header, 0, proto::Bytes(no_inner.data(), no_inner.size()), 0));
        uint8_t* ip = le.outer.data() + 14;
        if (!le.header.ipv6) {
          ip[1] = 0;            // TOS
          ip[2] = ip[3] = 0;    // total length
          ip[10] = ip[11] = 0;  // checksum
          le.outer_sum =
              proto::checksumAdd(proto::Bytes(reinterpret_cast<const std::byte*>(ip), 20));
        } else {
          le.outer_sum = proto::pseudoHeaderV6(ip + 8, ip + 24, 17, 0);
        }
      }
      PeerVtep v;
      v.ipv6 = le.header.ipv6;
      v.address = lc.remote_vtep.bytes;
      v.peer = static_cast<uint16_t>(pi);
      v.line = static_cast<uint16_t>(t->lines.size());
      t->vteps.push_back(v);
      line_indexes.push_back(static_cast<uint16_t>(t->lines.size()));
      t->lines.push_back(std::move(le));
    }
    for (size_t ti = 0; ti < c.tenants.size(); ++ti) {
      const auto& tc = c.tenants[ti];
      if (!peer.tenants.empty() &&
          std::find(peer.tenants.begin(), peer.tenants.end(), tc.name) == peer.tenants.end()) {
        continue;
      }
      TunnelEntry te;
      const std::string key = peer.name + "/" + tc.name;
      bool fresh = false;
      auto slot = tunnel_slots_.assign(key, &fresh);
      if (!slot) {
        return unexpected("more than " + std::to_string(kMaxTunnels) + " tunnels");
      }
      if (fresh) {
        fresh_tunnels_.push_back(*slot);
      }
      tunnel_names.push_back(key);
      te.slot = *slot;
      te.peer = static_cast<uint16_t>(pi);
      te.tenant = static_cast<uint16_t>(ti);
      te.vni = tc.vni;
      te.ecmp = peer.line_mode == config::LineMode::kEcmp;
      te.n_lines = static_cast<uint8_t>(line_indexes.size());
      std::copy(line_indexes.begin(), line_indexes.end(), te.lines.begin());
      te.inner_dst = toMac(peer.inner_mac);
      te.mss_insert = peer.mss_insert;
      te.name = key;
      const auto idx = static_cast<uint16_t>(t->tunnels.size());
      tunnel_of[{pi, ti}] = idx;
      t->peer_vnis[pi].emplace_back(tc.vni, idx);
      t->tunnels.push_back(std::move(te));
    }
  }
  line_slots_.retain(line_names);
  tunnel_slots_.retain(tunnel_names);

  // Routes: static ones, then the LAN subnets (connected, so they win).
  for (size_t ti = 0; ti < c.tenants.size(); ++ti) {
    const auto& tc = c.tenants[ti];
    std::vector<TenantFib::Route> routes;
    std::vector<NextHop>& next_hops = t->tenants[ti].next_hops;
    std::map<uint16_t, uint32_t> tunnel_next_hop;
    for (const auto& r : tc.routes) {
      if (!r.peer.empty()) {
        size_t pi = 0;
        while (pi < c.peers.size() && c.peers[pi].name != r.peer) {
          ++pi;
        }
        auto it = tunnel_of.find({pi, ti});
        if (it == tunnel_of.end()) {
          return unexpected("tenant " + tc.name + ", route " + r.prefix.toString() + ": peer " +
                            r.peer + " does not carry tenant " + tc.name);
        }
        auto [nh, added] = tunnel_next_hop.try_emplace(it->second, next_hops.size());
        if (added) {
          NextHop h;
          h.kind = NextHop::Kind::kTunnel;
          h.tunnel = it->second;
          next_hops.push_back(h);
        }
        routes.push_back({r.prefix, nh->second});
        t->route_views.push_back({tc.name, r.prefix.network().toString(), "peer " + r.peer});
        continue;
      }
      // A LAN next hop: on the subnet of one of the tenant's LAN ports.
      const config::PortConfig* via = nullptr;
      for (const auto& pc : c.ports) {
        if (pc.role != config::PortRole::kLan || pc.tenant != tc.name) {
          continue;
        }
        for (const auto& a : pc.addresses) {
          if (a.network().contains(*r.next_hop)) {
            via = &pc;
          }
        }
      }
      if (!via) {
        return unexpected("tenant " + tc.name + ", route " + r.prefix.toString() + ": next hop " +
                          r.next_hop->toString() + " is on no LAN port of the tenant");
      }
      NextHop h;
      h.kind = NextHop::Kind::kGateway;
      if (auto it = port_ids.find(via->name); it != port_ids.end()) {
        h.port = it->second;
        if (const auto* mac = findNeighbor(*via, &open_ports.at(via->name), *r.next_hop)) {
          h.mac = toMac(*mac);
          h.resolved = true;
        }
      }
      routes.push_back({r.prefix, static_cast<uint32_t>(next_hops.size())});
      next_hops.push_back(h);
      t->route_views.push_back(
          {tc.name, r.prefix.network().toString(), r.next_hop->toString() + " on " + via->name});
    }
    for (const auto& pc : c.ports) {
      auto it = port_ids.find(pc.name);
      if (pc.role != config::PortRole::kLan || pc.tenant != tc.name || it == port_ids.end()) {
        continue;
      }
      NextHop h;
      h.kind = NextHop::Kind::kConnected;
      h.port = it->second;
      const auto idx = static_cast<uint32_t>(next_hops.size());
      next_hops.push_back(h);
      for (const auto& a : pc.addresses) {
        routes.push_back({a.network(), idx});
        t->route_views.push_back({tc.name, a.network().toString(), "connected " + pc.name});
      }
    }
    TenantEntry& te = t->tenants[ti];
    te.routes = routes;
    if (previous) {
      for (const auto& old : previous->tenants) {
        if (old.name == te.name && sameRoutes(old.routes, routes)) {
          te.fib = old.fib;
        }
      }
    }
    if (!te.fib) {
      auto fib = TenantFib::create(tc.name, routes);
      if (!fib) {
        return unexpected(fib.error());
      }
      te.fib = std::shared_ptr<const TenantFib>(std::move(*fib));
    }
  }

  // Neighbours (kernel-resolved and static), for connected destinations.
  size_t n_neighbors = 0;
  for (const auto& pc : c.ports) {
    n_neighbors += pc.neighbors.size();
    if (auto it = open_ports.find(pc.name); it != open_ports.end()) {
      n_neighbors += it->second.neighbors.size();
    }
  }
  if (n_neighbors > 0) {
    static std::atomic<uint32_t> serial{0};
    const std::string name = "nbr" + std::to_string(serial++);
    rte_hash_parameters hp{};
    hp.name = name.c_str();
    hp.entries = static_cast<uint32_t>(std::max<size_t>(n_neighbors * 2, 64));
    hp.key_len = sizeof(NeighborKey);
    hp.hash_func = rte_hash_crc;
    hp.socket_id = static_cast<int>(rte_socket_id());
    t->neighbors_ = rte_hash_create(&hp);
    if (!t->neighbors_) {
      return unexpected(std::string("cannot create the neighbour table: ") +
                        rte_strerror(rte_errno));
    }
    for (const auto& pc : c.ports) {
      auto it = port_ids.find(pc.name);
      if (it == port_ids.end()) {
        continue;
      }
      // What the kernel resolved first; a static entry for the same address
      // then replaces it.
      std::vector<const config::StaticNeighbor*> all;
      for (const auto& n : open_ports.at(pc.name).neighbors) {
        all.push_back(&n);
      }
      for (const auto& n : pc.neighbors) {
        all.push_back(&n);
      }
      for (const auto* n : all) {
        NeighborKey k =
            neighborKey(it->second, n->address.family == Family::V6, n->address.bytes.data());
        const uintptr_t idx = t->neighbor_macs_.size();
        t->neighbor_macs_.push_back(toMac(n->mac));
        if (rte_hash_add_key_data(t->neighbors_, &k, reinterpret_cast<void*>(idx)) < 0) {
          return unexpected("cannot add neighbour " + n->address.toString());
        }
      }
    }
  }

  // Receive queues, spread round-robin over the workers.
  t->poll.resize(std::max(1u, workers));
  size_t next = 0;
  for (const auto& pc : c.ports) {
    auto it = open_ports.find(pc.name);
    if (it == open_ports.end()) {
      continue;
    }
    for (uint16_t q = 0; q < it->second.rx_queues; ++q) {
      t->poll[next++ % t->poll.size()].push_back({it->second.port_id, q});
    }
    if (it->second.tap_port_id) {  // what the kernel sends out through the port:
      // the TAP has one queue per worker, and the kernel may use any.
      for (uint16_t w = 0; w < t->poll.size(); ++w) {
        t->poll[w].push_back({*it->second.tap_port_id, w});
      }
    }
  }
  return t;
}

}  // namespace mcgw::engine
