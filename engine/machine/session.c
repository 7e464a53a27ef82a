#include "engine/machine/session.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "engine/machine/machine.h"
#include "engine/machine/computer.h"
#include "engine/machine/idle.h"
#include "engine/access/secret.h"
#include "engine/state/db_session.h"
#include "engine/util/buf.h"
#include "engine/util/fs.h"
#include "engine/util/ipc.h"
#include "engine/util/id.h"
#include "engine/util/json.h"
#include "engine/util/log.h"
#include "engine/util/time.h"

RK_NAMES_DEFINE(rk_history_kind, RK_HISTORY_KIND, RK_HISTORY_KINDS)


#define HOLD_MAX (8u * 1024 * 1024) /* unread output a holder keeps */
#define HISTORY_CHUNK_MAX (256u * 1024)
#define RELAY_POLL_MS 50      /* a holder on a shared state looks for calls left there */
#define RELAY_WAIT_STEP_MS 10 /* a caller looks for its reply */

/* --- replies ------------------------------------------------------------- */

void rk_session_reply_release(struct rk_session_reply *r)
{
	if (!r)
		return;
	free(r->session);
	free(r->output);
	memset(r, 0, sizeof(*r));
}

static const char *signal_name(int signo)
{
	static const struct {
		int n;
		const char *name;
	} names[] = {{SIGHUP, "SIGHUP"},   {SIGINT, "SIGINT"},	 {SIGQUIT, "SIGQUIT"}, {SIGILL, "SIGILL"},
		     {SIGABRT, "SIGABRT"}, {SIGBUS, "SIGBUS"},	 {SIGFPE, "SIGFPE"},   {SIGKILL, "SIGKILL"},
		     {SIGUSR1, "SIGUSR1"}, {SIGSEGV, "SIGSEGV"}, {SIGUSR2, "SIGUSR2"}, {SIGPIPE, "SIGPIPE"},
		     {SIGALRM, "SIGALRM"}, {SIGTERM, "SIGTERM"}};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (names[i].n == signo)
			return names[i].name;
	return NULL;
}

cJSON *rk_session_reply_to_json(const struct rk_session_reply *r)
{
	cJSON *o = cJSON_CreateObject();
	rk_json_add_str_or_null(o, "session", r->session);
	cJSON_AddBoolToObject(o, "running", r->running);
	if (r->exited)
		cJSON_AddNumberToObject(o, "exitCode", r->exit_code);
	else
		cJSON_AddNullToObject(o, "exitCode");
	if (r->signo > 0) {
		const char *n = signal_name(r->signo);
		if (n)
			cJSON_AddStringToObject(o, "signal", n);
		else
			cJSON_AddNumberToObject(o, "signal", r->signo);
	} else {
		cJSON_AddNullToObject(o, "signal");
	}
	cJSON_AddStringToObject(o, "output", r->output ? r->output : "");
	cJSON_AddBoolToObject(o, "truncated", r->truncated);
	if (r->lost)
		cJSON_AddBoolToObject(o, "lost", 1);
	return o;
}

