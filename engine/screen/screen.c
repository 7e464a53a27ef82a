#include "engine/screen/screen.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <rfb/rfbclient.h>
#include <signal.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "engine/screen/picture.h"
#include "engine/util/buf.h"
#include "engine/util/fs.h"
#include "engine/util/id.h"
#include "engine/util/json.h"
#include "engine/util/log.h"
#include "engine/util/time.h"

/* Every wait is bounded. */
#define OPEN_WAIT_MS 5000    /* connect + first full frame */
#define LOCK_WAIT_MS 5000    /* the framebuffer lock (the reader holds it per message) */
#define SETTLE_EXTRA_MS 2000 /* a screen that never goes quiet settles after settle_ms + this */
/* x11vnc is slow to pass input on for about a second after a client
 * connects (a click showed after ~500 ms, then ~120 ms; typed characters
 * were lost): the first act on a fresh connection waits that out */
#define VNC_INPUT_WARMUP_MS 1200
#define VNC_TIMEOUT_S 5	     /* libvncclient connect and read timeouts */
#define CONSUMERS_MAX 64     /* dedupe memory: the most recent consumers */
#define DRAG_STEP_PX 24	     /* a drag moves in steps of about this many pixels */
#define DRAG_STEPS_MAX 12    /* per path segment */
#define DRAG_STEP_SLEEP_MS 4 /* between drag steps, so applications see motion */
/* Between the clicks of a double click: sent back to back, the second was
 * lost about 1 time in 6 (Tk under openbox, with x11vnc's own injection
 * and with rakazo-input alike); well inside any double-click time. */
#define CLICK_GAP_MS 40
/* Between press and release of a key outside ASCII, for an x11vnc that
 * adds such keysyms to the keymap itself (-add_keysyms): sent back to
 * back, about 1 in 40 new characters was lost (6 of 240 in a Tk client).
 * Our image's displays (desktop name "rakazo :N") keep the keymap in
 * rakazo-input instead and need no pause. */
#define TYPE_ADDED_KEY_MS 5
#define KEPT_KEYMAP_DESKTOP "rakazo :"

enum screen_kind { SCREEN_VNC, SCREEN_PROVIDER };

/* VNC button mask bits: buttons 1-3, wheel up/down/left/right (4-7). */
#define BTN_MASK(b) (1 << ((b)-1))
#define WHEEL_UP (1 << 3)
#define WHEEL_DOWN (1 << 4)
#define XK_SHIFT_L 0xffe1

struct consumer {
	char *id;
	char hash[65];
	struct consumer *next;
};

struct rk_screen {
	enum screen_kind kind;
	pthread_mutex_t api;  /* serializes observe and act (the cache and consumers) */
	pthread_mutex_t lock; /* the framebuffer, the socket and the live fields below */
	pthread_cond_t cond;  /* a frame finished, or the connection ended (CLOCK_MONOTONIC) */

	/* VNC */
	char *socket_path;
	rfbClient *client;
	unsigned char *fb; /* client->frameBuffer, 4 bytes a pixel, R G B x */
	int fb_w, fb_h;
	pthread_t thread;
	int thread_started;
	int stop;
	int dead;
	uint64_t gen;		/* bumps with every updated rectangle: the damage counter */
	uint64_t frames;	/* finished framebuffer updates */
	uint64_t covered;	/* pixels updated since the framebuffer was made */
	int64_t last_update_ms; /* monotonic */
	int64_t last_input_ms;	/* monotonic */
	int64_t input_ready_ms; /* monotonic: x11vnc passes input on promptly from here */
	int keymap_kept;	/* the display's own input helper maps keysyms in batches */
	int buttons;		/* VNC button mask held now */

	/* provider */
	const struct rk_provider_ops *ops;
	struct rk_machine m;
	int display;
	int prov_w, prov_h;

	/* both: pointer position in screen coordinates, under lock */
	int has_cursor, cursor_x, cursor_y;

	/* under api */
	uint64_t frame_seq;
	int cache_valid;
	uint64_t cache_gen;
	int cache_sw, cache_sh, cache_w, cache_h;
	uint64_t cache_fast;
	char cache_hash[65];
	/* rgb encoded, per rk_picture_format, made when a consumer first needs
	 * it: a run's JPEG and a person's PNG of one frame are each made once */
	unsigned char *cache_enc[2];
	size_t cache_enc_len[2];
	int cache_jpeg_quality; /* of cache_enc[RK_PICTURE_JPEG] */
	unsigned char *rgb;	/* the image of the cached frame, packed RGB */
	size_t rgb_cap;
	struct consumer *consumers;
	rk_screen_window_fn window_fn;
	void *window_ctx;
};

static int screen_client_tag; /* rfbClientSetClientData key */

static int screen_dims(struct rk_screen *s, int *sw, int *sh, struct rk_error *err);

static void sodium_once(void)
{
	if (sodium_init() < 0)
		abort(); /* no usable randomness source: nothing here can work */
}

/* --- small helpers ---------------------------------------------------- */

static void deadline_ts(int64_t ms_from_now, clockid_t clock, struct timespec *ts)
{
	clock_gettime(clock, ts);
	int64_t ns = ts->tv_nsec + (ms_from_now % 1000) * 1000000;
	ts->tv_sec += ms_from_now / 1000 + ns / 1000000000;
	ts->tv_nsec = ns % 1000000000;
}

static int lock_bounded(struct rk_screen *s, struct rk_error *err)
{
	struct timespec ts;
	deadline_ts(LOCK_WAIT_MS, CLOCK_REALTIME, &ts);
	int rc = pthread_mutex_timedlock(&s->lock, &ts);
	if (rc == 0)
		return 0;
	return rk_error_set(err, RK_ETIMEOUT,
			    "the display did not answer within %d ms (the VNC server is stuck); try again or restart "
			    "the display",
			    LOCK_WAIT_MS);
}

/* Waits on cond until the monotonic time `until` (ms); lock held. */
static void cond_wait_until(struct rk_screen *s, int64_t until)
{
	int64_t left = until - rk_monotonic_ms();
	if (left <= 0)
		return;
	struct timespec ts;
	deadline_ts(left, CLOCK_MONOTONIC, &ts);
	pthread_cond_timedwait(&s->cond, &s->lock, &ts);
}

static int dead_error(struct rk_screen *s, struct rk_error *err)
{
	return rk_error_set(err, RK_EUNAVAILABLE,
			    "the display went away: the VNC connection to %s closed (x11vnc stopped?); start the "
			    "display again",
			    s->socket_path ? s->socket_path : "the display");
}

/* A write to a closed socket must not kill the process: SIGPIPE is blocked
 * in the writing thread and a pending one taken back (as curl does). */
