/* supervisor.c: the one process that forks workers. Signals are blocked before any fork
 * and read from a signalfd; handlers do nothing. Workers are reaped, their pool slots
 * reclaimed, abnormal deaths restarted with backoff (the worker resumes from its log),
 * and a task that keeps dying is marked FAILED. SIGTERM/SIGINT stop gracefully; a
 * second one hurries the workers, a third kills them. GPUs the workers quarantine are
 * reported in run.json; once none is left the run stops as if asked to. In the
 * foreground it feeds the progress display (progress.c) its pool snapshot and, on a
 * terminal, the workers' log lines, which then come to it through a pipe. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "feedback/feedback.h"
#include "fsm/fsm.h"
#include "gpu_pool/gpu_pool.h"
#include "llm/llm.h"
#include "orchestrator/orch_int.h"
#include "base/banned.h"

enum slot_state { TASK_PENDING, TASK_RUNNING, TASK_FINISHED, TASK_GAVE_UP };

/* The folder of the supervisor's own files: the run's, or a shard's (orch_run.home). */
#define HOME(run)	((run)->home[0] != '\0' ? (run)->home : (run)->dir)

struct task_slot {
	enum slot_state	 state;
	pid_t		 pid;
	int		 deaths;
	int64_t		 not_before_ms;	/* restart backoff */
	int64_t		 seq_at_launch;	/* log length when the worker started */
	char		 last_death[128];
	/* A shard's: the task is claimed by this shard; by another live one (left alone
	 * until that one dies or lets it go); lost to another while a worker ran it. */
	bool		 mine, elsewhere, lost;
	/* While its worker runs: the read end of the pipe whose write end its runners'
	 * watchers hold (fb_warm_hold); -1 otherwise. */
	int		 runners_fd;
};

/* The supervisor of a run, from sup_start to sup_close. What it holds — descriptors,
 * the files it made in the run directory, the pool, the slots — is given back by
 * sup_close alone, however far sup_start got: a descriptor is -1 and a pointer NULL until
 * it is taken. */
struct sup {
	struct orch_run		*run;
	const struct orch_sup_opts *opts;
	struct gpool		*pool;
	struct task_slot	*slots;
	int			 running;
	int			 stop_signals;	/* SIGTERM/SIGINT/SIGHUP received */
	bool			 time_up;	/* a shard's: Slurm's time limit is near (SIGUSR1) */
	int			 sfd;		/* the signalfd */
	sigset_t		 orig_mask;
	pid_t			 self;
	int64_t			 started_ms;
	int			 log_fd;	/* its log lines: stderr, or log_file detached */
	int			 log_file;	/* supervisor.log */
	int			 lock_fd;	/* supervisor.lock: held only by the supervisor */
	bool			 made_reserve;	/* supervisor.reserve is this supervisor's */
	bool			 owns_pid_file;	/* supervisor.pid is this supervisor's */
	json_t			*quarantined;	/* as last written to run.json */
	json_t			*clocks;	/* run.json's "clocks" (orch_clocks_lock) */
	enum gpool_pause_kind	 paused;	/* announced; the run stops when the workers have */
	char			 halt[ORCH_MAX_RUN_DIR + 256];	/* why the run cannot go on, or "" */
	bool			 disk_full;	/* a worker found no space; said once */
	struct fsm_device	 devices[KB_MAX_DEVICES];	/* gpus.json's, read once */
	int			 ndevices;
	struct orch_progress	*progress;	/* the foreground display, or NULL */
	const struct orch_shard	*shard;		/* a Slurm run's shard, or NULL */
	struct orch_shard_watch	*watch;		/* the other shards' heartbeats */
	long long		 beat;
	int			 ndead;		/* shards found dead so far */
	int64_t			 last_beat_ms, last_scan_ms;
};

/* A shard's heartbeat period: a few beats within the claim timeout. */
#define SHARD_BEAT_MS(cfg)	((cfg)->cluster.claim_timeout_s * 1000 / 4 < 1000 ? 1000 :	\
				 (cfg)->cluster.claim_timeout_s * 1000 / 4 > 10000 ? 10000 :	\
				 (cfg)->cluster.claim_timeout_s * 1000 / 4)
/* How often a shard looks again at tasks other shards hold, none of them dead. */
#define SHARD_RESCAN_MS		30000

/*
 * Why a run ended before every task finished: one reason, with the exit status kforge
 * returns and the line that closes the run. An environment pause outranks an llm_auth
 * one, both outrank a full disk, and that a GPU pool left empty (s->halt); a stop that
 * was only asked for (a signal, `kforge stop`) is the rest. The reason itself was said
 * once when it came (s->halt holds it); stop_closing's NULL means "stopped: <halt>".
 */
enum sup_stop {
	SUP_STOP_ENV,		/* the machine cannot build or run candidates */
	SUP_STOP_LLM_AUTH,	/* the endpoint refused the credentials */
	SUP_STOP_DISK_FULL,	/* a worker found no space left in the run directory */
	SUP_STOP_NO_GPU,	/* every GPU quarantined */
	SUP_STOP_TIME_LIMIT,	/* a shard's: Slurm's warning that its time limit is near */
	SUP_STOP_REQUESTED,	/* a signal or `kforge stop` */
};

static const struct {
	int		 exit_status;
	const char	*closing;	/* printf'd with the run directory; NULL: the halt */
} stop_rules[] = {
	[SUP_STOP_ENV] = { ORCH_EXIT_ENV, NULL },
	[SUP_STOP_LLM_AUTH] = { ORCH_EXIT_LLM_PAUSED, "stopped with LLM generation paused; "
				"'kforge resume %s' continues every task where it stopped" },
	[SUP_STOP_DISK_FULL] = { 1, "stopped for want of disk space; 'kforge resume %s' "
				 "continues once space is freed" },
	[SUP_STOP_NO_GPU] = { 1, NULL },
	[SUP_STOP_TIME_LIMIT] = { ORCH_EXIT_TIME_LIMIT, "stopped before this shard's Slurm time "
				  "limit; requeued, or 'kforge resume %s', it continues" },
	[SUP_STOP_REQUESTED] = { 0, "stopped; 'kforge resume %s' continues" },
};

static enum sup_stop
stop_reason(const struct sup *s)
{
	if (s->paused == GPOOL_PAUSE_ENV)
		return SUP_STOP_ENV;
	if (s->paused == GPOOL_PAUSE_LLM_AUTH)
		return SUP_STOP_LLM_AUTH;
	if (s->disk_full)
		return SUP_STOP_DISK_FULL;
	if (s->halt[0] != '\0')
		return SUP_STOP_NO_GPU;
	if (s->time_up)
		return SUP_STOP_TIME_LIMIT;
	return SUP_STOP_REQUESTED;
}

/* Space held back under the run directory (RD_SUPERVISOR_RESERVE) while the supervisor
 * runs, given back when a worker finds the disk full, so that the stop itself can still
 * be written down. Making it at start also proves the directory writable with some room
 * to spare. */
#define SUP_RESERVE_BYTES	(1 << 20)

static void signal_workers(struct sup *s, int sig);

/* Made afresh (O_EXCL) so that a directory where nothing new can be created fails here,
 * even with a reserve left by a supervisor that was killed. */
