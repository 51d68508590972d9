/* viewer.c: `kforge view DIR` — the report page served live with libmicrohttpd (no
 * hand-written HTTP), read-only, on loopback unless --bind says otherwise.
 *
 *   GET /          the page (html.c), rendered anew from the trajectories per request
 *   GET /stamp     what changes when the run moves on; the page polls it and redraws
 *   GET /files/REL a file of the run directory as text/plain: REL is refused (403) if
 *                  any component is empty, "." or "..", and whatever it resolves to,
 *                  links included, must be a regular file inside the run directory
 *
 * Anything else is 404; methods other than GET and HEAD 405. The Host header must name
 * this server (a page elsewhere cannot reach it through a rebound DNS name). Bounded:
 * connections, per-client connections, request memory, idle time, file size. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <microhttpd.h>
#include <pthread.h>

#include "report/report_int.h"
#include "base/banned.h"

#define VIEW_MAX_CONNECTIONS	64
#define VIEW_MAX_PER_CLIENT	32
#define VIEW_CONN_MEMORY	(64 * 1024)	/* a request's headers and URL */
#define VIEW_IDLE_TIMEOUT_S	30
#define VIEW_FILE_MAX		(64 << 20)

/* The page forbids anything but its own inline style and script and requests to this
 * server (the stamp and the page again). */
#define PAGE_CSP "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; " \
		 "connect-src 'self'; img-src data:; base-uri 'none'; form-action 'none'; "  \
		 "frame-ancestors 'none'"

struct viewer {
	char	dir[PATH_MAX];		/* the run directory, as opened */
	char	real[PATH_MAX];		/* resolved: the only tree files are served from */
	char	hosts[4][96];		/* Host header values accepted */
	int	nhosts;
	bool	wildcard;		/* bound to every address: any literal address */
	int	port;
	/* The run as opened once (its config and task list are frozen), and the last page
	 * rendered with the stamp it was rendered at: a poll of an unchanged run gets the
	 * same page without reading a log again. The server's one thread is the only user. */
	const struct rpt_run	*run;
	char			 page_stamp[32];
	char			*page;
	size_t			 page_len;
};

/* Whether a Host header names this server: one of the names it was bound as, or, bound
 * to every address, any numeric address with its port. A DNS name never passes (but
 * localhost), so that a page elsewhere cannot reach the viewer by rebinding one. */
static bool
host_ok(const struct viewer *v, const char *host)
{
	char		 name[96], port[8];
	unsigned char	 addr[16];
	const char	*colon;
	size_t		 n;

	if (host == NULL)
		return false;
	for (int i = 0; i < v->nhosts; i++)
		if (strcmp(host, v->hosts[i]) == 0)
			return true;
	if (!v->wildcard || (colon = strrchr(host, ':')) == NULL)
		return false;
	snprintf(port, sizeof(port), "%d", v->port);
	n = (size_t)(colon - host);
	if (strcmp(colon + 1, port) != 0 || n >= sizeof(name))
		return false;
	if (host[0] == '[' && n > 2 && host[n - 1] == ']') {
		snprintf(name, sizeof(name), "%.*s", (int)n - 2, host + 1);
		return inet_pton(AF_INET6, name, addr) == 1;
	}
	snprintf(name, sizeof(name), "%.*s", (int)n, host);
	return inet_pton(AF_INET, name, addr) == 1;
}

void
rpt_run_stamp(const struct rpt_run *run, char *out, size_t len)
{
	uint64_t	h = KB_FNV1A_START;	/* over sizes and times */
	char		path[PATH_MAX];
	struct stat	st;

	for (int i = -1; i < run->ntasks; i++) {
		int64_t v[3] = { 0, 0, 0 };

		if ((i < 0 ? rd_run_file(path, sizeof(path), run->dir, RD_RUN_JSON) :
		     rd_task_file(path, sizeof(path), run->dir, run->tasks[i].id, RD_TRAJECTORY)) < 0)
			continue;
		if (stat(path, &st) == 0) {
			v[0] = (int64_t)st.st_size;
			v[1] = (int64_t)st.st_mtim.tv_sec;
			v[2] = (int64_t)st.st_mtim.tv_nsec;
		}
		h = kb_fnv1a(h, v, sizeof(v));
	}
	snprintf(out, len, "%016llx", (unsigned long long)h);
}

