/*
 * warm.c: runners started ahead of their step (warm runners), and the fork servers they
 * are forked from, this process's own or one shared with other processes. A process
 * holds at most one warm runner and one server of each kind, here and nowhere else:
 * run.c asks for a step's runner (fb_warm_take_for) and has the next one started
 * (fb_warm_start_next), forks its judges here, and is told which processes to spare when
 * it reaps strays. Apart from run.c so that their state has one owner and a step's code
 * reads as a step.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "feedback/feedback_int.h"
#include "base/banned.h"

/*
 * Importing torch takes seconds (3.8 s with CUDA's start on a GPU host, 1.5 s here), so a
 * worker keeps its next runner started ahead: the runner imports torch and waits for its
 * request (kforge_runner.py --warm), and is handed the next step's request. It is a
 * fresh process that no candidate has run in; it is started with the widest deadline's
 * CPU limit and the GPUs the next step will likely see (CUDA_VISIBLE_DEVICES: none for a
 * precompile, else the GPU this worker last ran on), and the request carries the
 * environment, working directory and CPU limit a cold runner would have been started
 * with. CUDA_VISIBLE_DEVICES cannot change once torch is imported (it may read the
 * device count then), so a step whose GPU is another than the waiting runner's has the
 * waiting runner killed and gets a fresh fork told its GPUs where a fork server is kept,
 * else a cold start. While it waits it is not dumpable, so an earlier
 * candidate of the same user cannot trace it or write its memory; one that killed or
 * stopped it is noticed at the hand-over (a dead one is replaced as a mismatched one is,
 * a stopped one resumed). At most one per process, and only where fb_warm_enable was
 * called (a worker): fb_run starts the next when it hands its own runner the request, or
 * just after a CPU timing step (the import would take a core from the timings), and only
 * when another runner step is to follow before the next turn's GENERATE, which would kill
 * it unused (warm_next_visible).
 */
static struct {
	bool		 enabled;
	struct kb_spawn	*child;
	char		 python[PATH_MAX], runner[PATH_MAX];
	char		 visible[16];	/* the child's CUDA_VISIBLE_DEVICES */
	bool		 idle;		/* started under SCHED_IDLE (warm_idle) */
	char		 last_gpu[16];	/* the last GPU a step of this process saw */
} warm = { .last_gpu = "0" };

static bool
warm_mode(enum fb_mode mode)
{
	return mode == FB_PRECOMPILE || mode == FB_EXECUTE || mode == FB_PROFILE ||
	       mode == FB_BASELINE || mode == FB_PROBE;
}

void
fb_warm_enable(void)
{
	warm.enabled = true;
}

pid_t
fb_warm_pid(void)
{
	return warm.child != NULL ? kb_spawn_pid(warm.child) : 0;
}

void
fb_warm_drop(void)
{
	kb_spawn_discard(warm.child);
	warm.child = NULL;
}

/*
 * Fork servers (kforge_runner.py --zygote): where this process is a subreaper (a worker:
 * fb_adopt_strays), a warm runner is forked from a server that imported torch once,
 * instead of started afresh to import it again, so a step costs a fork and not an
 * import (0.7 s of CPU a step on the 2-core machine, where the tests' runs are bound by
 * CPU; 4.4 s of `import torch` on the GPU hosts). The server runs no request and no
 * candidate: each child is still a process no candidate has touched, in a group of its
 * own, and kb_spawn_fork hands it to this process to finish, wait for and kill as one it
 * started. A process keeps one server, for one Python and runner (a step that needs
 * others replaces it); one that fails to answer is ended and the step's runner started
 * the plain way. The server never touches CUDA, so its children are free to: each is
 * told the CUDA_VISIBLE_DEVICES it is for (a precompile's none, an execute's GPU), which
 * the driver reads at the child's first CUDA call, and the CUPTI injection of a profile
 * likewise (kprof_step). It lives until fb_warm_end: the worker's end, or the next
 * turn's GENERATE where the run's workers would hold too much of the host's memory
 * through the model's calls (fb_warm_keep_servers: hundreds of workers may wait on the
 * model at once); a cached CPU demo run took 18.9 s of CPU with servers kept through
 * the model's calls, 32.3 s with one a turn and 38.0 s with neither (tools/bench/README.md,
 * inner).
 */
static struct {
	struct kb_spawn	*server;
	int		 ctl;		/* our end of its socket */
	char		 python[PATH_MAX], runner[PATH_MAX];
} zygote;

/* Servers shared with other processes: an eval's (fb_warm_share), found by its key, or a
 * run's (fb_warm_serve), which its workers join (fb_warm_hold). */
static struct {
	int		 idle_s;	/* > 0: an eval's, started here where none is found */
	struct kb_spawn	*started;	/* a shared server this process started */
	bool		 run;		/* started is a run's: ended by fb_warm_serve_end */
	char		 path[PATH_MAX];	/* a run's server's socket; "": none */
	int		 hold;		/* what its watchers hold for the supervisor; -1 */
} share = { .hold = -1 };

