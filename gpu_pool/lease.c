/*
 * lease.c: what workers do with the pool — acquire, record the runner, release,
 * quarantine a GPU that failed its health probes, and say when they start a runner. See
 * gpu_pool_int.h for the invariant.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gpu_pool/gpu_pool_int.h"
#include "base/banned.h"

#define GPOOL_POLL_MS	200	/* should_stop granularity while blocked */
#define GPOOL_FULL_MS	10	/* retry period when the waiter table is full */

/* Under the lock: the oldest queued waiter of the class, or NULL. */
static struct gpool__waiter *
oldest_waiting(struct gpool *p, enum gpool_class cls)
{
	struct gpool__waiter	*w, *best = NULL;
	int			 i;

	for (i = 0; i < GPOOL__MAX_WAITERS; i++) {
		w = &p->waiter[i];
		if (w->pid == 0 || w->cls != (int32_t)cls || w->state != GPOOL__W_WAITING)
			continue;
		if (best == NULL || w->ticket < best->ticket)
			best = w;
	}
	return best;
}

void
gpool__grant(struct gpool *p, enum gpool_class cls)
{
	struct gpool__waiter	*w;

	while ((w = oldest_waiting(p, cls)) != NULL) {
		if (sem_trywait(&p->cls[cls].free) == -1)
			return;		/* EAGAIN: nothing free */
		__atomic_store_n(&w->state, GPOOL__W_GOT, __ATOMIC_SEQ_CST);
		if (sem_post(&w->wake) == -1)
			log_warn("gpu pool: %s: sem_post", gpool__class_names[cls]);
	}
}

/* Under the lock: queues this process at the back of the class; -1 if the table is
 * full. A record's wake semaphore may keep a post its last user never consumed (it
 * saw GOT first): drained here. */
static int
waiter_add(struct gpool *p, enum gpool_class cls)
{
	struct gpool__waiter	*w;
	int			 i;

	for (i = 0; i < GPOOL__MAX_WAITERS; i++) {
		w = &p->waiter[i];
		if (w->pid != 0)
			continue;
		while (sem_trywait(&w->wake) == 0)
			;
		w->cls = (int32_t)cls;
		w->ticket = p->cls[cls].next_ticket++;
		__atomic_store_n(&w->state, GPOOL__W_WAITING, __ATOMIC_SEQ_CST);
		__atomic_store_n(&w->pid, getpid(), __ATOMIC_SEQ_CST);	/* commit */
		return i;
	}
	return -1;
}

static void
waiter_remove(struct gpool *p, int i)
{
	__atomic_store_n(&p->waiter[i].pid, 0, __ATOMIC_SEQ_CST);
	__atomic_store_n(&p->waiter[i].state, GPOOL__W_FREE, __ATOMIC_SEQ_CST);
}

/* Leaves the queue. A unit granted meanwhile is passed on, not lost. */
static void
waiter_unregister(struct gpool *p, enum gpool_class cls, int w)
{
	bool	granted;

	if (gpool__lock(p) < 0) {
		waiter_remove(p, w);	/* the lock is unusable; the audit restores a unit */
		return;
	}
	granted = p->waiter[w].state == GPOOL__W_GOT;
	waiter_remove(p, w);
	if (granted) {
		if (sem_post(&p->cls[cls].free) == -1)
			log_warn("gpu pool: %s: sem_post", gpool__class_names[cls]);
		gpool__grant(p, cls);
	}
	gpool__unlock(p);
}

static bool
must_give_up(int64_t deadline, bool (*should_stop)(void *), void *stop_arg, int *rc)
{
	if (should_stop != NULL && should_stop(stop_arg)) {
		*rc = -KB_ESTOPPED;
		return true;
	}
	if (kb_mono_ms() >= deadline) {
		*rc = -KB_ETIMEDOUT;
		return true;
	}
	return false;
}

/* Claims a free, healthy slot (round-robin) for this process; -1 if none. */
static int
claim(struct gpool *p, enum gpool_class cls, const char *task)
{
	struct gpool__class	*c = &p->cls[cls];
	struct gpool__slot	*s;
	int			 k, i;

	for (k = 0; k < c->total; k++) {
		i = (c->next + k) % c->total;
		s = &c->slot[i];
		if (s->in_use || s->quarantined)
			continue;
		s->owner = getpid();
		memset(s->runner, 0, sizeof(s->runner));
		memset(s->runner_start, 0, sizeof(s->runner_start));
		snprintf(s->task, sizeof(s->task), "%s", task);
		s->since_ms = kb_now_ms();
		s->since_mono = kb_mono_ms();
		if (gpool__test_hook != NULL)
			gpool__test_hook(GPOOL__HOOK_CLAIM);
		__atomic_store_n(&s->in_use, 1, __ATOMIC_SEQ_CST);	/* commit */
		c->next = (i + 1) % c->total;
		c->acquired++;
		return i;
	}
	return -1;
}

