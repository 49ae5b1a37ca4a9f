#include "loader/capability_versions.hpp"

#include "plait/sdk/capabilities.hpp"
#include "plait/sdk/error.hpp"

namespace plait {
namespace {

struct Since {
  const char* kind;
  const char* word;
  uint32_t minor;  // of API 12, the first major with minors
};

// The words whose meaning came after 12.0, for the kind that reads them.
constexpr Since kSince[] = {
    {"data", capability::approximate, 2},
    {"data", capability::frozen, 6},
    {"tensor", capability::adapters, 8},
    {"adapter", capability::tensor, 8},
};

constexpr uint32_t kMajor = 12;

}  // namespace

CapabilityClaims trusted_capabilities(const std::string& kind, uint32_t api_major, uint32_t api_minor,
                                      const std::vector<std::string>& words) {
  CapabilityClaims claims;
  for (const std::string& word : words) {
    const Since* since = nullptr;
    for (const Since& s : kSince) {
      if (kind == s.kind && word == s.word) since = &s;
    }
    const bool predates = since != nullptr && (api_major < kMajor || (api_major == kMajor && api_minor < since->minor));
    if (predates) {
      claims.predated.push_back(concat(word, " (API ", kMajor, ".", since->minor, ")"));
    } else {
      claims.trusted.push_back(word);
    }
  }
  return claims;
}

}  // namespace plait
