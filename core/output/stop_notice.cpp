#include "output/stop_notice.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <chrono>
#include <thread>

#include "distributed/flight_recorder.hpp"
#include "plait/sdk/error.hpp"
#include "output/run_status.hpp"

namespace plait {
namespace {

std::atomic<int> g_signal{0};
std::atomic<int> g_sender{0};
int g_pipe[2] = {-1, -1};

void on_stop(int sig, siginfo_t* info, void*) {
  int expected = 0;
  if (!g_signal.compare_exchange_strong(expected, sig)) return;  // the first signal is the news
  g_sender.store(info != nullptr ? info->si_pid : 0);
  const char byte = 1;
  [[maybe_unused]] const ssize_t n = ::write(g_pipe[1], &byte, 1);
}

void write_all(int fd, const std::string& text) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n <= 0) return;  // a dead pipe (the launcher's) is no reason to stay
    done += static_cast<std::size_t>(n);
  }
}

std::string why(const StopNotice& notice, int sig, int sender) {
  const std::string who = notice.who.empty() ? concat("rank ", notice.rank) : notice.who;
  if (sig == launcher_death_signal() && notice.launcher_parent) {
    return concat(who, " stops: its launcher (plait run) died without stopping it (killed?)");
  }
  return concat(who, " stops: it got signal ", sig, " (", strsignal(sig), ")",
                sender > 0 ? concat(" from pid ", sender, sender == ::getppid() ? ", its parent" : "") : std::string());
}

void watch(StopNotice notice) {
  char byte = 0;
  while (::read(g_pipe[0], &byte, 1) < 0 && errno == EINTR) {
  }
  const int sig = g_signal.load();
  std::string line = why(notice, sig, g_sender.load());
  if (notice.how_to_continue) {
    try {
      line += notice.how_to_continue();
    } catch (const std::exception&) {
      // the stop is the news
    }
  }
  const bool launcher_gone = sig == launcher_death_signal() && notice.launcher_parent;
  // plait's launcher writes the rank's log from its stderr; with the launcher gone, the rank writes it.
  if (!notice.log_file.empty() && (launcher_gone || !notice.stderr_is_logged)) {
    const int fd = ::open(notice.log_file.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd >= 0) {
      write_all(fd, concat("[", utc_now(), "] [plait] [error] ", line, "\n"));
      ::close(fd);
    }
  }
  // A stop that was asked for is no error; the launcher's death is one.
  if (!launcher_gone) write_all(STDERR_FILENO, line + "\n");
  write_process_flight_record(line);
  // Under plait's launcher the launcher writes how the run ended, unless it is the one that
  // died; this rank says the job is stopping, at its last step, for the launcher's status to keep.
  if (!notice.status_folder.empty()) {
    write_every_step_from_now();
    try {
      RunStatus status(notice.status_folder, read_run_status(notice.status_folder).value_or(RunStatusRecord{}).steps);
      if (launcher_gone) {
        status.failed(line);
      } else if (!notice.launcher_parent) {
        status.stopped(line);
      } else {
        status.stopping(line);
      }
    } catch (const std::exception&) {
      // Nothing more can be said: the folder is gone or full.
    }
  }
  ::_exit(128 + sig);
}

}  // namespace

int launcher_death_signal() { return SIGUSR2; }

void yield_to_stop_notice() {
  if (g_signal.load() == 0) return;
  for (int i = 0; i < 100; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the watcher exits
}

void install_stop_notice(const StopNotice& notice) {
  ::signal(SIGPIPE, SIG_IGN);  // a dead launcher's pipe must not kill the rank silently
  PLAIT_CHECK(::pipe2(g_pipe, O_CLOEXEC) == 0, concat("cannot create a pipe: ", std::strerror(errno)),
              "check the process's file limits");
  struct sigaction sa {};
  sa.sa_sigaction = on_stop;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGTERM, SIGINT, SIGHUP, launcher_death_signal()}) sigaction(sig, &sa, nullptr);
  std::thread(watch, notice).detach();
  if (notice.launcher_parent) ::prctl(PR_SET_PDEATHSIG, launcher_death_signal());
}

}  // namespace plait
