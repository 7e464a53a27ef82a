/* make bench: what a computer-use run sends the model, and rakazo's own
 * time per step, over one scripted task run twice on the same docker
 * computer (made with `rakazo computer create`, as a user would).
 *
 * The task: a busy page (a header, a 60-row table with coloured bars,
 * paragraphs, two fields and three buttons; the text caret is hidden, so a
 * blink cannot make two screenshots differ) loaded in the computer's
 * Chromium with `rakazo browser navigate` before each run, the pointer
 * parked, then `rakazo run` against tests/emulators/model_server replaying
 * 26 model turns: a screenshot, 20 turns of one action each that changes
 * the screen (6 clicks, 6 typings, 3 keys, 5 scrolls), 4 more
 * screenshot-only turns (the screen has not changed since the last act, so
 * dedupe can drop them) and the final answer. Twice:
 *   ours  --api messages --model claude-sonnet-4-5: the vendor's native
 *         computer tool; screenshots at the model's size (1280x800 stays
 *         1280x800) as JPEG quality 75, identical frames deduped, each
 *         uploaded once through the Files API and referred to by id, the
 *         last 2 screenshots kept in the conversation and older ones
 *         dropped in blocks (below)
 *   base  --api chat with the config {"prune_block": 0}: the same actions
 *         through computer_observe and computer_act; full-size PNG, the last
 *         2 screenshots kept and one dropped every turn (the reference's
 *         policy; rakazo dedupes identical frames here too)
 *
 *   model_image_bytes  the decoded bytes of every image every request of
 *                      the run carried inline (model_server --dump: Messages
 *                      image blocks' source.data, chat image_url data URLs),
 *                      summed: a screenshot kept for two turns counts twice,
 *                      as the model is sent it twice; plus the bytes of every
 *                      image uploaded through the Files API (the server's
 *                      report: files.uploaded_bytes), each counted once, when
 *                      it is uploaded (a request that refers to it by id
 *                      carries no image bytes, and the server refuses an id
 *                      it does not hold).
 *   step_overhead      rakazo's own time per model turn: the time from the
 *                      run's run.started event to its last model.turn (event
 *                      times, ms), minus the model server's time and each
 *                      act's settle, divided by the model turns (26).
 *                      The model server's time: each request is relayed
 *                      through a loopback proxy in this program, and the
 *                      time from the request's last byte to the answer's
 *                      last byte is the server's (it checks the request and
 *                      decodes its images).
 *                      An act's settle: from its tool.call event to the
 *                      capture of its screenshot (its observation's
 *                      captured_at). The engine reports whether an act
 *                      settled, not how long that took nor when its input
 *                      went out, so this leaves out the input's way into the
 *                      computer (x11vnc, rakazo-input, X), Chromium's drawing
 *                      and the 300 ms quiet window (RK_SETTLE_MS_DEFAULT),
 *                      and with them rakazo's own work between the tool.call
 *                      and the input: the approval and rights checks, the
 *                      display holder's IPC, sending the input (a few ms: a
 *                      screenshot-only turn does the same, and captures and
 *                      encodes, and is counted whole).
 *                      Counted: building, sending and parsing the requests
 *                      and answers, the database writes of events, messages,
 *                      progress and heartbeats, the lease checks, the
 *                      screenshot-only turns whole, and after each act's
 *                      capture the scaling, encoding and hashing of its
 *                      screenshot, the IPC back, the frame kept for the run
 *                      log and the conversation. Not counted: the server's
 *                      time and the settles as above, and what happens once
 *                      per run: the process start up to run.started and the
 *                      workspace checkpoint after the last model.turn (both
 *                      shown on stderr).
 *                      Also on stderr, an upper bound: the same with each
 *                      act's time from its tool.call to the screen's first
 *                      change counted too (changes seen by this program's
 *                      own VNC connection to the display; that time holds
 *                      rakazo's work before the input, and the input's way
 *                      and Chromium's first paint).
 *                      There is no reference figure: base is the chat run.
 *
 * Prompt caching (issue 23), from a third run, "plain": --api messages with
 * the config {"prompt_cache": false, "prune_block": 0}, no cache
 * breakpoints and the last 2 screenshots kept, one dropped every turn
 * (the reference's policy). Ours has caching on and drops screenshots in
 * blocks (RK_MODEL_PRUNE_BLOCK_DEFAULT at a time), so its prefix stays
 * byte-identical between drops. The token counts are the model server's
 * (tests/emulators/model: its estimate, and the Messages API's cache rules):
 *   model_cached_share  cached input tokens over all input tokens, summed
 *                       over the run's model.turn events (target >= 0.8)
 *   model_input_tokens  input tokens billed, in plain input tokens' worth:
 *                       uncached + 1.25 x written to the cache + 0.1 x read
 *                       from it (Anthropic's prices), ours against plain
 *                       (target <= 0.3)
 * MODEL_BENCH_OURS_CONFIG='{"model":{...}}' runs ours with that config
 * instead, to compare policies (keep_images, prune_block).
 *
 * Prints `bench: model_image_bytes ours=N bytes base=N bytes ratio=R`,
 * `bench: step_overhead ours=V ms base=V ms ratio=R`,
 * `bench: model_cached_share ours=S base=S ratio=R` and
 * `bench: model_input_tokens ours=N tokens base=N tokens ratio=R`, and
 * `# ...` details on stderr. RAKAZO_BENCH=NAME prints one (and runs only
 * the runs it needs).
 * Without docker it prints "skip: ..." and exits 0; a failed run, a failed
 * expectation of the model server or a wrong run exits 1. RAKAZO_BIN names
 * the binary, BUILD the build directory (make bench sets both);
 * RAKAZO_BENCH_KEEP=1 keeps the scenarios, request dumps and events. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cJSON.h>

#include "engine/agent/hooks.h"
#include "engine/agent/model.h"
#include "engine/screen/screen.h"
#include "engine/util/buf.h"
#include "engine/util/fs.h"
#include "engine/util/id.h"
#include "engine/util/ipc.h"
#include "engine/util/time.h"
#include "providers/provider.h"

#define NAME "model-bench"
#define RUN_TIMEOUT_MS 300000
#define CLI_TIMEOUT_MS 120000
#define PAIRS_MAX 16
#define QUIET_MS RK_SETTLE_MS_DEFAULT

static char dir[] = "/tmp/rk-model-bench-XXXXXX";
static const char *bin, *model_server;
static char computer_id[128], workspace[512];

static int want(const char *name)
{
	const char *w = getenv("RAKAZO_BENCH");
	return !w || !*w || !strcmp(w, name);
}

static int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int fail(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "model_bench: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	return -1;
}

/* The wall clock in ms with a fraction: the run's events carry wall-clock
 * times (ms), so everything compared with them is on that clock. */
