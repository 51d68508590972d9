/* test_fsm_search.c: the search's table (fsm/search.c, docs/search.md) as a pure function
 * of the recorded nodes — each strategy's parents over hand-made nodes, the same parents
 * for the same nodes (what resume relies on), other draws for another seed or task, and
 * the names the config offers. */
#include <string.h>

#include "fsm/fsm_int.h"

#include "kb_check.h"

static struct fsm_node nodes[FSM_MAX_NODES + 1];

static void
node(int k, int parent, enum fsm_rank rank, double speedup)
{
	nodes[k].parent = parent;
	nodes[k].parent2 = 0;
	nodes[k].rank = rank;
	nodes[k].speedup = rank == FSM_RANK_CORRECT ? speedup : -1;
}

static int
next(const struct kb_config *c, const char *task, int n, int *p2)
{
	int	p = -1, q = -1;

	CHECK(fsm_search_next(c, task, nodes, n, &p, &q) == 0);
	if (p2 != NULL)
		*p2 = q;
	return p;
}

static struct kb_config
config(const char *strategy, long width, long keep, double explore)
{
	struct kb_config c;

	memset(&c, 0, sizeof(c));
	c.refinement.strategy = (char *)strategy;
	c.refinement.turns = 32;
	c.refinement.width = width;
	c.refinement.keep = keep;
	c.refinement.explore = explore;
	return c;
}

