/* Screen capabilities and their forwarders (see gateway.h); the WebSocket
 * side is gateway_server.c. The capabilities table's SQL is in
 * engine/state/db_gateway.c. */

#include "engine/gateway/gateway.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "engine/state/db_api.h"
#include "engine/state/db_gateway.h"
#include "engine/state/db_team.h"
#include "engine/machine/machine.h"
#include "engine/access/authz.h"
#include "engine/machine/display.h"
#include "engine/gateway/gateway_upstream.h"
#include "engine/screen/rfb.h"
#include "engine/machine/team.h"
#include "engine/util/buf.h"
#include "engine/util/fs.h"
#include "engine/util/id.h"
#include "engine/util/log.h"
#include "engine/util/time.h"

#define TOKEN_BYTES 32
#define HASH_BYTES 32
#define FORWARDER_TICK_MS 200
#define HANDSHAKE_MS 15000
#define STOP_WAIT_MS 5000
#define KILL_WAIT_MS 3000
#define MAX_CLIENTS 64
#define CONTROL_CHECK_MS 500

const char *rk_gateway_policy_name(enum rk_gateway_policy p)
{
	return p == RK_GATEWAY_CONTROL ? "control" : "view";
}

void rk_gateway_cap_release(struct rk_gateway_cap *cap)
{
	if (!cap)
		return;
	free(cap->id);
	free(cap->computer_id);
	free(cap->bot_id);
	free(cap->socket_path);
	free(cap->vnc_socket);
	free(cap->revoke_reason);
	free(cap->created_by);
	rk_actor_release(&cap->maker);
	free(cap->maker_token);
	memset(cap, 0, sizeof(*cap));
}

static const char *cap_state(const struct rk_gateway_cap *cap, int64_t now)
{
	if (cap->revoked_at)
		return "revoked";
	if (now >= cap->expires_at)
		return "expired";
	return "live";
}

cJSON *rk_gateway_cap_to_json(const struct rk_gateway_cap *cap, int64_t now_ms)
{
	char t[40];
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "id", cap->id);
	cJSON_AddStringToObject(o, "computer_id", cap->computer_id);
	cJSON_AddNumberToObject(o, "display", cap->display);
	if (cap->bot_id) {
		cJSON_AddStringToObject(o, "bot", cap->bot_id);
		cJSON_AddNumberToObject(o, "generation", (double)cap->generation);
	} else {
		cJSON_AddNullToObject(o, "bot");
	}
	cJSON_AddStringToObject(o, "policy", rk_gateway_policy_name(cap->policy));
	cJSON_AddStringToObject(o, "created_at", rk_iso8601(cap->created_at, t, sizeof(t)));
	cJSON_AddStringToObject(o, "expires_at", rk_iso8601(cap->expires_at, t, sizeof(t)));
	if (cap->revoked_at)
		cJSON_AddStringToObject(o, "revoked_at", rk_iso8601(cap->revoked_at, t, sizeof(t)));
	cJSON_AddStringToObject(o, "state", cap_state(cap, now_ms));
	return o;
}

/* --- tokens ------------------------------------------------------------------- */

static char *token_new(void)
{
	unsigned char raw[TOKEN_BYTES];
	size_t n = sodium_base64_ENCODED_LEN(sizeof(raw), sodium_base64_VARIANT_URLSAFE_NO_PADDING);
	char *s = rk_xmalloc(n);
	/* never a leading '-': `rakazo screen revoke TOKEN` would take it for
	 * an option (1 token in 64; a CI run hit it) */
	do {
		rk_random_bytes(raw, sizeof(raw));
		sodium_bin2base64(s, n, raw, sizeof(raw), sodium_base64_VARIANT_URLSAFE_NO_PADDING);
	} while (s[0] == '-');
	sodium_memzero(raw, sizeof(raw));
	return s;
}

