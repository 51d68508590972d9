/* report.c: the report's files — `kforge report DIR... --csv`, `--svg DIR`, `--html FILE`
 * — over one run or several, all drawn from the run models (runmodel.c), whose tally is
 * the text report's (views.c). Files are written atomically; what was written and any
 * failure is a line on stderr (stdout carries only the CSV); a failure exits 1. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/report_int.h"
#include "base/banned.h"

static int
write_or_complain(const char *path, const struct kb_buf *b)
{
	int	rc = kb_write_atomic(path, b->p ? b->p : "", b->len);

	if (rc < 0) {
		fprintf(stderr, "kforge: cannot write %s: %s\n", path, kb_strerror(rc));
		return -1;
	}
	return 0;
}

static json_t *
load_models(const struct rpt_run *runs, int nruns, const char *const *accept)
{
	json_t	*models = json_array();

	for (int i = 0; i < nruns; i++) {
		json_t	*model = rpt_run_model(&runs[i], accept);

		if (model == NULL) {
			fprintf(stderr, "kforge: out of memory reading %s\n", runs[i].named);
			json_decref(models);
			return NULL;
		}
		json_array_append_new(models, model);
	}
	return models;
}

static int
write_svgs(json_t *models, const char *dir)
{
	int	rc = kb_mkdir_p(dir, 0755);

	if (rc < 0) {
		fprintf(stderr, "kforge: cannot create %s: %s\n", dir, kb_strerror(rc));
		return -1;
	}
	for (const struct rpt_plot *p = rpt_plots; p->name != NULL; p++) {
		struct kb_buf	b = KB_BUF_INIT(0);
		char		path[PATH_MAX];

		snprintf(path, sizeof(path), "%s/%s.svg", dir, p->name);
		kb_buf_printf(&b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
		p->draw(models, &b);
		rc = write_or_complain(path, &b);
		kb_buf_clear(&b);
		if (rc < 0)
			return -1;
	}
	fprintf(stderr, "kforge: wrote the plots to %s\n", dir);
	return 0;
}

int
rpt_cmd_report_files(const struct rpt_run *runs, int nruns, const char *const *accept,
		     const struct rpt_files *o)
{
	json_t	*models = load_models(runs, nruns, accept);
	int	 rc = 0;

	if (models == NULL)
		return 1;
	if (o->csv) {
		struct kb_buf b = KB_BUF_INIT(0);

		if (rpt_csv_write(models, &b) < 0) {
			fprintf(stderr, "kforge: the CSV is larger than %u MiB\n",
				KB_BUF_DEFAULT_CAP >> 20);
			rc = 1;
		} else if (b.len > 0 && (fwrite(b.p, 1, b.len, stdout) != b.len ||
					 fflush(stdout) != 0)) {
			fprintf(stderr, "kforge: cannot write the CSV: %s\n", strerror(errno));
			rc = 1;
		}
		kb_buf_clear(&b);
	}
	if (rc == 0 && o->svg_dir != NULL && write_svgs(models, o->svg_dir) < 0)
		rc = 1;
	if (rc == 0 && o->html != NULL) {
		struct kb_buf b = KB_BUF_INIT(0);

		if (rpt_html_page(models, NULL, &b) < 0) {
			fprintf(stderr, "kforge: the page is larger than %u MiB\n",
				KB_BUF_DEFAULT_CAP >> 20);
			rc = 1;
		} else if (write_or_complain(o->html, &b) < 0) {
			rc = 1;
		} else {
			fprintf(stderr, "kforge: wrote %s\n", o->html);
		}
		kb_buf_clear(&b);
	}
	json_decref(models);
	return rc;
}
