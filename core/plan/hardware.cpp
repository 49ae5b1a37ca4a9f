#include "plan/hardware.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>

#include "config/config_loader.hpp"
#include "config/schema.hpp"
#include "plait/sdk/error.hpp"
#include "schema_hardware_about.hpp"
#include "schema_hardware_gpu.hpp"
#include "schema_hardware_links.hpp"
#include "schema_hardware_node.hpp"
#include "schema_hardware_price.hpp"
#include "schema_hardware_reliability.hpp"
#include "util/did_you_mean.hpp"
#include "util/search_path.hpp"

namespace plait {
namespace fs = std::filesystem;
namespace {

constexpr const char* kOwner = "hardware file";

struct HardwareTable {
  const char* name;
  const char* schema;
};

const std::vector<HardwareTable>& hardware_tables() {
  static const std::vector<HardwareTable> tables = {
      {"hardware", schema_hardware_about_toml}, {"gpu", schema_hardware_gpu_toml},
      {"node", schema_hardware_node_toml},      {"intra_node", schema_hardware_links_toml},
      {"inter_node", schema_hardware_links_toml}, {"price", schema_hardware_price_toml},
      {"reliability", schema_hardware_reliability_toml}};
  return tables;
}

std::string table_list() {
  std::string list;
  for (const auto& t : hardware_tables()) list += concat(list.empty() ? "[" : ", [", t.name, "]");
  return list;
}

// Every table resolved against its schema; a table the format lacks, or a key outside
// any table but `extends`, is refused where it was written.
std::map<std::string, Options> resolve_hardware(const LoadedConfig& loaded) {
  std::vector<std::string> known;
  for (const auto& t : hardware_tables()) known.push_back(t.name);
  for (const auto& table : loaded.tree.tables()) {
    if (table.empty()) {
      if (loaded.tree.table("").empty()) continue;
      const auto& [key, entry] = *loaded.tree.table("").begin();
      throw Error(concat(entry.source.describe(), ": '", key, "' is outside any table of a hardware file"),
                  concat("a hardware file has ", table_list(), " and may `extends` another"));
    }
    if (std::find(known.begin(), known.end(), table) == known.end()) {
      throw Error(concat(loaded.tree.table_source(table).describe(), ": unknown table [", table, "] in a hardware file",
                         did_you_mean(table, known)),
                  concat("a hardware file has ", table_list()));
    }
  }
  std::map<std::string, Options> out;
  for (const auto& t : hardware_tables()) {
    const TableSchema schema = parse_schema(t.schema, t.name, kOwner);
    const bool written = std::find(loaded.tree.tables().begin(), loaded.tree.tables().end(), t.name) !=
                         loaded.tree.tables().end();
    const Source where = written ? loaded.tree.table_source(t.name) : Source::in_file(loaded.path, 1, 1);
    out.emplace(t.name, resolve_table(schema, loaded.tree.table(t.name), where, loaded.path + " (default)").options);
  }
  return out;
}

// `<op>_bus_kib` and `<op>_times_us`: both or neither, as many of each, sizes positive
// and ascending, times positive.
void read_link_points(const Options& o, const std::string& op, CollectiveCost& c) {
  const std::string& table = o.table();
  const auto sizes = o.find<std::vector<double>>(op + "_bus_kib");
  const auto times = o.find<std::vector<double>>(op + "_times_us");
  if (!sizes && !times) return;
  const std::string where = o.where(op + (sizes ? "_bus_kib" : "_times_us"));
  PLAIT_CHECK(sizes && times && sizes->size() == times->size() && !sizes->empty(),
              concat(where, ": [", table, "] ", op, "_bus_kib has ", sizes ? sizes->size() : 0, " sizes and ", op,
                     "_times_us ", times ? times->size() : 0, " times"),
              "give one time for each size, at least one of each, or neither");
  for (std::size_t i = 0; i < sizes->size(); ++i) {
    PLAIT_CHECK((*sizes)[i] > 0 && (i == 0 || (*sizes)[i] > (*sizes)[i - 1]),
                concat(where, ": [", table, "] ", op, "_bus_kib must be positive and ascending; ", (*sizes)[i], " is not"),
                "list the sizes from the smallest up");
    PLAIT_CHECK((*times)[i] > 0, concat(o.where(op + "_times_us"), ": [", table, "] ", op, "_times_us ", (*times)[i],
                                        " is not a time"),
                "write the microseconds the collective took at that size");
  }
  c.bus_kib = *sizes;
  c.times_us = *times;
}

LinkModel links_from(const Options& o) {
  auto cost = [&](const std::string& op, const std::string& bw) {
    CollectiveCost c{o.get<double>(op + "_us"), o.get<double>(op + bw), {}, {}};
    read_link_points(o, op, c);
    return c;
  };
  return {cost("all_reduce", "_busbw_gbps"), cost("all_gather", "_busbw_gbps"), cost("reduce_scatter", "_busbw_gbps"),
          cost("send", "_gbps")};
}

void check_gemm_points(const Hardware& h, const Options& gpu) {
  const std::string where = gpu.where("gemm_sizes");
  PLAIT_CHECK(!h.gemm_sizes.empty() && h.gemm_sizes.size() == h.gemm_efficiency.size(),
              concat(where, ": [gpu] gemm_sizes has ", h.gemm_sizes.size(), " sizes and gemm_efficiency ",
                     h.gemm_efficiency.size(), " efficiencies"),
              "give one efficiency for each size, at least one of each");
  for (std::size_t i = 0; i < h.gemm_sizes.size(); ++i) {
    PLAIT_CHECK(h.gemm_sizes[i] > 0 && (i == 0 || h.gemm_sizes[i] > h.gemm_sizes[i - 1]),
                concat(where, ": [gpu] gemm_sizes must be positive and ascending; ", h.gemm_sizes[i], " is not"),
                "list the GEMM sizes from the smallest up");
    PLAIT_CHECK(h.gemm_efficiency[i] > 0 && h.gemm_efficiency[i] <= 1,
                concat(gpu.where("gemm_efficiency"), ": [gpu] gemm_efficiency ", h.gemm_efficiency[i],
                       " is not a fraction of the peak (above 0, at most 1)"),
                "write the achieved TFLOP/s over the peak, e.g. 0.75");
  }
}

Hardware hardware_from(const LoadedConfig& loaded) {
  const auto t = resolve_hardware(loaded);
  const Options &about = t.at("hardware"), &gpu = t.at("gpu"), &node = t.at("node"), &price = t.at("price"),
                &reliability = t.at("reliability");
  Hardware h;
  h.file = loaded.path;
  h.id = fs::path(loaded.path).stem().string();
  h.name = about.get<std::string>("name");
  h.sources = about.get<std::vector<std::string>>("sources");
  h.device = about.get<std::string>("device");
  // What `plait plan --calibrate` wrote before [hardware] device existed measured CPU ranks.
  if (about.is_default("device") && h.name.find("(calibrated)") != std::string::npos) h.device = "cpu";
  h.comm = about.find<std::string>("comm").value_or(h.device == "cuda" ? "nccl" : "gloo");
  h.peak_bf16_tflops = gpu.get<double>("peak_bf16_tflops");
  h.peak_fp32_tflops = gpu.get<double>("peak_fp32_tflops");
  h.gemm_sizes = gpu.get<std::vector<int64_t>>("gemm_sizes");
  h.gemm_efficiency = gpu.get<std::vector<double>>("gemm_efficiency");
  check_gemm_points(h, gpu);
  h.memory_gib = gpu.get<double>("memory_gib");
  h.reserved_gib = gpu.get<double>("reserved_gib");
  PLAIT_CHECK(h.reserved_gib < h.memory_gib,
              concat(gpu.where("reserved_gib"), ": [gpu] reserved_gib ", h.reserved_gib, " leaves nothing of memory_gib ",
                     h.memory_gib),
              "reserved_gib is the part of the memory a process cannot use for tensors");
  h.memory_gbps = gpu.get<double>("memory_gbps");
  h.memory_efficiency = gpu.get<double>("memory_efficiency");
  h.adam_gbps = gpu.find<double>("adam_gbps");
  h.attention_efficiency = gpu.find<double>("attention_efficiency");
  h.activation_gelems = gpu.find<double>("activation_gelems");
  h.gpus_per_node = node.get<int64_t>("gpus");
  h.host_memory_gib = node.get<double>("host_memory_gib");
  h.host_link_gbps = node.get<double>("host_link_gbps");
  h.host_adam_gbps = node.get<double>("host_adam_gbps");
  h.comm_overlap = node.get<double>("comm_overlap");
  h.sync_skew_us_per_sqrt_ms = node.get<double>("sync_skew_us_per_sqrt_ms");
  h.intra_node = links_from(t.at("intra_node"));
  h.inter_node = links_from(t.at("inter_node"));
  h.currency = price.get<std::string>("currency");
  h.on_demand_per_gpu_hour = price.find<double>("on_demand_per_gpu_hour");
  h.reserved_per_gpu_hour = price.find<double>("reserved_per_gpu_hour");
  h.interruptions_per_gpu_hour = reliability.get<double>("interruptions_per_gpu_hour");
  h.restart_minutes = reliability.get<double>("restart_minutes");
  h.checkpoint_gbps = reliability.get<double>("checkpoint_gbps");
  return h;
}

bool names_a_file(const std::string& s) {
  return s.find('/') != std::string::npos || (s.size() > 5 && s.substr(s.size() - 5) == ".toml");
}

}  // namespace

const CollectiveCost& LinkModel::of(Collective c) const {
  switch (c) {
    case Collective::all_reduce: return all_reduce;
    case Collective::all_gather: return all_gather;
    case Collective::reduce_scatter: return reduce_scatter;
    case Collective::send: return send;
  }
  return send;
}

double Hardware::sync_skew_seconds(double compute_s) const {
  return compute_s > 0 ? sync_skew_us_per_sqrt_ms * 1e-6 * std::sqrt(compute_s * 1e3) : 0.0;
}

double Hardware::gemm_efficiency_at(double size) const {
  if (size <= static_cast<double>(gemm_sizes.front())) return gemm_efficiency.front();
  for (std::size_t i = 1; i < gemm_sizes.size(); ++i) {
    const double lo = static_cast<double>(gemm_sizes[i - 1]), hi = static_cast<double>(gemm_sizes[i]);
    if (size <= hi) {
      const double f = std::log(size / lo) / std::log(hi / lo);
      return gemm_efficiency[i - 1] + f * (gemm_efficiency[i] - gemm_efficiency[i - 1]);
    }
  }
  return gemm_efficiency.back();
}

double Hardware::usable_memory_bytes() const { return (memory_gib - reserved_gib) * 1024.0 * 1024.0 * 1024.0; }

double Hardware::peak_tflops(const std::string& dtype) const {
  return dtype == "bfloat16" ? peak_bf16_tflops : peak_fp32_tflops;
}

std::string user_hardware_dir() {
  if (const char* config = std::getenv("XDG_CONFIG_HOME"); config != nullptr && *config != '\0') {
    return (fs::path(config) / "plait" / "hardware").string();
  }
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
    return (fs::path(home) / ".config" / "plait" / "hardware").string();
  }
  return "";
}

