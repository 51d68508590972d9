/*
 * run.c: one runner step (docs/DESIGN.md §5), fb_run. Builds the JSON request, gives the
 * runner its environment and Python (env.c), hands the request to a runner started ahead
 * (warm.c) or spawns feedback/kforge_runner.py with kb_spawn_run (own group, deadline,
 * rlimits, capped output, result on fd 3), starts an execute's judge beside it, and turns
 * what came back into an fb_outcome (result.c reads it, and synthesizes one in the
 * runner's shape where the runner could not report; judge.c makes an execute's two
 * results one).
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "feedback/feedback_int.h"
#include "base/banned.h"

/* ------------------------------------------------------------ request */

/* The request's "cpus": a build's are the first fb_build_cores of the host, every other
 * step's the rest (env.c says why). */
static json_t *
step_cpus(const struct kb_config *cfg, const struct fb_request *req, bool cuda)
{
	long	cores = sysconf(_SC_NPROCESSORS_ONLN);
	long	split = fb_build_cores(cfg, cuda, cores), first, last, turn;
	json_t	*cpus = json_array();

	/* The selftest is the run's first step, before any timing, and builds its headers
	 * in parallel: every core. */
	if (cores < 2 || split >= cores || req->mode == FB_SELFTEST)
		return cpus;
	first = req->mode == FB_PRECOMPILE ? 0 : split;
	last = first == 0 ? split : cores;
	/* On a GPU host the builds keep the first cores, where warm runners wait for their
	 * request (fb_warm_cpu_range). */
	turn = cuda ? 0 : fb_cpu_turn(fb_stage_root(), cores);
	for (long c = first; c < last; c++)
		json_array_append_new(cpus, json_integer((c + turn) % cores));
	return cpus;
}

/* The steps that run a candidate's code (an execute, a profile) time it from the moment
 * the runner writes FB_STARTED_FILE in its work directory, just before it loads the
 * models (fbw_time_from): eval.timeout_s is the candidate's. The runner's start before
 * that (the interpreter, torch's import, a CUDA context, and on a loaded machine tens of
 * seconds of waiting for a core) has FB_START_ALLOWANCE_S more, which the spawn's own
 * deadline adds; it also bounds a runner that never writes the file. */
#define FB_STARTED_FILE		".kforge_started"

static bool
timed_from_start(const struct fb_request *req, char *file, size_t n)
{
	return (req->mode == FB_EXECUTE || req->mode == FB_PROFILE) && req->work_dir != NULL &&
	       kb_path_join(file, n, req->work_dir, FB_STARTED_FILE) == 0;
}

