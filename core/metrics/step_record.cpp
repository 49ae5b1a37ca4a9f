#include "metrics/step_record.hpp"

#include <cmath>

namespace plait {

double comm_bus_bytes(const CommStats::Drained& comm) {
  double bytes = 0.0;
  for (const auto& [key, c] : comm.by_op) bytes += c.bus_bytes;
  return bytes;
}

nlohmann::ordered_json step_record(const StepFigures& f, const RankFigures& mine, const CommStats::Drained& comm) {
  const double tokens_per_s = static_cast<double>(f.tokens) / f.step_s;
  nlohmann::ordered_json record = {
      {"step", f.step},
      {"loss", std::isfinite(f.loss) ? nlohmann::ordered_json(f.loss) : nlohmann::ordered_json(nullptr)},
      {"lr", f.lr},
      {"grad_norm", std::isfinite(f.grad_norm) ? nlohmann::ordered_json(f.grad_norm) : nlohmann::ordered_json(nullptr)},
      {"tokens", f.tokens},
      {"counted_tokens", f.counted_tokens},
      {"step_ms", f.step_s * 1e3},
      {"tokens_per_s", tokens_per_s},
      {"mfu", f.mfu},
      {"skipped", f.skipped},
      {"skipped_steps", f.skipped_steps},
      {"mem_bytes", f.mem_bytes},
      {"host_mem_bytes", f.host_mem_bytes},
  };
  for (const auto& [key, value] : mine) {
    if (!is_sparse_figure(key) || value != 0.0) record[key] = json_number(value);
  }
  double seconds = 0.0, exposed = 0.0;
  nlohmann::ordered_json per_op = nlohmann::json::object();
  for (const auto& [key, c] : comm.by_op) {
    seconds += c.seconds;
    exposed += c.exposed_seconds;
    per_op[key] = {{"calls", c.calls},
                   {"bytes", c.bus_bytes},
                   {"payload_bytes", c.payload_bytes},
                   {"ms", c.seconds * 1e3},
                   {"exposed_ms", c.exposed_seconds * 1e3}};
  }
  record["comm_bytes"] = comm_bus_bytes(comm);
  record["comm_ms"] = seconds * 1e3;
  record["comm_exposed_ms"] = exposed * 1e3;
  record["comm"] = per_op;
  record["comm_bytes_by"] = comm.bus_bytes_by_caller;
  return record;
}

}  // namespace plait
