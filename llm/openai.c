/*
 * openai.c: the HTTP transport of the two HTTP providers, and the OpenAI-compatible
 * chat-completions wire format (OpenAI, DeepSeek, vLLM, SGLang, Together, OpenRouter,
 * llama.cpp, Ollama): one non-streaming POST of {model, messages: [{role: user,
 * content: prompt}], temperature, max_tokens} per attempt, on one curl handle reused
 * so the connection is kept. Reasoning models: llm.max_completion_tokens is sent
 * instead of max_tokens when set, llm.reasoning_effort only when set (and then no
 * temperature, which OpenAI's reasoning models refuse), and
 * usage.completion_tokens_details.reasoning_tokens is kept. The anthropic provider
 * (anthropic.c) differs only in its endpoint, headers, body and reply; its 529
 * (overloaded) is a 5xx and retried like the rest.
 *
 * Retries: 429, 408, 5xx, timeouts, connection errors and replies that cannot be
 * understood (not JSON, no choices, no content) are retried llm.retries times, after
 * the server's Retry-After (seconds or HTTP date, capped at 300 s) when it sends one,
 * else after an exponential backoff with jitter (base 1 s, doubling, cap 60 s; the
 * sleep is drawn from [d/2, d]). 401/403 end the call at once with -KB_ELLM_AUTH,
 * other 4xx with -KB_ELLM_REQUEST, a reply over llm.max_response_bytes with
 * -KB_ETOOBIG. Transfers and sleeps poll req->should_stop (-KB_ESTOPPED).
 *
 * Stalls: a non-streaming server is silent while it generates, so curl's low-speed
 * limit would kill long generations. The low-speed rule here starts once the response
 * has begun (status line received): no byte for half of llm.timeout_s (at most
 * LLM_STALL_S) aborts the attempt as a timeout. Before that, llm.timeout_s
 * (CURLOPT_TIMEOUT) bounds the wait and TCP keepalive notices peers that vanished.
 *
 * A reply with no content but finish_reason "length" (the token budget went to
 * reasoning) is accepted with empty content: the same request would fail the same
 * way, and the state machine treats it as a turn without code.
 *
 * Environment:
 *   KFORGE_LLM_BACKOFF_SCALE   non-negative float multiplying every backoff sleep
 *                              (not Retry-After, which the server chose); tests set
 *                              0.01. Read when the client is created. Default 1.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <jansson.h>

#include "base/base.h"
#include "llm/llm_int.h"
#include "base/banned.h"

#define LLM_BACKOFF_BASE_MS	1000.0
#define LLM_BACKOFF_CAP_MS	60000.0
#define LLM_RETRY_AFTER_CAP_S	300L
#define LLM_STALL_S		120L
#define LLM_CONNECT_TIMEOUT_S	30L
#define LLM_SNIPPET		240
#define LLM_ANTHROPIC_DEFAULT_URL "https://api.anthropic.com"

/*
 * What an HTTP provider's wire format decides, a row each (http_wires, below): its name
 * in messages, the API root when llm.base_url is unset (NULL: required), the path under
 * it, the key's header, the request body and the reply's reading. Anthropic's version
 * header is its own key (llm.anthropic_version).
 */
struct http_wire {
	enum llm_provider	 provider;
	const char		*who, *default_base, *path, *auth_fmt;
	char			*(*body)(const struct llm_client *c, const char *clean_prompt);
	int			 (*parse)(const struct kb_buf *body, struct llm_reply *out, char *msg,
					  size_t msglen);
};
static const struct http_wire	*wire_of(const struct llm_client *c);

/* One attempt's transfer state, seen by the curl callbacks. */
struct xfer {
	struct kb_buf		 body;
	const struct llm_request *req;
	int64_t			 stall_ms;
	int64_t			 last_rx_ms;
	bool			 responding;	/* a status line arrived */
	bool			 too_big, stalled, stopped;
	long			 retry_after_s;	/* -1: none */
};

