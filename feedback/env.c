/*
 * env.c: what a runner is started with, whichever way it is started (run.c's steps,
 * warm.c's runners and fork servers, a Python snippet for doctor): the allow-listed
 * environment, the cores a step runs on, its limits, and the Python that imports torch
 * with the identity of that environment; and what the config says of a step's device
 * and build format. Below the files that start runners, so that each asks one place.
 */
#include <errno.h>
#include <glob.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "feedback/feedback_int.h"
#include "base/banned.h"

extern char **environ;

#define FB_OUT_CAP		((size_t)1 << 20)
#define FB_RESULT_CAP		((size_t)16 << 20)
#define FB_FSIZE_CAP		(1LL << 30)
#define FB_NOFILE		1024
#define FB_PROBE_TIMEOUT_MS	120000

/* ------------------------------------------------------------ environment */

/* The runner sees these variables of ours and nothing else; in particular never
 * the LLM key, whatever it is called. LC_* are added by prefix. */
static const char *const env_allowed[] = {
	"PATH", "HOME", "LANG", "LANGUAGE", "TMPDIR", "USER", "CUDA_HOME", "CUDA_PATH",
	"LD_LIBRARY_PATH",
};

void
fb_env_set(struct fb_env *e, const char *name, const char *value)
{
	size_t	len = strlen(name);

	if (e->key_name != NULL && strcmp(name, e->key_name) == 0)
		return;
	for (int i = 0; i < e->n; i++)
		if (strncmp(e->v[i], name, len) == 0 && e->v[i][len] == '=') {
			free(e->v[i]);
			e->v[i] = kb_asprintf("%s=%s", name, value);
			return;
		}
	if (e->n < FB_ENV_MAX)
		e->v[e->n++] = kb_asprintf("%s=%s", name, value);
	e->v[e->n] = NULL;
}

static void
env_pass(struct fb_env *e, const char *name)
{
	const char *v = getenv(name);

	if (v != NULL)
		fb_env_set(e, name, v);
}

void
fb_env_clear(struct fb_env *e)
{
	for (int i = 0; i < e->n; i++)
		free(e->v[i]);
	e->n = 0;
	e->v[0] = NULL;
}

/* On the CPU an execution slot gets its share of the cores left over by the compile
 * slots: torch's intra-op pool would otherwise spin on cores a compile is using, and the
 * timings (reference and candidate alike) would measure the contention. */
long
fb_compile_slots(const struct kb_config *cfg)
{
	long	cores = sysconf(_SC_NPROCESSORS_ONLN);

	return cfg->runner.compile_slots > 0 ? cfg->runner.compile_slots :
	       (cores > 1 ? cores / 2 : 1);
}

long
fb_cpu_threads(const struct kb_config *cfg)
{
	long	cores = sysconf(_SC_NPROCESSORS_ONLN);
	long	slots = cfg->runner.cpu_exec_slots > 0 ? cfg->runner.cpu_exec_slots : 1;
	long	n = (cores - fb_compile_slots(cfg)) / slots;

	return n > 0 ? n : 1;
}

/* On a GPU host, the cores kept for the steps that run on the GPU, at the end of the
 * list: an eighth of the host, at least FB_CUDA_EXEC_CORES_MIN, on hosts of at least
 * FB_CUDA_PIN_MIN_CORES (fewer, and no core is spared from the builds). */
#define FB_CUDA_EXEC_CORES_MIN	2
#define FB_CUDA_PIN_MIN_CORES	8

/* The cores a step runs on ("cpus" in the request), builds (precompile, selftest) on the
 * first ones and every other step on the rest, so that a timing never shares a core with
 * a build of the same run (the reference and the candidate alike). On the CPU the builds
 * get as many as the compile slots. On a GPU the timing is the GPU's, but a small
 * kernel's forward runs only as fast as the host launches it: with eight builds at once
 * on the host's cores, the same reference (three launches of a Linear, ReLU and scale)
 * timed 0.040 ms in one turn and 0.088 ms in the next while the candidate's one launch
 * kept pace, so there the steps on the GPU keep a few cores (FB_CUDA_EXEC_CORES_MIN, or
 * an eighth) and the builds have the rest. An empty list leaves the runner where it is:
 * where one core is all there is, or on a small GPU host. */
