/*
 * orchestrator_tasks.c: orch_tasks_list against a scratch problem tree:
 *   level1/1_A.py level1/2_B.py level1/10_Ten.py level2/1_C.py
 * plus files that are not problems (README.md, __init__.py, 1_x.txt, 7_.py, x_1.py).
 * Configs are built with the real loader, so the two are tested together: an error
 * names where the key it blames was set (file:line:column, or the --set argument).
 */
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

static char	root[PATH_MAX / 2];

/* Where config() puts problems.dir: name "t", line 2, the opening quote at column 17. */
#define DIR_AT	"t:2:17: "

static void
touch(const char *rel)
{
	char	path[PATH_MAX];
	FILE	*fp;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	if ((fp = fopen(path, "w")) == NULL) {
		fprintf(stderr, "cannot create %s: %s\n", path, strerror(errno));
		exit(1);
	}
	fputs("# a problem\n", fp);
	fclose(fp);
}

static void
rm(const char *rel)
{
	char	path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	CHECK(remove(path) == 0);
}

/* Loads a config over the scratch tree with extra --set arguments (NULL-terminated). */
static int
config(struct kb_config *c, const char *dir, const char *const *sets)
{
	char	yaml[PATH_MAX + 128], err[1024];
	int	nsets = 0, rc;

	while (sets != NULL && sets[nsets] != NULL)
		nsets++;
	snprintf(yaml, sizeof(yaml), "name: t\nproblems: {dir: \"%s\"}\n"
		 "llm: {provider: replay, replay_dir: /r}\n", dir);
	rc = orch_config_load_string(yaml, strlen(yaml), "t", sets, nsets, c, err, sizeof(err));
	if (rc < 0) {
		fprintf(stderr, "config: %s\n", err);
		failures++;
	}
	return rc;
}

/* The ids of the listed tasks, space-separated, or "ERR: message". */
static void
list(const char *const *sets, char *out, size_t len)
{
	struct kb_config	 c;
	struct kb_task		*t = NULL;
	char			 err[1024];
	size_t			 used = 0;
	int			 n = -1;

	out[0] = '\0';
	if (config(&c, root, sets) < 0)
		return;
	if (orch_tasks_list(&c, &t, &n, err, sizeof(err)) < 0) {
		snprintf(out, len, "ERR: %s", err);
		CHECK(t == NULL && n == 0);
	} else {
		for (int i = 0; i < n && used < len; i++)
			used += (size_t)snprintf(out + used, len - used, "%s%s", i ? " " : "",
						 t[i].id);
	}
	free(t);
	kb_config_clear(&c);
}

static void
test_fields(void)
{
	struct kb_config	 c;
	struct kb_task		*t = NULL;
	char			 err[1024], want[PATH_MAX];
	int			 n = 0;

	if (config(&c, root, NULL) < 0)
		return;
	CHECK(orch_tasks_list(&c, &t, &n, err, sizeof(err)) == 0);
	CHECK(n == 4);
	if (n == 4) {
		CHECK_STR(t[2].id, "L1_10_Ten_s0");
		CHECK_STR(t[2].problem_key, "L1_10_Ten");
		CHECK_STR(t[2].problem_name, "10_Ten");
		snprintf(want, sizeof(want), "%s/level1/10_Ten.py", root);
		CHECK_STR(t[2].problem_path, want);
		CHECK(t[2].level == 1 && t[2].problem_id == 10 && t[2].sample == 0);
		CHECK(t[3].level == 2 && t[3].problem_id == 1);
	}
	free(t);
	kb_config_clear(&c);
}

static void
expect(const char *const *sets, const char *want)
{
	char	got[4096];

	list(sets, got, sizeof(got));
	if (strcmp(got, want) != 0) {
		fprintf(stderr, "with --set %s%s:\n  got:  %s\n  want: %s\n",
			sets && sets[0] ? sets[0] : "(none)", sets && sets[0] && sets[1] ? " ..." : "",
			got, want);
		failures++;
	}
}

/* The messages from a config file name file:line:column of the key they blame; a
 * directory with no level directories at all blames problems.dir. */
