/*
 * gpu_pool.c: the pool in one process and across a few forked ones — acquire, release,
 * timeouts, should_stop, ownership, quarantine, the audit's repairs, reclaim of a dead
 * owner whose runner is still alive, FIFO order of waiters, and the status snapshot. The many-process crash
 * test is gpu_pool_stress.c.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gpu_pool/gpu_pool_int.h"


#include "kb_check.h"

/* Bounds on waiting for a condition (another process queued, granted, done) and a
 * child's alarm: never measurements, so generous enough for a loaded machine; each
 * wait ends as soon as its condition holds. */
#define WAIT_BOUND_MS	120000
#define ALARM_S		300

static int
sem_value(struct gpool *p, enum gpool_class cls)
{
	int	v = -1;

	sem_getvalue(&p->cls[cls].free, &v);
	return v;
}

/* Processes queued for the class (waiter records, granted or not). */
static int
queued(struct gpool *p, enum gpool_class cls)
{
	int	i, n = 0;

	for (i = 0; i < GPOOL__MAX_WAITERS; i++)
		n += __atomic_load_n(&p->waiter[i].pid, __ATOMIC_SEQ_CST) != 0 &&
		    p->waiter[i].cls == (int32_t)cls;
	return n;
}

static struct gpool *
make_pool(int nexec, const int *devices)
{
	static const int	 cpu[GPOOL_MAX_SLOTS] = { -1, -1, -1, -1 };
	struct gpool_spec	 spec = { .exec_devices = devices ? devices : cpu, .nexec = nexec,
				 .ncompile = 2, .nllm = 4 };
	struct gpool		*p = NULL;

	if (gpool_create(&p, &spec) != 0)
		abort();
	return p;
}

static void
test_create_invalid(void)
{
	int			 dev[2] = { 0, 1 };
	struct gpool_spec	 spec = { .exec_devices = dev, .nexec = 2, .ncompile = 1, .nllm = 1 };
	struct gpool		*p = (struct gpool *)&spec;

	spec.nexec = 0;
	CHECK(gpool_create(&p, &spec) == -KB_EINVAL && p == NULL);
	spec.nexec = GPOOL_MAX_SLOTS + 1;
	CHECK(gpool_create(&p, &spec) == -KB_EINVAL);
	spec.nexec = 2;
	spec.ncompile = 0;
	CHECK(gpool_create(&p, &spec) == -KB_EINVAL);
	spec.ncompile = 1;
	spec.nllm = 0;
	CHECK(gpool_create(&p, &spec) == -KB_EINVAL);
	spec.nllm = 1;
	spec.exec_devices = NULL;
	CHECK(gpool_create(&p, &spec) == -KB_EINVAL);
	CHECK(gpool_create(&p, NULL) == -KB_EINVAL);
	spec.exec_devices = dev;
	CHECK(gpool_create(&p, &spec) == 0 && p != NULL);
	gpool_destroy(p);
	gpool_destroy(NULL);
}

