#include "engine/machine/display.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/machine/machine.h"
#include "engine/machine/computer.h"
#include "engine/machine/idle.h"
#include "engine/machine/hook.h"
#include "engine/screen/screen.h"
#include "engine/util/buf.h"
#include "engine/util/fs.h"
#include "engine/util/ipc.h"
#include "engine/util/json.h"
#include "engine/util/log.h"
#include "engine/util/time.h"
#include "engine/machine/window.h"

#define DISPLAY_MAX 63

void rk_display_shot_release(struct rk_display_shot *s)
{
	if (!s)
		return;
	cJSON_Delete(s->meta);
	free(s->png);
	memset(s, 0, sizeof(*s));
}

void rk_display_act_result_release(struct rk_display_act_result *r)
{
	if (!r)
		return;
	cJSON_Delete(r->result);
	free(r->png);
	memset(r, 0, sizeof(*r));
}

static char *holder_name(const struct rk_computer *c, int display)
{
	return rk_xasprintf("display-%s-%d", c->id, display);
}

/* --- the holder ------------------------------------------------------------ */

struct display_args {
	const char *data_dir;
	const struct rk_computer *c;
	int display;
	const char *profile_dir;
};

static void add_png(cJSON *reply, const struct rk_observation *o)
{
	if (o->png) {
		char *b64 = rk_base64_encode(o->png, o->png_len);
		cJSON_AddStringToObject(reply, "png_b64", b64);
		free(b64);
	}
}

static void reply_error(int fd, const struct rk_error *e)
{
	cJSON *o = cJSON_CreateObject();
	cJSON *er = cJSON_AddObjectToObject(o, "error");
	cJSON_AddStringToObject(er, "code", rk_code_name(e->code));
	cJSON_AddStringToObject(er, "message", e->message);
	rk_ipc_write_reply(fd, o);
	cJSON_Delete(o);
}

/* Tells a caller this holder ends without having acted on its call: the
 * caller starts a new holder and calls that one (see call). */
static void reply_gone(int fd)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddBoolToObject(o, "holder_gone", 1);
	rk_ipc_write_reply(fd, o);
	cJSON_Delete(o);
}

/* Callers already in the backlog are told the holder is gone rather than
 * reset (which they could not tell from a holder dying mid-call). */
static void stop_listening(int lsock)
{
	struct pollfd p = {.fd = lsock, .events = POLLIN};
	while (poll(&p, 1, 0) > 0) {
		int c = rk_ipc_accept(lsock);
		if (c < 0)
			break;
		reply_gone(c);
		close(c);
	}
	close(lsock);
}

static int read_observe_options(const cJSON *req, struct rk_observe_options *o, struct rk_error *err)
{
	int64_t w = 0, h = 0, q = 0;
	rk_json_get_int(req, "max_width", 0, 10000, 0, &w, "request", NULL);
	rk_json_get_int(req, "max_height", 0, 10000, 0, &h, "request", NULL);
	/* the screen engine checks the quality's range and says so */
	rk_json_get_int(req, "quality", INT_MIN, INT_MAX, 0, &q, "request", NULL);
	o->max_width = (int)w;
	o->max_height = (int)h;
	o->consumer = rk_json_string(req, "consumer", NULL);
	o->quality = (int)q;
	o->format = RK_PICTURE_PNG;
	const char *f = rk_json_string(req, "format", NULL);
	return f ? rk_picture_format_parse(f, &o->format, err) : 0;
}

