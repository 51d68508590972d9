/* devices.c: the run's devices as the supervisor's probe recorded them in gpus.json, read
 * once by the supervisor into struct fsm_device and handed to the workers typed. */
#include <stdio.h>
#include <string.h>

#include "fsm/fsm_int.h"
#include "base/banned.h"

static void
copy_fact(char *dst, size_t n, const json_t *o, const char *key)
{
	const char *v = json_string_value(json_object_get(o, key));

	snprintf(dst, n, "%s", v != NULL ? v : "");
}

/* A device's "hardware" object (orchestrator/hardware.c writes it) into hw. */
static void
hardware_parse(const json_t *h, struct llm_hardware *hw)
{
	json_t	*v;
	size_t	 i;

	memset(hw, 0, sizeof(*hw));
	hw->gpu = json_is_true(json_object_get(h, "gpu"));
	copy_fact(hw->name, sizeof(hw->name), h, "name");
	copy_fact(hw->arch, sizeof(hw->arch), h, "arch");
	copy_fact(hw->bandwidth_source, sizeof(hw->bandwidth_source), h, "bandwidth_source");
	copy_fact(hw->caches, sizeof(hw->caches), h, "caches");
	hw->units = (long)json_integer_value(json_object_get(h, "units"));
	hw->memory_bytes = json_integer_value(json_object_get(h, "memory_bytes"));
	hw->bandwidth_gbps = json_number_value(json_object_get(h, "bandwidth_gbps"));
	hw->smem_per_block = json_integer_value(json_object_get(h, "smem_per_block"));
	hw->smem_per_block_optin = json_integer_value(json_object_get(h, "smem_per_block_optin"));
	hw->smem_per_sm = json_integer_value(json_object_get(h, "smem_per_sm"));
	hw->l2_bytes = json_integer_value(json_object_get(h, "l2_bytes"));
	json_array_foreach(json_object_get(h, "simd"), i, v) {
		size_t used = strlen(hw->simd);

		if (json_is_string(v))
			snprintf(hw->simd + used, sizeof(hw->simd) - used, "%s%s",
				 used > 0 ? " " : "", json_string_value(v));
	}
}

int
fsm_devices_parse(const json_t *gpus, struct fsm_device *out, int max)
{
	json_t	*g, *h;
	size_t	 i;
	int	 n = 0;

	json_array_foreach(json_object_get(gpus, "devices"), i, g) {
		if (n >= max)
			break;
		memset(&out[n], 0, sizeof(out[n]));
		out[n].index = json_is_integer(json_object_get(g, "index")) ?
			       (int)json_integer_value(json_object_get(g, "index")) : -1;
		copy_fact(out[n].name, sizeof(out[n].name), g, "name");
		if (json_is_object(h = json_object_get(g, "hardware"))) {
			hardware_parse(h, &out[n].hardware);
			out[n].has_hardware = true;
		}
		n++;
	}
	return n;
}
