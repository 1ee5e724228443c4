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

std::string describe(const BgpStanding& s) {
  return s.mode == BgpStanding::Mode::kPrepend ? "prepend " + std::to_string(s.prepend)
                                               : toString(s.mode);
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
    rendered_ = renderFrrConfig(*config_, standing_);
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

void FrrRouting::setStanding(const BgpStanding& standing) {
  if (standing == standing_) {
    return;
  }
  spdlog::info("BGP standing: {} (was {})", describe(standing), describe(standing_));
  standing_ = standing;
  standing_since_ = std::chrono::system_clock::now();
  standing_asked_ = std::chrono::steady_clock::now();
  standing_state_ = "pending";
  standing_error_.clear();
  standing_ms_ = -1;
  if (!config_->bgp.enabled) {
    return;  // rendered once bgp is on
  }
  rendered_ = renderFrrConfig(*config_, standing_);
  whenRunning([this] { scheduleConfig(); });
}

void FrrRouting::withdrawOnStop() {
  const BgpStanding withdraw{BgpStanding::Mode::kWithdraw};
  if (!config_->bgp.enabled) {
    return;
  }
  if (applied_.empty() && !pushing_) {
    spdlog::info("stopping: FRR never ran this gateway's config; nothing to withdraw");
    return;
  }
  const auto t0 = std::chrono::steady_clock::now();
  // A push under way (vtysh, frr-reload.py) ends first, or it could apply
  // its standing after ours; its result is not waited for past the bound.
  if (worker_ && !worker_->waitIdle(t0 + kStopTimeout)) {
    spdlog::warn("stopping: an FRR update still runs after {} s; withdrawing anyway",
                 kStopTimeout.count());
  }
  const auto paths = FrrPaths::of(*config_);
  if (auto w = writeAtomically(paths.conf(), renderFrrConfig(*config_, withdraw)); !w) {
    spdlog::warn("stopping: FRR: {}", w.error());
  }
  // The withdraw lines in full (from "active"): they do not depend on what
  // FRR was last told, and repeating them changes nothing.
  const auto r = core::runProcess(
      vtyshCommand(paths, standingCommands(*config_, BgpStanding{}, withdraw)), kStopTimeout);
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0)
          .count();
  if (r.ok()) {
    applied_standing_ = withdraw;
    spdlog::info("stopping: BGP announcements withdrawn from FRR ({} ms)", ms);
  } else {
    spdlog::warn("stopping: withdrawing the BGP announcements from FRR failed: vtysh: {}",
                 text::escape(r.describe(), 300));
  }
}

void FrrRouting::scheduleConfig() {
  if (!config_->bgp.enabled) {
    return;
  }
  if (rendered_ == applied_) {
    if (standing_state_ != "applied" && !pushing_) {
      // Changed and changed back before FRR was told: FRR runs it already.
      standing_state_ = "applied";
      standing_via_.clear();
      standing_error_.clear();
    }
    return;
  }
  // FRR runs the config in force, and only the standing differs: its lines
  // alone, without frr-reload.py reading FRR's whole config.
  if (!applied_.empty() && applied_config_ == config_ && config_state_ == "applied" &&
      !(applied_standing_ == standing_)) {
    pushStanding();
  } else {
    pushConfig();
  }
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
  auto refresh = std::make_shared<core::ProcessResult>();
  auto write_error = std::make_shared<std::string>();
  auto guard = std::make_shared<std::string>(renderOwnTrafficGuard(
      *config_, wan_interfaces_ ? wan_interfaces_() : std::vector<std::string>{}));
  auto guard_error = std::make_shared<std::string>();
  worker_->run(
      [text, paths, result, refresh, write_error, guard, guard_error,
       reoriginate = reoriginateCommands(*config_)] {
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
        if (result->ok()) {
          // With `bgp route-map delay-timer 0` a changed filter applies only
          // to routes sent or received afterwards: apply it to all now (the
          // own ranges by originating them again, MCGW-ORIGIN).
          std::vector<std::string> commands = reoriginate;
          commands.push_back(kSoftRefresh);
          *refresh = core::runProcess(vtyshCommand(paths, commands), kVtyshTimeout);
        }
      },
      [this, text, result, refresh, write_error, paths, guard_error, config = config_,
       standing = standing_] {
        whenRunning([=, this] {
          if (*guard_error != guard_error_ && !guard_error->empty()) {
            spdlog::error("own-traffic guard: {}", text::escape(*guard_error, 300));
          }
          guard_error_ = text::escape(*guard_error, 300);
          guard_file_ = paths.guard();
          std::string why = !write_error->empty() ? *write_error
                            : !result->ok()       ? result->describe()
                            : !refresh->ok()
                                ? std::string(kSoftRefresh) + ": " + refresh->describe()
                                : std::string();
          pushed(why.empty(), *text, config, standing, "frr-reload.py", why);
        });
      });
}

