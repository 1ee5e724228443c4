// ports::PortSet::setVirtualMacs on a real net_af_packet port over a veth in
// a private, unnamed network namespace (root): the kernel interface's unicast
// list gets the virtual MACs and loses them (as `bridge fdb show` lists it),
// the dataplane's live set follows, a reload that reopens the port keeps
// the set, and a port that closes leaves nothing behind.  EAL --no-huge.
#include <gtest/gtest.h>
#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>

#include <memory>
#include <string>
#include <vector>

#include "config/loader.hpp"
#include "control/daemon/reload_plan.hpp"
#include "control/ports/port_set.hpp"
#include "dataplane/engine/dataplane.hpp"
#include "tests/support/eal.hpp"
#include "tests/support/netns.hpp"
#include "tests/support/process.hpp"

namespace mcgw::ports {
namespace {

const auto* const kEal =
    ::testing::AddGlobalTestEnvironment(new test::EalEnvironment("port_vmac_netns_test", 256));

using engine::Mac;

const Mac kVrid10 = {0x00, 0x00, 0x5e, 0x00, 0x01, 0x0a};
const Mac kVrid11 = {0x00, 0x00, 0x5e, 0x00, 0x01, 0x0b};

std::string configYaml(unsigned rx_descriptors, bool with_lan1 = false) {
  std::string y = R"(node:
  name: gw-a
  site: site-a
eal:
  hugepages: false
ports:
  - name: lan0
    role: lan
    vdev: "net_af_packet0,iface=vm0"
    rx-descriptors: )" +
                  std::to_string(rx_descriptors) +
                  R"(
    addresses: [10.1.0.1/24]
    tenant: t1
)";
  if (with_lan1) {
    y += R"(  - name: lan1
    role: lan
    vdev: "net_af_packet1,iface=vm2"
    addresses: [10.3.0.1/24]
    tenant: t1
)";
  }
  return y + R"(tenants:
  - name: t1
    vni: 5001
)";
}

config::ConfigPtr load(const std::string& yaml) {
  auto c = config::loadConfigText(yaml, "port_virtual_mac_netns_test.yaml");
  if (!c.ok()) {
    std::string all;
    for (const auto& e : c.error()) {
      all += e.toString() + "\n";
    }
    ADD_FAILURE() << all;
    return nullptr;
  }
  return *c;
}

// The interface's unicast list entries, as `bridge fdb show dev IF` prints
// them ("00:00:5e:00:01:0a self permanent"), VRRP MACs only.
std::vector<std::string> vrrpEntries(const std::string& ifname) {
  auto r = test::run("bridge fdb show dev " + ifname + " | grep '^00:00:5e:00:0[12]:' | sort");
  EXPECT_EQ(r.code, 0) << r.err;
  std::vector<std::string> out;
  size_t at = 0;
  while (at < r.out.size()) {
    size_t end = r.out.find('\n', at);
    std::string line = r.out.substr(at, end - at);
    while (!line.empty() && line.back() == ' ') {
      line.pop_back();
    }
    out.push_back(line);
    at = end == std::string::npos ? r.out.size() : end + 1;
  }
  return out;
}

class PortVirtualMacNetnsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(netns_.ok()) << "unshare(CLONE_NEWNET): " << std::strerror(errno);
    for (const char* cmd :
         {"ip link add vm0 type veth peer name vm1", "ip link add vm2 type veth peer name vm3",
          "ip link set vm0 up", "ip link set vm1 up", "ip link set vm2 up", "ip link set vm3 up"}) {
      auto r = test::run(cmd);
      ASSERT_EQ(r.code, 0) << cmd << ": " << r.err;
    }
    pool_ = rte_pktmbuf_pool_create("vmac_netns_pool", 2047, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE,
                                    static_cast<int>(rte_socket_id()));
    ASSERT_NE(pool_, nullptr) << rte_strerror(rte_errno);
    auto dp = engine::Dataplane::start({}, pool_);
    ASSERT_TRUE(dp.ok()) << dp.error();
    dp_ = std::move(*dp);
  }
  void TearDown() override {
    ports_.reset();
    dp_.reset();
    rte_mempool_free(pool_);
  }

  void open(const config::ConfigPtr& c) {
    ASSERT_TRUE(c);
    auto p = PortSet::open(c, pool_, 1, dp_.get());
    ASSERT_TRUE(p.ok()) << p.error();
    ports_ = std::move(*p);
    ports_->setHooks(
        {.withdraw = [](const std::set<std::string>&) -> Result<bool, std::string> { return true; },
         .closing = [](const std::string&) {}});
  }
  uint16_t id(const std::string& port) {
    engine::Port* p = ports_->find(port);
    EXPECT_NE(p, nullptr) << port;
    return p ? p->id() : 0;
  }
  void reload(const config::ConfigPtr& from, const config::ConfigPtr& to) {
    daemon::ReloadPlan plan = daemon::planReload(*from, *to);
    plan.next = to;
    auto r = ports_->prepare(plan);
    ASSERT_TRUE(r.ok()) << r.error();
    ports_->apply();
  }

  test::PrivateNetns netns_;
  rte_mempool* pool_ = nullptr;
  std::unique_ptr<engine::Dataplane> dp_;
  std::unique_ptr<PortSet> ports_;
};

