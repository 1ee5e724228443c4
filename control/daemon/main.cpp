// mcgwd: the gateway daemon.  One thread (the EAL main lcore) runs the control
// loop (control/core/event_loop.hpp): signals, the operator API, the systemd
// watchdog and STATUS=, and the gateway's subsystems, which register their
// own sources (Gateway::attach).
#include <signal.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include <spdlog/sinks/base_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <mutex>
#include <optional>
#include <thread>

#include "config/loader.hpp"
#include "config/text.hpp"
#include "control/api/https_api.hpp"
#include "control/api/server.hpp"
#include "control/core/event_loop.hpp"
#include "control/daemon/gateway.hpp"
#include "control/daemon/journal_sink.hpp"
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
// How often the gateway's summary is compared with the last STATUS= sent
// (port link changes are seen only by asking).
constexpr auto kStatePeriod = std::chrono::milliseconds(100);
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

// Set when mcgwd logs to the journal (MCGW_CONFIG of each entry).
std::shared_ptr<mcgw::daemon::JournalSink> g_journal;

void setupLogging(const std::string& level) {
  spdlog::sink_ptr out;
  if (mcgw::daemon::stderrIsJournal()) {
    // Structured entries (PRIORITY, MCGW_CONFIG); journald adds the time.
    g_journal = std::make_shared<mcgw::daemon::JournalSink>();
    g_journal->set_pattern("%v");
    out = g_journal;
  } else {
    out = std::make_shared<spdlog::sinks::stderr_color_sink_mt>(spdlog::color_mode::automatic);
    out->set_pattern("%Y-%m-%d %H:%M:%S.%e [%l] %v");
  }
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
// --preflight chooses exactly as the start does.
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

// The unit's ExecStartPre: exit 1 when a prerequisite is missing.  A config
// that cannot be used is mcgwd's to refuse (exit 78, which the unit's
// RestartPreventExitStatus sees only from the main process: an
// ExecStartPre failing with 78 would be retried), so that case exits 0.
int runPreflight(const std::string& path, const std::string& state_dir, bool strict) {
  auto chosen = chooseConfig(path, state_dir, strict);
  if (!chosen) {
    std::fprintf(stderr,
                 "preflight: config %s is invalid and no last good copy may be used: mcgwd "
                 "will exit 78; prerequisites not checked\n",
                 path.c_str());
    return 0;
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

// What an exception that escaped work off the loop was, escaped for the
// log and the API.
std::string describe(std::exception_ptr error) {
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    return mcgw::text::escape(e.what(), 512);
  } catch (...) {
    return "an unknown exception";
  }
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

// --measure-timer-ms: a timer on the control loop that records how late each
// of its expirations ran, reported at stop (docs/performance.md, "Control
// loop timers").  Samples are bounded: a day at 10 ms would not fit.
class TimerProbe {
 public:
  TimerProbe(mcgw::core::EventLoop& loop, std::chrono::milliseconds period) {
    samples_.reserve(kMaxSamples);
    source_ = loop.every(period, "timer probe", [this] {
      if (samples_.size() < kMaxSamples) {
        samples_.push_back(source_.timerStats().last_lateness.count());
      }
    });
  }
  void report() {
    const mcgw::core::TimerStats st = source_.timerStats();
    std::vector<int64_t> s = samples_;
    std::sort(s.begin(), s.end());
    auto at = [&](double q) {
      return s.empty() ? 0 : s[std::min(s.size() - 1, static_cast<size_t>(q * s.size()))];
    };
    spdlog::info(
        "timer probe: every {} us, {} expirations ({} missed), lateness us: p50 {} p99 {} "
        "p99.9 {} max {}",
        st.period.count(), st.expirations, st.missed, at(0.5), at(0.99), at(0.999),
        st.max_lateness.count());
  }

 private:
  static constexpr size_t kMaxSamples = 1 << 20;
  std::vector<int64_t> samples_;
  mcgw::core::Source source_;
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"mcgwd: the mcgw multi-cloud interconnect gateway daemon"};
  std::string config_path = "/etc/mcgw/mcgw.yaml";
  std::string log_level;
  std::string state_dir = mcgw::daemon::kDefaultStateDir;
  bool preflight = false;
  bool strict = false;
  int measure_timer_ms = 0;
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
  app.add_option("--measure-timer-ms", measure_timer_ms,
                 "Run a timer of this period on the control loop and log its lateness at stop")
      ->check(CLI::Range(1, 10000))
      ->group("");  // a measurement, not an operator's option
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
  // The event loop takes signals through a signalfd; block them before the
  // EAL starts its threads so that they inherit the mask.
  sigset_t mask;
  sigemptyset(&mask);
  for (int s : {SIGTERM, SIGINT, SIGHUP}) {
    sigaddset(&mask, s);
  }
  sigprocmask(SIG_BLOCK, &mask, nullptr);
  signal(SIGPIPE, SIG_IGN);
  auto created = mcgw::core::EventLoop::create();
  if (!created) {
    spdlog::critical("{}", created.error());
    return kExitFailure;
  }
  mcgw::core::EventLoop& loop = **created;

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

  if (g_journal && loaded.config) {
    g_journal->setConfig(loaded.config->checksum.substr(0, 12));
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

  std::string last_summary = gw.summary();
  std::string last_config;
  auto showState = [&] {
    // The config in force names the journal entries from now on.
    if (g_journal && gw.config()->checksum.substr(0, 12) != last_config) {
      last_config = gw.config()->checksum.substr(0, 12);
      g_journal->setConfig(last_config);
    }
    if (std::string s = gw.summary(); s != last_summary) {
      spdlog::info("state: {}", s);
      notify("STATUS=" + s);
      last_summary = s;
    }
  };

  mcgw::api::Server server([&](const std::string& cmd, const json& args) {
    json r = mcgw::daemon::handleRequest(gw, cmd, args, [&gw] { return reload(gw); });
    showState();
    return r;
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
  server.attach(loop);

  // The same API over HTTPS with mutual TLS for an SDN controller
  // (api.https, docs/policy.md "Controller API"): requests arrive on its own
  // threads and run on the loop (viaLoop); refused while a reload runs.
  bool reloading = false;
  std::unique_ptr<mcgw::api::HttpsApi> https;
  std::thread https_stopper;  // stops a replaced server off the loop
  std::atomic<bool> https_stopping{false};
  const auto https_handler = mcgw::api::viaLoop(
      loop,
      [&](const std::string& cmd, const json& args, const std::string& client) {
        if (reloading) {  // the gateway is not thread-safe while a reload runs off the loop
          throw mcgw::api::Busy("a reload is under way; try again");
        }
        json r = mcgw::daemon::handleRequest(
            gw, cmd, args, [&gw] { return reload(gw); }, "HTTPS client " + client);
        showState();
        return r;
      },
      std::chrono::seconds(5));
  // A server that cannot start (a file, the address) leaves mcgwd running
  // without it, DEGRADED with the reason in status, until a reload starts it.
  std::function<void()> startHttps = [&] {
    const mcgw::config::HttpsApiConfig& c = gw.config()->api.https;
    gw.setHttpsProblem("");
    if (c.listen.empty()) {
      return;  // off
    }
    auto api = mcgw::api::HttpsApi::start(c, https_handler);
    if (!api) {
      spdlog::error("HTTPS API: not started: {}", api.error());
      gw.setHttpsProblem(api.error());
      return;
    }
    https = std::move(*api);
    spdlog::info("HTTPS API on {}", c.listen);
  };
  startHttps();
  // After every reload the server starts again, so that it reads its
  // certificate and key again (renewed in place) and takes a changed
  // api.https.  The old one stops off the loop (stop() waits for requests
  // in flight, which wait for the loop), then the new one starts on the
  // loop; a reload meanwhile leaves it to that start to read its config.
  auto restartHttps = [&] {
    if (https_stopping) {
      return;  // the start that follows the stop reads the config in force
    }
    if (!https) {
      startHttps();
      return;
    }
    std::shared_ptr<mcgw::api::HttpsApi> old(std::move(https));
    if (https_stopper.joinable()) {
      https_stopper.join();  // it has finished: https_stopping was false
    }
    https_stopping = true;
    https_stopper = std::thread([old, &loop, &startHttps, &https_stopping] {
      old->stop();
      loop.post([&startHttps, &https_stopping] {
        https_stopping = false;
        startHttps();
      });
    });
  };

  // Reloads run off the loop (a big file takes seconds to load and build):
  // the loop keeps its timers, the watchdog and signals, while nothing else
  // touches the gateway, which is not thread-safe: its sources (one call
  // pauses them all), the state check and the API wait (the kernel queues
  // what arrives) and resume after.
  mcgw::core::Source state_check;
  bool stop_after_reload = false;
  bool hangup_after_reload = false;
  std::function<void()> sighupReload;
  // https_too: the HTTPS server starts again after it (a live rules change
  // leaves the config's api.https and the files alone).
  bool restart_https_after = true;
  auto reloadOffLoop = [&](std::function<void()> work, std::function<void(std::exception_ptr)> then,
                           bool https_too = true) {
    reloading = true;
    gw.setPaused(true);
    state_check.setEnabled(false);
    server.setPaused(true);
    restart_https_after = https_too;
    loop.runOffLoop(std::move(work), [&, then = std::move(then)](std::exception_ptr error) {
      reloading = false;
      state_check.setEnabled(true);
      server.setPaused(false);
      if (restart_https_after) {
        restartHttps();
      }
      showState();  // before then(), which may start the next reload
      then(error);  // may start the next reload (a plan revision held back)
      if (stop_after_reload) {
        loop.exit(0);  // then() starts nothing while stopping (adoptPendingPlan)
        return;
      }
      if (hangup_after_reload && !reloading) {
        hangup_after_reload = false;
        sighupReload();
      }
      // Last: resuming may hand over a plan revision, which starts a reload.
      if (!reloading) {
        gw.setPaused(false);
      }
    });
  };
  // A new revision of the address plan's store is applied like a reload,
  // and tried again after a reload of the file (which may resolve what made
  // the gateway refuse it).
  std::function<void(const mcgw::plan::Snapshot&)> adoptPlan =
      [&](const mcgw::plan::Snapshot& snapshot) {
        auto s = std::make_shared<mcgw::plan::Snapshot>(snapshot);
        auto outcome = std::make_shared<mcgw::daemon::ReloadOutcome>();
        reloadOffLoop([&gw, s, outcome] { *outcome = gw.adoptPlan(*s); },
                      [&gw, s, outcome](std::exception_ptr error) {
                        // The follower's state belongs to the loop: told here, not
                        // from the reload's thread.
                        gw.planApplied(*s, error ? nullptr : outcome.get());
                        if (error) {
                          spdlog::error("address plan: applying failed: {}", describe(error));
                        }
                        notify("READY=1\nSTATUS=" + gw.summary());
                      });
      };
  auto adoptPendingPlan = [&] {
    if (stop_after_reload || reloading) {
      return;
    }
    if (auto pending = gw.pendingPlan(); pending) {
      adoptPlan(*pending);
    }
  };
  sighupReload = [&] {
    spdlog::info("SIGHUP: reloading {}", config_path);
    reloadOffLoop([&gw] { reload(gw); },
                  [&](std::exception_ptr error) {
                    if (!error) {
                      adoptPendingPlan();
                      return;
                    }
                    // A front-end like the API: nothing it triggers ends the process.
                    spdlog::error("SIGHUP: reload failed: {}", describe(error));
                    notify("READY=1\nSTATUS=" + gw.summary());
                  });
  };
  // `mcgwctl capture`: checked on the loop, then the connection carries the
  // answer line and the pcapng stream (capture_service.hpp).
  server.answerStreaming([&](const std::string& cmd, const json& args,
                             const mcgw::api::Server::Reply& reply,
                             const mcgw::api::Server::Take& take) {
    if (cmd != "capture") {
      return false;
    }
    if (reloading) {
      reply(mcgw::api::errorResponse("a reload is running; try again"));
      return true;
    }
    auto planned = gw.planCapture(args);
    if (!planned) {
      reply(mcgw::api::errorResponse(planned.error()));
      return true;
    }
    const int fd = take();
    if (fd >= 0) {
      const std::string what = planned->what;
      gw.startCapture(std::move(*planned), fd,
                      mcgw::api::responseLine({{"ok", true}, {"capturing", what}}),
                      [](const std::string& why) {
                        return mcgw::api::responseLine(mcgw::api::errorResponse(why));
                      });
    }
    return true;
  });
  // `mcgwctl reload`, and a live rules change (which runs the reload's
  // transaction, docs/policy.md): the same, answered when done.
  server.answerLater(
      [&](const std::string& cmd, const json& args, const mcgw::api::Server::Reply& reply) {
        if (cmd == "audit") {
          // FRR's RIB is read by vtysh off the loop; compared on it.
          if (!args.empty()) {
            reply(mcgw::api::errorResponse("audit takes no arguments"));
          } else {
            gw.audit(reply);
          }
          return true;
        }
        if (cmd != "reload" && cmd != "policy-rules-set" && cmd != "policy-rules-clear") {
          return false;
        }
        auto body = std::make_shared<json>();
        reloadOffLoop(
            [&gw, cmd, args, body] {
              *body = mcgw::daemon::handleRequest(gw, cmd, args, [&gw] { return reload(gw); });
            },
            [&gw, cmd, body, reply, &adoptPendingPlan](std::exception_ptr error) {
              if (error) {  // as api::answer() does for a handler that throws
                const std::string what = describe(error);
                spdlog::error("API: command \"{}\" failed: {}", cmd, what);
                *body = mcgw::api::errorResponse("internal error: " + what);
                notify("READY=1\nSTATUS=" + gw.summary());
              }
              reply(*body);
              if (!error) {
                adoptPendingPlan();
              }
            },
            cmd == "reload");
        return true;
      });

  int exit_code = 0;
  auto stop = [&](int signo) {
    spdlog::info("{}: stopping", strsignal(signo));
    if (reloading) {
      stop_after_reload = true;  // the gateway cannot stop under a reload
      return;
    }
    loop.exit(0);
  };
  mcgw::core::Source on_term = loop.onSignal(SIGTERM, "SIGTERM", stop);
  mcgw::core::Source on_int = loop.onSignal(SIGINT, "SIGINT", stop);
  mcgw::core::Source on_hup = loop.onSignal(SIGHUP, "SIGHUP", [&](int) {
    if (reloading) {
      hangup_after_reload = true;  // the file may have changed since it was read
      return;
    }
    sighupReload();
  });
  if (!on_term || !on_int || !on_hup) {
    notify("STATUS=cannot take signals");
    return kExitFailure;
  }
  gw.attach(loop);
  gw.followPlan(adoptPlan);
  state_check =
      loop.every(kStatePeriod, "state check", showState, mcgw::core::Priority::kBackground);
  std::optional<TimerProbe> probe;
  if (measure_timer_ms > 0) {
    probe.emplace(loop, std::chrono::milliseconds(measure_timer_ms));
  }
  if (loop.enableWatchdog()) {
    spdlog::info("systemd watchdog: {} ms, kicked by the event loop",
                 loop.watchdogPeriod().count() / 1000);
  }

  spdlog::info("ready: {}", gw.summary());
  notify("READY=1\nSTATUS=" + gw.summary());
  last_summary = gw.summary();

  if (int r = loop.run(); r < 0) {
    spdlog::critical("event loop: {}", std::strerror(-r));
    exit_code = kExitFailure;
  }
  loop.finishOffLoop();  // a reload under way ends before the gateway does
  https.reset();         // requests in flight get their answer (504 at worst)
  if (https_stopper.joinable()) {
    https_stopper.join();
  }
  gw.stop();  // VRRP priority 0, BGP announcements withdrawn
  if (probe) {
    probe->report();
    const auto longest = mcgw::core::EventLoop::longestRun();
    spdlog::info("event loop: longest handler run {} us ({})", longest.took.count(), longest.name);
  }
  // The gateway's sources leave the loop with their subsystems, before
  // their descriptors close.
  state_check.reset();
  probe.reset();

  notify("STOPPING=1\nSTATUS=stopping");
  started->reset();
  spdlog::info("stopped");
  return exit_code;
}
