// The fast path end to end in one process, on real DPDK ports: net_ring
// devices made from rte_rings (rte_eth_from_rings), one LAN and two WAN.  The
// test enqueues mbufs into a port's RX ring and dequeues what the worker
// transmitted from its TX ring.  Tables come from YAML through the loader and
// TablesBuilder; one Dataplane worker thread forwards (EAL --no-huge).
//
// Cases: active-backup failover and failback, ECMP flow stickiness across a
// line failure, route-table swaps under traffic, 100,000 route changes
// applied in place under traffic, a failed build that leaves nothing behind,
// the idle worker's back-off, and ICMP time exceeded for an expired TTL.
#include <gtest/gtest.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_eth_ring.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_ring.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "config/loader.hpp"
#include "dataplane/engine/dataplane.hpp"
#include "dataplane/engine/tables.hpp"
#include "dataplane/proto/checksum.hpp"
#include "dataplane/proto/ethernet.hpp"
#include "dataplane/proto/icmp.hpp"
#include "dataplane/proto/ipv4.hpp"
#include "dataplane/proto/udp.hpp"
#include "dataplane/proto/vxlan.hpp"
#include "tests/support/ring_port.hpp"

namespace mcgw::engine {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using Ip4 = std::array<uint8_t, 4>;

constexpr unsigned kRxRingSize = 4096;  // what the test enqueues (capacity 4095)
constexpr unsigned kTxRingSize = 8192;  // what the worker transmits
constexpr unsigned kMbufs = 16383;
constexpr unsigned kWorkers = 1;  // one TX queue per worker on every port
constexpr uint32_t kVni = 5001;
constexpr uint32_t kMagic = 0x6d636777;  // "mcgw": marks the test's payloads

constexpr Mac kHostMac = {0x02, 0, 0, 0, 0x01, 0x10};        // 10.1.0.10, lan0's neighbour
constexpr Mac kWan0RouterMac = {0x02, 0, 0, 0, 0x02, 0xfe};  // 203.0.113.254
constexpr Mac kWan1RouterMac = {0x02, 0, 0, 0, 0x03, 0xfe};  // 198.51.100.254
constexpr Mac kInnerMacB = {0x02, 0, 0, 0, 0x0b, 0x01};
constexpr Mac kInnerMacC = {0x02, 0, 0, 0, 0x0c, 0x01};

constexpr Ip4 kHost = {10, 1, 0, 10};
constexpr Ip4 kLanAddress = {10, 1, 0, 1};
constexpr Ip4 kWan0Address = {203, 0, 113, 1};
constexpr Ip4 kWan1Address = {198, 51, 100, 1};
constexpr Ip4 kRemoteB1 = {192, 0, 2, 1};  // peer b, line over wan0
constexpr Ip4 kRemoteB2 = {192, 0, 2, 2};  // peer b, line over wan1
constexpr Ip4 kRemoteC1 = {192, 0, 2, 3};  // peer c, line over wan1

proto::Bytes bytes(const void* p, size_t n) {
  return proto::Bytes(static_cast<const std::byte*>(p), n);
}

// ------------------------------------------------------------- EAL and ports

struct RingPort {
  std::string name;  // the config's port name
  uint16_t id = 0;
  rte_ring* rx = nullptr;  // the test enqueues, the port receives
  rte_ring* tx = nullptr;  // the port transmits, the test dequeues
  Mac mac{};
};

void freeRing(rte_ring* r) {
  if (!r) {
    return;
  }
  void* objs[64];
  unsigned n;
  while ((n = rte_ring_dequeue_burst(r, objs, 64, nullptr)) > 0) {
    rte_pktmbuf_free_bulk(reinterpret_cast<rte_mbuf**>(objs), n);
  }
}

class RingEnv : public ::testing::Environment {
 public:
  void SetUp() override {
    // Each tenant's FIB takes ~130 MiB (rte_lpm + rte_lpm6) and a route
    // change holds two of them for a moment: 1 GiB leaves ample room.
    std::string prefix = "ringtest" + std::to_string(::getpid());
    std::vector<std::string> args{"dataplane_ring_test",
                                  "-l",
                                  "0",
                                  "--no-huge",
                                  "--no-shconf",
                                  "-m",
                                  "1024",
                                  "--no-pci",
                                  "--file-prefix",
                                  prefix,
                                  "--log-level=*:error"};
    std::vector<char*> argv;
    for (auto& a : args) {
      argv.push_back(a.data());
    }
    ASSERT_GE(rte_eal_init(static_cast<int>(argv.size()), argv.data()), 0)
        << rte_strerror(rte_errno);
    pool = rte_pktmbuf_pool_create("ringtest_pool", kMbufs, 256, 0, RTE_MBUF_DEFAULT_BUF_SIZE,
                                   static_cast<int>(rte_socket_id()));
    ASSERT_NE(pool, nullptr) << rte_strerror(rte_errno);
    for (const char* name : {"lan0", "wan0", "wan1"}) {
      ASSERT_NO_FATAL_FAILURE(addPort(name));
    }
  }

  void TearDown() override {
    for (auto& p : ports) {
      rte_eth_dev_stop(p.id);
      rte_eth_dev_close(p.id);
      freeRing(p.rx);
      freeRing(p.tx);
      rte_ring_free(p.rx);
      rte_ring_free(p.tx);
    }
    ports.clear();
    rte_mempool_free(pool);
    rte_eal_cleanup();
  }

  const RingPort& port(const std::string& name) const {
    for (const auto& p : ports) {
      if (p.name == name) {
        return p;
      }
    }
    ADD_FAILURE() << "no port " << name;
    return ports.front();
  }

  std::map<std::string, OpenPort> openPorts() const {
    std::map<std::string, OpenPort> m;
    for (const auto& p : ports) {
      m[p.name] = OpenPort{p.id, p.mac, 1};
    }
    return m;
  }

  rte_mempool* pool = nullptr;
  std::vector<RingPort> ports;

 private:
  void addPort(const std::string& name) {
    RingPort p;
    p.name = name;
    // One RX ring; a TX ring for each worker's queue (the pipeline transmits
    // on queue = worker index): the same ring for all, multi-producer so
    // that several workers could share it.
    const test::RingPair pair = test::ringPair(name, pool, kWorkers, kRxRingSize, kTxRingSize);
    ASSERT_TRUE(pair.rx && pair.tx);
    p.id = pair.id;
    p.rx = pair.rx;
    p.tx = pair.tx;
    // net_ring ports all have the MAC 00:00:00:00:00:00 and cannot change it
    // (mac_addr_set: ENOTSUP).  The fast path knows a port's MAC only from
    // OpenPort, so the test gives each port its own there, as if the device
    // had it.
    rte_ether_addr a{};
    ASSERT_EQ(rte_eth_macaddr_get(p.id, &a), 0);
    std::copy(std::begin(a.addr_bytes), std::end(a.addr_bytes), p.mac.begin());
    if (p.mac == Mac{}) {
      p.mac = {0x02, 0x00, 0x5e, 0x00, 0x00, static_cast<uint8_t>(0x10 + ports.size())};
    }
    for (const auto& other : ports) {
      ASSERT_NE(other.mac, p.mac) << "ports " << other.name << " and " << name
                                  << " share a MAC address";
    }
    ports.push_back(p);
  }
};

RingEnv* const env = static_cast<RingEnv*>(::testing::AddGlobalTestEnvironment(new RingEnv));

// ------------------------------------------------------------------ configs

// Ports: lan0 (10.1.0.1/24, host 10.1.0.10), wan0 (203.0.113.1/24, router
// .254), wan1 (198.51.100.1/24, router .254).  Tenant blue, VNI 5001.
std::string configYaml(const std::string& routes, const std::string& peers,
                       uint32_t idle_sleep_max_us = 200) {
  return R"(node:
  name: gw-test
  site: lab
eal:
  hugepages: false
ports:
  - name: lan0
    role: lan
    vdev: net_ring0
    addresses: [10.1.0.1/24]
    tenant: blue
    neighbors:
      - address: 10.1.0.10
        mac: 02:00:00:00:01:10
  - name: wan0
    role: wan
    vdev: net_ring1
    addresses: [203.0.113.1/24]
    neighbors:
      - address: 203.0.113.254
        mac: 02:00:00:00:02:fe
  - name: wan1
    role: wan
    vdev: net_ring2
    addresses: [198.51.100.1/24]
    neighbors:
      - address: 198.51.100.254
        mac: 02:00:00:00:03:fe
tenants:
  - name: blue
    vni: 5001
    routes:
)" + routes +
         "peers:\n" + peers +
         "fast-path:\n  idle-sleep-max-us: " + std::to_string(idle_sleep_max_us) + "\n";
}

std::string route(const std::string& prefix, const std::string& peer) {
  return "      - prefix: " + prefix + "\n        peer: " + peer + "\n";
}

// Peer b over two lines: b1 on wan0 (preferred), b2 on wan1.
std::string peerB2Lines(const std::string& mode) {
  return R"(  - name: b
    line-mode: )" +
         mode + R"(
    inner-mac: 02:00:00:00:0b:01
    lines:
      - name: b1
        port: wan0
        local-vtep: 203.0.113.1
        remote-vtep: 192.0.2.1
        next-hop: 203.0.113.254
      - name: b2
        port: wan1
        local-vtep: 198.51.100.1
        remote-vtep: 192.0.2.2
        next-hop: 198.51.100.254
)";
}

// Peers b (one line on wan0) and c (one line on wan1).
const char* const kPeersBC = R"(  - name: b
    inner-mac: 02:00:00:00:0b:01
    lines:
      - name: b1
        port: wan0
        local-vtep: 203.0.113.1
        remote-vtep: 192.0.2.1
        next-hop: 203.0.113.254
  - name: c
    inner-mac: 02:00:00:00:0c:01
    lines:
      - name: c1
        port: wan1
        local-vtep: 198.51.100.1
        remote-vtep: 192.0.2.3
        next-hop: 198.51.100.254
)";

config::ConfigPtr load(const std::string& yaml) {
  auto c = config::loadConfigText(yaml, "dataplane_ring_test.yaml");
  if (!c.ok()) {
    std::string all;
    for (const auto& e : c.error()) {
      all += e.toString() + "\n";
    }
    ADD_FAILURE() << "config refused:\n" << all << yaml;
    return nullptr;
  }
  return *c;
}

// ------------------------------------------------------------------ packets

struct Flow {
  Ip4 src = kHost;
  Ip4 dst = {10, 2, 0, 5};
  uint16_t sport = 40000;
  uint16_t dport = 5001;
  uint8_t ttl = 64;
  Mac src_mac = kHostMac;
};

constexpr size_t kPayload = 16;  // magic, sequence number, filler
constexpr size_t kFrameLen = 14 + 20 + 8 + kPayload;

