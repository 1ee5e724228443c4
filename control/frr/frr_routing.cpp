#include "control/frr/frr_routing.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include "config/text.hpp"
#include "control/core/process.hpp"
#include "control/frr/own_traffic_guard.hpp"

namespace mcgw::frr {

using nlohmann::json;

std::vector<std::string> vtyshCommand(const FrrPaths& paths,
                                      const std::vector<std::string>& commands) {
  std::vector<std::string> argv = {kVtysh, "--vty_socket", paths.run_dir, "--config_dir",
                                   paths.config_dir};
  for (const auto& c : commands) {
    argv.push_back("-c");
    argv.push_back(c);
  }
  return argv;
}

std::vector<std::string> frrReloadCommand(const FrrPaths& paths) {
  return {kFrrReload, "--reload",    "--bindir",     "/usr/bin",    "--confdir", paths.config_dir,
          "--rundir", paths.run_dir, "--vty_socket", paths.run_dir, paths.conf()};
}

namespace {

std::string isoTime(std::chrono::system_clock::time_point t) {
  if (t.time_since_epoch().count() == 0) {
    return "";
  }
  std::time_t tt = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// Writes text to path through a temporary file and a rename, so FRR (or an
// operator) never reads half a file.
Result<bool, std::string> writeAtomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".mcgw-tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
  if (fd < 0) {
    return unexpected(tmp + ": " + strerror(errno));
  }
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      std::string why = strerror(errno);
      ::close(fd);
      ::unlink(tmp.c_str());
      return unexpected(tmp + ": " + why);
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    ::unlink(tmp.c_str());
    return unexpected(tmp + ": " + strerror(errno));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    std::string why = strerror(errno);
    ::unlink(tmp.c_str());
    return unexpected(path + ": " + why);
  }
  return true;
}

const char* kindName(BgpSession::Kind k) {
  return k == BgpSession::Kind::kLine ? "line" : "neighbor";
}

template <typename T>
T field(const json& j, const char* key, T fallback) {
  auto it = j.find(key);
  if (it == j.end()) {
    return fallback;
  }
  try {
    return it->get<T>();
  } catch (const json::exception&) {
    return fallback;
  }
}

}  // namespace

FrrRouting::FrrRouting(config::ConfigPtr config, ApplyRoutes apply_routes,
                       std::function<void()> refresh_lines)
    : config_(std::move(config)),
      apply_routes_(std::move(apply_routes)),
      refresh_lines_(std::move(refresh_lines)),
      routes_(config_) {
  if (config_->bgp.enabled) {
    sessions_ = bgpSessions(*config_);
    rendered_ = renderFrrConfig(*config_);
  } else {
    config_state_ = "off";
  }
}

FrrRouting::~FrrRouting() = default;

void FrrRouting::attach(core::EventLoop& loop) {
  loop_ = &loop;
  worker_ = std::make_unique<core::Worker>(loop, "FRR");
  if (!config_->bgp.enabled) {
    return;
  }
  fpm_ = makeFpmServer();
  if (auto r = fpm_->listen(config_->bgp.fpm_address, config_->bgp.fpm_port); !r) {
    spdlog::error("{}", r.error());
  }
  fpm_->attach(loop);
  if (needsBfd()) {
    startBfd();
  }
  poll_timer_ = loop.every(
      kPollPeriod, "frr-poll", [this] { poll(); }, core::Priority::kBackground);
  scheduleConfig();
}

std::shared_ptr<FpmServer> FrrRouting::makeFpmServer() {
  return std::make_shared<FpmServer>(FpmServer::Handlers{
      .connected = [this] { onFpmConnected(); },
      .messages = [this](const std::vector<FpmMessage>& m) { receive(m); },
      .disconnected = [this](const std::string& why) { onFpmDisconnected(why); },
  });
}

void FrrRouting::armSweep() {
  routes_.markStale();
  const auto grace = std::chrono::seconds(config_->bgp.fpm_stale_time_s);
  sweep_at_ = std::chrono::steady_clock::now() + grace;
  sweep_timer_ = loop_->after(grace, "fpm-sweep", [this] {
    auto out = routes_.sweep();
    if (!out.empty()) {
      spdlog::info("FPM: {} stale route(s) not sent again within {} s: withdrawn", out.size(),
                   config_->bgp.fpm_stale_time_s);
    }
    applyUpdates(std::move(out));
    sweep_timer_.reset();
  });
  sweep_timer_.setEnabled(!paused_);
}

