/*
 * llm_openai.c: the openai provider against the real mock server
 * (tests/llm/mock_llm_server.py over HTTP on 127.0.0.1). Each case sends a prompt with its
 * own tag "case=NAME;", which selects the script rule and finds its requests in the
 * mock's log. KFORGE_LLM_BACKOFF_SCALE=0.01 keeps backoffs at milliseconds.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "llm/llm.h"
#include "llm_testutil.h"

static const char script[] =
"{\"rules\": ["
" {\"match\": \"case=normal;\", \"replies\": [{\"content\": \"Here:\\n```python\\nprint(1)\\n```\\n\","
"   \"reasoning\": \"thinking it over\", \"usage\": {\"prompt_tokens\": 11, \"completion_tokens\": 22}}]},"
" {\"match\": \"case=auth-header;\", \"replies\": [{\"content\": \"ok\"}]},"
" {\"match\": \"case=429;\", \"replies\": [{\"status\": 429, \"headers\": {\"Retry-After\": \"1\"}},"
"   {\"content\": \"after 429\"}]},"
" {\"match\": \"case=500;\", \"replies\": [{\"status\": 500}, {\"status\": 502}, {\"content\": \"after 5xx\"}]},"
" {\"match\": \"case=malformed;\", \"replies\": [{\"raw_body\": \"not json\"},"
"   {\"no_content\": true}, {\"raw_body\": \"{\\\"choices\\\": []}\"}, {\"content\": \"after junk\"}]},"
" {\"match\": \"case=exhaust;\", \"replies\": [{\"status\": 503, \"content\": \"overloaded\"}]},"
" {\"match\": \"case=401;\", \"replies\": [{\"status\": 401, \"content\": \"invalid api key\"}]},"
" {\"match\": \"case=403;\", \"replies\": [{\"status\": 403}]},"
" {\"match\": \"case=400;\", \"replies\": [{\"status\": 400, \"content\": \"max_tokens too large\"}]},"
" {\"match\": \"case=toobig;\", \"replies\": [{\"repeat_bytes\": 300000}]},"
" {\"match\": \"case=stall;\", \"replies\": [{\"stall_s\": 600}]},"
" {\"match\": \"case=slow;\", \"replies\": [{\"delay_s\": 600}]},"
" {\"match\": \"case=silent;\", \"replies\": [{\"delay_s\": 600}]},"
" {\"match\": \"case=stop-backoff;\", \"replies\": [{\"status\": 503, \"headers\": {\"Retry-After\": \"600\"}}]},"
" {\"match\": \"case=length;\", \"replies\": [{\"no_content\": true, \"finish_reason\": \"length\","
"   \"reasoning\": \"long thoughts\"}]},"
" {\"match\": \"case=reasoning-model;\", \"replies\": [{\"content\": \"done\", \"usage\": {\"prompt_tokens\": 5,"
"   \"completion_tokens\": 90, \"completion_tokens_details\": {\"reasoning_tokens\": 70}}}]},"
" {\"match\": \"case=think;\", \"replies\": [{\"content\": \"<think>hmm</think>\\n\\nthe answer\"}]}"
"]}";

/* How long the server holds the stall, slow, silent and stop-backoff cases: far longer
 * than any limit under test, so an upper bound below it shows which side ended the wait
 * without racing the machine's speed. */
#define MOCK_HOLD_S	600

static struct tu_mock	mock;
static struct kb_task	task;

static struct llm_client *
client_for(const struct kb_config *cfg)
{
	struct llm_client	*c = NULL;
	char			 err[512];
	int			 rc;

	if ((rc = llm_client_create(&c, cfg, err, sizeof(err))) < 0) {
		fprintf(stderr, "llm_client_create: %s\n", err);
		exit(1);
	}
	return c;
}

