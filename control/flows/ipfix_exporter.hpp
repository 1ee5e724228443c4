// IPFIX export (RFC 7011) of flow records over UDP to one collector.
// libfixbuf (CERT NetSA's IPFIX library, Debian's libfixbuf-dev) only
// encodes: it keeps the templates and the sequence numbers and writes each
// message into a buffer (fbExporterAllocBuffer); the exporter sends the
// message from its own non-blocking, connect()ed UDP socket, so that every
// send error is seen with its errno (libfixbuf's own UDP writer warns once
// per process, re-sends, and afterwards reports success on errors).
//
// Two templates (docs/monitoring.md lists their elements): 256 for IPv4
// flows, 257 for IPv6 flows.  Templates go out before the first records,
// again on every sendTemplates() (the caller's timer: RFC 7011 8.4 and
// 10.3.6, over UDP templates are resent periodically) and again after a
// failure.
//
// No exception leaves it.  A message that cannot be sent (ECONNREFUSED:
// the collector's host refused an earlier datagram; ENOBUFS, EAGAIN,
// ENETUNREACH, ...) is an error (counted, the last one kept); its records
// and the rest of the batch are lost (counted), nothing stays buffered,
// and the collector is not tried again for kBackoff (records handed over
// meanwhile are lost, counted).  The next message starts with the
// templates.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "config/config.hpp"
#include "config/result.hpp"
#include "control/flows/flow_table.hpp"

struct _GError;  // GLib's GError (libfixbuf reports errors with it)

namespace mcgw::flows {

inline constexpr uint16_t kTemplateIpv4 = 256;
inline constexpr uint16_t kTemplateIpv6 = 257;
// The largest message (UDP payload): fits a 1500-byte path over IPv6 with
// room for a tunnel, so a message is never an IP fragment.
inline constexpr uint16_t kMaxMessage = 1400;
// How long a collector is left alone after a failed send.
inline constexpr std::chrono::milliseconds kBackoff{1000};

// A record as exported: the flow and what names its tenant and line.
struct ExportFlow {
  FlowRecord flow;
  uint32_t vrf = 0;  // ingressVRFID: the tenant's VNI
};

struct ExporterStats {
  uint64_t records = 0;    // data records sent
  uint64_t templates = 0;  // template sets sent (start, refreshes, after failures)
  uint64_t errors = 0;     // messages that could not be sent (socket errors, ...)
  uint64_t lost = 0;       // records not sent (failed message, rest of its batch, back-off)
  std::string last_error;
};

class IpfixExporter {
 public:
  using Clock = std::chrono::steady_clock;

  // An exporter to collector (the socket opens with the first message).
  static Result<std::unique_ptr<IpfixExporter>, std::string> open(
      const config::FlowCollector& collector, uint32_t observation_domain);
  ~IpfixExporter();
  IpfixExporter(const IpfixExporter&) = delete;
  IpfixExporter& operator=(const IpfixExporter&) = delete;

  // Sends the templates now (not while backing off: they stay due).
  // false: not sent (an error, counted, or backing off).
  bool sendTemplates(Clock::time_point now = Clock::now());
  // Sends the records (as many messages as they need, the templates first
  // when due).  false: some were lost (counted): a message failed, and
  // the rest of the batch with it, or the collector is backing off.
  bool send(std::span<const ExportFlow> flows, Clock::time_point now = Clock::now());

  const config::FlowCollector& collector() const { return collector_; }
  const ExporterStats& stats() const { return stats_; }
  bool backingOff(Clock::time_point now = Clock::now()) const { return now < retry_at_; }

 private:
  struct Fixbuf;
  explicit IpfixExporter(const config::FlowCollector& c, uint32_t domain);
  bool append(const ExportFlow& x, _GError** err);
  // Sends the message in libfixbuf's buffer, if any.
  bool emit(const char* what, size_t records, Clock::time_point now);
  bool message(std::span<const ExportFlow> flows, size_t* taken, Clock::time_point now);
  bool connectSocket();
  void failed(const char* what, const std::string& why, Clock::time_point now);
  // A new libfixbuf buffer (at the start, and after a libfixbuf error:
  // nothing stays in it).
  bool rebuild(std::string* error);

  config::FlowCollector collector_;
  uint32_t domain_ = 0;
  std::unique_ptr<Fixbuf> fb_;
  int fd_ = -1;
  uint32_t sequence_ = 0;  // data records sent (RFC 7011 3.1)
  bool templates_due_ = true;
  Clock::time_point retry_at_{};
  ExporterStats stats_;
};

// The interface numbers exported for a line: its counter slot + 1 (0: none,
// engine::kNoLine: a packet from a LAN port the policy denied).
inline uint32_t lineInterface(uint16_t line_slot) {
  return line_slot == engine::kNoLine ? 0 : uint32_t{line_slot} + 1;
}

}  // namespace mcgw::flows
