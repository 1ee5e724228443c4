// BGP through FRR, as one subsystem of the control core:
//   - renders FRR's integrated config from the gateway's config and applies
//     it with frr-reload.py (off the loop; retried until FRR takes it), so a
//     change that does not touch a session never resets it;
//   - is zebra's FPM server: FRR's routes become route updates of source
//     kFrr, applied in place (stale on a disconnect, swept after
//     bgp.fpm.stale-time);
//   - follows bfdd's sessions over its control socket: a line whose BFD
//     session to the peer gateway is not up is unusable at once (a line
//     state input of UnderlayLines);
//   - polls FRR (vtysh JSON) for the neighbours' state shown in status, and
//     compares FRR's RIB with the fast path's on `mcgwctl audit`.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/config.hpp"
#include "control/core/event_loop.hpp"
#include "control/core/worker.hpp"
#include "control/daemon/subsystem.hpp"
#include "control/frr/bfd_control.hpp"
#include "control/frr/fpm_server.hpp"
#include "control/frr/frr_routes.hpp"
#include "control/frr/render.hpp"
#include "dataplane/engine/tables.hpp"

namespace mcgw::frr {

// Where FRR's files and programs are, from the config (bgp.frr).
struct FrrPaths {
  std::string config_dir;  // frr.conf is written here
  std::string run_dir;     // vty sockets, bfdd.sock
  std::string conf() const { return config_dir + "/frr.conf"; }
  std::string guard() const { return config_dir + "/mcgw-guard.nft"; }
  std::string bfdSocket() const { return run_dir + "/bfdd.sock"; }
  static FrrPaths of(const config::Config& c) { return {c.bgp.frr_config_dir, c.bgp.frr_run_dir}; }
};
inline constexpr const char* kVtysh = "/usr/bin/vtysh";
// RFC 5880 6.8.17: the remote system is administratively down.
inline constexpr uint8_t kBfdDiagAdminDown = 7;
inline constexpr const char* kFrrReload = "/usr/lib/frr/frr-reload.py";
std::vector<std::string> vtyshCommand(const FrrPaths& paths,
                                      const std::vector<std::string>& commands);
std::vector<std::string> frrReloadCommand(const FrrPaths& paths);

class FrrRouting : public daemon::Subsystem {
 public:
  // How routes reach the fast path (ForwardingState::applyRoutes), and how
  // the lines are refreshed now (after a BFD change).
  using ApplyRoutes =
      std::function<Result<bool, std::string>(std::span<const engine::RouteUpdate>)>;
  FrrRouting(config::ConfigPtr config, ApplyRoutes apply_routes,
             std::function<void()> refresh_lines);
  ~FrrRouting() override;

  // How often FRR is asked for its neighbours, and how long one vtysh may take.
  static constexpr std::chrono::seconds kPollPeriod{2};
  static constexpr std::chrono::seconds kVtyshTimeout{10};
  static constexpr std::chrono::seconds kReloadTimeout{30};
  static constexpr std::chrono::seconds kRetryPeriod{5};

  // Listens for FPM, connects to bfdd, renders and applies FRR's config.
  void attach(core::EventLoop& loop);
  void setPaused(bool paused);

  // The gateway's VRRP standing (docs/routing.md "BGP follows VRRP"): what
  // its announcements say from now on.  On the loop thread; never waits.
  // Rendered into FRR's config (frr.conf says it, so a later reload renders
  // the same); applied to the running FRR on the worker with vtysh (only the
  // out route-maps' standing lines, then an outbound soft refresh: no session
  // resets) when FRR runs the config in force, otherwise with the next
  // frr-reload.py; after an apply that runs now (a reload, or a daemon reload
  // off the loop: paused), like a config change.  The same standing again
  // does nothing.
  void setStanding(const BgpStanding& standing);
  const BgpStanding& standing() const { return standing_; }
  // The gateway stops: its fast path goes, so its routes must too.  Waits
  // (at most kStopTimeout) for an FRR update under way, then withdraws every
  // announcement from the running FRR (the withdraw standing's lines in
  // full, with vtysh, at most kStopTimeout) and writes frr.conf so; on the
  // calling thread after the loop ended.  The next mcgwd renders its own
  // standing again.  Nothing when bgp is off or FRR was never given our
  // config.
  static constexpr std::chrono::seconds kStopTimeout{3};
  void withdrawOnStop();

  // The line state input: false while the line's BFD session is known and not up.
  bool lineUp(const std::string& peer, const std::string& line) const;
  // Why a line is down, if BFD says so ("BFD down"), else "".
  std::string lineDownReason(const std::string& peer, const std::string& line) const;

