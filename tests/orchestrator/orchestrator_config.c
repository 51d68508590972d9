/*
 * orchestrator_config.c: the config loader. Every tests/data/config/bad/NN_name.yaml
 * must be refused with exactly the one line in NN_name.expect (@FILE@ stands for the
 * path given to the loader), with the --set arguments of NN_name.set (one a line) when
 * that file exists; the same text through orch_config_load_string must give the same
 * line. Good configs check defaults, flow style, --set, ~ and relative paths, and that
 * orch_config_emit reads back to an equal struct.
 *
 * Usage: orchestrator_config DATA_DIR [--print]   (--print: show every bad message)
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/base.h"
#include "orchestrator/orchestrator.h"
#include "orchestrator_testutil.h"

static bool	print_all;

static char	tmpdir[PATH_MAX / 2];	/* room for names under it */

static char *
slurp(const char *path)
{
	char	*text = NULL;
	size_t	 len;

	if (kb_read_file(path, 1 << 20, &text, &len) < 0)
		return NULL;
	return text;
}

static void
write_text(const char *path, const char *text)
{
	FILE	*fp = fopen(path, "w");

	if (fp == NULL) {
		fprintf(stderr, "cannot write %s: %s\n", path, strerror(errno));
		exit(1);
	}
	fputs(text, fp);
	fclose(fp);
}

/* Replaces every @FILE@ in want by file. */
static void
expand(const char *want, const char *file, char *out, size_t len)
{
	const char	*at;
	size_t		 used = 0;

	out[0] = '\0';
	while ((at = strstr(want, "@FILE@")) != NULL) {
		used += (size_t)snprintf(out + used, len - used, "%.*s%s", (int)(at - want), want,
					 file);
		want = at + 6;
	}
	snprintf(out + used, len - used, "%s", want);
}

/* Splits text into lines in place; returns how many (at most max). */
static int
split_lines(char *text, const char **lines, int max)
{
	int	n = 0;

	for (char *p = text; p != NULL && *p != '\0' && n < max;) {
		char *nl = strchr(p, '\n');

		if (nl != NULL)
			*nl = '\0';
		lines[n++] = p;
		p = nl != NULL ? nl + 1 : NULL;
	}
	return n;
}

static int
name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* ------------------------------------------------------------ bad configs */

static void
check_bad(const char *dir, const char *yaml_name)
{
	char			 path[PATH_MAX], want[2048], err[1024];
	char			*expect, *sets_text, *text, *base;
	const char		*sets[8];
	struct kb_config	 c;
	size_t			 stem = strlen(yaml_name) - 5;
	int			 nsets = 0, rc;

	base = kb_asprintf("%s/%.*s", dir, (int)stem, yaml_name);
	snprintf(path, sizeof(path), "%s.expect", base);
	if ((expect = slurp(path)) == NULL)
		expect = kb_strdup("(no .expect file)");
	expect[strcspn(expect, "\n")] = '\0';
	snprintf(path, sizeof(path), "%s.set", base);
	if ((sets_text = slurp(path)) != NULL)
		nsets = split_lines(sets_text, sets, 8);
	snprintf(path, sizeof(path), "%s.yaml", base);

	memset(err, 'x', sizeof(err));
	rc = orch_config_load(path, sets, nsets, &c, err, sizeof(err));
	expand(expect, path, want, sizeof(want));
	if (print_all)
		printf("%-28s %s\n", yaml_name, err);
	if (rc != -KB_ECONFIG || strcmp(err, want) != 0) {
		fprintf(stderr, "FAIL %s (rc %d)\n  got:  %s\n  want: %s\n", yaml_name, rc,
			rc < 0 ? err : "(loaded)", want);
		failures++;
	}
	CHECK(c.name == NULL && c.problems.dir == NULL);	/* nothing left behind */
	kb_config_clear(&c);

	/* the same text from a string reports the same line under its name */
	if ((text = slurp(path)) != NULL) {
		rc = orch_config_load_string(text, strlen(text), "STRING", sets, nsets, &c, err,
					     sizeof(err));
		expand(expect, "STRING", want, sizeof(want));
		if (rc != -KB_ECONFIG || strcmp(err, want) != 0) {
			fprintf(stderr, "FAIL %s from a string\n  got:  %s\n  want: %s\n", yaml_name,
				rc < 0 ? err : "(loaded)", want);
			failures++;
		}
		kb_config_clear(&c);
	}
	free(text);
	free(sets_text);
	free(expect);
	free(base);
}

