/* orch_int.h: what the orchestrator's files share — the run directory, the supervisor
 * and the read-only views (status, tail, report, eval). */
#ifndef KFORGE_ORCH_INT_H
#define KFORGE_ORCH_INT_H

#include <limits.h>
#include <stdbool.h>

#include "base/base.h"
#include "orchestrator/orchestrator.h"

#define ORCH_MAX_RUN_DIR 1024	/* keeps every path under the run directory in PATH_MAX */
#define ORCH_MAX_DEATHS	3	/* worker deaths before a task is marked FAILED */

/* An open run: its directory, frozen config and task manifest. */
struct orch_run {
	char		 dir[PATH_MAX];	/* absolute */
	struct kb_config cfg;
	struct kb_task	*tasks;
	int		 ntasks;
};

/* run.c: creating and opening run directories. */
int	orch_run_create(struct orch_run *run, const char *config_path, const char *run_dir,
			const char *const *sets, int nsets, char *err, size_t errlen);
int	orch_run_open(struct orch_run *run, const char *dir, char *err, size_t errlen);
void	orch_run_clear(struct orch_run *run);
/* Where a run goes without --run-dir: ORCH_RUNS_DIR/<name>, relative to the cwd. */
#define ORCH_RUNS_DIR "runs"
/* Resolves eval.device auto and lists the devices: fills gpus.json in the run dir. */
int	orch_resolve_devices(struct kb_config *cfg, json_t **gpus, char *err, size_t errlen);
/* The GPUs by nvidia-smi (index and name), else by /dev/nvidiaN: a JSON array, empty
 * when none. */
json_t	*orch_detect_gpus(void);
/* Runs the first nvidia-smi that answers `--query-gpu=QUERY --format=csv,noheader,nounits`;
 * 0 with its lines in r->out (clear r) and its path in path (may be NULL), or -KB_ENOENT
 * when none answered. */
int	orch_nvidia_smi(const char *query, struct kb_spawn_result *r, char *path,
			size_t pathlen);
/* Updates run.json's fields from obj (merged), atomically. */
int	orch_run_update(const struct orch_run *run, json_t *fields);
/* pid of the live supervisor of dir, or 0. */
pid_t	orch_run_supervisor_pid(const char *dir);

/* supervisor.c */
struct orch_sup_opts {
	bool	detach;
};
/* The run stopped because the LLM endpoint refused the credentials (401/403): nothing
 * failed; fix the key and resume. EX_TEMPFAIL of sysexits.h: "try again later". */
#define ORCH_EXIT_LLM_PAUSED 75
/* 0: finished, or stopped on request; 1: could not start or had to stop (halt);
 * ORCH_EXIT_LLM_PAUSED. */
int	orch_supervise(struct orch_run *run, const struct orch_sup_opts *opts);

/* views.c */
int	orch_cmd_status(const char *dir, bool json);
int	orch_cmd_tail(const char *dir, const char *task, bool follow);
int	orch_cmd_report(const char *dir, bool json);
int	orch_cmd_stop(const char *dir, int timeout_s);

/* eval.c */
int	orch_cmd_eval(const char *problem, const char *kernel, const char *device,
		      const char *const *sets, int nsets, bool json);

/* doctor.c: checks every prerequisite of a run on device (cpu, cuda, auto, or NULL: the
 * config's eval.device); config may be NULL (the defaults). 0 when the device can work,
 * 1 when it cannot, 2 for a config that does not load. fresh rebuilds the self-test. */
int	orch_cmd_doctor(const char *config, const char *device, bool json, bool fresh);

#endif
