#pragma once
// The plait plugin API version. A plugin built against one version is refused by a
// runtime of another (the loader says both numbers). Bump it whenever a struct layout,
// a virtual function table or the meaning of a call in these headers changes.
#define PLAIT_API_VERSION 11

#if defined(__GNUC__)
// SDK types cross the plugin boundary (exceptions, interfaces); their type info must
// stay visible even in plugins built with -fvisibility=hidden.
#define PLAIT_SDK_VISIBLE __attribute__((visibility("default")))
#else
#define PLAIT_SDK_VISIBLE
#endif
