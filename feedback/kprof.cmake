# libkforge_kprof.so, the CUPTI injection library the runner loads through
# CUDA_INJECTION64_PATH (feedback/kprof.h), and kb_kprof_core, the pure parts (CUDA
# headers only) for its unit tests. Built only where the toolkit's CUPTI headers and libraries are found;
# kb_fb then gets KFORGE_KPROF_PATH, the library's path in this build tree.
set(kprof_roots ${CUDAToolkit_ROOT} $ENV{CUDA_HOME} $ENV{CUDA_PATH} /usr/local/cuda)
find_path(KPROF_CUDA_INCLUDE cuda_occupancy.h HINTS ${kprof_roots} PATH_SUFFIXES include)
find_path(KPROF_CUPTI_INCLUDE cupti_range_profiler.h HINTS ${kprof_roots}
          PATH_SUFFIXES include extras/CUPTI/include)
find_library(KPROF_CUPTI_LIB NAMES cupti HINTS ${kprof_roots}
             PATH_SUFFIXES lib64 lib extras/CUPTI/lib64 extras/CUPTI/lib)
# Link against the driver stub: the real libcuda.so.1 (same soname) is the one already
# in the process that loads the library.
find_library(KPROF_CUDA_LIB NAMES cuda HINTS ${kprof_roots}
             PATH_SUFFIXES lib64/stubs lib/stubs targets/x86_64-linux/lib/stubs NO_DEFAULT_PATH)
find_library(KPROF_CUDA_LIB NAMES cuda)
find_program(KPROF_NVCC nvcc HINTS ${kprof_roots} PATH_SUFFIXES bin)

if(NOT (KPROF_CUDA_INCLUDE AND KPROF_CUPTI_INCLUDE AND KPROF_CUPTI_LIB AND KPROF_CUDA_LIB))
  message(STATUS "kprof: CUPTI not found (cupti_range_profiler.h ${KPROF_CUPTI_INCLUDE}, "
                 "libcupti ${KPROF_CUPTI_LIB}, libcuda ${KPROF_CUDA_LIB}): "
                 "libkforge_kprof.so not built")
  return()
endif()
get_filename_component(kprof_libdir ${KPROF_CUPTI_LIB} DIRECTORY)
set(KPROF_CUPTI_LIBDIR ${kprof_libdir} CACHE INTERNAL "where libcupti is (tests/kprof.cmake)")

# cupti_profiler_host.h includes C++'s <string> without using it: an empty file of that
# name ahead of the CUDA headers lets the host API compile as C.
set(kprof_shim ${CMAKE_CURRENT_BINARY_DIR}/kprof_cshim)
# file(CONFIGURE) rewrites it only when its content changes: file(WRITE) at each configure
# made every build compile kprof_host.c again.
file(CONFIGURE OUTPUT ${kprof_shim}/string CONTENT "/* empty: see feedback/kprof.cmake */\n")
set(kprof_includes ${kprof_shim} ${KPROF_CUPTI_INCLUDE} ${KPROF_CUDA_INCLUDE})

add_library(kb_kprof_core STATIC kprof_core.c)
target_include_directories(kb_kprof_core PUBLIC ${kprof_includes})
target_link_libraries(kb_kprof_core PUBLIC ${CMAKE_DL_LIBS} m)

set(KPROF_INCLUDES ${kprof_includes} CACHE INTERNAL "include path of kprof*.c")

# The library compiles its sources itself rather than linking kb_kprof_core: it must be
# free of sanitizer runtimes and export one symbol.
add_library(kforge_kprof SHARED kprof_core.c kprof_host.c kprof_inject.c)
target_include_directories(kforge_kprof PRIVATE ${kprof_includes})
target_link_libraries(kforge_kprof PRIVATE ${KPROF_CUPTI_LIB} ${KPROF_CUDA_LIB}
                      Threads::Threads ${CMAKE_DL_LIBS} m)
set_target_properties(kforge_kprof PROPERTIES
  C_VISIBILITY_PRESET hidden
  POSITION_INDEPENDENT_CODE ON
  # no build-tree RPATH (it would name the driver stubs); the one -rpath below says where
  # libcupti.so.13 is for a plain CUDA program: a torch process has its own copy loaded
  SKIP_BUILD_RPATH ON
  LINK_FLAGS "-Wl,--no-undefined -Wl,--exclude-libs,ALL -Wl,-rpath,${KPROF_CUPTI_LIBDIR}")
# libcupti opens libnvperf_host.so with RTLD_DEEPBIND, which ASan refuses in any process
# it runs in.
kb_unsanitized(kforge_kprof)

target_compile_definitions(kb_fb PUBLIC KFORGE_KPROF_PATH="$<TARGET_FILE:kforge_kprof>")
add_dependencies(kb_fb kforge_kprof)
message(STATUS "kprof: CUPTI ${KPROF_CUPTI_LIB}: building libkforge_kprof.so "
               "(KFORGE_KPROF_PATH)")