/* A token is 43 base64url characters; anything else is not one of ours. */
static int token_wellformed(const char *t)
{
	size_t n = 0;
	for (; t && t[n]; n++) {
		char ch = t[n];
		if (!((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '-' ||
		      ch == '_'))
			return 0;
		if (n > 64)
			return 0;
	}
	return n == 43;
}

static void token_hash(const char *token, unsigned char out[HASH_BYTES])
{
	crypto_generichash(out, HASH_BYTES, (const unsigned char *)token, strlen(token), NULL, 0);
}

static void hash_hex(const unsigned char h[HASH_BYTES], char out[2 * HASH_BYTES + 1])
{
	sodium_bin2hex(out, 2 * HASH_BYTES + 1, h, HASH_BYTES);
}

/* --- paths and slot identity ------------------------------------------------------ */

static char *gw_dir(const char *data_dir)
{
	return rk_xasprintf("%s/run/gateway", data_dir);
}

static char *lock_path(const char *data_dir, const char *id)
{
	return rk_xasprintf("%s/run/gateway/%s.lock", data_dir, id);
}

/* The identity of a VNC socket file: a new x11vnc makes a new file, so a
 * different device, inode or change time means the slot was restarted. */
static int slot_identity(const char *path, int64_t *dev, int64_t *ino, int64_t *ctime_ns)
{
	struct stat st;
	if (stat(path, &st) != 0 || !S_ISSOCK(st.st_mode))
		return -1;
	*dev = (int64_t)st.st_dev;
	*ino = (int64_t)st.st_ino;
	*ctime_ns = (int64_t)st.st_ctim.tv_sec * 1000000000LL + st.st_ctim.tv_nsec;
	return 0;
}

struct slot_id {
	int64_t dev, ino, ctime_ns;
};

static int slot_same(const char *path, const struct slot_id *want)
{
	struct slot_id now;
	if (slot_identity(path, &now.dev, &now.ino, &now.ctime_ns) != 0)
		return 0;
	return now.dev == want->dev && now.ino == want->ino && now.ctime_ns == want->ctime_ns;
}

/* --- the table ---------------------------------------------------------------------- */

/* The capability of row, whose strings it takes over; the stored hash goes
 * to hash when given. */
static void cap_from_row(struct rk_screen_cap_row *row, struct rk_gateway_cap *cap, int64_t *ctime_ns,
			 unsigned char *hash)
{
	memset(cap, 0, sizeof(*cap));
	if (hash) {
		size_t bin_len = 0;
		memset(hash, 0, HASH_BYTES);
		if (row->token_hash)
			sodium_hex2bin(hash, HASH_BYTES, row->token_hash, strlen(row->token_hash), NULL, &bin_len,
				       NULL);
	}
	cap->id = row->id;
	cap->computer_id = row->computer_id;
	cap->display = row->display;
	cap->bot_id = row->bot_id;
	cap->generation = row->generation;
	cap->policy = row->policy && !strcmp(row->policy, "control") ? RK_GATEWAY_CONTROL : RK_GATEWAY_VIEW;
	cap->socket_path = row->socket_path;
	cap->vnc_socket = row->vnc_socket;
	cap->vnc_dev = row->vnc_dev;
	cap->vnc_ino = row->vnc_ino;
	if (ctime_ns)
		*ctime_ns = row->vnc_ctime_ns;
	cap->created_at = row->created_at;
	cap->expires_at = row->expires_at;
	cap->revoked_at = row->revoked_at;
	cap->revoke_reason = row->revoke_reason;
	cap->created_by = row->created_by;
	cap->maker.user = row->maker_user;
	cap->maker.space = row->maker_space;
	cap->maker.bot = row->maker_bot;
	cap->maker_token = row->maker_token;
	free(row->token_hash);
	free(row->policy);
	memset(row, 0, sizeof(*row));
}

static int cap_insert(struct rk_engine *eng, const struct rk_gateway_cap *cap, const char *hash_hex_s, int64_t ctime_ns,
		      struct rk_error *err)
{
	/* the row borrows cap's strings */
	struct rk_screen_cap_row row = {
		.id = cap->id,
		.token_hash = (char *)hash_hex_s,
		.computer_id = cap->computer_id,
		.display = cap->display,
		.bot_id = cap->bot_id,
		.generation = cap->generation,
		.policy = (char *)rk_gateway_policy_name(cap->policy),
		.socket_path = cap->socket_path,
		.vnc_socket = cap->vnc_socket,
		.vnc_dev = cap->vnc_dev,
		.vnc_ino = cap->vnc_ino,
		.vnc_ctime_ns = ctime_ns,
		.created_at = cap->created_at,
		.expires_at = cap->expires_at,
		.created_by = cap->created_by ? cap->created_by : "",
		.maker_user = cap->maker.user,
		.maker_space = cap->maker.space,
		.maker_bot = cap->maker.bot,
		.maker_token = cap->maker_token,
	};
	return rk_db_screen_cap_insert(eng->db, &row, err);
}

/* Finds a capability by the hash of a token (1), or not (0). */
static int cap_by_hash(struct rk_engine *eng, const unsigned char hash[HASH_BYTES], struct rk_gateway_cap *out,
		       int64_t *ctime_ns, struct rk_error *err)
{
	char hex[2 * HASH_BYTES + 1];
	hash_hex(hash, hex);
	struct rk_screen_cap_row row;
	int r = rk_db_screen_cap_by_hash(eng->db, hex, &row, err);
	if (r <= 0)
		return r;
	unsigned char stored[HASH_BYTES];
	cap_from_row(&row, out, ctime_ns, stored);
	/* the index found it; the comparison that decides is constant time */
	if (sodium_memcmp(stored, hash, HASH_BYTES) == 0)
		return 1;
	rk_gateway_cap_release(out);
	return 0;
}

/* The capabilities f selects, oldest first. */
static int caps_where(struct rk_engine *eng, const struct rk_screen_cap_filter *f, struct rk_gateway_cap **out,
		      size_t *n, struct rk_error *err)
{
	struct rk_screen_cap_row *rows;
	size_t count;
	int r = rk_db_screen_cap_list(eng->db, f, &rows, &count, err);
	if (r)
		return r;
	struct rk_gateway_cap *arr = rk_xcalloc(count ? count : 1, sizeof(*arr));
	for (size_t i = 0; i < count; i++)
		cap_from_row(&rows[i], &arr[i], NULL, NULL);
	free(rows);
	*out = arr;
	*n = count;
	return 0;
}

static int cap_mark_revoked(struct rk_engine *eng, const char *id, const char *reason, struct rk_error *err)
{
	return rk_db_screen_cap_revoke(eng->db, id, reason, rk_now_ms(), err);
}

void rk_gateway_caps_free(struct rk_gateway_cap *caps, size_t n)
{
	for (size_t i = 0; i < n; i++)
		rk_gateway_cap_release(&caps[i]);
	free(caps);
}

/* The capabilities of scope that f also selects (its computer is scope's):
 * what scope's actor may use. */
static int scope_where(struct rk_engine *eng, const struct rk_gateway_scope *scope, struct rk_screen_cap_filter f,
		       struct rk_gateway_cap **out, size_t *n, struct rk_error *err)
{
	f.computer_id = scope->computer_id;
	struct rk_gateway_cap *caps = NULL;
	size_t count = 0, keep = 0;
	int r = caps_where(eng, &f, &caps, &count, err);
	if (r)
		return r;
	for (size_t i = 0; i < count; i++) {
		if (rk_authz_may_use_id(eng, scope->actor, caps[i].computer_id))
			caps[keep++] = caps[i];
		else
			rk_gateway_cap_release(&caps[i]);
	}
	*out = caps;
	*n = keep;
	return 0;
}

int rk_gateway_list(struct rk_engine *eng, const struct rk_gateway_scope *scope, int all, struct rk_gateway_cap **out,
		    size_t *n, struct rk_error *err)
{
	struct rk_screen_cap_filter f = {.display = -1, .live_at = all ? -1 : rk_now_ms()};
	return scope_where(eng, scope, f, out, n, err);
}

/* --- the policy hooks --------------------------------------------------------------- */

int rk_gateway_bot_slot(struct rk_engine *eng, const struct rk_computer *c, const char *bot_id, int *display,
			int64_t *generation, struct rk_error *err)
{
	int r = rk_team_bot_check(bot_id, err);
	if (r)
		return r;
	if ((r = rk_team_screen_slot(eng, c->id, bot_id, display, generation, err)) &&
	    rk_err(err)->code == RK_ENOTFOUND)
		rk_error_set(
			err, RK_ENOTFOUND,
			"bot '%s' has no live screen on computer '%s': it starts with the bot's first graphical call "
			"(`rakazo screen shot %s --bot %s`)",
			bot_id, c->name, c->name, bot_id);
	return r;
}

/* Whether cap's bot screen is still the tenancy it was made for: the bot
 * has the same slot, at the same generation. */
static int bot_slot_same(struct rk_engine *eng, const struct rk_gateway_cap *cap)
{
	int display;
	int64_t generation;
	struct rk_error e;
	return rk_team_screen_slot(eng, cap->computer_id, cap->bot_id, &display, &generation, &e) == 0 &&
	       display == cap->display && generation == cap->generation;
}

int rk_gateway_control_held(struct rk_engine *eng, const struct rk_gateway_cap *cap, struct rk_error *err)
{
	if (cap->policy != RK_GATEWAY_CONTROL)
		return rk_error_set(err, RK_EDENIED, "capability %s is view-only", cap->id);
	if (cap->revoked_at || rk_now_ms() >= cap->expires_at)
		return rk_error_set(err, RK_ESTALE, "control of display %d has ended", cap->display);
	if (!cap->bot_id)
		return 0;
	struct rk_computer c = {0};
	struct rk_error ce;
	const char *name = rk_db_computer_get(eng->db, cap->computer_id, &c, &ce) == 0 ? c.name : cap->computer_id;
	int r = rk_team_bot_busy(eng->db, cap->computer_id, name, cap->bot_id, NULL, err);
	char *holder = NULL;
	if (r == 0 && (!rk_team_control_live(eng->db, cap->computer_id, cap->bot_id, &holder) || !holder ||
		       !cap->created_by || strcmp(holder, cap->created_by) != 0))
		r = rk_error_set(err, RK_EDENIED,
				 "%s does not hold control of the screen of bot '%s' on computer '%s': take it first "
				 "(`rakazo screen takeover %s --bot %s`)",
				 cap->created_by && *cap->created_by ? cap->created_by : "the sharer", cap->bot_id,
				 name, name, cap->bot_id);
	free(holder);
	rk_computer_release(&c);
	return r;
}

/* Whether (computer, bot) is controlled by holder now, read by a forwarder
 * through its own connection to the database (it must not use the
 * parent's): 1 yes, 0 no, -1 when the database could not be read (the
 * forwarder then asks again on its next tick). */
static int control_live_fresh(const char *data_dir, const struct rk_gateway_cap *cap)
{
	return rk_db_control_held_fresh(data_dir, cap->computer_id, cap->bot_id, cap->created_by ? cap->created_by : "",
					rk_now_ms());
}

/* --- the forwarder -------------------------------------------------------------------- */

struct forwarder_args {
	const char *data_dir;
	const struct rk_gateway_cap *cap;
	struct slot_id slot;
	const char *upstream; /* a desktop behind a WebSocket (gateway_upstream.h): its secret address */
	const char *run_dir;  /* with upstream: the computer's DATA_DIR/run/<id>, gone once it is deleted */
};

/* A capability on a desktop behind a WebSocket: its row names the public
 * address (a URL) where others name a VNC socket's path. Such a desktop has
 * one screen and no slot to reuse; its secret binds the capability to it,
 * and a restarted desktop refuses the old one. */
static int cap_upstream(const struct rk_gateway_cap *cap)
{
	return cap->vnc_socket && cap->vnc_socket[0] != '/';
}

/* Whether the capability's desktop is still the one it was made for. */
static int cap_slot_same(const struct rk_gateway_cap *cap, const struct slot_id *slot)
{
	return cap_upstream(cap) || slot_same(cap->vnc_socket, slot);
}

static volatile sig_atomic_t fw_stop;

static void on_fw_term(int sig)
{
	(void)sig;
	fw_stop = 1;
}

/* Reads exactly n bytes before the deadline. */
static int read_exact(int fd, void *buf, size_t n, int64_t deadline)
{
	size_t got = 0;
	while (got < n) {
		int64_t left = deadline - rk_monotonic_ms();
		if (left <= 0)
			return -1;
		struct pollfd p = {.fd = fd, .events = POLLIN};
		int pr = poll(&p, 1, (int)left);
		if (pr < 0 && errno == EINTR)
			continue;
		if (pr <= 0)
			return -1;
		ssize_t r = read(fd, (char *)buf + got, n - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		got += (size_t)r;
	}
	return 0;
}

/* Moves exactly n bytes from one side to the other. */
static int pass_exact(int from, int to, size_t n, int64_t deadline)
{
	unsigned char buf[256];
	while (n) {
		size_t k = n < sizeof(buf) ? n : sizeof(buf);
		if (read_exact(from, buf, k, deadline) != 0 || rk_fs_write_fd(to, buf, k) != 0)
			return -1;
		n -= k;
	}
	return 0;
}

static uint32_t be32(const unsigned char *p)
{
	return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}

/* Passes a failure reason (u32 length + text) on before closing. */
static void pass_reason(int vnc, int client, int64_t deadline)
{
	unsigned char l[4];
	if (read_exact(vnc, l, 4, deadline) != 0)
		return;
	uint32_t n = be32(l);
	if (n > 4096)
		return;
	if (rk_fs_write_fd(client, l, 4) == 0)
		pass_exact(vnc, client, n, deadline);
}

/* Relays the RFB handshake up to and including ClientInit, reading both
 * sides so the relay knows where the client's messages begin. Only the
 * None and VNC password security types are let through (others have
 * sub-protocols the relay would have to follow). 0: messages follow. */
static int handshake(int client, int vnc, int64_t deadline)
{
	unsigned char v[12], b[4];
	if (read_exact(vnc, v, 12, deadline) != 0 || rk_fs_write_fd(client, v, 12) != 0)
		return -1;
	if (read_exact(client, v, 12, deadline) != 0)
		return -1;
	int major = 0, minor = 0;
	if (memcmp(v, "RFB ", 4) != 0 || v[11] != '\n' || sscanf((const char *)v + 4, "%3d.%3d", &major, &minor) != 2 ||
	    major != 3)
		return -1;
	minor = minor >= 8 ? 8 : minor == 7 ? 7 : 3;
	if (rk_fs_write_fd(vnc, v, 12) != 0)
		return -1;
	uint32_t type;
	if (minor == 3) {
		if (read_exact(vnc, b, 4, deadline) != 0 || rk_fs_write_fd(client, b, 4) != 0)
			return -1;
		type = be32(b);
		if (type == 0) {
			pass_reason(vnc, client, deadline);
			return -1;
		}
	} else {
		unsigned char n, types[255], choice;
		if (read_exact(vnc, &n, 1, deadline) != 0 || rk_fs_write_fd(client, &n, 1) != 0)
			return -1;
		if (n == 0) {
			pass_reason(vnc, client, deadline);
			return -1;
		}
		if (read_exact(vnc, types, n, deadline) != 0 || rk_fs_write_fd(client, types, n) != 0)
			return -1;
		if (read_exact(client, &choice, 1, deadline) != 0 || !memchr(types, choice, n))
			return -1;
		type = choice;
		if (type != 1 && type != 2)
			return -1;
		if (rk_fs_write_fd(vnc, &choice, 1) != 0)
			return -1;
	}
	if (type == 2) {
		if (pass_exact(vnc, client, 16, deadline) != 0 || pass_exact(client, vnc, 16, deadline) != 0)
			return -1;
	} else if (type != 1) {
		return -1;
	}
	if (type == 2 || minor == 8) { /* SecurityResult */
		if (read_exact(vnc, b, 4, deadline) != 0 || rk_fs_write_fd(client, b, 4) != 0)
			return -1;
		if (be32(b) != 0) {
			if (minor == 8)
				pass_reason(vnc, client, deadline);
			return -1;
		}
	}
	unsigned char shared;
	if (read_exact(client, &shared, 1, deadline) != 0)
		return -1;
	shared = 1; /* a viewer never takes the display from its other clients */
	return rk_fs_write_fd(vnc, &shared, 1) == 0 ? 0 : -1;
}

static int connect_unix(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	if (strlen(path) >= sizeof(sa.sun_path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(sa.sun_path, path, strlen(path) + 1);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		int e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

/* Tells an RFB client why it gets no desktop, the way a VNC server does
 * (RFC 6143 7.1.2: no security types and a reason; 3.3: connection failed),
 * so noVNC shows the reason; then the connection closes. */
static void refuse_rfb(int client, const char *reason, int64_t deadline)
{
	unsigned char v[12];
	if (rk_fs_write_fd(client, "RFB 003.008\n", 12) != 0 || read_exact(client, v, 12, deadline) != 0)
		return;
	size_t n = strlen(reason);
	unsigned char hdr[8] = {0,
				0,
				0,
				0,
				(unsigned char)(n >> 24),
				(unsigned char)(n >> 16),
				(unsigned char)(n >> 8),
				(unsigned char)n};
	int old = memcmp(v, "RFB 003.003", 11) == 0;
	/* 3.7 and 3.8: one zero byte of type count; 3.3: a zero u32 */
	if (rk_fs_write_fd(client, old ? hdr : hdr + 3, old ? 8 : 5) == 0)
		rk_fs_write_fd(client, reason, n);
}

/* One client connection, in its own process: handshake, then both ways. */
static void relay(int client, const struct forwarder_args *a)
{
	const struct rk_gateway_cap *cap = a->cap;
	int vnc = -1;
	if (a->upstream) {
		struct rk_upstream *up = NULL;
		struct rk_error err;
		if (rk_upstream_open(a->upstream, HANDSHAKE_MS, &up, &err) != 0) {
			rk_log(RK_LOG_WARN, "gateway: capability %s: %s", cap->id, err.message);
			refuse_rfb(client, err.message, rk_monotonic_ms() + HANDSHAKE_MS);
			_exit(1);
		}
		vnc = rk_upstream_fd(up); /* the bridge lives until this process ends */
	} else if (!slot_same(cap->vnc_socket, &a->slot) || (vnc = connect_unix(cap->vnc_socket)) < 0) {
		_exit(1);
	}
	if (handshake(client, vnc, rk_monotonic_ms() + HANDSHAKE_MS) != 0)
		_exit(1);
	int view = cap->policy == RK_GATEWAY_VIEW;
	struct rk_rfb_filter f;
	rk_rfb_filter_init(&f);
	struct rk_buf out;
	rk_buf_init(&out);
	static unsigned char buf[262144];
	for (;;) {
		struct pollfd p[2] = {{.fd = vnc, .events = POLLIN}, {.fd = client, .events = POLLIN}};
		int pr = poll(p, 2, 1000);
		if (pr < 0 && errno != EINTR)
			break;
		if (pr <= 0)
			continue;
		if (p[0].revents) {
			ssize_t r = read(vnc, buf, sizeof(buf));
			if (r <= 0 || rk_fs_write_fd(client, buf, (size_t)r) != 0)
				break;
		}
		if (p[1].revents) {
			ssize_t r = read(client, buf, sizeof(buf));
			if (r <= 0)
				break;
			if (!view) {
				if (rk_fs_write_fd(vnc, buf, (size_t)r) != 0)
					break;
				continue;
			}
			rk_buf_reset(&out);
			if (rk_rfb_filter_feed(&f, buf, (size_t)r, &out) != 0)
				break;
			if (out.len && rk_fs_write_fd(vnc, out.data, out.len) != 0)
				break;
		}
	}
	_exit(0);
}

static int listen_unix(const char *path, struct rk_error *err)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	if (strlen(path) >= sizeof(sa.sun_path))
		return rk_error_set(err, RK_EINVALID,
				    "capability socket path %s is too long for a unix socket: use a "
				    "shorter RAKAZO_DATA_DIR",
				    path);
	memcpy(sa.sun_path, path, strlen(path) + 1);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return rk_error_errno(err, RK_EIO, errno, "cannot make a unix socket");
	unlink(path);
	mode_t old = umask(0077);
	int r = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
	umask(old);
	if (r != 0 || listen(fd, 16) != 0) {
		int e = errno;
		close(fd);
		return rk_error_errno(err, RK_EIO, e, "cannot listen on %s", path);
	}
	return fd;
}

static int same_uid_peer(int fd)
{
	struct ucred cr;
	socklen_t len = sizeof(cr);
	return getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) == 0 && cr.uid == getuid();
}

static void forwarder_main(void *arg, int ready_fd)
{
	const struct forwarder_args *a = arg;
	const struct rk_gateway_cap *cap = a->cap;
	struct rk_error err;
	pid_t kids[MAX_CLIENTS];
	int nkids = 0;
	rk_log_open(a->data_dir);
	char *lp = lock_path(a->data_dir, cap->id);
	/* held by this process and every client relay it forks: revoke knows
	 * all of them are gone when it can take the lock */
	int lock = open(lp, O_RDWR | O_CREAT, 0600);
	if (lock < 0 || flock(lock, LOCK_EX | LOCK_NB) != 0) {
		rk_error_errno(&err, RK_ECONFLICT, errno, "cannot lock %s", lp);
		goto fail;
	}
	char pid[32];
	int pl = snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
	if (ftruncate(lock, 0) != 0 || rk_fs_write_fd(lock, pid, (size_t)pl) != 0) {
		rk_error_errno(&err, RK_EIO, errno, "cannot write %s", lp);
		goto fail;
	}
	int lsock = listen_unix(cap->socket_path, &err);
	if (lsock < 0)
		goto fail;
	struct stat own;
	if (stat(cap->socket_path, &own) != 0) {
		rk_error_errno(&err, RK_EIO, errno, "cannot stat %s", cap->socket_path);
		goto fail;
	}
	struct sigaction sa = {.sa_handler = on_fw_term};
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	pid_t self = getpid();
	rk_ipc_ready(ready_fd, NULL);
	const char *why = "stopped";
	int takeover_bound = cap->policy == RK_GATEWAY_CONTROL && cap->bot_id;
	/* an upstream has no socket to watch: the computer's run directory is
	 * what goes when it is deleted */
	struct stat run_st;
	int watch_run = a->upstream && a->run_dir && stat(a->run_dir, &run_st) == 0;
	int64_t next_control_check = 0;
	while (!fw_stop) {
		struct pollfd p = {.fd = lsock, .events = POLLIN};
		int pr = poll(&p, 1, FORWARDER_TICK_MS);
		for (int i = 0; i < nkids;) { /* reap finished relays */
			if (waitpid(kids[i], NULL, WNOHANG) == kids[i])
				kids[i] = kids[--nkids];
			else
				i++;
		}
		if (rk_now_ms() >= cap->expires_at) {
			why = "expired";
			break;
		}
		if (!cap_slot_same(cap, &a->slot)) {
			why = "the slot's VNC server changed";
			break;
		}
		if (watch_run && stat(a->run_dir, &run_st) != 0) {
			why = "its computer was deleted";
			break;
		}
		struct stat now;
		if (stat(cap->socket_path, &now) != 0 || now.st_ino != own.st_ino || now.st_dev != own.st_dev) {
			why = "its socket was removed";
			break;
		}
		if (takeover_bound && rk_monotonic_ms() >= next_control_check) {
			if (control_live_fresh(a->data_dir, cap) == 0) {
				why = "the takeover it was made under ended";
				break;
			}
			next_control_check = rk_monotonic_ms() + CONTROL_CHECK_MS;
		}
		if (pr <= 0)
			continue;
		int c = accept4(lsock, NULL, NULL, SOCK_CLOEXEC);
		if (c < 0)
			continue;
		if (!same_uid_peer(c) || nkids >= MAX_CLIENTS) {
			close(c);
			continue;
		}
		pid_t k = fork();
		if (k == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			if (getppid() != self)
				_exit(1);
			close(lsock);
			signal(SIGTERM, SIG_DFL);
			relay(c, a);
		}
		if (k > 0)
			kids[nkids++] = k;
		close(c);
	}
	/* clients first: then nothing holds the lock but this process */
	for (int i = 0; i < nkids; i++)
		kill(kids[i], SIGKILL);
	for (int i = 0; i < nkids; i++)
		waitpid(kids[i], NULL, 0);
	struct stat now;
	if (stat(cap->socket_path, &now) == 0 && now.st_ino == own.st_ino && now.st_dev == own.st_dev)
		unlink(cap->socket_path);
	rk_log(RK_LOG_INFO, "gateway: capability %s forwarder ended (%s)", cap->id, why);
	unlink(lp);
	free(lp);
	_exit(0);
fail:
	rk_ipc_ready(ready_fd, &err);
	free(lp);
	_exit(1);
}

/* Whether a capability's forwarder (or one of its relays) is alive: it
 * holds the lock. */
static int forwarder_alive(const char *data_dir, const char *id, pid_t *pid)
{
	char *lp = lock_path(data_dir, id);
	int fd = open(lp, O_RDWR | O_CLOEXEC);
	free(lp);
	if (fd < 0)
		return 0;
	int alive = flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK;
	if (alive && pid) {
		char b[32] = {0};
		ssize_t n = pread(fd, b, sizeof(b) - 1, 0);
		*pid = n > 0 ? (pid_t)atoi(b) : 0;
	}
	close(fd);
	return alive;
}

/* Ends a capability's forwarder and waits until it and its relays are gone. */
static int forwarder_stop(const char *data_dir, const struct rk_gateway_cap *cap, struct rk_error *err)
{
	pid_t pid = 0;
	if (!forwarder_alive(data_dir, cap->id, &pid))
		return 0;
	/* the pid is the lock holder's own, written under the lock: while the
	 * lock is held that process cannot have been replaced */
	if (pid > 1)
		kill(pid, SIGTERM);
	int64_t deadline = rk_monotonic_ms() + STOP_WAIT_MS;
	while (rk_monotonic_ms() < deadline) {
		if (!forwarder_alive(data_dir, cap->id, NULL))
			return 0;
		rk_sleep_ms(20);
	}
	if (forwarder_alive(data_dir, cap->id, &pid) && pid > 1)
		kill(pid, SIGKILL);
	/* its relays go by PR_SET_PDEATHSIG, which a loaded machine may take a
	 * while to deliver: the lock is free when the last of them is gone */
	deadline = rk_monotonic_ms() + KILL_WAIT_MS;
	while (rk_monotonic_ms() < deadline) {
		if (!forwarder_alive(data_dir, cap->id, NULL))
			return 0;
		rk_sleep_ms(20);
	}
	return rk_error_set(err, RK_ETIMEOUT, "the forwarder of capability %s (pid %d) would not end: try again",
			    cap->id, (int)pid);
}

/* --- share, revoke, teardown ------------------------------------------------------------ */

/* The VNC socket of display on c (*out), starting the display as needed;
 * or, for a provider that captures itself but serves a noVNC page of its
 * own, that page's websockify address (*upstream, a secret) after checking
 * a VNC server answers there. */
static int vnc_socket_of(struct rk_engine *eng, struct rk_computer *c, int display, const char *bot, char **out,
			 char **upstream, struct rk_error *err)
{
	cJSON *info = NULL;
	int r = rk_display_info(eng, c, display, &info, err);
	if (r)
		return r;
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(info, "transport");
	int vnc = cJSON_IsString(t) && !strcmp(t->valuestring, "vnc");
	cJSON_Delete(info);
	if (!vnc) {
		r = rk_upstream_of(eng, c, display, upstream, err);
		if (r == 0 && (r = rk_upstream_probe(*upstream, HANDSHAKE_MS, err)) != 0)
			rk_free_secret(upstream);
		if (r == 0)
			*out = rk_upstream_public(*upstream);
		if (r != -RK_EUNSUPPORTED)
			return r;
		return rk_error_set(err, RK_EUNSUPPORTED,
				    "display %d of computer '%s' has no VNC transport (provider '%s'): the screen "
				    "gateway relays VNC only",
				    display, c->name, c->kind);
	}
	struct rk_machine_ctx mc;
	if ((r = rk_machine_open(&mc, eng, c, err)))
		return r;
	/* display_start is idempotent: it hands the running display's socket */
	char *profile = bot	       ? rk_xasprintf(".browser-profiles/%s", bot)
			: display == 0 ? rk_xstrdup(".browser-profiles/default")
				       : NULL;
	struct rk_display_options dopt = {.width = 1280, .height = 800, .profile_dir = profile};
	struct rk_screen_transport tr = {0};
	r = rk_machine_display_start(&mc, display, &dopt, &tr, err);
	rk_machine_ctx_release(&mc);
	free(profile);
	if (r)
		return r;
	if (!tr.vnc_socket)
		return rk_error_set(err, RK_EUNSUPPORTED, "display %d of computer '%s' has no VNC socket", display,
				    c->name);
	*out = tr.vnc_socket;
	return 0;
}

int rk_gateway_share(struct rk_engine *eng, struct rk_computer *c, const struct rk_gateway_share_options *opt,
		     char **token, struct rk_gateway_cap *out, struct rk_error *err)
{
	*token = NULL;
	memset(out, 0, sizeof(*out));
	int64_t ttl = opt->ttl_s ? opt->ttl_s : RK_GATEWAY_DEFAULT_TTL_S;
	if (ttl < 1 || ttl > RK_GATEWAY_MAX_TTL_S)
		return rk_error_set(err, RK_EINVALID, "--ttl must be from 1 to %lld seconds", RK_GATEWAY_MAX_TTL_S);
	if (!opt->maker)
		return rk_error_set(err, RK_EINVALID, "a screen share needs the identity that shares");
	int display = opt->display;
	int64_t generation = 0;
	char *bot = NULL;
	/* the right the capability lives by, checked as every connection will */
	int r = rk_authz_check(eng, opt->maker, "computers.use", c, err);
	if (r)
		return r;
	if (opt->bot_id) {
		if ((r = rk_gateway_bot_slot(eng, c, opt->bot_id, &display, &generation, err)))
			return r;
		bot = rk_xstrdup(opt->bot_id);
	} else if ((r = rk_team_slot_tenant(eng, c->id, display, &bot, &generation, err)) < 0) {
		return r;
	}
	/* a --display share of a bot's slot is a share of that bot's screen:
	 * the same tenancy binding, and control needs the takeover */
	char *vnc = NULL, *upstream = NULL;
	if ((r = vnc_socket_of(eng, c, display, bot, &vnc, &upstream, err))) {
		free(bot);
		return r;
	}
	struct slot_id slot = {0};
	if (!upstream && slot_identity(vnc, &slot.dev, &slot.ino, &slot.ctime_ns) != 0) {
		r = rk_error_set(err, RK_EUNAVAILABLE, "the VNC socket %s of display %d is gone", vnc, display);
		free(vnc);
		free(bot);
		return r;
	}
	char *dir = gw_dir(eng->data_dir);
	if ((r = rk_fs_mkdirs(dir, 0700, err))) {
		free(dir);
		free(vnc);
		free(bot);
		rk_free_secret(&upstream);
		return r;
	}
	struct rk_gateway_cap *cap = out;
	cap->id = rk_id_new("cap");
	cap->computer_id = rk_xstrdup(c->id);
	cap->display = display;
	cap->bot_id = bot;
	cap->created_by = rk_xstrdup(eng->owner ? eng->owner : "");
	cap->maker.user = rk_xstrdup(opt->maker->user);
	cap->maker.space = rk_xstrdup(opt->maker->space);
	cap->maker.bot = rk_xstrdup(opt->maker->bot);
	cap->maker_token = rk_xstrdup(opt->api_token);
	cap->generation = generation;
	cap->policy = opt->policy;
	cap->socket_path = rk_xasprintf("%s/%s.sock", dir, cap->id);
	cap->vnc_socket = vnc;
	cap->vnc_dev = slot.dev;
	cap->vnc_ino = slot.ino;
	cap->created_at = rk_now_ms();
	cap->expires_at = cap->created_at + ttl * 1000;
	free(dir);
	if (bot && !bot_slot_same(eng, cap)) {
		r = rk_error_set(err, RK_ECONFLICT,
				 "the screen of bot '%s' changed while it was being shared: try again", bot);
		goto fail;
	}
	if (cap->policy == RK_GATEWAY_CONTROL && (r = rk_gateway_control_held(eng, cap, err)))
		goto fail;
	char *t = token_new();
	unsigned char h[HASH_BYTES];
	char hex[2 * HASH_BYTES + 1];
	token_hash(t, h);
	hash_hex(h, hex);
	/* stored before the forwarder runs, so a crash in between leaves a row
	 * that authorizes nothing (no socket) rather than a socket with no row */
	if ((r = cap_insert(eng, cap, hex, slot.ctime_ns, err))) {
		rk_free_secret(&t);
		goto fail;
	}
	char *run_dir = rk_xasprintf("%s/run/%s", eng->data_dir, c->id);
	struct forwarder_args fa = {.data_dir = eng->data_dir,
				    .cap = cap,
				    .slot = slot,
				    .upstream = upstream,
				    .run_dir = run_dir};
	r = rk_engine_spawn(eng, forwarder_main, &fa, err);
	rk_free_secret(&upstream); /* the forwarder has its own copy */
	free(run_dir);
	if (r) {
		struct rk_error e2;
		cap_mark_revoked(eng, cap->id, "forwarder failed", &e2);
		rk_free_secret(&t);
		goto fail;
	}
	rk_log(RK_LOG_INFO, "gateway: %s capability %s on %s display %d until %lld",
	       rk_gateway_policy_name(cap->policy), cap->id, c->id, display, (long long)cap->expires_at);
	*token = t;
	return 0;
fail:
	rk_free_secret(&upstream);
	rk_gateway_cap_release(out);
	return r;
}

static int revoke_one(struct rk_engine *eng, const struct rk_gateway_cap *cap, const char *reason, int *count,
		      struct rk_error *err)
{
	int changed = cap_mark_revoked(eng, cap->id, reason, err);
	if (changed < 0)
		return changed;
	if (changed > 0 && count)
		(*count)++;
	/* the row is revoked first, so no new connection is let in while the
	 * forwarder winds down */
	return forwarder_stop(eng->data_dir, cap, err);
}

/* Revokes each of caps (and frees them), going on past a failure; the
 * first failure is the result. */
static int revoke_each(struct rk_engine *eng, struct rk_gateway_cap *caps, size_t n, const char *reason, int *count,
		       struct rk_error *err)
{
	int first = 0;
	for (size_t i = 0; i < n; i++) {
		struct rk_error e;
		int ri = revoke_one(eng, &caps[i], reason, count, &e);
		if (ri && !first) {
			first = ri;
			*err = e;
		}
	}
	rk_gateway_caps_free(caps, n);
	return first;
}

int rk_gateway_revoke(struct rk_engine *eng, const struct rk_gateway_scope *scope, const char *token_or_id, int all,
		      int *count, struct rk_error *err)
{
	static const char unknown[] = "no screen capability matches that token or id";
	*count = 0;
	struct rk_gateway_cap *caps = NULL;
	size_t n = 0;
	int r;
	if (all) {
		struct rk_screen_cap_filter f = {.display = -1, .unrevoked = 1, .live_at = -1};
		if ((r = scope_where(eng, scope, f, &caps, &n, err)))
			return r;
		return revoke_each(eng, caps, n, "revoked", count, err);
	}
	if (token_or_id && !strncmp(token_or_id, "cap_", 4)) {
		struct rk_screen_cap_filter f = {.id = token_or_id, .display = -1, .live_at = -1};
		r = caps_where(eng, &f, &caps, &n, err);
	} else {
		if (!token_or_id || !token_wellformed(token_or_id))
			return rk_error_set(err, RK_EINVALID, "'%s' is not a screen token or capability id",
					    token_or_id ? token_or_id : "");
		unsigned char h[HASH_BYTES];
		token_hash(token_or_id, h);
		caps = rk_xcalloc(1, sizeof(*caps));
		r = cap_by_hash(eng, h, &caps[0], NULL, err);
		n = r == 1;
		r = r < 0 ? r : 0;
	}
	if (r) {
		free(caps);
		return r;
	}
	if (n == 0) {
		free(caps);
		return rk_error_set(err, RK_ENOTFOUND, "%s", unknown);
	}
	/* the resolver's answer for its computer: another space's is as
	 * unknown as a token nobody made */
	if ((r = rk_authz_check_id(eng, scope->actor, caps[0].computer_id, "computers.use", err))) {
		if (r == -RK_ENOTFOUND)
			r = rk_error_set(err, RK_ENOTFOUND, "%s", unknown);
		else
			rk_error_prefix(err, "revoke %s", caps[0].id);
		rk_gateway_caps_free(caps, n);
		return r;
	}
	return revoke_each(eng, caps, n, "revoked", count, err);
}

int rk_gateway_teardown_slot(struct rk_engine *eng, const char *computer_id, int display, struct rk_error *err)
{
	struct rk_gateway_cap *caps = NULL;
	size_t n = 0;
	struct rk_screen_cap_filter f = {.computer_id = computer_id, .display = display, .live_at = -1};
	int r = caps_where(eng, &f, &caps, &n, err);
	if (r)
		return r;
	int first = revoke_each(eng, caps, n, "slot released", NULL, err);
	if (first)
		rk_error_prefix(err, "clients of display %d are still connected, so the slot stays reserved", display);
	return first;
}

int rk_gateway_revoke_control(struct rk_engine *eng, const char *computer_id, const char *bot_id, struct rk_error *err)
{
	struct rk_gateway_cap *caps = NULL;
	size_t n = 0, keep = 0;
	struct rk_screen_cap_filter f = {.computer_id = computer_id,
					 .display = -1,
					 .control = 1,
					 .unrevoked = 1,
					 .live_at = -1};
	int r = caps_where(eng, &f, &caps, &n, err);
	if (r)
		return r;
	for (size_t i = 0; i < n; i++) {
		if (caps[i].bot_id && !strcmp(caps[i].bot_id, bot_id))
			caps[keep++] = caps[i];
		else
			rk_gateway_cap_release(&caps[i]);
	}
	return revoke_each(eng, caps, keep, "control released", NULL, err);
}

/* --- the maker's right ------------------------------------------------------------------ */

/* Whether cap's maker may still use its computer: the API token it came
 * through, if any, is live, and the actor it was shared as passes the
 * resolver's check (computers.use). 0 yes; RK_EDENIED when the maker lost
 * the right (or was never recorded); another code when that could not be
 * read. */
static int maker_check(struct rk_engine *eng, const struct rk_gateway_cap *cap, struct rk_error *err)
{
	if (!cap->maker.user || !cap->maker.space)
		return rk_error_set(err, RK_EDENIED,
				    "capability %s has no recorded maker (it was made by an older "
				    "rakazo): share again",
				    cap->id);
	if (cap->maker_token) {
		int live = rk_api_token_live(eng->db, cap->maker_token, err);
		if (live < 0)
			return live;
		if (!live)
			return rk_error_set(err, RK_EDENIED, "the API token %s that made capability %s was revoked",
					    cap->maker_token, cap->id);
	}
	int r = rk_authz_check_id(eng, &cap->maker, cap->computer_id, "computers.use", err);
	/* not found: the computer left the maker's space, which is their loss of it */
	if (r == -RK_ENOTFOUND) {
		rk_err(err)->code = RK_EDENIED;
		r = -RK_EDENIED;
	}
	return r;
}

int rk_gateway_sweep(struct rk_engine *eng, int *count, struct rk_error *err)
{
	*count = 0;
	struct rk_gateway_cap *caps = NULL;
	size_t n = 0, keep = 0;
	struct rk_screen_cap_filter f = {.display = -1, .live_at = rk_now_ms()};
	int r = caps_where(eng, &f, &caps, &n, err);
	if (r)
		return r;
	int unread = 0;
	struct rk_error first;
	for (size_t i = 0; i < n; i++) {
		struct rk_error e;
		int ri = maker_check(eng, &caps[i], &e);
		if (ri == -RK_EDENIED) {
			rk_log(RK_LOG_INFO, "gateway: capability %s is revoked: its maker lost the right (%s)",
			       caps[i].id, e.message);
			caps[keep++] = caps[i];
			continue;
		}
		if (ri && !unread) {
			unread = ri;
			first = e;
		}
		rk_gateway_cap_release(&caps[i]);
	}
	if ((r = revoke_each(eng, caps, keep, "its maker lost the right", count, err)) || !unread)
		return r;
	if (err)
		*err = first;
	return unread;
}

/* --- the gateway's check ----------------------------------------------------------------- */

int rk_gateway_http_status(enum rk_code code)
{
	switch (code) {
	case RK_EDENIED:
		return 401;
	case RK_ESTALE:
		return 403;
	case RK_ECONFLICT:
		return 409;
	case RK_EUNAVAILABLE:
		return 503;
	default:
		return 500;
	}
}

int rk_gateway_authorize(struct rk_engine *eng, const char *token, struct rk_gateway_cap *out, struct rk_error *err)
{
	memset(out, 0, sizeof(*out));
	if (!token || !*token)
		return rk_error_set(err, RK_EDENIED, "no screen token given");
	if (!token_wellformed(token))
		return rk_error_set(err, RK_EDENIED, "that is not a screen token");
	unsigned char h[HASH_BYTES];
	token_hash(token, h);
	int64_t ctime_ns = 0;
	int r = cap_by_hash(eng, h, out, &ctime_ns, err);
	if (r < 0)
		return r;
	if (r == 0)
		return rk_error_set(err, RK_EDENIED, "unknown screen token");
	int64_t now = rk_now_ms();
	struct slot_id slot = {out->vnc_dev, out->vnc_ino, ctime_ns};
	if (out->revoked_at)
		r = rk_error_set(err, RK_ESTALE, "capability %s was revoked", out->id);
	else if (now >= out->expires_at)
		r = rk_error_set(err, RK_ESTALE, "capability %s has expired", out->id);
	else if ((r = maker_check(eng, out, err)) != 0)
		/* who lost the right, and why, is the sharer's business, not the viewer's */
		r = r == -RK_EDENIED ? rk_error_set(err, RK_ESTALE,
						    "capability %s was revoked: whoever shared it may "
						    "no longer use its computer",
						    out->id)
				     : r;
	else if (!cap_slot_same(out, &slot) || (out->bot_id && !bot_slot_same(eng, out)))
		r = rk_error_set(err, RK_ESTALE,
				 "capability %s was for a screen that is gone (its slot was released "
				 "or reused)",
				 out->id);
	else if (out->policy == RK_GATEWAY_CONTROL && (r = rk_gateway_control_held(eng, out, err)) != 0)
		/* a busy bot is the conflict (409); control not held, the capability's end (403) */
		r = rk_err(err)->code == RK_ECONFLICT ? r : rk_error_set(err, RK_ESTALE, "%s", rk_err(err)->message);
	else if (!forwarder_alive(eng->data_dir, out->id, NULL))
		r = rk_error_set(err, RK_ESTALE, "capability %s is no longer served", out->id);
	else
		r = 0;
	if (r)
		rk_gateway_cap_release(out);
	return r;
}

int rk_gateway_connect(const struct rk_gateway_cap *cap, struct rk_error *err)
{
	int fd = connect_unix(cap->socket_path);
	if (fd < 0)
		return rk_error_errno(err, RK_ESTALE, errno, "capability %s is no longer served", cap->id);
	return fd;
}

char *rk_gateway_url(struct rk_engine *eng, const char *token)
{
	char *p = rk_xasprintf("%s/run/gateway/address", eng->data_dir);
	struct rk_buf b;
	rk_buf_init(&b);
	struct rk_error e;
	char *url;
	if (rk_fs_read_all(p, 256, &b, &e) == 0 && b.len > 0) {
		while (b.len && (b.data[b.len - 1] == '\n' || b.data[b.len - 1] == ' '))
			b.data[--b.len] = '\0';
		url = rk_xasprintf("ws://%s/websockify?token=%s", b.data, token);
	} else {
		url = rk_xasprintf("ws://" RK_GATEWAY_DEFAULT_LISTEN "/websockify?token=%s", token);
	}
	rk_buf_release(&b);
	free(p);
	return url;
}
