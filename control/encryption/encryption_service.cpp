#include "control/encryption/encryption_service.hpp"

#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>

#include "config/text.hpp"
#include "control/core/fd.hpp"
#include "control/encryption/static_keys.hpp"

namespace mcgw::encryption {

namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

// Static outbound SAs: the sequence numbers a start may use are reserved in
// the state directory before use, so that a restart never sends a sequence
// number (the GCM IV) twice under the same key (docs/encryption.md, "Static
// keys").  Blocks of 2^24, renewed while half a block remains (every
// kLifetimeCheck: 8 million packets of headroom per 250 ms); the fast path
// never goes past the reservation (EspSa::setSeqLimit).  A restart resumes
// above the last reservation, at most one block above what was sent: the
// peer infers the high bits of a sequence number (RFC 4303 A2.2) only within
// 2^32 of what it last saw, so 256 restarts in a row with nothing reaching
// the peer are the limit.
constexpr uint64_t kSeqReserve = uint64_t{1} << 24;

// The reservation file of an outbound key: named after the key and salt
// alone (a SHA-256 prefix), so that the key goes on from the same
// reservation whatever line, peer or SPI it is given (a key is used by one
// SA only: staticKeyErrors).
std::string seqPath(const std::string& dir, const engine::SaMaterial& m) {
  static constexpr char kTag[] = "mcgw-esp-seq";
  std::array<uint8_t, sizeof kTag - 1 + 36> in{};
  std::memcpy(in.data(), kTag, sizeof kTag - 1);
  std::copy(m.key.begin(), m.key.end(), in.begin() + sizeof kTag - 1);
  std::copy(m.salt.begin(), m.salt.end(), in.begin() + sizeof kTag - 1 + 32);
  std::array<uint8_t, 32> d{};
  unsigned len = 0;
  EVP_Digest(in.data(), in.size(), d.data(), &len, EVP_sha256(), nullptr);
  OPENSSL_cleanse(in.data(), in.size());
  char hex[17];
  for (size_t i = 0; i < 8; ++i) {
    std::snprintf(hex + 2 * i, 3, "%02x", d[i]);
  }
  return dir + "/esp-seq-" + hex;
}

using KeyFiles = std::map<std::string, std::map<std::string, StaticLineKeys>>;

// What is wrong with the static keys the config uses (the files read into
// `files`; a file missing there was reported by its reader): a line without
// SAs in its file, an inbound SPI used twice on the gateway, a key used by
// two SAs (their sequence numbers, the GCM nonces, would repeat).
std::vector<std::string> staticKeyErrors(const config::Config& c, const KeyFiles& files) {
  std::vector<std::string> errors;
  std::map<uint32_t, std::string> spis;
  std::map<std::array<uint8_t, 32>, std::string> keys;  // by SHA-256 of the key
  for (const auto& q : c.peers) {
    if (!q.encryption || q.encryption->static_keys.empty()) {
      continue;
    }
    const std::string& path = q.encryption->static_keys;
    auto f = files.find(path);
    if (f == files.end()) {
      continue;
    }
    for (const auto& l : q.lines) {
      if (!q.encrypts(l)) {
        continue;
      }
      auto k = f->second.find(l.name);
      if (k == f->second.end()) {
        errors.push_back("peer " + q.name + ": static key file " + text::quote(path) +
                         " has no SAs for line " + l.name);
        continue;
      }
      const std::string who = "peer " + q.name + " line " + l.name;
      if (auto [it, fresh] = spis.emplace(k->second.in.spi, who); !fresh) {
        char spi[16];
        std::snprintf(spi, sizeof spi, "0x%08x", k->second.in.spi);
        errors.push_back(who + ": inbound SPI " + spi + " is also " + it->second +
                         "'s (inbound SPIs must differ across the gateway's static key files)");
      }
      for (const auto& [dir, m] :
           {std::pair{"out", &k->second.out}, std::pair{"in", &k->second.in}}) {
        std::array<uint8_t, 32> d{};
        unsigned len = 0;
        EVP_Digest(m->key.data(), m->key.size(), d.data(), &len, EVP_sha256(), nullptr);
        if (auto [it, fresh] = keys.emplace(d, who + " (" + dir + ")"); !fresh) {
          errors.push_back(who + ": the key of its " + dir + " SA is also " + it->second +
                           "'s (every SA needs its own key: GCM nonces would repeat)");
        }
      }
    }
  }
  return errors;
}

// Reads the reservation (0 when there is no file; an error when there is one
// that cannot be read: starting at 0 again could repeat an IV), writes the
// next one durably (file and directory synced).  Returns where use may start.
Result<uint64_t, std::string> reserveSeq(const std::string& path, uint64_t at_least) {
  uint64_t from = at_least;
  if (core::Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK)); fd) {
    char buf[32] = {};
    const ssize_t n = ::read(fd.get(), buf, sizeof buf - 1);
    uint64_t v = 0;
    const auto r = n > 0 ? std::from_chars(buf, buf + n, v) : std::from_chars_result{buf, {}};
    if (n <= 0 || r.ec != std::errc() || r.ptr == buf || (r.ptr < buf + n && *r.ptr != '\n')) {
      return unexpected("the sequence number reservation " + text::quote(path) +
                        " cannot be read (remove it only together with the key)");
    }
    from = std::max(from, v);
  } else if (errno != ENOENT) {
    return unexpected("cannot read " + text::quote(path) + ": " + std::strerror(errno));
  }
  if (from > UINT64_MAX - kSeqReserve) {
    return unexpected("the sequence numbers of this key are used up: replace the key");
  }
  const uint64_t upto = from + kSeqReserve;
  // The state directory (LastGoodStore makes it too, later in the start).
  const std::string dir = path.substr(0, path.rfind('/'));
  if (!dir.empty() && ::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return unexpected("cannot create " + text::quote(dir) + ": " + std::strerror(errno));
  }
  const std::string tmp = path + ".tmp";
  core::Fd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
  if (!fd) {
    return unexpected("cannot write " + text::quote(tmp) + ": " + std::strerror(errno));
  }
  const std::string text = std::to_string(upto) + "\n";
  if (::write(fd.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size()) ||
      ::fsync(fd.get()) != 0 || ::rename(tmp.c_str(), path.c_str()) != 0) {
    return unexpected("cannot write " + text::quote(path) + ": " + std::strerror(errno));
  }
  // The rename itself survives a power cut only once the directory is synced.
  core::Fd d(::open(dir.empty() ? "/" : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!d || ::fsync(d.get()) != 0) {
    return unexpected("cannot sync " + text::quote(dir) + ": " + std::strerror(errno));
  }
  return from;
}