// An IPv4/UDP frame from the LAN host to lan0's MAC, received on lan0.
rte_mbuf* lanPacket(const Flow& f, uint32_t seq) {
  rte_mbuf* m = rte_pktmbuf_alloc(env->pool);
  if (!m) {
    return nullptr;
  }
  auto* d = reinterpret_cast<uint8_t*>(rte_pktmbuf_append(m, kFrameLen));
  std::memset(d, 0, kFrameLen);
  auto* eth = reinterpret_cast<proto::EthernetHeader*>(d);
  std::memcpy(eth->dst, env->port("lan0").mac.data(), 6);
  std::memcpy(eth->src, f.src_mac.data(), 6);
  eth->ether_type.set(proto::kEtherTypeIpv4);
  auto* ip = reinterpret_cast<proto::Ipv4Header*>(d + 14);
  ip->version_ihl = 0x45;
  ip->total_length.set(static_cast<uint16_t>(20 + 8 + kPayload));
  ip->id.set(static_cast<uint16_t>(seq));
  ip->ttl = f.ttl;
  ip->protocol = proto::kIpProtoUdp;
  std::memcpy(ip->src, f.src.data(), 4);
  std::memcpy(ip->dst, f.dst.data(), 4);
  ip->checksum.set(proto::internetChecksum(bytes(ip, 20)));
  auto* udp = reinterpret_cast<proto::UdpHeader*>(d + 34);
  udp->src_port.set(f.sport);
  udp->dst_port.set(f.dport);
  udp->length.set(static_cast<uint16_t>(8 + kPayload));
  auto* payload = reinterpret_cast<proto::Be32*>(d + 42);
  payload[0].set(kMagic);
  payload[1].set(seq);
  m->port = RTE_MBUF_PORT_INVALID;  // the worker passes the RX port (net_ring sets none)
  return m;
}

struct Inner {
  Mac dst{}, src{};
  Ip4 src_ip{}, dst_ip{};
  uint8_t ttl = 0;
  uint16_t sport = 0, dport = 0;
  uint32_t seq = 0;
};

struct Tunneled {
  Mac dst{}, src{};
  Ip4 src_ip{}, dst_ip{};
  uint8_t ttl = 0;
  uint16_t sport = 0, dport = 0;
  uint32_t vni = 0;
  Inner inner;
};

Mac macAt(const uint8_t* p) {
  Mac m;
  std::memcpy(m.data(), p, 6);
  return m;
}
Ip4 ipAt(const uint8_t* p) {
  Ip4 a;
  std::memcpy(a.data(), p, 4);
  return a;
}

// An IPv4/UDP frame of the test's making, as the codecs parse it.
std::optional<Inner> decodeInner(proto::Bytes frame, std::string* why) {
  auto eth = proto::parseEthernet(frame);
  if (!eth.eth.ok() || eth.ether_type != proto::kEtherTypeIpv4) {
    *why = "inner: not Ethernet/IPv4";
    return std::nullopt;
  }
  auto ip = proto::parseIpv4(eth.eth.payload);
  if (!ip.ok() || ip.header->protocol != proto::kIpProtoUdp) {
    *why = "inner: not IPv4/UDP";
    return std::nullopt;
  }
  if (proto::internetChecksum(bytes(ip.header, ip.header_length)) != 0) {
    *why = "inner: bad IPv4 header checksum";
    return std::nullopt;
  }
  auto udp = proto::parseUdp(ip.payload);
  if (!udp.ok() || udp.payload.size() != kPayload) {
    *why = "inner: bad UDP";
    return std::nullopt;
  }
  const auto* p = reinterpret_cast<const proto::Be32*>(udp.payload.data());
  if (p[0].get() != kMagic) {
    *why = "inner: not the test's payload";
    return std::nullopt;
  }
  Inner in;
  in.dst = macAt(eth.eth.header->dst);
  in.src = macAt(eth.eth.header->src);
  in.src_ip = ipAt(ip.header->src);
  in.dst_ip = ipAt(ip.header->dst);
  in.ttl = ip.header->ttl;
  in.sport = udp.header->src_port.get();
  in.dport = udp.header->dst_port.get();
  in.seq = p[1].get();
  return in;
}

// An IPv4 VXLAN packet carrying a test frame.
std::optional<Tunneled> decodeTunneled(const rte_mbuf* m, std::string* why) {
  if (m->nb_segs != 1) {
    *why = "segmented mbuf";
    return std::nullopt;
  }
  auto frame = bytes(rte_pktmbuf_mtod(m, const uint8_t*), m->data_len);
  auto eth = proto::parseEthernet(frame);
  if (!eth.eth.ok() || eth.ether_type != proto::kEtherTypeIpv4) {
    *why = "outer: not Ethernet/IPv4";
    return std::nullopt;
  }
  auto ip = proto::parseIpv4(eth.eth.payload);
  if (!ip.ok() || ip.header->protocol != proto::kIpProtoUdp) {
    *why = "outer: not IPv4/UDP";
    return std::nullopt;
  }
  if (proto::internetChecksum(bytes(ip.header, ip.header_length)) != 0) {
    *why = "outer: bad IPv4 header checksum";
    return std::nullopt;
  }
  auto udp = proto::parseUdp(ip.payload);
  if (!udp.ok() || udp.header->dst_port.get() != proto::kVxlanPort) {
    *why = "outer: not UDP to the VXLAN port";
    return std::nullopt;
  }
  auto vx = proto::parseVxlan(udp.payload);
  if (!vx.ok()) {
    *why = "outer: bad VXLAN header";
    return std::nullopt;
  }
  auto inner = decodeInner(vx.payload, why);
  if (!inner) {
    return std::nullopt;
  }
  Tunneled t;
  t.dst = macAt(eth.eth.header->dst);
  t.src = macAt(eth.eth.header->src);
  t.src_ip = ipAt(ip.header->src);
  t.dst_ip = ipAt(ip.header->dst);
  t.ttl = ip.header->ttl;
  t.sport = udp.header->src_port.get();
  t.dport = udp.header->dst_port.get();
  t.vni = vx.header->vni();
  t.inner = *inner;
  return t;
}

// ---------------------------------------------------------------- rings I/O

template <typename F>
bool waitUntil(F done, std::chrono::milliseconds timeout) {
  const auto end = Clock::now() + timeout;
  while (!done()) {
    if (Clock::now() > end) {
      return false;
    }
    std::this_thread::sleep_for(200us);
  }
  return true;
}

// Enqueues every packet into lan0's RX ring (waiting for room).
void sendAll(const std::vector<rte_mbuf*>& pkts) {
  const RingPort& lan = env->port("lan0");
  size_t done = 0;
  const auto end = Clock::now() + 10s;
  while (done < pkts.size()) {
    done += rte_ring_enqueue_burst(lan.rx, reinterpret_cast<void* const*>(pkts.data() + done),
                                   static_cast<unsigned>(pkts.size() - done), nullptr);
    if (done < pkts.size()) {
      ASSERT_LT(Clock::now(), end) << "lan0's RX ring stays full";
      std::this_thread::sleep_for(50us);
    }
  }
}

// What left through the ports' TX rings, by port name; frees the mbufs.
class Captured {
 public:
  Captured() = default;
  Captured(Captured&& o) noexcept : by_port(std::move(o.by_port)) { o.by_port.clear(); }
  Captured& operator=(Captured&&) = delete;
  ~Captured() {
    for (auto& [name, v] : by_port) {
      for (rte_mbuf* m : v) {
        rte_pktmbuf_free(m);
      }
    }
  }
  size_t total() const {
    size_t n = 0;
    for (const auto& [name, v] : by_port) {
      n += v.size();
    }
    return n;
  }
  const std::vector<rte_mbuf*>& on(const std::string& port) { return by_port[port]; }

  std::map<std::string, std::vector<rte_mbuf*>> by_port;
};

// Collects until n packets left (any port), then a little longer to catch
// any that should not have.
Captured collect(size_t n, std::chrono::milliseconds timeout = 5000ms) {
  Captured c;
  auto drain = [&] {
    for (const auto& p : env->ports) {
      void* objs[64];
      unsigned k;
      while ((k = rte_ring_dequeue_burst(p.tx, objs, 64, nullptr)) > 0) {
        auto& v = c.by_port[p.name];
        for (unsigned i = 0; i < k; ++i) {
          v.push_back(static_cast<rte_mbuf*>(objs[i]));
        }
      }
    }
  };
  waitUntil(
      [&] {
        drain();
        return c.total() >= n;
      },
      timeout);
  std::this_thread::sleep_for(20ms);
  drain();
  return c;
}

// Each tunnelled packet that left through wan0 or wan1, decoded (a packet
// that does not decode is a failure of the test).
template <typename F>
void forEachTunneled(Captured& out, F f) {
  for (const std::string port : {"wan0", "wan1"}) {
    for (rte_mbuf* m : out.on(port)) {
      std::string why;
      auto t = decodeTunneled(m, &why);
      if (!t) {
        ADD_FAILURE() << why;
        continue;
      }
      f(port, *t);
    }
  }
}

std::string nonZeroDrops(const CountersSnapshot& c) {
  std::string s;
  for (size_t i = 0; i < kDropReasonCount; ++i) {
    if (c.drops[i]) {
      s += std::string(toString(static_cast<DropReason>(i))) + "=" + std::to_string(c.drops[i]) +
           " ";
    }
  }
  return s;
}

std::string ip4String(const Ip4& a) {
  return std::to_string(a[0]) + "." + std::to_string(a[1]) + "." + std::to_string(a[2]) + "." +
         std::to_string(a[3]);
}

// ------------------------------------------------------------------ traffic

// A sender thread feeding lan0 and a receiver thread draining every TX ring,
// with at most `window` packets in flight (so no ring ever overflows and a
// lost packet shows as a stall, not as a hang: wait() times out).  Every
// packet must come out of a WAN port as VXLAN towards the remote VTEP that
// `remote` names for that port.
class Traffic {
 public:
  struct Options {
    uint64_t min_packets = 100000;  // sends at least this many ...
    bool until_stopped = false;     // ... and goes on until stopSending()
    unsigned window = 1024;
    std::map<std::string, Ip4> remote;  // WAN port -> expected outer destination
    std::function<Flow(uint64_t seq)> flow = [](uint64_t seq) {
      Flow f;
      f.sport = static_cast<uint16_t>(40000 + seq % 64);
      return f;
    };
  };

  explicit Traffic(Options o) : o_(std::move(o)) {
    seen_.resize(o_.min_packets * 64);  // grown by the sender only before sending
    sender_ = std::thread([this] { send(); });
    receiver_ = std::thread([this] { receive(); });
  }
  ~Traffic() {
    abort_ = true;
    join();
  }

  void stopSending() { stop_sending_ = true; }
  bool senderDone() const { return sender_done_; }

  // Waits until the sender is done and everything it sent came out.
  bool wait(std::chrono::milliseconds timeout) {
    bool ok = waitUntil([&] { return sender_done_ && received_.load() == sent_.load(); }, timeout);
    abort_ = true;
    join();
    return ok;
  }

  uint64_t sent() const { return sent_; }
  uint64_t received() const { return received_; }
  uint64_t on(const std::string& port) const {
    for (size_t i = 0; i < env->ports.size(); ++i) {
      if (env->ports[i].name == port) {
        return per_port_[i];
      }
    }
    return 0;
  }
  // After wait(): problems the receiver saw.
  uint64_t duplicates() const { return duplicates_; }
  uint64_t missing() const {
    uint64_t n = 0;
    for (uint64_t s = 0; s < sent_; ++s) {
      n += seen_[s] ? 0 : 1;
    }
    return n;
  }
  uint64_t bad() const { return bad_; }
  std::string firstError() {
    std::lock_guard<std::mutex> l(mu_);
    return first_error_;
  }

