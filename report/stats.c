/*
 * stats.c: the statistics of the report's comparisons and of `kforge subset`, pure
 * functions of numbers (no run directory): the unbiased fast_p@k estimator, a seeded
 * random generator, the paired bootstrap that judges whether two runs differ beyond
 * their own noise, and k-medoids (PAM: build, then swap) over standardized vectors.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "report/report_int.h"
#include "base/banned.h"

/* 1 - C(n-c, k)/C(n, k), as the product over i in n-c+1..n of (1 - k/i): no factorial
 * that overflows, and exactly 1 when fewer than k samples fail. */
double
rpt_fast_at_k(int n, int c, int k)
{
	double	miss = 1.0;

	if (n <= 0 || k <= 0 || k > n || c < 0 || c > n)
		return NAN;
	if (n - c < k)
		return 1.0;
	for (int i = n - c + 1; i <= n; i++)
		miss *= 1.0 - (double)k / i;
	return 1.0 - miss;
}

/* splitmix64: small, fast, and the same sequence on every machine for a seed. */
uint64_t
rpt_rand_next(uint64_t *state)
{
	uint64_t	z = (*state += UINT64_C(0x9E3779B97F4A7C15));

	z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
	return z ^ (z >> 31);
}

/* Uniform in 0..n-1 (n > 0), by rejection so that no value is favoured. */
int
rpt_rand_below(uint64_t *state, int n)
{
	uint64_t	limit = UINT64_MAX - UINT64_MAX % (uint64_t)n, r;

	do
		r = rpt_rand_next(state);
	while (r >= limit);
	return (int)(r % (uint64_t)n);
}

static int
cmp_double(const void *a, const void *b)
{
	double	x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

int
rpt_paired_bootstrap(const double *a, const double *b, int n, int resamples, uint64_t seed,
		      struct rpt_bootstrap *out)
{
	double	*means, sum = 0;

	memset(out, 0, sizeof(*out));
	if (n <= 0 || resamples < 10)
		return -KB_EINVAL;
	if ((means = malloc((size_t)resamples * sizeof(*means))) == NULL)
		return -KB_ENOMEM;
	for (int i = 0; i < n; i++)
		sum += b[i] - a[i];
	out->diff = sum / n;
	for (int r = 0; r < resamples; r++) {
		double	s = 0;

		for (int i = 0; i < n; i++) {
			int j = rpt_rand_below(&seed, n);

			s += b[j] - a[j];
		}
		means[r] = s / n;
	}
	qsort(means, (size_t)resamples, sizeof(*means), cmp_double);
	/* the 2.5th and 97.5th percentiles, by nearest rank */
	out->lo = means[(int)floor(0.025 * (resamples - 1) + 0.5)];
	out->hi = means[(int)floor(0.975 * (resamples - 1) + 0.5)];
	out->beyond_noise = out->lo > 0 || out->hi < 0;
	free(means);
	return 0;
}

void
rpt_standardize(double *x, int n, int dim)
{
	for (int d = 0; d < dim; d++) {
		double	mean = 0, var = 0, sd;

		for (int i = 0; i < n; i++)
			mean += x[(size_t)i * dim + d];
		mean /= n > 0 ? n : 1;
		for (int i = 0; i < n; i++) {
			double	dx = x[(size_t)i * dim + d] - mean;

			var += dx * dx;
		}
		sd = n > 1 ? sqrt(var / n) : 0;
		/* a column every problem shares tells nothing apart: it drops out */
		for (int i = 0; i < n; i++)
			x[(size_t)i * dim + d] = sd > 1e-12 ? (x[(size_t)i * dim + d] - mean) / sd : 0;
	}
}

static int
cmp_int_asc(const void *a, const void *b)
{
	return (*(const int *)a > *(const int *)b) - (*(const int *)a < *(const int *)b);
}

/* The cost of medoid set med: every point's distance to its nearest medoid, summed. */
static double
medoid_cost(const double *dist, int n, const int *med, int k)
{
	double	cost = 0;

	for (int i = 0; i < n; i++) {
		double	best = INFINITY;

		for (int m = 0; m < k; m++)
			if (dist[(size_t)i * n + med[m]] < best)
				best = dist[(size_t)i * n + med[m]];
		cost += best;
	}
	return cost;
}

int
rpt_kmedoids(const double *x, int n, int dim, int k, int *medoids, double *cost_out)
{
	double	*dist, cost;
	bool	*is_med;

	if (k < 1 || k > n || n > RPT_KMEDOIDS_MAX)
		return -KB_EINVAL;
	if ((dist = malloc((size_t)n * n * sizeof(*dist))) == NULL)
		return -KB_ENOMEM;
	if ((is_med = calloc((size_t)n, sizeof(*is_med))) == NULL) {
		free(dist);
		return -KB_ENOMEM;
	}
	for (int i = 0; i < n; i++)
		for (int j = 0; j < n; j++) {
			double	s = 0;

			for (int d = 0; d < dim; d++) {
				double	dd = x[(size_t)i * dim + d] - x[(size_t)j * dim + d];

				s += dd * dd;
			}
			dist[(size_t)i * n + j] = sqrt(s);
		}
	/* build: each next medoid is the point that lowers the cost most (lowest index on
	 * a tie, so the result is the same on every run) */
	for (int m = 0; m < k; m++) {
		int	best = -1;
		double	best_cost = INFINITY;

		for (int c = 0; c < n; c++) {
			if (is_med[c])
				continue;
			medoids[m] = c;
			if ((cost = medoid_cost(dist, n, medoids, m + 1)) < best_cost - 1e-12) {
				best_cost = cost;
				best = c;
			}
		}
		medoids[m] = best;
		is_med[best] = true;
	}
	cost = medoid_cost(dist, n, medoids, k);
	/* swap: the best exchange of a medoid for a non-medoid while one lowers the cost */
	for (int iter = 0; iter < 1000; iter++) {
		int	best_m = -1, best_o = -1;
		double	best_cost = cost;

		for (int m = 0; m < k; m++) {
			int	keep = medoids[m];

			for (int o = 0; o < n; o++) {
				double	c;

				if (is_med[o])
					continue;
				medoids[m] = o;
				if ((c = medoid_cost(dist, n, medoids, k)) < best_cost - 1e-9) {
					best_cost = c;
					best_m = m;
					best_o = o;
				}
			}
			medoids[m] = keep;
		}
		if (best_m < 0)
			break;
		is_med[medoids[best_m]] = false;
		medoids[best_m] = best_o;
		is_med[best_o] = true;
		cost = best_cost;
	}
	qsort(medoids, (size_t)k, sizeof(*medoids), cmp_int_asc);
	if (cost_out != NULL)
		*cost_out = cost;
	free(is_med);
	free(dist);
	return 0;
}
