/* actions.c: the state actions. Each is thin — it calls llm_, fb_ and gpool_, writes
 * its artifacts atomically, fills the record's data and returns an event. Each is safe
 * to re-run: resume re-enters the last logged state and its outputs are keyed by turn. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fsm/fsm_int.h"
#include "base/banned.h"

static char *
read_turn_file(const struct task_run *t, int turn, enum rd_entry file)
{
	char	path[PATH_MAX], *text = NULL;

	if (turn < 1 || fsm_turn_path(t, turn, file, path, sizeof(path)) < 0)
		return NULL;
	if (kb_read_file(path, FSM_MAX_SOURCE, &text, NULL) < 0)
		return NULL;
	return text;
}

static json_t *
read_turn_json(const struct task_run *t, int turn, enum rd_entry file)
{
	char	path[PATH_MAX];

	if (fsm_turn_path(t, turn, file, path, sizeof(path)) < 0)
		return NULL;
	return json_load_file(path, 0, NULL);
}

static int
put_json(struct task_run *t, const char *key, enum rd_entry file, json_t *obj)
{
	char	*text = json_dumps(obj, JSON_INDENT(2) | JSON_SORT_KEYS);
	int	 rc;

	if (text == NULL)
		return -KB_ENOMEM;
	rc = fsm_put_artifact(t, key, file, text, strlen(text));
	free(text);
	return rc;
}

/* A leased slot, so the runner's pid can be recorded in the pool as it starts, and
 * when it was asked for and granted (CLOCK_REALTIME ms, comparable across tasks). */
struct lease {
	struct gpool		*pool;
	enum gpool_class	 cls;
	int			 slot;
	int64_t			 asked_ms, got_ms;
};

static void
record_runner(pid_t pid, void *arg)
{
	struct lease	*l = arg;

	gpool_set_runner(l->pool, l->cls, l->slot, GPOOL_RUNNER_CANDIDATE, pid);
}

static void
record_judge(pid_t pid, void *arg)
{
	struct lease	*l = arg;

	gpool_set_runner(l->pool, l->cls, l->slot, GPOOL_RUNNER_JUDGE, pid);
}

/* Fault injection: the worker dies while its runner works, orphaning it with its lease. */
static void
record_runner_compiling(pid_t pid, void *arg)
{
	record_runner(pid, arg);
	kb_crashpoint("mid-compile");
}

static void
record_runner_executing(pid_t pid, void *arg)
{
	record_runner(pid, arg);
	kb_crashpoint("mid-execute");
}

/* Failures of the machine rather than of the task (a stop request, a full disk): the
 * worker stops unlogged and the task resumes later, neither FAILED nor a turn spent. */
static bool
not_the_tasks_fault(int rc)
{
	return rc == -KB_ESTOPPED || rc == -KB_ENOSPC;
}

/* A failure the candidate cannot cause (docs/DESIGN.md §5, env_error): the step is logged
 * with the event env_error and what failed (stage, message, fix), the runner's result kept as
 * env_error.json beside the turn (never compile.json or result.json: it is neither cached
 * as a build nor fed back nor scored), and the run is paused (kind env), so no task asks
 * the model or starts a runner until the machine is fixed. The worker stops once this is
 * logged; resume re-enters the same step, and the turn is never spent. */
static int
env_failure(struct task_run *t, json_t *result, const char *stage, const char *message,
	    const char *fix)
{
	char	*why;
	int	 rc = 0;

	stage = stage != NULL && stage[0] != '\0' ? stage : "build";
	message = message != NULL && message[0] != '\0' ? message : "no message";
	fix = fix != NULL && fix[0] != '\0' ? fix : fb_env_fix(stage);
	if (result != NULL)
		rc = put_json(t, "env_error", RD_ENV_ERROR_JSON, result);
	if (rc == -KB_ENOSPC)
		return rc;
	json_object_set_new(t->data, "status", json_string(fb_status_name(FB_ST_ENV_ERROR)));
	json_object_set_new(t->data, "stage", json_string(stage));
	json_object_set_new(t->data, "message", json_string(message));
	json_object_set_new(t->data, "fix", json_string(fix));
	why = kb_asprintf("%s (%s, %s turn %d); fix: %s", message, stage, t->task->id, t->turn,
			  fix);
	if (gpool_pause(t->ctx->pool, GPOOL_PAUSE_ENV, t->task->id, why) < 0)
		log_warnx("cannot pause the run: %s", why);
	free(why);
	log_warnx("turn %d: %s: environment error (%s): %s", t->turn,
		  fsm_state_name(t->state), stage, message);
	return FSM_EV_env_error;
}

/* The same from a runner's env_error result (details.stage, message, fix). */
static int
env_failure_from(struct task_run *t, json_t *result)
{
	json_t	*d = json_object_get(result, "details");

	return env_failure(t, result, json_string_value(json_object_get(d, "stage")),
			   json_string_value(json_object_get(d, "message")),
			   json_string_value(json_object_get(d, "fix")));
}

/* The runner failed in its own code before any of the candidate's ran (a runner_error
 * whose details say candidate_ran false: a lock it could not take, a bug of kforge's):
 * nothing the model wrote did it, so it spends no turn. The step is retried after the
 * transient backoff FSM_RUNNER_RETRIES times, then the run pauses on it as on any
 * environment error (resume redoes the step). 0 for any other result. */
static int
runner_failure(struct task_run *t, json_t *result)
{
	json_t		*d = json_object_get(result, "details");
	const char	*msg = json_string_value(json_object_get(d, "message"));

	if (!kb_json_has_string(json_object_get(result, "flags"), "runner_error") ||
	    !json_is_false(json_object_get(d, "candidate_ran")))
		return 0;
	msg = msg != NULL && msg[0] != '\0' ? msg : "no message";
	if (t->transients < FSM_RUNNER_RETRIES) {
		json_object_set_new(t->data, "status", json_incref(json_object_get(result,
								     "status")));
		json_object_set_new(t->data, "runner_error", json_string(msg));
		log_warnx("turn %d: %s: the runner failed before the candidate ran (%s); "
			  "again after a pause", t->turn, fsm_state_name(t->state), msg);
		return FSM_EV_transient;
	}
	return env_failure(t, result, "runner", msg, "kforge's runner failed before the "
			   "candidate ran, again and again: see the turn's env_error.json, and "
			   "report it with that file");
}

/* fb_run could not find the runner's Python (it was there when the run started). */
static int
env_failure_python(struct task_run *t, int rc)
{
	char	*msg = kb_asprintf("the runner cannot be started: %s", kb_strerror(rc));

	rc = env_failure(t, NULL, "python", msg, NULL);
	free(msg);
	return rc;
}

/* Waiting for an LLM slot also ends when the run is paused (either kind); waiting for
 * a compile or execution slot, when the environment paused it. */
static bool
llm_wait_should_stop(void *pool)
{
	return fsm_should_stop(NULL) || gpool_paused(pool, NULL, 0) != GPOOL_PAUSE_NONE;
}

static bool
runner_wait_should_stop(void *pool)
{
	return fsm_should_stop(NULL) || gpool_paused(pool, NULL, 0) == GPOOL_PAUSE_ENV;
}

