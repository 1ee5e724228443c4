#include "control/kernel/neighbor_resolver.hpp"

#include <linux/neighbour.h>
#include <spdlog/spdlog.h>

#include <algorithm>

namespace mcgw::kernel {

Result<std::unique_ptr<NeighborResolver>, std::string> NeighborResolver::open(
    const KernelSides& sides, engine::Dataplane& dataplane, config::ConfigPtr config) {
  auto monitor = NeighborMonitor::open();
  if (!monitor) {
    return unexpected("kernel neighbour table: " + monitor.error());
  }
  std::unique_ptr<NeighborResolver> r(new NeighborResolver(sides, dataplane, std::move(config)));
  r->monitor_ = std::move(*monitor);
  return r;
}

NeighborResolver::~NeighborResolver() {
  for (const auto& set : {managed_own_, host_managed_}) {
    for (const auto& [ifindex, address] : set) {
      if (auto r = rtnl::deleteNeighbor(ifindex, address); !r) {
        spdlog::warn("{}", r.error());
      }
    }
  }
}

void NeighborResolver::attach(core::EventLoop& loop) {
  netlink_source_ = loop.onReadable(monitor_->fd(), "kernel neighbours", [this] {
    if (receive() && on_change_) {
      on_change_();
    }
  });
  miss_timer_ = loop.every(kMissPeriod, "neighbour misses", [this] {
    // No tables yet: nothing can have missed.
    if (const engine::ForwardingTables* t = dataplane_.tables()) {
      resolveMisses(dataplane_.takeMisses(), *t);
    }
  });
}

void NeighborResolver::setPaused(bool paused) {
  for (core::Source* s : {&netlink_source_, &miss_timer_}) {
    if (*s) {
      s->setEnabled(!paused);
    }
  }
}

bool NeighborResolver::receive() {
  if (!monitor_->receive()) {
    return false;
  }
  reassert();
  return true;
}

void NeighborResolver::keepNextHopsResolved() {
  std::set<Entry> want;
  for (const auto& peer : config_->peers) {
    for (const auto& l : peer.lines) {
      if (int ifx = sides_.ifindexOf(l.port)) {
        want.insert({ifx, l.next_hop.value_or(l.remote_vtep)});
      }
    }
  }
  for (const auto& t : config_->tenants) {
    for (const auto& r : t.routes) {
      if (!r.next_hop) {
        continue;
      }
      for (const auto& pc : config_->ports) {
        if (pc.role != config::PortRole::kLan || pc.tenant != t.name) {
          continue;
        }
        for (const auto& a : pc.addresses) {
          if (a.network().contains(*r.next_hop)) {
            if (int ifx = sides_.ifindexOf(pc.name)) {
              want.insert({ifx, *r.next_hop});
            }
          }
        }
      }
    }
  }
  managed_ = std::move(want);
  for (auto it = managed_own_.begin(); it != managed_own_.end();) {
    if (!managed_.count(*it)) {  // no longer a next hop: ours to remove
      if (auto r = rtnl::deleteNeighbor(it->first, it->second); !r) {
        spdlog::warn("{}", r.error());
      }
      it = managed_own_.erase(it);
    } else {
      ++it;
    }
  }
  reassert();
}

// Next hops without a kernel entry (new, or flushed by a link flap or an
// operator) are asked for again; host entries that failed are removed, so
// that the next packet for the host asks afresh and the kernel stops
// probing a host that is gone.
void NeighborResolver::reassert() {
  const auto& table = monitor_->entries();
  for (const auto& e : managed_) {
    if (table.count({e.first, e.second})) {
      continue;
    }
    auto r = rtnl::addManagedNeighbor(e.first, e.second);
    if (!r) {
      spdlog::warn("{}", r.error());
    } else if (*r) {
      managed_own_.insert(e);
    }
  }
  const auto now = std::chrono::steady_clock::now();
  for (auto it = host_managed_.begin(); it != host_managed_.end();) {
    auto n = table.find({it->first, it->second});
    // Made afresh by resolveMisses a moment ago: its deletion is ours.
    auto again = reprobed_.find(*it);
    if (again != reprobed_.end() && now - again->second < std::chrono::seconds(1) &&
        (n == table.end() || !(n->second.state & NUD_FAILED))) {
      ++it;
      continue;
    }
    if (n == table.end() || (n->second.state & NUD_FAILED)) {
      if (n != table.end()) {
        if (auto r = rtnl::deleteNeighbor(it->first, it->second); !r) {
          spdlog::warn("{}", r.error());
        }
      }
      reprobed_.erase(*it);
      it = host_managed_.erase(it);
    } else {
      ++it;
    }
  }
}

void NeighborResolver::resolveMisses(const std::vector<engine::NeighborMiss>& misses,
                                     const engine::ForwardingTables& t) {
  unsigned asked = 0;
  for (const auto& miss : misses) {
    if (miss.port >= engine::kMaxPorts || !t.ports[miss.port].present) {
      continue;
    }
    const KernelSide* side = sides_.find(t.ports[miss.port].name);
    if (!side) {
      continue;  // no kernel side: the held packets time out (no-neighbor)
    }
    config::IpAddress a;
    a.family = miss.v6 ? config::Family::V6 : config::Family::V4;
    std::copy_n(miss.address, miss.v6 ? 16 : 4, a.bytes.begin());
    Entry key{side->ifindex, a};
    if (managed_.count(key)) {
      continue;  // a next hop: the kernel keeps it resolved
    }
    // An entry that failed (its probes went while the LAN link was down)
    // would wait for the kernel's next managed probe, up to 5 s, whether
    // this resolver made it or not: it is made afresh (a new entry is
    // probed at once), at most every kReprobe.
    const auto& table = monitor_->entries();
    const auto n = table.find(key);
    const bool failed = n != table.end() && (n->second.state & NUD_FAILED);
    if (!failed && host_managed_.count(key)) {
      continue;  // asked already; the kernel answers when it can
    }
    if (failed) {
      const auto now = std::chrono::steady_clock::now();
      auto& last = reprobed_[key];
      if (now - last < kReprobe) {
        continue;
      }
      last = now;
      if (auto r = rtnl::deleteNeighbor(key.first, a); !r) {
        spdlog::warn("{}", r.error());
        continue;
      }
      spdlog::debug("resolving {} on {} again (it had failed)", a.toString(), side->ifname);
    }
    if (asked >= kMaxResolutionsPerTick ||
        (host_managed_.size() >= kMaxHostResolutions && !host_managed_.count(key))) {
      ++resolutions_refused_;
      continue;
    }
    ++asked;
    if (auto r = rtnl::addManagedNeighbor(key.first, a); !r) {
      spdlog::warn("{}", r.error());
    } else if (*r) {
      host_managed_.insert(key);
      spdlog::debug("resolving {} on {}", a.toString(), side->ifname);
    }
  }
}

std::vector<config::StaticNeighbor> NeighborResolver::usableOn(int ifindex) const {
  std::vector<config::StaticNeighbor> out;
  for (const auto& [key, n] : monitor_->entries()) {
    if (n.ifindex == ifindex && n.usable()) {
      config::MacAddress mac;
      std::copy(n.mac.begin(), n.mac.end(), mac.bytes.begin());
      out.push_back({n.address, mac});
    }
  }
  return out;
}

Result<bool, std::string> NeighborResolver::prepare(const daemon::ReloadPlan& plan) {
  next_ = plan.next;
  return true;
}

void NeighborResolver::apply() {
  config_ = std::move(next_);
  keepNextHopsResolved();
}

}  // namespace mcgw::kernel
