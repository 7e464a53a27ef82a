#ifndef RK_GATEWAY_H
#define RK_GATEWAY_H
/* The screen gateway: revocable view and control capabilities on a
 * computer's display, and one WebSocket port that relays RFB for all of
 * them, so a standard noVNC client can watch (or, with control, drive) a
 * desktop.
 *
 * A capability is a random 256-bit token (only its BLAKE2b hash is stored,
 * compared in constant time), with a policy, an expiry and the slot it was
 * made for: (computer, display, generation) and the identity (device and
 * inode) of that slot's VNC socket. Each capability gets a forwarder process
 * of its own listening on a unique unix socket, DATA_DIR/run/gateway/<id>.sock;
 * the gateway reaches the desktop only through it. The forwarder checks the
 * slot's VNC socket is still the one it was bound to before each connection
 * and every 200 ms while clients are connected, and ends (dropping them)
 * when it is not, when the capability expires or is revoked: after a slot
 * is reused no old token reaches the next tenant. For view capabilities the
 * forwarder reads the client's RFB stream and passes only SetPixelFormat,
 * SetEncodings and FramebufferUpdateRequest (engine/screen/rfb.h), whatever the
 * VNC server would allow; both policies force the shared flag on so a
 * viewer never disconnects the display's other clients.
 *
 * A capability is only as good as its maker's right: the actor it was
 * shared as (a member, a bot, in a space) and the API token it came
 * through are recorded with it. The gateway checks them again, through
 * the resolver, on every connection, and every half second revokes the
 * capabilities whose maker lost the right (a bot's grant revoked, the API
 * token revoked, the computer no longer theirs): their clients are dropped
 * as by `rakazo screen revoke`. */

#include <cJSON.h>
#include <stdint.h>

#include "engine/access/authz.h"
#include "engine/state/engine.h"

enum rk_gateway_policy { RK_GATEWAY_VIEW, RK_GATEWAY_CONTROL };

#define RK_GATEWAY_DEFAULT_LISTEN "127.0.0.1:6080"
#define RK_GATEWAY_DEFAULT_TTL_S 3600
#define RK_GATEWAY_MAX_TTL_S (30LL * 24 * 3600)

struct rk_gateway_cap {
	char *id; /* "cap_..." */
	char *computer_id;
	int display;
	char *bot_id; /* NULL for a --display share */
	int64_t generation;
	enum rk_gateway_policy policy;
	char *socket_path; /* the capability's own forwarder socket */
	char *vnc_socket;  /* the slot's VNC socket it was bound to */
	int64_t vnc_dev, vnc_ino;
	int64_t created_at, expires_at, revoked_at; /* ms; revoked_at 0 when live */
	char *revoke_reason;
	char *created_by;      /* the person who shared it (eng->owner) */
	struct rk_actor maker; /* the actor it was shared as; user NULL for a row made before makers were kept */
	char *maker_token;     /* the API token it was made through, or NULL */
};
void rk_gateway_cap_release(struct rk_gateway_cap *cap);
/* {id, computer_id, display, bot, generation (with a bot), policy, created_at, expires_at, revoked_at?,
 * state}; owned by the caller. */
cJSON *rk_gateway_cap_to_json(const struct rk_gateway_cap *cap, int64_t now_ms);

const char *rk_gateway_policy_name(enum rk_gateway_policy p);

/* Where a bot's screen lives: its live display slot and that slot's
 * generation on computer c (engine/machine/team.h's registry). RK_ENOTFOUND when
 * the bot has no live screen (it starts with the bot's first graphical
 * call). A capability is bound to (slot, generation) and to the slot's VNC
 * socket: once the bot releases the slot, or another bot gets it, the
 * capability authorizes nothing. */
int rk_gateway_bot_slot(struct rk_engine *eng, const struct rk_computer *c, const char *bot_id, int *display,
			int64_t *generation, struct rk_error *err);

/* Whether a control capability may drive its screen now: the one check it
 * passes at share time and on every connection. On a bot's screen the
 * sharer must hold the takeover (rakazo screen takeover; RK_EDENIED when
 * not), and the bot must not hold a live execution lease or have an active
 * run unless it is waiting_takeover (RK_ECONFLICT, "Stop the bot first").
 * Its forwarder drops its clients when that takeover ends, so a control
 * token lives at most as long as the takeover it was made under. On a
 * display no bot has (--display N), an explicit --control share is itself
 * the grant. */
int rk_gateway_control_held(struct rk_engine *eng, const struct rk_gateway_cap *cap, struct rk_error *err);

struct rk_gateway_share_options {
	int display;	    /* used when bot_id is NULL */
	const char *bot_id; /* resolved by rk_gateway_bot_slot */
	enum rk_gateway_policy policy;
	int64_t ttl_s;		      /* 0: RK_GATEWAY_DEFAULT_TTL_S */
	const struct rk_actor *maker; /* who shares: the caller's resolved actor (required) */
	const char *api_token;	      /* the API token id it is made through, or NULL */
};