/* KFORGE_LLM_BACKOFF_SCALE (tests shorten the backoff with it), 1 when unset. */
int
llm_backoff_scale_env(double *out, char *err, size_t errlen)
{
	const char	*scale = getenv("KFORGE_LLM_BACKOFF_SCALE");
	char		*end;

	*out = 1.0;
	if (scale == NULL || scale[0] == '\0')
		return 0;
	errno = 0;
	*out = strtod(scale, &end);
	if (errno != 0 || *end != '\0' || !(*out >= 0)) {
		snprintf(err, errlen, "KFORGE_LLM_BACKOFF_SCALE: expected a non-negative number, "
			 "got '%s'", scale);
		return -KB_ECONFIG;
	}
	return 0;
}

/* The key in envname (when named): set, not empty, no control character. */
int
llm_check_key_env(const char *envname, char *err, size_t errlen)
{
	const char	*key;

	if (envname == NULL || envname[0] == '\0')
		return 0;
	key = getenv(envname);
	if (key == NULL || key[0] == '\0') {
		snprintf(err, errlen, "llm.api_key_env: environment variable %s is %s: export it "
			 "with the endpoint's API key (or set llm.api_key_env: '' for an endpoint "
			 "that needs none)", envname, key == NULL ? "not set" : "empty");
		return -KB_ECONFIG;
	}
	for (const char *p = key; *p != '\0'; p++) {
		if ((unsigned char)*p < 0x20 || *p == 0x7f) {
			snprintf(err, errlen, "llm.api_key_env: the key in %s contains a control "
				 "character", envname);
			return -KB_ECONFIG;
		}
	}
	return 0;
}

int
llm_http_check(const struct kb_config *cfg, char *err, size_t errlen)
{
	const char	*provider = cfg->llm.provider;
	bool		 anthropic = strcmp(provider, "anthropic") == 0;
	double		 scale;

	if (!anthropic && (cfg->llm.base_url == NULL || cfg->llm.base_url[0] == '\0')) {
		snprintf(err, errlen, "llm.base_url: required with provider openai");
		return -KB_ECONFIG;
	}
	if (cfg->llm.model == NULL || cfg->llm.model[0] == '\0') {
		snprintf(err, errlen, "llm.model: required with provider %s", provider);
		return -KB_ECONFIG;
	}
	if (anthropic && (cfg->llm.anthropic_version == NULL ||
			  cfg->llm.anthropic_version[0] == '\0' ||
			  strpbrk(cfg->llm.anthropic_version, "\r\n") != NULL)) {
		snprintf(err, errlen, "llm.anthropic_version: required with provider anthropic, "
			 "one line");
		return -KB_ECONFIG;
	}
	if (anthropic && cfg->llm.temperature > 1.0) {
		snprintf(err, errlen, "llm.temperature: %g is above 1, the most the Anthropic "
			 "Messages API accepts", cfg->llm.temperature);
		return -KB_ECONFIG;
	}
	if (llm_backoff_scale_env(&scale, err, errlen) < 0)
		return -KB_ECONFIG;
	return llm_check_key_env(cfg->llm.api_key_env, err, errlen);
}

/* cfg has passed llm_http_check. */
int
llm_http_init(struct llm_client *c, const struct kb_config *cfg, char *err, size_t errlen)
{
	const struct http_wire	*wire = wire_of(c);
	const char		*base = cfg->llm.base_url, *envname = cfg->llm.api_key_env;
	size_t			 n;

	if (base == NULL || base[0] == '\0')
		base = wire->default_base;
	n = strlen(base);
	while (n > 0 && base[n - 1] == '/')
		n--;
	c->endpoint = kb_asprintf("%.*s%s", (int)n, base, wire->path);
	if (envname != NULL && envname[0] != '\0')
		c->auth_header = kb_asprintf(wire->auth_fmt, getenv(envname));
	if (c->provider == LLM_PROVIDER_ANTHROPIC)
		c->version_header = kb_asprintf("anthropic-version: %s",
		    cfg->llm.anthropic_version);
	c->model = kb_strdup(cfg->llm.model);
	c->temperature = cfg->llm.temperature;
	c->max_tokens = cfg->llm.max_tokens;
	c->max_completion_tokens = cfg->llm.max_completion_tokens;
	if (cfg->llm.reasoning_effort != NULL && cfg->llm.reasoning_effort[0] != '\0' &&
	    strcmp(cfg->llm.reasoning_effort, "default") != 0)
		c->reasoning_effort = kb_strdup(cfg->llm.reasoning_effort);
	c->timeout_s = cfg->llm.timeout_s > 0 ? cfg->llm.timeout_s : 600;
	c->retries = cfg->llm.retries > 0 ? cfg->llm.retries : 0;
	if (llm_backoff_scale_env(&c->backoff_scale, err, errlen) < 0)
		return -KB_ECONFIG;
	c->rng = (unsigned int)getpid() ^ (unsigned int)kb_now_ms();
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		snprintf(err, errlen, "llm: curl_global_init failed");
		return -KB_ESYS;
	}
	c->curl_inited = true;
	if ((c->curl = curl_easy_init()) == NULL) {
		snprintf(err, errlen, "llm: curl_easy_init failed");
		return -KB_ENOMEM;
	}
	return 0;
}

