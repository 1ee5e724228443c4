// Live policy rules (live_rules.hpp): the overlay text, the candidate config,
// and the Gateway's requests and reload step for them.
#include "control/daemon/live_rules.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "config/loader.hpp"
#include "config/text.hpp"
#include "control/core/iso_time.hpp"
#include "control/daemon/gateway.hpp"

namespace mcgw::daemon {

using nlohmann::json;

namespace {

std::string dump(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

// ".name", or ["na me"] for a key that is not a plain word.
std::string member(const std::string& key) {
  const bool plain = !key.empty() && std::all_of(key.begin(), key.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_';
  });
  return plain ? "." + key : "[" + text::quote(key) + "]";
}

// value written at the end of line, with spans for its items when it is a
// list (where[0], where[1], ...).
void appendValue(std::string& line, OverlayText::Line& info, const json& value,
                 const std::string& where) {
  if (!value.is_array() || value.empty()) {
    line += dump(value);
    return;
  }
  line += "[";
  for (size_t i = 0; i < value.size(); ++i) {
    if (i > 0) {
      line += ", ";
    }
    const int first = static_cast<int>(line.size()) + 1;
    line += dump(value[i]);
    info.spans.push_back(
        {first, static_cast<int>(line.size()), where + "[" + std::to_string(i) + "]"});
  }
  line += "]";
}

}  // namespace

std::string OverlayText::locate(int line, int column) const {
  if (line < 1 || static_cast<size_t>(line) > lines.size()) {
    return "policy";
  }
  const Line& l = lines[static_cast<size_t>(line) - 1];
  std::string where = l.where;
  for (const Span& s : l.spans) {
    if (column >= s.first && column <= s.last) {
      where = s.where;  // later spans are finer
    }
  }
  return where;
}

// {
// "default": "deny",
// "rules": [
// {"name": "a", "action": "allow", "source": ["10.0.0.0/8"]},
// ...
// ]
// }
OverlayText overlayText(const json& policy) {
  OverlayText out;
  auto add = [&out](std::string line, OverlayText::Line info) {
    out.text += line + "\n";
    out.lines.push_back(std::move(info));
  };
  if (!policy.is_object()) {
    add(dump(policy), {"policy", {}});
    return out;
  }
  add("{", {"policy", {}});
  size_t n = 0;
  for (const auto& [key, value] : policy.items()) {
    const std::string comma = ++n < policy.size() ? "," : "";
    const std::string where = "policy" + member(key);
    if (key == "rules" && value.is_array() && !value.empty()) {
      add(dump(key) + ": [", {where, {}});
      for (size_t i = 0; i < value.size(); ++i) {
        const json& rule = value[i];
        const std::string rwhere = where + "[" + std::to_string(i) + "]";
        OverlayText::Line info{rwhere, {}};
        std::string line;
        if (rule.is_object() && !rule.empty()) {
          line = "{";
          size_t m = 0;
          for (const auto& [k, v] : rule.items()) {
            if (m++ > 0) {
              line += ", ";
            }
            const int first = static_cast<int>(line.size()) + 1;
            const size_t at = info.spans.size();
            info.spans.push_back({first, 0, rwhere + member(k)});
            line += dump(k) + ": ";
            appendValue(line, info, v, rwhere + member(k));
            info.spans[at].last = static_cast<int>(line.size());
          }
          line += "}";
        } else {
          line = dump(rule);
        }
        add(line + (i + 1 < value.size() ? "," : ""), std::move(info));
      }
      add("]" + comma, {where, {}});
      continue;
    }
    OverlayText::Line info{where, {}};
    std::string line = dump(key) + ": ";
    appendValue(line, info, value, where);
    add(line + comma, std::move(info));
  }
  add("}", {"policy", {}});
  return out;
}

WithLive loadWithLive(const std::string& text, const std::string& file_name,
                      const std::map<std::string, LiveRules>& live) {
  WithLive out;
  std::vector<config::PolicyOverlay> overlays;
  std::vector<OverlayText> texts;
  // Each overlay's lines after the file's (and the previous overlay's).
  int next = static_cast<int>(std::count(text.begin(), text.end(), '\n')) + 2;
  for (const auto& [tenant, rules] : live) {
    texts.push_back(overlayText(rules.policy));
    overlays.push_back({tenant, texts.back().text, next});
    next += static_cast<int>(texts.back().lines.size()) + 1;
  }
  // Where a line is in its overlay ("" for the file's lines).
  auto where = [&](int line, int column) -> std::pair<const std::string*, std::string> {
    for (size_t i = overlays.size(); i-- > 0;) {
      if (line >= overlays[i].first_line) {
        return {&overlays[i].tenant, texts[i].locate(line - overlays[i].first_line + 1, column)};
      }
    }
    return {nullptr, ""};
  };
  // A problem in an overlay by the tenant and where in its policy; a line
  // it names ("first defined at line N") likewise.
  auto word = [&](const config::ConfigError& e) {
    auto [tenant, at] = where(e.line, e.column);
    if (!tenant) {
      return e.toString();
    }
    std::string message = e.message;
    for (size_t pos = message.find("line "); pos != std::string::npos;
         pos = message.find("line ", pos + 1)) {
      const size_t digits = pos + 5;
      size_t end = digits;
      while (end < message.size() && end - digits < 9 && message[end] >= '0' &&
             message[end] <= '9') {
        ++end;
      }
      if (end == digits) {
        continue;
      }
      if (auto [t, a] = where(std::stoi(message.substr(digits, end - digits)), 1); t == tenant) {
        message.replace(pos, end - pos, a);
      }
    }
    return "tenant " + text::quote(*tenant) + ": " + at + ": " + message;
  };
  auto loaded = config::loadConfigTextWith(text, file_name, overlays);
  if (!loaded) {
    for (const auto& e : loaded.error()) {
      out.errors.push_back(word(e));
    }
    return out;
  }
  out.config = *loaded;
  const int file_lines = overlays.empty() ? 0 : overlays.front().first_line;
  for (const auto& w : out.config->warnings) {
    if (!overlays.empty() && w.line >= file_lines) {
      out.warnings.push_back(word(w));
    }
  }
  return out;
}

// ------------------------------------------------------------------ Gateway

std::string Gateway::rulesSource(const std::string& tenant) const {
  auto it = live_rules_.find(tenant);
  return it == live_rules_.end()
             ? "config"
             : "live by " + it->second.who + " since " + core::isoTime(it->second.since);
}

bool Gateway::liveRulesOver(LoadedConfig& loaded, std::vector<std::string>& errors,
                            std::vector<std::string>& ended) const {
  if (live_rules_.empty()) {
    return true;
  }
  std::map<std::string, LiveRules> kept;
  for (const auto& [tenant, rules] : live_rules_) {
    if (loaded.config->findTenant(tenant)) {
      kept.emplace(tenant, rules);
    } else {
      ended.push_back(tenant);
    }
  }
  if (kept.empty()) {
    return true;
  }
  WithLive with = loadWithLive(loaded.text, loaded.config->source, kept);
  if (!with.config) {
    for (const auto& [tenant, rules] : kept) {
      errors.push_back("tenant " + text::quote(tenant) + " has live rules (set by " + rules.who +
                       " at " + core::isoTime(rules.since) +
                       "), which stay over the file's policy; with the new file they are "
                       "refused as follows.  Clear them first (mcgwctl policy rules clear " +
                       tenant + ") or change the file:");
    }
    errors.insert(errors.end(), with.errors.begin(), with.errors.end());
    return false;
  }
  for (const auto& w : with.warnings) {
    spdlog::warn("live rules: {}", w);
  }
  for (const auto& [tenant, rules] : kept) {
    spdlog::info("reload: tenant {} keeps its live rules (set by {}) over the file's policy",
                 tenant, rules.who);
  }
  loaded.config = with.config;
  return true;
}

void Gateway::liveRulesEnded(const std::vector<std::string>& tenants) {
  for (const auto& tenant : tenants) {
    if (auto it = live_rules_.find(tenant); it != live_rules_.end()) {
      spdlog::info("reload: tenant {} is gone: its live rules (set by {}) end", tenant,
                   it->second.who);
      live_rules_.erase(it);
    }
  }
}

Result<std::string, std::vector<std::string>> Gateway::applyLiveRules(
    std::map<std::string, LiveRules> live, const std::string& what) {
  WithLive with = loadWithLive(config_text_, file_config_->source, live);
  if (!with.config) {
    return unexpected(std::move(with.errors));
  }
  ReloadOutcome out = reloadWith({with.config, config_text_},
                                 plan_ ? plan_->snapshot() : plan::Snapshot{}, false, what);
  if (!out.ok) {
    return unexpected(std::move(out.errors));
  }
  live_rules_ = std::move(live);
  std::string message;
  for (const auto& w : with.warnings) {
    message += "\nwarning: " + w;
  }
  return message;
}

Result<std::string, std::vector<std::string>> Gateway::setLiveRules(const std::string& tenant,
                                                                    const json& policy,
                                                                    const std::string& who) {
  if (!config_->findTenant(tenant)) {
    return unexpected(std::vector<std::string>{"no tenant " + text::quote(tenant)});
  }
  auto live = live_rules_;
  live[tenant] = {policy, who, std::chrono::system_clock::now()};
  auto r = applyLiveRules(std::move(live), "live rules of tenant " + tenant + " by " + who);
  if (!r) {
    spdlog::warn("policy rules: {} could not set tenant {}'s rules: {}", who, tenant,
                 r.error().empty() ? "" : r.error().front());
    return r;
  }
  const config::TenantConfig* t = config_->findTenant(tenant);
  const size_t n = t ? t->policy.rules.size() : 0;
  const std::string summary = "tenant " + tenant + ": " + std::to_string(n) + " live rule" +
                              (n == 1 ? "" : "s") + ", default " +
                              (t && t->policy.default_deny ? "deny" : "allow") + ", in force";
  spdlog::info("policy rules: {} set the live rules of tenant {}: {} rule{}, default {}", who,
               tenant, n, n == 1 ? "" : "s", t && t->policy.default_deny ? "deny" : "allow");
  return summary + *r;
}

Result<std::string, std::vector<std::string>> Gateway::clearLiveRules(const std::string& tenant,
                                                                      const std::string& who) {
  if (!config_->findTenant(tenant)) {
    return unexpected(std::vector<std::string>{"no tenant " + text::quote(tenant)});
  }
  if (!live_rules_.contains(tenant)) {
    return "tenant " + tenant + ": no live rules; the config's rules are in force";
  }
  auto live = live_rules_;
  live.erase(tenant);
  auto r = applyLiveRules(std::move(live), "live rules of tenant " + tenant + " cleared by " + who);
  if (!r) {
    spdlog::warn("policy rules: {} could not clear tenant {}'s live rules: {}", who, tenant,
                 r.error().empty() ? "" : r.error().front());
    return r;
  }
  spdlog::info("policy rules: {} cleared the live rules of tenant {}: the config's apply again",
               who, tenant);
  return "tenant " + tenant + ": back to the config's rules";
}

}  // namespace mcgw::daemon
