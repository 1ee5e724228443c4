// mcgwd: the gateway daemon.  One thread (the EAL main lcore) runs the control
// loop: signals, the operator API, the systemd watchdog.
#include <signal.h>
#include <sys/signalfd.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include <spdlog/sinks/base_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <mutex>
#include <optional>

#include "config/loader.hpp"
#include "config/text.hpp"
#include "control/api/server.hpp"
#include "control/daemon/gateway.hpp"
#include "control/daemon/last_good.hpp"
#include "control/daemon/preflight.hpp"
#include "control/daemon/requests.hpp"

using mcgw::daemon::Gateway;
using nlohmann::json;

namespace {

// Exit codes: 0 clean stop, 1 runtime failure, 64 (EX_USAGE) bad command line,
// 78 (EX_CONFIG) bad config and no last good copy to fall back on (or
// --strict), which the unit does not restart on (RestartPreventExitStatus=78).
constexpr int kExitFailure = 1;
constexpr int kExitUsage = 64;  // EX_USAGE: bad command line
// The control loop's period: neighbour misses reach the kernel this fast.
constexpr int kTickMs = 20;
constexpr int kExitConfig = 78;

// Every log line is one line of text, whatever string reached it (a config
// path from the command line, a message quoting a file): a message holding a
// control character, a line break or a byte that is not UTF-8 is written
// escaped (text::escape, uncut), so nothing can forge or garble log lines.
class EscapingSink : public spdlog::sinks::base_sink<std::mutex> {
 public:
  explicit EscapingSink(spdlog::sink_ptr inner) : inner_(std::move(inner)) {}

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    std::string_view payload(msg.payload.data(), msg.payload.size());
    if (!mcgw::text::findProblem(payload)) {
      inner_->log(msg);
      return;
    }
    const std::string escaped = mcgw::text::escape(payload, std::numeric_limits<size_t>::max());
    spdlog::details::log_msg copy = msg;
    copy.payload = escaped;
    inner_->log(copy);
  }
  void flush_() override { inner_->flush(); }

 private:
  spdlog::sink_ptr inner_;
};

void setupLogging(const std::string& level) {
  auto out = std::make_shared<spdlog::sinks::stderr_color_sink_mt>(spdlog::color_mode::automatic);
  // journald adds its own timestamp; a terminal gets one.
  out->set_pattern(std::getenv("JOURNAL_STREAM") ? "<%l> %v" : "%Y-%m-%d %H:%M:%S.%e [%l] %v");
  auto logger = std::make_shared<spdlog::logger>("mcgwd", std::make_shared<EscapingSink>(out));
  spdlog::set_default_logger(logger);
  spdlog::set_level(spdlog::level::from_str(level));
  spdlog::flush_on(spdlog::level::info);
}

void notify(const std::string& state) {
  sd_notify(0, state.c_str());
}

// The config file is invalid: the last good copy of it, and why it is used,
// or nullopt (exit 78) when there is none, it is invalid too, or it or
// --strict says not to use it.
std::optional<std::pair<mcgw::daemon::LoadedConfig, mcgw::daemon::Fallback>> startWithLastGood(
    const std::string& config_path, const std::string& state_dir, bool strict,
    const mcgw::config::ConfigErrors& file_errors) {
  if (strict) {
    spdlog::critical("--strict: not looking for a last good copy");
    return std::nullopt;
  }
  mcgw::daemon::LastGoodStore store(state_dir, config_path);
  auto saved_at = store.usable();
  if (!saved_at) {
    spdlog::critical("no last good copy of {} to start with: {}", config_path, saved_at.error());
    return std::nullopt;
  }
  auto copy = mcgw::daemon::loadConfig(store.path());
  if (!copy) {
    spdlog::critical("the last good copy {} is invalid too ({} error(s)):", store.path(),
                     copy.error().size());
    for (const auto& e : copy.error()) {
      spdlog::critical("  {}", e.toString());
    }
    return std::nullopt;
  }
  if (!copy->config->startup.use_last_good) {
    spdlog::critical("the last good copy {} says startup.use-last-good: false; not using it",
                     store.path());
    return std::nullopt;
  }
  mcgw::daemon::Fallback why{store.path(), *saved_at, {}};
  for (const auto& e : file_errors) {
    why.file_errors.push_back(e.toString());
  }
  spdlog::critical(
      "STARTING WITH THE LAST GOOD CONFIG {} (saved {}): {} is invalid; fix it and reload "
      "(mcgwctl reload); --strict or startup.use-last-good: false exits instead",
      store.path(), mcgw::daemon::isoTime(*saved_at), config_path);
  return std::make_pair(std::move(*copy), std::move(why));
}

