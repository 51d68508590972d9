#!/usr/bin/env python3
"""base/banned.h: a call of each banned function, in a file that includes the header last
as every .c file of kforge does, fails to compile with an error naming the function and
what to use instead; the same file calling the safe forms compiles without a warning
(the header breaks no system header's declarations, _FORTIFY_SOURCE's included).

Usage: base_banned.py CC SOURCE_DIR"""
import os
import subprocess
import sys
import tempfile

CC, ROOT = sys.argv[1], sys.argv[2]
FLAGS = ["-std=c11", "-D_GNU_SOURCE", "-D_FORTIFY_SOURCE=2", "-O2", "-Wall", "-Wextra",
         "-Werror", "-fsyntax-only", "-I", ROOT]
HEADERS = """#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>
#include <wchar.h>

#include "base/banned.h"
"""
# name: a call of it in f(char *b, size_t n, FILE *fp)
BANNED = {
    "strcpy": "strcpy(b, \"x\");",
    "strcat": "strcat(b, \"x\");",
    "strncpy": "strncpy(b, \"x\", n);",
    "strncat": "strncat(b, \"x\", n);",
    "sprintf": "sprintf(b, \"%d\", 1);",
    "vsprintf": "va_list ap; vsprintf(b, \"x\", ap);",
    "gets": "(void)gets(b);",
    "strtok": "(void)strtok(b, \",\");",
    "atoi": "(void)atoi(b);",
    "atol": "(void)atol(b);",
    "atof": "(void)atof(b);",
    "localtime": "time_t t = 0; (void)localtime(&t);",
    "gmtime": "time_t t = 0; (void)gmtime(&t);",
    "ctime": "time_t t = 0; (void)ctime(&t);",
    "asctime": "struct tm tm = { 0 }; (void)asctime(&tm);",
    "system": "(void)system(b);",
    "popen": "(void)popen(b, \"r\");",
    "tmpnam": "(void)tmpnam(b);",
    "mktemp": "(void)mktemp(b);",
}
SAFE = """char *save = NULL; time_t t = 0; struct tm tm; char *end;
snprintf(b, n, "%d", 1);
(void)strtok_r(b, ",", &save);
(void)strsep(&b, ",");
(void)strtol(b, &end, 10);
(void)strtod(b, &end);
(void)localtime_r(&t, &tm);
(void)gmtime_r(&t, &tm);
(void)strftime(b, n, "%F", &tm);
(void)fgets(b, (int)n, fp);
(void)mkstemp(b);
(void)mkdtemp(b);
(void)strnlen(b, n);
"""
failed = []


def check(cond, what):
    print("%s %s" % ("ok  " if cond else "FAIL", what), flush=True)
    if not cond:
        failed.append(what)


def compile_body(tmp, name, body):
    path = os.path.join(tmp, name + ".c")
    with open(path, "w") as f:
        f.write(HEADERS + "#include <stdarg.h>\n\nvoid f(char *b, size_t n, FILE *fp);\n\n"
                "void\nf(char *b, size_t n, FILE *fp)\n{\n\t(void)n; (void)fp;\n\t%s\n}\n"
                % body.replace("\n", "\n\t"))
    return subprocess.run([CC] + FLAGS + [path], capture_output=True, text=True)


with tempfile.TemporaryDirectory(prefix="kforge-banned-",
                                 dir=os.environ.get("KFORGE_TEST_TMP")) as tmp:
    p = compile_body(tmp, "safe", SAFE)
    check(p.returncode == 0, "the safe forms compile after base/banned.h: %s" % p.stderr.strip())
    for name, call in BANNED.items():
        p = compile_body(tmp, name, call)
        want = "sorry_%s_is_banned_use_" % name
        check(p.returncode != 0 and want in p.stderr,
              "%s refused, named (%s): %s" % (name, want, p.stderr.strip()[:300]
                                              if p.returncode == 0 or want not in p.stderr
                                              else "rc %d" % p.returncode))

print("%s: %d failed" % ("FAIL" if failed else "ok", len(failed)))
sys.exit(1 if failed else 0)
