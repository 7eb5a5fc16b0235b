# One library per layer (DESIGN.md, "Layers"), so that the build checks the
# arrows between them.
#
# Note [Layer include trees]
# Every public header lives under include/tilejit/<layer>/ and every private
# one under src/<layer>/, so putting include/ and src/ on a layer's include
# path would let any file include any layer. Instead each layer compiles
# against a tree of its own in the build directory,
#   <build>/layers/<name>/tilejit/<dir>    -> include/tilejit/<dir>
#   <build>/layers/<name>/tilejit/<dir>.h  -> include/tilejit/<dir>.h (if any)
#   <build>/layers/<name>/<dir>            -> src/<dir>
# holding symbolic links for itself and for the layers it may use alone. An
# include of any other layer's header is then "No such file" at compile time.
# The links are to directories, so new files in a layer's folders need no
# CMake edit; the sources are globbed with CONFIGURE_DEPENDS for the same
# reason. tests/layers/ proves that a wrong include fails.
#
# The layers are OBJECT libraries: their object files all go into the one
# shared libtilejit (add_tilejit_library below), none can be dropped by the
# linker (the backends register from static initialisers that nothing
# references), and the functions of all layers share the library's
# -Bsymbolic-functions binding.

set(TILEJIT_LAYER_ROOT "${PROJECT_BINARY_DIR}/layers")

# tilejit_add_layer(<name> [DIR <dir>] [DEPS <layer>...])
#   <dir>: the layer's folder under include/tilejit/ and src/ (default <name>,
#   e.g. DIR backend/cpu for the layer backend_cpu). DEPS: the layers it may
#   use, already added (a layer with no sources yet still has a tree, so its
#   dependents are declared before it has any). Makes target tilejit_<name>
#   when src/<dir>/*.cpp matches anything; the caller adds what is the
#   layer's own (a third-party include directory, a definition) to it.
function(tilejit_add_layer name)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "DIR" "DEPS")
  if(arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "tilejit_add_layer(${name}): unexpected ${arg_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT arg_DIR)
    set(arg_DIR "${name}")
  endif()
  get_property(known GLOBAL PROPERTY TILEJIT_LAYERS)
  foreach(dep IN LISTS arg_DEPS)
    if(NOT dep IN_LIST known)
      message(FATAL_ERROR "tilejit_add_layer(${name}): layer '${dep}' is not added yet")
    endif()
  endforeach()
  set_property(GLOBAL APPEND PROPERTY TILEJIT_LAYERS "${name}")
  set_property(GLOBAL PROPERTY "TILEJIT_LAYER_DIR_${name}" "${arg_DIR}")
  set_property(GLOBAL PROPERTY "TILEJIT_LAYER_DEPS_${name}" "${arg_DEPS}")

  # The tree: rebuilt at every configure, so a dependency removed here
  # disappears from it.
  set(tree "${TILEJIT_LAYER_ROOT}/${name}")
  file(REMOVE_RECURSE "${tree}")
  foreach(layer IN LISTS name arg_DEPS)
    get_property(dir GLOBAL PROPERTY "TILEJIT_LAYER_DIR_${layer}")
    _tilejit_link("${PROJECT_SOURCE_DIR}/include/tilejit/${dir}" "${tree}/tilejit/${dir}")
    if(EXISTS "${PROJECT_SOURCE_DIR}/include/tilejit/${dir}.h")
      _tilejit_link("${PROJECT_SOURCE_DIR}/include/tilejit/${dir}.h" "${tree}/tilejit/${dir}.h")
    endif()
    _tilejit_link("${PROJECT_SOURCE_DIR}/src/${dir}" "${tree}/${dir}")
  endforeach()
  set_property(GLOBAL PROPERTY "TILEJIT_LAYER_TREE_${name}" "${tree}")

  file(GLOB sources CONFIGURE_DEPENDS "${PROJECT_SOURCE_DIR}/src/${arg_DIR}/*.cpp")
  if(NOT sources)
    return()
  endif()
  set(target "tilejit_${name}")
  add_library(${target} OBJECT ${sources})
  target_include_directories(${target} PRIVATE "${tree}")
  set_target_properties(${target} PROPERTIES POSITION_INDEPENDENT_CODE ON)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wno-unused-parameter
    # Calls inside libtilejit bind directly (no PLT, and inlining within a
    # file): the call path crosses a dozen of its own exported functions per
    # call. Nothing may interpose on libtilejit's functions.
    -fno-semantic-interposition)
  target_link_libraries(${target} PRIVATE Threads::Threads)
  # The arrows, as links: an object library passes nothing on to its
  # dependents (each has its own complete tree), so these order the build
  # and record the graph, nothing more.
  foreach(dep IN LISTS arg_DEPS)
    if(TARGET tilejit_${dep})
      target_link_libraries(${target} PRIVATE tilejit_${dep})
    endif()
  endforeach()
  set_property(GLOBAL APPEND PROPERTY TILEJIT_LAYER_TARGETS "${target}")
endfunction()

function(_tilejit_link from to)
  get_filename_component(parent "${to}" DIRECTORY)
  file(MAKE_DIRECTORY "${parent}")
  # A link to a folder that does not exist yet (a layer with no headers so
  # far) dangles harmlessly until the folder appears.
  file(CREATE_LINK "${from}" "${to}" SYMBOLIC)
endfunction()

# add_tilejit_library(<target>): the shared library of every layer added.
function(add_tilejit_library target)
  get_property(layers GLOBAL PROPERTY TILEJIT_LAYER_TARGETS)
  set(objects "")
  foreach(layer IN LISTS layers)
    list(APPEND objects "$<TARGET_OBJECTS:${layer}>")
  endforeach()
  add_library(${target} SHARED ${objects})
endfunction()