static int
make_reserve(const char *dir, char *err, size_t errlen)
{
	char	path[PATH_MAX];
	int	fd, e = 0, rc;

	if ((rc = rd_run_file(path, sizeof(path), dir, RD_SUPERVISOR_RESERVE)) < 0) {
		snprintf(err, errlen, "cannot write in the run directory %s: %s", dir,
			 kb_strerror(rc));
		return rc;
	}
	if ((unlink(path) == -1 && errno != ENOENT) ||
	    (fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644)) == -1) {
		e = errno;
		snprintf(err, errlen, "cannot write in the run directory %s: %s", dir, strerror(e));
		return -kb_errno_to_err(e);
	}
	e = posix_fallocate(fd, 0, SUP_RESERVE_BYTES);
	if (e == 0 && fsync(fd) == -1)
		e = errno;
	close(fd);
	if (e == 0)
		return 0;
	unlink(path);
	if (kb_errno_to_err(e) == KB_ENOSPC)
		snprintf(err, errlen, "no space left on device in %s (a run keeps %d KiB spare "
			 "there): free some space, then try again", dir, SUP_RESERVE_BYTES >> 10);
	else
		snprintf(err, errlen, "cannot write in the run directory %s: %s", dir, strerror(e));
	return -kb_errno_to_err(e);
}

static int
last_state_of(const struct kb_tlog_rec *rec, void *arg)
{
	snprintf(arg, 32, "%s", rec->to);
	return 0;
}

/* The worker is gone for good: the supervisor closes its log with FAILED, so status
 * and report see a finished task with the reason. */
static void
mark_failed(struct sup *s, int i, const char *reason)
{
	const struct kb_task	*t = &s->run->tasks[i];
	struct kb_tlog		*log;
	char			 path[PATH_MAX], state[32] = "GENERATE";
	json_t			*data;
	int			 turn = 1;

	if (rd_task_dir(path, sizeof(path), s->run->dir, t->id) == 0)
		kb_mkdir_p(path, 0755);
	if (rd_task_file(path, sizeof(path), s->run->dir, t->id, RD_TRAJECTORY) < 0 ||
	    kb_tlog_open(&log, path, last_state_of, state, NULL) < 0) {
		log_warnx("%s: cannot record its failure", t->id);
		return;
	}
	{
		struct rpt_summary sum;

		if (rpt_summarize(s->run->dir, t->id, &sum) == 0 && sum.turn > 0)
			turn = sum.turn;
	}
	data = json_pack("{s:s}", "reason", reason);
	if (kb_tlog_append(log, t->id, turn, state, "fatal", "FAILED", data) < 0)
		log_warnx("%s: cannot record its failure", t->id);
	json_decref(data);
	kb_tlog_close(log);
}

static pid_t
fork_worker(struct sup *s, int i, int hold)
{
	struct fsm_ctx	ctx;
	pid_t		pid;
	char		prefix[200];

	if ((pid = fork()) != 0)
		return pid;
	/* The worker: its own signals back, and it dies (gracefully) with us. It must not
	 * keep the supervisor's lock, or a resume after our death would be refused, nor the
	 * ends of the other workers' runner pipes. */
	close(s->sfd);
	close(s->lock_fd);
	for (int k = 0; k < s->run->ntasks; k++)
		if (s->slots[k].runners_fd >= 0)
			close(s->slots[k].runners_fd);
	fb_warm_hold(hold);
	signal(SIGCHLD, SIG_DFL);
	sigprocmask(SIG_SETMASK, &s->orig_mask, NULL);
	if (prctl(PR_SET_PDEATHSIG, SIGTERM) == -1 || getppid() != s->self)
		_exit(KB_EXIT_TEMPFAIL);
	snprintf(prefix, sizeof(prefix), "task %s", s->run->tasks[i].id);
	kb_log_init(prefix, orch_progress_worker_log_fd(s->progress, s->log_fd));
	kb_crashpoint_task(s->run->tasks[i].id);
	ctx.cfg = &s->run->cfg;
	ctx.task = &s->run->tasks[i];
	ctx.run_dir = s->run->dir;
	ctx.pool = s->pool;
	ctx.devices = s->devices;
	ctx.ndevices = s->ndevices;
	_exit(fsm_task_main(&ctx));
}

/* A shard's claim of task i before its worker starts; false when it is not (or no longer
 * needs to be) worked on here. */
static bool
shard_claim(struct sup *s, int i)
{
	struct task_slot	*ts = &s->slots[i];
	const char		*id = s->run->tasks[i].id;
	struct rpt_summary	 sum;
	int			 rc;

	if (ts->mine)
		return true;
	if ((rc = orch_claim_take(s->run->dir, id, s->shard->id, s->shard->host)) < 0) {
		log_warnx("%s: cannot claim it: %s", id, kb_strerror(rc));
		ts->not_before_ms = kb_mono_ms() + 5000;
		return false;
	}
	if (rc == 0) {
		ts->elsewhere = true;
		return false;
	}
	ts->mine = true;
	/* Another shard may have finished it before letting it go. */
	if (rpt_summarize(s->run->dir, id, &sum) == 0 && rpt_state_finished(sum.state)) {
		ts->state = TASK_FINISHED;
		return false;
	}
	return true;
}

static void
launch_ready(struct sup *s)
{
	int64_t now = kb_mono_ms();

	for (int i = 0; i < s->run->ntasks && s->running < s->run->cfg.workers; i++) {
		struct task_slot *ts = &s->slots[i];
		pid_t		  pid;
		int		  runners[2];

		if (ts->state != TASK_PENDING || ts->not_before_ms > now || ts->elsewhere)
			continue;
		if (s->shard != NULL && !shard_claim(s, i))
			continue;
		if (pipe2(runners, O_CLOEXEC) == -1) {
			log_warn("cannot fork a worker for %s", s->run->tasks[i].id);
			ts->not_before_ms = now + 1000;
			return;
		}
		if ((pid = fork_worker(s, i, runners[1])) == -1) {
			log_warn("cannot fork a worker for %s", s->run->tasks[i].id);
			(void)close(runners[0]);
			(void)close(runners[1]);
			ts->not_before_ms = now + 1000;
			return;
		}
		(void)close(runners[1]);
		ts->runners_fd = runners[0];
		{
			struct rpt_summary sum;

			ts->seq_at_launch = rpt_summarize(s->run->dir, s->run->tasks[i].id, &sum) == 0 ?
					    sum.last_seq : 0;
		}
		ts->state = TASK_RUNNING;
		ts->pid = pid;
		s->running++;
		orch_progress_worker(s->progress, i, true);
	}
}

/* A worker could not write under the run directory for want of space. Restarting it
 * would only fail again, and so would every other worker: the run stops, said once,
 * and the task (neither FAILED nor a turn spent) continues on resume. The reserve is
 * given back first, so that this stop is recorded in the log and in run.json. */
static void
halt_disk_full(struct sup *s, const char *id)
{
	char	path[PATH_MAX];

	if (s->disk_full)
		return;
	s->disk_full = true;
	if (rd_run_file(path, sizeof(path), HOME(s->run), RD_SUPERVISOR_RESERVE) == 0)
		unlink(path);
	if (s->halt[0] != '\0') {	/* already stopping for another reason */
		log_warnx("no space left on device in %s either (task %s)", s->run->dir, id);
		return;
	}
	snprintf(s->halt, sizeof(s->halt), "no space left on device in %s (task %s could not "
		 "write its files; nothing written is lost); free some space, then 'kforge "
		 "resume %s'", s->run->dir, id, s->run->dir);
	log_warnx("stopping: %s", s->halt);
	signal_workers(s, SIGTERM);
}