static void
test_bad_configs(const char *data)
{
	char		 dir[PATH_MAX];
	char		*names[256];
	struct dirent	*de;
	DIR		*d;
	int		 n = 0;

	snprintf(dir, sizeof(dir), "%s/bad", data);
	if ((d = opendir(dir)) == NULL) {
		fprintf(stderr, "cannot open %s: %s\n", dir, strerror(errno));
		exit(1);
	}
	while ((de = readdir(d)) != NULL && n < 256) {
		size_t len = strlen(de->d_name);

		if (len > 5 && strcmp(de->d_name + len - 5, ".yaml") == 0)
			names[n++] = kb_strdup(de->d_name);
	}
	closedir(d);
	qsort(names, (size_t)n, sizeof(names[0]), name_cmp);
	CHECK(n >= 20);
	for (int i = 0; i < n; i++) {
		check_bad(dir, names[i]);
		free(names[i]);
	}
	printf("bad configs: %d checked\n", n);
}

/* ------------------------------------------------------------ good configs */

static int
load_str(const char *text, const char *const *sets, int nsets, struct kb_config *c)
{
	char	err[1024];
	int	rc = orch_config_load_string(text, strlen(text), "test", sets, nsets, c, err,
					     sizeof(err));

	if (rc < 0)
		fprintf(stderr, "unexpected error: %s\n", err);
	return rc;
}

static const char minimal[] =
	"name: t\nproblems: {dir: /kb}\nllm: {provider: replay, replay_dir: /r}\n";

static void
test_defaults(void)
{
	struct kb_config	c;

	if (load_str(minimal, NULL, 0, &c) < 0) {
		failures++;
		return;
	}
	CHECK_STR(c.name, "t");
	CHECK_STR(c.problems.dir, "/kb");
	CHECK(c.problems.nlevels == 3 && c.problems.levels[0] == 1 &&
	      c.problems.levels[1] == 2 && c.problems.levels[2] == 3);
	CHECK(c.problems.nids == 0);
	CHECK(c.problems.samples == 1);
	CHECK_STR(c.llm.provider, "replay");
	CHECK_STR(c.llm.base_url, "");
	CHECK_STR(c.llm.model, "");
	CHECK_STR(c.llm.api_key_env, "");
	CHECK(c.llm.temperature == 0.0);
	CHECK(c.llm.max_tokens == 8192);
	CHECK(c.llm.timeout_s == 600);
	CHECK(c.llm.retries == 6);
	CHECK(c.llm.concurrency == 8);
	CHECK(c.llm.max_response_bytes == 4194304);
	CHECK_STR(c.llm.replay_dir, "/r");
	CHECK(c.refinement.turns == 10);
	CHECK(c.refinement.feedback_g && c.refinement.feedback_e && !c.refinement.feedback_p);
	CHECK_STR(c.refinement.prompt, "one_shot");
	CHECK_STR(c.refinement.prompts_dir, "");
	CHECK(c.refinement.examples == 2);
	CHECK(!c.refinement.hardware);
	CHECK_STR(c.eval.backend, "cuda");
	CHECK(c.refinement.feedback_max_chars == 4000);
	CHECK(c.refinement.profile_metrics && c.refinement.profile_metrics_top == 3);
	CHECK_STR(c.eval.device, "auto");
	CHECK_STR(c.eval.precision, "fp32");
	CHECK(c.eval.correctness_trials == 5);
	CHECK(c.eval.atol == -1 && c.eval.rtol == -1);
	CHECK(c.eval.perf_trials == 100);
	CHECK(c.eval.warmup == 3);
	CHECK(c.eval.seed == 42);
	CHECK(c.eval.compile_timeout_s == 900);
	CHECK(c.eval.timeout_s == 300);
	CHECK_STR(c.eval.arch_list, "");
	CHECK(c.gpus.all && c.gpus.ndevices == 0);
	CHECK_STR(c.runner.python, "");
	CHECK(c.runner.compile_slots == 0);
	CHECK(c.runner.cpu_exec_slots == 1);
	CHECK_STR(c.runner.user, "nobody");
	CHECK(c.runner.isolate_network);
	CHECK(c.runner.selftest);
	CHECK(c.runner.fast_build && c.runner.warm);
	CHECK(c.runner.rlimit_cpu_s == 0 && c.runner.rlimit_fsize_mb == 1024 &&
	      c.runner.rlimit_nofile == 1024);
	CHECK(c.workers == 16);
	CHECK(!c.redteam.enabled && c.redteam.min_speedup == 1.5);
	kb_config_clear(&c);
}

