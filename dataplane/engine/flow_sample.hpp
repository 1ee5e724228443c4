// Flow audit in the fast path (docs/monitoring.md, "Flow audit (IPFIX)"):
// a worker that samples (LiveState::flow_sampling = N, 1-in-N of the
// packets it routes, its policy denies or its meters drop red: one
// countdown over them all) writes one FlowSample per sampled packet into its own
// single-producer ring; the control plane (control/flows) drains the rings
// and aggregates the samples into flow records.  A full ring drops the
// sample (counted: flow_audit.ring_full), never waits.
#pragma once

#include <cstdint>

namespace mcgw::engine {

enum class FlowDirection : uint8_t { kToTunnel = 0, kFromTunnel = 1 };

// What became of a sampled packet: forwarded, or dropped by the tenant's
// policy (a deny rule or a deny default: policy-deny), as isolation
// (tenant-isolation), or red by the tenant's meter on the line
// (rate-limit).  The IPFIX exporter sends it as forwardingStatus (IE 89).
enum class FlowStatus : uint8_t {
  kForwarded = 0,
  kPolicyDeny = 1,
  kIsolation = 2,
  kRateLimit = 3,
  kLineFull = 4,  // the queue of its priority on a shaped line was full
};

// FlowSample::rule when no rule decided (forwarded, rate-limit).
inline constexpr uint16_t kNoRule = 0xffff;
// FlowSample::peer and line of a packet that neither came out of a tunnel
// nor was headed into a line (a packet from a LAN port the policy denied).
inline constexpr uint16_t kNoPeer = 0xffff;
inline constexpr uint16_t kNoLine = 0xffff;

// One sampled packet, as the worker saw it when it routed or dropped it: the inner
// packet (mapped ranges: the real addresses, before a source is mapped and
// after a destination is unmapped).
struct FlowSample {
  uint64_t tsc = 0;        // rte_rdtsc() of the burst
  uint8_t src[16] = {};    // IPv4: the first 4 bytes, the rest zero
  uint8_t dst[16] = {};    //
  uint32_t vni = 0;        // the tenant's VNI (an index would go stale with a reload)
  uint16_t tenant = 0;     // index into ForwardingTables::tenants when it was taken
  uint16_t peer = 0;       // index into the config's peers (TunnelEntry::peer); or kNoPeer
  uint16_t line = 0;       // the line's counter slot (LineEntry::slot); or kNoLine
  uint16_t src_port = 0;   // TCP / UDP / SCTP ports (host order); 0 otherwise
  uint16_t dst_port = 0;   //
  uint16_t ip_len = 0;     // the IP packet's length
  uint8_t direction = 0;   // FlowDirection
  uint8_t ip_version = 0;  // 4 or 6
  uint8_t protocol = 0;    // IPv6: the first next header (extension headers are not walked)
  uint8_t tcp_flags = 0;   // the TCP flags byte (FIN 0x01 ... CWR 0x80); 0 for other protocols
  uint8_t status = 0;      // FlowStatus
  uint8_t reserved = 0;    //
  // The policy counter slot of the rule, default or isolation that denied
  // it (engine/policy_tables.hpp: a slot stays with its "tenant/rule" name
  // across reloads); kNoRule otherwise.
  uint16_t rule = kNoRule;
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
