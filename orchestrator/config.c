/*
 * config.c: the experiment config. One const schema table says every key, its type,
 * where it lives in struct kb_config, its default and its allowed values; a walker
 * checks a libyaml document against it (keeping line:column for every message), then
 * --set overrides, then required keys and defaults. Defaults are YAML text read by the
 * same code as the file, so a default can never be a value the loader would refuse.
 * orch_config_emit writes the resolved struct back as YAML the loader reads to an
 * equal struct.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <yaml.h>

#include "feedback/feedback.h"
#include "fsm/fsm.h"
#include "llm/llm.h"
#include "orchestrator/config_int.h"
#include "orchestrator/orchestrator.h"
#include "base/banned.h"

#define CFG_PATH_MAX	4096	/* longest path or string value, NUL included */
#define CFG_KEY_MAX	128	/* longest dotted key path kept for messages */
#define CFG_SHOW_MAX	64	/* longest value text quoted back in a message */

/* ---------------------------------------------------------------- schema */

enum cfg_kind {
	K_STR,		/* any string */
	K_NAME,		/* [A-Za-z0-9._-]{1,64} */
	K_ENVNAME,	/* "" or [A-Z_][A-Z0-9_]* */
	K_USER,		/* "" or a user name [A-Za-z0-9._-]{1,32}, not starting with - */
	K_BOOL,		/* true | false, into a bool */
	K_PATH,		/* ~ expanded, made absolute */
	K_ENUM,		/* one of allowed[] */
	K_INT,		/* lo..hi, into an int or a long */
	K_NUM,		/* dlo..dhi, into a double */
	K_LEVELS,	/* problems.levels */
	K_IDS,		/* problems.ids */
	K_FEEDBACK,	/* refinement.feedback */
	K_DEVICES,	/* gpus.devices */
	K_ARGV,		/* a list of strings: a program and its arguments */
	K_KEYS,		/* problems.exclude: a list of problem keys, or a file of them */
};

#define F_NONEMPTY	0x1	/* "" is refused */
#define F_DEFAULT_WORD	0x2	/* K_NUM: the word "default" stores -1 */
#define F_OPTIONS	0x4	/* K_ARGV: options for a program of ours, not a program */
#define CFG_ARGV_MAX	64	/* K_ARGV: most items */

struct cfg_key {
	const char	*path;		/* dotted, e.g. "llm.temperature" */
	enum cfg_kind	 kind;
	size_t		 off, size;	/* the field in struct kb_config */
	const char	*def;		/* default as YAML text; NULL: required */
	long		 lo, hi;	/* K_INT */
	double		 dlo, dhi;	/* K_NUM */
	const char *const *allowed;	/* K_ENUM, NULL-terminated */
	const char *const *(*allowed_of)(void);	/* K_ENUM: the list, kept by its module */
	const char	*when, *is;	/* required (and non-empty) when key `when` equals `is` */
	unsigned	 flags;
	const char	*doc;		/* one line of meaning, for kforge config --reference */
};

#define KEY(p, k, f)	.path = (p), .kind = (k), .off = offsetof(struct kb_config, f), \
			.size = sizeof(((struct kb_config *)0)->f)

static const char *const reasoning_efforts[] = { "default", "none", "minimal", "low", "medium",
						 "high", NULL };
static const char *const prompts[] = { "one_shot", "zero_shot", "few_shot", NULL };
static const char *const backends[] = { "cuda", "triton", NULL };
static const char *const eval_devices[] = { "cpu", "cuda", "auto", NULL };
static const char *const input_places[] = { "host", "device", NULL };
static const char *const build_formats[] = { "load_inline", "raw", NULL };
static const char *const precisions[] = { "fp32", "fp16", "bf16", NULL };
static const char *const severities[] = { "warning", "error", NULL };
static const char *const sandbox_modes[] = { "strict", "best_effort", NULL };
static const char *const timing_methods[] = { "cuda_event", "host_time", "do_bench", NULL };
static const char *const speedup_statistics[] = { "auto", "mean", "median", NULL };
static const char *const cluster_engines[] = { "local", "slurm", NULL };

/* Keys of one section stay together: orch_config_emit opens a section where its first
 * key is. */
