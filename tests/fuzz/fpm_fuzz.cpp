// libFuzzer target: the FPM decoder and framer (control/frr/fpm_codec) on any
// bytes.
//
// The input is used three ways:
//   * as one frame: decodeFpmFrame(input);
//   * as netlink messages behind a good FPM header (so the fuzzer does not
//     have to find the header to reach the netlink parser);
//   * as a TCP stream, fed to FpmFramer whole and in chunks whose sizes come
//     from the bytes themselves; both give the same frames (and the same
//     error), and the frames are the stream's bytes in order.
// Checked for every decoded frame: prefixes have no host bits and fit their
// family, at most 256 paths, next-hop ids non-zero.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "control/frr/fpm_codec.hpp"

using namespace mcgw::frr;

namespace {

#define CHECK(cond)     \
  do {                  \
    if (!(cond)) {      \
      __builtin_trap(); \
    }                   \
  } while (0)

void checkDecoded(std::span<const uint8_t> frame) {
  auto decoded = decodeFpmFrame(frame);
  if (!decoded.ok()) {
    CHECK(!decoded.error().empty());
    return;
  }
  for (const FpmMessage& m : *decoded) {
    if (const auto* r = std::get_if<FpmRoute>(&m)) {
      CHECK(r->prefix.length <= r->prefix.address.bits());
      CHECK(!r->prefix.hasHostBits());
      CHECK(r->next_hops.size() <= kFpmMaxPaths);
      CHECK(!r->nh_id || *r->nh_id != 0);
      CHECK(!r->replace || !r->withdraw);
      for (const auto& h : r->next_hops)
        CHECK(h.weight >= 1 && h.weight <= 256);
    } else {
      const auto& n = std::get<FpmNextHopObject>(m);
      CHECK(n.id != 0);
      CHECK(n.group.size() <= kFpmMaxPaths);
      CHECK(n.group.empty() || (!n.next_hop && !n.blackhole));
    }
  }
}

struct Framed {
  std::vector<std::vector<uint8_t>> frames;
  std::string error;
};

void frameAll(FpmFramer& framer, Framed& out) {
  while (auto f = framer.next()) {
    if (!f->ok()) {
      out.error = f->error();
      // The error sticks.
      auto again = framer.next();
      CHECK(again && !again->ok() && again->error() == out.error);
      break;
    }
    CHECK(f->value().size() >= kFpmHeaderSize);
    out.frames.push_back(std::move(f->value()));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const uint8_t> input(data, size);
  checkDecoded(input);

  if (size + kFpmHeaderSize <= kFpmMaxFrame) {
    const size_t n = size + kFpmHeaderSize;
    std::vector<uint8_t> wrapped{1, 1, static_cast<uint8_t>(n >> 8), static_cast<uint8_t>(n)};
    wrapped.insert(wrapped.end(), input.begin(), input.end());
    checkDecoded(wrapped);
  }

  FpmFramer whole;
  whole.feed(input);
  Framed a;
  frameAll(whole, a);

  FpmFramer chunked;
  Framed b;
  for (size_t pos = 0, i = 0; pos < size; ++i) {
    const size_t step = std::min<size_t>(size - pos, (data[i % size] % 97) + 1);
    chunked.feed(input.subspan(pos, step));
    pos += step;
    frameAll(chunked, b);
    CHECK(chunked.buffered() <= size);
    if (!b.error.empty())
      break;
  }
  CHECK(a.error == b.error);
  CHECK(a.frames == b.frames);

  size_t offset = 0;
  for (const auto& f : a.frames) {
    CHECK(std::equal(f.begin(), f.end(), data + offset));
    offset += f.size();
    checkDecoded(f);
  }
  if (a.error.empty()) {
    CHECK(whole.buffered() == size - offset);
  }
  return 0;
}
