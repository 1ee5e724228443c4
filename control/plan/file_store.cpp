#include "control/plan/file_store.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <thread>
#include <utility>

#include "config/loader.hpp"
#include "config/loader_detail.hpp"
#include "config/text.hpp"
#include "config/yaml_document.hpp"
#include "control/plan/allocator.hpp"

namespace mcgw::plan {

using config::detail::YamlNode;
using Kind = StoreError::Kind;
using Clock = std::chrono::steady_clock;

namespace {

StoreError fail(Kind kind, std::string message) {
  return StoreError{kind, std::move(message)};
}

// An errno as a store error: permissions will not get better by retrying.
StoreError ioError(int err, const std::string& what) {
  const Kind kind =
      err == EACCES || err == EPERM || err == EROFS ? Kind::kRefused : Kind::kUnreachable;
  return fail(kind, what + ": " + std::strerror(err));
}

std::string directoryOf(const std::string& path) {
  const auto slash = path.rfind('/');
  if (slash == std::string::npos) {
    return ".";
  }
  return slash == 0 ? "/" : path.substr(0, slash);
}

// A file descriptor closed when it goes out of scope.
class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd_ >= 0) {
      ::close(fd_);
    }
  }
  int get() const { return fd_; }
  // Closes now, reporting close's error (a write error may show only here).
  int close() {
    const int rc = ::close(fd_);
    fd_ = -1;
    return rc;
  }

 private:
  int fd_;
};

// The file's bytes; nullopt when it does not exist (its directory does).
StoreResult<std::optional<std::string>> readFile(const std::string& path) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) {
    const int err = errno;
    if (err == ENOENT) {
      struct stat dir {};
      if (::stat(directoryOf(path).c_str(), &dir) != 0 || !S_ISDIR(dir.st_mode)) {
        return unexpected(fail(Kind::kUnreachable,
                               "the plan's directory " + directoryOf(path) + " does not exist"));
      }
      return std::optional<std::string>{};
    }
    return unexpected(ioError(err, "cannot open " + path));
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) {
    return unexpected(ioError(errno, "cannot stat " + path));
  }
  if (!S_ISREG(st.st_mode)) {
    return unexpected(fail(Kind::kCorrupt, path + " is not a regular file"));
  }
  if (static_cast<uint64_t>(st.st_size) > kMaxStoreBytes) {
    return unexpected(fail(Kind::kCorrupt, path + " has " + std::to_string(st.st_size) +
                                               " bytes, more than a plan may (" +
                                               std::to_string(kMaxStoreBytes) + ")"));
  }
  std::string text;
  char buffer[65536];
  while (true) {
    const ssize_t n = ::read(fd.get(), buffer, sizeof buffer);
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      return unexpected(ioError(errno, "cannot read " + path));
    }
    if (n == 0) {
      break;
    }
    text.append(buffer, static_cast<size_t>(n));
    if (text.size() > kMaxStoreBytes) {
      return unexpected(
          fail(Kind::kCorrupt, path + " grew beyond " + std::to_string(kMaxStoreBytes) + " bytes"));
    }
  }
  return std::optional<std::string>{std::move(text)};
}

StoreResult<Snapshot> loadFile(const std::string& path) {
  auto text = readFile(path);
  if (!text) {
    return unexpected(text.error());
  }
  if (!*text) {
    return Snapshot{};  // no file yet: an empty plan
  }
  return parsePlanFile(**text, path);
}

bool writeAll(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      return false;
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

// Writes text to path through a temporary file in the same directory:
// written, fsynced, renamed over path, and the directory fsynced so that
// the rename itself survives a crash.
Result<bool, StoreError> replaceFile(const std::string& path, const std::string& text) {
  std::string temp = path + ".tmp.XXXXXX";
  Fd fd(::mkostemp(temp.data(), O_CLOEXEC));
  if (fd.get() < 0) {
    return unexpected(ioError(errno, "cannot create a temporary file next to " + path));
  }
  auto abandon = [&](int err, const std::string& what) {
    ::unlink(temp.c_str());
    return unexpected(ioError(err, what));
  };
  if (::fchmod(fd.get(), 0644) != 0) {
    return abandon(errno, "cannot set the mode of " + temp);
  }
  if (!writeAll(fd.get(), text)) {
    return abandon(errno, "cannot write " + temp);
  }
  if (::fsync(fd.get()) != 0) {
    return abandon(errno, "cannot fsync " + temp);
  }
  if (fd.close() != 0) {
    return abandon(errno, "cannot close " + temp);
  }
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    return abandon(errno, "cannot rename " + temp + " to " + path);
  }
  const std::string dir = directoryOf(path);
  Fd dir_fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir_fd.get() < 0 || ::fsync(dir_fd.get()) != 0) {
    // The new plan is in place; only its durability across a crash is in doubt.
    return unexpected(ioError(errno, "the plan is written but cannot fsync its directory " + dir));
  }
  return true;
}

