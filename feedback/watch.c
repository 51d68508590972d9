/*
 * watch.c: what a runner does to the host beyond its own process.
 *
 * Memory: a candidate can allocate until the machine swaps or the kernel's OOM killer
 * picks a victim, which may be a worker or the supervisor. RLIMIT_AS cannot bound it
 * (CUDA reserves far more address space than it uses), so while the runner lives the
 * resident sets of its processes (its group and its descendants) are summed from
 * /proc every FBW_POLL_MS, and past the cap the lot is SIGKILLed. Between polls, and
 * for a daemon that left the tree, oom_score_adj 1000 (inherited by everything the
 * runner starts) makes the runner the OOM killer's first choice.
 *
 * Deadline: a step that runs a candidate's code times it from the moment the runner
 * writes its started file (fbw_time_from), so that a runner's start (the interpreter,
 * torch's import, a CUDA context: seconds, tens of them on a loaded machine) does not eat
 * the candidate's time; the file is looked for at each poll of the spawn (100 ms).
 *
 * Leftovers: the spawn kills the runner's process group when the runner ends, which
 * takes forked children but not a daemon that called setsid. A process that adopts
 * strays (fb_adopt_strays: a worker, whose only children are runners) is a child
 * subreaper, so every orphan of a runner is re-parented to it; after each runner all
 * its children are killed and reaped, round after round until none is left.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "feedback/feedback_int.h"
#include "base/banned.h"

#define FBW_POLL_MS		100
#define FBW_MTIME_SLACK_NS	20000000L	/* 20 ms */
#define FBW_PROC_MAX		65536	/* processes read from /proc in one scan */
#define FBW_TREE_DEPTH		64	/* descendant generations followed */
#define FBW_REAP_ROUNDS		64	/* kill-and-reap passes over our children */
#define FBW_REAP_WAIT_MS	5000	/* per process, after SIGKILL */
#define FBW_OOM_SCORE_ADJ	"1000"

static bool	adopting;
static pid_t	spared;		/* fb_strays_spare's */

struct proc_ent {
	struct kb_proc_stat	st;
	bool			mark;
};

static int
by_pid(const void *a, const void *b)
{
	const struct proc_ent *x = a, *y = b;

	return (x->st.pid > y->st.pid) - (x->st.pid < y->st.pid);
}

/* Every process in /proc, sorted by pid; NULL when /proc cannot be read. */
static struct proc_ent *
proc_list(size_t *n)
{
	struct proc_ent	*v;
	struct dirent	*de;
	DIR		*d;
	size_t		 cap = 256;
	long		 pid;

	*n = 0;
	if ((d = opendir("/proc")) == NULL)
		return NULL;
	if ((v = malloc(cap * sizeof(*v))) == NULL)
		goto out;
	while ((de = readdir(d)) != NULL && *n < FBW_PROC_MAX) {
		if (kb_parse_int(de->d_name, 1, INT_MAX, &pid) < 0)
			continue;
		if (*n == cap) {
			struct proc_ent *nv = realloc(v, 2 * cap * sizeof(*v));

			if (nv == NULL)
				break;
			v = nv;
			cap *= 2;
		}
		v[*n].mark = false;
		if (kb_proc_stat((pid_t)pid, &v[*n].st) == 0)
			(*n)++;
	}
	qsort(v, *n, sizeof(*v), by_pid);
out:
	closedir(d);
	return v;
}

static struct proc_ent *
find_pid(struct proc_ent *v, size_t n, pid_t pid)
{
	struct proc_ent key = { .st.pid = pid };

	return bsearch(&key, v, n, sizeof(*v), by_pid);
}

/* Marks the runner, its process group and all their descendants. */
static void
mark_tree(struct proc_ent *v, size_t n, pid_t root)
{
	bool	changed = true;

	for (size_t i = 0; i < n; i++)
		v[i].mark = v[i].st.pid == root || v[i].st.pgrp == root;
	for (int depth = 0; changed && depth < FBW_TREE_DEPTH; depth++) {
		changed = false;
		for (size_t i = 0; i < n; i++) {
			struct proc_ent *parent;

			if (v[i].mark || (parent = find_pid(v, n, v[i].st.ppid)) == NULL ||
			    !parent->mark)
				continue;
			v[i].mark = true;
			changed = true;
		}
	}
}

