/* views.c: read-only commands over a run directory — status, tail, report — and stop.
 * They never map the pool or touch a log for writing: the supervisor publishes
 * pool.json, the trajectories are the truth. */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fsm/fsm.h"
#include "orchestrator/orch_int.h"

static const double fast_p_levels[] = { 0.5, 1.0, 1.5, 2.0 };
#define N_FAST_P (sizeof(fast_p_levels) / sizeof(fast_p_levels[0]))

static int
open_or_complain(struct orch_run *run, const char *dir)
{
	char	err[512];

	if (orch_run_open(run, dir, err, sizeof(err)) < 0) {
		fprintf(stderr, "kforge: %s\n", err);
		return -1;
	}
	return 0;
}

static json_t *
load_json_in(const char *dir, const char *name)
{
	char	path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return json_load_file(path, 0, NULL);
}

/* --------------------------------------------------------------- status */

static void
print_resource(const char *label, json_t *r)
{
	if (!json_is_object(r))
		return;
	printf("  %-8s %3lld/%-3lld busy  %3lld waiting  %5.1f%% utilised",
	       label, (long long)json_integer_value(json_object_get(r, "used")),
	       (long long)json_integer_value(json_object_get(r, "total")),
	       (long long)json_integer_value(json_object_get(r, "waiting")),
	       100.0 * json_number_value(json_object_get(r, "utilisation")));
	if (json_integer_value(json_object_get(r, "quarantined")) > 0)
		printf("  %lld quarantined",
		       (long long)json_integer_value(json_object_get(r, "quarantined")));
	printf("\n");
}

/* The quarantined GPUs: run.json's list, which the supervisor rewrites on every change;
 * pool.json's slots for a run directory written before run.json kept one. */
static json_t *
quarantined_gpus(json_t *info, json_t *pool)
{
	json_t	*list = json_object_get(info, "quarantined"), *slot;
	size_t	 i;

	if (json_is_array(list))
		return json_incref(list);
	list = json_array();
	json_array_foreach(json_object_get(json_object_get(pool, "exec"), "slots"), i, slot)
		if (json_is_true(json_object_get(slot, "quarantined")))
			json_array_append_new(list, json_pack("{s:i, s:O, s:O}", "slot", (int)i,
				"device", json_object_get(slot, "device"), "reason",
				json_object_get(slot, "reason")));
	return list;
}