static int
lease_take(struct task_run *t, struct lease *l)
{
	int	rc;

	l->asked_ms = kb_now_ms();
	rc = gpool_acquire(l->pool, l->cls, t->task->id, -1,
			   l->cls == GPOOL_LLM ? llm_wait_should_stop : runner_wait_should_stop,
			   l->pool, &l->slot);
	l->got_ms = kb_now_ms();
	return rc;
}

/* Releases the slot and records in the step's data where its time went, waiting versus
 * holding: the trajectory alone then shows how busy each resource was and that no limit
 * was exceeded (the state's own interval also covers the wait). */
static void
lease_give(struct task_run *t, struct lease *l)
{
	static const char *const class_names[GPOOL__NCLASS] = {
		[GPOOL_EXEC] = "exec", [GPOOL_COMPILE] = "compile", [GPOOL_LLM] = "llm",
	};
	int64_t	now = kb_now_ms();

	gpool_release(l->pool, l->cls, l->slot);
	json_object_set_new(t->data, "lease", json_pack("{s:s, s:i, s:I, s:I, s:I}", "class",
			    class_names[l->cls], "slot", l->slot, "wait_ms",
			    (json_int_t)(l->got_ms - l->asked_ms), "acquired_ms",
			    (json_int_t)l->got_ms, "released_ms", (json_int_t)now));
}

/* ------------------------------------------------------------ GENERATE */

/* The run's first device's hardware facts, for the prompt's hardware block; NULL when
 * the block is off or the probe has none. */
static const struct llm_hardware *
hardware_of(struct task_run *t)
{
	if (!t->cfg->refinement.hardware || t->ctx->ndevices < 1 ||
	    !t->ctx->devices[0].has_hardware)
		return NULL;
	return &t->ctx->devices[0].hardware;
}

static int
build_prompt(struct task_run *t, char **prompt, char *err, size_t errlen)
{
	struct llm_feedback	 fb = { 0 };
	char			*prev = NULL, *exec_text = NULL, *prof = NULL, *other = NULL;
	int			 rc;

	/* The node's parent is the turn whose feedback it is shown (a chain's: the turn
	 * before); a child of the problem alone gets the first prompt. */
	if (t->parent < 1 || t->parent >= t->turn)
		return llm_prompt_initial(t->cfg, hardware_of(t), t->problem_src, prompt, err, errlen);
	if (t->cfg->refinement.feedback_g) {
		prev = read_turn_file(t, t->parent, RD_KERNEL_PY);
		if (prev == NULL)	/* no code that turn: show what the model said */
			prev = read_turn_file(t, t->parent, RD_RESPONSE_MD);
		fb.prev_kernel = prev;
	}
	if (t->cfg->refinement.feedback_e)
		fb.exec_text = exec_text = read_turn_file(t, t->parent, RD_FEEDBACK_MD);
	if (t->cfg->refinement.feedback_p)
		fb.profile_text = prof = read_turn_file(t, t->parent, RD_PROFILE_FEEDBACK_MD);
	/* evolve: a second parent's kernel, shown beside the first's feedback */
	if (t->parent2 > 0 && t->parent2 < t->turn &&
	    (other = read_turn_file(t, t->parent2, RD_KERNEL_PY)) != NULL) {
		fb.other_kernel = other;
		fb.other_speedup = t->nodes[t->parent2].speedup;
	}
	rc = llm_prompt_refine(t->cfg, hardware_of(t), t->problem_src, &fb, prompt, err, errlen);
	free(prev);
	free(exec_text);
	free(prof);
	free(other);
	return rc;
}

/* The endpoint refused the credentials: not this task's fault, and every other task's
 * request would be refused too. Generation is paused run-wide and this worker stops
 * without logging, so the task spends no turn and is not failed; the supervisor says
 * so once and 'kforge resume' re-enters this GENERATE. 0, or < 0 when the pool cannot
 * record the pause (the task then fails as before). */
static int
pause_generation(struct task_run *t, const char *err)
{
	char	*why = kb_asprintf("%s refused the credentials (%s)", llm_endpoint(t->llm), err);
	int	 rc = gpool_pause(t->ctx->pool, GPOOL_PAUSE_LLM_AUTH, t->task->id, why);

	free(why);
	if (rc >= 0)
		log_debug("LLM generation paused run-wide%s; stopping before turn %d",
			  rc == 1 ? " by this task" : "", t->turn);
	return rc < 0 ? rc : 0;
}

static int
call_model(struct task_run *t, const char *prompt, char **content)
{
	struct llm_request	 req = { 0 };
	struct llm_reply	 reply = { 0 };
	char			 err[512] = "", ws[PATH_MAX], *confine[FSM_AGENT_CONFINE_ARGV];
	struct lease		 lease = { t->ctx->pool, GPOOL_LLM, -1, 0, 0 };
	json_t			*meta;
	double			 cost_usd;
	bool			 priced;
	int			 rc;

	req.prompt = prompt;
	req.task = t->task;
	req.turn = t->turn;
	/* A reply being paid for is awaited on a first stop request; a second aborts. */
	req.should_stop = fsm_should_abort;
	if (llm_is_agent(t->llm)) {
		/* An agent is stopped at once: resume runs it again with the tool calls
		 * its records leave it. */
		if ((rc = fsm_agent_workspace(t, prompt, ws, sizeof(ws))) < 0)
			return rc;
		req.should_stop = fsm_should_stop;
		req.workspace = ws;
		req.tool_eval = fsm_agent_tool_eval;
		req.tool_arg = t;
		req.agent_started = fsm_agent_started;
		if ((rc = fsm_agent_confine(t, ws, confine)) < 0)
			return rc;
		req.confine = (const char *const *)confine;
	}
	if ((rc = lease_take(t, &lease)) < 0)
		return rc;
	/* Paused while we took the slot. */
	if (gpool_paused(t->ctx->pool, NULL, 0) != GPOOL_PAUSE_NONE) {
		lease_give(t, &lease);
		return -KB_ESTOPPED;
	}
	rc = llm_complete(t->llm, &req, &reply, err, sizeof(err));
	fb_strays_spare(0);
	if (req.confine != NULL)
		fsm_agent_confine_clear(confine);
	/* Paused before the slot is given back, so no waiter takes it and asks first. */
	if (rc == -KB_ELLM_AUTH && pause_generation(t, err) == 0)
		rc = -KB_ESTOPPED;
	lease_give(t, &lease);
	if (rc < 0) {
		json_object_set_new(t->data, "error", json_string(err[0] ? err : kb_strerror(rc)));
		json_object_set_new(t->data, "attempts", json_integer(reply.attempts));
		llm_reply_clear(&reply);
		if (rc == -KB_ESTOPPED)
			return rc;
		if (kb_err_transient(rc))
			return FSM_EV_transient;
		if (rc == -KB_ETOOBIG) {
			/* The turn is spent (the reply was paid for); the model hears why. */
			char *why = kb_asprintf("Your reply was longer than the %ld bytes allowed "
						"and was discarded. Reply with only the complete "
						"ModelNew module in one ```python fenced block.",
						t->cfg->llm.max_response_bytes);

			rc = fsm_put_artifact(t, "reply_refused", RD_REPLY_REFUSED_MD, why, strlen(why));
			free(why);
			return rc < 0 ? rc : FSM_EV_no_code;
		}
		snprintf(t->fail_reason, sizeof(t->fail_reason), "LLM: %s",
			 err[0] ? err : kb_strerror(rc));
		return FSM_EV_fatal;
	}
	/* Priced only when the config has prices: a cost of 0 would read as "free". */
	priced = t->cfg->llm.price_input_per_mtok > 0 || t->cfg->llm.price_output_per_mtok > 0;
	cost_usd = ((double)reply.prompt_tokens * t->cfg->llm.price_input_per_mtok +
		    (double)reply.completion_tokens * t->cfg->llm.price_output_per_mtok) / 1e6;
	meta = json_pack("{s:s?, s:s?, s:I, s:I, s:i, s:i, s:f, s:s?, s:s?}", "model",
			 t->cfg->llm.model, "provider", t->cfg->llm.provider, "prompt_tokens",
			 (json_int_t)reply.prompt_tokens, "completion_tokens",
			 (json_int_t)reply.completion_tokens, "http_status", reply.http_status,
			 "attempts", reply.attempts, "latency_s", reply.latency_s, "finish_reason",
			 reply.finish_reason, "reasoning", reply.reasoning);
	if (meta != NULL && reply.reasoning_tokens > 0)
		json_object_set_new(meta, "reasoning_tokens", json_integer(reply.reasoning_tokens));
	if (meta != NULL && priced)
		json_object_set_new(meta, "cost_usd", json_real(cost_usd));
	if (meta != NULL && llm_is_agent(t->llm))
		json_object_set_new(meta, "agent", fsm_agent_summary(t, &reply));
	/* Metadata first, the response last: response.md existing is what says "this
	 * reply was paid for, never ask again". */
	rc = put_json(t, "response_meta", RD_RESPONSE_JSON, meta);
	json_decref(meta);
	if (rc == 0 && llm_is_agent(t->llm))
		rc = fsm_agent_reply(t, &reply);
	if (rc == 0 && reply.raw != NULL)
		rc = fsm_put_artifact(t, "response_raw", RD_RESPONSE_RAW_JSON, reply.raw,
				      strlen(reply.raw));
	if (rc == 0)
		rc = fsm_put_artifact(t, "response", RD_RESPONSE_MD, reply.content,
				      strlen(reply.content));
	if (rc == 0) {
		kb_crashpoint("after-response-persisted");
		json_object_set_new(t->data, "prompt_tokens", json_integer(reply.prompt_tokens));
		json_object_set_new(t->data, "completion_tokens",
				    json_integer(reply.completion_tokens));
		if (reply.reasoning_tokens > 0)
			json_object_set_new(t->data, "reasoning_tokens",
					    json_integer(reply.reasoning_tokens));
		if (priced)
			json_object_set_new(t->data, "cost_usd", json_real(cost_usd));
		json_object_set_new(t->data, "attempts", json_integer(reply.attempts));
		json_object_set_new(t->data, "latency_s", json_real(reply.latency_s));
		*content = kb_strdup(reply.content);
	}
	llm_reply_clear(&reply);
	return rc;
}

