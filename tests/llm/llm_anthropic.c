/*
 * llm_anthropic.c: the anthropic provider against the real mock server
 * (tests/llm/mock_llm_server.py speaking the Messages API on /v1/messages over HTTP on
 * 127.0.0.1): the request's path, headers and body; text and thinking blocks and usage;
 * 429 and 529 with retry-after, 500, malformed replies, auth and request errors, the
 * response cap. Each case tags its prompt "case=NAME;" as llm_openai.c does.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/base.h"
#include "llm/llm.h"
#include "llm_testutil.h"

static const char script[] =
"{\"rules\": ["
" {\"match\": \"case=normal;\", \"replies\": [{\"content\": \"Here:\\n```python\\nprint(1)\\n```\\n\","
"   \"reasoning\": \"let me think\", \"usage\": {\"input_tokens\": 11, \"output_tokens\": 22,"
"   \"cache_read_input_tokens\": 5}}]},"
" {\"match\": \"case=blocks;\", \"replies\": [{\"blocks\": [{\"type\": \"thinking\", \"thinking\": \"a\"},"
"   {\"type\": \"text\", \"text\": \"one \"}, {\"type\": \"redacted_thinking\", \"data\": \"zz\"},"
"   {\"type\": \"thinking\", \"thinking\": \"b\"}, {\"type\": \"text\", \"text\": \"two\"}]}]},"
" {\"match\": \"case=429;\", \"replies\": [{\"status\": 429, \"headers\": {\"retry-after\": \"1\"}},"
"   {\"content\": \"after 429\"}]},"
" {\"match\": \"case=529;\", \"replies\": [{\"status\": 529, \"headers\": {\"retry-after\": \"1\"},"
"   \"content\": \"Overloaded\"}, {\"content\": \"after 529\"}]},"
" {\"match\": \"case=500;\", \"replies\": [{\"status\": 500}, {\"content\": \"after 500\"}]},"
" {\"match\": \"case=malformed;\", \"replies\": [{\"raw_body\": \"not json\"},"
"   {\"raw_body\": \"{\\\"type\\\": \\\"message\\\"}\"}, {\"blocks\": []},"
"   {\"content\": \"after junk\"}]},"
" {\"match\": \"case=exhaust;\", \"replies\": [{\"status\": 529, \"content\": \"Overloaded\"}]},"
" {\"match\": \"case=401;\", \"replies\": [{\"status\": 401, \"content\": \"invalid x-api-key\"}]},"
" {\"match\": \"case=403;\", \"replies\": [{\"status\": 403}]},"
" {\"match\": \"case=400;\", \"replies\": [{\"status\": 400, \"content\": \"max_tokens: too large\"}]},"
" {\"match\": \"case=toobig;\", \"replies\": [{\"repeat_bytes\": 300000}]},"
" {\"match\": \"case=max_tokens;\", \"replies\": [{\"no_content\": true, \"reasoning\": \"long thoughts\","
"   \"stop_reason\": \"max_tokens\"}]}"
"]}";

static struct tu_mock	mock;
static struct kb_task	task;
static char		base_url[128];	/* the API root: http://127.0.0.1:PORT */

static void
anthropic_config(struct kb_config *cfg)
{
	tu_config(cfg, "anthropic", base_url);
	tu_set(&cfg->llm.model, "claude-mock");
}

static int
ask(const struct kb_config *cfg, const char *prompt, struct llm_reply *r, char *err,
    size_t errlen)
{
	struct llm_client	*c = NULL;
	struct llm_request	 req = { .prompt = prompt, .task = &task, .turn = 1 };
	int			 rc;

	if ((rc = llm_client_create(&c, cfg, err, errlen)) < 0) {
		fprintf(stderr, "llm_client_create: %s\n", err);
		exit(1);
	}
	rc = llm_complete(c, &req, r, err, errlen);
	llm_client_destroy(c);
	return rc;
}

static const char *
header(json_t *rec, const char *name)
{
	const char	*k;
	json_t		*v;

	/* HTTP header names are case-insensitive */
	json_object_foreach(json_object_get(rec, "headers"), k, v)
		if (strcasecmp(k, name) == 0)
			return json_string_value(v);
	return NULL;
}

