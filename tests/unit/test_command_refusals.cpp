// The refusal corpus beyond `plait run` (test_refusals.cpp has its configs, data, plugins
// and checkpoints): every other command given what a new user gets wrong. Each case as
// data: the exit code (1 for a refusal, 2 for a command line plait cannot read), the
// place the error line starts with (the user's path or flag), the sentence it must say,
// a hint line, no C++ source location, nothing created where the command would have
// written, and the finished run it reads left as it was.
#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>
#include <functional>
#include <regex>

#include <nlohmann/json.hpp>

#include "support/test_support.hpp"

using namespace plait::test;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

namespace {

// One finished 2-step run of the quickstart with a checkpoint at each step, made once per
// process and only read by the cases.
const fs::path& finished_run() {
  static TempDir dir;
  static const fs::path run = [] {
    const fs::path out = dir / "R";
    const ProcessResult r = run_quickstart(out, 2, {"checkpoint.every=1"});
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    return out;
  }();
  return run;
}

fs::path checkpoint_of(const fs::path& run) { return run / "checkpoints" / "step-2"; }

struct CommandCase {
  std::string name;
  std::vector<std::string> args;  // {dir}: the case's folder, {run}: the finished run, {ck}: its step-2 checkpoint
  std::string place;              // the error line starts "error: " + place
  std::string says = {};          // and the output contains this
  int exit_code = 1;
  std::function<void(const fs::path& dir)> prepare = {};  // the case's own files
  std::vector<std::string> never_made = {};                // paths the command must not create
};

std::string expand(std::string s, const fs::path& dir) {
  const std::pair<std::string, std::string> names[] = {{"{dir}", dir.string()},
                                                       {"{run}", finished_run().string()},
                                                       {"{ck}", checkpoint_of(finished_run()).string()}};
  for (const auto& [name, value] : names) {
    for (std::size_t at; (at = s.find(name)) != std::string::npos;) s.replace(at, name.size(), value);
  }
  return s;
}

// Every path under `root` with its size: what "left as it was" compares.
std::vector<std::string> listing(const fs::path& root) {
  std::vector<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(root)) {
    out.push_back(e.path().string() + (e.is_regular_file() ? " " + std::to_string(e.file_size()) : ""));
  }
  std::sort(out.begin(), out.end());
  return out;
}

void expect_refused(const CommandCase& c) {
  TempDir dir;
  if (c.prepare) c.prepare(dir.path());
  std::vector<std::string> args;
  for (const auto& a : c.args) args.push_back(expand(a, dir.path()));
  const auto before = listing(finished_run());
  const ProcessResult r = run_plait(args);
  INFO(c.name << "\n" << r.output);
  CHECK(r.exit_code == c.exit_code);
  // The error line (a sweep says first which combinations it skipped, and why).
  const auto at = r.output.find("error: ");
  REQUIRE(at != std::string::npos);
  CHECK_THAT(r.output.substr(at), StartsWith("error: " + expand(c.place, dir.path())));
  CHECK_THAT(r.output, Contains(expand(c.says, dir.path())));
  CHECK_THAT(r.output, Contains("\n  hint: "));
  CHECK_FALSE(std::regex_search(r.output, std::regex(R"(\.(cpp|hpp|h):[0-9]+)")));
  CHECK_THAT(r.output, !Contains("plait bug") && !Contains("json.exception") && !Contains("filesystem error"));
  // Nor the command-line parser's or the JSON library's own sentences.
  for (const char* theirs : {"The following argument", "required but received", "Exactly 1 option", "is required",
                             " excludes ", " requires ", "not in {", "Could not convert", "syntax error while parsing",
                             "type must be", "e.g. 1e-6"}) {
    CHECK_THAT(r.output, !Contains(theirs));
  }
  for (const auto& p : c.never_made) CHECK_FALSE(fs::exists(expand(p, dir.path())));
  CHECK(listing(finished_run()) == before);
}

void expect_all_refused(const std::vector<CommandCase>& cases) {
  for (const auto& c : cases) {
    DYNAMIC_SECTION(c.name) { expect_refused(c); }
  }
}

void write(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

// A copy of the run's step-2 checkpoint in `dir`/ck, changed by `edit`.
std::function<void(const fs::path&)> damaged(const std::function<void(const fs::path& ck)>& edit) {
  return [edit](const fs::path& dir) {
    fs::copy(checkpoint_of(finished_run()), dir / "ck", fs::copy_options::recursive);
    edit(dir / "ck");
  };
}

std::function<void(const fs::path&)> index_edited(const std::function<void(nlohmann::json&)>& edit) {
  return damaged([edit](const fs::path& ck) {
    nlohmann::json j = nlohmann::json::parse(std::ifstream(ck / "index.json"));
    edit(j);
    std::ofstream(ck / "index.json") << j.dump();
  });
}

std::string first_shard(const fs::path& ck) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(ck)) {
    if (e.path().extension() == ".safetensors") names.push_back(e.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names.front();
}

// A copy of the run folder in `dir`/copy, changed by `edit`.
std::function<void(const fs::path&)> run_copy(const std::function<void(const fs::path& copy)>& edit) {
  return [edit](const fs::path& dir) {
    fs::copy(finished_run(), dir / "copy", fs::copy_options::recursive);
    edit(dir / "copy");
  };
}

void make_folder_with_a_file(const fs::path& dir) { write(dir / "full" / "keep.txt", "earlier results"); }

}  // namespace

