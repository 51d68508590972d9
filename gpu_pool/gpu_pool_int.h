/*
 * gpu_pool_int.h: the layout of the shared mapping and the helpers the gpu_pool files
 * share. Not part of the public interface (tests and tools/pool-inspect may read it).
 *
 * Invariant, per class, whenever the lock is free and nobody is between taking a
 * semaphore unit and claiming a slot:
 *     sem value + #slots (in_use or quarantined) + #waiters holding a unit == total
 * Every change to the table and every sem_post/sem_trywait that keeps it happens under
 * the lock; the only unit that moves outside the lock is the one sem_wait hands an
 * acquirer, and the acquirer marks its waiter record GOT right after. The audit
 * (gpool_reclaim) restores the invariant after deaths. An extra unit can never lease a
 * slot twice: claims are made under the lock from the table, and an acquirer that
 * holds a unit but finds no free slot drops the unit (that is the repair of an excess).
 *
 * Crash consistency inside the critical section: in_use is the commit flag. A claim
 * writes the slot's fields and then sets in_use; a release clears in_use first. The
 * repair after EOWNERDEAD wipes the fields of every slot that is not in_use.
 */
#ifndef KFORGE_GPU_POOL_INT_H
#define KFORGE_GPU_POOL_INT_H

#include <pthread.h>
#include <semaphore.h>

#include "base/base.h"
#include "gpu_pool/gpu_pool.h"

#define GPOOL__MAGIC		0x6b67706fu	/* "kgpo" */
#define GPOOL__VERSION		1
#define GPOOL__TASK_LEN		64
#define GPOOL__REASON_LEN	128
#define GPOOL__MAX_WAITERS	1024

struct gpool__slot {
	int32_t		 in_use;	/* commit flag; see above */
	int32_t		 quarantined;
	int32_t		 device;	/* CUDA ordinal; -1 for CPU slots */
	pid_t		 owner;		/* 0 once a dead owner's runner is still alive */
	pid_t		 runner;
	uint64_t	 runner_start;	/* /proc starttime of runner (pid-reuse guard); 0 unknown */
	int64_t		 since_ms;	/* CLOCK_REALTIME, for status */
	int64_t		 since_mono;	/* CLOCK_MONOTONIC, for busy_ms */
	char		 task[GPOOL__TASK_LEN];
	char		 reason[GPOOL__REASON_LEN];
};

struct gpool__class {
	sem_t		 free;		/* counter and wake-up; the table is the truth */
	int32_t		 total;
	int32_t		 next;		/* round-robin start for the next claim */
	int64_t		 busy_ms;	/* closed leases only; snapshots add the open ones */
	int64_t		 acquired;
	int64_t		 repairs;	/* drift corrected by the audit or an acquirer */
	struct gpool__slot slot[GPOOL_MAX_SLOTS];
};

enum gpool__wstate { GPOOL__W_FREE, GPOOL__W_WAITING, GPOOL__W_GOT };

/* One process inside gpool_acquire. pid 0 = free record. state is written outside the
 * lock (WAITING -> GOT) with an atomic store; everything else under the lock. */
struct gpool__waiter {
	pid_t		 pid;
	int32_t		 cls;
	int32_t		 state;
};

struct gpool {
	uint32_t	 magic, version;
	size_t		 map_size;
	int64_t		 created_ms;
	pthread_mutex_t	 mu;		/* PTHREAD_PROCESS_SHARED + PTHREAD_MUTEX_ROBUST */
	struct gpool__class cls[GPOOL__NCLASS];
	struct gpool__waiter waiter[GPOOL__MAX_WAITERS];
};

/* Test-only: called at chosen points so a fault-injection test can make a process stop
 * (and be SIGKILLed) there: inside the critical section of a claim or a release, or
 * holding a unit in transit (after sem_wait, before the lock). NULL in production. */
enum gpool__hook_point { GPOOL__HOOK_CLAIM, GPOOL__HOOK_RELEASE, GPOOL__HOOK_TRANSIT };
extern void	(*gpool__test_hook)(enum gpool__hook_point where);

extern const char *const gpool__class_names[GPOOL__NCLASS];

int	gpool__lock(struct gpool *p);
void	gpool__unlock(struct gpool *p);
/* Frees a leased slot under the lock: busy time, wipe, and a sem_post unless the slot
 * is quarantined (its unit stays out of circulation). */
void	gpool__slot_free(struct gpool *p, enum gpool_class cls, int i);
bool	gpool__valid(const struct gpool *p, enum gpool_class cls, int slot);
/* From /proc/<pid>/stat: start time (clock ticks since boot) and state letter. */
int	gpool__proc_stat(pid_t pid, uint64_t *start, char *state);

#endif /* KFORGE_GPU_POOL_INT_H */
