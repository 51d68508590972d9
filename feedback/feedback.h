/*
 * feedback.h: turning a candidate kernel into measured facts and those facts into the
 * next prompt's feedback text. Owns the Python runner (feedback/kforge_runner.py, the
 * only code that touches PyTorch or CUDA) and the protocol with it (docs/DESIGN.md §5).
 *
 * Every runner is a fresh child started with kb_spawn (in a worker, started ahead and
 * handed its request later: fb_warm_enable): own process group, deadline,
 * rlimits (runner.rlimit_*), an allow-listed environment (never an API key), its own
 * network namespace and an unprivileged user where the host allows (contain.c), captured
 * capped output, one JSON request on stdin and one JSON result on fd 3. When the runner
 * cannot report (signal, deadline, garbage), fb_run classifies the death and builds the
 * same result shape itself.
 *
 * The protocol, as fb_run speaks it (the runner's docstring has the semantics):
 *   request  {"mode", "problem", "candidate", "build_dir", "work_dir", "device": cpu|cuda,
 *            "device_index", "precision", "seed", "correctness_trials", "perf_trials",
 *            "warmup", "atol", "rtol" (null: the precision's default), "timing": {"method",
 *            "l2_flush", "discard_first", "max_spread", "max_passes"}, "time_reference",
 *            "baseline_compile", "allow_tf32", "cpus": [core, ...] (on the CPU: builds on
 *            the compile slots' cores, every other step on the rest; empty: anywhere)}
 *   result   {"status", "mode", "compiled", "correct", "flags": [...], "details":
 *            {"message", "exception", "traceback", "compiler_output", "trials": [{"trial",
 *            "seed", "ok", "max_abs_diff", "avg_abs_diff"}], "cpus" (those it runs on),
 *            "replay_check": {"checks", "failed_at", "max_abs_diff", "skipped"}, ...},
 *            "timing": {"candidate",
 *            "reference", "reference_compile": {"mean_ms", "std_ms", "min_ms", "max_ms",
 *            "median_ms", "trials", "method", "stream_check"} | null, "pair":
 *            {"speedup", "ci95": [lo, hi], "spread", "median_speedup", "mean_speedup",
 *            "statistic", "passes", "rounds", "pass_log": [{"speedup", "nivcsw",
 *            "steal_ticks"}] (each pass alone)}},
 *            "speedup",
 *            "profile", "env": {"device_name", "capability", "torch", "cuda", "python",
 *            "gpu_count"}}
 *            plus, added here, "wall_ms" and "runner": {"end", "exit_code", "signal",
 *            "pid"}; a synthesized result also has "synthesized": true and
 *            details.log_tail. Non-finite numbers travel as the strings "nan"/"inf".
 *            Flags added here: "host_memory_exceeded" (the runner's processes held more
 *            than runner.max_host_memory_mb and were killed: status crashed),
 *            "output_truncated" (stdout+stderr passed the capture cap; the rest was
 *            read and dropped), "stray_processes" (see fb_adopt_strays).
 *   environment  PATH HOME LANG LANGUAGE LC_* TMPDIR USER CUDA_HOME CUDA_PATH
 *            LD_LIBRARY_PATH, and TORCH_EXTENSIONS_DIR (build_dir), TORCH_CUDA_ARCH_LIST
 *            (eval.arch_list, else ours), CUDA_VISIBLE_DEVICES ("" for precompile and cpu,
 *            else the device index), PYTHONUNBUFFERED=1, PYTHONDONTWRITEBYTECODE=1,
 *            MAX_JOBS=2 (precompile). Nothing else, and never llm.api_key_env. When
 *            the runner runs as runner.user, HOME is its scratch dir, USER that user,
 *            and TMPDIR its scratch dir too unless ours is a sticky one open to all.
 *
 * Ownership: functions borrow their inputs; results belong to the caller
 * (fb_outcome_clear). Processes: workers and `kforge eval`.
 */
#ifndef KFORGE_FEEDBACK_H
#define KFORGE_FEEDBACK_H

#include <limits.h>
#include <stdbool.h>
#include <sys/types.h>

#include <jansson.h>

#include "base/base.h"

enum fb_mode { FB_PRECOMPILE, FB_EXECUTE, FB_PROFILE, FB_BASELINE, FB_PROBE, FB_SELFTEST };

/* The closed set of result statuses (docs/DESIGN.md §5). env_error: a failure the candidate
 * cannot cause (torch not importable, torch's headers, pybind11, the compiler or ninja
 * missing for its build, the reference failing on its own); details.stage and
 * details.fix say which prerequisite and what to do. Never cached, fed back or scored. */
#define FB_STATUSES(X)            \
	X(OK, "ok")                \
	X(COMPILE_ERROR, "compile_error") \
	X(NO_MODEL_NEW, "no_model_new") \
	X(SHAPE_MISMATCH, "shape_mismatch") \
	X(VALUE_MISMATCH, "value_mismatch") \
	X(RUNTIME_ERROR, "runtime_error") \
	X(CUDA_ERROR, "cuda_error") \
	X(TIMEOUT, "timeout")      \
	X(CRASHED, "crashed")      \
	X(ENV_ERROR, "env_error")
