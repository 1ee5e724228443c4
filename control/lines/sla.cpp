#include "control/lines/sla.hpp"

#include <cstdio>

namespace mcgw::lines {

namespace {

std::string fixed(double v, int digits) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

// A figure of the window worth judging.
bool judged(const SlaLine& l) {
  return l.sla && l.quality && l.quality->peer_responds &&
         l.quality->window10s.probes >= kSlaMinProbes;
}

}  // namespace

std::optional<std::string> slaBreach(const config::SlaConfig& sla, const pmtu::QualityWindow& w) {
  if (sla.max_loss && w.probes && w.loss_ratio > *sla.max_loss) {
    return "loss " + fixed(w.loss_ratio * 100, 1) + "% > " + fixed(*sla.max_loss * 100, 1) + "%";
  }
  if (sla.max_rtt_ms && w.rtt_samples && w.rtt_ms_mean > *sla.max_rtt_ms) {
    return "rtt " + fixed(w.rtt_ms_mean, 1) + " ms > " + std::to_string(*sla.max_rtt_ms) + " ms";
  }
  if (sla.max_jitter_ms && w.jitter_samples && w.jitter_ms > *sla.max_jitter_ms) {
    return "jitter " + fixed(w.jitter_ms, 1) + " ms > " + std::to_string(*sla.max_jitter_ms) +
           " ms";
  }
  return std::nullopt;
}

std::vector<std::string> SlaSteering::update(const std::vector<SlaLine>& lines,
                                             pmtu::TimePoint now) {
  std::vector<std::string> log;
  std::map<std::string, SlaLineState> next;
  for (const SlaLine& l : lines) {
    const std::string key = l.peer + "/" + l.line;
    if (!l.sla) {
      continue;  // no SLA (any more): its state goes
    }
    SlaLineState s;
    if (auto it = lines_.find(key); it != lines_.end()) {
      s = it->second;
    } else {
      s.since = now;
    }
    s.kept_best = false;
    if (judged(l)) {
      const auto breach = slaBreach(*l.sla, l.quality->window10s);
      if (breach) {
        s.reason = *breach;
        s.within_since.reset();
        if (!s.outside) {
          s.outside = true;
          s.since = now;
          ++s.changes;
          log.push_back("line " + key + ": outside its SLA (" + *breach + "): taken out of use");
        }
      } else if (s.outside) {
        if (!s.within_since) {
          s.within_since = now;
        }
        if (now - *s.within_since >= std::chrono::seconds(l.sla->hold_s)) {
          s.outside = false;
          s.since = now;
          s.within_since.reset();
          ++s.changes;
          log.push_back("line " + key + ": within its SLA for " + std::to_string(l.sla->hold_s) +
                        " s: in use again");
        }
      }
    }
    next[key] = std::move(s);
  }
  lines_ = std::move(next);

  // A peer whose lines are all out (among those otherwise up) keeps its best.
  std::map<std::string, std::vector<const SlaLine*>> by_peer;
  for (const SlaLine& l : lines) {
    if (l.base_up) {
      by_peer[l.peer].push_back(&l);
    }
  }
  std::map<std::string, std::string> best;
  for (const auto& [peer, up] : by_peer) {
    const SlaLine* pick = nullptr;
    bool all_out = true;
    for (const SlaLine* l : up) {
      const auto it = lines_.find(l->peer + "/" + l->line);
      if (it == lines_.end() || !it->second.outside) {
        all_out = false;
        break;
      }
      auto worse = [](const SlaLine* a, const SlaLine* b) {  // is a worse than b
        const pmtu::QualityWindow* wa = a->quality ? &a->quality->window10s : nullptr;
        const pmtu::QualityWindow* wb = b->quality ? &b->quality->window10s : nullptr;
        if (!wa || !wb) {
          return !wa && wb;
        }
        if (wa->loss_ratio != wb->loss_ratio) {
          return wa->loss_ratio > wb->loss_ratio;
        }
        return wa->rtt_ms_mean > wb->rtt_ms_mean;
      };
      if (!pick || worse(pick, l)) {
        pick = l;
      }
    }
    // The line kept before stays unless another is clearly better (one
    // percentage point less loss, or a fifth less mean RTT at about the same
    // loss): two lines alike do not swap on every refresh.
    if (all_out && pick) {
      if (auto was = best_.find(peer); was != best_.end() && was->second != pick->line) {
        for (const SlaLine* l : up) {
          if (l->line == was->second && l->quality && pick->quality) {
            const pmtu::QualityWindow& old = l->quality->window10s;
            const pmtu::QualityWindow& now = pick->quality->window10s;
            const bool clearly = now.loss_ratio + 0.01 <= old.loss_ratio ||
                                 (now.loss_ratio <= old.loss_ratio + 0.001 &&
                                  now.rtt_ms_mean <= 0.8 * old.rtt_ms_mean);
            if (!clearly) {
              pick = l;
            }
          }
        }
      }
    }
    if (all_out && pick) {
      best[peer] = pick->line;
      lines_[pick->peer + "/" + pick->line].kept_best = true;
      if (auto was = best_.find(peer); was == best_.end() || was->second != pick->line) {
        log.push_back("peer " + peer + ": every line is outside its SLA; using " + pick->line +
                      ", the best (" + lines_[pick->peer + "/" + pick->line].reason + ")");
      }
    }
  }
  best_ = std::move(best);
  return log;
}

bool SlaSteering::usable(const std::string& peer, const std::string& line) const {
  const auto it = lines_.find(peer + "/" + line);
  return it == lines_.end() || !it->second.outside || it->second.kept_best;
}

const SlaLineState* SlaSteering::state(const std::string& peer, const std::string& line) const {
  const auto it = lines_.find(peer + "/" + line);
  return it == lines_.end() ? nullptr : &it->second;
}

}  // namespace mcgw::lines