 private:
  void join() {
    if (sender_.joinable()) {
      sender_.join();
    }
    if (receiver_.joinable()) {
      receiver_.join();
    }
  }

  void send() {
    const RingPort& lan = env->port("lan0");
    uint64_t seq = 0;
    while (!abort_ && (seq < o_.min_packets || (o_.until_stopped && !stop_sending_))) {
      if (seq >= seen_.size()) {
        break;  // the receiver's bitmap is full: enough
      }
      if (seq - received_.load(std::memory_order_acquire) + kBurst > o_.window) {
        std::this_thread::yield();
        continue;
      }
      rte_mbuf* burst[kBurst];
      unsigned n = 0;
      while (n < kBurst) {
        burst[n] = lanPacket(o_.flow(seq + n), static_cast<uint32_t>(seq + n));
        if (!burst[n]) {
          break;
        }
        ++n;
      }
      unsigned put = 0;
      while (put < n && !abort_) {
        put +=
            rte_ring_enqueue_burst(lan.rx, reinterpret_cast<void**>(burst + put), n - put, nullptr);
      }
      if (put < n) {
        rte_pktmbuf_free_bulk(burst + put, n - put);
      }
      seq += put;
      sent_.store(seq, std::memory_order_release);
      if (n < kBurst) {
        std::this_thread::yield();  // the mempool ran dry for a moment
      }
    }
    sender_done_ = true;
  }

  void receive() {
    while (!abort_) {
      bool any = false;
      for (size_t i = 0; i < env->ports.size(); ++i) {
        const RingPort& p = env->ports[i];
        void* objs[64];
        const unsigned k = rte_ring_dequeue_burst(p.tx, objs, 64, nullptr);
        if (k == 0) {
          continue;
        }
        any = true;
        for (unsigned j = 0; j < k; ++j) {
          check(p, static_cast<rte_mbuf*>(objs[j]));
        }
        rte_pktmbuf_free_bulk(reinterpret_cast<rte_mbuf**>(objs), k);
        per_port_[i] += k;
        received_.fetch_add(k, std::memory_order_release);
      }
      if (!any) {
        std::this_thread::yield();
      }
    }
  }

  void check(const RingPort& p, const rte_mbuf* m) {
    std::string why;
    auto t = decodeTunneled(m, &why);
    auto it = o_.remote.find(p.name);
    if (t && it == o_.remote.end()) {
      why = "a packet on " + p.name;
      t.reset();
    } else if (t && t->dst_ip != it->second) {
      why = "on " + p.name + " to " + ip4String(t->dst_ip) + ", expected " + ip4String(it->second);
      t.reset();
    }
    if (!t) {
      ++bad_;
      std::lock_guard<std::mutex> l(mu_);
      if (first_error_.empty()) {
        first_error_ = why;
      }
      return;
    }
    if (t->inner.seq >= seen_.size() || seen_[t->inner.seq]) {
      ++duplicates_;
      return;
    }
    seen_[t->inner.seq] = 1;
  }

  Options o_;
  std::thread sender_, receiver_;
  std::atomic<bool> abort_{false}, stop_sending_{false}, sender_done_{false};
  std::atomic<uint64_t> sent_{0}, received_{0};
  std::array<std::atomic<uint64_t>, 8> per_port_{};
  std::vector<uint8_t> seen_;  // receiver only (read after join)
  uint64_t duplicates_ = 0, bad_ = 0;
  std::mutex mu_;
  std::string first_error_;
};

// ------------------------------------------------------------------ fixture

class DataplaneRing : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NE(env->pool, nullptr) << "no EAL";
    ASSERT_EQ(env->ports.size(), 3u);
    for (const auto& p : env->ports) {
      freeRing(p.rx);
      freeRing(p.tx);
    }
  }

  void TearDown() override {
    dp_.reset();  // stops the worker (it flushes what it buffered)
    for (const auto& p : env->ports) {
      freeRing(p.rx);
      freeRing(p.tx);
    }
  }

  // Starts a worker, publishes the config's tables and brings every line up.
  void start(const std::string& yaml) {
    config::ConfigPtr c = load(yaml);
    ASSERT_TRUE(c);
    auto dp = Dataplane::start({}, env->pool);
    ASSERT_TRUE(dp.ok()) << dp.error();
    dp_ = std::move(*dp);
    ASSERT_NO_FATAL_FAILURE(publish(*c));
    for (const auto& l : dp_->tables()->lines) {
      dp_->setLineUp(l.slot, true);
    }
  }

  void publish(const config::Config& c) {
    auto t = builder_.build(TablesInput::fromConfig(c, env->openPorts(), kWorkers), sync());
    ASSERT_TRUE(t.ok()) << t.error();
    dp_->publish(std::move(*t));
  }

  TenantFib::Synchronize sync() {
    return [this] { dp_->synchronize(); };
  }

  uint16_t slot(const std::string& peer, const std::string& line) {
    for (const auto& l : dp_->tables()->lines) {
      if (l.peer == peer && l.name == line) {
        return l.slot;
      }
    }
    ADD_FAILURE() << "no line " << peer << "/" << line;
    return 0;
  }

  TablesBuilder builder_;
  std::unique_ptr<Dataplane> dp_;
};

// The frame of a flow, tunnelled by peer b's line over `port`.
void expectTunnelled(const rte_mbuf* m, const std::string& port, const Flow& f) {
  std::string why;
  auto t = decodeTunneled(m, &why);
  ASSERT_TRUE(t) << why;
  const bool wan0 = port == "wan0";
  EXPECT_EQ(t->src, env->port(port).mac);
  EXPECT_EQ(t->dst, wan0 ? kWan0RouterMac : kWan1RouterMac);
  EXPECT_EQ(t->src_ip, wan0 ? kWan0Address : kWan1Address);
  EXPECT_EQ(t->dst_ip, wan0 ? kRemoteB1 : kRemoteB2);
  EXPECT_EQ(t->ttl, 64);
  EXPECT_GE(t->sport, 49152);
  EXPECT_EQ(t->vni, kVni);
  EXPECT_EQ(t->inner.dst, kInnerMacB);
  EXPECT_EQ(t->inner.src, env->port(port).mac);
  EXPECT_EQ(t->inner.src_ip, f.src);
  EXPECT_EQ(t->inner.dst_ip, f.dst);
  EXPECT_EQ(t->inner.ttl, f.ttl - 1);
  EXPECT_EQ(t->inner.sport, f.sport);
  EXPECT_EQ(t->inner.dport, f.dport);
}

// -------------------------------------------------------------------- cases

TEST_F(DataplaneRing, ActiveBackupFailsOverWithoutLossAndFailsBack) {
  ASSERT_NO_FATAL_FAILURE(
      start(configYaml(route("10.2.0.0/16", "b"), peerB2Lines("active-backup"))));
  const uint16_t b1 = slot("b", "b1"), b2 = slot("b", "b2");
  constexpr uint32_t kN = 200;
  uint32_t seq = 0;
  // Sends kN packets (a few flows) and expects all of them on `port`.
  auto phase = [&](const std::string& port) {
    SCOPED_TRACE("phase towards " + port);
    std::vector<rte_mbuf*> pkts;
    std::vector<Flow> flows;
    for (uint32_t i = 0; i < kN; ++i) {
      Flow f;
      f.sport = static_cast<uint16_t>(40000 + i % 8);
      flows.push_back(f);
      pkts.push_back(lanPacket(f, seq + i));
      ASSERT_NE(pkts.back(), nullptr);
    }
    ASSERT_NO_FATAL_FAILURE(sendAll(pkts));
    Captured out = collect(kN);
    ASSERT_EQ(out.total(), kN) << "every packet sent comes out, once";
    ASSERT_EQ(out.on(port).size(), kN);
    std::vector<bool> seen(kN);
    for (rte_mbuf* m : out.on(port)) {
      std::string why;
      auto t = decodeTunneled(m, &why);
      ASSERT_TRUE(t) << why;
      ASSERT_GE(t->inner.seq, seq);
      ASSERT_LT(t->inner.seq, seq + kN);
      EXPECT_FALSE(seen[t->inner.seq - seq]);
      seen[t->inner.seq - seq] = true;
      ASSERT_NO_FATAL_FAILURE(expectTunnelled(m, port, flows[t->inner.seq - seq]));
    }
    seq += kN;
  };

  ASSERT_NO_FATAL_FAILURE(phase("wan0"));  // b1 is preferred
  dp_->setLineUp(b1, false);
  ASSERT_NO_FATAL_FAILURE(phase("wan1"));  // b2 takes over
  dp_->setLineUp(b1, true);
  ASSERT_NO_FATAL_FAILURE(phase("wan0"));  // back to b1

  CountersSnapshot c = dp_->counters();
  EXPECT_EQ(c.line_tx[b1].packets, 2 * kN);
  EXPECT_EQ(c.line_tx[b2].packets, kN);
  // Outer packets: the inner frame plus 50 bytes of outer headers.
  EXPECT_EQ(c.line_tx[b1].bytes, 2 * kN * (kFrameLen + 50));
  EXPECT_EQ(c.lan_rx.packets, 3 * kN);
  EXPECT_EQ(c.wan_tx.packets, 3 * kN);
  EXPECT_EQ(nonZeroDrops(c), "");

  // The line flaps under load: every packet still comes out, on one line or
  // the other.
  Traffic::Options o;
  o.min_packets = 60000;
  o.remote = {{"wan0", kRemoteB1}, {"wan1", kRemoteB2}};
  Traffic traffic(o);
  unsigned flaps = 0;
  while (!traffic.senderDone()) {
    dp_->setLineUp(b1, flaps % 2 == 1);
    ++flaps;
    std::this_thread::sleep_for(1ms);
  }
  dp_->setLineUp(b1, true);
  ASSERT_TRUE(traffic.wait(10s)) << "sent " << traffic.sent() << ", came out " << traffic.received()
                                 << "; drops " << nonZeroDrops(dp_->counters());
  EXPECT_EQ(traffic.bad(), 0u) << traffic.firstError();
  EXPECT_EQ(traffic.duplicates(), 0u);
  EXPECT_EQ(traffic.missing(), 0u);
  EXPECT_GT(flaps, 2u);
  EXPECT_GT(traffic.on("wan0"), 0u);
  EXPECT_GT(traffic.on("wan1"), 0u);
  c = dp_->counters();
  EXPECT_EQ(nonZeroDrops(c), "");
  EXPECT_EQ(c.line_tx[b1].packets + c.line_tx[b2].packets, 3 * kN + traffic.sent());
  EXPECT_EQ(c.line_tx[b1].packets, 2 * kN + traffic.on("wan0"));
  EXPECT_EQ(c.line_tx[b2].packets, kN + traffic.on("wan1"));
}

