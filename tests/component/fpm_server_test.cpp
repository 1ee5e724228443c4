// The FPM server on a real event loop over TCP on loopback: a stream zebra
// sent (captured, tests/unit/control/fpm_frames) arrives in pieces and is
// decoded whole; a frame that does not decode is decoded message by message,
// the bad ones dropped and counted, while the stream goes on; a broken
// header closes the connection; a second connection is refused while zebra
// is connected.
#include "control/frr/fpm_server.hpp"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <iterator>

namespace mcgw::frr {
namespace {

std::vector<uint8_t> capture(const char* name) {
  std::ifstream in(std::string(MCGW_SOURCE_DIR) + "/tests/unit/control/fpm_frames/" + name,
                   std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

// Frames in a captured stream, counted by their headers.
size_t frames(const std::vector<uint8_t>& s) {
  size_t n = 0;
  for (size_t at = 0; at + 4 <= s.size(); ++n) {
    at += static_cast<size_t>(s[at + 2] << 8 | s[at + 3]);
  }
  return n;
}

int connectTo(uint16_t port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  return fd;
}

void sendAll(int fd, const uint8_t* p, size_t n) {
  while (n > 0) {
    ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
    ASSERT_GT(w, 0);
    p += w;
    n -= static_cast<size_t>(w);
  }
}

class FpmServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto loop = core::EventLoop::create();
    ASSERT_TRUE(loop.ok()) << loop.error();
    loop_ = std::move(*loop);
    server_ = std::make_unique<FpmServer>(FpmServer::Handlers{
        .connected = [this] { ++connected_; },
        .messages =
            [this](const std::vector<FpmMessage>& m) {
              messages_ += m.size();
              for (const auto& x : m) {
                routes_ += std::holds_alternative<FpmRoute>(x) ? 1 : 0;
              }
            },
        .disconnected = [this](const std::string& why) { why_.push_back(why); },
    });
    auto r = server_->listen(*config::IpAddress::parse("127.0.0.1"), 0);
    ASSERT_TRUE(r.ok()) << r.error();
    server_->attach(*loop_);
    ASSERT_NE(server_->port(), 0);
  }
  // Runs the loop until done() or 5 s.
  template <typename F>
  bool runUntil(F done) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (!done() && std::chrono::steady_clock::now() < deadline) {
      loop_->runOnce(std::chrono::milliseconds(20));
    }
    return done();
  }

  std::unique_ptr<core::EventLoop> loop_;
  std::unique_ptr<FpmServer> server_;
  int connected_ = 0;
  size_t messages_ = 0, routes_ = 0;
  std::vector<std::string> why_;
};

TEST_F(FpmServerTest, ACapturedStreamInPiecesIsDecodedWhole) {
  const auto stream = capture("routes.bin");
  ASSERT_GT(stream.size(), 100u);
  const size_t want_frames = frames(stream);
  int fd = connectTo(server_->port());
  ASSERT_TRUE(runUntil([&] { return connected_ == 1; }));
  // Odd-sized pieces: frames split across reads.
  for (size_t at = 0; at < stream.size(); at += 7) {
    sendAll(fd, stream.data() + at, std::min<size_t>(7, stream.size() - at));
  }
  ASSERT_TRUE(runUntil([&] { return server_->stats().frames == want_frames; }))
      << server_->stats().frames << " of " << want_frames;
  EXPECT_EQ(server_->stats().frames_refused, 0u);
  EXPECT_EQ(server_->stats().bytes, stream.size());
  EXPECT_EQ(messages_, server_->stats().messages);
  EXPECT_GE(routes_, want_frames);  // one route or more per frame (DEL+NEW pairs)
  EXPECT_TRUE(server_->stats().connected);
  ::close(fd);
  ASSERT_TRUE(runUntil([&] { return !why_.empty(); }));
  EXPECT_EQ(why_.front(), "zebra closed it");
  EXPECT_FALSE(server_->stats().connected);
}

TEST_F(FpmServerTest, AFrameThatDoesNotDecodeIsDroppedTheStreamGoesOn) {
  const auto stream = capture("routes.bin");
  int fd = connectTo(server_->port());
  // A well-framed frame whose netlink message is cut short (nlmsg_len 64 in 20 bytes).
  const uint8_t bad[] = {1, 1, 0, 20, 64, 0, 0, 0, 24, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  sendAll(fd, bad, sizeof bad);
  sendAll(fd, stream.data(), stream.size());
  ASSERT_TRUE(runUntil([&] { return server_->stats().frames == frames(stream) + 1; }));
  EXPECT_EQ(server_->stats().frames_refused, 1u);
  EXPECT_EQ(server_->stats().messages_refused, 1u);
  EXPECT_FALSE(server_->stats().last_error.empty());
  EXPECT_TRUE(why_.empty());
  ::close(fd);
}

TEST_F(FpmServerTest, ABrokenHeaderClosesTheConnection) {
  int fd = connectTo(server_->port());
  const uint8_t v2[] = {2, 1, 0, 4};  // FPM version 2
  sendAll(fd, v2, sizeof v2);
  ASSERT_TRUE(runUntil([&] { return !why_.empty(); }));
  EXPECT_EQ(why_.front().rfind("framing lost", 0), 0u) << why_.front();
  EXPECT_FALSE(server_->stats().connected);
  EXPECT_EQ(server_->stats().frames, 0u);
  ::close(fd);
}

TEST_F(FpmServerTest, ASecondConnectionIsRefusedWhileZebraIsConnected) {
  int a = connectTo(server_->port());
  ASSERT_TRUE(runUntil([&] { return connected_ == 1; }));
  int b = connectTo(server_->port());
  ASSERT_TRUE(runUntil([&] { return server_->stats().connections_refused == 1; }));
  // The second one reads end of stream; the first stays.
  char c;
  EXPECT_EQ(recv(b, &c, 1, 0), 0);
  EXPECT_EQ(connected_, 1);
  EXPECT_TRUE(why_.empty());
  EXPECT_TRUE(server_->stats().connected);
  EXPECT_EQ(server_->stats().connections, 1u);
  // zebra goes (its end closes): the next connection is taken.
  ::close(a);
  ASSERT_TRUE(runUntil([&] { return !why_.empty(); }));
  int d = connectTo(server_->port());
  ASSERT_TRUE(runUntil([&] { return connected_ == 2; }));
  ::close(b);
  ::close(d);
}

}  // namespace
}  // namespace mcgw::frr