/* Makes a capability on c's display (starting the display as needed) and
 * its forwarder, recording opt->maker and opt->api_token as its maker (who
 * must be able to use c now: RK_EDENIED otherwise). *token is the secret
 * (malloc'd, shown once); *out the stored capability. RK_EUNSUPPORTED when
 * the display has no VNC. */
int rk_gateway_share(struct rk_engine *eng, struct rk_computer *c, const struct rk_gateway_share_options *opt,
		     char **token, struct rk_gateway_cap *out, struct rk_error *err);

/* Whose capabilities a caller lists and revokes: those on the computers
 * actor may use (engine/access/authz.h: rk_authz_may_use_id, so a deleted
 * computer's stay its owner's), of one computer when computer_id is given
 * (the caller resolved it; list and all=1 only). */
struct rk_gateway_scope {
	const struct rk_actor *actor;
	const char *computer_id; /* NULL: every computer actor may use */
};

/* Revokes one capability, by its token or its id, or all with all=1 (those
 * of scope): marks them revoked, then ends their forwarders (which drops
 * their clients). *count says how many were live. One on a computer
 * scope's actor may not use is RK_EDENIED and stays live; RK_ENOTFOUND for
 * an unknown token/id, and for one of another space's computer (with the
 * same message: that it exists is not told); RK_ETIMEOUT when a forwarder
 * would not end (the row is still revoked). */
int rk_gateway_revoke(struct rk_engine *eng, const struct rk_gateway_scope *scope, const char *token_or_id, int all,
		      int *count, struct rk_error *err);

/* Lists scope's capabilities (live ones unless all); *out is a malloc'd
 * array, freed with rk_gateway_caps_free. */
int rk_gateway_list(struct rk_engine *eng, const struct rk_gateway_scope *scope, int all, struct rk_gateway_cap **out,
		    size_t *n, struct rk_error *err);
void rk_gateway_caps_free(struct rk_gateway_cap *caps, size_t n);

/* Before a slot is torn down or reused (the display_closing hook,
 * engine/machine/hook.h): revokes every capability of display on
 * computer_id and waits until their forwarders and clients are gone.
 * Nonzero means some are still connected: keep the slot reserved and retry. */
int rk_gateway_teardown_slot(struct rk_engine *eng, const char *computer_id, int display, struct rk_error *err);

/* A person gave control of bot_id's screen back (the control_released
 * hook): its live control capabilities are revoked and their clients
 * dropped (view ones stay). */
int rk_gateway_revoke_control(struct rk_engine *eng, const char *computer_id, const char *bot_id, struct rk_error *err);

/* What the gateway does with a presented token: RK_EDENIED ("401") for a
 * malformed or unknown one, RK_ESTALE ("403") for a revoked, expired, or
 * stale-after-slot-reuse one, one whose maker lost the right to its
 * computer (or whose API token was revoked), or a control one without the
 * takeover held,
 * RK_ECONFLICT ("409") for a control one while its bot is busy (see
 * rk_gateway_control_held); else fills *out. */
int rk_gateway_authorize(struct rk_engine *eng, const char *token, struct rk_gateway_cap *out, struct rk_error *err);
/* Revokes every live capability whose maker lost the right to its
 * computer (see above), ending its forwarder and so dropping its clients;
 * *count says how many. One whose maker could not be checked (the database
 * busy) stays for the next sweep; the first such error is the result. The
 * gateway runs this every RK_GATEWAY_SWEEP_MS. */
#define RK_GATEWAY_SWEEP_MS 500
int rk_gateway_sweep(struct rk_engine *eng, int *count, struct rk_error *err);

/* The HTTP status the gateway answers for an authorize error code. */
int rk_gateway_http_status(enum rk_code code);

/* Connects to a capability's forwarder socket; an fd or a negative code. */
int rk_gateway_connect(const struct rk_gateway_cap *cap, struct rk_error *err);

struct rk_gateway_server_options {
	const char *listen;  /* "HOST:PORT"; NULL: RK_GATEWAY_DEFAULT_LISTEN; port 0 picks one */
	const char *web_dir; /* serve these files (noVNC's) over HTTP, or NULL */
	int public_ok;	     /* listen may be outside 127.0.0.0/8 (--public) */
	/* Called once listening with the bound "HOST:PORT". */
	void (*on_listening)(const char *address, void *arg);
	void *arg;
	volatile int *stop; /* the loop ends soon after *stop becomes nonzero */
};
/* Runs the gateway until *stop. The address is recorded in
 * DATA_DIR/run/gateway/address for `share` to build URLs. */
int rk_gateway_serve(struct rk_engine *eng, const struct rk_gateway_server_options *opt, struct rk_error *err);

/* The URL of a capability's token (malloc'd): the running gateway's
 * address, else the default, ws://HOST:PORT/websockify?token=TOKEN. */
char *rk_gateway_url(struct rk_engine *eng, const char *token);

#endif
