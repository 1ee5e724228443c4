// Packet capture on running ports, as dpdk-dumpcap does it but inside
// mcgwd: while a capture runs, ethdev RX and TX callbacks on every queue of
// the captured ports run the filter (a tcpdump expression compiled by
// libpcap, converted to eBPF by rte_bpf_convert, JIT-compiled when DPDK can,
// interpreted otherwise), copy what
// matches with rte_pcapng_copy into the capture's own mempool and enqueue it
// on a ring; a writer thread writes the ring to a file descriptor as pcapng
// (rte_pcapng).  Without a capture no callback is installed: the fast path
// pays nothing.  A copy that finds the ring full or no buffer is dropped and
// counted (never waited for); the file ends with an interface statistics
// block carrying what was matched and dropped (all ports together).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "config/result.hpp"

struct rte_bpf;
struct rte_mempool;
struct rte_ring;
struct rte_eth_rxtx_callback;
struct rte_pcapng;
struct rte_mbuf;

namespace mcgw::engine {

// Bounds of what a capture request may ask.
inline constexpr uint32_t kCaptureSnaplenMin = 64;
inline constexpr uint32_t kCaptureSnaplenMax = 9216;
inline constexpr uint32_t kCaptureSnaplenDefault = 1600;
inline constexpr size_t kCaptureFilterMaxBytes = 1024;
// Copies in flight between the workers and the writer.
inline constexpr unsigned kCaptureRing = 4096;

struct CaptureSpec {
  std::vector<uint16_t> ports;  // DPDK port ids
  std::string filter;           // tcpdump syntax; "" captures everything
  uint32_t snaplen = kCaptureSnaplenDefault;
  uint64_t count = 0;  // stop after this many packets (0: until stopped)
};

struct CaptureStats {
  uint64_t matched = 0;  // packets the filter took (copied or dropped)
  uint64_t dropped = 0;  // copies lost: the ring full or no buffer
  uint64_t written = 0;  // packets in the file
  bool done = false;     // the writer ended (count reached, reader gone, error)
  std::string end_reason;
};

// Compiles a tcpdump expression for Ethernet frames; the error says why not.
// Usable without the EAL (tests, and the CLI's check before it asks).
Result<bool, std::string> checkCaptureFilter(const std::string& expression, uint32_t snaplen);

class CaptureSession {
 public:
  // Everything that may fail before a byte is written: the filter, the
  // buffers, the ring.  synchronize() must return once no worker is inside a
  // callback installed before the call (the fast path's RCU grace period).
  static Result<std::unique_ptr<CaptureSession>, std::string> create(
      const CaptureSpec& spec, std::function<void()> synchronize);
  // Starts capturing into fd (taken: closed when the session ends, also on
  // failure).
  Result<bool, std::string> begin(int fd);
  // Stops capturing: the writer joined, the callbacks removed after a grace
  // period.  The stats are final afterwards.  Idempotent.
  void halt();
  ~CaptureSession();  // halt(), then the file completed and closed
  CaptureSession(const CaptureSession&) = delete;
  CaptureSession& operator=(const CaptureSession&) = delete;

  CaptureStats stats() const;
  const CaptureSpec& spec() const { return spec_; }

  // The callbacks' work (public for the C callbacks): one burst of a queue.
  void take(uint16_t port, uint16_t queue, rte_mbuf** pkts, uint16_t n, bool tx);

 private:
  CaptureSession() = default;
  void writerMain();
  void removeCallbacks();

  CaptureSpec spec_;
  int fd_ = -1;        // ours to close until the pcapng handle takes it
  int watch_fd_ = -1;  // the same descriptor, polled by the writer
  std::function<void()> synchronize_;
  rte_bpf* bpf_ = nullptr;
  uint64_t (*jit_)(void*) = nullptr;  // the filter compiled, when DPDK's JIT could
  rte_mempool* pool_ = nullptr;
  rte_ring* ring_ = nullptr;
  rte_pcapng* pcapng_ = nullptr;
  struct Installed {
    uint16_t port, queue;
    bool tx;
    const rte_eth_rxtx_callback* cb;
  };
  std::vector<Installed> callbacks_;
  std::thread writer_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> done_{false};
  std::atomic<uint64_t> matched_{0}, dropped_{0}, written_{0};
  std::string end_reason_;  // set by the writer before done_
  uint64_t start_ns_ = 0;
};

}  // namespace mcgw::engine
