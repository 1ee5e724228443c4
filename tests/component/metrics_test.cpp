// mcgwd's /metrics endpoint for real (net_null vdevs, loopback): the scrape
// passes `promtool check metrics`, carries every counter `show counters`
// has with the same values, follows reloads of metrics.listen, and a
// listener that cannot open degrades the gateway without stopping it.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <regex>
#include <thread>

#include "dataplane/engine/counters.hpp"
#include "dataplane/engine/drop_reason.hpp"
#include "tests/support/daemon.hpp"

namespace mcgw::test {
namespace {

using nlohmann::json;

// A TCP socket bound to 127.0.0.1 on a free port (held: the port stays taken
// until the socket is closed).
struct BoundPort {
  int fd = -1;
  uint16_t port = 0;
  BoundPort() {
    fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);  // not inherited by mcgwd
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
      port = ntohs(a.sin_port);
    }
    ::listen(fd, 1);
  }
  ~BoundPort() { close(); }
  void close() {
    if (fd >= 0) {
      ::close(fd);
      fd = -1;
    }
  }
};

// A port free now (mcgwd binds it a moment later).
uint16_t freePort() {
  BoundPort p;
  return p.port;
}

std::string metricsConfig(uint16_t port) {
  return "metrics:\n  listen: 127.0.0.1:" + std::to_string(port) + "\n";
}

class MetricsTest : public DaemonTest {
 protected:
  // Collections less than kMinInterval apart are shared: waits past it.
  CommandResult scrape(uint16_t port) {
    std::this_thread::sleep_for(std::chrono::milliseconds(550));
    return run("curl -sS --max-time 10 http://127.0.0.1:" + std::to_string(port) + "/metrics");
  }
  // The sample's value, or -1 when the scrape lacks it.  `series` is the
  // name with its labels as the exposition writes them.
  static double value(const std::string& text, const std::string& series) {
    size_t at = 0;
    while ((at = text.find(series + " ", at)) != std::string::npos) {
      if (at == 0 || text[at - 1] == '\n') {
        return std::stod(text.substr(at + series.size() + 1));
      }
      at += series.size();
    }
    return -1;
  }
};

TEST_F(MetricsTest, ScrapePassesPromtoolAndCarriesEveryCounter) {
  const uint16_t port = freePort();
  writeFile(config_, nullConfig(socket_, prefix_, metricsConfig(port)));
  start();
  CommandResult r = scrape(port);
  ASSERT_EQ(r.code, 0) << r.err << log();
  const std::string text = r.out;
  // Prometheus's own linter over the live exposition.
  writeFile(dir_.file("scrape.txt"), text);
  CommandResult lint = run("promtool check metrics < " + dir_.file("scrape.txt"));
  EXPECT_EQ(lint.code, 0) << lint.out << lint.err;

  EXPECT_EQ(value(text, "mcgw_build_info{version=\"" MCGW_VERSION "\"}"), 1) << text;
  EXPECT_EQ(value(text, "mcgw_health_degraded"), 0);
  EXPECT_EQ(value(text, "mcgw_config_generation"), 1);
  EXPECT_EQ(value(text, "mcgw_config_file_differs"), 0);
  EXPECT_EQ(value(text, "mcgw_config_reloads_total{result=\"ok\"}"), 0);
  // Every drop reason and event counter, from the same lists as show counters.
  for (const auto& d : engine::kDropReasons) {
    EXPECT_GE(value(text, "mcgw_drops_total{reason=\"" + std::string(d.name) + "\"}"), 0) << d.name;
  }
#define MCGW_EXPECT_EVENT(name, group, key, ...) \
  EXPECT_GE(value(text, std::string("mcgw_") + group + "_" + key + "_total"), 0) << #name;
  MCGW_EVENT_COUNTERS(MCGW_EXPECT_EVENT)
#undef MCGW_EXPECT_EVENT
  EXPECT_EQ(value(text, "mcgw_port_up{port=\"lan0\",role=\"lan\"}"), 1);
  EXPECT_EQ(value(text, "mcgw_port_up{port=\"wan0\",role=\"wan\"}"), 1);
  EXPECT_GE(value(text, "mcgw_port_rx_missed_packets_total{port=\"wan0\",role=\"wan\"}"), 0);
  EXPECT_EQ(value(text, "mcgw_worker_state{worker=\"0\",lcore=\"-1\",state=\"stopped\"}"), 0)
      << text;

  // The same figures as show counters: net_null's RX never stops, so the
  // workers' packets only grow between the two reads.
  json c = json::parse(ctl("show counters --json").out);
  const double scraped = value(text, "mcgw_lan_packets_total{direction=\"rx\"}");
  const double later = c["lan"]["rx_packets"].get<double>();
  EXPECT_GE(scraped, 0);
  EXPECT_LE(scraped, later);
  // Status says where the endpoint is and counts the scrape.
  json s = status();
  EXPECT_EQ(s["metrics"]["listen"], "127.0.0.1:" + std::to_string(port));
  EXPECT_EQ(s["metrics"]["listening"], true);
  EXPECT_GE(s["metrics"]["scrapes"].get<int>(), 1);
}

