// plait plan --explain: one config's predicted memory and step time on a machine, as text
// and as JSON, the same figures the planner computes; --gpus, and the refusals.
#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <set>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "plan/config_prediction.hpp"
#include "plan/hardware.hpp"
#include "run/prepare.hpp"
#include "support/test_support.hpp"

using namespace plait;
using namespace plait::test;
using Catch::Matchers::Contains;

namespace {

std::vector<std::string> explain_args(const std::vector<std::string>& sets, const std::vector<std::string>& more) {
  std::vector<std::string> args = {"plan", "--explain", source_path("configs/quickstart.toml")};
  for (const std::string& s : sets) args.insert(args.end(), {"--set", s});
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

nlohmann::json explain_json(const std::vector<std::string>& sets, const std::vector<std::string>& more) {
  return plait_json(explain_args(sets, more));
}

}  // namespace

TEST_CASE("plait plan --explain gives the planner's figures for a config, as text and as JSON", "[plan]") {
  const std::vector<std::string> sets = {"parallel.data=zero", "zero.stage=3", "train.grad_accum=2"};
  const nlohmann::json j = explain_json(sets, {"--hardware", "a100-80g"});
  const ConfigPrediction p =
      predict_config(prepare_run(source_path("configs/quickstart.toml"), sets), load_hardware("a100-80g"));
  CHECK(j.at("hardware") == "a100-80g");
  CHECK(j.at("gpus").get<int64_t>() == 2);
  CHECK(j.at("data") == "zero");
  CHECK(j.at("fits").get<bool>());
  CHECK(j.at("ranks").at(0).at("device_bytes").get<int64_t>() == p.ranks.at(0).device());
  CHECK(j.at("ranks").at(0).at("activation_bytes").get<int64_t>() == p.ranks.at(0).activations);
  CHECK(j.at("phases").at("step_ms").get<double>() == Approx(p.phases.total() * 1e3).epsilon(1e-12));
  // A machine whose AdamW rate was measured steps its state at that rate.
  Hardware measured = load_hardware("a100-80g");
  measured.adam_gbps = 2.0;
  const ConfigPrediction at_rate = predict_config(prepare_run(source_path("configs/quickstart.toml"), sets), measured);
  const StateBytes& state = at_rate.ranks.at(0).state;
  CHECK(at_rate.phases.optimizer == Approx(static_cast<double>(state.params + state.grads + state.optimizer) / 2e9));
  // The step's tokens are the global batch's: dp 2 x 2 microbatches x 8 rows x 64 tokens.
  CHECK(j.at("tokens_per_step").get<double>() == 2048.0);
  const double step_s = j.at("phases").at("step_ms").get<double>() / 1e3;
  CHECK(j.at("tokens_per_s_per_gpu").get<double>() == Approx(2048.0 / step_s / 2));
  double phases = 0;
  for (const auto& [name, ms] : j.at("phases").items()) {
    if (name != "step_ms") phases += ms.get<double>();
  }
  CHECK(phases == Approx(j.at("phases").at("step_ms").get<double>()));
  // zero 3 gathers ahead of the forward and reduce-scatters under the backward: its
  // collectives are in the step, each with what it may hide under; the gradient norm's
  // sums, after the backward, hide under nothing.
  std::set<std::string> overlaps;
  for (const auto& op : j.at("data_ops")) {
    const std::string under = op.at("overlaps").get<std::string>();
    overlaps.insert(under);
    CHECK((under == "none") == (op.at("what").get<std::string>() == "gradient norm"));
  }
  CHECK(overlaps == std::set<std::string>{"backward", "forward", "none"});

  const ProcessResult text = run_plait(explain_args(sets, {"--hardware", "a100-80g"}));
  INFO(text.output);
  CHECK(text.exit_code == 0);
  CHECK_THAT(text.output, Contains("on 2 x a100-80g (") && Contains("dp 2 x pp 1 x tp 1; data 'zero'") &&
                              Contains("memory per accelerator (pipeline rank 0, the fullest)") && Contains("activations held") &&
                              Contains(" usable: fits") && Contains("data parallel comm (exposed)") &&
                              Contains("tokens/s per accelerator; MFU "));
}

TEST_CASE("plait plan --gpus gives data parallel the rest of the accelerators: zero 3's shards shrink with it",
          "[plan]") {
  const std::vector<std::string> sets = {"parallel.data=zero", "zero.stage=3", "parallel.pipeline=1f1b",
                                         "parallel.pp=2", "parallel.dp=1", "train.grad_accum=2"};
  const nlohmann::json two = explain_json(sets, {"--hardware", "h100-sxm"});
  const nlohmann::json many = explain_json(sets, {"--hardware", "h100-sxm", "--gpus", "64"});
  CHECK(many.at("dp").get<int64_t>() == 32);
  CHECK(many.at("pp").get<int64_t>() == 2);
  REQUIRE(many.at("ranks").size() == 2);
  for (std::size_t r = 0; r < 2; ++r) {
    const auto whole = two.at("ranks").at(r).at("param_bytes").get<double>();
    const auto shard = many.at("ranks").at(r).at("param_bytes").get<double>();
    INFO("pipeline rank " << r << ": " << whole << " bytes unsharded, " << shard << " in 32 shards");
    CHECK(std::abs(shard * 32 - whole) <= 0.02 * whole);  // padding to the shard count aside
  }
  // Each step now moves 32 times the tokens.
  CHECK(many.at("tokens_per_step").get<double>() == 32 * two.at("tokens_per_step").get<double>());
}

TEST_CASE("plait plan --explain says what does not fit, and refuses what it cannot plan", "[plan]") {
  const nlohmann::json big = explain_json({"model.family=llama", "model.size=7b", "parallel.data=single",
                                           "parallel.dp=1", "data.seq_len=4096", "model.block_size=4096"},
                                          {"--hardware", "a100-80g"});
  CHECK_FALSE(big.at("fits").get<bool>());
  CHECK_THAT(big.at("why_not").get<std::string>(),
             Contains("pipeline rank 0 needs ") && Contains(" GiB of the 78 GiB an accelerator can hold"));

  const ProcessResult odd = run_plait(explain_args({"parallel.pipeline=1f1b", "parallel.pp=2", "parallel.dp=1",
                                                    "train.grad_accum=2"},
                                                   {"--gpus", "7"}));
  CHECK(odd.exit_code == 1);
  CHECK_THAT(odd.output, Contains("--gpus 7: the config's pp 2 x tp 1 = 2 does not divide it") &&
                             Contains("give a multiple of 2"));
  // The data parallel degree --gpus makes is named by --gpus, not as a --set the user never typed.
  const ProcessResult alone = run_plait(explain_args({"parallel.data=single", "parallel.dp=1"}, {"--gpus", "2"}));
  CHECK(alone.exit_code == 1);
  CHECK_THAT(alone.output, Contains("cannot be combined with parallel.dp = 2 (--gpus 2, as parallel.dp=2)"));
  CHECK_THAT(alone.output, !Contains("--set parallel.dp"));
  const ProcessResult f64 = run_plait(explain_args({"train.dtype=float64"}, {}));
  CHECK(f64.exit_code == 1);
  CHECK_THAT(f64.output, Contains("train.dtype = \"float64\": a hardware file gives bf16 and fp32 peaks only"));
  const ProcessResult nowhere = run_plait(explain_args({}, {"--hardware", "tpu-v9"}));
  CHECK(nowhere.exit_code == 1);
  CHECK_THAT(nowhere.output, Contains("tpu-v9"));
  const ProcessResult no_gpus = run_plait(explain_args({}, {"--gpus", "0"}));
  CHECK(no_gpus.exit_code != 0);
  CHECK_THAT(no_gpus.output, Contains("--gpus"));
}

TEST_CASE("plait plan --explain --measure builds each pipeline rank's first on the meta device at any size, its "
          "state the prediction's", "[plan]") {
  // A 70B-shaped Llama on 1,024 accelerators: 3D with sequence parallel and zero 1, which
  // no machine here could hold, built and stepped in well under a second per rank.
  const std::vector<std::string> args = {
      "plan", "--explain", source_path("configs/plan/pretrain.toml"), "--set", "model.family=llama", "--set",
      "model.size=70b", "--set", "parallel.data=zero", "--set", "zero.stage=1", "--set", "parallel.tensor=megatron",
      "--set", "parallel.tp=8", "--set", "parallel.pipeline=1f1b", "--set", "parallel.pp=4", "--set",
      "megatron.sequence_parallel=true", "--set", "train.activation_checkpointing=full", "--gpus", "1024",
      "--hardware", "h100-sxm", "--measure", "--json"};
  const nlohmann::json j = plait_json(args);
  const nlohmann::json& measured = j.at("measured_on_meta");
  REQUIRE(measured.size() == 4);
  for (std::size_t pp_rank = 0; pp_rank < 4; ++pp_rank) {
    const nlohmann::json& m = measured.at(pp_rank);
    INFO(m.dump());
    CHECK(m.at("rank").get<int64_t>() == static_cast<int64_t>(pp_rank) * 32 * 8);  // dp 32 x tp 8 per stage
    for (const auto& [what, row] : m.at("state").items()) CHECK(row.at("measured") == row.at("predicted"));
    CHECK(m.at("state").at("parameters").at("measured").get<int64_t>() > 3LL << 30);  // about 4 GiB of bf16 each
    // Sequence parallel's gathers and reductions around each block, zero 1's per group.
    const nlohmann::json& comm = m.at("comm");
    CHECK(comm.at("tp.all_gather").at("calls").get<int64_t>() > 0);
    CHECK(comm.at("tp.reduce_scatter").at("calls").get<int64_t>() > 0);
    CHECK(comm.at("dp.reduce_scatter").at("payload_bytes").get<int64_t>() ==
          m.at("state").at("parameters").at("measured").get<int64_t>());
    CHECK(comm.at("pp.send").at("calls").get<int64_t>() > 0);
  }
  const ProcessResult text = run_plait(std::vector<std::string>(args.begin(), args.end() - 1));
  CHECK(text.exit_code == 0);
  CHECK_THAT(text.output, Contains("rank 768 (pipeline rank 3) built and stepped once on the meta device:") &&
                              Contains("tp.reduce_scatter"));
  const ProcessResult searching = run_plait({"plan", "--model", "gpt2-124m", "--gpus", "8", "--measure"});
  CHECK(searching.exit_code == 1);
  CHECK_THAT(searching.output, Contains("--measure builds one config's ranks on the meta device, and there is no "
                                        "--explain CONFIG"));
}

TEST_CASE("plait plan --against RUN sets the run's own phases and memory beside its config's prediction", "[plan]") {
  TempDir dir;
  const ProcessResult ran = run_quickstart(dir / "run", 4, {"checkpoint.final=false"});
  INFO(ran.output);
  REQUIRE(ran.exit_code == 0);
  const nlohmann::json j = plait_json({"plan", "--against", (dir / "run").string(), "--hardware", "a100-80g"});
  const nlohmann::json& a = j.at("against");
  CHECK(a.at("steps").get<int64_t>() == 3);  // the first step warms up
  // The medians of steps 2 to 4, as metrics.jsonl has them.
  std::vector<nlohmann::json> steps = read_metrics(dir / "run");
  REQUIRE(steps.size() == 4);
  auto median_of = [&](const std::function<double(const nlohmann::json&)>& f) {
    std::vector<double> v = {f(steps[1]), f(steps[2]), f(steps[3])};
    std::sort(v.begin(), v.end());
    return v[1];
  };
  CHECK(a.at("phases_ms").at("step").at("measured").get<double>() ==
        Approx(median_of([](const nlohmann::json& s) { return s.at("step_ms").get<double>(); })));
  CHECK(a.at("phases_ms").at("data parallel comm (exposed)").at("measured").get<double>() ==
        Approx(median_of([](const nlohmann::json& s) { return s.value("time.comm_exposed.dp.all_reduce_ms", 0.0); })));
  CHECK(a.at("phases_ms").at("step").at("predicted").get<double>() == Approx(j.at("phases").at("step_ms").get<double>()));
  // A run's forward and backward are set beside the products, the kernels and what the
  // data plugin's collectives take from them.
  const nlohmann::json& predicted = j.at("phases");
  CHECK(a.at("phases_ms").at("compute (products, kernels, dp comm beside)").at("predicted").get<double>() ==
        Approx(predicted.at("compute_ms").get<double>() + predicted.at("memory_bound_ms").get<double>() +
               predicted.at("dp_comm_beside_ms").get<double>()));
  // Memory as the cost model and the activation model have it: rank 0's, exactly or nearly.
  const nlohmann::json& bytes = a.at("rank_0_bytes");
  CHECK(bytes.at("parameters").at("predicted") == bytes.at("parameters").at("measured"));
  CHECK(bytes.at("optimizer state").at("predicted") == bytes.at("optimizer state").at("measured"));
  CHECK(bytes.at("activations held").at("predicted").get<double>() ==
        Approx(bytes.at("activations held").at("measured").get<double>()).epsilon(0.005));

  const ProcessResult not_run = run_plait({"plan", "--against", (dir / "run" / "metrics.jsonl").string()});
  CHECK(not_run.exit_code == 1);
  CHECK_THAT(not_run.output, Contains(": not a run folder (it has no config.lock.toml)"));
  fs::create_directories(dir / "empty");
  const ProcessResult empty = run_plait({"plan", "--against", (dir / "empty").string()});
  CHECK(empty.exit_code == 1);
  CHECK_THAT(empty.output, Contains("neither a run folder nor a folder of runs"));
  const ProcessResult one = run_plait({"plan", "--against", dir.path().string()});
  CHECK(one.exit_code == 1);
  CHECK_THAT(one.output, Contains("--against: the folder holds 1 run, and a ranking takes two or more"));
  const ProcessResult untimed_run = run_quickstart(dir / "untimed", 2, {"train.phase_timing=false", "checkpoint.final=false"});
  REQUIRE(untimed_run.exit_code == 0);
  const ProcessResult untimed = run_plait({"plan", "--against", (dir / "untimed").string()});
  CHECK(untimed.exit_code == 1);
  CHECK_THAT(untimed.output, Contains("the run timed no phases ([train] phase_timing = false)"));
}

TEST_CASE("plait plan --against SWEEP ranks its runs as the planner does, beside their measured speed", "[plan]") {
  TempDir dir;
  const ProcessResult swept =
      run_plait({"sweep", source_path("configs/quickstart.toml"), "--vary", "parallel.data=ddp,zero", "--vary",
                 "train.activation_checkpointing=none,full", "--steps", "3", "--repeats", "2", "--set",
                 "checkpoint.final=false", "--out", (dir / "sweep").string()});
  INFO(swept.output);
  REQUIRE(swept.exit_code == 0);
  const nlohmann::json j = plait_json({"plan", "--against", (dir / "sweep").string(), "--hardware", "a100-80g"});
  const nlohmann::json& runs = j.at("runs");
  REQUIRE(runs.size() == 4);
  // A run's speed: the midpoint median of its steps after the first, then of its repeats, per rank.
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
  };
  std::set<int64_t> measured_ranks;
  double fastest = 0;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const nlohmann::json& r = runs[i];
    INFO(r.dump());
    CHECK(r.at("predicted_rank").get<int64_t>() == static_cast<int64_t>(i + 1));
    if (i > 0) {
      CHECK(r.at("predicted_tokens_per_s_per_gpu").get<double>() <=
            runs[i - 1].at("predicted_tokens_per_s_per_gpu").get<double>());
    }
    measured_ranks.insert(r.at("measured_rank").get<int64_t>());
    REQUIRE(r.at("folders").size() == 2);
    std::vector<double> repeats;
    for (const auto& folder : r.at("folders")) {
      std::vector<double> steps;
      for (const nlohmann::json& m : read_metrics(folder.get<std::string>())) steps.push_back(m.at("tokens_per_s").get<double>());
      REQUIRE(steps.size() == 3);
      repeats.push_back(median({steps[1], steps[2]}));
    }
    const double measured = r.at("measured_tokens_per_s_per_gpu").get<double>();
    CHECK(measured == Approx(median(repeats) / 2));
    if (r.at("measured_rank").get<int64_t>() == 1) {
      CHECK(j.at("fastest") == r.at("name"));
      fastest = measured;
    }
  }
  CHECK(measured_ranks == std::set<int64_t>{1, 2, 3, 4});
  CHECK(j.at("first_choice") == runs[0].at("name"));
  CHECK(j.at("first_choice_shortfall").get<double>() ==
        Approx(1 - runs[0].at("measured_tokens_per_s_per_gpu").get<double>() / fastest));
  // Each prediction is --explain's of the run's own config.
  const std::string first_config = (fs::path(runs[0].at("folders")[0].get<std::string>()) / "config.lock.toml").string();
  const nlohmann::json explained = plait_json({"plan", "--explain", first_config, "--hardware", "a100-80g"});
  CHECK(runs[0].at("predicted_tokens_per_s_per_gpu").get<double>() ==
        Approx(explained.at("tokens_per_s_per_gpu").get<double>()));

  const ProcessResult text = run_plait({"plan", "--against", (dir / "sweep").string(), "--hardware", "a100-80g"});
  CHECK(text.exit_code == 0);
  CHECK_THAT(text.output, Contains("4 runs, as the planner ranks them on a100-80g") &&
                              Contains("the planner's first choice, " + runs[0].at("name").get<std::string>()));
  const ProcessResult mixed = run_plait(
      {"plan", "--against", (dir / "sweep").string(), "--explain", source_path("configs/quickstart.toml")});
  CHECK(mixed.exit_code == 1);
  CHECK_THAT(mixed.output, Contains("is a folder of runs, which are ranked as they ran"));
}

