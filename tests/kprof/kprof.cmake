# kprof: the CUPTI injection library (kprof/, kprof/CMakeLists.txt). Only where it
# builds. unit_kprof_* need no GPU: the pure parts with synthetic records (core), the CUPTI
# host API on GH100 (host), the built library's exports and dependencies (so), its
# refusals under fake CUPTI libraries (fake).
# gpu_kprof_* run a CUDA probe (built with nvcc at test time) or torch under
# CUDA_INJECTION64_PATH; label gpu, exit 77 without a GPU. gpu_kprof_smoke only prints the
# JSON of the probe's trace run (ctest -R gpu_kprof_smoke -V), for reports.
if(NOT TARGET kforge_kprof)
  return()
endif()
find_package(Python3 COMPONENTS Interpreter REQUIRED)
kb_add_test(unit_kprof_core SOURCES ${CMAKE_CURRENT_LIST_DIR}/kprof_core.c
            LIBS kb_kprof_core PkgConfig::JANSSON LABELS unit TIMEOUT 60)
# the host API with its own unsanitized copy of the sources (kprof/CMakeLists.txt says why)
kb_add_test(unit_kprof_host SOURCES ${CMAKE_CURRENT_LIST_DIR}/kprof_host.c
            ${CMAKE_SOURCE_DIR}/kprof/host.c ${CMAKE_SOURCE_DIR}/kprof/core.c
            LIBS ${KPROF_CUPTI_LIB} ${CMAKE_DL_LIBS} m LABELS unit TIMEOUT 60)
target_include_directories(unit_kprof_host PRIVATE ${KPROF_INCLUDES})
kb_unsanitized(unit_kprof_host)
kb_add_script_test(unit_kprof_so
                   COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/kprof_so.py
                           $<TARGET_FILE:kforge_kprof>
                   LABELS unit TIMEOUT 60)
# the refusals (version mismatch, CUPTI busy, a failing cuptiGetVersion) with fake
# libcupti and libcuda built at test time, no GPU
kb_add_script_test(unit_kprof_fake
                   COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/kprof_fake.py
                           $<TARGET_FILE:kforge_kprof> ${KPROF_CUPTI_INCLUDE}
                   LABELS unit TIMEOUT 120)
set(kprof_nvcc "${KPROF_NVCC}")
if(NOT kprof_nvcc)
  set(kprof_nvcc "")
endif()
foreach(case trace killed metrics busy torch smoke)
  kb_add_script_test(gpu_kprof_${case}
                     COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/kprof_gpu.py
                             ${case} $<TARGET_FILE:kforge_kprof> ${kprof_nvcc}
                     LABELS gpu TIMEOUT 900)
endforeach()
