#include "control/policy/usage_cli.hpp"

#include <algorithm>
#include <cstdio>
#include <vector>

namespace mcgw::usage {

using nlohmann::json;
namespace chr = std::chrono;

namespace {

constexpr size_t kMaxSinceText = 40;

// The text as an error may quote it: printable ASCII, at most 40 bytes.
std::string quoted(std::string_view s) {
  std::string out = "\"";
  for (size_t i = 0; i < s.size() && i < kMaxSinceText; ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    out += c >= 0x20 && c < 0x7f && c != '"' && c != '\\' ? static_cast<char>(c) : '?';
  }
  if (s.size() > kMaxSinceText) {
    out += "...";
  }
  return out + "\"";
}

std::string sinceError(std::string_view text, const std::string& why) {
  return "since " + quoted(text) + ": " + why;
}

const char* const kSinceForms =
    "expected an RFC 3339 time (2026-12-05T01:00:00Z, 2026-12-05T02:00:00+01:00) or an age "
    "before now (90s, 30m, 1h, 2d)";

bool digits(std::string_view s, size_t pos, size_t n, int* out) {
  if (pos + n > s.size()) {
    return false;
  }
  int v = 0;
  for (size_t i = pos; i < pos + n; ++i) {
    if (s[i] < '0' || s[i] > '9') {
      return false;
    }
    v = v * 10 + (s[i] - '0');
  }
  *out = v;
  return true;
}

bool at(std::string_view s, size_t pos, char c) {
  return pos < s.size() && s[pos] == c;
}

// "30m": the age in seconds, or an error.
Result<chr::seconds, std::string> parseAge(std::string_view text) {
  const std::string_view number = text.substr(0, text.size() - 1);
  if (number.size() > 9) {
    return unexpected(sinceError(text, "an age is at most 3660d"));
  }
  uint64_t n = 0;
  for (char c : number) {
    n = n * 10 + static_cast<uint64_t>(c - '0');
  }
  uint64_t unit = 1;
  switch (text.back()) {
    case 's':
      unit = 1;
      break;
    case 'm':
      unit = 60;
      break;
    case 'h':
      unit = 3600;
      break;
    case 'd':
      unit = 86400;
      break;
    default:
      return unexpected(sinceError(text, "the unit of an age is s, m, h or d"));
  }
  if (n == 0) {
    return unexpected(sinceError(text, "an age must be more than 0"));
  }
  const uint64_t secs = n * unit;  // < 1e9 * 86400: no overflow
  if (secs > static_cast<uint64_t>(chr::seconds(kMaxSinceAge).count())) {
    return unexpected(sinceError(text, "an age is at most 3660d"));
  }
  return chr::seconds(static_cast<int64_t>(secs));
}

// RFC 3339 (section 5.6): full-date "T" full-time; "t" and "z" too, and a
// space for the "T" (its note), fractions of a second cut off.
Result<chr::sys_seconds, std::string> parseRfc3339(std::string_view s, std::string_view text) {
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, se = 0;
  if (!digits(s, 0, 4, &y) || !at(s, 4, '-') || !digits(s, 5, 2, &mo) || !at(s, 7, '-') ||
      !digits(s, 8, 2, &d) || !(at(s, 10, 'T') || at(s, 10, 't') || at(s, 10, ' ')) ||
      !digits(s, 11, 2, &h) || !at(s, 13, ':') || !digits(s, 14, 2, &mi) || !at(s, 16, ':') ||
      !digits(s, 17, 2, &se)) {
    return unexpected(sinceError(text, kSinceForms));
  }
  size_t pos = 19;
  if (at(s, pos, '.')) {
    ++pos;
    const size_t first = pos;
    while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9') {
      ++pos;
    }
    if (pos == first || pos - first > 9) {
      return unexpected(sinceError(text, "a fraction of a second has 1 to 9 digits"));
    }
  }
  int offset_min = 0;
  if (at(s, pos, 'Z') || at(s, pos, 'z')) {
    ++pos;
  } else if (at(s, pos, '+') || at(s, pos, '-')) {
    int oh = 0, om = 0;
    if (!digits(s, pos + 1, 2, &oh) || !at(s, pos + 3, ':') || !digits(s, pos + 4, 2, &om) ||
        oh > 23 || om > 59) {
      return unexpected(sinceError(text, "the offset is Z or +HH:MM / -HH:MM"));
    }
    offset_min = (oh * 60 + om) * (s[pos] == '-' ? -1 : 1);
    pos += 6;
  } else {
    return unexpected(sinceError(text, "the time needs its offset from UTC: Z or +HH:MM"));
  }
  if (pos != s.size()) {
    return unexpected(sinceError(text, kSinceForms));
  }
  const chr::year_month_day ymd{chr::year(y), chr::month(static_cast<unsigned>(mo)),
                                chr::day(static_cast<unsigned>(d))};
  if (y < 1970 || !ymd.ok()) {
    return unexpected(sinceError(text, "no such date"));
  }
  if (h > 23 || mi > 59 || se > 60) {  // 60: a leap second
    return unexpected(sinceError(text, "no such time of day"));
  }
  return chr::sys_days(ymd) + chr::hours(h) + chr::minutes(mi) + chr::seconds(se) -
         chr::minutes(offset_min);
}

std::string str(const json& j, const char* key, const char* fallback = "?") {
  return j.is_object() && j.contains(key) && j[key].is_string() ? j[key].get<std::string>()
                                                                : fallback;
}

uint64_t num(const json& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_number_unsigned() ? j[key].get<uint64_t>()
                                                                         : 0;
}

// j[key] when it is a boolean, else `fallback`.
bool flag(const json& j, const char* key, bool fallback) {
  return j.is_object() && j.contains(key) && j[key].is_boolean() ? j[key].get<bool>() : fallback;
}

const json& sub(const json& j, const char* key) {
  static const json kEmpty = json::object();
  return j.is_object() && j.contains(key) && j[key].is_object() ? j[key] : kEmpty;
}

std::string bytesCell(uint64_t b) {
  return humanBytes(b) + " (" + std::to_string(b) + ")";
}

}  // namespace

