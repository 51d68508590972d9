/*
 * feedback_stage.c: where runners work (feedback/stage.c), as root with runner.user
 * nobody, without a runner: the run directory when that user reaches it; a staging
 * directory of kforge's when a 0700 directory (or a closing umask) is in the way, with
 * read-only copies of what the runner reads; a recorded staging directory reused only
 * while it is still the one made for this run (not through a link, not someone else's,
 * not another run's, nowhere else) and never removed when it is not; a stale one removed
 * when the run directory became reachable; a Python out of reach named as such. The
 * shared cache's precompiled headers, handed to the runner's user while a selftest makes
 * them: another process's step waits for their seal, and a directory a killed selftest
 * left open is thrown away. Exits 77 when not root (no user switch).
 */
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "feedback_testutil.h"

static struct kb_config	cfg;
static struct passwd	*nobody;
static char		scratch[2048];

static bool
is_dir_mode(const char *path, uid_t uid, mode_t mode)
{
	struct stat	st;

	return lstat(path, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == uid &&
	       (st.st_mode & 07777) == mode;
}

static bool
file_is(const char *path, const char *text)
{
	char	*got = NULL;
	bool	 same;

	if (kb_read_file(path, 1 << 20, &got, NULL) < 0)
		return false;
	same = strcmp(got, text) == 0;
	free(got);
	return same;
}

static void
write_file(const char *path, const char *text, mode_t mode)
{
	CHECK(kb_write_atomic(path, text, strlen(text)) == 0);
	CHECK(chmod(path, mode) == 0);
}

/* A run directory under a directory of the given mode. */
static void
make_run(char *run, size_t n, const char *tag, mode_t parent_mode)
{
	char	parent[1024];

	snprintf(parent, sizeof(parent), "%s/%s", scratch, tag);
	CHECK(mkdir(parent, 0755) == 0 && chmod(parent, parent_mode) == 0);
	snprintf(run, n, "%s/run", parent);
	CHECK(mkdir(run, 0755) == 0 && chmod(run, 0755) == 0);
}

static void
test_reachable(void)
{
	char	run[1024], path[4096], in[1200], err[512];

	make_run(run, sizeof(run), "open", 0755);
	CHECK(fb_stage_open(run, NULL, err, sizeof(err)) == 0);
	CHECK(fb_stage_dir() == NULL);
	CHECK(fb_stage_build_dir(run, "k1", path, sizeof(path)) == 0);
	CHECKM(strcmp(path + strlen(run), "/build/k1") == 0, "build dir %s", path);
	CHECK(fb_stage_work_dir(run, "T", path, sizeof(path)) == 0);
	CHECKM(strcmp(path + strlen(run), "/tasks/T/work") == 0, "work dir %s", path);
	/* Readable in place: used in place. */
	snprintf(in, sizeof(in), "%s/problem.py", run);
	write_file(in, "x = 1\n", 0644);
	CHECK(fb_stage_input(in, path, sizeof(path)) == 0 && strcmp(path, in) == 0);
	/* Reachable but unreadable for nobody: a read-only copy in the run directory. */
	write_file(in, "x = 2\n", 0600);
	CHECK(fb_stage_input(in, path, sizeof(path)) == 0);
	CHECKM(strncmp(path, run, strlen(run)) == 0 && strstr(path, "/inputs/") != NULL &&
	       strcmp(strrchr(path, '/'), "/problem.py") == 0, "copy at %s", path);
	CHECK(file_is(path, "x = 2\n"));
	CHECK(fb_contain_check_reach(path, true, err, sizeof(err)) == 0);
	CHECK(fb_stage_close(true) == 0);
	CHECK(is_dir_mode(run, 0, 0755));	/* the run directory is never removed */
}

/* The staging directory for a run under a 0700 directory; returns it in out. */
static void
open_apart(const char *run, const char *previous, char *out, size_t n)
{
	char	err[1024];

	CHECKM(fb_stage_open(run, previous, err, sizeof(err)) == 0, "%s", err);
	snprintf(out, n, "%s", fb_stage_dir() != NULL ? fb_stage_dir() : "");
}

static void
test_closed(void)
{
	char	run[1024], stage[4096], again[4096], path[4096], path2[4096], in[1200];
	char	marker[4200], err[512];
	mode_t	old;

	make_run(run, sizeof(run), "closed", 0700);
	open_apart(run, NULL, stage, sizeof(stage));
	CHECKM(strncmp(stage, "/var/tmp/kforge-stage-", 22) == 0 ||
	       strncmp(stage, "/tmp/kforge-stage-", 18) == 0, "staging directory '%s'", stage);
	CHECK(is_dir_mode(stage, 0, 0755));
	snprintf(marker, sizeof(marker), "%s/.kforge-stage", stage);
	snprintf(path, sizeof(path), "%s\n", run);
	CHECK(file_is(marker, path));
	CHECK(fb_stage_build_dir(run, "k1", path, sizeof(path)) == 0);
	CHECKM(strncmp(path, stage, strlen(stage)) == 0 && strcmp(path + strlen(stage),
	       "/build/k1") == 0, "build dir %s", path);
	/* Made whatever the umask: the runner's user must get through. */
	CHECK(fb_stage_work_dir(run, "T", path, sizeof(path)) == 0);
	old = umask(077);
	CHECK(fb_stage_mkdir(path) == 0);
	umask(old);
	CHECK(is_dir_mode(path, 0, 0755));
	*strrchr(path, '/') = '\0';
	CHECK(is_dir_mode(path, 0, 0755));
	CHECK(fb_contain_check_reach(path, true, err, sizeof(err)) == 0);
	/* Out of reach: a root-owned read-only copy, named by content. */
	snprintf(in, sizeof(in), "%s/2_Leaky.py", run);
	write_file(in, "y = 1\n", 0644);
	CHECK(fb_contain_check_reach(in, true, err, sizeof(err)) < 0);
	CHECKM(strstr(err, "cannot reach") != NULL && strstr(err, "(mode 0700, owner 0)") != NULL,
	       "reach message: %s", err);
	CHECK(fb_stage_input(in, path, sizeof(path)) == 0);
	CHECKM(strncmp(path, stage, strlen(stage)) == 0 && strstr(path, "/inputs/") != NULL &&
	       strcmp(strrchr(path, '/'), "/2_Leaky.py") == 0, "copy at %s", path);
	CHECK(file_is(path, "y = 1\n"));
	{
		struct stat st;

		CHECK(lstat(path, &st) == 0 && st.st_uid == 0 && (st.st_mode & 0777) == 0444);
	}
	CHECK(fb_contain_check_reach(path, true, err, sizeof(err)) == 0);
	CHECK(fb_stage_input(in, path2, sizeof(path2)) == 0 && strcmp(path, path2) == 0);
	write_file(in, "y = 2\n", 0644);
	CHECK(fb_stage_input(in, path2, sizeof(path2)) == 0 && strcmp(path, path2) != 0);
	CHECK(file_is(path2, "y = 2\n") && file_is(path, "y = 1\n"));
	CHECK(fb_stage_close(false) == 0);
	CHECK(is_dir_mode(stage, 0, 0755));	/* kept for a resume */

	/* A resume: the same one, still ours, with what it held. */
	open_apart(run, stage, again, sizeof(again));
	CHECKM(strcmp(again, stage) == 0, "reopened %s, want %s", again, stage);
	CHECK(file_is(path, "y = 1\n"));
	CHECK(fb_stage_close(false) == 0);

	/* Its marker names another run: left alone, a fresh one made. */
	write_file(marker, "/somewhere/else\n", 0644);
	open_apart(run, stage, again, sizeof(again));
	CHECK(again[0] != '\0' && strcmp(again, stage) != 0);
	CHECK(is_dir_mode(stage, 0, 0755) && file_is(marker, "/somewhere/else\n"));
	CHECK(fb_stage_close(true) == 0);
	CHECK(access(again, F_OK) == -1 && errno == ENOENT);	/* removed at the end */

	/* Someone else's directory with our marker: not used, not removed. */
	snprintf(path, sizeof(path), "%s\n", run);
	write_file(marker, path, 0644);
	CHECK(chown(stage, nobody->pw_uid, nobody->pw_gid) == 0);
	open_apart(run, stage, again, sizeof(again));
	CHECK(again[0] != '\0' && strcmp(again, stage) != 0 && file_is(marker, path));
	CHECK(fb_stage_close(true) == 0);
	CHECK(chown(stage, 0, 0) == 0);

	/* Writable by others: not used. */
	CHECK(chmod(stage, 0777) == 0);
	open_apart(run, stage, again, sizeof(again));
	CHECK(again[0] != '\0' && strcmp(again, stage) != 0 && file_is(marker, path));
	CHECK(fb_stage_close(true) == 0);
	CHECK(chmod(stage, 0755) == 0);

	/* Gone (a reboot), and a link to a look-alike planted in its place. */
	{
		char	decoy[1200], dmarker[1300], moved[4200];

		snprintf(decoy, sizeof(decoy), "%s/decoy", scratch);
		CHECK(mkdir(decoy, 0755) == 0);
		snprintf(dmarker, sizeof(dmarker), "%s/.kforge-stage", decoy);
		write_file(dmarker, path, 0644);
		snprintf(moved, sizeof(moved), "%s.moved", stage);
		CHECK(rename(stage, moved) == 0);
		CHECK(symlink(decoy, stage) == 0);
		open_apart(run, stage, again, sizeof(again));
		CHECK(again[0] != '\0' && strcmp(again, stage) != 0);
		snprintf(path2, sizeof(path2), "%s/build", decoy);
		CHECK(access(path2, F_OK) == -1);	/* nothing made through the link */
		CHECK(fb_stage_close(true) == 0);
		CHECK(unlink(stage) == 0 && rename(moved, stage) == 0);
		/* Merely gone: a fresh one. */
		snprintf(path2, sizeof(path2), "%s/kforge-stage-gone", strncmp(stage, "/tmp/", 5) == 0 ?
			 "/tmp" : "/var/tmp");
		open_apart(run, path2, again, sizeof(again));
		CHECK(again[0] != '\0' && strcmp(again, path2) != 0 && is_dir_mode(again, 0, 0755));
		CHECK(fb_stage_close(true) == 0);
	}

	/* Not where staging directories are made: never used, never removed. */
	open_apart(run, scratch, again, sizeof(again));
	CHECK(again[0] != '\0' && strcmp(again, scratch) != 0);
	CHECK(fb_stage_close(true) == 0);
	CHECK(access(scratch, F_OK) == 0);

	/* The run directory became reachable: the old staging directory goes. */
	snprintf(path, sizeof(path), "%s", run);
	*strrchr(path, '/') = '\0';
	CHECK(chmod(path, 0755) == 0);
	CHECK(fb_stage_open(run, stage, err, sizeof(err)) == 0 && fb_stage_dir() == NULL);
	CHECK(access(stage, F_OK) == -1 && errno == ENOENT);
	CHECK(fb_stage_close(true) == 0);
}

/* A umask that closes what kforge writes to others puts the runners apart too. */
static void
test_umask(void)
{
	char	run[1024], stage[4096];
	mode_t	old;

	make_run(run, sizeof(run), "umask", 0755);
	old = umask(027);
	open_apart(run, NULL, stage, sizeof(stage));
	umask(old);
	CHECK(stage[0] != '\0' && is_dir_mode(stage, 0, 0755));
	CHECK(fb_stage_close(true) == 0);
	CHECK(access(stage, F_OK) == -1);
}

/* A Python out of the runner's reach cannot be copied: the message says so, and how. */
static void
test_python_out_of_reach(void)
{
	struct kb_config	c;
	char			dir[2100], link[2200], py[4096], err[1024];

	snprintf(dir, sizeof(dir), "%s/venv", scratch);
	CHECK(mkdir(dir, 0700) == 0);
	snprintf(link, sizeof(link), "%s/python3", dir);
	CHECK(symlink("/usr/bin/python3", link) == 0);
	fbt_config(&c, "cpu");
	free(c.runner.python);
	c.runner.python = kb_strdup(link);
	c.runner.user = kb_strdup("nobody");
	CHECK(fb_find_python(&c, py, sizeof(py), err, sizeof(err)) == -KB_ENOPYTHON);
	CHECKM(strstr(err, link) != NULL && strstr(err, "runner.user nobody cannot reach") != NULL &&
	       strstr(err, "(mode 0700, owner 0)") != NULL && strstr(err, "runner.user: ''") != NULL,
	       "message: %s", err);
	kb_config_clear(&c);
}

/* The precompiled headers' directory, as a selftest leaves it to other processes: open
 * to the runner's user until sealed (a step looking for it then waits for the seal, and
 * finds what the selftest made), or open for good, its selftest killed (thrown away:
 * nothing a candidate could have put there is used). */
static void
test_pch_seal_wait(void)
{
	char	cache[2100], pch[2200], made[2300], planted[2300], out[2200], c;
	int	up[2], go[2], fd, status;
	pid_t	pid;

	snprintf(cache, sizeof(cache), "%s/cache", scratch);
	setenv("KFORGE_CACHE_DIR", cache, 1);
	CHECK(fb_cache_dir("pch", NULL, pch, sizeof(pch)) == 0);
	CHECK(is_dir_mode(pch, 0, 0755));
	snprintf(made, sizeof(made), "%s/made-by-selftest", pch);

	CHECK(pipe(up) == 0 && pipe(go) == 0);
	if ((pid = fork()) == 0) {
		/* The selftest's process: the directory is the runner's while it "builds". */
		if (fb_contain_build_begin(pch, &fd) < 0 || write(up[1], "u", 1) != 1 ||
		    read(go[0], &c, 1) != 1)
			_exit(1);
		usleep(800 * 1000);
		if (kb_write_atomic(made, "pch", 3) < 0)
			_exit(1);
		fb_contain_seal_closed(pch, fd);
		_exit(0);
	}
	CHECK(pid > 0 && read(up[0], &c, 1) == 1);
	CHECK(is_dir_mode(pch, nobody->pw_uid, 0755));
	CHECK(write(go[1], "g", 1) == 1);
	CHECKM(fb_cache_dir("pch", NULL, out, sizeof(out)) == 0,
	       "a step found no precompiled headers while a selftest made them");
	CHECK(strcmp(out, pch) == 0 && is_dir_mode(pch, 0, 0755));
	CHECKM(kb_file_exists(made), "the step did not wait for the selftest's seal");
	CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
	close(up[0]);
	close(up[1]);
	close(go[0]);
	close(go[1]);

	/* Killed before the seal: the runner's, nothing holding its lock. */
	CHECK(chown(pch, nobody->pw_uid, nobody->pw_gid) == 0);
	snprintf(planted, sizeof(planted), "%s/kforge-planted-g++", pch);
	write_file(planted, "#!/bin/sh\n", 0755);
	CHECK(chown(planted, nobody->pw_uid, nobody->pw_gid) == 0);
	CHECK(fb_cache_dir("pch", NULL, out, sizeof(out)) == 0);
	CHECK(is_dir_mode(pch, 0, 0755));
	CHECKM(!kb_file_exists(planted) && !kb_file_exists(made),
	       "a directory left open to the runner's user was used as it was");
	unsetenv("KFORGE_CACHE_DIR");
}

int
main(void)
{
	char	err[512];

	if (geteuid() != 0) {
		fprintf(stderr, "SKIP: the runner's user is switched only when running as root\n");
		return 77;
	}
	if ((nobody = getpwnam("nobody")) == NULL) {
		fprintf(stderr, "SKIP: no user nobody\n");
		return 77;
	}
	fbt_config(&cfg, "cpu");
	cfg.runner.user = kb_strdup("nobody");
	CHECKM(fb_contain_setup(&cfg, err, sizeof(err)) == 0, "%s", err);
	CHECK(fb_contain_user() != NULL && strcmp(fb_contain_user(), "nobody") == 0);
	fbt_scratch(scratch, sizeof(scratch), "feedback_stage");
	CHECK(chmod(scratch, 0755) == 0);

	test_reachable();
	test_closed();
	test_umask();
	test_python_out_of_reach();
	test_pch_seal_wait();

	kb_config_clear(&cfg);
	if (failures == 0)
		printf("feedback_stage: ok\n");
	return fbt_finish(scratch);
}
