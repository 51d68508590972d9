/*
 * gpu_pool_stress.c: N forked processes lease M exec slots for short random holds
 * while the parent, acting as the supervisor, SIGKILLs some of them at random (also
 * while they hold a slot) and some while they are stopped inside the pool's critical
 * section (through the test hook), reaps them and calls gpool_reclaim.
 *
 * Each holder checks, through a test-only shared page, that nobody else holds its slot
 * and that no more than M processes hold a slot at once. Both records are single
 * atomic words, so the parent can clear a killed child's marks exactly. At the end all
 * slots must be free and the semaphore back at M.
 *
 * Children keep leasing past their ITERS until the parent has made all its kills, so
 * the number of kills does not depend on how fast the children run against the parent
 * (on a loaded machine they could otherwise finish first).
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

#define NCHILD		8
#define NSLOT		3
#define ITERS		400
#define RANDOM_KILLS	40
#define LOCK_KILLS	6	/* half at the claim point, half at the release point */
#define STALL_LIMIT_MS	120000	/* no lease taken by anyone for this long: a deadlock */

struct shared {
	uint64_t	holders;		/* bit i: child i believes it holds a slot */
	int32_t		slot_holder[NSLOT];	/* child index + 1, or 0 */
	int32_t		violations;
	int32_t		max_holders;
	int32_t		arm;			/* 1: the next child at arm_where stops */
	int32_t		arm_where;
	pid_t		in_lock;		/* the child stopped inside the lock */
	int64_t		iterations;
	int32_t		kills_done;		/* the parent made all its kills */
};

static struct shared	*sh;
static pid_t		 parent_pid;
static struct gpool	*pool;

#include "kb_check.h"

static void
violation(const char *what, int me, int slot)
{
	__atomic_add_fetch(&sh->violations, 1, __ATOMIC_SEQ_CST);
	fprintf(stderr, "VIOLATION: child %d (pid %d) slot %d: %s\n", me, (int)getpid(), slot,
	    what);
}

/* In a child: stop inside the critical section when the parent armed it. */
static void
die_in_lock_hook(enum gpool__hook_point where)
{
	int32_t	one = 1;

	if ((int32_t)where != __atomic_load_n(&sh->arm_where, __ATOMIC_SEQ_CST) ||
	    !__atomic_compare_exchange_n(&sh->arm, &one, 0, false, __ATOMIC_SEQ_CST,
	    __ATOMIC_SEQ_CST))
		return;
	__atomic_store_n(&sh->in_lock, getpid(), __ATOMIC_SEQ_CST);
	for (;;)
		pause();
}