static json_t *
build_request(const struct kb_config *cfg, const struct fb_request *req)
{
	const char	*precision = cfg->eval.precision != NULL ? cfg->eval.precision : "fp32";
	bool		 cuda = fb_on_cuda(cfg, req);
	char		 pch[PATH_MAX], started[PATH_MAX];
	json_t		*r;

	r = json_pack("{s:s, s:s, s:s, s:s, s:i, s:I, s:I, s:I, s:I, s:o, s:o,"
		      " s:o, s:b, s:b, s:b}",
		      "mode", fb_mode_name(req->mode),
		      "device", cuda ? "cuda" : "cpu",
		      "precision", precision,
		      "problem", req->problem_path != NULL ? req->problem_path : "",
		      "device_index", req->device_index,
		      "seed", (json_int_t)cfg->eval.seed,
		      "correctness_trials", (json_int_t)cfg->eval.correctness_trials,
		      "perf_trials", (json_int_t)cfg->eval.perf_trials,
		      "warmup", (json_int_t)cfg->eval.warmup,
		      "atol", cfg->eval.atol >= 0 ? json_real(cfg->eval.atol) : json_null(),
		      "rtol", cfg->eval.rtol >= 0 ? json_real(cfg->eval.rtol) : json_null(),
		      "timing", fb_timing_request(cfg, cuda),
		      "time_reference", req->time_reference && fb_timing_preset(cfg)->interleave,
		      "baseline_compile", req->mode == FB_BASELINE && cuda &&
					  cfg->eval.baseline_compile,
		      "allow_tf32", cfg->eval.allow_tf32);
	if (r == NULL)
		return NULL;
	/* The shared cache's precompiled headers, for the steps that may build with
	 * load_inline (a selftest: the one that makes them). */
	if ((req->mode == FB_SELFTEST ? fb_selftest_makes_pch(cfg) :
	     (req->mode == FB_PRECOMPILE || req->mode == FB_EXECUTE || req->mode == FB_PROFILE) &&
	     cfg->runner.fast_build) &&
	    fb_cache_dir("pch", NULL, pch, sizeof(pch)) == 0)
		json_object_set_new(r, "pch_dir", json_string(pch));
	if (req->mode == FB_SELFTEST)
		json_object_set_new(r, "format", json_string(fb_raw_format(cfg) ? "raw" :
							     "load_inline"));
	if (req->candidate_path != NULL)
		json_object_set_new(r, "candidate", json_string(req->candidate_path));
	if (req->build_dir != NULL)
		json_object_set_new(r, "build_dir", json_string(req->build_dir));
	if (req->work_dir != NULL)
		json_object_set_new(r, "work_dir", json_string(req->work_dir));
	if (req->mode == FB_PROFILE) {
		json_object_set_new(r, "profile_reference", json_boolean(req->profile_reference));
		json_object_set_new(r, "kprof", json_boolean(cuda && req->kprof_out != NULL));
	}
	if (cuda && cfg->eval.inputs != NULL && strcmp(cfg->eval.inputs, "device") == 0)
		json_object_set_new(r, "input_placement", json_string("device"));
	json_object_set_new(r, "cpus", step_cpus(cfg, req, cuda));
	if (timed_from_start(req, started, sizeof(started)))
		json_object_set_new(r, "started_file", json_string(started));
	json_object_set_new(r, "candidate_mark", json_string(FB_CANDIDATE_MARK));
	/* The tests' way to make the runner fail in its own code before the candidate's
	 * runs (KFORGE_CRASHPOINT=runner-fault-precompile or -execute, armed as base/err.c
	 * arms crash points): the failure that spends no turn (fsm/actions.c,
	 * runner_failure). */
	if ((req->mode == FB_PRECOMPILE && kb_crashpoint_due("runner-fault-precompile")) ||
	    (req->mode == FB_EXECUTE && kb_crashpoint_due("runner-fault-execute")))
		json_object_set_new(r, "fault", json_string("before_candidate"));
	return r;
}

static int
deadline_s(const struct kb_config *cfg, const struct fb_request *req)
{
	long	s = req->timeout_s > 0 ? req->timeout_s :
		    req->mode == FB_PRECOMPILE ? cfg->eval.compile_timeout_s : cfg->eval.timeout_s;

	if (s <= 0)
		s = 300;
	return s > INT_MAX / 1000 ? INT_MAX / 1000 : (int)s;
}

/* The request as the runner sees it: the problem, the candidate and the runner script by
 * paths its user can read (copies in the stage where the originals are out of reach). */
static int
stage_inputs(const struct fb_request *req, struct fb_request *staged, char *runner,
	     size_t runner_len, char problem[PATH_MAX], char candidate[PATH_MAX])
{
	char	path[PATH_MAX];
	int	rc;

	*staged = *req;
	if (req->problem_path != NULL) {
		if ((rc = fb_stage_input(req->problem_path, problem, PATH_MAX)) < 0)
			return rc;
		staged->problem_path = problem;
	}
	if (req->candidate_path != NULL) {
		if ((rc = fb_stage_input(req->candidate_path, candidate, PATH_MAX)) < 0)
			return rc;
		staged->candidate_path = candidate;
	}
	if ((rc = fb_stage_input(runner, path, sizeof(path))) < 0)
		return rc;
	return snprintf(runner, runner_len, "%s", path) < (int)runner_len ? 0 : -KB_ETOOBIG;
}

