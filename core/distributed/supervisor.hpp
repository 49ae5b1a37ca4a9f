#pragma once
// plait's launcher: starts this node's ranks as child processes, writes each rank's
// output to rank-<r>.log (echoing one rank's to the console), and supervises them. When a
// rank dies, the others (on every node, through the job's abort channel) are stopped
// within seconds and the launcher fails naming the rank, how it ended, and the last lines
// of its log.
#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "plait/sdk/context.hpp"

namespace plait {

// What a rank said when it failed with one of plait's errors (the rank's own sentence,
// better than the last lines of its log).
struct RankFailure {
  int rank = 0;
  std::string message, hint;
  // The rank failed because a peer vanished (its connection closed): an echo of another
  // rank's fault, which the launcher names instead when it can.
  bool peer_lost = false;
};

// Whether a rank's error says only that a peer went away or failed first: gloo's words
// for a dead process on the other end, and plait's for a save another rank abandoned.
bool says_peer_lost(const std::string& message);
inline constexpr const char* kAnotherRanksPartFailed = "another rank's part failed first,";

// How launchers of one job tell each other to stop (through the job's store).
class AbortChannel {
 public:
  virtual ~AbortChannel() = default;
  virtual void post(const std::string& reason) = 0;
  // A stop the user asked for (a signal to one launcher): the others stop as asked too,
  // not as failed.
  virtual void post_stop(const std::string& reason, int /*signal*/) { post(reason); }
  virtual std::optional<std::string> poll() = 0;
  // The signal posted with the stop that poll() returned, or 0 when it was a failure.
  virtual int stop_signal() { return 0; }
  // What ranks reported they were waiting for, as "rank r: ..." lines (hang reports).
  virtual std::vector<std::string> pending_operations() { return {}; }
  // What `rank` reported when it failed, if it did (a killed rank cannot).
  virtual std::optional<RankFailure> rank_failure(int rank) { return std::nullopt; }
  // The first report, by rank, of a rank that failed in its own words (not peer_lost).
  virtual std::optional<RankFailure> first_own_failure() { return std::nullopt; }
  // A node lost to this one, in a sentence: another node silent for `quiet` or more, or
  // the channel itself gone (node 0's store no longer answers).
  virtual std::optional<std::string> lost(std::chrono::milliseconds /*quiet*/) { return std::nullopt; }
};

struct RankLaunch {
  int rank = 0;
  int local_rank = 0;
  std::map<std::string, std::string> env;  // added to this process's environment
};

struct SupervisorSpec {
  std::string executable;
  std::vector<std::string> args;  // argv[1..]
  std::vector<RankLaunch> ranks;
  std::string run_dir;
  int console_rank = 0;  // the global rank whose output is echoed; -1 for none
  std::string node;      // "node 0 of 2", for messages
  AbortChannel* abort = nullptr;
  std::chrono::milliseconds grace{3000};  // SIGTERM, then SIGKILL after this
  std::function<void()> on_tick;          // called about every 100 ms while the ranks run
  // Called once the ranks are to be stopped (a failure, or a stop asked for), before their
  // grace period: why, in a sentence.
  std::function<void(const std::string&)> on_stopping;
};

// Why the ranks were stopped early: the first failure in its own words, which rank it was
// (-1: not one of this node's, or none), whether the launcher itself was told to stop
// (a job is not restarted after that), with which signal, and when the launcher noticed it.
class JobStopped : public Error {
 public:
  JobStopped(const Error& e, int rank, bool interrupted, int signal = 0)
      : Error(e.what(), e.hint(), e.origin()), rank(rank), interrupted(interrupted), signal(signal) {}
  int rank = -1;
  bool interrupted = false;
  int signal = 0;
  std::chrono::system_clock::time_point noticed = std::chrono::system_clock::now();
};

// Returns when every rank has exited 0; throws JobStopped describing the first failure.
void supervise(const SupervisorSpec& spec, Logger& log);

}  // namespace plait
