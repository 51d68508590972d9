/* client.c: the provider-neutral face of llm/: create, dispatch, destroy. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/base.h"
#include "llm/llm_int.h"
#include "base/banned.h"

int
llm_check_config(const struct kb_config *cfg, char *err, size_t errlen)
{
	const char	*provider = cfg->llm.provider ? cfg->llm.provider : "";
	struct stat	 st;

	if (strcmp(provider, "openai") == 0 || strcmp(provider, "anthropic") == 0)
		return llm_http_check(cfg, err, errlen);
	if (strcmp(provider, "command") == 0)
		return llm_command_check(cfg, err, errlen);
	if (strcmp(provider, "replay") == 0) {
		if (cfg->llm.replay_dir == NULL || cfg->llm.replay_dir[0] == '\0') {
			snprintf(err, errlen, "llm.replay_dir: required with provider replay");
			return -KB_ECONFIG;
		}
		if (stat(cfg->llm.replay_dir, &st) == -1 || !S_ISDIR(st.st_mode)) {
			snprintf(err, errlen, "llm.replay_dir: %s is not a directory",
			    cfg->llm.replay_dir);
			return -KB_ECONFIG;
		}
		return 0;
	}
	snprintf(err, errlen, "llm.provider: unknown provider '%s' (expected openai, anthropic, "
	    "command or replay)", provider);
	return -KB_ECONFIG;
}

int
llm_client_create(struct llm_client **out, const struct kb_config *cfg, char *err,
		  size_t errlen)
{
	struct llm_client	*c;
	int			 rc;

	*out = NULL;
	if ((rc = llm_check_config(cfg, err, errlen)) < 0)
		return rc;
	if ((c = calloc(1, sizeof(*c))) == NULL)
		return -KB_ENOMEM;
	c->max_response_bytes = cfg->llm.max_response_bytes > 0 ?
	    (size_t)cfg->llm.max_response_bytes : KB_BUF_DEFAULT_CAP;
	c->device = kb_strdup(cfg->eval.device ? cfg->eval.device : "cuda");
	if (strcmp(cfg->llm.provider, "openai") == 0 ||
	    strcmp(cfg->llm.provider, "anthropic") == 0) {
		c->provider = strcmp(cfg->llm.provider, "openai") == 0 ? LLM_PROVIDER_OPENAI :
		    LLM_PROVIDER_ANTHROPIC;
		if ((rc = llm_http_init(c, cfg, err, errlen)) < 0)
			goto out_free;
	} else if (strcmp(cfg->llm.provider, "command") == 0) {
		c->provider = LLM_PROVIDER_COMMAND;
		if ((rc = llm_command_init(c, cfg, err, errlen)) < 0)
			goto out_free;
	} else {
		c->provider = LLM_PROVIDER_REPLAY;
		c->replay_dir = kb_strdup(cfg->llm.replay_dir);
	}
	*out = c;
	return 0;

out_free:
	llm_client_destroy(c);
	return rc;
}

void
llm_client_destroy(struct llm_client *c)
{
	if (c == NULL)
		return;
	llm_command_fini(c);
	llm_http_fini(c);
	free(c->replay_dir);
	free(c->device);
	free(c);
}

int
llm_complete(struct llm_client *c, const struct llm_request *req, struct llm_reply *out,
	     char *err, size_t errlen)
{
	memset(out, 0, sizeof(*out));
	if (err != NULL && errlen > 0)
		err[0] = '\0';
	if (req->prompt == NULL || req->turn < 1 ||
	    (c->provider == LLM_PROVIDER_REPLAY && req->task == NULL)) {
		snprintf(err, errlen, "llm: request without prompt, turn or (for replay) task");
		return -KB_EINVAL;
	}
	switch (c->provider) {
	case LLM_PROVIDER_OPENAI:
	case LLM_PROVIDER_ANTHROPIC:
		return llm_http_complete(c, req, out, err, errlen);
	case LLM_PROVIDER_COMMAND:
		return llm_command_complete(c, req, out, err, errlen);
	case LLM_PROVIDER_REPLAY:
		return llm_replay_complete(c, req, out, err, errlen);
	}
	snprintf(err, errlen, "llm: client has no provider");
	return -KB_EBUG;
}

void
llm_reply_clear(struct llm_reply *r)
{
	if (r == NULL)
		return;
	free(r->content);
	free(r->reasoning);
	free(r->raw);
	free(r->finish_reason);
	memset(r, 0, sizeof(*r));
}

double
llm_backoff_scale(const struct llm_client *c)
{
	return c != NULL && c->provider != LLM_PROVIDER_REPLAY ? c->backoff_scale : 1.0;
}

const char *
llm_endpoint(const struct llm_client *c)
{
	if (c == NULL)
		return "";
	switch (c->provider) {
	case LLM_PROVIDER_OPENAI:
	case LLM_PROVIDER_ANTHROPIC:
		return c->endpoint != NULL ? c->endpoint : "";
	case LLM_PROVIDER_COMMAND:
		return c->command != NULL && c->command[0] != NULL ? c->command[0] : "";
	case LLM_PROVIDER_REPLAY:
		return c->replay_dir != NULL ? c->replay_dir : "";
	}
	return "";
}