/* Valid UTF-8 only: JSON consumers choke on anything else. */
static char *utf8_sanitize(const unsigned char *s, size_t n, size_t *out_len)
{
	struct rk_buf b;
	rk_buf_init(&b);
	size_t i = 0;
	while (i < n) {
		unsigned char c = s[i];
		size_t need = c < 0x80		   ? 0
			      : (c & 0xE0) == 0xC0 ? 1
			      : (c & 0xF0) == 0xE0 ? 2
			      : (c & 0xF8) == 0xF0 ? 3
						   : 9;
		int ok = need != 9 && i + need < n + (need ? 0 : 1);
		if (ok && need) {
			if (i + need >= n + 1)
				ok = 0;
			for (size_t k = 1; ok && k <= need; k++)
				if (i + k >= n || (s[i + k] & 0xC0) != 0x80)
					ok = 0;
			if (ok) {
				uint32_t cp = need == 1	  ? (uint32_t)(c & 0x1F)
					      : need == 2 ? (uint32_t)(c & 0x0F)
							  : (uint32_t)(c & 0x07);
				for (size_t k = 1; k <= need; k++)
					cp = (cp << 6) | (s[i + k] & 0x3F);
				if ((need == 1 && cp < 0x80) || (need == 2 && cp < 0x800) ||
				    (need == 3 && cp < 0x10000) || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
					ok = 0;
			}
		}
		if (!ok) {
			rk_buf_adds(&b, "\xEF\xBF\xBD");
			i++;
			continue;
		}
		if (c == 0) {
			rk_buf_adds(&b, "\xEF\xBF\xBD"); /* NUL would cut C strings */
		} else {
			rk_buf_add(&b, s + i, need + 1);
		}
		i += need + 1;
	}
	return rk_buf_detach(&b, out_len);
}

int rk_session_check_yield(int64_t yield_ms, struct rk_error *err)
{
	if (yield_ms < RK_SESSION_YIELD_MIN_MS || yield_ms > RK_SESSION_YIELD_MAX_MS)
		return rk_error_set(err, RK_EINVALID, "yield must be from %d to %d ms, not %lld",
				    RK_SESSION_YIELD_MIN_MS, RK_SESSION_YIELD_MAX_MS, (long long)yield_ms);
	return 0;
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static void add_utf8(struct rk_buf *b, uint32_t cp)
{
	char u[4];
	if (cp < 0x80) {
		rk_buf_addc(b, (char)cp);
	} else if (cp < 0x800) {
		u[0] = (char)(0xC0 | (cp >> 6));
		u[1] = (char)(0x80 | (cp & 0x3F));
		rk_buf_add(b, u, 2);
	} else if (cp < 0x10000) {
		u[0] = (char)(0xE0 | (cp >> 12));
		u[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
		u[2] = (char)(0x80 | (cp & 0x3F));
		rk_buf_add(b, u, 3);
	} else {
		u[0] = (char)(0xF0 | (cp >> 18));
		u[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
		u[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
		u[3] = (char)(0x80 | (cp & 0x3F));
		rk_buf_add(b, u, 4);
	}
}

int rk_unescape_c(const char *in, struct rk_buf *out, struct rk_error *err)
{
	for (const char *p = in; *p; p++) {
		if (*p != '\\') {
			rk_buf_addc(out, *p);
			continue;
		}
		p++;
		switch (*p) {
		case 'n':
			rk_buf_addc(out, '\n');
			break;
		case 't':
			rk_buf_addc(out, '\t');
			break;
		case 'r':
			rk_buf_addc(out, '\r');
			break;
		case 'a':
			rk_buf_addc(out, '\a');
			break;
		case 'b':
			rk_buf_addc(out, '\b');
			break;
		case 'e':
			rk_buf_addc(out, 0x1b);
			break;
		case 'f':
			rk_buf_addc(out, '\f');
			break;
		case 'v':
			rk_buf_addc(out, '\v');
			break;
		case '\\':
			rk_buf_addc(out, '\\');
			break;
		case '"':
			rk_buf_addc(out, '"');
			break;
		case '\'':
			rk_buf_addc(out, '\'');
			break;
		case 'x': {
			int h1 = hexval(p[1]), h2 = h1 >= 0 ? hexval(p[2]) : -1;
			if (h1 < 0)
				return rk_error_set(err, RK_EINVALID,
						    "bad escape \\x at byte %zu: two hex digits expected",
						    (size_t)(p - in));
			if (h2 >= 0) {
				rk_buf_addc(out, (char)(h1 * 16 + h2));
				p += 2;
			} else {
				rk_buf_addc(out, (char)h1);
				p += 1;
			}
			break;
		}
		case 'u': {
			uint32_t cp = 0;
			for (int k = 1; k <= 4; k++) {
				int h = hexval(p[k]);
				if (h < 0)
					return rk_error_set(err, RK_EINVALID,
							    "bad escape \\u at byte %zu: four hex digits expected",
							    (size_t)(p - in));
				cp = cp * 16 + (uint32_t)h;
			}
			add_utf8(out, cp);
			p += 4;
			break;
		}
		case '0':
		case '1':
		case '2':
		case '3':
		case '4':
		case '5':
		case '6':
		case '7': {
			int v = 0, k = 0;
			while (k < 3 && p[k] >= '0' && p[k] <= '7')
				v = v * 8 + (p[k++] - '0');
			rk_buf_addc(out, (char)(v & 0xFF));
			p += k - 1;
			break;
		}
		case '\0':
			return rk_error_set(err, RK_EINVALID, "input ends with a lone backslash");
		default:
			return rk_error_set(err, RK_EINVALID, "unknown escape \\%c at byte %zu", *p, (size_t)(p - in));
		}
	}
	return 0;
}

/* --- the holder ------------------------------------------------------------------ */

struct holder {
	struct rk_db *db;
	struct rk_proc *proc;
	char *sid, *computer_id, *owner, *bot_id;
	int tty;
	struct rk_buf pending; /* output not yet handed out */
	int dropped;	       /* pending lost its head to HOLD_MAX */
	int eof;
	int ended;
	int end_recorded; /* the exit is in the database */
	struct rk_exit_status status;
	int64_t idle_ms;
	struct rk_engine *eng; /* the holder's own (its db), for redaction */
	struct rk_actor actor; /* whose secrets are redacted; user NULL: patterns only */
	struct rk_buf typed;   /* input since the last line end, not yet in history */
	struct rk_buf said;    /* output handed out, not yet in history: it could begin a secret */
	int keep_back;	       /* a model reads the replies (rk_session_request) */
	cJSON *relayed;	       /* a call through the state: its reply, kept instead of written */
	int relay;	       /* the state is shared (PostgreSQL): answer calls left there */
};

/* A reply goes to the caller's socket, or (client < 0) is kept for a call
 * that came through the state (see holder_relay). Takes o. */
static void holder_send(struct holder *h, int client, cJSON *o)
{
	if (client < 0) {
		cJSON_Delete(h->relayed);
		h->relayed = o;
		return;
	}
	rk_ipc_write_reply(client, o);
	cJSON_Delete(o);
}

/* The secrets of the session's actor, read now (engine/access/secret.h). */
static struct rk_secret_redactor *holder_redactor(struct holder *h)
{
	return rk_secret_redactor_new(h->eng, h->actor.user ? &h->actor : NULL);
}

/* A terminal-history record of command, input or output text, with the
 * secrets of the session's actor (red, else read now) and
 * credential-looking text redacted (engine/access/secret.h) before it is stored. */
static void history_text(struct holder *h, const struct rk_secret_redactor *red, const char *kind, const char *data,
			 size_t len)
{
	struct rk_buf b;
	rk_buf_init(&b);
	rk_buf_add(&b, data, len);
	if (red)
		rk_secret_redactor_history(red, &b);
	else
		rk_secret_redact_history(h->eng, h->actor.user ? &h->actor : NULL, &b);
	rk_db_history_append(h->db, h->computer_id, h->sid, h->bot_id, kind, b.data, b.len, -1, -1, NULL);
	sodium_memzero(b.data, b.len);
	rk_buf_release(&b);
}

/* Input goes to history a line at a time (up to a line end, Ctrl-C or
 * Ctrl-D, or 4 KiB), so a secret typed a key at a time, as at a password
 * prompt, is one record and redacted whole. all: what is left too. */
#define TYPED_MAX 4096
static void history_typed(struct holder *h, const char *data, size_t len, int all)
{
	rk_buf_add(&h->typed, data, len);
	size_t cut = all || h->typed.len > TYPED_MAX ? h->typed.len : 0;
	for (size_t i = cut; i < h->typed.len; i++) {
		char c = h->typed.data[i];
		if (c == '\n' || c == '\r' || c == 0x03 || c == 0x04)
			cut = i + 1;
	}
	if (!cut)
		return;
	history_text(h, NULL, "input", h->typed.data, cut);
	sodium_memzero(h->typed.data, cut);
	rk_buf_consume(&h->typed, cut);
}

/* Output goes to history after what was kept back of the last piece: the
 * tail of this one that could begin a secret stays back until the next
 * piece or the end (all), so a value printed in two writes that came in
 * two reads is one, redacted (rk_secret_redactor_hold). After a gap (the
 * head of a flood dropped) what was kept back goes: it is not followed by
 * what comes now. */
static void history_output(struct holder *h, const struct rk_secret_redactor *red, const char *data, size_t len,
			   int gap, int all)
{
	if (gap || len > HISTORY_CHUNK_MAX) {
		sodium_memzero(h->said.data, h->said.len);
		rk_buf_reset(&h->said);
	}
	if (len > HISTORY_CHUNK_MAX) { /* history keeps the tail of a flood, like the reply does */
		data += len - HISTORY_CHUNK_MAX;
		len = HISTORY_CHUNK_MAX;
	}
	rk_buf_add(&h->said, data, len);
	size_t keep = all ? 0 : rk_secret_redactor_hold(red, h->said.data, h->said.len);
	if (h->said.len > keep) {
		history_text(h, red, "output", h->said.data, h->said.len - keep);
		sodium_memzero(h->said.data, h->said.len - keep);
		rk_buf_consume(&h->said, h->said.len - keep);
	}
}

static void holder_pump(struct holder *h)
{
	if (h->eof)
		return;
	struct rk_error e;
	size_t before = h->pending.len;
	if (h->proc->ops->read(h->proc, &h->pending, &h->eof, &e) != 0)
		h->eof = 1; /* a broken stream ends the output */
	(void)before;
	if (h->pending.len > HOLD_MAX) {
		rk_buf_consume(&h->pending, h->pending.len - HOLD_MAX);
		h->dropped = 1;
	}
}

static void holder_check_end(struct holder *h)
{
	if (h->ended || !h->eof)
		return;
	struct rk_error e;
	struct rk_exit_status st = {0};
	if (h->proc->ops->wait(h->proc, &st, &e) != 0) {
		st.lost = 1;
		st.exited = 1;
	}
	/* a signal ends it too: providers differ on whether they also set exited */
	if (st.exited || st.lost || st.signo > 0) {
		h->status = st;
		h->ended = 1;
		rk_db_session_command_ended(h->db, h->sid, NULL); /* no longer keeps the computer busy */
	}
}

/* Waits (pumping output) until the command ends or the deadline passes. */
static void holder_wait(struct holder *h, int64_t deadline)
{
	for (;;) {
		holder_pump(h);
		holder_check_end(h);
		if (h->ended)
			return;
		int64_t left = deadline - rk_monotonic_ms();
		if (left <= 0)
			return;
		if (h->eof) {
			rk_sleep_ms(left < 10 ? left : 10);
			continue;
		}
		struct pollfd pfd = {.fd = h->proc->ops->poll_fd(h->proc), .events = POLLIN};
		poll(&pfd, 1, (int)(left > 200 ? 200 : left));
	}
}

/* The end goes to the database before the reply that hands it out: a call
 * that comes after that reply finds the session ended, instead of a holder
 * on its way out that never answers (which reads as a lost reply). */
static void holder_record_end(struct holder *h)
{
	if (h->end_recorded)
		return;
	h->end_recorded = 1;
	history_typed(h, NULL, 0, 1);
	if (h->said.len) {
		struct rk_secret_redactor *red = holder_redactor(h);
		history_output(h, red, NULL, 0, 0, 1);
		rk_secret_redactor_free(red);
	}
	int64_t code = h->ended && h->status.exited && !h->status.lost && h->status.signo <= 0 ? h->status.code : -1;
	int64_t sig = h->ended && h->status.signo > 0 ? h->status.signo : -1;
	rk_db_history_append(h->db, h->computer_id, h->sid, h->bot_id, "exit", NULL, 0, code, sig, NULL);
	rk_db_session_end(h->db, h->sid, code, sig, NULL);
}

static void holder_reply(struct holder *h, int client, size_t max_output, const char *error_code,
			 const char *error_message)
{
	cJSON *o = cJSON_CreateObject();
	if (error_code) {
		cJSON *er = cJSON_AddObjectToObject(o, "error");
		cJSON_AddStringToObject(er, "code", error_code);
		cJSON_AddStringToObject(er, "message", error_message);
	} else {
		struct rk_secret_redactor *red = h->pending.len ? holder_redactor(h) : NULL;
		/* for a model, the tail that could begin a secret waits for the next
		 * read, so a value split between two reads reaches it whole (and so
		 * redacted) */
		size_t held = h->keep_back && !h->ended ? rk_secret_redactor_hold(red, h->pending.data, h->pending.len)
							: 0;
		size_t give = h->pending.len - held;
		size_t take = give, skip = 0;
		int truncated = h->dropped;
		if (take > max_output) {
			skip = take - max_output;
			/* start the tail on a character, not inside one */
			while (skip < give && ((unsigned char)h->pending.data[skip] & 0xC0) == 0x80)
				skip++;
			take = give - skip;
			truncated = 1;
		}
		if (give || h->ended)
			history_output(h, red, h->pending.data, give, h->dropped, h->ended);
		rk_secret_redactor_free(red);
		char *b64 = rk_base64_encode(h->pending.data + skip, take);
		cJSON_AddStringToObject(o, "output_b64", b64);
		free(b64);
		cJSON_AddBoolToObject(o, "truncated", truncated);
		cJSON_AddBoolToObject(o, "running", !h->ended);
		if (h->ended) {
			holder_record_end(h);
			cJSON_AddBoolToObject(o, "exited", h->status.exited && !h->status.lost && h->status.signo <= 0);
			cJSON_AddNumberToObject(o, "exit_code", h->status.code);
			cJSON_AddNumberToObject(o, "signo", h->status.signo);
			cJSON_AddBoolToObject(o, "lost", h->status.lost);
		}
		rk_buf_consume(&h->pending, give);
		h->dropped = 0;
	}
	holder_send(h, client, o);
}

static void holder_input(struct holder *h, const char *data, size_t len, struct rk_error *err)
{
	size_t start = 0;
	for (size_t i = 0; i <= len; i++) {
		int special = i < len && !h->tty && (data[i] == 0x03 || data[i] == 0x04);
		if (i < len && !special)
			continue;
		if (i > start && h->proc->ops->write(h->proc, data + start, i - start, err) != 0)
			return;
		if (special) {
			if (data[i] == 0x03)
				h->proc->ops->signal(h->proc, SIGINT, err);
			else
				h->proc->ops->close_stdin(h->proc, err);
		}
		start = i + 1;
	}
}

/* Serves one call: read from client, or given (req_in, client < 0: a call
 * through the state; the reply is kept in h->relayed). Takes req_in. */
static void holder_serve(struct holder *h, int client, cJSON *req_in)
{
	struct rk_error e;
	cJSON *req = req_in ? req_in : rk_ipc_read_request(client, 5000, &e);
	if (!req) {
		holder_reply(h, client, 0, "invalid_argument", e.message);
		return;
	}
	const char *op = rk_json_string(req, "op", "");
	const char *owner = rk_json_string(req, "owner", "");
	int64_t yield = 0, max_out = RK_SESSION_OUTPUT_DEFAULT;
	rk_json_get_int(req, "yield_ms", 0, RK_SESSION_YIELD_MAX_MS, 0, &yield, "request", NULL);
	rk_json_get_int(req, "max_output", 1, 64 * 1024 * 1024, RK_SESSION_OUTPUT_DEFAULT, &max_out, "request", NULL);
	rk_db_session_touch(h->db, h->sid, 0, NULL);
	if (strcmp(owner, h->owner) != 0) {
		holder_reply(h, client, 0, "denied", "this session belongs to someone else");
		cJSON_Delete(req);
		return;
	}
	rk_error_clear(&e);
	if (!strcmp(op, "read") || !strcmp(op, "input")) {
		const char *b64 = rk_json_string(req, "data_b64", NULL);
		if (b64 && *b64 && !h->ended) {
			struct rk_buf in;
			rk_buf_init(&in);
			if (rk_base64_decode(b64, &in) == 0) {
				history_typed(h, in.data, in.len, 0);
				holder_input(h, in.data, in.len, &e);
			}
			rk_buf_release(&in);
		}
		holder_wait(h, rk_monotonic_ms() + yield);
		if (e.code && !h->ended)
			holder_reply(h, client, 0, rk_code_name(e.code), e.message);
		else
			holder_reply(h, client, (size_t)max_out, NULL, NULL);
	} else if (!strcmp(op, "resize")) {
		int64_t rows = 24, cols = 80;
		rk_json_get_int(req, "rows", 1, 1000, 24, &rows, "request", NULL);
		rk_json_get_int(req, "cols", 1, 1000, 80, &cols, "request", NULL);
		if (h->ended)
			holder_reply(h, client, (size_t)max_out, NULL, NULL);
		else if (h->proc->ops->resize(h->proc, (int)rows, (int)cols, &e) != 0)
			holder_reply(h, client, 0, rk_code_name(e.code), e.message);
		else {
			/* a resize hands back nothing: keep the output for the next read */
			cJSON *o = cJSON_CreateObject();
			cJSON_AddBoolToObject(o, "ok", 1);
			holder_send(h, client, o);
		}
	} else if (!strcmp(op, "kill")) {
		if (!h->ended) {
			h->proc->ops->signal(h->proc, SIGTERM, &e);
			holder_wait(h, rk_monotonic_ms() + 2000);
			if (!h->ended) {
				h->proc->ops->signal(h->proc, SIGKILL, &e);
				holder_wait(h, rk_monotonic_ms() + 3000);
			}
			if (!h->ended) { /* the machine does not answer: give up on it */
				h->ended = 1;
				h->status.lost = 1;
			}
		}
		holder_reply(h, client, (size_t)max_out, NULL, NULL);
	} else {
		holder_reply(h, client, 0, "invalid_argument", "unknown session operation");
	}
	cJSON_Delete(req);
}

/* Calls that came through the state (session_calls): a caller on another
 * host, or in another network namespace, cannot reach the holder's
 * abstract socket, so it leaves its request in the shared state and this
 * holder answers there. The number served. */
static int holder_relay(struct holder *h)
{
	struct rk_session_call *calls;
	size_t n;
	if (rk_db_session_calls_open(h->db, h->sid, 16, &calls, &n, NULL) != 0)
		return 0;
	for (size_t i = 0; i < n; i++) {
		cJSON *req = cJSON_Parse(calls[i].request);
		if (req)
			holder_serve(h, -1, req);
		else
			holder_reply(h, -1, 0, "invalid_argument", "the request is not JSON");
		char *reply = h->relayed ? cJSON_PrintUnformatted(h->relayed) : rk_xstrdup("{}");
		cJSON_Delete(h->relayed);
		h->relayed = NULL;
		rk_db_session_call_answer(h->db, calls[i].id, reply, NULL);
		free(reply);
	}
	rk_session_calls_free(calls, n);
	return (int)n;
}

static void holder_loop(struct holder *h, int lsock)
{
	int64_t last_used = rk_monotonic_ms();
	for (;;) {
		struct pollfd pfd[2] = {{.fd = lsock, .events = POLLIN},
					{.fd = h->eof ? -1 : h->proc->ops->poll_fd(h->proc), .events = POLLIN}};
		int pr = poll(pfd, 2, h->eof && !h->ended ? 50 : h->relay ? RELAY_POLL_MS : 1000);
		if (pr < 0 && errno != EINTR)
			break;
		if (h->relay && holder_relay(h)) {
			last_used = rk_monotonic_ms();
			if (h->ended && h->pending.len == 0)
				break;
		}
		if (pfd[1].revents)
			holder_pump(h);
		holder_check_end(h);
		if (pfd[0].revents & POLLIN) {
			int client = rk_ipc_accept(lsock);
			if (client >= 0) {
				holder_serve(h, client, NULL);
				close(client);
				last_used = rk_monotonic_ms();
				/* the end has been handed out: the session is over */
				if (h->ended && h->pending.len == 0)
					break;
			}
		}
		if (rk_monotonic_ms() - last_used > h->idle_ms) {
			rk_log(RK_LOG_INFO, "session %s: idle for %lld ms, ending it", h->sid, (long long)h->idle_ms);
			struct rk_error e;
			if (!h->ended) {
				h->proc->ops->signal(h->proc, SIGKILL, &e);
				holder_wait(h, rk_monotonic_ms() + 2000);
			}
			break;
		}
	}
	holder_record_end(h);
}

struct holder_args {
	const char *data_dir, *owner, *sid;
	const struct rk_computer *c;
	const struct rk_session_request *req;
};

static char *session_name(const char *sid)
{
	return rk_xasprintf("session-%s", sid);
}

/* In the detached holder process; never returns. */
static void holder_main(void *arg, int ready_fd)
{
	const struct holder_args *a = arg;
	const struct rk_computer *c = a->c;
	const struct rk_session_request *req = a->req;
	struct rk_error err;
	struct holder h = {0};
	struct rk_engine eng = {0};
	/* a fresh connection: the parent's must not be used across fork */
	if (rk_db_open(a->data_dir, &h.db, &err) != 0)
		goto fail;
	eng.data_dir = (char *)a->data_dir;
	/* refused before the session's socket exists */
	struct rk_machine_ctx mc;
	if (rk_machine_open(&mc, &eng, c, &err) != 0)
		goto fail;
	if (!mc.ops->exec_spawn) {
		rk_error_set(&err, RK_EUNSUPPORTED, "provider '%s' cannot run commands", c->kind);
		goto fail;
	}
	char *name = session_name(a->sid);
	int lsock = rk_ipc_listen(name, &err);
	free(name);
	if (lsock < 0)
		goto fail;
	struct rk_exec_request xr = {.command = req->command,
				     .cwd = req->cwd,
				     .env = req->env,
				     .tty = req->tty,
				     .rows = req->rows,
				     .cols = req->cols};
	if (rk_machine_exec_spawn(&mc, &xr, &h.proc, &err) != 0)
		goto fail;
	h.sid = (char *)a->sid;
	h.computer_id = c->id;
	h.owner = (char *)a->owner;
	h.bot_id = (char *)req->bot_id;
	h.tty = req->tty;
	h.relay = rk_db_dialect(h.db) == RK_DIALECT_PG;
	rk_buf_init(&h.pending);
	rk_buf_init(&h.typed);
	rk_buf_init(&h.said);
	h.keep_back = req->keep_back;
	h.idle_ms = rk_idle_session_ms();
	rk_db_session_touch(h.db, a->sid, getpid(), NULL);
	eng.db = h.db;
	eng.owner = (char *)a->owner;
	h.eng = &eng;
	if (rk_actor_resolve(&h.actor, &eng, NULL, req->bot_id, &err) != 0)
		memset(&h.actor, 0, sizeof(h.actor)); /* patterns only */
	history_text(&h, NULL, "command", req->command, strlen(req->command));
	rk_ipc_ready(ready_fd, NULL);
	holder_loop(&h, lsock);
	h.proc->ops->free(h.proc);
	rk_db_close(h.db);
	_exit(0);
fail:
	rk_ipc_ready(ready_fd, &err);
	if (h.db)
		rk_db_session_end(h.db, a->sid, -1, -1, NULL);
	_exit(1);
}

/* --- the caller's side ------------------------------------------------------------------ */

static int reply_from_json(const char *sid, const cJSON *o, struct rk_session_reply *out, struct rk_error *err)
{
	memset(out, 0, sizeof(*out));
	const cJSON *er = cJSON_GetObjectItemCaseSensitive(o, "error");
	if (cJSON_IsObject(er))
		return rk_error_set(err, rk_code_from_name(rk_json_string(er, "code", "failed")), "session %s: %s", sid,
				    rk_json_string(er, "message", "failed"));
	struct rk_buf raw;
	rk_buf_init(&raw);
	if (rk_base64_decode(rk_json_string(o, "output_b64", ""), &raw) != 0) {
		rk_buf_release(&raw);
		return rk_error_set(err, RK_ECORRUPT, "session %s: bad output encoding", sid);
	}
	out->output = utf8_sanitize((const unsigned char *)raw.data, raw.len, &out->output_len);
	rk_buf_release(&raw);
	out->truncated = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "truncated"));
	out->running = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "running"));
	if (!out->running) {
		out->exited = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "exited"));
		const cJSON *c = cJSON_GetObjectItemCaseSensitive(o, "exit_code");
		out->exit_code = cJSON_IsNumber(c) ? c->valueint : 0;
		const cJSON *s = cJSON_GetObjectItemCaseSensitive(o, "signo");
		out->signo = cJSON_IsNumber(s) ? s->valueint : 0;
		out->lost = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "lost"));
	} else {
		out->session = rk_xstrdup(sid);
	}
	return 0;
}

