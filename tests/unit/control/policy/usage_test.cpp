// Usage accounting (control/policy/usage.hpp) with injected time and
// counter snapshots: deltas and totals across rebased and reused slots,
// wall-clock intervals, the CSV files byte for byte, retention, failed
// writes retried and bounded, the view with and without --since, metrics.
#include "control/policy/usage.hpp"

#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

#include <gtest/gtest.h>

namespace mcgw::usage {
namespace {

using namespace std::chrono;
using nlohmann::json;
namespace fs = std::filesystem;

std::string readFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

void writeFile(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

// 2026-12-05 plus a time of day.
sys_time<milliseconds> at(int h, int m, int s, int ms = 0) {
  return sys_days{2026y / December / 5} + hours(h) + minutes(m) + seconds(s) + milliseconds(ms);
}

engine::TenantLineEntry pair(const std::string& tenant, const std::string& line, uint16_t slot) {
  return {tenant, "site-b", line, slot};
}

class UsageTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/mcgw-usage-test-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    root_ = tmpl;
  }
  void TearDown() override { fs::remove_all(root_); }

  Options options(unsigned interval = 60) {
    Options o;
    o.directory = root_ + "/var/usage";
    o.interval_s = interval;
    return o;
  }
  // Sets slot's counters (what the fast path has counted since the slot was
  // given).
  void set(uint16_t slot, Usage u) {
    c_->usage_tx[slot] = {u.tx_packets, u.tx_bytes};
    c_->usage_rx[slot] = {u.rx_packets, u.rx_bytes};
    c_->meter_yellow[slot] = u.yellow;
    c_->meter_red[slot] = u.red;
    c_->line_full[slot] = u.line_full;
  }

