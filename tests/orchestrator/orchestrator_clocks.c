/*
 * orchestrator_clocks.c: gpus.lock_clocks (orchestrator/clocks.c) against an nvidia-smi of
 * the test's ($KFORGE_NVIDIA_SMI, a shell script that logs its arguments and answers as a
 * host that permits the lock, or as one that refuses it for GPU 1): nothing is asked on
 * the CPU or with the key off; each GPU is locked at its maximum SM clock and given back
 * at the end; a refusal names its reason, and the GPUs locked before it are given back.
 * No GPU of this machine is touched (the real nvidia-smi never runs).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "orchestrator/orch_int.h"
#include "kb_check.h"

static char	dir[] = "/tmp/kforge-clocks-XXXXXX";
static char	log_path[300], smi_path[300];

static const char smi_script[] =
	"#!/bin/sh\n"
	"echo \"$*\" >> \"$(dirname \"$0\")/calls.log\"\n"
	"case \"$*\" in\n"
	"  *clocks.max.sm*) echo 1980 ;;\n"
	"  *'-i 1 -lgc'*) [ -e \"$(dirname \"$0\")/refuse\" ] && "
	"{ echo 'Setting locked GPU clocks is not supported for GPU 1: Insufficient Permissions'; exit 4; } ;;\n"
	"esac\n"
	"exit 0\n";

static char *
calls(void)
{
	char	*text = NULL;
	size_t	 n;

	if (kb_read_file(log_path, 1 << 16, &text, &n) < 0)
		return strdup("");
	return text;
}

static json_t *
two_gpus(void)
{
	return json_pack("[{s:i, s:s}, {s:i, s:s}]", "index", 0, "name", "NVIDIA H200", "index",
			 1, "name", "NVIDIA H200");
}

int
main(void)
{
	struct kb_config	 cfg = { 0 };
	json_t			*gpus = two_gpus(), *c;
	char			*log, refuse[320];
	FILE			*f;

	kb_log_init("test", 2);
	CHECK(mkdtemp(dir) != NULL);
	snprintf(log_path, sizeof(log_path), "%s/calls.log", dir);
	snprintf(smi_path, sizeof(smi_path), "%s/nvidia-smi", dir);
	snprintf(refuse, sizeof(refuse), "%s/refuse", dir);
	CHECK((f = fopen(smi_path, "w")) != NULL);
	fputs(smi_script, f);
	fclose(f);
	CHECK(chmod(smi_path, 0755) == 0);
	setenv("KFORGE_NVIDIA_SMI", smi_path, 1);

	/* The CPU, and the key off: nothing asked of nvidia-smi. */
	cfg.eval.device = (char *)"cpu";
	cfg.gpus.lock_clocks = true;
	c = orch_clocks_lock(&cfg, gpus);
	CHECK(json_is_false(json_object_get(c, "locked")) &&
	      strcmp(json_string_value(json_object_get(c, "why")), "the run is on the CPU") == 0);
	json_decref(c);
	cfg.eval.device = (char *)"cuda";
	cfg.gpus.lock_clocks = false;
	c = orch_clocks_lock(&cfg, gpus);
	CHECK(json_is_false(json_object_get(c, "locked")) &&
	      strstr(json_string_value(json_object_get(c, "why")), "gpus.lock_clocks") != NULL);
	orch_clocks_unlock(c);
	json_decref(c);
	log = calls();
	CHECKM(log[0] == '\0', "nvidia-smi was asked: %s", log);
	free(log);

	/* Permitted: each GPU at its maximum, given back at the end. */
	cfg.gpus.lock_clocks = true;
	c = orch_clocks_lock(&cfg, gpus);
	CHECK(json_is_true(json_object_get(c, "locked")) && json_is_null(json_object_get(c, "why")) &&
	      json_array_size(json_object_get(c, "devices")) == 2 &&
	      json_integer_value(json_object_get(json_array_get(json_object_get(c, "devices"), 1),
						 "mhz")) == 1980);
	orch_clocks_unlock(c);
	json_decref(c);
	log = calls();
	CHECKM(strstr(log, "-i 0 -lgc 1980,1980\n") != NULL && strstr(log, "-i 1 -lgc 1980,1980\n")
	       != NULL && strstr(log, "-i 0 -rgc\n") != NULL && strstr(log, "-i 1 -rgc\n") != NULL,
	       "lock and unlock of both GPUs: %s", log);
	free(log);

	/* Refused for GPU 1: not locked, the reason named, GPU 0 given back at once. */
	unlink(log_path);
	CHECK((f = fopen(refuse, "w")) != NULL);
	fclose(f);
	c = orch_clocks_lock(&cfg, gpus);
	CHECK(json_is_false(json_object_get(c, "locked")) &&
	      strstr(json_string_value(json_object_get(c, "why")), "Insufficient Permissions") != NULL &&
	      json_array_size(json_object_get(c, "devices")) == 0);
	log = calls();
	CHECKM(strstr(log, "-i 0 -lgc") != NULL && strstr(log, "-i 0 -rgc\n") != NULL &&
	       strstr(log, "-i 1 -rgc") == NULL, "GPU 0 given back, GPU 1 never locked: %s", log);
	free(log);
	unlink(log_path);
	orch_clocks_unlock(c);	/* nothing locked: nothing asked */
	log = calls();
	CHECKM(log[0] == '\0', "an unlock of nothing asked nvidia-smi: %s", log);
	free(log);
	json_decref(c);

	json_decref(gpus);
	if (failures == 0)
		(void)kb_rmtree(dir);
	return failures ? 1 : 0;
}
