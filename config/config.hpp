// The typed, immutable configuration of one gateway.  Built only by the loader
// (config/loader.hpp) from a file that passed every check; shared between
// threads as std::shared_ptr<const Config>.  Defaults live in the YANG model,
// not here: every field is filled from the validated data tree.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config/net.hpp"

namespace mcgw::config {

struct NodeConfig {
  std::string name;
  std::string site;
  std::string description;
  bool operator==(const NodeConfig&) const = default;
};

struct EalConfig {
  uint16_t main_lcore = 0;
  std::vector<uint16_t> workers;
  bool hugepages = true;
  uint32_t memory_mb = 0;
  std::string file_prefix;
  uint32_t mbufs = 0;
  std::vector<std::string> extra_args;
  bool operator==(const EalConfig&) const = default;
};

enum class PortRole { kLan, kWan };

// A neighbour entry written in the config: the MAC of a LAN next hop, a LAN
// host or an underlay next hop.  The kernel resolves neighbours by ARP/ND;
// a static entry wins over what it learned for the same address.
struct StaticNeighbor {
  IpAddress address;
  MacAddress mac;
  bool operator==(const StaticNeighbor&) const = default;
};

struct PortConfig {
  std::string name;
  PortRole role = PortRole::kLan;
  std::string pci;   // set for a PCI device
  std::string vdev;  // set for a virtual device: "net_null0,..."
  uint16_t mtu = 0;
  uint16_t rx_queues = 1;
  uint16_t rx_descriptors = 0;
  uint16_t tx_descriptors = 0;
  std::vector<InterfaceAddress> addresses;
  // LAN ports: the tenant whose traffic the port carries (filled in by the
  // loader when the config has a single tenant).  Empty on WAN ports.
  std::string tenant;
  std::vector<StaticNeighbor> neighbors;

