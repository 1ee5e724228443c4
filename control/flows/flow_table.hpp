// Flow audit's aggregation (docs/monitoring.md, "Flow audit (IPFIX)"): the
// workers' samples (engine::FlowSample) become flow records keyed by
// tenant (its VNI), 5-tuple, direction, peer and line, and what became of
// the packets (forwarded, or dropped by which policy rule or the meter:
// a flow's denied packets are a record apart), with packets and bytes scaled
// by the sampling rate (each sample stands for N packets), the first and
// last time seen and the OR of the TCP flags.  A record ends and is
// exported after the idle timeout without a sample, or the active timeout
// after it began (the next sample starts a new record).  The table holds at
// most `max_flows` records; a new flow when it is full first ends the
// least recently seen one ("lack of resources", counted).
//
// Pure: time comes from the caller (milliseconds since the Unix epoch), so
// tests drive it.  Not thread-safe (the control thread owns it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <string>
#include <unordered_map>
#include <vector>

#include "dataplane/engine/flow_sample.hpp"

namespace mcgw::flows {

// The default bound: 65,536 records of about 150 bytes each (~10 MiB).
inline constexpr size_t kMaxFlows = 65536;

struct FlowKey {
  uint32_t vni = 0;  // the tenant's (ingressVRFID)
  uint16_t peer = 0;
  uint16_t line = 0;
  uint16_t src_port = 0;
  uint16_t dst_port = 0;
  uint8_t direction = 0;  // engine::FlowDirection
  uint8_t ip_version = 4;
  uint8_t protocol = 0;
  uint8_t status = 0;               // engine::FlowStatus
  uint16_t rule = engine::kNoRule;  // the policy slot that denied it
  uint8_t src[16] = {};
  uint8_t dst[16] = {};
  bool operator==(const FlowKey&) const = default;
};

struct FlowKeyHash {
  size_t operator()(const FlowKey& k) const;
};

// IPFIX flowEndReason (RFC 7011 / IANA: 1 idle, 2 active, 4 forced, 5 lack
// of resources).
enum class EndReason : uint8_t { kIdle = 1, kActive = 2, kForced = 4, kLackOfResources = 5 };

struct FlowRecord {
  FlowKey key;
  uint64_t packets = 0;  // samples x the sampling rate
  uint64_t bytes = 0;    // IP bytes of the samples x the sampling rate
  uint64_t first_ms = 0, last_ms = 0;
  uint8_t tcp_flags = 0;  // OR of the samples' flags
  EndReason end_reason = EndReason::kIdle;
  // The name of key.rule's rule when the record began ("no-ssh",
  // "(default)", "(isolation)"; the caller names it: FlowAudit); "" none.
  std::string rule_name;
};

// IPFIX forwardingStatus (IE 89, RFC 7270 4.12, the IANA "Forwarding
// Status" registry): the status in the two high bits (1 forwarded, 2
// dropped), a reason code in the six low ones.  64: forwarded (unknown
// reason); 129: dropped, ACL deny (a rule, a deny default, isolation);
// 138: dropped, policer (a red meter).
uint8_t forwardingStatus(uint8_t status);
// The status's name as mcgwctl shows it: "forwarded", "policy-deny",
// "tenant-isolation", "rate-limit" (the drop reasons' names).
const char* statusName(uint8_t status);

FlowKey keyOf(const engine::FlowSample& s);

class FlowTable {
 public:
  explicit FlowTable(size_t max_flows = kMaxFlows) : max_(max_flows ? max_flows : 1) {}

  // One sample, seen at at_ms, standing for `scale` packets.  A record
  // ended to make room is appended to `ended`.  Returns the sample's
  // record (packets 1 x scale: it began with this sample).
  FlowRecord& add(const engine::FlowSample& s, uint64_t at_ms, uint32_t scale,
                  std::vector<FlowRecord>& ended);
  // Ends the records whose idle or active timeout has passed at now_ms.
  void expire(uint64_t now_ms, uint64_t active_ms, uint64_t idle_ms,
              std::vector<FlowRecord>& ended);
  // Ends every record (forced end: a reload changed the sampling, a stop).
  void flush(std::vector<FlowRecord>& ended);

  size_t size() const { return index_.size(); }
  // The records, least recently seen first.
  const std::list<FlowRecord>& records() const { return lru_; }
  size_t capacity() const { return max_; }
  // Records ended early because the table was full.
  uint64_t evicted() const { return evicted_; }

 private:
  size_t max_;
  std::list<FlowRecord> lru_;  // least recently seen first
  std::unordered_map<FlowKey, std::list<FlowRecord>::iterator, FlowKeyHash> index_;
  uint64_t evicted_ = 0;
};

}  // namespace mcgw::flows
