#include "control/pmtu/tracker.hpp"

#include <algorithm>
#include <array>
#include <utility>

namespace mcgw::pmtu {

const char* toString(Source s) {
  switch (s) {
    case Source::kConfigured:
      return "configured";
    case Source::kIcmp:
      return "icmp";
    case Source::kProbe:
      return "probe";
  }
  return "unknown";
}

const char* toString(ProbeState s) {
  switch (s) {
    case ProbeState::kOff:
      return "off";
    case ProbeState::kStarting:
      return "starting";
    case ProbeState::kOk:
      return "ok";
    case ProbeState::kSearching:
      return "searching";
    case ProbeState::kNoAnswer:
      return "no answer";
  }
  return "unknown";
}

namespace {

// RFC 1191 §7's plateaus: the guess when a router reports no MTU.
uint16_t plateauBelow(uint16_t size) {
  static constexpr std::array<uint16_t, 10> kPlateaus{32000, 17914, 8166, 4352, 2002,
                                                      1492,  1006,  508,  296,  68};
  for (uint16_t p : kPlateaus) {
    if (p < size) {
      return p;
    }
  }
  return 68;
}

}  // namespace

void PathMtuTracker::setSettings(const Settings& s, TimePoint now) {
  const bool was = settings_.probe;
  settings_ = s;
  if (was == s.probe) {
    return;
  }
  for (auto& [key, l] : lines_) {
    for (const auto& p : l.probes) {
      outstanding_.erase(p.id);
    }
    l.probes.clear();
    l.in_round = false;
    l.quiet_rounds = 0;
    l.raising = false;
    l.misses.clear();
    l.v.probe = s.probe ? ProbeState::kStarting : ProbeState::kOff;
    l.next_round = now;
  }
}

void PathMtuTracker::setLines(const std::map<std::string, LineSpec>& lines, TimePoint now) {
  for (auto it = lines_.begin(); it != lines_.end();) {
    auto want = lines.find(it->first);
    if (want == lines.end() || !(want->second == it->second.v.spec)) {
      for (const auto& p : it->second.probes) {
        outstanding_.erase(p.id);
      }
      it = lines_.erase(it);
    } else {
      ++it;
    }
  }
  for (const auto& [key, spec] : lines) {
    if (lines_.count(key)) {
      continue;
    }
    Line l;
    l.v.spec = spec;
    l.v.mtu = spec.configured_mtu;
    l.v.source = Source::kConfigured;
    l.v.since = now;
    l.v.reason = "configured";
    l.v.probe = settings_.probe ? ProbeState::kStarting : ProbeState::kOff;
    l.last_decrease = now;
    l.next_round = now;
    lines_.emplace(key, std::move(l));
  }
}

void PathMtuTracker::set(const std::string& key, Line& l, uint16_t mtu, Source s,
                         std::string reason, TimePoint now) {
  l.v.source = s;
  l.v.reason = reason;
  if (mtu == l.v.mtu) {
    return;
  }
  changes_.push_back({key, l.v.mtu, mtu, s, std::move(reason)});
  l.v.mtu = mtu;
  l.v.since = now;
}

// RFC 1191 / RFC 8201: lower at once to what the router reports, never
// raise.  A report of 0 (a router older than RFC 1191) means "smaller than
// the packet": the next lower RFC 1191 plateau; a report below the floor
// (552 IPv4 like Linux's min_pmtu, 1280 IPv6) is taken as the floor, so a
// forged or broken ICMP cannot shrink a line to nothing.
bool PathMtuTracker::onIcmp(const std::string& key, uint32_t reported, const std::string& from,
                            TimePoint now) {
  auto it = lines_.find(key);
  if (it == lines_.end()) {
    return false;
  }
  Line& l = it->second;
  const uint32_t fl = floor(l);
  uint32_t mtu = reported == 0 ? plateauBelow(l.v.mtu) : reported;
  mtu = std::max(mtu, fl);
  if (mtu >= l.v.mtu) {
    ++l.v.counters.icmp_ignored;
    return false;
  }
  ++l.v.counters.icmp_accepted;
  std::string reason = "icmp from " + from;
  if (reported != mtu) {
    reason += " (reported " + std::to_string(reported) + ")";
  }
  set(key, l, static_cast<uint16_t>(mtu), Source::kIcmp, std::move(reason), now);
  l.last_decrease = now;
  // A round in flight measured the old size: start over with a confirmation.
  for (const auto& p : l.probes) {
    outstanding_.erase(p.id);
  }
  l.probes.clear();
  l.in_round = false;
  l.raising = false;
  l.misses.clear();
  if (settings_.probe) {
    if (l.v.probe == ProbeState::kSearching) {
      l.v.probe = ProbeState::kOk;
    }
    l.next_round = now;
  }
  return true;
}

void PathMtuTracker::onProbeReply(uint64_t id, TimePoint now) {
  auto it = outstanding_.find(id);
  if (it == outstanding_.end()) {
    return;  // late (the round ended) or unknown
  }
  auto l = lines_.find(it->second);
  outstanding_.erase(it);
  if (l == lines_.end()) {
    return;
  }
  for (auto& p : l->second.probes) {
    if (p.id == id && !p.answered) {
      p.answered = true;
      p.answered_at = now;
      ++l->second.v.counters.probes_answered;
    }
  }
}

void PathMtuTracker::onRefused(const std::string& line, TimePoint) {
  auto it = lines_.find(line);
  if (it != lines_.end() && it->second.in_round) {
    it->second.refused = true;
  }
}

// Every probe of a round leaves at once, the control probe last, on the same
// path: once its answer is back, the others' are due too.  The grace covers
// reordering and the peer answering them one by one.
bool PathMtuTracker::roundOver(const Line& l, TimePoint now) const {
  if (now >= l.deadline) {
    return true;
  }
  const bool all =
      std::all_of(l.probes.begin(), l.probes.end(), [](const Probe& p) { return p.answered; });
  const bool none =
      std::none_of(l.probes.begin(), l.probes.end(), [](const Probe& p) { return p.answered; });
  if (all || (none && l.refused)) {
    return true;  // a refused round has nothing more to wait for
  }
  const Probe& control = l.probes.back();
  if (!control.answered) {
    return false;
  }
  const Clock::duration grace =
      std::max<Clock::duration>(kMinGrace, (control.answered_at - l.started) / 2);
  return now >= control.answered_at + grace;
}

void PathMtuTracker::startRound(const std::string& key, Line& l, TimePoint now,
                                std::vector<ProbeRequest>& out) {
  l.probes.clear();
  l.refused = false;
  std::vector<uint16_t> sizes;  // the control probe last
  if (l.v.probe != ProbeState::kSearching) {
    // Keepalive: the current size and the control probe.
    l.kind = RoundKind::kConfirm;
    sizes.push_back(l.v.mtu);
    const uint16_t base = std::min(floor(l), l.v.mtu);
    if (base < l.v.mtu) {
      sizes.push_back(base);
    }
  } else {
    l.kind = RoundKind::kSearch;
    auto missed = [&](uint16_t size) {
      auto it = l.misses.find(size);
      return it == l.misses.end() ? 0u : it->second;
    };
    // The size that started a lowering search, until it counts as too big:
    // answered, it was a lost probe and the search is over.
    if (!l.raising && l.hi < l.upper && missed(l.upper) < kMaxProbes) {
      sizes.push_back(l.upper);
    }
    // The smallest unanswered size (not the limit of a raise), until it counts.
    if ((!l.raising || l.hi < l.upper) && missed(l.hi) < kMaxProbes) {
      sizes.push_back(l.hi);
    }
    // A train of candidates spread over (lo, hi), its top hi - 1.
    const unsigned span = l.hi > l.lo + 1 ? static_cast<unsigned>(l.hi - 1 - l.lo) : 0;
    uint16_t last = l.lo;
    for (unsigned k = 1; span > 0 && k <= kTrainLength; ++k) {
      const auto size = static_cast<uint16_t>(l.lo + (span * k + kTrainLength - 1) / kTrainLength);
      if (size > last && size < l.hi) {
        sizes.push_back(size);
        last = size;
      }
    }
    // The control probe at lo, which tells "all too big" from "all lost".
    sizes.push_back(l.lo);
  }
  for (uint16_t size : sizes) {
    const uint64_t id = next_id_++;
    l.probes.push_back({id, size, false, {}});
    outstanding_[id] = key;
    out.push_back({key, id, size});
    ++l.v.counters.probes_sent;
  }
  l.in_round = true;
  l.started = now;
  l.deadline = now + settings_.probe_timeout;
}

void PathMtuTracker::endRound(const std::string& key, Line& l, TimePoint now) {
  l.in_round = false;
  const bool any =
      std::any_of(l.probes.begin(), l.probes.end(), [](const Probe& p) { return p.answered; });
  for (const auto& p : l.probes) {
    if (!p.answered) {
      outstanding_.erase(p.id);
      if (any || !l.refused) {
        ++l.v.counters.probes_lost;
      } else {
        ++l.v.counters.probes_refused;
      }
    }
  }
  if (!any) {
    // Silent or refused: the peer is no mcgw gateway, not started yet, or the
    // line is down.  Never a reason to change the MTU.
    if (++l.quiet_rounds < kMaxProbes) {
      l.next_round = std::max(now, l.deadline);  // at once after a silent round
      return;
    }
    l.retry = l.v.probe == ProbeState::kNoAnswer
                  ? std::min(l.retry * 2, kNoAnswerRetry)
                  : std::min(settings_.probe_interval, kNoAnswerRetry);
    l.v.probe = ProbeState::kNoAnswer;
    if (l.kind == RoundKind::kSearch) {
      l.last_decrease = now;  // an aging raise waits another period
    }
    l.raising = false;
    l.misses.clear();
    l.next_round = now + l.retry;
    return;
  }
  l.quiet_rounds = 0;
  l.ever_answered = true;
  if (l.kind == RoundKind::kSearch) {
    searchRoundDone(key, l, now);
  } else if (l.probes.front().answered) {
    l.v.probe = ProbeState::kOk;
    l.next_round = now + settings_.probe_interval;
  } else {
    // The current size lost while the control probe got through: maybe a
    // path that black-holes bigger packets, which no ICMP told us.  Search
    // at once; the current size is asked again in the first rounds.
    startSearch(l, false, now);
  }
}

void PathMtuTracker::startSearch(Line& l, bool raising, TimePoint now) {
  l.v.probe = ProbeState::kSearching;
  ++l.v.counters.searches;
  l.raising = raising;
  l.lo = raising ? l.v.mtu : std::min(floor(l), l.v.mtu);
  l.hi = l.upper = raising ? static_cast<uint16_t>(l.v.spec.configured_mtu + 1) : l.v.mtu;
  l.misses.clear();
  if (!raising) {
    l.misses[l.upper] = 1;  // the keepalive that started it
  }
  l.search_rounds = 0;
  l.next_round = now;
}

void PathMtuTracker::searchRoundDone(const std::string& key, Line& l, TimePoint now) {
  ++l.search_rounds;
  uint16_t lo = l.lo;
  for (const auto& p : l.probes) {
    if (p.answered) {
      lo = std::max(lo, p.size);
    }
  }
  if (!l.raising && lo >= l.upper) {
    // The size that started the search got through after all: a lost probe,
    // not a black hole.
    l.misses.clear();
    l.v.probe = ProbeState::kOk;
    l.next_round = now + settings_.probe_interval;
    return;
  }
  for (const auto& p : l.probes) {
    if (!p.answered && p.size > lo) {
      ++l.misses[p.size];
    }
  }
  // What fits is forgotten as a miss; the smallest size still unanswered
  // is hi.
  l.lo = lo;
  l.misses.erase(l.misses.begin(), l.misses.upper_bound(lo));
  l.hi = l.misses.empty() ? l.upper : std::min(l.upper, l.misses.begin()->first);
  const auto hi = l.misses.find(l.hi);
  const bool too_big = hi != l.misses.end() ? hi->second >= kMaxProbes : l.raising;
  if (l.hi - l.lo <= 1 && too_big) {
    endSearch(key, l, l.lo, now);
  } else if (l.search_rounds >= kMaxSearchRounds) {
    // Too lossy to settle: lower to what got through only when the size that
    // started the search kept failing; a raise takes what got through.
    const auto up = l.misses.find(l.upper);
    const bool failing = up != l.misses.end() && up->second >= kMaxProbes;
    endSearch(key, l, l.raising || failing ? l.lo : l.v.mtu, now);
  } else {
    l.next_round = now;
  }
}

void PathMtuTracker::endSearch(const std::string& key, Line& l, uint16_t found, TimePoint now) {
  if (l.raising) {
    if (found > l.v.mtu) {
      set(key, l, found, Source::kProbe,
          "aging: a probe of " + std::to_string(found) + " bytes was answered", now);
    }
    // A raise that stopped short of the configured MTU tries again after aging.
    l.last_decrease = now;
  } else if (found < l.v.mtu) {
    set(key, l, found, Source::kProbe,
        "probe: " + std::to_string(l.v.mtu) + " bytes unanswered, " + std::to_string(found) +
            " the largest answered",
        now);
    l.last_decrease = now;
  }
  l.raising = false;
  l.misses.clear();
  l.v.probe = ProbeState::kOk;
  l.next_round = now + settings_.probe_interval;
}

void PathMtuTracker::age(const std::string& key, Line& l, TimePoint now,
                         std::vector<ProbeRequest>& out) {
  if (l.v.probe == ProbeState::kSearching || l.v.mtu >= l.v.spec.configured_mtu ||
      now - l.last_decrease < settings_.aging) {
    return;
  }
  if (settings_.probe && l.ever_answered && l.v.probe != ProbeState::kNoAnswer) {
    startSearch(l, true, now);
    startRound(key, l, now, out);
  } else {
    // Nobody to ask: back to the configured MTU (RFC 1191); ICMP lowers it
    // again if the path still needs it.
    set(key, l, l.v.spec.configured_mtu, Source::kConfigured, "aging: back to the configured MTU",
        now);
    l.last_decrease = now;
  }
}

std::vector<ProbeRequest> PathMtuTracker::poll(TimePoint now) {
  std::vector<ProbeRequest> out;
  for (auto& [key, l] : lines_) {
    if (l.in_round) {
      if (!roundOver(l, now)) {
        continue;
      }
      endRound(key, l, now);
    }
    age(key, l, now, out);
    if (settings_.probe && !l.in_round && now >= l.next_round) {
      startRound(key, l, now, out);
    }
  }
  return out;
}

std::vector<Change> PathMtuTracker::takeChanges() {
  return std::exchange(changes_, {});
}

const LineView* PathMtuTracker::view(const std::string& line) const {
  auto it = lines_.find(line);
  return it == lines_.end() ? nullptr : &it->second.v;
}

uint16_t PathMtuTracker::mtu(const std::string& line) const {
  auto it = lines_.find(line);
  return it == lines_.end() ? 0 : it->second.v.mtu;
}

}  // namespace mcgw::pmtu
