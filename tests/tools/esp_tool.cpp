// Test-only driver of espSeal/espOpen (dataplane/crypto/esp.hpp) for
// tests/unit/dataplane/crypto/esp_scapy_test.py, and a benchmark.
//
// stdin, one command a line; one answer line for each seal/open:
//   sa <hex key(32)||salt(4)> <window size>   a new SA (Gcm and window)
//   top <seq>                                 window.update(seq): place the window
//   seal <spi> <seq> <next header> [<hex payload>]
//        -> <hex ESP packet>  (SPI to ICV)
//   open <hex ESP packet>
//        -> none <seq> <next header> <hex payload> | malformed | replay | auth
// Numbers are decimal.  Exit status 2 on a line it cannot read.
//
// esp_tool --cryptodev: the same on the cryptodev engine (an EAL with
// --no-huge; exit status 3 when the engine does not start).
//
// esp_tool --bench [packets] [rounds]: cycles per packet (rdtsc) of espSeal
// and espOpen on 64, 512 and 1400-byte payloads, one core, warm cache, for
// each engine in turn (OpenSSL EVP, then cryptodev), `rounds` times: the
// rounds interleave the engines.  The EAL runs on the current CPU with
// --no-huge; MCGW_CRYPTO_ENGINE=openssl leaves the cryptodev engine out.
// The TSC rate is measured against the steady clock.
#include <rte_eal.h>
#include <sched.h>
#include <unistd.h>
#include <x86intrin.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "dataplane/crypto/esp.hpp"
#include "tests/support/hex.hpp"

using namespace mcgw::crypto;