static double wall_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_REALTIME, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* --- processes ------------------------------------------------------------------ */

/* Starts argv with stdout and stderr in those files (NULL: /dev/null). */
static pid_t spawn(char *const argv[], const char *out, const char *errf)
{
	pid_t pid = fork();
	if (pid == 0) {
		int o = open(out ? out : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0600);
		int e = open(errf ? errf : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0600);
		int in = open("/dev/null", O_RDONLY);
		if (o < 0 || e < 0 || in < 0)
			_exit(127);
		dup2(in, 0);
		dup2(o, 1);
		dup2(e, 2);
		execv(argv[0], argv);
		_exit(127);
	}
	return pid;
}

/* Waits for pid until timeout_ms; its exit status, or -1 (killed when it
 * ran over, or killed by a signal). */
static int wait_for(pid_t pid, int64_t timeout_ms)
{
	int st;
	for (int64_t until = rk_monotonic_ms() + timeout_ms;;) {
		pid_t r = waitpid(pid, &st, WNOHANG);
		if (r == pid)
			return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
		if (r < 0 && errno != EINTR)
			return -1;
		if (rk_monotonic_ms() >= until)
			break;
		rk_sleep_ms(5);
	}
	kill(pid, SIGTERM);
	for (int i = 0; i < 100 && waitpid(pid, &st, WNOHANG) != pid; i++)
		rk_sleep_ms(20);
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	return -1;
}

/* Runs `rakazo ARGS...` (NULL-terminated) to its end, its stdout in out
 * when given; 0 when it exited 0, else a message naming it and its stderr. */
static int cli(struct rk_buf *out, ...)
{
	char *argv[24];
	int n = 0;
	argv[n++] = (char *)bin;
	va_list ap;
	va_start(ap, out);
	for (char *a; n < 23 && (a = va_arg(ap, char *));)
		argv[n++] = a;
	va_end(ap);
	argv[n] = NULL;
	char *o = rk_path_join(dir, "cli.out"), *e = rk_path_join(dir, "cli.err");
	int rc = wait_for(spawn(argv, o, e), CLI_TIMEOUT_MS);
	struct rk_buf b;
	rk_buf_init(&b);
	if (rc != 0) {
		struct rk_error err;
		rk_fs_read_all(e, 1 << 16, &b, &err);
		rc = fail("`rakazo %s %s` failed (status %d): %s", argv[1], n > 2 ? argv[2] : "", rc,
			  b.len ? b.data : "no message");
	} else if (out) {
		struct rk_error err;
		rk_buf_reset(out);
		rk_fs_read_all(o, 1 << 20, out, &err);
	}
	rk_buf_release(&b);
	free(o);
	free(e);
	return rc;
}

/* --- the page and the task ------------------------------------------------------ */

static char *page(void)
{
	static const char *const words[] = {"lorem",	  "ipsum",	"dolor",       "sit",	   "amet",
					    "revenue",	  "region",	"growth",      "forecast", "inventory",
					    "shipment",	  "quarterly",	"labore",      "magna",	   "tempor",
					    "incididunt", "adipiscing", "consectetur", "elit",	   "aliqua"};
	static const char *const colours[] = {"#e74c3c", "#3498db", "#2ecc71", "#f1c40f",
					      "#9b59b6", "#1abc9c", "#e67e22", "#34495e"};
	unsigned seed = 7;
#define NEXT() (seed = seed * 1103515245u + 12345u, (seed >> 16) & 0x7fff)
#define WORD() words[NEXT() % (sizeof(words) / sizeof(words[0]))]
	struct rk_buf b;
	rk_buf_init(&b);
	rk_buf_adds(&b, "<!doctype html><html><head><meta charset=utf-8><title>Quarterly report</title><style>"
			"body{font-family:sans-serif;margin:0;background:#fafafa;caret-color:transparent}"
			"header{background:linear-gradient(90deg,#1e3c72,#2a5298);color:#fff;padding:14px 24px;"
			"font-size:22px} nav a{color:#ffd;margin-right:14px;font-size:14px}"
			"main{display:flex;gap:18px;padding:16px}"
			"aside{width:260px;background:#fff;border:1px solid #ccc;padding:10px;font-size:13px}"
			"section{flex:1} table{border-collapse:collapse;width:100%;font-size:13px;background:#fff}"
			"td,th{border:1px solid #bbb;padding:4px 6px} th{background:#dde}"
			".bar{height:12px;display:inline-block} input,textarea{font-size:15px;padding:4px;width:95%}"
			"button{margin:4px;padding:6px 12px;font-size:14px}</style></head><body>\n"
			"<header>Quarterly report &mdash; Northwind Traders <nav><a href=#>Overview</a>"
			"<a href=#>Sales</a><a href=#>Inventory</a><a href=#>Staff</a></nav></header>\n"
			"<main><aside><h3>Search</h3><input id=q placeholder='Search the report'><h3>Notes</h3>"
			"<textarea id=notes rows=6></textarea><div>"
			"<button onclick=\"this.style.background='#e74c3c'\">Flag</button>"
			"<button onclick=\"this.style.background='#2ecc71'\">Approve</button>"
			"<button onclick=\"document.body.style.background='#eef'\">Tint</button></div>\n");
	for (int p = 0; p < 6; p++) {
		rk_buf_adds(&b, "<p>");
		for (int w = 0; w < 30; w++)
			rk_buf_printf(&b, "%s%s", w ? " " : "", WORD());
		rk_buf_adds(&b, ".</p>\n");
	}
	rk_buf_adds(&b, "</aside><section><h2>Sales by region</h2><table><tr><th>#</th><th>Region</th><th>Q1</th>"
			"<th>Q2</th><th>Q3</th><th>Q4</th><th>Trend</th></tr>\n");
	for (int r = 0; r < 60; r++) {
		int v[4];
		for (int k = 0; k < 4; k++)
			v[k] = 100 + (int)(NEXT() % 900);
		const char *w1 = WORD(), *w2 = WORD();
		rk_buf_printf(&b,
			      "<tr><td>%d</td><td>%s %s</td><td>%d</td><td>%d</td><td>%d</td><td>%d</td>"
			      "<td><span class=bar style='width:%dpx;background:%s'></span></td></tr>\n",
			      r + 1, w1, w2, v[0], v[1], v[2], v[3], v[3] / 8, colours[r % 8]);
	}
	rk_buf_adds(&b, "</table>\n");
	for (int s = 0; s < 12; s++) {
		rk_buf_adds(&b, "<h3>");
		for (int w = 0; w < 4; w++)
			rk_buf_printf(&b, "%s%s", w ? " " : "", WORD());
		rk_buf_adds(&b, "</h3><p>");
		for (int w = 0; w < 80; w++)
			rk_buf_printf(&b, "%s%s", w ? " " : "", WORD());
		rk_buf_adds(&b, ".</p>\n");
	}
	rk_buf_adds(&b, "</section></main></body></html>\n");
#undef WORD
#undef NEXT
	return rk_buf_detach(&b, NULL);
}

