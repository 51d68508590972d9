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

/* Starts the worker's next runner ahead (fb_warm_start), saying so in the pool while it
 * does (status and the progress display count those starting) and recording how long it
 * took in the step's data where one was started: a worker's first start waits for its
 * fork server to import torch, seconds in no slot that would otherwise show nowhere. */
static void
warm_start_recorded(struct task_run *t)
{
	int64_t	asked_ms = kb_mono_ms();
	bool	shown;

	if (!t->cfg->runner.warm || fb_warm_pid() != 0) {
		fb_warm_start(t->cfg);
		return;
	}
	shown = gpool_starting(t->ctx->pool, true) == 0;
	fb_warm_start(t->cfg);
	if (shown)
		(void)gpool_starting(t->ctx->pool, false);
	if (fb_warm_pid() != 0)
		json_object_set_new(t->data, RD_STEP_RUNNER_START_MS,
				    json_integer(kb_mono_ms() - asked_ms));
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
	char			*prev = NULL, *exec_text = NULL, *prof = NULL;
	int			 rc;

	if (t->turn == 1)
		return llm_prompt_initial(t->cfg, hardware_of(t), t->problem_src, prompt, err, errlen);
	if (t->cfg->refinement.feedback_g) {
		prev = read_turn_file(t, t->turn - 1, RD_KERNEL_PY);
		if (prev == NULL)	/* no code last turn: show what the model said */
			prev = read_turn_file(t, t->turn - 1, RD_RESPONSE_MD);
		fb.prev_kernel = prev;
	}
	if (t->cfg->refinement.feedback_e)
		fb.exec_text = exec_text = read_turn_file(t, t->turn - 1, RD_FEEDBACK_MD);
	if (t->cfg->refinement.feedback_p)
		fb.profile_text = prof = read_turn_file(t, t->turn - 1, RD_PROFILE_FEEDBACK_MD);
	rc = llm_prompt_refine(t->cfg, hardware_of(t), t->problem_src, &fb, prompt, err, errlen);
	free(prev);
	free(exec_text);
	free(prof);
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
	char			 err[512] = "";
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
	if ((rc = lease_take(t, &lease)) < 0)
		return rc;
	/* Paused while we took the slot. */
	if (gpool_paused(t->ctx->pool, NULL, 0) != GPOOL_PAUSE_NONE) {
		lease_give(t, &lease);
		return -KB_ESTOPPED;
	}
	rc = llm_complete(t->llm, &req, &reply, err, sizeof(err));
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
	/* Metadata first, the response last: response.md existing is what says "this
	 * reply was paid for, never ask again". */
	rc = put_json(t, "response_meta", RD_RESPONSE_JSON, meta);
	json_decref(meta);
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

int
fsm_act_generate(struct task_run *t)
{
	char	*content = NULL, *prompt = NULL, *code = NULL, err[512];
	int	 rc;

	if ((content = read_turn_file(t, t->turn, RD_RESPONSE_MD)) != NULL) {
		json_object_set_new(t->data, "reused_response", json_true());
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

static void
runner_request(struct task_run *t, enum fb_mode mode, const struct candidate *c,
	       struct lease *l, struct fb_request *req)
{
	memset(req, 0, sizeof(*req));
	req->mode = mode;
	req->problem_path = t->task->problem_path;
	req->candidate_path = c != NULL ? c->kernel : NULL;
	req->build_dir = c != NULL ? c->build : NULL;
	req->work_dir = c != NULL ? c->work : NULL;
	req->device_index = l->cls == GPOOL_EXEC ? gpool_device(l->pool, l->slot) : -1;
	req->time_reference = mode == FB_EXECUTE;
	req->on_start = mode == FB_PRECOMPILE ? record_runner_compiling :
			mode == FB_EXECUTE ? record_runner_executing : record_runner;
	req->on_judge_start = record_judge;
	req->on_start_arg = l;
	req->should_stop = fsm_should_stop;
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

int
fsm_act_precompile(struct task_run *t)
{
	struct fb_request	 req;
	struct fb_build		 b;
	struct lease		 lease = { t->ctx->pool, GPOOL_COMPILE, -1, 0, 0 };
	struct compile_slot	 cs = { t, &lease };
	const struct fb_slot	 slot = { compile_slot_take, compile_slot_ready,
					  compile_slot_give, &cs };
	struct candidate	 c;
	char			 err[512];
	json_t			*result, *findings;
	int			 rc, ev;

	if (locate_candidate(t, &c, NULL) < 0) {
		snprintf(t->fail_reason, sizeof(t->fail_reason), "turn %d has no kernel.py", t->turn);
		return FSM_EV_fatal;
	}
	/* The static checks, a gate before a compile slot is spent; their findings stay
	 * beside the turn for its verdict (EXECUTE) and its feedback. */
	if ((rc = fb_static_check(t->cfg, t->task->problem_path, c.kernel, &findings, err,
				  sizeof(err))) < 0) {
		if (rc == -KB_ENOPYTHON || rc == -KB_EEXEC)
			return env_failure_python(t, rc);
		return env_failure(t, NULL, "static_check", err, "reinstall kforge: "
				   "feedback/kforge_check.py must run under the runner's Python");
	}
	result = json_pack("{s:O}", "findings", findings);
	rc = put_json(t, "static", RD_STATIC_JSON, result);
	json_decref(result);
	if (rc == 0 && fb_findings_reject(findings)) {
		result = fb_rejection(findings);
		rc = put_json(t, "compile", RD_COMPILE_JSON, result);
		json_object_set_new(t->data, "status", json_string("rejected"));
		json_object_set_new(t->data, "reason", json_incref(json_object_get(
				    json_object_get(result, "details"), "message")));
		json_decref(result);
		json_decref(findings);
		return rc < 0 ? rc : FSM_EV_rejected;
	}
	json_decref(findings);
	if (rc < 0)
		return rc;
	if ((rc = fb_stage_mkdir(c.build)) < 0 || (rc = fb_stage_mkdir(c.work)) < 0)
		return rc;
	json_object_set_new(t->data, "build_dir", json_string(c.build));
	/* The next runner imports torch (or is forked) while the build cache is looked up
	 * and a compile slot awaited; not before the static checks, whose rejections would
	 * leave it unused (20 of the CPU adversarial suite's 53 tasks, one import each). */
	warm_start_recorded(t);
	runner_request(t, FB_PRECOMPILE, &c, &lease, &req);
	rc = fb_eval_build(t->cfg, &req, t->ctx->run_dir, &slot, &b);
	if (b.cache_hit)
		json_object_set_new(t->data, "cache_hit", json_true());
	if (rc == -KB_ENOPYTHON || rc == -KB_EEXEC) {
		fb_build_clear(&b);
		return env_failure_python(t, rc);
	}
	if (rc < 0) {
		fb_build_clear(&b);
		if (not_the_tasks_fault(rc))
			return rc;
		snprintf(t->fail_reason, sizeof(t->fail_reason), "precompile: %s", kb_strerror(rc));
		return FSM_EV_fatal;
	}
	result = json_incref(b.result);
	if (b.ran.log != NULL)
		rc = fsm_put_artifact(t, "compile_log", RD_COMPILE_LOG, b.ran.log, strlen(b.ran.log));
	fb_build_clear(&b);
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

/* The reference alone on this device model (fb_eval_baseline: the run's own record,
 * then the cache runs share, then a measurement): a reference that fails here is the
 * problem's fault, not the candidate's. The speedup itself comes from the reference
 * timed beside the candidate in the execute step (fb_judge). */
static int
baseline_of(struct task_run *t, struct lease *lease, int device, json_t **info)
{
	struct fb_request	 req;
	struct fb_baseline	 b;
	char			 name[256], work[PATH_MAX];
	int			 rc;

	device_name(t, device, name, sizeof(name));
	work_dir_for(t, work, sizeof(work));
	runner_request(t, FB_BASELINE, NULL, lease, &req);
	req.work_dir = work;
	if ((rc = fb_eval_baseline(t->cfg, &req, t->task->problem_key, name, t->ctx->run_dir,
				   &b)) < 0)
		return rc;
	*info = b.record;
	return 0;
}

/* ---------------------------------------------------------- GPU health */

#define FSM_PROBE_TIMEOUT_S 120	/* a probe is a tiny kernel; longer is a hung GPU */

/* Statuses after which the GPU itself may be broken, not just the candidate. */
static bool
runner_faulted(enum fb_status st)
{
	return st == FB_ST_CUDA_ERROR || st == FB_ST_CRASHED || st == FB_ST_TIMEOUT;
}

/* Probes the leased GPU, each time in a fresh process (a fresh CUDA context), until
 * gpool_health_decide settles, and quarantines it when it must. The lease is still held,
 * so nothing else runs on the GPU meanwhile, and the probe's pid is in the pool should
 * this worker die. Records "health_probe": ok | failed_once | quarantined. A CPU slot
 * has no GPU to probe. Returns 0, or -KB_ESTOPPED (the GPU was not judged). */
static int
check_gpu_health(struct task_run *t, struct lease *lease, int device, enum fb_status fault)
{
	struct fb_request	 req;
	struct fb_outcome	 o = { 0 };
	enum gpool_health		 next = GPOOL_HEALTH_REPROBE;
	enum fb_status		 st;
	char			 work[PATH_MAX], last[256] = "", reason[256];
	const char		*msg;
	int			 failures = 0, rc, left;

	if (device < 0)
		return 0;
	work_dir_for(t, work, sizeof(work));
	while (next == GPOOL_HEALTH_REPROBE) {
		runner_request(t, FB_PROBE, NULL, lease, &req);
		req.work_dir = work;
		req.timeout_s = FSM_PROBE_TIMEOUT_S;
		if ((rc = fb_run(t->cfg, &req, &o)) == -KB_ESTOPPED) {
			fb_outcome_clear(&o);
			return rc;
		}
		/* A probe that could not even start proves nothing good about the GPU. */
		st = rc < 0 ? FB_ST_CRASHED : o.status;
		if (st != FB_ST_OK) {
			msg = rc < 0 ? kb_strerror(rc) : json_string_value(json_object_get(
				json_object_get(o.result, "details"), "message"));
			snprintf(last, sizeof(last), "%s: %s", fb_status_name(st), msg ? msg : "?");
			log_warnx("GPU %d failed health probe %d of %d after a %s: %s", device,
				  failures + 1, GPOOL_HEALTH_FAILURES, fb_status_name(fault), last);
		}
		next = gpool_health_decide(failures, st == FB_ST_OK);
		failures += st != FB_ST_OK;
		fb_outcome_clear(&o);
	}
	if (next == GPOOL_HEALTH_QUARANTINE) {
		snprintf(reason, sizeof(reason), "failed %d health probes after a %s; last: %s",
			 failures, fb_status_name(fault), last);
		left = gpool_quarantine(lease->pool, lease->slot, reason);
		json_object_set_new(t->data, "gpus_left", json_integer(left > 0 ? left : 0));
	} else if (failures > 0) {
		log_info("GPU %d passed its second health probe; it stays in the pool", device);
	}
	json_object_set_new(t->data, "health_probe",
			    json_string(next == GPOOL_HEALTH_QUARANTINE ? "quarantined" :
					failures > 0 ? "failed_once" : "ok"));
	if (failures > 0)
		json_object_set_new(t->data, "health_probe_error", json_string(last));
	return 0;
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
	struct fb_outcome	 o = { 0 };
	struct lease		 lease = { t->ctx->pool, GPOOL_EXEC, -1, 0, 0 };
	struct candidate	 c;
	double			 speedup = -1;
	json_t			*base = NULL, *result, *findings;
	enum fb_status		 bst;
	enum fb_verdict		 verdict;
	int			 device, rc, ev, attempt;

	if (locate_candidate(t, &c, NULL) < 0) {
		snprintf(t->fail_reason, sizeof(t->fail_reason), "turn %d has no kernel.py", t->turn);
		return FSM_EV_fatal;
	}
	/* A GPU quarantined under this candidate (or under the reference) may have been
	 * broken before it ran: its result says nothing about the kernel, so it runs
	 * again on another GPU while one is left (each pass takes one GPU out, so this
	 * ends). */
	for (attempt = 0;; attempt++) {
		if ((rc = lease_take(t, &lease)) < 0)
			return rc;
		device = gpool_device(t->ctx->pool, lease.slot);
		rc = baseline_of(t, &lease, device, &base);
		bst = FB_ST_CRASHED;
		if (rc == 0)
			(void)fb_status_parse(json_string_value(json_object_get(base, "status")),
					      &bst);
		if (rc == 0 && bst != FB_ST_OK && runner_faulted(bst)) {
			rc = check_gpu_health(t, &lease, device, bst);
		} else if (rc == 0 && bst == FB_ST_OK) {
			runner_request(t, FB_EXECUTE, &c, &lease, &req);
			req.reference_clean = json_object_get(base, "eager");
			kb_crashpoint("execute-before-runner");
			rc = fb_run(t->cfg, &req, &o);
			if (rc == 0 && runner_faulted(o.status))
				rc = check_gpu_health(t, &lease, device, o.status);
		}
		lease_give(t, &lease);
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
		json_decref(base);
		base = NULL;
		fb_outcome_clear(&o);
		memset(&o, 0, sizeof(o));
	}
	if (rc == 0 && fb_runner_hit_full_disk(&o, t->ctx->run_dir))
		rc = -KB_ENOSPC;
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
	result = json_incref(o.result);
	findings = read_turn_json(t, t->turn, RD_STATIC_JSON);
	verdict = fb_judge(result, json_object_get(findings, "findings"), base);
	json_decref(findings);
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
 * under the same lease as the candidate's (a runner of its own: the library writes one
 * profile per process) and kept as tasks/<id>/reference_profile.json for every later
 * turn (the side-stream rule compares with it) and for a resume. NULL where there is
 * none (on the CPU, without the library, or a run that failed; the candidate's profile
 * goes on without it). *rc: -KB_ESTOPPED or a write failure, else 0.
 */
static json_t *
reference_profile(struct task_run *t, struct lease *lease, const struct candidate *c, int *rc)
{
	struct fb_request	 req;
	struct fb_outcome	 o = { 0 };
	char			 path[PATH_MAX], lib[PATH_MAX];
	json_t			*record, *profile;

	*rc = 0;
	if (!fb_on_cuda(t->cfg, NULL) || fb_kprof_library(lib, sizeof(lib)) < 0 ||
	    rd_task_file(path, sizeof(path), t->ctx->run_dir, t->task->id,
			 RD_REFERENCE_PROFILE_JSON) < 0)
		return NULL;
	if ((record = json_load_file(path, 0, NULL)) != NULL) {
		profile = json_incref(json_object_get(record, "profile"));
		json_decref(record);
		return profile;
	}
	runner_request(t, FB_PROFILE, NULL, lease, &req);
	req.work_dir = c->work;
	req.profile_reference = true;
	if ((*rc = fb_profile(t->cfg, &req, "reference", &o)) < 0) {
		if (*rc != -KB_ESTOPPED && *rc != -KB_ENOSPC)
			*rc = 0;	/* no comparison this time; the next turn tries again */
		fb_outcome_clear(&o);
		return NULL;
	}
	profile = json_incref(json_object_get(o.result, "profile"));
	record = json_pack("{s:s, s:O?, s:I}", "status", fb_status_name(o.status), "profile",
			   profile, "wall_ms", (json_int_t)o.wall_ms);
	/* Kept only when it is one: a failed run is tried again on the next turn. */
	if (o.status == FB_ST_OK && profile != NULL &&
	    (*rc = kb_write_atomic_json(path, record)) == 0)
		json_object_set_new(t->data, "reference_profile", json_pack("{s:s, s:I}", "path",
				    rd_name(RD_REFERENCE_PROFILE_JSON), "wall_ms",
				    (json_int_t)o.wall_ms));
	json_decref(record);
	fb_outcome_clear(&o);
	return profile;
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
 * The profile's evidence about the turn's forward (fb_judge_profile: the policy lives in
 * feedback/verdict.c with every other verdict rule). EXECUTE wrote result.json judged
 * on what it could see; a CUPTI profile can show that no kernel of the candidate's ran
 * (rejected) or that work ran on a side stream (suspect). The judged result is written
 * again, atomically, before this step's record names it, and FEEDBACK reads its verdict
 * from result.json as ever: the FEEDBACK record carries it to status and report, and the
 * model reads why (fb_verdict_feedback). Re-running this step after a crash judges the
 * same result again from scratch (the rule replaces its own earlier flags).
 */
static int
judge_by_profile(struct task_run *t, json_t *profile, json_t *reference, const char *code)
{
	json_t		*result, *check;
	const char	*source = json_string_value(json_object_get(profile, "source"));
	enum fb_verdict	 v;
	int		 rc;

	if (source == NULL || strcmp(source, "cupti") != 0 ||
	    (result = read_turn_json(t, t->turn, RD_RESULT_JSON)) == NULL)
		return 0;
	v = fb_judge_profile(result, profile, reference, code);
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
	json_decref(result);
	return rc;
}

int
fsm_act_profile(struct task_run *t)
{
	struct fb_request	 req;
	struct fb_outcome	 o = { 0 };
	struct lease		 lease = { t->ctx->pool, GPOOL_EXEC, -1, 0, 0 };
	struct candidate	 c;
	char			*text, *code = NULL, tag[32];
	json_t			*reference = NULL, *profile;
	bool			 first = first_profiled_turn(t);
	int			 rc;

	if (locate_candidate(t, &c, &code) < 0)
		return FSM_EV_profiled;
	if ((rc = lease_take(t, &lease)) < 0) {
		free(code);
		return rc;
	}
	reference = reference_profile(t, &lease, &c, &rc);
	if (rc == 0) {
		runner_request(t, FB_PROFILE, &c, &lease, &req);
		snprintf(tag, sizeof(tag), "kprof-t%d", t->turn);
		rc = fb_profile(t->cfg, &req, tag, &o);
		if (rc == 0 && runner_faulted(o.status))
			rc = check_gpu_health(t, &lease, req.device_index, o.status);
	}
	lease_give(t, &lease);
	if (rc == -KB_ENOPYTHON || rc == -KB_EEXEC) {
		rc = env_failure_python(t, rc);
		goto out;
	}
	if (rc < 0) {
		rc = not_the_tasks_fault(rc) ? rc : FSM_EV_profiled;
		goto out;
	}
	if (o.status == FB_ST_ENV_ERROR) {
		rc = env_failure_from(t, o.result);
		goto out;
	}
	profile = json_object_get(o.result, "profile");
	rc = put_json(t, "profile", RD_PROFILE_JSON, o.result);
	if (rc == 0)
		rc = judge_by_profile(t, profile, reference, code);
	text = fb_profile_feedback(t->cfg, profile, first ? reference : NULL);
	if (rc == 0 && text != NULL)
		rc = fsm_put_artifact(t, "profile_feedback", RD_PROFILE_FEEDBACK_MD, text, strlen(text));
	json_object_set_new(t->data, "status", json_string(fb_status_name(o.status)));
	json_object_set_new(t->data, "source", json_incref(json_object_get(profile, "source")));
	if (json_is_true(json_object_get(profile, "partial")))
		json_object_set_new(t->data, "partial", json_true());
	json_object_set_new(t->data, "wall_ms", json_integer(o.wall_ms));
	free(text);
	rc = rc < 0 ? rc : FSM_EV_profiled;
out:
	json_decref(reference);
	fb_outcome_clear(&o);
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
	return t->turn >= t->cfg->refinement.turns ? FSM_EV_budget_spent : FSM_EV_next_turn;
}
