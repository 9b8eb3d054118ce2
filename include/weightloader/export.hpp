// What the library exports. The library builds with hidden visibility (-fvisibility=hidden):
// only declarations marked WL_API are part of its interface, so a shared build (the Python
// module) exposes the API and nothing of the implementation.
#pragma once

#if defined(__GNUC__) || defined(__clang__)
#define WL_API __attribute__((visibility("default")))
#else
#define WL_API
#endif