static void
test_positions_from_file(void)
{
	struct kb_config	 c;
	struct kb_task		*t = NULL;
	char			 cfg[PATH_MAX], err[1024], want[PATH_MAX * 2];
	int			 n = 0;
	FILE			*fp;

	snprintf(cfg, sizeof(cfg), "%s/exp.yaml", root);
	if ((fp = fopen(cfg, "w")) == NULL) {
		fprintf(stderr, "cannot create %s: %s\n", cfg, strerror(errno));
		failures++;
		return;
	}
	fprintf(fp, "name: t\nproblems:\n  dir: %s\n  levels: [1]\n  ids: \"50-60\"\n"
		"llm: {provider: replay, replay_dir: /r}\n", root);
	fclose(fp);
	if (orch_config_load(cfg, NULL, 0, &c, err, sizeof(err)) < 0) {
		fprintf(stderr, "config: %s\n", err);
		failures++;
		return;
	}
	CHECK(orch_tasks_list(&c, &t, &n, err, sizeof(err)) == -KB_ECONFIG);
	snprintf(want, sizeof(want), "%s:5:8: problems.ids: no problem at levels [1] in '%s' has "
		 "an id in 50-60 (the ids there run from 1 to 10)", cfg, root);
	CHECK_STR(err, want);
	/* levels from the file, now of a directory that has none */
	free(c.problems.dir);
	c.problems.dir = kb_asprintf("%s/level1", root);
	CHECK(orch_tasks_list(&c, &t, &n, err, sizeof(err)) == -KB_ECONFIG);
	snprintf(want, sizeof(want), "%s:3:8: problems.dir: '%s/level1' has no level directories "
		 "(level1/, level2/, ...): name the root of a KernelBench-format problem set "
		 "(KernelBench/KernelBench in a KernelBench checkout)", cfg, root);
	CHECK_STR(err, want);
	kb_config_clear(&c);
	remove(cfg);
}

static void
write_file(const char *rel, const char *text)
{
	char	path[PATH_MAX];
	FILE	*fp;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	if ((fp = fopen(path, "w")) == NULL) {
		fprintf(stderr, "cannot create %s: %s\n", path, strerror(errno));
		exit(1);
	}
	fputs(text, fp);
	fclose(fp);
}

static int
load_text(const char *yaml, struct kb_config *c, char *err, size_t errlen)
{
	return orch_config_load_string(yaml, strlen(yaml), "t.yaml", NULL, 0, c, err, errlen);
}

/* problems.subset and problems.exclude: the keys kept, and the errors naming FILE:LINE
 * (a subset or exclude file) or the config's place (an exclude list). */
