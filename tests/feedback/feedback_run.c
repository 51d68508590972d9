/*
 * feedback_run.c: fb_run with the real runner on the CPU — every status the runner
 * reports and every death fb_run must classify itself (SIGSEGV, deadline), the
 * allow-listed environment, precompile-then-execute without a rebuild, should_stop,
 * and fb_find_python's failure message. Skips (77) without a Python that imports torch.
 *
 * Compiling is the slow part (15-30 s per C++ extension here), so the three extension
 * candidates share one build: cand_ext_{add,crash,spin}.py carry identical sources.
 */
#include <sched.h>
#include <signal.h>
#include <unistd.h>

#include "feedback_testutil.h"

#define SECRET	"sk-kforge-test-secret-0123456789"

static struct kb_config	cfg;
static char		build[4096], work[4096], scratch[2048];
static pid_t		started_pid;

static void
note_pid(pid_t pid, void *arg)
{
	(void)arg;
	started_pid = pid;
}

static bool
stop_now(void *arg)
{
	(void)arg;
	return true;
}

static int
run(enum fb_mode mode, const char *problem, const char *candidate, const char *build_dir,
    int timeout_s, struct fb_outcome *o)
{
	char			 prob[4096], cand[4096];
	struct fb_request	 req = { 0 };
	int			 rc;

	fbt_data(prob, sizeof(prob), problem);
	if (candidate != NULL)
		fbt_data(cand, sizeof(cand), candidate);
	req.mode = mode;
	req.problem_path = prob;
	req.candidate_path = candidate != NULL ? cand : NULL;
	req.build_dir = build_dir;
	req.work_dir = work;
	req.device_index = -1;
	req.timeout_s = timeout_s;
	req.on_start = note_pid;
	started_pid = 0;
	rc = fb_run(&cfg, &req, o);
	fprintf(stderr, "%s %s: rc %d, status %s, %lld ms\n",
		mode == FB_PRECOMPILE ? "precompile" : "execute",
		candidate != NULL ? candidate : "-", rc, fb_status_name(o->status),
		(long long)o->wall_ms);
	if (rc == 0 && o->status != FB_ST_OK && getenv("FBT_VERBOSE") != NULL) {
		char *s = json_dumps(o->result, JSON_INDENT(1));

		fprintf(stderr, "%s\n--- log ---\n%s\n", s, o->log);
		free(s);
	}
	return rc;
}

/* run() on a given device ("cpu" | "cuda") and GPU index. */
static int
run_on(const char *device, enum fb_mode mode, const char *candidate, int device_index,
       struct fb_outcome *o)
{
	char			 prob[4096], cand[4096];
	struct fb_request	 req = { 0 };
	int			 rc;

	fbt_data(prob, sizeof(prob), "problem_add.py");
	fbt_data(cand, sizeof(cand), candidate);
	req.mode = mode;
	req.device = device;
	req.problem_path = prob;
	req.candidate_path = cand;
	req.build_dir = build;
	req.work_dir = work;
	req.device_index = device_index;
	req.on_start = note_pid;
	started_pid = 0;
	rc = fb_run(&cfg, &req, o);
	fprintf(stderr, "%s %s on %s %d: rc %d, status %s, pid %d\n",
		mode == FB_PRECOMPILE ? "precompile" : "execute", candidate, device, device_index,
		rc, fb_status_name(o->status), (int)started_pid);
	return rc;
}



static void
test_status_names(void)
{
	enum fb_status	st;

	for (int i = 0; i < FB__NSTATUS; i++) {
		CHECK(fb_status_parse(fb_status_name((enum fb_status)i), &st) == 0);
		CHECK(st == (enum fb_status)i);
	}
	CHECK(strcmp(fb_status_name(FB_ST_VALUE_MISMATCH), "value_mismatch") == 0);
	CHECK(fb_status_parse("rejected", &st) == -KB_EINVAL);
	CHECK(fb_status_parse(NULL, &st) == -KB_EINVAL);
}

