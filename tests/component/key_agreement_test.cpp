// ESP key agreement (control/encryption) for real: two KeyAgreement
// instances on one EventLoop, gateway A on 127.0.0.1 (the TLS client: the
// lower address) and gateway B on 127.0.0.2 (the server), over loopback on a
// free port; certificates made by the openssl command line in the fixture (a
// CA, gw-a, gw-b, gw-x with a name no line expects, and a second CA nobody
// trusts).  What the fast path is told (install / activate / retire / lost)
// is recorded in one ordered log and checked: both directions' SAs match
// across the two sides, make-before-break order, rekeys, the grace period,
// refusals with their reasons, reconnection, and hostile input (plain TCP
// garbage, an unknown address pair, malformed frames inside TLS).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <sched.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "control/core/event_loop.hpp"
#include "control/encryption/key_agreement.hpp"

namespace mcgw::encryption {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

config::IpAddress ip(const char* s) {
  return *config::IpAddress::parse(s);
}

// ---- The wire format, byte by byte

TEST(KeyAgreementCodec, EncodesTheDocumentedFrames) {
  EXPECT_EQ(encodeMessage(Message{MsgType::kHello, 0x0102030405060708, 0xa0b0c0d0, {}}),
            (std::vector<uint8_t>{1, 1, 0, 12, 1, 2, 3, 4, 5, 6, 7, 8, 0xa0, 0xb0, 0xc0, 0xd0}));
  EXPECT_EQ(encodeMessage(Message{MsgType::kReady, 2, 0, {}}),
            (std::vector<uint8_t>{1, 2, 0, 8, 0, 0, 0, 0, 0, 0, 0, 2}));
  EXPECT_EQ(encodeMessage(Message{MsgType::kRekey, 3, 256, {}}),
            (std::vector<uint8_t>{1, 3, 0, 12, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 1, 0}));
  EXPECT_EQ(encodeMessage(Message{MsgType::kRekeyRequest, 0, 0, {}}),
            (std::vector<uint8_t>{1, 4, 0, 0}));
  EXPECT_EQ(encodeMessage(Message{MsgType::kError, 0, 0, "no"}),
            (std::vector<uint8_t>{1, 5, 0, 2, 'n', 'o'}));
  // ERROR text is cut to its bound.
  EXPECT_EQ(encodeMessage(Message{MsgType::kError, 0, 0, std::string(1000, 'x')}).size(),
            kFrameHeader + kMaxErrorText);
}

TEST(KeyAgreementCodec, DecodesAndRefuses) {
  struct Case {
    const char* name;
    std::vector<uint8_t> bytes;
    int expect;  // 0: incomplete, 1: a message, -1: an error
    const char* error;
  };
  const Case cases[] = {
      {"empty", {}, 0, ""},
      {"header only", {1, 1, 0}, 0, ""},
      {"hello incomplete", {1, 1, 0, 12, 0, 0, 0}, 0, ""},
      {"hello", {1, 1, 0, 12, 0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 1, 0, 0xff}, 1, ""},
      {"version 2", {2, 1, 0, 12}, -1, "unsupported protocol version 2"},
      {"version 0 at once", {0}, -1, "unsupported protocol version 0"},
      {"oversize", {1, 1, 0x10, 0}, -1, "a frame of 4100 bytes"},
      {"unknown type", {1, 9, 0, 0}, -1, "unknown message type 9"},
      {"ready too long", {1, 2, 0, 12}, -1, "with a body of 12 bytes"},
      {"hello too short", {1, 1, 0, 4}, -1, "with a body of 4 bytes"},
      {"rekey request with a body", {1, 4, 0, 1, 0}, -1, "with a body of 1 bytes"},
      {"error too long", {1, 5, 0, 250}, -1, "an ERROR of 250 bytes"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    size_t used = 0;
    auto m = decodeMessage(c.bytes, &used);
    if (c.expect == 0) {
      EXPECT_FALSE(m.has_value());
      continue;
    }
    ASSERT_TRUE(m.has_value());
    if (c.expect < 0) {
      ASSERT_FALSE(m->ok());
      EXPECT_NE(m->error().find(c.error), std::string::npos) << m->error();
      continue;
    }
    ASSERT_TRUE(m->ok()) << m->error();
    EXPECT_EQ(used, 16u);  // the byte after the frame is not taken
    EXPECT_EQ(m->value().type, MsgType::kHello);
    EXPECT_EQ(m->value().generation, 7u);
    EXPECT_EQ(m->value().spi, 256u);
  }
}

// ---- Two gateways on loopback

struct Event {
  char side;  // 'A' or 'B'
  enum Kind { kInstall, kActivate, kRetire, kLost } kind;
  std::string line;
  SaMaterial sa;
  uint32_t spi = 0;
  std::string why;
  Clock::time_point at;
};

struct Files {
  std::string ca, cert, key;
};

class KeyAgreementTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ::signal(SIGPIPE, SIG_IGN);
    char tmpl[] = "/tmp/mcgw-ka-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    const std::string d = dir_.string();
    const char* ec = "-newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes";
    sh("openssl req -x509 " + std::string(ec) + " -keyout " + d + "/ca.key -out " + d +
       "/ca.pem -days 2 -subj /CN=mcgw-test-ca");
    sh("openssl req -x509 " + std::string(ec) + " -keyout " + d + "/ca2.key -out " + d +
       "/ca2.pem -days 2 -subj /CN=mcgw-wrong-ca");
    for (const char* name : {"gw-a", "gw-b", "gw-x"}) {
      const std::string n = d + "/" + name;
      std::ofstream(n + ".ext") << "basicConstraints=CA:FALSE\n"
                                << "keyUsage=critical,digitalSignature\n"
                                << "extendedKeyUsage=serverAuth,clientAuth\n"
                                << "subjectAltName=DNS:" << name << "\n";
      sh("openssl req " + std::string(ec) + " -keyout " + n + ".key -out " + n +
         ".csr -subj /O=mcgw-test/CN=" + name);
      sh("openssl x509 -req -in " + n + ".csr -CA " + d + "/ca.pem -CAkey " + d +
         "/ca.key -CAcreateserial -days 2 -out " + n + ".pem -extfile " + n + ".ext");
      fs::permissions(n + ".key", fs::perms::owner_read | fs::perms::owner_write);
    }
    auto loop = core::EventLoop::create();
    ASSERT_TRUE(loop) << loop.error();
    loop_ = std::move(*loop);
    port_ = freePort();
    ASSERT_NE(port_, 0);
  }