/* Under the lock, holding a unit that has no free slot behind it (a quarantine raced
 * the grant, or the audit restored a unit that was only in transit): this unit is the
 * excess, so it is dropped, not posted back (that would hand it on, forever). */
static void
drop_excess(struct gpool *p, enum gpool_class cls)
{
	p->cls[cls].repairs++;
	log_warnx("gpu pool: %s: semaphore said free but no slot is; dropped the extra unit",
	    gpool__class_names[cls]);
}

/* The queue is empty and a unit is free: take it without queueing. 1 claimed, 0 not. */
static int
try_fast(struct gpool *p, enum gpool_class cls, const char *task, int *slot)
{
	int	i;

	if (oldest_waiting(p, cls) != NULL || sem_trywait(&p->cls[cls].free) == -1)
		return 0;
	if ((i = claim(p, cls, task)) < 0) {
		drop_excess(p, cls);
		return 0;
	}
	*slot = i;
	return 1;
}

/* Takes a slot at once when nobody of the class waits, else joins the queue (*w). */
static int
enter(struct gpool *p, enum gpool_class cls, const char *task, int64_t deadline,
      bool (*should_stop)(void *), void *stop_arg, int *slot, int *w)
{
	bool	warned = false;
	int	rc;

	for (;;) {
		if ((rc = gpool__lock(p)) < 0)
			return rc;
		if (try_fast(p, cls, task, slot)) {
			gpool__unlock(p);
			return 1;
		}
		*w = waiter_add(p, cls);
		gpool__unlock(p);
		if (*w >= 0)
			return 0;
		if (!warned) {
			log_warnx("gpu pool: %d processes waiting; the waiter table is full",
			    GPOOL__MAX_WAITERS);
			warned = true;
		}
		if (must_give_up(deadline, should_stop, stop_arg, &rc))
			return rc;
		usleep(GPOOL_FULL_MS * 1000);
	}
}

/* 0 when posted, else the errno of sem_clockwait (ETIMEDOUT at until_ms). */
static int
sem_wait_until(sem_t *sem, int64_t until_ms)
{
	struct timespec	ts = { .tv_sec = until_ms / 1000, .tv_nsec = until_ms % 1000 * 1000000 };

	return sem_clockwait(sem, CLOCK_MONOTONIC, &ts) == 0 ? 0 : errno;
}

/* Granted a unit: claim a slot under the lock. 1 claimed, 0 no slot (unit dropped,
 * back in the queue with the same ticket). */
static int
take_slot(struct gpool *p, enum gpool_class cls, const char *task, int w, int *slot)
{
	int	rc, i;

	if (gpool__test_hook != NULL)
		gpool__test_hook(GPOOL__HOOK_TRANSIT);
	if ((rc = gpool__lock(p)) < 0)
		return rc;
	if ((i = claim(p, cls, task)) >= 0) {
		waiter_remove(p, w);
		gpool__unlock(p);
		*slot = i;
		return 1;
	}
	drop_excess(p, cls);
	__atomic_store_n(&p->waiter[w].state, GPOOL__W_WAITING, __ATOMIC_SEQ_CST);
	gpool__grant(p, cls);
	gpool__unlock(p);
	return 0;
}

int
gpool_acquire(struct gpool *p, enum gpool_class cls, const char *task, int timeout_ms,
	      bool (*should_stop)(void *), void *stop_arg, int *slot)
{
	int64_t	deadline, until;
	int	w = -1, rc, r;

	if (p == NULL || (int)cls < 0 || cls >= GPOOL__NCLASS || slot == NULL)
		return -KB_EINVAL;
	*slot = -1;
	if (task == NULL)
		task = "";
	deadline = timeout_ms >= 0 ? kb_mono_ms() + timeout_ms : INT64_MAX;
	if ((rc = enter(p, cls, task, deadline, should_stop, stop_arg, slot, &w)) != 0)
		return rc > 0 ? 0 : rc;
	for (;;) {
		until = kb_mono_ms() + GPOOL_POLL_MS;
		r = sem_wait_until(&p->waiter[w].wake, until < deadline ? until : deadline);
		/* The grant, not the post, is the truth: a post may come after a timeout. */
		if (__atomic_load_n(&p->waiter[w].state, __ATOMIC_SEQ_CST) == GPOOL__W_GOT) {
			if ((rc = take_slot(p, cls, task, w, slot)) == 1)
				return 0;
			if (rc < 0)
				break;
			continue;
		}
		if (r != 0 && r != EINTR && r != ETIMEDOUT) {
			errno = r;
			log_warn("gpu pool: %s: sem_clockwait", gpool__class_names[cls]);
			rc = -KB_ESYS;
			break;
		}
		if (must_give_up(deadline, should_stop, stop_arg, &rc))
			break;
	}
	waiter_unregister(p, cls, w);
	return rc;
}

