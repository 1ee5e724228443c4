// JSON that can always be written.  nlohmann::json throws when it dumps a
// string that is not UTF-8; every JSON document mcgw writes (API responses,
// `mcgwctl ... --json`) goes through dump() here instead, which never throws:
// in such strings (and object keys) the bytes that are not UTF-8 are written
// \xXX (text::escapeInvalidUtf8: "caf\xE9"), so that no byte from a config,
// the kernel or a request can make a response fail.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace mcgw::api {

// j with every string and object key that is not valid UTF-8 escaped.
nlohmann::json sanitized(const nlohmann::json& j);

// j as text (indent < 0: one line).  Never throws.
std::string dump(const nlohmann::json& j, int indent = -1);

// What a value is, for an error: "a string", "an array", "null", ...
const char* typeName(const nlohmann::json& j);

// nlohmann's parse error without the input it quotes ("last read: '...'"),
// escaped: "syntax error while parsing value - invalid literal" ->
// "invalid literal".  Untrusted input never reaches a message through it.
std::string parseErrorReason(const std::string& what);

}  // namespace mcgw::api
