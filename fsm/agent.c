/*
 * agent.c: the worker's side of an agent turn (llm.provider agent, llm/agent.c): the
 * turn's workspace, the tool's evaluations with their records, and the transcript.
 *
 * The agent is untrusted like a candidate: what it may change is its workspace. Its tool
 * calls reach this process (the trusted side) as kernel text; each is evaluated here by
 * the turn's own steps (fsm_tool_evaluate), its kernel and result kept as artifacts
 * under turns/<k>/tool_calls/<n>/ and then one tool_call record appended to the
 * trajectory (GENERATE to GENERATE, node "t<k>.c<n>", parent the turn's node "t<k>";
 * rundir.h), before the agent hears the answer. The calls of a turn are counted from
 * those records, so a resumed turn's rerun agent has only the calls left to it.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "fsm/fsm_int.h"
#include "base/banned.h"

static int
write_file(const char *path, const char *text, mode_t mode)
{
	int	rc = kb_write_atomic(path, text, strlen(text));

	if (rc == 0 && chmod(path, mode) == -1)
		rc = -kb_errno_to_err(errno);
	if (rc < 0)
		log_warnx("cannot write '%s': %s", path, kb_strerror(rc));
	return rc;
}

/* This kforge, whose `tool` command the agent calls and is confined by. */
static int
self_exe(char *out, size_t n)
{
	ssize_t	len = readlink("/proc/self/exe", out, n - 1);

	if (len <= 0)
		return -KB_ESYS;
	out[len] = '\0';
	return 0;
}

/* The tool the agent calls: this kforge's `tool` command, in a script on its PATH. */
static char *
tool_script(void)
{
	char	 self[PATH_MAX], quoted[2 * PATH_MAX];
	size_t	 j = 0, n;

	if (self_exe(self, sizeof(self)) < 0)
		return NULL;
	n = strlen(self);
	for (size_t i = 0; i < n && j + 5 < sizeof(quoted); i++) {
		if (self[i] == '\'') {	/* ' -> '\'' */
			memcpy(quoted + j, "'\\''", 4);
			j += 4;
		} else {
			quoted[j++] = self[i];
		}
	}
	quoted[j] = '\0';
	return kb_asprintf("#!/bin/sh\n# kforge-tool eval KERNEL: evaluate a kernel for this "
			   "turn (llm.provider agent)\nexec '%s' tool \"$@\"\n", quoted);
}

int
fsm_agent_workspace(struct task_run *t, const char *prompt, char *ws, size_t n)
{
	const char	*run = t->ctx->run_dir, *id = t->task->id;
	char		 path[PATH_MAX], *script;
	int		 rc;

	if (t->tool_calls_turn != t->turn) {
		t->tool_calls = 0;
		t->tool_calls_turn = t->turn;
	}
	if ((rc = fsm_turn_path(t, t->turn, RD_AGENT_DIR, ws, n)) < 0 ||
	    (rc = rd_agent_file(path, sizeof(path), run, id, t->turn, RD_AGENT_BIN_DIR)) < 0 ||
	    (rc = kb_mkdir_p(path, 0755)) < 0)
		return rc;
	if ((rc = rd_agent_file(path, sizeof(path), run, id, t->turn, RD_AGENT_PROBLEM_PY)) < 0 ||
	    (rc = write_file(path, t->problem_src, 0644)) < 0 ||
	    (rc = rd_agent_file(path, sizeof(path), run, id, t->turn, RD_AGENT_PROMPT_MD)) < 0 ||
	    (rc = write_file(path, prompt, 0644)) < 0)
		return rc;
	/* A rerun (resume) starts without the answer of the run it replaces. */
	if ((rc = rd_agent_file(path, sizeof(path), run, id, t->turn, RD_AGENT_FINAL_PY)) < 0)
		return rc;
	if (unlink(path) == -1 && errno != ENOENT)
		return -kb_errno_to_err(errno);
	/* The agent starts in it with its bin/ on PATH: both absolute. */
	if (realpath(ws, path) == NULL)
		return -kb_errno_to_err(errno);
	snprintf(ws, n, "%s", path);
	if ((script = tool_script()) == NULL)
		return -KB_ESYS;
	if ((rc = rd_agent_file(path, sizeof(path), run, id, t->turn, RD_AGENT_TOOL)) == 0)
		rc = write_file(path, script, 0755);
	free(script);
	return rc;
}

/* An artifact of a tool call: written atomically, its path (from the task's folder) and
 * hash put in files under key. */
