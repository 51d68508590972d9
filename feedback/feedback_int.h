/*
 * feedback_int.h: internals shared by the files of feedback/ (not part of its API).
 *
 * The files call one another without a circle: each uses only files on the lines above
 * its own, so that each can be read, changed and tested from the bottom up.
 *   contain.c result.c watch.c text.c   containment's decisions; a runner's result
 *   cache.c stage.c judge.c             the cache's place; where runners work; the judge
 *   env.c policy.c                      what a runner is started with; a step's sandbox
 *   timing.c warm.c                     timing presets; runners started ahead, servers
 *   entries.c run.c                     the cache's builds and baselines; a runner step
 *   profile.c                           a profile's runs
 *   verdict.c selftest.c                verdicts and static checks; the selftest
 *   steps.c                             the caches' build and baseline; the three steps
 *                                       (precompile, execute, profile); the GPU probes
 *   evaluate.c                          a candidate through every step
 */
#ifndef KFORGE_FEEDBACK_INT_H
#define KFORGE_FEEDBACK_INT_H

#include <stdatomic.h>

#include "feedback/feedback.h"

/* env.c: what a runner is started with. Its environment, an envp of the allow-listed
 * variables (feedback.h's protocol): fb_env_build makes it (cuda_visible: NULL leaves
 * CUDA_VISIBLE_DEVICES unset, "" hides every GPU; precompile: a build's MAX_JOBS, else
 * on the CPU an execution's threads); fb_env_contained adds whom HOME, USER and TMPDIR
 * name when the runner runs as runner.user: its scratch (work_dir; a sandboxed runner
 * writes nowhere else, so its TMPDIR is its scratch, whoever it runs as), and Triton's
 * cache (TRITON_CACHE_DIR) in that scratch for every runner; fb_env_set
 * sets one variable (never llm.api_key_env); fb_env_clear frees them. */
#define FB_ENV_MAX	64
struct fb_env {
	char	*v[FB_ENV_MAX + 1];
	int	 n;
	const char *key_name;	/* cfg->llm.api_key_env: refused even if allow-listed */
};
void	fb_env_build(struct fb_env *e, const struct kb_config *cfg, const char *build_dir,
		     const char *cuda_visible, bool precompile);
void	fb_env_contained(struct fb_env *env, const char *work_dir);
void	fb_env_set(struct fb_env *e, const char *name, const char *value);
void	fb_env_clear(struct fb_env *e);
/* The limits and capture every runner gets, deadline in seconds, and its containment. */
void	fb_runner_limits(const struct kb_config *cfg, struct kb_spawn_opts *o, int deadline);
/* How many of a host of cores, from the first, the builds run on; every other step runs
 * on the rest (env.c has the why). */
long	fb_build_cores(const struct kb_config *cfg, bool cuda, long cores);

/* A runner's start (the interpreter, torch's import, a CUDA context, and on a loaded
 * machine tens of seconds of waiting for a core) has this long beyond its step's deadline
 * (run.c), and a fork server as long to answer with a runner (warm.c). */
#define FB_START_ALLOWANCE_S	300

/* watch.c: what one runner does to the host beyond its own process. fb_run installs
 * fbw_on_start and fbw_should_stop as the spawn hooks; they call the request's own. */
struct fb_watch {
	void		(*on_start)(pid_t pid, void *arg);	/* the request's hooks */
	void		*on_start_arg;
	bool		(*should_stop)(void *arg);
	void		*stop_arg;
	long long	 cap_kb;	/* resident memory of the runner's processes */
	pid_t		 pid;		/* the runner, once started */
	int64_t		 next_poll_ms;
	long long	 peak_kb;	/* largest total seen */
	bool		 over_cap;	/* killed for memory */
	/* The candidate's own deadline (fbw_time_from): from the moment the runner writes
	 * started_file, not from its start. */
	char		 started_file[PATH_MAX];
	struct timespec	 armed;		/* a started_file older than this is an earlier step's */
	int64_t		 started_ms;	/* monotonic, when it was seen; 0: not yet */
	int64_t		 exec_limit_ms;
	bool		 exec_timed_out;	/* killed at that deadline */
	/* An execute's judge (run.c): once it has ended, the moment (monotonic ms) from
	 * which its candidate's runner, with nothing left to answer to, is killed once past
	 * its own start (started_file); 0 while it runs. Written by the judge's thread. */
	const _Atomic int64_t *judge_gone_from;
	bool		 judge_gone;	/* killed so */
};

void	fbw_init(struct fb_watch *w, const struct kb_config *cfg, const struct fb_request *req);
/* The runner's group is killed limit_ms after file is (re)written, which the runner does
 * when the candidate's time begins (its request's started_file). */
