// mcgwctl's side of `capture`: asks mcgwd over the API socket, then copies
// the pcapng stream that follows the answer line to a file or stdout.
#pragma once

#include <cstdint>
#include <string>

namespace mcgw::capture {

struct CaptureRequest {
  std::string target;
  std::string filter;
  uint64_t count = 0;
  uint32_t snaplen = 0;  // 0: mcgwd's default
  std::string output;    // a file, or "-" for stdout
};

// Exit codes as mcgwctl's: 0 done, 1 refused (or the output failed), 2 mcgwd
// unreachable.  Messages go to stderr.
int runCapture(const std::string& socket_path, const CaptureRequest& r);

}  // namespace mcgw::capture
