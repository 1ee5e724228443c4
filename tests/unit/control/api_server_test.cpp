// The API server on the event loop: the time mcgwd spends answering does not
// count against a client's timeout, and one dispatch answers at most one
// request (the daemon's timers, and its watchdog, run between slow requests).
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <future>
#include <mutex>
#include <thread>

#include "control/api/client.hpp"
#include "control/api/server.hpp"

namespace mcgw::api {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

struct TempSocket {
  TempSocket() {
    char tmpl[] = "/tmp/mcgw-api-test-XXXXXX";
    dir = ::mkdtemp(tmpl);
    path = dir + "/api.sock";
  }
  ~TempSocket() { std::filesystem::remove_all(dir); }
  std::string dir, path;
};

std::unique_ptr<core::EventLoop> makeLoop() {
  auto loop = core::EventLoop::create();
  EXPECT_TRUE(loop.ok()) << loop.error();
  return std::move(*loop);
}

// Runs the loop as mcgwd does until done() or the deadline.
void serve(core::EventLoop& loop, const std::function<bool()>& done,
           std::chrono::seconds limit = 20s) {
  auto until = std::chrono::steady_clock::now() + limit;
  while (!done() && std::chrono::steady_clock::now() < until) {
    loop.runOnce(20ms);
  }
}

TEST(ApiServer, TimeSpentAnsweringDoesNotCountAgainstTheClient) {
  TempSocket sock;
  // A timeout of 200 ms and a command that takes 600 ms (a reload of a big
  // file does this with the real 5 s): the client still gets its answer.
  Server server(
      [](const std::string&, const json&) {
        std::this_thread::sleep_for(600ms);
        return json{{"ok", true}, {"result", {{"slow", true}}}};
      },
      200ms);
  ASSERT_TRUE(server.listen(sock.path, "").ok());
  auto loop = makeLoop();
  server.attach(*loop);
  auto reply = std::async(std::launch::async, [&] { return call(sock.path, "slow", {}, 10000); });
  serve(*loop, [&] { return reply.wait_for(0s) == std::future_status::ready; });
  auto r = reply.get();
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ((*r)["result"]["slow"], true);
}

TEST(ApiServer, ClientThatSendsNothingIsDroppedAfterTheTimeout) {
  TempSocket sock;
  Server server([](const std::string&, const json&) { return json{{"ok", true}}; }, 200ms);
  ASSERT_TRUE(server.listen(sock.path, "").ok());
  auto loop = makeLoop();
  server.attach(*loop);
  int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::snprintf(a.sun_path, sizeof a.sun_path, "%s", sock.path.c_str());
  ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  std::atomic<bool> closed{false};
  std::thread reader([&] {
    char c;
    ::recv(fd, &c, 1, 0);  // returns 0 when the server closes
    closed = true;
  });
  auto start = std::chrono::steady_clock::now();
  serve(
      *loop, [&] { return closed.load(); }, 5s);
  reader.join();
  ::close(fd);
  EXPECT_TRUE(closed);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 3s);
}

// Three slow requests (100 ms each) and a 10 ms timer: the timer runs
// between any two requests, so one dispatch answered one request and the
// timer went before the next client.
TEST(ApiServer, TimersRunBetweenSlowRequests) {
  TempSocket sock;
  std::mutex m;
  std::vector<std::string> events;
  auto record = [&](const std::string& e) {
    std::lock_guard lock(m);
    if (events.empty() || events.back() != e || e != "tick") {
      events.push_back(e);
    }
  };
  int calls = 0;
  Server server([&](const std::string&, const json&) {
    ++calls;
    record("request");
    std::this_thread::sleep_for(100ms);
    return json{{"ok", true}, {"result", json::object()}};
  });
  ASSERT_TRUE(server.listen(sock.path, "").ok());
  auto loop = makeLoop();
  server.attach(*loop);
  core::Source tick = loop->every(10ms, "tick", [&] { record("tick"); });
  std::vector<std::future<Result<json, ClientError>>> replies;
  for (int i = 0; i < 3; ++i) {
    replies.push_back(
        std::async(std::launch::async, [&] { return call(sock.path, "status", {}, 20000); }));
  }
  serve(*loop, [&] {
    for (auto& r : replies) {
      if (r.wait_for(0s) != std::future_status::ready) {
        return false;
      }
    }
    return true;
  });
  for (auto& r : replies) {
    EXPECT_TRUE(r.get().ok());
  }
  EXPECT_EQ(calls, 3);
  // Drop the ticks before the first request and after the last.
  auto first = std::find(events.begin(), events.end(), "request");
  auto last = std::find(events.rbegin(), events.rend(), "request").base();
  EXPECT_EQ(std::vector<std::string>(first, last),
            (std::vector<std::string>{"request", "tick", "request", "tick", "request"}));
}

