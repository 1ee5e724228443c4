// ESP with AES-256-GCM (dataplane/crypto/esp.hpp): known-answer tests of the
// cipher through Gcm::seal/open (the calls the workers make), ESP byte
// tables computed independently by tests/tools/esp_vectors.py (python3
// cryptography's AESGCM), espOpen's refusals and its use of the anti-replay
// window.  Engine-agnostic: built into the unit test esp_test (no EAL, so
// OpenSSL EVP) and into the component test esp_cryptodev_test, whose
// environment starts the cryptodev engine first (the vectors are in
// esp_vectors.hpp); the window alone is in replay_window_test.cpp.
#include "dataplane/crypto/esp.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "tests/unit/dataplane/crypto/esp_vectors.hpp"

namespace mcgw::crypto {
namespace {

using namespace vectors;  // NOLINT(google-build-using-namespace)

TEST(GcmTest, KnownAnswers) {
  for (const auto& c : kGcmCases) {
    SCOPED_TRACE(c.name);
    Gcm gcm(array<kKeyLen>(c.key));
    EXPECT_EQ(gcm.engine(), engine());  // the process's engine, which the binary chose
    const auto iv = array<12>(c.iv);
    const Bytes aad = hex(c.aad), plain = hex(c.plaintext), cipher = hex(c.ciphertext);
    const auto tag = array<kIcvLen>(c.tag);

    Bytes data = plain;
    uint8_t out_tag[kIcvLen];
    ASSERT_TRUE(gcm.seal(iv.data(), aad.data(), aad.size(), data.data(), data.size(), out_tag));
    EXPECT_EQ(test::toHex(data), c.ciphertext);
    EXPECT_EQ(test::toHex(out_tag, kIcvLen), c.tag);

    // The same context opens (it switches direction per call).
    ASSERT_TRUE(gcm.open(iv.data(), aad.data(), aad.size(), data.data(), data.size(), tag.data()));
    EXPECT_EQ(data, plain);

    // A wrong tag, a changed AAD byte or ciphertext byte: refused.
    auto bad_tag = tag;
    bad_tag[kIcvLen - 1] ^= 0x80;
    data = cipher;
    EXPECT_FALSE(
        gcm.open(iv.data(), aad.data(), aad.size(), data.data(), data.size(), bad_tag.data()));
    if (!aad.empty()) {
      Bytes bad_aad = aad;
      bad_aad[0] ^= 1;
      data = cipher;
      EXPECT_FALSE(gcm.open(iv.data(), bad_aad.data(), bad_aad.size(), data.data(), data.size(),
                            tag.data()));
    }
    if (!cipher.empty()) {
      data = cipher;
      data.back() ^= 1;
      EXPECT_FALSE(
          gcm.open(iv.data(), aad.data(), aad.size(), data.data(), data.size(), tag.data()));
    }
    // And after the failures the context still opens the good one.
    data = cipher;
    EXPECT_TRUE(gcm.open(iv.data(), aad.data(), aad.size(), data.data(), data.size(), tag.data()));
    EXPECT_EQ(data, plain);
  }
}

TEST(EspTest, TrailerAndOverhead) {
  // payload + padding + 2 is a multiple of 4, padding minimal.
  const size_t trailers[] = {20, 19, 18, 21, 20, 19, 18, 21};
  for (size_t n = 0; n < 8; ++n) {
    EXPECT_EQ(espTrailerLen(n), trailers[n]) << n;
    EXPECT_EQ((n + espTrailerLen(n) - kIcvLen) % 4, 0u);
  }
  EXPECT_EQ(espMaxPayload(35), 0u);
  EXPECT_EQ(espMaxPayload(36), 2u);  // 16 + 2 + 2 + 16
  EXPECT_EQ(espMaxPayload(39), 2u);
  EXPECT_EQ(espMaxPayload(40), 6u);
  // 1500-byte underlay, IPv4 outer header: 1480 left.
  EXPECT_EQ(espMaxPayload(1480), 1446u);
  for (size_t room = 36; room < 2000; ++room) {
    const size_t p = espMaxPayload(room);
    EXPECT_LE(kEspPrefixLen + p + espTrailerLen(p), room) << room;
    EXPECT_GT(kEspPrefixLen + p + 1 + espTrailerLen(p + 1), room) << room;
  }
}

TEST(EspTest, SealMatchesIndependentBytes) {
  Gcm gcm(kKey);
  for (const auto& c : kSealed) {
    SCOPED_TRACE(c.name);
    const Bytes payload = hex(c.payload);
    const Bytes sealed = seal(gcm, c.seq, payload);
    EXPECT_EQ(test::toHex(sealed), c.esp);
    EXPECT_EQ(espSpi(sealed.data(), sealed.size()), kSpi);
  }
  EXPECT_EQ(espSpi(hex("0a0b0c").data(), 3), 0u);
}

TEST(EspTest, OpenIndependentBytes) {
  Gcm gcm(kKey);
  for (const auto& c : kSealed) {
    SCOPED_TRACE(c.name);
    auto wp = windowAt(c.seq - 1);
    auto& w = *wp;
    EspOpened o;
    Bytes payload;
    ASSERT_EQ(open(gcm, w, hex(c.esp), &o, &payload), EspError::kNone);
    EXPECT_EQ(o.seq, c.seq);
    EXPECT_EQ(o.next_header, 17);
    EXPECT_EQ(test::toHex(payload), c.payload);
    EXPECT_EQ(w.highest(), c.seq);
    EXPECT_EQ(open(gcm, w, hex(c.esp)), EspError::kReplay);
  }
}

TEST(EspTest, PaddingBytesAreCheckedAfterTheTag) {
  Gcm gcm(kKey);
  for (const auto& c : kBadPadding) {
    SCOPED_TRACE(c.name);
    auto wp = windowAt(0);
    auto& w = *wp;
    EXPECT_EQ(open(gcm, w, hex(c.esp)), EspError::kMalformed);
    EXPECT_EQ(w.highest(), 0u);  // not accepted, so the window did not move
    // The same bytes with one ICV bit changed fail earlier, on the tag:
    // the padding verdict above came after a verified tag.
    Bytes forged = hex(c.esp);
    forged.back() ^= 1;
    EXPECT_EQ(open(gcm, w, forged), EspError::kAuth);
  }
  auto wp = windowAt(0);
  auto& w = *wp;
  EspOpened o;
  Bytes payload;
  ASSERT_EQ(open(gcm, w, hex(kLongPadding), &o, &payload), EspError::kNone);
  EXPECT_EQ(test::toHex(payload), "404142");
  EXPECT_EQ(o.seq, 14u);
}

TEST(EspTest, RoundTripEveryLength) {
  Gcm tx(kKey), rx(kKey);
  ReplayWindow w(1024);
  std::mt19937_64 rng(7);
  uint64_t seq = 0xfffffff0;  // across the 2^32 boundary on the way
  for (size_t n = 0; n <= 1500; n += (n < 64 ? 1 : 37)) {
    Bytes payload(n);
    for (auto& b : payload) {
      b = static_cast<uint8_t>(rng());
    }
    const auto nh = static_cast<uint8_t>(n % 3 == 0 ? 17 : n % 256);
    ++seq;
    EspOpened o;
    Bytes got;
    ASSERT_EQ(open(rx, w, seal(tx, seq, payload, nh), &o, &got), EspError::kNone) << n;
    EXPECT_EQ(got, payload);
    EXPECT_EQ(o.seq, seq);
    EXPECT_EQ(o.next_header, nh);
  }
  EXPECT_GT(w.highest(), uint64_t{1} << 32);
}

TEST(EspTest, EveryBitFlipIsRefused) {
  Gcm gcm(kKey);
  for (const Bytes& payload : {Bytes{}, hex("4041424344"), hex(kSealed[10].payload)}) {
    const uint64_t seq = 0x300000010;
    const Bytes good = seal(gcm, seq, payload);
    for (size_t bit = 0; bit < good.size() * 8; ++bit) {
      Bytes bad = good;
      bad[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
      auto wp = windowAt(seq - 1);
      auto& w = *wp;
      const EspError e = open(gcm, w, bad);
      ASSERT_NE(e, EspError::kNone) << "bit " << bit << " of " << good.size() << " bytes";
      // SPI, IV, ciphertext, ICV: only the tag can tell.
      if (bit / 8 < 4 || bit / 8 >= 8) {
        EXPECT_EQ(e, EspError::kAuth) << bit;
      }
      EXPECT_EQ(w.highest(), seq - 1);
    }
    auto wp = windowAt(seq - 1);
    auto& w = *wp;
    EXPECT_EQ(open(gcm, w, good), EspError::kNone);
  }
}

TEST(EspTest, TruncatedOrUnalignedIsMalformed) {
  Gcm gcm(kKey);
  const Bytes good = seal(gcm, 5, hex(kSealed[10].payload));
  for (size_t len = 0; len < good.size(); ++len) {
    auto wp = windowAt(4);
    auto& w = *wp;
    const Bytes cut(good.begin(), good.begin() + static_cast<ptrdiff_t>(len));
    const EspError e = open(gcm, w, cut);
    if (len < kEspPrefixLen + 4 + kIcvLen || (len - kEspPrefixLen - kIcvLen) % 4 != 0) {
      EXPECT_EQ(e, EspError::kMalformed) << len;
    } else {
      EXPECT_EQ(e, EspError::kAuth) << len;
    }
  }
  // One byte more (trailing garbage) is misaligned too.
  Bytes longer = good;
  longer.push_back(0);
  auto wp = windowAt(4);
  auto& w = *wp;
  EXPECT_EQ(open(gcm, w, longer), EspError::kMalformed);
}

TEST(EspTest, ReplayTooOldAndZero) {
  Gcm gcm(kKey);
  ReplayWindow w(64);
  const Bytes p = hex("40414243");
  const Bytes s100 = seal(gcm, 100, p), s36 = seal(gcm, 36, p), s37 = seal(gcm, 37, p);
  EXPECT_EQ(open(gcm, w, s100), EspError::kNone);
  EXPECT_EQ(open(gcm, w, s100), EspError::kReplay);
  // 100 - 36 = 64: out of the window.  ESN inference (A2.2) takes it for
  // 2^32 + 36, whose ICV fails; that far ahead, it counts as too old.
  EXPECT_FALSE(w.check(36));
  EXPECT_EQ(w.infer(36), (uint64_t{1} << 32) + 36);
  EXPECT_EQ(open(gcm, w, s36), EspError::kReplay);
  EXPECT_EQ(open(gcm, w, s37), EspError::kNone);  // the oldest still inside
  EXPECT_EQ(open(gcm, w, s37), EspError::kReplay);
  EXPECT_EQ(w.highest(), 100u);
  // A forgery close ahead is an authentication failure, not a replay.
  Bytes forged = seal(gcm, 200, p);
  forged[20] ^= 4;
  EXPECT_EQ(open(gcm, w, forged), EspError::kAuth);
  // A2.2 taken at its word: a packet really sent 2^32 - 64 numbers ahead
  // (low 32 bits below the window) is accepted in the next subspace.
  const uint64_t far = (uint64_t{1} << 32) + 36;
  EspOpened o;
  EXPECT_EQ(open(gcm, w, seal(gcm, far, p), &o), EspError::kNone);
  EXPECT_EQ(o.seq, far);
  EXPECT_EQ(w.highest(), far);

  // Sequence number 0 is never valid, whatever else is right.
  ReplayWindow fresh(64);
  EXPECT_EQ(open(gcm, fresh, seal(gcm, 0, p)), EspError::kReplay);
  EXPECT_FALSE(fresh.check(0));
  EXPECT_FALSE(fresh.update(0));
  EXPECT_EQ(fresh.highest(), 0u);
}

TEST(EspTest, EsnAcrossTheBoundaryBothWays) {
  const uint64_t k32 = uint64_t{1} << 32;
  Gcm gcm(kKey);
  ReplayWindow w(64);
  const Bytes p = hex("4041");
  ASSERT_TRUE(w.update(k32 - 3));
  const Bytes before = seal(gcm, k32 - 2, p), last = seal(gcm, k32 - 1, p),
              first = seal(gcm, k32, p), after = seal(gcm, k32 + 1, p);
  EspOpened o;
  // Forwards over the boundary (low 32 bits 0, then 1): A2.2 case A.
  ASSERT_EQ(open(gcm, w, before, &o), EspError::kNone);
  ASSERT_EQ(open(gcm, w, after, &o), EspError::kNone);
  EXPECT_EQ(o.seq, k32 + 1);
  // Back over it: late packets of the old subspace, case B.
  ASSERT_EQ(open(gcm, w, last, &o), EspError::kNone);
  EXPECT_EQ(o.seq, k32 - 1);
  ASSERT_EQ(open(gcm, w, first, &o), EspError::kNone);
  EXPECT_EQ(o.seq, k32);
  EXPECT_EQ(open(gcm, w, last), EspError::kReplay);
  EXPECT_EQ(open(gcm, w, after), EspError::kReplay);
  EXPECT_EQ(w.highest(), k32 + 1);
}

}  // namespace
}  // namespace mcgw::crypto