void FrrRouting::startBfd() {
  bfd_ = std::make_unique<BfdControlClient>(
      FrrPaths::of(*config_).bfdSocket(), [this](const BfdPeerState& s) { onBfd(s); },
      [this] {
        spdlog::warn(
            "bfdd control socket closed: line state no longer follows BFD until it is back");
        if (refresh_lines_) {
          refresh_lines_();
        }
      });
  bfd_->attach(*loop_);
  if (paused_) {
    bfd_->setPaused(true);
  }
}

bool FrrRouting::needsBfd() const {
  return std::any_of(sessions_.begin(), sessions_.end(), [](const BgpSession& s) { return s.bfd; });
}

void FrrRouting::whenRunning(std::function<void()> f) {
  if (paused_) {
    deferred_.push_back(std::move(f));  // a reload runs off the loop: after it
  } else {
    f();
  }
}

void FrrRouting::setPaused(bool paused) {
  paused_ = paused;
  if (!paused) {
    // The reload is committed: its config is FRR's now, then what waited.
    if (pending_) {
      adopt();
    }
    auto deferred = std::move(deferred_);
    deferred_.clear();
    for (auto& f : deferred) {
      f();
    }
  }
  if (fpm_) {
    fpm_->setPaused(paused);
  }
  if (bfd_) {
    bfd_->setPaused(paused);
  }
  for (core::Source* s : {&poll_timer_, &retry_timer_, &sweep_timer_}) {
    if (*s) {
      s->setEnabled(!paused);
    }
  }
}

void FrrRouting::applyUpdates(std::vector<engine::RouteUpdate> updates) {
  if (updates.empty()) {
    return;
  }
  if (auto r = apply_routes_(updates); r) {
    return;
  }
  // The batch is all or nothing: apply one by one to refuse only what fails.
  for (const auto& u : updates) {
    auto r = apply_routes_(std::span<const engine::RouteUpdate>(&u, 1));
    if (r || u.withdraw) {
      if (!r) {
        spdlog::warn("FRR route {} in {}: withdraw failed: {}", u.prefix.toString(), u.tenant,
                     r.error());
      }
      continue;
    }
    spdlog::warn("FRR route {} in {} refused by the fast path: {}", u.prefix.toString(), u.tenant,
                 r.error());
    routes_.refuse(u, r.error());
    engine::RouteUpdate w = u;
    w.withdraw = true;
    w.vias.clear();
    (void)apply_routes_(std::span<const engine::RouteUpdate>(&w, 1));
  }
}

void FrrRouting::receive(const std::vector<FpmMessage>& messages) {
  if (ports_by_ifindex_) {
    routes_.setPorts(ports_by_ifindex_());
  }
  applyUpdates(routes_.receive(messages));
}

void FrrRouting::onFpmConnected() {
  // A new zebra session: its next-hop objects are its own (ids start again),
  // and it sends its whole FIB now; what it does not send again within the
  // grace period goes.
  routes_.newSession();
  armSweep();
  fpm_down_since_.clear();
  // A zebra that (re)started may run without our config: make sure.
  applied_.clear();
  scheduleConfig();
}

void FrrRouting::onFpmDisconnected(const std::string& why) {
  spdlog::warn("FPM: zebra gone ({}); forwarding goes on with its last routes, stale for {} s", why,
               config_->bgp.fpm_stale_time_s);
  fpm_down_since_ = isoTime(std::chrono::system_clock::now());
  armSweep();
}

void FrrRouting::onBfd(const BfdPeerState& s) {
  for (const auto& session : sessions_) {
    if (session.kind != BgpSession::Kind::kLine || session.address != s.peer ||
        (s.local && session.local && *s.local != *session.local)) {
      continue;
    }
    spdlog::info("BFD: {} line {} ({}) {}", session.peer, session.line, s.peer.toString(),
                 toString(s.state));
    const std::string key = session.peer + "/" + session.line;
    switch (s.state) {
      case BfdPeerState::State::kUp:
        bfd_down_.erase(key);
        bfd_up_.insert(key);
        break;
      case BfdPeerState::State::kUnknown:
        // bgpd deleted the session (its BGP session went down, or it
        // registered again): a line that was down stays down until a new
        // session of it comes up; a new session starts from scratch.
        bfd_up_.erase(key);
        break;
      default:
        // Only a session that was up and went down says the path fails: a
        // new session starts down, and a remote that is administratively
        // down (RFC 5882 3.2: its bfdd deleted the session) says nothing
        // about the path.
        if (bfd_up_.count(key) && s.remote_diagnostics != kBfdDiagAdminDown) {
          bfd_down_[key] = true;
        }
        bfd_up_.erase(key);
        break;
    }
  }
  if (refresh_lines_) {
    refresh_lines_();
  }
}

