// ECN through tunnels: RFC 6040 normal mode, applied to VXLAN and Geneve by
// RFC 9601.  Codepoints are the two low bits of the TOS / traffic class.
#pragma once

#include <cstdint>
#include <optional>

namespace mcgw::proto {

inline constexpr uint8_t kEcnNotEct = 0b00;
inline constexpr uint8_t kEcnEct1 = 0b01;
inline constexpr uint8_t kEcnEct0 = 0b10;
inline constexpr uint8_t kEcnCe = 0b11;

// Encapsulation, normal mode: the outer header copies the inner ECN field.
constexpr uint8_t ecnOnEncap(uint8_t inner) {
  return inner & 0b11;
}

// Decapsulation (RFC 6040 §4.2, figure 4): the inner ECN field to forward,
// or nullopt when the packet must be dropped (CE outside, Not-ECT inside).
//
//   inner \ outer | Not-ECT | ECT(0) | ECT(1) | CE
//   Not-ECT       | Not-ECT | Not-ECT| Not-ECT| drop
//   ECT(0)        | ECT(0)  | ECT(0) | ECT(1) | CE
//   ECT(1)        | ECT(1)  | ECT(1) | ECT(1) | CE
//   CE            | CE      | CE     | CE     | CE
constexpr std::optional<uint8_t> ecnOnDecap(uint8_t inner, uint8_t outer) {
  inner &= 0b11;
  outer &= 0b11;
  if (inner == kEcnNotEct) {
    if (outer == kEcnCe) {
      return std::nullopt;
    }
    return kEcnNotEct;
  }
  if (inner == kEcnCe || outer == kEcnCe) {
    return kEcnCe;
  }
  if (outer == kEcnEct1) {
    return kEcnEct1;
  }
  return inner;
}

}  // namespace mcgw::proto
