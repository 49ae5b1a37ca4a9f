#include "verify/honesty.hpp"

#include <cmath>
#include <map>
#include <set>

#include "plait/sdk/error.hpp"
#include "util/human_bytes.hpp"

namespace plait::verify {
namespace {

int64_t bytes(const nlohmann::json& figures, const char* key) {
  return static_cast<int64_t>(std::llround(figures.value(key, 0.0)));
}

// Each rank's figures in a record: its list of ranks, or rank 0's own in one process.
std::vector<nlohmann::json> ranks_of(const nlohmann::json& record) {
  if (record.contains("ranks")) return record.at("ranks").get<std::vector<nlohmann::json>>();
  nlohmann::json only = record;
  only["rank"] = 0;
  return {only};
}

// "" when `held` lies within [reported_low, reported_high] widened by the slack.
std::string outside(const char* where, int64_t held, int64_t low, int64_t high, const std::string& reported) {
  const auto slack = static_cast<int64_t>(kStateSlackBytes + kStateSlackFraction * static_cast<double>(high));
  if (held + slack >= low && held <= high + slack) return "";
  return concat("its allocator holds ", human_bytes(held), " ", where, " between steps, but it reports ", reported,
                held > high ? " (more is held than reported)" : " (less is held than reported)");
}

}  // namespace

std::string stray_host_reads(const Records& records) {
  if (records.empty()) return "the run recorded no steps";
  for (const auto& r : records) {
    const int64_t step = r.at("step").get<int64_t>();
    if (!r.contains("host_syncs_by_step")) return "the run did not count its waits for the device (debug.count_host_syncs)";
    const auto syncs = r.at("host_syncs_by_step").get<std::vector<int64_t>>();
    const auto reads = r.at("host_reads_by_step").get<std::vector<int64_t>>();
    const int64_t first = step - static_cast<int64_t>(syncs.size()) + 1;
    for (std::size_t k = 0; k < syncs.size(); ++k) {
      if (syncs[k] > 0) {
        return concat("rank 0 waited for the device ", syncs[k], " times in step ", first + static_cast<int64_t>(k),
                      " outside the core's one read (an .item(), equal, nonzero or device-to-host copy): leave a "
                      "figure on the device (PluginContext::device_metrics) and the core reads it with the step's");
      }
    }
    if (r.contains("ranks_summary") && r.at("ranks_summary").contains("host_syncs")) {
      const auto& s = r.at("ranks_summary").at("host_syncs");
      if (s.at("max").get<double>() > 0) {
        return concat("rank ", s.at("max_rank").get<int64_t>(), " waited for the device ", s.at("max").get<double>(),
                      " times in steps ", first, "-", step, " outside the core's one read per step");
      }
    }
    for (std::size_t k = 0; k + 1 < reads.size(); ++k) {
      if (reads[k] > 1) {
        return concat("step ", first + static_cast<int64_t>(k), " read to the host ", reads[k],
                      " times through the core's reader; the rule is one read per step");
      }
    }
  }
  return "";
}

std::string unreported_state(const Records& records) {
  if (records.empty()) return "the run recorded no steps";
  // gloo's worker threads free a collective's temporaries just after its wait returns, so
  // one sample may hold one for a moment: a rank fails only when no step holds.
  std::map<int64_t, std::string> first_failure;
  std::set<int64_t> held;
  for (const auto& record : records) {
    for (const auto& r : ranks_of(record)) {
      const int64_t p = bytes(r, "param_bytes"), g = bytes(r, "grad_bytes"), o = bytes(r, "optimizer_bytes");
      const int64_t hp = bytes(r, "host_param_bytes"), hg = bytes(r, "host_grad_bytes"), ho = bytes(r, "host_optimizer_bytes");
      // Frozen parameters (train.freeze, an adapter's base) are the core's, on the device beside the plugin's state.
      const int64_t f = bytes(r, "frozen_param_bytes");
      const auto said = [](int64_t params, int64_t grads, int64_t optimizer, int64_t frozen) {
        return concat("parameters ", human_bytes(params), ", gradients ", human_bytes(grads), ", optimizer ",
                      human_bytes(optimizer), frozen > 0 ? concat(", frozen parameters (the core's) ", human_bytes(frozen)) : "");
      };
      std::string why = outside("on its device", bytes(r, "mem_bytes"), p + o + f, p + g + o + f, said(p, g, o, f));
      if (why.empty()) why = outside("in host memory", bytes(r, "host_mem_bytes"), hp + ho, hp + hg + ho, said(hp, hg, ho, 0));
      const int64_t rank = r.value("rank", 0);
      if (why.empty()) {
        held.insert(rank);
      } else if (!first_failure.count(rank)) {
        first_failure[rank] = concat("step ", record.at("step").get<int64_t>(), ", rank ", rank, ": ", why);
      }
    }
  }
  for (const auto& [rank, why] : first_failure) {
    if (!held.count(rank)) return concat(why, "; so in every step recorded");
  }
  return "";
}

std::string state_figures(const Records& records) {
  if (records.empty()) return "";
  const nlohmann::json r = ranks_of(records.back()).front();
  return concat("rank 0 at step ", records.back().at("step").get<int64_t>(), " holds ", human_bytes(bytes(r, "mem_bytes")),
                " on its device for ", human_bytes(bytes(r, "param_bytes")), " of parameters, ",
                human_bytes(bytes(r, "grad_bytes")), " of gradients and ", human_bytes(bytes(r, "optimizer_bytes")),
                " of optimizer state",
                bytes(r, "frozen_param_bytes") > 0 ? concat(" (and the core's ", human_bytes(bytes(r, "frozen_param_bytes")), " of frozen parameters)") : "",
                ", and ", human_bytes(bytes(r, "host_mem_bytes")), " in host memory for ",
                human_bytes(bytes(r, "host_param_bytes") + bytes(r, "host_grad_bytes") + bytes(r, "host_optimizer_bytes")),
                " reported");
}

std::string uncounted_traffic(const Records& records) {
  if (records.empty()) return "the run recorded no steps";
  for (const auto& record : records) {
    for (const auto& r : ranks_of(record)) {
      if (!r.contains("wire_bytes_outside_ops")) return "the run did not count its bytes on the wire (debug.count_wire_bytes)";
      const int64_t outside = bytes(r, "wire_bytes_outside_ops");
      if (outside > kWireSlackBytes) {
        return concat("step ", record.at("step").get<int64_t>(), ", rank ", r.value("rank", 0), ": ", human_bytes(outside),
                      " of the ", human_bytes(bytes(r, "wire_bytes")),
                      " it sent over TCP went while none of the core's operations was in flight: traffic around "
                      "the communicators the core hands out, which it neither counts nor times nor can name in a hang");
      }
    }
  }
  return "";
}

std::string traffic_figures(const Records& records) {
  if (records.empty()) return "";
  const nlohmann::json r = ranks_of(records.back()).front();
  return concat("rank 0 sent ", human_bytes(bytes(r, "wire_bytes")), " over TCP in step ", records.back().at("step").get<int64_t>(),
                ", all but ", human_bytes(bytes(r, "wire_bytes_outside_ops")), " inside the core's counted operations (",
                human_bytes(bytes(r, "comm_bytes")), " of bus bytes)");
}

}  // namespace plait::verify