#define FB_ENUM_(name, str) FB_ST_##name,
enum fb_status { FB_STATUSES(FB_ENUM_) FB__NSTATUS };
#undef FB_ENUM_
const char	*fb_status_name(enum fb_status st);
int		 fb_status_parse(const char *s, enum fb_status *out);	/* -KB_EINVAL */

/* Finds the Python that runs the runner: cfg->runner.python, then $KFORGE_PYTHON,
 * then python3 on a short list of places, where the first that imports torch wins. An
 * explicit choice (runner.python or $KFORGE_PYTHON) is taken as given when it is an
 * executable, never replaced by another Python: if it cannot import torch, the runner
 * (and fb_selftest, stage "torch") reports that as an environment error naming it. The
 * answer is cached per process. -KB_ENOPYTHON with a message naming what was tried;
 * out then holds the explicitly named Python (resolved on PATH), else "". */
int	fb_find_python(const struct kb_config *cfg, char *out, size_t outlen, char *err,
		       size_t errlen);

/* Runs `python -c code args...` the way a runner runs (its allow-listed environment, its
 * user and network namespace, cwd "/", every GPU hidden unless cuda), for facts about the
 * runner's Python that are no runner step (kforge doctor). At most 8 args (NULL-ended,
 * may be NULL). The snippet's fd 3 (capped at 1 MiB) is in r->result. 0 when it ran,
 * whatever its end, as kb_spawn_run; clear r with kb_spawn_result_clear. */
int	fb_python_snippet(const struct kb_config *cfg, const char *python, const char *code,
			  const char *const *args, bool cuda, int timeout_ms,
			  struct kb_spawn_result *r);

struct fb_request {
	enum fb_mode	 mode;
	const char	*problem_path;
	const char	*candidate_path;	/* NULL for baseline/probe */
	const char	*build_dir;		/* TORCH_EXTENSIONS_DIR for this candidate */
	const char	*work_dir;		/* runner cwd (scratch, per task) */
	int		 device_index;		/* CUDA ordinal; -1 for CPU */
	const char	*device;		/* "cpu" | "cuda"; NULL: cfg->eval.device */
	int		 timeout_s;		/* 0: the config's per-mode deadline */
	/* execute: time the reference too, in the same process, interleaved with the
	 * candidate (timing.pair): the speedup and its interval from one process's
	 * measurements, whatever else the machine did meanwhile. */
	bool		 time_reference;
	/* Called with the runner's pid once it runs (to record it in the GPU pool), and an
	 * execute's with its judge's, from the thread that waits for the judge; both get
	 * on_start_arg. */
	void		(*on_start)(pid_t pid, void *arg);
	void		(*on_judge_start)(pid_t pid, void *arg);
	void		*on_start_arg;
	bool		(*should_stop)(void *arg);
	void		*stop_arg;
	/* execute: the reference's clean timing (a baseline record's "eager" stats, measured
	 * in a process no candidate ran in), which the judge holds the reference it times
	 * between the candidate's blocks to (reference_slowed); NULL: none. */
	const json_t	*reference_clean;
	/* profile: the reference model instead of the candidate (candidate_path unused). */
	bool		 profile_reference;
	/* profile on cuda under the CUPTI injection (fb_profile fills these; NULL: none):
	 * the library (CUDA_INJECTION64_PATH), its output (KPROF_OUT, "%p" the pid), mode
	 * (KPROF_MODE) and, for metrics, the kernels to measure (KPROF_TARGETS). Such a
	 * step takes a warm runner like any other unless cold is set (profile.c says
	 * when). */
	const char	*kprof_lib, *kprof_out, *kprof_mode, *kprof_targets;
	bool		 cold;	/* a fresh runner, never a warm one */
};

/* A speedup over the reference above this, by the ratio of means and by the ratio of
 * medians (where the runner timed both models), is flagged "excessive_speedup"
 * (KernelBench's review threshold), by fb_judge alone. */
#define FB_EXCESSIVE_SPEEDUP	10.0
/* ------------------------------------------------------------ timing (timing.c)
 * How candidates and references are timed: eval.timing_preset names a row of timing.c's
 * table (robust, the default; kernelbench, KernelBench's method exactly), which the
 * request's "timing", the baseline's key and the report's line all read. */
struct fb_timing_preset {
	const char	*name;
	bool		 interleave;	/* the judge times the reference between the
					 * candidate's blocks (else the clean baseline) */
	const char	*statistic;	/* of the speedup: "mean" | "median" */
	long		 hold_us;	/* cuda_event on a GPU: the spin before each call */
	double		 max_spread[2];	/* [cpu, cuda]: passes are added while the speedup's
					 * 95% interval is wider than this (relative) */
	int		 max_passes[2];
	double		 budget_s[2];	/* no pass is added after this long (0: no bound) */
	const char	*describe;	/* the report's line */
};
extern const char *const fb_timing_presets[];	/* the names, NULL-ended (the config's) */
const struct fb_timing_preset *fb_timing_preset(const struct kb_config *cfg);
/* The statistic a speedup is the ratio of: eval.speedup where it is mean or median, else
 * the preset's (the robust preset's medians: a few slow trials move a mean and not a
 * median; five of seven demo tasks' best speedups repeated within 1.2% by medians, up
 * to 20% by means on an H100, tools/bench/README.md, repeat). */
