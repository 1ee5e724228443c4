// ESP (RFC 4303) with AES-256-GCM (RFC 4106) over byte buffers: the
// transform a worker applies to a tunnel packet after encapsulation
// (outbound) and before decapsulation (inbound), its anti-replay window with
// 64-bit extended sequence numbers (RFC 4303 Appendix A), and the overhead
// the MTU and MSS arithmetic needs.  The cipher is DPDK cryptodev's
// synchronous CPU-crypto API on the crypto_aesni_gcm vdev (intel-ipsec-mb)
// once initEngine() chose it, else OpenSSL's EVP (docs/encryption.md,
// "Crypto engine"); nothing here allocates after construction, takes a lock
// or throws per packet.
//
// Layout of a protected packet (transport mode over the outer IP header;
// the optional RFC 3948 UDP header, port 4500, sits between the two):
//
//   outer IP | [UDP 4500] | SPI(4) seq-low(4) | IV(8) | payload ... |
//   padding(0..3) pad-length(1) next-header(1) | ICV(16)
//
// The payload is the tunnel's UDP datagram (outer UDP + VXLAN/Geneve +
// inner frame), next header 17.  The IV is the 64-bit sequence number
// (RFC 4106 §3.1: unique per key is all it must be), the nonce salt(4)||IV(8),
// the AAD SPI||seq-high||seq-low (RFC 4106 §5, ESN) -- seq-high is never
// sent.  Padding is the minimum that aligns payload+2 to 4 bytes, filled
// 1, 2, 3 (RFC 4303 §2.4); the receiver checks it.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

struct evp_cipher_ctx_st;

namespace mcgw::crypto {

inline constexpr size_t kKeyLen = 32;       // AES-256
inline constexpr size_t kSaltLen = 4;       // RFC 4106 §4
inline constexpr size_t kIvLen = 8;         // RFC 4106 §3.1
inline constexpr size_t kIcvLen = 16;       // the full GCM tag
inline constexpr size_t kEspHeaderLen = 8;  // SPI, sequence number (low 32 bits)
inline constexpr size_t kEspPrefixLen = kEspHeaderLen + kIvLen;  // before the payload
inline constexpr size_t kNatTUdpLen = 8;                         // RFC 3948 UDP header
inline constexpr uint16_t kNatTPort = 4500;
inline constexpr uint8_t kIpProtoEsp = 50;
// The largest trailer: 3 bytes of padding, pad length, next header, ICV.
inline constexpr size_t kEspMaxTrailerLen = 3 + 2 + kIcvLen;

using Key = std::array<uint8_t, kKeyLen>;
using Salt = std::array<uint8_t, kSaltLen>;

// The trailer (padding, pad length, next header, ICV) that follows
// `payload_len` bytes of payload.
constexpr size_t espTrailerLen(size_t payload_len) {
  return (4 - (payload_len + 2) % 4) % 4 + 2 + kIcvLen;
}

// The largest payload (the tunnel's UDP datagram) an ESP packet may carry
// when `room` bytes are left after the outer IP header (and the NAT-T UDP
// header, if any) on the path: the encrypted part (payload + padding + 2)
// is a multiple of 4.  0 when nothing fits.
constexpr size_t espMaxPayload(size_t room) {
  if (room < kEspPrefixLen + kIcvLen + 4) {
    return 0;
  }
  return ((room - kEspPrefixLen - kIcvLen) & ~size_t{3}) - 2;
}

// The AES-256-GCM engine behind Gcm, chosen once per process.
enum class Engine : uint8_t {
  kOpenSsl,    // OpenSSL 3 EVP in the calling thread
  kCryptodev,  // rte_cryptodev_sym_cpu_crypto_process on crypto_aesni_gcm0 (intel-ipsec-mb)
};

struct EngineChoice {
  Engine engine = Engine::kOpenSsl;
  // Why OpenSSL EVP runs when it does (empty when the cryptodev engine runs).
  std::string reason;
};

// Chooses the engine for the Gcm objects made from now on; call once, on
// the main thread, after rte_eal_init (Eal::init does).  The environment
// variable MCGW_CRYPTO_ENGINE says what to try: "auto" (or unset) and
// "cryptodev" the cryptodev engine, "openssl" EVP only.  The cryptodev engine
// hot-plugs the vdev crypto_aesni_gcm0, checks it offers AES-256-GCM (12-byte
// IV and AAD, 16-byte tag) and RTE_CRYPTODEV_FF_SYM_CPU_CRYPTO, makes a pool
// of kCryptodevSessions sessions and checks a packet sealed by it against
// EVP.  When anything fails (no PMD, a CPU without AES-NI, no EAL) EVP runs
// and `reason` says why (the caller logs it).  Later calls return the first
// choice.
EngineChoice initEngine();
// Undoes initEngine before rte_eal_cleanup: stops and removes the device and
// frees the session pool -- unless a Gcm still holds sessions (then nothing
// is freed and false is returned).  Gcm objects made afterwards use EVP.
bool shutdownEngine();
// The engine new Gcm objects use: "cryptodev-ipsec-mb" or "openssl-evp".
const char* engineName();
Engine engine();
// Sessions a cryptodev pool holds: two per Gcm (encrypt, decrypt).
inline constexpr unsigned kCryptodevSessions = 4096;

// AES-256-GCM under one key, for one thread (a worker has its own per SA).
// Construction expands the key once (an encrypt and a decrypt session on the
// cryptodev engine, an EVP context otherwise); seal/open only set the nonce.
// The engine is the one in force when the Gcm is made.
class Gcm {
 public:
  // Throws std::runtime_error when the engine cannot set up the cipher (for
  // the cryptodev engine: the session pool is exhausted).
  explicit Gcm(const Key& key);
  // On a given engine (comparisons, tests): kCryptodev is EVP all the same
  // when initEngine did not start the cryptodev engine.
  Gcm(const Key& key, Engine engine);
  ~Gcm();
  Gcm(const Gcm&) = delete;
  Gcm& operator=(const Gcm&) = delete;

