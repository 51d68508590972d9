/*
 * gpu_pool_pause.c: the run-wide "LLM generation paused" flag (gpu_pool/pause.c) — clear
 * in a new pool, set by the first caller only (the first reason stands), seen by other
 * processes of the mapping, in the snapshot, and ending an LLM-slot wait that polls it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/base.h"
#include "gpu_pool/gpu_pool.h"

#include "kb_check.h"

static struct gpool *
make_pool(void)
{
	static const int	 cpu[1] = { -1 };
	struct gpool_spec	 spec = { .exec_devices = cpu, .nexec = 1, .ncompile = 1, .nllm = 1 };
	struct gpool		*p = NULL;

	if (gpool_create(&p, &spec) != 0)
		abort();
	return p;
}

static bool
paused_stop(void *pool)
{
	return gpool_llm_paused(pool, NULL, 0);
}

int
main(void)
{
	struct gpool	*p = make_pool();
	char		 reason[600] = "untouched", longer[2000];
	json_t		*snap, *lp;
	pid_t		 pid;
	int		 status, slot;

	/* A new pool is not paused, and says so in the snapshot. */
	CHECK(!gpool_llm_paused(p, reason, sizeof(reason)));
	CHECK(strcmp(reason, "untouched") == 0);
	snap = gpool_snapshot_json(p);
	CHECK(snap != NULL && json_is_null(json_object_get(snap, "llm_paused")));
	json_decref(snap);
	CHECK(gpool_llm_pause(NULL, "t", "r") < 0);
	CHECK(gpool_llm_pause(p, "t", NULL) < 0);

	/* A worker holding the only LLM slot; another waits for it, polling the flag. */
	CHECK(gpool_acquire(p, GPOOL_LLM, "holder", 0, NULL, NULL, &slot) == 0);
	if ((pid = fork()) == 0) {
		int s;

		/* The pause, not the timeout, must end the wait: the timeout is generous. */
		_exit(gpool_acquire(p, GPOOL_LLM, "waiter", 300000, paused_stop, p, &s) ==
		      -KB_ESTOPPED ? 0 : 1);
	}
	usleep(300 * 1000);	/* usually paused while it waits; if not yet, it stops at once */
	/* A child process pauses it: the mapping is shared, the first reason stands. */
	if (fork() == 0)
		_exit(gpool_llm_pause(p, "L1_1_ReLU_s0", "HTTP 401 from http://x/v1") == 1 ? 0 : 1);
	while (wait(&status) > 0)
		CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	CHECK(gpool_llm_pause(p, "L1_2_Other_s0", "HTTP 403 later") == 0);
	CHECK(gpool_llm_paused(p, NULL, 0));
	CHECK(gpool_llm_paused(p, reason, sizeof(reason)));
	CHECK(strcmp(reason, "HTTP 401 from http://x/v1") == 0);
	CHECK(gpool_llm_paused(p, reason, 5) && strcmp(reason, "HTTP") == 0);
	snap = gpool_snapshot_json(p);
	lp = json_object_get(snap, "llm_paused");
	CHECK(json_is_object(lp));
	CHECK(strcmp(json_string_value(json_object_get(lp, "reason")) ?: "", "HTTP 401 from http://x/v1") == 0);
	CHECK(strcmp(json_string_value(json_object_get(lp, "task")) ?: "", "L1_1_ReLU_s0") == 0);
	CHECK(json_integer_value(json_object_get(lp, "since_ms")) > 0);
	CHECK(json_integer_value(json_object_get(json_object_get(snap, "llm"), "used")) == 1);
	json_decref(snap);
	CHECK(gpool_release(p, GPOOL_LLM, slot) == 0);
	gpool_destroy(p);

	/* A reason longer than the field is cut, never overrun. */
	p = make_pool();
	memset(longer, 'r', sizeof(longer) - 1);
	longer[sizeof(longer) - 1] = '\0';
	CHECK(gpool_llm_pause(p, "t", longer) == 1);
	CHECK(gpool_llm_paused(p, reason, sizeof(reason)));
	CHECK(strlen(reason) > 100 && strlen(reason) < sizeof(reason) && reason[0] == 'r');
	gpool_destroy(p);
	return failures ? 1 : 0;
}