/* The slot must be leased by this process; called under the lock. */
static bool
owned(struct gpool *p, enum gpool_class cls, int slot, const char *what)
{
	const struct gpool__slot	*s = &p->cls[cls].slot[slot];

	if (s->in_use && s->owner == getpid())
		return true;
	if (s->in_use)
		log_warnx("gpu pool: pid %d may not %s %s slot %d: held by %d", (int)getpid(),
		    what, gpool__class_names[cls], slot, (int)s->owner);
	else
		log_warnx("gpu pool: pid %d may not %s %s slot %d: not leased", (int)getpid(),
		    what, gpool__class_names[cls], slot);
	return false;
}

int
gpool_set_runner(struct gpool *p, enum gpool_class cls, int slot, enum gpool_runner which,
		 pid_t runner)
{
	struct gpool__slot	*s;
	struct kb_proc_stat	 st = { .start = 0 };
	int			 rc;

	if (!gpool__valid(p, cls, slot) || runner < 0 || (unsigned)which >= GPOOL__NRUNNER)
		return -KB_EINVAL;
	if (runner > 0)
		(void)kb_proc_stat(runner, &st);	/* before the lock: /proc I/O */
	if ((rc = gpool__lock(p)) < 0)
		return rc;
	if (!owned(p, cls, slot, "set the runner of")) {
		gpool__unlock(p);
		return -KB_EINVAL;
	}
	s = &p->cls[cls].slot[slot];
	s->runner_start[which] = st.start;
	s->runner[which] = runner;
	gpool__unlock(p);
	return 0;
}

int
gpool_release(struct gpool *p, enum gpool_class cls, int slot)
{
	int	rc;

	if (!gpool__valid(p, cls, slot))
		return -KB_EINVAL;
	if ((rc = gpool__lock(p)) < 0)
		return rc;
	if (!owned(p, cls, slot, "release")) {
		gpool__unlock(p);
		return -KB_EINVAL;
	}
	gpool__slot_free(p, cls, slot);
	gpool__unlock(p);
	return 0;
}

int
gpool_quarantine(struct gpool *p, int slot, const char *reason)
{
	struct gpool__class	*c;
	struct gpool__slot	*s;
	int			 rc, i, left;

	if (!gpool__valid(p, GPOOL_EXEC, slot))
		return -KB_EINVAL;
	if ((rc = gpool__lock(p)) < 0)
		return rc;
	c = &p->cls[GPOOL_EXEC];
	s = &c->slot[slot];
	if (!s->quarantined) {
		/* A free slot's unit leaves circulation now. If none is left in the
		 * semaphore, an acquirer holds it in transit and will drop it when it
		 * finds no slot. A leased slot's unit stays out at release. */
		if (!s->in_use && sem_trywait(&c->free) == -1 && errno != EAGAIN)
			log_warn("gpu pool: exec: sem_trywait");
		s->quarantined = 1;
	}
	snprintf(s->reason, sizeof(s->reason), "%s", reason != NULL ? reason : "");
	for (i = 0, left = 0; i < c->total; i++)
		left += !c->slot[i].quarantined;
	gpool__unlock(p);
	log_warnx("gpu pool: quarantined GPU %d (exec slot %d): %s", s->device, slot,
	    reason != NULL ? reason : "no reason given");
	return left;
}

int
gpool_starting(struct gpool *p, bool on)
{
	pid_t	me = getpid(), want = on ? 0 : me;
	int	i, rc;

	if (p == NULL)
		return -KB_EINVAL;
	if ((rc = gpool__lock(p)) < 0)
		return rc;
	for (i = 0; i < GPOOL__MAX_WAITERS; i++)
		if (p->starting[i] == want) {
			__atomic_store_n(&p->starting[i], on ? me : 0, __ATOMIC_SEQ_CST);
			break;
		}
	gpool__unlock(p);
	return i < GPOOL__MAX_WAITERS || !on ? 0 : -KB_EAGAIN;
}
