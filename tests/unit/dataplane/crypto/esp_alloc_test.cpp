// No allocation per packet: OpenSSL's allocator is replaced (before main,
// so before OpenSSL allocates anything) by one that counts, and sealing and
// opening after set-up must not call it.
#include <gtest/gtest.h>
#include <openssl/crypto.h>

#include <atomic>
#include <cstdlib>
#include <vector>

#include "dataplane/crypto/esp.hpp"

namespace mcgw::crypto {
namespace {

std::atomic<long> allocations{0};

void* countMalloc(size_t n, const char*, int) {
  allocations.fetch_add(1, std::memory_order_relaxed);
  return std::malloc(n);
}
void* countRealloc(void* p, size_t n, const char*, int) {
  allocations.fetch_add(1, std::memory_order_relaxed);
  return std::realloc(p, n);
}
void countFree(void* p, const char*, int) {
  std::free(p);
}

const bool kHooked = CRYPTO_set_mem_functions(countMalloc, countRealloc, countFree) == 1;

TEST(EspAllocTest, SealAndOpenDoNotAllocate) {
  ASSERT_TRUE(kHooked) << "OpenSSL allocated before the counting allocator was installed";
  Key key{};
  key[0] = 1;
  const Salt salt{1, 2, 3, 4};
  Gcm tx(key), rx(key);
  ReplayWindow window(1024);
  std::vector<uint8_t> buf(kEspPrefixLen + 1400 + kEspMaxTrailerLen);
  EspOpened out;
  // Set-up (the first calls may fetch and cache the cipher's methods).
  ASSERT_GT(espSeal(tx, salt, 7, 1, 17, buf.data(), 100), 0u);
  ASSERT_EQ(espOpen(rx, salt, window, buf.data(), kEspPrefixLen + 100 + espTrailerLen(100), out),
            EspError::kNone);
  const long before = allocations.load();
  EXPECT_GT(before, 0);  // the counter does see OpenSSL's allocations
  for (uint64_t seq = 2; seq < 2000; ++seq) {
    const size_t n = seq % 1400;
    const size_t len = espSeal(tx, salt, 7, seq, 17, buf.data(), n);
    ASSERT_EQ(len, kEspPrefixLen + n + espTrailerLen(n));
    if (seq % 3 == 0) {
      buf[len - 1] ^= 1;  // refused ones must not allocate either
      ASSERT_EQ(espOpen(rx, salt, window, buf.data(), len, out), EspError::kAuth);
    } else {
      ASSERT_EQ(espOpen(rx, salt, window, buf.data(), len, out), EspError::kNone);
    }
  }
  EXPECT_EQ(allocations.load(), before);
}

}  // namespace
}  // namespace mcgw::crypto
