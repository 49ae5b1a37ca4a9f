#include "data/make_sampler.hpp"

#include "plait/sdk/error.hpp"

namespace plait {

int64_t resolve_seq_len(const Options& data, const ModelSpec& model) {
  const int64_t T = data.find<int64_t>("seq_len").value_or(model.block_size);
  PLAIT_CHECK(T <= model.block_size,
              concat(data.where("seq_len"), ": [data] seq_len ", T, " is longer than the model's block_size ",
                     model.block_size),
              "lower data.seq_len or raise model.block_size");
  return T;
}

std::unique_ptr<BatchSampler> make_sampler(const Options& data, const ModelSpec& model, uint64_t seed,
                                           int64_t dp_size, int64_t dp_rank) {
  SamplerSpec spec;
  spec.order = data.get<std::string>("order");
  spec.rows = data.get<int64_t>("micro_batch_size");
  spec.seq_len = resolve_seq_len(data, model);
  spec.dp_size = dp_size;
  spec.dp_rank = dp_rank;
  spec.seed = seed;
  spec.vocab_size = model.vocab_size;
  spec.mask_prompts = data.find<bool>("mask_prompts").value_or(false);  // a table not resolved against the schema may leave it out
  spec.packing = data.find<bool>("packing").value_or(false);
  const std::string source = data.get<std::string>("source");
  PLAIT_CHECK(source == "tokens" || !spec.packing,
              concat(data.where("packing"), ": [data] packing puts a token file's documents into rows; source = \"",
                     source, "\" has no documents"),
              "set source = \"tokens\" with a file from tools/prepare_data.py, or leave packing unset");
  PLAIT_CHECK(source == "synthetic" || !spec.mask_prompts,
              concat(data.where("mask_prompts"), ": [data] mask_prompts masks synthetic samples; source = \"", source,
                     "\" has no prompts to mask"),
              "set source = \"synthetic\", or leave mask_prompts unset: a token file from tools/prepare_data.py "
              "carries its own loss mask");
  if (source == "synthetic") {
    return std::make_unique<BatchSampler>(spec, nullptr, std::make_shared<SyntheticLanguage>(model.vocab_size, seed));
  }
  auto path = data.find<std::string>("path");
  PLAIT_CHECK(path.has_value(), concat(data.where("source"), ": [data] source = \"", source, "\" needs data.path"),
              "set path = \"file\" under [data], relative to the config file");
  if (source == "text") {
    PLAIT_CHECK(model.vocab_size >= 256,
                concat(data.where("source"), ": [data] text data has 256 byte tokens but the model's vocab_size is ",
                       model.vocab_size),
                "set model.vocab_size = 256 or more");
  }
  // The file's own problems (missing, a folder, empty, a bad header, too short) are the path's.
  return at_place(data.where("path"), [&] {
    auto file = source == "text" ? TokenFile::open_text(*path) : TokenFile::open_tokens(*path);
    return std::make_unique<BatchSampler>(spec, std::move(file), nullptr);
  });
}

}  // namespace plait
