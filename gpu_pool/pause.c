/*
 * pause.c: the run-wide "LLM generation paused" flag. The endpoint refusing the
 * credentials (401/403) is not any one task's fault and the same request from every
 * other task would be refused too, so the first worker that sees it pauses generation
 * for the whole run; the others read the flag before asking the model and stop at their
 * GENERATE instead of spending their retries, and the supervisor announces it once.
 *
 * paused is the commit flag (as in_use is for slots): the fields are written under the
 * lock before it is set, and never change afterwards, so a reader that sees it set may
 * read them. A writer that dies before setting it leaves nothing half-visible. The flag
 * is never cleared: a resumed run makes a new pool.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "gpu_pool/gpu_pool_int.h"

int
gpool_llm_pause(struct gpool *p, const char *task, const char *reason)
{
	struct gpool__llm_pause	*lp;
	int			 rc;

	if (p == NULL || reason == NULL)
		return -KB_EINVAL;
	if ((rc = gpool__lock(p)) < 0)
		return rc;
	lp = &p->llm_pause;
	if (__atomic_load_n(&lp->paused, __ATOMIC_ACQUIRE)) {
		gpool__unlock(p);
		return 0;	/* someone else said it first; the first reason stands */
	}
	lp->by = getpid();
	lp->since_ms = kb_now_ms();
	snprintf(lp->task, sizeof(lp->task), "%s", task != NULL ? task : "");
	snprintf(lp->reason, sizeof(lp->reason), "%s", reason);
	__atomic_store_n(&lp->paused, 1, __ATOMIC_RELEASE);
	gpool__unlock(p);
	return 1;
}

bool
gpool_llm_paused(struct gpool *p, char *reason, size_t n)
{
	const struct gpool__llm_pause	*lp;

	if (p == NULL)
		return false;
	lp = &p->llm_pause;
	if (!__atomic_load_n(&lp->paused, __ATOMIC_ACQUIRE))
		return false;
	if (reason != NULL && n > 0)
		snprintf(reason, n, "%.*s", (int)sizeof(lp->reason), lp->reason);
	return true;
}

json_t *
gpool__llm_pause_json(const struct gpool *p)
{
	const struct gpool__llm_pause	*lp = &p->llm_pause;

	if (!__atomic_load_n(&lp->paused, __ATOMIC_ACQUIRE))
		return json_null();
	return json_pack("{s:s%, s:s%, s:I, s:I}",
	    "reason", lp->reason, strnlen(lp->reason, sizeof(lp->reason)),
	    "task", lp->task, strnlen(lp->task, sizeof(lp->task)),
	    "pid", (json_int_t)lp->by, "since_ms", (json_int_t)lp->since_ms);
}
