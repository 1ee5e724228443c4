// The last good config: mcgwd keeps a copy of the config it last started or
// reloaded with, starts with it (DEGRADED, loudly) when its file is invalid,
// and leaves it when a good file is reloaded; --strict and
// startup.use-last-good: false exit 78 instead.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/support/daemon.hpp"

namespace mcgw::test {
namespace {

using nlohmann::json;

class LastGoodTest : public DaemonTest {
 protected:
  std::string copyPath() const {
    // /tmp/mcgw-test-XXXX/mcgw.yaml -> tmp-mcgw\x2dtest\x2dXXXX-mcgw.yaml.last-good
    std::string name;
    for (char c : config_.substr(1)) {
      if (c == '/') {
        name += '-';
      } else if (c == '-') {
        name += "\\x2d";
      } else {
        name += c;
      }
    }
    return stateDir() + "/" + name + ".last-good";
  }
  std::string broken() const {
    return nullConfig(socket_, prefix_, "tenants:\n  - name: blue\n    vni: 0\n");
  }
  void stop() {
    daemon_->signal(SIGTERM);
    ASSERT_EQ(daemon_->wait(30s), 0) << log();
  }
};

TEST_F(LastGoodTest, EveryGoodStartAndReloadKeepsACopy) {
  const std::string good = nullConfig(socket_, prefix_);
  writeFile(config_, good);
  start();
  EXPECT_EQ(readFile(copyPath()), good);
  struct stat st {};
  ASSERT_EQ(::stat(copyPath().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_EQ(::stat(stateDir().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  json s = status();
  EXPECT_EQ(s["config"]["last_good"]["file"], copyPath());
  EXPECT_TRUE(s["config"]["last_good"]["saved_at"].is_string());
  EXPECT_TRUE(s["config"]["running_last_good"].is_null());

  const std::string next = good + "logging:\n  level: warning\n";
  writeFile(config_, next);
  ASSERT_EQ(ctl("reload").code, 0);
  EXPECT_EQ(readFile(copyPath()), next);
  // A refused reload leaves the copy alone.
  writeFile(config_, broken());
  EXPECT_EQ(ctl("reload").code, 1);
  EXPECT_EQ(readFile(copyPath()), next);
}

// The scenario of issue 11: the file is broken while mcgwd runs, then the
// process dies (a crash: no clean stop); the restart must bring the gateway
// back with the config it had.
TEST_F(LastGoodTest, CrashWithABrokenFileRestartsOnTheLastGoodCopy) {
  const std::string good = nullConfig(socket_, prefix_);
  writeFile(config_, good);
  start();
  const std::string checksum = status()["config"]["checksum"];
  writeFile(config_, broken());
  daemon_->signal(SIGKILL);
  daemon_->wait(30s);

  start();
  json s = status();
  EXPECT_EQ(s["health"]["state"], "degraded");
  EXPECT_EQ(s["config"]["checksum"], checksum);
  EXPECT_EQ(s["config"]["file"], config_);
  ASSERT_TRUE(s["config"]["running_last_good"].is_object()) << s["config"];
  EXPECT_EQ(s["config"]["running_last_good"]["copy"], copyPath());
  ASSERT_EQ(s["config"]["running_last_good"]["file_errors"].size(), 1u);
  EXPECT_NE(s["config"]["running_last_good"]["file_errors"][0].get<std::string>().find(config_ +
                                                                                       ":18:10:"),
            std::string::npos);
  std::string reasons = s["health"]["reasons"].dump();
  EXPECT_NE(reasons.find("running the last good config from " +
                         s["config"]["running_last_good"]["saved_at"].get<std::string>() + "; " +
                         config_ + " is invalid: " + config_ + ":18:10:"),
            std::string::npos)
      << reasons;
  CommandResult r = ctl("status");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("DEGRADED"), std::string::npos);
  EXPECT_NE(r.out.find("running the last good config from"), std::string::npos) << r.out;
  json shown = json::parse(ctl("show config --json").out, nullptr, false);
  ASSERT_TRUE(shown.is_object());
  EXPECT_EQ(shown["text"], good);
  EXPECT_EQ(shown["checksum"], checksum);
  EXPECT_NE(log().find("STARTING WITH THE LAST GOOD CONFIG " + copyPath()), std::string::npos)
      << log();
  EXPECT_EQ(readFile(copyPath()), good) << "a fallback start does not rewrite the copy";

  // A reload of the still-broken file keeps the fallback; a good one ends it.
  EXPECT_EQ(ctl("reload").code, 1);
  EXPECT_TRUE(status()["config"]["running_last_good"].is_object());
  const std::string fixed = good + "logging:\n  level: info\n";
  writeFile(config_, fixed);
  r = ctl("reload");
  EXPECT_EQ(r.code, 0) << r.err;
  s = status();
  EXPECT_TRUE(s["config"]["running_last_good"].is_null()) << s["config"];
  EXPECT_EQ(s["health"]["state"], "healthy") << s["health"];
  EXPECT_EQ(readFile(copyPath()), fixed);
}

// The unit runs `mcgwd --preflight` before mcgwd (ExecStartPre): it must
// decide as the start does, or the copy would never be used under systemd.
TEST_F(LastGoodTest, UnitStartsOnTheCopyWhenTheFileIsBroken) {
  writeFile(config_, nullConfig(socket_, prefix_));
  start();
  stop();
  writeFile(config_, broken());
  // The unit's own two lines, in order, for this instance.
  const std::string unit = readFile(MCGW_BINARY_DIR "/systemd/mcgw.service");
  auto line = [&](const std::string& key) {
    size_t at = unit.find("\n" + key + "=");
    EXPECT_NE(at, std::string::npos) << key;
    at += key.size() + 2;
    return unit.substr(at, unit.find('\n', at) - at);
  };
  auto argv = [&](std::string cmd) {
    std::vector<std::string> out;
    std::istringstream in(cmd);
    for (std::string w; in >> w;) {
      out.push_back(w);
    }
    EXPECT_GE(out.size(), 3u) << cmd;
    EXPECT_NE(cmd.find("--config /etc/mcgw/mcgw.yaml"), std::string::npos) << cmd;
    EXPECT_EQ(cmd.find("--strict"), std::string::npos) << cmd;
    for (auto& w : out) {
      w = w.ends_with("/mcgwd") ? kMcgwd : w == "/etc/mcgw/mcgw.yaml" ? config_ : w;
    }
    out.insert(out.end(), {"--state-dir", stateDir()});
    return out;
  };
  Process pre(argv(line("ExecStartPre")), {}, dir_.file("preflight.log"));
  EXPECT_EQ(pre.wait(30s), 0) << readFile(dir_.file("preflight.log"));
  EXPECT_NE(readFile(dir_.file("preflight.log")).find("mcgwd will start with " + copyPath()),
            std::string::npos)
      << readFile(dir_.file("preflight.log"));
  // ExecStart is `mcgwd --config FILE` and what follows: start() gives the
  // first three and --state-dir, and the rest as they are.
  std::vector<std::string> exec = argv(line("ExecStart"));
  ASSERT_EQ(std::vector<std::string>(exec.begin(), exec.begin() + 3),
            (std::vector<std::string>{kMcgwd, "--config", config_}));
  start({}, std::vector<std::string>(exec.begin() + 3, exec.end() - 2));
  EXPECT_TRUE(status()["config"]["running_last_good"].is_object());

  // --preflight --strict chooses as the start would (no copy), and leaves
  // the refusal to mcgwd: exit 0, so that the unit's exit status is
  // mcgwd's 78, which RestartPreventExitStatus sees.
  Process strict(
      {kMcgwd, "--preflight", "--config", config_, "--state-dir", stateDir(), "--strict"}, {},
      dir_.file("strict.log"));
  EXPECT_EQ(strict.wait(30s), 0) << readFile(dir_.file("strict.log"));
  EXPECT_NE(readFile(dir_.file("strict.log")).find("mcgwd will exit 78"), std::string::npos)
      << readFile(dir_.file("strict.log"));
}

// A copy that someone else could have written is not trusted.
TEST_F(LastGoodTest, CopyOthersMayWriteOrALinkIsNotUsed) {
  writeFile(config_, nullConfig(socket_, prefix_));
  start();
  stop();
  writeFile(config_, broken());
  ASSERT_EQ(::chmod(copyPath().c_str(), 0666), 0);
  Process p({kMcgwd, "--config", config_, "--state-dir", stateDir()}, {}, dir_.file("mcgwd.log"));
  EXPECT_EQ(p.wait(30s), 78);
  EXPECT_NE(log().find("may be written by others (mode 0666)"), std::string::npos) << log();

  const std::string elsewhere = dir_.file("elsewhere.yaml");
  writeFile(elsewhere, nullConfig(socket_, prefix_));
  fs::remove(copyPath());
  fs::create_symlink(elsewhere, copyPath());
  Process q({kMcgwd, "--config", config_, "--state-dir", stateDir()}, {}, dir_.file("mcgwd.log"));
  EXPECT_EQ(q.wait(30s), 78);
  EXPECT_NE(log().find("is not a regular file"), std::string::npos) << log();
}

TEST_F(LastGoodTest, StrictExits78) {
  writeFile(config_, nullConfig(socket_, prefix_));
  start();
  stop();
  writeFile(config_, broken());
  Process p({kMcgwd, "--config", config_, "--state-dir", stateDir(), "--strict"}, {},
            dir_.file("mcgwd.log"));
  EXPECT_EQ(p.wait(30s), 78);
  EXPECT_NE(log().find("--strict"), std::string::npos) << log();
}

TEST_F(LastGoodTest, CopyThatSaysNoExits78) {
  writeFile(config_, nullConfig(socket_, prefix_) + "startup:\n  use-last-good: false\n");
  start();
  stop();
  writeFile(config_, broken());
  Process p({kMcgwd, "--config", config_, "--state-dir", stateDir()}, {}, dir_.file("mcgwd.log"));
  EXPECT_EQ(p.wait(30s), 78);
  EXPECT_NE(log().find("says startup.use-last-good: false"), std::string::npos) << log();
}

TEST_F(LastGoodTest, InvalidCopyExits78WithBothErrors) {
  writeFile(config_, nullConfig(socket_, prefix_));
  start();
  stop();
  writeFile(copyPath(), "node: [\n");
  writeFile(config_, broken());
  Process p({kMcgwd, "--config", config_, "--state-dir", stateDir()}, {}, dir_.file("mcgwd.log"));
  EXPECT_EQ(p.wait(30s), 78);
  std::string out = log();
  EXPECT_NE(out.find(config_ + ":18:10:"), std::string::npos) << out;
  EXPECT_NE(out.find("the last good copy " + copyPath() + " is invalid too"), std::string::npos)
      << out;
}

TEST_F(LastGoodTest, CopyThatCannotBeKeptIsReported) {
  writeFile(stateDir(), "a file where the state directory should be\n");
  writeFile(config_, nullConfig(socket_, prefix_));
  start();
  json s = status();
  EXPECT_EQ(s["health"]["state"], "degraded");
  EXPECT_NE(s["health"]["reasons"].dump().find("cannot keep the last good copy of the config"),
            std::string::npos)
      << s["health"];
  EXPECT_TRUE(s["config"]["last_good"]["error"].is_string());
  // Once the directory can be made, the next reload keeps the copy again.
  fs::remove(stateDir());
  ASSERT_EQ(ctl("reload").code, 0);
  s = status();
  EXPECT_EQ(s["health"]["state"], "healthy") << s["health"];
  EXPECT_TRUE(s["config"]["last_good"]["error"].is_null());
}

}  // namespace
}  // namespace mcgw::test
