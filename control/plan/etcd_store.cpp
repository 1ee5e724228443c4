#include "control/plan/etcd_store.hpp"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "config/text.hpp"

namespace mcgw::plan {

namespace {

using json = nlohmann::json;
using Kind = StoreError::Kind;

// A VPC's JSON is a few hundred bytes; 64 prefixes of IPv6 stay far below.
constexpr size_t kMaxVpcBytes = 16384;
// The source of a VPC: "allocate", "import:aws", ...

StoreError error(Kind kind, std::string message) {
  return StoreError{kind, std::move(message)};
}

}  // namespace

std::string vpcToJson(const StoredVpc& vpc) {
  json prefixes = json::array();
  for (const auto& p : vpc.prefixes) {
    prefixes.push_back(p.toString());
  }
  json j = {{"name", vpc.name},     {"cloud", vpc.cloud},  {"region", vpc.region},
            {"prefixes", prefixes}, {"pool", vpc.pool},    {"tenant", vpc.tenant},
            {"site", vpc.site},     {"source", vpc.source}};
  // Fields are checked (storedVpcProblem) before they are written; replace keeps
  // dump() from throwing should a caller skip that.
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

Result<StoredVpc, std::string> vpcFromJson(std::string_view text) {
  if (text.size() > kMaxVpcBytes) {
    return unexpected("the value is " + std::to_string(text.size()) + " bytes (at most " +
                      std::to_string(kMaxVpcBytes) + ")");
  }
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    return unexpected("the value is not a JSON object: " + text::quote(text));
  }
  StoredVpc vpc;
  const std::pair<const char*, std::string*> fields[] = {
      {"name", &vpc.name},     {"cloud", &vpc.cloud}, {"region", &vpc.region}, {"pool", &vpc.pool},
      {"tenant", &vpc.tenant}, {"site", &vpc.site},   {"source", &vpc.source}};
  for (const auto& [name, out] : fields) {
    auto it = j.find(name);
    if (it == j.end()) {
      continue;  // checked below: name, cloud and region must be there
    }
    if (!it->is_string()) {
      return unexpected(std::string("field ") + name + " is not a string");
    }
    *out = it->get<std::string>();
  }
  auto prefixes = j.find("prefixes");
  if (prefixes == j.end() || !prefixes->is_array()) {
    return unexpected(std::string("field prefixes is not an array"));
  }
  if (prefixes->size() > kMaxPrefixesPerVpc) {
    return unexpected(std::to_string(prefixes->size()) + " prefixes (at most " +
                      std::to_string(kMaxPrefixesPerVpc) + ")");
  }
  for (const json& p : *prefixes) {
    auto prefix = p.is_string() ? IpPrefix::parse(p.get_ref<const std::string&>()) : std::nullopt;
    if (!prefix) {
      return unexpected("prefix " + text::quote(p.is_string() ? p.get<std::string>() : p.dump()) +
                        " does not parse");
    }
    vpc.prefixes.push_back(*prefix);
  }
  if (auto problem = storedVpcProblem(vpc); !problem.empty()) {
    return unexpected(problem);
  }
  return vpc;
}

EtcdStore::EtcdStore(EtcdStoreOptions options)
    : options_(std::move(options)), client_(options_.client), rng_(std::random_device{}()) {
  if (options_.prefix.empty() || options_.prefix.back() != '/') {
    options_.prefix += '/';
  }
}

std::string EtcdStore::describe() const {
  return "etcd " + client_.describe();
}

void EtcdStore::remember(const Snapshot& s) {
  std::lock_guard lock(mu_);
  if (!last_ || last_->revision <= s.revision) {
    last_ = s;
  }
}

StoreResult<EtcdStore::Read> EtcdStore::read() {
  auto range = client_.range(options_.prefix, etcd::prefixEnd(options_.prefix));
  if (!range) {
    return unexpected(range.error());
  }
  const std::string vpcs = options_.prefix + "vpcs/";
  Read r;
  r.header_revision = range->revision;
  for (const auto& kv : range->kvs) {
    auto corrupt = [&](const std::string& why) {
      return error(Kind::kCorrupt, "etcd key " + text::quote(kv.key, 128) + ": " + why);
    };
    r.snapshot.revision =
        std::max(r.snapshot.revision, static_cast<uint64_t>(std::max<int64_t>(kv.mod_revision, 0)));
    if (kv.key == serialKey()) {
      r.serial_mod = kv.mod_revision;
      continue;
    }
    if (kv.key.rfind(vpcs, 0) != 0) {
      return unexpected(corrupt("not a key of the plan (only " + vpcs + "<name> and " +
                                serialKey() + " may be under " + options_.prefix + ")"));
    }
    const std::string name = kv.key.substr(vpcs.size());
    if (!isValidName(name)) {
      return unexpected(corrupt("the VPC name is not a name"));
    }
    auto vpc = vpcFromJson(kv.value);
    if (!vpc) {
      return unexpected(corrupt(vpc.error()));
    }
    if (vpc->name != name) {
      return unexpected(corrupt("holds VPC " + text::quote(vpc->name)));
    }
    if (r.snapshot.vpcs.size() == kMaxStoredVpcs) {
      return unexpected(
          error(Kind::kCorrupt,
                "etcd holds more than " + std::to_string(kMaxStoredVpcs) + " VPCs under " + vpcs));
    }
    r.snapshot.vpcs.push_back(std::move(*vpc));
  }
  // etcd returns keys in byte order; names are ASCII, so that is name order.
  std::sort(r.snapshot.vpcs.begin(), r.snapshot.vpcs.end(),
            [](const StoredVpc& a, const StoredVpc& b) { return a.name < b.name; });
  return r;
}

StoreResult<Snapshot> EtcdStore::load() {
  auto r = read();
  if (!r) {
    return unexpected(r.error());
  }
  remember(r->snapshot);
  return std::move(r->snapshot);
}

StoreResult<Snapshot> EtcdStore::update(const Change& change) {
  for (int attempt = 0; attempt < options_.max_attempts; ++attempt) {
    if (attempt > 0) {
      // Writers that lost the same race start again at different times.
      int bound = 1 << std::min(attempt, 6);
      int pause_ms;
      {
        std::lock_guard lock(mu_);
        pause_ms = std::uniform_int_distribution<int>(0, bound)(rng_);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms));
    }
    auto read_result = read();
    if (!read_result) {
      return unexpected(read_result.error());
    }
    const Read& before = *read_result;
    Snapshot next = before.snapshot;
    auto decided = change(next);
    if (!decided) {
      return unexpected(error(Kind::kAborted, decided.error()));
    }
    if (!*decided) {
      remember(before.snapshot);
      return before.snapshot;
    }
    std::sort(next.vpcs.begin(), next.vpcs.end(),
              [](const StoredVpc& a, const StoredVpc& b) { return a.name < b.name; });
    if (next.vpcs.size() > kMaxStoredVpcs) {
      return unexpected(
          error(Kind::kAborted, "the plan would hold " + std::to_string(next.vpcs.size()) +
                                    " VPCs (at most " + std::to_string(kMaxStoredVpcs) + ")"));
    }
    std::vector<etcd::Write> writes;
    std::map<std::string, const StoredVpc*> old;
    for (const auto& v : before.snapshot.vpcs) {
      old[v.name] = &v;
    }
    for (size_t i = 0; i < next.vpcs.size(); ++i) {
      const StoredVpc& v = next.vpcs[i];
      if (i > 0 && next.vpcs[i - 1].name == v.name) {
        return unexpected(error(Kind::kAborted, "VPC " + text::quote(v.name) + " twice"));
      }
      if (auto problem = storedVpcProblem(v); !problem.empty()) {
        return unexpected(error(Kind::kAborted, problem));
      }
      auto it = old.find(v.name);
      if (it == old.end() || !(*it->second == v)) {
        writes.push_back({etcd::Write::Kind::kPut, vpcKey(v.name), vpcToJson(v), ""});
      }
      if (it != old.end()) {
        old.erase(it);
      }
    }
    for (const auto& [name, vpc] : old) {
      writes.push_back({etcd::Write::Kind::kDelete, vpcKey(name), "", ""});
    }
    if (writes.empty()) {
      remember(before.snapshot);
      return before.snapshot;
    }
    const size_t changed = writes.size();
    writes.push_back({etcd::Write::Kind::kPut, serialKey(), std::to_string(next.vpcs.size()), ""});
    etcd::Compare guard{etcd::Compare::Target::kMod, etcd::Compare::Result::kEqual, serialKey(),
                        before.serial_mod, ""};
    auto txn = client_.txn({guard}, writes);
    if (!txn) {
      StoreError e = txn.error();
      if (e.message.find("too many operations in txn") != std::string::npos) {
        e.message += "; this change writes " + std::to_string(changed) +
                     " VPC keys and the serial key, etcd allows --max-txn-ops (128 by default)";
      }
      return unexpected(e);
    }
    if (txn->succeeded) {
      next.revision = static_cast<uint64_t>(txn->revision);
      remember(next);
      return next;
    }
    ++lost_rounds_;
  }
  return unexpected(error(Kind::kContended, "etcd " + client_.describe() +
                                                ": the plan changed under " +
                                                std::to_string(options_.max_attempts) +
                                                " attempts in a row; too many concurrent writers"));
}