/* A reply persisted by a worker that died before logging its GENERATE: the request was
 * made and paid for once, so this record counts it (rd_spend_add) from the reply's
 * metadata, as the lost record would have. */
static void
reused_spend(struct task_run *t)
{
	static const char *const keys[] = { "attempts", "prompt_tokens", "completion_tokens",
					    "reasoning_tokens", "cost_usd" };
	json_t	*meta = read_turn_json(t, t->turn, RD_RESPONSE_JSON);

	if (meta == NULL)
		return;
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (json_is_number(json_object_get(meta, keys[i])))
			json_object_set(t->data, keys[i], json_object_get(meta, keys[i]));
	json_decref(meta);
}

int
fsm_act_generate(struct task_run *t)
{
	char	*content = NULL, *prompt = NULL, *code = NULL, err[512];
	int	 rc;

	if ((content = read_turn_file(t, t->turn, RD_RESPONSE_MD)) != NULL) {
		json_object_set_new(t->data, "reused_response", json_true());
		reused_spend(t);
		if (llm_is_agent(t->llm))
			fsm_agent_reused(t);
	} else {
		/* Paused run-wide: stop here unlogged, as on a stop request. */
		if (gpool_paused(t->ctx->pool, NULL, 0) != GPOOL_PAUSE_NONE)
			return -KB_ESTOPPED;
		/* No runner for the length of the model's call: no idle warm one, nor a
		 * fork server where the run's workers would hold too much memory. */
		if (fb_warm_keep_servers(t->cfg))
			fb_warm_drop();
		else
			fb_warm_end();
		if ((rc = build_prompt(t, &prompt, err, sizeof(err))) < 0) {
			snprintf(t->fail_reason, sizeof(t->fail_reason), "prompt: %s", err);
			return FSM_EV_fatal;
		}
		rc = fsm_put_artifact(t, "prompt", RD_PROMPT_MD, prompt, strlen(prompt));
		if (rc == 0)
			rc = call_model(t, prompt, &content);
		free(prompt);
		if (rc != 0)
			return rc;
	}
	rc = llm_extract_code(content, strlen(content), &code);
	free(content);
	if (rc < 0) {
		json_object_set_new(t->data, "reason", json_string(LLM_NO_CODE));
		return FSM_EV_no_code;
	}
	rc = fsm_put_artifact(t, "kernel", RD_KERNEL_PY, code, strlen(code));
	free(code);
	return rc < 0 ? rc : FSM_EV_ok;
}

/* ---------------------------------------------------------- PRECOMPILE */

static void
build_dir_for(const struct task_run *t, const char *code, char *out, size_t n)
{
	struct kb_buf	 key = KB_BUF_INIT(FSM_MAX_SOURCE * 2);
	char		 sha[65];

	/* The shared cache, where any run or `kforge eval` finds what one of them built. */
	if (fb_build_dir(t->cfg, code, out, n) == 0)
		return;
	/* No cache (none could be made, no Python): the run's own, as before. */
	kb_buf_printf(&key, "%s\n%s\n%s\n", t->cfg->eval.device, t->cfg->eval.arch_list,
		      t->cfg->eval.precision);
	kb_buf_append(&key, code, strlen(code));
	kb_sha256_hex(key.p, key.len, sha);
	kb_buf_clear(&key);
	sha[24] = '\0';
	(void)fb_stage_build_dir(t->ctx->run_dir, sha, out, n);
}

/* The task's scratch directory, where its runners start. */
static void
work_dir_for(const struct task_run *t, char *out, size_t n)
{
	(void)fb_stage_work_dir(t->ctx->run_dir, t->task->id, out, n);
}

/* Where this turn's kernel, its build and the task's scratch directory are. */
struct candidate {
	char	kernel[PATH_MAX], build[PATH_MAX], work[PATH_MAX];
};

/* -KB_ENOENT when the turn has no kernel; *code (if asked for) is the caller's. */
static int
locate_candidate(struct task_run *t, struct candidate *c, char **code_out)
{
	char	*code = read_turn_file(t, t->turn, RD_KERNEL_PY);

	if (code == NULL)
		return -KB_ENOENT;
	build_dir_for(t, code, c->build, sizeof(c->build));
	if (code_out != NULL)
		*code_out = code;
	else
		free(code);
	fsm_turn_path(t, t->turn, RD_KERNEL_PY, c->kernel, sizeof(c->kernel));
	work_dir_for(t, c->work, sizeof(c->work));
	return 0;
}

