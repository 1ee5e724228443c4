// Wire formats of path MTU discovery, pure functions over byte spans:
//
// The probe (UDP, to the peer gateway's probe-port; payload, big-endian):
//   | "MCGWPROBE" (9) | version = 1 (1) | type: 1 request, 2 reply (1) | 0 (1) |
//   | nonce (8) | size (2): the request's IP packet size | received (2) | zero padding |
// A request is padded so that its IP packet is exactly `size` bytes; a reply
// is the 24-byte head alone, with `received` = the request's UDP payload
// length as it arrived (the sender checks nothing was cut).
//
// Line quality probes (same port, same head; docs/architecture.md, "Line
// quality"), 32 bytes each way:
//   | "MCGWPROBE" (9) | version = 1 (1) | type: 3 request, 4 reply (1) | 0 (1) |
//   | sequence (8) | sent (8): the sender's CLOCK_MONOTONIC in ns | 0 (4) |
// A reply echoes the request's sequence and send time; only the sender's
// clock is ever read.  Responders older than types 3 and 4 count them as
// malformed and do not answer.
//
// ICMP errors about our outer packets and probes: IPv4 type 3 code 4
// (frag-needed, RFC 1191) and ICMPv6 type 2 (Packet Too Big, RFC 8201),
// which report a path MTU, and port unreachable (IPv4 type 3 code 3, ICMPv6
// type 1 code 4), with which a peer's kernel refuses a probe when no
// responder listens on the probe port; with the quoted packet's addresses and
// UDP ports.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "config/net.hpp"
#include "dataplane/proto/bytes.hpp"

namespace mcgw::pmtu {

inline constexpr size_t kProbeHeadLength = 24;
inline constexpr uint8_t kProbeVersion = 1;

struct ProbeMessage {
  bool reply = false;
  uint64_t nonce = 0;
  uint16_t size = 0;      // the request's IP packet size
  uint16_t received = 0;  // reply: the request's UDP payload length on arrival
};

// The UDP payload of a probe (a request padded to `payload_length`, at least
// the head).
std::vector<std::byte> encodeProbe(const ProbeMessage& m, size_t payload_length);
std::optional<ProbeMessage> decodeProbe(proto::Bytes udp_payload);
// The message type of a probe payload (byte 10) when it has the head's magic
// and version, else 0.
uint8_t probeType(proto::Bytes udp_payload);

inline constexpr size_t kQualityLength = 32;
inline constexpr uint8_t kQualityRequest = 3;
inline constexpr uint8_t kQualityReply = 4;

struct QualityMessage {
  bool reply = false;
  uint64_t sequence = 0;
  uint64_t sent_ns = 0;  // the requester's CLOCK_MONOTONIC when it sent the request
  bool operator==(const QualityMessage&) const = default;
};

// Always kQualityLength bytes.
std::vector<std::byte> encodeQuality(const QualityMessage& m);
// Null unless a type 3 or 4 message of at least kQualityLength bytes (more
// is ignored).
std::optional<QualityMessage> decodeQuality(proto::Bytes udp_payload);

// The UDP payload length that makes an IP packet of `size` bytes.
constexpr size_t probePayloadLength(bool ipv6, uint16_t size) {
  const size_t headers = (ipv6 ? 40 : 20) + 8;
  return size > headers + kProbeHeadLength ? size - headers : kProbeHeadLength;
}

enum class IcmpVerdict : uint8_t {
  kTooBig,           // parsed: a frag-needed / PTB
  kPortUnreachable,  // parsed: a port unreachable
  kOtherType,        // another ICMP type or code
  kMalformed,        // truncated or not parseable
  kNotUdp,           // the quoted packet is not UDP (or has IPv6 extension headers)
};

struct IcmpError {
  IcmpVerdict verdict = IcmpVerdict::kMalformed;
  uint32_t mtu = 0;              // kTooBig: the reported MTU
  config::IpAddress from;        // the reporting router or host
  config::IpAddress quoted_src;  // the quoted (our outer) packet
  config::IpAddress quoted_dst;
  uint16_t quoted_dport = 0;
  uint16_t quoted_sport = 0;
  uint32_t quoted_length = 0;  // the quoted packet's IP length (the one that did not fit)
  // The quoted packet is one of our probe requests (its head is quoted):
  // its nonce.  A port unreachable counts only with this.
  std::optional<uint64_t> quoted_nonce;
};

// What a raw IPPROTO_ICMP socket reads: the IPv4 header, then the ICMP message.
IcmpError parseIcmp4(proto::Bytes ip_packet);
// What a raw IPPROTO_ICMPV6 socket reads: the ICMPv6 message (the sender from recvfrom).
IcmpError parseIcmp6(proto::Bytes icmp_message, const config::IpAddress& from);

// A line as ICMP matching sees it.
struct LineAddresses {
  std::string key;  // "peer/line"
  config::IpAddress local;
  config::IpAddress remote;
  uint16_t tunnel_port = 4789;  // 4789 VXLAN, 6081 Geneve
};

// The line whose outer packet (or probe) a frag-needed / PTB quotes: quoted
// source = its local VTEP, destination = its remote VTEP, UDP destination
// port = its tunnel port or the probe port.  Null when none.
const LineAddresses* matchLine(const IcmpError& icmp, const std::vector<LineAddresses>& lines,
                               uint16_t probe_port);
// The line whose probe a port unreachable refuses: sent by the line's remote
// VTEP, quoting a probe request (with its nonce) from its local VTEP to its
// remote VTEP's probe port.  Null when none.  The caller checks that the
// nonce is one of the probes in flight: a forged message cannot end rounds.
const LineAddresses* matchRefusedProbe(const IcmpError& icmp,
                                       const std::vector<LineAddresses>& lines,
                                       uint16_t probe_port);

}  // namespace mcgw::pmtu