static void
check_memory(struct fb_watch *w)
{
	static long	 page_kb;
	struct proc_ent	*v;
	long long	 kb = 0;
	size_t		 n;

	if (page_kb == 0)
		page_kb = sysconf(_SC_PAGESIZE) / 1024;
	if ((v = proc_list(&n)) == NULL)
		return;
	mark_tree(v, n, w->pid);
	for (size_t i = 0; i < n; i++)
		if (v[i].mark)
			kb += v[i].st.rss_pages * page_kb;
	if (kb > w->peak_kb)
		w->peak_kb = kb;
	if (kb > w->cap_kb) {
		w->over_cap = true;
		log_warnx("runner %d: its processes hold %lld MB of memory, over the cap of %lld MB "
			  "(runner.max_host_memory_mb): killed", (int)w->pid, kb >> 10,
			  w->cap_kb >> 10);
		/* The group leader is not reaped yet (the spawn reaps only after it saw the
		 * exit), so its group id cannot have been reused. */
		if (killpg(w->pid, SIGKILL) == -1 && errno != ESRCH)
			log_warn("killpg %d", (int)w->pid);
		for (size_t i = 0; i < n; i++)
			if (v[i].mark && v[i].st.pgrp != w->pid)
				(void)kill(v[i].st.pid, SIGKILL);
	}
	free(v);
}

void
fbw_init(struct fb_watch *w, const struct kb_config *cfg, const struct fb_request *req)
{
	long	pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);

	memset(w, 0, sizeof(*w));
	w->on_start = req->on_start;
	w->on_start_arg = req->on_start_arg;
	w->should_stop = req->should_stop;
	w->stop_arg = req->stop_arg;
	if (cfg->runner.max_host_memory_mb > 0)
		w->cap_kb = (long long)cfg->runner.max_host_memory_mb << 10;
	else if (pages > 0 && page > 0)	/* default: half the machine */
		w->cap_kb = (long long)pages * (page / 1024) / 2;
}

void
fbw_on_start(pid_t pid, void *arg)
{
	struct fb_watch	*w = arg;
	char		 path[64];
	int		 fd;

	w->pid = pid;
	w->next_poll_ms = kb_mono_ms();
	snprintf(path, sizeof(path), "/proc/%d/oom_score_adj", (int)pid);
	if ((fd = open(path, O_WRONLY | O_CLOEXEC)) == -1 ||
	    write(fd, FBW_OOM_SCORE_ADJ, strlen(FBW_OOM_SCORE_ADJ)) == -1)
		log_debug("runner %d: cannot set oom_score_adj: %s", (int)pid, strerror(errno));
	if (fd != -1)
		(void)close(fd);
	if (w->on_start != NULL)
		w->on_start(pid, w->on_start_arg);
}

void
fbw_time_from(struct fb_watch *w, const char *file, int64_t limit_ms)
{
	if (file == NULL || limit_ms <= 0 ||
	    snprintf(w->started_file, sizeof(w->started_file), "%s", file) >=
	    (int)sizeof(w->started_file)) {
		w->started_file[0] = '\0';
		return;
	}
	w->exec_limit_ms = limit_ms;
	w->started_ms = 0;
	(void)clock_gettime(CLOCK_REALTIME, &w->armed);
	/* The file system's clock is the coarse one, a tick behind at most. */
	w->armed.tv_nsec -= FBW_MTIME_SLACK_NS;
	if (w->armed.tv_nsec < 0) {
		w->armed.tv_sec--;
		w->armed.tv_nsec += 1000000000L;
	}
}

/* The started file seen (written since fbw_time_from), or the candidate past its time:
 * then the runner's group is killed, as the memory cap kills it. */
static void
check_deadline(struct fb_watch *w, int64_t now)
{
	struct stat	st;

	if (w->started_ms == 0) {
		if (stat(w->started_file, &st) == 0 &&
		    (st.st_mtim.tv_sec > w->armed.tv_sec ||
		     (st.st_mtim.tv_sec == w->armed.tv_sec &&
		      st.st_mtim.tv_nsec >= w->armed.tv_nsec)))
			w->started_ms = now;
		return;
	}
	if (now - w->started_ms <= w->exec_limit_ms)
		return;
	w->exec_timed_out = true;
	log_info("runner %d: the candidate ran past its deadline of %lld s: killed", (int)w->pid,
		 (long long)(w->exec_limit_ms / 1000));
	if (killpg(w->pid, SIGKILL) == -1 && errno != ESRCH)
		log_warn("killpg %d", (int)w->pid);
}