/*
 * What the supervisor does when a worker exits: one kind of exit, read from how it ended
 * and what the run is doing (worker_exit_kind), and one rule per kind, as the stop rules
 * above. The task's slot goes to next; fails closes its log with FAILED and that reason;
 * then does the rest. Only a death counts towards ORCH_MAX_DEATHS.
 */
enum worker_exit {
	WORKER_LOST,		/* another shard holds its task now (it took this one for dead) */
	WORKER_DONE,		/* KB_EXIT_DONE: the task is finished */
	WORKER_NO_CONFIG,	/* KB_EXIT_CONFIG: it could not start; it never will */
	WORKER_NO_SPACE,	/* KB_EXIT_NOSPC: it could not write for want of disk space */
	WORKER_STOPPED,		/* anything else while the run stops, halts or is paused */
	WORKER_DIED,		/* anything else: a death */
};

static void
give_away(struct sup *s, int i, int status)
{
	struct task_slot *ts = &s->slots[i];

	(void)status;
	ts->lost = ts->mine = false;
	ts->elsewhere = true;
}

static void
halt_no_space(struct sup *s, int i, int status)
{
	(void)status;
	halt_disk_full(s, s->run->tasks[i].id);
}

/* A death, said with how it died: the worker is restarted after a backoff that doubles
 * with each death in a row, and the task closed FAILED at ORCH_MAX_DEATHS. */
static void
count_death(struct sup *s, int i, int status)
{
	struct task_slot	*ts = &s->slots[i];
	const char		*id = s->run->tasks[i].id;
	struct rpt_summary	 sum;

	if (WIFSIGNALED(status))
		snprintf(ts->last_death, sizeof(ts->last_death), "killed by signal %d (%s)",
			 WTERMSIG(status), strsignal(WTERMSIG(status)));
	else
		snprintf(ts->last_death, sizeof(ts->last_death), "exited with status %d",
			 WEXITSTATUS(status));
	/* Deaths count only while the task makes no progress: a worker that logged
	 * something before dying is not caught in a loop. */
	if (rpt_summarize(s->run->dir, id, &sum) == 0 && sum.last_seq > ts->seq_at_launch)
		ts->deaths = 0;
	if (++ts->deaths >= ORCH_MAX_DEATHS) {
		char reason[256];

		snprintf(reason, sizeof(reason), "worker died %d times, last %s", ts->deaths,
			 ts->last_death);
		log_warnx("%s: giving up: %s", id, reason);
		mark_failed(s, i, reason);
		ts->state = TASK_GAVE_UP;
		return;
	}
	ts->not_before_ms = kb_mono_ms() + (1000LL << ts->deaths);
	log_warnx(RD_LOG_WORKER_RESTART, id, ts->last_death, ts->deaths, ORCH_MAX_DEATHS);
}

static const struct {
	enum slot_state	 next;
	const char	*fails;		/* the reason its log is closed FAILED with, or NULL */
	void		(*then)(struct sup *s, int i, int status);	/* NULL: nothing */
} worker_exit_rules[] = {
	/* not a death: another shard works on the task, this one leaves it alone */
	[WORKER_LOST] = { TASK_PENDING, NULL, give_away },
	[WORKER_DONE] = { TASK_FINISHED, NULL, NULL },
	[WORKER_NO_CONFIG] = { TASK_GAVE_UP, "the worker could not start (configuration)",
			       NULL },
	/* restarting it would fail again, as would every other worker: the run stops */
	[WORKER_NO_SPACE] = { TASK_PENDING, NULL, halt_no_space },
	/* stopped on request, for want of a GPU, or at a GENERATE while LLM generation is
	 * paused (which watch_pause may not have seen yet): resume continues it */
	[WORKER_STOPPED] = { TASK_PENDING, NULL, NULL },
	/* restarted with backoff, or the task FAILED after ORCH_MAX_DEATHS */
	[WORKER_DIED] = { TASK_PENDING, NULL, count_death },
};

static enum worker_exit
worker_exit_kind(const struct sup *s, const struct task_slot *ts, int status)
{
	int	code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;

	if (ts->lost)
		return WORKER_LOST;
	if (code == KB_EXIT_DONE)
		return WORKER_DONE;
	if (code == KB_EXIT_CONFIG)
		return WORKER_NO_CONFIG;
	if (code == KB_EXIT_NOSPC)
		return WORKER_NO_SPACE;
	if (s->stop_signals > 0 || s->halt[0] != '\0' ||
	    gpool_paused(s->pool, NULL, 0) != GPOOL_PAUSE_NONE)
		return WORKER_STOPPED;
	return WORKER_DIED;
}

static void
worker_exited(struct sup *s, int i, int status)
{
	struct task_slot	*ts = &s->slots[i];
	enum worker_exit	 kind = worker_exit_kind(s, ts, status);

	ts->pid = 0;
	s->running--;
	orch_progress_worker(s->progress, i, false);
	ts->state = worker_exit_rules[kind].next;
	if (worker_exit_rules[kind].fails != NULL)
		mark_failed(s, i, worker_exit_rules[kind].fails);
	if (worker_exit_rules[kind].then != NULL)
		worker_exit_rules[kind].then(s, i, status);
}

static int
worker_slot(const struct sup *s, pid_t pid)
{
	for (int i = 0; i < s->run->ntasks; i++)
		if (s->slots[i].state == TASK_RUNNING && s->slots[i].pid == pid)
			return i;
	return -1;
}

/* The children fb_kill_orphans spares: the workers, the run's fork server, and the
 * watchers of live workers' runners that came to us when that server died, whose runners
 * are in the middle of another task's step. */
static bool
is_worker_or_server(pid_t pid, void *arg)
{
	pid_t	watched;

	return worker_slot(arg, pid) >= 0 || pid == fb_warm_serve_pid() ||
	       ((watched = fb_warm_watcher_for(pid)) > 0 && worker_slot(arg, watched) >= 0);
}

/* How long a dead worker's runners forked by the run's server may take to go: their
 * watchers kill them when the worker's connection closes, and reap what they left. */
#define SUP_RUNNERS_GONE_MS	30000

/* Waits for the runners of worker i's that the run's server forked: no children of ours,
 * they do not come back to be reaped, but their watchers hold the pipe whose read end is
 * runners_fd until each runner and what it left is gone (fb_warm_hold). Before the
 * worker's GPU slot is reclaimed and it is started again, as for the runners that do. */
static void
runners_gone(struct sup *s, int i)
{
	struct task_slot	*ts = &s->slots[i];
	int64_t			 end = kb_mono_ms() + SUP_RUNNERS_GONE_MS, left;
	char			 buf[64];
	ssize_t			 n = -1;

	if (ts->runners_fd < 0)
		return;
	while ((left = end - kb_mono_ms()) > 0) {
		struct pollfd	pfd = { ts->runners_fd, POLLIN, 0 };

		if (poll(&pfd, 1, (int)left) == -1 && errno != EINTR)
			break;
		if (pfd.revents != 0 && ((n = read(ts->runners_fd, buf, sizeof(buf))) == 0 ||
					 (n == -1 && errno != EINTR && errno != EAGAIN)))
			break;
	}
	if (n != 0)
		log_warnx("%s: the runners of its worker %d are not known gone after %d s",
			  s->run->tasks[i].id, (int)ts->pid, SUP_RUNNERS_GONE_MS / 1000);
	(void)close(ts->runners_fd);
	ts->runners_fd = -1;
}

