// The cryptodev engine of crypto::Gcm (docs/encryption.md, "Crypto engine"):
// DPDK cryptodev's synchronous CPU-crypto API on the crypto_aesni_gcm vdev
// (intel-ipsec-mb) under an EAL (--no-huge).  This binary also runs every
// GcmTest/EspTest of tests/unit/dataplane/crypto/esp_test.cpp (the known
// answers, the ESP byte tables of tests/tools/esp_vectors.py, round trips,
// bit flips, refusals) on the engine, which the environment starts and
// insists on: a machine where it cannot start fails here.  What follows
// checks the engine is the one in use, that each engine opens what the
// other sealed (byte for byte the same packets), that the cryptodev engine
// refuses every single-bit flip of an EVP-sealed packet, and that sessions
// are bounded and given back.
#include <gtest/gtest.h>
#include <rte_cryptodev.h>
#include <stdlib.h>

#include <memory>
#include <random>
#include <stdexcept>
#include <vector>

#include "dataplane/crypto/esp.hpp"
#include "tests/support/eal.hpp"
#include "tests/unit/dataplane/crypto/esp_vectors.hpp"

namespace mcgw::crypto {
namespace {

using namespace vectors;  // NOLINT(google-build-using-namespace)

class CryptodevEnvironment : public test::EalEnvironment {
 public:
  CryptodevEnvironment() : EalEnvironment("esp_cryptodev_test", 256) {}
  void SetUp() override {
    ::unsetenv("MCGW_CRYPTO_ENGINE");  // whatever the shell says: auto
    EalEnvironment::SetUp();
    ASSERT_FALSE(::testing::Test::HasFatalFailure());
    const EngineChoice c = initEngine();
    ASSERT_EQ(c.engine, Engine::kCryptodev) << "the cryptodev engine did not start: " << c.reason;
  }
  void TearDown() override {
    EXPECT_TRUE(shutdownEngine()) << "a Gcm still held cryptodev sessions";
    EXPECT_EQ(engine(), Engine::kOpenSsl);
    EXPECT_LT(rte_cryptodev_get_dev_id("crypto_aesni_gcm0"), 0);  // the vdev is gone
    EalEnvironment::TearDown();
  }
};

const auto* const kEnv = ::testing::AddGlobalTestEnvironment(new CryptodevEnvironment());

TEST(CryptodevEngineTest, IsTheEngineInUse) {
  EXPECT_EQ(engine(), Engine::kCryptodev);
  EXPECT_STREQ(engineName(), "cryptodev-ipsec-mb");
  const int dev = rte_cryptodev_get_dev_id("crypto_aesni_gcm0");
  ASSERT_GE(dev, 0);
  rte_cryptodev_info info{};
  rte_cryptodev_info_get(static_cast<uint8_t>(dev), &info);
  EXPECT_STREQ(info.driver_name, "crypto_aesni_gcm");
  EXPECT_NE(info.feature_flags & RTE_CRYPTODEV_FF_SYM_CPU_CRYPTO, 0u);
  // A Gcm takes the process's engine unless told otherwise.
  EXPECT_EQ(Gcm(kKey).engine(), Engine::kCryptodev);
  EXPECT_EQ(Gcm(kKey, Engine::kCryptodev).engine(), Engine::kCryptodev);
  EXPECT_EQ(Gcm(kKey, Engine::kOpenSsl).engine(), Engine::kOpenSsl);
  // Asking again changes nothing.
  EXPECT_EQ(initEngine().engine, Engine::kCryptodev);
}

// Every payload length up to 1500 (then every 37th), across the 2^32
// sequence boundary: both engines seal the same bytes, and each opens what
// the other sealed.
TEST(CryptodevEngineTest, EachEngineOpensTheOthers) {
  Gcm cdev_tx(kKey, Engine::kCryptodev), cdev_rx(kKey, Engine::kCryptodev);
  Gcm evp_tx(kKey, Engine::kOpenSsl), evp_rx(kKey, Engine::kOpenSsl);
  ASSERT_EQ(cdev_tx.engine(), Engine::kCryptodev);
  ASSERT_EQ(evp_tx.engine(), Engine::kOpenSsl);
  ReplayWindow w_cdev(1024), w_evp(1024);
  std::mt19937_64 rng(11);
  uint64_t seq = 0xfffffff0;
  size_t checked = 0;
  for (size_t n = 0; n <= 1500; n += (n < 64 ? 1 : 37)) {
    SCOPED_TRACE(n);
    Bytes payload(n);
    for (auto& b : payload) {
      b = static_cast<uint8_t>(rng());
    }
    ++seq;
    const Bytes by_cdev = seal(cdev_tx, seq, payload);
    const Bytes by_evp = seal(evp_tx, seq, payload);
    ASSERT_EQ(test::toHex(by_cdev), test::toHex(by_evp));
    EspOpened o;
    Bytes got;
    ASSERT_EQ(open(evp_rx, w_evp, by_cdev, &o, &got), EspError::kNone);
    EXPECT_EQ(got, payload);
    EXPECT_EQ(o.seq, seq);
    got.clear();
    ASSERT_EQ(open(cdev_rx, w_cdev, by_evp, &o, &got), EspError::kNone);
    EXPECT_EQ(got, payload);
    EXPECT_EQ(o.seq, seq);
    ++checked;
  }
  EXPECT_GT(checked, 100u);
  EXPECT_GT(w_cdev.highest(), uint64_t{1} << 32);
}

// The independent byte table (python3-cryptography) opens on the cryptodev
// engine after EVP sealed the same; and every single-bit flip of an
// EVP-sealed packet is refused by the cryptodev engine, which still opens
// the good one afterwards.
TEST(CryptodevEngineTest, RefusesEveryBitFlipOfAnEvpPacket) {
  Gcm evp(kKey, Engine::kOpenSsl), cdev(kKey, Engine::kCryptodev);
  ASSERT_EQ(cdev.engine(), Engine::kCryptodev);
  for (const Bytes& payload : {Bytes{}, hex("4041424344"), hex(kSealed[10].payload)}) {
    const uint64_t seq = 0x300000010;
    const Bytes good = seal(evp, seq, payload);
    size_t refused = 0;
    for (size_t bit = 0; bit < good.size() * 8; ++bit) {
      Bytes bad = good;
      bad[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
      auto w = windowAt(seq - 1);
      const EspError e = open(cdev, *w, bad);
      ASSERT_NE(e, EspError::kNone) << "bit " << bit << " of " << good.size() << " bytes";
      if (bit / 8 < 4 || bit / 8 >= 8) {
        EXPECT_EQ(e, EspError::kAuth) << bit;  // only the tag can tell
      }
      EXPECT_EQ(w->highest(), seq - 1);
      ++refused;
    }
    EXPECT_EQ(refused, good.size() * 8);
    auto w = windowAt(seq - 1);
    Bytes got;
    EspOpened o;
    ASSERT_EQ(open(cdev, *w, good, &o, &got), EspError::kNone);
    EXPECT_EQ(got, payload);
  }
}

// Two sessions per Gcm out of a pool of kCryptodevSessions: the next Gcm
// past the pool throws, and ~Gcm gives its sessions back.
TEST(CryptodevEngineTest, SessionsAreBoundedAndFreed) {
  std::vector<std::unique_ptr<Gcm>> held;
  for (unsigned i = 0; i < kCryptodevSessions / 2; ++i) {
    held.push_back(std::make_unique<Gcm>(kKey));
    ASSERT_EQ(held.back()->engine(), Engine::kCryptodev) << i;
  }
  EXPECT_THROW(Gcm{kKey}, std::runtime_error);
  held.pop_back();
  Gcm one_more(kKey);
  EXPECT_EQ(one_more.engine(), Engine::kCryptodev);
  held.clear();
  // Many more Gcm than the pool holds, one after the other.
  for (unsigned i = 0; i < kCryptodevSessions; ++i) {
    Gcm g(kKey);
    ASSERT_EQ(g.engine(), Engine::kCryptodev) << i;
  }
  // And every one of them worked, not only the first.
  Bytes payload = hex(kSealed[10].payload);
  Gcm last(kKey);
  EXPECT_EQ(test::toHex(seal(last, kSealed[10].seq, payload)), kSealed[10].esp);
}

}  // namespace
}  // namespace mcgw::crypto
