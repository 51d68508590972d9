/* client.c: the provider-neutral face of llm/: create, dispatch, destroy. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/base.h"
#include "llm/llm_int.h"
#include "base/banned.h"

/* The replay provider's check: its directory of saved replies. */
static int
replay_check(const struct kb_config *cfg, char *err, size_t errlen)
{
	struct stat	st;

	if (cfg->llm.replay_dir == NULL || cfg->llm.replay_dir[0] == '\0') {
		snprintf(err, errlen, "llm.replay_dir: required with provider replay");
		return -KB_ECONFIG;
	}
	if (stat(cfg->llm.replay_dir, &st) == -1 || !S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "llm.replay_dir: %s is not a directory", cfg->llm.replay_dir);
		return -KB_ECONFIG;
	}
	return 0;
}

static int
replay_init(struct llm_client *c, const struct kb_config *cfg, char *err, size_t errlen)
{
	(void)err;
	(void)errlen;
	return (c->replay_dir = kb_strdup(cfg->llm.replay_dir)) != NULL ? 0 : -KB_ENOMEM;
}

static void
replay_fini(struct llm_client *c)
{
	free(c->replay_dir);
	c->replay_dir = NULL;
}

static const char *
http_endpoint(const struct llm_client *c)
{
	return c->endpoint != NULL ? c->endpoint : "";
}

static const char *
command_endpoint(const struct llm_client *c)
{
	return c->command != NULL && c->command[0] != NULL ? c->command[0] : "";
}

static const char *
replay_endpoint(const struct llm_client *c)
{
	return c->replay_dir != NULL ? c->replay_dir : "";
}

/*
 * The providers, a row each: the name llm.provider takes (the config's allowed values
 * are these names, llm_provider_names), and the functions that serve it: check (the
 * config, before any fork), init and fini (the client's own part), complete (one
 * request, retries included), endpoint (where requests go, for messages).
 */
static const struct provider {
	const char		*name;
	enum llm_provider	 id;
	int			(*check)(const struct kb_config *cfg, char *err, size_t errlen);
	int			(*init)(struct llm_client *c, const struct kb_config *cfg,
					char *err, size_t errlen);
	void			(*fini)(struct llm_client *c);
	int			(*complete)(struct llm_client *c, const struct llm_request *req,
					    struct llm_reply *out, char *err, size_t errlen);
	const char		*(*endpoint)(const struct llm_client *c);
} providers[] = {
	{ "openai", LLM_PROVIDER_OPENAI, llm_http_check, llm_http_init, llm_http_fini,
	  llm_http_complete, http_endpoint },
	{ "anthropic", LLM_PROVIDER_ANTHROPIC, llm_http_check, llm_http_init, llm_http_fini,
	  llm_http_complete, http_endpoint },
	{ "command", LLM_PROVIDER_COMMAND, llm_command_check, llm_command_init,
	  llm_command_fini, llm_command_complete, command_endpoint },
	{ "replay", LLM_PROVIDER_REPLAY, replay_check, replay_init, replay_fini,
	  llm_replay_complete, replay_endpoint },
	{ "agent", LLM_PROVIDER_AGENT, llm_agent_check, llm_agent_init, llm_command_fini,
	  llm_agent_complete, command_endpoint },
};
#define N_PROVIDERS	(sizeof(providers) / sizeof(providers[0]))

static const struct provider *
provider_named(const char *name)
{
	for (size_t i = 0; name != NULL && i < N_PROVIDERS; i++)
		if (strcmp(providers[i].name, name) == 0)
			return &providers[i];
	return NULL;
}

static const struct provider *
provider_of(const struct llm_client *c)
{
	for (size_t i = 0; i < N_PROVIDERS; i++)
		if (providers[i].id == c->provider)
			return &providers[i];
	return NULL;
}

const char *const *
llm_provider_names(void)
{
	static const char	*names[N_PROVIDERS + 1];

	if (names[0] == NULL)
		for (size_t i = 0; i < N_PROVIDERS; i++)
			names[i] = providers[i].name;
	return names;
}

int
llm_check_config(const struct kb_config *cfg, char *err, size_t errlen)
{
	const struct provider	*p = provider_named(cfg->llm.provider);
	char			 list[128] = "";
	size_t			 used = 0;

	if (p != NULL)
		return p->check(cfg, err, errlen);
	for (size_t i = 0; i < N_PROVIDERS && used < sizeof(list); i++) {
		int	m = snprintf(list + used, sizeof(list) - used, "%s%s", i == 0 ? "" :
				     i + 1 == N_PROVIDERS ? " or " : ", ", providers[i].name);

		used += m > 0 ? (size_t)m : 0;
	}
	snprintf(err, errlen, "llm.provider: unknown provider '%s' (expected %s)",
		 cfg->llm.provider != NULL ? cfg->llm.provider : "", list);
	return -KB_ECONFIG;
}

int
llm_client_create(struct llm_client **out, const struct kb_config *cfg, char *err,
		  size_t errlen)
{
	const struct provider	*p;
	struct llm_client	*c;
	int			 rc;

	*out = NULL;
	if ((rc = llm_check_config(cfg, err, errlen)) < 0)
		return rc;
	p = provider_named(cfg->llm.provider);
	if ((c = calloc(1, sizeof(*c))) == NULL)
		return -KB_ENOMEM;
	c->provider = p->id;
	c->max_response_bytes = cfg->llm.max_response_bytes > 0 ?
	    (size_t)cfg->llm.max_response_bytes : KB_BUF_DEFAULT_CAP;
	c->device = kb_strdup(cfg->eval.device ? cfg->eval.device : "cuda");
	if ((rc = p->init(c, cfg, err, errlen)) < 0) {
		llm_client_destroy(c);
		return rc;
	}
	*out = c;
	return 0;
}

void
llm_client_destroy(struct llm_client *c)
{
	const struct provider	*p;

	if (c == NULL)
		return;
	if ((p = provider_of(c)) != NULL)
		p->fini(c);
	free(c->device);
	free(c);
}

int
llm_complete(struct llm_client *c, const struct llm_request *req, struct llm_reply *out,
	     char *err, size_t errlen)
{
	const struct provider	*p = provider_of(c);

	memset(out, 0, sizeof(*out));
	if (err != NULL && errlen > 0)
		err[0] = '\0';
	if (req->prompt == NULL || req->turn < 1 ||
	    (c->provider == LLM_PROVIDER_REPLAY && req->task == NULL)) {
		snprintf(err, errlen, "llm: request without prompt, turn or (for replay) task");
		return -KB_EINVAL;
	}
	if (p == NULL) {
		snprintf(err, errlen, "llm: client has no provider");
		return -KB_EBUG;
	}
	return p->complete(c, req, out, err, errlen);
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
	free(r->agent_stdout);
	free(r->agent_stderr);
	free(r->agent_end);
	memset(r, 0, sizeof(*r));
}

bool
llm_is_agent(const struct llm_client *c)
{
	return c != NULL && c->provider == LLM_PROVIDER_AGENT;
}

double
llm_backoff_scale(const struct llm_client *c)
{
	return c != NULL && c->provider != LLM_PROVIDER_REPLAY ? c->backoff_scale : 1.0;
}

const char *
llm_endpoint(const struct llm_client *c)
{
	const struct provider	*p = c != NULL ? provider_of(c) : NULL;

	return p != NULL ? p->endpoint(c) : "";
}
