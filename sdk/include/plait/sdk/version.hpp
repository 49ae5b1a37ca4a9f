#pragma once
// The plait plugin API version: MAJOR.MINOR.
//
// A plugin built against API M.n loads into any plait of major M and minor >= n. A minor
// version only adds: a new interface (reached through Plugin::extension and its kin), a
// new type, a field at the end of a struct marked PLAIT_ABI_GROWS, a capability word.
// Anything else (a changed or removed function, a reordered or resized struct, a new
// virtual function in an existing interface) is a new major version, and plugins of
// another major are refused with a sentence naming both versions. The rules, and the
// check that enforces them at build time against the frozen layouts in sdk/abi/, are in
// sdk/README.md ("Compatibility").
#define PLAIT_API_MAJOR 12
#define PLAIT_API_MINOR 10

#define PLAIT_STRINGIFY_(x) #x
#define PLAIT_STRINGIFY(x) PLAIT_STRINGIFY_(x)
// "12.0"
#define PLAIT_API_VERSION_STRING PLAIT_STRINGIFY(PLAIT_API_MAJOR) "." PLAIT_STRINGIFY(PLAIT_API_MINOR)

#if defined(__GNUC__)
// SDK types cross the plugin boundary (exceptions, interfaces); their type info must
// stay visible even in plugins built with -fvisibility=hidden.
#define PLAIT_SDK_VISIBLE __attribute__((visibility("default")))
#else
#define PLAIT_SDK_VISIBLE
#endif

// Marks a struct that only the core creates and plugins only receive by reference or
// pointer (setup and context structs): a minor version may append fields to it. Every
// other SDK type keeps its layout for the whole major version. The annotation is read
// by the layout check (tools/sdk_abi.py), which compiles the SDK with clang.
#if defined(__clang__)
#define PLAIT_ABI_GROWS [[clang::annotate("plait-abi-grows")]]
#else
#define PLAIT_ABI_GROWS
#endif
