/*
 * config_int.h: pieces of the config loader (config.c) that the task listing (tasks.c)
 * shares. Internal to orchestrator/.
 */
#ifndef KFORGE_ORCH_CONFIG_INT_H
#define KFORGE_ORCH_CONFIG_INT_H

#include <stdbool.h>
#include <stddef.h>

#include "base/base.h"

/* The largest config (file, string or --set value) the loader reads, and the most
 * flow collections ('[' or '{', anywhere) it may hold: libyaml's scanner is quadratic
 * in flow nesting, and a real config has a dozen. */
#define ORCH_CONFIG_MAX_BYTES	(256u << 10)
#define ORCH_CONFIG_MAX_OPENERS	256

/* "[1, 2, 3]" */
void	orch_config_levels_text(const struct kb_config *c, char *buf, size_t len);
/* "all", or the selection in the form problems.ids reads back: "1-100,3". */
void	orch_config_ids_text(const struct kb_config *c, char *buf, size_t len);
/* Whether problem id is selected by problems.ids. */
bool	orch_config_id_selected(const struct kb_config *c, long id);

/* Whether s has the form of a problem key: L{level}_{id}_{Name} (tasks.c). */
bool	orch_problem_key_valid(const char *s);

#endif /* KFORGE_ORCH_CONFIG_INT_H */
