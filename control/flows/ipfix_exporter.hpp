// IPFIX export (RFC 7011) of flow records over UDP to one collector, with
// libfixbuf (CERT NetSA's IPFIX library, Debian's libfixbuf-dev): it keeps
// the templates, the sequence numbers and the message framing.
//
// Two templates (docs/monitoring.md lists their elements): 256 for IPv4
// flows, 257 for IPv6 flows.  Templates go out when the exporter opens and
// again on every sendTemplates() (the caller's timer: RFC 7011 8.1, over
// UDP templates are resent periodically).
//
// No exception leaves it: libfixbuf reports errors through GError, which
// are counted (and the last one kept) per collector; after an error the
// socket is closed, opened again on the next message, and the templates
// are sent again first.
#pragma once

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

// A record as exported: the flow and what names its tenant and line.
struct ExportFlow {
  FlowRecord flow;
  uint32_t vrf = 0;       // ingressVRFID: the tenant's VNI
  uint32_t sampling = 1;  // samplingPacketInterval: the counts are already scaled by it
};

struct ExporterStats {
  uint64_t records = 0;    // data records sent
  uint64_t templates = 0;  // template sets sent (start, refreshes)
  uint64_t errors = 0;     // messages that failed (socket errors, ...)
  uint64_t lost = 0;       // records not sent: their message failed twice
  std::string last_error;
};

class IpfixExporter {
 public:
  // An exporter to collector (the socket opens with the first message).
  static Result<std::unique_ptr<IpfixExporter>, std::string> open(
      const config::FlowCollector& collector, uint32_t observation_domain);
  ~IpfixExporter();
  IpfixExporter(const IpfixExporter&) = delete;
  IpfixExporter& operator=(const IpfixExporter&) = delete;

  // Sends the templates now.  false: an error (counted).
  bool sendTemplates();
  // Sends the records (as many messages as they need).  A message that
  // fails is tried once more (a new socket, the templates first); false:
  // one failed twice, and its records are lost (counted).
  bool send(std::span<const ExportFlow> flows);

  const config::FlowCollector& collector() const { return collector_; }
  const ExporterStats& stats() const { return stats_; }

 private:
  struct Fixbuf;
  bool append(const ExportFlow& x, _GError** err);
  bool message(std::span<const ExportFlow> flows, size_t* taken);
  explicit IpfixExporter(const config::FlowCollector& c);
  void failed(const char* what, const std::string& why);

  config::FlowCollector collector_;
  std::unique_ptr<Fixbuf> fb_;
  bool templates_due_ = true;
  ExporterStats stats_;
};

// The interface numbers exported for a line: its counter slot + 1 (0: none).
inline uint32_t lineInterface(uint16_t line_slot) {
  return uint32_t{line_slot} + 1;
}

}  // namespace mcgw::flows