TEST_F(DataplaneRing, EcmpFlowsStickAndMoveOffAFailedLine) {
  ASSERT_NO_FATAL_FAILURE(start(configYaml(route("10.2.0.0/16", "b"), peerB2Lines("ecmp"))));
  const uint16_t b1 = slot("b", "b1"), b2 = slot("b", "b2");
  constexpr unsigned kFlows = 100;
  auto flow = [](unsigned i) {
    Flow f;
    f.dst = {10, 2, static_cast<uint8_t>(i / 10), static_cast<uint8_t>(1 + i % 10)};
    f.sport = static_cast<uint16_t>(30000 + 7 * i);
    return f;
  };
  uint32_t seq = 0;
  // Sends `rounds` packets of every flow; returns each flow's port(s).
  auto round = [&](unsigned rounds) {
    std::vector<rte_mbuf*> pkts;
    for (unsigned r = 0; r < rounds; ++r) {
      for (unsigned i = 0; i < kFlows; ++i) {
        pkts.push_back(lanPacket(flow(i), seq++));
      }
    }
    std::vector<std::map<std::string, unsigned>> where(kFlows);
    sendAll(pkts);
    Captured out = collect(pkts.size());
    EXPECT_EQ(out.total(), pkts.size()) << "every packet sent comes out, once";
    std::map<uint16_t, uint16_t> outer_sport;  // inner source port -> outer
    forEachTunneled(out, [&](const std::string& port, const Tunneled& t) {
      const unsigned i = (t.inner.sport - 30000) / 7;
      EXPECT_EQ(t.dst_ip, port == "wan0" ? kRemoteB1 : kRemoteB2);
      EXPECT_EQ(t.inner.dst_ip, flow(i).dst);
      ++where[i][port];
      // The outer UDP source port follows the flow too.
      auto [it, added] = outer_sport.emplace(t.inner.sport, t.sport);
      EXPECT_EQ(it->second, t.sport);
    });
    return where;
  };

  auto before = round(3);
  std::map<std::string, unsigned> flows_on;
  std::vector<std::string> line_of(kFlows);
  for (unsigned i = 0; i < kFlows; ++i) {
    ASSERT_EQ(before[i].size(), 1u) << "flow " << i << " was split over both lines";
    line_of[i] = before[i].begin()->first;
    EXPECT_EQ(before[i].begin()->second, 3u);
    ++flows_on[line_of[i]];
  }
  EXPECT_GE(flows_on["wan0"], 10u) << "flows spread over both lines";
  EXPECT_GE(flows_on["wan1"], 10u) << "flows spread over both lines";

  dp_->setLineUp(b1, false);
  auto during = round(2);
  for (unsigned i = 0; i < kFlows; ++i) {
    EXPECT_EQ(during[i]["wan1"], 2u) << "flow " << i << " moves to the remaining line";
    EXPECT_EQ(during[i].size(), 1u) << "flow " << i;
  }

  dp_->setLineUp(b1, true);
  auto after = round(2);
  for (unsigned i = 0; i < kFlows; ++i) {
    EXPECT_EQ(after[i][line_of[i]], 2u) << "flow " << i << " returns to its line";
    EXPECT_EQ(after[i].size(), 1u) << "flow " << i;
  }

  CountersSnapshot c = dp_->counters();
  EXPECT_EQ(nonZeroDrops(c), "");
  EXPECT_EQ(c.line_tx[b1].packets, 5u * flows_on["wan0"]);
  EXPECT_EQ(c.line_tx[b2].packets, 5u * flows_on["wan1"] + 2u * kFlows);
  EXPECT_EQ(c.lan_rx.packets, 7u * kFlows);
}

TEST_F(DataplaneRing, RouteSwapsUnderTrafficLoseNothing) {
  // A: 10.2.0.0/16 via b (wan0).  B: via c (wan1), plus a route A does not
  // have: each swap is a reload that changes the FIB in place.
  const config::ConfigPtr a = load(configYaml(route("10.2.0.0/16", "b"), kPeersBC));
  const config::ConfigPtr b =
      load(configYaml(route("10.2.0.0/16", "c") + route("10.99.0.0/16", "c"), kPeersBC));
  ASSERT_TRUE(a && b);
  auto dp = Dataplane::start({}, env->pool);
  ASSERT_TRUE(dp.ok()) << dp.error();
  dp_ = std::move(*dp);
  ASSERT_NO_FATAL_FAILURE(publish(*a));
  for (const auto& l : dp_->tables()->lines) {
    dp_->setLineUp(l.slot, true);
  }
  const uint16_t b1 = slot("b", "b1"), c1 = slot("c", "c1");

  // Every snapshot shares the tenant's one FIB, which a reload changes in
  // place.  (The test holds the FIB it compares, so that no new one could
  // reuse a freed address.)
  std::shared_ptr<const TenantFib> fib_a = dp_->tables()->tenants[0].fib;
  const uint8_t probe[4] = {10, 2, 0, 5};
  const auto nh_a = fib_a->lookup4(probe);
  ASSERT_TRUE(nh_a);
  ASSERT_NO_FATAL_FAILURE(publish(*a));
  EXPECT_EQ(dp_->tables()->tenants[0].fib, fib_a);
  EXPECT_EQ(fib_a->lookup4(probe), nh_a);

  // How long a build that changes routes takes here.
  auto t0 = Clock::now();
  ASSERT_NO_FATAL_FAILURE(publish(*b));
  EXPECT_NE(fib_a->lookup4(probe), nh_a);
  ASSERT_NO_FATAL_FAILURE(publish(*a));
  const auto build_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count() / 2;
  EXPECT_EQ(dp_->tables()->tenants[0].fib, fib_a);
  fib_a.reset();
  std::printf("build + publish with a route change: %lld ms\n", static_cast<long long>(build_ms));

  Traffic::Options o;
  o.min_packets = 200000;
  o.until_stopped = true;
  o.remote = {{"wan0", kRemoteB1}, {"wan1", kRemoteC1}};
  o.flow = [](uint64_t seq) {
    Flow f;
    f.dst = {10, 2, static_cast<uint8_t>(seq % 7), static_cast<uint8_t>(1 + seq % 200)};
    f.sport = static_cast<uint16_t>(40000 + seq % 512);
    return f;
  };
  // 200 swaps and on until the traffic is all sent (a build that changes a
  // route in place is quick: the swaps must span the traffic), or as many
  // as fit in ~15 s (at least 20).
  const unsigned kSwaps = 200, kMinSwaps = 20;
  const auto deadline = Clock::now() + 15s;
  unsigned swaps = 0;
  std::optional<uint32_t> last_nh = dp_->tables()->tenants[0].fib->lookup4(probe);
  unsigned changed = 0;
  auto start = Clock::now();
  Traffic traffic(o);
  while ((swaps < kSwaps || traffic.sent() < o.min_packets) &&
         (swaps < kMinSwaps || Clock::now() < deadline)) {
    ASSERT_NO_FATAL_FAILURE(publish(swaps % 2 == 0 ? *b : *a));
    ++swaps;
    const auto nh = dp_->tables()->tenants[0].fib->lookup4(probe);
    changed += nh != last_nh ? 1 : 0;
    last_nh = nh;
  }
  traffic.stopSending();
  ASSERT_TRUE(traffic.wait(20s)) << "sent " << traffic.sent() << ", came out " << traffic.received()
                                 << "; drops " << nonZeroDrops(dp_->counters());
  const auto secs =
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count() / 1e3;
  std::printf("%u swaps (%u route changes), %llu packets (wan0 %llu, wan1 %llu) in %.1f s\n", swaps,
              changed, static_cast<unsigned long long>(traffic.sent()),
              static_cast<unsigned long long>(traffic.on("wan0")),
              static_cast<unsigned long long>(traffic.on("wan1")), secs);
  EXPECT_GE(swaps, kMinSwaps);
  EXPECT_EQ(changed, swaps) << "each swap changes the route";
  EXPECT_GE(traffic.sent(), o.min_packets);
  EXPECT_EQ(traffic.received(), traffic.sent());
  EXPECT_EQ(traffic.bad(), 0u) << traffic.firstError();
  EXPECT_EQ(traffic.duplicates(), 0u);
  EXPECT_EQ(traffic.missing(), 0u);
  EXPECT_EQ(traffic.on("lan0"), 0u);
  EXPECT_GT(traffic.on("wan0"), 0u);
  EXPECT_GT(traffic.on("wan1"), 0u);
  CountersSnapshot c = dp_->counters();
  EXPECT_EQ(nonZeroDrops(c), "");
  // The warm-up sent nothing: the lines' counters are the traffic's.
  EXPECT_EQ(c.line_tx[b1].packets, traffic.on("wan0"));
  EXPECT_EQ(c.line_tx[c1].packets, traffic.on("wan1"));
  EXPECT_EQ(c.lan_rx.packets, traffic.sent());
}

TEST_F(DataplaneRing, IdleWorkerBacksOffToTheConfiguredSleep) {
  constexpr uint32_t kMaxSleep = 50;
  ASSERT_NO_FATAL_FAILURE(start(configYaml(route("10.2.0.0/16", "b"), kPeersBC, kMaxSleep)));
  auto worker = [&] { return dp_->counters().workers.at(0); };
  // Idle: it pauses, then sleeps 1, 2, 4, ... µs up to the bound.
  uint32_t max_seen = 0;
  ASSERT_TRUE(waitUntil(
      [&] {
        WorkerStatus w = worker();
        if (w.state == WorkerState::kSleeping) {
          max_seen = std::max(max_seen, w.sleep_us);
        }
        return w.state == WorkerState::kSleeping && w.sleep_us == kMaxSleep;
      },
      5000ms))
      << "state " << static_cast<int>(worker().state) << ", sleep " << worker().sleep_us << " µs";
  for (int i = 0; i < 200; ++i) {
    WorkerStatus w = worker();
    EXPECT_EQ(w.state, WorkerState::kSleeping);
    EXPECT_LE(w.sleep_us, kMaxSleep);
    EXPECT_GT(w.sleep_us, 0u);
    std::this_thread::sleep_for(100us);
  }
  EXPECT_LE(max_seen, kMaxSleep);
  const uint64_t sleeps = worker().sleeps;
  EXPECT_GT(sleeps, 0u);

  // Traffic wakes it: it polls again and forwards everything.  (Counted,
  // not sampled: between bursts the worker may pause again, so a look at
  // its state can miss the polls on a busy machine.)
  Traffic::Options o;
  o.min_packets = 100000;
  o.remote = {{"wan0", kRemoteB1}};
  const uint64_t busy_before = worker().busy_polls;
  {
    Traffic traffic(o);
    ASSERT_TRUE(traffic.wait(10s))
        << "sent " << traffic.sent() << ", came out " << traffic.received() << "; drops "
        << nonZeroDrops(dp_->counters());
    EXPECT_EQ(traffic.bad(), 0u) << traffic.firstError();
    EXPECT_EQ(traffic.missing(), 0u);
    EXPECT_EQ(traffic.on("wan0"), o.min_packets);
  }
  EXPECT_GT(worker().busy_polls, busy_before) << "the worker polls while packets arrive";
  EXPECT_EQ(nonZeroDrops(dp_->counters()), "");

  // Idle again: back to sleeping.
  ASSERT_TRUE(waitUntil([&] { return worker().state == WorkerState::kSleeping; }, 5000ms));
  EXPECT_LE(worker().sleep_us, kMaxSleep);
  EXPECT_GT(worker().sleeps, sleeps);
}

