// `--since` and mcgwctl's text for `show usage` (control/policy/usage_cli.hpp).
#include "control/policy/usage_cli.hpp"

#include <gtest/gtest.h>

namespace mcgw::usage {
namespace {

using namespace std::chrono;
using nlohmann::json;

const sys_time<milliseconds> kNow =
    sys_days{2026y / December / 5} + hours(12) + minutes(30) + seconds(15) + milliseconds(700);

sys_seconds utc(int y, unsigned mo, unsigned d, int h, int mi, int s) {
  return sys_days{year(y) / month(mo) / day(d)} + hours(h) + minutes(mi) + seconds(s);
}

TEST(UsageSince, AcceptedForms) {
  const struct {
    const char* text;
    sys_seconds want;
  } cases[] = {
      {"2026-12-05T01:00:00Z", utc(2026, 12, 5, 1, 0, 0)},
      {"2026-12-05t01:00:00z", utc(2026, 12, 5, 1, 0, 0)},
      {"2026-12-05 01:00:00Z", utc(2026, 12, 5, 1, 0, 0)},
      {"2026-12-05T02:00:00+01:00", utc(2026, 12, 5, 1, 0, 0)},
      {"2026-12-04T20:30:00-04:30", utc(2026, 12, 5, 1, 0, 0)},
      {"2026-12-05T01:00:00.999999999Z", utc(2026, 12, 5, 1, 0, 0)},
      {"2026-12-05T12:30:15Z", utc(2026, 12, 5, 12, 30, 15)},  // now, to the second
      {"2024-02-29T00:00:00Z", utc(2024, 2, 29, 0, 0, 0)},
      {"2016-12-31T23:59:60Z", utc(2017, 1, 1, 0, 0, 0)},  // a leap second
      {"90s", utc(2026, 12, 5, 12, 28, 45)},
      {"30m", utc(2026, 12, 5, 12, 0, 15)},
      {"1h", utc(2026, 12, 5, 11, 30, 15)},
      {"2d", utc(2026, 12, 3, 12, 30, 15)},
      {"3660d", utc(2026, 12, 5, 12, 30, 15) - days(3660)},
      {"0001h", utc(2026, 12, 5, 11, 30, 15)},
  };
  for (const auto& c : cases) {
    auto r = parseSince(c.text, kNow);
    ASSERT_TRUE(r) << c.text << ": " << r.error();
    EXPECT_EQ(*r, c.want) << c.text;
  }
}

TEST(UsageSince, RefusedForms) {
  const struct {
    const char* text;
    const char* error;
  } cases[] = {
      {"", "since \"\": expected an RFC 3339 time"},
      {"yesterday", "since \"yesterday\": expected an RFC 3339 time"},
      {"1x", "since \"1x\": the unit of an age is s, m, h or d"},
      {"0m", "since \"0m\": an age must be more than 0"},
      {"3661d", "since \"3661d\": an age is at most 3660d"},
      {"999999999d", "since \"999999999d\": an age is at most 3660d"},
      {"1234567890s", "since \"1234567890s\": expected an RFC 3339 time"},
      {"-1h", "since \"-1h\": expected an RFC 3339 time"},
      {"1.5h", "since \"1.5h\": expected an RFC 3339 time"},
      {"h", "since \"h\": expected an RFC 3339 time"},
      {"2026-12-05", "since \"2026-12-05\": expected an RFC 3339 time"},
      {"2026-12-05T01:00:00", "the time needs its offset from UTC: Z or +HH:MM"},
      {"2026-12-05T01:00Z", "expected an RFC 3339 time"},
      {"2026-12-05T01:00:00+0100", "the offset is Z or +HH:MM / -HH:MM"},
      {"2026-12-05T01:00:00+24:00", "the offset is Z or +HH:MM / -HH:MM"},
      {"2026-12-05T01:00:00.Z", "a fraction of a second has 1 to 9 digits"},
      {"2026-12-05T01:00:00.1234567890Z", "a fraction of a second has 1 to 9 digits"},
      {"2026-12-05T01:00:00Zjunk", "expected an RFC 3339 time"},
      {"2026-02-30T01:00:00Z", "no such date"},
      {"2026-13-01T01:00:00Z", "no such date"},
      {"1969-12-31T23:59:59Z", "no such date"},
      {"2026-12-05T24:00:00Z", "no such time of day"},
      {"2026-12-05T23:60:00Z", "no such time of day"},
      {"2026-12-05T12:30:16Z", "is in the future"},
      {"2026-12-05T12:30:00-01:00", "is in the future"},
      {"2016-11-01T00:00:00Z", "is more than 3660 days ago"},
      {"2026-12-05T01:00:00Z with more text after it", "longer than 40 bytes"},
      {"1\x1b[2Jh", "since \"1?[2Jh\": expected an RFC 3339 time"},
  };
  for (const auto& c : cases) {
    auto r = parseSince(c.text, kNow);
    ASSERT_FALSE(r) << c.text;
    EXPECT_NE(r.error().find(c.error), std::string::npos) << c.text << ": " << r.error();
  }
}

TEST(UsageCli, HumanBytes) {
  EXPECT_EQ(humanBytes(0), "0 B");
  EXPECT_EQ(humanBytes(999), "999 B");
  EXPECT_EQ(humanBytes(1000), "1.00 kB");
  EXPECT_EQ(humanBytes(1234), "1.23 kB");
  EXPECT_EQ(humanBytes(9995), "10.0 kB");
  EXPECT_EQ(humanBytes(999'499), "999 kB");
  EXPECT_EQ(humanBytes(999'500), "1.00 MB");
  EXPECT_EQ(humanBytes(1'234'567'890), "1.23 GB");
  EXPECT_EQ(humanBytes(45'600'000'000'000), "45.6 TB");
  EXPECT_EQ(humanBytes(UINT64_MAX), "18.4 EB");
}

TEST(UsageCli, TableSinceStart) {
  const json v = json::parse(R"({
    "schema": "mcgw.usage/1", "started": "2026-12-05T10:00:17Z",
    "from": "2026-12-05T10:00:17Z", "to": "2026-12-05T12:30:15Z",
    "interval_s": 60, "directory": "/var/lib/mcgw/usage", "retention_days": 31,
    "write_errors": 0, "pending_intervals": 0, "dropped_intervals": 0,
    "pairs": [
      {"tenant": "bulk", "peer": "site-b", "line": "inet", "present": false,
       "tx": {"packets": 12, "bytes": 999}, "rx": {"packets": 4, "bytes": 4000},
       "yellow": 0, "red": 0},
      {"tenant": "train", "peer": "site-b", "line": "mpls", "present": true,
       "tx": {"packets": 1000000, "bytes": 1234567890}, "rx": {"packets": 1, "bytes": 10},
       "yellow": 2, "red": 1}]})");
  EXPECT_EQ(renderUsage(v),
            "usage from 2026-12-05T10:00:17Z to 2026-12-05T12:30:15Z (since mcgwd started)\n"
            "interval 60 s, files in /var/lib/mcgw/usage\n"
            "TENANT  PEER/LINE                          TX BYTES        RX BYTES"
            "  TX PACKETS  RX PACKETS  YELLOW  RED\n"
            "bulk    site-b/inet (removed)           999 B (999)  4.00 kB (4000)"
            "          12           4       0    0\n"
            "train   site-b/mpls            1.23 GB (1234567890)       10 B (10)"
            "     1000000           1       2    1\n");
}

TEST(UsageCli, TableWithSinceAndFileTrouble) {
  const json v = json::parse(R"({
    "from": "2026-12-05T11:00:00Z", "to": "2026-12-05T12:30:15Z",
    "since": "2026-12-04T11:00:00Z", "truncated": true,
    "interval_s": 300, "directory": "/srv/usage",
    "write_errors": 3, "last_error": "/srv/usage: Permission denied",
    "pending_intervals": 2, "dropped_intervals": 1, "pairs": []})");
  EXPECT_EQ(renderUsage(v),
            "usage from 2026-12-05T11:00:00Z to 2026-12-05T12:30:15Z (since "
            "2026-12-04T11:00:00Z; older intervals are no longer kept)\n"
            "interval 300 s, files in /srv/usage\n"
            "no (tenant, line) pairs\n"
            "! 3 writes of usage files failed (last: /srv/usage: Permission denied)\n"
            "! 2 intervals not yet written (tried again at each interval)\n"
            "! 1 interval dropped unwritten (too many waiting)\n");
}

TEST(UsageCli, MissingAndMistypedFields) {
  EXPECT_EQ(renderUsage(json("not an object")),
            "usage from ? to ? (since mcgwd started)\n"
            "interval 0 s, files in ?\n"
            "no (tenant, line) pairs\n");
  const json v = json::parse(R"({
    "since": 5, "truncated": "yes", "write_errors": -1, "pairs": [
      7, {"tenant": 1, "present": "no", "tx": [], "rx": {"bytes": "many"}, "yellow": 1.5}]})");
  EXPECT_EQ(renderUsage(v),
            "usage from ? to ? (since mcgwd started)\n"
            "interval 0 s, files in ?\n"
            "TENANT  PEER/LINE  TX BYTES  RX BYTES  TX PACKETS  RX PACKETS  YELLOW  RED\n"
            "?       ?/?         0 B (0)   0 B (0)           0           0       0    0\n"
            "?       ?/?         0 B (0)   0 B (0)           0           0       0    0\n");
}

}  // namespace
}  // namespace mcgw::usage