std::string shipped_hardware_dir() { return (install_prefix() / "share" / "plait" / "hardware").string(); }

std::vector<std::string> shipped_hardware() {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(shipped_hardware_dir(), ec)) {
    if (entry.path().extension() == ".toml") names.push_back(entry.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

static std::string names_of(const std::vector<std::string>& names) {
  std::string list;
  for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
  return list;
}

Hardware load_hardware(const std::string& name_or_path) {
  if (names_a_file(name_or_path)) {
    PLAIT_CHECK(fs::is_regular_file(name_or_path), concat("hardware file ", name_or_path, " does not exist"),
                concat("name a hardware file that exists, or a machine by name (", names_of(shipped_hardware()), ")"));
    return hardware_from(load_config(name_or_path, {}));
  }
  // This user's machines (`plait plan --calibrate` writes cpu-local there) come before the shipped ones.
  const fs::path mine = fs::path(user_hardware_dir()) / (name_or_path + ".toml");
  std::error_code ec;
  if (!user_hardware_dir().empty() && fs::is_regular_file(mine, ec)) return hardware_from(load_config(mine.string(), {}));
  const std::vector<std::string> names = shipped_hardware();
  if (std::find(names.begin(), names.end(), name_or_path) == names.end()) {
    const std::string list = names_of(names);
    // "h100" for "h100-sxm": a family named without its variant is no typo, but is meant.
    std::vector<std::string> variants;
    for (const auto& n : names) {
      if (n.rfind(name_or_path + "-", 0) == 0) variants.push_back(n);
    }
    const std::string suggestion =
        variants.size() == 1 ? concat(" (did you mean '", variants[0], "'?)") : did_you_mean(name_or_path, names);
    throw Error(concat("no hardware named '", name_or_path, "'", suggestion),
                concat("the shipped machines are ", list.empty() ? "none (is " + shipped_hardware_dir() + " there?)" : list,
                       name_or_path == "cpu-local" ? "; cpu-local is this machine once `plait plan --calibrate` measured it" : "",
                       "; or name a hardware file (a path ending in .toml)"));
  }
  return hardware_from(load_config((fs::path(shipped_hardware_dir()) / (name_or_path + ".toml")).string(), {}));
}

}  // namespace plait
