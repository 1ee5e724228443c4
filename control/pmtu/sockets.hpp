// The kernel side of path MTU discovery: a raw-socket ICMP listener and the
// UDP prober / responder.  Sockets are non-blocking; the daemon polls their
// fds and calls receive() when one is readable.
#pragma once

#include <sys/socket.h>
#include <cstdint>

#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "config/net.hpp"
#include "control/core/fd.hpp"
#include "control/pmtu/probe_codec.hpp"
#include "control/pmtu/tracker.hpp"

namespace mcgw::pmtu {

using core::Fd;

// Raw IPPROTO_ICMP (filtered to destination-unreachable) and IPPROTO_ICMPV6
// (ICMP6_FILTER: Packet Too Big and destination unreachable only) sockets:
// the kernel gives each a copy of the ICMP errors underlay routers (and the
// peers' kernels) send to our VTEP addresses.
class IcmpListener {
 public:
  // A frag-needed / PTB for a line (mtu), or a port unreachable with which
  // the line's peer refused a probe (refused).
  struct Event {
    std::string line;
    uint32_t mtu = 0;
    config::IpAddress from;
    bool refused = false;
    uint64_t nonce = 0;  // refused: the probe's, to check against those in flight
  };
  struct Counters {
    uint64_t received = 0;   // frag-needed / PTB messages
    uint64_t matched = 0;    // quoting one of our outer packets or probes
    uint64_t not_ours = 0;   // quoting something else (host traffic, other tunnels)
    uint64_t malformed = 0;  // truncated, or quoting something that is not UDP
    uint64_t refused = 0;    // port unreachable from a peer quoting our probe
  };

  // Opens both sockets; errors (no CAP_NET_RAW, no IPv6) are kept in errors().
  IcmpListener();
  std::vector<int> fds() const;
  // Drains fd; events for the lines matched.
  void receive(int fd, const std::vector<LineAddresses>& lines, uint16_t probe_port,
               std::vector<Event>& out);
  const Counters& counters() const { return counters_; }
  const std::vector<std::string>& errors() const { return errors_; }

 private:
  void handle(const IcmpError& icmp, const std::vector<LineAddresses>& lines, uint16_t probe_port,
              std::vector<Event>& out);
  Fd v4_, v6_;
  Counters counters_;
  std::vector<std::string> errors_;
};

// One UDP socket per local VTEP address, bound to it at the probe port
// (IP_FREEBIND: the address may reach its interface later): it sends the
// line's probes with DF set and the kernel's own path MTU cache ignored
// (IP_PMTUDISC_PROBE / IPV6_PMTUDISC_PROBE + IPV6_DONTFRAG), answers the
// requests of the lines' remote VTEPs and takes the replies; the same for
// line quality probes (types 3 and 4), which it answers whenever it listens.
class Prober {
 public:
  struct Endpoint {
    std::string line;
    config::IpAddress local;
    config::IpAddress remote;
  };
  struct Counters {
    uint64_t sent = 0;
    uint64_t send_errors = 0;        // EMSGSIZE (larger than the interface), no route, ...
    uint64_t replies = 0;            // matched to a probe in flight
    uint64_t replies_unmatched = 0;  // late, unknown nonce, or cut short
    uint64_t requests_answered = 0;  // the peer's probes we answered
    uint64_t requests_refused = 0;   // from an address that is no line's remote VTEP
    uint64_t malformed = 0;          // not a probe, or an unknown type or version
    // Line quality probes (types 3 and 4).
    uint64_t quality_sent = 0;
    uint64_t quality_send_errors = 0;
    uint64_t quality_replies = 0;            // from a line's remote VTEP (to the estimator)
    uint64_t quality_replies_unmatched = 0;  // from an address that is no line's remote VTEP
    uint64_t quality_requests_answered = 0;  // the peers' quality probes we answered
  };
  // A quality reply from a line's remote VTEP, for the estimator.
  struct QualityReply {
    std::string line;
    uint64_t sequence = 0;
    uint64_t sent_ns = 0;
  };

  // Opens sockets for new local addresses, closes those no line uses; a new
  // port reopens all.
  void configure(const std::vector<Endpoint>& endpoints, uint16_t port);
  std::vector<int> fds() const;
  // Sends line's probe `id`: an IP packet of `size` bytes.  False when the
  // kernel refused it (counted; the probe then simply goes unanswered).
  bool send(const std::string& line, uint64_t id, uint16_t size, TimePoint now);
  // Sends line's quality probe (kQualityLength bytes).  False when the kernel
  // refused it (counted; the probe then goes unanswered).
  bool sendQuality(const std::string& line, uint64_t sequence, uint64_t sent_ns);
  // Drains fd: answers requests, and appends the ids of answered probes
  // and the quality replies.
  void receive(int fd, std::vector<uint64_t>& answered, std::vector<QualityReply>& quality,
               TimePoint now);
  void receive(int fd, std::vector<uint64_t>& answered, TimePoint now) {
    std::vector<QualityReply> quality;
    receive(fd, answered, quality, now);
  }
  // Whether a probe with this nonce was sent and is not yet answered or expired.
  bool inFlight(uint64_t nonce) const { return in_flight_.count(nonce) > 0; }
  const Counters& counters() const { return counters_; }
  const std::vector<std::string>& errors() const { return errors_; }

 private:
  struct Socket {
    config::IpAddress local;
    Fd fd;
  };
  struct InFlight {
    uint64_t id;
    uint16_t size;
    bool ipv6;
    TimePoint sent;
  };
  Socket* socketFor(const config::IpAddress& local);
  void onQuality(int fd, const Socket& s, proto::Bytes payload, const sockaddr_storage& from,
                 unsigned from_length, std::vector<QualityReply>& out);
  uint16_t port_ = 0;
  std::vector<Endpoint> endpoints_;
  std::vector<Socket> sockets_;
  std::map<uint64_t, InFlight> in_flight_;  // by nonce
  std::mt19937_64 rng_{std::random_device{}()};
  Counters counters_;
  std::vector<std::string> errors_;
};

}  // namespace mcgw::pmtu
