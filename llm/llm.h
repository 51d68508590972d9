/*
 * llm.h: talking to the model — providers (OpenAI-compatible chat completions and the
 * Anthropic Messages API over libcurl, a user's program per request, an agent program
 * per turn with a tool it calls, and replay of recorded responses), the prompt texts,
 * and code extraction.
 *
 * The command provider (llm.command, no shell) gets the request as JSON on stdin:
 * {model, messages: [{role: user, content}], max_tokens, temperature, task, turn, and
 * max_completion_tokens / reasoning_effort when set}, and answers on stdout with plain
 * text, or with a JSON object {content, reasoning?, usage?: {prompt_tokens,
 * completion_tokens}}. Its exit status says how it went: 0 answered; 75 (EX_TEMPFAIL)
 * transient, retried as an HTTP 429 would be (-KB_ELLM_HTTP at the end); 77 (EX_NOPERM)
 * refused credentials (-KB_ELLM_AUTH: the run pauses as on an HTTP 401); any other
 * status or a signal fails the request (-KB_ELLM_REQUEST); running past llm.timeout_s
 * (the group gets SIGTERM, then SIGKILL) is transient (-KB_ETIMEDOUT); stdout past
 * llm.max_response_bytes -KB_ETOOBIG. Its environment is PATH, HOME, LANG, LC_ALL and
 * TMPDIR as kforge has them, and the llm.api_key_env variable when one is named.
 *
 * Lifecycle: a worker creates one client after fork (llm_client_create calls
 * curl_global_init itself; never before fork) and destroys it before exit.
 * Ownership: functions borrow their inputs; strings in results belong to the caller
 * and are freed by llm_reply_clear() / free().
 * Processes: workers (complete); anyone (prompts, extraction, llm_check_config).
 * No file writes here: the worker persists what it gets.
 */
#ifndef KFORGE_LLM_H
#define KFORGE_LLM_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "base/base.h"

struct llm_client;

/* The names llm.provider takes, NULL-ended, from the provider table (client.c), the one
 * list of them: the config's allowed values and `kforge config --reference` read it. */
const char *const *llm_provider_names(void);

/* Fails (-KB_ECONFIG, one line in err) as llm_client_create would, without creating a
 * client and without libcurl, so the supervisor may call it before it forks: the
 * provider's keys, the API key variable of llm.api_key_env (set, not empty, no control
 * character), the replay directory. */
int	llm_check_config(const struct kb_config *cfg, char *err, size_t errlen);
int	llm_client_create(struct llm_client **out, const struct kb_config *cfg,
			  char *err, size_t errlen);
void	llm_client_destroy(struct llm_client *c);

struct llm_request {
	const char		*prompt;	/* the whole user message */
	const struct kb_task	*task;		/* replay looks responses up by task */
	int			 turn;		/* 1-based */
	/* Polled during the request and backoff sleeps; true aborts with -KB_ESTOPPED. */
	bool			(*should_stop)(void *arg);
	void			*stop_arg;
	/* The agent provider: the turn's workspace (made by the caller: the problem, the
	 * prompt and bin/kforge-tool, rundir.h's RD_AGENT entries; final.py is read back
	 * from it), and the tool: tool_eval is called once per `kforge-tool eval` the agent
	 * makes, with the kernel it sent, and returns the JSON object the tool prints (NULL:
	 * the call failed; an "error" is said). Both unused by the other providers. */
	const char		*workspace;
	json_t			*(*tool_eval)(void *arg, const char *kernel, size_t n);
	void			*tool_arg;
	/* argv put before the agent's own: a program that confines it and then runs it
	 * (`kforge tool confine SPEC --`); NULL: none. */
	const char *const	*confine;
	/* The agent's pid once it runs (NULL: not told), with tool_arg. */
	void			(*agent_started)(pid_t pid, void *arg);
};

struct llm_reply {
	char	*content;		/* the answer text */
	char	*reasoning;		/* reasoning text kept apart (NULL if none) */
	char	*raw;			/* raw body of the final HTTP response (NULL for replay) */
	long	 prompt_tokens, completion_tokens;
	long	 reasoning_tokens;	/* of completion_tokens, when the server says (else 0) */
	int	 http_status;		/* last HTTP status (0 for replay) */
	int	 attempts;		/* requests sent, retries included */
	double	 latency_s;		/* wall time of the whole call, retries included */
	char	*finish_reason;
	/* The agent provider: its transcript, each capped at llm.max_response_bytes (NULL
	 * for the other providers), how it ended ("exited with status 0", ...), and whether
	 * its final kernel is the content (else content says why there is none). */
	char	*agent_stdout, *agent_stderr;
	char	*agent_end;
	bool	 agent_final;
};

/* 0 and a filled reply; or -KB_ELLM_AUTH (401/403), -KB_ELLM_REQUEST (other 4xx),
 * (the command provider's statuses map onto these as said above)
 * -KB_ELLM_HTTP / -KB_ETIMEDOUT / -KB_ELLM_REPLY after the retries are spent,
 * -KB_ETOOBIG (reply over llm.max_response_bytes), -KB_ENOENT (replay has no response
 * for this task and turn), -KB_ESTOPPED. err gets a one-line reason. On error the
 * counters (attempts, http_status, latency_s) are still filled and no strings are
 * allocated; llm_reply_clear() is harmless either way. */
