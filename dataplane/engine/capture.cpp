#include "dataplane/engine/capture.hpp"

#include <pcap/pcap.h>
#include <poll.h>
#include <rte_bpf.h>
#include <rte_bpf_ethdev.h>
#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_pcapng.h>
#include <rte_ring.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cstring>

#include "dataplane/engine/port.hpp"

namespace mcgw::engine {

namespace {

constexpr unsigned kChunk = 32;
// The writer's wait for copies, and how often it looks for a reader that
// went away.
constexpr int kWriterPollMs = 20;

std::atomic<unsigned> next_session{0};

uint16_t rxCallback(uint16_t port, uint16_t queue, rte_mbuf** pkts, uint16_t n, uint16_t,
                    void* user) {
  static_cast<CaptureSession*>(user)->take(port, queue, pkts, n, false);
  return n;
}

uint16_t txCallback(uint16_t port, uint16_t queue, rte_mbuf** pkts, uint16_t n, void* user) {
  static_cast<CaptureSession*>(user)->take(port, queue, pkts, n, true);
  return n;
}

// libpcap's compiled program for Ethernet frames of at most snaplen bytes.
Result<bpf_program, std::string> compile(const std::string& expression, uint32_t snaplen) {
  pcap_t* p = pcap_open_dead(DLT_EN10MB, static_cast<int>(snaplen));
  if (!p) {
    return unexpected(std::string("filter: libpcap cannot open a dead handle"));
  }
  bpf_program prog{};
  if (pcap_compile(p, &prog, expression.c_str(), 1, PCAP_NETMASK_UNKNOWN) != 0) {
    std::string why = pcap_geterr(p);
    pcap_close(p);
    return unexpected("filter: " + why);
  }
  pcap_close(p);
  return prog;
}

Result<bool, std::string> checkSpec(const std::string& expression, uint32_t snaplen) {
  if (snaplen < kCaptureSnaplenMin || snaplen > kCaptureSnaplenMax) {
    return unexpected("snaplen must be from " + std::to_string(kCaptureSnaplenMin) + " to " +
                      std::to_string(kCaptureSnaplenMax) + " bytes");
  }
  if (expression.size() > kCaptureFilterMaxBytes) {
    return unexpected("filter: longer than " + std::to_string(kCaptureFilterMaxBytes) + " bytes");
  }
  for (unsigned char ch : expression) {
    if (ch < 0x20 || ch == 0x7f) {
      return unexpected(std::string("filter: control characters are not allowed"));
    }
  }
  return true;
}

}  // namespace

Result<bool, std::string> checkCaptureFilter(const std::string& expression, uint32_t snaplen) {
  if (auto r = checkSpec(expression, snaplen); !r) {
    return r;
  }
  auto prog = compile(expression, snaplen);
  if (!prog) {
    return unexpected(prog.error());
  }
  pcap_freecode(&*prog);
  return true;
}

Result<std::unique_ptr<CaptureSession>, std::string> CaptureSession::create(
    const CaptureSpec& spec, std::function<void()> synchronize) {
  std::unique_ptr<CaptureSession> s(new CaptureSession());
  s->spec_ = spec;
  s->synchronize_ = std::move(synchronize);
  if (auto r = checkSpec(spec.filter, spec.snaplen); !r) {
    return unexpected(r.error());
  }
  if (spec.ports.empty()) {
    return unexpected(std::string("no port to capture on"));
  }
  if (!spec.filter.empty()) {
    auto prog = compile(spec.filter, spec.snaplen);
    if (!prog) {
      return unexpected(prog.error());
    }
    rte_bpf_prm* prm = rte_bpf_convert(&*prog);
    pcap_freecode(&*prog);
    if (!prm) {
      return unexpected("filter: cannot convert it to eBPF: " +
                        std::string(rte_strerror(rte_errno)));
    }
    s->bpf_ = rte_bpf_load(prm);
    rte_free(prm);
    if (!s->bpf_) {
      return unexpected("filter: cannot load it: " + std::string(rte_strerror(rte_errno)));
    }
    rte_bpf_jit jit{};
    if (rte_bpf_get_jit(s->bpf_, &jit) == 0 && jit.func) {
      s->jit_ = jit.func;
    }
  }
  const unsigned id = next_session++;
  const std::string pool_name = "mcgw_cap" + std::to_string(id);
  s->pool_ = rte_pktmbuf_pool_create(pool_name.c_str(), kCaptureRing + 511, 0, 0,
                                     static_cast<uint16_t>(rte_pcapng_mbuf_size(spec.snaplen)),
                                     SOCKET_ID_ANY);
  if (!s->pool_) {
    return unexpected("capture: no memory for its buffers: " +
                      std::string(rte_strerror(rte_errno)));
  }
  const std::string ring_name = "mcgw_capr" + std::to_string(id);
  s->ring_ = rte_ring_create(ring_name.c_str(), kCaptureRing, SOCKET_ID_ANY, RING_F_SC_DEQ);
  if (!s->ring_) {
    return unexpected("capture: no memory for its ring: " + std::string(rte_strerror(rte_errno)));
  }
  return s;
}

Result<bool, std::string> CaptureSession::begin(int fd) {
  fd_ = fd;
  utsname u{};
  ::uname(&u);
  const std::string os = std::string(u.sysname) + " " + u.release;
  const std::string comment =
      spec_.filter.empty() ? "mcgw capture" : "mcgw capture: " + spec_.filter;
  // rte_pcapng_fdopen describes the ports RTE_ETH_FOREACH_DEV lists, which
  // skips owned ports: the captured ones are unowned while it runs, so the
  // file's interfaces are exactly them (in port order).
  std::vector<rte_eth_dev_owner> owners(spec_.ports.size());
  for (size_t i = 0; i < spec_.ports.size(); ++i) {
    rte_eth_dev_owner_get(spec_.ports[i], &owners[i]);
    rte_eth_dev_owner_unset(spec_.ports[i], ownerId());
  }
  pcapng_ = rte_pcapng_fdopen(fd, os.c_str(), nullptr, "mcgwd", comment.c_str());
  for (size_t i = 0; i < spec_.ports.size(); ++i) {
    rte_eth_dev_owner_set(spec_.ports[i], &owners[i]);
  }
  if (!pcapng_) {
    return unexpected("capture: cannot write the pcapng header: " +
                      std::string(rte_strerror(rte_errno)));
  }
  watch_fd_ = fd;
  fd_ = -1;  // rte_pcapng_close closes it
  for (uint16_t port : spec_.ports) {
    rte_eth_dev_info info{};
    if (rte_eth_dev_info_get(port, &info) != 0) {
      return unexpected("capture: port " + std::to_string(port) + " is gone");
    }
    for (uint16_t q = 0; q < info.nb_rx_queues; ++q) {
      const rte_eth_rxtx_callback* cb = rte_eth_add_rx_callback(port, q, rxCallback, this);
      if (!cb) {
        return unexpected("capture: cannot add an RX callback: " +
                          std::string(rte_strerror(rte_errno)));
      }
      callbacks_.push_back({port, q, false, cb});
    }
    for (uint16_t q = 0; q < info.nb_tx_queues; ++q) {
      const rte_eth_rxtx_callback* cb = rte_eth_add_tx_callback(port, q, txCallback, this);
      if (!cb) {
        return unexpected("capture: cannot add a TX callback: " +
                          std::string(rte_strerror(rte_errno)));
      }
      callbacks_.push_back({port, q, true, cb});
    }
  }
  writer_ = std::thread([this] { writerMain(); });
  return true;
}

void CaptureSession::take(uint16_t port, uint16_t queue, rte_mbuf** pkts, uint16_t n, bool tx) {
  if (done_.load(std::memory_order_relaxed)) {
    return;
  }
  const auto dir = tx ? RTE_PCAPNG_DIRECTION_OUT : RTE_PCAPNG_DIRECTION_IN;
  for (uint16_t at = 0; at < n; at += kChunk) {
    const unsigned len = std::min<unsigned>(kChunk, n - at);
    uint64_t rc[kChunk];
    if (jit_) {
      for (unsigned i = 0; i < len; ++i) {
        rc[i] = jit_(pkts[at + i]);
      }
    } else if (bpf_) {
      rte_bpf_exec_burst(bpf_, reinterpret_cast<void**>(pkts + at), rc, len);
    }
    rte_mbuf* copies[kChunk];
    unsigned k = 0, matched = 0, lost = 0;
    const uint64_t now = rte_get_tsc_cycles();
    for (unsigned i = 0; i < len; ++i) {
      if (bpf_ && rc[i] == 0) {
        continue;
      }
      ++matched;
      rte_mbuf* c = rte_pcapng_copy(port, queue, pkts[at + i], pool_, spec_.snaplen, now, dir);
      if (c) {
        copies[k++] = c;
      } else {
        ++lost;
      }
    }
    if (k) {
      const unsigned in =
          rte_ring_enqueue_burst(ring_, reinterpret_cast<void**>(copies), k, nullptr);
      if (in < k) {
        rte_pktmbuf_free_bulk(copies + in, k - in);
        lost += k - in;
      }
    }
    if (matched) {
      matched_.fetch_add(matched, std::memory_order_relaxed);
    }
    if (lost) {
      dropped_.fetch_add(lost, std::memory_order_relaxed);
    }
  }
}

void CaptureSession::writerMain() {
  rte_mbuf* pkts[kChunk];
  std::string why;
  while (!stop_.load(std::memory_order_relaxed)) {
    unsigned n = rte_ring_dequeue_burst(ring_, reinterpret_cast<void**>(pkts), kChunk, nullptr);
    if (n == 0) {
      // Nothing to write: look for a reader that went away meanwhile (the
      // socket or pipe closed by mcgwctl), waiting a little for copies.
      pollfd p{watch_fd_, POLLRDHUP, 0};
      if (::poll(&p, 1, kWriterPollMs) > 0 && (p.revents & (POLLHUP | POLLERR | POLLRDHUP))) {
        why = "the reader closed its end";
        break;
      }
      continue;
    }
    const uint64_t left = spec_.count ? spec_.count - written_.load() : UINT64_MAX;
    if (n > left) {
      rte_pktmbuf_free_bulk(pkts + left, static_cast<unsigned>(n - left));
      n = static_cast<unsigned>(left);
    }
    size_t bytes = 0;
    for (unsigned i = 0; i < n; ++i) {
      bytes += rte_pktmbuf_pkt_len(pkts[i]);
    }
    // DPDK 22.11's writer leaves the mbufs to the caller (its header says
    // otherwise; the pool ran dry after one pool's worth without this).
    const ssize_t wrote = rte_pcapng_write_packets(pcapng_, pkts, static_cast<uint16_t>(n));
    const int err = errno;
    rte_pktmbuf_free_bulk(pkts, n);
    if (wrote < 0) {
      why = std::string("writing failed: ") + std::strerror(err) + " (the reader went away?)";
      break;
    }
    if (static_cast<size_t>(wrote) != bytes) {
      // A block cut in the middle: the stream cannot go on (the reader
      // stopped reading for the socket's send timeout).
      why = "writing stopped short: the reader does not keep up";
      break;
    }
    written_.fetch_add(n, std::memory_order_relaxed);
    if (spec_.count && written_.load() >= spec_.count) {
      why = std::to_string(spec_.count) + " packets captured";
      break;
    }
  }
  end_reason_ = why.empty() ? "stopped" : why;
  done_.store(true, std::memory_order_release);
}

void CaptureSession::removeCallbacks() {
  for (const auto& c : callbacks_) {
    if (c.tx) {
      rte_eth_remove_tx_callback(c.port, c.queue, c.cb);
    } else {
      rte_eth_remove_rx_callback(c.port, c.queue, c.cb);
    }
  }
  if (!callbacks_.empty()) {
    if (synchronize_) {
      synchronize_();  // no worker is inside take() any more
    }
    for (const auto& c : callbacks_) {
      rte_free(const_cast<rte_eth_rxtx_callback*>(c.cb));  // ethdev leaves them to us
    }
  }
  callbacks_.clear();
}

void CaptureSession::halt() {
  stop_.store(true);
  if (writer_.joinable()) {
    writer_.join();
  }
  removeCallbacks();
}

CaptureSession::~CaptureSession() {
  halt();
  if (ring_) {
    rte_mbuf* m;
    while (rte_ring_dequeue(ring_, reinterpret_cast<void**>(&m)) == 0) {
      rte_pktmbuf_free(m);
    }
  }
  if (pcapng_) {
    const std::string comment = "mcgw: " + std::to_string(matched_.load()) + " packets matched, " +
                                std::to_string(dropped_.load()) + " dropped (all ports)";
    rte_pcapng_write_stats(pcapng_, spec_.ports.front(), comment.c_str(), 0, 0, matched_.load(),
                           dropped_.load());
    rte_pcapng_close(pcapng_);  // closes the descriptor
  } else if (fd_ >= 0) {
    ::close(fd_);
  }
  rte_ring_free(ring_);
  rte_mempool_free(pool_);
  if (bpf_) {
    rte_bpf_destroy(bpf_);
  }
}

CaptureStats CaptureSession::stats() const {
  CaptureStats s;
  s.matched = matched_.load(std::memory_order_relaxed);
  s.dropped = dropped_.load(std::memory_order_relaxed);
  s.written = written_.load(std::memory_order_relaxed);
  s.done = done_.load(std::memory_order_acquire);
  if (s.done) {
    s.end_reason = end_reason_;
  }
  return s;
}

}  // namespace mcgw::engine
