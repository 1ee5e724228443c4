// SLA steering (docs/architecture.md, "SLA steering"): each line of a peer with
// an `sla` is judged on its 10 s quality window (control/pmtu/quality.hpp).
// A line that breaks a limit is taken out of use at once; it comes back
// once it has kept every limit for the peer's hold time (hysteresis: a line
// that flaps around a limit stays out).  When every line of a peer that is
// otherwise up is out, the best of them (least loss, then lowest mean RTT)
// is used rather than none.  Pure logic over an injected time: the lines
// subsystem calls update() on each refresh.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "control/pmtu/quality.hpp"

namespace mcgw::lines {

// A window with fewer settled probes than this says nothing yet (2 s of
// probes at the default 100 ms).
inline constexpr uint32_t kSlaMinProbes = 20;

// What update() needs to know of one line.
struct SlaLine {
  std::string peer, line;
  const config::SlaConfig* sla = nullptr;  // null: the peer has none
  const pmtu::QualityView* quality = nullptr;
  bool base_up = false;  // usable by every other input (link, admin, BFD, next hop)
};

struct SlaLineState {
  bool outside = false;     // broke its SLA and has not kept it for the hold time since
  bool kept_best = false;   // outside, but used: every line of its peer is outside
  std::string reason;       // the last limit it broke ("loss 5.0% > 1%")
  pmtu::TimePoint since{};  // of the current state (outside or within)
  std::optional<pmtu::TimePoint> within_since;  // outside: keeping every limit since
  uint64_t changes = 0;                         // in and out of use by SLA
};

// Why `w` breaks `sla` ("loss 5.0% > 1%"), or nothing.
std::optional<std::string> slaBreach(const config::SlaConfig& sla, const pmtu::QualityWindow& w);

class SlaSteering {
 public:
  // Judges every line at `now`; returns what changed, for the log.
  std::vector<std::string> update(const std::vector<SlaLine>& lines, pmtu::TimePoint now);
  // Whether SLA steering lets the line be used (true for lines it does not judge).
  bool usable(const std::string& peer, const std::string& line) const;
  // Null: the line has no SLA state (no sla, or never judged).
  const SlaLineState* state(const std::string& peer, const std::string& line) const;

 private:
  std::map<std::string, SlaLineState> lines_;  // "peer/line"
  std::map<std::string, std::string> best_;    // peer -> the line kept while all are out
};

}  // namespace mcgw::lines
