// Loading valid configs: every shipped example loads, values arrive typed,
// and what the file leaves out comes from the YANG model's defaults.
#include "config/loader.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace mcgw::config {
namespace {

namespace fs = std::filesystem;

const fs::path kSourceDir = MCGW_SOURCE_DIR;

std::string describe(const ConfigErrors& errors) {
  std::string out;
  for (const auto& e : errors) {
    out += "  " + e.toString() + "\n";
  }
  return out;
}

std::string readFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

ConfigPtr loadExample(const std::string& name) {
  fs::path path = kSourceDir / "config" / "examples" / name;
  LoadResult result = loadConfigFile(path.string());
  if (!result.ok()) {
    ADD_FAILURE() << path << " does not load:\n" << describe(result.error());
    return nullptr;
  }
  return *result;
}

IpAddress ip(const char* text) {
  auto a = IpAddress::parse(text);
  EXPECT_TRUE(a.has_value()) << text;
  return a.value_or(IpAddress{});
}

IpPrefix prefix(const char* text) {
  auto p = IpPrefix::parse(text);
  EXPECT_TRUE(p.has_value()) << text;
  return p.value_or(IpPrefix{});
}

TEST(LoaderTest, EveryShippedConfigLoads) {
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(kSourceDir / "config" / "examples")) {
    if (entry.is_regular_file() && entry.path().extension() == ".yaml") {
      files.push_back(entry.path());
    }
  }
  if (fs::path shipped = kSourceDir / "systemd" / "mcgw.yaml"; fs::exists(shipped)) {
    files.push_back(shipped);
  }
  std::sort(files.begin(), files.end());
  ASSERT_GE(files.size(), 7u);
  for (const auto& file : files) {
    SCOPED_TRACE(file.string());
    LoadResult result = loadConfigFile(file.string());
    ASSERT_TRUE(result.ok()) << describe(result.error());
    const Config& c = **result;
    EXPECT_EQ(c.source, file.string());
    EXPECT_FALSE(c.node.name.empty());
    EXPECT_FALSE(c.ports.empty());
  }
}

TEST(LoaderTest, OverlayExampleHasTypedValues) {
  ConfigPtr c = loadExample("overlay-vxlan-geneve.yaml");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->node.name, "gw-a1");
  EXPECT_EQ(c->node.site, "idc-a");

  ASSERT_EQ(c->ports.size(), 3u);
  EXPECT_EQ(c->ports[0].role, PortRole::kLan);
  EXPECT_EQ(c->ports[1].role, PortRole::kWan);
  EXPECT_EQ(c->ports[1].vdev, "net_af_xdp1,iface=ens5");
  EXPECT_EQ(c->ports[1].deviceName(), "net_af_xdp1");
  ASSERT_EQ(c->ports[1].addresses.size(), 2u);
  EXPECT_EQ(c->ports[1].addresses[0], prefix("203.0.113.1/29"));  // host bits kept
  EXPECT_EQ(c->ports[1].addresses[1].address.family, Family::V6);
  EXPECT_EQ(c->ports[0].tenant, "inference");
  ASSERT_EQ(c->ports[0].neighbors.size(), 1u);
  EXPECT_EQ(c->ports[0].neighbors[0].address, ip("10.1.0.254"));
  EXPECT_EQ(c->ports[0].neighbors[0].mac.toString(), "52:54:00:a1:00:fe");
  EXPECT_TRUE(c->ports[1].tenant.empty());  // wan ports carry every tenant
  ASSERT_EQ(c->ports[1].neighbors.size(), 1u);
  EXPECT_EQ(c->ports[1].neighbors[0].address, ip("203.0.113.6"));

  ASSERT_EQ(c->tenants.size(), 2u);
  const TenantConfig* training = c->findTenant("training");
  const TenantConfig* inference = c->findTenant("inference");
  ASSERT_TRUE(training && inference);
  EXPECT_EQ(training->vni, 1001u);
  EXPECT_EQ(inference->vni, 1002u);
  EXPECT_EQ(c->findTenant("nobody"), nullptr);
  ASSERT_EQ(training->routes.size(), 2u);
  EXPECT_EQ(training->routes[0].prefix, prefix("10.2.0.0/16"));
  EXPECT_EQ(training->routes[0].peer, "aws-use1");
  EXPECT_FALSE(training->routes[0].next_hop.has_value());
  ASSERT_EQ(inference->routes.size(), 2u);
  const StaticRoute& via_lan = inference->routes[1];
  EXPECT_EQ(via_lan.prefix, prefix("10.99.0.0/16"));
  EXPECT_TRUE(via_lan.peer.empty());
  ASSERT_TRUE(via_lan.next_hop.has_value());
  EXPECT_EQ(*via_lan.next_hop, ip("10.1.0.254"));

  const PeerConfig* aws = c->findPeer("aws-use1");
  ASSERT_TRUE(aws);
  EXPECT_EQ(aws->asn, 65002u);
  EXPECT_EQ(aws->encapsulation, Encapsulation::kVxlan);
  EXPECT_EQ(aws->line_mode, LineMode::kActiveBackup);
  EXPECT_EQ(aws->mss_clamp.mode, MssClamp::Mode::kFixed);
  EXPECT_EQ(aws->mss_clamp.value, 1360);
  EXPECT_EQ(toString(aws->mss_clamp), "1360");
  EXPECT_EQ(aws->tenants, std::vector<std::string>{"training"});
  ASSERT_EQ(aws->lines.size(), 2u);
  EXPECT_EQ(aws->lines[0].name, "dx-1");  // ordered-by user: file order
  EXPECT_EQ(aws->lines[1].name, "vpn-1");
  EXPECT_EQ(aws->lines[1].port, "wan1");
  EXPECT_EQ(aws->lines[1].mtu, 1446);
  EXPECT_EQ(aws->lines[1].local_vtep, ip("198.51.100.1"));
  EXPECT_EQ(aws->lines[1].remote_vtep, ip("198.51.100.100"));
  EXPECT_EQ(aws->lines[1].outer_ttl, 64);  // default
  ASSERT_TRUE(aws->lines[0].next_hop.has_value());
  EXPECT_EQ(*aws->lines[0].next_hop, ip("203.0.113.6"));
  ASSERT_TRUE(aws->lines[1].next_hop.has_value());
  EXPECT_EQ(*aws->lines[1].next_hop, ip("198.51.100.6"));
  EXPECT_EQ(aws->inner_mac.toString(), "02:00:00:00:00:01");  // default

  const PeerConfig* ali = c->findPeer("aliyun-sh");
  ASSERT_TRUE(ali);
  EXPECT_EQ(ali->encapsulation, Encapsulation::kGeneve);
  EXPECT_STREQ(toString(ali->encapsulation), "geneve");
  EXPECT_EQ(ali->line_mode, LineMode::kEcmp);
  EXPECT_STREQ(toString(ali->line_mode), "ecmp");
  EXPECT_EQ(ali->mss_clamp.mode, MssClamp::Mode::kAuto);  // default
  EXPECT_TRUE(ali->tenants.empty());                      // all tenants
  ASSERT_EQ(ali->lines.size(), 2u);
  EXPECT_EQ(ali->lines[0].local_vtep.family, Family::V6);
  EXPECT_EQ(ali->lines[0].remote_vtep.family, Family::V6);
  EXPECT_EQ(ali->lines[0].remote_vtep, ip("2001:db8:0:1::100"));
  EXPECT_EQ(ali->lines[0].outer_ttl, 32);
  EXPECT_FALSE(ali->lines[0].next_hop.has_value());  // on-link
  EXPECT_EQ(c->fast_path.idle_sleep_max_us, 200u);   // default
}