static void
test_design_sketch(const char *data)
{
	struct kb_config	c;
	char			path[PATH_MAX], err[1024], want[PATH_MAX];

	setenv("HOME", "/home/researcher", 1);
	snprintf(path, sizeof(path), "%s/good/design_sketch.yaml", data);
	if (orch_config_load(path, NULL, 0, &c, err, sizeof(err)) < 0) {
		fprintf(stderr, "design sketch: %s\n", err);
		failures++;
		return;
	}
	snprintf(want, sizeof(want), "/home/researcher/KernelBench/KernelBench");
	CHECK_STR(c.name, "l2_r1_gep");
	CHECK_STR(c.problems.dir, want);
	CHECK(c.problems.nlevels == 1 && c.problems.levels[0] == 2);
	CHECK(c.problems.nids == 1 && c.problems.ids[0].lo == 1 && c.problems.ids[0].hi == 100);
	CHECK(c.problems.samples == 1);
	CHECK_STR(c.llm.provider, "openai");
	CHECK_STR(c.llm.base_url, "https://api.example.com/v1");
	CHECK_STR(c.llm.model, "some-model");
	CHECK_STR(c.llm.api_key_env, "MODEL_API_KEY");
	CHECK(c.llm.max_tokens == 16384 && c.llm.concurrency == 16);
	CHECK(c.refinement.turns == 10);
	CHECK(c.refinement.feedback_g && c.refinement.feedback_e && c.refinement.feedback_p);
	CHECK_STR(c.eval.device, "cuda");
	CHECK(c.eval.correctness_trials == 5 && c.eval.perf_trials == 100);
	CHECK(c.eval.timeout_s == 300);
	CHECK(c.gpus.all);
	CHECK(c.workers == 64);
	kb_config_clear(&c);
}

static void
test_sets(void)
{
	struct kb_config	 c;
	char			 cwd[PATH_MAX], want[PATH_MAX + 16];
	const char		*sets[] = {
		"eval.device=cpu",
		"refinement.feedback=[G,E,P]",
		"problems.levels=2",
		"problems.ids=[1, \"5-9\"]",
		"gpus.devices=[1, 0]",
		"llm.temperature=0.25",
		"workers=3",
		"workers=5",			/* the later --set wins */
		"problems={dir: rel/kb, samples: 3}",
		"llm.model=has spaces: and a colon",
	};
	const char		*yaml = "name: t\nproblems: {dir: /kb, samples: 2}\n"
					"llm: {provider: replay, replay_dir: /r}\n"
					"eval: {device: cuda}\nworkers: 9\n";

	if (load_str(yaml, sets, 9, &c) < 0) {
		failures++;
		return;
	}
	CHECK_STR(c.eval.device, "cpu");
	CHECK(c.refinement.feedback_g && c.refinement.feedback_e && c.refinement.feedback_p);
	CHECK(c.problems.nlevels == 1 && c.problems.levels[0] == 2);
	CHECK(c.problems.nids == 2 && c.problems.ids[0].lo == 1 && c.problems.ids[0].hi == 1 &&
	      c.problems.ids[1].lo == 5 && c.problems.ids[1].hi == 9);
	CHECK(!c.gpus.all && c.gpus.ndevices == 2 && c.gpus.devices[0] == 1 &&
	      c.gpus.devices[1] == 0);
	CHECK(c.llm.temperature == 0.25);
	CHECK(c.workers == 5);
	CHECK(c.problems.samples == 3);
	CHECK(getcwd(cwd, sizeof(cwd)) != NULL);
	snprintf(want, sizeof(want), "%s/rel/kb", cwd);
	CHECK_STR(c.problems.dir, want);
	kb_config_clear(&c);

	/* a --set value that YAML would read as a mapping must be quoted */
	{
		char	err[512];

		CHECK(orch_config_load_string(yaml, strlen(yaml), "t", &sets[9], 1, &c, err,
					      sizeof(err)) == -KB_ECONFIG);
		CHECK_STR(err, "--set llm.model=has spaces: and a colon: llm.model: expected a "
			  "string, got a mapping");
	}
	/* --set fills a required key the file lacks */
	{
		const char *more[] = { "llm.provider=openai", "llm.base_url=http://h/v1",
				       "llm.model=m" };

		if (load_str("name: t\nproblems: {dir: /kb}\n", more, 3, &c) == 0) {
			CHECK_STR(c.llm.model, "m");
			kb_config_clear(&c);
		} else {
			failures++;
		}
	}
}