static const struct cfg_key schema[] = {
	{ KEY("name", K_NAME, name),
	  .doc = "the run's name; the run directory defaults to runs/<name>" },
	{ KEY("problems.dir", K_PATH, problems.dir), .flags = F_NONEMPTY,
	  .doc = "the KernelBench problems directory (holding level1/, level2/ ...)" },
	{ KEY("problems.levels", K_LEVELS, problems.levels), .def = "[1, 2, 3]",
	  .doc = "the levels whose problems are run" },
	{ KEY("problems.ids", K_IDS, problems.ids), .def = "all",
	  .doc = "the problem ids run within each level: all, or ranges such as \"1-100,3\"" },
	{ KEY("problems.samples", K_INT, problems.samples), .def = "1", .lo = 1, .hi = 1000,
	  .doc = "independent trajectories per problem (fast_p@k)" },
	{ KEY("problems.subset", K_PATH, problems.subset), .def = "''",
	  .doc = "a file of problem keys, one a line, to run only those (problems/subsets/ has some)" },
	{ KEY("problems.exclude", K_KEYS, problems.exclude), .def = "[]",
	  .doc = "problem keys left out: a list, one key, or a file of keys" },
	{ KEY("llm.provider", K_ENUM, llm.provider), .allowed_of = llm_provider_names,
	  .doc = "where replies come from: an OpenAI-compatible endpoint, Anthropic's Messages API, "
		 "a program of yours, or saved replies" },
	{ KEY("llm.base_url", K_STR, llm.base_url), .def = "''",
	  .when = "llm.provider", .is = "openai",
	  .doc = "the endpoint's base URL (.../v1)" },
	{ KEY("llm.model", K_STR, llm.model), .def = "''",
	  .when = "llm.provider", .is = "openai",
	  .doc = "the model name sent with every request" },
	{ KEY("llm.api_key_env", K_ENVNAME, llm.api_key_env), .def = "''",
	  .doc = "the environment variable holding the API key ('' sends none)" },
	{ KEY("llm.temperature", K_NUM, llm.temperature), .def = "0.0", .dlo = 0, .dhi = 2,
	  .doc = "the sampling temperature" },
	{ KEY("llm.max_tokens", K_INT, llm.max_tokens), .def = "8192", .lo = 1, .hi = 1000000,
	  .doc = "the most tokens a reply may have" },
	{ KEY("llm.timeout_s", K_INT, llm.timeout_s), .def = "600", .lo = 1, .hi = 86400,
	  .doc = "seconds one request may take before it is retried" },
	{ KEY("llm.retries", K_INT, llm.retries), .def = "6", .lo = 0, .hi = 100,
	  .doc = "retries of a request that failed transiently (429, 5xx, timeout)" },
	{ KEY("llm.concurrency", K_INT, llm.concurrency), .def = "8", .lo = 1, .hi = 4096,
	  .doc = "LLM requests in flight at once, across all tasks" },
	{ KEY("llm.max_response_bytes", K_INT, llm.max_response_bytes), .def = "4194304",
	  .lo = 1024, .hi = 1073741824,
	  .doc = "the largest reply body read; a larger one is an error" },
	{ KEY("llm.replay_dir", K_PATH, llm.replay_dir), .def = "''",
	  .when = "llm.provider", .is = "replay",
	  .doc = "the directory of saved replies the replay provider serves" },
	{ KEY("llm.anthropic_version", K_STR, llm.anthropic_version), .def = "'2023-06-01'",
	  .doc = "the anthropic-version header the anthropic provider sends" },
	{ KEY("llm.command", K_ARGV, llm.command), .def = "[]",
	  .doc = "the command provider's program and arguments (no shell): request JSON in, reply out" },
	{ KEY("llm.max_completion_tokens", K_INT, llm.max_completion_tokens), .def = "0",
	  .lo = 0, .hi = 1000000,
	  .doc = "reasoning models: sent as max_completion_tokens instead of max_tokens (0: not sent)" },
	{ KEY("llm.reasoning_effort", K_ENUM, llm.reasoning_effort), .def = "default",
	  .allowed = reasoning_efforts,
	  .doc = "reasoning models' effort, sent when not default (then no temperature is sent)" },
	{ KEY("llm.price_input_per_mtok", K_NUM, llm.price_input_per_mtok), .def = "0",
	  .dlo = 0, .dhi = 1e6,
	  .doc = "USD per million prompt tokens, for the cost in status and report (0: not priced)" },
	{ KEY("llm.price_output_per_mtok", K_NUM, llm.price_output_per_mtok), .def = "0",
	  .dlo = 0, .dhi = 1e6,
	  .doc = "USD per million completion tokens (0: not priced)" },
	{ KEY("llm.agent.max_tool_calls", K_INT, llm.agent_max_tool_calls), .def = "8",
	  .lo = 0, .hi = 10000,
	  .doc = "the agent provider: `kforge-tool eval` calls one turn's agent may make (each "
		 "a build and an execution, recorded in the trajectory); later calls are refused" },
	{ KEY("llm.agent.timeout_s", K_INT, llm.agent_timeout_s), .def = "1800", .lo = 1,
	  .hi = 86400,
	  .doc = "the agent provider: seconds one turn's agent may run, its tool calls included, "
		 "before its process group is killed (the turn is then spent without a kernel)" },
	{ KEY("refinement.turns", K_INT, refinement.turns), .def = "10", .lo = 1, .hi = 256,
	  .doc = "turns per task: the first prompt and its refinements; under every "
		 "refinement.strategy the most turns (search nodes) a task makes" },
	{ KEY("refinement.feedback", K_FEEDBACK, refinement.feedback_g), .def = "[G, E]",
	  .doc = "what refinement prompts show: G previous kernel, E build and execution result, P profile" },
	{ KEY("refinement.prompt", K_ENUM, refinement.prompt), .def = "one_shot",
	  .allowed = prompts,
	  .doc = "the first prompt's style: with no example, one example, or refinement.examples of them" },
	{ KEY("refinement.prompts_dir", K_PATH, refinement.prompts_dir), .def = "''",
	  .doc = "a copy of llm/prompts with edited templates ('' uses the bundled ones)" },
	/* hi: the example pairs bundled in llm/prompts (example, example2, example3) */
	{ KEY("refinement.examples", K_INT, refinement.examples), .def = "2", .lo = 1, .hi = 3,
	  .doc = "few_shot: how many example pairs (problem and its custom-kernel version) the prompt shows" },
	{ KEY("refinement.hardware", K_BOOL, refinement.hardware), .def = "false",
	  .doc = "describe the device the code runs on in every prompt (GPU: SMs, memory, bandwidth, caches; CPU: model, cores, SIMD, caches)" },
	{ KEY("refinement.feedback_max_chars", K_INT, refinement.feedback_max_chars),
	  .def = "4000", .lo = 100, .hi = 1000000,
	  .doc = "the most characters of compiler or execution output fed back" },
	{ KEY("refinement.profile_metrics", K_BOOL, refinement.profile_metrics), .def = "true",
	  .doc = "P on a GPU: also read hardware counters (DRAM %, achieved occupancy) of the top kernels in a second profiling run" },
	{ KEY("refinement.profile_metrics_top", K_INT, refinement.profile_metrics_top),
	  .def = "3", .lo = 1, .hi = 20,
	  .doc = "P on a GPU: how many of the profile's top kernels refinement.profile_metrics measures" },
	{ KEY("refinement.strategy", K_ENUM, refinement.strategy), .def = "chain",
	  .allowed_of = fsm_strategy_names,
	  .doc = "the search over a task's turns (docs/search.md): chain (each turn refines the "
		 "last), best_of_n (refinement.width first turns, then a chain from the best), beam, "
		 "tree or evolve; every strategy makes at most refinement.turns turns" },
	{ KEY("refinement.width", K_INT, refinement.width), .def = "4", .lo = 1, .hi = 64,
	  .doc = "best_of_n: the independent first turns; beam: the children of each kept turn "
		 "per round (and the first round's turns); evolve: the first turns, from the problem "
		 "alone" },
	{ KEY("refinement.keep", K_INT, refinement.keep), .def = "2", .lo = 1, .hi = 64,
	  .doc = "beam: the turns kept after each round, by verdict then speedup; evolve: the "
		 "pool of correct kernels kept, by speedup" },
	{ KEY("refinement.explore", K_NUM, refinement.explore), .def = "0.25", .dlo = 0, .dhi = 1,
	  .doc = "tree: the share of turns that expand a node drawn at random (the problem "
		 "included) rather than the best; evolve: the share of children with one parent" },
	{ KEY("refinement.seed", K_INT, refinement.seed), .def = "0", .lo = 0, .hi = LONG_MAX,
	  .doc = "the seed of tree's and evolve's draws, mixed with the task's id: a resume "
		 "draws the same" },
	{ KEY("refinement.budget.requests", K_INT, refinement.budget.requests), .def = "0",
	  .lo = 0, .hi = 1000000,
	  .doc = "per task: stop the search once this many LLM requests were made (0: no limit)" },
	{ KEY("refinement.budget.tokens", K_INT, refinement.budget.tokens), .def = "0",
	  .lo = 0, .hi = LONG_MAX,
	  .doc = "per task: stop once the replies' prompt and completion tokens reach this (0: no limit)" },
	{ KEY("refinement.budget.cost_usd", K_NUM, refinement.budget.cost_usd), .def = "0",
	  .dlo = 0, .dhi = 1e9,
	  .doc = "per task: stop once the requests cost this many USD (needs llm.price_*; 0: no limit)" },
	{ KEY("refinement.budget.gpu_s", K_NUM, refinement.budget.gpu_s), .def = "0",
	  .dlo = 0, .dhi = 1e9,
	  .doc = "per task: stop once executions and profiles held their device this many "
		 "seconds (0: no limit)" },
	{ KEY("eval.device", K_ENUM, eval.device), .def = "auto", .allowed = eval_devices,
	  .doc = "where candidates run: cpu, cuda, or auto (cuda when a GPU is visible)" },
	{ KEY("eval.precision", K_ENUM, eval.precision), .def = "fp32", .allowed = precisions,
	  .doc = "the dtype of inputs and parameters" },
	{ KEY("eval.correctness_trials", K_INT, eval.correctness_trials), .def = "5",
	  .lo = 1, .hi = 100,
	  .doc = "runs with fresh random inputs compared with the reference" },
	{ KEY("eval.atol", K_NUM, eval.atol), .def = "default", .dlo = 0, .dhi = HUGE_VAL,
	  .flags = F_DEFAULT_WORD,
	  .doc = "absolute tolerance of the comparison (default: the precision's own)" },
	{ KEY("eval.rtol", K_NUM, eval.rtol), .def = "default", .dlo = 0, .dhi = HUGE_VAL,
	  .flags = F_DEFAULT_WORD,
	  .doc = "relative tolerance of the comparison (default: the precision's own)" },
	{ KEY("eval.perf_trials", K_INT, eval.perf_trials), .def = "100", .lo = 1, .hi = 10000,
	  .doc = "timed calls of the reference and the candidate per pass" },
	{ KEY("eval.warmup", K_INT, eval.warmup), .def = "3", .lo = 0, .hi = 1000,
	  .doc = "untimed calls before timing" },
	{ KEY("eval.seed", K_INT, eval.seed), .def = "42", .lo = LONG_MIN, .hi = LONG_MAX,
	  .doc = "the seed of inputs and weights" },
	{ KEY("eval.compile_timeout_s", K_INT, eval.compile_timeout_s), .def = "900",
	  .lo = 1, .hi = 7200,
	  .doc = "seconds a candidate's build may take" },
	{ KEY("eval.timeout_s", K_INT, eval.timeout_s), .def = "300", .lo = 1, .hi = 86400,
	  .doc = "seconds an execution (correctness and timing) may take, from when the runner "
		 "has started (its start, torch's import, has an allowance of its own)" },
	{ KEY("eval.arch_list", K_STR, eval.arch_list), .def = "''",
	  .doc = "TORCH_CUDA_ARCH_LIST for builds ('' : the capabilities of the GPUs used)" },
	{ KEY("eval.baseline_compile", K_BOOL, eval.baseline_compile), .def = "false",
	  .doc = "also time the reference under torch.compile" },
	{ KEY("eval.allow_tf32", K_BOOL, eval.allow_tf32), .def = "false",
	  .doc = "allow TF32 matmuls and convolutions in fp32 (reference and candidate alike)" },
	{ KEY("eval.timing", K_ENUM, eval.timing), .def = "cuda_event", .allowed = timing_methods,
	  .doc = "how calls are timed: CUDA events, host clock, or triton's do_bench" },
	{ KEY("eval.l2_flush", K_BOOL, eval.l2_flush), .def = "true",
	  .doc = "flush the GPU's L2 cache before each timed call" },
	{ KEY("eval.timing_preset", K_ENUM, eval.timing_preset), .def = "robust",
	  .allowed = fb_timing_presets,
	  .doc = "how speeds are measured: robust (the reference timed between the candidate's "
		 "blocks of calls, fresh inputs every call, medians, a hold on a GPU, passes until "
		 "the interval is tight) or kernelbench (KernelBench's method exactly)" },
	{ KEY("eval.timing_hold_us", K_INT, eval.timing_hold_us), .def = "-1", .lo = -1,
	  .hi = 100000,
	  .doc = "cuda_event: microseconds the GPU spins before each timed call, so that the "
		 "call's launches are all queued first and the events time the GPU's work alone, "
		 "not the host's pace (-1: the preset's, 1000 for robust; 0: none, KernelBench's)" },
	{ KEY("eval.speedup", K_ENUM, eval.speedup), .def = "auto", .allowed = speedup_statistics,
	  .doc = "the speedup as the ratio of the reference's and the candidate's means or "
		 "medians (auto: the preset's, medians for robust and means for kernelbench)" },
	{ KEY("eval.inputs", K_ENUM, eval.inputs), .def = "host", .allowed = input_places,
	  .doc = "where each trial's inputs are made: on the host then copied, or on the device" },
	{ KEY("eval.format", K_ENUM, eval.format), .def = "load_inline", .allowed = build_formats,
	  .doc = "how candidates build: torch's load_inline, or raw extern \"C\" launchers" },
	{ KEY("eval.backend", K_ENUM, eval.backend), .def = "cuda", .allowed = backends,
	  .doc = "what kernels are written in on a GPU: CUDA C++, or Triton (eval.device cuda, Triton importable)" },
	{ KEY("eval.torch_ops", K_ENUM, eval.torch_ops), .def = "warning", .allowed = severities,
	  .doc = "what PyTorch compute doing the work in forward makes a turn: suspect or rejected" },
	{ KEY("eval.static_checks", K_BOOL, eval.static_checks), .def = "true",
	  .doc = "run the static checks before the build" },
	{ KEY("gpus.devices", K_DEVICES, gpus.devices), .def = "all",
	  .doc = "the GPUs used: all, or a list of indices" },
	{ KEY("gpus.lock_clocks", K_BOOL, gpus.lock_clocks), .def = "false",
	  .doc = "hold each GPU's SM clock at its maximum for the run (nvidia-smi -lgc, where "
		 "the host permits it; given back at the end): timings then move less; off, a "
		 "GPU's clocks are its owner's setting" },
	{ KEY("runner.python", K_STR, runner.python), .def = "''",
	  .doc = "the Python that runs the runner ('' : $KFORGE_PYTHON, else the first with torch)" },
	{ KEY("runner.compile_slots", K_INT, runner.compile_slots), .def = "0",
	  .lo = 0, .hi = 1024,
	  .doc = "builds at once (0: half the cores, at least one)" },
	{ KEY("runner.cpu_exec_slots", K_INT, runner.cpu_exec_slots), .def = "1",
	  .lo = 1, .hi = 64,
	  .doc = "CPU executions at once when eval.device is cpu" },
	{ KEY("runner.max_host_memory_mb", K_INT, runner.max_host_memory_mb), .def = "0",
	  .lo = 0, .hi = 1L << 30,
	  .doc = "memory one runner's processes may hold, in MiB (0: half the machine's RAM)" },
	{ KEY("runner.user", K_USER, runner.user), .def = "nobody",
	  .doc = "the user runners run as ('' keeps the caller)" },
	{ KEY("runner.isolate_network", K_BOOL, runner.isolate_network), .def = "true",
	  .doc = "run runners in a network namespace with no network" },
	{ KEY("runner.sandbox", K_ENUM, runner.sandbox), .def = "strict",
	  .allowed = sandbox_modes,
	  .doc = "the runners' Landlock and seccomp sandbox: strict refuses to run where the "
		 "kernel lacks a layer (kforge doctor names it), best_effort runs with what "
		 "there is and records the warning in run.json" },
	{ KEY("runner.selftest", K_BOOL, runner.selftest), .def = "true",
	  .doc = "build and run a tiny extension before any model request" },
	{ KEY("runner.fast_build", K_BOOL, runner.fast_build), .def = "true",
	  .doc = "faster builds: arch list from the GPUs, parallel units, a precompiled header" },
	{ KEY("runner.warm", K_BOOL, runner.warm), .def = "true",
	  .doc = "keep a runner with torch imported waiting for the next step" },
	{ KEY("runner.server_idle_s", K_INT, runner.server_idle_s), .def = "600",
	  .lo = 0, .hi = 86400,
	  .doc = "how long the fork server (torch imported) of kforge eval and kforge baseline "
		 "waits for the next one, in seconds (0: ended with its command)" },
	{ KEY("runner.cache_max_gb", K_INT, runner.cache_max_gb), .def = "20",
	  .lo = 1, .hi = 1L << 20,
	  .doc = "the size of the shared build cache before old builds are removed" },
	{ KEY("runner.rlimit_cpu_s", K_INT, runner.rlimit_cpu_s), .def = "0",
	  .lo = 0, .hi = 10000000,
	  .doc = "CPU seconds a runner may use (0: no limit)" },
	{ KEY("runner.rlimit_fsize_mb", K_INT, runner.rlimit_fsize_mb), .def = "1024",
	  .lo = 1, .hi = 1048576,
	  .doc = "the largest file a runner may write, in MiB" },
	{ KEY("runner.rlimit_nofile", K_INT, runner.rlimit_nofile), .def = "1024",
	  .lo = 64, .hi = 1048576,
	  .doc = "file descriptors a runner may hold" },
	{ KEY("cache.dir", K_PATH, cache.dir), .def = "''",
	  .doc = "the build and baseline cache shared by runs and kforge eval ('': "
		 "$KFORGE_CACHE_DIR, else /var/tmp/kforge-cache-<uid>); on a shared filesystem "
		 "every Slurm shard uses one (locks hold across hosts; a baseline's key names "
		 "the device model)" },
	{ KEY("workers", K_INT, workers), .def = "16", .lo = 1, .hi = 4096,
	  .doc = "tasks worked on at once" },
	{ KEY("cluster.engine", K_ENUM, cluster.engine), .def = "local",
	  .allowed = cluster_engines,
	  .doc = "where the run's supervisors run: local (this host) or slurm (one sbatch job "
		 "array; each element a shard on its node's GPUs, taking tasks from a queue in "
		 "the run directory, which every node must see)" },
	{ KEY("cluster.shards", K_INT, cluster.shards), .def = "2", .lo = 1, .hi = 10000,
	  .doc = "slurm: the job array's elements, each a supervisor with `workers` workers" },
	{ KEY("cluster.partition", K_STR, cluster.partition), .def = "''",
	  .doc = "slurm: sbatch --partition ('' leaves Slurm's default)" },
	{ KEY("cluster.account", K_STR, cluster.account), .def = "''",
	  .doc = "slurm: sbatch --account ('' leaves Slurm's default)" },
	{ KEY("cluster.gres", K_STR, cluster.gres), .def = "''",
	  .doc = "slurm: sbatch --gres per shard, e.g. gpu:8 ('' asks for none)" },
	{ KEY("cluster.cpus_per_shard", K_INT, cluster.cpus_per_shard), .def = "0",
	  .lo = 0, .hi = 100000,
	  .doc = "slurm: sbatch --cpus-per-task (0 leaves Slurm's default)" },
	{ KEY("cluster.mem", K_STR, cluster.mem), .def = "''",
	  .doc = "slurm: sbatch --mem per shard, e.g. 64G ('' leaves Slurm's default)" },
	{ KEY("cluster.time_limit", K_STR, cluster.time_limit), .def = "''",
	  .doc = "slurm: sbatch --time per shard, e.g. 04:00:00; warned 120 s before it "
		 "(SIGUSR1), a shard stops at a safe point and, with cluster.requeue, requeues "
		 "itself and resumes where it was" },
	{ KEY("cluster.sbatch_args", K_ARGV, cluster.sbatch_args), .def = "[]",
	  .flags = F_OPTIONS,
	  .doc = "slurm: more sbatch options, one per item (e.g. [--qos=high, --exclusive])" },
	{ KEY("cluster.requeue", K_BOOL, cluster.requeue), .def = "true",
	  .doc = "slurm: a preempted or failed shard is requeued (sbatch --requeue), one "
		 "warned of its time limit requeues itself, and each takes back its own tasks" },
	{ KEY("cluster.claim_timeout_s", K_INT, cluster.claim_timeout_s), .def = "120",
	  .lo = 2, .hi = 86400,
	  .doc = "slurm: a shard whose heartbeat stays unchanged this long is taken for dead "
		 "and its tasks go to the other shards" },
	{ KEY("redteam.enabled", K_BOOL, redteam.enabled), .def = "false",
	  .doc = "a red-team run (kforge redteam sets it): the prompt asks for kernels the "
		 "evaluator judges correct and faster without being so, and its fast_p measures "
		 "the evaluator, not kernels" },
	/* hi: far past any speedup a timing gives, so any threshold a user means fits */
	{ KEY("redteam.min_speedup", K_NUM, redteam.min_speedup), .def = "1.5", .dlo = 0,
	  .dhi = 1e6,
	  .doc = "red-team runs: candidates judged correct (or suspect) with at least this "
		 "speedup are kept under the run's redteam/ for review" },
};
#define NKEYS	((int)(sizeof(schema) / sizeof(schema[0])))

