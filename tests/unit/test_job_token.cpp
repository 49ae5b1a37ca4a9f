// The job token: a process without it (or with another) cannot join a running job
// through its store, and is refused at once in one sentence while the job trains on;
// a token file others can read is refused as ssh refuses a key file; the launchers of
// two nodes sharing a token run the job, one with another token is refused.
#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <chrono>
#include <fstream>
#include <future>
#include <map>
#include <sstream>
#include <thread>
#include <vector>

#include "distributed/job_token.hpp"
#include "distributed/rendezvous.hpp"
#include "plait/sdk/error.hpp"
#include "support/test_support.hpp"

using namespace plait;
using namespace plait::test;
using Catch::Matchers::Contains;
using Clock = std::chrono::steady_clock;

namespace {

// A process's environment, as /proc shows it to its owner.
std::map<std::string, std::string> environment_of(int pid) {
  std::ifstream in(concat("/proc/", pid, "/environ"));
  std::map<std::string, std::string> out;
  for (std::string entry; std::getline(in, entry, '\0');) {
    const auto eq = entry.find('=');
    if (eq != std::string::npos) out[entry.substr(0, eq)] = entry.substr(eq + 1);
  }
  return out;
}

fs::path token_file(const fs::path& path, const std::string& token, mode_t mode) {
  write_file(path, token + "\n");
  ::chmod(path.c_str(), mode);
  return path;
}

// The local addresses of the sockets listening on `port` ("127.0.0.1", "0.0.0.0", "::"),
// as the kernel lists them in /proc/net/tcp and tcp6.
std::vector<std::string> listening_on(int port) {
  std::vector<std::string> out;
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream in(table);
    std::string line;
    std::getline(in, line);  // the heading
    while (std::getline(in, line)) {
      std::istringstream words(line);
      std::string slot, local, remote, state;
      words >> slot >> local >> remote >> state;
      const auto colon = local.rfind(':');
      if (state != "0A" || std::stoi(local.substr(colon + 1), nullptr, 16) != port) continue;  // 0A: LISTEN
      const std::string address = local.substr(0, colon);
      if (address == "0100007F") out.push_back("127.0.0.1");
      else if (address.find_first_not_of('0') == std::string::npos) out.push_back(address.size() == 8 ? "0.0.0.0" : "::");
      else out.push_back(address);
    }
  }
  return out;
}

}  // namespace

TEST_CASE("a one-node job's rendezvous store listens on loopback alone, a store for several nodes on every interface",
          "[token]") {
  const auto local = JobStore::host(0, "one-node", std::chrono::seconds(5), "", /*loopback_only=*/true);
  CHECK(listening_on(local->port()) == std::vector<std::string>{"127.0.0.1"});
  const auto wide = JobStore::host(0, "two-nodes", std::chrono::seconds(5), "", /*loopback_only=*/false);
  const auto addresses = listening_on(wide->port());
  REQUIRE_FALSE(addresses.empty());
  CHECK(addresses.front() != "127.0.0.1");
}

TEST_CASE("the token's check accepts the job's token only, and its key space hides the token", "[token]") {
  const std::string token = new_job_token();
  CHECK(token.size() == 32);
  CHECK(token != new_job_token());
  const TokenCheck check = make_token_check(token);
  CHECK(check.digest.size() == 64);
  CHECK(check.digest.find(token) == std::string::npos);
  CHECK(token_matches(check, token));
  CHECK_FALSE(token_matches(check, token + "x"));
  CHECK_FALSE(token_matches(check, ""));
  CHECK(token_matches(make_token_check(""), ""));
  CHECK_FALSE(token_matches(make_token_check(""), token));
  CHECK(token_key_space(token).size() == 32);
  CHECK(token_key_space(token) != token);
  CHECK(token_key_space("").empty());
}