  void TearDown() override {
    a_.reset();
    b_.reset();
    loop_.reset();
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  static void sh(const std::string& cmd) {
    const int rc = std::system((cmd + " >/dev/null 2>&1").c_str());
    ASSERT_EQ(rc, 0) << cmd;
  }

  // A port free on 127.0.0.2 (the listener's address).
  static uint16_t freePort() {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    ::inet_pton(AF_INET, "127.0.0.2", &a.sin_addr);
    socklen_t len = sizeof a;
    uint16_t port = 0;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
      port = ntohs(a.sin_port);
    }
    ::close(fd);
    return port;
  }

  Files files(const std::string& name, const std::string& ca = "ca") const {
    const std::string d = dir_.string() + "/";
    return {d + ca + ".pem", d + name + ".pem", d + name + ".key"};
  }

  KeyAgreementSettings settings(const Files& f) const {
    KeyAgreementSettings s;
    s.ca_file = f.ca;
    s.certificate_file = f.cert;
    s.private_key_file = f.key;
    s.port = port_;
    s.grace = milliseconds(300);
    s.retry_min = milliseconds(100);
    s.retry_max = milliseconds(400);
    s.handshake_timeout = milliseconds(3000);
    return s;
  }

  KeySink sink(char side) {
    KeySink k;
    k.install_inbound = [this, side](const std::string& line, const SaMaterial& sa) {
      if (refuse_install_ == side) {
        ++refused_;
        return false;  // as a fast path out of crypto sessions
      }
      events_.push_back({side, Event::kInstall, line, sa, sa.spi, {}, Clock::now()});
      return true;
    };
    k.activate_outbound = [this, side](const std::string& line, const SaMaterial& sa) {
      events_.push_back({side, Event::kActivate, line, sa, sa.spi, {}, Clock::now()});
      return true;
    };
    k.retire_inbound = [this, side](const std::string& line, uint32_t spi) {
      events_.push_back({side, Event::kRetire, line, {}, spi, {}, Clock::now()});
    };
    k.lost = [this, side](const std::string& line, const std::string& why) {
      events_.push_back({side, Event::kLost, line, {}, 0, why, Clock::now()});
    };
    return k;
  }

  static KeyLine lineOfA() { return {"b/l1", "gw-b", ip("127.0.0.1"), ip("127.0.0.2")}; }
  static KeyLine lineOfB() { return {"a/l1", "gw-a", ip("127.0.0.2"), ip("127.0.0.1")}; }

  std::unique_ptr<KeyAgreement> make(char side, const KeyAgreementSettings& s) {
    auto ka = KeyAgreement::create(*loop_, s, sink(side));
    EXPECT_TRUE(ka) << ka.error();
    if (!ka) {
      return nullptr;
    }
    auto r = (*ka)->setLines({side == 'A' ? lineOfA() : lineOfB()});
    EXPECT_TRUE(r) << r.error();
    return std::move(*ka);
  }

  void startBoth(const Files& fa, const Files& fb) {
    a_ = make('A', settings(fa));
    b_ = make('B', settings(fb));
    ASSERT_TRUE(a_ && b_);
  }

  bool runUntil(const std::function<bool()>& done, milliseconds limit = milliseconds(5000)) {
    const auto end = Clock::now() + limit;
    while (Clock::now() < end) {
      if (done()) {
        return true;
      }
      loop_->runOnce(std::chrono::microseconds(10000));
    }
    return done();
  }

  void runFor(milliseconds d) {
    runUntil([] { return false; }, d);
  }

  KeyLineStatus statusA() { return *a_->status("b/l1"); }
  KeyLineStatus statusB() { return *b_->status("a/l1"); }

  bool bothAtGeneration(uint64_t g) {
    return a_ && b_ && statusA().generation >= g && statusB().generation >= g &&
           statusA().state == LineState::kEstablished && statusB().state == LineState::kEstablished;
  }

  // The index of the last event of side/kind (with generation g, if given).
  std::optional<size_t> find(char side, Event::Kind kind, std::optional<uint64_t> g = {}) const {
    std::optional<size_t> found;
    for (size_t i = 0; i < events_.size(); ++i) {
      const Event& e = events_[i];
      if (e.side == side && e.kind == kind && (!g || e.sa.generation == *g)) {
        found = i;
      }
    }
    return found;
  }

  size_t count(Event::Kind kind) const {
    return static_cast<size_t>(std::count_if(events_.begin(), events_.end(),
                                             [&](const Event& e) { return e.kind == kind; }));
  }

