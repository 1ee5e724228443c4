// Byte spans, big-endian fields and parse errors shared by the codecs.
// dataplane/proto uses nothing but the C++ standard library.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace mcgw::proto {

using Bytes = std::span<const std::byte>;
using MutableBytes = std::span<std::byte>;

// A 16-bit field in network byte order, as it lies in the packet.
struct Be16 {
  uint8_t b[2];
  constexpr uint16_t get() const { return static_cast<uint16_t>(b[0] << 8 | b[1]); }
  constexpr void set(uint16_t v) {
    b[0] = static_cast<uint8_t>(v >> 8);
    b[1] = static_cast<uint8_t>(v);
  }
};

// A 32-bit field in network byte order.
struct Be32 {
  uint8_t b[4];
  constexpr uint32_t get() const {
    return static_cast<uint32_t>(b[0]) << 24 | static_cast<uint32_t>(b[1]) << 16 |
           static_cast<uint32_t>(b[2]) << 8 | b[3];
  }
  constexpr void set(uint32_t v) {
    b[0] = static_cast<uint8_t>(v >> 24);
    b[1] = static_cast<uint8_t>(v >> 16);
    b[2] = static_cast<uint8_t>(v >> 8);
    b[3] = static_cast<uint8_t>(v);
  }
};

static_assert(sizeof(Be16) == 2 && alignof(Be16) == 1);
static_assert(sizeof(Be32) == 4 && alignof(Be32) == 1);

// Why a parser refused its input.  One list: the enum, its names.
#define MCGW_PARSE_ERRORS(X)                                \
  X(kOk, "ok")                                              \
  X(kTruncated, "truncated")                                \
  X(kBadVersion, "bad version")                             \
  X(kBadHeaderLength, "bad header length")                  \
  X(kBadTotalLength, "bad total length")                    \
  X(kBadOption, "bad option")                               \
  X(kTooManyExtensionHeaders, "too many extension headers") \
  X(kBadFlags, "bad flags")

enum class ParseError : uint8_t {
#define MCGW_X(name, text) name,
  MCGW_PARSE_ERRORS(MCGW_X)
#undef MCGW_X
};

constexpr std::string_view toString(ParseError e) {
  switch (e) {
#define MCGW_X(name, text) \
  case ParseError::name:   \
    return text;
    MCGW_PARSE_ERRORS(MCGW_X)
#undef MCGW_X
  }
  return "unknown";
}

// A header found in a byte span: where it is, how long it is, what follows.
// `header` points into the span the parser was given; valid only while it is.
template <typename H>
struct Parsed {
  const H* header = nullptr;
  size_t header_length = 0;  // bytes of the header, options included
  Bytes payload;             // what follows, bounded by the header's own length field
  ParseError error = ParseError::kOk;

  bool ok() const { return error == ParseError::kOk; }
  static Parsed fail(ParseError e) {
    Parsed p;
    p.error = e;
    return p;
  }
};

// The header at the start of a span, if the span is long enough for it.
template <typename H>
inline const H* headerAt(Bytes b) {
  static_assert(alignof(H) == 1, "packet headers are byte-aligned structs");
  return b.size() >= sizeof(H) ? reinterpret_cast<const H*>(b.data()) : nullptr;
}

}  // namespace mcgw::proto