/* The compile slot a build that must run takes (struct fb_slot's hooks). */
struct compile_slot {
	struct task_run	*t;
	struct lease	*lease;
};

static int
compile_slot_take(void *arg)
{
	struct compile_slot	*cs = arg;

	return lease_take(cs->t, cs->lease);
}

static void
compile_slot_ready(void *arg)
{
	(void)arg;
	kb_crashpoint("precompile-before-runner");
}

static void
compile_slot_give(void *arg)
{
	struct compile_slot	*cs = arg;

	lease_give(cs->t, cs->lease);
}

/* ---------------------------------------------------------- the steps' hooks */

/* What a step of feedback/ is lent (struct fb_step_hooks): the task, its lease, and
 * where its build goes (PRECOMPILE). */
struct step_ctx {
	struct task_run		*t;
	struct lease		*lease;
	const char		*build_dir;
};

/* Each runner's pid into the pool as it starts; the worker's death while its runner
 * works, orphaning it with its lease, is a fault injection point. */
static void
step_runner_started(pid_t pid, enum fb_mode mode, bool judge, void *arg)
{
	struct step_ctx	*sc = arg;

	if (judge) {
		record_judge(pid, sc->lease);
		return;
	}
	if (mode == FB_PRECOMPILE)
		record_runner_compiling(pid, sc->lease);
	else if (mode == FB_EXECUTE)
		record_runner_executing(pid, sc->lease);
	else
		record_runner(pid, sc->lease);
}

static void
step_fault(const char *point, void *arg)
{
	(void)arg;
	kb_crashpoint(point);
}

static void device_name(const struct task_run *t, int device, char *out, size_t n);

static int
step_lease_take(void *arg, int *device, char *name, size_t n)
{
	struct step_ctx	*sc = arg;
	int		 rc;

	if ((rc = lease_take(sc->t, sc->lease)) < 0)
		return rc;
	*device = gpool_device(sc->lease->pool, sc->lease->slot);
	device_name(sc->t, *device, name, n);
	return 0;
}

static void
step_lease_give(void *arg)
{
	struct step_ctx	*sc = arg;

	lease_give(sc->t, sc->lease);
}

/* The pool's health rule, probe by probe (gpool_health_decide). */
static enum fb_health_next
step_health_decide(int failures, bool ok, void *arg)
{
	(void)arg;
	switch (gpool_health_decide(failures, ok)) {
	case GPOOL_HEALTH_REPROBE:
		return FB_HEALTH_REPROBE;
	case GPOOL_HEALTH_RETURN:
		return FB_HEALTH_RETURN;
	default:
		return FB_HEALTH_QUARANTINE;
	}
}

/* What the probes found, the GPU still leased: quarantined when the rule says so, and
 * recorded as "health_probe": ok | failed_once | quarantined. */
static void
step_health_settled(const struct fb_health *h, enum fb_status fault, void *arg)
{
	struct step_ctx	*sc = arg;
	struct task_run	*t = sc->t;
	char		 reason[256];
	int		 left;

	if (h->next == FB_HEALTH_QUARANTINE) {
		snprintf(reason, sizeof(reason), "failed %d health probes after a %s; last: %s",
			 h->failures, fb_status_name(fault), h->last);
		left = gpool_quarantine(sc->lease->pool, sc->lease->slot, reason);
		json_object_set_new(t->data, "gpus_left", json_integer(left > 0 ? left : 0));
	}
	json_object_set_new(t->data, "health_probe",
			    json_string(h->next == FB_HEALTH_QUARANTINE ? "quarantined" :
					h->failures > 0 ? "failed_once" : "ok"));
	if (h->failures > 0)
		json_object_set_new(t->data, "health_probe_error", json_string(h->last));
}

/* A worker's runner starting (a fork server importing torch): counted in the pool, for the
 * progress display and status, while it lasts. */
static void
step_runner_starting(bool on, void *arg)
{
	struct step_ctx	*sc = arg;

	(void)gpool_starting(sc->t->ctx->pool, on);
}

/* The static checks' findings stay beside the turn for its verdict (EXECUTE) and its
 * feedback. */
static int
step_checked(const json_t *findings, void *arg)
{
	struct step_ctx	*sc = arg;
	json_t		*result = json_pack("{s:O}", "findings", (json_t *)findings);
	int		 rc = put_json(sc->t, "static", RD_STATIC_JSON, result);

	json_decref(result);
	if (rc == 0 && !fb_findings_reject(findings))
		json_object_set_new(sc->t->data, "build_dir", json_string(sc->build_dir));
	return rc;
}

static void
step_hooks(struct step_ctx *sc, struct fb_step_hooks *h)
{
	memset(h, 0, sizeof(*h));
	h->checked = step_checked;
	h->lease_take = step_lease_take;
	h->lease_give = step_lease_give;
	h->runner_started = step_runner_started;
	h->runner_starting = step_runner_starting;
	h->fault = step_fault;
	h->health_decide = step_health_decide;
	h->health_failures = GPOOL_HEALTH_FAILURES;
	h->health_settled = step_health_settled;
	h->arg = sc;
}

/* A step's request for this turn's candidate; the step sets mode and device. */
static void
step_request(struct task_run *t, const struct candidate *c, struct fb_request *req)
{
	memset(req, 0, sizeof(*req));
	req->problem_path = t->task->problem_path;
	req->candidate_path = c->kernel;
	req->build_dir = c->build;
	req->work_dir = c->work;
	req->device_index = -1;
	req->should_stop = fsm_should_stop;
}

int
fsm_act_precompile(struct task_run *t)
{
	struct fb_request	 req;
	struct fb_precompiled	 p;
	struct lease		 lease = { t->ctx->pool, GPOOL_COMPILE, -1, 0, 0 };
	struct compile_slot	 cs = { t, &lease };
	struct candidate	 c;
	struct step_ctx		 sc = { t, &lease, NULL };
	struct fb_step_hooks	 hooks;
	char			 err[512];
	json_t			*result;
	int			 rc, ev;

	if (locate_candidate(t, &c, NULL) < 0) {
		snprintf(t->fail_reason, sizeof(t->fail_reason), "turn %d has no kernel.py", t->turn);
		return FSM_EV_fatal;
	}
	sc.build_dir = c.build;
	step_hooks(&sc, &hooks);
	hooks.compile = (struct fb_slot){ compile_slot_take, compile_slot_ready,
					  compile_slot_give, &cs };
	step_request(t, &c, &req);
	rc = fb_step_precompile(t->cfg, &req, t->ctx->run_dir, &hooks, &p, err, sizeof(err));
	if (p.checks_failed) {
		fb_precompiled_clear(&p);
		if (rc == -KB_ENOPYTHON || rc == -KB_EEXEC)
			return env_failure_python(t, rc);
		return env_failure(t, NULL, "static_check", err, "reinstall kforge: "
				   "feedback/kforge_check.py must run under the runner's Python");
	}
	if (rc == 0 && p.rejected) {
		rc = put_json(t, "compile", RD_COMPILE_JSON, p.result);
		json_object_set_new(t->data, "status", json_string("rejected"));
		json_object_set_new(t->data, "reason", json_incref(json_object_get(
				    json_object_get(p.result, "details"), "message")));
		fb_precompiled_clear(&p);
		return rc < 0 ? rc : FSM_EV_rejected;
	}
	if (p.runner_start_ms >= 0)
		json_object_set_new(t->data, RD_STEP_RUNNER_START_MS,
				    json_integer(p.runner_start_ms));
	if (p.build.cache_hit)
		json_object_set_new(t->data, "cache_hit", json_true());
	if (rc == -KB_ENOPYTHON || rc == -KB_EEXEC) {
		fb_precompiled_clear(&p);
		return env_failure_python(t, rc);
	}
	if (rc < 0) {
		fb_precompiled_clear(&p);
		if (not_the_tasks_fault(rc))
			return rc;
		snprintf(t->fail_reason, sizeof(t->fail_reason), "precompile: %s", kb_strerror(rc));
		return FSM_EV_fatal;
	}
	result = json_incref(p.result);
	if (p.build.ran.log != NULL)
		rc = fsm_put_artifact(t, "compile_log", RD_COMPILE_LOG, p.build.ran.log,
				      strlen(p.build.ran.log));
	fb_precompiled_clear(&p);
	if (rc == -KB_ENOSPC) {
		json_decref(result);
		return rc;
	}
	if (json_is_string(json_object_get(result, "status")) &&
	    strcmp(json_string_value(json_object_get(result, "status")),
		   fb_status_name(FB_ST_ENV_ERROR)) == 0) {
		ev = env_failure_from(t, result);
		json_decref(result);
		return ev;
	}
	if ((ev = runner_failure(t, result)) != 0) {
		json_decref(result);
		return ev;
	}
	rc = put_json(t, "compile", RD_COMPILE_JSON, result);
	{
		const char *st = json_string_value(json_object_get(result, "status"));

		st = st != NULL ? st : "crashed";
		json_object_set_new(t->data, "status", json_string(st));
		ev = strcmp(st, "ok") == 0 ? FSM_EV_ok :
		     strcmp(st, "timeout") == 0 ? FSM_EV_timeout : FSM_EV_compile_error;
	}
	json_decref(result);
	return rc < 0 ? rc : ev;
}