int	llm_complete(struct llm_client *c, const struct llm_request *req, struct llm_reply *out,
		     char *err, size_t errlen);
void	llm_reply_clear(struct llm_reply *r);

/*
 * The agent provider (llm.provider agent; docs/models.md): llm.command is run once per
 * turn, as the command provider's program is (the same request JSON on stdin), in the
 * turn's workspace (its cwd), with KFORGE_WORKSPACE, LLM_AGENT_SOCKET_ENV (the tool's
 * socket), KFORGE_TASK and KFORGE_TURN set and the workspace's bin/ first on PATH, for
 * at most llm.agent.timeout_s seconds (its tool calls included). It calls
 * `kforge-tool eval KERNEL` (`kforge tool eval`, llm_agent_tool_call) to have a kernel
 * evaluated, and leaves its answer in final.py. It exiting 0 with a final.py (at most
 * llm.max_response_bytes) makes the reply that kernel in a fenced block; any other end
 * a reply without code that says why (agent_end), so the turn is spent as on a reply
 * without code. A stop request (should_stop) kills it: -KB_ESTOPPED.
 */
#define LLM_AGENT_SOCKET_ENV	"KFORGE_TOOL_SOCKET"
/* The client runs an agent (its requests want a workspace and a tool). */
bool	llm_is_agent(const struct llm_client *c);
/* A tool call from inside the workspace: {"op": op, "kernel": kernel} to the socket
 * named by LLM_AGENT_SOCKET_ENV, and the answer the provider's tool_eval gave (*answer,
 * the caller's). -KB_ECONFIG (no socket named), -KB_ESYS (no answer) and the like, with err. */
int	llm_agent_tool_call(const char *op, const char *kernel, size_t n, json_t **answer,
			    char *err, size_t errlen);

/* Where the client's requests go, for messages: the URL, the command's program, or
 * the replay directory. Borrowed from the client. */
const char *llm_endpoint(const struct llm_client *c);

/* KFORGE_LLM_BACKOFF_SCALE as the client read it (1 by default, and for replay): the
 * worker scales its own backoff between failed turns' requests by it too. */
double	llm_backoff_scale(const struct llm_client *c);

/* The code the model meant: the last fenced block tagged python (or untagged, if no
 * block is tagged python). 0 and *code (caller frees), or -KB_ENOENT, which a run's
 * turn records, and `kforge eval` of a reply reports, as LLM_NO_CODE. */
int	llm_extract_code(const char *text, size_t n, char **code);
#define LLM_NO_CODE	"the reply has no fenced ```python code block"

/* What the previous turn left for the next prompt (docs/DESIGN.md §3, paper App. D.3). */
struct llm_feedback {
	const char	*prev_kernel;	/* G: the previous generation (NULL: none/not enabled) */
	const char	*exec_text;	/* E: compiler/execution output, already truncated */
	const char	*profile_text;	/* P: profiler summary (NULL: none/not enabled) */
	/* A search's second parent (refinement.strategy evolve): another correct kernel
	 * shown after the feedback, and its speedup (<= 0: not timed); NULL: none. */
	const char	*other_kernel;
	double		 other_speedup;
};

/* The device a task's code runs on, for the prompt's hardware block
 * (refinement.hardware): what the supervisor's probe recorded in gpus.json, read by the
 * worker. A fact that is 0 or "" is unknown and left out of the block. */
struct llm_hardware {
	bool		 gpu;			/* false: the CPU */
	char		 name[128];		/* "NVIDIA H100 80GB HBM3", the CPU's model name */
	char		 arch[96];		/* "compute capability 9.0 (Hopper)", "x86_64" */
	long		 units;			/* GPU: SMs; CPU: the cores an execution gets */
	long long	 memory_bytes;		/* GPU memory; on the CPU the machine's RAM */
	double		 bandwidth_gbps;	/* peak memory bandwidth, GB/s */
	char		 bandwidth_source[96];	/* how it was found */
	long long	 smem_per_block, smem_per_block_optin, smem_per_sm, l2_bytes;
	char		 simd[256];		/* CPU: SIMD extensions, space-separated */
	char		 caches[160];		/* CPU: "L1d 48 KiB, L2 2 MiB, L3 30 MiB" */
};

/* Build the turn-1 prompt, or a refinement prompt for turn >= 2, from the template
 * files in refinement.prompts_dir (or the bundled llm/prompts). hw: the device, used
 * when refinement.hardware is on (NULL then: an error). *out: caller frees. */
int	llm_prompt_initial(const struct kb_config *cfg, const struct llm_hardware *hw,
			   const char *problem_src, char **out, char *err, size_t errlen);
int	llm_prompt_refine(const struct kb_config *cfg, const struct llm_hardware *hw,
			  const char *problem_src, const struct llm_feedback *fb, char **out,
			  char *err, size_t errlen);

#endif /* KFORGE_LLM_H */
