// `mcgwctl show vrrp [--json]` and status's "vrrp" block: one document.
#include <chrono>

#include "control/core/iso_time.hpp"
#include "control/vrrp/vrrp_service.hpp"

namespace mcgw::vrrp {

namespace {

using nlohmann::json;

std::string macText(const proto::Mac& m) {
  char buf[18];
  std::snprintf(buf, sizeof(buf), "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4],
                m[5]);
  return buf;
}

int64_t ms(Duration d) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
}

// A steady-clock time as the wall-clock time it was.
std::string wallTime(TimePoint t) {
  const auto ago = std::chrono::steady_clock::now() - t;
  return core::isoTime(std::chrono::system_clock::now() -
                       std::chrono::duration_cast<std::chrono::system_clock::duration>(ago));
}

}  // namespace

json VrrpService::view() const {
  json groups = json::array();
  for (const auto& gp : groups_) {
    const Group& g = *gp;
    const auto& c = g.cfg;
    json vips = json::array();
    for (const auto& a : g.vips) {
      vips.push_back(proto::toString(a));
    }
    json tracking = json::array();
    for (size_t i = 0; i < c.track.size(); ++i) {
      tracking.push_back(
          {{"object", c.track[i].object}, {"weight", c.track[i].weight}, {"up", g.track_up[i]}});
    }
    const StateMachine* sm = g.sm.get();
    json active = nullptr;
    if (sm) {
      if (auto a = sm->activeAddress()) {
        active = proto::toString(*a);
      }
    }
    json last = nullptr;
    if (sm && sm->lastTransition()) {
      const Transition& t = *sm->lastTransition();
      last = {{"from", toString(t.from)},
              {"to", toString(t.to)},
              {"reason", t.reason},
              {"at", wallTime(t.at)}};
    }
    const Counters none{};
    const Counters& sc = sm ? sm->counters() : none;
    const GroupCounters& gc = g.counters;
    json counters = {{"adverts_sent", sc.adverts_sent},
                     {"adverts_received", sc.adverts_received},
                     {"accepted", sc.accepted},
                     {"priority_zero_received", sc.priority_zero},
                     {"discarded_lower_priority", sc.discarded_lower},
                     {"preempt_delayed", sc.preempt_delayed},
                     {"stepped_down", sc.stepped_down},
                     {"became_active", sc.became_active},
                     {"bad_ttl", gc.bad_ttl},
                     {"not_a_peer", gc.not_a_peer},
                     {"address_mismatch", gc.address_mismatch},
                     {"arp_answered", gc.arp_answered},
                     {"nd_answered", gc.nd_answered},
                     {"announcements", gc.announcements},
                     {"send_errors", gc.send_errors},
                     {"notify_run", gc.notify_run},
                     {"notify_failed", gc.notify_failed},
                     {"notify_timed_out", gc.notify_timed_out},
                     {"commands_dropped", gc.notify_dropped},
                     {"active_command_run", gc.active_command_run},
                     {"active_command_failed", gc.active_command_failed},
                     {"active_command_timed_out", gc.active_command_timed_out}};
    const uint16_t interval_cs = static_cast<uint16_t>(c.advert_interval_ms / 10);
    const uint16_t active_cs = sm ? sm->activeAdverIntervalCs() : interval_cs;
    const uint8_t prio = sm ? sm->priority() : c.priority;
    groups.push_back(
        {{"vrid", c.vrid},
         {"port", c.port},
         {"family", g.v6 ? "ipv6" : "ipv4"},
         {"state", sm ? std::string(toString(sm->state())) : std::string("initialize")},
         {"down_reason", g.down_reason.empty() ? json(nullptr) : json(g.down_reason)},
         {"priority", {{"configured", c.priority}, {"effective", prio}}},
         {"primary_address", g.has_primary ? json(proto::toString(g.primary)) : json(nullptr)},
         {"active_address", active},
         {"virtual_addresses", vips},
         {"virtual_mac", macText(g.vmac)},
         {"mode", g.peers.empty() ? "multicast" : "unicast"},
         {"preempt", c.preempt},
         {"accept_mode", c.accept_mode},
         {"timers",
          {{"advert_interval_ms", c.advert_interval_ms},
           {"active_advert_interval_ms", active_cs * 10},
           {"skew_ms", ms(skewTime(prio, active_cs))},
           {"active_down_interval_ms", ms(downInterval(prio, active_cs))},
           {"preempt_delay_ms", c.preempt_delay_ms},
           {"announce_interval_ms", c.announce_interval_ms}}},
         {"transitions", sc.transitions},
         {"last_transition", last},
         {"tracking", tracking},
         {"counters", counters}});
  }
  json ports = json::array();
  for (const auto& [name, io] : ports_) {
    json malformed = json::object();
    for (const auto& [why, n] : io->malformed) {
      malformed[why] = n;
    }
    ports.push_back({{"port", name},
                     {"interface", io->side.ifname.empty() ? json(nullptr) : json(io->side.ifname)},
                     {"listening", io->sockets.has_value()},
                     {"error", io->error.empty() ? json(nullptr) : json(io->error)},
                     {"frames", io->frames},
                     {"unknown_vrid", io->unknown_vrid},
                     {"malformed", malformed},
                     {"read_errors", io->read_errors}});
  }
  const char* mode = standing_.mode == BgpStanding::Mode::kActive    ? "active"
                     : standing_.mode == BgpStanding::Mode::kPrepend ? "prepend"
                                                                     : "withdraw";
  return {{"groups", groups},
          {"ports", ports},
          {"bgp_standing", {{"mode", mode}, {"prepend", standing_.prepend}}},
          {"site_reachable", site_reachable_.value_or(true)}};
}

}  // namespace mcgw::vrrp