static void
test_acquire_release(void)
{
	int		 dev[2] = { 3, 5 };
	struct gpool	*p = make_pool(2, dev);
	int		 a = -1, b = -1, c = -1;
	int64_t		 t0;
	char		 longtask[200];

	CHECK(gpool_acquire(p, GPOOL_EXEC, "t1", -1, NULL, NULL, &a) == 0);
	CHECK(gpool_acquire(p, GPOOL_EXEC, "t2", 1000, NULL, NULL, &b) == 0);
	CHECK(a != b && a >= 0 && a < 2 && b >= 0 && b < 2);
	CHECK(gpool_device(p, a) + gpool_device(p, b) == 8);
	CHECK(gpool_device(p, 2) == -1 && gpool_device(p, -1) == -1);
	CHECK(sem_value(p, GPOOL_EXEC) == 0);

	/* A zero timeout is a try: nobody waits (no waiter is queued), nothing is taken. */
	CHECK(gpool_acquire(p, GPOOL_EXEC, "t3", 0, NULL, NULL, &c) == -KB_ETIMEDOUT && c == -1);
	CHECK(queued(p, GPOOL_EXEC) == 0);
	/* A timeout is waited out, never cut short; the slots are never freed, so only
	 * the timeout can end the wait. */
	t0 = kb_mono_ms();
	CHECK(gpool_acquire(p, GPOOL_EXEC, "t3", 300, NULL, NULL, &c) == -KB_ETIMEDOUT);
	CHECK(kb_mono_ms() - t0 >= 300);
	CHECK(queued(p, GPOOL_EXEC) == 0);

	/* Other classes are independent. */
	CHECK(gpool_acquire(p, GPOOL_COMPILE, "t1", 0, NULL, NULL, &c) == 0);
	CHECK(gpool_release(p, GPOOL_COMPILE, c) == 0);

	CHECK(gpool_release(p, GPOOL_EXEC, a) == 0);
	CHECK(gpool_release(p, GPOOL_EXEC, a) == -KB_EINVAL);	/* twice */
	CHECK(gpool_release(p, GPOOL_EXEC, 7) == -KB_EINVAL);
	CHECK(gpool_release(p, GPOOL_LLM, 0) == -KB_EINVAL);	/* not held */
	CHECK(gpool_release(p, (enum gpool_class)9, 0) == -KB_EINVAL);
	CHECK(sem_value(p, GPOOL_EXEC) == 1);
	/* Round-robin: the next claim does not reuse the slot just released. */
	memset(longtask, 'x', sizeof(longtask) - 1);
	longtask[sizeof(longtask) - 1] = '\0';
	CHECK(gpool_acquire(p, GPOOL_EXEC, longtask, 0, NULL, NULL, &c) == 0 && c == a);
	CHECK(strlen(p->cls[GPOOL_EXEC].slot[c].task) == GPOOL__TASK_LEN - 1);
	CHECK(gpool_release(p, GPOOL_EXEC, b) == 0);
	CHECK(gpool_release(p, GPOOL_EXEC, c) == 0);
	CHECK(sem_value(p, GPOOL_EXEC) == 2);
	CHECK(p->cls[GPOOL_EXEC].acquired == 3);
	gpool_destroy(p);
}

static bool
stop_after(void *arg)
{
	return kb_mono_ms() >= *(int64_t *)arg;
}

static void
test_should_stop(void)
{
	struct gpool	*p = make_pool(1, NULL);
	int		 a, b = -1;
	int64_t		 t0 = kb_mono_ms(), at = t0 + 300;

	/* Waits without a timeout until should_stop says so, and not before. */
	CHECK(gpool_acquire(p, GPOOL_EXEC, "t", -1, NULL, NULL, &a) == 0);
	CHECK(gpool_acquire(p, GPOOL_EXEC, "t", -1, stop_after, &at, &b) == -KB_ESTOPPED);
	CHECK(kb_mono_ms() - t0 >= 300 && b == -1);
	/* The waiter record is gone. */
	for (int i = 0; i < GPOOL__MAX_WAITERS; i++)
		CHECK(p->waiter[i].pid == 0);
	CHECK(gpool_release(p, GPOOL_EXEC, a) == 0);
	gpool_destroy(p);
}

/* A second process waits, is counted as waiting, and wakes on our release. */
static void
test_cross_process(void)
{
	struct gpool	*p = make_pool(1, NULL);
	json_t		*snap;
	pid_t		 pid;
	int		 a, st, i;

	CHECK(gpool_acquire(p, GPOOL_EXEC, "parent", -1, NULL, NULL, &a) == 0);
	if ((pid = fork()) == 0) {
		int	s;

		if (gpool_release(p, GPOOL_EXEC, a) != -KB_EINVAL ||	/* not the owner */
		    gpool_set_runner(p, GPOOL_EXEC, a, GPOOL_RUNNER_CANDIDATE, getpid()) != -KB_EINVAL)
			_exit(3);
		if (gpool_acquire(p, GPOOL_EXEC, "child", WAIT_BOUND_MS, NULL, NULL, &s) != 0)
			_exit(1);
		_exit(gpool_release(p, GPOOL_EXEC, s) == 0 ? 0 : 2);
	}
	for (i = 0; i < WAIT_BOUND_MS / 10; i++) {
		snap = gpool_snapshot_json(p);
		st = (int)json_integer_value(json_object_get(json_object_get(snap, "exec"), "waiting"));
		json_decref(snap);
		if (st == 1)
			break;
		usleep(10000);
	}
	CHECK(st == 1);
	CHECK(gpool_release(p, GPOOL_EXEC, a) == 0);
	CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK(gpool_reclaim(p, pid) == 0);	/* nothing held, nothing drifted */
	CHECK(sem_value(p, GPOOL_EXEC) == 1 && p->cls[GPOOL_EXEC].repairs == 0);
	gpool_destroy(p);
}

