/*
 * sandbox.c: a policy (sandbox.h) made into Landlock rules and a seccomp filter.
 *
 * Landlock grants, it never denies: "everything but the hidden roots" is written as a
 * rule on every entry of every directory above a hidden root, but the one that leads to
 * it (bubblewrap and landrun walk the same way). A rule is held by an inode, so an entry
 * that is a symlink or a bind mount of a hidden root or of a directory above one is left
 * out: a rule on it would open the hidden root too.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <seccomp.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <grp.h>

#include "sandbox/sandbox.h"
#include "base/banned.h"

#ifndef __NR_landlock_create_ruleset
#define __NR_landlock_create_ruleset	444
#define __NR_landlock_add_rule		445
#define __NR_landlock_restrict_self	446
#endif

/* The uapi's values (linux/landlock.h), spelled here: Debian 12's header stops at ABI 2. */
#define LL_CREATE_RULESET_VERSION	(1U << 0)
#define LL_RULE_PATH_BENEATH		1
#define LL_FS_EXECUTE		(1ULL << 0)
#define LL_FS_WRITE_FILE	(1ULL << 1)
#define LL_FS_READ_FILE		(1ULL << 2)
#define LL_FS_READ_DIR		(1ULL << 3)
#define LL_FS_ABI1		((1ULL << 13) - 1)	/* EXECUTE .. MAKE_SYM */
#define LL_FS_REFER		(1ULL << 13)		/* ABI 2 */
#define LL_FS_TRUNCATE		(1ULL << 14)		/* ABI 3 */
#define LL_FS_IOCTL_DEV		(1ULL << 15)		/* ABI 5 */
#define LL_NET_BIND_TCP		(1ULL << 0)		/* ABI 4 */
#define LL_NET_CONNECT_TCP	(1ULL << 1)
#define LL_SCOPE_ABSTRACT_UNIX	(1ULL << 0)		/* ABI 6 */
#define LL_SCOPE_SIGNAL		(1ULL << 1)

/* What a rule on a file (not a directory) may carry. */
#define LL_FILE_RIGHTS	(LL_FS_EXECUTE | LL_FS_WRITE_FILE | LL_FS_READ_FILE | \
			 LL_FS_TRUNCATE | LL_FS_IOCTL_DEV)
#define LL_READ		(LL_FS_EXECUTE | LL_FS_READ_FILE | LL_FS_READ_DIR)
#define LL_DEVICE	(LL_FS_READ_FILE | LL_FS_WRITE_FILE | LL_FS_TRUNCATE | LL_FS_IOCTL_DEV)
/* Its own /proc/<pid>: CUDA's driver writes there (found on an H200). */
#define LL_PROC_SELF	(LL_READ | LL_FS_WRITE_FILE | LL_FS_TRUNCATE)

#define SBX_MAX_PATHS	64	/* per list of a spec: a policy names a handful */
#define SBX_MAX_SPEC	(64 << 10)

struct ll_attr {
	uint64_t	fs, net, scoped;
};

struct ll_beneath {
	uint64_t	allowed;
	int32_t		parent_fd;
} __attribute__((packed));

/* Device files every runner may use besides the GPU's (/dev/nvidia*, found at apply). */
static const char *const plain_devices[] = {
	"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom",
};

/* Calls refused on top of Landlock: reaching into another process (ptrace and what
 * reads or writes its memory or takes its files), kernel interfaces a sandboxed process
 * has no use for and that have carried escapes (io_uring, userfaultfd, bpf, keyrings),
 * and changes of mounts, namespaces, modules or the machine. */
static const char *const denied_calls[] = {
	"ptrace", "process_vm_readv", "process_vm_writev", "process_madvise", "pidfd_getfd",
	"kcmp", "io_uring_setup", "io_uring_enter", "io_uring_register", "userfaultfd",
	"bpf", "keyctl", "add_key", "request_key", "mount", "umount2", "pivot_root",
	"chroot", "setns", "unshare", "fsopen", "fsmount", "fspick", "move_mount",
	"open_tree", "mount_setattr", "open_by_handle_at", "init_module", "finit_module",
	"delete_module", "kexec_load", "kexec_file_load", "reboot", "swapon", "swapoff",
	"acct", "quotactl", "syslog", "iopl", "ioperm", "fanotify_init",
};