/* A zoom request's region: [x0, y0, x1, y1], integers. */
static int read_region(const cJSON *req, struct rk_picture_rect *r, struct rk_error *err)
{
	const cJSON *a = cJSON_GetObjectItemCaseSensitive(req, "region");
	int v[4];
	if (!cJSON_IsArray(a) || cJSON_GetArraySize(a) != 4)
		return rk_error_set(err, RK_EINVALID, "zoom: region must be [x0, y0, x1, y1]");
	for (int i = 0; i < 4; i++) {
		const cJSON *n = cJSON_GetArrayItem(a, i);
		if (!cJSON_IsNumber(n) || n->valuedouble < INT_MIN || n->valuedouble > INT_MAX ||
		    n->valuedouble != floor(n->valuedouble))
			return rk_error_set(err, RK_EINVALID, "zoom: region must be [x0, y0, x1, y1] in whole pixels");
		v[i] = (int)n->valuedouble;
	}
	*r = (struct rk_picture_rect){v[0], v[1], v[2], v[3]};
	return 0;
}

/* 1: keep serving; 0: the holder should end (asked to, or the screen died). */
static int serve(struct rk_screen *s, const char *transport, int display, int client)
{
	struct rk_error e;
	cJSON *req = rk_ipc_read_request(client, 5000, &e);
	if (!req) {
		reply_error(client, &e);
		return 1;
	}
	const char *op = rk_json_string(req, "op", "");
	int keep = 1;
	cJSON *reply = cJSON_CreateObject();
	if (!strcmp(op, "observe")) {
		struct rk_observe_options oo = {0};
		struct rk_observation obs = {0};
		if (read_observe_options(req, &oo, &e) != 0) {
			reply_error(client, &e);
			goto out;
		}
		if (rk_screen_observe(s, &oo, &obs, &e) != 0) {
			reply_error(client, &e);
			keep = e.code != RK_EUNAVAILABLE;
			goto out;
		}
		cJSON_AddItemToObject(reply, "observation", rk_observation_to_json(&obs));
		add_png(reply, &obs);
		rk_observation_release(&obs);
	} else if (!strcmp(op, "zoom")) {
		struct rk_observe_options oo = {0};
		struct rk_observation obs = {0};
		struct rk_picture_rect region;
		if (read_observe_options(req, &oo, &e) != 0 || read_region(req, &region, &e) != 0) {
			reply_error(client, &e);
			goto out;
		}
		if (rk_screen_zoom(s, &region, &oo, &obs, &e) != 0) {
			reply_error(client, &e);
			keep = e.code != RK_EUNAVAILABLE;
			goto out;
		}
		cJSON_AddItemToObject(reply, "observation", rk_observation_to_json(&obs));
		add_png(reply, &obs);
		rk_observation_release(&obs);
	} else if (!strcmp(op, "act")) {
		const cJSON *batch = cJSON_GetObjectItemCaseSensitive(req, "batch");
		struct rk_action_batch b = {0};
		if (!batch || rk_action_batch_from_json(batch, &b, &e) != 0) {
			if (!batch)
				rk_error_set(&e, RK_EINVALID, "no batch given");
			reply_error(client, &e);
			goto out;
		}
		struct rk_act_options ao = RK_ACT_OPTIONS_INIT;
		int64_t settle = -1, observe = -1;
		rk_json_get_int(req, "settle_ms", -1, 3000, -1, &settle, "request", NULL);
		rk_json_get_int(req, "observe", -1, 1, -1, &observe, "request", NULL);
		ao.settle_ms = (int)settle;
		ao.observe = (int)observe;
		if (read_observe_options(req, &ao.observe_opt, &e) != 0) {
			rk_action_batch_release(&b);
			reply_error(client, &e);
			goto out;
		}
		struct rk_act_result ar = {0};
		int r = rk_screen_act(s, &b, &ao, &ar, &e);
		rk_action_batch_release(&b);
		if (r != 0) {
			/* say how far it got alongside the error */
			char *msg = rk_xasprintf("%s (%zu actions completed)", e.message, ar.completed);
			snprintf(e.message, sizeof(e.message), "%s", msg);
			free(msg);
			reply_error(client, &e);
			rk_act_result_release(&ar);
			keep = e.code != RK_EUNAVAILABLE;
			goto out;
		}
		cJSON *res = cJSON_AddObjectToObject(reply, "result");
		cJSON_AddNumberToObject(res, "completed", (double)ar.completed);
		cJSON_AddBoolToObject(res, "settled", ar.settled);
		if (ar.observed) {
			cJSON_AddItemToObject(res, "observation", rk_observation_to_json(&ar.obs));
			add_png(reply, &ar.obs);
		} else {
			cJSON_AddNullToObject(res, "observation");
		}
		rk_act_result_release(&ar);
	} else if (!strcmp(op, "info")) {
		int w = 0, h = 0;
		rk_screen_size(s, &w, &h);
		cJSON *info = cJSON_AddObjectToObject(reply, "info");
		cJSON_AddNumberToObject(info, "display", display);
		cJSON_AddNumberToObject(info, "width", w);
		cJSON_AddNumberToObject(info, "height", h);
		cJSON_AddStringToObject(info, "transport", transport);
		cJSON_AddNumberToObject(info, "holder_pid", (double)getpid());
	} else if (!strcmp(op, "close")) {
		cJSON_AddBoolToObject(reply, "closed", 1);
		keep = 0;
	} else {
		rk_error_set(&e, RK_EINVALID, "unknown display operation '%s'", op);
		reply_error(client, &e);
		goto out;
	}
	rk_ipc_write_reply(client, reply);
out:
	cJSON_Delete(reply);
	cJSON_Delete(req);
	return keep;
}

