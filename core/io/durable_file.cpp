#include "io/durable_file.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include <fcntl.h>
#include <unistd.h>

#include "plait/sdk/error.hpp"

namespace plait {
namespace {
constexpr int64_t kChunk = int64_t{8} << 20;
constexpr int64_t kDirtyChunks = 2;  // chunks behind the newest whose writeback may still run
}  // namespace

DurableFile::DurableFile(std::string path) : path_(std::move(path)), partial_(path_ + ".partial") {
  fd_ = ::open(partial_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  PLAIT_CHECK(fd_ >= 0, concat("cannot write ", partial_, ": ", std::strerror(errno)), "check that the folder is writable");
}

DurableFile::~DurableFile() {
  if (fd_ < 0) return;
  ::close(fd_);
  std::error_code ignored;
  std::filesystem::remove(partial_, ignored);
}

void DurableFile::write(const char* data, std::size_t n) {
  while (n > 0) {
    // In chunks: one write() of a whole tensor would leave no writeback to overlap.
    const ssize_t w = ::write(fd_, data, std::min<std::size_t>(n, kChunk));
    if (w < 0 && errno == EINTR) continue;
    PLAIT_CHECK(w > 0, concat("writing ", partial_, " failed: ", std::strerror(errno)), "check free disk space");
    data += w;
    n -= static_cast<std::size_t>(w);
    bytes_ += w;
    write_back(false);
  }
}

void DurableFile::write_back(bool all) {
#ifdef __linux__
  while (bytes_ - flushed_ >= kChunk || (all && bytes_ > flushed_)) {
    const int64_t n = std::min(kChunk, bytes_ - flushed_);
    ::sync_file_range(fd_, flushed_, n, SYNC_FILE_RANGE_WRITE);
    flushed_ += n;
  }
  while (flushed_ - settled_ > kDirtyChunks * kChunk) {
    ::sync_file_range(fd_, settled_, kChunk,
                      SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER);
    ::posix_fadvise(fd_, settled_, kChunk, POSIX_FADV_DONTNEED);
    settled_ += kChunk;
  }
#else
  (void)all;
#endif
}

void DurableFile::commit() {
  write_back(true);
  const bool synced = ::fsync(fd_) == 0;
  const std::string why = std::strerror(errno);
  ::close(fd_);
  fd_ = -1;
  if (!synced) {
    std::error_code ignored;
    std::filesystem::remove(partial_, ignored);
    throw Error(concat("fsync of ", partial_, " failed: ", why), "check the disk");
  }
  std::filesystem::rename(partial_, path_);
}

}  // namespace plait
