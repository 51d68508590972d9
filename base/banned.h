/*
 * banned.h: the C library's functions kforge does not call, each turned into a compile
 * error that names what to use instead (after git's banned.h). They overflow a buffer
 * they cannot see the size of (strcpy, strcat, sprintf, gets), truncate without saying
 * so or leave a string unterminated (strncpy, strncat), keep hidden state that a second
 * thread or a nested call overwrites (strtok, localtime, gmtime, ctime, asctime), return
 * 0 for "0", for "x" and for an overflow alike (atoi, atol, atof), hand a string to a
 * shell (system, popen: kb_spawn, base/spawn.c, is the one way to start a child), or
 * race for a file name (tmpnam, mktemp).
 *
 * Every .c file of the module folders includes this header last, after every system
 * and library header, whose declarations the macros would otherwise break; no header
 * includes it. tools/check_modules.py holds the sources to that, and the test
 * base_banned compiles a call of each function and expects it refused.
 * Macros only: any module may include it (kprof and sandbox, leaves that carry nothing
 * of kforge, too).
 */
#ifndef KFORGE_BANNED_H
#define KFORGE_BANNED_H

#define KB_BANNED(func, instead) sorry_##func##_is_banned_use_##instead

#undef strcpy
#define strcpy(...)	KB_BANNED(strcpy, snprintf)
#undef strcat
#define strcat(...)	KB_BANNED(strcat, snprintf_or_kb_buf)
#undef strncpy
#define strncpy(...)	KB_BANNED(strncpy, snprintf)
#undef strncat
#define strncat(...)	KB_BANNED(strncat, snprintf_or_kb_buf)
#undef sprintf
#define sprintf(...)	KB_BANNED(sprintf, snprintf)
#undef vsprintf
#define vsprintf(...)	KB_BANNED(vsprintf, vsnprintf)
#undef gets
#define gets(...)	KB_BANNED(gets, fgets)

#undef strtok
#define strtok(...)	KB_BANNED(strtok, strtok_r_or_strsep)

#undef atoi
#define atoi(...)	KB_BANNED(atoi, kb_parse_int_or_checked_strtol)
#undef atol
#define atol(...)	KB_BANNED(atol, kb_parse_int_or_checked_strtol)
#undef atof
#define atof(...)	KB_BANNED(atof, checked_strtod)

#undef localtime
#define localtime(...)	KB_BANNED(localtime, localtime_r)
#undef gmtime
#define gmtime(...)	KB_BANNED(gmtime, gmtime_r)
#undef ctime
#define ctime(...)	KB_BANNED(ctime, localtime_r_and_strftime)
#undef asctime
#define asctime(...)	KB_BANNED(asctime, strftime)

#undef system
#define system(...)	KB_BANNED(system, kb_spawn)
#undef popen
#define popen(...)	KB_BANNED(popen, kb_spawn)

#undef tmpnam
#define tmpnam(...)	KB_BANNED(tmpnam, mkstemp)
#undef mktemp
#define mktemp(...)	KB_BANNED(mktemp, mkstemp_or_mkdtemp)

#endif /* KFORGE_BANNED_H */
