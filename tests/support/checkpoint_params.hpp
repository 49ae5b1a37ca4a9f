#pragma once
// A checkpoint's parameters as the tests read them: whole, flat, by reference name.
#include <string>

#include <ATen/ATen.h>

#include "checkpoint/checkpoint_reader.hpp"

namespace plait::test {

inline at::Tensor stored_param(checkpoint::CheckpointReader& reader, const std::string& name) {
  const std::string key = "param/" + name;
  return reader.read(key, checkpoint::Region::whole(reader.index().tensors.at(key))).reshape({-1});
}

}  // namespace plait::test