static void
reap_all(struct sup *s)
{
	siginfo_t	si;
	pid_t		pid;
	int		status, i;

	/* One SIGCHLD may stand for many children. Each is looked at before it is reaped:
	 * a child that is not a worker is a runner orphaned by a worker's death (we are
	 * their subreaper), and while it is an unreaped zombie its pid, which is its
	 * group's id, cannot be reused. Its group goes with it: the compiler or the
	 * candidate's children it leaves would otherwise run on, writing into a build
	 * directory the restarted worker uses. */
	for (;;) {
		memset(&si, 0, sizeof(si));
		if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) == -1 || si.si_pid == 0)
			break;
		pid = si.si_pid;
		if ((i = worker_slot(s, pid)) < 0 && !fb_warm_serve_reaped(pid) &&
		    killpg(pid, SIGKILL) == 0)
			log_debug("killed what was left of the group of orphan %d", (int)pid);
		if (waitpid(pid, &status, 0) != pid)
			break;
		if (i >= 0)
			runners_gone(s, i);
		gpool_reclaim(s->pool, pid);
		if (i >= 0) {
			/* What the dead worker's runner started in process groups of their
			 * own (ninja runs each compiler so) came to us alive: killed before
			 * the worker is restarted, or a compiler would go on writing into
			 * the build the restarted worker builds again. The loop reaps them. */
			if (!WIFEXITED(status) || WEXITSTATUS(status) != KB_EXIT_DONE)
				(void)fb_kill_orphans(is_worker_or_server, s);
			worker_exited(s, i, status);
		}
	}
}

static void
signal_workers(struct sup *s, int sig)
{
	for (int i = 0; i < s->run->ntasks; i++)
		if (s->slots[i].state == TASK_RUNNING && s->slots[i].pid > 0)
			kill(s->slots[i].pid, sig);
}

static void
drain_signals(struct sup *s)
{
	struct signalfd_siginfo	si;

	while (read(s->sfd, &si, sizeof(si)) == sizeof(si)) {
		if (si.ssi_signo == SIGCHLD)
			continue;	/* reaped below in any case */
		/* Slurm's warning (sbatch --signal=B:USR1@...): a stop like any other, which
		 * orch_shard_main follows with a requeue. */
		if (si.ssi_signo == SIGUSR1 && !s->time_up) {
			s->time_up = true;
			log_info("Slurm's time limit for this shard is near");
		}
		s->stop_signals++;
		if (s->stop_signals == 1) {
			log_info("stopping: %d workers finish their step (send again to hurry)",
				 s->running);
			signal_workers(s, SIGTERM);
		} else if (s->stop_signals == 2) {
			log_info("stopping now: in-flight LLM requests are abandoned");
			signal_workers(s, SIGTERM);
		} else {
			log_info("killing the workers");
			signal_workers(s, SIGKILL);
		}
	}
}

static void
publish_pool(struct sup *s)
{
	char	 path[PATH_MAX];
	json_t	*snap = gpool_snapshot_json(s->pool);

	if (snap == NULL)
		return;
	{
		/* Utilisation since the pool was made: busy slot-time over available slot-time. */
		int64_t		 now = kb_now_ms();
		int64_t		 since = json_integer_value(json_object_get(snap, "since_ms"));
		const char	*key;
		json_t		*cls;

		json_object_foreach(snap, key, cls) {
			json_int_t total = json_integer_value(json_object_get(cls, "total"));

			if (!json_is_object(cls) || total <= 0 || now <= since)
				continue;
			json_object_set_new(cls, "utilisation", json_real(
				(double)json_integer_value(json_object_get(cls, "busy_ms")) /
				((double)(now - since) * (double)total)));
		}
		json_object_set_new(snap, "updated_ms", json_integer(now));
	}
	json_object_set_new(snap, "workers", json_pack("{s:i, s:I}", "running", s->running,
						       "max", (json_int_t)s->run->cfg.workers));
	if (rd_run_file(path, sizeof(path), HOME(s->run), RD_POOL_JSON) == 0)
		kb_write_atomic_json(path, snap);
	orch_progress_update(s->progress, snap);
	json_decref(snap);
}

/* The quarantined EXEC slots of a pool snapshot, as run.json lists them. */
static json_t *
quarantined_slots(json_t *snap, int *usable)
{
	json_t	*list = json_array(), *slot;
	size_t	 i;

	*usable = 0;
	json_array_foreach(json_object_get(json_object_get(snap, "exec"), "slots"), i, slot) {
		if (!json_is_true(json_object_get(slot, "quarantined"))) {
			(*usable)++;
			continue;
		}
		json_array_append_new(list, json_pack("{s:i, s:O, s:O}", "slot", (int)i, "device",
						      json_object_get(slot, "device"), "reason",
						      json_object_get(slot, "reason")));
	}
	return list;
}

/* Workers quarantine GPUs in the shared pool, which only the supervisor can see whole:
 * it records each change in run.json (status and the user read it there), and once no
 * execution slot is left it stops the run, since every worker that reaches EXECUTE would
 * wait in gpool_acquire forever. The stopped tasks continue on 'kforge resume'. */
static void
watch_quarantine(struct sup *s)
{
	json_t	*snap = gpool_snapshot_json(s->pool), *list, *q, *fields;
	size_t	 i;
	int	 usable;

	if (snap == NULL)
		return;
	list = quarantined_slots(snap, &usable);
	json_decref(snap);
	if (json_equal(list, s->quarantined)) {
		json_decref(list);
		return;
	}
	json_array_foreach(list, i, q) {
		bool	known = false;
		size_t	j;
		json_t	*old;

		json_array_foreach(s->quarantined, j, old)
			known = known || json_equal(q, old);
		if (!known)
			log_warnx("GPU %lld is quarantined (%s); %d execution slot(s) left",
				  (long long)json_integer_value(json_object_get(q, "device")),
				  json_string_value(json_object_get(q, "reason")), usable);
	}
	fields = json_pack("{s:O}", "quarantined", list);
	if (orch_run_update(s->run, fields) < 0)
		log_warnx("cannot record the quarantined GPUs in run.json");
	json_decref(fields);
	json_decref(s->quarantined);
	s->quarantined = list;
	if (usable == 0 && s->halt[0] == '\0') {
		snprintf(s->halt, sizeof(s->halt), "every GPU is quarantined after failing its "
			 "health probes (run.json lists them); the run cannot go on. Check the "
			 "GPUs, then 'kforge resume %s'", s->run->dir);
		log_warnx("stopping: %s", s->halt);
		signal_workers(s, SIGTERM);
	}
}

/* A worker met an environment error (an env_error turn step, logged): the machine cannot
 * build or run candidates. Said once, with what failed and the fix; no worker is started
 * after it, none is signalled, each stops at its next step; then the run stops with
 * ORCH_EXIT_ENV. The selftest's remembered passes are forgotten, so that resume checks
 * the machine afresh before any model request. */
static void
announce_env_pause(struct sup *s, const char *reason, enum gpool_pause_kind before)
{
	json_t	*fields;

	fb_selftest_forget();
	/* It replaces the reason an llm_auth pause gave, not another halt's. */
	if (s->halt[0] == '\0' || before == GPOOL_PAUSE_LLM_AUTH)
		snprintf(s->halt, sizeof(s->halt), "environment error: %s; then 'kforge resume "
			 "%s'", reason, s->run->dir);
	log_warnx("paused for the whole run: environment error: %s. No task is failed and no "
		  "turn is spent: the steps under way finish, then the run stops. To continue: "
		  "fix it, then 'kforge resume %s'", reason, s->run->dir);
	fields = json_pack("{s:s}", "env_error", s->halt);
	if (orch_run_update(s->run, fields) < 0)
		log_warnx("cannot record the pause in run.json");
	json_decref(fields);
}