/* ------------------------------------------------------------- EXECUTE */

/* The device's model name, as the supervisor's probe recorded it (gpus.json). */
static void
device_name(const struct task_run *t, int device, char *out, size_t n)
{
	snprintf(out, n, "%s", device < 0 ? "cpu" : "cuda");
	for (int i = 0; i < t->ctx->ndevices; i++)
		if (t->ctx->devices[i].index == device && t->ctx->devices[i].name[0] != '\0')
			snprintf(out, n, "%s", t->ctx->devices[i].name);
}

/* check_gpu_health took the leased GPU out of the pool during this step, and another
 * GPU is left to run the step on (with none left the result stands: the run stops
 * for want of GPUs anyway, and this turn keeps what it saw). */
static bool
gpu_quarantined_here(const struct task_run *t)
{
	const char	*h = json_string_value(json_object_get(t->data, "health_probe"));

	return h != NULL && strcmp(h, "quarantined") == 0;
}

static bool
rerun_elsewhere(const struct task_run *t)
{
	return gpu_quarantined_here(t) &&
	    json_integer_value(json_object_get(t->data, "gpus_left")) > 0;
}

/* The reference failed its baseline alone, in a process of its own with no candidate
 * code: nothing the model wrote can cause that, so it is an environment error (the
 * baseline runner's own env_error keeps its stage and fix). */
static int
reference_failure(struct task_run *t, json_t *base)
{
	const char	*st = json_string_value(json_object_get(base, "status"));
	json_t		*result = json_pack("{s:s, s:O}", "status", fb_status_name(FB_ST_ENV_ERROR),
					    "baseline", base);
	char		*msg, *fix;
	int		 ev;

	if (st != NULL && strcmp(st, fb_status_name(FB_ST_ENV_ERROR)) == 0 &&
	    json_is_string(json_object_get(base, "stage"))) {
		ev = env_failure(t, result, json_string_value(json_object_get(base, "stage")),
				 json_string_value(json_object_get(base, "message")),
				 json_string_value(json_object_get(base, "fix")));
		json_decref(result);
		return ev;
	}
	msg = fb_reference_failure(base);
	fix = kb_asprintf("check the problem %s: it fails without any candidate; then 'kforge "
			  "resume %s'", t->task->problem_path, t->ctx->run_dir);
	ev = env_failure(t, result, "reference", msg, fix);
	json_decref(result);
	free(msg);
	free(fix);
	return ev;
}

int
fsm_act_execute(struct task_run *t)
{
	struct fb_request	 req;
	struct fb_executed	 ex = { 0 };
	struct fb_outcome	 o;
	struct lease		 lease = { t->ctx->pool, GPOOL_EXEC, -1, 0, 0 };
	struct step_ctx		 sc = { t, &lease, NULL };
	struct fb_step_hooks	 hooks;
	struct candidate	 c;
	double			 speedup = -1;
	json_t			*base = NULL, *result, *findings;
	enum fb_verdict		 verdict;
	int			 device, rc, ev, attempt;

	if (locate_candidate(t, &c, NULL) < 0) {
		snprintf(t->fail_reason, sizeof(t->fail_reason), "turn %d has no kernel.py", t->turn);
		return FSM_EV_fatal;
	}
	step_hooks(&sc, &hooks);
	step_request(t, &c, &req);
	findings = read_turn_json(t, t->turn, RD_STATIC_JSON);
	/* A GPU quarantined under this candidate (or under the reference) may have been
	 * broken before it ran: its result says nothing about the kernel, so it runs
	 * again on another GPU while one is left (each pass takes one GPU out, so this
	 * ends). */
	for (attempt = 0;; attempt++) {
		rc = fb_step_execute(t->cfg, &req, t->task->problem_key, NULL, t->ctx->run_dir,
				     json_object_get(findings, "findings"), &hooks, &ex);
		device = ex.device;
		if (rc < 0 || !rerun_elsewhere(t))
			break;
		log_warnx("%s: turn %d: GPU %d was quarantined under this run; executing again "
			  "on another GPU (pass %d)", t->task->id, t->turn, device, attempt + 2);
		json_object_set_new(t->data, "rerun_after_quarantine", json_pack("{s:i, s:O?}",
				    "device", device, "probe_error",
				    json_object_get(t->data, "health_probe_error")));
		json_object_del(t->data, "health_probe");
		json_object_del(t->data, "health_probe_error");
		json_object_del(t->data, "gpus_left");
		fb_executed_clear(&ex);
	}
	json_decref(findings);
	base = json_incref(ex.baseline.record);
	o = ex.run;
	memset(&ex.run, 0, sizeof(ex.run));
	verdict = ex.verdict;
	fb_executed_clear(&ex);
	if (rc == -KB_ENOPYTHON || rc == -KB_EEXEC) {
		json_decref(base);
		fb_outcome_clear(&o);
		return env_failure_python(t, rc);
	}
	if (rc < 0) {
		json_decref(base);
		fb_outcome_clear(&o);
		if (not_the_tasks_fault(rc))
			return rc;
		snprintf(t->fail_reason, sizeof(t->fail_reason), "execute: %s", kb_strerror(rc));
		return FSM_EV_fatal;
	}
	if (json_is_string(json_object_get(base, "status")) &&
	    strcmp(json_string_value(json_object_get(base, "status")), "ok") != 0 &&
	    gpu_quarantined_here(t)) {
		/* The reference failed on a GPU that its probes then took out of the pool,
		 * and none is left to run it on: the GPU's fault, not the reference's (so no
		 * env_error, which would blame the problem). The turn cannot be judged; the
		 * run stops for want of GPUs. */
		snprintf(t->fail_reason, sizeof(t->fail_reason), "the reference failed on GPU "
			 "%d (%s), which its health probes then took out of the pool; no GPU is "
			 "left", device, json_string_value(json_object_get(base, "status")));
		json_decref(base);
		fb_outcome_clear(&o);
		return FSM_EV_fatal;
	}
	if (json_is_string(json_object_get(base, "status")) &&
	    strcmp(json_string_value(json_object_get(base, "status")), "ok") != 0) {
		ev = reference_failure(t, base);
		json_decref(base);
		fb_outcome_clear(&o);
		return ev;
	}
	if (o.status == FB_ST_ENV_ERROR) {
		ev = env_failure_from(t, o.result);
		json_decref(base);
		fb_outcome_clear(&o);
		return ev;
	}
	if ((ev = runner_failure(t, o.result)) != 0) {
		json_decref(base);
		fb_outcome_clear(&o);
		return ev;
	}
	result = json_incref(o.result);	/* judged by the step */
	json_object_set_new(result, "baseline", json_incref(base));
	if (json_is_number(json_object_get(result, "speedup")))
		speedup = json_number_value(json_object_get(result, "speedup"));
	rc = o.log != NULL ? fsm_put_artifact(t, "execute_log", RD_EXECUTE_LOG, o.log,
					      strlen(o.log)) : 0;
	if (rc != -KB_ENOSPC)
		rc = put_json(t, "result", RD_RESULT_JSON, result);
	json_object_set_new(t->data, "status", json_string(fb_status_name(o.status)));
	json_object_set_new(t->data, "correct", json_boolean(o.correct));
	json_object_set_new(t->data, "device", json_integer(device));
	if (json_is_number(json_object_get(result, "runtime_ms")))	/* fb_judge's */
		json_object_set_new(t->data, "runtime_ms",
				    json_incref(json_object_get(result, "runtime_ms")));
	if (speedup > 0)
		json_object_set_new(t->data, "speedup", json_real(speedup));
	json_object_set_new(t->data, "flags", json_incref(json_object_get(result, "flags")));
	json_object_set_new(t->data, "verdict", json_string(fb_verdict_name(verdict)));
	ev = o.correct ? FSM_EV_correct : o.status == FB_ST_TIMEOUT ? FSM_EV_timeout :
	     FSM_EV_incorrect;
	json_decref(result);
	json_decref(base);
	fb_outcome_clear(&o);
	return rc < 0 ? rc : ev;
}