/* A call through the state, for a holder this process cannot reach (on
 * another host or in another network namespace, sharing a PostgreSQL
 * state): the request is left in session_calls and the holder answers it
 * there (holder_relay). */
static int relay_call(struct rk_engine *eng, const char *sid, const cJSON *req, int64_t timeout_ms, cJSON **reply,
		      struct rk_error *err)
{
	char *id = rk_id_new("scall");
	char *text = cJSON_PrintUnformatted(req);
	int r = rk_db_session_call_put(eng->db, id, sid, text, rk_now_ms(), err);
	free(text);
	char *answer = NULL;
	int64_t until = rk_monotonic_ms() + timeout_ms;
	for (int gave_up = 0; r == 0 && !answer;) {
		int got = rk_db_session_call_reply(eng->db, id, &answer, err);
		if (got < 0) {
			r = got;
			break;
		}
		if (answer || gave_up)
			break;
		if (rk_monotonic_ms() >= until) {
			/* withdraw it; if that finds it answered meanwhile, read once more */
			if (rk_db_session_call_withdraw(eng->db, id, err) > 0)
				r = rk_error_set(err, RK_EOUTCOME_UNKNOWN,
						 "session %s: no holder answered through the state in %lld ms (its host "
						 "may be down); any input may not have been delivered",
						 sid, (long long)timeout_ms);
			gave_up = 1;
			continue;
		}
		rk_sleep_ms(RELAY_WAIT_STEP_MS);
	}
	rk_db_session_call_forget(eng->db, id, NULL);
	free(id);
	if (r == 0 && !(*reply = answer ? cJSON_Parse(answer) : NULL))
		r = rk_error_set(err, RK_ECORRUPT, "session %s: the holder's reply through the state is not JSON", sid);
	free(answer);
	return r;
}

