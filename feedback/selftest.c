/*
 * selftest.c: proof that this machine can build and run candidates before any is asked
 * for (docs/DESIGN.md §5, env_error). The runner's "selftest" mode checks the prerequisites
 * and builds a known-good tiny extension exactly as a candidate's precompile is built, in
 * the run's build format (eval.format), with fb_run (the same environment, containment
 * and deadline rules); this file chooses the Python, gives the build a directory the
 * runner's user can reach, turns the result into a struct fb_selftest, and remembers a
 * pass per environment so that the next run (or resume) pays nothing for it.
 *
 * The pass record is keyed by what the outcome depends on and can be checked without
 * starting anything (fb_env_key, env.c's): the Python (as given, so a venv is not its
 * base interpreter), the compiler and ninja found on PATH, the device and arch list, the
 * runner's user, and the runner's source. Torch itself is checked when a record is read:
 * its __init__.py and torch/extension.h must still be the files the pass saw.
 */
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "feedback/feedback_int.h"
#include "base/banned.h"

#define ST_TIMEOUT_EXTRA_S	120	/* the run after the build, and torch's start-up */
#define ST_DEFAULT_BUILD_S	300	/* eval.compile_timeout_s unset (cfg NULL) */
#define ST_RECORD_CAP		(64u << 10)
#define ST_TMP_DIR		"/tmp"

/* The C side's own remedies, for what the runner cannot report itself. */
static const struct {
	const char	*stage;
	const char	*fix;
} c_fixes[] = {
	{ "python", "set runner.python (or KFORGE_PYTHON) to a Python that imports torch, or "
		    "run tools/setup.sh; on resume: kforge resume DIR --set runner.python=PATH" },
	{ "torch", "install PyTorch (Debian: apt-get install python3-torch) or run "
		   "tools/setup.sh, or set runner.python / KFORGE_PYTHON to a Python that "
		   "imports torch" },
	{ "build", "the runner ended abnormally while building the known-good extension; "
		   "check memory and eval.compile_timeout_s, then 'kforge doctor --fresh'" },
	{ "run", "the runner ended abnormally while running the known-good extension; "
		 "'kforge doctor --fresh' shows its output" },
};

const char *
fb_env_fix(const char *stage)
{
	for (size_t i = 0; i < sizeof(c_fixes) / sizeof(c_fixes[0]); i++)
		if (strcmp(c_fixes[i].stage, stage) == 0)
			return c_fixes[i].fix;
	return c_fixes[2].fix;
}

static void
fail(struct fb_selftest *out, const char *stage, const char *message, const char *fix)
{
	out->ok = false;
	snprintf(out->stage, sizeof(out->stage), "%s", stage);
	snprintf(out->message, sizeof(out->message), "%s", message);
	snprintf(out->fix, sizeof(out->fix), "%s", fix != NULL && fix[0] != '\0' ? fix :
		 fb_env_fix(stage));
	/* One line each, whatever the runner sent. */
	for (char *p = out->message; *p != '\0'; p++)
		if (*p == '\n' || *p == '\r')
			*p = ' ';
	for (char *p = out->fix; *p != '\0'; p++)
		if (*p == '\n' || *p == '\r')
			*p = ' ';
}

/* ------------------------------------------------------------ the key */

/* Whether the shared cache's directory kind holds a file named prefix...suffix: what a
 * selftest leaves there. */
static bool
cache_holds(const char *kind, const char *prefix, const char *suffix)
{
	char		 dir[PATH_MAX];
	DIR		*d;
	struct dirent	*e;
	bool		 found = false;
	size_t		 np = strlen(prefix), ns = strlen(suffix);

	if (fb_cache_dir(kind, NULL, dir, sizeof(dir)) < 0 || (d = opendir(dir)) == NULL)
		return false;
	while (!found && (e = readdir(d)) != NULL) {
		size_t n = strlen(e->d_name);

		found = n > np + ns && strncmp(e->d_name, prefix, np) == 0 &&
			strcmp(e->d_name + n - ns, suffix) == 0;
	}
	closedir(d);
	return found;
}

/* Whether the shared cache holds the fast-build compiler wrapper (the runner's
 * install_fast_cxx names it kforge-<digest>-g++). */
static bool
pch_ready(void)
{
	return cache_holds("pch", "kforge-", "-g++");
}

/* Whether the shared cache holds a counter availability image (kprof/inject.c), which a
 * selftest on a GPU writes where counters may be read. */
static bool
kprof_ready(void)
{
	return cache_holds("kprof", "", ".bin");
}

