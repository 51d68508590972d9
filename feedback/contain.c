/*
 * contain.c: what keeps a runner (and the LLM-written code it imports) away from what it
 * should not reach, beyond the allow-listed environment in env.c:
 *
 *   network  a network namespace of its own (only a loopback, down) when
 *            runner.isolate_network is true and the host allows one: directly as root,
 *            through a user namespace otherwise; if neither, the run goes on and the
 *            reason is reported once.
 *   user     when kforge runs as root, the runner runs as runner.user (default nobody).
 *            The run's logs and artifacts stay root-owned 0644/0755, so it cannot write
 *            them, nor signal the worker or the supervisor.
 *   dirs     the runner writes only into its task's scratch dir (chowned to that user)
 *            and, during a precompile, into that build's directory. After a precompile
 *            the driver seals the build: everything root-owned and not writable by others,
 *            directories sticky and world-writable so that a later execute can still
 *            take torch's lock file but can neither change nor delete what was built.
 *            Where those directories are, and how the runner reads a problem or a
 *            candidate it cannot reach in place, is stage.c's.
 *
 *   sandbox  every runner confines itself, once it has its request and before any
 *            candidate code runs, with the policy fb_contain_sandbox writes into the
 *            request (the paths, policy.c's; the rules, sandbox/'s): Landlock (reads
 *            everywhere but the run directory, its staging directory and the caches, save
 *            the step's own inputs and build; writes only to its scratch, and a
 *            precompile to its build), Landlock's scope (no signal out of its domain, but
 *            the judge's to the candidate it stops) and a seccomp filter; before those,
 *            every runner but the judge enters a PID, mount and (not root) user
 *            namespace of its own (kforge_runner.py, enter_namespaces). As every user,
 *            root or not. runner.sandbox strict refuses a host that lacks a layer;
 *            best_effort runs with what there is, and says so.
 *
 * fb_contain_setup decides all this once, in the supervisor before any worker is forked
 * (the workers inherit it); fb_run calls it lazily for `kforge eval` and tests.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <pthread.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "feedback/feedback_int.h"
#include "sandbox/sandbox.h"
#include "base/banned.h"

#define FB_SEAL_DIR_MODE	01777	/* sticky: only a file's owner may remove it */
#define FB_TREE_FDS		32

static pthread_mutex_t	contain_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	bool		ready;
	enum kb_netns	netns;
	char		net_why[256];
	bool		drop;
	uid_t		uid;
	gid_t		gid;
	char		user[64];
	char		user_why[128];
	struct kb_sbx_caps sbx;
	bool		sbx_strict;
} cn;

/* The layers the host lacks, "a, b" ("" when none). */
static void
sandbox_missing(char *out, size_t n)
{
	out[0] = '\0';
	for (int l = 0; l < KB_SBX__LAYERS; l++)
		if (!cn.sbx.have[l])
			snprintf(out + strlen(out), n - strlen(out), "%s%s (%s)",
				 out[0] != '\0' ? ", " : "", kb_sbx_layer_name(l), cn.sbx.why[l]);
}

int
fb_contain_setup(const struct kb_config *cfg, char *err, size_t errlen)
{
	const char	*user = cfg != NULL && cfg->runner.user != NULL ? cfg->runner.user : "";
	struct passwd	 pw, *found = NULL;
	char		 buf[4096];
	int		 rc = 0;

	pthread_mutex_lock(&contain_lock);
	if (cn.ready)
		goto out;
	if (cfg == NULL || !cfg->runner.isolate_network) {
		cn.netns = KB_NETNS_SHARED;
		snprintf(cn.net_why, sizeof(cn.net_why), "runner.isolate_network is false");
	} else {
		cn.netns = kb_netns_probe(cn.net_why, sizeof(cn.net_why));
	}
	kb_sbx_probe(&cn.sbx);
	cn.sbx_strict = cfg == NULL || cfg->runner.sandbox == NULL ||
			strcmp(cfg->runner.sandbox, "best_effort") != 0;
	cn.drop = false;
	if (user[0] == '\0') {
		snprintf(cn.user_why, sizeof(cn.user_why), "runner.user is ''");
	} else if (geteuid() != 0) {
		snprintf(cn.user_why, sizeof(cn.user_why), "kforge does not run as root");
	} else if (getpwnam_r(user, &pw, buf, sizeof(buf), &found) != 0 || found == NULL) {
		snprintf(err, errlen, "runner.user: no user '%s' on this host (or set runner.user: "
			 "'' to run the runner as root)", user);
		rc = -KB_ECONFIG;
		goto out;
	} else if (pw.pw_uid == 0) {
		snprintf(cn.user_why, sizeof(cn.user_why), "runner.user %s is root", user);
	} else {
		cn.drop = true;
		cn.uid = pw.pw_uid;
		cn.gid = pw.pw_gid;
		snprintf(cn.user, sizeof(cn.user), "%s", user);
	}
	cn.ready = true;
out:
	pthread_mutex_unlock(&contain_lock);
	return rc;
}