  // Both sides' SAs of generation g: A's outbound is B's inbound and the
  // other way round; each side installed before the other activated.
  void expectMatchingSas(uint64_t g, bool current = true) {
    const auto a_in = find('A', Event::kInstall, g), a_out = find('A', Event::kActivate, g);
    const auto b_in = find('B', Event::kInstall, g), b_out = find('B', Event::kActivate, g);
    ASSERT_TRUE(a_in && a_out && b_in && b_out) << "generation " << g;
    const SaMaterial& ai = events_[*a_in].sa;
    const SaMaterial& ao = events_[*a_out].sa;
    const SaMaterial& bi = events_[*b_in].sa;
    const SaMaterial& bo = events_[*b_out].sa;
    EXPECT_EQ(ao.spi, bi.spi);
    EXPECT_EQ(ao.key, bi.key);
    EXPECT_EQ(ao.salt, bi.salt);
    EXPECT_EQ(bo.spi, ai.spi);
    EXPECT_EQ(bo.key, ai.key);
    EXPECT_EQ(bo.salt, ai.salt);
    EXPECT_NE(ai.key, ao.key);  // the two directions
    EXPECT_NE(ai.spi, ao.spi);
    EXPECT_GE(ai.spi, kMinSpi);
    EXPECT_GE(ao.spi, kMinSpi);
    EXPECT_NE(ai.key, (std::array<uint8_t, 32>{}));
    EXPECT_NE(ao.key, (std::array<uint8_t, 32>{}));
    // Make-before-break: a side activates only after the other installed.
    EXPECT_LT(*b_in, *a_out);
    EXPECT_LT(*a_in, *b_out);
    if (!current) {
      return;
    }
    // Status agrees with what the sink was told.
    EXPECT_EQ(statusA().inbound_spi, ai.spi);
    EXPECT_EQ(statusA().outbound_spi, ao.spi);
    EXPECT_EQ(statusB().inbound_spi, bi.spi);
    EXPECT_EQ(statusB().outbound_spi, bo.spi);
  }

  fs::path dir_;
  uint16_t port_ = 0;
  std::unique_ptr<core::EventLoop> loop_;
  std::unique_ptr<KeyAgreement> a_, b_;
  std::vector<Event> events_;
  char refuse_install_ = 0;  // the side whose sink refuses inbound SAs
  int refused_ = 0;
};

TEST_F(KeyAgreementTest, BothSidesAgreeOnTheKeysOfBothDirections) {
  startBoth(files("gw-a"), files("gw-b"));
  EXPECT_TRUE(statusA().client);
  EXPECT_FALSE(statusB().client);
  EXPECT_TRUE(a_->listeners().empty());
  EXPECT_EQ(b_->listeners(), std::vector<std::string>{"127.0.0.2:" + std::to_string(port_)});
  ASSERT_TRUE(runUntil([&] { return bothAtGeneration(1); }))
      << "A: " << statusA().last_error << " / B: " << statusB().last_error;
  expectMatchingSas(1);
  EXPECT_EQ(statusA().generation, 1u);
  EXPECT_EQ(statusB().generation, 1u);
  EXPECT_NE(statusA().peer_subject.find("CN=gw-b"), std::string::npos) << statusA().peer_subject;
  EXPECT_NE(statusB().peer_subject.find("CN=gw-a"), std::string::npos) << statusB().peer_subject;
  EXPECT_EQ(statusA().last_error, "");
  EXPECT_EQ(a_->counters().exchanges, 1u);
  EXPECT_EQ(b_->counters().exchanges, 1u);
  EXPECT_EQ(b_->counters().accepted, 1u);
  EXPECT_EQ(count(Event::kRetire), 0u);
  EXPECT_EQ(count(Event::kLost), 0u);

  // setLines() again with the same line and one more: the first keeps its
  // connection and keys; removing the new one retires nothing of the first.
  const size_t before = events_.size();
  KeyLine extra{"c/l1", "gw-c", ip("127.0.0.1"), ip("127.0.0.3")};
  ASSERT_TRUE(a_->setLines({lineOfA(), extra}));
  runFor(milliseconds(200));
  EXPECT_EQ(statusA().state, LineState::kEstablished);
  EXPECT_EQ(statusA().established, 1u);
  ASSERT_TRUE(a_->status("c/l1"));
  EXPECT_NE(a_->status("c/l1")->state, LineState::kEstablished);
  ASSERT_TRUE(a_->setLines({lineOfA()}));
  EXPECT_FALSE(a_->status("c/l1"));
  runFor(milliseconds(100));
  EXPECT_EQ(events_.size(), before);
  // An invalid list is refused as a whole.
  EXPECT_FALSE(a_->setLines({lineOfA(), lineOfA()}));
  KeyLine mixed{"m/l1", "gw-m", ip("127.0.0.1"), ip("::1")};
  EXPECT_FALSE(a_->setLines({mixed}));
  EXPECT_EQ(statusA().state, LineState::kEstablished);

  // Removing the line retires its inbound SA at once.
  const uint32_t a_inbound = statusA().inbound_spi;
  ASSERT_TRUE(a_->setLines({}));
  ASSERT_TRUE(find('A', Event::kRetire));
  EXPECT_EQ(events_[*find('A', Event::kRetire)].spi, a_inbound);
}

