#include "control/api/json_text.hpp"

#include "config/text.hpp"

namespace mcgw::api {

using nlohmann::json;

namespace {

bool isUtf8(const std::string& s) {
  auto p = text::findProblem(s, text::Breaks::kAllowed);
  return !p || !p->invalid_utf8;
}

std::string escapedAll(const std::string& s) {
  return text::escapeInvalidUtf8(s);
}

}  // namespace

json sanitized(const json& j) {
  switch (j.type()) {
    case json::value_t::string: {
      const auto& s = j.get_ref<const std::string&>();
      return isUtf8(s) ? j : json(escapedAll(s));
    }
    case json::value_t::array: {
      json out = json::array();
      for (const auto& v : j) {
        out.push_back(sanitized(v));
      }
      return out;
    }
    case json::value_t::object: {
      json out = json::object();
      for (const auto& [k, v] : j.items()) {
        out[isUtf8(k) ? k : escapedAll(k)] = sanitized(v);
      }
      return out;
    }
    default:
      return j;
  }
}

std::string dump(const json& j, int indent) {
  try {
    return j.dump(indent);
  } catch (const json::exception&) {
    // Only strings that are not UTF-8 make dump() throw; write them escaped.
  }
  try {
    return sanitized(j).dump(indent, ' ', false, json::error_handler_t::replace);
  } catch (const std::exception&) {
    return R"({"ok": false, "error": {"message": "the response could not be written"}})";
  }
}

}  // namespace mcgw::api
