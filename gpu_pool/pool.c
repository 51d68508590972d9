/*
 * pool.c: the shared mapping — creation before the first fork, the robust lock and its
 * repair, and the status snapshot. See gpu_pool_int.h for the layout and invariant.
 */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "gpu_pool/gpu_pool_int.h"
#include "base/banned.h"

void	(*gpool__test_hook)(enum gpool__hook_point where);

const char *const gpool__class_names[GPOOL__NCLASS] = {
	[GPOOL_EXEC] = "exec", [GPOOL_COMPILE] = "compile", [GPOOL_LLM] = "llm",
};

bool
gpool__valid(const struct gpool *p, enum gpool_class cls, int slot)
{
	return p != NULL && (int)cls >= 0 && cls < GPOOL__NCLASS && slot >= 0 &&
	    slot < p->cls[cls].total;
}

/* The lock holder died inside the critical section. Every write there keeps in_use
 * as the commit flag, so a slot that is not in_use may carry half its fields: wipe
 * them. Units are not touched here: this may run in any worker, and the supervisor's
 * audit (gpool_reclaim, when it reaps the dead process) settles the count. */
static void
pool_repair(struct gpool *p)
{
	struct gpool__slot	*s;
	int			 c, i;

	for (c = 0; c < GPOOL__NCLASS; c++) {
		for (i = 0; i < p->cls[c].total; i++) {
			s = &p->cls[c].slot[i];
			s->task[GPOOL__TASK_LEN - 1] = '\0';
			s->reason[GPOOL__REASON_LEN - 1] = '\0';
			if (s->in_use)
				continue;
			s->owner = 0;
			memset(s->runner, 0, sizeof(s->runner));
			memset(s->runner_start, 0, sizeof(s->runner_start));
			s->since_ms = s->since_mono = 0;
			memset(s->task, 0, sizeof(s->task));
		}
		if (p->cls[c].next < 0 || p->cls[c].next >= p->cls[c].total)
			p->cls[c].next = 0;
	}
}

int
gpool__lock(struct gpool *p)
{
	int	r = pthread_mutex_lock(&p->mu);

	if (r == EOWNERDEAD) {
		log_warnx("gpu pool: a process died holding the pool lock; repairing the table");
		pool_repair(p);
		r = pthread_mutex_consistent(&p->mu);
	}
	if (r != 0) {
		errno = r;
		log_warn("gpu pool: cannot lock");
		return -KB_ESYS;
	}
	return 0;
}

void
gpool__unlock(struct gpool *p)
{
	pthread_mutex_unlock(&p->mu);
}

void
gpool__slot_free(struct gpool *p, enum gpool_class cls, int i)
{
	struct gpool__class	*c = &p->cls[cls];
	struct gpool__slot	*s = &c->slot[i];
	int64_t			 held = kb_mono_ms() - s->since_mono;

	__atomic_store_n(&s->in_use, 0, __ATOMIC_SEQ_CST);
	if (gpool__test_hook != NULL)
		gpool__test_hook(GPOOL__HOOK_RELEASE);
	c->busy_ms += held > 0 ? held : 0;
	s->owner = 0;
	memset(s->runner, 0, sizeof(s->runner));
	memset(s->runner_start, 0, sizeof(s->runner_start));
	s->since_ms = s->since_mono = 0;
	memset(s->task, 0, sizeof(s->task));
	if (!s->quarantined && sem_post(&c->free) == -1)
		log_warn("gpu pool: %s: sem_post", gpool__class_names[cls]);
	gpool__grant(p, cls);
}

static int
spec_check(const struct gpool_spec *spec)
{
	if (spec == NULL || spec->exec_devices == NULL)
		return -KB_EINVAL;
	if (spec->nexec < 1 || spec->nexec > GPOOL_MAX_SLOTS ||
	    spec->ncompile < 1 || spec->ncompile > GPOOL_MAX_SLOTS ||
	    spec->nllm < 1 || spec->nllm > GPOOL_MAX_SLOTS)
		return -KB_EINVAL;
	return 0;
}

