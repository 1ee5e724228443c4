#include "dataplane/engine/port.hpp"

#include <rte_bus.h>
#include <rte_dev.h>
#include <rte_errno.h>
#include <rte_ethdev.h>

#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

namespace mcgw::engine {

namespace {

// Whether the kernel interface has carrier.  These PMDs report their link up
// once started whatever the wire does, so status asks the kernel instead.
bool kernelLinkUp(const std::string& iface) {
  int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    return false;
  }
  ifreq req{};
  std::strncpy(req.ifr_name, iface.c_str(), IFNAMSIZ - 1);
  bool up = ::ioctl(fd, SIOCGIFFLAGS, &req) == 0 && (req.ifr_flags & IFF_UP) &&
            (req.ifr_flags & IFF_RUNNING);
  ::close(fd);
  return up;
}

std::string err(const std::string& port, const std::string& what, int rc) {
  return "port " + port + ": " + what + ": " + rte_strerror(rc < 0 ? -rc : rc);
}

}  // namespace

// mcgw's DPDK owner identity: a port owned by it belongs to one Port object,
// so no second Port (a renamed or duplicated entry) can take it over.
uint64_t ownerId() {
  static const uint64_t id = [] {
    uint64_t v = RTE_ETH_DEV_NO_OWNER;
    rte_eth_dev_owner_new(&v);
    return v;
  }();
  return id;
}

Result<std::unique_ptr<Port>, std::string> Port::open(const config::PortConfig& c,
                                                      rte_mempool* pool, uint16_t tx_queues,
                                                      const std::string& extra_devargs) {
  const std::string dev = c.deviceName();
  uint16_t id = 0;
  bool probed = false;
  if (rte_eth_dev_get_port_by_name(dev.c_str(), &id) == 0) {
    // Attached already: an allow-listed PCI device, or one a Port holds.
    rte_eth_dev_owner owner{};
    if (rte_eth_dev_owner_get(id, &owner) == 0 && owner.id != RTE_ETH_DEV_NO_OWNER) {
      return unexpected("port " + c.name + ": device '" + dev + "' is in use by " + owner.name);
    }
  } else {
    // A vdev, or a PCI device added by a reload.
    const std::string args = c.pci.empty() ? c.vdev + extra_devargs : dev;
    int rc = rte_dev_probe(args.c_str());
    if (rc < 0) {
      return unexpected(err(c.name, "cannot attach device '" + args + "'", rc));
    }
    if (rte_eth_dev_get_port_by_name(dev.c_str(), &id) != 0) {
      rte_eal_hotplug_remove(c.pci.empty() ? "vdev" : "pci", dev.c_str());
      return unexpected("port " + c.name + ": device '" + dev + "' attached but has no ethdev");
    }
    probed = true;
  }
  rte_eth_dev_owner owner{ownerId(), ""};
  std::snprintf(owner.name, sizeof owner.name, "port %s", c.name.c_str());
  if (int rc = rte_eth_dev_owner_set(id, &owner); rc != 0) {
    if (probed) {
      rte_eal_hotplug_remove(c.pci.empty() ? "vdev" : "pci", dev.c_str());
    }
    return unexpected(err(c.name, "cannot take ownership of '" + dev + "'", rc));
  }
  // From here the Port owns the device: its destructor undoes a failure.
  std::unique_ptr<Port> port(new Port(c, id, probed));

  rte_eth_dev_info info{};
  if (int rc = rte_eth_dev_info_get(id, &info); rc != 0) {
    return unexpected(err(c.name, "cannot read device info", rc));
  }
  uint16_t rxq = std::min<uint16_t>(c.rx_queues, std::max<uint16_t>(info.max_rx_queues, 1));
  rte_eth_conf conf{};
  if (rxq > 1) {
    conf.rxmode.mq_mode = RTE_ETH_MQ_RX_RSS;
    conf.rx_adv_conf.rss_conf.rss_hf =
        (RTE_ETH_RSS_IP | RTE_ETH_RSS_UDP | RTE_ETH_RSS_TCP) & info.flow_type_rss_offloads;
  }
  if (tx_queues > info.max_tx_queues) {
    return unexpected("port " + c.name + ": the device has " + std::to_string(info.max_tx_queues) +
                      " TX queues; the fast path needs one per worker (" +
                      std::to_string(tx_queues) + ")");
  }
  port->rx_queues_ = rxq;
  if (int rc = rte_eth_dev_configure(id, rxq, tx_queues, &conf); rc != 0) {
    return unexpected(err(c.name, "cannot configure " + std::to_string(rxq) + " RX queues", rc));
  }
  uint16_t nb_rxd = c.rx_descriptors, nb_txd = c.tx_descriptors;
  rte_eth_dev_adjust_nb_rx_tx_desc(id, &nb_rxd, &nb_txd);
  int socket = rte_eth_dev_socket_id(id);
  socket = socket < 0 ? 0 : socket;
  for (uint16_t q = 0; q < rxq; ++q) {
    if (int rc = rte_eth_rx_queue_setup(id, q, nb_rxd, socket, nullptr, pool); rc != 0) {
      return unexpected(err(c.name, "cannot set up RX queue " + std::to_string(q), rc));
    }
  }
  for (uint16_t q = 0; q < tx_queues; ++q) {
    if (int rc = rte_eth_tx_queue_setup(id, q, nb_txd, socket, nullptr); rc != 0) {
      return unexpected(err(c.name, "cannot set up TX queue " + std::to_string(q), rc));
    }
  }
  // Some virtual devices cannot change their MTU; the port then keeps the
  // device's own and status shows it.
  int rc = rte_eth_dev_set_mtu(id, c.mtu);
  if (rc != 0 && rc != -ENOTSUP) {
    return unexpected(err(c.name, "cannot set MTU " + std::to_string(c.mtu), rc));
  }
  if (int rc = rte_eth_dev_start(id); rc != 0) {
    return unexpected(err(c.name, "cannot start", rc));
  }
  return port;
}

