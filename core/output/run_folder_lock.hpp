#pragma once
// A run folder belongs to one run while it trains. The process that trains it (the
// launcher, the one process, or rank 0 under torchrun or Slurm) holds an exclusive flock
// on <folder>/.plait-lock for the whole run, with its pid written in it; the kernel lets
// go when that process ends, however it ends, so a run that died never blocks the next.
// A run that would write into a folder another live run holds ([checkpoint] resume =
// "auto", a restart started twice) is refused naming that run.
#include <string>

namespace plait {

class RunFolderLock {
 public:
  RunFolderLock() = default;
  // Takes the folder's lock (the folder exists), or refuses naming the run that holds it.
  explicit RunFolderLock(const std::string& folder);
  ~RunFolderLock();
  RunFolderLock(RunFolderLock&& other) noexcept;
  RunFolderLock& operator=(RunFolderLock&& other) noexcept;
  RunFolderLock(const RunFolderLock&) = delete;
  RunFolderLock& operator=(const RunFolderLock&) = delete;

 private:
  int fd_ = -1;
};

// Refuses, without taking it, a folder whose lock a live run holds (checked before launch).
void check_run_folder_free(const std::string& folder);

// The run folder made (fresh) or reused (a restarted run's: the steps after `resume_step`
// leave metrics.jsonl), and held: the lock comes before anything in it is written.
RunFolderLock claim_run_folder(const std::string& folder, bool reuse, int64_t resume_step);

}  // namespace plait
