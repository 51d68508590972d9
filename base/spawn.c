/*
 * spawn.c: the one way kforge starts a child (git run-command.c, s6 cspawn).
 *
 * Everything the child needs is built before fork(); between fork() and execve() the
 * child makes only async-signal-safe calls. All signals are blocked around fork() so
 * that none of the parent's handlers can run in the child; the child resets every
 * disposition to SIG_DFL and then installs an empty mask (the supervisor and workers
 * block signals for signalfd, and a child must not inherit that). Exec failure comes
 * back over a CLOEXEC pipe as {step, errno}; EOF on it means execve() succeeded.
 * Containment (a network namespace, an unprivileged uid) is the child's first act after
 * setpgid, so that everything after it, exec included, runs contained.
 *
 * SIGPIPE: library code never changes the process-wide disposition. Each write to
 * the child's stdin blocks SIGPIPE for the calling thread, and when the write fails
 * with EPIPE the SIGPIPE it raised is consumed with sigtimedwait() before the mask is
 * restored (unless one was already pending). Callers need not ignore SIGPIPE.
 *
 * The child is reaped with waitpid(pid), never waitpid(-1). Its exit is noticed with
 * waitid(WNOWAIT) first, so that the whole group can be SIGKILLed while the zombie
 * still pins the group id (no pid-reuse race), and only then reaped.
 *
 * A watched child (kb_spawn_fork_watched) is not ours: its parent is a watcher process of
 * a fork server that outlives us, which waits for it, kills its group and its orphans and
 * reports, over the connection we hold, its wait status. Signals go to it as lines on that
 * connection, for the watcher to send while the child is still unreaped (the same
 * guarantee as above), and closing the connection has the watcher kill the group.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/base.h"
#include "base/banned.h"

#define SPAWN_TICK_MS		100	/* should_stop and deadline granularity */
#define SPAWN_DRAIN_MS		1000	/* pipes may stay open this long after the reap */
#define SPAWN_CHUNK		65536
#define SPAWN_READS_PER_WAKE	16	/* a fast writer cannot starve the other fds */
#define SPAWN_FD_SCAN_CAP	65536	/* close() loop bound when close_range() fails */
#define SPAWN_MIN_FD		5	/* child-side fds live above 0..4 before dup2 */
#define SPAWN_PASS_FD		4	/* where pass_fd lands in the child */
#define SPAWN_MAX_LIMITS	5

enum spawn_step {
	STEP_SETPGID = 1, STEP_NETNS, STEP_USERNS, STEP_IDMAP, STEP_SETGROUPS, STEP_SETGID,
	STEP_SETUID, STEP_PDEATHSIG, STEP_SIGMASK, STEP_DUP2, STEP_RLIMIT, STEP_CHDIR,
	STEP_EXEC, STEP__MAX
};
static const char *const step_names[STEP__MAX] = {
	[STEP_SETPGID] = "setpgid", [STEP_NETNS] = "unshare(CLONE_NEWNET)",
	[STEP_USERNS] = "unshare(CLONE_NEWUSER|CLONE_NEWNET)",
	[STEP_IDMAP] = "writing the user namespace's uid/gid map",
	[STEP_SETGROUPS] = "setgroups", [STEP_SETGID] = "setgid", [STEP_SETUID] = "setuid",
	[STEP_PDEATHSIG] = "prctl(PDEATHSIG)",
	[STEP_SIGMASK] = "sigprocmask", [STEP_DUP2] = "dup2", [STEP_RLIMIT] = "setrlimit",
	[STEP_CHDIR] = "chdir", [STEP_EXEC] = "execve",
};

struct child_err {
	int	step;
	int	err;
};

/* Everything the child reads between fork and exec; no allocation happens there. */
struct spawn_plan {
	char *const	*argv;
	char *const	*envp;
	const char	*cwd;
	pid_t		 parent;
	int		 fd_in, fd_out, fd_res, fd_err;	/* child ends, all >= SPAWN_MIN_FD */
	int		 fd_pass;	/* pass_fd, >= SPAWN_MIN_FD; -1: none */
	int		 fd_scan_cap;
	enum kb_netns	 netns;
	bool		 stderr_apart;	/* fd_res is the child's stderr, not its fd 3 */
	char		 uid_map[48], gid_map[48];	/* KB_NETNS_USERNS: "id id 1" */
	bool		 drop_user;
	uid_t		 uid;
	gid_t		 gid;
	bool		 pin;		/* cpus set: sched_setaffinity before exec */
	bool		 detach;	/* a session of its own, no PDEATHSIG */
	bool		 sched_idle;
	cpu_set_t	 cpus;
	int		 nlim;
	struct {
		int		res;
		struct rlimit	rl;
	}		 lim[SPAWN_MAX_LIMITS];
};

/* Parent-side state of one run. */
struct spawn_io {
	pid_t		 pid;
	int		 out, res, in, err, pidfd;	/* parent ends; -1 when closed */
	int		 watch;		/* a watched child's watcher connection; -1: ours */
	char		 wline[64];	/* the watcher's report, as far as it came */
	size_t		 wgot;
	int		 strays_running, strays_killed;	/* the watcher's count */
	const char	*in_p;
	size_t		 in_left;
	char		*chunk;
	int64_t		 start, deadline, kill_at, drain_until;
	bool		 termed, killed, exited, timed_out, stopped;
	int		 status;
};

static void
close_fd(int *fd)
{
	if (*fd >= 0) {
		(void)close(*fd);
		*fd = -1;
	}
}

/* ------------------------------------------------------------------ child */

