// Test packets for mcgw-bench: inner IPv4/UDP frames and their VXLAN
// encapsulation, built with the proto encoders, and the checks the benchmark
// applies to what the pipeline sends.  Pure (no DPDK).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "dataplane/crypto/esp.hpp"
#include "dataplane/proto/tunnel.hpp"

struct evp_cipher_ctx_st;

namespace mcgw::bench {

using Mac = std::array<uint8_t, 6>;
using Ip4 = std::array<uint8_t, 4>;

constexpr size_t kEthLen = 14;
constexpr size_t kVxlanOverhead = 14 + 20 + 8 + 8;  // outer Ethernet, IPv4, UDP, VXLAN

struct InnerSpec {
  Mac dst_mac{}, src_mac{};
  Ip4 src{}, dst{};
  uint16_t src_port = 0, dst_port = 0;
  uint8_t ttl = 64;
  bool udp_checksum = false;  // compute it (else 0: none)
};

// An Ethernet + IPv4 + UDP frame of `size` bytes (no FCS; at least 42), IPv4
// header checksum set, UDP checksum 0 (or computed: spec.udp_checksum), the
// payload a byte pattern.
std::vector<uint8_t> innerFrame(size_t size, const InnerSpec& spec);

// `inner` behind outer Ethernet / IPv4 / UDP / VXLAN headers, as a peer VTEP
// described by `outer` (local = the peer, remote = us) would send it.
std::vector<uint8_t> vxlanFrame(const std::vector<uint8_t>& inner,
                                const proto::TunnelHeaderTemplate& outer, uint32_t vni,
                                uint32_t flow_hash);

// What a forwarded frame must look like.  An empty string means it does.
struct ExpectLan {  // routed to a LAN next hop
  Mac dst_mac{}, src_mac{};
};
struct ExpectTunnel {        // encapsulated towards a peer VTEP
  Mac dst_mac{}, src_mac{};  // outer
  Ip4 local{}, remote{};
  uint8_t ttl = 64;
  uint32_t vni = 0;
  Mac inner_dst{}, inner_src{};
};

// The inner IPv4 packet at frame[offset + 14]: destination, TTL decremented
// once (64 -> 63), valid header checksum, `inner_size` bytes of frame.
std::string checkInner(const uint8_t* frame, size_t len, size_t offset, size_t inner_size,
                       const Ip4& dst);
std::string checkLan(const uint8_t* frame, size_t len, size_t inner_size, const Ip4& dst,
                     const ExpectLan& e);
std::string checkTunnel(const uint8_t* frame, size_t len, size_t inner_size, const Ip4& dst,
                        const ExpectTunnel& e);
// The inner IPv4 / UDP packet at frame[offset + 14] comes from `src` and its
// UDP checksum (which must be set) verifies over the pseudo-header.
std::string checkSourceAndUdpChecksum(const uint8_t* frame, size_t len, size_t offset,
                                      const Ip4& src);

// ESP (issue 18; crypto/esp.hpp has the layout).  Where the ESP header
// starts in a frame of an encrypted VXLAN/IPv4 line (no RFC 3948 UDP).
constexpr size_t kEspAt = kEthLen + 20;

// The peer's VXLAN frame `vxlan` (vxlanFrame) laid out as the ESP packet
// the peer sends, before it is sealed: outer IPv4 protocol 50 with the
// length and checksum of the sealed packet, 16 bytes for the ESP header and
// IV, the UDP datagram (what crypto::espSeal encrypts in place), and
// crypto::espTrailerLen() bytes of room for the trailer.
std::vector<uint8_t> espLayout(const std::vector<uint8_t>& vxlan);

// The peer's side of an ESP SA (RFC 4303 with AES-256-GCM, RFC 4106, and
// 64-bit extended sequence numbers), written here straight over OpenSSL's
// EVP: independent of crypto::Gcm, crypto::espSeal/espOpen and whichever
// engine they use, so that the checks do not take the code they check as
// the reference.  Nonce salt || IV, AAD SPI || seq-high || seq-low, padding
// 1, 2, 3, ... to a multiple of 4.
class PeerSa {
 public:
  PeerSa(const crypto::Key& key, const crypto::Salt& salt, uint32_t spi);
  ~PeerSa();
  PeerSa(const PeerSa&) = delete;
  PeerSa& operator=(const PeerSa&) = delete;

  // Seals esp[16, 16 + payload_len) in place with sequence number seq (the
  // IV is seq), writing the ESP header, IV, trailer and ICV (the buffer
  // holds crypto::espTrailerLen(payload_len) more bytes).  Returns the ESP
  // packet's length (0: OpenSSL failed).
  size_t seal(uint64_t seq, uint8_t next_header, uint8_t* esp, size_t payload_len);
  // Opens esp[0, len) expecting this SA's SPI and sequence number seq:
  // checks the header, verifies the ICV, decrypts in place, checks the
  // padding.  Empty when it opened (*payload_len and *next_header set),
  // else what is wrong.
  std::string open(uint64_t seq, uint8_t* esp, size_t len, size_t* payload_len,
                   uint8_t* next_header);

 private:
  evp_cipher_ctx_st* ctx_ = nullptr;
  crypto::Key key_;
  crypto::Salt salt_;
  uint32_t spi_;
};

// Checks an ESP frame that we sent to the peer (outer Ethernet, IPv4
// protocol 50 with DF, TTL, addresses, length and checksum), opens it as
// the peer (`peer`: SPI, sequence number `seq`, the ICV, the padding, next
// header UDP) and writes the plain VXLAN frame it carries (the outer
// Ethernet and IPv4 headers, protocol 17, the datagram) to *plain, for
// checkTunnel.
std::string openEspFrame(const uint8_t* frame, size_t len, PeerSa& peer, uint64_t seq,
                         const ExpectTunnel& e, std::vector<uint8_t>* plain);

std::string toString(const Mac& m);
std::string toString(const Ip4& a);

}  // namespace mcgw::bench