static void
test_subset_exclude(void)
{
	char	set_subset[PATH_MAX], set_exclude[PATH_MAX], want[PATH_MAX * 3], file[PATH_MAX];
	char	cfgerr[1024];
	struct kb_config c;

	snprintf(file, sizeof(file), "%s/sub.txt", root);
	snprintf(set_subset, sizeof(set_subset), "problems.subset=%s", file);
	write_file("sub.txt", "# made by hand\n\n  L2_1_C   # the level-2 one\nL1_2_B\nL1_2_B\n");
	expect((const char *[]){ set_subset, NULL }, "L1_2_B_s0 L2_1_C_s0");
	expect((const char *[]){ set_subset, "problems.exclude=[L2_1_C]", NULL }, "L1_2_B_s0");
	/* an unknown key, and a line that is no key, named by FILE:LINE */
	write_file("sub.txt", "L1_1_A\n#\nL1_9_Nine\n");
	snprintf(want, sizeof(want), "ERR: %s:3: unknown problem key L1_9_Nine: '%s' has no file "
		 "level1/9_Nine.py", file, root);
	expect((const char *[]){ set_subset, NULL }, want);
	write_file("sub.txt", "L1_1_A\n1_A\n");
	snprintf(want, sizeof(want), "ERR: %s:2: '1_A' is not a problem key (L{level}_{id}_{Name}, "
		 "like L1_1_ReLU)", file);
	expect((const char *[]){ set_subset, NULL }, want);
	/* a subset key the levels leave out is an error, not a quietly smaller set */
	write_file("sub.txt", "L2_1_C\nL1_1_A\n");
	snprintf(want, sizeof(want), "ERR: %s:2: L1_1_A is not selected by problems.levels [2] and "
		 "problems.ids", file);
	expect((const char *[]){ set_subset, "problems.levels=2", NULL }, want);
	write_file("sub.txt", "# nothing\n");
	snprintf(want, sizeof(want), "ERR: --set %s: problems.subset: '%s' names no problem key",
		 set_subset, file);
	expect((const char *[]){ set_subset, NULL }, want);
	snprintf(set_subset, sizeof(set_subset), "problems.subset=%s/none.txt", root);
	snprintf(want, sizeof(want), "ERR: cannot read '%s/none.txt': No such file or directory",
		 root);
	expect((const char *[]){ set_subset, NULL }, want);

	/* problems.exclude: a list, one key, a file */
	expect((const char *[]){ "problems.exclude=[L1_1_A, L1_10_Ten]", NULL },
	       "L1_2_B_s0 L2_1_C_s0");
	expect((const char *[]){ "problems.exclude=L2_1_C", NULL },
	       "L1_1_A_s0 L1_2_B_s0 L1_10_Ten_s0");
	write_file("ex.txt", "L1_2_B\n\nL1_1_A # slow\n");
	snprintf(set_exclude, sizeof(set_exclude), "problems.exclude=%s/ex.txt", root);
	expect((const char *[]){ set_exclude, NULL }, "L1_10_Ten_s0 L2_1_C_s0");
	snprintf(want, sizeof(want), "ERR: --set problems.exclude=[L1_5_X]: problems.exclude: "
		 "unknown problem key L1_5_X: '%s' has no file level1/5_X.py", root);
	expect((const char *[]){ "problems.exclude=[L1_5_X]", NULL }, want);
	expect((const char *[]){ "problems.exclude=[L1_1_A, L1_2_B, L1_10_Ten, L2_1_C]", NULL },
	       "ERR: --set problems.exclude=[L1_1_A, L1_2_B, L1_10_Ten, L2_1_C]: "
	       "problems.exclude: excludes every selected problem");
	/* a list item that is not a key is the loader's error, with its place */
	CHECK(load_text("name: t\nproblems: {dir: /x, exclude: [L1_1_A, 7]}\n"
			"llm: {provider: replay, replay_dir: /r}\n", &c, cfgerr,
			sizeof(cfgerr)) == -KB_ECONFIG);
	CHECK_STR(cfgerr, "t.yaml:2:39: problems.exclude: expected a problem key like L1_1_ReLU "
		  "(L{level}_{file stem}), got '7'");
	/* a file named relative to the config: stored absolute, emitted and read back */
	{
		char	cfg[PATH_MAX], *text = NULL;
		size_t	len = 0;
		FILE	*fp;
		struct kb_config back;

		snprintf(cfg, sizeof(cfg), "%s/ex.yaml", root);
		write_file("ex.yaml", "name: t\nproblems: {dir: /x, exclude: ex.txt}\n"
			   "llm: {provider: replay, replay_dir: /r}\n");
		if (orch_config_load(cfg, NULL, 0, &c, cfgerr, sizeof(cfgerr)) == 0) {
			snprintf(want, sizeof(want), "%s/ex.txt", root);
			CHECK_STR(c.problems.exclude, want);
			fp = open_memstream(&text, &len);
			CHECK(orch_config_emit(&c, fp) == 0);
			fclose(fp);
			if (orch_config_load_string(text, len, "frozen", NULL, 0, &back, cfgerr,
						    sizeof(cfgerr)) == 0) {
				CHECK_STR(back.problems.exclude, want);
				kb_config_clear(&back);
			} else {
				fprintf(stderr, "reload: %s\n%s", cfgerr, text);
				failures++;
			}
			free(text);
			kb_config_clear(&c);
		} else {
			fprintf(stderr, "ex.yaml: %s\n", cfgerr);
			failures++;
		}
		remove(cfg);
	}
	remove(file);
	snprintf(file, sizeof(file), "%s/ex.txt", root);
	remove(file);
}

/* Levels past KernelBench's 3 where their directories follow the format, up to the
 * documented maximum. */
static void
test_later_levels(void)
{
	char			path[PATH_MAX], err[1024];
	struct kb_config	c;

	snprintf(path, sizeof(path), "%s/level5", root);
	mkdir(path, 0755);
	touch("level5/1_Five.py");
	expect((const char *[]){ "problems.levels=[2, 5]", NULL }, "L2_1_C_s0 L5_1_Five_s0");
	rm("level5/1_Five.py");
	rmdir(path);
	CHECK(load_text("name: t\nproblems: {dir: /x, levels: [1, 9]}\n"
			"llm: {provider: replay, replay_dir: /r}\n", &c, err,
			sizeof(err)) == -KB_ECONFIG);
	CHECK_STR(err, "t.yaml:2:33: problems.levels: expected an integer in 1..8, got '9'");
}

