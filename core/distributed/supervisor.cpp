#include "distributed/supervisor.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <thread>

#include <nlohmann/json.hpp>

#include "distributed/node_heartbeat.hpp"
#include "plait/sdk/error.hpp"

extern char** environ;

namespace plait {
namespace {

constexpr std::size_t kTailLines = 20;
std::atomic<int> g_signal{0};

void on_signal(int sig) { g_signal.store(sig); }

struct Child {
  RankLaunch launch;
  pid_t pid = -1;
  int out = -1;  // read end of the child's stdout+stderr
  std::ofstream log;
  std::string log_path;
  std::string partial;
  std::deque<std::string> tail;
  bool running = true;
  int status = 0;
  int ended_order = 0;  // 1 for the first rank reaped, 2 for the next, ...
};

std::string describe_exit(int status) {
  if (WIFEXITED(status)) return concat("exited with code ", WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    return concat("was killed by signal ", WTERMSIG(status), " (", strsignal(WTERMSIG(status)), ")");
  }
  return concat("ended with status ", status);
}

bool failed(int status) { return !(WIFEXITED(status) && WEXITSTATUS(status) == 0); }

std::vector<char*> make_env(const std::map<std::string, std::string>& extra, std::vector<std::string>& storage) {
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry(*e);
    const std::string key = entry.substr(0, entry.find('='));
    if (extra.count(key) == 0) storage.push_back(entry);
  }
  for (const auto& [k, v] : extra) storage.push_back(k + "=" + v);
  std::vector<char*> out;
  for (auto& s : storage) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

void spawn(Child& child, const SupervisorSpec& spec) {
  int fds[2];
  PLAIT_CHECK(::pipe2(fds, O_CLOEXEC) == 0, concat("cannot create a pipe: ", std::strerror(errno)), "check process limits");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDERR_FILENO);
  std::vector<std::string> arg_storage = {spec.executable};
  arg_storage.insert(arg_storage.end(), spec.args.begin(), spec.args.end());
  std::vector<char*> argv;
  for (auto& a : arg_storage) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_storage;
  std::vector<char*> envp = make_env(child.launch.env, env_storage);
  const int rc = posix_spawn(&child.pid, spec.executable.c_str(), &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  ::close(fds[1]);
  PLAIT_CHECK(rc == 0, concat("cannot start rank ", child.launch.rank, ": ", std::strerror(rc)),
              "check that the plait executable is still in place");
  child.out = fds[0];
}

void take_output(Child& child, int console_rank) {
  char buf[8192];
  const ssize_t n = ::read(child.out, buf, sizeof(buf));
  if (n <= 0) {
    ::close(child.out);
    child.out = -1;
    if (!child.partial.empty()) {
      child.log << child.partial << '\n';
      child.tail.push_back(child.partial);
      child.partial.clear();
    }
    child.log.flush();
    return;
  }
  child.partial.append(buf, static_cast<std::size_t>(n));
  std::size_t start = 0, end;
  while ((end = child.partial.find('\n', start)) != std::string::npos) {
    const std::string line = child.partial.substr(start, end - start);
    child.log << line << '\n';
    // A rank's own error lines stay in its log: the launcher reports the failure itself, once.
    const bool error_line = line.rfind("error: ", 0) == 0 || line.rfind("  hint: ", 0) == 0;
    if (child.launch.rank == console_rank && !error_line) std::cout << line << '\n' << std::flush;
    child.tail.push_back(line);
    if (child.tail.size() > kTailLines) child.tail.pop_front();
    start = end + 1;
  }
  child.partial.erase(0, start);
  child.log.flush();
}

void pump(std::vector<Child>& children, int console_rank, int timeout_ms) {
  std::vector<pollfd> fds;
  std::vector<Child*> owners;
  for (auto& c : children) {
    if (c.out >= 0) {
      fds.push_back({c.out, POLLIN, 0});
      owners.push_back(&c);
    }
  }
  if (fds.empty()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(timeout_ms));
    return;
  }
  if (::poll(fds.data(), fds.size(), timeout_ms) <= 0) return;
  for (std::size_t i = 0; i < fds.size(); ++i) {
    if (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) take_output(*owners[i], console_rank);
  }
}

void reap(std::vector<Child>& children) {
  static int ended = 0;
  for (auto& c : children) {
    if (!c.running) continue;
    int status = 0;
    if (::waitpid(c.pid, &status, WNOHANG) == c.pid) {
      c.running = false;
      c.status = status;
      c.ended_order = ++ended;
    }
  }
}

void stop_all(std::vector<Child>& children, const SupervisorSpec& spec) {
  for (auto& c : children) {
    if (c.running) ::kill(c.pid, SIGTERM);
  }
  const auto deadline = std::chrono::steady_clock::now() + spec.grace;
  while (std::chrono::steady_clock::now() < deadline) {
    reap(children);
    bool any = false;
    for (auto& c : children) any = any || c.running;
    if (!any) break;
    pump(children, -1, 50);
  }
  for (auto& c : children) {
    if (c.running) {
      ::kill(c.pid, SIGKILL);
      ::waitpid(c.pid, &c.status, 0);
      c.running = false;
    }
  }
  for (auto& c : children) {
    while (c.out >= 0) take_output(c, -1);
  }
}

std::string failure_report(const Child& c, const SupervisorSpec& spec, const std::vector<std::string>& pending) {
  std::string text = concat("rank ", c.launch.rank, " (pid ", c.pid, ", local rank ", c.launch.local_rank, " on ",
                            spec.node, ") ", describe_exit(c.status), "; the other ranks were stopped.\n  last lines of ",
                            c.log_path, ":");
  for (const auto& line : c.tail) text += "\n    | " + line;
  if (c.tail.empty()) text += "\n    (no output)";
  if (!pending.empty()) {
    text += "\n  operations ranks were waiting for:";
    for (const auto& p : pending) text += "\n    " + p;
  }
  return text;
}

// How surely a failed rank is where the fault began: 2 when it crashed or failed in its own
// words, 1 when it ended without saying why, 0 when it said only that a peer vanished.
int origin_weight(const Child& c, const SupervisorSpec& spec) {
  if (WIFSIGNALED(c.status)) return 2;
  const auto report = spec.abort ? spec.abort->rank_failure(c.launch.rank) : std::nullopt;
  if (!report) return 1;
  return report->peer_lost ? 0 : 2;
}

const Child* likeliest_origin(const std::vector<Child>& children, const SupervisorSpec& spec) {
  const Child* best = nullptr;
  int best_weight = -1;
  for (const auto& c : children) {
    if (c.running || !failed(c.status)) continue;
    const int w = origin_weight(c, spec);
    if (w > best_weight || (w == best_weight && c.ended_order < best->ended_order)) {
      best = &c;
      best_weight = w;
    }
  }
  return best;
}

// A dead rank's peers fail too, often before the launcher reaps it: when the failure found
// is only such an echo, wait up to a second for its origin to end or report, on this node
// or another, and while a rank of this node still runs, up to the grace: a crashing rank
// writes its flight record before it dies, which on a loaded machine can take seconds (CI:
// a peer's "connection closed" named instead of the segfault).
const Child* wait_for_origin(std::vector<Child>& children, const SupervisorSpec& spec) {
  const Child* origin = likeliest_origin(children, spec);
  const auto now = std::chrono::steady_clock::now();
  const auto elsewhere = now + std::min<std::chrono::milliseconds>(spec.grace, std::chrono::seconds(1));
  const auto here = now + std::min<std::chrono::milliseconds>(spec.grace, std::chrono::seconds(5));
  const auto waiting = [&] {
    const auto t = std::chrono::steady_clock::now();
    const bool any_running = std::any_of(children.begin(), children.end(), [](const Child& c) { return c.running; });
    return t < elsewhere || (any_running && t < here);
  };
  while (origin_weight(*origin, spec) == 0 && waiting()) {
    if (spec.abort && spec.abort->first_own_failure()) break;
    pump(children, spec.console_rank, 50);
    reap(children);
    origin = likeliest_origin(children, spec);
  }
  return origin;
}

Error reported_failure(const RankFailure& cause, const SupervisorSpec& spec) {
  const std::string log = (std::filesystem::path(spec.run_dir) / concat("rank-", cause.rank, ".log")).string();
  return Error(cause.message, concat(cause.hint, cause.hint.empty() ? "" : "; ", "reported by rank ", cause.rank,
                                     ", whose log is ", log));
}

// The rank where the fault began, in its own words when it said why, else with its log's
// last lines; a rank that only lost a peer gives way to a rank elsewhere that said more.
JobStopped rank_failure_error(const Child& c, const SupervisorSpec& spec, const std::vector<std::string>& pending) {
  const auto own = spec.abort ? spec.abort->rank_failure(c.launch.rank) : std::nullopt;
  if (own && !own->peer_lost) return JobStopped(reported_failure(*own, spec), c.launch.rank, false);
  if (origin_weight(c, spec) == 0) {
    if (auto elsewhere = spec.abort->first_own_failure()) {
      return JobStopped(reported_failure(*elsewhere, spec), elsewhere->rank, false);
    }
  }
  if (own) return JobStopped(reported_failure(*own, spec), c.launch.rank, false);
  return JobStopped(Error(failure_report(c, spec, pending), "the rank's log has its full output; rerun with -v for more"),
                    c.launch.rank, false);
}

// A rank that failed while another node fell silent failed because of it (its collective
// timed out, its peer's connection broke): the lost node is where the fault began.
JobStopped with_lost_node(JobStopped stopped, const SupervisorSpec& spec) {
  if (spec.abort == nullptr) return stopped;
  const auto lost = spec.abort->lost(NodeHeartbeat::kSilentWhileFailing);
  if (!lost) return stopped;
  std::string rank_said = stopped.what();
  rank_said = rank_said.substr(0, rank_said.find('\n'));
  JobStopped named(Error(concat(*lost, "; rank ", stopped.rank, " then failed: ", rank_said),
                         "check that node and the network between the nodes; the rank logs say more"),
                   stopped.rank, false);
  named.noticed = stopped.noticed;
  return named;
}

}  // namespace

