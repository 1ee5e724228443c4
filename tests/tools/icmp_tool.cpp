// Test-only: runs the ICMP error codec and IPv4 fragmentation
// (dataplane/proto/icmp_error.hpp, fragment.hpp) on packets given as hex, one request a
// line on stdin, one answer a line on stdout:
//   error <v6 0|1> <time-exceeded|too-big> <mtu> <source-hex> <ttl_restore> <packet-hex>
//       → the ICMP error IP packet in hex, or "-" when buildIcmpError returns 0
//   frag <mtu> <packet-hex>
//       → the fragments in hex separated by spaces, or "-" when the count is 0
//   may <v6 0|1> <packet-hex>
//       → 1 or 0 (mayAnswer)
// A line it can't read → "?" and exit status 1 at the end.
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "dataplane/proto/fragment.hpp"
#include "dataplane/proto/icmp_error.hpp"
#include "tests/support/hex.hpp"

namespace {

using mcgw::proto::Bytes;
using mcgw::proto::MutableBytes;

bool fromHex(const std::string& s, std::vector<std::byte>* out) {
  auto bytes = mcgw::test::parseHex(s);
  if (bytes) {
    *out = std::move(*bytes);
  }
  return bytes.has_value();
}

using mcgw::test::toHex;

// One request; false when the line can't be read.
bool answer(const std::string& line, std::string* out) {
  std::istringstream in(line);
  std::string op;
  in >> op;
  std::vector<std::byte> packet;
  std::string hex;
  if (op == "error") {
    int v6 = 0;
    std::string kind;
    uint32_t mtu = 0;
    std::string source_hex;
    unsigned ttl_restore = 0;
    if (!(in >> v6 >> kind >> mtu >> source_hex >> ttl_restore >> hex) || !fromHex(hex, &packet)) {
      return false;
    }
    std::vector<std::byte> source;
    if (!fromHex(source_hex, &source) || source.size() != (v6 ? 16u : 4u) || ttl_restore > 255 ||
        (kind != "time-exceeded" && kind != "too-big")) {
      return false;
    }
    std::vector<std::byte> buf(2048);
    const size_t n = mcgw::proto::buildIcmpError(
        MutableBytes(buf), Bytes(packet), v6 != 0,
        kind == "too-big" ? mcgw::proto::IcmpErrorKind::kTooBig
                          : mcgw::proto::IcmpErrorKind::kTimeExceeded,
        mtu, reinterpret_cast<const uint8_t*>(source.data()), static_cast<uint8_t>(ttl_restore));
    *out = n ? toHex(buf.data(), n) : "-";
    return true;
  }
  if (op == "frag") {
    size_t mtu = 0;
    if (!(in >> mtu >> hex) || !fromHex(hex, &packet)) {
      return false;
    }
    const size_t count = mcgw::proto::ipv4FragmentCount(Bytes(packet), mtu);
    if (!count) {
      *out = "-";
      return true;
    }
    std::vector<std::byte> buf(65536);
    out->clear();
    for (size_t i = 0; i < count; ++i) {
      const size_t n = mcgw::proto::writeIpv4Fragment(Bytes(packet), mtu, i, MutableBytes(buf));
      if (!n) {
        return false;
      }
      *out += (i ? " " : "") + toHex(buf.data(), n);
    }
    return true;
  }
  if (op == "may") {
    int v6 = 0;
    if (!(in >> v6 >> hex) || !fromHex(hex, &packet)) {
      return false;
    }
    *out = mcgw::proto::mayAnswer(Bytes(packet), v6 != 0) ? "1" : "0";
    return true;
  }
  return false;
}

}  // namespace

int main() {
  int status = 0;
  std::string line;
  while (std::getline(std::cin, line)) {
    std::string out;
    if (!answer(line, &out)) {
      out = "?";
      status = 1;
    }
    std::cout << out << '\n';
  }
  return status;
}
