/*
 * llm_command.c: the command provider with a real child program
 * (tests/data/llm_command/fake_model.py, run as [python3, script]: argv[0] found on
 * PATH): plain-text and JSON replies, the request on stdin, the environment it gets,
 * each exit status's mapping (75 retried, 77 auth, others and signals fatal), a hang
 * killed at llm.timeout_s, stdout over the response cap, stderr kept out of the answer.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "llm/llm.h"
#include "llm_testutil.h"

static struct kb_task	task;
static char		*script;

static void
command_config(struct kb_config *cfg)
{
	tu_config(cfg, "command", NULL);
	cfg->llm.command = calloc(3, sizeof(char *));
	cfg->llm.command[0] = kb_strdup("python3");
	cfg->llm.command[1] = kb_strdup(script);
	cfg->llm.retries = 0;
	cfg->llm.timeout_s = 60;
}

static int
ask(const struct kb_config *cfg, const char *prompt, struct llm_reply *r, char *err,
    size_t errlen)
{
	struct llm_client	*c = NULL;
	struct llm_request	 req = { .prompt = prompt, .task = &task, .turn = 2 };
	int			 rc;

	if ((rc = llm_client_create(&c, cfg, err, errlen)) < 0) {
		fprintf(stderr, "llm_client_create: %s\n", err);
		exit(1);
	}
	rc = llm_complete(c, &req, r, err, errlen);
	llm_client_destroy(c);
	return rc;
}

static void
test_replies(void)
{
	struct kb_config	 cfg;
	struct llm_reply	 r;
	char			 err[512];
	json_t			*echo, *req, *env;
	bool			 key_seen = false, secret_seen = false;
	size_t			 i;

	command_config(&cfg);
	CHECK_RC(ask(&cfg, "mode=plain;", &r, err, sizeof(err)), 0);
	CHECK(r.content && strcmp(r.content, "plain answer\n```python\nprint(2)\n```\n") == 0);
	CHECK(r.reasoning == NULL && r.prompt_tokens == 0 && r.attempts == 1);
	CHECK_LACKS(r.content, "loading weights");
	llm_reply_clear(&r);

	CHECK_RC(ask(&cfg, "mode=json;", &r, err, sizeof(err)), 0);
	CHECK(r.content && strcmp(r.content, "json answer") == 0);
	CHECK(r.reasoning && strcmp(r.reasoning, "because") == 0);
	CHECK(r.prompt_tokens == 120 && r.completion_tokens == 30);
	llm_reply_clear(&r);

	/* the request as documented, and a scrubbed environment with the key in it */
	tu_set(&cfg.llm.api_key_env, "KB_TEST_CMD_KEY");
	setenv("KB_TEST_CMD_KEY", "local-key", 1);
	setenv("KB_TEST_CMD_SECRET", "not for the model", 1);
	cfg.llm.max_completion_tokens = 333;
	tu_set(&cfg.llm.reasoning_effort, "low");
	CHECK_RC(ask(&cfg, "mode=echo; the prompt", &r, err, sizeof(err)), 0);
	echo = r.content ? json_loads(r.content, 0, NULL) : NULL;
	CHECK(echo != NULL);
	req = json_object_get(echo, "request");
	CHECK(strcmp(json_string_value(json_object_get(req, "model")), "mock-model") == 0);
	CHECK(json_integer_value(json_object_get(req, "max_tokens")) == 1024);
	CHECK(json_integer_value(json_object_get(req, "max_completion_tokens")) == 333);
	CHECK(json_is_string(json_object_get(req, "reasoning_effort")));
	CHECK(json_is_number(json_object_get(req, "temperature")));
	CHECK(json_integer_value(json_object_get(req, "turn")) == 2);
	CHECK(strcmp(json_string_value(json_object_get(req, "task")), "L1_19_ReLU_s0") == 0);
	CHECK(strcmp(json_string_value(json_object_get(json_array_get(
	    json_object_get(req, "messages"), 0), "content")), "mode=echo; the prompt") == 0);
	env = json_object_get(echo, "env");
	CHECK(json_is_array(env));
	for (i = 0; i < json_array_size(env); i++) {
		const char *name = json_string_value(json_array_get(env, i));

		key_seen |= strcmp(name, "KB_TEST_CMD_KEY") == 0;
		secret_seen |= strcmp(name, "KB_TEST_CMD_SECRET") == 0;
	}
	CHECK(key_seen && !secret_seen);
	json_decref(echo);
	llm_reply_clear(&r);
	kb_config_clear(&cfg);
}