TEST_CASE("plait plan --calibrate measures this machine as cpu-local, which --hardware cpu-local then reads", "[plan]") {
  TempDir dir;
  const std::map<std::string, std::string> home = {{"XDG_CONFIG_HOME", dir.path().string()}};
  const ProcessResult before = run_plait(explain_args({}, {"--hardware", "cpu-local"}), home);
  CHECK(before.exit_code == 1);
  CHECK_THAT(before.output, Contains("no hardware named 'cpu-local'") &&
                                Contains("cpu-local is this machine once `plait plan --calibrate` measured it"));
  const ProcessResult measured = run_plait({"plan", "--calibrate"}, home);
  INFO(measured.output);
  REQUIRE(measured.exit_code == 0);
  const fs::path file = dir / "plait" / "hardware" / "cpu-local.toml";
  REQUIRE(fs::is_regular_file(file));
  const Hardware hw = load_hardware(file.string());
  CHECK(hw.peak_fp32_tflops > 0);
  CHECK(hw.memory_gbps > 0);
  CHECK(hw.gpus_per_node >= 2);
  CHECK(hw.intra_node.all_reduce.bus_gbps > 0);
  CHECK(hw.intra_node.send.latency_us > 0);
  // Each collective's times at 4 KiB, 64 KiB-4 MiB and 32 MiB (the bytes an all-reduce
  // member moves over 2 ranks: the buffer), the first its latency, the last its stream.
  CHECK(hw.intra_node.all_reduce.bus_kib == std::vector<double>{4, 64, 256, 1024, 4096, 32768});
  REQUIRE(hw.intra_node.all_reduce.times_us.size() == 6);
  CHECK(hw.intra_node.all_reduce.times_us.front() == Approx(hw.intra_node.all_reduce.latency_us).epsilon(0.01));
  CHECK(hw.intra_node.all_reduce.times_us.back() > hw.intra_node.all_reduce.times_us.front());
  CHECK(hw.intra_node.send.times_us.size() == 6);
  REQUIRE(hw.adam_gbps.has_value());
  CHECK(*hw.adam_gbps > 0);
  CHECK((hw.comm_overlap >= 0 && hw.comm_overlap <= 1));
  // A training step's products (cold operands, fresh outputs) reach at most the peak's
  // hot square ones; the fused attention and the tanh GELU are measured too.
  for (double e : hw.gemm_efficiency) CHECK((e > 0 && e <= 1));
  REQUIRE(hw.attention_efficiency.has_value());
  CHECK((*hw.attention_efficiency > 0 && *hw.attention_efficiency <= 1));
  REQUIRE(hw.activation_gelems.has_value());
  CHECK(*hw.activation_gelems > 0);
  const std::string text = read_file(file);
  CHECK_THAT(text, Contains("links: gloo between "));
  // How far the ranks drift apart between two synchronisations is measured, not assumed.
  CHECK_THAT(text, Contains("sync_skew_us_per_sqrt_ms = "));
  CHECK_THAT(text, Contains("sync_skew_us_per_sqrt_ms: a 4 KiB all-reduce's wait beyond its latency after 2, 8 and 32 ms"));
  CHECK(hw.sync_skew_us_per_sqrt_ms >= 0);
  // This machine's 2 cores each run a rank, so overlap is not measured but known to be 0.
  if (std::thread::hardware_concurrency() <= 2) {
    CHECK(hw.comm_overlap == 0);
    CHECK_THAT(text, Contains("comm_overlap: 0, not measured: each of the 2 ranks computes on a core of its own"));
  }
  const ProcessResult explained = run_plait(explain_args({}, {"--hardware", "cpu-local"}), home);
  INFO(explained.output);
  CHECK(explained.exit_code == 0);
  CHECK_THAT(explained.output, Contains("on 2 x cpu-local (this machine: "));

  write_file(dir / "taken.toml", "# mine\n");
  const ProcessResult taken = run_plait({"plan", "--calibrate", "--write", (dir / "taken.toml").string()}, home);
  CHECK(taken.exit_code == 1);
  CHECK_THAT(taken.output, Contains("the file exists"));
  CHECK(read_file(dir / "taken.toml") == "# mine\n");
  const ProcessResult mixed = run_plait({"plan", "--calibrate", "--model", "gpt2-124m"}, home);
  CHECK(mixed.exit_code == 1);
  CHECK_THAT(mixed.output, Contains("plait plan --calibrate measures this machine and takes no --model"));
}

