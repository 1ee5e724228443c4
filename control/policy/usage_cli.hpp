// Usage accounting (docs/policy.md, "Usage accounting") without DPDK:
// what `--since` means (parsed by mcgwd, checked early by mcgwctl) and
// mcgwctl's text for `show usage`, from the JSON mcgwd sends (schema
// mcgw.usage/1, usage.hpp).  Robust to missing or mistyped fields.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "config/result.hpp"

namespace mcgw::usage {

// The longest look back `--since` accepts (the files' longest retention).
inline constexpr std::chrono::days kMaxSinceAge{3660};

// `--since`: an RFC 3339 time ("2026-12-05T01:00:00Z",
// "2026-12-05T02:00:00+01:00", fractions of a second are cut off) or a
// relative age before `now`: a positive whole number and a unit s, m, h or d
// ("90s", "30m", "1h", "2d").  Not after `now`, not more than kMaxSinceAge
// before it; an error says which rule the text broke.
Result<std::chrono::sys_seconds, std::string> parseSince(std::string_view text,
                                                         std::chrono::system_clock::time_point now);

// "1.23 GB": decimal units (B, kB, MB, GB, TB, PB, EB), three significant
// digits.
std::string humanBytes(uint64_t bytes);

// The table of `mcgwctl show usage`: a heading (what the figures cover),
// one row per (tenant, peer/line) and warnings about the files.
std::string renderUsage(const nlohmann::json& view);

}  // namespace mcgw::usage
