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
    l.current_misses = l.silent_rounds = 0;
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
  l.verifying = false;
  l.current_misses = 0;
  if (settings_.probe) {
    if (l.v.probe == ProbeState::kSearching) {
      l.v.probe = ProbeState::kOk;
    }
    l.next_round = now;
  }
  return true;
}

void PathMtuTracker::onProbeReply(uint64_t id, TimePoint) {
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

void PathMtuTracker::startRound(const std::string& key, Line& l, RoundKind kind, TimePoint now,
                                std::vector<ProbeRequest>& out) {
  l.probes.clear();
  l.refused = false;
  l.kind = kind;
  std::vector<uint16_t> sizes;
  const uint16_t base = std::min(floor(l), l.v.mtu);
  if (kind == RoundKind::kConfirm) {
    sizes.push_back(l.v.mtu);
    if (base < l.v.mtu) {
      sizes.push_back(base);
    }
  } else if (l.verifying) {
    sizes.push_back(l.hi);  // the size about to count as too big, once more
    sizes.push_back(l.lo);  // and the control probe
  } else {
    // A train of candidates spread over (lo, hi), its top hi - 1, and a
    // control probe at lo, which tells "all too big" from "all lost".
    const unsigned span = static_cast<unsigned>(l.hi - 1 - l.lo);
    for (unsigned k = 1; k <= kTrainLength; ++k) {
      const auto s = static_cast<uint16_t>(l.lo + (span * k + kTrainLength - 1) / kTrainLength);
      if (s > l.lo && s < l.hi && (sizes.empty() || sizes.back() != s)) {
        sizes.push_back(s);
      }
    }
    sizes.push_back(l.lo);
  }
  for (uint16_t s : sizes) {
    const uint64_t id = next_id_++;
    l.probes.push_back({id, s, false});
    outstanding_[id] = key;
    out.push_back({key, id, s});
    ++l.v.counters.probes_sent;
  }
  l.in_round = true;
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
  if (any) {
    l.silent_rounds = 0;
    l.ever_answered = true;
  } else if (++l.silent_rounds >= kMaxProbes) {
    // Not an mcgw gateway, or the line is down: leave the MTU alone.
    l.v.probe = ProbeState::kNoAnswer;
    l.raising = false;
    l.verifying = false;
    l.current_misses = 0;
    if (l.kind == RoundKind::kSearch) {
      l.last_decrease = now;  // an aging raise waits another period
    }
    // A peer that starts later, or a line that comes back, is found soon.
    l.next_round =
        now + std::min<std::chrono::milliseconds>(settings_.probe_interval, kNoAnswerRetry);
    return;
  } else {
    // Try again when the timeout is over (at once after a silent round; a
    // refused one ended early).
    l.next_round = std::max(now, l.deadline);
    return;
  }

  if (l.kind == RoundKind::kConfirm) {
    const bool current = l.probes.front().answered;
    if (current) {
      l.current_misses = 0;
      l.v.probe = ProbeState::kOk;
      l.next_round = now + settings_.probe_interval;
    } else if (++l.current_misses >= kMaxProbes) {
      // Too big for the path, which no ICMP told us: search downwards.
      l.current_misses = 0;
      l.v.probe = ProbeState::kSearching;
      l.raising = false;
      l.lo = std::min(floor(l), l.v.mtu);
      l.hi = l.upper = l.v.mtu;
      l.verifying = false;
      ++l.v.counters.searches;
      l.next_round = now;
    } else {
      if (l.v.probe != ProbeState::kOk) {
        l.v.probe = ProbeState::kOk;  // the peer answers
      }
      l.next_round = now;
    }
    return;
  }

  if (l.verifying) {
    if (l.probes.front().answered) {
      // It was a lost probe: search on above it.
      l.verifying = false;
      l.lo = l.hi;
      l.hi = l.upper;
    } else if (++l.verify_misses >= kMaxProbes) {
      endSearch(key, l, now);
      return;
    }
    if (l.hi - l.lo <= 1) {
      endSearch(key, l, now);
    } else {
      l.next_round = now;
    }
    return;
  }
  // Search: the largest answered size is the new lo, the smallest unanswered
  // size above it the new hi.
  for (const auto& p : l.probes) {
    if (p.answered) {
      l.lo = std::max(l.lo, p.size);
    }
  }
  for (const auto& p : l.probes) {
    if (!p.answered && p.size > l.lo) {
      l.hi = std::min(l.hi, p.size);
    }
  }
  if (l.hi - l.lo <= 1 && l.hi < l.upper) {
    l.verifying = true;  // hi failed once in a train: ask again before it counts
    l.verify_misses = 0;
    l.next_round = now;
  } else if (l.hi - l.lo <= 1) {
    endSearch(key, l, now);  // hi is the size that started the search: known too big
  } else {
    l.next_round = now;
  }
}

void PathMtuTracker::endSearch(const std::string& key, Line& l, TimePoint now) {
  const uint16_t found = l.lo;
  l.verifying = false;
  if (l.raising) {
    if (found > l.v.mtu) {
      set(key, l, found, Source::kProbe,
          "aging: a probe of " + std::to_string(found) + " bytes was answered", now);
    }
  } else if (found < l.v.mtu) {
    set(key, l, found, Source::kProbe,
        "probe: " + std::to_string(l.v.mtu) + " bytes unanswered, " + std::to_string(found) +
            " the largest answered",
        now);
  }
  // A raise that stopped short of the configured MTU tries again after aging.
  l.last_decrease = now;
  l.raising = false;
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
    l.raising = true;
    l.lo = l.v.mtu;
    l.hi = l.upper = static_cast<uint16_t>(l.v.spec.configured_mtu + 1);
    l.verifying = false;
    l.v.probe = ProbeState::kSearching;
    ++l.v.counters.searches;
    startRound(key, l, RoundKind::kSearch, now, out);
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
      const bool all =
          std::all_of(l.probes.begin(), l.probes.end(), [](const Probe& p) { return p.answered; });
      const bool none =
          std::none_of(l.probes.begin(), l.probes.end(), [](const Probe& p) { return p.answered; });
      // A refused round has nothing more to wait for.
      if (!all && !(none && l.refused) && now < l.deadline) {
        continue;
      }
      endRound(key, l, now);
    }
    if (l.in_round) {
      continue;
    }
    age(key, l, now, out);
    if (settings_.probe && !l.in_round && now >= l.next_round) {
      startRound(key, l,
                 l.v.probe == ProbeState::kSearching ? RoundKind::kSearch : RoundKind::kConfirm,
                 now, out);
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