static void __attribute__((noreturn))
child_fail(const struct spawn_plan *pl, int step)
{
	struct child_err	ce = { step, errno };
	ssize_t			n;

	do
		n = write(pl->fd_err, &ce, sizeof(ce));
	while (n == -1 && errno == EINTR);
	_exit(127);
}

static void
child_close_fds(const struct spawn_plan *pl, int lo)
{
	int	fd;

	/* fd_err must survive until execve() closes it (CLOEXEC). */
	if ((lo > pl->fd_err - 1 || close_range((unsigned)lo, (unsigned)pl->fd_err - 1, 0) == 0) &&
	    close_range((unsigned)pl->fd_err + 1, ~0U, 0) == 0)
		return;
	for (fd = lo; fd < pl->fd_scan_cap; fd++)
		if (fd != pl->fd_err)
			(void)close(fd);
}

static bool
write_proc(const char *path, const char *text)
{
	size_t	len = strlen(text);
	ssize_t	n;
	int	fd, saved;

	if ((fd = open(path, O_WRONLY | O_CLOEXEC)) == -1)
		return false;
	do
		n = write(fd, text, len);
	while (n == -1 && errno == EINTR);
	saved = errno;
	(void)close(fd);
	errno = saved;
	return n == (ssize_t)len;
}

/* The network namespace first (as root it needs the capabilities the uid switch
 * drops), then the credentials, most to least privileged: groups, gid, uid. */
static void
child_contain(const struct spawn_plan *pl)
{
	if (pl->netns == KB_NETNS_NEW && unshare(CLONE_NEWNET) == -1)
		child_fail(pl, STEP_NETNS);
	if (pl->netns == KB_NETNS_USERNS) {
		if (unshare(CLONE_NEWUSER | CLONE_NEWNET) == -1)
			child_fail(pl, STEP_USERNS);
		/* Mapped to themselves, so that files keep their owners' names; setgroups
		 * must be denied before an unprivileged process may write a gid_map. */
		if (!write_proc("/proc/self/setgroups", "deny") ||
		    !write_proc("/proc/self/uid_map", pl->uid_map) ||
		    !write_proc("/proc/self/gid_map", pl->gid_map))
			child_fail(pl, STEP_IDMAP);
	}
	if (!pl->drop_user)
		return;
	if (setgroups(1, &pl->gid) == -1)
		child_fail(pl, STEP_SETGROUPS);
	if (setgid(pl->gid) == -1)
		child_fail(pl, STEP_SETGID);
	if (setuid(pl->uid) == -1)
		child_fail(pl, STEP_SETUID);
}

/* Async-signal-safe calls only from here to execve(). */
static void __attribute__((noreturn))
child_exec(const struct spawn_plan *pl)
{
	struct sigaction	sa;
	sigset_t		empty;
	int			sig, i;

	if (pl->detach ? setsid() == -1 : setpgid(0, 0) == -1)
		child_fail(pl, STEP_SETPGID);
	/* Before PDEATHSIG: a change of credentials clears it. */
	child_contain(pl);
	if (!pl->detach && prctl(PR_SET_PDEATHSIG, SIGKILL) == -1)
		child_fail(pl, STEP_PDEATHSIG);
	if (!pl->detach && getppid() != pl->parent)
		_exit(127);	/* the parent died before PDEATHSIG was armed */

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_DFL;
	sigemptyset(&sa.sa_mask);
	for (sig = 1; sig < NSIG; sig++)
		(void)sigaction(sig, &sa, NULL);	/* EINVAL for KILL, STOP, libc-internal */
	sigemptyset(&empty);
	if (sigprocmask(SIG_SETMASK, &empty, NULL) == -1)
		child_fail(pl, STEP_SIGMASK);

	/* Every source fd is >= SPAWN_MIN_FD, so no dup2 clobbers another source and
	 * each dup2 creates a fresh descriptor without FD_CLOEXEC. */
	if (dup2(pl->fd_in, 0) == -1 || dup2(pl->fd_out, 1) == -1 ||
	    dup2(pl->stderr_apart ? pl->fd_res : pl->fd_out, 2) == -1)
		child_fail(pl, STEP_DUP2);
	if (pl->fd_res >= 0 && !pl->stderr_apart && dup2(pl->fd_res, 3) == -1)
		child_fail(pl, STEP_DUP2);
	if (pl->fd_pass >= 0 && dup2(pl->fd_pass, SPAWN_PASS_FD) == -1)
		child_fail(pl, STEP_DUP2);
	child_close_fds(pl, pl->fd_pass >= 0 ? SPAWN_PASS_FD + 1 :
			    pl->fd_res >= 0 && !pl->stderr_apart ? 4 : 3);

	for (i = 0; i < pl->nlim; i++)
		if (setrlimit(pl->lim[i].res, &pl->lim[i].rl) == -1)
			child_fail(pl, STEP_RLIMIT);
	if (pl->cwd != NULL && chdir(pl->cwd) == -1)
		child_fail(pl, STEP_CHDIR);
	if (pl->pin)
		(void)sched_setaffinity(0, sizeof(pl->cpus), &pl->cpus);	/* a placement */
	if (pl->sched_idle) {
		struct sched_param	sp = { 0 };

		(void)sched_setscheduler(0, SCHED_IDLE, &sp);	/* a courtesy, like the above */
	}
	execve(pl->argv[0], pl->argv, pl->envp);
	child_fail(pl, STEP_EXEC);
}

/* ------------------------------------------------------------ before fork */