/* The pass record's key: the environment's and the build format's, and for load_inline
 * whether the cache that runs share holds the precompiled headers. The selftest's builds
 * are what make them (fb_run), so a pass is recorded as the cache it leaves, and a cache
 * emptied since (or another cache, $KFORGE_CACHE_DIR) finds no pass and sees the
 * selftest again. A raw-format pass proves the raw build, which uses no such header. */
static void
pass_key(const struct kb_config *cfg, const char *device, const char *env_sha, char sha[65])
{
	char	key[128];
	int	kprof = strcmp(device, "cuda") == 0 && kprof_ready();

	if (fb_raw_format(cfg))
		snprintf(key, sizeof(key), "%s raw kprof=%d", env_sha, kprof);
	else
		snprintf(key, sizeof(key), "%s pch=%d kprof=%d", env_sha, pch_ready(), kprof);
	kb_sha256_hex(key, strlen(key), sha);
}

/* ------------------------------------------------------------ the records */

static int
cache_dir(char *out, size_t n)
{
	const char	*xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");

	if (xdg != NULL && xdg[0] == '/')
		return snprintf(out, n, "%s/kforge/selftest", xdg) < (int)n ? 0 : -KB_ETOOBIG;
	if (home != NULL && home[0] == '/')
		return snprintf(out, n, "%s/.cache/kforge/selftest", home) < (int)n ? 0 :
		       -KB_ETOOBIG;
	return -KB_ENOENT;
}

static int
record_path(const char *sha, char *out, size_t n)
{
	char	dir[PATH_MAX];
	int	rc;

	if ((rc = cache_dir(dir, sizeof(dir))) < 0)
		return rc;
	return snprintf(out, n, "%s/%.32s.json", dir, sha) < (int)n ? 0 : -KB_ETOOBIG;
}

/* What a file is, for a record to notice it changed ("" when it is gone). */
static void
witness(const char *path, char *out, size_t n)
{
	struct stat	st;

	if (path == NULL || stat(path, &st) != 0)
		snprintf(out, n, "%s", "");
	else
		snprintf(out, n, "%lld %lld", (long long)st.st_size, (long long)st.st_mtime);
}

/* torch/__init__.py -> torch/include/torch/extension.h */
static void
torch_header(const char *torch_file, char *out, size_t n)
{
	const char	*slash = torch_file != NULL ? strrchr(torch_file, '/') : NULL;

	if (slash == NULL) {
		snprintf(out, n, "%s", "");
		return;
	}
	snprintf(out, n, "%.*s/include/torch/extension.h", (int)(slash - torch_file), torch_file);
}

static bool
record_still_true(json_t *rec)
{
	const char	*torch_file = json_string_value(json_object_get(rec, "torch_file"));
	char		 now[64], header[PATH_MAX];

	if (!json_is_true(json_object_get(rec, "ok")) || torch_file == NULL)
		return false;
	witness(torch_file, now, sizeof(now));
	if (now[0] == '\0' || strcmp(now, json_string_value(json_object_get(rec, "torch_file_id")) ?: "") != 0)
		return false;
	torch_header(torch_file, header, sizeof(header));
	witness(header, now, sizeof(now));
	return strcmp(now, json_string_value(json_object_get(rec, "header_id")) ?: "-") == 0;
}

static bool
load_record(const char *sha, struct fb_selftest *out)
{
	char	 path[PATH_MAX], *text = NULL;
	json_t	*rec;
	bool	 ok;

	if (record_path(sha, path, sizeof(path)) < 0 ||
	    kb_read_file(path, ST_RECORD_CAP, &text, NULL) < 0)
		return false;
	rec = json_loads(text, 0, NULL);
	free(text);
	if ((ok = rec != NULL && record_still_true(rec))) {
		out->ok = out->cached = true;
		out->build_s = json_number_value(json_object_get(rec, "build_s"));
		out->run_s = json_number_value(json_object_get(rec, "run_s"));
		snprintf(out->torch, sizeof(out->torch), "%s",
			 json_string_value(json_object_get(rec, "torch")) ?: "");
	}
	json_decref(rec);
	return ok;
}

