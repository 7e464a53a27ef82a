/* rakazo pair SERVER-URL: pairs this machine with a `rakazo serve` once,
 * then keeps one outbound connection to it and runs what comes over it:
 * commands (bash -lc, output kept in the pipe until the server reads it,
 * so it is ordered and bounded), and file calls under --root. A broken
 * connection is dialled again after a second; the server forgets whatever
 * call was on it (outcome unknown, never replayed). */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "engine/util/buf.h"
#include "engine/util/fs.h"
#include "engine/util/http.h"
#include "engine/util/ipc.h"
#include "engine/util/json.h"
#include "engine/util/time.h"
#include "cmd.h"
#include "out.h"

#define PROCS_MAX 64
#define READ_MAX (1u << 20) /* output handed out per read call */

static const char *o_token, *o_name = "machine", *o_root;
static int o_once;
static volatile sig_atomic_t stop_requested;
static int replaced;

static const struct rk_opt pair_opts[] = {
	OPT_STRING("token", 't', &o_token, "TOKEN", "a member's API token, for the first pairing (else RAKAZO_TOKEN)"),
	OPT_STRING("name", 'n', &o_name, "NAME", "the machine's name on the server (default machine)"),
	OPT_STRING("root", 'r', &o_root, "DIR", "the directory relative paths and commands start in (default $HOME)"),
	OPT_BOOL("once", 0, &o_once, "exit when the connection breaks instead of dialling again"),
	OPT_END,
};

struct proc {
	int id;
	pid_t pid;
	int in_fd, out_fd, eof, reaped, status;
};
static struct proc procs[PROCS_MAX];
static int next_proc = 1;
static char *root;

static void on_signal(int sig)
{
	(void)sig;
	stop_requested = 1;
}

/* --- pairing once ----------------------------------------------------------------- */

static int pair_once(struct cmd_ctx *ctx, const char *url, char **computer, char **secret)
{
	char *state = rk_xasprintf("%s/paired.json", ctx->eng->data_dir);
	struct rk_buf b = RK_BUF_INIT;
	rk_buf_init(&b);
	int r = 0;
	if (rk_fs_exists(state) && rk_fs_read_all(state, 65536, &b, &ctx->err) == 0) {
		cJSON *d = cJSON_Parse(b.data);
		if (d && !strcmp(rk_json_string(d, "url", ""), url)) {
			*computer = rk_xstrdup(rk_json_string(d, "computer_id", ""));
			*secret = rk_xstrdup(rk_json_string(d, "secret", ""));
		}
		cJSON_Delete(d);
	}
	if (*computer)
		goto out;
	const char *tok = o_token ? o_token : getenv("RAKAZO_TOKEN");
	if (!tok || !*tok) {
		r = rk_error_set(&ctx->err, RK_EUSAGE, "the first pairing needs a member's token: --token TOKEN");
		goto out;
	}
	char *full = rk_xasprintf("%s/v1/paired", url), *auth = rk_xasprintf("Authorization: Bearer %s", tok);
	cJSON *body = cJSON_CreateObject();
	cJSON_AddStringToObject(body, "name", o_name);
	char *text = cJSON_PrintUnformatted(body);
	const char *hdr[] = {auth, NULL};
	/* within 30 s all told */
	struct rk_http_request q = {
		RK_HTTP_ONCE,
		.method = "POST",
		.url = full,
		.headers = hdr,
		.body = text,
		.body_len = strlen(text),
		.timeout_ms = 30000,
		.connect_timeout_ms = 30000,
		.max_response = SIZE_MAX,
		.encoding = RK_HTTP_ENCODING_NONE,
	};
	struct rk_http_response hr;
	rk_http_response_init(&hr);
	int rc = rk_http_do(&q, &hr, NULL);
	long code = rc == 0 ? hr.status : 0;
	free(text);
	cJSON_Delete(body);
	free(full);
	free(auth);
	cJSON *d = cJSON_Parse(hr.body.data);
	if (rc != 0) {
		r = rk_error_set(&ctx->err, RK_EUNAVAILABLE, "cannot reach %s: %s", url,
				 hr.failure_text ? hr.failure_text : "the request failed");
	} else if (code != 201 || !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(d, "machineSecret"))) {
		const cJSON *e = cJSON_GetObjectItemCaseSensitive(d, "error");
		r = rk_error_set(&ctx->err, code == 401 || code == 403 ? RK_EDENIED : RK_EFAILED,
				 "pairing refused (%ld): %s", code, rk_json_string(e, "message", "no reason given"));
	} else {
		*computer = rk_xstrdup(rk_json_string(d, "computerId", ""));
		*secret = rk_xstrdup(rk_json_string(d, "machineSecret", ""));
		cJSON *s = cJSON_CreateObject();
		cJSON_AddStringToObject(s, "url", url);
		cJSON_AddStringToObject(s, "computer_id", *computer);
		cJSON_AddStringToObject(s, "secret", *secret);
		char *st = cJSON_PrintUnformatted(s);
		r = rk_fs_write_atomic(state, st, strlen(st), 0600, &ctx->err);
		free(st);
		cJSON_Delete(s);
	}
	cJSON_Delete(d);
	rk_http_response_release(&hr);
