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
    tenant: blue
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
    asn: 65002
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
// 10 port lan0  11 role  12 vdev  13 mtu  14 addresses  15 tenant  16 port wan0
// 18 vdev  19 addresses  22 tenant blue vni  24 route prefix  25 route peer
// 26 tenant red  27 vni  30 asn  31 line-mode  32 peer tenants  34 line line1
// 35 port  36 local-vtep  37 remote-vtep  43 hold  46 vrrp port  47 priority
// 56 vpc-a prefixes  58 vpc-b prefixes  59 mapped-ranges  62 mapped  63 logging  64 level

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

// kBase with nine more peers g1..g9, all of site "pair"; g9's site is at
// line 95, column 11.
std::string ninePeersOfOneSite() {
  std::string peers;
  for (int i = 1; i <= 9; ++i) {
    const std::string n = std::to_string(i);
    peers += "  - name: g" + n + "\n    site: pair\n    lines:\n      - name: l\n" +
             "        port: wan0\n        local-vtep: 203.0.113.1\n" +
             "        remote-vtep: 192.0.2." + n + "\n";
  }
  return edited({{"bgp:\n", peers + "bgp:\n"}});
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

// "    hold: 9" followed by a bgp.neighbors entry (lines 44..47 of the result;
// its address on 45, port on 47, extra from 48).
std::string withNeighbor(std::string_view address, std::string_view port,
                         std::string_view extra = "") {
  return "    hold: 9\n  neighbors:\n    - address: " + std::string(address) +
         "\n      asn: 64512\n      port: " + std::string(port) + "\n" + std::string(extra);
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
      {"DuplicateTopLevelKey", edited({{"logging:\n", "node:\n  name: x\nlogging:\n"}}), 63, 1,
       "duplicate key 'node' (first given at line 1)", "/mcgw:node"},
      // --- keys the model does not know
      {"UnknownTopLevelKey", edited({{"\nlogging:", "\nloging:"}}), 63, 1,
       "unknown key 'loging' (did you mean 'logging'?)", "/"},
      {"UnknownNestedKey", edited({{"    mtu: 1500", "    mut: 1500"}}), 13, 5,
       "unknown key 'mut' (did you mean 'mtu'?)", "/mcgw:ports/port[name='lan0']"},
      // --- wrong kind of YAML node
      {"MappingForScalar", edited({{"    mtu: 1500", "    mtu: {value: 1500}"}}), 13, 10,
       "found a mapping", "/mcgw:ports/port[name='lan0']/mtu"},
      {"ScalarForLeafList", edited({{"tenants: [blue]", "tenants: blue"}}), 32, 14,
       "expected a list", "/mcgw:peers/peer[name='site-b']/tenants"},
      {"ScalarForList",
       edited({{"  mapped-ranges:\n    - name: legacy\n      real: 10.1.0.0/16\n      mapped: "
                "100.65.0.0/16\n",
                "  mapped-ranges: legacy\n"}}),
       59, 18, "expected a list of 'mapped-range' entries", "/mcgw:address-plan/mapped-ranges"},
      {"ListForMapping",
       edited({{"node:\n  name: gw-a1\n  site: idc-a\n",
                "node:\n  - name: gw-a1\n    site: idc-a\n"}}),
       2, 3, "expected a mapping of 'node' settings, found a list", "/mcgw:node"},
      // --- values out of range
      {"MtuOutOfRange", edited({{"    mtu: 1500", "    mtu: 99999"}}), 13, 10,
       "expected an integer in 1280..9216, found \"99999\"", "port[name='lan0']/mtu"},
      {"VniZero", edited({{"vni: 1001", "vni: 0"}}), 22, 10, "1..16777215, found \"0\"",
       "tenant[name='blue']/vni"},
      {"VniTooLarge", edited({{"vni: 1001", "vni: 16777216"}}), 22, 10,
       "1..16777215, found \"16777216\"", "tenant[name='blue']/vni"},
      {"MemoryMbTooSmall", edited({{"memory-mb: 256", "memory-mb: 32"}}), 8, 14, "64..1048576",
       "/mcgw:eal/memory-mb"},
      {"VrrpPriority255", edited({{"priority: 200", "priority: 255"}}), 47, 15,
       "1..254, found \"255\"", "/mcgw:vrrp/group[vrid='10']/priority"},
      // --- enumerations and booleans
      {"BadRole", edited({{"    role: lan\n", "    role: lna\n"}}), 11, 11,
       "expected one of lan, wan, found \"lna\"", "port[name='lan0']/role"},
      {"BadEncapsulation", edited({{"asn: 65002", "asn: 65002\n    encapsulation: gre"}}), 31, 20,
       "one of vxlan, geneve", "peer[name='site-b']/encapsulation"},
      {"BadLineMode", edited({{"line-mode: active-backup", "line-mode: active-standby"}}), 31, 16,
       "one of active-backup, ecmp", "peer[name='site-b']/line-mode"},
      {"BadLoggingLevel", edited({{"level: info", "level: verbose"}}), 64, 10, "found \"verbose\"",
       "/mcgw:logging/level"},
      {"BadBoolean", edited({{"hugepages: false", "hugepages: nope"}}), 7, 14,
       "expected true or false, found \"nope\"", "/mcgw:eal/hugepages"},
      // --- addresses and prefixes
      {"BadIpAddress", edited({{"remote-vtep: 203.0.113.2", "remote-vtep: 203.0.113.256"}}), 37, 22,
       "expected an IPv4 or IPv6 address", "line[name='line1']/remote-vtep"},
      {"BadPrefix", edited({{"- prefix: 10.2.0.0/16", "- prefix: 10.2.0.0/33"}}), 24, 17,
       "expected an IPv4 or IPv6 prefix", "/prefix"},
      {"RoutePrefixWithHostBits", edited({{"- prefix: 10.2.0.0/16", "- prefix: 10.2.0.1/16"}}), 24,
       17, "host bits set (did you mean '10.2.0.0/16'?)", "tenant[name='blue']/routes/route"},
      {"VpcPrefixWithHostBits", edited({{"[10.3.0.0/16]", "[10.3.1.0/16]"}}), 58, 26,
       "host bits set (did you mean '10.3.0.0/16'?)", "vpc[name='vpc-b']/prefixes"},
      {"DuplicateRouteAfterMasking",
       edited(
           {{"      - prefix: 10.2.0.0/16\n",
             "      - prefix: 10.2.0.0/16\n        peer: site-b\n      - prefix: 10.2.0.3/16\n"}}),
       26, 17, "duplicate route \"10.2.0.3/16\"", "routes/route"},
      {"BadNamePattern", edited({{"name: gw-a1", "name: 1gw"}}), 2, 9,
       "starting with a letter, found \"1gw\"", "/mcgw:node/name"},
      // --- missing keys
      {"MissingNodeName", edited({{"  name: gw-a1\n", ""}}), 2, 3, "missing mandatory key 'name'",
       "/mcgw:node"},
      {"MissingPortRole", edited({{"    role: lan\n", ""}}), 10, 5, "missing mandatory key 'role'",
       "/mcgw:ports/port[name='lan0']"},
      {"MissingLinePort", edited({{"        port: wan0\n", ""}}), 34, 9,
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
      {"DuplicatePortName", edited({{"- name: wan0", "- name: lan0"}}), 16, 11,
       "duplicate port \"lan0\" (first defined at line 10)", "/mcgw:ports/port[name='lan0']"},
      {"DuplicateVni", edited({{"vni: 1002", "vni: 1001"}}), 27, 10, "already used by",
       "tenant[name='red']/vni"},
      {"DuplicateVdev", edited({{"vdev: net_null1", "vdev: net_null0"}}), 18, 11,
       "device 'net_null0' is already used by port 'lan0'", "port[name='wan0']/vdev"},
      {"DuplicatePciInShortForm",
       edited(
           {{"vdev: net_null0", "pci: \"0000:00:08.0\""}, {"vdev: net_null1", "pci: \"00:08.0\""}}),
       18, 10, "is already used by port 'lan0'", "port[name='wan0']/pci"},
      // --- references
      {"LineToUndefinedPort", edited({{"port: wan0", "port: wan9"}}), 35, 15,
       "refers to port \"wan9\", which is not defined; defined: lan0, wan0 (did you mean 'wan0'?)",
       "line[name='line1']/port"},
      {"RouteToUndefinedPeer", edited({{"peer: site-b", "peer: site-c"}}), 25, 15,
       "refers to peer \"site-c\"", "routes/route[prefix='10.2.0.0/16']/peer"},
      {"PeerCarriesUndefinedTenant", edited({{"tenants: [blue]", "tenants: [blue, green]"}}), 32,
       21, "refers to tenant \"green\"", "peer[name='site-b']/tenants"},
      // --- semantic checks
      {"LanPortUsedForLine", edited({{"port: wan0", "port: lan0"}}), 35, 15,
       "uses port 'lan0' whose role is lan", "line[name='line1']/port"},
      {"LocalVtepNotOnPort", edited({{"local-vtep: 203.0.113.1", "local-vtep: 203.0.113.5"}}), 36,
       21, "local-vtep 203.0.113.5 is not an address of port 'wan0'",
       "line[name='line1']/local-vtep"},
      {"MixedVtepFamilies", edited({{"remote-vtep: 203.0.113.2", "remote-vtep: 2001:db8::2"}}), 37,
       22, "different address families", "line[name='line1']/remote-vtep"},
      {"WorkerIsMainLcore", edited({{"workers: [1, 2]", "workers: [1, 0]"}}), 6, 16,
       "worker lcore 0 is also the main lcore", "/mcgw:eal/workers"},
      {"BgpHoldBelowThreeKeepalives", edited({{"hold: 9", "hold: 6"}}), 43, 11,
       "at least 3 × keepalive (9 s)", "/mcgw:bgp/timers/hold"},
      {"VrrpOnWanPort", edited({{"    port: lan0\n    priority", "    port: wan0\n    priority"}}),
       46, 11, "VRRP runs on lan ports", "/mcgw:vrrp/group[vrid='10']/port"},
      {"VrrpVirtualAddressOffTheSubnet", edited({{"[10.1.0.254]", "[10.9.0.254]"}}), 48, 24,
       "virtual address 10.9.0.254 is on no subnet of port 'lan0'",
       "/mcgw:vrrp/group[vrid='10']/virtual-addresses"},
      {"VrrpVirtualAddressIsAPortAddress", edited({{"[10.1.0.254]", "[10.1.0.1]"}}), 48, 24,
       "virtual address 10.1.0.1 is port 'lan0''s own address",
       "/mcgw:vrrp/group[vrid='10']/virtual-addresses"},
      {"VrrpMixedFamilies", edited({{"[10.1.0.254]", "[10.1.0.254, 2001:db8::fe]"}}), 48, 24,
       "virtual address 2001:db8::fe is not IPv4 like the group's first virtual address",
       "/mcgw:vrrp/group[vrid='10']/virtual-addresses"},
      {"VrrpUnicastPeerOfTheOtherFamily",
       edited({{"[10.1.0.254]", "[10.1.0.254]\n    unicast-peers: [2001:db8::2]"}}), 49, 20,
       "unicast peer 2001:db8::2 is not IPv4", "/mcgw:vrrp/group[vrid='10']/unicast-peers"},
      {"VrrpSourceNotOnThePort",
       edited({{"[10.1.0.254]", "[10.1.0.254]\n    source-address: 10.1.0.7"}}), 49, 21,
       "source address 10.1.0.7 is not an address of port 'lan0'",
       "/mcgw:vrrp/group[vrid='10']/source-address"},
      {"VrrpTracksAnUnknownPort",
       edited({{"[10.1.0.254]", "[10.1.0.254]\n    track:\n      - object: port lan9"}}), 50, 17,
       "tracks port 'lan9', which is not in ports",
       "/mcgw:vrrp/group[vrid='10']/track[object='port lan9']/object"},
      {"VrrpTrackObjectMisspelt",
       edited({{"[10.1.0.254]", "[10.1.0.254]\n    track:\n      - object: link lan0"}}), 50, 17,
       "\"port NAME\", \"peer NAME\", \"bgp ADDRESS\" or \"fpm\"",
       "/mcgw:vrrp/group[vrid='10']/track[object='link lan0']/object"},
      {"VrrpAcceptModeWithALinkLocalAddress",
       edited({{"    virtual-addresses: [10.1.0.254]\n",
                "    virtual-addresses: [fe80::1]\n    accept-mode: true\n"}}),
       49, 18, "accept-mode cannot take the link-local virtual address fe80::1",
       "/mcgw:vrrp/group[vrid='10']/accept-mode"},
      {"VrrpTracksAnUnknownBgpSession",
       edited({{"[10.1.0.254]", "[10.1.0.254]\n    track:\n      - object: bgp 10.9.9.9"}}), 50, 17,
       "tracks BGP session '10.9.9.9', which is no session of this gateway",
       "/mcgw:vrrp/group[vrid='10']/track[object='bgp 10.9.9.9']/object"},
      {"VrrpTracksTheLineOfAPeerWithoutBgp",
       edited({{"    asn: 65002\n", ""},
               {"[10.1.0.254]", "[10.1.0.254]\n    track:\n      - object: bgp 203.0.113.2"}}),
       49, 17, "tracks BGP session '203.0.113.2', which is no session of this gateway",
       "/mcgw:vrrp/group[vrid='10']/track[object='bgp 203.0.113.2']/object"},
      {"VrrpTooManyGroupsOnAPort",
       edited({{"[10.1.0.254]",
                "[10.1.0.254]\n  - {vrid: 11, port: lan0, virtual-addresses: [10.1.0.11]}\n  - "
                "{vrid: 12, port: lan0, virtual-addresses: [10.1.0.12]}\n  - {vrid: 13, port: "
                "lan0, virtual-addresses: [10.1.0.13]}\n  - {vrid: 14, port: lan0, "
                "virtual-addresses: [10.1.0.14]}\n  - {vrid: 15, port: lan0, virtual-addresses: "
                "[10.1.0.15]}\n  - {vrid: 16, port: lan0, virtual-addresses: [10.1.0.16]}\n  - "
                "{vrid: 17, port: lan0, virtual-addresses: [10.1.0.17]}\n  - {vrid: 18, port: "
                "lan0, virtual-addresses: [10.1.0.18]}"}}),
       56, 22, "port 'lan0' has more than 8 VRRP groups", "/mcgw:vrrp/group[vrid='18']/port"},
      {"VrrpAdvertisementLargerThanTheMtu",
       edited({{"[10.1.0.254]",
                "[10.1.0.254]\n  - {vrid: 11, port: lan0, virtual-addresses: [2001:db8::100, "
                "2001:db8::101, 2001:db8::102, 2001:db8::103, 2001:db8::104, 2001:db8::105, "
                "2001:db8::106, 2001:db8::107, 2001:db8::108, 2001:db8::109, 2001:db8::10a, "
                "2001:db8::10b, 2001:db8::10c, 2001:db8::10d, 2001:db8::10e, 2001:db8::10f, "
                "2001:db8::110, 2001:db8::111, 2001:db8::112, 2001:db8::113, 2001:db8::114, "
                "2001:db8::115, 2001:db8::116, 2001:db8::117, 2001:db8::118, 2001:db8::119, "
                "2001:db8::11a, 2001:db8::11b, 2001:db8::11c, 2001:db8::11d, 2001:db8::11e, "
                "2001:db8::11f, 2001:db8::120, 2001:db8::121, 2001:db8::122, 2001:db8::123, "
                "2001:db8::124, 2001:db8::125, 2001:db8::126, 2001:db8::127, 2001:db8::128, "
                "2001:db8::129, 2001:db8::12a, 2001:db8::12b, 2001:db8::12c, 2001:db8::12d, "
                "2001:db8::12e, 2001:db8::12f, 2001:db8::130, 2001:db8::131, 2001:db8::132, "
                "2001:db8::133, 2001:db8::134, 2001:db8::135, 2001:db8::136, 2001:db8::137, "
                "2001:db8::138, 2001:db8::139, 2001:db8::13a, 2001:db8::13b, 2001:db8::13c, "
                "2001:db8::13d, 2001:db8::13e, 2001:db8::13f, 2001:db8::140, 2001:db8::141, "
                "2001:db8::142, 2001:db8::143, 2001:db8::144, 2001:db8::145, 2001:db8::146, "
                "2001:db8::147, 2001:db8::148, 2001:db8::149, 2001:db8::14a, 2001:db8::14b, "
                "2001:db8::14c, 2001:db8::14d, 2001:db8::14e, 2001:db8::14f, 2001:db8::150, "
                "2001:db8::151, 2001:db8::152, 2001:db8::153, 2001:db8::154, 2001:db8::155, "
                "2001:db8::156, 2001:db8::157, 2001:db8::158, 2001:db8::159, 2001:db8::15a]}"}}),
       49, 47,
       "91 virtual addresses make a 1504-byte advertisement, more than port 'lan0''s MTU 1500",
       "/mcgw:vrrp/group[vrid='11']/virtual-addresses"},
      {"VrrpNotifyNotAbsolute", edited({{"[10.1.0.254]", "[10.1.0.254]\n    notify: vip-hook.sh"}}),
       49, 13,
       "expected an absolute path such as /usr/local/sbin/vrrp-notify, found \"vip-hook.sh\"",
       "/mcgw:vrrp/group[vrid='10']/notify"},
      {"OverlappingVpcPrefixes", edited({{"[10.3.0.0/16]", "[10.2.128.0/17]"}}), 58, 26,
       "10.2.128.0/17 of VPC aws/us-east-1/vpc-b overlaps 10.2.0.0/16 of VPC aws/us-east-1/vpc-a "
       "at broken.yaml:56",
       "vpc[name='vpc-b']/prefixes"},
      {"VpcPrefixContainsAnEarlierOne", edited({{"[10.3.0.0/16]", "[10.0.0.0/8]"}}), 58, 26,
       "10.0.0.0/8 of VPC aws/us-east-1/vpc-b overlaps 10.2.0.0/16 of VPC aws/us-east-1/vpc-a at "
       "broken.yaml:56",
       "vpc[name='vpc-b']/prefixes"},
      {"MappedRangeOverlapsAVpc", edited({{"mapped: 100.65.0.0/16", "mapped: 10.3.0.0/16"}}), 62,
       15,
       "10.3.0.0/16 of mapped range legacy overlaps 10.3.0.0/16 of VPC aws/us-east-1/vpc-b at "
       "broken.yaml:58",
       "mapped-range[name='legacy']/mapped"},
      {"PoolPrefixesOverlap",
       edited({{"address-plan:\n",
                "address-plan:\n  pools:\n    - name: p1\n      prefixes: "
                "[10.64.0.0/10, 10.96.0.0/11]\n"}}),
       52, 32,
       "10.96.0.0/11 of pool p1 overlaps 10.64.0.0/10 of pool p1 at broken.yaml:52; pools must "
       "not overlap",
       "pool[name='p1']/prefixes"},
      // --- the plan's store (inserted after "address-plan:", from line 50)
      {"StoreEndpointNotAUrl",
       edited({{"address-plan:\n",
                "address-plan:\n  store:\n    type: etcd\n    endpoints: [127.0.0.1:2379]\n"}}),
       52, 17, "127.0.0.1:2379", "/mcgw:address-plan/store/endpoints"},
      {"StoreEndpointsMixTlsAndPlain",
       edited({{"address-plan:\n",
                "address-plan:\n  store:\n    type: etcd\n    endpoints:\n      - "
                "https://10.0.0.1:2379\n      - http://10.0.0.2:2379\n"}}),
       54, 9,
       "endpoint \"http://10.0.0.2:2379\" is http:// but \"https://10.0.0.1:2379\" at "
       "broken.yaml:53 is https://; the endpoints of one etcd cluster are all https:// or all "
       "http://",
       "/mcgw:address-plan/store/endpoints"},
      {"StoreCertWithoutKey",
       edited({{"address-plan:\n",
                "address-plan:\n  store:\n    type: etcd\n    endpoints: "
                "[https://10.0.0.1:2379]\n    cert-file: /etc/mcgw/client.pem\n"}}),
       53, 16,
       "cert-file needs key-file, the private key of the client certificate; give both or "
       "neither",
       "/mcgw:address-plan/store/cert-file"},
      {"StoreKeyWithoutCert",
       edited({{"address-plan:\n",
                "address-plan:\n  store:\n    type: etcd\n    endpoints: "
                "[https://10.0.0.1:2379]\n    key-file: /etc/mcgw/client.key\n"}}),
       53, 15, "key-file needs cert-file", "/mcgw:address-plan/store/key-file"},
      {"StoreTlsFilesWithPlainEndpoints",
       edited({{"address-plan:\n",
                "address-plan:\n  store:\n    type: etcd\n    endpoints: "
                "[http://10.0.0.1:2379]\n    ca-file: /etc/mcgw/ca.pem\n"}}),
       53, 14,
       "ca-file is for TLS, but every endpoint is http:// (plain text); use https:// endpoints",
       "/mcgw:address-plan/store/ca-file"},
      {"StoreRelativeCaFile",
       edited({{"address-plan:\n", "address-plan:\n  store:\n    ca-file: etc/mcgw/ca.pem\n"}}), 51,
       14, "etc/mcgw/ca.pem", "/mcgw:address-plan/store/ca-file"},
      {"StoreRelativePath",
       edited({{"address-plan:\n", "address-plan:\n  store:\n    path: plan.yaml\n"}}), 51, 11,
       "plan.yaml", "/mcgw:address-plan/store/path"},
      {"StorePrefixWithoutTrailingSlash",
       edited({{"address-plan:\n", "address-plan:\n  store:\n    prefix: /mcgw/plan\n"}}), 51, 13,
       "/mcgw/plan", "/mcgw:address-plan/store/prefix"},
      {"ReservedRangeWithHostBits",
       edited({{"address-plan:\n",
                "address-plan:\n  reserved:\n    - name: mgmt\n      prefix: 10.250.0.1/16\n"}}),
       52, 15, "did you mean '10.250.0.0/16'?", "reserved/range[name='mgmt']/prefix"},
      {"PoolCloudNotAName",
       edited({{"address-plan:\n",
                "address-plan:\n  pools:\n    - name: p1\n      prefixes: [10.64.0.0/10]\n"
                "      clouds: [\"ali yun\"]\n"}}),
       53, 16, "ali yun", "pool[name='p1']/clouds"},
      {"MappedRangeLengthMismatch", edited({{"mapped: 100.65.0.0/16", "mapped: 100.65.0.0/24"}}),
       62, 15, "same family and length", "mapped-range[name='legacy']/mapped"},
      // --- a port's tenant
      {"TenantOnWanPort", edited({{"2001:db8::1/64]\n", "2001:db8::1/64]\n    tenant: blue\n"}}),
       20, 13, "port 'wan0' is a wan port; 'tenant' is for lan ports", "port[name='wan0']/tenant"},
      {"LanPortWithoutTenantAmongSeveral", edited({{"    tenant: blue\n", ""}}), 10, 5,
       "lan port 'lan0' needs a 'tenant': the config has 2 tenants (blue, red)",
       "/mcgw:ports/port[name='lan0']"},
      {"PortTenantUndefined", edited({{"    tenant: blue\n", "    tenant: green\n"}}), 15, 13,
       "refers to tenant \"green\", which is not defined; defined: blue, red",
       "port[name='lan0']/tenant"},
      // --- buffers
      {"TooFewMbufsForAfXdp",
       edited({{"    vdev: net_null0\n", "    vdev: net_af_xdp0,iface=eth1\n"},
               {"  memory-mb: 256\n", "  memory-mb: 256\n  mbufs: 2047\n"}}),
       9, 10, "eal.mbufs 2047 is too few: the ports' RX rings hold 2048", "/mcgw:eal/mbufs"},
      // --- static neighbours
      {"NeighborMulticastMac",
       edited({{"    tenant: blue\n",
                "    tenant: blue\n    neighbors:\n      - address: "
                "10.1.0.254\n        mac: 01:00:5e:00:00:01\n"}}),
       18, 14, "neighbor MAC 01:00:5e:00:00:01 is not a unicast address (the multicast bit is set)",
       "port[name='lan0']/neighbors/neighbor[address='10.1.0.254']/mac"},
      {"NeighborZeroMac",
       edited({{"    tenant: blue\n",
                "    tenant: blue\n    neighbors:\n      - address: "
                "10.1.0.254\n        mac: 00:00:00:00:00:00\n"}}),
       18, 14, "neighbor MAC 00:00:00:00:00:00 is not a unicast address (it is all zeros)",
       "neighbor[address='10.1.0.254']/mac"},
      {"NeighborMalformedMac",
       edited({{"    tenant: blue\n",
                "    tenant: blue\n    neighbors:\n      - address: "
                "10.1.0.254\n        mac: 02:00:00:00:00\n"}}),
       18, 14, "expected a MAC address such as 02:00:00:00:00:01, found \"02:00:00:00:00\"",
       "neighbor[address='10.1.0.254']/mac"},
      {"NeighborWithoutMac",
       edited({{"    tenant: blue\n",
                "    tenant: blue\n    neighbors:\n      - address: 10.1.0.254\n"}}),
       17, 9, "missing mandatory key 'mac'", "neighbor[address='10.1.0.254']"},
      {"NeighborNotOnPortSubnet",
       edited({{"    tenant: blue\n",
                "    tenant: blue\n    neighbors:\n      - address: "
                "10.9.0.1\n        mac: 02:00:00:00:00:09\n"}}),
       17, 18, "neighbor 10.9.0.1 is not on a subnet of port 'lan0' (port 'lan0' has 10.1.0.1/24)",
       "port[name='lan0']/neighbors/neighbor[address='10.9.0.1']/address"},
      {"NeighborIsOwnAddress",
       edited({{"    tenant: blue\n",
                "    tenant: blue\n    neighbors:\n      - address: "
                "10.1.0.1\n        mac: 02:00:00:00:00:09\n"}}),
       17, 18, "neighbor 10.1.0.1 is this gateway's own address on port 'lan0'",
       "neighbor[address='10.1.0.1']/address"},
      {"DuplicateNeighbor",
       edited({{"    tenant: blue\n",
                "    tenant: blue\n    neighbors:\n      - address: 10.1.0.7\n        mac: "
                "02:00:00:00:00:07\n      - address: 10.1.0.7\n        mac: 02:00:00:00:00:08\n"}}),
       19, 18, "duplicate neighbor \"10.1.0.7\" (first defined at line 17)",
       "neighbors/neighbor[address='10.1.0.7']"},
      // --- a line's next hop and a peer's inner MAC
      {"LineNextHopNotOnPortSubnet",
       edited({{"remote-vtep: 203.0.113.2\n",
                "remote-vtep: 203.0.113.2\n        next-hop: 192.0.2.1\n"}}),
       38, 19,
       "next-hop 192.0.2.1 is not on a subnet of port 'wan0' (port 'wan0' has 203.0.113.1/29, "
       "2001:db8::1/64)",
       "line[name='line1']/next-hop"},
      {"LineNextHopOtherFamily",
       edited({{"remote-vtep: 203.0.113.2\n",
                "remote-vtep: 203.0.113.2\n        next-hop: 2001:db8::6\n"}}),
       38, 19, "next-hop 2001:db8::6 is IPv6 but remote-vtep 203.0.113.2 is IPv4",
       "line[name='line1']/next-hop"},
      {"InnerMacMulticast",
       edited({{"line-mode: active-backup\n",
                "line-mode: active-backup\n    inner-mac: 03:00:00:00:00:01\n"}}),
       32, 16, "inner-mac 03:00:00:00:00:01 is not a unicast address (the multicast bit is set)",
       "peer[name='site-b']/inner-mac"},
      {"SlaLossNotAPercentage",
       edited({{"line-mode: active-backup\n",
                "line-mode: active-backup\n    sla:\n      max-loss: 1\n"}}),
       33, 0, "percentage such as 1% or 0.5%", "peer[name='site-b']/sla/max-loss"},
      {"SlaWithoutALimit",
       edited({{"line-mode: active-backup\n",
                "line-mode: active-backup\n    sla:\n      hold-s: 10\n"}}),
       33, 7, "sla of peer 'site-b' sets no limit: give max-loss, max-rtt-ms or max-jitter-ms",
       "peer[name='site-b']/sla"},
      {"SlaWithoutQualityProbes",
       edited({{"line-mode: active-backup\n",
                "line-mode: active-backup\n    sla:\n      max-loss: 1%\n"},
               {"logging:\n", "path-mtu:\n  quality-interval-ms: 0\nlogging:\n"}}),
       33, 7,
       "sla of peer 'site-b' needs line quality probes at least every 500 ms "
       "(path-mtu.quality-interval-ms is 0)",
       "peer[name='site-b']/sla"},
      // --- gateways of one site
      {"SiteNamesAPeerOfAnotherSite",
       edited({{"line-mode: active-backup\n", "line-mode: active-backup\n    site: site-c\n"},
               {"bgp:\n",
                "  - name: site-c\n    site: other\n    lines:\n      - name: line1\n"
                "        port: wan0\n        local-vtep: 203.0.113.1\n"
                "        remote-vtep: 203.0.113.3\nbgp:\n"}}),
       32, 11,
       "site 'site-c' is the name of peer 'site-c', whose site is 'other'; give both the same "
       "site",
       "peer[name='site-b']/site"},
      {"SiteWithNinePeers", ninePeersOfOneSite(), 95, 11,
       "site 'pair' has more than 8 peers (gateways)", "peer[name='g9']/site"},
      {"InnerMacZero",
       edited({{"line-mode: active-backup\n",
                "line-mode: active-backup\n    inner-mac: \"00:00:00:00:00:00\"\n"}}),
       32, 16, "(it is all zeros)", "peer[name='site-b']/inner-mac"},
      // --- a static route's next hop
      {"RouteNextHopNotOnLanSubnet", edited({{"peer: site-b", "next-hop: 10.9.0.1"}}), 25, 19,
       "next-hop 10.9.0.1 is not on the subnet of a lan port of tenant 'blue' (lan0: 10.1.0.1/24)",
       "routes/route[prefix='10.2.0.0/16']/next-hop"},
      {"RouteNextHopOfTenantWithoutLanPort",
       edited({{"    vni: 1002\n",
                "    vni: 1002\n    routes:\n      - prefix: 10.8.0.0/16\n        next-hop: "
                "10.1.0.254\n"}}),
       30, 19,
       "next-hop 10.1.0.254 is not on the subnet of a lan port of tenant 'red' (the tenant has "
       "no lan port)",
       "tenant[name='red']/routes/route[prefix='10.8.0.0/16']/next-hop"},
      // --- BGP sessions
      {"PeerAsnIsOwnAsn", edited({{"asn: 65002", "asn: 65001"}}), 30, 10,
       "peer 'site-b' has this site's own AS number 65001 (bgp.asn); sessions to peer sites "
       "are eBGP",
       "peer[name='site-b']/asn"},
      {"BgpNeighborOnWanPort", edited({{"    hold: 9\n", withNeighbor("10.1.0.254", "wan0")}}), 47,
       13, "neighbor 10.1.0.254 uses port 'wan0' whose role is wan",
       "/mcgw:bgp/neighbors/neighbor[address='10.1.0.254']/port"},
      {"BgpNeighborNotOnLanSubnet", edited({{"    hold: 9\n", withNeighbor("10.9.0.254", "lan0")}}),
       45, 16,
       "neighbor 10.9.0.254 is not on a subnet of port 'lan0' (port 'lan0' has 10.1.0.1/24)",
       "neighbor[address='10.9.0.254']/address"},
      {"BgpNeighborIsOwnAddress", edited({{"    hold: 9\n", withNeighbor("10.1.0.1", "lan0")}}), 45,
       16, "neighbor 10.1.0.1 is this gateway's own address on port 'lan0'",
       "neighbor[address='10.1.0.1']/address"},
      {"BgpNeighborWithoutPort",
       edited({{"    hold: 9\n",
                "    hold: 9\n  neighbors:\n    - address: 10.1.0.254\n      asn: 64512\n"}}),
       45, 0, "port", "neighbor[address='10.1.0.254']"},
      {"BgpNeighborInOwnAs",
       edited({{"    hold: 9\n",
                "    hold: 9\n  neighbors:\n    - address: 10.1.0.254\n      asn: "
                "65001\n      port: lan0\n"}}),
       46, 12, "mcgw runs eBGP only", "neighbor[address='10.1.0.254']/asn"},
      {"BgpNeighborBfdIntervalOutOfRange",
       edited(
           {{"    hold: 9\n", withNeighbor("10.1.0.254", "lan0", "      bfd-interval-ms: 5\n")}}),
       48, 24, "10..60000", "neighbor[address='10.1.0.254']/bfd-interval-ms"},
      // --- line shaping (peers[].lines[].capacity, queue-ms) and priority
      {"LineCapacityBelowOneMegabit",
       edited(
           {{"remote-vtep: 203.0.113.2\n", "remote-vtep: 203.0.113.2\n        capacity: 500k\n"}}),
       38, 19, "capacity 500k is not within 1M..250G (the lines the shaper serves)",
       "/mcgw:peers/peer[name='site-b']/lines/line[name='line1']/capacity"},
      {"LineCapacityAboveTheShaper",
       edited(
           {{"remote-vtep: 203.0.113.2\n", "remote-vtep: 203.0.113.2\n        capacity: 251G\n"}}),
       38, 19, "capacity 251G is not within 1M..250G (the lines the shaper serves)",
       "/mcgw:peers/peer[name='site-b']/lines/line[name='line1']/capacity"},
      {"LineCapacityUnknownUnit",
       edited({{"remote-vtep: 203.0.113.2\n", "remote-vtep: 203.0.113.2\n        capacity: 1X\n"}}),
       38, 19, "a rate in bits per second such as 50M, 2.5G or 40G, found \"1X\"",
       "line[name='line1']/capacity"},
      {"LineQueueMsZero",
       edited({{"remote-vtep: 203.0.113.2\n",
                "remote-vtep: 203.0.113.2\n        capacity: 100M\n        queue-ms: 0\n"}}),
       39, 19, "expected an integer in 1..1000, found \"0\"", "line[name='line1']/queue-ms"},
      {"LineQueueMsTooLong",
       edited({{"remote-vtep: 203.0.113.2\n",
                "remote-vtep: 203.0.113.2\n        capacity: 100M\n        queue-ms: 1001\n"}}),
       39, 19, "expected an integer in 1..1000, found \"1001\"", "line[name='line1']/queue-ms"},
      {"TenantPriorityEight",
       edited({{"    vni: 1001\n", "    vni: 1001\n    bandwidth:\n      priority: 8\n"}}), 24, 17,
       "expected an integer in 0..7, found \"8\"", "tenant[name='blue']/bandwidth/priority"},
      {"LineBfdMultiplierOutOfRange",
       edited({{"remote-vtep: 203.0.113.2\n",
                "remote-vtep: 203.0.113.2\n        bfd-multiplier: 1\n"}}),
       38, 25, "2..255", "line[name='line1']/bfd-multiplier"},
      {"FrrConfigDirRelative",
       edited({{"    hold: 9\n", "    hold: 9\n  frr:\n    config-dir: etc/frr\n"}}), 45, 17,
       "expected an absolute path such as /etc/frr, found \"etc/frr\"", "/mcgw:bgp/frr/config-dir"},
      {"FpmStaleTimeOutOfRange",
       edited({{"    hold: 9\n", "    hold: 9\n  fpm:\n    stale-time: 0\n"}}), 45, 17, "1..3600",
       "/mcgw:bgp/fpm/stale-time"},
      {"FpmPortZero", edited({{"    hold: 9\n", "    hold: 9\n  fpm:\n    port: 0\n"}}), 45, 11,
       "1..65535", "/mcgw:bgp/fpm/port"},
      // --- fast path
      {"IdleSleepOutOfRange",
       edited({{"logging:\n", "fast-path:\n  idle-sleep-max-us: 100001\nlogging:\n"}}), 64, 22,
       "expected an integer in 0..100000, found \"100001\"", "/mcgw:fast-path/idle-sleep-max-us"},
      // --- path MTU
      {"ProbePortIsTheVxlanPort",
       edited({{"logging:\n", "path-mtu:\n  probe-port: 4789\nlogging:\n"}}), 64, 15,
       "expected an integer in 1..4788 or 4792..6080 or 6082..65535, found \"4789\"",
       "/mcgw:path-mtu/probe-port"},
      {"QualityIntervalBelowTheMinimum",
       edited({{"logging:\n", "path-mtu:\n  quality-interval-ms: 10\nlogging:\n"}}), 64, 24,
       "expected an integer in 0 or 20..10000, found \"10\"", "/mcgw:path-mtu/quality-interval-ms"},
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

// Prefixes of the two families never overlap, whatever their bytes (a00::/8
// starts with the byte of 10.0.0.0/8).
TEST(BrokenConfigsTest, PrefixesOfBothFamiliesDoNotOverlap) {
  LoadResult result =
      loadConfigText(edited({{"[10.3.0.0/16]", "[\"a00::/8\", 10.3.0.0/16]"}}), kFile);
  ASSERT_TRUE(result.ok()) << describe(result.error());
}

TEST(BrokenConfigsTest, AtLeastThirtyCases) {
  EXPECT_GE(brokenCases().size(), 30u);
}

// A line's capacity below the shaper's smallest: one error, printed as
// file:line:column: path: message.
TEST(BrokenConfigsTest, LineCapacityErrorPrintsWhereAndWhy) {
  LoadResult result = loadConfigText(
      edited(
          {{"remote-vtep: 203.0.113.2\n", "remote-vtep: 203.0.113.2\n        capacity: 500k\n"}}),
      kFile);
  ASSERT_FALSE(result.ok());
  ASSERT_EQ(result.error().size(), 1u) << describe(result.error());
  EXPECT_EQ(result.error()[0].toString(),
            "broken.yaml:38:19: /mcgw:peers/peer[name='site-b']/lines/line[name='line1']/capacity: "
            "capacity 500k is not within 1M..250G (the lines the shaper serves)");
  // 1M exactly is the smallest accepted.
  LoadResult ok = loadConfigText(
      edited({{"remote-vtep: 203.0.113.2\n", "remote-vtep: 203.0.113.2\n        capacity: 1M\n"}}),
      kFile);
  ASSERT_TRUE(ok.ok()) << describe(ok.error());
  EXPECT_EQ((*ok)->peers[0].lines[0].capacity, "1M");
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
  EXPECT_EQ(errors[2].line, 64);
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
  EXPECT_EQ(errors[1].line, 36);
  EXPECT_EQ(errors[2].line, 43);
}

}  // namespace
}  // namespace mcgw::config
