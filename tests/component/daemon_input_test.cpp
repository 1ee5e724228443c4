// Untrusted bytes through a running mcgwd: config text that is not UTF-8,
// a config path that is not UTF-8, malformed and oversized requests, more
// connections than the API takes, a daemon that goes away under mcgwctl.
// Whatever arrives, mcgwd keeps running and every answer is JSON.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <nlohmann/json.hpp>

#include "config/text.hpp"
#include "tests/support/daemon.hpp"

namespace mcgw::test {
namespace {

using nlohmann::json;

// Every string in j is valid text once JSON has decoded it.
void expectValidStrings(const json& j, const std::string& where = "") {
  if (j.is_string()) {
    EXPECT_FALSE(text::findProblem(j.get<std::string>(), text::Breaks::kAllowed))
        << where << ": " << j;
  } else if (j.is_structured()) {
    for (const auto& [k, v] : j.items()) {
      EXPECT_FALSE(text::findProblem(k)) << where << " key " << k;
      expectValidStrings(v, where + "/" + k);
    }
  }
}

class DaemonInputTest : public DaemonTest {
 protected:
  // Every read-only view answers with a JSON document of valid text.
  void expectEveryViewAnswers() {
    for (const char* view :
         {"status --json", "show config --json", "show tunnels --json", "show routes --json",
          "show counters --json", "show neighbors --json"}) {
      CommandResult r = ctl(view);
      SCOPED_TRACE(view);
      EXPECT_TRUE(r.code == 0 || (r.code == 1 && std::string(view) == "status --json"))
          << r.code << r.err;
      json j = json::parse(r.out, nullptr, false);
      ASSERT_FALSE(j.is_discarded()) << r.out << r.err;
      expectValidStrings(j);
    }
    for (const char* view : {"status", "show config", "show tunnels", "show counters"}) {
      CommandResult r = ctl(view);
      EXPECT_TRUE(r.code == 0 || (r.code == 1 && std::string(view) == "status"))
          << view << ": " << r.code << r.err;
      EXPECT_FALSE(r.out.empty()) << view;
      EXPECT_FALSE(text::findProblem(r.out, text::Breaks::kAllowed)) << view << ": " << r.out;
    }
    EXPECT_TRUE(daemon_->running()) << log();
  }
};

// The reproduction of issue 11: a description ending in byte 0xE9.
TEST_F(DaemonInputTest, ConfigTextThatIsNotUtf8IsRefusedWithItsLocation) {
  writeFile(config_, nullConfig(socket_, prefix_));
  start();
  const std::string before = status()["config"]["checksum"];

  // In a value: refused by the API reload, located, nothing changes.
  std::string bad = nullConfig(socket_, prefix_);
  bad.replace(bad.find("  site: lab\n"), 12, "  site: lab\n  description: caf\xE9\n");
  writeFile(config_, bad);
  CommandResult r = ctl("reload");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.err.find(config_ + ":4:19: not valid UTF-8 (byte 0xE9)"), std::string::npos) << r.err;
  EXPECT_FALSE(text::findProblem(r.err, text::Breaks::kAllowed)) << r.err;
  expectEveryViewAnswers();
  EXPECT_EQ(status()["config"]["checksum"], before);

  // In an unknown key, by SIGHUP, then read by status: the daemon lives on.
  writeFile(config_, nullConfig(socket_, prefix_) + "logging:\n  lev\xE9l: info\n");
  hangup();
  json s = status();
  EXPECT_EQ(s["config"]["checksum"], before);
  EXPECT_EQ(s["config"]["last_reload"]["ok"], false);
  ASSERT_GE(s["config"]["last_reload"]["errors"].size(), 1u) << s;
  EXPECT_NE(s["config"]["last_reload"]["errors"][0].get<std::string>().find("not valid UTF-8"),
            std::string::npos)
      << s["config"]["last_reload"];
  expectEveryViewAnswers();
  // A control character smuggled in by a YAML escape is refused too.
  std::string esc = nullConfig(socket_, prefix_);
  esc.replace(esc.find("  site: lab\n"), 12, "  site: lab\n  description: \"red \\e[31m\"\n");
  writeFile(config_, esc);
  r = ctl("reload");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.err.find("control character U+001B"), std::string::npos) << r.err;
  EXPECT_TRUE(daemon_->running());
}

TEST_F(DaemonInputTest, InvalidUtf8AtStartWithoutLastGoodExits78) {
  std::string bad = nullConfig(socket_, prefix_);
  bad.replace(bad.find("  site: lab\n"), 12, "  site: lab\n  description: caf\xE9\n");
  writeFile(config_, bad);
  Process p({kMcgwd, "--config", config_, "--state-dir", stateDir()}, {}, dir_.file("mcgwd.log"));
  EXPECT_EQ(p.wait(30s), 78);
  EXPECT_NE(log().find(config_ + ":4:19: not valid UTF-8 (byte 0xE9)"), std::string::npos) << log();
  // check-config says the same, offline.
  CommandResult r = run(kMcgwctl + " check-config " + config_);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find(":4:19: not valid UTF-8 (byte 0xE9)"), std::string::npos) << r.err;
}

