#include "output/run_folder_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <utility>

#include "plait/sdk/error.hpp"
#include "output/run_folder.hpp"

namespace plait {
namespace fs = std::filesystem;
namespace {

std::string lock_path(const std::string& folder) { return (fs::path(folder) / ".plait-lock").string(); }

std::string holder(const std::string& folder) {
  std::ifstream in(lock_path(folder));
  std::string pid;
  std::getline(in, pid);
  return pid.empty() ? "" : concat(" (pid ", pid, ")");
}

[[noreturn]] void refuse_held(const std::string& folder) {
  throw Error(concat("the run folder ", folder, " is in use: a run is still training there", holder(folder)),
                "wait for it to end, stop it, or choose another --out; two runs never write into one folder");
}

}  // namespace

RunFolderLock::RunFolderLock(const std::string& folder) {
  fd_ = ::open(lock_path(folder).c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  PLAIT_CHECK(fd_ >= 0, concat("cannot open ", lock_path(folder), ": ", std::strerror(errno)),
              "check that the run folder is writable");
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    ::close(fd_);
    fd_ = -1;
    refuse_held(folder);
  }
  const std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd_, 0) == 0) [[maybe_unused]] const ssize_t n = ::pwrite(fd_, pid.data(), pid.size(), 0);
}

RunFolderLock::~RunFolderLock() {
  if (fd_ >= 0) ::close(fd_);  // closing lets go of the flock
}

RunFolderLock::RunFolderLock(RunFolderLock&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}

RunFolderLock& RunFolderLock::operator=(RunFolderLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

void check_run_folder_free(const std::string& folder) {
  const int fd = ::open(lock_path(folder).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;  // never held
  const bool held = ::flock(fd, LOCK_SH | LOCK_NB) != 0;
  ::close(fd);
  if (held) refuse_held(folder);
}

RunFolderLock claim_run_folder(const std::string& folder, bool reuse, int64_t resume_step) {
  if (!reuse) create_run_folder(folder);
  RunFolderLock lock(folder);
  if (reuse) reuse_run_folder(folder, resume_step);
  return lock;
}

}  // namespace plait
