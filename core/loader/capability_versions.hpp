#pragma once
// A capability word means what sdk/include/plait/sdk/capabilities.hpp says from the API
// minor that gave it that meaning for a kind of plugin. A plugin built before that minor
// could not have implemented it, whatever its info struct lists (an in-house word spelled
// the same, or a claim made too early: an adapter built for 12.7 saying `tensor` never saw
// AdapterSite's split). The core trusts only the words a plugin's API knew, as Vulkan
// leaves out the features a driver's version predates.
#include <cstdint>
#include <string>
#include <vector>

namespace plait {

struct CapabilityClaims {
  std::vector<std::string> trusted;
  std::vector<std::string> predated;  // each "word (API 12.k)": listed, but older than its meaning
};

CapabilityClaims trusted_capabilities(const std::string& kind, uint32_t api_major, uint32_t api_minor,
                                      const std::vector<std::string>& words);

}  // namespace plait
