// Usage accounting (docs/policy.md, "Usage accounting"): bytes and packets
// per tenant per line per direction, kept by name across reloads, closed
// into wall-clock intervals written to one CSV file per UTC day, and kept in
// memory for `mcgwctl show usage [--since]` and the metrics.
//
// The ledger makes no DPDK call: it is handed the tables' (tenant, line)
// pairs and a counters snapshot, so tests inject both and the time.  mcgwd
// calls sample() about every second on the control loop and once more right
// before it publishes tables (before fresh slots are rebased), and close()
// when it stops.  Thread-safe (one mutex): a reload may sample off the loop.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/config.hpp"
#include "dataplane/engine/dataplane.hpp"
#include "dataplane/engine/tables.hpp"

namespace mcgw::usage {

// What one (tenant, line) pair used: tx = the tenant's tunnel packets into
// the line, rx = out of it; bytes as on the wire (Ethernet header
// included); yellow and red = packets the tenant's meter on the line marked;
// line_full = packets dropped because the queue of the tenant's priority on
// a shaped line was full (not in the CSV files: they are not usage).
struct Usage {
  uint64_t tx_packets = 0, tx_bytes = 0, rx_packets = 0, rx_bytes = 0, yellow = 0, red = 0,
           line_full = 0;

  bool zero() const { return *this == Usage{}; }
  Usage& operator+=(const Usage& o);
  bool operator==(const Usage&) const = default;
};

struct PairKey {
  std::string tenant, peer, line;
  auto operator<=>(const PairKey&) const = default;
};

struct Options {
  std::string directory;                 // where usage-YYYY-MM-DD.csv go (made 0750 when missing)
  unsigned interval_s = 60;              // 10..3600, aligned to UTC midnight
  unsigned retention_days = 31;          // files of days before today - retention_days are deleted
  size_t max_pending_intervals = 1440;   // closed, not yet written: then the oldest dropped
  size_t max_pending_bytes = 64u << 20;  // the same, in CSV bytes
  std::chrono::seconds history{24 * 3600};  // closed intervals kept for --since
  size_t max_history_records = 1'000'000;   // (interval, pair) records with traffic in memory
  size_t max_pairs =
      65'536;  // names known; beyond, removed pairs no record refers to are forgotten
};

// The options from the config: directory "" = <state_dir>/usage.
Options optionsFrom(const config::UsageConfig& c, const std::string& state_dir);

// One sample of a metric family (docs/monitoring.md), to hand to
// metrics::FamilyBuilder::add.
struct MetricSample {
  std::string name;
  std::vector<std::pair<std::string, std::string>> labels;
  double value = 0;
};

inline constexpr const char* kCsvHeader =
    "start,end,tenant,peer,line,tx_packets,tx_bytes,rx_packets,rx_bytes,yellow_packets,"
    "red_packets\n";

// The file of a UTC day: usage-2026-12-05.csv.
std::string fileName(std::chrono::sys_days day);

class UsageLedger {
 public:
  // `start`: when counting began (the fast path's counters were zero then):
  // the first interval runs from it to the next boundary.
  UsageLedger(Options options, std::chrono::system_clock::time_point start);

  // New options (a reload): the directory and retention at once, a new
  // interval length from the next boundary on.
  void configure(Options options);

  // Adds each pair's counters since the last sample to its totals and to the
  // open interval, then closes the intervals that ended by `now`, writes
  // them (and those a failed write left) and deletes files past retention.
  // A slot whose counter went down (rebased) counts its value from zero; a
  // slot with another name than last time starts afresh.
  void sample(const std::vector<engine::TenantLineEntry>& pairs, const engine::CountersSnapshot& c,
              std::chrono::system_clock::time_point now);

  // mcgwd stops: the open interval is closed at `now` (a shorter record)
  // and everything pending is written once more.
  void close(std::chrono::system_clock::time_point now);

  // When the open interval ends (a timer may sample just after it).
  std::chrono::sys_seconds nextBoundary() const;

  // `show usage --json` (schema mcgw.usage/1).  `since`: the closed
  // intervals that started at or after it plus the open one ("from" says
  // from when); none: the totals since the ledger started.  `tenant`: only
  // that tenant's pairs ("" = all).
  nlohmann::json usageView(std::optional<std::chrono::sys_seconds> since,
                           const std::string& tenant = "") const;

  // mcgw_tenant_line_{packets,bytes,meter_packets}_total of every pair known
  // (removed ones too: the counters stay monotonic if they come back), then
  // mcgw_usage_write_errors_total, mcgw_usage_dropped_intervals_total and
  // mcgw_usage_pending_intervals.
  std::vector<MetricSample> metricSamples() const;

  // For tests and status.
  Usage total(const PairKey& key) const;
  uint64_t writeErrors() const;
  uint64_t droppedIntervals() const;
  size_t pendingIntervals() const;
  // Deletes the files past retention as of `now` (sample() does this once
  // per UTC day).
  void applyRetention(std::chrono::system_clock::time_point now);

 private:
  struct Pair {
    Usage total, open;
    bool present = false;                  // in the last sample
    std::chrono::sys_seconds last_used{};  // the end of the last interval it had a row in
  };
  using Entry = std::map<PairKey, Pair>::value_type;
  struct Slot {
    Entry* pair = nullptr;
    Usage last;
    uint64_t seen = 0;
  };
  struct Record {
    const Entry* pair;
    Usage u;
  };
  struct Closed {
    std::chrono::sys_seconds start, end;
    std::vector<Record> records;  // pairs with traffic only
  };
  struct Pending {
    std::chrono::sys_days day;
    std::string rows;
  };

  std::chrono::sys_seconds boundaryAfter(std::chrono::sys_seconds t) const;
  std::chrono::sys_seconds intervalStart(std::chrono::sys_seconds t) const;
  void closeOpen(std::chrono::sys_seconds end, std::chrono::sys_seconds now);
  void writePending();
  bool writeOne(const Pending& p, std::string* error);
  void retention(std::chrono::sys_days today);
  void forgetPairs();

  mutable std::mutex mu_;
  Options opt_;
  std::map<PairKey, Pair> pairs_;
  std::vector<Slot> slots_;
  std::vector<uint16_t> active_;  // slots of the last sample
  uint64_t samples_ = 0;
  std::chrono::sys_seconds started_, open_start_, open_end_;
  std::chrono::system_clock::time_point last_sample_;
  std::deque<Closed> history_;
  size_t history_records_ = 0;
  std::chrono::sys_seconds history_dropped_end_{};  // end of the newest interval dropped
  std::deque<Pending> pending_;
  size_t pending_bytes_ = 0;
  uint64_t write_errors_ = 0, dropped_intervals_ = 0, forgotten_pairs_ = 0;
  std::string last_error_;
  std::optional<std::chrono::sys_days> retention_day_;
};

}  // namespace mcgw::usage