out:
	rk_buf_release(&b);
	free(state);
	return r;
}

/* --- the machine's side of the calls ------------------------------------------------- */

static char *machine_path(const char *p)
{
	if (!p || !*p)
		return rk_xstrdup(root);
	return p[0] == '/' ? rk_xstrdup(p) : rk_path_join(root, p);
}

static cJSON *err_reply(const char *code, const char *fmt, const char *arg)
{
	cJSON *o = cJSON_CreateObject(), *e = cJSON_AddObjectToObject(o, "error");
	char msg[1400];
	snprintf(msg, sizeof(msg), fmt, arg);
	cJSON_AddStringToObject(e, "code", code);
	cJSON_AddStringToObject(e, "message", msg);
	return o;
}

static cJSON *errno_reply(int e, const char *path)
{
	char fmt[300];
	snprintf(fmt, sizeof(fmt), "%%s: %s", strerror(e));
	return err_reply(e == ENOENT ? "not_found" : e == EACCES || e == EPERM ? "denied" : "io", fmt, path);
}

static struct proc *find_proc(const cJSON *req)
{
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(req, "proc");
	for (int i = 0; cJSON_IsNumber(id) && i < PROCS_MAX; i++)
		if (procs[i].id && procs[i].id == id->valueint)
			return &procs[i];
	return NULL;
}