int
main(void)
{
	struct kb_config	 c;
	const char *const	*names = fsm_strategy_names();
	int			 p2, n, i, same, differ;

	CHECK(names[0] != NULL && strcmp(names[0], "chain") == 0);
	for (n = 0; names[n] != NULL; n++)
		;
	CHECK(n == 5);

	/* chain: the turn before, whatever the nodes say */
	c = config("chain", 4, 2, 0.25);
	CHECK(next(&c, "t", 0, &p2) == 0 && p2 == 0);
	node(1, 0, FSM_RANK_CORRECT, 3.0);
	node(2, 1, FSM_RANK_NONE, 0);
	CHECK(next(&c, "t", 1, NULL) == 1);
	CHECK(next(&c, "t", 2, NULL) == 2);

	/* best_of_n (width 3): three from the problem, then the best of them, then a chain */
	c = config("best_of_n", 3, 2, 0.25);
	node(1, 0, FSM_RANK_BUILT, 0);
	node(2, 0, FSM_RANK_CORRECT, 0.5);
	node(3, 0, FSM_RANK_CORRECT, 1.5);
	CHECK(next(&c, "t", 1, NULL) == 0 && next(&c, "t", 2, NULL) == 0);
	CHECK(next(&c, "t", 3, NULL) == 3);
	node(3, 0, FSM_RANK_CODE, 0);
	CHECK(next(&c, "t", 3, NULL) == 2);
	node(4, 2, FSM_RANK_NONE, 0);
	CHECK(next(&c, "t", 4, NULL) == 4);

	/* beam (width 2, keep 2): round 0 is nodes 1-2 from the problem; round 1 is two
	 * children of the better, then two of the other; round 2 expands round 1's best two */
	c = config("beam", 2, 2, 0.25);
	node(1, 0, FSM_RANK_CORRECT, 1.0);
	node(2, 0, FSM_RANK_CORRECT, 2.0);
	CHECK(next(&c, "t", 1, NULL) == 0);
	CHECK(next(&c, "t", 2, NULL) == 2 && next(&c, "t", 3, NULL) == 2);
	node(3, 2, FSM_RANK_BUILT, 0);
	node(4, 2, FSM_RANK_CORRECT, 0.5);
	CHECK(next(&c, "t", 4, NULL) == 1);
	node(5, 1, FSM_RANK_CORRECT, 4.0);
	CHECK(next(&c, "t", 5, NULL) == 1);
	node(6, 1, FSM_RANK_NONE, 0);
	/* round 1 (3-6) kept: 5 (4.0x), then 4 (0.5x); a tie of ranks goes to the newer */
	CHECK(next(&c, "t", 6, NULL) == 5 && next(&c, "t", 7, NULL) == 5);
	CHECK(next(&c, "t", 8, NULL) == 4 && next(&c, "t", 9, NULL) == 4);
	c.refinement.keep = 1;	/* keep 1: round 1 is nodes 3-4, round 2 from the best of them */
	CHECK(next(&c, "t", 2, NULL) == 2 && next(&c, "t", 4, NULL) == 4);

	/* tree, explore 0: the best node so far; explore 1: any node, the problem included */
	c = config("tree", 2, 2, 0);
	CHECK(next(&c, "t", 0, NULL) == 0);
	CHECK(next(&c, "t", 6, NULL) == 5);
	node(7, 5, FSM_RANK_CORRECT, 4.0);	/* a tie of speedups: the newer */
	CHECK(next(&c, "t", 7, NULL) == 7);
	c.refinement.explore = 1;
	for (i = 0, same = 0; i < 64; i++) {
		char	task[16];
		int	p;

		snprintf(task, sizeof(task), "t%d", i);
		p = next(&c, task, 7, NULL);
		CHECK(p >= 0 && p <= 7);
		same += p == next(&c, task, 7, NULL);
	}
	CHECK(same == 64);	/* deterministic */
	for (i = 0, differ = 0; i < 64; i++) {
		c.refinement.seed = i;
		differ += next(&c, "t", 7, NULL) != next(&c, "t", 6, NULL);
	}
	CHECK(differ > 8);	/* the draw moves with the seed and the node count */

	/* evolve (width 2, keep 2, explore 0): two from the problem; then two parents of
	 * the pool, the better first; no correct node yet: the best node, alone */
	c = config("evolve", 2, 2, 0);
	node(1, 0, FSM_RANK_BUILT, 0);
	node(2, 0, FSM_RANK_CODE, 0);
	CHECK(next(&c, "t", 1, &p2) == 0 && p2 == 0);
	CHECK(next(&c, "t", 2, &p2) == 1 && p2 == 0);
	node(3, 1, FSM_RANK_CORRECT, 1.2);
	CHECK(next(&c, "t", 3, &p2) == 3 && p2 == 0);
	node(4, 3, FSM_RANK_CORRECT, 2.5);
	node(5, 3, FSM_RANK_CORRECT, 0.7);	/* the pool keeps 4 and 3 */
	CHECK(next(&c, "t", 5, &p2) == 4 && p2 == 3);
	c.refinement.explore = 1;	/* one parent, from the pool */
	n = next(&c, "t", 5, &p2);
	CHECK((n == 4 || n == 3) && p2 == 0);

	/* past the most nodes */
	c = config("chain", 1, 1, 0);
	CHECK(fsm_search_next(&c, "t", nodes, FSM_MAX_NODES, &n, &p2) == -KB_EINVAL);

	/* a FEEDBACK record read back: a log without parents is a chain */
	{
		struct fsm_node	 got;
		json_t		*d = json_pack("{s:b, s:s, s:f, s:b}", "correct", 1, "verdict",
					       "correct", "speedup", 1.5, "compiled", 1);

		fsm_node_of_record(d, 4, &got);
		CHECK(got.parent == 3 && got.parent2 == 0 && got.rank == FSM_RANK_CORRECT &&
		      got.speedup == 1.5);
		json_object_set_new(d, "parent", json_integer(1));
		json_object_set_new(d, "parent2", json_integer(2));
		json_object_set_new(d, "verdict", json_string("suspect"));
		fsm_node_of_record(d, 4, &got);
		CHECK(got.parent == 1 && got.parent2 == 2 && got.rank == FSM_RANK_BUILT);
		json_decref(d);
	}
	return failures ? 1 : 0;
}
