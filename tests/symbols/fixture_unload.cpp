// A library that can really be unloaded (nothing in it makes the loader keep it), for
// module_generation() across dlopen and dlclose.
extern "C" __attribute__((visibility("default"))) int fixture_unload_function(int value) { return value * 5; }
