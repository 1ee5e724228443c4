// Runs an external program (vtysh, frr-reload.py) to completion with a time
// limit and bounded output.  Blocking: call it off the control loop
// (EventLoop::runOffLoop).  Written by hand over posix_spawn and poll: the
// libraries that do this (Boost.Process, reproc) are not in our set, and
// what we need is a page.
#pragma once

#include <chrono>
#include <string>
#include <vector>

namespace mcgw::core {

struct ProcessResult {
  bool started = false;  // false: the program could not be run (error says why)
  bool timed_out = false;
  int exit_code = -1;  // 128 + signal when a signal ended it
  std::string out;     // stdout, at most max_output bytes (truncated says so)
  std::string err;     // stderr, likewise
  bool truncated = false;
  std::string error;

  bool ok() const { return started && !timed_out && exit_code == 0; }
  // One line for logs and status: "exit 1: <first line of stderr>", ...
  std::string describe() const;
};

// argv[0] is the program's path (no PATH search).  stdin is /dev/null.  On
// timeout the process group is killed (SIGKILL) and reaped.
ProcessResult runProcess(const std::vector<std::string>& argv, std::chrono::milliseconds timeout,
                         size_t max_output = 64u << 20);

}  // namespace mcgw::core