static enum MHD_Result
send_text(struct MHD_Connection *c, unsigned status, const char *type, char *body, size_t n,
	  bool page)
{
	struct MHD_Response	*r = MHD_create_response_from_buffer(n, body,
								  MHD_RESPMEM_MUST_FREE);
	enum MHD_Result		 ok;

	if (r == NULL) {
		free(body);
		return MHD_NO;
	}
	MHD_add_response_header(r, "Content-Type", type);
	MHD_add_response_header(r, "Cache-Control", "no-store");
	MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
	MHD_add_response_header(r, "Content-Security-Policy", page ? PAGE_CSP : "default-src 'none'");
	ok = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ok;
}

static enum MHD_Result
send_error(struct MHD_Connection *c, unsigned status, const char *why)
{
	char *body = kb_asprintf("%u %s\n", status, why);

	return send_text(c, status, "text/plain; charset=utf-8", body, strlen(body), false);
}

static enum MHD_Result
serve_page(struct viewer *v, struct MHD_Connection *c, const char *rest)
{
	struct kb_buf	 b = KB_BUF_INIT(0);
	json_t		*models;
	char		 stamp[32], *copy;
	int		 rc;

	(void)rest;
	rpt_run_stamp(v->run, stamp, sizeof(stamp));	/* before reading: never newer */
	if (v->page == NULL || strcmp(stamp, v->page_stamp) != 0) {
		models = json_array();
		json_array_append_new(models, rpt_run_model(v->run, NULL));
		rc = rpt_html_page(models, stamp, &b);
		json_decref(models);
		if (rc < 0) {
			kb_buf_clear(&b);
			return send_error(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "the page is too "
					  "large to render; use kforge report --csv");
		}
		free(v->page);
		v->page_len = b.len;
		v->page = kb_buf_steal(&b);
		snprintf(v->page_stamp, sizeof(v->page_stamp), "%s", stamp);
	}
	if ((copy = malloc(v->page_len + 1)) == NULL)
		return MHD_NO;
	memcpy(copy, v->page, v->page_len);
	return send_text(c, MHD_HTTP_OK, "text/html; charset=utf-8", copy, v->page_len, true);
}

static enum MHD_Result
serve_stamp(struct viewer *v, struct MHD_Connection *c, const char *rest)
{
	char	stamp[32];

	(void)rest;
	rpt_run_stamp(v->run, stamp, sizeof(stamp));
	return send_text(c, MHD_HTTP_OK, "text/plain; charset=utf-8", kb_strdup(stamp),
			 strlen(stamp), false);
}

/* REL (already percent-decoded by libmicrohttpd) names a file under the run directory
 * only if every component is a plain name; what it resolves to must stay inside. */