static cJSON *op_spawn(const cJSON *req)
{
	struct proc *p = NULL;
	for (int i = 0; i < PROCS_MAX && !p; i++)
		if (!procs[i].id)
			p = &procs[i];
	if (!p)
		return err_reply("unavailable", "%s", "too many commands are running on this machine");
	char *cwd = machine_path(rk_json_string(req, "cwd", NULL));
	int in[2], out[2];
	if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC)) {
		free(cwd);
		return errno_reply(errno, "pipe");
	}
	const cJSON *env = cJSON_GetObjectItemCaseSensitive(req, "env");
	pid_t pid = fork();
	if (pid == 0) {
		setsid();
		dup2(in[0], 0);
		dup2(out[1], 1);
		dup2(out[1], 2);
		signal(SIGPIPE, SIG_DFL);
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		if (chdir(cwd) != 0)
			_exit(126);
		for (const cJSON *e = env ? env->child : NULL; e; e = e->next)
			if (cJSON_IsString(e))
				putenv(e->valuestring);
		execl("/bin/bash", "bash", "-lc", rk_json_string(req, "command", "true"), (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	free(cwd);
	if (pid < 0) {
		close(in[1]);
		close(out[0]);
		return errno_reply(errno, "fork");
	}
	fcntl(out[0], F_SETFL, O_NONBLOCK);
	*p = (struct proc){.id = next_proc++, .pid = pid, .in_fd = in[1], .out_fd = out[0]};
	cJSON *o = cJSON_CreateObject();
	cJSON_AddNumberToObject(o, "proc", p->id);
	return o;
}

static cJSON *op_proc(const char *op, const cJSON *req)
{
	struct proc *p = find_proc(req);
	if (!p)
		return err_reply("not_found", "%s", "no such command on this machine");
	cJSON *o = cJSON_CreateObject();
	if (!strcmp(op, "read")) {
		struct rk_buf b = RK_BUF_INIT;
		rk_buf_init(&b);
		char tmp[65536];
		while (!p->eof && b.len < READ_MAX) {
			ssize_t n = read(p->out_fd, tmp, sizeof(tmp));
			if (n > 0)
				rk_buf_add(&b, tmp, (size_t)n);
			else if (n == 0)
				p->eof = 1;
			else if (errno != EINTR)
				break;
		}
		char *s = rk_base64_encode(b.data, b.len);
		cJSON_AddStringToObject(o, "data_b64", s);
		free(s);
		cJSON_AddBoolToObject(o, "eof", p->eof);
		rk_buf_release(&b);
	} else if (!strcmp(op, "write")) {
		struct rk_buf b = RK_BUF_INIT;
		rk_buf_init(&b);
		rk_base64_decode(rk_json_string(req, "data_b64", ""), &b);
		if (p->in_fd < 0 || rk_fs_write_fd(p->in_fd, b.data, b.len) != 0) {
			cJSON_Delete(o);
			o = err_reply("io", "%s", "the command's input is closed");
		}
		rk_buf_release(&b);
	} else if (!strcmp(op, "close_stdin")) {
		if (p->in_fd >= 0)
			close(p->in_fd);
		p->in_fd = -1;
	} else if (!strcmp(op, "signal")) {
		const cJSON *s = cJSON_GetObjectItemCaseSensitive(req, "signo");
		if (!p->reaped)
			kill(-p->pid, cJSON_IsNumber(s) ? s->valueint : SIGTERM);
	} else if (!strcmp(op, "wait")) {
		if (!p->reaped && waitpid(p->pid, &p->status, WNOHANG) == p->pid)
			p->reaped = 1;
		cJSON_AddBoolToObject(o, "exited", p->reaped && WIFEXITED(p->status));
		cJSON_AddNumberToObject(o, "code", p->reaped && WIFEXITED(p->status) ? WEXITSTATUS(p->status) : 0);
		cJSON_AddNumberToObject(o, "signo", p->reaped && WIFSIGNALED(p->status) ? WTERMSIG(p->status) : 0);
	} else { /* release */
		if (!p->reaped) {
			kill(-p->pid, SIGKILL);
			waitpid(p->pid, NULL, 0);
		}
		if (p->in_fd >= 0)
			close(p->in_fd);
		close(p->out_fd);
		memset(p, 0, sizeof(*p));
	}
	return o;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(rk_json_string(*(cJSON *const *)a, "name", ""), rk_json_string(*(cJSON *const *)b, "name", ""));
}

static cJSON *op_file(const char *op, const cJSON *req)
{
	char *path = machine_path(rk_json_string(req, "path", ""));
	cJSON *o = NULL;
	struct stat st;
	if (!strcmp(op, "list")) {
		DIR *d = opendir(path);
		if (!d) {
			o = errno_reply(errno, path);
			goto out;
		}
		cJSON *items[4096];
		size_t n = 0;
		struct dirent *de;
		while ((de = readdir(d)) && n < 4096) {
			if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
				continue;
			char *full = rk_path_join(path, de->d_name);
			if (lstat(full, &st) == 0) {
				cJSON *e = cJSON_CreateObject();
				cJSON_AddStringToObject(e, "name", de->d_name);
				cJSON_AddStringToObject(e, "type",
							S_ISREG(st.st_mode)   ? "file"
							: S_ISDIR(st.st_mode) ? "dir"
							: S_ISLNK(st.st_mode) ? "link"
									      : "other");
				cJSON_AddNumberToObject(e, "size", (double)st.st_size);
				cJSON_AddNumberToObject(e, "mtime_ms",
							(double)st.st_mtim.tv_sec * 1000 +
								st.st_mtim.tv_nsec / 1000000);
				if (S_ISREG(st.st_mode) && (st.st_mode & 0100))
					cJSON_AddBoolToObject(e, "executable", 1);
				items[n++] = e;
			}
			free(full);
		}
		closedir(d);
		if (n > 1) /* (fewer: nothing to sort) */
			qsort(items, n, sizeof(items[0]), by_name);
		o = cJSON_CreateObject();
		cJSON *arr = cJSON_AddArrayToObject(o, "entries");
		for (size_t i = 0; i < n; i++)
			cJSON_AddItemToArray(arr, items[i]);
	} else if (!strcmp(op, "read_file")) {
		const cJSON *mx = cJSON_GetObjectItemCaseSensitive(req, "max_bytes");
		size_t max = cJSON_IsNumber(mx) ? (size_t)mx->valuedouble : 16u << 20;
		if (stat(path, &st) != 0) {
			o = errno_reply(errno, path);
		} else if ((size_t)st.st_size > max) {
			char m[64];
			snprintf(m, sizeof(m), "%zu", max);
			o = err_reply("too_large", "computer file exceeds %s bytes", m);
		} else {
			struct rk_buf b = RK_BUF_INIT;
			struct rk_error err;
			rk_buf_init(&b);
			if (rk_fs_read_all(path, max, &b, &err) != 0) {
				o = err_reply(rk_code_name(err.code), "%s", err.message);
			} else {
				o = cJSON_CreateObject();
				char *s = rk_base64_encode(b.data, b.len);
				cJSON_AddStringToObject(o, "data_b64", s);
				free(s);
			}
			rk_buf_release(&b);
		}
	} else if (!strcmp(op, "write_file")) {
		struct rk_buf b = RK_BUF_INIT;
		struct rk_error err;
		rk_buf_init(&b);
		rk_base64_decode(rk_json_string(req, "data_b64", ""), &b);
		char *slash = strrchr(path, '/');
		if (slash && slash != path) {
			*slash = '\0';
			rk_fs_mkdirs(path, 0755, &err);
			*slash = '/';
		}
		int exe = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(req, "executable"));
		if (rk_fs_write_atomic(path, b.data, b.len, exe ? 0700 : 0600, &err) != 0)
			o = err_reply(rk_code_name(err.code), "%s", err.message);
		else
			o = cJSON_CreateObject();
		rk_buf_release(&b);
	} else if (!strcmp(op, "remove")) {
		if (unlink(path) != 0 && (errno != EISDIR || rmdir(path) != 0) && rmdir(path) != 0)
			o = errno_reply(errno, path);
		else
			o = cJSON_CreateObject();
	} else {
		o = err_reply("invalid_argument", "unknown call '%s'", op);
	}
out:
	free(path);
	return o;
}

static cJSON *handle(const cJSON *req)
{
	const char *op = rk_json_string(req, "op", "");
	if (!strcmp(op, "spawn"))
		return op_spawn(req);
	if (!strcmp(op, "read") || !strcmp(op, "write") || !strcmp(op, "close_stdin") || !strcmp(op, "signal") ||
	    !strcmp(op, "wait") || !strcmp(op, "release"))
		return op_proc(op, req);
	return op_file(op, req);
}

/* --- the connection ---------------------------------------------------------------------- */

static int dial(const char *url, const char *secret, struct rk_buf *pending, struct rk_error *err)
{
	const char *hp = strstr(url, "://") ? strstr(url, "://") + 3 : url;
	char host[256], port[16] = "80";
	size_t hl = strcspn(hp, ":/");
	snprintf(host, sizeof(host), "%.*s", (int)(hl < sizeof(host) ? hl : sizeof(host) - 1), hp);
	if (hp[hl] == ':')
		snprintf(port, sizeof(port), "%.*s", (int)strcspn(hp + hl + 1, "/"), hp + hl + 1);
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *ai = NULL;
	if (getaddrinfo(host, port, &hints, &ai) != 0 || !ai)
		return rk_error_set(err, RK_EUNAVAILABLE, "cannot resolve %s", host), -1;
	int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
		rk_error_errno(err, RK_EUNAVAILABLE, errno, "cannot connect to %s:%s", host, port);
		freeaddrinfo(ai);
		if (fd >= 0)
			close(fd);
		return -1;
	}
	freeaddrinfo(ai);
	char *req = rk_xasprintf("GET /v1/paired/connect HTTP/1.1\r\nHost: %s:%s\r\nAuthorization: Machine %s\r\n"
				 "Connection: Upgrade\r\nUpgrade: rakazo-pair\r\n\r\n",
				 host, port, secret);
	int ok = rk_fs_write_fd(fd, req, strlen(req)) == 0;
	free(req);
	/* the reply's head: its status line says whether the switch happened */
	rk_buf_reset(pending);
	char *end = NULL;
	while (ok && !(end = strstr(pending->data, "\r\n\r\n")) && pending->len < 65536) {
		char tmp[4096];
		ssize_t n = read(fd, tmp, sizeof(tmp));
		if (n <= 0)
			ok = 0;
		else
			rk_buf_add(pending, tmp, (size_t)n);
	}
	if (!ok || !end || strncmp(pending->data, "HTTP/1.1 101", 12) != 0) {
		char *nl = strchr(pending->data, '\r');
		if (nl)
			*nl = '\0';
		rk_error_set(err, strstr(pending->data, " 401") ? RK_EDENIED : RK_EUNAVAILABLE,
			     "the server refused the connection: %s", pending->len ? pending->data : "no reply");
		close(fd);
		return -1;
	}
	rk_buf_consume(pending, (size_t)(end + 4 - pending->data));
	return fd;
}