TEST_F(PortVirtualMacNetnsTest, KernelInterfaceGetsAndLosesTheMacs) {
  ASSERT_NO_FATAL_FAILURE(open(load(configYaml(1024))));
  EXPECT_TRUE(vrrpEntries("vm0").empty());

  auto r = ports_->setVirtualMacs("lan0", std::vector<Mac>{kVrid10});
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(vrrpEntries("vm0"), std::vector<std::string>{"00:00:5e:00:01:0a self permanent"});
  EXPECT_EQ(dp_->virtualMacs(id("lan0")), std::vector<Mac>{kVrid10});

  // The whole set is replaced: 11 comes, 10 goes.
  r = ports_->setVirtualMacs("lan0", std::vector<Mac>{kVrid11});
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(vrrpEntries("vm0"), std::vector<std::string>{"00:00:5e:00:01:0b self permanent"});
  EXPECT_EQ(dp_->virtualMacs(id("lan0")), std::vector<Mac>{kVrid11});

  // A MAC someone removed comes back with the next call.
  ASSERT_EQ(test::run("bridge fdb del 00:00:5e:00:01:0b dev vm0 self").code, 0);
  r = ports_->setVirtualMacs("lan0", std::vector<Mac>{kVrid11});
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(vrrpEntries("vm0"), std::vector<std::string>{"00:00:5e:00:01:0b self permanent"});

  r = ports_->setVirtualMacs("lan0", {});
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_TRUE(vrrpEntries("vm0").empty());
  EXPECT_TRUE(dp_->virtualMacs(id("lan0")).empty());
}

TEST_F(PortVirtualMacNetnsTest, RefusedSetsChangeNothing) {
  ASSERT_NO_FATAL_FAILURE(open(load(configYaml(1024))));
  ASSERT_TRUE(ports_->setVirtualMacs("lan0", std::vector<Mac>{kVrid10}).ok());

  std::vector<Mac> nine;
  for (uint8_t vrid = 1; vrid <= 9; ++vrid) {
    nine.push_back({0x00, 0x00, 0x5e, 0x00, 0x01, vrid});
  }
  auto r = ports_->setVirtualMacs("lan0", nine);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), "port lan0: 9 virtual MACs, at most 8");
  r = ports_->setVirtualMacs("lan0", std::vector<Mac>{{0x01, 0x00, 0x5e, 0x00, 0x00, 0x12}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(),
            "port lan0: 01:00:5e:00:00:12 cannot be a virtual MAC (group or zero address)");
  r = ports_->setVirtualMacs("lan9", std::vector<Mac>{kVrid10});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), "no port lan9");

  EXPECT_EQ(vrrpEntries("vm0"), std::vector<std::string>{"00:00:5e:00:01:0a self permanent"});
  EXPECT_EQ(dp_->virtualMacs(id("lan0")), std::vector<Mac>{kVrid10});
  EXPECT_EQ(ports_->virtualMacs("lan0"), std::vector<Mac>{kVrid10});
}

TEST_F(PortVirtualMacNetnsTest, ClosingThePortsLeavesNothingBehind) {
  ASSERT_NO_FATAL_FAILURE(open(load(configYaml(1024, true))));
  ASSERT_TRUE(ports_->setVirtualMacs("lan0", std::vector<Mac>{kVrid10, kVrid11}).ok());
  ASSERT_TRUE(ports_->setVirtualMacs("lan1", std::vector<Mac>{kVrid11}).ok());
  EXPECT_EQ(vrrpEntries("vm0"), (std::vector<std::string>{"00:00:5e:00:01:0a self permanent",
                                                          "00:00:5e:00:01:0b self permanent"}));
  EXPECT_EQ(vrrpEntries("vm2"), std::vector<std::string>{"00:00:5e:00:01:0b self permanent"});
  ports_->clear();  // shutdown
  EXPECT_TRUE(vrrpEntries("vm0").empty());
  EXPECT_TRUE(vrrpEntries("vm2").empty());
}

TEST_F(PortVirtualMacNetnsTest, AReloadKeepsTheSetOfAReopenedPortAndDropsARemovedPort) {
  config::ConfigPtr v1 = load(configYaml(1024, true));
  config::ConfigPtr v2 = load(configYaml(512));  // lan0 reopened, lan1 removed
  ASSERT_NO_FATAL_FAILURE(open(v1));
  ASSERT_TRUE(ports_->setVirtualMacs("lan0", std::vector<Mac>{kVrid10}).ok());
  ASSERT_TRUE(ports_->setVirtualMacs("lan1", std::vector<Mac>{kVrid11}).ok());
  const uint16_t lan1 = id("lan1");

  ASSERT_NO_FATAL_FAILURE(reload(v1, v2));
  ASSERT_EQ(ports_->find("lan1"), nullptr);
  EXPECT_TRUE(vrrpEntries("vm2").empty());
  EXPECT_TRUE(dp_->virtualMacs(lan1).empty() || id("lan0") == lan1);
  EXPECT_TRUE(ports_->virtualMacs("lan1").empty());
  // lan0 is a new device (its old one closed first) with the kept set.
  EXPECT_EQ(ports_->find("lan0")->config().rx_descriptors, 512);
  EXPECT_EQ(vrrpEntries("vm0"), std::vector<std::string>{"00:00:5e:00:01:0a self permanent"});
  EXPECT_EQ(dp_->virtualMacs(id("lan0")), std::vector<Mac>{kVrid10});

  // The VRRP subsystem sets it again after the reload: same answer.
  ASSERT_TRUE(ports_->setVirtualMacs("lan0", std::vector<Mac>{kVrid10}).ok());
  EXPECT_EQ(vrrpEntries("vm0"), std::vector<std::string>{"00:00:5e:00:01:0a self permanent"});
}

}  // namespace
}  // namespace mcgw::ports