  std::string root_;
  std::unique_ptr<engine::CountersSnapshot> c_ = std::make_unique<engine::CountersSnapshot>();
};

const PairKey kTrainB{"train", "site-b", "mpls"};

TEST_F(UsageTest, DeltasAddUpToTotals) {
  UsageLedger l(options(), at(10, 0, 0));
  const std::vector<engine::TenantLineEntry> pairs = {pair("train", "mpls", 3)};
  set(3, {10, 1000, 0, 0, 0, 0});
  l.sample(pairs, *c_, at(10, 0, 1));
  EXPECT_EQ(l.total(kTrainB), (Usage{10, 1000, 0, 0, 0, 0}));
  set(3, {15, 1500, 2, 200, 1, 0});
  l.sample(pairs, *c_, at(10, 0, 2));
  set(3, {15, 1500, 4, 400, 1, 3});
  l.sample(pairs, *c_, at(10, 0, 3));
  EXPECT_EQ(l.total(kTrainB), (Usage{15, 1500, 4, 400, 1, 3}));
  // The same counters again add nothing.
  l.sample(pairs, *c_, at(10, 0, 4));
  EXPECT_EQ(l.total(kTrainB), (Usage{15, 1500, 4, 400, 1, 3}));
  EXPECT_EQ(l.total({"train", "site-b", "other"}), Usage{});
}

TEST_F(UsageTest, RebasedSlotIsNeitherLostNorCountedTwice) {
  UsageLedger l(options(), at(10, 0, 0));
  const std::vector<engine::TenantLineEntry> pairs = {pair("train", "mpls", 3)};
  set(3, {100, 10000, 50, 5000, 0, 0});
  l.sample(pairs, *c_, at(10, 0, 1));
  // Rebased to zero, then 30 packets more: they count from zero.
  set(3, {30, 3000, 5, 500, 0, 0});
  l.sample(pairs, *c_, at(10, 0, 2));
  EXPECT_EQ(l.total(kTrainB), (Usage{130, 13000, 55, 5500, 0, 0}));
  set(3, {31, 3100, 5, 500, 0, 0});
  l.sample(pairs, *c_, at(10, 0, 3));
  EXPECT_EQ(l.total(kTrainB), (Usage{131, 13100, 55, 5500, 0, 0}));
}

TEST_F(UsageTest, PairBackUnderAnotherSlotKeepsItsTotals) {
  UsageLedger l(options(), at(10, 0, 0));
  set(3, {100, 10000, 0, 0, 0, 0});
  l.sample({pair("train", "mpls", 3)}, *c_, at(10, 0, 1));
  // A reload removes the pair; the slot keeps its old value meanwhile.
  l.sample({}, *c_, at(10, 0, 2));
  // The next reload adds it again under slot 7 (rebased: it starts at 0)
  // and gives slot 3 to another tenant (rebased as well).
  set(7, {40, 4000, 0, 0, 0, 0});
  set(3, {5, 500, 0, 0, 0, 0});
  l.sample({pair("train", "mpls", 7), pair("infer", "mpls", 3)}, *c_, at(10, 0, 3));
  EXPECT_EQ(l.total(kTrainB), (Usage{140, 14000, 0, 0, 0, 0}));
  EXPECT_EQ(l.total({"infer", "site-b", "mpls"}), (Usage{5, 500, 0, 0, 0, 0}));
}

TEST_F(UsageTest, SlotGivenToAnotherNameStartsFromZero) {
  UsageLedger l(options(), at(10, 0, 0));
  set(3, {100, 10000, 0, 0, 0, 0});
  l.sample({pair("train", "mpls", 3)}, *c_, at(10, 0, 1));
  // Straight from one name to another in one publication: the new pair's
  // counter (rebased) is higher than the old one's last value already.
  set(3, {150, 15000, 0, 0, 0, 0});
  l.sample({pair("infer", "mpls", 3)}, *c_, at(10, 0, 2));
  EXPECT_EQ(l.total(kTrainB), (Usage{100, 10000, 0, 0, 0, 0}));
  EXPECT_EQ(l.total({"infer", "site-b", "mpls"}), (Usage{150, 15000, 0, 0, 0, 0}));
}

TEST_F(UsageTest, IntervalsAreAlignedToTheWallClock) {
  UsageLedger l(options(60), at(10, 0, 17, 400));
  EXPECT_EQ(l.nextBoundary(), floor<seconds>(at(10, 1, 0)));
  l.sample({}, *c_, at(10, 0, 59, 999));
  EXPECT_EQ(l.nextBoundary(), floor<seconds>(at(10, 1, 0)));
  l.sample({}, *c_, at(10, 1, 0, 3));
  EXPECT_EQ(l.nextBoundary(), floor<seconds>(at(10, 2, 0)));
  // A gap of several intervals: the next boundary follows now.
  l.sample({}, *c_, at(10, 7, 30));
  EXPECT_EQ(l.nextBoundary(), floor<seconds>(at(10, 8, 0)));

  UsageLedger hourly(options(3600), at(10, 30, 0));
  EXPECT_EQ(hourly.nextBoundary(), floor<seconds>(at(11, 0, 0)));
  // 70 s does not divide a day: the day's last interval ends at midnight.
  UsageLedger odd(options(70), at(23, 59, 45));
  EXPECT_EQ(odd.nextBoundary(), sys_days{2026y / December / 6});
  UsageLedger odd2(options(70), at(0, 0, 0));
  EXPECT_EQ(odd2.nextBoundary(), floor<seconds>(at(0, 1, 10)));
}

// Two pairs over three intervals, the last after UTC midnight: every
// existing pair has a row per interval (zeros too), one file per day, the
// header once per file.
TEST_F(UsageTest, CsvFilesByteForByteWithDayRollover) {
  UsageLedger l(options(60), at(23, 58, 30));
  const std::vector<engine::TenantLineEntry> pairs = {pair("train", "mpls", 1),
                                                      pair("bulk", "inet", 2)};
  set(1, {1, 100, 0, 0, 0, 0});
  l.sample(pairs, *c_, at(23, 58, 45));
  l.sample(pairs, *c_, at(23, 59, 0, 100));  // closes 23:58:30..23:59:00
  set(1, {3, 300, 0, 0, 0, 0});
  set(2, {0, 0, 2, 20, 1, 1});
  l.sample(pairs, *c_, at(23, 59, 30));
  l.sample(pairs, *c_, at(23, 59, 59, 900));
  const auto next_day = sys_days{2026y / December / 6};
  l.sample(pairs, *c_, next_day + milliseconds(500));  // closes 23:59:00..00:00:00
  set(1, {10, 1000, 7, 777, 0, 0});
  l.sample(pairs, *c_, next_day + seconds(30));
  l.sample(pairs, *c_, next_day + seconds(60));  // closes 00:00:00..00:01:00
  EXPECT_EQ(l.writeErrors(), 0u);
  EXPECT_EQ(l.pendingIntervals(), 0u);

  const std::string dir = root_ + "/var/usage/";
  EXPECT_EQ(readFile(dir + "usage-2026-12-05.csv"),
            "start,end,tenant,peer,line,tx_packets,tx_bytes,rx_packets,rx_bytes,yellow_packets,"
            "red_packets\n"
            "2026-12-05T23:58:30Z,2026-12-05T23:59:00Z,bulk,site-b,inet,0,0,0,0,0,0\n"
            "2026-12-05T23:58:30Z,2026-12-05T23:59:00Z,train,site-b,mpls,1,100,0,0,0,0\n"
            "2026-12-05T23:59:00Z,2026-12-06T00:00:00Z,bulk,site-b,inet,0,0,2,20,1,1\n"
            "2026-12-05T23:59:00Z,2026-12-06T00:00:00Z,train,site-b,mpls,2,200,0,0,0,0\n");
  EXPECT_EQ(readFile(dir + "usage-2026-12-06.csv"),
            "start,end,tenant,peer,line,tx_packets,tx_bytes,rx_packets,rx_bytes,yellow_packets,"
            "red_packets\n"
            "2026-12-06T00:00:00Z,2026-12-06T00:01:00Z,bulk,site-b,inet,0,0,0,0,0,0\n"
            "2026-12-06T00:00:00Z,2026-12-06T00:01:00Z,train,site-b,mpls,7,700,7,777,0,0\n");
  struct stat st {};
  ASSERT_EQ(::stat((root_ + "/var/usage").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0750u);
  ASSERT_EQ(::stat((dir + "usage-2026-12-06.csv").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0640u);
}

TEST_F(UsageTest, AnExistingFileIsAppendedToWithoutASecondHeader) {
  const std::string dir = root_ + "/var/usage/";
  fs::create_directories(dir);
  writeFile(dir + "usage-2026-12-05.csv",
            std::string(kCsvHeader) +
                "2026-12-05T09:00:00Z,2026-12-05T09:01:00Z,train,site-b,mpls,1,2,3,4,5,6\n");
  UsageLedger l(options(60), at(10, 0, 0));
  set(1, {1, 64, 0, 0, 0, 0});
  l.sample({pair("train", "mpls", 1)}, *c_, at(10, 1, 0));
  EXPECT_EQ(readFile(dir + "usage-2026-12-05.csv"),
            std::string(kCsvHeader) +
                "2026-12-05T09:00:00Z,2026-12-05T09:01:00Z,train,site-b,mpls,1,2,3,4,5,6\n"
                "2026-12-05T10:00:00Z,2026-12-05T10:01:00Z,train,site-b,mpls,1,64,0,0,0,0\n");
}

TEST_F(UsageTest, NamesAreWrittenCsvSafe) {
  UsageLedger l(options(60), at(10, 0, 0));
  l.sample({{"a,b", "p\"q", "l\nm", 1}}, *c_, at(10, 1, 0));
  EXPECT_EQ(readFile(root_ + "/var/usage/usage-2026-12-05.csv"),
            std::string(kCsvHeader) +
                "2026-12-05T10:00:00Z,2026-12-05T10:01:00Z,\"a,b\",\"p\"\"q\",\"l\nm\",0,0,0,0,0,"
                "0\n");
}

TEST_F(UsageTest, RetentionDeletesOnlyOldFilesOfTheExactPattern) {
  const std::string dir = root_ + "/var/usage/";
  fs::create_directories(dir);
  for (const char* name :
       {"usage-2026-11-01.csv", "usage-2026-11-03.csv", "usage-2026-11-04.csv",
        "usage-2026-12-05.csv", "usage-2026-11-01.csv.bak", "usage-2026-02-30.csv",
        "usage-2026-1-01.csv", "xusage-2026-11-01.csv", "usage-2026-11-01.json", "notes.txt"}) {
    writeFile(dir + name, "x\n");
  }
  fs::create_directory(dir + "usage-2026-10-01.csv");  // not a regular file
  fs::create_symlink(dir + "notes.txt", dir + "usage-2026-10-02.csv");
  Options o = options();
  o.retention_days = 31;
  UsageLedger l(o, at(10, 0, 0));
  l.applyRetention(at(10, 0, 0));  // today 2026-12-05: days before 2026-11-04 go
  std::vector<std::string> left;
  for (const auto& e : fs::directory_iterator(dir)) {
    left.push_back(e.path().filename());
  }
  std::sort(left.begin(), left.end());
  EXPECT_EQ(left,
            (std::vector<std::string>{
                "notes.txt", "usage-2026-02-30.csv", "usage-2026-1-01.csv", "usage-2026-10-01.csv",
                "usage-2026-10-02.csv", "usage-2026-11-01.csv.bak", "usage-2026-11-01.json",
                "usage-2026-11-04.csv", "usage-2026-12-05.csv", "xusage-2026-11-01.csv"}));
}

TEST_F(UsageTest, RetentionRunsFromSampleOncePerDay) {
  const std::string dir = root_ + "/var/usage/";
  fs::create_directories(dir);
  Options o = options();
  o.retention_days = 1;
  UsageLedger l(o, at(23, 0, 0));
  writeFile(dir + "usage-2026-12-04.csv", "x\n");  // yesterday: kept through today
  writeFile(dir + "usage-2026-12-03.csv", "x\n");
  l.sample({}, *c_, at(23, 0, 1));
  EXPECT_FALSE(fs::exists(dir + "usage-2026-12-03.csv"));
  EXPECT_TRUE(fs::exists(dir + "usage-2026-12-04.csv"));
  l.sample({}, *c_, sys_days{2026y / December / 6} + seconds(1));
  EXPECT_FALSE(fs::exists(dir + "usage-2026-12-04.csv"));
}

// The directory cannot be made (a file stands in its path; root ignores
// modes, a path through a file fails for everyone): each interval's write
// fails and is counted, its rows wait; when the path is free they are all
// written in order; beyond the bound the oldest are dropped and counted.
TEST_F(UsageTest, FailedWritesAreCountedRetriedAndBounded) {
  writeFile(root_ + "/var", "in the way\n");
  Options o = options(60);
  o.max_pending_intervals = 3;
  UsageLedger l(o, at(10, 0, 0));
  const std::vector<engine::TenantLineEntry> pairs = {pair("train", "mpls", 1)};
  for (int i = 1; i <= 4; ++i) {
    set(1, {static_cast<uint64_t>(i), static_cast<uint64_t>(i * 100), 0, 0, 0, 0});
    l.sample(pairs, *c_, at(10, i, 0));
    EXPECT_EQ(l.writeErrors(), static_cast<uint64_t>(i));
  }
  EXPECT_EQ(l.pendingIntervals(), 3u);
  EXPECT_EQ(l.droppedIntervals(), 1u);  // 10:00 went
  const json v = l.usageView(std::nullopt);
  EXPECT_EQ(v["write_errors"], 4);
  EXPECT_EQ(v["pending_intervals"], 3);
  EXPECT_EQ(v["dropped_intervals"], 1);
  EXPECT_NE(v["last_error"].get<std::string>().find("/var"), std::string::npos);
  const auto m = l.metricSamples();
  ASSERT_EQ(m.size(), 10u);
  EXPECT_EQ(m[7].value, 4);  // write errors
  EXPECT_EQ(m[8].value, 1);  // dropped
  EXPECT_EQ(m[9].value, 3);  // pending

  fs::remove(root_ + "/var");
  l.sample(pairs, *c_, at(10, 5, 0));
  EXPECT_EQ(l.writeErrors(), 4u);
  EXPECT_EQ(l.pendingIntervals(), 0u);
  EXPECT_EQ(readFile(root_ + "/var/usage/usage-2026-12-05.csv"),
            std::string(kCsvHeader) +
                "2026-12-05T10:01:00Z,2026-12-05T10:02:00Z,train,site-b,mpls,1,100,0,0,0,0\n"
                "2026-12-05T10:02:00Z,2026-12-05T10:03:00Z,train,site-b,mpls,1,100,0,0,0,0\n"
                "2026-12-05T10:03:00Z,2026-12-05T10:04:00Z,train,site-b,mpls,1,100,0,0,0,0\n"
                "2026-12-05T10:04:00Z,2026-12-05T10:05:00Z,train,site-b,mpls,0,0,0,0,0,0\n");
  EXPECT_FALSE(l.usageView(std::nullopt).contains("last_error"));
}

// A write cut short (here by RLIMIT_FSIZE, as a full disk would) is cut
// back off: the file only ever holds whole lines, and the interval is
// written whole later.
TEST_F(UsageTest, AShortWriteLeavesNoHalfLine) {
  UsageLedger l(options(60), at(10, 0, 0));
  const std::vector<engine::TenantLineEntry> pairs = {pair("train", "mpls", 1)};
  l.sample(pairs, *c_, at(10, 1, 0));
  const std::string path = root_ + "/var/usage/usage-2026-12-05.csv";
  const std::string first = readFile(path);
  const std::string row0 =
      "2026-12-05T10:00:00Z,2026-12-05T10:01:00Z,train,site-b,mpls,0,0,0,0,0,0\n";
  ASSERT_EQ(first, kCsvHeader + row0);

  struct sigaction ignore {
  }, old{};
  ignore.sa_handler = SIG_IGN;
  ASSERT_EQ(::sigaction(SIGXFSZ, &ignore, &old), 0);
  rlimit saved{};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &saved), 0);
  rlimit small = saved;
  small.rlim_cur = first.size() + 30;  // less than a row
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  l.sample(pairs, *c_, at(10, 2, 0));
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &saved), 0);
  ASSERT_EQ(::sigaction(SIGXFSZ, &old, nullptr), 0);
  EXPECT_EQ(l.writeErrors(), 1u);
  EXPECT_EQ(readFile(path), first);

  l.sample(pairs, *c_, at(10, 3, 0));
  EXPECT_EQ(l.pendingIntervals(), 0u);
  EXPECT_EQ(readFile(path),
            first + "2026-12-05T10:01:00Z,2026-12-05T10:02:00Z,train,site-b,mpls,0,0,0,0,0,0\n" +
                "2026-12-05T10:02:00Z,2026-12-05T10:03:00Z,train,site-b,mpls,0,0,0,0,0,0\n");
}