static void
test_exit_statuses(void)
{
	struct kb_config	 cfg;
	struct llm_reply	 r;
	char			 err[512], *dir = tu_tmpdir("llm-command"), prompt[600];

	command_config(&cfg);
	/* 75: transient, retried; the third run answers */
	cfg.llm.retries = 3;
	snprintf(prompt, sizeof(prompt), "mode=tempfail; state=%s/count;", dir);
	CHECK_RC(ask(&cfg, prompt, &r, err, sizeof(err)), 0);
	CHECK(r.attempts == 3 && r.content && strcmp(r.content, "after tempfail") == 0);
	llm_reply_clear(&r);
	/* and when the retries are spent, a transient error */
	cfg.llm.retries = 1;
	snprintf(prompt, sizeof(prompt), "mode=tempfail; state=%s/count2;", dir);
	CHECK_RC(ask(&cfg, prompt, &r, err, sizeof(err)), -KB_ELLM_HTTP);
	CHECK(r.attempts == 2);
	CHECK_HAS(err, "status 75: model busy");
	CHECK(kb_err_transient(-KB_ELLM_HTTP));
	llm_reply_clear(&r);

	cfg.llm.retries = 3;
	CHECK_RC(ask(&cfg, "mode=noperm;", &r, err, sizeof(err)), -KB_ELLM_AUTH);
	CHECK(r.attempts == 1 && r.content == NULL);
	CHECK_HAS(err, "no credentials");
	llm_reply_clear(&r);

	CHECK_RC(ask(&cfg, "mode=fail;", &r, err, sizeof(err)), -KB_ELLM_REQUEST);
	CHECK(r.attempts == 1);
	CHECK_HAS(err, "exited with status 3: CUDA out of memory");
	llm_reply_clear(&r);

	CHECK_RC(ask(&cfg, "mode=signal;", &r, err, sizeof(err)), -KB_ELLM_REQUEST);
	CHECK(r.attempts == 1);
	CHECK_HAS(err, "signal 9");
	llm_reply_clear(&r);

	/* a hang is killed at the deadline: transient, so retried, then reported */
	cfg.llm.timeout_s = 1;
	cfg.llm.retries = 1;
	CHECK_RC(ask(&cfg, "mode=hang;", &r, err, sizeof(err)), -KB_ETIMEDOUT);
	CHECK(r.attempts == 2);
	CHECK_HAS(err, "llm.timeout_s");
	llm_reply_clear(&r);

	cfg.llm.timeout_s = 60;
	cfg.llm.max_response_bytes = 100000;
	CHECK_RC(ask(&cfg, "mode=big;", &r, err, sizeof(err)), -KB_ETOOBIG);
	CHECK(r.attempts == 1 && r.content == NULL);
	llm_reply_clear(&r);
	kb_config_clear(&cfg);
	tu_rm_rf(dir);
	free(dir);
}

static void
test_config(void)
{
	struct kb_config	 cfg;
	char			 err[512], *dir = tu_tmpdir("llm-command-cfg");

	command_config(&cfg);
	CHECK_RC(llm_check_config(&cfg, err, sizeof(err)), 0);
	free(cfg.llm.command[0]);
	cfg.llm.command[0] = kb_strdup("kforge-no-such-model-program");
	CHECK_RC(llm_check_config(&cfg, err, sizeof(err)), -KB_ECONFIG);
	CHECK_HAS(err, "not found on PATH");
	free(cfg.llm.command[0]);
	cfg.llm.command[0] = kb_asprintf("%s/not-executable", dir);
	tu_write(dir, "not-executable", "#!/bin/sh\necho hi\n");
	chmod(cfg.llm.command[0], 0644);
	CHECK_RC(llm_check_config(&cfg, err, sizeof(err)), -KB_ECONFIG);
	CHECK_HAS(err, "not an executable");
	free(cfg.llm.command[0]);
	cfg.llm.command[0] = kb_strdup(dir);	/* a directory */
	CHECK_RC(llm_check_config(&cfg, err, sizeof(err)), -KB_ECONFIG);
	CHECK_HAS(err, "not an executable");
	kb_config_clear(&cfg);
	tu_rm_rf(dir);
	free(dir);
}

int
main(void)
{
	char	path[4096];

	setenv("KFORGE_LLM_BACKOFF_SCALE", "0.01", 1);
	if (kb_which("python3", path, sizeof(path)) < 0) {
		fprintf(stderr, "no python3 on PATH\n");
		return 77;
	}
	tu_task(&task);
	script = kb_asprintf("%s/tests/data/llm_command/fake_model.py", kb_home());
	test_replies();
	test_exit_statuses();
	test_config();
	free(script);
	if (failures > 0) {
		fprintf(stderr, "%d check(s) failed\n", failures);
		return 1;
	}
	printf("llm_command: all checks passed\n");
	return 0;
}
