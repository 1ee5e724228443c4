// The egress guard of an af_xdp interface (mcgw_tc_egress.bpf.c): the BFD
// that the kernel sends through the interface leaves only while this mcgwd
// lives and the site's LAN is reachable, so that a killed mcgwd (or a
// gateway cut off from its LAN) takes its lines down at the remote after
// one detection time, as a dead host would.  BGP is not held.
//
// One guard per interface: the program and its SOCKMAP, loaded from
// mcgw_tc_egress.bpf.o, two unnamed Unix datagram sockets (close-on-exec, so
// that a command mcgwd runs never keeps them) put into the map at key 0
// (mcgwd lives) and key 1 (the site is reachable, setSiteReachable), and
// the program attached under clsact egress at priority 1, handle 1
// (replacing what an earlier mcgwd left there).  The kernel removes the
// sockets from the map when mcgwd dies; the program then drops BFD.
//
// Destroying the guard (a port that closes in a reload) detaches the filter
// first.  mcgwd's own end (an orderly stop) calls keepFilter() before: the
// sockets close and BFD stays held, as after a kill, since the gateway no
// longer forwards.  Needs CAP_BPF and CAP_NET_ADMIN.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>

#include "config/result.hpp"

struct bpf_object;

namespace mcgw::ebpf {

inline constexpr unsigned kEgressGuardPriority = 1;
inline constexpr unsigned kEgressGuardHandle = 1;

// Where mcgw_tc_egress.bpf.o is: next to the XDP object (defaultXdpObjectPath).
std::string defaultTcEgressObjectPath();

class EgressGuard {
 public:
  // Loads `object`, arms the map with a fresh socket and attaches to `ifname`.
  // Returns the guard, or why not ("wan0: bpf_tc_attach: Operation not
  // permitted").
  static Result<std::unique_ptr<EgressGuard>, std::string> attach(
      const std::string& ifname, const std::string& object = defaultTcEgressObjectPath());
  ~EgressGuard();  // detaches the filter (unless keepFilter), closes the sockets and the program
  // The destructor leaves the filter attached: BFD is held from then on.
  void keepFilter() { keep_filter_ = true; }
  EgressGuard(const EgressGuard&) = delete;
  EgressGuard& operator=(const EgressGuard&) = delete;

  const std::string& ifname() const { return ifname_; }
  // Whether the gateway can deliver to its site (no LAN port with a VRRP
  // group is without link).  While not, BFD is dropped, so the remote sites
  // take this gateway's lines out of use; a guard starts with the site
  // reachable.
  Result<bool, std::string> setSiteReachable(bool reachable);

 private:
  EgressGuard() = default;
  std::string ifname_;
  int ifindex_ = 0;
  bpf_object* object_ = nullptr;
  int socket_ = -1;       // key 0: mcgwd lives
  int site_socket_ = -1;  // key 1: the site is reachable
  bool keep_filter_ = false;
};

// VRRP accept mode on an af_xdp LAN interface: attaches (replacing) the
// tc ingress filter mcgw_tc_vmac_host of mcgw_tc_egress.bpf.o at priority
// 2, handle 2, which marks a frame to `mac` that the kernel took for another
// host's as the host's (the XDP program rewrote its destination from a
// virtual MAC; veth classifies frames before XDP runs).  The filter outlives
// the call (the kernel holds the program).
inline constexpr unsigned kVirtualMacHostPriority = 2;
inline constexpr unsigned kVirtualMacHostHandle = 2;
Result<bool, std::string> attachVirtualMacHost(
    const std::string& ifname, const std::array<uint8_t, 6>& mac,
    const std::string& object = defaultTcEgressObjectPath());

// Detaches whatever filter is at the guard's place on `ifname` (a guard a
// killed mcgwd left); true if there was one.
Result<bool, std::string> detachEgressGuard(const std::string& ifname);

}  // namespace mcgw::ebpf
