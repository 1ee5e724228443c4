// ESP in the pipeline (docs/encryption.md): the receive stage opens ESP
// packets of encrypted lines before decapsulation, the route stage seals a
// tunnel packet after encapsulation.  The transform itself (AES-256-GCM,
// the replay window) is dataplane/crypto/esp.*.
#include <rte_mbuf.h>

#include <cstring>

#include "dataplane/crypto/esp.hpp"
#include "dataplane/engine/pipeline.hpp"

namespace mcgw::engine {

namespace {

constexpr size_t kEth = 14;

uint16_t get16(const uint8_t* p) {
  return static_cast<uint16_t>(p[0] << 8 | p[1]);
}

void put16(uint8_t* p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v >> 8);
  p[1] = static_cast<uint8_t>(v);
}

DropReason reasonOf(crypto::EspError e) {
  switch (e) {
    case crypto::EspError::kReplay:
      return DropReason::kESP_REPLAY;
    case crypto::EspError::kAuth:
      return DropReason::kESP_AUTH;
    default:
      return DropReason::kESP_MALFORMED;
  }
}

}  // namespace

Pipeline::EspVerdict Pipeline::openEsp(const ForwardingTables& t, rte_mbuf* m, int32_t* line) {
  uint8_t* data = rte_pktmbuf_mtod(m, uint8_t*);
  const size_t len = m->data_len;
  if (len < kEth + 20) {
    return EspVerdict::kNotEsp;
  }
  const uint16_t type = get16(data + 12);
  const uint8_t* ip = data + kEth;
  size_t ip_len = 0;      // the outer IP header
  size_t packet_len = 0;  // the outer IP packet, from its header
  uint8_t next = 0;
  if (type == 0x0800) {
    if ((ip[0] >> 4) != 4) {
      return EspVerdict::kNotEsp;
    }
    ip_len = size_t{ip[0] & 0x0fu} * 4;
    packet_len = get16(ip + 2);
    next = ip[9];
    if (next != crypto::kIpProtoEsp && next != 17) {
      return EspVerdict::kNotEsp;
    }
    if ((get16(ip + 6) & 0x3fff) != 0) {  // MF or an offset: ESP is never fragmented here
      return EspVerdict::kNotEsp;         // (the kernel gets it, as any fragment)
    }
  } else if (type == 0x86dd) {
    ip_len = 40;
    packet_len = 40 + size_t{get16(ip + 4)};
    next = ip[6];
    if (next != crypto::kIpProtoEsp && next != 17) {
      return EspVerdict::kNotEsp;
    }
  } else {
    return EspVerdict::kNotEsp;
  }
  if (ip_len < 20 || packet_len < ip_len || kEth + packet_len > len) {
    return EspVerdict::kNotEsp;  // decapsulation counts what is malformed
  }
  size_t at = kEth + ip_len;  // where ESP starts
  if (next == 17) {
    // RFC 3948: UDP to 4500 whose payload does not start with the four
    // zero bytes of the non-ESP marker (IKE).
    if (packet_len < ip_len + crypto::kNatTUdpLen + 4 ||
        get16(data + at + 2) != crypto::kNatTPort) {
      return EspVerdict::kNotEsp;
    }
    const uint8_t* marker = data + at + crypto::kNatTUdpLen;
    if ((marker[0] | marker[1] | marker[2] | marker[3]) == 0) {
      return EspVerdict::kNotEsp;
    }
    at += crypto::kNatTUdpLen;
  }
  uint8_t* esp = data + at;
  const size_t esp_len = kEth + packet_len - at;
  const ForwardingTables::SaHit* hit = t.esp_in.find(crypto::espSpi(esp, esp_len));
  if (!hit) {
    drop(m, esp_len < 4 ? DropReason::kESP_MALFORMED : DropReason::kESP_UNKNOWN_SPI);
    return EspVerdict::kDropped;
  }
  EspSa& sa = *hit->sa;
  crypto::EspOpened opened;
  const crypto::EspError e =
      crypto::espOpen(sa.gcm(tx_queue_), sa.salt(), *sa.window(), esp, esp_len, opened);
  if (e != crypto::EspError::kNone) {
    drop(m, reasonOf(e));
    return EspVerdict::kDropped;
  }
  sa.count(esp_len);
  // Only the tunnel's UDP datagrams are carried (a dummy packet, next
  // header 59, is dropped here too).
  if (opened.next_header != 17 || opened.payload_len < 8) {
    drop(m, DropReason::kESP_MALFORMED);
    return EspVerdict::kDropped;
  }
  // eth | IP | [UDP] | ESP | IV | datagram | trailer  ->  eth | IP | datagram
  const size_t head = kEth + ip_len;
  const size_t shift = at + crypto::kEspPrefixLen - head;
  std::memmove(data + shift, data, head);
  rte_pktmbuf_adj(m, static_cast<uint16_t>(shift));
  rte_pktmbuf_trim(m, static_cast<uint16_t>(m->data_len - head - opened.payload_len));
  data = rte_pktmbuf_mtod(m, uint8_t*);
  uint8_t* nip = data + kEth;
  if (type == 0x0800) {
    put16(nip + 2, static_cast<uint16_t>(ip_len + opened.payload_len));
    nip[9] = 17;  // the header checksum is not checked again (verify = false)
  } else {
    put16(nip + 4, static_cast<uint16_t>(opened.payload_len));
    nip[6] = 17;
  }
  *line = hit->line;
  return EspVerdict::kOpened;
}

bool Pipeline::sealEsp(rte_mbuf* m, const LineEntry& line, uint8_t* out, size_t payload_len) {
  return appendEspTrailer(m, payload_len) &&
         sealAppended(m, *line.esp, line.esp_at, line.esp_udp, out, payload_len);
}

bool Pipeline::appendEspTrailer(rte_mbuf* m, size_t payload_len) {
  const size_t trailer = crypto::espTrailerLen(payload_len);
  if (rte_pktmbuf_append(m, static_cast<uint16_t>(trailer)) == nullptr) {
    drop(m, DropReason::kNO_BUFFER);
    return false;
  }
  return true;
}

bool Pipeline::sealAppended(rte_mbuf* m, EspSa& sa, uint8_t esp_at, bool esp_udp, uint8_t* out,
                            size_t payload_len) {
  uint8_t* esp = out + esp_at;
  const uint64_t seq = sa.nextSeq();
  if (seq == 0) [[unlikely]] {  // never an IV the reservation does not cover
    drop(m, DropReason::kESP_SEQ_LIMIT);
    return false;
  }
  const size_t n =
      crypto::espSeal(sa.gcm(tx_queue_), sa.salt(), sa.spi(), seq, 17, esp, payload_len);
  if (n == 0) [[unlikely]] {
    drop(m, DropReason::kESP_ERROR);
    return false;
  }
  if (esp_udp) {
    put16(esp - crypto::kNatTUdpLen + 4, static_cast<uint16_t>(crypto::kNatTUdpLen + n));
  }
  sa.count(n);
  return true;
}

// A queued packet of a shaped encrypted line, as it leaves: its tunnel
// datagram's length is in its (still clear) UDP header.
bool Pipeline::sealQueued(ShapedLine& s, rte_mbuf* m) {
  uint8_t* out = rte_pktmbuf_mtod(m, uint8_t*);
  if (!s.esp) [[unlikely]] {  // the tables had no SA object for the line
    drop(m, DropReason::kESP_ERROR);
    return false;
  }
  return sealAppended(m, *s.esp, s.esp_at, s.esp_udp, out, get16(out + s.outer_l4 + 4));
}

}  // namespace mcgw::engine
