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

namespace {

int nibble(char c) {
  if (c >= '0' && c <= '9') {
    return c - '0';
  }
  if (c >= 'a' && c <= 'f') {
    return c - 'a' + 10;
  }
  if (c >= 'A' && c <= 'F') {
    return c - 'A' + 10;
  }
  return -1;
}

bool fromHex(const std::string& s, std::vector<uint8_t>* out) {
  if (s.size() % 2) {
    return false;
  }
  for (size_t i = 0; i < s.size(); i += 2) {
    const int hi = nibble(s[i]), lo = nibble(s[i + 1]);
    if (hi < 0 || lo < 0) {
      return false;
    }
    out->push_back(static_cast<uint8_t>(hi << 4 | lo));
  }
  return true;
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
    std::string out(mcgw::proto::toString(verdict));
    out += ' ';
    char buf[3];
    for (size_t i = 0; i < len; ++i) {
      std::snprintf(buf, sizeof buf, "%02x", packet[i]);
      out += buf;
    }
    std::cout << out << "\n";
  }
  return 0;
}
