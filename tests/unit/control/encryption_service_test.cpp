// EncryptionService with static keys (docs/encryption.md, "Static keys"):
// the sequence numbers an outbound SA may use are reserved on disk before
// use, a restart goes on above them, the reservation is renewed as they are
// used, a reservation that cannot be read stops the start, inbound SPIs are
// unique across key files, a reload with the same keys keeps the SAs.
#include "control/encryption/encryption_service.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "config/loader.hpp"
#include "control/daemon/reload_plan.hpp"

namespace mcgw::encryption {
namespace {

namespace fs = std::filesystem;

const std::string kKeyOut =
    "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1fcafebabe";
const std::string kKeyIn =
    "a0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3b4b5b6b7b8b9babbbcbdbebfdeadbeef";
constexpr uint64_t kBlock = uint64_t{1} << 24;

class EncryptionServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/mcgw-encsvc-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    state_ = (dir_ / "state").string();
    writeKeys("b.keys", 0x1001, 0x2001);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  void writeKeys(const std::string& name, uint32_t out_spi, uint32_t in_spi,
                 const std::string& out_key = kKeyOut) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path) << "line1 out " << out_spi << " " << out_key << "\n"
                        << "line1 in " << in_spi << " " << kKeyIn << "\n";
    ASSERT_EQ(::chmod(path.c_str(), 0600), 0);
  }

  // One peer (site-b) with one line, keys from `keys`; a second peer with
  // its own file when `second` names one.
  config::ConfigPtr config(const std::string& keys = "b.keys", const std::string& second = "",
                           unsigned window = 1024) {
    std::string text =
        "node: {name: gw-a, site: site-a}\n"
        "eal: {hugepages: false}\n"
        "ports:\n"
        "  - {name: lan0, role: lan, vdev: net_null0, addresses: [10.1.0.1/24], tenant: t}\n"
        "  - {name: wan0, role: wan, vdev: net_null1, addresses: [192.0.2.1/24]}\n"
        "tenants:\n"
        "  - name: t\n"
        "    vni: 100\n"
        "    routes: [{prefix: 10.2.0.0/24, peer: site-b}]\n"
        "peers:\n"
        "  - name: site-b\n"
        "    encryption: {mode: esp-aes-256-gcm, replay-window: " +
        std::to_string(window) + ", static-keys: " + (dir_ / keys).string() +
        "}\n"
        "    lines: [{name: line1, port: wan0, local-vtep: 192.0.2.1, remote-vtep: 192.0.2.2}]\n";
    if (!second.empty()) {
      text +=
          "  - name: site-c\n"
          "    encryption: {mode: esp-aes-256-gcm, static-keys: " +
          (dir_ / second).string() +
          "}\n"
          "    lines: [{name: line1, port: wan0, local-vtep: 192.0.2.1, remote-vtep: "
          "192.0.2.3}]\n";
    }
    auto c = config::loadConfigText(text, "encryption_service_test.yaml");
    EXPECT_TRUE(c.ok()) << (c.ok() ? "" : c.error().front().toString());
    return c.ok() ? *c : nullptr;
  }

  std::unique_ptr<EncryptionService> service(config::ConfigPtr c) {
    return std::make_unique<EncryptionService>(std::move(c), 1, state_, [this] {
      ++published_;
      return true;
    });
  }

  static std::shared_ptr<engine::EspSa> outbound(const EncryptionService& s) {
    auto sas = s.sas();
    auto it = sas.find("site-b/line1");
    return it == sas.end() ? nullptr : it->second.outbound;
  }

  // The one reservation file in the state directory.
  std::string reservation() const {
    std::string found;
    for (const auto& e : fs::directory_iterator(state_)) {
      if (e.path().filename().string().rfind("esp-seq-", 0) == 0) {
        EXPECT_TRUE(found.empty()) << "two reservation files";
        found = e.path().string();
      }
    }
    return found;
  }

  fs::path dir_;
  std::string state_;
  int published_ = 0;
};

