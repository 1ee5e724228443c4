// Broken configs: each is a small valid config with one mistake, and the
// loader must reject it with an error at the line (and column) of the mistake,
// saying what is wrong, on the YANG path of the node concerned.
#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config/loader.hpp"

namespace mcgw::config {
namespace {

constexpr const char* kFile = "broken.yaml";

// A valid config touching every section.  Line numbers are given on the right
// of the lines the cases change; the expectations below rely on them.
constexpr std::string_view kBase = R"yaml(node:
  name: gw-a1
  site: idc-a
eal:
  main-lcore: 0
  workers: [1, 2]
  hugepages: false
  memory-mb: 256
ports:
  - name: lan0
    role: lan
    vdev: net_null0
    mtu: 1500
    addresses: [10.1.0.1/24]
  - name: wan0
    role: wan
    vdev: net_null1
    addresses: [203.0.113.1/29, 2001:db8::1/64]
tenants:
  - name: blue
    vni: 1001
    routes:
      - prefix: 10.2.0.0/16
        peer: site-b
  - name: red
    vni: 1002
peers:
  - name: site-b
    encapsulation: vxlan
    line-mode: active-backup
    tenants: [blue]
    lines:
      - name: line1
        port: wan0
        local-vtep: 203.0.113.1
        remote-vtep: 203.0.113.2
bgp:
  asn: 65001
  router-id: 10.255.0.1
  timers:
    keepalive: 3
    hold: 9
vrrp:
  - vrid: 10
    port: lan0
    priority: 200
    virtual-addresses: [10.1.0.254]
address-plan:
  clouds:
    - name: aws
      regions:
        - name: us-east-1
          vpcs:
            - name: vpc-a
              prefixes: [10.2.0.0/16]
            - name: vpc-b
              prefixes: [10.3.0.0/16]
  mapped-ranges:
    - name: legacy
      real: 10.1.0.0/16
      mapped: 100.65.0.0/16
logging:
  level: info
)yaml";
// Lines of kBase:  2 node.name   6 eal.workers   7 eal.hugepages   8 eal.memory-mb
// 10 port lan0  11 role  12 vdev  13 mtu  15 port wan0  17 vdev  21 tenant blue vni
// 23 route prefix  24 route peer  25 tenant red  26 vni  29 encapsulation  30 line-mode
// 31 peer tenants  33 line line1  34 port  35 local-vtep  36 remote-vtep  42 hold
// 45 vrrp port  46 priority  55 vpc-a prefixes  57 vpc-b prefixes  58 mapped-ranges
// 61 mapped  62 logging  63 level

constexpr std::string_view kEditFailed = "#EDIT-FAILED";

// kBase with each `from` (which must occur exactly once) replaced by `to`.
std::string edited(std::vector<std::pair<std::string_view, std::string_view>> edits) {
  std::string text(kBase);
  for (const auto& [from, to] : edits) {
    size_t at = text.find(from);
    if (at == std::string::npos || text.find(from, at + 1) != std::string::npos) {
      return std::string(kEditFailed) + " " + std::string(from);
    }
    text.replace(at, from.size(), to);
  }
  return text;
}

struct BrokenCase {
  const char* name;
  std::string yaml;
  int line;             // expected line of some error
  int column;           // and its column; 0: don't care
  const char* message;  // a substring of its message
  const char* path;     // a substring of its path
};

// Keeps ctest's test names readable (no byte dump of the parameter).
void PrintTo(const BrokenCase& c, std::ostream* os) {
  *os << c.name;
}

std::string describe(const ConfigErrors& errors) {
  std::string out;
  for (const auto& e : errors) {
    out += "  " + e.toString() + "\n";
  }
  return out;
}

std::vector<BrokenCase> brokenCases() {
  return {
      // --- YAML syntax
      {"UnclosedBracket", edited({{"workers: [1, 2]", "workers: [1, 2"}}), 6, 12, "never closed",
       ""},
      {"UnclosedBrace",
       edited({{"node:\n  name: gw-a1\n  site: idc-a\n", "node: {name: gw-a1, site: idc-a\n"}}), 1,
       7, "end of map flow not found", ""},
      {"BadIndentation", edited({{"\n  site: idc-a", "\n   site: idc-a"}}), 3, 0, "invalid YAML",
       ""},
      {"TabIndentation", edited({{"\n  site: idc-a", "\n\tsite: idc-a"}}), 3, 1, "tab", ""},
      {"DuplicateYamlKey", edited({{"  site: idc-a\n", "  site: idc-a\n  name: gw-a2\n"}}), 4, 3,
       "duplicate key 'name' (first given at line 2)", "/mcgw:node/name"},
      {"DuplicateTopLevelKey", edited({{"logging:\n", "node:\n  name: x\nlogging:\n"}}), 62, 1,
       "duplicate key 'node' (first given at line 1)", "/mcgw:node"},
      // --- keys the model does not know
      {"UnknownTopLevelKey", edited({{"\nlogging:", "\nloging:"}}), 62, 1,
       "unknown key 'loging' (did you mean 'logging'?)", "/"},
      {"UnknownNestedKey", edited({{"    mtu: 1500", "    mut: 1500"}}), 13, 5,
       "unknown key 'mut' (did you mean 'mtu'?)", "/mcgw:ports/port[name='lan0']"},
      // --- wrong kind of YAML node
      {"MappingForScalar", edited({{"    mtu: 1500", "    mtu: {value: 1500}"}}), 13, 10,
       "found a mapping", "/mcgw:ports/port[name='lan0']/mtu"},
      {"ScalarForLeafList", edited({{"tenants: [blue]", "tenants: blue"}}), 31, 14,
       "expected a list", "/mcgw:peers/peer[name='site-b']/tenants"},
      {"ScalarForList",
       edited({{"  mapped-ranges:\n    - name: legacy\n      real: 10.1.0.0/16\n      mapped: "
                "100.65.0.0/16\n",
                "  mapped-ranges: legacy\n"}}),
       58, 18, "expected a list of 'mapped-range' entries", "/mcgw:address-plan/mapped-ranges"},
      {"ListForMapping",
       edited({{"node:\n  name: gw-a1\n  site: idc-a\n",
                "node:\n  - name: gw-a1\n    site: idc-a\n"}}),
       2, 3, "expected a mapping of 'node' settings, found a list", "/mcgw:node"},
      // --- values out of range
      {"MtuOutOfRange", edited({{"    mtu: 1500", "    mtu: 99999"}}), 13, 10,
       "expected an integer in 1280..9216, found \"99999\"", "port[name='lan0']/mtu"},
      {"VniZero", edited({{"vni: 1001", "vni: 0"}}), 21, 10, "1..16777215, found \"0\"",
       "tenant[name='blue']/vni"},
      {"VniTooLarge", edited({{"vni: 1001", "vni: 16777216"}}), 21, 10,
       "1..16777215, found \"16777216\"", "tenant[name='blue']/vni"},
      {"MemoryMbTooSmall", edited({{"memory-mb: 256", "memory-mb: 32"}}), 8, 14, "64..1048576",
       "/mcgw:eal/memory-mb"},
      {"VrrpPriority255", edited({{"priority: 200", "priority: 255"}}), 46, 15,
       "1..254, found \"255\"", "/mcgw:vrrp/group[vrid='10']/priority"},
      // --- enumerations and booleans
      {"BadRole", edited({{"    role: lan\n", "    role: lna\n"}}), 11, 11,
       "expected one of lan, wan, found \"lna\"", "port[name='lan0']/role"},
      {"BadEncapsulation", edited({{"encapsulation: vxlan", "encapsulation: gre"}}), 29, 20,
       "one of vxlan, geneve", "peer[name='site-b']/encapsulation"},
      {"BadLineMode", edited({{"line-mode: active-backup", "line-mode: active-standby"}}), 30, 16,
       "one of active-backup, ecmp", "peer[name='site-b']/line-mode"},
      {"BadLoggingLevel", edited({{"level: info", "level: verbose"}}), 63, 10, "found \"verbose\"",
       "/mcgw:logging/level"},
      {"BadBoolean", edited({{"hugepages: false", "hugepages: nope"}}), 7, 14,
       "expected true or false, found \"nope\"", "/mcgw:eal/hugepages"},
      // --- addresses and prefixes
      {"BadIpAddress", edited({{"remote-vtep: 203.0.113.2", "remote-vtep: 203.0.113.256"}}), 36, 22,
       "expected an IPv4 or IPv6 address", "line[name='line1']/remote-vtep"},
      {"BadPrefix", edited({{"- prefix: 10.2.0.0/16", "- prefix: 10.2.0.0/33"}}), 23, 17,
       "expected an IPv4 or IPv6 prefix", "/prefix"},
      {"RoutePrefixWithHostBits", edited({{"- prefix: 10.2.0.0/16", "- prefix: 10.2.0.1/16"}}), 23,
       17, "host bits set (did you mean '10.2.0.0/16'?)", "tenant[name='blue']/routes/route"},
      {"VpcPrefixWithHostBits", edited({{"[10.3.0.0/16]", "[10.3.1.0/16]"}}), 57, 26,
       "host bits set (did you mean '10.3.0.0/16'?)", "vpc[name='vpc-b']/prefixes"},
      {"DuplicateRouteAfterMasking",
       edited(
           {{"      - prefix: 10.2.0.0/16\n",
             "      - prefix: 10.2.0.0/16\n        peer: site-b\n      - prefix: 10.2.0.3/16\n"}}),
       25, 17, "duplicate route \"10.2.0.3/16\"", "routes/route"},
      {"BadNamePattern", edited({{"name: gw-a1", "name: 1gw"}}), 2, 9,
       "starting with a letter, found \"1gw\"", "/mcgw:node/name"},
      // --- missing keys
      {"MissingNodeName", edited({{"  name: gw-a1\n", ""}}), 2, 3, "missing mandatory key 'name'",
       "/mcgw:node"},
      {"MissingPortRole", edited({{"    role: lan\n", ""}}), 10, 5, "missing mandatory key 'role'",
       "/mcgw:ports/port[name='lan0']"},
      {"MissingLinePort", edited({{"        port: wan0\n", ""}}), 33, 9,
       "missing mandatory key 'port'", "line[name='line1']"},
      {"PortWithoutName", edited({{"  - name: lan0\n    role: lan\n", "  - role: lan\n"}}), 10, 5,
       "has no 'name'", "/mcgw:ports/port"},
      {"EmptyFile", "", 1, 1, "missing mandatory key 'name'", "/mcgw:node"},
      {"OnlyAComment", "# nothing here\n", 1, 1, "needs at least 1 'port' entry", "/mcgw:ports"},
      // --- the device choice
      {"BothPciAndVdev",
       edited({{"vdev: net_null0\n", "vdev: net_null0\n    pci: \"0000:00:08.0\"\n"}}), 13, 5,
       "'pci' and 'vdev' exclude each other", "port[name='lan0']/pci"},
      {"NeitherPciNorVdev", edited({{"    vdev: net_null0\n", ""}}), 10, 5,
       "missing one of: pci, vdev", "/mcgw:ports/port[name='lan0']"},
      {"UnknownVdevDriver", edited({{"vdev: net_null0", "vdev: net_nul0"}}), 12, 11,
       "unknown DPDK virtual device driver 'net_nul' (did you mean 'net_null'?)",
       "port[name='lan0']/vdev"},
      {"AfXdpWithoutInterface", edited({{"vdev: net_null0", "vdev: net_af_xdp0"}}), 12, 11,
       "net_af_xdp needs the kernel interface it attaches to", "port[name='lan0']/vdev"},
      // --- duplicates
      {"DuplicatePortName", edited({{"- name: wan0", "- name: lan0"}}), 15, 11,
       "duplicate port \"lan0\" (first defined at line 10)", "/mcgw:ports/port[name='lan0']"},
      {"DuplicateVni", edited({{"vni: 1002", "vni: 1001"}}), 26, 10, "already used by",
       "tenant[name='red']/vni"},
      {"DuplicateVdev", edited({{"vdev: net_null1", "vdev: net_null0"}}), 17, 11,
       "device 'net_null0' is already used by port 'lan0'", "port[name='wan0']/vdev"},
      {"DuplicatePciInShortForm",
       edited(
           {{"vdev: net_null0", "pci: \"0000:00:08.0\""}, {"vdev: net_null1", "pci: \"00:08.0\""}}),
       17, 10, "is already used by port 'lan0'", "port[name='wan0']/pci"},
      // --- references
      {"LineToUndefinedPort", edited({{"port: wan0", "port: wan9"}}), 34, 15,
       "refers to port \"wan9\", which is not defined; defined: lan0, wan0 (did you mean 'wan0'?)",
       "line[name='line1']/port"},
      {"RouteToUndefinedPeer", edited({{"peer: site-b", "peer: site-c"}}), 24, 15,
       "refers to peer \"site-c\"", "routes/route[prefix='10.2.0.0/16']/peer"},
      {"PeerCarriesUndefinedTenant", edited({{"tenants: [blue]", "tenants: [blue, green]"}}), 31,
       21, "refers to tenant \"green\"", "peer[name='site-b']/tenants"},
      // --- semantic checks
      {"LanPortUsedForLine", edited({{"port: wan0", "port: lan0"}}), 34, 15,
       "uses port 'lan0' whose role is lan", "line[name='line1']/port"},
      {"LocalVtepNotOnPort", edited({{"local-vtep: 203.0.113.1", "local-vtep: 203.0.113.5"}}), 35,
       21, "local-vtep 203.0.113.5 is not an address of port 'wan0'",
       "line[name='line1']/local-vtep"},
      {"MixedVtepFamilies", edited({{"remote-vtep: 203.0.113.2", "remote-vtep: 2001:db8::2"}}), 36,
       22, "different address families", "line[name='line1']/remote-vtep"},
      {"WorkerIsMainLcore", edited({{"workers: [1, 2]", "workers: [1, 0]"}}), 6, 16,
       "worker lcore 0 is also the main lcore", "/mcgw:eal/workers"},
      {"BgpHoldBelowThreeKeepalives", edited({{"hold: 9", "hold: 6"}}), 42, 11,
       "at least 3 × keepalive (9 s)", "/mcgw:bgp/timers/hold"},
      {"VrrpOnWanPort", edited({{"    port: lan0\n    priority", "    port: wan0\n    priority"}}),
       45, 11, "VRRP runs on lan ports", "/mcgw:vrrp/group[vrid='10']/port"},
      {"OverlappingVpcPrefixes", edited({{"[10.3.0.0/16]", "[10.2.128.0/17]"}}), 57, 26,
       "10.2.128.0/17 of VPC aws/us-east-1/vpc-b overlaps 10.2.0.0/16 of VPC aws/us-east-1/vpc-a",
       "vpc[name='vpc-b']/prefixes"},
      {"MappedRangeLengthMismatch", edited({{"mapped: 100.65.0.0/16", "mapped: 100.65.0.0/24"}}),
       61, 15, "same family and length", "mapped-range[name='legacy']/mapped"},
  };
}

class BrokenConfigTest : public ::testing::TestWithParam<BrokenCase> {};

TEST_P(BrokenConfigTest, IsRejectedAtTheMistake) {
  const BrokenCase& c = GetParam();
  ASSERT_EQ(c.yaml.find(kEditFailed), std::string::npos)
      << "the case's edit does not apply: " << c.yaml;
  LoadResult result = loadConfigText(c.yaml, kFile);
  ASSERT_FALSE(result.ok()) << "a broken config was accepted:\n" << c.yaml;
  const ConfigErrors& errors = result.error();
  ASSERT_FALSE(errors.empty());
  bool matched = false;
  for (const auto& e : errors) {
    EXPECT_EQ(e.file, kFile) << e.toString();
    matched = matched || (e.line == c.line && (c.column == 0 || e.column == c.column) &&
                          e.message.find(c.message) != std::string::npos &&
                          e.path.find(c.path) != std::string::npos);
  }
  EXPECT_TRUE(matched) << "expected an error at line " << c.line << " column " << c.column
                       << " with message containing \"" << c.message << "\" and path containing \""
                       << c.path << "\"; got:\n"
                       << describe(errors);
}

INSTANTIATE_TEST_SUITE_P(Cases, BrokenConfigTest, ::testing::ValuesIn(brokenCases()),
                         [](const ::testing::TestParamInfo<BrokenCase>& info) {
                           return std::string(info.param.name);
                         });

TEST(BrokenConfigsTest, BaseConfigIsValid) {
  LoadResult result = loadConfigText(kBase, kFile);
  ASSERT_TRUE(result.ok()) << describe(result.error());
  EXPECT_EQ((*result)->ports.size(), 2u);
  EXPECT_EQ((*result)->tenants.size(), 2u);
}

TEST(BrokenConfigsTest, AtLeastThirtyCases) {
  EXPECT_GE(brokenCases().size(), 30u);
}

TEST(BrokenConfigsTest, ReportsEveryIndependentMistakeAtOnce) {
  std::string yaml = edited({{"    role: lan\n", "    role: lna\n"},
                             {"    mtu: 1500", "    mtu: 99999"},
                             {"level: info", "level: verbose"}});
  LoadResult result = loadConfigText(yaml, kFile);
  ASSERT_FALSE(result.ok());
  const ConfigErrors& errors = result.error();
  ASSERT_EQ(errors.size(), 3u) << describe(errors);
  // Sorted by line.
  EXPECT_EQ(errors[0].line, 11);
  EXPECT_NE(errors[0].message.find("\"lna\""), std::string::npos) << errors[0].toString();
  EXPECT_EQ(errors[1].line, 13);
  EXPECT_NE(errors[1].message.find("\"99999\""), std::string::npos) << errors[1].toString();
  EXPECT_EQ(errors[2].line, 63);
  EXPECT_NE(errors[2].message.find("\"verbose\""), std::string::npos) << errors[2].toString();
}

TEST(BrokenConfigsTest, ReportsEverySemanticMistakeAtOnce) {
  std::string yaml = edited({{"workers: [1, 2]", "workers: [1, 0]"},
                             {"local-vtep: 203.0.113.1", "local-vtep: 203.0.113.5"},
                             {"hold: 9", "hold: 6"}});
  LoadResult result = loadConfigText(yaml, kFile);
  ASSERT_FALSE(result.ok());
  const ConfigErrors& errors = result.error();
  ASSERT_EQ(errors.size(), 3u) << describe(errors);
  EXPECT_EQ(errors[0].line, 6);
  EXPECT_EQ(errors[1].line, 35);
  EXPECT_EQ(errors[2].line, 42);
}

}  // namespace
}  // namespace mcgw::config