struct sigpipe_guard {
	sigset_t old;
	int was_pending;
};

static void sigpipe_block(struct sigpipe_guard *g)
{
	sigset_t set, pend;
	sigemptyset(&set);
	sigaddset(&set, SIGPIPE);
	sigemptyset(&pend);
	sigpending(&pend);
	g->was_pending = sigismember(&pend, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &set, &g->old);
}

static void sigpipe_restore(struct sigpipe_guard *g)
{
	sigset_t set, pend;
	sigemptyset(&set);
	sigaddset(&set, SIGPIPE);
	sigemptyset(&pend);
	sigpending(&pend);
	if (!g->was_pending && sigismember(&pend, SIGPIPE)) {
		struct timespec zero = {0, 0};
		sigtimedwait(&set, NULL, &zero);
	}
	pthread_sigmask(SIG_SETMASK, &g->old, NULL);
}

static void vnc_log(const char *fmt, ...)
{
	char line[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	size_t n = strlen(line);
	while (n && (line[n - 1] == '\n' || line[n - 1] == '\r'))
		line[--n] = 0;
	rk_log(RK_LOG_DEBUG, "vnc: %s", line);
}

static pthread_once_t log_once = PTHREAD_ONCE_INIT;

static void install_log_hooks(void)
{
	/* libvncclient logs to stderr by default; the engine never touches the terminal */
	rfbClientLog = vnc_log;
	rfbClientErr = vnc_log;
}

static struct rk_screen *screen_new(enum screen_kind kind)
{
	struct rk_screen *s = rk_xcalloc(1, sizeof(*s));
	s->kind = kind;
	pthread_mutex_init(&s->api, NULL);
	pthread_mutex_init(&s->lock, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&s->cond, &ca);
	pthread_condattr_destroy(&ca);
	return s;
}

/* --- the VNC reader ------------------------------------------------------ */

static struct rk_screen *screen_of(rfbClient *c)
{
	return rfbClientGetClientData(c, &screen_client_tag);
}

static rfbBool cb_malloc_fb(rfbClient *c)
{
	struct rk_screen *s = screen_of(c);
	free(c->frameBuffer);
	c->frameBuffer = NULL;
	s->fb = NULL;
	if (c->width <= 0 || c->height <= 0 || c->width > 16384 || c->height > 16384)
		return FALSE;
	c->frameBuffer = calloc((size_t)c->width * (size_t)c->height, 4);
	if (!c->frameBuffer)
		return FALSE;
	s->fb = c->frameBuffer;
	s->fb_w = c->width;
	s->fb_h = c->height;
	s->covered = 0;
	s->gen++;
	return TRUE;
}

static void cb_update(rfbClient *c, int x, int y, int w, int h)
{
	struct rk_screen *s = screen_of(c);
	s->gen++;
	s->covered += (uint64_t)(w > 0 ? w : 0) * (uint64_t)(h > 0 ? h : 0);
	s->last_update_ms = rk_monotonic_ms();
}

static void cb_finished(rfbClient *c)
{
	struct rk_screen *s = screen_of(c);
	s->frames++;
	pthread_cond_broadcast(&s->cond);
}

static void mark_dead(struct rk_screen *s, const char *why)
{
	if (!s->dead)
		rk_log(RK_LOG_WARN, "screen: %s: %s", s->socket_path ? s->socket_path : "vnc", why);
	s->dead = 1;
	pthread_cond_broadcast(&s->cond);
}

static void *vnc_reader(void *arg)
{
	struct rk_screen *s = arg;
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &set, NULL); /* the reader writes update requests */
	for (;;) {
		pthread_mutex_lock(&s->lock);
		int stop = s->stop;
		pthread_mutex_unlock(&s->lock);
		if (stop)
			break;
		/* a whole message may already sit in libvncclient's read buffer,
		 * where select() cannot see it */
		int n = s->client->buffered > 0 ? 1 : WaitForMessage(s->client, 100000);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			pthread_mutex_lock(&s->lock);
			mark_dead(s, "waiting for the VNC server failed");
			pthread_mutex_unlock(&s->lock);
			break;
		}
		if (n == 0)
			continue;
		pthread_mutex_lock(&s->lock);
		rfbBool ok = HandleRFBServerMessage(s->client);
		if (!ok)
			mark_dead(s, "the VNC server closed the connection");
		pthread_mutex_unlock(&s->lock);
		if (!ok)
			break;
	}
	return NULL;
}

int rk_screen_open_vnc(const char *path, struct rk_screen **out, struct rk_error *err)
{
	*out = NULL;
	if (!path || !*path)
		return rk_error_set(err, RK_EINVALID, "no VNC socket path given");
	int sock_fd = rk_fs_open_socket(path, "VNC socket", err);
	if (sock_fd < 0)
		return sock_fd;
	pthread_once(&log_once, install_log_hooks);
	/* connect through the fd, so what was checked is what is connected to */
	char via[64];
	snprintf(via, sizeof(via), "/proc/self/fd/%d", sock_fd);

	struct rk_screen *s = screen_new(SCREEN_VNC);
	s->socket_path = rk_xstrdup(path);
	rfbClient *c = rfbGetClient(8, 3, 4);
	if (!c) {
		close(sock_fd);
		rk_screen_free(s);
		return rk_error_set(err, RK_EFAILED, "cannot create a VNC client");
	}
	rfbClientSetClientData(c, &screen_client_tag, s);
	c->serverHost = rk_xstrdup(via); /* a socket path: libvncclient connects with AF_UNIX */
	c->serverPort = 0;
	c->appData.encodingsString = "tight zrle";
	c->appData.enableJPEG = FALSE; /* libvncclient's tight default is lossy JPEG */
	c->appData.compressLevel = 1;
	c->appData.useRemoteCursor = FALSE; /* x11vnc draws the pointer into the pixels */
	c->appData.shareDesktop = TRUE;
	c->canHandleNewFBSize = TRUE;
	c->connectTimeout = VNC_TIMEOUT_S;
	c->readTimeout = VNC_TIMEOUT_S;
	c->MallocFrameBuffer = cb_malloc_fb;
	c->GotFrameBufferUpdate = cb_update;
	c->FinishedFrameBufferUpdate = cb_finished;

	struct sigpipe_guard g;
	sigpipe_block(&g);
	rfbBool ok = rfbInitClient(c, NULL, NULL); /* frees c when it fails */
	sigpipe_restore(&g);
	close(sock_fd);
	if (!ok) {
		free(s->fb);
		s->fb = NULL;
		rk_screen_free(s);
		return rk_error_set(err, RK_EUNAVAILABLE,
				    "cannot connect to the VNC server at %s (x11vnc not running?); start the display "
				    "again",
				    path);
	}
	s->client = c;
	s->keymap_kept = c->desktopName && !strncmp(c->desktopName, KEPT_KEYMAP_DESKTOP, strlen(KEPT_KEYMAP_DESKTOP));
	s->last_update_ms = s->last_input_ms = rk_monotonic_ms();
	s->input_ready_ms = s->last_input_ms + VNC_INPUT_WARMUP_MS;
	if (pthread_create(&s->thread, NULL, vnc_reader, s) != 0) {
		rk_screen_free(s);
		return rk_error_set(err, RK_EFAILED, "cannot start the VNC reader thread");
	}
	s->thread_started = 1;

	/* the first full frame, bounded: x11vnc may first send a few small
	 * rectangles, so wait until updates have covered the screen once */
	int64_t until = rk_monotonic_ms() + OPEN_WAIT_MS;
	pthread_mutex_lock(&s->lock);
	while (s->covered < (uint64_t)s->fb_w * s->fb_h && !s->dead && rk_monotonic_ms() < until)
		cond_wait_until(s, until);
	int got = s->covered >= (uint64_t)s->fb_w * s->fb_h, dead = s->dead;
	pthread_mutex_unlock(&s->lock);
	if (!got) {
		rk_screen_free(s);
		if (dead)
			return rk_error_set(err, RK_EUNAVAILABLE, "the VNC server at %s closed the connection", path);
		return rk_error_set(err, RK_ETIMEOUT, "the VNC server at %s sent no frame within %d ms", path,
				    OPEN_WAIT_MS);
	}
	*out = s;
	return 0;
}

