/*
 * feedback_testutil.h: what the feedback tests share — CHECK, a CPU/GPU configuration
 * with the defaults the config loader would fill in, and paths to the test data.
 */
#ifndef KFORGE_TESTS_FEEDBACK_TESTUTIL_H
#define KFORGE_TESTS_FEEDBACK_TESTUTIL_H

#include <dirent.h>
#include <ftw.h>
#include <stdio.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/base.h"
#include "feedback/feedback_int.h"

#include "kb_check.h"

/* A GPU the tests can use: a device node, and nvidia-smi -L answering. */
static inline bool
fbt_have_gpu(void)
{
	static const char *const where[] = { "/usr/bin/nvidia-smi", "/usr/local/bin/nvidia-smi",
					     "/usr/local/nvidia/bin/nvidia-smi" };
	const char		*argv[] = { NULL, "-L", NULL };
	const char		*envp[] = { "PATH=/usr/bin:/bin", NULL };
	struct kb_spawn_opts	 o = { 0 };
	struct kb_spawn_result	 r;
	bool			 ok;

	if (access("/dev/nvidia0", F_OK) != 0)
		return false;
	for (size_t i = 0; i < sizeof(where) / sizeof(where[0]) && argv[0] == NULL; i++)
		if (access(where[i], X_OK) == 0)
			argv[0] = where[i];
	if (argv[0] == NULL)
		return false;
	o.argv = argv;
	o.envp = envp;
	o.timeout_ms = 60000;
	ok = kb_spawn_run(&o, &r) == 0 && r.end == KB_END_EXITED && r.exit_code == 0;
	kb_spawn_result_clear(&r);
	return ok;
}

static inline void
fbt_config(struct kb_config *c, const char *device)
{
	memset(c, 0, sizeof(*c));
	c->name = kb_strdup("feedback-test");
	c->llm.provider = kb_strdup("replay");
	c->llm.api_key_env = kb_strdup("KFORGE_TEST_API_KEY");
	c->refinement.prompt = kb_strdup("one_shot");
	c->refinement.feedback_max_chars = 4000;
	c->refinement.profile_metrics = true;
	c->refinement.profile_metrics_top = 3;
	c->eval.device = kb_strdup(device);
	c->eval.precision = kb_strdup("fp32");
	c->eval.correctness_trials = 5;
	c->eval.atol = c->eval.rtol = -1;
	c->eval.perf_trials = 10;
	c->eval.warmup = 2;
	c->eval.seed = 42;
	c->eval.compile_timeout_s = 600;
	c->eval.timeout_s = 300;
	c->eval.arch_list = kb_strdup("");
	c->eval.inputs = kb_strdup("host");
	c->eval.timing = kb_strdup("cuda_event");
	c->eval.speedup = kb_strdup("auto");
	c->eval.l2_flush = true;
	c->runner.python = kb_strdup("");
	c->runner.fast_build = true;
}

/* tests/data/feedback/<name> under $KFORGE_HOME (the source tree). */
static inline void
fbt_data(char *out, size_t n, const char *name)
{
	snprintf(out, n, "%s/tests/data/feedback/%s", kb_home(), name);
}

/* A fresh scratch directory under $KFORGE_TEST_TMP (or /tmp). */
static inline void
fbt_scratch(char *out, size_t n, const char *tag)
{
	const char *base = getenv("KFORGE_TEST_TMP");

	if (base == NULL || base[0] == '\0')
		base = "/tmp";
	kb_mkdir_p(base, 0755);
	snprintf(out, n, "%s/%s-XXXXXX", base, tag);
	if (mkdtemp(out) == NULL) {
		perror("mkdtemp");
		exit(1);
	}
}

static inline bool
fbt_flagged(const struct fb_outcome *o, const char *flag)
{
	size_t	 i;
	json_t	*f;

	json_array_foreach(json_object_get(o->result, "flags"), i, f)
		if (json_is_string(f) && strcmp(json_string_value(f), flag) == 0)
			return true;
	return false;
}

static inline int64_t
fbt_mtime_ns(const char *path)
{
	struct stat	st;

	if (stat(path, &st) == -1)
		return -1;
	return (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
}

static inline int
fbt_rm_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	return type == FTW_DP ? rmdir(path) : unlink(path);
}

/* Removes a scratch tree once a test passed (failures keep it for a look). */
static inline void
fbt_rmtree(const char *dir)
{
	(void)nftw(dir, fbt_rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* A string of the result's details (details.start: how the runner began), "" if none. */
static inline const char *
fbt_detail(const struct fb_outcome *o, const char *key)
{
	const char *s = json_string_value(json_object_get(json_object_get(o->result, "details"), key));

	return s != NULL ? s : "";
}

/* The end of a test's main: its exit status; the scratch directory is kept for a look
 * when a check failed, removed otherwise. */
static inline int
fbt_finish(const char *scratch)
{
	if (failures > 0) {
		fprintf(stderr, "%d check(s) failed; scratch kept in %s\n", failures, scratch);
		return 1;
	}
	fbt_rmtree(scratch);
	return 0;
}

/* The children of this process whose command line has --zygote: fork servers and the
 * runners they forked (reparented here); at most max. */
static inline int
fbt_forked_family(pid_t *out, int max)
{
	struct dirent	*de;
	DIR		*d;
	int		 n = 0;

	if ((d = opendir("/proc")) == NULL)
		return 0;
	while ((de = readdir(d)) != NULL && n < max) {
		char	path[64], buf[4096], state = 0;
		pid_t	pid = (pid_t)strtol(de->d_name, NULL, 10), ppid = 0;
		size_t	len;
		FILE	*f;

		if (pid <= 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
		if ((f = fopen(path, "r")) == NULL)
			continue;
		if (fscanf(f, "%*d (%*[^)]) %c %d", &state, &ppid) != 2)
			ppid = 0;
		fclose(f);
		if (ppid != getpid() || state == 'Z')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
		if ((f = fopen(path, "r")) == NULL)
			continue;
		len = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
		for (size_t i = 0; i < len; i++)
			buf[i] = buf[i] == '\0' ? ' ' : buf[i];
		buf[len] = '\0';
		if (strstr(buf, "--zygote") != NULL)
			out[n++] = pid;
	}
	closedir(d);
	return n;
}

/* The fork server of this process (the one --zygote child that is not the warm
 * runner), 0 unless exactly one. */
static inline pid_t
fbt_fork_server(void)
{
	pid_t	fam[8], server = 0;
	int	n = fbt_forked_family(fam, 8), found = 0;

	for (int i = 0; i < n; i++) {
		if (fam[i] != fb_warm_pid()) {
			server = fam[i];
			found++;
		}
	}
	return found == 1 ? server : 0;
}

#endif /* KFORGE_TESTS_FEEDBACK_TESTUTIL_H */
