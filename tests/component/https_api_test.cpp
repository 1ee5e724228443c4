// The controller API over HTTPS with mutual TLS (control/api/https_api.hpp)
// for real: certificates made by the openssl command line (a CA, a server
// certificate, allowed and refused clients, a client of another CA), the
// server on 127.0.0.1 and a free port, and httplib's SSLClient as the
// controller.  The handler is a recording stand-in (mcgwd's is
// daemon::handleRequest on its loop); viaLoop runs on a real EventLoop.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <httplib.h>
#include <spdlog/sinks/ringbuffer_sink.h>
#include <spdlog/spdlog.h>

#include "control/api/https_api.hpp"
#include "control/core/event_loop.hpp"

namespace mcgw::api {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using namespace std::chrono_literals;

struct Call {
  std::string command;
  json args;
  std::string client;
};

// What the fake handler saw; it answers like handleRequest, throws for
// "show-counters", is busy for "show-tunnels" and refuses a policy-set
// without "tenant".
class Recorder {
 public:
  HttpsApi::Handler handler() {
    return [this](const std::string& command, const json& args, const std::string& client) {
      {
        std::lock_guard lock(mutex_);
        calls_.push_back({command, args, client});
      }
      if (command == "show-counters") {
        throw std::runtime_error("counters exploded");
      }
      if (command == "show-tunnels") {
        throw Busy("a reload is under way");
      }
      if (command == "policy-set" && !args.contains("tenant")) {
        return json{{"ok", false}, {"error", {{"message", "policy-set: no tenant"}}}};
      }
      return json{{"ok", true}, {"result", {{"command", command}}}};
    };
  }
  std::vector<Call> calls() {
    std::lock_guard lock(mutex_);
    return calls_;
  }

 private:
  std::mutex mutex_;
  std::vector<Call> calls_;
};

class HttpsApiTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ::signal(SIGPIPE, SIG_IGN);
    char tmpl[] = "/tmp/mcgw-https-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    const std::string d = dir_;
    const std::string ec = "-newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes";
    sh("openssl req -x509 " + ec + " -keyout " + d + "/ca.key -out " + d +
       "/ca.pem -days 2 -subj /CN=mcgw-api-test-ca");
    sh("openssl req -x509 " + ec + " -keyout " + d + "/ca2.key -out " + d +
       "/ca2.pem -days 2 -subj /CN=mcgw-other-ca");
    struct Cert {
      const char* file;
      const char* ca;
      const char* san;
      const char* usage;
    };
    for (const Cert& c : {
             Cert{"server", "ca", "DNS:localhost,IP:127.0.0.1", "serverAuth"},
             Cert{"client", "ca", "DNS:controller.example.net", "clientAuth"},
             Cert{"other", "ca", "DNS:intruder.example.org", "clientAuth"},
             Cert{"stranger", "ca2", "DNS:controller.example.net", "clientAuth"},
             Cert{"wild", "ca", "DNS:x.ctl.example.net", "clientAuth"},
             Cert{"deep", "ca", "DNS:a.b.ctl.example.net", "clientAuth"},
         }) {
      const std::string n = d + "/" + c.file;
      std::ofstream(n + ".ext") << "basicConstraints=CA:FALSE\n"
                                << "keyUsage=critical,digitalSignature\n"
                                << "extendedKeyUsage=" << c.usage << "\n"
                                << "subjectAltName=" << c.san << "\n";
      sh("openssl req " + ec + " -keyout " + n + ".key -out " + n +
         ".csr -subj /O=mcgw-test/CN=" + c.file);
      sh("openssl x509 -req -in " + n + ".csr -CA " + d + "/" + c.ca + ".pem -CAkey " + d + "/" +
         c.ca + ".key -CAcreateserial -days 2 -out " + n + ".pem -extfile " + n + ".ext");
      fs::permissions(n + ".key", fs::perms::owner_read | fs::perms::owner_write);
    }
  }
  static void TearDownTestSuite() {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  void SetUp() override {
    sink_ = std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(200);
    previous_ = spdlog::default_logger();
    spdlog::set_default_logger(std::make_shared<spdlog::logger>("test", sink_));
    spdlog::set_level(spdlog::level::info);
    port_ = freePort();
    ASSERT_NE(port_, 0);
  }
  void TearDown() override {
    if (std::getenv("MCGW_SHOW_LOG") != nullptr) {  // to read what an operator would
      for (const auto& l : logLines()) {
        std::fprintf(stderr, "log: %s", l.c_str());
      }
    }
    spdlog::set_default_logger(previous_);
  }

  static void sh(const std::string& cmd) {
    const int rc = std::system((cmd + " >/dev/null 2>&1").c_str());
    ASSERT_EQ(rc, 0) << cmd;
  }

  static uint16_t freePort() {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    uint16_t port = 0;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
      port = ntohs(a.sin_port);
    }
    ::close(fd);
    return port;
  }

  config::HttpsApiConfig config() const {
    config::HttpsApiConfig c;
    c.listen = "127.0.0.1:" + std::to_string(port_);
    c.ca = dir_ + "/ca.pem";
    c.certificate = dir_ + "/server.pem";
    c.private_key = dir_ + "/server.key";
    c.allowed_clients = {"controller.example.net"};
    return c;
  }

  // A controller presenting name.pem (empty: no certificate).
  std::unique_ptr<httplib::SSLClient> client(const std::string& name = "client") const {
    auto c = name.empty()
                 ? std::make_unique<httplib::SSLClient>("127.0.0.1", port_)
                 : std::make_unique<httplib::SSLClient>(
                       "127.0.0.1", port_, dir_ + "/" + name + ".pem", dir_ + "/" + name + ".key");
    c->set_ca_cert_path((dir_ + "/ca.pem").c_str());
    c->enable_server_certificate_verification(true);
    c->set_connection_timeout(5, 0);
    c->set_read_timeout(10, 0);
    return c;
  }

  std::vector<std::string> logLines() { return sink_->last_formatted(); }
  // The log lines holding every one of parts, waiting up to 3 s for them
  // (a failed handshake is logged when its connection is freed).
  std::vector<std::string> waitLog(const std::vector<std::string>& parts) {
    const auto deadline = std::chrono::steady_clock::now() + 3s;
    for (;;) {
      std::vector<std::string> found;
      for (const auto& l : logLines()) {
        bool all = true;
        for (const auto& p : parts) {
          all = all && l.find(p) != std::string::npos;
        }
        if (all) {
          found.push_back(l);
        }
      }
      if (!found.empty() || std::chrono::steady_clock::now() > deadline) {
        return found;
      }
      std::this_thread::sleep_for(20ms);
    }
  }

  static std::string dir_;
  uint16_t port_ = 0;
  std::shared_ptr<spdlog::sinks::ringbuffer_sink_mt> sink_;
  std::shared_ptr<spdlog::logger> previous_;
};