/* --- provider screens ---------------------------------------------------- */

int rk_screen_open_provider(const struct rk_provider_ops *ops, const struct rk_machine *m, int display,
			    struct rk_screen **out, struct rk_error *err)
{
	*out = NULL;
	if (!ops || !ops->capture || !ops->act)
		return rk_error_set(err, RK_EUNSUPPORTED, "provider %s cannot capture or act on a screen",
				    ops && ops->name ? ops->name : "(none)");
	struct rk_screen *s = screen_new(SCREEN_PROVIDER);
	s->ops = ops;
	s->display = display;
	s->m.computer_id = rk_xstrdup(m->computer_id);
	s->m.home_key = rk_xstrdup(m->home_key);
	s->m.data_dir = rk_xstrdup(m->data_dir);
	s->m.home_dir = rk_xstrdup(m->home_dir);
	s->m.run_dir = rk_xstrdup(m->run_dir);
	s->m.ref = rk_xstrdup(m->ref);
	s->m.options_json = rk_xstrdup(m->options_json);
	s->m.limits = m->limits;
	/* one capture now: the size is known from the start (rk_screen_size,
	 * a display's info) and a display that does not work fails here */
	int sw, sh, rc = screen_dims(s, &sw, &sh, err);
	if (rc < 0) {
		rk_screen_free(s);
		return rc;
	}
	*out = s;
	return 0;
}

void rk_screen_free(struct rk_screen *s)
{
	if (!s)
		return;
	if (s->thread_started) {
		pthread_mutex_lock(&s->lock);
		s->stop = 1;
		pthread_mutex_unlock(&s->lock);
		pthread_join(s->thread, NULL);
	}
	if (s->client) {
		free(s->client->frameBuffer);
		s->client->frameBuffer = NULL;
		rfbClientCleanup(s->client);
	}
	free(s->socket_path);
	free((char *)s->m.computer_id);
	free((char *)s->m.home_key);
	free((char *)s->m.data_dir);
	free((char *)s->m.home_dir);
	free((char *)s->m.run_dir);
	free((char *)s->m.ref);
	free((char *)s->m.options_json);
	for (int f = 0; f < 2; f++)
		free(s->cache_enc[f]);
	free(s->rgb);
	while (s->consumers) {
		struct consumer *n = s->consumers->next;
		free(s->consumers->id);
		free(s->consumers);
		s->consumers = n;
	}
	pthread_cond_destroy(&s->cond);
	pthread_mutex_destroy(&s->lock);
	pthread_mutex_destroy(&s->api);
	free(s);
}

uint64_t rk_screen_damage(struct rk_screen *s)
{
	pthread_mutex_lock(&s->lock);
	uint64_t g = s->gen;
	pthread_mutex_unlock(&s->lock);
	return g;
}

int rk_screen_alive(struct rk_screen *s)
{
	pthread_mutex_lock(&s->lock);
	int dead = s->dead;
	pthread_mutex_unlock(&s->lock);
	return !dead;
}

void rk_screen_set_window_probe(struct rk_screen *s, rk_screen_window_fn fn, void *ctx)
{
	pthread_mutex_lock(&s->api);
	s->window_fn = fn;
	s->window_ctx = ctx;
	pthread_mutex_unlock(&s->api);
}

void rk_screen_size(struct rk_screen *s, int *w, int *h)
{
	pthread_mutex_lock(&s->lock);
	*w = s->kind == SCREEN_VNC ? s->fb_w : s->prov_w;
	*h = s->kind == SCREEN_VNC ? s->fb_h : s->prov_h;
	pthread_mutex_unlock(&s->lock);
}

/* --- observe -------------------------------------------------------------- */

static void rgb_reserve(struct rk_screen *s, size_t n)
{
	if (s->rgb_cap < n) {
		free(s->rgb);
		s->rgb = rk_xmalloc(n);
		s->rgb_cap = n;
	}
}

/* BLAKE2b-256 of the image's bytes, in hex: about 40% cheaper than SHA-256
 * on 3 MB of pixels (5.3 against 8.4 ms here), still a cryptographic hash. */
static void frame_hash_hex(const unsigned char *rgb, size_t n, char out[65])
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	pthread_once(&once, sodium_once);
	unsigned char d[32];
	crypto_generichash(d, sizeof(d), rgb, n, NULL, 0);
	sodium_bin2hex(out, 65, d, sizeof(d));
}

/* The image in s->rgb is new (w x h of a sw x sh screen): hash it, unless
 * the fast hash says it is the cached one. */
static void cache_image(struct rk_screen *s, uint64_t gen, int sw, int sh, int w, int h)
{
	size_t n = (size_t)w * h * 3;
	uint64_t fast = rk_picture_fast_hash(s->rgb, n);
	int same = s->cache_valid && s->cache_w == w && s->cache_h == h && s->cache_sw == sw && s->cache_sh == sh &&
		   s->cache_fast == fast;
	s->cache_gen = gen;
	if (same)
		return;
	frame_hash_hex(s->rgb, n, s->cache_hash);
	s->cache_fast = fast;
	s->cache_w = w;
	s->cache_h = h;
	s->cache_sw = sw;
	s->cache_sh = sh;
	s->cache_valid = 1;
	for (int f = 0; f < 2; f++) {
		free(s->cache_enc[f]);
		s->cache_enc[f] = NULL;
		s->cache_enc_len[f] = 0;
	}
}

