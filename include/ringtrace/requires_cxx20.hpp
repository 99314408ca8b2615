// The language check of every public header: ringtrace's headers are C++20 (constinit,
// concepts, <span>, <bit>), and a C++17 translation unit would otherwise meet thirty
// errors deep inside the hot path before the reason. Included first by site.hpp,
// event.hpp and config.hpp, which every public header includes before any C++20 code.
#pragma once

#if __cplusplus < 202002L
#error "ringtrace needs C++20 (-std=c++20)"
// A missing include is a fatal error in GCC and Clang: the compiler stops here instead
// of going on to report what C++17 cannot parse in the headers that follow.
#include "ringtrace needs C++20 (-std=c++20)"
#endif
