// The anti-replay window with 64-bit ESN (RFC 4303 Appendix A) on its own:
// inference, a model check, and a reader racing the writer.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <random>
#include <set>
#include <string>
#include <thread>

#include "dataplane/crypto/esp.hpp"
#include "tests/unit/dataplane/crypto/esp_vectors.hpp"

namespace mcgw::crypto {
namespace {

using vectors::windowAt;

// RFC 4303 A2.2, W = 64.
TEST(ReplayWindowTest, EsnInference) {
  const uint64_t k32 = uint64_t{1} << 32;
  {
    // Case A: the window [Tl - W + 1, Tl] lies in one subspace (Th = 0).
    auto wp = windowAt(k32 - 10, 64);
    auto& w = *wp;
    EXPECT_EQ(w.infer(0xfffffff6), k32 - 10);          // the top itself
    EXPECT_EQ(w.infer(0xfffffff0), k32 - 16);          // inside, below the top
    EXPECT_EQ(w.infer(0xfffffffe), k32 - 2);           // ahead, same subspace
    EXPECT_EQ(w.infer(0xffffffb7), k32 - 73);          // = Bl: still this subspace
    EXPECT_EQ(w.infer(0xffffffb6), k32 + 0xffffffb6);  // below Bl: the next subspace
    EXPECT_EQ(w.infer(0), k32);                        // wrapped forwards
    EXPECT_EQ(w.infer(5), k32 + 5);
  }
  {
    // Case B: the window reaches back over the boundary (Tl = 5 < W - 1).
    auto wp = windowAt(k32 + 5, 64);
    auto& w = *wp;
    EXPECT_EQ(w.infer(5), k32 + 5);
    EXPECT_EQ(w.infer(3), k32 + 3);
    EXPECT_EQ(w.infer(0), k32);
    EXPECT_EQ(w.infer(100), k32 + 100);                // ahead
    EXPECT_EQ(w.infer(0xfffffff0), k32 - 16);          // late, from before the wrap
    EXPECT_EQ(w.infer(0xffffffc6), k32 - 58);          // = Bl
    EXPECT_EQ(w.infer(0xffffffc5), k32 + 0xffffffc5);  // below Bl: this subspace, far ahead
  }
  {
    // Nothing received yet: no subspace below 0.
    ReplayWindow w(64);
    EXPECT_EQ(w.infer(1), 1u);
    EXPECT_EQ(w.infer(0xfffffff0), 0xfffffff0u);
  }
}

TEST(ReplayWindowTest, SizeIsRounded) {
  EXPECT_EQ(ReplayWindow(0).size(), 64u);
  EXPECT_EQ(ReplayWindow(1).size(), 64u);
  EXPECT_EQ(ReplayWindow(64).size(), 64u);
  EXPECT_EQ(ReplayWindow(65).size(), 128u);
  EXPECT_EQ(ReplayWindow(1000).size(), 1024u);
  EXPECT_EQ(ReplayWindow(65536).size(), 65536u);
  EXPECT_EQ(ReplayWindow(1u << 30).size(), 65536u);
  EXPECT_EQ(ReplayWindow(UINT32_MAX).size(), 65536u);
}

// The window against a plain set of received numbers, for several sizes:
// random jumps forwards (some beyond the window), late and replayed packets.
TEST(ReplayWindowTest, MatchesAModel) {
  for (uint32_t size : {64u, 1024u, 4096u}) {
    SCOPED_TRACE(size);
    ReplayWindow w(size);
    std::set<uint64_t> seen;
    uint64_t top = 0;
    auto model_check = [&](uint64_t s) {
      return s != 0 && (s > top || (top - s < size && !seen.count(s)));
    };
    std::mt19937_64 rng(size);
    for (int i = 0; i < 200000; ++i) {
      uint64_t s = 0;
      switch (rng() % 8) {
        case 0:
          s = top + 1;
          break;
        case 1:
          s = top + 1 + rng() % (3 * size);  // jumps, sometimes beyond the window
          break;
        case 2:
          s = top + rng() % 70;  // a partial word's worth
          break;
        default: {
          const uint64_t back = rng() % (size + size / 4 + 2);
          s = back > top ? 0 : top - back;  // late, replayed, too old, 0
        }
      }
      ASSERT_EQ(w.check(s), model_check(s)) << "seq " << s << " top " << top;
      if (rng() % 4 != 0) {
        const bool ok = model_check(s);
        ASSERT_EQ(w.update(s), ok) << "seq " << s << " top " << top;
        if (ok) {
          seen.insert(s);
          top = std::max(top, s);
        }
      }
      ASSERT_EQ(w.highest(), top);
    }
  }
}

// One thread updates (the RX worker), another checks (status, or a check
// that races an update).  A number that was marked before the reader saw
// it published, and that cannot have slid out of the window while the
// reader looked, is always refused.  Run under TSan this also shows the
// words are free of data races.
TEST(ReplayWindowTest, UpdateRacesCheck) {
  for (uint32_t size : {64u, 1024u, 4096u}) {
    ReplayWindow w(size);
    constexpr uint64_t kLast = 300000;
    std::atomic<uint64_t> published{0}, reads{0};
    std::thread writer([&] {
      for (uint64_t s = 1; s <= kLast; ++s) {
        // Out of order inside the window now and then.
        const uint64_t seq = (s % 7 == 3 && s + 2 <= kLast) ? s + 2 : (s % 7 == 5 ? s - 2 : s);
        EXPECT_TRUE(w.update(seq)) << seq;
        published.store(s, std::memory_order_release);
        if (s % 512 == 0 && s < kLast) {
          // Let the reader in, however the two threads are scheduled.
          const uint64_t r = reads.load(std::memory_order_relaxed);
          while (reads.load(std::memory_order_relaxed) == r) {
            std::this_thread::yield();
          }
        }
      }
    });
    uint64_t checked = 0;
    std::string failure;
    std::mt19937_64 rng(size);
    while (published.load(std::memory_order_acquire) < kLast) {
      const uint64_t k = published.load(std::memory_order_acquire);
      reads.fetch_add(1, std::memory_order_relaxed);
      if (k < 8 || !failure.empty()) {
        continue;
      }
      // Every number up to k - 2 has been marked (the out-of-order pairs
      // finish within 2).
      const uint64_t s = k - 2 - rng() % std::min<uint64_t>(k - 2, size / 2);
      const bool accepted = w.check(s);
      const uint64_t k2 = published.load(std::memory_order_acquire);
      // The top is at most k2 + 3 during the check; s stayed in the window
      // if s > k2 + 3 - size.
      if (s + size > k2 + 3) {
        ++checked;
        if (accepted) {
          failure = "seq " + std::to_string(s) + " accepted, published " + std::to_string(k) +
                    ".." + std::to_string(k2);
        }
      }
    }
    writer.join();
    EXPECT_EQ(failure, "");
    EXPECT_GT(checked, kLast / 512);  // the reader looked while the writer ran
    EXPECT_EQ(w.highest(), kLast);
    RecordProperty("checked_" + std::to_string(size), static_cast<int>(checked));
  }
}

}  // namespace
}  // namespace mcgw::crypto
