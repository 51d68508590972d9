/*
 * feedback_cache.c: the keys of the shared cache (feedback/entries.c, fb_env_key). A
 * build's directory changes with the code, the precision, the fast build, the device, the
 * arch list and the torch under the Python; a baseline's path with the problem's
 * content, the device model, the precision, the timing settings and torch.compile; the
 * same inputs give the same answer. The cache's root must be kforge's own; its trim
 * removes the builds used least recently and spares those in use. No runner is started:
 * the Python is named (runner.python), and a fake one stands in where only its files
 * matter.
 */
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>

#include "feedback_testutil.h"

static char	scratch[1024];

static void
write_file(const char *path, const char *text)
{
	CHECK(kb_write_atomic(path, text, strlen(text)) == 0);
}

static void
build_dir(const struct kb_config *c, const char *code, char *out)
{
	CHECK(fb_build_dir(c, code, out, PATH_MAX) == 0);
}

static void
test_build_keys(void)
{
	struct kb_config	c;
	char			a[PATH_MAX], b[PATH_MAX], root[PATH_MAX + 32];
	const char		*code = "class ModelNew: pass  # load_inline\n";

	fbt_config(&c, "cpu");
	free(c.runner.python);
	c.runner.python = kb_strdup("/usr/bin/python3");
	c.runner.fast_build = true;
	build_dir(&c, code, a);
	build_dir(&c, code, b);
	CHECKM(strcmp(a, b) == 0, "the same code and config give two builds: %s %s", a, b);
	snprintf(root, sizeof(root), "%s/cache/builds/", scratch);
	CHECKM(strncmp(a, root, strlen(root)) == 0, "a build outside the cache: %s", a);

	build_dir(&c, "class ModelNew: pass  # load_inline \n", b);
	CHECKM(strcmp(a, b) != 0, "one byte more of code, the same build");

	free(c.eval.precision);
	c.eval.precision = kb_strdup("fp16");
	build_dir(&c, code, b);
	CHECKM(strcmp(a, b) != 0, "another precision, the same build");
	free(c.eval.precision);
	c.eval.precision = kb_strdup("fp32");

	c.runner.fast_build = false;
	build_dir(&c, code, b);
	CHECKM(strcmp(a, b) != 0, "another compiler path (fast_build), the same build");
	c.runner.fast_build = true;

	free(c.eval.arch_list);
	c.eval.arch_list = kb_strdup("9.0");
	build_dir(&c, code, b);
	CHECKM(strcmp(a, b) != 0, "another arch list, the same build");
	free(c.eval.arch_list);
	c.eval.arch_list = kb_strdup("");

	free(c.eval.device);
	c.eval.device = kb_strdup("cuda");
	build_dir(&c, code, b);
	CHECKM(strcmp(a, b) != 0, "another device, the same build");
	free(c.eval.device);
	c.eval.device = kb_strdup("cpu");

	build_dir(&c, code, b);
	CHECKM(strcmp(a, b) == 0, "back to the first config, another build");
	kb_config_clear(&c);
}

/* A Python in a prefix of its own with a torch beside it: upgrading that torch (another
 * version.py) changes the environment's key, and so every build's. */
static void
test_torch_changes_key(void)
{
	char	prefix[PATH_MAX], py[PATH_MAX + 16], ver[PATH_MAX + 64], k1[65], k2[65];
	struct kb_config c;

	fbt_config(&c, "cpu");
	snprintf(prefix, sizeof(prefix), "%s/venv", scratch);
	snprintf(ver, sizeof(ver), "%s/lib/python3.11/site-packages/torch", prefix);
	CHECK(kb_mkdir_p(ver, 0755) == 0);
	snprintf(ver, sizeof(ver), "%s/lib/python3.11/site-packages/torch/version.py", prefix);
	snprintf(py, sizeof(py), "%s/bin", prefix);
	CHECK(kb_mkdir_p(py, 0755) == 0);
	snprintf(py, sizeof(py), "%s/bin/python3", prefix);
	write_file(py, "#!/bin/sh\n");
	write_file(ver, "__version__ = '2.10.0'\n");
	CHECK(fb_env_key(&c, "cpu", py, k1) == 0);
	CHECK(fb_env_key(&c, "cpu", py, k2) == 0);
	CHECKM(strcmp(k1, k2) == 0, "the same environment, two keys");
	write_file(ver, "__version__ = '2.11.0+cu130'\n");
	CHECK(fb_env_key(&c, "cpu", py, k2) == 0);
	CHECKM(strcmp(k1, k2) != 0, "torch upgraded under the same Python, the same key");
	CHECK(fb_env_key(&c, "cuda", py, k1) == 0);
	CHECKM(strcmp(k1, k2) != 0, "another device, the same key");
	kb_config_clear(&c);
}

