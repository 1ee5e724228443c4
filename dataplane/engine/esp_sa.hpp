// ESP security associations as the fast path holds them (docs/encryption.md):
// one direction of one line, made by the control plane from agreed key
// material and shared by every snapshot that names it (shared_ptr), so a
// rekey or a reload publishes new tables without resetting a sequence
// number, a replay window or a counter.  What workers change per packet is
// atomic; each worker has its own AES-GCM context (an EVP context is not
// shared between threads).
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dataplane/crypto/esp.hpp"

namespace mcgw::engine {

// What the key agreement (or a static key file) gives for one SA.
struct SaMaterial {
  uint64_t generation = 0;
  uint32_t spi = 0;
  crypto::Key key{};
  crypto::Salt salt{};
};

class EspSa {
 public:
  enum class Direction : uint8_t { kInbound, kOutbound };

  // workers: how many worker contexts (Pipeline tx_queue 0..workers-1);
  // one more is made for the control thread (tests, tools).  Throws
  // std::runtime_error when OpenSSL cannot set up the cipher.
  EspSa(Direction d, const std::string& line, const SaMaterial& m, unsigned workers,
        uint32_t replay_window);
  EspSa(const EspSa&) = delete;
  EspSa& operator=(const EspSa&) = delete;

  Direction direction() const { return direction_; }
  bool inbound() const { return direction_ == Direction::kInbound; }
  const std::string& line() const { return line_; }  // "peer/line"
  uint32_t spi() const { return spi_; }
  uint64_t generation() const { return generation_; }
  const crypto::Salt& salt() const { return salt_; }
  std::chrono::steady_clock::time_point created() const { return created_; }

  // The worker's (or, past the workers, the control thread's) context.
  crypto::Gcm& gcm(unsigned worker) {
    return *gcm_[worker < gcm_.size() ? worker : gcm_.size() - 1];
  }
  crypto::ReplayWindow* window() { return window_.get(); }
  const crypto::ReplayWindow* window() const { return window_.get(); }

  // Outbound: the next sequence number (the first is 1); 0 past the limit
  // (the packet must not be sent: static keys reserve their numbers).
  // At the limit no number is taken (at most one per worker racing past
  // it), so the numbers skipped stay few.
  uint64_t nextSeq() {
    const uint64_t limit = limit_.load(std::memory_order_relaxed);
    if (seq_.load(std::memory_order_relaxed) >= limit) [[unlikely]] {
      return 0;
    }
    const uint64_t s = seq_.fetch_add(1, std::memory_order_relaxed) + 1;
    return s <= limit ? s : 0;
  }
  // The highest sequence number the SA may use (static keys: the end of
  // the reservation on disk); no limit by default.
  void setSeqLimit(uint64_t limit) { limit_.store(limit, std::memory_order_relaxed); }
  uint64_t seqLimit() const { return limit_.load(std::memory_order_relaxed); }
  uint64_t lastSeq() const { return seq_.load(std::memory_order_relaxed); }
  // Before the SA is published: the first sequence number is seq + 1
  // (static keys go on from what an earlier run reserved).
  void startSeqAfter(uint64_t seq) { seq_.store(seq, std::memory_order_relaxed); }

  void count(uint64_t bytes) {
    packets_.fetch_add(1, std::memory_order_relaxed);
    bytes_.fetch_add(bytes, std::memory_order_relaxed);
  }
  uint64_t packets() const { return packets_.load(std::memory_order_relaxed); }
  uint64_t bytes() const { return bytes_.load(std::memory_order_relaxed); }

 private:
  Direction direction_;
  std::string line_;
  uint32_t spi_;
  uint64_t generation_;
  crypto::Salt salt_;
  std::chrono::steady_clock::time_point created_;
  std::vector<std::unique_ptr<crypto::Gcm>> gcm_;
  std::unique_ptr<crypto::ReplayWindow> window_;  // inbound only
  std::atomic<uint64_t> seq_{0};
  std::atomic<uint64_t> limit_{UINT64_MAX};
  std::atomic<uint64_t> packets_{0}, bytes_{0};
};

// The SAs of one line that a snapshot holds: the one packets leave with
// (none: the line carries nothing while it is encrypted) and those that may
// arrive (the current one and, during a rekey, the previous or the next).
struct LineSas {
  std::shared_ptr<EspSa> outbound;
  std::vector<std::shared_ptr<EspSa>> inbound;
};

}  // namespace mcgw::engine