static int
put_call_file(struct task_run *t, int call, enum rd_entry e, const char *key, const char *text,
	      json_t *files)
{
	char	path[PATH_MAX], sha[65];
	int	rc;

	if ((rc = rd_tool_call_file(path, sizeof(path), t->ctx->run_dir, t->task->id, t->turn,
				    call, e)) < 0)
		return rc;
	if ((rc = kb_write_atomic(path, text, strlen(text))) < 0) {
		log_warnx("cannot write '%s': %s", path, kb_strerror(rc));
		return rc;
	}
	kb_sha256_hex(text, strlen(text), sha);
	json_object_set_new(files, key, json_pack("{s:s, s:s}", "path", path + strlen(t->dir) + 1,
						  "sha256", sha));
	return 0;
}

static json_t *
refusal(const char *why, int calls_left)
{
	return json_pack("{s:s, s:i}", "error", why, "calls_left", calls_left);
}

/* The call's answer to the agent: what the model of a plain turn would hear about this
 * kernel (the E feedback), with the verdict and speedup. */
static json_t *
answer_of(const struct task_run *t, int call, const struct fsm_tool_outcome *o, double speedup)
{
	struct fb_outcome	 fo;
	json_t			*a;
	char			*text;

	fb_outcome_of_judged(o->result, o->executed, &fo);
	fo.log = o->log;
	text = fb_exec_feedback(t->cfg, &fo);
	a = json_pack("{s:i, s:i, s:s, s:s, s:b, s:b, s:s?}", "call", call, "calls_left",
		      (int)t->cfg->llm.agent_max_tool_calls - t->tool_calls, "status",
		      fb_status_name(o->status), "verdict", fb_verdict_name(o->verdict),
		      "compiled", o->compiled, "correct", o->verdict == FB_VERDICT_CORRECT,
		      "feedback", text);
	if (a != NULL && speedup > 0)
		json_object_set_new(a, "speedup", json_real(speedup));
	free(text);
	return a;
}

json_t *
fsm_agent_tool_eval(void *arg, const char *kernel, size_t n)
{
	struct task_run		*t = arg;
	struct fsm_tool_outcome	 o;
	json_t			*saved = t->data, *rec = NULL, *files, *answer = NULL, *v;
	char			 dir[PATH_MAX], kpath[PATH_MAX], *text;
	double			 speedup = -1;
	int			 call, rc;

	if (t->tool_calls >= t->cfg->llm.agent_max_tool_calls)
		return refusal("no tool call is left to this turn (llm.agent.max_tool_calls)", 0);
	if (n > FSM_MAX_SOURCE || strlen(kernel) != n)
		return refusal("the kernel is too large or holds a NUL byte; not evaluated",
			       (int)(t->cfg->llm.agent_max_tool_calls - t->tool_calls));
	call = t->tool_calls + 1;
	if (rd_tool_call_dir(dir, sizeof(dir), t->ctx->run_dir, t->task->id, t->turn, call) < 0 ||
	    kb_mkdir_p(dir, 0755) < 0 ||
	    rd_tool_call_file(kpath, sizeof(kpath), t->ctx->run_dir, t->task->id, t->turn, call,
			      RD_TOOL_KERNEL_PY) < 0)
		return NULL;
	files = json_object();
	if (put_call_file(t, call, RD_TOOL_KERNEL_PY, "kernel", kernel, files) < 0) {
		json_decref(files);
		return NULL;
	}
	/* The steps' leases and health probes are the call's: its record gets them. */
	rec = json_pack("{s:i, s:i}", RD_NODE_PARENT, t->turn, RD_NODE_CALL, call);
	t->data = rec;
	rc = fsm_tool_evaluate(t, kpath, kernel, &o);
	t->data = saved;
	if (rc < 0) {	/* stopped, or the disk is full: nothing recorded, no answer */
		json_decref(rec);
		json_decref(files);
		return NULL;
	}
	if (json_is_number(v = json_object_get(o.result, "speedup")) &&
	    o.verdict == FB_VERDICT_CORRECT)
		speedup = json_number_value(v);
	text = json_dumps(o.result, JSON_INDENT(2) | JSON_SORT_KEYS);
	rc = text != NULL ? put_call_file(t, call, RD_TOOL_RESULT_JSON, "result", text, files) :
	     -KB_ENOMEM;
	free(text);
	if (rc == 0 && o.log != NULL)
		rc = put_call_file(t, call, RD_TOOL_LOG, "log", o.log, files);
	if (rc == 0) {
		json_object_set_new(rec, "artifacts", files);
		files = NULL;
		json_object_set_new(rec, "status", json_string(fb_status_name(o.status)));
		json_object_set_new(rec, "verdict", json_string(fb_verdict_name(o.verdict)));
		json_object_set_new(rec, "compiled", json_boolean(o.compiled));
		json_object_set_new(rec, "correct", json_boolean(o.verdict == FB_VERDICT_CORRECT));
		if (speedup > 0)
			json_object_set_new(rec, "speedup", json_real(speedup));
		rc = kb_tlog_append(t->log, t->task->id, t->turn, fsm_state_name(FSM_ST_GENERATE),
				    fsm_event_name(FSM_EV_tool_call),
				    fsm_state_name(FSM_ST_GENERATE), rec);
	}
	if (rc == 0) {
		t->tool_calls = call;
		log_debug("turn %d: tool call %d: %s", t->turn, call, fb_verdict_name(o.verdict));
		answer = answer_of(t, call, &o, speedup);
	}
	json_decref(files);
	json_decref(rec);
	json_decref(o.result);
	free(o.log);
	return answer;
}