TEST_F(EncryptionServiceTest, ARestartGoesOnAboveTheReservation) {
  auto s1 = service(config());
  ASSERT_TRUE(s1->start());
  auto sa = outbound(*s1);
  ASSERT_NE(sa, nullptr);
  EXPECT_EQ(sa->lastSeq(), 0u);
  EXPECT_EQ(sa->seqLimit(), kBlock);
  const std::string file = reservation();
  ASSERT_FALSE(file.empty());
  struct stat st {};
  ASSERT_EQ(::stat(file.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  std::string text;
  std::getline(std::ifstream(file), text);
  EXPECT_EQ(text, std::to_string(kBlock));
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(sa->nextSeq(), uint64_t(i + 1));
  }
  s1.reset();

  // The next start uses nothing below the first one's reservation.
  auto s2 = service(config());
  ASSERT_TRUE(s2->start());
  sa = outbound(*s2);
  ASSERT_NE(sa, nullptr);
  EXPECT_EQ(sa->nextSeq(), kBlock + 1);
  EXPECT_EQ(sa->seqLimit(), 2 * kBlock);
  std::getline(std::ifstream(file), text);
  EXPECT_EQ(text, std::to_string(2 * kBlock));
}

TEST_F(EncryptionServiceTest, TheSameKeyUnderAnotherSpiGoesOnFromTheSameReservation) {
  ASSERT_TRUE(service(config())->start());
  writeKeys("b.keys", 0x1002, 0x2001);  // new SPI, same key and salt
  auto s = service(config());
  ASSERT_TRUE(s->start());
  ASSERT_NE(outbound(*s), nullptr);
  EXPECT_EQ(outbound(*s)->spi(), 0x1002u);
  EXPECT_EQ(outbound(*s)->nextSeq(), kBlock + 1);
  // Another key: its own file, from 1.
  writeKeys("b.keys", 0x1002, 0x2001, kKeyIn.substr(0, 8) + kKeyOut.substr(8));
  auto t = service(config());
  ASSERT_TRUE(t->start());
  EXPECT_EQ(outbound(*t)->nextSeq(), 1u);
}

TEST_F(EncryptionServiceTest, AReservationThatCannotBeReadStopsTheStart) {
  ASSERT_TRUE(service(config())->start());
  const std::string file = reservation();
  for (const std::string bad : {"", "garbage\n", "12x\n", "-5\n"}) {
    std::ofstream(file, std::ios::trunc) << bad;
    auto s = service(config());
    auto r = s->start();
    ASSERT_FALSE(r) << "content \"" << bad << "\"";
    EXPECT_NE(r.error().find("cannot be read"), std::string::npos) << r.error();
    EXPECT_EQ(outbound(*s), nullptr);
  }
}

TEST_F(EncryptionServiceTest, TheReservationIsRenewedAsNumbersAreUsed) {
  auto loop = core::EventLoop::create();
  ASSERT_TRUE(loop) << loop.error();
  auto s = service(config());
  ASSERT_TRUE(s->start());
  s->attach(**loop);
  auto sa = outbound(*s);
  ASSERT_NE(sa, nullptr);
  sa->startSeqAfter(kBlock / 2 + 10);  // as if that many had been sent
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (sa->seqLimit() == kBlock && std::chrono::steady_clock::now() < end) {
    (*loop)->runOnce(std::chrono::microseconds(50000));
  }
  EXPECT_EQ(sa->seqLimit(), 2 * kBlock) << "a block more, from the end of the reservation";
  std::string text;
  std::getline(std::ifstream(reservation()), text);
  EXPECT_EQ(text, std::to_string(2 * kBlock));
  // Past the limit nothing is handed out ...
  sa->startSeqAfter(2 * kBlock);
  EXPECT_EQ(sa->nextSeq(), 0u);
  EXPECT_EQ(sa->nextSeq(), 0u);
  // ... and none is taken.
  const uint64_t taken = sa->lastSeq();
  EXPECT_EQ(taken, 2 * kBlock);
  const auto end2 = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (sa->seqLimit() == 2 * kBlock && std::chrono::steady_clock::now() < end2) {
    (*loop)->runOnce(std::chrono::microseconds(50000));
  }
  EXPECT_EQ(sa->seqLimit(), taken + kBlock);
  EXPECT_EQ(sa->nextSeq(), taken + 1);
}

// c.keys for site-c: its own keys unless told otherwise.
const std::string kKeyC1 =
    "c0c1c2c3c4c5c6c7c8c9cacbcccdcecfd0d1d2d3d4d5d6d7d8d9dadbdcdddedf01020304";
const std::string kKeyC2 =
    "e0e1e2e3e4e5e6e7e8e9eaebecedeeeff0f1f2f3f4f5f6f7f8f9fafbfcfdfeff05060708";

TEST_F(EncryptionServiceTest, InboundSpisMustDifferAcrossKeyFiles) {
  const std::string c = (dir_ / "c.keys").string();
  std::ofstream(c) << "line1 out 0x3001 " << kKeyC1 << "\nline1 in 0x2001 " << kKeyC2 << "\n";
  ASSERT_EQ(::chmod(c.c_str(), 0600), 0);
  auto s = service(config());
  const auto errors = s->validate(*config("b.keys", "c.keys"));
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].find("inbound SPI 0x00002001 is also peer site-b line line1's"),
            std::string::npos)
      << errors[0];
  // A start is refused the same way.
  auto r = service(config("b.keys", "c.keys"))->start();
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().find("inbound SPI 0x00002001"), std::string::npos) << r.error();
  std::ofstream(c, std::ios::trunc)
      << "line1 out 0x3001 " << kKeyC1 << "\nline1 in 0x4001 " << kKeyC2 << "\n";
  EXPECT_TRUE(s->validate(*config("b.keys", "c.keys")).empty());
  EXPECT_TRUE(service(config("b.keys", "c.keys"))->start());
}

