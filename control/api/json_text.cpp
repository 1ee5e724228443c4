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

const char* typeName(const nlohmann::json& j) {
  switch (j.type()) {
    case nlohmann::json::value_t::null:
      return "null";
    case nlohmann::json::value_t::boolean:
      return "a boolean";
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned:
    case nlohmann::json::value_t::number_float:
      return "a number";
    case nlohmann::json::value_t::string:
      return "a string";
    case nlohmann::json::value_t::array:
      return "an array";
    case nlohmann::json::value_t::object:
      return "an object";
    default:
      return "a value";
  }
}

std::string parseErrorReason(const std::string& what) {
  std::string reason = what;
  if (size_t dash = reason.find(" - "); dash != std::string::npos) {
    reason = reason.substr(dash + 3);
  }
  if (size_t last = reason.find("; last read: "); last != std::string::npos) {
    size_t expected = reason.find("; expected ", last);
    reason = reason.substr(0, last) +
             (expected == std::string::npos ? std::string() : reason.substr(expected));
  }
  return text::escape(reason, 200);
}

}  // namespace mcgw::api
