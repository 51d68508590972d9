/*
 * anthropic.c: the Anthropic Messages API's wire format; openai.c's transport carries
 * it (POST {base_url}/v1/messages with x-api-key and anthropic-version headers, the
 * same retries, caps and stop polling).
 *
 * Request: {model, max_tokens (the API requires it), messages: [{role: user, content:
 * prompt}], temperature}. Reply: content blocks; the text blocks, in order, are the
 * answer, the thinking blocks the reasoning (kept apart, as the OpenAI provider keeps
 * reasoning_content); other blocks (redacted_thinking, tool_use) are ignored.
 * stop_reason becomes finish_reason. A reply without text whose stop_reason is
 * max_tokens (the budget went to thinking) or refusal is accepted with empty content,
 * as openai.c accepts finish_reason "length": asking again would end the same way, and
 * the state machine treats it as a turn without code. usage.input_tokens plus the
 * cache_creation and cache_read input tokens (all of them are the prompt) are
 * prompt_tokens; usage.output_tokens (thinking included) completion_tokens.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "base/base.h"
#include "llm/llm_int.h"
#include "base/banned.h"

char *
llm_anthropic_body(const struct llm_client *c, const char *clean_prompt)
{
	json_t	*root;
	char	*s;

	root = json_pack("{s:s, s:I, s:[{s:s, s:s}], s:f}", "model", c->model,
	    "max_tokens", (json_int_t)(c->max_tokens > 0 ? c->max_tokens : 8192),
	    "messages", "role", "user", "content", clean_prompt,
	    "temperature", c->temperature);
	if (root == NULL)
		return NULL;
	s = json_dumps(root, JSON_COMPACT);
	json_decref(root);
	return s;
}

/* Appends the string member key of block to b; -KB_ETOOBIG/-KB_ENOMEM from kb_buf. */
static int
append_member(struct kb_buf *b, json_t *block, const char *key)
{
	json_t	*v = json_object_get(block, key);

	if (!json_is_string(v))
		return 0;
	return kb_buf_append(b, json_string_value(v), json_string_length(v));
}

static long
usage_tokens(json_t *usage, const char *key)
{
	json_t	*v = json_object_get(usage, key);

	return json_is_integer(v) && json_integer_value(v) > 0 ? (long)json_integer_value(v) : 0;
}

int
llm_anthropic_parse(const struct kb_buf *body, struct llm_reply *out, char *msg, size_t msglen)
{
	struct kb_buf	 text = KB_BUF_INIT(0), thinking = KB_BUF_INIT(0);
	json_error_t	 je;
	json_t		*root, *content, *block, *v, *usage;
	const char	*type;
	bool		 any_text = false;
	size_t		 i;
	int		 rc = -KB_ELLM_REPLY;

	root = json_loadb(body->p ? body->p : "", body->len, 0, &je);
	if (!json_is_object(root)) {
		snprintf(msg, msglen, "reply is not a JSON object (%s, line %d)",
		    root == NULL ? je.text : "wrong type", je.line);
		goto out;
	}
	type = json_string_value(json_object_get(root, "type"));
	if (type != NULL && strcmp(type, "error") == 0) {
		v = json_object_get(json_object_get(root, "error"), "message");
		snprintf(msg, msglen, "error in a 200 reply: %.240s",
		    json_is_string(v) ? json_string_value(v) : "(no message)");
		goto out;
	}
	content = json_object_get(root, "content");
	if (!json_is_array(content)) {
		snprintf(msg, msglen, "reply has no content blocks");
		goto out;
	}
	if (json_is_string(v = json_object_get(root, "stop_reason")))
		out->finish_reason = kb_strdup(json_string_value(v));
	json_array_foreach(content, i, block) {
		type = json_string_value(json_object_get(block, "type"));
		if (type == NULL)
			continue;
		if (strcmp(type, "text") == 0) {
			any_text = true;
			if (append_member(&text, block, "text") < 0)
				goto out_mem;
		} else if (strcmp(type, "thinking") == 0) {
			if (append_member(&thinking, block, "thinking") < 0)
				goto out_mem;
		}
	}
	if (!any_text && (out->finish_reason == NULL ||
	    (strcmp(out->finish_reason, "max_tokens") != 0 &&
	     strcmp(out->finish_reason, "refusal") != 0))) {
		snprintf(msg, msglen, "reply has no text block (stop_reason %s)",
		    out->finish_reason ? out->finish_reason : "missing");
		goto out;
	}
	out->content = kb_buf_steal(&text);
	if (thinking.len > 0)
		out->reasoning = kb_buf_steal(&thinking);
	usage = json_object_get(root, "usage");
	out->prompt_tokens = usage_tokens(usage, "input_tokens") +
	    usage_tokens(usage, "cache_creation_input_tokens") +
	    usage_tokens(usage, "cache_read_input_tokens");
	out->completion_tokens = usage_tokens(usage, "output_tokens");
	rc = 0;
	goto out;
out_mem:
	snprintf(msg, msglen, "reply text exceeds its cap");
	rc = -KB_ETOOBIG;
out:
	if (rc < 0) {
		free(out->finish_reason);
		out->finish_reason = NULL;
	}
	kb_buf_clear(&text);
	kb_buf_clear(&thinking);
	json_decref(root);
	return rc;
}
