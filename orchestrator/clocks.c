/*
 * clocks.c: gpus.lock_clocks. A GPU's SM clock moves with its temperature, its power and
 * how busy it has been (an H200 read 345 MHz idle and 1980 MHz under load), and a timing
 * moves with it. The judge reads the clock around every block of calls and times a pass
 * again when it moved (kforge_runner.py, judge_timing); where the host permits it, the
 * run can also hold each of its GPUs at its maximum SM clock (nvidia-smi -lgc MAX,MAX)
 * for its length and give the clocks back at its end (-rgc). Off by default: a GPU's
 * clocks are its owner's setting, and a shared host's other users time with them too.
 * What was done, or why not, is run.json's "clocks", which the report prints.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "orchestrator/orch_int.h"
#include "base/banned.h"

/* The maximum SM clock of GPU index, in MHz; < 0 with why when nvidia-smi cannot say. */
static long
max_sm_clock(int index, char *why, size_t whylen)
{
	struct kb_spawn_result	 r = { 0 };
	char			 id[16];
	const char		*args[] = { "-i", id, "--query-gpu=clocks.max.sm",
					    "--format=csv,noheader,nounits", NULL };
	long			 mhz = -1;
	int			 rc;

	snprintf(id, sizeof(id), "%d", index);
	rc = orch_nvidia_smi_run(args, &r, NULL, 0);
	if (rc >= 0 && r.out.p != NULL)
		r.out.p[strcspn(r.out.p, "\n")] = '\0';	/* its first line */
	if (rc < 0) {
		snprintf(why, whylen, "nvidia-smi could not give GPU %d's maximum SM clock (%s)",
			 index, kb_strerror(rc));
	} else if (kb_parse_int(r.out.p, 1, 100000, &mhz) < 0) {
		snprintf(why, whylen, "nvidia-smi gave GPU %d's maximum SM clock as '%.40s'",
			 index, r.out.p != NULL ? r.out.p : "");
		mhz = -1;
	}
	kb_spawn_result_clear(&r);
	return mhz;
}

/* nvidia-smi -i index ARG...; 0, or < 0 with the first line it printed in why. */
static int
smi(int index, const char *a1, const char *a2, char *why, size_t whylen)
{
	struct kb_spawn_result	 r = { 0 };
	char			 id[16];
	const char		*args[] = { "-i", id, a1, a2, NULL };
	int			 rc;

	snprintf(id, sizeof(id), "%d", index);
	if ((rc = orch_nvidia_smi_run(args, &r, NULL, 0)) < 0) {
		const char *nl = r.out.p != NULL ? strchr(r.out.p, '\n') : NULL;

		snprintf(why, whylen, "nvidia-smi %s on GPU %d: %.*s", a1, index,
			 r.out.p == NULL ? 40 : nl != NULL ? (int)(nl - r.out.p) : 200,
			 r.out.p != NULL ? r.out.p : kb_strerror(rc));
	}
	kb_spawn_result_clear(&r);
	return rc;
}

json_t *
orch_clocks_lock(const struct kb_config *cfg, const json_t *gpus)
{
	json_t	*devices = json_array(), *g;
	char	 why[512] = "", pair[48];
	size_t	 i;
	long	 mhz;

	if (strcmp(cfg->eval.device, "cuda") != 0) {
		snprintf(why, sizeof(why), "the run is on the CPU");
		goto out;
	}
	if (!cfg->gpus.lock_clocks) {
		snprintf(why, sizeof(why), "gpus.lock_clocks is false");
		goto out;
	}
	json_array_foreach(gpus, i, g) {
		int idx = (int)json_integer_value(json_object_get(g, "index"));

		if ((mhz = max_sm_clock(idx, why, sizeof(why))) < 0)
			break;
		snprintf(pair, sizeof(pair), "%ld,%ld", mhz, mhz);
		if (smi(idx, "-lgc", pair, why, sizeof(why)) < 0)
			break;
		json_array_append_new(devices, json_pack("{s:i, s:I}", "index", idx, "mhz",
							 (json_int_t)mhz));
	}
	if (why[0] != '\0') {
		/* All or none: the GPUs locked before the one that refused go back. */
		json_t *partial = json_pack("{s:b, s:O}", "locked", 1, "devices", devices);

		orch_clocks_unlock(partial);
		json_decref(partial);
		json_array_clear(devices);
		log_warnx("clocks: not locked: %s", why);
	} else {
		log_info("clocks: %zu GPU(s) locked at their maximum SM clock", json_array_size(devices));
	}
out:
	return json_pack("{s:b, s:s?, s:o}", "locked", why[0] == '\0', "why",
			 why[0] != '\0' ? why : NULL, "devices", devices);
}

void
orch_clocks_unlock(const json_t *clocks)
{
	json_t	*g;
	char	 why[512];
	size_t	 i;

	if (!json_is_true(json_object_get(clocks, "locked")))
		return;
	json_array_foreach(json_object_get(clocks, "devices"), i, g) {
		int idx = (int)json_integer_value(json_object_get(g, "index"));

		if (smi(idx, "-rgc", NULL, why, sizeof(why)) < 0)
			log_warnx("clocks: cannot give GPU %d's clocks back: %s", idx, why);
	}
}
