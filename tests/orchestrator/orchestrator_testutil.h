/*
 * orchestrator_testutil.h: what the config and task tests (and the config fuzz target)
 * share: CHECK macros, removing a scratch tree, and field-by-field equality of two
 * struct kb_config for the emit -> load round trip.
 */
#ifndef KFORGE_TEST_ORCH_TESTUTIL_H
#define KFORGE_TEST_ORCH_TESTUTIL_H

#include <ftw.h>
#include <stdio.h>
#include <string.h>

#include "base/base.h"


#include "kb_check.h"

#define CHECK_STR(a, b)							\
	do {								\
		const char *a_ = (a), *b_ = (b);			\
		if (a_ == NULL || strcmp(a_, b_) != 0) {		\
			fprintf(stderr, "%s:%d: %s is '%s', want '%s'\n", \
			    __FILE__, __LINE__, #a, a_ ? a_ : "(null)", b_); \
			failures++;					\
		}							\
	} while (0)

static inline int
tu_remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	remove(path);
	return 0;
}

/* rm -rf dir (scratch trees of passing tests). */
static inline void
tu_remove_tree(const char *dir)
{
	nftw(dir, tu_remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* Returns NULL when a and b are equal, else the name of the first field that differs. */
static inline const char *
config_diff(const struct kb_config *a, const struct kb_config *b)
{
#define STR_(f)  if (strcmp(a->f ? a->f : "(null)", b->f ? b->f : "(null)") != 0) return #f
#define VAL_(f)  if (a->f != b->f) return #f
	STR_(name);
	STR_(problems.dir);
	VAL_(problems.nlevels);
	for (int i = 0; i < a->problems.nlevels; i++)
		VAL_(problems.levels[i]);
	VAL_(problems.nids);
	for (int i = 0; i < a->problems.nids; i++) {
		VAL_(problems.ids[i].lo);
		VAL_(problems.ids[i].hi);
	}
	VAL_(problems.samples);
	STR_(problems.subset);
	STR_(problems.exclude);
	STR_(llm.provider);
	STR_(llm.base_url);
	STR_(llm.model);
	STR_(llm.api_key_env);
	if (memcmp(&a->llm.temperature, &b->llm.temperature, sizeof(double)) != 0)
		return "llm.temperature";
	VAL_(llm.max_tokens);
	VAL_(llm.timeout_s);
	VAL_(llm.retries);
	VAL_(llm.concurrency);
	VAL_(llm.max_response_bytes);
	STR_(llm.replay_dir);
	STR_(llm.anthropic_version);
	for (int i = 0; a->llm.command != NULL && a->llm.command[i] != NULL; i++)
		if (b->llm.command == NULL || b->llm.command[i] == NULL ||
		    strcmp(a->llm.command[i], b->llm.command[i]) != 0)
			return "llm.command";
	if ((a->llm.command == NULL) != (b->llm.command == NULL))
		return "llm.command";
	VAL_(llm.max_completion_tokens);
	STR_(llm.reasoning_effort);
	VAL_(llm.price_input_per_mtok);
	VAL_(llm.price_output_per_mtok);
	VAL_(refinement.turns);
	VAL_(refinement.feedback_g);
	VAL_(refinement.feedback_e);
	VAL_(refinement.feedback_p);
	STR_(refinement.prompt);
	STR_(refinement.prompts_dir);
	VAL_(refinement.feedback_max_chars);
	VAL_(refinement.profile_metrics);
	VAL_(refinement.profile_metrics_top);
	STR_(eval.device);
	STR_(eval.precision);
	VAL_(eval.correctness_trials);
	if (memcmp(&a->eval.atol, &b->eval.atol, sizeof(double)) != 0)
		return "eval.atol";
	if (memcmp(&a->eval.rtol, &b->eval.rtol, sizeof(double)) != 0)
		return "eval.rtol";
	VAL_(eval.perf_trials);
	VAL_(eval.warmup);
	VAL_(eval.seed);
	VAL_(eval.compile_timeout_s);
	VAL_(eval.timeout_s);
	STR_(eval.arch_list);
	VAL_(gpus.all);
	VAL_(gpus.ndevices);
	for (int i = 0; i < a->gpus.ndevices; i++)
		VAL_(gpus.devices[i]);
	STR_(runner.python);
	VAL_(runner.compile_slots);
	VAL_(runner.cpu_exec_slots);
	VAL_(runner.max_host_memory_mb);
	VAL_(workers);
	VAL_(redteam.enabled);
	if (memcmp(&a->redteam.min_speedup, &b->redteam.min_speedup, sizeof(double)) != 0)
		return "redteam.min_speedup";
	return NULL;
#undef STR_
#undef VAL_
}

#endif /* KFORGE_TEST_ORCH_TESTUTIL_H */