TEST_CASE("refused: plait compare's runs and reports", "[refusals]") {
  expect_all_refused({
      {.name = "one run", .args = {"compare", "{run}"}, .place = "compare needs two or more runs; got 1",
       .says = "pass two or more run folders"},
      {.name = "a run folder that does not exist", .args = {"compare", "{run}", "{dir}/nowhere"},
       .place = "{dir}/nowhere: no such run folder"},
      {.name = "a file for a run folder", .args = {"compare", "{run}", "{dir}/notes.txt"},
       .place = "{dir}/notes.txt: no such run folder", .prepare = [](const fs::path& d) { write(d / "notes.txt", "x"); }},
      {.name = "an empty folder", .args = {"compare", "{run}", "{dir}/empty"},
       .place = "{dir}/empty: neither a run folder nor a folder of runs",
       .prepare = [](const fs::path& d) { fs::create_directories(d / "empty"); }},
      {.name = "a run folder without its lock file", .args = {"compare", "{run}", "{dir}/copy"},
       .place = "{dir}/copy: neither a run folder nor a folder of runs",
       .prepare = run_copy([](const fs::path& c) { fs::remove(c / "config.lock.toml"); })},
      {.name = "a run that recorded no step", .args = {"compare", "{run}", "{dir}/copy"},
       .place = "{dir}/copy/metrics.jsonl: no step recorded",
       .prepare = run_copy([](const fs::path& c) { std::ofstream(c / "metrics.jsonl") << ""; })},
      {.name = "a metrics line damaged before the last", .args = {"compare", "{run}", "{dir}/copy"},
       .place = "{dir}/copy/metrics.jsonl:1: not a JSON record", .says = "damaged after it wrote them",
       .prepare = run_copy([](const fs::path& c) {
         const std::string text = read_file(c / "metrics.jsonl");
         std::ofstream(c / "metrics.jsonl") << "{\"step\": 1, \"loss\"\n" << text.substr(text.find('\n') + 1);
       })},
      {.name = "--html into a folder that does not exist", .args = {"compare", "{run}", "{run}", "--html", "{dir}/no/r.html"},
       .place = "--html {dir}/no/r.html: the folder {dir}/no does not exist", .says = "create {dir}/no first",
       .never_made = {"{dir}/no"}},
      {.name = "--markdown onto a folder", .args = {"compare", "{run}", "{run}", "--markdown", "{dir}/md"},
       .place = "--markdown {dir}/md: it is a folder, not a file",
       .prepare = [](const fs::path& d) { fs::create_directories(d / "md"); }},
      {.name = "--markdown onto a file that is not a report", .args = {"compare", "{run}", "{dir}/copy", "--markdown", "{dir}/notes.md"},
       .place = "--markdown {dir}/notes.md: the file exists and is not a report of plait compare: it would be replaced",
       .prepare = [](const fs::path& d) {
         fs::copy(finished_run(), d / "copy", fs::copy_options::recursive);
         write(d / "notes.md", "# my notes\n");
       }},
      {.name = "--html onto a config", .args = {"compare", "{run}", "{dir}/copy", "--html", "{dir}/copy/config.lock.toml"},
       .place = "--html {dir}/copy/config.lock.toml: the file exists and is not a report of plait compare",
       .prepare = [](const fs::path& d) { fs::copy(finished_run(), d / "copy", fs::copy_options::recursive); }},
      {.name = "--html under /proc", .args = {"compare", "{run}", "{dir}/copy", "--html", "/proc/r.html"},
       .place = "--html /proc/r.html: the folder /proc is not writable", .says = "(the system makes no new entries in it)",
       .prepare = [](const fs::path& d) { fs::copy(finished_run(), d / "copy", fs::copy_options::recursive); }},
      {.name = "a run with itself", .args = {"compare", "{run}", "{run}"},
       .place = "plait compare: {run} is the run {run} named twice", .says = "a run compared with itself"},
      {.name = "a run with itself through a link", .args = {"compare", "{run}", "{dir}/link"},
       .place = "plait compare: {dir}/link is the run {run} again, by another path",
       .prepare = [](const fs::path& d) { fs::create_directory_symlink(finished_run(), d / "link"); }},
      {.name = "a run with itself, written another way", .args = {"compare", "{run}", "{run}/../R/"},
       .place = "plait compare: {run}/../R/ is the run {run} again, by another path"},
  });
}