// Every key the model gained for forwarding, written out.
TEST(LoaderTest, PortTenantNeighborsNextHopInnerMacAndFastPath) {
  LoadResult r = loadConfigText(R"yaml(node: {name: gw, site: s}
ports:
  - name: lan0
    role: lan
    vdev: net_null0
    addresses: [10.1.0.1/24, fd00:1::1/64]
    tenant: red
    neighbors:
      - address: 10.1.0.254
        mac: 52:54:00:AB:CD:EF
      - address: fd00:1:0:0::fe
        mac: 02:00:00:00:00:fe
  - name: lan1
    role: lan
    vdev: net_null1
    addresses: [10.2.0.1/24]
    tenant: blue
  - name: wan0
    role: wan
    vdev: net_null2
    addresses: [203.0.113.1/29]
    neighbors:
      - address: 203.0.113.6
        mac: 52:54:00:00:00:06
tenants:
  - name: blue
    vni: 1001
    routes:
      - prefix: 10.20.0.0/16
        next-hop: 10.2.0.254
  - name: red
    vni: 1002
    routes:
      - prefix: 10.30.0.0/16
        next-hop: 10.1.0.254
peers:
  - name: linux
    inner-mac: 5E:00:53:12:34:56
    lines:
      - name: l1
        port: wan0
        local-vtep: 203.0.113.1
        remote-vtep: 192.0.2.10
        next-hop: 203.0.113.6
  - name: mcgw
    lines:
      - name: l1
        port: wan0
        local-vtep: 203.0.113.1
        remote-vtep: 203.0.113.2
fast-path:
  idle-sleep-max-us: 0
path-mtu:
  probe: false
  probe-interval: 2
  probe-timeout-ms: 500
  aging: 30
  probe-port: 5000
  quality-interval-ms: 250
)yaml",
                                "new.yaml");
  ASSERT_TRUE(r.ok()) << describe(r.error());
  const Config& c = **r;
  const PortConfig* lan0 = c.findPort("lan0");
  const PortConfig* lan1 = c.findPort("lan1");
  const PortConfig* wan0 = c.findPort("wan0");
  ASSERT_TRUE(lan0 && lan1 && wan0);
  EXPECT_EQ(lan0->tenant, "red");
  EXPECT_EQ(lan1->tenant, "blue");
  EXPECT_TRUE(wan0->tenant.empty());
  ASSERT_EQ(lan0->neighbors.size(), 2u);
  EXPECT_EQ(lan0->neighbors[0].address, ip("10.1.0.254"));
  EXPECT_EQ(lan0->neighbors[0].mac.toString(), "52:54:00:ab:cd:ef");
  EXPECT_EQ(lan0->neighbors[1].address, ip("fd00:1::fe"));
  EXPECT_EQ(lan0->neighbors[1].mac, MacAddress::parse("02:00:00:00:00:fe"));
  EXPECT_TRUE(lan1->neighbors.empty());
  ASSERT_EQ(wan0->neighbors.size(), 1u);
  EXPECT_EQ(wan0->neighbors[0].mac.toString(), "52:54:00:00:00:06");

  const PeerConfig* linux_peer = c.findPeer("linux");
  const PeerConfig* mcgw_peer = c.findPeer("mcgw");
  ASSERT_TRUE(linux_peer && mcgw_peer);
  EXPECT_EQ(linux_peer->inner_mac.toString(), "5e:00:53:12:34:56");
  ASSERT_EQ(linux_peer->lines.size(), 1u);
  ASSERT_TRUE(linux_peer->lines[0].next_hop.has_value());
  EXPECT_EQ(*linux_peer->lines[0].next_hop, ip("203.0.113.6"));
  EXPECT_EQ(mcgw_peer->inner_mac.toString(), "02:00:00:00:00:01");  // the model's default
  ASSERT_EQ(mcgw_peer->lines.size(), 1u);
  EXPECT_FALSE(mcgw_peer->lines[0].next_hop.has_value());

  EXPECT_EQ(c.fast_path.idle_sleep_max_us, 0u);
  EXPECT_EQ(c.path_mtu, (PathMtuConfig{false, 2, 500, 30, 5000, 250}));
}