// A command taken for later (mcgwd's reload, run off the loop): the server
// pauses, another client waits, and both are answered once the reply comes
// and the server resumes.
TEST(ApiServer, RequestTakenForLaterIsAnsweredWhenItsReplyComes) {
  TempSocket sock;
  int handled = 0;
  Server server([&](const std::string&, const json&) {
    ++handled;
    return json{{"ok", true}, {"result", {{"now", true}}}};
  });
  ASSERT_TRUE(server.listen(sock.path, "").ok());
  auto loop = makeLoop();
  server.attach(*loop);
  Server::Reply later;
  server.answerLater([&](const std::string& command, const json&, const Server::Reply& reply) {
    if (command != "slow") {
      return false;
    }
    later = reply;
    server.setPaused(true);
    return true;
  });
  auto slow = std::async(std::launch::async, [&] { return call(sock.path, "slow", {}, 10000); });
  serve(*loop, [&] { return bool(later); });
  ASSERT_TRUE(later);
  auto status =
      std::async(std::launch::async, [&] { return call(sock.path, "status", {}, 10000); });
  for (int i = 0; i < 10; ++i) {
    loop->runOnce(20ms);
  }
  EXPECT_EQ(handled, 0) << "paused: nobody is served";
  EXPECT_EQ(slow.wait_for(0s), std::future_status::timeout);
  server.setPaused(false);
  later(json{{"ok", true}, {"result", {{"later", true}}}});
  serve(*loop, [&] {
    return slow.wait_for(0s) == std::future_status::ready &&
           status.wait_for(0s) == std::future_status::ready;
  });
  auto s1 = slow.get();
  ASSERT_TRUE(s1.ok()) << s1.error().message;
  EXPECT_EQ((*s1)["result"]["later"], true);
  auto s2 = status.get();
  ASSERT_TRUE(s2.ok()) << s2.error().message;
  EXPECT_EQ((*s2)["result"]["now"], true);
  EXPECT_EQ(handled, 1);
}

// answerStreaming: a request answered at once by reply, one taken over by
// take (the connection carries the answer line and then raw bytes, as
// `mcgwctl capture` does), and one the streamer leaves to the handler.
TEST(ApiServer, StreamingRequestsAreAnsweredTakenOverOrLeftToTheHandler) {
  TempSocket sock;
  int handled = 0;
  Server server([&](const std::string&, const json&) {
    ++handled;
    return json{{"ok", true}, {"result", {{"handler", true}}}};
  });
  ASSERT_TRUE(server.listen(sock.path, "").ok());
  auto loop = makeLoop();
  server.attach(*loop);
  int taken_fd = -1;
  server.answerStreaming([&](const std::string& command, const json&, const Server::Reply& reply,
                             const Server::Take& take) {
    if (command == "refuse") {
      reply(errorResponse("refused at once"));
      return true;
    }
    if (command == "stream") {
      taken_fd = take();
      return true;
    }
    return false;
  });
  auto refused =
      std::async(std::launch::async, [&] { return call(sock.path, "refuse", {}, 10000); });
  serve(*loop, [&] { return refused.wait_for(0s) == std::future_status::ready; });
  auto r = refused.get();
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ((*r)["ok"], false);
  EXPECT_EQ((*r)["error"]["message"], "refused at once");

  auto other = std::async(std::launch::async, [&] { return call(sock.path, "status", {}, 10000); });
  serve(*loop, [&] { return other.wait_for(0s) == std::future_status::ready; });
  auto o = other.get();
  ASSERT_TRUE(o.ok()) << o.error().message;
  EXPECT_EQ((*o)["result"]["handler"], true);
  EXPECT_EQ(handled, 1);

  // Taken over: the server forgets the client; its new owner writes.
  int c = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, sock.path.c_str(), sizeof addr.sun_path - 1);
  ASSERT_EQ(::connect(c, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  const std::string req = R"({"version":1,"command":"stream","args":{}})"
                          "\n";
  ASSERT_EQ(::write(c, req.data(), req.size()), static_cast<ssize_t>(req.size()));
  serve(*loop, [&] { return taken_fd >= 0; });
  ASSERT_GE(taken_fd, 0);
  const std::string stream = responseLine({{"ok", true}}) + "raw bytes";
  ASSERT_EQ(::write(taken_fd, stream.data(), stream.size()), static_cast<ssize_t>(stream.size()));
  ::close(taken_fd);
  for (int i = 0; i < 5; ++i) {
    loop->runOnce(10ms);  // nothing of the server touches it any more
  }
  std::string got;
  char buf[256];
  ssize_t n;
  while ((n = ::read(c, buf, sizeof buf)) > 0) {
    got.append(buf, static_cast<size_t>(n));
  }
  ::close(c);
  EXPECT_EQ(got, R"({"ok":true,"version":1})"
                 "\nraw bytes");
  EXPECT_EQ(handled, 1);
}

}  // namespace
}  // namespace mcgw::api