static int grab_vnc(struct rk_screen *s, int max_w, int max_h, int *cur, struct rk_error *err)
{
	int rc = lock_bounded(s, err);
	if (rc < 0)
		return rc;
	if (s->dead || !s->fb) {
		pthread_mutex_unlock(&s->lock);
		return dead_error(s, err);
	}
	int sw = s->fb_w, sh = s->fb_h, w, h;
	rk_picture_fit(sw, sh, max_w, max_h, &w, &h);
	cur[0] = s->has_cursor, cur[1] = s->cursor_x, cur[2] = s->cursor_y;
	if (s->cache_valid && s->cache_gen == s->gen && s->cache_w == w && s->cache_h == h && s->cache_sw == sw &&
	    s->cache_sh == sh) {
		/* nothing was drawn since the cached frame: no work at all */
		pthread_mutex_unlock(&s->lock);
		return 0;
	}
	uint64_t gen = s->gen;
	rgb_reserve(s, (size_t)w * h * 3);
	rk_picture_scale(s->fb, sw, sh, 4, (size_t)sw * 4, s->rgb, w, h);
	pthread_mutex_unlock(&s->lock);
	cache_image(s, gen, sw, sh, w, h);
	return 0;
}

static int grab_provider(struct rk_screen *s, int max_w, int max_h, int *cur, char **title, struct rk_error *err)
{
	struct rk_frame f;
	memset(&f, 0, sizeof(f));
	int rc = s->ops->capture(&s->m, s->display, &f, err);
	if (rc < 0)
		return rc;
	if (!f.rgb || f.width <= 0 || f.height <= 0) {
		free(f.rgb);
		free(f.window_title);
		return rk_error_set(err, RK_EFAILED, "provider %s returned an empty frame", s->ops->name);
	}
	int w, h;
	rk_picture_fit(f.width, f.height, max_w, max_h, &w, &h);
	rgb_reserve(s, (size_t)w * h * 3);
	rk_picture_scale(f.rgb, f.width, f.height, 3, (size_t)f.width * 3, s->rgb, w, h);
	pthread_mutex_lock(&s->lock);
	s->prov_w = f.width;
	s->prov_h = f.height;
	s->has_cursor = 1;
	s->cursor_x = f.cursor_x;
	s->cursor_y = f.cursor_y;
	pthread_mutex_unlock(&s->lock);
	cur[0] = 1, cur[1] = f.cursor_x, cur[2] = f.cursor_y;
	cache_image(s, 0, f.width, f.height, w, h);
	free(f.rgb);
	*title = f.window_title;
	return 0;
}

static struct consumer *consumer_find(struct rk_screen *s, const char *id)
{
	struct consumer **pp = &s->consumers, *c;
	size_t n = 0;
	for (; (c = *pp); pp = &c->next, n++) {
		if (strcmp(c->id, id) == 0) {
			*pp = c->next; /* to the front */
			c->next = s->consumers;
			s->consumers = c;
			return c;
		}
	}
	c = rk_xcalloc(1, sizeof(*c));
	c->id = rk_xstrdup(id);
	c->next = s->consumers;
	s->consumers = c;
	/* forget the least recent beyond the limit */
	n = 0;
	for (struct consumer *p = s->consumers; p; p = p->next)
		if (++n == CONSUMERS_MAX && p->next) {
			struct consumer *rest = p->next;
			p->next = NULL;
			while (rest) {
				struct consumer *nx = rest->next;
				free(rest->id);
				free(rest);
				rest = nx;
			}
			break;
		}
	return c;
}

/* The encoding opt asks for, checked. */
static int encoding_of(const struct rk_observe_options *opt, enum rk_picture_format *f, int *q, struct rk_error *err)
{
	*f = opt ? opt->format : RK_PICTURE_PNG;
	*q = opt && opt->quality ? opt->quality : RK_JPEG_QUALITY_DEFAULT;
	if (*f != RK_PICTURE_PNG && *f != RK_PICTURE_JPEG)
		return rk_error_set(err, RK_EINVALID, "image format must be png or jpeg");
	if (*q < 1 || *q > 100)
		return rk_error_set(err, RK_EINVALID, "jpeg quality must be from 1 to 100, not %d", *q);
	return 0;
}

/* The cached frame in format f, made once per frame (and JPEG quality). */
static int cached_encoding(struct rk_screen *s, enum rk_picture_format f, int q, struct rk_error *err)
{
	if (s->cache_enc[f] && (f != RK_PICTURE_JPEG || s->cache_jpeg_quality == q))
		return 0;
	free(s->cache_enc[f]);
	s->cache_enc[f] = NULL;
	s->cache_enc_len[f] = 0;
	struct rk_buf b = RK_BUF_INIT;
	rk_buf_init(&b);
	int rc = rk_picture_encode(f, q, s->rgb, s->cache_w, s->cache_h, &b, err);
	if (rc < 0) {
		rk_buf_release(&b);
		return rc;
	}
	s->cache_enc[f] = (unsigned char *)rk_buf_detach(&b, &s->cache_enc_len[f]);
	if (f == RK_PICTURE_JPEG)
		s->cache_jpeg_quality = q;
	return 0;
}