/* Whether runners are forked by a server shared with other processes. */
static bool
sharing(void)
{
	return share.idle_s > 0 || share.path[0] != '\0';
}

/* A watcher's name (PR_SET_NAME, 15 characters at most), sent with each shared fork
 * request (shared_msg): the pid of the process it watches for, whose runner is its child
 * and not that process's (ps; the supervisor's orphan reaping: fb_warm_watcher_for). */
#define FB_WATCHER_NAME		"kfw-%d"

/* Whether this process's server, live or not, is the one for python and runner. */
static bool
zygote_is_for(const char *python, const char *runner)
{
	return zygote.server != NULL && strcmp(zygote.python, python) == 0 &&
	       strcmp(zygote.runner, runner) == 0;
}

static void
zygote_end(void)
{
	if (zygote.server == NULL)
		return;
	(void)close(zygote.ctl);
	kb_spawn_discard(zygote.server);
	memset(&zygote, 0, sizeof(zygote));
}

/* A fork server's share of the host's memory it may keep through the model's call: a
 * server that imported torch holds about 300 MB; with every worker keeping one, the
 * servers may take a quarter of the memory at most. */
#define FB_ZYGOTE_MB		512
#define FB_ZYGOTE_SHARE		4

bool
fb_warm_keep_servers(const struct kb_config *cfg)
{
	long	pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);

	if (pages <= 0 || page <= 0 || cfg->workers <= 0)
		return false;
	return (double)cfg->workers * FB_ZYGOTE_MB * FB_ZYGOTE_SHARE <=
	       (double)pages * (double)page / (1 << 20);
}

void
fb_warm_end(void)
{
	fb_warm_drop();
	zygote_end();
	if (!share.run) {
		kb_spawn_release(share.started);	/* it outlives us, for the next process */
		share.started = NULL;
	}
}

size_t
fb_warm_pids(pid_t out[FB_WARM_PIDS])
{
	size_t	n = 0;

	if (warm.child != NULL)
		out[n++] = kb_spawn_pid(warm.child);
	if (zygote.server != NULL)
		out[n++] = kb_spawn_pid(zygote.server);
	if (share.started != NULL)
		out[n++] = kb_spawn_pid(share.started);
	return n;
}

/* A fork server's start, from a warm runner's (warm_o, whose deadline is none): its argv,
 * its socket as fd 4, no stdin (it reads its socket only), and never under SCHED_IDLE
 * (zygote_for says why). */
static struct kb_spawn_opts
server_opts(const struct kb_spawn_opts *warm_o, const char *const *argv, int sock)
{
	struct kb_spawn_opts	o = *warm_o;

	o.argv = argv;
	o.pass_fd = sock;
	o.stdin_data = NULL;
	o.sched_idle = false;
	return o;
}

/*
 * Shared fork servers (fb_warm_share: kforge eval and baseline, runner.server_idle_s): a
 * process that lives for one evaluation would import torch for each (4-6 s on the GPU
 * hosts, against about a second of work), so its server outlives it. The server is started detached,
 * listening on a Unix socket in the cache (servers/<key>.sock, mode 0600), and found there
 * by the next process whose runners it would start the same way: the key is the
 * environment's (fb_env_key: the Python, torch, the runner's code, the tools) and the
 * server's start (its environment, limits, containment and cores). Each runner it makes
 * is watched by a fork of the server that waits for it, reports its end and kills its
 * orphans (kb_spawn_fork_watched), because the runner is no child of this process; it is
 * still a fork no candidate ran in, in a group of its own, and it dies with its watcher.
 * The server ends once no runner of its own runs and nobody connected for the idle time,
 * or its socket file is gone or replaced (`rm` of the cache's servers/ ends every one),
 * never while a runner it made runs: that runner's watcher, orphaned, would come to the
 * process that started the server, a subreaper, which kills strays. A step whose shared
 * server cannot be had takes this process's own, as without sharing.
 */
void
fb_warm_share(const struct kb_config *cfg)
{
	(void)fb_adopt_strays();
	fb_warm_enable();
	share.idle_s = cfg->runner.warm && cfg->runner.server_idle_s > 0 ?
		       (int)cfg->runner.server_idle_s : 0;
}