TEST_F(UsageTest, ARemovedPairHasARowOnlyInTheIntervalItCarriedSomething) {
  UsageLedger l(options(60), at(10, 0, 0));
  set(1, {5, 500, 0, 0, 0, 0});
  l.sample({pair("train", "mpls", 1)}, *c_, at(10, 0, 10));
  l.sample({}, *c_, at(10, 0, 20));
  l.sample({}, *c_, at(10, 1, 0));
  l.sample({}, *c_, at(10, 2, 0));
  EXPECT_EQ(readFile(root_ + "/var/usage/usage-2026-12-05.csv"),
            std::string(kCsvHeader) +
                "2026-12-05T10:00:00Z,2026-12-05T10:01:00Z,train,site-b,mpls,5,500,0,0,0,0\n");
  const json v = l.usageView(std::nullopt);
  ASSERT_EQ(v["pairs"].size(), 1u);
  EXPECT_EQ(v["pairs"][0]["present"], false);
  EXPECT_EQ(v["pairs"][0]["tx"]["bytes"], 500);
}

TEST_F(UsageTest, ViewWithAndWithoutSince) {
  UsageLedger l(options(60), at(10, 0, 17));
  const std::vector<engine::TenantLineEntry> pairs = {pair("train", "mpls", 1),
                                                      pair("bulk", "inet", 2)};
  set(1, {1, 100, 0, 0, 0, 0});
  l.sample(pairs, *c_, at(10, 0, 30));
  set(1, {3, 300, 1, 10, 0, 0});
  l.sample(pairs, *c_, at(10, 1, 0, 200));  // closes 10:00:17..10:01:00
  set(1, {6, 600, 1, 10, 2, 1});
  l.sample(pairs, *c_, at(10, 1, 30));
  l.sample(pairs, *c_, at(10, 2, 0));  // closes 10:01:00..10:02:00
  set(1, {10, 1000, 1, 10, 2, 1});
  set(2, {0, 0, 4, 4000, 0, 0});
  l.sample(pairs, *c_, at(10, 2, 40));  // open: 10:02:00..

  const json all = l.usageView(std::nullopt);
  EXPECT_EQ(all, json::parse(R"({
    "schema": "mcgw.usage/1", "started": "2026-12-05T10:00:17Z",
    "from": "2026-12-05T10:00:17Z", "to": "2026-12-05T10:02:40Z",
    "interval_s": 60, "directory": ")" +
                             root_ + R"(/var/usage", "retention_days": 31,
    "write_errors": 0, "pending_intervals": 0, "dropped_intervals": 0, "forgotten_pairs": 0,
    "pairs": [
      {"tenant": "bulk", "peer": "site-b", "line": "inet", "present": true,
       "tx": {"packets": 0, "bytes": 0}, "rx": {"packets": 4, "bytes": 4000},
       "yellow": 0, "red": 0, "line_full": 0},
      {"tenant": "train", "peer": "site-b", "line": "mpls", "present": true,
       "tx": {"packets": 10, "bytes": 1000}, "rx": {"packets": 1, "bytes": 10},
       "yellow": 2, "red": 1, "line_full": 0}]})"));

  // Since 10:01:00: the interval from 10:01 and the open one.
  json v = l.usageView(floor<seconds>(at(10, 1, 0)));
  EXPECT_EQ(v["from"], "2026-12-05T10:01:00Z");
  EXPECT_EQ(v["since"], "2026-12-05T10:01:00Z");
  EXPECT_EQ(v["truncated"], false);
  ASSERT_EQ(v["pairs"].size(), 2u);
  EXPECT_EQ(v["pairs"][1]["tenant"], "train");
  EXPECT_EQ(v["pairs"][1]["tx"], json::parse(R"({"packets": 7, "bytes": 700})"));
  EXPECT_EQ(v["pairs"][1]["rx"], json::parse(R"({"packets": 0, "bytes": 0})"));
  EXPECT_EQ(v["pairs"][1]["yellow"], 2);
  EXPECT_EQ(v["pairs"][0]["rx"]["bytes"], 4000);

  // Since 10:00:45: the first interval that starts at or after it.
  v = l.usageView(floor<seconds>(at(10, 0, 45)));
  EXPECT_EQ(v["from"], "2026-12-05T10:01:00Z");
  // Before the ledger started: everything, from its start.
  v = l.usageView(floor<seconds>(at(9, 0, 0)));
  EXPECT_EQ(v["from"], "2026-12-05T10:00:17Z");
  EXPECT_EQ(v["pairs"][1]["tx"]["bytes"], 1000);
  // Within the open interval: the open interval alone.
  v = l.usageView(floor<seconds>(at(10, 2, 30)));
  EXPECT_EQ(v["from"], "2026-12-05T10:02:00Z");
  EXPECT_EQ(v["pairs"][1]["tx"]["bytes"], 400);
  // One tenant.
  v = l.usageView(std::nullopt, "bulk");
  ASSERT_EQ(v["pairs"].size(), 1u);
  EXPECT_EQ(v["pairs"][0]["tenant"], "bulk");
}