void	fbw_time_from(struct fb_watch *w, const char *file, int64_t limit_ms);
void	fbw_on_start(pid_t pid, void *arg);
bool	fbw_should_stop(void *arg);
/* After a runner ended: kills and reaps every child of this process but keep (the warm
 * runner; 0: none) when it adopts strays (fb_adopt_strays), counting those found still running (they escaped the
 * group kill) and the zombies a signal had killed (the group kill got them). */
struct fb_strays {
	int	running, killed;
};
void	fbw_reap_strays(struct fb_strays *out, const pid_t *keep, size_t nkeep);

/* result.c: a result's "flags" array (made when it has none), and flag added to it once;
 * every flag kforge itself raises on a result goes through fb_flag (here, the judge's
 * merge, the verdicts). */
json_t	*fb_flags_of(json_t *result);
void	fb_flag(json_t *result, const char *flag);
/* result.c: what a runner step came back as. fb_mode_name: a mode by its protocol name
 * ("precompile" ...). fb_result_classify: the result to keep of a runner that ended as r
 * (log: its captured output; deadline: its own, in seconds; w: its watch): its own where
 * it wrote a well-formed one (flagged when it hung or died after), else one synthesized
 * in its shape that says how it ended; "runner" and "wall_ms" added; NULL only when out
 * of memory. fb_result_note_leftovers: what the runner left besides its result, flagged
 * in res: output past the capture cap, and the processes that outlived it (s); those
 * killed with its group count only when it ended on its own (after a deadline or the
 * memory kill they were killed mid-work, not left). fb_result_of_judge: the judge's own
 * result from its end (rc: kb_spawn_finish's; -KB_ESTOPPED: stopped, its candidate's
 * runner never ran) with "runner" and "judge_wall_ms", or NULL with why where it wrote
 * none. fb_outcome_fill: o from res (a result to keep, which o takes). */
const char	*fb_mode_name(enum fb_mode mode);
json_t	*fb_result_classify(const struct fb_request *req, const struct kb_spawn_result *r,
			    const char *log, int deadline, const struct fb_watch *w);
void	fb_result_note_leftovers(json_t *res, const struct kb_spawn_result *r,
				 const struct fb_watch *w, const struct fb_strays *s);
json_t	*fb_result_of_judge(int rc, const struct kb_spawn_result *r, char *why, size_t whylen);
void	fb_outcome_fill(struct fb_outcome *o, json_t *res);
/* result.c: the count of processes a runner in namespaces of its own left, which its
 * namespace's init killed, taken off the end of its result (FB_NS_TRAILER and the
 * count, its waiter's last line); 0 where there is none. */
int	fb_ns_trailer_take(struct kb_buf *result);
/* What a runner writes first on its result pipe when it is about to run the candidate's
 * code (the request's "candidate_mark"): a pipe keeps what was written, so a result
 * that follows it cannot say that no candidate code ran (details.candidate_ran, which
 * spares the turn: fsm/actions.c, runner_failure). fb_candidate_mark_take takes it off
 * the front of a result and says whether it was there. */
#define FB_CANDIDATE_MARK	"\x1ekforge-candidate\n"
bool	fb_candidate_mark_take(struct kb_buf *result);

/* warm.c: the runners started ahead and the fork servers they come from (warm.c has the
 * whole story; their state is its own). fb_warm_take_for: the runner waiting for a step
 * of req run by python and runner that sees the GPUs visible (NULL: the variable unset),
 * or one forked for it where a server can; NULL: start it cold. It notes visible as the
 * GPU the next one is for. fb_warm_request: what a runner taken so is told in its request
 * (env and o: as a cold one would have been started). fb_warm_put_back: a runner taken
 * and never handed its request, kept for the next step where none waits, else ended.
 * fb_warm_start_next: the runner of the step after req, started now where a runner step
 * is to follow (done: req's outcome once there is one; NULL while it runs).
 * fb_warm_fork: a runner whose request comes at once (an execute's judge, a selftest),
 * forked as a warm runner would be by the same server; -KB_EEXEC where none serves
 * python and runner. fb_warm_pids: the processes a
 * step's reaping of strays spares (the warm runner, the servers), at most FB_WARM_PIDS. */
struct kb_spawn	*fb_warm_take_for(const struct kb_config *cfg, const struct fb_request *req,
				  const char *python, const char *runner, const char *visible);
int	fb_warm_request(json_t *jreq, const struct fb_env *env, const struct kb_spawn_opts *o);
void	fb_warm_put_back(struct kb_spawn *child);
void	fb_warm_start_next(const struct kb_config *cfg, const struct fb_request *req,
			   const char *python, const char *runner, const struct fb_outcome *done);