static void
test_value_forms(void)
{
	static const struct {
		const char	*yaml;		/* appended to a minimal config */
		const char	*check;		/* what to look at */
	} forms[] = {
		{ "refinement: {feedback: \"G,E\"}\n", "fb:GE" },
		{ "refinement: {feedback: GEP}\n", "fb:GEP" },
		{ "refinement: {feedback: gp}\n", "fb:GP" },
		{ "refinement: {feedback: []}\n", "fb:" },
		{ "refinement: {feedback: [P]}\n", "fb:P" },
		{ "problems2: {}\n", NULL },
		{ "eval: {atol: default, rtol: 0}\n", "tol:-1,0" },
		{ "eval: {atol: 1e-2, rtol: .5}\n", "tol:0.01,0.5" },
		{ "gpus: {devices: 3}\n", "gpus:3" },
		{ "gpus: {devices: [0, 63]}\n", "gpus:0,63" },
		{ "eval:\nrunner:\n", "empty-sections" },
	};
	char	text[1024];

	for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
		struct kb_config	c;
		char			err[512], got[64] = "";

		snprintf(text, sizeof(text), "%s%s", minimal, forms[i].yaml);
		if (orch_config_load_string(text, strlen(text), "t", NULL, 0, &c, err,
					    sizeof(err)) < 0) {
			if (forms[i].check != NULL) {
				fprintf(stderr, "form %zu: %s\n", i, err);
				failures++;
			}
			continue;
		}
		CHECK(forms[i].check != NULL);
		if (forms[i].check == NULL)
			continue;
		if (strncmp(forms[i].check, "fb:", 3) == 0)
			snprintf(got, sizeof(got), "fb:%s%s%s", c.refinement.feedback_g ? "G" : "",
				 c.refinement.feedback_e ? "E" : "", c.refinement.feedback_p ? "P" : "");
		else if (strncmp(forms[i].check, "tol:", 4) == 0)
			snprintf(got, sizeof(got), "tol:%g,%g", c.eval.atol, c.eval.rtol);
		else if (strncmp(forms[i].check, "gpus:", 5) == 0 && c.gpus.ndevices == 1)
			snprintf(got, sizeof(got), "gpus:%d", c.gpus.devices[0]);
		else if (strncmp(forms[i].check, "gpus:", 5) == 0 && c.gpus.ndevices == 2)
			snprintf(got, sizeof(got), "gpus:%d,%d", c.gpus.devices[0], c.gpus.devices[1]);
		else
			snprintf(got, sizeof(got), "empty-sections");
		CHECK_STR(got, forms[i].check);
		kb_config_clear(&c);
	}
}