/* One request through a fresh client on cfg; returns the rc. */
static int
ask(const struct kb_config *cfg, const char *prompt, struct llm_reply *r, char *err,
    size_t errlen, bool (*stop)(void *), void *stop_arg)
{
	struct llm_client	*c = client_for(cfg);
	struct llm_request	 req = { .prompt = prompt, .task = &task, .turn = 1,
				    .should_stop = stop, .stop_arg = stop_arg };
	int			 rc;

	rc = llm_complete(c, &req, r, err, errlen);
	llm_client_destroy(c);
	return rc;
}

static void
test_normal(void)
{
	struct kb_config	 cfg;
	struct llm_reply	 r;
	char			 err[512], *url = kb_asprintf("%s/", mock.url);
	json_t			*reqs, *rec, *body, *msg;
	const char		*prompt = "case=normal; write a kernel {with braces}";

	tu_config(&cfg, "openai", url);	/* trailing slash tolerated */
	CHECK_RC(ask(&cfg, prompt, &r, err, sizeof(err), NULL, NULL), 0);
	CHECK(r.content && strcmp(r.content, "Here:\n```python\nprint(1)\n```\n") == 0);
	CHECK(r.reasoning && strcmp(r.reasoning, "thinking it over") == 0);
	CHECK(r.prompt_tokens == 11 && r.completion_tokens == 22);
	CHECK(r.finish_reason && strcmp(r.finish_reason, "stop") == 0);
	CHECK(r.http_status == 200 && r.attempts == 1);
	CHECK(r.latency_s > 0 && r.latency_s < 5);
	CHECK_HAS(r.raw, "chatcmpl-mock");
	llm_reply_clear(&r);

	reqs = tu_mock_requests(&mock, "case=normal;");
	CHECK(json_array_size(reqs) == 1);
	rec = json_array_get(reqs, 0);
	body = json_object_get(rec, "body");
	CHECK(strcmp(json_string_value(json_object_get(rec, "path")), "/v1/chat/completions") == 0);
	CHECK(json_is_string(json_object_get(body, "model")) &&
	    strcmp(json_string_value(json_object_get(body, "model")), "mock-model") == 0);
	CHECK(json_is_number(json_object_get(body, "temperature")) &&
	    json_number_value(json_object_get(body, "temperature")) == 0.0);
	CHECK(json_integer_value(json_object_get(body, "max_tokens")) == 1024);
	CHECK(json_array_size(json_object_get(body, "messages")) == 1);
	msg = json_array_get(json_object_get(body, "messages"), 0);
	CHECK(strcmp(json_string_value(json_object_get(msg, "role")), "user") == 0);
	CHECK(strcmp(json_string_value(json_object_get(msg, "content")), prompt) == 0);
	CHECK(json_object_get(json_object_get(rec, "headers"), "Authorization") == NULL);
	/* reasoning-model fields only when set */
	CHECK(json_object_get(body, "max_completion_tokens") == NULL);
	CHECK(json_object_get(body, "reasoning_effort") == NULL);
	json_decref(reqs);
	kb_config_clear(&cfg);
	free(url);
}

/* llm.max_completion_tokens replaces max_tokens; llm.reasoning_effort is sent; the
 * reasoning tokens the server reports are kept. */