/* Keys required (and not empty) for a provider beyond a schema entry's own when/is. */
static const struct {
	const char	*path, *when, *is;
} required_also[] = {
	{ "llm.model", "llm.provider", "anthropic" },
	{ "llm.command", "llm.provider", "command" },
	{ "llm.command", "llm.provider", "agent" },
};

/* --------------------------------------------------------------- context */

/* Where a value came from, for messages: a line:column in the file or a --set arg. */
struct cfg_loc {
	const char	*set_arg;	/* non-NULL: from --set */
	unsigned long	 line, col;	/* 1-based; 0: no position */
};

struct cfg_ctx {
	struct kb_config	*c;
	const char		*name;		/* the file as the user named it */
	const char		*file_dir;	/* relative paths in the file resolve here */
	const char		*set_arg;	/* reading a --set value */
	yaml_document_t		*doc;
	char			 path[CFG_KEY_MAX];	/* the key being read */
	bool			 seen[NKEYS];
	struct cfg_loc		 where[NKEYS];
	char			*err;
	size_t			 errlen;
};

typedef int (*cfg_set_fn)(struct cfg_ctx *x, const struct cfg_key *k, yaml_node_t *n);
typedef void (*cfg_emit_fn)(const struct kb_config *c, const struct cfg_key *k, FILE *fp);

/* Where a message is about: "--set ARG", "FILE:LINE:COL", or "FILE" alone. */
static int
loc_text(const struct cfg_ctx *x, const struct cfg_loc *loc, char *buf, size_t len)
{
	if (loc != NULL && loc->set_arg != NULL)
		return snprintf(buf, len, "--set %s", loc->set_arg);
	if (loc != NULL && loc->line > 0)
		return snprintf(buf, len, "%s:%lu:%lu", x->name, loc->line, loc->col);
	return snprintf(buf, len, "%s", x->name);
}

/* One message line; control characters (from keys, values or the file name) become
 * '?' so the message stays one line. */
