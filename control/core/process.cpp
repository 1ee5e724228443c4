#include "control/core/process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

extern char** environ;

namespace mcgw::core {

std::string ProcessResult::describe() const {
  if (!started) {
    return "could not run: " + error;
  }
  std::string first = err.substr(0, err.find('\n'));
  if (first.empty()) {
    first = out.substr(0, out.find('\n'));
  }
  if (first.size() > 300) {
    first.resize(300);
  }
  std::string head = timed_out ? "timed out" : "exit " + std::to_string(exit_code);
  return first.empty() ? head : head + ": " + first;
}

namespace {

struct Pipe {
  int fd[2] = {-1, -1};
  ~Pipe() {
    for (int f : fd) {
      if (f >= 0) {
        close(f);
      }
    }
  }
};

}  // namespace

ProcessResult runProcess(const std::vector<std::string>& argv, std::chrono::milliseconds timeout,
                         size_t max_output) {
  ProcessResult r;
  if (argv.empty()) {
    r.error = "no program";
    return r;
  }
  Pipe out, err;
  if (pipe2(out.fd, O_CLOEXEC) != 0 || pipe2(err.fd, O_CLOEXEC) != 0) {
    r.error = std::string("pipe: ") + strerror(errno);
    return r;
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, out.fd[1], 1);
  posix_spawn_file_actions_adddup2(&fa, err.fd[1], 2);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  // Its own process group, so a timeout kills what it started too; default
  // signal dispositions and an empty mask (mcgwd blocks signals for sd-event).
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setflags(&attr,
                           POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  std::vector<char*> args;
  for (const auto& a : argv) {
    args.push_back(const_cast<char*>(a.c_str()));
  }
  args.push_back(nullptr);
  pid_t pid = -1;
  int rc = posix_spawn(&pid, argv[0].c_str(), &fa, &attr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    r.error = argv[0] + ": " + strerror(rc);
    return r;
  }
  r.started = true;
  close(out.fd[1]);
  close(err.fd[1]);
  out.fd[1] = err.fd[1] = -1;

  const auto deadline = std::chrono::steady_clock::now() + timeout;
  pollfd fds[2] = {{out.fd[0], POLLIN, 0}, {err.fd[0], POLLIN, 0}};
  std::string* sinks[2] = {&r.out, &r.err};
  int open_fds = 2;
  char buf[65536];
  while (open_fds > 0) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      r.timed_out = true;
      break;
    }
    int n = poll(fds, 2, static_cast<int>(left.count()));
    if (n < 0 && errno != EINTR) {
      r.error = std::string("poll: ") + strerror(errno);
      r.timed_out = true;  // treated as a failure: the child is killed below
      break;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) {
        continue;
      }
      ssize_t got = read(fds[i].fd, buf, sizeof buf);
      if (got > 0) {
        size_t room = max_output > sinks[i]->size() ? max_output - sinks[i]->size() : 0;
        if (static_cast<size_t>(got) > room) {
          r.truncated = true;
        }
        sinks[i]->append(buf, std::min(room, static_cast<size_t>(got)));
      } else if (got == 0 || (errno != EINTR && errno != EAGAIN)) {
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  if (r.timed_out) {
    kill(-pid, SIGKILL);
  }
  // Its pipes are closed; it may still linger (or hang): wait until the
  // deadline, then kill it.
  int status = 0;
  while (true) {
    pid_t w = waitpid(pid, &status, WNOHANG);
    if (w == pid || (w < 0 && errno != EINTR)) {
      break;
    }
    if (w == 0 && std::chrono::steady_clock::now() >= deadline && !r.timed_out) {
      r.timed_out = true;
      kill(-pid, SIGKILL);
    }
    if (w == 0) {
      usleep(1000);
    }
  }
  if (WIFEXITED(status)) {
    r.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    r.exit_code = 128 + WTERMSIG(status);
  }
  return r;
}

}  // namespace mcgw::core
