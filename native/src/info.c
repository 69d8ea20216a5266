/* Build information reported by `feltlab info`. */
#include "feltlab_core.h"

#ifndef FL_BUILD_FLAGS
#define FL_BUILD_FLAGS "unknown"
#endif

const char *fl_core_version(void) { return FL_CORE_VERSION; }

const char *fl_core_compiler(void) {
#if defined(__clang__)
    return "clang " __clang_version__;
#elif defined(__GNUC__)
    return "gcc " __VERSION__;
#else
    return "unknown";
#endif
}

const char *fl_core_flags(void) { return FL_BUILD_FLAGS; }