static bool
rel_path_ok(const char *rel)
{
	const char *p = rel;

	if (*p == '\0' || strlen(rel) >= 1024 || strchr(rel, '\\') != NULL)
		return false;
	for (;;) {
		size_t n = strcspn(p, "/");

		if (n == 0 || (n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
			return false;
		if (p[n] == '\0')
			return true;
		p += n + 1;
	}
}

static enum MHD_Result
serve_file(struct viewer *v, struct MHD_Connection *c, const char *rel)
{
	char			 path[PATH_MAX], real[PATH_MAX];
	size_t			 n = strlen(v->real);
	struct stat		 st;
	struct MHD_Response	*r;
	enum MHD_Result		 ok;
	int			 fd;

	if (!rel_path_ok(rel))
		return send_error(c, MHD_HTTP_FORBIDDEN, "forbidden: not a path inside the run");
	if (snprintf(path, sizeof(path), "%s/%s", v->real, rel) >= (int)sizeof(path))
		return send_error(c, MHD_HTTP_FORBIDDEN, "forbidden: path too long");
	if (realpath(path, real) == NULL)
		return send_error(c, MHD_HTTP_NOT_FOUND, "not found");
	if (strncmp(real, v->real, n) != 0 || real[n] != '/')
		return send_error(c, MHD_HTTP_FORBIDDEN, "forbidden: outside the run directory");
	if ((fd = open(real, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) < 0)
		return send_error(c, MHD_HTTP_NOT_FOUND, "not found");
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return send_error(c, MHD_HTTP_NOT_FOUND, "not a file");
	}
	if (st.st_size > VIEW_FILE_MAX) {
		close(fd);
		return send_error(c, MHD_HTTP_CONTENT_TOO_LARGE, "file too large to serve");
	}
	if ((r = MHD_create_response_from_fd((uint64_t)st.st_size, fd)) == NULL) {
		close(fd);
		return MHD_NO;
	}
	/* As text whatever it holds: a reply's HTML is shown, never rendered. */
	MHD_add_response_header(r, "Content-Type", "text/plain; charset=utf-8");
	MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
	MHD_add_response_header(r, "Content-Security-Policy", "default-src 'none'; sandbox");
	MHD_add_response_header(r, "Cache-Control", "no-store");
	ok = MHD_queue_response(c, MHD_HTTP_OK, r);
	MHD_destroy_response(r);
	return ok;
}

static const struct {
	const char	*path;
	bool		 prefix;	/* path is a prefix; the rest goes to the handler */
	enum MHD_Result	(*serve)(struct viewer *, struct MHD_Connection *, const char *rest);
} routes[] = {
	{ "/", false, serve_page },
	{ "/index.html", false, serve_page },
	{ "/stamp", false, serve_stamp },
	{ "/files/", true, serve_file },
};

static enum MHD_Result
answer(void *cls, struct MHD_Connection *c, const char *url, const char *method,
       const char *version, const char *upload_data, size_t *upload_size, void **req)
{
	struct viewer	*v = cls;
	const char	*host = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Host");
	static int	 seen;

	(void)version;
	(void)upload_data;
	if (*req == NULL) {	/* the headers: answer once they are all in */
		*req = &seen;
		return MHD_YES;
	}
	if (*upload_size != 0)
		return send_error(c, MHD_HTTP_CONTENT_TOO_LARGE, "no request body is accepted");
	if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
		return send_error(c, MHD_HTTP_METHOD_NOT_ALLOWED, "read-only: GET and HEAD only");
	if (!host_ok(v, host))
		return send_error(c, MHD_HTTP_FORBIDDEN, "forbidden: unknown Host");
	for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++) {
		size_t n = strlen(routes[i].path);

		if (routes[i].prefix ? strncmp(url, routes[i].path, n) == 0 :
				       strcmp(url, routes[i].path) == 0)
			return routes[i].serve(v, c, url + (routes[i].prefix ? n : strlen(url)));
	}
	return send_error(c, MHD_HTTP_NOT_FOUND, "not found");
}

/* Serves v's run on addr:port until SIGINT or SIGTERM; the exit status. */
static int
serve(struct viewer *v, const char *addr, int port)
{
	struct sockaddr_storage	 ss = { 0 };
	struct sockaddr_in	*s4 = (struct sockaddr_in *)&ss;
	struct sockaddr_in6	*s6 = (struct sockaddr_in6 *)&ss;
	struct MHD_Daemon	*d;
	unsigned		 flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG;
	char			 url_host[80];
	sigset_t		 stop;
	socklen_t		 sslen = sizeof(ss);
	int			 sig, bound, fd = -1, one = 1;
	bool			 v6 = false;

	if (inet_pton(AF_INET, addr, &s4->sin_addr) == 1) {
		s4->sin_family = AF_INET;
		s4->sin_port = htons((uint16_t)port);
	} else if (inet_pton(AF_INET6, addr, &s6->sin6_addr) == 1) {
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons((uint16_t)port);
		flags |= MHD_USE_IPv6;
		v6 = true;
	} else {
		fprintf(stderr, "kforge view: --bind wants a numeric IPv4 or IPv6 address, got "
			"'%s'\n", addr);
		return 2;
	}
	/* The socket is bound here, so that its port (any free one for port 0) is known,
	 * and the Host names accepted set, before the server's thread starts. */
	if ((fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(fd, (struct sockaddr *)&ss, v6 ? sizeof(*s6) : sizeof(*s4)) < 0 ||
	    listen(fd, VIEW_MAX_CONNECTIONS) < 0 ||
	    getsockname(fd, (struct sockaddr *)&ss, &sslen) < 0) {
		fprintf(stderr, "kforge view: cannot listen on %s port %d: %s\n", addr, port,
			strerror(errno));
		if (fd >= 0)
			close(fd);
		return 1;
	}
	bound = ntohs(v6 ? s6->sin6_port : s4->sin_port);
	snprintf(url_host, sizeof(url_host), v6 ? "[%s]:%d" : "%s:%d", addr, bound);
	snprintf(v->hosts[v->nhosts++], sizeof(v->hosts[0]), "%s", url_host);
	snprintf(v->hosts[v->nhosts++], sizeof(v->hosts[0]), "localhost:%d", bound);
	snprintf(v->hosts[v->nhosts++], sizeof(v->hosts[0]), "127.0.0.1:%d", bound);
	snprintf(v->hosts[v->nhosts++], sizeof(v->hosts[0]), "[::1]:%d", bound);
	v->port = bound;
	v->wildcard = v6 ? IN6_IS_ADDR_UNSPECIFIED(&s6->sin6_addr) :
			  s4->sin_addr.s_addr == htonl(INADDR_ANY);
	/* Stopped by SIGINT or SIGTERM, taken by sigwait here: blocked before the server's
	 * thread starts, so that it inherits the mask. */
	sigemptyset(&stop);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &stop, NULL);
	signal(SIGPIPE, SIG_IGN);
	d = MHD_start_daemon(flags, 0, NULL, NULL, answer, v,
			     MHD_OPTION_LISTEN_SOCKET, fd,
			     MHD_OPTION_CONNECTION_LIMIT, (unsigned)VIEW_MAX_CONNECTIONS,
			     MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)VIEW_MAX_PER_CLIENT,
			     MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)VIEW_CONN_MEMORY,
			     MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)VIEW_IDLE_TIMEOUT_S,
			     MHD_OPTION_END);
	if (d == NULL) {
		fprintf(stderr, "kforge view: the HTTP server did not start on %s\n", url_host);
		close(fd);
		return 1;
	}
	printf("kforge view: serving %s at http://%s/ (read-only; Ctrl-C stops)\n", v->dir,
	       url_host);
	fflush(stdout);
	sigwait(&stop, &sig);
	MHD_stop_daemon(d);	/* closes the listening socket too */
	printf("kforge view: stopped\n");
	return 0;
}

int
rpt_cmd_viewer(const struct rpt_run *run, const char *addr, int port)
{
	struct viewer	 v = { .run = run };
	int		 rc;

	snprintf(v.dir, sizeof(v.dir), "%s", run->dir);
	if (realpath(v.dir, v.real) == NULL) {
		fprintf(stderr, "kforge: %s: %s\n", v.dir, strerror(errno));
		rc = 1;
	} else {
		rc = serve(&v, addr, port);
	}
	free(v.page);
	return rc;
}
