// Test packets for mcgw-bench: inner IPv4/UDP frames and their VXLAN
// encapsulation, built with the proto encoders, and the checks the benchmark
// applies to what the pipeline sends.  Pure (no DPDK).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "dataplane/proto/tunnel.hpp"

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

std::string toString(const Mac& m);
std::string toString(const Ip4& a);

}  // namespace mcgw::bench