/* The run-wide pause (gpool_paused), announced once per kind: an env pause may follow
 * (and replace) an llm_auth one. A worker found the endpoint refusing the credentials:
 * said once, here, naming the endpoint and status and what to do. No worker is
 * started after it and none is signalled: each finishes what it has past generation
 * (compile, execute) and stops unlogged at its next GENERATE, so no task fails or
 * spends a turn; then the run stops with ORCH_EXIT_LLM_PAUSED. Called before reaping,
 * so the workers that stopped for it are not counted as deaths. */
static void
watch_pause(struct sup *s)
{
	const char		*env = s->run->cfg.llm.api_key_env;
	char			 reason[600], todo[300];
	enum gpool_pause_kind	 kind;
	json_t			*fields;

	if ((kind = gpool_paused(s->pool, NULL, 0)) == s->paused)
		return;
	kind = gpool_paused(s->pool, reason, sizeof(reason));
	if (kind == GPOOL_PAUSE_ENV) {
		announce_env_pause(s, reason, s->paused);
		s->paused = kind;
		return;
	}
	s->paused = kind;
	if (env != NULL && env[0] != '\0')
		snprintf(todo, sizeof(todo), "fix the key in $%s (llm.api_key_env), then "
			 "'kforge resume %s'", env, s->run->dir);
	else
		snprintf(todo, sizeof(todo), "fix the endpoint's credentials, then 'kforge "
			 "resume %s'", s->run->dir);
	if (s->halt[0] == '\0')
		snprintf(s->halt, sizeof(s->halt), "LLM generation paused: %s; %s", reason, todo);
	log_warnx("LLM generation paused for the whole run: %s. No task is failed and no "
		  "turn is spent: the compiles and executions under way finish, then the run "
		  "stops. To continue: %s", reason, todo);
	fields = json_pack("{s:s}", "llm_paused", s->halt);
	if (orch_run_update(s->run, fields) < 0)
		log_warnx("cannot record the pause in run.json");
	json_decref(fields);
}

/* The selftest (fb_selftest) for the run's device: a known-good tiny kernel built and
 * run as candidates are, cached per environment. On failure nothing is asked of the
 * model and nothing is logged as a turn: run.json records the stop, one line says what
 * failed and the fix, and the status is ORCH_EXIT_ENV; the run directory stays, so
 * 'kforge resume DIR' continues once the machine is fixed. */
static int
check_environment(struct orch_run *run, bool unfinished, struct fb_selftest *st)
{
	const char	*device = run->cfg.eval.device;
	char		 line[2048], ts[32];
	json_t		*fields;
	int		 rc;

	memset(st, 0, sizeof(*st));
	if (!run->cfg.runner.selftest) {
		/* Asked not to: what is missing shows at the first build instead, still as an
		 * env_error (a host whose GPUs torch cannot use reaches quarantine this way). */
		log_info("runner.selftest is false: no environment check before the first request");
		goto skip;
	}
	if (unfinished)
		goto check;
	/* Every task is finished: nothing will be built, nothing to prove. */
skip:
	(void)fb_find_python(&run->cfg, st->python, sizeof(st->python), line, sizeof(line));
	st->ok = true;
	return 0;
check:
	log_info("checking that this machine can build and run a %s candidate (a tiny "
		 "extension; cached after the first pass)", device);
	if ((rc = fb_selftest(&run->cfg, device, true, st)) < 0) {
		log_warnx("cannot check the environment: %s", st->message[0] ? st->message :
			  kb_strerror(rc));
		return 1;
	}
	if (st->ok) {
		if (st->cached)
			log_info("environment: %s, torch %s (a pass recorded earlier)", st->python,
				 st->torch);
		else
			log_info("environment: %s, torch %s; the tiny extension built in %.1f s "
				 "and ran in %.3f s", st->python, st->torch, st->build_s, st->run_s);
		return 0;
	}
	snprintf(line, sizeof(line), "environment error (%s): %s; fix: %s; then 'kforge resume "
		 "%s'%s", st->stage, st->message, st->fix, run->dir,
		 strcmp(st->stage, "python") == 0 || strcmp(st->stage, "torch") == 0 ?
		 " (resume takes --set runner.python=PATH)" : "");
	log_warnx("%s", line);
	kb_iso8601(kb_now_ms(), ts);
	fields = json_pack("{s:s, s:s, s:s, s:s, s:s, s:{s:s, s:s, s:s, s:s, s:s}}", "status",
			   "paused", "stopped", ts, "stop_reason", line, "env_error", line, "python",
			   st->python, "selftest", "stage", st->stage, "message", st->message,
			   "fix", st->fix, "python", st->python, "torch", st->torch);
	if (fields == NULL || orch_run_update(run, fields) < 0)
		log_warnx("cannot record the stop in run.json");
	json_decref(fields);
	return ORCH_EXIT_ENV;
}

/* A shard's heartbeat, and what it learns each time: its workers' tasks still its own
 * (a worker whose claim another shard took, after this one looked dead, is stopped), and
 * the tasks of shards that died (or ended, or let them go) taken or made claimable. */
static void
shard_beat(struct sup *s)
{
	const struct kb_config	*c = &s->run->cfg;
	int64_t			 now = kb_mono_ms();
	char			 owner[ORCH_SHARD_ID_MAX], ts[32];
	bool			 more_dead;
	int			 ndead;
	json_t			*fields;

	if (s->shard == NULL || now - s->last_beat_ms < SHARD_BEAT_MS(c))
		return;
	s->last_beat_ms = now;
	kb_iso8601(kb_now_ms(), ts);
	fields = json_pack("{s:s, s:I, s:s, s:i}", "status", "running", "beat",
			   (json_int_t)++s->beat, "beat_at", ts, "running_workers", s->running);
	if (fields == NULL || orch_run_update(s->run, fields) < 0)
		log_warnx("cannot write this shard's heartbeat in %s", s->run->home);
	json_decref(fields);
	for (int i = 0; i < s->run->ntasks; i++) {
		struct task_slot *t = &s->slots[i];

		if (t->state != TASK_RUNNING || t->lost ||
		    orch_claim_owner(s->run->dir, s->run->tasks[i].id, owner, sizeof(owner)) < 0 ||
		    strcmp(owner, s->shard->id) == 0)
			continue;
		log_warnx("%s: shard %s holds it now (this shard was taken for dead); stopping "
			  "its worker here", s->run->tasks[i].id, owner);
		t->lost = true;
		kill(t->pid, SIGTERM);
	}
	orch_shard_watch_look(s->watch);
	/* Every claim read again only when one more shard is found dead, or now and then. */
	ndead = orch_shard_watch_ndead(s->watch);
	more_dead = ndead > s->ndead;
	s->ndead = ndead;
	if (!more_dead && now - s->last_scan_ms < SHARD_RESCAN_MS)
		return;
	s->last_scan_ms = now;
	for (int i = 0; i < s->run->ntasks; i++) {
		struct task_slot	*t = &s->slots[i];
		const char		*id = s->run->tasks[i].id;
		int			 rc;

		struct rpt_summary	 sum;

		if (!t->elsewhere)
			continue;
		/* Finished where it was: nothing to take (its claim stays its finisher's). */
		if (rpt_summarize(s->run->dir, id, &sum) == 0 && rpt_state_finished(sum.state)) {
			t->elsewhere = false;
			t->state = TASK_FINISHED;
			continue;
		}
		if ((rc = orch_claim_owner(s->run->dir, id, owner, sizeof(owner))) == -KB_ENOENT) {
			t->elsewhere = false;		/* let go: the next launch claims it */
			continue;
		}
		if (rc < 0 || !orch_shard_watch_dead(s->watch, owner))
			continue;
		if (orch_claim_steal(s->run->dir, id, owner, s->shard->id, s->shard->host) == 1) {
			log_info("%s: taken over from shard %s (it ended, or its heartbeat stopped "
				 "for %ld s)", id, owner, s->run->cfg.cluster.claim_timeout_s);
			t->elsewhere = false;
			t->mine = true;
		}
	}
}