enum kind { SHOT, CLICK, TYPE, KEY, SCROLL };
struct step {
	enum kind kind;
	int x, y;
	const char *text;
	int amount; /* scroll: > 0 down */
};

/* Coordinates on the 1280x800 page above (the clicks come before the
 * scrolls, so they stay where the fields and buttons are). */
static const struct step task[] = {
	{.kind = SHOT},
	{.kind = CLICK, .x = 160, .y = 254},
	{.kind = TYPE, .text = "revenue growth"},
	{.kind = KEY, .text = "ctrl+a"},
	{.kind = TYPE, .text = "inventory"},
	{.kind = SHOT},
	{.kind = CLICK, .x = 63, .y = 460},  /* Flag */
	{.kind = CLICK, .x = 143, .y = 460}, /* Approve */
	{.kind = CLICK, .x = 160, .y = 377}, /* the notes */
	{.kind = TYPE, .text = "Row 4 looks high in Q1."},
	{.kind = TYPE, .text = " Check Q3 too."},
	{.kind = SHOT},
	{.kind = KEY, .text = "ctrl+a"},
	{.kind = KEY, .text = "BackSpace"},
	{.kind = TYPE, .text = "Numbers verified."},
	{.kind = CLICK, .x = 221, .y = 460}, /* Tint */
	{.kind = CLICK, .x = 160, .y = 254}, /* the search field again */
	{.kind = TYPE, .text = " shipment"},
	{.kind = SHOT},
	{.kind = SCROLL, .x = 780, .y = 500, .amount = 3},
	{.kind = SCROLL, .x = 780, .y = 500, .amount = 3},
	{.kind = SCROLL, .x = 780, .y = 500, .amount = 5},
	{.kind = SCROLL, .x = 780, .y = 500, .amount = -3},
	{.kind = SCROLL, .x = 780, .y = 500, .amount = 10},
	{.kind = SHOT},
};
#define TASK_N (sizeof(task) / sizeof(task[0]))

static cJSON *xy(int x, int y)
{
	cJSON *a = cJSON_CreateArray();
	cJSON_AddItemToArray(a, cJSON_CreateNumber(x));
	cJSON_AddItemToArray(a, cJSON_CreateNumber(y));
	return a;
}

/* The tool call of step s: the native tool's on Messages, else the
 * function tools'. */
static cJSON *call_of(const struct step *s, int native)
{
	cJSON *c = cJSON_CreateObject(), *a = cJSON_CreateObject();
	if (native) {
		cJSON_AddStringToObject(c, "name", "computer");
		static const char *const acts[] = {"screenshot", "left_click", "type", "key", "scroll"};
		cJSON_AddStringToObject(a, "action", acts[s->kind]);
		if (s->kind == CLICK || s->kind == SCROLL)
			cJSON_AddItemToObject(a, "coordinate", xy(s->x, s->y));
		if (s->kind == TYPE || s->kind == KEY)
			cJSON_AddStringToObject(a, "text", s->text);
		if (s->kind == SCROLL) {
			cJSON_AddStringToObject(a, "scroll_direction", s->amount > 0 ? "down" : "up");
			cJSON_AddNumberToObject(a, "scroll_amount", abs(s->amount));
		}
	} else if (s->kind == SHOT) {
		cJSON_AddStringToObject(c, "name", "computer_observe");
	} else {
		cJSON_AddStringToObject(c, "name", "computer_act");
		cJSON *act = cJSON_CreateObject();
		static const char *const acts[] = {"", "click", "type", "key", "scroll"};
		cJSON_AddStringToObject(act, "action", acts[s->kind]);
		if (s->kind == CLICK || s->kind == SCROLL) {
			cJSON_AddNumberToObject(act, "x", s->x);
			cJSON_AddNumberToObject(act, "y", s->y);
		}
		if (s->kind == TYPE)
			cJSON_AddStringToObject(act, "text", s->text);
		if (s->kind == KEY)
			cJSON_AddStringToObject(act, "keys", s->text);
		if (s->kind == SCROLL)
			cJSON_AddNumberToObject(act, "dy", s->amount);
		cJSON_AddItemToArray(cJSON_AddArrayToObject(a, "actions"), act);
	}
	cJSON_AddItemToObject(c, "arguments", a);
	return c;
}

/* One way of running the task (see the top). */
struct variant {
	const char *name;   /* in file names and details */
	int native;	    /* messages and its computer tool, else chat */
	const char *config; /* the run's config file (RAKAZO_CONFIG), or NULL */
	int image_max;	    /* images the last request may carry */
};

/* The scenario for model_server, with a few expectations: the tools the
 * first request offers, an image after the first screenshot, and never
 * more than image_max images at the end. */