std::array<uint8_t, 32> digestOf(const engine::SaMaterial& m) {
  std::array<uint8_t, 32> d{};
  std::array<uint8_t, 40> in{};
  std::copy(m.key.begin(), m.key.end(), in.begin());
  std::copy(m.salt.begin(), m.salt.end(), in.begin() + 32);
  std::memcpy(in.data() + 36, &m.spi, 4);
  unsigned len = 0;
  EVP_Digest(in.data(), in.size(), d.data(), &len, EVP_sha256(), nullptr);
  OPENSSL_cleanse(in.data(), in.size());
  return d;
}

int64_t ageS(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::seconds>(Clock::now() - t).count();
}

json saView(const engine::EspSa& a, const config::EncryptionConfig& enc, bool static_keys) {
  json j = espSaView(a);
  if (a.window() == nullptr) {
    if (!static_keys) {
      const double age = static_cast<double>(ageS(a.created()));
      j["next_rekey_s"] = std::max(0.0, kRekeyAt * enc.lifetime_s - age);  // or earlier, by bytes
      j["lifetime_s"] = enc.lifetime_s;
      j["lifetime_bytes"] = enc.lifetime_bytes;
    }
  }
  return j;
}

// Tests only (docs/encryption.md, "Checking the wire"): every SA, as
// Wireshark's ESP SA table takes it, appended to the file the environment
// names.  Off unless MCGW_TEST_EXPORT_ESP_KEYS is set.
void exportForTests(const config::LineConfig& lc, bool inbound, const engine::SaMaterial& m) {
  const char* path = std::getenv("MCGW_TEST_EXPORT_ESP_KEYS");
  if (!path || !*path) {
    return;
  }
  static bool warned = false;
  if (!warned) {
    warned = true;
    spdlog::warn(
        "MCGW_TEST_EXPORT_ESP_KEYS is set: every SA's key is written to {} (tests only; "
        "never in production)",
        text::quote(path));
  }
  core::Fd fd(::open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600));
  if (!fd) {
    return;
  }
  std::string key;
  char b[3];
  for (uint8_t x : m.key) {
    std::snprintf(b, sizeof b, "%02x", x);
    key += b;
  }
  for (uint8_t x : m.salt) {
    std::snprintf(b, sizeof b, "%02x", x);
    key += b;
  }
  const std::string src = (inbound ? lc.remote_vtep : lc.local_vtep).toString();
  const std::string dst = (inbound ? lc.local_vtep : lc.remote_vtep).toString();
  char spi[16];
  std::snprintf(spi, sizeof spi, "0x%08x", m.spi);
  const std::string row =
      std::string("\"") + (lc.local_vtep.family == config::Family::V6 ? "IPv6" : "IPv4") + "\",\"" +
      src + "\",\"" + dst + "\",\"" + spi + "\",\"AES-GCM with 16 octet ICV [RFC4106]\",\"0x" +
      key + "\",\"NULL\",\"\"\n";
  (void)!::write(fd.get(), row.data(), row.size());
  OPENSSL_cleanse(key.data(), key.size());
  OPENSSL_cleanse(const_cast<char*>(row.data()), row.size());
}