const BfdPeerState* FrrRouting::bfdOf(const std::string& peer, const std::string& line) const {
  if (!bfd_ || !bfd_->connected()) {
    return nullptr;
  }
  for (const auto& session : sessions_) {
    if (session.kind != BgpSession::Kind::kLine || session.peer != peer || session.line != line ||
        !session.bfd) {
      continue;
    }
    for (const auto& st : bfd_->states()) {
      if (st.peer == session.address &&
          (!st.local || !session.local || *st.local == *session.local)) {
        return &st;
      }
    }
  }
  return nullptr;
}

// With bfdd reachable, a line is down from the moment its BFD session goes
// from up to down (not because the remote is administratively down) until a
// session of it comes up again, even if bgpd deletes the session meanwhile
// (FRR makes a line's multihop session only once BGP is up and deletes it
// when BGP goes down).  A new session that has not been up yet takes no line
// down.  Without bfdd: no opinion (status says the lines do not follow BFD).
bool FrrRouting::lineUp(const std::string& peer, const std::string& line) const {
  return lineDownReason(peer, line).empty();
}

std::string FrrRouting::lineDownReason(const std::string& peer, const std::string& line) const {
  if (!bfd_ || !bfd_->connected() || !bfd_down_.count(peer + "/" + line)) {
    return "";
  }
  const BfdPeerState* s = bfdOf(peer, line);
  return s ? std::string("BFD ") + toString(s->state) : "BFD down (session gone since)";
}

void FrrRouting::scheduleConfig() {
  if (!config_->bgp.enabled || rendered_ == applied_) {
    return;
  }
  pushConfig();
}

void FrrRouting::pushConfig() {
  if (pushing_ || worker_ == nullptr || !config_->bgp.enabled) {
    return;
  }
  pushing_ = true;
  retry_timer_.reset();
  auto text = std::make_shared<std::string>(rendered_);
  auto paths = FrrPaths::of(*config_);
  auto result = std::make_shared<core::ProcessResult>();
  auto write_error = std::make_shared<std::string>();
  auto guard = std::make_shared<std::string>(renderOwnTrafficGuard(
      *config_, wan_interfaces_ ? wan_interfaces_() : std::vector<std::string>{}));
  auto guard_error = std::make_shared<std::string>();
  worker_->run(
      [text, paths, result, write_error, guard, guard_error] {
        if (auto w = writeAtomically(paths.guard(), *guard); !w) {
          *guard_error = w.error();
        } else if (auto r = core::runProcess({kNft, "-f", paths.guard()}, kVtyshTimeout); !r.ok()) {
          *guard_error = "nft: " + r.describe();
        }
        if (auto w = writeAtomically(paths.conf(), *text); !w) {
          *write_error = w.error();
          return;
        }
        *result = core::runProcess(frrReloadCommand(paths), kReloadTimeout);
      },
      [this, text, result, write_error, paths, guard_error] {
        whenRunning([=, this] {
          pushing_ = false;
          if (*guard_error != guard_error_ && !guard_error->empty()) {
            spdlog::error("own-traffic guard: {}", text::escape(*guard_error, 300));
          }
          guard_error_ = text::escape(*guard_error, 300);
          guard_file_ = paths.guard();
          config_at_ = std::chrono::system_clock::now();
          if (write_error->empty() && result->ok()) {
            if (config_state_ != "applied" || applied_ != *text) {
              spdlog::info("FRR: {} applied with frr-reload.py", paths.conf());
            }
            applied_ = *text;
            config_state_ = "applied";
            config_error_.clear();
          } else {
            std::string why = !write_error->empty() ? *write_error : result->describe();
            why = text::escape(why, 300);
            if (config_error_ != why) {
              spdlog::error("FRR: applying {} failed: {} (retrying every {} s)", paths.conf(), why,
                            kRetryPeriod.count());
            }
            config_state_ = "failed";
            config_error_ = why;
            retry_timer_ = loop_->after(kRetryPeriod, "frr-config-retry", [this] {
              retry_timer_.reset();
              pushConfig();
            });
            if (paused_) {
              retry_timer_.setEnabled(false);
            }
            return;
          }
          scheduleConfig();  // a reload rendered something newer meanwhile
        });
      });
}