bool says_peer_lost(const std::string& message) {
  for (const char* words :
       {"Connection closed by peer", "Connection reset by peer", "Broken pipe", "Socket closed", kAnotherRanksPartFailed}) {
    if (message.find(words) != std::string::npos) return true;
  }
  return false;
}

namespace {

// SIGINT and SIGTERM noted (g_signal) while supervising, the old handlers back after,
// however supervising ends.
class SignalsNoted {
 public:
  SignalsNoted() {
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int_);
    sigaction(SIGTERM, &sa, &old_term_);
    g_signal.store(0);
  }
  ~SignalsNoted() {
    sigaction(SIGINT, &old_int_, nullptr);
    sigaction(SIGTERM, &old_term_, nullptr);
  }
  SignalsNoted(const SignalsNoted&) = delete;
  SignalsNoted& operator=(const SignalsNoted&) = delete;

 private:
  struct sigaction old_int_ {}, old_term_ {};
};

// Every rank started, with its log, and listed in ranks.json.
std::vector<Child> spawn_all(const SupervisorSpec& spec, Logger& log) {
  std::vector<Child> children(spec.ranks.size());
  nlohmann::ordered_json listing = nlohmann::json::array();
  for (std::size_t i = 0; i < spec.ranks.size(); ++i) {
    Child& c = children[i];
    c.launch = spec.ranks[i];
    c.log_path = (std::filesystem::path(spec.run_dir) / concat("rank-", c.launch.rank, ".log")).string();
    c.log.open(c.log_path, std::ios::app);
    spawn(c, spec);
    listing.push_back({{"rank", c.launch.rank}, {"local_rank", c.launch.local_rank}, {"pid", c.pid}, {"log", c.log_path}});
  }
  std::ofstream(std::filesystem::path(spec.run_dir) / "ranks.json") << listing.dump(2) << '\n';
  log.info("started ", children.size(), " ranks on ", spec.node, "; logs in ", spec.run_dir, "/rank-<r>.log");
  return children;
}

