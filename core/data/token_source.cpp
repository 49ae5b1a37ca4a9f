#include "data/token_source.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

#include "data/token_file_format.hpp"
#include "plait/sdk/error.hpp"

namespace plait {

namespace {
constexpr int32_t kLlmcMagic = 20240520;
constexpr std::size_t kLlmcHeaderBytes = 256 * sizeof(int32_t);
}  // namespace

std::mt19937_64 seeded_rng(std::initializer_list<uint64_t> words) {
  std::vector<uint32_t> halves;  // seed_seq keeps 32 bits of each value
  for (uint64_t w : words) {
    halves.push_back(static_cast<uint32_t>(w));
    halves.push_back(static_cast<uint32_t>(w >> 32));
  }
  std::seed_seq seq(halves.begin(), halves.end());
  return std::mt19937_64(seq);
}

void TokenFile::map(const std::string& path) {
  path_ = path;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  PLAIT_CHECK(fd >= 0, concat("[data] cannot open ", path, ": ", std::strerror(errno)),
              "data.path is relative to the config file that sets it");
  struct stat st {};
  const bool stated = ::fstat(fd, &st) == 0;
  if (!stated || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw Error(concat("[data] ", path, " is ", stated && S_ISDIR(st.st_mode) ? "a folder" : "not a regular file",
                       ", not a token file"),
                "point data.path at the data file itself");
  }
  mapping_bytes_ = static_cast<std::size_t>(st.st_size);
  if (mapping_bytes_ > 0) {
    mapping_ = ::mmap(nullptr, mapping_bytes_, PROT_READ, MAP_PRIVATE, fd, 0);
  }
  ::close(fd);
  PLAIT_CHECK(mapping_bytes_ > 0, concat("[data] ", path, " is empty"), "point data.path at a file with tokens");
  PLAIT_CHECK(mapping_ != MAP_FAILED, concat("[data] cannot map ", path, ": ", std::strerror(errno)), "check the file");
}

TokenFile::~TokenFile() {
  if (mapping_ != nullptr && mapping_ != MAP_FAILED) ::munmap(mapping_, mapping_bytes_);
}

std::shared_ptr<TokenFile> TokenFile::open_text(const std::string& path) {
  std::shared_ptr<TokenFile> f(new TokenFile());
  f->map(path);
  f->format_ = "text (bytes)";
  f->tokens_ = f->mapping_;
  f->width_ = 1;
  f->count_ = static_cast<int64_t>(f->mapping_bytes_);
  return f;
}

std::shared_ptr<TokenFile> TokenFile::open_tokens(const std::string& path) {
  std::shared_ptr<TokenFile> f(new TokenFile());
  f->map(path);
  const auto* bytes = static_cast<const char*>(f->mapping_);
  int32_t header[3] = {0, 0, 0};
  if (f->mapping_bytes_ >= kLlmcHeaderBytes) std::memcpy(header, bytes, sizeof(header));
  if (is_plait_token_file(bytes, f->mapping_bytes_, path)) {
    f->read_plait_sections();
  } else if (header[0] == kLlmcMagic) {
    PLAIT_CHECK(header[1] == 1 || header[1] == 2,
                concat("[data] ", path, " has llm.c's magic number but version ", header[1]),
                "llm.c token files are version 1 (uint16) or 2 (uint32)");
    f->width_ = header[1] == 1 ? 2 : 4;
    f->format_ = header[1] == 1 ? "llm.c v1 (uint16)" : "llm.c v2 (uint32)";
    f->tokens_ = bytes + kLlmcHeaderBytes;
    f->count_ = header[2];
    PLAIT_CHECK(f->count_ > 0, concat("[data] ", path, " is an llm.c token file whose header says it holds ", header[2], " tokens"),
                "the file has no tokens: write it again with llm.c's tokenizer scripts");
    const std::size_t needed = kLlmcHeaderBytes + static_cast<std::size_t>(f->count_) * f->width_;
    PLAIT_CHECK(needed <= f->mapping_bytes_,
                concat("[data] ", path, ": header says ", header[2], " tokens but the file holds ",
                       (f->mapping_bytes_ - kLlmcHeaderBytes) / f->width_),
                "the file is truncated or its header is wrong");
  } else {
    PLAIT_CHECK(f->mapping_bytes_ % 2 == 0,
                concat("[data] ", path, " has an odd number of bytes (", f->mapping_bytes_, ") for uint16 tokens"),
                "a raw token file is a uint16 array (numpy .astype(np.uint16).tofile)");
    f->width_ = 2;
    f->format_ = "raw uint16";
    f->tokens_ = bytes;
    f->count_ = static_cast<int64_t>(f->mapping_bytes_ / 2);
  }
  return f;
}

// Reads the header, then checks what a step would otherwise trip over later: mask bytes
// other than 0 and 1, and document starts that do not begin at 0 or go backwards.
void TokenFile::read_plait_sections() {
  const auto* bytes = static_cast<const char*>(mapping_);
  const TokenFileLayout layout = read_token_file_layout(bytes, mapping_bytes_, path_);
  width_ = layout.width;
  format_ = layout.width == 2 ? "plait v1 (uint16)" : "plait v1 (uint32)";
  tokens_ = bytes + layout.tokens_at;
  count_ = layout.tokens;
  tokenizer_vocab_ = layout.vocab_size;
  tokenizer_ = layout.tokenizer;
  if (layout.has_mask) {
    mask_ = reinterpret_cast<const uint8_t*>(bytes + layout.mask_at);
    counted_before_block_.assign(static_cast<std::size_t>((count_ + kMaskBlock - 1) / kMaskBlock) + 1, 0);
    for (int64_t block = 0; block * kMaskBlock < count_; ++block) {
      int64_t ones = 0, others = 0;
      const int64_t end = std::min(count_, (block + 1) * kMaskBlock);
      for (int64_t i = block * kMaskBlock; i < end; ++i) {
        ones += mask_[i] == 1;
        others += mask_[i] > 1;
      }
      PLAIT_CHECK(others == 0,
                  concat("[data] ", path_, ": the loss mask has a byte other than 0 and 1 in tokens ", block * kMaskBlock,
                         " to ", end - 1),
                  "the file is damaged: write it again with tools/prepare_data.py");
      counted_before_block_[static_cast<std::size_t>(block) + 1] = counted_before_block_[static_cast<std::size_t>(block)] + ones;
    }
  }
  if (layout.has_documents) {
    document_starts_ = reinterpret_cast<const int64_t*>(bytes + layout.documents_at);
    documents_ = layout.documents;
    for (int64_t d = 0; d < documents_; ++d) {
      const int64_t start = document_starts_[d], before = d == 0 ? -1 : document_starts_[d - 1];
      PLAIT_CHECK(d == 0 ? start == 0 : start > before && start < count_,
                  concat("[data] ", path_, ": document ", d, " starts at token ", start,
                         d == 0 ? " (the first document starts at 0)"
                                : concat(" after document ", d - 1, " at ", before, " (of ", count_, " tokens)")),
                  "document starts rise from 0 and stay below the token count: write the file again with "
                  "tools/prepare_data.py");
    }
  }
}

int64_t TokenFile::counted(int64_t begin, int64_t end) const {
  if (mask_ == nullptr) return end - begin;
  const auto partial = [&](int64_t from, int64_t to) {
    int64_t n = 0;
    for (int64_t i = from; i < to; ++i) n += mask_[i];
    return n;
  };
  const int64_t first = begin / kMaskBlock + 1, last = end / kMaskBlock;  // whole blocks first .. last-1
  if (first > last) return partial(begin, end);
  return partial(begin, first * kMaskBlock) +
         counted_before_block_[static_cast<std::size_t>(last)] - counted_before_block_[static_cast<std::size_t>(first)] +
         partial(last * kMaskBlock, end);
}

SyntheticLanguage::SyntheticLanguage(int64_t vocab_size, uint64_t seed)
    : vocab_size_(vocab_size), seed_(seed), successors_(static_cast<std::size_t>(vocab_size) * 4) {
  std::mt19937_64 rng(seed ^ 0x5eed5eed5eed5eedull);
  for (auto& s : successors_) s = static_cast<int64_t>(rng() % static_cast<uint64_t>(vocab_size));
}

void SyntheticLanguage::sequence(int64_t sample, int64_t length, int64_t* out) const {
  // std::mt19937_64's output is fixed by the standard; distributions are not, so the
  // draws below are mapped by hand to stay identical across compilers.
  std::mt19937_64 rng = seeded_rng({seed_, static_cast<uint64_t>(sample)});
  int64_t token = static_cast<int64_t>(rng() % static_cast<uint64_t>(vocab_size_));
  for (int64_t i = 0; i < length; ++i) {
    out[i] = token;
    const uint64_t u = rng() % 100;  // successor 0: 50%, 1: 25%, 2: 15%, 3: 10%
    const int pick = u < 50 ? 0 : u < 75 ? 1 : u < 90 ? 2 : 3;
    token = successors_[static_cast<std::size_t>(token) * 4 + pick];
  }
}

double SyntheticLanguage::entropy_nats() {
  double h = 0.0;
  for (double p : {0.5, 0.25, 0.15, 0.1}) h -= p * std::log(p);
  return h;
}

}  // namespace plait
