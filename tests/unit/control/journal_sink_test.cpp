// mcgwd's journal sink (control/daemon/journal_sink.hpp): when it is used
// (JOURNAL_STREAM naming our stderr), the priorities it gives, and that a
// line is not lost when journald cannot be reached.  The entries themselves
// are checked under a real systemd: packaging/boot-test.sh.
#include "control/daemon/journal_sink.hpp"

#include <gtest/gtest.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace mcgw::daemon {
namespace {

TEST(JournalSink, PrioritiesAreSyslogs) {
  EXPECT_EQ(syslogPriority(spdlog::level::critical), 2);
  EXPECT_EQ(syslogPriority(spdlog::level::err), 3);
  EXPECT_EQ(syslogPriority(spdlog::level::warn), 4);
  EXPECT_EQ(syslogPriority(spdlog::level::info), 6);
  EXPECT_EQ(syslogPriority(spdlog::level::debug), 7);
  EXPECT_EQ(syslogPriority(spdlog::level::trace), 7);
}

TEST(JournalSink, UsedOnlyWhenJournalStreamIsOurStderr) {
  struct stat st {};
  ASSERT_EQ(::fstat(STDERR_FILENO, &st), 0);
  const std::string mine = std::to_string(static_cast<unsigned long long>(st.st_dev)) + ":" +
                           std::to_string(static_cast<unsigned long long>(st.st_ino));
  ::unsetenv("JOURNAL_STREAM");
  EXPECT_FALSE(stderrIsJournal());
  ::setenv("JOURNAL_STREAM", mine.c_str(), 1);
  EXPECT_TRUE(stderrIsJournal());
  // Inherited from a parent whose stderr was the journal, ours is not.
  ::setenv("JOURNAL_STREAM", (mine + "1").c_str(), 1);
  EXPECT_FALSE(stderrIsJournal());
  ::setenv("JOURNAL_STREAM", "garbage", 1);
  EXPECT_FALSE(stderrIsJournal());
  ::unsetenv("JOURNAL_STREAM");
}

TEST(JournalSink, WithoutJournaldTheLineGoesToStderrWithItsPriority) {
  // This machine runs no journald (no /run/systemd/journal/socket): the
  // sink falls back to stderr with the numeric prefix journald would read.
  struct stat st {};
  if (::stat("/run/systemd/journal/socket", &st) == 0) {
    GTEST_SKIP() << "journald runs here: the fallback cannot be seen";
  }
  char path[] = "/tmp/mcgw-journal-sink-XXXXXX";
  const int fd = ::mkstemp(path);
  ASSERT_GE(fd, 0);
  std::fflush(stderr);
  const int saved = ::dup(STDERR_FILENO);
  ASSERT_GE(::dup2(fd, STDERR_FILENO), 0);
  {
    auto sink = std::make_shared<JournalSink>();
    sink->set_pattern("%v");
    sink->setConfig("0123456789ab");
    spdlog::logger log("t", sink);
    log.error("reload of {} refused", "/etc/mcgw/mcgw.yaml");
    log.info("a 100% plain line");
  }
  std::fflush(stderr);
  ::dup2(saved, STDERR_FILENO);
  ::close(saved);
  ::close(fd);
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  ::unlink(path);
  EXPECT_EQ(text.str(), "<3>reload of /etc/mcgw/mcgw.yaml refused\n<6>a 100% plain line\n");
}

}  // namespace
}  // namespace mcgw::daemon
