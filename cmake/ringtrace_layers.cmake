# Layers the build enforces (docs/architecture.md, "Layers").
#
# ringtrace_layer(<target> SOURCES <files>... [USES <layer target>...] [LIBS <targets>...])
#   An OBJECT library for one folder. Its sources see the public headers (include/),
#   their own folder, and the folders of the layers it USES, nothing else: an #include
#   across an edge that is not declared here does not compile. Headers are included by
#   their bare name ("drainer.hpp"), so a folder's include path exposes that folder
#   alone. The `ringtrace` library is the union of the layers' objects.
function(ringtrace_layer name)
  cmake_parse_arguments(ARG "" "" "SOURCES;USES;LIBS" ${ARGN})
  add_library(${name} OBJECT ${ARG_SOURCES})
  target_include_directories(${name} PRIVATE ${CMAKE_CURRENT_SOURCE_DIR} ${PROJECT_SOURCE_DIR}/include)
  foreach(used ${ARG_USES})
    if(NOT TARGET ${used})
      message(FATAL_ERROR "layer ${name} uses ${used}, which is not declared before it")
    endif()
    get_target_property(used_dir ${used} RINGTRACE_LAYER_DIR)
    target_include_directories(${name} PRIVATE ${used_dir})
  endforeach()
  target_compile_features(${name} PRIVATE cxx_std_20)
  # The hot path's header names the environment session for programs, not for the layers.
  target_compile_definitions(${name} PRIVATE RINGTRACE_BUILDING_LIBRARY=1)
  target_compile_options(${name} PRIVATE ${RINGTRACE_WARNING_FLAGS} ${RINGTRACE_OWN_FLAGS})
  if(ARG_LIBS)
    target_link_libraries(${name} PRIVATE ${ARG_LIBS})  # their include directories and definitions
  endif()
  if(NOT RINGTRACE_ENABLED)
    target_compile_definitions(${name} PRIVATE RINGTRACE_DISABLED=1)
  endif()
  set_target_properties(${name} PROPERTIES POSITION_INDEPENDENT_CODE ON
                                           RINGTRACE_LAYER_DIR ${CMAKE_CURRENT_SOURCE_DIR}
                                           RINGTRACE_LAYER_USES "${ARG_USES}")
  set_property(GLOBAL APPEND PROPERTY RINGTRACE_LAYERS ${name})
endfunction()

# The include directories of every layer: for white-box tests and benches, which may
# look inside any of them.
function(ringtrace_all_layer_dirs out)
  get_property(layers GLOBAL PROPERTY RINGTRACE_LAYERS)
  set(dirs "")
  foreach(layer ${layers})
    get_target_property(dir ${layer} RINGTRACE_LAYER_DIR)
    list(APPEND dirs ${dir})
  endforeach()
  set(${out} ${dirs} PARENT_SCOPE)
endfunction()