TEST_CASE("a torn last line of metrics.jsonl is left out of plait compare, and said", "[refusals]") {
  TempDir dir;
  fs::copy(finished_run(), dir / "torn", fs::copy_options::recursive);
  const std::string text = read_file(dir / "torn" / "metrics.jsonl");
  std::ofstream(dir / "torn" / "metrics.jsonl") << text.substr(0, text.size() - 20);
  const ProcessResult r = run_plait({"compare", finished_run().string(), (dir / "torn").string()});
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.output, Contains("torn: the last line of its metrics.jsonl was cut short") &&
                           Contains("over 1 common steps"));
}

TEST_CASE("refused: plait sweep's config, axes and folder", "[refusals]") {
  const std::string config = source_path("configs/quickstart.toml");
  expect_all_refused({
      {.name = "a config that does not exist", .args = {"sweep", "{dir}/nowhere.toml", "--vary", "train.lr=0.1,0.2",
                                                         "--out", "{dir}/s"},
       .place = "config file not found: {dir}/nowhere.toml", .never_made = {"{dir}/s"}},
      {.name = "a key no config has", .args = {"sweep", config, "--vary", "train.lerning_rate=0.1,0.2", "--out", "{dir}/s"},
       .place = "--vary train.lerning_rate=0.1: unknown key 'lerning_rate' in [train]", .never_made = {"{dir}/s"}},
      {.name = "a table nobody has", .args = {"sweep", config, "--vary", "nosuch.key=1,2", "--out", "{dir}/s"},
       .place = "--vary nosuch.key: no table [nosuch]", .never_made = {"{dir}/s"}},
      {.name = "a varied key also set", .args = {"sweep", config, "--vary", "train.lr=1e-3,2e-3", "--set", "train.lr=5e-3",
                                                  "--out", "{dir}/s"},
       .place = "--vary train.lr and --set train.lr=5e-3 both set train.lr: every run would take the --vary value",
       .never_made = {"{dir}/s"}},
      {.name = "one combination", .args = {"sweep", config, "--vary", "train.lr=1e-3", "--out", "{dir}/s"},
       .place = "--vary train.lr=1e-3 gives one combination: a sweep compares two or more", .never_made = {"{dir}/s"}},
      {.name = "one valid combination", .args = {"sweep", config, "--vary", "model.n_head=4,3", "--out", "{dir}/s"},
       .place = "only n_head-4 of the sweep's 2 combinations is valid (the reasons are above): one run compares with nothing",
       .never_made = {"{dir}/s"}},
      {.name = "a value given twice", .args = {"sweep", config, "--vary", "train.lr=0.1,0.2,0.1", "--out", "{dir}/s"},
       .place = "--vary train.lr: 0.1 is given twice", .says = "--repeats N", .never_made = {"{dir}/s"}},
      {.name = "one value written two ways", .args = {"sweep", config, "--vary", "train.lr=1e-3,0.001", "--out", "{dir}/s"},
       .place = "--vary train.lr: 1e-3 and 0.001 are the same value", .never_made = {"{dir}/s"}},
      {.name = "one word quoted and bare", .args = {"sweep", config, "--vary", "parallel.data=ddp,\"ddp\"", "--out", "{dir}/s"},
       .place = "--vary parallel.data: ddp and \"ddp\" are the same value", .never_made = {"{dir}/s"}},
      {.name = "a word for a whole number", .args = {"sweep", config, "--vary", "train.steps=10,ten", "--out", "{dir}/s"},
       .place = "--vary train.steps=ten: [train].steps: expected an integer, got string \"ten\"", .never_made = {"{dir}/s"}},
      {.name = "a fraction for a whole number", .args = {"sweep", config, "--vary", "train.grad_accum=1,2.5", "--out", "{dir}/s"},
       .place = "--vary train.grad_accum=2.5: [train].grad_accum: expected an integer, got float 2.5", .never_made = {"{dir}/s"}},
      {.name = "a number past its bound", .args = {"sweep", config, "--vary", "train.lr=0.1,-1", "--out", "{dir}/s"},
       .place = "--vary train.lr=-1: [train].lr: -1.0 is below the minimum 0", .never_made = {"{dir}/s"}},
      {.name = "a choice the key lacks", .args = {"sweep", config, "--vary", "model.family=gpt2,gpt3", "--out", "{dir}/s"},
       .place = "--vary model.family=gpt3: [model].family: \"gpt3\" is not one of", .never_made = {"{dir}/s"}},
      {.name = "a plugin option of the wrong type", .args = {"sweep", config, "--vary", "zero.stage=1,all", "--out", "{dir}/s"},
       .place = "--vary zero.stage=all: [zero].stage: expected an integer", .never_made = {"{dir}/s"}},
      {.name = "--out a folder that holds files", .args = {"sweep", config, "--vary", "train.lr=0.1,0.2", "--out", "{dir}/full"},
       .place = "the sweep folder {dir}/full already exists and is not empty", .says = "choose another --out",
       .prepare = make_folder_with_a_file},
      {.name = "--vary without values", .args = {"sweep", config, "--vary", "train.lr", "--out", "{dir}/s"},
       .place = "--vary train.lr: expected KEY=V1,V2,...", .never_made = {"{dir}/s"}},
      {.name = "--vary with an empty value", .args = {"sweep", config, "--vary", "train.lr=", "--out", "{dir}/s"},
       .place = "--vary train.lr=: an empty value", .never_made = {"{dir}/s"}},
      {.name = "--vary of a key without its table", .args = {"sweep", config, "--vary", "lr=1,2", "--out", "{dir}/s"},
       .place = "--vary lr=1,2: 'lr' is not a table.key", .never_made = {"{dir}/s"}},
      {.name = "--vary of one key twice",
       .args = {"sweep", config, "--vary", "train.lr=0.1,0.2", "--vary", "train.lr=0.3", "--out", "{dir}/s"},
       .place = "--vary train.lr is given twice", .never_made = {"{dir}/s"}},
      {.name = "--repeats 0", .args = {"sweep", config, "--vary", "train.lr=0.1,0.2", "--repeats", "0", "--out", "{dir}/s"},
       .place = "--repeats 0 is out of range: it takes 1 to 1000", .never_made = {"{dir}/s"}},
      {.name = "--steps -1", .args = {"sweep", config, "--vary", "train.lr=0.1,0.2", "--steps", "-1", "--out", "{dir}/s"},
       .place = "--steps -1 is out of range", .never_made = {"{dir}/s"}},
  });
}