TEST_F(KeyAgreementTest, RekeyMakesBeforeBreakAndRetiresAfterTheGrace) {
  startBoth(files("gw-a"), files("gw-b"));
  ASSERT_TRUE(runUntil([&] { return bothAtGeneration(1); }));
  const auto g1_a_in = events_[*find('A', Event::kInstall, 1)].sa;
  const auto g1_a_out = events_[*find('A', Event::kActivate, 1)].sa;
  const uint32_t g1_b_in = statusB().inbound_spi;

  // The client starts it.
  ASSERT_TRUE(a_->rekey("b/l1"));
  ASSERT_TRUE(runUntil([&] { return bothAtGeneration(2); }));
  expectMatchingSas(2);
  const auto g2_a_in = events_[*find('A', Event::kInstall, 2)].sa;
  const auto g2_a_out = events_[*find('A', Event::kActivate, 2)].sa;
  EXPECT_NE(g2_a_in.spi, g1_a_in.spi);
  EXPECT_NE(g2_a_out.spi, g1_a_out.spi);
  // Four different keys: two directions, two generations.
  for (const auto& k : {g1_a_out.key, g2_a_in.key, g2_a_out.key}) {
    EXPECT_NE(g1_a_in.key, k);
  }
  EXPECT_NE(g1_a_out.key, g2_a_in.key);
  EXPECT_NE(g1_a_out.key, g2_a_out.key);
  EXPECT_NE(g2_a_in.key, g2_a_out.key);
  // The old inbound SAs are still there when the new ones are in force ...
  EXPECT_EQ(count(Event::kRetire), 0u);
  EXPECT_EQ(statusA().retiring_spis, std::vector<uint32_t>{g1_a_in.spi});
  EXPECT_EQ(statusB().retiring_spis, std::vector<uint32_t>{g1_b_in});
  // ... and go after the grace (300 ms), not before.
  ASSERT_TRUE(runUntil([&] { return count(Event::kRetire) == 2; }));
  for (char side : {'A', 'B'}) {
    const Event& retire = events_[*find(side, Event::kRetire)];
    const Event& switched = events_[*find(side, Event::kActivate, 2)];
    EXPECT_EQ(retire.spi, side == 'A' ? g1_a_in.spi : g1_b_in);
    const auto waited = std::chrono::duration_cast<milliseconds>(retire.at - switched.at).count();
    EXPECT_GE(waited, 290) << side;
    std::printf("side %c: old inbound SA retired %lld ms after the switch (grace 300 ms)\n", side,
                static_cast<long long>(waited));
  }
  EXPECT_TRUE(statusA().retiring_spis.empty());

  // The server asks for one (REKEY-REQUEST).
  ASSERT_TRUE(b_->rekey("a/l1"));
  ASSERT_TRUE(runUntil([&] { return bothAtGeneration(3); }));
  expectMatchingSas(3);
  EXPECT_EQ(count(Event::kLost), 0u);
  EXPECT_FALSE(a_->rekey("no/such"));
}

TEST_F(KeyAgreementTest, AnInboundSaTheFastPathRefusesGetsNoReady) {
  // B's fast path cannot install (its crypto sessions ran out): B must not
  // send READY, so A never switches to an SPI B does not hold.
  refuse_install_ = 'B';
  startBoth(files("gw-a"), files("gw-b"));
  ASSERT_TRUE(runUntil([&] { return refused_ >= 2; }));  // A retried
  EXPECT_FALSE(find('A', Event::kActivate));
  EXPECT_FALSE(find('B', Event::kActivate));
  EXPECT_FALSE(find('A', Event::kInstall)) << "A installs only after B's answer";
  EXPECT_FALSE(find('B', Event::kRetire)) << "a refused SPI is never retired: it was never in";
  EXPECT_GE(b_->counters().install_failures, 2u);
  EXPECT_NE(statusB().state, LineState::kEstablished);
  EXPECT_NE(statusB().last_error.find("could not install the inbound SA"), std::string::npos)
      << statusB().last_error;
  // Sessions back: the next attempt agrees keys.
  refuse_install_ = 0;
  ASSERT_TRUE(runUntil([&] { return bothAtGeneration(1); }))
      << "A: " << statusA().last_error << " / B: " << statusB().last_error;
  const uint64_t g = statusA().generation;
  expectMatchingSas(g);
}

TEST_F(KeyAgreementTest, PausedAgreementInstallsNothingUntilResumed) {
  startBoth(files("gw-a"), files("gw-b"));
  ASSERT_TRUE(runUntil([&] { return bothAtGeneration(1); }));
  // B is paused (its gateway reloads); A asks for new keys.
  b_->setPaused(true);
  const size_t before = events_.size();
  ASSERT_TRUE(a_->rekey("b/l1"));
  runFor(milliseconds(500));
  EXPECT_FALSE(find('B', Event::kInstall, 2)) << "B installed an SA while paused";
  EXPECT_FALSE(find('A', Event::kActivate, 2)) << "A switched while B was paused";
  EXPECT_EQ(statusB().generation, 1u);
  // A (the client) sent REKEY and waits for B's answer: nothing installed.
  EXPECT_EQ(events_.size(), before);
  b_->setPaused(false);
  ASSERT_TRUE(runUntil([&] { return bothAtGeneration(2); }))
      << "A: " << statusA().last_error << " / B: " << statusB().last_error;
  expectMatchingSas(2);
  EXPECT_EQ(count(Event::kLost), 0u);
}

TEST_F(KeyAgreementTest, APauseLongerThanTheTimeLimitDoesNotFailTheExchange) {
  // A (client) waits for B's answer to REKEY with a 1 s limit; both
  // gateways reload for 1.5 s (paused).  A resumes first: its limit starts
  // again rather than firing at once, so B, resumed 300 ms later, still
  // gets to answer.
  auto sa = settings(files("gw-a"));
  sa.handshake_timeout = milliseconds(1000);
  auto sb = settings(files("gw-b"));
  sb.handshake_timeout = milliseconds(10000);
  a_ = make('A', sa);
  b_ = make('B', sb);
  ASSERT_TRUE(a_ && b_);
  ASSERT_TRUE(runUntil([&] { return bothAtGeneration(1); }));
  b_->setPaused(true);
  ASSERT_TRUE(a_->rekey("b/l1"));
  runFor(milliseconds(50));  // REKEY on its way
  a_->setPaused(true);
  EXPECT_FALSE(a_->rekey("b/l1")) << "refused while paused";
  EXPECT_FALSE(a_->setLines({lineOfA()})) << "refused while paused";
  runFor(milliseconds(1500));
  a_->setPaused(false);
  runFor(milliseconds(300));
  EXPECT_EQ(a_->counters().timeouts, 0u) << "A's limit fired at once on resume";
  b_->setPaused(false);
  ASSERT_TRUE(runUntil([&] { return bothAtGeneration(2); }))
      << "A: " << statusA().last_error << " / B: " << statusB().last_error;
  expectMatchingSas(2);
  EXPECT_EQ(a_->counters().timeouts, 0u);
  EXPECT_EQ(b_->counters().timeouts, 0u);
  EXPECT_EQ(count(Event::kLost), 0u);
}

