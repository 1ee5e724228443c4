#include "control/flows/ipfix_exporter.hpp"

#include <fixbuf/public.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace mcgw::flows {

namespace {

// The records in memory, as libfixbuf's internal templates describe them
// (kInternal: the padding to the struct's size is not exported).
struct Record4 {
  uint64_t start_ms, end_ms, packets, octets;
  uint32_t src, dst;  // host order: libfixbuf writes network order
  uint32_t vrf, ingress, egress;
  uint16_t src_port, dst_port, tcp_flags;
  uint8_t protocol, direction, end_reason, forwarding_status;
  uint8_t pad[2];
};
static_assert(sizeof(Record4) == 64);

struct Record6 {
  uint64_t start_ms, end_ms, packets, octets;
  uint8_t src[16], dst[16];
  uint32_t vrf, ingress, egress;
  uint16_t src_port, dst_port, tcp_flags;
  uint8_t protocol, direction, end_reason, forwarding_status;
  uint8_t pad[2];
};
static_assert(sizeof(Record6) == 88);

constexpr uint32_t kV4 = 1, kV6 = 2, kInternal = 4;
constexpr uint16_t kInternal4 = 0x9000, kInternal6 = 0x9001;

// One spec for both families and both sides (flags choose).  No
// samplingPacketInterval (IE 305): the counts are already scaled by the
// sampling rate (docs/monitoring.md).  forwardingStatus (IE 89) in one
// octet, as the IANA registry defines it (unsigned8; RFC 7270 had
// unsigned32, which reduced-size encoding also sends in one octet).
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
                               {const_cast<char*>("sourceTransportPort"), 2, 0},
                               {const_cast<char*>("destinationTransportPort"), 2, 0},
                               {const_cast<char*>("tcpControlBits"), 2, 0},
                               {const_cast<char*>("protocolIdentifier"), 1, 0},
                               {const_cast<char*>("flowDirection"), 1, 0},
                               {const_cast<char*>("flowEndReason"), 1, 0},
                               {const_cast<char*>("forwardingStatus"), 1, 0},
                               {const_cast<char*>("paddingOctets"), 2, kInternal},
                               FB_IESPEC_NULL};

// libfixbuf's GLib messages go to the log (it does no I/O here any more).
void onGlibMessage(const gchar* domain, GLogLevelFlags level, const gchar* message, gpointer) {
  const std::string text = message ? message : "";
  if (level & (G_LOG_LEVEL_ERROR | G_LOG_LEVEL_CRITICAL | G_LOG_LEVEL_WARNING)) {
    spdlog::warn("libfixbuf{}{}: {}", domain ? " " : "", domain ? domain : "", text);
  } else {
    spdlog::debug("libfixbuf: {}", text);
  }
}

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
  // Where fBufEmit() writes a message (fbExporterAllocBuffer).
  uint8_t message[kMaxMessage] = {};
  ~Fixbuf() {
    if (buf) {
      fBufFree(buf);
    }
    if (model) {
      fbInfoModelFree(model);
    }
  }
};

bool IpfixExporter::rebuild(std::string* error) {
  static const bool once = [] {
    g_log_set_default_handler(onGlibMessage, nullptr);
    return true;
  }();
  (void)once;
  auto f = std::make_unique<Fixbuf>();
  f->model = fbInfoModelAlloc();
  fbSession_t* session = fbSessionAlloc(f->model);
  GError* err = nullptr;
  auto add = [&](uint16_t tid, bool internal, uint32_t flags) {
    fbTemplate_t* t = fbTemplateAlloc(f->model);
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
    *error = "IPFIX templates: " + take(err);
    return false;
  }
  fbSessionSetDomain(session, domain_);
  f->exporter = fbExporterAllocBuffer(f->message, kMaxMessage);
  f->buf = fBufAllocForExport(session, f->exporter);
  fBufSetAutomaticMode(f->buf, FALSE);  // a full message is FB_ERROR_EOM: message() sends it
  fb_ = std::move(f);
  templates_due_ = true;
  return true;
}

Result<std::unique_ptr<IpfixExporter>, std::string> IpfixExporter::open(
    const config::FlowCollector& collector, uint32_t observation_domain) {
  std::unique_ptr<IpfixExporter> e(new IpfixExporter(collector, observation_domain));
  std::string error;
  if (!e->rebuild(&error)) {
    return unexpected(error);
  }
  return e;
}

IpfixExporter::IpfixExporter(const config::FlowCollector& c, uint32_t domain)
    : collector_(c), domain_(domain) {}

IpfixExporter::~IpfixExporter() {
  if (fd_ >= 0) {
    ::close(fd_);
  }
}

bool IpfixExporter::connectSocket() {
  if (fd_ >= 0) {
    return true;
  }
  sockaddr_storage ss{};
  socklen_t len = 0;
  const bool v4 = collector_.address.family == config::Family::V4;
  if (v4) {
    auto* a = reinterpret_cast<sockaddr_in*>(&ss);
    a->sin_family = AF_INET;
    a->sin_port = htons(collector_.port);
    std::memcpy(&a->sin_addr, collector_.address.bytes.data(), 4);
    len = sizeof *a;
  } else {
    auto* a = reinterpret_cast<sockaddr_in6*>(&ss);
    a->sin6_family = AF_INET6;
    a->sin6_port = htons(collector_.port);
    std::memcpy(&a->sin6_addr, collector_.address.bytes.data(), 16);
    len = sizeof *a;
  }
  const int fd = ::socket(v4 ? AF_INET : AF_INET6, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    return false;
  }
  if (::connect(fd, reinterpret_cast<sockaddr*>(&ss), len) != 0) {
    const int e = errno;
    ::close(fd);
    errno = e;
    return false;
  }
  fd_ = fd;
  return true;
}