TEST_CASE("refused: plait export's checkpoint, folder and flags", "[refusals]") {
  expect_all_refused({
      {.name = "a checkpoint that does not exist", .args = {"export", "{dir}/nowhere", "--hf", "{dir}/hf"},
       .place = "checkpoint {dir}/nowhere does not exist", .never_made = {"{dir}/hf"}},
      {.name = "a folder holding no checkpoint", .args = {"export", "{dir}/empty", "--hf", "{dir}/hf"},
       .place = "{dir}/empty holds no checkpoint", .prepare = [](const fs::path& d) { fs::create_directories(d / "empty"); },
       .never_made = {"{dir}/hf"}},
      {.name = "a checkpoint that lacks one of its model's tensors", .args = {"export", "{dir}/ck", "--hf", "{dir}/hf"},
       .place = "checkpoint {dir}/ck has no parameter transformer.wte.weight", .says = "the checkpoint is damaged",
       .prepare = index_edited([](nlohmann::json& j) { j["tensors"].erase("param/transformer.wte.weight"); }),
       .never_made = {"{dir}/hf", "{dir}/hf.partial"}},
      {.name = "--hf a folder that holds files", .args = {"export", "{run}", "--hf", "{dir}/full"},
       .place = "the export folder {dir}/full already exists and is not empty", .says = "choose another --hf",
       .prepare = make_folder_with_a_file},
      {.name = "--hf a file", .args = {"export", "{run}", "--hf", "{dir}/notes.txt"},
       .place = "the export folder {dir}/notes.txt exists and is not a folder",
       .prepare = [](const fs::path& d) { write(d / "notes.txt", "x"); }},
      {.name = "--hf empty", .args = {"export", "{run}", "--hf", ""}, .place = "--hf \"\": the export folder's path is empty"},
      {.name = "--dtype int8", .args = {"export", "{run}", "--hf", "{dir}/hf", "--dtype", "int8"},
       .place = "plait export: --dtype int8 is not one of float32, bfloat16 or float16", .exit_code = 2,
       .never_made = {"{dir}/hf"}},
      {.name = "--peft with --merge", .args = {"export", "{run}", "--peft", "{dir}/p", "--merge"},
       .place = "plait export: --merge is taken only with --hf", .says = "`plait export --help`", .exit_code = 2,
       .never_made = {"{dir}/p"}},
      {.name = "--peft with --shard-mb", .args = {"export", "{run}", "--peft", "{dir}/p", "--shard-mb", "100"},
       .place = "plait export: --shard-mb and --peft cannot be given together", .exit_code = 2, .never_made = {"{dir}/p"}},
      {.name = "--hf and --peft", .args = {"export", "{run}", "--hf", "{dir}/hf", "--peft", "{dir}/p"},
       .place = "plait export takes one of --hf or --peft, and 2 were given: choose one", .exit_code = 2,
       .never_made = {"{dir}/hf", "{dir}/p"}},
      {.name = "--shard-mb 0", .args = {"export", "{run}", "--hf", "{dir}/hf", "--shard-mb", "0"},
       .place = "--shard-mb 0 must be a finite number above 0", .says = "e.g. --shard-mb 5000", .never_made = {"{dir}/hf"}},
      {.name = "--shard-mb -1", .args = {"export", "{run}", "--hf", "{dir}/hf", "--shard-mb", "-1"},
       .place = "--shard-mb -1 must be a finite number above 0", .never_made = {"{dir}/hf"}},
      {.name = "--shard-mb past a petabyte", .args = {"export", "{run}", "--hf", "{dir}/hf", "--shard-mb", "1e12"},
       .place = "--shard-mb 1e12: at most 1000000000", .never_made = {"{dir}/hf"}},
  });
}