/* The shared server's key for runners started as o from python: 32 hex digits. */
static int
shared_key(const struct kb_config *cfg, const struct kb_spawn_opts *o, const char *python,
	   char out[33])
{
	struct kb_buf	 key = KB_BUF_INIT(1u << 16);
	char		 env[65], sha[65], host[256] = "";
	int		 rc;

	if ((rc = fb_env_key(cfg, cfg->eval.device != NULL ? cfg->eval.device : "cpu", python,
			     env)) < 0)
		return rc;
	/* The host: a socket in a cache on a shared filesystem is reached only from the host
	 * that bound it, so each host keeps its own server. */
	(void)gethostname(host, sizeof(host) - 1);
	rc = kb_buf_printf(&key, "protocol=1\nenv=%s\npython=%s\ncwd=%s\nhost=%s\n", env,
			   python, o->cwd != NULL ? o->cwd : "", host);
	/* Not the GPUs: each fork is told its own, and the server never starts CUDA. */
	for (const char *const *e = o->envp; rc == 0 && e != NULL && *e != NULL; e++)
		if (strncmp(*e, "CUDA_VISIBLE_DEVICES=", 21) != 0)
			rc = kb_buf_printf(&key, "E %s\n", *e);
	if (rc == 0)
		rc = kb_buf_printf(&key, "limits=%ld %ld %ld %lld %d\ncontain=%d %d %u %u\n"
				   "cpus=%d %d\n", o->rlimit_cpu_s, o->rlimit_nofile,
				   o->rlimit_nproc, o->rlimit_fsize, o->core_dumps, (int)o->netns,
				   o->drop_user, (unsigned)o->uid, (unsigned)o->gid, o->cpu_first,
				   o->cpu_last);
	if (rc == 0)
		kb_sha256_hex(key.p, key.len, sha);
	kb_buf_clear(&key);
	if (rc == 0) {
		memcpy(out, sha, 32);
		out[32] = '\0';
	}
	return rc;
}

/* path as a socket address. sun_path holds 108 bytes, fewer than a cache under a deep
 * checkout needs (CI's was 109): a longer path is reached through its directory, opened
 * here as *dirfd (-1 where not needed; the caller closes it after bind or connect). */
static bool
shared_addr(const char *path, struct sockaddr_un *a, int *dirfd)
{
	char		 dir[PATH_MAX];
	const char	*slash = strrchr(path, '/');

	memset(a, 0, sizeof(*a));
	a->sun_family = AF_UNIX;
	*dirfd = -1;
	if (strlen(path) < sizeof(a->sun_path))
		return snprintf(a->sun_path, sizeof(a->sun_path), "%s", path) >= 0;
	if (slash == NULL || slash - path >= (ptrdiff_t)sizeof(dir)) {
		errno = ENAMETOOLONG;
		return false;
	}
	memcpy(dir, path, (size_t)(slash - path));
	dir[slash - path] = '\0';
	if ((*dirfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC)) == -1)
		return false;
	return snprintf(a->sun_path, sizeof(a->sun_path), "/proc/self/fd/%d%s", *dirfd, slash) <
	       (int)sizeof(a->sun_path);
}

/* A connection to the server listening at path; -1 where none is, errno saying why. */
static int
shared_connect(const char *path)
{
	struct sockaddr_un	a;
	int			fd = -1, dirfd, rc = -1, err;

	if (shared_addr(path, &a, &dirfd) &&
	    (fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) >= 0)
		do
			rc = connect(fd, (struct sockaddr *)&a, sizeof(a));
		while (rc == -1 && errno == EINTR);
	err = errno;
	if (dirfd >= 0)
		(void)close(dirfd);
	if (rc == -1 && fd >= 0) {
		(void)close(fd);
		fd = -1;
	}
	errno = err;
	return fd;
}

static void	warm_opts(const struct kb_config *cfg, const char *const *argv,
			  const char *visible, struct kb_spawn_opts *o, struct fb_env *env);
static int	warm_paths(const struct kb_config *cfg, char python[PATH_MAX],
			   char staged[PATH_MAX]);

/* A shared server's start: the fork server's (server_opts), listening on lfd, ending
 * after idle seconds without use (0: never; a run's, which its supervisor ends), and
 * kept as the user kforge runs as where runners run as runner.user: each fork drops to
 * it (shared_msg), so that the runner's watcher, which stays, is out of the reach of the
 * candidate it watches (no signal, no trace), whatever sandbox layer the host lacks. */
static int
shared_spawn(const struct kb_spawn_opts *warm_o, const char *python, const char *runner,
	     const char *path, int lfd, int idle_s, bool detach, struct kb_spawn **srv)
{
	struct kb_spawn_opts	 o;
	char			 idle[24];
	const char		*argv[] = { python, runner, "--zygote", "--listen", path, "--idle",
					    idle, NULL };

	snprintf(idle, sizeof(idle), "%d", idle_s);
	o = server_opts(warm_o, argv, lfd);
	o.drop_user = false;
	o.detach = detach;	/* detached: no result pipe either, nothing of it is read */
	return kb_spawn_start(&o, srv);
}