const char	*fb_speedup_statistic(const struct kb_config *cfg, bool cuda);
/* The request's "timing" object: method, l2_flush, discard_first, max_spread,
 * max_passes, budget_s, statistic, hold_us and the preset's name. */
json_t	*fb_timing_request(const struct kb_config *cfg, bool cuda);
/* One line for the report: the preset and what it does, with the keys that change it. */
void	fb_timing_describe(const struct kb_config *cfg, char *out, size_t n);

struct fb_outcome {
	enum fb_status	 status;
	bool		 compiled, correct;
	double		 runtime_ms, ref_runtime_ms, speedup;	/* < 0: not measured */
	json_t		*result;	/* the full result object (runner's, or synthesized) */
	char		*log;		/* captured runner stdout+stderr (capped) */
	int64_t		 wall_ms;
};

/* A known-good tiny kernel for a device, built and run by the runner's "selftest" mode
 * exactly as candidates are built (torch.utils.cpp_extension.load_inline: a C++ op for
 * "cpu", a CUDA kernel for "cuda"). It proves the environment can build and run
 * candidates; a pass is cached per environment (python, torch, compiler, device,
 * arch list, runner source), so the second call costs nothing. */
struct fb_selftest {
	bool	ok;
	bool	cached;			/* a pass for this environment was reused */
	double	build_s, run_s;		/* < 0: not reached */
	char	python[PATH_MAX];	/* the Python that ran it ("" if none found) */
	char	torch[64];		/* torch.__version__, "" when not importable */
	char	stage[32];		/* where it failed: "python", "torch", "headers",
					 * "pybind11", "compiler", "ninja", "build", "run",
					 * "cuda"; "" when ok */
	char	message[512];		/* what failed, one line */
	char	fix[512];		/* what to do about it, one line */
};
/* device: "cpu" or "cuda". use_cache false forces a fresh build (doctor --fresh).
 * Returns 0 with *out filled, pass or fail; < 0 only when nothing could be run
 * (-KB_ENOMEM ...). cfg may be NULL (the defaults: no runner.python, runner.user
 * nobody, an isolated network). The pass records live in $XDG_CACHE_HOME/kforge/selftest
 * (else ~/.cache/kforge/selftest); the build itself in a fresh directory under /tmp that
 * the runner's user can reach, removed afterwards. Processes: the supervisor (before
 * forking workers), kforge doctor, a worker confirming an env_error. */
int	fb_selftest(const struct kb_config *cfg, const char *device, bool use_cache,
		    struct fb_selftest *out);
/* The one-line remedy for a stage the runner cannot report itself ("python", "torch",
 * "build", "run"; anything else gets the one for "build"). */
const char *fb_env_fix(const char *stage);
/* Forgets the cached passes, so that the next fb_selftest builds afresh (a run stopped
 * by an env_error: resume must find the environment fixed, not remember it working). */
void	fb_selftest_forget(void);

/* Runs one runner step. Returns 0 whenever there is an outcome (a failed compile or a
 * crash is an outcome); negative only when nothing could be run (-KB_ENOPYTHON,
 * -KB_EEXEC, -KB_ESTOPPED, -KB_ENOMEM). */
int	fb_run(const struct kb_config *cfg, const struct fb_request *req, struct fb_outcome *out);
void	fb_outcome_clear(struct fb_outcome *o);

/* For a process whose only children are fb_run's runners (a worker): makes it a child
 * subreaper, so that what a runner leaves behind (forked children, daemons that left
 * its process group with setsid) is re-parented here; from then on every fb_run kills
 * and reaps all children of this process once its runner has ended, and a result whose
 * runner left processes behind gets the flag "stray_processes" (details.stray_processes:
 * how many). Call once, before the first fb_run. 0, or -KB_ESYS. */
int	fb_adopt_strays(void);

/* For a child subreaper whose own children are known (the supervisor, its workers): every
 * other live child is an orphan that came to it, such as a runner whose worker died, or
 * what a runner started in a process group of its own (ninja runs each compiler so), and
 * would go on writing where a restarted worker works. Kills each with its process group,
 * round after round (the killed leave orphans too), and returns once they are dead:
 * zombies, left for the caller to reap. keep(pid, arg) names the children to spare.
 * Returns how many it killed. */
int	fb_kill_orphans(bool (*keep)(pid_t pid, void *arg), void *arg);

/* Warm runners (warm.c has the whole story): in a process that called fb_warm_enable (a
 * worker) and with runner.warm, each fb_run of a precompile, execute, profile, baseline
 * or probe starts the next runner ahead, torch imported, and the next such fb_run hands
 * it its request instead of starting one; every candidate still runs in a process no
 * earlier one ran in. fb_warm_start starts one now if there is none (a step is coming:
 * the LLM's reply is in); fb_warm_drop kills it (nothing will run for a while: the LLM
 * call, the worker's end); fb_warm_pid is its pid, 0 when there is none. */
void	fb_warm_enable(void);
void	fb_warm_start(const struct kb_config *cfg);
void	fb_warm_drop(void);
/* req, a precompile, found its build in the cache: the runner waiting for it is replaced
 * by the one its execute would have been handed at the precompile's start (warm.c,
 * warm_cuda_ahead), on a GPU; nothing elsewhere. */
