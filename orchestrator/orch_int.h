/* orch_int.h: what the orchestrator's files share — the run directory, the supervisor,
 * its progress display, Slurm, the red-team harvest, eval, and opening runs for report/. */
#ifndef KFORGE_ORCH_INT_H
#define KFORGE_ORCH_INT_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/base.h"
#include "orchestrator/orchestrator.h"
#include "report/report.h"
#include "rundir/rundir.h"

#define ORCH_MAX_RUN_DIR 1024	/* keeps every path under the run directory in PATH_MAX */
#define ORCH_MAX_DEATHS	3	/* worker deaths before a task is marked FAILED */

/* An open run: its directory, frozen config and task manifest. */
struct orch_run {
	char		 dir[PATH_MAX];	/* absolute */
	/* Where this process's supervisor keeps its own files (run.json, gpus.json,
	 * pool.json, supervisor.log/.lock/.pid): dir itself, or a Slurm shard's folder
	 * shards/<id>/ (orch_shard_main). */
	char		 home[PATH_MAX];
	struct kb_config cfg;
	struct kb_task	*tasks;
	int		 ntasks;
};

/* run.c: creating and opening run directories. orch_run_prepare is everything `kforge
 * run` checks before it creates the directory, and `kforge config` checks the same: the
 * config loaded (--set applied), its devices resolved into *gpus (the caller's), its
 * problems listed into run->tasks, and, for a local run, what this machine must have
 * (the API key variable, runner.user, the sandbox, runner.python, the backend). On
 * error run and *gpus hold nothing and err has the one line to print. */
int	orch_run_prepare(struct orch_run *run, const char *config_path,
			 const char *const *sets, int nsets, json_t **gpus, char *err,
			 size_t errlen);
int	orch_run_create(struct orch_run *run, const char *config_path, const char *run_dir,
			const char *const *sets, int nsets, char *err, size_t errlen);
int	orch_run_open(struct orch_run *run, const char *dir, char *err, size_t errlen);
/* `kforge resume DIR --set key=value`: changes to an open run's frozen config, limited to
 * the keys that describe the machine rather than the experiment (runner.python), applied
 * and written back to config.yaml so that later resumes keep them. -KB_ECONFIG with a
 * message for any other key or a bad value. */
int	orch_run_override(struct orch_run *run, const char *const *sets, int nsets, char *err,
			  size_t errlen);
void	orch_run_clear(struct orch_run *run);
/* Where a run goes without --run-dir: ORCH_RUNS_DIR/<name>, relative to the cwd. */
#define ORCH_RUNS_DIR "runs"
/* Resolves eval.device auto and lists the devices: fills gpus.json in the run dir. */
int	orch_resolve_devices(struct kb_config *cfg, json_t **gpus, char *err, size_t errlen);
/* refinement.hardware: the facts of every device of gpus (the document gpus.json
 * holds), from feedback/kforge_hardware.py run in python as a runner would run, added as
 * each device's "hardware". -KB_ECONFIG with a one-line message when the probe fails. */
int	orch_probe_hardware(const struct kb_config *cfg, const char *python, json_t *gpus,
			    char *err, size_t errlen);
/* The GPUs by nvidia-smi (index and name), else by /dev/nvidiaN: a JSON array, empty
 * when none. */
json_t	*orch_detect_gpus(void);
/* Runs the first nvidia-smi that answers `--query-gpu=QUERY --format=csv,noheader,nounits`;
 * 0 with its lines in r->out (clear r) and its path in path (may be NULL), or -KB_ENOENT
 * when none answered. */
int	orch_nvidia_smi(const char *query, struct kb_spawn_result *r, char *path,
			size_t pathlen);
/* Runs nvidia-smi with args (at most 8, NULL-ended): $KFORGE_NVIDIA_SMI where set, else the
 * first of the usual places that is there; 0 when it exited 0 (its output in r; clear r),
 * -KB_EPERM when it ran and refused (its output in r), -KB_ENOENT when none is there. */
int	orch_nvidia_smi_run(const char *const *args, struct kb_spawn_result *r, char *path,
			    size_t pathlen);
/* clocks.c: gpus.lock_clocks. Locks the SM clock of each of the run's GPUs (gpus, as
 * gpus.json lists them) at its maximum where the host permits it (nvidia-smi -lgc), and
 * returns what was done for run.json's "clocks": {locked, why, devices: [{index, mhz}]};
 * orch_clocks_unlock gives back the clocks a lock set (nvidia-smi -rgc). */