TEST_CASE("refused: plait checkpoint verify, inspect and diff of damaged checkpoints", "[refusals]") {
  expect_all_refused({
      {.name = "verify of a path that does not exist", .args = {"checkpoint", "verify", "{dir}/nowhere"},
       .place = "checkpoint {dir}/nowhere does not exist"},
      {.name = "verify of an empty folder", .args = {"checkpoint", "verify", "{dir}/empty"},
       .place = "{dir}/empty holds no checkpoint", .prepare = [](const fs::path& d) { fs::create_directories(d / "empty"); }},
      {.name = "an index.json that is a folder", .args = {"checkpoint", "verify", "{dir}/ck"},
       .place = "{dir}/ck/index.json is not a file", .prepare = damaged([](const fs::path& ck) {
         fs::remove(ck / "index.json");
         fs::create_directories(ck / "index.json");
       })},
      {.name = "a torn index", .args = {"checkpoint", "verify", "{dir}/ck"},
       .place = "{dir}/ck/index.json is not valid JSON: it is damaged at line 1, column 35: a string has no closing quote",
       .says = "the checkpoint is damaged",
       .prepare = damaged([](const fs::path& ck) { std::ofstream(ck / "index.json") << "{\"format\": \"plait-checkpoint\", \"st"; })},
      {.name = "an index of an unknown format version", .args = {"checkpoint", "verify", "{dir}/ck"},
       .place = "{dir}/ck/index.json: checkpoint format version 99, but this plait reads version 1",
       .prepare = index_edited([](nlohmann::json& j) { j["format_version"] = 99; })},
      {.name = "an index whose step no run can have", .args = {"checkpoint", "verify", "{dir}/ck"},
       .place = "{dir}/ck/index.json: the checkpoint index says step -3",
       .prepare = index_edited([](nlohmann::json& j) {
         j["step"] = -3;
         j["state"]["trainer"]["step"] = -3;
       })},
      {.name = "an index whose step disagrees with its trainer state", .args = {"checkpoint", "verify", "{dir}/ck"},
       .place = "{dir}/ck/index.json: its step is 7 but its trainer state's is 2",
       .prepare = index_edited([](nlohmann::json& j) { j["step"] = 7; })},
      {.name = "an index without the global batch resume reads", .args = {"checkpoint", "verify", "{dir}/ck"},
       .place = "{dir}/ck/index.json: the checkpoint index is damaged: its \"state\": it lacks the key 'global_batch'",
       .prepare = index_edited([](nlohmann::json& j) { j["state"].erase("global_batch"); })},
      {.name = "an index whose part names a key its file lacks", .args = {"checkpoint", "verify", "{dir}/ck"},
       .place = "{dir}/ck/rank-0.safetensors has no tensor 'renamed' (a part of exp_avg/",
       .prepare = index_edited([](nlohmann::json& j) { j["tensors"].begin().value()["parts"][0]["key"] = "renamed"; })},
      {.name = "an index whose token count is a word", .args = {"checkpoint", "verify", "{dir}/ck"},
       .place = "{dir}/ck/index.json: the checkpoint index is damaged: its \"tokens\" holds \"many\" where a whole number belongs",
       .prepare = index_edited([](nlohmann::json& j) { j["tokens"] = "many"; })},
      {.name = "an index whose format version is a word", .args = {"checkpoint", "inspect", "{dir}/ck"},
       .place = "{dir}/ck/index.json: the checkpoint index is damaged: its \"format_version\" is not a whole number",
       .prepare = index_edited([](nlohmann::json& j) { j["format_version"] = "one"; })},
      {.name = "an index without its files", .args = {"checkpoint", "inspect", "{dir}/ck"},
       .place = "{dir}/ck/index.json: the checkpoint index is damaged: it lacks the key \"files\"",
       .prepare = index_edited([](nlohmann::json& j) { j.erase("files"); })},
      {.name = "an index that is not JSON at all", .args = {"export", "{dir}/ck", "--hf", "{dir}/hf"},
       .place = "{dir}/ck/index.json is not valid JSON: it is damaged at line 1, column 1: 'x' is not JSON there",
       .prepare = damaged([](const fs::path& ck) { std::ofstream(ck / "index.json") << "x"; }), .never_made = {"{dir}/hf"}},
      {.name = "an empty index", .args = {"checkpoint", "diff", "{ck}", "{dir}/ck"},
       .place = "{dir}/ck/index.json is not valid JSON: it is empty",
       .prepare = damaged([](const fs::path& ck) { std::ofstream(ck / "index.json") << ""; })},
      {.name = "an index that lies about a tensor's dtype", .args = {"checkpoint", "verify", "{dir}/ck"},
       .place = "{dir}/ck/index.json: tensor param/transformer.wte.weight has dtype 'F99'",
       .prepare = index_edited([](nlohmann::json& j) { j["tensors"]["param/transformer.wte.weight"]["dtype"] = "F99"; })},
      {.name = "a truncated file", .args = {"checkpoint", "verify", "{dir}/ck"}, .place = "checkpoint file {dir}/ck/rank-",
       .says = "has 10 bytes, its index says",
       .prepare = damaged([](const fs::path& ck) { fs::resize_file(ck / first_shard(ck), 10); })},
      {.name = "a missing file", .args = {"checkpoint", "verify", "{dir}/ck"}, .place = "checkpoint file {dir}/ck/rank-",
       .says = "is missing", .prepare = damaged([](const fs::path& ck) { fs::remove(ck / first_shard(ck)); })},
      {.name = "a flipped byte", .args = {"checkpoint", "verify", "{dir}/ck"}, .place = "checkpoint file {dir}/ck/rank-",
       .says = "fails its checksum", .prepare = damaged([](const fs::path& ck) {
         std::fstream f(ck / first_shard(ck), std::ios::in | std::ios::out | std::ios::binary);
         f.seekg(-3, std::ios::end);
         const char c = static_cast<char>(f.get());
         f.seekp(-3, std::ios::end);
         f.put(static_cast<char>(c ^ 0x01));
       })},
      {.name = "inspect of a save that did not finish", .args = {"checkpoint", "inspect", "{dir}/.step-2.partial"},
       .place = "{dir}/.step-2.partial is a checkpoint whose save did not finish", .prepare = [](const fs::path& d) {
         fs::copy(checkpoint_of(finished_run()), d / ".step-2.partial", fs::copy_options::recursive);
         fs::remove(d / ".step-2.partial" / "index.json");
       }},
      {.name = "diff against a path that does not exist", .args = {"checkpoint", "diff", "{ck}", "{dir}/nowhere"},
       .place = "checkpoint {dir}/nowhere does not exist"},
  });
}

