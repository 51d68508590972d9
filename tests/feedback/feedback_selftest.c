/*
 * feedback_selftest.c: fb_selftest with the real runner on the CPU — a fresh build
 * passes and reports its times and torch, the second call reuses the pass without
 * starting anything, use_cache false builds afresh, fb_selftest_forget drops the
 * records, and broken
 * environments name their stage: a bare venv (no torch) says "torch" and names that
 * Python, a missing runner.python says "python", a PATH without a C++ compiler says
 * "compiler", and in the raw format (eval.format raw) the selftest proves the raw build,
 * which needs the compiler alone. The pass records live under a scratch XDG_CACHE_HOME. Skips (77) without
 * a Python that imports torch.
 */
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include "feedback/feedback_int.h"
#include "feedback_testutil.h"

static char	scratch[2048];

static int
count_records(const char *dir)
{
	DIR		*d = opendir(dir);
	struct dirent	*e;
	int		 n = 0;

	if (d == NULL)
		return 0;
	while ((e = readdir(d)) != NULL)
		n += strstr(e->d_name, ".json") != NULL;
	closedir(d);
	return n;
}

/* A venv without torch (and without pip): /usr/bin/python3 -m venv --without-pip. */
static bool
make_bare_venv(const char *dir)
{
	const char		*argv[] = { "/usr/bin/python3", "-m", "venv", "--without-pip", dir,
					    NULL };
	const char		*envp[] = { "PATH=/usr/bin:/bin", NULL };
	struct kb_spawn_opts	 o = { 0 };
	struct kb_spawn_result	 r;
	bool			 ok;

	o.argv = argv;
	o.envp = envp;
	o.timeout_ms = 120000;
	ok = kb_spawn_run(&o, &r) == 0 && r.end == KB_END_EXITED && r.exit_code == 0;
	if (!ok)
		fprintf(stderr, "venv: %s\n", r.out.p != NULL ? r.out.p : "");
	kb_spawn_result_clear(&r);
	return ok;
}

static void
print(const char *what, const struct fb_selftest *st)
{
	fprintf(stderr, "%s: ok %d cached %d build %.1f s run %.3f s python '%s' torch '%s' "
		"stage '%s' message '%s' fix '%s'\n", what, st->ok, st->cached, st->build_s,
		st->run_s, st->python, st->torch, st->stage, st->message, st->fix);
}

static void
test_pass_and_cache(struct kb_config *cfg, const char *records)
{
	struct fb_selftest	st;

	CHECK(fb_selftest(cfg, "cpu", true, &st) == 0);
	print("fresh", &st);
	CHECK(st.ok && !st.cached);
	CHECK(st.build_s > 0 && st.run_s >= 0);
	CHECK(st.torch[0] != '\0' && st.python[0] == '/');
	CHECK(st.stage[0] == '\0' && st.message[0] == '\0');
	CHECK(count_records(records) == 1);

	CHECK(fb_selftest(cfg, "cpu", true, &st) == 0);
	print("again", &st);
	CHECK(st.ok && st.cached && st.torch[0] != '\0' && st.build_s > 0);
}

/* use_cache false builds afresh even where a pass is recorded for the environment: a
 * PATH whose c++, ninja (and clang++) are the same files (the same key) but without
 * `which`, which torch's compiler check calls, so the fresh build fails at once where the
 * recorded pass is still reused. Then fb_selftest_forget drops the records. */