std::string HttpsApiTest::dir_;

TEST_F(HttpsApiTest, AllowedClientIsServedAndNamed) {
  Recorder rec;
  auto api = HttpsApi::start(config(), rec.handler());
  ASSERT_TRUE(api) << api.error();
  EXPECT_EQ((*api)->listening(), "127.0.0.1:" + std::to_string(port_));
  auto c = client();

  auto r = c->Post("/api/v1/policy-set", R"({"tenant": "train", "line": "wan-a", "rate": "200M"})",
                   "application/json");
  ASSERT_TRUE(r) << httplib::to_string(r.error());
  EXPECT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(r->get_header_value("Content-Type"), "application/json");
  const json body = json::parse(r->body);
  EXPECT_EQ(body["version"], 1);
  EXPECT_EQ(body["ok"], true);
  EXPECT_EQ(body["result"]["command"], "policy-set");

  // GET for reading, arguments from the query string.
  r = c->Get("/api/v1/show-policy?tenant=train");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  // POST with no body: {} as args.
  r = c->Post("/api/v1/status", "", "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  // The handler's error answer: 400 with its body.
  r = c->Post("/api/v1/policy-set", "{}", "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  EXPECT_EQ(json::parse(r->body)["error"]["message"], "policy-set: no tenant");

  const auto calls = rec.calls();
  ASSERT_EQ(calls.size(), 4u);
  EXPECT_EQ(calls[0].command, "policy-set");
  EXPECT_EQ(calls[0].args, json::parse(R"({"tenant": "train", "line": "wan-a", "rate": "200M"})"));
  EXPECT_EQ(calls[0].client, "controller.example.net");
  EXPECT_EQ(calls[1].command, "show-policy");
  EXPECT_EQ(calls[1].args, json({{"tenant", "train"}}));
  EXPECT_EQ(calls[2].command, "status");
  EXPECT_EQ(calls[2].args, json::object());

  // Who made every change: the client, the command, its args, the outcome.
  auto lines = waitLog({"\"controller.example.net\"", "\"policy-set\"", "\"rate\":\"200M\"", "ok"});
  EXPECT_EQ(lines.size(), 1u);
  EXPECT_EQ(waitLog({"\"policy-set\"", "refused: policy-set: no tenant"}).size(), 1u);
  // Reads are not logged as changes (a change is logged before its answer).
  for (const auto& l : logLines()) {
    EXPECT_EQ(l.find("ran \"show-policy\""), std::string::npos) << l;
  }
}

TEST_F(HttpsApiTest, ClientWithAnotherNameGets403AndIsLogged) {
  Recorder rec;
  auto api = HttpsApi::start(config(), rec.handler());
  ASSERT_TRUE(api) << api.error();
  auto c = client("other");
  c->set_keep_alive(true);  // one connection: its refusal is logged once
  auto r = c->Post("/api/v1/policy-set", R"({"tenant": "train"})", "application/json");
  ASSERT_TRUE(r) << httplib::to_string(r.error());
  EXPECT_EQ(r->status, 403);
  EXPECT_EQ(json::parse(r->body)["ok"], false);
  r = c->Get("/api/v1/status");  // same connection: refused again, logged once
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 403);
  // Not even the command list for a refused client.
  r = c->Get("/api/v1/nonsense");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 403);
  EXPECT_TRUE(rec.calls().empty());
  const auto lines = waitLog({"refused the client from 127.0.0.1:", "CN=other",
                              "\"intruder.example.org\"", "allowed-clients"});
  EXPECT_EQ(lines.size(), 1u) << ::testing::PrintToString(logLines());
}

