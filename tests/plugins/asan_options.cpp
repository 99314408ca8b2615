// Each plugin links the static library, as the README tells plugin authors to: identical
// definitions of the library's classes and constants (vtables, the session from the
// environment that every program linking ringtrace gets) are in the program and in each
// plugin, and calls bind to the program's (one runtime per process). AddressSanitizer
// reports any global defined twice (detect_odr_violation=2); here only definitions that
// differ in size, which would be a real One-Definition-Rule violation, are reported.
extern "C" const char* __asan_default_options() { return "detect_odr_violation=1"; }
