// TensorBoard event files: the TFRecord framing (lengths and masked CRC-32C, which
// TensorBoard's reader checks), and which of a metrics record's figures become scalars.
// That TensorBoard itself reads them back is tests/python/tensorboard_events.py.
#include <catch2/catch.hpp>

#include <cstring>
#include <fstream>
#include <iterator>

#include "metrics/tensorboard_events.hpp"
#include "support/test_support.hpp"

using namespace plait;
using namespace plait::test;

TEST_CASE("CRC-32C is the Castagnoli checksum, masked as TFRecord files store it", "[io][tensorboard]") {
  // The check value of CRC-32C ("123456789" -> 0xE3069283), masked: rotate right by 15, add 0xa282ead8.
  const uint32_t crc = 0xE3069283u;
  CHECK(tfrecord_masked_crc32c("123456789", 9) == ((crc >> 15) | (crc << 17)) + 0xa282ead8u);
  CHECK(tfrecord_masked_crc32c("", 0) == 0xa282ead8u);
}

TEST_CASE("an event file is records of length, its checksum, the event, its checksum", "[io][tensorboard]") {
  TempDir dir;
  std::string path;
  {
    TensorBoardWriter tb((dir / "tb").string(), 1);
    path = tb.path();
    tb.scalars(3, {{"loss", 2.5}, {"comm/dp.all_reduce/ms", 0.25}});
  }
  CHECK(fs::path(path).parent_path() == dir / "tb");
  CHECK(fs::path(path).filename().string().rfind("events.out.tfevents.", 0) == 0);
  std::ifstream in(path, std::ios::binary);
  const std::string bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  std::vector<std::string> events;
  for (std::size_t at = 0; at < bytes.size();) {
    REQUIRE(at + 12 <= bytes.size());
    uint64_t n = 0;
    uint32_t crc_len = 0, crc_data = 0;
    std::memcpy(&n, bytes.data() + at, 8);
    std::memcpy(&crc_len, bytes.data() + at + 8, 4);
    CHECK(crc_len == tfrecord_masked_crc32c(bytes.data() + at, 8));
    REQUIRE(at + 12 + n + 4 <= bytes.size());
    events.push_back(bytes.substr(at + 12, n));
    std::memcpy(&crc_data, bytes.data() + at + 12 + n, 4);
    CHECK(crc_data == tfrecord_masked_crc32c(events.back().data(), n));
    at += 12 + n + 4;
  }
  // file_version, the run's START, the scalars.
  REQUIRE(events.size() == 3);
  CHECK(events[0].find("brain.Event:2") != std::string::npos);
  // Event.session_log (field 7, a message of 2 bytes): SessionLog.status (field 1) = START (1).
  CHECK(events[1].find(std::string("\x3a\x02\x08\x01", 4)) != std::string::npos);
  CHECK(events[2].find("comm/dp.all_reduce/ms") != std::string::npos);
}

TEST_CASE("a metrics record's numbers become scalars, nested ones by path", "[io][tensorboard]") {
  const auto record = nlohmann::ordered_json::parse(
      R"({"step":4,"loss":null,"lr":0.001,"skipped":false,"tag":"x","comm":{"dp.all_gather":{"calls":6,"ms":1.5}},)"
      R"("ranks":[{"rank":0,"peak_mem_bytes":10},{"rank":1,"peak_mem_bytes":12}],"host_reads_by_step":[1,2]})");
  const std::vector<std::pair<std::string, double>> want = {
      {"lr", 0.001},          {"comm/dp.all_gather/calls", 6}, {"comm/dp.all_gather/ms", 1.5}, {"ranks/0/rank", 0},
      {"ranks/0/peak_mem_bytes", 10}, {"ranks/1/rank", 1},      {"ranks/1/peak_mem_bytes", 12}};
  CHECK(tensorboard_scalars(record) == want);
}