// The lock file's exclusive flock, held while this lives.
class WriterLock {
 public:
  static Result<WriterLock, StoreError> take(const std::string& path,
                                             std::chrono::milliseconds timeout) {
    const std::string lock_path = path + ".lock";
    WriterLock lock(::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
    if (lock.fd_ < 0) {
      const int err = errno;
      struct stat dir {};
      if (err == ENOENT && ::stat(directoryOf(path).c_str(), &dir) != 0) {
        return unexpected(fail(Kind::kUnreachable,
                               "the plan's directory " + directoryOf(path) + " does not exist"));
      }
      return unexpected(ioError(err, "cannot open the lock file " + lock_path));
    }
    // Polled rather than blocking, so that a writer that hangs holding the
    // lock makes the others fail with kContended instead of hanging too.
    const auto deadline = Clock::now() + timeout;
    auto pause = std::chrono::milliseconds(1);
    while (::flock(lock.fd_, LOCK_EX | LOCK_NB) != 0) {
      if (errno != EWOULDBLOCK && errno != EINTR) {
        return unexpected(ioError(errno, "cannot lock " + lock_path));
      }
      if (Clock::now() >= deadline) {
        return unexpected(fail(Kind::kContended, "another writer held " + lock_path + " for " +
                                                     std::to_string(timeout.count()) + " ms"));
      }
      std::this_thread::sleep_for(pause);
      pause = std::min(pause * 2, std::chrono::milliseconds(20));
    }
    return lock;
  }
  WriterLock(WriterLock&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  WriterLock(const WriterLock&) = delete;
  WriterLock& operator=(const WriterLock&) = delete;
  WriterLock& operator=(WriterLock&&) = delete;
  ~WriterLock() {
    if (fd_ >= 0) {
      ::close(fd_);  // releases the flock
    }
  }

 private:
  explicit WriterLock(int fd) : fd_(fd) {}
  int fd_;
};

// ---- the format ----

constexpr const char* kHeader =
    "# The address plan's stored VPCs (docs/address-plan.md).\n"
    "# Written by mcgwctl (plan allocate, release, import) under plan.yaml.lock;\n"
    "# change it with mcgwctl, not by hand: a hand edit bypasses the lock and\n"
    "# the overlap checks.\n";

// Reads the tree YamlDocument built; the first problem ends the reading.
class PlanReader {
 public:
  explicit PlanReader(const std::string& file) : file_(file) {}

  std::optional<Snapshot> read(const YamlNode& root) {
    if (!root.isMap()) {
      return problem(root, "",
                     root.isNull() ? "the file is empty; a plan file has revision: and vpcs:"
                                   : "a plan file is a mapping of revision: and vpcs:");
    }
    Snapshot s;
    bool has_revision = false, has_vpcs = false;
    for (size_t i = 0; i < root.size(); ++i) {
      const YamlNode& key = root.key(i);
      const YamlNode& value = root.value(i);
      if (!checkKey(root, i)) {
        return std::nullopt;
      }
      if (key.scalar == "revision") {
        has_revision = true;
        if (!readRevision(value, s.revision)) {
          return std::nullopt;
        }
      } else if (key.scalar == "vpcs") {
        has_vpcs = true;
        if (!readVpcs(value, s.vpcs)) {
          return std::nullopt;
        }
      } else {
        return problem(
            key, "",
            "unknown key " + text::quote(key.scalar) + " (a plan file has revision: and vpcs:)");
      }
    }
    if (!has_revision || !has_vpcs) {
      return problem(root, "", has_revision ? "vpcs: is missing" : "revision: is missing");
    }
    // Names are unique: sorted, a repeat is next to the first.
    std::vector<size_t> order(s.vpcs.size());
    for (size_t i = 0; i < order.size(); ++i) {
      order[i] = i;
    }
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return s.vpcs[a].name < s.vpcs[b].name; });
    for (size_t i = 1; i < order.size(); ++i) {
      if (s.vpcs[order[i]].name == s.vpcs[order[i - 1]].name) {
        return problem(*vpc_nodes_[order[i]], "vpcs[" + std::to_string(order[i]) + "]",
                       "VPC " + s.vpcs[order[i]].name + " is here a second time");
      }
    }
    std::vector<StoredVpc> sorted;
    sorted.reserve(order.size());
    for (size_t i : order) {
      sorted.push_back(std::move(s.vpcs[i]));
    }
    s.vpcs = std::move(sorted);
    return s;
  }

