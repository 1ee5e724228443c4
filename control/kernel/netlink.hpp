// The Linux kernel side of the gateway over rtnetlink (libmnl): the
// neighbour table (ARP/ND), which is the fast path's single source of
// next-hop MACs, and the addresses and state of the exception-path
// interfaces (TAPs) that carry the gateway's own addresses.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "config/net.hpp"
#include "config/result.hpp"

struct mnl_socket;
struct nlmsghdr;

namespace mcgw::kernel {

struct Neighbor {
  int ifindex = 0;
  config::IpAddress address;
  std::array<uint8_t, 6> mac{};
  uint16_t state = 0;    // NUD_*
  bool managed = false;  // kept resolved by the kernel (NTF_EXT_MANAGED)
  bool usable() const;   // has a MAC in a state the kernel would send with
};

// Follows the kernel neighbour table: a dump at open, then notifications.
class NeighborMonitor {
 public:
  static Result<std::unique_ptr<NeighborMonitor>, std::string> open();
  ~NeighborMonitor();
  NeighborMonitor(const NeighborMonitor&) = delete;
  NeighborMonitor& operator=(const NeighborMonitor&) = delete;

  int fd() const;
  // Reads what is pending (non-blocking); true when the table changed.  On
  // a lost notification (ENOBUFS) it dumps the table again.
  bool receive();

  using Key = std::tuple<int, config::IpAddress>;
  const std::map<Key, Neighbor>& entries() const { return entries_; }

 private:
  NeighborMonitor() = default;
  bool dump();
  bool apply(const ::nlmsghdr* nlh);
  mnl_socket* sock_ = nullptr;
  std::map<Key, Neighbor> entries_;
  std::vector<char> buf_;
};

// One-shot rtnetlink requests, each acknowledged.  Errors name the kernel's
// reason.
namespace rtnl {

// Asks the kernel to resolve and keep resolving a neighbour (a managed
// entry, Linux 5.16+).  An existing entry is left as it is: the result is
// true when the entry was created (so it is the caller's to delete).
Result<bool, std::string> addManagedNeighbor(int ifindex, const config::IpAddress& address);
// Removes a neighbour entry (missing is fine).
Result<bool, std::string> deleteNeighbor(int ifindex, const config::IpAddress& address);
// Adds an address with its prefix length (existing is fine).
Result<bool, std::string> addAddress(int ifindex, const config::InterfaceAddress& address);
// Removes an address (missing is fine).
Result<bool, std::string> deleteAddress(int ifindex, const config::InterfaceAddress& address);
// Sets the link up (and its MTU when mtu > 0).
Result<bool, std::string> setLinkUp(int ifindex, uint32_t mtu);
// The interface's unicast address list: MACs its receive filter accepts
// besides its own (what `bridge fdb add MAC dev IF self permanent` and `del`
// edit; a device without a unicast filter goes promiscuous while the list is
// not empty).  Adding one that is there, or deleting one that is not, is
// fine.
Result<bool, std::string> addUnicastAddress(int ifindex, const std::array<uint8_t, 6>& mac);
Result<bool, std::string> deleteUnicastAddress(int ifindex, const std::array<uint8_t, 6>& mac);

}  // namespace rtnl

}  // namespace mcgw::kernel