static void
test_find_python_failure(void)
{
	struct kb_config	c;
	char			py[4096], err[1024];

	fbt_config(&c, "cpu");
	free(c.runner.python);
	c.runner.python = kb_strdup("/nonexistent/python3");
	CHECK(fb_find_python(&c, py, sizeof(py), err, sizeof(err)) == -KB_ENOPYTHON);
	CHECK(strstr(err, "/nonexistent/python3") != NULL);
	CHECK(strstr(err, "runner.python") != NULL);
	kb_config_clear(&c);
}

/* precompile, then execute from the same build: no rebuild; then the crash and spin
 * candidates, which share the build. */
static void
test_extension(void)
{
	struct fb_outcome	 o = { 0 };
	char			 so[4096 + 64], *text;
	int64_t			 t_so;

	CHECK(run(FB_PRECOMPILE, "problem_add.py", "cand_ext_add.py", build, 0, &o) == 0);
	CHECK(o.status == FB_ST_OK && o.compiled && !o.correct);
	CHECK(started_pid > 0);
	CHECK(json_is_integer(json_object_get(o.result, "wall_ms")));
	fb_outcome_clear(&o);
	snprintf(so, sizeof(so), "%s/kforge_test_ext/kforge_test_ext.so", build);
	CHECK((t_so = fbt_mtime_ns(so)) > 0);

	CHECK(run(FB_EXECUTE, "problem_add.py", "cand_ext_add.py", build, 0, &o) == 0);
	CHECK(o.status == FB_ST_OK && o.compiled && o.correct);
	CHECK(o.runtime_ms > 0 && o.ref_runtime_ms < 0 && o.speedup < 0);
	CHECK(fbt_mtime_ns(so) == t_so);	/* the execute step did not rebuild */
	CHECK(json_number_value(json_object_get(json_object_get(o.result, "details"),
						"compile_s")) < 5.0);
	CHECK(json_array_size(json_object_get(json_object_get(o.result, "details"), "trials")) == 5);
	text = fb_exec_feedback(&cfg, &o);
	CHECK(strncmp(text, "Your kernel is correct. Wall-clock time: ", 41) == 0);
	free(text);
	fb_outcome_clear(&o);

	CHECK(run(FB_EXECUTE, "problem_add.py", "cand_ext_crash.py", build, 0, &o) == 0);
	CHECK(o.status == FB_ST_CRASHED && !o.correct);
	CHECK(strstr(fbt_detail(&o, "message"), "signal 11 (SIGSEGV)") != NULL);
	CHECK(json_is_true(json_object_get(o.result, "synthesized")));
	CHECK(strstr(fbt_detail(&o, "log_tail"), "Segmentation fault") != NULL);	/* faulthandler */
	CHECK(fbt_mtime_ns(so) == t_so);
	text = fb_exec_feedback(&cfg, &o);
	CHECK(strstr(text, "SIGSEGV") != NULL);
	free(text);
	fb_outcome_clear(&o);

	CHECK(run(FB_EXECUTE, "problem_add.py", "cand_ext_spin.py", build, 15, &o) == 0);
	CHECK(o.status == FB_ST_TIMEOUT && !o.correct);
	/* Never before the deadline, which counts from the runner's started file (written
	 * once torch is imported); ended by it (the spin never ends by itself, and the
	 * CPU-time limit would read "signaled"), however long the kill took. */
	CHECK(o.wall_ms >= 15000);
	CHECK(strcmp(json_string_value(json_object_get(json_object_get(o.result, "runner"),
						       "end")), "timeout") == 0);
	CHECK(strstr(json_string_value(json_object_get(json_object_get(o.result, "details"),
						       "message")) ?: "",
		     "the candidate's code ran past its deadline of 15 s") != NULL);
	snprintf(so, sizeof(so), "%s/.kforge_started", work);
	CHECK(kb_file_exists(so));
	snprintf(so, sizeof(so), "%s/kforge_test_ext/kforge_test_ext.so", build);
	text = fb_exec_feedback(&cfg, &o);
	CHECK(strcmp(text, "Your kernel execution timed out") == 0);
	free(text);
	fb_outcome_clear(&o);
	CHECK(fbt_mtime_ns(so) == t_so);
}