  const std::string& error() const { return error_; }

 private:
  std::nullopt_t problem(const YamlNode& at, const std::string& path, const std::string& message) {
    error_ = config::ConfigError{file_, at.line, at.column, path, message}.toString();
    return std::nullopt;
  }

  // The key i of map is a scalar and not a repeat of an earlier one.
  bool checkKey(const YamlNode& map, size_t i) {
    const YamlNode& key = map.key(i);
    if (!key.isScalar()) {
      problem(key, "", "a key is a plain word");
      return false;
    }
    for (size_t j = 0; j < i; ++j) {
      if (map.key(j).isScalar() && map.key(j).scalar == key.scalar) {
        problem(key, "", "key " + text::quote(key.scalar) + " is here a second time");
        return false;
      }
    }
    return true;
  }

  bool readRevision(const YamlNode& node, uint64_t& out) {
    const std::string& s = node.scalar;
    bool digits = node.isScalar() && !s.empty() && s.size() <= 20 &&
                  std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
    uint64_t value = 0;
    for (char c : s) {
      if (!digits) {
        break;
      }
      const uint64_t d = static_cast<uint64_t>(c - '0');
      if (value > (UINT64_MAX - d) / 10) {
        digits = false;
      }
      value = value * 10 + d;
    }
    if (!digits) {
      problem(node, "revision",
              "expected a whole number of 0..18446744073709551615, found " +
                  (node.isScalar() ? text::quote(s) : std::string("a list")));
      return false;
    }
    out = value;
    return true;
  }

  bool readVpcs(const YamlNode& node, std::vector<StoredVpc>& out) {
    if (node.isNull()) {
      return true;
    }
    if (!node.isSequence()) {
      problem(node, "vpcs", "expected a list of VPCs");
      return false;
    }
    if (node.size() > kMaxStoredVpcs) {
      problem(node, "vpcs",
              std::to_string(node.size()) + " VPCs, more than a store may hold (" +
                  std::to_string(kMaxStoredVpcs) + ")");
      return false;
    }
    out.reserve(node.size());
    for (size_t i = 0; i < node.size(); ++i) {
      vpc_nodes_.push_back(&node.item(i));
      StoredVpc vpc;
      if (!readVpc(node.item(i), "vpcs[" + std::to_string(i) + "]", vpc)) {
        return false;
      }
      out.push_back(std::move(vpc));
    }
    return true;
  }