static char *scenario(int native, int image_max)
{
	cJSON *doc = cJSON_CreateObject();
	cJSON_AddStringToObject(doc, "comment", "tests/bench/model_bench.c: the scripted task");
	cJSON *steps = cJSON_AddArrayToObject(doc, "steps");
	for (size_t i = 0; i <= TASK_N; i++) {
		cJSON *st = cJSON_CreateObject(), *ex = NULL;
		if (i == 0) {
			ex = cJSON_AddObjectToObject(st, "expect");
			cJSON_AddStringToObject(ex, "protocol", native ? "messages" : "chat");
			const char *tools[] = {"computer_observe", "computer_act"};
			if (native)
				tools[0] = "computer";
			cJSON_AddItemToObject(ex, "tools_include", cJSON_CreateStringArray(tools, native ? 1 : 2));
		} else if (i == 1) {
			ex = cJSON_AddObjectToObject(st, "expect");
			cJSON_AddBoolToObject(ex, "tool_result_has_image", 1);
		} else if (i == TASK_N) {
			ex = cJSON_AddObjectToObject(st, "expect");
			cJSON_AddNumberToObject(ex, "image_count_max", image_max);
		}
		cJSON *reply = cJSON_AddObjectToObject(st, "reply");
		if (i < TASK_N) {
			char text[64];
			snprintf(text, sizeof(text), "Step %zu of the report review.", i + 1);
			cJSON_AddStringToObject(reply, "content", text);
			cJSON_AddItemToArray(cJSON_AddArrayToObject(reply, "tool_calls"), call_of(&task[i], native));
		} else {
			cJSON_AddStringToObject(reply, "content", "The search, the notes and the table are reviewed.");
		}
		cJSON_AddItemToArray(steps, st);
	}
	char *s = cJSON_PrintUnformatted(doc);
	cJSON_Delete(doc);
	return s;
}

/* --- the screen's changes, seen from a VNC connection of our own ----------------- */

static struct rk_screen *watch;
static pthread_t watch_thread;
static volatile int watch_stop;
static pthread_mutex_t damage_lock = PTHREAD_MUTEX_INITIALIZER;
static double *damage; /* wall-clock ms of each change seen, ascending */
static size_t ndamage, damage_cap;

static void *watch_main(void *arg)
{
	(void)arg;
	uint64_t last = rk_screen_damage(watch);
	while (!watch_stop) {
		uint64_t d = rk_screen_damage(watch);
		if (d != last) {
			last = d;
			pthread_mutex_lock(&damage_lock);
			if (ndamage == damage_cap) {
				damage_cap = damage_cap ? 2 * damage_cap : 4096;
				damage = rk_xrealloc(damage, damage_cap * sizeof(*damage));
			}
			damage[ndamage++] = wall_ms();
			pthread_mutex_unlock(&damage_lock);
		}
		usleep(1000);
	}
	return NULL;
}

/* The first change seen in (after, until], or -1. */
static double first_change(double after, double until)
{
	double t = -1;
	pthread_mutex_lock(&damage_lock);
	for (size_t i = 0; i < ndamage && t < 0; i++)
		if (damage[i] > after && damage[i] <= until)
			t = damage[i];
	pthread_mutex_unlock(&damage_lock);
	return t;
}

static int watch_start(void)
{
	char *sock = rk_xasprintf("%s/run/%s/vnc/0.sock", dir, computer_id);
	struct rk_error err;
	int r = rk_screen_open_vnc(sock, &watch, &err);
	free(sock);
	if (r < 0)
		return fail("a VNC connection to the computer's display 0: %s", err.message);
	if (pthread_create(&watch_thread, NULL, watch_main, NULL) != 0) {
		rk_screen_free(watch);
		watch = NULL;
		return fail("pthread_create failed");
	}
	return 0;
}

static void watch_end(void)
{
	if (!watch)
		return;
	watch_stop = 1;
	pthread_join(watch_thread, NULL);
	rk_screen_free(watch);
	watch = NULL;
}

/* --- the model server's time: a loopback proxy in front of it ---------------------- */

struct pair {
	int c, s;		  /* the client's and the server's sockets */
	int asked, answered;	  /* request bytes since the last answer; answer bytes since */
	double asked_at, last_at; /* wall ms: the request's last byte sent on; the answer's last byte */
};

static struct proxy {
	int lfd, port, to_port, wake[2];
	pthread_t th;
	struct pair p[PAIRS_MAX];
	size_t n;
	double server_ms; /* summed over the exchanges */
	int exchanges;
	volatile int stop;
} px;

static int write_all(int fd, const char *b, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, b, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		b += w;
		n -= (size_t)w;
	}
	return 0;
}

/* An answer is over when the client sends again or a socket closes. */
static void end_exchange(struct pair *p)
{
	if (p->answered) {
		px.server_ms += p->last_at - p->asked_at;
		px.exchanges++;
	}
	p->asked = p->answered = 0;
}

static void pair_close(size_t i)
{
	end_exchange(&px.p[i]);
	close(px.p[i].c);
	close(px.p[i].s);
	px.p[i] = px.p[--px.n];
}

static int connect_server(void)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)px.to_port)};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0)
		return fd;
	if (fd >= 0)
		close(fd);
	return -1;
}

/* Relays between rakazo and the model server, one thread for all the
 * connections. An exchange's server time runs from the last request byte
 * written to the server to the last answer byte read from it (a
 * "100 Continue" makes an exchange of its own). */
static void *proxy_main(void *arg)
{
	(void)arg;
	static char buf[1 << 18];
	for (;;) {
		struct pollfd f[2 + 2 * PAIRS_MAX];
		f[0] = (struct pollfd){.fd = px.wake[0], .events = POLLIN};
		f[1] = (struct pollfd){.fd = px.lfd, .events = POLLIN};
		for (size_t i = 0; i < px.n; i++) {
			f[2 + 2 * i] = (struct pollfd){.fd = px.p[i].c, .events = POLLIN};
			f[3 + 2 * i] = (struct pollfd){.fd = px.p[i].s, .events = POLLIN};
		}
		size_t n = px.n;
		if (poll(f, 2 + 2 * n, 200) < 0 && errno != EINTR)
			break;
		if (f[0].revents || px.stop)
			break;
		/* from the last to the first: pair_close moves the last pair into i */
		for (size_t i = n; i-- > 0;) {
			struct pair *p = &px.p[i];
			if (f[2 + 2 * i].revents) {
				ssize_t r = read(p->c, buf, sizeof(buf));
				if (r <= 0) {
					pair_close(i);
					continue;
				}
				if (p->answered)
					end_exchange(p);
				if (write_all(p->s, buf, (size_t)r) != 0) {
					pair_close(i);
					continue;
				}
				p->asked = 1;
				p->asked_at = wall_ms();
			}
			if (f[3 + 2 * i].revents) {
				ssize_t r = read(p->s, buf, sizeof(buf));
				double t = wall_ms();
				if (r <= 0) {
					pair_close(i);
					continue;
				}
				if (p->asked) {
					p->answered = 1;
					p->last_at = t;
				}
				if (write_all(p->c, buf, (size_t)r) != 0)
					pair_close(i);
			}
		}
		if (f[1].revents & POLLIN) {
			int c = accept4(px.lfd, NULL, NULL, SOCK_CLOEXEC);
			int s = c >= 0 ? connect_server() : -1;
			if (c >= 0 && (s < 0 || px.n == PAIRS_MAX)) {
				close(c);
				if (s >= 0)
					close(s);
			} else if (c >= 0) {
				px.p[px.n++] = (struct pair){.c = c, .s = s};
			}
		}
	}
	while (px.n > 0)
		pair_close(px.n - 1);
	return NULL;
}