TEST_F(HttpsApiTest, WildcardEntryMatchesOneLabel) {
  Recorder rec;
  auto cfg = config();
  cfg.allowed_clients = {"*.ctl.example.net"};
  auto api = HttpsApi::start(cfg, rec.handler());
  ASSERT_TRUE(api) << api.error();
  auto r = client("wild")->Get("/api/v1/status");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  r = client("deep")->Get("/api/v1/status");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 403);
  r = client("client")->Get("/api/v1/status");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 403);
  const auto calls = rec.calls();
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].client, "x.ctl.example.net");
}

TEST_F(HttpsApiTest, OtherCaOrNoCertificateFailsTheHandshake) {
  Recorder rec;
  auto api = HttpsApi::start(config(), rec.handler());
  ASSERT_TRUE(api) << api.error();

  auto r = client("stranger")->Get("/api/v1/status");
  EXPECT_FALSE(r) << "got HTTP " << r->status;
  auto lines = waitLog({"TLS handshake with 127.0.0.1:", "certificate refused", "CN=stranger"});
  EXPECT_EQ(lines.size(), 1u);

  r = client("")->Get("/api/v1/status");
  EXPECT_FALSE(r) << "got HTTP " << r->status;
  lines = waitLog({"TLS handshake with 127.0.0.1:", "peer did not return a certificate"});
  EXPECT_EQ(lines.size(), 1u);
  EXPECT_TRUE(rec.calls().empty());

  // Plain HTTP on the HTTPS port: refused in the handshake, logged.
  httplib::Client plain("127.0.0.1", port_);
  plain.set_read_timeout(5, 0);
  r = plain.Get("/api/v1/status");
  EXPECT_FALSE(r && r->status == 200);
  EXPECT_EQ(waitLog({"TLS handshake with 127.0.0.1:", "http request"}).size(), 1u);
  // A TCP connection closed without a word (a port probe): info, not a warning.
  {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port_);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    ::close(fd);
  }
  lines =
      waitLog({"[info] HTTPS API: 127.0.0.1:", "closed the connection during the TLS handshake"});
  EXPECT_EQ(lines.size(), 1u) << ::testing::PrintToString(logLines());

  // And the server still serves the allowed client.
  r = client()->Get("/api/v1/status");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
}

