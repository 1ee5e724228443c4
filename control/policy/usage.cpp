#include "control/policy/usage.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <spdlog/spdlog.h>

#include "control/core/iso_time.hpp"

namespace mcgw::usage {

using nlohmann::json;
namespace chr = std::chrono;

namespace {

// One counter's increase since the last sample: a counter that went down
// was rebased to zero (a fresh slot), so all of its value is new.
uint64_t delta(uint64_t now, uint64_t last) {
  return now >= last ? now - last : now;
}

Usage deltaOf(const Usage& now, const Usage& last) {
  return {delta(now.tx_packets, last.tx_packets), delta(now.tx_bytes, last.tx_bytes),
          delta(now.rx_packets, last.rx_packets), delta(now.rx_bytes, last.rx_bytes),
          delta(now.yellow, last.yellow),         delta(now.red, last.red),
          delta(now.line_full, last.line_full)};
}

// A CSV field (RFC 4180): quoted when it holds a comma, a quote, a line
// break or surrounding spaces.  Config names never do; a file stays
// readable whatever they hold.
std::string csvField(const std::string& s) {
  const bool quote = s.find_first_of(",\"\r\n") != std::string::npos ||
                     (!s.empty() && (s.front() == ' ' || s.back() == ' '));
  if (!quote) {
    return s;
  }
  std::string out = "\"";
  for (char c : s) {
    out += c;
    if (c == '"') {
      out += '"';
    }
  }
  return out + "\"";
}

std::string sysError(const std::string& what, int err) {
  return what + ": " + std::strerror(err);
}

// mkdir -p with mode 0750 for what it makes.
bool makeDirs(const std::string& dir, std::string* error) {
  if (dir.empty()) {
    *error = "no directory for usage files";
    return false;
  }
  for (size_t pos = 1; pos <= dir.size(); ++pos) {
    if (pos != dir.size() && dir[pos] != '/') {
      continue;
    }
    const std::string part = dir.substr(0, pos);
    if (::mkdir(part.c_str(), 0750) != 0 && errno != EEXIST) {
      *error = sysError(part, errno);
      return false;
    }
  }
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) {
    *error = sysError(dir, errno);
    return false;
  }
  if (!S_ISDIR(st.st_mode)) {
    *error = dir + ": not a directory";
    return false;
  }
  return true;
}

// usage-YYYY-MM-DD.csv exactly (a real date), else nothing.
std::optional<chr::sys_days> fileDay(const char* name) {
  const std::string_view n(name);
  if (n.size() != 20 || n.substr(0, 6) != "usage-" || n.substr(16) != ".csv" || n[10] != '-' ||
      n[13] != '-') {
    return std::nullopt;
  }
  auto number = [&](size_t pos, size_t len, int* out) {
    int v = 0;
    for (size_t i = pos; i < pos + len; ++i) {
      if (n[i] < '0' || n[i] > '9') {
        return false;
      }
      v = v * 10 + (n[i] - '0');
    }
    *out = v;
    return true;
  };
  int y = 0, m = 0, d = 0;
  if (!number(6, 4, &y) || !number(11, 2, &m) || !number(14, 2, &d)) {
    return std::nullopt;
  }
  const chr::year_month_day ymd{chr::year(y), chr::month(static_cast<unsigned>(m)),
                                chr::day(static_cast<unsigned>(d))};
  if (!ymd.ok()) {
    return std::nullopt;
  }
  return chr::sys_days(ymd);
}

json pb(uint64_t packets, uint64_t bytes) {
  return {{"packets", packets}, {"bytes", bytes}};
}

json row(const PairKey& k, bool present, const Usage& u) {
  return {{"tenant", k.tenant},
          {"peer", k.peer},
          {"line", k.line},
          {"present", present},
          {"tx", pb(u.tx_packets, u.tx_bytes)},
          {"rx", pb(u.rx_packets, u.rx_bytes)},
          {"yellow", u.yellow},
          {"red", u.red},
          {"line_full", u.line_full}};
}

}  // namespace

Usage& Usage::operator+=(const Usage& o) {
  tx_packets += o.tx_packets;
  tx_bytes += o.tx_bytes;
  rx_packets += o.rx_packets;
  rx_bytes += o.rx_bytes;
  yellow += o.yellow;
  red += o.red;
  line_full += o.line_full;
  return *this;
}