/* ------------------------------------------------------------- PROFILE */

/*
 * The reference model's CUPTI profile, made once per task, on its first profiled turn,
 * under the same lease as the candidate's (fb_step_profile) and kept as
 * tasks/<id>/reference_profile.json for every later turn (the side-stream rule compares
 * with it) and for a resume. kept_reference: the one kept (NULL: none), and *ask whether
 * the step is to make one now (on the CPU, or without the library, there is none).
 */
static json_t *
kept_reference(struct task_run *t, enum fb_ref_profile *ask)
{
	char	path[PATH_MAX], lib[PATH_MAX];
	json_t	*record, *profile;

	*ask = FB_REF_PROFILE_NONE;
	if (!fb_on_cuda(t->cfg, NULL) || fb_kprof_library(lib, sizeof(lib)) < 0 ||
	    rd_task_file(path, sizeof(path), t->ctx->run_dir, t->task->id,
			 RD_REFERENCE_PROFILE_JSON) < 0)
		return NULL;
	if ((record = json_load_file(path, 0, NULL)) != NULL) {
		profile = json_incref(json_object_get(record, "profile"));
		json_decref(record);
		return profile;
	}
	/* A failed run is tried again on the next turn. */
	*ask = FB_REF_PROFILE_TRY;
	return NULL;
}

/* The reference's profile made now, kept only when it is one. */
static int
step_reference_profiled(const struct fb_outcome *o, void *arg)
{
	struct step_ctx	*sc = arg;
	struct task_run	*t = sc->t;
	char		 path[PATH_MAX];
	json_t		*record, *profile = json_object_get(o->result, "profile");
	int		 rc = 0;

	if (rd_task_file(path, sizeof(path), t->ctx->run_dir, t->task->id,
			 RD_REFERENCE_PROFILE_JSON) < 0)
		return 0;
	record = json_pack("{s:s, s:O?, s:I}", "status", fb_status_name(o->status), "profile",
			   profile, "wall_ms", (json_int_t)o->wall_ms);
	if (o->status == FB_ST_OK && profile != NULL &&
	    (rc = kb_write_atomic_json(path, record)) == 0)
		json_object_set_new(t->data, "reference_profile", json_pack("{s:s, s:I}", "path",
				    rd_name(RD_REFERENCE_PROFILE_JSON), "wall_ms",
				    (json_int_t)o->wall_ms));
	json_decref(record);
	return rc;
}

/* No earlier turn of the task was profiled: the reference is shown beside this one. */
static bool
first_profiled_turn(const struct task_run *t)
{
	char	path[PATH_MAX];

	for (int k = 1; k < t->turn; k++)
		if (fsm_turn_path(t, k, RD_PROFILE_JSON, path, sizeof(path)) == 0 &&
		    kb_file_exists(path))
			return false;
	return true;
}

/*
 * The profile's evidence about the turn's forward (fb_judge_profile, which the profile
 * step applies: the policy lives in feedback/verdict.c with every other verdict rule).
 * EXECUTE wrote result.json judged on what it could see; a CUPTI profile can show that
 * no kernel of the candidate's ran (rejected) or that work ran on a side stream
 * (suspect). The judged result is written again, atomically, before this step's record
 * names it, and FEEDBACK reads its verdict from result.json as ever: the FEEDBACK record
 * carries it to status and report, and the model reads why (fb_verdict_feedback).
 * Re-running this step after a crash judges the same result again from scratch (the
 * rule replaces its own earlier flags).
 */
static int
record_profile_verdict(struct task_run *t, json_t *result, enum fb_verdict v)
{
	json_t	*check;
	int	 rc;

	rc = put_json(t, "result", RD_RESULT_JSON, result);
	check = json_object_get(json_object_get(result, "details"), "profile_check");
	json_object_set_new(t->data, "verdict", json_string(fb_verdict_name(v)));
	json_object_set_new(t->data, "flags", json_incref(json_object_get(result, "flags")));
	json_object_set_new(t->data, "profile_check", json_pack("{s:O?, s:O?, s:O?, s:O?}",
			    "judged", json_object_get(check, "judged"), "custom_kernel_ran",
			    json_object_get(check, "custom_kernel_ran"), "streams",
			    json_object_get(check, "streams"), "why", json_object_get(check, "why")));
	if (v == FB_VERDICT_REJECTED || v == FB_VERDICT_SUSPECT)
		log_info("%s turn %d: %s after its profile", t->task->id, t->turn,
			 fb_verdict_name(v));
	return rc;
}

