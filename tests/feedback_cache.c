/*
 * feedback_cache.c: the keys of the shared cache (feedback/cache.c, fb_env_key). A build's
 * directory changes with the code, the precision, the fast build, the device, the arch
 * list and the torch under the Python; a baseline's path with the problem's content, the
 * device model, the precision, the timing settings and torch.compile; the same inputs
 * give the same answer. The cache's root must be kforge's own. No runner is started:
 * the Python is named (runner.python), and a fake one stands in where only its files
 * matter.
 */
#include <sys/stat.h>

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
	kb_config_clear(&c);
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
	/* The kinds are single names: nothing escapes the root. */
	CHECK(fb_cache_dir("../etc", NULL, out, sizeof(out)) == -KB_EINVAL);
	CHECK(fb_cache_dir("builds", "../x", out, sizeof(out)) == -KB_EINVAL);
	CHECK(fb_cache_dir(".hidden", NULL, out, sizeof(out)) == -KB_EINVAL);
	return fbt_finish(scratch);
}
