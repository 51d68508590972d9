/*
 * pause.c: the one run-wide pause, with the kind of trouble that caused it. Neither kind
 * is any one task's fault, and every other task would meet the same:
 *
 *   llm_auth  the endpoint refused the credentials (401/403): workers stop at their next
 *             GENERATE instead of spending their retries; work past generation finishes.
 *   env       the machine cannot build or run candidates (torch not importable, headers,
 *             compiler or ninja missing, the reference failing on its own): workers stop
 *             at their next step, before asking the model or starting a runner.
 *
 * paused holds the kind and is the commit flag (as in_use is for slots): the fields are
 * written under the lock before it is set. A pause is never cleared (a resumed run makes
 * a new pool) and only ever made more severe: an env pause replaces an llm_auth one,
 * since it stops more; otherwise the first reason stands. Polling the kind is lock-free;
 * copying the reason takes the lock, so a replacement is never read half-written.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "gpu_pool/gpu_pool_int.h"
#include "base/banned.h"

static const char *const kind_names[] = {
	[GPOOL_PAUSE_NONE] = "none", [GPOOL_PAUSE_LLM_AUTH] = "llm_auth",
	[GPOOL_PAUSE_ENV] = "env",
};

const char *
gpool_pause_kind_name(enum gpool_pause_kind kind)
{
	return (unsigned)kind <= GPOOL_PAUSE_ENV ? kind_names[kind] : "unknown";
}

int
gpool_pause(struct gpool *p, enum gpool_pause_kind kind, const char *task, const char *reason)
{
	struct gpool__pause	*lp;
	int			 rc;

	if (p == NULL || reason == NULL || kind <= GPOOL_PAUSE_NONE || kind > GPOOL_PAUSE_ENV)
		return -KB_EINVAL;
	if ((rc = gpool__lock(p)) < 0)
		return rc;
	lp = &p->pause;
	if (__atomic_load_n(&lp->paused, __ATOMIC_ACQUIRE) >= (int32_t)kind) {
		gpool__unlock(p);
		return 0;	/* paused already, as severely: the first reason stands */
	}
	lp->by = getpid();
	lp->since_ms = kb_now_ms();
	snprintf(lp->task, sizeof(lp->task), "%s", task != NULL ? task : "");
	snprintf(lp->reason, sizeof(lp->reason), "%s", reason);
	__atomic_store_n(&lp->paused, (int32_t)kind, __ATOMIC_RELEASE);
	gpool__unlock(p);
	return 1;
}

enum gpool_pause_kind
gpool_paused(struct gpool *p, char *reason, size_t n)
{
	struct gpool__pause	*lp;
	int32_t			 kind;

	if (p == NULL)
		return GPOOL_PAUSE_NONE;
	lp = &p->pause;
	if ((kind = __atomic_load_n(&lp->paused, __ATOMIC_ACQUIRE)) == GPOOL_PAUSE_NONE)
		return GPOOL_PAUSE_NONE;
	if (reason != NULL && n > 0) {
		if (gpool__lock(p) < 0) {
			reason[0] = '\0';
		} else {
			kind = lp->paused;
			snprintf(reason, n, "%.*s", (int)sizeof(lp->reason), lp->reason);
			gpool__unlock(p);
		}
	}
	return (enum gpool_pause_kind)kind;
}

json_t *
gpool__pause_json(const struct gpool *p)
{
	const struct gpool__pause	*lp = &p->pause;
	int32_t				 kind = __atomic_load_n(&lp->paused, __ATOMIC_ACQUIRE);

	if (kind == GPOOL_PAUSE_NONE)
		return json_null();
	return json_pack("{s:s, s:s%, s:s%, s:I, s:I}",
	    "kind", gpool_pause_kind_name((enum gpool_pause_kind)kind),
	    "reason", lp->reason, strnlen(lp->reason, sizeof(lp->reason)),
	    "task", lp->task, strnlen(lp->task, sizeof(lp->task)),
	    "pid", (json_int_t)lp->by, "since_ms", (json_int_t)lp->since_ms);
}