static int proxy_start(int to_port)
{
	memset(&px, 0, sizeof(px));
	px.to_port = to_port;
	px.lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = {.sin_family = AF_INET};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	socklen_t al = sizeof(a);
	if (px.lfd < 0 || bind(px.lfd, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(px.lfd, 16) != 0 ||
	    getsockname(px.lfd, (struct sockaddr *)&a, &al) != 0 || pipe(px.wake) != 0) {
		if (px.lfd >= 0)
			close(px.lfd);
		return fail("the proxy's loopback socket: %s", strerror(errno));
	}
	px.port = ntohs(a.sin_port);
	if (pthread_create(&px.th, NULL, proxy_main, NULL) != 0) {
		close(px.lfd);
		close(px.wake[0]);
		close(px.wake[1]);
		return fail("pthread_create failed");
	}
	return 0;
}

static void proxy_end(void)
{
	px.stop = 1;
	if (write(px.wake[1], "x", 1) != 1) {
		/* px.stop ends it at its next poll timeout */
	}
	pthread_join(px.th, NULL);
	close(px.lfd);
	close(px.wake[0]);
	close(px.wake[1]);
}

/* --- one run of the task ---------------------------------------------------------- */

struct figures {
	long long image_bytes;		      /* inline and uploaded */
	long long uploaded_bytes, inline_bytes; /* its parts */
	int images, requests, uploads, file_images;
	int steps, acts, acts_sent, shots, shots_unchanged;
	double window_ms, server_ms;
	double settle_ms; /* the acts' tool.call to capture */
	double react_ms;  /* the part of it up to the screen's first change */
	double startup_ms, checkpoint_ms, wall_ms;
	/* the model.turn events' usage, summed; cached and written are parts of input */
	long long input_tokens, cached_tokens, cache_write_tokens;
};

/* What a cached input token and a written one cost, in uncached input
 * tokens: Anthropic's prices (reads 0.1x, 5-minute writes 1.25x). */
#define CACHE_READ_PRICE 0.1
#define CACHE_WRITE_PRICE 1.25

/* Input tokens billed, in uncached input tokens' worth. */
static double billed(const struct figures *f)
{
	long long plain = f->input_tokens - f->cached_tokens - f->cache_write_tokens;
	return (double)plain + CACHE_READ_PRICE * (double)f->cached_tokens +
	       CACHE_WRITE_PRICE * (double)f->cache_write_tokens;
}

/* Cached input tokens over all input tokens. */
static double share(const struct figures *f)
{
	return f->input_tokens > 0 ? (double)f->cached_tokens / (double)f->input_tokens : 0;
}

static long long usage_count(const cJSON *ev, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(ev, "usage"), key);
	return cJSON_IsNumber(v) && v->valuedouble > 0 ? (long long)v->valuedouble : 0;
}

/* The decoded bytes of the images in a request (any depth): Messages image
 * blocks with a base64 source, chat image_url data URLs. */
static int count_images(const cJSON *j, struct figures *f)
{
	if (cJSON_IsArray(j) || cJSON_IsObject(j)) {
		const char *data = NULL;
		const cJSON *type = cJSON_GetObjectItemCaseSensitive(j, "type");
		const cJSON *src = cJSON_GetObjectItemCaseSensitive(j, "source");
		const cJSON *iu = cJSON_GetObjectItemCaseSensitive(j, "image_url");
		if (cJSON_IsString(type) && !strcmp(type->valuestring, "image") && cJSON_IsObject(src))
			data = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(src, "data"));
		else if (cJSON_IsObject(iu) || cJSON_IsString(iu)) {
			const char *url = cJSON_IsString(iu)
						  ? iu->valuestring
						  : cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(iu, "url"));
			const char *comma = url && !strncmp(url, "data:", 5) ? strstr(url, ";base64,") : NULL;
			data = comma ? comma + strlen(";base64,") : NULL;
		}
		if (data) {
			struct rk_buf b;
			rk_buf_init(&b);
			int r = rk_base64_decode(data, &b);
			f->image_bytes += (long long)b.len;
			f->inline_bytes += (long long)b.len;
			rk_buf_release(&b);
			if (r != 0)
				return fail("a request carries an image that is not base64");
			f->images++;
			return 0;
		}
		const cJSON *c;
		cJSON_ArrayForEach(c, j)
		{
			if (count_images(c, f) != 0)
				return -1;
		}
	}
	return 0;
}

static int read_dump(const char *path, struct figures *f)
{
	FILE *fp = fopen(path, "r");
	if (!fp)
		return fail("no request dump %s", path);
	char *line = NULL;
	size_t cap = 0;
	int rc = 0;
	while (rc == 0 && getline(&line, &cap, fp) > 0) {
		cJSON *req = cJSON_Parse(line);
		if (!req) {
			rc = fail("a request in %s is not JSON", path);
			break;
		}
		f->requests++;
		rc = count_images(req, f);
		cJSON_Delete(req);
	}
	free(line);
	fclose(fp);
	return rc;
}

static double event_ms(const cJSON *ev)
{
	const char *t = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ev, "time"));
	int64_t ms = t ? rk_iso8601_parse(t) : -1;
	return (double)ms;
}