/* A socket listening at path (-1 where none can be), replacing what was there. */
static int
shared_listen(const char *path)
{
	struct sockaddr_un	a;
	int			lfd = -1, dirfd = -1;

	(void)unlink(path);
	if (!shared_addr(path, &a, &dirfd) ||
	    (lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1 ||
	    bind(lfd, (struct sockaddr *)&a, sizeof(a)) == -1 || chmod(path, 0600) == -1 ||
	    listen(lfd, 64) == -1) {
		log_warn("cannot listen at %s", path);
		if (lfd >= 0)
			(void)close(lfd);
		lfd = -1;
	}
	if (dirfd >= 0)
		(void)close(dirfd);
	return lfd;
}

/* A connection to a server at path, started here (o as a warm runner's, its argv
 * replaced) unless another process started one first; -1 where none can be. */
static int
shared_start(const struct kb_spawn_opts *warm_o, const char *python, const char *runner,
	     const char *path, const char *lock_path)
{
	struct kb_spawn		*srv;
	int			 lock, lfd = -1, conn = -1;

	if ((lock = open(lock_path, O_RDWR | O_CREAT | O_CLOEXEC, 0600)) == -1)
		return -1;
	while (flock(lock, LOCK_EX) == -1 && errno == EINTR)
		;
	if ((conn = shared_connect(path)) >= 0)		/* another process was first */
		goto out;
	if ((lfd = shared_listen(path)) < 0 ||
	    shared_spawn(warm_o, python, runner, path, lfd, share.idle_s, true, &srv) < 0)
		goto out;
	kb_spawn_release(share.started);
	share.started = srv;
	conn = shared_connect(path);
out:
	if (lfd >= 0)
		(void)close(lfd);
	(void)close(lock);
	return conn;
}

/* A shared server's fork request for o's start, seeing the GPUs visible, told ahead
 * (warm_cuda_ahead): with the user the child drops to where the server stays
 * (shared_spawn); NULL without memory. */
static char *
shared_msg(const struct kb_spawn_opts *o, const char *visible, bool ahead)
{
	char	 name[16];
	json_t	*m;
	char	*msg;

	snprintf(name, sizeof(name), FB_WATCHER_NAME, (int)getpid());
	m = json_pack("{s:b, s:s, s:b, s:s}", "idle", o->sched_idle, "visible", visible,
		      "cuda_ahead", ahead, "name", name);

	if (m != NULL && o->drop_user)
		json_object_set_new(m, "drop", json_pack("[i, i]", (int)o->uid, (int)o->gid));
	msg = m != NULL ? json_dumps(m, JSON_COMPACT) : NULL;
	json_decref(m);
	return msg;
}

/* A warm runner forked by the shared server for o's start from python and runner, for a
 * step that sees the GPUs visible, told ahead (warm_cuda_ahead): the run's server where
 * this process is a run's worker (fb_warm_hold), never another; else the eval's found by
 * its key, or started; 0 on success. */
static int
shared_fork(const struct kb_config *cfg, const struct kb_spawn_opts *o, const char *python,
	    const char *runner, const char *visible, bool ahead, struct kb_spawn **child)
{
	char	 dir[PATH_MAX], path[PATH_MAX], lock[PATH_MAX], key[33], *msg;
	int	 conn, rc = -KB_EEXEC;

	if ((msg = shared_msg(o, visible, ahead)) == NULL)
		return -KB_ENOMEM;
	if (share.path[0] != '\0') {
		if ((conn = shared_connect(share.path)) >= 0)
			rc = kb_spawn_fork_watched(conn, share.hold, o, msg,
						   FB_START_ALLOWANCE_S * 1000, child);
		else if (errno == ENOENT || errno == ECONNREFUSED) {
			/* Gone (its supervisor removed the socket when it ended) or nobody
			 * listening: this worker's steps take its own server from now on,
			 * without asking again each time. */
			log_info("the run's fork server at %s is gone; using this process's own",
				 share.path);
			share.path[0] = '\0';
			free(msg);
			return rc;
		}
		if (rc < 0)
			log_info("the run's fork server at %s made no runner; using this "
				 "process's own", share.path);
		free(msg);
		return rc;
	}
	if (shared_key(cfg, o, python, key) < 0 ||
	    fb_cache_dir("servers", NULL, dir, sizeof(dir)) < 0 ||
	    snprintf(path, sizeof(path), "%s/%s.sock", dir, key) >= (int)sizeof(path) ||
	    snprintf(lock, sizeof(lock), "%s/%s.lock", dir, key) >= (int)sizeof(lock)) {
		free(msg);
		return -KB_EEXEC;
	}
	/* The server found may be ending (its idle time just ran out): then one of ours. */
	for (int attempt = 0; attempt < 2 && rc < 0; attempt++) {
		if ((attempt > 0 || (conn = shared_connect(path)) < 0) &&
		    (conn = shared_start(o, python, runner, path, lock)) < 0)
			break;
		/* A new server answers once it has imported torch: a runner's start. */
		rc = kb_spawn_fork_watched(conn, -1, o, msg, FB_START_ALLOWANCE_S * 1000, child);
	}
	if (rc < 0)
		log_info("the shared fork server at %s made no runner; using this process's own",
			 path);
	free(msg);
	return rc;
}

/* The run's server let go of: killed with its group (kill), else only forgotten (reaped
 * already, or never started); its socket file removed. */
static void
run_server_forget(bool kill)
{
	if (kill)
		kb_spawn_discard(share.started);
	else
		kb_spawn_release(share.started);
	share.started = NULL;
	if (share.path[0] != '\0')
		(void)unlink(share.path);
	share.path[0] = '\0';
}

/*
 * A run's fork server (fb_warm_serve): one for the run's workers on this host, instead of
 * one each, so that a task's steps cost forks and no import of torch (0.75 s of CPU a
 * one-turn task on the 2-core machine, 43% of it each worker's server importing torch:
 * tools/bench/README.md, scale). It is the supervisor's child, listening on a socket of
 * its own in the cache (servers/run-HOST-PID.sock: a shared cache's other hosts and runs
 * have theirs), kept as kforge's user where runners drop (shared_spawn), and killed with
 * its group when the run ends or the supervisor dies (PDEATHSIG); each watcher leads a
 * group of its own and outlives it. A worker, forked from the supervisor, knows the path;
 * it sends with each request the write end of a pipe the supervisor reads (fb_warm_hold),
 * which every watcher of its runners keeps open until its runner and what that left are
 * gone: a dead worker's supervisor waits for the pipe's end before it frees the worker's
 * GPU slot and starts it again, as it waits for the runners that come to it (reap_all),
 * so that no compiler of the dead worker writes into the build its successor builds.
 */
int
fb_warm_serve(const struct kb_config *cfg)
{
	struct kb_spawn_opts	 o;
	struct fb_env		 env = { .n = 0 };
	char			 python[PATH_MAX], staged[PATH_MAX], dir[PATH_MAX], host[64] = "";
	const char		*argv[] = { NULL };
	int			 lfd, rc;

	if (!cfg->runner.warm || share.started != NULL || warm_paths(cfg, python, staged) < 0 ||
	    fb_cache_dir("servers", NULL, dir, sizeof(dir)) < 0)
		return -KB_EEXEC;
	(void)gethostname(host, sizeof(host) - 1);
	for (char *c = host; *c != '\0'; c++)
		if (*c == '/')
			*c = '_';
	if (snprintf(share.path, sizeof(share.path), "%s/run-%s-%d.sock", dir, host,
		     (int)getpid()) >= (int)sizeof(share.path) ||
	    (lfd = shared_listen(share.path)) < 0) {
		share.path[0] = '\0';
		return -KB_EEXEC;
	}
	warm_opts(cfg, argv, "", &o, &env);
	rc = shared_spawn(&o, python, staged, share.path, lfd, 0, false, &share.started);
	fb_env_clear(&env);
	(void)close(lfd);
	if (rc < 0) {
		share.started = NULL;
		run_server_forget(false);
		return rc;
	}
	share.run = true;
	log_info("runners: forked from the run's server %d (%s)",
		 (int)kb_spawn_pid(share.started), share.path);
	return 0;
}

pid_t
fb_warm_serve_pid(void)
{
	return share.run && share.started != NULL ? kb_spawn_pid(share.started) : 0;
}

bool
fb_warm_serve_reaped(pid_t pid)
{
	if (!share.run || share.started == NULL || kb_spawn_pid(share.started) != pid)
		return false;
	log_warnx("the run's fork server %d ended; workers fork from servers of their own",
		  (int)pid);
	run_server_forget(false);
	return true;
}

void
fb_warm_serve_end(void)
{
	if (!share.run)
		return;
	run_server_forget(true);
	share.run = false;
}

pid_t
fb_warm_watcher_for(pid_t pid)
{
	char	 path[64], *name = NULL;
	size_t	 len;
	int	 watched = 0, end = 0;

	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	if (kb_read_file(path, 64, &name, &len) < 0 ||
	    sscanf(name, FB_WATCHER_NAME "%n", &watched, &end) != 1 ||
	    (name[end] != '\n' && name[end] != '\0') || watched <= 0)
		watched = 0;
	free(name);
	return (pid_t)watched;
}

void
fb_warm_hold(int fd)
{
	/* The supervisor's: not ours to end or spare (the server is no child of ours). */
	kb_spawn_release(share.started);
	share.started = NULL;
	share.run = false;
	share.hold = fd;
}

/* The server for python and runner, started (o as a warm runner's, its argv replaced,
 * its cores its children's) where there is none; 0, or -1 where none can be.
 * Never under SCHED_IDLE, as a warm runner waiting ahead is: the worker waits for the
 * server's answer at once (its import, then each fork), so an idle server stalled the
 * worker for as long as other work kept the cores busy: with two normal-priority loops
 * on the 2-core machine, 13 steps of a cached CPU demo each waited out the 300 s
 * allowance, and in the test suite a run's GENERATE took 2-32 s a task with the replay
 * provider. Its import is once per worker where servers are kept (fb_warm_keep_servers);
 * a child it forks waits under SCHED_IDLE where o asks (the message says so). */
static int
zygote_for(const struct kb_spawn_opts *warm_o, const char *python, const char *runner)
{
	const char		*argv[] = { python, runner, "--zygote", NULL };
	struct kb_spawn_opts	 o;
	int			 sv[2], arg;

	if (zygote_is_for(python, runner)) {
		if (!kb_spawn_exited(zygote.server))
			return 0;
		log_info("the fork server %d is gone; starting another",
			 (int)kb_spawn_pid(zygote.server));
	}
	zygote_end();
	if (prctl(PR_GET_CHILD_SUBREAPER, (unsigned long)&arg) == -1 || arg == 0)
		return -1;	/* its children would not come back to this process */
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == -1)
		return -1;
	o = server_opts(warm_o, argv, sv[1]);
	if (kb_spawn_start(&o, &zygote.server) < 0) {
		zygote.server = NULL;
		(void)close(sv[0]);
		(void)close(sv[1]);
		return -1;
	}
	(void)close(sv[1]);
	zygote.ctl = sv[0];
	snprintf(zygote.python, sizeof(zygote.python), "%s", python);
	snprintf(zygote.runner, sizeof(zygote.runner), "%s", runner);
	return 0;
}

