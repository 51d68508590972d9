/*
 * report_stats.c: the statistics of the comparisons and of `kforge subset`: the
 * fast_p@k estimator against hand-computed cases, k-medoids on a synthetic set with
 * planted clusters (the medoids are the planted centres, raw and standardized), the
 * seeded generator's repeatability and the paired bootstrap's verdicts.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/report_int.h"
#include "kb_check.h"

static void
check_near(double got, double want, const char *what)
{
	if (!(fabs(got - want) < 1e-12)) {
		fprintf(stderr, "%s: got %.15g, want %.15g\n", what, got, want);
		failures++;
	}
}

/* fast_p@k = 1 - C(n-c, k)/C(n, k), worked by hand. */
static void
test_fast_at_k(void)
{
	check_near(rpt_fast_at_k(5, 2, 2), 1.0 - 3.0 / 10.0, "n5 c2 k2");	/* C(3,2)/C(5,2) */
	check_near(rpt_fast_at_k(5, 2, 1), 2.0 / 5.0, "n5 c2 k1");		/* c/n */
	check_near(rpt_fast_at_k(4, 1, 3), 1.0 - 1.0 / 4.0, "n4 c1 k3");	/* C(3,3)/C(4,3) */
	check_near(rpt_fast_at_k(10, 3, 4), 1.0 - 35.0 / 210.0, "n10 c3 k4");	/* C(7,4)/C(10,4) */
	check_near(rpt_fast_at_k(3, 0, 3), 0.0, "none fast");
	check_near(rpt_fast_at_k(3, 2, 2), 1.0, "fewer than k fail");
	check_near(rpt_fast_at_k(1, 1, 1), 1.0, "one of one");
	CHECK(isnan(rpt_fast_at_k(3, 1, 4)) && isnan(rpt_fast_at_k(3, 4, 1)) &&
	      isnan(rpt_fast_at_k(0, 0, 1)));
}

/* Four clusters in 3-D, each a centre and six points at +-spread on each axis: the centre
 * is the one point of its cluster nearest all the others, so PAM must return exactly the
 * centres, whatever order the points come in. */
static void
test_kmedoids_planted(bool standardize)
{
	static const double centres[4][3] = {
		{ 0, 0, 0 }, { 10, 0, 0 }, { 0, 12, 3 }, { -9, -9, 9 },
	};
	double	x[28 * 3];
	int	centre_at[4], n = 0, med[4];
	uint64_t seed = 7;

	for (int c = 0; c < 4; c++) {
		for (int p = 0; p < 7; p++) {
			double spread = 1.0 + 0.25 * c;

			for (int d = 0; d < 3; d++)
				x[n * 3 + d] = centres[c][d];
			if (p > 0)
				x[n * 3 + (p - 1) / 2] += (p % 2 ? spread : -spread);
			n++;
		}
	}
	/* shuffle the rows, remembering where each centre went */
	for (int i = n - 1; i > 0; i--) {
		int	j = rpt_rand_below(&seed, i + 1);
		double	t[3];

		memcpy(t, &x[i * 3], sizeof(t));
		memcpy(&x[i * 3], &x[j * 3], sizeof(t));
		memcpy(&x[j * 3], t, sizeof(t));
	}
	for (int c = 0; c < 4; c++)
		for (int i = 0; i < n; i++)
			if (x[i * 3] == centres[c][0] && x[i * 3 + 1] == centres[c][1] &&
			    x[i * 3 + 2] == centres[c][2])
				centre_at[c] = i;
	if (standardize)
		rpt_standardize(x, n, 3);
	CHECK(rpt_kmedoids(x, n, 3, 4, med, NULL) == 0);
	for (int c = 0; c < 4; c++) {
		bool	found = false;

		for (int m = 0; m < 4; m++)
			found |= med[m] == centre_at[c];
		if (!found) {
			fprintf(stderr, "planted centre %d (row %d) is not a medoid (%s): %d %d %d %d\n",
				c, centre_at[c], standardize ? "standardized" : "raw", med[0],
				med[1], med[2], med[3]);
			failures++;
		}
	}
	for (int m = 1; m < 4; m++)
		CHECK(med[m - 1] < med[m]);
	CHECK(rpt_kmedoids(x, n, 3, 0, med, NULL) == -KB_EINVAL);
	CHECK(rpt_kmedoids(x, n, 3, n + 1, med, NULL) == -KB_EINVAL);
}

/* With k = n every point is a medoid at cost 0; with k = 1 the medoid is the point of
 * least total distance (the middle of a line). */
static void
test_kmedoids_edges(void)
{
	double	line[5] = { 0, 1, 2, 3, 10 }, cost = -1;
	int	med[5];

	CHECK(rpt_kmedoids(line, 5, 1, 1, med, &cost) == 0);
	CHECK(med[0] == 2);
	check_near(cost, 2 + 1 + 0 + 1 + 8, "1-medoid cost");
	CHECK(rpt_kmedoids(line, 5, 1, 5, med, &cost) == 0);
	check_near(cost, 0, "n-medoid cost");
	CHECK(rpt_kmedoids(line, 5, 1, 2, med, &cost) == 0);
	CHECK(med[1] == 4 && (med[0] == 1 || med[0] == 2));
}

static void
test_bootstrap(void)
{
	double			a[40], b[40], c[40];
	struct rpt_bootstrap	r1, r2;
	uint64_t		s1 = 42, s2 = 42;

	CHECK(rpt_rand_next(&s1) == rpt_rand_next(&s2));
	for (int i = 0; i < 40; i++) {
		a[i] = i % 4 == 0;	/* 10 of 40 */
		b[i] = i % 4 != 3;	/* 30 of 40, every a also b */
		c[i] = (i % 4 == 1);	/* 10 of 40, other problems than a */
	}
	CHECK(rpt_paired_bootstrap(a, b, 40, 2000, 1, &r1) == 0);
	check_near(r1.diff, 0.5, "diff b-a");
	CHECK(r1.beyond_noise && r1.lo > 0 && r1.hi <= 1);
	CHECK(rpt_paired_bootstrap(a, c, 40, 2000, 1, &r2) == 0);
	check_near(r2.diff, 0, "diff c-a");
	CHECK(!r2.beyond_noise && r2.lo < 0 && r2.hi > 0);
	/* the same seed, the same interval */
	CHECK(rpt_paired_bootstrap(a, c, 40, 2000, 1, &r1) == 0);
	CHECK(r1.lo == r2.lo && r1.hi == r2.hi);
	CHECK(rpt_paired_bootstrap(a, a, 40, 2000, 1, &r1) == 0);
	CHECK(r1.diff == 0 && r1.lo == 0 && r1.hi == 0 && !r1.beyond_noise);
	CHECK(rpt_paired_bootstrap(a, b, 0, 2000, 1, &r1) == -KB_EINVAL);
}

int
main(void)
{
	test_fast_at_k();
	test_kmedoids_planted(false);
	test_kmedoids_planted(true);
	test_kmedoids_edges();
	test_bootstrap();
	if (failures > 0) {
		fprintf(stderr, "%d failure(s)\n", failures);
		return 1;
	}
	printf("ok\n");
	return 0;
}