void	fb_warm_built(const struct kb_config *cfg, const struct fb_request *req);
pid_t	fb_warm_pid(void);
/* fb_warm_drop, and the fork servers warm runners are forked from end too (warm.c): at a
 * worker's end, and for the model's call unless fb_warm_keep_servers, which says whether
 * the run's workers may keep theirs through it within the host's memory. */
void	fb_warm_end(void);
bool	fb_warm_keep_servers(const struct kb_config *cfg);
/* The runners of a command that is not a run (kforge eval and baseline): this process
 * becomes their subreaper (fb_adopt_strays) and starts them ahead (fb_warm_enable), and
 * with runner.warm forks them from a server it shares with others and leaves running (one
 * found in the cache, or started here, which ends runner.server_idle_s seconds after its
 * last runner; 0: this process's own server, ended with it). */
void	fb_warm_share(const struct kb_config *cfg);

/* How fb_run reads the runner's fd-3 result, public so that its fuzz target
 * (tests/feedback/fuzz_result.c) reaches it: text is n bytes of anything; a JSON object with
 * a known "status" fills o (status, compiled, correct; runtime_ms, ref_runtime_ms and
 * speedup each a finite value >= 0, or -1 for "not measured"; result owned by o, free
 * with fb_outcome_clear) and returns 0. Anything else returns -KB_ECORRUPT with a
 * one-line reason in why, printable ASCII, phrased to follow "the runner exited with
 * status N and ..." ("no result", "an unparsable result (...)", ...). */
int	fb_result_parse(const char *text, size_t n, struct fb_outcome *o, char *why,
			size_t whylen);

/* Containment of the runner (contain.c): a network namespace of its own where the host
 * allows one (runner.isolate_network), and when kforge runs as root, runner.user instead
 * of root. fb_contain_setup decides once per process (-KB_ECONFIG: no such user);
 * call it in the supervisor before forking workers, then fb_contain_report (policy.c) to
 * log what was decided ("network: not isolated (reason)" is a warning). fb_run applies
 * it. */
int	fb_contain_setup(const struct kb_config *cfg, char *err, size_t errlen);
void	fb_contain_report(void);
/* What fb_contain_setup decided, as fb_contain_report logs it: the network ("isolated (a
 * network namespace of its own)", "not isolated (reason)") and whom runners run as
 * ("nobody (uid 65534, gid 65534)", "this process's user (reason)"). Returns
 * whether the network is isolated. Call after a successful fb_contain_setup. */
bool	fb_contain_describe(char *net, size_t netlen, char *user, size_t userlen);
void	fb_contain_apply(struct kb_spawn_opts *o);
const char *fb_contain_user(void);	/* the runner's user name; NULL: not switched */
/* The sandbox (contain.c, sandbox/): its mode and layers as a line ("strict: landlock ABI
 * 7, scope on, seccomp on"; false when a layer is missing) and as run.json records it;
 * whether runners apply Landlock at all (a runner must then be one thread when it does:
 * no CUDA started ahead). */
bool	fb_contain_describe_sandbox(char *out, size_t n);
json_t	*fb_contain_sandbox_json(void);
bool	fb_contain_sandboxed(void);
/* -KB_ECONFIG and why (naming the layers and runner.sandbox: best_effort) where the
 * sandbox is strict and the host lacks a layer: nothing may run then. */
int	fb_contain_sandbox_ready(char *err, size_t errlen);
/* 0 when the runner's user can reach path (search every directory down to it) and, with
 * read, read it; else -KB_ECONFIG and why: "runner.user nobody cannot reach /root (mode
 * 0700, owner 0)", for the caller to say what needed it and what to do. */
int	fb_contain_check_reach(const char *path, bool read, char *why, size_t whylen);
/* A scratch directory the runner may write (chowned to its user). */
int	fb_contain_runner_dir(const char *path);
/* Around a precompile: the build is handed to the runner's user, then sealed (root-owned,
 * not writable by others; directories sticky). No-ops when the user is not switched. */
int	fb_contain_build_begin(const char *build_dir, int *lock_fd);
void	fb_contain_build_end(const char *build_dir, int lock_fd);
/* A runner that loads a build (execute, profile) holds the same lock shared, so the
 * build is never unsealed or sealed under it: an ownership change in the middle would
 * leave torch's lock file root-owned (EPERM, then every later loader waits on it) or
 * the directory briefly closed. *lock_fd is -1 when there is nothing to hold; release
 * with fb_contain_build_end(NULL, fd). */
int	fb_contain_build_use(const char *build_dir, int *lock_fd);
/* fb_contain_build_end for a tree no runner may add to afterwards (the shared cache's
 * precompiled headers): root-owned, directories 0755 rather than sticky and open. */
void	fb_contain_seal_closed(const char *dir, int lock_fd);
/* A tree fb_contain_build_begin handed to the runner's user and not yet sealed: waits
 * for its seal (the selftest making the precompiled headers holds it meanwhile), and
 * throws away one that nothing holds (left open by a killed selftest). 0: look again;
 * -KB_ENOENT: nothing was ever handed over (no lock beside it). */
