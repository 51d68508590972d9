/*
 * fuzz_extract.c: libFuzzer target for code extraction (llm/extract.c: llm_extract_code)
 * over a model answer of any bytes. Properties checked, abort() on failure:
 *  - the answer is code (0, code set) or no code (-KB_ENOENT, code NULL), nothing else;
 *  - extracted code is taken from the input: its lines are consecutive lines of the
 *    input, each less at most three leading spaces and one CR before the LF (up to the
 *    first NUL, where the C string ends);
 *  - it is not blank, and ends with a newline (inputs without NUL bytes);
 *  - fenced again in a longer fence, it extracts to itself (inputs without NUL or CR).
 * tests/orchestrator/orchestrator_config_corpus.c replays files through the same function without
 * libFuzzer (test llm_extract_corpus); the libFuzzer build needs -DKB_FUZZ=ON and clang.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "llm/llm.h"

int	LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
fail(const char *what, const char *code)
{
	fprintf(stderr, "fuzz_extract: %s\ncode: '%s'\n", what, code != NULL ? code : "(null)");
	abort();
}

/* Do code's lines (clen bytes) match the input's lines from pos on? */
static bool
lines_match_at(const char *in, size_t n, size_t pos, const char *code, size_t clen)
{
	size_t	c = 0;

	while (c < clen) {
		const char	*nl = memchr(code + c, '\n', clen - c);
		size_t		 seg_end = nl != NULL ? (size_t)(nl - code) : clen, len = seg_end - c;
		size_t		 next = 0;
		bool		 ok = false;

		for (size_t k = 0; k <= 3 && !ok && pos + k + len <= n; k++) {
			size_t	after = pos + k + len;

			if (k > 0 && in[pos + k - 1] != ' ')
				break;
			if (memcmp(in + pos + k, code + c, len) != 0)
				continue;
			if (nl == NULL) {
				/* the C string was cut by a NUL in the input */
				ok = after < n && in[after] == '\0';
			} else if (after < n && in[after] == '\n') {
				ok = true;
				next = after + 1;
			} else if (after + 1 < n && in[after] == '\r' && in[after + 1] == '\n') {
				ok = true;
				next = after + 2;
			}
		}
		if (!ok)
			return false;
		pos = next;
		c = seg_end + 1;
	}
	return true;
}

static bool
taken_from(const char *in, size_t n, const char *code)
{
	size_t	clen = strlen(code);

	for (size_t pos = 0; pos < n;) {
		const char *nl;

		if (lines_match_at(in, n, pos, code, clen))
			return true;
		if ((nl = memchr(in + pos, '\n', n - pos)) == NULL)
			break;
		pos = (size_t)(nl - in) + 1;
	}
	return false;
}

static void
check_round_trip(const char *code)
{
	size_t	 run = 0, longest = 0, clen = strlen(code), flen;
	char	*wrapped, *again = NULL;

	for (size_t i = 0; i < clen; i++) {
		run = code[i] == '`' ? run + 1 : 0;
		if (run > longest)
			longest = run;
	}
	flen = longest >= 3 ? longest + 1 : 3;
	if ((wrapped = malloc(2 * flen + clen + 16)) == NULL)
		abort();
	memset(wrapped, '`', flen);
	memcpy(wrapped + flen, "python\n", 7);
	memcpy(wrapped + flen + 7, code, clen);
	memset(wrapped + flen + 7 + clen, '`', flen);
	wrapped[2 * flen + 7 + clen] = '\n';
	if (llm_extract_code(wrapped, 2 * flen + 8 + clen, &again) != 0 || again == NULL ||
	    strcmp(again, code) != 0)
		fail("code fenced again does not extract to itself", code);
	free(again);
	free(wrapped);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char	*in = (const char *)data;
	char		*code = (char *)"unset";
	bool		 has_nul = memchr(in, '\0', size) != NULL;
	int		 rc = llm_extract_code(in, size, &code);

	if (rc == -KB_ENOENT || rc == -KB_ENOMEM) {
		if (code != NULL)
			fail("no code, but code set", NULL);
		return 0;
	}
	if (rc != 0 || code == NULL)
		fail("unexpected return", NULL);
	if (!taken_from(in, size, code))
		fail("code is not lines of the input", code);
	if (!has_nul) {
		size_t	clen = strlen(code);

		if (strspn(code, " \t\r\n") == clen)
			fail("blank code", code);
		if (code[clen - 1] != '\n')
			fail("code does not end with a newline", code);
		if (strchr(code, '\r') == NULL)
			check_round_trip(code);
	}
	free(code);
	return 0;
}
