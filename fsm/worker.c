/* worker.c: one task's process — replay the log, then step the table until the task is
 * DONE or FAILED, logging every transition (fsync'd) before the next action starts. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include "fsm/fsm_int.h"
#include "base/banned.h"

/* 1: stop at the next safe point (runner children are killed; an LLM reply already
 * being paid for is awaited and saved). 2: abort now. */
static volatile sig_atomic_t stop_level;

static void
on_stop_signal(int sig)
{
	(void)sig;
	if (stop_level < 2)
		stop_level++;
}

bool
fsm_should_stop(void *arg)
{
	(void)arg;
	return stop_level >= 1;
}

bool
fsm_should_abort(void *arg)
{
	(void)arg;
	return stop_level >= 2;
}

static const fsm_action_fn actions[FSM_ST__N] = {
	[FSM_ST_GENERATE] = fsm_act_generate,
	[FSM_ST_PRECOMPILE] = fsm_act_precompile,
	[FSM_ST_EXECUTE] = fsm_act_execute,
	[FSM_ST_PROFILE] = fsm_act_profile,
	[FSM_ST_FEEDBACK] = fsm_act_feedback,
};

int
fsm_turn_path(const struct task_run *t, int turn, enum rd_entry file, char *out, size_t n)
{
	return rd_turn_file(out, n, t->ctx->run_dir, t->task->id, turn, file);
}

int
fsm_put_artifact(struct task_run *t, const char *key, enum rd_entry file, const void *p,
		 size_t n)
{
	char	path[PATH_MAX], sha[65];
	int	rc;

	/* Under t->dir, which rd_task_dir built from the same run directory and id. */
	if ((rc = fsm_turn_path(t, t->turn, file, path, sizeof(path))) < 0)
		return rc;
	if ((rc = kb_write_atomic(path, p, n)) < 0) {
		log_warnx("cannot write '%s': %s", path, kb_strerror(rc));
		return rc;
	}
	kb_sha256_hex(p, n, sha);
	json_object_set_new(t->data, key, json_pack("{s:s%, s:s}", "path",
		path + strlen(t->dir) + 1, strlen(path) - strlen(t->dir) - 1, "sha256", sha));
	return 0;
}

/* Rebuilds state, turn and best-so-far from the log: resume re-enters the last
 * logged state of the last logged turn. */
static int
replay_record(const struct kb_tlog_rec *rec, void *arg)
{
	struct task_run	*t = arg;
	enum fsm_state	 to;
	json_t		*v;

	if (fsm_state_parse(rec->to, &to) < 0)
		return -KB_ECORRUPT;
	t->state = to;
	t->turn = rec->turn;
	rd_spend_add(&t->spent, rec->from, rec->data);
	if (strcmp(rec->event, "next_turn") == 0)
		t->turn = rec->turn + 1;
	if (strcmp(rec->from, "FEEDBACK") == 0) {
		v = json_object_get(rec->data, "best_speedup");
		if (json_is_number(v)) {
			t->best_speedup = json_number_value(v);
			t->best_turn = (int)json_integer_value(json_object_get(rec->data, "best_turn"));
		}
		if (rec->turn >= 1 && rec->turn <= FSM_MAX_NODES) {
			fsm_node_of_record(rec->data, rec->turn, &t->nodes[rec->turn]);
			t->nnodes = rec->turn;
		}
	}
	/* The next node's parents, as the search chose them (a chain's log names none). */
	if (strcmp(rec->event, "next_turn") == 0) {
		t->parent = rd_node_named(rec->data, RD_NEXT_PARENT, rec->turn + 1, rec->turn);
		t->parent2 = rd_node_named(rec->data, RD_NEXT_PARENT2, rec->turn + 1, 0);
	}
	if (strcmp(rec->event, fsm_event_name(FSM_EV_tool_call)) == 0) {
		/* An agent's calls so far in this turn: a rerun has what is left. */
		if (t->tool_calls_turn != rec->turn)
			t->tool_calls = 0;
		t->tool_calls_turn = rec->turn;
		t->tool_calls++;
		return 0;
	}
	t->transients = strcmp(rec->event, "transient") == 0 ? t->transients + 1 : 0;
	return 0;
}

static void
sleep_interruptible(int64_t ms)
{
	int64_t	end = kb_mono_ms() + ms;

	while (!fsm_should_stop(NULL) && kb_mono_ms() < end) {
		struct timespec ts = { 0, 100 * 1000000L };

		nanosleep(&ts, NULL);
	}
}

/* Under the task's lock: what a worker killed in the middle of an atomic write left
 * (task files and every turn's), so a resumed run leaves no debris behind. */
