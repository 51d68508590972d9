/*
 * cache.c: the cache that runs share with each other and with `kforge eval`, for what
 * costs time to make and depends only on content: builds of a candidate, the reference
 * timings of a problem. Entries are named by a key that hashes everything they depend
 * on, so an entry is never used by a request whose inputs differ; each kind of entry
 * (build, baseline) owns its key and its files (entries.c), this file only the place:
 *
 *   root    the config's cache.dir, else $KFORGE_CACHE_DIR, when set and within the
 *           runner's user's reach (a shared filesystem serves every Slurm shard), else
 *           /var/tmp/kforge-cache-<euid> (/var/tmp survives a reboot; per user, since a
 *           build is sealed by and for the user that made it)
 *   below   <kind>/<key>
 *
 * The root must be a real directory owned by this user and writable by nobody else:
 * /var/tmp is open to all, and a directory planted there by another user would hand it
 * every build kforge loads. Such a root is refused, never used.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "feedback/feedback_int.h"
#include "base/banned.h"

#define CACHE_BASE	"/var/tmp"
#define CACHE_PREFIX	"kforge-cache-"

/* Makes (0755, whatever the umask) or checks one directory level: ours, not a link, not
 * writable by others. */
static int
own_dir(const char *path, char *why, size_t whylen)
{
	struct stat	st;
	int		fd, rc = 0;

	if (mkdir(path, 0755) == -1 && errno != EEXIST) {
		snprintf(why, whylen, "cannot make %s: %s", path, strerror(errno));
		return -kb_errno_to_err(errno);
	}
	if ((fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) == -1) {
		snprintf(why, whylen, "cannot open %s: %s", path, strerror(errno));
		return -kb_errno_to_err(errno);
	}
	if (fstat(fd, &st) == -1) {
		rc = -kb_errno_to_err(errno);
		snprintf(why, whylen, "cannot stat %s: %s", path, strerror(errno));
	} else if (st.st_uid != geteuid() || (st.st_mode & 022) != 0) {
		rc = -KB_ECONFIG;
		snprintf(why, whylen, "%s is not kforge's own (owner %d, mode %04o)", path,
			 (int)st.st_uid, (unsigned)(st.st_mode & 07777));
	} else if ((st.st_mode & 0755) != 0755 && fchmod(fd, 0755) == -1) {
		rc = -kb_errno_to_err(errno);
		snprintf(why, whylen, "cannot open %s to the runner: %s", path, strerror(errno));
	}
	close(fd);
	return rc;
}

static char	preferred_root[PATH_MAX];	/* cache.dir */

void
fb_cache_prefer(const char *dir)
{
	snprintf(preferred_root, sizeof(preferred_root), "%s", dir != NULL ? dir : "");
}

static int
pick_root(char *out, size_t n, char *why, size_t whylen)
{
	const char	*env = preferred_root[0] != '\0' ? preferred_root :
			       getenv("KFORGE_CACHE_DIR");
	const char	*from = preferred_root[0] != '\0' ? "cache.dir" : "KFORGE_CACHE_DIR";
	char		 reach[512];

	if (env != NULL && env[0] == '/') {
		if (fb_contain_check_reach(env, false, reach, sizeof(reach)) == 0 ||
		    (kb_mkdir_p(env, 0755) == 0 &&
		     fb_contain_check_reach(env, false, reach, sizeof(reach)) == 0)) {
			if (snprintf(out, n, "%s", env) >= (int)n)
				return -KB_ETOOBIG;
			return own_dir(out, why, whylen);
		}
		log_warnx("%s %s: %s; using the default cache", from, env, reach);
	} else if (env != NULL && env[0] != '\0') {
		log_warnx("%s must be an absolute path, not %s; using the default cache", from,
			  env);
	}
	if (snprintf(out, n, "%s/%s%u", CACHE_BASE, CACHE_PREFIX, (unsigned)geteuid()) >= (int)n)
		return -KB_ETOOBIG;
	return own_dir(out, why, whylen);
}

/* Decided once per process: workers inherit the supervisor's answer. */
static const char *
cache_root(int *rc)
{
	static char	root[PATH_MAX];
	static int	root_rc = 1;
	char		why[PATH_MAX + 128] = "";

	if (root_rc == 1 && (root_rc = pick_root(root, sizeof(root), why, sizeof(why))) < 0)
		log_warnx("no build or baseline cache: %s", why);
	*rc = root_rc;
	return root_rc < 0 ? NULL : root;
}

int
fb_cache_root(char *out, size_t n)
{
	const char	*root;
	int		 rc;

	if ((root = cache_root(&rc)) == NULL)
		return rc;
	return snprintf(out, n, "%s", root) >= (int)n ? -KB_ETOOBIG : 0;
}

