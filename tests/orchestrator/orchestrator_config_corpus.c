/*
 * orchestrator_config_corpus.c: runs the config fuzz target's body
 * (tests/orchestrator/fuzz_config.c) over every file of the given directories — the seed
 * corpus, the bad and good configs — so its properties are checked in every build,
 * without libFuzzer. A broken property aborts. Nothing here is config-specific: the
 * other fuzz targets (tests/CMakeLists.txt, KB_CORPUS_DRIVER) link it with their own LLVMFuzzerTestOneInput.
 *
 * Usage: orchestrator_config_corpus DIR...
 */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"

int	LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
main(int argc, char **argv)
{
	int	files = 0;

	for (int i = 1; i < argc; i++) {
		struct dirent	*de;
		DIR		*d = opendir(argv[i]);

		if (d == NULL) {
			fprintf(stderr, "cannot open %s: %s\n", argv[i], strerror(errno));
			return 1;
		}
		while ((de = readdir(d)) != NULL) {
			char	 path[4096], *text;
			size_t	 len;

			if (de->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "%s/%s", argv[i], de->d_name);
			if (kb_read_file(path, 1 << 20, &text, &len) < 0)
				continue;
			LLVMFuzzerTestOneInput((const uint8_t *)text, len);
			/* every prefix too: truncated documents are a parser's favourite */
			for (size_t cut = 0; cut < len; cut += 1 + len / 64)
				LLVMFuzzerTestOneInput((const uint8_t *)text, cut);
			free(text);
			files++;
		}
		closedir(d);
	}
	printf("%d files ok\n", files);
	return files > 0 ? 0 : 1;
}
