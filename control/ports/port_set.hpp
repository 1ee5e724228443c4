// The DPDK ports the gateway owns, in config order: opened at start, and on
// a reload opened, closed, reopened or adjusted with every step undoable.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "control/daemon/subsystem.hpp"
#include "dataplane/engine/port.hpp"
#include "dataplane/engine/tables.hpp"

struct rte_mempool;

namespace mcgw::engine {
class Dataplane;
}

namespace mcgw::ports {

class PortSet : public daemon::Subsystem {
 public:
  // What a reload's port steps need from the rest of the gateway.
  struct Hooks {
    // Publishes tables without the `closing` ports, so that workers stop
    // using them (RCU) before they close.
    std::function<Result<bool, std::string>(const std::set<std::string>& closing)> withdraw;
    // A port is about to close: what hangs on it (its TAP) goes first.
    std::function<void(const std::string& name)> closing;
  };

  // Opens every port of `config`; tx_queues: one per worker.  dataplane:
  // where setVirtualMacs puts a port's virtual MACs for the workers (null:
  // the device and kernel side only); it must outlive every call but
  // clear() and the destructor, which leave it alone.
  static Result<std::unique_ptr<PortSet>, std::string> open(config::ConfigPtr config,
                                                            rte_mempool* pool, uint16_t tx_queues,
                                                            engine::Dataplane* dataplane = nullptr);
  ~PortSet() override;  // clear()
  void setHooks(Hooks hooks) { hooks_ = std::move(hooks); }

  engine::Port* find(const std::string& name) const;
  const std::vector<std::unique_ptr<engine::Port>>& all() const { return ports_; }
  std::vector<engine::PortStatus> status() const;
  // Ports a reload opened and has not yet made live (tables are built over
  // them before they are).
  const std::map<std::string, std::unique_ptr<engine::Port>>& prepared() const { return opened_; }
  rte_mempool* pool() const { return pool_; }
  uint16_t txQueues() const { return tx_queues_; }
  // Closes every port (before the EAL goes), taking their virtual MACs off
  // the devices and kernel interfaces first.  Does not touch the dataplane
  // (at shutdown it is gone already).
  void clear();

  // The virtual MACs (VRRP, while a group on the port is Active) the port
  // accepts besides its own: `macs` is the port's whole set (empty: none),
  // at most engine::kMaxVirtualMacs distinct unicast MACs (more, or a group
  // or zero MAC, is refused and changes nothing).  Takes effect at once
  // (no table publication):
  //   - the dataplane's live set for the port (frames to them are handled
  //     as if to the port's MAC; counted as vrrp.virtual_mac_frames);
  //   - the device's MAC filter (rte_eth_dev_mac_addr_add/remove); a PMD
  //     without one (ENOTSUP: net_af_xdp, net_af_packet, net_ring, ...) is
  //     logged once per port and is not an error;
  //   - for a vdev on a kernel interface (`iface=`: af_xdp, af_packet) that
  //     interface's unicast list (`bridge fdb ... self permanent`), so that
  //     the NIC under it does not filter the frames out.
  // Adding is repeated on every call (a MAC someone removed comes back).
  // Best effort: every step is tried; the error names those that failed.
  //
  // The set is kept by port name.  A port closed (reload, shutdown) loses
  // its MACs on the device, the kernel interface and in the dataplane
  // before it closes; a port of that name opened again by a reload (or
  // reopened by a rollback) gets the kept set back when it becomes a
  // running port, so an Active group keeps its MAC through a reload.  A
  // port the new config no longer has loses its kept set.  The caller
  // (the VRRP subsystem) must still call setVirtualMacs again for each of
  // its ports after every reload it applies, with the set its groups want
  // then (groups may have moved, changed VRID or gone: this is what clears
  // a set a group no longer wants); a name not open at the time (mid
  // reload) is kept and applied when the port opens.  An unknown port name
  // is an error.  Control thread only.
  Result<bool, std::string> setVirtualMacs(const std::string& port,
                                           std::span<const engine::Mac> macs);
  // The set kept for the port (what setVirtualMacs was last given).
  std::vector<engine::Mac> virtualMacs(const std::string& port) const;

  // A reload.  prepare() opens the devices no running port holds (held
  // aside: nothing forwards differently).  Ports that close (removed,
  // renamed, a new device or queue layout) are the exception traffic sees:
  // they are withdrawn from the tables, closed, and the devices they held
  // opened for their new owners; MTUs change in place.  abort() undoes
  // every step, newest first (closed ports reopen as they were); a failing
  // prepare() undoes its own steps.
  std::string_view name() const override { return "ports"; }
  Result<bool, std::string> prepare(const daemon::ReloadPlan& plan) override;
  void apply() override;
  void abort() override;

 private:
  PortSet() = default;
  Result<bool, std::string> prepareSteps(const daemon::ReloadPlan& plan);
  Result<bool, std::string> openPrepared(const config::PortConfig& pc);
  void removeStaleVirtualMacs(const config::PortConfig& pc) const;
  void sortBy(const config::Config& order);
  // Puts `macs` on a running port (see setVirtualMacs); with_dataplane
  // false leaves the workers' set alone.  restore: the kept set of the
  // port's name, if any.
  Result<bool, std::string> program(engine::Port& port, const std::vector<engine::Mac>& macs,
                                    bool with_dataplane = true);
  void restoreVirtualMacs(engine::Port& port);
  // Takes a port's virtual MACs off before it closes (with_dataplane:
  // also the workers' set of its port id).
  void forgetVirtualMacs(engine::Port& port, bool with_dataplane);

  // What program() put on a running port.
  struct Programmed {
    std::vector<engine::Mac> macs;
    bool no_device_filter = false;  // the PMD said ENOTSUP (logged once)
  };

  config::ConfigPtr config_;  // the order of ports_
  config::ConfigPtr next_;
  rte_mempool* pool_ = nullptr;
  uint16_t tx_queues_ = 1;
  std::vector<std::unique_ptr<engine::Port>> ports_;
  Hooks hooks_;
  std::map<std::string, std::unique_ptr<engine::Port>> opened_;
  std::vector<std::function<void()>> undo_;
  engine::Dataplane* dataplane_ = nullptr;
  std::map<std::string, std::vector<engine::Mac>> virtual_macs_;  // by port name
  std::map<const engine::Port*, Programmed> programmed_;
};

}  // namespace mcgw::ports