static void
test_baseline_keys(void)
{
	struct kb_config	c;
	char			prob[PATH_MAX], a[PATH_MAX], b[PATH_MAX];

	fbt_config(&c, "cpu");
	free(c.runner.python);
	c.runner.python = kb_strdup("/usr/bin/python3");
	snprintf(prob, sizeof(prob), "%s/problem.py", scratch);
	write_file(prob, "class Model: pass\nN = 1024\n");
	CHECK(fb_baseline_path(&c, prob, "cpu", a, sizeof(a)) == 0);
	CHECK(fb_baseline_path(&c, prob, "cpu", b, sizeof(b)) == 0);
	CHECKM(strcmp(a, b) == 0, "the same problem and settings, two baselines");

	CHECK(fb_baseline_path(&c, prob, "NVIDIA H100 80GB HBM3", b, sizeof(b)) == 0);
	CHECKM(strcmp(a, b) != 0, "another device model, the same baseline");

	c.eval.perf_trials = 11;
	CHECK(fb_baseline_path(&c, prob, "cpu", b, sizeof(b)) == 0);
	CHECKM(strcmp(a, b) != 0, "other timing settings, the same baseline");
	c.eval.perf_trials = 10;

	c.eval.baseline_compile = true;
	CHECK(fb_baseline_path(&c, prob, "cpu", b, sizeof(b)) == 0);
	CHECKM(strcmp(a, b) != 0, "torch.compile asked for, the same baseline");
	c.eval.baseline_compile = false;

	free(c.eval.precision);
	c.eval.precision = kb_strdup("bf16");
	CHECK(fb_baseline_path(&c, prob, "cpu", b, sizeof(b)) == 0);
	CHECKM(strcmp(a, b) != 0, "another precision, the same baseline");
	free(c.eval.precision);
	c.eval.precision = kb_strdup("fp32");

	/* Inputs made on the GPU are other tensors; on the CPU there is only one place. */
	free(c.eval.inputs);
	c.eval.inputs = kb_strdup("device");
	CHECK(fb_baseline_path(&c, prob, "cpu", b, sizeof(b)) == 0);
	CHECKM(strcmp(a, b) == 0, "eval.inputs changed a CPU baseline's key");
	free(c.eval.inputs);
	c.eval.inputs = kb_strdup("host");

	write_file(prob, "class Model: pass\nN = 2048\n");
	CHECK(fb_baseline_path(&c, prob, "cpu", b, sizeof(b)) == 0);
	CHECKM(strcmp(a, b) != 0, "the problem's content changed, the same baseline");
	kb_config_clear(&c);

	fbt_config(&c, "cuda");
	free(c.runner.python);
	c.runner.python = kb_strdup("/usr/bin/python3");
	CHECK(fb_baseline_path(&c, prob, "NVIDIA H100 80GB HBM3", a, sizeof(a)) == 0);
	free(c.eval.inputs);
	c.eval.inputs = kb_strdup("device");
	CHECK(fb_baseline_path(&c, prob, "NVIDIA H100 80GB HBM3", b, sizeof(b)) == 0);
	CHECKM(strcmp(a, b) != 0, "inputs made on the GPU, the same baseline as on the host");
	free(c.eval.inputs);
	c.eval.inputs = kb_strdup("host");
	/* A GPU held before each timed call times another quantity; on the CPU (above) and
	 * with another method there is no hold, so the key stays. */
	c.eval.timing_hold_us = 500;
	CHECK(fb_baseline_path(&c, prob, "NVIDIA H100 80GB HBM3", b, sizeof(b)) == 0);
	CHECKM(strcmp(a, b) != 0, "eval.timing_hold_us, the same baseline");
	free(c.eval.timing);
	c.eval.timing = kb_strdup("host_time");
	CHECK(fb_baseline_path(&c, prob, "NVIDIA H100 80GB HBM3", a, sizeof(a)) == 0);
	c.eval.timing_hold_us = 0;
	CHECK(fb_baseline_path(&c, prob, "NVIDIA H100 80GB HBM3", b, sizeof(b)) == 0);
	CHECKM(strcmp(a, b) == 0, "eval.timing_hold_us changed a host_time baseline's key");
	kb_config_clear(&c);
}