static void
sweep_stale_tmp(const struct task_run *t)
{
	char		 turns[PATH_MAX], path[PATH_MAX];
	DIR		*d;
	struct dirent	*e;
	int		 n, total = 0;

	if ((n = kb_sweep_atomic_tmp(t->dir)) > 0)
		total += n;
	if (rd_task_file(turns, sizeof(turns), t->ctx->run_dir, t->task->id, RD_TURNS_DIR) < 0 ||
	    (d = opendir(turns)) == NULL)
		return;
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.' || kb_path_join(path, sizeof(path), turns, e->d_name) < 0)
			continue;
		if ((n = kb_sweep_atomic_tmp(path)) > 0)
			total += n;
	}
	closedir(d);
	if (total > 0)
		log_info("removed %d temporary file(s) left by an interrupted write", total);
}

static int
open_task(struct task_run *t, int *lock_fd)
{
	char	path[PATH_MAX];
	int64_t	dropped;
	int	rc;

	if ((rc = rd_task_dir(t->dir, sizeof(t->dir), t->ctx->run_dir, t->task->id)) < 0 ||
	    (rc = kb_mkdir_p(t->dir, 0755)) < 0)
		return rc;
	/* One worker per task, even across a supervisor that died and a resume that
	 * started before its old workers finished their last LLM reply. */
	if ((rc = rd_task_file(path, sizeof(path), t->ctx->run_dir, t->task->id,
			       RD_TASK_LOCK)) < 0)
		return rc;
	if ((*lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644)) == -1)
		return -kb_errno_to_err(errno);
	while (flock(*lock_fd, LOCK_EX | LOCK_NB) == -1) {
		if (errno != EWOULDBLOCK)
			return -kb_errno_to_err(errno);
		if (fsm_should_stop(NULL))
			return -KB_ESTOPPED;
		sleep_interruptible(200);
	}
	sweep_stale_tmp(t);
	if ((rc = kb_read_file(t->task->problem_path, FSM_MAX_SOURCE, &t->problem_src, NULL)) < 0) {
		log_warnx("cannot read problem '%s': %s", t->task->problem_path, kb_strerror(rc));
		return rc;
	}
	if ((rc = rd_task_file(path, sizeof(path), t->ctx->run_dir, t->task->id,
			       RD_TRAJECTORY)) < 0)
		return rc;
	t->state = FSM_ST_INVALID;
	t->best_speedup = -1;
	if ((rc = kb_tlog_open(&t->log, path, replay_record, t, &dropped)) < 0) {
		log_warnx("cannot open '%s': %s", path, kb_strerror(rc));
		return rc;
	}
	if (kb_tlog_last_seq(t->log) == 0) {
		char	sha[65];
		json_t	*data;

		kb_sha256_hex(t->problem_src, strlen(t->problem_src), sha);
		data = json_pack("{s:s, s:s, s:i, s:I, s:i, s:s}", "problem", t->task->problem_path,
				 "problem_sha256", sha, "level", t->task->level, "problem_id",
				 (json_int_t)t->task->problem_id, "sample", t->task->sample, "device",
				 t->cfg->eval.device);
		rc = kb_tlog_append(t->log, t->task->id, 1, "GENERATE", "start", "GENERATE", data);
		json_decref(data);
		if (rc < 0) {
			log_warnx("cannot append to '%s': %s", path, kb_strerror(rc));
			return rc;
		}
		t->state = FSM_ST_GENERATE;
		t->turn = 1;
	}
	return 0;
}