static void __attribute__((noreturn))
child_main(int me, unsigned seed)
{
	char		task[32];
	int		slot, rc, it, n, expect;
	uint64_t	prev;

	if (prctl(PR_SET_PDEATHSIG, SIGKILL) == -1 || getppid() != parent_pid)
		_exit(3);	/* never outlive a failed test */
	gpool__test_hook = die_in_lock_hook;
	snprintf(task, sizeof(task), "stress_c%d", me);
	for (it = 0; it < ITERS || !__atomic_load_n(&sh->kills_done, __ATOMIC_SEQ_CST); it++) {
		if ((rc = gpool_acquire(pool, GPOOL_EXEC, task, -1, NULL, NULL, &slot)) != 0) {
			violation("acquire failed", me, -1);
			_exit(2);
		}
		if (slot < 0 || slot >= NSLOT) {
			violation("slot out of range", me, slot);
			_exit(2);
		}
		expect = 0;
		if (!__atomic_compare_exchange_n(&sh->slot_holder[slot], &expect, me + 1, false,
		    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
			violation("slot already held by another child", me, slot);
		prev = __atomic_fetch_or(&sh->holders, 1ull << me, __ATOMIC_SEQ_CST);
		n = __builtin_popcountll(prev) + 1;
		if (n > NSLOT)
			violation("more holders than slots", me, slot);
		if (n > __atomic_load_n(&sh->max_holders, __ATOMIC_SEQ_CST))
			__atomic_store_n(&sh->max_holders, n, __ATOMIC_SEQ_CST);
		if (pool->cls[GPOOL_EXEC].slot[slot].owner != getpid() ||
		    !pool->cls[GPOOL_EXEC].slot[slot].in_use)
			violation("table does not name us as the owner", me, slot);

		usleep(rand_r(&seed) % 2000);

		__atomic_fetch_and(&sh->holders, ~(1ull << me), __ATOMIC_SEQ_CST);
		expect = me + 1;
		if (!__atomic_compare_exchange_n(&sh->slot_holder[slot], &expect, 0, false,
		    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
			violation("our slot mark was changed", me, slot);
		if (gpool_release(pool, GPOOL_EXEC, slot) != 0)
			violation("release failed", me, slot);
		__atomic_add_fetch(&sh->iterations, 1, __ATOMIC_SEQ_CST);
	}
	_exit(0);
}

static pid_t	kids[NCHILD];
static unsigned	spawned;	/* seeds */
static int	completed;	/* children that ran all ITERS */

static void
spawn(int i, unsigned seed)
{
	pid_t	pid = fork();

	if (pid == 0)
		child_main(i, seed);
	if (pid == -1) {
		perror("fork");
		exit(1);
	}
	kids[i] = pid;
}

/* The supervisor's reap path: clear the dead child's marks, then reclaim. */
static int
reap_one(pid_t pid, int status, int *freed, int *killed_seen)
{
	int	i, expect;

	for (i = 0; i < NCHILD && kids[i] != pid; i++)
		;
	if (i == NCHILD)
		return -1;
	kids[i] = 0;
	if (WIFSIGNALED(status)) {
		(*killed_seen)++;
		__atomic_fetch_and(&sh->holders, ~(1ull << i), __ATOMIC_SEQ_CST);
		for (int s = 0; s < NSLOT; s++) {
			expect = i + 1;
			__atomic_compare_exchange_n(&sh->slot_holder[s], &expect, 0, false,
			    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
		}
	} else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "child %d exited with status %d\n", i, status);
		failures++;
	} else {
		completed++;
	}
	*freed += gpool_reclaim(pool, pid);
	if (WIFSIGNALED(status))	/* kills are capped: every index finishes in the end */
		spawn(i, ++spawned);
	return i;
}

static int
live_kids(void)
{
	int	n = 0;

	for (int i = 0; i < NCHILD; i++)
		n += kids[i] != 0;
	return n;
}

/* Arms the hook, waits for a child to stop inside the lock and kills it there. While
 * armed the parent makes no pool call: it would block on the held lock. */
static bool
kill_in_lock(int where)
{
	int64_t	until = kb_mono_ms() + 3000;
	int32_t	one = 1;
	pid_t	victim;

	__atomic_store_n(&sh->in_lock, 0, __ATOMIC_SEQ_CST);
	__atomic_store_n(&sh->arm_where, where, __ATOMIC_SEQ_CST);
	__atomic_store_n(&sh->arm, 1, __ATOMIC_SEQ_CST);
	while ((victim = __atomic_load_n(&sh->in_lock, __ATOMIC_SEQ_CST)) == 0) {
		if (kb_mono_ms() > until &&
		    __atomic_compare_exchange_n(&sh->arm, &one, 0, false, __ATOMIC_SEQ_CST,
		    __ATOMIC_SEQ_CST))
			return false;	/* nobody came: disarmed */
		usleep(1000);
	}
	usleep(5000);	/* let others pile up on the lock */
	kill(victim, SIGKILL);
	return true;
}

int
main(void)
{
	int	 dev[NSLOT] = { 0, 1, 2 };
	struct gpool_spec spec = { .exec_devices = dev, .nexec = NSLOT, .ncompile = 1, .nllm = 1 };
	int	 random_kills = 0, lock_kills = 0, killed_seen = 0, freed = 0, st, sem = -1;
	int	 tick = 0, victim, slots[NSLOT];
	int64_t	 start, progress_at, seen_iterations = -1;
	unsigned seed = 12345;
	pid_t	 pid;
	json_t	*snap, *e;

	kb_log_init("stress", 2);
	parent_pid = getpid();
	kb_log_set_level(KB_LOG_WARN);
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED || gpool_create(&pool, &spec) != 0)
		return 1;
	memset(sh, 0, sizeof(*sh));
	for (int i = 0; i < NCHILD; i++)
		spawn(i, ++spawned);

	start = progress_at = kb_mono_ms();
	while (live_kids() > 0) {
		if (__atomic_load_n(&sh->iterations, __ATOMIC_SEQ_CST) != seen_iterations) {
			seen_iterations = __atomic_load_n(&sh->iterations, __ATOMIC_SEQ_CST);
			progress_at = kb_mono_ms();
		} else if (kb_mono_ms() - progress_at > STALL_LIMIT_MS) {
			fprintf(stderr, "stress: no lease taken for %d ms (iterations %lld)\n",
			    STALL_LIMIT_MS, (long long)sh->iterations);
			for (int i = 0; i < NCHILD; i++)
				if (kids[i] != 0)
					kill(kids[i], SIGKILL);
			return 1;
		}
		tick++;
		if (lock_kills < LOCK_KILLS && tick % 25 == 0 && kill_in_lock(lock_kills % 2))
			lock_kills++;
		if (random_kills < RANDOM_KILLS && rand_r(&seed) % 10 == 0) {
			victim = (int)(rand_r(&seed) % NCHILD);
			if (kids[victim] != 0 && kill(kids[victim], SIGKILL) == 0)
				random_kills++;
		}
		while ((pid = waitpid(-1, &st, WNOHANG)) > 0)
			reap_one(pid, st, &freed, &killed_seen);
		if (lock_kills >= LOCK_KILLS && random_kills >= RANDOM_KILLS)
			__atomic_store_n(&sh->kills_done, 1, __ATOMIC_SEQ_CST);
		usleep(5000);
	}
	while ((pid = waitpid(-1, &st, WNOHANG)) > 0)
		reap_one(pid, st, &freed, &killed_seen);

	fprintf(stderr, "stress: %lld iterations, %d random kills, %d kills inside the lock, "
	    "%d deaths, %d leases reclaimed, max %d holders, %lld repairs, %.1f s\n",
	    (long long)sh->iterations, random_kills, lock_kills, killed_seen, freed,
	    sh->max_holders, (long long)pool->cls[GPOOL_EXEC].repairs,
	    (double)(kb_mono_ms() - start) / 1000);
	CHECK(sh->violations == 0);
	CHECK(sh->max_holders >= 2 && sh->max_holders <= NSLOT);
	CHECK(lock_kills == LOCK_KILLS);
	CHECK(random_kills == RANDOM_KILLS);
	CHECK(freed >= 1);
	CHECK(completed == NCHILD);
	CHECK(sh->iterations >= NCHILD * ITERS);

	/* One last audit with nobody left, as the supervisor does after its last reap. */
	CHECK(gpool_reclaim(pool, 999999) == 0);
	sem_getvalue(&pool->cls[GPOOL_EXEC].free, &sem);
	CHECK(sem == NSLOT);
	for (int i = 0; i < NSLOT; i++)
		CHECK(!pool->cls[GPOOL_EXEC].slot[i].in_use && pool->cls[GPOOL_EXEC].slot[i].owner == 0);
	for (int i = 0; i < GPOOL__MAX_WAITERS; i++)
		CHECK(pool->waiter[i].pid == 0);
	snap = gpool_snapshot_json(pool);
	e = json_object_get(snap, "exec");
	CHECK(json_integer_value(json_object_get(e, "used")) == 0);
	CHECK(json_integer_value(json_object_get(e, "free")) == NSLOT);
	CHECK(json_integer_value(json_object_get(e, "waiting")) == 0);
	json_decref(snap);
	for (int i = 0; i < NSLOT; i++)
		CHECK(gpool_acquire(pool, GPOOL_EXEC, "final", 0, NULL, NULL, &slots[i]) == 0);
	for (int i = 0; i < NSLOT; i++)
		CHECK(gpool_release(pool, GPOOL_EXEC, slots[i]) == 0);
	gpool_destroy(pool);
	if (failures) {
		fprintf(stderr, "gpu_pool_stress: %d check(s) failed\n", failures);
		return 1;
	}
	printf("gpu_pool_stress: ok\n");
	return 0;
}
