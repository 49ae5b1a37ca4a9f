#include "distributed/flight_exchange.hpp"

#include <filesystem>
#include <fstream>
#include <iterator>
#include <thread>

#include "distributed/rendezvous.hpp"
#include "plait/sdk/error.hpp"

namespace plait {
namespace fs = std::filesystem;
namespace {

fs::path record_path(const std::string& run_folder, int rank) {
  return fs::path(run_folder) / "flight" / concat("rank-", rank, ".json");
}

std::string key(int attempt, int rank) { return concat("flight/", attempt, "/", rank); }

}  // namespace

void post_flight_records(JobStore& job, int attempt, const std::string& run_folder, const std::vector<int>& ranks) {
  for (int rank : ranks) {
    std::ifstream in(record_path(run_folder, rank), std::ios::binary);
    // "" says "this rank wrote none" (killed), so that the others do not wait for it.
    job.set(key(attempt, rank), in ? std::string(std::istreambuf_iterator<char>(in), {}) : std::string());
  }
}

std::vector<int> take_flight_records(JobStore& job, int attempt, const std::string& run_folder, int world_size,
                                     std::chrono::milliseconds wait) {
  std::vector<int> missing;
  for (int rank = 0; rank < world_size; ++rank) {
    if (!fs::exists(record_path(run_folder, rank))) missing.push_back(rank);
  }
  const auto deadline = std::chrono::steady_clock::now() + wait;
  std::error_code ec;
  fs::create_directories(fs::path(run_folder) / "flight", ec);
  while (!missing.empty()) {
    std::vector<int> still;
    for (int rank : missing) {
      const auto text = job.try_get(key(attempt, rank));
      if (!text) {
        still.push_back(rank);
      } else if (!text->empty()) {
        std::ofstream(record_path(run_folder, rank), std::ios::binary) << *text;
      }
    }
    missing = std::move(still);
    if (missing.empty() || std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return missing;
}

}  // namespace plait
