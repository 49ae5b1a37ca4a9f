#include "debug/flight_summary.hpp"

#include <signal.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <thread>

#include <nlohmann/json.hpp>

#include "debug/flight_report.hpp"

namespace plait {
namespace fs = std::filesystem;

std::string summarise_flight(const std::string& run_folder, int world_size, bool live) {
  const FlightRecords records = read_flight_records(run_folder);
  if (!records.ranks.empty()) world_size = std::max(world_size, records.ranks.rbegin()->first + 1);
  const std::string paragraph = flight_paragraph(records, analyse_flight(records, world_size, live), world_size);
  if (!paragraph.empty()) {
    std::ofstream(fs::path(run_folder) / "flight" / "report.txt") << paragraph << "\n";
  }
  return paragraph;
}

std::vector<AttemptFlight> attempts_flight(const std::string& run_folder, int world_size, bool live) {
  const fs::path flight = fs::path(run_folder) / "flight";
  static const std::regex kept(R"(attempt-(\d+))");
  std::vector<AttemptFlight> ended;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(flight, ec)) {
    std::smatch m;
    const std::string name = entry.path().filename().string();
    if (entry.is_directory(ec) && std::regex_match(name, m, kept)) ended.push_back({std::stoi(m[1].str()), entry.path().string(), ""});
  }
  std::sort(ended.begin(), ended.end(), [](const auto& a, const auto& b) { return a.attempt > b.attempt; });
  std::vector<AttemptFlight> out;
  // The latest start's: its records are flight/'s own (none when it ended well and no one asked).
  out.push_back({ended.empty() ? 0 : ended.front().attempt + 1, flight.string(), ""});
  out.insert(out.end(), ended.begin(), ended.end());
  for (auto& a : out) {
    const FlightRecords records = read_flight_folder(a.folder);
    int world = world_size;
    if (!records.ranks.empty()) world = std::max(world, records.ranks.rbegin()->first + 1);
    a.paragraph = flight_paragraph(records, analyse_flight(records, world, live && a.folder == flight.string()), world);
  }
  return out;
}

namespace {
int64_t now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Whether `pid` is a rank started into this run folder (its --out), not a later process
// that reuses the number.
bool runs_folder(int pid, const fs::path& folder) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/cmdline");
  if (!in) return false;
  std::vector<std::string> args;
  for (std::string arg; std::getline(in, arg, '\0');) args.push_back(arg);
  std::error_code ec;
  for (std::size_t i = 0; i + 1 < args.size(); ++i) {
    if (args[i] == "--out" && fs::weakly_canonical(args[i + 1], ec) == folder) return true;
  }
  return false;
}

int64_t written_us(const std::string& run_folder, int rank) {
  try {
    std::ifstream in(fs::path(run_folder) / "flight" / ("rank-" + std::to_string(rank) + ".json"));
    if (!in) return 0;
    return nlohmann::json::parse(in).value("written_us", int64_t{0});
  } catch (const std::exception&) {
    return 0;  // being written: not yet
  }
}
}  // namespace

std::vector<LiveRank> live_ranks(const std::string& run_folder) {
  std::vector<LiveRank> out;
  std::ifstream in(fs::path(run_folder) / "ranks.json");
  if (!in) return out;
  nlohmann::json listing;
  try {
    listing = nlohmann::json::parse(in);
  } catch (const std::exception&) {
    return out;
  }
  std::error_code ec;
  const fs::path folder = fs::weakly_canonical(run_folder, ec);
  for (const auto& r : listing) {
    const int pid = r.value("pid", 0);
    if (pid > 0 && runs_folder(pid, folder)) out.push_back({r.value("rank", 0), pid});
  }
  return out;
}

std::vector<int> request_flight_records(const std::string& run_folder, const std::vector<LiveRank>& ranks,
                                        std::chrono::milliseconds wait) {
  const int64_t asked = now_us();
  for (const auto& r : ranks) ::kill(r.pid, SIGUSR1);
  const auto deadline = std::chrono::steady_clock::now() + wait;
  std::vector<int> missing;
  do {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    missing.clear();
    for (const auto& r : ranks) {
      if (written_us(run_folder, r.rank) < asked) missing.push_back(r.rank);
    }
  } while (!missing.empty() && std::chrono::steady_clock::now() < deadline);
  return missing;
}

}  // namespace plait