namespace {

// A folder of two runs of one config, copied from one real run: `b` measured `faster`
// times `a`'s tokens/s in every step. The planner predicts them alike.
fs::path two_runs_alike(const TempDir& dir, double faster) {
  const ProcessResult ran = run_quickstart(dir / "one", 3, {"checkpoint.final=false"});
  INFO(ran.output);
  REQUIRE(ran.exit_code == 0);
  const fs::path sweep = dir / "sweep";
  fs::create_directories(sweep);
  for (const char* name : {"a", "b"}) fs::copy(dir / "one", sweep / name, fs::copy_options::recursive);
  std::string lines;
  for (nlohmann::json m : read_metrics(sweep / "b")) {
    m["tokens_per_s"] = m.at("tokens_per_s").get<double>() * faster;
    lines += m.dump() + "\n";
  }
  write_file(sweep / "b" / "metrics.jsonl", lines);
  return sweep;
}

}  // namespace

TEST_CASE("plait plan --against SWEEP: runs predicted alike share a rank, and the first choice is the best of them",
          "[plan]") {
  TempDir dir;
  const fs::path sweep = two_runs_alike(dir, 1 / 0.702);  // a measured 29.8% below b
  const nlohmann::json j = plait_json({"plan", "--against", sweep.string(), "--hardware", "a100-80g"});
  const nlohmann::json& runs = j.at("runs");
  REQUIRE(runs.size() == 2);
  for (const nlohmann::json& r : runs) CHECK(r.at("predicted_rank").get<int64_t>() == 1);
  CHECK(j.at("first_choices").size() == 2);
  // The planner cannot tell them apart, so it has not chosen the slower one.
  CHECK(j.at("first_choice") == "b");
  CHECK(j.at("fastest") == "b");
  CHECK(j.at("first_choice_shortfall").get<double>() == Approx(0).margin(1e-12));
  const ProcessResult text = run_plait({"plan", "--against", sweep.string(), "--hardware", "a100-80g"});
  INFO(text.output);
  CHECK(text.exit_code == 0);
  CHECK_THAT(text.output, Contains(" alike (") && Contains("does not choose between them; the best measured of them, b, "
                                                           "is the fastest measured run"));
  CHECK(text.output.find("below the fastest") == std::string::npos);

  // Predicted apart, the shortfall is said in the table's own figures.
  const fs::path c = sweep / "c";
  fs::copy(sweep / "a", c, fs::copy_options::recursive);
  fs::remove_all(sweep / "a");
  std::string lock = read_file(c / "config.lock.toml");
  const std::string none = "activation_checkpointing = \"none\"";
  REQUIRE(lock.find(none) != std::string::npos);
  write_file(c / "config.lock.toml", lock.replace(lock.find(none), none.size(), "activation_checkpointing = \"full\""));
  const nlohmann::json apart = plait_json({"plan", "--against", sweep.string(), "--hardware", "a100-80g"});
  std::set<int64_t> predicted;
  for (const nlohmann::json& r : apart.at("runs")) predicted.insert(r.at("predicted_rank").get<int64_t>());
  CHECK(predicted == std::set<int64_t>{1, 2});
}

