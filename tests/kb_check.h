/* kb_check.h: the one assertion of the C tests. A failed CHECK names file:line and the
 * expression (CHECKM adds a printf-style message), counts the failure and carries on, so
 * one run reports every broken case; main() ends with `return failures ? 1 : 0`. */
#ifndef KFORGE_TEST_CHECK_H
#define KFORGE_TEST_CHECK_H

#include <stdio.h>

static int	failures __attribute__((unused));

#define CHECK(c)							\
	do {								\
		if (!(c)) {						\
			fprintf(stderr, "%s:%d: CHECK failed: %s\n",	\
			    __FILE__, __LINE__, #c);			\
			failures++;					\
		}							\
	} while (0)

#define CHECKM(c, ...)							\
	do {								\
		if (!(c)) {						\
			fprintf(stderr, "%s:%d: CHECK failed: ",	\
			    __FILE__, __LINE__);			\
			fprintf(stderr, __VA_ARGS__);			\
			fprintf(stderr, "\n");				\
			failures++;					\
		}							\
	} while (0)

#endif
