#include "support/pipeline_support.hpp"

#include <catch2/catch.hpp>

#include "run/prepare.hpp"

namespace plait::test {

SchedulePlan quickstart_schedule(const std::string& schedule, int pp, int m, const std::vector<std::string>& sets) {
  std::vector<std::string> all = {"parallel.pipeline=" + schedule, "parallel.pp=" + std::to_string(pp),
                                  "parallel.dp=1", "train.grad_accum=" + std::to_string(m), "model.n_layer=8"};
  all.insert(all.end(), sets.begin(), sets.end());
  return prepare_run(source_path("configs/quickstart.toml"), all).pipeline.schedule;
}

int compared_parameters(const std::string& family, int n_layer) {
  return family == "gpt2" ? 4 + 12 * n_layer : 3 + 9 * n_layer;
}

void expect_pipeline_equivalent(const std::string& schedule, int pp, const std::string& family, const std::string& dtype,
                                const std::vector<std::string>& sets, int n_layer) {
  TempDir dir;
  std::vector<std::string> all = {"parallel.pipeline=" + schedule, "parallel.pp=" + std::to_string(pp),
                                  "model.family=" + family, "model.n_layer=" + std::to_string(n_layer),
                                  "parallel.data=single"};
  all.insert(all.end(), sets.begin(), sets.end());
  const bool data_parallel = std::find(sets.begin(), sets.end(), "parallel.dp=2") != sets.end();
  ProcessResult r = quickstart_check(dir, data_parallel ? 2 : 1, dtype, 4, all);
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.output, Catch::Matchers::Contains("PASS") &&
                           Catch::Matchers::Contains("gradients after step 1: " +
                                                     std::to_string(compared_parameters(family, n_layer)) +
                                                     " parameters"));
}

}  // namespace plait::test
