// Test vectors and helpers shared by the ESP/GCM tests of both engines:
// tests/unit/dataplane/crypto/esp_test.cpp (built into the unit test, on
// OpenSSL EVP, and into tests/component/esp_cryptodev_test, on the cryptodev
// engine) and the cross-engine checks of esp_cryptodev_test.cpp.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "dataplane/crypto/esp.hpp"
#include "tests/support/hex.hpp"

namespace mcgw::crypto::vectors {

using Bytes = std::vector<uint8_t>;

inline Bytes hex(std::string_view s) {
  return test::hex<uint8_t>(s);
}

template <size_t N>
inline std::array<uint8_t, N> array(std::string_view s) {
  const Bytes b = hex(s);
  std::array<uint8_t, N> a{};
  EXPECT_EQ(b.size(), N) << s;
  std::copy_n(b.begin(), std::min(N, b.size()), a.begin());
  return a;
}

// ---------------------------------------------------------------------------
// AES-256-GCM known answers.

struct GcmCase {
  const char* name;
  const char* key;
  const char* iv;  // 96 bits
  const char* plaintext;
  const char* aad;
  const char* ciphertext;
  const char* tag;
};

// McGrew & Viega, "The Galois/Counter Mode of Operation (GCM)", revised
// 2005, Appendix B, test cases 13-16 (AES-256), as transcribed in nettle's
// testsuite/gcm-test.c.  Cases 17 and 18 use 64- and 480-bit IVs, which
// neither RFC 4106 nor Gcm (a 96-bit nonce) takes.  Then NIST CAVP
// gcmEncryptExtIV256.rsp entries with IVlen 96 and Taglen 128 (PTlen 128
// Count 0, PTlen 104 Count 3, PTlen 256 Count 6, PTlen 408 Count 8 as in
// aws-sdk-go's s3crypto tests; the AADlen 160 one as in iotaledger/crypto.rs
// tests/fixtures/aes_256_gcm.rs).  Every entry was also checked with
// python3-cryptography's AESGCM.
inline const GcmCase kGcmCases[] = {
    {"mcgrew_viega_13", "0000000000000000000000000000000000000000000000000000000000000000",
     "000000000000000000000000", "", "", "", "530f8afbc74536b9a963b4f1c4cb738b"},
    {"mcgrew_viega_14", "0000000000000000000000000000000000000000000000000000000000000000",
     "000000000000000000000000", "00000000000000000000000000000000", "",
     "cea7403d4d606b6e074ec5d3baf39d18", "d0d1c8a799996bf0265b98b5d48ab919"},
    {"mcgrew_viega_15", "feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308",
     "cafebabefacedbaddecaf888",
     "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a72"
     "1c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b391aafd255",
     "",
     "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa"
     "8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662898015ad",
     "b094dac5d93471bdec1a502270e3cc6c"},
    {"mcgrew_viega_16", "feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308",
     "cafebabefacedbaddecaf888",
     "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a72"
     "1c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b39",
     "feedfacedeadbeeffeedfacedeadbeefabaddad2",
     "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa"
     "8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662",
     "76fc6ece0f4e1768cddf8853bb2d551b"},
    {"cavp_pt128_count0", "31bdadd96698c204aa9ce1448ea94ae1fb4a9a0b3c9d773b51bb1822666b8f22",
     "0d18e06c7c725ac9e362e1ce", "2db5168e932556f8089a0622981d017d", "",
     "fa4362189661d163fcd6a56d8bf0405a", "d636ac1bbedd5cc3ee727dc2ab4a9489"},
    {"cavp_pt104_count3", "e5a0eb92cc2b064e1bc80891faf1fab5e9a17a9c3a984e25416720e30e6c2b21",
     "4742357c335913153ff0eb0f", "8499893e16b0ba8b007d54665a", "", "eb8e6175f1fe38eb1acf95fd51",
     "88a8b74bb74fda553e91020a23deed45"},
    {"cavp_pt256_count6", "37f39137416bafde6f75022a7a527cc593b6000a83ff51ec04871a0ff5360e4e",
     "a291484c3de8bec6b47f525f", "fafd94cede8b5a0730394bec68a8e77dba288d6ccaa8e1563a81d6e7ccc7fc97",
     "", "44dc868006b21d49284016565ffb3979cc4271d967628bf7cdaf86db888e92e5",
     "01a2b578aa2f41ec6379a44a31cc019c"},
    {"cavp_pt408_count8", "595f259c55abe00ae07535ca5d9b09d6efb9f7e9abb64605c337acbd6b14fc7e",
     "92f258071d79af3e63672285",
     "a6fee33eb110a2d769bbc52b0f36969c287874f665681477a25fc4c48015c541fbe2394133ba490a34ee2dd6"
     "7b898177849a91",
     "",
     "bbca4a9e09ae9690c0f6f8d405e53dccd666aa9c5fa13c8758bc30abe1ddd1bcce0d36a1eaaaaffef20cd3c5"
     "970b9673f8a65c",
     "26ccecb9976fd6ac9c2c0f372c52c821"},
    {"cavp_pt128_aad160", "83688deb4af8007f9b713b47cfa6c73e35ea7a3aa4ecdb414dded03bf7a0fd3a",
     "0b459724904e010a46901cf3", "33d893a2114ce06fc15d55e454cf90c3",
     "794a14ccd178c8ebfd1379dc704c5e208f9d8424", "cc66bee423e3fcd4c0865715e9586696",
     "0fb291bd3dba94a1dfd8b286cfb97ac5"},
};

// ---------------------------------------------------------------------------
// ESP byte tables.

inline const Key kKey = [] {
  Key k{};
  for (size_t i = 0; i < k.size(); ++i) {
    k[i] = static_cast<uint8_t>(i);
  }
  return k;
}();
inline const Salt kSalt{0xde, 0xad, 0xbe, 0xef};
inline constexpr uint32_t kSpi = 0x0a0b0c0d;

struct SealCase {
  const char* name;
  uint64_t seq;
  const char* payload;
  const char* esp;
};

struct BadPadCase {
  const char* name;
  const char* esp;
};

// Generated by tests/tools/esp_vectors.py (python3-cryptography AESGCM):
// key 00 01 .. 1f, salt deadbeef, SPI 0x0a0b0c0d, next header 17.
inline const SealCase kSealed[] = {
    {"payload0", 0x1, "",
     "0a0b0c0d000000010000000000000001b5c91c4b855dce1d09d0f1cfb3b6acfb45175feb"},
    {"payload1", 0x2, "40",
     "0a0b0c0d00000002000000000000000281d89da1d5f1850a44d83ddfcf0b21cfe9084260"},
    {"payload2", 0x3, "4041",
     "0a0b0c0d000000030000000000000003d3a633412bca752a21fd0f2922e5fed44bb64fa7"},
    {"payload3", 0x4, "404142",
     "0a0b0c0d000000040000000000000004872a72b8ff056908c3f40ec4fc209e2f155430634447a715"},
    {"payload4", 0x5, "40414243",
     "0a0b0c0d000000050000000000000005715547e09122cf86292a773d06fe5ae8cc58e89a6deb23ba"},
    {"payload5", 0x6, "4041424344",
     "0a0b0c0d0000000600000000000000065e6d99168fffca68a67cc1a48d20db96e99ad9d535df2034"},
    {"payload6", 0x7, "404142434445",
     "0a0b0c0d00000007000000000000000779a90bb2c214e3b6faf84af9caab5bc7703fe5ba637f8893"},
    {"payload7", 0x8, "40414243444546",
     "0a0b0c0d000000080000000000000008be4ed66b9e89dbb630136152b159c252496b87564f0d29ec1cc41636"},
    {"esn_high_bits", 0x500000007, "404142",
     "0a0b0c0d00000007000000050000000703f968d5bec95fdb94a5cb7b7447ae1107ffb07661705c5e"},
    {"esn_low_zero", 0x100000000, "4041424344",
     "0a0b0c0d000000000000000100000000c7cebf18085711d4f98f50f1bf2028fbac6d971d0546c43c"},
    // UDP 49152 -> 4789, VXLAN VNI 100, Ethernet, IPv4 ICMP echo.
    {"vxlan", 0x2a,
     "c00012b500720000080000000000640002000000000202000000000108004500005412340000400100000a01"
     "00010a0200010800000000010001000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d"
     "1e1f202122232425262728292a2b2c2d2e2f3031323334353637",
     "0a0b0c0d0000002a000000000000002a3b3fd40ae7be59947282f7273ea01f8e0b0d2a757e2b8a2272e92ccf"
     "1914edcf2679038b9bdd1d8228f1c1cba6244a57f04eed78e4fb91da153a27d83e78bd7dcb1f2c47613fea4e"
     "c136152aebf8aefa709823f771f880e77880967a497190250efaa2784d348f98681388c60b2008a8a74be6fd"
     "94cbd43f932b3b54e284c5db3117557d"},
};

// Authentic packets (the tag verifies) whose padding is wrong.
inline const BadPadCase kBadPadding[] = {
    {"pad_byte_2_for_1",
     "0a0b0c0d000000090000000000000009b763c96150d63e955448b8f994e5a9d937bbed44"},
    {"pad_bytes_zero",
     "0a0b0c0d0000000a000000000000000a2d1751cab557f9d9c9edc230161c24140074acc3d7b4a38a"},
    {"pad_bytes_swapped",
     "0a0b0c0d0000000b000000000000000bec3cf7280ee314b208c2c102ebf201f263a64038a5b3f370"},
    {"pad_length_beyond_text",
     "0a0b0c0d0000000c000000000000000cc1bc85ba7e144c6bb619fb87f8dbcb53929dd51b"},
    {"pad_length_eats_payload",
     "0a0b0c0d0000000d000000000000000d06011f153191520af1a96ed35ead3feeb89d8a4ba6bee533"},
};

// Padding 1..7 after a 3-byte payload, longer than the minimum (RFC 4303
// §2.4 allows up to 255 bytes): accepted.
inline const char kLongPadding[] =
    "0a0b0c0d0000000e000000000000000eef249ac8f03de45680121ea6dee4722131a0316abe6bc2103014515b";

// Seals `payload` with seq into a fresh buffer of exactly the packet's size.
inline Bytes seal(Gcm& gcm, uint64_t seq, const Bytes& payload, uint8_t nh = 17) {
  Bytes b(kEspPrefixLen + payload.size() + espTrailerLen(payload.size()));
  std::copy(payload.begin(), payload.end(), b.begin() + kEspPrefixLen);
  const size_t n = espSeal(gcm, kSalt, kSpi, seq, nh, b.data(), payload.size());
  EXPECT_EQ(n, b.size());
  return b;
}

// A window of `size` that has seen `top` (so that ESN inference places a
// sequence number near it).
inline std::unique_ptr<ReplayWindow> windowAt(uint64_t top, uint32_t size = 1024) {
  auto w = std::make_unique<ReplayWindow>(size);
  if (top != 0) {
    EXPECT_TRUE(w->update(top));
  }
  return w;
}

inline EspError open(Gcm& gcm, ReplayWindow& w, Bytes packet, EspOpened* out = nullptr,
                     Bytes* payload = nullptr) {
  EspOpened o;
  const EspError e = espOpen(gcm, kSalt, w, packet.data(), packet.size(), o);
  if (out != nullptr) {
    *out = o;
  }
  if (payload != nullptr && e == EspError::kNone) {
    payload->assign(packet.begin() + kEspPrefixLen,
                    packet.begin() + static_cast<ptrdiff_t>(kEspPrefixLen + o.payload_len));
  }
  return e;
}

}  // namespace mcgw::crypto::vectors