static void holder_main(void *arg, int ready_fd)
{
	const struct display_args *a = arg;
	struct rk_engine eng = {.data_dir = (char *)a->data_dir};
	struct rk_machine_ctx mc;
	struct rk_error err;
	struct rk_screen *s = NULL;
	rk_log_open(a->data_dir);
	const struct rk_provider_ops *ops = rk_machine_open(&mc, &eng, a->c, NULL) == 0 ? mc.ops : NULL;
	char *name = holder_name(a->c, a->display);
	int lsock = -1;
	if (!ops || !(ops->caps & RK_CAP_DESKTOP) || !ops->display_start) {
		rk_error_set(&err, RK_EUNSUPPORTED, "provider '%s' has no desktop", a->c->kind);
		goto fail;
	}
	if ((lsock = rk_ipc_listen(name, &err)) < 0)
		goto fail;
	struct rk_display_options dopt = {.profile_dir = a->profile_dir};
	cJSON *copt = a->c->options ? cJSON_Parse(a->c->options) : NULL;
	int bad = rk_screen_size_option(copt, &dopt.width, &dopt.height, &err);
	cJSON_Delete(copt);
	if (bad)
		goto fail;
	if (!dopt.profile_dir && a->display == 0)
		dopt.profile_dir = ".browser-profiles/default";
	struct rk_screen_transport tr = {0};
	if (rk_machine_display_start(&mc, a->display, &dopt, &tr, &err) != 0)
		goto fail;
	const char *transport = tr.vnc_socket ? "vnc" : "provider";
	int r = tr.vnc_socket ? rk_screen_open_vnc(tr.vnc_socket, &s, &err)
			      : rk_screen_open_provider(ops, &mc.m, a->display, &s, &err);
	free(tr.vnc_socket);
	free(tr.cdp_socket);
	if (r != 0)
		goto fail;
	struct rk_window_watch *ww = strcmp(transport, "vnc") == 0 ? rk_window_watch_start(ops, &mc.m, a->display, s)
								   : NULL;
	rk_ipc_ready(ready_fd, NULL);
	const char *idle = getenv("RAKAZO_DISPLAY_IDLE_MS");
	int64_t idle_ms = idle && atoll(idle) > 0 ? atoll(idle) : 10LL * 60 * 1000;
	int64_t last = rk_monotonic_ms();
	for (;;) {
		struct pollfd pfd = {.fd = lsock, .events = POLLIN};
		int pr = poll(&pfd, 1, 1000);
		if (pr < 0 && errno != EINTR)
			break;
		if (pr > 0) {
			int c = rk_ipc_accept(lsock);
			if (c >= 0 && !rk_screen_alive(s)) {
				/* the screen went (its machine stopped or was replaced)
				 * before this call: its caller starts a new holder */
				reply_gone(c);
				close(c);
				rk_log(RK_LOG_INFO, "display %s:%d: the screen went away, holder ends", a->c->id,
				       a->display);
				break;
			}
			if (c >= 0) {
				int keep = serve(s, transport, a->display, c);
				close(c);
				last = rk_monotonic_ms();
				if (!keep)
					break;
			}
		}
		if (rk_monotonic_ms() - last > idle_ms)
			break;
		/* its machine went (a replacement comes with a new VNC server):
		 * end now, so the next call starts a holder on the new one
		 * instead of failing once on the dead connection */
		if (!rk_screen_alive(s)) {
			rk_log(RK_LOG_INFO, "display %s:%d: the screen went away, holder ends", a->c->id, a->display);
			break;
		}
	}
	stop_listening(lsock);
	rk_window_watch_stop(ww);
	rk_screen_free(s);
	rk_log(RK_LOG_INFO, "display %s:%d: holder done", a->c->id, a->display);
	free(name);
	_exit(0);
fail:
	rk_ipc_ready(ready_fd, &err);
	free(name);
	_exit(1);
}