int	fb_contain_wait_sealed(const char *dir);

/* Where a run's runners read and write (stage.c has the whole story). When the runner
 * runs as runner.user and that user cannot reach the run directory (a 0700 directory
 * above it, or kforge's umask), the runners work in a staging directory kforge owns,
 * /var/tmp/kforge-stage-XXXXXX (else /tmp/...), and the run directory keeps the record;
 * otherwise they work in the run directory, as ever. Below either: build/<key>,
 * tasks/<id>/work and inputs/ (read-only copies of what the runner cannot read where it
 * is). Nothing of the user's is chmod'ed.
 *
 * fb_stage_open decides once per process, after fb_contain_setup, in the supervisor
 * before workers are forked (or in `kforge eval`). previous: the staging directory the
 * run used before (run.json), reused only when it is still the one made for this run,
 * else a fresh one is made (a reboot may have cleaned it). -KB_ECONFIG with a message
 * when the run directory is out of reach and no staging directory can be made. Without
 * fb_stage_open every path is the run directory's (tests). */
int	fb_stage_open(const char *run_dir, const char *previous, char *err, size_t errlen);
const char *fb_stage_dir(void);	/* the staging directory; NULL: the run directory */
const char *fb_stage_root(void);	/* the run directory fb_stage_open was given, or NULL */
/* <root>/build/<key> and <root>/tasks/<id>/work for a run directory (not created). */
int	fb_stage_build_dir(const char *run_dir, const char *key, char *out, size_t n);
int	fb_stage_work_dir(const char *run_dir, const char *task_id, char *out, size_t n);
/* mkdir -p whose new directories below the root are 0755 whatever the umask. */
int	fb_stage_mkdir(const char *path);
/* The path by which the runner reads path: path itself when its user can, else a
 * root-owned read-only copy under <root>/inputs/ (named by content). fb_run uses it for
 * the problem, the candidate and the runner script. */
int	fb_stage_input(const char *path, char *out, size_t n);
/* A scratch directory in $TMPDIR (else /tmp), kforge-<what>-XXXXXX, opened as a run
 * directory would be: `kforge eval` and `kforge baseline` work there. The path in out;
 * -KB_E* with a message in err. */
int	fb_stage_scratch(const char *what, char *out, size_t n, char *err, size_t errlen);
/* End of the process's use: remove (true: the run finished) or keep (for a resume) the
 * staging directory; the run directory is never removed, a scratch directory is. */
int	fb_stage_close(bool remove);

/* The cache shared by runs and `kforge eval` (cache.c has the whole story): the path
 * <root>/<kind>/<key> in out (not created; <root>/<kind> is), or <root>/<kind> when key
 * is NULL. The root is $KFORGE_CACHE_DIR when the runner's user can reach it, else
 * /var/tmp/kforge-cache-<euid>; decided once per process, and refused (-KB_ECONFIG,
 * logged) when it is not a real directory of this user's closed to others' writes.
 * kind and key are single path components (-KB_EINVAL otherwise). */
int	fb_cache_dir(const char *kind, const char *key, char *out, size_t n);
/* The config's cache.dir: the root to use before $KFORGE_CACHE_DIR, when this process has
 * not chosen one yet (the same checks apply). */
void	fb_cache_prefer(const char *dir);
/* The identity of the runner's environment for a device, as a SHA-256 hex string: the
 * Python (and the torch under it), the compilers and ninja, the arch list, the runner's
 * user, runner.fast_build, and the runner's source. Keys the selftest's pass records
 * (with whether the fast-build headers exist), the builds, the baselines and the memo
 * of which Python imports torch. */
int	fb_env_key(const struct kb_config *cfg, const char *device, const char *python,
		   char sha[65]);
/* A candidate's build directory in the shared cache (not created): "builds/<key>", the
 * key hashing fb_env_key for the config's device, the precision, runner.fast_build and
 * the code, so no build is ever used by code, flags or an environment it was not made
 * for. Runs and `kforge eval` both build there. < 0 when no Python is found or there
 * is no cache. */
/* The shared cache's record of a problem's reference timings on a device model
 * ("baselines/<key>.json", not created): the key hashes the problem file's content, the
 * device name, fb_env_key (python, torch, CUDA), the precision, the timing settings
 * (perf_trials, warmup, seed, method), whether torch.compile is timed too and, on the
 * CPU, an execution's threads. A run keeps its own copy of what it compared against. */
int	fb_baseline_path(const struct kb_config *cfg, const char *problem_path,
			 const char *device_name, char *out, size_t n);
/* A baseline step's record, as runs keep it and the shared cache holds it: {problem,
 * device_name, eager, compile (timing stats or null), env, status, message, stage, fix}. */
json_t	*fb_baseline_record(const char *problem, const char *device_name,
			    const struct fb_outcome *o);
/* The timing method the runner is asked for: eval.timing on cuda (KernelBench's CUDA
 * events by default; the host clock; Triton's do_bench), the host clock on cpu; an L2
 * flush before each trial when eval.l2_flush; the first trial discarded. In the request
 * and in the baseline key alike: "cuda_event l2_flush discard_first" (timing.c). */
