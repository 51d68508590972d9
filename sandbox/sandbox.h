/*
 * sandbox.h: what confines a runner (and the candidate code it imports) from the inside,
 * whoever started kforge: a Landlock ruleset and a seccomp filter the runner applies to
 * itself once it knows its request and before any candidate code runs. Namespaces and the
 * user switch are kb_spawn's (base); what paths a runner may use is feedback's policy
 * (run.c); this module only turns a policy into the kernel's rules.
 *
 *   landlock  reads everywhere but beneath the hidden roots (the run directory, its
 *             staging directory, the caches), save what the policy shows back; writes only
 *             beneath the writable paths (its scratch, and for a precompile its build);
 *             the GPU's and a few harmless device files read, written and ioctl'd; no TCP
 *             bind or connect (ABI 4).
 *   scope     (Landlock ABI 6) no signal to a process outside its own domain (the runner
 *             and what it starts), no connect to an abstract Unix socket made outside it.
 *             Landlock also refuses, from ABI 1, any ptrace or /proc read of a process
 *             outside the domain (environ, mem, maps): the supervisor's API key stays its.
 *   seccomp   refuses ptrace, process_vm_readv/writev, pidfd_getfd, sockets other than
 *             AF_UNIX, io_uring, userfaultfd, bpf, keyrings, mounts and namespace changes,
 *             module and kexec calls; on every thread of the process (TSYNC).
 *   namespaces a PID namespace of its own (the runner pid 2 beneath an init of its own,
 *             which kills what it leaves), a mount namespace with that namespace's /proc,
 *             and, for a runner that is not root, a user namespace to make them in. The
 *             runner enters them itself before the other layers (kforge_runner.py,
 *             enter_namespaces, through kforge_sandbox_enter_namespaces and
 *             kforge_sandbox_mount_proc; it does the forks), with calls the seccomp filter
 *             refuses afterwards; the probe tries the same steps as an unprivileged
 *             runner, and kb_sbx_apply leaves the layer to the runner.
 *
 * A layer the kernel lacks is named (kb_sbx_probe, `kforge doctor`); kb_sbx_apply with
 * strict set refuses to run without every layer, else applies what there is and says
 * what it left out. Landlock binds the calling thread only: the runner applies it while
 * it is the only thread, and kb_sbx_apply says (threads=N) when it was not.
 *
 * The functions here make system calls only; they keep no state and need no other kforge
 * module, so that libkforge_sandbox.so (the same code, for the Python runner through
 * ctypes) carries nothing else.
 */
#ifndef KFORGE_SANDBOX_H
#define KFORGE_SANDBOX_H

#include <stdbool.h>
#include <stddef.h>

#define KB_SBX_WHY	192

enum kb_sbx_layer {
	KB_SBX_LANDLOCK,	/* files (and TCP from ABI 4) */
	KB_SBX_SCOPE,		/* signals and abstract sockets (Landlock ABI 6) */
	KB_SBX_SECCOMP,
	KB_SBX_NAMESPACES,	/* user, PID and mount (the runner's own, probed here) */
	KB_SBX__LAYERS
};

struct kb_sbx_caps {
	int	landlock_abi;			/* 0: none */
	bool	have[KB_SBX__LAYERS];
	char	why[KB_SBX__LAYERS][KB_SBX_WHY];	/* why a layer is missing */
};

/* NULL-terminated path lists; every path absolute. */
struct kb_sbx_policy {
	const char *const *writable;	/* read, write, make, remove beneath */
	const char *const *hidden;	/* nothing beneath, but what visible or writable give */
	const char *const *visible;	/* read beneath, even inside a hidden root */
	bool	 scope_signals;		/* no signals out of the domain (not for the judge,
					 * which stops the candidate's runner) */
	bool	 strict;		/* a missing layer is an error */
	/* TCP and every socket family allowed (an agent, which talks to its own model):
	 * no Landlock network rule, and seccomp leaves socket() alone. */
	bool	 network;
};

const char *kb_sbx_layer_name(enum kb_sbx_layer l);
void	kb_sbx_probe(struct kb_sbx_caps *c);
/* 0 and what was applied in `applied` ("landlock=6 scope=1 seccomp=1 threads=1 ..."), or
 * -1 and the reason in err (strict and a layer missing, or a rule the kernel refused;
 * nothing of the failed layer is in force then, but an earlier layer may be). */
int	kb_sbx_apply(const struct kb_sbx_policy *p, char *applied, size_t alen, char *err,
		     size_t elen);

/* For ctypes: the policy as lines "writable PATH", "hidden PATH", "visible PATH",
 * "scope_signals", "strict", "network"; report gets kb_sbx_apply's applied or err. */
int	kforge_sandbox_apply(const char *spec, char *report, size_t reportlen);
/* The probe as one line: "landlock=7 scope=1 seccomp=1" and the reasons of what lacks. */
void	kforge_sandbox_probe(char *report, size_t reportlen);
/* The runner's namespaces (the steps the probe tries): a PID and a mount namespace, with
 * user a user namespace mapped to the caller's ids, then its mounts made private; 0, or
 * -1 with the step that failed in report. kforge_sandbox_mount_proc, in the namespace's
 * first process: a /proc of that namespace; 0 or -1 (errno). */
int	kforge_sandbox_enter_namespaces(int user, char *report, size_t reportlen);
int	kforge_sandbox_mount_proc(void);

#endif
