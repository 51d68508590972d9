/*
 * gpu_pool_int.h: the layout of the shared mapping and the helpers the gpu_pool files
 * share. Not part of the public interface (tests and tools/pool-inspect may read it).
 *
 * Invariant, per class, whenever the lock is free:
 *     sem value + #slots (in_use or quarantined) + #waiters holding a unit == total
 * Every change to the table, every sem_post/sem_trywait on the class semaphore and every
 * grant happens under the lock. The audit (gpool_reclaim) restores the invariant after
 * deaths. An extra unit can never lease a slot twice: claims are made under the lock
 * from the table, and an acquirer that holds a unit but finds no free slot drops the
 * unit (that is the repair of an excess).
 *
 * Order: waiters queue per class by ticket. A free unit goes to the oldest waiter
 * (gpool__grant: its record turns GOT and its own semaphore is posted), and an acquirer
 * only takes a unit straight from the class semaphore when nobody of its class waits,
 * so each queue is FIFO and no task starves behind later arrivals.
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
#define GPOOL__VERSION		4
#define GPOOL__TASK_LEN		64
#define GPOOL__REASON_LEN	128
#define GPOOL__MAX_WAITERS	1024

struct gpool__slot {
	int32_t		 in_use;	/* commit flag; see above */
	int32_t		 quarantined;
	int32_t		 device;	/* CUDA ordinal; -1 for CPU slots */
	pid_t		 owner;		/* 0 once a dead owner's runner is still alive */
	pid_t		 runner[GPOOL__NRUNNER];
	uint64_t	 runner_start[GPOOL__NRUNNER];	/* /proc starttime (pid-reuse guard); 0
						 * unknown */
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
	int64_t		 next_ticket;	/* queue position of the next waiter */
	struct gpool__slot slot[GPOOL_MAX_SLOTS];
};

/* WAITING: queued. GOT: granted a unit (the holder claims a slot with it next). */
enum gpool__wstate { GPOOL__W_FREE, GPOOL__W_WAITING, GPOOL__W_GOT };

/* One process inside gpool_acquire. pid 0 = free record. Written under the lock (pid
 * and state with atomic stores, so the snapshot and audit read whole words). */
struct gpool__waiter {
	pid_t		 pid;
	int32_t		 cls;
	int32_t		 state;
	int64_t		 ticket;	/* FIFO order within the class */
	sem_t		 wake;		/* posted once by the grant */
};

/* The run-wide pause (pause.c). paused is its kind (enum gpool_pause_kind) and the
 * commit flag: the other fields are written under the lock before it is set. */
#define GPOOL__PAUSE_LEN	512
struct gpool__pause {
	int32_t		 paused;
	pid_t		 by;
	int64_t		 since_ms;	/* CLOCK_REALTIME */
	char		 task[GPOOL__TASK_LEN];
	char		 reason[GPOOL__PAUSE_LEN];
};

struct gpool {
	uint32_t	 magic, version;
	size_t		 map_size;
	int64_t		 created_ms;
	pthread_mutex_t	 mu;		/* PTHREAD_PROCESS_SHARED + PTHREAD_MUTEX_ROBUST */
	struct gpool__class cls[GPOOL__NCLASS];
	struct gpool__waiter waiter[GPOOL__MAX_WAITERS];
	struct gpool__pause pause;	/* pause.c */
	/* Workers starting their runner (lease.c, gpool_starting): a pid each, 0 free;
	 * written under the lock with atomic stores, forgotten when the pid is reaped. */
	pid_t		 starting[GPOOL__MAX_WAITERS];
};

/* Test-only: called at chosen points so a fault-injection test can make a process stop
 * (and be SIGKILLed) there: inside the critical section of a claim or a release, or
 * holding a granted unit (woken, before the lock). NULL in production. */
enum gpool__hook_point { GPOOL__HOOK_CLAIM, GPOOL__HOOK_RELEASE, GPOOL__HOOK_TRANSIT };
extern void	(*gpool__test_hook)(enum gpool__hook_point where);

extern const char *const gpool__class_names[GPOOL__NCLASS];

int	gpool__lock(struct gpool *p);
void	gpool__unlock(struct gpool *p);
/* Frees a leased slot under the lock: busy time, wipe, and a sem_post unless the slot
 * is quarantined (its unit stays out of circulation), then grants it to the queue. */
void	gpool__slot_free(struct gpool *p, enum gpool_class cls, int i);
/* Under the lock: hands free units of the class to its waiters, oldest first. */
void	gpool__grant(struct gpool *p, enum gpool_class cls);
bool	gpool__valid(const struct gpool *p, enum gpool_class cls, int slot);
/* The pause for the snapshot (under the lock): null, or {kind, reason, task, pid,
 * since_ms}. */
json_t	*gpool__pause_json(const struct gpool *p);

#endif /* KFORGE_GPU_POOL_INT_H */