void
llm_http_fini(struct llm_client *c)
{
	if (c->curl != NULL)
		curl_easy_cleanup(c->curl);
	c->curl = NULL;
	if (c->curl_inited)
		curl_global_cleanup();
	c->curl_inited = false;
	free(c->model);
	free(c->endpoint);
	if (c->auth_header != NULL) {
		explicit_bzero(c->auth_header, strlen(c->auth_header));
		free(c->auth_header);
	}
	free(c->version_header);
	free(c->reasoning_effort);
	c->model = c->endpoint = c->auth_header = c->version_header = c->reasoning_effort = NULL;
}

/* ------------------------------------------------------------ callbacks */

static size_t
on_body(char *data, size_t size, size_t nmemb, void *arg)
{
	struct xfer	*x = arg;
	size_t		 n = size * nmemb;

	x->last_rx_ms = kb_mono_ms();
	if (kb_buf_append(&x->body, data, n) < 0) {
		x->too_big = true;
		return 0;	/* curl aborts with CURLE_WRITE_ERROR */
	}
	return n;
}

static long
parse_retry_after(const char *v, size_t n)
{
	char	tmp[128];
	char	*end;
	long	s;
	time_t	when;

	while (n > 0 && (v[n - 1] == '\r' || v[n - 1] == '\n' || v[n - 1] == ' '))
		n--;
	while (n > 0 && (*v == ' ' || *v == '\t')) {
		v++;
		n--;
	}
	if (n == 0 || n >= sizeof(tmp))
		return -1;
	memcpy(tmp, v, n);
	tmp[n] = '\0';
	errno = 0;
	s = strtol(tmp, &end, 10);
	if (end != tmp && *end == '\0')
		return errno != 0 || s < 0 ? -1 : s;
	if ((when = curl_getdate(tmp, NULL)) == -1)
		return -1;
	s = (long)(when - time(NULL));
	return s < 0 ? 0 : s;
}

static size_t
on_header(char *data, size_t size, size_t nmemb, void *arg)
{
	struct xfer	*x = arg;
	size_t		 n = size * nmemb;
	static const char ra[] = "retry-after:";

	x->last_rx_ms = kb_mono_ms();
	if (n >= 5 && strncmp(data, "HTTP/", 5) == 0) {
		/* A new response (after a 100 Continue, say) starts over. */
		x->responding = true;
		x->retry_after_s = -1;
	} else if (n > sizeof(ra) - 1 && strncasecmp(data, ra, sizeof(ra) - 1) == 0) {
		x->retry_after_s = parse_retry_after(data + sizeof(ra) - 1, n - (sizeof(ra) - 1));
	}
	return n;
}

static int
on_progress(void *arg, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
	    curl_off_t ulnow)
{
	struct xfer	*x = arg;

	(void)dltotal, (void)dlnow, (void)ultotal, (void)ulnow;
	if (x->req->should_stop != NULL && x->req->should_stop(x->req->stop_arg)) {
		x->stopped = true;
		return 1;
	}
	if (x->responding && kb_mono_ms() - x->last_rx_ms > x->stall_ms) {
		x->stalled = true;
		return 1;
	}
	return 0;
}

/* ------------------------------------------------------------- replies */

/* One line, at most LLM_SNIPPET bytes, of what an error body says: error.message when
 * the body is the usual JSON error, else the start of the body. */