TEST_F(HttpsApiTest, RefusedRequests) {
  Recorder rec;
  auto api = HttpsApi::start(config(), rec.handler());
  ASSERT_TRUE(api) << api.error();
  auto c = client();

  // Not served over HTTPS (reload is the Unix socket's): 404 with the list.
  auto r = c->Post("/api/v1/reload", "{}", "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404);
  json body = json::parse(r->body);
  EXPECT_EQ(body["error"]["details"], json(HttpsApi::servedCommands()));
  r = c->Get("/api/v2/status");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404);
  r = c->Get("/");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404);

  // A change by GET: 405, Allow: POST.
  r = c->Get("/api/v1/policy-set?tenant=train");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 405);
  EXPECT_EQ(r->get_header_value("Allow"), "POST");
  r = c->Put("/api/v1/policy-set", "{}", "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 405);
  // The live rules' commands are served, and change: POST only.
  for (const char* command : {"policy-rules-set", "policy-rules-clear"}) {
    r = c->Get((std::string("/api/v1/") + command + "?tenant=train").c_str());
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 405) << command;
    EXPECT_EQ(r->get_header_value("Allow"), "POST") << command;
  }

  // Too large: with a Content-Length, and chunked (no length).
  const std::string big = "{\"x\": \"" + std::string(70 * 1024, 'a') + "\"}";
  r = c->Post("/api/v1/policy-set", big, "application/json");
  ASSERT_TRUE(r) << httplib::to_string(r.error());
  EXPECT_EQ(r->status, 413);
  EXPECT_EQ(json::parse(r->body)["ok"], false);
  {
    // Keep-alive: the server answers 413 at 64 KiB and reads on; a client
    // that asked it to close would see its upload reset instead.
    auto c2 = client();
    c2->set_keep_alive(true);
    r = c2->Post(
        "/api/v1/policy-set",
        [&](size_t offset, httplib::DataSink& sink) {
          if (offset >= big.size() * 3) {
            sink.done();
            return true;
          }
          return sink.write(big.data(), big.size());
        },
        "application/json");
    ASSERT_TRUE(r) << httplib::to_string(r.error());
    EXPECT_EQ(r->status, 413);
  }

  // Not JSON: 415 (bad JSON, or another media type).
  r = c->Post("/api/v1/policy-set", "{tenant: train", "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 415);
  r = c->Post("/api/v1/policy-set", "tenant=train", "application/x-www-form-urlencoded");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 415);
  // JSON but not an object: 400.
  r = c->Post("/api/v1/policy-set", "[1, 2]", "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  EXPECT_TRUE(rec.calls().empty());

  // A handler that throws: 500, logged, and the server keeps serving.
  r = c->Post("/api/v1/show-counters", "{}", "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 500);
  EXPECT_NE(json::parse(r->body)["error"]["message"].get<std::string>().find("counters exploded"),
            std::string::npos);
  EXPECT_EQ(waitLog({"\"show-counters\"", "counters exploded"}).size(), 1u);
  r = c->Get("/api/v1/status");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  r = client()->Get("/api/v1/status");  // a new connection too
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);

  // Busy (a reload): 503, come back in a second.
  r = c->Get("/api/v1/show-tunnels");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 503);
  EXPECT_EQ(r->get_header_value("Retry-After"), "1");
  EXPECT_EQ(json::parse(r->body)["error"]["message"], "a reload is under way");
}

TEST_F(HttpsApiTest, ViaLoopAnswersFromTheLoopThread) {
  std::promise<core::EventLoop*> made;
  std::thread::id loop_thread;
  std::unique_ptr<core::EventLoop> owned;
  std::thread t([&] {
    auto loop = core::EventLoop::create();
    if (!loop) {
      made.set_value(nullptr);
      return;
    }
    owned = std::move(*loop);
    loop_thread = std::this_thread::get_id();
    made.set_value(owned.get());
    owned->run();
  });
  core::EventLoop* loop = made.get_future().get();
  ASSERT_NE(loop, nullptr);
  std::atomic<bool> on_loop_thread{false};
  std::string seen_client;
  auto api = HttpsApi::start(
      config(), viaLoop(
                    *loop,
                    [&](const std::string& command, const json& args, const std::string& who) {
                      on_loop_thread = std::this_thread::get_id() == loop_thread;
                      seen_client = who;
                      return json{{"ok", true}, {"result", {{"command", command}, {"args", args}}}};
                    },
                    2000ms));
  ASSERT_TRUE(api) << api.error();
  auto r = client()->Post("/api/v1/policy-set", R"({"tenant": "train"})", "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(json::parse(r->body)["result"]["args"]["tenant"], "train");
  EXPECT_TRUE(on_loop_thread);
  EXPECT_EQ(seen_client, "controller.example.net");
  (*api)->stop();
  loop->post([loop] { loop->exit(0); });
  t.join();
}

TEST_F(HttpsApiTest, ViaLoopTimesOutWhenTheLoopDoesNotRun) {
  auto loop = core::EventLoop::create();
  ASSERT_TRUE(loop) << loop.error();
  std::atomic<int> ran{0};
  auto api =
      HttpsApi::start(config(), viaLoop(
                                    **loop,
                                    [&](const std::string&, const json&, const std::string&) {
                                      ++ran;
                                      return json{{"ok", true}, {"result", nullptr}};
                                    },
                                    300ms));
  ASSERT_TRUE(api) << api.error();
  const auto t0 = std::chrono::steady_clock::now();
  auto r = client()->Post("/api/v1/policy-set", R"({"tenant": "train"})", "application/json");
  const auto took = std::chrono::steady_clock::now() - t0;
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 504) << r->body;
  EXPECT_NE(r->body.find("did not run"), std::string::npos) << r->body;
  std::printf(
      "504 after %lld ms (viaLoop timeout 300 ms)\n",
      static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(took).count()));
  EXPECT_GE(took, 300ms);
  EXPECT_LT(took, 2000ms);
  (*api)->stop();
  // The loop comes to the posted call later: it was cancelled, and touches
  // nothing of the request that gave up.
  for (int i = 0; i < 10; ++i) {
    (*loop)->runOnce(10ms);
  }
  EXPECT_EQ(ran, 0);
  EXPECT_EQ(waitLog({"\"policy-set\"", "timed out"}).size(), 1u);
}

