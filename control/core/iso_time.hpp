// A time as status and logs write it: 2026-12-03T08:00:00Z (UTC).
#pragma once

#include <chrono>
#include <string>

namespace mcgw::core {

std::string isoTime(std::chrono::system_clock::time_point t);

}  // namespace mcgw::core
