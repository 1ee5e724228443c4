// Flow audit in a running mcgwd (net_null ports, so no flows): the IPFIX
// templates reach a collector on loopback at start, again every
// template-refresh and at once for a collector a reload adds; a reload
// turns sampling off and on; status --json and the status text show it.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <set>
#include <string>
#include <vector>

#include "tests/support/daemon.hpp"

namespace mcgw::test {
namespace {

using nlohmann::json;

uint16_t be16(const uint8_t* p) {
  return static_cast<uint16_t>(p[0] << 8 | p[1]);
}

// A UDP socket on a loopback address that counts the IPFIX template sets it gets.
struct Collector {
  int fd = -1;
  uint16_t port = 0;
  std::string address;
  explicit Collector(const char* addr) : address(addr) {
    fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    ::inet_pton(AF_INET, addr, &a.sin_addr);
    EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    socklen_t len = sizeof a;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    port = ntohs(a.sin_port);
  }
  ~Collector() { ::close(fd); }
  // When each message carrying templates 256 and 257 arrived (all of them
  // so far, this call's within `wait`).
  std::vector<std::chrono::steady_clock::time_point> arrivals;
  // Messages carrying templates 256 and 257 received within `wait`.
  int templateMessages(std::chrono::milliseconds wait) {
    int n = 0;
    pollfd p{fd, POLLIN, 0};
    const auto end = std::chrono::steady_clock::now() + wait;
    while (true) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          end - std::chrono::steady_clock::now());
      if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) != 1) {
        return n;
      }
      uint8_t m[65536];
      const ssize_t len = ::recv(fd, m, sizeof m, 0);
      if (len < 20 || be16(m) != 10 || be16(m + 2) != len) {
        ADD_FAILURE() << "not an IPFIX message (" << len << " bytes)";
        continue;
      }
      std::set<uint16_t> ids;
      for (size_t at = 16; at + 8 <= static_cast<size_t>(len);) {
        const uint16_t set = be16(m + at), set_len = be16(m + at + 2);
        if (set == 2) {
          for (size_t t = at + 4; t + 4 <= at + set_len;) {
            ids.insert(be16(m + t));
            t += 4 + 4u * be16(m + t + 2);
          }
        }
        if (set_len < 4) {
          break;
        }
        at += set_len;
      }
      if (ids == std::set<uint16_t>{256, 257}) {
        ++n;
        arrivals.push_back(std::chrono::steady_clock::now());
      }
    }
  }
};

std::string flowAudit(unsigned sampling, const std::vector<const Collector*>& collectors,
                      unsigned refresh) {
  std::string s = "flow-audit:\n  sampling: " + std::to_string(sampling) + "\n  collectors:\n";
  for (const Collector* c : collectors) {
    s += "    - address: " + c->address + "\n      port: " + std::to_string(c->port) + "\n";
  }
  return s + "  template-refresh: " + std::to_string(refresh) + "\n";
}

class FlowAuditDaemonTest : public DaemonTest {};

TEST_F(FlowAuditDaemonTest, TemplatesAtStartRefreshAndForANewCollector) {
  Collector one("127.0.0.1"), two("127.0.0.2");
  writeFile(config_, nullConfig(socket_, prefix_, flowAudit(100, {&one}, 2)));
  start();
  EXPECT_EQ(one.templateMessages(std::chrono::milliseconds(500)), 1) << "the templates at start";
  json f = status()["flow_audit"];
  EXPECT_EQ(f["enabled"], true) << f.dump();
  EXPECT_EQ(f["sampling"], 100);
  EXPECT_EQ(f["template_refresh_s"], 2);
  ASSERT_EQ(f["collectors"].size(), 1u);
  EXPECT_EQ(f["collectors"][0]["port"], one.port);
  EXPECT_EQ(f["export_errors"], 0);
  EXPECT_EQ(f["flows_max"], 65536);
  EXPECT_EQ(f["samples"], 0);
  CommandResult r = ctl("status");
  EXPECT_NE(r.out.find("Flows    IPFIX 1-in-100 to 1 collector(s): 0 flows"), std::string::npos)
      << r.out;
  // Every template-refresh (2 s): two more within 4.5 s.  The timer runs
  // every 5 ms on a shared machine: 2 or 3, their gaps checked below.
  const int refreshes = one.templateMessages(std::chrono::milliseconds(4500));
  EXPECT_GE(refreshes, 2);
  EXPECT_LE(refreshes, 3);

  // A reload that adds a collector: it gets the templates at once; the
  // first keeps its exporter (no templates beyond its refresh).
  writeFile(config_, nullConfig(socket_, prefix_, flowAudit(10, {&one, &two}, 3600)));
  hangup();
  EXPECT_EQ(two.templateMessages(std::chrono::milliseconds(500)), 1);
  one.templateMessages(std::chrono::milliseconds(200));
  f = status()["flow_audit"];
  EXPECT_EQ(f["sampling"], 10) << log();
  ASSERT_EQ(f["collectors"].size(), 2u);
  // Every template message the first collector got is one the exporter
  // counted, and each came a refresh after the one before (1.5 to 3 s):
  // none was sent again for the reload.
  EXPECT_EQ(f["collectors"][0]["template_sends"], one.arrivals.size());
  for (size_t i = 1; i < one.arrivals.size(); ++i) {
    const auto gap = std::chrono::duration_cast<std::chrono::milliseconds>(one.arrivals[i] -
                                                                           one.arrivals[i - 1]);
    EXPECT_GE(gap.count(), 1500) << "template message " << i;
    EXPECT_LE(gap.count(), 3000) << "template message " << i;
  }
  EXPECT_EQ(f["collectors"][1]["template_sends"], 1);
  EXPECT_NE(log().find("reload: flow-audit: changed (1-in-100 to 127.0.0.1:"), std::string::npos)
      << log();

  // Off by reload: no more templates, status says so.
  writeFile(config_, nullConfig(socket_, prefix_));
  hangup();
  f = status()["flow_audit"];
  EXPECT_EQ(f["enabled"], false);
  r = ctl("status");
  EXPECT_NE(r.out.find("Flows    flow audit off"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace mcgw::test