Result<chr::sys_seconds, std::string> parseSince(std::string_view text,
                                                 chr::system_clock::time_point now) {
  if (text.empty()) {
    return unexpected(std::string("since \"\": ") + kSinceForms);
  }
  if (text.size() > kMaxSinceText) {
    return unexpected(sinceError(text, "longer than 40 bytes; " + std::string(kSinceForms)));
  }
  const chr::sys_seconds now_s = chr::floor<chr::seconds>(now);
  const chr::sys_seconds oldest = now_s - chr::seconds(kMaxSinceAge);
  const bool age =
      text.size() >= 2 && text.size() <= 10 &&
      std::all_of(text.begin(), text.end() - 1, [](char c) { return c >= '0' && c <= '9'; }) &&
      !(text.back() >= '0' && text.back() <= '9');
  if (age) {
    auto a = parseAge(text);
    if (!a) {
      return unexpected(a.error());
    }
    return now_s - *a;
  }
  auto t = parseRfc3339(text, text);
  if (!t) {
    return t;
  }
  if (*t > now_s) {
    return unexpected(sinceError(text, "is in the future"));
  }
  if (*t < oldest) {
    return unexpected(sinceError(text, "is more than 3660 days ago"));
  }
  return t;
}

std::string humanBytes(uint64_t bytes) {
  static const char* const kUnits[] = {"B", "kB", "MB", "GB", "TB", "PB", "EB"};
  if (bytes < 1000) {
    return std::to_string(bytes) + " B";
  }
  double v = static_cast<double>(bytes);
  size_t k = 0;
  while (v >= 999.5 && k + 1 < std::size(kUnits)) {
    v /= 1000;
    ++k;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf,
                v < 9.995   ? "%.2f %s"
                : v < 99.95 ? "%.1f %s"
                            : "%.0f %s",
                v, kUnits[k]);
  return buf;
}

// usage from 2026-12-05T01:00:00Z to 2026-12-05T01:30:12Z (since 2026-12-05T00:59:30Z)
// interval 60 s, files in /var/lib/mcgw/usage
// TENANT  PEER/LINE     TX BYTES                 RX BYTES  TX PACKETS  RX PACKETS  YELLOW  RED
// train   site-b/mpls   1.23 GB (1234567890)  ...
std::string renderUsage(const json& v) {
  std::string out = "usage from " + str(v, "from") + " to " + str(v, "to");
  if (v.is_object() && v.contains("since") && v["since"].is_string()) {
    out += " (since " + v["since"].get<std::string>();
    if (flag(v, "truncated", false)) {
      out += "; older intervals are no longer kept";
    }
    out += ")";
  } else {
    out += " (since mcgwd started)";
  }
  out += "\n";
  out += "interval " + std::to_string(num(v, "interval_s")) + " s, files in " +
         str(v, "directory") + "\n";

  const json& pairs =
      v.is_object() && v.contains("pairs") && v["pairs"].is_array() ? v["pairs"] : json::array();
  if (pairs.empty()) {
    out += "no (tenant, line) pairs\n";
  } else {
    std::vector<std::vector<std::string>> rows = {{"TENANT", "PEER/LINE", "TX BYTES", "RX BYTES",
                                                   "TX PACKETS", "RX PACKETS", "YELLOW", "RED"}};
    for (const json& p : pairs) {
      std::string line = str(p, "peer") + "/" + str(p, "line");
      if (!flag(p, "present", true)) {
        line += " (removed)";
      }
      const json& tx = sub(p, "tx");
      const json& rx = sub(p, "rx");
      rows.push_back({str(p, "tenant"), line, bytesCell(num(tx, "bytes")),
                      bytesCell(num(rx, "bytes")), std::to_string(num(tx, "packets")),
                      std::to_string(num(rx, "packets")), std::to_string(num(p, "yellow")),
                      std::to_string(num(p, "red"))});
    }
    std::vector<size_t> width(rows[0].size(), 0);
    for (const auto& r : rows) {
      for (size_t i = 0; i < r.size(); ++i) {
        width[i] = std::max(width[i], r[i].size());
      }
    }
    for (const auto& r : rows) {
      std::string line;
      for (size_t i = 0; i < r.size(); ++i) {
        if (i) {
          line += "  ";
        }
        const std::string pad(width[i] - r[i].size(), ' ');
        line += i < 2 ? r[i] + pad : pad + r[i];  // names left, figures right
      }
      while (!line.empty() && line.back() == ' ') {
        line.pop_back();
      }
      out += line + "\n";
    }
  }

  if (const uint64_t e = num(v, "write_errors"); e) {
    out += "! " + std::to_string(e) + " write" + (e == 1 ? "" : "s") + " of usage files failed";
    if (v.is_object() && v.contains("last_error") && v["last_error"].is_string()) {
      out += " (last: " + v["last_error"].get<std::string>() + ")";
    }
    out += "\n";
  }
  if (const uint64_t p = num(v, "pending_intervals"); p) {
    out += "! " + std::to_string(p) + " interval" + (p == 1 ? "" : "s") +
           " not yet written (tried again at each interval)\n";
  }
  if (const uint64_t d = num(v, "dropped_intervals"); d) {
    out += "! " + std::to_string(d) + " interval" + (d == 1 ? "" : "s") +
           " dropped unwritten (too many waiting)\n";
  }
  return out;
}

}  // namespace mcgw::usage