// A path the daemon did not choose, in every view: the config file's own
// name, which the loader cannot refuse.
TEST_F(DaemonInputTest, ConfigPathThatIsNotUtf8IsEscapedInEveryView) {
  config_ = dir_.file("caf\xE9.yaml");
  writeFile(config_, nullConfig(socket_, prefix_));
  start();
  json s = status();
  EXPECT_EQ(s["config"]["file"], dir_.file("caf\\xE9.yaml"));
  expectEveryViewAnswers();
  // The log names it escaped too: every log line is text.
  std::string out = log();
  EXPECT_NE(out.find("starting with " + dir_.file("caf\\xE9.yaml")), std::string::npos) << out;
  EXPECT_FALSE(text::findProblem(out, text::Breaks::kAllowed)) << text::escape(out, 100000);
}

// Names in a request are echoed quoted and cut, never whole or raw.
TEST_F(DaemonInputTest, SetLineEchoesNamesBounded) {
  writeFile(config_, nullConfig(socket_, prefix_));
  start();
  const std::string peer = "\x1b[2J" + std::string(60000, 'p');
  CommandResult r =
      run("printf '%s\\n' '{\"version\":1,\"command\":\"set-line\",\"args\":{"
          "\"peer\":\"\\u001b[2J" +
          std::string(60000, 'p') +
          "\",\"line\":\"l\",\"state\":\"up\"}}' | timeout 10 socat - UNIX-CONNECT:" + socket_);
  json j = json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out.substr(0, 300);
  const std::string message = j["error"]["message"];
  EXPECT_EQ(message,
            "no peer \"\\u001B[2J" + std::string(text::kMaxQuoted - 4, 'p') + "\"...(60004 bytes)");
  EXPECT_TRUE(daemon_->running());
}

TEST_F(DaemonInputTest, IdenticalReloadSaysNoChangesInLogAndApi) {
  writeFile(config_, nullConfig(socket_, prefix_));
  start();
  CommandResult r = ctl("reload --json");
  ASSERT_EQ(r.code, 0) << r.err;
  json j = json::parse(r.out);
  EXPECT_EQ(j["result"]["summary"], "no changes");
  EXPECT_EQ(j["result"]["changes"], json::array());
  EXPECT_EQ(ctl("reload").out, "reloaded: no changes\n");
  EXPECT_NE(log().find("reload of " + config_ + ": no changes"), std::string::npos) << log();
  EXPECT_EQ(log().find("applied"), std::string::npos) << log();

  writeFile(config_, nullConfig(socket_, prefix_) + "logging:\n  level: debug\n");
  r = ctl("reload --json");
  j = json::parse(r.out);
  EXPECT_EQ(j["result"]["summary"], "applied 1 change");
  EXPECT_NE(log().find("reload of " + config_ + ": applied 1 change"), std::string::npos);
}

int connectTo(const std::string& path) {
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::snprintf(a.sun_path, sizeof a.sun_path, "%s", path.c_str());
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

std::string readAll(int fd) {
  timeval tv{5, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;) {
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

TEST_F(DaemonInputTest, ConnectionOverTheLimitIsToldWhy) {
  writeFile(config_, nullConfig(socket_, prefix_));
  start();
  // 64 idle connections fill the API; the 65th makes the oldest go, with a word.
  std::vector<int> fds;
  for (int i = 0; i < 65; ++i) {
    int fd = connectTo(socket_);
    ASSERT_GE(fd, 0);
    fds.push_back(fd);
    if (i == 0) {
      std::this_thread::sleep_for(100ms);  // the first is the oldest
    }
  }
  std::string said = readAll(fds[0]);
  json j = json::parse(said, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << said;
  EXPECT_EQ(j["ok"], false);
  EXPECT_NE(j["error"]["message"].get<std::string>().find("too many API connections (at most 64)"),
            std::string::npos)
      << j;
  for (int fd : fds) {
    ::close(fd);
  }
  EXPECT_EQ(ctl("status --json").code, 0);
  EXPECT_NE(log().find("more than 64 connections open"), std::string::npos) << log();
}

TEST(Mcgwctl, DaemonThatClosesWithoutAnAnswerExits2) {
  // A socket that accepts and closes at once, as a daemon that dies under a
  // request does.
  TempDir dir;
  const std::string sock = dir.file("gone.sock");
  Process server({"/usr/bin/socat", "UNIX-LISTEN:" + sock + ",fork", "SYSTEM:true"}, {},
                 dir.file("socat.log"));
  for (int i = 0; i < 100 && !fs::exists(sock); ++i) {
    std::this_thread::sleep_for(20ms);
  }
  for (const char* cmd : {"status", "show config", "reload"}) {
    CommandResult r = run(kMcgwctl + " --socket " + sock + " " + cmd);
    EXPECT_EQ(r.code, 2) << cmd << ": " << r.err;
    EXPECT_NE(r.err.find("closed the connection without answering"), std::string::npos) << r.err;
  }
}

}  // namespace
}  // namespace mcgw::test
