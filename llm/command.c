/*
 * command.c: the command provider — a user's program run once per request, so that a
 * local model or an agent plugs in without an HTTP server. llm.h states the contract
 * (request JSON on stdin, reply on stdout, exit statuses); this file keeps it.
 *
 * The program is started the one way kforge starts children (kb_spawn_run: own
 * process group, deadline SIGTERM->SIGKILL, capped output, an environment built here
 * rather than inherited) with stderr kept apart from the reply; the last line of
 * stderr is quoted in errors. Transient ends (exit 75, the deadline) are retried
 * llm.retries times with the HTTP providers' backoff.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include <jansson.h>

#include "base/base.h"
#include "llm/llm_int.h"
#include "base/banned.h"

#define CMD_EX_TEMPFAIL		75	/* sysexits.h: try again later */
#define CMD_EX_NOPERM		77	/* sysexits.h: permission denied */
#define CMD_STDERR_CAP		(64u << 10)
#define CMD_SNIPPET		200
#define CMD_PATH_MAX		4096

/* Variables the program gets from kforge's own environment, when set. */
static const char *const passed_env[] = { "PATH", "HOME", "LANG", "LC_ALL", "TMPDIR" };

static int
resolve_program(const char *name, char *out, size_t outlen, char *err, size_t errlen)
{
	struct stat	st;

	errno = 0;
	if (strchr(name, '/') != NULL)
		snprintf(out, outlen, "%s", name);
	else if (kb_which(name, out, outlen) < 0) {
		snprintf(err, errlen, "llm.command: '%s' is not found on PATH", name);
		return -KB_ECONFIG;
	}
	if (stat(out, &st) == -1 || !S_ISREG(st.st_mode) || access(out, X_OK) == -1) {
		snprintf(err, errlen, "llm.command: %s is not an executable program%s%s", out,
			 errno != 0 ? ": " : "", errno != 0 ? strerror(errno) : "");
		return -KB_ECONFIG;
	}
	return 0;
}

int
llm_command_check(const struct kb_config *cfg, char *err, size_t errlen)
{
	char	path[CMD_PATH_MAX];
	double	scale;
	int	rc;

	if (cfg->llm.command == NULL || cfg->llm.command[0] == NULL ||
	    cfg->llm.command[0][0] == '\0') {
		snprintf(err, errlen, "llm.command: required with provider command");
		return -KB_ECONFIG;
	}
	if ((rc = resolve_program(cfg->llm.command[0], path, sizeof(path), err, errlen)) < 0)
		return rc;
	if (llm_backoff_scale_env(&scale, err, errlen) < 0)
		return -KB_ECONFIG;
	return llm_check_key_env(cfg->llm.api_key_env, err, errlen);
}

int
llm_command_init(struct llm_client *c, const struct kb_config *cfg, char *err, size_t errlen)
{
	char	path[CMD_PATH_MAX];
	size_t	n = 0, e = 0;
	int	rc;

	if ((rc = resolve_program(cfg->llm.command[0], path, sizeof(path), err, errlen)) < 0)
		return rc;
	while (cfg->llm.command[n] != NULL)
		n++;
	if ((c->command = calloc(n + 1, sizeof(*c->command))) == NULL ||
	    (c->command_env = calloc(sizeof(passed_env) / sizeof(passed_env[0]) + 2,
				     sizeof(*c->command_env))) == NULL)
		return -KB_ENOMEM;
	c->command[0] = kb_strdup(path);
	for (size_t i = 1; i < n; i++)
		c->command[i] = kb_strdup(cfg->llm.command[i]);
	for (size_t i = 0; i < sizeof(passed_env) / sizeof(passed_env[0]); i++) {
		const char *v = getenv(passed_env[i]);

		if (v != NULL)
			c->command_env[e++] = kb_asprintf("%s=%s", passed_env[i], v);
	}
	if (cfg->llm.api_key_env != NULL && cfg->llm.api_key_env[0] != '\0')
		c->command_env[e++] = kb_asprintf("%s=%s", cfg->llm.api_key_env,
						  getenv(cfg->llm.api_key_env));
	c->model = kb_strdup(cfg->llm.model != NULL ? cfg->llm.model : "");
	c->temperature = cfg->llm.temperature;
	c->max_tokens = cfg->llm.max_tokens;
	c->max_completion_tokens = cfg->llm.max_completion_tokens;
	if (cfg->llm.reasoning_effort != NULL && strcmp(cfg->llm.reasoning_effort, "default") != 0)
		c->reasoning_effort = kb_strdup(cfg->llm.reasoning_effort);
	c->timeout_s = cfg->llm.timeout_s > 0 ? cfg->llm.timeout_s : 600;
	c->retries = cfg->llm.retries > 0 ? cfg->llm.retries : 0;
	c->rng = (unsigned int)getpid() ^ (unsigned int)kb_now_ms();
	return llm_backoff_scale_env(&c->backoff_scale, err, errlen);
}