StoreResult<Snapshot> EtcdStore::waitChange(uint64_t after, std::chrono::milliseconds timeout,
                                            const std::atomic<bool>& stop) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + timeout;
  const int64_t after_rev = static_cast<int64_t>(std::min<uint64_t>(after, INT64_MAX - 1));
  int64_t start = after_rev + 1;
  const std::string end = etcd::prefixEnd(options_.prefix);
  auto unchanged = [&]() -> StoreResult<Snapshot> {
    {
      std::lock_guard lock(mu_);
      if (last_ && last_->revision == after) {
        return *last_;
      }
    }
    return load();
  };
  while (true) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) {
      return unchanged();
    }
    bool went_back = false;
    auto watched = client_.watch(
        options_.prefix, end, start,
        [&](const etcd::WatchResponse& r) {
          if (r.created) {
            went_back = r.revision < after_rev;
            return !went_back;
          }
          return r.events.empty();  // an event: stop and read
        },
        left, stop);
    if (!watched) {
      return unexpected(watched.error());
    }
    switch (watched->end) {
      case etcd::WatchEnd::kStopped:
      case etcd::WatchEnd::kTimeout:
        return unchanged();
      case etcd::WatchEnd::kCanceled:
        return unexpected(
            error(Kind::kUnreachable, "etcd " + client_.describe() + " canceled the watch: " +
                                          text::escape(watched->last.cancel_reason, 160)));
      case etcd::WatchEnd::kDone:
      case etcd::WatchEnd::kCompacted:
        break;
    }
    // An event, or the history since `after` is compacted away: read the
    // whole content, which says whether the plan moved past `after`.
    auto r = read();
    if (!r) {
      return unexpected(r.error());
    }
    if (went_back || r->snapshot.revision > after) {
      remember(r->snapshot);
      return std::move(r->snapshot);
    }
    // A delete that did not come through update() (it leaves the serial
    // key alone): wait for the next change past this one.
    start = r->header_revision + 1;
  }
}

}  // namespace mcgw::plan