TEST_CASE("plait plan --against says when the runs ran on another kind of machine than the hardware file describes",
          "[plan]") {
  TempDir dir;
  const fs::path sweep = two_runs_alike(dir, 1.0);
  const fs::path cpus = write_file(dir / "cpus.toml", concat("extends = \"", shipped_hardware_dir(),
                                                             "/a100-80g.toml\"\n[hardware]\ndevice = \"cpu\"\n"));
  const nlohmann::json gpu = plait_json({"plan", "--against", sweep.string(), "--hardware", "h100-sxm"});
  REQUIRE(gpu.at("warnings").size() == 1);
  CHECK_THAT(gpu.at("warnings")[0].get<std::string>(),
             Contains("the 2 runs were measured on CPU ranks (cpu)") && Contains("but h100-sxm describes GPUs (cuda)") &&
                 Contains("--hardware cpu-local"));
  const ProcessResult text = run_plait({"plan", "--against", sweep.string(), "--hardware", "h100-sxm"});
  CHECK_THAT(text.output, Contains("warning: the 2 runs were measured on CPU ranks (cpu)"));
  const ProcessResult one = run_plait({"plan", "--against", (sweep / "a").string(), "--hardware", "h100-sxm"});
  INFO(one.output);
  CHECK(one.exit_code == 0);
  CHECK_THAT(one.output, Contains("warning: the run was measured on CPU ranks (cpu)"));
  // A hardware file of CPU ranks is the runs' kind of machine: nothing to say.
  CHECK(plait_json({"plan", "--against", sweep.string(), "--hardware", cpus.string()}).at("warnings").empty());
  CHECK(plait_json({"plan", "--against", (sweep / "a").string(), "--hardware", cpus.string()})
            .at("against").at("warnings").empty());
}

