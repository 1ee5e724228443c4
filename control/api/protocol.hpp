// The operator API's wire protocol.
//
// A client connects to the Unix socket (default /run/mcgw/mcgw.sock), writes
// one request as a single line of JSON and reads one response line; then the
// server closes the connection.
//
//   request:  {"version": 1, "command": "status", "args": {...}}
//   response: {"version": 1, "ok": true, "result": {...}}
//             {"version": 1, "ok": false, "error": {"message": "...", "details": [...]}}
//
// A request of another major version is refused with an error naming the
// versions the server speaks.  Commands: see control/daemon/requests.cpp.
// Bounds (docs/operations.md, "The operator API and its bounds"): a request
// line of kMaxRequestBytes, Server::kMaxClients connections, 5 s to send a
// request; every response is valid UTF-8 JSON (api::dump).
#pragma once

#include <cstddef>

namespace mcgw::api {

inline constexpr int kVersion = 1;
inline constexpr size_t kMaxRequestBytes = 64 * 1024;
inline constexpr const char* kDefaultSocket = "/run/mcgw/mcgw.sock";

// The schema name and version of `mcgwctl status --json`.  Fields are only
// ever added within a version; a removal or change of meaning bumps it.
inline constexpr const char* kStatusSchema = "mcgw.status/1";

}  // namespace mcgw::api