static void
test_ids_forms(void)
{
	struct kb_config	c;
	const char		*text = "name: t\nproblems: {dir: /kb, ids: [5, \"1-3,8\", 10-12]}\n"
					"llm: {provider: replay, replay_dir: /r}\n";

	if (load_str(text, NULL, 0, &c) < 0) {
		failures++;
		return;
	}
	CHECK(c.problems.nids == 4);
	CHECK(c.problems.ids[0].lo == 5 && c.problems.ids[0].hi == 5);
	CHECK(c.problems.ids[1].lo == 1 && c.problems.ids[1].hi == 3);
	CHECK(c.problems.ids[2].lo == 8 && c.problems.ids[2].hi == 8);
	CHECK(c.problems.ids[3].lo == 10 && c.problems.ids[3].hi == 12);
	kb_config_clear(&c);

	text = "name: t\nproblems: {dir: /kb, ids: 42}\nllm: {provider: replay, replay_dir: /r}\n";
	if (load_str(text, NULL, 0, &c) == 0) {
		CHECK(c.problems.nids == 1 && c.problems.ids[0].lo == 42 &&
		      c.problems.ids[0].hi == 42);
		kb_config_clear(&c);
	} else {
		failures++;
	}
	/* anchors and aliases are plain YAML; the loader reads through them */
	text = "name: t\nproblems: &p {dir: /kb}\nllm: {provider: replay, replay_dir: /r}\n"
	       "x_unused: *p\n";
	CHECK(orch_config_load_string(text, strlen(text), "t", NULL, 0, &c, (char[256]){ 0 },
				      256) == -KB_ECONFIG);
	text = "name: &n t\nproblems: {dir: /kb}\nllm: {provider: replay, replay_dir: /r, "
	       "model: *n}\n";
	if (load_str(text, NULL, 0, &c) == 0) {
		CHECK_STR(c.llm.model, "t");
		kb_config_clear(&c);
	} else {
		failures++;
	}
}

static void
test_paths(void)
{
	struct kb_config	c;
	char			dir[PATH_MAX / 2 + 8], path[PATH_MAX], want[PATH_MAX];
	char			err[1024], cwd[PATH_MAX];
	const char		*set_rel[] = { "llm.replay_dir=r2" };

	snprintf(dir, sizeof(dir), "%s/cfg", tmpdir);
	mkdir(dir, 0755);
	snprintf(path, sizeof(path), "%s/x.yaml", dir);
	write_text(path, "name: t\n"
			 "problems: {dir: ./kb/}\n"
			 "llm: {provider: replay, replay_dir: ../replays}\n"
			 "refinement: {prompts_dir: ~/prompts}\n");
	setenv("HOME", "/home/h", 1);
	if (orch_config_load(path, set_rel, 0, &c, err, sizeof(err)) < 0) {
		fprintf(stderr, "paths: %s\n", err);
		failures++;
		return;
	}
	snprintf(want, sizeof(want), "%s/kb", dir);
	CHECK_STR(c.problems.dir, want);
	snprintf(want, sizeof(want), "%s/../replays", dir);
	CHECK_STR(c.llm.replay_dir, want);
	CHECK_STR(c.refinement.prompts_dir, "/home/h/prompts");
	kb_config_clear(&c);

	/* a relative config path resolves against the cwd, a --set path against the cwd */
	CHECK(getcwd(cwd, sizeof(cwd)) != NULL);
	CHECK(chdir(tmpdir) == 0);
	if (orch_config_load("cfg/x.yaml", set_rel, 1, &c, err, sizeof(err)) == 0) {
		snprintf(want, sizeof(want), "%s/kb", dir);
		CHECK_STR(c.problems.dir, want);
		snprintf(want, sizeof(want), "%s/r2", tmpdir);
		CHECK_STR(c.llm.replay_dir, want);
		kb_config_clear(&c);
	} else {
		fprintf(stderr, "relative config: %s\n", err);
		failures++;
	}
	CHECK(chdir(cwd) == 0);

	/* "~" alone, and a config in / */
	if (load_str("name: t\nproblems: {dir: \"~\"}\nllm: {provider: replay, "
		     "replay_dir: /a//b/./c/.}\n", NULL, 0, &c) == 0) {
		CHECK_STR(c.problems.dir, "/home/h");
		CHECK_STR(c.llm.replay_dir, "/a/b/c");
		kb_config_clear(&c);
	} else {
		failures++;
	}
	unsetenv("HOME");
	CHECK(orch_config_load_string("name: t\nproblems: {dir: ~/x}\n", 29, "t", NULL, 0, &c,
				      err, sizeof(err)) == -KB_ECONFIG);
	CHECK_STR(err, "t:2:17: problems.dir: cannot expand '~': HOME is not set to an "
		  "absolute path");
	setenv("HOME", "/home/h", 1);

	/* files the loader cannot read */
	snprintf(path, sizeof(path), "%s/missing.yaml", tmpdir);
	CHECK(orch_config_load(path, NULL, 0, &c, err, sizeof(err)) == -KB_ECONFIG);
	snprintf(want, sizeof(want), "%s/missing.yaml: cannot read: No such file or directory",
		 tmpdir);
	CHECK_STR(err, want);
	CHECK(orch_config_load(tmpdir, NULL, 0, &c, err, sizeof(err)) == -KB_ECONFIG);
	snprintf(want, sizeof(want), "%s: cannot read: Is a directory", tmpdir);
	CHECK_STR(err, want);
	snprintf(path, sizeof(path), "%s/big.yaml", tmpdir);
	{
		FILE	*fp = fopen(path, "w");

		for (int i = 0; fp != NULL && i < 30000; i++)
			fputs("# padding\n", fp);
		if (fp != NULL)
			fclose(fp);
	}
	CHECK(orch_config_load(path, NULL, 0, &c, err, sizeof(err)) == -KB_ECONFIG);
	snprintf(want, sizeof(want), "%s/big.yaml: larger than 262144 bytes", tmpdir);
	CHECK_STR(err, want);
}