static const char *const layer_names[KB_SBX__LAYERS] = {
	[KB_SBX_LANDLOCK] = "landlock", [KB_SBX_SCOPE] = "scope", [KB_SBX_SECCOMP] = "seccomp",
	[KB_SBX_NAMESPACES] = "namespaces",
};

const char *
kb_sbx_layer_name(enum kb_sbx_layer l)
{
	return (unsigned)l < KB_SBX__LAYERS ? layer_names[l] : "?";
}

static void
say(char *out, size_t n, const char *fmt, ...)
{
	va_list	ap;

	if (n == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(out, n, fmt, ap);
	va_end(ap);
}

/* ------------------------------------------------------------ probe */

/* KFORGE_SANDBOX_DENY=layer,...: the probe reports those layers missing, as a kernel
 * without them would (how the tests show strict refusing and best_effort going on, on a
 * kernel that has every layer). It can only take layers away: a runner never sees it (its
 * environment is kforge's allow-list) and applies what its kernel has. */
static void
probe_denied(struct kb_sbx_caps *c)
{
	const char	*deny = getenv("KFORGE_SANDBOX_DENY");

	for (int l = 0; deny != NULL && l < KB_SBX__LAYERS; l++) {
		const char	*p = strstr(deny, layer_names[l]);
		size_t		 n = strlen(layer_names[l]);

		if (p == NULL || (p != deny && p[-1] != ',') || (p[n] != '\0' && p[n] != ','))
			continue;
		c->have[l] = false;
		if (l == KB_SBX_LANDLOCK) {
			c->have[KB_SBX_SCOPE] = false;
			c->landlock_abi = 0;
		}
		say(c->why[l], KB_SBX_WHY, "taken away by KFORGE_SANDBOX_DENY");
	}
	if (!c->have[KB_SBX_LANDLOCK] && c->why[KB_SBX_SCOPE][0] == '\0')
		say(c->why[KB_SBX_SCOPE], KB_SBX_WHY, "needs Landlock");
}

/* The steps of making a runner's namespaces, as an unprivileged runner makes them
 * (kforge_runner.py, enter_namespaces); the probe's child reports the first that failed. */
enum ns_step {
	NS_OK, NS_DROP, NS_UNSHARE, NS_SETGROUPS, NS_UID_MAP, NS_GID_MAP, NS_PRIVATE, NS_FORK,
	NS_PROC, NS__STEPS
};
static const char *const ns_step_names[NS__STEPS] = {
	[NS_DROP] = "setuid(nobody)", [NS_UNSHARE] =
	"unshare(CLONE_NEWPID|CLONE_NEWNS, and CLONE_NEWUSER not as root)", [NS_SETGROUPS] =
	"/proc/self/setgroups", [NS_UID_MAP] = "/proc/self/uid_map", [NS_GID_MAP] =
	"/proc/self/gid_map", [NS_PRIVATE] = "mount(/, private)", [NS_FORK] = "fork",
	[NS_PROC] = "mount(proc) in the PID namespace",
};
#define NS_NOBODY	65534

struct ns_report {
	int	step, err;
};

static void __attribute__((noreturn))
ns_fail(int fd, enum ns_step step)
{
	struct ns_report	m = { (int)step, errno };

	(void)!write(fd, &m, sizeof(m));
	_exit(1);
}

/* "ID ID 1" for a map, with no stdio (async-signal-safe, after a fork). */
static size_t
id_map_line(char *out, unsigned id)
{
	char	digits[16];
	size_t	n = 0, k = 0;

	do
		digits[k++] = (char)('0' + id % 10);
	while ((id /= 10) != 0 && k < sizeof(digits));
	for (int twice = 0; twice < 2; twice++) {
		for (size_t i = k; i > 0; i--)
			out[n++] = digits[i - 1];
		out[n++] = ' ';
	}
	out[n++] = '1';
	return n;
}

static bool
ns_write(const char *path, const char *text, size_t len)
{
	int	fd = open(path, O_WRONLY | O_CLOEXEC);
	bool	ok = fd >= 0 && write(fd, text, len) == (ssize_t)len;

	if (fd >= 0)
		(void)close(fd);
	return ok;
}

/* The namespaces a runner enters (kforge_sandbox_enter_namespaces): a PID and a mount
 * namespace, and with user a user namespace mapped to its own ids to make them in; then
 * its mounts made private. NS_OK, or the step that failed with errno set. Async-signal-
 * safe (the probe calls it after a fork). */
static enum ns_step
ns_enter(bool user)
{
	char	line[40];
	uid_t	uid = getuid();
	gid_t	gid = getgid();

	if (unshare(CLONE_NEWPID | CLONE_NEWNS | (user ? CLONE_NEWUSER : 0)) == -1)
		return NS_UNSHARE;
	if (user && !ns_write("/proc/self/setgroups", "deny", 4))
		return NS_SETGROUPS;
	if (user && !ns_write("/proc/self/uid_map", line, id_map_line(line, uid)))
		return NS_UID_MAP;
	if (user && !ns_write("/proc/self/gid_map", line, id_map_line(line, gid)))
		return NS_GID_MAP;
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == -1)
		return NS_PRIVATE;
	return NS_OK;
}

