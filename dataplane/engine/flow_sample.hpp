// Flow audit in the fast path (docs/monitoring.md, "Flow audit (IPFIX)"):
// a worker that samples (LiveState::flow_sampling = N, 1-in-N of the
// packets it routes) writes one FlowSample per sampled packet into its own
// single-producer ring; the control plane (control/flows) drains the rings
// and aggregates the samples into flow records.  A full ring drops the
// sample (counted: flow_audit.ring_full), never waits.
#pragma once

#include <cstdint>

namespace mcgw::engine {

enum class FlowDirection : uint8_t { kToTunnel = 0, kFromTunnel = 1 };

// One sampled packet, as the worker saw it when it routed it: the inner
// packet (mapped ranges: the real addresses, before a source is mapped and
// after a destination is unmapped).
struct FlowSample {
  uint64_t tsc = 0;        // rte_rdtsc() of the burst
  uint8_t src[16] = {};    // IPv4: the first 4 bytes, the rest zero
  uint8_t dst[16] = {};    //
  uint32_t vni = 0;        // the tenant's VNI (an index would go stale with a reload)
  uint16_t tenant = 0;     // index into ForwardingTables::tenants when it was taken
  uint16_t peer = 0;       // index into the config's peers (TunnelEntry::peer)
  uint16_t line = 0;       // the line's counter slot (LineEntry::slot)
  uint16_t src_port = 0;   // TCP / UDP / SCTP ports (host order); 0 otherwise
  uint16_t dst_port = 0;   //
  uint16_t ip_len = 0;     // the IP packet's length
  uint8_t direction = 0;   // FlowDirection
  uint8_t ip_version = 0;  // 4 or 6
  uint8_t protocol = 0;    // IPv6: the first next header (extension headers are not walked)
  uint8_t tcp_flags = 0;   // the TCP flags byte (FIN 0x01 ... CWR 0x80); 0 for other protocols
};
static_assert(sizeof(FlowSample) == 64 && sizeof(FlowSample) % 4 == 0, "an rte_ring element");

// How many samples a worker's ring holds (the control plane drains it every
// kFlowDrainMs, control/flows).
inline constexpr unsigned kFlowRingSize = 8192;

// The packet part of a sample: addresses, protocol, ports, TCP flags and
// length from the IP packet at l3 (l3_len bytes, already checked by the
// pipeline's checkL3).  Fragments other than the first carry no ports.
void fillFlowSample(FlowSample& s, const uint8_t* l3, uint32_t l3_len, bool v6);

}  // namespace mcgw::engine