/* Whether the state still has sid running (a holder somewhere). */
static int session_live_in_state(struct rk_engine *eng, const char *sid)
{
	struct rk_session_row s = {0};
	int live = rk_db_session_get(eng->db, sid, &s, NULL) == 0 && rk_session_state_of(s.state) != RK_SESSION_ENDED;
	rk_session_row_release(&s);
	return live;
}

static int session_call(struct rk_engine *eng, const char *sid, const char *op, const void *data, size_t len,
			int64_t yield_ms, size_t max_output, cJSON *extra, struct rk_session_reply *out,
			struct rk_error *err)
{
	cJSON *req = extra ? extra : cJSON_CreateObject();
	cJSON_AddStringToObject(req, "op", op);
	cJSON_AddStringToObject(req, "owner", eng->owner);
	cJSON_AddNumberToObject(req, "yield_ms", (double)yield_ms);
	cJSON_AddNumberToObject(req, "max_output", (double)(max_output ? max_output : RK_SESSION_OUTPUT_DEFAULT));
	if (len) {
		char *b64 = rk_base64_encode(data, len);
		cJSON_AddStringToObject(req, "data_b64", b64);
		free(b64);
	}
	cJSON *reply = NULL;
	/* the holder answers within the yield, or within the kill's 5 s */
	char *name = session_name(sid);
	int r = rk_ipc_call(name, req, yield_ms + 15000, &reply, err);
	free(name);
	if (r == -RK_ENOTFOUND && rk_db_dialect(eng->db) == RK_DIALECT_PG && session_live_in_state(eng, sid))
		r = relay_call(eng, sid, req, yield_ms + 15000, &reply, err);
	if (r == -RK_ENOTFOUND)
		r = rk_error_set(err, RK_ENOTFOUND, "session %s has ended (its holder is gone)", sid);
	else if (r == -RK_EOUTCOME_UNKNOWN)
		/* the input may have reached the command: never send it again */
		r = rk_error_set(err, RK_EOUTCOME_UNKNOWN,
				 "session %s: the reply was lost; its input may have been delivered (read with empty "
				 "input to see)",
				 sid);
	cJSON_Delete(req);
	if (r)
		return r;
	if (out)
		r = reply_from_json(sid, reply, out, err);
	else if (cJSON_GetObjectItemCaseSensitive(reply, "error"))
		r = rk_error_set(err,
				 rk_code_from_name(rk_json_string(cJSON_GetObjectItemCaseSensitive(reply, "error"),
								  "code", "failed")),
				 "session %s: %s", sid,
				 rk_json_string(cJSON_GetObjectItemCaseSensitive(reply, "error"), "message", "failed"));
	cJSON_Delete(reply);
	return r;
}

