#pragma once
// TensorBoard event files (tb/ in the run folder), so that `tensorboard --logdir runs/`
// shows and overlays plait runs: the format TensorFlow's summary writers produce, a
// TFRecord file of serialized `Event` protocol buffers (tensorboard/compat/proto/
// event.proto), written by hand for the four messages used here (Event, Summary,
// Summary.Value, SessionLog) rather than pulling protobuf into the core.
//
// Each record: its length (uint64, little-endian), the length's masked CRC-32C, the
// bytes, their masked CRC-32C. The file starts with a `file_version` event and a
// SessionLog START at the run's first step, which tells TensorBoard to drop the events
// a crashed run wrote past the checkpoint this run resumed from.
#include <cstdint>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace plait {

// CRC-32C (Castagnoli), masked as TFRecord files store it.
uint32_t tfrecord_masked_crc32c(const void* data, std::size_t n);

class TensorBoardWriter {
 public:
  // Creates `folder` and a new events.out.tfevents.<seconds>.<host>.<pid> file in it;
  // `first_step`: the run's first step.
  TensorBoardWriter(const std::string& folder, int64_t first_step);
  void scalars(int64_t step, const std::vector<std::pair<std::string, double>>& values);
  const std::string& path() const { return path_; }

 private:
  void record(const std::string& event);

  std::string path_;
  std::ofstream out_;
};

// A metrics.jsonl record's numbers as TensorBoard tags: nested objects and arrays of
// objects joined with '/' ("comm/dp.all_gather/ms", "ranks/1/peak_mem_bytes"); strings,
// booleans, nulls (a loss that was not finite) and arrays of numbers are left out.
std::vector<std::pair<std::string, double>> tensorboard_scalars(const nlohmann::ordered_json& record);

}  // namespace plait