int
fb_cache_dir(const char *kind, const char *key, char *out, size_t n)
{
	const char	*root;
	char		 dir[PATH_MAX], why[PATH_MAX + 128] = "";
	int		 rc;

	if (kind == NULL || strchr(kind, '/') != NULL || kind[0] == '.' ||
	    (key != NULL && (strchr(key, '/') != NULL || key[0] == '.')))
		return -KB_EINVAL;
	if ((root = cache_root(&rc)) == NULL)
		return rc;
	if ((rc = kb_path_join(dir, sizeof(dir), root, kind)) < 0)
		return rc;
	rc = own_dir(dir, why, sizeof(why));
	if (rc == -KB_ECONFIG && fb_contain_wait_sealed(dir) == 0)
		rc = own_dir(dir, why, sizeof(why));	/* sealed by now, or thrown away */
	if (rc < 0) {
		log_warnx("cache: %s", why);
		return rc;
	}
	if (key == NULL)
		return snprintf(out, n, "%s", dir) >= (int)n ? -KB_ETOOBIG : 0;
	return kb_path_join(out, n, dir, key);
}

/* ------------------------------------------------------------ size */

/*
 * Builds are the cache's bulk (tens of MB each: objects, the module, torch's ninja
 * files), and nothing else removes them, so a machine that runs many experiments fills
 * its disk. fb_cache_trim keeps builds/ under a cap by removing the builds used least
 * recently: fb_run stamps a build directory's mtime each time a runner builds or loads
 * it. A build used within the last FB_CACHE_MIN_IDLE_S, or one whose lock another
 * process holds (a build or a load in progress), is never removed, so a run in
 * progress keeps what it uses; the trim itself holds the lock while it removes.
 */
#define FB_CACHE_MIN_IDLE_S	3600
#define FB_CACHE_MAX_ENTRIES	(1 << 20)

struct cache_entry {
	char		*path;
	long long	 bytes;
	time_t		 used;
};

static long long	walk_bytes;

static int
add_bytes(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)path;
	(void)flag;
	(void)ftw;
	walk_bytes += (long long)st->st_blocks * 512;
	return 0;
}

static long long
tree_bytes(const char *dir)
{
	walk_bytes = 0;
	(void)nftw(dir, add_bytes, 16, FTW_PHYS);
	return walk_bytes;
}

static int
by_use(const void *a, const void *b)
{
	const struct cache_entry *x = a, *y = b;

	return (x->used > y->used) - (x->used < y->used);
}

void
fb_build_touch(const char *build_dir)
{
	if (build_dir != NULL && utimensat(AT_FDCWD, build_dir, NULL, 0) == -1 &&
	    errno != ENOENT)
		log_debug("cache: cannot stamp %s: %s", build_dir, strerror(errno));
}

int
fb_cache_trim(long long max_bytes, struct fb_cache_usage *u)
{
	struct cache_entry	*v = NULL, *nv;
	struct dirent		*de;
	struct stat		 st;
	char			 dir[PATH_MAX], path[PATH_MAX], lock[PATH_MAX + 32];
	size_t			 n = 0, cap = 0;
	time_t			 now = time(NULL);
	DIR			*d;
	int			 rc, fd;

	memset(u, 0, sizeof(*u));
	if ((rc = fb_cache_dir("builds", NULL, dir, sizeof(dir))) < 0)
		return rc;
	if ((d = opendir(dir)) == NULL)
		return -kb_errno_to_err(errno);
	while ((de = readdir(d)) != NULL && n < FB_CACHE_MAX_ENTRIES) {
		if (de->d_name[0] == '.' || kb_path_join(path, sizeof(path), dir, de->d_name) < 0 ||
		    lstat(path, &st) == -1 || !S_ISDIR(st.st_mode))
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 256;
			if ((nv = realloc(v, cap * sizeof(*v))) == NULL)
				break;
			v = nv;
		}
		v[n].path = kb_strdup(path);
		v[n].bytes = tree_bytes(path);
		v[n].used = st.st_mtime;
		u->bytes += v[n].bytes;
		n++;
	}
	closedir(d);
	u->builds = (long)n;
	qsort(v, n, sizeof(*v), by_use);
	for (size_t i = 0; i < n && max_bytes >= 0 && u->bytes > max_bytes; i++) {
		if (now - v[i].used < FB_CACHE_MIN_IDLE_S)
			break;	/* the rest are newer still */
		snprintf(lock, sizeof(lock), "%s/.kforge-build.lock", v[i].path);
		fd = open(lock, O_RDONLY | O_CLOEXEC);
		if (fd != -1 && flock(fd, LOCK_EX | LOCK_NB) == -1) {
			close(fd);
			continue;	/* being built or loaded right now */
		}
		if ((rc = kb_rmtree(v[i].path)) < 0)
			log_warnx("cache: cannot remove all of %s: %s", v[i].path, kb_strerror(rc));
		if (fd != -1)
			close(fd);
		u->bytes -= v[i].bytes;
		u->removed++;
		u->removed_bytes += v[i].bytes;
	}
	for (size_t i = 0; i < n; i++)
		free(v[i].path);
	free(v);
	if (u->removed > 0)
		log_info("cache: removed %ld builds unused the longest (%lld MB) to stay under "
			 "%lld MB; %lld MB in %ld builds remain", u->removed,
			 u->removed_bytes >> 20, max_bytes >> 20, u->bytes >> 20,
			 u->builds - u->removed);
	return 0;
}