  // The engine this Gcm runs on.
  Engine engine() const { return dev_ >= 0 ? Engine::kCryptodev : Engine::kOpenSsl; }

  // Encrypts data[0, len) in place and writes the 16-byte tag.  false only
  // when the engine reports an error.  On the cryptodev engine an AAD of
  // other than 12 bytes (ESP's) makes a session pair for the call (tests).
  bool seal(const uint8_t nonce[12], const uint8_t* aad, size_t aad_len, uint8_t* data, size_t len,
            uint8_t tag[kIcvLen]);
  // Decrypts data[0, len) in place; true when the tag verifies (the data
  // is garbage otherwise).
  bool open(const uint8_t nonce[12], const uint8_t* aad, size_t aad_len, uint8_t* data, size_t len,
            const uint8_t tag[kIcvLen]);

 private:
  Key key_;                           // for another AAD length on the cryptodev engine
  evp_cipher_ctx_st* ctx_ = nullptr;  // EVP
  int dev_ = -1;                      // cryptodev: the device, its sessions for a 12-byte AAD
  void* enc_ = nullptr;
  void* dec_ = nullptr;
};

// RFC 4303 Appendix A: a window of `size` sequence numbers below the
// highest authenticated one, with 64-bit ESN (only the low 32 bits are on
// the wire; the high ones are inferred, A2.2).  Checked before the ICV is
// verified (cheap rejection) and updated only after it verified.  Updates
// come from one thread at a time: all packets of one SA arrive on one RX
// queue (RSS over the outer addresses, which are one pair per SA); the words
// are relaxed atomics so that a reader on another thread (status) is never
// a data race.
class ReplayWindow {
 public:
  static constexpr uint32_t kMinSize = 64;
  static constexpr uint32_t kMaxSize = 65536;
  // size: rounded up to a multiple of 64, within [kMinSize, kMaxSize].
  explicit ReplayWindow(uint32_t size);
  uint32_t size() const { return size_; }

  // The full 64-bit sequence number a packet with `low` on the wire stands
  // for (RFC 4303 A2.2).
  uint64_t infer(uint32_t low) const;
  // false: a replay, or too old for the window.  Sequence number 0 is never
  // valid.
  bool check(uint64_t seq) const;
  // Marks seq as received (after the ICV verified); false if it was already
  // (a replay that raced the check).
  bool update(uint64_t seq);
  uint64_t highest() const { return top_.load(std::memory_order_relaxed); }

 private:
  uint32_t size_;
  std::atomic<uint64_t> top_{0};
  std::unique_ptr<std::atomic<uint64_t>[]> bits_;  // size_/64 words, bit (seq % size_)
};

// Why an inbound ESP packet was refused.
enum class EspError : uint8_t { kNone, kMalformed, kReplay, kAuth };

struct EspOpened {
  uint64_t seq = 0;
  uint8_t next_header = 0;
  size_t payload_len = 0;  // the payload starts at esp + kEspPrefixLen
};

// Protects payload esp[kEspPrefixLen, kEspPrefixLen + payload_len): writes
// the ESP header and IV in front of it (esp[0, 16)), the padding, pad length
// and next header after it, encrypts, and appends the ICV.  The buffer must
// hold espTrailerLen(payload_len) bytes after the payload.  Returns the ESP
// packet's length (kEspPrefixLen + payload_len + trailer), 0 on an OpenSSL
// error.
size_t espSeal(Gcm& gcm, const Salt& salt, uint32_t spi, uint64_t seq, uint8_t next_header,
               uint8_t* esp, size_t payload_len);

// Opens the ESP packet esp[0, len) (from the SPI to the end of the ICV) of
// an SA whose SPI the caller matched: checks the window, verifies and
// decrypts in place, checks the padding, and updates the window.  On
// kNone, `out` says where the payload is.  Never reads outside [0, len).
// A packet older than the window is, by A2.2, one 2^32 - W or more ahead
// whose ICV fails: a failing ICV on a number 2^31 or more ahead of the
// window is kReplay (too old), else kAuth.  Padding may be any length the
// packet holds (RFC 4303 §2.4), its bytes 1, 2, 3, ...; else kMalformed.
EspError espOpen(Gcm& gcm, const Salt& salt, ReplayWindow& window, uint8_t* esp, size_t len,
                 EspOpened& out);

// The SPI of an ESP packet (0 when len < 4).
uint32_t espSpi(const uint8_t* esp, size_t len);

}  // namespace mcgw::crypto