/* Serves calls until the connection breaks (0) or a signal stops it. */
static void serve_link(int fd, struct rk_buf *pending)
{
	while (!stop_requested) {
		char *nl = memchr(pending->data, '\n', pending->len);
		if (!nl) {
			struct pollfd p = {.fd = fd, .events = POLLIN};
			if (poll(&p, 1, 500) < 0 && errno != EINTR)
				return;
			if (!p.revents)
				continue;
			char tmp[65536];
			ssize_t n = read(fd, tmp, sizeof(tmp));
			if (n <= 0 || pending->len > (48u << 20))
				return;
			rk_buf_add(pending, tmp, (size_t)n);
			continue;
		}
		*nl = '\0';
		cJSON *req = cJSON_Parse(pending->data);
		rk_buf_consume(pending, (size_t)(nl - pending->data) + 1);
		if (!strcmp(rk_json_string(req, "op", ""), "replaced")) {
			replaced = 1; /* another connection of this machine took over */
			cJSON_Delete(req);
			return;
		}
		cJSON *rep = req ? handle(req) : err_reply("invalid_argument", "%s", "a call that is not JSON");
		const cJSON *id = cJSON_GetObjectItemCaseSensitive(req, "id");
		cJSON_AddNumberToObject(rep, "id", cJSON_IsNumber(id) ? id->valuedouble : 0);
		char *text = cJSON_PrintUnformatted(rep);
		size_t n = strlen(text);
		text[n] = '\n';
		int ok = rk_fs_write_fd(fd, text, n + 1) == 0;
		free(text);
		cJSON_Delete(rep);
		cJSON_Delete(req);
		if (!ok)
			return;
	}
}