/* --- the caller's side ------------------------------------------------------- */

static int call(struct rk_engine *eng, struct rk_computer *c, int display, const struct rk_display_observe_options *opt,
		cJSON *req, int64_t timeout_ms, cJSON **reply, struct rk_error *err)
{
	if (display < 0 || display > DISPLAY_MAX)
		return rk_error_set(err, RK_EINVALID, "display must be from 0 to %d", DISPLAY_MAX);
	if (!c->desktop)
		return rk_error_set(err, RK_EUNSUPPORTED, "computer '%s' was created without a desktop", c->name);
	int r = rk_computer_ensure_running(eng, c, err);
	if (r)
		return r;
	rk_idle_touch(eng, c->id);
	char *name = holder_name(c, display);
	for (int attempt = 0; attempt < 3; attempt++) {
		r = rk_ipc_call(name, req, timeout_ms, reply, err);
		if (r == 0 && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(*reply, "holder_gone"))) {
			/* it ended without acting on the call: as if none ran */
			cJSON_Delete(*reply);
			*reply = NULL;
			r = rk_error_set(err, RK_ENOTFOUND, "the display holder's screen went away");
		}
		if (r != -RK_ENOTFOUND)
			break;
		struct display_args a = {.data_dir = eng->data_dir,
					 .c = c,
					 .display = display,
					 .profile_dir = opt ? opt->profile_dir : NULL};
		r = rk_engine_spawn(eng, holder_main, &a, err);
		if (r == -RK_ECONFLICT) /* another caller started it first */
			r = 0;
		if (r && opt && opt->start_is_extra_screen && err && rk_err(err)->code != RK_EUSAGE &&
		    rk_err(err)->code != RK_EINVALID) {
			/* the provider cannot spawn another display: graphical calls
			 * say so with the stable code; shell and files still work */
			rk_error_prefix(err, "cannot start another screen on computer '%s'", c->name);
			rk_err(err)->code = RK_EMULTISCREEN;
			r = -RK_EMULTISCREEN;
		}
		if (r)
			break;
	}
	free(name);
	if (r == 0 && !*reply) /* three holders in a row went at once */
		r = rk_error_set(err, RK_EUNAVAILABLE, "the display of computer '%s' does not stay up: try again",
				 c->name);
	if (r)
		return r;
	const cJSON *er = cJSON_GetObjectItemCaseSensitive(*reply, "error");
	if (cJSON_IsObject(er)) {
		r = rk_error_set(err, rk_code_from_name(rk_json_string(er, "code", "failed")), "%s",
				 rk_json_string(er, "message", "display error"));
		cJSON_Delete(*reply);
		*reply = NULL;
	}
	return r;
}

