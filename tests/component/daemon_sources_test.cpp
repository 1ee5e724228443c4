// The gateway's subsystems keep their own sources on mcgwd's control loop:
// path MTU discovery's probe socket answers a peer's probe, and still does
// after a reload (SIGHUP or `mcgwctl reload`) replaced it with one on another
// port.  UnderlayLines drops its socket sources while the reload runs off
// the loop and registers the new sockets when it resumes; without that, the
// new socket would never be read and the probe would go unanswered.  mcgwd
// runs in a network namespace of the test's own, where the line's two VTEP
// addresses are local.
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <arpa/inet.h>

#include <cstdlib>
#include <optional>

#include "control/pmtu/probe_codec.hpp"
#include "tests/support/daemon.hpp"
#include "tests/support/netns.hpp"

namespace mcgw::test {
namespace {

constexpr const char* kLocalVtep = "10.77.0.1";
constexpr const char* kRemoteVtep = "10.77.0.2";

class DaemonSourcesTest : public DaemonTest {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) {
      GTEST_SKIP() << "needs root (a network namespace, mcgwd's kernel sides)";
    }
    DaemonTest::SetUp();
    ASSERT_TRUE(netns_.ok());
    // Both VTEPs on lo: the test speaks as the remote VTEP, mcgwd's probe
    // socket is bound to the local one.
    ASSERT_EQ(std::system("ip link set lo up && ip addr add 10.77.0.1/32 dev lo && "
                          "ip addr add 10.77.0.2/32 dev lo"),
              0);
  }
  void TearDown() override { daemon_.reset(); }

  std::string config(uint16_t probe_port) const {
    std::string text =
        nullConfig(socket_, prefix_,
                   "peers:\n  - name: b\n    lines:\n      - name: line1\n        port: wan0\n"
                   "        local-vtep: 10.77.0.1\n        remote-vtep: 10.77.0.2\n"
                   "path-mtu:\n  probe-port: " +
                       std::to_string(probe_port) + "\n");
    const std::string wan = "vdev: net_null1\n";
    text.insert(text.find(wan) + wan.size(), "    addresses: [10.77.0.1/24]\n");
    return text;
  }

  // Sends a probe request from the remote VTEP to mcgwd's probe port;
  // the reply's nonce, or nullopt when none came within a second.
  std::optional<uint64_t> probe(uint16_t port, uint64_t nonce) {
    const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    EXPECT_GE(fd, 0);
    sockaddr_in from{};
    from.sin_family = AF_INET;
    ::inet_pton(AF_INET, kRemoteVtep, &from.sin_addr);
    EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&from), sizeof from), 0);
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_port = htons(port);
    ::inet_pton(AF_INET, kLocalVtep, &to.sin_addr);
    const auto request =
        pmtu::encodeProbe({false, nonce, 600, 0}, pmtu::probePayloadLength(false, 600));
    std::optional<uint64_t> answer;
    if (::sendto(fd, request.data(), request.size(), 0, reinterpret_cast<sockaddr*>(&to),
                 sizeof to) == static_cast<ssize_t>(request.size())) {
      pollfd p{fd, POLLIN, 0};
      std::array<std::byte, 2048> buf;
      if (::poll(&p, 1, 1000) == 1) {
        const ssize_t n = ::recv(fd, buf.data(), buf.size(), 0);
        if (n > 0) {
          if (auto m = pmtu::decodeProbe(proto::Bytes(buf.data(), static_cast<size_t>(n)));
              m && m->reply) {
            answer = m->nonce;
          }
        }
      }
    }
    ::close(fd);
    return answer;
  }

  PrivateNetns netns_;
};

TEST_F(DaemonSourcesTest, ProbeSocketIsWatchedAcrossReloads) {
  writeFile(config_, config(47001));
  start();
  EXPECT_EQ(probe(47001, 11), std::optional<uint64_t>(11)) << log();

  // SIGHUP: the probe socket moves to another port.
  writeFile(config_, config(47002));
  hangup();
  EXPECT_EQ(probe(47002, 12), std::optional<uint64_t>(12)) << log();
  EXPECT_EQ(probe(47001, 13), std::nullopt);  // the old socket is closed

  // `mcgwctl reload`: again.
  writeFile(config_, config(47003));
  CommandResult r = ctl("reload");
  ASSERT_EQ(r.code, 0) << r.err << log();
  EXPECT_EQ(probe(47003, 14), std::optional<uint64_t>(14)) << log();
}

}  // namespace
}  // namespace mcgw::test
