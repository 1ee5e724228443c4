#include "dataplane/bench/packets.hpp"

#include <openssl/evp.h>

#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "dataplane/proto/checksum.hpp"
#include "dataplane/proto/ethernet.hpp"
#include "dataplane/proto/ipv4.hpp"
#include "dataplane/proto/udp.hpp"
#include "dataplane/proto/vxlan.hpp"

namespace mcgw::bench {

namespace {

using proto::Bytes;

bool ipChecksumOk(const uint8_t* ip) {
  return proto::internetChecksum(Bytes(reinterpret_cast<const std::byte*>(ip), 20)) == 0;
}

}  // namespace

std::string toString(const Mac& m) {
  char b[18];
  std::snprintf(b, sizeof b, "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5]);
  return b;
}

std::string toString(const Ip4& a) {
  return std::to_string(a[0]) + "." + std::to_string(a[1]) + "." + std::to_string(a[2]) + "." +
         std::to_string(a[3]);
}

std::vector<uint8_t> innerFrame(size_t size, const InnerSpec& s) {
  using namespace proto;
  const size_t headers = kEthLen + sizeof(Ipv4Header) + sizeof(UdpHeader);
  if (size < headers) {
    size = headers;
  }
  std::vector<uint8_t> f(size);
  for (size_t i = headers; i < size; ++i) {
    f[i] = static_cast<uint8_t>(i * 7);
  }
  auto* eth = reinterpret_cast<EthernetHeader*>(f.data());
  std::memcpy(eth->dst, s.dst_mac.data(), 6);
  std::memcpy(eth->src, s.src_mac.data(), 6);
  eth->ether_type.set(kEtherTypeIpv4);
  auto* ip = reinterpret_cast<Ipv4Header*>(f.data() + kEthLen);
  ip->version_ihl = 0x45;
  ip->tos = 0;
  ip->total_length.set(static_cast<uint16_t>(size - kEthLen));
  ip->id.set(0);
  ip->frag_off.set(0x4000);
  ip->ttl = s.ttl;
  ip->protocol = kIpProtoUdp;
  ip->checksum.set(0);
  std::memcpy(ip->src, s.src.data(), 4);
  std::memcpy(ip->dst, s.dst.data(), 4);
  ip->checksum.set(internetChecksum(Bytes(reinterpret_cast<const std::byte*>(ip), 20)));
  auto* udp = reinterpret_cast<UdpHeader*>(f.data() + kEthLen + sizeof(Ipv4Header));
  udp->src_port.set(s.src_port);
  udp->dst_port.set(s.dst_port);
  udp->length.set(static_cast<uint16_t>(size - kEthLen - sizeof(Ipv4Header)));
  udp->checksum.set(0);
  if (s.udp_checksum) {
    const size_t n = size - kEthLen - sizeof(Ipv4Header);
    uint16_t c =
        internetChecksum(Bytes(reinterpret_cast<const std::byte*>(udp), n),
                         pseudoHeaderV4(ip->src, ip->dst, kIpProtoUdp, static_cast<uint16_t>(n)));
    udp->checksum.set(c == 0 ? 0xffff : c);
  }
  return f;
}

std::string checkSourceAndUdpChecksum(const uint8_t* frame, size_t len, size_t offset,
                                      const Ip4& src) {
  using namespace proto;
  const uint8_t* f = frame + offset + kEthLen;
  if (len < offset + kEthLen + sizeof(Ipv4Header) + sizeof(UdpHeader)) {
    return "too short for IPv4 / UDP";
  }
  const auto* ip = reinterpret_cast<const Ipv4Header*>(f);
  Ip4 s;
  std::memcpy(s.data(), ip->src, 4);
  if (s != src) {
    return "inner source " + toString(s) + ", expected " + toString(src);
  }
  const size_t n = len - offset - kEthLen - sizeof(Ipv4Header);
  const auto* udp = f + sizeof(Ipv4Header);
  if ((udp[6] | udp[7]) == 0) {
    return "inner UDP checksum 0";
  }
  const uint32_t sum =
      checksumAdd(Bytes(reinterpret_cast<const std::byte*>(udp), n),
                  pseudoHeaderV4(ip->src, ip->dst, kIpProtoUdp, static_cast<uint16_t>(n)));
  if (checksumFold(sum) != 0xffff) {
    return "inner UDP checksum is wrong";
  }
  return {};
}

std::vector<uint8_t> vxlanFrame(const std::vector<uint8_t>& inner,
                                const proto::TunnelHeaderTemplate& outer, uint32_t vni,
                                uint32_t flow_hash) {
  const size_t overhead = proto::tunnelOverhead(outer.ipv6, outer.encapsulation);
  std::vector<uint8_t> f(overhead + inner.size());
  std::memcpy(f.data() + overhead, inner.data(), inner.size());
  auto* p = reinterpret_cast<std::byte*>(f.data());
  if (proto::encodeTunnelHeaders(proto::MutableBytes(p, overhead), outer, vni,
                                 Bytes(p + overhead, inner.size()), flow_hash) != overhead) {
    return {};
  }
  return f;
}

std::string checkInner(const uint8_t* frame, size_t len, size_t offset, size_t inner_size,
                       const Ip4& dst) {
  using namespace proto;
  if (len != offset + inner_size) {
    return "length " + std::to_string(len) + ", expected " + std::to_string(offset + inner_size);
  }
  const uint8_t* f = frame + offset;
  if (f[12] != 0x08 || f[13] != 0x00) {
    return "inner EtherType is not IPv4";
  }
  const auto* ip = reinterpret_cast<const Ipv4Header*>(f + kEthLen);
  if (ip->version_ihl != 0x45 || ip->total_length.get() != inner_size - kEthLen) {
    return "inner IPv4 header damaged";
  }
  if (ip->ttl != 63) {
    return "inner TTL " + std::to_string(ip->ttl) + ", expected 63 (decremented once)";
  }
  if (!ipChecksumOk(f + kEthLen)) {
    return "inner IPv4 header checksum is wrong";
  }
  Ip4 d;
  std::memcpy(d.data(), ip->dst, 4);
  if (d != dst) {
    return "inner destination " + toString(d) + ", expected " + toString(dst);
  }
  return {};
}

std::string checkLan(const uint8_t* frame, size_t len, size_t inner_size, const Ip4& dst,
                     const ExpectLan& e) {
  if (std::memcmp(frame, e.dst_mac.data(), 6) != 0 ||
      std::memcmp(frame + 6, e.src_mac.data(), 6) != 0) {
    return "Ethernet addresses not rewritten for the LAN next hop";
  }
  return checkInner(frame, len, 0, inner_size, dst);
}

std::string checkTunnel(const uint8_t* frame, size_t len, size_t inner_size, const Ip4& dst,
                        const ExpectTunnel& e) {
  using namespace proto;
  if (len < kVxlanOverhead + kEthLen) {
    return "too short for a VXLAN packet";
  }
  if (std::memcmp(frame, e.dst_mac.data(), 6) != 0 ||
      std::memcmp(frame + 6, e.src_mac.data(), 6) != 0 || frame[12] != 0x08 || frame[13] != 0) {
    return "outer Ethernet header wrong";
  }
  const auto* ip = reinterpret_cast<const Ipv4Header*>(frame + kEthLen);
  if (ip->version_ihl != 0x45 || ip->protocol != kIpProtoUdp || ip->ttl != e.ttl ||
      !ip->dontFragment() || ip->total_length.get() != len - kEthLen) {
    return "outer IPv4 header wrong";
  }
  if (!ipChecksumOk(frame + kEthLen)) {
    return "outer IPv4 header checksum is wrong";
  }
  if (std::memcmp(ip->src, e.local.data(), 4) != 0 ||
      std::memcmp(ip->dst, e.remote.data(), 4) != 0) {
    return "outer IPv4 addresses wrong";
  }
  const auto* udp = reinterpret_cast<const UdpHeader*>(frame + kEthLen + 20);
  if (udp->dst_port.get() != kVxlanPort || udp->src_port.get() < 49152 ||
      udp->length.get() != len - kEthLen - 20) {
    return "outer UDP header wrong";
  }
  const auto* vx = reinterpret_cast<const VxlanHeader*>(frame + kEthLen + 28);
  if (vx->flags != kVxlanFlagVni || vx->vni() != e.vni) {
    return "VXLAN header wrong (VNI " + std::to_string(vx->vni()) + ")";
  }
  const uint8_t* inner = frame + kVxlanOverhead;
  if (std::memcmp(inner, e.inner_dst.data(), 6) != 0 ||
      std::memcmp(inner + 6, e.inner_src.data(), 6) != 0) {
    return "inner Ethernet addresses wrong";
  }
  return checkInner(frame, len, kVxlanOverhead, inner_size, dst);
}

std::vector<uint8_t> espLayout(const std::vector<uint8_t>& vxlan) {
  using namespace proto;
  constexpr size_t kHead = kEthLen + sizeof(Ipv4Header);
  if (vxlan.size() < kHead) {
    return {};
  }
  const size_t datagram = vxlan.size() - kHead;
  std::vector<uint8_t> f(kHead + crypto::kEspPrefixLen + datagram +
                         crypto::espTrailerLen(datagram));
  std::memcpy(f.data(), vxlan.data(), kHead);
  std::memcpy(f.data() + kHead + crypto::kEspPrefixLen, vxlan.data() + kHead, datagram);
  auto* ip = reinterpret_cast<Ipv4Header*>(f.data() + kEthLen);
  ip->protocol = crypto::kIpProtoEsp;
  ip->total_length.set(static_cast<uint16_t>(f.size() - kEthLen));
  ip->checksum.set(0);
  ip->checksum.set(internetChecksum(Bytes(reinterpret_cast<const std::byte*>(ip), 20)));
  return f;
}

namespace {

void put32(uint8_t* p, uint32_t v) {
  p[0] = static_cast<uint8_t>(v >> 24);
  p[1] = static_cast<uint8_t>(v >> 16);
  p[2] = static_cast<uint8_t>(v >> 8);
  p[3] = static_cast<uint8_t>(v);
}

uint32_t get32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) << 24 | static_cast<uint32_t>(p[1]) << 16 |
         static_cast<uint32_t>(p[2]) << 8 | p[3];
}

}  // namespace