const config::LineConfig* lineConfig(const config::Config& c, const std::string& id) {
  for (const auto& p : c.peers) {
    for (const auto& l : p.lines) {
      if (p.name + "/" + l.name == id) {
        return &l;
      }
    }
  }
  return nullptr;
}

}  // namespace

EncryptionService::EncryptionService(config::ConfigPtr config, unsigned workers,
                                     std::string state_dir, std::function<bool()> republish)
    : config_(std::move(config)),
      workers_(workers),
      state_dir_(std::move(state_dir)),
      republish_(std::move(republish)) {}

Result<bool, std::string> EncryptionService::start() {
  try {
    auto lines = linesFor(*config_);
    if (!lines) {
      return unexpected("encryption: " + lines.error());
    }
    std::lock_guard lock(mu_);
    lines_ = std::move(*lines);
  } catch (const std::exception& e) {
    return unexpected(std::string("encryption: ") + e.what());
  }
  return true;
}

EncryptionService::~EncryptionService() = default;

std::shared_ptr<engine::EspSa> EncryptionService::makeSa(bool inbound, const std::string& line,
                                                         const engine::SaMaterial& m,
                                                         uint32_t window) const {
  return std::make_shared<engine::EspSa>(
      inbound ? engine::EspSa::Direction::kInbound : engine::EspSa::Direction::kOutbound, line, m,
      workers_, window);
}