TEST_F(KeyAgreementTest, RekeysInALoopKeepAtMostTwoSasInGrace) {
  auto sa = settings(files("gw-a"));
  auto sb = settings(files("gw-b"));
  sa.grace = sb.grace = milliseconds(60000);  // nothing leaves by the timer
  a_ = make('A', sa);
  b_ = make('B', sb);
  ASSERT_TRUE(a_ && b_);
  ASSERT_TRUE(runUntil([&] { return bothAtGeneration(1); }));
  for (uint64_t g = 2; g <= 6; ++g) {
    ASSERT_TRUE(a_->rekey("b/l1"));
    ASSERT_TRUE(runUntil([&] { return bothAtGeneration(g); })) << g;
  }
  EXPECT_EQ(statusA().retiring_spis.size(), kMaxRetiringPerLine);
  EXPECT_EQ(statusB().retiring_spis.size(), kMaxRetiringPerLine);
  // Generations 1..3 went early (A and B: 3 each), in order.
  size_t retired = 0;
  for (const Event& e : events_) {
    retired += e.kind == Event::kRetire ? 1 : 0;
  }
  EXPECT_EQ(retired, 6u);
  const Event& first_a = events_[*find('A', Event::kInstall, 1)];
  bool found = false;
  for (const Event& e : events_) {
    found = found || (e.side == 'A' && e.kind == Event::kRetire && e.spi == first_a.spi);
  }
  EXPECT_TRUE(found) << "A's generation-1 inbound SA was not retired";
}

TEST_F(KeyAgreementTest, AFifoInPlaceOfAFileIsRefusedWithoutHanging) {
  const std::string fifo = (dir_ / "fifo").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  for (int which = 0; which < 3; ++which) {
    Files f = files("gw-a");
    std::string& path = which == 0 ? f.ca : which == 1 ? f.cert : f.key;
    path = fifo;
    const auto t0 = Clock::now();
    auto r = KeyAgreement::check(settings(f));
    ASSERT_FALSE(r) << which;
    EXPECT_NE(r.error().find("not a regular file"), std::string::npos) << r.error();
    EXPECT_LT(Clock::now() - t0, milliseconds(2000));
  }
}

TEST_F(KeyAgreementTest, RekeyIntervalTimer) {
  auto sa = settings(files("gw-a"));
  sa.rekey_interval = milliseconds(200);
  a_ = make('A', sa);
  b_ = make('B', settings(files("gw-b")));
  ASSERT_TRUE(runUntil([&] { return bothAtGeneration(4); }));
  for (uint64_t g = 1; g <= 4; ++g) {
    expectMatchingSas(g, false);
    if (::testing::Test::HasFailure()) {
      return;
    }
  }
  EXPECT_EQ(count(Event::kLost), 0u);
}

TEST_F(KeyAgreementTest, WrongCaOnTheClientGivesNoSa) {
  startBoth(files("gw-a", "ca2"), files("gw-b"));
  ASSERT_TRUE(runUntil([&] { return statusA().last_error != "" && statusB().last_error != ""; }))
      << "A: " << statusA().last_error << " / B: " << statusB().last_error;
  runFor(milliseconds(300));
  EXPECT_EQ(count(Event::kInstall), 0u);
  EXPECT_EQ(count(Event::kActivate), 0u);
  EXPECT_NE(statusA().state, LineState::kEstablished);
  // B sends its chain with the root (OpenSSL builds it from B's CA file),
  // which A does not trust.
  EXPECT_EQ(statusA().last_error,
            "certificate verify failed: self-signed certificate in certificate chain (depth 1: "
            "CN=mcgw-test-ca)");
  EXPECT_NE(statusB().last_error.find("unknown ca"), std::string::npos) << statusB().last_error;
  EXPECT_GE(a_->counters().verify_failures, 1u);
  EXPECT_GE(b_->counters().tls_failures, 1u);
  EXPECT_EQ(statusA().generation, 0u);
  std::printf("A: %s\nB: %s\n", statusA().last_error.c_str(), statusB().last_error.c_str());
}

TEST_F(KeyAgreementTest, WrongCaOnTheServerGivesNoSa) {
  startBoth(files("gw-a"), files("gw-b", "ca2"));
  ASSERT_TRUE(runUntil([&] { return statusA().last_error != "" && statusB().last_error != ""; }))
      << "A: " << statusA().last_error << " / B: " << statusB().last_error;
  runFor(milliseconds(300));
  EXPECT_EQ(count(Event::kInstall), 0u);
  EXPECT_EQ(count(Event::kActivate), 0u);
  EXPECT_EQ(statusB().state, LineState::kFailed);
  EXPECT_EQ(statusB().last_error,
            "certificate verify failed: self-signed certificate in certificate chain (depth 1: "
            "CN=mcgw-test-ca)");
  EXPECT_NE(statusA().last_error.find("unknown ca"), std::string::npos) << statusA().last_error;
  EXPECT_GE(b_->counters().verify_failures, 1u);
  std::printf("A: %s\nB: %s\n", statusA().last_error.c_str(), statusB().last_error.c_str());
}