/* A /proc of the caller's PID namespace, over the one it sees (a proc mount shows the
 * namespace of whoever mounts it: the namespace's first process mounts it). */
static int
ns_mount_proc(void)
{
	return mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
}

/* In a child of the probe: the namespaces as a runner makes them, as nobody where this
 * process is root (the user runners run as). Async-signal-safe calls only. */
static void __attribute__((noreturn))
ns_child(int fd)
{
	enum ns_step	step;
	pid_t		pid;
	int		st;

	if (geteuid() == 0 && (setgroups(0, NULL) == -1 || setgid(NS_NOBODY) == -1 ||
			       setuid(NS_NOBODY) == -1))
		ns_fail(fd, NS_DROP);
	/* A change of uid left it undumpable, its /proc/self root's: a runner, exec'd after
	 * its drop, is dumpable. */
	(void)prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
	if ((step = ns_enter(true)) != NS_OK)
		ns_fail(fd, step);
	if ((pid = fork()) == -1)
		ns_fail(fd, NS_FORK);
	if (pid == 0) {
		if (ns_mount_proc() == -1)
			ns_fail(fd, NS_PROC);
		_exit(0);
	}
	while (waitpid(pid, &st, 0) == -1 && errno == EINTR)
		;
	_exit(0);
}

/* Whether an unprivileged process may make the namespaces a runner makes: tried in a
 * child, which reports the first step that failed. */
static void
probe_namespaces(struct kb_sbx_caps *c)
{
	struct ns_report	m = { NS_OK, 0 };
	int			fds[2], st;
	pid_t			pid;
	ssize_t			n;

	if (pipe2(fds, O_CLOEXEC) == -1) {
		say(c->why[KB_SBX_NAMESPACES], KB_SBX_WHY, "pipe: %s", strerror(errno));
		return;
	}
	if ((pid = fork()) == -1) {
		say(c->why[KB_SBX_NAMESPACES], KB_SBX_WHY, "fork: %s", strerror(errno));
		close(fds[0]);
		close(fds[1]);
		return;
	}
	if (pid == 0) {
		close(fds[0]);
		ns_child(fds[1]);
	}
	close(fds[1]);
	do
		n = read(fds[0], &m, sizeof(m));
	while (n == -1 && errno == EINTR);
	close(fds[0]);
	while (waitpid(pid, &st, 0) == -1 && errno == EINTR)
		;
	if (n == (ssize_t)sizeof(m) && m.step > NS_OK && m.step < NS__STEPS) {
		say(c->why[KB_SBX_NAMESPACES], KB_SBX_WHY, "%s: %s%s", ns_step_names[m.step],
		    strerror(m.err), m.step == NS_UNSHARE || m.step == NS_PRIVATE ?
		    " (are unprivileged user namespaces disabled? kernel.unprivileged_userns_clone, "
		    "user.max_user_namespaces, an AppArmor or SELinux policy)" : "");
		return;
	}
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		say(c->why[KB_SBX_NAMESPACES], KB_SBX_WHY, "the probe's child ended with status %d",
		    st);
		return;
	}
	c->have[KB_SBX_NAMESPACES] = true;
}