/* The judge ended and the runner lives on: whatever it waits for (the judge's socket, its
 * next request) will not come, and nothing it does now can be judged; its group is killed
 * as the deadline kills it, not left to its own timeouts (minutes of a GPU). Not before
 * it is past its own start (its started file, written once torch and CUDA are up, before
 * it looks for the judge): one still starting ends by itself, with what its start found
 * (on a host with no GPU, the same cuda_error as its judge's), and says how it started. */
static void
check_judge(struct fb_watch *w, int64_t now)
{
	int64_t	from = atomic_load(w->judge_gone_from);

	if (from == 0 || now < from || (w->started_file[0] != '\0' && w->started_ms == 0))
		return;
	w->judge_gone = true;
	log_info("runner %d: its judge has ended: killed", (int)w->pid);
	if (killpg(w->pid, SIGKILL) == -1 && errno != ESRCH)
		log_warn("killpg %d", (int)w->pid);
}

bool
fbw_should_stop(void *arg)
{
	struct fb_watch	*w = arg;
	int64_t		 now = kb_mono_ms();

	if (w->pid > 0 && w->cap_kb > 0 && !w->over_cap && now >= w->next_poll_ms) {
		w->next_poll_ms = now + FBW_POLL_MS;
		check_memory(w);
	}
	if (w->pid > 0 && w->started_file[0] != '\0' && !w->exec_timed_out && !w->over_cap)
		check_deadline(w, now);
	if (w->pid > 0 && w->judge_gone_from != NULL && !w->judge_gone)
		check_judge(w, now);
	return w->should_stop != NULL && w->should_stop(w->stop_arg);
}

int
fb_adopt_strays(void)
{
	if (prctl(PR_SET_CHILD_SUBREAPER, 1) == -1) {
		log_warn("prctl(PR_SET_CHILD_SUBREAPER)");
		return -KB_ESYS;
	}
	adopting = true;
	return 0;
}

/* Reaps pid, which was sent SIGKILL; false if it did not die in time (D state: the
 * next round or the next runner's reaping gets it). */
static bool
reap(pid_t pid, int *status)
{
	struct timespec	ts = { 0, 10 * 1000000L };
	int64_t		end = kb_mono_ms() + FBW_REAP_WAIT_MS;
	pid_t		w;

	for (;;) {
		w = waitpid(pid, status, WNOHANG);
		if (w == pid)
			return true;
		if (w == -1 && errno != EINTR)
			return false;
		if (kb_mono_ms() >= end) {
			log_warnx("leftover process %d did not die within %d ms of SIGKILL", (int)pid,
				  FBW_REAP_WAIT_MS);
			return false;
		}
		nanosleep(&ts, NULL);
	}
}

/* Marks in v the children of this process that keep(pid, arg) does not spare, zombies
 * included; returns how many. */
static int
mark_children(struct proc_ent *v, size_t n, bool (*keep)(pid_t pid, void *arg), void *arg)
{
	pid_t	self = getpid();
	int	found = 0;

	for (size_t i = 0; i < n; i++) {
		v[i].mark = v[i].st.ppid == self && !keep(v[i].st.pid, arg);
		found += v[i].mark;
	}
	return found;
}

/* Marks in v, besides those marked, every process descended from one; returns how many
 * it added. Killing a tree at once does not wait on re-parenting: a process whose parent
 * is still dying is not yet our child, and a pass over our children alone would miss it. */
static int
mark_descendants(struct proc_ent *v, size_t n)
{
	struct proc_ent	 key, *parent;
	int		 added = 0, more;

	do {
		more = 0;
		for (size_t i = 0; i < n; i++) {
			if (v[i].mark || v[i].st.ppid <= 1)
				continue;
			key.st.pid = v[i].st.ppid;
			parent = bsearch(&key, v, n, sizeof(*v), by_pid);
			if (parent != NULL && parent->mark) {
				v[i].mark = true;
				more++;
			}
		}
		added += more;
	} while (more > 0);
	return added;
}

