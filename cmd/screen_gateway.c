/* rakazo screen share / revoke / gateway (see screen_gateway.h). */

#include "screen_gateway.h"

#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/access/authz.h"
#include "engine/gateway/gateway.h"
#include "engine/util/buf.h"
#include "engine/util/http.h"
#include "engine/util/time.h"
#include "out.h"

static int64_t g_display = 0, g_ttl = 0;
static const char *g_bot, *g_listen, *g_web, *g_computer;
static int g_view, g_control, g_all, g_public;

const struct rk_opt screen_share_opts[] = {
	OPT_INT("display", 'd', &g_display, "N", "share display N (default 0)", 0, 63),
	OPT_STRING("bot", 'b', &g_bot, "BOT", "share the screen of bot BOT"),
	OPT_BOOL("view", 0, &g_view, "a view capability: the viewer's input never reaches the screen"),
	OPT_BOOL("control", 0, &g_control, "a control capability: keyboard and pointer reach the screen"),
	OPT_INT("ttl", 0, &g_ttl, "S", "seconds until the capability expires (default 3600)", 1, RK_GATEWAY_MAX_TTL_S),
	OPT_END,
};

int cmd_screen_share(struct cmd_ctx *ctx)
{
	int r = cmd_want_args(ctx, 1, 1, "COMPUTER");
	if (r)
		return r;
	if (g_view == g_control)
		return rk_error_set(&ctx->err, RK_EUSAGE, "give exactly one of --view and --control");
	if (g_bot && g_display)
		return rk_error_set(&ctx->err, RK_EUSAGE, "give --bot or --display, not both");
	struct rk_computer c = {0};
	if ((r = cmd_target(ctx, ctx->args[0], "computers.use", &c)))
		return r;
	/* the capability lives as long as this actor may use c */
	struct rk_actor a;
	if ((r = rk_actor_resolve(&a, ctx->eng, NULL, NULL, &ctx->err))) {
		rk_computer_release(&c);
		return r;
	}
	struct rk_gateway_share_options so = {
		.display = (int)g_display,
		.bot_id = g_bot,
		.policy = g_control ? RK_GATEWAY_CONTROL : RK_GATEWAY_VIEW,
		.ttl_s = g_ttl,
		.maker = &a,
	};
	char *token = NULL;
	struct rk_gateway_cap cap;
	r = rk_gateway_share(ctx->eng, &c, &so, &token, &cap, &ctx->err);
	rk_actor_release(&a);
	if (r == 0) {
		char *url = rk_gateway_url(ctx->eng, token);
		if (out_is_json()) {
			cJSON *doc = rk_gateway_cap_to_json(&cap, rk_now_ms());
			cJSON_AddStringToObject(doc, "computer", c.name);
			cJSON_AddStringToObject(doc, "token", token);
			cJSON_AddStringToObject(doc, "url", url);
			out_doc(doc);
		} else {
			char t[40];
			printf("%s\n", url);
			fprintf(stderr,
				"%s capability %s on display %d%s%s%s of %s, until %s (revoke: rakazo screen revoke %s)\n",
				rk_gateway_policy_name(cap.policy), cap.id, cap.display, cap.bot_id ? " (bot " : "",
				cap.bot_id ? cap.bot_id : "", cap.bot_id ? ")" : "", c.name,
				rk_iso8601(cap.expires_at, t, sizeof(t)), cap.id);
		}
		free(url);
		memset(token, 0, strlen(token));
		free(token);
		rk_gateway_cap_release(&cap);
	}
	rk_computer_release(&c);
	return r;
}

/* Who lists and revokes: the caller (sc->actor, release with
 * scope_release), of --computer's computer when given (the one resolver:
 * denied, or not_found from another space). */
static int scope_init(struct cmd_ctx *ctx, struct rk_gateway_scope *sc, struct rk_actor *a, struct rk_computer *c)
{
	memset(sc, 0, sizeof(*sc));
	memset(c, 0, sizeof(*c));
	int r = cmd_engine(ctx);
	if (r || (r = rk_actor_resolve(a, ctx->eng, NULL, NULL, &ctx->err)))
		return r;
	sc->actor = a;
	if (g_computer && (r = cmd_target(ctx, g_computer, "computers.use", c)) == 0)
		sc->computer_id = c->id;
	if (r)
		rk_actor_release(a);
	return r;
}

static void scope_release(struct rk_actor *a, struct rk_computer *c)
{
	rk_actor_release(a);
	rk_computer_release(c);
}

const struct rk_opt screen_revoke_opts[] = {
	OPT_BOOL("all", 0, &g_all, "revoke every live capability of the computers you may use"),
	OPT_STRING("computer", 'c', &g_computer, "COMPUTER", "with --all: only those of COMPUTER"),
	OPT_END,
};