int	fb_warm_fork(const struct kb_config *cfg, const char *python, const char *runner,
			   const char *visible, struct kb_spawn **child);
#define FB_WARM_PIDS	3
size_t	fb_warm_pids(pid_t out[FB_WARM_PIDS]);

/* judge.c: an execute's result from the candidate's runner's (cand, classified as any
 * runner's) and its judge's (judge, its own result; NULL when it wrote none, judge_why
 * saying why): correctness, timings and speedup are the judge's, the candidate's build
 * output, exception and flags are added; a candidate side that failed keeps its own
 * result with the judge's trials. Takes both references; returns the one result. */
json_t	*fbj_merge(json_t *cand, json_t *judge, const char *judge_why);
/* The same when the judge ended first and the candidate's runner was killed for it
 * (fb_watch.judge_gone): a judge that had the runner's connection (fbj_connected) gives
 * fbj_merge's result; one that failed before makes the execute fail with its status
 * (judge_failed), kforge's failure alone (runner_error, spending no turn) if the
 * candidate's code had not run. */
bool	 fbj_connected(const json_t *judge);
json_t	*fbj_left(json_t *cand, json_t *judge, const char *judge_why, bool candidate_ran);

/* profile.c: whether the CUPTI library is there to profile with (fb_kprof_library),
 * and how many kernels the library lists by name (KPROF_TOP; the rest are "other"):
 * more than the text shows, so that the profile rule sees the candidate's kernel
 * however many of torch's ran beside it. */
bool	fb_kprof_usable(void);
#define FB_KPROF_TOP_TEXT	"64"

/* env.c: whether a selftest makes the shared cache's precompiled headers: with
 * runner.fast_build, for load_inline's builds (a raw-format selftest proves the raw
 * build, which uses none). run.c hands their directory to it; selftest.c keeps a pass
 * only once they are there. */
bool	fb_selftest_makes_pch(const struct kb_config *cfg);
/* stage.c: logs where the runners work when it is not the run directory (called by
 * fb_contain_report). */
void	fb_stage_report(void);
/* A scratch directory base/kforge-<what>-XXXXXX, ours, opened to the runner's user
 * (0755), locked while this process lives (*lock_fd): the next one of its kind made
 * under base removes those whose lock is free, left by a process that was killed.
 * fb_scratch_end removes it (remove) or keeps it unlocked, and closes the lock. */
#define FB_SCRATCH_LOCK	".kforge-scratch.lock"
int	fb_scratch_make(const char *base, const char *what, char *out, size_t n, int *lock_fd,
			char *err, size_t errlen);
int	fb_scratch_end(const char *path, int lock_fd, bool remove);

/* contain.c: whether the sandbox is strict (runner.sandbox), a layer missing then refused;
 * whether the host lets runners make namespaces of their own (sandbox.h). */
bool	fb_contain_strict(void);
bool	fb_contain_namespaces(void);
/* policy.c: a step's sandbox for its request ({"lib", "spec"}: sandbox.h's policy;
 * "namespaces": whether the runner enters its own, "strict", and "trailer":
 * FB_NS_TRAILER), the one home of which paths a runner may read and write; judge: the
 * judge's (it may signal the candidate's runner, and so enters no PID namespace);
 * writes_build: the step makes its build (fb_run decides: a
 * precompile, a selftest, or an execute whose build is gone); runner: the runner script's
 * path. NULL: out of memory. */
json_t	*fb_contain_sandbox(const struct fb_request *req, bool judge, bool writes_build,
			    const char *runner);
/* What a namespace's waiter writes last on the result pipe, before the count of the
 * processes the runner left (kforge_runner.py's NS_WAIT takes it from the request). */
#define FB_NS_TRAILER	"\n\x1ekforge-ns "
/* The shared cache's root (cache.c): hidden from every runner. */
int	fb_cache_root(char *out, size_t n);

/* ----------------------------------------------------------------------------------
 * Declared in feedback.h until the steps (steps.c) became what other modules call:
 * what only feedback/ (and its tests) uses.
 */
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
void	fb_contain_apply(struct kb_spawn_opts *o);
/* How fb_run reads the runner's fd-3 result, public so that its fuzz target
 * (tests/feedback/fuzz_result.c) reaches it: text is n bytes of anything; a JSON object with
 * a known "status" fills o (status, compiled, correct; runtime_ms, ref_runtime_ms and
 * speedup each a finite value >= 0, or -1 for "not measured"; result owned by o, free
 * with fb_outcome_clear) and returns 0. Anything else returns -KB_ECORRUPT with a
 * one-line reason in why, printable ASCII, phrased to follow "the runner exited with
 * status N and ..." ("no result", "an unparsable result (...)", ...). */