static void
test_normal(void)
{
	struct kb_config	 cfg;
	struct llm_reply	 r;
	char			 err[512];
	json_t			*reqs, *rec, *body, *msg;
	const char		*prompt = "case=normal; write a kernel";
	const char		*h;

	anthropic_config(&cfg);
	tu_set(&cfg.llm.api_key_env, "KB_TEST_ANTHROPIC_KEY");
	setenv("KB_TEST_ANTHROPIC_KEY", "sk-ant-test-42", 1);
	CHECK_RC(ask(&cfg, prompt, &r, err, sizeof(err)), 0);
	CHECK(r.content && strcmp(r.content, "Here:\n```python\nprint(1)\n```\n") == 0);
	CHECK(r.reasoning && strcmp(r.reasoning, "let me think") == 0);
	CHECK(r.prompt_tokens == 16 && r.completion_tokens == 22);	/* cache reads count */
	CHECK(r.finish_reason && strcmp(r.finish_reason, "end_turn") == 0);
	CHECK(r.http_status == 200 && r.attempts == 1);
	CHECK_HAS(r.raw, "msg_mock_");
	llm_reply_clear(&r);

	reqs = tu_mock_requests(&mock, "case=normal;");
	CHECK(json_array_size(reqs) == 1);
	rec = json_array_get(reqs, 0);
	body = json_object_get(rec, "body");
	CHECK(strcmp(json_string_value(json_object_get(rec, "path")), "/v1/messages") == 0);
	CHECK((h = header(rec, "x-api-key")) != NULL && strcmp(h, "sk-ant-test-42") == 0);
	CHECK((h = header(rec, "anthropic-version")) != NULL && strcmp(h, "2023-06-01") == 0);
	CHECK((h = header(rec, "content-type")) != NULL && strcmp(h, "application/json") == 0);
	CHECK(header(rec, "authorization") == NULL);
	CHECK(strcmp(json_string_value(json_object_get(body, "model")), "claude-mock") == 0);
	CHECK(json_integer_value(json_object_get(body, "max_tokens")) == 1024);
	CHECK(json_is_number(json_object_get(body, "temperature")));
	CHECK(json_array_size(json_object_get(body, "messages")) == 1);
	msg = json_array_get(json_object_get(body, "messages"), 0);
	CHECK(strcmp(json_string_value(json_object_get(msg, "role")), "user") == 0);
	CHECK(strcmp(json_string_value(json_object_get(msg, "content")), prompt) == 0);
	CHECK(json_object_get(body, "system") == NULL);
	json_decref(reqs);
	unsetenv("KB_TEST_ANTHROPIC_KEY");
	kb_config_clear(&cfg);

	/* anthropic_version is configurable; a trailing slash on the root is tolerated */
	anthropic_config(&cfg);
	tu_set(&cfg.llm.anthropic_version, "2099-01-01");
	snprintf(err, sizeof(err), "%s/", base_url);
	tu_set(&cfg.llm.base_url, err);
	CHECK_RC(ask(&cfg, "case=blocks; v", &r, err, sizeof(err)), 0);
	/* text blocks in order are the answer, thinking blocks the reasoning */
	CHECK(r.content && strcmp(r.content, "one two") == 0);
	CHECK(r.reasoning && strcmp(r.reasoning, "ab") == 0);
	llm_reply_clear(&r);
	reqs = tu_mock_requests(&mock, "case=blocks;");
	rec = json_array_get(reqs, 0);
	CHECK((h = header(rec, "anthropic-version")) != NULL && strcmp(h, "2099-01-01") == 0);
	CHECK(strcmp(json_string_value(json_object_get(rec, "path")), "/v1/messages") == 0);
	json_decref(reqs);
	kb_config_clear(&cfg);
}

/* min_wait_s: the server's retry-after, which the client must have slept (the backoff
 * alone is milliseconds here), a lower bound that load can only lengthen. */
static void
test_retried(const char *tag, const char *want, int attempts, double min_wait_s)
{
	struct kb_config	 cfg;
	struct llm_reply	 r;
	char			 err[512], prompt[64];

	anthropic_config(&cfg);
	snprintf(prompt, sizeof(prompt), "%s x", tag);
	CHECK_RC(ask(&cfg, prompt, &r, err, sizeof(err)), 0);
	CHECK(r.content && strcmp(r.content, want) == 0);
	CHECK(r.attempts == attempts);
	CHECK(r.latency_s >= min_wait_s);
	CHECK(tu_mock_count(&mock, tag) == (size_t)attempts);
	llm_reply_clear(&r);
	kb_config_clear(&cfg);
}

