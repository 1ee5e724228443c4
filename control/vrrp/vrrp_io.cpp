#include "control/vrrp/vrrp_io.hpp"

#include <arpa/inet.h>
#include <linux/filter.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace mcgw::vrrp {

namespace {

std::string sysError(const std::string& what) {
  return what + ": " + std::strerror(errno);
}

// First, frames of a VLAN are not the port's segment: a tag the NIC took off
// (VLAN offload) shows only in the skb's metadata (SKF_AD_VLAN_TAG_PRESENT);
// a tag left in the frame fails the EtherType tests below.  Then
// tcpdump -dd 'arp or (ip proto 112) or (ip6 proto 112) or (icmp6 and ip6[40] == 135)':
// ARP, VRRP over IPv4 and IPv6, ICMPv6 Neighbor Solicitations (right behind
// the IPv6 header; the parser refuses the rest).
constexpr sock_filter kFilter[] = {
    {0x20, 0, 0, static_cast<uint32_t>(SKF_AD_OFF + SKF_AD_VLAN_TAG_PRESENT)},
    {0x15, 0, 15, 0x00000000},  // tagged: to the last instruction (drop)
    {0x28, 0, 0, 0x0000000c},
    {0x15, 12, 0, 0x00000806},
    {0x15, 0, 2, 0x00000800},
    {0x30, 0, 0, 0x00000017},
    {0x15, 9, 10, 0x00000070},
    {0x15, 0, 9, 0x000086dd},
    {0x30, 0, 0, 0x00000014},
    {0x15, 6, 0, 0x00000070},
    {0x15, 0, 2, 0x0000002c},
    {0x30, 0, 0, 0x00000036},
    {0x15, 3, 0, 0x00000070},
    {0x15, 0, 3, 0x0000003a},
    {0x30, 0, 0, 0x00000036},
    {0x15, 0, 1, 0x00000087},
    {0x6, 0, 0, 0x00040000},
    {0x6, 0, 0, 0x00000000},
};

// A raw socket that only sends: its receive queue would fill with every
// VRRP packet the host sees.
constexpr sock_filter kDropAll[] = {{0x6, 0, 0, 0x00000000}};

template <size_t N>
bool attachFilter(int fd, const sock_filter (&f)[N]) {
  sock_fprog prog{static_cast<unsigned short>(N), const_cast<sock_filter*>(f)};
  return setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof(prog)) == 0;
}

}  // namespace

Result<PortSockets, std::string> PortSockets::open(const std::string& ifname, int ifindex) {
  PortSockets s;
  s.ifname_ = ifname;
  s.ifindex_ = ifindex;
  // Protocol 0 until bound: no frame is queued before the filter is on.
  s.packet_ = Fd(::socket(AF_PACKET, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!s.packet_) {
    return unexpected(sysError("AF_PACKET socket on " + ifname));
  }
  if (!attachFilter(s.packet_.get(), kFilter)) {
    return unexpected(sysError("filter on the AF_PACKET socket of " + ifname));
  }
  sockaddr_ll sll{};
  sll.sll_family = AF_PACKET;
  sll.sll_protocol = htons(ETH_P_ALL);
  sll.sll_ifindex = ifindex;
  if (::bind(s.packet_.get(), reinterpret_cast<sockaddr*>(&sll), sizeof(sll)) != 0) {
    return unexpected(sysError("binding the AF_PACKET socket to " + ifname));
  }
  for (const auto& mac : {proto::kVrrpGroupMacV4, proto::kVrrpGroupMacV6}) {
    packet_mreq mr{};
    mr.mr_ifindex = ifindex;
    mr.mr_type = PACKET_MR_MULTICAST;
    mr.mr_alen = 6;
    std::memcpy(mr.mr_address, mac.data(), 6);
    if (setsockopt(s.packet_.get(), SOL_PACKET, PACKET_ADD_MEMBERSHIP, &mr, sizeof(mr)) != 0) {
      return unexpected(sysError("joining the VRRP multicast group on " + ifname));
    }
  }
  return s;
}

Result<bool, std::string> PortSockets::joinMulticast(const proto::Mac& mac) {
  packet_mreq mr{};
  mr.mr_ifindex = ifindex_;
  mr.mr_type = PACKET_MR_MULTICAST;
  mr.mr_alen = 6;
  std::memcpy(mr.mr_address, mac.data(), 6);
  if (setsockopt(packet_.get(), SOL_PACKET, PACKET_ADD_MEMBERSHIP, &mr, sizeof(mr)) != 0) {
    return unexpected(sysError("joining a multicast group on " + ifname_));
  }
  return true;
}

Result<std::optional<Frame>, std::string> PortSockets::receive(std::span<uint8_t> buf) {
  sockaddr_ll from{};
  socklen_t len = sizeof(from);
  const ssize_t n = ::recvfrom(packet_.get(), buf.data(), buf.size(), MSG_TRUNC,
                               reinterpret_cast<sockaddr*>(&from), &len);
  if (n < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
      return std::optional<Frame>();
    }
    return unexpected(sysError("reading VRRP frames on " + ifname_));
  }
  Frame f;
  f.length = std::min(static_cast<size_t>(n), buf.size());
  f.outgoing = from.sll_pkttype == PACKET_OUTGOING;
  return std::optional<Frame>(f);
}