static void
test_fresh_and_forget(struct kb_config *cfg, const char *records)
{
	struct fb_selftest	st;
	char			bin[2100], link[2200], *saved = kb_strdup(getenv("PATH"));

	snprintf(bin, sizeof(bin), "%s/bin-without-which", scratch);
	kb_mkdir_p(bin, 0755);
	snprintf(link, sizeof(link), "%s/c++", bin);
	CHECK(symlink("/usr/bin/c++", link) == 0);
	snprintf(link, sizeof(link), "%s/ninja", bin);
	CHECK(symlink("/usr/bin/ninja", link) == 0);
	/* The fast build's compiler is part of the key too, where there is one. */
	snprintf(link, sizeof(link), "%s/clang++", bin);
	if (access("/usr/bin/clang++", X_OK) == 0)
		CHECK(symlink("/usr/bin/clang++", link) == 0);
	setenv("PATH", bin, 1);
	CHECK(fb_selftest(cfg, "cpu", true, &st) == 0);
	print("same key, cached", &st);
	CHECK(st.ok && st.cached);
	/* Scratch directories of earlier selftests in /tmp: a killed one's (its lock free)
	 * goes with the next selftest's start; one whose lock is held (a selftest at work)
	 * and one without a lock (being made, or kept) stay. */
	char	stale[64] = "/tmp/kforge-selftest-XXXXXX", live[64] = "/tmp/kforge-selftest-XXXXXX";
	char	bare[64] = "/tmp/kforge-selftest-XXXXXX", lock[128];
	int	held = -1;

	CHECK(mkdtemp(stale) != NULL && mkdtemp(live) != NULL && mkdtemp(bare) != NULL);
	snprintf(lock, sizeof(lock), "%s/%s", stale, FB_SCRATCH_LOCK);
	CHECK(kb_write_atomic(lock, "", 0) == 0);
	snprintf(lock, sizeof(lock), "%s/%s", live, FB_SCRATCH_LOCK);
	CHECK((held = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600)) != -1 &&
	      flock(held, LOCK_EX) == 0);
	CHECK(fb_selftest(cfg, "cpu", false, &st) == 0);
	print("same key, fresh", &st);
	CHECKM(access(stale, F_OK) == -1, "a killed selftest's %s is still there", stale);
	CHECKM(access(live, F_OK) == 0 && access(bare, F_OK) == 0,
	       "a locked or lockless scratch directory was removed");
	close(held);
	(void)kb_rmtree(live);
	(void)kb_rmtree(bare);
	CHECK(!st.ok && !st.cached && strcmp(st.stage, "build") == 0);
	CHECK(strstr(st.message, "which") != NULL);
	setenv("PATH", saved, 1);
	free(saved);
	CHECK(count_records(records) == 1);	/* a failure does not undo a pass */
	fb_selftest_forget();
	CHECK(count_records(records) == 0);
}

/* eval.format raw: the selftest builds and calls the raw format's known-good extension
 * (load_cpp's way), which needs the C++ compiler and nothing of load_inline's (ninja,
 * `which`): on a PATH holding the compiler alone it passes where load_inline's fails, and
 * its pass is recorded apart from a load_inline pass. Without c++ it names the compiler. */
static void
test_raw_format(struct kb_config *cfg, const char *python, const char *records)
{
	static const char *const toolchain[] = { "c++", "as", "ld" };	/* g++ runs as, ld */
	struct fb_selftest	st;
	char			bin[2100], link[2200], *saved = kb_strdup(getenv("PATH"));

	free(cfg->runner.python);
	cfg->runner.python = kb_strdup(python);
	free(cfg->eval.format);
	cfg->eval.format = kb_strdup("raw");
	CHECK(count_records(records) == 0);
	CHECK(fb_selftest(cfg, "cpu", true, &st) == 0);
	print("raw", &st);
	CHECK(st.ok && !st.cached && st.build_s > 0 && st.torch[0] != '\0');
	CHECK(count_records(records) == 1);
	CHECK(fb_selftest(cfg, "cpu", true, &st) == 0);
	CHECK(st.ok && st.cached);

	snprintf(bin, sizeof(bin), "%s/bin-compiler-only", scratch);
	kb_mkdir_p(bin, 0755);
	for (size_t i = 0; i < sizeof(toolchain) / sizeof(toolchain[0]); i++) {
		char target[64];

		snprintf(target, sizeof(target), "/usr/bin/%s", toolchain[i]);
		snprintf(link, sizeof(link), "%s/%s", bin, toolchain[i]);
		CHECK(symlink(target, link) == 0);
	}
	setenv("PATH", bin, 1);
	CHECK(fb_selftest(cfg, "cpu", false, &st) == 0);
	print("raw, c++ alone", &st);
	CHECK(st.ok && !st.cached && st.build_s > 0);
	free(cfg->eval.format);
	cfg->eval.format = kb_strdup("load_inline");
	CHECK(fb_selftest(cfg, "cpu", false, &st) == 0);
	print("load_inline, c++ alone", &st);
	CHECK(!st.ok && st.stage[0] != '\0');

	free(cfg->eval.format);
	cfg->eval.format = kb_strdup("raw");
	snprintf(bin, sizeof(bin), "%s/bin-nothing", scratch);
	kb_mkdir_p(bin, 0755);
	setenv("PATH", bin, 1);
	CHECK(fb_selftest(cfg, "cpu", false, &st) == 0);
	print("raw, no compiler", &st);
	CHECK(!st.ok && strcmp(st.stage, "compiler") == 0 && strstr(st.message, "c++") != NULL);
	setenv("PATH", saved, 1);
	free(saved);
	free(cfg->eval.format);
	cfg->eval.format = NULL;
	free(cfg->runner.python);
	cfg->runner.python = NULL;
	fb_selftest_forget();
}

