#include "run/subprocess.hpp"

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

int run_command(const std::vector<std::string>& argv, const std::string& log_path,
                const std::atomic<bool>* interrupted) {
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
  // The caller's signal handler interrupts waitpid (EINTR): pass the interrupt on once.
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) break;
    if (interrupted != nullptr && interrupted->load() && !forwarded) {
      ::kill(pid, SIGINT);
      forwarded = true;
    }
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace plait
