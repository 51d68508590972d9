/* main.c: the kforge executable; everything lives in the orchestrator library. */
#include "orchestrator/orchestrator.h"
#include "base/banned.h"

int
main(int argc, char **argv)
{
	return orch_main(argc, argv);
}
