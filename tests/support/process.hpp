// Test support: temporary directories, child processes, a NOTIFY_SOCKET
// listener, and running mcgwctl.  Header-only; used by component and lab tests.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace mcgw::test {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

inline const std::string kMcgwd = MCGW_BINARY_DIR "/control/daemon/mcgwd";
inline const std::string kMcgwctl = MCGW_BINARY_DIR "/control/cli/mcgwctl";

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "mcgw-test-XXXXXX").string();
    path_ = ::mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  fs::path path_;
};

inline void writeFile(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::trunc) << text;
}

inline std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A child process with stdout and stderr sent to files.
class Process {
 public:
  Process(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
          const std::string& log_path) {
    std::vector<std::string> envs;
    for (char** e = environ; *e; ++e) {
      std::string kv = *e;
      if (!env.count(kv.substr(0, kv.find('=')))) {
        envs.push_back(kv);
      }
    }
    for (const auto& [k, v] : env) {
      envs.push_back(k + "=" + v);
    }
    std::vector<char*> cargv, cenv;
    for (const auto& a : argv) {
      cargv.push_back(const_cast<char*>(a.c_str()));
    }
    cargv.push_back(nullptr);
    for (const auto& e : envs) {
      cenv.push_back(const_cast<char*>(e.c_str()));
    }
    cenv.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    posix_spawn(&pid_, cargv[0], &fa, nullptr, cargv.data(), cenv.data());
    posix_spawn_file_actions_destroy(&fa);
  }
  ~Process() {
    if (running()) {
      ::kill(pid_, SIGKILL);
      wait(5s);
    }
  }
  pid_t pid() const { return pid_; }
  bool running() { return pid_ > 0 && !exited_ && !poll(); }
  void signal(int sig) { ::kill(pid_, sig); }
  // Exit code (or 128 + signal); -1 if still running after timeout.
  int wait(std::chrono::milliseconds timeout) {
    auto until = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < until) {
      if (exited_ || poll()) {
        return code_;
      }
      std::this_thread::sleep_for(20ms);
    }
    return -1;
  }

 private:
  bool poll() {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      exited_ = true;
      code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    return exited_;
  }
  pid_t pid_ = -1;
  bool exited_ = false;
  int code_ = -1;
};

// Listens where NOTIFY_SOCKET points, as systemd does.  A thread keeps the
// socket drained, as systemd does: a full queue would block the daemon's
// sd_notify().
class NotifyListener {
 public:
  explicit NotifyListener(std::string path) : path_(std::move(path)) {
    fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::snprintf(a.sun_path, sizeof a.sun_path, "%s", path_.c_str());
    ::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a);
    timeval tv{0, 50000};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    reader_ = std::thread([this] {
      char buf[4096];
      while (!stop_) {
        ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
        if (n > 0) {
          std::lock_guard lock(mu_);
          messages_.emplace_back(buf, static_cast<size_t>(n));
        }
      }
    });
  }
  ~NotifyListener() {
    stop_ = true;
    reader_.join();
    ::close(fd_);
  }
  const std::string& path() const { return path_; }

  // Waits until a message at index >= from contains `line` (a "KEY=" line
  // matches any value); returns its index, or -1 on timeout.
  int waitFor(const std::string& line, std::chrono::milliseconds timeout, size_t from = 0) {
    auto until = std::chrono::steady_clock::now() + timeout;
    while (true) {
      {
        std::lock_guard lock(mu_);
        for (size_t i = from; i < messages_.size(); ++i) {
          if (hasLine(messages_[i], line)) {
            return static_cast<int>(i);
          }
        }
      }
      if (std::chrono::steady_clock::now() >= until) {
        return -1;
      }
      std::this_thread::sleep_for(10ms);
    }
  }
  std::vector<std::string> messages() {
    std::lock_guard lock(mu_);
    return messages_;
  }
  static bool hasLine(const std::string& msg, const std::string& line) {
    std::istringstream in(msg);
    for (std::string l; std::getline(in, l);) {
      if (l == line || (line.back() == '=' && l.rfind(line, 0) == 0)) {
        return true;
      }
    }
    return false;
  }

 private:
  std::string path_;
  int fd_;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::vector<std::string> messages_;
  std::thread reader_;
};

struct CommandResult {
  int code = -1;
  std::string out;
  std::string err;
};

// Runs a command line through sh, capturing stdout and stderr apart.
inline CommandResult run(const std::string& cmd) {
  TempDir tmp;
  std::string out = tmp.file("out"), err = tmp.file("err");
  int status = std::system((cmd + " >" + out + " 2>" + err).c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, readFile(out), readFile(err)};
}

}  // namespace mcgw::test