void	fb_timing_method(const struct kb_config *cfg, char *out, size_t n);
/* The microseconds the GPU spins before each timed call: eval.timing_hold_us, where it
 * is set (>= 0), else the preset's; only for CUDA events on cuda, else 0. The request
 * carries it, the baseline key names it (timing.c). */
long	fb_timing_hold_us(const struct kb_config *cfg);
/* The threads an execution slot gets on the CPU (OMP_NUM_THREADS): the cores the compile
 * slots leave, shared by the CPU execution slots. */
long	fb_cpu_threads(const struct kb_config *cfg);
/* The cores a worker's warm runner starts on, before its request moves it to its step's
 * (builds and timings apart): true and [*first, *last) on a GPU host of cores that keeps
 * some for the steps on the GPU, false (left where it is) otherwise. */
bool	fb_warm_cpu_range(const struct kb_config *cfg, long cores, int *first, int *last);
/* On the CPU, where on a host of cores a run's builds begin (its timings take the cores
 * after them, modulo cores): a function of the run directory, so that runs side by side
 * spread their builds over the host; 0 for a NULL root (outside a run). */
long	fb_cpu_turn(const char *root, long cores);
/* Whether a step runs on a GPU: the request's device where it names one (req may be
 * NULL), else the config's (eval.device, resolved from auto when a run starts). */
bool	fb_on_cuda(const struct kb_config *cfg, const struct fb_request *req);
/* Whether candidates build in the raw format (eval.format raw: extern "C" launchers
 * through kforge's load_cuda / load_cpp) rather than with torch's load_inline. */
bool	fb_raw_format(const struct kb_config *cfg);
/* The compile slots (runner.compile_slots, else half the cores, at least one): the pool
 * makes that many, and on the CPU builds run on as many cores of their own. */
long	fb_compile_slots(const struct kb_config *cfg);
#define FB_BUILD_KEY_CAP	((size_t)8 << 20)
int	fb_build_dir(const struct kb_config *cfg, const char *code, char *out, size_t n);
/* The cache's size (cache.c has the story): fb_cache_trim removes the builds used least
 * recently until builds/ holds at most max_bytes (< 0: measure only), sparing any used
 * within the last hour or in use now; u says what is there and what went. fb_run
 * stamps a build's use with fb_build_touch. */
struct fb_cache_usage {
	long		builds, removed;
	long long	bytes, removed_bytes;	/* bytes: what remains */
};
int	fb_cache_trim(long long max_bytes, struct fb_cache_usage *u);
void	fb_build_touch(const char *build_dir);
/* Whether a precompile's outcome is the code's alone, to keep beside its build
 * (compile.json) for every later request of the same code. */
bool	fb_build_cacheable(enum fb_status st);

/* The E part of the refinement prompt (paper App. D.3): compiler/execution output for a
 * failed turn, "Your kernel execution timed out" for timeouts, the wall-clock time when
 * correct. Within cfg->refinement.feedback_max_chars bytes of valid UTF-8: output that
 * does not fit keeps its first error line with the lines around it, then its tail, with
 * a marker where text was cut. Caller frees. */
char	*fb_exec_feedback(const struct kb_config *cfg, const struct fb_outcome *o);
/* The P part: a short table from a profile result (NULL when there is nothing). A CUPTI
 * profile (profile.c) gives the top kernels with their share, calls, mean time, launch
 * configuration, registers, shared memory, occupancy and its limiter, the hardware
 * metrics where measured, memcpy/memset totals, one line of interpretation per kernel
 * where the numbers say something plain (text.c's hint table), and, when reference is
 * not NULL, the reference model's kernels for comparison; a torch.profiler one keeps
 * its table. At most FB_PROFILE_ROWS kernels and refinement.feedback_max_chars bytes. */
#define FB_PROFILE_ROWS		8
#define FB_PROFILE_REF_ROWS	5
char	*fb_profile_feedback(const struct kb_config *cfg, json_t *profile, json_t *reference);

/* ------------------------------------------------------- CUPTI profiles (profile.c)
 * On cuda, P comes from the CUPTI injection library (libkforge_kprof.so, docs/DESIGN.md §6,
 * the JSON of notes' kprof contract); on the CPU, or where the library was not built,
 * from torch.profiler in the runner (the profile then says so in "note"). */

/* The library's path: $KFORGE_KPROF_LIB (set but empty: none), else the one this build
 * made (KFORGE_KPROF_PATH, which feedback/CMakeLists.txt defines where kprof/ built it,
 * CUPTI found), else kprof/libkforge_kprof.so beside the running binary. -KB_ENOENT when
 * none is there. */
int	fb_kprof_library(char *out, size_t n);
/* A profile step of req (FB_PROFILE: the candidate, or the reference with
 * req->profile_reference) under the caller's lease. On cuda with the library: a trace
 * run (KPROF_OUT in req->work_dir, named by tag), then, with refinement.profile_metrics
 * and for a candidate (never the reference, whose counters nothing reads), a second run
 * in metrics mode over the trace's refinement.profile_metrics_top kernels whose counters
 * are merged into the trace's kernels. out->result.profile is then the
 * library's JSON (every field optional) plus "iterations", "target", "partial" (the
 * runner ended before the profile was complete: a killed or timed-out runner's last
 * flushed profile is still used), "metrics_status"/"metrics_message",
 * "counter_availability" (the metrics run's image: "cached" or "queried") and
 * "metrics_wall_ms"; a runner that wrote none gets {source: cupti, status: error,
 * message}. Elsewhere the runner's torch.profiler table, with "note" saying why when on
 * cuda. out->wall_ms covers every run. Returns as fb_run. */
