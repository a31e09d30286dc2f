# tdsl_add_library: .tdsl sources in, a static CUDA library out.
#
#   tdsl_add_library(kernels SOURCES a.tdsl b.tdsl [ARCH 90] [OPT 2]
#                    [TDSLC_FLAGS ...])
#
# Each a.tdsl becomes kernels_gen/a.cu and kernels_gen/a.h (launchers
# tdsl_<kernel>(...), see tdsl/runtime.h) in the current binary directory;
# the .cu files are compiled into the STATIC library `kernels`, whose users
# get kernels_gen/ as an include directory and the runtime as a dependency.
# A source is regenerated when it changes, when anything tdslc read for it
# changes (its depfile) and when tdslc itself changes.
#
# Included by tdslConfig.cmake (installed use) and by tdslc's own build
# (build-tree use); either defines the executable target tdsl::tdslc and
# the library tdsl::runtime. TDSLC_EXECUTABLE, when set, names another
# tdslc to run instead.
include_guard(GLOBAL)

function(tdsl_add_library name)
  cmake_parse_arguments(PARSE_ARGV 1 ARG "" "ARCH;OPT" "SOURCES;TDSLC_FLAGS")
  if(ARG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "tdsl_add_library(${name}): unknown arguments ${ARG_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT ARG_SOURCES)
    message(FATAL_ERROR "tdsl_add_library(${name}): no SOURCES")
  endif()
  if(NOT DEFINED ARG_ARCH)
    set(ARG_ARCH 90)
  endif()
  if(NOT ARG_ARCH MATCHES "^[0-9]+a?$")
    message(FATAL_ERROR "tdsl_add_library(${name}): ARCH is a number like 90, 90a or 80, "
                        "not '${ARG_ARCH}'")
  endif()
  if(NOT DEFINED ARG_OPT)
    set(ARG_OPT 2)
  endif()
  get_property(languages GLOBAL PROPERTY ENABLED_LANGUAGES)
  if(NOT "CUDA" IN_LIST languages)
    message(FATAL_ERROR "tdsl_add_library(${name}): enable the CUDA language first, "
                        "e.g. project(app LANGUAGES CXX CUDA)")
  endif()

  if(TDSLC_EXECUTABLE)
    set(tdslc ${TDSLC_EXECUTABLE})
    set(tdslc_depends ${TDSLC_EXECUTABLE})
  else()
    set(tdslc $<TARGET_FILE:tdsl::tdslc>)
    # The file, so that a new tdslc regenerates everything; the target (in
    # tdslc's own build) so that it is built first.
    set(tdslc_depends $<TARGET_FILE:tdsl::tdslc>)
    get_target_property(tdslc_imported tdsl::tdslc IMPORTED)
    if(NOT tdslc_imported)
      list(APPEND tdslc_depends tdsl::tdslc)
    endif()
  endif()

  set(gen_dir ${CMAKE_CURRENT_BINARY_DIR}/${name}_gen)
  file(MAKE_DIRECTORY ${gen_dir})
  set(cu_files)
  set(headers)
  foreach(src IN LISTS ARG_SOURCES)
    get_filename_component(src_abs ${src} ABSOLUTE)
    get_filename_component(base ${src} NAME_WE)
    set(cu ${gen_dir}/${base}.cu)
    set(h ${gen_dir}/${base}.h)
    set(dep ${gen_dir}/${base}.d)
    if(${cu} IN_LIST cu_files)
      message(FATAL_ERROR "tdsl_add_library(${name}): two sources named ${base}.tdsl")
    endif()
    add_custom_command(
      OUTPUT ${cu} ${h}
      COMMAND ${tdslc} ${src_abs} --emit=cuda -o ${cu} --header=${h}
              --arch=sm_${ARG_ARCH} -O${ARG_OPT} -MD -MF ${dep} ${ARG_TDSLC_FLAGS}
      DEPENDS ${src_abs} ${tdslc_depends}
      DEPFILE ${dep}
      COMMENT "tdslc ${base}.tdsl -> ${name}_gen/${base}.cu"
      VERBATIM)
    list(APPEND cu_files ${cu})
    list(APPEND headers ${h})
  endforeach()

  add_library(${name} STATIC ${cu_files} ${headers})
  set_target_properties(${name} PROPERTIES
    CUDA_ARCHITECTURES ${ARG_ARCH}
    CUDA_STANDARD 17
    CUDA_STANDARD_REQUIRED ON
    POSITION_INDEPENDENT_CODE ON)
  target_include_directories(${name} PUBLIC $<BUILD_INTERFACE:${gen_dir}>)
  target_link_libraries(${name} PUBLIC tdsl::runtime)
endfunction()