TEST_CASE("refused: plait debug, plait config show and the command line", "[refusals]") {
  const std::string config = source_path("configs/quickstart.toml");
  expect_all_refused({
      {.name = "debug of a folder that does not exist", .args = {"debug", "{dir}/nowhere"},
       .place = "plait debug: {dir}/nowhere is not a folder"},
      {.name = "debug of a folder without flight records", .args = {"debug", "{dir}"},
       .place = "plait debug: {dir} has no flight records"},
      {.name = "debug --wait -1", .args = {"debug", "{run}", "--wait", "-1"}, .place = "--wait -1 must be a finite number above 0",
       .says = "e.g. --wait 10"},
      {.name = "config show of a file that does not exist", .args = {"config", "show", "{dir}/nowhere.toml"},
       .place = "config file not found: {dir}/nowhere.toml"},
      {.name = "config show of bad TOML", .args = {"config", "show", "{dir}/bad.toml"}, .place = "{dir}/bad.toml:1:7: invalid TOML",
       .prepare = [](const fs::path& d) { write(d / "bad.toml", "[train\n"); }},
      {.name = "config show of a key no schema has", .args = {"config", "show", "{dir}/typo.toml"},
       .place = "{dir}/typo.toml:2:1: unknown key 'setps' in [train] (did you mean 'steps'?)",
       .prepare = [](const fs::path& d) { write(d / "typo.toml", "[train]\nsetps = 3\n"); }},
      {.name = "--nnodes 0", .args = {"run", config, "--nnodes", "0", "--out", "{dir}/o"},
       .place = "--nnodes 0 is out of range", .never_made = {"{dir}/o"}},
      {.name = "--master-port abc", .args = {"run", config, "--master-port", "abc", "--out", "{dir}/o"},
       .place = "--master-port abc: expected a whole number", .never_made = {"{dir}/o"}},
  });
}

