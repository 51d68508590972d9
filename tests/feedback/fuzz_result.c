/*
 * fuzz_result.c: libFuzzer target for how the driver reads the runner's fd-3 result
 * (feedback/result.c: fb_result_parse) and turns it into the next prompt's feedback
 * (feedback/text.c). The input is what a runner, or code running inside it, wrote to
 * fd 3. Properties checked, abort() on failure:
 *  - a refusal is -KB_ECORRUPT with a non-empty one-line reason of printable ASCII, and
 *    leaves the outcome empty (no result, nothing measured);
 *  - an accepted result has a status in the closed set, equal to its "status" string;
 *    runtime_ms, ref_runtime_ms and speedup are each -1 or a finite value >= 0; the
 *    result is an object that serializes again;
 *  - the E and P feedback texts built from it are valid UTF-8 (they go into a JSON
 *    request) and within refinement.feedback_max_chars bytes.
 * tests/orchestrator/orchestrator_config_corpus.c replays files through the same function without
 * libFuzzer (test feedback_result_corpus); the libFuzzer build needs -DKB_FUZZ=ON and
 * clang.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "feedback/feedback_int.h"

#define FUZZ_SMALL_CAP	200
#define FUZZ_DEFAULT_CAP 4000	/* feedback/text.c's default for feedback_max_chars */

int	LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
fail(const char *what, const char *detail)
{
	fprintf(stderr, "fuzz_result: %s: %s\n", what, detail != NULL ? detail : "");
	abort();
}

static bool
measured_or_none(double v)
{
	return v == -1 || (isfinite(v) && v >= 0);
}

static void
check_refusal(int rc, const char *why, const struct fb_outcome *o)
{
	if (rc != -KB_ECORRUPT)
		fail("unexpected return code", kb_strerror(rc));
	if (why[0] == '\0')
		fail("empty reason", NULL);
	for (const char *p = why; *p != '\0'; p++)
		if ((unsigned char)*p < 0x20 || (unsigned char)*p > 0x7e)
			fail("reason is not one line of printable ASCII", why);
	if (o->result != NULL || o->runtime_ms != -1 || o->ref_runtime_ms != -1 ||
	    o->speedup != -1)
		fail("a refusal left an outcome", why);
}

static void
check_text(const char *what, const char *text, size_t cap)
{
	json_t	*s;

	if (text == NULL)
		fail(what, "NULL");
	if (strlen(text) > cap)
		fail(what, "longer than feedback_max_chars");
	if ((s = json_string(text)) == NULL)
		fail(what, "not valid UTF-8");
	json_decref(s);
}

static void
check_feedback(const struct fb_outcome *o, size_t cap)
{
	struct kb_config	 cfg;
	char			*e, *p;

	memset(&cfg, 0, sizeof(cfg));
	cfg.refinement.feedback_max_chars = (long)cap;
	e = fb_exec_feedback(&cfg, o);
	check_text("E feedback", e, cap);
	free(e);
	if ((p = fb_profile_feedback(&cfg, json_object_get(o->result, "profile"), NULL)) != NULL)
		check_text("P feedback", p, cap);
	free(p);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fb_outcome	 o;
	char			 why[256] = "", *dumped;
	const char		*status;
	int			 rc;

	rc = fb_result_parse((const char *)data, size, &o, why, sizeof(why));
	if (rc < 0) {
		check_refusal(rc, why, &o);
		fb_outcome_clear(&o);
		return 0;
	}
	if (rc != 0)
		fail("unexpected return code", NULL);
	if ((unsigned)o.status >= FB__NSTATUS)
		fail("status out of range", NULL);
	status = json_string_value(json_object_get(o.result, "status"));
	if (!json_is_object(o.result) || status == NULL ||
	    strcmp(status, fb_status_name(o.status)) != 0)
		fail("status differs from the result's", status);
	if (!measured_or_none(o.runtime_ms) || !measured_or_none(o.ref_runtime_ms) ||
	    !measured_or_none(o.speedup))
		fail("a measurement out of range", NULL);
	if ((dumped = json_dumps(o.result, JSON_COMPACT)) == NULL)
		fail("the result does not serialize", NULL);
	free(dumped);
	check_feedback(&o, FUZZ_SMALL_CAP);
	check_feedback(&o, FUZZ_DEFAULT_CAP);
	fb_outcome_clear(&o);
	return 0;
}