TEST(LoaderTest, LanPortCarriesTheOnlyTenant) {
  LoadResult r = loadConfigText(
      "node: {name: gw, site: s}\n"
      "ports:\n"
      "  - {name: lan0, role: lan, vdev: net_null0, addresses: [10.1.0.1/24]}\n"
      "  - {name: lan1, role: lan, vdev: net_null1, tenant: blue}\n"
      "  - {name: wan0, role: wan, vdev: net_null2}\n"
      "tenants:\n"
      "  - name: blue\n    vni: 7\n    routes: [{prefix: 10.9.0.0/16, next-hop: 10.1.0.9}]\n",
      "one.yaml");
  ASSERT_TRUE(r.ok()) << describe(r.error());
  EXPECT_EQ((*r)->findPort("lan0")->tenant, "blue");  // filled in
  EXPECT_EQ((*r)->findPort("lan1")->tenant, "blue");  // given
  EXPECT_TRUE((*r)->findPort("wan0")->tenant.empty());
}

TEST(LoaderTest, LanPortWithoutTenantsForwardsNothingButLoads) {
  LoadResult r = loadConfigText(
      "node: {name: gw, site: s}\n"
      "ports: [{name: lan0, role: lan, vdev: net_null0}, {name: wan0, role: wan, vdev: "
      "net_null1}]\n",
      "none.yaml");
  ASSERT_TRUE(r.ok()) << describe(r.error());
  EXPECT_TRUE((*r)->tenants.empty());
  EXPECT_TRUE((*r)->findPort("lan0")->tenant.empty());
}

// A config written for the old probe-interval default (60 s) with a probe
// timeout above one second still loads: rounds never overlap, so the timeout
// may be longer than the interval.
TEST(LoaderTest, ProbeTimeoutLongerThanTheIntervalLoads) {
  LoadResult r = loadConfigText(
      "node: {name: gw, site: s}\n"
      "ports: [{name: wan0, role: wan, vdev: net_null0}]\n"
      "path-mtu: {probe-timeout-ms: 3000}\n",
      "slow.yaml");
  ASSERT_TRUE(r.ok()) << describe(r.error());
  EXPECT_EQ((*r)->path_mtu.probe_interval_s, 1u);
  EXPECT_EQ((*r)->path_mtu.probe_timeout_ms, 3000u);
}

