#include <catch2/catch.hpp>

#include <cstdlib>

#include "distributed/core_binding.hpp"
#include "distributed/launch_env.hpp"
#include "plait/sdk/error.hpp"

using namespace plait;
using Catch::Matchers::Contains;

namespace {

// Sets variables for one test and restores the environment after it.
class Env {
 public:
  explicit Env(std::map<std::string, std::string> vars) {
    for (const char* k : {"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
                          "PLAIT_RUN_DIR", "PLAIT_JOB_ID", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID",
                          "SLURM_NTASKS_PER_NODE", "SLURM_JOB_ID", "TORCHELASTIC_RUN_ID"}) {
      if (const char* v = std::getenv(k)) saved_[k] = v;
      ::unsetenv(k);
    }
    for (const auto& [k, v] : vars) ::setenv(k.c_str(), v.c_str(), 1);
    set_ = std::move(vars);
  }
  ~Env() {
    for (const auto& [k, v] : set_) ::unsetenv(k.c_str());
    for (const auto& [k, v] : saved_) ::setenv(k.c_str(), v.c_str(), 1);
  }

 private:
  std::map<std::string, std::string> saved_, set_;
};

}  // namespace

TEST_CASE("no launcher variables: this process is not a rank", "[dist]") {
  Env env({});
  CHECK_FALSE(worker_from_env(std::nullopt, std::nullopt).has_value());
  Env one_task({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "1"}});  // srun -n 1: plait launches itself
  CHECK_FALSE(worker_from_env(std::nullopt, std::nullopt).has_value());
}

TEST_CASE("torchrun's variables make a rank whose rank 0 hosts the store", "[dist]") {
  Env env({{"RANK", "3"}, {"WORLD_SIZE", "4"}, {"LOCAL_RANK", "1"}, {"LOCAL_WORLD_SIZE", "2"},
           {"MASTER_ADDR", "10.0.0.1"}, {"MASTER_PORT", "29400"}, {"TORCHELASTIC_RUN_ID", "job7"}});
  auto w = worker_from_env(std::nullopt, std::nullopt);
  REQUIRE(w);
  CHECK(w->rank == 3);
  CHECK(w->local_rank == 1);
  CHECK(w->master_addr == "10.0.0.1");
  CHECK(w->master_port == 29400);
  CHECK(w->job_id == "job7");
  CHECK(w->started_by == "torchrun");
  CHECK_FALSE(w->store_on_launcher);
  CHECK(worker_from_env(std::string("10.9.9.9"), 1234)->master_port == 1234);  // flags win
}

TEST_CASE("Slurm's variables make a rank and need MASTER_ADDR", "[dist]") {
  Env env({{"SLURM_PROCID", "5"}, {"SLURM_NTASKS", "8"}, {"SLURM_LOCALID", "1"}, {"SLURM_NTASKS_PER_NODE", "4"},
           {"SLURM_JOB_ID", "991"}});
  CHECK_THROWS_WITH(worker_from_env(std::nullopt, std::nullopt), Contains("Slurm job has no MASTER_ADDR"));
  auto w = worker_from_env(std::string("node-a"), std::nullopt);
  REQUIRE(w);
  CHECK(w->rank == 5);
  CHECK(w->world_size == 8);
  CHECK(w->master_port == 29500);
  CHECK(w->started_by == "slurm");
}

TEST_CASE("plait's launcher environment round-trips and marks the launcher's store", "[dist]") {
  WorkerEnv w;
  w.rank = 1;
  w.world_size = 2;
  w.master_port = 4000;
  w.job_id = "abc";
  w.run_dir = "/tmp/run";
  auto vars = worker_environment(w);
  Env env(vars);
  auto back = worker_from_env(std::nullopt, std::nullopt);
  REQUIRE(back);
  CHECK(back->started_by == "plait");
  CHECK(back->store_on_launcher);
  CHECK(back->run_dir == "/tmp/run");
  CHECK(back->job_id == "abc");
  Env bad({{"RANK", "x"}, {"WORLD_SIZE", "2"}});
  CHECK_THROWS_WITH(worker_from_env(std::nullopt, std::nullopt), Contains("RANK=x is not an integer"));
}

TEST_CASE("bind_cores: each local rank takes a contiguous slice, the first ones one core more", "[dist]") {
  const std::vector<int> cores = {0, 1, 2, 5, 7};
  CHECK(core_slice(cores, 2, 0) == std::vector<int>{0, 1, 2});
  CHECK(core_slice(cores, 2, 1) == std::vector<int>{5, 7});
  CHECK(core_slice(cores, 5, 4) == std::vector<int>{7});
  CHECK(core_slice({3}, 1, 0) == std::vector<int>{3});
  CHECK(format_core_list({0, 1, 2, 5, 7, 8}) == "0-2,5,7-8");
  try {
    core_slice({0, 1}, 4, 3);
    FAIL("four ranks on two cores were not refused");
  } catch (const Error& e) {
    CHECK_THAT(e.what(), Contains("may use 2 cores (0-1), fewer than its 4 ranks"));
    CHECK_THAT(e.hint(), Contains("bind_cores = false"));
  }
}
