/*
 * orchestrator.h: the supervisor and the `kforge` command line — config loading,
 * the run directory, forking and reaping workers, status, tail and report.
 *
 * The supervisor is the only process that forks workers. It blocks its signals before
 * any fork and reads them from a signalfd; it does no work in signal handlers.
 * Ownership: functions borrow their inputs; a loaded config belongs to the caller
 * (kb_config_clear). Processes: the kforge command (main) only.
 */
#ifndef KFORGE_ORCHESTRATOR_H
#define KFORGE_ORCHESTRATOR_H

#include <stddef.h>
#include <stdio.h>

#include "base/base.h"

/* ---------------------------------------------------------------- config */

/* Loads a YAML experiment config, applies --set overrides ("a.b.c=value", parsed as
 * YAML scalars or flow sequences), checks every key and type, and fills defaults.
 * On error returns -KB_ECONFIG and writes one line to err:
 *   "configs/x.yaml:3:5: llm.temprature: unknown key (did you mean 'temperature'?)"
 *   "configs/x.yaml:7:12: eval.perf_trials: expected an integer in 1..10000, got 'many'"
 *   "configs/x.yaml:4:54: not valid UTF-8: byte 0xe9 at offset 125 (invalid trailing
 *    UTF-8 octet); save the file as UTF-8"
 *   "configs/x.yaml: llm.model: required key is missing"
 *   "--set eval.device=gpu: eval.device: expected one of cpu, cuda, auto, got 'gpu'"
 * The loaded config keeps where problems.dir, .levels and .ids were set, so that
 * orch_tasks_list's messages name the same places.
 * eval.device "auto" is kept as is here; the caller resolves it before freezing. */
int	orch_config_load(const char *path, const char *const *sets, int nsets,
			 struct kb_config *out, char *err, size_t errlen);
/* Same, from a string (tests, fuzzing); name is used in messages in place of a path. */
int	orch_config_load_string(const char *yaml, size_t len, const char *name,
				const char *const *sets, int nsets, struct kb_config *out,
				char *err, size_t errlen);
/* Writes the fully resolved config as YAML that orch_config_load reads back to an
 * equal struct. */
int	orch_config_emit(const struct kb_config *c, FILE *fp);
/* Writes every key the loader knows, from its schema table: the key alone on a line,
 * then indented lines "type: ...", "default: ...", "required when: K is V" (only where
 * one applies) and the key's meaning. kforge config --reference prints it. */
int	orch_config_reference(FILE *fp);

/* ----------------------------------------------------------------- tasks */

/* Lists the tasks of a config: every problem file level{N}/{id}_{Name}.py under
 * problems.dir whose level and id are selected, times problems.samples, sorted by
 * (level, id, sample). *out is malloc'd; caller frees. On error returns -KB_ECONFIG
 * (or -KB_ENOMEM) with one line in err that names the key it blames as the loader does:
 *   "configs/x.yaml:2:14: problems.dir: cannot open '/kb': No such file or directory"
 *   "--set problems.ids=900: problems.ids: no problem at levels [1] in '/kb' has an id
 *    in 900 (the ids there run from 1 to 100)" */
int	orch_tasks_list(const struct kb_config *c, struct kb_task **out, int *n, char *err,
			size_t errlen);

/* ------------------------------------------------------------------- CLI */

/* Entry point of the kforge binary (argv[0] is the program). Returns the exit code. */
int	orch_main(int argc, char **argv);

#endif /* KFORGE_ORCHESTRATOR_H */