/* The session must be this computer's and this caller's. */
static int check_session(struct rk_engine *eng, const char *computer_id, const char *sid, struct rk_error *err)
{
	struct rk_session_row s = {0};
	int r = rk_db_session_get(eng->db, sid, &s, err);
	if (r)
		return r;
	if (strcmp(s.computer_id, computer_id) != 0)
		r = rk_error_set(err, RK_ENOTFOUND, "session %s does not belong to this computer", sid);
	else if (strcmp(s.owner, eng->owner) != 0)
		r = rk_error_set(err, RK_EDENIED, "session %s belongs to %s", sid, s.owner);
	else if (rk_session_state_of(s.state) == RK_SESSION_ENDED)
		r = rk_error_set(err, RK_ENOTFOUND, "session %s has ended", sid);
	rk_session_row_release(&s);
	return r;
}

int rk_session_start(struct rk_engine *eng, struct rk_computer *c, const struct rk_session_request *req,
		     struct rk_session_reply *out, struct rk_error *err)
{
	int64_t yield = req->yield_ms ? req->yield_ms : RK_SESSION_YIELD_DEFAULT_MS;
	int r;
	if ((r = rk_session_check_yield(yield, err)))
		return r;
	if (!req->command || !*req->command)
		return rk_error_set(err, RK_EUSAGE, "no command given");
	if (req->tty && (req->rows < 0 || req->rows > 1000 || req->cols < 0 || req->cols > 1000))
		return rk_error_set(err, RK_EINVALID, "rows and cols must be from 1 to 1000");
	if ((r = rk_computer_ensure_running(eng, c, err)))
		return r;
	const struct rk_provider_ops *ops = rk_engine_provider(c, err);
	if (!ops)
		return -rk_err(err)->code;
	if (req->tty && !(ops->caps & RK_CAP_TTY))
		return rk_error_set(err, RK_EUNSUPPORTED, "provider '%s' gives no terminal: run without --tty",
				    c->kind);