static cJSON *observe_request(const char *op, const struct rk_display_observe_options *opt)
{
	cJSON *req = cJSON_CreateObject();
	cJSON_AddStringToObject(req, "op", op);
	if (opt) {
		cJSON_AddNumberToObject(req, "max_width", opt->max_width);
		cJSON_AddNumberToObject(req, "max_height", opt->max_height);
		if (opt->consumer)
			cJSON_AddStringToObject(req, "consumer", opt->consumer);
		/* only when asked: the request a PNG caller sends stays as it was */
		if (opt->format != RK_PICTURE_PNG)
			cJSON_AddStringToObject(req, "format", rk_picture_format_name(opt->format));
		if (opt->quality)
			cJSON_AddNumberToObject(req, "quality", opt->quality);
	}
	return req;
}

/* The encoding options, checked before any display is started for them. */
static int check_encoding(const struct rk_display_observe_options *opt, struct rk_error *err)
{
	if (!opt)
		return 0;
	if (opt->format != RK_PICTURE_PNG && opt->format != RK_PICTURE_JPEG)
		return rk_error_set(err, RK_EINVALID, "image format must be png or jpeg");
	if (opt->quality && (opt->quality < 1 || opt->quality > 100))
		return rk_error_set(err, RK_EINVALID, "jpeg quality must be from 1 to 100, not %d", opt->quality);
	return 0;
}

/* The static mime type an observation document names. */
static const char *mime_of(const cJSON *meta)
{
	const char *m = rk_json_string(meta, "mime_type", NULL);
	return m && !strcmp(m, "image/jpeg") ? rk_picture_mime(RK_PICTURE_JPEG) : rk_picture_mime(RK_PICTURE_PNG);
}

static int take_png(cJSON *reply, unsigned char **png, size_t *len, struct rk_error *err)
{
	const char *b64 = rk_json_string(reply, "png_b64", NULL);
	*png = NULL;
	*len = 0;
	if (!b64)
		return 0;
	struct rk_buf b;
	rk_buf_init(&b);
	if (rk_base64_decode(b64, &b) != 0) {
		rk_buf_release(&b);
		return rk_error_set(err, RK_ECORRUPT, "the display holder sent a bad image");
	}
	*png = (unsigned char *)rk_buf_detach(&b, len);
	return 0;
}

/* An observation reply into out (which owns its parts); reply is freed. */
static int take_shot(cJSON *reply, struct rk_display_shot *out, struct rk_error *err)
{
	out->meta = cJSON_DetachItemFromObjectCaseSensitive(reply, "observation");
	out->mime = mime_of(out->meta);
	int r = take_png(reply, &out->png, &out->png_len, err);
	cJSON_Delete(reply);
	if (!out->meta && r == 0)
		r = rk_error_set(err, RK_ECORRUPT, "the display holder sent no observation");
	if (r)
		rk_display_shot_release(out);
	return r;
}

int rk_display_observe(struct rk_engine *eng, struct rk_computer *c, int display,
		       const struct rk_display_observe_options *opt, struct rk_display_shot *out, struct rk_error *err)
{
	memset(out, 0, sizeof(*out));
	int r = check_encoding(opt, err);
	if (r)
		return r;
	cJSON *req = observe_request("observe", opt), *reply = NULL;
	r = call(eng, c, display, opt, req, 30000, &reply, err);
	cJSON_Delete(req);
	if (r)
		return r;
	return take_shot(reply, out, err);
}