// Stops this node's ranks and ends supervising with `stopped`, noticed at `noticed`.
[[noreturn]] void stop_with(JobStopped stopped, const std::string& stopping, std::chrono::system_clock::time_point noticed,
                            std::vector<Child>& children, const SupervisorSpec& spec) {
  if (spec.on_stopping) spec.on_stopping(stopping);
  stop_all(children, spec);
  stopped.noticed = noticed;
  throw stopped;
}

// What another launcher posted ends this node's ranks: with its signal when it was told to stop.
[[noreturn]] void stop_because(const std::string& reason, int sig, std::chrono::system_clock::time_point noticed,
                               std::vector<Child>& children, const SupervisorSpec& spec) {
  stop_with(JobStopped(Error(concat("stopped because ", reason), sig != 0 ? "" : "see that node's launcher output and rank logs"),
                       -1, false, sig),
            concat("stopping because ", reason), noticed, children, spec);
}

// A Ctrl-C (or SIGTERM) reaches the ranks too, and their ends are its echo.
[[noreturn]] void stop_for_signal(int sig, std::vector<Child>& children, const SupervisorSpec& spec) {
  const auto noticed = std::chrono::system_clock::now();
  if (spec.abort) spec.abort->post_stop(concat("the launcher on ", spec.node, " got signal ", sig), sig);
  const std::string why = concat("interrupted by signal ", sig, " (", strsignal(sig), ")");
  stop_with(JobStopped(Error(concat(why, "; every rank was stopped"), ""), -1, /*interrupted=*/true, sig),
            concat(why, ": stopping every rank"), noticed, children, spec);
}