Result<bool, std::string> PortSockets::sendFrame(std::span<const uint8_t> frame) {
  if (frame.size() < 14) {
    return unexpected(std::string("frame too short"));
  }
  sockaddr_ll to{};
  to.sll_family = AF_PACKET;
  to.sll_ifindex = ifindex_;
  to.sll_halen = 6;
  std::memcpy(to.sll_addr, frame.data(), 6);
  const ssize_t n = ::sendto(packet_.get(), frame.data(), frame.size(), 0,
                             reinterpret_cast<sockaddr*>(&to), sizeof(to));
  if (n != static_cast<ssize_t>(frame.size())) {
    return unexpected(sysError("sending a frame on " + ifname_));
  }
  return true;
}

Result<bool, std::string> PortSockets::sendRaw(std::span<const uint8_t> vrrp,
                                               const proto::IpAddr& src, const proto::IpAddr& dst) {
  Fd& fd = src.v6 ? raw6_ : raw4_;
  std::optional<proto::IpAddr>& bound = src.v6 ? raw6_src_ : raw4_src_;
  if (fd && bound != src) {
    fd.reset();
  }
  if (!fd) {
    const int family = src.v6 ? AF_INET6 : AF_INET;
    Fd s(::socket(family, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, proto::kIpProtoVrrp));
    if (!s) {
      return unexpected(sysError("raw VRRP socket on " + ifname_));
    }
    attachFilter(s.get(), kDropAll);
    if (setsockopt(s.get(), SOL_SOCKET, SO_BINDTODEVICE, ifname_.c_str(),
                   static_cast<socklen_t>(ifname_.size())) != 0) {
      return unexpected(sysError("binding the raw VRRP socket to " + ifname_));
    }
    const int ttl = proto::kVrrpTtl;
    const int tos = proto::kVrrpTos;
    if (src.v6) {
      sockaddr_in6 a{};
      a.sin6_family = AF_INET6;
      std::memcpy(&a.sin6_addr, src.bytes.data(), 16);
      if ((src.bytes[0] == 0xfe && (src.bytes[1] & 0xc0) == 0x80)) {
        a.sin6_scope_id = static_cast<uint32_t>(ifindex_);
      }
      setsockopt(s.get(), IPPROTO_IPV6, IPV6_UNICAST_HOPS, &ttl, sizeof(ttl));
      setsockopt(s.get(), IPPROTO_IPV6, IPV6_TCLASS, &tos, sizeof(tos));
      if (::bind(s.get(), reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
        return unexpected(sysError("binding the raw VRRP socket to " + proto::toString(src)));
      }
    } else {
      sockaddr_in a{};
      a.sin_family = AF_INET;
      std::memcpy(&a.sin_addr, src.bytes.data(), 4);
      setsockopt(s.get(), IPPROTO_IP, IP_TTL, &ttl, sizeof(ttl));
      setsockopt(s.get(), IPPROTO_IP, IP_TOS, &tos, sizeof(tos));
      if (::bind(s.get(), reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
        return unexpected(sysError("binding the raw VRRP socket to " + proto::toString(src)));
      }
    }
    fd = std::move(s);
    bound = src;
  }
  ssize_t n;
  if (dst.v6) {
    sockaddr_in6 a{};
    a.sin6_family = AF_INET6;
    std::memcpy(&a.sin6_addr, dst.bytes.data(), 16);
    if (dst.bytes[0] == 0xfe && (dst.bytes[1] & 0xc0) == 0x80) {
      a.sin6_scope_id = static_cast<uint32_t>(ifindex_);
    }
    n = ::sendto(fd.get(), vrrp.data(), vrrp.size(), 0, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  } else {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    std::memcpy(&a.sin_addr, dst.bytes.data(), 4);
    n = ::sendto(fd.get(), vrrp.data(), vrrp.size(), 0, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  }
  if (n != static_cast<ssize_t>(vrrp.size())) {
    return unexpected(sysError("sending an advertisement to " + proto::toString(dst)));
  }
  return true;
}

}  // namespace mcgw::vrrp
