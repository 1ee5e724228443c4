#include "control/pmtu/quality.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>

namespace mcgw::pmtu {

namespace {

// How often poll() recomputes the views.
constexpr std::chrono::milliseconds kViewPeriod{100};

double ms(Clock::duration d) {
  return std::chrono::duration<double, std::milli>(d).count();
}

}  // namespace

const char* toString(QualityState s) {
  switch (s) {
    case QualityState::kStarting:
      return "starting";
    case QualityState::kOk:
      return "ok";
    case QualityState::kNoAnswer:
      return "no answer";
  }
  return "unknown";
}

uint64_t toWireTime(TimePoint t) {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count());
}

QualityEstimator::QualityEstimator(QualitySettings s) : settings_(s) {}

size_t QualityEstimator::ringCapacity(std::chrono::milliseconds interval) {
  const auto i = std::max(interval, kQualityMinInterval);
  const auto span = std::chrono::duration_cast<std::chrono::milliseconds>(kQualityWindows.back()) +
                    kQualityTimeout;
  return static_cast<size_t>((span.count() + i.count() - 1) / i.count()) + 1;
}

QualityEstimator::Line QualityEstimator::fresh(TimePoint now) const {
  Line l;
  l.ring.resize(ringCapacity(settings_.interval));
  l.started = now;
  l.next_send = now + kQualityDiscoveryInterval;
  l.view.at = now;
  l.view.interval = settings_.interval;
  return l;
}

void QualityEstimator::setSettings(const QualitySettings& s, TimePoint now) {
  if (s == settings_) {
    return;
  }
  settings_ = s;
  std::vector<std::string> keys = lines();
  lines_.clear();
  setLines(keys, now);
}

void QualityEstimator::setLines(const std::vector<std::string>& keys, TimePoint now) {
  if (settings_.interval.count() <= 0) {
    lines_.clear();
    return;
  }
  std::erase_if(lines_, [&](const auto& kv) {
    return std::find(keys.begin(), keys.end(), kv.first) == keys.end();
  });
  for (const auto& k : keys) {
    if (!lines_.count(k)) {
      lines_.emplace(k, fresh(now));
    }
  }
}

std::vector<std::string> QualityEstimator::lines() const {
  std::vector<std::string> out;
  for (const auto& [k, l] : lines_) {
    out.push_back(k);
  }
  return out;
}

bool QualityEstimator::quiet(const Line& l, TimePoint now) const {
  return !l.responder || now - l.last_answer >= kQualityQuietAfter;
}

// The peer answers: the next probe goes out an interval after the last one.
void QualityEstimator::found(Line& l, TimePoint now) const {
  if (!l.responder) {
    l.responder = true;
    l.next_send = std::min(l.next_send, l.last_sent + settings_.interval);
  }
  l.last_answer = now;
}

void QualityEstimator::onPeerAnswers(const std::string& line, TimePoint now) {
  auto it = lines_.find(line);
  if (it != lines_.end() && !it->second.responder) {
    found(it->second, now);
  }
}

// Probes whose timeout has expired: the unanswered ones are lost.
void QualityEstimator::settle(Line& l, TimePoint now) {
  while (l.settled < l.next_sequence) {
    const Slot& s = l.ring[l.settled % l.ring.size()];
    if (s.sequence == l.settled) {
      if (now - s.sent < kQualityTimeout) {
        break;
      }
      l.ever_settled = true;
      if (!s.answered) {
        ++l.counters.lost;
      }
    }
    ++l.settled;
  }
}

std::vector<QualityProbe> QualityEstimator::poll(TimePoint now) {
  std::vector<QualityProbe> out;
  const bool views = now >= next_views_;
  if (views) {
    next_views_ = now + kViewPeriod;
  }
  for (auto& [key, l] : lines_) {
    settle(l, now);
    if (now >= l.next_send) {
      const uint64_t seq = l.next_sequence++;
      l.ring[seq % l.ring.size()] = {seq, now, {}, false};
      ++l.counters.sent;
      out.push_back({key, seq, toWireTime(now)});
      l.last_sent = now;
      // A line whose peer has not answered yet is asked every 5 s, a quiet
      // one every second; a poll that came late does not make a burst.
      const auto step = std::max(settings_.interval, !l.responder    ? kQualityDiscoveryInterval
                                                     : quiet(l, now) ? kQualityQuietInterval
                                                                     : settings_.interval);
      l.next_send += step;
      if (l.next_send <= now) {
        l.next_send = now + step;
      }
    }
    if (views) {
      l.view = computeLine(l, now);
    }
  }
  return out;
}