namespace {

// Every JSON value vtysh printed, in order (one per -c command); a value
// that does not parse ends the list.
std::vector<json> jsonSequence(const std::string& text) {
  std::vector<json> out;
  std::istringstream in(text);
  while (true) {
    in >> std::ws;
    if (in.peek() == std::char_traits<char>::eof()) {
      break;
    }
    json j;
    try {
      in >> j;
    } catch (const json::exception&) {
      break;
    }
    out.push_back(std::move(j));
  }
  return out;
}

// How many routes a `... neighbors X filtered-routes json` answer lists.
int64_t filteredCount(const json& j) {
  if (!j.is_object()) {
    return -1;
  }
  if (j.contains("totalPrefixCounter") && j["totalPrefixCounter"].is_number_integer()) {
    return j["totalPrefixCounter"].get<int64_t>();
  }
  for (const auto& [key, value] : j.items()) {
    if (value.is_object() && key.find("Routes") != std::string::npos) {
      return static_cast<int64_t>(value.size());
    }
  }
  return j.empty() ? 0 : -1;
}

}  // namespace

void FrrRouting::poll() {
  if (polling_ || paused_ || worker_ == nullptr) {
    return;
  }
  if (fpm_ && !fpm_->stats().listening) {
    // The FPM address could not be bound at start (or after a reload): again.
    if (auto r = fpm_->listen(config_->bgp.fpm_address, config_->bgp.fpm_port); r) {
      spdlog::info("FPM: listening on {}", fpm_->stats().address);
    }
  }
  polling_ = true;
  // One vtysh for the summary, one for what each session's import filter
  // refused (kept by soft-reconfiguration inbound): ipv4, and ipv6 on an
  // IPv6 session.
  std::vector<std::string> filtered;
  for (const auto& s : sessions_) {
    const bool v6 = s.address.family == config::Family::V6;
    for (const char* family : {"ipv4", "ipv6"}) {
      if (std::string(family) == "ipv6" && !v6) {
        continue;
      }
      filtered.push_back(std::string("show bgp ") + family + " unicast neighbors " +
                         s.address.toString() + " filtered-routes json");
    }
  }
  auto summary_out = std::make_shared<core::ProcessResult>();
  auto filtered_out = std::make_shared<core::ProcessResult>();
  const FrrPaths paths = FrrPaths::of(*config_);
  auto sessions = std::make_shared<std::vector<BgpSession>>(sessions_);
  worker_->run(
      [summary_out, filtered_out, paths, filtered] {
        *summary_out = core::runProcess(vtyshCommand(paths, {"show bgp summary json"}),
                                        kVtyshTimeout, 16u << 20);
        if (summary_out->ok() && !filtered.empty()) {
          *filtered_out = core::runProcess(vtyshCommand(paths, filtered), kVtyshTimeout, 64u << 20);
        }
      },
      [this, summary_out, filtered_out, sessions] {
        whenRunning([=, this] {
          polling_ = false;
          polled_at_ = std::chrono::system_clock::now();
          json summary;
          if (!summary_out->ok()) {
            poll_error_ = text::escape(summary_out->describe(), 300);
          } else {
            summary = json::parse(summary_out->out, nullptr, false);
            poll_error_ = summary.is_discarded() ? "vtysh answered no JSON" : "";
          }
          const std::vector<json> refused = jsonSequence(filtered_out->out);
          size_t next_refused = 0;
          json out = json::array();
          // The sessions the commands were made for (a reload may have come since).
          for (const auto& s : *sessions) {
            json n = {{"kind", kindName(s.kind)},
                      {"address", s.address.toString()},
                      {"asn", s.asn},
                      {"site", s.site},
                      {"port", s.port},
                      {"bfd", s.bfd}};
            if (s.kind == BgpSession::Kind::kLine) {
              n["peer"] = s.peer;
              n["line"] = s.line;
            }
            const bool v6 = s.address.family == config::Family::V6;
            // Counted over the families the session carries.
            int64_t accepted = 0, sent = 0, filtered_n = 0;
            bool known = false, filtered_known = true;
            for (const char* family : {"ipv4Unicast", "ipv6Unicast"}) {
              if (std::string(family) == "ipv6Unicast" && !v6) {
                continue;
              }
              const json* p = nullptr;
              if (poll_error_.empty()) {
                auto af = summary.find(family);
                if (af != summary.end() && af->is_object() && af->contains("peers") &&
                    (*af)["peers"].is_object() && (*af)["peers"].contains(s.address.toString())) {
                  p = &(*af)["peers"][s.address.toString()];
                }
              }
              if (p != nullptr && p->is_object()) {
                if (!known) {
                  n["state"] = text::escape(field<std::string>(*p, "state", "?"), 64);
                  n["uptime_s"] = field<int64_t>(*p, "peerUptimeMsec", 0) / 1000;
                }
                known = true;
                accepted += field<int64_t>(*p, "pfxRcd", 0);
                sent += field<int64_t>(*p, "pfxSnt", 0);
              }
              const int64_t f =
                  next_refused < refused.size() ? filteredCount(refused[next_refused]) : -1;
              ++next_refused;
              if (f < 0) {
                filtered_known = false;
              } else {
                filtered_n += f;
              }
            }
            if (known) {
              n["prefixes_accepted"] = accepted;
              n["prefixes_sent"] = sent;
              // What the import filter (the plan's ranges of the session's
              // site) refused.
              n["prefixes_refused"] = filtered_known ? json(filtered_n) : json(nullptr);
              n["prefixes_received"] = filtered_known ? json(accepted + filtered_n) : json(nullptr);
            } else {
              n["state"] = poll_error_.empty() ? "not configured in FRR" : "unknown";
            }
            out.push_back(std::move(n));
          }
          neighbors_ = std::move(out);
          // A session FRR does not know: FRR restarted without our config
          // (daemons started by hand), or someone changed it.  Apply it again
          // (frr-reload.py changes nothing when nothing differs).
          bool missing = false;
          for (const auto& n : neighbors_) {
            missing |= n["state"] == "not configured in FRR";
          }
          if (missing && config_state_ == "applied" && !pushing_) {
            spdlog::warn("FRR lacks sessions of its rendered config: applying it again");
            applied_.clear();
            scheduleConfig();
          }
        });
      });
}