static void
probe_kernel(struct kb_sbx_caps *c, bool namespaces)
{
	long	abi;

	memset(c, 0, sizeof(*c));
	abi = syscall(__NR_landlock_create_ruleset, NULL, 0, LL_CREATE_RULESET_VERSION);
	if (abi < 0) {
		say(c->why[KB_SBX_LANDLOCK], KB_SBX_WHY, "%s", errno == EOPNOTSUPP ?
		    "Landlock is built into this kernel but not enabled (lsm= on its command "
		    "line)" : errno == ENOSYS ? "this kernel has no Landlock (Linux 5.13 or "
		    "later with CONFIG_SECURITY_LANDLOCK)" : strerror(errno));
		say(c->why[KB_SBX_SCOPE], KB_SBX_WHY, "needs Landlock ABI 6 (Linux 6.12)");
	} else {
		c->landlock_abi = (int)abi;
		c->have[KB_SBX_LANDLOCK] = true;
		c->have[KB_SBX_SCOPE] = abi >= 6;
		if (abi < 6)
			say(c->why[KB_SBX_SCOPE], KB_SBX_WHY, "Landlock ABI %ld; signal and "
			    "socket scoping needs ABI 6 (Linux 6.12)", abi);
	}
	/* PR_GET_SECCOMP answers EINVAL on a kernel without seccomp. */
	if (prctl(PR_GET_SECCOMP, 0, 0, 0, 0) < 0 && errno == EINVAL) {
		say(c->why[KB_SBX_SECCOMP], KB_SBX_WHY, "this kernel has no seccomp");
	} else if (seccomp_api_get() < 1) {
		say(c->why[KB_SBX_SECCOMP], KB_SBX_WHY, "libseccomp finds no usable filter API");
	} else {
		c->have[KB_SBX_SECCOMP] = true;
	}
	if (namespaces)
		probe_namespaces(c);
	else
		say(c->why[KB_SBX_NAMESPACES], KB_SBX_WHY, "not probed");
	probe_denied(c);
}

void
kb_sbx_probe(struct kb_sbx_caps *c)
{
	probe_kernel(c, true);
}

/* ------------------------------------------------------------ path lists */

struct plist {
	char		**p;
	struct stat	 *st;	/* of each, for the inode comparison */
	size_t		  n, cap;
};

static int
plist_add(struct plist *l, const char *path, const struct stat *st)
{
	for (size_t i = 0; i < l->n; i++)
		if (strcmp(l->p[i], path) == 0)
			return 0;
	if (l->n == l->cap) {
		size_t		 cap = l->cap ? l->cap * 2 : 16;
		char		**p = realloc(l->p, cap * sizeof(*p));
		struct stat	 *s;

		if (p == NULL)
			return -1;
		l->p = p;
		if ((s = realloc(l->st, cap * sizeof(*s))) == NULL)
			return -1;
		l->st = s;
		l->cap = cap;
	}
	if ((l->p[l->n] = strdup(path)) == NULL)
		return -1;
	l->st[l->n++] = *st;
	return 0;
}

static void
plist_free(struct plist *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->p[i]);
	free(l->p);
	free(l->st);
	memset(l, 0, sizeof(*l));
}

static bool
plist_has(const struct plist *l, const char *path)
{
	for (size_t i = 0; i < l->n; i++)
		if (strcmp(l->p[i], path) == 0)
			return true;
	return false;
}

static bool
plist_has_inode(const struct plist *l, const struct stat *st)
{
	for (size_t i = 0; i < l->n; i++)
		if (l->st[i].st_dev == st->st_dev && l->st[i].st_ino == st->st_ino)
			return true;
	return false;
}

