#include "control/frr/own_traffic_guard.hpp"

#include <set>

namespace mcgw::frr {

std::string renderOwnTrafficGuard(const config::Config& config,
                                  const std::vector<std::string>& wan_interfaces) {
  std::set<config::IpPrefix> v4, v6;
  auto add = [&](const config::IpPrefix& p) {
    (p.address.family == config::Family::V4 ? v4 : v6).insert(p.network());
  };
  for (const auto& vpc : config.address_plan.vpcs) {
    for (const auto& p : vpc.prefixes) {
      add(p);
    }
  }
  for (const auto& m : config.address_plan.mapped_ranges) {
    add(m.mapped);
  }
  // `table X` then `delete table X`: removes the table whether it exists or
  // not, in the same transaction as its new contents.
  std::string out =
      std::string("table inet ") + kGuardTable + "\ndelete table inet " + kGuardTable + "\n";
  if ((v4.empty() && v6.empty()) || wan_interfaces.empty()) {
    return out;
  }
  std::string ifs;
  for (const auto& i : wan_interfaces) {
    // Kernel names may hold quotes; ours never do, and nothing else is
    // written into the script.
    bool plain =
        !i.empty() && i.size() < 16 &&
        i.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-@") ==
            std::string::npos;
    if (plain) {
      ifs += (ifs.empty() ? "\"" : ", \"") + i + "\"";
    }
  }
  if (ifs.empty()) {
    return out;
  }
  auto set = [](const char* name, const char* type, const std::set<config::IpPrefix>& ps) {
    std::string s =
        std::string("  set ") + name + " {\n    type " + type + "\n    flags interval\n";
    if (!ps.empty()) {
      std::string elements;
      for (const auto& p : ps) {
        elements += (elements.empty() ? "" : ", ") + p.toString();
      }
      s += "    elements = { " + elements + " }\n";
    }
    return s + "  }\n";
  };
  out += std::string("table inet ") + kGuardTable + " {\n";
  out += set("plan4", "ipv4_addr", v4);
  out += set("plan6", "ipv6_addr", v6);
  out += "  chain output {\n    type filter hook output priority 0; policy accept;\n";
  out += "    oifname { " + ifs + " } ip daddr @plan4 counter reject with icmpx admin-prohibited\n";
  out +=
      "    oifname { " + ifs + " } ip6 daddr @plan6 counter reject with icmpx admin-prohibited\n";
  out += "  }\n}\n";
  return out;
}

}  // namespace mcgw::frr