static void
save_record(const char *sha, const char *device, const struct fb_selftest *st,
	    const char *torch_file)
{
	char	 path[PATH_MAX], dir[PATH_MAX], id[64], header[PATH_MAX], header_id[64], ts[32];
	json_t	*rec;

	if (record_path(sha, path, sizeof(path)) < 0 || cache_dir(dir, sizeof(dir)) < 0 ||
	    kb_mkdir_p(dir, 0755) < 0)
		return;
	witness(torch_file, id, sizeof(id));
	torch_header(torch_file, header, sizeof(header));
	witness(header, header_id, sizeof(header_id));
	kb_iso8601(kb_now_ms(), ts);
	rec = json_pack("{s:b, s:s, s:s, s:s, s:f, s:f, s:s, s:s, s:s, s:s}", "ok", 1,
			"python", st->python, "device", device, "torch", st->torch, "build_s",
			st->build_s, "run_s", st->run_s, "torch_file", torch_file, "torch_file_id",
			id, "header_id", header_id, "created", ts);
	if (rec == NULL || kb_write_atomic_json(path, rec) < 0)
		log_debug("cannot record the selftest's pass in %s", path);
	json_decref(rec);
}

static int
forget_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	size_t	n = strlen(path);

	(void)st;
	if (type == FTW_F && ftw->level == 1 && n > 5 && strcmp(path + n - 5, ".json") == 0)
		(void)unlink(path);
	return 0;
}

void
fb_selftest_forget(void)
{
	char	dir[PATH_MAX];

	if (cache_dir(dir, sizeof(dir)) == 0)
		(void)nftw(dir, forget_one, 4, FTW_PHYS);
}

/* ------------------------------------------------------------ the build */

/* A fresh directory for the build and the runner's scratch, made by us (mkdtemp: ours,
 * never an existing one), then opened to the runner's user: it must reach them even when
 * our HOME, TMPDIR or the run directory is closed to it, hence /tmp. A killed selftest's
 * is removed by the next (fb_scratch_make). */
static int
make_dirs(char *top, size_t n, int *lock_fd, char *build, char *work, size_t m, char *err,
	  size_t errlen)
{
	int	rc;

	if ((rc = fb_scratch_make(ST_TMP_DIR, "selftest", top, n, lock_fd, err, errlen)) < 0)
		return rc;
	if (snprintf(build, m, "%s/build", top) >= (int)m ||
	    snprintf(work, m, "%s/work", top) >= (int)m) {
		rc = -KB_ETOOBIG;
		goto out_rm;
	}
	if ((rc = kb_mkdir_p(build, 0755)) < 0 || (rc = kb_mkdir_p(work, 0755)) < 0)
		goto out_rm;
	return 0;
out_rm:
	snprintf(err, errlen, "cannot make a build directory under %s: %s", top,
		 kb_strerror(rc));
	(void)fb_scratch_end(top, *lock_fd, true);
	*lock_fd = -1;
	return rc;
}

static double
seconds(json_t *details, const char *key)
{
	json_t	*v = json_object_get(details, key);

	return json_is_number(v) ? json_number_value(v) : -1;
}

static int
first_gpu(const struct kb_config *cfg)
{
	return !cfg->gpus.all && cfg->gpus.ndevices > 0 ? cfg->gpus.devices[0] : 0;
}

/* Turns the runner's answer into *out. */
static void
read_outcome(const struct fb_outcome *o, const char *device, struct fb_selftest *out,
	     const char **torch_file)
{
	json_t		*details = json_object_get(o->result, "details");
	json_t		*env = json_object_get(o->result, "env");
	const char	*msg = json_string_value(json_object_get(details, "message"));
	const char	*stage = json_string_value(json_object_get(details, "stage"));
	char		 text[512];

	snprintf(out->torch, sizeof(out->torch), "%s",
		 json_string_value(json_object_get(env, "torch")) ?: "");
	*torch_file = json_string_value(json_object_get(env, "torch_file"));
	out->build_s = seconds(details, "build_s");
	out->run_s = seconds(details, "run_s");
	snprintf(out->start, sizeof(out->start), "%s",
		 json_string_value(json_object_get(details, "start")) ?: "");
	if (o->status == FB_ST_OK && o->correct) {
		out->ok = true;
		return;
	}
	if (o->status == FB_ST_ENV_ERROR && stage != NULL) {
		fail(out, stage, msg != NULL ? msg : "the environment check failed",
		     json_string_value(json_object_get(details, "fix")));
		return;
	}
	/* Ended without saying why (a signal, the deadline) or with another status. */
	snprintf(text, sizeof(text), "the %s selftest ended with %s: %s", device,
		 fb_status_name(o->status), msg != NULL ? msg : "no message");
	fail(out, out->build_s < 0 ? "build" : "run", text, NULL);
}