long
fb_build_cores(const struct kb_config *cfg, bool cuda, long cores)
{
	if (!cuda)
		return fb_compile_slots(cfg);
	if (cores < FB_CUDA_PIN_MIN_CORES)
		return cores;
	return cores - (cores / 8 > FB_CUDA_EXEC_CORES_MIN ? cores / 8 : FB_CUDA_EXEC_CORES_MIN);
}

/* Which of the host's cores a CPU run's builds start at: a turn of the cores decided by
 * the run's directory (the same on every resume, the same for every worker). Several
 * runs on one host then spread their builds over its cores instead of all building on
 * the first ones and timing on the rest: the suite's four runs at once on the 2-core
 * machine kept one core busy with every build while the other waited (tools/bench/
 * README.md, inner). Within a run nothing changes: its timings still never share a core
 * with its builds. */
long
fb_cpu_turn(const char *root, long cores)
{
	if (root == NULL || cores < 1)
		return 0;
	return (long)(kb_fnv1a(KB_FNV1A_START, root, strlen(root)) % (uint64_t)cores);
}

/* n threads for torch's intra-op pool and the BLAS libraries. */
static void
threads_env(struct fb_env *e, long n)
{
	char	text[24];

	snprintf(text, sizeof(text), "%ld", n);
	fb_env_set(e, "OMP_NUM_THREADS", text);
	fb_env_set(e, "MKL_NUM_THREADS", text);
}

/* A step on a GPU runs on the few cores fb_build_cores leaves to such steps: torch's
 * intra-op pool as large as that. Left to torch's default, each runner (forked from a
 * server that saw every core) kept a thread a core of the host on its two: on an H200
 * host one CPU-side scale and shift of an 8 MB input took 131 ms so, 3.8 ms with two
 * threads, the threads of each parallel region waiting on each other for a core. Where
 * the steps are not pinned (a small host), torch's default stands. */
static void
gpu_step_threads(struct fb_env *e, const struct kb_config *cfg)
{
	long	cores = sysconf(_SC_NPROCESSORS_ONLN);
	long	n = cores - fb_build_cores(cfg, true, cores);

	if (n >= 1)
		threads_env(e, n);
}

void
fb_env_build(struct fb_env *e, const struct kb_config *cfg, const char *build_dir,
	     const char *cuda_visible, bool precompile)
{
	const char	*arch;

	e->n = 0;
	e->v[0] = NULL;
	e->key_name = cfg != NULL && cfg->llm.api_key_env != NULL &&
		      cfg->llm.api_key_env[0] != '\0' ? cfg->llm.api_key_env : NULL;
	for (size_t i = 0; i < sizeof(env_allowed) / sizeof(env_allowed[0]); i++)
		env_pass(e, env_allowed[i]);
	if (getenv("PATH") == NULL)
		fb_env_set(e, "PATH", "/usr/local/bin:/usr/bin:/bin");
	for (char **p = environ; p != NULL && *p != NULL; p++) {
		const char *eq = strchr(*p, '=');

		if (strncmp(*p, "LC_", 3) == 0 && eq != NULL && (size_t)(eq - *p) < 64) {
			char name[64];

			memcpy(name, *p, (size_t)(eq - *p));
			name[eq - *p] = '\0';
			fb_env_set(e, name, eq + 1);
		}
	}
	if (build_dir != NULL)
		fb_env_set(e, "TORCH_EXTENSIONS_DIR", build_dir);
	/* One arch list for precompile and execute, or ninja rebuilds at execute time. */
	arch = cfg != NULL && cfg->eval.arch_list != NULL && cfg->eval.arch_list[0] != '\0' ?
	       cfg->eval.arch_list : getenv("TORCH_CUDA_ARCH_LIST");
	if (arch != NULL && arch[0] != '\0')
		fb_env_set(e, "TORCH_CUDA_ARCH_LIST", arch);
	if (cuda_visible != NULL)
		fb_env_set(e, "CUDA_VISIBLE_DEVICES", cuda_visible);
	fb_env_set(e, "PYTHONUNBUFFERED", "1");
	fb_env_set(e, "PYTHONDONTWRITEBYTECODE", "1");
	/* Two: a CUDA candidate's two translation units (the binding file and the .cu) are
	 * built side by side; a C++ one has only one. The compile slots default to half the
	 * cores, so at most every core is busy. */
	if (precompile)
		fb_env_set(e, "MAX_JOBS", "2");
	else if (cfg != NULL && cfg->eval.device != NULL && strcmp(cfg->eval.device, "cpu") == 0)
		threads_env(e, fb_cpu_threads(cfg));
	else if (cfg != NULL && cuda_visible != NULL && cuda_visible[0] != '\0')
		gpu_step_threads(e, cfg);
}

