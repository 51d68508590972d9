/*
 * search.c: the search over a task's turns (docs/search.md). Every turn is a node with a
 * parent (0: the problem alone), whose feedback its child is shown; which node comes
 * next is a pure function of the nodes recorded so far, the config and a seed, so that
 * a resumed worker picks what the killed one would have.
 *
 * The strategies are one table, a row each: how many nodes a round makes, which nodes it
 * keeps to expand, and which kept node(s) each of the next round's nodes is a child of.
 * fsm_search_next replays the rounds over the recorded nodes to find the next one's
 * parents; `chain` is the row whose every round is one node kept for the next.
 */
#include <string.h>

#include "fsm/fsm_int.h"
#include "base/banned.h"

/* A search's view of the recorded nodes: nodes[1..n] (nodes[0] is the root). */
struct search_view {
	const struct kb_config	*cfg;
	const struct fsm_node	*nodes;
	int			 n;
	uint64_t		 seed;	/* refinement.seed mixed with the task's id */
};

/* The rank of a node: a correct kernel, then one that built, then one that did not,
 * then no kernel; then the speedup; then the newer (so that a search with nothing
 * correct follows its latest attempt, as a chain does). */
static bool
better(const struct fsm_node *nodes, int a, int b)
{
	if (nodes[a].rank != nodes[b].rank)
		return nodes[a].rank > nodes[b].rank;
	if (nodes[a].speedup != nodes[b].speedup)
		return nodes[a].speedup > nodes[b].speedup;
	return a > b;
}

/* splitmix64 over the seed, the node count and a salt: a draw in [0, 1). */
static double
draw(const struct search_view *v, uint64_t salt)
{
	uint64_t	z = v->seed + 0x9e3779b97f4a7c15ULL * ((uint64_t)v->n * 4 + salt + 1);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	z ^= z >> 31;
	return (double)(z >> 11) / 9007199254740992.0;
}

static int
draw_below(const struct search_view *v, uint64_t salt, int n)
{
	int	i = (int)(draw(v, salt) * n);

	return i < n ? i : n - 1;
}

/* The best k of nodes from..to-1 into kept (best first); how many. */
static int
keep_best(const struct search_view *v, int from, int to, int k, bool correct_only, int *kept)
{
	int	n = 0;

	for (int i = from; i < to; i++) {
		int j = n, last = n < k ? n : k - 1;

		if (correct_only && v->nodes[i].rank < FSM_RANK_CORRECT)
			continue;
		while (j > 0 && better(v->nodes, i, kept[j - 1]))
			j--;
		if (j >= k)
			continue;
		for (int m = last; m > j; m--)
			kept[m] = kept[m - 1];
		kept[j] = i;
		if (n < k)
			n++;
	}
	return n;
}

/* ------------------------------------------------------------- the rows */

/* Round sizes: how many nodes round r makes from nkept kept nodes. */
static int
one_node(const struct search_view *v, int round, int nkept)
{
	(void)v, (void)round, (void)nkept;
	return 1;
}

static int
width_first(const struct search_view *v, int round, int nkept)
{
	(void)nkept;
	return round == 0 ? (int)v->cfg->refinement.width : 1;
}

static int
width_each(const struct search_view *v, int round, int nkept)
{
	(void)round;
	return nkept * (int)v->cfg->refinement.width;
}

/* What a round keeps: its nodes are from..to-1; kept holds what the last kept (nkept)
 * and gets what this one keeps (at most FSM_MAX_NODES + 1). */
static int
keep_last(const struct search_view *v, int from, int to, int *kept, int nkept)
{
	(void)v, (void)from, (void)nkept;
	kept[0] = to - 1;
	return 1;
}

static int
keep_the_best(const struct search_view *v, int from, int to, int *kept, int nkept)
{
	(void)nkept;
	return keep_best(v, from, to, 1, false, kept);
}

static int
keep_beam(const struct search_view *v, int from, int to, int *kept, int nkept)
{
	(void)nkept;
	return keep_best(v, from, to, (int)v->cfg->refinement.keep, false, kept);
}

/* Every node so far and the problem: any may be expanded. */
static int
keep_all(const struct search_view *v, int from, int to, int *kept, int nkept)
{
	(void)v, (void)from, (void)nkept;
	for (int i = 0; i < to; i++)
		kept[i] = i;
	return to;
}

/* The pool: the best refinement.keep correct kernels so far; none yet, the best node. */
static int
keep_pool(const struct search_view *v, int from, int to, int *kept, int nkept)
{
	int	n;

	(void)from, (void)nkept;
	if ((n = keep_best(v, 1, to, (int)v->cfg->refinement.keep, true, kept)) > 0)
		return n;
	return keep_best(v, 1, to, 1, false, kept);
}

/* The parents of node j (0-based) of a round from the kept nodes. */
static void
pick_in_order(const struct search_view *v, const int *kept, int nkept, int j, int *p, int *p2)
{
	int	per = nkept > 0 ? (j / (int)v->cfg->refinement.width) : 0;

	*p = kept[per < nkept ? per : nkept - 1];
	*p2 = 0;
}