int	fb_profile(const struct kb_config *cfg, const struct fb_request *req, const char *tag,
		   struct fb_outcome *out);
/* The library's JSON read from dir (the file tag.<pid>.json, else the most complete
 * tag.*.json there: a CUDA-initialising child writes its own): NULL when there is none
 * or it is not a JSON object (at most FB_KPROF_CAP bytes). */
#define FB_KPROF_CAP	((size_t)4 << 20)
json_t	*fb_kprof_read(const char *dir, const char *tag, pid_t pid);
/* The names of the kernels a candidate's source defines (__global__ functions, and
 * @triton.jit functions), as a new array of strings (at most FB_MAX_OWN_KERNELS). */
#define FB_MAX_OWN_KERNELS	64
json_t	*fb_source_kernels(const char *source);


/* ------------------------------------------------------------- verdicts (verdict.c)
 * Every evaluated candidate gets one verdict, here and nowhere else, in runs and in
 * `kforge eval` alike: correct; incorrect (it failed: it did not build, raised, crashed,
 * timed out or gave wrong output); rejected (it broke a rule: an error of the static
 * checks, feedback/kforge_check.py, or a runtime integrity flag); suspect (correct, but
 * flagged for review: a static warning or a suspicious measurement). Only correct counts
 * in fast_p, speedups and "best". The reasons are objects {rule, kind: finding|flag|
 * status, message, line (findings)}, the rule a finding's or a flag's name. */
enum fb_verdict { FB_VERDICT_CORRECT, FB_VERDICT_INCORRECT, FB_VERDICT_REJECTED,
		  FB_VERDICT_SUSPECT };
const char	*fb_verdict_name(enum fb_verdict v);
/* Row i of the flags' table (verdict.c), every flag a result may carry: its verdict
 * (REJECTED, SUSPECT, or CORRECT where it leaves the verdict alone) and its meaning;
 * -KB_ENOENT past the last. */
int	fb_flag_rule(size_t i, const char **flag, enum fb_verdict *verdict,
		     const char **message);
/* The static checks of a candidate against its problem, by the config's device, format,
 * precision and eval.torch_ops (none with eval.static_checks false): *findings is a new array of {rule, severity: error|
 * warning, line, message}. They only parse the code (Python's ast, no torch, nothing
 * of the candidate runs), in the runner's Python. < 0 with err when they could not run
 * (-KB_ENOPYTHON, -KB_EEXEC, -KB_ECORRUPT: the checker failed; a broken checker must not
 * pass a candidate). */
int	fb_static_check(const struct kb_config *cfg, const char *problem_path,
			const char *candidate_path, json_t **findings, char *err, size_t errlen);
/* Whether any finding is an error: the candidate is rejected before it is built. */
bool	fb_findings_reject(const json_t *findings);
/* The result of a candidate rejected by its findings: {status: "rejected", compiled:
 * false, correct: false, findings, details: {message}, verdict, reasons}. */
json_t	*fb_rejection(const json_t *findings);
/* Judges result (a runner's, or one of the above) in place: settles its "speedup",
 * "speedup_ci95" and "ref_runtime_ms" (the runner's when it timed the reference beside
 * the candidate, else baseline's eager mean over the candidate's; baseline may be NULL),
 * adds "excessive_speedup" to its flags when the speedup, by the means and by the
 * medians, is above FB_EXCESSIVE_SPEEDUP, keeps the static findings (NULL: none) as "findings", and sets
 * "verdict" and "reasons". Returns the verdict. */
enum fb_verdict	fb_judge(json_t *result, const json_t *findings, const json_t *baseline);
/* The reasons of a judged result as text for the model, one "- line N: message" line
 * each, with a heading saying what the verdict means; NULL when the verdict is correct
 * or incorrect with no reason to add (the feedback says why already). */
char	*fb_verdict_feedback(const json_t *result);
/* The profile's evidence about the candidate's forward, judged into result (a judged
 * execute result, result.json) by the same flag rules: a complete CUPTI profile in which
 * none of the candidate's own kernels ran (none named in source, fb_source_kernels, and
 * none that is not PyTorch's or a vendor library's) flags "custom_kernel_not_run"
 * (rejected); kernels on more than one stream flag "side_stream" (suspect) unless the
 * reference's profile (may be NULL) shows the same. details.profile_check records the
 * kernels that ran, their streams and what was decided ("judged": false with "why"
 * where the profile proves nothing: a torch.profiler table, a CUPTI status other than
 * ok, a partial profile). Any earlier decision of this rule is replaced, so it may run
 * again on the same result. Then fb_judge (result's own findings and baseline); returns
 * the verdict. */
enum fb_verdict	fb_judge_profile(json_t *result, const json_t *profile,
				 const json_t *reference, const char *source);

