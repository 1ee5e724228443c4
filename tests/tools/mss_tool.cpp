// Test-only driver of proto::clampMss() for tests/unit/dataplane/mss_scapy_test.py.
//
// stdin, one packet a line:   <max_mss> <insert 0|1> <v6 0|1> <hex IP packet>
// stdout, one line for each:  <verdict> <hex IP packet after>
//
// The buffer has 64 bytes of room after the packet, for an insert.  Exit
// status 2 on a line it cannot read.
#include <cstdio>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "dataplane/proto/mss.hpp"
#include "tests/support/hex.hpp"

namespace {

bool fromHex(const std::string& s, std::vector<uint8_t>* out) {
  auto bytes = mcgw::test::parseHex<uint8_t>(s);
  if (bytes) {
    *out = std::move(*bytes);
  }
  return bytes.has_value();
}

}  // namespace

int main() {
  constexpr size_t kRoom = 64;
  std::string line;
  while (std::getline(std::cin, line)) {
    if (line.empty()) {
      continue;
    }
    std::istringstream in(line);
    unsigned max_mss = 0, insert = 0, v6 = 0;
    std::string hex;
    std::vector<uint8_t> packet;
    // An empty packet has no hex word.
    if (!(in >> max_mss >> insert >> v6) || !(in >> hex || in.eof()) || max_mss > 0xffff ||
        insert > 1 || v6 > 1 || !fromHex(hex, &packet)) {
      std::cerr << "mss_tool: cannot read: " << line << "\n";
      return 2;
    }
    size_t len = packet.size();
    packet.resize(len + kRoom);
    const auto verdict = mcgw::proto::clampMss(packet.data(), &len, packet.size(), v6 != 0,
                                               static_cast<uint16_t>(max_mss), insert != 0);
    std::cout << mcgw::proto::toString(verdict) << ' ' << mcgw::test::toHex(packet.data(), len)
              << "\n";
  }
  return 0;
}