/*
 * A profile under the CUPTI injection takes a warm runner as other steps do: the driver
 * reads CUDA_INJECTION64_PATH in cuInit, and a warm runner has imported torch without
 * touching the GPU (seen on the H100/H200 hosts: the variable set after `import torch`
 * still loads the library at the first CUDA call). Should something in an import have
 * initialised the driver all the same, the library never loads and writes no profile;
 * fb_profile then runs the step again in a fresh runner (req->cold), so the profile
 * rule is never left with an empty profile by a warm start.
 */
static bool
kprof_step(const struct kb_config *cfg, const struct fb_request *req)
{
	return (req->mode == FB_PROFILE || req->mode == FB_SELFTEST) && req->kprof_out != NULL &&
	       fb_on_cuda(cfg, req);
}

/* The counter availability images of metrics runs (kprof/inject.c, availability_path):
 * read from the shared cache's kprof directory by every step, written there only by a
 * selftest, which runs no candidate's code and has the directory to itself while it runs
 * (fb_run hands it over and seals it again, as the precompiled headers'). */
static void
kprof_env(struct fb_env *env, const struct kb_config *cfg, const struct fb_request *req)
{
	char	dir[PATH_MAX];

	if (!kprof_step(cfg, req) || req->kprof_lib == NULL)
		return;
	fb_env_set(env, "CUDA_INJECTION64_PATH", req->kprof_lib);
	fb_env_set(env, "KPROF_OUT", req->kprof_out);
	fb_env_set(env, "KPROF_MODE", req->kprof_mode != NULL ? req->kprof_mode : "trace");
	fb_env_set(env, "KPROF_GATE", "profiler_api");
	fb_env_set(env, "KPROF_TOP", FB_KPROF_TOP_TEXT);
	if (req->kprof_targets != NULL && req->kprof_targets[0] != '\0')
		fb_env_set(env, "KPROF_TARGETS", req->kprof_targets);
	if (fb_cache_dir("kprof", NULL, dir, sizeof(dir)) == 0) {
		fb_env_set(env, "KPROF_AVAILABILITY_DIR", dir);
		if (req->mode == FB_SELFTEST)
			fb_env_set(env, "KPROF_AVAILABILITY_WRITE", "1");
	}
}

/* A shared cache directory that only a selftest writes (kind "pch", "kprof"), handed to
 * its runner's user for the step (fb_contain_seal_closed takes it back): dir, or "" with
 * *lock -1 where it cannot be. */
static void
selftest_dir_open(const char *kind, char *dir, size_t n, int *lock)
{
	*lock = -1;
	if (fb_cache_dir(kind, NULL, dir, n) == 0 && fb_contain_build_begin(dir, lock) == 0)
		return;
	fb_contain_build_end(NULL, *lock);
	dir[0] = '\0';
	*lock = -1;
}

/* ------------------------------------------------------------ the judge */

/*
 * An execute is two runners (docs/DESIGN.md §5, trust boundaries): the candidate's, started
 * as every runner is (warm, forked or cold), and its judge, a runner in mode "judge" that
 * imports the problem alone, never the candidate, and drives the evaluation over a Unix
 * socket it listens on in a directory of its own beside the work directory (judge/); the
 * candidate's runner connects and proves itself with a token that only the two requests
 * carry, drawn here for each execute. The judge is forked from this process's fork
 * server where it has one (a fork, not an import of torch), else started cold, handed
 * its request and waited for in a thread of its own while fb_run runs the candidate's
 * runner; then the two results are made one (judge.c).
 */
#define FB_JUDGE_SOCKET		"kforge-judge.sock"
#define FB_JUDGE_TOKEN_BYTES	24
/* The judge outlives its candidate's deadline by this much (the candidate's runner
 * ends first; the judge then writes its result). */