/* Child-side fds must not sit on 0..3, where the child's dup2 calls would land. */
static int
fd_move_high(int *fd)
{
	int	nfd;

	if (*fd >= SPAWN_MIN_FD)
		return 0;
	if ((nfd = fcntl(*fd, F_DUPFD_CLOEXEC, SPAWN_MIN_FD)) == -1)
		return -1;
	(void)close(*fd);
	*fd = nfd;
	return 0;
}

static int
set_nonblock(int fd)
{
	int	fl;

	if ((fl = fcntl(fd, F_GETFL)) == -1)
		return -1;
	return fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

/* A pipe whose child end is *child and parent end is *parent (non-blocking). */
static int
make_pipe(int *parent, int *child, bool child_reads)
{
	int	p[2];

	if (pipe2(p, O_CLOEXEC) == -1)
		return -1;
	*child = child_reads ? p[0] : p[1];
	*parent = child_reads ? p[1] : p[0];
	return set_nonblock(*parent);
}

static void
plan_limit(struct spawn_plan *pl, int res, rlim_t want, rlim_t hard_extra)
{
	struct rlimit	cur, rl;

	rl.rlim_cur = want;
	rl.rlim_max = want + hard_extra;
	/* Never ask for more than the hard limit: raising it would fail with EPERM. */
	if (getrlimit(res, &cur) == 0 && cur.rlim_max != RLIM_INFINITY) {
		if (rl.rlim_cur > cur.rlim_max)
			rl.rlim_cur = cur.rlim_max;
		if (rl.rlim_max > cur.rlim_max)
			rl.rlim_max = cur.rlim_max;
	}
	pl->lim[pl->nlim].res = res;
	pl->lim[pl->nlim].rl = rl;
	pl->nlim++;
}

static void
plan_limits(struct spawn_plan *pl, const struct kb_spawn_opts *o)
{
	struct rlimit	nofile;

	/* CPU: SIGXCPU at the soft limit, SIGKILL one second later. */
	if (o->rlimit_cpu_s > 0)
		plan_limit(pl, RLIMIT_CPU, (rlim_t)o->rlimit_cpu_s, 1);
	if (o->rlimit_fsize > 0)
		plan_limit(pl, RLIMIT_FSIZE, (rlim_t)o->rlimit_fsize, 0);
	if (o->rlimit_nofile > 0)
		plan_limit(pl, RLIMIT_NOFILE, (rlim_t)o->rlimit_nofile, 0);
	if (o->rlimit_nproc > 0)
		plan_limit(pl, RLIMIT_NPROC, (rlim_t)o->rlimit_nproc, 0);
	if (!o->core_dumps)
		plan_limit(pl, RLIMIT_CORE, 0, 0);

	pl->fd_scan_cap = SPAWN_FD_SCAN_CAP;
	if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur != RLIM_INFINITY &&
	    nofile.rlim_cur < SPAWN_FD_SCAN_CAP)
		pl->fd_scan_cap = (int)nofile.rlim_cur;
}

static void
plan_cpus(struct spawn_plan *pl, const struct kb_spawn_opts *o)
{
	pl->sched_idle = o->sched_idle;
	pl->pin = false;
	CPU_ZERO(&pl->cpus);
	for (int c = o->cpu_first < 0 ? 0 : o->cpu_first; c < o->cpu_last && c < CPU_SETSIZE;
	     c++) {
		CPU_SET(c, &pl->cpus);
		pl->pin = true;
	}
}

static void
plan_contain(struct spawn_plan *pl, const struct kb_spawn_opts *o)
{
	pl->netns = o->netns;
	pl->stderr_apart = o->stderr_apart;
	pl->drop_user = o->drop_user;
	pl->uid = o->uid;
	pl->gid = o->gid;
	snprintf(pl->uid_map, sizeof(pl->uid_map), "%lu %lu 1\n", (unsigned long)geteuid(),
		 (unsigned long)geteuid());
	snprintf(pl->gid_map, sizeof(pl->gid_map), "%lu %lu 1\n", (unsigned long)getegid(),
		 (unsigned long)getegid());
}

/* ------------------------------------------------------------ parent side */

/* SIGPIPE-safe write without touching the process-wide disposition (see top). */
static ssize_t
write_nosigpipe(int fd, const void *p, size_t n)
{
	static const struct timespec	zero = { 0, 0 };
	sigset_t			pipe_set, old, pending;
	bool				was_pending;
	ssize_t				w;
	int				saved;

	sigemptyset(&pipe_set);
	sigaddset(&pipe_set, SIGPIPE);
	was_pending = sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE) == 1;
	pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
	do
		w = write(fd, p, n);
	while (w == -1 && errno == EINTR);
	saved = errno;
	if (w == -1 && saved == EPIPE && !was_pending)
		while (sigtimedwait(&pipe_set, NULL, &zero) == -1 && errno == EINTR)
			;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	errno = saved;
	return w;
}

static void
feed_stdin(struct spawn_io *io)
{
	size_t	n;
	ssize_t	w;

	while (io->in >= 0 && io->in_left > 0) {
		n = io->in_left < SPAWN_CHUNK ? io->in_left : SPAWN_CHUNK;
		if ((w = write_nosigpipe(io->in, io->in_p, n)) == -1) {
			if (errno == EAGAIN)
				return;
			if (errno != EPIPE)
				log_warn("spawn: cannot write to the stdin of pid %d", (int)io->pid);
			close_fd(&io->in);	/* the child stopped reading: not an error */
			return;
		}
		io->in_p += w;
		io->in_left -= (size_t)w;
	}
	close_fd(&io->in);	/* all delivered: the child sees EOF */
}