static void
test_quarantine(void)
{
	int		 dev[3] = { 0, 1, 2 };
	struct gpool	*p = make_pool(3, dev);
	int		 a, b, c;

	CHECK(gpool_quarantine(p, 1, "probe failed: illegal memory access") == 2);
	CHECK(sem_value(p, GPOOL_EXEC) == 2);
	CHECK(gpool_quarantine(p, 3, "x") == -KB_EINVAL && gpool_quarantine(p, -1, "x") == -KB_EINVAL);
	CHECK(gpool_acquire(p, GPOOL_EXEC, "a", 0, NULL, NULL, &a) == 0);
	CHECK(gpool_acquire(p, GPOOL_EXEC, "b", 0, NULL, NULL, &b) == 0);
	CHECK(a != 1 && b != 1 && a != b);
	CHECK(gpool_acquire(p, GPOOL_EXEC, "c", 100, NULL, NULL, &c) == -KB_ETIMEDOUT);

	/* Quarantine a leased slot: its unit stays out when it is released. */
	CHECK(gpool_quarantine(p, a, "probe failed after a crash") == 1);
	CHECK(gpool_quarantine(p, a, "again") == 1);	/* idempotent */
	CHECK(gpool_release(p, GPOOL_EXEC, a) == 0);
	CHECK(sem_value(p, GPOOL_EXEC) == 0);
	CHECK(gpool_release(p, GPOOL_EXEC, b) == 0);
	CHECK(sem_value(p, GPOOL_EXEC) == 1);
	CHECK(gpool_acquire(p, GPOOL_EXEC, "d", 0, NULL, NULL, &c) == 0 && c == b);
	CHECK(gpool_release(p, GPOOL_EXEC, c) == 0);

	/* The audit agrees: nothing to repair. */
	CHECK(gpool_reclaim(p, 999999) == 0);
	CHECK(p->cls[GPOOL_EXEC].repairs == 0 && sem_value(p, GPOOL_EXEC) == 1);
	gpool_destroy(p);
}

static void
test_audit(void)
{
	struct gpool	*p = make_pool(3, NULL);
	int		 a, b, c, d;

	/* A unit lost outside the table (a waiter died between sem_wait and claim). */
	sem_wait(&p->cls[GPOOL_EXEC].free);
	CHECK(gpool_reclaim(p, 999999) == 0);
	CHECK(sem_value(p, GPOOL_EXEC) == 3 && p->cls[GPOOL_EXEC].repairs == 1);

	/* An extra unit: withdrawn by the audit. */
	sem_post(&p->cls[GPOOL_LLM].free);
	CHECK(gpool_reclaim(p, 999999) == 0);
	CHECK(sem_value(p, GPOOL_LLM) == 4 && p->cls[GPOOL_LLM].repairs == 1);

	/* An extra unit an acquirer finds first: it drops it and keeps waiting. */
	CHECK(gpool_acquire(p, GPOOL_EXEC, "a", 0, NULL, NULL, &a) == 0);
	CHECK(gpool_acquire(p, GPOOL_EXEC, "b", 0, NULL, NULL, &b) == 0);
	CHECK(gpool_acquire(p, GPOOL_EXEC, "c", 0, NULL, NULL, &c) == 0);
	sem_post(&p->cls[GPOOL_EXEC].free);
	CHECK(gpool_acquire(p, GPOOL_EXEC, "d", 100, NULL, NULL, &d) == -KB_ETIMEDOUT);
	CHECK(sem_value(p, GPOOL_EXEC) == 0 && p->cls[GPOOL_EXEC].repairs == 2);
	CHECK(gpool_release(p, GPOOL_EXEC, a) == 0 && gpool_release(p, GPOOL_EXEC, b) == 0 &&
	    gpool_release(p, GPOOL_EXEC, c) == 0);
	CHECK(gpool_reclaim(p, 999999) == 0 && sem_value(p, GPOOL_EXEC) == 3);
	CHECK(p->cls[GPOOL_EXEC].repairs == 2);
	gpool_destroy(p);
}