/* tree: the best node so far, or with probability explore any node (the problem too). */
static void
pick_tree(const struct search_view *v, const int *kept, int nkept, int j, int *p, int *p2)
{
	int	best = 0;

	(void)j;
	*p2 = 0;
	if (nkept <= 1 || draw(v, 0) < v->cfg->refinement.explore) {
		*p = kept[draw_below(v, 1, nkept)];
		return;
	}
	for (int i = 1; i < nkept; i++)
		if (best == 0 || better(v->nodes, kept[i], best))
			best = kept[i];
	*p = best;
}

/* evolve: two distinct members of the pool, the better one the parent whose feedback is
 * shown; with probability explore (or a pool of one), one parent. */
static void
pick_evolve(const struct search_view *v, const int *kept, int nkept, int j, int *p, int *p2)
{
	int	a, b;

	(void)j;
	a = kept[draw_below(v, 0, nkept)];
	*p = a;
	*p2 = 0;
	if (nkept < 2 || draw(v, 1) < v->cfg->refinement.explore)
		return;
	b = kept[draw_below(v, 2, nkept - 1)];
	if (b == a)
		b = kept[nkept - 1];
	*p = better(v->nodes, a, b) ? a : b;
	*p2 = *p == a ? b : a;
}

struct search_strategy {
	const char	*name;
	int		(*round_size)(const struct search_view *v, int round, int nkept);
	int		(*keep)(const struct search_view *v, int from, int to, int *kept, int nkept);
	void		(*pick)(const struct search_view *v, const int *kept, int nkept, int j,
				int *p, int *p2);
};

static const struct search_strategy strategies[] = {
	/* each node refines the one before: the paper's multi-turn refinement */
	{ "chain", one_node, keep_last, pick_in_order },
	/* width nodes from the problem, then a chain from the best of them */
	{ "best_of_n", width_first, keep_the_best, pick_in_order },
	/* width children of each kept node per round; the best keep of a round are kept */
	{ "beam", width_each, keep_beam, pick_in_order },
	/* any node so far expanded: the best, or at random with probability explore */
	{ "tree", one_node, keep_all, pick_tree },
	/* width nodes from the problem, then children of one or two of the best keep
	 * correct kernels (the pool) */
	{ "evolve", width_first, keep_pool, pick_evolve },
};
#define NSTRATEGIES ((int)(sizeof(strategies) / sizeof(strategies[0])))

const char *const *
fsm_strategy_names(void)
{
	static const char *names[NSTRATEGIES + 1];

	for (int i = 0; i < NSTRATEGIES; i++)
		names[i] = strategies[i].name;
	names[NSTRATEGIES] = NULL;
	return names;
}

int
fsm_search_next(const struct kb_config *cfg, const char *task_id, const struct fsm_node *nodes,
		int n, int *parent, int *parent2)
{
	const struct search_strategy	*s = &strategies[0];
	struct search_view		 v = { cfg, nodes, n, 0 };
	int				 kept[FSM_MAX_NODES + 1], nkept = 1, start = 1, size;

	for (int i = 0; i < NSTRATEGIES; i++)
		if (cfg->refinement.strategy != NULL &&
		    strcmp(cfg->refinement.strategy, strategies[i].name) == 0)
			s = &strategies[i];
	if (n < 0 || n >= FSM_MAX_NODES)
		return -KB_EINVAL;
	v.seed = kb_fnv1a(0xcbf29ce484222325ULL ^ (uint64_t)cfg->refinement.seed, task_id,
			  strlen(task_id));
	kept[0] = 0;
	for (int round = 0;; round++) {
		size = s->round_size(&v, round, nkept);
		if (size < 1)
			size = 1;
		if (n + 1 < start + size) {
			s->pick(&v, kept, nkept, n + 1 - start, parent, parent2);
			return 0;
		}
		nkept = s->keep(&v, start, start + size, kept, nkept);
		start += size;
		if (nkept < 1) {	/* nothing to expand: the problem again */
			kept[0] = 0;
			nkept = 1;
		}
	}
}

int
fsm_node_of_record(const json_t *d, int turn, struct fsm_node *out)
{
	const char	*verdict = json_string_value(json_object_get(d, "verdict"));
	const char	*status = json_string_value(json_object_get(d, "status"));
	json_t		*v;
	bool		 correct;

	memset(out, 0, sizeof(*out));
	out->parent = rd_node_named(d, RD_NODE_PARENT, turn, turn - 1);
	out->parent2 = rd_node_named(d, RD_NODE_PARENT2, turn, 0);
	/* Only a correct verdict counts, as the worker's best and the report's fast_p. */
	correct = json_is_true(json_object_get(d, "correct")) &&
		  (verdict == NULL || strcmp(verdict, RD_VERDICT_CORRECT) == 0);
	out->speedup = -1;
	if (correct) {
		out->rank = FSM_RANK_CORRECT;
		v = json_object_get(d, "speedup");
		out->speedup = json_is_number(v) && json_number_value(v) > 0 ?
			       json_number_value(v) : 0;
	} else if (json_is_true(json_object_get(d, "compiled")))
		out->rank = FSM_RANK_BUILT;
	else if (status != NULL && strcmp(status, "no_code") != 0)
		out->rank = FSM_RANK_CODE;
	else
		out->rank = FSM_RANK_NONE;
	return 0;
}