void
fsm_agent_started(pid_t pid, void *arg)
{
	(void)arg;
	fb_strays_spare(pid);
}

json_t *
fsm_agent_summary(const struct task_run *t, const struct llm_reply *reply)
{
	return json_pack("{s:s?, s:b, s:i}", "end", reply->agent_end, "final", reply->agent_final,
			 "tool_calls", t->tool_calls_turn == t->turn ? t->tool_calls : 0);
}

int
fsm_agent_reply(struct task_run *t, const struct llm_reply *reply)
{
	int	rc = 0;

	if (reply->agent_stdout != NULL)
		rc = fsm_put_artifact(t, "agent_stdout", RD_AGENT_STDOUT, reply->agent_stdout,
				      strlen(reply->agent_stdout));
	if (rc == 0 && reply->agent_stderr != NULL)
		rc = fsm_put_artifact(t, "agent_stderr", RD_AGENT_STDERR, reply->agent_stderr,
				      strlen(reply->agent_stderr));
	json_object_set_new(t->data, "agent", fsm_agent_summary(t, reply));
	return rc;
}

void
fsm_agent_reused(struct task_run *t)
{
	static const struct {
		const char	*key;
		enum rd_entry	 file;
	} transcript[] = { { "agent_stdout", RD_AGENT_STDOUT }, { "agent_stderr", RD_AGENT_STDERR } };
	char	 path[PATH_MAX], sha[65], *text;
	size_t	 len;
	json_t	*meta;

	/* What the interrupted worker kept before its record: named again by this one. */
	for (size_t i = 0; i < sizeof(transcript) / sizeof(transcript[0]); i++) {
		if (fsm_turn_path(t, t->turn, transcript[i].file, path, sizeof(path)) < 0 ||
		    kb_read_file(path, (size_t)t->cfg->llm.max_response_bytes + 1, &text, &len) < 0)
			continue;
		kb_sha256_hex(text, len, sha);
		free(text);
		json_object_set_new(t->data, transcript[i].key, json_pack("{s:s, s:s}", "path",
				    path + strlen(t->dir) + 1, "sha256", sha));
	}
	if (fsm_turn_path(t, t->turn, RD_RESPONSE_JSON, path, sizeof(path)) == 0 &&
	    (meta = json_load_file(path, 0, NULL)) != NULL) {
		if (json_is_object(json_object_get(meta, "agent")))
			json_object_set(t->data, "agent", json_object_get(meta, "agent"));
		json_decref(meta);
	}
}

int
fsm_agent_confine(struct task_run *t, const char *ws, char *argv[FSM_AGENT_CONFINE_ARGV])
{
	char	self[PATH_MAX];

	memset(argv, 0, FSM_AGENT_CONFINE_ARGV * sizeof(*argv));
	if (self_exe(self, sizeof(self)) < 0)
		return -KB_ESYS;
	if ((argv[3] = fb_agent_sandbox_spec(t->ctx->run_dir, ws)) == NULL)
		return -KB_ENOMEM;
	argv[0] = kb_strdup(self);
	argv[1] = kb_strdup("tool");
	argv[2] = kb_strdup("confine");
	argv[4] = kb_strdup("--");
	return 0;
}

void
fsm_agent_confine_clear(char *argv[FSM_AGENT_CONFINE_ARGV])
{
	for (int i = 0; i < FSM_AGENT_CONFINE_ARGV; i++) {
		free(argv[i]);
		argv[i] = NULL;
	}
}