Result<EncryptionService::Lines, std::string> EncryptionService::linesFor(
    const config::Config& c) const {
  Lines out;
  // The SAs in force: the lifetime timer renews reservations during a
  // reload too (under mu_).
  Lines current;
  {
    std::lock_guard lock(mu_);
    current = lines_;
  }
  KeyFiles files;
  for (const auto& p : c.peers) {
    if (p.encryption && !p.encryption->static_keys.empty() &&
        !files.count(p.encryption->static_keys)) {
      auto keys = readStaticKeys(p.encryption->static_keys);
      if (!keys) {
        return unexpected("peer " + p.name + ": " + keys.error());
      }
      files[p.encryption->static_keys] = std::move(*keys);
    }
  }
  if (auto errors = staticKeyErrors(c, files); !errors.empty()) {
    std::string all;
    for (const auto& e : errors) {
      all += (all.empty() ? "" : "; ") + e;
    }
    return unexpected(all);
  }
  for (const auto& p : c.peers) {
    if (!p.encryption) {
      continue;
    }
    for (const auto& l : p.lines) {
      if (!p.encrypts(l)) {
        continue;
      }
      const std::string id = p.name + "/" + l.name;
      Line line;
      line.peer = p.name;
      line.name = l.name;
      line.enc = *p.encryption;
      line.static_keys = !p.encryption->static_keys.empty();
      const Line* before = nullptr;
      if (auto it = current.find(id); it != current.end()) {
        before = &it->second;
      }
      if (!line.static_keys) {
        if (before && !before->static_keys) {  // the key agreement keeps its SAs
          line.out = before->out;
          line.in = before->in;
          line.problem = before->problem;
          line.rekeys = before->rekeys;
          line.expired = before->expired;
        } else {
          line.problem = "no key agreed yet";
        }
        out[id] = std::move(line);
        continue;
      }
      const std::string& path = p.encryption->static_keys;
      auto k = files[path].find(l.name);
      if (k == files[path].end()) {
        return unexpected("peer " + p.name + ": static key file " + text::quote(path) +
                          " has no SAs for line " + l.name);
      }
      const StaticLineKeys& keys = k->second;
      // The same keys as before: the same SAs (sequence numbers and replay
      // windows go on; a new replay-window size waits for new keys or a
      // restart: a fresh window would take captured packets once more).
      if (before && before->static_keys && before->out && before->out->spi() == keys.out.spi &&
          !before->in.empty() && before->in.front()->spi() == keys.in.spi) {
        if (digestOf(keys.out) == before->digest_out && digestOf(keys.in) == before->digest_in) {
          if (before->enc.replay_window != line.enc.replay_window) {
            spdlog::warn(
                "encryption: line {}: the new replay-window ({}) applies with new keys "
                "or at the next start; the static SA keeps its window",
                id, line.enc.replay_window);
          }
          line.out = before->out;
          line.in = before->in;
          line.digest_out = before->digest_out;
          line.digest_in = before->digest_in;
          line.seq_reserved = before->seq_reserved;
          line.seq_path = before->seq_path;
          out[id] = std::move(line);
          continue;
        }
      }
      line.seq_path = seqPath(state_dir_, keys.out);
      for (const auto& [other, ol] : current) {
        // The SA in force may renew the same reservation meanwhile: two
        // counters on one key.
        if (ol.static_keys && ol.out && ol.seq_path == line.seq_path) {
          return unexpected("peer " + p.name + " line " + l.name +
                            ": its outbound key is in use by the SA of line " + other +
                            " until this reload; giving a static key another SPI or line needs "
                            "a restart");
        }
      }
      line.digest_out = digestOf(keys.out);
      line.digest_in = digestOf(keys.in);
      line.out = makeSa(false, id, keys.out, 0);
      line.in = {makeSa(true, id, keys.in, line.enc.replay_window)};
      auto from = reserveSeq(line.seq_path, 0);
      if (!from) {
        return unexpected("peer " + p.name + " line " + l.name +
                          ": cannot reserve sequence numbers for its static SA: " + from.error());
      }
      line.out->startSeqAfter(*from);
      line.seq_reserved = *from + kSeqReserve;
      line.out->setSeqLimit(line.seq_reserved);
      out[id] = std::move(line);
    }
  }
  return out;
}

std::vector<KeyLine> EncryptionService::keyLines(const config::Config& c) const {
  std::vector<KeyLine> out;
  for (const auto& p : c.peers) {
    if (!p.encryption || !p.encryption->static_keys.empty()) {
      continue;
    }
    for (const auto& l : p.lines) {
      if (p.encrypts(l)) {
        out.push_back({p.name + "/" + l.name, p.name, l.local_vtep, l.remote_vtep});
      }
    }
  }
  return out;
}

KeyAgreementSettings EncryptionService::settings(const config::Config& c) const {
  KeyAgreementSettings s;
  s.ca_file = c.encryption.ca;
  s.certificate_file = c.encryption.certificate;
  s.private_key_file = c.encryption.private_key;
  s.port = c.encryption.port;
  return s;
}

void EncryptionService::startAgreement(const config::Config& c) {
  const std::vector<KeyLine> lines = keyLines(c);
  if (lines.empty() || !loop_) {
    return;
  }
  KeySink sink;
  sink.install_inbound = [this](const std::string& line, const SaMaterial& m) {
    return onInstall(line, m, true);
  };
  sink.activate_outbound = [this](const std::string& line, const SaMaterial& m) {
    return onInstall(line, m, false);
  };
  sink.retire_inbound = [this](const std::string& line, uint32_t spi) { onRetire(line, spi); };
  sink.lost = [this](const std::string& line, const std::string& why) { onLost(line, why); };
  auto ka = KeyAgreement::create(*loop_, settings(c), std::move(sink));
  if (!ka) {
    agreement_error_ = ka.error();
    spdlog::error("encryption: the key agreement cannot start: {}", ka.error());
    return;
  }
  agreement_ = std::move(*ka);
  agreement_error_.clear();
  if (auto r = agreement_->setLines(lines); !r) {
    agreement_error_ = r.error();
    spdlog::error("encryption: {}", r.error());
  }
}