TEST_F(DataplaneRing, IdleWorkerNeverSleepsWhenTheBoundIsZero) {
  ASSERT_NO_FATAL_FAILURE(start(configYaml(route("10.2.0.0/16", "b"), kPeersBC, 0)));
  auto worker = [&] { return dp_->counters().workers.at(0); };
  ASSERT_TRUE(waitUntil([&] { return worker().state == WorkerState::kPausing; }, 5000ms));
  const uint64_t polls = worker().polls;
  for (int i = 0; i < 1000; ++i) {  // ~300 ms
    WorkerStatus w = worker();
    ASSERT_EQ(w.state, WorkerState::kPausing);
    ASSERT_EQ(w.sleep_us, 0u);
    ASSERT_EQ(w.sleeps, 0u);
    std::this_thread::sleep_for(300us);
  }
  EXPECT_GT(worker().polls, polls) << "it keeps polling";
  // And it forwards.
  Flow f;
  rte_mbuf* m = lanPacket(f, 0);
  ASSERT_NE(m, nullptr);
  sendAll({m});
  Captured out = collect(1);
  ASSERT_EQ(out.on("wan0").size(), 1u);
  EXPECT_EQ(out.total(), 1u);
}

TEST_F(DataplaneRing, ExpiredTtlIsDroppedAndAnsweredWithTimeExceeded) {
  ASSERT_NO_FATAL_FAILURE(start(configYaml(route("10.2.0.0/16", "b"), kPeersBC)));
  Flow f;
  f.ttl = 1;
  // Another source MAC than the neighbour entry's: the answer is routed, so
  // it goes to the neighbour's MAC, not back to whatever sent the frame.
  f.src_mac = {0x02, 0, 0, 0, 0x99, 0x99};
  rte_mbuf* m = lanPacket(f, 7);
  ASSERT_NE(m, nullptr);
  std::vector<uint8_t> original(rte_pktmbuf_mtod(m, uint8_t*) + 14,
                                rte_pktmbuf_mtod(m, uint8_t*) + kFrameLen);
  sendAll({m});
  Captured out = collect(1);
  ASSERT_EQ(out.total(), 1u) << "only the ICMP error comes out";
  ASSERT_EQ(out.on("lan0").size(), 1u);
  const rte_mbuf* e = out.on("lan0")[0];
  auto frame = bytes(rte_pktmbuf_mtod(e, const uint8_t*), e->data_len);
  auto eth = proto::parseEthernet(frame);
  ASSERT_TRUE(eth.eth.ok());
  ASSERT_EQ(eth.ether_type, proto::kEtherTypeIpv4);
  EXPECT_EQ(macAt(eth.eth.header->dst), kHostMac) << "the sender's neighbour MAC";
  EXPECT_EQ(macAt(eth.eth.header->src), env->port("lan0").mac);
  auto ip = proto::parseIpv4(eth.eth.payload);
  ASSERT_TRUE(ip.ok()) << toString(ip.error);
  EXPECT_EQ(proto::internetChecksum(bytes(ip.header, ip.header_length)), 0)
      << "IPv4 header checksum";
  EXPECT_EQ(ipAt(ip.header->src), kLanAddress);
  EXPECT_EQ(ipAt(ip.header->dst), kHost);
  EXPECT_EQ(ip.header->protocol, proto::kIpProtoIcmp);
  EXPECT_EQ(ip.header->ttl, 64) << "originated, not forwarded: never decremented";
  EXPECT_FALSE(ip.header->isFragment());
  auto icmp = proto::parseIcmp(ip.payload);
  ASSERT_TRUE(icmp.ok());
  EXPECT_EQ(icmp.header->type, proto::kIcmpTimeExceeded);
  EXPECT_EQ(icmp.header->code, 0);
  EXPECT_EQ(icmp.header->rest.get(), 0u);
  EXPECT_EQ(proto::internetChecksum(ip.payload), 0) << "ICMP checksum";
  // It quotes the original IP header and data, as received (TTL 1).
  ASSERT_EQ(icmp.payload.size(), original.size());
  EXPECT_EQ(std::memcmp(icmp.payload.data(), original.data(), original.size()), 0);

  CountersSnapshot c = dp_->counters();
  EXPECT_EQ(c.drops[static_cast<size_t>(DropReason::kTTL_EXPIRED)], 1u);
  EXPECT_EQ(nonZeroDrops(c), "ttl-expired=1 ");
  EXPECT_EQ(c.icmp_sent, 1u);
  EXPECT_EQ(c.icmp_suppressed, 0u);
  EXPECT_EQ(c.lan_tx.packets, 1u);
  EXPECT_EQ(c.wan_tx.packets, 0u);

  // TTL 2 still goes through, with TTL 1 inside the tunnel.
  f.ttl = 2;
  m = lanPacket(f, 8);
  sendAll({m});
  Captured out2 = collect(1);
  ASSERT_EQ(out2.on("wan0").size(), 1u);
  std::string why;
  auto t = decodeTunneled(out2.on("wan0")[0], &why);
  ASSERT_TRUE(t) << why;
  EXPECT_EQ(t->inner.ttl, 1);
  EXPECT_EQ(dp_->counters().drops[static_cast<size_t>(DropReason::kTTL_EXPIRED)], 1u);
}

// ------------------------------------------- route changes applied in place

using Ip6 = std::array<uint8_t, 16>;

// An IPv6/UDP frame from the LAN host to lan0's MAC.
rte_mbuf* lanPacket6(const Ip6& dst, uint32_t seq) {
  rte_mbuf* m = rte_pktmbuf_alloc(env->pool);
  if (!m) {
    return nullptr;
  }
  constexpr size_t kLen = 14 + 40 + 8 + kPayload;
  auto* d = reinterpret_cast<uint8_t*>(rte_pktmbuf_append(m, kLen));
  std::memset(d, 0, kLen);
  std::memcpy(d, env->port("lan0").mac.data(), 6);
  std::memcpy(d + 6, kHostMac.data(), 6);
  d[12] = 0x86;
  d[13] = 0xdd;
  uint8_t* ip = d + 14;
  ip[0] = 0x60;
  ip[5] = 8 + kPayload;
  ip[6] = proto::kIpProtoUdp;
  ip[7] = 64;
  const Ip6 src = {0xfd, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x10};
  std::memcpy(ip + 8, src.data(), 16);
  std::memcpy(ip + 24, dst.data(), 16);
  auto* udp = reinterpret_cast<proto::UdpHeader*>(ip + 40);
  udp->src_port.set(static_cast<uint16_t>(40000 + seq % 64));
  udp->dst_port.set(5001);
  udp->length.set(static_cast<uint16_t>(8 + kPayload));
  auto* payload = reinterpret_cast<proto::Be32*>(ip + 48);
  payload[0].set(kMagic);
  payload[1].set(seq);
  m->port = RTE_MBUF_PORT_INVALID;
  return m;
}

// What a probe looks like where it left: tunnelled (IPv4 VXLAN: the outer
// destination) or not, its Ethernet destination, and its sequence number.
struct ProbeOut {
  bool ok = false;
  bool tunneled = false;
  Ip4 outer_dst{};
  Mac dst{};
  uint32_t seq = 0;
};

ProbeOut probeOut(const rte_mbuf* m) {
  ProbeOut o;
  const uint8_t* d = rte_pktmbuf_mtod(m, const uint8_t*);
  const size_t len = m->data_len;
  auto be16 = [](const uint8_t* p) { return static_cast<uint16_t>(p[0] << 8 | p[1]); };
  auto be32 = [](const uint8_t* p) {
    return static_cast<uint32_t>(p[0]) << 24 | p[1] << 16 | p[2] << 8 | p[3];
  };
  if (len < 14) {
    return o;
  }
  std::memcpy(o.dst.data(), d, 6);
  size_t inner = 0;
  if (len >= 14 + 20 + 8 + 8 && d[12] == 0x08 && d[13] == 0 && d[14 + 9] == proto::kIpProtoUdp &&
      be16(d + 14 + 20 + 2) == proto::kVxlanPort) {
    o.tunneled = true;
    std::memcpy(o.outer_dst.data(), d + 14 + 16, 4);
    inner = 14 + 20 + 8 + 8;
  }
  const uint8_t* f = d + inner;
  const size_t flen = len - inner;
  if (flen < 14 + 20) {
    return o;
  }
  const bool v6 = f[12] == 0x86 && f[13] == 0xdd;
  const size_t payload = 14 + (v6 ? 40u : (f[14] & 0xfu) * 4u) + 8;
  if (flen < payload + 8 || be32(f + payload) != kMagic) {
    return o;
  }
  o.seq = be32(f + payload + 4);
  o.ok = true;
  return o;
}

config::IpPrefix prefix4(uint8_t a, uint8_t b, uint8_t c, uint8_t d, uint8_t len) {
  config::IpPrefix p;
  p.address.family = config::Family::V4;
  p.address.bytes = {a, b, c, d};
  p.length = len;
  return p;
}

config::IpPrefix prefix6(uint16_t i) {
  config::IpPrefix p;
  p.address.family = config::Family::V6;
  p.address.bytes = {0xfd, 0, 0, 0x50, 0, 0, static_cast<uint8_t>(i >> 8), static_cast<uint8_t>(i)};
  p.length = 64;
  return p;
}

Via viaPeer(const std::string& peer) {
  Via v;
  v.kind = Via::Kind::kTunnel;
  v.peer = peer;
  return v;
}

Via viaHost() {  // 10.1.0.10 on lan0: a LAN gateway
  Via v;
  v.kind = Via::Kind::kGateway;
  v.address = *config::IpAddress::parse("10.1.0.10");
  return v;
}

// Tenant blue's 10.60.0.0/16 as FRR gives it (distance 20), via `vias`.
RouteUpdate frrRoute1060(std::vector<Via> vias) {
  RouteUpdate u;
  u.tenant = "blue";
  u.source = RouteSource::kFrr;
  u.distance = 20;
  u.prefix = prefix4(10, 60, 0, 0, 16);
  u.vias = std::move(vias);
  return u;
}