  bool readVpc(const YamlNode& node, const std::string& path, StoredVpc& vpc) {
    if (!node.isMap()) {
      problem(node, path, "expected a VPC: name, cloud, region, prefixes, ...");
      return false;
    }
    struct Field {
      const char* key;
      std::string* value;
      bool required;
      bool found = false;
    };
    Field fields[] = {{"name", &vpc.name, true},      {"cloud", &vpc.cloud, true},
                      {"region", &vpc.region, true},  {"pool", &vpc.pool, false},
                      {"tenant", &vpc.tenant, false}, {"site", &vpc.site, false},
                      {"source", &vpc.source, false}};
    bool has_prefixes = false;
    for (size_t i = 0; i < node.size(); ++i) {
      if (!checkKey(node, i)) {
        return false;
      }
      const YamlNode& key = node.key(i);
      const YamlNode& value = node.value(i);
      const std::string at = path + "." + key.scalar;
      if (key.scalar == "prefixes") {
        has_prefixes = true;
        if (!readPrefixes(value, at, vpc.prefixes)) {
          return false;
        }
        continue;
      }
      Field* field = nullptr;
      for (auto& f : fields) {
        if (key.scalar == f.key) {
          field = &f;
        }
      }
      if (!field) {
        problem(key, path, "unknown key " + text::quote(key.scalar));
        return false;
      }
      field->found = true;
      if (!value.isNull() && !value.isScalar()) {
        problem(value, at, "expected a name");
        return false;
      }
      *field->value = value.scalar;
      const bool optional = !field->required && value.scalar.empty();
      const bool ok = key.scalar == "source" ? isValidSource(value.scalar)
                                             : optional || isValidName(value.scalar);
      if (!ok) {
        problem(value, at,
                text::quote(value.scalar) +
                    (key.scalar == "source"
                         ? " is not a source (letters, digits, '_', '.', '-', ':')"
                         : " is not a valid name: 1..63 letters, digits, '_', '.', '-' "
                           "starting with a letter"));
        return false;
      }
    }
    for (const auto& f : fields) {
      if (f.required && !f.found) {
        problem(node, path, std::string(f.key) + ": is missing");
        return false;
      }
    }
    if (!has_prefixes) {
      problem(node, path, "prefixes: is missing");
      return false;
    }
    return true;
  }

  bool readPrefixes(const YamlNode& node, const std::string& path, std::vector<IpPrefix>& out) {
    if (!node.isSequence() || node.size() == 0 || node.size() > kMaxPrefixesPerVpc) {
      problem(node, path,
              "expected a list of 1.." + std::to_string(kMaxPrefixesPerVpc) + " prefixes");
      return false;
    }
    for (size_t i = 0; i < node.size(); ++i) {
      const YamlNode& item = node.item(i);
      auto p = item.isScalar() ? IpPrefix::parse(item.scalar) : std::nullopt;
      if (!p) {
        problem(item, path,
                (item.isScalar() ? text::quote(item.scalar) : std::string("this")) +
                    " is not an IP prefix such as 10.1.0.0/16 or fd00:1::/48");
        return false;
      }
      if (p->hasHostBits()) {
        problem(item, path,
                p->toString() + " has host bits set; the prefix is " + p->network().toString());
        return false;
      }
      out.push_back(*p);
    }
    return true;
  }

  const std::string& file_;
  std::string error_;
  std::vector<const YamlNode*> vpc_nodes_;
};

std::string quoted(const std::string& s) {
  return "\"" + s + "\"";
}

}  // namespace

std::string formatPlanFile(const Snapshot& snapshot) {
  std::string out = kHeader;
  out += "revision: " + std::to_string(snapshot.revision) + "\n";
  if (snapshot.vpcs.empty()) {
    out += "vpcs: []\n";
    return out;
  }
  out += "vpcs:\n";
  // Every value is a name, a prefix or a source (checked before writing):
  // none holds a quote or a backslash, so double quotes keep them strings
  // ("null", "yes" and "no" are VPC names too).
  for (const auto& v : snapshot.vpcs) {
    out += "  - name: " + quoted(v.name) + "\n";
    out += "    cloud: " + quoted(v.cloud) + "\n";
    out += "    region: " + quoted(v.region) + "\n";
    out += "    prefixes: [";
    for (size_t i = 0; i < v.prefixes.size(); ++i) {
      out += (i ? ", " : "") + quoted(v.prefixes[i].toString());
    }
    out += "]\n";
    out += "    pool: " + quoted(v.pool) + "\n";
    out += "    tenant: " + quoted(v.tenant) + "\n";
    out += "    site: " + quoted(v.site) + "\n";
    out += "    source: " + quoted(v.source) + "\n";
  }
  return out;
}