TEST_F(UsageTest, HistoryIsBoundedAndSaysWhenSinceReachesPastIt) {
  Options o = options(60);
  o.max_history_records = 2;  // records with traffic
  UsageLedger l(o, at(10, 0, 0));
  const std::vector<engine::TenantLineEntry> pairs = {pair("train", "mpls", 1)};
  for (int i = 1; i <= 4; ++i) {
    set(1, {static_cast<uint64_t>(i), static_cast<uint64_t>(i) * 100, 0, 0, 0, 0});
    l.sample(pairs, *c_, at(10, i, 0));
  }
  // Kept: 10:02 and 10:03; 10:00 and 10:01 dropped.
  json v = l.usageView(floor<seconds>(at(10, 0, 0)));
  EXPECT_EQ(v["from"], "2026-12-05T10:02:00Z");
  EXPECT_EQ(v["truncated"], true);
  EXPECT_EQ(v["pairs"][0]["tx"]["bytes"], 200);
  v = l.usageView(floor<seconds>(at(10, 2, 0)));
  EXPECT_EQ(v["truncated"], false);
  // The totals keep everything.
  EXPECT_EQ(l.total(kTrainB).tx_bytes, 400u);

  // Older than 24 h goes too.
  UsageLedger day(options(3600), at(0, 0, 0));
  set(1, {1, 1, 0, 0, 0, 0});
  day.sample(pairs, *c_, at(0, 30, 0));
  day.sample(pairs, *c_, at(1, 0, 0));
  EXPECT_EQ(day.usageView(floor<seconds>(at(0, 0, 0)))["from"], "2026-12-05T00:00:00Z");
  day.sample(pairs, *c_, sys_days{2026y / December / 6} + hours(1));
  v = day.usageView(floor<seconds>(at(0, 0, 0)));
  EXPECT_EQ(v["truncated"], true);
  EXPECT_EQ(v["from"], "2026-12-05T01:00:00Z");
}

