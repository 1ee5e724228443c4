#include "control/daemon/last_good.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

namespace mcgw::daemon {

namespace {

constexpr size_t kMaxName = 200;  // below NAME_MAX (255) with room for ".last-good"

bool keep(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '.';
}

// FNV-1a: stable across builds, unlike std::hash.
uint64_t fnv1a(std::string_view s) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : s) {
    h = (h ^ c) * 1099511628211ull;
  }
  return h;
}

std::string errnoText(const std::string& what) {
  return what + ": " + std::strerror(errno);
}

}  // namespace

std::string lastGoodFileName(const std::string& config_path) {
  std::string_view p = config_path;
  while (!p.empty() && p.front() == '/') {
    p.remove_prefix(1);
  }
  while (!p.empty() && p.back() == '/') {
    p.remove_suffix(1);
  }
  std::string name;
  for (size_t i = 0; i < p.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(p[i]);
    if (c == '/') {
      name += '-';
    } else if (keep(c) && !(i == 0 && c == '.')) {
      name += static_cast<char>(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      name += buf;
    }
  }
  if (name.size() > kMaxName) {
    char buf[24];
    std::snprintf(buf, sizeof buf, "-%016llx", static_cast<unsigned long long>(fnv1a(config_path)));
    name = name.substr(0, kMaxName - 17) + buf;
  }
  return name + ".last-good";
}

LastGoodStore::LastGoodStore(std::string state_dir, const std::string& config_path)
    : dir_(std::move(state_dir)),
      path_((std::filesystem::path(dir_) / lastGoodFileName(config_path)).string()) {}

Result<bool, std::string> LastGoodStore::save(std::string_view text) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir_, ec)) {
    std::filesystem::create_directories(dir_, ec);
    if (ec) {
      return unexpected("cannot create " + dir_ + ": " + ec.message());
    }
  }
  // Whoever made it, the directory is ours alone (the config may hold secrets).
  if (struct stat st; ::stat(dir_.c_str(), &st) == 0 && (st.st_mode & 0777) != 0700) {
    if (::chmod(dir_.c_str(), 0700) != 0) {
      return unexpected(errnoText("cannot make " + dir_ + " mode 0700"));
    }
  }
  const std::string tmp = path_ + ".tmp";
  ::unlink(tmp.c_str());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) {
    return unexpected(errnoText("cannot write " + tmp));
  }
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      std::string e = errnoText("cannot write " + tmp);
      ::close(fd);
      ::unlink(tmp.c_str());
      return unexpected(e);
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    std::string e = errnoText("cannot write " + tmp);
    ::unlink(tmp.c_str());
    return unexpected(e);
  }
  if (::rename(tmp.c_str(), path_.c_str()) != 0) {
    std::string e = errnoText("cannot replace " + path_);
    ::unlink(tmp.c_str());
    return unexpected(e);
  }
  if (int dfd = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); dfd >= 0) {
    ::fsync(dfd);  // the rename itself survives a power cut
    ::close(dfd);
  }
  return true;
}

namespace {

std::chrono::system_clock::time_point modified(const struct stat& st) {
  auto since_epoch =
      std::chrono::seconds(st.st_mtim.tv_sec) + std::chrono::nanoseconds(st.st_mtim.tv_nsec);
  return std::chrono::system_clock::time_point(
      std::chrono::duration_cast<std::chrono::system_clock::duration>(since_epoch));
}

}  // namespace

std::optional<std::chrono::system_clock::time_point> LastGoodStore::savedAt() const {
  struct stat st;
  if (::lstat(path_.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return std::nullopt;
  }
  return modified(st);
}

Result<std::chrono::system_clock::time_point, std::string> LastGoodStore::usable() const {
  struct stat st;
  if (::lstat(path_.c_str(), &st) != 0) {
    return unexpected(errnoText(path_));
  }
  if (!S_ISREG(st.st_mode)) {
    return unexpected(path_ + " is not a regular file (a symbolic link is not followed)");
  }
  if (st.st_uid != ::geteuid()) {
    return unexpected(path_ + " is owned by uid " + std::to_string(st.st_uid) + ", not by uid " +
                      std::to_string(::geteuid()) + " (this mcgwd)");
  }
  if (st.st_mode & 022) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return unexpected(path_ + " may be written by others (mode " + mode + ")");
  }
  return modified(st);
}

}  // namespace mcgw::daemon