/* Whether dir (a TMPDIR; unset is /tmp) is one every user may write in: sticky,
 * writable by all and within the runner's user's reach. */
static bool
tmpdir_shared(const char *dir)
{
	struct stat	st;
	char		why[256];

	if (dir == NULL || dir[0] == '\0')
		return true;
	return stat(dir, &st) == 0 && S_ISDIR(st.st_mode) && (st.st_mode & 01777) == 01777 &&
	       fb_contain_check_reach(dir, false, why, sizeof(why)) == 0;
}

void
fb_runner_limits(const struct kb_config *cfg, struct kb_spawn_opts *o, int deadline)
{
	long	ncpu = sysconf(_SC_NPROCESSORS_ONLN);

	o->out_cap = FB_OUT_CAP;
	o->want_result = true;
	o->result_cap = FB_RESULT_CAP;
	o->timeout_ms = deadline * 1000;
	o->rlimit_cpu_s = cfg->runner.rlimit_cpu_s > 0 ? cfg->runner.rlimit_cpu_s :
			  (long)deadline * (ncpu > 4 ? ncpu : 4);
	o->rlimit_fsize = cfg->runner.rlimit_fsize_mb > 0 ?
			  (long long)cfg->runner.rlimit_fsize_mb << 20 : FB_FSIZE_CAP;
	o->rlimit_nofile = cfg->runner.rlimit_nofile > 0 ? cfg->runner.rlimit_nofile : FB_NOFILE;
	o->core_dumps = false;
	fb_contain_apply(o);
}

void
fb_env_contained(struct fb_env *env, const char *work_dir)
{
	char	triton[PATH_MAX];

	if (fb_contain_sandboxed() && work_dir != NULL)
		fb_env_set(env, "TMPDIR", work_dir);
	/* Triton compiles a kernel at its first launch, in the execute, where candidate code
	 * runs: into the step's own scratch, never a cache (only the trusted side writes
	 * those, and a build's directory is the supervisor's) nor a HOME the runner's user
	 * may not write. A later step of the kernel compiles it again. */
	if (work_dir != NULL && kb_path_join(triton, sizeof(triton), work_dir, "triton") == 0)
		fb_env_set(env, "TRITON_CACHE_DIR", triton);
	if (fb_contain_user() == NULL)
		return;
	/* Ours (root's) would be unwritable; caches that want a HOME get the scratch. */
	fb_env_set(env, "HOME", work_dir != NULL ? work_dir : "/");
	fb_env_set(env, "USER", fb_contain_user());
	/* The compilers' temporary files too, unless our TMPDIR is a shared one. */
	if (!fb_contain_sandboxed() && !tmpdir_shared(getenv("TMPDIR")))
		fb_env_set(env, "TMPDIR", work_dir != NULL ? work_dir : "/tmp");
}

/* ------------------------------------------------------------ python */

static pthread_mutex_t	py_lock = PTHREAD_MUTEX_INITIALIZER;
static char		py_cached[PATH_MAX];
static char		py_cached_key[PATH_MAX];

#define FB_SNIPPET_ARGS	8