// 100,000 route changes (add, replace, withdraw; IPv4 and IPv6; single
// tunnels, ECMP groups over two tunnels, a LAN gateway) applied in place in
// batches of 1,000 while traffic flows.  The traffic's destinations
// (10.2.x.y) stay on peer b throughout: the changes inside 10.2.0.0/16
// (more-specific /32 and /28 routes, added and withdrawn) all lead to b,
// those elsewhere (10.50-53.x.0/24, fd00:50:0:x::/64) to b, c, both or the
// LAN host.  Every packet must come out, on wan0 towards b.  After each
// quarter, one probe per changed prefix checks that it follows its route as
// it now is (or is dropped as no-route once withdrawn).
TEST_F(DataplaneRing, RouteChangesInPlaceUnderTrafficLoseNothing) {
  ASSERT_NO_FATAL_FAILURE(start(configYaml(route("10.2.0.0/16", "b"), kPeersBC)));
  const uint16_t b1 = slot("b", "b1"), c1 = slot("c", "c1");
  const std::shared_ptr<const TenantFib> fib = dp_->tables()->tenants[0].fib;
  const uint64_t generation = dp_->tables()->generation;

  enum class To : uint8_t { kNone, kB, kC, kBoth, kHost };
  constexpr unsigned kPool4 = 1024, kPool6 = 1024;
  constexpr unsigned kChanges = 100000, kBatch = 1000, kRounds = 4;
  std::vector<To> pool4(kPool4, To::kNone), pool6(kPool6, To::kNone);
  auto pool4Prefix = [](unsigned i) {
    return prefix4(10, static_cast<uint8_t>(50 + i / 256), static_cast<uint8_t>(i % 256), 0, 24);
  };
  auto vias = [](To to) -> std::vector<Via> {
    switch (to) {
      case To::kB:
        return {viaPeer("b")};
      case To::kC:
        return {viaPeer("c")};
      case To::kBoth:
        return {viaPeer("c"), viaPeer("b"), viaPeer("b")};  // a group of two
      default:
        return {viaHost()};
    }
  };
  std::mt19937 rng(20261203);
  unsigned done = 0, sets = 0, withdraws = 0;
  uint64_t sent = 0, probes = 0, probes_wan0 = 0, probes_wan1 = 0, probes_lan0 = 0,
           probes_dropped = 0;
  double apply_s = 0;
  uint64_t on_wan0 = 0;

  for (unsigned round = 0; round < kRounds; ++round) {
    Traffic::Options o;
    o.min_packets = 50000;
    o.until_stopped = true;
    o.remote = {{"wan0", kRemoteB1}};
    o.flow = [](uint64_t seq) {
      Flow f;
      f.dst = {10, 2, static_cast<uint8_t>(seq % 7), static_cast<uint8_t>(1 + seq % 200)};
      f.sport = static_cast<uint16_t>(40000 + seq % 512);
      return f;
    };
    {
      Traffic traffic(o);
      while (done < (round + 1) * kChanges / kRounds) {
        std::vector<RouteUpdate> batch;
        for (unsigned k = 0; k < kBatch; ++k) {
          RouteUpdate u;
          u.tenant = "blue";
          u.source = RouteSource::kFrr;
          u.distance = 20;
          const unsigned r = rng() % 100;
          if (r < 35) {  // an IPv4 route added or replaced: another next hop
            const unsigned i = rng() % kPool4;
            pool4[i] = static_cast<To>(1 + (static_cast<unsigned>(pool4[i]) + rng() % 3) % 4);
            u.prefix = pool4Prefix(i);
            u.vias = vias(pool4[i]);
          } else if (r < 50) {
            const unsigned i = rng() % kPool4;
            pool4[i] = To::kNone;
            u.prefix = pool4Prefix(i);
            u.withdraw = true;
          } else if (r < 75) {  // IPv6: b, c or both
            const unsigned i = rng() % kPool6;
            pool6[i] = static_cast<To>(1 + (static_cast<unsigned>(pool6[i]) + rng() % 2) % 3);
            u.prefix = prefix6(static_cast<uint16_t>(i));
            u.vias = vias(pool6[i]);
          } else if (r < 85) {
            const unsigned i = rng() % kPool6;
            pool6[i] = To::kNone;
            u.prefix = prefix6(static_cast<uint16_t>(i));
            u.withdraw = true;
          } else {  // inside the traffic's 10.2.0.0/16: always to b
            const unsigned i = rng() % 512;
            u.prefix = i < 256 ? prefix4(10, 2, static_cast<uint8_t>(i % 7),
                                         static_cast<uint8_t>(1 + i % 200), 32)
                               : prefix4(10, 2, static_cast<uint8_t>(i % 7),
                                         static_cast<uint8_t>(16 * (i % 16)), 28);
            u.withdraw = r >= 95;
            if (!u.withdraw) {
              u.vias = vias(To::kB);
            }
          }
          (u.withdraw ? withdraws : sets) += 1;
          batch.push_back(std::move(u));
        }
        const auto t0 = Clock::now();
        auto applied = builder_.apply(batch, sync());
        apply_s += std::chrono::duration<double>(Clock::now() - t0).count();
        ASSERT_TRUE(applied.ok()) << applied.error();
        done += kBatch;
      }
      traffic.stopSending();
      ASSERT_TRUE(traffic.wait(30s))
          << "sent " << traffic.sent() << ", came out " << traffic.received() << "; drops "
          << nonZeroDrops(dp_->counters());
      EXPECT_EQ(traffic.bad(), 0u) << traffic.firstError();
      EXPECT_EQ(traffic.duplicates(), 0u);
      EXPECT_EQ(traffic.missing(), 0u);
      EXPECT_EQ(traffic.on("wan0"), traffic.sent());
      EXPECT_EQ(nonZeroDrops(dp_->counters()),
                probes_dropped ? "no-route=" + std::to_string(probes_dropped) + " " : "");
      sent += traffic.sent();
      on_wan0 += traffic.on("wan0");
    }

    // One probe per pool prefix, to an address inside it.
    std::vector<rte_mbuf*> pkts;
    std::vector<To> expect;
    std::vector<bool> v6;
    const uint32_t base = 1000000000u + round * 10000u;
    for (unsigned i = 0; i < kPool4; ++i) {
      Flow f;
      const auto p = pool4Prefix(i);
      f.dst = {p.address.bytes[0], p.address.bytes[1], p.address.bytes[2], 7};
      pkts.push_back(lanPacket(f, base + static_cast<uint32_t>(expect.size())));
      expect.push_back(pool4[i]);
      v6.push_back(false);
    }
    for (unsigned i = 0; i < kPool6; ++i) {
      Ip6 dst = prefix6(static_cast<uint16_t>(i)).address.bytes;
      dst[15] = 7;
      pkts.push_back(lanPacket6(dst, base + static_cast<uint32_t>(expect.size())));
      expect.push_back(pool6[i]);
      v6.push_back(true);
    }
    size_t want_out = 0, none = 0;
    for (To e : expect) {
      (e == To::kNone ? none : want_out) += 1;
    }
    for (rte_mbuf* m : pkts) {
      ASSERT_NE(m, nullptr);
    }
    ASSERT_NO_FATAL_FAILURE(sendAll(pkts));
    Captured out = collect(want_out);
    ASSERT_EQ(out.total(), want_out) << "round " << round << ": one per live route";
    std::vector<bool> seen(expect.size());
    for (const std::string port : {"wan0", "wan1", "lan0"}) {
      for (rte_mbuf* m : out.on(port)) {
        const ProbeOut p = probeOut(m);
        ASSERT_TRUE(p.ok) << "a probe on " << port << " that is not the test's";
        ASSERT_GE(p.seq, base);
        const size_t k = p.seq - base;
        ASSERT_LT(k, expect.size());
        EXPECT_FALSE(seen[k]);
        seen[k] = true;
        const To e = expect[k];
        const std::string what =
            std::string(v6[k] ? "IPv6" : "IPv4") + " probe " + std::to_string(k) + " on " + port;
        if (port == "lan0") {
          EXPECT_EQ(e, To::kHost) << what;
          EXPECT_FALSE(p.tunneled) << what;
          EXPECT_EQ(p.dst, kHostMac) << what;
          ++probes_lan0;
        } else if (port == "wan0") {
          EXPECT_TRUE(e == To::kB || e == To::kBoth) << what;
          EXPECT_TRUE(p.tunneled && p.outer_dst == kRemoteB1) << what;
          ++probes_wan0;
        } else {
          EXPECT_TRUE(e == To::kC || e == To::kBoth) << what;
          EXPECT_TRUE(p.tunneled && p.outer_dst == kRemoteC1) << what;
          ++probes_wan1;
        }
      }
    }
    probes += expect.size();
    probes_dropped += none;
    EXPECT_EQ(dp_->counters().drops[static_cast<size_t>(DropReason::kNO_ROUTE)], probes_dropped)
        << "every probe to a withdrawn route, and nothing else";
  }

  std::printf(
      "%u route changes (%u adds/replaces, %u withdrawals) in place in %.1f s of apply() "
      "(%.0f changes/s); %llu packets forwarded meanwhile; %llu probes\n",
      done, sets, withdraws, apply_s, done / apply_s, static_cast<unsigned long long>(sent),
      static_cast<unsigned long long>(probes));
  EXPECT_EQ(done, kChanges);
  EXPECT_GE(sent, 200000u);
  EXPECT_EQ(dp_->tables()->generation, generation) << "no snapshot was published";
  EXPECT_EQ(dp_->tables()->tenants[0].fib, fib) << "the same FIB, changed in place";
  // Both kinds of ECMP member were used, and the LAN gateway.
  EXPECT_GT(probes_wan1, 0u);
  EXPECT_GT(probes_lan0, 0u);
  CountersSnapshot c = dp_->counters();
  EXPECT_EQ(c.lan_rx.packets, sent + probes);
  EXPECT_EQ(c.line_tx[b1].packets, on_wan0 + probes_wan0);
  EXPECT_EQ(c.line_tx[c1].packets, probes_wan1);
  EXPECT_EQ(c.lan_tx.packets, probes_lan0);
  EXPECT_EQ(c.lan_rx.packets, c.wan_tx.packets + c.lan_tx.packets +
                                  c.drops[static_cast<size_t>(DropReason::kNO_ROUTE)]);
  EXPECT_EQ(nonZeroDrops(c),
            probes_dropped ? "no-route=" + std::to_string(probes_dropped) + " " : "");
}