static void
error_snippet(const struct kb_buf *body, char *out, size_t outlen)
{
	json_t		*root, *e, *m;
	const char	*s = body->p ? body->p : "";
	size_t		 n = body->len, i, j;

	root = json_loadb(s, n, 0, NULL);
	e = json_is_object(root) ? json_object_get(root, "error") : NULL;
	m = json_is_object(e) ? json_object_get(e, "message") : e;
	if (json_is_string(m)) {
		s = json_string_value(m);
		n = json_string_length(m);
	} else if (json_is_object(root) && json_is_string(json_object_get(root, "message"))) {
		m = json_object_get(root, "message");
		s = json_string_value(m);
		n = json_string_length(m);
	}
	for (i = j = 0; i < n && j + 1 < outlen && j < LLM_SNIPPET; i++) {
		unsigned char ch = (unsigned char)s[i];

		out[j++] = ch < 0x20 || ch == 0x7f ? ' ' : (char)ch;
	}
	if (outlen > 0)
		out[j < outlen ? j : outlen - 1] = '\0';
	if (j == 0)
		snprintf(out, outlen, "(empty body)");
	json_decref(root);
}

static char *
message_text(json_t *v)
{
	struct kb_buf	b = KB_BUF_INIT(0);
	size_t		i;
	json_t		*part, *t;

	if (json_is_string(v))
		return kb_strdup(json_string_value(v));
	if (!json_is_array(v))
		return NULL;
	/* Content given as parts: [{"type": "text", "text": "..."}] */
	json_array_foreach(v, i, part) {
		t = json_is_object(part) ? json_object_get(part, "text") : NULL;
		if (json_is_string(t) &&
		    kb_buf_append(&b, json_string_value(t), json_string_length(t)) < 0) {
			kb_buf_clear(&b);
			return NULL;
		}
	}
	return kb_buf_steal(&b);
}

/* Models served without a reasoning parser put their thinking inline. */
static void
split_think(struct llm_reply *out)
{
	char	*p = out->content, *close;

	while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')
		p++;
	if (strncmp(p, "<think>", 7) != 0 || (close = strstr(p + 7, "</think>")) == NULL)
		return;
	out->reasoning = kb_asprintf("%.*s", (int)(close - (p + 7)), p + 7);
	p = close + 8;
	while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')
		p++;
	memmove(out->content, p, strlen(p) + 1);
}

static int
parse_completion(const struct kb_buf *body, struct llm_reply *out, char *msg, size_t msglen)
{
	json_error_t	 je;
	json_t		*root, *choice, *message, *v, *usage;
	int		 rc = -KB_ELLM_REPLY;

	root = json_loadb(body->p ? body->p : "", body->len, 0, &je);
	if (!json_is_object(root)) {
		snprintf(msg, msglen, "reply is not a JSON object (%s, line %d)",
		    root == NULL ? je.text : "wrong type", je.line);
		goto out;
	}
	choice = json_array_get(json_object_get(root, "choices"), 0);
	if (!json_is_object(choice)) {
		if ((v = json_object_get(root, "error")) != NULL) {
			char snip[LLM_SNIPPET + 1];

			error_snippet(body, snip, sizeof(snip));
			snprintf(msg, msglen, "error in a 200 reply: %s", snip);
		} else {
			snprintf(msg, msglen, "reply has no choices");
		}
		goto out;
	}
	message = json_object_get(choice, "message");
	if ((v = json_object_get(choice, "finish_reason")) != NULL && json_is_string(v))
		out->finish_reason = kb_strdup(json_string_value(v));
	out->content = message_text(json_object_get(message, "content"));
	if ((v = json_object_get(message, "reasoning_content")) == NULL || !json_is_string(v))
		v = json_object_get(message, "reasoning");
	if (json_is_string(v) && json_string_length(v) > 0)
		out->reasoning = kb_strdup(json_string_value(v));
	if (out->content == NULL) {
		if (out->finish_reason == NULL || strcmp(out->finish_reason, "length") != 0) {
			snprintf(msg, msglen, "reply has no message content (finish_reason %s)",
			    out->finish_reason ? out->finish_reason : "missing");
			goto out;
		}
		out->content = kb_strdup("");
	}
	if (out->reasoning == NULL)
		split_think(out);
	usage = json_object_get(root, "usage");
	if (json_is_integer(v = json_object_get(usage, "prompt_tokens")))
		out->prompt_tokens = (long)json_integer_value(v);
	if (json_is_integer(v = json_object_get(usage, "completion_tokens")))
		out->completion_tokens = (long)json_integer_value(v);
	v = json_object_get(json_object_get(usage, "completion_tokens_details"),
	    "reasoning_tokens");
	if (json_is_integer(v))
		out->reasoning_tokens = (long)json_integer_value(v);
	rc = 0;
out:
	if (rc < 0) {
		free(out->content);
		free(out->reasoning);
		free(out->finish_reason);
		out->content = out->reasoning = out->finish_reason = NULL;
	}
	json_decref(root);
	return rc;
}