/* The anthropic/command providers' keys and the reasoning and price keys: values as
 * written, and defaults (not priced, reasoning effort not sent) otherwise. */
static void
test_provider_keys(const char *data)
{
	struct kb_config	 c;
	char			 path[PATH_MAX], err[1024];
	const char		*text = "name: t\nproblems: {dir: /kb}\n"
					"llm: {provider: anthropic, model: claude-x}\n";

	snprintf(path, sizeof(path), "%s/good/providers_new.yaml", data);
	if (orch_config_load(path, NULL, 0, &c, err, sizeof(err)) < 0) {
		fprintf(stderr, "providers_new.yaml: %s\n", err);
		failures++;
		return;
	}
	CHECK_STR(c.llm.provider, "command");
	CHECK(c.llm.command != NULL);
	if (c.llm.command != NULL) {
		CHECK_STR(c.llm.command[0], "/usr/bin/python3");
		CHECK_STR(c.llm.command[1], "-u");
		CHECK_STR(c.llm.command[2], "my model.py");
		CHECK_STR(c.llm.command[3], "");
		CHECK(c.llm.command[4] == NULL);
	}
	CHECK(c.llm.max_completion_tokens == 32000);
	CHECK_STR(c.llm.reasoning_effort, "high");
	CHECK(c.llm.price_input_per_mtok == 3.0);
	CHECK(c.llm.price_output_per_mtok == 15.5);
	kb_config_clear(&c);

	CHECK(orch_config_load_string(text, strlen(text), "t", NULL, 0, &c, err,
				      sizeof(err)) == 0);
	CHECK_STR(c.llm.anthropic_version, "2023-06-01");
	CHECK(c.llm.command == NULL);
	CHECK(c.llm.max_completion_tokens == 0);
	CHECK_STR(c.llm.reasoning_effort, "default");
	CHECK(c.llm.price_input_per_mtok == 0 && c.llm.price_output_per_mtok == 0);
	kb_config_clear(&c);
}

static void
test_round_trip(const char *data)
{
	static const char *const files[] = { "every_key.yaml", "minimal_replay.yaml",
					     "design_sketch.yaml", "providers_new.yaml" };

	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		struct kb_config	 a, b, d;
		char			 path[PATH_MAX], err[1024], *text = NULL, *text2 = NULL;
		size_t			 len = 0, len2 = 0;
		const char		*diff;
		FILE			*fp;

		snprintf(path, sizeof(path), "%s/good/%s", data, files[i]);
		if (orch_config_load(path, NULL, 0, &a, err, sizeof(err)) < 0) {
			fprintf(stderr, "round trip %s: %s\n", files[i], err);
			failures++;
			continue;
		}
		fp = open_memstream(&text, &len);
		CHECK(orch_config_emit(&a, fp) == 0);
		fclose(fp);
		CHECK(strncmp(text, "# frozen by kforge: fully resolved config\n", 42) == 0);
		if (orch_config_load_string(text, len, "frozen", NULL, 0, &b, err,
					    sizeof(err)) < 0) {
			fprintf(stderr, "round trip %s: reload: %s\n%s", files[i], err, text);
			failures++;
			kb_config_clear(&a);
			free(text);
			continue;
		}
		if ((diff = config_diff(&a, &b)) != NULL) {
			fprintf(stderr, "round trip %s: %s differs\n%s", files[i], diff, text);
			failures++;
		}
		/* emitting the reloaded struct gives the same text */
		fp = open_memstream(&text2, &len2);
		CHECK(orch_config_emit(&b, fp) == 0);
		fclose(fp);
		CHECK(len == len2 && strcmp(text, text2) == 0);
		/* and it is also a valid file on disk, whose dir does not matter */
		snprintf(path, sizeof(path), "%s/frozen.yaml", tmpdir);
		write_text(path, text);
		if (orch_config_load(path, NULL, 0, &d, err, sizeof(err)) == 0) {
			CHECK(config_diff(&a, &d) == NULL);
			kb_config_clear(&d);
		} else {
			failures++;
		}
		if (i == 0 && getenv("KB_TEST_VERBOSE") != NULL)
			fputs(text, stdout);
		kb_config_clear(&a);
		kb_config_clear(&b);
		free(text);
		free(text2);
	}
}

