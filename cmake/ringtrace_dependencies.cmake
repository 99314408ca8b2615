# Dependencies, all from Debian packages (scripts/install_deps.sh installs them).
find_package(Threads REQUIRED)
find_package(ZLIB REQUIRED)  # zlib1g-dev: gzip output of the file exporters

# libmimalloc-dev: only its header is used at build time. The library is loaded at run
# time with dlopen(RTLD_LOCAL) so that it never replaces the host program's malloc
# (Debian's libmimalloc.so exports malloc/free); see runtime/allocator.cpp.
find_package(mimalloc CONFIG REQUIRED)
get_target_property(RINGTRACE_MIMALLOC_INCLUDE_DIR mimalloc INTERFACE_INCLUDE_DIRECTORIES)
