#include "util/subprocess.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>

#include "plait/sdk/error.hpp"

extern char** environ;

namespace plait {
namespace {

std::atomic<int> g_stop_signal{0};
std::atomic<bool> g_catching{false};

void on_stop_signal(int sig) {
  int none = 0;
  g_stop_signal.compare_exchange_strong(none, sig);
}

}  // namespace

const std::atomic<int>& catch_stop_signals() {
  if (!g_catching.exchange(true)) {
    struct sigaction sa {};
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0;  // no SA_RESTART: the wait for the command returns EINTR
    for (const int sig : {SIGINT, SIGTERM, SIGHUP}) sigaction(sig, &sa, nullptr);
  }
  return g_stop_signal;
}

int run_command(const std::vector<std::string>& argv, const std::string& log_path) {
  const int fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  PLAIT_CHECK(fd >= 0, concat("cannot write ", log_path, ": ", std::strerror(errno)), "check the folder");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fd, STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, fd, STDERR_FILENO);
  std::vector<std::string> storage = argv;
  std::vector<char*> args;
  for (auto& a : storage) args.push_back(a.data());
  args.push_back(nullptr);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(fd);
  PLAIT_CHECK(rc == 0, concat("cannot start ", argv[0], ": ", std::strerror(rc)), "");
  int status = 0;
  bool forwarded = false;
  // A stop signal interrupts waitpid (EINTR): pass the same signal on once. One that came
  // before the command started is passed on at once.
  while (true) {
    if (const int sig = g_stop_signal.load(); sig != 0 && !forwarded) {
      ::kill(pid, sig);
      forwarded = true;
    }
    if (::waitpid(pid, &status, 0) >= 0 || errno != EINTR) break;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace plait
