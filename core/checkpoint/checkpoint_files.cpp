#include "checkpoint/checkpoint_files.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <regex>
#include <vector>

#include <fcntl.h>
#include <unistd.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "log/logging.hpp"
#include "plait/sdk/error.hpp"
#include "util/json_problem.hpp"

namespace plait::checkpoint {
namespace {

constexpr const char* kIndex = "index.json";
constexpr const char* kLatest = "latest";
// A save in progress, and a step's old copy while a re-save takes its name: hidden
// folders beside the steps, named the same way for tidy_unfinished_saves to find.
constexpr const char* kStaging = "partial";
constexpr const char* kReplaced = "replaced";

fs::path set_aside(const fs::path& root, int64_t step, const char* why) {
  return root / concat(".", step_folder_name(step), ".", why);
}

void write_durably(const fs::path& path, const std::string& text) {
  const fs::path tmp = path.string() + ".partial";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    PLAIT_CHECK(out.good(), concat("cannot write ", tmp.string()), "check that the checkpoint folder is writable");
    out << text;
    out.flush();
    PLAIT_CHECK(out.good(), concat("writing ", tmp.string(), " failed"), "check free disk space");
  }
  fsync_path(tmp);
  fs::rename(tmp, path);
}

}  // namespace

std::vector<std::pair<int64_t, fs::path>> complete_checkpoints(const fs::path& root) {
  std::vector<std::pair<int64_t, fs::path>> out;
  if (!fs::is_directory(root)) return out;
  for (const auto& entry : fs::directory_iterator(root)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("step-", 0) != 0 || !fs::exists(entry.path() / kIndex)) continue;
    try {
      out.emplace_back(std::stoll(name.substr(5)), entry.path());
    } catch (const std::exception&) {
      // not one of ours
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string step_folder_name(int64_t step) { return concat("step-", step); }

void fsync_path(const fs::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  PLAIT_CHECK(fd >= 0, concat("cannot open ", path.string(), " to sync it: ", std::strerror(errno)), "check the disk");
  const bool ok = ::fsync(fd) == 0;
  ::close(fd);
  PLAIT_CHECK(ok, concat("fsync of ", path.string(), " failed: ", std::strerror(errno)), "check the disk");
}

fs::path begin_staging(const fs::path& root, int64_t step) {
  fs::create_directories(root);
  const fs::path staging = set_aside(root, step, kStaging);
  fs::remove_all(staging);
  fs::create_directory(staging);
  return staging;
}

fs::path commit(const fs::path& root, const fs::path& staging, const CheckpointIndex& index) {
  // An index that does not cover its tensors is never written, so never loaded.
  for (const auto& [name, entry] : index.tensors) check_parts_cover(name, entry, staging.string());
  write_durably(staging / kIndex, to_json(index).dump(1));
  fsync_path(staging);
  const fs::path final_path = root / step_folder_name(index.step);
  // Saving a step again (a resumed run reaching a step it had saved): the old one goes
  // only once the new one is whole, and `latest` never points at nothing.
  const fs::path old = set_aside(root, index.step, kReplaced);
  fs::remove_all(old);
  if (fs::exists(final_path)) fs::rename(final_path, old);
  fs::rename(staging, final_path);
  fsync_path(root);
  write_durably(root / kLatest, step_folder_name(index.step) + "\n");
  fsync_path(root);
  fs::remove_all(old);
  return final_path;
}

void prune(const fs::path& root, int64_t keep_last) {
  if (keep_last <= 0) return;
  auto all = complete_checkpoints(root);
  std::string latest;
  if (std::ifstream in(root / kLatest); in) std::getline(in, latest);
  const auto excess = static_cast<int64_t>(all.size()) - keep_last;
  for (int64_t k = 0; k < excess; ++k) {
    if (all[static_cast<std::size_t>(k)].second.filename() == latest) continue;
    fs::remove_all(all[static_cast<std::size_t>(k)].second);
  }
}

std::vector<std::string> tidy_unfinished_saves(const fs::path& root) {
  std::vector<std::string> done;
  std::error_code ec;
  if (!fs::is_directory(root, ec)) return done;
  static const std::regex leftover(concat(R"(\.step-(\d+)\.()", kStaging, "|", kReplaced, ")"));
  std::vector<fs::path> found;
  for (const auto& entry : fs::directory_iterator(root, ec)) found.push_back(entry.path());
  std::sort(found.begin(), found.end());
  for (const auto& path : found) {
    std::smatch m;
    const std::string name = path.filename().string();
    if (!std::regex_match(name, m, leftover)) continue;
    const fs::path step = root / step_folder_name(std::stoll(m[1].str()));
    const bool staging = m[2] == kStaging;
    const bool restore = !staging && !fs::exists(step, ec);
    if (restore) {
      fs::rename(path, step, ec);
    } else {
      fs::remove_all(path, ec);
    }
    if (ec) {
      done.push_back(concat("could not ", restore ? "put back " : "remove ", path.string(), ": ", ec.message()));
      ec.clear();
      continue;
    }
    if (staging) {
      done.push_back(concat("removed ", path.string(), ", a save of step ", m[1].str(), " that did not finish"));
    } else {
      done.push_back(restore ? concat("put back ", step.string(), " from ", name, ": its re-save stopped before it took the name")
                             : concat("removed ", path.string(), ", step ", m[1].str(), "'s copy that a finished save replaced"));
    }
  }
  return done;
}

// A step-<N> name orders checkpoints, so it must be the step its index holds: a folder
// renamed or copied in under another step's name would be resumed as that step.
void check_name_is_step(const fs::path& folder) {
  const CheckpointIndex index = read_index(folder);
  PLAIT_CHECK(folder.filename().string() == step_folder_name(index.step),
              concat("checkpoint ", folder.string(), " holds step ", index.step, " (its index.json says so), not the step ",
                     "its name says"),
              concat("it was renamed or copied in: rename it ", step_folder_name(index.step),
                     ", or name the checkpoint to resume from"));
}

namespace {

// `latest` one behind the newest is a save that finished but crashed before `latest` was
// rewritten; any other disagreement is said, since the user may have meant `latest`.
void say_if_latest_differs(const fs::path& root, const fs::path& newest) {
  std::string latest;
  if (std::ifstream in(root / kLatest); in) std::getline(in, latest);
  if (latest.empty() || latest == newest.filename().string()) return;
  core_log().warn((root / kLatest).string(), " names ", latest, ", but ", newest.filename().string(),
                  " is newer and complete: resuming from it (name ", (root / latest).string(), " to resume from that one)");
}

}  // namespace

std::optional<fs::path> newest_checkpoint(const fs::path& root) {
  const auto all = complete_checkpoints(root);
  if (all.empty()) return std::nullopt;
  const fs::path newest = all.back().second;
  check_name_is_step(newest);
  say_if_latest_differs(root, newest);
  return newest;
}

fs::path resolve_checkpoint(const fs::path& path) {
  const CheckpointChoice choice = checkpoints_at(path);
  if (choice.named) return choice.newest_first.front();
  return *newest_checkpoint(choice.root);
}

std::optional<CheckpointChoice> checkpoints_in(const fs::path& root) {
  const auto all = complete_checkpoints(root);
  if (all.empty()) return std::nullopt;
  CheckpointChoice choice{.root = root};
  for (auto it = all.rbegin(); it != all.rend(); ++it) choice.newest_first.push_back(it->second);
  return choice;
}

CheckpointChoice checkpoints_at(const fs::path& path) {
  PLAIT_CHECK(fs::exists(path), concat("checkpoint ", path.string(), " does not exist"), "name a checkpoint or run folder");
  if (fs::exists(path / kIndex)) return {.newest_first = {path}, .root = path.parent_path(), .named = true};
  // The newest complete checkpoint first: a step-<N> name exists only once its save
  // committed, and a crash between that rename and `latest`'s leaves `latest` one behind.
  for (const fs::path& root : {path, path / "checkpoints"}) {
    if (auto choice = checkpoints_in(root)) return *choice;
    PLAIT_CHECK(!fs::exists(root / kLatest), concat((root / kLatest).string(), " points at no complete checkpoint"),
                "name a step-<N> folder that has an index.json");
  }
  const bool staging = path.filename().string().rfind(".step-", 0) == 0;
  throw Error(concat(path.string(), staging ? " is a checkpoint whose save did not finish (no index.json)"
                                            : " holds no checkpoint: no index.json and no complete step-<N> folder"),
              "name a step-<N> folder, a folder of checkpoints, or a run folder that saved one");
}

CheckpointIndex read_index(const fs::path& folder) {
  const fs::path path = folder / kIndex;
  std::error_code ec;
  PLAIT_CHECK(!fs::exists(path, ec) || fs::is_regular_file(path, ec),
              concat(path.string(), " is not a file: the checkpoint's index must be one"), "the checkpoint is damaged");
  std::ifstream in(path);
  PLAIT_CHECK(in.good(), concat(folder.string(), " is not a complete checkpoint: it has no index.json"),
              "a save that did not finish leaves no index; resume from an earlier checkpoint");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const std::exception& e) {
    throw Error(concat(path.string(), " is not valid JSON: ", json_problem(e)), "the checkpoint is damaged");
  }
  return index_from_json(j, path.string());
}

void check_file_present(const fs::path& folder, const std::string& name, const FileEntry& entry) {
  const fs::path path = folder / name;
  PLAIT_CHECK(fs::exists(path), concat("checkpoint file ", path.string(), " is missing"),
              "the checkpoint is incomplete; resume from another one");
  const auto size = static_cast<int64_t>(fs::file_size(path));
  PLAIT_CHECK(size == entry.bytes, concat("checkpoint file ", path.string(), " has ", size, " bytes, its index says ", entry.bytes),
              "the file was truncated or replaced; resume from another checkpoint");
}

std::string file_xxh3(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  PLAIT_CHECK(in.good(), concat("cannot read ", path.string()), "check the checkpoint folder");
  XXH3_state_t* state = XXH3_createState();
  XXH3_64bits_reset(state);
  std::vector<char> buffer(4 << 20);
  while (in) {
    in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    XXH3_64bits_update(state, buffer.data(), static_cast<std::size_t>(in.gcount()));
  }
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(XXH3_64bits_digest(state)));
  XXH3_freeState(state);
  return hex;
}

}  // namespace plait::checkpoint