/* ------------------------------------------------------------ the evaluation (evaluate.c)
 * What every candidate goes through, one way for a run's turns and `kforge eval`: the
 * static checks (fb_static_check, below), the build through the build cache
 * (fb_eval_build), the reference alone through the baseline cache (fb_eval_baseline),
 * the execution with the reference timed beside the candidate (fb_run), and the verdict
 * with its speedup (fb_judge). fb_evaluate takes a candidate through all of them in a
 * row (`kforge eval`); a run takes each step in the state and slot it belongs to
 * (PRECOMPILE in a compile slot, EXECUTE on a leased GPU, with the GPU health rule after
 * a fault), through the same functions. */

/* A slot a step runs its runner in (a run's compile slot), taken only when the step
 * must run one: take (< 0: not taken, the step returns it), ready (held, the runner is
 * next), give. Any may be NULL. */
struct fb_slot {
	int	(*take)(void *arg);
	void	(*ready)(void *arg);
	void	(*give)(void *arg);
	void	*arg;
};
struct fb_build {
	json_t			*result;	/* the precompile's result (compile.json) */
	bool			 cache_hit;	/* found beside the build, no runner ran */
	struct fb_outcome	 ran;		/* the runner's, when one ran (its log) */
};
/* The build of req->candidate_path in req->build_dir (mode FB_PRECOMPILE): the outcome
 * cached beside it (compile.json) for the same code, else a precompile in slot (the
 * cache looked at again once the slot is held: another task may have built the same
 * code meanwhile), whose outcome is cached, when it is the code's alone, before the slot
 * is given back. A runner that failed for want of disk space (fb_runner_hit_full_disk)
 * is -KB_ENOSPC, never cached. out is the caller's to fb_build_clear. */
int	fb_eval_build(const struct kb_config *cfg, const struct fb_request *req,
		      const char *run_dir, const struct fb_slot *slot, struct fb_build *out);
void	fb_build_clear(struct fb_build *b);
/* Whether a runner that failed did so because the disk is full (it said "No space left
 * on device" and run_dir, the staging directory or the build cache is nearly full): no
 * result about the kernel, to be neither cached nor fed back. */
bool	fb_runner_hit_full_disk(const struct fb_outcome *o, const char *run_dir);

struct fb_baseline {
	json_t		*record;	/* fb_baseline_record's */
	bool		 cache_hit;	/* the run's copy or the shared cache had it */
	int64_t		 wall_ms;	/* of the baseline runner, when one ran */
};
/* The reference of req->problem_path alone on device_name (req's device, paths and
 * hooks; run as FB_BASELINE): the run's own record (<run_dir>/baselines/<device>/
 * <problem_key>.json: a resumed run compares against what it began with; run_dir NULL:
 * none), else the shared cache's (fb_baseline_path), else measured and kept in both (an
 * ok one only). Each is flock'ed, so two samples or two runs do not both measure it. */
int	fb_eval_baseline(const struct kb_config *cfg, const struct fb_request *req,
			 const char *problem_key, const char *device_name, const char *run_dir,
			 struct fb_baseline *out);
bool	fb_baseline_ok(const struct fb_baseline *b);
/* What a failed baseline record says, for the env_error it makes in a run's turn and in
 * `kforge eval` alike: "the reference problem itself fails on this device (status:
 * message)". Caller frees. */
char	*fb_reference_failure(const json_t *record);
void	fb_baseline_clear(struct fb_baseline *b);

struct fb_evaluation {
	enum fb_verdict		 verdict;
	enum fb_status		 status;	/* the last step's; env_error for a failing
						 * reference */
	bool			 rejected;	/* by the static checks, never built */
	bool			 compiled, correct;
	json_t			*result;	/* judged: verdict, reasons, speedup,
						 * speedup_ci95, ref_runtime_ms */
	struct fb_build		 build;
	struct fb_baseline	 baseline;
	struct fb_outcome	 executed;	/* status 0 and no result: not executed */
	/* With P in the feedback (`kforge eval --profile`), a correct or suspect candidate
	 * is profiled as a run's PROFILE step profiles it, and judged by the profile rule
	 * (fb_judge_profile) with the reference's profile beside it. NULL: not profiled. */
	json_t			*profile, *reference_profile;
	long			 profile_wall_ms;
};
/* Every step for one candidate, in a row: the static checks (a rejected candidate is
 * not built), the build, the reference alone (a failing one makes the result env_error,
 * as a run's turn does), the execution with the reference timed beside it, the verdict,
 * and with P in the feedback the profile and the profile rule's verdict.
 * req holds the problem, the candidate, the build and work directories and the device;
 * device_name keys the baseline. < 0 with err when a step could not run at all. */
int	fb_evaluate(const struct kb_config *cfg, const struct fb_request *req,
		    const char *device_name, struct fb_evaluation *ev, char *err,
		    size_t errlen);
void	fb_evaluation_clear(struct fb_evaluation *ev);
/* The outcome of a judged result (fb_judge's, or a rejection): its status (crashed when
 * it has none), compiled (executed, or a build that succeeded), correct, the candidate's
 * time, the reference's and the speedup as judged (by the timing's statistic).
 * o->result becomes result (the caller's reference passes to o). */
void	fb_outcome_of_judged(json_t *result, bool executed, struct fb_outcome *o);

#endif /* KFORGE_FEEDBACK_H */