void
llm_strv_free(char **v)
{
	if (v == NULL)
		return;
	for (char **p = v; *p != NULL; p++) {
		explicit_bzero(*p, strlen(*p));	/* the key may be among them */
		free(*p);
	}
	free(v);
}

void
llm_command_fini(struct llm_client *c)
{
	llm_strv_free(c->command);
	llm_strv_free(c->command_env);
	c->command = c->command_env = NULL;
	if (c->provider == LLM_PROVIDER_COMMAND || c->provider == LLM_PROVIDER_AGENT) {
		free(c->model);
		free(c->reasoning_effort);
		c->model = c->reasoning_effort = NULL;
	}
}

char *
llm_command_request_json(const struct llm_client *c, const struct llm_request *req)
{
	json_t	*root;
	char	*clean, *s;

	if ((clean = llm_utf8_clean(req->prompt)) == NULL)
		return NULL;
	root = json_pack("{s:s, s:[{s:s, s:s}], s:I, s:f, s:s?, s:i}", "model", c->model,
	    "messages", "role", "user", "content", clean, "max_tokens", (json_int_t)c->max_tokens,
	    "temperature", c->temperature, "task", req->task != NULL ? req->task->id : NULL,
	    "turn", req->turn);
	free(clean);
	if (root == NULL)
		return NULL;
	if (c->max_completion_tokens > 0)
		json_object_set_new(root, "max_completion_tokens",
		    json_integer(c->max_completion_tokens));
	if (c->reasoning_effort != NULL)
		json_object_set_new(root, "reasoning_effort", json_string(c->reasoning_effort));
	s = json_dumps(root, JSON_COMPACT);
	json_decref(root);
	return s;
}

/* The last non-empty line of the program's stderr, control characters blanked. */
static void
stderr_tail(const struct kb_buf *b, char *out, size_t outlen)
{
	const char	*s = b->p != NULL ? b->p : "";
	size_t		 end = b->len, start, j = 0;

	while (end > 0 && (s[end - 1] == '\n' || s[end - 1] == '\r' || s[end - 1] == ' '))
		end--;
	start = end;
	while (start > 0 && s[start - 1] != '\n')
		start--;
	if (end - start > CMD_SNIPPET)
		start = end - CMD_SNIPPET;
	for (size_t i = start; i < end && j + 1 < outlen; i++)
		out[j++] = (unsigned char)s[i] < 0x20 ? ' ' : s[i];
	if (outlen > 0)
		out[j] = '\0';
}

/* stdout as the reply: a JSON object with a string "content" is the JSON form, anything
 * else is the answer as plain text. */
static int
parse_stdout(const struct kb_buf *b, struct llm_reply *out)
{
	json_t	*root = NULL, *v, *usage;
	size_t	 i = 0;

	while (i < b->len && (b->p[i] == ' ' || b->p[i] == '\t' || b->p[i] == '\n' ||
			      b->p[i] == '\r'))
		i++;
	if (i < b->len && b->p[i] == '{')
		root = json_loadb(b->p, b->len, 0, NULL);
	if (!json_is_object(root) || !json_is_string(json_object_get(root, "content"))) {
		json_decref(root);
		out->content = kb_strdup(b->p != NULL ? b->p : "");
		return 0;
	}
	out->content = kb_strdup(json_string_value(json_object_get(root, "content")));
	if (json_is_string(v = json_object_get(root, "reasoning")) && json_string_length(v) > 0)
		out->reasoning = kb_strdup(json_string_value(v));
	if (json_is_string(v = json_object_get(root, "finish_reason")))
		out->finish_reason = kb_strdup(json_string_value(v));
	usage = json_object_get(root, "usage");
	if (json_is_integer(v = json_object_get(usage, "prompt_tokens")))
		out->prompt_tokens = (long)json_integer_value(v);
	if (json_is_integer(v = json_object_get(usage, "completion_tokens")))
		out->completion_tokens = (long)json_integer_value(v);
	if (json_is_integer(v = json_object_get(usage, "reasoning_tokens")))
		out->reasoning_tokens = (long)json_integer_value(v);
	json_decref(root);
	return 0;
}