#define FB_JUDGE_GRACE_S	60
/* ... and ends within this once its candidate's runner has ended, else it is killed. */
#define FB_JUDGE_AFTER_S	15

struct judge {
	struct kb_spawn		*child;
	struct kb_spawn_opts	 o;
	struct kb_spawn_result	 r;
	struct fb_env		 env;
	json_t			*jreq;
	char			*request;
	const char		*argv[3];
	pthread_t		 thread;
	bool			 running;
	volatile bool		 stop;	/* its candidate's runner never came: kill it */
	/* The candidate's runner, once it runs (its watch's pid): the judge stops it while it
	 * times the reference, and a judge that dies then must not leave it stopped. */
	const volatile pid_t	*cand_pid;
	int			 rc;
	json_t			*res;		/* its result (NULL: none, why says why) */
	char			 why[256];
	/* Once it has ended: when its candidate's runner is killed if it still runs
	 * (fb_watch.judge_gone_from): at once after a judge that never took the runner's
	 * connection (it failed first: the runner would wait for it in vain),
	 * FB_JUDGE_AFTER_S after one that did (its end reaches the runner through the
	 * channel; the runner then only writes its own result and exits). */
	_Atomic int64_t		 cand_gone_from;
	char			 dir[PATH_MAX];
};

static bool
judge_should_stop(void *arg)
{
	return ((struct judge *)arg)->stop;
}

/* <parent of work_dir>/judge: beside the candidate's work directory, none of its. */
static int
judge_dir(const char *work_dir, char *out, size_t n)
{
	const char	*slash = strrchr(work_dir, '/');
	int		 len = slash != NULL && slash != work_dir ? (int)(slash - work_dir) : 0;

	if (work_dir[0] != '/' || len == 0)
		return -KB_EINVAL;
	return snprintf(out, n, "%.*s/judge", len, work_dir) < (int)n ? 0 : -KB_ETOOBIG;
}

static int
judge_token(char *out, size_t n)
{
	unsigned char	raw[FB_JUDGE_TOKEN_BYTES];
	size_t		got = 0;
	ssize_t		k;

	while (got < sizeof(raw)) {
		if ((k = getrandom(raw + got, sizeof(raw) - got, 0)) < 0) {
			if (errno == EINTR)
				continue;
			return -KB_ESYS;
		}
		got += (size_t)k;
	}
	if (n < 2 * sizeof(raw) + 1)
		return -KB_ETOOBIG;
	for (size_t i = 0; i < sizeof(raw); i++)
		snprintf(out + 2 * i, 3, "%02x", raw[i]);
	return 0;
}

static void *
judge_wait(void *arg)
{
	struct judge	*j = arg;
	pid_t		 cand;

	j->rc = kb_spawn_finish(j->child, &j->o, &j->r);
	j->child = NULL;
	if (j->cand_pid != NULL && (cand = *j->cand_pid) > 0)
		(void)kill(-cand, SIGCONT);
	j->res = fb_result_of_judge(j->rc, &j->r, j->why, sizeof(j->why));
	atomic_store(&j->cand_gone_from, kb_mono_ms() +
		     (fbj_connected(j->res) ? FB_JUDGE_AFTER_S * 1000 : 0));
	return NULL;
}

/* Starts the judge of req (an execute whose candidate's request is cjreq, which gets
 * the judge's socket and token too); 0, or < 0 with nothing left running. */
static int
judge_start(const struct kb_config *cfg, const struct fb_request *staged, json_t *cjreq,
	    const char *python, const char *runner, const char *cuda_visible, int deadline,
	    struct judge *j)
{
	struct fb_request	 jr = *staged;
	char			 sock[PATH_MAX], token[2 * FB_JUDGE_TOKEN_BYTES + 1];
	json_t			*spec;
	int			 rc;

