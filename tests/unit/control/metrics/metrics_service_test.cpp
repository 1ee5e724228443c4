// The /metrics endpoint's hop from civetweb's threads to the control loop
// (control/metrics/metrics_service.hpp): collections run on the loop, wait
// while the gateway is paused for a reload, fall back to the previous one
// (counted) when the loop does not answer, and a service destroyed under a
// waiting scrape lets it go.  Real HTTP on loopback (curl).
#include "control/metrics/metrics_service.hpp"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <future>
#include <thread>

#include "control/metrics/metrics.hpp"

namespace mcgw::metrics {
namespace {

using namespace std::chrono_literals;

uint16_t freePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

std::string get(uint16_t port) {
  std::string out;
  const std::string cmd =
      "curl -sS --max-time 20 http://127.0.0.1:" + std::to_string(port) + "/metrics 2>&1";
  if (FILE* p = ::popen(cmd.c_str(), "r")) {
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) {
      out.append(buf, n);
    }
    ::pclose(p);
  }
  return out;
}

class MetricsServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto l = core::EventLoop::create();
    ASSERT_TRUE(l.ok());
    loop_ = std::move(*l);
    make(0ms);  // every scrape collects
  }
  // A new service on a new port; collections closer than min_interval shared.
  void make(std::chrono::milliseconds min_interval) {
    service_.reset();
    port_ = freePort();
    auto c = std::make_shared<config::Config>();
    c->metrics.listen = "127.0.0.1:" + std::to_string(port_);
    service_ = std::make_unique<MetricsService>(
        c,
        [this] {
          on_loop_ = std::this_thread::get_id() == loop_thread_;
          FamilyBuilder b;
          b.add("mcgw_config_generation", {}, ++collections_);
          return b.take();
        },
        min_interval);
    service_->attach(*loop_);
    ASSERT_TRUE(service_->facts().listening) << service_->facts().error;
  }

  std::future<std::string> scrape() {
    return std::async(std::launch::async, [p = port_] { return get(p); });
  }
  // Runs the loop until the scrape answers (or 10 s).
  std::string serve(std::future<std::string>& f) {
    const auto until = std::chrono::steady_clock::now() + 10s;
    while (f.wait_for(0s) != std::future_status::ready &&
           std::chrono::steady_clock::now() < until) {
      loop_->runOnce(10ms);
    }
    return f.wait_for(0s) == std::future_status::ready ? f.get() : "(no answer)";
  }
  void runFor(std::chrono::milliseconds d) {
    const auto until = std::chrono::steady_clock::now() + d;
    while (std::chrono::steady_clock::now() < until) {
      loop_->runOnce(10ms);
    }
  }

  std::unique_ptr<core::EventLoop> loop_;
  std::thread::id loop_thread_ = std::this_thread::get_id();
  uint16_t port_ = 0;
  std::unique_ptr<MetricsService> service_;
  std::atomic<int> collections_{0};
  std::atomic<bool> on_loop_{false};
};

TEST_F(MetricsServiceTest, CollectsOnTheLoop) {
  auto f = scrape();
  const std::string text = serve(f);
  EXPECT_NE(text.find("mcgw_config_generation 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("mcgw_metrics_stale_scrapes_total 0\n"), std::string::npos) << text;
  EXPECT_TRUE(on_loop_);
  auto later = scrape();
  EXPECT_NE(serve(later).find("mcgw_config_generation 2\n"), std::string::npos);
  EXPECT_EQ(service_->facts().scrapes, 2u);
}

TEST_F(MetricsServiceTest, SharesCloseCollections) {
  make(60s);
  auto f = scrape();
  ASSERT_NE(serve(f).find("mcgw_config_generation 1\n"), std::string::npos);
  // Within min_interval: the same collection, the loop not asked again.
  auto again = scrape();
  EXPECT_NE(serve(again).find("mcgw_config_generation 1\n"), std::string::npos);
  EXPECT_EQ(collections_, 1);
}

TEST_F(MetricsServiceTest, APausedGatewayAnswersAfterTheResume) {
  service_->setPaused(true);
  auto f = scrape();
  runFor(400ms);
  EXPECT_EQ(f.wait_for(0s), std::future_status::timeout) << "answered while paused";
  EXPECT_EQ(collections_, 0);
  service_->setPaused(false);
  const std::string text = serve(f);
  EXPECT_NE(text.find("mcgw_config_generation 1\n"), std::string::npos) << text;
}

TEST_F(MetricsServiceTest, ALoopThatDoesNotAnswerGivesThePreviousCollection) {
  auto first = scrape();
  ASSERT_NE(serve(first).find("mcgw_config_generation 1\n"), std::string::npos);
  // The loop does not run: after kCollectTimeout the previous figures come, counted.
  const auto t0 = std::chrono::steady_clock::now();
  const std::string stale = get(port_);
  EXPECT_GE(std::chrono::steady_clock::now() - t0, kCollectTimeout - 100ms);
  EXPECT_NE(stale.find("mcgw_config_generation 1\n"), std::string::npos) << stale;
  EXPECT_NE(stale.find("mcgw_metrics_stale_scrapes_total 1\n"), std::string::npos) << stale;
  EXPECT_EQ(service_->facts().stale_scrapes, 1u);
  runFor(100ms);  // the late request is served (and kept) once the loop runs
  EXPECT_EQ(collections_, 2);
}

TEST_F(MetricsServiceTest, DestroyedWhileAScrapeWaitsLetsItGo) {
  service_->setPaused(true);
  auto f = scrape();
  runFor(300ms);
  const auto t0 = std::chrono::steady_clock::now();
  service_.reset();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 3s);
  EXPECT_EQ(f.wait_for(5s), std::future_status::ready);
  runFor(50ms);  // the posted request finds the service gone
  EXPECT_EQ(collections_, 0);
}

TEST_F(MetricsServiceTest, AReloadMovingTheListenerDoesNotWaitForAPausedScrape) {
  service_->setPaused(true);  // the reload runs off the loop
  auto f = scrape();
  runFor(300ms);
  auto next = std::make_shared<config::Config>();
  const uint16_t port = freePort();
  next->metrics.listen = "127.0.0.1:" + std::to_string(port);
  daemon::ReloadPlan plan;
  plan.next = next;
  ASSERT_TRUE(service_->prepare(plan).ok());
  const auto t0 = std::chrono::steady_clock::now();
  service_->apply();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, kCollectTimeout - 1s)
      << "closing the old listener waited for its scrape";
  EXPECT_EQ(f.wait_for(5s), std::future_status::ready);
  EXPECT_EQ(service_->facts().listen, next->metrics.listen);
  service_->setPaused(false);
  port_ = port;
  auto fresh = scrape();
  EXPECT_NE(serve(fresh).find("mcgw_metrics_stale_scrapes_total 1\n"), std::string::npos)
      << "the new listener answers; the released scrape was counted stale";
}

}  // namespace
}  // namespace mcgw::metrics