TEST_CASE("plait plan --explain takes [parallel] stage_blocks, dp = -1 with --gpus, and --tokens with a suffix",
          "[plan]") {
  const std::vector<std::string> pipeline = {"model.n_layer=3", "parallel.pipeline=1f1b", "parallel.pp=2",
                                             "parallel.dp=1", "train.grad_accum=2"};
  auto with = [&](const std::string& blocks) {
    std::vector<std::string> sets = pipeline;
    sets.push_back("parallel.stage_blocks=" + blocks);
    return explain_json(sets, {"--hardware", "a100-80g"});
  };
  // 3 blocks on 2 stages, as `plait run` cuts them: the last stage has the head, so giving
  // it the second block makes it the busier one.
  const nlohmann::json light_last = with("[2, 1]"), heavy_last = with("[1, 2]");
  REQUIRE(light_last.at("ranks").size() == 2);
  CHECK(heavy_last.at("phases").at("compute_ms").get<double>() > light_last.at("phases").at("compute_ms").get<double>());
  // An even cut written out is the even cut.
  std::vector<std::string> even = pipeline;
  even[0] = "model.n_layer=4";
  const nlohmann::json balanced = explain_json(even, {"--hardware", "a100-80g"});
  even.push_back("parallel.stage_blocks=[2, 2]");
  CHECK(explain_json(even, {"--hardware", "a100-80g"}).at("phases").at("step_ms").get<double>() ==
        Approx(balanced.at("phases").at("step_ms").get<double>()).epsilon(1e-12));

  // dp = -1 is the rest of --gpus.
  const nlohmann::json rest = explain_json({"parallel.dp=-1"}, {"--hardware", "a100-80g", "--gpus", "8"});
  CHECK(rest.at("dp").get<int64_t>() == 8);
  const ProcessResult unknown = run_plait(explain_args({"parallel.dp=-1"}, {"--hardware", "a100-80g"}));
  CHECK(unknown.exit_code == 1);
  CHECK_THAT(unknown.output, Contains("[parallel] dp = -1 takes the rest of the world size, which plait plan --explain "
                                      "is told by --gpus") && Contains("give --gpus N"));

  // --tokens 1T is 1e12 tokens; a count plait cannot read names the flag.
  CHECK(explain_json({}, {"--hardware", "a100-80g", "--tokens", "1T"}).at("cost").at("tokens").get<double>() == 1e12);
  const ProcessResult bad = run_plait(explain_args({}, {"--tokens", "1Q"}));
  CHECK(bad.exit_code == 1);
  CHECK_THAT(bad.output, Contains("--tokens 1Q: not a count of tokens") && Contains("500M, 20B, 2T"));
}
