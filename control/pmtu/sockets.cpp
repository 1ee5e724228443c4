#include "control/pmtu/sockets.hpp"

#include <arpa/inet.h>
#include <linux/icmp.h>
#include <netinet/icmp6.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>

#ifndef IPV6_FREEBIND
#define IPV6_FREEBIND 78
#endif

namespace mcgw::pmtu {

namespace {

std::string errnoText(const std::string& what) {
  return what + ": " + std::strerror(errno);
}

socklen_t toSockaddr(const config::IpAddress& a, uint16_t port, sockaddr_storage& ss) {
  std::memset(&ss, 0, sizeof ss);
  if (a.family == config::Family::V4) {
    auto* s = reinterpret_cast<sockaddr_in*>(&ss);
    s->sin_family = AF_INET;
    s->sin_port = htons(port);
    std::memcpy(&s->sin_addr, a.bytes.data(), 4);
    return sizeof(sockaddr_in);
  }
  auto* s = reinterpret_cast<sockaddr_in6*>(&ss);
  s->sin6_family = AF_INET6;
  s->sin6_port = htons(port);
  std::memcpy(&s->sin6_addr, a.bytes.data(), 16);
  return sizeof(sockaddr_in6);
}

config::IpAddress fromSockaddr(const sockaddr_storage& ss, uint16_t* port = nullptr) {
  config::IpAddress a;
  if (ss.ss_family == AF_INET) {
    const auto* s = reinterpret_cast<const sockaddr_in*>(&ss);
    std::memcpy(a.bytes.data(), &s->sin_addr, 4);
    if (port) {
      *port = ntohs(s->sin_port);
    }
  } else {
    const auto* s = reinterpret_cast<const sockaddr_in6*>(&ss);
    a.family = config::Family::V6;
    std::memcpy(a.bytes.data(), &s->sin6_addr, 16);
    if (port) {
      *port = ntohs(s->sin6_port);
    }
  }
  return a;
}

proto::Bytes bytes(const std::array<std::byte, 2048>& buf, ssize_t n) {
  return proto::Bytes(buf.data(), static_cast<size_t>(std::min<ssize_t>(n, 2048)));
}

}  // namespace

IcmpListener::IcmpListener() {
  v4_ = Fd(::socket(AF_INET, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_ICMP));
  if (!v4_) {
    errors_.push_back(errnoText("ICMP listener: raw IPv4 ICMP socket"));
  } else {
    icmp_filter f{};
    f.data = ~(1u << ICMP_DEST_UNREACH);  // set bits are blocked
    if (::setsockopt(v4_.get(), SOL_RAW, ICMP_FILTER, &f, sizeof f) < 0) {
      errors_.push_back(errnoText("ICMP listener: ICMP_FILTER"));  // filtered in user space
    }
  }
  v6_ = Fd(::socket(AF_INET6, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_ICMPV6));
  if (!v6_) {
    errors_.push_back(errnoText("ICMP listener: raw ICMPv6 socket"));
  } else {
    icmp6_filter f{};
    ICMP6_FILTER_SETBLOCKALL(&f);
    ICMP6_FILTER_SETPASS(ICMP6_PACKET_TOO_BIG, &f);
    ICMP6_FILTER_SETPASS(ICMP6_DST_UNREACH, &f);  // port unreachable: a refused probe
    if (::setsockopt(v6_.get(), IPPROTO_ICMPV6, ICMP6_FILTER, &f, sizeof f) < 0) {
      errors_.push_back(errnoText("ICMP listener: ICMP6_FILTER"));
    }
  }
}

std::vector<int> IcmpListener::fds() const {
  std::vector<int> out;
  for (const Fd* f : {&v4_, &v6_}) {
    if (*f) {
      out.push_back(f->get());
    }
  }
  return out;
}

void IcmpListener::handle(const IcmpError& icmp, const std::vector<LineAddresses>& lines,
                          uint16_t probe_port, std::vector<Event>& out) {
  switch (icmp.verdict) {
    case IcmpVerdict::kOtherType:
      return;  // other destination-unreachable codes
    case IcmpVerdict::kPortUnreachable:
      if (const LineAddresses* l = matchRefusedProbe(icmp, lines, probe_port)) {
        ++counters_.refused;
        out.push_back({l->key, 0, icmp.from, true, *icmp.quoted_nonce});
      }
      return;  // anything else (host traffic) is not about the path MTU
    case IcmpVerdict::kMalformed:
    case IcmpVerdict::kNotUdp:
      ++counters_.received;
      ++counters_.malformed;
      return;
    case IcmpVerdict::kTooBig:
      break;
  }
  ++counters_.received;
  const LineAddresses* l = matchLine(icmp, lines, probe_port);
  if (!l) {
    ++counters_.not_ours;
    return;
  }
  ++counters_.matched;
  out.push_back({l->key, icmp.mtu, icmp.from, false});
}

void IcmpListener::receive(int fd, const std::vector<LineAddresses>& lines, uint16_t probe_port,
                           std::vector<Event>& out) {
  if (fd < 0 || (fd != v4_.get() && fd != v6_.get())) {
    return;  // not ours (a prober's socket)
  }
  std::array<std::byte, 2048> buf;
  for (int i = 0; i < 256; ++i) {  // bounded: the control loop has other work
    sockaddr_storage from{};
    socklen_t len = sizeof from;
    const ssize_t n =
        ::recvfrom(fd, buf.data(), buf.size(), 0, reinterpret_cast<sockaddr*>(&from), &len);
    if (n < 0) {
      return;  // EAGAIN, or an error the next poll sees again
    }
    if (fd == v4_.get()) {
      handle(parseIcmp4(bytes(buf, n)), lines, probe_port, out);
    } else if (fd == v6_.get()) {
      handle(parseIcmp6(bytes(buf, n), fromSockaddr(from)), lines, probe_port, out);
    }
  }
}

Prober::Socket* Prober::socketFor(const config::IpAddress& local) {
  for (auto& s : sockets_) {
    if (s.local == local) {
      return &s;
    }
  }
  return nullptr;
}

void Prober::configure(const std::vector<Endpoint>& endpoints, uint16_t port) {
  errors_.clear();
  if (port != port_) {
    sockets_.clear();
    port_ = port;
  }
  endpoints_ = endpoints;
  std::erase_if(sockets_, [&](const Socket& s) {
    return std::none_of(endpoints.begin(), endpoints.end(),
                        [&](const Endpoint& e) { return e.local == s.local; });
  });
  for (const auto& e : endpoints) {
    if (socketFor(e.local)) {
      continue;
    }
    const bool v6 = e.local.family == config::Family::V6;
    Fd fd(::socket(v6 ? AF_INET6 : AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    const std::string what =
        "probe socket on " + e.local.toString() + " port " + std::to_string(port);
    if (!fd) {
      errors_.push_back(errnoText(what));
      continue;
    }
    const int one = 1;
    bool ok = ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) == 0;
    if (v6) {
      const int probe = IPV6_PMTUDISC_PROBE;
      ok = ok && ::setsockopt(fd.get(), IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one) == 0 &&
           ::setsockopt(fd.get(), IPPROTO_IPV6, IPV6_FREEBIND, &one, sizeof one) == 0 &&
           ::setsockopt(fd.get(), IPPROTO_IPV6, IPV6_MTU_DISCOVER, &probe, sizeof probe) == 0 &&
           ::setsockopt(fd.get(), IPPROTO_IPV6, IPV6_DONTFRAG, &one, sizeof one) == 0;
    } else {
      const int probe = IP_PMTUDISC_PROBE;
      ok = ok && ::setsockopt(fd.get(), IPPROTO_IP, IP_FREEBIND, &one, sizeof one) == 0 &&
           ::setsockopt(fd.get(), IPPROTO_IP, IP_MTU_DISCOVER, &probe, sizeof probe) == 0;
    }
    if (!ok) {
      errors_.push_back(errnoText(what + ": socket options"));
      continue;
    }
    sockaddr_storage ss;
    const socklen_t len = toSockaddr(e.local, port, ss);
    if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&ss), len) < 0) {
      errors_.push_back(errnoText(what + ": bind"));
      continue;
    }
    sockets_.push_back({e.local, std::move(fd)});
  }
}

