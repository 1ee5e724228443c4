#include "control/daemon/journal_sink.hpp"

#include <sys/stat.h>
#include <systemd/sd-journal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace mcgw::daemon {

int syslogPriority(spdlog::level::level_enum level) {
  switch (level) {
    case spdlog::level::critical:
      return 2;
    case spdlog::level::err:
      return 3;
    case spdlog::level::warn:
      return 4;
    case spdlog::level::info:
      return 6;
    default:
      return 7;
  }
}

bool stderrIsJournal() {
  const char* env = std::getenv("JOURNAL_STREAM");
  if (env == nullptr) {
    return false;
  }
  unsigned long long dev = 0, ino = 0;
  if (std::sscanf(env, "%llu:%llu", &dev, &ino) != 2) {
    return false;
  }
  struct stat st {};
  return ::fstat(STDERR_FILENO, &st) == 0 && static_cast<unsigned long long>(st.st_dev) == dev &&
         static_cast<unsigned long long>(st.st_ino) == ino;
}

JournalSink::JournalSink() {
  struct stat st {};
  journald_ = ::stat("/run/systemd/journal/socket", &st) == 0 && S_ISSOCK(st.st_mode);
}

void JournalSink::setConfig(const std::string& checksum12) {
  std::lock_guard lock(mutex_);
  config_ = checksum12;
}

void JournalSink::sink_it_(const spdlog::details::log_msg& msg) {
  const std::string_view text(msg.payload.data(), msg.payload.size());
  const int r = !journald_ ? -1
                           : sd_journal_send("MESSAGE=%.*s", static_cast<int>(text.size()),
                                             text.data(), "PRIORITY=%d", syslogPriority(msg.level),
                                             "SYSLOG_IDENTIFIER=mcgwd", "MCGW_CONFIG=%s",
                                             config_.c_str(), nullptr);
  if (r < 0) {
    // journald away: the line still goes to stderr (the journal's stream,
    // or wherever it points), with its level in the prefix journald reads.
    std::fprintf(stderr, "<%d>%.*s\n", syslogPriority(msg.level), static_cast<int>(text.size()),
                 text.data());
  }
}

}  // namespace mcgw::daemon
