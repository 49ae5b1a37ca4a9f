// What of LibTorch's and gloo's errors reaches a user: the first line of their words,
// without the backtrace and source paths they carry.
#include <catch2/catch.hpp>

#include <stdexcept>

#include <c10/util/Exception.h>

#include "debug/exception_text.hpp"

using namespace plait;

TEST_CASE("a LibTorch error's words come without its backtrace, gloo's without its source line", "[debug]") {
  try {
    TORCH_CHECK(false, "Operation timed out!");
  } catch (const c10::Error& e) {
    REQUIRE(std::string(e.what()).find("Exception raised from") != std::string::npos);  // what it carries
    CHECK(exception_first_line(e) == "Operation timed out!");
  }
  const std::runtime_error gloo(
      "[/pytorch/third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:78] Timed out waiting 5000ms for recv operation "
      "to complete\nmore");
  CHECK(exception_first_line(gloo) == "Timed out waiting 5000ms for recv operation to complete");
  const std::runtime_error plain("rank 2 [the one at fault] said: see [x]");
  CHECK(exception_first_line(plain) == "rank 2 [the one at fault] said: see [x]");
}
