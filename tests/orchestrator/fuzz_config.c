/*
 * fuzz_config.c: libFuzzer target for the config loader (orch_config_load_string).
 * Leading lines "#set ARG" of the input become --set arguments (they are YAML comments,
 * so the document is still the whole input). Properties checked, abort() on failure:
 *  - a refusal is -KB_ECONFIG (or -KB_ENOMEM) with a non-empty one-line message;
 *  - an accepted config emits YAML that loads back to an equal struct.
 * tests/orchestrator/orchestrator_config_corpus.c links the same function to replay files without
 * libFuzzer (it always runs); the libFuzzer build needs -DKB_FUZZ=ON and clang.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "orchestrator/orchestrator.h"
#include "orchestrator_testutil.h"

#define FUZZ_MAX_SETS	4

int	LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
fail(const char *what, const char *detail, const char *text)
{
	fprintf(stderr, "fuzz_config: %s: %s\n%s\n", what, detail, text ? text : "");
	abort();
}

static void
check_refusal(int rc, const char *err)
{
	if (rc != -KB_ECONFIG && rc != -KB_ENOMEM)
		fail("unexpected return code", kb_strerror(rc), err);
	if (err[0] == '\0' || strchr(err, '\n') != NULL)
		fail("message is not one line", err, NULL);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kb_config	 a, b;
	char			*sets[FUZZ_MAX_SETS], err[1024], *text = NULL;
	const char		*p = (const char *)data, *end = p + size, *diff;
	size_t			 len = 0;
	int			 nsets = 0, rc;
	FILE			*fp;

	while (nsets < FUZZ_MAX_SETS && end - p > 5 && memcmp(p, "#set ", 5) == 0) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t	    n = (size_t)((nl != NULL ? nl : end) - (p + 5));

		sets[nsets] = malloc(n + 1);
		if (sets[nsets] == NULL)
			abort();
		memcpy(sets[nsets], p + 5, n);
		sets[nsets][n] = '\0';
		nsets++;
		p = nl != NULL ? nl + 1 : end;
	}
	rc = orch_config_load_string((const char *)data, size, "fuzz",
				     (const char *const *)sets, nsets, &a, err, sizeof(err));
	if (rc < 0) {
		check_refusal(rc, err);
		goto out;
	}
	if ((fp = open_memstream(&text, &len)) == NULL)
		abort();
	if (orch_config_emit(&a, fp) != 0)
		fail("emit failed", "", NULL);
	fclose(fp);
	if ((rc = orch_config_load_string(text, len, "frozen", NULL, 0, &b, err,
					  sizeof(err))) < 0)
		fail("emitted config does not load", err, text);
	if ((diff = config_diff(&a, &b)) != NULL)
		fail("emitted config loads differently", diff, text);
	kb_config_clear(&b);
	kb_config_clear(&a);
	free(text);
out:
	for (int i = 0; i < nsets; i++)
		free(sets[i]);
	return 0;
}
