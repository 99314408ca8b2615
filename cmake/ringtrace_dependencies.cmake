# Dependencies, all from Debian packages (scripts/install_deps.sh installs them).
find_package(Threads REQUIRED)
find_package(ZLIB REQUIRED)  # zlib1g-dev: gzip output of the file exporters

# libmimalloc-dev: only its header is used at build time. The library is loaded at run
# time with dlopen(RTLD_LOCAL) so that it never replaces the host program's malloc
# (Debian's libmimalloc.so exports malloc/free); see runtime/allocator.cpp.
find_package(mimalloc CONFIG REQUIRED)
get_target_property(RINGTRACE_MIMALLOC_INCLUDE_DIR mimalloc INTERFACE_INCLUDE_DIRECTORIES)

# libdw-dev (elfutils' libdw and libelf): the symbolizer (runtime/symbols/) reads modules'
# DWARF and symbol tables with libdwfl. Found with pkg-config (Debian package pkg-config).
# GLOBAL: a static library that links it passes it on to its consumers, which may live in
# a parent project (add_subdirectory) where a directory-scoped target would be unknown.
find_package(PkgConfig REQUIRED)
pkg_check_modules(LIBDW REQUIRED IMPORTED_TARGET GLOBAL libdw)