int rk_display_zoom(struct rk_engine *eng, struct rk_computer *c, int display, const struct rk_picture_rect *region,
		    const struct rk_display_observe_options *opt, struct rk_display_shot *out, struct rk_error *err)
{
	memset(out, 0, sizeof(*out));
	if (!region)
		return rk_error_set(err, RK_EINVALID, "zoom: no region given");
	/* what can be checked without the screen's size, before a display starts */
	int r = rk_picture_rect_check(region, 0, 0, "zoom: region", err);
	if (r == 0)
		r = check_encoding(opt, err);
	if (r)
		return r;
	struct rk_display_observe_options o = {0};
	if (opt)
		o = *opt;
	o.consumer = NULL;
	cJSON *req = observe_request("zoom", &o), *reply = NULL;
	const int v[4] = {region->x0, region->y0, region->x1, region->y1};
	cJSON_AddItemToObject(req, "region", cJSON_CreateIntArray(v, 4));
	r = call(eng, c, display, opt, req, 30000, &reply, err);
	cJSON_Delete(req);
	if (r)
		return r;
	return take_shot(reply, out, err);
}

int rk_display_act(struct rk_engine *eng, struct rk_computer *c, int display, const char *batch_json, int settle_ms,
		   int observe, const struct rk_display_observe_options *opt, struct rk_display_act_result *out,
		   struct rk_error *err)
{
	memset(out, 0, sizeof(*out));
	/* check the whole batch here first: a bad one never reaches the screen */
	struct rk_action_batch b = {0};
	int r = rk_action_batch_parse(batch_json, strlen(batch_json), &b, err);
	if (r)
		return r;
	rk_action_batch_release(&b);
	if ((r = check_encoding(opt, err)) != 0)
		return r;
	cJSON *batch = cJSON_Parse(batch_json);
	cJSON *req = observe_request("act", opt), *reply = NULL;
	cJSON_AddItemToObject(req, "batch", batch);
	cJSON_AddNumberToObject(req, "settle_ms", settle_ms);
	cJSON_AddNumberToObject(req, "observe", observe);
	/* 24 actions of up to 5 s waits, plus settling */
	r = call(eng, c, display, opt, req, 150000, &reply, err);
	cJSON_Delete(req);
	if (r)
		return r;
	out->result = cJSON_DetachItemFromObjectCaseSensitive(reply, "result");
	out->mime = mime_of(cJSON_GetObjectItemCaseSensitive(out->result, "observation"));
	r = take_png(reply, &out->png, &out->png_len, err);
	cJSON_Delete(reply);
	if (!out->result && r == 0)
		r = rk_error_set(err, RK_ECORRUPT, "the display holder sent no result");
	if (r)
		rk_display_act_result_release(out);
	return r;
}

int rk_display_info(struct rk_engine *eng, struct rk_computer *c, int display, cJSON **out, struct rk_error *err)
{
	cJSON *req = observe_request("info", NULL), *reply = NULL;
	int r = call(eng, c, display, NULL, req, 10000, &reply, err);
	cJSON_Delete(req);
	if (r)
		return r;
	*out = cJSON_DetachItemFromObjectCaseSensitive(reply, "info");
	cJSON_Delete(reply);
	return *out ? 0 : rk_error_set(err, RK_ECORRUPT, "the display holder sent no info");
}

int rk_display_close(struct rk_engine *eng, struct rk_computer *c, int display, struct rk_error *err)
{
	if (display < 0 || display > DISPLAY_MAX)
		return rk_error_set(err, RK_EINVALID, "display must be from 0 to %d", DISPLAY_MAX);
	/* the screen gateway's clients go first (the gateway answers the
	 * hook); while they cannot, the slot stays as it is for a retry */
	int gr = RK_HOOK(display_closing, err, eng, c->id, display, err);
	if (gr)
		return gr;
	char *name = holder_name(c, display);
	cJSON *req = observe_request("close", NULL), *reply = NULL;
	if (rk_ipc_call(name, req, 5000, &reply, NULL) == 0)
		cJSON_Delete(reply);
	cJSON_Delete(req);
	free(name);
	struct rk_machine_ctx mc;
	int r = rk_machine_open(&mc, eng, c, err);
	if (r)
		return r;
	/* without display_stop there is nothing to stop: its displays end with the machine */
	r = mc.ops->display_stop ? rk_machine_display_stop(&mc, display, err) : 0;
	rk_machine_ctx_release(&mc);
	return r;
}