// The config mcgwd starts with: the file, or (when the file is invalid) the
// last good copy and why; nullopt (exit 78) when neither may be used.
// --preflight decides exactly as the start does, so that the unit's
// ExecStartPre lets through every start that would succeed.
std::optional<std::pair<mcgw::daemon::LoadedConfig, std::optional<mcgw::daemon::Fallback>>>
chooseConfig(const std::string& config_path, const std::string& state_dir, bool strict) {
  auto loaded = mcgw::daemon::loadConfig(config_path);
  if (loaded) {
    return std::make_pair(std::move(*loaded), std::optional<mcgw::daemon::Fallback>());
  }
  spdlog::critical("config {} is invalid ({} error(s)):", config_path, loaded.error().size());
  for (const auto& e : loaded.error()) {
    spdlog::critical("  {}", e.toString());
  }
  auto last_good = startWithLastGood(config_path, state_dir, strict, loaded.error());
  if (!last_good) {
    return std::nullopt;
  }
  return std::make_pair(std::move(last_good->first),
                        std::optional<mcgw::daemon::Fallback>(std::move(last_good->second)));
}

int runPreflight(const std::string& path, const std::string& state_dir, bool strict) {
  auto chosen = chooseConfig(path, state_dir, strict);
  if (!chosen) {
    std::fprintf(stderr, "preflight: config %s is invalid\n", path.c_str());
    return kExitConfig;
  }
  if (chosen->second) {
    std::fprintf(stderr, "preflight: config %s is invalid; mcgwd will start with %s\n",
                 path.c_str(), chosen->second->copy.c_str());
  }
  bool ok = true;
  for (const auto& c : mcgw::daemon::preflight(*chosen->first.config)) {
    std::fprintf(stderr, "preflight: %-24s %s: %s\n", c.what.c_str(), c.ok ? "ok" : "MISSING",
                 c.detail.c_str());
    ok = ok && c.ok;
  }
  return ok ? 0 : kExitFailure;
}

