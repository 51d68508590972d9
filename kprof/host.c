/* kprof/host.c: the CUPTI Profiler Host API for metrics mode (kprof.h). It needs
 * libcupti (and the libnvperf_host.so beside it) but no GPU: metric names, config images and
 * pass counts are computed for a chip name, so unit_kprof_host checks the default metric set
 * on GH100 in CI.
 *
 * cupti_profiler_host.h includes the C++ header <string> without using it; the build puts
 * an empty file of that name on this file's include path (kprof/CMakeLists.txt). */
#include "kprof/kprof.h"

#include <cupti.h>
#include <cupti_profiler_host.h>

#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/banned.h"

struct kprof_host {
	CUpti_Profiler_Host_Object *obj;
	uint8_t *config;
	size_t config_size;
	size_t passes;
};

int
kprof_host_preload_nvperf(char *why, size_t cap)
{
	Dl_info info;
	if (!dladdr((void *)(uintptr_t)cuptiGetVersion, &info) || !info.dli_fname) {
		snprintf(why, cap, "cannot locate the libcupti in use");
		return -1;
	}
	char path[PATH_MAX];
	const char *slash = strrchr(info.dli_fname, '/');
	int dir_len = slash ? (int)(slash - info.dli_fname) : 0;
	if (snprintf(path, sizeof path, "%.*s%slibnvperf_host.so", dir_len, info.dli_fname,
		     slash ? "/" : "") >= (int)sizeof path) {
		snprintf(why, cap, "path of libnvperf_host.so too long");
		return -1;
	}
	if (dlopen(path, RTLD_NOW | RTLD_GLOBAL))
		return 0;
	/* Not beside libcupti: the loader's own search (ld.so.cache, LD_LIBRARY_PATH). */
	if (dlopen("libnvperf_host.so", RTLD_NOW | RTLD_GLOBAL))
		return 0;
	snprintf(why, cap, "libnvperf_host.so not found beside %s", info.dli_fname);
	return -1;
}

struct kprof_host *
kprof_host_open(const char *chip, const uint8_t *counter_availability,
				   int *err)
{
	struct kprof_host *host = calloc(1, sizeof *host);
	if (!host) {
		*err = CUPTI_ERROR_OUT_OF_MEMORY;
		return NULL;
	}
	CUpti_Profiler_Host_Initialize_Params p = {
		.structSize = CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE,
		.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER,
		.pChipName = chip,
		.pCounterAvailabilityImage = counter_availability,
	};
	CUptiResult r = cuptiProfilerHostInitialize(&p);
	if (r != CUPTI_SUCCESS) {
		*err = r;
		free(host);
		return NULL;
	}
	host->obj = p.pHostObject;
	*err = CUPTI_SUCCESS;
	return host;
}

void
kprof_host_close(struct kprof_host *host)
{
	if (!host)
		return;
	CUpti_Profiler_Host_Deinitialize_Params p = {
		.structSize = CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE,
		.pHostObject = host->obj,
	};
	cuptiProfilerHostDeinitialize(&p);
	free(host->config);
	free(host);
}

int
kprof_host_metric_ok(const char *metric, void *host_)
{
	struct kprof_host *host = host_;
	CUpti_Profiler_Host_GetMetricProperties_Params p = {
		.structSize = CUpti_Profiler_Host_GetMetricProperties_Params_STRUCT_SIZE,
		.pHostObject = host->obj,
		.pMetricName = metric,
	};
	return cuptiProfilerHostGetMetricProperties(&p) == CUPTI_SUCCESS;
}

int
kprof_host_configure(struct kprof_host *host, const struct kprof_metric_set *set, int *err)
{
	const char *names[KPROF_MAX_METRICS];
	for (size_t i = 0; i < set->count; i++)
		names[i] = set->names[i];
	CUpti_Profiler_Host_ConfigAddMetrics_Params add = {
		.structSize = CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE,
		.pHostObject = host->obj,
		.ppMetricNames = names,
		.numMetrics = set->count,
	};
	CUptiResult r = cuptiProfilerHostConfigAddMetrics(&add);
	if (r != CUPTI_SUCCESS)
		goto out_err;
	CUpti_Profiler_Host_GetConfigImageSize_Params size = {
		.structSize = CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE,
		.pHostObject = host->obj,
	};
	r = cuptiProfilerHostGetConfigImageSize(&size);
	if (r != CUPTI_SUCCESS)
		goto out_err;
	free(host->config);
	host->config = malloc(size.configImageSize ? size.configImageSize : 1);
	if (!host->config) {
		r = CUPTI_ERROR_OUT_OF_MEMORY;
		goto out_err;
	}
	host->config_size = size.configImageSize;
	CUpti_Profiler_Host_GetConfigImage_Params image = {
		.structSize = CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE,
		.pHostObject = host->obj,
		.configImageSize = host->config_size,
		.pConfigImage = host->config,
	};
	r = cuptiProfilerHostGetConfigImage(&image);
	if (r != CUPTI_SUCCESS)
		goto out_err;
	CUpti_Profiler_Host_GetNumOfPasses_Params passes = {
		.structSize = CUpti_Profiler_Host_GetNumOfPasses_Params_STRUCT_SIZE,
		.configImageSize = host->config_size,
		.pConfigImage = host->config,
	};
	r = cuptiProfilerHostGetNumOfPasses(&passes);
	if (r != CUPTI_SUCCESS)
		goto out_err;
	host->passes = passes.numOfPasses;
	*err = CUPTI_SUCCESS;
	return 0;
out_err:
	*err = r;
	return -1;
}

const uint8_t *
kprof_host_config_image(const struct kprof_host *host, size_t *size)
{
	*size = host->config_size;
	return host->config;
}

size_t
kprof_host_passes(const struct kprof_host *host)
{
	return host->passes;
}

int
kprof_host_evaluate(struct kprof_host *host, const uint8_t *counter_data, size_t size,
			size_t range, const struct kprof_metric_set *set, double *values, int *err)
{
	const char *names[KPROF_MAX_METRICS];
	for (size_t i = 0; i < set->count; i++)
		names[i] = set->names[i];
	CUpti_Profiler_Host_EvaluateToGpuValues_Params p = {
		.structSize = CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE,
		.pHostObject = host->obj,
		.pCounterDataImage = counter_data,
		.counterDataImageSize = size,
		.rangeIndex = range,
		.ppMetricNames = names,
		.numMetrics = set->count,
		.pMetricValues = values,
	};
	CUptiResult r = cuptiProfilerHostEvaluateToGpuValues(&p);
	*err = r;
	return r == CUPTI_SUCCESS ? 0 : -1;
}
