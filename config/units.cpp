// Rates and sizes as the config and the API spell them (units.hpp).
#include "config/units.hpp"

#include <algorithm>
#include <bit>

namespace mcgw::config {
namespace {

using u128 = unsigned __int128;

// A decimal number: an integer part and up to 9 fraction digits.
struct Decimal {
  uint64_t whole = 0;
  uint64_t fraction = 0;  // the digits after the point as an integer
  uint64_t scale = 1;     // 10^(number of fraction digits)
  size_t end = 0;         // where the number ends in the text
};

std::string quoted(std::string_view what, std::string_view text) {
  return std::string(what) + " \"" + std::string(text) + "\"";
}

Result<Decimal, std::string> parseDecimal(std::string_view what, std::string_view text,
                                          std::string_view example) {
  Decimal d;
  size_t i = 0;
  if (text.empty() || text[0] < '0' || text[0] > '9') {
    return unexpected(quoted(what, text) + ": expected a number such as " + std::string(example));
  }
  for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) {
    if (__builtin_mul_overflow(d.whole, uint64_t{10}, &d.whole) ||
        __builtin_add_overflow(d.whole, static_cast<uint64_t>(text[i] - '0'), &d.whole)) {
      return unexpected(quoted(what, text) + ": too large");
    }
  }
  if (i < text.size() && text[i] == '.') {
    ++i;
    const size_t first = i;
    for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) {
      if (i - first == 9) {
        return unexpected(quoted(what, text) + ": at most 9 digits after the point");
      }
      d.fraction = d.fraction * 10 + static_cast<uint64_t>(text[i] - '0');
      d.scale *= 10;
    }
    if (i == first) {
      return unexpected(quoted(what, text) + ": expected digits after the point");
    }
  }
  d.end = i;
  return d;
}

// d x multiplier, which must be a whole number.
Result<uint64_t, std::string> scaled(std::string_view what, std::string_view text, const Decimal& d,
                                     uint64_t multiplier, std::string_view unit_name) {
  uint64_t whole = 0;
  if (__builtin_mul_overflow(d.whole, multiplier, &whole)) {
    return unexpected(quoted(what, text) + ": too large");
  }
  const u128 fraction = static_cast<u128>(d.fraction) * multiplier;
  if (fraction % d.scale != 0) {
    return unexpected(quoted(what, text) + ": not a whole number of " + std::string(unit_name));
  }
  uint64_t value = 0;
  if (__builtin_add_overflow(whole, static_cast<uint64_t>(fraction / d.scale), &value)) {
    return unexpected(quoted(what, text) + ": too large");
  }
  return value;
}

bool endsWith(std::string_view s, std::string_view tail) {
  return s.size() >= tail.size() && s.substr(s.size() - tail.size()) == tail;
}

}  // namespace

Result<uint64_t, std::string> parseRate(std::string_view text) {
  auto d = parseDecimal("rate", text, "50M or 40G");
  if (!d) {
    return unexpected(d.error());
  }
  std::string_view unit = text.substr(d->end);
  if (endsWith(unit, "bit/s")) {
    unit.remove_suffix(5);
  } else if (endsWith(unit, "bps")) {
    unit.remove_suffix(3);
  }
  uint64_t multiplier = 0;
  if (unit.empty()) {
    multiplier = 1;
  } else if (unit == "k" || unit == "K") {
    multiplier = 1'000;
  } else if (unit == "M") {
    multiplier = 1'000'000;
  } else if (unit == "G") {
    multiplier = 1'000'000'000;
  } else if (unit == "T") {
    multiplier = 1'000'000'000'000;
  } else {
    return unexpected(quoted("rate", text) + ": unknown unit \"" + std::string(unit) +
                      "\" (k, M, G or T, then optionally bit/s or bps)");
  }
  auto bits = scaled("rate", text, *d, multiplier, "bits per second");
  if (!bits) {
    return bits;
  }
  if (*bits < kMinRateBits) {
    return unexpected(quoted("rate", text) + ": below the minimum " + formatRate(kMinRateBits));
  }
  if (*bits > kMaxRateBits) {
    return unexpected(quoted("rate", text) + ": above the maximum " + formatRate(kMaxRateBits));
  }
  return bits;
}

Result<uint64_t, std::string> parseSize(std::string_view text) {
  auto d = parseDecimal("size", text, "1500 or 64k");
  if (!d) {
    return unexpected(d.error());
  }
  std::string_view unit = text.substr(d->end);
  if (endsWith(unit, "B")) {
    unit.remove_suffix(1);
  }
  uint64_t multiplier = 0;
  if (unit.empty()) {
    multiplier = 1;
  } else if (unit == "k" || unit == "K") {
    multiplier = 1'000;
  } else if (unit == "M") {
    multiplier = 1'000'000;
  } else if (unit == "G") {
    multiplier = 1'000'000'000;
  } else if (unit == "Ki") {
    multiplier = uint64_t{1} << 10;
  } else if (unit == "Mi") {
    multiplier = uint64_t{1} << 20;
  } else if (unit == "Gi") {
    multiplier = uint64_t{1} << 30;
  } else {
    return unexpected(quoted("size", text) + ": unknown unit \"" + std::string(unit) +
                      "\" (k, M, G, Ki, Mi or Gi, then optionally B)");
  }
  auto bytes = scaled("size", text, *d, multiplier, "bytes");
  if (!bytes) {
    return bytes;
  }
  if (*bytes == 0) {
    return unexpected(quoted("size", text) + ": must be more than 0");
  }
  if (*bytes > kMaxSizeBytes) {
    return unexpected(quoted("size", text) + ": above the maximum 4GiB");
  }
  return bytes;
}

std::string formatRate(uint64_t bits) {
  std::string best = std::to_string(bits);
  static constexpr struct {
    uint64_t unit;
    int digits;
    char name;
  } kUnits[] = {
      {1'000, 3, 'k'}, {1'000'000, 6, 'M'}, {1'000'000'000, 9, 'G'}, {1'000'000'000'000, 12, 'T'}};
  for (const auto& u : kUnits) {
    if (bits < u.unit) {
      break;
    }
    std::string s = std::to_string(bits / u.unit);
    if (uint64_t rest = bits % u.unit; rest != 0) {
      std::string frac = std::to_string(rest);
      frac.insert(0, static_cast<size_t>(u.digits) - frac.size(), '0');
      frac.erase(frac.find_last_not_of('0') + 1);
      s += "." + frac;
    }
    s += u.name;
    if (s.size() <= best.size()) {
      best = s;
    }
  }
  return best;
}

uint32_t shapeQueuePackets(uint64_t rate_bits, uint32_t queue_ms) {
  const uint64_t packets = rate_bits / 8 * queue_ms / 1000 / 1500;
  return static_cast<uint32_t>(
      std::bit_ceil(std::clamp<uint64_t>(packets, kMinShapeQueue, kMaxShapeQueue)));
}

}  // namespace mcgw::config