int
fb_python_snippet(const struct kb_config *cfg, const char *python, const char *code,
		  const char *const *args, bool cuda, int timeout_ms, struct kb_spawn_result *r)
{
	const char		*argv[FB_SNIPPET_ARGS + 4] = { python, "-c", code };
	struct kb_spawn_opts	 o = { 0 };
	struct fb_env		 env;
	int			 rc;

	for (int i = 0; args != NULL && args[i] != NULL; i++) {
		if (i >= FB_SNIPPET_ARGS)
			return -KB_EINVAL;
		argv[3 + i] = args[i];
	}
	fb_env_build(&env, cfg, NULL, cuda ? NULL : "", false);
	o.argv = argv;
	o.envp = (const char *const *)env.v;
	/* Contained as the runner will be: torch must import as that user, in that netns. */
	if (fb_contain_setup(cfg, NULL, 0) == 0) {
		fb_contain_apply(&o);
		o.cwd = "/";
	}
	o.out_cap = 64 << 10;
	o.want_result = true;
	o.result_cap = 1 << 20;
	o.timeout_ms = timeout_ms > 0 ? timeout_ms : FB_PROBE_TIMEOUT_MS;
	rc = kb_spawn_run(&o, r);
	fb_env_clear(&env);
	return rc;
}

/* Whether this Python has torch, as the runner's user finds it: the import system
 * locates the package without running it. Importing it here took 5 s of a fresh GPU
 * host's 65 s cold demo, reading torch's libraries before anything else could start;
 * the import itself is proved by the run's fork server and the selftest forked from it
 * (an env_error naming this Python if it fails). A Python
 * found is remembered in the shared cache under fb_env_key (the Python's identity and
 * the torch under it, among the rest), so that the next kforge process starts none. */
static bool
has_torch(const struct kb_config *cfg, const char *py)
{
	struct kb_spawn_result	 r = { 0 };
	char			 sha[65], memo[PATH_MAX];
	bool			 ok, memo_ok;

	if (access(py, X_OK) != 0)
		return false;
	memo_ok = fb_env_key(cfg, "cpu", py, sha) == 0 &&
		  fb_cache_dir("python", sha, memo, sizeof(memo)) == 0;
	if (memo_ok && kb_file_exists(memo))
		return true;
	ok = fb_python_snippet(cfg, py, "import importlib.util, sys\n"
			       "sys.exit(importlib.util.find_spec('torch') is None)\n", NULL,
			       false, 0, &r) == 0 &&
	     r.end == KB_END_EXITED && r.exit_code == 0;
	if (!ok)
		log_debug("%s has no torch: %.200s", py, r.out.p != NULL ? r.out.p : "");
	else if (memo_ok)
		(void)kb_write_atomic(memo, py, strlen(py));
	kb_spawn_result_clear(&r);
	return ok;
}

/* A bare name ("python3.12") is looked up on PATH: kb_spawn_run does no search. A
 * relative path is made absolute. */
static void
resolve_on_path(const char *name, char *out, size_t outlen)
{
	char	abs[PATH_MAX];

	if (strchr(name, '/') != NULL) {
		snprintf(out, outlen, "%s", name);
		/* Relative to our cwd, not the runner's (it starts in work_dir). Joined, not
		 * realpath'd: a venv's python is a link to the system one, and following it
		 * would leave the venv (and pick up the system's packages). */
		if (name[0] != '/' && getcwd(abs, sizeof(abs)) != NULL &&
		    kb_path_join(out, outlen, abs, name) < 0)
			snprintf(out, outlen, "%s", name);
		return;
	}
	if (kb_which(name, out, outlen) < 0)
		snprintf(out, outlen, "%s", name);
}

static void
tried_add(struct kb_buf *tried, const char *py)
{
	kb_buf_printf(tried, "%s%s", tried->len > 0 ? ", " : "", py);
}