TEST_F(UsageTest, CloseWritesTheOpenIntervalUpToNow) {
  UsageLedger l(options(60), at(10, 0, 0));
  set(1, {2, 200, 0, 0, 0, 0});
  l.sample({pair("train", "mpls", 1)}, *c_, at(10, 0, 20));
  l.close(at(10, 0, 21, 500));
  EXPECT_EQ(readFile(root_ + "/var/usage/usage-2026-12-05.csv"),
            std::string(kCsvHeader) +
                "2026-12-05T10:00:00Z,2026-12-05T10:00:22Z,train,site-b,mpls,2,200,0,0,0,0\n");
}

TEST_F(UsageTest, ClockGoingBackClosesTheOpenInterval) {
  UsageLedger l(options(60), at(10, 0, 0));
  set(1, {2, 200, 0, 0, 0, 0});
  l.sample({pair("train", "mpls", 1)}, *c_, at(10, 0, 30));
  set(1, {3, 300, 0, 0, 0, 0});
  l.sample({pair("train", "mpls", 1)}, *c_, at(9, 0, 0));
  EXPECT_EQ(l.nextBoundary(), floor<seconds>(at(9, 1, 0)));
  l.sample({pair("train", "mpls", 1)}, *c_, at(9, 1, 0));
  EXPECT_EQ(readFile(root_ + "/var/usage/usage-2026-12-05.csv"),
            std::string(kCsvHeader) +
                "2026-12-05T10:00:00Z,2026-12-05T10:00:30Z,train,site-b,mpls,3,300,0,0,0,0\n"
                "2026-12-05T09:00:00Z,2026-12-05T09:01:00Z,train,site-b,mpls,0,0,0,0,0,0\n");
  EXPECT_EQ(l.total(kTrainB).tx_packets, 3u);
}