int
main(void)
{
	const char	*tmp = getenv("KFORGE_TEST_TMP");
	char		 want[PATH_MAX * 2], path[PATH_MAX], longname[200];

	if (tmp != NULL)
		kb_mkdir_p(tmp, 0755);
	snprintf(root, sizeof(root), "%s/kb-tasks-XXXXXX", tmp != NULL ? tmp : "/tmp");
	if (mkdtemp(root) == NULL) {
		perror("mkdtemp");
		return 1;
	}
	snprintf(path, sizeof(path), "%s/level1", root);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/level2", root);
	mkdir(path, 0755);
	touch("level1/1_A.py");
	touch("level1/2_B.py");
	touch("level1/10_Ten.py");
	touch("level2/1_C.py");
	touch("level1/README.md");
	touch("level1/__init__.py");
	touch("level1/1_x.txt");
	touch("level1/7_.py");
	touch("level1/x_1.py");
	touch("level0_1_Z.py");

	test_fields();
	expect(NULL, "L1_1_A_s0 L1_2_B_s0 L1_10_Ten_s0 L2_1_C_s0");
	expect((const char *[]){ "problems.samples=2", NULL },
	       "L1_1_A_s0 L1_1_A_s1 L1_2_B_s0 L1_2_B_s1 L1_10_Ten_s0 L1_10_Ten_s1 "
	       "L2_1_C_s0 L2_1_C_s1");
	expect((const char *[]){ "problems.levels=[2]", NULL }, "L2_1_C_s0");
	expect((const char *[]){ "problems.levels=[2, 1]", "problems.ids=1", NULL },
	       "L1_1_A_s0 L2_1_C_s0");
	expect((const char *[]){ "problems.ids=2-10", NULL }, "L1_2_B_s0 L1_10_Ten_s0");
	expect((const char *[]){ "problems.ids=\"10,2\"", "problems.levels=1", NULL },
	       "L1_2_B_s0 L1_10_Ten_s0");

	/* nothing selected: blamed on the ids, the levels or the directory */
	snprintf(want, sizeof(want), "ERR: --set problems.levels=3: problems.levels: '%s' has no "
		 "directory for levels [3] (it has level1/, level2/)", root);
	expect((const char *[]){ "problems.levels=3", NULL }, want);
	snprintf(want, sizeof(want), "ERR: --set problems.ids=\"3-9,50\": problems.ids: no "
		 "problem at levels [1, 2] in '%s' has an id in 3-9,50 (the ids there run from 1 "
		 "to 10)", root);
	expect((const char *[]){ "problems.levels=[1,2]", "problems.ids=\"3-9,50\"", NULL },
	       want);
	snprintf(path, sizeof(path), "%s/level4", root);
	mkdir(path, 0755);
	snprintf(want, sizeof(want), "ERR: " DIR_AT "problems.dir: no problem files "
		 "({id}_{Name}.py) in '%s' at levels [4]", root);
	expect((const char *[]){ "problems.levels=4", NULL }, want);
	rmdir(path);
	test_positions_from_file();
	test_subset_exclude();
	test_later_levels();

	/* duplicate ids in a level: an error only when the id is selected */
	touch("level1/2_B2.py");
	snprintf(want, sizeof(want), "ERR: " DIR_AT "problems.dir: two problems with id 2 in "
		 "'%s/level1': '2_B.py' and '2_B2.py'", root);
	expect(NULL, want);
	expect((const char *[]){ "problems.ids=1", NULL }, "L1_1_A_s0 L2_1_C_s0");
	rm("level1/2_B2.py");

	/* names the task ids cannot carry */
	touch("level1/3_bad name.py");
	snprintf(want, sizeof(want), "ERR: " DIR_AT "problems.dir: '%s/level1/3_bad name.py': problem "
		 "names may only hold A-Z a-z 0-9 . _ -", root);
	expect(NULL, want);
	expect((const char *[]){ "problems.ids=1-2", NULL },
	       "L1_1_A_s0 L1_2_B_s0 L2_1_C_s0");
	rm("level1/3_bad name.py");
	memset(longname, 'n', sizeof(longname));
	memcpy(longname, "level1/4_", 9);
	snprintf(longname + 9 + 125, sizeof(longname) - 9 - 125, ".py");	/* stem 127 */
	touch(longname);
	snprintf(want, sizeof(want), "L1_%.127s_s0", longname + 7);
	expect((const char *[]){ "problems.ids=4", NULL }, want);
	rm(longname);
	snprintf(longname + 9 + 126, sizeof(longname) - 9 - 126, ".py");	/* stem 128 */
	touch(longname);
	snprintf(want, sizeof(want), "ERR: " DIR_AT "problems.dir: '%s/%s': problem name longer than 127 "
		 "characters", root, longname);
	expect((const char *[]){ "problems.ids=4", NULL }, want);
	rm(longname);
	touch("level1/12345678901_Big.py");
	snprintf(want, sizeof(want), "ERR: " DIR_AT "problems.dir: '%s/level1/12345678901_Big.py': problem "
		 "id has more than 9 digits", root);
	expect(NULL, want);
	rm("level1/12345678901_Big.py");

	/* a directory that looks like a problem; a symlink to a problem is one */
	snprintf(path, sizeof(path), "%s/level2/5_Dir.py", root);
	mkdir(path, 0755);
	snprintf(want, sizeof(want), "ERR: " DIR_AT "problems.dir: '%s/level2/5_Dir.py': not a regular "
		 "file", root);
	expect(NULL, want);
	rmdir(path);
	snprintf(path, sizeof(path), "%s/level2/6_Link.py", root);
	CHECK(symlink("1_C.py", path) == 0);
	expect((const char *[]){ "problems.levels=2", NULL }, "L2_1_C_s0 L2_6_Link_s0");
	unlink(path);

	/* problems.dir itself */
	snprintf(path, sizeof(path), "%s/nope", root);
	{
		struct kb_config	 c;
		struct kb_task		*t = (struct kb_task *)1;
		char			 err[1024];
		int			 n = 7;

		if (config(&c, path, NULL) == 0) {
			CHECK(orch_tasks_list(&c, &t, &n, err, sizeof(err)) == -KB_ECONFIG);
			snprintf(want, sizeof(want), DIR_AT "problems.dir: cannot open '%s': No "
				 "such file or directory", path);
			CHECK_STR(err, want);
			CHECK(t == NULL && n == 0);
			kb_config_clear(&c);
		}
		snprintf(path, sizeof(path), "%s/level1/1_A.py", root);
		if (config(&c, path, NULL) == 0) {
			CHECK(orch_tasks_list(&c, &t, &n, err, sizeof(err)) == -KB_ECONFIG);
			snprintf(want, sizeof(want), DIR_AT "problems.dir: cannot open '%s': Not a "
				 "directory", path);
			CHECK_STR(err, want);
			kb_config_clear(&c);
		}
	}
	/* too many tasks: 101 problems x 1000 samples */
	snprintf(path, sizeof(path), "%s/level3", root);
	mkdir(path, 0755);
	for (int i = 1; i <= 101; i++) {
		char	rel[64];

		snprintf(rel, sizeof(rel), "level3/%d_P.py", i);
		touch(rel);
	}
	expect((const char *[]){ "problems.samples=1000", "problems.levels=3", NULL },
	       "ERR: problems: 101 problems x 1000 samples is not in 1..100000 tasks");
	{
		struct kb_config	 c;
		struct kb_task		*t = NULL;
		char			 err[1024];
		int			 n = 0;

		if (config(&c, root, (const char *[]){ "problems.samples=990",
						       "problems.levels=3", NULL }) == 0) {
			CHECK(orch_tasks_list(&c, &t, &n, err, sizeof(err)) == 0);
			CHECK(n == 99990);
			if (n == 99990)
				CHECK_STR(t[n - 1].id, "L3_101_P_s989");
			free(t);
			kb_config_clear(&c);
		}
	}

	if (failures > 0) {
		fprintf(stderr, "%d failure(s); scratch tree in %s\n", failures, root);
		return 1;
	}
	tu_remove_tree(root);
	printf("ok\n");
	return 0;
}