/* Whether path is root or beneath it. */
static bool
beneath(const char *path, const char *root)
{
	size_t	n = strlen(root);

	return strncmp(path, root, n) == 0 && (path[n] == '\0' || path[n] == '/' ||
					       (n == 1 && root[0] == '/'));
}

/* ------------------------------------------------------------ landlock */

struct ll {
	int		fd;
	uint64_t	fs;		/* handled */
	char		*err;
	size_t		 elen;
};

static int
ll_rule(struct ll *ll, const char *path, uint64_t rights, bool must)
{
	struct ll_beneath	pb;
	struct stat		st;
	int			fd, rc;

	if ((fd = open(path, O_PATH | O_CLOEXEC)) == -1) {
		if (!must && (errno == ENOENT || errno == EACCES || errno == ELOOP))
			return 0;
		say(ll->err, ll->elen, "landlock: %s: %s", path, strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) == -1) {
		say(ll->err, ll->elen, "landlock: %s: %s", path, strerror(errno));
		close(fd);
		return -1;
	}
	pb.allowed = rights & ll->fs & (S_ISDIR(st.st_mode) ? ~0ULL : LL_FILE_RIGHTS);
	pb.parent_fd = fd;
	rc = pb.allowed == 0 ? 0 :
	     (int)syscall(__NR_landlock_add_rule, ll->fd, LL_RULE_PATH_BENEATH, &pb, 0);
	if (rc == -1)
		say(ll->err, ll->elen, "landlock: a rule for %s: %s", path, strerror(errno));
	close(fd);
	return rc == -1 ? -1 : 0;
}

/* The directories above each hidden root, "/" always, and the roots themselves. */
static int
hidden_tree(const char *const *hidden, struct plist *roots, struct plist *above,
	    char *err, size_t elen)
{
	char		real[PATH_MAX], prefix[PATH_MAX];
	struct stat	st;

	/* "/" is walked whatever is hidden: /proc is never read whole. */
	if (stat("/", &st) == -1 || plist_add(above, "/", &st) < 0) {
		say(err, elen, "landlock: /: %s", strerror(errno));
		return -1;
	}
	for (size_t i = 0; hidden != NULL && hidden[i] != NULL; i++) {
		if (realpath(hidden[i], real) == NULL)
			continue;	/* nothing there to hide */
		if (strcmp(real, "/") == 0) {
			say(err, elen, "landlock: cannot hide /");
			return -1;
		}
		if (stat(real, &st) == -1 || plist_add(roots, real, &st) < 0)
			continue;
		for (size_t k = 1; real[k] != '\0'; k++) {
			if (real[k] != '/')
				continue;
			memcpy(prefix, real, k);
			prefix[k] = '\0';
			if (stat(prefix, &st) == 0 && plist_add(above, prefix, &st) < 0)
				return -1;
		}
	}
	return 0;
}

/* Read on every entry of the directories above the hidden roots but those on the way. */
static int
ll_read_all_but(struct ll *ll, const struct plist *roots, const struct plist *above)
{
	char		 child[PATH_MAX], real[PATH_MAX];
	struct stat	 st;

	for (size_t i = 0; i < above->n; i++) {
		DIR		*d = opendir(above->p[i]);
		struct dirent	*e;

		if (d == NULL)
			continue;
		while ((e = readdir(d)) != NULL) {
			bool	skip = false;

			if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
				continue;
			if (snprintf(child, sizeof(child), "%s/%s", strcmp(above->p[i], "/") == 0 ?
				     "" : above->p[i], e->d_name) >= (int)sizeof(child))
				continue;
			/* /proc has rules of its own (ll_proc). */
			if (plist_has(above, child) || plist_has(roots, child) ||
			    strcmp(child, "/proc") == 0)
				continue;
			/* Where it really leads: a link or a bind mount of a hidden root, or of
			 * a directory above one, would carry the rule there. */
			if (stat(child, &st) == -1 || realpath(child, real) == NULL)
				continue;
			if (plist_has_inode(roots, &st) || plist_has_inode(above, &st))
				continue;
			for (size_t r = 0; r < roots->n && !skip; r++)
				skip = beneath(real, roots->p[r]) || beneath(roots->p[r], real);
			if (!skip && ll_rule(ll, child, LL_READ, false) < 0) {
				closedir(d);
				return -1;
			}
		}
		closedir(d);
	}
	return 0;
}