static int observe_locked(struct rk_screen *s, const struct rk_observe_options *opt, struct rk_observation *o,
			  struct rk_error *err)
{
	memset(o, 0, sizeof(*o));
	int max_w = opt ? opt->max_width : 0, max_h = opt ? opt->max_height : 0;
	if (max_w < 0 || max_h < 0)
		return rk_error_set(err, RK_EINVALID, "max width and height must not be negative");
	enum rk_picture_format fmt;
	int quality;
	int rc = encoding_of(opt, &fmt, &quality, err);
	if (rc < 0)
		return rc;
	int cur[3] = {0, 0, 0};
	char *title = NULL, *wid = NULL;
	rc = s->kind == SCREEN_VNC ? grab_vnc(s, max_w, max_h, cur, err)
				   : grab_provider(s, max_w, max_h, cur, &title, err);
	if (rc < 0)
		return rc;
	o->frame_id = ++s->frame_seq;
	o->captured_at_ms = rk_now_ms();
	o->mime_type = rk_picture_mime(fmt);
	o->width = s->cache_w;
	o->height = s->cache_h;
	o->screen_width = s->cache_sw;
	o->screen_height = s->cache_sh;
	o->scale = s->cache_sw ? (double)s->cache_w / s->cache_sw : 1.0;
	if (cur[0]) {
		o->has_cursor = 1;
		/* the image pixel an action at it maps back to this screen pixel from */
		o->cursor_x = rk_coord_to_image(cur[1], s->cache_w, s->cache_sw);
		o->cursor_y = rk_coord_to_image(cur[2], s->cache_h, s->cache_sh);
	}
	memcpy(o->frame_hash, s->cache_hash, sizeof(o->frame_hash));
	struct consumer *c = opt && opt->consumer ? consumer_find(s, opt->consumer) : NULL;
	if (c && strcmp(c->hash, s->cache_hash) == 0) {
		o->unchanged = 1;
	} else {
		if ((rc = cached_encoding(s, fmt, quality, err)) < 0) {
			free(title);
			return rc;
		}
		o->png = rk_xmalloc(s->cache_enc_len[fmt]);
		memcpy(o->png, s->cache_enc[fmt], s->cache_enc_len[fmt]);
		o->png_len = s->cache_enc_len[fmt];
		if (c)
			memcpy(c->hash, s->cache_hash, sizeof(c->hash));
	}
	if (s->window_fn) {
		char *t2 = NULL;
		if (s->window_fn(s->window_ctx, &wid, &t2) == 0 && t2) {
			free(title);
			title = t2;
		} else {
			free(t2);
		}
	}
	o->window_id = wid;
	o->window_title = title;
	return 0;
}

int rk_screen_observe(struct rk_screen *s, const struct rk_observe_options *opt, struct rk_observation *out,
		      struct rk_error *err)
{
	pthread_mutex_lock(&s->api);
	int rc = observe_locked(s, opt, out, err);
	pthread_mutex_unlock(&s->api);
	return rc;
}

void rk_observation_release(struct rk_observation *o)
{
	if (!o)
		return;
	free(o->window_id);
	free(o->window_title);
	free(o->png);
	memset(o, 0, sizeof(*o));
}

cJSON *rk_observation_to_json(const struct rk_observation *o)
{
	cJSON *j = cJSON_CreateObject();
	char buf[40];
	snprintf(buf, sizeof(buf), "%llu", (unsigned long long)o->frame_id);
	cJSON_AddStringToObject(j, "frame_id", buf);
	cJSON_AddStringToObject(j, "captured_at", rk_iso8601(o->captured_at_ms, buf, sizeof(buf)));
	cJSON_AddStringToObject(j, "mime_type", o->mime_type ? o->mime_type : "image/png");
	cJSON_AddNumberToObject(j, "width", o->width);
	cJSON_AddNumberToObject(j, "height", o->height);
	cJSON_AddNumberToObject(j, "screen_width", o->screen_width);
	cJSON_AddNumberToObject(j, "screen_height", o->screen_height);
	cJSON_AddNumberToObject(j, "scale", round(o->scale * 10000.0) / 10000.0);
	if (o->has_cursor) {
		cJSON *c = cJSON_AddObjectToObject(j, "cursor");
		cJSON_AddNumberToObject(c, "x", o->cursor_x);
		cJSON_AddNumberToObject(c, "y", o->cursor_y);
	} else {
		cJSON_AddNullToObject(j, "cursor");
	}
	if (o->window_id || o->window_title) {
		cJSON *w = cJSON_AddObjectToObject(j, "active_window");
		rk_json_add_str_or_null(w, "id", o->window_id);
		rk_json_add_str_or_null(w, "title", o->window_title);
	} else {
		cJSON_AddNullToObject(j, "active_window");
	}
	cJSON_AddStringToObject(j, "frame_hash", o->frame_hash);
	cJSON_AddBoolToObject(j, "unchanged", o->unchanged ? 1 : 0);
	if (o->zoomed) {
		cJSON *z = cJSON_AddObjectToObject(j, "zoom");
		const struct rk_picture_rect *r[2] = {&o->region, &o->screen_region};
		const char *names[2] = {"region", "screen_region"};
		for (int i = 0; i < 2; i++) {
			const int v[4] = {r[i]->x0, r[i]->y0, r[i]->x1, r[i]->y1};
			cJSON_AddItemToObject(z, names[i], cJSON_CreateIntArray(v, 4));
		}
	}
	return j;
}

/* --- zoom ------------------------------------------------------------------- */

/* Crops region (in the max_w x max_h image of the sw x sh frame src) at
 * full resolution and scales it to fill that image's size: into o's sizes
 * and *rgb (malloc'd). */
static int zoom_frame(const unsigned char *src, int sw, int sh, int bpp, size_t stride, int max_w, int max_h,
		      const struct rk_picture_rect *region, struct rk_observation *o, unsigned char **rgb,
		      struct rk_error *err)
{
	int iw, ih;
	rk_picture_fit(sw, sh, max_w, max_h, &iw, &ih);
	int rc = rk_picture_rect_check(region, iw, ih, "zoom: region", err);
	if (rc < 0)
		return rc;
	/* image pixel v covers screen [v*sw/iw, (v+1)*sw/iw): every screen
	 * pixel the region touches */
	struct rk_picture_rect sr = {(int)((int64_t)region->x0 * sw / iw), (int)((int64_t)region->y0 * sh / ih),
				     (int)(((int64_t)region->x1 * sw + iw - 1) / iw),
				     (int)(((int64_t)region->y1 * sh + ih - 1) / ih)};
	int cw = sr.x1 - sr.x0, ch = sr.y1 - sr.y0, zw, zh;
	rk_picture_fill(cw, ch, iw, ih, &zw, &zh);
	*rgb = rk_xmalloc((size_t)zw * zh * 3);
	rk_picture_scale(src + (size_t)sr.y0 * stride + (size_t)sr.x0 * bpp, cw, ch, bpp, stride, *rgb, zw, zh);
	o->width = zw;
	o->height = zh;
	o->screen_width = sw;
	o->screen_height = sh;
	o->scale = (double)zw / cw;
	o->zoomed = 1;
	o->region = *region;
	o->screen_region = sr;
	return 0;
}

static int zoom_vnc(struct rk_screen *s, int max_w, int max_h, const struct rk_picture_rect *region,
		    struct rk_observation *o, unsigned char **rgb, struct rk_error *err)
{
	int rc = lock_bounded(s, err);
	if (rc < 0)
		return rc;
	if (s->dead || !s->fb) {
		pthread_mutex_unlock(&s->lock);
		return dead_error(s, err);
	}
	rc = zoom_frame(s->fb, s->fb_w, s->fb_h, 4, (size_t)s->fb_w * 4, max_w, max_h, region, o, rgb, err);
	pthread_mutex_unlock(&s->lock);
	return rc;
}