/* Exact values of the every_key file, so the round trip is not trivially equal. */
static void
test_every_key(const char *data)
{
	struct kb_config	c;
	char			path[PATH_MAX], err[1024];

	setenv("HOME", "/home/h", 1);
	snprintf(path, sizeof(path), "%s/good/every_key.yaml", data);
	if (orch_config_load(path, NULL, 0, &c, err, sizeof(err)) < 0) {
		fprintf(stderr, "every_key: %s\n", err);
		failures++;
		return;
	}
	CHECK_STR(c.name, "every.key-1");
	CHECK(c.problems.nlevels == 2 && c.problems.levels[0] == 1 && c.problems.levels[1] == 3);
	CHECK(c.problems.nids == 4 && c.problems.ids[3].lo == 40 && c.problems.ids[3].hi == 41);
	CHECK(c.problems.samples == 4);
	snprintf(path, sizeof(path), "%s/good/subsets/mine.txt", data);
	CHECK_STR(c.problems.subset, path);
	CHECK_STR(c.problems.exclude, "L1_1_ReLU,L2_3_Gemm-Add.v2");
	CHECK_STR(c.llm.model, "a \"quoted\" model\\with backslash");
	CHECK(c.llm.temperature == 0.7 && c.llm.retries == 0);
	CHECK(!c.refinement.feedback_e && c.refinement.feedback_g && c.refinement.feedback_p);
	CHECK_STR(c.refinement.prompt, "zero_shot");
	CHECK_STR(c.refinement.prompts_dir, "/home/h/prompts");
	CHECK(!c.refinement.profile_metrics && c.refinement.profile_metrics_top == 5);
	CHECK(c.eval.atol == 0.01 && c.eval.rtol == 1e-3 && c.eval.seed == -5);
	CHECK_STR(c.eval.precision, "bf16");
	CHECK_STR(c.eval.arch_list, "8.0;9.0+PTX");
	CHECK(!c.gpus.all && c.gpus.ndevices == 2 && c.gpus.devices[0] == 3);
	CHECK(c.runner.compile_slots == 4 && c.runner.cpu_exec_slots == 2 && c.workers == 2);
	CHECK_STR(c.runner.user, "kforge-runner");
	CHECK(!c.runner.isolate_network);
	CHECK(c.runner.rlimit_cpu_s == 600 && c.runner.rlimit_fsize_mb == 64 &&
	      c.runner.rlimit_nofile == 256);
	CHECK(c.redteam.enabled && c.redteam.min_speedup == 2.25);
	kb_config_clear(&c);
}