/* Whether this process has a live server for python and runner, or shares one. */
static bool
zygote_serves(const char *python, const char *runner)
{
	return sharing() || (zygote_is_for(python, runner) && !kb_spawn_exited(zygote.server));
}

/* A warm runner forked by the server for python and runner, for a step that sees the GPUs
 * visible, told ahead (warm_cuda_ahead); 0 on success. */
static int
zygote_fork(const struct kb_config *cfg, const struct kb_spawn_opts *o, const char *python,
	    const char *runner, const char *visible, bool ahead, struct kb_spawn **child)
{
	json_t	*m;
	char	*msg;
	int	 rc;

	if (sharing() && shared_fork(cfg, o, python, runner, visible, ahead, child) == 0)
		return 0;
	if (zygote_for(o, python, runner) < 0)
		return -KB_EEXEC;
	m = json_pack("{s:i, s:b, s:s, s:b}", "parent", (int)getpid(), "idle", o->sched_idle,
		      "visible", visible, "cuda_ahead", ahead);
	msg = m != NULL ? json_dumps(m, JSON_COMPACT) : NULL;
	json_decref(m);
	if (msg == NULL)
		return -KB_ENOMEM;
	/* A new server answers once it has imported torch: a runner's start, with the
	 * allowance a runner's start has (tens of seconds on a loaded machine). */
	if ((rc = kb_spawn_fork(zygote.ctl, o, msg, FB_START_ALLOWANCE_S * 1000, child)) < 0) {
		log_info("the fork server %d made no runner; starting one the plain way",
			 (int)kb_spawn_pid(zygote.server));
		zygote_end();
	}
	free(msg);
	return rc;
}