	char *sid = rk_id_new("cse");
	/* the sessions list shows the command as history does: redacted */
	struct rk_actor a = {0};
	struct rk_error e;
	struct rk_buf shown;
	rk_buf_init(&shown);
	rk_buf_adds(&shown, req->command);
	rk_secret_redact_history(eng, rk_actor_resolve(&a, eng, NULL, req->bot_id, &e) == 0 ? &a : NULL, &shown);
	rk_actor_release(&a);
	struct rk_session_row row = {.id = sid,
				     .computer_id = c->id,
				     .owner = eng->owner,
				     .command = shown.data,
				     .tty = req->tty,
				     .created_at = rk_now_ms()};
	r = rk_db_session_insert(eng->db, &row, err);
	sodium_memzero(shown.data, shown.len);
	rk_buf_release(&shown);
	if (r) {
		free(sid);
		return r;
	}
	struct holder_args ha = {.data_dir = eng->data_dir, .owner = eng->owner, .sid = sid, .c = c, .req = req};
	if ((r = rk_engine_spawn(eng, holder_main, &ha, err))) {
		free(sid);
		return r;
	}
	r = session_call(eng, sid, "read", NULL, 0, yield, req->max_output, NULL, out, err);
	free(sid);
	return r;
}

int rk_session_input(struct rk_engine *eng, const char *computer_id, const char *session_id, const void *data,
		     size_t len, int64_t yield_ms, size_t max_output, struct rk_session_reply *out,
		     struct rk_error *err)
{
	int r = check_session(eng, computer_id, session_id, err);
	if (r)
		return r;
	if ((r = rk_session_check_yield(yield_ms, err)))
		return r;
	return session_call(eng, session_id, "input", data, len, yield_ms, max_output, NULL, out, err);
}

int rk_session_resize(struct rk_engine *eng, const char *computer_id, const char *session_id, int rows, int cols,
		      struct rk_error *err)
{
	int r = check_session(eng, computer_id, session_id, err);
	if (r)
		return r;
	if (rows < 1 || rows > 1000 || cols < 1 || cols > 1000)
		return rk_error_set(err, RK_EINVALID, "rows and cols must be from 1 to 1000");
	cJSON *extra = cJSON_CreateObject();
	cJSON_AddNumberToObject(extra, "rows", rows);
	cJSON_AddNumberToObject(extra, "cols", cols);
	return session_call(eng, session_id, "resize", NULL, 0, 0, 0, extra, NULL, err);
}

int rk_session_kill(struct rk_engine *eng, const char *computer_id, const char *session_id,
		    struct rk_session_reply *out, struct rk_error *err)
{
	int r = check_session(eng, computer_id, session_id, err);
	if (r)
		return r;
	return session_call(eng, session_id, "kill", NULL, 0, 0, 0, NULL, out, err);
}
