#include "control/flows/ipfix_exporter.hpp"

#include <fixbuf/public.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>

namespace mcgw::flows {

namespace {

// The records in memory, as libfixbuf's internal templates describe them
// (kInternal: the padding to the struct's size is not exported).
struct Record4 {
  uint64_t start_ms, end_ms, packets, octets;
  uint32_t src, dst;  // host order: libfixbuf writes network order
  uint32_t vrf, ingress, egress, sampling;
  uint16_t src_port, dst_port, tcp_flags;
  uint8_t protocol, direction, end_reason;
  uint8_t pad[7];
};
static_assert(sizeof(Record4) == 72);

struct Record6 {
  uint64_t start_ms, end_ms, packets, octets;
  uint8_t src[16], dst[16];
  uint32_t vrf, ingress, egress, sampling;
  uint16_t src_port, dst_port, tcp_flags;
  uint8_t protocol, direction, end_reason;
  uint8_t pad[7];
};
static_assert(sizeof(Record6) == 96);

constexpr uint32_t kV4 = 1, kV6 = 2, kInternal = 4;
constexpr uint16_t kInternal4 = 0x9000, kInternal6 = 0x9001;

// One spec for both families and both sides (flags choose).
fbInfoElementSpec_t kSpec[] = {{const_cast<char*>("flowStartMilliseconds"), 8, 0},
                               {const_cast<char*>("flowEndMilliseconds"), 8, 0},
                               {const_cast<char*>("packetDeltaCount"), 8, 0},
                               {const_cast<char*>("octetDeltaCount"), 8, 0},
                               {const_cast<char*>("sourceIPv4Address"), 4, kV4},
                               {const_cast<char*>("destinationIPv4Address"), 4, kV4},
                               {const_cast<char*>("sourceIPv6Address"), 16, kV6},
                               {const_cast<char*>("destinationIPv6Address"), 16, kV6},
                               {const_cast<char*>("ingressVRFID"), 4, 0},
                               {const_cast<char*>("ingressInterface"), 4, 0},
                               {const_cast<char*>("egressInterface"), 4, 0},
                               {const_cast<char*>("samplingPacketInterval"), 4, 0},
                               {const_cast<char*>("sourceTransportPort"), 2, 0},
                               {const_cast<char*>("destinationTransportPort"), 2, 0},
                               {const_cast<char*>("tcpControlBits"), 2, 0},
                               {const_cast<char*>("protocolIdentifier"), 1, 0},
                               {const_cast<char*>("flowDirection"), 1, 0},
                               {const_cast<char*>("flowEndReason"), 1, 0},
                               {const_cast<char*>("paddingOctets"), 7, kInternal},
                               FB_IESPEC_NULL};

// libfixbuf says some failures only with a GLib warning (a UDP send
// refused by the collector's host: "I/O error on UDP send: Connection
// refused ... packets will be lost") and reports success.  While an
// exporter calls into libfixbuf, the warnings are its errors; otherwise
// they go to the log.
thread_local std::string* t_warnings = nullptr;

void onGlibMessage(const gchar* domain, GLogLevelFlags level, const gchar* message, gpointer) {
  const std::string text = message ? message : "";
  if (t_warnings && (level & (G_LOG_LEVEL_WARNING | G_LOG_LEVEL_CRITICAL | G_LOG_LEVEL_ERROR))) {
    if (!t_warnings->empty()) {
      *t_warnings += "; ";
    }
    *t_warnings += text;
    return;
  }
  if (level & (G_LOG_LEVEL_ERROR | G_LOG_LEVEL_CRITICAL | G_LOG_LEVEL_WARNING)) {
    spdlog::warn("libfixbuf{}{}: {}", domain ? " " : "", domain ? domain : "", text);
  } else {
    spdlog::debug("libfixbuf: {}", text);
  }
}

// Collects libfixbuf's warnings while it lives.
struct WarningScope {
  std::string warnings;
  std::string* outer;
  WarningScope() : outer(t_warnings) {
    static const bool once = [] {
      g_log_set_default_handler(onGlibMessage, nullptr);
      return true;
    }();
    (void)once;
    t_warnings = &warnings;
  }
  ~WarningScope() { t_warnings = outer; }
};

std::string take(GError*& err) {
  std::string s = err && err->message ? err->message : "unknown error";
  g_clear_error(&err);
  return s;
}

}  // namespace

struct IpfixExporter::Fixbuf {
  fbInfoModel_t* model = nullptr;
  fBuf_t* buf = nullptr;  // owns the session and the exporter
  fbExporter_t* exporter = nullptr;
  std::string host, port;
  ~Fixbuf() {
    if (buf) {
      fBufFree(buf);
    }
    if (model) {
      fbInfoModelFree(model);
    }
  }
};

Result<std::unique_ptr<IpfixExporter>, std::string> IpfixExporter::open(
    const config::FlowCollector& collector, uint32_t observation_domain) {
  std::unique_ptr<IpfixExporter> e(new IpfixExporter(collector));
  e->fb_ = std::make_unique<Fixbuf>();
  Fixbuf& f = *e->fb_;
  f.model = fbInfoModelAlloc();
  fbSession_t* session = fbSessionAlloc(f.model);
  GError* err = nullptr;
  auto add = [&](uint16_t tid, bool internal, uint32_t flags) {
    fbTemplate_t* t = fbTemplateAlloc(f.model);
    if (!fbTemplateAppendSpecArray(t, kSpec, flags, &err)) {
      fbTemplateFreeUnused(t);
      return false;
    }
    if (fbSessionAddTemplate(session, internal, tid, t, &err) == 0) {
      fbTemplateFreeUnused(t);
      return false;
    }
    return true;
  };
  if (!add(kInternal4, true, kV4 | kInternal) || !add(kInternal6, true, kV6 | kInternal) ||
      !add(kTemplateIpv4, false, kV4) || !add(kTemplateIpv6, false, kV6)) {
    fbSessionFree(session);
    return unexpected("IPFIX templates: " + take(err));
  }
  fbSessionSetDomain(session, observation_domain);
  f.host = collector.address.toString();
  f.port = std::to_string(collector.port);
  fbConnSpec_t spec = FB_CONNSPEC_INIT;
  spec.transport = FB_UDP;
  spec.host = f.host.data();
  spec.svc = f.port.data();
  f.exporter = fbExporterAllocNet(&spec);
  f.buf = fBufAllocForExport(session, f.exporter);
  fBufSetAutomaticMode(f.buf, FALSE);  // message() sends each full message itself
  return e;
}

IpfixExporter::IpfixExporter(const config::FlowCollector& c) : collector_(c) {}

IpfixExporter::~IpfixExporter() = default;

void IpfixExporter::failed(const char* what, const std::string& why) {
  ++stats_.errors;
  stats_.last_error = std::string(what) + ": " + why;
  // The message in the buffer is lost; the socket opens again with the next
  // one, which starts with the templates.
  fbExporterClose(fb_->exporter);
  templates_due_ = true;
}

bool IpfixExporter::sendTemplates() {
  GError* err = nullptr;
  WarningScope scope;
  // Templates in a message of their own (automatic mode: libfixbuf starts it).
  fBufSetAutomaticMode(fb_->buf, TRUE);
  const bool ok =
      fbSessionExportTemplates(fBufGetSession(fb_->buf), &err) && fBufEmit(fb_->buf, &err);
  fBufSetAutomaticMode(fb_->buf, FALSE);
  if (!ok) {
    failed("sending templates", take(err));
    return false;
  }
  if (!scope.warnings.empty()) {
    failed("sending templates", scope.warnings);
    return false;
  }
  templates_due_ = false;
  ++stats_.templates;
  return true;
}

// Appends one record (false with err set: the message is full, or an error).
bool IpfixExporter::append(const ExportFlow& x, GError** err) {
  const FlowRecord& r = x.flow;
  const bool to_tunnel = r.key.direction == static_cast<uint8_t>(engine::FlowDirection::kToTunnel);
  auto common = [&](auto& rec) {
    rec.start_ms = r.first_ms;
    rec.end_ms = r.last_ms;
    rec.packets = r.packets;
    rec.octets = r.bytes;
    rec.vrf = x.vrf;
    // The line is the egress interface of a flow into a tunnel, the ingress
    // interface of one out of a tunnel (flowDirection: 1 egress, 0 ingress).
    rec.ingress = to_tunnel ? 0 : lineInterface(r.key.line);
    rec.egress = to_tunnel ? lineInterface(r.key.line) : 0;
    rec.sampling = x.sampling;
    rec.src_port = r.key.src_port;
    rec.dst_port = r.key.dst_port;
    rec.tcp_flags = r.tcp_flags;
    rec.protocol = r.key.protocol;
    rec.direction = to_tunnel ? 1 : 0;
    rec.end_reason = static_cast<uint8_t>(r.end_reason);
  };
  if (r.key.ip_version == 4) {
    Record4 rec{};
    common(rec);
    rec.src = uint32_t{r.key.src[0]} << 24 | uint32_t{r.key.src[1]} << 16 |
              uint32_t{r.key.src[2]} << 8 | r.key.src[3];
    rec.dst = uint32_t{r.key.dst[0]} << 24 | uint32_t{r.key.dst[1]} << 16 |
              uint32_t{r.key.dst[2]} << 8 | r.key.dst[3];
    return fBufSetInternalTemplate(fb_->buf, kInternal4, err) &&
           fBufSetExportTemplate(fb_->buf, kTemplateIpv4, err) &&
           fBufAppend(fb_->buf, reinterpret_cast<uint8_t*>(&rec), sizeof rec, err);
  }
  Record6 rec{};
  common(rec);
  std::memcpy(rec.src, r.key.src, 16);
  std::memcpy(rec.dst, r.key.dst, 16);
  return fBufSetInternalTemplate(fb_->buf, kInternal6, err) &&
         fBufSetExportTemplate(fb_->buf, kTemplateIpv6, err) &&
         fBufAppend(fb_->buf, reinterpret_cast<uint8_t*>(&rec), sizeof rec, err);
}

// One message of as many of the records as fit (the buffer is in manual
// mode: a full message is an FB_ERROR_EOM, and this sends it); *taken: how
// many it carried (or would have: the message failed).  The templates go
// first when due.
bool IpfixExporter::message(std::span<const ExportFlow> flows, size_t* taken) {
  *taken = 0;
  if (templates_due_ && !sendTemplates()) {
    return false;
  }
  GError* err = nullptr;
  WarningScope scope;
  size_t n = 0;
  for (; n < flows.size(); ++n) {
    if (append(flows[n], &err)) {
      continue;
    }
    if (n == 0 && g_error_matches(err, FB_ERROR_DOMAIN, FB_ERROR_EOM)) {
      // After the templates' message libfixbuf wants the next one started.
      g_clear_error(&err);
      if (fBufEmit(fb_->buf, &err) && append(flows[n], &err)) {
        continue;
      }
    }
    if (n > 0 && g_error_matches(err, FB_ERROR_DOMAIN, FB_ERROR_EOM)) {
      g_clear_error(&err);
      break;  // full: this one starts the next message
    }
    failed("sending records", take(err));
    return false;
  }
  *taken = n;
  if (!fBufEmit(fb_->buf, &err)) {
    failed("sending records", take(err));
    return false;
  }
  if (!scope.warnings.empty()) {
    failed("sending records", scope.warnings);
    return false;
  }
  stats_.records += n;
  return true;
}

bool IpfixExporter::send(std::span<const ExportFlow> flows) {
  bool all = true;
  while (!flows.empty()) {
    size_t taken = 0;
    // A failed message is tried once more on a new socket: a refusal is
    // usually the collector's host answering an earlier message (the
    // collector was not listening yet).
    if (!message(flows, &taken) && !message(flows, &taken)) {
      // Lost: the failed message's records (at least one, to go on).
      const size_t lost = std::min(flows.size(), std::max<size_t>(1, taken));
      stats_.lost += lost;
      flows = flows.subspan(lost);
      all = false;
      continue;
    }
    flows = flows.subspan(taken);
  }
  return all;
}

}  // namespace mcgw::flows
