// The operator API's commands: what each takes and which Gateway function
// answers it.  The server (control/api) has already checked the request's
// shape; this checks each command's arguments and calls the one domain
// function that the CLI, SIGHUP and tests share.
#pragma once

#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "control/daemon/gateway.hpp"

namespace mcgw::daemon {

// The response body to one command.  reload is how this process reloads
// (mcgwd brackets Gateway::reload() with systemd notifications); who is the
// client, as changes are logged ("local socket", or the HTTPS client's
// certificate name).
nlohmann::json handleRequest(Gateway& gw, const std::string& command, const nlohmann::json& args,
                             const std::function<ReloadOutcome()>& reload,
                             const std::string& who = "local socket");

}  // namespace mcgw::daemon