bool
fb_contain_describe(char *net, size_t netlen, char *user, size_t userlen)
{
	if (cn.netns == KB_NETNS_SHARED)
		snprintf(net, netlen, "not isolated (%s)", cn.net_why);
	else
		snprintf(net, netlen, "isolated (%s)", cn.netns == KB_NETNS_NEW ?
			 "a network namespace of its own" : "a user and network namespace");
	if (cn.drop)
		snprintf(user, userlen, "%s (uid %d, gid %d)", cn.user, (int)cn.uid, (int)cn.gid);
	else
		snprintf(user, userlen, "this process's user (%s)", cn.user_why);
	return cn.netns != KB_NETNS_SHARED;
}

bool
fb_contain_describe_sandbox(char *out, size_t n)
{
	char	missing[1024];

	sandbox_missing(missing, sizeof(missing));
	snprintf(out, n, "%s: landlock ABI %d, scope %s, seccomp %s, namespaces %s%s%s",
		 cn.sbx_strict ? "strict" : "best_effort", cn.sbx.landlock_abi,
		 cn.sbx.have[KB_SBX_SCOPE] ? "on" : "off",
		 cn.sbx.have[KB_SBX_SECCOMP] ? "on" : "off",
		 cn.sbx.have[KB_SBX_NAMESPACES] ? "user, pid, mount" : "off",
		 missing[0] != '\0' ? "; missing: " : "", missing);
	return missing[0] == '\0';
}

json_t *
fb_contain_sandbox_json(void)
{
	json_t	*missing = json_array();

	for (int l = 0; l < KB_SBX__LAYERS; l++)
		if (!cn.sbx.have[l])
			json_array_append_new(missing, json_pack("{s:s, s:s}", "layer",
						 kb_sbx_layer_name(l), "why", cn.sbx.why[l]));
	return json_pack("{s:s, s:i, s:b, s:b, s:b, s:o}", "mode",
			 cn.sbx_strict ? "strict" : "best_effort", "landlock_abi",
			 cn.sbx.landlock_abi, "scope", cn.sbx.have[KB_SBX_SCOPE], "seccomp",
			 cn.sbx.have[KB_SBX_SECCOMP], "namespaces", cn.sbx.have[KB_SBX_NAMESPACES],
			 "missing", missing);
}

int
fb_contain_sandbox_ready(char *err, size_t errlen)
{
	char	missing[1024];

	sandbox_missing(missing, sizeof(missing));
	if (!cn.sbx_strict || missing[0] == '\0')
		return 0;
	snprintf(err, errlen, "runner.sandbox is strict and this host lacks %s; set "
		 "runner.sandbox: best_effort to run with what it has", missing);
	return -KB_ECONFIG;
}

bool
fb_contain_sandboxed(void)
{
	return cn.sbx.have[KB_SBX_LANDLOCK];
}

bool
fb_contain_strict(void)
{
	return cn.sbx_strict;
}

bool
fb_contain_namespaces(void)
{
	return cn.sbx.have[KB_SBX_NAMESPACES];
}

void
fb_contain_apply(struct kb_spawn_opts *o)
{
	o->netns = cn.netns;
	o->drop_user = cn.drop;
	o->uid = cn.uid;
	o->gid = cn.gid;
}

const char *
fb_contain_user(void)
{
	return cn.drop ? cn.user : NULL;
}

/* ------------------------------------------------------------ reachability */

/* Whether the runner's uid/gid (no supplementary groups) has `bits` (an rwx triple
 * as 4/2/1) on st. ACLs are not consulted. */