/* Reads what is there (bounded per wake-up); closes fd at EOF or on error. */
static void
drain_fd(struct spawn_io *io, int *fd, struct kb_buf *b)
{
	ssize_t	n;
	int	i;

	for (i = 0; *fd >= 0 && i < SPAWN_READS_PER_WAKE; i++) {
		n = read(*fd, io->chunk, SPAWN_CHUNK);
		if (n > 0) {
			kb_buf_append_trunc(b, io->chunk, (size_t)n);	/* keeps draining past cap */
			continue;
		}
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 && errno == EAGAIN)
			return;
		if (n == -1)
			log_warn("spawn: cannot read the output of pid %d", (int)io->pid);
		close_fd(fd);
	}
}

static void
kill_group(pid_t pid, int sig)
{
	if (killpg(pid, sig) == -1 && errno != ESRCH)
		log_warn("spawn: killpg %d", (int)pid);
}

/* sig to the child's group: ours directly, a watched one's through its watcher. */
static void
signal_child(struct spawn_io *io, int sig)
{
	char	line[16];
	int	n;

	if (io->watch < 0) {
		kill_group(io->pid, sig);
		return;
	}
	n = snprintf(line, sizeof(line), "%d\n", sig);
	if (write_nosigpipe(io->watch, line, (size_t)n) != n && errno != EPIPE &&
	    errno != EAGAIN)
		log_warn("spawn: cannot ask the watcher of pid %d for signal %d", (int)io->pid,
			 sig);
}

static void
terminate(struct spawn_io *io, int grace_ms, int64_t now)
{
	if (io->termed)
		return;
	signal_child(io, SIGTERM);
	signal_child(io, SIGCONT);	/* a stopped group would never see the SIGTERM */
	io->termed = true;
	io->kill_at = now + grace_ms;
}

/* A watched child's end, once its watcher has reported it: "exit STATUS RUNNING KILLED"
 * (its wait status, and the orphans it killed running and found dead), then EOF. A
 * watcher gone without a report lost the child (the watcher's death kills it: its
 * PDEATHSIG), reported as an exit of 127 like a child reaped elsewhere. */
static bool
watched_exit(struct spawn_io *io)
{
	int	status, running, killed;
	ssize_t	n;

	for (;;) {
		if (io->wgot >= sizeof(io->wline) - 1) {
			n = 0;		/* no report is this long: treat as lost */
			break;
		}
		n = read(io->watch, io->wline + io->wgot, sizeof(io->wline) - 1 - io->wgot);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 && errno == EAGAIN)
			return false;
		if (n <= 0)
			break;
		io->wgot += (size_t)n;
		io->wline[io->wgot] = '\0';
		if (strchr(io->wline, '\n') != NULL)
			break;
	}
	io->wline[io->wgot] = '\0';
	if (n > 0 && sscanf(io->wline, "exit %d %d %d", &status, &running, &killed) == 3) {
		io->status = status;
		io->strays_running = running > 0 ? running : 0;
		io->strays_killed = killed > 0 ? killed : 0;
	} else {
		log_warnx("spawn: the watcher of pid %d ended without its report", (int)io->pid);
		io->status = W_EXITCODE(127, 0);
	}
	close_fd(&io->watch);
	io->exited = true;
	return true;
}

/* True once the child has exited; it is then reaped with its group killed first. */
static bool
check_exit(struct spawn_io *io)
{
	siginfo_t	si;
	pid_t		w;

	if (io->watch >= 0)
		return watched_exit(io);
	memset(&si, 0, sizeof(si));
	if (waitid(P_PID, (id_t)io->pid, &si, WEXITED | WNOHANG | WNOWAIT) == -1) {
		if (errno == EINTR)
			return false;
		/* Someone else reaped it (a waitpid(-1) elsewhere in this process): its
		 * pid may be reused already, so no killpg and no status. */
		log_warn("spawn: waitid %d", (int)io->pid);
		io->status = W_EXITCODE(127, 0);
		io->exited = true;
		return true;
	}
	if (si.si_pid == 0)
		return false;
	/* The unreaped zombie keeps the group id from being reused: safe to killpg.
	 * This takes out grandchildren and daemons that stayed in the group. */
	kill_group(io->pid, SIGKILL);
	do
		w = waitpid(io->pid, &io->status, 0);
	while (w == -1 && errno == EINTR);
	if (w == -1) {
		log_warn("spawn: waitpid %d", (int)io->pid);
		io->status = W_EXITCODE(127, 0);
	}
	io->exited = true;
	return true;
}

static int
poll_timeout(const struct spawn_io *io, int64_t now)
{
	int64_t	t = SPAWN_TICK_MS;

	if (io->exited)
		t = io->drain_until - now;
	if (!io->exited && io->deadline > 0 && !io->termed && io->deadline - now < t)
		t = io->deadline - now;
	if (!io->exited && io->termed && !io->killed && io->kill_at - now < t)
		t = io->kill_at - now;
	/* Without a pidfd nothing wakes us at exit: once the pipes are shut, poll often. */
	if (!io->exited && io->pidfd < 0 && io->watch < 0 && io->out < 0 && io->res < 0 &&
	    t > 10)
		t = 10;
	return t < 0 ? 0 : (int)t;
}

static void
wait_once(struct spawn_io *io, const struct kb_spawn_opts *o, int64_t now,
	  struct kb_spawn_result *r)
{
	struct pollfd	pfd[5];
	int		n = 0, i_out = -1, i_res = -1, i_in = -1, i_serve = -1, rc;

