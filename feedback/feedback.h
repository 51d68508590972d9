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
 * then python3 on a short list of places, where the first that has torch wins. An
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
	char	start[16];		/* how its runner started: "forked" (from the run's
					 * server), "cold"; "" when cached */
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
/* A child of this process that is no runner and outlives runners (a worker's agent,
 * which asks for evaluations while it runs) is spared by that reaping; 0: none. */
void	fb_strays_spare(pid_t pid);
/* The sandbox spec (sandbox.h's kforge_sandbox_apply) an agent (llm.provider agent) is
 * held to: as a runner, it reads neither the run directory, its staging directory nor
 * the caches, but it writes its workspace and the temporary directory and keeps the
 * network (its own model); strict as the runners are. Caller frees; NULL on OOM. */
char	*fb_agent_sandbox_spec(const char *run_dir, const char *workspace);

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
/* A run's fork server (warm.c has the story), in its supervisor: fb_warm_serve starts it
 * (with runner.warm; -KB_EEXEC where it cannot be: the workers then keep their own);
 * fb_warm_serve_pid is its pid (0: none); fb_warm_serve_reaped says whether a child the supervisor reaped was it (then
 * forgotten); fb_warm_serve_end kills it at the run's end. In a worker forked after it
 * started, fb_warm_hold(fd): fd, the write end of a pipe the supervisor reads, is held by
 * the watcher of every runner the server forks for this worker until that runner and what
 * it left are gone, and never by a runner. fb_warm_watcher_for: the process a watcher of a
 * shared server watches for (its name says), 0 for a process that is none. */
int	fb_warm_serve(const struct kb_config *cfg);
pid_t	fb_warm_serve_pid(void);
bool	fb_warm_serve_reaped(pid_t pid);
void	fb_warm_serve_end(void);
void	fb_warm_hold(int fd);
pid_t	fb_warm_watcher_for(pid_t pid);


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
const char *fb_contain_user(void);	/* the runner's user name; NULL: not switched */
/* The sandbox (contain.c, sandbox/): its mode and layers as a line ("strict: landlock ABI
 * 7, scope on, seccomp on"; false when a layer is missing) and as run.json records it;
 * whether runners apply Landlock at all (a runner must then be one thread when it does:
 * no CUDA started ahead). */
bool	fb_contain_describe_sandbox(char *out, size_t n);
json_t	*fb_contain_sandbox_json(void);
/* -KB_ECONFIG and why (naming the layers and runner.sandbox: best_effort) where the
 * sandbox is strict and the host lacks a layer: nothing may run then. */
int	fb_contain_sandbox_ready(char *err, size_t errlen);

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
/* <root>/build/<key> and <root>/tasks/<id>/work for a run directory (not created). */
int	fb_stage_build_dir(const char *run_dir, const char *key, char *out, size_t n);
int	fb_stage_work_dir(const char *run_dir, const char *task_id, char *out, size_t n);
/* mkdir -p whose new directories below the root are 0755 whatever the umask. */
int	fb_stage_mkdir(const char *path);
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
/* The threads an execution slot gets on the CPU (OMP_NUM_THREADS): the cores the compile
 * slots leave, shared by the CPU execution slots. */
long	fb_cpu_threads(const struct kb_config *cfg);
/* Whether a step runs on a GPU: the request's device where it names one (req may be
 * NULL), else the config's (eval.device, resolved from auto when a run starts). */
bool	fb_on_cuda(const struct kb_config *cfg, const struct fb_request *req);
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
/* Whether any finding is an error: the candidate is rejected before it is built. */
bool	fb_findings_reject(const json_t *findings);
/* The reasons of a judged result as text for the model, one "- line N: message" line
 * each, with a heading saying what the verdict means; NULL when the verdict is correct
 * or incorrect with no reason to add (the feedback says why already). */
char	*fb_verdict_feedback(const json_t *result);

/* ------------------------------------------------------------ the evaluation (evaluate.c)
 * What every candidate goes through, one way for a run's turns, `kforge eval` and
 * `kforge baseline`: the three steps below (steps.c). fb_evaluate takes a candidate
 * through them in a row (`kforge eval`); a run takes each in the state and slot it
 * belongs to (PRECOMPILE in a compile slot, EXECUTE and PROFILE on a leased GPU, with
 * the GPU health rule after a fault), through the same functions. */

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