static int
step(struct task_run *t)
{
	enum fsm_state	 next;
	int		 ev, rc;

	t->data = json_object();
	/* A node's parents in each of its GENERATE and FEEDBACK records. */
	if (t->state == FSM_ST_GENERATE || t->state == FSM_ST_FEEDBACK) {
		json_object_set_new(t->data, RD_NODE_PARENT, json_integer(t->parent));
		if (t->parent2 > 0)
			json_object_set_new(t->data, RD_NODE_PARENT2, json_integer(t->parent2));
	}
	if ((rc = rd_turn_dir(t->turn_dir, sizeof(t->turn_dir), t->ctx->run_dir, t->task->id,
			      t->turn)) < 0 ||
	    (rc = kb_mkdir_p(t->turn_dir, 0755)) < 0) {
		log_warnx("cannot create '%s': %s", t->turn_dir, kb_strerror(rc));
		goto out;
	}
	ev = actions[t->state](t);
	if (ev < 0) {
		rc = ev;
		goto out;
	}
	if (ev == FSM_EV_transient && t->transients + 1 > FSM_GENERATE_RETRIES) {
		snprintf(t->fail_reason, sizeof(t->fail_reason),
			 "%s gave up after %d transient failures", fsm_state_name(t->state),
			 t->transients + 1);
		ev = FSM_EV_fatal;
	}
	next = fsm_next(t->state, (enum fsm_event)ev, t->cfg->refinement.feedback_p);
	if (next == FSM_ST_INVALID) {
		snprintf(t->fail_reason, sizeof(t->fail_reason), "no transition for %s/%s",
			 fsm_state_name(t->state), fsm_event_name((enum fsm_event)ev));
		log_warnx("bug: %s", t->fail_reason);
		ev = FSM_EV_fatal;
		next = FSM_ST_FAILED;
	}
	if (next == FSM_ST_FAILED && t->fail_reason[0] != '\0')
		json_object_set_new(t->data, "reason", json_string(t->fail_reason));
	if (ev == FSM_EV_next_turn)
		json_object_set_new(t->data, "next_turn", json_integer(t->turn + 1));
	rc = kb_tlog_append(t->log, t->task->id, t->turn, fsm_state_name(t->state),
			    fsm_event_name((enum fsm_event)ev), fsm_state_name(next), t->data);
	if (rc < 0) {
		log_warnx("cannot append to '%s/%s': %s", t->dir, rd_name(RD_TRAJECTORY),
			  kb_strerror(rc));
		goto out;
	}
	log_debug("turn %d: %s --%s--> %s", t->turn, fsm_state_name(t->state),
		  fsm_event_name((enum fsm_event)ev), fsm_state_name(next));
	/* The run is paused for the environment: stop here, logged; resume redoes the step. */
	if (ev == FSM_EV_env_error)
		rc = -KB_ESTOPPED;
	rd_spend_add(&t->spent, fsm_state_name(t->state), t->data);
	t->transients = ev == FSM_EV_transient ? t->transients + 1 : 0;
	if (ev == FSM_EV_next_turn) {
		t->turn++;
		t->parent = t->next_parent;
		t->parent2 = t->next_parent2;
	}
	t->state = next;
	if (ev == FSM_EV_transient)	/* 2 s, 4 s, ... 32 s: let an outage pass */
		sleep_interruptible((int64_t)((double)(1000LL << (t->transients < 5 ?
			t->transients : 5)) * llm_backoff_scale(t->llm)));
out:
	json_decref(t->data);
	t->data = NULL;
	return rc;
}

/* What a finished task found, for its last log line: its best correct kernel against
 * the reference, or that it has none (a suspect kernel waits for review: not found). */
static void
best_found(const struct task_run *t, char *out, size_t n)
{
	/* what prints as 1.00x is neither faster nor slower */
	const char *than = t->best_speedup >= 1.005 ? "faster than" :
			   t->best_speedup < 0.995 ? "slower than" : "as fast as";

	if (t->best_speedup > 0)
		snprintf(out, n, "best %.2fx at turn %d (correct, %s the reference)",
			 t->best_speedup, t->best_turn, than);
	else
		snprintf(out, n, "no correct kernel");
}

int
fsm_task_main(const struct fsm_ctx *ctx)
{
	struct task_run		 t;
	struct sigaction	 sa;
	char			 err[512], best[128];
	int			 lock_fd = -1, rc, code = KB_EXIT_TEMPFAIL;

	memset(&t, 0, sizeof(t));
	t.ctx = ctx;
	t.cfg = ctx->cfg;
	t.task = ctx->task;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	/* What a candidate leaves behind, daemons that left the runner's group included,
	 * comes back to this worker and is killed after each runner, not to the supervisor. */
	(void)fb_adopt_strays();
	fb_warm_enable();

	if ((rc = open_task(&t, &lock_fd)) < 0)
		goto out;
	if (fsm_state_terminal(t.state)) {
		code = KB_EXIT_DONE;
		goto out;
	}
	if (llm_client_create(&t.llm, t.cfg, err, sizeof(err)) < 0) {
		log_warnx("%s", err);
		code = KB_EXIT_CONFIG;
		goto out;
	}
	while (!fsm_state_terminal(t.state)) {
		if (fsm_should_stop(NULL))
			goto out;
		/* Paused for the environment by another task: no step can do anything useful. */
		if (gpool_paused(ctx->pool, NULL, 0) == GPOOL_PAUSE_ENV) {
			rc = -KB_ESTOPPED;
			goto out;
		}
		if ((rc = step(&t)) < 0)
			goto out;
	}
	code = KB_EXIT_DONE;
	best_found(&t, best, sizeof(best));
	log_info("%s after %d turn%s: %s", fsm_state_name(t.state), t.turn, t.turn == 1 ? "" : "s",
		 best);
out:
	if (rc == -KB_ESTOPPED || fsm_should_stop(NULL))
		code = code == KB_EXIT_DONE ? code : KB_EXIT_TEMPFAIL;
	if (rc == -KB_ENOSPC)	/* the supervisor stops the run; nothing here is lost */
		code = KB_EXIT_NOSPC;
	fb_warm_end();
	llm_client_destroy(t.llm);
	kb_tlog_close(t.log);
	free(t.problem_src);
	if (lock_fd != -1)
		close(lock_fd);
	return code;
}