TEST(LoaderTest, SeveralLanPortMistakesAreReportedTogether) {
  // Two tenants, two lan ports without one: an error at each port entry.
  LoadResult r = loadConfigText(
      "node: {name: gw, site: s}\n"
      "ports:\n"
      "  - {name: lan0, role: lan, vdev: net_null0}\n"
      "  - {name: lan1, role: lan, vdev: net_null1}\n"
      "tenants: [{name: blue, vni: 1}, {name: red, vni: 2}]\n",
      "two.yaml");
  ASSERT_FALSE(r.ok());
  ASSERT_EQ(r.error().size(), 2u) << describe(r.error());
  EXPECT_EQ(r.error()[0].line, 3);
  EXPECT_EQ(r.error()[1].line, 4);
  EXPECT_NE(r.error()[1].message.find("lan port 'lan1' needs a 'tenant'"), std::string::npos)
      << r.error()[1].toString();
  EXPECT_NE(r.error()[1].message.find("(blue, red)"), std::string::npos) << r.error()[1].toString();
}

TEST(LoaderTest, MinimalExampleGetsDefaultsFromTheModel) {
  ConfigPtr c = loadExample("minimal-null.yaml");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->node.name, "gw-null");
  EXPECT_TRUE(c->node.description.empty());

  EXPECT_EQ(c->eal.main_lcore, 0);
  EXPECT_TRUE(c->eal.workers.empty());
  EXPECT_FALSE(c->eal.hugepages);
  EXPECT_EQ(c->eal.memory_mb, 128u);
  EXPECT_EQ(c->eal.mbufs, 2047u);
  EXPECT_EQ(c->eal.file_prefix, "mcgw");

  ASSERT_EQ(c->ports.size(), 2u);
  for (const auto& p : c->ports) {
    SCOPED_TRACE(p.name);
    EXPECT_EQ(p.mtu, 1500);
    EXPECT_EQ(p.rx_queues, 1);
    EXPECT_EQ(p.rx_descriptors, 1024);
    EXPECT_EQ(p.tx_descriptors, 1024);
    EXPECT_TRUE(p.pci.empty());
    EXPECT_TRUE(p.addresses.empty());
    EXPECT_TRUE(p.tenant.empty());  // no tenants at all
    EXPECT_TRUE(p.neighbors.empty());
  }
  EXPECT_EQ(c->ports[0].vdev, "net_null0");
  EXPECT_EQ(c->ports[1].role, PortRole::kWan);

  EXPECT_TRUE(c->tenants.empty());
  EXPECT_TRUE(c->peers.empty());
  EXPECT_FALSE(c->bgp.enabled);
  EXPECT_TRUE(c->vrrp_groups.empty());
  EXPECT_EQ(c->address_plan.store, AddressPlanConfig::Store::kFile);
  EXPECT_EQ(c->address_plan.store_path, "/var/lib/mcgw/plan.yaml");
  EXPECT_TRUE(c->address_plan.etcd_endpoints.empty());
  EXPECT_TRUE(c->address_plan.etcd_ca_file.empty());
  EXPECT_TRUE(c->address_plan.etcd_cert_file.empty());
  EXPECT_TRUE(c->address_plan.etcd_key_file.empty());
  EXPECT_EQ(c->address_plan.etcd_prefix, "/mcgw/plan/");
  EXPECT_TRUE(c->address_plan.reserved.empty());
  EXPECT_TRUE(c->warnings.empty());
  EXPECT_EQ(c->api.socket, "/run/mcgw/mcgw.sock");
  EXPECT_TRUE(c->api.group.empty());
  EXPECT_EQ(c->logging.level, "info");
  EXPECT_EQ(c->fast_path.idle_sleep_max_us, 200u);
  EXPECT_TRUE(c->path_mtu.probe);  // path-mtu defaults
  EXPECT_EQ(c->path_mtu.probe_interval_s, 1u);
  EXPECT_EQ(c->path_mtu.probe_timeout_ms, 1000u);
  EXPECT_EQ(c->path_mtu.aging_s, 600u);
  EXPECT_EQ(c->path_mtu.probe_port, 4788);
  EXPECT_EQ(c->path_mtu.quality_interval_ms, 100u);
}