/*
 * Whether a warm runner imports torch under SCHED_IDLE: on the CPU, where the steps that
 * time share the host's cores with it. A waiting runner's import (a second of CPU, one
 * per worker) on the timing core made whole turns of a run time at two or three times
 * their level: the same L2_1 reference timed 7.4 ms, and 15.5 ms with one `import torch`
 * looping on its core, while the candidate beside it held 1.3 ms (tools/bench/README.md,
 * repeat). Under SCHED_IDLE it runs only where a core has nothing else to do, and
 * warm_take puts it back to SCHED_OTHER at the hand-over; that takes CAP_SYS_NICE or an
 * RLIMIT_NICE of 20 (an unprivileged process may not leave SCHED_IDLE otherwise), so
 * without either it is not used. On a GPU host the warm runners start on the builds'
 * cores instead (fb_warm_cpu_range), where idling them would only delay them.
 */
static bool
warm_idle(const struct kb_config *cfg)
{
	struct rlimit	rl;

	if (fb_on_cuda(cfg, NULL))
		return false;
	return geteuid() == 0 ||
	       (getrlimit(RLIMIT_NICE, &rl) == 0 &&
		(rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= 20));
}

/* Where a warm runner imports torch before its request says which step it is for: on a
 * GPU host that keeps cores for the steps on the GPU, on the builds' cores, so that the
 * imports of the workers' next runners (seconds of CPU each, eight workers) never land on
 * the cores of a timing; the runner moves to its step's cores when it reads the request
 * (pin_cpus in the runner): [*first, *last) of a host of cores, true where there is
 * such a set. On the CPU it is left where it is (with the builds on one core of two, the
 * imports there made every demo run 45% slower: tools/bench/README.md, repeat) and waits
 * under SCHED_IDLE instead (warm_idle). */
bool
fb_warm_cpu_range(const struct kb_config *cfg, long cores, int *first, int *last)
{
	long	split = fb_build_cores(cfg, true, cores);

	if (!fb_on_cuda(cfg, NULL) || cores < 2 || split >= cores || split > INT_MAX)
		return false;
	*first = 0;
	*last = (int)split;
	return true;
}

/* A warm runner's start: its environment (env, the caller's to clear) and options, with
 * the widest deadline's limits (its step is not known yet) and no deadline of its own;
 * what the fork servers' key is made of (shared_key), so every runner forked the same
 * way comes from the same server. */
static void
warm_opts(const struct kb_config *cfg, const char *const *argv, const char *visible,
	  struct kb_spawn_opts *o, struct fb_env *env)
{
	long	deadline = cfg->eval.compile_timeout_s > cfg->eval.timeout_s ?
			   cfg->eval.compile_timeout_s : cfg->eval.timeout_s;