/* ------------------------------------------------------------- attempts */

static int
classify_curl(CURLcode cc, long timeout_s, char *msg, size_t msglen)
{
	switch (cc) {
	case CURLE_OPERATION_TIMEDOUT:
		snprintf(msg, msglen, "request timed out after %ld s (llm.timeout_s)", timeout_s);
		return -KB_ETIMEDOUT;
	case CURLE_URL_MALFORMAT:
	case CURLE_UNSUPPORTED_PROTOCOL:
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_CACERT_BADFILE:
	case CURLE_SSL_CERTPROBLEM:
		snprintf(msg, msglen, "cannot reach the endpoint: %s", curl_easy_strerror(cc));
		return -KB_ELLM_REQUEST;
	default:
		snprintf(msg, msglen, "connection error: %s", curl_easy_strerror(cc));
		return -KB_ELLM_HTTP;
	}
}

static int
openai_attempt(struct llm_client *c, const char *body, size_t bodylen,
	       struct curl_slist *headers, struct xfer *x, struct llm_reply *out,
	       char *msg, size_t msglen)
{
	CURL		*h = c->curl;
	CURLcode	 cc;
	long		 status = 0;
	char		 snip[LLM_SNIPPET + 1];

	kb_buf_clear(&x->body);
	x->body.cap = c->max_response_bytes;
	x->responding = x->too_big = x->stalled = x->stopped = false;
	x->retry_after_s = -1;
	x->last_rx_ms = kb_mono_ms();

	curl_easy_reset(h);
	curl_easy_setopt(h, CURLOPT_URL, c->endpoint);
	curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)bodylen);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
	curl_easy_setopt(h, CURLOPT_USERAGENT, "kforge");
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, x);
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, x);
	curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
	curl_easy_setopt(h, CURLOPT_XFERINFODATA, x);
	curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(h, CURLOPT_TIMEOUT, c->timeout_s);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT,
	    c->timeout_s < LLM_CONNECT_TIMEOUT_S ? c->timeout_s : LLM_CONNECT_TIMEOUT_S);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, "");
#if LIBCURL_VERSION_NUM >= 0x075500
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
#else
	curl_easy_setopt(h, CURLOPT_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif

	cc = curl_easy_perform(h);
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
	out->http_status = (int)status;
	if (x->stopped) {
		snprintf(msg, msglen, "stop requested during the request");
		return -KB_ESTOPPED;
	}
	if (x->too_big) {
		snprintf(msg, msglen, "reply exceeds llm.max_response_bytes (%zu bytes)",
		    c->max_response_bytes);
		return -KB_ETOOBIG;
	}
	if (x->stalled) {
		snprintf(msg, msglen, "reply stalled: no data for %.1f s after it began",
		    (double)x->stall_ms / 1000);
		return -KB_ETIMEDOUT;
	}
	if (cc != CURLE_OK)
		return classify_curl(cc, c->timeout_s, msg, msglen);
	if (status == 200)
		return wire_of(c)->parse(&x->body, out, msg, msglen);
	error_snippet(&x->body, snip, sizeof(snip));
	snprintf(msg, msglen, "HTTP %ld: %s", status, snip);
	if (status == 401 || status == 403)
		return -KB_ELLM_AUTH;
	if (status == 408 || status == 429 || status >= 500)
		return -KB_ELLM_HTTP;
	return -KB_ELLM_REQUEST;
}

/* Sleeps ms, polling should_stop every 100 ms; true if it fired. */
bool
llm_sleep_polling(const struct llm_request *req, int64_t ms)
{
	int64_t		end = kb_mono_ms() + ms, left;
	struct timespec	ts;

	for (;;) {
		if (req->should_stop != NULL && req->should_stop(req->stop_arg))
			return true;
		if ((left = end - kb_mono_ms()) <= 0)
			return false;
		if (left > 100)
			left = 100;
		ts.tv_sec = 0;
		ts.tv_nsec = (long)left * 1000000L;
		nanosleep(&ts, NULL);
	}
}