// What the command-line parser refuses, each kind of its refusal (an unexpected word, a
// value missing or given twice, a required one absent, one of two, two that exclude or
// need each other, a value not allowed or not converted), said as plait's own sentence
// that names the command and the user's word, exit 2, with the command's --help.
TEST_CASE("refused: the command line, in plait's words for every kind of parser refusal", "[refusals]") {
  const std::string config = source_path("configs/quickstart.toml");
  expect_all_refused({
      {.name = "a command plait does not have", .args = {"frobnicate"},
       .place = "plait has no command 'frobnicate'; its commands are run, check, verify", .says = "`plait --help`",
       .exit_code = 2},
      {.name = "a misspelt command", .args = {"compar", "{run}"},
       .place = "plait has no command 'compar' (did you mean 'compare'?)", .exit_code = 2},
      {.name = "a flag plait run does not have", .args = {"run", config, "--stepz", "3", "--out", "{dir}/o"},
       .place = "plait run has no option --stepz (did you mean '--steps'?)", .says = "`plait run --help`", .exit_code = 2,
       .never_made = {"{dir}/o"}},
      {.name = "a flag with = plait run does not have", .args = {"run", config, "--frob=3", "--out", "{dir}/o"},
       .place = "plait run has no option --frob", .exit_code = 2, .never_made = {"{dir}/o"}},
      {.name = "one argument too many", .args = {"checkpoint", "inspect", "{ck}", "extra"},
       .place = "plait checkpoint inspect takes path and no more: 'extra' is one too many",
       .says = "`plait checkpoint inspect --help`", .exit_code = 2},
      {.name = "an argument to a command that takes none", .args = {"models", "gpt2"},
       .place = "plait models takes no arguments, only options: 'gpt2' is not one", .exit_code = 2},
      {.name = "--steps without its value", .args = {"run", config, "--steps"},
       .place = "plait run: --steps needs a value after it", .exit_code = 2},
      {.name = "--steps twice", .args = {"run", config, "--steps", "3", "--steps", "4", "--out", "{dir}/o"},
       .place = "plait run: --steps is given 2 times, and it takes one value: give it once", .exit_code = 2,
       .never_made = {"{dir}/o"}},
      {.name = "run without a config", .args = {"run"}, .place = "plait run needs its config argument", .exit_code = 2},
      {.name = "compare without runs", .args = {"compare"}, .place = "plait compare needs its runs argument", .exit_code = 2},
      {.name = "sweep without --vary", .args = {"sweep", config, "--out", "{dir}/s"}, .place = "plait sweep needs --vary",
       .exit_code = 2, .never_made = {"{dir}/s"}},
      {.name = "export without --hf or --peft", .args = {"export", "{run}"},
       .place = "plait export needs --hf or --peft", .exit_code = 2},
      {.name = "checkpoint without what to do", .args = {"checkpoint"},
       .place = "plait checkpoint needs a command: one of inspect, verify, diff", .says = "`plait checkpoint --help`",
       .exit_code = 2},
      {.name = "a switch given a value", .args = {"verify", "ddp", "--quick=maybe", "--out", "{dir}/v"},
       .place = "plait verify: --quick cannot take 'maybe' (a switch takes no value)", .exit_code = 2,
       .never_made = {"{dir}/v"}},
  });
}

TEST_CASE("refused: each number flag's hint gives an example of its own", "[refusals]") {
  const std::string config = source_path("configs/quickstart.toml");
  expect_all_refused({
      {.name = "check --tolerance 0", .args = {"check", config, "--tolerance", "0", "--out", "{dir}/c"},
       .place = "--tolerance 0 must be a finite number above 0", .says = "e.g. --tolerance 1e-5", .never_made = {"{dir}/c"}},
      {.name = "verify --loss-gap -0.1", .args = {"verify", "ddp", "--loss-gap", "-0.1", "--out", "{dir}/v"},
       .place = "--loss-gap -0.1 must be a finite number above 0", .says = "e.g. --loss-gap 0.05", .never_made = {"{dir}/v"}},
      {.name = "check --tolerance 1e300 (passes anything)", .args = {"check", config, "--tolerance", "1e300", "--out", "{dir}/c"},
       .place = "--tolerance 1e300: a relative difference of 1 or more lets anything pass", .says = "e.g. --tolerance 1e-5",
       .never_made = {"{dir}/c"}},
      {.name = "verify --loss-gap 1", .args = {"verify", "ddp", "--loss-gap", "1", "--out", "{dir}/v"},
       .place = "--loss-gap 1: a relative difference of 1 or more lets anything pass", .never_made = {"{dir}/v"}},
      {.name = "plan --seq-len past the model's block size (named as typed, not as a --set)",
       .args = {"plan", "--model", "gpt2-124m", "--gpus", "1", "--seq-len", "100000"},
       .place = "--seq-len 100000: [data] seq_len 100000 is longer than the model's block_size 1024"},
      {.name = "plan --explain with --seq-len", .args = {"plan", "--explain", config, "--seq-len", "128"},
       .place = "--seq-len belongs to the search (--model), not to --explain: the config says its own"},
      {.name = "plan --explain with --top", .args = {"plan", "--explain", config, "--top", "3"},
       .place = "--top belongs to the search (--model), not to --explain"},
      {.name = "plan --explain with --write", .args = {"plan", "--explain", config, "--write", "{dir}/p.toml"},
       .place = "--write belongs to the search (--model), not to --explain", .never_made = {"{dir}/p.toml"}},
      {.name = "plan search with a --set of a key every plan chooses",
       .args = {"plan", "--model", "gpt2-124m", "--gpus", "8", "--set", "parallel.dp=2"},
       .place = "--set parallel.dp=2: the search chooses parallel.dp for each plan it tries", .says = "plait plan --explain"},
      {.name = "bundles of a config that is not there", .args = {"bundles", "{dir}/none.toml"},
       .place = "config file not found: {dir}/none.toml"},
      {.name = "plan --scale with a count twice", .args = {"plan", "--model", "gpt2-124m", "--gpus", "8", "--scale", "8,8"},
       .place = "--scale 8,8: 8 is given twice"},
      {.name = "plan --scale with an empty item", .args = {"plan", "--model", "gpt2-124m", "--gpus", "8", "--scale", "8,,64"},
       .place = "--scale 8,,64: an empty item (two commas, or one at an end)"},
      {.name = "export --shard-mb inf", .args = {"export", "{run}", "--hf", "{dir}/hf", "--shard-mb", "inf"},
       .place = "--shard-mb inf must be a finite number above 0", .says = "e.g. --shard-mb 5000", .never_made = {"{dir}/hf"}},
  });
}