struct fb_baseline {
	json_t		*record;	/* fb_baseline_record's */
	bool		 cache_hit;	/* the run's copy or the shared cache had it */
	int64_t		 wall_ms;	/* of the baseline runner, when one ran */
	int		 shared_rc;	/* keeping a measured one in the shared cache: 0,
					 * or why it is not there (a run keeps its own) */
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

/* ------------------------------------------------------------ the steps (steps.c)
 * A candidate's three steps, the same in a run's turn (fsm/actions.c: PRECOMPILE,
 * EXECUTE, PROFILE), in `kforge eval` (fb_evaluate) and, for the baseline, `kforge
 * baseline`. The caller lends the resources through hooks and maps what a step found to
 * its own ends (a run's events, eval's report); every hook may be NULL, hooks too (eval:
 * no slot, no lease, nothing probed). */
enum fb_health_next { FB_HEALTH_REPROBE, FB_HEALTH_RETURN, FB_HEALTH_QUARANTINE };
/* What the GPU's health probes after a runner's fault found (fb_probe_health). */
struct fb_health {
	enum fb_health_next	 next;		/* RETURN or QUARANTINE: the rule's last word */
	int			 failures;	/* probes that failed */
	char			 last[256];	/* the last failed one, "status: message" */
};
struct fb_step_hooks {
	/* precompile: the compile slot, taken only when a build must run (its ready is
	 * the fault point before the build's runner). */
	struct fb_slot	 compile;
	/* precompile: the static checks' findings, before anything else is done with them
	 * (a run keeps them beside the turn); < 0 ends the step with it. */
	int	(*checked)(const json_t *findings, void *arg);
	/* execute: the execution slot, for the whole step; take sets *device (the CUDA
	 * ordinal, -1: the CPU) and name (the device's model, which keys baselines); < 0:
	 * not taken, the step returns it. NULL: req's device and the caller's name. */
	int	(*lease_take)(void *arg, int *device, char *name, size_t n);
	void	(*lease_give)(void *arg);
	/* precompile: a warm runner is starting (on), then has started (off): a worker's
	 * first start imports torch, seconds in no slot that a run shows. */
	void	(*runner_starting)(bool on, void *arg);
	/* Each runner a step starts, as it runs, with its mode (judge: an execute's). */
	void	(*runner_started)(pid_t pid, enum fb_mode mode, bool judge, void *arg);
	/* Fault injection at a step's fixed points ("execute-before-runner"). */
	void	(*fault)(const char *point, void *arg);
	/* GPU health after a runner's fault (fb_runner_faulted) on a GPU, the lease held:
	 * health_decide is the pool's rule for each probe (failures so far, whether this
	 * one passed); health_failures how many failed probes it takes (for the log);
	 * health_settled is told what the probes found (fault: the runner's status) while
	 * the GPU is still held. No health_decide: nothing is probed. */
	enum fb_health_next (*health_decide)(int failures, bool ok, void *arg);
	int	 health_failures;
	void	(*health_settled)(const struct fb_health *h, enum fb_status fault, void *arg);
	/* profile: the reference's profile, made now, still under the lease (a run keeps
	 * it for the task's later turns); < 0 ends the step with it. */
	int	(*reference_profiled)(const struct fb_outcome *o, void *arg);
	void	*arg;
};

/* Precompile: the static checks (a rejected candidate is not built: rejected, result
 * fb_rejection's), then the build of req->candidate_path in req->build_dir through the
 * build cache (fb_eval_build) in hooks->compile. < 0 with err when the static checks
 * could not run (checks_failed), else as fb_eval_build. out is the caller's to clear. */
struct fb_precompiled {
	json_t		*findings;	/* the static checks' */
	bool		 checks_failed, rejected;
	json_t		*result;	/* the rejection, or the build's (compile.json) */
	struct fb_build	 build;
	int64_t		 runner_start_ms;	/* its warm runner's start; -1: none started */
};
int	fb_step_precompile(const struct kb_config *cfg, const struct fb_request *req,
			   const char *run_dir, const struct fb_step_hooks *hooks,
			   struct fb_precompiled *out, char *err, size_t errlen);
void	fb_precompiled_clear(struct fb_precompiled *p);
/* Execute, under the lease: the reference alone through the baseline cache
 * (fb_eval_baseline: problem_key, the device's name, run_dir); if it is ok the
 * execution with the reference timed beside the candidate; after a runner's fault the
 * GPU's probes; then, the lease given back, a failure for want of disk space is
 * -KB_ENOSPC, and an executed result that is no env_error is judged (fb_judge with
 * findings and the baseline: verdict). Returns as fb_run. */
struct fb_executed {
	struct fb_baseline	 baseline;
	bool			 executed, judged, probed;
	struct fb_outcome	 run;		/* the execution's, when executed */
	enum fb_verdict		 verdict;	/* when judged */
	int			 device;	/* the one leased */
	struct fb_health	 health;	/* when probed */
};
int	fb_step_execute(const struct kb_config *cfg, const struct fb_request *req,
			const char *problem_key, const char *device_name, const char *run_dir,
			const json_t *findings, const struct fb_step_hooks *hooks,
			struct fb_executed *out);
void	fb_executed_clear(struct fb_executed *e);
/* Profile, under the lease: the reference's profile as asked, the candidate's (fb_profile,
 * named by tag), the GPU's probes after a runner's fault, and, the lease given back, the
 * profile rule (fb_judge_profile) on judged, in place, with the candidate's source and
 * the reference's profile (the one kept, else the one made now). Returns as fb_run. */
enum fb_ref_profile {
	FB_REF_PROFILE_NONE,	/* none made now (kept, or none to compare with) */
	FB_REF_PROFILE_NOW,	/* made now; its failure is the step's */
	FB_REF_PROFILE_TRY,	/* made now where it can be: only a stop or a full disk
				 * ends the step, else it is left out this time */
};
struct fb_profile_ask {
	const char		*tag;			/* the candidate's runs' name */
	enum fb_ref_profile	 reference;
	const json_t		*reference_profile;	/* kept from before; NULL: none */
	json_t			*judged;		/* a judged execute result; NULL: no rule */
	const char		*source;		/* the candidate's code, for the rule */
	bool			 cupti_only;		/* the rule by a CUPTI profile alone */
};
struct fb_profiled {
	struct fb_outcome	 reference;	/* the reference's, when reference_ran */
	struct fb_outcome	 run;		/* the candidate's */
	bool			 reference_ran, probed, judged;
	enum fb_verdict		 verdict;	/* when judged */
	int			 device;
	struct fb_health	 health;	/* when probed */
};
int	fb_step_profile(const struct kb_config *cfg, const struct fb_request *req,
			const struct fb_profile_ask *ask, const struct fb_step_hooks *hooks,
			struct fb_profiled *out);
void	fb_profiled_clear(struct fb_profiled *p);

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
