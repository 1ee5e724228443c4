#include "control/daemon/preflight.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>

namespace mcgw::daemon {

namespace fs = std::filesystem;

namespace {

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

uint64_t readNumber(const fs::path& p) {
  std::ifstream in(p);
  uint64_t v = 0;
  in >> v;
  return v;
}

// Free hugepage memory in MiB over all page sizes.
uint64_t freeHugeMb(const fs::path& sys) {
  uint64_t total = 0;
  std::error_code ec;
  for (const auto& d : fs::directory_iterator(sys / "kernel/mm/hugepages", ec)) {
    std::string name = d.path().filename();  // hugepages-2048kB
    uint64_t kb = std::stoull(name.substr(name.find('-') + 1));
    total += readNumber(d.path() / "free_hugepages") * kb / 1024;
  }
  return total;
}

}  // namespace

std::vector<Check> preflight(const config::Config& c, const PreflightRoots& roots) {
  std::vector<Check> out;
  const fs::path sys = roots.sys;

  if (c.eal.hugepages) {
    uint64_t free_mb = freeHugeMb(sys);
    bool mounted = slurp(fs::path(roots.proc) / "mounts").find("hugetlbfs") != std::string::npos;
    Check h{"hugepages", free_mb >= c.eal.memory_mb && mounted, ""};
    if (!mounted) {
      h.detail = "no hugetlbfs is mounted (mount -t hugetlbfs nodev /dev/hugepages)";
    } else if (!h.ok) {
      h.detail = "eal.memory-mb needs " + std::to_string(c.eal.memory_mb) + " MiB, " +
                 std::to_string(free_mb) + " MiB free (echo " +
                 std::to_string((c.eal.memory_mb + 1) / 2) +
                 " > /sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages), or set "
                 "eal.hugepages: false";
    } else {
      h.detail = std::to_string(free_mb) + " MiB free";
    }
    out.push_back(h);
  }

  for (const auto& p : c.ports) {
    if (!p.pci.empty()) {
      fs::path dev = sys / "bus/pci/devices" / p.deviceName();
      Check d{"port " + p.name + " driver", false, ""};
      std::error_code ec;
      if (!fs::exists(dev, ec)) {
        d.detail = "PCI device " + p.pci + " does not exist on this host";
      } else {
        std::string driver = fs::read_symlink(dev / "driver", ec).filename();
        d.ok = driver == "vfio-pci" || driver == "uio_pci_generic" || driver == "igb_uio" ||
               driver == "mlx5_core";
        d.detail = driver.empty() ? "PCI device " + p.pci +
                                        " has no driver (modprobe vfio-pci; dpdk-devbind.py -b "
                                        "vfio-pci " +
                                        p.pci + ")"
                   : d.ok ? "bound to " + driver
                          : "PCI device " + p.pci + " is bound to " + driver +
                                ", not vfio-pci (dpdk-devbind.py -b vfio-pci " + p.pci + ")";
      }
      out.push_back(d);
    } else if (std::string iface = p.kernelInterface(); !iface.empty()) {
      std::error_code ec;
      bool ok = fs::exists(sys / "class/net" / iface, ec);
      out.push_back({"port " + p.name + " interface", ok,
                     ok ? iface + " present"
                        : "interface " + iface + " (from vdev " + p.vdev +
                              ") does not exist in this network namespace"});
    }
  }

  if (c.bgp.enabled) {
    std::vector<std::string> daemons{"zebra", "bgpd", "staticd"};
    if (c.bgp.bfd_enabled) {
      daemons.push_back("bfdd");
    }
    std::string missing;
    for (const auto& d : daemons) {
      if (!fs::exists(fs::path(roots.frr) / d)) {
        missing += (missing.empty() ? "" : ", ") + d;
      }
    }
    bool fpm = fs::exists(fs::path(roots.frr_modules) / "dplane_fpm_nl.so");
    if (!fpm) {
      missing += std::string(missing.empty() ? "" : ", ") + "zebra module dplane_fpm_nl";
    }
    out.push_back(
        {"FRR", missing.empty(),
         missing.empty()
             ? "zebra, bgpd" + std::string(c.bgp.bfd_enabled ? ", bfdd" : "") +
                   " and dplane_fpm_nl present"
             : "bgp is configured but FRR is missing " + missing + " (apt-get install frr)"});
  }
  return out;
}

}  // namespace mcgw::daemon
