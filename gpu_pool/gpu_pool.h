/*
 * gpu_pool.h: the run-wide limits shared by every worker through one MAP_SHARED
 * mapping: exclusive execution slots (one per GPU, or CPU execution slots when
 * eval.device is cpu), CPU compile slots, and LLM requests in flight.
 *
 * Each class is a POSIX counting semaphore (the counter and wake-up) over a slot table
 * (the truth: owner pid, runner pid, task, since). The table is guarded by a
 * process-shared robust mutex; a holder that dies inside the critical section is
 * repaired on the next lock (EOWNERDEAD -> repair -> pthread_mutex_consistent).
 *
 * Lifecycle: the supervisor calls gpool_create() before its first fork and
 * gpool_reclaim() for every pid it reaps; workers acquire, set_runner and release, and
 * quarantine a GPU they hold once it fails its health probes. A CLI process never maps
 * the pool: the supervisor publishes snapshots (gpool_snapshot_json) into the run
 * directory, and reports quarantined slots from them.
 * Ownership: the pool belongs to the supervisor; gpool_destroy() only there.
 */
#ifndef KFORGE_GPU_POOL_H
#define KFORGE_GPU_POOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

enum gpool_class {
	GPOOL_EXEC,	/* a GPU (exclusive) or a CPU execution slot */
	GPOOL_COMPILE,	/* a CPU compile slot */
	GPOOL_LLM,	/* one LLM request in flight */
	GPOOL__NCLASS
};

#define GPOOL_MAX_SLOTS 256

struct gpool;

struct gpool_spec {
	/* EXEC slots: device index per slot (CUDA ordinal; -1 for CPU slots). */
	const int	*exec_devices;
	int		 nexec;
	int		 ncompile;
	int		 nllm;
};

int	gpool_create(struct gpool **out, const struct gpool_spec *spec);
void	gpool_destroy(struct gpool *p);

/* Blocks until a slot of the class is free (timeout_ms < 0: forever), claims it for
 * getpid() and the task, and returns the slot index in *slot. -KB_ETIMEDOUT,
 * -KB_ESTOPPED (should_stop returned true while waiting) or -KB_ESYS. */
int	gpool_acquire(struct gpool *p, enum gpool_class cls, const char *task, int timeout_ms,
		      bool (*should_stop)(void *), void *stop_arg, int *slot);
/* The CUDA ordinal of an EXEC slot (-1 for CPU slots). */
int	gpool_device(const struct gpool *p, int slot);
/* The processes that use a leased slot's GPU: an execute runs two (the candidate's runner
 * and the judge, feedback's), each recorded as it starts, and the slot is not leased
 * again while either runs, whatever became of its owner. */
enum gpool_runner {
	GPOOL_RUNNER_CANDIDATE,		/* the step's runner (every step has one) */
	GPOOL_RUNNER_JUDGE,		/* an execute's judge */
	GPOOL__NRUNNER
};
/* Records the runner child that uses the slot (0 to clear). */
int	gpool_set_runner(struct gpool *p, enum gpool_class cls, int slot, enum gpool_runner which,
			 pid_t runner);
int	gpool_release(struct gpool *p, enum gpool_class cls, int slot);

/* Time a worker spends outside any slot that status should still name: starting its
 * runner (a fork server importing torch, seconds on a worker's first step). on: this
 * process (getpid()) starts one now; off: it is done. Counted by the snapshot
 * ("runner_start") and forgotten when the process is reaped. 0, or -KB_ESYS;
 * -KB_EAGAIN when every record is taken (the start then goes unshown). */
int	gpool_starting(struct gpool *p, bool on);

/* Supervisor only: pid has been reaped. Frees the slots it owned once their runner is
 * gone too, then audits free + leased == total per class, repairing drift (logged).
 * Returns the number of slots freed. */
int	gpool_reclaim(struct gpool *p, pid_t dead);

/* GPU health after a runner crashed, timed out or reported a CUDA error (docs/DESIGN.md §4):
 * the holder probes the GPU in fresh processes while it still holds the slot (the pool
 * runs nothing; probing is the caller's), and this rule says what follows each probe.
 * One failed probe may be the fault's own debris (a context torn down late), so a GPU
 * leaves the pool (gpool_quarantine) only after GPOOL_HEALTH_FAILURES failed probes in a
 * row. */
#define GPOOL_HEALTH_FAILURES 2
enum gpool_health {
	GPOOL_HEALTH_RETURN,	 /* the probe passed: the GPU goes back to the pool */
	GPOOL_HEALTH_REPROBE,	 /* it failed, not yet often enough: probe again */
	GPOOL_HEALTH_QUARANTINE, /* it failed GPOOL_HEALTH_FAILURES times: out of the pool */
};
/* Pure: the step after a probe that passed or not, given how many probes of this GPU
 * failed before it (since the fault). */
enum gpool_health	gpool_health_decide(int failures_before, bool probe_passed);

/* Marks an EXEC slot unusable for the rest of the pool's life (a GPU that failed its
 * health probes), with the reason status shows; called by the worker holding it. Its
 * unit leaves circulation, so with every slot quarantined acquirers wait until
 * should_stop: the supervisor watches for that (the snapshot's "quarantined").
 * Returns the number of EXEC slots still usable, counted under the same lock (so of
 * two workers quarantining the last two GPUs at once, exactly one sees 0). */
int	gpool_quarantine(struct gpool *p, int slot, const char *reason);

/* The run-wide pause (pause.c), with its kind: trouble that is no task's fault and that
 * every other task would meet too. LLM_AUTH: the endpoint refused the credentials;
 * workers stop at their next GENERATE (work past generation finishes). ENV: the machine
 * cannot build or run candidates; workers stop at their next step. The first worker to
 * see it calls gpool_pause (1: this call paused, or made an llm_auth pause an env one;
 * 0: it already was, as severely, and the first reason stands); workers poll
 * gpool_paused; the supervisor announces it once and stops the run when the work in
 * flight is done. Never cleared: a resumed run has a new pool. gpool_paused is
 * lock-free (cheap to poll) unless asked for the reason, copied into reason[n].
 * Kinds are ordered by severity. */
enum gpool_pause_kind { GPOOL_PAUSE_NONE, GPOOL_PAUSE_LLM_AUTH, GPOOL_PAUSE_ENV };
int	gpool_pause(struct gpool *p, enum gpool_pause_kind kind, const char *task,
		    const char *reason);
enum gpool_pause_kind gpool_paused(struct gpool *p, char *reason, size_t n);
const char *gpool_pause_kind_name(enum gpool_pause_kind kind);	/* "llm_auth", "env" */

/* Counters for status: used/total and waiters per class, busy milliseconds since
 * creation, "runner_start" ({"starting": the processes between gpool_starting's on and
 * off}, an object as a class is, so that a Slurm run's shards add up alike), "paused" (null, or {kind, reason, task, pid, since_ms}) and "llm_paused"
 * (the same when its kind is llm_auth, else null). Returned object
 * belongs to the caller. */
json_t	*gpool_snapshot_json(struct gpool *p);

#endif /* KFORGE_GPU_POOL_H */