Result<bool, std::string> FrrRouting::prepare(const daemon::ReloadPlan& plan) {
  next_ = plan.next;
  const auto& now = config_->bgp;
  const auto& next = next_->bgp;
  if (next.enabled && loop_ != nullptr &&
      (!now.enabled || now.fpm_address != next.fpm_address || now.fpm_port != next.fpm_port)) {
    next_fpm_ = makeFpmServer();
    if (auto r = next_fpm_->listen(next.fpm_address, next.fpm_port); !r) {
      next_fpm_.reset();
      return unexpected(r.error());
    }
  }
  return true;
}

void FrrRouting::apply() {
  if (!next_) {
    return;
  }
  // apply() runs off the loop, before the tables of the new config are
  // published: only keep what was prepared.  It is adopted on the loop once
  // the reload is committed (setPaused(false)), or on the next iteration
  // when the reload ran on the loop itself.
  pending_ = Pending{std::move(next_), std::move(next_fpm_)};
  if (loop_ == nullptr) {
    adopt();
  } else if (!paused_) {
    loop_->post([this] {
      if (pending_) {
        adopt();
      }
    });
  }
}

void FrrRouting::adopt() {
  Pending p = std::move(*pending_);
  pending_.reset();
  config::ConfigPtr prev = config_;
  config_ = std::move(p.config);
  sessions_ = config_->bgp.enabled ? bgpSessions(*config_) : std::vector<BgpSession>{};
  rendered_ = config_->bgp.enabled ? renderFrrConfig(*config_) : std::string();
  // FRR's routes follow the new plan (the new tenants' tables are live).
  retranslate();
  // Lines that are gone take their BFD memory with them.
  for (auto it = bfd_down_.begin(); it != bfd_down_.end();) {
    bool kept = std::any_of(sessions_.begin(), sessions_.end(), [&](const BgpSession& s) {
      return s.kind == BgpSession::Kind::kLine && s.peer + "/" + s.line == it->first;
    });
    it = kept ? std::next(it) : bfd_down_.erase(it);
  }
  if (loop_ == nullptr) {
    return;
  }
  if (!config_->bgp.enabled) {
    // mcgwd stops managing FRR: FRR keeps its last config (and with it its
    // sessions, announcements and kernel routes) until FRR is stopped.
    config_state_ = "off";
    applied_.clear();
    fpm_.reset();
    bfd_.reset();
    poll_timer_.reset();
    retry_timer_.reset();
    sweep_timer_.reset();
    neighbors_ = json::array();
    return;
  }
  if (p.fpm) {
    // The prepared server takes over; the old one closes (zebra connects
    // to the new address once FRR's config says so).
    fpm_ = std::move(p.fpm);
    fpm_->attach(*loop_);
    fpm_->setPaused(paused_);
  }
  if (!needsBfd()) {
    bfd_.reset();
  } else if (!bfd_ || !prev->bgp.enabled || prev->bgp.frr_run_dir != config_->bgp.frr_run_dir) {
    startBfd();
  }
  if (!poll_timer_) {
    poll_timer_ = loop_->every(
        kPollPeriod, "frr-poll", [this] { poll(); }, core::Priority::kBackground);
    poll_timer_.setEnabled(!paused_);
  }
  if (prev->bgp.frr_config_dir != config_->bgp.frr_config_dir ||
      prev->bgp.frr_run_dir != config_->bgp.frr_run_dir) {
    applied_.clear();
  }
  scheduleConfig();
  if (refresh_lines_) {
    refresh_lines_();
  }
}

