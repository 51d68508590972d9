/* kprof_host.c: the CUPTI Profiler Host API part of the injection library
 * (kprof/host.c), run without a GPU: every metric of the default set is valid on
 * GH100 (H100) and the set needs at most two passes there; an unknown metric is dropped
 * and named; an unknown chip is refused; libnvperf_host.so is found beside libcupti. */
#include <stdio.h>
#include <string.h>

#include "kprof/kprof.h"

#include "kb_check.h"

int
main(void)
{
	char why[256] = "";
	CHECKM(kprof_host_preload_nvperf(why, sizeof why) == 0, "preload: %s", why);

	int err = -1;
	struct kprof_host *host = kprof_host_open("GH100", NULL, &err);
	CHECKM(host != NULL && err == 0, "host object for GH100: error %d", err);
	if (!host)
		return 1;

	struct kprof_metric_set set;
	kprof_metrics_select(NULL, kprof_host_metric_ok, host, &set);
	CHECK(set.count == kprof_default_metrics_count);
	for (size_t i = 0; i < set.ndropped; i++)
		fprintf(stderr, "default metric not valid on GH100: %s\n", set.dropped[i]);
	CHECK(set.ndropped == 0);
	CHECKM(kprof_host_configure(host, &set, &err) == 0, "configure: error %d", err);
	size_t passes = kprof_host_passes(host);
	size_t size = 0;
	CHECK(kprof_host_config_image(host, &size) != NULL && size > 0);
	printf("default metric set on GH100: %zu metrics, %zu passes, config image %zu bytes\n",
	       set.count, passes, size);
	CHECKM(passes >= 1 && passes <= 2, "%zu passes on GH100, want at most 2", passes);
	kprof_host_close(host);

	host = kprof_host_open("GH100", NULL, &err);
	CHECK(host != NULL);
	if (host) {
		kprof_metrics_select("gpu__time_duration.sum, no_such__metric.sum,"
				     "sm__maximum_warps_per_active_cycle_pct",
				     kprof_host_metric_ok, host, &set);
		CHECK(set.count == 1 && strcmp(set.names[0], "gpu__time_duration.sum") == 0);
		CHECK(set.ndropped == 2 && strcmp(set.dropped[0], "no_such__metric.sum") == 0);
		CHECK(kprof_host_configure(host, &set, &err) == 0 && kprof_host_passes(host) == 1);
		kprof_host_close(host);
	}

	host = kprof_host_open("NOT_A_CHIP", NULL, &err);
	CHECKM(host == NULL && err != 0, "an unknown chip was accepted");
	kprof_host_close(host);
	return failures ? 1 : 0;
}