TEST_F(EncryptionServiceTest, AKeyUsedByTwoSasIsRefused) {
  // site-c's outbound key is site-b's outbound key: both SAs would count
  // their sequence numbers (the GCM nonces) from 1 under it.
  const std::string c = (dir_ / "c.keys").string();
  std::ofstream(c) << "line1 out 0x3001 " << kKeyOut << "\nline1 in 0x4001 " << kKeyC2 << "\n";
  ASSERT_EQ(::chmod(c.c_str(), 0600), 0);
  auto s = service(config());
  const auto errors = s->validate(*config("b.keys", "c.keys"));
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].find("peer site-c line line1: the key of its out SA is also peer site-b "
                           "line line1 (out)'s"),
            std::string::npos)
      << errors[0];
  auto r = service(config("b.keys", "c.keys"))->start();
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().find("every SA needs its own key"), std::string::npos) << r.error();
  // The same key in the other direction too.
  std::ofstream(c, std::ios::trunc)
      << "line1 out 0x3001 " << kKeyC1 << "\nline1 in 0x4001 " << kKeyOut << "\n";
  EXPECT_EQ(s->validate(*config("b.keys", "c.keys")).size(), 1u);
}

TEST_F(EncryptionServiceTest, AReloadCannotGiveAKeyInUseAnotherSpi) {
  auto c = config();
  auto s = service(c);
  ASSERT_TRUE(s->start());
  writeKeys("b.keys", 0x1009, 0x2001);  // the same outbound key, another SPI
  auto next = config();
  daemon::ReloadPlan plan = daemon::planReload(*c, *next);
  plan.next = next;
  auto r = s->prepare(plan);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().find("needs a restart"), std::string::npos) << r.error();
  s->abort();
  EXPECT_EQ(outbound(*s)->spi(), 0x1001u);
}

TEST_F(EncryptionServiceTest, AReloadWithTheSameKeysKeepsTheSas) {
  auto c = config();
  auto s = service(c);
  ASSERT_TRUE(s->start());
  auto out = outbound(*s);
  auto in = s->sas().at("site-b/line1").inbound.at(0);
  ASSERT_TRUE(in->window()->check(7));
  ASSERT_TRUE(in->window()->update(7));
  for (unsigned window : {1024u, 4096u}) {  // a new window size too
    auto next = config("b.keys", "", window);
    daemon::ReloadPlan plan = daemon::planReload(*c, *next);
    plan.next = next;
    ASSERT_TRUE(s->prepare(plan));
    s->apply();
    EXPECT_EQ(outbound(*s), out) << window;
    EXPECT_EQ(s->sas().at("site-b/line1").inbound.at(0), in) << window;
    EXPECT_FALSE(in->window()->check(7)) << "the window goes on: 7 is a replay";
    c = next;
  }
}

}  // namespace
}  // namespace mcgw::encryption