static int
cfg_verr(struct cfg_ctx *x, const struct cfg_loc *loc, const char *path, const char *fmt,
	 va_list ap)
{
	size_t	n = 0;
	int	m;

	if (x->errlen == 0)
		return -KB_ECONFIG;
	m = loc_text(x, loc, x->err, x->errlen);
	if (m >= 0 && (size_t)m < x->errlen)
		m += snprintf(x->err + m, x->errlen - (size_t)m, ": ");
	if (m > 0)
		n = (size_t)m < x->errlen ? (size_t)m : x->errlen - 1;
	if (path != NULL && path[0] != '\0' && n < x->errlen) {
		m = snprintf(x->err + n, x->errlen - n, "%s: ", path);
		if (m > 0)
			n = n + (size_t)m < x->errlen ? n + (size_t)m : x->errlen - 1;
	}
	if (n < x->errlen)
		vsnprintf(x->err + n, x->errlen - n, fmt, ap);
	for (char *p = x->err; *p != '\0'; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
	return -KB_ECONFIG;
}

static struct cfg_loc
node_loc(const struct cfg_ctx *x, const yaml_node_t *n)
{
	struct cfg_loc	loc = { x->set_arg, 0, 0 };

	if (n != NULL && x->set_arg == NULL) {
		loc.line = (unsigned long)n->start_mark.line + 1;
		loc.col = (unsigned long)n->start_mark.column + 1;
	}
	return loc;
}

/* An error about node n (may be NULL) of the key being read. */
static int __attribute__((format(printf, 3, 4)))
node_err(struct cfg_ctx *x, const yaml_node_t *n, const char *fmt, ...)
{
	struct cfg_loc	loc = node_loc(x, n);
	va_list		ap;
	int		rc;

	va_start(ap, fmt);
	rc = cfg_verr(x, &loc, x->path, fmt, ap);
	va_end(ap);
	return rc;
}

static int __attribute__((format(printf, 4, 5)))
loc_err(struct cfg_ctx *x, const struct cfg_loc *loc, const char *path, const char *fmt, ...)
{
	va_list	ap;
	int	rc;

	va_start(ap, fmt);
	rc = cfg_verr(x, loc, path, fmt, ap);
	va_end(ap);
	return rc;
}

/* ------------------------------------------------------------ node views */

static bool
is_quoted(const yaml_node_t *n)
{
	return n->data.scalar.style == YAML_SINGLE_QUOTED_SCALAR_STYLE ||
	       n->data.scalar.style == YAML_DOUBLE_QUOTED_SCALAR_STYLE;
}

static const char *
scalar(const yaml_node_t *n)
{
	return (const char *)n->data.scalar.value;
}

/* Whether n is the scalar word (quoted or not). */
static bool
scalar_is(const yaml_node_t *n, const char *word)
{
	return n->type == YAML_SCALAR_NODE && n->data.scalar.length == strlen(word) &&
	       memcmp(n->data.scalar.value, word, n->data.scalar.length) == 0;
}

/* Length of the UTF-8 sequence at p and its code point in *cp; 0 when it is not valid
 * UTF-8 (overlong, surrogate, beyond U+10FFFF, cut short). */
static size_t
utf8_next(const unsigned char *p, unsigned long *cp)
{
	static const unsigned long min[] = { 0, 0, 0x80, 0x800, 0x10000 };
	size_t	len = p[0] < 0x80 ? 1 : (p[0] & 0xe0) == 0xc0 ? 2 : (p[0] & 0xf0) == 0xe0 ? 3 :
		      (p[0] & 0xf8) == 0xf0 ? 4 : 0;
	unsigned long v;

	if (len <= 1) {
		*cp = p[0];
		return len;
	}
	v = p[0] & (0x7f >> len);
	for (size_t i = 1; i < len; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		v = (v << 6) | (p[i] & 0x3f);
	}
	if (v < min[len] || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
		return 0;
	*cp = v;
	return len;
}

static bool
utf8_valid(const char *s)
{
	unsigned long	cp;
	size_t		len;

	for (const unsigned char *p = (const unsigned char *)s; *p != '\0'; p += len)
		if ((len = utf8_next(p, &cp)) == 0)
			return false;
	return true;
}

/* YAML's null: an empty or ~/null plain scalar. */
static bool
is_null(const yaml_node_t *n)
{
	static const char *const nulls[] = { "", "~", "null", "Null", "NULL" };

	if (n->type != YAML_SCALAR_NODE || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
		return false;
	for (size_t i = 0; i < sizeof(nulls) / sizeof(nulls[0]); i++)
		if (strcmp(scalar(n), nulls[i]) == 0)
			return true;
	return false;
}

/* Text for "..., got X": 'value' (cut at CFG_SHOW_MAX bytes on a UTF-8 boundary),
 * "a list", "a mapping" or "an empty value". With quotes, a quoted scalar shows its
 * quotes, for kinds where quoting changes the type. */
static const char *
got(const yaml_node_t *n, bool quotes, char *buf, size_t len)
{
	const char	*s, *q;
	size_t		 take;

	if (n->type == YAML_SEQUENCE_NODE)
		return "a list";
	if (n->type == YAML_MAPPING_NODE)
		return "a mapping";
	s = scalar(n);
	if (s[0] == '\0' && !is_quoted(n))
		return "an empty value";
	take = strlen(s);
	if (take > CFG_SHOW_MAX) {
		take = CFG_SHOW_MAX;
		while (take > 0 && ((unsigned char)s[take] & 0xc0) == 0x80)
			take--;
	}
	q = quotes && is_quoted(n) ? "\"" : "";
	snprintf(buf, len, "'%s%.*s%s%s'", q, (int)take, s, take < strlen(s) ? "..." : "", q);
	return buf;
}

static yaml_node_t *
node_at(struct cfg_ctx *x, int index)
{
	return yaml_document_get_node(x->doc, index);
}

/* Calls fn on n, or on each item when n is a list. */
static int
each_item(struct cfg_ctx *x, yaml_node_t *n, int (*fn)(struct cfg_ctx *, yaml_node_t *, void *),
	  void *arg)
{
	int	rc;

	if (n->type != YAML_SEQUENCE_NODE)
		return fn(x, n, arg);
	for (yaml_node_item_t *it = n->data.sequence.items.start; it < n->data.sequence.items.top;
	     it++)
		if ((rc = fn(x, node_at(x, *it), arg)) < 0)
			return rc;
	return 0;
}

/* A scalar that is text of the kind `noun` names: not a list, not null, no NUL byte,
 * not longer than CFG_PATH_MAX - 1. */
static int
text_of(struct cfg_ctx *x, yaml_node_t *n, const char *noun, const char **out)
{
	char	buf[CFG_SHOW_MAX + 16];

	if (n->type != YAML_SCALAR_NODE || is_null(n))
		return node_err(x, n, "expected %s, got %s", noun, got(n, false, buf, sizeof(buf)));
	if (strlen(scalar(n)) != n->data.scalar.length)
		return node_err(x, n, "expected %s, got text with a NUL byte", noun);
	if (n->data.scalar.length >= CFG_PATH_MAX)
		return node_err(x, n, "expected %s of at most %d bytes, got %zu bytes", noun,
				CFG_PATH_MAX - 1, n->data.scalar.length);
	*out = scalar(n);
	return 0;
}

static bool
looks_integer(const char *s)
{
	if (*s == '+' || *s == '-')
		s++;
	if (*s == '\0')
		return false;
	for (; *s != '\0'; s++)
		if (*s < '0' || *s > '9')
			return false;
	return true;
}

/* YAML's decimal float (no .inf/.nan, no hex). */
static bool
looks_number(const char *s)
{
	bool	digits = false;

	if (*s == '+' || *s == '-')
		s++;
	for (; *s >= '0' && *s <= '9'; s++)
		digits = true;
	if (*s == '.')
		for (s++; *s >= '0' && *s <= '9'; s++)
			digits = true;
	if (!digits)
		return false;
	if (*s == 'e' || *s == 'E') {
		s++;
		if (*s == '+' || *s == '-')
			s++;
		if (*s < '0' || *s > '9')
			return false;
		while (*s >= '0' && *s <= '9')
			s++;
	}
	return *s == '\0';
}

/* An integer scalar in lo..hi. */
static int
node_long(struct cfg_ctx *x, yaml_node_t *n, long lo, long hi, long *out)
{
	char	buf[CFG_SHOW_MAX + 16];
	long	v;

	if (n->type != YAML_SCALAR_NODE || is_quoted(n) || !looks_integer(scalar(n)) ||
	    kb_parse_int(scalar(n), lo, hi, &v) < 0)
		return node_err(x, n, "expected an integer in %ld..%ld, got %s", lo, hi,
				got(n, true, buf, sizeof(buf)));
	*out = v;
	return 0;
}

static void *
field(struct kb_config *c, const struct cfg_key *k)
{
	return (char *)c + k->off;
}

static const void *
cfield(const struct kb_config *c, const struct cfg_key *k)
{
	return (const char *)c + k->off;
}

static void
store_string(struct kb_config *c, const struct cfg_key *k, const char *s)
{
	char	**slot = field(c, k);

	free(*slot);
	*slot = kb_strdup(s);
}

/* ------------------------------------------------------- setters by kind */

static int
set_str(struct cfg_ctx *x, const struct cfg_key *k, yaml_node_t *n)
{
	const char	*s;
	int		 rc;

	if ((rc = text_of(x, n, "a string", &s)) < 0)
		return rc;
	if ((k->flags & F_NONEMPTY) && s[0] == '\0')
		return node_err(x, n, "expected a non-empty string, got ''");
	store_string(x->c, k, s);
	return 0;
}

#define UPPER	"ABCDEFGHIJKLMNOPQRSTUVWXYZ"
#define LOWER	"abcdefghijklmnopqrstuvwxyz"
#define DIGITS	"0123456789"

static int
set_name(struct cfg_ctx *x, const struct cfg_key *k, yaml_node_t *n)
{
	const char	*s;
	char		 buf[CFG_SHOW_MAX + 16];
	int		 rc;

	if ((rc = text_of(x, n, "a name", &s)) < 0)
		return rc;
	if (s[0] == '\0' || strlen(s) > 64 || strspn(s, UPPER LOWER DIGITS "._-") != strlen(s))
		return node_err(x, n, "expected 1 to 64 characters from A-Z a-z 0-9 . _ -, got %s",
				got(n, false, buf, sizeof(buf)));
	store_string(x->c, k, s);
	return 0;
}

static int
set_envname(struct cfg_ctx *x, const struct cfg_key *k, yaml_node_t *n)
{
	const char	*s;
	char		 buf[CFG_SHOW_MAX + 16];
	int		 rc;

	if ((rc = text_of(x, n, "an environment variable name", &s)) < 0)
		return rc;
	if (strlen(s) > 128 || strspn(s, UPPER DIGITS "_") != strlen(s) ||
	    (s[0] >= '0' && s[0] <= '9'))
		return node_err(x, n, "expected an environment variable name (A-Z 0-9 _), got %s",
				got(n, false, buf, sizeof(buf)));
	store_string(x->c, k, s);
	return 0;
}

static int
set_user(struct cfg_ctx *x, const struct cfg_key *k, yaml_node_t *n)
{
	const char	*s;
	char		 buf[CFG_SHOW_MAX + 16];
	int		 rc;

	if ((rc = text_of(x, n, "a user name", &s)) < 0)
		return rc;
	if (strlen(s) > 32 || strspn(s, UPPER LOWER DIGITS "._-") != strlen(s) || s[0] == '-')
		return node_err(x, n, "expected a user name (A-Z a-z 0-9 . _ -, at most 32) or '', "
				"got %s", got(n, false, buf, sizeof(buf)));
	store_string(x->c, k, s);
	return 0;
}

static int
set_bool(struct cfg_ctx *x, const struct cfg_key *k, yaml_node_t *n)
{
	char	buf[CFG_SHOW_MAX + 16];

	/* Only the two words: YAML 1.1's yes/no/on/off are a classic source of surprises. */
	if (n->type == YAML_SCALAR_NODE && !is_quoted(n) &&
	    (scalar_is(n, "true") || scalar_is(n, "false"))) {
		*(bool *)field(x->c, k) = scalar_is(n, "true");
		return 0;
	}
	return node_err(x, n, "expected true or false, got %s", got(n, true, buf, sizeof(buf)));
}

/* Collapses "//" and "/./" and drops a trailing "/" or "/." ("..", whose meaning
 * depends on symlinks, is kept). */
static void
path_tidy(char *p)
{
	char	*w = p;

	for (const char *r = p; *r != '\0';) {
		if (r[0] == '/' && (r[1] == '/' || r[1] == '\0') && w > p) {
			r++;
			continue;
		}
		if (r[0] == '/' && r[1] == '.' && (r[2] == '/' || r[2] == '\0')) {
			r += 2;
			if (*r == '\0' && w == p)
				*w++ = '/';
			continue;
		}
		*w++ = *r++;
	}
	if (w > p + 1 && w[-1] == '/')
		w--;
	*w = '\0';
}

static int
set_path(struct cfg_ctx *x, const struct cfg_key *k, yaml_node_t *n)
{
	char		 abs[CFG_PATH_MAX], cwd[CFG_PATH_MAX];
	const char	*s, *base, *home;
	int		 rc;

	if ((rc = text_of(x, n, "a path", &s)) < 0)
		return rc;
	if (s[0] == '\0') {
		if (k->flags & F_NONEMPTY)
			return node_err(x, n, "expected a path, got ''");
		store_string(x->c, k, "");
		return 0;
	}
	if (s[0] == '~') {
		if (s[1] != '\0' && s[1] != '/')
			return node_err(x, n, "'~user' paths are not supported, got '%.*s'",
					CFG_SHOW_MAX, s);
		home = getenv("HOME");
		if (home == NULL || home[0] != '/')
			return node_err(x, n, "cannot expand '~': HOME is not set to an absolute path");
		rc = kb_path_join(abs, sizeof(abs), home, s[1] == '/' ? s + 2 : "");
	} else if (s[0] == '/') {
		rc = kb_path_join(abs, sizeof(abs), "/", s);
	} else {
		base = x->set_arg == NULL ? x->file_dir : NULL;
		if (base == NULL) {
			if (getcwd(cwd, sizeof(cwd)) == NULL)
				return node_err(x, n, "cannot resolve '%.*s': current directory: %s",
						CFG_SHOW_MAX, s, strerror(errno));
			base = cwd;
		}
		rc = kb_path_join(abs, sizeof(abs), base, s);
	}
	if (rc < 0)
		return node_err(x, n, "path longer than %d bytes", CFG_PATH_MAX - 1);
	/* HOME or the cwd may hold bytes that YAML, and so the frozen config, cannot */
	if (!utf8_valid(abs))
		return node_err(x, n, "'%s' is not valid UTF-8", abs);
	path_tidy(abs);
	store_string(x->c, k, abs);
	return 0;
}

/* A K_ENUM key's values: its own list, or the one its module keeps. */
static const char *const *
allowed_of(const struct cfg_key *k)
{
	return k->allowed_of != NULL ? k->allowed_of() : k->allowed;
}

static int
set_enum(struct cfg_ctx *x, const struct cfg_key *k, yaml_node_t *n)
{
	char		 list[256] = "", buf[CFG_SHOW_MAX + 16];
	const char	*s;
	size_t		 used = 0;

	if (n->type == YAML_SCALAR_NODE && !is_null(n)) {
		s = scalar(n);
		for (const char *const *a = allowed_of(k); *a != NULL; a++)
			if (strcmp(s, *a) == 0 && strlen(s) == n->data.scalar.length) {
				store_string(x->c, k, s);
				return 0;
			}
	}
	for (const char *const *a = allowed_of(k); *a != NULL && used < sizeof(list); a++) {
		int	m = snprintf(list + used, sizeof(list) - used, "%s%s",
				     a == allowed_of(k) ? "" : ", ", *a);

		used += m > 0 ? (size_t)m : 0;
	}
	return node_err(x, n, "expected one of %s, got %s", list, got(n, false, buf, sizeof(buf)));
}

static int
set_int(struct cfg_ctx *x, const struct cfg_key *k, yaml_node_t *n)
{
	long	v;
	int	rc;

	if ((rc = node_long(x, n, k->lo, k->hi, &v)) < 0)
		return rc;
	if (k->size == sizeof(int))
		*(int *)field(x->c, k) = (int)v;
	else
		*(long *)field(x->c, k) = v;
	return 0;
}

static int
set_num(struct cfg_ctx *x, const struct cfg_key *k, yaml_node_t *n)
{
	char		 buf[CFG_SHOW_MAX + 16], range[64];
	const char	*s;
	double		 v;

	if (k->dhi == HUGE_VAL)
		snprintf(range, sizeof(range), " >= %g", k->dlo);
	else
		snprintf(range, sizeof(range), " in %g..%g", k->dlo, k->dhi);
	if ((k->flags & F_DEFAULT_WORD) && scalar_is(n, "default")) {
		*(double *)field(x->c, k) = -1;
		return 0;
	}
	s = n->type == YAML_SCALAR_NODE ? scalar(n) : "";
	if (n->type != YAML_SCALAR_NODE || is_quoted(n) || !looks_number(s))
		goto bad;
	errno = 0;
	v = strtod(s, NULL);
	if (errno != 0 || !isfinite(v) || v < k->dlo || v > k->dhi)
		goto bad;
	*(double *)field(x->c, k) = v;
	return 0;
bad:
	return node_err(x, n, "expected a number%s%s, got %s", range,
			(k->flags & F_DEFAULT_WORD) ? " or 'default'" : "",
			got(n, true, buf, sizeof(buf)));
}

static int
add_level(struct cfg_ctx *x, yaml_node_t *n, void *arg)
{
	struct kb_config	*c = arg;
	long			 v;
	int			 rc;

	if ((rc = node_long(x, n, 1, KB_MAX_LEVELS, &v)) < 0)
		return rc;
	for (int i = 0; i < c->problems.nlevels; i++)
		if (c->problems.levels[i] == v)
			return node_err(x, n, "duplicate level %ld", v);
	/* 1..KB_MAX_LEVELS without duplicates cannot overflow KB_MAX_LEVELS */
	c->problems.levels[c->problems.nlevels++] = (int)v;
	return 0;
}

static int
cmp_int(const void *a, const void *b)
{
	return (*(const int *)a > *(const int *)b) - (*(const int *)a < *(const int *)b);
}

static int
set_levels(struct cfg_ctx *x, const struct cfg_key *k, yaml_node_t *n)
{
	struct kb_config	*c = x->c;
	int			 rc;

	(void)k;
	c->problems.nlevels = 0;
	if (n->type == YAML_MAPPING_NODE)
		return node_err(x, n, "expected a level or a list of levels, got a mapping");
	if ((rc = each_item(x, n, add_level, c)) < 0)
		return rc;
	if (c->problems.nlevels == 0)
		return node_err(x, n, "expected at least one level, got an empty list");
	qsort(c->problems.levels, (size_t)c->problems.nlevels, sizeof(int), cmp_int);
	return 0;
}

/* Parses one ids text: "all" (whole only), "7", "1-100", "1,3,5-9". */
static int
add_id_text(struct cfg_ctx *x, yaml_node_t *n, const char *s)
{
	struct kb_config	*c = x->c;
	char			 buf[CFG_SHOW_MAX + 16];
	const char		*p = s;

	for (;;) {
		const char	*start;
		long		 lo, hi;
		char		*end;

		while (*p == ' ')
			p++;
		start = p;
		if (*p < '0' || *p > '9' || strspn(p, "0123456789") > 9)
			goto bad;
		lo = hi = strtol(p, &end, 10);
		p = end;
		while (*p == ' ')
			p++;
		if (*p == '-') {
			p++;
			while (*p == ' ')
				p++;
			if (*p < '0' || *p > '9' || strspn(p, "0123456789") > 9)
				goto bad;
			hi = strtol(p, &end, 10);
			p = end;
			if (lo > hi)
				return node_err(x, n, "bad id range '%.*s': %ld is greater than %ld",
						(int)(p - start), start, lo, hi);
			while (*p == ' ')
				p++;
		}
		if (c->problems.nids == KB_MAX_RANGES)
			return node_err(x, n, "more than %d id ranges", KB_MAX_RANGES);
		c->problems.ids[c->problems.nids++] = (struct kb_id_range){ lo, hi };
		if (*p == '\0')
			return 0;
		if (*p++ != ',')
			goto bad;
	}
bad:
	return node_err(x, n, "expected ids like 7, '1-100' or '1,3,5-9', got %s",
			got(n, false, buf, sizeof(buf)));
}

static int
add_ids(struct cfg_ctx *x, yaml_node_t *n, void *arg)
{
	const char	*s;
	char		 buf[CFG_SHOW_MAX + 16];
	int		 rc;

	(void)arg;
	if (n->type != YAML_SCALAR_NODE)
		return node_err(x, n, "expected ids like 7, '1-100' or '1,3,5-9', got %s",
				got(n, false, buf, sizeof(buf)));
	if ((rc = text_of(x, n, "ids", &s)) < 0)
		return rc;
	return add_id_text(x, n, s);
}

static int
set_ids(struct cfg_ctx *x, const struct cfg_key *k, yaml_node_t *n)
{
	int	rc;

	(void)k;
	x->c->problems.nids = 0;
	if (scalar_is(n, "all"))
		return 0;
	if ((rc = each_item(x, n, add_ids, NULL)) < 0)
		return rc;
	if (x->c->problems.nids == 0)
		return node_err(x, n, "expected 'all' or at least one id, got an empty list");
	return 0;
}

static int
add_feedback(struct cfg_ctx *x, yaml_node_t *n, void *arg)
{
	struct kb_config	*c = x->c;
	bool			*list = arg;	/* the node is a list item: one letter */
	const char		*s;
	char			 buf[CFG_SHOW_MAX + 16];
	int			 rc, letters = 0;

	if ((rc = text_of(x, n, "feedback letters", &s)) < 0)
		return rc;
	for (const char *p = s; *p != '\0'; p++) {
		bool	*flag;

		switch (*p) {
		case 'G': case 'g': flag = &c->refinement.feedback_g; break;
		case 'E': case 'e': flag = &c->refinement.feedback_e; break;
		case 'P': case 'p': flag = &c->refinement.feedback_p; break;
		case ',': case ' ':
			if (!*list)
				continue;
			/* FALLTHROUGH */
		default:
			return node_err(x, n, "expected a subset of G, E, P, got %s",
					got(n, false, buf, sizeof(buf)));
		}
		if (*flag)
			return node_err(x, n, "duplicate feedback letter '%c'", *p);
		*flag = true;
		letters++;
	}
	if (*list && letters != 1)
		return node_err(x, n, "expected one of G, E, P, got %s",
				got(n, false, buf, sizeof(buf)));
	return 0;
}

static int
set_feedback(struct cfg_ctx *x, const struct cfg_key *k, yaml_node_t *n)
{
	bool	list = n->type == YAML_SEQUENCE_NODE;

	(void)k;
	x->c->refinement.feedback_g = x->c->refinement.feedback_e = false;
	x->c->refinement.feedback_p = false;
	if (n->type == YAML_MAPPING_NODE)
		return node_err(x, n, "expected a list of G, E, P, got a mapping");
	return each_item(x, n, add_feedback, &list);
}

static int
add_device(struct cfg_ctx *x, yaml_node_t *n, void *arg)
{
	struct kb_config	*c = arg;
	long			 v;
	int			 rc;

	if ((rc = node_long(x, n, 0, KB_MAX_DEVICES - 1, &v)) < 0)
		return rc;
	for (int i = 0; i < c->gpus.ndevices; i++)
		if (c->gpus.devices[i] == v)
			return node_err(x, n, "duplicate GPU %ld", v);
	c->gpus.devices[c->gpus.ndevices++] = (int)v;
	return 0;
}

static int
set_devices(struct cfg_ctx *x, const struct cfg_key *k, yaml_node_t *n)
{
	struct kb_config	*c = x->c;
	char			 buf[CFG_SHOW_MAX + 16];
	int			 rc;

	(void)k;
	c->gpus.all = false;
	c->gpus.ndevices = 0;
	if (scalar_is(n, "all")) {
		c->gpus.all = true;
		return 0;
	}
	if (n->type == YAML_MAPPING_NODE ||
	    (n->type == YAML_SCALAR_NODE && !looks_integer(scalar(n))))
		return node_err(x, n, "expected 'all' or a list of GPU indices, got %s",
				got(n, false, buf, sizeof(buf)));
	if ((rc = each_item(x, n, add_device, c)) < 0)
		return rc;
	if (c->gpus.ndevices == 0)
		return node_err(x, n, "expected 'all' or at least one GPU, got an empty list");
	return 0;
}

/* ------------------------------------------------------- emitters by kind */

/* A double-quoted YAML scalar. Characters YAML does not allow raw in a document, or
 * reads as line breaks (U+0085, U+2028, U+2029), are escaped. */
static void
emit_quoted(const char *s, FILE *fp)
{
	unsigned long	cp;
	size_t		len;

	fputc('"', fp);
	for (const unsigned char *p = (const unsigned char *)s; *p != '\0'; p += len) {
		if ((len = utf8_next(p, &cp)) == 0) {	/* not from the loader; keep the byte */
			fprintf(fp, "\\x%02x", *p);
			len = 1;
		} else if (cp == '"' || cp == '\\') {
			fprintf(fp, "\\%c", (int)cp);
		} else if (cp < 0x20 || (cp >= 0x7f && cp <= 0x9f)) {
			fprintf(fp, "\\x%02lx", cp);
		} else if (cp == 0x2028 || cp == 0x2029 || cp == 0xfeff || cp == 0xfffe ||
			   cp == 0xffff) {
			fprintf(fp, "\\u%04lx", cp);
		} else {
			fwrite(p, 1, len, fp);
		}
	}
	fputc('"', fp);
}

static void
emit_str(const struct kb_config *c, const struct cfg_key *k, FILE *fp)
{
	const char *s = *(char *const *)cfield(c, k);

	emit_quoted(s != NULL ? s : "", fp);
}

static void
emit_enum(const struct kb_config *c, const struct cfg_key *k, FILE *fp)
{
	const char *s = *(char *const *)cfield(c, k);

	fputs(s != NULL ? s : "", fp);
}

static void
emit_bool(const struct kb_config *c, const struct cfg_key *k, FILE *fp)
{
	fputs(*(const bool *)cfield(c, k) ? "true" : "false", fp);
}

static void
emit_int(const struct kb_config *c, const struct cfg_key *k, FILE *fp)
{
	long	v = k->size == sizeof(int) ? *(const int *)cfield(c, k) : *(const long *)cfield(c, k);

	fprintf(fp, "%ld", v);
}

/* The shortest %g that reads back to the same double. */
static void
emit_num(const struct kb_config *c, const struct cfg_key *k, FILE *fp)
{
	double	v = *(const double *)cfield(c, k);
	char	buf[64];

	if ((k->flags & F_DEFAULT_WORD) && v < 0) {
		fputs("default", fp);
		return;
	}
	for (int prec = 1; prec <= 17; prec++) {
		snprintf(buf, sizeof(buf), "%.*g", prec, v);
		if (strtod(buf, NULL) == v)
			break;
	}
	fputs(buf, fp);
	if (strpbrk(buf, ".e") == NULL)
		fputs(".0", fp);
}

void
orch_config_levels_text(const struct kb_config *c, char *buf, size_t len)
{
	size_t	used = 0;

	snprintf(buf, len, "[");
	for (int i = 0; i < c->problems.nlevels; i++) {
		used = strlen(buf);
		snprintf(buf + used, len - used, "%s%d", i ? ", " : "", c->problems.levels[i]);
	}
	used = strlen(buf);
	snprintf(buf + used, len - used, "]");
}

void
orch_config_ids_text(const struct kb_config *c, char *buf, size_t len)
{
	size_t	used;

	snprintf(buf, len, "%s", c->problems.nids == 0 ? "all" : "");
	for (int i = 0; i < c->problems.nids; i++) {
		const struct kb_id_range *r = &c->problems.ids[i];

		used = strlen(buf);
		if (r->lo == r->hi)
			snprintf(buf + used, len - used, "%s%ld", i ? "," : "", r->lo);
		else
			snprintf(buf + used, len - used, "%s%ld-%ld", i ? "," : "", r->lo, r->hi);
	}
}

bool
orch_config_id_selected(const struct kb_config *c, long id)
{
	if (c->problems.nids == 0)
		return true;
	for (int i = 0; i < c->problems.nids; i++)
		if (id >= c->problems.ids[i].lo && id <= c->problems.ids[i].hi)
			return true;
	return false;
}

static void
emit_levels(const struct kb_config *c, const struct cfg_key *k, FILE *fp)
{
	char	buf[64];

	(void)k;
	orch_config_levels_text(c, buf, sizeof(buf));
	fputs(buf, fp);
}

static void
emit_ids(const struct kb_config *c, const struct cfg_key *k, FILE *fp)
{
	char	buf[KB_MAX_RANGES * 24 + 8];

	(void)k;
	orch_config_ids_text(c, buf, sizeof(buf));
	if (c->problems.nids == 0)
		fputs(buf, fp);
	else
		emit_quoted(buf, fp);
}

static void
emit_feedback(const struct kb_config *c, const struct cfg_key *k, FILE *fp)
{
	const char	*sep = "";

	(void)k;
	fputc('[', fp);
	if (c->refinement.feedback_g) {
		fprintf(fp, "%sG", sep);
		sep = ", ";
	}
	if (c->refinement.feedback_e) {
		fprintf(fp, "%sE", sep);
		sep = ", ";
	}
	if (c->refinement.feedback_p)
		fprintf(fp, "%sP", sep);
	fputc(']', fp);
}

static void
emit_devices(const struct kb_config *c, const struct cfg_key *k, FILE *fp)
{
	(void)k;
	if (c->gpus.all) {
		fputs("all", fp);
		return;
	}
	fputc('[', fp);
	for (int i = 0; i < c->gpus.ndevices; i++)
		fprintf(fp, "%s%d", i ? ", " : "", c->gpus.devices[i]);
	fputc(']', fp);
}

static void
argv_free(char **argv)
{
	for (char **a = argv; a != NULL && *a != NULL; a++)
		free(*a);
	free(argv);
}

/* A program and its arguments, run without a shell: a list of non-empty strings whose
 * first is an absolute path or a bare name looked up on PATH when the program starts
 * (a relative path would depend on the directory kforge happens to run in). */
static int
set_argv(struct cfg_ctx *x, const struct cfg_key *k, yaml_node_t *n)
{
	char		**argv, ***slot = field(x->c, k), buf[CFG_SHOW_MAX + 16];
	const char	 *s;
	size_t		  count, i = 0;
	int		  rc;

	if (n->type != YAML_SEQUENCE_NODE)
		return node_err(x, n, "expected a list of strings (%s), got %s",
				k->flags & F_OPTIONS ? "options" : "a program and its arguments",
				got(n, false, buf, sizeof(buf)));
	count = (size_t)(n->data.sequence.items.top - n->data.sequence.items.start);
	if (count > CFG_ARGV_MAX)
		return node_err(x, n, "expected at most %d items, got %zu", CFG_ARGV_MAX, count);
	if ((argv = calloc(count + 1, sizeof(*argv))) == NULL)
		return -KB_ENOMEM;
	for (yaml_node_item_t *it = n->data.sequence.items.start; it < n->data.sequence.items.top;
	     it++, i++) {
		yaml_node_t *item = node_at(x, *it);

		if ((rc = text_of(x, item, "a string", &s)) < 0)
			goto out_free;
		if (k->flags & F_OPTIONS) {
			if (s[0] == '\0') {
				rc = node_err(x, item, "expected an option, got ''");
				goto out_free;
			}
		} else if (s[0] == '\0' && i == 0) {
			rc = node_err(x, item, "expected a program, got ''");
			goto out_free;
		}
		if (i == 0 && s[0] != '/' && strchr(s, '/') != NULL) {
			rc = node_err(x, item, "expected an absolute path or a name found on PATH, "
				      "got the relative path '%.*s'", CFG_SHOW_MAX, s);
			goto out_free;
		}
		argv[i] = kb_strdup(s);
	}
	argv_free(*slot);
	*slot = count > 0 ? argv : NULL;
	if (count == 0)
		free(argv);
	return 0;
out_free:
	argv_free(argv);
	return rc;
}

/* One item of a problems.exclude list: a problem key, appended to the ','-joined text. */
static int
add_key(struct cfg_ctx *x, yaml_node_t *n, void *arg)
{
	struct kb_buf	*keys = arg;
	const char	*s;
	char		 buf[CFG_SHOW_MAX + 16];
	int		 rc;

	if ((rc = text_of(x, n, "a problem key like L1_1_ReLU", &s)) < 0)
		return rc;
	if (!orch_problem_key_valid(s))
		return node_err(x, n, "expected a problem key like L1_1_ReLU (L{level}_{file "
				"stem}), got %s", got(n, false, buf, sizeof(buf)));
	if (kb_buf_printf(keys, "%s%s", keys->len > 0 ? "," : "", s) < 0)
		return node_err(x, n, "more keys than fit in %u bytes", (unsigned)keys->cap);
	return 0;
}

/* problems.exclude: a list of problem keys, one key, or a file of keys (any other
 * scalar, a path as problems.subset takes one; stored absolute, so it starts with '/'). */
static int
set_keys(struct cfg_ctx *x, const struct cfg_key *k, yaml_node_t *n)
{
	struct kb_buf	keys = KB_BUF_INIT(ORCH_CONFIG_MAX_BYTES);
	int		rc;

	if (n->type == YAML_MAPPING_NODE)
		return node_err(x, n, "expected a list of problem keys or a file, got a mapping");
	if (n->type == YAML_SCALAR_NODE && !orch_problem_key_valid(scalar(n)))
		return set_path(x, k, n);
	if ((rc = each_item(x, n, add_key, &keys)) == 0)
		store_string(x->c, k, keys.p != NULL ? keys.p : "");
	kb_buf_clear(&keys);
	return rc;
}

static void
emit_argv(const struct kb_config *c, const struct cfg_key *k, FILE *fp)
{
	char *const *argv = *(char **const *)cfield(c, k);

	fputc('[', fp);
	for (size_t i = 0; argv != NULL && argv[i] != NULL; i++) {
		fputs(i ? ", " : "", fp);
		emit_quoted(argv[i], fp);
	}
	fputc(']', fp);
}

static void
emit_keys(const struct kb_config *c, const struct cfg_key *k, FILE *fp)
{
	const char	*s = c->problems.exclude != NULL ? c->problems.exclude : "";

	(void)k;
	if (s[0] == '/') {
		emit_quoted(s, fp);
		return;
	}
	fputc('[', fp);
	for (const char *p = s; *p != '\0';) {
		size_t	len = strcspn(p, ",");

		fprintf(fp, "%s%.*s", p == s ? "" : ", ", (int)len, p);
		p += len + (p[len] == ',');
	}
	fputc(']', fp);
}

static const struct {
	cfg_set_fn	set;
	cfg_emit_fn	emit;
} kinds[] = {
	[K_STR] = { set_str, emit_str },
	[K_NAME] = { set_name, emit_str },
	[K_ENVNAME] = { set_envname, emit_str },
	[K_USER] = { set_user, emit_str },
	[K_BOOL] = { set_bool, emit_bool },
	[K_PATH] = { set_path, emit_str },
	[K_ENUM] = { set_enum, emit_enum },
	[K_INT] = { set_int, emit_int },
	[K_NUM] = { set_num, emit_num },
	[K_LEVELS] = { set_levels, emit_levels },
	[K_IDS] = { set_ids, emit_ids },
	[K_FEEDBACK] = { set_feedback, emit_feedback },
	[K_DEVICES] = { set_devices, emit_devices },
	[K_ARGV] = { set_argv, emit_argv },
	[K_KEYS] = { set_keys, emit_keys },
};

/* ---------------------------------------------------------- key lookup */

enum cfg_found { FOUND_NONE, FOUND_KEY, FOUND_SECTION };

/* What child name of section prefix ("" = top) is: a key (*index) or a section. */
static enum cfg_found
lookup(const char *prefix, const char *name, int *index)
{
	size_t	plen = strlen(prefix), nlen = strlen(name);

	if (nlen == 0 || strchr(name, '.') != NULL)
		return FOUND_NONE;
	for (int i = 0; i < NKEYS; i++) {
		const char *p = schema[i].path;

		if (plen > 0) {
			if (strncmp(p, prefix, plen) != 0 || p[plen] != '.')
				continue;
			p += plen + 1;
		}
		if (strncmp(p, name, nlen) != 0)
			continue;
		if (p[nlen] == '\0') {
			*index = i;
			return FOUND_KEY;
		}
		if (p[nlen] == '.')
			return FOUND_SECTION;
	}
	return FOUND_NONE;
}

/* Optimal string alignment distance (a swap of neighbours counts 1), for names of at
 * most 63 bytes. */
static int
edit_distance(const char *a, const char *b)
{
	int	d[64][64];
	size_t	la = strlen(a), lb = strlen(b);

	if (la >= 64 || lb >= 64)
		return INT_MAX;
	for (size_t i = 0; i <= la; i++)
		d[i][0] = (int)i;
	for (size_t j = 0; j <= lb; j++)
		d[0][j] = (int)j;
	for (size_t i = 1; i <= la; i++)
		for (size_t j = 1; j <= lb; j++) {
			int	v = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);

			if (d[i - 1][j] + 1 < v)
				v = d[i - 1][j] + 1;
			if (d[i][j - 1] + 1 < v)
				v = d[i][j - 1] + 1;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
			    d[i - 2][j - 2] + 1 < v)
				v = d[i - 2][j - 2] + 1;
			d[i][j] = v;
		}
	return d[la][lb];
}

/* The closest child of prefix within edit distance 2, else a key elsewhere whose last
 * part is exactly name (a key in the wrong section). "" when there is none. */
static void
suggest(const char *prefix, const char *name, char *out, size_t outlen)
{
	size_t	plen = strlen(prefix);
	int	best = 3;

	out[0] = '\0';
	for (int i = 0; i < NKEYS; i++) {
		const char	*p = schema[i].path;
		char		 child[64];
		size_t		 clen;
		int		 dist;

		if (plen > 0) {
			if (strncmp(p, prefix, plen) != 0 || p[plen] != '.')
				continue;
			p += plen + 1;
		}
		clen = strcspn(p, ".");
		if (clen >= sizeof(child))
			continue;
		memcpy(child, p, clen);
		child[clen] = '\0';
		dist = edit_distance(name, child);
		if (dist < best) {
			best = dist;
			snprintf(out, outlen, "%s", child);
		}
	}
	if (out[0] != '\0')
		return;
	for (int i = 0; i < NKEYS; i++) {
		const char *last = strrchr(schema[i].path, '.');

		if (last != NULL && strcmp(last + 1, name) == 0) {
			snprintf(out, outlen, "%s", schema[i].path);
			return;
		}
	}
}

static int
unknown_key(struct cfg_ctx *x, const yaml_node_t *at, const char *prefix, const char *name)
{
	char	hint[CFG_KEY_MAX];

	suggest(prefix, name, hint, sizeof(hint));
	if (hint[0] != '\0')
		return node_err(x, at, "unknown key (did you mean '%s'?)", hint);
	return node_err(x, at, "unknown key");
}

static void
path_set(struct cfg_ctx *x, const char *prefix, const char *name, size_t nlen)
{
	snprintf(x->path, sizeof(x->path), "%s%s%.*s%s", prefix, prefix[0] ? "." : "",
		 nlen > 64 ? 64 : (int)nlen, name, nlen > 64 ? "..." : "");
}

static int
apply_key(struct cfg_ctx *x, int index, yaml_node_t *value)
{
	x->seen[index] = true;
	x->where[index] = node_loc(x, value);
	return kinds[schema[index].kind].set(x, &schema[index], value);
}

/* ---------------------------------------------------------------- walker */

static int walk_mapping(struct cfg_ctx *x, yaml_node_t *map, const char *prefix);

static int
walk_value(struct cfg_ctx *x, enum cfg_found found, int index, yaml_node_t *v)
{
	char	section[CFG_KEY_MAX], buf[CFG_SHOW_MAX + 16];

	if (found == FOUND_KEY)
		return apply_key(x, index, v);
	if (is_null(v))		/* "eval:" with every key commented out */
		return 0;
	if (v->type != YAML_MAPPING_NODE)
		return node_err(x, v, "expected a mapping, got %s", got(v, false, buf, sizeof(buf)));
	snprintf(section, sizeof(section), "%s", x->path);
	return walk_mapping(x, v, section);
}

static int
walk_mapping(struct cfg_ctx *x, yaml_node_t *map, const char *prefix)
{
	yaml_node_pair_t	*pairs = map->data.mapping.pairs.start;
	char			 buf[CFG_SHOW_MAX + 16];
	int			 rc, index = -1;

	for (yaml_node_pair_t *pr = pairs; pr < map->data.mapping.pairs.top; pr++) {
		yaml_node_t	*k = node_at(x, pr->key), *v = node_at(x, pr->value);
		enum cfg_found	 found;

		if (k->type != YAML_SCALAR_NODE || is_null(k)) {
			snprintf(x->path, sizeof(x->path), "%s", prefix);
			return node_err(x, k, "expected a key name, got %s",
					got(k, false, buf, sizeof(buf)));
		}
		path_set(x, prefix, scalar(k), k->data.scalar.length);
		found = lookup(prefix, scalar(k), &index);
		if (found == FOUND_NONE || strlen(scalar(k)) != k->data.scalar.length)
			return unknown_key(x, k, prefix, scalar(k));
		for (yaml_node_pair_t *q = pairs; q < pr; q++) {
			yaml_node_t *prev = node_at(x, q->key);

			if (strcmp(scalar(prev), scalar(k)) == 0)
				return node_err(x, k, "duplicate key (first at line %lu)",
						(unsigned long)prev->start_mark.line + 1);
		}
		if ((rc = walk_value(x, found, index, v)) < 0)
			return rc;
	}
	return 0;
}

/* ---------------------------------------------------------------- loading */

/* The line and column (1-based, columns in characters as libyaml counts them) of byte
 * offset off of text. */
static void
text_position(const char *text, size_t off, struct cfg_loc *loc)
{
	loc->line = 1;
	loc->col = 1;
	for (size_t i = 0; i < off; i++) {
		if (text[i] == '\n' || (text[i] == '\r' && (i + 1 >= off || text[i + 1] != '\n'))) {
			loc->line++;
			loc->col = 1;
		} else if (((unsigned char)text[i] & 0xc0) != 0x80 && text[i] != '\r') {
			loc->col++;
		}
	}
}

/* Reads one YAML document from text. No root node (empty text) is not an error here.
 * libyaml's scanner costs O(flow nesting) per token, so text with more '[' and '{' than
 * any config needs is refused before it is parsed. */
static int
parse_doc(struct cfg_ctx *x, const char *text, size_t len, yaml_document_t *doc,
	  const struct cfg_loc *where, const char *what)
{
	yaml_parser_t	 p;
	yaml_document_t	 extra;
	struct cfg_loc	 loc = *where;
	size_t		 openers = 0, off;
	char		 byte[32] = "";
	bool		 utf8;
	int		 rc = 0;

	if (len > ORCH_CONFIG_MAX_BYTES)
		return loc_err(x, &loc, x->path, "%slarger than %u bytes", what,
			       ORCH_CONFIG_MAX_BYTES);
	for (size_t i = 0; i < len; i++)
		openers += text[i] == '[' || text[i] == '{';
	if (openers > ORCH_CONFIG_MAX_OPENERS)
		return loc_err(x, &loc, x->path, "%smore than %d '[' and '{' (nested too deep "
			       "for a config)", what, ORCH_CONFIG_MAX_OPENERS);
	if (!yaml_parser_initialize(&p))
		return -KB_ENOMEM;
	yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
	if (!yaml_parser_load(&p, doc))
		goto syntax;
	if (yaml_document_get_root_node(doc) == NULL)
		goto out;
	if (!yaml_parser_load(&p, &extra)) {
		yaml_document_delete(doc);
		goto syntax;
	}
	if (yaml_document_get_root_node(&extra) != NULL) {
		if (loc.set_arg == NULL) {
			loc.line = (unsigned long)yaml_document_get_root_node(&extra)->start_mark.line + 1;
			loc.col = (unsigned long)yaml_document_get_root_node(&extra)->start_mark.column + 1;
		}
		rc = loc_err(x, &loc, x->path, "%sonly one YAML document is allowed", what);
		yaml_document_delete(doc);
	}
	yaml_document_delete(&extra);
	goto out;

syntax:
	if (p.error == YAML_MEMORY_ERROR) {
		rc = loc_err(x, &loc, x->path, "out of memory");
		rc = -KB_ENOMEM;
	} else if (p.error == YAML_READER_ERROR) {
		/* libyaml gives the reader's errors a byte offset only */
		off = p.problem_offset < len ? p.problem_offset : len;
		utf8 = p.problem != NULL && (strstr(p.problem, "UTF-") != NULL ||
					     strstr(p.problem, "Unicode") != NULL);
		if (utf8 && strstr(p.problem, "trailing") != NULL) {
			/* at the bad continuation: name the sequence's first byte */
			while (off > 0 && ((unsigned char)text[off - 1] & 0xc0) == 0x80)
				off--;
			if (off > 0 && (unsigned char)text[off - 1] >= 0xc0)
				off--;
		}
		if (off < len)
			snprintf(byte, sizeof(byte), "byte 0x%02x at ",
				 (unsigned)(unsigned char)text[off]);
		if (loc.set_arg == NULL)
			text_position(text, off, &loc);
		if (utf8)
			rc = loc_err(x, &loc, x->path, "%snot valid UTF-8: %soffset %zu (%s)%s",
				     what, byte, off, p.problem,
				     loc.set_arg == NULL ? "; save the file as UTF-8" : "");
		else
			rc = loc_err(x, &loc, x->path, "%sinvalid YAML: %s (%soffset %zu)", what,
				     p.problem != NULL ? p.problem : "unreadable input", byte, off);
	} else {
		if (loc.set_arg == NULL) {
			loc.line = (unsigned long)p.problem_mark.line + 1;
			loc.col = (unsigned long)p.problem_mark.column + 1;
		}
		if (p.context != NULL)
			rc = loc_err(x, &loc, x->path, "%sinvalid YAML: %s (%s at line %lu)", what,
				     p.problem ? p.problem : "syntax error", p.context,
				     (unsigned long)p.context_mark.line + 1);
		else
			rc = loc_err(x, &loc, x->path, "%sinvalid YAML: %s", what,
				     p.problem ? p.problem : "syntax error");
	}
out:
	yaml_parser_delete(&p);
	return rc;
}

/* One --set "a.b.c=value": resolve the path part by part, then read value as YAML.
 * Every message names the argument, not the file. */
static int
apply_set(struct cfg_ctx *x, const char *arg)
{
	struct cfg_loc	 loc = { arg, 0, 0 };
	yaml_document_t	 doc;
	yaml_node_t	*root;
	const char	*eq = strchr(arg, '='), *p = arg;
	char		 prefix[CFG_KEY_MAX] = "", name[CFG_KEY_MAX];
	enum cfg_found	 found = FOUND_NONE;
	int		 rc, index = -1;

	x->path[0] = '\0';
	x->set_arg = arg;
	if (eq == NULL || eq == arg) {
		rc = loc_err(x, &loc, NULL, "expected key.path=value");
		goto out;
	}
	for (;;) {
		size_t	nlen = strcspn(p, ".=");

		path_set(x, prefix, p, nlen);
		/* below a key, an empty part ("a..b", "a.=") or an overlong one */
		if (found == FOUND_KEY || nlen == 0 || nlen >= sizeof(name)) {
			rc = node_err(x, NULL, "unknown key");
			goto out;
		}
		memcpy(name, p, nlen);
		name[nlen] = '\0';
		if ((found = lookup(prefix, name, &index)) == FOUND_NONE) {
			rc = unknown_key(x, NULL, prefix, name);
			goto out;
		}
		snprintf(prefix, sizeof(prefix), "%s", x->path);
		p += nlen;
		if (p == eq)
			break;
		p++;	/* the '.' */
	}
	if ((rc = parse_doc(x, eq + 1, strlen(eq + 1), &doc, &loc, "value: ")) < 0)
		goto out;
	x->doc = &doc;
	if ((root = yaml_document_get_root_node(&doc)) == NULL)
		rc = loc_err(x, &loc, x->path, "missing value (write '' for an empty string)");
	else
		rc = walk_value(x, found, index, root);
	yaml_document_delete(&doc);
	x->doc = NULL;
out:
	x->set_arg = NULL;
	return rc;
}

static int
apply_default(struct cfg_ctx *x, int index)
{
	struct cfg_loc	 none = { NULL, 0, 0 };
	yaml_document_t	 doc;
	yaml_node_t	*root;
	int		 rc;

	rc = parse_doc(x, schema[index].def, strlen(schema[index].def), &doc, &none, "default: ");
	if (rc < 0)
		return rc == -KB_ENOMEM ? rc : -KB_EBUG;
	x->doc = &doc;
	root = yaml_document_get_root_node(&doc);
	rc = root != NULL ? kinds[schema[index].kind].set(x, &schema[index], root) : -KB_EBUG;
	x->doc = NULL;
	yaml_document_delete(&doc);
	return rc < 0 ? (rc == -KB_ECONFIG ? -KB_EBUG : rc) : 0;
}

static const char *
string_of(const struct kb_config *c, const char *path)
{
	for (int i = 0; i < NKEYS; i++)
		if (strcmp(schema[i].path, path) == 0)
			return *(char *const *)cfield(c, &schema[i]);
	return NULL;
}

/* A cost budget counts the replies' cost, which only prices make: without them it
 * could never be reached, so it is refused rather than ignored. */
static int
check_cost_budget(struct cfg_ctx *x)
{
	int	i = 0;

	if (x->c->refinement.budget.cost_usd <= 0 || x->c->llm.price_input_per_mtok > 0 ||
	    x->c->llm.price_output_per_mtok > 0)
		return 0;
	while (i < NKEYS && strcmp(schema[i].path, "refinement.budget.cost_usd") != 0)
		i++;
	return loc_err(x, i < NKEYS ? &x->where[i] : NULL, "refinement.budget.cost_usd",
		       "a cost budget needs prices: set llm.price_input_per_mtok or "
		       "llm.price_output_per_mtok");
}

/* Required keys, defaults, then keys required by another key's value. */
static int
finish(struct cfg_ctx *x)
{
	int	rc;

	for (int i = 0; i < NKEYS; i++) {
		if (x->seen[i])
			continue;
		if (schema[i].def == NULL)
			return loc_err(x, NULL, schema[i].path, "required key is missing");
		snprintf(x->path, sizeof(x->path), "%s", schema[i].path);
		if ((rc = apply_default(x, i)) < 0) {
			loc_err(x, NULL, schema[i].path, "internal error: bad default '%s'",
				schema[i].def);
			return rc;
		}
	}
	for (int i = 0; i < NKEYS; i++) {
		const char	*v, *s;

		if (schema[i].when == NULL)
			continue;
		v = string_of(x->c, schema[i].when);
		s = *(char *const *)cfield(x->c, &schema[i]);
		if (v == NULL || strcmp(v, schema[i].is) != 0 || s[0] != '\0')
			continue;
		if (!x->seen[i])
			return loc_err(x, NULL, schema[i].path, "required key is missing");
		return loc_err(x, &x->where[i], schema[i].path,
			       "must not be empty when %s is %s", schema[i].when, schema[i].is);
	}
	if ((rc = check_cost_budget(x)) < 0)
		return rc;
	for (size_t r = 0; r < sizeof(required_also) / sizeof(required_also[0]); r++) {
		const char	*v = string_of(x->c, required_also[r].when);
		int		 i = 0;
		bool		 empty;

		while (i < NKEYS && strcmp(schema[i].path, required_also[r].path) != 0)
			i++;
		if (i == NKEYS || v == NULL || strcmp(v, required_also[r].is) != 0)
			continue;
		if (schema[i].kind == K_ARGV)
			empty = *(char **const *)cfield(x->c, &schema[i]) == NULL;
		else
			empty = (*(char *const *)cfield(x->c, &schema[i]))[0] == '\0';
		if (!empty)
			continue;
		if (!x->seen[i])
			return loc_err(x, NULL, schema[i].path, "required key is missing");
		return loc_err(x, &x->where[i], schema[i].path, "must not be empty when %s is %s",
			       required_also[r].when, required_also[r].is);
	}
	return 0;
}

/* Keeps where the keys the task list checks against the disk were set, so that its
 * messages name the place as the loader's own do. */
static void
keep_origins(struct cfg_ctx *x)
{
	static const struct {
		const char	*path;
		size_t		 off;
	} kept[] = {
		{ "problems.dir", offsetof(struct kb_config, problems.dir_at) },
		{ "problems.levels", offsetof(struct kb_config, problems.levels_at) },
		{ "problems.ids", offsetof(struct kb_config, problems.ids_at) },
		{ "problems.subset", offsetof(struct kb_config, problems.subset_at) },
		{ "problems.exclude", offsetof(struct kb_config, problems.exclude_at) },
	};

	for (size_t k = 0; k < sizeof(kept) / sizeof(kept[0]); k++) {
		char			**slot = (char **)((char *)x->c + kept[k].off);
		int			  i = 0, n;
		const struct cfg_loc	 *loc;

		while (i < NKEYS && strcmp(schema[i].path, kept[k].path) != 0)
			i++;
		loc = i < NKEYS && x->seen[i] ? &x->where[i] : NULL;
		n = loc_text(x, loc, NULL, 0);
		free(*slot);
		if ((*slot = malloc((size_t)n + 1)) != NULL)
			loc_text(x, loc, *slot, (size_t)n + 1);
	}
}

static int
config_load(const char *text, size_t len, const char *name, const char *file_dir,
	    const char *const *sets, int nsets, struct kb_config *out, char *err, size_t errlen)
{
	struct kb_config	 c;
	struct cfg_ctx		 x;
	struct cfg_loc		 top = { NULL, 0, 0 };
	yaml_document_t		 doc;
	yaml_node_t		*root;
	char			 buf[CFG_SHOW_MAX + 16];
	int			 rc;

	memset(&c, 0, sizeof(c));
	memset(&x, 0, sizeof(x));
	x.c = &c;
	x.name = name;
	x.file_dir = file_dir;
	x.err = err;
	x.errlen = errlen;
	memset(out, 0, sizeof(*out));
	if (errlen > 0)
		err[0] = '\0';
	if ((rc = parse_doc(&x, text, len, &doc, &top, "")) < 0)
		return rc;
	x.doc = &doc;
	if ((root = yaml_document_get_root_node(&doc)) == NULL) {
		rc = loc_err(&x, NULL, NULL, "the config is empty");
	} else if (root->type != YAML_MAPPING_NODE) {
		top = node_loc(&x, root);
		rc = loc_err(&x, &top, NULL, "expected a mapping of keys at the top level, got %s",
			     got(root, false, buf, sizeof(buf)));
	} else {
		rc = walk_mapping(&x, root, "");
	}
	yaml_document_delete(&doc);
	x.doc = NULL;
	for (int i = 0; rc == 0 && i < nsets; i++)
		rc = apply_set(&x, sets[i]);
	if (rc == 0)
		rc = finish(&x);
	if (rc == 0)
		keep_origins(&x);
	if (rc < 0) {
		kb_config_clear(&c);
		return rc;
	}
	*out = c;
	return 0;
}

int
orch_config_load_string(const char *yaml, size_t len, const char *name,
			const char *const *sets, int nsets, struct kb_config *out, char *err,
			size_t errlen)
{
	return config_load(yaml, len, name, NULL, sets, nsets, out, err, errlen);
}

int
orch_config_load(const char *path, const char *const *sets, int nsets, struct kb_config *out,
		 char *err, size_t errlen)
{
	char	 dir[CFG_PATH_MAX], cwd[CFG_PATH_MAX], *text = NULL, *slash;
	size_t	 len = 0;
	int	 rc;

	memset(out, 0, sizeof(*out));
	rc = kb_read_file(path, ORCH_CONFIG_MAX_BYTES, &text, &len);
	if (rc == -KB_ETOOBIG) {
		snprintf(err, errlen, "%s: larger than %u bytes", path, ORCH_CONFIG_MAX_BYTES);
		return -KB_ECONFIG;
	}
	if (rc < 0) {
		/* kb_read_file leaves errno from the failing call */
		snprintf(err, errlen, "%s: cannot read: %s", path, strerror(errno));
		return -KB_ECONFIG;
	}
	if (path[0] == '/') {
		rc = snprintf(dir, sizeof(dir), "%s", path) >= (int)sizeof(dir) ? -1 : 0;
	} else if (getcwd(cwd, sizeof(cwd)) == NULL) {
		rc = -1;
	} else {
		rc = kb_path_join(dir, sizeof(dir), cwd, path);
	}
	if (rc < 0) {
		snprintf(err, errlen, "%s: cannot tell the config's directory", path);
		free(text);
		return -KB_ECONFIG;
	}
	slash = strrchr(dir, '/');
	if (slash == dir)
		slash[1] = '\0';	/* the config is in / */
	else
		slash[0] = '\0';
	rc = config_load(text, len, path, dir, sets, nsets, out, err, errlen);
	free(text);
	/* The cache is the machine's (chosen before anything uses it): cache.dir names it. */
	if (rc == 0 && out->cache.dir != NULL && out->cache.dir[0] != '\0')
		fb_cache_prefer(out->cache.dir);
	return rc;
}

/* ---------------------------------------------------------------- emit */

/* The value a key takes, in words, from the same fields the setters check. */
static void
reference_type(const struct cfg_key *k, FILE *fp)
{
	switch (k->kind) {
	case K_STR: fputs("string", fp); break;
	case K_NAME: fputs("name: 1 to 64 characters from A-Z a-z 0-9 . _ -", fp); break;
	case K_ENVNAME: fputs("environment variable name (A-Z 0-9 _), or ''", fp); break;
	case K_USER: fputs("user name (up to 32 of A-Z a-z 0-9 . _ -), or ''", fp); break;
	case K_BOOL: fputs("true | false", fp); break;
	case K_PATH:
		fputs("path (~ expanded; relative to the config's directory)", fp);
		break;
	case K_ENUM:
		fputs("one of ", fp);
		for (const char *const *a = allowed_of(k); *a != NULL; a++)
			fprintf(fp, "%s%s", a == allowed_of(k) ? "" : " | ", *a);
		break;
	case K_INT: fprintf(fp, "integer in %ld..%ld", k->lo, k->hi); break;
	case K_NUM:
		if (k->dhi == HUGE_VAL)
			fprintf(fp, "number >= %g", k->dlo);
		else
			fprintf(fp, "number in %g..%g", k->dlo, k->dhi);
		if (k->flags & F_DEFAULT_WORD)
			fputs(", or default", fp);
		break;
	case K_LEVELS:
		fprintf(fp, "list of levels, each 1..%d (or one level)", KB_MAX_LEVELS);
		break;
	case K_KEYS:
		fputs("list of problem keys (L{level}_{file stem}), one key, or a file of keys", fp);
		break;
	case K_IDS: fputs("all, or ids and ranges: \"1-100,3\" or a list of them", fp); break;
	case K_FEEDBACK: fputs("list of G, E, P (or [] for none)", fp); break;
	case K_ARGV:
		fputs("list of strings: a program (an absolute path or a name on PATH) and its "
		      "arguments", fp);
		break;
	case K_DEVICES:
		fprintf(fp, "all, or a list of GPU indices 0..%d", KB_MAX_DEVICES - 1);
		break;
	}
	if ((k->flags & F_NONEMPTY) && k->kind != K_NAME)
		fputs(", not empty", fp);
}

int
orch_config_reference(FILE *fp)
{
	fputs("# kforge config keys: the key, then its type, default, when it is required and\n"
	      "# what it means. Generated from the table the loader checks configs against.\n", fp);
	for (int i = 0; i < NKEYS; i++) {
		const struct cfg_key *k = &schema[i];

		fprintf(fp, "\n%s\n    type: ", k->path);
		reference_type(k, fp);
		if (k->def != NULL)
			fprintf(fp, "\n    default: %s", k->def);
		else
			fputs("\n    default: none (required)", fp);
		if (k->when != NULL)
			fprintf(fp, "\n    required when: %s is %s", k->when, k->is);
		for (size_t r = 0; r < sizeof(required_also) / sizeof(required_also[0]); r++)
			if (strcmp(required_also[r].path, k->path) == 0)
				fprintf(fp, "\n    required when: %s is %s", required_also[r].when,
					required_also[r].is);
		fprintf(fp, "\n    %s\n", k->doc != NULL ? k->doc : "");
	}
	if (fflush(fp) == EOF || ferror(fp))
		return -kb_errno_to_err(errno);
	return 0;
}

/* How many whole leading sections two keys' section paths ("llm", "llm.agent") share. */
static int
sections_shared(const char *a, size_t alen, const char *b, size_t blen)
{
	int	n = 0;

	for (size_t i = 0; i <= alen && i <= blen; i++) {
		bool	a_end = i == alen || a[i] == '.', b_end = i == blen || b[i] == '.';

		if (a_end && b_end && i > 0)
			n++;
		else if (a_end || b_end || a[i] != b[i])
			break;
		if (i == alen || i == blen)
			break;
	}
	return n;
}

int
orch_config_emit(const struct kb_config *c, FILE *fp)
{
	const char	*prev = "";
	size_t		 prevlen = 0;

	fputs("# frozen by kforge: fully resolved config\n", fp);
	for (int i = 0; i < NKEYS; i++) {
		const char	*path = schema[i].path, *leaf = strrchr(path, '.');
		size_t		 seclen = leaf != NULL ? (size_t)(leaf - path) : 0, j = 0;
		int		 shared = sections_shared(prev, prevlen, path, seclen), depth = 0;

		/* The sections this key shares with the previous one stay open (keys of one
		 * section are adjacent); each further one opens a level deeper (llm.agent). */
		while (j < seclen) {
			const char	*dot = memchr(path + j, '.', seclen - j);
			size_t		 end = dot != NULL ? (size_t)(dot - path) : seclen;

			if (depth >= shared)
				fprintf(fp, "%*s%.*s:\n", 2 * depth, "", (int)(end - j), path + j);
			depth++;
			j = end + 1;
		}
		fprintf(fp, "%*s%s: ", 2 * depth, "", leaf != NULL ? leaf + 1 : path);
		kinds[schema[i].kind].emit(c, &schema[i], fp);
		fputc('\n', fp);
		prev = path;
		prevlen = seclen;
	}
	if (fflush(fp) == EOF || ferror(fp))
		return -kb_errno_to_err(errno);
	return 0;
}
