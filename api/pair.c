/* The server's end of a paired machine's one outbound connection.
 *
 * `rakazo pair` keeps one connection to GET /v1/paired/connect, switched to
 * a raw byte stream; on it the server sends one JSON line per call ({"id",
 * "op", ...}) and the machine answers each with one line, in order. The
 * paired provider (providers/paired/) runs in whatever process serves a
 * request (a session holder, a broker child), so this end listens on the
 * abstract socket "rakazo-pair-<computer>" and relays each call it gets
 * there over the connection, one at a time.
 *
 * A new connection for the same computer replaces the old one: the old one
 * is shut down at once, so it can change nothing more, and a call that was
 * on it is answered outcome_unknown and never sent again. While no
 * connection is up the computer is offline. */

#include "api/api.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "engine/util/buf.h"
#include "engine/util/ipc.h"
#include "engine/util/json.h"
#include "engine/util/log.h"
#include "engine/util/time.h"

#define LINE_MAX_BYTES (48u * 1024 * 1024)
#define CALL_TIMEOUT_MS 60000

struct link {
	struct link *next;
	char *computer_id;
	int fd, lsock;
	int superseded;
};

static pthread_mutex_t links_lock = PTHREAD_MUTEX_INITIALIZER;
static struct link *links;

/* One line from the machine (without its newline) into line; -1 on a broken
 * stream or a timeout. */
