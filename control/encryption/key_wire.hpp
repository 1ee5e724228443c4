// The messages of the ESP key agreement (key_agreement.hpp) on its TLS
// connection: a pure codec over bytes, no I/O, no OpenSSL.
//
//    0               1               2               3
//   +---------------+---------------+-------------------------------+
//   |  version (1)  |     type      |   length of the body (BE)     |
//   +---------------+---------------+-------------------------------+
//   |  body (length bytes, at most kMaxBody) ...
//
//   type 1 HELLO          body: generation (8, BE) || SPI (4, BE)   (12 bytes)
//   type 2 READY          body: generation (8, BE)                  (8 bytes)
//   type 3 REKEY          body: generation (8, BE) || SPI (4, BE)   (12 bytes)
//   type 4 REKEY-REQUEST  body: empty
//   type 5 ERROR          body: a reason in text (at most kMaxErrorText bytes)
//
// A frame is at most kMaxFrame bytes; any other version, type or length is
// an error that closes the connection.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "config/result.hpp"

namespace mcgw::encryption {

inline constexpr uint8_t kProtocolVersion = 1;
inline constexpr size_t kFrameHeader = 4;
inline constexpr size_t kMaxFrame = 256;
inline constexpr size_t kMaxBody = kMaxFrame - kFrameHeader;
inline constexpr size_t kMaxErrorText = 200;

enum class MsgType : uint8_t {
  kHello = 1,
  kReady = 2,
  kRekey = 3,
  kRekeyRequest = 4,
  kError = 5,
};

struct Message {
  MsgType type = MsgType::kHello;
  uint64_t generation = 0;  // HELLO, REKEY, READY
  uint32_t spi = 0;         // HELLO, REKEY
  std::string text;         // ERROR (raw bytes: escape before showing)
  bool operator==(const Message&) const = default;
};

// A frame for m (ERROR text cut to kMaxErrorText bytes).
std::vector<uint8_t> encodeMessage(const Message& m);

// The first frame in bytes: nullopt while incomplete; an error as soon as it
// can never be valid (wrong version, unknown type, a length too large or
// wrong for its type: known from the header, before the body arrives).
// *used is set to the frame's length on success.
std::optional<Result<Message, std::string>> decodeMessage(std::span<const uint8_t> bytes,
                                                          size_t* used);

// n bytes of v, big-endian (network order), and back.
inline void putBe(uint8_t* p, uint64_t v, int n) {
  for (int i = n - 1; i >= 0; --i) {
    p[i] = static_cast<uint8_t>(v);
    v >>= 8;
  }
}
inline uint64_t getBe(const uint8_t* p, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; ++i) {
    v = (v << 8) | p[i];
  }
  return v;
}

}  // namespace mcgw::encryption
