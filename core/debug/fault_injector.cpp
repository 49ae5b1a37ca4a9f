#include "debug/fault_injector.hpp"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <thread>

#include <nlohmann/json.hpp>

#include "log/logging.hpp"
#include "plait/sdk/error.hpp"

namespace plait {

FaultInjector::FaultInjector(const std::vector<FaultSpec>& faults, int rank, int attempt, std::string run_folder)
    : rank_(rank), attempt_(attempt), run_folder_(std::move(run_folder)) {
  for (const auto& f : faults) {
    if (f.rank == rank && f.attempt == attempt) faults_.push_back(f);
  }
  std::string list;
  for (const auto& f : faults_) list += (list.empty() ? "'" : ", '") + f.text + "'";
  if (!list.empty()) core_log().warn("rank ", rank, " will inject faults ([debug] faults, PLAIT_FAULTS): ", list);
}

void FaultInjector::record(const FaultSpec& fault, const std::string& where) const {
  if (run_folder_.empty()) return;
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  const std::string line =
      nlohmann::json{{"fault", fault.text},
                     {"rank", rank_},
                     {"attempt", attempt_},
                     {"where", where},
                     {"at_us", std::chrono::duration_cast<std::chrono::microseconds>(now).count()}}
          .dump() +
      "\n";
  // One write of one line with O_APPEND: ranks striking at once do not interleave.
  const int fd = ::open((run_folder_ + "/faults.jsonl").c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return;
  [[maybe_unused]] const ssize_t n = ::write(fd, line.data(), line.size());
  ::close(fd);
}

void FaultInjector::strike(const FaultSpec& fault, const std::string& where) {
  // The line goes to stderr first: the rank's log is what tells the fault from a real one.
  core_log().warn("rank ", rank_, ": injecting fault '", fault.text, "' ", where);
  flush_logs();
  record(fault, where);
  switch (fault.kind) {
    case FaultKind::kill: ::raise(SIGKILL); break;
    case FaultKind::segv: ::raise(SIGSEGV); break;  // as a crash would: the crash handler writes the record
    case FaultKind::exit: std::_Exit(1);
    case FaultKind::hang:
      // No progress, but the rank's threads still answer signals (a stop, SIGUSR1).
      while (true) std::this_thread::sleep_for(std::chrono::hours(1));
    case FaultKind::abort: aborted_.store(&fault, std::memory_order_release); break;
    default: break;
  }
}

FaultInjector::InStep FaultInjector::at_step(int64_t step) {
  InStep in;
  for (const auto& f : faults_) {
    if (f.kind == FaultKind::slow) {
      if (step < f.step) continue;
      in.slow_ms += f.ms;
      if (slowed_.insert(&f).second) record(f, concat("from step ", step, " on"));  // once: the drill's proof it struck
    } else if (f.kind == FaultKind::nonfinite) {
      if (f.step != step) continue;
      core_log().warn("rank ", rank_, ": injecting fault '", f.text, "': this rank's loss of step ", step, " is nan");
      record(f, concat("the loss of step ", step));
      in.spoil_loss = true;
    } else if (f.op == 0 && f.step == step && f.kind != FaultKind::corrupt && f.kind != FaultKind::mismatch) {
      strike(f, concat("at the start of step ", step));
    }
  }
  return in;
}

bool FaultInjector::at_collective(const std::string& group, uint64_t seq) {
  bool mismatch = false;
  for (const auto& f : faults_) {
    if (f.op != seq || f.group != group) continue;
    if (f.kind == FaultKind::mismatch) {
      core_log().warn("rank ", rank_, ": injecting fault '", f.text, "': collective #", seq, " on ", group,
                      " goes out with half its size");
      record(f, concat("collective #", seq, " on group ", group));
      mismatch = true;
    } else {
      strike(f, concat("before collective #", seq, " on group ", group));
    }
  }
  return mismatch;
}

bool FaultInjector::corrupts(int64_t step) const {
  for (const auto& f : faults_) {
    if (f.kind == FaultKind::corrupt && f.step == step) {
      record(f, concat("the checkpoint of step ", step));
      return true;
    }
  }
  return false;
}

bool flip_byte(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return false;
  const off_t size = ::lseek(fd, 0, SEEK_END);
  const off_t at = size / 2;
  unsigned char byte = 0;
  const bool ok = size > 0 && ::pread(fd, &byte, 1, at) == 1 && (byte ^= 0xff, ::pwrite(fd, &byte, 1, at) == 1);
  ::close(fd);
  return ok;
}

}  // namespace plait