TEST_CASE("a process without the job token, or with another, cannot join a running job, which trains on", "[dist]") {
  TempDir dir;
  const auto out = dir / "run";
  auto job = std::async(std::launch::async, [&] {
    return run_plait({"run", source_path("configs/quickstart.toml"), "--steps", "60", "--out", out.string()});
  });
  const auto give_up = Clock::now() + std::chrono::seconds(90);
  while (Clock::now() < give_up && !(fs::exists(out / "metrics.jsonl") && fs::exists(out / "ranks.json"))) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  const int rank1 = nlohmann::json::parse(read_file(out / "ranks.json"))[1].at("pid").get<int>();
  auto env = environment_of(rank1);
  REQUIRE(env.count("PLAIT_JOB_TOKEN") == 1);
  REQUIRE(env.at("PLAIT_JOB_TOKEN").size() == 32);
  // plait's launcher of a one-node job hosts its store on loopback alone.
  CHECK(listening_on(std::stoi(env.at("MASTER_PORT"))) == std::vector<std::string>{"127.0.0.1"});
  // Everything but the token, as an intruder that found the port and the job id would have it.
  const std::map<std::string, std::string> intruder = {{"RANK", "1"},
                                                       {"WORLD_SIZE", "2"},
                                                       {"LOCAL_RANK", "0"},
                                                       {"LOCAL_WORLD_SIZE", "1"},
                                                       {"MASTER_ADDR", "127.0.0.1"},
                                                       {"MASTER_PORT", env.at("MASTER_PORT")},
                                                       {"PLAIT_JOB_ID", env.at("PLAIT_JOB_ID")},
                                                       {"PLAIT_JOB_TOKEN", ""}};
  const std::vector<std::string> args = {"run", source_path("configs/quickstart.toml"), "--steps", "60",
                                         "--out", (dir / "intruder").string()};
  const auto started = Clock::now();
  const ProcessResult none = run_plait(args, intruder);
  auto wrong_env = intruder;
  wrong_env["PLAIT_JOB_TOKEN"] = new_job_token();
  const ProcessResult wrong = run_plait(args, wrong_env);
  const double seconds = std::chrono::duration<double>(Clock::now() - started).count();
  const ProcessResult r = job.get();
  INFO(none.output << "\n---\n" << wrong.output << "\n---\n" << r.output);
  CHECK(none.exit_code != 0);
  CHECK_THAT(none.output, Contains(concat("rank 1 (torchrun) has no job token, but the job at 127.0.0.1:",
                                          env.at("MASTER_PORT"), " requires one: it cannot join")) &&
                              Contains("set PLAIT_JOB_TOKEN (or PLAIT_JOB_TOKEN_FILE)"));
  CHECK(wrong.exit_code != 0);
  CHECK_THAT(wrong.output, Contains("rank 1 (torchrun)'s job token is not the job's at 127.0.0.1:"));
  CHECK(seconds < 30.0);  // refused at once, not after the rendezvous timeout
  CHECK(r.exit_code == 0);
  CHECK(read_metrics(out).size() == 60);
}

TEST_CASE("a job token file others can read is refused, two launchers sharing a token run the job, and another token "
          "is refused",
          "[dist]") {
  TempDir dir;
  const std::string token = new_job_token();
  const fs::path open_file = token_file(dir / "open-token", token, 0644);
  const ProcessResult open = run_plait({"run", source_path("configs/quickstart.toml"), "--steps", "2", "--out",
                                        (dir / "open").string()},
                                       {{"PLAIT_JOB_TOKEN_FILE", open_file.string()}});
  CHECK(open.exit_code != 0);
  CHECK_THAT(open.output, Contains(concat("PLAIT_JOB_TOKEN_FILE=", open_file.string(),
                                          " can be read or written by others (mode 644): a job token must be secret")) &&
                              Contains(concat("chmod 600 ", open_file.string())));
  CHECK_FALSE(fs::exists(dir / "open"));
  // A folder for the file is named as one, whatever its mode.
  fs::create_directories(dir / "token-folder");
  fs::permissions(dir / "token-folder", fs::perms::owner_all);
  const ProcessResult folder = run_plait({"run", source_path("configs/quickstart.toml"), "--steps", "2", "--out",
                                          (dir / "in-folder").string()},
                                         {{"PLAIT_JOB_TOKEN_FILE", (dir / "token-folder").string()}});
  CHECK(folder.exit_code != 0);
  CHECK_THAT(folder.output, Contains(concat("PLAIT_JOB_TOKEN_FILE=", (dir / "token-folder").string(),
                                            ": a folder, not the job's token file")));
  CHECK_FALSE(fs::exists(dir / "in-folder"));
  // plait config validate checks the token file as plait run would.
  const ProcessResult validate = run_plait({"config", "validate", source_path("configs/quickstart.toml")},
                                           {{"PLAIT_JOB_TOKEN_FILE", open_file.string()}});
  CHECK(validate.exit_code != 0);
  CHECK_THAT(validate.output, Contains("can be read or written by others (mode 644)"));

  const fs::path shared = token_file(dir / "token", token, 0600);
  const fs::path other = token_file(dir / "other-token", new_job_token(), 0600);
  for (const bool same : {true, false}) {
    const int port = free_port();
    auto node = [&](int n) {
      return std::async(std::launch::async, [&, n] {
        const fs::path file = n == 1 && !same ? other : shared;
        return run_plait({"run", source_path("configs/quickstart.toml"), "--steps", "3", "--nnodes", "2", "--node-rank",
                          std::to_string(n), "--nproc-per-node", "1", "--master-addr", "127.0.0.1", "--master-port",
                          std::to_string(port), "--out", (dir / concat(same ? "same" : "other", n)).string(), "--set",
                          "distributed.rendezvous_timeout_s=10"},
                         {{"PLAIT_JOB_TOKEN_FILE", file.string()}});
      });
    };
    auto f0 = node(0), f1 = node(1);
    const ProcessResult a = f0.get(), b = f1.get();
    INFO(a.output << "\n---\n" << b.output);
    if (same) {
      CHECK(a.exit_code == 0);
      CHECK(b.exit_code == 0);
      CHECK_THAT(a.output, !Contains("this job has no token"));
    } else {
      CHECK(b.exit_code != 0);
      CHECK_THAT(b.output, Contains("the launcher of node 1's job token is not the job's at 127.0.0.1:"));
      CHECK(a.exit_code != 0);  // node 0's ranks wait for ranks that never come
    }
  }
}