/* A worker dies while its runner still runs: the runner is killed, and the GPU is
 * only free again once the runner has been reaped too. */
/* An execute's judge holds the GPU as its runner does: a dead worker's slot whose runner
 * has ended but whose judge still runs is not leased again until the judge is gone. */
static void
test_reclaim_judge(void)
{
	struct gpool	*p = make_pool(1, NULL);
	int		 fds[2], st, slot, other;
	pid_t		 worker;
	struct { int slot; pid_t judge; } msg;

	CHECK(prctl(PR_SET_CHILD_SUBREAPER, 1) == 0);	/* as the supervisor */
	CHECK(pipe(fds) == 0);
	if ((worker = fork()) == 0) {
		pid_t	r, j;
		int	s;

		close(fds[0]);
		alarm(ALARM_S);
		if (gpool_acquire(p, GPOOL_EXEC, "L1_1_x_s0", 1000, NULL, NULL, &s) != 0)
			_exit(1);
		if ((r = fork()) == 0)
			_exit(0);
		if ((j = fork()) == 0) {
			setpgid(0, 0);
			alarm(ALARM_S);
			for (;;)
				pause();
		}
		setpgid(j, j);
		if (gpool_set_runner(p, GPOOL_EXEC, s, GPOOL_RUNNER_CANDIDATE, r) != 0 ||
		    gpool_set_runner(p, GPOOL_EXEC, s, GPOOL_RUNNER_JUDGE, j) != 0)
			_exit(2);
		/* The runner ends (reaped by the worker: gone), the judge runs on. */
		if (waitpid(r, NULL, 0) != r)
			_exit(3);
		msg.slot = s;
		msg.judge = j;
		if (write(fds[1], &msg, sizeof(msg)) != (ssize_t)sizeof(msg))
			_exit(4);
		for (;;)
			pause();
	}
	close(fds[1]);
	CHECK(read(fds[0], &msg, sizeof(msg)) == (ssize_t)sizeof(msg));
	close(fds[0]);
	slot = msg.slot;
	CHECK(p->cls[GPOOL_EXEC].slot[slot].runner[GPOOL_RUNNER_JUDGE] == msg.judge);
	kill(worker, SIGKILL);
	CHECK(waitpid(worker, &st, 0) == worker);
	CHECK(gpool_reclaim(p, worker) == 0);	/* the judge alive: held, the judge killed */
	CHECK(p->cls[GPOOL_EXEC].slot[slot].in_use && sem_value(p, GPOOL_EXEC) == 0);
	CHECK(gpool_acquire(p, GPOOL_EXEC, "next", 0, NULL, NULL, &other) == -KB_ETIMEDOUT);
	CHECK(waitpid(msg.judge, &st, 0) == msg.judge && WIFSIGNALED(st) &&
	      WTERMSIG(st) == SIGKILL);
	CHECK(gpool_reclaim(p, msg.judge) == 1);
	CHECK(!p->cls[GPOOL_EXEC].slot[slot].in_use && sem_value(p, GPOOL_EXEC) == 1);
	CHECK(p->cls[GPOOL_EXEC].repairs == 0);
	gpool_destroy(p);
}