/* A shard that stops with tasks unfinished lets them go, for the other shards. */
static void
shard_release(struct sup *s)
{
	int n = 0;

	if (s->shard == NULL)
		return;
	for (int i = 0; i < s->run->ntasks; i++)
		if (s->slots[i].mine && s->slots[i].state == TASK_PENDING &&
		    orch_claim_release(s->run->dir, s->run->tasks[i].id, s->shard->id) == 0)
			n++;
	if (n > 0)
		log_info("let go of %d unfinished task(s) for the other shards", n);
}

static int
create_pool(struct sup *s, char *err, size_t errlen)
{
	const struct kb_config	*c = &s->run->cfg;
	struct gpool_spec	 spec = { 0 };
	int			 devices[KB_MAX_DEVICES], n = 0, rc;
	char			 path[PATH_MAX];
	json_t			*gpus;

	if (rd_run_file(path, sizeof(path), HOME(s->run), RD_GPUS_JSON) < 0 ||
	    (gpus = json_load_file(path, 0, NULL)) == NULL) {
		snprintf(err, errlen, "%s is missing or unreadable", path);
		return -KB_ECORRUPT;
	}
	s->ndevices = fsm_devices_parse(gpus, s->devices, KB_MAX_DEVICES);
	json_decref(gpus);
	if (strcmp(c->eval.device, "cpu") == 0) {
		for (n = 0; n < c->runner.cpu_exec_slots && n < KB_MAX_DEVICES; n++)
			devices[n] = -1;
	} else {
		for (n = 0; n < s->ndevices; n++)
			devices[n] = s->devices[n].index;
	}
	if (n == 0) {
		snprintf(err, errlen, "no execution device in %s", path);
		return -KB_ECONFIG;
	}
	spec.exec_devices = devices;
	spec.nexec = n;
	spec.ncompile = (int)fb_compile_slots(c);
	spec.nllm = (int)c->llm.concurrency;
	if ((rc = gpool_create(&s->pool, &spec)) < 0)
		snprintf(err, errlen, "cannot create the resource pool: %s", kb_strerror(rc));
	else
		log_info("%d tasks; %d %s slot(s), %d compile slot(s), %d LLM request(s) at once, "
			 "%ld workers", s->run->ntasks, n, c->eval.device, spec.ncompile, spec.nllm,
			 c->workers);
	return rc;
}

/* gpus.lock_clocks for the run's GPUs (clocks.c), recorded in run.json either way. */
static json_t *
lock_clocks(struct sup *s)
{
	char	 path[PATH_MAX];
	json_t	*gpus = NULL, *clocks, *fields;

	if (rd_run_file(path, sizeof(path), HOME(s->run), RD_GPUS_JSON) == 0)
		gpus = json_load_file(path, 0, NULL);
	clocks = orch_clocks_lock(&s->run->cfg, gpus);
	json_decref(gpus);
	if ((fields = json_pack("{s:O}", "clocks", clocks)) != NULL)
		orch_run_update(s->run, fields);
	json_decref(fields);
	return clocks;
}

/* A red-team run's findings, kept once its tasks are finished, still under the run's
 * lock: the findings' lines under the run's summary (none for --quiet or --detach), the
 * counts in the log. A harvest that fails makes a finished run exit 1, saying how to try
 * again. */
static int
harvest(const struct orch_run *run, const struct orch_sup_opts *opts, int rc)
{
	struct orch_redteam_kept kept;
	char			 err[1024], index[PATH_MAX];

	if (orch_redteam_harvest(run, opts->quiet || opts->detach ? NULL : stdout, &kept, err,
				 sizeof(err)) < 0) {
		log_warnx("redteam: %s; 'kforge redteam --harvest %s' tries again", err, run->dir);
		return rc == 0 ? 1 : rc;
	}
	(void)rd_redteam_file(index, sizeof(index), run->dir, RD_REDTEAM_INDEX_JSON);
	log_info("redteam: kept %d candidate(s) judged correct and %d judged suspect at %.2fx or "
		 "more; %s lists them", kept.correct, kept.suspect, run->cfg.redteam.min_speedup,
		 index);
	return rc;
}

/* Detaching: the caller returns once the daemon has its pid file. */
static int
daemonize(struct orch_run *run)
{
	int	 ready[2];
	pid_t	 pid;
	char	 c, log[PATH_MAX];

	(void)rd_run_file(log, sizeof(log), HOME(run), RD_SUPERVISOR_LOG);	/* opened already */
	if (pipe2(ready, O_CLOEXEC) == -1)
		return -KB_ESYS;
	if ((pid = fork()) == -1) {
		close(ready[0]);
		close(ready[1]);
		return -KB_ESYS;
	}
	if (pid > 0) {
		close(ready[1]);
		if (read(ready[0], &c, 1) != 1) {
			fprintf(stderr, "kforge: the background supervisor failed to start; see "
				"%s\n", log);
			exit(1);
		}
		waitpid(pid, NULL, 0);
		printf("kforge: running in the background; log %s; "
		       "'kforge status %s' to watch, 'kforge stop %s' to stop\n", log,
		       run->dir, run->dir);
		exit(0);
	}
	close(ready[0]);
	setsid();
	if ((pid = fork()) != 0)
		_exit(pid == -1 ? 1 : 0);
	{
		int fd = open("/dev/null", O_RDWR | O_CLOEXEC);

		dup2(fd, 0);
		dup2(fd, 1);
		dup2(fd, 2);
		close(fd);
	}
	return ready[1];
}

/* Where the runners will work (fb_stage_open), reusing the staging directory that
 * run.json names from an earlier start when it is still this run's. */
static int
open_stage(const struct orch_run *run, char *err, size_t errlen)
{
	char	path[PATH_MAX];
	json_t	*info;
	int	 rc;

	info = rd_run_file(path, sizeof(path), HOME(run), RD_RUN_JSON) == 0 ?
	       json_load_file(path, 0, NULL) : NULL;
	rc = fb_stage_open(run->dir, json_string_value(json_object_get(info, "stage_dir")), err,
			   errlen);
	json_decref(info);
	return rc;
}

/* Everything before the first worker: the run directory locked, with space held back;
 * the containment, the LLM's config and the staging directory checked; the log opened
 * and the environment checked; detached if asked; the pid file, the signals, the pool and
 * the slots; the start recorded in run.json; the clocks locked; the progress display.
 * 0 to go on, else the exit status, the reason said on stderr or in the log. */