static int read_line(int fd, struct rk_buf *pending, struct rk_buf *line, int64_t timeout_ms)
{
	int64_t deadline = rk_monotonic_ms() + timeout_ms;
	for (;;) {
		char *nl = memchr(pending->data, '\n', pending->len);
		if (nl) {
			rk_buf_reset(line);
			rk_buf_add(line, pending->data, (size_t)(nl - pending->data));
			rk_buf_consume(pending, (size_t)(nl - pending->data) + 1);
			return 0;
		}
		if (pending->len > LINE_MAX_BYTES)
			return -1;
		int64_t left = deadline - rk_monotonic_ms();
		if (left <= 0)
			return -1;
		struct pollfd p = {.fd = fd, .events = POLLIN};
		if (poll(&p, 1, (int)(left > 1000 ? 1000 : left)) < 0 && errno != EINTR)
			return -1;
		if (!p.revents)
			continue;
		char buf[65536];
		ssize_t n = read(fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		rk_buf_add(pending, buf, (size_t)n);
	}
}

static int write_all(int fd, const char *s, size_t n)
{
	while (n) {
		ssize_t w = send(fd, s, n, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		s += w;
		n -= (size_t)w;
	}
	return 0;
}

static void set_state(const char *data_dir, const char *computer_id, const char *state)
{
	struct rk_db *db = NULL;
	struct rk_error err;
	if (rk_db_open(data_dir, &db, &err) == 0) {
		if (rk_db_computer_set_state(db, computer_id, state, &err) != 0)
			rk_log(RK_LOG_WARN, "paired %s: cannot record %s: %s", computer_id, state, err.message);
		rk_db_close(db);
	}
}

static void reply_error(int client, const char *code, const char *message)
{
	cJSON *o = cJSON_CreateObject();
	cJSON *e = cJSON_AddObjectToObject(o, "error");
	cJSON_AddStringToObject(e, "code", code);
	cJSON_AddStringToObject(e, "message", message);
	rk_ipc_write_reply(client, o);
	cJSON_Delete(o);
}

void rk_api_pair_link(const char *data_dir, const char *computer_id, int fd, const char *extra, size_t extra_len)
{
	struct link *me = rk_xcalloc(1, sizeof(*me));
	me->computer_id = rk_xstrdup(computer_id);
	me->fd = fd;
	me->lsock = -1;
	/* the old connection goes first: shut down, it can answer nothing more */
	pthread_mutex_lock(&links_lock);
	for (struct link *l = links; l; l = l->next)
		if (!strcmp(l->computer_id, computer_id) && !l->superseded) {
			l->superseded = 1;
			/* tell it, so a machine that still runs it stops dialling */
			static const char note[] = "{\"op\":\"replaced\"}\n";
			(void)!send(l->fd, note, sizeof(note) - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
			shutdown(l->fd, SHUT_RDWR);
			if (l->lsock >= 0)
				shutdown(l->lsock, SHUT_RDWR);
		}
	me->next = links;
	links = me;
	pthread_mutex_unlock(&links_lock);

	char *name = rk_xasprintf("pair-%s", computer_id);
	struct rk_error err;
	int lsock = -1;
	for (int i = 0; i < 100 && lsock < 0 && !me->superseded; i++) {
		lsock = rk_ipc_listen(name, &err);
		if (lsock < 0)
			rk_sleep_ms(30); /* the old link is letting the name go */
	}
	pthread_mutex_lock(&links_lock);
	me->lsock = lsock;
	int gone = me->superseded;
	pthread_mutex_unlock(&links_lock);
	struct rk_buf pending = RK_BUF_INIT, line = RK_BUF_INIT;
	rk_buf_init(&pending);
	rk_buf_init(&line);
	rk_buf_add(&pending, extra, extra_len);
	if (lsock < 0 || gone) {
		rk_log(RK_LOG_WARN, "paired %s: cannot take its call socket", computer_id);
		goto out;
	}
	set_state(data_dir, computer_id, "running");
	rk_log(RK_LOG_INFO, "paired %s: connected", computer_id);
	int64_t seq = 0;
	for (;;) {
		struct pollfd p[2] = {{.fd = lsock, .events = POLLIN}, {.fd = fd, .events = POLLIN}};
		if (poll(p, 2, 1000) < 0 && errno != EINTR)
			break;
		if (me->superseded || (p[0].revents & (POLLHUP | POLLERR | POLLNVAL)))
			break;
		if (p[1].revents) { /* the machine speaks only when asked: this is its end */
			char c;
			if (recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT) <= 0)
				break;
		}
		if (!(p[0].revents & POLLIN))
			continue;
		int client = rk_ipc_accept(lsock);
		if (client < 0)
			continue;
		cJSON *req = rk_ipc_read_request(client, 5000, &err);
		if (!req) {
			reply_error(client, "invalid_argument", err.message);
			close(client);
			continue;
		}
		cJSON_DeleteItemFromObject(req, "id");
		cJSON_AddNumberToObject(req, "id", (double)++seq);
		char *text = cJSON_PrintUnformatted(req);
		cJSON_Delete(req);
		size_t n = strlen(text);
		text[n] = '\n';
		int sent = write_all(fd, text, n + 1) == 0;
		free(text);
		cJSON *rep = NULL;
		if (sent && read_line(fd, &pending, &line, CALL_TIMEOUT_MS) == 0)
			rep = rk_json_parse_opts(line.data, line.len, RK_JSON_ANY_BYTES, "the paired machine's reply",
						 NULL);
		const cJSON *id = cJSON_GetObjectItemCaseSensitive(rep, "id");
		if (!rep || !cJSON_IsNumber(id) || (int64_t)id->valuedouble != seq) {
			/* it may have happened there: say so, and never send it again */
			reply_error(client, "outcome_unknown",
				    "the paired machine's connection broke during the call; it may or may not have "
				    "happened there");
			cJSON_Delete(rep);
			close(client);
			break;
		}
		cJSON_DeleteItemFromObject(rep, "id");
		rk_ipc_write_reply(client, rep);
		cJSON_Delete(rep);
		close(client);
	}
out:
	pthread_mutex_lock(&links_lock);
	int current = !me->superseded;
	me->superseded = 1;
	for (struct link **pp = &links; *pp; pp = &(*pp)->next)
		if (*pp == me) {
			*pp = me->next;
			break;
		}
	pthread_mutex_unlock(&links_lock);
	if (lsock >= 0)
		close(lsock);
	close(fd);
	if (current && lsock >= 0) {
		set_state(data_dir, computer_id, "offline");
		rk_log(RK_LOG_INFO, "paired %s: disconnected", computer_id);
	}
	rk_buf_release(&pending);
	rk_buf_release(&line);
	free(name);
	free(me->computer_id);
	free(me);
}