	if (io->out >= 0)
		pfd[i_out = n++] = (struct pollfd){ .fd = io->out, .events = POLLIN };
	if (io->res >= 0)
		pfd[i_res = n++] = (struct pollfd){ .fd = io->res, .events = POLLIN };
	if (io->in >= 0)
		pfd[i_in = n++] = (struct pollfd){ .fd = io->in, .events = POLLOUT };
	if (io->pidfd >= 0 && !io->exited)
		pfd[n++] = (struct pollfd){ .fd = io->pidfd, .events = POLLIN };
	else if (io->watch >= 0 && !io->exited)
		pfd[n++] = (struct pollfd){ .fd = io->watch, .events = POLLIN };
	if (o->serve != NULL && o->serve_fd >= 0 && !io->exited && !io->termed)
		pfd[i_serve = n++] = (struct pollfd){ .fd = o->serve_fd, .events = POLLIN };

	if ((rc = poll(pfd, (nfds_t)n, poll_timeout(io, now))) <= 0) {
		if (rc == -1 && errno != EINTR)
			log_warn("spawn: poll");
		return;
	}
	if (i_out >= 0 && pfd[i_out].revents != 0)
		drain_fd(io, &io->out, &r->out);
	if (i_res >= 0 && pfd[i_res].revents != 0)
		drain_fd(io, &io->res, &r->result);
	if (i_in >= 0 && pfd[i_in].revents != 0)
		feed_stdin(io);
	if (i_serve >= 0 && pfd[i_serve].revents != 0)
		o->serve(o->serve_fd, o->serve_arg);
}

static void
run_loop(struct spawn_io *io, const struct kb_spawn_opts *o, int grace_ms,
	 struct kb_spawn_result *r)
{
	int64_t	now;

	for (;;) {
		now = kb_mono_ms();
		if (!io->exited && check_exit(io)) {
			r->wall_ms = kb_mono_ms() - io->start;
			close_fd(&io->in);
			io->drain_until = now + SPAWN_DRAIN_MS;
		}
		if (io->exited && io->out < 0 && io->res < 0)
			return;
		if (io->exited && now >= io->drain_until) {
			/* A process outside the group (setsid) still holds a pipe. */
			log_debug("spawn: pid %d: output still open %d ms after exit; giving up",
			    (int)io->pid, SPAWN_DRAIN_MS);
			return;
		}
		if (!io->exited) {
			if (!io->stopped && o->should_stop != NULL &&
			    o->should_stop(o->should_stop_arg)) {
				io->stopped = true;
				terminate(io, grace_ms, now);
			}
			if (io->deadline > 0 && !io->termed && now >= io->deadline) {
				io->timed_out = true;
				terminate(io, grace_ms, now);
			}
			if (io->termed && !io->killed && now >= io->kill_at) {
				signal_child(io, SIGKILL);
				io->killed = true;
			}
		}
		wait_once(io, o, now, r);
	}
}

static void
fill_result(const struct spawn_io *io, struct kb_spawn_result *r)
{
	r->pid = io->pid;
	r->strays_running = io->strays_running;
	r->strays_killed = io->strays_killed;
	if (WIFSIGNALED(io->status)) {
		r->end = KB_END_SIGNALED;
		r->signo = WTERMSIG(io->status);
	} else {
		r->end = KB_END_EXITED;
		r->exit_code = WEXITSTATUS(io->status);
	}
	if (io->timed_out)
		r->end = KB_END_TIMEOUT;
	/* Callers may treat the buffers as C strings even when the child wrote nothing. */
	(void)kb_buf_append(&r->out, "", 0);
	(void)kb_buf_append(&r->result, "", 0);
}

