/* test_gpool_health.c: the GPU health rule of docs/DESIGN.md §4 (gpu_pool's), exhaustively —
 * for every count of earlier failures and every runner status a probe can end with, the
 * step gpool_health_decide picks; then the probe loop of the EXECUTE action driven through
 * every sequence of probe results: it stops after at most GPOOL_HEALTH_FAILURES probes,
 * returns the GPU after any passing probe, and quarantines it exactly when
 * GPOOL_HEALTH_FAILURES probes in a row failed. No GPU needed: the rule is pure. */
#include <limits.h>
#include <stdio.h>

#include "feedback/feedback.h"
#include "gpu_pool/gpu_pool.h"

#include "kb_check.h"

static const char *
health_name(enum gpool_health h)
{
	return h == GPOOL_HEALTH_RETURN ? "return" : h == GPOOL_HEALTH_REPROBE ? "reprobe" :
	       h == GPOOL_HEALTH_QUARANTINE ? "quarantine" : "?";
}

static void
test_decide_every_case(void)
{
	static const int before[] = { INT_MIN, -1, 0, 1, 2, 3, INT_MAX };

	CHECK(GPOOL_HEALTH_FAILURES == 2);	/* the rule: twice, then quarantine */
	for (size_t b = 0; b < sizeof(before) / sizeof(before[0]); b++) {
		for (int st = 0; st < FB__NSTATUS; st++) {
			int		n = before[b] < 0 ? 0 : before[b];
			enum gpool_health	want, got = gpool_health_decide(before[b], st == FB_ST_OK);

			if (n >= GPOOL_HEALTH_FAILURES)
				want = GPOOL_HEALTH_QUARANTINE;
			else if (st == FB_ST_OK)
				want = GPOOL_HEALTH_RETURN;
			else if (n + 1 < GPOOL_HEALTH_FAILURES)
				want = GPOOL_HEALTH_REPROBE;
			else
				want = GPOOL_HEALTH_QUARANTINE;
			CHECKM(got == want, "%d earlier failures, probe %s: got %s, want %s",
			       before[b], fb_status_name((enum fb_status)st), health_name(got),
			       health_name(want));
		}
	}
}

/* The loop of fb_probe_health (feedback/steps.c) under the rule EXECUTE lends it, over a
 * scripted sequence of probe results. */
static enum gpool_health
run_probes(const enum fb_status *results, int nresults, int *probes, int *failed)
{
	enum gpool_health	next = GPOOL_HEALTH_REPROBE;

	*probes = *failed = 0;
	while (next == GPOOL_HEALTH_REPROBE && *probes < nresults) {
		enum fb_status st = results[(*probes)++];

		next = gpool_health_decide(*failed, st == FB_ST_OK);
		*failed += st != FB_ST_OK;
	}
	return next;
}

static void
test_probe_sequences(void)
{
	/* Every sequence of 3 results over {ok, each failing status}: more than the rule
	 * ever reads, so a loop that probes too often would show. */
	enum fb_status	seq[3];
	int		n = FB__NSTATUS, cases = 0;

	for (int a = 0; a < n; a++)
		for (int b = 0; b < n; b++)
			for (int c = 0; c < n; c++) {
				enum gpool_health	h;
				int		probes, failed;
				bool		two_bad;

				seq[0] = (enum fb_status)a;
				seq[1] = (enum fb_status)b;
				seq[2] = (enum fb_status)c;
				h = run_probes(seq, 3, &probes, &failed);
				two_bad = a != FB_ST_OK && b != FB_ST_OK;
				CHECKM(h != GPOOL_HEALTH_REPROBE, "%s,%s,%s: still probing",
				       fb_status_name(seq[0]), fb_status_name(seq[1]),
				       fb_status_name(seq[2]));
				CHECKM(probes == (a == FB_ST_OK ? 1 : 2),
				       "%s,%s: %d probes", fb_status_name(seq[0]),
				       fb_status_name(seq[1]), probes);
				CHECKM((h == GPOOL_HEALTH_QUARANTINE) == two_bad,
				       "%s,%s: %s", fb_status_name(seq[0]),
				       fb_status_name(seq[1]), health_name(h));
				/* What the EXECUTE record says: ok | failed_once | quarantined. */
				CHECK(h != GPOOL_HEALTH_RETURN || failed == (a != FB_ST_OK));
				cases++;
			}
	CHECK(cases == n * n * n);
}

int
main(void)
{
	test_decide_every_case();
	test_probe_sequences();
	if (failures == 0)
		printf("ok: fsm health rule\n");
	return failures ? 1 : 0;
}
