// The FPM decoder: streams captured from FRR 8.4 zebra (dplane_fpm_nl; how:
// fpm_frames/README.md) decode to exactly the routes and next hops that were
// configured, and hand-built frames check every refusal and the bounds.
#include <gtest/gtest.h>
#include <linux/netlink.h>
#include <linux/nexthop.h>
#include <linux/rtnetlink.h>
#include <sys/socket.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "control/frr/fpm_codec.hpp"

namespace mcgw::frr {
namespace {

using Bytes = std::vector<uint8_t>;

config::IpAddress ip(const char* s) {
  return *config::IpAddress::parse(s);
}
config::IpPrefix prefix(const char* s) {
  return *config::IpPrefix::parse(s);
}

Bytes readCapture(const std::string& name) {
  const std::string path = std::string(MCGW_SOURCE_DIR) + "/tests/unit/control/fpm_frames/" + name;
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in) << path;
  return Bytes(std::istreambuf_iterator<char>(in), {});
}

// Frames of a stream, fed at once; fails the test on a framing error.
std::vector<Bytes> framesOf(const Bytes& stream) {
  FpmFramer framer;
  framer.feed(stream);
  std::vector<Bytes> frames;
  while (auto f = framer.next()) {
    EXPECT_TRUE(f->ok()) << f->error();
    if (!f->ok())
      break;
    frames.push_back(f->value());
  }
  EXPECT_EQ(framer.buffered(), 0u);
  return frames;
}

// One line per message, written out by the test (not by the code under test)
// so that the expectations below are literal text.
std::string describe(const FpmNextHop& h) {
  std::string s;
  if (h.gateway)
    s += " via " + h.gateway->toString();
  if (h.ifindex)
    s += " dev " + std::to_string(h.ifindex);
  if (h.weight != 1)
    s += " weight " + std::to_string(h.weight);
  return s;
}
std::string describe(const FpmMessage& m) {
  if (const auto* r = std::get_if<FpmRoute>(&m)) {
    std::string s = r->withdraw ? "DEL " : r->replace ? "NEW/replace " : "NEW ";
    s += r->prefix.toString() + " table " + std::to_string(r->table) + " proto " +
         std::to_string(r->protocol) + " type " + std::to_string(r->type) + " metric " +
         std::to_string(r->metric);
    if (r->nh_id)
      s += " nhid " + std::to_string(*r->nh_id);
    for (size_t i = 0; i < r->next_hops.size(); ++i) {
      s += (i ? "," : "") + describe(r->next_hops[i]);
    }
    return s;
  }
  const auto& n = std::get<FpmNextHopObject>(m);
  std::string s = (n.withdraw ? "DELNH " : "NEWNH ") + std::to_string(n.id) + " family " +
                  std::to_string(n.family);
  if (n.blackhole)
    s += " blackhole";
  if (n.next_hop)
    s += describe(*n.next_hop);
  if (!n.group.empty()) {
    s += " group";
    for (auto [id, w] : n.group)
      s += " " + std::to_string(id) + "/" + std::to_string(w);
  }
  return s;
}

// Each frame of a captured stream decoded, one string per frame (messages of
// one frame joined by " | ").
std::vector<std::string> decodeCapture(const std::string& name) {
  std::vector<std::string> out;
  for (const Bytes& frame : framesOf(readCapture(name))) {
    auto decoded = decodeFpmFrame(frame);
    EXPECT_TRUE(decoded.ok()) << name << " frame " << out.size() << ": " << decoded.error();
    if (!decoded.ok()) {
      out.push_back("error");
      continue;
    }
    std::string line;
    for (const FpmMessage& m : *decoded)
      line += (line.empty() ? "" : " | ") + describe(m);
    out.push_back(line);
  }
  return out;
}

// "fpm_frames/routes.bin": no next-hop groups; connected routes (proto 2,
// kernel), then static routes (proto 196) as configured by
// capture_fpm_frames.sh.  veth0 is ifindex 3, veth2 5.  IPv4 NEWROUTEs carry
// NLM_F_REPLACE, IPv6 ones do not; an update is DEL+NEW in one frame.
TEST(FpmCapture, Routes) {
  const std::vector<std::string> expected = {
      "NEW/replace 192.0.2.0/24 table 254 proto 2 type 1 metric 20 dev 3",
      "NEW/replace 198.51.100.0/24 table 254 proto 2 type 1 metric 20 dev 5",
      "NEW 2001:db8:1::/64 table 254 proto 2 type 1 metric 20 dev 3",
      "NEW 2001:db8:2::/64 table 254 proto 2 type 1 metric 20 dev 5",
      "NEW fe80::/64 table 254 proto 2 type 1 metric 20 dev 4",
      "NEW/replace 10.1.0.0/16 table 254 proto 196 type 1 metric 20 via 192.0.2.2 dev 3",
      "NEW 2001:db8:100::/48 table 254 proto 196 type 1 metric 20 via 2001:db8:1::2 dev 3",
      "NEW/replace 10.2.0.0/16 table 254 proto 196 type 1 metric 20 via 192.0.2.2 dev 3, via "
      "192.0.2.3 dev 3, via 198.51.100.2 dev 5",
      "NEW 2001:db8:200::/48 table 254 proto 196 type 1 metric 20 via 2001:db8:1::2 dev 3, via "
      "2001:db8:2::2 dev 5",
      "NEW/replace 10.3.0.0/16 table 254 proto 196 type 6 metric 20",
      "NEW 2001:db8:300::/48 table 254 proto 196 type 6 metric 20",
      "NEW/replace 10.4.0.0/16 table 254 proto 196 type 7 metric 20",
      "NEW/replace 0.0.0.0/0 table 254 proto 196 type 1 metric 20 via 198.51.100.254 dev 5",
      "DEL 10.1.0.0/16 table 254 proto 196 type 0 metric 20 | NEW/replace 10.1.0.0/16 table 254 "
      "proto 196 type 1 metric 20 via 198.51.100.9 dev 5",
      "DEL 10.1.0.0/16 table 254 proto 196 type 0 metric 20",
  };
  EXPECT_EQ(decodeCapture("routes.bin"), expected);
}

// "fpm_frames/nhg.bin": "fpm use-next-hop-groups": next-hop objects first,
// routes by RTA_NH_ID, then the groups deleted once unused.
TEST(FpmCapture, NextHopGroups) {
  const std::vector<std::string> expected = {
      "NEWNH 8 family 10 dev 5",
      "NEWNH 10 family 10 dev 2",
      "NEWNH 12 family 10 dev 4",
      "NEWNH 5 family 2 dev 3",
      "NEWNH 6 family 2 dev 5",
      "NEWNH 7 family 10 dev 3",
      "NEW/replace 192.0.2.0/24 table 254 proto 2 type 1 metric 20 nhid 5",
      "NEW/replace 198.51.100.0/24 table 254 proto 2 type 1 metric 20 nhid 6",
      "NEW 2001:db8:1::/64 table 254 proto 2 type 1 metric 20 nhid 7",
      "NEW 2001:db8:2::/64 table 254 proto 2 type 1 metric 20 nhid 8",
      "NEW fe80::/64 table 254 proto 2 type 1 metric 20 nhid 10",
      "NEWNH 16 family 2 via 192.0.2.2 dev 3",
      "NEW/replace 10.1.0.0/16 table 254 proto 196 type 1 metric 20 nhid 16",
      "NEWNH 21 family 2 via 198.51.100.2 dev 5",
      "NEWNH 20 family 0 group 16/0 21/0",
      "NEW/replace 10.2.0.0/16 table 254 proto 196 type 1 metric 20 nhid 20",
      "NEWNH 26 family 10 via 2001:db8:1::2 dev 3",
      "NEWNH 27 family 10 via 2001:db8:2::2 dev 5",
      "NEWNH 25 family 0 group 26/0 27/0",
      "NEW 2001:db8:100::/48 table 254 proto 196 type 1 metric 20 nhid 25",
      "DEL 10.2.0.0/16 table 254 proto 196 type 0 metric 20",
      "DEL 10.1.0.0/16 table 254 proto 196 type 0 metric 20",
      "DELNH 20 family 0",
      "DELNH 16 family 0",
      "DELNH 21 family 0",
  };
  EXPECT_EQ(decodeCapture("nhg.bin"), expected);
}

// "fpm_frames/wide_ecmp.bin": an IPv6 route with 255 paths, gateways
// 2001:db8:1::100 to ::1fe on veth0 (ifindex 3).
TEST(FpmCapture, WideEcmp) {
  const auto frames = framesOf(readCapture("wide_ecmp.bin"));
  ASSERT_EQ(frames.size(), 11u);
  auto paths = [](unsigned n) {
    std::vector<FpmNextHop> hops;
    for (unsigned i = 0; i < n; ++i) {
      auto gw = ip("2001:db8:1::100");
      gw.bytes[14] = static_cast<uint8_t>((0x100 + i) >> 8);
      gw.bytes[15] = static_cast<uint8_t>(0x100 + i);
      hops.push_back({gw, 3, 1});
    }
    return hops;
  };
  FpmRoute wide;
  wide.prefix = prefix("2001:db8:aaaa::/48");
  wide.protocol = 196;
  wide.metric = 20;
  wide.next_hops = paths(255);
  EXPECT_EQ(frames[4].size(), 7204u);  // the widest route FRR 8.4 sends: 28 bytes a path
  auto first = decodeFpmFrame(frames[4]);
  ASSERT_TRUE(first.ok()) << first.error();
  ASSERT_EQ(first->size(), 1u);
  EXPECT_EQ(std::get<FpmRoute>((*first)[0]), wide);
  EXPECT_EQ(wide.next_hops.back().gateway->toString(), "2001:db8:1::1fe");

  // One path fewer (::1fe removed): DEL then NEW in one frame.
  auto update = decodeFpmFrame(frames[6]);
  ASSERT_TRUE(update.ok()) << update.error();
  ASSERT_EQ(update->size(), 2u);
  FpmRoute withdrawn;
  withdrawn.withdraw = true;
  withdrawn.prefix = prefix("2001:db8:aaaa::/48");
  withdrawn.protocol = 196;
  withdrawn.type = 0;
  withdrawn.metric = 20;
  EXPECT_EQ(std::get<FpmRoute>((*update)[0]), withdrawn);
  wide.next_hops = paths(254);
  EXPECT_EQ(std::get<FpmRoute>((*update)[1]), wide);
  auto last = decodeFpmFrame(frames[10]);
  ASSERT_TRUE(last.ok()) << last.error();
  ASSERT_EQ(last->size(), 1u);
  EXPECT_EQ(std::get<FpmRoute>((*last)[0]), withdrawn);

  // The other frames: connected routes, and veth0's going away when it went down.
  const std::vector<std::pair<size_t, std::string>> others = {
      {0, "NEW/replace 192.0.2.0/24 table 254 proto 2 type 1 metric 20 dev 3"},
      {1, "NEW/replace 198.51.100.0/24 table 254 proto 2 type 1 metric 20 dev 5"},
      {2, "NEW 2001:db8:1::/64 table 254 proto 2 type 1 metric 20 dev 3"},
      {3, "NEW 2001:db8:2::/64 table 254 proto 2 type 1 metric 20 dev 5"},
      {5, "NEW fe80::/64 table 254 proto 2 type 1 metric 20 dev 2"},
      {7, "DEL 192.0.2.0/24 table 254 proto 2 type 0 metric 20"},
      {8, "DEL 2001:db8:1::/64 table 254 proto 2 type 0 metric 20"},
      {9, "NEW fe80::/64 table 254 proto 2 type 1 metric 20 dev 2"},
  };
  for (const auto& [i, text] : others) {
    auto decoded = decodeFpmFrame(frames[i]);
    ASSERT_TRUE(decoded.ok()) << decoded.error();
    ASSERT_EQ(decoded->size(), 1u);
    EXPECT_EQ(describe((*decoded)[0]), text) << "frame " << i;
  }
}

// The ECMP route of routes.bin as a whole structure.
TEST(FpmCapture, EcmpRouteStructure) {
  const auto frames = framesOf(readCapture("routes.bin"));
  ASSERT_GT(frames.size(), 7u);
  auto decoded = decodeFpmFrame(frames[7]);
  ASSERT_TRUE(decoded.ok()) << decoded.error();
  ASSERT_EQ(decoded->size(), 1u);
  FpmRoute expected;
  expected.replace = true;
  expected.prefix = prefix("10.2.0.0/16");
  expected.table = 254;
  expected.protocol = 196;
  expected.type = 1;
  expected.metric = 20;
  expected.next_hops = {
      {ip("192.0.2.2"), 3, 1}, {ip("192.0.2.3"), 3, 1}, {ip("198.51.100.2"), 5, 1}};
  EXPECT_EQ(std::get<FpmRoute>((*decoded)[0]), expected);
}

// The framer gives the same frames whatever the TCP segmentation: the stream
// split in two at every byte, and fed one byte at a time.
TEST(FpmFramer, EverySplitOfACapturedStream) {
  for (const char* name : {"routes.bin", "nhg.bin"}) {
    const Bytes stream = readCapture(name);
    const auto whole = framesOf(stream);
    ASSERT_GT(whole.size(), 10u);
    for (size_t cut = 0; cut <= stream.size(); ++cut) {
      FpmFramer framer;
      std::vector<Bytes> got;
      auto drain = [&] {
        while (auto f = framer.next()) {
          ASSERT_TRUE(f->ok()) << f->error();
          got.push_back(f->value());
        }
      };
      framer.feed(std::span(stream).first(cut));
      drain();
      framer.feed(std::span(stream).subspan(cut));
      drain();
      ASSERT_EQ(got, whole) << name << " cut at " << cut;
      EXPECT_EQ(framer.buffered(), 0u);
    }
    FpmFramer framer;
    std::vector<Bytes> got;
    for (uint8_t b : stream) {
      framer.feed(std::span(&b, 1));
      while (auto f = framer.next()) {
        ASSERT_TRUE(f->ok());
        got.push_back(f->value());
      }
    }
    EXPECT_EQ(got, whole) << name;
  }
}

TEST(FpmFramer, BadHeaderPoisonsTheStream) {
  FpmFramer framer;
  framer.feed(Bytes{1, 1, 0});
  EXPECT_FALSE(framer.next());  // 3 bytes: wait for the header
  framer.feed(Bytes{3});        // length 3 < header
  auto f = framer.next();
  ASSERT_TRUE(f && !f->ok());
  EXPECT_EQ(f->error(), "FPM header: length 3 shorter than the header");
  framer.feed(Bytes{1, 1, 0, 4});  // a good frame after it changes nothing
  f = framer.next();
  ASSERT_TRUE(f && !f->ok());
  EXPECT_EQ(f->error(), "FPM header: length 3 shorter than the header");

  FpmFramer v2;
  v2.feed(Bytes{2, 1, 0, 4});
  f = v2.next();
  ASSERT_TRUE(f && !f->ok());
  EXPECT_EQ(f->error(), "FPM header: version 2, expected 1");
  FpmFramer t2;
  t2.feed(Bytes{1, 2, 0, 4});
  f = t2.next();
  ASSERT_TRUE(f && !f->ok());
  EXPECT_EQ(f->error(), "FPM header: type 2, expected 1 (netlink)");
}

TEST(FpmFramer, WaitsForTheWholeFrame) {
  FpmFramer framer;
  Bytes frame = {1, 1, 0x01, 0x00};  // 256 bytes
  frame.resize(256, 0xee);
  framer.feed(std::span(frame).first(255));
  EXPECT_FALSE(framer.next());
  EXPECT_EQ(framer.buffered(), 255u);
  framer.feed(std::span(frame).subspan(255));
  auto f = framer.next();
  ASSERT_TRUE(f && f->ok());
  EXPECT_EQ(f->value(), frame);  // the framer does not look inside
  EXPECT_FALSE(framer.next());
  EXPECT_EQ(framer.buffered(), 0u);
}

// --- Hand-built frames -----------------------------------------------------

// resize + memcpy rather than insert(): GCC 12 warns (stringop-overflow, a
// false positive) about inserting a struct's bytes into an empty vector.
template <typename T>
void put(Bytes& b, const T& v) {
  const size_t at = b.size();
  b.resize(at + sizeof v);
  std::memcpy(b.data() + at, &v, sizeof v);
}
void pad(Bytes& b) {
  b.resize((b.size() + 3) & ~size_t{3}, 0);
}

Bytes attr(uint16_t type, const Bytes& payload) {
  Bytes b;
  put(b, nlattr{static_cast<uint16_t>(sizeof(nlattr) + payload.size()), type});
  b.insert(b.end(), payload.begin(), payload.end());
  pad(b);
  return b;
}
Bytes u32(uint32_t v) {
  Bytes b;
  put(b, v);
  return b;
}
Bytes addr(const char* s) {
  const auto a = ip(s);
  return Bytes(a.bytes.begin(), a.bytes.begin() + a.bits() / 8);
}
Bytes operator+(Bytes a, const Bytes& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

Bytes message(uint16_t type, uint16_t flags, const Bytes& fixed, const Bytes& attrs) {
  Bytes b;
  put(b, nlmsghdr{static_cast<uint32_t>(sizeof(nlmsghdr) + fixed.size() + attrs.size()), type,
                  flags, 0, 0});
  b = b + fixed + attrs;
  pad(b);
  return b;
}
Bytes rtm(uint8_t family, uint8_t dst_len, uint8_t type = RTN_UNICAST, uint8_t table = 254) {
  Bytes b;
  put(b, rtmsg{family, dst_len, 0, 0, table, 196, RT_SCOPE_UNIVERSE, type, 0});
  return b;
}
Bytes nhm(uint8_t family) {
  Bytes b;
  put(b, nhmsg{family, 0, 11, 0, 0});
  return b;
}
Bytes frame(const Bytes& payload) {
  const size_t n = payload.size() + kFpmHeaderSize;
  return Bytes{1, 1, static_cast<uint8_t>(n >> 8), static_cast<uint8_t>(n)} + payload;
}
Bytes rtnh(uint8_t hops, int ifindex, const Bytes& attrs) {
  Bytes b;
  put(b, rtnexthop{static_cast<uint16_t>(sizeof(rtnexthop) + attrs.size()), 0, hops, ifindex});
  return b + attrs;
}
// A NEWROUTE 10.1.0.0/16 via 192.0.2.2 dev 3.
Bytes simpleRoute(uint16_t flags = NLM_F_REQUEST | NLM_F_CREATE) {
  return message(RTM_NEWROUTE, flags, rtm(AF_INET, 16),
                 attr(RTA_DST, addr("10.1.0.0")) + attr(RTA_GATEWAY, addr("192.0.2.2")) +
                     attr(RTA_OIF, u32(3)));
}

std::string refusal(const Bytes& f) {
  auto r = decodeFpmFrame(f);
  EXPECT_FALSE(r.ok()) << "accepted";
  return r.ok() ? "" : r.error();
}

TEST(FpmDecode, RefusesBadHeaders) {
  EXPECT_EQ(refusal(Bytes{1, 1, 0}), "FPM header truncated (3 bytes)");
  EXPECT_EQ(refusal(Bytes{2, 1, 0, 4}), "FPM header: version 2, expected 1");
  EXPECT_EQ(refusal(Bytes{1, 2, 0, 4}), "FPM header: type 2, expected 1 (netlink)");
  EXPECT_EQ(refusal(Bytes{1, 1, 0, 3}), "FPM header: length 3 shorter than the header");
  EXPECT_EQ(refusal(Bytes{1, 1, 0, 8, 0, 0, 0}), "FPM header: length 8 but the frame has 7 bytes");
  auto empty = decodeFpmFrame(Bytes{1, 1, 0, 4});  // a frame with no message is nothing
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
}

TEST(FpmDecode, RefusesBrokenNetlink) {
  // nlmsg_len past the frame: the header says 4 bytes more than there are.
  Bytes m = simpleRoute();
  Bytes longer = m;
  const uint32_t len = static_cast<uint32_t>(m.size() + 4);
  std::memcpy(longer.data(), &len, 4);
  EXPECT_EQ(refusal(frame(longer)), "message 0: nlmsg_len 56 runs past the frame (52 bytes left)");
  // A truncated nlmsghdr after a good message.
  EXPECT_EQ(refusal(frame(m + Bytes(8, 0))), "message 1: nlmsghdr truncated (8 bytes left)");
  // nlmsg_len below the header.
  Bytes tiny = m;
  const uint32_t eight = 8;
  std::memcpy(tiny.data(), &eight, 4);
  EXPECT_EQ(refusal(frame(tiny)), "message 0: nlmsg_len 8 shorter than nlmsghdr");
  // An attribute running past its message: RTA_OIF cut to 2 bytes of value by
  // the message length (the frame has the bytes, the message does not).
  Bytes cut = message(RTM_NEWROUTE, 0, rtm(AF_INET, 16),
                      attr(RTA_DST, addr("10.1.0.0")) + attr(RTA_OIF, u32(3)));
  const uint32_t short_len = static_cast<uint32_t>(cut.size() - 2);
  std::memcpy(cut.data(), &short_len, 4);
  EXPECT_EQ(refusal(frame(cut)),
            "message 0 (RTM_NEWROUTE): attribute 4 of 8 bytes runs past its message (6 left)");
  // An unknown message type, second in the frame.
  EXPECT_EQ(refusal(frame(m + message(RTM_NEWLINK, 0, Bytes(16, 0), {}))),
            "message 1: unknown nlmsg_type 16");
  EXPECT_EQ(refusal(frame(message(NLMSG_ERROR, 0, Bytes(20, 0), {}))),
            "message 0: unknown nlmsg_type 2");
  // rtmsg shorter than its struct.
  EXPECT_EQ(refusal(frame(message(RTM_DELROUTE, 0, Bytes(8, 0), {}))),
            "message 0 (RTM_DELROUTE): rtmsg truncated (8 bytes)");
}

TEST(FpmDecode, RefusesBadPrefixesAndGateways) {
  EXPECT_EQ(refusal(frame(message(RTM_NEWROUTE, 0, rtm(AF_INET, 33),
                                  attr(RTA_DST, addr("10.1.0.0")) + attr(RTA_OIF, u32(3))))),
            "message 0 (RTM_NEWROUTE): rtm_dst_len 33 beyond IPv4");
  EXPECT_EQ(refusal(frame(message(RTM_NEWROUTE, 0, rtm(AF_INET6, 129),
                                  attr(RTA_DST, addr("2001:db8::")) + attr(RTA_OIF, u32(3))))),
            "message 0 (RTM_NEWROUTE): rtm_dst_len 129 beyond IPv6");
  EXPECT_EQ(refusal(frame(message(RTM_NEWROUTE, 0, rtm(AF_INET, 16),
                                  attr(RTA_DST, addr("10.1.0.1")) + attr(RTA_OIF, u32(3))))),
            "message 0 (RTM_NEWROUTE): host bits set in 10.1.0.1/16");
  EXPECT_EQ(refusal(frame(
                message(RTM_NEWROUTE, 0, rtm(AF_INET, 16),
                        attr(RTA_DST, addr("10.1.0.0")) + attr(RTA_GATEWAY, addr("2001:db8::1"))))),
            "message 0 (RTM_NEWROUTE): RTA_GATEWAY of 16 bytes for IPv4, expected 4");
  EXPECT_EQ(
      refusal(frame(message(RTM_NEWROUTE, 0, rtm(AF_INET6, 48), attr(RTA_DST, addr("10.1.0.0"))))),
      "message 0 (RTM_NEWROUTE): RTA_DST of 4 bytes for IPv6, expected 16");
  Bytes source_specific = rtm(AF_INET6, 48);
  source_specific[2] = 64;  // rtm_src_len
  EXPECT_EQ(refusal(frame(message(RTM_NEWROUTE, 0, source_specific,
                                  attr(RTA_DST, addr("2001:db8:100::")) + attr(RTA_OIF, u32(3))))),
            "message 0 (RTM_NEWROUTE): rtm_src_len 64: source-specific routes are not supported");
  EXPECT_EQ(
      refusal(frame(message(RTM_NEWROUTE, 0, rtm(AF_INET6, 48),
                            attr(RTA_DST, addr("2001:db8:100::")) +
                                attr(RTA_SRC, addr("2001:db8:200::")) + attr(RTA_OIF, u32(3))))),
      "message 0 (RTM_NEWROUTE): RTA_SRC: source-specific routes are not supported");
  EXPECT_EQ(refusal(frame(message(RTM_NEWROUTE, 0, rtm(AF_INET, 16),
                                  attr(RTA_DST, addr("10.1.0.0")) + attr(RTA_OIF, Bytes{3, 0})))),
            "message 0 (RTM_NEWROUTE): RTA_OIF of 2 bytes, expected 4");
  EXPECT_EQ(refusal(frame(message(RTM_NEWROUTE, 0, rtm(AF_BRIDGE, 0), {}))),
            "message 0 (RTM_NEWROUTE): rtm_family 7 is neither IPv4 nor IPv6");
  EXPECT_EQ(refusal(frame(message(
                RTM_NEWROUTE, 0, rtm(AF_INET, 16),
                attr(RTA_DST, addr("10.1.0.0")) + attr(RTA_OIF, u32(3)) + attr(RTA_OIF, u32(4))))),
            "message 0 (RTM_NEWROUTE): RTA_OIF twice");
  EXPECT_EQ(refusal(frame(message(RTM_NEWROUTE, 0, rtm(AF_INET, 16),
                                  attr(RTA_DST, addr("10.1.0.0")) + attr(RTA_NH_ID, u32(0))))),
            "message 0 (RTM_NEWROUTE): RTA_NH_ID 0");
}

TEST(FpmDecode, RefusesBadMultipath) {
  const Bytes dst = attr(RTA_DST, addr("10.1.0.0"));
  EXPECT_EQ(refusal(frame(message(RTM_NEWROUTE, 0, rtm(AF_INET, 16),
                                  dst + attr(RTA_MULTIPATH | NLA_F_NESTED, {})))),
            "message 0 (RTM_NEWROUTE): empty RTA_MULTIPATH");
  Bytes paths;
  for (int i = 0; i < 257; ++i)
    paths = paths + rtnh(0, 3, attr(RTA_GATEWAY, addr("192.0.2.2")));
  EXPECT_EQ(refusal(frame(message(RTM_NEWROUTE, 0, rtm(AF_INET, 16),
                                  dst + attr(RTA_MULTIPATH | NLA_F_NESTED, paths)))),
            "message 0 (RTM_NEWROUTE): RTA_MULTIPATH: more than 256 paths");
  // A path whose rtnh_len runs past RTA_MULTIPATH.
  Bytes bad = rtnh(0, 3, attr(RTA_GATEWAY, addr("192.0.2.2")));
  bad[0] = 40;
  EXPECT_EQ(
      refusal(frame(message(RTM_NEWROUTE, 0, rtm(AF_INET, 16), dst + attr(RTA_MULTIPATH, bad)))),
      "message 0 (RTM_NEWROUTE): RTA_MULTIPATH: path 0 has rtnh_len 40 (16 bytes left)");
  // A gateway of the wrong size inside a path.
  EXPECT_EQ(
      refusal(frame(message(
          RTM_NEWROUTE, 0, rtm(AF_INET, 16),
          dst + attr(RTA_MULTIPATH, rtnh(0, 3, attr(RTA_GATEWAY, addr("192.0.2.2"))) +
                                        rtnh(0, 3, attr(RTA_GATEWAY, addr("2001:db8::2"))))))),
      "message 0 (RTM_NEWROUTE): RTA_MULTIPATH path 1: RTA_GATEWAY of 16 bytes for IPv4, "
      "expected 4");
  EXPECT_EQ(refusal(frame(message(
                RTM_NEWROUTE, 0, rtm(AF_INET, 16),
                dst + attr(RTA_OIF, u32(3)) +
                    attr(RTA_MULTIPATH, rtnh(0, 3, attr(RTA_GATEWAY, addr("192.0.2.2"))))))),
            "message 0 (RTM_NEWROUTE): RTA_MULTIPATH together with RTA_GATEWAY/RTA_OIF");
}

TEST(FpmDecode, RefusesBadNextHopObjects) {
  EXPECT_EQ(refusal(frame(message(RTM_NEWNEXTHOP, 0, nhm(AF_INET), attr(NHA_OIF, u32(3))))),
            "message 0 (RTM_NEWNEXTHOP): no NHA_ID");
  EXPECT_EQ(refusal(frame(message(RTM_NEWNEXTHOP, 0, nhm(AF_INET),
                                  attr(NHA_ID, u32(0)) + attr(NHA_OIF, u32(3))))),
            "message 0 (RTM_NEWNEXTHOP): NHA_ID 0");
  EXPECT_EQ(refusal(frame(message(RTM_NEWNEXTHOP, 0, nhm(AF_INET), attr(NHA_ID, u32(7))))),
            "message 0 (RTM_NEWNEXTHOP): RTM_NEWNEXTHOP without NHA_GROUP, NHA_BLACKHOLE, "
            "NHA_OIF or NHA_GATEWAY");
  EXPECT_EQ(refusal(frame(message(RTM_NEWNEXTHOP, 0, nhm(AF_INET),
                                  attr(NHA_ID, u32(7)) + attr(NHA_GATEWAY, addr("2001:db8::1"))))),
            "message 0 (RTM_NEWNEXTHOP): NHA_GATEWAY of 16 bytes for IPv4, expected 4");
  EXPECT_EQ(refusal(frame(message(RTM_NEWNEXTHOP, 0, nhm(AF_UNSPEC),
                                  attr(NHA_ID, u32(7)) + attr(NHA_GROUP, Bytes(12, 1))))),
            "message 0 (RTM_NEWNEXTHOP): NHA_GROUP of 12 bytes");
  EXPECT_EQ(refusal(frame(message(RTM_NEWNEXTHOP, 0, nhm(AF_UNSPEC),
                                  attr(NHA_ID, u32(7)) + attr(NHA_GROUP, Bytes(8, 0))))),
            "message 0 (RTM_NEWNEXTHOP): NHA_GROUP member 0 has id 0");
  Bytes group;
  for (uint32_t i = 1; i <= 257; ++i)
    group = group + u32(i) + u32(0);
  EXPECT_EQ(refusal(frame(message(RTM_NEWNEXTHOP, 0, nhm(AF_UNSPEC),
                                  attr(NHA_ID, u32(7)) + attr(NHA_GROUP, group)))),
            "message 0 (RTM_NEWNEXTHOP): NHA_GROUP: more than 256 members");
  EXPECT_EQ(refusal(frame(message(
                RTM_NEWNEXTHOP, 0, nhm(AF_INET),
                attr(NHA_ID, u32(7)) + attr(NHA_GROUP, u32(5) + u32(0)) + attr(NHA_OIF, u32(3))))),
            "message 0 (RTM_NEWNEXTHOP): NHA_GROUP together with NHA_BLACKHOLE/NHA_OIF/"
            "NHA_GATEWAY");
}

// A route update as zebra sends it without "fpm use-route-replace": DEL and
// NEW in one frame, in that order; NOOP/DONE messages skipped.
TEST(FpmDecode, SeveralMessagesInOneFrame) {
  const Bytes del = message(RTM_DELROUTE, NLM_F_REQUEST, rtm(AF_INET, 16, RTN_UNSPEC),
                            attr(RTA_DST, addr("10.1.0.0")) + attr(RTA_PRIORITY, u32(20)));
  const Bytes noop = message(NLMSG_NOOP, 0, {}, {});
  const Bytes add = simpleRoute(NLM_F_REQUEST | NLM_F_CREATE | NLM_F_REPLACE);
  auto r = decodeFpmFrame(frame(del + noop + add + message(NLMSG_DONE, 0, u32(0), {})));
  ASSERT_TRUE(r.ok()) << r.error();
  ASSERT_EQ(r->size(), 2u);
  FpmRoute withdrawn;
  withdrawn.withdraw = true;
  withdrawn.prefix = prefix("10.1.0.0/16");
  withdrawn.protocol = 196;
  withdrawn.type = RTN_UNSPEC;
  withdrawn.metric = 20;
  EXPECT_EQ(std::get<FpmRoute>((*r)[0]), withdrawn);
  FpmRoute added;
  added.replace = true;
  added.prefix = prefix("10.1.0.0/16");
  added.protocol = 196;
  added.next_hops = {{ip("192.0.2.2"), 3, 1}};
  EXPECT_EQ(std::get<FpmRoute>((*r)[1]), added);
  // Without NLM_F_REPLACE, and a table above 255 in RTA_TABLE.
  r = decodeFpmFrame(
      frame(message(RTM_NEWROUTE, 0, rtm(AF_INET6, 0, RTN_BLACKHOLE, RT_TABLE_COMPAT),
                    attr(RTA_TABLE, u32(1000)) + attr(RTA_NH_ID, u32(42)))));
  ASSERT_TRUE(r.ok()) << r.error();
  FpmRoute blackhole;
  blackhole.prefix = prefix("::/0");
  blackhole.table = 1000;
  blackhole.protocol = 196;
  blackhole.type = RTN_BLACKHOLE;
  blackhole.nh_id = 42;
  EXPECT_EQ(std::get<FpmRoute>(r->at(0)), blackhole);
}

// Nothing is returned from a frame with a bad message after good ones.
TEST(FpmDecode, AllOrNothing) {
  const Bytes bad = message(RTM_NEWROUTE, 0, rtm(AF_INET, 8),
                            attr(RTA_DST, addr("10.1.0.0")) + attr(RTA_OIF, u32(3)));
  EXPECT_EQ(refusal(frame(simpleRoute() + simpleRoute() + bad)),
            "message 2 (RTM_NEWROUTE): host bits set in 10.1.0.0/8");
}

// A route message over 8 KiB (FRR issue 18919): an IPv4 route with 256 IPv6
// gateways (RTA_VIA, RFC 5549), 32 bytes a path; weights from rtnh_hops; an
// unknown per-path attribute (RTA_FLOW) ignored.
TEST(FpmDecode, MessageOver8KiB) {
  Bytes paths;
  std::vector<FpmNextHop> expected;
  for (int i = 0; i < 256; ++i) {
    auto gw = ip("fe80::1");
    gw.bytes[14] = static_cast<uint8_t>(i >> 8);
    gw.bytes[15] = static_cast<uint8_t>(i);
    uint16_t family = AF_INET6;
    Bytes via;
    put(via, family);
    via = via + Bytes(gw.bytes.begin(), gw.bytes.end());
    paths = paths + rtnh(static_cast<uint8_t>(i % 4), 10 + i,
                         attr(RTA_VIA, via) + (i == 7 ? attr(RTA_FLOW, u32(9)) : Bytes{}));
    expected.push_back({gw, static_cast<uint32_t>(10 + i), static_cast<uint16_t>(i % 4 + 1)});
  }
  const Bytes m =
      message(RTM_NEWROUTE, NLM_F_REPLACE, rtm(AF_INET, 24),
              attr(RTA_DST, addr("203.0.113.0")) + attr(RTA_PRIORITY, u32(20)) +
                  attr(RTA_PREFSRC, addr("192.0.2.1")) + attr(RTA_MULTIPATH | NLA_F_NESTED, paths));
  ASSERT_GT(m.size(), 8192u);
  const Bytes f = frame(m);
  FpmFramer framer;
  framer.feed(f);
  auto framed = framer.next();
  ASSERT_TRUE(framed && framed->ok());
  auto r = decodeFpmFrame(framed->value());
  ASSERT_TRUE(r.ok()) << r.error();
  const auto& route = std::get<FpmRoute>(r->at(0));
  EXPECT_EQ(route.prefix, prefix("203.0.113.0/24"));
  EXPECT_TRUE(route.replace);
  EXPECT_EQ(route.metric, 20u);
  EXPECT_EQ(route.next_hops, expected);
  EXPECT_EQ(route.next_hops[255].gateway->toString(), "fe80::ff");
  EXPECT_EQ(route.next_hops[3].weight, 4);
}

TEST(FpmDecode, NextHopObjects) {
  auto r = decodeFpmFrame(frame(
      message(
          RTM_NEWNEXTHOP, 0, nhm(AF_INET6),
          attr(NHA_ID, u32(5)) + attr(NHA_GATEWAY, addr("2001:db8::1")) + attr(NHA_OIF, u32(3))) +
      message(RTM_NEWNEXTHOP, 0, nhm(AF_INET), attr(NHA_ID, u32(6)) + attr(NHA_BLACKHOLE, {})) +
      message(RTM_NEWNEXTHOP, 0, nhm(AF_UNSPEC),
              attr(NHA_ID, u32(7)) + attr(NHA_GROUP, u32(5) + u32(3) + u32(6) + u32(0)) +
                  attr(NHA_GROUP_TYPE, Bytes{0, 0})) +
      message(RTM_DELNEXTHOP, 0, nhm(AF_UNSPEC), attr(NHA_ID, u32(7)))));
  ASSERT_TRUE(r.ok()) << r.error();
  ASSERT_EQ(r->size(), 4u);
  EXPECT_EQ(std::get<FpmNextHopObject>((*r)[0]),
            (FpmNextHopObject{false, 5, AF_INET6, false, FpmNextHop{ip("2001:db8::1"), 3, 1}, {}}));
  EXPECT_EQ(std::get<FpmNextHopObject>((*r)[1]),
            (FpmNextHopObject{false, 6, AF_INET, true, std::nullopt, {}}));
  EXPECT_EQ(std::get<FpmNextHopObject>((*r)[2]),
            (FpmNextHopObject{false, 7, AF_UNSPEC, false, std::nullopt, {{5, 3}, {6, 0}}}));
  EXPECT_EQ(std::get<FpmNextHopObject>((*r)[3]),
            (FpmNextHopObject{true, 7, AF_UNSPEC, false, std::nullopt, {}}));
}

// Smaller cases zebra can send: an IPv4 route with one IPv6 gateway (RTA_VIA),
// a next-hop object of family 0 with an IPv6 gateway (seen from zebra 8.4 after
// it had learned the kernel's objects), NLM_F_REPLACE on a DELROUTE (no
// meaning there).
TEST(FpmDecode, ViaFamilyZeroAndDeleteFlags) {
  Bytes via;
  put(via, uint16_t{AF_INET6});
  via = via + addr("fe80::1");
  auto r = decodeFpmFrame(frame(
      message(RTM_NEWROUTE, 0, rtm(AF_INET, 24),
              attr(RTA_DST, addr("203.0.113.0")) + attr(RTA_VIA, via) + attr(RTA_OIF, u32(7))) +
      message(RTM_NEWNEXTHOP, 0, nhm(AF_UNSPEC),
              attr(NHA_ID, u32(9)) + attr(NHA_GATEWAY, addr("2001:db8:1::100")) +
                  attr(NHA_OIF, u32(3))) +
      message(RTM_DELROUTE, NLM_F_REPLACE, rtm(AF_INET, 24, RTN_UNSPEC),
              attr(RTA_DST, addr("203.0.113.0")))));
  ASSERT_TRUE(r.ok()) << r.error();
  ASSERT_EQ(r->size(), 3u);
  EXPECT_EQ(describe((*r)[0]),
            "NEW 203.0.113.0/24 table 254 proto 196 type 1 metric 0 via fe80::1 dev 7");
  EXPECT_EQ(describe((*r)[1]), "NEWNH 9 family 0 via 2001:db8:1::100 dev 3");
  EXPECT_EQ(describe((*r)[2]), "DEL 203.0.113.0/24 table 254 proto 196 type 0 metric 0");
  EXPECT_FALSE(std::get<FpmRoute>((*r)[2]).replace);
  // RTA_VIA of a family that is neither.
  Bytes bad_via;
  put(bad_via, uint16_t{AF_BRIDGE});
  bad_via = bad_via + addr("192.0.2.1");
  EXPECT_EQ(refusal(frame(message(RTM_NEWROUTE, 0, rtm(AF_INET, 24),
                                  attr(RTA_DST, addr("203.0.113.0")) + attr(RTA_VIA, bad_via)))),
            "message 0 (RTM_NEWROUTE): RTA_VIA of family 7");
}

}  // namespace
}  // namespace mcgw::frr
