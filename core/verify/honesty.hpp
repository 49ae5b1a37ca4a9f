#pragma once
// `plait verify`'s honesty rows, judged from a run's metrics.jsonl (recorded with
// debug.count_host_syncs): whether the plugin keeps the one-device-to-host-read-per-step
// rule, and whether the state bytes each rank reports are what its allocator holds.
// Each returns "" when the run holds, else the first reason, in a user's words.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace plait::verify {

using Records = std::vector<nlohmann::json>;

// No wait for the device outside the core's reads on any rank, and one read through the
// core's reader per step that is not logged (two on a logged one: the gathered figures).
std::string stray_host_reads(const Records& records);

// Between steps, each rank's allocator holds its reported parameters and optimizer state
// at least, and its gradients besides at most (a plugin may free them after the update),
// on the device and in host memory alike, within kStateSlack, in at least one record.
std::string unreported_state(const Records& records);

// Every byte each rank put on the wire went while one of the core's counted operations
// was in flight (debug.count_wire_bytes), within kWireSlackBytes a step.
std::string uncounted_traffic(const Records& records);
std::string traffic_figures(const Records& records);
inline constexpr int64_t kWireSlackBytes = 4096;

// Rank 0's held and reported bytes at the last record, for a row that passed.
std::string state_figures(const Records& records);

// What the allocator may hold beyond the reported state between steps: the model's
// buffers, the next batch, a few scalars.
inline constexpr int64_t kStateSlackBytes = 64 * 1024;
inline constexpr double kStateSlackFraction = 0.01;

}  // namespace plait::verify
