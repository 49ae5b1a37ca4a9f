#pragma once
// What a run starts from, checked before any rank starts. A resume, each refusal one sentence:
// the checkpoint's index (complete, of a known format version), every file it lists
// present with its size, the model's tensors and shapes, the data order and seed, the
// global batch (unless [checkpoint] allow_batch_change), steps left to train, and every
// file's checksums (the ranks check again as they read, checkpoint_reader.hpp).
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "checkpoint/checkpoint_index.hpp"
#include "run/prepare.hpp"

namespace plait {

struct ResumePoint {
  std::filesystem::path folder;
  int64_t step = 0;
  std::vector<std::string> refused;  // newer checkpoints passed over, "step-8: <why>", newest first
};
// The checkpoint the run resumes from (checkpoint_location.hpp), checked; nothing: a fresh
// start. A newer checkpoint that fails its index, files or checksums is passed over for the
// one before (as a restart's is), unless the user named it itself (a step-<N> folder).
std::optional<ResumePoint> check_resume(const PreparedRun& prep, const std::string& run_folder);

inline constexpr const char* kDamagedHint =
    "it was saved from another model: resume with the [model] settings of the run that saved it";

// Every parameter of `model` in the checkpoint, of its shape, and no other: what resume,
// init_from and export ask of a checkpoint they take weights from. With `adapter`, the
// trainable parameters (an adapter's) may be missing: init_from a base model's.
void check_checkpoint_holds_model(const std::filesystem::path& folder, const checkpoint::CheckpointIndex& index,
                                  const StageModel& model, const std::string& hint = kDamagedHint,
                                  bool adapter = false);

// [model] init_from, checked the same way: every parameter of the model there, of its shape.
void check_init_from(const PreparedRun& prep);

}  // namespace plait
