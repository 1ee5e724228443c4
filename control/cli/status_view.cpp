#include "control/cli/status_view.hpp"

#include <cstdio>
#include <sstream>

namespace mcgw::cli {

using nlohmann::json;

namespace {

std::string duration(int64_t s) {
  char buf[64];
  if (s >= 86400) {
    std::snprintf(buf, sizeof buf, "%lldd %02lldh %02lldm", static_cast<long long>(s / 86400),
                  static_cast<long long>(s % 86400 / 3600), static_cast<long long>(s % 3600 / 60));
  } else {
    std::snprintf(buf, sizeof buf, "%02lld:%02lld:%02lld", static_cast<long long>(s / 3600),
                  static_cast<long long>(s % 3600 / 60), static_cast<long long>(s % 60));
  }
  return buf;
}

std::string str(const json& j, const char* key) {
  return j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : "-";
}

}  // namespace

std::string renderStatus(json s) {
  std::ostringstream o;
  json& health = s["health"];
  bool healthy = health.value("state", "") == "healthy";
  o << "mcgw " << str(s["node"], "name") << " (site " << str(s["node"], "site")
    << "): " << (healthy ? "HEALTHY" : "DEGRADED") << "\n";
  for (const auto& r : health["reasons"]) {
    o << "  ! " << r.get<std::string>() << "\n";
  }

  json& c = s["config"];
  o << "\nConfig   " << str(c, "file") << "\n"
    << "         sha256 " << str(c, "checksum") << "\n"
    << "         loaded " << str(c, "loaded_at") << "\n";
  if (c.contains("last_reload") && c["last_reload"].is_object()) {
    json& r = c["last_reload"];
    o << "         last reload " << str(r, "at") << ": "
      << (r.value("ok", false) ? "applied" : "REFUSED") << "\n";
    for (const auto& e : r["errors"]) {
      o << "           " << e.get<std::string>() << "\n";
    }
  }
  json& d = s["daemon"];
  o << "Daemon   mcgwd " << str(d, "version") << ", pid " << d.value("pid", 0) << ", up "
    << duration(d.value("uptime_s", int64_t{0})) << " (since " << str(d, "started_at") << ")\n";

  o << "\nPorts\n";
  char line[256];
  std::snprintf(line, sizeof line, "  %-10s %-4s %-5s %7s %5s %-16s %12s %12s %10s %8s\n", "NAME",
                "ROLE", "LINK", "SPEED", "MTU", "DRIVER", "RX PKTS", "TX PKTS", "RX MISSED",
                "ERRORS");
  o << line;
  for (auto& p : s["ports"]) {
    json& k = p["counters"];
    uint64_t errors = k.value("rx_errors", uint64_t{0}) + k.value("tx_errors", uint64_t{0}) +
                      k.value("rx_nombuf", uint64_t{0});
    uint32_t speed = p["link"].value("speed_mbps", 0u);
    std::string speed_s =
        speed ? std::to_string(speed >= 1000 ? speed / 1000 : speed) + (speed >= 1000 ? "G" : "M")
              : "-";
    std::snprintf(line, sizeof line, "  %-10s %-4s %-5s %7s %5u %-16s %12llu %12llu %10llu %8llu\n",
                  str(p, "name").c_str(), str(p, "role").c_str(),
                  p["link"].value("up", false) ? "up" : "DOWN", speed_s.c_str(), p.value("mtu", 0u),
                  str(p, "driver").c_str(),
                  static_cast<unsigned long long>(k.value("rx_packets", uint64_t{0})),
                  static_cast<unsigned long long>(k.value("tx_packets", uint64_t{0})),
                  static_cast<unsigned long long>(k.value("rx_missed", uint64_t{0})),
                  static_cast<unsigned long long>(errors));
    o << line;
  }
  return o.str();
}

}  // namespace mcgw::cli
