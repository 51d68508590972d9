/*
 * stage.c: where a run's runners read and write. When kforge runs as root the runner runs
 * as runner.user (contain.c), and that user may be unable to reach the run directory or
 * the problems: a 0700 directory above them (a container's /root, what mktemp -d makes).
 * Rather than open the user's directories to it, kforge gives the runner ground of its own:
 *
 *   root    the run directory itself when the runner's user can reach it and kforge's
 *           umask leaves what it makes there open to others (or when no user switch
 *           happens: the runner is kforge's own user); else a staging directory that
 *           kforge owns, /var/tmp/kforge-stage-XXXXXX (else under /tmp): made 0700 by
 *           mkdtemp, marked with the run it serves, then opened 0755.
 *   below   (the run directory's layout, rundir/rundir.h)
 *           build/<key>      builds, shared by the run's tasks (sealed by contain.c)
 *           tasks/<id>/work  a task's scratch (handed to the runner's user by fb_run)
 *           inputs/<sha>/<name>  root-owned read-only copies of what the runner must
 *                            read but cannot reach where it is: the problem, the
 *                            candidate, the runner script (fb_run asks fb_stage_input)
 *
 * The run directory keeps the record: the worker (root) writes every artifact and log
 * there. A staging directory is a cache: removed when the run finishes, kept for a resume
 * otherwise, and reused only after checking it is still the one made for this run (a real
 * directory of ours where staging directories are made, not writable by others, whose
 * marker names this run). When it is gone (a reboot cleaned /tmp) a fresh one is made and
 * fb_run rebuilds a build that an execute finds missing.
 *
 * fb_stage_open decides once per process, in the supervisor before any worker is forked
 * (workers inherit the decision) or in `kforge eval`; nothing here changes after that but
 * the files below the root.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "feedback/feedback_int.h"
#include "rundir/rundir.h"
#include "base/banned.h"

#define STAGE_PREFIX	"kforge-stage-"
#define STAGE_MARKER	".kforge-stage"
#define STAGE_INPUT_CAP	((size_t)64 << 20)	/* problems and candidates are far smaller */
#define STAGE_RM_TIMEOUT_MS 300000

/* Where staging directories are made, in order of preference: /var/tmp survives a
 * reboot on most hosts, so a resumed run keeps its builds. */
static const char *const stage_bases[] = { "/var/tmp", "/tmp" };
static const enum rd_entry stage_subdirs[] = { RD_BUILD_DIR, RD_TASKS_DIR, RD_INPUTS_DIR };

static struct {
	bool	open;
	bool	apart;			/* root is a staging directory, not the run dir */
	bool	scratch;		/* run_dir is fb_stage_scratch's, removed at close */
	int	scratch_lock;		/* its lock, held while this process lives */
	char	run_dir[PATH_MAX];
	char	root[PATH_MAX];
	char	why[768];		/* why apart (or why a recorded one was not reused) */
} stage;

/* ------------------------------------------------------------ helpers */