/* Backoff before retry number k (1-based). */
int64_t
llm_backoff_ms(struct llm_client *c, int k)
{
	double	d = LLM_BACKOFF_BASE_MS;

	for (int i = 1; i < k && d < LLM_BACKOFF_CAP_MS; i++)
		d *= 2;
	if (d > LLM_BACKOFF_CAP_MS)
		d = LLM_BACKOFF_CAP_MS;
	d = d / 2 + d / 2 * ((double)rand_r(&c->rng) / RAND_MAX);
	return (int64_t)(d * c->backoff_scale);
}

/* Length of the valid UTF-8 sequence at p (RFC 3629: no overlongs, no surrogates,
 * nothing past U+10FFFF), or 0. */
static size_t
utf8_seq_len(const unsigned char *p, size_t n)
{
	unsigned int	cp;
	size_t		len;

	if (p[0] < 0x80)
		return 1;
	if (p[0] >= 0xc2 && p[0] <= 0xdf)
		len = 2, cp = p[0] & 0x1f;
	else if (p[0] >= 0xe0 && p[0] <= 0xef)
		len = 3, cp = p[0] & 0x0f;
	else if (p[0] >= 0xf0 && p[0] <= 0xf4)
		len = 4, cp = p[0] & 0x07;
	else
		return 0;
	if (n < len)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (p[i] & 0x3f);
	}
	if ((len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
	    (len == 4 && (cp < 0x10000 || cp > 0x10ffff)))
		return 0;
	return len;
}

/* JSON needs UTF-8, but feedback text carries whatever bytes a candidate printed:
 * invalid sequences become U+FFFD rather than failing the turn. */
char *
llm_utf8_clean(const char *s)
{
	const unsigned char	*p = (const unsigned char *)s;
	size_t			 n = strlen(s), i = 0, len, o = 0;
	char			*out;

	if ((out = malloc(3 * n + 1)) == NULL)
		return NULL;
	while (i < n) {
		if ((len = utf8_seq_len(p + i, n - i)) == 0) {
			memcpy(out + o, "\xef\xbf\xbd", 3);
			o += 3;
			i++;
			continue;
		}
		memcpy(out + o, s + i, len);
		o += len;
		i += len;
	}
	out[o] = '\0';
	return out;
}

/* The chat-completions body of the OpenAI-compatible wire. */
static char *
openai_body(const struct llm_client *c, const char *clean_prompt)
{
	json_t	*root, *msg;
	char	*s;

	msg = json_pack("{s:s, s:s}", "role", "user", "content", clean_prompt);
	root = json_pack("{s:s, s:[o]}", "model", c->model, "messages", msg);
	if (root == NULL)
		return NULL;
	/* OpenAI's reasoning models refuse any temperature but their own. */
	if (c->reasoning_effort == NULL)
		json_object_set_new(root, "temperature", json_real(c->temperature));
	if (c->max_completion_tokens > 0)
		json_object_set_new(root, "max_completion_tokens",
		    json_integer(c->max_completion_tokens));
	else if (c->max_tokens > 0)
		json_object_set_new(root, "max_tokens", json_integer(c->max_tokens));
	if (c->reasoning_effort != NULL)
		json_object_set_new(root, "reasoning_effort", json_string(c->reasoning_effort));
	s = json_dumps(root, JSON_COMPACT);
	json_decref(root);
	return s;
}

static const struct http_wire http_wires[] = {
	{ LLM_PROVIDER_OPENAI, "openai", NULL, "/chat/completions", "Authorization: Bearer %s",
	  openai_body, parse_completion },
	{ LLM_PROVIDER_ANTHROPIC, "anthropic", LLM_ANTHROPIC_DEFAULT_URL, "/v1/messages",
	  "x-api-key: %s", llm_anthropic_body, llm_anthropic_parse },
};

static const struct http_wire *
wire_of(const struct llm_client *c)
{
	for (size_t i = 0; i < sizeof(http_wires) / sizeof(http_wires[0]); i++)
		if (http_wires[i].provider == c->provider)
			return &http_wires[i];
	return &http_wires[0];
}