void FrrRouting::retranslate() {
  // BGP turned off: FRR's routes leave the fast path.
  if (!config_->bgp.enabled) {
    routes_.markStale();
    applyUpdates(routes_.sweep());
  }
  if (ports_by_ifindex_) {
    routes_.setPorts(ports_by_ifindex_());
  }
  applyUpdates(routes_.reconfigure(config_));
}

void FrrRouting::abort() {
  next_fpm_.reset();
  next_.reset();
}

json FrrRouting::status() const {
  if (!config_->bgp.enabled) {
    return {{"enabled", false}};
  }
  json fpm = nullptr;
  if (fpm_) {
    const auto& s = fpm_->stats();
    fpm = {{"listening", s.listening ? json(s.address) : json(nullptr)},
           {"connected", s.connected},
           {"peer", s.connected ? json(s.peer) : json(nullptr)},
           {"connected_at", s.connected ? json(isoTime(s.connected_at)) : json(nullptr)},
           {"down_since", fpm_down_since_.empty() ? json(nullptr) : json(fpm_down_since_)},
           {"connections", s.connections},
           {"frames", s.frames},
           {"messages", s.messages},
           {"frames_refused", s.frames_refused},
           {"messages_refused", s.messages_refused},
           {"connections_refused", s.connections_refused},
           {"last_error", s.last_error.empty() ? json(nullptr) : json(s.last_error)}};
  }
  const auto c = routes_.counts();
  json sweep = nullptr;
  if (sweep_timer_) {
    sweep = std::chrono::duration_cast<std::chrono::seconds>(sweep_at_ -
                                                             std::chrono::steady_clock::now())
                .count();
  }
  json refused = json::array();
  for (const auto& [prefix, why] : routes_.refusedList()) {
    refused.push_back({{"prefix", prefix}, {"reason", why}});
  }
  json bfd = {{"socket", FrrPaths::of(*config_).bfdSocket()},
              {"connected", bfd_ && bfd_->connected()},
              {"error", bfd_ && !bfd_->connected() ? json(text::escape(bfd_->lastError(), 300))
                                                   : json(nullptr)}};
  json sessions = json::array();
  if (bfd_) {
    for (const auto& st : bfd_->states()) {
      json s = {{"peer", st.peer.toString()},
                {"local", st.local ? json(st.local->toString()) : json(nullptr)},
                {"multihop", st.multihop},
                {"state", toString(st.state)}};
      for (const auto& session : sessions_) {
        if (session.address == st.peer && session.kind == BgpSession::Kind::kLine) {
          s["peer_site"] = session.peer;
          s["line"] = session.line;
        }
      }
      sessions.push_back(std::move(s));
    }
  }
  bfd["sessions"] = std::move(sessions);
  return {{"enabled", true},
          {"asn", config_->bgp.asn},
          {"router_id", config_->bgp.router_id.toString()},
          {"frr_config",
           {{"file", FrrPaths::of(*config_).conf()},
            {"state", config_state_},
            {"at", isoTime(config_at_)},
            {"error", config_error_.empty() ? json(nullptr) : json(config_error_)}}},
          {"fpm", fpm},
          {"routes",
           {{"received", c.routes},
            {"ignored_kernel_routes", c.ignored},
            {"installed", c.installed},
            {"refused", c.refused},
            {"stale", c.stale},
            {"next_hop_groups", c.next_hop_groups},
            {"sweep_in_s", sweep}}},
          {"refused", refused},
          {"own_traffic_guard",
           {{"file", guard_file_.empty() ? json(nullptr) : json(guard_file_)},
            {"error", guard_error_.empty() ? json(nullptr) : json(guard_error_)}}},
          {"neighbors", neighbors_},
          {"neighbors_polled_at", isoTime(polled_at_)},
          {"neighbors_error", poll_error_.empty() ? json(nullptr) : json(poll_error_)},
          {"bfd", bfd}};
}

