// Geneve (RFC 8926), UDP port 6081.
//
//   |Ver|  Opt Len  |O|C|    Rsvd.  |          Protocol Type        |
//   |        Virtual Network Identifier (VNI)       |    Reserved   |
//   |                    Variable-Length Options                    |
//   option: | Option Class (16) | C|Type (8) |R|R|R| Length (5) | data (Length x 4) |
#pragma once

#include "dataplane/proto/bytes.hpp"

namespace mcgw::proto {

inline constexpr uint16_t kGeneveProtoEthernet = 0x6558;
inline constexpr uint8_t kGeneveFlagOam = 0x80;
inline constexpr uint8_t kGeneveFlagCritical = 0x40;
inline constexpr uint8_t kGeneveOptionCritical = 0x80;  // top bit of the option type

struct GeneveHeader {
  uint8_t ver_optlen;  // version (2) | options length in 4-byte words (6)
  uint8_t flags;       // O | C | reserved (6)
  Be16 protocol;
  Be32 vni_reserved;

  uint8_t version() const { return ver_optlen >> 6; }
  size_t optionsLength() const { return static_cast<size_t>(ver_optlen & 0x3f) * 4; }
  bool critical() const { return flags & kGeneveFlagCritical; }
  uint32_t vni() const { return vni_reserved.get() >> 8; }
  void setVni(uint32_t vni) { vni_reserved.set((vni & 0xffffff) << 8); }  // 24 bits
};
static_assert(sizeof(GeneveHeader) == 8);

struct GeneveOptionHeader {
  Be16 option_class;
  uint8_t type;
  uint8_t length;  // reserved (3) | length in 4-byte words (5)

  bool critical() const { return type & kGeneveOptionCritical; }
  size_t dataLength() const { return static_cast<size_t>(length & 0x1f) * 4; }
};
static_assert(sizeof(GeneveOptionHeader) == 4);

// Version 0 only; the options must fit the span; payload follows them.
inline Parsed<GeneveHeader> parseGeneve(Bytes b) {
  const auto* h = headerAt<GeneveHeader>(b);
  if (!h) {
    return Parsed<GeneveHeader>::fail(ParseError::kTruncated);
  }
  if (h->version() != 0) {
    return Parsed<GeneveHeader>::fail(ParseError::kBadVersion);
  }
  size_t hl = sizeof(GeneveHeader) + h->optionsLength();
  if (hl > b.size()) {
    return Parsed<GeneveHeader>::fail(ParseError::kBadHeaderLength);
  }
  return {h, hl, b.subspan(hl), ParseError::kOk};
}

// Walks the options of a parsed header; each must fit the options area.
// visit(const GeneveOptionHeader&, Bytes data) returns false to stop early.
template <typename Visit>
ParseError forEachGeneveOption(const Parsed<GeneveHeader>& g, Visit&& visit) {
  Bytes opts(reinterpret_cast<const std::byte*>(g.header) + sizeof(GeneveHeader),
             g.header_length - sizeof(GeneveHeader));
  while (!opts.empty()) {
    const auto* o = headerAt<GeneveOptionHeader>(opts);
    if (!o || sizeof(GeneveOptionHeader) + o->dataLength() > opts.size()) {
      return ParseError::kBadOption;
    }
    if (!visit(*o, opts.subspan(sizeof(GeneveOptionHeader), o->dataLength()))) {
      return ParseError::kOk;
    }
    opts = opts.subspan(sizeof(GeneveOptionHeader) + o->dataLength());
  }
  return ParseError::kOk;
}

// Whether an option with the critical bit is one `known` does not accept
// (RFC 8926 §3.5: such a packet MUST be dropped).  Malformed options count
// as unknown critical ones.
template <typename Known>
bool hasUnknownCriticalOption(const Parsed<GeneveHeader>& g, Known&& known) {
  bool unknown = false;
  ParseError e = forEachGeneveOption(g, [&](const GeneveOptionHeader& o, Bytes) {
    unknown = o.critical() && !known(o.option_class.get(), o.type);
    return !unknown;
  });
  return unknown || e != ParseError::kOk;
}

}  // namespace mcgw::proto
