#pragma once
/* The C side of the plugin boundary: plain data only, so the loader can read it
 * without any C++ (or LibTorch) types being involved. See plugin.hpp. */
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct PlaitPluginInfo {
  uint32_t api_version;       // PLAIT_API_VERSION the plugin was compiled against
  uint32_t info_size;         // sizeof(PlaitPluginInfo) on the plugin's side
  const char* name;           // unique among loaded plugins; what configs name
  const char* version;        // the plugin's own version
  const char* kind;           // "data" | "comm" | "pipeline" | "tensor" | "offload"
  const char* torch_version;  // TORCH_VERSION at compile time
  int32_t cxx11_abi;          // _GLIBCXX_USE_CXX11_ABI at compile time
  const char* capabilities;   // comma-separated capability words (see capabilities.hpp)
  const char* schema_toml;    // the schema of the plugin's config table
  const char* summary;        // one line for `plait plugins`
  // "Can this plugin run here?" Returns 1 when it can; otherwise 0 with the reason
  // written to `why` (no GPU, no NCCL, ...). May be null: always available.
  int (*probe)(char* why, uint32_t why_size);
  void* (*create)(void);       // a new instance, as a pointer to its kind interface
  void (*destroy)(void* self);  // deletes what create returned, inside the library
};

typedef struct PlaitPluginInfo PlaitPluginInfo;
typedef const PlaitPluginInfo* (*PlaitPluginInfoFn)(void);

#ifdef __cplusplus
}
#endif

#define PLAIT_PLUGIN_ENTRY_SYMBOL "plait_plugin_info"
