// Implementation of decapsulate() (dataplane/engine/decap.hpp); inline so the
// burst loop can inline the lookups.
#pragma once

#include "dataplane/proto/checksum.hpp"
#include "dataplane/proto/ecn.hpp"
#include "dataplane/proto/ethernet.hpp"
#include "dataplane/proto/geneve.hpp"
#include "dataplane/proto/ipv4.hpp"
#include "dataplane/proto/ipv6.hpp"
#include "dataplane/proto/udp.hpp"
#include "dataplane/proto/vxlan.hpp"

namespace mcgw::engine {

namespace detail {

// Applies RFC 6040 to the inner IP header of `inner` (an Ethernet frame).
// Returns false when the packet must be dropped.
inline bool applyEcnOnDecap(proto::MutableBytes inner, uint8_t outer_ecn) {
  using namespace proto;
  EthernetFrame f = parseEthernet(inner);
  if (!f.eth.ok()) {
    return true;  // not IP inside: nothing to combine
  }
  auto* ip_bytes = reinterpret_cast<uint8_t*>(inner.data()) + f.eth.header_length;
  if (f.ether_type == kEtherTypeIpv4 && f.eth.payload.size() >= sizeof(Ipv4Header) &&
      reinterpret_cast<const Ipv4Header*>(ip_bytes)->version() == 4) {
    auto* ip = reinterpret_cast<Ipv4Header*>(ip_bytes);
    auto ecn = ecnOnDecap(ip->ecn(), outer_ecn);
    if (!ecn) {
      return false;
    }
    if (*ecn != ip->ecn()) {
      uint16_t old_word = static_cast<uint16_t>(ip->version_ihl << 8 | ip->tos);
      ip->tos = static_cast<uint8_t>((ip->tos & 0xfc) | *ecn);
      uint16_t new_word = static_cast<uint16_t>(ip->version_ihl << 8 | ip->tos);
      ip->checksum.set(checksumUpdate16(ip->checksum.get(), old_word, new_word));
    }
  } else if (f.ether_type == kEtherTypeIpv6 && f.eth.payload.size() >= sizeof(Ipv6Header) &&
             reinterpret_cast<const Ipv6Header*>(ip_bytes)->version() == 6) {
    auto* ip = reinterpret_cast<Ipv6Header*>(ip_bytes);
    auto ecn = ecnOnDecap(ip->ecn(), outer_ecn);
    if (!ecn) {
      return false;
    }
    uint32_t w = ip->ver_tc_flow.get();
    ip->ver_tc_flow.set((w & ~(0x3u << 20)) | static_cast<uint32_t>(*ecn) << 20);
  }
  return true;
}

}  // namespace detail

template <typename Lookup>
DecapResult decapsulate(proto::MutableBytes frame, const Lookup& lookup) {
  using namespace proto;
  DecapResult r;
  auto drop = [&r](DropReason why) {
    r.kind = DecapResult::Kind::kDrop;
    r.reason = why;
    return r;
  };
  EthernetFrame eth = parseEthernet(frame);
  if (!eth.eth.ok()) {
    return drop(DropReason::kMALFORMED);
  }
  bool ipv6 = false;
  bool fragment = false;  // a fragment (atomic fragments are whole packets)
  const uint8_t* src = nullptr;
  uint8_t outer_ecn = 0;
  Bytes l4;
  if (eth.ether_type == kEtherTypeIpv4) {
    auto ip = parseIpv4(eth.eth.payload);
    // Not UDP, or a later fragment (no UDP header to tell): not ours to
    // judge; other stages (or the kernel) take it.
    if (!ip.ok() || ip.header->protocol != kIpProtoUdp || ip.header->fragmentOffset() != 0) {
      return r;
    }
    fragment = ip.header->moreFragments();
    src = ip.header->src;
    outer_ecn = ip.header->ecn();
    l4 = ip.payload;
  } else if (eth.ether_type == kEtherTypeIpv6) {
    Ipv6Packet ip = parseIpv6(eth.eth.payload);
    if (!ip.ip.ok() || ip.upper_protocol != kIpProtoUdp || !ip.first_fragment) {
      return r;
    }
    fragment = ip.fragment;
    ipv6 = true;
    src = ip.ip.header->src;
    outer_ecn = ip.ip.header->ecn();
    l4 = ip.upper;
  } else {
    return r;
  }
  const auto* udp_header = headerAt<UdpHeader>(l4);
  if (!udp_header) {
    return r;
  }
  const uint16_t port = udp_header->dst_port.get();
  if (port != kVxlanPort && port != kGenevePort) {
    return r;
  }
  // VTEPs never fragment (RFC 7348 4.3); a receiver may discard fragments.
  if (fragment) {
    return drop(DropReason::kOUTER_FRAGMENT);
  }
  // Checksums (outer IPv4 header, UDP) are the receive offload's job: the
  // burst stage drops what the NIC flags bad before calling decapsulate().
  auto udp = parseUdp(l4);
  if (!udp.ok()) {
    return drop(DropReason::kMALFORMED);
  }
  if (!lookup.peer(ipv6, src, &r.peer)) {
    return drop(DropReason::kUNKNOWN_VTEP);
  }
  Bytes inner;
  if (port == kVxlanPort) {
    auto v = parseVxlan(udp.payload);
    if (!v.ok()) {
      return drop(DropReason::kMALFORMED);
    }
    r.vni = v.header->vni();
    inner = v.payload;
  } else {
    auto g = parseGeneve(udp.payload);
    if (!g.ok() || g.header->protocol.get() != kGeneveProtoEthernet) {
      return drop(DropReason::kMALFORMED);
    }
    if (g.header->flags & kGeneveFlagOam) {
      return drop(DropReason::kOAM);  // RFC 8926 §3.4: never forwarded
    }
    // The C flag says whether any option is critical (RFC 8926 §3.4): only
    // then must the options be walked.
    if (g.header->critical() && hasUnknownCriticalOption(g, [&](uint16_t c, uint8_t t) {
          return lookup.knownGeneveOption(c, t);
        })) {
      return drop(DropReason::kCRITICAL_OPTION);
    }
    r.vni = g.header->vni();
    inner = g.payload;
  }
  if (!lookup.tenant(r.peer, r.vni, &r.tenant)) {
    return drop(DropReason::kUNKNOWN_VNI);
  }
  if (inner.size() < sizeof(EthernetHeader)) {
    return drop(DropReason::kMALFORMED);
  }
  r.inner_offset = static_cast<size_t>(inner.data() - frame.data());
  r.inner = frame.subspan(r.inner_offset, inner.size());
  // Outer Not-ECT or ECT(0) never changes the inner field (RFC 6040 4.2):
  // only ECT(1) and CE need the inner header.
  if ((outer_ecn == kEcnEct1 || outer_ecn == kEcnCe) &&
      !detail::applyEcnOnDecap(r.inner, outer_ecn)) {
    return drop(DropReason::kECN);
  }
  r.kind = DecapResult::Kind::kInner;
  return r;
}

}  // namespace mcgw::engine
