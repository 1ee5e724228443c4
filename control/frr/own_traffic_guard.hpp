// zebra installs BGP routes into the gateway namespace's kernel as well as
// sending them over FPM (FRR 8.4 cannot be told not to).  Those kernel
// routes point at peer VTEPs through the WAN ports' kernel sides, so a
// packet the gateway itself sends to a remote VPC would leave raw,
// unencapsulated, onto the underlay.  The guard refuses exactly that: an nft
// table in the gateway's namespace rejects (ICMP admin-prohibited, counted)
// locally generated packets to any range of the address plan that would
// leave through a WAN kernel side.  Underlay traffic (BGP, BFD, probes,
// management) goes to other addresses and is untouched.
#pragma once

#include <string>
#include <vector>

#include "config/config.hpp"

namespace mcgw::frr {

inline constexpr const char* kGuardTable = "mcgw_guard";
inline constexpr const char* kNft = "/usr/sbin/nft";

// The nft script (for `nft -f`) that replaces the guard table atomically: the
// plan's VPC and mapped ranges, rejected out of `wan_interfaces`.  With no
// range or no WAN interface, the script only removes the table.
std::string renderOwnTrafficGuard(const config::Config& config,
                                  const std::vector<std::string>& wan_interfaces);

}  // namespace mcgw::frr