static int
sup_start(struct sup *s)
{
	struct orch_run			*run = s->run;
	const struct orch_sup_opts	*opts = s->opts;
	struct fb_selftest		 selftest;
	struct fb_cache_usage		 usage;
	sigset_t			 mask, pipe_mask;
	char				 path[PATH_MAX], err[512], pidtext[32], ts[32];
	int				 ready_fd = -1, rc;
	bool				 unfinished;
	json_t				*fields;

	/* The directory first: an unwritable or full one fails at once, before any probe. */
	if (rd_run_file(path, sizeof(path), HOME(run), RD_SUPERVISOR_LOCK) < 0) {
		fprintf(stderr, "kforge: run directory %s: path too long\n", run->dir);
		return 1;
	}
	if ((s->lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644)) == -1) {
		fprintf(stderr, "kforge: cannot write in the run directory %s: %s\n", run->dir,
			strerror(errno));
		return 1;
	}
	if (flock(s->lock_fd, LOCK_EX | LOCK_NB) == -1) {
		fprintf(stderr, "kforge: a supervisor is already running on %s\n", run->dir);
		return 1;
	}
	if (make_reserve(HOME(run), err, sizeof(err)) < 0) {
		fprintf(stderr, "kforge: %s\n", err);
		return 1;
	}
	s->made_reserve = true;
	/* A supervisor killed inside an atomic write left its temporary file; the run
	 * directory's top level is written by the supervisor alone (tasks sweep their own). */
	(void)kb_sweep_atomic_tmp(HOME(run));
	/* Decided before any fork, so that every worker inherits it (and python's probe
	 * imports torch as the runner will). */
	if (fb_contain_setup(&run->cfg, err, sizeof(err)) < 0 ||
	    fb_contain_sandbox_ready(err, sizeof(err)) < 0) {
		fprintf(stderr, "kforge: %s\n", err);
		return 1;
	}
	/* A finished run makes no request: resuming it needs no key (nor replay dir). A
	 * worker of an unfinished task opens its LLM client even in its last turn past
	 * GENERATE, so any unfinished task needs the key. */
	unfinished = orch_run_unfinished(run, true) > 0;
	if (unfinished && llm_check_config(&run->cfg, err, sizeof(err)) < 0) {
		fprintf(stderr, "kforge: %s\n", err);
		return 1;
	}
	if (open_stage(run, err, sizeof(err)) < 0) {
		fprintf(stderr, "kforge: %s\n", err);
		return 1;
	}
	/* Builds no run has used for a while go before this run adds its own. */
	(void)fb_cache_trim((long long)run->cfg.runner.cache_max_gb << 30, &usage);
	if (rd_run_file(path, sizeof(path), HOME(run), RD_SUPERVISOR_LOG) < 0 ||
	    (s->log_file = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644)) == -1) {
		fprintf(stderr, "kforge: cannot open %s: %s\n", path, strerror(errno));
		return 1;
	}
	/* Before any model request, and before detaching so that the caller hears it. */
	kb_log_init("sup", 2);
	kb_log_tee(s->log_file);
	/* The run's fork server imports torch while the environment is checked, rather than
	 * after: the first turns' runners are its forks, and on a fresh GPU host they waited
	 * for its import (4 s of the cold demo's 65). A detached supervisor is not this
	 * process: its server starts after the fork (the server dies with its parent). */
	if (!opts->detach && unfinished)
		(void)fb_warm_serve(&run->cfg);
	rc = check_environment(run, unfinished, &selftest);
	kb_log_tee(-1);
	if (rc != 0)
		return rc;
	if (opts->detach && (ready_fd = daemonize(run)) < 0) {
		fprintf(stderr, "kforge: cannot detach: %s\n", strerror(errno));
		return 1;
	}
	s->log_fd = opts->detach ? s->log_file : 2;
	kb_log_init("sup", s->log_fd);
	kb_log_tee(opts->detach ? -1 : s->log_file);
	s->self = getpid();
	s->started_ms = kb_mono_ms();
	snprintf(pidtext, sizeof(pidtext), "%ld\n", (long)s->self);
	if (rd_run_file(path, sizeof(path), HOME(run), RD_SUPERVISOR_PID) == 0) {
		kb_write_atomic(path, pidtext, strlen(pidtext));
		s->owns_pid_file = true;
	}
	if (ready_fd >= 0) {
		if (write(ready_fd, "1", 1) != 1)
			log_warn("cannot tell the launcher we started");
		close(ready_fd);
	}

	sigemptyset(&mask);
	sigaddset(&mask, SIGCHLD);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	if (s->shard != NULL)
		sigaddset(&mask, SIGUSR1);
	sigprocmask(SIG_BLOCK, &mask, &s->orig_mask);
	/* The workers get these back unblocked, also where the shard blocked them before
	 * the supervisor started (orch_shard_main: a signal that early waits for us). */
	sigdelset(&s->orig_mask, SIGTERM);
	sigdelset(&s->orig_mask, SIGINT);
	sigdelset(&s->orig_mask, SIGHUP);
	sigdelset(&s->orig_mask, SIGUSR1);
	if ((s->sfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC)) == -1) {
		log_warn("signalfd");
		return 1;
	}
	/* Output that goes away (kforge run ... | head) must not end the run: a write then
	 * fails with EPIPE, and the progress display stops. Blocked apart from the
	 * signalfd's set, which the workers get back unblocked. */
	sigemptyset(&pipe_mask);
	sigaddset(&pipe_mask, SIGPIPE);
	sigprocmask(SIG_BLOCK, &pipe_mask, NULL);
	/* Runners orphaned by a dying worker come back to us to be reaped and reclaimed. */
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	if (create_pool(s, err, sizeof(err)) < 0) {
		log_warnx("%s", err);
		return 1;
	}
	if ((s->slots = calloc((size_t)run->ntasks + 1, sizeof(*s->slots))) == NULL) {
		log_warnx("out of memory");
		return 1;
	}
	for (int i = 0; i < run->ntasks; i++) {
		struct rpt_summary	sum;
		char			owner[ORCH_SHARD_ID_MAX];

		s->slots[i].runners_fd = -1;
		if (rpt_summarize(run->dir, run->tasks[i].id, &sum) == 0 &&
		    rpt_state_finished(sum.state))
			s->slots[i].state = TASK_FINISHED;
		/* A requeued shard goes back to its own tasks first. */
		else if (s->shard != NULL &&
			 orch_claim_owner(run->dir, run->tasks[i].id, owner, sizeof(owner)) == 0 &&
			 strcmp(owner, s->shard->id) == 0)
			s->slots[i].mine = true;
	}
	if (s->shard != NULL &&
	    (s->watch = orch_shard_watch_new(run->dir, s->shard->id,
					     run->cfg.cluster.claim_timeout_s)) == NULL) {
		log_warnx("out of memory");
		return 1;
	}
	kb_iso8601(kb_now_ms(), ts);
	/* A new pool has every GPU back: what an earlier supervisor quarantined is history. */
	s->quarantined = json_array();
	fields = json_pack("{s:s, s:i, s:s, s:s, s:s, s:[], s:n, s:n, s:n, s:{s:s, s:b, s:f, "
			   "s:s}, s:s?}", "status", "running", "pid", (int)s->self, "started", ts,
			   "python", selftest.python, "device", run->cfg.eval.device, "quarantined",
			   "stop_reason", "llm_paused", "env_error", "selftest", "torch",
			   selftest.torch, "cached", selftest.cached, "build_s", selftest.build_s,
			   "start", selftest.start, "stage_dir", fb_stage_dir());
	orch_run_update(run, fields);
	json_decref(fields);
	if (s->shard != NULL &&
	    (fields = json_pack("{s:s, s:s, s:s, s:i}", "shard", s->shard->id, "host",
				s->shard->host, "job", s->shard->job, "restarts",
				s->shard->restarts)) != NULL) {
		orch_run_update(run, fields);
		json_decref(fields);
	}
	/* The runners' sandbox: what the report and a reader of the run learn of it. */
	if ((fields = json_pack("{s:o}", "sandbox", fb_contain_sandbox_json())) != NULL)
		orch_run_update(run, fields);
	json_decref(fields);
	s->clocks = lock_clocks(s);
	log_info(RD_LOG_SUP_START, run->cfg.name, run->dir, selftest.python);
	fb_contain_report();
	/* One fork server for the workers (without, each keeps its own); started above
	 * unless detached, and fb_warm_serve starts one server at most. */
	if (unfinished)
		(void)fb_warm_serve(&run->cfg);
	s->progress = orch_progress_start(run, orch_progress_mode_for(opts->quiet, opts->detach),
					  opts->progress_interval_s);
	return 0;
}