	memset(j, 0, sizeof(*j));
	if (staged->work_dir == NULL)
		return -KB_EINVAL;
	if ((rc = judge_dir(staged->work_dir, j->dir, sizeof(j->dir))) < 0 ||
	    (rc = kb_path_join(sock, sizeof(sock), j->dir, FB_JUDGE_SOCKET)) < 0 ||
	    (rc = judge_token(token, sizeof(token))) < 0)
		return rc;
	if ((rc = fb_stage_mkdir(j->dir)) < 0 || (rc = fb_contain_runner_dir(j->dir)) < 0) {
		log_warnx("cannot give the judge %s: %s", j->dir, kb_strerror(rc));
		return rc;
	}
	/* The judge's request is the execute's, for the problem alone. */
	jr.candidate_path = NULL;
	jr.build_dir = NULL;
	jr.work_dir = j->dir;
	if ((j->jreq = build_request(cfg, &jr)) == NULL)
		return -KB_ENOMEM;
	json_object_set_new(j->jreq, "mode", json_string("judge"));
	json_object_set_new(j->jreq, "sandbox", fb_contain_sandbox(&jr, true, false, runner));
	if (json_is_object(staged->reference_clean))
		json_object_set(j->jreq, "reference_clean", (json_t *)staged->reference_clean);
	json_object_del(j->jreq, "started_file");
	json_object_del(j->jreq, "pch_dir");
	/* The tests' way to make the judge fail before it listens, as a judge whose CUDA
	 * would not start did (KFORGE_CRASHPOINT=judge-fault); the runners' own fault is
	 * the candidate's runner's alone. */
	json_object_del(j->jreq, "fault");
	if (kb_crashpoint_due("judge-fault"))
		json_object_set_new(j->jreq, "fault", json_string("judge_start"));
	spec = json_pack("{s:s, s:s}", "socket", sock, "token", token);
	if (spec == NULL) {
		rc = -KB_ENOMEM;
		goto fail;
	}
	json_object_set(cjreq, "judge", spec);
	json_object_set_new(j->jreq, "judge", spec);

	fb_env_build(&j->env, cfg, NULL, cuda_visible, false);
	fb_env_contained(&j->env, j->dir);
	j->argv[0] = python;
	j->argv[1] = runner;
	j->argv[2] = NULL;
	j->o.argv = j->argv;
	j->o.envp = (const char *const *)j->env.v;
	j->o.cwd = j->dir;
	j->o.on_start = staged->on_judge_start;
	j->o.on_start_arg = staged->on_start_arg;
	fb_runner_limits(cfg, &j->o, deadline > INT_MAX / 1000 - FB_START_ALLOWANCE_S - FB_JUDGE_GRACE_S ?
		      INT_MAX / 1000 : deadline + FB_START_ALLOWANCE_S + FB_JUDGE_GRACE_S);
	j->o.stdin_data = "";	/* a pipe, written by judge_wait */
	if (cuda_visible == NULL ||
	    fb_warm_fork(cfg, python, runner, cuda_visible, &j->child) < 0 ||
	    (rc = fb_warm_request(j->jreq, &j->env, &j->o)) < 0) {
		kb_spawn_discard(j->child);
		j->child = NULL;
		if ((rc = kb_spawn_start(&j->o, &j->child)) < 0) {
			j->child = NULL;
			goto fail;
		}
	}
	if ((j->request = json_dumps(j->jreq, JSON_COMPACT)) == NULL) {
		rc = -KB_ENOMEM;
		goto fail;
	}
	j->o.stdin_data = j->request;
	j->o.stdin_len = strlen(j->request);
	j->o.should_stop = judge_should_stop;
	j->o.should_stop_arg = j;
	if ((rc = pthread_create(&j->thread, NULL, judge_wait, j)) != 0) {
		rc = -KB_ESYS;
		goto fail;
	}
	j->running = true;
	return 0;
fail:
	kb_spawn_discard(j->child);
	j->child = NULL;
	json_decref(j->jreq);
	j->jreq = NULL;
	free(j->request);
	j->request = NULL;
	fb_env_clear(&j->env);
	return rc;
}

