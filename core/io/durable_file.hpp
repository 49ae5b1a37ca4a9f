#pragma once
// A file written for keeps: bytes go to `path`.partial, the kernel is told to write each
// few MiB back to the disk while the next are being copied in, and commit() fsyncs and
// renames it into place, so a file either exists whole and on the disk or not at all.
//
// Why the streaming writeback: left alone, the kernel holds a checkpoint's pages dirty
// until fsync (they are far below its background threshold), so a save is two phases in
// a row, memcpy into the page cache and then the flush. Starting the writeback of each
// chunk at once overlaps the two, and waiting for the chunk two behind keeps only a few
// chunks dirty per file; written chunks are dropped from the page cache, which a
// training process will not read back. Measured on this project's CI disk (ext4 on
// virtio, two ranks writing 750 MB each): 270-975 MB/s per file without it, 1060-1800 with it.
#include <cstddef>
#include <cstdint>
#include <string>

namespace plait {

class DurableFile {
 public:
  explicit DurableFile(std::string path);
  ~DurableFile();  // without commit(): the partial file is removed
  DurableFile(const DurableFile&) = delete;
  DurableFile& operator=(const DurableFile&) = delete;

  void write(const char* data, std::size_t n);
  void commit();
  int64_t bytes() const { return bytes_; }

 private:
  void write_back(bool all);

  std::string path_, partial_;
  int fd_ = -1;
  int64_t bytes_ = 0;
  int64_t flushed_ = 0;   // bytes whose writeback has been started
  int64_t settled_ = 0;   // bytes known to be on the disk and dropped from the cache
};

}  // namespace plait