Options optionsFrom(const config::UsageConfig& c, const std::string& state_dir) {
  Options o;
  o.directory = c.directory.empty() ? state_dir + "/usage" : c.directory;
  o.interval_s = c.interval_s;
  o.retention_days = c.retention_days;
  return o;
}

std::string fileName(chr::sys_days day) {
  const chr::year_month_day ymd(day);
  char buf[32];
  std::snprintf(buf, sizeof buf, "usage-%04d-%02u-%02u.csv", static_cast<int>(ymd.year()),
                static_cast<unsigned>(ymd.month()), static_cast<unsigned>(ymd.day()));
  return buf;
}

UsageLedger::UsageLedger(Options options, chr::system_clock::time_point start)
    : opt_(std::move(options)), slots_(engine::kMaxTenantLines) {
  opt_.interval_s = std::max(1u, opt_.interval_s);
  started_ = chr::floor<chr::seconds>(start);
  open_start_ = started_;
  open_end_ = boundaryAfter(started_);
  last_sample_ = start;
}

void UsageLedger::configure(Options options) {
  std::lock_guard lock(mu_);
  options.interval_s = std::max(1u, options.interval_s);
  if (options.directory != opt_.directory || options.retention_days != opt_.retention_days) {
    retention_day_.reset();  // at the next sample
  }
  opt_ = std::move(options);
}

// Boundaries: every interval_s from each UTC midnight, and midnight itself
// (an interval never spans two days, so it belongs to one day's file).
chr::sys_seconds UsageLedger::boundaryAfter(chr::sys_seconds t) const {
  const chr::sys_days day = chr::floor<chr::days>(t);
  const int64_t into = (t - day).count();
  const int64_t step = opt_.interval_s;
  const chr::sys_seconds next = day + chr::seconds((into / step + 1) * step);
  return std::min<chr::sys_seconds>(next, day + chr::days(1));
}

chr::sys_seconds UsageLedger::intervalStart(chr::sys_seconds t) const {
  const chr::sys_days day = chr::floor<chr::days>(t);
  const int64_t into = (t - day).count();
  const int64_t step = opt_.interval_s;
  return day + chr::seconds(into / step * step);
}

chr::sys_seconds UsageLedger::nextBoundary() const {
  std::lock_guard lock(mu_);
  return open_end_;
}

void UsageLedger::sample(const std::vector<engine::TenantLineEntry>& pairs,
                         const engine::CountersSnapshot& c, chr::system_clock::time_point now) {
  std::lock_guard lock(mu_);
  ++samples_;
  for (uint16_t s : active_) {
    slots_[s].pair->second.present = false;
  }
  std::vector<uint16_t> active;
  active.reserve(pairs.size());
  for (const auto& p : pairs) {
    const size_t s = p.slot;
    if (s >= slots_.size() || s >= c.usage_tx.size() || s >= c.usage_rx.size() ||
        s >= c.meter_yellow.size() || s >= c.meter_red.size() || s >= c.line_full.size()) {
      continue;
    }
    Slot& st = slots_[s];
    if (st.seen == samples_) {
      continue;  // listed twice: counted once
    }
    if (!st.pair || st.pair->first.tenant != p.tenant || st.pair->first.peer != p.peer ||
        st.pair->first.line != p.line) {
      // New to this slot (a fresh slot, or given to another pair): from zero.
      st.pair = &*pairs_.try_emplace(PairKey{p.tenant, p.peer, p.line}).first;
      st.last = {};
    }
    st.seen = samples_;
    const Usage cur{c.usage_tx[s].packets, c.usage_tx[s].bytes, c.usage_rx[s].packets,
                    c.usage_rx[s].bytes,   c.meter_yellow[s],   c.meter_red[s],
                    c.line_full[s]};
    const Usage d = deltaOf(cur, st.last);
    st.last = cur;
    Pair& pair = st.pair->second;
    pair.total += d;
    pair.open += d;
    pair.present = true;
    active.push_back(static_cast<uint16_t>(s));
  }
  for (uint16_t s : active_) {
    if (slots_[s].seen != samples_) {
      slots_[s] = Slot{};  // its pair is gone; the slot may come back for anyone
    }
  }
  active_ = std::move(active);

  // What was counted since the last sample belongs to the interval open
  // then; then the intervals that ended by now close.
  const chr::sys_seconds t = chr::floor<chr::seconds>(now);
  const chr::system_clock::time_point previous = last_sample_;
  last_sample_ = now;
  bool closed = false;
  if (t < open_start_) {
    // The wall clock went back: close what is open where the last sample
    // saw it, and go on from now.
    const chr::sys_seconds end =
        std::clamp(chr::ceil<chr::seconds>(previous), open_start_ + chr::seconds(1), open_end_);
    spdlog::warn("usage: the clock went back from {} to {}; interval closed at {}",
                 core::isoTime(previous), core::isoTime(now), core::isoTime(end));
    closeOpen(end, t);
    open_start_ = t;
    open_end_ = boundaryAfter(t);
    closed = true;
  } else if (t >= open_end_) {
    closeOpen(open_end_, t);
    // Intervals without a sample (mcgwd's loop stalled) have no record:
    // their traffic is in the one closed above.
    open_start_ = intervalStart(t);
    open_end_ = boundaryAfter(t);
    closed = true;
  }
  if (closed) {
    writePending();  // with what an earlier failure left
    forgetPairs();
  }
  const chr::sys_days today = chr::floor<chr::days>(t);
  if (!retention_day_ || *retention_day_ != today) {
    retention(today);
  }
}

