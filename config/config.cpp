// Helpers of the typed Config.
#include "config/config.hpp"

#include <algorithm>
#include <cctype>

namespace mcgw::config {

const char* cloudReserving100_64(std::string_view cloud) {
  std::string lower;
  for (char ch : cloud) {
    lower += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  }
  if (lower == "aliyun") {
    return "Alibaba Cloud";
  }
  if (lower == "huaweicloud" || lower == "huawei") {
    return "Huawei Cloud";
  }
  return nullptr;
}

std::string siteOf(const Config& config, const MappedRange& m) {
  if (!m.site.empty()) {
    return m.site;
  }
  for (const auto& v : config.address_plan.vpcs) {
    for (const auto& p : v.prefixes) {
      if (p.network() == m.real.network()) {
        return v.site;
      }
    }
  }
  return "";
}

namespace {
constexpr std::pair<std::string_view, uint8_t> kProtocols[] = {
    {"icmp", 1}, {"tcp", 6}, {"udp", 17}, {"gre", 47}, {"esp", 50}, {"icmpv6", 58}, {"sctp", 132}};

// Digits only (the model's pattern); saturates at `cap` + 1.
uint32_t boundedNumber(std::string_view digits, uint32_t cap) {
  uint32_t v = 0;
  for (char ch : digits) {
    if (ch < '0' || ch > '9') {
      return cap + 1;
    }
    v = std::min<uint32_t>(v * 10 + static_cast<uint32_t>(ch - '0'), cap + 1);
  }
  return v;
}
}  // namespace

std::optional<uint8_t> protocolNumber(std::string_view text) {
  for (const auto& [name, number] : kProtocols) {
    if (text == name) {
      return number;
    }
  }
  if (text.empty() || text == "any") {
    return std::nullopt;
  }
  const uint32_t v = boundedNumber(text, 255);
  return v <= 255 ? std::optional<uint8_t>(static_cast<uint8_t>(v)) : std::nullopt;
}

std::string protocolName(uint8_t protocol) {
  for (const auto& [name, number] : kProtocols) {
    if (protocol == number) {
      return std::string(name);
    }
  }
  return std::to_string(protocol);
}

std::pair<uint16_t, uint16_t> portRange(std::string_view text) {
  if (text.empty()) {
    return {0, 65535};
  }
  const auto dash = text.find('-');
  const auto lo =
      static_cast<uint16_t>(std::min<uint32_t>(boundedNumber(text.substr(0, dash), 65535), 65535));
  if (dash == std::string_view::npos) {
    return {lo, lo};
  }
  const auto hi =
      static_cast<uint16_t>(std::min<uint32_t>(boundedNumber(text.substr(dash + 1), 65535), 65535));
  return {lo, hi};
}

const PortConfig* Config::findPort(const std::string& name) const {
  for (const auto& p : ports) {
    if (p.name == name) {
      return &p;
    }
  }
  return nullptr;
}

const TenantConfig* Config::findTenant(const std::string& name) const {
  for (const auto& t : tenants) {
    if (t.name == name) {
      return &t;
    }
  }
  return nullptr;
}

const PeerConfig* Config::findPeer(const std::string& name) const {
  for (const auto& p : peers) {
    if (p.name == name) {
      return &p;
    }
  }
  return nullptr;
}

std::string PortConfig::deviceName() const {
  if (!pci.empty()) {
    // DPDK names PCI devices domain:bus:device.function in lower case.
    std::string name = pci.size() == 7 ? "0000:" + pci : pci;
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char ch) { return std::tolower(ch); });
    return name;
  }
  return vdev.substr(0, vdev.find(','));
}

std::string PortConfig::kernelInterface() const {
  auto at = vdev.find(",iface=");
  if (at == std::string::npos) {
    return "";
  }
  at += 7;
  return vdev.substr(at, vdev.find(',', at) - at);
}

const char* toString(PortRole r) {
  return r == PortRole::kWan ? "wan" : "lan";
}
const char* toString(Encapsulation e) {
  return e == Encapsulation::kGeneve ? "geneve" : "vxlan";
}
const char* toString(LineMode m) {
  return m == LineMode::kEcmp ? "ecmp" : "active-backup";
}
std::string toString(const MssClamp& m) {
  switch (m.mode) {
    case MssClamp::Mode::kAuto:
      return "auto";
    case MssClamp::Mode::kOff:
      return "off";
    case MssClamp::Mode::kFixed:
      break;
  }
  return std::to_string(m.value);
}

std::optional<ListenAddress> parseListen(std::string_view text) {
  const size_t colon = text.rfind(':');
  if (colon == std::string_view::npos || colon + 1 == text.size() || text.size() - colon > 6) {
    return std::nullopt;
  }
  std::string_view host = text.substr(0, colon);
  const std::string_view port = text.substr(colon + 1);
  const bool bracketed = host.size() >= 2 && host.front() == '[' && host.back() == ']';
  if (bracketed) {
    host = host.substr(1, host.size() - 2);
  }
  unsigned value = 0;
  for (char ch : port) {
    if (ch < '0' || ch > '9') {
      return std::nullopt;
    }
    value = value * 10 + static_cast<unsigned>(ch - '0');
  }
  auto address = IpAddress::parse(std::string(host));
  if (!address || value == 0 || value > 65535 || bracketed != (address->family == Family::V6)) {
    return std::nullopt;
  }
  return ListenAddress{*address, static_cast<uint16_t>(value)};
}

}  // namespace mcgw::config
