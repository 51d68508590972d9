/*
 * report_text.c: the pure parts of the report's files — the kernel diff (its
 * lines rebuild both texts, and it is as short as a longest common subsequence allows),
 * the escaping of run text into HTML and SVG, and the CSV's quoting of awkward fields.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/report_int.h"
#include "kb_check.h"

/* Undoes the five entities rpt_xml_escape writes. */
static void
unescape(const char *s, size_t n, struct kb_buf *out)
{
	static const struct { const char *ent; char c; } ents[] = {
		{ "&amp;", '&' }, { "&lt;", '<' }, { "&gt;", '>' }, { "&quot;", '"' }, { "&#39;", '\'' },
	};

	for (size_t i = 0; i < n;) {
		size_t k;

		for (k = 0; k < sizeof(ents) / sizeof(ents[0]); k++)
			if (strncmp(s + i, ents[k].ent, strlen(ents[k].ent)) == 0)
				break;
		if (k < sizeof(ents) / sizeof(ents[0])) {
			kb_buf_append(out, &ents[k].c, 1);
			i += strlen(ents[k].ent);
		} else {
			kb_buf_append(out, s + i, 1);
			i++;
		}
	}
}

/* The lines of one side of a diff: "same" and "del" rebuild old, "same" and "add" new. */
static void
side(const char *diff, const char *keep, struct kb_buf *out, int *changed)
{
	const char	*p = diff;

	while ((p = strstr(p, "<span class=\"")) != NULL) {
		const char	*cls = p + 13, *text = strchr(cls, '>') + 1;
		const char	*end = strstr(text, "</span>");
		size_t		 clen = (size_t)(strchr(cls, '"') - cls);

		if ((clen == 4 && strncmp(cls, "same", 4) == 0) ||
		    (clen == 3 && strncmp(cls, keep, 3) == 0)) {
			unescape(text + 2, (size_t)(end - text - 2), out);	/* "+ ", "- ", "  " */
			kb_buf_append(out, "\n", 1);
		}
		if (clen == 3 && strncmp(cls, keep, 3) == 0)
			(*changed)++;
		p = end;
	}
}

static int
lcs_len(char **a, int n, char **b, int m)
{
	int	*t = calloc((size_t)(n + 1) * (size_t)(m + 1), sizeof(int)), r;

	for (int i = n - 1; i >= 0; i--)
		for (int j = m - 1; j >= 0; j--)
			t[i * (m + 1) + j] = strcmp(a[i], b[j]) == 0 ? t[(i + 1) * (m + 1) + j + 1] + 1 :
				t[(i + 1) * (m + 1) + j] > t[i * (m + 1) + j + 1] ?
				t[(i + 1) * (m + 1) + j] : t[i * (m + 1) + j + 1];
	r = t[0];
	free(t);
	return r;
}

static int
split(char *s, char **lines)
{
	int	n = 0;

	for (char *p = s; *p;) {
		char *nl = strchr(p, '\n');

		lines[n++] = p;
		if (nl == NULL)
			break;
		*nl = '\0';
		p = nl + 1;
	}
	return n;
}