TEST_F(UsageTest, MetricsAreTheTotalsAndStayMonotonicAcrossReloads) {
  UsageLedger l(options(60), at(10, 0, 0));
  set(3, {100, 10000, 20, 2000, 4, 2, 7});
  l.sample({pair("train", "mpls", 3)}, *c_, at(10, 0, 1));
  set(3, {1, 100, 0, 0, 0, 0, 1});  // rebased under the same name
  l.sample({pair("train", "mpls", 3)}, *c_, at(10, 0, 2));
  const auto m = l.metricSamples();
  ASSERT_EQ(m.size(), 10u);
  auto find = [&](const std::string& name, const std::string& key, const std::string& value) {
    for (const auto& s : m) {
      if (s.name == name && s.labels.size() == 4 && s.labels[0].second == "train" &&
          s.labels[1].second == "site-b" && s.labels[2].second == "mpls" &&
          s.labels[3].first == key && s.labels[3].second == value) {
        return s.value;
      }
    }
    ADD_FAILURE() << name << " " << key << "=" << value << " missing";
    return -1.0;
  };
  EXPECT_EQ(find("mcgw_tenant_line_packets_total", "direction", "tx"), 101);
  EXPECT_EQ(find("mcgw_tenant_line_packets_total", "direction", "rx"), 20);
  EXPECT_EQ(find("mcgw_tenant_line_bytes_total", "direction", "tx"), 10100);
  EXPECT_EQ(find("mcgw_tenant_line_bytes_total", "direction", "rx"), 2000);
  EXPECT_EQ(find("mcgw_tenant_line_meter_packets_total", "colour", "yellow"), 4);
  EXPECT_EQ(find("mcgw_tenant_line_meter_packets_total", "colour", "red"), 2);
  // Packets dropped line-full: 7, then 1 more after the rebase.
  EXPECT_EQ(m[6].name, "mcgw_tenant_line_full_packets_total");
  EXPECT_EQ(m[6].labels.size(), 3u);
  EXPECT_EQ(m[6].value, 8);
  EXPECT_EQ(m[7].name, "mcgw_usage_write_errors_total");
  EXPECT_EQ(m[8].name, "mcgw_usage_dropped_intervals_total");
  EXPECT_EQ(m[9].name, "mcgw_usage_pending_intervals");
  for (size_t i = 7; i < 10; ++i) {
    EXPECT_TRUE(m[i].labels.empty());
    EXPECT_EQ(m[i].value, 0);
  }
}

