// The path MTU of each line, as pure logic over an injected clock.
//
// A line starts at its configured MTU.  An ICMP frag-needed / Packet Too Big
// quoting one of the line's outer packets lowers it at once (never raises
// it).  With probing on, a keepalive round at start and every
// probe-interval probes the current size and, last, a control probe at the
// floor (552 IPv4, 1280 IPv6).  A round ends when every probe is answered;
// once the control probe is answered the others get max(50 ms, half its
// round trip) more; without that answer the round waits probe-timeout.
// When the current size goes unanswered while the control probe is answered
// (a path that black-holes bigger packets without ICMP), a search starts at
// once: back-to-back rounds of a parallel train of candidate sizes narrow
// [largest answered, smallest unanswered) until it is one byte wide; every
// round asks the smallest unanswered size again, and a size counts as too big
// only once it went unanswered in three rounds in which smaller sizes were
// answered.  So a single lost probe never
// lowers a line: when the current size is answered again, the search ends and
// nothing changes.  The line then takes the largest answered size.  After
// `aging` since the last decrease a search between the current and the
// configured MTU raises it again when a larger probe is answered (RFC 8201 /
// RFC 8899); without probing, or when the peer never answers probes (not an
// mcgw gateway), aging returns the line to its configured MTU (RFC 1191).
// Rounds in which nothing is answered at all (silent, or refused by the
// peer's kernel with port unreachable: no responder listens) leave the MTU
// alone and are no faster than probe-timeout; after three in a row the line
// is "no answer" and asked again after probe-interval, then twice as long
// each time up to 10 s.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace mcgw::pmtu {

using Clock = std::chrono::steady_clock;
using TimePoint = Clock::time_point;

// Linux's min_pmtu for IPv4; IPv6's minimum link MTU (RFC 8200).
inline constexpr uint16_t kFloor4 = 552;
inline constexpr uint16_t kFloor6 = 1280;
// Rounds a size must go unanswered (with the control probe answered) before
// it counts as too big; quiet rounds in a row before a peer is "no answer".
inline constexpr unsigned kMaxProbes = 3;
// A line whose peer answers nothing is asked again after at most this long.
inline constexpr std::chrono::milliseconds kNoAnswerRetry{10000};
// Candidate sizes per search round (besides the control probe).
inline constexpr unsigned kTrainLength = 8;
// Once a round's control probe is answered, the others get at least this
// long (or half the control's round trip, if longer) before they count as
// lost: they left just before it on the same path.
inline constexpr std::chrono::milliseconds kMinGrace{50};
// A search that has not settled after this many rounds (a very lossy path)
// ends with what it knows.
inline constexpr unsigned kMaxSearchRounds = 32;

struct Settings {
  bool probe = true;
  std::chrono::milliseconds probe_interval{1000};
  std::chrono::milliseconds probe_timeout{1000};
  std::chrono::milliseconds aging{600000};
  bool operator==(const Settings&) const = default;
};

struct LineSpec {
  bool ipv6 = false;
  uint16_t configured_mtu = 1500;
  bool operator==(const LineSpec&) const = default;
};

enum class Source : uint8_t { kConfigured, kIcmp, kProbe };
enum class ProbeState : uint8_t { kOff, kStarting, kOk, kSearching, kNoAnswer };
const char* toString(Source s);
const char* toString(ProbeState s);

struct Counters {
  uint64_t icmp_accepted = 0;  // lowered the path MTU
  uint64_t icmp_ignored = 0;   // reported an MTU not below the current one
  uint64_t probes_sent = 0;
  uint64_t probes_answered = 0;
  uint64_t probes_lost = 0;     // unanswered: dropped on the way, or too big
  uint64_t probes_refused = 0;  // unanswered, the peer's kernel refused them
  uint64_t searches = 0;
};

// What show commands print about a line.
struct LineView {
  LineSpec spec;
  uint16_t mtu = 0;
  Source source = Source::kConfigured;
  TimePoint since{};
  std::string reason;  // of the last change
  ProbeState probe = ProbeState::kOff;
  Counters counters;
};

// A path MTU change for the caller to apply (fast path, MSS) and log.
struct Change {
  std::string line;
  uint16_t from = 0;
  uint16_t to = 0;
  Source source = Source::kConfigured;
  std::string reason;
};