void EncryptionService::attach(core::EventLoop& loop) {
  loop_ = &loop;
  startAgreement(*config_);
  timer_ = loop.every(
      kLifetimeCheck, "encryption lifetimes", [this] { checkLifetimes(); },
      core::Priority::kNormal);
}

void EncryptionService::setPaused(bool paused) {
  paused_ = paused;
  // timer_ keeps running: static SAs' reservations are renewed during a
  // reload too (checkLifetimes does nothing else while paused).
  if (agreement_) {
    agreement_->setPaused(paused);
  }
  if (!paused && agreement_sync_) {
    // A reload was applied: the key agreement takes its files and lines
    // here, on the loop thread that runs it.
    agreement_sync_ = false;
    syncAgreement();
  }
  if (!paused && dirty_) {
    changed();
  }
}

void EncryptionService::syncAgreement() {
  if (!agreement_) {
    startAgreement(*config_);
    return;
  }
  if (!keyLines(*config_).empty()) {
    if (auto r = agreement_->reload(settings(*config_)); !r) {
      // prepare() checked the files; they changed since.
      agreement_error_ = r.error();
      spdlog::error("encryption: the key agreement keeps its former files: {}", r.error());
    }
  }
  if (auto r = agreement_->setLines(keyLines(*config_)); !r) {
    agreement_error_ = r.error();
    spdlog::error("encryption: {}", r.error());
  }
}

std::vector<std::string> EncryptionService::validate(const config::Config& next) const {
  std::vector<std::string> errors;
  KeyFiles files;
  std::set<std::string> read;
  for (const auto& p : next.peers) {
    if (!p.encryption || p.encryption->static_keys.empty() ||
        !read.insert(p.encryption->static_keys).second) {
      continue;
    }
    auto keys = readStaticKeys(p.encryption->static_keys);
    if (!keys) {
      errors.push_back("peer " + p.name + ": " + keys.error());
      continue;
    }
    files[p.encryption->static_keys] = std::move(*keys);
  }
  for (auto& e : staticKeyErrors(next, files)) {
    errors.push_back(std::move(e));
  }
  return errors;
}

Result<bool, std::string> EncryptionService::prepare(const daemon::ReloadPlan& plan) {
  Result<Lines, std::string> lines = Lines{};
  try {
    lines = linesFor(*plan.next);
  } catch (const std::exception& e) {  // OpenSSL could not set up a cipher
    return unexpected(std::string("encryption: ") + e.what());
  }
  if (!lines) {
    return unexpected(lines.error());
  }
  // The files only: the key agreement itself is paused with the gateway and
  // takes the new settings when resumed (syncAgreement).
  if (!keyLines(*plan.next).empty()) {
    if (auto r = KeyAgreement::check(settings(*plan.next)); !r) {
      return unexpected("key agreement: " + r.error());
    }
  }
  std::lock_guard lock(mu_);
  pending_ = std::move(*lines);
  pending_config_ = plan.next;
  return true;
}

void EncryptionService::apply() {
  {
    std::lock_guard lock(mu_);
    if (pending_) {
      lines_ = std::move(*pending_);
    }
    pending_.reset();
  }
  if (pending_config_) {
    config_ = std::move(pending_config_);
  }
  if (paused_) {
    agreement_sync_ = true;  // setPaused(false), on the loop thread
  } else {
    syncAgreement();
  }
}

void EncryptionService::abort() {
  std::lock_guard lock(mu_);
  pending_.reset();
  pending_config_.reset();
}

std::map<std::string, engine::LineSas> EncryptionService::sas() const {
  std::lock_guard lock(mu_);
  const Lines& lines = pending_ ? *pending_ : lines_;
  std::map<std::string, engine::LineSas> out;
  for (const auto& [id, l] : lines) {
    out[id] = {l.out, l.in};
  }
  return out;
}

void EncryptionService::changed() {
  if (paused_) {
    dirty_ = true;
    return;
  }
  dirty_ = !republish_();
}