void IpfixExporter::failed(const char* what, const std::string& why, Clock::time_point now) {
  ++stats_.errors;
  stats_.last_error = std::string(what) + ": " + why;
  templates_due_ = true;
  retry_at_ = now + kBackoff;
}

bool IpfixExporter::emit(const char* what, size_t records, Clock::time_point now) {
  GError* err = nullptr;
  // fBufEmit() without a message writes nothing: the version field tells.
  fb_->message[0] = fb_->message[1] = 0;
  if (!fBufEmit(fb_->buf, &err)) {
    const std::string why = take(err);
    std::string error;
    if (!rebuild(&error)) {
      spdlog::error("flow audit: {}", error);
    }
    failed(what, why, now);
    return false;
  }
  if (fb_->message[0] != 0 || fb_->message[1] != 10) {
    return true;  // nothing to send
  }
  const size_t len = fbExporterGetMsgLen(fb_->exporter);
  // The sequence number is the exporter's own: the data records sent
  // before this message (RFC 7011 3.1), libfixbuf's also counts those of
  // messages that failed, and a rebuilt buffer starts again at 0.
  uint8_t* seq = fb_->message + 8;
  seq[0] = static_cast<uint8_t>(sequence_ >> 24);
  seq[1] = static_cast<uint8_t>(sequence_ >> 16);
  seq[2] = static_cast<uint8_t>(sequence_ >> 8);
  seq[3] = static_cast<uint8_t>(sequence_);
  if (!connectSocket()) {
    failed(what, std::strerror(errno), now);
    return false;
  }
  const ssize_t n = ::send(fd_, fb_->message, len, MSG_NOSIGNAL);
  if (n != static_cast<ssize_t>(len)) {
    failed(what, n < 0 ? std::strerror(errno) : "short send", now);
    return false;
  }
  sequence_ += static_cast<uint32_t>(records);
  return true;
}

bool IpfixExporter::sendTemplates(Clock::time_point now) {
  if (backingOff(now)) {
    templates_due_ = true;
    return false;
  }
  GError* err = nullptr;
  // Templates in a message of their own (both fit in one).
  if (!emit("sending templates", 0, now)) {
    return false;
  }
  // Automatic mode only to have libfixbuf start the templates' message
  // (in manual mode it will not); they fit in one, so nothing is emitted
  // behind the exporter's back (checked: the buffer stays untouched).
  fb_->message[0] = fb_->message[1] = 0;
  fBufSetAutomaticMode(fb_->buf, TRUE);
  const bool exported = fbSessionExportTemplates(fBufGetSession(fb_->buf), &err);
  fBufSetAutomaticMode(fb_->buf, FALSE);
  if (exported && fb_->message[1] != 0) {
    std::string error;
    if (!rebuild(&error)) {
      spdlog::error("flow audit: {}", error);
    }
    failed("sending templates", "the templates do not fit in one message", now);
    return false;
  }
  if (!exported) {
    const std::string why = take(err);
    std::string error;
    if (!rebuild(&error)) {
      spdlog::error("flow audit: {}", error);
    }
    failed("sending templates", why, now);
    return false;
  }
  if (!emit("sending templates", 0, now)) {
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
    rec.src_port = r.key.src_port;
    rec.dst_port = r.key.dst_port;
    rec.tcp_flags = r.tcp_flags;
    rec.protocol = r.key.protocol;
    rec.direction = to_tunnel ? 1 : 0;
    rec.end_reason = static_cast<uint8_t>(r.end_reason);
    rec.forwarding_status = forwardingStatus(r.key.status);
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
bool IpfixExporter::message(std::span<const ExportFlow> flows, size_t* taken,
                            Clock::time_point now) {
  *taken = 0;
  if (templates_due_ && !sendTemplates(now)) {
    return false;
  }
  GError* err = nullptr;
  size_t n = 0;
  for (; n < flows.size(); ++n) {
    if (append(flows[n], &err)) {
      continue;
    }
    if (n == 0 && g_error_matches(err, FB_ERROR_DOMAIN, FB_ERROR_EOM)) {
      // A message still open (the templates'): send it, start this one.
      g_clear_error(&err);
      if (emit("sending records", 0, now) && append(flows[n], &err)) {
        continue;
      }
      if (!err) {
        return false;  // emit() failed (counted)
      }
    }
    if (n > 0 && g_error_matches(err, FB_ERROR_DOMAIN, FB_ERROR_EOM)) {
      g_clear_error(&err);
      break;  // full: this one starts the next message
    }
    const std::string why = take(err);
    std::string error;
    if (!rebuild(&error)) {
      spdlog::error("flow audit: {}", error);
    }
    failed("encoding records", why, now);
    *taken = std::max<size_t>(n, 1);
    return false;
  }
  *taken = n;
  if (!emit("sending records", n, now)) {
    return false;
  }
  stats_.records += n;
  return true;
}

bool IpfixExporter::send(std::span<const ExportFlow> flows, Clock::time_point now) {
  if (flows.empty()) {
    return true;
  }
  if (backingOff(now)) {
    stats_.lost += flows.size();
    return false;
  }
  while (!flows.empty()) {
    size_t taken = 0;
    if (!message(flows, &taken, now)) {
      // The failed message's records and the rest of the batch: lost.
      stats_.lost += flows.size();
      return false;
    }
    flows = flows.subspan(taken);
  }
  return true;
}

}  // namespace mcgw::flows