PeerSa::PeerSa(const crypto::Key& key, const crypto::Salt& salt, uint32_t spi)
    : ctx_(EVP_CIPHER_CTX_new()), key_(key), salt_(salt), spi_(spi) {
  if (!ctx_) {
    throw std::runtime_error("EVP_CIPHER_CTX_new failed");
  }
}

PeerSa::~PeerSa() {
  EVP_CIPHER_CTX_free(ctx_);
}

size_t PeerSa::seal(uint64_t seq, uint8_t next_header, uint8_t* esp, size_t payload_len) {
  const size_t pad = (4 - (payload_len + 2) % 4) % 4;
  uint8_t* text = esp + crypto::kEspPrefixLen;
  for (size_t i = 0; i < pad; ++i) {
    text[payload_len + i] = static_cast<uint8_t>(i + 1);
  }
  text[payload_len + pad] = static_cast<uint8_t>(pad);
  text[payload_len + pad + 1] = next_header;
  const size_t text_len = payload_len + pad + 2;
  put32(esp, spi_);
  put32(esp + 4, static_cast<uint32_t>(seq));
  put32(esp + 8, static_cast<uint32_t>(seq >> 32));  // the IV: the sequence number
  put32(esp + 12, static_cast<uint32_t>(seq));
  uint8_t nonce[12], aad[12];
  std::memcpy(nonce, salt_.data(), 4);
  std::memcpy(nonce + 4, esp + 8, 8);
  put32(aad, spi_);
  put32(aad + 4, static_cast<uint32_t>(seq >> 32));
  put32(aad + 8, static_cast<uint32_t>(seq));
  int n = 0, m = 0;
  if (EVP_EncryptInit_ex(ctx_, EVP_aes_256_gcm(), nullptr, key_.data(), nonce) != 1 ||
      EVP_EncryptUpdate(ctx_, nullptr, &n, aad, sizeof aad) != 1 ||
      EVP_EncryptUpdate(ctx_, text, &n, text, static_cast<int>(text_len)) != 1 ||
      EVP_EncryptFinal_ex(ctx_, text + n, &m) != 1 ||
      EVP_CIPHER_CTX_ctrl(ctx_, EVP_CTRL_GCM_GET_TAG, static_cast<int>(crypto::kIcvLen),
                          text + text_len) != 1) {
    return 0;
  }
  return crypto::kEspPrefixLen + text_len + crypto::kIcvLen;
}

