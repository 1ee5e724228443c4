// Path MTU discovery for the daemon: the tracker fed by the ICMP listener and
// the prober.  Its owner (lines::UnderlayLines) watches fds() on the control
// loop, calls onReadable() for a readable one and poll() from a timer, and
// applies takeChanges() to the fast path.  configure() is the one call that
// closes or opens sockets.  It also measures each line's quality (RTT,
// jitter, loss: quality.hpp) with probes through the same sockets, sent from
// poll().
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "control/pmtu/probe_codec.hpp"
#include "control/pmtu/quality.hpp"
#include "control/pmtu/sockets.hpp"
#include "control/pmtu/tracker.hpp"

namespace mcgw::pmtu {

struct ServiceLine {
  LineAddresses addresses;  // key, local and remote VTEP, tunnel port
  uint16_t configured_mtu = 1500;
};

Settings toSettings(const config::PathMtuConfig& c);
QualitySettings toQualitySettings(const config::PathMtuConfig& c);

class PathMtuService {
 public:
  PathMtuService();
  // Start and reload: lines that stay keep their state.
  void configure(const config::PathMtuConfig& c, const std::vector<ServiceLine>& lines,
                 TimePoint now);
  std::vector<int> fds() const;
  void onReadable(int fd, TimePoint now);
  // Timeouts, aging and the probes now due (path MTU and quality).
  void poll(TimePoint now);
  std::vector<Change> takeChanges() { return tracker_.takeChanges(); }

  const PathMtuTracker& tracker() const { return tracker_; }
  // Line quality by key ("peer/line"): quality().view(key).
  const QualityEstimator& quality() const { return quality_; }
  const IcmpListener& listener() const { return listener_; }
  const Prober& prober() const { return prober_; }
  // Socket problems (no CAP_NET_RAW, an address that cannot be bound).
  std::vector<std::string> errors() const;

 private:
  config::PathMtuConfig config_;
  std::vector<LineAddresses> lines_;
  PathMtuTracker tracker_;
  QualityEstimator quality_;
  IcmpListener listener_;
  Prober prober_;
};

}  // namespace mcgw::pmtu
