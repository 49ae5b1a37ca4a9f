#include "metrics/tensorboard_events.hpp"

#include <array>
#include <chrono>
#include <cstring>
#include <filesystem>

#include <unistd.h>

#include "plait/sdk/error.hpp"

namespace plait {
namespace {

// Protocol buffer wire format: field keys and varints, little-endian fixed widths.
void varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}
void key(std::string& out, int field, int wire_type) { varint(out, static_cast<uint64_t>(field << 3 | wire_type)); }
template <typename T>
void fixed(std::string& out, T v) {
  char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));  // little-endian hosts only, as LibTorch itself
  out.append(b, sizeof(T));
}
void bytes_field(std::string& out, int field, const std::string& bytes) {
  key(out, field, 2);
  varint(out, bytes.size());
  out += bytes;
}

// Event: wall_time = 1 (double), step = 2 (int64), file_version = 3, summary = 5, session_log = 7.
std::string event(int64_t step, const std::string& payload_field_and_bytes) {
  std::string e;
  key(e, 1, 1);
  fixed(e, std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count());
  if (step != 0) {
    key(e, 2, 0);
    varint(e, static_cast<uint64_t>(step));
  }
  return e + payload_field_and_bytes;
}

const std::array<uint32_t, 256>& crc_table() {
  static const std::array<uint32_t, 256> table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82f63b78u : c >> 1;  // reflected 0x1EDC6F41
      t[i] = c;
    }
    return t;
  }();
  return table;
}

void flatten(const std::string& prefix, const nlohmann::ordered_json& j, std::vector<std::pair<std::string, double>>& out) {
  if (j.is_object()) {
    for (const auto& [name, value] : j.items()) flatten(prefix.empty() ? name : prefix + "/" + name, value, out);
  } else if (j.is_array()) {
    for (std::size_t k = 0; k < j.size(); ++k) {
      if (j[k].is_object()) flatten(prefix + "/" + std::to_string(k), j[k], out);
    }
  } else if (j.is_number()) {
    out.emplace_back(prefix, j.get<double>());
  }
}

}  // namespace

uint32_t tfrecord_masked_crc32c(const void* data, std::size_t n) {
  const auto& table = crc_table();
  uint32_t c = 0xffffffffu;
  const auto* p = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < n; ++i) c = table[(c ^ p[i]) & 0xff] ^ (c >> 8);
  c ^= 0xffffffffu;
  return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

TensorBoardWriter::TensorBoardWriter(const std::string& folder, int64_t first_step) {
  std::filesystem::create_directories(folder);
  char host[256] = "localhost";
  ::gethostname(host, sizeof(host) - 1);
  const auto seconds =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  path_ = (std::filesystem::path(folder) / concat("events.out.tfevents.", seconds, ".", host, ".", ::getpid())).string();
  out_.open(path_, std::ios::binary | std::ios::trunc);
  PLAIT_CHECK(out_.good(), concat("cannot write ", path_), "check that the run folder is writable");
  std::string version;
  bytes_field(version, 3, "brain.Event:2");
  record(event(0, version));
  std::string session_log, start;
  key(start, 1, 0);  // SessionLog.status = START (1)
  varint(start, 1);
  bytes_field(session_log, 7, start);
  record(event(first_step, session_log));
}

void TensorBoardWriter::scalars(int64_t step, const std::vector<std::pair<std::string, double>>& values) {
  std::string summary;
  for (const auto& [tag, v] : values) {
    std::string value;
    bytes_field(value, 1, tag);  // Summary.Value.tag = 1, simple_value = 2 (float)
    key(value, 2, 5);
    fixed(value, static_cast<float>(v));
    bytes_field(summary, 1, value);
  }
  std::string payload;
  bytes_field(payload, 5, summary);
  record(event(step, payload));
}

void TensorBoardWriter::record(const std::string& event) {
  std::string head;
  fixed(head, static_cast<uint64_t>(event.size()));
  std::string framed = head;
  fixed(framed, tfrecord_masked_crc32c(head.data(), head.size()));
  framed += event;
  fixed(framed, tfrecord_masked_crc32c(event.data(), event.size()));
  out_.write(framed.data(), static_cast<std::streamsize>(framed.size()));
  out_.flush();  // TensorBoard reads the file while the run goes on
  PLAIT_CHECK(out_.good(), concat("writing ", path_, " failed"), "check free disk space");
}

std::vector<std::pair<std::string, double>> tensorboard_scalars(const nlohmann::ordered_json& record) {
  std::vector<std::pair<std::string, double>> out;
  for (const auto& [name, value] : record.items()) {
    if (name != "step") flatten(name, value, out);
  }
  return out;
}

}  // namespace plait