// A reload that fails half way (a new tenant's FIB already built, another
// tenant's routes staged, new counter slots taken, then a route that
// cannot be resolved) leaves everything as it was: routes, FIB, next hops,
// counter slots, counters, forwarding.
TEST_F(DataplaneRing, FailedBuildLeavesTablesSlotsAndCountersAsTheyWere) {
  ASSERT_NO_FATAL_FAILURE(start(configYaml(route("10.2.0.0/16", "b"), kPeersBC)));
  // Routes from another source, too.
  RouteUpdate frr = frrRoute1060({viaPeer("b"), viaPeer("c")});
  ASSERT_TRUE(builder_.apply(std::vector<RouteUpdate>{frr}, sync()).ok());
  // Some traffic, so that the counters are not all zero.
  {
    Traffic::Options o;
    o.min_packets = 5000;
    o.remote = {{"wan0", kRemoteB1}};
    Traffic traffic(o);
    ASSERT_TRUE(traffic.wait(10s));
  }

  const auto routes_before = builder_.routes();
  const auto lines_before = builder_.lineSlots().slots();
  const auto tunnels_before = builder_.tunnelSlots().slots();
  const auto next_hops_before = builder_.rib("blue")->nextHops().entries();
  const std::shared_ptr<const TenantFib> fib = builder_.fib("blue");
  const uint8_t dst_b[4] = {10, 2, 0, 5}, dst_frr[4] = {10, 60, 1, 1};
  const auto nh_b = fib->lookup4(dst_b), nh_frr = fib->lookup4(dst_frr);
  ASSERT_TRUE(nh_b && nh_frr);
  const CountersSnapshot counters_before = dp_->counters();
  const uint64_t generation = dp_->tables()->generation;
  EXPECT_EQ(lines_before.size(), 2u);
  EXPECT_EQ(tunnels_before.size(), 2u);

  // The next config: peer d (a new line and tunnels), tenants red and green
  // (new), blue's route moved to c and a new one via d; green's input then
  // gets a route to a peer that does not exist.
  const std::string peer_d = R"(  - name: d
    inner-mac: 02:00:00:00:0d:01
    lines:
      - name: d1
        port: wan1
        local-vtep: 198.51.100.1
        remote-vtep: 192.0.2.4
        next-hop: 198.51.100.254
)";
  const std::string more_tenants = "  - name: red\n    vni: 5002\n  - name: green\n    vni: 5003\n";
  const config::ConfigPtr next =
      load(configYaml(route("10.2.0.0/16", "c") + route("10.77.0.0/16", "d") + more_tenants,
                      std::string(kPeersBC) + peer_d));
  ASSERT_TRUE(next);
  TablesInput input = TablesInput::fromConfig(*next, env->openPorts(), kWorkers);
  RouteSpec bad;
  bad.prefix = prefix4(10, 99, 0, 0, 16);
  bad.vias = {viaPeer("nobody")};
  input.routes["red"][RouteSource::kStatic].push_back(
      RouteSpec{prefix4(10, 98, 0, 0, 16), {viaPeer("d")}, 1});
  input.routes["green"][RouteSource::kStatic].push_back(bad);
  auto failed = builder_.build(input, sync());
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.error(), "tenant green, route 10.99.0.0/16: there is no peer nobody");

  // Nothing changed.
  EXPECT_EQ(builder_.lineSlots().slots(), lines_before);
  EXPECT_EQ(builder_.tunnelSlots().slots(), tunnels_before);
  EXPECT_EQ(builder_.rib("red"), nullptr);
  EXPECT_EQ(builder_.rib("green"), nullptr);
  EXPECT_EQ(builder_.rib("blue")->nextHops().entries(), next_hops_before);
  EXPECT_EQ(builder_.fib("blue"), fib);
  EXPECT_EQ(fib->lookup4(dst_b), nh_b);
  EXPECT_EQ(fib->lookup4(dst_frr), nh_frr);
  const uint8_t dst_d[4] = {10, 77, 0, 5};
  EXPECT_FALSE(fib->lookup4(dst_d));
  const auto routes_after = builder_.routes();
  ASSERT_EQ(routes_after.size(), routes_before.size());
  for (size_t i = 0; i < routes_before.size(); ++i) {
    EXPECT_EQ(routes_after[i].prefix, routes_before[i].prefix);
    EXPECT_EQ(routes_after[i].via, routes_before[i].via);
    EXPECT_EQ(routes_after[i].source, routes_before[i].source);
    EXPECT_EQ(routes_after[i].selected, routes_before[i].selected);
  }
  EXPECT_EQ(dp_->tables()->generation, generation);
  const CountersSnapshot counters_after = dp_->counters();
  EXPECT_EQ(counters_after.drops, counters_before.drops);
  EXPECT_EQ(counters_after.lan_rx.packets, counters_before.lan_rx.packets);
  for (size_t s = 0; s < kMaxLines; ++s) {
    EXPECT_EQ(counters_after.line_tx[s].packets, counters_before.line_tx[s].packets) << s;
  }
  for (size_t s = 0; s < kMaxTunnels; ++s) {
    EXPECT_EQ(counters_after.tunnel_tx[s].packets, counters_before.tunnel_tx[s].packets) << s;
  }
  // And traffic still goes to b.
  {
    Traffic::Options o;
    o.min_packets = 5000;
    o.remote = {{"wan0", kRemoteB1}};
    Traffic traffic(o);
    ASSERT_TRUE(traffic.wait(10s));
    EXPECT_EQ(traffic.bad(), 0u) << traffic.firstError();
    EXPECT_EQ(traffic.on("wan0"), traffic.sent());
  }

  // Without the bad route the same build goes through: peer d's line takes
  // the next free slot, 10.2.0.0/16 moves to c, red gets its FIB.
  input.routes["green"][RouteSource::kStatic].clear();
  auto built = builder_.build(input, sync());
  ASSERT_TRUE(built.ok()) << built.error();
  dp_->publish(std::move(*built));
  EXPECT_EQ(builder_.lineSlots().slots().at("d/d1"), 2u);
  EXPECT_EQ(builder_.tunnelSlots().slots().size(), 9u);  // 3 peers x 3 tenants
  EXPECT_EQ(builder_.fib("blue"), fib);
  EXPECT_NE(fib->lookup4(dst_b), nh_b);
  EXPECT_TRUE(fib->lookup4(dst_d));
  EXPECT_TRUE(builder_.fib("red")->lookup4(std::array<uint8_t, 4>{10, 98, 0, 1}.data()));
  EXPECT_EQ(fib->lookup4(dst_frr), nh_frr) << "FRR's route stays across the reload";

  // A batch of route changes is all or nothing too: a good change before a
  // bad one is not applied.
  const auto next_hops = builder_.rib("blue")->nextHops().entries();
  RouteUpdate good = frr, wrong = frr;
  good.prefix = prefix4(10, 61, 0, 0, 16);
  good.vias = {viaPeer("d"), viaPeer("c")};  // a new ECMP group
  wrong.prefix = prefix4(10, 62, 0, 0, 16);
  wrong.vias = {viaPeer("nobody")};
  auto batch = builder_.apply(std::vector<RouteUpdate>{good, wrong}, sync());
  ASSERT_FALSE(batch.ok());
  EXPECT_EQ(batch.error(), "tenant blue, route 10.62.0.0/16: there is no peer nobody");
  EXPECT_FALSE(fib->lookup4(std::array<uint8_t, 4>{10, 61, 0, 1}.data()));
  EXPECT_EQ(builder_.rib("blue")->nextHops().entries(), next_hops);
  EXPECT_FALSE(builder_.rib("blue")->best(good.prefix));
}

// An ECMP route over two peers (a remote site's two gateways, from FRR):
// when every line of one peer is down (BFD found its gateway dead, while
// BGP graceful restart keeps its routes), that member's flows go to the
// other peer instead of being dropped, the other flows stay, and all return
// when the line is back.
TEST_F(DataplaneRing, EcmpOverPeersPassesOverAPeerWithoutUsableLines) {
  ASSERT_NO_FATAL_FAILURE(start(configYaml(route("10.2.0.0/16", "b"), kPeersBC)));
  RouteUpdate frr = frrRoute1060({viaPeer("b"), viaPeer("c")});
  ASSERT_TRUE(builder_.apply(std::vector<RouteUpdate>{frr}, sync()).ok());
  const uint16_t b1 = slot("b", "b1");
  constexpr unsigned kFlows = 100;
  auto flow = [](unsigned i) {
    Flow f;
    f.dst = {10, 60, static_cast<uint8_t>(i / 10), static_cast<uint8_t>(1 + i % 10)};
    f.sport = static_cast<uint16_t>(30000 + 7 * i);
    return f;
  };
  uint32_t seq = 0;
  // One packet of every flow; the peer ("b" or "c") each one went to.
  auto round = [&] {
    std::vector<rte_mbuf*> pkts;
    for (unsigned i = 0; i < kFlows; ++i) {
      pkts.push_back(lanPacket(flow(i), seq++));
    }
    sendAll(pkts);
    Captured out = collect(pkts.size());
    EXPECT_EQ(out.total(), pkts.size()) << "every packet sent comes out, once";
    std::vector<std::string> peer_of(kFlows);
    forEachTunneled(out, [&](const std::string&, const Tunneled& t) {
      const unsigned i = (t.inner.sport - 30000) / 7;
      peer_of[i] = t.dst_ip == kRemoteB1 ? "b" : t.dst_ip == kRemoteC1 ? "c" : "?";
    });
    return peer_of;
  };
  const auto before = round();
  const auto on_b = std::count(before.begin(), before.end(), "b");
  EXPECT_GE(on_b, 10) << "flows spread over both peers";
  EXPECT_GE(std::count(before.begin(), before.end(), "c"), 10) << "flows spread over both peers";

  dp_->setLineUp(b1, false);
  const auto during = round();
  for (unsigned i = 0; i < kFlows; ++i) {
    EXPECT_EQ(during[i], "c") << "flow " << i << " (was on " << before[i] << ")";
  }
  dp_->setLineUp(b1, true);
  EXPECT_EQ(round(), before) << "every flow back on its own peer";
  EXPECT_EQ(nonZeroDrops(dp_->counters()), "");
}

// Ten flows to 10.2.0.0/16 sent from the LAN; the peer ("b", "c") each
// packet that came out was tunnelled to, each on its peer's own line.
// `expect`: how many should come out (the others are waited for as drops).
std::multiset<std::string> peersOfTenFlows(Dataplane& dp, uint32_t* seq, size_t expect = 10) {
  auto noTunnel = [&] { return dp.counters().drops[static_cast<size_t>(DropReason::kNO_TUNNEL)]; };
  const uint64_t dropped_before = noTunnel();
  std::vector<rte_mbuf*> pkts;
  for (unsigned i = 0; i < 10; ++i) {
    Flow f;
    f.dst = {10, 2, 0, static_cast<uint8_t>(1 + i)};
    f.sport = static_cast<uint16_t>(30000 + i);
    pkts.push_back(lanPacket(f, (*seq)++));
  }
  sendAll(pkts);
  Captured out = collect(expect);
  EXPECT_TRUE(waitUntil([&] { return noTunnel() - dropped_before >= 10 - expect; }, 5000ms))
      << "dropped as no-tunnel: " << noTunnel() - dropped_before << ", want " << 10 - expect;
  std::multiset<std::string> to;
  forEachTunneled(out, [&](const std::string& port, const Tunneled& t) {
    EXPECT_EQ(port, t.dst_ip == kRemoteB1 ? "wan0" : "wan1") << "each peer's own line";
    to.insert(t.dst_ip == kRemoteB1 ? "b" : t.dst_ip == kRemoteC1 ? "c" : "?");
  });
  return to;
}

// Peers b and c as the two gateways of one site (c has `site: b`): a route
// to b alone (b Active, c's announcement prepended) goes to c while b's line
// is down, and back to b when it is up again.
TEST_F(DataplaneRing, AnotherGatewayOfTheSiteStandsInForOneWithoutLines) {
  std::string peers = kPeersBC;
  peers.replace(peers.find("  - name: c\n"), 12, "  - name: c\n    site: b\n");
  ASSERT_NO_FATAL_FAILURE(start(configYaml(route("10.2.0.0/16", "b"), peers)));
  const std::vector<std::string> b(10, "b"), c(10, "c");
  const std::multiset<std::string> all_b(b.begin(), b.end()), all_c(c.begin(), c.end());
  uint32_t seq = 0;
  EXPECT_EQ(peersOfTenFlows(*dp_, &seq), all_b);
  EXPECT_EQ(dp_->counters().stand_in, 0u);
  dp_->setLineUp(slot("b", "b1"), false);
  EXPECT_EQ(peersOfTenFlows(*dp_, &seq), all_c) << "c stands in for b";
  EXPECT_EQ(dp_->counters().stand_in, 10u);
  EXPECT_EQ(nonZeroDrops(dp_->counters()), "");
  // Both without a line: dropped as for a tunnel without a usable line.
  dp_->setLineUp(slot("c", "c1"), false);
  EXPECT_TRUE(peersOfTenFlows(*dp_, &seq, 0).empty());
  EXPECT_EQ(dp_->counters().stand_in, 10u);
  dp_->setLineUp(slot("c", "c1"), true);
  dp_->setLineUp(slot("b", "b1"), true);
  EXPECT_EQ(peersOfTenFlows(*dp_, &seq), all_b) << "back on b";
  EXPECT_EQ(dp_->counters().stand_in, 10u);
}