  // The DPDK device name: the PCI address as DPDK spells it (0000:00:08.0,
  // lower case), or the vdev name before the first ','.
  std::string deviceName() const;
  // The kernel interface of an af_packet / af_xdp vdev ("...,iface=eth1"), or "".
  std::string kernelInterface() const;
  bool operator==(const PortConfig&) const = default;
};

struct StaticRoute {
  IpPrefix prefix;
  std::string peer;                   // tunnel towards this peer, or
  std::optional<IpAddress> next_hop;  // a next hop on a LAN port
  bool operator==(const StaticRoute&) const = default;
};

// A tenant's policy rule (tenants[].policy.rule, docs/policy.md).  The
// addresses are prefixes or address-plan objects ("vpc NAME", "site NAME",
// "cloud NAME"), resolved when the tables are built.
struct PolicyRule {
  std::string name;
  bool deny = false;
  std::vector<std::string> source, destination;  // empty: any
  std::optional<uint8_t> protocol;               // nullopt: any
  uint16_t sport_lo = 0, sport_hi = 65535;
  uint16_t dport_lo = 0, dport_hi = 65535;
  std::optional<uint8_t> dscp;
  bool operator==(const PolicyRule&) const = default;
};

// A policy rule's protocol as the config spells it: "any" → nullopt, a
// name (tcp, udp, icmp, icmpv6, sctp, gre, esp) or a number.  A number
// above 255 also gives nullopt (the semantic checks refuse it).
std::optional<uint8_t> protocolNumber(std::string_view text);
// Its name for display: "tcp", or the number ("47" is "gre").
std::string protocolName(uint8_t protocol);
// A port range as the config spells it: "443" or "8000-8100"; "" is
// 0..65535.  Values above 65535 become 65535 (the semantic checks refuse
// them, and a range whose low end is above its high end).
std::pair<uint16_t, uint16_t> portRange(std::string_view text);

// Policy rules of all tenants together (each has a counter in the fast path).
inline constexpr size_t kMaxPolicyRules = 16384;

struct TenantPolicy {
  bool default_deny = false;
  std::vector<PolicyRule> rules;  // in order: the first match decides
  bool operator==(const TenantPolicy&) const = default;
};

// Meter rates as the config spells them (tenants[].bandwidth, docs/policy.md):
// bits per second and bytes, parsed by policy::parseRate / parseSize.
struct MeterRates {
  std::string rate, peak_rate, burst, peak_burst;  // "" = default
  bool operator==(const MeterRates&) const = default;
};

struct BandwidthLimit {
  std::string line;  // "PEER/LINE", or "PEER" for each of its lines
  MeterRates rates;
  bool operator==(const BandwidthLimit&) const = default;
};

struct BandwidthWindow {
  std::string name;
  std::string line;
  uint16_t start_minute = 0, end_minute = 0;  // of the day, UTC; end exclusive
  MeterRates rates;
  bool operator==(const BandwidthWindow&) const = default;
};

struct TenantBandwidth {
  std::optional<uint8_t> yellow_dscp;
  uint8_t priority = 0;  // on lines with a capacity: 7 leaves first, 0 last
  std::vector<BandwidthLimit> limits;
  std::vector<BandwidthWindow> windows;
  bool operator==(const TenantBandwidth&) const = default;
};

struct TenantConfig {
  std::string name;
  uint32_t vni = 0;
  std::vector<StaticRoute> routes;
  TenantPolicy policy;
  TenantBandwidth bandwidth;
  bool operator==(const TenantConfig&) const = default;
};

enum class Encapsulation { kVxlan, kGeneve };
enum class LineMode { kActiveBackup, kEcmp };

struct MssClamp {
  enum class Mode { kAuto, kOff, kFixed } mode = Mode::kAuto;
  uint16_t value = 0;  // for kFixed
  bool operator==(const MssClamp&) const = default;
};

struct LineConfig {
  std::string name;
  std::string port;
  IpAddress local_vtep;
  IpAddress remote_vtep;
  uint16_t mtu = 0;
  uint8_t outer_ttl = 64;
  // The underlay next hop when the remote VTEP is not on the port's subnet.
  std::optional<IpAddress> next_hop;
  // Overrides of bgp.bfd for this line's BGP session.
  std::optional<uint16_t> bfd_interval_ms;
  std::optional<uint8_t> bfd_multiplier;
  // "encryption: none": clear text even when the peer's lines are encrypted.
  bool clear_text = false;
  // The line's rate when shaped (a rate text as in tenants[].bandwidth;
  // empty: not shaped) and the queue per priority in milliseconds at it.
  std::string capacity;
  uint16_t queue_ms = 50;
  bool operator==(const LineConfig&) const = default;
};

// ESP on a peer's lines (peers[].encryption, docs/encryption.md).
struct EncryptionConfig {
  bool udp_encapsulation = false;  // RFC 3948, port 4500
  uint32_t replay_window = 1024;
  uint32_t lifetime_s = 3600;
  uint64_t lifetime_bytes = uint64_t{1} << 40;
  std::string static_keys;  // a key file; empty: TLS key agreement
  bool operator==(const EncryptionConfig&) const = default;
};

// How keys are agreed (the top-level encryption section).
struct KeyAgreementConfig {
  std::string ca = "/etc/mcgw/tls/ca.pem";
  std::string certificate = "/etc/mcgw/tls/gateway.pem";
  std::string private_key = "/etc/mcgw/tls/gateway.key";
  uint16_t port = 4794;
  bool operator==(const KeyAgreementConfig&) const = default;
};

// Gateways (peers) of one remote site (`peers[].site`).
inline constexpr size_t kMaxPeersPerSite = 8;

// SLA steering of a peer's lines (docs/architecture.md, "SLA steering"): a line
// whose 10 s quality breaks a limit is taken out of use until it has kept
// every limit for hold_s.
struct SlaConfig {
  std::optional<double> max_loss;  // a ratio (the file's "1%": 0.01)
  std::optional<uint32_t> max_rtt_ms;
  std::optional<uint32_t> max_jitter_ms;
  uint32_t hold_s = 30;
  bool operator==(const SlaConfig&) const = default;
};

struct PeerConfig {
  std::string name;
  std::optional<uint32_t> asn;
  // The remote site this gateway belongs to ("site"; empty: the peer's own
  // name).  Peers of one site stand in for each other when all lines to
  // one of them are down (docs/failover.md, "The return path").
  std::string site;
  Encapsulation encapsulation = Encapsulation::kVxlan;
  MssClamp mss_clamp;
  bool mss_insert = false;
  LineMode line_mode = LineMode::kActiveBackup;
  std::vector<std::string> tenants;  // empty: all
  std::vector<LineConfig> lines;
  // Destination MAC of inner Ethernet frames: what the peer's VTEP device
  // expects (a Linux VXLAN device's own MAC).  mcgw peers accept any.
  MacAddress inner_mac{{0x02, 0, 0, 0, 0, 0x01}};
  std::optional<SlaConfig> sla;                // none: no SLA steering
  std::optional<EncryptionConfig> encryption;  // none: clear text
  // Whether line `l` (one of `lines`) is encrypted.
  bool encrypts(const LineConfig& l) const { return encryption && !l.clear_text; }
  const std::string& siteName() const { return site.empty() ? name : site; }
  bool operator==(const PeerConfig&) const = default;
};

struct BgpNeighbor {
  IpAddress address;
  uint32_t asn = 0;
  std::string port;  // a LAN port
  // The site whose plan ranges the neighbour may announce (node.site when
  // the file does not say).
  std::string site;
  bool bfd = true;
  // Overrides of bgp.bfd and bgp.maximum-prefix for this neighbour.
  std::optional<uint16_t> bfd_interval_ms;
  std::optional<uint8_t> bfd_multiplier;
  std::optional<uint32_t> maximum_prefix;
  bool operator==(const BgpNeighbor&) const = default;
};

struct BgpConfig {
  bool enabled = false;
  uint32_t asn = 0;
  IpAddress router_id;
  uint16_t keepalive_s = 0;
  uint16_t hold_s = 0;
  bool bfd_enabled = true;
  uint16_t bfd_interval_ms = 0;
  uint8_t bfd_multiplier = 0;
  uint32_t maximum_prefix = 0;  // per session, unless a neighbour overrides it
  bool graceful_restart = true;
  std::vector<BgpNeighbor> neighbors;
  IpAddress fpm_address;
  uint16_t fpm_port = 0;
  // Routes outlive a dropped FPM connection by this long; those zebra has
  // not sent again by then are swept.
  uint32_t fpm_stale_time_s = 0;
  std::string frr_config_dir;  // where frr.conf is written
  std::string frr_run_dir;     // FRR's vty sockets and bfdd.sock
  bool operator==(const BgpConfig&) const = default;
};

// A tracked object of a VRRP group (`vrrp[].track`): while it is down the
// group's priority is lowered by its weight.
struct VrrpTrack {
  enum class Kind { kPort, kPeer, kBgp, kFpm };
  Kind kind = Kind::kPort;
  std::string name;    // port or peer name; the BGP neighbour's address as written
  std::string object;  // as configured: "port lan0", "fpm"
  uint8_t weight = 50;
  bool operator==(const VrrpTrack&) const = default;
};

enum class VrrpBgpBackup { kPrepend, kWithdraw, kNone };

struct VrrpGroupConfig {
  uint8_t vrid = 0;
  std::string port;
  uint8_t priority = 100;
  uint16_t advert_interval_ms = 0;
  bool preempt = true;
  uint32_t preempt_delay_ms = 0;
  bool accept_mode = false;
  std::vector<IpAddress> virtual_addresses;
  std::vector<IpAddress> unicast_peers;
  std::optional<IpAddress> source_address;
  uint32_t announce_interval_ms = 10000;
  std::vector<VrrpTrack> track;
  std::string notify;  // absolute path, empty: none
  uint32_t notify_timeout_ms = 5000;
  std::string active_command;
  uint32_t active_command_interval_ms = 30000;
  VrrpBgpBackup bgp_backup = VrrpBgpBackup::kPrepend;
  uint8_t bgp_prepend = 3;
  // The group's family: that of its virtual addresses (one per group).
  bool ipv6() const {
    return !virtual_addresses.empty() && virtual_addresses.front().family == Family::V6;
  }
  bool operator==(const VrrpGroupConfig&) const = default;
};

struct VpcConfig {
  std::string cloud;
  std::string region;
  std::string name;
  std::vector<IpPrefix> prefixes;
  std::string tenant;
  std::string site;
  bool operator==(const VpcConfig&) const = default;
};

struct PoolConfig {
  std::string name;
  std::vector<IpPrefix> prefixes;
  uint8_t allocation_length = 0;
  // The clouds whose VPCs the pool serves (address-plan.clouds names);
  // empty: any cloud.
  std::vector<std::string> clouds;
  bool operator==(const PoolConfig&) const = default;
};

struct MappedRange {
  std::string name;
  IpPrefix real;
  IpPrefix mapped;
  std::string site;
  bool operator==(const MappedRange&) const = default;
};

// A range the operator keeps out of the plan (address-plan.reserved): no
// VPC prefix or mapped range may overlap it.
struct ReservedRange {
  std::string name;
  IpPrefix prefix;
  bool operator==(const ReservedRange&) const = default;
};

struct AddressPlanConfig {
  enum class Store { kFile, kEtcd } store = Store::kFile;
  std::string store_path;  // the file store's YAML file
  // etcd: client URLs, all http:// or all https://.
  std::vector<std::string> etcd_endpoints;
  // TLS to etcd (https endpoints): the CA bundle that verifies the server
  // ("" = the system's CAs) and the client certificate and its key (both
  // or neither).
  std::string etcd_ca_file;
  std::string etcd_cert_file;
  std::string etcd_key_file;
  std::string etcd_prefix;  // the plan's keys start with it; ends in '/'
  std::vector<PoolConfig> pools;
  std::vector<VpcConfig> vpcs;  // flattened cloud/region/vpc
  std::vector<MappedRange> mapped_ranges;
  std::vector<ReservedRange> reserved;
  bool operator==(const AddressPlanConfig&) const = default;
};

// Fast-path settings that a reload may change.
struct FastPathConfig {
  // An idle worker pauses, then sleeps; this bounds one sleep (0: never sleep).
  uint32_t idle_sleep_max_us = 200;
  bool operator==(const FastPathConfig&) const = default;
};

// How lines' underlay path MTUs are learned (ICMP, probes, aging).
struct PathMtuConfig {
  bool probe = true;
  uint32_t probe_interval_s = 1;
  uint32_t probe_timeout_ms = 1000;
  uint32_t aging_s = 600;  // RFC 1191 / RFC 8201: 10 minutes
  uint16_t probe_port = 4788;
  // Line quality probes (RTT, jitter, loss) per line; 0: none.
  uint32_t quality_interval_ms = 100;
  bool operator==(const PathMtuConfig&) const = default;
};

// Prometheus metrics over HTTP (docs/monitoring.md).
// Usage accounting (docs/policy.md).
struct UsageConfig {
  std::string directory;  // "" = <state dir>/usage
  uint16_t interval_s = 60;
  uint16_t retention_days = 31;
  bool operator==(const UsageConfig&) const = default;
};

struct MetricsConfig {
  // "ADDRESS:PORT" or "[IPV6]:PORT" of the /metrics endpoint; empty: off.
  std::string listen;
  bool operator==(const MetricsConfig&) const = default;
};

// Flow audit: sampled flow records exported over IPFIX (docs/monitoring.md).
struct FlowCollector {
  IpAddress address;
  uint16_t port = 4739;
  bool operator==(const FlowCollector&) const = default;
};

struct FlowAuditConfig {
  uint32_t sampling = 0;  // 1-in-N of the packets routed into or out of a tunnel; 0: off
  std::vector<FlowCollector> collectors;
  uint32_t active_timeout_s = 60;    // a flow still active is exported this often
  uint32_t idle_timeout_s = 15;      // a flow silent this long is exported and ends
  uint32_t template_refresh_s = 60;  // IPFIX templates sent again (RFC 7011 8.1, UDP)
  bool enabled() const { return sampling != 0; }
  bool operator==(const FlowAuditConfig&) const = default;
};

// The API over HTTPS with mutual TLS (api.https, docs/policy.md).
struct HttpsApiConfig {
  std::string listen;  // "" = off
  std::string ca, certificate, private_key;
  std::vector<std::string> allowed_clients;
  bool operator==(const HttpsApiConfig&) const = default;
};

struct ApiConfig {
  std::string socket;
  std::string group;
  HttpsApiConfig https;
  bool operator==(const ApiConfig&) const = default;
};

struct LoggingConfig {
  std::string level;
  bool operator==(const LoggingConfig&) const = default;
};

// What mcgwd does when its config file is invalid at start.
struct StartupConfig {
  bool use_last_good = true;
  bool operator==(const StartupConfig&) const = default;
};

// One problem in a config file.  line and column are 1-based (0: unknown).
struct ConfigError {
  std::string file;
  int line = 0;
  int column = 0;
  std::string path;     // YANG data path such as /mcgw:ports/port[name='wan0']/mtu
  std::string message;  // what was expected and what was found