// Line shaping: a line's capacity (as written) and queue-ms (default 50),
// a tenant's bandwidth priority (default 0).
TEST(LoaderTest, LineCapacityQueueAndTenantPriority) {
  const std::string text =
      "node: {name: gw, site: s}\n"
      "ports:\n"
      "  - {name: lan0, role: lan, vdev: net_null0, addresses: [10.1.0.1/24], tenant: train}\n"
      "  - {name: lan1, role: lan, vdev: net_null2, addresses: [10.9.0.1/24], tenant: bulk}\n"
      "  - {name: wan0, role: wan, vdev: net_null1, addresses: [192.0.2.1/24]}\n"
      "tenants:\n"
      "  - {name: train, vni: 100, bandwidth: {priority: 7}}\n"
      "  - {name: bulk, vni: 200, bandwidth: {yellow-dscp: 8}}\n"
      "peers:\n"
      "  - name: site-b\n"
      "    lines:\n"
      "      - {name: l1, port: wan0, local-vtep: 192.0.2.1, remote-vtep: 192.0.2.2,\n"
      "         capacity: 2.5G, queue-ms: 200}\n"
      "      - {name: l2, port: wan0, local-vtep: 192.0.2.1, remote-vtep: 192.0.2.3,\n"
      "         capacity: 100M}\n"
      "      - {name: l3, port: wan0, local-vtep: 192.0.2.1, remote-vtep: 192.0.2.4}\n";
  // The queues may hold 2 priorities x (16,384 (2.5G for 200 ms, the
  // ceiling) + 512 (100M for 50 ms)) = 33,792 packets: more than the
  // default pool leaves.
  LoadResult few = loadConfigText(text, "shape.yaml");
  ASSERT_FALSE(few.ok());
  ASSERT_EQ(few.error().size(), 1u) << describe(few.error());
  EXPECT_EQ(few.error()[0].path, "/mcgw:eal/mbufs");
  EXPECT_NE(
      few.error()[0].message.find("too few for the shaped lines: their queues may hold 33792"),
      std::string::npos)
      << few.error()[0].message;
  EXPECT_NE(few.error()[0].message.find("use at least 65535"), std::string::npos);
  LoadResult r = loadConfigText("eal: {mbufs: 65535}\n" + text, "shape.yaml");
  ASSERT_TRUE(r.ok()) << describe(r.error());
  const auto& lines = (*r)->peers.at(0).lines;
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0].capacity, "2.5G");
  EXPECT_EQ(lines[0].queue_ms, 200u);
  EXPECT_EQ(lines[1].capacity, "100M");
  EXPECT_EQ(lines[1].queue_ms, 50u);  // the model's default
  EXPECT_TRUE(lines[2].capacity.empty());
  EXPECT_EQ(lines[2].queue_ms, 50u);
  const auto& tenants = (*r)->tenants;
  ASSERT_EQ(tenants.size(), 2u);
  EXPECT_EQ(tenants[0].bandwidth.priority, 7);
  EXPECT_EQ(tenants[1].bandwidth.priority, 0);  // default
  EXPECT_EQ(tenants[1].bandwidth.yellow_dscp, 8);
}

// The plan example: the etcd store over TLS, the operator's reserved
// ranges, pools for some clouds, and a legacy overlap with its mapped range.
TEST(LoaderTest, AddressPlanExampleHasTypedValues) {
  ConfigPtr c = loadExample("address-plan.yaml");
  ASSERT_TRUE(c);
  const AddressPlanConfig& plan = c->address_plan;
  EXPECT_EQ(plan.store, AddressPlanConfig::Store::kEtcd);
  EXPECT_EQ(plan.etcd_endpoints,
            (std::vector<std::string>{"https://10.250.0.11:2379", "https://10.250.0.12:2379"}));
  EXPECT_EQ(plan.etcd_ca_file, "/etc/mcgw/etcd-ca.pem");
  EXPECT_EQ(plan.etcd_cert_file, "/etc/mcgw/etcd-client.pem");
  EXPECT_EQ(plan.etcd_key_file, "/etc/mcgw/etcd-client.key");
  EXPECT_EQ(plan.etcd_prefix, "/mcgw/plan/");
  ASSERT_EQ(plan.reserved.size(), 1u);
  EXPECT_EQ(plan.reserved[0].name, "management");
  EXPECT_EQ(plan.reserved[0].prefix, prefix("10.250.0.0/16"));
  ASSERT_EQ(plan.pools.size(), 2u);
  EXPECT_TRUE(plan.pools[0].clouds.empty());  // any cloud
  EXPECT_EQ(plan.pools[1].clouds, (std::vector<std::string>{"aws", "aliyun", "huaweicloud"}));
  ASSERT_EQ(plan.vpcs.size(), 4u);
  EXPECT_EQ(plan.vpcs[3].cloud, "huaweicloud");
  EXPECT_EQ(plan.vpcs[3].prefixes, (std::vector<IpPrefix>{prefix("10.1.0.0/16")}));
  EXPECT_EQ(plan.vpcs[0].prefixes, plan.vpcs[3].prefixes);  // the legacy overlap
  ASSERT_EQ(plan.mapped_ranges.size(), 1u);
  EXPECT_EQ(plan.mapped_ranges[0].mapped, prefix("10.96.0.0/16"));
  EXPECT_TRUE(c->warnings.empty()) << describe(c->warnings);
}

TEST(LoaderTest, StoreFileKeysAndPlainEndpoints) {
  const std::string base =
      "node: {name: gw, site: s}\nports: [{name: p, role: lan, vdev: net_null0}]\n";
  LoadResult r = loadConfigText(base +
                                    "address-plan:\n"
                                    "  store:\n"
                                    "    path: /srv/mcgw/plan.yaml\n"
                                    "    endpoints: [\"http://etcd-1.example:2379\", "
                                    "\"http://[2001:db8::11]:2379/\"]\n"
                                    "    prefix: /\n",
                                "store.yaml");
  ASSERT_TRUE(r.ok()) << describe(r.error());
  const AddressPlanConfig& plan = (*r)->address_plan;
  EXPECT_EQ(plan.store, AddressPlanConfig::Store::kFile);
  EXPECT_EQ(plan.store_path, "/srv/mcgw/plan.yaml");
  EXPECT_EQ(plan.etcd_endpoints, (std::vector<std::string>{"http://etcd-1.example:2379",
                                                           "http://[2001:db8::11]:2379/"}));
  EXPECT_EQ(plan.etcd_prefix, "/");
}