/* A build of about kb KiB, last used ago_s seconds ago. */
static void
fake_build(const char *name, int kb, long ago_s, char *out)
{
	char		dir[PATH_MAX], file[PATH_MAX + 16];
	char		*blob = calloc(1, (size_t)kb << 10);
	struct timespec	t[2];

	CHECK(fb_cache_dir("builds", name, dir, sizeof(dir)) == 0);
	CHECK(kb_mkdir_p(dir, 0755) == 0);
	snprintf(file, sizeof(file), "%s/m/m.so", dir);
	CHECK(kb_mkdir_p(file, 0755) == 0 && rmdir(file) == 0);
	memset(blob, 'x', (size_t)kb << 10);
	CHECK(kb_write_atomic(file, blob, (size_t)kb << 10) == 0);
	free(blob);
	snprintf(file, sizeof(file), "%s/.kforge-build.lock", dir);
	CHECK(kb_write_atomic(file, "", 0) == 0);
	clock_gettime(CLOCK_REALTIME, &t[0]);
	t[0].tv_sec -= ago_s;
	t[1] = t[0];
	CHECK(utimensat(AT_FDCWD, dir, t, 0) == 0);
	snprintf(out, PATH_MAX, "%s", dir);
}

/* The trim removes the builds used least recently until the rest fit, and never one
 * used within the hour or one another process has locked (a build or load going on). */
static void
test_trim(void)
{
	char			old1[PATH_MAX], old2[PATH_MAX], old3[PATH_MAX], fresh[PATH_MAX];
	char			lock[PATH_MAX + 32];
	struct fb_cache_usage	u;
	int			fd;

	fake_build("t-old1", 1024, 5 * 3600, old1);
	fake_build("t-old2", 1024, 4 * 3600, old2);
	fake_build("t-old3", 1024, 3 * 3600, old3);
	fake_build("t-fresh", 1024, 60, fresh);
	CHECK(fb_cache_trim(-1, &u) == 0);
	CHECK(u.builds >= 4 && u.removed == 0 && u.bytes >= 4LL << 20);

	/* old1 is in use: old2 and old3 go instead, fresh stays though over the cap. */
	snprintf(lock, sizeof(lock), "%s/.kforge-build.lock", old1);
	CHECK((fd = open(lock, O_RDONLY | O_CLOEXEC)) != -1);
	CHECK(flock(fd, LOCK_SH) == 0);
	CHECK(fb_cache_trim(1LL << 20, &u) == 0);
	CHECK(u.removed == 2 && u.removed_bytes >= 2LL << 20);
	CHECK(kb_file_exists(old1) && !kb_file_exists(old2) && !kb_file_exists(old3));
	CHECK(kb_file_exists(fresh));
	close(fd);

	/* Under the cap: nothing goes. Over it again, the oldest first. */
	CHECK(fb_cache_trim(64LL << 20, &u) == 0);
	CHECK(u.removed == 0 && kb_file_exists(old1));
	CHECK(fb_cache_trim(1LL << 20, &u) == 0);
	CHECK(u.removed == 1 && !kb_file_exists(old1) && kb_file_exists(fresh));

	/* A use stamps the build: fb_build_touch makes an old build fresh. */
	fake_build("t-old4", 1024, 5 * 3600, old1);
	fb_build_touch(old1);
	CHECK(fb_cache_trim(0, &u) == 0);
	CHECK(u.removed == 0 && kb_file_exists(old1));
}

int
main(void)
{
	char	cache[PATH_MAX], out[PATH_MAX];

	fbt_scratch(scratch, sizeof(scratch), "feedback_cache");
	snprintf(cache, sizeof(cache), "%s/cache", scratch);
	setenv("KFORGE_CACHE_DIR", cache, 1);
	kb_log_init("feedback_cache", 2);
	test_build_keys();
	test_torch_changes_key();
	test_baseline_keys();
	test_trim();
	/* The kinds are single names: nothing escapes the root. */
	CHECK(fb_cache_dir("../etc", NULL, out, sizeof(out)) == -KB_EINVAL);
	CHECK(fb_cache_dir("builds", "../x", out, sizeof(out)) == -KB_EINVAL);
	CHECK(fb_cache_dir(".hidden", NULL, out, sizeof(out)) == -KB_EINVAL);
	return fbt_finish(scratch);
}