/* The run's events: the window from run.started to the last model.turn,
 * and each act's settle (see the top). */
static int read_events(const char *path, int native, double spawned_at, struct figures *f)
{
	FILE *fp = fopen(path, "r");
	if (!fp)
		return fail("no events in %s", path);
	char *line = NULL;
	size_t cap = 0;
	int rc = 0, finished = 0, native_tool = 0;
	double started = -1, last_turn = -1, call_at = -1;
	int act = 0;
	while (rc == 0 && getline(&line, &cap, fp) > 0) {
		cJSON *ev = cJSON_Parse(line);
		const char *type = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ev, "type"));
		double at = event_ms(ev);
		if (!ev || !type || at < 0) {
			cJSON_Delete(ev);
			rc = fail("an event of the run is not what rakazo run --json prints: %.200s", line);
			break;
		}
		if (!strcmp(type, "run.started")) {
			started = at;
		} else if (!strcmp(type, "run.computer_tool")) {
			native_tool = 1;
		} else if (!strcmp(type, "model.turn")) {
			f->steps++;
			last_turn = at;
			f->input_tokens += usage_count(ev, "input_tokens");
			f->cached_tokens += usage_count(ev, "cached_input_tokens");
			f->cache_write_tokens += usage_count(ev, "cache_write_input_tokens");
		} else if (!strcmp(type, "tool.call")) {
			const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ev, "name"));
			const cJSON *args = cJSON_GetObjectItemCaseSensitive(ev, "arguments");
			const char *action = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(args, "action"));
			act = native ? name && !strcmp(name, "computer") && action && strcmp(action, "screenshot") != 0
				     : name && !strcmp(name, "computer_act");
			call_at = at;
		} else if (!strcmp(type, "tool.result")) {
			const char *out = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ev, "output"));
			const char *image = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ev, "image"));
			if (cJSON_GetObjectItemCaseSensitive(ev, "error")) {
				rc = fail("a tool call failed: %.300s", out ? out : "?");
			} else if (act) {
				const char *c = out ? strstr(out, "\"captured_at\":\"") : NULL;
				int64_t cap_ms = c ? rk_iso8601_parse(c + strlen("\"captured_at\":\"")) : -1;
				if (cap_ms < 0) {
					rc = fail("an act's result has no observation: %.300s", out ? out : "?");
				} else {
					/* the first change, or the latest one the 300 ms quiet window allows */
					double captured = (double)cap_ms, floor = captured - QUIET_MS;
					double first = first_change(call_at, captured);
					double changed = first >= 0 && first < floor ? first : floor;
					if (changed < call_at)
						changed = call_at;
					f->settle_ms += captured - call_at;
					f->react_ms += changed - call_at;
					f->acts++;
					f->acts_sent += image && !strcmp(image, "sent");
				}
			} else {
				f->shots++;
				f->shots_unchanged += image && !strcmp(image, "unchanged");
			}
		} else if (!strcmp(type, "run.checkpoint")) {
			f->checkpoint_ms = at - last_turn;
		} else if (!strcmp(type, "run.finished")) {
			const char *state = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ev, "state"));
			finished = state && !strcmp(state, "completed");
		}
		cJSON_Delete(ev);
	}
	free(line);
	fclose(fp);
	if (rc == 0 && (!finished || started < 0 || last_turn < 0))
		rc = fail("the run did not complete (see %s)", path);
	if (rc == 0 && native && !native_tool)
		rc = fail("the Messages run did not get the native computer tool (see %s)", path);
	if (rc == 0 && (f->steps != (int)TASK_N + 1 || f->acts + f->shots != (int)TASK_N))
		rc = fail("the run took %d model turns and %d tool calls, not %zu and %zu", f->steps,
			  f->acts + f->shots, TASK_N + 1, TASK_N);
	f->window_ms = last_turn - started;
	f->startup_ms = started - spawned_at;
	return rc;
}

/* The page fresh and the pointer parked, so both runs start alike. */
static int reset_screen(void)
{
	char *url = rk_xasprintf("file://%s/model-bench.html", workspace);
	int rc = cli(NULL, "browser", "navigate", NAME, "about:blank", NULL);
	if (rc == 0)
		rc = cli(NULL, "browser", "navigate", NAME, url, NULL);
	if (rc == 0)
		rc = cli(NULL, "screen", "act", NAME, "--no-observe", "--actions",
			 "[{\"action\":\"move\",\"x\":1000,\"y\":760}]", NULL);
	free(url);
	rk_sleep_ms(500);
	return rc;
}

/* The model server's report: every step served, every expectation held;
 * the images uploaded (counted in f, when given). */
static int check_report(const char *path, struct figures *f)
{
	struct rk_buf b;
	struct rk_error err;
	rk_buf_init(&b);
	cJSON *rep = rk_fs_read_all(path, 64 << 20, &b, &err) == 0 ? cJSON_Parse(b.data) : NULL;
	rk_buf_release(&b);
	if (!rep)
		return fail("the model server wrote no report (%s)", path);
	const cJSON *failures = cJSON_GetObjectItemCaseSensitive(rep, "failures");
	int ok = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(rep, "completed")) &&
		 cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(rep, "ok")) && cJSON_GetArraySize(failures) == 0;
	int rc = 0;
	if (!ok) {
		char *s = cJSON_PrintUnformatted(failures);
		rc = fail("the model server's expectations failed: %s", s ? s : "(no list)");
		free(s);
	}
	const cJSON *files = cJSON_GetObjectItemCaseSensitive(rep, "files");
	const cJSON *r;
	if (rc == 0 && f) {
		f->uploads = (int)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(files, "uploaded"));
		f->uploaded_bytes =
			(long long)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(files, "uploaded_bytes"));
		f->image_bytes += f->uploaded_bytes;
		cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(rep, "requests"))
		{
			f->file_images += (int)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(r, "file_images"));
		}
	}
	cJSON_Delete(rep);
	return rc;
}

