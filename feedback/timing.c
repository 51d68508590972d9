/*
 * timing.c: how candidates and references are timed, by eval.timing_preset (feedback.h,
 * "timing"), the one home of that policy: the request's timing, the baseline's key and
 * the report's line all ask here.
 *
 *   robust       the default: the reference timed by the judge between blocks of the
 *                candidate's calls (interleaved, the two processes taking turns), every
 *                call on inputs of its own; on a GPU the hold (the GPU spins before each
 *                CUDA-event trial, so that the events time the GPU's work and not the
 *                host's pace); the ratio of medians; passes of perf_trials calls of each
 *                until the speedup's 95% interval is within max_spread of it, at most
 *                max_passes and budget_s. On an H200 the demo's speedups repeated within
 *                +-4.3% over five runs with the hold and medians alone, and moved by whole
 *                runs (+-118%) without (tools/bench/README.md, repeat).
 *   kernelbench  KernelBench's method exactly: CUDA events around each of perf_trials
 *                calls on one input set, the mean, no hold; the candidate timed alone and
 *                compared with the reference's clean baseline (measured apart, as
 *                KernelBench's reference times are), so that fast_p compares with the
 *                paper's.
 *
 * eval.speedup and eval.timing_hold_us override a preset's statistic and hold where they
 * are set (auto, -1: the preset's).
 */
#include <string.h>

#include "feedback/feedback_int.h"
#include "base/banned.h"

/* The hold of the robust preset on a GPU, in microseconds: a call's launches (up to some
 * 200 on the demo's hosts) are queued before the GPU reaches the start event. */
#define FB_ROBUST_HOLD_US	1000

static const struct fb_timing_preset presets[] = {
	{ .name = "robust", .interleave = true, .statistic = "median",
	  .hold_us = FB_ROBUST_HOLD_US,
	  .max_spread = { 0.05, 0.02 }, .max_passes = { 3, 8 }, .budget_s = { 10, 20 },
	  .describe = "robust: the reference timed between the candidate's blocks of calls, "
		      "each call on inputs of its own, the ratio of medians, passes until the "
		      "speedup's 95% interval is within" },
	{ .name = "kernelbench", .interleave = false, .statistic = "mean", .hold_us = 0,
	  .max_spread = { 1, 1 }, .max_passes = { 1, 1 }, .budget_s = { 0, 0 },
	  .describe = "kernelbench: KernelBench's method (the candidate alone, the mean of "
		      "perf_trials calls on one input set, against the reference's baseline "
		      "timed apart)" },
};
#define N_PRESETS	(sizeof(presets) / sizeof(presets[0]))

const char *const fb_timing_presets[] = { "robust", "kernelbench", NULL };

const struct fb_timing_preset *
fb_timing_preset(const struct kb_config *cfg)
{
	for (size_t i = 0; cfg->eval.timing_preset != NULL && i < N_PRESETS; i++)
		if (strcmp(presets[i].name, cfg->eval.timing_preset) == 0)
			return &presets[i];
	return &presets[0];
}

const char *
fb_speedup_statistic(const struct kb_config *cfg, bool cuda)
{
	const char	*s = cfg->eval.speedup;

	(void)cuda;
	if (s != NULL && (strcmp(s, "mean") == 0 || strcmp(s, "median") == 0))
		return s;
	return fb_timing_preset(cfg)->statistic;
}

long
fb_timing_hold_us(const struct kb_config *cfg)
{
	if (!fb_on_cuda(cfg, NULL) || (cfg->eval.timing != NULL &&
				       strcmp(cfg->eval.timing, "cuda_event") != 0))
		return 0;
	return cfg->eval.timing_hold_us >= 0 ? cfg->eval.timing_hold_us :
	       fb_timing_preset(cfg)->hold_us;
}

void
fb_timing_method(const struct kb_config *cfg, char *out, size_t n)
{
	bool	cuda = fb_on_cuda(cfg, NULL);
	long	hold = fb_timing_hold_us(cfg);

	snprintf(out, n, "%s%s discard_first", !cuda ? "host_time" :
		 cfg->eval.timing != NULL ? cfg->eval.timing : "cuda_event",
		 cuda && cfg->eval.l2_flush ? " l2_flush" : "");
	/* Only where the runner spins: keys without a hold stay as they were. */
	if (hold > 0)
		snprintf(out + strlen(out), n - strlen(out), " hold_us=%ld", hold);
}

json_t *
fb_timing_request(const struct kb_config *cfg, bool cuda)
{
	const struct fb_timing_preset	*p = fb_timing_preset(cfg);
	int				 d = cuda ? 1 : 0;

	return json_pack("{s:s, s:b, s:i, s:f, s:i, s:f, s:s, s:I, s:s}",
			 "method", cfg->eval.timing != NULL ? cfg->eval.timing : "cuda_event",
			 "l2_flush", cfg->eval.l2_flush, "discard_first", 1,
			 "max_spread", p->max_spread[d], "max_passes", p->max_passes[d],
			 "budget_s", p->budget_s[d],
			 "statistic", fb_speedup_statistic(cfg, cuda),
			 "hold_us", (json_int_t)fb_timing_hold_us(cfg), "preset", p->name);
}

void
fb_timing_describe(const struct kb_config *cfg, char *out, size_t n)
{
	const struct fb_timing_preset	*p = fb_timing_preset(cfg);
	bool				 cuda = fb_on_cuda(cfg, NULL);
	long				 hold = fb_timing_hold_us(cfg);
	char				 extra[96] = "";

	if (hold > 0)
		snprintf(extra, sizeof(extra), ", a %ld us hold before each CUDA-event call", hold);
	if (p->max_passes[cuda ? 1 : 0] > 1)
		snprintf(out, n, "%s +-%g%% (at most %d passes)%s", p->describe,
			 100.0 * p->max_spread[cuda ? 1 : 0], p->max_passes[cuda ? 1 : 0], extra);
	else
		snprintf(out, n, "%s%s", p->describe, extra);
	if (cfg->eval.speedup != NULL && strcmp(cfg->eval.speedup, "auto") != 0 &&
	    strcmp(cfg->eval.speedup, p->statistic) != 0)
		snprintf(out + strlen(out), n - strlen(out), " (eval.speedup %s)", cfg->eval.speedup);
	if (cfg->eval.timing_hold_us >= 0 && cfg->eval.timing_hold_us != p->hold_us && cuda)
		snprintf(out + strlen(out), n - strlen(out), " (eval.timing_hold_us %ld)",
			 cfg->eval.timing_hold_us);
}