// A reload, as systemd wants it announced (Type=notify).
mcgw::daemon::ReloadOutcome reload(Gateway& gw) {
  // The watchdog is kicked first: the reload has a whole period (a file at
  // the loader's limits takes seconds, docs/performance.md).
  notify("RELOADING=1\nWATCHDOG=1\nSTATUS=reloading " + gw.configPath());
  auto outcome = gw.reload();
  notify("READY=1\nSTATUS=" + gw.summary());
  return outcome;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"mcgwd: the mcgw multi-cloud interconnect gateway daemon"};
  std::string config_path = "/etc/mcgw/mcgw.yaml";
  std::string log_level;
  std::string state_dir = mcgw::daemon::kDefaultStateDir;
  bool preflight = false;
  bool strict = false;
  app.add_option("-c,--config", config_path, "Configuration file")->capture_default_str();
  app.add_option("-l,--log-level", log_level, "Log level (overrides logging.level)")
      ->check(CLI::IsMember({"trace", "debug", "info", "warning", "error", "critical", "off"}));
  app.add_option("--state-dir", state_dir,
                 "Where the last good copy of the config is kept (mode 0700)")
      ->capture_default_str();
  app.add_flag("--strict", strict,
               "Exit 78 when the config file is invalid, even if a last good copy exists");
  app.add_flag("--preflight", preflight,
               "Check prerequisites (hugepages, drivers, interfaces, FRR) and exit");
  app.set_version_flag("--version", std::string("mcgwd ") + MCGW_VERSION);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : kExitUsage;  // --help and --version exit 0
  }

  if (preflight) {
    setupLogging(log_level.empty() ? "info" : log_level);
    return runPreflight(config_path, state_dir, strict);
  }
  // Status and logs name the file the daemon will re-read on reload.
  config_path = std::filesystem::absolute(config_path).lexically_normal().string();

  setupLogging(log_level.empty() ? "info" : log_level);
  // Signals are taken through a signalfd; block them before the EAL starts
  // its threads so that they inherit the mask.
  sigset_t mask;
  sigemptyset(&mask);
  for (int s : {SIGTERM, SIGINT, SIGHUP}) {
    sigaddset(&mask, s);
  }
  sigprocmask(SIG_BLOCK, &mask, nullptr);
  signal(SIGPIPE, SIG_IGN);
  int sfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
  if (sfd < 0) {
    spdlog::critical("signalfd: {}", std::strerror(errno));
    return kExitFailure;
  }

  spdlog::info("mcgwd {} starting with {}", MCGW_VERSION, config_path);
  notify("STATUS=loading " + config_path);
  auto chosen = chooseConfig(config_path, state_dir, strict);
  if (!chosen) {
    notify("STATUS=invalid config " + config_path);
    return kExitConfig;
  }
  mcgw::daemon::LoadedConfig loaded = std::move(chosen->first);
  std::optional<mcgw::daemon::Fallback> fallback = std::move(chosen->second);
  // The config's own level applies unless --log-level was given.
  if (log_level.empty()) {
    spdlog::set_level(spdlog::level::from_str(loaded.config->logging.level));
  }

  notify("STATUS=starting DPDK and ports");
  auto started = Gateway::start(config_path, std::move(loaded), argv[0],
                                {log_level, state_dir, std::move(fallback)});
  if (!started) {
    for (const auto& e : started.error()) {
      spdlog::critical("{}", e);
    }
    notify("STATUS=failed to start: " + started.error().front());
    return kExitFailure;
  }
  Gateway& gw = **started;

  mcgw::api::Server server([&gw](const std::string& cmd, const json& args) {
    return mcgw::daemon::handleRequest(gw, cmd, args, [&gw] { return reload(gw); });
  });
  if (auto r = server.listen(gw.config()->api.socket, gw.config()->api.group); !r) {
    spdlog::critical("{}", r.error());
    notify("STATUS=" + r.error());
    return kExitFailure;
  }
  spdlog::info("API on {}", server.path());
  // Started on the file itself: its text is now the last good copy.
  if (!gw.fallback()) {
    gw.saveLastGood();
  }

  uint64_t watchdog_usec = 0;
  bool watchdog = sd_watchdog_enabled(0, &watchdog_usec) > 0 && watchdog_usec > 0;
  auto watchdog_every = std::chrono::microseconds(watchdog_usec / 2);
  auto next_kick = std::chrono::steady_clock::now();
  if (watchdog) {
    spdlog::info("systemd watchdog every {} ms", watchdog_usec / 2000);
  }

  spdlog::info("ready: {}", gw.summary());
  notify("READY=1\nSTATUS=" + gw.summary());
  std::string last_summary = gw.summary();

  bool running = true;
  int exit_code = 0;
  auto next_tick = std::chrono::steady_clock::now();
  while (running) {
    std::vector<pollfd> fds{{sfd, POLLIN, 0}, {gw.neighborFd(), POLLIN, 0}};
    // Path MTU discovery's sockets follow fds[0..1]; the API's come last.
    const std::vector<int> pmtu_fds = gw.pathMtuFds();
    for (int fd : pmtu_fds) {
      fds.push_back({fd, POLLIN, 0});
    }
    server.pollFds(fds);
    int timeout_ms = kTickMs;
    if (watchdog) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                      next_kick - std::chrono::steady_clock::now())
                      .count();
      timeout_ms = static_cast<int>(std::clamp<int64_t>(left, 0, kTickMs));
    }
    if (::poll(fds.data(), fds.size(), timeout_ms) < 0 && errno != EINTR) {
      spdlog::critical("poll: {}", std::strerror(errno));
      exit_code = kExitFailure;
      break;
    }
    if (fds[0].revents & POLLIN) {
      signalfd_siginfo si{};
      while (::read(sfd, &si, sizeof si) == sizeof si) {
        if (si.ssi_signo == SIGHUP) {
          spdlog::info("SIGHUP: reloading {}", config_path);
          try {  // a front-end like the API: nothing it triggers ends the process
            reload(gw);
          } catch (const std::exception& e) {
            spdlog::error("SIGHUP: reload failed: {}", mcgw::text::escape(e.what(), 512));
            notify("READY=1\nSTATUS=" + gw.summary());
          }
        } else {
          spdlog::info("{}: stopping", strsignal(static_cast<int>(si.ssi_signo)));
          running = false;
        }
      }
    }
    if (fds[1].revents & POLLIN) {
      gw.onNeighborEvents();
    }
    for (size_t i = 0; i < pmtu_fds.size(); ++i) {
      if (fds[2 + i].revents & POLLIN) {
        gw.onPathMtuReadable(pmtu_fds[i]);
      }
    }
    server.handle(fds);
    if (std::chrono::steady_clock::now() >= next_tick) {
      gw.tick();
      next_tick = std::chrono::steady_clock::now() + std::chrono::milliseconds(kTickMs);
    }
    if (watchdog && std::chrono::steady_clock::now() >= next_kick) {
      notify("WATCHDOG=1");
      next_kick = std::chrono::steady_clock::now() + watchdog_every;
    }
    if (std::string s = gw.summary(); s != last_summary) {
      spdlog::info("state: {}", s);
      notify("STATUS=" + s);
      last_summary = s;
    }
  }

  notify("STOPPING=1\nSTATUS=stopping");
  started->reset();
  spdlog::info("stopped");
  return exit_code;
}