static void
test_compile_error(void)
{
	struct fb_outcome	 o = { 0 };
	char			 b2[4096 + 16], *text;

	snprintf(b2, sizeof(b2), "%s/build-bad", scratch);
	CHECK(run(FB_PRECOMPILE, "problem_add.py", "cand_compile_error.py", b2, 0, &o) == 0);
	CHECK(o.status == FB_ST_COMPILE_ERROR && !o.compiled);
	CHECK(strstr(fbt_detail(&o, "compiler_output"), "undeclared_identifier_xyz") != NULL);
	CHECK(strlen(fbt_detail(&o, "compiler_output")) <= 8192 + 64);	/* the runner's cap */
	text = fb_exec_feedback(&cfg, &o);
	CHECK(strncmp(text, "Compilation failed:\n", 20) == 0);
	CHECK(strstr(text, "undeclared_identifier_xyz") != NULL);
	CHECK(strlen(text) <= (size_t)cfg.refinement.feedback_max_chars);
	free(text);
	fb_outcome_clear(&o);
}

static void
test_judgements(void)
{
	struct fb_outcome	 o = { 0 };
	char			*text;

	CHECK(run(FB_EXECUTE, "problem_add.py", "cand_wrong_values.py", build, 0, &o) == 0);
	CHECK(o.status == FB_ST_VALUE_MISMATCH && o.compiled && !o.correct && o.runtime_ms < 0);
	text = fb_exec_feedback(&cfg, &o);
	CHECK(strstr(text, "Trial 1: max_abs_diff=0.5") != NULL);
	CHECK(strstr(text, "Trial 5: max_abs_diff=0.5") != NULL);
	CHECK(strstr(text, "0 of 5 correctness trials passed") != NULL);
	free(text);
	fb_outcome_clear(&o);

	CHECK(run(FB_EXECUTE, "problem_add.py", "cand_wrong_shape.py", build, 0, &o) == 0);
	CHECK(o.status == FB_ST_SHAPE_MISMATCH);
	fb_outcome_clear(&o);

	CHECK(run(FB_EXECUTE, "problem_add.py", "cand_raise.py", build, 0, &o) == 0);
	CHECK(o.status == FB_ST_RUNTIME_ERROR && o.compiled);
	text = fb_exec_feedback(&cfg, &o);
	CHECK(strstr(text, "ValueError: kernel launch configuration is invalid (test)") != NULL);
	free(text);
	fb_outcome_clear(&o);

	CHECK(run(FB_EXECUTE, "problem_add.py", "cand_no_model_new.py", build, 0, &o) == 0);
	CHECK(o.status == FB_ST_NO_MODEL_NEW);
	fb_outcome_clear(&o);

	CHECK(run(FB_EXECUTE, "problem_add.py", "cand_mutates.py", build, 0, &o) == 0);
	CHECK(o.status == FB_ST_VALUE_MISMATCH && fbt_flagged(&o, "input_mutated"));
	text = fb_exec_feedback(&cfg, &o);
	CHECK(strstr(text, "modified its input tensors in place") != NULL);
	free(text);
	fb_outcome_clear(&o);

	CHECK(run(FB_EXECUTE, "problem_add.py", "cand_globals.py", build, 0, &o) == 0);
	CHECK(o.status == FB_ST_OK && o.correct);
	fb_outcome_clear(&o);
}

/* The runner's environment is the allow-list: the LLM key set in our environment (and
 * any other variable not on the list) never reaches candidate code. */
