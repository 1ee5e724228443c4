#include "control/daemon/preflight.hpp"

#include <gtest/gtest.h>

#include "config/loader.hpp"
#include "tests/support/process.hpp"

namespace mcgw::daemon {
namespace {

using test::TempDir;
using test::writeFile;
namespace fs = std::filesystem;

config::ConfigPtr load(const std::string& yaml) {
  auto r = config::loadConfigText(yaml, "t.yaml");
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().front().toString());
  return *r;
}

const Check* find(const std::vector<Check>& checks, const std::string& what) {
  for (const auto& c : checks) {
    if (c.what == what) {
      return &c;
    }
  }
  return nullptr;
}

class PreflightTest : public ::testing::Test {
 protected:
  void SetUp() override {
    roots_.sys = (dir_.path() / "sys").string();
    roots_.proc = (dir_.path() / "proc").string();
    roots_.frr = (dir_.path() / "frr").string();
    roots_.frr_modules = (dir_.path() / "frrmod").string();
    fs::create_directories(dir_.path() / "sys/kernel/mm/hugepages/hugepages-2048kB");
    fs::create_directories(dir_.path() / "proc");
    fs::create_directories(dir_.path() / "sys/bus/pci/devices/0000:00:08.0");
    fs::create_directories(dir_.path() / "sys/bus/pci/drivers/virtio-pci");
    fs::create_directory_symlink(dir_.path() / "sys/bus/pci/drivers/virtio-pci",
                                 dir_.path() / "sys/bus/pci/devices/0000:00:08.0/driver");
    fs::create_directories(dir_.path() / "sys/class/net/veth1");
    writeFile(roots_.proc + "/mounts", "proc /proc proc rw 0 0\n");
    writeFile(roots_.sys + "/kernel/mm/hugepages/hugepages-2048kB/free_hugepages", "0\n");
  }
  TempDir dir_;
  PreflightRoots roots_;
};

// FRR's config directory (its daemons file) is `frr_dir`.
std::string huge(const fs::path& frr_dir) {
  return "node: {name: a, site: b}\neal: {hugepages: true, memory-mb: 512}\n"
         "ports:\n  - {name: p0, role: lan, pci: '0000:00:08.0'}\n"
         "  - {name: p1, role: wan, vdev: 'net_af_packet0,iface=veth1'}\n"
         "  - {name: p2, role: wan, vdev: 'net_af_xdp0,iface=gone0'}\n"
         "bgp: {asn: 65001, router-id: 1.1.1.1, frr: {config-dir: " +
         frr_dir.string() + "}}\n";
}

TEST_F(PreflightTest, NamesWhatIsMissing) {
  auto checks = preflight(*load(huge(dir_.path() / "etc-frr")), roots_);
  const Check* huge = find(checks, "hugepages");
  ASSERT_TRUE(huge);
  EXPECT_FALSE(huge->ok);
  EXPECT_NE(huge->detail.find("no hugetlbfs is mounted"), std::string::npos) << huge->detail;

  const Check* drv = find(checks, "port p0 driver");
  ASSERT_TRUE(drv);
  EXPECT_FALSE(drv->ok);
  EXPECT_NE(drv->detail.find("bound to virtio-pci, not vfio-pci"), std::string::npos);

  const Check* veth = find(checks, "port p1 interface");
  ASSERT_TRUE(veth);
  EXPECT_TRUE(veth->ok);
  const Check* gone = find(checks, "port p2 interface");
  ASSERT_TRUE(gone);
  EXPECT_FALSE(gone->ok);
  EXPECT_NE(gone->detail.find("interface gone0"), std::string::npos);

  const Check* frr = find(checks, "FRR");
  ASSERT_TRUE(frr);
  EXPECT_FALSE(frr->ok);
  // No session with BFD (no peer with an AS number, no neighbour): no bfdd.
  EXPECT_NE(frr->detail.find("missing zebra, bgpd, staticd, zebra module dplane_fpm_nl"),
            std::string::npos)
      << frr->detail;
  const Check* reload = find(checks, "frr-reload.py");
  ASSERT_TRUE(reload);
  EXPECT_FALSE(reload->ok);
  EXPECT_NE(reload->detail.find("apt-get install frr-pythontools"), std::string::npos);
  const Check* daemons = find(checks, "FRR daemons file");
  ASSERT_TRUE(daemons);
  EXPECT_FALSE(daemons->ok);
  EXPECT_NE(daemons->detail.find("etc-frr/daemons does not exist"), std::string::npos)
      << daemons->detail;
}

TEST_F(PreflightTest, SaysWhatTheDaemonsFileLacks) {
  fs::create_directories(dir_.path() / "etc-frr");
  // Debian's default file: bgpd and bfdd off, zebra without the FPM module.
  writeFile((dir_.path() / "etc-frr/daemons").string(),
            "bgpd=no\nospfd=no\nbfdd=no\nstaticd=yes\n"
            "zebra_options=\"  -A 127.0.0.1 -s 90000000\"\n");
  auto checks = preflight(*load(huge(dir_.path() / "etc-frr")), roots_);
  const Check* daemons = find(checks, "FRR daemons file");
  ASSERT_TRUE(daemons);
  EXPECT_FALSE(daemons->ok);
  EXPECT_NE(daemons->detail.find("set bgpd=yes; add \"-M dplane_fpm_nl\" to "
                                 "zebra_options (then systemctl restart frr)"),
            std::string::npos)
      << daemons->detail;
}

TEST_F(PreflightTest, PassesWhenEverythingIsThere) {
  writeFile(roots_.proc + "/mounts", "nodev /dev/hugepages hugetlbfs rw 0 0\n");
  writeFile(roots_.sys + "/kernel/mm/hugepages/hugepages-2048kB/free_hugepages", "300\n");
  fs::remove(dir_.path() / "sys/bus/pci/devices/0000:00:08.0/driver");
  fs::create_directories(dir_.path() / "sys/bus/pci/drivers/vfio-pci");
  fs::create_directory_symlink(dir_.path() / "sys/bus/pci/drivers/vfio-pci",
                               dir_.path() / "sys/bus/pci/devices/0000:00:08.0/driver");
  fs::create_directories(dir_.path() / "sys/class/net/gone0");
  fs::create_directories(roots_.frr);
  fs::create_directories(roots_.frr_modules);
  for (const char* d : {"zebra", "bgpd", "staticd", "bfdd"}) {
    writeFile(roots_.frr + "/" + d, "");
  }
  writeFile(roots_.frr_modules + "/dplane_fpm_nl.so", "");
  writeFile(roots_.frr + "/frr-reload.py", "");
  fs::create_directories(dir_.path() / "etc-frr");
  writeFile((dir_.path() / "etc-frr/daemons").string(),
            "bgpd=yes\nbfdd=yes # BFD\nstaticd=yes\n"
            "zebra_options=\"  -A 127.0.0.1 -s 90000000 -M dplane_fpm_nl\"\n");
  auto checks = preflight(*load(huge(dir_.path() / "etc-frr")), roots_);
  // hugepages, one per port (driver or interface), FRR, frr-reload.py, daemons file.
  ASSERT_EQ(checks.size(), 7u);
  for (const auto& c : checks) {
    EXPECT_TRUE(c.ok) << c.what << ": " << c.detail;
  }
}

}  // namespace
}  // namespace mcgw::daemon
