// The choice of AES-256-GCM engine (docs/encryption.md, "Crypto engine"):
// DPDK cryptodev's synchronous CPU-crypto API on the intel-ipsec-mb PMD, or
// OpenSSL EVP.
#include <rte_cpuflags.h>
#include <rte_cryptodev.h>
#include <rte_dev.h>
#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_mempool.h>

#include <array>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <string>

#include "dataplane/crypto/cryptodev.hpp"
#include "dataplane/crypto/esp.hpp"

namespace mcgw::crypto {
namespace {

constexpr const char* kVdev = "crypto_aesni_gcm0";
constexpr size_t kEspAadLen = 12;

struct State {
  std::mutex mu;  // initEngine/shutdownEngine (control thread; never per packet)
  bool chosen = false;
  EngineChoice choice;
  std::atomic<int> dev{-1};
  rte_mempool* pool = nullptr;
  bool hot_plugged = false;  // we made the vdev (not --vdev on the EAL line)
  bool started = false;
  std::atomic<long> sessions{0};
};

State& state() {
  static State s;
  return s;
}

std::string errnoText(int e) {
  return rte_strerror(e < 0 ? -e : e);
}

// A packet sealed by the device must match EVP's bytes and open again; one
// flipped bit must be refused.
std::string selfTest(int dev) {
  Key key{};
  for (size_t i = 0; i < key.size(); ++i) {
    key[i] = static_cast<uint8_t>(0xa5 ^ i);
  }
  const uint8_t nonce[12] = {0xde, 0xad, 0xbe, 0xef, 0, 0, 0, 0, 0, 0, 0, 42};
  const uint8_t aad[kEspAadLen] = {1, 2, 3, 4, 0, 0, 0, 0, 0, 0, 0, 42};
  std::array<uint8_t, 100> plain{}, a{}, b{};
  for (size_t i = 0; i < plain.size(); ++i) {
    plain[i] = static_cast<uint8_t>(i * 7);
  }
  a = plain;
  b = plain;
  uint8_t tag_a[kIcvLen], tag_b[kIcvLen];
  cryptodev::Sessions s = cryptodev::create(dev, key, kEspAadLen);
  if (s.enc == nullptr) {
    return "cannot create an AES-256-GCM session on " + std::string(kVdev);
  }
  std::string why;
  Gcm evp(key, Engine::kOpenSsl);
  if (!cryptodev::process(dev, s.enc, nonce, aad, a.data(), a.size(), tag_a) ||
      !evp.seal(nonce, aad, sizeof aad, b.data(), b.size(), tag_b) || a != b ||
      std::memcmp(tag_a, tag_b, kIcvLen) != 0) {
    why = "self-test: a packet sealed by " + std::string(kVdev) + " differs from OpenSSL's";
  } else {
    b[7] ^= 0x10;
    if (cryptodev::process(dev, s.dec, nonce, aad, b.data(), b.size(), tag_a)) {
      why = "self-test: a forged packet opened on " + std::string(kVdev);
    } else if (!cryptodev::process(dev, s.dec, nonce, aad, a.data(), a.size(), tag_a) ||
               a != plain) {
      why = "self-test: " + std::string(kVdev) + " does not open its own packet";
    }
  }
  cryptodev::destroy(dev, s);
  return why;
}

// Brings up the device and the session pool; the reason when it cannot.
std::string startCryptodev(State& st) {
  if (rte_lcore_count() == 0) {
    return "no DPDK EAL";
  }
  if (rte_cpu_get_flag_enabled(RTE_CPUFLAG_AES) <= 0 ||
      rte_cpu_get_flag_enabled(RTE_CPUFLAG_PCLMULQDQ) <= 0) {
    return "the CPU has no AES-NI/PCLMULQDQ";
  }
  int dev = rte_cryptodev_get_dev_id(kVdev);
  if (dev < 0) {
    const int r = rte_eal_hotplug_add("vdev", kVdev, "");
    if (r != 0) {
      return "cannot create the vdev " + std::string(kVdev) + " (" + errnoText(r) +
             "; is the intel-ipsec-mb PMD, librte-crypto-ipsec-mb23, installed?)";
    }
    st.hot_plugged = true;
    dev = rte_cryptodev_get_dev_id(kVdev);
    if (dev < 0) {
      return std::string(kVdev) + " is not a cryptodev";
    }
  }
  rte_cryptodev_info info{};
  rte_cryptodev_info_get(static_cast<uint8_t>(dev), &info);
  if ((info.feature_flags & RTE_CRYPTODEV_FF_SYM_CPU_CRYPTO) == 0) {
    return std::string(kVdev) + " (" + info.driver_name + ") has no synchronous CPU crypto";
  }
  rte_cryptodev_sym_capability_idx idx{};
  idx.type = RTE_CRYPTO_SYM_XFORM_AEAD;
  idx.algo.aead = RTE_CRYPTO_AEAD_AES_GCM;
  const rte_cryptodev_symmetric_capability* cap =
      rte_cryptodev_sym_capability_get(static_cast<uint8_t>(dev), &idx);
  if (cap == nullptr ||
      rte_cryptodev_sym_capability_check_aead(cap, kKeyLen, kIcvLen, kEspAadLen, 12) != 0) {
    return std::string(kVdev) + " does not offer AES-256-GCM with a 12-byte IV and AAD";
  }
  const uint8_t d = static_cast<uint8_t>(dev);
  rte_cryptodev_config conf{};
  conf.socket_id = rte_cryptodev_socket_id(d);
  conf.nb_queue_pairs = 1;
  rte_cryptodev_qp_conf qp{};
  qp.nb_descriptors = 128;
  int r = rte_cryptodev_configure(d, &conf);
  if (r == 0) {
    r = rte_cryptodev_queue_pair_setup(d, 0, &qp, conf.socket_id);
  }
  if (r == 0) {
    r = rte_cryptodev_start(d);
    st.started = r == 0;
  }
  if (r != 0) {
    return "cannot start " + std::string(kVdev) + ": " + errnoText(r);
  }
  st.pool = rte_cryptodev_sym_session_pool_create("mcgw_gcm_sessions", kCryptodevSessions,
                                                  rte_cryptodev_sym_get_private_session_size(d), 0,
                                                  0, SOCKET_ID_ANY);
  if (st.pool == nullptr) {
    return "cannot create the cryptodev session pool (" + std::to_string(kCryptodevSessions) +
           " sessions): " + errnoText(rte_errno);
  }
  std::string why = selfTest(dev);
  if (!why.empty()) {
    return why;
  }
  st.dev.store(dev, std::memory_order_release);
  return "";
}

// Undoes what startCryptodev did, as far as it got.
void stopCryptodev(State& st, int dev) {
  rte_mempool_free(st.pool);
  st.pool = nullptr;
  if (dev < 0) {
    return;
  }
  if (st.started) {
    rte_cryptodev_stop(static_cast<uint8_t>(dev));
    st.started = false;
  }
  if (st.hot_plugged) {
    rte_cryptodev_close(static_cast<uint8_t>(dev));
    rte_eal_hotplug_remove("vdev", kVdev);
    st.hot_plugged = false;
  }
}

}  // namespace

EngineChoice initEngine() {
  State& st = state();
  std::lock_guard lock(st.mu);
  if (st.chosen) {
    return st.choice;
  }
  st.chosen = true;
  const char* env = std::getenv("MCGW_CRYPTO_ENGINE");
  const std::string want = env != nullptr ? env : "";
  if (want == "openssl") {
    st.choice = {Engine::kOpenSsl, "MCGW_CRYPTO_ENGINE=openssl"};
  } else if (!want.empty() && want != "auto" && want != "cryptodev") {
    st.choice = {Engine::kOpenSsl,
                 "MCGW_CRYPTO_ENGINE=" + want + " is none of auto, cryptodev, openssl"};
  } else {
    // Sessions made for the self-test come out of the pool; the state is
    // only published when it passed.
    std::string why = startCryptodev(st);
    if (why.empty()) {
      st.choice = {Engine::kCryptodev, ""};
    } else {
      stopCryptodev(st, rte_lcore_count() == 0 ? -1 : rte_cryptodev_get_dev_id(kVdev));
      st.choice = {Engine::kOpenSsl, why};
    }
  }
  return st.choice;
}

bool shutdownEngine() {
  State& st = state();
  std::lock_guard lock(st.mu);
  const int dev = st.dev.load(std::memory_order_acquire);
  if (dev < 0) {
    return true;
  }
  st.dev.store(-1, std::memory_order_release);
  st.choice = {Engine::kOpenSsl, "the cryptodev engine was shut down"};
  if (st.sessions.load() != 0) {
    return false;  // a Gcm still uses the device: leave it
  }
  stopCryptodev(st, dev);
  return true;
}

Engine engine() {
  return state().dev.load(std::memory_order_acquire) >= 0 ? Engine::kCryptodev : Engine::kOpenSsl;
}

const char* engineName() {
  return engine() == Engine::kCryptodev ? "cryptodev-ipsec-mb" : "openssl-evp";
}

namespace cryptodev {

int device() {
  return state().dev.load(std::memory_order_acquire);
}

Sessions create(int dev, const Key& key, size_t aad_len) {
  State& st = state();
  Sessions s;
  if (st.pool == nullptr || aad_len > UINT16_MAX) {
    return s;
  }
  rte_crypto_sym_xform x{};
  x.type = RTE_CRYPTO_SYM_XFORM_AEAD;
  x.aead.op = RTE_CRYPTO_AEAD_OP_ENCRYPT;
  x.aead.algo = RTE_CRYPTO_AEAD_AES_GCM;
  x.aead.key.data = key.data();
  x.aead.key.length = kKeyLen;
  x.aead.iv.offset = 0;  // unused by the CPU-crypto API: the IV comes by pointer
  x.aead.iv.length = 12;
  x.aead.digest_length = kIcvLen;
  x.aead.aad_length = static_cast<uint16_t>(aad_len);
  const auto d = static_cast<uint8_t>(dev);
  s.enc = rte_cryptodev_sym_session_create(d, &x, st.pool);
  if (s.enc != nullptr) {
    st.sessions.fetch_add(1);
    x.aead.op = RTE_CRYPTO_AEAD_OP_DECRYPT;
    s.dec = rte_cryptodev_sym_session_create(d, &x, st.pool);
  }
  if (s.dec == nullptr) {
    destroy(dev, s);
    return s;
  }
  st.sessions.fetch_add(1);
  return s;
}

void destroy(int dev, Sessions& s) {
  State& st = state();
  const auto d = static_cast<uint8_t>(dev);
  for (void** p : {&s.enc, &s.dec}) {
    if (*p != nullptr) {
      rte_cryptodev_sym_session_free(d, *p);
      *p = nullptr;
      st.sessions.fetch_sub(1);
    }
  }
}

bool process(int dev, void* session, const uint8_t nonce[12], const uint8_t* aad, uint8_t* data,
             size_t len, uint8_t* tag) {
  if (len > UINT32_MAX) {
    return false;
  }
  // A vector of one; everything on the stack.  The PMD reads the IV, AAD
  // and (decrypt) the tag through these pointers and never writes them.
  rte_crypto_vec seg{};
  seg.base = data;
  seg.len = static_cast<uint32_t>(len);
  rte_crypto_sgl sgl{&seg, 1};
  rte_crypto_va_iova_ptr iv{}, dig{}, ad{};
  iv.va = const_cast<uint8_t*>(nonce);
  dig.va = tag;
  ad.va = const_cast<uint8_t*>(aad);
  int32_t status = -1;
  rte_crypto_sym_vec v{};
  v.num = 1;
  v.src_sgl = &sgl;
  v.iv = &iv;
  v.digest = &dig;
  v.aad = &ad;
  v.status = &status;
  rte_crypto_sym_ofs ofs{};
  return rte_cryptodev_sym_cpu_crypto_process(static_cast<uint8_t>(dev), session, ofs, &v) == 1 &&
         status == 0;
}

}  // namespace cryptodev
}  // namespace mcgw::crypto
