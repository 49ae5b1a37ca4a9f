#include "model/dropout.hpp"

#include <ATen/ATen.h>

#include "plait/sdk/error.hpp"
#include "plait/sdk/layers.hpp"

namespace plait {
namespace {

thread_local std::optional<DropoutStream> current_stream;

// A 32-bit integer hash (Mueller's), on values below 2^32 held in int64: every product
// stays below 2^59, so nothing overflows on any device.
constexpr int64_t kLow32 = 0xFFFFFFFFLL;
constexpr int64_t kMultiplier = 0x45d9f3b;

uint32_t mix(uint32_t h) {
  h ^= h >> 16;
  h *= static_cast<uint32_t>(kMultiplier);
  h ^= h >> 16;
  h *= static_cast<uint32_t>(kMultiplier);
  return h ^ (h >> 16);
}

at::Tensor mix(at::Tensor h) {
  h.bitwise_xor_(h.bitwise_right_shift(16));
  h.mul_(kMultiplier).bitwise_and_(kLow32);
  h.bitwise_xor_(h.bitwise_right_shift(16));
  h.mul_(kMultiplier).bitwise_and_(kLow32);
  return h.bitwise_xor_(h.bitwise_right_shift(16));
}

// Where rows and features meet, the tensor is the activation's size: it is mixed in
// int32 (a quarter of the bytes of int64 temporaries) by four Feistel rounds on two
// 15-bit halves, whose products (< 2^15 * 2^16) never overflow a signed int32. The xor of
// a row's and a feature's hash alone would give masks with a rectangle structure (two
// rows differing by the same bits in every feature); the rounds break it.
constexpr int64_t kFull30 = (int64_t{1} << 30) - 1;
constexpr int64_t kHalf15 = (int64_t{1} << 15) - 1;
constexpr int64_t kRoundKeys[] = {0xB5AD, 0xE3D1, 0x9E37, 0xC2B3};

at::Tensor full_size_mix(const at::Tensor& rows, const at::Tensor& features) {
  at::Tensor x = rows.bitwise_and(kFull30).to(at::kInt).bitwise_xor(features.bitwise_and(kFull30).to(at::kInt));
  at::Tensor low = at::empty_like(x), round = at::empty_like(x);
  for (int64_t k : kRoundKeys) {
    at::bitwise_and_out(low, x, kHalf15);
    round.copy_(low).mul_(k);  // mul_out with a scalar allocates a temporary of the full size
    round.bitwise_right_shift_(11).bitwise_and_(kHalf15);
    x.bitwise_right_shift_(15).bitwise_xor_(round).bitwise_or_(low.bitwise_left_shift_(15));
  }
  return x;
}

// FNV-1a, folded to 32 bits: the same on every rank and build (std::hash is not promised to be).
uint32_t site_hash(const std::string& site) {
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : site) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return static_cast<uint32_t>(h ^ (h >> 32));
}

}  // namespace

DropoutScope::DropoutScope(std::optional<DropoutStream> stream) : previous_(current_stream) {
  current_stream = stream;
}
DropoutScope::~DropoutScope() { current_stream = previous_; }

std::optional<DropoutStream> current_dropout_stream() { return current_stream; }

SequencePart sequence_part_of(const LayerFactory& factory) {
  return {factory.sequence_shard(), factory.sequence_shards()};
}

at::Tensor dropout_keep_mask(const at::Tensor& x, const std::string& site, double p, const DropoutStream& stream,
                             SequencePart part, int64_t first_feature) {
  PLAIT_CHECK(x.dim() == 3, concat("dropout at '", site, "' takes [batch, positions, features], got ", x.dim(), " dimensions"),
              "");
  const int64_t B = x.size(0), P = x.size(1), C = x.size(2);
  const auto ids = at::TensorOptions().dtype(at::kLong).device(x.device());
  const uint32_t key = mix(mix(static_cast<uint32_t>(stream.seed ^ (stream.seed >> 32))) ^ site_hash(site));
  // Coordinates enter one at a time, each through the mixer, so that neighbouring
  // samples, positions and features give unrelated bits. Rows (sample, position) and
  // features are hashed apart, in int64 but small; only their meeting is full size.
  at::Tensor samples = at::arange(stream.first_sample, stream.first_sample + B, ids);
  at::Tensor h = mix(samples.bitwise_and(kLow32).bitwise_xor_(static_cast<int64_t>(key)));
  h = mix(h.bitwise_xor_(samples.bitwise_right_shift(32))).view({B, 1, 1});
  h = mix(h.bitwise_xor(at::arange(part.index * P, (part.index + 1) * P, ids).view({1, P, 1})));
  const at::Tensor features =
      mix(at::arange(first_feature, first_feature + C, ids).bitwise_xor_(static_cast<int64_t>(mix(key))));
  at::Tensor bits = full_size_mix(h, features.view({1, 1, C}));
  // Dropped when the hash falls below p of its 2^30 values.
  return bits.ge(static_cast<int64_t>(p * static_cast<double>(kFull30 + 1)));
}

SiteDropout::SiteDropout(std::string site, double p, SequencePart part, int64_t first_feature)
    : site_(std::move(site)), p_(p), part_(part), first_feature_(first_feature) {
  PLAIT_CHECK(p_ >= 0.0 && p_ < 1.0, concat("dropout at '", site_, "' has probability ", p_),
              "set [model] dropout in [0, 1)");
}

at::Tensor SiteDropout::operator()(const at::Tensor& x) const {
  if (p_ == 0.0) return x;
  const auto stream = current_dropout_stream();
  PLAIT_CHECK(stream.has_value(),
              concat("dropout at '", site_, "' ran outside a training step's forward (no sample stream is set)"),
              "the masks are keyed on the samples' global ids, which the pipeline executor sets around each forward");
  at::Tensor keep = dropout_keep_mask(x, site_, p_, *stream, part_, first_feature_);
  // masked_fill keeps the bool mask for backward, not a scaled copy in x's type.
  return x.masked_fill(keep.logical_not(), 0.0) * (1.0 / (1.0 - p_));
}

}  // namespace plait