std::vector<int> Prober::fds() const {
  std::vector<int> out;
  for (const auto& s : sockets_) {
    out.push_back(s.fd.get());
  }
  return out;
}

bool Prober::send(const std::string& line, uint64_t id, uint16_t size, TimePoint now) {
  auto e = std::find_if(endpoints_.begin(), endpoints_.end(),
                        [&](const Endpoint& x) { return x.line == line; });
  Socket* s = e == endpoints_.end() ? nullptr : socketFor(e->local);
  if (!s) {
    ++counters_.send_errors;
    return false;
  }
  // Forget probes nobody answered within a minute (the tracker gave up long ago).
  std::erase_if(in_flight_,
                [&](const auto& kv) { return now - kv.second.sent > std::chrono::seconds(60); });
  const bool v6 = e->remote.family == config::Family::V6;
  uint64_t nonce = rng_();
  while (in_flight_.count(nonce)) {
    nonce = rng_();
  }
  const auto payload = encodeProbe({false, nonce, size, 0}, probePayloadLength(v6, size));
  sockaddr_storage ss;
  const socklen_t len = toSockaddr(e->remote, port_, ss);
  if (::sendto(s->fd.get(), payload.data(), payload.size(), 0, reinterpret_cast<sockaddr*>(&ss),
               len) < 0) {
    ++counters_.send_errors;
    return false;
  }
  ++counters_.sent;
  in_flight_[nonce] = {id, size, v6, now};
  return true;
}