struct pid_set {
	const pid_t	*pids;
	size_t		 n;
};

static bool
in_set(pid_t pid, void *arg)
{
	const struct pid_set	*set = arg;

	for (size_t i = 0; i < set->n; i++)
		if (set->pids[i] == pid)
			return true;
	return false;
}

static bool
is_zombie(const struct proc_ent *e)
{
	return e->st.state == 'Z' || e->st.state == 'X';
}

void
fb_strays_spare(pid_t pid)
{
	spared = pid;
}

void
fbw_reap_strays(struct fb_strays *out, const pid_t *keep, size_t nkeep)
{
	pid_t		 all[FB_WARM_PIDS + 1];
	struct pid_set	 spare = { all, 0 };
	struct proc_ent	*v;
	size_t		 n;
	int		 status, found;

	memset(out, 0, sizeof(*out));
	if (!adopting)
		return;
	for (size_t i = 0; i < nkeep && i < FB_WARM_PIDS; i++)
		all[spare.n++] = keep[i];
	if (spared > 0)
		all[spare.n++] = spared;
	for (int round = 0; round < FBW_REAP_ROUNDS; round++) {
		if ((v = proc_list(&n)) == NULL)
			return;
		found = mark_children(v, n, in_set, &spare);
		/* Kill them all first, so that none forks after its siblings died. */
		for (size_t i = 0; i < n; i++) {
			if (v[i].mark && !is_zombie(&v[i])) {
				(void)kill(v[i].st.pid, SIGKILL);
				out->running++;
			}
		}
		for (size_t i = 0; i < n; i++) {
			if (!v[i].mark || !reap(v[i].st.pid, &status))
				continue;
			if (is_zombie(&v[i]) && WIFSIGNALED(status))
				out->killed++;
		}
		free(v);
		if (found == 0)
			return;
		log_debug("reaped %d leftover processes of a runner", found);
	}
}

/* A process killed with SIGKILL is dead once it is a zombie; one in D state may take a
 * while: waits for pid's zombie without reaping it, so its parent (our caller) still
 * reaps it and sees its pid. False if it is still not dead after FBW_REAP_WAIT_MS. */
static bool
await_zombie(pid_t pid)
{
	struct timespec		ts = { 0, 5 * 1000000L };
	struct kb_proc_stat	st;
	int64_t			end = kb_mono_ms() + FBW_REAP_WAIT_MS;

	while (kb_proc_stat(pid, &st) == 0 && st.state != 'Z' && st.state != 'X') {
		if (kb_mono_ms() >= end) {
			log_warnx("orphan %d did not die within %d ms of SIGKILL", (int)pid,
				  FBW_REAP_WAIT_MS);
			return false;
		}
		nanosleep(&ts, NULL);
	}
	return true;
}

int
fb_kill_orphans(bool (*keep)(pid_t pid, void *arg), void *arg)
{
	pid_t		 own_group = getpgrp();
	struct proc_ent	*v;
	size_t		 n;
	int		 killed = 0, found;

	for (int round = 0; round < FBW_REAP_ROUNDS; round++) {
		if ((v = proc_list(&n)) == NULL)
			return killed;
		(void)mark_children(v, n, keep, arg);
		(void)mark_descendants(v, n);
		found = 0;
		/* Kill them all first, so that none forks after its siblings died; each with
		 * its process group, which holds what it started (a compiler under a shell),
		 * and with its descendants, which are not yet ours while their parents die.
		 * Zombies are dead already, left to their parents to reap. */
		for (size_t i = 0; i < n; i++) {
			if (!v[i].mark || is_zombie(&v[i]))
				continue;
			found++;
			(void)kill(v[i].st.pid, SIGKILL);
			if (v[i].st.pgrp > 1 && v[i].st.pgrp != own_group)
				(void)killpg(v[i].st.pgrp, SIGKILL);
		}
		for (size_t i = 0; i < n; i++)
			if (v[i].mark && !is_zombie(&v[i]))
				(void)await_zombie(v[i].st.pid);
		free(v);
		if (found == 0)
			return killed;
		killed += found;
		log_debug("killed %d orphaned processes", found);
	}
	return killed;
}
