/* llm_int.h: what the llm/ files share and nobody outside llm/ may use. */
#ifndef KFORGE_LLM_INT_H
#define KFORGE_LLM_INT_H

#include <stdbool.h>
#include <stddef.h>

#include "llm/llm.h"

enum llm_provider {
	LLM_PROVIDER_OPENAI, LLM_PROVIDER_ANTHROPIC, LLM_PROVIDER_COMMAND, LLM_PROVIDER_REPLAY,
	LLM_PROVIDER_AGENT
};

struct llm_client {
	enum llm_provider provider;
	/* A copy of what the providers need from cfg->llm, so the config may go away. */
	char	*model;
	char	*endpoint;		/* base_url + "/chat/completions" or "/v1/messages" */
	char	*auth_header;		/* "Authorization: Bearer ...", "x-api-key: ..." or NULL */
	char	*version_header;	/* anthropic: "anthropic-version: ..." */
	double	 temperature;
	long	 max_tokens;
	long	 max_completion_tokens;	/* openai: > 0 sent instead of max_tokens */
	char	*reasoning_effort;	/* openai: NULL when not sent */
	long	 timeout_s;
	long	 retries;
	size_t	 max_response_bytes;
	double	 backoff_scale;		/* KFORGE_LLM_BACKOFF_SCALE */
	unsigned int rng;		/* jitter */
	void	*curl;			/* CURL *, reused so connections are kept */
	bool	 curl_inited;
	char	**command;		/* command, agent: argv, argv[0] resolved to a path */
	char	**command_env;		/* command: the child's whole environment */
	char	*replay_dir;
	char	*device;		/* cfg->eval.device, for replay lookup */
};

/* openai.c: the HTTP transport of the openai and anthropic providers (retries,
 * backoff, caps) and the OpenAI wire format. */
int	llm_http_check(const struct kb_config *cfg, char *err, size_t errlen);
int	llm_http_init(struct llm_client *c, const struct kb_config *cfg, char *err,
		      size_t errlen);
void	llm_http_fini(struct llm_client *c);
int	llm_http_complete(struct llm_client *c, const struct llm_request *req,
			  struct llm_reply *out, char *err, size_t errlen);
/* Shared by every provider that retries: KFORGE_LLM_BACKOFF_SCALE, the backoff before
 * retry k (1-based), a sleep that polls req->should_stop (true if it fired), the
 * prompt with invalid UTF-8 replaced (NULL on OOM), and a key variable's check. */
int	llm_backoff_scale_env(double *out, char *err, size_t errlen);
int64_t	llm_backoff_ms(struct llm_client *c, int k);
/* One attempt of a provider's request: 0, or < 0 with msg; *retry_after_s >= 0 where the
 * server named a wait (-1: none). */
typedef int	(*llm_attempt_fn)(void *arg, struct llm_reply *out, char *msg, size_t msglen,
				  long *retry_after_s);
/* The retries every provider shares: attempts until one succeeds, fails in a way that is
 * not retried (retried: a timeout, an HTTP failure, and with bad_reply_retried a reply
 * that cannot be read) or llm.retries retries are spent; between attempts the server's
 * Retry-After (capped at LLM_RETRY_AFTER_CAP_S) or the backoff, in a sleep that a stop
 * ends (-KB_ESTOPPED). out->attempts counts them. On failure err says "who: message",
 * with the attempts where there were several. */
int	llm_retrying(struct llm_client *c, const struct llm_request *req, const char *who,
		     bool bad_reply_retried, llm_attempt_fn attempt, void *arg,
		     struct llm_reply *out, char *err, size_t errlen);
bool	llm_sleep_polling(const struct llm_request *req, int64_t ms);
char	*llm_utf8_clean(const char *s);
int	llm_check_key_env(const char *envname, char *err, size_t errlen);

/* anthropic.c: the Messages API's request body and reply. */
char	*llm_anthropic_body(const struct llm_client *c, const char *clean_prompt);
int	llm_anthropic_parse(const struct kb_buf *body, struct llm_reply *out, char *msg,
			    size_t msglen);

/* command.c: a user's program per request. */
int	llm_command_check(const struct kb_config *cfg, char *err, size_t errlen);
int	llm_command_init(struct llm_client *c, const struct kb_config *cfg, char *err,
			 size_t errlen);
void	llm_command_fini(struct llm_client *c);
/* Frees a NULL-terminated vector of strings, each wiped first (an environment may hold
 * the API key). */
void	llm_strv_free(char **v);
int	llm_command_complete(struct llm_client *c, const struct llm_request *req,
			     struct llm_reply *out, char *err, size_t errlen);
/* The request JSON the program reads on stdin (the agent's too); NULL on OOM. */
char	*llm_command_request_json(const struct llm_client *c, const struct llm_request *req);

/* agent.c: an agent program per turn, its tool served meanwhile (its argv and
 * environment made as the command provider's, llm_command_init). */
int	llm_agent_check(const struct kb_config *cfg, char *err, size_t errlen);
int	llm_agent_init(struct llm_client *c, const struct kb_config *cfg, char *err,
		       size_t errlen);
int	llm_agent_complete(struct llm_client *c, const struct llm_request *req,
			   struct llm_reply *out, char *err, size_t errlen);

int	llm_replay_complete(struct llm_client *c, const struct llm_request *req,
			    struct llm_reply *out, char *err, size_t errlen);

#endif /* KFORGE_LLM_INT_H */
