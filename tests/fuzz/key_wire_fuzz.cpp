// libFuzzer target: the key agreement's message codec
// (control/encryption/key_wire) on any bytes, as the stream a peer sends
// inside TLS.  Frames are taken one after the other as the connection does;
// for each: an error ends the stream; a message is at most kMaxFrame bytes,
// encodes back to exactly the bytes it came from, and no prefix of those
// bytes is taken for anything but an incomplete frame.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "control/encryption/key_wire.hpp"

using namespace mcgw::encryption;

#define CHECK(cond)     \
  do {                  \
    if (!(cond)) {      \
      __builtin_trap(); \
    }                   \
  } while (0)

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::span<const uint8_t> rest(data, size);
  while (!rest.empty()) {
    size_t used = 0;
    auto m = decodeMessage(rest, &used);
    if (!m) {
      CHECK(rest.size() < kFrameHeader + kMaxBody);
      break;
    }
    if (!m->ok()) {
      break;
    }
    CHECK(used >= kFrameHeader && used <= kMaxFrame && used <= rest.size());
    const std::vector<uint8_t> again = encodeMessage(m->value());
    CHECK(again.size() == used);
    CHECK(std::equal(again.begin(), again.end(), rest.begin()));
    for (size_t cut = 0; cut < used; ++cut) {
      size_t u = 0;
      auto p = decodeMessage(rest.first(cut), &u);
      CHECK(!p.has_value());
    }
    rest = rest.subspan(used);
  }
  return 0;
}