// Warnings come with a config that loads, in the form errors have.
TEST(LoaderTest, WarningsComeWithTheConfigSortedByLine) {
  LoadResult r = loadConfigText(
      "node: {name: gw, site: s}\n"                                  // 1
      "ports: [{name: p, role: lan, vdev: net_null0}]\n"             // 2
      "address-plan:\n"                                              // 3
      "  mapped-ranges:\n"                                           // 4
      "    - {name: m, real: 10.1.0.0/16, mapped: 10.201.0.0/16}\n"  // 5
      "  pools: [{name: p1, prefixes: [10.64.0.0/10]}]\n"            // 6
      "  clouds:\n"                                                  // 7
      "    - {name: aws, regions: [{name: r1, vpcs: [{name: a, prefixes: [10.2.0.0/16]}]}]}\n",
      "warn.yaml");
  ASSERT_TRUE(r.ok()) << describe(r.error());
  const ConfigErrors& w = (*r)->warnings;
  ASSERT_EQ(w.size(), 2u) << describe(w);
  EXPECT_EQ(w[0].toString(),
            "warn.yaml:5:44: /mcgw:address-plan/mapped-ranges/mapped-range[name='m']/mapped: "
            "10.201.0.0/16 of mapped range m is outside every pool (p1)");
  EXPECT_EQ(w[1].line, 8);
  EXPECT_EQ(w[1].message, "10.2.0.0/16 of VPC aws/r1/a is outside every pool (p1)");
}

TEST(LoaderTest, PciExampleNeverSleeps) {
  ConfigPtr c = loadExample("ports-pci-hugepages.yaml");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->fast_path.idle_sleep_max_us, 0u);
}

TEST(LoaderTest, BgpExampleGetsTimersAndNeighbors) {
  ConfigPtr c = loadExample("bgp-bfd.yaml");
  ASSERT_TRUE(c);
  EXPECT_TRUE(c->bgp.enabled);
  EXPECT_EQ(c->bgp.asn, 65001u);
  EXPECT_EQ(c->bgp.router_id, ip("10.255.0.1"));
  EXPECT_EQ(c->bgp.keepalive_s, 3);
  EXPECT_EQ(c->bgp.hold_s, 9);
  EXPECT_EQ(c->bgp.bfd_interval_ms, 100);
  ASSERT_EQ(c->bgp.neighbors.size(), 1u);
  EXPECT_EQ(c->bgp.neighbors[0].address, ip("10.1.0.254"));
  EXPECT_EQ(c->bgp.neighbors[0].port, "lan0");
  EXPECT_EQ(c->bgp.fpm_port, 2620);
  // What the example leaves out comes from the model.
  EXPECT_EQ(c->bgp.maximum_prefix, 10000u);
  EXPECT_TRUE(c->bgp.graceful_restart);
  EXPECT_EQ(c->bgp.fpm_stale_time_s, 120u);
  EXPECT_EQ(c->bgp.frr_config_dir, "/etc/frr");
  EXPECT_EQ(c->bgp.frr_run_dir, "/var/run/frr");
  EXPECT_EQ(c->bgp.neighbors[0].site, "idc-a");  // node.site
  EXPECT_FALSE(c->bgp.neighbors[0].bfd_interval_ms.has_value());
  EXPECT_FALSE(c->bgp.neighbors[0].bfd_multiplier.has_value());
  EXPECT_FALSE(c->bgp.neighbors[0].maximum_prefix.has_value());
  ASSERT_EQ(c->peers.size(), 1u);
  EXPECT_FALSE(c->peers[0].lines[0].bfd_interval_ms.has_value());
  EXPECT_FALSE(c->peers[0].lines[0].bfd_multiplier.has_value());
}