static void
test_bare_venv(struct kb_config *cfg)
{
	struct fb_selftest	st;
	char			venv[2100], py[2200];

	snprintf(venv, sizeof(venv), "%s/venv", scratch);
	if (!make_bare_venv(venv)) {
		CHECK(!"python3 -m venv failed");
		return;
	}
	snprintf(py, sizeof(py), "%s/bin/python", venv);
	free(cfg->runner.python);
	cfg->runner.python = kb_strdup(py);
	CHECK(fb_selftest(cfg, "cpu", true, &st) == 0);
	print("bare venv", &st);
	CHECK(!st.ok && !st.cached);
	CHECK(strcmp(st.stage, "torch") == 0);
	CHECK(strcmp(st.python, py) == 0);		/* no fallback to another Python */
	CHECK(strstr(st.message, py) != NULL && strstr(st.message, "torch") != NULL);
	CHECK(strstr(st.fix, "runner.python") != NULL);
	CHECK(st.torch[0] == '\0' && st.build_s < 0);
	CHECK(strchr(st.message, '\n') == NULL && strchr(st.fix, '\n') == NULL);
}

static void
test_missing_python(struct kb_config *cfg)
{
	struct fb_selftest	st;

	free(cfg->runner.python);
	cfg->runner.python = kb_strdup("/nonexistent/python3");
	CHECK(fb_selftest(cfg, "cpu", true, &st) == 0);
	print("missing python", &st);
	CHECK(!st.ok && strcmp(st.stage, "python") == 0);
	CHECK(strstr(st.message, "/nonexistent/python3") != NULL && st.fix[0] != '\0');
}

/* The runner's PATH is ours: one with ninja but no C++ compiler. */
static void
test_no_compiler(struct kb_config *cfg, const char *python)
{
	struct fb_selftest	st;
	char			bin[2100], link[2200], *saved = kb_strdup(getenv("PATH"));

	snprintf(bin, sizeof(bin), "%s/bin-without-cxx", scratch);
	kb_mkdir_p(bin, 0755);
	snprintf(link, sizeof(link), "%s/ninja", bin);
	CHECK(symlink("/usr/bin/ninja", link) == 0 || access("/usr/bin/ninja", X_OK) != 0);
	free(cfg->runner.python);
	cfg->runner.python = kb_strdup(python);
	setenv("PATH", bin, 1);
	CHECK(fb_selftest(cfg, "cpu", true, &st) == 0);
	setenv("PATH", saved, 1);
	free(saved);
	print("no compiler", &st);
	CHECK(!st.ok && strcmp(st.stage, "compiler") == 0);
	CHECK(strstr(st.message, "c++") != NULL && strstr(st.fix, "g++") != NULL);
}

int
main(void)
{
	struct kb_config	cfg;
	struct fb_selftest	st;
	char			py[4096], err[1024], cache[2100], records[2200];

	fbt_config(&cfg, "cpu");
	if (fb_find_python(&cfg, py, sizeof(py), err, sizeof(err)) < 0) {
		fprintf(stderr, "SKIP: %s\n", err);
		return 77;
	}
	CHECK(fb_selftest(&cfg, "gpu", true, &st) == -KB_EINVAL);
	fbt_scratch(scratch, sizeof(scratch), "feedback_selftest");
	/* The runner's user (nobody, when root) must reach the venv made here. */
	chmod(scratch, 0755);
	snprintf(cache, sizeof(cache), "%s/cache", scratch);
	snprintf(records, sizeof(records), "%s/kforge/selftest", cache);
	setenv("XDG_CACHE_HOME", cache, 1);

	test_pass_and_cache(&cfg, records);
	test_fresh_and_forget(&cfg, records);
	test_raw_format(&cfg, py, records);
	test_bare_venv(&cfg);
	test_missing_python(&cfg);
	test_no_compiler(&cfg, py);
	/* Only passes are recorded. */
	CHECK(count_records(records) == 0);

	kb_config_clear(&cfg);
	return fbt_finish(scratch);
}