bool EncryptionService::onInstall(const std::string& id, const SaMaterial& m, bool inbound) {
  {
    std::lock_guard lock(mu_);
    auto it = lines_.find(id);
    if (it == lines_.end()) {
      spdlog::warn("encryption: keys for line {} that is not encrypted; ignored", text::quote(id));
      return false;
    }
    Line& l = it->second;
    if (inbound) {
      // Inbound SPIs are the gateway's, across lines (a static file's too):
      // refused, the key agreement picks another in its next exchange.
      for (const auto& [other, ol] : lines_) {
        for (const auto& sa : ol.in) {
          if (sa->spi() == m.spi) {
            spdlog::warn(
                "encryption: line {}: inbound SPI 0x{:08x} is in use by line {}; "
                "refused",
                id, m.spi, other);
            return false;
          }
        }
      }
    }
    engine::SaMaterial sm{m.generation, m.spi, m.key, m.salt};
    try {
      if (inbound) {
        l.in.push_back(makeSa(true, id, sm, l.enc.replay_window));
      } else {
        auto sa = makeSa(false, id, sm, 0);
        if (l.out) {
          ++l.rekeys;
        }
        l.out = std::move(sa);
        l.problem.clear();
      }
    } catch (const std::exception& e) {
      OPENSSL_cleanse(sm.key.data(), sm.key.size());
      spdlog::error("encryption: line {}: cannot set up an SA: {}", text::quote(id), e.what());
      return false;
    }
    if (const config::LineConfig* lc = lineConfig(*config_, id)) {
      exportForTests(*lc, inbound, sm);
    }
    OPENSSL_cleanse(sm.key.data(), sm.key.size());
    spdlog::info("encryption: line {}: {} SA 0x{:08x} (generation {}) installed", id,
                 inbound ? "inbound" : "outbound", m.spi, m.generation);
  }
  changed();
  return true;
}

void EncryptionService::onRetire(const std::string& id, uint32_t spi) {
  {
    std::lock_guard lock(mu_);
    auto it = lines_.find(id);
    if (it == lines_.end()) {
      return;
    }
    auto& in = it->second.in;
    std::erase_if(in, [spi](const auto& sa) { return sa->spi() == spi; });
    spdlog::info("encryption: line {}: inbound SA 0x{:08x} retired", id, spi);
  }
  changed();
}

void EncryptionService::onLost(const std::string& id, const std::string& why) {
  spdlog::warn("encryption: line {}: key agreement connection ended: {}", text::quote(id),
               text::escape(why));
}

void EncryptionService::checkLifetimes() {
  bool any = false;
  {
    std::lock_guard lock(mu_);
    const auto now = Clock::now();
    for (auto& [id, l] : lines_) {
      if (!l.out || (paused_ && !l.static_keys)) {
        continue;
      }
      if (l.static_keys) {
        // Keep the reservation ahead of the sequence numbers in use.
        if (l.out->lastSeq() + kSeqReserve / 2 > l.seq_reserved) {
          // From the reservation's end, or past it when the fast path ran
          // into the limit meanwhile (those numbers were never sent).
          auto r = reserveSeq(l.seq_path, std::max(l.seq_reserved, l.out->lastSeq()));
          if (r) {
            l.seq_reserved = *r + kSeqReserve;
            l.out->setSeqLimit(l.seq_reserved);
          } else if (l.out->lastSeq() >= l.seq_reserved && !paused_) {
            spdlog::error("encryption: line {}: {}; the static SA is no longer used", id,
                          r.error());
            l.problem = "cannot reserve sequence numbers: " + r.error();
            l.out.reset();
            any = true;
          }
        }
        continue;
      }
      const double age = std::chrono::duration<double>(now - l.out->created()).count();
      const double bytes = static_cast<double>(l.out->bytes());
      if (age >= l.enc.lifetime_s || bytes >= static_cast<double>(l.enc.lifetime_bytes)) {
        spdlog::error(
            "encryption: line {}: outbound SA 0x{:08x} reached its lifetime ({:.0f} s, {:.0f} "
            "bytes) without a new one; the line carries nothing until keys are agreed",
            id, l.out->spi(), age, bytes);
        l.problem = "the outbound SA reached its lifetime and no new one was agreed";
        l.out.reset();
        ++l.expired;
        any = true;
        continue;
      }
      if ((age >= kRekeyAt * l.enc.lifetime_s ||
           bytes >= kRekeyAt * static_cast<double>(l.enc.lifetime_bytes)) &&
          now - l.rekey_asked > std::chrono::seconds(5) && agreement_) {
        l.rekey_asked = now;
        if (!agreement_->rekey(id)) {
          spdlog::warn("encryption: line {}: rekey due, but no key exchange is established", id);
        }
      }
    }
  }
  if (any || dirty_) {
    changed();
  }
}