static void
test_environment(void)
{
	struct fb_outcome	 o = { 0 };
	char			 path[4096 + 32], *env_text = NULL;
	json_t			*env;
	size_t			 len;
	const char		*name;
	json_t			*v;

	setenv("KFORGE_TEST_API_KEY", SECRET, 1);
	setenv("OPENAI_API_KEY", SECRET, 1);
	setenv("LC_ALL", "C.UTF-8", 1);
	CHECK(run(FB_EXECUTE, "problem_add.py", "cand_env_dump.py", build, 0, &o) == 0);
	CHECK(o.status == FB_ST_OK && o.correct);
	fb_outcome_clear(&o);
	snprintf(path, sizeof(path), "%s/kforge_env.json", work);
	CHECK(kb_read_file(path, 1 << 20, &env_text, &len) == 0);
	if (env_text == NULL)
		return;
	CHECK(strstr(env_text, SECRET) == NULL);
	CHECK(strstr(env_text, "KFORGE_TEST_API_KEY") == NULL);
	CHECK((env = json_loads(env_text, 0, NULL)) != NULL);
	CHECK(json_object_get(env, "OPENAI_API_KEY") == NULL);
	CHECK(json_object_get(env, "KFORGE_HOME") == NULL);	/* set by ctest, not allowed */
	CHECK(strcmp(json_string_value(json_object_get(env, "TORCH_EXTENSIONS_DIR")), build) == 0);
	CHECK(strcmp(json_string_value(json_object_get(env, "CUDA_VISIBLE_DEVICES")), "") == 0);
	CHECK(strcmp(json_string_value(json_object_get(env, "PYTHONUNBUFFERED")), "1") == 0);
	CHECK(strcmp(json_string_value(json_object_get(env, "LC_ALL")), "C.UTF-8") == 0);
	CHECK(json_object_get(env, "MAX_JOBS") == NULL);	/* precompile only */
	/* Triton's cache: the step's own scratch, never a cache the trusted side keeps. */
	snprintf(path, sizeof(path), "%s/triton", work);
	CHECK(json_is_string(json_object_get(env, "TRITON_CACHE_DIR")) &&
	      strcmp(json_string_value(json_object_get(env, "TRITON_CACHE_DIR")), path) == 0);
	/* a CPU execution slot gets its share of the cores, at least one thread */
	CHECK(json_is_string(json_object_get(env, "OMP_NUM_THREADS")) &&
	      strtol(json_string_value(json_object_get(env, "OMP_NUM_THREADS")), NULL, 10) >= 1);
	json_object_foreach(env, name, v) {
		static const char *const ok[] = {
			"PATH", "HOME", "LANG", "LANGUAGE", "TMPDIR", "USER", "CUDA_HOME",
			"CUDA_PATH", "LD_LIBRARY_PATH", "TORCH_EXTENSIONS_DIR",
			"TORCH_CUDA_ARCH_LIST", "CUDA_VISIBLE_DEVICES", "PYTHONUNBUFFERED",
			"PYTHONDONTWRITEBYTECODE", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
			"TRITON_CACHE_DIR",
			/* set by the runner itself for its builds (build_compilers) */
			"CXX", "KFORGE_CXX_REAL", "KFORGE_PCH_DIR",
		};
		bool allowed = strncmp(name, "LC_", 3) == 0;

		for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
			allowed = allowed || strcmp(name, ok[i]) == 0;
		if (!allowed)
			fprintf(stderr, "unexpected variable in the runner: %s\n", name);
		CHECK(allowed);
	}
	json_decref(env);
	free(env_text);
	unsetenv("KFORGE_TEST_API_KEY");
	unsetenv("OPENAI_API_KEY");
}

static void
test_probe_and_stop(void)
{
	struct fb_outcome	 o = { 0 };
	struct fb_request	 req = { 0 };

	CHECK(run(FB_PROBE, "problem_add.py", NULL, NULL, 0, &o) == 0);
	CHECK(o.status == FB_ST_OK);
	CHECK(json_is_string(json_object_get(json_object_get(o.result, "env"), "torch")));
	fb_outcome_clear(&o);

	req.mode = FB_PROBE;
	req.work_dir = work;
	req.device_index = -1;
	req.should_stop = stop_now;
	CHECK(fb_run(&cfg, &req, &o) == -KB_ESTOPPED);
	fb_outcome_clear(&o);
}

/* Warm runners: the next runner starts ahead and takes the next request; each step
 * still runs in a process no earlier step ran in, with the environment and working
 * directory a cold one gets; one that died or was stopped while it waited changes
 * nothing for the next candidate but its process. */
static pid_t
wait_gone(pid_t pid)
{
	for (int i = 0; i < 500 && kill(pid, 0) == 0; i++) {
		char	path[64], state = 0;
		FILE	*f;

		/* A zombie (ours to reap, at the hand-over) is gone for this purpose. */
		snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
		if ((f = fopen(path, "r")) != NULL) {
			if (fscanf(f, "%*d (%*[^)]) %c", &state) != 1)
				state = 0;
			fclose(f);
		}
		if (state == 'Z')
			break;
		usleep(10 * 1000);
	}
	return pid;
}