static void
test_reasoning_model(void)
{
	struct kb_config	 cfg;
	struct llm_reply	 r;
	char			 err[512];
	json_t			*reqs, *body;

	tu_config(&cfg, "openai", mock.url);
	cfg.llm.max_completion_tokens = 4000;
	tu_set(&cfg.llm.reasoning_effort, "high");
	CHECK_RC(ask(&cfg, "case=reasoning-model;", &r, err, sizeof(err), NULL, NULL), 0);
	CHECK(r.prompt_tokens == 5 && r.completion_tokens == 90 && r.reasoning_tokens == 70);
	llm_reply_clear(&r);
	reqs = tu_mock_requests(&mock, "case=reasoning-model;");
	body = json_object_get(json_array_get(reqs, 0), "body");
	CHECK(json_integer_value(json_object_get(body, "max_completion_tokens")) == 4000);
	CHECK(json_object_get(body, "max_tokens") == NULL);
	CHECK(json_is_string(json_object_get(body, "reasoning_effort")) &&
	    strcmp(json_string_value(json_object_get(body, "reasoning_effort")), "high") == 0);
	CHECK(json_object_get(body, "temperature") == NULL);
	json_decref(reqs);
	kb_config_clear(&cfg);

	/* a server that reports no reasoning tokens leaves the count at 0 */
	tu_config(&cfg, "openai", mock.url);
	CHECK_RC(ask(&cfg, "case=unscripted; plain usage", &r, err, sizeof(err), NULL, NULL), 0);
	CHECK(r.reasoning_tokens == 0);
	llm_reply_clear(&r);
	kb_config_clear(&cfg);
}

static void
test_auth_header(void)
{
	struct kb_config	 cfg;
	struct llm_client	*c = NULL;
	struct llm_reply	 r;
	char			 err[512];
	json_t			*reqs, *auth;

	tu_config(&cfg, "openai", mock.url);
	tu_set(&cfg.llm.api_key_env, "KB_TEST_LLM_KEY");
	setenv("KB_TEST_LLM_KEY", "sk-test-1234", 1);
	CHECK_RC(ask(&cfg, "case=auth-header;", &r, err, sizeof(err), NULL, NULL), 0);
	llm_reply_clear(&r);
	reqs = tu_mock_requests(&mock, "case=auth-header;");
	auth = json_object_get(json_object_get(json_array_get(reqs, 0), "headers"), "Authorization");
	CHECK(json_is_string(auth) && strcmp(json_string_value(auth), "Bearer sk-test-1234") == 0);
	json_decref(reqs);

	CHECK_RC(llm_check_config(&cfg, err, sizeof(err)), 0);

	/* The check before a run says what creating the client would. */
	unsetenv("KB_TEST_LLM_KEY");
	err[0] = '\0';
	CHECK_RC(llm_check_config(&cfg, err, sizeof(err)), -KB_ECONFIG);
	CHECK_HAS(err, "llm.api_key_env: environment variable KB_TEST_LLM_KEY is not set");
	CHECK(strchr(err, '\n') == NULL);
	err[0] = '\0';
	CHECK_RC(llm_client_create(&c, &cfg, err, sizeof(err)), -KB_ECONFIG);
	CHECK(c == NULL);
	CHECK_HAS(err, "KB_TEST_LLM_KEY is not set");
	setenv("KB_TEST_LLM_KEY", "", 1);
	CHECK_RC(llm_check_config(&cfg, err, sizeof(err)), -KB_ECONFIG);
	CHECK_HAS(err, "KB_TEST_LLM_KEY is empty");
	setenv("KB_TEST_LLM_KEY", "sk-\r\nX-Injected: 1", 1);
	CHECK_RC(llm_check_config(&cfg, err, sizeof(err)), -KB_ECONFIG);
	CHECK_HAS(err, "the key in KB_TEST_LLM_KEY contains a control character");
	CHECK_RC(llm_client_create(&c, &cfg, err, sizeof(err)), -KB_ECONFIG);
	CHECK(c == NULL);
	unsetenv("KB_TEST_LLM_KEY");
	/* the backoff knob is checked with the rest */
	tu_set(&cfg.llm.api_key_env, "");
	setenv("KFORGE_LLM_BACKOFF_SCALE", "fast", 1);
	CHECK_RC(llm_check_config(&cfg, err, sizeof(err)), -KB_ECONFIG);
	CHECK_HAS(err, "KFORGE_LLM_BACKOFF_SCALE");
	setenv("KFORGE_LLM_BACKOFF_SCALE", "0.01", 1);
	CHECK_RC(llm_check_config(&cfg, err, sizeof(err)), 0);
	kb_config_clear(&cfg);
}