TEST(LoaderTest, BgpDefaultsAndOverrides) {
  LoadResult r = loadConfigText(R"yaml(node: {name: gw, site: idc-a}
ports:
  - {name: lan0, role: lan, vdev: net_null0, addresses: [10.1.0.1/24, "fd00:1::1/64"]}
  - {name: wan0, role: wan, vdev: net_null1, addresses: [203.0.113.1/29]}
tenants:
  - {name: blue, vni: 1001}
peers:
  - name: site-b
    asn: 65002
    lines:
      - {name: l1, port: wan0, local-vtep: 203.0.113.1, remote-vtep: 203.0.113.2,
         bfd-interval-ms: 50, bfd-multiplier: 5}
      - {name: l2, port: wan0, local-vtep: 203.0.113.1, remote-vtep: 203.0.113.3}
bgp:
  asn: 65001
  router-id: 10.255.0.1
  maximum-prefix: 500
  graceful-restart: false
  neighbors:
    - {address: 10.1.0.254, asn: 64512, port: lan0, site: aws-use1, bfd-interval-ms: 300,
       bfd-multiplier: 4, maximum-prefix: 20}
    - {address: "fd00:1::fe", asn: 64513, port: lan0}
  fpm: {stale-time: 30}
  frr: {config-dir: /run/mcgw/frr, run-dir: /run/mcgw/frr-run}
)yaml",
                                "bgp.yaml");
  ASSERT_TRUE(r.ok()) << describe(r.error());
  const Config& c = **r;
  EXPECT_EQ(c.bgp.bfd_interval_ms, 100);  // the model's default
  EXPECT_EQ(c.bgp.bfd_multiplier, 3);
  EXPECT_EQ(c.bgp.maximum_prefix, 500u);
  EXPECT_FALSE(c.bgp.graceful_restart);
  EXPECT_EQ(c.bgp.fpm_stale_time_s, 30u);
  EXPECT_EQ(c.bgp.frr_config_dir, "/run/mcgw/frr");
  EXPECT_EQ(c.bgp.frr_run_dir, "/run/mcgw/frr-run");
  const auto& lines = c.peers[0].lines;
  EXPECT_EQ(lines[0].bfd_interval_ms, std::optional<uint16_t>(50));
  EXPECT_EQ(lines[0].bfd_multiplier, std::optional<uint8_t>(5));
  EXPECT_FALSE(lines[1].bfd_interval_ms.has_value());
  ASSERT_EQ(c.bgp.neighbors.size(), 2u);
  const BgpNeighbor& n = c.bgp.neighbors[0];
  EXPECT_EQ(n.site, "aws-use1");
  EXPECT_EQ(n.bfd_interval_ms, std::optional<uint16_t>(300));
  EXPECT_EQ(n.bfd_multiplier, std::optional<uint8_t>(4));
  EXPECT_EQ(n.maximum_prefix, std::optional<uint32_t>(20));
  EXPECT_EQ(c.bgp.neighbors[1].address, ip("fd00:1::fe"));
  EXPECT_EQ(c.bgp.neighbors[1].site, "idc-a");
  EXPECT_FALSE(c.bgp.neighbors[1].maximum_prefix.has_value());
}

TEST(LoaderTest, ChecksumIsSha256OfTheText) {
  std::string text = readFile(kSourceDir / "config" / "examples" / "minimal-null.yaml");
  ASSERT_FALSE(text.empty());
  LoadResult a = loadConfigText(text, "a.yaml");
  ASSERT_TRUE(a.ok()) << describe(a.error());
  const std::string& sum = (*a)->checksum;
  ASSERT_EQ(sum.size(), 64u);
  EXPECT_TRUE(std::all_of(sum.begin(), sum.end(), [](char ch) {
    return (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f');
  })) << sum;

  // The same bytes give the same checksum, whatever the file is called.
  LoadResult same = loadConfigText(text, "b.yaml");
  ASSERT_TRUE(same.ok());
  EXPECT_EQ((*same)->checksum, sum);
  EXPECT_EQ((*same)->source, "b.yaml");

  // Any change, even a comment, changes it.
  LoadResult changed = loadConfigText(text + "# a comment\n", "a.yaml");
  ASSERT_TRUE(changed.ok()) << describe(changed.error());
  EXPECT_NE((*changed)->checksum, sum);
  EXPECT_EQ((*changed)->checksum.size(), 64u);

  // The file's bytes give the same checksum as the text.
  LoadResult file =
      loadConfigFile((kSourceDir / "config" / "examples" / "minimal-null.yaml").string());
  ASSERT_TRUE(file.ok());
  EXPECT_EQ((*file)->checksum, sum);

  // And it is the SHA-256 digest (the value is from sha256sum).
  LoadResult tiny = loadConfigText(
      "node: {name: a, site: b}\nports: [{name: p, role: lan, vdev: net_null0}]\n", "t.yaml");
  ASSERT_TRUE(tiny.ok()) << describe(tiny.error());
  EXPECT_EQ((*tiny)->checksum, "a0f2e77c6f6472e061815a9251eb8d911b3164183e81bf60b207e8f98d820d6b");
}

TEST(LoaderTest, MissingFileNamesThePath) {
  const std::string path = "/nonexistent/mcgw-test/no-such.yaml";
  LoadResult result = loadConfigFile(path);
  ASSERT_FALSE(result.ok());
  ASSERT_EQ(result.error().size(), 1u);
  const ConfigError& e = result.error()[0];
  EXPECT_EQ(e.file, path);
  EXPECT_NE(e.toString().find(path), std::string::npos) << e.toString();
  EXPECT_NE(e.message.find("cannot read"), std::string::npos) << e.message;
}

TEST(LoaderTest, DirectoryIsNotAnEmptyConfig) {
  const std::string path = (kSourceDir / "config" / "examples").string();
  LoadResult result = loadConfigFile(path);
  ASSERT_FALSE(result.ok());
  ASSERT_EQ(result.error().size(), 1u) << describe(result.error());
  EXPECT_EQ(result.error()[0].file, path);
  EXPECT_NE(result.error()[0].message.find("cannot read"), std::string::npos)
      << result.error()[0].toString();
}

TEST(LoaderTest, ErrorsPrintAsFileLineColumnPathMessage) {
  ConfigError e{"gw.yaml", 13, 10, "/mcgw:ports/port[name='lan0']/mtu", "expected an integer"};
  EXPECT_EQ(e.toString(), "gw.yaml:13:10: /mcgw:ports/port[name='lan0']/mtu: expected an integer");
  ConfigError no_location{"gw.yaml", 0, 0, "", "cannot read: No such file or directory"};
  EXPECT_EQ(no_location.toString(), "gw.yaml: cannot read: No such file or directory");
}

TEST(LoaderTest, ErrorsComeSortedByLine) {
  std::string text =
      "logging:\n  level: loud\nnode:\n  name: 9\n  site: s\nports:\n"
      "  - name: p\n    role: lan\n    vdev: net_null0\n    mtu: 1\n";
  LoadResult result = loadConfigText(text, "x.yaml");
  ASSERT_FALSE(result.ok());
  const ConfigErrors& errors = result.error();
  ASSERT_EQ(errors.size(), 3u) << describe(errors);
  EXPECT_EQ(errors[0].line, 2);
  EXPECT_EQ(errors[1].line, 4);
  EXPECT_EQ(errors[2].line, 10);
}

TEST(LoaderTest, ConfigFromTextMatchesConfigFromFile) {
  fs::path path = kSourceDir / "config" / "examples" / "overlay-vxlan-geneve.yaml";
  LoadResult from_file = loadConfigFile(path.string());
  LoadResult from_text = loadConfigText(readFile(path), path.string());
  ASSERT_TRUE(from_file.ok() && from_text.ok());
  EXPECT_EQ((*from_file)->peers, (*from_text)->peers);
  EXPECT_EQ((*from_file)->tenants, (*from_text)->tenants);
  EXPECT_EQ((*from_file)->checksum, (*from_text)->checksum);
}

}  // namespace
}  // namespace mcgw::config