TEST_F(KeyAgreementTest, PeerNameMismatchIsRefused) {
  // The server presents gw-x where A expects gw-b.
  startBoth(files("gw-a"), files("gw-x"));
  ASSERT_TRUE(runUntil([&] { return a_->counters().name_mismatches >= 1; }));
  runFor(milliseconds(200));
  EXPECT_EQ(count(Event::kInstall), 0u);
  EXPECT_NE(statusA().state, LineState::kEstablished);
  EXPECT_EQ(statusA().last_error, "peer name mismatch: got \"gw-x\", want \"gw-b\"");
  std::printf("A: %s\nB: %s\n", statusA().last_error.c_str(), statusB().last_error.c_str());
  EXPECT_NE(statusB().last_error.find("peer name mismatch"), std::string::npos)
      << statusB().last_error;  // told by A's ERROR

  // The client presents gw-x where B expects gw-a: B checks after the handshake.
  a_.reset();
  b_.reset();
  events_.clear();
  startBoth(files("gw-x"), files("gw-b"));
  ASSERT_TRUE(runUntil([&] { return b_->counters().name_mismatches >= 1; }));
  runFor(milliseconds(200));
  EXPECT_EQ(count(Event::kInstall), 0u);
  EXPECT_EQ(statusB().last_error, "peer name mismatch: got \"gw-x\", want \"gw-a\"");
  EXPECT_NE(statusA().last_error.find("the peer closed the connection"), std::string::npos)
      << statusA().last_error;
}

TEST_F(KeyAgreementTest, KeyFileReadableByOthersIsRefused) {
  const Files f = files("gw-a");
  fs::permissions(f.key, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read |
                             fs::perms::others_read);
  auto ka = KeyAgreement::create(*loop_, settings(f), sink('A'));
  ASSERT_FALSE(ka);
  EXPECT_NE(ka.error().find("has mode 0644"), std::string::npos) << ka.error();
  EXPECT_NE(ka.error().find("0600"), std::string::npos) << ka.error();
  std::printf("%s\n", ka.error().c_str());

  // A reload with it is refused too, and the instance keeps its files.
  fs::permissions(f.key, fs::perms::owner_read);  // 0400 is fine
  auto ok = KeyAgreement::create(*loop_, settings(f), sink('A'));
  ASSERT_TRUE(ok) << ok.error();
  fs::permissions(f.key, fs::perms::owner_read | fs::perms::group_read);
  auto r = (*ok)->reload(settings(f));
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().find("has mode 0440"), std::string::npos) << r.error();
  // A key that does not belong to the certificate.
  fs::permissions(f.key, fs::perms::owner_read);
  Files wrong = f;
  wrong.key = files("gw-b").key;
  auto mismatch = (*ok)->reload(settings(wrong));
  ASSERT_FALSE(mismatch);
  EXPECT_NE(mismatch.error().find("does not match"), std::string::npos) << mismatch.error();
}

TEST_F(KeyAgreementTest, ServerRestartGivesNewKeys) {
  startBoth(files("gw-a"), files("gw-b"));
  ASSERT_TRUE(runUntil([&] { return bothAtGeneration(1); }));
  const auto g1 = events_[*find('A', Event::kInstall, 1)].sa;
  const auto g1_out = events_[*find('A', Event::kActivate, 1)].sa;

  b_.reset();  // the server goes away
  ASSERT_TRUE(runUntil([&] { return find('A', Event::kLost).has_value(); }));
  std::printf("A lost the line: %s\n", events_[*find('A', Event::kLost)].why.c_str());
  EXPECT_EQ(events_[*find('A', Event::kLost)].why, "the peer closed the connection");
  EXPECT_NE(statusA().state, LineState::kEstablished);
  EXPECT_EQ(count(Event::kRetire), 0u);  // the SAs stay: the fast path decides
  runFor(milliseconds(300));             // a retry or two fail (refused)

  b_ = make('B', settings(files("gw-b")));
  const auto restarted = Clock::now();
  ASSERT_TRUE(runUntil([&] {
    return find('A', Event::kActivate, 2).has_value() && find('B', Event::kActivate, 2).has_value();
  })) << statusA().last_error;
  std::printf("A reconnected %lld ms after B came back\n",
              static_cast<long long>(
                  std::chrono::duration_cast<milliseconds>(Clock::now() - restarted).count()));
  expectMatchingSas(2);
  const auto g2 = events_[*find('A', Event::kInstall, 2)].sa;
  EXPECT_NE(g2.key, g1.key);
  EXPECT_NE(g2.spi, g1.spi);
  EXPECT_NE(events_[*find('A', Event::kActivate, 2)].sa.key, g1_out.key);
  // A's inbound SA of before goes after the grace.
  ASSERT_TRUE(runUntil([&] { return find('A', Event::kRetire).has_value(); }));
  EXPECT_EQ(events_[*find('A', Event::kRetire)].spi, g1.spi);
  EXPECT_EQ(statusA().state, LineState::kEstablished);
  EXPECT_EQ(statusA().last_error, "");
}

// A plain TCP connection from addr to B's port that sends bytes; true when
// B closed it within the time (the loop runs meanwhile).
bool sendGarbage(KeyAgreementTest* t, const std::function<bool(const std::function<bool()>&)>& run,
                 const char* from, uint16_t port, const std::string& bytes) {
  (void)t;
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
  sockaddr_in src{}, dst{};
  src.sin_family = dst.sin_family = AF_INET;
  ::inet_pton(AF_INET, from, &src.sin_addr);
  ::inet_pton(AF_INET, "127.0.0.2", &dst.sin_addr);
  dst.sin_port = htons(port);
  ::bind(fd, reinterpret_cast<sockaddr*>(&src), sizeof src);
  ::connect(fd, reinterpret_cast<sockaddr*>(&dst), sizeof dst);
  bool sent = false, closed = false;
  run([&] {
    if (!sent) {
      sent = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL) ==
             static_cast<ssize_t>(bytes.size());
    }
    char buf[512];
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    closed = n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != ENOTCONN);
    return closed;
  });
  ::close(fd);
  return closed;
}

