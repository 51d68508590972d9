/*
 * reclaim.c: the supervisor's side of the pool — after every reap, free what the dead
 * process held (once its runner is gone too), forget its waiter and runner-start records,
 * then audit each class and repair drift (nginx's ngx_unlock_mutexes(pid), s6's death tally).
 *
 * Race-free against pid reuse: a dead pid stays a zombie until the supervisor reaps it,
 * the supervisor is the child subreaper of every worker and runner, and it reclaims
 * before its next fork. A runner pid is also checked against the start time recorded
 * by gpool_set_runner, for runners reaped by someone else.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_pool/gpu_pool_int.h"
#include "base/banned.h"

/* A runner still holds its GPU while it runs; a zombie holds nothing any more. */
static bool
runner_alive(const struct gpool__slot *s, int w)
{
	struct kb_proc_stat	st;

	if (s->runner[w] == 0 || (kill(s->runner[w], 0) == -1 && errno == ESRCH))
		return false;
	if (kb_proc_stat(s->runner[w], &st) < 0)
		return kill(s->runner[w], 0) == 0 || errno == EPERM;	/* no /proc: trust kill */
	if (st.state == 'Z' || st.state == 'X')
		return false;
	return s->runner_start[w] == 0 || st.start == s->runner_start[w];	/* else: reused */
}

/* Runners lead their own process group (kb_spawn_run): take the whole group. */
static void
kill_runner(pid_t runner)
{
	if (killpg(runner, SIGKILL) == -1 && kill(runner, SIGKILL) == -1 && errno != ESRCH)
		log_warn("gpu pool: cannot kill runner %d", (int)runner);
}

/* Frees the slot if neither its owner nor its runner is left; 1 when freed. */
static int
reclaim_slot(struct gpool *p, enum gpool_class cls, int i, pid_t dead)
{
	struct gpool__slot	*s = &p->cls[cls].slot[i];
	bool			 owner_died = false, left = false;

	if (!s->in_use)
		return 0;
	for (int w = 0; w < GPOOL__NRUNNER; w++)
		if (s->runner[w] == dead) {
			s->runner[w] = 0;
			s->runner_start[w] = 0;
		}
	if (s->owner == dead) {
		s->owner = 0;
		owner_died = true;
	}
	if (s->owner != 0)
		return 0;
	/* A runner (or judge) left behind by a dead worker dies before its GPU is leased
	 * again; the slot is freed when the supervisor has reaped each. */
	for (int w = 0; w < GPOOL__NRUNNER; w++) {
		if (!runner_alive(s, w))
			continue;
		if (owner_died)
			log_warnx("gpu pool: %s slot %d (task %s): owner %d died; killing its "
			    "%s %d", gpool__class_names[cls], i, s->task, (int)dead,
			    w == GPOOL_RUNNER_JUDGE ? "judge" : "runner", (int)s->runner[w]);
		kill_runner(s->runner[w]);
		left = true;
	}
	if (left)
		return 0;
	log_info("gpu pool: %s slot %d: reclaimed the lease of task %s",
	    gpool__class_names[cls], i, s->task);
	gpool__slot_free(p, cls, i);
	return 1;
}

/* sem value + leased or quarantined + units in transit must equal total. */
static void
audit(struct gpool *p, enum gpool_class cls)
{
	struct gpool__class	*c = &p->cls[cls];
	const struct gpool__waiter *w;
	int			 sem, held = 0, transit = 0, drift, k;

	if (sem_getvalue(&c->free, &sem) == -1) {
		log_warn("gpu pool: %s: sem_getvalue", gpool__class_names[cls]);
		return;
	}
	for (k = 0; k < c->total; k++)
		held += c->slot[k].in_use || c->slot[k].quarantined;
	for (k = 0; k < GPOOL__MAX_WAITERS; k++) {
		w = &p->waiter[k];
		transit += __atomic_load_n(&w->pid, __ATOMIC_SEQ_CST) != 0 &&
		    w->cls == (int32_t)cls &&
		    __atomic_load_n(&w->state, __ATOMIC_SEQ_CST) == GPOOL__W_GOT;
	}
	if ((drift = c->total - sem - held - transit) == 0)
		return;
	c->repairs++;
	log_warnx("gpu pool: %s: %d free + %d leased + %d in transit != %d slots; %s %d unit(s)",
	    gpool__class_names[cls], sem, held, transit, c->total,
	    drift > 0 ? "restoring" : "withdrawing", abs(drift));
	for (k = 0; k < drift; k++)
		sem_post(&c->free);
	for (k = 0; k < -drift; k++)
		if (sem_trywait(&c->free) == -1)
			break;	/* the rest is in transit: its acquirer drops it */
}

int
gpool_reclaim(struct gpool *p, pid_t dead)
{
	int	c, i, rc, freed = 0;

	if (p == NULL || dead <= 0)
		return -KB_EINVAL;
	if ((rc = gpool__lock(p)) < 0)
		return rc;
	for (c = 0; c < GPOOL__NCLASS; c++)
		for (i = 0; i < p->cls[c].total; i++)
			freed += reclaim_slot(p, c, i, dead);
	/* A dead waiter may have been granted a unit without claiming a slot: forgetting
	 * its record lets the audit count that unit as lost and restore it. */
	for (i = 0; i < GPOOL__MAX_WAITERS; i++)
		if (p->waiter[i].pid == dead) {
			__atomic_store_n(&p->waiter[i].pid, 0, __ATOMIC_SEQ_CST);
			__atomic_store_n(&p->waiter[i].state, GPOOL__W_FREE, __ATOMIC_SEQ_CST);
		}
	for (i = 0; i < GPOOL__MAX_WAITERS; i++)
		if (p->starting[i] == dead)
			__atomic_store_n(&p->starting[i], 0, __ATOMIC_SEQ_CST);
	for (c = 0; c < GPOOL__NCLASS; c++) {
		audit(p, c);
		gpool__grant(p, c);	/* restored units go to the queue */
	}
	gpool__unlock(p);
	return freed;
}
