// The underlay lines: whether each is usable, its path MTU (from
// control/pmtu) and the MSS clamp of the tunnels over them, all pushed into
// the fast path's live state; and the operator's admin state of each line.
// On the control loop (attach) it registers its own sources: path MTU
// discovery's sockets (again whenever it replaces them), the path MTU poll
// and the line refresh.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "control/core/event_loop.hpp"
#include "control/daemon/subsystem.hpp"
#include "control/lines/sla.hpp"
#include "control/pmtu/service.hpp"
#include "control/ports/port_set.hpp"
#include "dataplane/engine/dataplane.hpp"

namespace mcgw::lines {

// One input to a line's state: the line is usable when every input says up
// and its next hop is resolved.  Admin state and link state are the inputs
// today; BFD and VRRP tracking join here as further inputs.
struct LineStateInput {
  std::string name;  // "admin", "link", later "bfd", ...
  std::function<bool(const engine::LineEntry& line, const engine::ForwardingTables& tables)> up;
};

class UnderlayLines : public daemon::Subsystem {
 public:
  UnderlayLines(engine::Dataplane& dataplane, const ports::PortSet& ports,
                config::ConfigPtr config);
  ~UnderlayLines() override;

  // How often path MTU discovery's timers and probes run, and how often the
  // line state is taken from its inputs (link state is polled).
  static constexpr std::chrono::milliseconds kPathMtuPeriod{20};
  static constexpr std::chrono::milliseconds kRefreshPeriod{100};

  void addStateInput(LineStateInput input) { inputs_.push_back(std::move(input)); }

  // Before `tables` are published: path MTU discovery follows their lines
  // (lines that stay keep their state), then the live state is set so the
  // first packets find new lines up.
  void beforePublish(const engine::ForwardingTables& tables);
  // Line state from the inputs, path MTU and MSS clamp into the fast path.
  void refresh(const engine::ForwardingTables& tables);

  // Registers path MTU discovery's sockets, the path MTU poll and the line
  // refresh on loop, which must outlive these lines.  Once.
  void attach(core::EventLoop& loop);
  // Paused (a reload runs off the loop): the timers stop and the socket
  // sources are dropped, since the reload may close the sockets; resumed,
  // the sockets of the day are registered again.  Loop thread only.
  void setPaused(bool paused);

  // `mcgwctl line PEER LINE up|down` (not persisted).  The caller refreshes.
  Result<std::string, std::string> setAdmin(const std::string& peer, const std::string& line,
                                            bool up);
  bool adminDown(const std::string& peer, const std::string& line) const {
    return admin_down_.count(peer + "/" + line) > 0;
  }
  // The link state of a DPDK port at the last refresh.
  bool linkUp(uint16_t port_id) const;
  const pmtu::PathMtuService& pathMtu() const { return *pmtu_; }
  // SLA steering's judgement of each line (sla.hpp).
  const SlaSteering& sla() const { return sla_; }

  // A reload: lines that are gone lose their admin state; the new config's
  // path MTU settings apply with the new tables (beforePublish).
  std::string_view name() const override { return "lines"; }
  Result<bool, std::string> prepare(const daemon::ReloadPlan& plan) override;
  void apply() override;
  void abort() override { next_.reset(); }

 private:
  void refreshMss(const engine::ForwardingTables& tables);
  void configurePathMtu(const engine::ForwardingTables& tables);
  void applyPathMtu(const engine::ForwardingTables& tables);
  // Path MTU discovery's timers and probes, and its changes applied.
  void pollPathMtu();
  void onPathMtuReadable(int fd);
  // One source per path MTU socket, when attached and not paused.
  void watchPathMtu();

  engine::Dataplane& dataplane_;
  const ports::PortSet& ports_;
  config::ConfigPtr config_;
  config::ConfigPtr next_;
  std::vector<LineStateInput> inputs_;
  std::set<std::string> admin_down_;    // "peer/line"
  std::map<uint16_t, bool> port_link_;  // DPDK port id -> link up (at refresh)
  std::unique_ptr<pmtu::PathMtuService> pmtu_;
  std::vector<std::string> pmtu_errors_;  // logged once each
  core::EventLoop* loop_ = nullptr;
  bool paused_ = false;
  // After pmtu_: they leave the loop before its sockets close.
  std::vector<core::Source> pmtu_sources_;
  core::Source pmtu_timer_;
  core::Source refresh_timer_;
  SlaSteering sla_;
};

}  // namespace mcgw::lines