std::string PeerSa::open(uint64_t seq, uint8_t* esp, size_t len, size_t* payload_len,
                         uint8_t* next_header) {
  if (len < crypto::kEspPrefixLen + 4 + crypto::kIcvLen ||
      (len - crypto::kEspPrefixLen - crypto::kIcvLen) % 4 != 0) {
    return "ESP packet of " + std::to_string(len) + " bytes";
  }
  if (get32(esp) != spi_) {
    return "SPI " + std::to_string(get32(esp)) + ", expected " + std::to_string(spi_);
  }
  if (get32(esp + 4) != static_cast<uint32_t>(seq)) {
    return "ESP sequence number " + std::to_string(get32(esp + 4)) + ", expected " +
           std::to_string(seq);
  }
  uint8_t nonce[12], aad[12];
  std::memcpy(nonce, salt_.data(), 4);
  std::memcpy(nonce + 4, esp + 8, 8);  // the IV as sent
  put32(aad, spi_);
  put32(aad + 4, static_cast<uint32_t>(seq >> 32));
  put32(aad + 8, static_cast<uint32_t>(seq));
  uint8_t* text = esp + crypto::kEspPrefixLen;
  const size_t text_len = len - crypto::kEspPrefixLen - crypto::kIcvLen;
  int n = 0, m = 0;
  if (EVP_DecryptInit_ex(ctx_, EVP_aes_256_gcm(), nullptr, key_.data(), nonce) != 1 ||
      EVP_DecryptUpdate(ctx_, nullptr, &n, aad, sizeof aad) != 1 ||
      EVP_DecryptUpdate(ctx_, text, &n, text, static_cast<int>(text_len)) != 1 ||
      EVP_CIPHER_CTX_ctrl(ctx_, EVP_CTRL_GCM_SET_TAG, static_cast<int>(crypto::kIcvLen),
                          text + text_len) != 1) {
    return "OpenSSL refused to decrypt";
  }
  if (EVP_DecryptFinal_ex(ctx_, text + n, &m) != 1) {
    return "the ICV does not verify with the peer's key";
  }
  const size_t pad = text[text_len - 2];
  if (pad > 3 || pad + 2 > text_len) {  // text_len is a multiple of 4: 0..3 is the minimum
    return "ESP padding length " + std::to_string(pad) + " is not the minimum";
  }
  for (size_t i = 0; i < pad; ++i) {
    if (text[text_len - 2 - pad + i] != i + 1) {
      return "ESP padding bytes wrong";
    }
  }
  *payload_len = text_len - 2 - pad;
  *next_header = text[text_len - 1];
  return {};
}

