// VRRPv3 (RFC 9568) in mcgwd: the groups of `vrrp:` on the LAN ports, as a
// subsystem of the control core (docs/failover.md).  Each group is a pure
// state machine (state_machine.hpp) driven from the control loop: its timer,
// the frames read on the port's kernel side (vrrp_io.hpp), and the tracked
// objects polled every kTrackPeriod.  What a state change means for the
// rest of the gateway goes through Hooks the Gateway sets: the virtual MAC
// accepted by the port only while Active, BGP's standing (prepend or
// withdraw while not Active).  Notify and active commands run on threads of
// their own with a time limit; the state machine never waits for them.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/config.hpp"
#include "control/core/event_loop.hpp"
#include "control/core/worker.hpp"
#include "control/daemon/subsystem.hpp"
#include "control/vrrp/state_machine.hpp"
#include "control/vrrp/vrrp_io.hpp"
#include "dataplane/proto/vrrp.hpp"

namespace mcgw::vrrp {

// What BGP does because of VRRP: kActive when every group that BGP follows
// is Active (or there is none).
struct BgpStanding {
  enum class Mode { kActive, kPrepend, kWithdraw };
  Mode mode = Mode::kActive;
  uint8_t prepend = 0;
  bool operator==(const BgpStanding&) const = default;
};

struct KernelSideRef {
  std::string ifname;
  int ifindex = 0;  // 0: the port has no kernel side (yet)
};

// The Gateway's side of VRRP; every hook is called on the loop thread.
struct Hooks {
  std::function<KernelSideRef(const std::string& port)> kernel_side;
  std::function<std::optional<proto::Mac>(const std::string& port)> port_mac;
  std::function<bool(const std::string& port)> link_up;
  // A tracked object is up (port link, a peer's lines, a BGP session, FPM).
  std::function<bool(const config::VrrpTrack&)> tracked_up;
  // The full set of virtual MACs the port accepts now (empty: none).
  std::function<void(const std::string& port, const std::vector<proto::Mac>&)> set_virtual_macs;
  std::function<void(const BgpStanding&)> bgp_standing;
  // Whether every port with a group has link (the gateway can deliver to
  // its site); called at the first tracking tick and when that changes.
  std::function<void(bool)> site_reachable;
  // Accept mode: the virtual addresses of the Active groups with
  // `accept-mode: true`, which the gateway takes as its own while so (the
  // full set; empty: none).  Called when it changes.
  std::function<void(const std::vector<config::IpAddress>&)> accepted_addresses;
};

// Counted per group: what was read for it and what it did.
struct GroupCounters {
  uint64_t bad_ttl = 0;           // TTL / hop limit not 255
  uint64_t not_a_peer = 0;        // unicast group: the source is not a unicast peer
  uint64_t address_mismatch = 0;  // the advertised addresses differ from ours (used anyway)
  uint64_t arp_answered = 0;
  uint64_t nd_answered = 0;
  uint64_t announcements = 0;  // gratuitous ARP / unsolicited NA, per address
  uint64_t send_errors = 0;
  uint64_t notify_run = 0, notify_failed = 0, notify_timed_out = 0, notify_dropped = 0;
  uint64_t active_command_run = 0, active_command_failed = 0, active_command_timed_out = 0;
};

class VrrpService : public daemon::Subsystem {
 public:
  // On an orderly stop the notify of each group's last transition runs on
  // the stopping thread; all of them together get this long (each also at
  // most its notify-timeout-ms), then they are killed or not run (counted).
  static constexpr std::chrono::milliseconds kStopNotifyTimeout{2000};
  static constexpr std::chrono::milliseconds kTrackPeriod{20};
  // Commands waiting for their worker beyond this are dropped (counted).
  static constexpr size_t kMaxQueuedCommands = 32;

  VrrpService(config::ConfigPtr config, Hooks hooks);
  ~VrrpService() override;

  // Opens the ports' sockets and starts every group (Backup first).
  void attach(core::EventLoop& loop);
  void setPaused(bool paused);
  // An orderly stop: each Active sends priority 0 so that its Backup takes
  // over after Skew_Time, and gives up its virtual MAC.  Groups stay down.
  void shutdown();