TEST_F(MetricsTest, ReloadMovesTurnsOffAndRefusesABusyPort) {
  const uint16_t first = freePort();
  writeFile(config_, nullConfig(socket_, prefix_, metricsConfig(first)));
  start();
  ASSERT_EQ(scrape(first).code, 0) << log();

  // A port another process holds: the reload is refused, the old listener stays.
  BoundPort busy;
  writeFile(config_, nullConfig(socket_, prefix_, metricsConfig(busy.port)));
  CommandResult r = ctl("reload");
  EXPECT_NE(r.code, 0) << r.out;
  EXPECT_NE(
      (r.out + r.err).find("metrics: cannot listen on 127.0.0.1:" + std::to_string(busy.port)),
      std::string::npos)
      << r.out << r.err;
  const std::string refused = scrape(first).out;
  EXPECT_EQ(value(refused, "mcgw_config_reloads_total{result=\"failed\"}"), 1) << refused;
  EXPECT_EQ(value(refused, "mcgw_config_last_reload_success"), 0);
  EXPECT_EQ(value(refused, "mcgw_config_file_differs"), 1) << "the file holds the refused config";

  // A free port: moved.
  const uint16_t second = freePort();
  writeFile(config_, nullConfig(socket_, prefix_, metricsConfig(second)));
  r = ctl("reload");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(scrape(first).code, 0) << "the old listener is closed";
  const std::string moved = scrape(second).out;
  EXPECT_EQ(value(moved, "mcgw_config_generation"), 2) << moved;
  EXPECT_EQ(value(moved, "mcgw_config_last_reload_success"), 1);
  EXPECT_EQ(value(moved, "mcgw_config_file_differs"), 0);

  // Edited, not reloaded.
  writeFile(config_, nullConfig(socket_, prefix_, metricsConfig(second)) + "# edited\n");
  EXPECT_EQ(value(scrape(second).out, "mcgw_config_file_differs"), 1);

  // No metrics section: off.
  writeFile(config_, nullConfig(socket_, prefix_));
  r = ctl("reload");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(scrape(second).code, 0);
  json s = status();
  EXPECT_TRUE(s["metrics"]["listen"].is_null());
  EXPECT_EQ(s["metrics"]["listening"], false);
  EXPECT_EQ(s["health"]["state"], "healthy");
}

TEST_F(MetricsTest, ABusyPortAtStartDegradesButDoesNotStop) {
  BoundPort busy;
  writeFile(config_, nullConfig(socket_, prefix_, metricsConfig(busy.port)));
  start();
  json s = status();
  EXPECT_EQ(s["health"]["state"], "degraded");
  EXPECT_EQ(s["metrics"]["listening"], false);
  const std::string reasons = s["health"]["reasons"].dump();
  EXPECT_NE(reasons.find("metrics: cannot listen on 127.0.0.1:" + std::to_string(busy.port)),
            std::string::npos)
      << reasons;
  // Still taken: a reload goes through (without metrics, still degraded).
  CommandResult still = ctl("reload");
  EXPECT_EQ(still.code, 0) << still.out << still.err;
  EXPECT_EQ(status()["health"]["state"], "degraded");
  // Freed: the next reload (same file) opens it.
  busy.close();
  CommandResult r = ctl("reload");
  EXPECT_EQ(r.code, 0) << r.out << r.err << log();
  EXPECT_EQ(status()["health"]["state"], "healthy");
  EXPECT_EQ(scrape(busy.port).code, 0);
}

TEST_F(MetricsTest, BadListenAddressesAreConfigErrors) {
  for (const std::string bad : {"127.0.0.1", "127.0.0.1:0", "127.0.0.1:70000", "[::1:9469",
                                "::1:9469", "[127.0.0.1]:9469", "localhost:9469"}) {
    writeFile(config_, nullConfig(socket_, prefix_, "metrics:\n  listen: \"" + bad + "\"\n"));
    CommandResult r = run(kMcgwctl + " check-config " + config_);
    EXPECT_NE(r.code, 0) << bad;
    EXPECT_NE((r.out + r.err).find("metrics"), std::string::npos) << bad << ": " << r.out << r.err;
  }
  writeFile(config_, nullConfig(socket_, prefix_, "metrics:\n  listen: \"[::1]:9469\"\n"));
  CommandResult r = run(kMcgwctl + " check-config " + config_);
  EXPECT_EQ(r.code, 0) << r.out << r.err;
}

}  // namespace
}  // namespace mcgw::test