static int run_task(const struct variant *v, struct figures *f)
{
	memset(f, 0, sizeof(*f));
	int native = v->native;
	const char *api = native ? "messages" : "chat", *n = v->name;
	char *sc = rk_xasprintf("%s/scenario-%s.json", dir, n), *rep = rk_xasprintf("%s/report-%s.json", dir, n);
	char *dump = rk_xasprintf("%s/dump-%s.ndjson", dir, n), *sout = rk_xasprintf("%s/server-%s.out", dir, n);
	char *serr = rk_xasprintf("%s/server-%s.err", dir, n), *evs = rk_xasprintf("%s/events-%s.ndjson", dir, n);
	char *rerr = rk_xasprintf("%s/run-%s.err", dir, n), *conf = rk_xasprintf("%s/config-%s.json", dir, n);
	char *text = scenario(native, v->image_max);
	struct rk_error err;
	pid_t server = -1;
	int rc = rk_fs_write_atomic(sc, text, strlen(text), 0600, &err) == 0 ? 0 : fail("%s", err.message);
	free(text);
	if (rc == 0 && v->config)
		rc = rk_fs_write_atomic(conf, v->config, strlen(v->config), 0600, &err) == 0 ? 0
											     : fail("%s", err.message);
	if (v->config)
		setenv("RAKAZO_CONFIG", conf, 1);
	else
		unsetenv("RAKAZO_CONFIG");
	if (rc == 0)
		rc = reset_screen();
	if (rc == 0) {
		char *argv[] = {(char *)model_server, sc, "--report", rep, "--dump", dump, NULL};
		server = spawn(argv, sout, serr);
	}
	int port = 0;
	struct rk_buf b;
	rk_buf_init(&b);
	for (int64_t until = rk_monotonic_ms() + 10000; rc == 0 && !port && rk_monotonic_ms() < until;
	     rk_sleep_ms(20)) {
		rk_buf_reset(&b);
		const char *l = rk_fs_read_all(sout, 4096, &b, &err) == 0
					? strstr(b.data, "listening on http://127.0.0.1:")
					: NULL;
		if (l)
			port = atoi(l + strlen("listening on http://127.0.0.1:"));
	}
	rk_buf_release(&b);
	if (rc == 0 && !port)
		rc = fail("the model server did not start (see %s)", serr);
	int proxied = rc == 0 && (rc = proxy_start(port)) == 0;
	if (rc == 0) {
		char url[64];
		snprintf(url, sizeof(url), "http://127.0.0.1:%d/v1", px.port);
		char *argv[] = {(char *)bin,
				"run",
				"--computer",
				NAME,
				"--api",
				(char *)api,
				"--base-url",
				url,
				"--model",
				native ? "claude-sonnet-4-5" : "gpt-4o",
				"--max-steps",
				"40",
				"--json",
				"Review the quarterly report on the screen: search it, take notes, flag rows, scroll "
				"the table.",
				NULL};
		double spawned = wall_ms();
		int64_t t0 = rk_monotonic_us();
		int st = wait_for(spawn(argv, evs, rerr), RUN_TIMEOUT_MS);
		f->wall_ms = (rk_monotonic_us() - t0) / 1000.0;
		/* the server ends after its last step; after a failed run it is
		 * stopped (it writes its report then too), and what it found
		 * wrong comes first */
		int sst = wait_for(server, st == 0 ? 10000 : 0);
		server = -1;
		rc = check_report(rep, NULL);
		if (st != 0) {
			rk_buf_init(&b);
			rk_fs_read_all(rerr, 1 << 16, &b, &err);
			rc = fail("`rakazo run --api %s` failed (status %d): %s", api, st, b.len ? b.data : "");
			rk_buf_release(&b);
		} else if (rc == 0 && sst != 0) {
			rc = fail("the model server ended with status %d (see %s)", sst, serr);
		}
		if (rc == 0)
			rc = read_events(evs, native, spawned, f);
		if (rc == 0)
			rc = read_dump(dump, f);
		if (rc == 0)
			rc = check_report(rep, f);
	}
	if (proxied) {
		proxy_end();
		f->server_ms = px.server_ms;
	}
	if (server > 0)
		wait_for(server, 0);
	free(sc);
	free(rep);
	free(dump);
	free(sout);
	free(serr);
	free(evs);
	free(rerr);
	free(conf);
	unsetenv("RAKAZO_CONFIG");
	return rc;
}

static double overhead(const struct figures *f)
{
	return (f->window_ms - f->server_ms - f->settle_ms) / f->steps;
}

static void details(const char *who, const char *api, const struct figures *f)
{
	fprintf(stderr,
		"# %s (%s): %d requests carried %d images inline, %lld bytes, %.0f bytes per image, and %d by file id; "
		"%d images uploaded, %lld bytes; %d acts (%d with a new image), %d screenshots (%d unchanged)\n",
		who, api, f->requests, f->images, f->inline_bytes, f->images ? (double)f->inline_bytes / f->images : 0,
		f->file_images, f->uploads, f->uploaded_bytes, f->acts, f->acts_sent, f->shots, f->shots_unchanged);
	fprintf(stderr,
		"# %s: %d model turns in %.0f ms: model server %.0f ms (%.1f per turn), settle %.0f ms (%.0f per "
		"act, %.0f of it before the screen's first change); left %.1f ms per turn (%.1f counting each "
		"act's time to the screen's first change); once per run: start-up %.0f ms, end checkpoint %.0f ms; "
		"wall %.0f ms\n",
		who, f->steps, f->window_ms, f->server_ms, f->server_ms / f->steps, f->settle_ms,
		f->acts ? f->settle_ms / f->acts : 0, f->acts ? f->react_ms / f->acts : 0, overhead(f),
		overhead(f) + f->react_ms / f->steps, f->startup_ms, f->checkpoint_ms, f->wall_ms);
	fprintf(stderr, "# %s: input tokens %lld (%lld read from the cache, %lld written to it), billed as %.0f\n", who,
		f->input_tokens, f->cached_tokens, f->cache_write_tokens, billed(f));
}

