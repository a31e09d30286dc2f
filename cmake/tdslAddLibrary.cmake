# tdsl_add_library: .tdsl sources in, a static CUDA library out.
#
#   tdsl_add_library(kernels SOURCES a.tdsl b.tdsl [ARCH 80 90a ...] [OPT 2]
#                    [SYMBOL_PREFIX mylib_] [TDSLC_FLAGS ...])
#
# Each a.tdsl becomes kernels_gen/a.cu and kernels_gen/a.h (launchers
# tdsl_<kernel>(...), see tdsl/runtime.h) in the current binary directory;
# the .cu files are compiled into the STATIC library `kernels`, whose users
# get kernels_gen/ as an include directory and the runtime as a dependency.
# A source is regenerated when it changes, when anything tdslc read for it
# changes (its depfile) and when tdslc itself changes.
#
# ARCH: the CUDA archs the library runs on, as CMAKE_CUDA_ARCHITECTURES
# spells them (80, 90, 90a, 90-real); by default CMAKE_CUDA_ARCHITECTURES,
# else 90. One library serves them all, built as one .cu per source that
# nvcc compiles for each arch (CUDA_ARCHITECTURES), not one .cu per arch:
# the CUDA tdslc emits does not depend on the arch, which only decides
# whether each launch fits (shared memory, threads; backend/ResourceCheck.h),
# so tdslc checks every arch of the list (--arch=sm_80,sm_90) and writes one
# file. Code paths that differ per arch (tensor cores) belong in that file
# under __CUDA_ARCH__ guards, and nothing here would change.
#
# SYMBOL_PREFIX: starts every launcher, query and kernel name instead of
# tdsl_ (tdslc --symbol-prefix), so that two libraries may both define
# kernel softmax and link into one program. A source's TDSL_SYMBOL_PREFIX
# property, if set, wins for that source:
#   set_source_files_properties(b.tdsl PROPERTIES TDSL_SYMBOL_PREFIX b_)
#
# Included by tdslConfig.cmake (installed use) and by tdslc's own build
# (build-tree use); either defines the executable target tdsl::tdslc and
# the library tdsl::runtime. TDSLC_EXECUTABLE, when set, names another
# tdslc to run instead.
include_guard(GLOBAL)

function(tdsl_add_library name)
  cmake_parse_arguments(PARSE_ARGV 1 ARG "" "OPT;SYMBOL_PREFIX" "SOURCES;ARCH;TDSLC_FLAGS")
  if(ARG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "tdsl_add_library(${name}): unknown arguments ${ARG_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT ARG_SOURCES)
    message(FATAL_ERROR "tdsl_add_library(${name}): no SOURCES")
  endif()
  if(NOT ARG_ARCH)
    set(ARG_ARCH ${CMAKE_CUDA_ARCHITECTURES})
    if(NOT ARG_ARCH)
      set(ARG_ARCH 90) # unset, empty or OFF
    endif()
  endif()
  # tdslc checks each arch once, whether its code is real, virtual or both.
  set(tdslc_archs)
  foreach(arch IN LISTS ARG_ARCH)
    if(NOT arch MATCHES "^([0-9]+a?)(-real|-virtual)?$")
      message(FATAL_ERROR "tdsl_add_library(${name}): ARCH is a list of archs like 80, 90 "
                          "or 90a (as CMAKE_CUDA_ARCHITECTURES spells them), not '${arch}'; "
                          "name them rather than all, all-major or native")
    endif()
    list(APPEND tdslc_archs sm_${CMAKE_MATCH_1})
  endforeach()
  list(REMOVE_DUPLICATES tdslc_archs)
  list(JOIN tdslc_archs "," tdslc_arch_flag)
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
    get_source_file_property(prefix ${src_abs} TDSL_SYMBOL_PREFIX)
    if(NOT prefix)
      set(prefix ${ARG_SYMBOL_PREFIX})
    endif()
    set(prefix_flag)
    if(prefix)
      set(prefix_flag --symbol-prefix=${prefix})
    endif()
    add_custom_command(
      OUTPUT ${cu} ${h}
      COMMAND ${tdslc} ${src_abs} --emit=cuda -o ${cu} --header=${h}
              --arch=${tdslc_arch_flag} -O${ARG_OPT} ${prefix_flag} -MD -MF ${dep}
              ${ARG_TDSLC_FLAGS}
      DEPENDS ${src_abs} ${tdslc_depends}
      DEPFILE ${dep}
      COMMENT "tdslc ${base}.tdsl -> ${name}_gen/${base}.cu"
      VERBATIM)
    list(APPEND cu_files ${cu})
    list(APPEND headers ${h})
  endforeach()

  add_library(${name} STATIC ${cu_files} ${headers})
  set_target_properties(${name} PROPERTIES
    CUDA_ARCHITECTURES "${ARG_ARCH}"
    CUDA_STANDARD 17
    CUDA_STANDARD_REQUIRED ON
    POSITION_INDEPENDENT_CODE ON)
  target_include_directories(${name} PUBLIC $<BUILD_INTERFACE:${gen_dir}>)
  target_link_libraries(${name} PUBLIC tdsl::runtime)
endfunction()