/* A process's scheduling policy, from /proc/PID/stat (field 41); -1 when unreadable. */
static int
sched_policy_of(pid_t pid)
{
	char	path[64], buf[1024], *p;
	int	field = 2, policy = -1;
	FILE	*fp;
	size_t	n;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if ((fp = fopen(path, "r")) == NULL)
		return -1;
	n = fread(buf, 1, sizeof(buf) - 1, fp);
	fclose(fp);
	buf[n] = '\0';
	if ((p = strrchr(buf, ')')) == NULL)
		return -1;
	for (p++; *p != '\0' && field < 41; p++)
		if (*p == ' ')
			field++;
	if (field == 41)
		policy = atoi(p);
	return policy;
}

/* On a GPU host of 8 cores or more a warm runner starts on the builds' cores (all but an
 * eighth, at least two, kept for the steps on the GPU); on a smaller one, or on the CPU,
 * where it is. */
static void
test_warm_cpus(void)
{
	struct kb_config	c;
	int			first = -1, last = -1;

	/* Fork servers kept through the model's call while every worker's fits in a quarter
	 * of the memory at 512 MB: one worker's does on any host that runs torch, 4096
	 * workers' (8 TB) on none. */
	fbt_config(&c, "cpu");
	c.workers = 1;
	CHECK(fb_warm_keep_servers(&c));
	c.workers = 4096;
	CHECK(!fb_warm_keep_servers(&c));
	kb_config_clear(&c);

	fbt_config(&c, "cuda");
	CHECK(fb_warm_cpu_range(&c, 16, &first, &last) && first == 0 && last == 14);
	CHECK(fb_warm_cpu_range(&c, 64, &first, &last) && first == 0 && last == 56);
	CHECK(fb_warm_cpu_range(&c, 8, &first, &last) && first == 0 && last == 6);
	CHECK(!fb_warm_cpu_range(&c, 4, &first, &last));
	kb_config_clear(&c);
	fbt_config(&c, "cpu");
	CHECK(!fb_warm_cpu_range(&c, 16, &first, &last));
	kb_config_clear(&c);

	/* A CPU run's builds begin on a core of the host chosen by its directory: the same
	 * for the same directory, not the same for every run (of 16 directories, on 2 cores
	 * both turns appear), and 0 outside a run. */
	{
		int	seen[2] = { 0, 0 };
		char	dir[64];

		for (int i = 0; i < 16; i++) {
			long	t;

			snprintf(dir, sizeof(dir), "/tmp/run-%d", i);
			t = fb_cpu_turn(dir, 2);
			CHECK(t == 0 || t == 1);
			CHECK(fb_cpu_turn(dir, 2) == t);
			if (t == 0 || t == 1)
				seen[t]++;
		}
		CHECKM(seen[0] > 0 && seen[1] > 0, "16 run directories all build on core %d",
		       seen[0] > 0 ? 0 : 1);
		CHECK(fb_cpu_turn(NULL, 2) == 0 && fb_cpu_turn("/x", 1) == 0);
	}
}