TEST_F(KeyAgreementTest, GarbageIsClosedAndCounted) {
  startBoth(files("gw-a"), files("gw-b"));
  ASSERT_TRUE(runUntil([&] { return bothAtGeneration(1); }));
  auto run = [this](const std::function<bool()>& f) { return runUntil(f, milliseconds(3000)); };
  // From an address no line has.
  EXPECT_TRUE(sendGarbage(this, run, "127.0.0.3", port_, "GET / HTTP/1.0\r\n\r\n"));
  EXPECT_EQ(b_->counters().unknown_pair, 1u);
  // From the line's own peer address: not TLS.
  EXPECT_TRUE(sendGarbage(this, run, "127.0.0.1", port_, std::string(300, '\x16')));
  EXPECT_TRUE(sendGarbage(this, run, "127.0.0.1", port_, "GET / HTTP/1.0\r\n\r\n"));
  EXPECT_EQ(b_->counters().tls_failures, 2u);
  EXPECT_EQ(b_->counters().accepted, 4u);
  // The working line is untouched and still rekeys.
  EXPECT_EQ(statusB().state, LineState::kEstablished);
  EXPECT_EQ(statusB().last_error, "");
  ASSERT_TRUE(a_->rekey("b/l1"));
  ASSERT_TRUE(runUntil([&] { return bothAtGeneration(2); }));
  expectMatchingSas(2);
  EXPECT_EQ(count(Event::kLost), 0u);
}

// A TLS client of the test's own, with gw-a's certificate, that sends
// `frame` after the handshake and reads what comes back until B closes.
struct RawTlsClient {
  std::atomic<bool> done{false};
  std::string got;  // what B sent (an ERROR frame)
  std::thread thread;

  void start(const Files& f, uint16_t port, std::vector<uint8_t> frame) {
    thread = std::thread([this, f, port, frame] {
      SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
      SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION);
      SSL_CTX_use_certificate_chain_file(ctx, f.cert.c_str());
      SSL_CTX_use_PrivateKey_file(ctx, f.key.c_str(), SSL_FILETYPE_PEM);
      SSL_CTX_load_verify_locations(ctx, f.ca.c_str(), nullptr);
      const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
      sockaddr_in src{}, dst{};
      src.sin_family = dst.sin_family = AF_INET;
      ::inet_pton(AF_INET, "127.0.0.1", &src.sin_addr);
      ::inet_pton(AF_INET, "127.0.0.2", &dst.sin_addr);
      dst.sin_port = htons(port);
      timeval tv{5, 0};
      ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
      ::bind(fd, reinterpret_cast<sockaddr*>(&src), sizeof src);
      if (::connect(fd, reinterpret_cast<sockaddr*>(&dst), sizeof dst) == 0) {
        SSL* ssl = SSL_new(ctx);
        SSL_set_fd(ssl, fd);
        if (SSL_connect(ssl) == 1) {
          SSL_write(ssl, frame.data(), static_cast<int>(frame.size()));
          char buf[512];
          int n;
          while ((n = SSL_read(ssl, buf, sizeof buf)) > 0) {
            got.append(buf, static_cast<size_t>(n));
          }
        }
        SSL_free(ssl);
      }
      ::close(fd);
      SSL_CTX_free(ctx);
      done = true;
    });
  }
  ~RawTlsClient() {
    if (thread.joinable()) {
      thread.join();
    }
  }
};

TEST_F(KeyAgreementTest, MalformedFramesInsideTlsCloseWithAReason) {
  b_ = make('B', settings(files("gw-b")));
  ASSERT_TRUE(b_);
  struct Case {
    std::vector<uint8_t> frame;
    const char* reason;
  };
  const Case cases[] = {
      {{2, 1, 0, 12, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 1, 0}, "unsupported protocol version 2"},
      {{1, 1, 0x04, 0x00}, "a frame of 1028 bytes (the limit is 256)"},
      {{1, 2, 0, 8, 0, 0, 0, 0, 0, 0, 0, 1}, "message type 2 out of turn"},
      {{1, 42, 0, 0}, "unknown message type 42"},
      {{1, 1, 0, 12, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 5}, "SPI 5 is reserved"},
  };
  uint64_t errors = 0;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.reason);
    RawTlsClient client;
    client.start(files("gw-a"), port_, c.frame);
    ASSERT_TRUE(runUntil([&] { return client.done.load(); }, milliseconds(8000)));
    client.thread.join();
    ++errors;
    EXPECT_EQ(b_->counters().protocol_errors, errors);
    EXPECT_NE(statusB().last_error.find(c.reason), std::string::npos) << statusB().last_error;
    // B said why, in an ERROR frame, before closing.
    ASSERT_GE(client.got.size(), kFrameHeader);
    EXPECT_EQ(client.got[1], static_cast<char>(MsgType::kError));
    EXPECT_NE(client.got.find(c.reason), std::string::npos);
  }
  EXPECT_EQ(count(Event::kInstall), 0u);
  // The real A still gets its keys.
  a_ = make('A', settings(files("gw-a")));
  ASSERT_TRUE(runUntil([&] { return bothAtGeneration(1); })) << statusB().last_error;
  expectMatchingSas(1);
}

TEST_F(KeyAgreementTest, SilentConnectionTimesOut) {
  auto sb = settings(files("gw-b"));
  sb.handshake_timeout = milliseconds(300);
  b_ = make('B', sb);
  ASSERT_TRUE(b_);
  // A TCP connection from the line's peer address that never speaks.
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in src{}, dst{};
  src.sin_family = dst.sin_family = AF_INET;
  ::inet_pton(AF_INET, "127.0.0.1", &src.sin_addr);
  ::inet_pton(AF_INET, "127.0.0.2", &dst.sin_addr);
  dst.sin_port = htons(port_);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&src), sizeof src), 0);
  ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&dst), sizeof dst), 0);
  const auto start = Clock::now();
  ASSERT_TRUE(runUntil([&] { return b_->counters().timeouts == 1; }, milliseconds(3000)));
  const auto took = std::chrono::duration_cast<milliseconds>(Clock::now() - start).count();
  EXPECT_GE(took, 250);
  char c;
  EXPECT_EQ(::recv(fd, &c, 1, MSG_DONTWAIT), 0);  // B closed it
  ::close(fd);
  EXPECT_NE(statusB().last_error.find("timed out"), std::string::npos) << statusB().last_error;
  EXPECT_EQ(count(Event::kInstall), 0u);
}