static int
mutex_init_shared(pthread_mutex_t *mu)
{
	pthread_mutexattr_t	attr;
	int			r;

	if ((r = pthread_mutexattr_init(&attr)) != 0)
		return r;
	if ((r = pthread_mutexattr_setpshared(&attr, PTHREAD_PROCESS_SHARED)) == 0 &&
	    (r = pthread_mutexattr_setrobust(&attr, PTHREAD_MUTEX_ROBUST)) == 0)
		r = pthread_mutex_init(mu, &attr);
	pthread_mutexattr_destroy(&attr);
	return r;
}

int
gpool_create(struct gpool **out, const struct gpool_spec *spec)
{
	const int	 count[GPOOL__NCLASS] = {
		[GPOOL_EXEC] = spec ? spec->nexec : 0,
		[GPOOL_COMPILE] = spec ? spec->ncompile : 0,
		[GPOOL_LLM] = spec ? spec->nllm : 0,
	};
	struct gpool	*p;
	size_t		 size, page = (size_t)sysconf(_SC_PAGESIZE);
	int		 c, i, r, rc;

	*out = NULL;
	if ((rc = spec_check(spec)) < 0)
		return rc;
	size = (sizeof(*p) + page - 1) / page * page;
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		log_warn("gpu pool: mmap %zu bytes", size);
		return -KB_ENOMEM;
	}
	/* The anonymous mapping is zero-filled: free slots and records are all zero. */
	p->magic = GPOOL__MAGIC;
	p->version = GPOOL__VERSION;
	p->map_size = size;
	p->created_ms = kb_now_ms();
	if ((r = mutex_init_shared(&p->mu)) != 0) {
		errno = r;
		log_warn("gpu pool: cannot create the process-shared robust mutex");
		munmap(p, size);
		return -KB_ESYS;
	}
	for (i = 0; i < GPOOL__MAX_WAITERS; i++) {
		if (sem_init(&p->waiter[i].wake, 1, 0) == -1) {
			log_warn("gpu pool: sem_init");
			while (--i >= 0)
				sem_destroy(&p->waiter[i].wake);
			pthread_mutex_destroy(&p->mu);
			munmap(p, size);
			return -KB_ESYS;
		}
	}
	for (c = 0; c < GPOOL__NCLASS; c++) {
		p->cls[c].total = count[c];
		for (i = 0; i < count[c]; i++)
			p->cls[c].slot[i].device = c == GPOOL_EXEC ? spec->exec_devices[i] : -1;
		if (sem_init(&p->cls[c].free, 1, (unsigned)count[c]) == -1) {
			log_warn("gpu pool: sem_init");
			while (--c >= 0)
				sem_destroy(&p->cls[c].free);
			for (i = 0; i < GPOOL__MAX_WAITERS; i++)
				sem_destroy(&p->waiter[i].wake);
			pthread_mutex_destroy(&p->mu);
			munmap(p, size);
			return -KB_ESYS;
		}
	}
	*out = p;
	return 0;
}

void
gpool_destroy(struct gpool *p)
{
	int	c, i;

	if (p == NULL)
		return;
	for (c = 0; c < GPOOL__NCLASS; c++)
		sem_destroy(&p->cls[c].free);
	for (i = 0; i < GPOOL__MAX_WAITERS; i++)
		sem_destroy(&p->waiter[i].wake);
	pthread_mutex_destroy(&p->mu);
	munmap(p, p->map_size);
}

int
gpool_device(const struct gpool *p, int slot)
{
	if (!gpool__valid(p, GPOOL_EXEC, slot))
		return -1;
	return p->cls[GPOOL_EXEC].slot[slot].device;	/* fixed at creation: no lock */
}

/* ---------------------------------------------------------------- snapshot */

static json_t *
slot_json(const struct gpool__slot *s)
{
	return json_pack("{s:i, s:I, s:I, s:I, s:s, s:I, s:b, s:s}",
	    "device", s->device,
	    "owner", (json_int_t)s->owner,
	    "runner", (json_int_t)s->runner[GPOOL_RUNNER_CANDIDATE],
	    "judge", (json_int_t)s->runner[GPOOL_RUNNER_JUDGE],
	    "task", s->in_use ? s->task : "",
	    "since_ms", (json_int_t)(s->in_use ? s->since_ms : 0),
	    "quarantined", s->quarantined != 0,
	    "reason", s->quarantined ? s->reason : "");
}

