#include "dataplane/policy/expand.hpp"

#include <algorithm>
#include <array>

namespace mcgw::policy {

namespace {

using config::Family;
using config::IpPrefix;

// A side of a rule (its sources or destinations), resolved: any address, or
// these prefixes of each family.
struct Side {
  bool any = true;
  std::vector<IpPrefix> of[2];  // [0] IPv4, [1] IPv6
  std::string unresolved;       // the first object that named nothing
};

Side resolveSide(const config::Config& c, const std::vector<std::string>& objects) {
  Side s;
  s.any = objects.empty();
  for (const auto& o : objects) {
    auto prefixes = resolvePolicyObject(c, o);
    if (prefixes.empty() && s.unresolved.empty()) {
      s.unresolved = o;
    }
    for (const auto& p : prefixes) {
      s.of[p.address.family == Family::V6 ? 1 : 0].push_back(p.network());
    }
  }
  for (auto& v : s.of) {
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
  }
  return s;
}

std::string joined(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) {
    out += (out.empty() ? "" : ",") + s;
  }
  return out.empty() ? "any" : out;
}

std::string ports(uint16_t lo, uint16_t hi) {
  return lo == hi ? std::to_string(lo) : std::to_string(lo) + "-" + std::to_string(hi);
}

// "tcp 10.1.0.0/16 -> vpc gpu-b dport 22 dscp 46"
std::string matchText(const config::PolicyRule& r) {
  std::string out = r.protocol ? config::protocolName(*r.protocol) : "any";
  out += " " + joined(r.source) + " -> " + joined(r.destination);
  if (r.sport_lo != 0 || r.sport_hi != 65535) {
    out += " sport " + ports(r.sport_lo, r.sport_hi);
  }
  if (r.dport_lo != 0 || r.dport_hi != 65535) {
    out += " dport " + ports(r.dport_lo, r.dport_hi);
  }
  if (r.dscp) {
    out += " dscp " + std::to_string(*r.dscp);
  }
  return out;
}

// The text a compiled policy depends on: its rules with their objects
// resolved.  Equal texts give equal classifiers.
void keyOf(std::string& key, const std::vector<IpPrefix>& v) {
  for (const auto& p : v) {
    key += p.toString() + ",";
  }
  key += ";";
}

}  // namespace

Prefix toPrefix(const IpPrefix& p) {
  Prefix out;
  const IpPrefix n = p.network();
  std::copy_n(n.address.bytes.begin(), n.address.family == Family::V6 ? 16 : 4,
              out.address.begin());
  out.length = p.length;
  return out;
}

Expanded expand(const config::Config& c, const config::TenantConfig& t) {
  Expanded e;
  e.key = t.policy.default_deny ? "deny|" : "allow|";
  std::array<size_t, 2> per_family{};
  for (size_t i = 0; i < t.policy.rules.size(); ++i) {
    const config::PolicyRule& r = t.policy.rules[i];
    RuleView view{r.name, r.deny, matchText(r), 0, 0, ""};
    const Side src = resolveSide(c, r.source), dst = resolveSide(c, r.destination);
    e.key += r.name + (r.deny ? "|deny|" : "|allow|") + view.match + "|";
    keyOf(e.key, src.of[0]);
    keyOf(e.key, src.of[1]);
    keyOf(e.key, dst.of[0]);
    keyOf(e.key, dst.of[1]);
    for (int fam = 0; fam < 2; ++fam) {
      const std::vector<IpPrefix> any{IpPrefix{}};
      const auto& sources = src.any ? any : src.of[fam];
      const auto& destinations = dst.any ? any : dst.of[fam];
      per_family[fam] += sources.size() * destinations.size();
      if (per_family[fam] > kMaxEntries) {
        e.too_many = "rule " + r.name + " brings the " + (fam ? "IPv6" : "IPv4") + " entries to " +
                     std::to_string(per_family[fam]) + ", more than the " +
                     std::to_string(kMaxEntries) + " a tenant may have (one per source and " +
                     "destination prefix)";
        e.entries.clear();
        return e;
      }
      for (const auto& s : sources) {
        for (const auto& d : destinations) {
          Rule entry;
          entry.v6 = fam == 1;
          entry.source = src.any ? Prefix{} : toPrefix(s);
          entry.destination = dst.any ? Prefix{} : toPrefix(d);
          entry.protocol = r.protocol;
          entry.source_ports = {r.sport_lo, r.sport_hi};
          entry.destination_ports = {r.dport_lo, r.dport_hi};
          entry.dscp = r.dscp;
          entry.action = r.deny ? Action::kDeny : Action::kAllow;
          entry.id = static_cast<uint32_t>(i);
          e.entries.push_back(entry);
          ++view.entries;
        }
      }
    }
    if (view.entries == 0) {
      const std::string& unresolved = !src.unresolved.empty() ? src.unresolved : dst.unresolved;
      view.note = !unresolved.empty()
                      ? unresolved + " is not in the address plan in force: matches nothing"
                      : "its sources and destinations share no address family: matches nothing";
    }
    e.views.push_back(std::move(view));
  }
  return e;
}

std::vector<IpPrefix> resolvePolicyObject(const config::Config& c, const std::string& object) {
  const auto space = object.find(' ');
  if (space == std::string::npos) {
    auto p = IpPrefix::parse(object);
    return p ? std::vector<IpPrefix>{p->network()} : std::vector<IpPrefix>{};
  }
  const std::string kind = object.substr(0, space), name = object.substr(space + 1);
  std::vector<IpPrefix> out;
  for (const auto& v : c.address_plan.vpcs) {
    if ((kind == "vpc" ? v.name : kind == "site" ? v.site : v.cloud) == name) {
      out.insert(out.end(), v.prefixes.begin(), v.prefixes.end());
    }
  }
  return out;
}

}  // namespace mcgw::policy