  // `mcgwctl show vrrp` and status's "vrrp" block.
  nlohmann::json view() const;
  // Why VRRP cannot do its work (health reasons): sockets, kernel sides.
  std::vector<std::string> problems() const;
  BgpStanding standing() const { return standing_; }
  // Whether every port with a group has link now (asked of hooks.link_up):
  // what the Gateway tells the kernel sides before they set up, so that a
  // gateway started with its LAN cut never lets BFD out.
  bool siteReachableNow() const;

  std::string_view name() const override { return "vrrp"; }
  Result<bool, std::string> prepare(const daemon::ReloadPlan& plan) override;
  void apply() override;
  void abort() override { next_.reset(); }

 private:
  struct Group;
  struct PortIo {
    std::string port;
    KernelSideRef side;
    std::optional<PortSockets> sockets;
    core::Source rx;
    std::string error;  // why there are no sockets
    std::chrono::steady_clock::time_point retry_at{};
    uint64_t frames = 0;
    uint64_t unknown_vrid = 0;  // an advertisement of a VRID no group of this port has
    std::map<std::string, uint64_t> malformed;  // by reason
    uint64_t read_errors = 0;
  };

  class GroupOutput : public Output {
   public:
    GroupOutput(VrrpService& s, Group& g) : s_(s), g_(g) {}
    void sendAdvert(uint8_t priority) override;
    void announce() override;
    void transitioned(const Transition& t) override;

   private:
    VrrpService& s_;
    Group& g_;
  };

  struct Group {
    config::VrrpGroupConfig cfg;
    bool v6 = false;
    proto::Mac vmac{};
    std::vector<proto::IpAddr> vips;
    // The last announcement sent because another Active was heard.
    std::chrono::steady_clock::time_point last_heal_announce{};
    std::vector<proto::IpAddr> peers;  // unicast: the only senders accepted
    proto::IpAddr primary;
    bool has_primary = false;
    std::unique_ptr<GroupOutput> output;
    std::unique_ptr<StateMachine> sm;
    std::vector<bool> track_up;
    bool link_up = false;
    std::string down_reason;  // why the group is in Initialize (port down, no address)
    core::Source timer;
    core::Source announce_timer;
    core::Source active_timer;
    GroupCounters counters;
    bool address_mismatch_logged = false;
  };

  void startAll();
  void startGroup(Group& g);
  // Opens (or finds) the sockets of a port; nullptr (and a problem) if not.
  PortIo* portIo(const std::string& port);
  void onReadable(PortIo& io);
  void handleFrame(PortIo& io, std::span<const uint8_t> frame);
  void track();
  void updateAccepted(bool even_paused = false);
  void arm(Group& g);
  void sendAdvert(Group& g, uint8_t priority);
  void announce(Group& g);
  void transitioned(Group& g, const Transition& t);
  void updateVirtualMacs(const std::string& port);
  void updateStanding();
  void runCommand(Group& g, bool active_command, std::vector<std::string> argv);
  void armActiveCommand(Group& g);
  void armAnnounce(Group& g);
  void stopGroup(Group& g, const std::string& why);
  std::unique_ptr<Group> makeGroup(const config::VrrpGroupConfig& c);
  uint8_t effectivePriority(Group& g);
  void reconcile();
  Group* find(const std::string& port, uint8_t vrid, bool v6);

  config::ConfigPtr config_;
  config::ConfigPtr next_;
  config::ConfigPtr next_config_;  // applied off the loop, taken on resume
  Hooks hooks_;
  core::EventLoop* loop_ = nullptr;
  bool paused_ = false;
  bool stopped_ = false;
  std::optional<bool> site_reachable_;       // as last told to hooks_.site_reachable
  std::vector<config::IpAddress> accepted_;  // as last told to hooks_.accepted_addresses
  std::chrono::steady_clock::time_point stop_deadline_;
  std::map<std::string, std::unique_ptr<PortIo>> ports_;
  std::vector<std::unique_ptr<Group>> groups_;
  BgpStanding standing_;
  bool standing_sent_ = false;
  std::unique_ptr<core::Worker> notify_worker_;
  std::unique_ptr<core::Worker> active_worker_;
  size_t notify_queued_ = 0, active_queued_ = 0;
  core::Source track_timer_;
};

}  // namespace mcgw::vrrp