Port::~Port() {
  rte_eth_dev_stop(port_id_);
  rte_eth_dev_owner_unset(port_id_, ownerId());
  rte_eth_dev_close(port_id_);
  if (probed_) {
    rte_eal_hotplug_remove(config_.pci.empty() ? "vdev" : "pci", config_.deviceName().c_str());
  }
}

bool Port::linkUp() const {
  rte_eth_link link{};
  if (rte_eth_link_get_nowait(port_id_, &link) != 0 || link.link_status != RTE_ETH_LINK_UP) {
    return false;
  }
  const std::string iface = config_.kernelInterface();
  return iface.empty() || kernelLinkUp(iface);
}

PortStatus Port::status() const {
  PortStatus s;
  s.name = config_.name;
  s.device = config_.pci.empty() ? config_.vdev : config_.deviceName();
  s.port_id = port_id_;
  rte_eth_dev_info info{};
  if (rte_eth_dev_info_get(port_id_, &info) == 0 && info.driver_name) {
    s.driver = info.driver_name;
  }
  s.rx_queues = info.nb_rx_queues;
  rte_eth_link link{};
  if (rte_eth_link_get_nowait(port_id_, &link) == 0) {
    s.speed_mbps = link.link_speed == RTE_ETH_SPEED_NUM_UNKNOWN ? 0 : link.link_speed;
    s.full_duplex = link.link_duplex == RTE_ETH_LINK_FULL_DUPLEX;
  }
  s.link_up = linkUp();
  rte_eth_dev_get_mtu(port_id_, &s.mtu);
  rte_ether_addr mac{};
  if (rte_eth_macaddr_get(port_id_, &mac) == 0) {
    char buf[RTE_ETHER_ADDR_FMT_SIZE];
    rte_ether_format_addr(buf, sizeof buf, &mac);
    s.mac = buf;
  }
  rte_eth_stats st{};
  if (rte_eth_stats_get(port_id_, &st) == 0) {
    s.rx_packets = st.ipackets;
    s.tx_packets = st.opackets;
    s.rx_bytes = st.ibytes;
    s.tx_bytes = st.obytes;
    s.rx_missed = st.imissed;
    s.rx_errors = st.ierrors;
    s.tx_errors = st.oerrors;
    s.rx_nombuf = st.rx_nombuf;
  }
  return s;
}

Result<bool, std::string> Port::setMtu(uint16_t mtu) {
  int rc = rte_eth_dev_set_mtu(port_id_, mtu);
  if (rc == -ENOTSUP) {
    return false;  // the device keeps its own MTU
  }
  if (rc != 0) {
    return unexpected(err(config_.name, "cannot set MTU " + std::to_string(mtu), rc));
  }
  config_.mtu = mtu;
  return true;
}

std::array<uint8_t, 6> Port::mac() const {
  rte_ether_addr a{};
  rte_eth_macaddr_get(port_id_, &a);
  std::array<uint8_t, 6> out;
  std::copy(std::begin(a.addr_bytes), std::end(a.addr_bytes), out.begin());
  return out;
}

}  // namespace mcgw::engine