void UsageLedger::close(chr::system_clock::time_point now) {
  std::lock_guard lock(mu_);
  const chr::sys_seconds t = chr::floor<chr::seconds>(now);
  const chr::sys_seconds end =
      std::clamp(chr::ceil<chr::seconds>(now), open_start_ + chr::seconds(1), open_end_);
  closeOpen(end, t);
  open_start_ = end;
  open_end_ = boundaryAfter(end);
  writePending();
}

void UsageLedger::closeOpen(chr::sys_seconds end, chr::sys_seconds now) {
  Closed cl{open_start_, end, {}};
  const std::string times = core::isoTime(open_start_) + "," + core::isoTime(end) + ",";
  std::string rows;
  // Every pair that exists has a row (zeros too: a billing job sees the pair
  // was there and carried nothing), and a pair removed during the interval
  // has one if it carried something in it.
  for (auto& e : pairs_) {
    Pair& p = e.second;
    if (!p.present && p.open.zero()) {
      continue;
    }
    const Usage& u = p.open;
    rows += times + csvField(e.first.tenant) + "," + csvField(e.first.peer) + "," +
            csvField(e.first.line) + "," + std::to_string(u.tx_packets) + "," +
            std::to_string(u.tx_bytes) + "," + std::to_string(u.rx_packets) + "," +
            std::to_string(u.rx_bytes) + "," + std::to_string(u.yellow) + "," +
            std::to_string(u.red) + "\n";
    if (!u.zero()) {
      cl.records.push_back({&e, u});
    }
    p.last_used = end;
    p.open = {};
  }

  history_records_ += cl.records.size();
  history_.push_back(std::move(cl));
  auto dropFront = [&] {
    history_records_ -= history_.front().records.size();
    history_dropped_end_ = std::max(history_dropped_end_, history_.front().end);
    history_.pop_front();
  };
  while (!history_.empty() && history_.front().end <= now - opt_.history) {
    dropFront();
  }
  while (!history_.empty() && history_records_ > opt_.max_history_records) {
    dropFront();
  }

  if (rows.empty()) {
    return;  // no pairs
  }
  pending_bytes_ += rows.size();
  pending_.push_back({chr::floor<chr::days>(open_start_), std::move(rows)});
}

bool UsageLedger::writeOne(const Pending& p, std::string* error) {
  const std::string path = opt_.directory + "/" + fileName(p.day);
  const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0640);
  if (fd < 0) {
    *error = sysError(path, errno);
    return false;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    *error = sysError(path, errno);
    ::close(fd);
    return false;
  }
  if (!S_ISREG(st.st_mode)) {
    *error = path + ": not a regular file";
    ::close(fd);
    return false;
  }
  // One write of whole lines: a reader never sees half a line, and a short
  // write (disk full) is cut back off and tried again later.
  const std::string text = st.st_size == 0 ? kCsvHeader + p.rows : p.rows;
  ssize_t n;
  do {
    n = ::write(fd, text.data(), text.size());
  } while (n < 0 && errno == EINTR);
  if (n != static_cast<ssize_t>(text.size())) {
    *error = n < 0 ? sysError(path, errno) : path + ": short write (disk full?)";
    if (n > 0 && ::ftruncate(fd, st.st_size) != 0) {
      *error += "; cannot cut the short write off: " + std::string(std::strerror(errno));
    }
    ::close(fd);
    return false;
  }
  ::close(fd);
  return true;
}