int
fsm_act_profile(struct task_run *t)
{
	struct fb_request	 req;
	struct fb_profiled	 p = { 0 };
	struct fb_profile_ask	 ask = { 0 };
	struct lease		 lease = { t->ctx->pool, GPOOL_EXEC, -1, 0, 0 };
	struct step_ctx		 sc = { t, &lease, NULL };
	struct fb_step_hooks	 hooks;
	struct candidate	 c;
	char			*text, *code = NULL, tag[32];
	json_t			*kept = NULL, *judged = NULL, *profile, *reference;
	bool			 first = first_profiled_turn(t);
	int			 rc;

	if (locate_candidate(t, &c, &code) < 0)
		return FSM_EV_profiled;
	step_hooks(&sc, &hooks);
	hooks.reference_profiled = step_reference_profiled;
	step_request(t, &c, &req);
	kept = kept_reference(t, &ask.reference);
	snprintf(tag, sizeof(tag), "kprof-t%d", t->turn);
	ask.tag = tag;
	ask.reference_profile = kept;
	ask.judged = judged = read_turn_json(t, t->turn, RD_RESULT_JSON);
	ask.source = code;
	ask.cupti_only = true;
	rc = fb_step_profile(t->cfg, &req, &ask, &hooks, &p);
	reference = kept != NULL ? kept : p.reference_ran ?
		    json_object_get(p.reference.result, "profile") : NULL;
	if (rc == -KB_ENOPYTHON || rc == -KB_EEXEC) {
		rc = env_failure_python(t, rc);
		goto out;
	}
	if (rc < 0) {
		rc = not_the_tasks_fault(rc) ? rc : FSM_EV_profiled;
		goto out;
	}
	if (p.run.status == FB_ST_ENV_ERROR) {
		rc = env_failure_from(t, p.run.result);
		goto out;
	}
	profile = json_object_get(p.run.result, "profile");
	rc = put_json(t, "profile", RD_PROFILE_JSON, p.run.result);
	if (rc == 0 && p.judged)
		rc = record_profile_verdict(t, judged, p.verdict);
	text = fb_profile_feedback(t->cfg, profile, first ? reference : NULL);
	if (rc == 0 && text != NULL)
		rc = fsm_put_artifact(t, "profile_feedback", RD_PROFILE_FEEDBACK_MD, text, strlen(text));
	json_object_set_new(t->data, "status", json_string(fb_status_name(p.run.status)));
	json_object_set_new(t->data, "source", json_incref(json_object_get(profile, "source")));
	if (json_is_true(json_object_get(profile, "partial")))
		json_object_set_new(t->data, "partial", json_true());
	json_object_set_new(t->data, "wall_ms", json_integer(p.run.wall_ms));
	free(text);
	rc = rc < 0 ? rc : FSM_EV_profiled;
out:
	json_decref(kept);
	json_decref(judged);
	fb_profiled_clear(&p);
	free(code);
	return rc;
}

/* ------------------------------------------------------------ FEEDBACK */

/* The outcome of this turn as the feedback text needs it, rebuilt from the artifacts
 * (so FEEDBACK re-runs identically after a resume). */
static int
turn_outcome(struct task_run *t, struct fb_outcome *o, const char **label, char **text,
	     const char **verdict)
{
	json_t		*compile, *result;
	const char	*st;

	memset(o, 0, sizeof(*o));
	o->runtime_ms = o->ref_runtime_ms = o->speedup = -1;
	*text = NULL;
	*verdict = NULL;	/* nothing was evaluated */
	if (!kb_file_exists(t->turn_dir) ||
	    (compile = read_turn_json(t, t->turn, RD_COMPILE_JSON)) == NULL) {
		char *k = read_turn_file(t, t->turn, RD_KERNEL_PY);

		if (k == NULL) {
			*label = "no_code";
			*text = read_turn_file(t, t->turn, RD_REPLY_REFUSED_MD);
			if (*text == NULL)
				*text = kb_strdup("Your reply contained no code. Reply with the "
						  "complete ModelNew module in one ```python fenced "
						  "block.");
			return 0;
		}
		free(k);
		*label = "crashed";
		*text = kb_strdup("The kernel could not be evaluated.");
		return 0;
	}
	st = json_string_value(json_object_get(compile, "status"));
	if (st != NULL && strcmp(st, "rejected") == 0) {
		*label = "rejected";
		*verdict = fb_verdict_name(FB_VERDICT_REJECTED);
		*text = fb_verdict_feedback(compile);
		if (*text == NULL)
			*text = kb_asprintf("Your code was rejected before compiling: %s.",
					    json_string_value(json_object_get(
						    json_object_get(compile, "details"), "message")));
		o->result = compile;	/* its reasons, for the record */
		return 0;
	}
	result = read_turn_json(t, t->turn, RD_RESULT_JSON);
	if (result != NULL)
		json_decref(compile);
	fb_outcome_of_judged(result != NULL ? result : compile, result != NULL, o);
	*label = fb_status_name(o->status);
	/* A result that stopped at the build was never judged: it is not correct. */
	*verdict = json_string_value(json_object_get(o->result, "verdict"));
	if (*verdict == NULL)
		*verdict = fb_verdict_name(o->correct ? FB_VERDICT_CORRECT : FB_VERDICT_INCORRECT);
	return 0;
}

/* The rules a judged result broke or was flagged by, for the FEEDBACK record (report
 * --accept reads them). */
static json_t *
reason_rules(const json_t *result)
{
	json_t	*rules = json_array(), *r;
	size_t	 i;

	json_array_foreach(json_object_get(result, "reasons"), i, r)
		if (json_is_string(json_object_get(r, "rule")))
			json_array_append(rules, json_object_get(r, "rule"));
	return rules;
}

/* The budget refinement.budget sets that the task's spend has reached, or NULL. A node
 * begun is finished: the search stops after the node that reached a limit. */
static const char *
budget_reached(const struct task_run *t)
{
	const struct rd_spend	*s = &t->spent;

	if (t->cfg->refinement.budget.requests > 0 &&
	    s->requests >= t->cfg->refinement.budget.requests)
		return "requests";
	if (t->cfg->refinement.budget.tokens > 0 && s->tokens >= t->cfg->refinement.budget.tokens)
		return "tokens";
	if (t->cfg->refinement.budget.cost_usd > 0 &&
	    s->cost_usd >= t->cfg->refinement.budget.cost_usd)
		return "cost_usd";
	if (t->cfg->refinement.budget.gpu_s > 0 && s->gpu_s >= t->cfg->refinement.budget.gpu_s)
		return "gpu_s";
	return NULL;
}

/* This turn joins the search as a node; then the search ends (refinement.turns nodes,
 * or a budget reached) or names the next node's parents, recorded with the event. The
 * spend so far is in t->spent (this turn's own records included: FEEDBACK spends
 * nothing). */
static int
search_on(struct task_run *t)
{
	const char	*budget;
	int		 p = 0, p2 = 0;

	if (t->turn >= 1 && t->turn <= FSM_MAX_NODES) {
		fsm_node_of_record(t->data, t->turn, &t->nodes[t->turn]);
		t->nnodes = t->turn;
	}
	json_object_set_new(t->data, "spent", json_pack("{s:I, s:I, s:f, s:f}", "requests",
			    (json_int_t)t->spent.requests, "tokens", (json_int_t)t->spent.tokens,
			    "cost_usd", t->spent.cost_usd, "gpu_s", t->spent.gpu_s));
	if (t->turn >= t->cfg->refinement.turns)
		return FSM_EV_budget_spent;
	if ((budget = budget_reached(t)) != NULL) {
		json_object_set_new(t->data, "budget", json_string(budget));
		return FSM_EV_budget_spent;
	}
	if (fsm_search_next(t->cfg, t->task->id, t->nodes, t->nnodes, &p, &p2) < 0)
		return FSM_EV_budget_spent;
	t->next_parent = p;
	t->next_parent2 = p2;
	json_object_set_new(t->data, RD_NEXT_PARENT, json_integer(p));
	if (p2 > 0)
		json_object_set_new(t->data, RD_NEXT_PARENT2, json_integer(p2));
	return FSM_EV_next_turn;
}