/* A rule with rights on each entry of dir that want() keeps. */
static int
ll_entries(struct ll *ll, const char *dir, bool (*want)(const char *name), uint64_t rights)
{
	DIR		*d;
	struct dirent	*e;
	char		 path[300];
	int		 rc = 0;

	if ((d = opendir(dir)) == NULL)
		return 0;
	while (rc == 0 && (e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.' || !want(e->d_name))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		rc = ll_rule(ll, path, rights, false);
	}
	closedir(d);
	return rc;
}

static bool
gpu_device(const char *name)
{
	return strncmp(name, "nvidia", 6) == 0;
}

static int
ll_devices(struct ll *ll)
{
	for (size_t i = 0; i < sizeof(plain_devices) / sizeof(plain_devices[0]); i++)
		if (ll_rule(ll, plain_devices[i], LL_DEVICE, false) < 0)
			return -1;
	return ll_entries(ll, "/dev", gpu_device, LL_DEVICE | LL_READ);
}

/* /proc's entries but the processes' directories (and the links to one's own). */
static bool
proc_shared(const char *name)
{
	return !(name[0] >= '0' && name[0] <= '9') && strcmp(name, "self") != 0 &&
	       strcmp(name, "thread-self") != 0;
}

/* /proc but the other processes' directories: the kernel's and the driver's files read,
 * its own directory read and written; no other process's environ, maps or memory, though
 * it run as the same user. What it starts sees only the runner's (/proc/self in a
 * compiler leads nowhere: Python's subprocess and the compilers do without). Listing
 * /proc stays: which processes there are is no secret (ps shows it), what they hold is
 * (their files' reads are ptrace accesses, refused out of the domain). */
static int
ll_proc(struct ll *ll)
{
	char	path[64];

	if (ll_rule(ll, "/proc", LL_FS_READ_DIR, false) < 0 ||
	    ll_entries(ll, "/proc", proc_shared, LL_READ) < 0)
		return -1;
	snprintf(path, sizeof(path), "/proc/%ld", (long)getpid());
	return ll_rule(ll, path, LL_PROC_SELF, true);
}

static int
count_threads(void)
{
	DIR		*d = opendir("/proc/self/task");
	struct dirent	*e;
	int		 n = 0;

	if (d == NULL)
		return -1;
	while ((e = readdir(d)) != NULL)
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

static int
apply_landlock(const struct kb_sbx_policy *p, int abi, bool scope, char *err, size_t elen)
{
	struct ll_attr	 attr = { 0, 0, 0 };
	struct plist	 roots = { 0 }, above = { 0 };
	struct ll	 ll = { -1, 0, err, elen };
	size_t		 attr_size;
	int		 rc = -1;

	attr.fs = LL_FS_ABI1 | (abi >= 2 ? LL_FS_REFER : 0) | (abi >= 3 ? LL_FS_TRUNCATE : 0) |
		  (abi >= 5 ? LL_FS_IOCTL_DEV : 0);
	attr.net = abi >= 4 && !p->network ? LL_NET_BIND_TCP | LL_NET_CONNECT_TCP : 0;
	attr.scoped = scope ? LL_SCOPE_ABSTRACT_UNIX | (p->scope_signals ? LL_SCOPE_SIGNAL : 0)
		    : 0;
	/* An older kernel refuses a larger attribute with fields it does not know. */
	attr_size = abi >= 6 ? sizeof(attr) : abi >= 4 ? 2 * sizeof(uint64_t) : sizeof(uint64_t);
	ll.fs = attr.fs;
	if ((ll.fd = (int)syscall(__NR_landlock_create_ruleset, &attr, attr_size, 0)) < 0) {
		say(err, elen, "landlock: create_ruleset: %s", strerror(errno));
		return -1;
	}
	if (hidden_tree(p->hidden, &roots, &above, err, elen) < 0 ||
	    ll_read_all_but(&ll, &roots, &above) < 0 || ll_devices(&ll) < 0 ||
	    ll_proc(&ll) < 0)
		goto out;
	for (size_t i = 0; p->visible != NULL && p->visible[i] != NULL; i++)
		if (ll_rule(&ll, p->visible[i], LL_READ, false) < 0)
			goto out;
	for (size_t i = 0; p->writable != NULL && p->writable[i] != NULL; i++)
		if (ll_rule(&ll, p->writable[i], ~0ULL, true) < 0)
			goto out;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == -1) {
		say(err, elen, "prctl(NO_NEW_PRIVS): %s", strerror(errno));
		goto out;
	}
	if (syscall(__NR_landlock_restrict_self, ll.fd, 0) == -1) {
		say(err, elen, "landlock: restrict_self: %s", strerror(errno));
		goto out;
	}
	rc = 0;
out:
	close(ll.fd);
	plist_free(&roots);
	plist_free(&above);
	return rc;
}

/* ------------------------------------------------------------ seccomp */

static int
apply_seccomp(bool network, char *err, size_t elen)
{
	scmp_filter_ctx	ctx = seccomp_init(SCMP_ACT_ALLOW);
	const uint64_t	new_ns = CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER |
				 CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWCGROUP;
	int		rc;

	if (ctx == NULL) {
		say(err, elen, "seccomp: cannot make a filter");
		return -1;
	}
	/* Every thread: one started before the runner applied it (a driver's) is held too. */
	if ((rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_TSYNC, 1)) < 0)
		goto fail;
	for (size_t i = 0; i < sizeof(denied_calls) / sizeof(denied_calls[0]); i++) {
		int nr = seccomp_syscall_resolve_name(denied_calls[i]);

		if (nr != __NR_SCMP_ERROR &&
		    (rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 0)) < 0)
			goto fail;
	}
	if (!network && (rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), SCMP_SYS(socket),
					       1, SCMP_A0(SCMP_CMP_NE, AF_UNIX))) < 0)
		goto fail;
	/* A namespace of its own is an unshare by another name; clone3's flags are in
	 * memory a filter cannot read, so it is "not there" and libc falls back to clone. */
	for (int bit = 0; bit < 64; bit++) {
		uint64_t flag = 1ULL << bit;

		if ((new_ns & flag) != 0 &&
		    (rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
					   SCMP_A0(SCMP_CMP_MASKED_EQ, flag, flag))) < 0)
			goto fail;
	}
	if ((rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0)) < 0)
		goto fail;
	/* kill(-1): every process this user may signal. Landlock's scope holds the rest. */
	if ((rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(kill), 1,
				   SCMP_A0(SCMP_CMP_MASKED_EQ, 0xffffffffULL,
					   0xffffffffULL))) < 0)
		goto fail;
	if ((rc = seccomp_load(ctx)) < 0)
		goto fail;
	seccomp_release(ctx);
	return 0;