void FrrRouting::pushStanding() {
  if (pushing_ || worker_ == nullptr || !config_->bgp.enabled) {
    return;
  }
  pushing_ = true;
  retry_timer_.reset();
  auto text = std::make_shared<std::string>(rendered_);
  auto paths = FrrPaths::of(*config_);
  auto commands = standingCommands(*config_, applied_standing_, standing_);
  auto result = std::make_shared<core::ProcessResult>();
  auto write_error = std::make_shared<std::string>();
  worker_->run(
      [text, paths, commands, result, write_error] {
        // The file first: a later frr-reload.py (or an operator) reads what
        // FRR is about to run.
        if (auto w = writeAtomically(paths.conf(), *text); !w) {
          *write_error = w.error();
          return;
        }
        *result = core::runProcess(vtyshCommand(paths, commands), kVtyshTimeout);
      },
      [this, text, result, write_error, config = config_, standing = standing_] {
        whenRunning([=, this] {
          std::string why = !write_error->empty() ? *write_error
                            : !result->ok()       ? "vtysh: " + result->describe()
                                                  : std::string();
          pushed(why.empty(), *text, config, standing, "vtysh", why);
        });
      });
}

void FrrRouting::pushed(bool ok, const std::string& text, const config::ConfigPtr& config,
                        const BgpStanding& standing, const char* via, const std::string& error) {
  pushing_ = false;
  const std::string conf = FrrPaths::of(*config_).conf();
  config_at_ = std::chrono::system_clock::now();
  const bool standing_now = standing_state_ != "applied" && standing == standing_;
  if (ok) {
    if (config_state_ != "applied" || applied_ != text) {
      spdlog::info("FRR: {} applied with {}", conf, via);
    }
    applied_ = text;
    applied_config_ = config;
    applied_standing_ = standing;
    config_state_ = "applied";
    config_error_.clear();
    if (standing_now && config == config_) {
      standing_state_ = "applied";
      standing_via_ = via;
      standing_error_.clear();
      standing_at_ = config_at_;
      standing_ms_ = std::chrono::duration_cast<std::chrono::milliseconds>(
                         std::chrono::steady_clock::now() - standing_asked_)
                         .count();
      spdlog::info("BGP standing {} applied to FRR with {}, {} ms after it changed",
                   describe(standing_), via, standing_ms_);
    }
    scheduleConfig();  // a reload or a standing changed meanwhile
    return;
  }
  const std::string why = text::escape(error, 300);
  const bool by_vtysh = std::string_view(via) == "vtysh";
  if (config_error_ != why) {
    spdlog::error("FRR: applying {} with {} failed: {} ({})", conf, via, why,
                  by_vtysh ? "now with frr-reload.py"
                           : "retrying every " + std::to_string(kRetryPeriod.count()) + " s");
  }
  config_state_ = "failed";
  config_error_ = why;
  if (standing_now) {
    standing_state_ = "failed";
    standing_via_ = via;
    standing_error_ = why;
    standing_at_ = config_at_;
  }
  if (by_vtysh) {
    // Some of the commands may have been taken: frr-reload.py compares with
    // what FRR runs and finishes the job, now.
    applied_.clear();
    scheduleConfig();
    return;
  }
  retry_timer_ = loop_->after(kRetryPeriod, "frr-config-retry", [this] {
    retry_timer_.reset();
    pushConfig();
  });
  if (paused_) {
    retry_timer_.setEnabled(false);
  }
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
  rendered_ = config_->bgp.enabled ? renderFrrConfig(*config_, standing_) : std::string();
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
    applied_config_.reset();
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
  json standing = {
      {"mode", toString(standing_.mode)},
      {"prepend",
       standing_.mode == BgpStanding::Mode::kPrepend ? json(standing_.prepend) : json(nullptr)},
      {"since",
       standing_since_.time_since_epoch().count() ? json(isoTime(standing_since_)) : json(nullptr)},
      {"apply",
       {{"state", standing_state_},
        {"via", standing_via_.empty() ? json(nullptr) : json(standing_via_)},
        {"at",
         standing_at_.time_since_epoch().count() ? json(isoTime(standing_at_)) : json(nullptr)},
        {"took_ms", standing_ms_ >= 0 ? json(standing_ms_) : json(nullptr)},
        {"error", standing_error_.empty() ? json(nullptr) : json(standing_error_)}}}};
  return {{"enabled", true},
          {"asn", config_->bgp.asn},
          {"router_id", config_->bgp.router_id.toString()},
          {"frr_config",
           {{"file", FrrPaths::of(*config_).conf()},
            {"state", config_state_},
            {"at", isoTime(config_at_)},
            {"error", config_error_.empty() ? json(nullptr) : json(config_error_)}}},
          {"standing", standing},
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

bool FrrRouting::fpmConnected() const {
  return fpm_ && fpm_->stats().connected;
}

std::optional<bool> FrrRouting::sessionEstablished(const std::string& address) const {
  const auto want = config::IpAddress::parse(address);
  for (const auto& n : neighbors_) {
    const auto a = config::IpAddress::parse(n.value("address", std::string()));
    if (want && a && *a == *want) {
      const std::string state = n.value("state", std::string());
      if (state == "unknown" || state == "not configured in FRR") {
        return std::nullopt;
      }
      return state == "Established";
    }
  }
  return std::nullopt;
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
    std::string state = n.value("state", std::string());
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

}  // namespace mcgw::frr