int cmd_screen_revoke(struct cmd_ctx *ctx)
{
	int r = cmd_want_args(ctx, g_all ? 0 : 1, g_all ? 0 : 1,
			      g_all ? "nothing with --all" : "TOKEN or capability id");
	if (r)
		return r;
	if (g_computer && !g_all)
		return rk_error_set(&ctx->err, RK_EUSAGE,
				    "--computer goes with --all: a token or id names its computer");
	struct rk_gateway_scope sc;
	struct rk_actor a;
	struct rk_computer c;
	if ((r = scope_init(ctx, &sc, &a, &c)))
		return r;
	int count = 0;
	r = rk_gateway_revoke(ctx->eng, &sc, g_all ? NULL : ctx->args[0], g_all, &count, &ctx->err);
	if (r == 0) {
		cJSON *doc = cJSON_CreateObject();
		cJSON_AddNumberToObject(doc, "revoked", count);
		out_doc(doc);
	}
	scope_release(&a, &c);
	return r;
}

const struct rk_opt screen_shares_opts[] = {
	OPT_BOOL("all", 0, &g_all, "also revoked and expired capabilities"),
	OPT_STRING("computer", 'c', &g_computer, "COMPUTER", "only the capabilities of COMPUTER"),
	OPT_END,
};

int cmd_screen_shares(struct cmd_ctx *ctx)
{
	int r = cmd_want_args(ctx, 0, 0, "no arguments");
	if (r)
		return r;
	struct rk_gateway_scope sc;
	struct rk_actor a;
	struct rk_computer c;
	if ((r = scope_init(ctx, &sc, &a, &c)))
		return r;
	struct rk_gateway_cap *caps = NULL;
	size_t n = 0;
	r = rk_gateway_list(ctx->eng, &sc, g_all, &caps, &n, &ctx->err);
	scope_release(&a, &c);
	if (r)
		return r;
	cJSON *rows = cJSON_CreateArray();
	int64_t now = rk_now_ms();
	for (size_t i = 0; i < n; i++)
		cJSON_AddItemToArray(rows, rk_gateway_cap_to_json(&caps[i], now));
	rk_gateway_caps_free(caps, n);
	static const struct out_col cols[] = {{"id", "ID"},
					      {"computer_id", "COMPUTER"},
					      {"display", "DISPLAY"},
					      {"policy", "POLICY"},
					      {"expires_at", "EXPIRES"},
					      {"state", "STATE"},
					      {0}};
	out_list(rows, cols);
	return 0;
}

const struct rk_opt screen_gateway_opts[] = {
	OPT_STRING("listen", 'l', &g_listen, "HOST:PORT", "where to listen (default 127.0.0.1:6080; port 0 picks one)"),
	OPT_STRING("web", 0, &g_web, "DIR", "also serve the files in DIR over HTTP (a noVNC checkout)"),
	OPT_BOOL("public", 0, &g_public,
		 "let --listen be an address other machines reach (plain HTTP: put TLS in front)"),
	OPT_END,
};

static volatile int gateway_stop;

static void on_gateway_signal(int sig)
{
	(void)sig;
	gateway_stop = 1;
}

static void on_listening(const char *addr, void *arg)
{
	(void)arg;
	struct sockaddr_in sa;
	int loopback = 1;
	if (rk_listen_parse(addr, "the screen gateway", 1, &sa, &loopback, NULL) == 0 && !loopback)
		fprintf(stderr,
			"rakazo: warning: --public: the screen gateway listens on %s, reachable from other machines, "
			"in plain HTTP without TLS: every shared screen (each live capability of `rakazo screen "
			"shares`, view and control alike%s) answers anyone who holds its token, and tokens cross the "
			"network in clear. Put a TLS proxy in front.\n",
			addr, g_web ? ", and the files of --web" : "");
	if (out_is_json()) {
		cJSON *doc = cJSON_CreateObject();
		cJSON_AddStringToObject(doc, "listen", addr);
		char *url = rk_xasprintf("ws://%s/websockify", addr);
		cJSON_AddStringToObject(doc, "url", url);
		free(url);
		out_stream(doc, NULL);
	} else {
		printf("screen gateway listening on ws://%s/websockify\n", addr);
	}
	fflush(stdout);
}

int cmd_screen_gateway(struct cmd_ctx *ctx)
{
	int r = cmd_want_args(ctx, 0, 0, "no arguments");
	if (r || (r = cmd_engine(ctx)))
		return r;
	struct sigaction sa = {.sa_handler = on_gateway_signal};
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	struct rk_gateway_server_options so = {
		.listen = g_listen,
		.web_dir = g_web,
		.public_ok = g_public,
		.on_listening = on_listening,
		.stop = &gateway_stop,
	};
	return rk_gateway_serve(ctx->eng, &so, &ctx->err);
}