/* Until every task is finished (a shard's: every task not held by another shard alive),
 * or the run stops — asked to, halted, paused — and its workers are gone: workers
 * launched and reaped, the signals, pauses and quarantines acted on, the pool published
 * about once a second. Whether every task is finished. */
static bool
sup_loop(struct sup *s)
{
	int64_t	last_publish = 0;
	bool	all_done;

	for (;;) {
		struct pollfd	pfd[2] = { { s->sfd, POLLIN, 0 },
					   { orch_progress_log_poll_fd(s->progress), POLLIN, 0 } };

		if (s->stop_signals == 0 && s->halt[0] == '\0')
			launch_ready(s);
		shard_beat(s);
		/* A shard is done when what is left is held by other shards alive. */
		all_done = true;
		for (int i = 0; i < s->run->ntasks; i++)
			if ((s->slots[i].state == TASK_PENDING && !s->slots[i].elsewhere) ||
			    s->slots[i].state == TASK_RUNNING)
				all_done = false;
		if (s->running == 0 && (all_done || s->stop_signals > 0 || s->halt[0] != '\0'))
			break;
		if (kb_mono_ms() - last_publish >= 1000) {
			publish_pool(s);
			last_publish = kb_mono_ms();
		}
		if (poll(pfd, 2, 250) == -1 && errno != EINTR) {
			log_warn("poll");
			break;
		}
		orch_progress_read_logs(s->progress);
		drain_signals(s);
		watch_pause(s);
		/* Before reaping: a worker that stopped because the last GPU left the pool
		 * is then seen as stopped for it, not as a death. */
		watch_quarantine(s);
		reap_all(s);
	}
	return all_done;
}

/* The run's end written down: the pool's last snapshot; a shard's unfinished claims let
 * go; run.json's outcome (the staging directory removed once every task is finished);
 * the clocks given back; the closing line, whose reason stop_rules gives with the exit
 * status; the display's last summary; a red-team run's harvest. The exit status. */
static int
sup_finish(struct sup *s, bool all_done)
{
	struct orch_run	*run = s->run;
	const char	*outcome;
	char		 path[PATH_MAX], ts[32];
	json_t		*fields;
	int		 rc = 0;

	publish_pool(s);
	shard_release(s);
	outcome = all_done ? "finished" : s->paused != GPOOL_PAUSE_NONE ? "paused" : "stopped";
	kb_iso8601(kb_now_ms(), ts);
	fields = json_pack("{s:s, s:s, s:I}", "status", outcome,
			   "stopped", ts, "wall_ms", (json_int_t)(kb_mono_ms() - s->started_ms));
	if (!all_done && s->halt[0] != '\0')
		json_object_set_new(fields, "stop_reason", json_string(s->halt));
	if (s->shard != NULL)
		json_object_set_new(fields, "running_workers", json_integer(0));
	/* The staging directory is a cache of the runners': a finished run needs it no
	 * more; a stopped one keeps it for its resume. */
	if (all_done && fb_stage_dir() != NULL) {
		snprintf(path, sizeof(path), "%s", fb_stage_dir());
		if (fb_stage_close(true) == 0) {
			log_info("files: removed the staging directory %s", path);
			json_object_set_new(fields, "stage_dir", json_null());
		}
	}
	orch_run_update(run, fields);
	json_decref(fields);
	orch_clocks_unlock(s->clocks);
	json_decref(s->clocks);
	s->clocks = NULL;
	if (all_done && s->shard != NULL) {
		log_info("shard %s: nothing left to claim", s->shard->id);
	} else if (all_done) {
		/* The first status after the run then reads no log (at 10,000 tasks about a
		 * second of parsing, spent here once). */
		orch_status_cache_fill(run);
		log_info("all %d tasks finished; 'kforge report %s' for the results", run->ntasks,
			 run->dir);
	} else {
		enum sup_stop	why = stop_reason(s);

		if (stop_rules[why].closing == NULL)
			log_warnx("stopped: %s", s->halt);
		else if (why == SUP_STOP_REQUESTED || why == SUP_STOP_TIME_LIMIT)
			log_info(stop_rules[why].closing, run->dir);
		else
			log_warnx(stop_rules[why].closing, run->dir);
		rc = stop_rules[why].exit_status;
	}
	/* The last thing the run prints, under its closing log line. */
	orch_progress_finish(s->progress, outcome);
	s->progress = NULL;
	if (all_done && run->cfg.redteam.enabled && s->shard == NULL)
		rc = harvest(run, s->opts, rc);
	return rc;
}

/* What sup_start took, given back as far as it got, in one place: the pid file and the
 * reserve (only where this supervisor made them: a refused start leaves the running
 * supervisor's alone), the pool, the signalfd, the log, and the lock last. The signal
 * mask stays: a stop signal that came late must not end the process before it returns
 * the run's exit status. */
static void
sup_close(struct sup *s)
{
	char	path[PATH_MAX];

	if (s->progress != NULL)
		orch_progress_finish(s->progress, "stopped");
	if (s->clocks != NULL) {
		orch_clocks_unlock(s->clocks);
		json_decref(s->clocks);
	}
	if (s->owns_pid_file &&
	    rd_run_file(path, sizeof(path), HOME(s->run), RD_SUPERVISOR_PID) == 0)
		unlink(path);
	if (s->made_reserve &&
	    rd_run_file(path, sizeof(path), HOME(s->run), RD_SUPERVISOR_RESERVE) == 0)
		unlink(path);
	fb_warm_serve_end();
	gpool_destroy(s->pool);
	orch_shard_watch_free(s->watch);
	json_decref(s->quarantined);
	for (int i = 0; s->slots != NULL && i < s->run->ntasks; i++)
		if (s->slots[i].runners_fd >= 0)
			close(s->slots[i].runners_fd);
	free(s->slots);
	if (s->sfd >= 0)
		close(s->sfd);
	if (s->log_file >= 0) {
		kb_log_tee(-1);
		if (s->log_fd == s->log_file)
			kb_log_init("sup", 2);
		close(s->log_file);
	}
	if (s->lock_fd >= 0)
		close(s->lock_fd);
}

int
orch_supervise(struct orch_run *run, const struct orch_sup_opts *opts)
{
	struct sup	s = { .run = run, .opts = opts, .shard = opts->shard, .sfd = -1,
			      .log_fd = 2, .log_file = -1, .lock_fd = -1 };
	int		rc;

	if ((rc = sup_start(&s)) == 0)
		rc = sup_finish(&s, sup_loop(&s));
	sup_close(&s);
	return rc;
}