static void
test_retry_after(void)
{
	struct kb_config	cfg;
	struct llm_reply	r;
	char			err[512];
	double			t0 = tu_now(), dt;

	tu_config(&cfg, "openai", mock.url);
	CHECK_RC(ask(&cfg, "case=429;", &r, err, sizeof(err), NULL, NULL), 0);
	dt = tu_now() - t0;
	CHECK(r.attempts == 2 && r.http_status == 200);
	CHECK(r.content && strcmp(r.content, "after 429") == 0);
	CHECK(dt >= 0.95);	/* Retry-After: 1 is not scaled down */
	CHECK(dt < 5);
	CHECK(tu_mock_count(&mock, "case=429;") == 2);
	llm_reply_clear(&r);
	kb_config_clear(&cfg);
}

static void
test_5xx_then_ok(void)
{
	struct kb_config	cfg;
	struct llm_reply	r;
	char			err[512];

	tu_config(&cfg, "openai", mock.url);
	CHECK_RC(ask(&cfg, "case=500;", &r, err, sizeof(err), NULL, NULL), 0);
	CHECK(r.attempts == 3);
	CHECK(r.content && strcmp(r.content, "after 5xx") == 0);
	CHECK(tu_mock_count(&mock, "case=500;") == 3);
	llm_reply_clear(&r);
	kb_config_clear(&cfg);
}

static void
test_malformed_then_ok(void)
{
	struct kb_config	cfg;
	struct llm_reply	r;
	char			err[512];

	tu_config(&cfg, "openai", mock.url);
	CHECK_RC(ask(&cfg, "case=malformed;", &r, err, sizeof(err), NULL, NULL), 0);
	CHECK(r.attempts == 4);
	CHECK(r.content && strcmp(r.content, "after junk") == 0);
	llm_reply_clear(&r);
	kb_config_clear(&cfg);
}

static void
test_retries_exhausted(void)
{
	struct kb_config	cfg;
	struct llm_reply	r;
	char			err[512];

	tu_config(&cfg, "openai", mock.url);
	cfg.llm.retries = 2;
	CHECK_RC(ask(&cfg, "case=exhaust;", &r, err, sizeof(err), NULL, NULL), -KB_ELLM_HTTP);
	CHECK(r.attempts == 3 && r.http_status == 503);
	CHECK(r.content == NULL && r.raw == NULL);
	CHECK_HAS(err, "HTTP 503");
	CHECK_HAS(err, "overloaded");
	CHECK_HAS(err, "after 3 attempts");
	CHECK(tu_mock_count(&mock, "case=exhaust;") == 3);
	llm_reply_clear(&r);
	kb_config_clear(&cfg);
}

static void
test_permanent_4xx(void)
{
	struct kb_config	cfg;
	struct llm_reply	r;
	char			err[512];

	tu_config(&cfg, "openai", mock.url);
	CHECK_RC(ask(&cfg, "case=401;", &r, err, sizeof(err), NULL, NULL), -KB_ELLM_AUTH);
	CHECK(r.attempts == 1 && r.http_status == 401);
	CHECK_HAS(err, "invalid api key");
	CHECK(tu_mock_count(&mock, "case=401;") == 1);

	CHECK_RC(ask(&cfg, "case=403;", &r, err, sizeof(err), NULL, NULL), -KB_ELLM_AUTH);
	CHECK(tu_mock_count(&mock, "case=403;") == 1);

	CHECK_RC(ask(&cfg, "case=400;", &r, err, sizeof(err), NULL, NULL), -KB_ELLM_REQUEST);
	CHECK(r.attempts == 1 && r.http_status == 400);
	CHECK_HAS(err, "max_tokens too large");
	CHECK(tu_mock_count(&mock, "case=400;") == 1);
	kb_config_clear(&cfg);
}

