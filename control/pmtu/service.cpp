#include "control/pmtu/service.hpp"

#include <map>

namespace mcgw::pmtu {

Settings toSettings(const config::PathMtuConfig& c) {
  return {c.probe, std::chrono::seconds(c.probe_interval_s),
          std::chrono::milliseconds(c.probe_timeout_ms), std::chrono::seconds(c.aging_s)};
}

QualitySettings toQualitySettings(const config::PathMtuConfig& c) {
  return {std::chrono::milliseconds(c.quality_interval_ms)};
}

PathMtuService::PathMtuService() = default;

void PathMtuService::configure(const config::PathMtuConfig& c,
                               const std::vector<ServiceLine>& lines, TimePoint now) {
  config_ = c;
  tracker_.setSettings(toSettings(c), now);
  std::map<std::string, LineSpec> specs;
  std::vector<std::string> keys;
  std::vector<Prober::Endpoint> endpoints;
  lines_.clear();
  for (const auto& l : lines) {
    const auto& a = l.addresses;
    specs[a.key] = {a.local.family == config::Family::V6, l.configured_mtu};
    keys.push_back(a.key);
    endpoints.push_back({a.key, a.local, a.remote});
    lines_.push_back(a);
  }
  tracker_.setLines(specs, now);
  quality_.setSettings(toQualitySettings(c), now);
  quality_.setLines(keys, now);
  // The responder answers peers' probes even when this gateway does not
  // probe (the tracker then asks for none).
  prober_.configure(endpoints, c.probe_port);
}

std::vector<int> PathMtuService::fds() const {
  std::vector<int> out = listener_.fds();
  for (int fd : prober_.fds()) {
    out.push_back(fd);
  }
  return out;
}

void PathMtuService::onReadable(int fd, TimePoint now) {
  std::vector<IcmpListener::Event> events;
  listener_.receive(fd, lines_, config_.probe_port, events);
  for (const auto& e : events) {
    if (e.refused) {
      if (prober_.inFlight(e.nonce)) {  // one of ours, not a forged or a stale refusal
        tracker_.onRefused(e.line, now);
      }
    } else {
      tracker_.onIcmp(e.line, e.mtu, e.from.toString(), now);
    }
  }
  std::vector<uint64_t> answered;
  std::vector<Prober::QualityReply> quality;
  prober_.receive(fd, answered, quality, now);
  for (uint64_t id : answered) {
    tracker_.onProbeReply(id, now);
  }
  for (const auto& r : quality) {
    quality_.onReply(r.line, r.sequence, r.sent_ns, now);
  }
}

void PathMtuService::poll(TimePoint now) {
  for (const auto& p : tracker_.poll(now)) {
    prober_.send(p.line, p.id, p.size, now);
  }
  // A line whose peer answers path MTU probes runs a responder: its quality
  // probes go out at the full rate from the start.
  for (const auto& l : lines_) {
    if (const LineView* v = tracker_.view(l.key); v && v->counters.probes_answered > 0) {
      quality_.onPeerAnswers(l.key, now);
    }
  }
  for (const auto& q : quality_.poll(now)) {
    prober_.sendQuality(q.line, q.sequence, q.sent_ns);
  }
}

std::vector<std::string> PathMtuService::errors() const {
  std::vector<std::string> out = listener_.errors();
  for (const auto& e : prober_.errors()) {
    out.push_back(e);
  }
  return out;
}

}  // namespace mcgw::pmtu