bool Prober::sendQuality(const std::string& line, uint64_t sequence, uint64_t sent_ns) {
  auto e = std::find_if(endpoints_.begin(), endpoints_.end(),
                        [&](const Endpoint& x) { return x.line == line; });
  Socket* s = e == endpoints_.end() ? nullptr : socketFor(e->local);
  if (!s) {
    ++counters_.quality_send_errors;
    return false;
  }
  const auto payload = encodeQuality({false, sequence, sent_ns});
  sockaddr_storage ss;
  const socklen_t len = toSockaddr(e->remote, port_, ss);
  if (::sendto(s->fd.get(), payload.data(), payload.size(), 0, reinterpret_cast<sockaddr*>(&ss),
               len) < 0) {
    ++counters_.quality_send_errors;
    return false;
  }
  ++counters_.quality_sent;
  return true;
}

// A quality request is answered when it comes from a line's remote VTEP to
// that line's local VTEP (like a path MTU probe), with a reply of the same
// length; a reply goes to the estimator under its line.
void Prober::onQuality(int fd, const Socket& s, proto::Bytes payload, const sockaddr_storage& from,
                       unsigned from_length, std::vector<QualityReply>& out) {
  auto m = decodeQuality(payload);
  if (!m) {
    ++counters_.malformed;
    return;
  }
  const config::IpAddress sender = fromSockaddr(from);
  auto e = std::find_if(endpoints_.begin(), endpoints_.end(), [&](const Endpoint& x) {
    return x.local == s.local && x.remote == sender;
  });
  if (!m->reply) {
    if (e == endpoints_.end()) {
      ++counters_.requests_refused;
      return;
    }
    const auto reply = encodeQuality({true, m->sequence, m->sent_ns});
    if (::sendto(fd, reply.data(), reply.size(), 0, reinterpret_cast<const sockaddr*>(&from),
                 from_length) == static_cast<ssize_t>(reply.size())) {
      ++counters_.quality_requests_answered;
    }
    return;
  }
  if (e == endpoints_.end()) {
    ++counters_.quality_replies_unmatched;
    return;
  }
  ++counters_.quality_replies;
  out.push_back({e->line, m->sequence, m->sent_ns});
}

void Prober::receive(int fd, std::vector<uint64_t>& answered, std::vector<QualityReply>& quality,
                     TimePoint) {
  auto s = std::find_if(sockets_.begin(), sockets_.end(),
                        [&](const Socket& x) { return x.fd.get() == fd; });
  if (s == sockets_.end()) {
    return;
  }
  std::array<std::byte, 2048> buf;
  for (int i = 0; i < 256; ++i) {
    sockaddr_storage from{};
    socklen_t len = sizeof from;
    // MSG_TRUNC: the real length of a request larger than the buffer.
    const ssize_t n =
        ::recvfrom(fd, buf.data(), buf.size(), MSG_TRUNC, reinterpret_cast<sockaddr*>(&from), &len);
    if (n < 0) {
      return;
    }
    if (const uint8_t type = probeType(bytes(buf, n));
        type == kQualityRequest || type == kQualityReply) {
      onQuality(fd, *s, bytes(buf, n), from, len, quality);
      continue;
    }
    auto m = decodeProbe(bytes(buf, n));
    if (!m) {
      ++counters_.malformed;
      continue;
    }
    uint16_t from_port = 0;
    const config::IpAddress sender = fromSockaddr(from, &from_port);
    if (!m->reply) {
      const bool known = std::any_of(endpoints_.begin(), endpoints_.end(), [&](const Endpoint& e) {
        return e.local == s->local && e.remote == sender;
      });
      if (!known) {
        ++counters_.requests_refused;
        continue;
      }
      // The reply is smaller than the request: no amplification.
      const auto reply = encodeProbe(
          {true, m->nonce, m->size, static_cast<uint16_t>(std::min<ssize_t>(n, 65535))}, 0);
      if (::sendto(fd, reply.data(), reply.size(), 0, reinterpret_cast<sockaddr*>(&from), len) ==
          static_cast<ssize_t>(reply.size())) {
        ++counters_.requests_answered;
      }
      continue;
    }
    auto it = in_flight_.find(m->nonce);
    if (it == in_flight_.end() || m->size != it->second.size ||
        m->received != probePayloadLength(it->second.ipv6, it->second.size)) {
      ++counters_.replies_unmatched;
      continue;
    }
    ++counters_.replies;
    answered.push_back(it->second.id);
    in_flight_.erase(it);
  }
}

}  // namespace mcgw::pmtu
