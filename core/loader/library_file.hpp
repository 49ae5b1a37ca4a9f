#pragma once
// Why a file offered as a plugin cannot be one, in plait's words rather than the dynamic
// loader's (or Boost.DLL's wrapping of it): not a shared object at all, one built for
// another machine, an executable, a library whose own dependencies or symbols are not
// here. Each reason continues "plugin library <file> ..." and says what to do.
#include <filesystem>
#include <string>

namespace plait {

// From the file's ELF header, before loading it: "" when it is a shared object of this
// machine's architecture (loading may still fail: see load_failure).
std::string not_a_library(const std::filesystem::path& file);

// What a failed load means, from the loader's message (`what`: Boost.DLL's exception
// text, which carries dlerror's).
std::string load_failure(const std::filesystem::path& file, const std::string& what);

}  // namespace plait