static int setup(void)
{
	struct rk_buf out;
	rk_buf_init(&out);
	int rc = cli(&out, "computer", "create", "--provider", "docker", "--name", NAME, "--wait", "--json", NULL);
	cJSON *doc = rc == 0 ? cJSON_Parse(out.data) : NULL;
	const char *id = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(doc, "computer_id"));
	if (rc == 0 && !id)
		rc = fail("`rakazo computer create` did not say the computer's id: %.300s", out.data);
	if (rc == 0)
		snprintf(computer_id, sizeof(computer_id), "%s", id);
	cJSON_Delete(doc);
	char *html = page(), *file = rk_path_join(dir, "model-bench.html");
	struct rk_error err;
	if (rc == 0 && rk_fs_write_atomic(file, html, strlen(html), 0644, &err) != 0)
		rc = fail("%s", err.message);
	free(html);
	if (rc == 0)
		rc = cli(NULL, "computer", "file", "write", NAME, "model-bench.html", file, NULL);
	free(file);
	/* the workspace's absolute path, for the page's file: URL */
	if (rc == 0)
		rc = cli(&out, "computer", "exec", NAME, "--", "pwd", NULL);
	if (rc == 0) {
		while (out.len > 0 && (out.data[out.len - 1] == '\n' || out.data[out.len - 1] == '\r'))
			out.data[--out.len] = '\0';
		if (out.len == 0 || out.data[0] != '/')
			rc = fail("the computer's workspace path is not absolute: '%s'", out.data);
		else
			snprintf(workspace, sizeof(workspace), "%s", out.data);
	}
	/* the display and its holder up (the first screenshot starts them) */
	if (rc == 0)
		rc = cli(NULL, "screen", "shot", NAME, "-o", "/dev/null", NULL);
	if (rc == 0)
		rc = watch_start();
	rk_sleep_ms(1500); /* x11vnc is slow to pass input on for about a second after a client connects */
	rk_buf_release(&out);
	return rc;
}

int main(void)
{
	rk_engine_hooks_init();
	if (!want("model_image_bytes") && !want("step_overhead") && !want("model_cached_share") &&
	    !want("model_input_tokens"))
		return 0;
	alarm(900);
	signal(SIGPIPE, SIG_IGN);
	struct rk_error err = {0};
	const struct rk_provider_ops *dops = rk_provider_find("docker");
	if (!dops || !dops->check || dops->check(&err) != 0) {
		printf("skip: model_bench (docker is down)\n");
		return 0;
	}
	bin = getenv("RAKAZO_BIN");
	if (!bin || access(bin, X_OK) != 0)
		bin = "build/rakazo";
	const char *build = getenv("BUILD");
	char *ms = rk_xasprintf("%s/tests/emulators/model_server", build && *build ? build : "build");
	model_server = ms;
	if (access(bin, X_OK) != 0 || access(model_server, X_OK) != 0) {
		fprintf(stderr, "model_bench: %s or %s is not built (make rakazo model-server)\n", bin, model_server);
		free(ms);
		return 1;
	}
	if (!mkdtemp(dir)) {
		fprintf(stderr, "model_bench: mkdtemp failed\n");
		free(ms);
		return 1;
	}
	setenv("RAKAZO_DATA_DIR", dir, 1);
	setenv("RAKAZO_OWNER", "user:bench", 1);
	setenv("NO_COLOR", "1", 1);
	setenv("ANTHROPIC_API_KEY", "bench-anthropic-key", 1);
	setenv("OPENAI_API_KEY", "bench-openai-key", 1);
	unsetenv("RAKAZO_COMPUTER_TOOL");
	if (!getenv("RAKAZO_TEST_LABEL")) {
		char *label = rk_id_new("bench");
		setenv("RAKAZO_TEST_LABEL", label, 1);
		free(label);
	}
	/* ours with the defaults (caching on, screenshots dropped in blocks),
	 * unless MODEL_BENCH_OURS_CONFIG names another config file's text (to
	 * compare pruning policies) */
	const char *ours_config = getenv("MODEL_BENCH_OURS_CONFIG");
	const struct variant v_ours = {"ours", 1, ours_config && *ours_config ? ours_config : NULL,
				       ours_config && *ours_config
					       ? 100
					       : RK_MODEL_KEEP_IMAGES_DEFAULT + RK_MODEL_PRUNE_BLOCK_DEFAULT};
	/* the reference policy: keep-last-2, one dropped every turn (no blocks) */
	const struct variant v_base = {"base", 0, "{\"model\":{\"prune_block\":0}}", 2};
	const struct variant v_plain = {"plain", 1, "{\"model\":{\"prompt_cache\":false,\"prune_block\":0}}", 2};
	int bytes = want("model_image_bytes") || want("step_overhead");
	int tokens = want("model_cached_share") || want("model_input_tokens");
	struct figures ours, base, plain;
	int rc = setup();
	if (rc == 0)
		rc = run_task(&v_ours, &ours);
	if (rc == 0 && bytes)
		rc = run_task(&v_base, &base);
	if (rc == 0 && tokens)
		rc = run_task(&v_plain, &plain);
	watch_end();
	if (rc == 0) {
		details("ours", "messages, claude-sonnet-4-5", &ours);
		if (bytes)
			details("base", "chat", &base);
		if (tokens)
			details("plain", "messages, no prompt cache, keep-last-2", &plain);
		if (want("model_cached_share"))
			printf("bench: model_cached_share ours=%.3f base=%.3f ratio=%.2f\n", share(&ours),
			       share(&plain), share(&plain) > 0 ? share(&ours) / share(&plain) : 0);
		if (want("model_input_tokens"))
			printf("bench: model_input_tokens ours=%.0f tokens base=%.0f tokens ratio=%.3f\n",
			       billed(&ours), billed(&plain), billed(&plain) > 0 ? billed(&ours) / billed(&plain) : 0);
		if (bytes && want("model_image_bytes"))
			printf("bench: model_image_bytes ours=%lld bytes base=%lld bytes ratio=%.3f\n",
			       ours.image_bytes, base.image_bytes,
			       base.image_bytes ? (double)ours.image_bytes / base.image_bytes : 0);
		if (bytes && want("step_overhead")) {
			double o = overhead(&ours), b = overhead(&base);
			printf("bench: step_overhead ours=%.1f ms base=%.1f ms ratio=%.2f\n", o, b, b > 0 ? o / b : 0);
		}
		fflush(stdout);
	}
	int deleted = computer_id[0] ? cli(NULL, "computer", "delete", NAME, "--wait", NULL) == 0 : 1;
	if (deleted && rc == 0 && !getenv("RAKAZO_BENCH_KEEP"))
		rk_fs_remove_tree(dir, NULL);
	else
		fprintf(stderr, "model_bench: the run's files are kept in %s\n", dir);
	free(ms);
	return rc == 0 && deleted ? 0 : 1;
}
