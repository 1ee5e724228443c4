// An owned file descriptor, closed when it goes.
#pragma once

#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <utility>

namespace mcgw::core {

class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  Fd& operator=(Fd&& o) noexcept {
    if (this != &o) {
      reset();
      fd_ = std::exchange(o.fd_, -1);
    }
    return *this;
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { reset(); }

  void reset() {
    if (fd_ >= 0) {
      ::close(fd_);
      fd_ = -1;
    }
  }
  int get() const { return fd_; }
  explicit operator bool() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

// Reads exactly n bytes into p (retrying on EINTR): 0, or the errno of the
// failure (EIO when the file ended early).
inline int readFully(int fd, void* p, size_t n) {
  auto* out = static_cast<char*>(p);
  size_t got = 0;
  while (got < n) {
    const ssize_t r = ::read(fd, out + got, n - got);
    if (r < 0 && errno == EINTR) {
      continue;
    }
    if (r <= 0) {
      return r < 0 ? errno : EIO;
    }
    got += static_cast<size_t>(r);
  }
  return 0;
}

}  // namespace mcgw::core
