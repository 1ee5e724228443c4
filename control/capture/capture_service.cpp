#include "control/capture/capture_service.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <spdlog/spdlog.h>

#include "config/text.hpp"

namespace mcgw::capture {

using nlohmann::json;

namespace {

constexpr auto kCheckPeriod = std::chrono::milliseconds(100);
constexpr size_t kMaxTargetBytes = 128;
constexpr uint64_t kMaxCount = 1000000000;

bool writeAll(int fd, const std::string& s) {
  size_t off = 0;
  while (off < s.size()) {
    const ssize_t n = ::write(fd, s.data() + off, s.size() - off);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      return false;
    }
    off += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

CaptureService::CaptureService(config::ConfigPtr config, engine::Dataplane& dataplane)
    : config_(std::move(config)), dataplane_(dataplane) {}

CaptureService::~CaptureService() {
  if (session_) {
    finish("mcgwd stopped");
  }
}

void CaptureService::attach(core::EventLoop& loop) {
  check_ = loop.every(kCheckPeriod, "capture end", [this] {
    if (session_ && session_->stats().done) {
      finish(session_->stats().end_reason);
    }
  });
}

Result<Planned, std::string> CaptureService::plan(const json& args) const {
  if (session_ && !session_->stats().done) {
    return unexpected("a capture is running (" + current_.what + "); one at a time");
  }
  if (!args.is_object()) {
    return unexpected(std::string("capture takes an object of arguments"));
  }
  for (const auto& [key, _] : args.items()) {
    if (key != "target" && key != "filter" && key != "count" && key != "snaplen") {
      return unexpected("capture: unknown argument " + text::quote(key));
    }
  }
  Planned p;
  if (!args.contains("target") || !args["target"].is_string()) {
    return unexpected(
        std::string("capture needs a target: a port, a line (PEER/LINE) or a tenant"));
  }
  p.target = args["target"].get<std::string>();
  if (p.target.empty() || p.target.size() > kMaxTargetBytes) {
    return unexpected("capture: the target must have 1 to " + std::to_string(kMaxTargetBytes) +
                      " bytes");
  }
  if (args.contains("filter")) {
    if (!args["filter"].is_string()) {
      return unexpected(std::string("capture: filter must be a string"));
    }
    p.user_filter = args["filter"].get<std::string>();
  }
  if (args.contains("count")) {
    if (!args["count"].is_number_unsigned() || args["count"].get<uint64_t>() > kMaxCount) {
      return unexpected("capture: count must be from 0 to " + std::to_string(kMaxCount));
    }
    p.spec.count = args["count"].get<uint64_t>();
  }
  if (args.contains("snaplen")) {
    if (!args["snaplen"].is_number_unsigned() ||
        args["snaplen"].get<uint64_t>() < engine::kCaptureSnaplenMin ||
        args["snaplen"].get<uint64_t>() > engine::kCaptureSnaplenMax) {
      return unexpected("capture: snaplen must be from " +
                        std::to_string(engine::kCaptureSnaplenMin) + " to " +
                        std::to_string(engine::kCaptureSnaplenMax));
    }
    p.spec.snaplen = args["snaplen"].get<uint32_t>();
  }

  const engine::ForwardingTables* t = dataplane_.tables();
  std::string line_filter;
  // A port (its kernel-side TAP is not a target of its own).
  for (uint16_t i = 0; i < engine::kMaxPorts && p.spec.ports.empty(); ++i) {
    if (t->ports[i].present && !t->ports[i].tap && t->ports[i].name == p.target) {
      p.spec.ports.push_back(i);
      p.port_names.push_back(p.target);
      p.what = "port " + p.target;
    }
  }
  // A line: PEER/LINE, or LINE when one peer alone has it.
  if (p.spec.ports.empty()) {
    const engine::LineEntry* found = nullptr;
    unsigned by_name = 0;
    for (const auto& l : t->lines) {
      if (l.peer + "/" + l.name == p.target) {
        found = &l;
        by_name = 1;
        break;
      }
      if (l.name == p.target) {
        found = &l;
        ++by_name;
      }
    }
    if (by_name > 1) {
      return unexpected("capture: line " + text::quote(p.target) +
                        " belongs to several peers; name it PEER/LINE");
    }
    if (found) {
      const config::PeerConfig* peer = config_->findPeer(found->peer);
      const config::LineConfig* lc = nullptr;
      if (peer) {
        for (const auto& x : peer->lines) {
          if (x.name == found->name) {
            lc = &x;
          }
        }
      }
      if (!lc || found->port >= engine::kMaxPorts || !t->ports[found->port].present) {
        return unexpected("capture: line " + text::quote(p.target) + " has no open port");
      }
      p.spec.ports.push_back(found->port);
      p.port_names.push_back(t->ports[found->port].name);
      line_filter =
          "udp and host " + lc->local_vtep.toString() + " and host " + lc->remote_vtep.toString();
      p.what =
          "line " + found->peer + "/" + found->name + " (port " + t->ports[found->port].name + ")";
    }
  }
  // A tenant: its LAN ports.
  if (p.spec.ports.empty()) {
    for (uint16_t ti = 0; ti < t->tenants.size(); ++ti) {
      if (t->tenants[ti].name != p.target) {
        continue;
      }
      for (uint16_t i = 0; i < engine::kMaxPorts; ++i) {
        if (t->ports[i].present && !t->ports[i].tap && t->ports[i].lan &&
            t->ports[i].tenant == ti) {
          p.spec.ports.push_back(i);
          p.port_names.push_back(t->ports[i].name);
        }
      }
      if (p.spec.ports.empty()) {
        return unexpected("capture: tenant " + text::quote(p.target) + " has no LAN port");
      }
      std::string names;
      for (const auto& n : p.port_names) {
        names += (names.empty() ? "" : ", ") + n;
      }
      p.what = "tenant " + p.target + " (" + names + ")";
    }
  }
  if (p.spec.ports.empty()) {
    return unexpected("capture: " + text::quote(p.target) +
                      " is no port, line (PEER/LINE) or tenant of this gateway");
  }
  p.spec.filter = line_filter.empty()     ? p.user_filter
                  : p.user_filter.empty() ? line_filter
                                          : "(" + line_filter + ") and (" + p.user_filter + ")";
  if (auto r = engine::checkCaptureFilter(p.spec.filter, p.spec.snaplen); !r) {
    return unexpected("capture: " + r.error());
  }
  return p;
}

void CaptureService::start(Planned p, int fd, const std::string& ok_line,
                           const std::function<std::string(const std::string&)>& error_line) {
  if (session_) {
    finish(session_->stats().end_reason);  // ended, not yet reaped by the check
  }
  // What can fail does before the client is told it runs.
  auto s = engine::CaptureSession::create(p.spec, [this] { dataplane_.synchronize(); });
  if (!s) {
    spdlog::error("capture on {}: {}", p.what, s.error());
    writeAll(fd, error_line(s.error()));
    ::close(fd);
    return;
  }
  if (!writeAll(fd, ok_line)) {
    spdlog::warn("capture on {}: the client went away before it started", p.what);
    ::close(fd);
    return;
  }
  if (auto r = (*s)->begin(fd); !r) {
    spdlog::error("capture on {}: {}", p.what, r.error());
    return;  // the session closes fd: the client sees the stream end at once
  }
  session_ = std::move(*s);
  current_ = std::move(p);
  ++sessions_;
  spdlog::info("capture on {} started (filter {}, count {}, snaplen {})", current_.what,
               current_.spec.filter.empty() ? "none" : text::quote(current_.spec.filter),
               current_.spec.count, current_.spec.snaplen);
}

void CaptureService::finish(const std::string& why) {
  session_->halt();  // the writer joined, the callbacks off: the figures are final
  const engine::CaptureStats st = session_->stats();
  session_.reset();  // the file completed and closed
  total_written_ += st.written;
  total_dropped_ += st.dropped;
  last_end_ = why;
  spdlog::info("capture on {} ended: {}; {} packet(s) written, {} matched, {} dropped",
               current_.what, why, st.written, st.matched, st.dropped);
}

json CaptureService::view() const {
  json j = {{"active", session_ != nullptr},
            {"sessions", sessions_},
            {"written", total_written_},
            {"dropped", total_dropped_},
            {"last_end", last_end_.empty() ? json(nullptr) : json(last_end_)}};
  if (session_) {
    const engine::CaptureStats st = session_->stats();
    j["current"] = {{"target", current_.target},
                    {"what", current_.what},
                    {"filter", current_.spec.filter},
                    {"count", current_.spec.count},
                    {"snaplen", current_.spec.snaplen},
                    {"matched", st.matched},
                    {"written", st.written},
                    {"dropped", st.dropped}};
    j["written"] = total_written_ + st.written;
    j["dropped"] = total_dropped_ + st.dropped;
  }
  return j;
}

Result<bool, std::string> CaptureService::prepare(const daemon::ReloadPlan& plan) {
  next_ = plan.next;
  if (!session_) {
    return true;
  }
  for (const auto& name : current_.port_names) {
    for (const auto* list : {&plan.close, &plan.reopen}) {
      if (std::find(list->begin(), list->end(), name) != list->end()) {
        finish("the reload closes port " + name);
        return true;
      }
    }
  }
  return true;
}

void CaptureService::apply() {
  config_ = std::move(next_);
}

}  // namespace mcgw::capture
