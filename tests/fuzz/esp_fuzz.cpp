// libFuzzer target: inbound ESP (dataplane/crypto/esp.hpp, espOpen) for one
// fixed SA (key 00 01 .. 1f, salt deadbeef: tests/tools/esp_vectors.py's).
//
// Input: a control byte, then
//   bit 0 clear: the bytes are an ESP packet (SPI to ICV); bits 1-2 place the
//     window (top 0, 1000, 2^32 - 3, 2^32 + 5), bits 3-4 its size (64, 128,
//     1024, 4096).  Checked: no read or write outside the packet (it sits in
//     a heap buffer of exactly its size, ASan watching); on kNone the payload
//     and trailer lie inside the packet, the window's top is at least the
//     packet's number, and the same bytes again are a replay.
//   bit 0 set: seq (8 bytes, big-endian; 0 becomes 1), next header (1),
//     payload length (1), the payload (zero-filled if the input is short),
//     then edits of 4 bytes each: op, position (2, big-endian), value; op % 4
//     is 0 xor at position, 1 truncate to position, 2 append value, 3 set
//     byte at position.  The payload is sealed with espSeal and edited; the
//     result is opened with a window just below seq.  Checked: kNone with the
//     payload back exactly when the edited bytes equal the sealed ones, and
//     never kNone otherwise (every change must fail authentication, the
//     window or the length checks).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "dataplane/crypto/esp.hpp"

using namespace mcgw::crypto;

namespace {

#define CHECK(cond)     \
  do {                  \
    if (!(cond)) {      \
      __builtin_trap(); \
    }                   \
  } while (0)

const Salt kSalt{0xde, 0xad, 0xbe, 0xef};

Gcm& gcm() {
  static Gcm g([] {
    Key k{};
    for (size_t i = 0; i < k.size(); ++i) {
      k[i] = static_cast<uint8_t>(i);
    }
    return k;
  }());
  return g;
}

// The packet in a heap buffer of exactly its size.
std::unique_ptr<uint8_t[]> exact(const uint8_t* p, size_t n) {
  std::unique_ptr<uint8_t[]> b(new uint8_t[n]);
  if (n != 0) {
    std::memcpy(b.get(), p, n);
  }
  return b;
}

void rawPacket(uint8_t control, const uint8_t* data, size_t size) {
  static constexpr uint64_t kTops[] = {0, 1000, (uint64_t{1} << 32) - 3, (uint64_t{1} << 32) + 5};
  static constexpr uint32_t kSizes[] = {64, 128, 1024, 4096};
  ReplayWindow window(kSizes[(control >> 3) & 3]);
  const uint64_t top = kTops[(control >> 1) & 3];
  if (top != 0) {
    CHECK(window.update(top));
  }
  auto buf = exact(data, size);
  EspOpened out;
  const EspError e = espOpen(gcm(), kSalt, window, buf.get(), size, out);
  if (e != EspError::kNone) {
    CHECK(window.highest() == top);
    return;
  }
  CHECK(kEspPrefixLen + out.payload_len + 2 + kIcvLen <= size);
  CHECK((size - kEspPrefixLen - kIcvLen) % 4 == 0);
  CHECK(out.seq != 0 && window.highest() >= out.seq && !window.check(out.seq));
  auto again = exact(data, size);
  CHECK(espOpen(gcm(), kSalt, window, again.get(), size, out) == EspError::kReplay);
}

void mutatedPacket(const uint8_t* data, size_t size) {
  size_t at = 0;
  auto next = [&]() -> uint8_t { return at < size ? data[at++] : 0; };
  uint64_t seq = 0;
  for (int i = 0; i < 8; ++i) {
    seq = seq << 8 | next();
  }
  seq = seq == 0 ? 1 : seq;
  const uint8_t nh = next();
  const size_t payload_len = next();
  std::vector<uint8_t> sealed(kEspPrefixLen + payload_len + espTrailerLen(payload_len));
  for (size_t i = 0; i < payload_len; ++i) {
    sealed[kEspPrefixLen + i] = next();
  }
  const std::vector<uint8_t> payload(sealed.begin() + kEspPrefixLen,
                                     sealed.begin() + kEspPrefixLen + payload_len);
  CHECK(espSeal(gcm(), kSalt, 0x0a0b0c0d, seq, nh, sealed.data(), payload_len) == sealed.size());

  std::vector<uint8_t> edited = sealed;
  while (at + 4 <= size) {
    const uint8_t op = next();
    const size_t pos = size_t{next()} << 8 | next();
    const uint8_t value = next();
    switch (op % 4) {
      case 0:
        if (!edited.empty()) {
          edited[pos % edited.size()] ^= value;
        }
        break;
      case 1:
        if (pos < edited.size()) {
          edited.resize(pos);
        }
        break;
      case 2:
        edited.push_back(value);
        break;
      default:
        if (!edited.empty()) {
          edited[pos % edited.size()] = value;
        }
    }
  }

  ReplayWindow window(1024);
  if (seq > 1) {
    CHECK(window.update(seq - 1));
  }
  auto buf = exact(edited.data(), edited.size());
  EspOpened out;
  const EspError e = espOpen(gcm(), kSalt, window, buf.get(), edited.size(), out);
  if (edited == sealed) {
    CHECK(e == EspError::kNone);
    CHECK(out.seq == seq && out.next_header == nh && out.payload_len == payload_len);
    CHECK(std::memcmp(buf.get() + kEspPrefixLen, payload.data(), payload_len) == 0);
  } else {
    CHECK(e != EspError::kNone);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) {
    return 0;
  }
  if (data[0] & 1) {
    mutatedPacket(data + 1, size - 1);
  } else {
    rawPacket(data[0], data + 1, size - 1);
  }
  return 0;
}
