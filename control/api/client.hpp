// The API client used by mcgwctl and the tests.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "config/result.hpp"

namespace mcgw::api {

struct ClientError {
  bool unreachable = false;  // no daemon answered on the socket
  std::string message;
};

// Sends one request and returns the response object (which may itself carry
// "ok": false).  Gives up after timeout_ms.
Result<nlohmann::json, ClientError> call(const std::string& socket_path, const std::string& command,
                                         const nlohmann::json& args = nlohmann::json::object(),
                                         int timeout_ms = 30000);

}  // namespace mcgw::api
