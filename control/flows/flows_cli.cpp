#include "control/flows/flows_cli.hpp"

#include <algorithm>
#include <cstdint>
#include <vector>

namespace mcgw::flows {

using nlohmann::json;

namespace {

std::string str(const json& j, const char* key, const char* fallback = "-") {
  return j.is_object() && j.contains(key) && j[key].is_string() ? j[key].get<std::string>()
                                                                : fallback;
}

// A whole number >= 0 (any JSON integer type), else 0.
uint64_t num(const json& j, const char* key) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_number_integer()) {
    return 0;
  }
  return j[key].is_number_unsigned()
             ? j[key].get<uint64_t>()
             : static_cast<uint64_t>(std::max<int64_t>(0, j[key].get<int64_t>()));
}

std::string protocolName(uint64_t p) {
  switch (p) {
    case 1:
      return "icmp";
    case 6:
      return "tcp";
    case 17:
      return "udp";
    case 58:
      return "icmpv6";
    case 132:
      return "sctp";
    default:
      return std::to_string(p);
  }
}

// address:port ([address]:port for IPv6); the address alone without ports.
std::string endpoint(const json& f, const char* address, const char* port) {
  const std::string a = str(f, address, "?");
  const uint64_t p = num(f, port);
  const uint64_t proto = num(f, "protocol");
  if (proto != 6 && proto != 17 && proto != 132) {
    return a;
  }
  return (str(f, "family") == "ipv6" ? "[" + a + "]" : a) + ":" + std::to_string(p);
}

}  // namespace

std::string renderFlows(const json& v) {
  const json& flows =
      v.is_object() && v.contains("flows") && v["flows"].is_array() ? v["flows"] : json::array();
  const bool enabled = v.is_object() && v.contains("enabled") && v["enabled"].is_boolean() &&
                       v["enabled"].get<bool>();
  std::string out;
  if (!enabled) {
    out += "flow audit is off (flow-audit.sampling is not set)\n";
  } else {
    out += "flows: " + std::to_string(flows.size()) + " shown of " +
           std::to_string(num(v, "matched")) + " matching, " +
           std::to_string(num(v, "flows_active")) + " active; sampling 1-in-" +
           std::to_string(num(v, "sampling")) + " (packets and bytes are samples x " +
           std::to_string(num(v, "sampling")) + ")\n";
  }
  if (flows.empty()) {
    return out;
  }
  std::vector<std::vector<std::string>> rows = {{"TENANT", "PROTO", "SOURCE", "DESTINATION",
                                                 "DIRECTION", "LINE", "PACKETS", "BYTES", "STATUS",
                                                 "RULE"}};
  for (const json& f : flows) {
    std::string line = "-";
    if (f.is_object() && f.contains("line") && f["line"].is_string()) {
      line = str(f, "peer", "?") + "/" + f["line"].get<std::string>();
    }
    rows.push_back({str(f, "tenant", "?"), protocolName(num(f, "protocol")),
                    endpoint(f, "source", "source_port"),
                    endpoint(f, "destination", "destination_port"), str(f, "direction", "?"), line,
                    std::to_string(num(f, "packets")), std::to_string(num(f, "bytes")),
                    str(f, "status", "?"), str(f, "rule")});
  }
  std::vector<size_t> width(rows[0].size(), 0);
  for (const auto& r : rows) {
    for (size_t i = 0; i < r.size(); ++i) {
      width[i] = std::max(width[i], r[i].size());
    }
  }
  for (const auto& r : rows) {
    std::string text;
    for (size_t i = 0; i < r.size(); ++i) {
      if (i) {
        text += "  ";
      }
      const std::string pad(width[i] - r[i].size(), ' ');
      text += i == 6 || i == 7 ? pad + r[i] : r[i] + pad;  // figures right
    }
    while (!text.empty() && text.back() == ' ') {
      text.pop_back();
    }
    out += text + "\n";
  }
  return out;
}

}  // namespace mcgw::flows