int	fb_result_parse(const char *text, size_t n, struct fb_outcome *o, char *why,
			size_t whylen);
const char *fb_stage_root(void);	/* the run directory fb_stage_open was given, or NULL */
/* The path by which the runner reads path: path itself when its user can, else a
 * root-owned read-only copy under <root>/inputs/ (named by content). fb_run uses it for
 * the problem, the candidate and the runner script. */
int	fb_stage_input(const char *path, char *out, size_t n);
/* The identity of the runner's environment for a device, as a SHA-256 hex string: the
 * Python (and the torch under it), the compilers and ninja, the arch list, the runner's
 * user, runner.fast_build, and the runner's source. Keys the selftest's pass records
 * (with whether the fast-build headers exist), the builds, the baselines and the memo
 * of which Python imports torch. */
int	fb_env_key(const struct kb_config *cfg, const char *device, const char *python,
		   char sha[65]);
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
/* The cores a worker's warm runner starts on, before its request moves it to its step's
 * (builds and timings apart): true and [*first, *last) on a GPU host of cores that keeps
 * some for the steps on the GPU, false (left where it is) otherwise. */
bool	fb_warm_cpu_range(const struct kb_config *cfg, long cores, int *first, int *last);
/* On the CPU, where on a host of cores a run's builds begin (its timings take the cores
 * after them, modulo cores): a function of the run directory, so that runs side by side
 * spread their builds over the host; 0 for a NULL root (outside a run). */
long	fb_cpu_turn(const char *root, long cores);
/* Whether candidates build in the raw format (eval.format raw: extern "C" launchers
 * through kforge's load_cuda / load_cpp) rather than with torch's load_inline. */
bool	fb_raw_format(const struct kb_config *cfg);
void	fb_build_touch(const char *build_dir);
/* Whether a precompile's outcome is the code's alone, to keep beside its build
 * (compile.json) for every later request of the same code. */
bool	fb_build_cacheable(enum fb_status st);
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
/* req, a precompile, found its build in the cache: the runner waiting for it is replaced
 * by the one its execute would have been handed at the precompile's start (warm.c,
 * warm_cuda_ahead), on a GPU; nothing elsewhere. */
void	fb_warm_built(const struct kb_config *cfg, const struct fb_request *req);
pid_t	fb_warm_pid(void);
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
/* Statuses after which the GPU itself may be broken, not just the candidate. */
bool	fb_runner_faulted(enum fb_status st);
/* A probe is a tiny kernel; longer is a hung GPU. */
#define FB_PROBE_TIMEOUT_S	120
/* Probes req's GPU (its device, work directory and hooks; run as FB_PROBE), each time
 * in a fresh runner (a fresh CUDA context), until hooks->health_decide settles. 0, or
 * -KB_ESTOPPED (the GPU was not judged). */
int	fb_probe_health(const struct kb_config *cfg, const struct fb_request *req,
			enum fb_status fault, const struct fb_step_hooks *hooks,
			struct fb_health *out);
/* The result of a candidate rejected by its findings: {status: "rejected", compiled:
 * false, correct: false, findings, details: {message}, verdict, reasons}. */
json_t	*fb_rejection(const json_t *findings);
/* The request's "timing" object: method, l2_flush, discard_first, max_spread,
 * max_passes, budget_s, statistic, hold_us and the preset's name. */
json_t	*fb_timing_request(const struct kb_config *cfg, bool cuda);

bool	fb_contain_sandboxed(void);
/* The static checks of a candidate against its problem, by the config's device, format,
 * precision and eval.torch_ops (none with eval.static_checks false): *findings is a new array of {rule, severity: error|
 * warning, line, message}. They only parse the code (Python's ast, no torch, nothing
 * of the candidate runs), in the runner's Python. < 0 with err when they could not run
 * (-KB_ENOPYTHON, -KB_EEXEC, -KB_ECORRUPT: the checker failed; a broken checker must not
 * pass a candidate). */
int	fb_static_check(const struct kb_config *cfg, const char *problem_path,
			const char *candidate_path, json_t **findings, char *err, size_t errlen);
/* Judges result (a runner's, or one of the above) in place: settles its "speedup",
 * "speedup_ci95" and "ref_runtime_ms" (the runner's when it timed the reference beside
 * the candidate, else baseline's eager mean over the candidate's; baseline may be NULL),
 * adds "excessive_speedup" to its flags when the speedup, by the means and by the
 * medians, is above FB_EXCESSIVE_SPEEDUP, keeps the static findings (NULL: none) as "findings", and sets
 * "verdict" and "reasons". Returns the verdict. */
enum fb_verdict	fb_judge(json_t *result, const json_t *findings, const json_t *baseline);
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

#endif /* KFORGE_FEEDBACK_INT_H */