std::vector<std::string> FrrRouting::problems() const {
  std::vector<std::string> out;
  if (!config_->bgp.enabled) {
    return out;
  }
  if (config_state_ == "failed") {
    out.push_back("FRR has not taken its config " + FrrPaths::of(*config_).conf() + ": " +
                  config_error_);
  }
  if (!guard_error_.empty()) {
    out.push_back("the own-traffic guard (nft table inet mcgw_guard) is not in place: " +
                  guard_error_);
  }
  if (!fpm_ || !fpm_->stats().listening) {
    out.push_back("the FPM server is not listening (see the log)");
  } else if (!fpm_->stats().connected) {
    out.push_back("zebra is not connected over FPM" +
                  (fpm_down_since_.empty() ? std::string() : " since " + fpm_down_since_) +
                  (routes_.counts().stale ? "; forwarding on stale routes" : ""));
  }
  if (bfd_ && !bfd_->connected()) {
    out.push_back("bfdd's control socket " + FrrPaths::of(*config_).bfdSocket() +
                  " is not connected: lines do not follow BFD");
  }
  for (const auto& n : neighbors_) {
    std::string state = field<std::string>(n, "state", "");
    if (state != "Established") {
      std::string who = n.contains("peer") ? "peer " + n["peer"].get<std::string>() + " line " +
                                                 n["line"].get<std::string>()
                                           : "neighbour";
      out.push_back("BGP session to " + who + " (" + n["address"].get<std::string>() + ") is " +
                    state);
    }
  }
  if (size_t r = routes_.counts().refused) {
    out.push_back(std::to_string(r) +
                  " route(s) from FRR refused (mcgwctl status --json: bgp.refused)");
  }
  return out;
}

namespace {

// FRR's selected, installed routes of one `show ip[v6] route json` answer,
// as zebra would send them over FPM.  Connected, kernel and local routes
// are not sent over FPM (system routes): left out.
void frrFib(const json& rib, std::map<config::IpPrefix, FpmRoute>& out) {
  if (!rib.is_object()) {
    return;
  }
  for (const auto& [key, entries] : rib.items()) {
    auto prefix = config::IpPrefix::parse(key);
    if (!prefix || !entries.is_array()) {
      continue;
    }
    for (const auto& e : entries) {
      const std::string proto = field<std::string>(e, "protocol", "");
      if (!field<bool>(e, "selected", false) || proto == "connected" || proto == "kernel" ||
          proto == "local") {
        continue;
      }
      FpmRoute r;
      r.prefix = prefix->network();
      r.table = field<uint32_t>(e, "table", kMainTable);
      // What zebra installs (and sends over FPM): the next hops marked fib,
      // a recursive one's resolved next hops rather than the BGP next hop.
      for (const auto& nh : e.value("nexthops", json::array())) {
        if (!field<bool>(nh, "fib", false)) {
          continue;
        }
        if (field<bool>(nh, "unreachable", false) ||
            field<std::string>(nh, "blackhole", "") != "") {
          r.type = 6;
        }
        FpmNextHop h;
        if (auto ip = config::IpAddress::parse(field<std::string>(nh, "ip", ""))) {
          h.gateway = *ip;
        }
        h.ifindex = field<uint32_t>(nh, "interfaceIndex", 0);
        r.next_hops.push_back(h);
      }
      out[r.prefix] = std::move(r);
    }
  }
}

}  // namespace

