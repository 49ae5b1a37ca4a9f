#include "support/test_support.hpp"

#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace plait::test {

TempDir::TempDir() {
  std::string pattern = (fs::temp_directory_path() / "plait-test-XXXXXX").string();
  path_ = ::mkdtemp(pattern.data());
}

TempDir::~TempDir() {
  // PLAIT_KEEP_TEST_DIRS=1 keeps a test's runs to look at after it failed (or passed).
  if (const char* keep = std::getenv("PLAIT_KEEP_TEST_DIRS"); keep && std::string(keep) == "1") return;
  std::error_code ec;
  fs::remove_all(path_, ec);
}

fs::path write_file(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
  return path;
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

static std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

namespace {

ProcessResult run_command(const std::string& prefix, const std::vector<std::string>& args,
                          const std::map<std::string, std::string>& env) {
  std::string cmd;
  for (const auto& [k, v] : env) cmd += k + "=" + shell_quote(v) + " ";
  cmd += prefix + shell_quote(PLAIT_BIN);
  for (const auto& a : args) cmd += " " + shell_quote(a);
  cmd += " 2>&1";
  ProcessResult result;
  FILE* pipe = ::popen(cmd.c_str(), "r");
  char buf[4096];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), pipe)) > 0) result.output.append(buf, n);
  const int status = ::pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

}  // namespace

ProcessResult run_plait(const std::vector<std::string>& args, const std::map<std::string, std::string>& env) {
  return run_command("", args, env);
}

nlohmann::json plait_json(std::vector<std::string> args) {
  args.push_back("--json");
  const ProcessResult r = run_plait(args);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const auto start = r.output.find("{\n");
  REQUIRE(start != std::string::npos);
  return nlohmann::json::parse(r.output.substr(start));
}

ProcessResult run_plait_with_file_limit(int64_t bytes, const std::vector<std::string>& args) {
  return run_command("prlimit --fsize=" + std::to_string(bytes) + " ", args, {});
}

ProcessResult run_quickstart(const fs::path& out, int steps, const std::vector<std::string>& sets) {
  std::vector<std::string> args = {"run", source_path("configs/quickstart.toml"), "--steps", std::to_string(steps),
                                   "--out", out.string()};
  for (const auto& s : sets) args.insert(args.end(), {"--set", s});
  return run_plait(args);
}

std::vector<nlohmann::json> read_metrics(const fs::path& run_dir) {
  std::vector<nlohmann::json> out;
  std::ifstream in(run_dir / "metrics.jsonl");
  std::string line;
  while (std::getline(in, line)) out.push_back(nlohmann::json::parse(line));
  return out;
}

std::string source_path(const std::string& relative) { return std::string(PLAIT_SOURCE_DIR) + "/" + relative; }

ProcessResult quickstart_check(const TempDir& dir, int ranks, const std::string& dtype, int accum,
                               const std::vector<std::string>& sets) {
  std::vector<std::string> args = {"check", source_path("configs/quickstart.toml"), "--steps", "4", "--out",
                                   (dir / "check").string()};
  std::vector<std::string> all = {"parallel.dp=" + std::to_string(ranks), "train.dtype=" + dtype,
                                  "train.grad_accum=" + std::to_string(accum), "train.grad_clip=0.5"};
  all.insert(all.end(), sets.begin(), sets.end());
  for (const auto& s : all) {
    args.push_back("--set");
    args.push_back(s);
  }
  return run_plait(args);
}

void expect_check_passed(const TempDir& dir, const ProcessResult& r, const std::string& dtype) {
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.output, Catch::Matchers::Contains("PASS") &&
                           Catch::Matchers::Contains("gradients after step 1: 28 parameters"));
  if (r.exit_code != 0) return;
  auto report = nlohmann::json::parse(read_file(dir / "check/equivalence.json"));
  CHECK(report.at("passed").get<bool>());
  CHECK(report.at("tolerance").get<double>() == (dtype == "float64" ? 1e-10 : 1e-5));
  // Clipping was on: the reference's first gradient norm is above 0.5.
  CHECK(read_metrics(dir / "check/reference").front().at("grad_norm").get<double>() > 0.5);
}

int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  const bool bound = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
                     ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
  ::close(fd);
  REQUIRE(bound);
  return ntohs(addr.sin_port);
}

}  // namespace plait::test