// IPv6 lines, in a network namespace of the test's own (a thread of its own
// unshares it: sockets and `ip` commands of that thread live there, and it
// goes with the thread's process).  Root.
TEST_F(KeyAgreementTest, Ipv6LinesInAPrivateNamespace) {
  std::string failure;
  std::string listeners;
  KeyLineStatus sa, sb;
  std::vector<Event> events;
  std::thread t([&] {
    if (::unshare(CLONE_NEWNET) != 0) {
      failure = std::string("unshare(CLONE_NEWNET): ") + std::strerror(errno);
      return;
    }
    if (std::system("ip link set lo up && ip -6 addr add 2001:db8::1/128 dev lo nodad && "
                    "ip -6 addr add 2001:db8::2/128 dev lo nodad") != 0) {
      failure = "cannot set up lo in the private namespace";
      return;
    }
    auto loop = core::EventLoop::create();
    if (!loop) {
      failure = loop.error();
      return;
    }
    KeySink sink;
    std::vector<Event>* log = &events;
    sink.install_inbound = [log](const std::string& l, const SaMaterial& m) {
      log->push_back({'?', Event::kInstall, l, m, m.spi, {}, Clock::now()});
      return true;
    };
    sink.activate_outbound = [log](const std::string& l, const SaMaterial& m) {
      log->push_back({'?', Event::kActivate, l, m, m.spi, {}, Clock::now()});
      return true;
    };
    auto a = KeyAgreement::create(**loop, settings(files("gw-a")), sink);
    auto b = KeyAgreement::create(**loop, settings(files("gw-b")), sink);
    if (!a || !b) {
      failure = !a ? a.error() : b.error();
      return;
    }
    // Addresses differ in the last byte: A (::1) is the client.
    auto ra = (*a)->setLines({{"b/l6", "gw-b", ip("2001:db8::1"), ip("2001:db8::2")}});
    auto rb = (*b)->setLines({{"a/l6", "gw-a", ip("2001:db8::2"), ip("2001:db8::1")}});
    if (!ra || !rb) {
      failure = "setLines refused";
      return;
    }
    const auto end = Clock::now() + milliseconds(5000);
    while (Clock::now() < end && ((*a)->status("b/l6")->state != LineState::kEstablished ||
                                  (*b)->status("a/l6")->state != LineState::kEstablished)) {
      (*loop)->runOnce(std::chrono::microseconds(10000));
    }
    sa = *(*a)->status("b/l6");
    sb = *(*b)->status("a/l6");
    for (const auto& l : (*b)->listeners()) {
      listeners += l;
    }
  });
  t.join();
  ASSERT_EQ(failure, "");
  EXPECT_EQ(listeners, "[2001:db8::2]:" + std::to_string(port_));
  ASSERT_EQ(sa.state, LineState::kEstablished) << sa.last_error;
  ASSERT_EQ(sb.state, LineState::kEstablished) << sb.last_error;
  EXPECT_TRUE(sa.client);
  EXPECT_EQ(sa.outbound_spi, sb.inbound_spi);
  EXPECT_EQ(sb.outbound_spi, sa.inbound_spi);
  // A's outbound key is B's inbound key.
  const SaMaterial* a_out = nullptr;
  const SaMaterial* b_in = nullptr;
  for (const Event& e : events) {
    if (e.line == "b/l6" && e.kind == Event::kActivate) {
      a_out = &e.sa;
    }
    if (e.line == "a/l6" && e.kind == Event::kInstall) {
      b_in = &e.sa;
    }
  }
  ASSERT_TRUE(a_out && b_in);
  EXPECT_EQ(a_out->key, b_in->key);
  EXPECT_EQ(a_out->salt, b_in->salt);
}

TEST_F(KeyAgreementTest, ClientRestartKeepsTheGenerationGrowing) {
  startBoth(files("gw-a"), files("gw-b"));
  ASSERT_TRUE(runUntil([&] { return bothAtGeneration(1); }));
  ASSERT_TRUE(a_->rekey("b/l1"));
  ASSERT_TRUE(runUntil([&] { return bothAtGeneration(2); }));
  ASSERT_TRUE(runUntil([&] { return count(Event::kRetire) == 2; }));  // generation 1's
  const uint32_t b_inbound = statusB().inbound_spi;
  a_.reset();  // the client goes away, and comes back knowing nothing
  ASSERT_TRUE(runUntil([&] { return find('B', Event::kLost).has_value(); }));
  EXPECT_EQ(events_[*find('B', Event::kLost)].why, "the peer closed the connection");
  const size_t retired_before = count(Event::kRetire);
  const size_t mark = events_.size();
  a_ = make('A', settings(files("gw-a")));
  // A proposes generation 1; B answers 3, and A takes it.
  ASSERT_TRUE(runUntil([&] { return bothAtGeneration(3); })) << statusA().last_error;
  EXPECT_EQ(statusA().generation, 3u);
  // The new A installed only generation 3.
  for (size_t i = mark; i < events_.size(); ++i) {
    if (events_[i].side == 'A' && events_[i].kind == Event::kInstall) {
      EXPECT_EQ(events_[i].sa.generation, 3u);
    }
  }
  expectMatchingSas(3);
  ASSERT_TRUE(runUntil([&] { return count(Event::kRetire) == retired_before + 1; }));
  EXPECT_EQ(events_.back().side, 'B');
  EXPECT_EQ(events_.back().spi, b_inbound);
}

}  // namespace
}  // namespace mcgw::encryption
