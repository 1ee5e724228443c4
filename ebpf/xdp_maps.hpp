// The maps of mcgw's XDP program on one interface, for mcgwd: the port's
// role, its VTEP and local addresses, and the verdict counters.
//
// The DPDK af_xdp PMD loads and attaches the program (one copy, with its own
// maps, per port); mcgwd finds the maps through the program attached to the
// port's interface in its own network namespace, never through bpffs pins
// (README.md explains why).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "config/net.hpp"
#include "config/result.hpp"
#include "ebpf/mcgw_xdp_maps.h"
#include "ebpf/xdp_object_path.hpp"

namespace mcgw::ebpf {

enum class XdpRole : uint32_t {
  kNone = MCGW_XDP_ROLE_NONE,  // everything to the kernel
  kLan = MCGW_XDP_ROLE_LAN,
  kWan = MCGW_XDP_ROLE_WAN,
};

// The C++ side of MCGW_XDP_VERDICTS, in the same order as the counters map.
enum class XdpVerdict : uint8_t {
#define MCGW_X(name, cli, text) k##name,
  MCGW_XDP_VERDICTS(MCGW_X)
#undef MCGW_X
      kCount
};

inline constexpr size_t kXdpVerdictCount = static_cast<size_t>(XdpVerdict::kCount);
static_assert(kXdpVerdictCount == MCGW_XDP_VERDICT_COUNT);

struct XdpVerdictInfo {
  std::string_view name;         // "redirect-overlay"
  std::string_view description;  // for humans
};

inline constexpr std::array<XdpVerdictInfo, kXdpVerdictCount> kXdpVerdicts = {{
#define MCGW_X(name, cli, text) {cli, text},
    MCGW_XDP_VERDICTS(MCGW_X)
#undef MCGW_X
}};

constexpr std::string_view toString(XdpVerdict v) {
  return v < XdpVerdict::kCount ? kXdpVerdicts[static_cast<size_t>(v)].name : "unknown";
}

struct XdpCounter {
  uint64_t packets = 0;
  uint64_t bytes = 0;
};
// Indexed by XdpVerdict, summed over the CPUs.
using XdpCounters = std::array<XdpCounter, kXdpVerdictCount>;

inline XdpCounter& at(XdpCounters& c, XdpVerdict v) {
  return c[static_cast<size_t>(v)];
}
inline const XdpCounter& at(const XdpCounters& c, XdpVerdict v) {
  return c[static_cast<size_t>(v)];
}

// The XDP object for the af_xdp PMD's xdp_prog= argument: $MCGW_XDP_OBJECT if
// set; the build tree's when the running binary is in the build tree and the
// object is there; else the installed one if it exists, else the build
// tree's if that exists, else the installed path.
std::string defaultXdpObjectPath();

// A process killed while it had an af_xdp port open leaves its XDP program
// attached, and the af_xdp PMD refuses to open the port again while any
// program is attached.  Detaches the program of `ifname` if it is mcgw's
// (true: one was removed); leaves another program alone (false, with a log
// line for the operator from the caller).  No program: false.
Result<bool, std::string> detachStaleProgram(const std::string& ifname);

class XdpMaps {
 public:
  // Finds the XDP program attached to the interface (in the caller's network
  // namespace; native, generic or offloaded, preferring native) and opens its
  // mcgw maps.  Fails when no program is attached or when the attached one
  // is not mcgw's (DPDK's default program has only xsks_map).
  static Result<XdpMaps, std::string> attachToInterface(const std::string& ifname);
  // The same for a loaded program, by its file descriptor (tests).
  static Result<XdpMaps, std::string> fromProgram(int prog_fd);

  XdpMaps(XdpMaps&& other) noexcept;
  XdpMaps& operator=(XdpMaps&& other) noexcept;
  XdpMaps(const XdpMaps&) = delete;
  XdpMaps& operator=(const XdpMaps&) = delete;
  ~XdpMaps();

  uint32_t programId() const { return prog_id_; }

  Result<mcgw_xdp_port_config, std::string> portConfig() const;
  Result<bool, std::string> setRole(XdpRole role);     // keeps the flags
  Result<bool, std::string> setFlags(uint32_t flags);  // MCGW_XDP_FLAG_*; keeps the role
  // The interface's MAC, for frames to a VRRP virtual MAC (accept mode).
  Result<bool, std::string> setMac(const std::array<uint8_t, 6>& mac);

  // Replace the set: new addresses are added before stale ones are deleted
  // (stale ones first when the map could not hold both); an address in both
  // the old and the new set is never touched, so it is never missing.  More
  // addresses than the map holds is an error that changes nothing.
  Result<bool, std::string> setVteps(const std::vector<config::IpAddress>& addresses);
  Result<bool, std::string> setLocalAddresses(const std::vector<config::IpAddress>& addresses);
  Result<std::vector<config::IpAddress>, std::string> vteps() const;  // sorted
  Result<std::vector<config::IpAddress>, std::string> localAddresses() const;

  // Summed over the CPUs.
  Result<XdpCounters, std::string> counters() const;

 private:
  XdpMaps() = default;
  void close();

  uint32_t prog_id_ = 0;
  int port_cfg_fd_ = -1;
  int vteps_fd_ = -1;
  int local_fd_ = -1;
  int counters_fd_ = -1;
};

}  // namespace mcgw::ebpf