  nlohmann::json status() const;
  std::vector<std::string> problems() const;
  // For VRRP tracking: zebra connected over FPM; a BGP session (by the
  // neighbour's address as configured) Established at the last poll
  // (kPollPeriod): nullopt when FRR has not been asked yet or does not know it.
  bool fpmConnected() const;
  std::optional<bool> sessionEstablished(const std::string& address) const;
  // Routes FRR gave, by what became of them (mcgwctl show routes --source frr).
  const FrrRoutes& routes() const { return routes_; }
  // FRR's RIB (vtysh) against the routes the fast path has from FRR: every
  // difference (at most 10,000 listed).  Answers on the loop thread with a
  // whole API response body.
  void audit(std::function<void(nlohmann::json)> reply);
  // The kernel interfaces of the WAN ports (for the own-traffic guard).
  void setWanInterfaces(std::function<std::vector<std::string>()> f) {
    wan_interfaces_ = std::move(f);
  }
  // The ports' kernel interfaces by ifindex (zebra's next hops name them).
  void setPortsByIfindex(std::function<PortsByIfindex()> f) { ports_by_ifindex_ = std::move(f); }
  // The fast path's RIB entries of source frr (for the audit).
  void setRouteLister(std::function<std::vector<engine::RouteView>()> lister) {
    list_frr_routes_ = std::move(lister);
  }
  // The audit's comparison, from FRR's installed routes (as FPM would send them).
  nlohmann::json compare(const std::map<config::IpPrefix, FpmRoute>& frr) const;

  std::string_view name() const override { return "frr"; }
  Result<bool, std::string> prepare(const daemon::ReloadPlan& plan) override;
  void apply() override;
  void abort() override;

 private:
  void applyUpdates(std::vector<engine::RouteUpdate> updates);
  void onFpmConnected();
  void onFpmDisconnected(const std::string& why);
  void onBfd(const BfdPeerState& state);
  void scheduleConfig();
  void pushConfig();
  // Only the standing differs from what FRR runs: its vtysh commands alone.
  void pushStanding();
  // A push of (config, standing) ended; ok: FRR runs text.
  void pushed(bool ok, const std::string& text, const config::ConfigPtr& config,
              const BgpStanding& standing, const char* via, const std::string& error);
  void poll();
  void startBfd();
  std::shared_ptr<FpmServer> makeFpmServer();
  // Every route stale now; those not sent again within bgp.fpm.stale-time go.
  void armSweep();
  const BfdPeerState* bfdOf(const std::string& peer, const std::string& line) const;

  config::ConfigPtr config_;
  config::ConfigPtr next_;
  struct Pending {
    config::ConfigPtr config;
    std::shared_ptr<FpmServer> fpm;
  };
  std::optional<Pending> pending_;  // applied, to adopt on the loop
  std::vector<std::function<void()>> deferred_;
  // Lines whose BFD session went down and that bfdd has not reported up
  // since ("peer/line"), even if bgpd has deleted the session meanwhile.
  std::map<std::string, bool> bfd_down_;
  // Lines whose current BFD session has been up ("peer/line").
  std::set<std::string> bfd_up_;
  ApplyRoutes apply_routes_;
  std::function<void()> refresh_lines_;
  std::function<std::vector<engine::RouteView>()> list_frr_routes_;
  std::function<std::vector<std::string>()> wan_interfaces_;
  std::function<PortsByIfindex()> ports_by_ifindex_;
  // FRR's routes translated again under the config in force (a reload).
  void retranslate();
  // The prepared config (and FPM server) becomes FRR's: on the loop.
  void adopt();
  bool needsBfd() const;
  // f now, or after the reload that runs off the loop (paused).
  void whenRunning(std::function<void()> f);
  // FRR's routes of one batch into the fast path.
  void receive(const std::vector<FpmMessage>& messages);
  std::string guard_error_;
  std::string guard_file_;
  core::EventLoop* loop_ = nullptr;
  bool paused_ = false;

  FrrRoutes routes_;
  std::shared_ptr<FpmServer> fpm_;
  std::shared_ptr<FpmServer> next_fpm_;  // prepared: a new listening address
  std::unique_ptr<BfdControlClient> bfd_;
  std::vector<BgpSession> sessions_;

  // FRR's config: what is rendered, what FRR took last, and how that went.
  std::string rendered_;
  std::string applied_;
  // What applied_ was rendered from (the standing alone may then be changed
  // with vtysh).
  config::ConfigPtr applied_config_;
  BgpStanding applied_standing_;
  // The VRRP standing, since when, and how its last change reached FRR.
  BgpStanding standing_;
  std::chrono::system_clock::time_point standing_since_{};
  std::chrono::steady_clock::time_point standing_asked_{};
  std::string standing_state_ = "applied";  // pending | applied | failed
  std::string standing_via_;                // vtysh | frr-reload.py
  std::string standing_error_;
  std::chrono::system_clock::time_point standing_at_{};
  int64_t standing_ms_ = -1;  // from setStanding() to FRR having taken it
  bool pushing_ = false;
  std::string config_state_ = "pending";  // pending | applied | failed | off
  std::string config_error_;
  std::chrono::system_clock::time_point config_at_{};
  core::Source retry_timer_;

  // FRR's neighbours as the last poll saw them.
  nlohmann::json neighbors_ = nlohmann::json::array();
  std::string poll_error_;
  std::chrono::system_clock::time_point polled_at_{};
  bool polling_ = false;
  core::Source poll_timer_;

  // Stale routes after zebra went away: swept when this fires.
  core::Source sweep_timer_;
  std::chrono::steady_clock::time_point sweep_at_{};
  std::string fpm_down_since_;
  // FRR's programs (frr-reload.py, nft, vtysh) run here, not on the loop's
  // background thread: a reload never waits behind them.  Last: its thread
  // ends first.
  std::unique_ptr<core::Worker> worker_;
};

}  // namespace mcgw::frr