/* Returns 0 once exec succeeded, -KB_EEXEC (child reaped) when it did not. */
static int
wait_exec(struct spawn_io *io, const char *path)
{
	struct child_err	ce;
	size_t			got = 0;
	ssize_t			n;
	pid_t			w;

	while (got < sizeof(ce)) {
		n = read(io->err, (char *)&ce + got, sizeof(ce) - got);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close_fd(&io->err);
	if (got < sizeof(ce))
		return 0;	/* EOF: execve() closed the pipe */
	do
		w = waitpid(io->pid, &io->status, 0);
	while (w == -1 && errno == EINTR);
	if (ce.step <= 0 || ce.step >= STEP__MAX)
		ce.step = STEP_EXEC;
	log_warnx("cannot run '%s': %s: %s", path, step_names[ce.step], strerror(ce.err));
	return -KB_EEXEC;
}

static int
spawn_fail(int errnum, const char *what)
{
	errno = errnum;
	log_warn("spawn: %s", what);
	if (errnum == EAGAIN)
		return -KB_EAGAIN;
	if (errnum == ENOMEM)
		return -KB_ENOMEM;
	return -KB_ESYS;
}

/* Creates the pipes; child ends go to pl, parent ends to io. */
static int
setup_fds(const struct kb_spawn_opts *o, struct spawn_plan *pl, struct spawn_io *io)
{
	int	ep[2];

	/* A detached child outlives us: nothing of it is read, its output goes nowhere. */
	if (o->detach ? (pl->fd_out = open("/dev/null", O_WRONLY | O_CLOEXEC)) == -1 :
	    make_pipe(&io->out, &pl->fd_out, false) == -1)
		return -1;
	if (((o->want_result || o->stderr_apart) && !o->detach &&
	     make_pipe(&io->res, &pl->fd_res, false) == -1))
		return -1;
	if (o->stdin_data != NULL) {
		if (make_pipe(&io->in, &pl->fd_in, true) == -1)
			return -1;
	} else if ((pl->fd_in = open("/dev/null", O_RDONLY | O_CLOEXEC)) == -1) {
		return -1;
	}
	if (pipe2(ep, O_CLOEXEC) == -1)
		return -1;
	io->err = ep[0];
	pl->fd_err = ep[1];
	if (fd_move_high(&pl->fd_in) == -1 || fd_move_high(&pl->fd_out) == -1 ||
	    (pl->fd_res >= 0 && fd_move_high(&pl->fd_res) == -1) || fd_move_high(&pl->fd_err) == -1)
		return -1;
	/* A copy of the caller's, so that the caller's own is never moved or closed. */
	if (o->pass_fd > 0 &&
	    (pl->fd_pass = fcntl(o->pass_fd, F_DUPFD_CLOEXEC, SPAWN_MIN_FD)) == -1)
		return -1;
	return 0;
}

/* A started child that has not been handed its stdin yet (kb_spawn_start). */
struct kb_spawn {
	struct spawn_io	io;
	int		grace_ms;
	size_t		out_cap, result_cap;
};

static void
spawn_free(struct kb_spawn *s)
{
	close_fd(&s->io.out);
	close_fd(&s->io.res);
	close_fd(&s->io.in);
	close_fd(&s->io.err);
	close_fd(&s->io.pidfd);
	close_fd(&s->io.watch);
	free(s->io.chunk);
	free(s);
}

/* The parent's half of a child about to be made: s with its caps, and the pipes of o,
 * their child ends in pl (plan_close closes those). */
static int
spawn_new(const struct kb_spawn_opts *o, struct spawn_plan *pl, struct kb_spawn **out)
{
	struct kb_spawn	*s;

	*out = NULL;
	if ((s = calloc(1, sizeof(*s))) == NULL)
		return -KB_ENOMEM;
	s->io = (struct spawn_io){ .out = -1, .res = -1, .in = -1, .err = -1, .pidfd = -1,
				   .watch = -1 };
	s->grace_ms = o->grace_ms > 0 ? o->grace_ms : 2000;
	s->out_cap = o->out_cap ? o->out_cap : (size_t)1 << 20;
	s->result_cap = o->result_cap ? o->result_cap : (size_t)16 << 20;
	if ((s->io.chunk = malloc(SPAWN_CHUNK)) == NULL) {
		spawn_free(s);
		return -KB_ENOMEM;
	}
	if (setup_fds(o, pl, &s->io) == -1) {
		int rc = spawn_fail(errno, "cannot set up the child's pipes");

		spawn_free(s);
		return rc;
	}
	*out = s;
	return 0;
}

static void
plan_close(struct spawn_plan *pl)
{
	close_fd(&pl->fd_in);
	close_fd(&pl->fd_out);
	close_fd(&pl->fd_res);
	close_fd(&pl->fd_err);
	close_fd(&pl->fd_pass);
}

/* kb_spawn_start; on an exec failure *failed has the reaped child's pid and status. */
static int
spawn_start(const struct kb_spawn_opts *o, struct kb_spawn **out, struct spawn_io *failed)
{
	static char *const	 no_env[] = { NULL };
	struct spawn_plan	 pl = { .fd_in = -1, .fd_out = -1, .fd_res = -1, .fd_err = -1,
				.fd_pass = -1 };
	struct kb_spawn		*s;
	sigset_t		 all, old;
	int			 rc = 0, errnum;

	*out = NULL;
	if (o->argv == NULL || o->argv[0] == NULL)
		return -KB_EINVAL;
	pl.argv = (char *const *)o->argv;
	pl.envp = o->envp != NULL ? (char *const *)o->envp : no_env;
	pl.cwd = o->cwd;
	pl.parent = getpid();
	pl.detach = o->detach;
	plan_limits(&pl, o);
	plan_cpus(&pl, o);
	plan_contain(&pl, o);
	if ((rc = spawn_new(o, &pl, &s)) < 0) {
		plan_close(&pl);
		return rc;
	}

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	s->io.pid = fork();
	if (s->io.pid == 0)
		child_exec(&pl);
	errnum = errno;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (s->io.pid == -1) {
		rc = spawn_fail(errnum, "fork");
		goto fail;
	}
	s->io.start = kb_mono_ms();
	plan_close(&pl);
	/* Whichever of parent and child runs first; a detached child makes a session of its
	 * own, which it may not once it leads a group. */
	if (!o->detach)
		(void)setpgid(s->io.pid, s->io.pid);
	if ((rc = wait_exec(&s->io, o->argv[0])) < 0) {
		*failed = s->io;
		goto fail;
	}
	s->io.pidfd = (int)syscall(SYS_pidfd_open, s->io.pid, 0);	/* -1: poll with ticks */
	*out = s;
	return 0;
fail:
	plan_close(&pl);
	spawn_free(s);
	return rc;
}

int
kb_spawn_start(const struct kb_spawn_opts *o, struct kb_spawn **out)
{
	struct spawn_io	failed = { .pid = 0 };

	return spawn_start(o, out, &failed);
}

/* Sends msg with the child ends of the pipes (stdin, output, result) over ctl, and hold
 * (kb_spawn_fork_watched) where it is one. */
static int
fork_send(int ctl, const char *msg, const struct spawn_plan *pl, int hold)
{
	int		 fds[4] = { pl->fd_in, pl->fd_out, pl->fd_res >= 0 ? pl->fd_res : pl->fd_out,
				    hold };
	size_t		 nfds = hold >= 0 ? 4 : 3;
	char		 cbuf[CMSG_SPACE(sizeof(fds))];
	struct iovec	 iov = { .iov_base = (void *)msg, .iov_len = strlen(msg) };
	struct msghdr	 mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
				.msg_controllen = sizeof(cbuf) };
	struct cmsghdr	*cm;
	ssize_t		 n;

	memset(cbuf, 0, sizeof(cbuf));
	mh.msg_controllen = CMSG_SPACE(nfds * sizeof(int));
	cm = CMSG_FIRSTHDR(&mh);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(nfds * sizeof(int));
	memcpy(CMSG_DATA(cm), fds, nfds * sizeof(int));
	do
		n = sendmsg(ctl, &mh, MSG_NOSIGNAL);
	while (n == -1 && errno == EINTR);
	return n == (ssize_t)iov.iov_len ? 0 : -1;
}