json_t	*orch_clocks_lock(const struct kb_config *cfg, const json_t *gpus);
void	orch_clocks_unlock(const json_t *clocks);
/* Updates run.json's fields from obj (merged), atomically. */
int	orch_run_update(const struct orch_run *run, json_t *fields);
/* The tasks neither DONE nor FAILED (a log that cannot be read counts as unfinished);
 * any: stop at the first (0 or 1). */
int	orch_run_unfinished(const struct orch_run *run, bool any);
/* pid of the live supervisor of dir, or 0. */
pid_t	orch_run_supervisor_pid(const char *dir);

/* claims.c: which shard works on which task (claims/<task id>), for a run spread over
 * Slurm shards; see the file's comment. */
#define ORCH_SHARD_ID_MAX	64
/* 1: the task is this shard's now (a new claim, or one its earlier life made); 0: another
 * shard holds it; <0: an error. */
int	orch_claim_take(const char *run_dir, const char *task_id, const char *shard,
			const char *host);
/* The claim's shard; -KB_ENOENT where nobody holds the task. */
int	orch_claim_owner(const char *run_dir, const char *task_id, char *shard, size_t n);
/* Takes the claim of shard dead (found dead by a watch) for shard: 1 taken, 0 not dead's
 * any more. */
int	orch_claim_steal(const char *run_dir, const char *task_id, const char *dead,
			 const char *shard, const char *host);
/* Gives up shard's claim of the task (a shard stopping before it finished the task). */
int	orch_claim_release(const char *run_dir, const char *task_id, const char *shard);
/* Removes every claim (no shard of the run alive); how many. */
int	orch_claims_clear(const char *run_dir);
/* The other shards' heartbeats, as seen from shard self. */
struct orch_shard_watch;
struct orch_shard_watch *orch_shard_watch_new(const char *run_dir, const char *self,
					      long timeout_s);
void	orch_shard_watch_free(struct orch_shard_watch *w);
int	orch_shard_watch_look(struct orch_shard_watch *w);
/* The shard has said it ended, or its heartbeat has not changed for the timeout. */
bool	orch_shard_watch_dead(struct orch_shard_watch *w, const char *id);
int	orch_shard_watch_ndead(struct orch_shard_watch *w);	/* how many are */

/* One supervisor of a Slurm run (slurm.c): its id is "<array job>_<index>", the same
 * across a requeue. */
struct orch_shard {
	char	id[ORCH_SHARD_ID_MAX];
	char	host[256];
	char	job[64];		/* SLURM_JOB_ID, "" outside Slurm */
	int	restarts;		/* SLURM_RESTART_COUNT */
};

struct orch_sup_opts {
	bool	detach;
	bool	quiet;			/* no progress display or summary lines */
	int	progress_interval_s;	/* summary lines when stdout is not a terminal */
	/* A shard of a Slurm run: tasks are claimed before a worker starts on them, the
	 * supervisor's files are in run->home, and it ends when nothing is left to claim. */
	const struct orch_shard *shard;
};
/* The run stopped because the LLM endpoint refused the credentials (401/403): nothing
 * failed; fix the key and resume. EX_TEMPFAIL of sysexits.h: "try again later". */
#define ORCH_EXIT_LLM_PAUSED 75
/* The machine cannot build or run candidates (the selftest before any model request
 * failed, or a turn met an env_error): nothing failed and no turn was spent; fix what
 * the message names and resume. EX_UNAVAILABLE of sysexits.h: "a support program or
 * file does not exist". */
#define ORCH_EXIT_ENV 69
/* A shard stopped on Slurm's warning that its time limit is near: orch_shard_main
 * requeues it, then exits 0 (never kforge's own exit status). */
#define ORCH_EXIT_TIME_LIMIT 3
/* 0: finished, or stopped on request; 1: could not start or had to stop (halt);
 * ORCH_EXIT_LLM_PAUSED; ORCH_EXIT_ENV; a shard's ORCH_EXIT_TIME_LIMIT. */
int	orch_supervise(struct orch_run *run, const struct orch_sup_opts *opts);

/* slurm.c: cluster.engine slurm (see the file's comment). */
bool	orch_slurm_engine(const struct kb_config *c);
/* run and resume of a Slurm run: submits add shards (0: as many as cluster.shards, or
 * as tasks are left, where none of the run's is with Slurm; none where some are), then
 * follows the run unless opts->detach. The exit status of kforge run. */
int	orch_slurm_launch(struct orch_run *run, const struct orch_sup_opts *opts, int add);
/* sbatch of an array of n shards, recorded in run.json's cluster.jobs. */
int	orch_slurm_submit(struct orch_run *run, int n, char *err, size_t errlen);
/* The run's elements squeue lists: [{id, state, node, reason}]; NULL where it failed. */
json_t	*orch_slurm_squeue(const char *run_dir, char *err, size_t errlen);
/* Each shard's record beside its element's Slurm state (squeue as above). */
json_t	*orch_slurm_shards(const char *run_dir, json_t *squeue);
/* scancel of the run's arrays: pending elements cancelled and running ones sent SIGTERM
 * (a graceful stop), or, hard, every element killed. */
