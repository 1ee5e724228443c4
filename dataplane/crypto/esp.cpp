#include "dataplane/crypto/esp.hpp"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <stdexcept>
#include <string>

#include "dataplane/crypto/cryptodev.hpp"

namespace mcgw::crypto {
namespace {

constexpr size_t kNonceLen = kSaltLen + kIvLen;
constexpr size_t kAadLen = 12;  // SPI, seq-high, seq-low (RFC 4106 §5, ESN)
constexpr uint64_t kFarAhead = uint64_t{1} << 31;

uint32_t load32(const uint8_t* p) {
  return uint32_t{p[0]} << 24 | uint32_t{p[1]} << 16 | uint32_t{p[2]} << 8 | p[3];
}

void store32(uint8_t* p, uint32_t v) {
  p[0] = static_cast<uint8_t>(v >> 24);
  p[1] = static_cast<uint8_t>(v >> 16);
  p[2] = static_cast<uint8_t>(v >> 8);
  p[3] = static_cast<uint8_t>(v);
}

// salt || the IV as sent, and SPI || seq-high || seq-low.
void nonceAndAad(const Salt& salt, const uint8_t* esp, uint64_t seq, uint8_t nonce[kNonceLen],
                 uint8_t aad[kAadLen]) {
  std::memcpy(nonce, salt.data(), kSaltLen);
  std::memcpy(nonce + kSaltLen, esp + kEspHeaderLen, kIvLen);
  std::memcpy(aad, esp, 4);
  store32(aad + 4, static_cast<uint32_t>(seq >> 32));
  std::memcpy(aad + 8, esp + 4, 4);
}

}  // namespace

Gcm::Gcm(const Key& key) : Gcm(key, Engine::kCryptodev) {}

Gcm::Gcm(const Key& key, Engine engine) : key_(key) {
  dev_ = engine == Engine::kCryptodev ? cryptodev::device() : -1;
  if (dev_ >= 0) {
    // The key schedule and GHASH tables live in the two sessions.
    const cryptodev::Sessions s = cryptodev::create(dev_, key, kAadLen);
    if (s.enc == nullptr) {
      throw std::runtime_error("cannot create AES-256-GCM cryptodev sessions (pool of " +
                               std::to_string(kCryptodevSessions) + " exhausted?)");
    }
    enc_ = s.enc;
    dec_ = s.dec;
    return;
  }
  key_.fill(0);  // only the cryptodev engine needs it again
  ctx_ = EVP_CIPHER_CTX_new();
  if (ctx_ == nullptr) {
    throw std::runtime_error("EVP_CIPHER_CTX_new failed");
  }
  // The key schedule is made once here; seal/open pass only the nonce (GCM
  // runs AES forwards in both directions, so one schedule serves both).
  if (EVP_CipherInit_ex(ctx_, EVP_aes_256_gcm(), nullptr, key.data(), nullptr, 1) != 1 ||
      EVP_CIPHER_CTX_get_iv_length(ctx_) != static_cast<int>(kNonceLen)) {
    EVP_CIPHER_CTX_free(ctx_);
    throw std::runtime_error("cannot set up AES-256-GCM");
  }
}

Gcm::~Gcm() {
  if (dev_ >= 0) {
    cryptodev::Sessions s{enc_, dec_};
    cryptodev::destroy(dev_, s);
  }
  EVP_CIPHER_CTX_free(ctx_);
  OPENSSL_cleanse(key_.data(), key_.size());
}

namespace {

// The cryptodev engine with an AAD other than ESP's 12 bytes: a session
// pair for the call (sessions fix the AAD length).  Tests only.
bool cryptodevOther(int dev, const Key& key, bool encrypt, const uint8_t nonce[12],
                    const uint8_t* aad, size_t aad_len, uint8_t* data, size_t len, uint8_t* tag) {
  cryptodev::Sessions s = cryptodev::create(dev, key, aad_len);
  const bool ok = s.enc != nullptr &&
                  cryptodev::process(dev, encrypt ? s.enc : s.dec, nonce, aad, data, len, tag);
  cryptodev::destroy(dev, s);
  return ok;
}

}  // namespace

bool Gcm::seal(const uint8_t nonce[12], const uint8_t* aad, size_t aad_len, uint8_t* data,
               size_t len, uint8_t tag[kIcvLen]) {
  if (len > INT_MAX || aad_len > INT_MAX) {
    return false;
  }
  if (dev_ >= 0) {
    return aad_len == kAadLen
               ? cryptodev::process(dev_, enc_, nonce, aad, data, len, tag)
               : cryptodevOther(dev_, key_, true, nonce, aad, aad_len, data, len, tag);
  }
  int n = 0;
  uint8_t none[1];
  OSSL_PARAM get[] = {OSSL_PARAM_construct_octet_string(OSSL_CIPHER_PARAM_AEAD_TAG, tag, kIcvLen),
                      OSSL_PARAM_construct_end()};
  return EVP_CipherInit_ex2(ctx_, nullptr, nullptr, nonce, 1, nullptr) == 1 &&
         (aad_len == 0 ||
          EVP_CipherUpdate(ctx_, nullptr, &n, aad, static_cast<int>(aad_len)) == 1) &&
         (len == 0 || EVP_CipherUpdate(ctx_, data, &n, data, static_cast<int>(len)) == 1) &&
         EVP_CipherFinal_ex(ctx_, none, &n) == 1 && EVP_CIPHER_CTX_get_params(ctx_, get) == 1;
}

bool Gcm::open(const uint8_t nonce[12], const uint8_t* aad, size_t aad_len, uint8_t* data,
               size_t len, const uint8_t tag[kIcvLen]) {
  if (len > INT_MAX || aad_len > INT_MAX) {
    return false;
  }
  if (dev_ >= 0) {
    // The PMD only reads the tag when it decrypts.
    auto* t = const_cast<uint8_t*>(tag);
    return aad_len == kAadLen
               ? cryptodev::process(dev_, dec_, nonce, aad, data, len, t)
               : cryptodevOther(dev_, key_, false, nonce, aad, aad_len, data, len, t);
  }
  int n = 0;
  uint8_t none[1];
  // OSSL_PARAM takes a non-const pointer; setting the tag only reads it.
  OSSL_PARAM set[] = {OSSL_PARAM_construct_octet_string(OSSL_CIPHER_PARAM_AEAD_TAG,
                                                        const_cast<uint8_t*>(tag), kIcvLen),
                      OSSL_PARAM_construct_end()};
  return EVP_CipherInit_ex2(ctx_, nullptr, nullptr, nonce, 0, set) == 1 &&
         (aad_len == 0 ||
          EVP_CipherUpdate(ctx_, nullptr, &n, aad, static_cast<int>(aad_len)) == 1) &&
         (len == 0 || EVP_CipherUpdate(ctx_, data, &n, data, static_cast<int>(len)) == 1) &&
         EVP_CipherFinal_ex(ctx_, none, &n) > 0;
}

ReplayWindow::ReplayWindow(uint32_t size)
    : size_((std::clamp(size, kMinSize, kMaxSize) + 63) / 64 * 64),
      bits_(new std::atomic<uint64_t>[size_ / 64]()) {}

uint64_t ReplayWindow::infer(uint32_t low) const {
  const uint64_t top = highest();
  const auto tl = static_cast<uint32_t>(top);
  auto th = static_cast<uint32_t>(top >> 32);
  const uint32_t bottom = tl - (size_ - 1);  // mod 2^32
  if (tl >= size_ - 1) {
    // A2.2 case A: the window lies in one subspace; below it is the next.
    if (low < bottom) {
      ++th;
    }
  } else if (low >= bottom && th > 0) {
    // Case B: the window reaches into the previous subspace (none below 0).
    --th;
  }
  return uint64_t{th} << 32 | low;
}

bool ReplayWindow::check(uint64_t seq) const {
  const uint64_t top = highest();
  if (seq == 0) {
    return false;
  }
  if (seq > top) {
    return true;
  }
  if (top - seq >= size_) {
    return false;
  }
  const uint64_t at = seq % size_;
  return (bits_[at / 64].load(std::memory_order_relaxed) >> (at % 64) & 1) == 0;
}

bool ReplayWindow::update(uint64_t seq) {
  const uint64_t top = highest();
  if (seq == 0) {
    return false;
  }
  if (seq > top) {
    // Forget the positions the window slides over: top+1 .. seq.
    const uint64_t slide = seq - top;
    const size_t words = size_ / 64;
    if (slide >= size_) {
      for (size_t w = 0; w < words; ++w) {
        bits_[w].store(0, std::memory_order_relaxed);
      }
    } else {
      uint64_t at = (top + 1) % size_;
      for (uint64_t left = slide; left > 0;) {
        const uint64_t bit = at % 64;
        const uint64_t n = std::min<uint64_t>(64 - bit, left);
        const uint64_t mask = (n == 64 ? ~uint64_t{0} : ((uint64_t{1} << n) - 1)) << bit;
        auto& word = bits_[at / 64];
        word.store(word.load(std::memory_order_relaxed) & ~mask, std::memory_order_relaxed);
        at = (at + n) % size_;
        left -= n;
      }
    }
    const uint64_t at = seq % size_;
    auto& word = bits_[at / 64];
    word.store(word.load(std::memory_order_relaxed) | uint64_t{1} << (at % 64),
               std::memory_order_relaxed);
    top_.store(seq, std::memory_order_relaxed);
    return true;
  }
  if (top - seq >= size_) {
    return false;
  }
  const uint64_t at = seq % size_;
  auto& word = bits_[at / 64];
  const uint64_t bit = uint64_t{1} << (at % 64);
  const uint64_t old = word.load(std::memory_order_relaxed);
  if (old & bit) {
    return false;
  }
  word.store(old | bit, std::memory_order_relaxed);
  return true;
}

size_t espSeal(Gcm& gcm, const Salt& salt, uint32_t spi, uint64_t seq, uint8_t next_header,
               uint8_t* esp, size_t payload_len) {
  const size_t pad = espTrailerLen(payload_len) - 2 - kIcvLen;
  uint8_t* text = esp + kEspPrefixLen;
  for (size_t i = 0; i < pad; ++i) {
    text[payload_len + i] = static_cast<uint8_t>(i + 1);
  }
  text[payload_len + pad] = static_cast<uint8_t>(pad);
  text[payload_len + pad + 1] = next_header;
  const size_t text_len = payload_len + pad + 2;
  store32(esp, spi);
  store32(esp + 4, static_cast<uint32_t>(seq));
  store32(esp + 8, static_cast<uint32_t>(seq >> 32));
  store32(esp + 12, static_cast<uint32_t>(seq));
  uint8_t nonce[kNonceLen], aad[kAadLen];
  nonceAndAad(salt, esp, seq, nonce, aad);
  if (!gcm.seal(nonce, aad, kAadLen, text, text_len, text + text_len)) {
    return 0;
  }
  return kEspPrefixLen + text_len + kIcvLen;
}

EspError espOpen(Gcm& gcm, const Salt& salt, ReplayWindow& window, uint8_t* esp, size_t len,
                 EspOpened& out) {
  // At least the 4-byte word of pad length and next header is encrypted.
  if (len < kEspPrefixLen + 4 + kIcvLen) [[unlikely]] {
    return EspError::kMalformed;
  }
  const size_t text_len = len - kEspPrefixLen - kIcvLen;
  if (text_len % 4 != 0) [[unlikely]] {
    return EspError::kMalformed;
  }
  const uint64_t top = window.highest();
  const uint64_t seq = window.infer(load32(esp + 4));
  if (!window.check(seq)) [[unlikely]] {
    return EspError::kReplay;
  }
  uint8_t nonce[kNonceLen], aad[kAadLen];
  nonceAndAad(salt, esp, seq, nonce, aad);
  uint8_t* text = esp + kEspPrefixLen;
  if (!gcm.open(nonce, aad, kAadLen, text, text_len, text + text_len)) [[unlikely]] {
    // A2.2 reads a number below the window as one of the next subspace, 2^32
    // - W or more ahead, where the ICV fails: far more likely a packet too
    // old than a forgery, so it counts as a replay.
    return seq - top >= kFarAhead && seq > top ? EspError::kReplay : EspError::kAuth;
  }
  // Any padding length the packet holds, filled 1, 2, 3, ... (RFC 4303 §2.4).
  const size_t pad = text[text_len - 2];
  if (pad > text_len - 2) [[unlikely]] {
    return EspError::kMalformed;
  }
  const size_t payload_len = text_len - 2 - pad;
  for (size_t i = 0; i < pad; ++i) {
    if (text[payload_len + i] != static_cast<uint8_t>(i + 1)) [[unlikely]] {
      return EspError::kMalformed;
    }
  }
  if (!window.update(seq)) [[unlikely]] {
    return EspError::kReplay;
  }
  out.seq = seq;
  out.next_header = text[text_len - 1];
  out.payload_len = payload_len;
  return EspError::kNone;
}

uint32_t espSpi(const uint8_t* esp, size_t len) {
  return len < 4 ? 0 : load32(esp);
}

}  // namespace mcgw::crypto
