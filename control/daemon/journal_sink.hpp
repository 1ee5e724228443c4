// mcgwd's log lines as structured journal entries when systemd started it
// with stderr connected to the journal (docs/operations.md, "Logs"): each
// entry has PRIORITY (from the spdlog level), SYSLOG_IDENTIFIER=mcgwd and
// MCGW_CONFIG, the first 12 hex digits of the config in force, so that
// `journalctl -u mcgw -p err` finds refused reloads and
// `journalctl -u mcgw MCGW_CONFIG=...` one config's lines.
//
// Written here rather than spdlog's systemd_sink: that one sends no field of
// our own.  The message is the escaped text (EscapingSink in main.cpp runs
// first), so no field can be forged by a name in it.
#pragma once

#include <spdlog/sinks/base_sink.h>

#include <mutex>
#include <string>

namespace mcgw::daemon {

class JournalSink : public spdlog::sinks::base_sink<std::mutex> {
 public:
  JournalSink();
  // The config in force, for MCGW_CONFIG (any thread).
  void setConfig(const std::string& checksum12);

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override;
  void flush_() override {}

 private:
  std::string config_;  // under base_sink's mutex
  // journald's socket was there at the start: sd_journal_send drops
  // entries silently without it, so then lines go to stderr.
  bool journald_ = false;
};

// syslog(3) priority of an spdlog level: critical 2, error 3, warn 4,
// info 6, debug and trace 7.
int syslogPriority(spdlog::level::level_enum level);

// True when JOURNAL_STREAM names the device and inode of our stderr (what
// systemd sets for StandardError=journal): logging there goes to journald.
bool stderrIsJournal();

}  // namespace mcgw::daemon