static int zoom_provider(struct rk_screen *s, int max_w, int max_h, const struct rk_picture_rect *region,
			 struct rk_observation *o, unsigned char **rgb, struct rk_error *err)
{
	struct rk_frame f;
	memset(&f, 0, sizeof(f));
	int rc = s->ops->capture(&s->m, s->display, &f, err);
	if (rc < 0)
		return rc;
	if (!f.rgb || f.width <= 0 || f.height <= 0)
		rc = rk_error_set(err, RK_EFAILED, "provider %s returned an empty frame", s->ops->name);
	else
		rc = zoom_frame(f.rgb, f.width, f.height, 3, (size_t)f.width * 3, max_w, max_h, region, o, rgb, err);
	if (rc == 0) {
		pthread_mutex_lock(&s->lock);
		s->prov_w = f.width;
		s->prov_h = f.height;
		pthread_mutex_unlock(&s->lock);
	}
	free(f.rgb);
	free(f.window_title);
	return rc;
}

int rk_screen_zoom(struct rk_screen *s, const struct rk_picture_rect *region, const struct rk_observe_options *opt,
		   struct rk_observation *o, struct rk_error *err)
{
	memset(o, 0, sizeof(*o));
	if (!region)
		return rk_error_set(err, RK_EINVALID, "zoom: no region given");
	int max_w = opt ? opt->max_width : 0, max_h = opt ? opt->max_height : 0;
	if (max_w < 0 || max_h < 0)
		return rk_error_set(err, RK_EINVALID, "max width and height must not be negative");
	enum rk_picture_format fmt;
	int quality;
	int rc = encoding_of(opt, &fmt, &quality, err);
	if (rc < 0)
		return rc;
	/* the checks that need no screen first */
	if ((rc = rk_picture_rect_check(region, 0, 0, "zoom: region", err)) < 0)
		return rc;
	unsigned char *rgb = NULL;
	pthread_mutex_lock(&s->api);
	rc = s->kind == SCREEN_VNC ? zoom_vnc(s, max_w, max_h, region, o, &rgb, err)
				   : zoom_provider(s, max_w, max_h, region, o, &rgb, err);
	if (rc == 0)
		o->frame_id = ++s->frame_seq;
	pthread_mutex_unlock(&s->api);
	if (rc < 0) {
		free(rgb);
		memset(o, 0, sizeof(*o));
		return rc;
	}
	o->captured_at_ms = rk_now_ms();
	o->mime_type = rk_picture_mime(fmt);
	size_t n = (size_t)o->width * o->height * 3;
	frame_hash_hex(rgb, n, o->frame_hash);
	struct rk_buf b = RK_BUF_INIT;
	rk_buf_init(&b);
	rc = rk_picture_encode(fmt, quality, rgb, o->width, o->height, &b, err);
	free(rgb);
	if (rc < 0) {
		rk_buf_release(&b);
		memset(o, 0, sizeof(*o));
		return rc;
	}
	o->png = (unsigned char *)rk_buf_detach(&b, &o->png_len);
	return 0;
}

/* --- act ------------------------------------------------------------------ */

/* Sends one pointer event at screen (x, y) with mask. */
static int vnc_pointer(struct rk_screen *s, int x, int y, int mask, struct rk_error *err)
{
	int rc = lock_bounded(s, err);
	if (rc < 0)
		return rc;
	if (s->dead) {
		pthread_mutex_unlock(&s->lock);
		return dead_error(s, err);
	}
	struct sigpipe_guard g;
	sigpipe_block(&g);
	rfbBool ok = SendPointerEvent(s->client, x, y, mask);
	sigpipe_restore(&g);
	if (!ok) {
		mark_dead(s, "sending a pointer event failed");
		pthread_mutex_unlock(&s->lock);
		return dead_error(s, err);
	}
	s->has_cursor = 1;
	s->cursor_x = x;
	s->cursor_y = y;
	s->buttons = mask & 0x7; /* wheel bits are momentary */
	s->last_input_ms = rk_monotonic_ms();
	pthread_mutex_unlock(&s->lock);
	return 0;
}

static int vnc_key(struct rk_screen *s, uint32_t keysym, int down, struct rk_error *err)
{
	int rc = lock_bounded(s, err);
	if (rc < 0)
		return rc;
	if (s->dead) {
		pthread_mutex_unlock(&s->lock);
		return dead_error(s, err);
	}
	struct sigpipe_guard g;
	sigpipe_block(&g);
	rfbBool ok = SendKeyEvent(s->client, keysym, down ? TRUE : FALSE);
	sigpipe_restore(&g);
	if (!ok) {
		mark_dead(s, "sending a key event failed");
		pthread_mutex_unlock(&s->lock);
		return dead_error(s, err);
	}
	s->last_input_ms = rk_monotonic_ms();
	pthread_mutex_unlock(&s->lock);
	return 0;
}

static void current_pointer(struct rk_screen *s, int *x, int *y, int *mask)
{
	pthread_mutex_lock(&s->lock);
	*x = s->cursor_x;
	*y = s->cursor_y;
	*mask = s->buttons;
	pthread_mutex_unlock(&s->lock);
}

/* Sleeps ms, waking early (with an error) when the display goes away. */
static int wait_ms(struct rk_screen *s, int ms, struct rk_error *err)
{
	if (s->kind != SCREEN_VNC) {
		rk_sleep_ms(ms);
		return 0;
	}
	int64_t until = rk_monotonic_ms() + ms;
	pthread_mutex_lock(&s->lock);
	while (!s->dead && rk_monotonic_ms() < until)
		cond_wait_until(s, until);
	int dead = s->dead;
	pthread_mutex_unlock(&s->lock);
	return dead ? dead_error(s, err) : 0;
}

static int vnc_keys(struct rk_screen *s, const struct rk_key_combo *k, int down, int up, struct rk_error *err)
{
	int rc = 0;
	size_t pressed = 0;
	if (down) {
		for (; pressed < k->n && rc == 0; pressed++)
			rc = vnc_key(s, k->keysyms[pressed], 1, err);
		if (rc < 0)
			pressed--;
	} else {
		pressed = k->n;
	}
	if (up || rc < 0) {
		/* release in reverse, also after a failure, so no key stays held */
		struct rk_error e2;
		for (size_t i = pressed; i-- > 0;) {
			int r = vnc_key(s, k->keysyms[i], 0, rc < 0 ? &e2 : err);
			if (r < 0 && rc == 0)
				rc = r;
		}
	}
	return rc;
}