static int run_pair(struct cmd_ctx *ctx)
{
	int r = cmd_want_args(ctx, 1, 1, "SERVER-URL");
	if (r || (r = cmd_engine(ctx)))
		return r;
	const char *url = ctx->args[0];
	if (strncmp(url, "http://", 7) != 0)
		return rk_error_set(&ctx->err, RK_EUSAGE, "SERVER-URL is http://HOST:PORT (the server's base URL)");
	const char *home = getenv("HOME");
	root = rk_xstrdup(o_root ? o_root : home && *home ? home : "/");
	struct stat st;
	if (stat(root, &st) != 0 || !S_ISDIR(st.st_mode))
		return rk_error_set(&ctx->err, RK_EUSAGE, "--root %s is not a directory", root);
	char *computer = NULL, *secret = NULL;
	if ((r = pair_once(ctx, url, &computer, &secret)))
		return r;
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGCHLD, SIG_DFL);
	struct rk_buf pending = RK_BUF_INIT;
	rk_buf_init(&pending);
	int announced = 0;
	while (!stop_requested) {
		int fd = dial(url, secret, &pending, &ctx->err);
		if (fd < 0 && ctx->err.code == RK_EDENIED) {
			r = -ctx->err.code;
			break;
		}
		if (fd >= 0) {
			if (!announced++) {
				cJSON *o = cJSON_CreateObject();
				cJSON_AddStringToObject(o, "computer_id", computer);
				cJSON_AddStringToObject(o, "server", url);
				out_stream(o, computer);
				fflush(stdout);
			}
			out_progress("rakazo pair: connected to %s as %s", url, computer);
			serve_link(fd, &pending);
			close(fd);
		}
		if (replaced) {
			r = rk_error_set(&ctx->err, RK_ECONFLICT,
					 "a newer connection of this machine replaced this one; this one stops");
			break;
		}
		if (o_once)
			break;
		for (int i = 0; i < 10 && !stop_requested; i++)
			rk_sleep_ms(100);
	}
	rk_buf_release(&pending);
	free(computer);
	free(secret);
	free(root);
	return r;
}

const struct cmd_entry cmd_pair = {
	.name = "pair",
	.args = "SERVER-URL [--token TOKEN] [--name NAME] [--root DIR]",
	.summary = "pair this machine with a rakazo serve and run its commands and file calls",
	.description = "The first run pairs (with a member's token) and keeps the machine's secret in\n"
		       "DATA_DIR/paired.json; later runs reuse it. Then it keeps one connection to the server,\n"
		       "dialling again when it breaks; while it is down the computer is offline. A paired\n"
		       "machine has no desktop and never pauses. See rakazo-pair(1).",
	.opts = pair_opts,
	.run = run_pair,
};