TEST_CASE("refused: plait new, verify and schedule", "[refusals]") {
  expect_all_refused({
      {.name = "new plugin of a kind without a template", .args = {"new", "plugin", "x", "--kind", "frob", "--dir", "{dir}/x"},
       .place = "plait new plugin: --kind frob has no template", .says = "--kind takes data, pipeline, tensor, offload, comm or adapter",
       .never_made = {"{dir}/x"}},
      {.name = "new plugin of a name that is not one", .args = {"new", "plugin", "9bad", "--kind", "data", "--dir", "{dir}/x"},
       .place = "plait new plugin: '9bad' is not a plugin name", .never_made = {"{dir}/x"}},
      {.name = "new plugin into a folder that holds files", .args = {"new", "plugin", "x", "--kind", "data", "--dir", "{dir}/full"},
       .place = "plait new plugin: {dir}/full exists and is not an empty folder", .prepare = make_folder_with_a_file},
      {.name = "new plugin of a 300-character name", .args = {"new", "plugin", std::string(300, 'a'), "--kind", "data",
                                                             "--dir", "{dir}/x"},
       .place = "plait new plugin: the name 'aaaaaaaaaaaaaaaaaaaaaaaa... (300 characters)' is 300 characters long, past the "
                "limit of 64",
       .says = "at most 64 characters", .never_made = {"{dir}/x"}},
      {.name = "new plugin named after a built-in plugin", .args = {"new", "plugin", "ddp", "--kind", "data", "--dir", "{dir}/x"},
       .place = "plait new plugin: 'ddp' is already the name of the built-in data plugin ", .says = "e.g. my-ddp",
       .never_made = {"{dir}/x"}},
      {.name = "new plugin named after another built-in kind", .args = {"new", "plugin", "lora", "--kind", "adapter", "--dir", "{dir}/l"},
       .place = "plait new plugin: 'lora' is already the name of the built-in adapter plugin ", .never_made = {"{dir}/l"}},
      {.name = "new plugin into a folder no one can write", .args = {"new", "plugin", "x", "--kind", "data", "--dir", "/sys/plait-x"},
       .place = "plait new plugin: cannot write the project into /sys: the folder is not writable (",
       .says = "give --dir a folder you can write", .never_made = {"/sys/plait-x", "/sys/.plait-x.partial"}},
      {.name = "new plugin into a folder under a file", .args = {"new", "plugin", "x", "--kind", "data", "--dir", "{dir}/f/x"},
       .place = "plait new plugin: cannot make {dir}/f/x: {dir}/f is a file",
       .prepare = [](const fs::path& d) { write(d / "f", "a file"); }},
      {.name = "verify of a plugin nobody has", .args = {"verify", "nosuchplugin", "--out", "{dir}/v"},
       .place = "plait verify: no plugin named 'nosuchplugin'", .never_made = {"{dir}/v"}},
      {.name = "verify of a library path that does not exist", .args = {"verify", "{dir}/none.so", "--out", "{dir}/v"},
       .place = "plait verify: no file {dir}/none.so", .never_made = {"{dir}/v"}},
      {.name = "verify --set of a key no table has", .args = {"verify", "ddp", "--quick", "--set", "train.bogus=1", "--out", "{dir}/v"},
       .place = "--set train.bogus=1: unknown key 'bogus' in [train]", .says = "every case runs with --set train.bogus=1",
       .never_made = {"{dir}/v"}},
      {.name = "verify --set of a word for a number", .args = {"verify", "ddp", "--set", "train.steps=many", "--out", "{dir}/v"},
       .place = "--set train.steps=many: [train].steps: expected an integer", .never_made = {"{dir}/v"}},
      {.name = "verify --set of a plugin option out of bounds", .args = {"verify", "zero", "--quick", "--set", "zero.stage=7",
                                                                      "--out", "{dir}/v"},
       .place = "--set zero.stage=7: [zero].stage:", .never_made = {"{dir}/v"}},
      {.name = "verify --json into a folder that does not exist",
       .args = {"verify", "ddp", "--quick", "--json", "{dir}/no/v.json", "--out", "{dir}/v"},
       .place = "--json {dir}/no/v.json: the folder {dir}/no does not exist", .never_made = {"{dir}/v", "{dir}/no"}},
      {.name = "verify --json into a folder no one can write",
       .args = {"verify", "ddp", "--quick", "--json", "/sys/plait-verify.json", "--out", "{dir}/v"},
       .place = "--json /sys/plait-verify.json: the folder /sys is not writable (", .never_made = {"{dir}/v"}},
      {.name = "verify --json onto a folder", .args = {"verify", "ddp", "--quick", "--json", "{dir}", "--out", "{dir}/v"},
       .place = "--json {dir}: it is a folder, not a file", .never_made = {"{dir}/v"}},
      {.name = "schedule show of a config that does not exist", .args = {"schedule", "show", "{dir}/none.toml"},
       .place = "config file not found: {dir}/none.toml"},
  });
}
