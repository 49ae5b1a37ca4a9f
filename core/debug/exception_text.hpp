#pragma once
// The words of an exception for a user: LibTorch's errors carry the C++ backtrace and
// source paths of where they were raised (c10::Error::what()), which are not theirs to read.
#include <exception>
#include <string>

namespace plait {

// The first line of `e`'s message, without LibTorch's backtrace or gloo's source line.
std::string exception_first_line(const std::exception& e);

}  // namespace plait
