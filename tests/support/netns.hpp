// Test support: a private network namespace for the calling thread, and
// what a test asks of the interfaces in it.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <net/if.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdint>
#include <cstring>

namespace mcgw::test {

// Moves the calling thread into a new, unnamed network namespace and back.
// Nothing outside the test can see it, and the kernel removes it (with the
// interfaces made in it and what hangs off them) when the test leaves it,
// even on a crash.  Commands the thread spawns run inside it.
class PrivateNetns {
 public:
  PrivateNetns() {
    orig_ = ::open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
    if (orig_ >= 0 && ::unshare(CLONE_NEWNET) == 0) {
      ok_ = true;
    }
  }
  ~PrivateNetns() {
    if (ok_) {
      EXPECT_EQ(::setns(orig_, CLONE_NEWNET), 0) << std::strerror(errno);
    }
    if (orig_ >= 0) {
      ::close(orig_);
    }
  }
  PrivateNetns(const PrivateNetns&) = delete;
  PrivateNetns& operator=(const PrivateNetns&) = delete;
  bool ok() const { return ok_; }

 private:
  int orig_ = -1;
  bool ok_ = false;
};

// The MAC address of an interface in the calling thread's namespace, or all
// zeros.  Asked of the kernel through a socket: /sys/class/net shows the
// namespace sysfs was mounted in, not the thread's.
inline std::array<uint8_t, 6> macOf(const char* ifname) {
  std::array<uint8_t, 6> mac{};
  const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  ifreq req{};
  std::strncpy(req.ifr_name, ifname, IFNAMSIZ - 1);
  if (fd >= 0 && ::ioctl(fd, SIOCGIFHWADDR, &req) == 0) {
    std::memcpy(mac.data(), req.ifr_hwaddr.sa_data, mac.size());
  }
  if (fd >= 0) {
    ::close(fd);
  }
  return mac;
}

}  // namespace mcgw::test