static json_t *
class_json(struct gpool *p, enum gpool_class cls, int64_t now_mono)
{
	const struct gpool__class	*c = &p->cls[cls];
	const struct gpool__slot	*s;
	json_t				*o, *slots;
	int64_t				 busy = c->busy_ms;
	int				 i, used = 0, quarantined = 0, idle_q = 0, waiting = 0;

	if ((slots = json_array()) == NULL)
		return NULL;
	for (i = 0; i < c->total; i++) {
		s = &c->slot[i];
		used += s->in_use != 0;
		quarantined += s->quarantined != 0;
		idle_q += s->quarantined && !s->in_use;
		if (s->in_use && now_mono > s->since_mono)
			busy += now_mono - s->since_mono;
		json_array_append_new(slots, slot_json(s));
	}
	for (i = 0; i < GPOOL__MAX_WAITERS; i++)
		waiting += p->waiter[i].pid != 0 && p->waiter[i].cls == (int32_t)cls &&
		    __atomic_load_n(&p->waiter[i].state, __ATOMIC_RELAXED) == GPOOL__W_WAITING;
	o = json_pack("{s:i, s:i, s:i, s:i, s:i, s:I, s:I, s:I, s:o}",
	    "total", c->total, "used", used, "free", c->total - used - idle_q,
	    "quarantined", quarantined, "waiting", waiting,
	    "busy_ms", (json_int_t)busy, "acquired", (json_int_t)c->acquired,
	    "repairs", (json_int_t)c->repairs, "slots", slots);
	return o;
}

/* Under the lock: the processes starting a runner (gpool_starting). */
static int
starting_count(const struct gpool *p)
{
	int	n = 0;

	for (int i = 0; i < GPOOL__MAX_WAITERS; i++)
		n += p->starting[i] != 0;
	return n;
}

json_t *
gpool_snapshot_json(struct gpool *p)
{
	json_t	*o;
	int	 c;

	if (p == NULL || gpool__lock(p) < 0)
		return NULL;
	if ((o = json_object()) != NULL) {
		for (c = 0; c < GPOOL__NCLASS; c++)
			json_object_set_new(o, gpool__class_names[c], class_json(p, c, kb_mono_ms()));
		json_object_set_new(o, "since_ms", json_integer(p->created_ms));
		json_object_set_new(o, "runner_start", json_pack("{s:i}", "starting",
				    starting_count(p)));
		json_t *pause = gpool__pause_json(p);

		/* "llm_paused": the same for an llm_auth pause, as readers of that key expect. */
		json_object_set_new(o, "llm_paused", p->pause.paused == GPOOL_PAUSE_LLM_AUTH ?
				    json_incref(pause) : json_null());
		json_object_set_new(o, "paused", pause);
	}
	gpool__unlock(p);
	return o;
}

/* ------------------------------------------------------------ health */

/* Rows: probes of this GPU that failed before this one; columns: this one passed. */
static const enum gpool_health health_rules[GPOOL_HEALTH_FAILURES][2] = {
	[0] = { [false] = GPOOL_HEALTH_REPROBE, [true] = GPOOL_HEALTH_RETURN },
	[1] = { [false] = GPOOL_HEALTH_QUARANTINE, [true] = GPOOL_HEALTH_RETURN },
};
_Static_assert(GPOOL_HEALTH_FAILURES == 2, "health_rules needs a row per earlier failure");

enum gpool_health
gpool_health_decide(int failures_before, bool probe_passed)
{
	if (failures_before < 0)
		failures_before = 0;
	if (failures_before >= GPOOL_HEALTH_FAILURES)
		return GPOOL_HEALTH_QUARANTINE;	/* already condemned: a late pass changes nothing */
	return health_rules[failures_before][probe_passed];
}