void FrrRouting::audit(std::function<void(json)> reply) {
  if (!config_->bgp.enabled || worker_ == nullptr) {
    reply(json{{"ok", false}, {"error", "audit: BGP is not configured (no bgp section)"}});
    return;
  }
  const FrrPaths paths = FrrPaths::of(*config_);
  // vtysh and the parsing of its (large) answers off the loop; only the
  // comparison with the fast path's routes on it.
  auto frr = std::make_shared<std::map<config::IpPrefix, FpmRoute>>();
  auto error = std::make_shared<std::string>();
  worker_->run(
      [frr, error, paths] {
        for (const char* command : {"show ip route json", "show ipv6 route json"}) {
          auto r = core::runProcess(vtyshCommand(paths, {command}), kReloadTimeout, 512u << 20);
          if (!r.ok()) {
            *error = "audit: vtysh: " + text::escape(r.describe(), 300);
            return;
          }
          json rib = json::parse(r.out, nullptr, false);
          if (rib.is_discarded()) {
            *error = "audit: vtysh answered no JSON";
            return;
          }
          frrFib(rib, *frr);
        }
      },
      [this, frr, error, reply] {
        whenRunning([=, this] {
          if (!error->empty()) {
            reply(json{{"ok", false}, {"error", *error}});
          } else {
            reply(json{{"ok", true}, {"result", compare(*frr)}});
          }
        });
      });
}

json FrrRouting::compare(const std::map<config::IpPrefix, FpmRoute>& frr) const {
  json diffs = json::array();
  auto add = [&](const config::IpPrefix& p, std::string what) {
    diffs.push_back({{"prefix", p.toString()}, {"difference", std::move(what)}});
  };
  const Tenancy tenancy(*config_);
  const auto& mine = routes_.entries();
  size_t fast_path = 0;
  for (const auto& [prefix, e] : mine) {
    fast_path += e.installed ? 1 : 0;
  }
  for (const auto& [prefix, route] : frr) {
    auto want = translate(*config_, tenancy, route, routes_.ports());
    auto it = mine.find(prefix);
    if (it == mine.end()) {
      add(prefix, "in FRR's FIB, never received over FPM");
      continue;
    }
    const auto& e = it->second;
    if (!want) {
      add(prefix, "in FRR's FIB, refused by mcgw: " + want.error());
      continue;
    }
    if (!e.installed) {
      add(prefix, "in FRR's FIB via " + describe(want->vias) + ", not in the fast path" +
                      (e.refused.empty() ? "" : ": " + e.refused));
      continue;
    }
    if (!(*e.installed == *want)) {
      add(prefix, "FRR: " + want->tenant + " via " + describe(want->vias) + "; fast path: " +
                      e.installed->tenant + " via " + describe(e.installed->vias));
    }
    if (e.stale) {
      add(prefix, "stale in the fast path (not sent again since zebra reconnected)");
    }
  }
  for (const auto& [prefix, e] : mine) {
    if (e.installed && !frr.count(prefix)) {
      add(prefix, "in the fast path via " + describe(e.installed->vias) + ", not in FRR's FIB" +
                      (e.stale ? " (stale)" : ""));
    }
  }
  // What FRR's route source holds must be what the fast path's RIB has from
  // it: the same prefixes, tenant by tenant.
  if (list_frr_routes_) {
    std::set<std::pair<std::string, config::IpPrefix>> rib;
    for (const auto& r : list_frr_routes_()) {
      if (auto p = config::IpPrefix::parse(r.prefix)) {
        rib.insert({r.tenant, *p});
      }
    }
    for (const auto& [prefix, e] : mine) {
      if (e.installed && !rib.erase({e.installed->tenant, prefix})) {
        add(prefix, "received from FRR for tenant " + e.installed->tenant +
                        " but missing from the fast path's RIB");
      }
    }
    for (const auto& [tenant, prefix] : rib) {
      add(prefix, "in the fast path's RIB as an FRR route of tenant " + tenant +
                      " that FRR's route source does not hold");
    }
  }
  const size_t shown = std::min<size_t>(diffs.size(), 10000);
  json listed = json::array();
  for (size_t i = 0; i < shown; ++i) {
    listed.push_back(diffs[i]);
  }
  return {{"schema", "mcgw.audit/1"},
          {"frr_routes", frr.size()},
          {"fast_path_routes", fast_path},
          {"difference_count", diffs.size()},
          {"differences", listed}};
}

}  // namespace mcgw::frr