static void
test_too_big(void)
{
	struct kb_config	cfg;
	struct llm_reply	r;
	char			err[512];

	tu_config(&cfg, "openai", mock.url);
	cfg.llm.max_response_bytes = 65536;
	CHECK_RC(ask(&cfg, "case=toobig;", &r, err, sizeof(err), NULL, NULL), -KB_ETOOBIG);
	CHECK_HAS(err, "max_response_bytes");
	CHECK(r.attempts == 1);
	CHECK(tu_mock_count(&mock, "case=toobig;") == 1);
	kb_config_clear(&cfg);
}

static void
test_timeouts(void)
{
	struct kb_config	cfg;
	struct llm_reply	r;
	char			err[512];
	double			t0 = tu_now(), dt;

	/* A server that says nothing: llm.timeout_s per attempt, then retried. */
	tu_config(&cfg, "openai", mock.url);
	cfg.llm.timeout_s = 1;
	cfg.llm.retries = 1;
	CHECK_RC(ask(&cfg, "case=silent;", &r, err, sizeof(err), NULL, NULL), -KB_ETIMEDOUT);
	dt = tu_now() - t0;
	CHECK_HAS(err, "timed out after 1 s");
	CHECK(r.attempts == 2);
	CHECK(dt >= 1.9 && dt < MOCK_HOLD_S);
	CHECK(tu_mock_count_reaches(&mock, "case=silent;", 2) == 2);

	/* Headers came, then silence: abandoned after half the timeout, not all of it. */
	t0 = tu_now();
	cfg.llm.timeout_s = 4;
	cfg.llm.retries = 0;
	CHECK_RC(ask(&cfg, "case=stall;", &r, err, sizeof(err), NULL, NULL), -KB_ETIMEDOUT);
	dt = tu_now() - t0;
	CHECK_HAS(err, "stalled");	/* the stall rule, not llm.timeout_s, ended it */
	CHECK(dt >= 1.9 && dt < MOCK_HOLD_S);
	kb_config_clear(&cfg);
}

static bool
stop_after(void *arg)
{
	return tu_now() > *(double *)arg;
}

static void
test_should_stop(void)
{
	struct kb_config	cfg;
	struct llm_reply	r;
	char			err[512];
	double			t0 = tu_now(), when = t0 + 0.3;

	tu_config(&cfg, "openai", mock.url);
	CHECK_RC(ask(&cfg, "case=slow;", &r, err, sizeof(err), stop_after, &when), -KB_ESTOPPED);
	CHECK(tu_now() >= when && tu_now() - t0 < MOCK_HOLD_S);

	/* ...and during the sleep before a retry. */
	t0 = tu_now();
	when = t0 + 0.5;
	CHECK_RC(ask(&cfg, "case=stop-backoff;", &r, err, sizeof(err), stop_after, &when),
	    -KB_ESTOPPED);
	CHECK(tu_now() >= when && tu_now() - t0 < MOCK_HOLD_S);
	CHECK(r.attempts == 1);
	CHECK(tu_mock_count(&mock, "case=stop-backoff;") == 1);
	kb_config_clear(&cfg);
}

static void
test_connection_refused(void)
{
	struct kb_config	cfg;
	struct llm_reply	r;
	char			err[512];

	tu_config(&cfg, "openai", "http://127.0.0.1:1/v1");
	cfg.llm.retries = 1;
	CHECK_RC(ask(&cfg, "case=refused;", &r, err, sizeof(err), NULL, NULL), -KB_ELLM_HTTP);
	CHECK(r.attempts == 2);
	CHECK_HAS(err, "connection error");
	kb_config_clear(&cfg);
}