  // "file:line:column: path: message", the form every front-end prints.
  std::string toString() const;
};

using ConfigErrors = std::vector<ConfigError>;

struct Config {
  std::string source;    // the file it was loaded from
  std::string checksum;  // sha256 of the file's bytes, hex
  NodeConfig node;
  EalConfig eal;
  std::vector<PortConfig> ports;
  std::vector<TenantConfig> tenants;
  std::vector<PeerConfig> peers;
  BgpConfig bgp;
  std::vector<VrrpGroupConfig> vrrp_groups;
  AddressPlanConfig address_plan;
  FastPathConfig fast_path;
  PathMtuConfig path_mtu;
  ApiConfig api;
  MetricsConfig metrics;
  UsageConfig usage;
  KeyAgreementConfig encryption;
  FlowAuditConfig flow_audit;
  LoggingConfig logging;
  StartupConfig startup;
  // What the loader found doubtful but not wrong (a VPC outside every
  // pool), sorted by line; in the same form as errors.  Not part of the
  // configuration: two configs that differ only here are the same.
  ConfigErrors warnings;

  const PortConfig* findPort(const std::string& name) const;
  const TenantConfig* findTenant(const std::string& name) const;
  const PeerConfig* findPeer(const std::string& name) const;
};

using ConfigPtr = std::shared_ptr<const Config>;

// Where a mapped range's real range lives: its `site`, or when it names none
// the site of the VPC whose prefix is its real range ("" when none is).
std::string siteOf(const Config& config, const MappedRange& m);

// Ranges no VPC prefix or mapped range may use, whatever the config says.
struct BuiltinReserved {
  const char* prefix;
  const char* why;  // "link-local", "loopback", "multicast"
};
inline constexpr BuiltinReserved kBuiltinReserved[] = {
    {"169.254.0.0/16", "link-local"}, {"fe80::/10", "link-local"},  {"127.0.0.0/8", "loopback"},
    {"::1/128", "loopback"},          {"224.0.0.0/4", "multicast"}, {"ff00::/8", "multicast"}};
// The cloud's full name when a cloud of that address-plan name keeps
// 100.64.0.0/10 for its own services (aliyun: Alibaba Cloud; huaweicloud or
// huawei: Huawei Cloud), else nullptr (docs/configuration.md cites them).
const char* cloudReserving100_64(std::string_view cloud);

const char* toString(PortRole r);
const char* toString(Encapsulation e);
const char* toString(LineMode m);
std::string toString(const MssClamp& m);

// metrics.listen split into its address and TCP port; nullopt when it is
// not "IPV4:PORT" or "[IPV6]:PORT" with a port from 1 to 65535.
struct ListenAddress {
  IpAddress address;
  uint16_t port = 0;
};
std::optional<ListenAddress> parseListen(std::string_view text);

}  // namespace mcgw::config
