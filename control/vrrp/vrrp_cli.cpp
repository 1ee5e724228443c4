#include "control/vrrp/vrrp_cli.hpp"

#include <sstream>

namespace mcgw::vrrp {

namespace {

using nlohmann::json;

std::string str(const json& j, const char* key) {
  if (!j.is_object() || !j.contains(key) || j[key].is_null()) {
    return "-";
  }
  return j[key].is_string() ? j[key].get<std::string>() : j[key].dump();
}

uint64_t num(const json& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_number_unsigned() ? j[key].get<uint64_t>()
                                                                         : 0;
}

}  // namespace

std::string renderVrrp(const json& v) {
  if (!v.is_object() || !v.contains("groups") || !v["groups"].is_array() || v["groups"].empty()) {
    return "";
  }
  std::ostringstream o;
  for (const auto& g : v["groups"]) {
    const json& p = g.contains("priority") ? g["priority"] : json::object();
    const json& t = g.contains("timers") ? g["timers"] : json::object();
    o << "  vrid " << str(g, "vrid") << " on " << str(g, "port") << " (" << str(g, "family") << ", "
      << str(g, "mode") << "): " << str(g, "state") << ", priority " << str(p, "effective");
    if (str(p, "effective") != str(p, "configured")) {
      o << " (configured " << str(p, "configured") << ")";
    }
    o << ", active " << str(g, "active_address") << ", virtual";
    for (const auto& a : g.value("virtual_addresses", json::array())) {
      o << " " << (a.is_string() ? a.get<std::string>() : a.dump());
    }
    o << " (" << str(g, "virtual_mac") << ")\n";
    o << "    interval " << str(t, "advert_interval_ms") << " ms (active's "
      << str(t, "active_advert_interval_ms") << "), down interval "
      << str(t, "active_down_interval_ms") << " ms, skew " << str(t, "skew_ms") << " ms; "
      << num(g, "transitions") << " transitions";
    if (g.contains("last_transition") && g["last_transition"].is_object()) {
      const json& l = g["last_transition"];
      o << ", last " << str(l, "from") << " -> " << str(l, "to") << " (" << str(l, "reason")
        << ") at " << str(l, "at");
    }
    o << "\n";
    if (g.contains("down_reason") && g["down_reason"].is_string()) {
      o << "    ! " << g["down_reason"].get<std::string>() << "\n";
    }
    for (const auto& tr : g.value("tracking", json::array())) {
      o << "    track " << str(tr, "object") << " weight " << str(tr, "weight") << ": "
        << (tr.value("up", true) ? "up" : "DOWN") << "\n";
    }
  }
  if (v.contains("bgp_standing") && v["bgp_standing"].is_object()) {
    o << "  BGP follows VRRP: " << str(v["bgp_standing"], "mode") << "\n";
  }
  if (v.value("site_reachable", true) == false) {
    o << "  ! site LAN unreachable (a VRRP port without link): BFD held on af_xdp WAN ports\n";
  }
  return o.str();
}

}  // namespace mcgw::vrrp