static int vnc_type(struct rk_screen *s, const char *text, struct rk_error *err)
{
	size_t len = strlen(text), i = 0;
	while (i < len) {
		uint32_t cp;
		int n = rk_utf8_next(text + i, len - i, &cp);
		if (n < 0)
			return rk_error_set(err, RK_EINVALID, "text is not valid UTF-8 (byte %zu)", i);
		uint32_t ks = rk_keysym_from_codepoint(cp);
		if (!ks)
			return rk_error_set(err, RK_EINVALID, "U+%04X cannot be typed", (unsigned)cp);
		/* a keysym x11vnc adds goes on a key whose first level is the
		 * lowercase letter: hold shift for an uppercase one outside ASCII */
		int shift = cp >= 0x80 && rk_codepoint_is_upper(cp);
		int rc = shift ? vnc_key(s, XK_SHIFT_L, 1, err) : 0;
		if (rc == 0)
			rc = vnc_key(s, ks, 1, err);
		if (rc == 0 && ks > 0x7e && !s->keymap_kept)
			rk_sleep_ms(TYPE_ADDED_KEY_MS);
		if (rc == 0)
			rc = vnc_key(s, ks, 0, err);
		if (shift) {
			struct rk_error e2;
			int r2 = vnc_key(s, XK_SHIFT_L, 0, rc < 0 ? &e2 : err);
			if (rc == 0)
				rc = r2;
		}
		if (rc < 0)
			return rc;
		i += (size_t)n;
	}
	return 0;
}

static int vnc_run(struct rk_screen *s, const struct rk_action *a, int iw, int ih, int sw, int sh, struct rk_error *err)
{
	int x, y, mask, rc = 0;
	current_pointer(s, &x, &y, &mask);
	if (a->has_point) {
		x = rk_coord_to_screen(a->at.x, iw, sw);
		y = rk_coord_to_screen(a->at.y, ih, sh);
		if (a->kind != RK_ACT_MOVE && (rc = vnc_pointer(s, x, y, mask, err)) < 0)
			return rc;
	}
	int bit = BTN_MASK(a->button);
	switch (a->kind) {
	case RK_ACT_MOVE:
		return vnc_pointer(s, x, y, mask, err);
	case RK_ACT_CLICK:
	case RK_ACT_DOUBLE_CLICK:
	case RK_ACT_RIGHT_CLICK:
		for (int i = 0; i < a->count && rc == 0; i++) {
			if (i > 0)
				rc = wait_ms(s, CLICK_GAP_MS, err);
			if (rc == 0)
				rc = vnc_pointer(s, x, y, mask | bit, err);
			if (rc == 0)
				rc = vnc_pointer(s, x, y, mask & ~bit, err);
		}
		return rc;
	case RK_ACT_DOWN:
		return vnc_pointer(s, x, y, mask | bit, err);
	case RK_ACT_UP:
		return vnc_pointer(s, x, y, mask & ~bit, err);
	case RK_ACT_DRAG: {
		int px = rk_coord_to_screen(a->path[0].x, iw, sw), py = rk_coord_to_screen(a->path[0].y, ih, sh);
		if ((rc = vnc_pointer(s, px, py, mask & ~bit, err)) < 0)
			return rc;
		if ((rc = vnc_pointer(s, px, py, mask | bit, err)) < 0)
			return rc;
		for (size_t i = 1; i < a->path_len && rc == 0; i++) {
			int nx = rk_coord_to_screen(a->path[i].x, iw, sw),
			    ny = rk_coord_to_screen(a->path[i].y, ih, sh);
			double dist = hypot(nx - px, ny - py);
			int steps = (int)ceil(dist / DRAG_STEP_PX);
			if (steps < 1)
				steps = 1;
			if (steps > DRAG_STEPS_MAX)
				steps = DRAG_STEPS_MAX;
			for (int k = 1; k <= steps && rc == 0; k++) {
				rk_sleep_ms(DRAG_STEP_SLEEP_MS);
				int qx = px + (int)lround((double)(nx - px) * k / steps);
				int qy = py + (int)lround((double)(ny - py) * k / steps);
				rc = vnc_pointer(s, qx, qy, mask | bit, err);
			}
			px = nx, py = ny;
		}
		if (rc == 0)
			rk_sleep_ms(DRAG_STEP_SLEEP_MS);
		/* release even after a failure, so the button does not stay held */
		struct rk_error e2;
		int r2 = vnc_pointer(s, px, py, mask & ~bit, rc < 0 ? &e2 : err);
		return rc < 0 ? rc : r2;
	}
	case RK_ACT_SCROLL: {
		/* Sideways is shift + the wheel, as browsers and toolkits read it:
		 * x11vnc does not pass on wheel buttons 6 and 7. */
		for (int i = 0; i < (a->dy < 0 ? -a->dy : a->dy) && rc == 0; i++) {
			int wheel = a->dy < 0 ? WHEEL_UP : WHEEL_DOWN;
			rc = vnc_pointer(s, x, y, mask | wheel, err);
			if (rc == 0)
				rc = vnc_pointer(s, x, y, mask, err);
		}
		if (a->dx != 0 && rc == 0) {
			rc = vnc_key(s, XK_SHIFT_L, 1, err);
			for (int i = 0; i < (a->dx < 0 ? -a->dx : a->dx) && rc == 0; i++) {
				int wheel = a->dx < 0 ? WHEEL_UP : WHEEL_DOWN;
				rc = vnc_pointer(s, x, y, mask | wheel, err);
				if (rc == 0)
					rc = vnc_pointer(s, x, y, mask, err);
			}
			struct rk_error e2;
			int r2 = vnc_key(s, XK_SHIFT_L, 0, rc < 0 ? &e2 : err);
			if (rc == 0)
				rc = r2;
		}
		return rc;
	}
	case RK_ACT_TYPE:
		return vnc_type(s, a->text, err);
	case RK_ACT_KEY:
		return vnc_keys(s, &a->keys, 1, 1, err);
	case RK_ACT_KEY_DOWN:
		return vnc_keys(s, &a->keys, 1, 0, err);
	case RK_ACT_KEY_UP:
		return vnc_keys(s, &a->keys, 0, 1, err);
	case RK_ACT_WAIT:
		return wait_ms(s, a->ms, err);
	default:
		return rk_error_set(err, RK_EINVALID, "unknown action kind");
	}
}

static int provider_run(struct rk_screen *s, const struct rk_action *a, int iw, int ih, int sw, int sh,
			struct rk_error *err)
{
	if (a->kind == RK_ACT_WAIT)
		return wait_ms(s, a->ms, err);
	cJSON *j = rk_action_to_json(a, iw, ih, sw, sh);
	char *text = cJSON_PrintUnformatted(j);
	cJSON_Delete(j);
	if (!text)
		abort();
	int rc = s->ops->act(&s->m, s->display, text, err);
	free(text);
	if (rc == 0 && a->has_point) {
		pthread_mutex_lock(&s->lock);
		s->has_cursor = 1;
		s->cursor_x = rk_coord_to_screen(a->at.x, iw, sw);
		s->cursor_y = rk_coord_to_screen(a->at.y, ih, sh);
		pthread_mutex_unlock(&s->lock);
	}
	return rc;
}

