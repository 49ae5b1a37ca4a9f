// Every class of bad input `plait run` must refuse before anything starts, as data: for
// each case the exit code, the place the message starts with (the user's file:line:col,
// flag, variable or path), the sentence it must say, no C++ source location, no run folder
// left behind, and `plait config validate` with the same flags refusing with the same line.
#include <catch2/catch.hpp>

#include <algorithm>
#include <csignal>
#include <cstring>
#include <regex>

#include <ATen/detail/CUDAHooksInterface.h>

#include "distributed/core_binding.hpp"
#include "memory/state_budget.hpp"
#include "run/prepare.hpp"
#include "plait/sdk/error.hpp"
#include "support/test_support.hpp"

using namespace plait;
using namespace plait::test;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

namespace {

struct Case {
  std::string name;
  std::string config = "[train]\nsteps = 1\n";  // run.toml
  std::vector<std::string> args = {};           // after the config; {dir} is the case's folder
  std::string place = {};                       // the error line starts with it
  std::string says = {};                        // and contains this
  std::map<std::string, std::string> files = {};  // more files, relative to {dir}
  std::map<std::string, std::string> env = {};
  std::string config_path = "run.toml";         // what is named on the command line
  bool own_out = false;                         // args name --out themselves
  // run and validate say the same up to this (what follows is the machine's moment: its free memory)
  std::string same_until = {};
};

std::string expand(std::string s, const fs::path& dir) {
  for (std::size_t at; (at = s.find("{dir}")) != std::string::npos;) s.replace(at, 5, dir.string());
  return s;
}

// uint16 tokens, little-endian, as nanoGPT's .bin.
std::string tokens(std::vector<int> ids) {
  std::string out;
  for (int id : ids) {
    out.push_back(static_cast<char>(id & 0xff));
    out.push_back(static_cast<char>(id >> 8));
  }
  return out;
}

std::vector<int> ramp(int n, int modulo = 200) {
  std::vector<int> out;
  for (int i = 0; i < n; ++i) out.push_back(i % modulo);
  return out;
}

// llm.c's 1024-byte header: magic, version, token count.
std::string llmc(int version, int count, const std::string& body) {
  std::string header(1024, '\0');
  const int words[3] = {20240520, version, count};
  std::memcpy(header.data(), words, sizeof(words));
  return header + body;
}

// A plait token file's 1024-byte header under `magic` (plait's is "PLAITTOK"): version 1,
// 2-byte tokens, 2000 of them, no mask or documents.
std::string plait_header(const std::string& magic) {
  std::string header(1024, '\0');
  std::memcpy(header.data(), magic.data(), 8);
  const uint32_t version = 1, width = 2;
  const int64_t count = 2000;
  std::memcpy(header.data() + 8, &version, 4);
  std::memcpy(header.data() + 12, &width, 4);
  std::memcpy(header.data() + 16, &count, 8);
  return header;
}

std::string data_config(const std::string& file, const std::string& extra = "") {
  return "[data]\nsource = \"tokens\"\npath = \"" + file + "\"\n" + extra;
}

std::vector<std::string> listing(const fs::path& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

std::string error_line(const std::string& output) {
  const auto at = output.find("error: ");
  if (at == std::string::npos) return "";
  return output.substr(at, output.find('\n', at) - at);
}

void expect_refused(const Case& c) {
  TempDir dir;
  write_file(dir / "run.toml", c.config);
  for (const auto& [name, text] : c.files) {
    if (name.back() == '/') {
      fs::create_directories(dir / name);
    } else {
      write_file(dir / name, text);
    }
  }
  const fs::path out = dir / "out";
  const auto before = listing(out);
  const bool out_existed = fs::exists(out);
  std::vector<std::string> tail;
  for (const auto& a : c.args) tail.push_back(expand(a, dir.path()));
  if (!c.own_out) tail.insert(tail.end(), {"--out", out.string()});
  const std::string config = (dir / c.config_path).string();
  std::map<std::string, std::string> env;
  for (const auto& [k, v] : c.env) env[k] = expand(v, dir.path());

  std::vector<std::string> run_args = {"run", config};
  run_args.insert(run_args.end(), tail.begin(), tail.end());
  const ProcessResult run = run_plait(run_args, env);
  std::vector<std::string> validate_args = {"config", "validate", config};
  validate_args.insert(validate_args.end(), tail.begin(), tail.end());
  const ProcessResult validate = run_plait(validate_args, env);

  INFO(c.name << "\nrun:\n" << run.output << "\nvalidate:\n" << validate.output);
  CHECK(run.exit_code == 1);
  CHECK_THAT(run.output, StartsWith("error: " + expand(c.place, dir.path())));
  CHECK_THAT(run.output, Contains(expand(c.says, dir.path())));
  // plait's own source never shows: no "file.cpp:123", no path into the source tree.
  CHECK_FALSE(std::regex_search(run.output, std::regex(R"(\.(cpp|hpp|h):[0-9]+)")));
  CHECK_THAT(run.output, !Contains(std::string(PLAIT_SOURCE_DIR) + "/core") &&
                             !Contains(std::string(PLAIT_SOURCE_DIR) + "/plugins"));
  // Nothing written: no run folder, or the one that was there unchanged.
  CHECK(fs::exists(out) == out_existed);
  CHECK(listing(out) == before);
  CHECK(!fs::exists(dir / "runs"));
  // `config validate` refuses the same way.
  CHECK(validate.exit_code == run.exit_code);
  const std::string said = error_line(run.output);
  const std::size_t until = c.same_until.empty() ? std::string::npos : said.find(c.same_until);
  CHECK(error_line(validate.output).substr(0, until) == said.substr(0, until));
}

void expect_all_refused(const std::vector<Case>& cases) {
  for (const auto& c : cases) {
    DYNAMIC_SECTION(c.name) { expect_refused(c); }
  }
}

const std::string kRun = "{dir}/run.toml";

}  // namespace

TEST_CASE("refused before anything starts: the config's syntax, structure and files", "[refusals]") {
  expect_all_refused({
      {.name = "bad TOML", .config = "[train]\nsteps = 3\nlr = \n", .place = kRun + ":3:", .says = "invalid TOML"},
      {.name = "unknown key",
       .config = "[train]\nsetps = 1\n",
       .place = kRun + ":2:1: unknown key 'setps' in [train]",
       .says = "(did you mean 'steps'?)"},
      {.name = "unknown table", .config = "[trian]\nsteps = 1\n", .place = kRun + ":1:2: unknown table [trian]",
       .says = "did you mean 'train'?"},
      {.name = "a key outside every table", .config = "lr = 0.1\n", .place = kRun + ":1:1: unknown root-level key 'lr'",
       .says = "did you mean train.lr?"},
      {.name = "wrong type", .config = "[train]\nsteps = \"many\"\n", .place = kRun + ":2:1: [train].steps",
       .says = "expected an integer, got string \"many\""},
      {.name = "a nested table", .config = "[train.inner]\nx = 1\n", .place = kRun + ":1:",
       .says = "nested tables are not part of any plait schema"},
      {.name = "extends names a missing file", .config = "extends = [\"bundles/missing.toml\"]\n",
       .place = kRun + ":1:12: extends names a file that does not exist", .says = "bundles/missing.toml"},
      {.name = "extends names a folder",
       .config = "extends = [\"bundles\"]\n",
       .place = kRun + ":1:12: extends names ",
       .says = "which is a folder, not a config file",
       .files = {{"bundles/", ""}}},
      {.name = "extends cycle",
       .config = "extends = [\"loop.toml\"]\n",
       .place = "{dir}/loop.toml:1:12: extends cycle",
       .says = "run.toml -> ",
       .files = {{"loop.toml", "extends = [\"run.toml\"]\n"}}},
      {.name = "the config is a folder",
       .place = "the config {dir}/folder.toml is a folder, not a TOML file",
       .says = "pass the config file itself",
       .files = {{"folder.toml/", ""}},
       .config_path = "folder.toml"},
      {.name = "the config does not exist", .place = "config file not found: {dir}/nothing.toml",
       .says = "check the path", .config_path = "nothing.toml"},
      {.name = "a malformed --set", .args = {"--set", "train.lr"}, .place = "--set train.lr: expected table.key=value",
       .says = "for example"},
      {.name = "a --set key without a table", .args = {"--set", "lr=0.1"},
       .place = "--set lr=0.1: the key must be table.key", .says = "got 'lr'"},
  });
}

TEST_CASE("refused before anything starts: numbers that make no sense or cannot be computed with", "[refusals]") {
  const std::string long_value(100 * 1024, 'x');
  expect_all_refused({
      {.name = "lr = nan", .config = "[train]\nlr = nan\n", .place = kRun + ":2:1: [train].lr: nan is not a finite number",
       .says = "Peak learning rate"},
      {.name = "lr = inf", .args = {"--set", "train.lr=inf"},
       .place = "--set train.lr=inf: [train].lr: inf is not a finite number", .says = "learning rate"},
      {.name = "weight_decay = inf", .config = "[train]\nweight_decay = inf\n",
       .place = kRun + ":2:1: [train].weight_decay: inf is not a finite number", .says = "weight decay"},
      {.name = "grad_clip = nan", .args = {"--set", "train.grad_clip=nan"},
       .place = "--set train.grad_clip=nan: [train].grad_clip: nan is not a finite number", .says = "Clip gradients"},
      {.name = "dropout = nan", .config = "[model]\ndropout = nan\n",
       .place = kRun + ":2:1: [model].dropout: nan is not a finite number", .says = "residual stream"},
      {.name = "dropout = 1", .config = "[model]\ndropout = 1.0\n", .place = kRun + ":2:1: [model] dropout is 1",
       .says = "every element would be dropped"},
      {.name = "an lr float32 cannot hold", .config = "[train]\nsteps = 1\nlr = 1e308\n",
       .place = kRun + ":3:1: [train] lr = 1e+308 is too large for float32 parameters",
       .says = "past float32's largest value"},
      {.name = "beta1 = 1", .config = "[train]\nbeta1 = 1.0\n", .place = kRun + ":2:1: [train] beta1 = 1",
       .says = "bias correction"},
      {.name = "below the minimum", .config = "[train]\nsteps = 0\n", .place = kRun + ":2:1: [train].steps",
       .says = "0 is below the minimum 1"},
      {.name = "not one of the choices", .config = "[train]\ndtype = \"float16\"\n",
       .place = kRun + ":2:1: [train].dtype", .says = "\"float16\" is not one of \"float32\", \"float64\", \"bfloat16\""},
      {.name = "a 100 kB value is not echoed whole", .config = "[model]\nsize = \"" + long_value + "\"\n",
       .place = kRun + ":2:1: [model].size", .says = "... (102402 characters) is not one of"},
      {.name = "a debug step past the last step", .config = "[train]\nsteps = 3\n[debug]\ntrace_steps = [2, 4]\n",
       .place = kRun + ":4:1: [debug] trace_steps names step 4, which is past the run's last step (3)",
       .says = "from 1 to 3"},
      {.name = "a debug rank past the last rank", .config = "[debug]\nnonfinite_step = 1\nnonfinite_rank = 1\n",
       .place = kRun + ":3:1: fault 'nonfinite rank=1 step=1' is on rank 1, which this job does not have (1 ranks)",
       .says = "choose a rank from 0 to 0"},
      {.name = "--steps out of range", .args = {"--steps", "99999999999999999999999"},
       .place = "--steps 99999999999999999999999 is out of range", .says = "it takes 1 to"},
      {.name = "--steps not a whole number", .args = {"--steps", "1e400"},
       .place = "--steps 1e400: expected a whole number", .says = "takes an integer"},
      {.name = "--master-port out of range", .args = {"--master-port", "70000", "--nnodes", "1"},
       .place = "--master-port 70000 is out of range", .says = "1 to 65535"},
      // max_restarts has one range however it is given: the --max-restarts flag's.
      {.name = "max_restarts past the flag's cap, by --set", .args = {"--set", "distributed.max_restarts=1001"},
       .place = "--set distributed.max_restarts=1001: [distributed].max_restarts: 1001 is above the maximum 1000"},
      {.name = "a flight recorder too large to allocate", .args = {"--set", "distributed.flight_recorder_ops=100000000000"},
       .place = "--set distributed.flight_recorder_ops=100000000000: [distributed].flight_recorder_ops: 100000000000 is "
                "above the maximum 1048576"},
      {.name = "a slow rank slower than an hour a step", .args = {"--set", "debug.slow_ms=1e300"},
       .place = "--set debug.slow_ms=1e300: [debug].slow_ms: 1e+300 is above the maximum"},
      {.name = "max_restarts past the flag's cap, in the config", .config = "[distributed]\nmax_restarts = 1000000\n",
       .place = kRun + ":2:1: [distributed].max_restarts: 1000000 is above the maximum 1000"},
      {.name = "--max-restarts past its cap", .args = {"--max-restarts", "1001"},
       .place = "--max-restarts 1001 is out of range: it takes 0 to 1000"},
  });
}

TEST_CASE("refused before anything starts: a setting changed where another makes it do nothing", "[refusals]") {
  expect_all_refused({
      {.name = "min_lr_ratio with a constant schedule", .config = "[train]\nlr_schedule = \"constant\"\nmin_lr_ratio = 0.2\n",
       .place = kRun + ":3:1: [train] min_lr_ratio = 0.2 sets where cosine decay ends",
       .says = "lr_schedule = \"constant\" (" + kRun + ":2:1) never decays"},
      {.name = "a skip limit when nothing is skipped", .args = {"--set", "train.nonfinite_skip_limit=3"},
       .place = "--set train.nonfinite_skip_limit=3: [train] nonfinite_skip_limit counts skipped steps",
       .says = "on_nonfinite = \"stop\" (the default) skips none"},
      {.name = "a hang warning after the timeout", .config = "[distributed]\nhang_warning_s = 30\ncollective_timeout_s = 20\n",
       .place = kRun + ":2:1: [distributed] hang_warning_s = 30 is not below collective_timeout_s = 20 (" + kRun + ":3:1)",
       .says = "an operation fails before it would be warned about"},
      {.name = "async saves of no checkpoint", .config = "[checkpoint]\nasync = true\nfinal = false\n",
       .place = kRun + ":2:1: [checkpoint] async = true writes checkpoints from a thread",
       .says = "every = 0 and final = false: the run saves none"},
  });
  // The default beside its companion is no choice: a lock file writes every key, and runs again.
  TempDir dir;
  write_file(dir / "run.toml", "[train]\nsteps = 1\nlr_schedule = \"constant\"\nmin_lr_ratio = 0.1\n"
                               "[distributed]\ncollective_timeout_s = 5\nhang_warning_s = 60\n");
  const ProcessResult lock_like = run_plait({"config", "validate", (dir / "run.toml").string()});
  CHECK(lock_like.exit_code == 0);
  CHECK_THAT(lock_like.output, Contains("valid"));
}

TEST_CASE("refused before anything starts: an adapter's options with no adapter chosen", "[refusals]") {
  expect_all_refused({
      {.name = "[lora] in the config, no adapter", .config = "[train]\nsteps = 1\n[lora]\nrank = 4\n",
       .place = kRun + ":4:1: [lora] rank is set, but the run trains no adapter ([parallel] adapter = \"none\"): every "
                       "option of [lora] would be ignored and every weight of the model trained",
       .says = "choose it with [parallel] adapter = \"lora\", or remove [lora]"},
      {.name = "[lora] by --set, no adapter", .args = {"--set", "lora.targets=[\"c_attn\"]"},
       .place = "--set lora.targets=[\"c_attn\"]: [lora] targets is set, but the run trains no adapter"},
      {.name = "[lora] with adapter = \"none\" said outright",
       .config = "[parallel]\nadapter = \"none\"\n[lora]\nalpha = 32.0\n",
       .place = kRun + ":4:1: [lora] alpha is set, but the run trains no adapter"},
  });
}

TEST_CASE("refused before anything starts: model, mesh and plugins that do not fit together", "[refusals]") {
  const std::string megatron = "[parallel]\ntensor = \"megatron\"\n";
  std::vector<Case> cases = {
      {.name = "width not a multiple of the heads", .config = "[model]\nn_embd = 66\n",
       .place = kRun + ":2:1: [model] n_embd 66 is not a multiple of n_head 4", .says = "head size"},
      {.name = "a llama key on gpt2", .config = "[model]\nn_kv_head = 2\n",
       .place = kRun + ":2:1: [model] n_kv_head applies to the llama family only", .says = "remove n_kv_head"},
      {.name = "a sequence longer than the model's", .config = "[data]\nseq_len = 65\n",
       .place = kRun + ":2:1: [data] seq_len 65 is longer than the model's block_size 64", .says = "block_size"},
      {.name = "heads that tp does not divide",
       .config = megatron + "tp = 3\n[megatron]\nvocab_parallel = false\n",
       .place = kRun + ":3:1: transformer.h.0.attn: 4 attention heads do not split evenly over 3 tensor-parallel ranks",
       .says = "model.n_head"},
      {.name = "key/value heads that tp does not divide", .config = megatron + "tp = 4\n[model]\nfamily = \"llama\"\n",
       .place = kRun + ":3:1: model.layers.0.self_attn: 4 attention heads and 2 key/value heads must both split",
       .says = "over 4 tensor-parallel ranks"},
      {.name = "a vocabulary that tp does not divide", .config = megatron + "tp = 2\n[model]\nvocab_size = 255\n",
       .place = kRun + ":3:1: megatron: transformer.wte has 255 rows, which do not split over 2",
       .says = "vocab_parallel = false"},
      {.name = "a sequence that sequence parallel cannot split",
       .config = megatron + "tp = 4\n[megatron]\nsequence_parallel = true\n[data]\nseq_len = 62\n",
       .place = kRun + ":7:1: megatron: sequence_parallel splits each sequence over the 4 tensor-parallel ranks",
       .says = "a batch holds 62 positions"},
      {.name = "tp without a tensor plugin", .config = "[parallel]\ntp = 2\n",
       .place = kRun + ":2:1: [parallel] tp = 2 needs a tensor-parallel plugin", .says = "repeat each other's work"},
      {.name = "pp without a schedule", .config = "[parallel]\npp = 2\n",
       .place = kRun + ":2:1: [parallel] pp = 2 needs a pipeline schedule", .says = "pipeline = \"1f1b\""},
      {.name = "two degrees of -1", .config = "[parallel]\ndp = -1\ntp = -1\ntensor = \"megatron\"\ndata = \"ddp\"\n",
       .args = {"--nproc-per-node", "4"}, .place = kRun + ":2:1: [parallel] at most one of dp, pp, tp may be -1",
       .says = "give the other degrees"},
      {.name = "a mesh that is not the number of processes", .config = "[parallel]\ndata = \"ddp\"\ndp = 2\n",
       .args = {"--nproc-per-node", "3"}, .place = kRun + ":3:1: [parallel] dp 2 x pp 1 x tp 1 = 2",
       .says = "but the job has 3 processes (--nproc-per-node 3)"},
      {.name = "a node rank past the nodes", .args = {"--nnodes", "2", "--node-rank", "2"},
       .place = "--node-rank 2 is not below --nnodes 2", .says = "count from 0"},
      // 1.5 TiB of state: more than any machine this runs on has free.
      {.name = "model state past the memory this machine has free", .args = {"--set", "model.n_embd=65536"},
       .place = "--set model.n_embd=65536: this process holds 1536.34 GiB of model state before the first step",
       .says = "of memory free: the run would be killed for want of memory", .same_until = "but this machine has"},
      {.name = "an unknown comm plugin on one process, which needs none", .args = {"--set", "parallel.comm=nosuch"},
       .place = "--set parallel.comm=nosuch: [parallel].comm: unknown comm plugin 'nosuch'", .says = "gloo"},
      {.name = "an unknown plugin", .config = "[parallel]\ndata = \"dpp\"\n",
       .place = kRun + ":2:1: [parallel].data: unknown data plugin 'dpp'", .says = "(did you mean 'ddp'?)"},
      {.name = "a capability the data plugin lacks",
       .config = "[parallel]\ndata = \"fixture-good\"\n[train]\ngrad_accum = 4\n",
       .place = kRun + ":2:1: data plugin 'fixture-good' cannot be combined with train.grad_accum = 4",
       .says = "lacks the capability 'grad_accum'",
       .env = {{"PLAIT_PLUGIN_PATH", std::string(PLAIT_FIXTURE_DIR) + "/good"}}},
      {.name = "a capability the data plugin lacks, the other side from --set",
       .config = "[parallel]\ndata = \"fixture-good\"\n", .args = {"--set", "train.grad_accum=4"},
       .place = kRun + ":2:1: data plugin 'fixture-good' cannot be combined with train.grad_accum = 4 (--set "
                       "train.grad_accum=4): ",
       .env = {{"PLAIT_PLUGIN_PATH", std::string(PLAIT_FIXTURE_DIR) + "/good"}}},
      {.name = "a hybrid shard size that does not divide dp",
       .config = "[parallel]\ndata = \"fsdp\"\ndp = 4\n[fsdp]\nshard_size = 3\n",
       .place = kRun + ":5:1: fsdp: shard_size 3 does not divide the data-parallel degree 4", .says = "[parallel] dp"},
      {.name = "stage blocks that do not add up",
       .config = "[parallel]\npipeline = \"1f1b\"\npp = 2\nstage_blocks = [1, 5]\n",
       .place = kRun + ":4:1: [parallel] stage_blocks sums to 6 blocks but the model has 2", .says = "n_layer"},
      {.name = "microbatches that interleaving cannot serve",
       .config = "[parallel]\npipeline = \"interleaved-1f1b\"\npp = 2\n[train]\ngrad_accum = 3\n",
       .place = kRun + ":2:1: interleaved-1f1b needs the microbatches (train.grad_accum = 3) to be a multiple of pp = 2",
       .says = "set train.grad_accum to 4"},
      {.name = "bind_cores with more ranks than cores",
       .config = concat("[parallel]\ndata = \"ddp\"\ndp = ", usable_cores().size() + 1,
                        "\n[distributed]\nbind_cores = true\n"),
       .place = kRun + ":5:1: [distributed] bind_cores", .says = concat("fewer than its ", usable_cores().size() + 1, " ranks")},
      {.name = "a network interface this machine lacks",
       .config = "[parallel]\ndata = \"ddp\"\ndp = 2\n[gloo]\ninterface = \"nosuch0\"\n",
       .place = kRun + ":5:1: [gloo] interface = \"nosuch0\": this machine has no network interface of that name",
       .says = "ip link"},
  };
  if (at::detail::getCUDAHooks().getNumGPUs() == 0) {
    cases.push_back({.name = "the nccl communicator without a GPU",
                     .config = "[parallel]\ndata = \"ddp\"\ndp = 2\ncomm = \"nccl\"\n",
                     .place = kRun + ":4:1: [parallel].comm: plugin 'nccl' cannot run here: no CUDA device is visible",
                     .says = "another plugin"});
    cases.push_back({.name = "cuda without a GPU", .config = "[train]\ndevice = \"cuda\"\n",
                     .place = kRun + ":2:1: [train] device = \"cuda\", but no CUDA device is visible",
                     .says = "device = \"cpu\""});
  } else {
    cases.push_back({.name = "the nccl communicator on the CPU",
                     .config = "[parallel]\ndata = \"ddp\"\ndp = 2\ncomm = \"nccl\"\n",
                     .place = kRun + " (default): [train] device = \"cpu\", but the nccl communicator",
                     .says = "moves CUDA tensors"});
  }
  expect_all_refused(cases);
}

TEST_CASE("refused before anything starts: every problem of a data file, tokens included", "[refusals]") {
  const std::string at = kRun + ":3:1: [data] ";
  expect_all_refused({
      {.name = "missing", .config = data_config("none.bin"), .place = at + "cannot open {dir}/none.bin",
       .says = "No such file or directory"},
      {.name = "empty", .config = data_config("empty.bin"), .place = at + "{dir}/empty.bin is empty",
       .says = "a file with tokens", .files = {{"empty.bin", ""}}},
      {.name = "a folder", .config = data_config("tokens"), .place = at + "{dir}/tokens is a folder, not a token file",
       .says = "the data file itself", .files = {{"tokens/", ""}}},
      {.name = "an odd number of bytes", .config = data_config("odd.bin"),
       .place = at + "{dir}/odd.bin has an odd number of bytes (3)", .says = "uint16", .files = {{"odd.bin", "abc"}}},
      {.name = "fewer tokens than one sequence", .config = data_config("short.bin"),
       .place = at + "{dir}/short.bin holds 10 tokens, fewer than seq_len + 1 = 65", .says = "shorter seq_len",
       .files = {{"short.bin", tokens(ramp(10))}}},
      {.name = "fewer tokens than one sequential global batch",
       .config = data_config("short.bin", "order = \"sequential\"\n[parallel]\ndata = \"ddp\"\ndp = 2\n"),
       .place = at + "{dir}/short.bin holds 300 tokens; one sequential global batch needs 513",
       .says = "(dp 2 x B 4 x T 64 + 1)", .files = {{"short.bin", tokens(ramp(300))}}},
      {.name = "a truncated llm.c file", .config = data_config("cut.bin"),
       .place = at + "{dir}/cut.bin: header says 5000 tokens but the file holds 100", .says = "truncated",
       .files = {{"cut.bin", llmc(1, 5000, tokens(ramp(100)))}}},
      {.name = "an llm.c header and no tokens", .config = data_config("header.bin"),
       .place = at + "{dir}/header.bin is an llm.c token file whose header says it holds 0 tokens",
       .says = "no tokens", .files = {{"header.bin", llmc(1, 0, "")}}},
      {.name = "an llm.c file of an unknown version", .config = data_config("v7.bin"),
       .place = at + "{dir}/v7.bin has llm.c's magic number but version 7", .says = "version 1 (uint16) or 2",
       .files = {{"v7.bin", llmc(7, 10, tokens(ramp(10)))}}},
      {.name = "a token the vocabulary cannot embed", .config = data_config("big.bin"),
       .place = at + "token 300 at position 1234 of {dir}/big.bin is not below the model's vocab_size 256",
       .says = "vocab_size = 301 or more", .files = {{"big.bin", [] {
          auto ids = ramp(2000);
          ids[1234] = 300;
          return tokens(ids);
        }()}}},
      {.name = "text for a vocabulary below 256", .config = "[data]\nsource = \"text\"\npath = \"t.txt\"\n[model]\nvocab_size = 100\n",
       .place = kRun + ":2:1: [data] text data has 256 byte tokens but the model's vocab_size is 100",
       .says = "256 or more", .files = {{"t.txt", std::string(500, 'a')}}},
      {.name = "a path for synthetic data", .config = "[data]\npath = \"tokens.bin\"\n",
       .place = kRun + ":2:1: [data] path is set, but [data] source = \"synthetic\" reads no file",
       .says = "remove path"},
      {.name = "an order for synthetic data", .config = "[data]\norder = \"sequential\"\n",
       .place = kRun + ":2:1: [data] order applies to file data", .says = "remove order"},
      {.name = "tokens without a path", .config = "[data]\nsource = \"tokens\"\n",
       .place = kRun + ":2:1: [data] source = \"tokens\" needs data.path", .says = "relative to the config file"},
      // A plait token file whose header is damaged is said to be one, not read as raw tokens
      // (whose header bytes would then be tokens, and the model's vocab_size blamed).
      {.name = "a .plait file whose magic is one byte off", .config = data_config("t.plait"),
       .place = at + "{dir}/t.plait is a damaged plait token file: its first 8 bytes are \"PLAITTOJ\", not plait's magic",
       .says = "tools/prepare_data.py", .files = {{"t.plait", plait_header("PLAITTOJ") + tokens(ramp(2000))}}},
      {.name = "a .bin file whose magic is one byte off", .config = data_config("t.bin"),
       .place = at + "{dir}/t.bin is a damaged plait token file: its first 8 bytes are \"PLAI\\x00TOK\"",
       .files = {{"t.bin", plait_header(std::string("PLAI\0TOK", 8)) + tokens(ramp(2000))}}},
      {.name = "a file whose magic is two bytes off", .config = data_config("t.bin"),
       .place = at + "{dir}/t.bin is a damaged plait token file: its first 8 bytes are \"pLAITTOk\"",
       .files = {{"t.bin", plait_header("pLAITTOk") + tokens(ramp(2000))}}},
      {.name = "a .plait file of raw tokens", .config = data_config("raw.plait"),
       .place = at + "{dir}/raw.plait is a damaged plait token file: its first 8 bytes are \"\\x00\\x00\\x01\\x00",
       .says = "must not be named .plait", .files = {{"raw.plait", tokens(ramp(2000))}}},
      {.name = "a .plait file shorter than the magic", .config = data_config("short.plait"),
       .place = at + "{dir}/short.plait is a damaged plait token file: it is 3 bytes, shorter than its magic number",
       .files = {{"short.plait", "abc"}}},
  });
}

TEST_CASE("refused before anything starts: plugin folders, libraries and the run folder", "[refusals]") {
  expect_all_refused({
      {.name = "a PLAIT_PLUGIN_PATH folder that does not exist",
       .place = "PLAIT_PLUGIN_PATH names a plugin folder that does not exist: {dir}/nowhere",
       .says = "fix or unset it", .env = {{"PLAIT_PLUGIN_PATH", "{dir}/nowhere"}}},
      {.name = "a [plugins] paths entry that is a file", .config = "[plugins]\npaths = [\"lib.so\"]\n",
       .place = kRun + ":2:1: [plugins].paths: plugin folder is a file, not a folder: {dir}/lib.so",
       .says = "folders holding libplait_plugin_*.so", .files = {{"lib.so", "not a folder"}}},
      {.name = "a [plugins] paths entry that does not exist", .config = "[plugins]\npaths = [\"nowhere\"]\n",
       .place = kRun + ":2:1: [plugins].paths: plugin folder does not exist: {dir}/nowhere",
       .says = "relative to the config file"},
      {.name = "a plugin of another API major version",
       .place = "plugin library " + std::string(PLAIT_FIXTURE_DIR) + "/next_major/",
       .says = "another major version",
       .env = {{"PLAIT_PLUGIN_PATH", std::string(PLAIT_FIXTURE_DIR) + "/next_major"}}},
      {.name = "a plugin whose constructor throws", .config = "[parallel]\ndata = \"fixture-create-throws\"\n",
       .place = "plugin 'fixture-create-throws' (" + std::string(PLAIT_FIXTURE_DIR) + "/create_throws/",
       .says = "failed in its create: the fixture's constructor throws",
       .env = {{"PLAIT_PLUGIN_PATH", std::string(PLAIT_FIXTURE_DIR) + "/create_throws"}}},
      {.name = "a plugin whose create returns null", .config = "[parallel]\ndata = \"fixture-create-null\"\n",
       .place = "plugin 'fixture-create-null' (" + std::string(PLAIT_FIXTURE_DIR) + "/create_null/",
       .says = "created no object", .env = {{"PLAIT_PLUGIN_PATH", std::string(PLAIT_FIXTURE_DIR) + "/create_null"}}},
      {.name = "a library that is not a plugin", .place = "plugin library {dir}/libs/libplait_plugin_text.so",
       .says = "is not a shared library: it does not start with an ELF header",
       .files = {{"libs/libplait_plugin_text.so", "this is text, not a shared library"}},
       .env = {{"PLAIT_PLUGIN_PATH", "{dir}/libs"}}},
      {.name = "an empty library", .place = "plugin library {dir}/libs/libplait_plugin_empty.so",
       .says = "does not start with an ELF header (it is empty)",
       .files = {{"libs/libplait_plugin_empty.so", ""}}, .env = {{"PLAIT_PLUGIN_PATH", "{dir}/libs"}}},
      {.name = "--out empty", .args = {"--out", ""}, .place = "--out \"\": the run folder's path is empty",
       .says = "name a folder", .own_out = true},
      {.name = "--out a folder that holds files", .args = {"--out", "{dir}/out"},
       .place = "the run folder {dir}/out already exists and is not empty", .says = "never writes into an earlier run",
       .files = {{"out/keep.txt", "earlier results"}}, .own_out = true},
      {.name = "--out a file", .args = {"--out", "{dir}/out"}, .place = "the run folder {dir}/out exists and is not a folder",
       .says = "choose another --out", .files = {{"out", "a file"}}, .own_out = true},
  });
}

TEST_CASE("refused before anything starts: checkpoint folders that are not this run's to write, and faults that never "
          "strike",
          "[refusals]") {
  const std::string ck = "--set checkpoint.dir=\"{dir}/ck\"";
  expect_all_refused({
      {.name = "[checkpoint] dir that is a file", .args = {"--set", "checkpoint.dir=\"{dir}/ck\""},
       .place = ck + ": [checkpoint] dir {dir}/ck is a file, not a folder", .says = "name a folder for the checkpoints",
       .files = {{"ck", "a file"}}},
      {.name = "[checkpoint] dir under a file", .args = {"--set", "checkpoint.dir=\"{dir}/ck/inner\""},
       .place = "--set checkpoint.dir=\"{dir}/ck/inner\": [checkpoint] dir {dir}/ck/inner cannot be made: {dir}/ck is a file",
       .says = "name a folder", .files = {{"ck", "a file"}}},
      {.name = "[checkpoint] dir of another run", .args = {"--set", "checkpoint.dir=\"{dir}/ck\""},
       .place = ck + ": [checkpoint] dir {dir}/ck holds the checkpoints of the run in /elsewhere/run",
       .says = "keep_last prune its checkpoints", .files = {{"ck/owner", "/elsewhere/run\n"}}},
      {.name = "[checkpoint] dir holding checkpoints no run claims", .args = {"--set", "checkpoint.dir=\"{dir}/ck\""},
       .place = ck + ": [checkpoint] dir {dir}/ck holds checkpoints that no run saving there claims",
       .says = "--resume {dir}/ck", .files = {{"ck/latest", "step-2\n"}}},
      {.name = "a fault in a start the job never makes", .args = {"--set", "debug.faults=[\"kill rank=0 step=1 attempt=1\"]"},
       .place = "--set debug.faults=[\"kill rank=0 step=1 attempt=1\"]: fault 'kill rank=0 step=1 attempt=1' strikes in "
                "attempt 1, but the job restarts at most 0 time(s)",
       .says = "raise [distributed] max_restarts"},
  });
}

TEST_CASE("refused before anything starts: traces and faults that cannot be", "[refusals]") {
  expect_all_refused({
      {.name = "trace_steps of step 0", .args = {"--set", "debug.trace_steps=[0]"},
       .place = "--set debug.trace_steps=[0]: [debug] trace_steps names step 0, which is not a step",
       .says = "choose steps from 1 to 1"},
      {.name = "trace_steps past the last step", .args = {"--set", "debug.trace_steps=[9]"},
       .place = "--set debug.trace_steps=[9]: [debug] trace_steps names step 9, which is past the run's last step (1)",
       .says = "choose steps from 1 to 1"},
      {.name = "trace_steps of a word", .args = {"--set", "debug.trace_steps=[\"a\"]"},
       .place = "--set debug.trace_steps=[\"a\"]: [debug].trace_steps: expected an integer in the array, got string \"a\""},
      {.name = "a fault of no known kind", .args = {"--set", "debug.faults=[\"explode rank=0 step=1\"]"},
       .place = "--set debug.faults=[\"explode rank=0 step=1\"]: fault 'explode rank=0 step=1': 'explode' is not a fault",
       .says = "the kinds are kill, segv, exit"},
      {.name = "a fault on a rank the job does not have", .args = {"--set", "debug.faults=[\"kill rank=9 step=1\"]"},
       .place = "--set debug.faults=[\"kill rank=9 step=1\"]: fault 'kill rank=9 step=1' is on rank 9, which this job does "
                "not have (1 ranks)",
       .says = "choose a rank from 0 to 0"},
      {.name = "faults as one string, not a list", .args = {"--set", "debug.faults=\"kill rank=0 step=1\""},
       .place = "--set debug.faults=\"kill rank=0 step=1\": [debug].faults: expected an array (string[])"},
      {.name = "PLAIT_FAULTS naming neither a step nor an op",
       .place = "PLAIT_FAULTS: fault 'kill rank=0': it names neither a step nor an op",
       .says = "write \"<kind> rank=R step=S\"", .env = {{"PLAIT_FAULTS", "kill rank=0"}}},
  });
}

TEST_CASE("refused before anything starts: a Hugging Face folder whose config.json is another model, and --resume "
          "in its own name",
          "[refusals]") {
  const std::string from = "--set model.init_from=\"{dir}/hf\"";
  const std::vector<std::string> args = {"--set", "model.init_from=\"{dir}/hf\""};
  // The run's model is gpt2 tiny: 2 layers, 4 heads, 64 wide, a 256-token vocabulary.
  const std::string dims = R"("model_type": "gpt2", "n_layer": 2, "n_head": 4, "n_embd": 64, "vocab_size": 256)";
  expect_all_refused({
      {.name = "init_from a llama folder into a gpt2 run", .args = args,
       .place = from + ": {dir}/hf/config.json: model_type is 'llama', and this run's model is gpt2",
       .says = "set [model] family = \"llama\"", .files = {{"hf/config.json", R"({"model_type": "llama"})"}}},
      {.name = "init_from a folder with more layers than the run's model", .args = args,
       .place = from + ": {dir}/hf/config.json: n_layer is 4, and this run's model has 2",
       .says = "set [model] n_layer = 4",
       .files = {{"hf/config.json", R"({"model_type": "gpt2", "n_layer": 4, "activation_function": "gelu"})"}}},
      {.name = "init_from a folder of GPT-2's tanh GELU (transformers' default)", .args = args,
       .place = from + ": {dir}/hf/config.json: activation_function is \"gelu_new\", and this run's model has \"gelu\"",
       .says = "would compute another function", .files = {{"hf/config.json", "{" + dims + "}"}}},
      {.name = "init_from a folder of another norm epsilon", .args = args,
       .place = from + ": {dir}/hf/config.json: layer_norm_epsilon is 1e-06, and this run's model has 1e-05",
       .says = "set [model] norm_eps = 1e-06",
       .files = {{"hf/config.json", "{" + dims + R"(, "activation_function": "gelu", "layer_norm_epsilon": 1e-6})"}}},
      {.name = "init_from a folder whose config.json is torn", .args = args,
       .place = from + ": {dir}/hf/config.json is not valid JSON: it is damaged at line 1, column 19: a string has no "
                       "closing quote",
       .says = "take it again from its source", .files = {{"hf/config.json", R"({"model_type": "gp)"}}},
      {.name = "init_from a folder whose config.json is not JSON at all", .args = args,
       .place = from + ": {dir}/hf/config.json is not valid JSON: it is damaged at line 2, column 4: 'no' is not JSON there",
       .files = {{"hf/config.json", "{\n  no json here\n}"}}},
      {.name = "init_from a folder whose config.json is cut after a key", .args = args,
       .place = from + ": {dir}/hf/config.json is not valid JSON: it is damaged at line 1, column 15: it ends early",
       .files = {{"hf/config.json", R"({"model_type":)"}}},
      {.name = "--resume of a path that does not exist", .args = {"--resume", "{dir}/nowhere"},
       .place = "--resume {dir}/nowhere: checkpoint {dir}/nowhere does not exist", .says = "name a checkpoint"},
  });
}

TEST_CASE("a plugin at fault in its own code is named with its hook: an exception in setup, a crash in a step",
          "[refusals]") {
  TempDir dir;
  const auto setup = write_file(dir / "setup.toml", "[parallel]\ndata = \"fixture-setup-throws\"\n");
  const ProcessResult thrown =
      run_plait({"run", setup.string(), "--out", (dir / "a").string()},
                {{"PLAIT_PLUGIN_PATH", std::string(PLAIT_FIXTURE_DIR) + "/setup_throws"}});
  INFO(thrown.output);
  CHECK(thrown.exit_code == 1);
  CHECK_THAT(thrown.output, Contains("error: plugin 'fixture-setup-throws' failed in its setup: the fixture's setup throws") &&
                                Contains("this is a fault of the plugin 'fixture-setup-throws'"));
  const auto step = write_file(dir / "step.toml", "[train]\nsteps = 3\n[parallel]\ndata = \"fixture-step-crash\"\n");
  const ProcessResult crashed =
      run_plait({"run", step.string(), "--out", (dir / "b").string()},
                {{"PLAIT_PLUGIN_PATH", std::string(PLAIT_FIXTURE_DIR) + "/step_crash"}});
  INFO(crashed.output);
  CHECK(crashed.exit_code == 128 + SIGSEGV);
  CHECK_THAT(crashed.output, Contains("plait: this rank crashed inside plugin 'fixture-step-crash', in its step"));
}

TEST_CASE("refused before anything starts: plait check's own flags", "[refusals]") {
  TempDir dir;
  const auto config = write_file(dir / "run.toml", "[train]\nsteps = 1\n");
  for (const auto& [value, says] : std::vector<std::pair<std::string, std::string>>{
           {"-1", "--tolerance -1 must be a finite number above 0"},
           {"0", "--tolerance 0 must be a finite number above 0"},
           {"nan", "--tolerance nan must be a finite number above 0"},
           {"tight", "--tolerance tight: expected a number"}}) {
    DYNAMIC_SECTION("--tolerance " << value) {
      const ProcessResult r =
          run_plait({"check", config.string(), "--out", (dir / "check").string(), "--tolerance", value});
      INFO(r.output);
      CHECK(r.exit_code == 1);
      CHECK_THAT(r.output, StartsWith("error: " + says));
      CHECK_FALSE(fs::exists(dir / "check"));
    }
  }
  // A config plait run refuses, plait check refuses with the same line, before either run.
  const auto bad = write_file(dir / "bad.toml", "[train]\nlr = nan\n");
  const ProcessResult run = run_plait({"run", bad.string(), "--out", (dir / "run").string()});
  const ProcessResult check = run_plait({"check", bad.string(), "--out", (dir / "check").string()});
  INFO(run.output << "\n---\n" << check.output);
  CHECK(check.exit_code == 1);
  CHECK(error_line(check.output) == error_line(run.output));
  CHECK_THAT(check.output, StartsWith("error: " + bad.string() + ":2:1: [train].lr: nan is not a finite number"));
  CHECK_FALSE(fs::exists(dir / "check"));
}

// The check prepare_run makes of [train] memory_limit_mb (memory/state_budget.hpp), on the
// quickstart widened to about 3.2M parameters: their state alone (16 bytes each under
// AdamW) is about 49 MiB on each ddp rank.
TEST_CASE("a memory budget below what the model's state alone needs is refused before launch, naming the key",
          "[refusals]") {
  const std::string config = source_path("configs/quickstart.toml");
  const std::vector<std::string> wide = {"model.n_layer=4", "model.n_embd=256", "data.micro_batch_size=2", "data.seq_len=32"};
  auto check = [&](std::vector<std::string> sets) {
    sets.insert(sets.begin(), wide.begin(), wide.end());
    const PreparedRun run = prepare_run(config, sets);
    check_state_fits_memory_limit(run);
  };
  CHECK_THROWS_WITH(check({"train.memory_limit_mb=40"}),
                    StartsWith("--set train.memory_limit_mb=40: [train] memory_limit_mb = 40 is below what each rank "
                               "holds before its first step: ") &&
                        Contains(" of model state under data plugin 'ddp' (offload 'none'): parameters "));
  try {
    check({"train.memory_limit_mb=40"});
    FAIL("a 40 MiB budget for 49 MiB of state was accepted");
  } catch (const Error& e) {
    CHECK_THAT(e.hint(), Contains("raise train.memory_limit_mb above 49.") && Contains("zero.stage = 3"));
  }
  CHECK_THROWS_WITH(check({"train.memory_limit_mb=1", "parallel.data=zero", "zero.stage=3"}),
                    Contains("memory_limit_mb = 1 is below") && Contains("data plugin 'zero'"));
  CHECK_THROWS_WITH(check({"train.memory_limit_mb=5", "parallel.pipeline=1f1b", "parallel.pp=2", "parallel.dp=1",
                           "train.grad_accum=2"}),
                    Contains("memory_limit_mb = 5 is below what pipeline rank 0's ranks hold"));
  // What fits is not refused: the same model sharded and offloaded, a larger budget, none.
  CHECK_NOTHROW(check({"train.memory_limit_mb=40", "parallel.data=zero", "zero.stage=3", "parallel.offload=cpu"}));
  CHECK_NOTHROW(check({"train.memory_limit_mb=1000"}));
  CHECK_NOTHROW(check({}));
}