fail:
	say(err, elen, "seccomp: %s", strerror(-rc));
	seccomp_release(ctx);
	return -1;
}

/* ------------------------------------------------------------ apply */

int
kb_sbx_apply(const struct kb_sbx_policy *p, char *applied, size_t alen, char *err,
	     size_t elen)
{
	struct kb_sbx_caps	c;
	int			threads = count_threads();
	char			missing[128] = "";

	say(err, elen, "%s", "");
	/* The namespaces are the runner's to make, before this (sandbox.h). */
	probe_kernel(&c, false);
	for (int l = 0; l < KB_SBX__LAYERS; l++) {
		if (c.have[l] || l == KB_SBX_NAMESPACES)
			continue;
		if (p->strict) {
			say(err, elen, "sandbox layer %s unavailable: %s", layer_names[l], c.why[l]);
			return -1;
		}
		snprintf(missing + strlen(missing), sizeof(missing) - strlen(missing), "%s%s",
			 missing[0] ? "," : "", layer_names[l]);
	}
	/* Landlock holds this thread and what it starts; others run free of it. */
	if (p->strict && threads != 1 && c.have[KB_SBX_LANDLOCK]) {
		say(err, elen, "landlock binds one thread, and this process has %d", threads);
		return -1;
	}
	if (c.have[KB_SBX_LANDLOCK] &&
	    apply_landlock(p, c.landlock_abi, c.have[KB_SBX_SCOPE], err, elen) < 0)
		return -1;
	if (c.have[KB_SBX_SECCOMP] && apply_seccomp(p->network, err, elen) < 0)
		return -1;
	say(applied, alen, "landlock=%d scope=%d seccomp=%d threads=%d%s%s",
	    c.landlock_abi, c.have[KB_SBX_SCOPE] && p->scope_signals, c.have[KB_SBX_SECCOMP],
	    threads, missing[0] ? " missing=" : "", missing);
	return 0;
}