int
orch_cmd_status(const char *dir, bool as_json)
{
	struct orch_run	 run;
	json_t		*info, *pool, *tasks = json_array(), *out, *quarantined;
	const char	*paused, *llm_paused, *env_paused;
	int		 counts[FSM_ST__N] = { 0 };
	long		 reqs = 0, ptok = 0, ctok = 0;
	pid_t		 sup;

	if (open_or_complain(&run, dir) < 0)
		return 1;
	info = load_json_in(run.dir, "run.json");
	pool = load_json_in(run.dir, "pool.json");
	sup = orch_run_supervisor_pid(run.dir);
	quarantined = quarantined_gpus(info, pool);
	/* run.json has it from the moment the supervisor saw it; pool.json as a fallback. */
	llm_paused = json_string_value(json_object_get(info, "llm_paused"));
	if (llm_paused == NULL)
		llm_paused = json_string_value(json_object_get(json_object_get(pool, "llm_paused"),
							       "reason"));
	env_paused = json_string_value(json_object_get(info, "env_error"));
	paused = env_paused != NULL ? env_paused : llm_paused != NULL ? llm_paused :
		 json_string_value(json_object_get(json_object_get(pool, "paused"), "reason"));
	for (int i = 0; i < run.ntasks; i++) {
		struct fsm_summary s;

		fsm_summarize(run.dir, run.tasks[i].id, &s);
		counts[s.state]++;
		reqs += s.llm_requests;
		ptok += s.prompt_tokens;
		ctok += s.completion_tokens;
		json_array_append_new(tasks, json_pack("{s:s, s:s, s:i, s:i, s:o, s:s, s:s, s:s}",
			"id", run.tasks[i].id, "state", fsm_state_name(s.state), "turn", s.turn,
			"turns", (int)run.cfg.refinement.turns, "best_speedup",
			s.best_speedup >= 0 ? json_real(s.best_speedup) : json_null(),
			"last_status", s.last_status, "fail_reason", s.fail_reason,
			"env_error", s.env_error));
	}
	if (as_json) {
		out = json_pack("{s:o, s:O?, s:O, s:{s:s?, s:b, s:i, s:s?}, s:{s:I, s:I, s:I}}",
				"tasks", tasks, "resources", pool, "quarantined", quarantined, "run",
				"status", json_string_value(json_object_get(info, "status")),
				"supervisor_alive", sup > 0, "supervisor_pid",
				sup > 0 ? (int)sup : 0, "stop_reason",
				json_string_value(json_object_get(info, "stop_reason")), "llm",
				"requests", (json_int_t)reqs, "prompt_tokens", (json_int_t)ptok,
				"completion_tokens", (json_int_t)ctok);
		if (out == NULL) {
			fprintf(stderr, "kforge: out of memory\n");
			return 1;
		}
		if (!json_is_object(json_object_get(out, "resources")))
			json_object_set_new(out, "resources", json_object());
		json_object_set_new(json_object_get(out, "run"), "llm_paused",
				    llm_paused != NULL ? json_string(llm_paused) : json_null());
		json_object_set_new(json_object_get(out, "run"), "env_error",
				    env_paused != NULL ? json_string(env_paused) : json_null());
		json_dumpf(out, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
		printf("\n");
		json_decref(out);
	} else {
		size_t	 i;
		json_t	*t;

		printf("run %s: %s%s, %d tasks: %d done, %d failed, %d in progress\n",
		       run.cfg.name, sup > 0 ? "running" :
		       json_string_value(json_object_get(info, "status")) ?: "unknown",
		       sup > 0 ? "" : " (no supervisor)", run.ntasks, counts[FSM_ST_DONE],
		       counts[FSM_ST_FAILED],
		       run.ntasks - counts[FSM_ST_DONE] - counts[FSM_ST_FAILED]);
		printf("%-32s %-11s %7s %8s  %s\n", "TASK", "STATE", "TURN", "BEST", "LAST");
		json_array_foreach(tasks, i, t) {
			char		 best[32] = "-";
			json_t		*b = json_object_get(t, "best_speedup");
			const char	*env = json_string_value(json_object_get(t, "env_error"));

			if (json_is_number(b))
				snprintf(best, sizeof(best), "%.2fx", json_number_value(b));
			printf("%-32s %-11s %3lld/%-3lld %8s  %s%s%s%s%s%s\n",
			       json_string_value(json_object_get(t, "id")),
			       json_string_value(json_object_get(t, "state")),
			       (long long)json_integer_value(json_object_get(t, "turn")),
			       (long long)run.cfg.refinement.turns, best,
			       *env ? "paused on env_error — " : "", env, *env ? "; " : "",
			       json_string_value(json_object_get(t, "last_status")),
			       *json_string_value(json_object_get(t, "fail_reason")) ? " — " : "",
			       json_string_value(json_object_get(t, "fail_reason")));
		}
		if (json_is_object(pool)) {
			printf("resources%s:\n", sup > 0 ? "" : " (at the last update)");
			print_resource(strcmp(run.cfg.eval.device, "cpu") == 0 ? "cpu-exec" : "gpu",
				       json_object_get(pool, "exec"));
			print_resource("compile", json_object_get(pool, "compile"));
			print_resource("llm", json_object_get(pool, "llm"));
		}
		json_array_foreach(quarantined, i, t)
			printf("GPU %lld quarantined: %s\n",
			       (long long)json_integer_value(json_object_get(t, "device")),
			       json_string_value(json_object_get(t, "reason")) ?: "no reason given");
		if (sup > 0 && paused != NULL)	/* once stopped, stop_reason says it */
			printf("%s\n", paused);
		if (sup <= 0 && json_is_string(json_object_get(info, "stop_reason")))
			printf("stopped: %s\n",
			       json_string_value(json_object_get(info, "stop_reason")));
		printf("llm: %ld requests, %ld prompt tokens, %ld completion tokens\n", reqs, ptok,
		       ctok);
		json_decref(tasks);
	}
	json_decref(quarantined);
	json_decref(info);
	json_decref(pool);
	orch_run_clear(&run);
	return 0;
}

/* ----------------------------------------------------------------- tail */

struct tail_file {
	char	 path[PATH_MAX];
	off_t	 off;
};

static void
print_record(const struct kb_tlog_rec *r)
{
	json_t		*d = r->data, *v;
	const char	*clock = strchr(r->ts, 'T');
	char		 extra[512] = "";
	size_t		 n = 0;

#define ADD(...) (n += (size_t)snprintf(extra + n, n < sizeof(extra) ? sizeof(extra) - n : 0, __VA_ARGS__))
	if (json_is_string(v = json_object_get(d, "status")))
		ADD("  %s", json_string_value(v));
	if (json_is_number(v = json_object_get(d, "runtime_ms")))
		ADD("  %.3f ms", json_number_value(v));
	if (json_is_number(v = json_object_get(d, "speedup")))
		ADD("  speedup %.2fx", json_number_value(v));
	if (json_is_number(v = json_object_get(d, "best_speedup")))
		ADD("  best %.2fx", json_number_value(v));
	if (json_is_true(json_object_get(d, "cache_hit")))
		ADD("  (cached build)");
	if (json_is_true(json_object_get(d, "reused_response")))
		ADD("  (saved reply reused)");
	if (json_is_integer(v = json_object_get(d, "completion_tokens")) && json_integer_value(v))
		ADD("  %lld tokens", (long long)json_integer_value(v));
	if (json_is_string(v = json_object_get(d, "reason")))
		ADD("  %s", json_string_value(v));
	if (json_is_string(v = json_object_get(d, "error")))
		ADD("  %s", json_string_value(v));
#undef ADD
	printf("%.12s %-24s turn %-2d %-10s --%s--> %s%s\n", clock ? clock + 1 : r->ts, r->task,
	       r->turn, r->from, r->event, r->to, extra);
}

static int
tail_cb(const struct kb_tlog_rec *rec, void *arg)
{
	(void)arg;
	print_record(rec);
	return 0;
}

/* Prints the whole records that appeared after f->off. A line without its newline is
 * a write in progress: it is left for the next round. */
static bool
tail_new(struct tail_file *f, bool *terminal)
{
	FILE	*fp = fopen(f->path, "r");
	char	*line = NULL;
	size_t	 cap = 0;
	ssize_t	 n;
	bool	 any = false;

	if (fp == NULL)
		return false;
	fseeko(fp, f->off, SEEK_SET);
	while ((n = getline(&line, &cap, fp)) > 0 && line[n - 1] == '\n') {
		struct kb_tlog_rec rec;

		f->off += n;
		if (kb_tlog_parse_line(line, (size_t)n - 1, &rec) < 0)
			continue;
		print_record(&rec);
		*terminal = strcmp(rec.to, "DONE") == 0 || strcmp(rec.to, "FAILED") == 0;
		kb_tlog_rec_clear(&rec);
		any = true;
	}
	free(line);
	fclose(fp);
	return any;
}

int
orch_cmd_tail(const char *dir, const char *task, bool follow)
{
	struct orch_run		 run;
	struct tail_file	*files;
	bool			*done;
	int			 nfiles = 0, found = 0;

	if (open_or_complain(&run, dir) < 0)
		return 1;
	files = calloc((size_t)run.ntasks + 1, sizeof(*files));
	done = calloc((size_t)run.ntasks + 1, sizeof(*done));
	for (int i = 0; i < run.ntasks; i++) {
		if (task != NULL && strcmp(task, run.tasks[i].id) != 0 &&
		    strcmp(task, run.tasks[i].problem_key) != 0)
			continue;
		snprintf(files[nfiles].path, sizeof(files[nfiles].path),
			 "%s/tasks/%s/trajectory.jsonl", run.dir, run.tasks[i].id);
		nfiles++;
		found++;
	}
	if (found == 0) {
		fprintf(stderr, "kforge: no task '%s' in %s (see 'kforge status %s')\n", task,
			run.dir, run.dir);
		orch_run_clear(&run);
		free(files);
		free(done);
		return 1;
	}
	if (!follow) {
		for (int i = 0; i < nfiles; i++)
			kb_tlog_read(files[i].path, tail_cb, NULL);
	} else {
		for (;;) {
			bool all = true;

			for (int i = 0; i < nfiles; i++) {
				tail_new(&files[i], &done[i]);
				all = all && done[i];
			}
			fflush(stdout);
			/* Follow until every followed task is finished, or the run is not going
			 * anywhere (no supervisor) and nothing more arrives. */
			if (all || orch_run_supervisor_pid(run.dir) == 0) {
				if (!all)
					fprintf(stderr, "kforge: no supervisor is running on %s\n",
						run.dir);
				break;
			}
			struct timespec ts = { 0, 200 * 1000000L };
			nanosleep(&ts, NULL);
		}
	}
	orch_run_clear(&run);
	free(files);
	free(done);
	return 0;
}

/* --------------------------------------------------------------- report */

struct tally {
	int	 tasks, compiled, correct;
	int	 fast[N_FAST_P];
	int	*fast1_at;	/* per turn */
	int	 nturns;
	double	 log_speedup_sum;
	json_t	*statuses;
};

static void
tally_init(struct tally *t, int nturns)
{
	memset(t, 0, sizeof(*t));
	t->nturns = nturns;
	t->fast1_at = calloc((size_t)nturns + 1, sizeof(int));
	t->statuses = json_object();
}

static void
tally_add(struct tally *t, const struct fsm_summary *s)
{
	const char	*st = s->state == FSM_ST_FAILED ? "failed" :
			  s->last_status[0] ? s->last_status : "not_started";
	json_t		*c = json_object_get(t->statuses, st);

	t->tasks++;
	t->compiled += s->any_compiled;
	if (s->any_correct) {
		t->correct++;
		if (s->best_speedup > 0)
			t->log_speedup_sum += log(s->best_speedup);
	}
	for (size_t i = 0; i < N_FAST_P; i++)
		t->fast[i] += s->any_correct && s->best_speedup > fast_p_levels[i];
	for (int k = 0; k < t->nturns; k++) {
		/* A task that ended before turn k keeps its best from its last turn. */
		double best = s->nbest == 0 ? -1 : s->best_at_turn[k < s->nbest ? k : s->nbest - 1];

		t->fast1_at[k] += best > 1.0;
	}
	json_object_set_new(t->statuses, st, json_integer(json_integer_value(c) + 1));
}

static json_t *
tally_json(const struct tally *t)
{
	double	 n = t->tasks > 0 ? t->tasks : 1;
	json_t	*fp = json_object(), *at = json_array();
	char	 key[16];

	for (size_t i = 0; i < N_FAST_P; i++) {
		snprintf(key, sizeof(key), "%g", fast_p_levels[i]);
		json_object_set_new(fp, key, json_real(t->fast[i] / n));
	}
	for (int k = 0; k < t->nturns; k++)
		json_array_append_new(at, json_real(t->fast1_at[k] / n));
	return json_pack("{s:i, s:f, s:f, s:o, s:o, s:{s:i, s:i}, s:o, s:O}", "tasks", t->tasks,
			 "compiled", t->compiled / n, "fast_0", t->correct / n, "fast_p", fp,
			 "fast_1_at_turn", at, "counts", "compiled", t->compiled, "correct",
			 t->correct, "geomean_speedup_correct",
			 t->correct > 0 ? json_real(exp(t->log_speedup_sum / t->correct)) :
					  json_null(),
			 "last_status", t->statuses);
}

static void
tally_print(const char *label, const struct tally *t)
{
	double	n = t->tasks > 0 ? t->tasks : 1;

	printf("%-8s %5d  %8.1f%%  %8.1f%%", label, t->tasks, 100.0 * t->compiled / n,
	       100.0 * t->correct / n);
	for (size_t i = 0; i < N_FAST_P; i++)
		printf("  %7.1f%%", 100.0 * t->fast[i] / n);
	printf("\n");
}

static void
tally_clear(struct tally *t)
{
	free(t->fast1_at);
	json_decref(t->statuses);
}

int
orch_cmd_report(const char *dir, bool as_json)
{
	struct orch_run	 run;
	struct tally	 all, lv[KB_MAX_LEVELS + 1];
	bool		 seen[KB_MAX_LEVELS + 1] = { false };
	int		 nturns, env_errors = 0;	/* never in the rates */
	json_t		*failed;	/* [{id, reason}]: a FAILED task says why */

	if (open_or_complain(&run, dir) < 0)
		return 1;
	failed = json_array();
	nturns = (int)run.cfg.refinement.turns;
	tally_init(&all, nturns);
	for (int l = 0; l <= KB_MAX_LEVELS; l++)
		tally_init(&lv[l], nturns);
	for (int i = 0; i < run.ntasks; i++) {
		struct fsm_summary	s;
		int			l = run.tasks[i].level;

		if (l < 0 || l > KB_MAX_LEVELS)
			l = 0;
		fsm_summarize(run.dir, run.tasks[i].id, &s);
		env_errors += s.env_errors;
		tally_add(&all, &s);
		tally_add(&lv[l], &s);
		seen[l] = true;
		if (s.state == FSM_ST_FAILED)
			json_array_append_new(failed, json_pack("{s:s, s:s}", "id", run.tasks[i].id,
				"reason", s.fail_reason[0] ? s.fail_reason : "no reason recorded"));
	}
	if (as_json) {
		json_t *levels = json_object(), *out;
		char	key[8];

		for (int l = 0; l <= KB_MAX_LEVELS; l++) {
			if (!seen[l])
				continue;
			snprintf(key, sizeof(key), "%d", l);
			json_object_set_new(levels, key, tally_json(&lv[l]));
		}
		out = json_pack("{s:s, s:s, s:i, s:o, s:o, s:O, s:i}", "run", run.cfg.name,
				"device", run.cfg.eval.device, "turns", nturns, "overall",
				tally_json(&all), "levels", levels, "failed", failed, "env_errors",
				env_errors);
		json_dumpf(out, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
		printf("\n");
		json_decref(out);
	} else {
		printf("kforge report: %s (%d tasks, %d turns, device %s)\n\n", run.cfg.name,
		       run.ntasks, nturns, run.cfg.eval.device);
		printf("%-8s %5s  %9s  %9s  %8s  %8s  %8s  %8s\n", "level", "tasks", "compiled",
		       "fast_0", "fast_0.5", "fast_1", "fast_1.5", "fast_2");
		for (int l = 0; l <= KB_MAX_LEVELS; l++) {
			char label[16];

			if (!seen[l])
				continue;
			snprintf(label, sizeof(label), "L%d", l);
			tally_print(label, &lv[l]);
		}
		tally_print("overall", &all);
		printf("\nfast_1 by turn (best kernel up to turn N):\n ");
		for (int k = 0; k < nturns; k++)
			printf(" %d:%.1f%%", k + 1,
			       100.0 * all.fast1_at[k] / (all.tasks > 0 ? all.tasks : 1));
		printf("\n\nlast status of each task:");
		{
			const char	*key;
			json_t		*v;

			json_object_foreach(all.statuses, key, v)
				printf("  %s %lld", key, (long long)json_integer_value(v));
		}
		printf("\n");
		if (env_errors > 0)
			printf("\nenvironment errors: %d step(s) failed for a reason no candidate "
			       "can cause; not scored, each redone on resume\n", env_errors);
		if (json_array_size(failed) > 0) {
			size_t	 i;
			json_t	*f;

			printf("\nfailed tasks:\n");
			json_array_foreach(failed, i, f)
				printf("  %s: %s\n", json_string_value(json_object_get(f, "id")),
				       json_string_value(json_object_get(f, "reason")));
		}
	}
	json_decref(failed);
	tally_clear(&all);
	for (int l = 0; l <= KB_MAX_LEVELS; l++)
		tally_clear(&lv[l]);
	orch_run_clear(&run);
	return 0;
}

/* ----------------------------------------------------------------- stop */

int
orch_cmd_stop(const char *dir, int timeout_s)
{
	pid_t	pid = orch_run_supervisor_pid(dir);
	int64_t	end;

	if (pid == 0) {
		fprintf(stderr, "kforge: no supervisor is running on %s\n", dir);
		return 1;
	}
	if (pid < 0 || kill(pid, SIGTERM) == -1) {
		fprintf(stderr, "kforge: cannot signal the supervisor of %s\n", dir);
		return 1;
	}
	printf("kforge: asked the supervisor (pid %ld) to stop; waiting\n", (long)pid);
	end = kb_mono_ms() + (int64_t)timeout_s * 1000;
	while (orch_run_supervisor_pid(dir) != 0) {
		if (kb_mono_ms() > end) {
			fprintf(stderr, "kforge: still stopping after %d s; run 'kforge stop' again "
				"to hurry it\n", timeout_s);
			return 1;
		}
		struct timespec ts = { 0, 100 * 1000000L };
		nanosleep(&ts, NULL);
	}
	printf("kforge: stopped; 'kforge resume %s' continues\n", dir);
	return 0;
}
