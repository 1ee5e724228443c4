#include "dataplane/engine/routes.hpp"

#include <algorithm>

namespace mcgw::engine {

const char* toString(RouteSource s) {
  switch (s) {
    case RouteSource::kLocal:
      return "local";
    case RouteSource::kConnected:
      return "connected";
    case RouteSource::kStatic:
      return "static";
    case RouteSource::kFrr:
      return "frr";
    case RouteSource::kPlan:
      return "plan";
  }
  return "?";
}

uint8_t defaultDistance(RouteSource s) {
  switch (s) {
    case RouteSource::kLocal:
    case RouteSource::kConnected:
      return 0;
    case RouteSource::kStatic:
      return 1;
    case RouteSource::kFrr:
      return 20;
    case RouteSource::kPlan:
      return 10;
  }
  return 255;
}

// ------------------------------------------------------------ NextHopTable

NextHopTable::~NextHopTable() {
  for (auto& p : pages_) {
    delete[] p.load();
  }
}

NextHop* NextHopTable::page(uint32_t index) {
  auto& slot = pages_[index >> kPageBits];
  NextHop* p = slot.load(std::memory_order_relaxed);
  if (!p) {
    p = new NextHop[kPageSize];
    slot.store(p, std::memory_order_release);
  }
  return p;
}

Result<uint32_t, std::string> NextHopTable::acquire(const NextHop& nh) {
  if (auto it = index_.find(nh); it != index_.end()) {
    ++refs_[it->second];
    return it->second;
  }
  uint32_t index;
  if (!free_.empty()) {
    index = free_.back();
    free_.pop_back();
  } else if (high_ < kMaxNextHops) {
    index = high_++;
    refs_.resize(high_, 0);
  } else {
    return unexpected(std::string("more than ") + std::to_string(kMaxNextHops) + " next hops");
  }
  // The entry is written before any FIB can return its index.
  page(index)[index & (kPageSize - 1)] = nh;
  index_.emplace(nh, index);
  refs_[index] = 1;
  if (nh.kind == NextHop::Kind::kEcmp) {
    for (unsigned i = 0; i < nh.n_members; ++i) {
      ++refs_[nh.members[i]];
    }
  }
  return index;
}

Result<uint32_t, std::string> NextHopTable::acquireGroup(std::vector<uint32_t> members) {
  std::vector<uint32_t> distinct = members;
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  if (distinct.empty() || distinct.size() > kMaxEcmp) {
    for (uint32_t m : members) {
      release(m);
    }
    return unexpected("an ECMP group has 1 to " + std::to_string(kMaxEcmp) + " next hops, not " +
                      std::to_string(distinct.size()));
  }
  if (distinct.size() == 1) {  // the member itself: keep one of the caller's references
    for (size_t i = 1; i < members.size(); ++i) {
      release(members[i]);
    }
    return distinct[0];
  }
  NextHop g;
  g.kind = NextHop::Kind::kEcmp;
  g.n_members = static_cast<uint8_t>(distinct.size());
  std::copy(distinct.begin(), distinct.end(), g.members.begin());
  auto index = acquire(g);  // a new group takes its own references on the members
  for (uint32_t m : members) {
    release(m);  // never the last: the group holds each member
  }
  return index;
}

void NextHopTable::release(uint32_t index) {
  if (index >= refs_.size() || refs_[index] == 0) {
    return;
  }
  if (--refs_[index] > 0) {
    return;
  }
  const NextHop nh = at(index);
  index_.erase(nh);
  retired_.push_back(index);
  if (nh.kind == NextHop::Kind::kEcmp) {
    for (unsigned i = 0; i < nh.n_members; ++i) {
      release(nh.members[i]);
    }
  }
}

void NextHopTable::reclaim() {
  // In the order they were retired: an aborted change releases its indexes
  // newest first, so they return to the list in the order they left it.
  free_.insert(free_.end(), retired_.begin(), retired_.end());
  retired_.clear();
}

std::optional<uint32_t> NextHopTable::find(const NextHop& nh) const {
  auto it = index_.find(nh);
  return it == index_.end() ? std::nullopt : std::optional<uint32_t>(it->second);
}

// --------------------------------------------------------------- TenantRib

namespace {

bool better(const Candidate& a, const Candidate& b) {
  return a.distance != b.distance ? a.distance < b.distance : a.source < b.source;
}

}  // namespace

std::optional<uint32_t> TenantRib::bestOf(const std::vector<Candidate>* cs) {
  if (!cs || cs->empty()) {
    return std::nullopt;
  }
  return cs->front().next_hop;
}

void TenantRib::set(const config::IpPrefix& p, RouteSource source,
                    std::optional<Candidate> candidate) {
  const config::IpPrefix prefix = p.network();
  auto it = routes_.find(prefix);
  before_.try_emplace(prefix, it == routes_.end() ? std::vector<Candidate>{} : it->second);
  if (candidate) {
    candidate->source = source;
    taken_.push_back(candidate->next_hop);
    if (it == routes_.end()) {
      it = routes_.emplace(prefix, std::vector<Candidate>{}).first;
    }
  } else if (it == routes_.end()) {
    return;
  }
  auto& cs = it->second;
  for (auto c = cs.begin(); c != cs.end(); ++c) {
    if (c->source == source) {
      dropped_.push_back(c->next_hop);
      cs.erase(c);
      break;
    }
  }
  if (candidate) {
    cs.insert(std::upper_bound(cs.begin(), cs.end(), *candidate, better), *candidate);
  }
  if (cs.empty()) {
    routes_.erase(it);
  }
}

std::optional<Candidate> TenantRib::candidate(const config::IpPrefix& prefix,
                                              RouteSource source) const {
  auto it = routes_.find(prefix.network());
  if (it == routes_.end()) {
    return std::nullopt;
  }
  for (const auto& c : it->second) {
    if (c.source == source) {
      return c;
    }
  }
  return std::nullopt;
}

// The FIB changes between the best routes before staging and now: forward
// (to apply what is staged) or back (to undo it once applied).
std::vector<TenantFib::Change> TenantRib::difference(bool forward) const {
  std::vector<TenantFib::Change> out;
  for (const auto& [prefix, before] : before_) {
    auto it = routes_.find(prefix);
    const auto now = bestOf(it == routes_.end() ? nullptr : &it->second);
    const auto was = bestOf(&before);
    if (now == was) {
      continue;
    }
    const auto& to = forward ? now : was;
    out.push_back({prefix, to.value_or(0), !to});
  }
  return out;
}

std::vector<TenantFib::Change> TenantRib::changes() const {
  return difference(true);
}

std::vector<TenantFib::Change> TenantRib::reverse() const {
  return difference(false);
}

void TenantRib::commit() {
  for (uint32_t nh : dropped_) {
    next_hops_->release(nh);
  }
  before_.clear();
  taken_.clear();
  dropped_.clear();
}

void TenantRib::abort() {
  for (auto& [prefix, before] : before_) {
    if (before.empty()) {
      routes_.erase(prefix);
    } else {
      routes_[prefix] = std::move(before);
    }
  }
  for (auto it = taken_.rbegin(); it != taken_.rend(); ++it) {
    next_hops_->release(*it);
  }
  before_.clear();
  taken_.clear();
  dropped_.clear();
}

std::vector<TenantFib::Route> TenantRib::installed() const {
  std::vector<TenantFib::Route> out;
  out.reserve(routes_.size());
  for (const auto& [prefix, cs] : routes_) {
    out.push_back({prefix, cs.front().next_hop});
  }
  return out;
}

std::optional<uint32_t> TenantRib::best(const config::IpPrefix& prefix) const {
  auto it = routes_.find(prefix.network());
  return bestOf(it == routes_.end() ? nullptr : &it->second);
}

std::vector<config::IpPrefix> TenantRib::prefixes(RouteSource source) const {
  std::vector<config::IpPrefix> out;
  for (const auto& [prefix, cs] : routes_) {
    for (const auto& c : cs) {
      if (c.source == source) {
        out.push_back(prefix);
        break;
      }
    }
  }
  return out;
}

}  // namespace mcgw::engine
