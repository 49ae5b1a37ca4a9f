#include "io/safetensors.hpp"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>


#define XXH_INLINE_ALL
#include <xxhash.h>

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include "io/durable_file.hpp"
#include "io/safetensors_header.hpp"
#include "io/written_stream.hpp"
#include "plait/sdk/error.hpp"
#include "util/json_problem.hpp"

namespace plait {
namespace {

const std::vector<std::pair<at::ScalarType, std::string>> kDtypes = {
    {at::kDouble, "F64"}, {at::kFloat, "F32"}, {at::kBFloat16, "BF16"}, {at::kHalf, "F16"},
    {at::kLong, "I64"},   {at::kInt, "I32"},   {at::kShort, "I16"},     {at::kChar, "I8"},
    {at::kByte, "U8"},    {at::kBool, "BOOL"}, {at::kUInt16, "U16"},    {at::kUInt32, "U32"}};

std::string dtype_name(at::ScalarType t) {
  for (const auto& [type, name] : kDtypes) {
    if (type == t) return name;
  }
  throw Error(concat("safetensors: no dtype name for ", c10::toString(t)), "convert the tensor first");
}

at::ScalarType dtype_of(const std::string& name, const std::string& path) {
  for (const auto& [type, n] : kDtypes) {
    if (n == name) return type;
  }
  throw Error(concat(path, ": unsupported safetensors dtype ", name), "plait reads F64 F32 BF16 F16 I64 I32 I16 I8 U8 U16 U32 BOOL");
}

}  // namespace

namespace {

struct Encoded {
  std::string head;  // length prefix and JSON header, padded
  std::vector<at::Tensor> blobs;
};

Encoded encode(const NamedTensorList& tensors, const std::map<std::string, std::string>& metadata) {
  nlohmann::ordered_json header;
  if (!metadata.empty()) header["__metadata__"] = metadata;
  Encoded e;
  int64_t offset = 0;
  for (const auto& [name, tensor] : tensors) {
    at::Tensor t = tensor.detach().to(at::kCPU).contiguous();
    const int64_t bytes = static_cast<int64_t>(t.nbytes());
    header[name] = {{"dtype", dtype_name(t.scalar_type())},
                    {"shape", t.sizes().vec()},
                    {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
    e.blobs.push_back(t);
  }
  std::string text = header.dump();
  text.resize((text.size() + 7) / 8 * 8, ' ');  // align the data to 8 bytes, as the reference writer does
  const uint64_t n = text.size();
  e.head.resize(8);
  for (int i = 0; i < 8; ++i) e.head[static_cast<std::size_t>(i)] = static_cast<char>(n >> (8 * i));
  e.head += text;
  return e;
}

}  // namespace

std::string safetensors_dtype_name(at::ScalarType type) { return dtype_name(type); }
at::ScalarType safetensors_dtype(const std::string& name, const std::string& where) { return dtype_of(name, where); }

void save_safetensors(const std::string& path, const NamedTensorList& tensors,
                      const std::map<std::string, std::string>& metadata) {
  const Encoded e = encode(tensors, metadata);
  const std::string tmp = path + ".partial";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    PLAIT_CHECK(out.good(), concat("cannot write ", tmp), "check that the folder exists and is writable");
    out.write(e.head.data(), static_cast<std::streamsize>(e.head.size()));
    for (const auto& t : e.blobs) out.write(static_cast<const char*>(t.data_ptr()), static_cast<std::streamsize>(t.nbytes()));
    check_written(out, tmp, "check free disk space");
  }
  std::filesystem::rename(tmp, path);
}

namespace {
std::string hex_of(uint64_t h) {
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(h));
  return hex;
}
}  // namespace

std::string xxh3_hex(const void* data, std::size_t bytes) { return hex_of(XXH3_64bits(data, bytes)); }

namespace {
constexpr std::size_t kPiece = std::size_t{1} << 20;
}  // namespace

WrittenFile save_safetensors_durable(const std::string& path, const NamedTensorList& tensors,
                                     int64_t (*block_bytes_for)(int64_t file_bytes)) {
  const Encoded e = encode(tensors, {});
  int64_t total = static_cast<int64_t>(e.head.size());
  for (const auto& t : e.blobs) total += static_cast<int64_t>(t.nbytes());
  const int64_t block_bytes = block_bytes_for ? block_bytes_for(total) : 0;
  DurableFile file(path);
  using Hasher = std::unique_ptr<XXH3_state_t, decltype(&XXH3_freeState)>;
  const Hasher whole(XXH3_createState(), &XXH3_freeState), block(XXH3_createState(), &XXH3_freeState);
  XXH3_64bits_reset(whole.get());
  XXH3_64bits_reset(block.get());
  int64_t in_block = 0;
  WrittenFile written;
  written.block_bytes = block_bytes;
  // Blocks are hashed as the bytes go by, split wherever a block ends.
  auto hash_blocks = [&](const char* data, std::size_t n) {
    while (block_bytes > 0 && n > 0) {
      const auto take = static_cast<std::size_t>(std::min<int64_t>(static_cast<int64_t>(n), block_bytes - in_block));
      XXH3_64bits_update(block.get(), data, take);
      in_block += static_cast<int64_t>(take);
      data += take;
      n -= take;
      if (in_block == block_bytes) {
        written.blocks += hex_of(XXH3_64bits_digest(block.get()));
        XXH3_64bits_reset(block.get());
        in_block = 0;
      }
    }
  };
  // A piece at a time, so the bytes are hashed and written while still in the cache.
  auto put = [&](const char* data, std::size_t n) {
    for (std::size_t k = 0; k < n; k += kPiece) {
      const std::size_t m = std::min(kPiece, n - k);
      XXH3_64bits_update(whole.get(), data + k, m);
      hash_blocks(data + k, m);
      file.write(data + k, m);
    }
  };
  put(e.head.data(), e.head.size());
  for (const auto& t : e.blobs) put(static_cast<const char*>(t.data_ptr()), t.nbytes());
  if (in_block > 0) written.blocks += hex_of(XXH3_64bits_digest(block.get()));
  written.xxh3 = hex_of(XXH3_64bits_digest(whole.get()));
  written.bytes = file.bytes();
  file.commit();
  return written;
}

std::map<std::string, StoredTensor> read_safetensors_header(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  PLAIT_CHECK(in.good(), concat("cannot open ", path), "check the path");
  unsigned char len[8];
  in.read(reinterpret_cast<char*>(len), 8);
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= static_cast<uint64_t>(len[i]) << (8 * i);
  const auto file_size = static_cast<int64_t>(std::filesystem::file_size(path));
  PLAIT_CHECK(in.good() && n + 8 <= static_cast<uint64_t>(file_size), concat(path, ": not a safetensors file (header length ", n, ")"),
              "the file is truncated or of another format");
  std::string text(n, '\0');
  in.read(text.data(), static_cast<std::streamsize>(n));
  return parse_safetensors_header(text, file_size, path);
}

std::map<std::string, StoredTensor> parse_safetensors_header(const std::string& text, int64_t file_size,
                                                             const std::string& path) {
  std::map<std::string, StoredTensor> out;
  for (auto& [name, e] : parse_safetensors_entries(text, file_size, path)) {
    out[name] = {dtype_of(e.dtype, path), std::move(e.shape), e.begin, e.end};
  }
  return out;
}

NamedTensorList load_safetensors(const std::string& path) {
  std::vector<std::pair<StoredTensor, std::string>> entries;
  for (auto& [name, t] : read_safetensors_header(path)) entries.emplace_back(t, name);
  std::sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) { return a.first.begin < b.first.begin; });
  std::ifstream in(path, std::ios::binary);
  NamedTensorList out;
  for (const auto& [stored, name] : entries) {
    at::Tensor t = at::empty(stored.shape, at::TensorOptions().dtype(stored.dtype));
    PLAIT_CHECK(static_cast<int64_t>(t.nbytes()) == stored.end - stored.begin,
                concat(path, ": tensor ", name, " has ", stored.end - stored.begin, " bytes for its shape's ", t.nbytes()),
                "the file is damaged");
    in.seekg(stored.begin);
    in.read(static_cast<char*>(t.data_ptr()), stored.end - stored.begin);
    out.emplace_back(name, t);
  }
  return out;
}

}  // namespace plait