int
fb_find_python(const struct kb_config *cfg, char *out, size_t outlen, char *err,
	       size_t errlen)
{
	struct kb_buf	 tried = KB_BUF_INIT(8192);
	const char	*explicit_py = NULL, *source = NULL, *path;
	char		 cand[PATH_MAX], why[512];
	int		 rc = -KB_ENOPYTHON;

	if (outlen > 0)
		out[0] = '\0';
	if (cfg != NULL && cfg->runner.python != NULL && cfg->runner.python[0] != '\0') {
		explicit_py = cfg->runner.python;
		source = "runner.python";
	} else if ((path = getenv("KFORGE_PYTHON")) != NULL && path[0] != '\0') {
		explicit_py = path;
		source = "KFORGE_PYTHON";
	}
	pthread_mutex_lock(&py_lock);
	if (py_cached[0] != '\0' &&
	    strcmp(py_cached_key, explicit_py != NULL ? explicit_py : "") == 0) {
		rc = snprintf(out, outlen, "%s", py_cached) < (int)outlen ? 0 : -KB_ETOOBIG;
		goto out_unlock;
	}
	if (explicit_py != NULL) {
		/* Taken as given: whether it imports torch is the runner's to say (env_error,
		 * naming this Python), never a reason to fall back on another one. */
		resolve_on_path(explicit_py, cand, sizeof(cand));
		/* kforge copies what the runner reads, but not an interpreter and its packages:
		 * the runner's user must reach this one where it is. */
		if (access(cand, X_OK) == 0 &&
		    fb_contain_check_reach(cand, true, why, sizeof(why)) == 0)
			goto found;
		if (access(cand, X_OK) == 0)
			snprintf(err, errlen, "%s=%s: %s, which runs the runner there; use a Python "
				 "that user can reach, make that directory reachable for it, or set "
				 "runner.user: '' to run the runner as root", source, explicit_py, why);
		else
			snprintf(err, errlen, "%s=%s: no executable Python there; set runner.python "
				 "or KFORGE_PYTHON to one that imports torch", source, explicit_py);
		snprintf(out, outlen, "%s", cand);
		goto out_unlock;
	}
	{
		static const char *const fixed[] = { "/usr/bin/python3", "/usr/local/bin/python3" };

		for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++) {
			snprintf(cand, sizeof(cand), "%s", fixed[i]);
			tried_add(&tried, cand);
			if (has_torch(cfg, cand))
				goto found;
		}
	}
	path = getenv("PATH");
	for (const char *p = path != NULL ? path : ""; *p != '\0';) {
		size_t	n = strcspn(p, ":");
		char	dir[PATH_MAX];

		if (n > 0 && n < sizeof(dir) && p[0] == '/') {
			memcpy(dir, p, n);
			dir[n] = '\0';
			if (kb_path_join(cand, sizeof(cand), dir, "python3") == 0 &&
			    strcmp(cand, "/usr/bin/python3") != 0 &&
			    strcmp(cand, "/usr/local/bin/python3") != 0 &&
			    access(cand, X_OK) == 0) {
				tried_add(&tried, cand);
				if (has_torch(cfg, cand))
					goto found;
			}
		}
		p += n + (p[n] == ':');
	}
	/* Imported as the runner will: torch installed for root alone (pip --user) is not. */
	snprintf(err, errlen, "no Python that imports torch%s%s (tried: %s); set runner.python or "
		 "KFORGE_PYTHON", fb_contain_user() != NULL ? " as runner.user " : "",
		 fb_contain_user() != NULL ? fb_contain_user() : "",
		 tried.p != NULL ? tried.p : "nothing");
	goto out_unlock;
found:
	snprintf(py_cached, sizeof(py_cached), "%s", cand);
	snprintf(py_cached_key, sizeof(py_cached_key), "%s", explicit_py != NULL ? explicit_py : "");
	rc = snprintf(out, outlen, "%s", cand) < (int)outlen ? 0 : -KB_ETOOBIG;
	log_debug("runner python: %s", cand);
out_unlock:
	pthread_mutex_unlock(&py_lock);
	kb_buf_clear(&tried);
	return rc;
}

/* ------------------------------------------------------------ identity */

/* An executable found on PATH as the runner will find it, by what it is: its real path,
 * size and modification time ("" when absent). */
static void
identify_tool(struct kb_buf *key, const char *name)
{
	const char	*path = getenv("PATH");
	char		 dir[PATH_MAX], cand[PATH_MAX], real[PATH_MAX];
	struct stat	 st;

	for (const char *p = path != NULL ? path : "/usr/bin:/bin"; *p != '\0';) {
		size_t n = strcspn(p, ":");

		if (n > 0 && n < sizeof(dir)) {
			memcpy(dir, p, n);
			dir[n] = '\0';
			if (kb_path_join(cand, sizeof(cand), dir, name) == 0 &&
			    access(cand, X_OK) == 0 && realpath(cand, real) != NULL &&
			    stat(real, &st) == 0) {
				kb_buf_printf(key, "%s=%s %lld %lld\n", name, real,
					      (long long)st.st_size, (long long)st.st_mtime);
				return;
			}
		}
		p += n + (p[n] == ':');
	}
	kb_buf_printf(key, "%s=\n", name);
}