static int
open_dir_nofollow(const char *path)
{
	return open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

static int
chmod_dir(const char *path, mode_t mode)
{
	int	fd, rc = 0;

	if ((fd = open_dir_nofollow(path)) == -1)
		return -kb_errno_to_err(errno);
	if (fchmod(fd, mode) == -1)
		rc = -kb_errno_to_err(errno);
	close(fd);
	return rc;
}

/* mkdir, then chmod: the mode must not depend on the umask. */
static int
make_dir(const char *path)
{
	if (mkdir(path, 0755) == -1)
		return errno == EEXIST ? 0 : -kb_errno_to_err(errno);
	return chmod_dir(path, 0755);
}

static mode_t
current_umask(void)
{
	mode_t	m = umask(0);

	umask(m);
	return m;
}

/* The staging directory's place: <base>/kforge-stage-<something>, base one of ours. */
static bool
stage_name_ok(const char *path)
{
	for (size_t i = 0; i < sizeof(stage_bases) / sizeof(stage_bases[0]); i++) {
		size_t	n = strlen(stage_bases[i]);

		if (strncmp(path, stage_bases[i], n) == 0 && path[n] == '/' &&
		    strncmp(path + n + 1, STAGE_PREFIX, strlen(STAGE_PREFIX)) == 0 &&
		    strchr(path + n + 1, '/') == NULL)
			return true;
	}
	return false;
}

/* Whether path is the staging directory made for run_dir, and still only ours: a real
 * directory (never through a symlink) owned by us and not writable by others, holding
 * our marker naming run_dir. why says what is wrong otherwise. */
static bool
stage_is_ours(const char *path, const char *run_dir, char *why, size_t whylen)
{
	struct stat	st;
	char		text[PATH_MAX + 2];
	ssize_t		n;
	int		fd, mfd = -1;
	bool		ok = false;

	if (!stage_name_ok(path)) {
		snprintf(why, whylen, "not where kforge makes staging directories");
		return false;
	}
	if ((fd = open_dir_nofollow(path)) == -1) {
		snprintf(why, whylen, "%s", errno == ENOENT ? "gone" :
			 errno == ELOOP || errno == ENOTDIR ? "not a directory" : strerror(errno));
		return false;
	}
	if (fstat(fd, &st) == -1) {
		snprintf(why, whylen, "%s", strerror(errno));
		goto out;
	}
	if (st.st_uid != geteuid() || (st.st_mode & 022) != 0) {
		snprintf(why, whylen, "not kforge's (owner %d, mode %04o)", (int)st.st_uid,
			 (unsigned)(st.st_mode & 07777));
		goto out;
	}
	if ((mfd = openat(fd, STAGE_MARKER, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) == -1 ||
	    fstat(mfd, &st) == -1 || !S_ISREG(st.st_mode) || st.st_uid != geteuid()) {
		snprintf(why, whylen, "it holds no marker of kforge's");
		goto out;
	}
	n = read(mfd, text, sizeof(text) - 1);
	text[n > 0 ? n : 0] = '\0';
	if (n <= 0 || text[n - 1] != '\n' || strlen(run_dir) != (size_t)n - 1 ||
	    strncmp(text, run_dir, (size_t)n - 1) != 0) {
		snprintf(why, whylen, "its marker names another run");
		goto out;
	}
	ok = true;
out:
	if (mfd != -1)
		close(mfd);
	close(fd);
	return ok;
}

/* GNU rm -rf, which never follows a link it meets; what went wrong in the log. */
static int
remove_tree(const char *path, const char *what)
{
	const char		*argv[] = { "/bin/rm", "-rf", "--one-file-system", "--", path, NULL };
	const char		*envp[] = { "PATH=/usr/bin:/bin", "LANG=C", NULL };
	struct kb_spawn_opts	 o = { 0 };
	struct kb_spawn_result	 r = { 0 };
	int			 rc;

	o.argv = argv;
	o.envp = envp;
	o.out_cap = 4096;
	o.timeout_ms = STAGE_RM_TIMEOUT_MS;
	rc = kb_spawn_run(&o, &r);
	if (rc == 0 && (r.end != KB_END_EXITED || r.exit_code != 0)) {
		log_warnx("cannot remove the %s %s: %.200s", what, path,
			  r.out.p != NULL ? r.out.p : "rm failed");
		rc = -KB_ESYS;
	}
	kb_spawn_result_clear(&r);
	return rc;
}

/* Taken away from everyone else first (0700), so that no process of another user can
 * walk in while it goes. */
static int
stage_remove(const char *path)
{
	int	rc;

	if (!stage_name_ok(path))
		return -KB_EINVAL;
	if ((rc = chmod_dir(path, 0700)) < 0)
		return rc == -KB_ENOENT ? 0 : rc;
	return remove_tree(path, "staging directory");
}

/* The subdirectories, then the root opened to the runner's user. */
static int
stage_fill(const char *root)
{
	char	sub[PATH_MAX];
	int	rc;

	for (size_t i = 0; i < sizeof(stage_subdirs) / sizeof(stage_subdirs[0]); i++) {
		if ((rc = rd_run_file(sub, sizeof(sub), root, stage_subdirs[i])) < 0 ||
		    (rc = make_dir(sub)) < 0)
			return rc;
	}
	return chmod_dir(root, 0755);
}

/* A fresh staging directory under base for run_dir, or -KB_E* with why. */
static int
stage_make(const char *base, const char *run_dir, char *out, size_t n, char *why,
	   size_t whylen)
{
	struct stat	st;
	char		marker[PATH_MAX], *text;
	int		rc;

	/* A base anyone may write must be sticky, or our directory could be renamed away. */
	if (stat(base, &st) == -1) {
		snprintf(why, whylen, "%s: %s", base, strerror(errno));
		return -KB_ENOENT;
	}
	if (!S_ISDIR(st.st_mode) || st.st_uid != 0 ||
	    ((st.st_mode & 002) != 0 && (st.st_mode & S_ISVTX) == 0)) {
		snprintf(why, whylen, "%s: not a root-owned directory that others cannot rename "
			 "in (owner %d, mode %04o)", base, (int)st.st_uid,
			 (unsigned)(st.st_mode & 07777));
		return -KB_EINVAL;
	}
	if (fb_contain_check_reach(base, false, why, whylen) < 0)
		return -KB_ECONFIG;
	if (snprintf(out, n, "%s/%sXXXXXX", base, STAGE_PREFIX) >= (int)n)
		return -KB_ETOOBIG;
	if (mkdtemp(out) == NULL) {
		snprintf(why, whylen, "%s: %s", base, strerror(errno));
		return -kb_errno_to_err(errno);
	}
	text = kb_asprintf("%s\n", run_dir);
	if ((rc = kb_path_join(marker, sizeof(marker), out, STAGE_MARKER)) == 0 &&
	    (rc = kb_write_atomic(marker, text, strlen(text))) == 0)
		rc = stage_fill(out);
	free(text);
	if (rc < 0) {
		snprintf(why, whylen, "%s: %s", out, kb_strerror(rc));
		(void)stage_remove(out);
	}
	return rc;
}

/* ------------------------------------------------------------ API */

int
fb_stage_open(const char *run_dir, const char *previous, char *err, size_t errlen)
{
	char	reach[512], prev_why[256] = "", tried[1024] = "", why[512];
	bool	prev_ours;
	size_t	len;

	memset(&stage, 0, sizeof(stage));
	if (snprintf(stage.run_dir, sizeof(stage.run_dir), "%s", run_dir) >=
	    (int)sizeof(stage.run_dir))
		return -KB_ETOOBIG;
	snprintf(stage.root, sizeof(stage.root), "%s", run_dir);
	stage.open = true;
	if (fb_contain_user() == NULL)
		return 0;	/* the runner is kforge's own user: it reaches what kforge does */

	prev_ours = previous != NULL && previous[0] != '\0' &&
		    stage_is_ours(previous, run_dir, prev_why, sizeof(prev_why));
	if (fb_contain_check_reach(run_dir, false, reach, sizeof(reach)) == 0) {
		/* What kforge makes there must be readable and searchable by others too
		 * (the runner's user is an "other" to root's files). */
		if ((current_umask() & 005) == 0) {
			/* The run directory will do; a staging directory of an earlier start
			 * (the directory was out of reach then) is no longer needed. */
			if (prev_ours)
				(void)stage_remove(previous);
			return 0;
		}
		snprintf(reach, sizeof(reach), "kforge's umask %04o closes what it writes "
			 "there to others", (unsigned)current_umask());
	}
	stage.apart = true;
	len = (size_t)snprintf(stage.why, sizeof(stage.why), "%s", reach);
	if (prev_ours) {
		snprintf(stage.root, sizeof(stage.root), "%s", previous);
		if (stage_fill(stage.root) == 0)
			return 0;
		prev_ours = false;
		snprintf(prev_why, sizeof(prev_why), "cannot be prepared again");
	}
	if (previous != NULL && previous[0] != '\0' && len < sizeof(stage.why))
		snprintf(stage.why + len, sizeof(stage.why) - len, "; the staging directory "
			 "this run used before, %s, is not reused (%s): a fresh one is made", previous,
			 prev_why);
	for (size_t i = 0; i < sizeof(stage_bases) / sizeof(stage_bases[0]); i++) {
		size_t	t = strlen(tried);

		if (stage_make(stage_bases[i], run_dir, stage.root, sizeof(stage.root), why,
			       sizeof(why)) == 0)
			return 0;
		snprintf(tried + t, sizeof(tried) - t, "%s%s", t > 0 ? "; " : "", why);
	}
	snprintf(err, errlen, "the run directory %s: %s, and no staging directory for the "
		 "runner could be made (%s); make the run directory reachable for that user, or "
		 "set runner.user: '' to run the runner as root", run_dir, reach, tried);
	memset(&stage, 0, sizeof(stage));
	return -KB_ECONFIG;
}

const char *
fb_stage_root(void)
{
	return stage.open ? stage.run_dir : NULL;
}

const char *
fb_stage_dir(void)
{
	return stage.open && stage.apart ? stage.root : NULL;
}

/* The root for run_dir: the staging directory when one was opened for it. */
static const char *
root_for(const char *run_dir)
{
	return stage.open && strcmp(stage.run_dir, run_dir) == 0 ? stage.root : run_dir;
}

int
fb_stage_build_dir(const char *run_dir, const char *key, char *out, size_t n)
{
	return rd_run_key(out, n, root_for(run_dir), RD_BUILD_DIR, key);
}

int
fb_stage_work_dir(const char *run_dir, const char *task_id, char *out, size_t n)
{
	return rd_task_file(out, n, root_for(run_dir), task_id, RD_WORK_DIR);
}

int
fb_stage_mkdir(const char *path)
{
	char	tmp[PATH_MAX];
	size_t	rlen = strlen(stage.root);
	int	rc;

	if (!stage.open || strncmp(path, stage.root, rlen) != 0 || path[rlen] != '/')
		return kb_mkdir_p(path, 0755);
	if (snprintf(tmp, sizeof(tmp), "%s", path) >= (int)sizeof(tmp))
		return -KB_ETOOBIG;
	for (char *p = tmp + rlen + 1; *p != '\0'; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		rc = make_dir(tmp);
		*p = '/';
		if (rc < 0)
			return rc;
	}
	return make_dir(tmp);
}

int
fb_stage_input(const char *path, char *out, size_t n)
{
	char		 why[512], sha[65], key[25], dir[PATH_MAX], *text = NULL;
	const char	*name = strrchr(path, '/');
	struct stat	 st;
	size_t		 len;
	int		 fd, rc;

	if (!stage.open || fb_contain_user() == NULL ||
	    fb_contain_check_reach(path, true, why, sizeof(why)) == 0)
		return snprintf(out, n, "%s", path) < (int)n ? 0 : -KB_ETOOBIG;
	if ((rc = kb_read_file(path, STAGE_INPUT_CAP, &text, &len)) < 0) {
		log_warnx("cannot read %s to give the runner a copy: %s", path, kb_strerror(rc));
		return rc;
	}
	kb_sha256_hex(text, len, sha);
	name = name != NULL ? name + 1 : path;
	snprintf(key, sizeof(key), "%.24s", sha);
	if ((rc = rd_run_key(dir, sizeof(dir), stage.root, RD_INPUTS_DIR, key)) < 0 ||
	    (rc = kb_path_join(out, n, dir, name)) < 0)
		goto out;
	if ((rc = fb_stage_mkdir(dir)) < 0)
		goto out;
	/* Named by its content, in a directory only we write: one already there is it. */
	if (lstat(out, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() &&
	    (st.st_mode & 0777) == 0444)
		goto out;
	if ((rc = kb_write_atomic(out, text, len)) < 0)
		goto out;
	if ((fd = open(out, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) == -1 || fchmod(fd, 0444) == -1)
		rc = -kb_errno_to_err(errno);
	if (fd != -1)
		close(fd);
out:
	if (rc < 0)
		log_warnx("cannot give the runner a copy of %s: %s", path, kb_strerror(rc));
	free(text);
	return rc;
}

void
fb_stage_report(void)
{
	if (stage.open && stage.apart)
		log_info("files: runners work in %s, apart from the run directory, which keeps "
			 "the record (%s)", stage.root, stage.why);
}

/* ------------------------------------------------------------ scratch */

/* The scratch directories of earlier evals (or baselines) that were killed before they
 * could remove theirs: ours, real directories, whose lock no process holds any more. One
 * without a lock is left alone: being made, kept (KFORGE_KEEP), or an older kforge's. */
static void
scratch_sweep(const char *base, const char *what)
{
	char		 prefix[64], path[PATH_MAX], lock[PATH_MAX];
	struct dirent	*e;
	struct stat	 st;
	DIR		*d;
	size_t		 plen;

	if ((size_t)snprintf(prefix, sizeof(prefix), "kforge-%s-", what) >= sizeof(prefix) ||
	    (d = opendir(base)) == NULL)
		return;
	plen = strlen(prefix);
	while ((e = readdir(d)) != NULL) {
		bool	stale = false;
		int	fd;

		if (strncmp(e->d_name, prefix, plen) != 0 || strlen(e->d_name) != plen + 6 ||
		    snprintf(path, sizeof(path), "%s/%s", base, e->d_name) >= (int)sizeof(path) ||
		    snprintf(lock, sizeof(lock), "%s/%s", path, FB_SCRATCH_LOCK) >= (int)sizeof(lock) ||
		    lstat(path, &st) == -1 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid())
			continue;
		if ((fd = open(lock, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) != -1) {
			stale = flock(fd, LOCK_EX | LOCK_NB) == 0;
			close(fd);
		}
		if (stale && remove_tree(path, "scratch directory") == 0)
			log_info("removed %s, left by a kforge %s that was killed", path, what);
	}
	closedir(d);
}

int
fb_scratch_make(const char *base, const char *what, char *out, size_t n, int *lock_fd,
		char *err, size_t errlen)
{
	char	lock[PATH_MAX];
	int	fd;

	*lock_fd = -1;
	if (snprintf(out, n, "%s/kforge-%s-XXXXXX", base, what) >= (int)n ||
	    snprintf(lock, sizeof(lock), "%s/%s", out, FB_SCRATCH_LOCK) >= (int)sizeof(lock)) {
		snprintf(err, errlen, "the scratch directory's name is too long (%s)", base);
		return -KB_ETOOBIG;
	}
	scratch_sweep(base, what);
	if (mkdtemp(out) == NULL) {
		snprintf(err, errlen, "cannot create a scratch directory in %s: %s", base,
			 strerror(errno));
		return -KB_ESYS;
	}
	/* Held while this process lives (never passed to a child: O_CLOEXEC), so that the
	 * next one removes the directory of one that was killed. */
	snprintf(lock, sizeof(lock), "%s/%s", out, FB_SCRATCH_LOCK);
	if ((fd = open(lock, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600)) == -1 ||
	    flock(fd, LOCK_EX | LOCK_NB) == -1) {
		snprintf(err, errlen, "cannot lock the scratch directory %s: %s", out,
			 strerror(errno));
		if (fd != -1)
			close(fd);
		(void)remove_tree(out, "scratch directory");
		return -KB_ESYS;
	}
	/* mkdtemp made it 0700; the runner may run as another user (runner.user). */
	(void)chmod(out, 0755);
	*lock_fd = fd;
	return 0;
}

int
fb_scratch_end(const char *path, int lock_fd, bool remove)
{
	char	lock[PATH_MAX];
	int	rc = 0;

	/* Kept: without its lock, no later one takes it for a killed one's. */
	if (!remove && snprintf(lock, sizeof(lock), "%s/%s", path, FB_SCRATCH_LOCK) <
	    (int)sizeof(lock))
		(void)unlink(lock);
	if (remove)
		rc = remove_tree(path, "scratch directory");
	if (lock_fd != -1)
		close(lock_fd);
	return rc;
}

int
fb_stage_scratch(const char *what, char *out, size_t n, char *err, size_t errlen)
{
	const char	*tmp = getenv("TMPDIR");
	int		 rc, fd;

	if ((rc = fb_scratch_make(tmp != NULL && tmp[0] != '\0' ? tmp : "/tmp", what, out, n,
				  &fd, err, errlen)) < 0)
		return rc;
	/* Where the runner's user cannot reach it, fb_stage_open gives the runners a
	 * staging directory. */
	if ((rc = fb_stage_open(out, NULL, err, errlen)) < 0) {
		(void)fb_scratch_end(out, fd, true);
		return rc;
	}
	stage.scratch = true;
	stage.scratch_lock = fd;
	return 0;
}

int
fb_stage_close(bool remove)
{
	int	rc = 0;

	if (stage.open && stage.apart && remove)
		rc = stage_remove(stage.root);
	if (stage.open && stage.scratch && fb_scratch_end(stage.run_dir, stage.scratch_lock,
							  remove) < 0)
		rc = -KB_ESYS;
	memset(&stage, 0, sizeof(stage));
	return rc;
}
