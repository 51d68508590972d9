# End-to-end tests: the real kforge binary, the real mock LLM server on loopback, real
# Python+PyTorch runners (CPU unless labelled gpu). Each skips (77) where no Python
# imports torch, a gpu test where there is no GPU (two for multi_gpu), a containment
# check where the host lacks root or namespaces.
find_package(Python3 COMPONENTS Interpreter REQUIRED)

# test name | script in tests/e2e/ | label | timeout (s): bounds for a machine shared with
# other work (CI runs the suite beside other jobs), never what a test needs when idle
set(kb_e2e_tests
  # the loop, resume, restarts, detach/stop, the CLI
  "e2e_test_e2e_cpu|test_e2e_cpu|e2e|1800"
  "e2e_test_resume|test_resume|e2e|1800"
  # refinement.strategy: each search's parents, budgets, a beam round killed and resumed
  "e2e_test_search|test_search|e2e|2400"
  "e2e_test_worker_restart|test_worker_restart|e2e|1800"
  "e2e_test_detach_stop|test_detach_stop|e2e|1800"
  "e2e_test_cli|test_cli|e2e|1800"
  # status, tail and stage times of an interrupted, retried, restarted and resumed run
  "e2e_test_views|test_views|e2e|2400"
  # problems.subset/exclude, content hashes, fast_p@k, report A B and subset on real runs
  "e2e_test_compare_cpu|test_compare_cpu|e2e|2400"
  # the HTML report and the live viewer in headless Chromium, the viewer following a resume
  "e2e_test_report_browser|test_report_browser|e2e|1800"
  # the progress display: through a pseudo-terminal, in a pipe, --quiet
  "e2e_test_progress|test_progress|e2e|1800"
  # kforge eval and the shared build and baseline cache: concurrent builds, hits, misses
  "e2e_test_eval_cache|test_eval_cache|e2e|1800"
  # the fork server an eval leaves for the next: shared, watched runners, its ends
  "e2e_test_eval_server|test_eval_server|e2e|1800"
  # a run's one fork server: the process tree and its users, a worker killed (its runner
  # gone before it restarts), the server killed (no turn lost), nothing left
  "e2e_test_run_server|test_run_server|e2e|1800"
  # eval.format raw: its prompt, the static check, a raw build run, judged and cached
  "e2e_test_raw_format|test_raw_format|e2e|1200"
  # cheating and honest CPU candidates (tests/data/{adversarial,honest}/cpu): each one's
  # verdict and reasons from kforge eval as its header expects, and the same in a run
  "e2e_test_adversarial|test_adversarial|e2e|2400"
  # kforge doctor: every prerequisite named, a Python without torch and a GPU-less cuda refused
  "e2e_test_doctor|test_doctor|e2e|900"
  # the CPU demo, every turn judged against configs/demo_responses/expected.json
  "e2e_demo_cpu|test_demo_cpu|e2e|5400"
  # scheduling limits, FIFO and GPU quarantine, from the trajectories' lease records
  "e2e_test_scheduling|test_scheduling|e2e|1800"
  "e2e_test_quarantine|test_quarantine|e2e|1800"
  # LLM faults, each with exact request counts; the run-wide pause on 401/403
  "e2e_test_llm_faults|test_llm_faults|e2e|1200"
  "e2e_test_llm_auth_pause|test_llm_auth_pause|e2e|1800"
  # the anthropic and command providers in a run: tokens and cost in status and report
  "e2e_test_providers|test_providers|e2e|1200"
  # llm.provider agent: a scripted agent's tool calls (recorded, counted, limited), its
  # final kernel judged, its transcript in tail and the report, a restarted agent turn
  "e2e_test_agent|test_agent|e2e|1800"
  # kforge redteam with the replay and command providers: the red-team prompt, the
  # candidates kept (correct and suspect at redteam.min_speedup or more), --harvest, resume
  "e2e_test_redteam|test_redteam|e2e|1200"
  # an environment failure (no torch, a reference failing alone) pauses, never scores
  "e2e_test_env_error|test_env_error|e2e|1800"
  # the kernel and runner fault matrix (CPU analogues), containment of generated code
  "e2e_test_faults|test_faults|e2e|3600"
  "e2e_test_containment|test_containment|e2e|1800"
  # the judge stops the candidate's whole PID namespace (a process it forked too) while
  # it times the reference
  "e2e_test_freeze|test_freeze|e2e|600"
  "e2e_test_sandbox|test_sandbox|e2e|1800"
  # cluster.engine slurm on a one-host Slurm: the CPU demo on shards, one killed mid-turn
  # and requeued, the follower killed and resumed with a shard added
  "e2e_test_slurm|test_slurm|e2e|2400"
  # a shard's one-minute Slurm time limit: warned, stopped at a safe point, requeued by
  # itself and finished, nothing asked twice; the ended shard's state from sacct
  "e2e_test_slurm_time_limit|test_slurm_time_limit|e2e|1500"
  # as root, problems, run dir and KFORGE_HOME under a 0700 directory: runners work in
  # a staging directory, also after a cut run's staging directory was replaced by a link
  "e2e_test_reach|test_reach|e2e|1500"
  # crash points and SIGKILLs then restart or resume; disk full, corrupt log, read-only dir
  "e2e_test_crashpoints|test_crashpoints|e2e|2700"
  "e2e_test_storage|test_storage|e2e|1800"
  # GPU host: the CUDA demo, a context-corrupting kernel, the CUDA fault matrix, and the
  # pool across two GPUs with one made unusable from outside; the timing methods
  "e2e_demo_gpu|test_demo_gpu|gpu|3000"
  "e2e_gpu_health|test_gpu_health|gpu|1200"
  "e2e_test_faults_gpu|test_faults_gpu|gpu|1800"
  "e2e_multi_gpu|test_multi_gpu|gpu|2400"
  "e2e_timing_gpu|test_timing_gpu|gpu|1800"
  # every bundled CUDA and Triton example answer judged correct; the hardware block's GPU facts
  "e2e_prompts_gpu|test_prompts_gpu|gpu|3000"
  # cheating and honest CUDA candidates (tests/data/{adversarial,honest}/cuda), as the CPU
  # suite: kforge eval --device cuda and a run agree, each verdict as the file's header says
  "e2e_test_adversarial_gpu|test_adversarial_gpu|gpu|3600"
)
foreach(row ${kb_e2e_tests})
  string(REPLACE "|" ";" f "${row}")
  list(GET f 0 name)
  list(GET f 1 script)
  list(GET f 2 label)
  list(GET f 3 timeout)
  kb_add_script_test(${name} COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/${script}.py
                     LABELS ${label} TIMEOUT ${timeout})
endforeach()