/* Strings with escapes, control characters and UTF-8 survive emit -> load. */
static void
test_round_trip_strings(void)
{
	struct kb_config	 a, b;
	char			 err[512], *text = NULL;
	size_t			 len = 0;
	const char		*diff;
	FILE			*fp;
	const char		*yaml = "name: t\nproblems: {dir: \"/kb/\\u00e9t\\u00e9 dir\"}\n"
					"llm: {provider: replay, replay_dir: /r, "
					"model: \"l1\\nl2\\t\\\"q\\\" \\\\ \\x01 \\u00fc\"}\n"
					"eval: {arch_list: '#not a comment: [x]', atol: 0.1, "
					"rtol: 1e-300}\nllm2: 1\n";

	/* the stray llm2 key proves the text is checked; drop it for the round trip */
	CHECK(orch_config_load_string(yaml, strlen(yaml), "t", NULL, 0, &a, err, sizeof(err)) ==
	      -KB_ECONFIG);
	CHECK_STR(err, "t:5:1: llm2: unknown key (did you mean 'llm'?)");
	if (orch_config_load_string(yaml, strlen(yaml) - 8, "t", NULL, 0, &a, err,
				    sizeof(err)) < 0) {
		fprintf(stderr, "strings: %s\n", err);
		failures++;
		return;
	}
	CHECK_STR(a.llm.model, "l1\nl2\t\"q\" \\ \x01 \xc3\xbc");
	CHECK_STR(a.problems.dir, "/kb/\xc3\xa9t\xc3\xa9 dir");
	fp = open_memstream(&text, &len);
	CHECK(orch_config_emit(&a, fp) == 0);
	fclose(fp);
	if (orch_config_load_string(text, len, "frozen", NULL, 0, &b, err, sizeof(err)) == 0) {
		if ((diff = config_diff(&a, &b)) != NULL) {
			fprintf(stderr, "strings: %s differs\n%s", diff, text);
			failures++;
		}
		kb_config_clear(&b);
	} else {
		fprintf(stderr, "strings: reload: %s\n%s", err, text);
		failures++;
	}
	kb_config_clear(&a);
	free(text);
}

/* The example configs shipped in configs/ load (and so stay in step with the schema). */
static void
test_example_configs(void)
{
	const char	*home = getenv("KFORGE_HOME");
	char		 dir[PATH_MAX / 2], path[PATH_MAX], err[1024];
	struct dirent	*de;
	DIR		*d;
	int		 n = 0;

	if (home == NULL)
		return;
	snprintf(dir, sizeof(dir), "%s/configs", home);
	if ((d = opendir(dir)) == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		struct kb_config	c;
		size_t			len = strlen(de->d_name);

		if (len < 6 || strcmp(de->d_name + len - 5, ".yaml") != 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (orch_config_load(path, NULL, 0, &c, err, sizeof(err)) < 0) {
			fprintf(stderr, "example config: %s\n", err);
			failures++;
			continue;
		}
		kb_config_clear(&c);
		n++;
	}
	closedir(d);
	printf("example configs: %d loaded\n", n);
}

static void
test_small_err_buffer(void)
{
	struct kb_config	c;
	char			err[8];
	const char		*bad = "name: [x]\n";

	memset(err, 'z', sizeof(err));
	CHECK(orch_config_load_string(bad, strlen(bad), "t", NULL, 0, &c, err, sizeof(err)) ==
	      -KB_ECONFIG);
	CHECK(memchr(err, '\0', sizeof(err)) != NULL);
	CHECK(orch_config_load_string(bad, strlen(bad), "t", NULL, 0, &c, NULL, 0) ==
	      -KB_ECONFIG);
}

int
main(int argc, char **argv)
{
	const char	*tmp = getenv("KFORGE_TEST_TMP");

	if (argc < 2) {
		fprintf(stderr, "usage: %s DATA_DIR [--print]\n", argv[0]);
		return 2;
	}
	print_all = argc > 2 && strcmp(argv[2], "--print") == 0;
	if (tmp != NULL)
		kb_mkdir_p(tmp, 0755);
	snprintf(tmpdir, sizeof(tmpdir), "%s/kb-config-XXXXXX", tmp != NULL ? tmp : "/tmp");
	if (mkdtemp(tmpdir) == NULL) {
		perror("mkdtemp");
		return 1;
	}
	test_bad_configs(argv[1]);
	test_defaults();
	test_design_sketch(argv[1]);
	test_sets();
	test_value_forms();
	test_ids_forms();
	test_paths();
	test_every_key(argv[1]);
	test_round_trip(argv[1]);
	test_provider_keys(argv[1]);
	test_round_trip_strings();
	test_small_err_buffer();
	test_example_configs();
	if (failures > 0) {
		fprintf(stderr, "%d failure(s); scratch files in %s\n", failures, tmpdir);
		return 1;
	}
	tu_remove_tree(tmpdir);
	printf("ok\n");
	return 0;
}
