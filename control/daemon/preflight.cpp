#include "control/daemon/preflight.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
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

// FRR's daemons file (read by frr.service): the daemons mcgw needs are on,
// and zebra loads the FPM module.
Check daemonsFileCheck(bool bfd, const fs::path& file) {
  Check k{"FRR daemons file", false, ""};
  std::error_code ec;
  if (!fs::exists(file, ec)) {
    k.detail = file.string() +
               " does not exist: FRR is not installed there (apt-get install frr) "
               "or bgp.frr.config-dir points elsewhere";
    return k;
  }
  std::map<std::string, std::string> values;
  std::istringstream in(slurp(file));
  for (std::string line; std::getline(in, line);) {
    auto hash = line.find('#');
    if (hash != std::string::npos) {
      line.resize(hash);
    }
    auto eq = line.find('=');
    if (eq == std::string::npos) {
      continue;
    }
    std::string key = line.substr(0, eq), value = line.substr(eq + 1);
    auto trim = [](std::string& t) {
      t.erase(0, t.find_first_not_of(" \t\"'"));
      t.erase(t.find_last_not_of(" \t\"'\r") + 1);
    };
    trim(key);
    trim(value);
    values[key] = value;
  }
  std::vector<std::string> fixes;
  std::vector<std::string> needed{"bgpd", "staticd"};
  if (bfd) {
    needed.push_back("bfdd");
  }
  for (const auto& d : needed) {
    if (values[d] != "yes") {
      fixes.push_back("set " + d + "=yes");
    }
  }
  if (values["zebra_options"].find("dplane_fpm_nl") == std::string::npos) {
    fixes.push_back("add \"-M dplane_fpm_nl\" to zebra_options");
  }
  k.ok = fixes.empty();
  if (k.ok) {
    k.detail = file.string() + ": bgpd, staticd" + (bfd ? ", bfdd" : "") +
               " on, zebra loads dplane_fpm_nl";
  } else {
    k.detail = file.string() + ":";
    for (size_t i = 0; i < fixes.size(); ++i) {
      k.detail += (i ? "; " : " ") + fixes[i];
    }
    k.detail += " (then systemctl restart frr)";
  }
  return k;
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

  // bfdd runs when some session has BFD: a line's (bgp.bfd.enabled, for
  // peers with an AS number) or a neighbour's (its own bfd).
  const bool bfd =
      (c.bgp.bfd_enabled && std::any_of(c.peers.begin(), c.peers.end(),
                                        [](const auto& p) { return p.asn.has_value(); })) ||
      std::any_of(c.bgp.neighbors.begin(), c.bgp.neighbors.end(),
                  [](const auto& n) { return n.bfd; });
  if (c.bgp.enabled) {
    std::vector<std::string> daemons{"zebra", "bgpd", "staticd"};
    if (bfd) {
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
             ? "zebra, bgpd" + std::string(bfd ? ", bfdd" : "") + " and dplane_fpm_nl present"
             : "bgp is configured but FRR is missing " + missing + " (apt-get install frr)"});
    bool reload = fs::exists(fs::path(roots.frr) / "frr-reload.py");
    out.push_back({"frr-reload.py", reload,
                   reload ? "present"
                          : "mcgwd applies FRR's config with frr-reload.py: apt-get install "
                            "frr-pythontools"});
    out.push_back(daemonsFileCheck(bfd, fs::path(c.bgp.frr_config_dir) / "daemons"));
  }
  return out;
}

}  // namespace mcgw::daemon