int	orch_slurm_cancel(const char *run_dir, bool hard, char *err, size_t errlen);
/* `kforge shard DIR`: one array element's supervisor; id NULL takes Slurm's. */
int	orch_shard_main(const char *dir, const char *id, const struct orch_sup_opts *opts);

/* progress.c: what a foreground run shows while it works (kforge run and resume).
 * On a terminal, a block redrawn in place about once a second, with the log lines
 * (stderr) printed above it: the supervisor's own through the logger's writer hook,
 * the workers' through a pipe the supervisor reads. Else a one-line summary every
 * interval, the first at once. Either way a final summary at the end. Task states come
 * from rpt_summarize, as status has them, redone only for the logs whose size or mtime
 * changed since the last look; the slots from the pool snapshot the supervisor
 * publishes. Every function accepts NULL (the display is off) and does nothing. */
#define ORCH_PROGRESS_INTERVAL_S	30	/* default of --progress-interval */
#define ORCH_PROGRESS_TOP		3	/* best speedups shown */

enum orch_progress_mode {
	ORCH_PROGRESS_OFF,	/* --quiet, --detach */
	ORCH_PROGRESS_LINES,	/* stdout is not a terminal */
	ORCH_PROGRESS_TERMINAL,
};

/* One look at a run, as the display shows it. */
struct orch_progress_stats {
	const char	*run_name;
	int		 ntasks;
	int		 in_state[RPT_ST__N];	/* DONE and FAILED: all such; others: with a worker */
	int		 pending;		/* neither finished nor with a worker */
	long		 turns_done, turns_total;
	int		 build_busy, build_total, build_waiting;	/* the pool's compile class */
	int		 runners_starting;	/* workers starting a runner (in no slot) */
	int		 exec_busy, exec_total, exec_waiting;	/* its exec class */
	int		 llm_busy, llm_waiting;
	long		 llm_done, prompt_tokens, completion_tokens;
	int		 ncorrect;		/* tasks with a correct kernel */
	struct {
		const char	*task;
		double		 speedup;
	}		 best[ORCH_PROGRESS_TOP];	/* best correct speedups, fastest first */
	int		 nbest;
	int64_t		 elapsed_ms;
	int64_t		 eta_ms;		/* < 0: cannot be estimated yet */
};

enum orch_progress_mode orch_progress_mode_for(bool quiet, bool detach);
/* NULL for ORCH_PROGRESS_OFF. run is borrowed until orch_progress_finish. */
struct orch_progress *orch_progress_start(const struct orch_run *run,
					  enum orch_progress_mode mode, int interval_s);
/* Whether task i has a worker (the supervisor says so at launch and at reaping). */
void	orch_progress_worker(struct orch_progress *p, int i, bool has_worker);
/* In a freshly forked worker: closes what the worker must not hold and returns the fd
 * its log lines go to (the pipe to the supervisor on a terminal, else fallback). */
int	orch_progress_worker_log_fd(struct orch_progress *p, int fallback);
/* The fd to poll for the workers' log lines (-1: none), and reading them. */
int	orch_progress_log_poll_fd(const struct orch_progress *p);
void	orch_progress_read_logs(struct orch_progress *p);
/* About once a second, with the pool snapshot the supervisor publishes (borrowed). */
void	orch_progress_update(struct orch_progress *p, json_t *pool);
/* Clears the display, prints the final summary ("finished", "stopped", "paused") and
 * frees p. */
void	orch_progress_finish(struct orch_progress *p, const char *outcome);

/* The pure parts, for tests. render writes the block (one line per part, each cut to
 * width - 1 columns when width > 0) or, with block false, the one summary line. */
void	orch_progress_render(const struct orch_progress_stats *st, bool block, int width,
			     struct kb_buf *out);
void	orch_progress_render_final(const struct orch_progress_stats *st, const char *outcome,
				   struct kb_buf *out);
void	orch_fmt_duration(int64_t ms, char *out, size_t len);	/* "12s", "3m05s", "1h02m" */
/* What is left at the rate of the turns done so far: -1 until one turn is done. */
int64_t	orch_eta_ms(long turns_done, long turns_left, int64_t elapsed_ms);
/* The estimate the display shows, one look at a time (turns and tasks counted since this
 * process started the run or resumed it). It is -1 ("—") until the rate means something:
 * a task finished, or ORCH_ETA_MIN_SHARE of the turns to do are done; then the finish
 * orch_eta_ms's rate gives, smoothed over about ORCH_ETA_SMOOTHING of the elapsed time,
 * so that it counts down with the clock instead of swinging at each turn's end (a first
 * turn done after a long start-up once read 2m48s, then 5m58s, 1m30s, for a 47 s run). */