	memset(o, 0, sizeof(*o));
	fb_env_build(env, cfg, NULL, visible, false);
	fb_env_contained(env, NULL);
	o->argv = argv;
	o->envp = (const char *const *)env->v;
	o->cwd = "/";
	o->stdin_data = "";	/* a pipe, written at the hand-over */
	fb_runner_limits(cfg, o, deadline > 0 && deadline < INT_MAX / 1000 ? (int)deadline : 300);
	(void)fb_warm_cpu_range(cfg, sysconf(_SC_NPROCESSORS_ONLN), &o->cpu_first, &o->cpu_last);
	o->sched_idle = warm_idle(cfg);
	o->timeout_ms = 0;
}

/* visible NULL: no runner step follows (warm_next_visible), none is started. build: the
 * step it is for may build (a precompile), so torch's extension machinery is imported
 * too; an execute or profile loads its precompile's build without it (LOAD_MEMO in the
 * runner). ahead: it starts CUDA's driver before its request (warm_cuda_ahead). */
static void
warm_start_with(const struct kb_config *cfg, const char *python, const char *runner,
		const char *visible, bool build, bool ahead)
{
	struct kb_spawn_opts	 o;
	struct fb_env		 env = { .n = 0 };
	const char		*argv[] = { python, runner, build ? "--warm" : "--warm-load",
					    ahead ? "--cuda-ahead" : NULL, NULL };

	if (!warm.enabled || !cfg->runner.warm || warm.child != NULL || visible == NULL)
		return;
	warm_opts(cfg, argv, visible, &o, &env);
	warm.idle = o.sched_idle;
	if (zygote_fork(cfg, &o, python, runner, visible, ahead, &warm.child) == 0 ||
	    kb_spawn_start(&o, &warm.child) == 0) {
		snprintf(warm.python, sizeof(warm.python), "%s", python);
		snprintf(warm.runner, sizeof(warm.runner), "%s", runner);
		snprintf(warm.visible, sizeof(warm.visible), "%s", visible);
	}
	fb_env_clear(&env);
}

/* The Python and the (staged) runner a step of cfg's runs, as fb_run finds them; 0. */
static int
warm_paths(const struct kb_config *cfg, char python[PATH_MAX], char staged[PATH_MAX])
{
	char	runner[PATH_MAX], err[512];

	if (fb_find_python(cfg, python, PATH_MAX, err, sizeof(err)) < 0 ||
	    kb_path_join(runner, sizeof(runner), kb_home(), "feedback/kforge_runner.py") < 0 ||
	    fb_stage_input(runner, staged, PATH_MAX) < 0)
		return -1;
	return 0;
}

void
fb_warm_start(const struct kb_config *cfg)
{
	char	python[PATH_MAX], staged[PATH_MAX];

	if (!warm.enabled || !cfg->runner.warm || warm.child != NULL ||
	    warm_paths(cfg, python, staged) < 0)
		return;
	warm_start_with(cfg, python, staged, "", true, false);	/* a precompile comes next */
}

/* The GPUs the runner step after this one will see, or NULL when no runner step is to
 * follow, so that none is started to be killed unused: a precompile is followed by an
 * execute, a baseline or probe by an execute, all on the same GPU; an execute by a
 * profile only with P feedback, and when it was correct (done: NULL unless it was;
 * under way: not known yet); on a GPU a profile by the next of its runs (the
 * reference's, the candidate's trace, its metrics: the last one's warm runner goes
 * unused), on the CPU by nothing (one run). After a profile, or an execute with no
 * profile to follow, comes the next turn's GENERATE, which kills a waiting runner for
 * the length of the model's call (fb_warm_drop). */
static const char *
warm_next_visible(const struct kb_config *cfg, const struct fb_request *req, bool cuda,
		  const struct fb_outcome *done)
{
	if (req->mode == FB_EXECUTE &&
	    (!cfg->refinement.feedback_p || (done != NULL && !done->correct)))
		return NULL;
	if (req->mode == FB_PROFILE && !(cuda && cfg->refinement.feedback_p))
		return NULL;
	return cuda ? warm.last_gpu : "";
}

/*
 * Whether the warm runner that follows req starts CUDA's driver before its request
 * (kforge_runner.py, cuda_ahead): only the execute after a precompile, whose runner is
 * forked while the precompile builds and then waits for the GPU; its step then holds the
 * GPU 0.1-0.2 s less (the driver's start; 0.24 s with the context, H100). The context
 * waits for the step's lease: made beside another step's timing on the same GPU, it
 * stalls that step's synchronize (the runner's docstring has the figures). None for a
 * profile, whose CUPTI injection the driver loads at its start, with the request's
 * settings.
 */
static bool
warm_cuda_ahead(const struct kb_config *cfg, const struct fb_request *req, const char *visible)
{
	/* Not where runners apply Landlock, which binds only the thread that applies it:
	 * the driver's threads would be free of it. */
	return req->mode == FB_PRECOMPILE && fb_on_cuda(cfg, req) && visible != NULL &&
	       visible[0] != '\0' && !fb_contain_sandboxed();
}