static const char *
arch_list(const struct kb_config *cfg)
{
	const char *a = cfg->eval.arch_list != NULL && cfg->eval.arch_list[0] != '\0' ?
			cfg->eval.arch_list : getenv("TORCH_CUDA_ARCH_LIST");

	return a != NULL ? a : "";
}

/* Where the runner's Python keeps torch, by the usual layouts (a venv or prefix's
 * lib/python3.X/{site,dist}-packages, Debian's /usr/lib/python3/dist-packages): the
 * identity (path, size, mtime) of torch/version.py, so that a torch upgraded under the
 * same Python changes the key. Nothing is added where none is found. */
static void
identify_torch(struct kb_buf *key, const char *python)
{
	char		 prefix[PATH_MAX], pattern[PATH_MAX + 64], *slash;
	glob_t		 g;
	struct stat	 st;

	if (snprintf(prefix, sizeof(prefix), "%s", python) >= (int)sizeof(prefix) ||
	    (slash = strrchr(prefix, '/')) == NULL)
		return;
	*slash = '\0';				/* .../bin */
	if ((slash = strrchr(prefix, '/')) == NULL)
		return;
	*slash = '\0';				/* the prefix */
	snprintf(pattern, sizeof(pattern), "%s/lib/python3*/*-packages/torch/version.py", prefix);
	if (glob(pattern, 0, NULL, &g) != 0) {
		snprintf(pattern, sizeof(pattern), "%s/lib/python3/dist-packages/torch/version.py",
			 prefix);
		if (glob(pattern, 0, NULL, &g) != 0)
			return;
	}
	for (size_t i = 0; i < g.gl_pathc; i++)
		if (stat(g.gl_pathv[i], &st) == 0)
			kb_buf_printf(key, "torch=%s %lld %lld\n", g.gl_pathv[i],
				      (long long)st.st_size, (long long)st.st_mtime);
	globfree(&g);
}

int
fb_env_key(const struct kb_config *cfg, const char *device, const char *python, char sha[65])
{
	static const struct kb_config no_config;
	struct kb_buf	 key = KB_BUF_INIT(1u << 20);
	char		 runner[PATH_MAX], *src = NULL;
	size_t		 len = 0;
	struct stat	 st;
	int		 rc;

	if (cfg == NULL)
		cfg = &no_config;

	if ((rc = kb_path_join(runner, sizeof(runner), kb_home(), "feedback/kforge_runner.py")) < 0 ||
	    (rc = kb_read_file(runner, 4u << 20, &src, &len)) < 0)
		return rc;
	kb_buf_printf(&key, "python=%s", python);
	if (stat(python, &st) == 0)
		kb_buf_printf(&key, " %lld %lld", (long long)st.st_size, (long long)st.st_mtime);
	kb_buf_printf(&key, "\n");
	identify_torch(&key, python);
	kb_buf_printf(&key, "device=%s\narch=%s\nuser=%s\n", device, arch_list(cfg),
		      fb_contain_user() != NULL ? fb_contain_user() : "");
	kb_buf_printf(&key, "fast_build=%d\n", cfg->runner.fast_build);
	identify_tool(&key, "c++");
	identify_tool(&key, "clang++");
	identify_tool(&key, "ninja");
	if (strcmp(device, "cuda") == 0)
		identify_tool(&key, "nvcc");
	kb_buf_append(&key, src, len);
	kb_sha256_hex(key.p, key.len, sha);
	kb_buf_clear(&key);
	free(src);
	return 0;
}

/* ------------------------------------------------------------ device and format */

bool
fb_on_cuda(const struct kb_config *cfg, const struct fb_request *req)
{
	const char	*device = req != NULL && req->device != NULL ? req->device : cfg->eval.device;

	return device != NULL && strcmp(device, "cuda") == 0;
}

bool
fb_raw_format(const struct kb_config *cfg)
{
	return cfg->eval.format != NULL && strcmp(cfg->eval.format, "raw") == 0;
}

bool
fb_selftest_makes_pch(const struct kb_config *cfg)
{
	return cfg->runner.fast_build && !fb_raw_format(cfg);
}