std::string openEspFrame(const uint8_t* frame, size_t len, PeerSa& peer, uint64_t seq,
                         const ExpectTunnel& e, std::vector<uint8_t>* plain) {
  using namespace proto;
  if (len < kEspAt + crypto::kEspPrefixLen + 4 + crypto::kIcvLen) {
    return "too short for an ESP packet";
  }
  if (std::memcmp(frame, e.dst_mac.data(), 6) != 0 ||
      std::memcmp(frame + 6, e.src_mac.data(), 6) != 0 || frame[12] != 0x08 || frame[13] != 0) {
    return "outer Ethernet header wrong";
  }
  const auto* ip = reinterpret_cast<const Ipv4Header*>(frame + kEthLen);
  if (ip->version_ihl != 0x45 || ip->protocol != crypto::kIpProtoEsp || ip->ttl != e.ttl ||
      !ip->dontFragment() || ip->total_length.get() != len - kEthLen) {
    return "outer IPv4 header wrong (not ESP?)";
  }
  if (!ipChecksumOk(frame + kEthLen)) {
    return "outer IPv4 header checksum is wrong";
  }
  if (std::memcmp(ip->src, e.local.data(), 4) != 0 ||
      std::memcmp(ip->dst, e.remote.data(), 4) != 0) {
    return "outer IPv4 addresses wrong";
  }
  std::vector<uint8_t> esp(frame + kEspAt, frame + len);
  size_t payload_len = 0;
  uint8_t next = 0;
  if (std::string err = peer.open(seq, esp.data(), esp.size(), &payload_len, &next); !err.empty()) {
    return err;
  }
  if (next != kIpProtoUdp) {
    return "ESP next header " + std::to_string(next) + ", expected UDP";
  }
  plain->assign(frame, frame + kEspAt);
  plain->insert(plain->end(), esp.begin() + crypto::kEspPrefixLen,
                esp.begin() + static_cast<ptrdiff_t>(crypto::kEspPrefixLen + payload_len));
  auto* pip = reinterpret_cast<Ipv4Header*>(plain->data() + kEthLen);
  pip->protocol = kIpProtoUdp;
  pip->total_length.set(static_cast<uint16_t>(plain->size() - kEthLen));
  pip->checksum.set(0);
  pip->checksum.set(internetChecksum(Bytes(reinterpret_cast<const std::byte*>(pip), 20)));
  return {};
}

}  // namespace mcgw::bench