void UsageLedger::writePending() {
  if (pending_.empty()) {
    return;
  }
  std::string error;
  bool ok = makeDirs(opt_.directory, &error);
  while (ok && !pending_.empty()) {
    if (!writeOne(pending_.front(), &error)) {
      ok = false;
      break;
    }
    pending_bytes_ -= pending_.front().rows.size();
    pending_.pop_front();
  }
  // Beyond the bound, the oldest intervals are dropped (after the write was
  // tried, so a bound of N keeps N waiting).
  while (pending_.size() > opt_.max_pending_intervals ||
         (pending_bytes_ > opt_.max_pending_bytes && pending_.size() > 1)) {
    const std::string file = fileName(pending_.front().day);
    pending_bytes_ -= pending_.front().rows.size();
    pending_.pop_front();
    ++dropped_intervals_;
    spdlog::error("usage: an interval for {} was dropped unwritten ({} wait to be written)", file,
                  pending_.size());
  }
  if (!ok) {
    ++write_errors_;
    last_error_ = error;
    spdlog::warn(
        "usage: cannot write usage files: {} ({} interval{} wait, tried again at the "
        "next interval)",
        error, pending_.size(), pending_.size() == 1 ? "" : "s");
  } else if (write_errors_ && !last_error_.empty()) {
    spdlog::info("usage: usage files written again in {}", opt_.directory);
    last_error_.clear();
  }
}

void UsageLedger::applyRetention(chr::system_clock::time_point now) {
  std::lock_guard lock(mu_);
  retention(chr::floor<chr::days>(now));
}

void UsageLedger::retention(chr::sys_days today) {
  retention_day_ = today;
  DIR* d = ::opendir(opt_.directory.c_str());
  if (!d) {
    if (errno != ENOENT) {
      spdlog::warn("usage: retention: {}", sysError(opt_.directory, errno));
    }
    return;
  }
  const chr::sys_days cutoff = today - chr::days(opt_.retention_days);
  while (const dirent* e = ::readdir(d)) {
    const auto day = fileDay(e->d_name);
    if (!day || *day >= cutoff) {
      continue;
    }
    struct stat st {};
    if (::fstatat(::dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode)) {
      continue;
    }
    if (::unlinkat(::dirfd(d), e->d_name, 0) == 0) {
      spdlog::info("usage: deleted {}/{} (kept {} days)", opt_.directory, e->d_name,
                   opt_.retention_days);
    } else {
      spdlog::warn("usage: retention: {}", sysError(opt_.directory + "/" + e->d_name, errno));
    }
  }
  ::closedir(d);
}

// Beyond max_pairs names, removed pairs that no kept record refers to are
// forgotten, least recently used first.
void UsageLedger::forgetPairs() {
  if (pairs_.size() <= opt_.max_pairs) {
    return;
  }
  const chr::sys_seconds oldest_kept =
      history_.empty() ? chr::sys_seconds::max() : history_.front().start;
  std::vector<std::map<PairKey, Pair>::iterator> idle;
  for (auto it = pairs_.begin(); it != pairs_.end(); ++it) {
    const Pair& p = it->second;
    if (!p.present && p.open.zero() && p.last_used <= oldest_kept) {
      idle.push_back(it);
    }
  }
  std::stable_sort(idle.begin(), idle.end(), [](const auto& a, const auto& b) {
    return a->second.last_used < b->second.last_used;
  });
  for (auto it : idle) {
    if (pairs_.size() <= opt_.max_pairs) {
      break;
    }
    pairs_.erase(it);
    ++forgotten_pairs_;
  }
}

