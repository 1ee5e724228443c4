#include "control/plan/plan.hpp"

#include <algorithm>

#include "config/text.hpp"

namespace mcgw::plan {

const StoredVpc* Snapshot::find(const std::string& name) const {
  auto it = std::lower_bound(vpcs.begin(), vpcs.end(), name,
                             [](const StoredVpc& v, const std::string& n) { return v.name < n; });
  return it != vpcs.end() && it->name == name ? &*it : nullptr;
}

bool isValidName(std::string_view name) {
  if (name.empty() || name.size() > 63) {
    return false;
  }
  auto letter = [](char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'); };
  if (!letter(name[0])) {
    return false;
  }
  return std::all_of(name.begin(), name.end(), [&](char c) {
    return letter(c) || (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
  });
}

bool isValidSource(std::string_view s) {
  if (s.size() > 63) {
    return false;
  }
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '.' || c == '-' || c == ':';
  });
}

std::string storedVpcProblem(const StoredVpc& v) {
  const std::string who = "VPC " + text::quote(v.name);
  if (!isValidName(v.name)) {
    return who +
           ": the name is not valid (1..63 letters, digits, '_', '.', '-' starting with a "
           "letter)";
  }
  for (const auto* field : {&v.cloud, &v.region}) {
    if (!isValidName(*field)) {
      return who + ": cloud or region " + text::quote(*field) + " is not a valid name";
    }
  }
  for (const auto* field : {&v.pool, &v.tenant, &v.site}) {
    if (!field->empty() && !isValidName(*field)) {
      return who + ": pool, tenant or site " + text::quote(*field) + " is not a valid name";
    }
  }
  if (!isValidSource(v.source)) {
    return who + ": source " + text::quote(v.source) + " is not valid";
  }
  if (v.prefixes.empty() || v.prefixes.size() > kMaxPrefixesPerVpc) {
    return who + ": " + std::to_string(v.prefixes.size()) + " prefixes; a VPC has 1.." +
           std::to_string(kMaxPrefixesPerVpc);
  }
  for (const auto& p : v.prefixes) {
    if (p.hasHostBits()) {
      return who + ": " + p.toString() + " has host bits set";
    }
  }
  return "";
}

std::vector<Reserved> reservedRanges(const config::Config& config, const Snapshot* snapshot) {
  std::vector<Reserved> out;
  for (const auto& b : config::kBuiltinReserved) {
    out.push_back({*IpPrefix::parse(b.prefix), b.why});
  }
  for (const auto& p : config.ports) {
    if (p.role == config::PortRole::kWan) {
      for (const auto& a : p.addresses) {
        out.push_back({a.network(), "the underlay: wan port " + p.name});
      }
    }
  }
  for (const auto& peer : config.peers) {
    for (const auto& l : peer.lines) {
      for (const auto& a : {l.local_vtep, l.remote_vtep}) {
        out.push_back({{a, static_cast<uint8_t>(a.bits())},
                       "the underlay: a VTEP of line " + peer.name + "/" + l.name});
      }
    }
  }
  // 100.64.0.0/10 when a VPC of a cloud that keeps it is in the plan, the
  // file's or the store's.
  const char* keeper = nullptr;
  for (const auto& v : config.address_plan.vpcs) {
    keeper = keeper ? keeper : config::cloudReserving100_64(v.cloud);
  }
  if (snapshot) {
    for (const auto& v : snapshot->vpcs) {
      keeper = keeper ? keeper : config::cloudReserving100_64(v.cloud);
    }
  }
  if (keeper) {
    out.push_back({*IpPrefix::parse("100.64.0.0/10"),
                   std::string(keeper) + "'s own services (a cloud of the plan)"});
  }
  for (const auto& r : config.address_plan.reserved) {
    out.push_back({r.prefix.network(), "address-plan.reserved " + r.name});
  }
  return out;
}

std::vector<IpPrefix> prefixesOf(const std::vector<Reserved>& reserved) {
  std::vector<IpPrefix> out;
  out.reserve(reserved.size());
  for (const auto& r : reserved) {
    out.push_back(r.prefix);
  }
  return out;
}

}  // namespace mcgw::plan
