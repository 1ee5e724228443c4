// The kernel side of each port: the interface that carries the port's
// addresses and where its neighbours are resolved (the af_xdp interface
// itself, or a TAP mcgwd creates for af_packet and PCI ports), with the
// sysctls and tc filter that keep the kernel off an af_packet interface, the
// maps of mcgw's XDP program and the egress guard of an af_xdp interface.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "control/daemon/subsystem.hpp"
#include "control/ports/port_set.hpp"
#include "dataplane/engine/port.hpp"
#include "ebpf/tc_egress_guard.hpp"
#include "ebpf/xdp_maps.hpp"

namespace mcgw::kernel {

struct KernelSide {
  std::string ifname;
  int ifindex = 0;
  std::unique_ptr<engine::Port> tap;
  std::optional<ebpf::XdpMaps> xdp;  // af_xdp: mcgw's XDP program's maps
  // af_xdp: BFD leaves the interface only while mcgwd lives (and, on a WAN
  // port, while the site's LAN is reachable: setSiteReachable).
  std::unique_ptr<ebpf::EgressGuard> egress_guard;
  bool wan = false;
};

class KernelSides : public daemon::Subsystem {
 public:
  KernelSides(const ports::PortSet& ports, config::ConfigPtr config)
      : ports_(ports), config_(std::move(config)) {}

  // Gives every running port without one its kernel side and the port's
  // current addresses; then the XDP maps.  Failures are logged and kept for
  // health: forwarding works without the kernel side, the control plane not.
  void setUp();
  // What mcgw's XDP program needs: role, our VTEPs, our addresses.
  void updateXdpMaps();
  // Whether the gateway can deliver to its site (VRRP: no LAN port of a
  // group without link).  While not, the egress guards of af_xdp WAN ports
  // drop BFD, so the remote sites take this gateway's lines out of use and
  // send to another gateway of the site (docs/failover.md, "The return
  // path"); BFD to LAN routers goes on.
  void setSiteReachable(bool reachable);
  // VRRP accept mode: the virtual addresses the gateway takes as its own now
  // (Active groups with accept-mode).  They go on the loopback interface
  // (/32, /128: the kernel takes them from any interface) and into the XDP
  // programs' local addresses of LAN ports; LAN kernel sides get arp_ignore
  // 1, so the kernel never answers ARP for them with the port's MAC (VRRP
  // answers with the virtual MAC).  The fast path's local routes are the
  // Gateway's (ForwardingState::setAccepted).
  void setAcceptedAddresses(const std::vector<config::IpAddress>& addresses);
  // At start: removes from the loopback the virtual addresses of every
  // group (a killed mcgwd may have left them there).
  void removeStaleAcceptedAddresses();
  bool siteReachable() const { return site_reachable_; }
  // The port closes: its TAP goes first.
  void forget(const std::string& port) { sides_.erase(port); }
  // mcgwd stops: the TAPs go; the egress guards stay attached with their
  // sockets closed, so BFD is held as after a kill (the next mcgwd
  // replaces them).
  void clear();

  const std::map<std::string, KernelSide>& sides() const { return sides_; }
  const KernelSide* find(const std::string& port) const;
  int ifindexOf(const std::string& port) const;
  // Why a kernel side is missing or incomplete (health reasons).
  const std::vector<std::string>& errors() const { return errors_; }

  // A reload: the new config's ports get their kernel sides when applied
  // (after the tables with the new ports are live).
  std::string_view name() const override { return "kernel sides"; }
  Result<bool, std::string> prepare(const daemon::ReloadPlan& plan) override;
  void apply() override;
  void abort() override { next_.reset(); }

 private:
  const ports::PortSet& ports_;
  config::ConfigPtr config_;
  config::ConfigPtr next_;
  std::map<std::string, KernelSide> sides_;  // by port name
  std::vector<std::string> errors_;
  unsigned tap_serial_ = 0;
  bool site_reachable_ = true;
  std::vector<config::IpAddress> accepted_;
};

}  // namespace mcgw::kernel