TEST_F(HttpsApiTest, StopsAndStartsAgainOnThePort) {
  Recorder rec;
  auto api = HttpsApi::start(config(), rec.handler());
  ASSERT_TRUE(api) << api.error();
  auto kept = client();
  kept->set_keep_alive(true);  // a connection idle in keep-alive when it stops
  auto r = kept->Get("/api/v1/status");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  const auto t0 = std::chrono::steady_clock::now();
  (*api)->stop();
  const auto took = std::chrono::steady_clock::now() - t0;
  std::printf(
      "stop() with an idle keep-alive connection: %lld ms\n",
      static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(took).count()));
  EXPECT_LT(took, 1s);
  (*api)->stop();  // idempotent
  r = client()->Get("/api/v1/status");
  EXPECT_FALSE(r);
  auto again = HttpsApi::start(config(), rec.handler());
  ASSERT_TRUE(again) << again.error();
  r = client()->Get("/api/v1/status");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
}

TEST_F(HttpsApiTest, StartErrorsNameTheProblem) {
  Recorder rec;
  auto expectError = [&](const config::HttpsApiConfig& c, const std::vector<std::string>& parts) {
    auto api = HttpsApi::start(c, rec.handler());
    ASSERT_FALSE(api) << "started with " << c.listen;
    for (const auto& p : parts) {
      EXPECT_NE(api.error().find(p), std::string::npos) << api.error() << " lacks " << p;
    }
  };
  auto c = config();
  c.ca = dir_ + "/missing-ca.pem";
  expectError(c, {"the CA file", "missing-ca.pem", "No such file"});
  c = config();
  c.certificate = dir_;
  expectError(c, {"the certificate file", "not a regular file"});

  const std::string loose = dir_ + "/loose.key";
  fs::copy_file(dir_ + "/server.key", loose, fs::copy_options::overwrite_existing);
  fs::permissions(loose, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read |
                             fs::perms::others_read);
  c = config();
  c.private_key = loose;
  expectError(c, {"loose.key", "mode 0644", "0600 or 0400"});

  c = config();
  c.private_key = dir_ + "/other.key";
  expectError(c, {"other.key", "does not match", "server.pem"});

  c = config();
  c.allowed_clients.clear();
  expectError(c, {"allowed-clients", "empty"});
  c = config();
  c.allowed_clients = {"ctl*.example.net"};
  expectError(c, {"allowed-clients", "ctl*.example.net", "wildcard"});
  c = config();
  c.allowed_clients = {"*.net"};
  expectError(c, {"wildcard"});

  c = config();
  c.listen = "localhost:8443";
  expectError(c, {"listen", "localhost:8443"});

  auto first = HttpsApi::start(config(), rec.handler());
  ASSERT_TRUE(first) << first.error();
  expectError(config(), {"127.0.0.1:" + std::to_string(port_), "Address already in use"});
  c = config();
  c.listen = "192.0.2.1:" + std::to_string(port_);  // not an address of this host
  expectError(c, {"192.0.2.1:", "Cannot assign requested address"});
}

}  // namespace
}  // namespace mcgw::api
