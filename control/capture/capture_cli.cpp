#include "control/capture/capture_cli.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>

#include <nlohmann/json.hpp>

#include "config/text.hpp"
#include "control/api/protocol.hpp"

namespace mcgw::capture {

namespace {

using nlohmann::json;

constexpr size_t kMaxAnswerBytes = 64 * 1024;
volatile std::sig_atomic_t interrupted = 0;

void onSignal(int) {
  interrupted = 1;
}

bool writeAll(int fd, const char* p, size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) {
      continue;
    }
    if (w <= 0) {
      return false;
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

void say(const std::string& s) {
  std::fprintf(stderr, "%s\n", text::escape(s, 2000).c_str());
}

}  // namespace

int runCapture(const std::string& socket_path, const CaptureRequest& r) {
  if (r.output == "-" && ::isatty(STDOUT_FILENO)) {
    say("mcgwctl: -w - writes pcapng to stdout, which is a terminal: pipe it (| tcpdump -r -) or "
        "use -w FILE");
    return 1;
  }
  // Ctrl-C and SIGTERM end the copy (from the start: a signal never kills
  // mcgwctl half-way); the socket closed, mcgwd ends the capture.
  struct sigaction sa {};
  sa.sa_handler = onSignal;
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);
  ::signal(SIGPIPE, SIG_IGN);
  int s = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (socket_path.size() >= sizeof addr.sun_path) {
    say("mcgwctl: socket path too long: " + socket_path);
    return 2;
  }
  std::strncpy(addr.sun_path, socket_path.c_str(), sizeof addr.sun_path - 1);
  if (s < 0 || ::connect(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    say("mcgwctl: mcgwd is not reachable at " + socket_path + ": " + std::strerror(errno));
    if (s >= 0) {
      ::close(s);
    }
    return 2;
  }
  json args = {{"target", r.target}};
  if (!r.filter.empty()) {
    args["filter"] = r.filter;
  }
  if (r.count) {
    args["count"] = r.count;
  }
  if (r.snaplen) {
    args["snaplen"] = r.snaplen;
  }
  const std::string req =
      json{{"version", api::kVersion}, {"command", "capture"}, {"args", args}}.dump() + "\n";
  if (!writeAll(s, req.data(), req.size())) {
    say("mcgwctl: mcgwd closed the connection: " + std::string(std::strerror(errno)));
    ::close(s);
    return 2;
  }
  // The answer line, then the stream.
  std::string buf;
  char chunk[65536];
  size_t nl;
  while ((nl = buf.find('\n')) == std::string::npos) {
    const ssize_t n = ::read(s, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR && !interrupted) {
      continue;
    }
    if (interrupted) {
      say("mcgwctl: interrupted before the capture started");
      ::close(s);
      return 1;
    }
    if (n <= 0 || buf.size() > kMaxAnswerBytes) {
      say("mcgwctl: mcgwd closed the connection without answering (see its log)");
      ::close(s);
      return 2;
    }
    buf.append(chunk, static_cast<size_t>(n));
  }
  const json answer = json::parse(buf.substr(0, nl), nullptr, false);
  if (answer.is_discarded() || !answer.is_object()) {
    say("mcgwctl: mcgwd sent an answer this mcgwctl cannot read");
    ::close(s);
    return 1;
  }
  if (!answer.value("ok", false)) {
    std::string msg = "mcgwctl: refused";
    if (auto e = answer.find("error"); e != answer.end() && e->is_object()) {
      msg = "mcgwctl: " + e->value("message", std::string("refused"));
      if (auto d = e->find("details"); d != e->end() && d->is_array()) {
        for (const auto& x : *d) {
          msg += "\n  " + (x.is_string() ? x.get<std::string>() : x.dump());
        }
      }
    }
    say(msg);
    ::close(s);
    return 1;
  }
  int out = STDOUT_FILENO;
  if (r.output != "-") {
    out = ::open(r.output.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (out < 0) {
      say("mcgwctl: " + r.output + ": " + std::strerror(errno));
      ::close(s);  // mcgwd sees the reader go and ends the capture
      return 1;
    }
  }
  say("capturing on " + answer.value("capturing", r.target) + " (Ctrl-C ends it)");
  uint64_t bytes = buf.size() - nl - 1;
  bool ok = writeAll(out, buf.data() + nl + 1, buf.size() - nl - 1);
  while (ok && !interrupted) {
    const ssize_t n = ::read(s, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      break;  // mcgwd ended the capture (count reached, or it stopped)
    }
    ok = writeAll(out, chunk, static_cast<size_t>(n));
    bytes += static_cast<uint64_t>(n);
  }
  ::close(s);
  if (out != STDOUT_FILENO) {
    ::close(out);
  }
  if (!ok) {
    say("mcgwctl: writing " + r.output + " failed: " + std::strerror(errno));
    return 1;
  }
  if (bytes == 0) {
    say("mcgwctl: the capture ended before it wrote anything (see mcgwd's log)");
    return 1;
  }
  say("capture ended: " + std::to_string(bytes) + " bytes written");
  return 0;
}

}  // namespace mcgw::capture
