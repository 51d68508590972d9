# tools/: the helper scripts, run as a user runs them. tools_gpu_checks runs
# tools/device/gpu-checks.sh off a GPU host (a from-scratch build into a scratch
# directory, the gpu tests skipping) and skips (77) on a GPU host.
kb_add_script_test(tools_gpu_checks COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/gpu_checks.sh
                   LABELS e2e TIMEOUT 1800)
# tools/check_modules.py: the include graph of the module folders keeps to docs/DESIGN.md §8
# (base a leaf, llm apart from evaluation, the pool steering nothing, public headers only);
# planted violations are each named.
find_package(Python3 COMPONENTS Interpreter REQUIRED)
kb_add_script_test(tools_module_graph
                   COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/module_graph.py
                   LABELS unit python TIMEOUT 60)
# tools/bench/kbcheck's manifest (every candidate and bundled problem present, malformed
# lines refused) and its refusal of --device cpu; no GPU or KernelBench checkout needed.
kb_add_script_test(tools_kbcheck_manifest
                   COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/kbcheck_manifest.py
                   LABELS unit python TIMEOUT 120)
# tools/slurm/local.sh: a one-host Slurm (munge, slurmctld, slurmd) in a state directory
# and on ports of the test's own; a job array on fake GPUs, a job killed; skips without root.
kb_add_script_test(tools_slurm_local
                   COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/slurm_local.py
                   LABELS e2e TIMEOUT 600)