static void
test_warm(void)
{
	struct fb_outcome	 o = { 0 };
	char			 path[4096 + 32], *env_text = NULL;
	pid_t			 seen[8] = { 0 }, ahead;
	json_t			*env;
	size_t			 len;
	int			 n = 0;

	fb_warm_enable();
	cfg.runner.warm = true;
	CHECK(fb_warm_pid() == 0);
	/* Without P feedback nothing follows an execute before the next turn's GENERATE
	 * (which kills a waiting runner): none is started to be killed unused. */
	CHECK(run(FB_EXECUTE, "problem_add.py", "cand_ext_add.py", build, 0, &o) == 0);
	CHECK(o.status == FB_ST_OK && o.correct);
	fb_outcome_clear(&o);
	CHECK(fb_warm_pid() == 0);
	cfg.refinement.feedback_p = true;
	CHECK(run(FB_EXECUTE, "problem_add.py", "cand_ext_add.py", build, 0, &o) == 0);
	CHECK(o.status == FB_ST_OK && o.correct);
	fb_outcome_clear(&o);
	seen[n++] = started_pid;
	/* A correct CPU timing step with P starts the profile's runner once it is done. */
	CHECK((ahead = fb_warm_pid()) > 0 && ahead != started_pid);
	/* It waits under SCHED_IDLE (the test runs as root, as CI does, or with an
	 * RLIMIT_NICE that lets it back), and the step it is handed runs under SCHED_OTHER. */
	CHECK(sched_policy_of(ahead) == SCHED_IDLE || geteuid() != 0);

	CHECK(run(FB_EXECUTE, "problem_add.py", "cand_ext_add.py", build, 0, &o) == 0);
	CHECK(o.status == FB_ST_OK && o.correct);
	CHECK(started_pid == ahead);
	CHECK(json_integer_value(json_object_get(json_object_get(o.result, "details"),
						 "sched_policy")) == SCHED_OTHER);
	CHECK(json_is_integer(json_object_get(json_object_get(o.result, "details"),
					      "sched_policy")));
	fb_outcome_clear(&o);
	for (int i = 0; i < n; i++)
		CHECK(seen[i] != started_pid);
	seen[n++] = started_pid;

	/* The environment and working directory of a cold runner, for a precompile too. */
	CHECK((ahead = fb_warm_pid()) > 0);
	snprintf(path, sizeof(path), "%s/kforge_env.json", work);
	unlink(path);
	CHECK(run(FB_PRECOMPILE, "problem_add.py", "cand_env_dump.py", build, 0, &o) == 0);
	CHECK(o.status == FB_ST_OK && started_pid == ahead);
	fb_outcome_clear(&o);
	CHECK(kb_read_file(path, 1 << 20, &env_text, &len) == 0);
	CHECK(env_text != NULL && (env = json_loads(env_text, 0, NULL)) != NULL);
	if (env_text != NULL && env != NULL) {
		CHECK(strcmp(json_string_value(json_object_get(env, "TORCH_EXTENSIONS_DIR")),
			     build) == 0);
		CHECK(strcmp(json_string_value(json_object_get(env, "MAX_JOBS")), "2") == 0);
		CHECK(json_object_get(env, "OMP_NUM_THREADS") == NULL);
		CHECK(strcmp(json_string_value(json_object_get(env, "CUDA_VISIBLE_DEVICES")), "") == 0);
		json_decref(env);
	}
	free(env_text);
	seen[n++] = started_pid;

	/* Killed while it waits: the next candidate runs all the same, in a fresh process. */
	CHECK((ahead = fb_warm_pid()) > 0);
	CHECK(kill(ahead, SIGKILL) == 0);
	wait_gone(ahead);
	CHECK(run(FB_EXECUTE, "problem_add.py", "cand_ext_add.py", build, 0, &o) == 0);
	CHECK(o.status == FB_ST_OK && o.correct);
	CHECK(started_pid > 0 && started_pid != ahead);
	fb_outcome_clear(&o);
	for (int i = 0; i < n; i++)
		CHECK(seen[i] != started_pid);
	seen[n++] = started_pid;

	/* Stopped while it waits: resumed at the hand-over. */
	CHECK((ahead = fb_warm_pid()) > 0);
	CHECK(kill(ahead, SIGSTOP) == 0);
	CHECK(run(FB_EXECUTE, "problem_add.py", "cand_ext_add.py", build, 60, &o) == 0);
	CHECK(o.status == FB_ST_OK && o.correct && started_pid == ahead);
	fb_outcome_clear(&o);

	ahead = fb_warm_pid();
	fb_warm_drop();
	CHECK(fb_warm_pid() == 0 && ahead > 0 && kill(ahead, 0) == -1);

	/* A crash in a warm runner is the candidate's, classified as ever; no profile
	 * follows an execute that was not correct, so no runner is started for one. */
	CHECK(run(FB_PRECOMPILE, "problem_add.py", "cand_env_dump.py", build, 0, &o) == 0);
	fb_outcome_clear(&o);
	CHECK((ahead = fb_warm_pid()) > 0);	/* a precompile's: for the execute */
	CHECK(run(FB_EXECUTE, "problem_add.py", "cand_ext_crash.py", build, 0, &o) == 0);
	CHECK(o.status == FB_ST_CRASHED && started_pid == ahead);
	CHECK(strstr(fbt_detail(&o, "message"), "signal 11 (SIGSEGV)") != NULL);
	fb_outcome_clear(&o);
	CHECK(fb_warm_pid() == 0);

	/* On the cuda device a waiting runner has its GPUs fixed: it is started with the
	 * last GPU before an execute (a precompile's) or a profile (an execute's, with P),
	 * and a step on another GPU gets a cold start (here
	 * without a GPU the executes end in cuda_error; on a GPU host in ok; either way the
	 * runner ran). An execute without P starts none. */
	cfg.refinement.feedback_p = false;
	CHECK(run_on("cuda", FB_PRECOMPILE, "cand_env_dump.py", -1, &o) == 0);
	CHECK(o.status == FB_ST_OK);
	fb_outcome_clear(&o);
	CHECK((ahead = fb_warm_pid()) > 0);
	CHECK(run_on("cuda", FB_EXECUTE, "cand_ext_add.py", 0, &o) == 0);
	CHECK(started_pid == ahead && (o.status == FB_ST_CUDA_ERROR || o.status == FB_ST_OK));
	fb_outcome_clear(&o);
	CHECK(fb_warm_pid() == 0);
	cfg.refinement.feedback_p = true;
	CHECK(run_on("cuda", FB_PRECOMPILE, "cand_env_dump.py", -1, &o) == 0);
	fb_outcome_clear(&o);
	CHECK((ahead = fb_warm_pid()) > 0);	/* for GPU 0, the last one */
	CHECK(run_on("cuda", FB_EXECUTE, "cand_ext_add.py", 1, &o) == 0);
	CHECK(started_pid != ahead && kill(ahead, 0) == -1);	/* GPU 1: cold, the other killed */
	fb_outcome_clear(&o);
	CHECK(fb_warm_pid() > 0);	/* for the profile, on GPU 1 */
	fb_warm_drop();
	cfg.refinement.feedback_p = false;
	cfg.runner.warm = false;
}