QualityEstimator::Reply QualityEstimator::onReply(const std::string& line, uint64_t sequence,
                                                  uint64_t sent_ns, TimePoint now) {
  auto it = lines_.find(line);
  if (it == lines_.end()) {
    return Reply::kUnknown;  // a line no longer probed
  }
  Line& l = it->second;
  Slot* s = sequence == 0 ? nullptr : &l.ring[sequence % l.ring.size()];
  if (!s || s->sequence != sequence || toWireTime(s->sent) != sent_ns) {
    ++l.counters.unknown;
    return Reply::kUnknown;
  }
  if (s->answered) {
    ++l.counters.duplicate;
    return Reply::kDuplicate;
  }
  if (now - s->sent >= kQualityTimeout) {
    ++l.counters.late;
    return Reply::kLate;
  }
  s->answered = true;
  s->rtt = now - s->sent;
  found(l, now);
  l.ever_answered = true;
  ++l.counters.answered;
  return Reply::kAnswered;
}

const QualityView* QualityEstimator::view(const std::string& line) const {
  auto it = lines_.find(line);
  return it == lines_.end() ? nullptr : &it->second.view;
}

QualityView QualityEstimator::compute(const std::string& line, TimePoint now) const {
  auto it = lines_.find(line);
  return it == lines_.end() ? QualityView{} : computeLine(it->second, now);
}

QualityView QualityEstimator::computeLine(const Line& l, TimePoint now) const {
  QualityView v;
  v.at = now;
  v.interval = settings_.interval;
  v.counters = l.counters;
  v.peer_responds = l.responder;
  v.state = l.ever_answered && !quiet(l, now)   ? QualityState::kOk
            : l.ever_answered || l.ever_settled ? QualityState::kNoAnswer
                                                : QualityState::kStarting;
  for (size_t w = 0; w < kQualityWindows.size(); ++w) {
    QualityWindow& out = w == 0 ? v.window10s : v.window60s;
    const auto from = now - kQualityWindows[w];  // exclusive
    double sum = 0, jitter = 0;
    bool have_prev = false;
    Clock::duration prev{};
    const uint64_t first =
        l.next_sequence > l.ring.size() ? l.next_sequence - l.ring.size() : uint64_t{1};
    for (uint64_t seq = first; seq < l.next_sequence; ++seq) {
      const Slot& s = l.ring[seq % l.ring.size()];
      if (s.sequence != seq) {
        continue;
      }
      const auto deadline = s.sent + kQualityTimeout;
      if (deadline > from && deadline <= now) {
        ++out.probes;
        out.lost += !s.answered;
      }
      if (!s.answered || s.sent <= from || s.sent > now) {
        continue;
      }
      const double rtt = ms(s.rtt);
      if (out.rtt_samples == 0) {
        out.rtt_ms_min = out.rtt_ms_max = rtt;
      }
      out.rtt_ms_min = std::min(out.rtt_ms_min, rtt);
      out.rtt_ms_max = std::max(out.rtt_ms_max, rtt);
      out.rtt_ms_last = rtt;
      sum += rtt;
      ++out.rtt_samples;
      if (have_prev) {
        jitter += std::abs(ms(s.rtt - prev));
        ++out.jitter_samples;
      }
      prev = s.rtt;
      have_prev = true;
    }
    if (out.probes) {
      out.loss_ratio = static_cast<double>(out.lost) / out.probes;
    }
    if (out.rtt_samples) {
      out.rtt_ms_mean = sum / out.rtt_samples;
    }
    if (out.jitter_samples) {
      out.jitter_ms = jitter / out.jitter_samples;
    }
  }
  return v;
}

}  // namespace mcgw::pmtu