static void
test_diff(void)
{
	static const struct { const char *old, *new; } cases[] = {
		{ "", "" },
		{ "", "a\nb\n" },
		{ "a\nb\n", "" },
		{ "a\nb\nc\n", "a\nb\nc\n" },
		{ "a\nb\nc\n", "a\nx\nc\n" },
		{ "a\nb\nc", "a\nb\nc\nd" },		/* no final line break */
		{ "x\na\nb\n", "a\nb\ny\n" },
		{ "a\na\nb\na\n", "b\na\na\nb\n" },
		{ "<tag attr=\"v\">&amp;\n'q'\n", "<tag attr=\"w\">&amp;\n'q'\n" },
		{ "\n\n\n", "\n\n" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct kb_buf	 d = KB_BUF_INIT(0), old = KB_BUF_INIT(0), new = KB_BUF_INIT(0);
		char		 want_old[256], want_new[256], *lo[64], *ln[64], *a, *b;
		int		 added = 0, removed = 0, no, nn, l;

		rpt_html_diff(cases[i].old, cases[i].new, &d);
		CHECKM(d.p != NULL && strncmp(d.p, "<pre class=\"diff\"", 17) == 0, "case %zu: %s", i,
		       d.p ? d.p : "(nothing)");
		CHECKM(d.p == NULL || (strstr(d.p, "<tag") == NULL && strstr(d.p, "'q'") == NULL),
		       "case %zu: unescaped text in the diff", i);
		side(d.p ? d.p : "", "del", &old, &removed);
		side(d.p ? d.p : "", "add", &new, &added);
		/* each side rebuilt, lines ending in '\n' (a last line without one gains it) */
		snprintf(want_old, sizeof(want_old), "%s%s", cases[i].old,
			 cases[i].old[0] && cases[i].old[strlen(cases[i].old) - 1] != '\n' ? "\n" : "");
		snprintf(want_new, sizeof(want_new), "%s%s", cases[i].new,
			 cases[i].new[0] && cases[i].new[strlen(cases[i].new) - 1] != '\n' ? "\n" : "");
		CHECKM(strcmp(old.p ? old.p : "", want_old) == 0, "case %zu: old rebuilt as '%s'", i,
		       old.p ? old.p : "");
		CHECKM(strcmp(new.p ? new.p : "", want_new) == 0, "case %zu: new rebuilt as '%s'", i,
		       new.p ? new.p : "");
		/* as short as can be: every line outside a longest common subsequence */
		a = strdup(cases[i].old);
		b = strdup(cases[i].new);
		no = cases[i].old[0] ? split(a, lo) : 0;
		nn = cases[i].new[0] ? split(b, ln) : 0;
		l = lcs_len(lo, no, ln, nn);
		CHECKM(removed == no - l && added == nn - l, "case %zu: -%d +%d, want -%d +%d", i,
		       removed, added, no - l, nn - l);
		free(a);
		free(b);
		kb_buf_clear(&d);
		kb_buf_clear(&old);
		kb_buf_clear(&new);
	}
}

static void
test_escape(void)
{
	struct kb_buf	b = KB_BUF_INIT(0);

	rpt_xml_escape(&b, "<script>alert('x')</script> & \"q\"\x01\t\n");
	CHECKM(b.p != NULL && strcmp(b.p, "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; "
				   "&quot;q&quot;\xEF\xBF\xBD\t\n") == 0, "escaped as '%s'", b.p);
	kb_buf_clear(&b);
	rpt_xml_escape(&b, NULL);
	CHECK(b.len == 0);
	kb_buf_clear(&b);
}

static void
test_csv(void)
{
	json_t		*row = json_object(), *models;
	struct kb_buf	 b = KB_BUF_INIT(0);
	const char	*line;
	const char	*want = "\"a,b\",\"say \"\"hi\"\"\nthere\",,,3,,,,,true,0.10000000000000001,";

	for (const struct rpt_column *c = rpt_turn_columns; c->name != NULL; c++)
		json_object_set_new(row, c->name, json_null());
	json_object_set_new(row, "run", json_string("a,b"));
	json_object_set_new(row, "task", json_string("say \"hi\"\nthere"));
	json_object_set_new(row, "turn", json_integer(3));
	json_object_set_new(row, "speedup", json_real(0.1));
	json_object_set_new(row, "correct", json_true());
	models = json_pack("[{s:[{s:[o]}]}]", "tasks", "rows", row);
	CHECK(rpt_csv_write(models, &b) == 0);
	line = b.p != NULL ? strstr(b.p, "\r\n") : NULL;
	CHECKM(line != NULL && strncmp(line + 2, want, strlen(want)) == 0, "CSV row: %s",
	       line ? line + 2 : "(none)");
	CHECKM(b.p != NULL && strncmp(b.p, "run,task,level,problem,turn,", 28) == 0, "header: %s", b.p);
	json_decref(models);
	kb_buf_clear(&b);
}

int
main(void)
{
	test_diff();
	test_escape();
	test_csv();
	if (failures == 0)
		printf("ok\n");
	return failures == 0 ? 0 : 1;
}
