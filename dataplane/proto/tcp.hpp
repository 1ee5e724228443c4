// TCP (RFC 9293) header and options.
//
//   | Source Port (2) | Destination Port (2) |
//   | Sequence Number (4)                    |
//   | Acknowledgment Number (4)              |
//   | Offset(4) Rsvd(4) | Flags (8) | Window (2) |
//   | Checksum (2)      | Urgent Pointer (2)     |
//   | Options: kind (1) [length (1) data]; EOL = 0, NOP = 1, MSS = 2 (len 4) |
#pragma once

#include <optional>

#include "dataplane/proto/bytes.hpp"

namespace mcgw::proto {

inline constexpr uint8_t kTcpFin = 0x01;
inline constexpr uint8_t kTcpSyn = 0x02;
inline constexpr uint8_t kTcpRst = 0x04;
inline constexpr uint8_t kTcpAck = 0x10;

inline constexpr uint8_t kTcpOptEol = 0;
inline constexpr uint8_t kTcpOptNop = 1;
inline constexpr uint8_t kTcpOptMss = 2;

struct TcpHeader {
  Be16 src_port;
  Be16 dst_port;
  Be32 seq;
  Be32 ack;
  uint8_t data_offset;  // high 4 bits, in 32-bit words
  uint8_t flags;
  Be16 window;
  Be16 checksum;
  Be16 urgent;

  size_t headerLength() const { return static_cast<size_t>(data_offset >> 4) * 4; }
  bool syn() const { return flags & kTcpSyn; }
};
static_assert(sizeof(TcpHeader) == 20);

// The data offset must cover the fixed header and fit the span; the options
// are header[20, header_length).
inline Parsed<TcpHeader> parseTcp(Bytes b) {
  const auto* h = headerAt<TcpHeader>(b);
  if (!h) {
    return Parsed<TcpHeader>::fail(ParseError::kTruncated);
  }
  size_t hl = h->headerLength();
  if (hl < sizeof(TcpHeader) || hl > b.size()) {
    return Parsed<TcpHeader>::fail(ParseError::kBadHeaderLength);
  }
  return {h, hl, b.subspan(hl), ParseError::kOk};
}

inline Bytes tcpOptions(const Parsed<TcpHeader>& tcp) {
  return Bytes(reinterpret_cast<const std::byte*>(tcp.header) + sizeof(TcpHeader),
               tcp.header_length - sizeof(TcpHeader));
}

struct TcpOption {
  uint8_t kind = 0;
  size_t offset = 0;  // of the kind byte, within the options
  Bytes data;         // after kind and length
};

// Walks the options in any order: NOP skipped, EOL ends, every other option
// must carry a length >= 2 that stays inside the options, else kBadOption.
// visit(const TcpOption&) returns false to stop early.
template <typename Visit>
ParseError forEachTcpOption(Bytes options, Visit&& visit) {
  const auto* p = reinterpret_cast<const uint8_t*>(options.data());
  size_t n = options.size();
  for (size_t i = 0; i < n;) {
    uint8_t kind = p[i];
    if (kind == kTcpOptEol) {
      return ParseError::kOk;
    }
    if (kind == kTcpOptNop) {
      ++i;
      continue;
    }
    if (i + 1 >= n) {
      return ParseError::kBadOption;
    }
    size_t len = p[i + 1];
    if (len < 2 || i + len > n) {
      return ParseError::kBadOption;
    }
    if (!visit(TcpOption{kind, i, options.subspan(i + 2, len - 2)})) {
      return ParseError::kOk;
    }
    i += len;
  }
  return ParseError::kOk;
}

// The first MSS option: its value and the value's offset within the
// options.  nullopt when there is none, or when the options up to it do not
// walk or it is not 4 bytes long (then *error, if given, is kBadOption).
struct MssOption {
  size_t value_offset = 0;
  uint16_t value = 0;
};
inline std::optional<MssOption> findMss(Bytes options, ParseError* error = nullptr) {
  std::optional<MssOption> found;
  bool malformed = false;
  ParseError e = forEachTcpOption(options, [&](const TcpOption& o) {
    if (o.kind != kTcpOptMss) {
      return true;
    }
    if (o.data.size() != 2) {
      malformed = true;
      return false;
    }
    const auto* v = reinterpret_cast<const uint8_t*>(o.data.data());
    found = MssOption{o.offset + 2, static_cast<uint16_t>(v[0] << 8 | v[1])};
    return false;
  });
  if (malformed) {
    e = ParseError::kBadOption;
  }
  if (error) {
    *error = e;
  }
  return e == ParseError::kOk ? found : std::nullopt;
}

}  // namespace mcgw::proto
