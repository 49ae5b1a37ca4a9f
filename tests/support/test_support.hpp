#pragma once
// Helpers shared by the test files: temporary folders, files, and running the plait
// CLI as a real process.
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace plait::test {

namespace fs = std::filesystem;

// A fresh folder, removed with everything in it when the object goes.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const fs::path& path() const { return path_; }
  fs::path operator/(const std::string& name) const { return path_ / name; }

 private:
  fs::path path_;
};

fs::path write_file(const fs::path& path, const std::string& text);
std::string read_file(const fs::path& path);

struct ProcessResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

// Runs `plait args...` with the given environment additions.
ProcessResult run_plait(const std::vector<std::string>& args, const std::map<std::string, std::string>& env = {});
// `plait args... --json` that must succeed: its JSON document (the output from its first
// line that opens an object; warnings may come before it).
nlohmann::json plait_json(std::vector<std::string> args);
// The same under a file-size limit (prlimit --fsize): every write past `bytes` fails, as
// on a full disk.
ProcessResult run_plait_with_file_limit(int64_t bytes, const std::vector<std::string>& args);

// `plait run configs/quickstart.toml --steps steps --out out` with `sets` ("key=value"
// each) on top.
ProcessResult run_quickstart(const fs::path& out, int steps, const std::vector<std::string>& sets);

// metrics.jsonl of a run folder, one object per step.
std::vector<nlohmann::json> read_metrics(const fs::path& run_dir);

// `plait check` (the equivalence harness) of configs/quickstart.toml for 4 steps with
// clipping at 0.5, on `ranks` data-parallel ranks, in `dtype`, with `accum`
// microbatches, and `sets` ("key=value" each) on top; output in dir/check.
ProcessResult quickstart_check(const TempDir& dir, int ranks, const std::string& dtype, int accum,
                               const std::vector<std::string>& sets = {});
// What every passing check must show: exit 0, PASS, all 28 gradients compared, the
// default tolerance of its dtype, and clipping really on in the reference.
void expect_check_passed(const TempDir& dir, const ProcessResult& r, const std::string& dtype);

// A loopback port that no socket holds now, chosen by the kernel (bind to port 0), for a
// test that must name --master-port itself. A port picked at random from the ephemeral
// range can be a connection of a test running beside it: the store then cannot bind.
int free_port();

// A path inside the source tree.
std::string source_path(const std::string& relative);

}  // namespace plait::test
