// Line quality: round trip time, jitter and loss of each line, measured with
// small timestamped probes (probe_codec.hpp, types 3 and 4) to the peer
// gateway's probe responder.  Pure logic over an injected clock: the caller
// sends the probes poll() asks for and passes the replies to onReply().
//
// Per line a probe goes out every `interval` (100 ms) once the line's peer
// is known to run a responder: it answered a quality probe, or a path MTU
// probe (onPeerAnswers).  Until then one probe every
// kQualityDiscoveryInterval (5 s), the first 5 s after the line appeared
// (path MTU discovery's first rounds find a responder sooner): a peer
// without a responder (a Linux VTEP, a gateway whose mcgwd is down) answers
// each probe with an ICMP port unreachable, and its kernel's ICMP rate limit
// (about one a second after a burst of six) is what path MTU discovery
// reads refusals from.  A probe
// that has no reply within kQualityTimeout (1 s) is lost, and a reply after
// that is late (it does not make the probe answered).  A line that has
// answered nothing for kQualityQuietAfter (10 s) is probed only every
// kQualityQuietInterval (1 s) until it answers again.
//
// Windows (kQualityWindows: 10 s and 60 s) ending now:
//   probes / lost / loss_ratio: the probes whose timeout expired within the
//     window (sent + 1 s in (now - W, now]), those of them unanswered, and
//     lost / probes.  A probe is counted once it is settled, so the ratio
//     never counts a probe still in flight.
//   rtt_ms_*: the answered probes sent within the window (sent in
//     (now - W, now]): last (the highest sequence), min, mean, max.
//   jitter_ms: the mean absolute difference of the RTTs of consecutive
//     answered probes (in sequence order, lost ones skipped) among those
//     samples: RFC 3550's |D(i-1,i)| over the window, averaged rather than
//     smoothed, so that a window's value depends on that window alone.
// Memory: a ring per line of ringCapacity(interval) probes of 32 bytes, the
// probes of the last 60 s + 1 s: 611 entries (about 20 KiB) at 100 ms, at
// most 3,051 (about 98 KiB) at the 20 ms minimum.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "control/pmtu/tracker.hpp"  // Clock, TimePoint

namespace mcgw::pmtu {

inline constexpr std::chrono::milliseconds kQualityTimeout{1000};
inline constexpr std::chrono::milliseconds kQualityQuietAfter{10000};
inline constexpr std::chrono::milliseconds kQualityQuietInterval{1000};
inline constexpr std::chrono::milliseconds kQualityDiscoveryInterval{5000};
inline constexpr std::chrono::milliseconds kQualityMinInterval{20};
inline constexpr std::array<std::chrono::seconds, 2> kQualityWindows{std::chrono::seconds(10),
                                                                     std::chrono::seconds(60)};

struct QualitySettings {
  std::chrono::milliseconds interval{100};  // 0: no quality probes
  bool operator==(const QualitySettings&) const = default;
};

// One sliding window's figures.  RTT fields are 0 when rtt_samples is 0,
// loss_ratio is 0 when probes is 0 (the views print null then).
struct QualityWindow {
  uint32_t probes = 0;  // settled (answered or timed out) within the window
  uint32_t lost = 0;
  double loss_ratio = 0;
  uint32_t rtt_samples = 0;  // answered probes sent within the window
  double rtt_ms_last = 0;
  double rtt_ms_min = 0;
  double rtt_ms_mean = 0;
  double rtt_ms_max = 0;
  uint32_t jitter_samples = 0;  // pairs of consecutive samples
  double jitter_ms = 0;
};

enum class QualityState : uint8_t {
  kStarting,  // nothing answered and no probe timed out yet
  kOk,        // answered within the last kQualityQuietAfter
  kNoAnswer,  // nothing answered for kQualityQuietAfter, or never (and a probe timed out)
};
const char* toString(QualityState s);

struct QualityCounters {
  uint64_t sent = 0;
  uint64_t answered = 0;   // replies within the timeout
  uint64_t lost = 0;       // timed out unanswered
  uint64_t late = 0;       // replies after the timeout (the probe stays lost)
  uint64_t duplicate = 0;  // a second reply to an answered probe
  uint64_t unknown = 0;    // a sequence not in the ring, or a send time that does not match
};

// What status, show tunnels, the metrics and SLA steering read about a line.
struct QualityView {
  QualityState state = QualityState::kStarting;
  // The peer is known to run a responder (it answered a quality or path MTU
  // probe).  False: the figures say nothing about the line (a peer such as
  // a Linux VTEP answers no probe at all); SLA decisions should ignore it.
  bool peer_responds = false;
  TimePoint at{};  // when the windows were computed
  std::chrono::milliseconds interval{};
  QualityWindow window10s;
  QualityWindow window60s;
  QualityCounters counters;
};

// A probe for the caller to send now.
struct QualityProbe {
  std::string line;
  uint64_t sequence = 0;
  uint64_t sent_ns = 0;  // the time point, in the wire's form (nanoseconds of Clock)
};

uint64_t toWireTime(TimePoint t);

class QualityEstimator {
 public:
  explicit QualityEstimator(QualitySettings s = {});

  // Probes in the ring per line: those of the longest window plus the timeout.
  static size_t ringCapacity(std::chrono::milliseconds interval);

  // Another interval starts every line afresh (the ring is sized by it); 0
  // forgets the lines and sends nothing.
  void setSettings(const QualitySettings& s, TimePoint now);
  const QualitySettings& settings() const { return settings_; }
  // The lines by key ("peer/line"): new ones start, gone ones are
  // forgotten, the others keep their probes.
  void setLines(const std::vector<std::string>& lines, TimePoint now);

  // Timeouts, the probes due now, and (every 100 ms) the views.
  std::vector<QualityProbe> poll(TimePoint now);

  enum class Reply : uint8_t { kAnswered, kLate, kDuplicate, kUnknown };
  // A reply of line's peer echoing `sequence` and `sent_ns`.
  Reply onReply(const std::string& line, uint64_t sequence, uint64_t sent_ns, TimePoint now);
  // The line's peer answered another probe (path MTU): it runs a responder,
  // so the line is probed every interval from now on.  Once per line has an
  // effect; later calls are cheap.
  void onPeerAnswers(const std::string& line, TimePoint now);

  // As of the last poll (refreshed every 100 ms); null for a line not probed.
  const QualityView* view(const std::string& line) const;
  // Computed at `now`.
  QualityView compute(const std::string& line, TimePoint now) const;
  std::vector<std::string> lines() const;

 private:
  struct Slot {
    uint64_t sequence = 0;  // 0: empty
    TimePoint sent{};
    Clock::duration rtt{};
    bool answered = false;
  };
  struct Line {
    std::vector<Slot> ring;
    uint64_t next_sequence = 1;
    uint64_t settled = 1;  // the lowest sequence whose timeout has not been looked at
    TimePoint started{};
    TimePoint next_send{};
    TimePoint last_sent{};
    TimePoint last_answer{};  // or when the peer was found to answer
    bool responder = false;   // the peer answered a probe (quality or path MTU)
    bool ever_answered = false;
    bool ever_settled = false;
    QualityCounters counters;
    QualityView view;
  };

  Line fresh(TimePoint now) const;
  bool quiet(const Line& l, TimePoint now) const;
  void found(Line& l, TimePoint now) const;
  QualityView computeLine(const Line& l, TimePoint now) const;
  void settle(Line& l, TimePoint now);

  QualitySettings settings_;
  std::map<std::string, Line> lines_;
  TimePoint next_views_{};
};

}  // namespace mcgw::pmtu