static bool
runner_may(const struct stat *st, unsigned bits)
{
	if (st->st_uid == cn.uid)
		return ((st->st_mode >> 6) & bits) == bits;
	if (st->st_gid == cn.gid)
		return ((st->st_mode >> 3) & bits) == bits;
	return (st->st_mode & bits) == bits;
}

int
fb_contain_check_reach(const char *path, bool read, char *why, size_t whylen)
{
	char		 prefix[PATH_MAX];
	struct stat	 st;
	size_t		 n = strlen(path);

	if (!cn.drop)
		return 0;
	if (path[0] != '/' || n >= sizeof(prefix))
		return 0;
	for (size_t i = 1; i <= n; i++) {
		if (path[i] != '/' && path[i] != '\0')
			continue;
		memcpy(prefix, path, i);
		prefix[i] = '\0';
		if (stat(prefix, &st) == -1)
			return 0;	/* missing: whoever needs it will say so */
		if (S_ISDIR(st.st_mode) && !runner_may(&st, 1))
			goto denied;
		if (i == n && read && !runner_may(&st, S_ISDIR(st.st_mode) ? 5 : 4))
			goto denied;
	}
	return 0;
denied:
	snprintf(why, whylen, "runner.user %s cannot %s %s (mode %04o, owner %d)", cn.user,
		 strcmp(prefix, path) == 0 && read ? "read" : "reach", prefix,
		 (unsigned)(st.st_mode & 07777), (int)st.st_uid);
	return -KB_ECONFIG;
}

/* ------------------------------------------------------------ directories */

/* Opens path itself, never through a symlink at its last component. */
static int
open_nofollow(const char *path, bool dir)
{
	return open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK |
		    (dir ? O_DIRECTORY : 0));
}

static int
own_dir(const char *path, uid_t uid, gid_t gid, mode_t mode)
{
	int	fd, rc = 0;

	if ((fd = open_nofollow(path, true)) == -1)
		return -kb_errno_to_err(errno);
	if (fchown(fd, uid, gid) == -1 || fchmod(fd, mode) == -1)
		rc = -kb_errno_to_err(errno);
	close(fd);
	return rc;
}

int
fb_contain_runner_dir(const char *path)
{
	if (!cn.drop)
		return 0;
	return own_dir(path, cn.uid, cn.gid, 0755);
}

/* nftw has no argument pointer: the walk's parameters, under tree_lock. */
static pthread_mutex_t	tree_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	uid_t	uid;
	gid_t	gid;
	mode_t	dir_mode;
	int	err;
} walk;

static int
walk_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	int	fd;
	mode_t	mode;

	if (ftw->level == 0 || S_ISLNK(st->st_mode)) {
		if (ftw->level > 0 && lchown(path, walk.uid, walk.gid) == -1 && walk.err == 0)
			walk.err = errno;
		return 0;
	}
	if (type != FTW_D && type != FTW_F)
		return 0;
	/* Through an fd opened without following a symlink, and re-checked, so that a
	 * file swapped for a link since nftw looked is not what gets changed. */
	if ((fd = open_nofollow(path, type == FTW_D)) == -1) {
		if (walk.err == 0)
			walk.err = errno;
		return 0;
	}
	mode = type == FTW_D ? walk.dir_mode : st->st_mode & 0755;
	if (fchown(fd, walk.uid, walk.gid) == -1 || fchmod(fd, mode) == -1) {
		if (walk.err == 0)
			walk.err = errno;
	}
	close(fd);
	return 0;
}

/* The top is taken away from the runner's user first (root-owned 0700), so that no
 * process of that user can walk in while the tree below changes hands. */
static int
own_tree(const char *path, uid_t uid, gid_t gid, mode_t dir_mode)
{
	bool	seal = uid == geteuid();
	int	rc;

	if ((rc = own_dir(path, geteuid(), getegid(), 0700)) < 0)
		return rc;
	pthread_mutex_lock(&tree_lock);
	walk.uid = uid;
	walk.gid = gid;
	walk.dir_mode = dir_mode;
	walk.err = 0;
	if (nftw(path, walk_one, FB_TREE_FDS, FTW_PHYS | FTW_MOUNT) == -1 && walk.err == 0)
		walk.err = errno;
	rc = walk.err != 0 ? -kb_errno_to_err(walk.err) : 0;
	pthread_mutex_unlock(&tree_lock);
	if (rc == 0)
		rc = own_dir(path, uid, gid, dir_mode);
	if (rc < 0)
		log_warnx("cannot %s the build %s: %s", seal ? "seal" : "unseal", path,
			  kb_strerror(rc));
	return rc;
}

