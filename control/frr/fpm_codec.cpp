// Hand-written netlink parsing rather than libmnl: mnl_attr_for_each() stops
// silently at an attribute that runs past its message, and the decoder must
// refuse that instead.  Every read below is bounds-checked against the
// enclosing message (or attribute) first.
#include "control/frr/fpm_codec.hpp"

#include <linux/netlink.h>
#include <linux/nexthop.h>
#include <linux/rtnetlink.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstring>
#include <string_view>
#include <type_traits>

namespace mcgw::frr {

namespace {

using Bytes = std::span<const uint8_t>;
// An error text, or nothing when the step succeeded.
using Failure = std::optional<std::string>;

template <typename T>
T load(Bytes b, size_t offset = 0) {
  T v;
  std::memcpy(&v, b.data() + offset, sizeof v);
  return v;
}

// Error texts: strings and numbers joined (GCC 12 has no std::format).
void append(std::string& out, std::string_view s) {
  out += s;
}
template <typename N>
requires std::is_integral_v<N>
void append(std::string& out, N n) {
  out += std::to_string(n);
}
template <typename... Parts>
std::string text(const Parts&... parts) {
  std::string out;
  (append(out, parts), ...);
  return out;
}

constexpr size_t align4(size_t n) {
  return (n + 3) & ~size_t{3};
}

size_t addressSize(uint8_t family) {
  return family == AF_INET ? 4 : family == AF_INET6 ? 16 : 0;
}

config::IpAddress address(uint8_t family, Bytes raw) {
  config::IpAddress a;
  a.family = family == AF_INET ? config::Family::V4 : config::Family::V6;
  std::copy(raw.begin(), raw.end(), a.bytes.begin());
  return a;
}

const char* familyName(uint8_t family) {
  return family == AF_INET ? "IPv4" : "IPv6";
}

// Calls visit(type, payload) for each attribute of `attrs` (the type without
// the NLA_F_NESTED / NLA_F_NET_BYTEORDER flags; FRR sets NLA_F_NESTED on
// RTA_MULTIPATH).  Refuses an attribute shorter than its header or running
// past `attrs`; the last one may omit its padding.
template <typename Visit>
Failure forEachAttribute(Bytes attrs, Visit&& visit) {
  size_t pos = 0;
  while (pos < attrs.size()) {
    const size_t left = attrs.size() - pos;
    if (left < sizeof(nlattr)) {
      return text(left, " stray bytes after the last attribute");
    }
    const auto nla = load<nlattr>(attrs, pos);
    const uint16_t type = nla.nla_type & NLA_TYPE_MASK;
    if (nla.nla_len < sizeof(nlattr)) {
      return text("attribute ", type, " with length ", nla.nla_len);
    }
    if (nla.nla_len > left) {
      return text("attribute ", type, " of ", nla.nla_len, " bytes runs past its message (", left,
                  " left)");
    }
    if (Failure f = visit(type, attrs.subspan(pos + sizeof(nlattr), nla.nla_len - sizeof(nlattr))))
      return f;
    pos += std::min(align4(nla.nla_len), left);
  }
  return std::nullopt;
}

Failure readU32(const char* name, Bytes payload, uint32_t& out) {
  if (payload.size() != 4) {
    return text(name, " of ", payload.size(), " bytes, expected 4");
  }
  out = load<uint32_t>(payload);
  return std::nullopt;
}

Failure readAddress(const char* name, uint8_t family, Bytes payload,
                    std::optional<config::IpAddress>& out) {
  if (payload.size() != addressSize(family)) {
    return text(name, " of ", payload.size(), " bytes for ", familyName(family), ", expected ",
                addressSize(family));
  }
  out = address(family, payload);
  return std::nullopt;
}

// RTA_VIA: struct rtvia, a gateway of another family (an IPv6 next hop of an
// IPv4 route, RFC 5549).
Failure readVia(Bytes payload, std::optional<config::IpAddress>& out) {
  if (payload.size() < sizeof(rtvia)) {
    return text("RTA_VIA of ", payload.size(), " bytes");
  }
  const auto family = load<uint16_t>(payload);
  if (family != AF_INET && family != AF_INET6) {
    return text("RTA_VIA of family ", family);
  }
  return readAddress("RTA_VIA address", static_cast<uint8_t>(family),
                     payload.subspan(sizeof(rtvia)), out);
}

// Refuses an attribute seen twice: the kernel would keep the last one, zebra
// never sends two, so two mean a broken encoder.
Failure once(const char* name, bool& seen) {
  if (seen) {
    return text(name, " twice");
  }
  seen = true;
  return std::nullopt;
}

Failure decodeMultipath(uint8_t family, Bytes payload, std::vector<FpmNextHop>& out) {
  size_t pos = 0;
  while (pos < payload.size()) {
    const size_t left = payload.size() - pos;
    if (left < sizeof(rtnexthop)) {
      return text("RTA_MULTIPATH: ", left, " stray bytes after path ", out.size());
    }
    const auto rtnh = load<rtnexthop>(payload, pos);
    if (rtnh.rtnh_len < sizeof(rtnexthop) || rtnh.rtnh_len > left) {
      return text("RTA_MULTIPATH: path ", out.size(), " has rtnh_len ", rtnh.rtnh_len, " (", left,
                  " bytes left)");
    }
    if (out.size() == kFpmMaxPaths) {
      return text("RTA_MULTIPATH: more than ", kFpmMaxPaths, " paths");
    }
    FpmNextHop hop;
    hop.ifindex = static_cast<uint32_t>(rtnh.rtnh_ifindex);
    hop.weight = static_cast<uint16_t>(rtnh.rtnh_hops + 1);
    bool gateway_seen = false;
    Failure f = forEachAttribute(
        payload.subspan(pos + sizeof(rtnexthop), rtnh.rtnh_len - sizeof(rtnexthop)),
        [&](uint16_t type, Bytes value) -> Failure {
          switch (type) {
            case RTA_GATEWAY:
              if (Failure g = once("RTA_GATEWAY/RTA_VIA", gateway_seen))
                return g;
              return readAddress("RTA_GATEWAY", family, value, hop.gateway);
            case RTA_VIA:
              if (Failure g = once("RTA_GATEWAY/RTA_VIA", gateway_seen))
                return g;
              return readVia(value, hop.gateway);
            default:  // RTA_ENCAP, RTA_FLOW, ...: not used by the fast path
              return std::nullopt;
          }
        });
    if (f) {
      return text("RTA_MULTIPATH path ", out.size(), ": ", *f);
    }
    out.push_back(hop);
    pos += std::min(align4(rtnh.rtnh_len), left);
  }
  if (out.empty()) {
    return std::string("empty RTA_MULTIPATH");
  }
  return std::nullopt;
}

Failure decodeRoute(const nlmsghdr& nlh, Bytes body, FpmRoute& route) {
  if (body.size() < sizeof(rtmsg)) {
    return text("rtmsg truncated (", body.size(), " bytes)");
  }
  const auto rtm = load<rtmsg>(body);
  if (rtm.rtm_family != AF_INET && rtm.rtm_family != AF_INET6) {
    return text("rtm_family ", rtm.rtm_family, " is neither IPv4 nor IPv6");
  }
  const uint8_t family = rtm.rtm_family;
  const unsigned bits = addressSize(family) * 8;
  if (rtm.rtm_dst_len > bits) {
    return text("rtm_dst_len ", rtm.rtm_dst_len, " beyond ", familyName(family));
  }
  // A source-specific route (zebra supports them for IPv6) read as a plain
  // one would catch traffic it is not meant for.
  if (rtm.rtm_src_len != 0) {
    return text("rtm_src_len ", rtm.rtm_src_len, ": source-specific routes are not supported");
  }
  route.withdraw = nlh.nlmsg_type == RTM_DELROUTE;
  route.replace = !route.withdraw && (nlh.nlmsg_flags & NLM_F_REPLACE) != 0;
  route.table = rtm.rtm_table;
  route.protocol = rtm.rtm_protocol;
  route.type = rtm.rtm_type;
  route.prefix.address = address(family, {});
  route.prefix.length = rtm.rtm_dst_len;

  std::optional<config::IpAddress> dst;
  FpmNextHop single;
  bool seen_dst = false, seen_gw = false, seen_oif = false, seen_table = false,
       seen_priority = false, seen_nh_id = false, seen_multipath = false;
  Failure f = forEachAttribute(
      body.subspan(align4(sizeof(rtmsg))), [&](uint16_t type, Bytes value) -> Failure {
        switch (type) {
          case RTA_DST:
            if (Failure g = once("RTA_DST", seen_dst))
              return g;
            return readAddress("RTA_DST", family, value, dst);
          case RTA_SRC:
            return std::string("RTA_SRC: source-specific routes are not supported");
          case RTA_GATEWAY:
            if (Failure g = once("RTA_GATEWAY/RTA_VIA", seen_gw))
              return g;
            return readAddress("RTA_GATEWAY", family, value, single.gateway);
          case RTA_VIA:
            if (Failure g = once("RTA_GATEWAY/RTA_VIA", seen_gw))
              return g;
            return readVia(value, single.gateway);
          case RTA_OIF:
            if (Failure g = once("RTA_OIF", seen_oif))
              return g;
            return readU32("RTA_OIF", value, single.ifindex);
          case RTA_TABLE:
            if (Failure g = once("RTA_TABLE", seen_table))
              return g;
            return readU32("RTA_TABLE", value, route.table);
          case RTA_PRIORITY:
            if (Failure g = once("RTA_PRIORITY", seen_priority))
              return g;
            return readU32("RTA_PRIORITY", value, route.metric);
          case RTA_NH_ID: {
            if (Failure g = once("RTA_NH_ID", seen_nh_id))
              return g;
            uint32_t id = 0;
            if (Failure g = readU32("RTA_NH_ID", value, id))
              return g;
            if (id == 0)
              return std::string("RTA_NH_ID 0");
            route.nh_id = id;
            return std::nullopt;
          }
          case RTA_MULTIPATH:
            if (Failure g = once("RTA_MULTIPATH", seen_multipath))
              return g;
            return decodeMultipath(family, value, route.next_hops);
          default:  // RTA_PREFSRC, RTA_METRICS, RTA_ENCAP, ...: not used by the fast path
            return std::nullopt;
        }
      });
  if (f) {
    return f;
  }
  if (seen_multipath && (seen_gw || seen_oif)) {
    return std::string("RTA_MULTIPATH together with RTA_GATEWAY/RTA_OIF");
  }
  if (seen_gw || seen_oif) {
    route.next_hops.push_back(single);
  }
  if (dst) {
    route.prefix.address = *dst;
  }
  if (route.prefix.hasHostBits()) {
    return text("host bits set in ", route.prefix.toString());
  }
  return std::nullopt;
}

Failure decodeNextHop(const nlmsghdr& nlh, Bytes body, FpmNextHopObject& nh) {
  if (body.size() < sizeof(nhmsg)) {
    return text("nhmsg truncated (", body.size(), " bytes)");
  }
  const auto msg = load<nhmsg>(body);
  nh.withdraw = nlh.nlmsg_type == RTM_DELNEXTHOP;
  nh.family = msg.nh_family;
  if (msg.nh_family != AF_UNSPEC && msg.nh_family != AF_INET && msg.nh_family != AF_INET6) {
    return text("nh_family ", msg.nh_family);
  }
  FpmNextHop hop;
  bool seen_id = false, seen_group = false, seen_blackhole = false, seen_oif = false,
       seen_gw = false;
  Failure f = forEachAttribute(
      body.subspan(align4(sizeof(nhmsg))), [&](uint16_t type, Bytes value) -> Failure {
        switch (type) {
          case NHA_ID:
            if (Failure g = once("NHA_ID", seen_id))
              return g;
            return readU32("NHA_ID", value, nh.id);
          case NHA_GROUP: {
            if (Failure g = once("NHA_GROUP", seen_group))
              return g;
            const size_t n = value.size() / sizeof(nexthop_grp);
            if (value.empty() || value.size() % sizeof(nexthop_grp) != 0) {
              return text("NHA_GROUP of ", value.size(), " bytes");
            }
            if (n > kFpmMaxPaths) {
              return text("NHA_GROUP: more than ", kFpmMaxPaths, " members");
            }
            for (size_t i = 0; i < n; ++i) {
              const auto member = load<nexthop_grp>(value, i * sizeof(nexthop_grp));
              if (member.id == 0)
                return text("NHA_GROUP member ", i, " has id 0");
              nh.group.emplace_back(member.id, member.weight);
            }
            return std::nullopt;
          }
          case NHA_BLACKHOLE:
            if (Failure g = once("NHA_BLACKHOLE", seen_blackhole))
              return g;
            if (!value.empty())
              return text("NHA_BLACKHOLE of ", value.size(), " bytes");
            nh.blackhole = true;
            return std::nullopt;
          case NHA_OIF:
            if (Failure g = once("NHA_OIF", seen_oif))
              return g;
            return readU32("NHA_OIF", value, hop.ifindex);
          case NHA_GATEWAY: {
            if (Failure g = once("NHA_GATEWAY", seen_gw))
              return g;
            // zebra has been seen to send an IPv6 gateway with nh_family 0:
            // then the size says which family it is.
            uint8_t family = msg.nh_family;
            if (family == AF_UNSPEC)
              family = value.size() == 4 ? AF_INET : AF_INET6;
            return readAddress("NHA_GATEWAY", family, value, hop.gateway);
          }
          default:  // NHA_GROUP_TYPE, NHA_ENCAP, NHA_FDB, ...: not used by the fast path
            return std::nullopt;
        }
      });
  if (f) {
    return f;
  }
  if (!seen_id || nh.id == 0) {
    return std::string(seen_id ? "NHA_ID 0" : "no NHA_ID");
  }
  if (seen_group && (seen_blackhole || seen_oif || seen_gw)) {
    return std::string("NHA_GROUP together with NHA_BLACKHOLE/NHA_OIF/NHA_GATEWAY");
  }
  if (seen_blackhole && (seen_oif || seen_gw)) {
    return std::string("NHA_BLACKHOLE together with NHA_OIF/NHA_GATEWAY");
  }
  if (!nh.withdraw && !seen_group && !seen_blackhole && !seen_oif && !seen_gw) {
    return std::string("RTM_NEWNEXTHOP without NHA_GROUP, NHA_BLACKHOLE, NHA_OIF or NHA_GATEWAY");
  }
  if (seen_oif || seen_gw) {
    nh.next_hop = hop;
  }
  return std::nullopt;
}

const char* messageName(uint16_t type) {
  switch (type) {
    case RTM_NEWROUTE:
      return "RTM_NEWROUTE";
    case RTM_DELROUTE:
      return "RTM_DELROUTE";
    case RTM_NEWNEXTHOP:
      return "RTM_NEWNEXTHOP";
    case RTM_DELNEXTHOP:
      return "RTM_DELNEXTHOP";
    default:
      return "?";
  }
}

}  // namespace

Result<size_t, std::string> fpmFrameLength(std::span<const uint8_t> header) {
  if (header.size() < kFpmHeaderSize) {
    return unexpected(text("FPM header truncated (", header.size(), " bytes)"));
  }
  if (header[0] != 1) {
    return unexpected(text("FPM header: version ", header[0], ", expected 1"));
  }
  if (header[1] != 1) {
    return unexpected(text("FPM header: type ", header[1], ", expected 1 (netlink)"));
  }
  const size_t length = size_t{header[2]} << 8 | header[3];
  if (length < kFpmHeaderSize) {
    return unexpected(text("FPM header: length ", length, " shorter than the header"));
  }
  return length;
}

void FpmFramer::feed(std::span<const uint8_t> bytes) {
  if (error_) {
    return;
  }
  if (start_ > 0) {
    buffer_.erase(buffer_.begin(), buffer_.begin() + static_cast<ptrdiff_t>(start_));
    start_ = 0;
  }
  buffer_.insert(buffer_.end(), bytes.begin(), bytes.end());
}

std::optional<Result<std::vector<uint8_t>, std::string>> FpmFramer::next() {
  if (error_) {
    return Result<std::vector<uint8_t>, std::string>(unexpected(*error_));
  }
  const auto rest = std::span<const uint8_t>(buffer_).subspan(start_);
  if (rest.size() < kFpmHeaderSize) {
    return std::nullopt;
  }
  auto length = fpmFrameLength(rest);
  if (!length) {
    error_ = length.error();
    return Result<std::vector<uint8_t>, std::string>(unexpected(*error_));
  }
  if (rest.size() < *length) {
    return std::nullopt;
  }
  std::vector<uint8_t> frame(rest.begin(), rest.begin() + static_cast<ptrdiff_t>(*length));
  start_ += *length;
  return Result<std::vector<uint8_t>, std::string>(std::move(frame));
}

Result<std::vector<FpmMessage>, std::string> decodeFpmFrame(std::span<const uint8_t> frame) {
  auto length = fpmFrameLength(frame);
  if (!length) {
    return unexpected(length.error());
  }
  if (*length != frame.size()) {
    return unexpected(
        text("FPM header: length ", *length, " but the frame has ", frame.size(), " bytes"));
  }
  std::vector<FpmMessage> out;
  const Bytes payload = frame.subspan(kFpmHeaderSize);
  size_t pos = 0;
  for (size_t index = 0; pos < payload.size(); ++index) {
    const size_t left = payload.size() - pos;
    if (left < sizeof(nlmsghdr)) {
      return unexpected(text("message ", index, ": nlmsghdr truncated (", left, " bytes left)"));
    }
    const auto nlh = load<nlmsghdr>(payload, pos);
    if (nlh.nlmsg_len < sizeof(nlmsghdr)) {
      return unexpected(
          text("message ", index, ": nlmsg_len ", nlh.nlmsg_len, " shorter than nlmsghdr"));
    }
    if (nlh.nlmsg_len > left) {
      return unexpected(text("message ", index, ": nlmsg_len ", nlh.nlmsg_len,
                             " runs past the frame (", left, " bytes left)"));
    }
    const Bytes body = payload.subspan(pos + sizeof(nlmsghdr), nlh.nlmsg_len - sizeof(nlmsghdr));
    pos += std::min(align4(nlh.nlmsg_len), left);
    Failure f;
    switch (nlh.nlmsg_type) {
      case NLMSG_NOOP:
      case NLMSG_DONE:
        continue;
      case RTM_NEWROUTE:
      case RTM_DELROUTE: {
        FpmRoute route;
        f = decodeRoute(nlh, body, route);
        if (!f)
          out.emplace_back(std::move(route));
        break;
      }
      case RTM_NEWNEXTHOP:
      case RTM_DELNEXTHOP: {
        FpmNextHopObject nh;
        f = decodeNextHop(nlh, body, nh);
        if (!f)
          out.emplace_back(std::move(nh));
        break;
      }
      default:
        return unexpected(text("message ", index, ": unknown nlmsg_type ", nlh.nlmsg_type));
    }
    if (f) {
      return unexpected(text("message ", index, " (", messageName(nlh.nlmsg_type), "): ", *f));
    }
  }
  return out;
}

}  // namespace mcgw::frr