#define ORCH_ETA_MIN_SHARE	0.1
#define ORCH_ETA_SMOOTHING	0.25
struct orch_eta {
	int64_t	end_ms;		/* the smoothed finish, on the elapsed clock; -1: none yet */
	int64_t	at_ms;		/* the elapsed time of the last look */
};
#define ORCH_ETA_INIT	{ -1, 0 }
int64_t	orch_eta_next(struct orch_eta *e, long turns_done, long turns_left, int tasks_finished,
		      int64_t elapsed_ms);

/* readers.c: the commands that read a run directory are report/'s (report.h); these
 * open each run for them — its frozen config and task list (config.c, run.c) and how its
 * speeds are timed (feedback/) — and tell them what only the orchestrator knows: whether
 * a supervisor holds the run, and a Slurm run's shards. A run that cannot be opened is a
 * line on stderr and 1; else report/'s exit status. */
int	orch_cmd_status(const char *dir, bool json);
/* What status reads of every task's log, read now and kept (report's status cache), so
 * that the first status after a run needs no log read. The supervisor, at a run's end,
 * with the run it holds open. */
void	orch_status_cache_fill(const struct orch_run *run);
int	orch_cmd_tail(const char *dir, const char *task, bool follow);
/* accept: NULL-ended rules whose suspect turns count as correct (report --accept). */
int	orch_cmd_report(const char *dir, bool json, const char *const *accept);
int	orch_cmd_report_files(const char *const *dirs, int ndirs, const char *const *accept,
			      const struct rpt_files *o);
int	orch_cmd_compare(const char *const *dirs, int ndirs, bool json,
			 const char *const *accept);
int	orch_cmd_subset(const char *const *dirs, int ndirs, int size, const char *out,
			uint64_t seed);
int	orch_cmd_viewer(const char *dir, const char *addr, int port);

/* stop.c: `kforge stop DIR`: SIGTERM to the run's supervisor (a graceful stop), then
 * waits up to timeout_s for it to be gone. 0, or 1 with a line on stderr. */
int	orch_cmd_stop(const char *dir, int timeout_s);

/* redteam.c: a red-team run's findings (redteam.enabled). A harvest keeps every
 * candidate of the run judged correct, and apart from those every one judged suspect,
 * whose speedup is at least redteam.min_speedup, under <run>/redteam/ (rundir.h's
 * RD_FINDING entries: the kernel, the problem, result.json and a file for the adversarial
 * suite with its header lines), writes redteam/index.json last, records the counts in
 * run.json, and prints one line per kept candidate to out (NULL: nothing printed). The
 * caller holds the run (its supervisor's lock). 0, or a negative KB_E* with one line in
 * err. */
struct orch_redteam_kept {
	int	correct, suspect;	/* candidates kept */
	int	unfinished;		/* tasks not finished: harvested as far as judged */
};
int	orch_redteam_harvest(const struct orch_run *run, FILE *out,
			     struct orch_redteam_kept *kept, char *err, size_t errlen);
/* `kforge redteam --harvest DIR [--quiet]`: 0 harvested; 1 not a red-team run, a
 * supervisor on it, or a write that failed; 2 not a run directory. */
int	orch_cmd_redteam_harvest(const char *dir, bool quiet);

/* eval.c. orch_cmd_eval's return value is the verdict as an exit status (the table in
 * eval.c); orch_eval_help prints that table and the evaluation's defaults, for
 * `kforge eval --help`. */
void	orch_eval_help(FILE *fp);
int	orch_cmd_eval(const char *problem, const char *kernel, const char *device,
		      const char *const *sets, int nsets, bool json);

/* doctor.c: checks every prerequisite of a run on device (cpu, cuda, auto, or NULL: the
 * config's eval.device); config may be NULL (the defaults). 0 when the device can work,
 * 1 when it cannot, 2 for a config that does not load. fresh rebuilds the self-test. */
/* `kforge baseline CONFIG`: the reference timings of the config's problems, measured into
 * the shared cache ahead of a run (baseline.c). 0 when every problem has them, 1 when one
 * failed, 2 for a bad config. */
int	orch_cmd_baseline(const char *config, const char *const *sets, int nsets);
int	orch_cmd_doctor(const char *config, const char *device, bool json, bool fresh);

#endif