static void
test_reclaim_runner(void)
{
	struct gpool	*p = make_pool(2, NULL);
	int		 fds[2], st, slot = -1, other;
	pid_t		 worker, runner = 0;
	struct { int slot; pid_t runner; } msg;

	CHECK(prctl(PR_SET_CHILD_SUBREAPER, 1) == 0);	/* as the supervisor */
	CHECK(pipe(fds) == 0);
	if ((worker = fork()) == 0) {
		pid_t	r;
		int	s;

		close(fds[0]);
		alarm(ALARM_S);	/* never outlive a failed test */
		if (gpool_acquire(p, GPOOL_EXEC, "L1_1_x_s0", 1000, NULL, NULL, &s) != 0)
			_exit(1);
		if ((r = fork()) == 0) {
			setpgid(0, 0);
			alarm(ALARM_S);
			for (;;)
				pause();
		}
		setpgid(r, r);
		if (gpool_set_runner(p, GPOOL_EXEC, s, GPOOL_RUNNER_CANDIDATE, r) != 0)
			_exit(2);
		msg.slot = s;
		msg.runner = r;
		if (write(fds[1], &msg, sizeof(msg)) != (ssize_t)sizeof(msg))
			_exit(3);
		for (;;)
			pause();
	}
	close(fds[1]);
	CHECK(read(fds[0], &msg, sizeof(msg)) == (ssize_t)sizeof(msg));
	close(fds[0]);
	slot = msg.slot;
	runner = msg.runner;
	CHECK(p->cls[GPOOL_EXEC].slot[slot].runner[GPOOL_RUNNER_CANDIDATE] == runner);
	CHECK(p->cls[GPOOL_EXEC].slot[slot].runner_start[GPOOL_RUNNER_CANDIDATE] != 0);

	kill(worker, SIGKILL);
	CHECK(waitpid(worker, &st, 0) == worker);
	CHECK(gpool_reclaim(p, worker) == 0);	/* runner alive: held, runner killed */
	CHECK(p->cls[GPOOL_EXEC].slot[slot].in_use && p->cls[GPOOL_EXEC].slot[slot].owner == 0);
	CHECK(sem_value(p, GPOOL_EXEC) == 1);
	CHECK(gpool_acquire(p, GPOOL_EXEC, "next", 0, NULL, NULL, &other) == 0 && other != slot);
	CHECK(gpool_release(p, GPOOL_EXEC, other) == 0);

	/* The runner comes back to us (subreaper), killed by the reclaim. */
	CHECK(waitpid(runner, &st, 0) == runner && WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	CHECK(gpool_reclaim(p, runner) == 1);
	CHECK(!p->cls[GPOOL_EXEC].slot[slot].in_use && sem_value(p, GPOOL_EXEC) == 2);
	CHECK(p->cls[GPOOL_EXEC].repairs == 0);

	/* A dead owner without a runner is freed at once. */
	if ((worker = fork()) == 0) {
		int	s;

		_exit(gpool_acquire(p, GPOOL_COMPILE, "c", 0, NULL, NULL, &s) == 0 ? 0 : 1);
	}
	CHECK(waitpid(worker, &st, 0) == worker && WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK(sem_value(p, GPOOL_COMPILE) == 1);
	CHECK(gpool_reclaim(p, worker) == 1 && sem_value(p, GPOOL_COMPILE) == 2);
	CHECK(gpool_reclaim(p, 0) == -KB_EINVAL);
	gpool_destroy(p);
}

static volatile sig_atomic_t	*in_transit;

static void
stop_in_transit(enum gpool__hook_point where)
{
	if (where != GPOOL__HOOK_TRANSIT)
		return;
	*in_transit = 1;
	for (;;)
		pause();
}

/* A live acquirer holding a granted unit between its wake-up and the lock is not a
 * leak; the same acquirer killed there is, and its reclaim restores the unit. */
static void
test_unit_in_transit(void)
{
	struct gpool	*p = make_pool(2, NULL);
	pid_t		 pid;
	int		 st, i, a, b;

	in_transit = mmap(NULL, sizeof(*in_transit), PROT_READ | PROT_WRITE,
	    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	*in_transit = 0;
	CHECK(gpool_acquire(p, GPOOL_EXEC, "a", 0, NULL, NULL, &a) == 0);
	CHECK(gpool_acquire(p, GPOOL_EXEC, "b", 0, NULL, NULL, &b) == 0);
	if ((pid = fork()) == 0) {
		int	s;

		alarm(ALARM_S);
		gpool__test_hook = stop_in_transit;
		gpool_acquire(p, GPOOL_EXEC, "transit", WAIT_BOUND_MS, NULL, NULL, &s);
		_exit(1);
	}
	for (i = 0; i < WAIT_BOUND_MS / 10 && queued(p, GPOOL_EXEC) < 1; i++)
		usleep(10000);
	CHECK(gpool_release(p, GPOOL_EXEC, a) == 0);	/* granted to the child */
	for (i = 0; i < WAIT_BOUND_MS / 10 && !*in_transit; i++)
		usleep(10000);
	CHECK(*in_transit);
	CHECK(sem_value(p, GPOOL_EXEC) == 0);
	CHECK(gpool_reclaim(p, 999999) == 0);
	CHECK(sem_value(p, GPOOL_EXEC) == 0 && p->cls[GPOOL_EXEC].repairs == 0);
	kill(pid, SIGKILL);
	CHECK(waitpid(pid, &st, 0) == pid);
	CHECK(gpool_reclaim(p, pid) == 0);
	CHECK(sem_value(p, GPOOL_EXEC) == 1 && p->cls[GPOOL_EXEC].repairs == 1);
	CHECK(gpool_release(p, GPOOL_EXEC, b) == 0 && sem_value(p, GPOOL_EXEC) == 2);
	munmap((void *)in_transit, sizeof(*in_transit));
	gpool_destroy(p);
}

/* Waiters are served in the order they queued, however long they wait (semaphore
 * wake order alone is not FIFO: a waiter that times out to poll should_stop rejoins
 * the futex queue at its back), and a newcomer never takes a unit over a queue. */
static void
test_fifo(void)
{
	enum { N = 6 };
	struct gpool	*p = make_pool(1, NULL);
	int		*order, *next, i, k, s, st;
	pid_t		 pid[N];

	order = mmap(NULL, sizeof(int) * (N + 1), PROT_READ | PROT_WRITE,
	    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	CHECK(order != MAP_FAILED);
	next = &order[N];
	*next = 0;
	CHECK(gpool_acquire(p, GPOOL_EXEC, "holder", 0, NULL, NULL, &s) == 0);
	for (i = 0; i < N; i++) {
		if ((pid[i] = fork()) == 0) {
			int	t;

			alarm(ALARM_S);
			if (gpool_acquire(p, GPOOL_EXEC, "w", WAIT_BOUND_MS, NULL, NULL, &t) != 0)
				_exit(2);
			order[__atomic_fetch_add(next, 1, __ATOMIC_SEQ_CST)] = i;
			usleep(20000);
			_exit(gpool_release(p, GPOOL_EXEC, t) == 0 ? 0 : 3);
		}
		for (k = 0; k < WAIT_BOUND_MS / 10 && queued(p, GPOOL_EXEC) < i + 1; k++)
			usleep(10000);
		CHECK(queued(p, GPOOL_EXEC) == i + 1);
	}
	/* Long enough for every waiter to time out its poll a few times. */
	usleep(700000);
	/* A newcomer with a zero timeout gets nothing while the queue holds the unit. */
	CHECK(gpool_release(p, GPOOL_EXEC, s) == 0);
	CHECK(gpool_acquire(p, GPOOL_EXEC, "newcomer", 0, NULL, NULL, &s) == -KB_ETIMEDOUT);
	for (i = 0; i < N; i++) {
		CHECK(waitpid(pid[i], &st, 0) == pid[i]);
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
	CHECK(*next == N);
	for (i = 0; i < N; i++)
		CHECKM(order[i] == i, "waiter %d served %dth", order[i], i);
	CHECK(sem_value(p, GPOOL_EXEC) == 1 && queued(p, GPOOL_EXEC) == 0);
	munmap(order, sizeof(int) * (N + 1));
	gpool_destroy(p);
}

static void
test_snapshot(void)
{
	int		 dev[2] = { 4, 6 };
	struct gpool	*p = make_pool(2, dev);
	json_t		*o, *e, *s0, *slots;
	int		 a, b;
	const char	*task;

	CHECK(gpool_acquire(p, GPOOL_EXEC, "L2_7_Conv_s1", 0, NULL, NULL, &a) == 0);
	CHECK(gpool_set_runner(p, GPOOL_EXEC, a, GPOOL_RUNNER_CANDIDATE, getpid()) == 0);
	CHECK(gpool_acquire(p, GPOOL_LLM, "L2_7_Conv_s1", 0, NULL, NULL, &b) == 0);
	CHECK(gpool_quarantine(p, 1 - a, "ECC errors") == 1);
	usleep(60000);

	o = gpool_snapshot_json(p);
	CHECK(o != NULL && json_is_object(o));
	CHECK(json_integer_value(json_object_get(o, "since_ms")) > 0);
	e = json_object_get(o, "exec");
	CHECK(json_integer_value(json_object_get(e, "total")) == 2);
	CHECK(json_integer_value(json_object_get(e, "used")) == 1);
	CHECK(json_integer_value(json_object_get(e, "free")) == 0);
	CHECK(json_integer_value(json_object_get(e, "quarantined")) == 1);
	CHECK(json_integer_value(json_object_get(e, "waiting")) == 0);
	CHECK(json_integer_value(json_object_get(e, "acquired")) == 1);
	CHECK(json_integer_value(json_object_get(e, "busy_ms")) >= 50);
	slots = json_object_get(e, "slots");
	CHECK(json_array_size(slots) == 2);
	s0 = json_array_get(slots, (size_t)a);
	task = json_string_value(json_object_get(s0, "task"));
	CHECK(task != NULL && strcmp(task, "L2_7_Conv_s1") == 0);
	CHECK(json_integer_value(json_object_get(s0, "device")) == dev[a]);
	CHECK(json_integer_value(json_object_get(s0, "owner")) == getpid());
	CHECK(json_integer_value(json_object_get(s0, "runner")) == getpid());
	CHECK(json_integer_value(json_object_get(s0, "since_ms")) > 0);
	CHECK(json_is_false(json_object_get(s0, "quarantined")));
	s0 = json_array_get(slots, (size_t)(1 - a));
	CHECK(json_is_true(json_object_get(s0, "quarantined")));
	CHECK(strcmp(json_string_value(json_object_get(s0, "reason")), "ECC errors") == 0);
	CHECK(json_integer_value(json_object_get(json_object_get(o, "llm"), "used")) == 1);
	CHECK(json_integer_value(json_object_get(json_object_get(o, "llm"), "total")) == 4);
	CHECK(json_integer_value(json_object_get(json_object_get(o, "compile"), "free")) == 2);
	json_decref(o);

	CHECK(gpool_release(p, GPOOL_EXEC, a) == 0);
	o = gpool_snapshot_json(p);
	e = json_object_get(o, "exec");
	CHECK(json_integer_value(json_object_get(e, "used")) == 0);
	CHECK(json_integer_value(json_object_get(e, "free")) == 1);
	CHECK(json_integer_value(json_object_get(e, "busy_ms")) >= 50);
	s0 = json_array_get(json_object_get(e, "slots"), (size_t)a);
	CHECK(strcmp(json_string_value(json_object_get(s0, "task")), "") == 0);
	CHECK(json_integer_value(json_object_get(s0, "owner")) == 0);
	json_decref(o);
	CHECK(gpool_release(p, GPOOL_LLM, b) == 0);
	gpool_destroy(p);
}

/* The snapshot's "runner_start": the processes between gpool_starting's on and off, and
 * one that died between them forgotten when it is reaped. */
static int
runners_starting(struct gpool *p)
{
	json_t	*o = gpool_snapshot_json(p);
	int	 n = (int)json_integer_value(json_object_get(json_object_get(o, "runner_start"),
							     "starting"));

	json_decref(o);
	return n;
}

static void
test_starting(void)
{
	int		 dev[1] = { 0 };
	struct gpool	*p = make_pool(1, dev);
	pid_t		 pid;
	int		 st;

	CHECK(runners_starting(p) == 0);
	CHECK(gpool_starting(p, true) == 0);
	CHECK(runners_starting(p) == 1);
	if ((pid = fork()) == 0)
		_exit(gpool_starting(p, true) == 0 ? 0 : 1);	/* dies starting */
	CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK(runners_starting(p) == 2);
	CHECK(gpool_reclaim(p, pid) >= 0);
	CHECK(runners_starting(p) == 1);
	CHECK(gpool_starting(p, false) == 0);
	CHECK(runners_starting(p) == 0);
	CHECK(gpool_starting(p, false) == 0);	/* off twice: nothing to forget */
	gpool_destroy(p);
}

int
main(void)
{
	kb_log_init("test", 2);
	test_create_invalid();
	test_acquire_release();
	test_should_stop();
	test_cross_process();
	test_quarantine();
	test_audit();
	test_reclaim_runner();
	test_reclaim_judge();
	test_unit_in_transit();
	test_fifo();
	test_snapshot();
	test_starting();
	if (failures) {
		fprintf(stderr, "gpu_pool: %d check(s) failed\n", failures);
		return 1;
	}
	printf("gpu_pool: ok\n");
	return 0;
}
