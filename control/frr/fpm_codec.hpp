// The Forwarding Plane Manager (FPM) wire format as FRR zebra's dplane_fpm_nl
// sends it, decoded into routes and next-hop objects.  Pure functions over
// bytes: no sockets, no event loop (the FPM server feeds a FpmFramer with what
// it reads and decodes each frame).
//
// A frame: | version u8 = 1 | type u8 = 1 (netlink) | length u16 BE, header
// included | netlink messages (host byte order), one or several
// (RTM_NEWROUTE, RTM_DELROUTE, RTM_NEWNEXTHOP, RTM_DELNEXTHOP; an update
// without "fpm use-route-replace" is DEL+NEW in one frame).
//
// The decoder is strict: zebra is trusted to be correct, so anything it would
// not send is refused as a whole frame rather than half understood.
// docs/routing.md ("The FPM decoder") lists what is accepted and refused.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "config/net.hpp"
#include "config/result.hpp"

namespace mcgw::frr {

inline constexpr size_t kFpmHeaderSize = 4;  // version u8 = 1, type u8 = 1, length u16 BE
inline constexpr size_t kFpmMaxFrame = 65535;
// zebra's ECMP limit (MULTIPATH_NUM, and "-e" is capped there) and the
// largest group a route may use.
inline constexpr size_t kFpmMaxPaths = 256;

struct FpmNextHop {                          // one path
  std::optional<config::IpAddress> gateway;  // RTA_GATEWAY, or RTA_VIA (an IPv6 gateway of IPv4)
  uint32_t ifindex = 0;                      // RTA_OIF / rtnh_ifindex, 0 if none
  uint16_t weight = 1;                       // rtnh_hops + 1
  bool operator==(const FpmNextHop&) const = default;
};

struct FpmRoute {           // RTM_NEWROUTE / RTM_DELROUTE
  bool withdraw = false;    // RTM_DELROUTE
  bool replace = false;     // NLM_F_REPLACE on a NEWROUTE
  config::IpPrefix prefix;  // rtm_family, rtm_dst_len, RTA_DST (absent: the default route)
  uint32_t table = 254;     // RTA_TABLE wins over rtm_table
  uint8_t protocol = 0;     // rtm_protocol (zebra: 186 bgp, 196 static, ...)
  uint8_t type = 1;  // rtm_type: RTN_UNICAST 1, RTN_BLACKHOLE 6, RTN_UNREACHABLE 7, RTN_PROHIBIT 8
  uint32_t metric = 0;                // RTA_PRIORITY
  std::optional<uint32_t> nh_id;      // RTA_NH_ID (next-hop group mode)
  std::vector<FpmNextHop> next_hops;  // RTA_GATEWAY/RTA_OIF, or each rtnexthop of RTA_MULTIPATH
  bool operator==(const FpmRoute&) const = default;
};

struct FpmNextHopObject {  // RTM_NEWNEXTHOP / RTM_DELNEXTHOP
  bool withdraw = false;
  uint32_t id = 0;  // NHA_ID, required, non-zero
  uint8_t family = 0;
  bool blackhole = false;                           // NHA_BLACKHOLE
  std::optional<FpmNextHop> next_hop;               // NHA_GATEWAY / NHA_OIF
  std::vector<std::pair<uint32_t, uint8_t>> group;  // NHA_GROUP: (id, weight as sent)
  bool operator==(const FpmNextHopObject&) const = default;
};

using FpmMessage = std::variant<FpmRoute, FpmNextHopObject>;

// Splits a TCP byte stream into frames; strict about the header.
class FpmFramer {
 public:
  // Appends (the buffer holds at most one incomplete frame plus what was fed).
  void feed(std::span<const uint8_t> bytes);
  // The next complete frame (header included), nullopt when more bytes are
  // needed, or an error (bad version/type, length < 4) after which the stream
  // is unusable: every later call returns the same error (the server closes it).
  std::optional<Result<std::vector<uint8_t>, std::string>> next();
  size_t buffered() const { return buffer_.size() - start_; }

 private:
  std::vector<uint8_t> buffer_;
  size_t start_ = 0;  // consumed bytes at the front of buffer_, dropped on the next feed()
  std::optional<std::string> error_;
};

// Checks a frame header (at least kFpmHeaderSize bytes); the frame's total
// length, or an error.
Result<size_t, std::string> fpmFrameLength(std::span<const uint8_t> header);

// Decodes one frame (header included): every netlink message in it, in order.
// Strict: a bad header, a truncated or over-long nlmsghdr, an unknown message
// type, an attribute running past its message, a prefix length beyond the
// family, host bits set, a gateway of the wrong size, an empty RTA_MULTIPATH,
// more than 256 paths → an error naming the message index and the field.
// NLMSG_NOOP/NLMSG_DONE are skipped.  Unknown route attributes are ignored.
// Nothing is partially returned: the whole frame or an error.
Result<std::vector<FpmMessage>, std::string> decodeFpmFrame(std::span<const uint8_t> frame);

}  // namespace mcgw::frr
