/*
 * lease.c: what workers do with the pool — acquire, record the runner, release, and
 * quarantine a GPU that failed its health probes. See gpu_pool_int.h for the invariant.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gpu_pool/gpu_pool_int.h"

#define GPOOL_POLL_MS	200	/* should_stop granularity while blocked */
#define GPOOL_FULL_MS	10	/* retry period when the waiter table is full */

static int
waiter_add(struct gpool *p, enum gpool_class cls)
{
	struct gpool__waiter	*w;
	int			 i;

	for (i = 0; i < GPOOL__MAX_WAITERS; i++) {
		w = &p->waiter[i];
		if (w->pid != 0)
			continue;
		w->cls = (int32_t)cls;
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

static void
waiter_unregister(struct gpool *p, int w)
{
	if (gpool__lock(p) < 0) {
		waiter_remove(p, w);	/* the lock is unusable; single-word writes are safe */
		return;
	}
	waiter_remove(p, w);
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

/* Announces this process as a waiter; the audit counts units it may carry. */
static int
waiter_register(struct gpool *p, enum gpool_class cls, int64_t deadline,
		bool (*should_stop)(void *), void *stop_arg, int *w)
{
	bool	warned = false;
	int	rc;

	for (;;) {
		if ((rc = gpool__lock(p)) < 0)
			return rc;
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
		s->runner = 0;
		s->runner_start = 0;
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

/* 0 with a unit, else the errno of sem_clockwait (ETIMEDOUT at until_ms). */
static int
sem_wait_until(sem_t *sem, int64_t until_ms)
{
	struct timespec	ts = { .tv_sec = until_ms / 1000, .tv_nsec = until_ms % 1000 * 1000000 };

	return sem_clockwait(sem, CLOCK_MONOTONIC, &ts) == 0 ? 0 : errno;
}

/* Took a unit: claim a slot under the lock. 1 claimed, 0 no slot (unit dropped). */
static int
take_slot(struct gpool *p, enum gpool_class cls, const char *task, int w, int *slot)
{
	struct gpool__class	*c = &p->cls[cls];
	int			 rc, i;

	__atomic_store_n(&p->waiter[w].state, GPOOL__W_GOT, __ATOMIC_SEQ_CST);
	if (gpool__test_hook != NULL)
		gpool__test_hook(GPOOL__HOOK_TRANSIT);
	if ((rc = gpool__lock(p)) < 0) {
		sem_post(&c->free);
		__atomic_store_n(&p->waiter[w].state, GPOOL__W_WAITING, __ATOMIC_SEQ_CST);
		return rc;
	}
	if ((i = claim(p, cls, task)) >= 0) {
		waiter_remove(p, w);
		gpool__unlock(p);
		*slot = i;
		return 1;
	}
	/* More units than free slots (a quarantine raced us, or the audit restored a
	 * unit that was only in transit): this unit is the excess, so it is dropped,
	 * not posted back (that would hand it to the next waiter, forever). */
	c->repairs++;
	__atomic_store_n(&p->waiter[w].state, GPOOL__W_WAITING, __ATOMIC_SEQ_CST);
	gpool__unlock(p);
	log_warnx("gpu pool: %s: semaphore said free but no slot is; dropped the extra unit",
	    gpool__class_names[cls]);
	return 0;
}

int
gpool_acquire(struct gpool *p, enum gpool_class cls, const char *task, int timeout_ms,
	      bool (*should_stop)(void *), void *stop_arg, int *slot)
{
	int64_t	deadline, until;
	int	w, rc, r;

	if (p == NULL || (int)cls < 0 || cls >= GPOOL__NCLASS || slot == NULL)
		return -KB_EINVAL;
	*slot = -1;
	deadline = timeout_ms >= 0 ? kb_mono_ms() + timeout_ms : INT64_MAX;
	if ((rc = waiter_register(p, cls, deadline, should_stop, stop_arg, &w)) < 0)
		return rc;
	for (;;) {
		until = kb_mono_ms() + GPOOL_POLL_MS;
		r = sem_wait_until(&p->cls[cls].free, until < deadline ? until : deadline);
		if (r == 0) {
			if ((rc = take_slot(p, cls, task != NULL ? task : "", w, slot)) == 1)
				return 0;
			if (rc < 0)
				break;
			continue;
		}
		if (r == EINTR)
			continue;
		if (r != ETIMEDOUT) {
			errno = r;
			log_warn("gpu pool: %s: sem_clockwait", gpool__class_names[cls]);
			rc = -KB_ESYS;
			break;
		}
		if (must_give_up(deadline, should_stop, stop_arg, &rc))
			break;
	}
	waiter_unregister(p, w);
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
gpool_set_runner(struct gpool *p, enum gpool_class cls, int slot, pid_t runner)
{
	struct gpool__slot	*s;
	uint64_t		 start = 0;
	int			 rc;

	if (!gpool__valid(p, cls, slot) || runner < 0)
		return -KB_EINVAL;
	if (runner > 0)
		(void)gpool__proc_stat(runner, &start, NULL);	/* before the lock: /proc I/O */
	if ((rc = gpool__lock(p)) < 0)
		return rc;
	if (!owned(p, cls, slot, "set the runner of")) {
		gpool__unlock(p);
		return -KB_EINVAL;
	}
	s = &p->cls[cls].slot[slot];
	s->runner_start = start;
	s->runner = runner;
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
	int			 rc;

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
	gpool__unlock(p);
	log_warnx("gpu pool: quarantined GPU %d (exec slot %d): %s", s->device, slot,
	    reason != NULL ? reason : "no reason given");
	return 0;
}