/* The server's answer, a pid and a newline; 0 for none within timeout_ms. */
static pid_t
fork_answer(int ctl, int timeout_ms)
{
	struct pollfd	pfd = { .fd = ctl, .events = POLLIN };
	int64_t		end = kb_mono_ms() + timeout_ms;
	char		line[32];
	size_t		got = 0;
	ssize_t		n;
	long		pid;
	char		*nl, *ep;

	while (got < sizeof(line) - 1) {
		int64_t	left = end - kb_mono_ms();

		if (left <= 0 || poll(&pfd, 1, (int)left) <= 0)
			return 0;
		/* A byte at a time: what follows the line is not ours to take (a watcher's
		 * report of a child that ended at once comes right after it). */
		do
			n = read(ctl, line + got, 1);
		while (n == -1 && errno == EINTR);
		if (n <= 0)
			return 0;
		got += (size_t)n;
		line[got] = '\0';
		if ((nl = strchr(line, '\n')) != NULL) {
			*nl = '\0';
			pid = strtol(line, &ep, 10);
			return *ep == '\0' && pid > 0 && pid < INT32_MAX ? (pid_t)pid : 0;
		}
	}
	return 0;
}

/* Asks the server on ctl for a child (msg, and the pipes o asks for); with watch, ctl
 * is a connection of this child's alone, kept as its watcher's (given hold, where >= 0),
 * else the child must come to this process as a subreaper's orphan. */
static int
fork_child(int ctl, bool watch, int hold, const struct kb_spawn_opts *o, const char *msg,
	   int timeout_ms, struct kb_spawn **out)
{
	struct spawn_plan	 pl = { .fd_in = -1, .fd_out = -1, .fd_res = -1, .fd_err = -1,
				.fd_pass = -1 };
	struct kb_spawn		*s;
	siginfo_t		 si;
	pid_t			 pid;
	int			 rc;

	if ((rc = spawn_new(o, &pl, &s)) < 0) {
		plan_close(&pl);
		return rc;
	}
	rc = -KB_EEXEC;
	close_fd(&s->io.err);	/* no exec here to report on */
	if (fork_send(ctl, msg, &pl, hold) == -1 || (pid = fork_answer(ctl, timeout_ms)) == 0)
		goto out;
	if (watch) {
		if (set_nonblock(ctl) == -1)
			goto out;
		s->io.watch = ctl;
	} else {
		/* Ours once its first parent has exited, which the server waits for. */
		memset(&si, 0, sizeof(si));
		if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) == -1) {
			log_warnx("the fork server's child %d is not this process's", (int)pid);
			goto out;
		}
		s->io.pidfd = (int)syscall(SYS_pidfd_open, pid, 0);	/* -1: poll with ticks */
	}
	s->io.pid = pid;
	s->io.start = kb_mono_ms();
	*out = s;
	s = NULL;
	rc = 0;
out:
	plan_close(&pl);
	if (s != NULL)
		spawn_free(s);
	return rc;
}

int
kb_spawn_fork(int ctl, const struct kb_spawn_opts *o, const char *msg, int timeout_ms,
	      struct kb_spawn **out)
{
	return fork_child(ctl, false, -1, o, msg, timeout_ms, out);
}

int
kb_spawn_fork_watched(int conn, int hold, const struct kb_spawn_opts *o, const char *msg,
		      int timeout_ms, struct kb_spawn **out)
{
	int	rc = fork_child(conn, true, hold, o, msg, timeout_ms, out);

	if (rc < 0)
		(void)close(conn);
	return rc;
}

pid_t
kb_spawn_pid(const struct kb_spawn *s)
{
	return s->io.pid;
}

bool
kb_spawn_exited(struct kb_spawn *s)
{
	siginfo_t	si;
	struct pollfd	pfd = { .fd = s->io.watch, .events = POLLIN };

	/* The watcher says nothing before the child's end (or its own). */
	if (s->io.watch >= 0)
		return poll(&pfd, 1, 0) != 0;
	memset(&si, 0, sizeof(si));
	if (waitid(P_PID, (id_t)s->io.pid, &si, WEXITED | WNOHANG | WNOWAIT) == -1)
		return errno != EINTR;
	return si.si_pid != 0;
}