/* Where this process is a subreaper, as a worker is, a warm runner is forked from a
 * server that imported torch once (run.c): each step still runs in a process of its
 * own that no earlier step ran in, the server outlives the steps and the reaping of
 * their strays, and one that dies is replaced without a step failing. */
static void
test_warm_forked(void)
{
	struct fb_outcome	 o = { 0 };
	pid_t			 ahead, server, server2;

	CHECK(fb_adopt_strays() == 0);
	fb_warm_enable();
	cfg.runner.warm = true;
	cfg.refinement.feedback_p = true;
	CHECK(run(FB_EXECUTE, "problem_add.py", "cand_ext_add.py", build, 0, &o) == 0);
	CHECK(o.status == FB_ST_OK && o.correct);
	fb_outcome_clear(&o);
	CHECK((ahead = fb_warm_pid()) > 0 && ahead != started_pid);
	CHECK((server = fbt_fork_server()) > 0 && server != ahead);
	CHECK(sched_policy_of(ahead) == SCHED_IDLE || geteuid() != 0);
	/* The server answers a worker that waits for it: never idle itself. */
	CHECK(sched_policy_of(server) == SCHED_OTHER);

	CHECK(run(FB_EXECUTE, "problem_add.py", "cand_ext_add.py", build, 0, &o) == 0);
	CHECK(o.status == FB_ST_OK && o.correct && started_pid == ahead);
	CHECK(json_integer_value(json_object_get(json_object_get(o.result, "details"),
						 "sched_policy")) == SCHED_OTHER);
	fb_outcome_clear(&o);
	/* The next runner is another fork of the same server: no second import. */
	CHECK(fb_warm_pid() > 0 && fb_warm_pid() != ahead && kill(ahead, 0) == -1);
	CHECK(fbt_fork_server() == server);

	/* A candidate that crashes its runner leaves the server alone. */
	CHECK(run(FB_PRECOMPILE, "problem_add.py", "cand_env_dump.py", build, 0, &o) == 0);
	fb_outcome_clear(&o);
	CHECK(run(FB_EXECUTE, "problem_add.py", "cand_ext_crash.py", build, 0, &o) == 0);
	CHECK(o.status == FB_ST_CRASHED);
	fb_outcome_clear(&o);
	CHECK(fbt_fork_server() == server);

	/* A step whose GPUs are not those of the runner waiting (here one for a precompile,
	 * none; a lease that moved the worker to another GPU is the same) gets a fresh fork
	 * of the same server told its GPUs, not a cold start (without a GPU the execute
	 * ends in cuda_error; the runner ran). */
	CHECK(run(FB_PRECOMPILE, "problem_add.py", "cand_env_dump.py", build, 0, &o) == 0);
	fb_outcome_clear(&o);
	fb_warm_drop();
	fb_warm_start(&cfg);		/* a precompile's: it sees no GPU */
	CHECK((ahead = fb_warm_pid()) > 0);
	CHECK(run_on("cuda", FB_EXECUTE, "cand_ext_add.py", 1, &o) == 0);
	CHECK(started_pid > 0 && started_pid != ahead && kill(ahead, 0) == -1);
	CHECK(strcmp(fbt_detail(&o, "start"), "forked") == 0);
	CHECK(o.status == FB_ST_CUDA_ERROR || o.status == FB_ST_OK);
	fb_outcome_clear(&o);
	CHECK(fbt_fork_server() == server);

	/* The server killed between candidates: the next ones run all the same. */
	if (server > 0) {	/* never kill(0): the test's own group */
		CHECK(kill(server, SIGKILL) == 0);
		wait_gone(server);
	}
	for (int i = 0; i < 2; i++) {
		CHECK(run(FB_EXECUTE, "problem_add.py", "cand_ext_add.py", build, 0, &o) == 0);
		CHECK(o.status == FB_ST_OK && o.correct);
		fb_outcome_clear(&o);
	}
	CHECK((server2 = fbt_fork_server()) > 0 && server2 != server);

	fb_warm_end();
	CHECK(fb_warm_pid() == 0 && server2 > 0 && kill(server2, 0) == -1);
	cfg.refinement.feedback_p = false;
	cfg.runner.warm = false;
}

