#include "control/flows/flow_table.hpp"

#include <algorithm>
#include <cstring>
#include <iterator>

namespace mcgw::flows {

uint8_t forwardingStatus(uint8_t status) {
  switch (static_cast<engine::FlowStatus>(status)) {
    case engine::FlowStatus::kForwarded:
      return 0x40;  // forwarded, unknown reason
    case engine::FlowStatus::kPolicyDeny:
    case engine::FlowStatus::kIsolation:
      return 0x81;  // dropped, ACL deny
    case engine::FlowStatus::kRateLimit:
      return 0x8a;  // dropped, policer
    case engine::FlowStatus::kLineFull:
      return 0x80;  // dropped, unknown: the registry has no code for a full queue
  }
  return 0x80;  // dropped, unknown reason
}

const char* statusName(uint8_t status) {
  switch (static_cast<engine::FlowStatus>(status)) {
    case engine::FlowStatus::kForwarded:
      return "forwarded";
    case engine::FlowStatus::kPolicyDeny:
      return "policy-deny";
    case engine::FlowStatus::kIsolation:
      return "tenant-isolation";
    case engine::FlowStatus::kRateLimit:
      return "rate-limit";
    case engine::FlowStatus::kLineFull:
      return "line-full";
  }
  return "dropped";
}

size_t FlowKeyHash::operator()(const FlowKey& k) const {
  // FNV-1a over the fields (the struct's padding is not hashed).
  uint64_t h = 1469598103934665603ull;
  auto mix = [&h](const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    for (size_t i = 0; i < n; ++i) {
      h = (h ^ b[i]) * 1099511628211ull;
    }
  };
  mix(&k.vni, sizeof k.vni);
  mix(&k.peer, sizeof k.peer);
  mix(&k.line, sizeof k.line);
  mix(&k.src_port, sizeof k.src_port);
  mix(&k.dst_port, sizeof k.dst_port);
  mix(&k.direction, 1);
  mix(&k.ip_version, 1);
  mix(&k.protocol, 1);
  mix(&k.status, 1);
  mix(&k.rule, sizeof k.rule);
  mix(k.src, k.ip_version == 4 ? 4 : 16);
  mix(k.dst, k.ip_version == 4 ? 4 : 16);
  return static_cast<size_t>(h);
}

FlowKey keyOf(const engine::FlowSample& s) {
  FlowKey k;
  k.vni = s.vni;
  k.peer = s.peer;
  k.line = s.line;
  k.src_port = s.src_port;
  k.dst_port = s.dst_port;
  k.direction = s.direction;
  k.ip_version = s.ip_version;
  k.protocol = s.protocol;
  k.status = s.status;
  k.rule = s.rule;
  std::memcpy(k.src, s.src, 16);
  std::memcpy(k.dst, s.dst, 16);
  return k;
}

FlowRecord& FlowTable::add(const engine::FlowSample& s, uint64_t at_ms, uint32_t scale,
                           std::vector<FlowRecord>& ended) {
  const FlowKey key = keyOf(s);
  auto it = index_.find(key);
  if (it == index_.end()) {
    if (index_.size() >= max_) {
      FlowRecord& oldest = lru_.front();
      oldest.end_reason = EndReason::kLackOfResources;
      ended.push_back(oldest);
      index_.erase(oldest.key);
      lru_.pop_front();
      ++evicted_;
    }
    FlowRecord r;
    r.key = key;
    r.first_ms = r.last_ms = at_ms;
    lru_.push_back(r);
    it = index_.emplace(key, std::prev(lru_.end())).first;
  } else {
    lru_.splice(lru_.end(), lru_, it->second);
  }
  FlowRecord& r = *it->second;
  r.packets += scale;
  r.bytes += uint64_t{s.ip_len} * scale;
  // Samples of several workers arrive drained worker by worker: not always
  // in time order.
  r.first_ms = std::min(r.first_ms, at_ms);
  r.last_ms = std::max(r.last_ms, at_ms);
  r.tcp_flags |= s.tcp_flags;
  return r;
}

void FlowTable::expire(uint64_t now_ms, uint64_t active_ms, uint64_t idle_ms,
                       std::vector<FlowRecord>& ended) {
  for (auto it = lru_.begin(); it != lru_.end();) {
    FlowRecord& r = *it;
    const bool idle = now_ms >= r.last_ms + idle_ms;
    const bool active = now_ms >= r.first_ms + active_ms;
    if (!idle && !active) {
      ++it;
      continue;
    }
    r.end_reason = idle ? EndReason::kIdle : EndReason::kActive;
    ended.push_back(r);
    index_.erase(r.key);
    it = lru_.erase(it);
  }
}

void FlowTable::flush(std::vector<FlowRecord>& ended) {
  for (FlowRecord& r : lru_) {
    r.end_reason = EndReason::kForced;
    ended.push_back(r);
  }
  lru_.clear();
  index_.clear();
}

}  // namespace mcgw::flows