int
kb_spawn_finish(struct kb_spawn *s, const struct kb_spawn_opts *o, struct kb_spawn_result *r)
{
	struct spawn_io	*io = &s->io;
	int		 rc;

	memset(r, 0, sizeof(*r));
	r->out = (struct kb_buf)KB_BUF_INIT(s->out_cap);
	r->result = (struct kb_buf)KB_BUF_INIT(s->result_cap);
	r->pid = io->pid;
	/* Whatever stopped it while it waited (a stray SIGSTOP) must not eat the deadline. */
	signal_child(io, SIGCONT);
	io->start = kb_mono_ms();
	if (io->in >= 0) {
		io->in_p = o->stdin_data != NULL ? o->stdin_data : "";
		io->in_left = o->stdin_data != NULL ? o->stdin_len : 0;
		if (io->in_left == 0)
			close_fd(&io->in);
	}
	if (o->timeout_ms > 0)
		io->deadline = io->start + o->timeout_ms;
	if (o->on_start != NULL)
		o->on_start(io->pid, o->on_start_arg);

	run_loop(io, o, s->grace_ms, r);
	fill_result(io, r);
	rc = io->stopped ? -KB_ESTOPPED : 0;
	spawn_free(s);
	return rc;
}

/* How long kb_spawn_discard waits for a watched child's watcher to report it killed. */
#define SPAWN_WATCHED_END_MS	5000

void
kb_spawn_discard(struct kb_spawn *s)
{
	struct pollfd	pfd;
	int64_t		end, left;

	if (s == NULL)
		return;
	if (s->io.watch >= 0) {
		/* Its watcher kills it and reaps it, then reports and hangs up. */
		signal_child(&s->io, SIGKILL);
		(void)shutdown(s->io.watch, SHUT_WR);
		end = kb_mono_ms() + SPAWN_WATCHED_END_MS;
		pfd = (struct pollfd){ .fd = s->io.watch, .events = POLLIN };
		while (!s->io.exited && (left = end - kb_mono_ms()) > 0 &&
		       poll(&pfd, 1, (int)left) >= 0)
			(void)check_exit(&s->io);
		spawn_free(s);
		return;
	}
	if (!s->io.exited) {
		kill_group(s->io.pid, SIGKILL);
		while (waitpid(s->io.pid, &s->io.status, 0) == -1 && errno == EINTR)
			;
	}
	spawn_free(s);
}

void
kb_spawn_release(struct kb_spawn *s)
{
	if (s != NULL)
		spawn_free(s);
}

int
kb_spawn_run(const struct kb_spawn_opts *o, struct kb_spawn_result *r)
{
	struct spawn_io	 failed = { .pid = 0 };
	struct kb_spawn	*s;
	int		 rc;

	memset(r, 0, sizeof(*r));
	if ((rc = spawn_start(o, &s, &failed)) < 0) {
		r->out = (struct kb_buf)KB_BUF_INIT(o->out_cap ? o->out_cap : (size_t)1 << 20);
		r->result = (struct kb_buf)KB_BUF_INIT(o->result_cap ? o->result_cap :
						       (size_t)16 << 20);
		if (failed.pid > 0)
			fill_result(&failed, r);
		return rc;
	}
	return kb_spawn_finish(s, o, r);
}

enum kb_netns
kb_netns_probe(char *why, size_t whylen)
{
	int	err[2] = { 0, 0 }, p[2], st;
	pid_t	pid, w;
	ssize_t	n;

	snprintf(why, whylen, "%s", "");
	if (pipe2(p, O_CLOEXEC) == -1) {
		snprintf(why, whylen, "cannot probe: pipe: %s", strerror(errno));
		return KB_NETNS_SHARED;
	}
	/* The child only makes syscalls and _exits: it runs none of our code or handlers
	 * that could misbehave in a forked copy, and its namespaces die with it. */
	if ((pid = fork()) == 0) {
		if (unshare(CLONE_NEWNET) == 0)
			_exit(0);
		err[0] = errno;
		if (unshare(CLONE_NEWUSER | CLONE_NEWNET) == 0)
			_exit(1);
		err[1] = errno;
		n = write(p[1], err, sizeof(err));
		_exit(n == (ssize_t)sizeof(err) ? 2 : 3);
	}
	(void)close(p[1]);
	if (pid == -1) {
		snprintf(why, whylen, "cannot probe: fork: %s", strerror(errno));
		(void)close(p[0]);
		return KB_NETNS_SHARED;
	}
	do
		w = waitpid(pid, &st, 0);
	while (w == -1 && errno == EINTR);
	do
		n = read(p[0], err, sizeof(err));
	while (n == -1 && errno == EINTR);
	(void)close(p[0]);
	if (w == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0)
		return KB_NETNS_NEW;
	if (w == pid && WIFEXITED(st) && WEXITSTATUS(st) == 1)
		return KB_NETNS_USERNS;
	if (n == (ssize_t)sizeof(err))
		snprintf(why, whylen, "unshare(CLONE_NEWNET): %s; with a user namespace: %s",
			 strerror(err[0]), strerror(err[1]));
	else
		snprintf(why, whylen, "the probe child did not report");
	return KB_NETNS_SHARED;
}

void
kb_spawn_result_clear(struct kb_spawn_result *r)
{
	kb_buf_clear(&r->out);
	kb_buf_clear(&r->result);
	memset(r, 0, sizeof(*r));
}

int
kb_sched_normal(pid_t pid)
{
	struct sched_param	 sp = { 0 };
	struct dirent		*de;
	char			 path[64];
	DIR			*d;
	int			 rc = 0;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	if ((d = opendir(path)) == NULL)
		return -KB_ESYS;
	while ((de = readdir(d)) != NULL) {
		pid_t	tid = (pid_t)strtol(de->d_name, NULL, 10);

		if (tid > 0 && sched_getscheduler(tid) == SCHED_IDLE &&
		    sched_setscheduler(tid, SCHED_OTHER, &sp) == -1 && errno != ESRCH)
			rc = -KB_ESYS;
	}
	closedir(d);
	return rc;
}