static void
test_reasoning_shapes(void)
{
	struct kb_config	cfg;
	struct llm_reply	r;
	char			err[512];

	tu_config(&cfg, "openai", mock.url);
	/* Token budget spent on reasoning: accepted, empty content, not retried. */
	CHECK_RC(ask(&cfg, "case=length;", &r, err, sizeof(err), NULL, NULL), 0);
	CHECK(r.attempts == 1 && r.content && r.content[0] == '\0');
	CHECK(r.reasoning && strcmp(r.reasoning, "long thoughts") == 0);
	CHECK(r.finish_reason && strcmp(r.finish_reason, "length") == 0);
	llm_reply_clear(&r);

	CHECK_RC(ask(&cfg, "case=think;", &r, err, sizeof(err), NULL, NULL), 0);
	CHECK(r.content && strcmp(r.content, "the answer") == 0);
	CHECK(r.reasoning && strcmp(r.reasoning, "hmm") == 0);
	llm_reply_clear(&r);
	kb_config_clear(&cfg);
}

static void
test_invalid_utf8(void)
{
	struct kb_config	 cfg;
	struct llm_reply	 r;
	char			 err[512];
	json_t			*reqs, *content;

	/* A stray byte, a truncated sequence, an overlong '/', a surrogate; then valid. */
	tu_config(&cfg, "openai", mock.url);
	CHECK_RC(ask(&cfg, "case=utf8; \xff|\xe2\x82|\xc0\xaf|\xed\xa0\x80|\xc3\xa9\xe2\x82\xac",
	    &r, err, sizeof(err), NULL, NULL), 0);
	llm_reply_clear(&r);
	reqs = tu_mock_requests(&mock, "case=utf8;");
	content = json_object_get(json_array_get(json_object_get(json_object_get(
	    json_array_get(reqs, 0), "body"), "messages"), 0), "content");
	CHECK(json_is_string(content) && strcmp(json_string_value(content),
	    "case=utf8; \xef\xbf\xbd|\xef\xbf\xbd\xef\xbf\xbd|\xef\xbf\xbd\xef\xbf\xbd|"
	    "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd|\xc3\xa9\xe2\x82\xac") == 0);
	json_decref(reqs);
	kb_config_clear(&cfg);
}

static void
test_bad_config(void)
{
	struct kb_config	 cfg;
	struct llm_client	*c = NULL;
	char			 err[512];

	tu_config(&cfg, "openai", "");
	CHECK_RC(llm_client_create(&c, &cfg, err, sizeof(err)), -KB_ECONFIG);
	CHECK_HAS(err, "llm.base_url");
	CHECK_RC(llm_check_config(&cfg, err, sizeof(err)), -KB_ECONFIG);
	CHECK_HAS(err, "llm.base_url");
	tu_set(&cfg.llm.provider, "carrier-pigeon");
	CHECK_RC(llm_client_create(&c, &cfg, err, sizeof(err)), -KB_ECONFIG);
	CHECK_HAS(err, "carrier-pigeon");
	CHECK_RC(llm_check_config(&cfg, err, sizeof(err)), -KB_ECONFIG);
	CHECK_HAS(err, "carrier-pigeon");
	tu_set(&cfg.llm.provider, "replay");
	tu_set(&cfg.llm.replay_dir, "/nonexistent/replies");
	CHECK_RC(llm_check_config(&cfg, err, sizeof(err)), -KB_ECONFIG);
	CHECK_HAS(err, "llm.replay_dir: /nonexistent/replies is not a directory");
	tu_set(&cfg.llm.replay_dir, "/");
	CHECK_RC(llm_check_config(&cfg, err, sizeof(err)), 0);
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
	test_normal();
	test_reasoning_model();
	test_auth_header();
	test_retry_after();
	test_5xx_then_ok();
	test_malformed_then_ok();
	test_retries_exhausted();
	test_permanent_4xx();
	test_too_big();
	test_timeouts();
	test_should_stop();
	test_connection_refused();
	test_reasoning_shapes();
	test_invalid_utf8();
	test_bad_config();
	tu_mock_stop(&mock);
	if (failures > 0) {
		fprintf(stderr, "%d check(s) failed\n", failures);
		return 1;
	}
	printf("llm_openai: all checks passed\n");
	return 0;
}