/* One run of the program: 0 with out filled, or the error its end maps to. */
static int
command_attempt(struct llm_client *c, const struct llm_request *req, const char *input,
		struct llm_reply *out, char *msg, size_t msglen)
{
	struct kb_spawn_opts	 o = {
		.argv = (const char *const *)c->command,
		.envp = (const char *const *)c->command_env,
		.stdin_data = input, .stdin_len = strlen(input),
		.out_cap = c->max_response_bytes, .stderr_apart = true,
		.result_cap = CMD_STDERR_CAP,
		.timeout_ms = c->timeout_s > 86400 ? 86400 * 1000 : (int)c->timeout_s * 1000,
		.should_stop = req->should_stop, .should_stop_arg = req->stop_arg,
	};
	struct kb_spawn_result	 r;
	char			 tail[CMD_SNIPPET + 1];
	int			 rc;

	memset(&r, 0, sizeof(r));
	if ((rc = kb_spawn_run(&o, &r)) < 0) {
		snprintf(msg, msglen, "%s: %s", c->command[0], rc == -KB_ESTOPPED ?
			 "stop requested during the request" : kb_strerror(rc));
		goto out;
	}
	stderr_tail(&r.result, tail, sizeof(tail));
	if (r.end == KB_END_TIMEOUT) {
		snprintf(msg, msglen, "%s ran past llm.timeout_s (%ld s) and was killed",
			 c->command[0], c->timeout_s);
		rc = -KB_ETIMEDOUT;
	} else if (r.end == KB_END_SIGNALED) {
		snprintf(msg, msglen, "%s died of signal %d%s%s", c->command[0], r.signo,
			 tail[0] ? ": " : "", tail);
		rc = -KB_ELLM_REQUEST;
	} else if (r.exit_code != 0) {
		snprintf(msg, msglen, "%s exited with status %d%s%s", c->command[0], r.exit_code,
			 tail[0] ? ": " : "", tail);
		rc = r.exit_code == CMD_EX_TEMPFAIL ? -KB_ELLM_HTTP :
		     r.exit_code == CMD_EX_NOPERM ? -KB_ELLM_AUTH : -KB_ELLM_REQUEST;
	} else if (r.out.truncated) {
		snprintf(msg, msglen, "reply exceeds llm.max_response_bytes (%zu bytes)",
			 c->max_response_bytes);
		rc = -KB_ETOOBIG;
	} else {
		rc = parse_stdout(&r.out, out);
		if (rc == 0)
			out->raw = kb_buf_steal(&r.out);
	}
out:
	kb_spawn_result_clear(&r);
	return rc;
}

struct cmd_attempt {
	struct llm_client		*c;
	const struct llm_request	*req;
	char				*input;
};

static int
cmd_attempt(void *arg, struct llm_reply *out, char *msg, size_t msglen, long *retry_after_s)
{
	struct cmd_attempt	*a = arg;

	*retry_after_s = -1;
	return command_attempt(a->c, a->req, a->input, out, msg, msglen);
}

int
llm_command_complete(struct llm_client *c, const struct llm_request *req,
		     struct llm_reply *out, char *err, size_t errlen)
{
	struct cmd_attempt	 a = { c, req, NULL };
	int64_t			 t0 = kb_mono_ms();
	int			 rc;

	if ((a.input = llm_command_request_json(c, req)) == NULL) {
		snprintf(err, errlen, "command: cannot encode the request");
		return -KB_ENOMEM;
	}
	rc = llm_retrying(c, req, "command", false, cmd_attempt, &a, out, err, errlen);
	out->latency_s = (double)(kb_mono_ms() - t0) / 1000;
	free(a.input);
	return rc;
}