namespace mcgw::config {
namespace {

TEST(LoaderTest, RefusesASecondYamlDocument) {
  auto r = loadConfigText(
      "node: {name: a, site: b}\nports: [{name: p, role: lan, vdev: net_null0}]\n---\n"
      "node: {name: c, site: d}\n",
      "multi.yaml");
  ASSERT_FALSE(r.ok());
  ASSERT_EQ(r.error().size(), 1u);
  EXPECT_EQ(r.error()[0].line, 3);
  EXPECT_NE(r.error()[0].message.find("a second YAML document"), std::string::npos);

  // "..." ends a document; content after it is a second one.
  r = loadConfigText("node: {name: a, site: b}\n...\n# comment\nports: []\n", "end.yaml");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error()[0].line, 4);

  // A leading "---", comments and directives are one document.
  auto ok = loadConfigText(
      "%YAML 1.2\n# gateway\n---\nnode: {name: a, site: b}\n"
      "ports: [{name: p, role: lan, vdev: net_null0}]\n...\n# trailing comment\n",
      "one.yaml");
  EXPECT_TRUE(ok.ok()) << (ok.ok() ? "" : ok.error()[0].toString());
}

// A capacity on an encrypted line (its packets are sealed as they leave
// their priority's queue, docs/policy.md) is taken like one on a line in
// clear text.
TEST(LoaderTest, LineCapacityIsTakenOnAnEncryptedLine) {
  LoadResult r = loadConfigText(
      "node: {name: gw, site: s}\n"
      "ports:\n"
      "  - {name: lan0, role: lan, vdev: net_null0, addresses: [10.1.0.1/24], tenant: t}\n"
      "  - {name: wan0, role: wan, vdev: net_null1, addresses: [192.0.2.1/24]}\n"
      "tenants: [{name: t, vni: 100}]\n"
      "peers:\n"
      "  - name: site-b\n"
      "    encryption: {mode: esp-aes-256-gcm}\n"
      "    lines:\n"
      "      - {name: l1, port: wan0, local-vtep: 192.0.2.1, remote-vtep: 192.0.2.2,\n"
      "         capacity: 100M}\n",
      "enc.yaml");
  ASSERT_TRUE(r.ok()) << describe(r.error());
  const auto& line = (*r)->peers.at(0).lines.at(0);
  EXPECT_EQ(line.capacity, "100M");
  EXPECT_TRUE((*r)->peers.at(0).encrypts(line));
}

}  // namespace
}  // namespace mcgw::config
