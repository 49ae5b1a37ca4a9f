#include "io/safetensors.hpp"

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include "plait/sdk/error.hpp"

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

void save_safetensors(const std::string& path, const NamedTensorList& tensors,
                      const std::map<std::string, std::string>& metadata) {
  nlohmann::ordered_json header;
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::vector<at::Tensor> blobs;
  int64_t offset = 0;
  for (const auto& [name, tensor] : tensors) {
    at::Tensor t = tensor.detach().to(at::kCPU).contiguous();
    const int64_t bytes = static_cast<int64_t>(t.nbytes());
    header[name] = {{"dtype", dtype_name(t.scalar_type())},
                    {"shape", t.sizes().vec()},
                    {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
    blobs.push_back(t);
  }
  std::string text = header.dump();
  text.resize((text.size() + 7) / 8 * 8, ' ');  // align the data to 8 bytes, as the reference writer does
  const std::string tmp = path + ".partial";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    PLAIT_CHECK(out.good(), concat("cannot write ", tmp), "check that the folder exists and is writable");
    const uint64_t n = text.size();
    unsigned char len[8];
    for (int i = 0; i < 8; ++i) len[i] = static_cast<unsigned char>(n >> (8 * i));
    out.write(reinterpret_cast<const char*>(len), 8);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    for (const auto& t : blobs) out.write(static_cast<const char*>(t.data_ptr()), static_cast<std::streamsize>(t.nbytes()));
    PLAIT_CHECK(out.good(), concat("writing ", tmp, " failed"), "check free disk space");
  }
  std::filesystem::rename(tmp, path);
}

NamedTensorList load_safetensors(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  PLAIT_CHECK(in.good(), concat("cannot open ", path), "check the path");
  unsigned char len[8];
  in.read(reinterpret_cast<char*>(len), 8);
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= static_cast<uint64_t>(len[i]) << (8 * i);
  const auto file_size = std::filesystem::file_size(path);
  PLAIT_CHECK(in.good() && n + 8 <= file_size, concat(path, ": not a safetensors file (header length ", n, ")"),
              "the file is truncated or of another format");
  std::string text(n, '\0');
  in.read(text.data(), static_cast<std::streamsize>(n));
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(text);
  } catch (const std::exception& e) {
    throw Error(concat(path, ": safetensors header is not valid JSON: ", e.what()), "the file is damaged");
  }
  std::vector<std::tuple<int64_t, int64_t, std::string, at::ScalarType, std::vector<int64_t>>> entries;
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__") continue;
    const auto& v = it.value();
    const auto offsets = v.at("data_offsets").get<std::vector<int64_t>>();
    entries.emplace_back(offsets.at(0), offsets.at(1), it.key(), dtype_of(v.at("dtype").get<std::string>(), path),
                         v.at("shape").get<std::vector<int64_t>>());
  }
  std::sort(entries.begin(), entries.end());
  const int64_t data_start = static_cast<int64_t>(8 + n);
  NamedTensorList out;
  for (const auto& [begin, end, name, dtype, shape] : entries) {
    at::Tensor t = at::empty(shape, at::TensorOptions().dtype(dtype));
    PLAIT_CHECK(static_cast<int64_t>(t.nbytes()) == end - begin,
                concat(path, ": tensor ", name, " has ", end - begin, " bytes for its shape's ", t.nbytes()),
                "the file is damaged");
    PLAIT_CHECK(static_cast<uint64_t>(data_start + end) <= file_size, concat(path, ": tensor ", name, " runs past the end"),
                "the file is truncated");
    in.seekg(data_start + begin);
    in.read(static_cast<char*>(t.data_ptr()), end - begin);
    out.emplace_back(name, t);
  }
  return out;
}

}  // namespace plait
