// Byte-table tests of the MSS clamp (dataplane/proto/mss.hpp).  Each case
// builds a packet from a spec (checksums computed from scratch), runs
// clampMss(), and compares the result byte for byte with the same spec built
// with the expected options, or with the input when nothing may change.
// Checksums are also verified by a full recomputation written here.  The
// suite is "mss" in lower case so that `ctest -R mss` finds it.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "dataplane/proto/mss.hpp"
#include "tests/support/hex.hpp"

namespace mcgw::proto {
namespace {

using Packet = std::vector<uint8_t>;

Packet hex(std::string_view s) {
  return test::hex<uint8_t>(s);
}

using test::toHex;

// The Internet checksum, written out again (not the library's).
uint32_t sum16(const uint8_t* p, size_t n, uint32_t sum = 0) {
  for (size_t i = 0; i + 1 < n; i += 2) {
    sum += static_cast<uint32_t>(p[i] << 8 | p[i + 1]);
  }
  if (n & 1) {
    sum += static_cast<uint32_t>(p[n - 1] << 8);
  }
  return sum;
}
uint16_t fold(uint32_t sum) {
  while (sum >> 16) {
    sum = (sum & 0xffff) + (sum >> 16);
  }
  return static_cast<uint16_t>(sum);
}

struct Ext {
  uint8_t type;      // 0, 43, 44, 60
  std::string body;  // after the next-header byte (hex)
};

// A TCP segment in IPv4 or IPv6, described field by field.
struct Spec {
  bool v6 = false;
  std::string ip_options;  // IPv4 options (hex; a multiple of 4 bytes)
  uint16_t frag = 0;       // IPv4 flags | fragment offset
  std::vector<Ext> ext;    // IPv6 extension headers, in order
  uint8_t protocol = kIpProtoTcp;
  uint8_t flags = kTcpSyn;
  std::string options;   // TCP options (hex), padded with EOL to a multiple of 4
  int data_offset = -1;  // words; -1: from the options
  std::string payload;   // TCP data (hex)