int
fb_selftest(const struct kb_config *cfg, const char *device, bool use_cache,
	    struct fb_selftest *out)
{
	static char		 nobody[] = "nobody";
	static const struct kb_config defaults = {
		.runner = { .user = nobody, .isolate_network = true, .fast_build = true },
	};
	struct kb_config	 limits;
	struct fb_request	 req;
	struct fb_outcome	 o = { 0 };
	char			 err[1024], env_sha[65], sha[65], top[PATH_MAX], build[PATH_MAX];
	char			 work[PATH_MAX], lib[PATH_MAX], staged[PATH_MAX], kprof_out[PATH_MAX];
	const char		*explicit_py, *torch_file = NULL;
	bool			 cuda;
	long			 build_s;
	int			 rc, lock_fd = -1;

	memset(out, 0, sizeof(*out));
	out->build_s = out->run_s = -1;
	if (device == NULL || (strcmp(device, "cpu") != 0 && strcmp(device, "cuda") != 0))
		return -KB_EINVAL;
	if (cfg == NULL)
		cfg = &defaults;
	/* The machine is on trial, not the experiment's limits: a runner.rlimit_* or memory
	 * cap too tight for a build shows in the candidates' own results. */
	limits = *cfg;
	limits.runner.rlimit_cpu_s = 0;
	limits.runner.rlimit_fsize_mb = 0;
	limits.runner.rlimit_nofile = 0;
	limits.runner.max_host_memory_mb = 0;
	cfg = &limits;
	cuda = strcmp(device, "cuda") == 0;
	if ((rc = fb_contain_setup(cfg, err, sizeof(err))) < 0) {
		snprintf(out->message, sizeof(out->message), "%s", err);
		return rc;
	}
	if (fb_find_python(cfg, out->python, sizeof(out->python), err, sizeof(err)) < 0) {
		explicit_py = cfg->runner.python != NULL && cfg->runner.python[0] != '\0' ?
			      cfg->runner.python : getenv("KFORGE_PYTHON");
		out->python[0] = '\0';
		fail(out, explicit_py != NULL && explicit_py[0] != '\0' ? "python" : "torch", err,
		     NULL);
		return 0;
	}
	if ((rc = fb_env_key(cfg, device, out->python, env_sha)) < 0) {
		snprintf(out->message, sizeof(out->message), "cannot read the runner: %s",
			 kb_strerror(rc));
		return rc;
	}
	pass_key(cfg, device, env_sha, sha);
	if (use_cache && load_record(sha, out))
		return 0;
	if ((rc = make_dirs(top, sizeof(top), &lock_fd, build, work, sizeof(build), err,
			    sizeof(err))) < 0) {
		snprintf(out->message, sizeof(out->message), "%s", err);
		return rc;
	}
	memset(&req, 0, sizeof(req));
	req.mode = FB_SELFTEST;
	req.device = device;
	req.build_dir = build;
	req.work_dir = work;
	req.device_index = cuda ? first_gpu(cfg) : -1;
	/* On a GPU with the CUPTI library, the known-good kernel runs under its metrics mode,
	 * which keeps the counter availability image for every profile after (run.c,
	 * kprof_env): a read of the counters a profile of this machine could not do is
	 * only a note in that profile later, never a failed selftest. */
	if (cuda && fb_kprof_library(lib, sizeof(lib)) == 0 &&
	    fb_stage_input(lib, staged, sizeof(staged)) == 0 &&
	    kb_path_join(kprof_out, sizeof(kprof_out), work, "selftest-kprof.%p.json") == 0) {
		req.kprof_lib = staged;
		req.kprof_out = kprof_out;
		req.kprof_mode = "metrics";
	}
	build_s = cfg->eval.compile_timeout_s > 0 ? cfg->eval.compile_timeout_s : ST_DEFAULT_BUILD_S;
	req.timeout_s = (int)(build_s + ST_TIMEOUT_EXTRA_S);
	rc = fb_run(cfg, &req, &o);
	if (rc == 0) {
		read_outcome(&o, device, out, &torch_file);
		/* A pass that left no precompiled headers (their directory was out of reach
		 * this time) is not remembered: the next selftest tries to make them again. */
		if (out->ok && (!fb_selftest_makes_pch(cfg) || pch_ready())) {
			pass_key(cfg, device, env_sha, sha);	/* the cache as this pass leaves it */
			save_record(sha, device, out, torch_file);
		}
	} else if (rc == -KB_EEXEC) {
		snprintf(err, sizeof(err), "cannot start %s for the runner", out->python);
		fail(out, "python", err, NULL);
		rc = 0;
	} else if (rc == -KB_ENOPYTHON) {
		fail(out, "python", "no Python for the runner", NULL);
		rc = 0;
	} else {
		snprintf(out->message, sizeof(out->message), "the selftest could not run: %s",
			 kb_strerror(rc));
	}
	fb_outcome_clear(&o);
	(void)fb_scratch_end(top, lock_fd, true);
	return rc;
}