json UsageLedger::usageView(std::optional<chr::sys_seconds> since,
                            const std::string& tenant) const {
  std::lock_guard lock(mu_);
  json out = {{"schema", "mcgw.usage/1"}, {"started", core::isoTime(started_)}};
  json rows = json::array();
  auto wanted = [&](const PairKey& k) { return tenant.empty() || k.tenant == tenant; };
  if (!since) {
    out["from"] = core::isoTime(started_);
    for (const auto& [k, p] : pairs_) {
      if (wanted(k)) {
        rows.push_back(row(k, p.present, p.total));
      }
    }
  } else {
    chr::sys_seconds from = open_start_;
    std::map<const Entry*, Usage> sum;
    for (const Closed& cl : history_) {
      if (cl.start < *since) {
        continue;
      }
      from = std::min(from, cl.start);
      for (const Record& r : cl.records) {
        sum[r.pair] += r.u;
      }
    }
    for (const auto& e : pairs_) {
      if (e.second.present || !e.second.open.zero()) {
        sum[&e] += e.second.open;
      }
    }
    // In the order of the names.
    for (const auto& e : pairs_) {
      auto it = sum.find(&e);
      if (it != sum.end() && wanted(e.first)) {
        rows.push_back(row(e.first, e.second.present, it->second));
      }
    }
    out["from"] = core::isoTime(from);
    out["since"] = core::isoTime(*since);
    out["truncated"] = *since < history_dropped_end_;
  }
  out["to"] = core::isoTime(chr::floor<chr::seconds>(last_sample_));
  out["interval_s"] = opt_.interval_s;
  out["directory"] = opt_.directory;
  out["retention_days"] = opt_.retention_days;
  out["write_errors"] = write_errors_;
  out["pending_intervals"] = pending_.size();
  out["dropped_intervals"] = dropped_intervals_;
  out["forgotten_pairs"] = forgotten_pairs_;
  if (!last_error_.empty()) {
    out["last_error"] = last_error_;
  }
  out["pairs"] = std::move(rows);
  return out;
}

std::vector<MetricSample> UsageLedger::metricSamples() const {
  std::lock_guard lock(mu_);
  std::vector<MetricSample> out;
  out.reserve(pairs_.size() * 7);
  for (const auto& [k, p] : pairs_) {
    const std::vector<std::pair<std::string, std::string>> base = {
        {"tenant", k.tenant}, {"peer", k.peer}, {"line", k.line}};
    auto with = [&](const char* key, const char* value) {
      auto l = base;
      l.emplace_back(key, value);
      return l;
    };
    const Usage& u = p.total;
    out.push_back({"mcgw_tenant_line_packets_total", with("direction", "tx"),
                   static_cast<double>(u.tx_packets)});
    out.push_back({"mcgw_tenant_line_packets_total", with("direction", "rx"),
                   static_cast<double>(u.rx_packets)});
    out.push_back(
        {"mcgw_tenant_line_bytes_total", with("direction", "tx"), static_cast<double>(u.tx_bytes)});
    out.push_back(
        {"mcgw_tenant_line_bytes_total", with("direction", "rx"), static_cast<double>(u.rx_bytes)});
    out.push_back({"mcgw_tenant_line_meter_packets_total", with("colour", "yellow"),
                   static_cast<double>(u.yellow)});
    out.push_back({"mcgw_tenant_line_meter_packets_total", with("colour", "red"),
                   static_cast<double>(u.red)});
    out.push_back({"mcgw_tenant_line_full_packets_total", base, static_cast<double>(u.line_full)});
  }
  out.push_back({"mcgw_usage_write_errors_total", {}, static_cast<double>(write_errors_)});
  out.push_back(
      {"mcgw_usage_dropped_intervals_total", {}, static_cast<double>(dropped_intervals_)});
  out.push_back({"mcgw_usage_pending_intervals", {}, static_cast<double>(pending_.size())});
  return out;
}

Usage UsageLedger::total(const PairKey& key) const {
  std::lock_guard lock(mu_);
  auto it = pairs_.find(key);
  return it == pairs_.end() ? Usage{} : it->second.total;
}

uint64_t UsageLedger::writeErrors() const {
  std::lock_guard lock(mu_);
  return write_errors_;
}

uint64_t UsageLedger::droppedIntervals() const {
  std::lock_guard lock(mu_);
  return dropped_intervals_;
}

size_t UsageLedger::pendingIntervals() const {
  std::lock_guard lock(mu_);
  return pending_.size();
}

}  // namespace mcgw::usage