/* The warm runners' part alone (feedback_run_warm) builds the extension the steps' part
 * (test_extension) would have built first. */
static void
build_extension(void)
{
	struct fb_outcome	o = { 0 };

	CHECK(run(FB_PRECOMPILE, "problem_add.py", "cand_ext_add.py", build, 0, &o) == 0);
	CHECK(o.status == FB_ST_OK && o.compiled);
	fb_outcome_clear(&o);
}

/* No argument: every test. "steps" or "warm": one of the two halves, which ctest runs as
 * two tests (feedback_run, feedback_run_warm) so that they run side by side. */
int
main(int argc, char **argv)
{
	char	py[4096], err[1024];
	bool	steps = argc < 2 || strcmp(argv[1], "steps") == 0;
	bool	warm_part = argc < 2 || strcmp(argv[1], "warm") == 0;

	if (!steps && !warm_part) {
		fprintf(stderr, "usage: feedback_run [steps|warm]\n");
		return 2;
	}
	if (steps) {
		test_status_names();
		test_find_python_failure();
		test_warm_cpus();
	}
	fbt_config(&cfg, "cpu");
	if (fb_find_python(&cfg, py, sizeof(py), err, sizeof(err)) < 0) {
		fprintf(stderr, "SKIP: %s\n", err);
		return 77;
	}
	fprintf(stderr, "runner python: %s\n", py);
	fbt_scratch(scratch, sizeof(scratch), "feedback_run");
	snprintf(build, sizeof(build), "%s/build", scratch);
	snprintf(work, sizeof(work), "%s/work", scratch);
	kb_mkdir_p(build, 0755);
	kb_mkdir_p(work, 0755);

	if (steps) {
		test_extension();
		test_compile_error();
		test_judgements();
		test_environment();
		test_probe_and_stop();
	} else {
		build_extension();
	}
	if (warm_part) {
		test_warm();
		test_warm_forked();
	}

	kb_config_clear(&cfg);
	return fbt_finish(scratch);
}
