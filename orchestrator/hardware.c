/*
 * hardware.c: the facts of the run's devices for the prompt's hardware block
 * (refinement.hardware). feedback/kforge_hardware.py gathers them in the runner's Python,
 * as a runner would see the device (fb_python_snippet); they are stored once, as
 * "hardware" in each device of gpus.json, the one place the workers read them from.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "feedback/feedback.h"
#include "orchestrator/orch_int.h"
#include "base/banned.h"

#define HARDWARE_SCRIPT_CAP	(256u << 10)
#define HARDWARE_TIMEOUT_MS	120000	/* importing torch and asking each GPU */

int
orch_probe_hardware(const struct kb_config *cfg, const char *python, json_t *gpus, char *err,
		    size_t errlen)
{
	bool			 cuda = strcmp(cfg->eval.device, "cuda") == 0;
	const char		*args[] = { cuda ? "cuda" : "cpu", NULL };
	struct kb_spawn_result	 r = { 0 };
	char			 path[4096], *code = NULL;
	size_t			 len, i, j;
	json_t			*answer = NULL, *dev, *facts;
	int			 rc;

	if (kb_path_join(path, sizeof(path), kb_home(), "feedback/kforge_hardware.py") < 0 ||
	    kb_read_file(path, HARDWARE_SCRIPT_CAP, &code, &len) < 0) {
		snprintf(err, errlen, "refinement.hardware: cannot read %s", path);
		return -KB_ECONFIG;
	}
	rc = fb_python_snippet(cfg, python, code, args, cuda, HARDWARE_TIMEOUT_MS, &r);
	free(code);
	if (rc == 0 && (r.result.p == NULL ||
			(answer = json_loadb(r.result.p, r.result.len, 0, NULL)) == NULL))
		rc = -KB_ECONFIG;
	if (rc < 0) {
		const char	*out = r.out.p != NULL ? r.out.p : "";
		size_t		 n = strlen(out);

		/* the end of its output says why (a traceback's last line) */
		snprintf(err, errlen, "refinement.hardware: the device probe (%s) gave no "
			 "answer: %s", python, n > 300 ? out + n - 300 : out);
		for (char *p = err; *p != '\0'; p++)
			if (*p == '\n')
				*p = ' ';
		kb_spawn_result_clear(&r);
		return -KB_ECONFIG;
	}
	kb_spawn_result_clear(&r);
	json_array_foreach(json_object_get(gpus, "devices"), i, dev) {
		json_int_t index = json_integer_value(json_object_get(dev, "index"));

		json_array_foreach(json_object_get(answer, "devices"), j, facts) {
			if (json_integer_value(json_object_get(facts, "index")) != index)
				continue;
			facts = json_deep_copy(facts);
			json_object_del(facts, "index");
			if (!cuda)	/* the cores an execution of this run gets */
				json_object_set_new(facts, "units",
						    json_integer(fb_cpu_threads(cfg)));
			json_object_set_new(dev, "hardware", facts);
			break;
		}
		if (json_object_get(dev, "hardware") == NULL) {
			snprintf(err, errlen, "refinement.hardware: the device probe (%s) has no facts "
				 "about device %lld (torch sees %zu there)", python, (long long)index,
				 json_array_size(json_object_get(answer, "devices")));
			json_decref(answer);
			return -KB_ECONFIG;
		}
	}
	json_decref(answer);
	return 0;
}