  Spec& withFrag(uint16_t f) {
    frag = f;
    return *this;
  }
  Spec& withIpOptions(std::string o) {
    ip_options = std::move(o);
    return *this;
  }
  Spec& withExt(std::vector<Ext> e) {
    ext = std::move(e);
    return *this;
  }
  Spec& withFlags(uint8_t f) {
    flags = f;
    return *this;
  }
  Spec& withDataOffset(int words) {
    data_offset = words;
    return *this;
  }
  Spec& withPayload(std::string p) {
    payload = std::move(p);
    return *this;
  }
  Spec& withProtocol(uint8_t p) {
    protocol = p;
    return *this;
  }
  Spec withOptions(std::string o) const {
    Spec s = *this;
    s.options = std::move(o);
    return s;
  }
};

Spec syn4(std::string options) {
  Spec s;
  s.options = std::move(options);
  return s;
}
Spec syn6(std::string options) {
  Spec s = syn4(std::move(options));
  s.v6 = true;
  return s;
}

const uint8_t kSrc4[4] = {192, 0, 2, 1};
const uint8_t kDst4[4] = {198, 51, 100, 7};
const Packet kSrc6 = hex("2001 0db8 0000 0000 0000 0000 0000 0001");
const Packet kDst6 = hex("2001 0db8 00ff 0000 0000 0000 0000 0abc");

uint32_t pseudo(const Spec& s, size_t tcp_length) {
  uint32_t sum = 0;
  if (s.v6) {
    sum = sum16(kSrc6.data(), 16, sum16(kDst6.data(), 16));
  } else {
    sum = sum16(kSrc4, 4, sum16(kDst4, 4));
  }
  return sum + s.protocol + static_cast<uint32_t>(tcp_length);
}

Packet build(const Spec& s) {
  Packet tcp = {0x9c, 0x40, 0x01, 0xbb,    0x11, 0x22, 0x33, 0x44, 0, 0,
                0,    0,    0,    s.flags, 0xfa, 0xf0, 0,    0,    0, 0};
  if (s.flags & kTcpAck) {
    tcp[8] = 0x55;
    tcp[11] = 0x01;
  }
  Packet o = hex(s.options);
  while (o.size() % 4) {
    o.push_back(kTcpOptEol);
  }
  tcp.insert(tcp.end(), o.begin(), o.end());
  const int words = s.data_offset >= 0 ? s.data_offset : static_cast<int>(tcp.size() / 4);
  tcp[12] = static_cast<uint8_t>(words << 4);
  Packet data = hex(s.payload);
  tcp.insert(tcp.end(), data.begin(), data.end());
  const uint16_t ck =
      static_cast<uint16_t>(~fold(sum16(tcp.data(), tcp.size(), pseudo(s, tcp.size()))));
  tcp[16] = static_cast<uint8_t>(ck >> 8);
  tcp[17] = static_cast<uint8_t>(ck);

  Packet ip;
  if (!s.v6) {
    Packet opts = hex(s.ip_options);
    const size_t hl = 20 + opts.size();
    const size_t total = hl + tcp.size();
    ip = {static_cast<uint8_t>(0x40 | hl / 4),
          0,
          static_cast<uint8_t>(total >> 8),
          static_cast<uint8_t>(total),
          0xab,
          0xcd,
          static_cast<uint8_t>(s.frag >> 8),
          static_cast<uint8_t>(s.frag),
          64,
          s.protocol,
          0,
          0};
    ip.insert(ip.end(), kSrc4, kSrc4 + 4);
    ip.insert(ip.end(), kDst4, kDst4 + 4);
    ip.insert(ip.end(), opts.begin(), opts.end());
    const uint16_t hck = static_cast<uint16_t>(~fold(sum16(ip.data(), ip.size())));
    ip[10] = static_cast<uint8_t>(hck >> 8);
    ip[11] = static_cast<uint8_t>(hck);
  } else {
    Packet exts;
    for (size_t i = 0; i < s.ext.size(); ++i) {
      exts.push_back(i + 1 < s.ext.size() ? s.ext[i + 1].type : s.protocol);
      Packet b = hex(s.ext[i].body);
      exts.insert(exts.end(), b.begin(), b.end());
    }
    const size_t payload = exts.size() + tcp.size();
    ip = {0x60,
          0x00,
          0x00,
          0x00,
          static_cast<uint8_t>(payload >> 8),
          static_cast<uint8_t>(payload),
          s.ext.empty() ? s.protocol : s.ext[0].type,
          64};
    ip.insert(ip.end(), kSrc6.begin(), kSrc6.end());
    ip.insert(ip.end(), kDst6.begin(), kDst6.end());
    ip.insert(ip.end(), exts.begin(), exts.end());
  }
  ip.insert(ip.end(), tcp.begin(), tcp.end());
  return ip;
}

// Where the TCP header of a packet built from `s` starts.
size_t tcpOffset(const Spec& s) {
  if (!s.v6) {
    return 20 + hex(s.ip_options).size();
  }
  size_t at = 40;
  for (const Ext& e : s.ext) {
    at += 1 + hex(e.body).size();
  }
  return at;
}

// Full recomputation: the IPv4 header and the TCP segment (as far as this
// packet holds it) sum to 0xffff.
void expectChecksumsVerify(const Spec& s, const Packet& p, const std::string& name) {
  if (!s.v6) {
    const size_t hl = static_cast<size_t>(p[0] & 0x0f) * 4;
    EXPECT_EQ(fold(sum16(p.data(), hl)), 0xffff) << name << ": IPv4 header checksum";
  }
  const size_t at = tcpOffset(s);
  const size_t end =
      s.v6 ? 40 + static_cast<size_t>(p[4] << 8 | p[5]) : static_cast<size_t>(p[2] << 8 | p[3]);
  ASSERT_LE(end, p.size()) << name;
  const size_t n = end - at;
  EXPECT_EQ(fold(sum16(p.data() + at, n, pseudo(s, n))), 0xffff) << name << ": TCP checksum";
}

constexpr const char* kSame = "same";

struct Case {
  std::string name;
  Spec in;
  uint16_t max_mss;
  bool insert;
  size_t room;  // capacity beyond the packet
  MssVerdict verdict;
  std::string expect_options;  // the TCP options after, or kSame: packet unchanged
};

constexpr const char* kTs = "08 0a 00 01 e2 40 00 00 00 00";  // timestamps, 10 bytes
constexpr const char* kWs = "03 03 07";                       // window scale
constexpr const char* kSackOk = "04 02";                      // SACK permitted

std::string nops(size_t n) {
  std::string s;
  for (size_t i = 0; i < n; ++i) {
    s += "01 ";
  }
  return s;
}

std::string cat(std::initializer_list<std::string_view> parts) {
  std::string s;
  for (auto p : parts) {
    s += p;
    s += ' ';
  }
  return s;
}

void runCase(const Case& c) {
  SCOPED_TRACE(c.name);
  const Packet in = build(c.in);
  Packet buf = in;
  buf.resize(in.size() + c.room, 0xee);
  size_t len = in.size();
  const MssVerdict v = clampMss(buf.data(), &len, buf.size(), c.in.v6, c.max_mss, c.insert);
  EXPECT_EQ(toString(v), toString(c.verdict));
  Packet out(buf.begin(), buf.begin() + static_cast<ptrdiff_t>(len));
  if (c.expect_options != kSame) {
    const Packet want = build(c.in.withOptions(c.expect_options));
    EXPECT_EQ(toHex(out), toHex(want));
    expectChecksumsVerify(c.in, out, c.name);
  } else {
    EXPECT_EQ(toHex(out), toHex(in));
  }
  // Nothing written past the packet.
  for (size_t i = len; i < buf.size(); ++i) {
    ASSERT_EQ(buf[i], 0xee) << "byte " << i << " after the packet";
  }
  // The pre-check never hides a SYN that clampMss would act on.
  if (v == MssVerdict::kClamped || v == MssVerdict::kInserted || v == MssVerdict::kAlreadyBelow ||
      v == MssVerdict::kNoOption) {
    EXPECT_TRUE(mayBeTcpSyn(in.data(), in.size(), c.in.v6));
  }
  if (!(c.in.flags & kTcpSyn) && c.in.ext.empty()) {
    EXPECT_FALSE(mayBeTcpSyn(in.data(), in.size(), c.in.v6));
  }
}

using V = MssVerdict;

TEST(mss, Ipv4Table) {
  const std::vector<Case> cases = {
      {"no MSS, insert off", syn4(""), 1410, false, 64, V::kNoOption, kSame},
      {"no MSS, insert on", syn4(""), 1410, true, 64, V::kInserted, "02 04 02 18"},
      {"no MSS with SACK-permitted, TS, WS, insert on", syn4(cat({kSackOk, kTs, "01", kWs})), 1410,
       true, 64, V::kInserted, cat({"02 04 02 18", kSackOk, kTs, "01", kWs})},
      {"no MSS, insert on, TFO data moves along",
       syn4("22 0a 01 02 03 04 05 06 07 08 01 01").withPayload("de ad be ef 42"), 1410, true, 64,
       V::kInserted, "02 04 02 18 22 0a 01 02 03 04 05 06 07 08 01 01"},
      {"no MSS, insert on, exactly the room needed", syn4(""), 1410, true, 4, V::kInserted,
       "02 04 02 18"},
      {"no MSS, insert on, capacity 3 short", syn4(""), 1410, true, 3, V::kNoOption, kSame},
      {"no MSS, insert on, data offset 60: no room", syn4("04 02 " + nops(38)), 1410, true, 64,
       V::kNoOption, kSame},
      {"EOL before MSS, insert off", syn4("00 00 00 00 02 04 05 b4"), 1410, false, 64, V::kNoOption,
       kSame},
      {"EOL before MSS, insert on: the new option goes before the EOL",
       syn4("00 00 00 00 02 04 05 b4"), 1410, true, 64, V::kInserted,
       "02 04 02 18 00 00 00 00 02 04 05 b4"},
      {"MSS 536 already below", syn4("02 04 02 18"), 1410, true, 64, V::kAlreadyBelow, kSame},
      {"MSS equal to the clamp", syn4("02 04 05 82"), 1410, false, 64, V::kAlreadyBelow, kSame},
      {"MSS 1460 -> 1410", syn4("02 04 05 b4"), 1410, false, 64, V::kClamped, "02 04 05 82"},
      {"SYN-ACK MSS 1460 -> 1410", syn4("02 04 05 b4").withFlags(kTcpSyn | kTcpAck), 1410, false,
       64, V::kClamped, "02 04 05 82"},
      {"Linux order: MSS, SACK-permitted, TS, NOP, WS",
       syn4(cat({"02 04 05 b4", kSackOk, kTs, "01", kWs})), 1410, true, 64, V::kClamped,
       cat({"02 04 05 82", kSackOk, kTs, "01", kWs})},
      {"MSS last: NOP NOP TS, SACK-permitted, WS, NOP, MSS",
       syn4(cat({"01 01", kTs, kSackOk, kWs, "01 02 04 05 b4"})), 1410, false, 64, V::kClamped,
       cat({"01 01", kTs, kSackOk, kWs, "01 02 04 05 82"})},
      {"odd offset: NOP, MSS", syn4("01 02 04 05 b4"), 1410, false, 64, V::kClamped,
       "01 02 04 05 82"},
      {"odd offset: WS, MSS, both bytes change", syn4(cat({kWs, "02 04 20 00"})), 1410, false, 64,
       V::kClamped, cat({kWs, "02 04 05 82"})},
      {"odd offset: SACK-permitted, NOP, MSS 65535 -> 1", syn4(cat({kSackOk, "01 02 04 ff ff"})), 1,
       false, 64, V::kClamped, cat({kSackOk, "01 02 04 00 01"})},
      {"odd offset, odd-length payload", syn4("01 01 01 02 04 05 b4").withPayload("01 02 03"), 1410,
       false, 64, V::kClamped, "01 01 01 02 04 05 82"},
      {"SACK block before MSS", syn4("05 0a 00 00 00 01 00 00 00 02 02 04 05 b4"), 1410, false, 64,
       V::kClamped, "05 0a 00 00 00 01 00 00 00 02 02 04 05 82"},
      {"two MSS options: both lowered", syn4("02 04 05 b4 02 04 23 28"), 1410, false, 64,
       V::kClamped, "02 04 05 82 02 04 05 82"},
      {"two MSS options, one below", syn4("02 04 02 18 01 02 04 23 28"), 1410, false, 64,
       V::kClamped, "02 04 02 18 01 02 04 05 82"},
      {"unknown option before MSS", syn4("fe 06 12 34 56 78 02 04 05 b4"), 1410, false, 64,
       V::kClamped, "fe 06 12 34 56 78 02 04 05 82"},
      // Malformed: the packet stays as it was.
      {"length-0 option after MSS", syn4("02 04 05 b4 08 00 00 00"), 1410, true, 64, V::kMalformed,
       kSame},
      {"length-0 option before MSS", syn4("04 00 02 04 05 b4"), 1410, true, 64, V::kMalformed,
       kSame},
      {"length-1 option", syn4("03 01 02 04 05 b4"), 1410, true, 64, V::kMalformed, kSame},
      {"option overrunning the data offset", syn4(cat({"02 04 05 b4", "08 0a 00 00"})), 1410, true,
       64, V::kMalformed, kSame},
      {"option overrunning into the data",
       syn4("02 04 05 b4 01 01 08 0a").withPayload("00 00 00 00 00 00 00 00"), 1410, true, 64,
       V::kMalformed, kSame},
      {"kind in the last option byte, no length", syn4("02 04 05 b4 01 01 01 08"), 1410, true, 64,
       V::kMalformed, kSame},
      {"MSS length 3", syn4("02 03 05 01"), 1410, true, 64, V::kMalformed, kSame},
      {"MSS length 6", syn4("02 06 05 b4 00 00"), 1410, true, 64, V::kMalformed, kSame},
      {"MSS length 2", syn4("02 02 01 01"), 1410, true, 64, V::kMalformed, kSame},
      {"data offset 4", syn4("").withDataOffset(4), 1410, true, 64, V::kMalformed, kSame},
      {"data offset 0", syn4("02 04 05 b4").withDataOffset(0), 1410, true, 64, V::kMalformed,
       kSame},
      {"data offset beyond the packet", syn4("02 04 05 b4").withDataOffset(15), 1410, true, 64,
       V::kMalformed, kSame},
      // Not for us.
      {"ACK (no SYN) with an MSS option", syn4("02 04 05 b4").withFlags(kTcpAck), 1410, true, 64,
       V::kNone, kSame},
      {"ACK with garbage options", syn4("04 00 00 00").withFlags(kTcpAck), 1410, true, 64, V::kNone,
       kSame},
      {"ACK with data offset 0", syn4("").withFlags(kTcpAck).withDataOffset(0), 1410, true, 64,
       V::kNone, kSame},
      {"UDP", syn4("02 04 05 b4").withProtocol(kIpProtoUdp), 1410, true, 64, V::kNone, kSame},
      // Fragments.
      {"first fragment (MF): clamped", syn4("02 04 05 b4").withFrag(0x2000), 1410, true, 64,
       V::kClamped, "02 04 05 82"},
      {"first fragment (MF), DF clear: no insert", syn4("").withFrag(0x2000), 1410, true, 64,
       V::kNoOption, kSame},
      {"DF set, not a fragment: insert", syn4("").withFrag(0x4000), 1410, true, 64, V::kInserted,
       "02 04 02 18"},
      {"later fragment with SYN-looking bytes", syn4("02 04 05 b4").withFrag(0x2000 | 185), 1410,
       true, 64, V::kNone, kSame},
      {"last fragment", syn4("02 04 05 b4").withFrag(1), 1410, true, 64, V::kNone, kSame},
      // IPv4 options.
      {"IHL 6 (router alert)", syn4("01 02 04 05 b4").withIpOptions("94 04 00 00"), 1410, true, 64,
       V::kClamped, "01 02 04 05 82"},
      {"IHL 15, insert", syn4("").withIpOptions(nops(39) + "00"), 1410, true, 64, V::kInserted,
       "02 04 02 18"},
      {"IHL 15, clamp",
       syn4(cat({kTs, "01 01 02 04 05 b4"}))
           .withIpOptions("01 01 01 00 " + std::string(36 * 2, '0')),
       1410, false, 64, V::kClamped, cat({kTs, "01 01 02 04 05 82"})},
  };
  for (const Case& c : cases) {
    runCase(c);
  }
}

const Ext kHopByHop{kIpv6HopByHop, "00 05 02 00 00 01 00"};  // router alert, PadN
const Ext kRouting{kIpv6Routing, "00 fd 00 00 00 00 00"};    // experimental type, 0 left
const Ext kDestOpts{kIpv6DestinationOptions, "01 01 04 00 00 00 00 01 02 00 00 00 00 00 00"};
const Ext kFirstFragment{kIpv6Fragment, "00 00 01 12 34 56 78"};
const Ext kAtomicFragment{kIpv6Fragment, "00 00 00 12 34 56 78"};
const Ext kLaterFragment{kIpv6Fragment, "00 05 c8 12 34 56 78"};

TEST(mss, Ipv6Table) {
  const std::vector<Case> cases = {
      {"MSS 1460 -> 1390", syn6("02 04 05 b4"), 1390, false, 64, V::kClamped, "02 04 05 6e"},
      {"SYN-ACK MSS 1440 -> 1390",
       syn6(cat({"02 04 05 a0", kSackOk, kTs, "01", kWs})).withFlags(0x12), 1390, false, 64,
       V::kClamped, cat({"02 04 05 6e", kSackOk, kTs, "01", kWs})},
      {"odd offset", syn6(cat({"01", "02 04 05 b4"})), 1390, false, 64, V::kClamped,
       "01 02 04 05 6e"},
      {"MSS 1220 already below", syn6("02 04 04 c4"), 1390, true, 64, V::kAlreadyBelow, kSame},
      {"no MSS, insert off", syn6(kSackOk), 1390, false, 64, V::kNoOption, kSame},
      {"no MSS, insert on", syn6(kSackOk).withPayload("aa bb cc"), 1390, true, 64, V::kInserted,
       cat({"02 04 04 c4", kSackOk})},
      {"behind hop-by-hop", syn6("02 04 05 b4").withExt({kHopByHop}), 1390, false, 64, V::kClamped,
       "02 04 05 6e"},
      {"behind hop-by-hop, routing, destination options",
       syn6("01 01 01 02 04 05 b4").withExt({kHopByHop, kRouting, kDestOpts}), 1390, false, 64,
       V::kClamped, "01 01 01 02 04 05 6e"},
      {"behind hop-by-hop, routing, destination options: insert",
       syn6("").withExt({kHopByHop, kRouting, kDestOpts}), 1390, true, 64, V::kInserted,
       "02 04 04 c4"},
      {"first fragment: clamped", syn6("02 04 05 b4").withExt({kHopByHop, kFirstFragment}), 1390,
       true, 64, V::kClamped, "02 04 05 6e"},
      {"first fragment: no insert", syn6("").withExt({kFirstFragment}), 1390, true, 64,
       V::kNoOption, kSame},
      {"atomic fragment: insert", syn6("").withExt({kAtomicFragment}), 1390, true, 64, V::kInserted,
       "02 04 04 c4"},
      {"later fragment", syn6("02 04 05 b4").withExt({kLaterFragment}), 1390, true, 64, V::kNone,
       kSame},
      {"malformed option behind extension headers",
       syn6("02 04 05 b4 04 00").withExt({kHopByHop, kDestOpts}), 1390, true, 64, V::kMalformed,
       kSame},
      {"nine extension headers", syn6("02 04 05 b4").withExt(std::vector<Ext>(9, kDestOpts)), 1390,
       true, 64, V::kMalformed, kSame},
      {"UDP behind destination options",
       syn6("02 04 05 b4").withExt({kDestOpts}).withProtocol(kIpProtoUdp), 1390, true, 64, V::kNone,
       kSame},
      {"ACK", syn6("02 04 05 b4").withFlags(kTcpAck), 1390, true, 64, V::kNone, kSame},
  };
  for (const Case& c : cases) {
    runCase(c);
  }
}

// Data offset 56 with 36 bytes of options: the insert makes it 60.
TEST(mss, InsertUpToSixtyBytes) {
  const Spec s = syn4("04 02" + nops(34));
  Packet p = build(s);
  ASSERT_EQ(p[20 + 12] >> 4, 14);
  p.resize(p.size() + 4);
  size_t len = p.size() - 4;
  ASSERT_EQ(clampMss(p.data(), &len, p.size(), false, 1400, true), MssVerdict::kInserted);
  EXPECT_EQ(p[20 + 12] >> 4, 15);
  EXPECT_EQ(toHex(p), toHex(build(s.withOptions("02 04 02 18 04 02" + nops(34)))));
}

// Ethernet padding after the IP packet: moved along with the insert, and
// outside both checksums.
TEST(mss, InsertWithTrailingPadding) {
  const Spec s = syn4("");
  Packet p = build(s);
  const size_t ip_len = p.size();
  p.insert(p.end(), {0, 0, 0, 0, 0, 0});
  size_t len = p.size();
  p.resize(p.size() + 4);
  ASSERT_EQ(clampMss(p.data(), &len, p.size(), false, 1400, true), MssVerdict::kInserted);
  EXPECT_EQ(len, ip_len + 6 + 4);
  Packet want = build(s.withOptions("02 04 02 18"));
  want.insert(want.end(), {0, 0, 0, 0, 0, 0});
  EXPECT_EQ(toHex(p), toHex(want));
}

// An IP length of 65532..65535 cannot grow by 4.
TEST(mss, InsertNeverOverflowsTheIpLength) {
  for (bool v6 : {false, true}) {
    Spec s = v6 ? syn6("") : syn4("");
    const size_t headers = v6 ? 40 + 20 : 20 + 20;
    const size_t max_payload = v6 ? 65535 - 20 : 65535 - 40;
    for (size_t payload : {max_payload - 4, max_payload - 3, max_payload}) {
      s.payload = std::string(payload * 2, '7');
      Packet p = build(s);
      ASSERT_EQ(p.size(), headers + payload);
      const Packet in = p;
      p.resize(p.size() + 4);
      size_t len = in.size();
      const MssVerdict v = clampMss(p.data(), &len, p.size(), v6, 1400, true);
      if (payload == max_payload - 4) {
        EXPECT_EQ(v, MssVerdict::kInserted) << v6;
        expectChecksumsVerify(s, Packet(p.begin(), p.begin() + static_cast<ptrdiff_t>(len)), "big");
      } else {
        EXPECT_EQ(v, MssVerdict::kNoOption) << v6 << " " << payload;
        EXPECT_TRUE(std::equal(in.begin(), in.end(), p.begin()));
      }
    }
  }
}

// A TCP checksum of 0x0000 is an ordinary value: before, and after.
TEST(mss, ZeroChecksum) {
  for (bool v6 : {false, true}) {
    for (bool zero_after : {false, true}) {
      // Pick the payload word that makes the from-scratch checksum 0 of the
      // input (or of the expected output).
      Spec s = (v6 ? syn6("02 04 05 b4") : syn4("02 04 05 b4")).withPayload("00 00");
      const Spec tuned = zero_after ? s.withOptions("02 04 05 82") : s;
      Packet t = build(tuned);
      const size_t ck_at = tcpOffset(s) + 16;
      const uint16_t word = static_cast<uint16_t>(t[ck_at] << 8 | t[ck_at + 1]);
      char buf[8];
      std::snprintf(buf, sizeof buf, "%04x", word);
      s.payload = buf;
      Packet in = build(s);
      Packet want = build(s.withOptions("02 04 05 82"));
      const Packet& zero = zero_after ? want : in;
      ASSERT_EQ(zero[ck_at], 0);
      ASSERT_EQ(zero[ck_at + 1], 0);
      size_t len = in.size();
      ASSERT_EQ(clampMss(in.data(), &len, in.size(), v6, 1410, false), MssVerdict::kClamped);
      EXPECT_EQ(toHex(in), toHex(want)) << v6 << zero_after;
    }
  }
}

// Every shorter cut of a SYN, either as a buffer shorter than the IP length
// says or with the IP length cut too (and its checksum fixed): always
// kMalformed, nothing written, nothing read beyond the cut.
TEST(mss, Truncated) {
  for (bool v6 : {false, true}) {
    const Spec s = v6 ? syn6(cat({"02 04 05 b4", kSackOk, kTs, "01", kWs}))
                      : syn4(cat({"02 04 05 b4", kSackOk, kTs, "01", kWs}));
    const Packet full = build(s);
    for (size_t cut = 0; cut < full.size(); ++cut) {
      for (bool fix_length : {false, true}) {
        SCOPED_TRACE(std::to_string(v6) + " cut " + std::to_string(cut) + " fix " +
                     std::to_string(fix_length));
        Packet p(full.begin(), full.begin() + static_cast<ptrdiff_t>(cut));
        if (fix_length && !v6 && cut >= 20) {
          p[2] = static_cast<uint8_t>(cut >> 8);
          p[3] = static_cast<uint8_t>(cut);
          p[10] = p[11] = 0;
          const uint16_t ck = static_cast<uint16_t>(~fold(sum16(p.data(), 20)));
          p[10] = static_cast<uint8_t>(ck >> 8);
          p[11] = static_cast<uint8_t>(ck);
        } else if (fix_length && v6 && cut >= 40) {
          p[4] = static_cast<uint8_t>((cut - 40) >> 8);
          p[5] = static_cast<uint8_t>(cut - 40);
        }
        // Exactly sized heap copy: ASan would see a read beyond it.
        std::unique_ptr<uint8_t[]> b(new uint8_t[p.size() + 1]);
        std::memcpy(b.get(), p.data(), p.size());
        size_t len = p.size();
        const MssVerdict v = clampMss(b.get(), &len, p.size(), v6, 1410, true);
        EXPECT_EQ(v, MssVerdict::kMalformed);
        EXPECT_EQ(len, p.size());
        EXPECT_EQ(std::memcmp(b.get(), p.data(), p.size()), 0);
        (void)mayBeTcpSyn(b.get(), len, v6);
      }
    }
  }
}

TEST(mss, PreCheck) {
  // IPv4: protocol, fragment offset, SYN in the byte the IHL points at.
  Packet syn = build(syn4("02 04 05 b4"));
  EXPECT_TRUE(mayBeTcpSyn(syn.data(), syn.size(), false));
  EXPECT_FALSE(mayBeTcpSyn(syn.data(), 19, false));
  EXPECT_FALSE(mayBeTcpSyn(syn.data(), 33, false));  // the flags byte is byte 33
  EXPECT_TRUE(mayBeTcpSyn(syn.data(), 34, false));
  Packet ack = build(syn4("").withFlags(kTcpAck));
  EXPECT_FALSE(mayBeTcpSyn(ack.data(), ack.size(), false));
  Packet later = build(syn4("").withFrag(0x2000 | 3));
  EXPECT_FALSE(mayBeTcpSyn(later.data(), later.size(), false));
  Packet first = build(syn4("").withFrag(0x2000));
  EXPECT_TRUE(mayBeTcpSyn(first.data(), first.size(), false));
  Packet udp = build(syn4("").withProtocol(kIpProtoUdp));
  EXPECT_FALSE(mayBeTcpSyn(udp.data(), udp.size(), false));
  Packet opts = build(syn4("").withIpOptions("94 04 00 00"));
  EXPECT_TRUE(mayBeTcpSyn(opts.data(), opts.size(), false));
  Packet opts_ack = build(syn4("").withIpOptions("94 04 00 00").withFlags(kTcpAck));
  EXPECT_FALSE(mayBeTcpSyn(opts_ack.data(), opts_ack.size(), false));
  // IPv6: TCP SYN directly, or any header clampMss walks.
  Packet syn6p = build(syn6(""));
  EXPECT_TRUE(mayBeTcpSyn(syn6p.data(), syn6p.size(), true));
  Packet ack6 = build(syn6("").withFlags(kTcpAck));
  EXPECT_FALSE(mayBeTcpSyn(ack6.data(), ack6.size(), true));
  for (const Ext& e : {kHopByHop, kRouting, kDestOpts, kFirstFragment}) {
    Packet p = build(syn6("").withFlags(kTcpAck).withExt({e}));
    EXPECT_TRUE(mayBeTcpSyn(p.data(), p.size(), true)) << int{e.type};
  }
  // A later fragment straight after the fixed header is never clamped.
  Packet later6 = build(syn6("").withExt({kLaterFragment}));
  EXPECT_FALSE(mayBeTcpSyn(later6.data(), later6.size(), true));
  Packet udp6 = build(syn6("").withProtocol(kIpProtoUdp));
  EXPECT_FALSE(mayBeTcpSyn(udp6.data(), udp6.size(), true));
}

TEST(mss, VerdictNames) {
  EXPECT_EQ(toString(MssVerdict::kNone), "none");
  EXPECT_EQ(toString(MssVerdict::kClamped), "clamped");
  EXPECT_EQ(toString(MssVerdict::kAlreadyBelow), "already-below");
  EXPECT_EQ(toString(MssVerdict::kNoOption), "no-option");
  EXPECT_EQ(toString(MssVerdict::kInserted), "inserted");
  EXPECT_EQ(toString(MssVerdict::kMalformed), "malformed");
}

}  // namespace
}  // namespace mcgw::proto
