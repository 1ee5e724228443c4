// `mcgwctl capture`: one packet capture at a time on a port, a line or a
// tenant's LAN ports (docs/monitoring.md, "Packet capture").  The API hands
// the client's connection over (api::Server::answerStreaming); the answer
// line, then the pcapng stream, go down it until the count is reached, the
// client closes, or mcgwd stops.  A reload that closes or reopens a captured
// port ends the capture first.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/config.hpp"
#include "control/core/event_loop.hpp"
#include "control/daemon/subsystem.hpp"
#include "dataplane/engine/capture.hpp"
#include "dataplane/engine/dataplane.hpp"

namespace mcgw::capture {

// A request checked and resolved, ready to start.
struct Planned {
  engine::CaptureSpec spec;
  std::string target;  // as asked
  std::string what;    // "port lan0", "line site-b/line1 (port wan1)", "tenant blue (lan0)"
  std::vector<std::string> port_names;
  std::string user_filter;  // the filter as asked (spec.filter adds the line's)
};

class CaptureService : public daemon::Subsystem {
 public:
  CaptureService(config::ConfigPtr config, engine::Dataplane& dataplane);
  ~CaptureService() override;

  // The check for a finished capture.  Once, on the loop thread.
  void attach(core::EventLoop& loop);
  // Paused (a reload runs off the loop and may end the capture itself):
  // the check for a finished capture waits.
  void setPaused(bool paused) { check_.setEnabled(!paused); }

  // args: {"target": PORT | PEER/LINE | LINE | TENANT, "filter": tcpdump
  // expression, "count": N, "snaplen": S}.  Why not: a capture is running,
  // an unknown or ambiguous target, a filter libpcap refuses, bounds.
  Result<Planned, std::string> plan(const nlohmann::json& args) const;
  // Starts `p` on fd (taken: closed when the capture ends).  The client
  // reads ok_line first, or error_line(why) when the capture cannot start
  // (then fd is closed).
  void start(Planned p, int fd, const std::string& ok_line,
             const std::function<std::string(const std::string&)>& error_line);
  // {active, target, ..., totals}: for status, counters and the metrics.
  nlohmann::json view() const;

  std::string_view name() const override { return "capture"; }
  Result<bool, std::string> prepare(const daemon::ReloadPlan& plan) override;
  void apply() override;
  void abort() override {}

 private:
  void finish(const std::string& why);

  config::ConfigPtr config_;
  config::ConfigPtr next_;
  engine::Dataplane& dataplane_;
  core::Source check_;
  std::unique_ptr<engine::CaptureSession> session_;
  Planned current_;
  uint64_t sessions_ = 0, total_written_ = 0, total_dropped_ = 0;
  std::string last_end_;
};

}  // namespace mcgw::capture