// A probe the caller sends now: an IP packet of exactly `size` bytes.
struct ProbeRequest {
  std::string line;
  uint64_t id = 0;
  uint16_t size = 0;
};

class PathMtuTracker {
 public:
  explicit PathMtuTracker(Settings s = {}) : settings_(s) {}

  // Reload: new settings keep every line's state; probing turned off ends
  // rounds in flight, turned on starts them.
  void setSettings(const Settings& s, TimePoint now);
  const Settings& settings() const { return settings_; }
  // The lines by key ("peer/line").  New lines start at their configured MTU,
  // lines that are gone are forgotten, unchanged lines keep their state; a
  // line whose spec changed starts afresh.
  void setLines(const std::map<std::string, LineSpec>& lines, TimePoint now);

  // An ICMP frag-needed / PTB quoting one of the line's outer packets, with
  // the reported MTU (0: a router older than RFC 1191, see onIcmp in the
  // .cpp).  `from` is the reporting router, for the log.  True when the path
  // MTU went down.
  bool onIcmp(const std::string& line, uint32_t reported_mtu, const std::string& from,
              TimePoint now);
  // A reply to a probe sent for ProbeRequest `id`.
  void onProbeReply(uint64_t id, TimePoint now);
  // The line's peer refused a probe (ICMP port unreachable from its VTEP
  // address quoting one): the round in flight is not answered, and no
  // probe of it was lost.
  void onRefused(const std::string& line, TimePoint now);
  // Timeouts, round evaluation, aging, next rounds; returns the probes to send.
  std::vector<ProbeRequest> poll(TimePoint now);
  // Changes since the last call, oldest first.
  std::vector<Change> takeChanges();

  const LineView* view(const std::string& line) const;
  uint16_t mtu(const std::string& line) const;

 private:
  struct Probe {
    uint64_t id = 0;
    uint16_t size = 0;
    bool answered = false;
    TimePoint answered_at{};
  };
  enum class RoundKind : uint8_t { kConfirm, kSearch };
  struct Line {
    LineView v;
    TimePoint last_decrease{};  // aging counts from here
    TimePoint next_round{};
    std::chrono::milliseconds retry{};  // "no answer": the wait before the next round
    // The round in flight: its probes, the control probe last.
    bool in_round = false;
    RoundKind kind = RoundKind::kConfirm;
    TimePoint started{};
    TimePoint deadline{};
    bool refused = false;  // the peer's kernel refused it (port unreachable)
    std::vector<Probe> probes;
    unsigned quiet_rounds = 0;  // rounds in a row with no answer at all
    bool ever_answered = false;
    // The search: lo is answered, hi (exclusive) the smallest size not known
    // to fit.  upper: lowering, the size that went unanswered (the MTU when
    // the search began); raising, the configured MTU + 1 (never probed).
    bool raising = false;
    uint16_t lo = 0, hi = 0, upper = 0;
    // Sizes above lo that went unanswered in this search: rounds each.
    std::map<uint16_t, unsigned> misses;
    unsigned search_rounds = 0;
  };

  uint16_t floor(const Line& l) const { return l.v.spec.ipv6 ? kFloor6 : kFloor4; }
  void set(const std::string& key, Line& l, uint16_t mtu, Source s, std::string reason,
           TimePoint now);
  bool roundOver(const Line& l, TimePoint now) const;
  void startRound(const std::string& key, Line& l, TimePoint now, std::vector<ProbeRequest>& out);
  void endRound(const std::string& key, Line& l, TimePoint now);
  void startSearch(Line& l, bool raising, TimePoint now);
  void searchRoundDone(const std::string& key, Line& l, TimePoint now);
  void endSearch(const std::string& key, Line& l, uint16_t found, TimePoint now);
  void age(const std::string& key, Line& l, TimePoint now, std::vector<ProbeRequest>& out);

  Settings settings_;
  std::map<std::string, Line> lines_;
  std::map<uint64_t, std::string> outstanding_;  // probe id -> line
  uint64_t next_id_ = 1;
  std::vector<Change> changes_;
};

}  // namespace mcgw::pmtu