void
fb_warm_built(const struct kb_config *cfg, const struct fb_request *req)
{
	char		 python[PATH_MAX], staged[PATH_MAX];
	const char	*next;

	if (!warm.enabled || !cfg->runner.warm || req->mode != FB_PRECOMPILE ||
	    !fb_on_cuda(cfg, req) || (warm.child != NULL && warm.visible[0] != '\0') ||
	    warm_paths(cfg, python, staged) < 0)
		return;
	next = warm_next_visible(cfg, req, true, NULL);
	fb_warm_drop();
	warm_start_with(cfg, python, staged, next, false, warm_cuda_ahead(cfg, req, next));
}

/* ------------------------------------------------------------ a step's runner */

/* The warm runner for a step run by python and runner that sees visible (NULL: the
 * variable unset), if there is a live one started for exactly that. */
static struct kb_spawn *
warm_take(const char *python, const char *runner, const char *visible)
{
	struct kb_spawn	*child = warm.child;

	warm.child = NULL;
	if (child == NULL)
		return NULL;
	if (strcmp(warm.python, python) != 0 || strcmp(warm.runner, runner) != 0 ||
	    visible == NULL || strcmp(warm.visible, visible) != 0) {
		kb_spawn_discard(child);
		return NULL;
	}
	if (kb_spawn_exited(child)) {
		log_info("the warm runner %d died while it waited; starting one afresh",
			 (int)kb_spawn_pid(child));
		kb_spawn_discard(child);
		return NULL;
	}
	if (warm.idle && kb_sched_normal(kb_spawn_pid(child)) < 0) {
		log_info("the warm runner %d cannot leave SCHED_IDLE; starting one afresh",
			 (int)kb_spawn_pid(child));
		kb_spawn_discard(child);
		return NULL;
	}
	return child;
}

int
fb_warm_request(json_t *jreq, const struct fb_env *env, const struct kb_spawn_opts *o)
{
	json_t	*e = json_object();

	if (e == NULL)
		return -KB_ENOMEM;
	for (int i = 0; i < env->n; i++) {
		const char *eq = strchr(env->v[i], '=');
		char name[256];

		if (eq == NULL || (size_t)(eq - env->v[i]) >= sizeof(name))
			continue;
		memcpy(name, env->v[i], (size_t)(eq - env->v[i]));
		name[eq - env->v[i]] = '\0';
		json_object_set_new(e, name, json_string(eq + 1));
	}
	json_object_set_new(jreq, "env", e);
	json_object_set_new(jreq, "rlimit_cpu_s", json_integer(o->rlimit_cpu_s));
	return 0;
}

int
fb_warm_fork(const struct kb_config *cfg, const char *python, const char *runner,
		   const char *visible, struct kb_spawn **child)
{
	struct kb_spawn_opts	 o;
	struct fb_env		 env = { .n = 0 };
	const char		*argv[] = { python, runner, "--warm-load", NULL };
	int			 rc;

	if (!zygote_serves(python, runner))
		return -KB_EEXEC;
	warm_opts(cfg, argv, visible, &o, &env);
	o.sched_idle = false;	/* its request comes at once */
	rc = zygote_fork(cfg, &o, python, runner, visible, false, child);
	fb_env_clear(&env);
	return rc;
}

struct kb_spawn *
fb_warm_take_for(const struct kb_config *cfg, const struct fb_request *req, const char *python,
		 const char *runner, const char *visible)
{
	struct kb_spawn	*ahead;

	if (visible != NULL && visible[0] != '\0')
		snprintf(warm.last_gpu, sizeof(warm.last_gpu), "%s", visible);
	/* The selftest, before the run's first step: the run's server imports torch beside
	 * it (sup_start), and a fork of that spares a second import reading the same
	 * libraries (on a fresh GPU host, both cold). */
	if (req->mode == FB_SELFTEST && sharing() && !req->cold)
		return fb_warm_fork(cfg, python, runner, visible, &ahead) == 0 ? ahead : NULL;
	if (!warm_mode(req->mode) || req->cold)
		return NULL;
	ahead = warm_take(python, runner, visible);
	/* None waiting for these GPUs (a build found in the cache left a precompile's
	 * runner waiting, a lease moved the worker to another GPU), but a server that
	 * can fork one told them: a fork, not a cold start's import. */
	if (ahead == NULL && visible != NULL && zygote_serves(python, runner)) {
		warm_start_with(cfg, python, runner, visible, req->mode == FB_PRECOMPILE, false);
		ahead = warm_take(python, runner, visible);
	}
	return ahead;
}

void
fb_warm_put_back(struct kb_spawn *child)
{
	if (child != NULL && warm.child == NULL)
		warm.child = child;
	else
		kb_spawn_discard(child);
}

void
fb_warm_start_next(const struct kb_config *cfg, const struct fb_request *req,
		   const char *python, const char *runner, const struct fb_outcome *done)
{
	const char	*next;

	if (!warm_mode(req->mode))
		return;
	next = warm_next_visible(cfg, req, fb_on_cuda(cfg, req), done);
	warm_start_with(cfg, python, runner, next, false, warm_cuda_ahead(cfg, req, next));
}
