// Decapsulation of one received frame: outer headers checked, the peer VTEP
// and VNI looked up, Geneve critical options and RFC 6040 ECN applied.  Pure
// (no DPDK): the burst stage calls it per packet on the mbuf's data.
#pragma once

#include <cstdint>

#include "dataplane/engine/drop_reason.hpp"
#include "dataplane/proto/bytes.hpp"

namespace mcgw::engine {

struct DecapResult {
  enum class Kind : uint8_t {
    kNotTunnel,  // not UDP to the VXLAN or Geneve port: for other stages
    kDrop,       // drop, counted under `reason`
    kInner,      // `inner` is the inner Ethernet frame of tenant `tenant`
  } kind = Kind::kNotTunnel;
  DropReason reason = DropReason::kMALFORMED;
  uint32_t vni = 0;
  uint32_t peer = 0;        // the lookup's peer id
  uint32_t tenant = 0;      // the lookup's tenant id
  size_t inner_offset = 0;  // where the inner frame starts in the input
  proto::MutableBytes inner;
};

// lookup must provide:
//   bool peer(bool ipv6, const uint8_t* src_address, uint32_t* peer_id)
//   bool tenant(uint32_t peer_id, uint32_t vni, uint32_t* tenant_id)
//   bool knownGeneveOption(uint16_t option_class, uint8_t type)
// The inner packet's ECN field is rewritten in place when RFC 6040 says so
// (outer CE over inner ECT → CE), IPv4 header checksum updated (RFC 1624).
// verify_ipv4_checksum: check the outer IPv4 header checksum of a tunnel
// packet (drop bad-checksum); false only when the port says it checked it
// on a packet whose type it gives as plain (not tunnel-parsed) IPv4.  The outer UDP checksum is not
// verified (RFC 7348 5, RFC 8926 3.3: a receiver may skip it; the inner frame carries its own).
template <typename Lookup>
DecapResult decapsulate(proto::MutableBytes frame, const Lookup& lookup,
                        bool verify_ipv4_checksum = true);
// The same into `r` (the burst stage: no result copied), returning r.kind.
// fixed_offsets = false skips the fast path for the common packet (tests
// compare the two).
template <typename Lookup>
DecapResult::Kind decapsulateInto(proto::MutableBytes frame, const Lookup& lookup,
                                  bool verify_ipv4_checksum, DecapResult& r,
                                  bool fixed_offsets = true);

}  // namespace mcgw::engine

#include "dataplane/engine/decap_impl.hpp"
