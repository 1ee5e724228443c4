// VRRP's sockets on a LAN port's kernel side (the af_xdp interface, or the
// TAP of an af_packet/PCI port): one AF_PACKET socket reads advertisements,
// ARP requests and Neighbor Solicitations (a classic BPF filter lets nothing
// else through) and sends whole frames (multicast advertisements from the
// virtual MAC, gratuitous ARP, Neighbor Advertisements, answers); raw IP
// sockets send unicast advertisements, whose next hop the kernel resolves.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "config/result.hpp"
#include "control/core/fd.hpp"
#include "dataplane/proto/vrrp.hpp"

namespace mcgw::vrrp {

using core::Fd;

// The largest frame read; longer ones are cut (and then fail to parse).
inline constexpr size_t kMaxFrame = 2048;

struct Frame {
  size_t length = 0;
  bool outgoing = false;  // a copy of a frame this host sent (ignored)
};

class PortSockets {
 public:
  // Joins a link-layer multicast group on the socket's interface (its
  // multicast filter lets the group's frames in while the socket is open).
  Result<bool, std::string> joinMulticast(const proto::Mac& mac);
  // Opens the AF_PACKET socket on the interface and joins the VRRP
  // multicast groups (the interface's multicast filter accepts them).
  static Result<PortSockets, std::string> open(const std::string& ifname, int ifindex);

  int packetFd() const { return packet_.get(); }
  // One frame, or nullopt when nothing is queued (the socket is
  // non-blocking); an error other than EAGAIN is returned as an error.
  Result<std::optional<Frame>, std::string> receive(std::span<uint8_t> buf);
  // A whole Ethernet frame out of the interface.
  Result<bool, std::string> sendFrame(std::span<const uint8_t> frame);
  // A VRRP message (payload of an IP packet) from src to dst by a raw IP
  // socket bound to src and the interface, TTL / hop limit 255.
  Result<bool, std::string> sendRaw(std::span<const uint8_t> vrrp, const proto::IpAddr& src,
                                    const proto::IpAddr& dst);

 private:
  std::string ifname_;
  int ifindex_ = 0;
  Fd packet_;
  Fd raw4_, raw6_;
  std::optional<proto::IpAddr> raw4_src_, raw6_src_;
};

}  // namespace mcgw::vrrp