static char *
request_body(const struct llm_client *c, const char *prompt)
{
	char	*s, *clean;

	if ((clean = llm_utf8_clean(prompt)) == NULL)
		return NULL;
	s = wire_of(c)->body(c, clean);
	free(clean);
	return s;
}

struct http_attempt {
	struct llm_client	*c;
	const char		*body;
	struct curl_slist	*headers;
	struct xfer		*x;
};

static int
http_attempt(void *arg, struct llm_reply *out, char *msg, size_t msglen, long *retry_after_s)
{
	struct http_attempt	*a = arg;
	int			 rc;

	rc = openai_attempt(a->c, a->body, strlen(a->body), a->headers, a->x, out, msg, msglen);
	*retry_after_s = a->x->retry_after_s;
	return rc;
}

int
llm_retrying(struct llm_client *c, const struct llm_request *req, const char *who,
	     bool bad_reply_retried, llm_attempt_fn attempt, void *arg,
	     struct llm_reply *out, char *err, size_t errlen)
{
	char	msg[512] = "";
	long	retry_after_s;
	int64_t	delay;
	int	rc;

	for (out->attempts = 1;; out->attempts++) {
		retry_after_s = -1;
		if ((rc = attempt(arg, out, msg, sizeof(msg), &retry_after_s)) == 0)
			return 0;
		if ((rc != -KB_ETIMEDOUT && rc != -KB_ELLM_HTTP &&
		     !(bad_reply_retried && rc == -KB_ELLM_REPLY)) || out->attempts > c->retries)
			break;
		if (retry_after_s >= 0)
			delay = 1000 * (retry_after_s < LLM_RETRY_AFTER_CAP_S ? retry_after_s :
					LLM_RETRY_AFTER_CAP_S);
		else
			delay = llm_backoff_ms(c, out->attempts);
		log_warnx("llm: %s; retry %d of %ld in %.2f s", msg, out->attempts, c->retries,
			  (double)delay / 1000);
		if (llm_sleep_polling(req, delay)) {
			rc = -KB_ESTOPPED;
			snprintf(msg, sizeof(msg), "stop requested while waiting to retry");
			break;
		}
	}
	if (rc == -KB_ESTOPPED || rc == -KB_ETOOBIG || out->attempts == 1)
		snprintf(err, errlen, "%s: %s", who, msg);
	else
		snprintf(err, errlen, "%s: %s (after %d attempts)", who, msg, out->attempts);
	return rc;
}

int
llm_http_complete(struct llm_client *c, const struct llm_request *req,
		  struct llm_reply *out, char *err, size_t errlen)
{
	const char		*who = wire_of(c)->who;
	struct xfer		 x = { .body = KB_BUF_INIT(0), .req = req };
	struct curl_slist	*headers = NULL, *h;
	struct http_attempt	 ha;
	char			*body;
	int64_t			 t0 = kb_mono_ms();
	int			 rc;

	x.stall_ms = 500 * (c->timeout_s < 2 * LLM_STALL_S ? c->timeout_s : 2 * LLM_STALL_S);
	if ((body = request_body(c, req->prompt)) == NULL) {
		snprintf(err, errlen, "%s: cannot encode the request", who);
		return -KB_ENOMEM;
	}
	const char *hdrs[] = { "Content-Type: application/json", "Accept: application/json",
	    "Expect:", c->auth_header, c->version_header };
	for (size_t i = 0; i < sizeof(hdrs) / sizeof(hdrs[0]); i++) {
		if (hdrs[i] == NULL)
			continue;
		if ((h = curl_slist_append(headers, hdrs[i])) == NULL) {
			rc = -KB_ENOMEM;
			snprintf(err, errlen, "%s: out of memory", who);
			goto out;
		}
		headers = h;
	}

	ha = (struct http_attempt){ c, body, headers, &x };
	if ((rc = llm_retrying(c, req, who, true, http_attempt, &ha, out, err, errlen)) == 0)
		out->raw = kb_buf_steal(&x.body);
out:
	out->latency_s = (double)(kb_mono_ms() - t0) / 1000;
	kb_buf_clear(&x.body);
	curl_slist_free_all(headers);
	free(body);
	return rc;
}