StoreResult<Snapshot> parsePlanFile(std::string_view text, const std::string& file) {
  if (text.size() > kMaxStoreBytes) {
    return unexpected(fail(Kind::kCorrupt, file + " has more bytes than a plan may (" +
                                               std::to_string(kMaxStoreBytes) + ")"));
  }
  config::detail::YamlLimits limits;
  limits.max_depth = 8;
  limits.model_depth = 4;
  // Each VPC is a mapping of eight keys and its prefixes.
  limits.max_nodes = kMaxStoredVpcs * (2 * 8 + 2 + kMaxPrefixesPerVpc) + 16;
  limits.max_expanded_bytes = kMaxStoreBytes;
  limits.max_reported = 1;
  config::detail::ErrorSink sink(file);
  config::detail::YamlDocument doc;
  if (!doc.read(text, limits, sink)) {
    auto errors = sink.take();
    return unexpected(fail(Kind::kCorrupt,
                           errors.empty() ? file + ": does not parse" : errors.front().toString()));
  }
  PlanReader reader(file);
  auto snapshot = reader.read(doc.root());
  if (!snapshot) {
    return unexpected(fail(Kind::kCorrupt, reader.error()));
  }
  return std::move(*snapshot);
}

// ---- FileStore ----

FileStore::FileStore(std::string path, Options options)
    : path_(std::move(path)), options_(options) {}

StoreResult<Snapshot> FileStore::load() {
  return loadFile(path_);
}

StoreResult<Snapshot> FileStore::update(const Change& change) {
  auto lock = WriterLock::take(path_, options_.lock_timeout);
  if (!lock) {
    return unexpected(lock.error());
  }
  auto current = loadFile(path_);
  if (!current) {
    return current;  // a corrupt plan is not overwritten
  }
  Snapshot next = *current;
  auto verdict = change(next);
  if (!verdict) {
    return unexpected(fail(Kind::kAborted, verdict.error()));
  }
  if (!*verdict) {
    return current;
  }
  next.revision = current->revision + 1;
  std::stable_sort(next.vpcs.begin(), next.vpcs.end(),
                   [](const StoredVpc& a, const StoredVpc& b) { return a.name < b.name; });
  if (next.vpcs.size() > kMaxStoredVpcs) {
    return unexpected(fail(Kind::kAborted, "the change leaves " + std::to_string(next.vpcs.size()) +
                                               " VPCs, more than a store may hold (" +
                                               std::to_string(kMaxStoredVpcs) + ")"));
  }
  for (size_t i = 0; i < next.vpcs.size(); ++i) {
    std::string problem = storedVpcProblem(next.vpcs[i]);
    if (problem.empty() && i > 0 && next.vpcs[i].name == next.vpcs[i - 1].name) {
      problem = "VPC " + next.vpcs[i].name + " is there twice";
    }
    if (!problem.empty()) {
      return unexpected(fail(Kind::kAborted, "the change would store an invalid plan: " + problem));
    }
  }
  const std::string text = formatPlanFile(next);
  if (text.size() > kMaxStoreBytes) {
    return unexpected(fail(Kind::kAborted, "the plan would take " + std::to_string(text.size()) +
                                               " bytes, more than a store may hold"));
  }
  auto written = replaceFile(path_, text);
  if (!written) {
    return unexpected(written.error());
  }
  return next;
}

namespace {

// What identifies one version of the file: a rename gives it a new inode.
using FileVersion = FileStore::FileVersion;

FileVersion versionOf(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return {};
  }
  return {true, st.st_ino, st.st_size,
          static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec};
}

}  // namespace

StoreResult<Snapshot> FileStore::waitChange(uint64_t after, std::chrono::milliseconds timeout,
                                            const std::atomic<bool>& stop) {
  const auto deadline = Clock::now() + timeout;
  // The file is parsed only when it changed since the last look, this wait
  // or an earlier one (a big plan takes seconds to parse).
  while (true) {
    const FileVersion version = versionOf(path_);
    if (!seen_version_ || version != *seen_version_) {
      seen_version_ = version;
      // A file that is corrupt or unreadable now may be fixed before the
      // deadline: keep looking, and report it only if it stays so.
      seen_content_ = loadFile(path_);
      if (*seen_content_ && (*seen_content_)->revision > after) {
        return *seen_content_;
      }
    }
    const auto now = Clock::now();
    if (stop.load() || now >= deadline) {
      return *seen_content_;
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now);
    std::this_thread::sleep_for(std::min(options_.poll_interval, left));
  }
}

}  // namespace mcgw::plan