namespace {

const char* toString(EspError e) {
  switch (e) {
    case EspError::kNone:
      return "none";
    case EspError::kMalformed:
      return "malformed";
    case EspError::kReplay:
      return "replay";
    case EspError::kAuth:
      return "auth";
  }
  return "?";
}

struct Sa {
  Salt salt{};
  std::unique_ptr<Gcm> gcm;
  std::unique_ptr<ReplayWindow> window;
};

bool fromHex(const std::string& s, std::vector<uint8_t>* out) {
  auto bytes = mcgw::test::parseHex<uint8_t>(s);
  if (bytes) {
    *out = std::move(*bytes);
  }
  return bytes.has_value();
}

int serve() {
  Sa sa;
  std::string line;
  while (std::getline(std::cin, line)) {
    std::istringstream in(line);
    std::string cmd;
    if (!(in >> cmd)) {
      continue;
    }
    bool ok = false;
    if (cmd == "sa") {
      std::string hex;
      uint32_t size = 0;
      std::vector<uint8_t> ks;
      if (in >> hex >> size && fromHex(hex, &ks) && ks.size() == kKeyLen + kSaltLen) {
        Key key;
        std::memcpy(key.data(), ks.data(), kKeyLen);
        std::memcpy(sa.salt.data(), ks.data() + kKeyLen, kSaltLen);
        sa.gcm = std::make_unique<Gcm>(key);
        sa.window = std::make_unique<ReplayWindow>(size);
        ok = true;
      }
    } else if (cmd == "top" && sa.gcm) {
      uint64_t seq = 0;
      ok = static_cast<bool>(in >> seq);
      if (ok) {
        sa.window->update(seq);
      }
    } else if (cmd == "seal" && sa.gcm) {
      uint32_t spi = 0;
      uint64_t seq = 0;
      unsigned nh = 0;
      std::string hex;
      std::vector<uint8_t> payload;
      if (in >> spi >> seq >> nh && nh < 256 && (in >> hex || in.eof()) && fromHex(hex, &payload)) {
        std::vector<uint8_t> buf(kEspPrefixLen + payload.size() + espTrailerLen(payload.size()));
        std::memcpy(buf.data() + kEspPrefixLen, payload.data(), payload.size());
        const size_t n = espSeal(*sa.gcm, sa.salt, spi, seq, static_cast<uint8_t>(nh), buf.data(),
                                 payload.size());
        std::cout << mcgw::test::toHex(buf.data(), n) << "\n";
        ok = n == buf.size();
      }
    } else if (cmd == "open" && sa.gcm) {
      std::string hex;
      std::vector<uint8_t> packet;
      if ((in >> hex || in.eof()) && fromHex(hex, &packet)) {
        EspOpened out;
        const EspError e = espOpen(*sa.gcm, sa.salt, *sa.window, packet.data(), packet.size(), out);
        std::cout << toString(e);
        if (e == EspError::kNone) {
          std::cout << ' ' << out.seq << ' ' << unsigned{out.next_header} << ' '
                    << mcgw::test::toHex(packet.data() + kEspPrefixLen, out.payload_len);
        }
        std::cout << "\n";
        ok = true;
      }
    }
    if (!ok) {
      std::cerr << "esp_tool: cannot read: " << line << "\n";
      return 2;
    }
    std::cout.flush();
  }
  return 0;
}

// An EAL for this process and the engine choice; false when the cryptodev
// engine did not start (the reason on stderr).
bool startCryptodev(const char* program) {
  const int cpu = sched_getcpu();
  std::vector<std::string> args{program,
                                "-l",
                                std::to_string(cpu < 0 ? 0 : cpu),
                                "--no-huge",
                                "--no-shconf",
                                "-m",
                                "256",
                                "--no-pci",
                                "--file-prefix",
                                "esp_tool" + std::to_string(::getpid()),
                                "--log-level=*:error"};
  std::vector<char*> argv;
  for (auto& a : args) {
    argv.push_back(a.data());
  }
  if (rte_eal_init(static_cast<int>(argv.size()), argv.data()) < 0) {
    std::cerr << "esp_tool: no EAL\n";
    return false;
  }
  const EngineChoice c = initEngine();
  if (c.engine != Engine::kCryptodev) {
    std::cerr << "esp_tool: OpenSSL EVP only: " << c.reason << "\n";
    return false;
  }
  return true;
}

int benchEngine(Engine engine, size_t packets) {
  Key key{};
  for (size_t i = 0; i < key.size(); ++i) {
    key[i] = static_cast<uint8_t>(i * 7 + 1);
  }
  const Salt salt{0xde, 0xad, 0xbe, 0xef};
  constexpr size_t kBatch = 256;  // packets sealed ahead for one timed open batch
  const auto t0 = std::chrono::steady_clock::now();
  const uint64_t c0 = __rdtsc();
  std::printf("%8s %14s %14s\n", "payload", "seal cyc/pkt", "open cyc/pkt");
  for (size_t size : {64, 512, 1400}) {
    Gcm tx(key, engine), rx(key, engine);
    if (tx.engine() != engine) {
      return 1;
    }
    ReplayWindow window(1024);
    const size_t stride = kEspPrefixLen + size + kEspMaxTrailerLen;
    std::vector<uint8_t> bufs(kBatch * stride, 0x5a);
    std::vector<size_t> lens(kBatch);
    uint64_t seq = 0, seal_cycles = 0, open_cycles = 0, sealed = 0, opened = 0;
    EspOpened out;
    for (size_t done = 0; done < packets; done += kBatch) {
      const uint64_t s0 = __rdtsc();
      for (size_t i = 0; i < kBatch; ++i) {
        lens[i] = espSeal(tx, salt, 0x1234, ++seq, 17, &bufs[i * stride], size);
      }
      seal_cycles += __rdtsc() - s0;
      sealed += kBatch;
      const uint64_t o0 = __rdtsc();
      for (size_t i = 0; i < kBatch; ++i) {
        opened += espOpen(rx, salt, window, &bufs[i * stride], lens[i], out) == EspError::kNone;
      }
      open_cycles += __rdtsc() - o0;
    }
    if (opened != sealed) {
      std::fprintf(stderr, "esp_tool: %zu of %zu packets did not open\n",
                   static_cast<size_t>(sealed - opened), static_cast<size_t>(sealed));
      return 1;
    }
    std::printf("%8zu %14.0f %14.0f\n", size, double(seal_cycles) / double(sealed),
                double(open_cycles) / double(opened));
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("tsc %.3f GHz\n", double(__rdtsc() - c0) / secs / 1e9);
  return 0;
}

int bench(const char* program, size_t packets, unsigned rounds) {
  const bool cryptodev = startCryptodev(program);
  for (unsigned r = 1; r <= rounds; ++r) {
    for (Engine e : {Engine::kOpenSsl, Engine::kCryptodev}) {
      if (e == Engine::kCryptodev && !cryptodev) {
        continue;
      }
      std::printf("== round %u engine %s\n", r,
                  e == Engine::kCryptodev ? "cryptodev-ipsec-mb" : "openssl-evp");
      if (benchEngine(e, packets) != 0) {
        return 1;
      }
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2 && std::strcmp(argv[1], "--bench") == 0) {
    return bench(argv[0], argc >= 3 ? std::stoul(argv[2]) : 1000000,
                 argc >= 4 ? static_cast<unsigned>(std::stoul(argv[3])) : 1);
  }
  if (argc >= 2 && std::strcmp(argv[1], "--cryptodev") == 0) {
    ::unsetenv("MCGW_CRYPTO_ENGINE");
    if (!startCryptodev(argv[0])) {
      return 3;
    }
    const int r = serve();
    shutdownEngine();  // every SA is gone; so are their sessions
    rte_eal_cleanup();
    return r;
  }
  return serve();
}