static int run_one(struct rk_screen *s, const struct rk_action *a, int iw, int ih, int sw, int sh, struct rk_error *err)
{
	return s->kind == SCREEN_VNC ? vnc_run(s, a, iw, ih, sw, sh, err) : provider_run(s, a, iw, ih, sw, sh, err);
}

/* The screen size now; a provider screen captures once to learn it. */
static int screen_dims(struct rk_screen *s, int *sw, int *sh, struct rk_error *err)
{
	rk_screen_size(s, sw, sh);
	if (s->kind == SCREEN_VNC) {
		if (s->dead || *sw <= 0)
			return dead_error(s, err);
		return 0;
	}
	if (*sw > 0 && *sh > 0)
		return 0;
	struct rk_frame f;
	memset(&f, 0, sizeof(f));
	int rc = s->ops->capture(&s->m, s->display, &f, err);
	if (rc < 0)
		return rc;
	*sw = f.width;
	*sh = f.height;
	pthread_mutex_lock(&s->lock);
	s->prov_w = f.width;
	s->prov_h = f.height;
	pthread_mutex_unlock(&s->lock);
	free(f.rgb);
	free(f.window_title);
	if (*sw <= 0 || *sh <= 0)
		return rk_error_set(err, RK_EFAILED, "provider %s returned an empty frame", s->ops->name);
	return 0;
}

/* Waits until nothing was drawn (and nothing sent) for settle_ms, or
 * settle_ms + SETTLE_EXTRA_MS went by. (Not "until the first update after
 * the input": an action with no visible effect, like ctrl+c, would then
 * always wait for the bound.) */
static int settle(struct rk_screen *s, int settle_ms, int *settled, struct rk_error *err)
{
	*settled = 1;
	if (settle_ms <= 0)
		return 0;
	if (s->kind != SCREEN_VNC) {
		/* no update stream to watch: a plain wait */
		rk_sleep_ms(settle_ms);
		return 0;
	}
	int64_t deadline = rk_monotonic_ms() + settle_ms + SETTLE_EXTRA_MS;
	pthread_mutex_lock(&s->lock);
	for (;;) {
		if (s->dead) {
			pthread_mutex_unlock(&s->lock);
			return dead_error(s, err);
		}
		int64_t now = rk_monotonic_ms();
		int64_t quiet = s->last_update_ms > s->last_input_ms ? s->last_update_ms : s->last_input_ms;
		if (now - quiet >= settle_ms)
			break;
		if (now >= deadline) {
			*settled = 0;
			break;
		}
		int64_t until = quiet + settle_ms < deadline ? quiet + settle_ms : deadline;
		cond_wait_until(s, until);
	}
	pthread_mutex_unlock(&s->lock);
	return 0;
}

int rk_screen_act(struct rk_screen *s, const struct rk_action_batch *batch, const struct rk_act_options *opt,
		  struct rk_act_result *res, struct rk_error *err)
{
	static const struct rk_act_options defaults = RK_ACT_OPTIONS_INIT;
	memset(res, 0, sizeof(*res));
	if (!opt)
		opt = &defaults;
	if (!batch)
		return rk_error_set(err, RK_EINVALID, "actions: no batch given");
	int settle_ms = opt->settle_ms >= 0	? opt->settle_ms
			: batch->settle_ms >= 0 ? batch->settle_ms
						: RK_SETTLE_MS_DEFAULT;
	if (settle_ms > RK_SETTLE_MS_MAX)
		settle_ms = RK_SETTLE_MS_MAX;
	int observe = opt->observe >= 0 ? opt->observe : batch->observe >= 0 ? batch->observe : 1;

	pthread_mutex_lock(&s->api);
	int sw, sh, iw, ih;
	int rc = screen_dims(s, &sw, &sh, err);
	if (rc < 0)
		goto out;
	rk_picture_fit(sw, sh, opt->observe_opt.max_width, opt->observe_opt.max_height, &iw, &ih);
	/* all of it is checked before anything runs */
	if ((rc = rk_action_batch_check(batch, iw, ih, err)) < 0)
		goto out;
	if (s->kind == SCREEN_VNC) {
		int64_t wait = s->input_ready_ms - rk_monotonic_ms();
		if (wait > 0)
			rk_sleep_ms(wait);
	}
	for (size_t i = 0; i < batch->n; i++) {
		const struct rk_action *a = &batch->actions[i];
		if ((rc = run_one(s, a, iw, ih, sw, sh, err)) < 0) {
			rk_error_prefix(err, "action %zu: %s", i, rk_action_kind_name(a->kind));
			goto out;
		}
		res->completed = i + 1;
	}
	if ((rc = settle(s, settle_ms, &res->settled, err)) < 0)
		goto out;
	if (observe) {
		if ((rc = observe_locked(s, &opt->observe_opt, &res->obs, err)) < 0)
			goto out;
		res->observed = 1;
	}
out:
	pthread_mutex_unlock(&s->api);
	return rc;
}

void rk_act_result_release(struct rk_act_result *r)
{
	if (!r)
		return;
	rk_observation_release(&r->obs);
	memset(r, 0, sizeof(*r));
}

int rk_screen_input(struct rk_screen *s, const struct rk_action *a, struct rk_error *err)
{
	int sw, sh;
	if (!a)
		return rk_error_set(err, RK_EINVALID, "no input given");
	int rc = screen_dims(s, &sw, &sh, err);
	if (rc < 0)
		return rc;
	if ((rc = rk_action_check(a, 0, sw, sh, err)) < 0)
		return rc;
	return run_one(s, a, sw, sh, sw, sh, err);
}

int rk_screen_size_option(const cJSON *options, int *w, int *h, struct rk_error *err)
{
	*w = RK_SCREEN_WIDTH_DEFAULT, *h = RK_SCREEN_HEIGHT_DEFAULT;
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(options, "screen");
	if (!v || cJSON_IsNull(v))
		return 0;
	int x, y;
	char tail;
	if (!cJSON_IsString(v) || sscanf(v->valuestring, "%dx%d%c", &x, &y, &tail) != 2 || x < 640 || y < 480 ||
	    x > 3840 || y > 2160)
		return rk_error_set(err, RK_EINVALID,
				    "options.screen must be WIDTHxHEIGHT from 640x480 to 3840x2160, e.g. \"1366x768\"");
	*w = x, *h = y;
	return 0;
}
