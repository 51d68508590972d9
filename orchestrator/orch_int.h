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
/* `kforge resume DIR --set key=value`: changes to an open run's frozen config, limited to
 * the keys that describe the machine rather than the experiment (runner.python), applied
 * and written back to config.yaml so that later resumes keep them. -KB_ECONFIG with a
 * message for any other key or a bad value. */
int	orch_run_override(struct orch_run *run, const char *const *sets, int nsets, char *err,
			  size_t errlen);
void	orch_run_clear(struct orch_run *run);
/* Resolves eval.device auto and lists the devices: fills gpus.json in the run dir. */
int	orch_resolve_devices(struct kb_config *cfg, json_t **gpus, char *err, size_t errlen);
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
/* The machine cannot build or run candidates (the selftest before any model request
 * failed, or a turn met an env_error): nothing failed and no turn was spent; fix what
 * the message names and resume. EX_UNAVAILABLE of sysexits.h: "a support program or
 * file does not exist". */
#define ORCH_EXIT_ENV 69
/* 0: finished, or stopped on request; 1: could not start or had to stop (halt);
 * ORCH_EXIT_LLM_PAUSED; ORCH_EXIT_ENV. */
int	orch_supervise(struct orch_run *run, const struct orch_sup_opts *opts);

/* views.c */
int	orch_cmd_status(const char *dir, bool json);
int	orch_cmd_tail(const char *dir, const char *task, bool follow);
int	orch_cmd_report(const char *dir, bool json);
int	orch_cmd_stop(const char *dir, int timeout_s);

/* eval.c */
int	orch_cmd_eval(const char *problem, const char *kernel, const char *device,
		      const char *const *sets, int nsets, bool json);

#endif
