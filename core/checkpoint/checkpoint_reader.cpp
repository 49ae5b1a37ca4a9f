#include "checkpoint/checkpoint_reader.hpp"

#include <cerrno>
#include <cstring>
#include <map>

#include <fcntl.h>
#include <unistd.h>

#include <ATen/ATen.h>

#include "checkpoint/checkpoint_files.hpp"
#include "checkpoint/element_runs.hpp"
#include "io/safetensors_header.hpp"
#include "plait/sdk/error.hpp"

namespace plait::checkpoint {
namespace {

std::vector<ElementRun> runs_of(const std::vector<int64_t>& shape, bool flat, int64_t start, int64_t length,
                                const std::vector<int64_t>& offsets, const std::vector<int64_t>& lengths) {
  return flat ? runs_of_range(start, length) : runs_of_slice(shape, offsets, lengths);
}

int64_t region_numel(const Region& r) {
  if (r.flat) return r.length;
  int64_t n = 1;
  for (int64_t l : r.lengths) n *= l;
  return n;
}

}  // namespace

Region Region::whole(const TensorEntry& entry) {
  return slice(std::vector<int64_t>(entry.shape.size(), 0), entry.shape);
}

CheckpointReader::CheckpointReader(std::filesystem::path folder)
    : folder_(std::move(folder)), index_(read_index(folder_)) {}

CheckpointReader::~CheckpointReader() {
  for (auto& [name, f] : files_) {
    if (f.fd >= 0) ::close(f.fd);
  }
}

void CheckpointReader::verify() const {
  for (const auto& [name, entry] : index_.files) {
    check_file_present(folder_, name, entry);
    const auto path = folder_ / name;
    const std::string sum = file_xxh3(path);
    PLAIT_CHECK(sum == entry.xxh3,
                concat("checkpoint file ", path.string(), " fails its checksum (xxh3 ", sum, ", index ", entry.xxh3, ")"),
                "the file is damaged; resume from another checkpoint");
  }
  // What a resume reads: every part's key in its file, holding its elements. A checkpoint
  // verify passes is one a resume takes.
  std::map<std::string, std::map<std::string, StoredTensor>> headers;
  for (const auto& [name, entry] : index_.tensors) {
    const int64_t esize = safetensors_dtype_bytes(entry.dtype);
    for (const TensorPart& part : entry.parts) {
      if (!headers.count(part.file)) headers[part.file] = read_safetensors_header((folder_ / part.file).string());
      const auto& tensors = headers[part.file];
      const auto it = tensors.find(part.key);
      const std::string where = (folder_ / part.file).string();
      PLAIT_CHECK(it != tensors.end(), concat(where, " has no tensor '", part.key, "' (a part of ", name, ")"),
                  "the checkpoint is damaged; resume from another");
      PLAIT_CHECK(it->second.end - it->second.begin == part.numel() * esize,
                  concat(where, ": part '", part.key, "' of ", name, " has ", it->second.end - it->second.begin,
                         " bytes for ", part.numel(), " elements of ", entry.dtype),
                  "the checkpoint is damaged; resume from another");
    }
  }
}

CheckpointReader::OpenFile& CheckpointReader::open(const std::string& file) {
  auto it = files_.find(file);
  if (it != files_.end()) return it->second;
  const auto path = folder_ / file;
  const auto listed = index_.files.find(file);
  PLAIT_CHECK(listed != index_.files.end(), concat("checkpoint ", folder_.string(), ": its index lists no file ", file),
              "the index is damaged; resume from another checkpoint");
  check_file_present(folder_, file, listed->second);
  const auto size = listed->second.bytes;
  const FileEntry& entry = listed->second;
  PLAIT_CHECK(entry.block_bytes > 0 &&
                  static_cast<int64_t>(entry.blocks.size()) == 16 * ((entry.bytes + entry.block_bytes - 1) / entry.block_bytes),
              concat("checkpoint ", folder_.string(), ": the index's block checksums of ", file, " do not fit its size"),
              "the index is damaged; resume from another checkpoint");
  OpenFile f;
  f.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  PLAIT_CHECK(f.fd >= 0, concat("cannot open checkpoint file ", path.string(), ": ", std::strerror(errno)), "check the folder");
  f.entry = &entry;
  f.verified.assign(static_cast<std::size_t>((entry.bytes + entry.block_bytes - 1) / entry.block_bytes), false);
  OpenFile& opened = files_.emplace(file, std::move(f)).first->second;
  // The header's bytes are checked like the tensors': read through the checked path.
  char length[8];
  pread_into(file, length, 8, 0);
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= static_cast<uint64_t>(static_cast<unsigned char>(length[i])) << (8 * i);
  PLAIT_CHECK(n + 8 <= static_cast<uint64_t>(size), concat(path.string(), ": not a safetensors file"), "the file is damaged");
  std::string header(n, '\0');
  pread_into(file, header.data(), static_cast<int64_t>(n), 8);
  opened.tensors = parse_safetensors_header(header, size, path.string());
  return opened;
}

const StoredTensor& CheckpointReader::stored(const TensorPart& part, const TensorEntry& entry, const std::string& name) {
  const OpenFile& f = open(part.file);
  const auto it = f.tensors.find(part.key);
  const std::string where = (folder_ / part.file).string();
  PLAIT_CHECK(it != f.tensors.end(), concat(where, " has no tensor '", part.key, "' (a part of ", name, ")"),
              "the checkpoint is damaged");
  const int64_t esize = static_cast<int64_t>(c10::elementSize(safetensors_dtype(entry.dtype, where)));
  PLAIT_CHECK(it->second.end - it->second.begin == part.numel() * esize,
              concat(where, ": part '", part.key, "' of ", name, " has ", it->second.end - it->second.begin,
                     " bytes for ", part.numel(), " elements of ", entry.dtype),
              "the checkpoint is damaged");
  return it->second;
}

void CheckpointReader::raw_pread(OpenFile& f, const std::string& file, char* into, int64_t bytes, int64_t at) {
  while (bytes > 0) {
    const ssize_t n = ::pread(f.fd, into, static_cast<std::size_t>(bytes), at);
    if (n < 0 && errno == EINTR) continue;
    PLAIT_CHECK(n > 0, concat("reading ", (folder_ / file).string(), " failed: ", n == 0 ? "unexpected end" : std::strerror(errno)),
                "the file was truncated");
    into += n;
    at += n;
    bytes -= n;
    bytes_read_ += n;
  }
}

// Blocks read for the first time are read whole (a run of them, up to 4 MiB, in one
// pread) and checked; bytes of checked blocks come from the run last read, or from the disk.
void CheckpointReader::pread_into(const std::string& file, void* into, int64_t bytes, int64_t at) {
  constexpr int64_t kRunBytes = 4 << 20;
  OpenFile& f = open(file);
  const int64_t bb = f.entry->block_bytes, size = f.entry->bytes;
  const auto blocks = static_cast<int64_t>(f.verified.size());
  auto* out = static_cast<char*>(into);
  while (bytes > 0) {
    const int64_t k = at / bb;
    const int64_t cached_end = std::min(size, (f.cached_first + f.cached_count) * bb);
    if (k >= f.cached_first && k < f.cached_first + f.cached_count) {
      const int64_t take = std::min(bytes, cached_end - at);
      std::memcpy(out, f.cache.data() + (at - f.cached_first * bb), static_cast<std::size_t>(take));
      out += take;
      at += take;
      bytes -= take;
    } else if (f.verified[static_cast<std::size_t>(k)]) {
      int64_t last = k;  // the checked blocks this request goes on through
      while (last + 1 < blocks && f.verified[static_cast<std::size_t>(last + 1)] && (last + 1) * bb < at + bytes) ++last;
      const int64_t take = std::min(bytes, std::min(size, (last + 1) * bb) - at);
      raw_pread(f, file, out, take, at);
      out += take;
      at += take;
      bytes -= take;
    } else {
      int64_t last = k;  // the unchecked blocks this request goes on through
      while (last + 1 < blocks && !f.verified[static_cast<std::size_t>(last + 1)] && (last + 1) * bb < at + bytes &&
             (last + 2 - k) * bb <= kRunBytes) {
        ++last;
      }
      const int64_t begin = k * bb, end = std::min(size, (last + 1) * bb);
      // Reads go through a file in order: the kernel fetches the next run while this one is checked.
      if (end < size) ::posix_fadvise(f.fd, end, kRunBytes, POSIX_FADV_WILLNEED);
      f.cache.resize(static_cast<std::size_t>(end - begin));
      raw_pread(f, file, f.cache.data(), end - begin, begin);
      for (int64_t b = k; b <= last; ++b) {
        const int64_t from = b * bb, to = std::min(size, from + bb);
        const std::string sum = xxh3_hex(f.cache.data() + (from - begin), static_cast<std::size_t>(to - from));
        const std::string expected = f.entry->blocks.substr(static_cast<std::size_t>(16 * b), 16);
        PLAIT_CHECK(sum == expected,
                    concat("checkpoint file ", (folder_ / file).string(), " fails its checksum in bytes [", from, ", ", to,
                           ") (xxh3 ", sum, ", index ", expected, ")"),
                    "the file is damaged; resume from another checkpoint (`plait checkpoint verify` checks one)");
        f.verified[static_cast<std::size_t>(b)] = true;
      }
      f.cached_first = k;
      f.cached_count = last - k + 1;
    }
  }
}

at::Tensor CheckpointReader::read(const std::string& name, const Region& region) {
  const at::ScalarType dtype = dtype_of(name);
  at::Tensor out = at::empty(region.flat ? std::vector<int64_t>{region.length} : region.lengths, at::TensorOptions().dtype(dtype));
  read_into(name, region, out);
  return out;
}

at::ScalarType CheckpointReader::dtype_of(const std::string& name) const {
  const auto found = index_.tensors.find(name);
  PLAIT_CHECK(found != index_.tensors.end(), concat("checkpoint ", folder_.string(), " has no tensor ", name),
              "it was saved from another model");
  return safetensors_dtype(found->second.dtype, folder_.string());
}

void CheckpointReader::read_into(const std::string& name, const Region& region, const at::Tensor& out) {
  const at::ScalarType dtype = dtype_of(name);
  const TensorEntry& entry = index_.tensors.at(name);
  PLAIT_CHECK(out.is_cpu() && out.is_contiguous() && out.scalar_type() == dtype && out.numel() == region_numel(region),
              concat("checkpoint: reading ", name, " into a tensor that is not a contiguous ", dtype, " host tensor of ",
                     region_numel(region), " elements"),
              "this is a plait bug: please report it");
  const int64_t esize = static_cast<int64_t>(c10::elementSize(dtype));
  auto* into = static_cast<char*>(out.data_ptr());
  const std::vector<ElementRun> wanted =
      runs_of(entry.shape, region.flat, region.start, region.length, region.offsets, region.lengths);
  int64_t filled = 0;
  for (const TensorPart& part : entry.parts) {
    const std::vector<Overlap> pieces =
        overlaps(runs_of(entry.shape, part.flat, part.start, part.length, part.offsets, part.lengths), wanted);
    if (pieces.empty()) continue;  // its file is not even opened
    const StoredTensor& s = stored(part, entry, name);
    for (const Overlap& o : pieces) {
      pread_into(part.file, into + o.to * esize, o.length * esize, s.begin + o.from * esize);
      filled += o.length;
    }
  }
  PLAIT_CHECK(filled == region_numel(region),
              concat("checkpoint ", folder_.string(), ": the parts of ", name, " hold ", filled, " of the ",
                     region_numel(region), " elements asked for"),
              "the checkpoint is incomplete");
}

std::string first_difference(const std::filesystem::path& a, const std::filesystem::path& b) {
  CheckpointReader ra(a), rb(b);
  if (ra.index().tensors.size() != rb.index().tensors.size()) return "the checkpoints hold different tensors";
  for (const auto& [name, entry] : ra.index().tensors) {
    const auto other = rb.index().tensors.find(name);
    if (other == rb.index().tensors.end()) return concat(name, " is missing from ", b.string());
    const at::Tensor x = ra.read(name, Region::whole(entry));
    const at::Tensor y = rb.read(name, Region::whole(other->second));
    // Bit for bit: a NaN equals its own bits, and -0 is not +0.
    const at::Tensor cx = x.contiguous(), cy = y.contiguous();
    if (cx.scalar_type() != cy.scalar_type() || cx.sizes() != cy.sizes() ||
        std::memcmp(cx.data_ptr(), cy.data_ptr(), cx.nbytes()) != 0) {
      return concat(name, " differs");
    }
  }
  return "";
}

}  // namespace plait::checkpoint
