/* llm_extract.c: llm_extract_code on the shapes model answers take, and on noise. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "llm/llm.h"
#include "llm_testutil.h"

/* want NULL: expect -KB_ENOENT. */
static void
expect_n(int line, const char *text, size_t n, const char *want)
{
	char	*code = NULL;
	int	 rc = llm_extract_code(text, n, &code);

	if (want == NULL) {
		if (rc != -KB_ENOENT) {
			fprintf(stderr, "%s:%d: expected no code, got rc %d '%s'\n", __FILE__, line,
			    rc, code ? code : "");
			failures++;
		}
	} else if (rc != 0 || code == NULL || strcmp(code, want) != 0) {
		fprintf(stderr, "%s:%d: rc %d, got '%s', want '%s'\n", __FILE__, line, rc,
		    code ? code : "(null)", want);
		failures++;
	}
	free(code);
}
#define EXPECT(text, want) expect_n(__LINE__, (text), strlen(text), (want))

static void
test_shapes(void)
{
	/* The last python block wins, even over a later untagged one. */
	EXPECT("first:\n```python\na = 1\n```\nthen:\n```python\nb = 2\n```\nrun:\n```\npython x.py\n```\n",
	    "b = 2\n");
	/* Untagged blocks count only when none is tagged python; the last one wins. */
	EXPECT("```\nx = 1\n```\n```\ny = 2\n```\n", "y = 2\n");
	EXPECT("```cpp\nint x;\n```\n```\nz = 3\n```\n", "z = 3\n");
	/* Other languages only, or no block at all. */
	EXPECT("```cpp\nint x;\n```\n", NULL);
	EXPECT("no code here, just ``inline`` text", NULL);
	EXPECT("", NULL);
	/* Tag spellings and info strings. */
	EXPECT("```py\np = 1\n```", "p = 1\n");
	EXPECT("```Python\nq = 1\n```", "q = 1\n");
	EXPECT("```python3\nr = 1\n```", "r = 1\n");
	EXPECT("``` python title=\"model_new.py\"\ns = 1\n```", "s = 1\n");
	EXPECT("```pythonic\nt = 1\n```\n", NULL);
	/* An unterminated final fence is ignored; the complete block before it is used. */
	EXPECT("```python\ngood = 1\n```\nand then\n```python\ncut off = ", "good = 1\n");
	EXPECT("```python\nonly cut off\n", NULL);
	/* CRLF line ends become LF. */
	EXPECT("text\r\n```python\r\nline1\r\nline2\r\n```\r\n", "line1\nline2\n");
	/* Tildes, and a longer fence that holds a shorter one. */
	EXPECT("~~~python\ntilde = 1\n~~~\n", "tilde = 1\n");
	EXPECT("````python\ndoc = \"\"\"\n```\nnot a fence end\n```\n\"\"\"\n````\n",
	    "doc = \"\"\"\n```\nnot a fence end\n```\n\"\"\"\n");
	EXPECT("~~~python\nx = '```'\n```\n~~~\n", "x = '```'\n```\n");
	/* Indented fences (up to three spaces) lose their indentation; four is code. */
	EXPECT("1. step\n  ```python\n  def f():\n      return 1\n  ```\n",
	    "def f():\n    return 1\n");
	EXPECT("    ```python\n    x = 1\n    ```\n", NULL);
	/* Whitespace-only blocks do not count. */
	EXPECT("```python\nreal = 1\n```\n```python\n\n   \n```\n", "real = 1\n");
	/* A closing fence with trailing blanks still closes; one with text does not. */
	EXPECT("```python\na = 1\n```   \n", "a = 1\n");
	EXPECT("```python\na = 1\n``` not a close\n```\n", "a = 1\n``` not a close\n");
	/* Backtick info strings may not hold backticks. */
	EXPECT("```py`thon\nx\n```\n", NULL);
	/* The last line of the text may be the closing fence, with no newline. */
	EXPECT("```python\nend = 1\n```", "end = 1\n");
	/* Empty lines inside the block are kept. */
	EXPECT("```python\na = 1\n\nb = 2\n```\n", "a = 1\n\nb = 2\n");
}

static void
test_bounds(void)
{
	const char	text[] = "```python\nx = 1\n```\n```python\ny = 2\n```\n";
	char		buf[64];

	/* n ends inside the second block: it is unterminated, so the first one wins. */
	expect_n(__LINE__, text, strlen(text) - 5, "x = 1\n");
	expect_n(__LINE__, text, 0, NULL);
	/* No NUL terminator anywhere in the buffer. */
	memset(buf, 'z', sizeof(buf));
	memcpy(buf, "```\nab\n```", 10);
	expect_n(__LINE__, buf, 10, "ab\n");
	/* An embedded NUL is just a byte. */
	expect_n(__LINE__, "pre\0\n```python\nk = 1\n```\n", 25, "k = 1\n");
}

/* Random bytes from a small alphabet rich in fence characters: no crash, no read
 * outside [text, text + n) (ASan builds check), and output no longer than input. */
static void
test_noise(void)
{
	static const char	alphabet[] = "`~ \n\r\tpy\0x{";
	unsigned int		seed = 12345;
	char			*text, *code;

	for (int iter = 0; iter < 20000; iter++) {
		size_t n = (size_t)(rand_r(&seed) % 200);

		text = malloc(n ? n : 1);
		for (size_t i = 0; i < n; i++)
			text[i] = alphabet[rand_r(&seed) % (sizeof(alphabet) - 1)];
		code = NULL;
		if (llm_extract_code(text, n, &code) == 0) {
			CHECK(code != NULL);
			CHECK(code != NULL && strlen(code) <= n);
		} else {
			CHECK(code == NULL);
		}
		free(code);
		free(text);
	}
}

int
main(void)
{
	test_shapes();
	test_bounds();
	test_noise();
	if (failures > 0) {
		fprintf(stderr, "%d check(s) failed\n", failures);
		return 1;
	}
	printf("llm_extract: all checks passed\n");
	return 0;
}