TEST_F(UsageTest, RemovedPairsAreForgottenBeyondTheBoundOnly) {
  Options o = options(60);
  o.max_pairs = 2;
  o.history = hours(1);
  UsageLedger l(o, at(10, 0, 0));
  set(1, {1, 100, 0, 0, 0, 0});
  set(2, {1, 100, 0, 0, 0, 0});
  l.sample({pair("a", "mpls", 1), pair("b", "mpls", 2)}, *c_, at(10, 0, 10));
  set(1, {});  // slot 1 given to c afresh
  l.sample({pair("c", "mpls", 1)}, *c_, at(10, 1, 0));
  // a and b are removed but the history still has their rows of 10:00.
  EXPECT_EQ(l.usageView(std::nullopt)["pairs"].size(), 3u);
  l.sample({pair("c", "mpls", 1)}, *c_, at(11, 5, 0));  // 10:00 leaves the history
  const json v = l.usageView(std::nullopt);
  ASSERT_EQ(v["pairs"].size(), 2u);
  EXPECT_EQ(v["forgotten_pairs"], 1);
  EXPECT_EQ(v["pairs"][0]["tenant"], "b");  // a went first (least recently used, then by name)
  EXPECT_EQ(v["pairs"][1]["tenant"], "c");
  EXPECT_EQ(l.total({"b", "site-b", "mpls"}).tx_bytes, 100u);
}

TEST(UsageOptions, FromConfig) {
  config::UsageConfig c;
  Options o = optionsFrom(c, "/var/lib/mcgw");
  EXPECT_EQ(o.directory, "/var/lib/mcgw/usage");
  EXPECT_EQ(o.interval_s, 60u);
  EXPECT_EQ(o.retention_days, 31u);
  c.directory = "/srv/billing";
  c.interval_s = 300;
  c.retention_days = 400;
  o = optionsFrom(c, "/var/lib/mcgw");
  EXPECT_EQ(o.directory, "/srv/billing");
  EXPECT_EQ(o.interval_s, 300u);
  EXPECT_EQ(o.retention_days, 400u);
  EXPECT_EQ(fileName(sys_days{2026y / January / 9}), "usage-2026-01-09.csv");
}

}  // namespace
}  // namespace mcgw::usage