/* Waits for the judge (killed first when kill: its candidate's runner never came) and
 * returns its result, or NULL with why; frees what judge_start made. */
static json_t *
judge_end(struct judge *j, bool kill, char *why, size_t whylen)
{
	json_t	*res;

	if (!j->running) {
		snprintf(why, whylen, "it did not start");
		return NULL;
	}
	j->stop = kill;
	/* Its candidate's runner has ended: the judge writes its result at once, unless that
	 * runner never connected (it died before), and then it would wait for it in vain. */
	if (!kill) {
		struct timespec	until;

		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += FB_JUDGE_AFTER_S;
		if (pthread_timedjoin_np(j->thread, NULL, &until) == 0)
			goto joined;
		j->stop = true;
	}
	pthread_join(j->thread, NULL);
joined:
	j->running = false;
	res = j->res;
	snprintf(why, whylen, "%s", j->why);
	kb_spawn_result_clear(&j->r);
	json_decref(j->jreq);
	free(j->request);
	fb_env_clear(&j->env);
	return res;
}

int
fb_run(const struct kb_config *cfg, const struct fb_request *req, struct fb_outcome *out)
{
	struct kb_spawn_opts	 o = { 0 };
	struct kb_spawn_result	 r = { 0 };
	struct kb_spawn		*ahead = NULL;
	struct fb_watch		 watch;
	struct fb_strays	 strays;
	struct fb_env		 env = { .n = 0 };
	struct fb_request	 staged;
	char			 python[PATH_MAX], runner[PATH_MAX], err[1024], visible[16];
	char			 problem[PATH_MAX], candidate[PATH_MAX];
	const char		*argv[3], *cuda_visible = NULL;
	char			*request = NULL;
	json_t			*jreq = NULL, *res;
	int			 deadline, exec_limit_s = 0, rc, build_lock = -1, pch_lock = -1;
	int			 kprof_lock = -1;
	char			 pch[PATH_MAX] = "", kprof[PATH_MAX] = "", started[PATH_MAX];
	bool			 rebuild = false, writes_build, next_after, candidate_ran = false;
	pid_t			 keep[FB_WARM_PIDS];
	struct judge		 judge = { .running = false };
	json_t			*jres = NULL;
	char			 jwhy[256] = "";

	memset(out, 0, sizeof(*out));
	out->runtime_ms = out->ref_runtime_ms = out->speedup = -1;
	if ((unsigned)req->mode > FB_SELFTEST)
		return -KB_EINVAL;
	if ((rc = fb_contain_setup(cfg, err, sizeof(err))) < 0 ||
	    (rc = fb_contain_sandbox_ready(err, sizeof(err))) < 0) {
		log_warnx("%s", err);
		return rc;
	}
	if ((rc = fb_find_python(cfg, python, sizeof(python), err, sizeof(err))) < 0) {
		log_warnx("%s", err);
		return rc;
	}
	if ((rc = kb_path_join(runner, sizeof(runner), kb_home(), "feedback/kforge_runner.py")) < 0 ||
	    (rc = stage_inputs(req, &staged, runner, sizeof(runner), problem, candidate)) < 0)
		return rc;
	/* A build an execute finds missing (its staging directory was cleaned since the
	 * precompile, by a reboot say) is built again by this runner, as a precompile's. */
	if ((req->mode == FB_EXECUTE || req->mode == FB_PROFILE) && req->build_dir != NULL &&
	    !kb_file_exists(req->build_dir)) {
		log_info("the build %s is gone; the runner builds it again", req->build_dir);
		rebuild = true;
	}
	writes_build = req->mode == FB_PRECOMPILE || req->mode == FB_SELFTEST || rebuild;
	if ((jreq = build_request(cfg, &staged)) == NULL)
		return -KB_ENOMEM;
	json_object_set_new(jreq, "sandbox", fb_contain_sandbox(&staged, false,
								writes_build, runner));

	/* Precompile and every CPU step see no GPU; a GPU step sees exactly its own. */
	if (req->mode == FB_PRECOMPILE || !fb_on_cuda(cfg, req)) {
		cuda_visible = "";
	} else if (req->device_index >= 0) {
		snprintf(visible, sizeof(visible), "%d", req->device_index);
		cuda_visible = visible;
	}
	/* A selftest builds as a precompile does (it stands for one). */
	fb_env_build(&env, cfg, req->build_dir, cuda_visible,
		  req->mode == FB_PRECOMPILE || req->mode == FB_SELFTEST);
	fb_env_contained(&env, req->work_dir);
	kprof_env(&env, cfg, req);

	deadline = deadline_s(cfg, req);
	if (timed_from_start(req, started, sizeof(started))) {
		exec_limit_s = deadline;
		deadline = deadline > INT_MAX / 1000 - FB_START_ALLOWANCE_S ? INT_MAX / 1000 :
			   deadline + FB_START_ALLOWANCE_S;
	}
	argv[0] = python;
	argv[1] = runner;
	argv[2] = NULL;
	o.argv = argv;
	o.envp = (const char *const *)env.v;
	o.cwd = req->work_dir;
	fb_runner_limits(cfg, &o, deadline);
	ahead = fb_warm_take_for(cfg, req, python, runner, cuda_visible);
	if (ahead != NULL && (rc = fb_warm_request(jreq, &env, &o)) < 0)
		goto out;
	if (req->mode == FB_EXECUTE &&
	    (rc = judge_start(cfg, &staged, jreq, python, runner, cuda_visible, deadline,
			      &judge)) < 0) {
		log_warnx("cannot start the judge of %s: %s", req->candidate_path != NULL ?
			  req->candidate_path : "the execute", kb_strerror(rc));
		rc = -KB_EEXEC;
		goto out;
	}
	if ((request = json_dumps(jreq, JSON_COMPACT)) == NULL) {
		rc = -KB_ENOMEM;
		goto out;
	}
	o.stdin_data = request;
	o.stdin_len = strlen(request);
	if (req->work_dir != NULL && ((rc = fb_stage_mkdir(req->work_dir)) < 0 ||
				      (rc = fb_contain_runner_dir(req->work_dir)) < 0)) {
		log_warnx("cannot give the runner's user %s: %s", req->work_dir, kb_strerror(rc));
		goto out;
	}
	if ((req->mode == FB_PRECOMPILE || rebuild) && req->build_dir != NULL &&
	    (rc = fb_stage_mkdir(req->build_dir)) < 0) {
		log_warnx("cannot make the build directory %s: %s", req->build_dir,
			  kb_strerror(rc));
		goto out;
	}
	if (req->mode == FB_PRECOMPILE || req->mode == FB_EXECUTE || req->mode == FB_PROFILE)
		fb_build_touch(req->build_dir);	/* the cache's trim keeps what is used */
	if (writes_build &&
	    (rc = fb_contain_build_begin(req->build_dir, &build_lock)) < 0) {
		fb_contain_build_end(NULL, build_lock);
		goto out;
	}
	if ((req->mode == FB_EXECUTE || req->mode == FB_PROFILE) && !rebuild &&
	    (rc = fb_contain_build_use(req->build_dir, &build_lock)) < 0)
		goto out;
	/* Only a selftest, which runs no candidate's code, may write precompiled headers
	 * and counter availability images: each directory is its runner's while it runs,
	 * then sealed like a build. */
	if (req->mode == FB_SELFTEST && fb_selftest_makes_pch(cfg))
		selftest_dir_open("pch", pch, sizeof(pch), &pch_lock);
	if (req->mode == FB_SELFTEST && kprof_step(cfg, req) && req->kprof_lib != NULL)
		selftest_dir_open("kprof", kprof, sizeof(kprof), &kprof_lock);
	fbw_init(&watch, cfg, req);
	if (exec_limit_s > 0)
		fbw_time_from(&watch, started, (int64_t)exec_limit_s * 1000);
	o.on_start = fbw_on_start;
	o.on_start_arg = &watch;
	judge.cand_pid = &watch.pid;
	if (judge.running)
		watch.judge_gone_from = &judge.cand_gone_from;
	o.should_stop = fbw_should_stop;
	o.should_stop_arg = &watch;

	/* The next step's runner imports torch while this one works (warm.c), or on the CPU
	 * after a step that times, whose cores its import would take. */
	next_after = !fb_on_cuda(cfg, req) && (req->mode == FB_EXECUTE || req->mode == FB_PROFILE ||
					       req->mode == FB_BASELINE);
	if (!next_after)
		fb_warm_start_next(cfg, req, python, runner, NULL);
	if (ahead != NULL) {
		rc = kb_spawn_finish(ahead, &o, &r);
		ahead = NULL;
	} else {
		rc = kb_spawn_run(&o, &r);
	}
	if (judge.running)
		jres = judge_end(&judge, rc < 0, jwhy, sizeof(jwhy));
	fbw_reap_strays(&strays, keep, fb_warm_pids(keep));
	strays.running += r.strays_running;	/* a watched runner's, its watcher's count */
	strays.killed += r.strays_killed;
	strays.running += fb_ns_trailer_take(&r.result);	/* its namespace's init's count */
	candidate_ran = fb_candidate_mark_take(&r.result);
	/* Killed for its judge's end before any of the candidate's code ran: what of its
	 * group was still dying is the runner's own, no stray of a candidate's. */
	if (watch.judge_gone && !candidate_ran)
		strays.running = 0;
	if (pch[0] != '\0')
		fb_contain_seal_closed(pch, pch_lock);
	if (kprof[0] != '\0')
		fb_contain_seal_closed(kprof, kprof_lock);
	if (writes_build)
		fb_contain_build_end(req->build_dir, build_lock);
	else
		fb_contain_build_end(NULL, build_lock);
	if (rc < 0)
		goto out;
	out->wall_ms = r.wall_ms;
	out->log = r.out.truncated ?
		   kb_asprintf("%s\n[kforge: runner output truncated at %zu bytes]\n", r.out.p,
			       r.out.cap) : kb_buf_steal(&r.out);
	if ((res = fb_result_classify(req, &r, out->log, deadline, &watch)) == NULL) {
		rc = -KB_ENOMEM;
		goto out;
	}
	fb_result_note_leftovers(res, &r, &watch, &strays);
	/* Past the mark, whatever the result says: the candidate's code may have written it. */
	if (candidate_ran && json_is_object(json_object_get(res, "details")))
		json_object_set_new(json_object_get(res, "details"), "candidate_ran", json_true());
	if (req->mode == FB_EXECUTE) {
		res = watch.judge_gone ? fbj_left(res, jres, jwhy, candidate_ran) :
					 fbj_merge(res, jres, jwhy);
		jres = NULL;
	}
	fb_outcome_fill(out, res);
	if (next_after)
		fb_warm_start_next(cfg, req, python, runner, out);
	log_debug("runner %s: %s in %lld ms", fb_mode_name(req->mode), fb_status_name(out->status),
		  (long long)r.wall_ms);
out:
	if (judge.running)
		json_decref(judge_end(&judge, true, jwhy, sizeof(jwhy)));
	json_decref(jres);
	/* Not handed its request (an error before): it is fresh still, keep it. */
	fb_warm_put_back(ahead);
	json_decref(jreq);
	kb_spawn_result_clear(&r);
	fb_env_clear(&env);
	free(request);
	return rc;
}
