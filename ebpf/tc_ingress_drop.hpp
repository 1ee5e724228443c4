// Drops every frame at an interface's tc ingress, for the af_packet ports.
//
// On a net_af_packet port mcgwd reads the interface through a packet socket
// and gives the kernel its packets through a TAP instead.  Packet sockets see
// a frame before tc ingress, so a filter there that drops everything keeps
// the kernel off the interface while mcgwd still gets its copy.  The filter is
// a two-instruction eBPF program (r0 = TC_ACT_SHOT; exit) attached with
// libbpf's bpf_tc_* calls under a clsact qdisc, at priority 1, handle 1.
//
// The filter outlives mcgwd (the kernel holds the program), so a restart
// finds it in place; attaching replaces it.  Needs CAP_BPF and CAP_NET_ADMIN.
#pragma once

#include <string>

#include "config/result.hpp"

namespace mcgw::ebpf {

// The filter's place under clsact's ingress hook, the same as the
// `tc filter ... ingress pref 1` mcgwd used to spawn, so an upgrade replaces
// the old filter instead of stacking a second one.
inline constexpr unsigned kIngressDropPriority = 1;
inline constexpr unsigned kIngressDropHandle = 1;

// Creates clsact on `ifname` if it is absent and attaches (or re-attaches,
// replacing what is at priority 1, handle 1) the drop-everything filter.
// Returns true, or why not ("lan0: bpf_tc_attach: Operation not permitted").
Result<bool, std::string> attachIngressDrop(const std::string& ifname);

// Removes the filter again; clsact stays (other filters may hang off it).
// Returns true if a filter was removed, false if there was none.
Result<bool, std::string> detachIngressDrop(const std::string& ifname);

}  // namespace mcgw::ebpf
