/* llm_int.h: what the llm/ files share and nobody outside llm/ may use. */
#ifndef KFORGE_LLM_INT_H
#define KFORGE_LLM_INT_H

#include <stdbool.h>
#include <stddef.h>

#include "llm/llm.h"

enum llm_provider { LLM_PROVIDER_OPENAI, LLM_PROVIDER_REPLAY };

struct llm_client {
	enum llm_provider provider;
	/* A copy of what the providers need from cfg->llm, so the config may go away. */
	char	*model;
	char	*endpoint;		/* base_url + "/chat/completions" */
	char	*auth_header;		/* "Authorization: Bearer ..." or NULL */
	double	 temperature;
	long	 max_tokens;
	long	 timeout_s;
	long	 retries;
	size_t	 max_response_bytes;
	double	 backoff_scale;		/* KFORGE_LLM_BACKOFF_SCALE */
	unsigned int rng;		/* jitter */
	void	*curl;			/* CURL *, reused so connections are kept */
	bool	 curl_inited;
	char	*replay_dir;
	char	*device;		/* cfg->eval.device, for replay lookup */
};

int	llm_openai_check(const struct kb_config *cfg, char *err, size_t errlen);
int	llm_openai_init(struct llm_client *c, const struct kb_config *cfg, char *err,
			size_t errlen);
void	llm_openai_fini(struct llm_client *c);
int	llm_openai_complete(struct llm_client *c, const struct llm_request *req,
			    struct llm_reply *out, char *err, size_t errlen);

int	llm_replay_complete(struct llm_client *c, const struct llm_request *req,
			    struct llm_reply *out, char *err, size_t errlen);

#endif /* KFORGE_LLM_INT_H */
