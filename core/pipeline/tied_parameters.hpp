#pragma once
// A parameter read by units on two pipeline ranks: gpt2's wte, which the embedding uses
// on the first stage and the tied head on the last. The owner's copy (the embedding's)
// is the one its data plugin trains; the borrower's is a mirror. Per optimizer step the
// mirror's gradient, summed over the borrower's microbatches, goes to the owner, which
// adds it in its last backward of the owning stage (so data-parallel hooks see the whole
// gradient); after the optimizer step the owner sends the updated value back. The
// gradient is the single-process one up to summation order, and the global norm counts
// the parameter once. The two ranks of a tie talk over a group of their own (as
// Megatron's embedding group), so that its messages never interleave with the
// schedule's: under NCCL, messages between two ranks match in posting order, and the
// borrower's gradient is ready at a point of its list that the owner's is not.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "pipeline/stage_partition.hpp"
#include "plait/sdk/communicator.hpp"
#include "plait/sdk/pipeline.hpp"
#include "plait/sdk/data_parallel.hpp"

namespace plait {

class TiedParameters {
 public:
  // Finds the ties between this rank's stages and other ranks' in the whole model.
  // `pp_groups`: makes the ties' pair groups (null when pp = 1). Collective over the
  // pipeline group: every pipeline rank builds the same ties from the whole model.
  TiedParameters(const StageModel& whole, const StagePartition& partition, int64_t pp, int64_t pp_rank,
                 GroupMaker* pp_groups);

  // Drops from this rank's units the borrowed names this class now carries.
  void unlink_borrowed(StageModel& rank_model) const;
  // After the data plugin's setup: gradient hooks on the owned copies it now trains.
  void attach(const StageModel& rank_model);

  // The owner, before its last backward of the stage that owns the parameter.
  void before_backward(int64_t stage, bool last_of_stage);
  // The borrower, after its last backward of the stage that borrows it.
  void after_backward(int64_t stage, bool last_of_stage);
  void after_step(DataParallel& dp);
  bool empty() const { return ties_.empty(); }

 private:
  struct Tie {
    std::string name;
    int64_t owner_stage = 0, borrower_stage = 0;
    bool owner_here = false;  // else this rank borrows
    at::Tensor tensor;         // the owner's trained parameter, or the borrower's mirror
    at::Tensor pending;        // owner: the borrower's gradient, added by the hook
    int id = 0;
    Communicator* group = nullptr;  // the owner's and the borrower's own
    int peer = 0;                   // the other end's rank in it
  };
  std::vector<std::shared_ptr<Tie>> ties_;
  // Frozen parameters this rank borrows from another's unit: its own copy (made alike from
  // the seed or init_from) never changes, so no tie keeps it, and no plugin gathers it.
  std::vector<std::string> frozen_borrowed_;
  std::vector<std::pair<std::shared_ptr<Work>, at::Tensor>> sends_;
};

}  // namespace plait
