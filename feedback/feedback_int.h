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
 *   evaluate.c                          a candidate through every step
 */
#ifndef KFORGE_FEEDBACK_INT_H
#define KFORGE_FEEDBACK_INT_H

#include "feedback/feedback.h"

/* env.c: what a runner is started with. Its environment, an envp of the allow-listed
 * variables (feedback.h's protocol): fb_env_build makes it (cuda_visible: NULL leaves
 * CUDA_VISIBLE_DEVICES unset, "" hides every GPU; precompile: a build's MAX_JOBS, else
 * on the CPU an execution's threads); fb_env_contained adds whom HOME, USER and TMPDIR
 * name when the runner runs as runner.user: its scratch (work_dir; a sandboxed runner
 * writes nowhere else, so its TMPDIR is its scratch, whoever it runs as); fb_env_set
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

/* warm.c: the runners started ahead and the fork servers they come from (warm.c has the
 * whole story; their state is its own). fb_warm_take_for: the runner waiting for a step
 * of req run by python and runner that sees the GPUs visible (NULL: the variable unset),
 * or one forked for it where a server can; NULL: start it cold. It notes visible as the
 * GPU the next one is for. fb_warm_request: what a runner taken so is told in its request
 * (env and o: as a cold one would have been started). fb_warm_put_back: a runner taken
 * and never handed its request, kept for the next step where none waits, else ended.
 * fb_warm_start_next: the runner of the step after req, started now where a runner step
 * is to follow (done: req's outcome once there is one; NULL while it runs).
 * fb_warm_fork_judge: an execute's judge, forked as a warm runner would be by the same
 * server; -KB_EEXEC where none serves python and runner. fb_warm_pids: the processes a
 * step's reaping of strays spares (the warm runner, the servers), at most FB_WARM_PIDS. */
struct kb_spawn	*fb_warm_take_for(const struct kb_config *cfg, const struct fb_request *req,
				  const char *python, const char *runner, const char *visible);
int	fb_warm_request(json_t *jreq, const struct fb_env *env, const struct kb_spawn_opts *o);
void	fb_warm_put_back(struct kb_spawn *child);
void	fb_warm_start_next(const struct kb_config *cfg, const struct fb_request *req,
			   const char *python, const char *runner, const struct fb_outcome *done);
int	fb_warm_fork_judge(const struct kb_config *cfg, const char *python, const char *runner,
			   const char *visible, struct kb_spawn **child);
#define FB_WARM_PIDS	3
size_t	fb_warm_pids(pid_t out[FB_WARM_PIDS]);

/* judge.c: an execute's result from the candidate's runner's (cand, classified as any
 * runner's) and its judge's (judge, its own result; NULL when it wrote none, judge_why
 * saying why): correctness, timings and speedup are the judge's, the candidate's build
 * output, exception and flags are added; a candidate side that failed keeps its own
 * result with the judge's trials. Takes both references; returns the one result. */
json_t	*fbj_merge(json_t *cand, json_t *judge, const char *judge_why);

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
json_t	*fb_contain_sandbox(const struct kb_config *cfg, const struct fb_request *req,
			    bool judge, bool writes_build, const char *runner);
/* What a namespace's waiter writes last on the result pipe, before the count of the
 * processes the runner left (kforge_runner.py's NS_WAIT takes it from the request). */
#define FB_NS_TRAILER	"\n\x1ekforge-ns "
/* The shared cache's root (cache.c): hidden from every runner. */
int	fb_cache_root(char *out, size_t n);

#endif /* KFORGE_FEEDBACK_INT_H */
