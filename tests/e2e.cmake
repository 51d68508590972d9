# End-to-end tests: the real kforge binary, the real mock LLM server on loopback, real
# Python+PyTorch runners on the CPU. Each skips (77) where no Python imports torch.
find_package(Python3 COMPONENTS Interpreter REQUIRED)
foreach(t test_e2e_cpu test_resume test_worker_restart test_detach_stop test_cli)
  kb_add_script_test(e2e_${t} COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/e2e/${t}.py
                     LABELS e2e TIMEOUT 1800)
endforeach()
kb_add_script_test(e2e_demo_gpu COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/e2e/test_demo_gpu.py
                   LABELS gpu TIMEOUT 3000)
# Scheduling limits and GPU quarantine, from the trajectories' lease records (CPU).
foreach(t test_scheduling test_quarantine)
  kb_add_script_test(e2e_${t} COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/e2e/${t}.py
                     LABELS e2e TIMEOUT 600)
endforeach()
kb_add_script_test(e2e_gpu_health COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/e2e/test_gpu_health.py
                   LABELS gpu TIMEOUT 1200)
# Two or more GPUs: the pool across devices (exclusive leases, CUDA_VISIBLE_DEVICES per
# lease, the model per result), then a GPU made unusable from outside is quarantined and
# its execution runs again on another. Skips (77) with fewer than two GPUs.
kb_add_script_test(e2e_multi_gpu COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/e2e/test_multi_gpu.py
                   LABELS gpu TIMEOUT 2400)
# LLM faults against the mock server (CPU): each fault classified with exact request
# counts; an auth failure pauses generation run-wide, then resume continues every task.
foreach(t test_llm_faults test_llm_auth_pause)
  kb_add_script_test(e2e_${t} COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/e2e/${t}.py
                     LABELS e2e TIMEOUT 600)
endforeach()
# The kernel and runner fault matrix (issue 4): CPU analogues here, CUDA ones on a GPU host.
kb_add_script_test(e2e_test_faults COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/e2e/test_faults.py
                   LABELS e2e TIMEOUT 900)
kb_add_script_test(e2e_test_faults_gpu COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/e2e/test_faults_gpu.py
                   LABELS gpu TIMEOUT 1800)
# Containment of generated code (issue 4): env allow-list, rlimits, network namespace,
# uid drop; parts the host cannot prove (not root, no namespaces) are skipped and said.
kb_add_script_test(e2e_test_containment COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/e2e/test_containment.py
                   LABELS e2e TIMEOUT 600)
# Process and storage faults (CPU): crash points and SIGKILLs at chosen moments, then
# restart or resume; a full disk (tmpfs, root), a corrupt log, an unwritable run dir.
foreach(t test_crashpoints test_storage)
  kb_add_script_test(e2e_${t} COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/e2e/${t}.py
                     LABELS e2e TIMEOUT 900)
endforeach()