int
fsm_act_feedback(struct task_run *t)
{
	struct fb_outcome	 o;
	const char		*label, *verdict;
	char			*text = NULL, *why;
	bool			 counts;
	int			 rc;

	turn_outcome(t, &o, &label, &text, &verdict);
	if (text == NULL) {
		text = fb_exec_feedback(t->cfg, &o);
		if ((why = fb_verdict_feedback(o.result)) != NULL) {
			char *joined = kb_asprintf("%s\n\n%s", text, why);

			free(text);
			free(why);
			text = joined;
		}
	}
	rc = fsm_put_artifact(t, "feedback", RD_FEEDBACK_MD, text, strlen(text));
	free(text);
	/* Only a correct verdict is a result: a suspect one waits for review. */
	counts = o.correct && verdict != NULL &&
		 strcmp(verdict, fb_verdict_name(FB_VERDICT_CORRECT)) == 0;
	if (verdict != NULL) {
		json_object_set_new(t->data, "verdict", json_string(verdict));
		json_object_set_new(t->data, "reasons", reason_rules(o.result));
	}
	if (counts && o.speedup > 0 && o.speedup > t->best_speedup) {
		t->best_speedup = o.speedup;
		t->best_turn = t->turn;
	}
	json_object_set_new(t->data, "status", json_string(label));
	json_object_set_new(t->data, "compiled", json_boolean(o.compiled));
	json_object_set_new(t->data, "correct", json_boolean(o.correct));
	json_object_set_new(t->data, "speedup", o.speedup > 0 ? json_real(o.speedup) : json_null());
	json_object_set_new(t->data, "speedup_ci95", o.speedup > 0 &&
			    json_array_size(json_object_get(o.result, "speedup_ci95")) == 2 ?
			    json_incref(json_object_get(o.result, "speedup_ci95")) : json_null());
	json_object_set_new(t->data, "runtime_ms",
			    o.runtime_ms > 0 ? json_real(o.runtime_ms) : json_null());
	json_object_set_new(t->data, "ref_runtime_ms",
			    o.ref_runtime_ms > 0 ? json_real(o.ref_runtime_ms) : json_null());
	json_object_set_new(t->data, "best_speedup",
			    t->best_speedup > 0 ? json_real(t->best_speedup) : json_null());
	json_object_set_new(t->data, "best_turn", json_integer(t->best_turn));
	fb_outcome_clear(&o);
	if (rc < 0)
		return rc;
	return search_on(t);
}

/* ----------------------------------------------------- an agent's tool call */

int
fsm_tool_evaluate(struct task_run *t, const char *kernel_path, const char *code,
		  struct fsm_tool_outcome *out)
{
	struct fb_request	 req;
	struct fb_precompiled	 p;
	struct fb_executed	 ex = { 0 };
	struct lease		 clease = { t->ctx->pool, GPOOL_COMPILE, -1, 0, 0 };
	struct lease		 elease = { t->ctx->pool, GPOOL_EXEC, -1, 0, 0 };
	struct compile_slot	 cs = { t, &clease };
	struct candidate	 c;
	struct step_ctx		 sc = { t, &clease, NULL };
	struct fb_step_hooks	 hooks;
	const char		*st;
	char			 err[512] = "";
	int			 rc;

	memset(out, 0, sizeof(*out));
	out->verdict = FB_VERDICT_INCORRECT;
	out->status = FB_ST_CRASHED;
	snprintf(c.kernel, sizeof(c.kernel), "%s", kernel_path);
	build_dir_for(t, code, c.build, sizeof(c.build));
	work_dir_for(t, c.work, sizeof(c.work));
	sc.build_dir = c.build;
	step_hooks(&sc, &hooks);
	hooks.checked = NULL;	/* the findings stay the call's, not the turn's */
	hooks.compile = (struct fb_slot){ compile_slot_take, compile_slot_ready,
					  compile_slot_give, &cs };
	step_request(t, &c, &req);
	rc = fb_step_precompile(t->cfg, &req, t->ctx->run_dir, &hooks, &p, err, sizeof(err));
	/* The record's "lease" is the execution's (the run's slot use); the build's apart. */
	if (json_object_get(t->data, "lease") != NULL) {
		json_object_set(t->data, "compile_lease", json_object_get(t->data, "lease"));
		json_object_del(t->data, "lease");
	}
	if (rc < 0 || p.checks_failed) {
		fb_precompiled_clear(&p);
		if (rc == -KB_ESTOPPED || rc == -KB_ENOSPC)
			return rc;
		out->status = FB_ST_ENV_ERROR;
		out->result = json_pack("{s:s, s:{s:s}}", "status", fb_status_name(FB_ST_ENV_ERROR),
					"details", "message", err[0] ? err : kb_strerror(rc));
		return 0;
	}
	if (p.rejected) {
		out->result = json_incref(p.result);
		out->verdict = FB_VERDICT_REJECTED;
		out->status = FB_ST_COMPILE_ERROR;
		(void)fb_status_parse(json_string_value(json_object_get(p.result, "status")),
				      &out->status);
		fb_precompiled_clear(&p);
		return 0;
	}
	st = json_string_value(json_object_get(p.result, "status"));
	if (st == NULL || strcmp(st, fb_status_name(FB_ST_OK)) != 0) {
		out->result = json_incref(p.result);
		if (fb_status_parse(st, &out->status) < 0)
			out->status = FB_ST_CRASHED;
		if (p.build.ran.log != NULL)
			out->log = kb_strdup(p.build.ran.log);
		fb_precompiled_clear(&p);
		return 0;
	}
	out->compiled = true;
	sc.lease = &elease;
	rc = fb_step_execute(t->cfg, &req, t->task->problem_key, NULL, t->ctx->run_dir,
			     p.findings, &hooks, &ex);
	fb_precompiled_clear(&p);
	if (rc == -KB_ESTOPPED || rc == -KB_ENOSPC) {
		fb_executed_clear(&ex);
		return rc;
	}
	if (rc < 0 || !ex.executed) {
		char *msg = rc < 0 ? kb_strdup(kb_strerror(rc)) :
			    fb_reference_failure(ex.baseline.record);

		out->status = FB_ST_ENV_ERROR;
		out->result = json_pack("{s:s, s:{s:s}}", "status", fb_status_name(FB_ST_ENV_ERROR),
					"details", "message", msg);
		free(msg);
		fb_executed_clear(&ex);
		return 0;
	}
	out->result = json_incref(ex.run.result);
	json_object_set(out->result, "baseline", ex.baseline.record);
	out->status = ex.run.status;
	out->executed = true;
	if (ex.judged)
		out->verdict = ex.verdict;
	out->log = ex.run.log;
	ex.run.log = NULL;
	fb_executed_clear(&ex);
	return 0;
}