// The same without a common site: b's traffic is dropped while its line is
// down, c is not used.
TEST_F(DataplaneRing, NoStandInWithoutACommonSite) {
  ASSERT_NO_FATAL_FAILURE(start(configYaml(route("10.2.0.0/16", "b"), kPeersBC)));
  uint32_t seq = 0;
  dp_->setLineUp(slot("b", "b1"), false);
  EXPECT_TRUE(peersOfTenFlows(*dp_, &seq, 0).empty());
  EXPECT_EQ(dp_->counters().stand_in, 0u);
}

// Routes of a source a reload does not name (FRR) keep their next hops by
// name: when their peer goes, they leave the FIB, and a tunnel that takes
// the freed counter slot later (another peer, another tenant) never carries
// them; when the peer comes back, so do they.
TEST_F(DataplaneRing, KeptRoutesFollowTheirPeerNotItsOldSlot) {
  ASSERT_NO_FATAL_FAILURE(start(configYaml(route("10.2.0.0/16", "b"), kPeersBC)));
  RouteUpdate frr = frrRoute1060({viaPeer("c")});
  ASSERT_TRUE(builder_.apply(std::vector<RouteUpdate>{frr}, sync()).ok());
  const uint8_t dst[4] = {10, 60, 1, 1};
  auto viaOf = [&](const std::string& tenant, const std::string& prefix) {
    std::string via;
    for (const auto& r : builder_.routes()) {
      if (r.tenant == tenant && r.prefix == prefix && r.source == "frr") {
        via = r.via;
      }
    }
    return via;
  };
  ASSERT_EQ(viaOf("blue", "10.60.0.0/16"), "peer c");
  ASSERT_TRUE(builder_.fib("blue")->lookup4(dst));
  // show routes can be cut short (it is, at 100,000 candidates).
  const auto all = builder_.routes();
  EXPECT_EQ(builder_.candidateCount(), all.size());
  ASSERT_GT(all.size(), 2u);
  const auto first_two = builder_.routes(2);
  ASSERT_EQ(first_two.size(), 2u);
  EXPECT_EQ(first_two[1].prefix, all[1].prefix);
  const uint16_t c_blue = builder_.tunnelSlots().slots().at("c/blue");

  // Peer c goes: its route leaves the FIB and show routes.
  const std::string peer_b =
      std::string(kPeersBC).substr(0, std::string(kPeersBC).find("  - name: c"));
  config::ConfigPtr only_b = load(configYaml(route("10.2.0.0/16", "b"), peer_b));
  ASSERT_TRUE(only_b);
  ASSERT_NO_FATAL_FAILURE(publish(*only_b));
  EXPECT_FALSE(builder_.fib("blue")->lookup4(dst));
  EXPECT_EQ(viaOf("blue", "10.60.0.0/16"), "");

  // Tenant red and peer d (red only) arrive: red's tunnels take free slots,
  // c/blue's among them.
  const std::string peer_d = R"(  - name: d
    inner-mac: 02:00:00:00:0d:01
    tenants: [red]
    lines:
      - name: d1
        port: wan1
        local-vtep: 198.51.100.1
        remote-vtep: 192.0.2.4
        next-hop: 198.51.100.254
)";
  const std::string red = "  - name: red\n    vni: 5002\n";
  config::ConfigPtr with_d = load(configYaml(route("10.2.0.0/16", "b") + red, peer_b + peer_d));
  ASSERT_TRUE(with_d);
  ASSERT_NO_FATAL_FAILURE(publish(*with_d));
  std::string taker;  // b/red here: b carries every tenant
  for (const auto& [name, slot] : builder_.tunnelSlots().slots()) {
    taker = slot == c_blue ? name : taker;
  }
  EXPECT_EQ(taker, "b/red") << "a tunnel of another tenant took c/blue's old slot";
  EXPECT_FALSE(builder_.fib("blue")->lookup4(dst)) << "blue's route must not use d/red";
  EXPECT_EQ(viaOf("blue", "10.60.0.0/16"), "");

  // Peer c back: the route is back, through c.
  config::ConfigPtr with_c =
      load(configYaml(route("10.2.0.0/16", "b") + red, std::string(kPeersBC) + peer_d));
  ASSERT_TRUE(with_c);
  ASSERT_NO_FATAL_FAILURE(publish(*with_c));
  EXPECT_EQ(viaOf("blue", "10.60.0.0/16"), "peer c");
  const auto nh = builder_.fib("blue")->lookup4(dst);
  ASSERT_TRUE(nh);
  const NextHop& hop = builder_.rib("blue")->nextHops().at(*nh);
  EXPECT_EQ(hop.kind, NextHop::Kind::kTunnel);
  EXPECT_EQ(hop.tunnel, builder_.tunnelSlots().slots().at("c/blue"));

  // What a source sends is checked: a /33 IPv4 prefix and a route to the
  // gateway itself from FRR are refused, nothing applied.
  RouteUpdate too_long = frr, local = frr;
  too_long.prefix.length = 33;
  local.prefix = prefix4(10, 61, 0, 0, 16);
  local.vias = {Via{Via::Kind::kLocal, {}, {}, {}}};
  auto r1 = builder_.apply(std::vector<RouteUpdate>{too_long}, sync());
  ASSERT_FALSE(r1.ok());
  EXPECT_EQ(r1.error(),
            "route 10.60.0.0/33 of tenant blue: prefix length 33 is beyond its family's");
  auto r2 = builder_.apply(std::vector<RouteUpdate>{local}, sync());
  ASSERT_FALSE(r2.ok());
  EXPECT_EQ(r2.error(),
            "route 10.61.0.0/16 of tenant blue: only the gateway's own addresses (source local) go "
            "to the gateway itself");
  EXPECT_FALSE(builder_.fib("blue")->lookup4(std::array<uint8_t, 4>{10, 61, 0, 1}.data()));
}

// A build runs on a thread of its own (not the one that started the
// dataplane), and while it runs, another writer is refused: here from inside
// the build's own grace period, when it waits for the workers.
TEST_F(DataplaneRing, BuildRunsOnAnotherThreadOneWriterAtATime) {
  ASSERT_NO_FATAL_FAILURE(start(configYaml(route("10.2.0.0/16", "b"), kPeersBC)));
  const config::ConfigPtr next = load(configYaml(route("10.2.0.0/16", "c"), kPeersBC));
  ASSERT_TRUE(next);
  Result<std::unique_ptr<ForwardingTables>, std::string> built =
      unexpected(std::string("did not run"));
  std::string refused;
  unsigned grace_periods = 0;
  std::thread writer([&] {
    built = builder_.build(TablesInput::fromConfig(*next, env->openPorts(), kWorkers), [&] {
      if (auto r = builder_.apply(std::vector<RouteUpdate>{}, sync()); !r) {
        refused = r.error();
      }
      ++grace_periods;
      dp_->synchronize();
    });
  });
  writer.join();
  ASSERT_TRUE(built.ok()) << built.error();
  EXPECT_GT(grace_periods, 0u) << "peer b's next hop was retired after a grace period";
  EXPECT_EQ(refused, "another change of the forwarding tables is under way");
  dp_->publish(std::move(*built));

  Traffic::Options o;
  o.min_packets = 5000;
  o.remote = {{"wan1", kRemoteC1}};
  Traffic traffic(o);
  ASSERT_TRUE(traffic.wait(10s));
  EXPECT_EQ(traffic.bad(), 0u) << traffic.firstError();
  EXPECT_EQ(traffic.on("wan1"), traffic.sent());
  // And the writer's place is free again.
  EXPECT_TRUE(builder_.apply(std::vector<RouteUpdate>{}, sync()).ok());
}

// Kernel neighbour events: a host's MAC comes, changes and goes in the
// neighbour table in place, with no new snapshot; a line's next hop getting
// its MAC is the one change that needs new tables (the MAC is in the line's
// outer headers).
TEST_F(DataplaneRing, NeighboursChangeInPlaceLinesRepublish) {
  // wan0's router is not in the config: only the kernel resolves it.
  std::string yaml = configYaml(route("10.2.0.0/16", "b"), kPeersBC);
  const std::string router =
      "    neighbors:\n      - address: 203.0.113.254\n        mac: 02:00:00:00:02:fe\n";
  ASSERT_NE(yaml.find(router), std::string::npos);
  yaml.erase(yaml.find(router), router.size());
  const config::ConfigPtr c = load(yaml);
  ASSERT_TRUE(c);
  ASSERT_NO_FATAL_FAILURE(start(yaml));
  const uint64_t generation = dp_->tables()->generation;
  EXPECT_FALSE(dp_->tables()->lines[0].resolved);

  auto ports = env->openPorts();
  const Mac mac_a = {0x02, 0, 0, 0, 0x01, 0x20}, mac_b = {0x02, 0, 0, 0, 0x01, 0x21};
  auto kernelHas = [&](const char* port, const char* address, const Mac& mac) {
    config::MacAddress m;
    std::copy(mac.begin(), mac.end(), m.bytes.begin());
    ports[port].neighbors = {{*config::IpAddress::parse(address), m}};
  };
  auto update = [&] {
    auto r = builder_.updateNeighbors(TablesInput::fromConfig(*c, ports, kWorkers), sync());
    EXPECT_TRUE(r.ok()) << r.error();
    return r.ok() && *r;
  };
  // A packet to host 10.1.0.20 on lan0 (from the LAN, hairpinned): its
  // destination MAC, or nothing.
  uint32_t seq = 0;
  auto sendToHost = [&]() -> std::optional<Mac> {
    Flow f;
    f.dst = {10, 1, 0, 20};
    sendAll({lanPacket(f, seq++)});
    Captured out = collect(1, 300ms);
    if (out.on("lan0").size() != 1) {
      return std::nullopt;
    }
    return macAt(rte_pktmbuf_mtod(out.on("lan0")[0], const uint8_t*));
  };

  kernelHas("lan0", "10.1.0.20", mac_a);
  EXPECT_FALSE(update()) << "no line's next hop changed";
  EXPECT_EQ(sendToHost(), mac_a);
  kernelHas("lan0", "10.1.0.20", mac_b);
  EXPECT_FALSE(update());
  EXPECT_EQ(sendToHost(), mac_b);
  ports["lan0"].neighbors.clear();
  EXPECT_FALSE(update());
  Mac mac{};
  const uint8_t host[4] = {10, 1, 0, 20};
  EXPECT_FALSE(dp_->tables()->neighbor(env->port("lan0").id, false, host, &mac));
  EXPECT_EQ(dp_->tables()->generation, generation) << "no snapshot for a host's neighbour";

  // wan0's router resolves: line b1 needs its MAC in its outer headers.
  kernelHas("wan0", "203.0.113.254", kWan0RouterMac);
  ASSERT_TRUE(update());
  auto t = builder_.build(TablesInput::fromConfig(*c, ports, kWorkers), sync());
  ASSERT_TRUE(t.ok()) << t.error();
  dp_->publish(std::move(*t));
  EXPECT_TRUE(dp_->tables()->lines[0].resolved);
  EXPECT_FALSE(update()) << "nothing changed since";
  Traffic::Options o;
  o.min_packets = 2000;
  o.remote = {{"wan0", kRemoteB1}};
  Traffic traffic(o);
  ASSERT_TRUE(traffic.wait(10s));
  EXPECT_EQ(traffic.bad(), 0u) << traffic.firstError();
  EXPECT_EQ(traffic.on("wan0"), traffic.sent());
}

}  // namespace
}  // namespace mcgw::engine
