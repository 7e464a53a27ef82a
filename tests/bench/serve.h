#ifndef RK_BENCH_SERVE_H
#define RK_BENCH_SERVE_H
/* For the benchmarks of `rakazo serve`: the server of binary bin on a free
 * loopback port, with a data directory of its own in a fresh temporary
 * directory (RAKAZO_DATA_DIR and RAKAZO_OWNER are set for the benchmark's
 * own commands too), and its end. */

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "engine/util/buf.h"
#include "engine/util/fs.h"
#include "engine/util/time.h"

struct rk_bench_serve {
	char dir[64], data[128];
	pid_t pid;
	char url[256], token[300]; /* the base URL and a bearer token */
};

/* Whether bin's serve has --providers (fake is offered only when named). */
static int rk_bench_serve_has_providers(const char *bin)
{
	char cmd[400];
	snprintf(cmd, sizeof(cmd), "'%s' serve --help 2>&1", bin);
	FILE *p = popen(cmd, "r");
	char line[512];
	int has = 0;
	while (p && fgets(line, sizeof(line), p))
		has |= strstr(line, "--providers") != NULL;
	if (p)
		pclose(p);
	return has;
}

/* Starts the server, offering the fake provider; 0 once it listens, -1
 * (said on stderr) otherwise. */
static int rk_bench_serve_start(struct rk_bench_serve *s, const char *name, const char *bin)
{
	int providers = rk_bench_serve_has_providers(bin);
	memset(s, 0, sizeof(*s));
	s->pid = -1;
	snprintf(s->dir, sizeof(s->dir), "/tmp/rakazo-%s.XXXXXX", name);
	if (!mkdtemp(s->dir)) {
		perror(name);
		s->dir[0] = '\0';
		return -1;
	}
	char tokf[160], urlf[160];
	snprintf(s->data, sizeof(s->data), "%s/data", s->dir);
	snprintf(tokf, sizeof(tokf), "%s/token", s->dir);
	snprintf(urlf, sizeof(urlf), "%s/url", s->dir);
	setenv("RAKAZO_DATA_DIR", s->data, 1);
	setenv("RAKAZO_OWNER", "user:bench", 1);
	s->pid = fork();
	if (s->pid == 0) {
		int dn = open("/dev/null", O_WRONLY);
		dup2(dn, 1);
		dup2(dn, 2);
		if (providers)
			execl(bin, "rakazo", "serve", "--listen", "127.0.0.1:0", "--providers", "fake", "--token-file", tokf,
			      "--url-file", urlf, (char *)NULL);
		else
			execl(bin, "rakazo", "serve", "--listen", "127.0.0.1:0", "--token-file", tokf, "--url-file", urlf,
			      (char *)NULL);
		_exit(127);
	}
	struct rk_buf t = RK_BUF_INIT, u = RK_BUF_INIT;
	rk_buf_init(&t);
	rk_buf_init(&u);
	struct rk_error err;
	for (int i = 0; i < 300 && access(urlf, R_OK) != 0; i++)
		rk_sleep_ms(50);
	int r = 0;
	if (rk_fs_read_all(urlf, sizeof(s->url) - 1, &u, &err) || rk_fs_read_all(tokf, sizeof(s->token) - 1, &t, &err)) {
		fprintf(stderr, "%s: the server did not start (%s)\n", name, bin);
		r = -1;
	} else {
		while (t.len && t.data[t.len - 1] == '\n')
			t.data[--t.len] = '\0';
		snprintf(s->url, sizeof(s->url), "%s", u.data);
		snprintf(s->token, sizeof(s->token), "%s", t.data);
	}
	rk_buf_release(&t);
	rk_buf_release(&u);
	return r;
}

/* Stops the server, ends every process of its data directory (the worker,
 * session holders) and removes the directory. */
static void rk_bench_serve_stop(struct rk_bench_serve *s, const char *name)
{
	if (s->pid > 0) {
		kill(s->pid, SIGTERM);
		waitpid(s->pid, NULL, 0);
	}
	if (!s->dir[0])
		return;
	char cmd[600];
	snprintf(cmd, sizeof(cmd), "for f in $(grep -lzxF 'RAKAZO_DATA_DIR=%s' /proc/[0-9]*/environ 2>/dev/null); do "
				   "p=${f#/proc/}; p=${p%%/environ}; [ \"$p\" = $$ ] || kill -9 $p 2>/dev/null; done; "
				   "rm -rf '%s'",
		 s->data, s->dir);
	if (system(cmd) != 0)
		fprintf(stderr, "%s: cleanup of %s failed\n", name, s->dir);
}

#endif