// A rank ended: the one it started from is named, the others stopped.
[[noreturn]] void stop_for_rank_end(std::vector<Child>& children, const SupervisorSpec& spec) {
  const auto noticed = std::chrono::system_clock::now();
  const Child& c = *wait_for_origin(children, spec);
  // Another launcher told to stop posts that before stopping its ranks: a rank here that ended
  // after is that stop's echo, and this node stops as asked too, not as failed.
  if (const int sig = spec.abort ? spec.abort->stop_signal() : 0; sig != 0) {
    stop_because(spec.abort->poll().value_or(concat("another launcher got signal ", sig)), sig, noticed, children, spec);
  }
  std::vector<std::string> pending = spec.abort ? spec.abort->pending_operations() : std::vector<std::string>{};
  if (spec.abort) spec.abort->post(concat("rank ", c.launch.rank, " on ", spec.node, " ", describe_exit(c.status)));
  stop_with(with_lost_node(rank_failure_error(c, spec, pending), spec),
            concat("rank ", c.launch.rank, " ", describe_exit(c.status), ": stopping the others"), noticed, children, spec);
}

}  // namespace

void supervise(const SupervisorSpec& spec, Logger& log) {
  const SignalsNoted signals;
  std::vector<Child> children = spawn_all(spec, log);
  auto last_abort_check = std::chrono::steady_clock::now();
  while (true) {
    pump(children, spec.console_rank, 100);
    reap(children);
    // Before any rank's end: a Ctrl-C reaches the ranks too, and their ends are its echo.
    if (const int sig = g_signal.load()) stop_for_signal(sig, children, spec);
    if (likeliest_origin(children, spec) != nullptr) stop_for_rank_end(children, spec);
    bool any_running = false;
    for (auto& c : children) any_running = any_running || c.running || c.out >= 0;
    if (!any_running) break;
    if (spec.abort && std::chrono::steady_clock::now() - last_abort_check > std::chrono::milliseconds(500)) {
      last_abort_check = std::chrono::steady_clock::now();
      std::optional<std::string> reason = spec.abort->poll();
      if (!reason) reason = spec.abort->lost(std::chrono::milliseconds::max());  // this node's store is gone
      // Another launcher told to stop: this node stops as asked too, with that signal.
      if (reason) stop_because(*reason, spec.abort->stop_signal(), std::chrono::system_clock::now(), children, spec);
    }
    if (spec.on_tick) spec.on_tick();
  }
}

}  // namespace plait
