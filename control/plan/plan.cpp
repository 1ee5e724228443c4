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

}  // namespace mcgw::plan