/* The seal lock's path, beside the tree; -KB_ETOOBIG where it does not fit. */
static int
seal_lock_path(const char *dir, char *out, size_t n)
{
	return snprintf(out, n, "%s.seal-lock", dir) >= (int)n ? -KB_ETOOBIG : 0;
}

/* Beside the build, root-owned: precompiles of one build take turns (exclusive), so
 * that one is never sealed while another runner builds in it, and runners that load
 * the build hold it shared. */
static int
seal_lock(const char *build_dir, int how, int *lock_fd)
{
	char	lock[PATH_MAX];

	*lock_fd = -1;
	if (!cn.drop || build_dir == NULL)
		return 0;
	if (seal_lock_path(build_dir, lock, sizeof(lock)) < 0)
		return -KB_ETOOBIG;
	if ((*lock_fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600)) == -1)
		return -kb_errno_to_err(errno);
	while (flock(*lock_fd, how) == -1 && errno == EINTR)
		;
	return 1;
}

int
fb_contain_build_begin(const char *build_dir, int *lock_fd)
{
	int	rc = seal_lock(build_dir, LOCK_EX, lock_fd);

	return rc <= 0 ? rc : own_tree(build_dir, cn.uid, cn.gid, 0755);
}

int
fb_contain_build_use(const char *build_dir, int *lock_fd)
{
	struct stat	st;
	int		rc;

	/* Nothing built there (yet): nothing to protect, and no lock file to leave. */
	if (build_dir == NULL || stat(build_dir, &st) == -1) {
		*lock_fd = -1;
		return 0;
	}
	rc = seal_lock(build_dir, LOCK_SH, lock_fd);
	return rc < 0 ? rc : 0;
}

void
fb_contain_build_end(const char *build_dir, int lock_fd)
{
	if (lock_fd < 0)
		return;
	if (build_dir != NULL)
		(void)own_tree(build_dir, geteuid(), getegid(), FB_SEAL_DIR_MODE);
	close(lock_fd);
}

/*
 * A selftest hands the shared cache's precompiled headers to the runner's user while it
 * makes them (fb_run), so for that while the directory is not kforge's own, and every
 * other process's steps used to find no headers and build with the original compiler
 * (16 s of g++ a build on 2 cores instead of 2.5 s: 7 builds of one CI run, each while
 * another test's selftest ran). Such a step waits for the seal instead: the selftest
 * holds the lock for as long as the directory is open. With the lock taken and the
 * directory still the runner's, no selftest holds it: one was killed before it sealed
 * it, and a candidate may have written there since, so it is thrown away (the next
 * selftest makes the headers again). 0: look at the directory again.
 */
int
fb_contain_wait_sealed(const char *dir)
{
	struct stat	st;
	char		lock[PATH_MAX], aside[PATH_MAX];
	int		fd, rc;

	/* Whether or not this process switches users: another kforge process of this
	 * cache may (a run as root beside a test that runs its steps unswitched). */
	if (seal_lock_path(dir, lock, sizeof(lock)) < 0)
		return -KB_ETOOBIG;
	if ((fd = open(lock, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) == -1)
		return -KB_ENOENT;	/* never handed over */
	while (flock(fd, LOCK_SH) == -1 && errno == EINTR)
		;
	if (lstat(dir, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid != geteuid()) {
		while (flock(fd, LOCK_EX) == -1 && errno == EINTR)
			;
		if (lstat(dir, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid != geteuid() &&
		    snprintf(aside, sizeof(aside), "%s.left-open-%ld", dir, (long)getpid()) <
		    (int)sizeof(aside) && rename(dir, aside) == 0) {
			log_warnx("%s was left open to the runner's user (its selftest was "
				  "stopped before it sealed it): thrown away", dir);
			if ((rc = kb_rmtree(aside)) < 0)
				log_warnx("cannot remove all of %s: %s", aside, kb_strerror(rc));
		}
	}
	close(fd);
	return 0;
}

void
fb_contain_seal_closed(const char *dir, int lock_fd)
{
	if (lock_fd < 0)
		return;
	if (dir != NULL)
		(void)own_tree(dir, geteuid(), getegid(), 0755);
	close(lock_fd);
}