static void
test_failures(void)
{
	struct kb_config	 cfg;
	struct llm_reply	 r;
	char			 err[512];

	anthropic_config(&cfg);
	cfg.llm.retries = 2;
	CHECK_RC(ask(&cfg, "case=exhaust;", &r, err, sizeof(err)), -KB_ELLM_HTTP);
	CHECK(r.attempts == 3 && r.http_status == 529);
	CHECK_HAS(err, "HTTP 529: Overloaded");
	CHECK_HAS(err, "after 3 attempts");
	llm_reply_clear(&r);

	CHECK_RC(ask(&cfg, "case=401;", &r, err, sizeof(err)), -KB_ELLM_AUTH);
	CHECK(r.attempts == 1 && r.http_status == 401 && r.content == NULL);
	CHECK_HAS(err, "invalid x-api-key");
	llm_reply_clear(&r);
	CHECK_RC(ask(&cfg, "case=403;", &r, err, sizeof(err)), -KB_ELLM_AUTH);
	CHECK(r.attempts == 1);
	llm_reply_clear(&r);

	CHECK_RC(ask(&cfg, "case=400;", &r, err, sizeof(err)), -KB_ELLM_REQUEST);
	CHECK(r.attempts == 1 && r.http_status == 400);
	CHECK_HAS(err, "max_tokens: too large");
	CHECK(tu_mock_count(&mock, "case=400;") == 1);
	llm_reply_clear(&r);

	cfg.llm.max_response_bytes = 100000;
	CHECK_RC(ask(&cfg, "case=toobig;", &r, err, sizeof(err)), -KB_ETOOBIG);
	CHECK(r.attempts == 1 && r.content == NULL);
	CHECK_HAS(err, "max_response_bytes");
	llm_reply_clear(&r);
	kb_config_clear(&cfg);
}

/* The budget went to thinking: empty answer accepted, as openai's finish_reason length. */
static void
test_max_tokens(void)
{
	struct kb_config	 cfg;
	struct llm_reply	 r;
	char			 err[512];

	anthropic_config(&cfg);
	CHECK_RC(ask(&cfg, "case=max_tokens;", &r, err, sizeof(err)), 0);
	CHECK(r.content && r.content[0] == '\0');
	CHECK(r.reasoning && strcmp(r.reasoning, "long thoughts") == 0);
	CHECK(r.finish_reason && strcmp(r.finish_reason, "max_tokens") == 0);
	CHECK(r.attempts == 1);
	llm_reply_clear(&r);
	kb_config_clear(&cfg);
}

static void
test_config(void)
{
	struct kb_config	 cfg;
	struct llm_client	*c = NULL;
	char			 err[512];

	/* The default root needs no base_url; creating the client sends nothing. */
	anthropic_config(&cfg);
	tu_set(&cfg.llm.base_url, "");
	CHECK_RC(llm_check_config(&cfg, err, sizeof(err)), 0);
	CHECK_RC(llm_client_create(&c, &cfg, err, sizeof(err)), 0);
	llm_client_destroy(c);
	tu_set(&cfg.llm.model, "");
	CHECK_RC(llm_check_config(&cfg, err, sizeof(err)), -KB_ECONFIG);
	CHECK_HAS(err, "llm.model");
	tu_set(&cfg.llm.model, "m");
	cfg.llm.temperature = 1.5;	/* the config allows 2; Anthropic's API 1 */
	CHECK_RC(llm_check_config(&cfg, err, sizeof(err)), -KB_ECONFIG);
	CHECK_HAS(err, "llm.temperature");
	cfg.llm.temperature = 1.0;
	CHECK_RC(llm_check_config(&cfg, err, sizeof(err)), 0);
	tu_set(&cfg.llm.api_key_env, "KB_TEST_ANTHROPIC_UNSET");
	unsetenv("KB_TEST_ANTHROPIC_UNSET");
	CHECK_RC(llm_check_config(&cfg, err, sizeof(err)), -KB_ECONFIG);
	CHECK_HAS(err, "KB_TEST_ANTHROPIC_UNSET");
	kb_config_clear(&cfg);
}

int
main(void)
{
	int	rc;

	setenv("KFORGE_LLM_BACKOFF_SCALE", "0.01", 1);
	tu_task(&task);
	if ((rc = tu_mock_start(&mock, script)) != 0)
		return rc;
	snprintf(base_url, sizeof(base_url), "http://127.0.0.1:%d", mock.port);
	test_normal();
	test_retried("case=429;", "after 429", 2, 1.0);
	test_retried("case=529;", "after 529", 2, 1.0);
	test_retried("case=500;", "after 500", 2, 0);
	test_retried("case=malformed;", "after junk", 4, 0);
	test_failures();
	test_max_tokens();
	test_config();
	tu_mock_stop(&mock);
	if (failures > 0) {
		fprintf(stderr, "%d check(s) failed\n", failures);
		return 1;
	}
	printf("llm_anthropic: all checks passed\n");
	return 0;
}