Result<std::string, std::string> EncryptionService::rekey(const std::string& peer,
                                                          const std::string& line) {
  const std::string id = peer + "/" + line;
  {
    std::lock_guard lock(mu_);
    auto it = lines_.find(id);
    if (it == lines_.end()) {
      return unexpected("line " + text::quote(id) + " is not an encrypted line");
    }
    if (it->second.static_keys) {
      return unexpected("line " + text::quote(id) +
                        " uses static keys: replace the key file and reload instead");
    }
  }
  if (!agreement_) {
    return unexpected("the key agreement does not run" +
                      (agreement_error_.empty() ? std::string() : ": " + agreement_error_));
  }
  if (!agreement_->rekey(id)) {
    auto st = agreement_->status(id);
    return unexpected("line " + text::quote(id) + " has no established key exchange" +
                      (st ? std::string(" (") + toString(st->state) +
                                (st->last_error.empty() ? "" : ": " + st->last_error) + ")"
                          : std::string()));
  }
  return "rekey of " + id + " started";
}

json EncryptionService::status() const {
  json lines = json::array();
  std::lock_guard lock(mu_);
  for (const auto& [id, l] : lines_) {
    json j = {{"peer", l.peer},
              {"line", l.name},
              {"mode", "esp-aes-256-gcm"},
              {"keys", l.static_keys ? "static" : "tls"},
              {"udp_encapsulation", l.enc.udp_encapsulation},
              {"outbound", l.out ? saView(*l.out, l.enc, l.static_keys) : json(nullptr)},
              {"rekeys", l.rekeys},
              {"expired", l.expired},
              {"problem", l.out ? "" : (l.problem.empty() ? "no outbound SA" : l.problem)}};
    json in = json::array();
    for (const auto& sa : l.in) {
      in.push_back(saView(*sa, l.enc, l.static_keys));
    }
    j["inbound"] = in;
    if (!l.static_keys) {
      if (agreement_) {
        if (auto st = agreement_->status(id)) {
          j["agreement"] = {
              {"state", toString(st->state)}, {"role", st->client ? "client" : "server"},
              {"last_error", st->last_error}, {"peer_subject", st->peer_subject},
              {"generation", st->generation}, {"exchanges", st->established},
              {"failures", st->failures}};
        }
      } else {
        j["agreement"] = {{"state", "not running"}, {"last_error", agreement_error_}};
      }
    }
    lines.push_back(j);
  }
  return {{"engine", crypto::engineName()}, {"lines", lines}};
}

std::vector<std::string> EncryptionService::problems() const {
  std::vector<std::string> out;
  std::lock_guard lock(mu_);
  for (const auto& [id, l] : lines_) {
    if (l.out) {
      continue;
    }
    std::string why = l.problem.empty() ? "no outbound SA" : l.problem;
    if (!l.static_keys && agreement_) {
      if (auto st = agreement_->status(id); st && !st->last_error.empty()) {
        why += ": " + st->last_error;
      }
    } else if (!l.static_keys && !agreement_error_.empty()) {
      why += ": " + agreement_error_;
    }
    out.push_back("line " + id + " is encrypted but has no keys (" + why + ")");
  }
  return out;
}

json espSaView(const engine::EspSa& a) {
  json j = {{"spi", a.spi()},
            {"generation", a.generation()},
            {"age_s",
             std::chrono::duration_cast<std::chrono::seconds>(Clock::now() - a.created()).count()},
            {"packets", a.packets()},
            {"bytes", a.bytes()}};
  if (const crypto::ReplayWindow* w = a.window()) {
    j["replay_window"] = w->size();
    j["highest_seq"] = w->highest();
  } else {
    j["last_seq"] = a.lastSeq();
  }
  return j;
}

}  // namespace mcgw::encryption
