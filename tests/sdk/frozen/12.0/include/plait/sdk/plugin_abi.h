#pragma once
/* The C side of the plugin boundary: plain data only, so the loader can read it
 * without any C++ (or LibTorch) types being involved. See plugin.hpp.
 *
 * Versioning follows Vulkan's negotiation: the first three fields are the same in every
 * API version, majors included, and the loader reads nothing else until it has checked
 * them. A minor version may append fields; the loader reads a field only when the
 * plugin's info_size covers it, so an older plugin's shorter struct stays valid. */
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct PlaitPluginInfo {
  /* Fixed for all time. (Before API 12 the first field was a single version number,
   * 11 and below, so such plugins read as an older major.) */
  uint32_t api_major;  /* PLAIT_API_MAJOR the plugin was compiled against */
  uint32_t api_minor;  /* PLAIT_API_MINOR likewise */
  uint32_t info_size;  /* sizeof(PlaitPluginInfo) on the plugin's side */

  /* API 12.0 */
  const char* name;           /* unique among loaded plugins; what configs name */
  const char* version;        /* the plugin's own version */
  const char* kind;           /* "data" | "comm" | "pipeline" | "tensor" | "offload" */
  const char* torch_version;  /* TORCH_VERSION at compile time */
  int32_t cxx11_abi;          /* _GLIBCXX_USE_CXX11_ABI at compile time */
  const char* capabilities;   /* comma-separated capability words (see capabilities.hpp) */
  const char* schema_toml;    /* the schema of the plugin's config table */
  const char* summary;        /* one line for `plait plugins` */
  /* "Can this plugin run here?" Returns 1 when it can; otherwise 0 with the reason
   * written to `why` (no GPU, no NCCL, ...). Never null (PLAIT_PLUGIN fills it). */
  int (*probe)(char* why, uint32_t why_size);
  void* (*create)(void);        /* a new instance, as a pointer to its kind interface */
  void (*destroy)(void* self);  /* deletes what create returned, inside the library */
  /* Fields a later minor version adds go here, after a comment naming that version. */
};

typedef struct PlaitPluginInfo PlaitPluginInfo;
typedef const PlaitPluginInfo* (*PlaitPluginInfoFn)(void);

#ifdef __cplusplus
}
#endif

#define PLAIT_PLUGIN_ENTRY_SYMBOL "plait_plugin_info"