/* ------------------------------------------------------------ ctypes */

int
kforge_sandbox_apply(const char *spec, char *report, size_t reportlen)
{
	const char	*writable[SBX_MAX_PATHS + 1], *hidden[SBX_MAX_PATHS + 1];
	const char	*visible[SBX_MAX_PATHS + 1];
	size_t		 nw = 0, nh = 0, nv = 0;
	struct kb_sbx_policy p = { writable, hidden, visible, false, false, false };
	char		*copy, *line, *save = NULL, applied[256];
	int		 rc;

	if (spec == NULL || strlen(spec) > SBX_MAX_SPEC || (copy = strdup(spec)) == NULL) {
		say(report, reportlen, "sandbox: no spec, or one over %d bytes", SBX_MAX_SPEC);
		return -1;
	}
	for (line = strtok_r(copy, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
		char	*arg = strchr(line, ' ');

		if (arg != NULL)
			*arg++ = '\0';
		if (strcmp(line, "scope_signals") == 0) {
			p.scope_signals = true;
		} else if (strcmp(line, "strict") == 0) {
			p.strict = true;
		} else if (strcmp(line, "network") == 0) {
			p.network = true;
		} else if (arg != NULL && arg[0] == '/' && strcmp(line, "writable") == 0 &&
			   nw < SBX_MAX_PATHS) {
			writable[nw++] = arg;
		} else if (arg != NULL && arg[0] == '/' && strcmp(line, "hidden") == 0 &&
			   nh < SBX_MAX_PATHS) {
			hidden[nh++] = arg;
		} else if (arg != NULL && arg[0] == '/' && strcmp(line, "visible") == 0 &&
			   nv < SBX_MAX_PATHS) {
			visible[nv++] = arg;
		} else {
			say(report, reportlen, "sandbox: a spec line not understood: %.80s%s%.80s",
			    line, arg != NULL ? " " : "", arg != NULL ? arg : "");
			free(copy);
			return -1;
		}
	}
	writable[nw] = hidden[nh] = visible[nv] = NULL;
	rc = kb_sbx_apply(&p, applied, sizeof(applied), report, reportlen);
	if (rc == 0)
		say(report, reportlen, "%s", applied);
	free(copy);
	return rc;
}

void
kforge_sandbox_probe(char *report, size_t reportlen)
{
	struct kb_sbx_caps	c;
	size_t			n;

	kb_sbx_probe(&c);
	say(report, reportlen, "landlock=%d scope=%d seccomp=%d namespaces=%d", c.landlock_abi,
	    c.have[KB_SBX_SCOPE], c.have[KB_SBX_SECCOMP], c.have[KB_SBX_NAMESPACES]);
	for (int l = 0; l < KB_SBX__LAYERS; l++) {
		if (c.have[l] || (n = strlen(report)) + 2 >= reportlen)
			continue;
		say(report + n, reportlen - n, "; %s: %s", layer_names[l], c.why[l]);
	}
}

int
kforge_sandbox_enter_namespaces(int user, char *report, size_t reportlen)
{
	enum ns_step	step = ns_enter(user != 0);

	if (step == NS_OK)
		return 0;
	say(report, reportlen, "%s: %s", ns_step_names[step], strerror(errno));
	return -1;
}

int
kforge_sandbox_mount_proc(void)
{
	return ns_mount_proc() == 0 ? 0 : -1;
}
