/* make bench: the page browser's tools against the screenshot path (issue 12).
 *
 * One docker computer (made with `rakazo computer create`, as a user would)
 * serves a generated page inside itself on 127.0.0.1:8000: 1,000 buttons
 * tiling the viewport (a click anywhere in it lands on one) and 1,000
 * links below them, 2,000 interactive elements. Everything is timed
 * through rk_tools_call, the model's own entry point, on display 0:
 *
 *   browser_snapshot  ours: browser_snapshot (the compact tree with refs).
 *                     base: computer_observe of the same page through the
 *                     screen engine, a full 1280x800 screenshot: without
 *                     the page browser, that is what the model would use to
 *                     see the page.
 *   browser_click     ours: browser_act {action: click, ref} round trip (the
 *                     click, and the settled page's url and title back).
 *                     base: computer_act [{click at x,y}] with its default
 *                     settle and the screenshot after it: the
 *                     screenshot-and-click path.
 *
 * The two run alternately in the same loop. Each is checked: the snapshot
 * has the 2,000 elements, and every click of either kind lands (the page
 * counts them in its title). Prints `bench: NAME ours=V ms base=V ms
 * ratio=R` with p50. RAKAZO_BENCH=NAME prints one. Without docker it prints
 * "skip: ..." and exits 0; a failure exits 1. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/agent/hooks.h"
#include "engine/machine/computer.h"
#include "engine/state/db.h"
#include "engine/state/engine.h"
#include "engine/agent/tools.h"
#include "engine/util/buf.h"
#include "engine/util/fs.h"
#include "engine/util/id.h"
#include "engine/util/time.h"
#include "providers/provider.h"

#define N 15
#define BUTTONS 1000
#define LINKS 1000

static char dir[] = "/tmp/rk-browser-bench-XXXXXX";
static const char *bin;
static struct rk_engine *eng;
static struct rk_computer comp;
static int made;

static int want(const char *name)
{
	const char *w = getenv("RAKAZO_BENCH");
	return !w || !*w || !strcmp(w, name);
}

static int cmp64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

static double median_ms(int64_t *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp64);
	return v[n / 2] / 1000.0;
}

/* Runs a rakazo command line quietly; 0 when it exited 0. */
static int cli(const char *args)
{
	char *cmd = rk_xasprintf("'%s' %s >/dev/null 2>&1 </dev/null", bin, args);
	int rc = system(cmd);
	free(cmd);
	return rc == 0 ? 0 : -1;
}

static char *page(void)
{
	struct rk_buf b;
	rk_buf_init(&b);
	rk_buf_adds(&b, "<!doctype html><html><head><meta charset=utf-8><title>hits 0</title><style>"
			"body{margin:0} #g{display:flex;flex-wrap:wrap}"
			" #g button{width:80px;height:32px;margin:0;padding:0;font-size:10px}"
			"</style></head><body><div id=g>\n");
	for (int i = 0; i < BUTTONS; i++)
		rk_buf_printf(&b, "<button onclick=\"hit(this)\">b%d</button>\n", i);
	rk_buf_adds(&b, "</div>\n");
	for (int i = 0; i < LINKS; i++)
		rk_buf_printf(&b, "<a href=\"#l%d\">link %d</a>\n", i, i);
	rk_buf_adds(&b, "<script>let hits = 0; function hit(el) { hits++; document.title = 'hits ' + hits;"
			" el.textContent = 'hit ' + hits; }</script></body></html>\n");
	return rk_buf_detach(&b, NULL);
}

/* One tool call; its result in *out (release it). -1 with a message on an error result. */
static int tool(struct rk_tools_ctx *ctx, const char *name, const char *args, struct rk_tool_result *out)
{
	rk_tools_call(ctx, name, args, out);
	if (out->is_error) {
		fprintf(stderr, "browser_bench: %s: %s\n", name, out->text ? out->text : "?");
		return -1;
	}
	return 0;
}

/* The page's click count, from a browser tool's result title ("hits N"). */
static int hits_of(const char *text)
{
	const char *t = text ? strstr(text, "\"title\":\"hits ") : NULL;
	return t ? atoi(t + strlen("\"title\":\"hits ")) : -1;
}

static int run(void)
{
	struct rk_error err = {0};
	if (cli("computer create --name bench --wait") != 0) {
		fprintf(stderr, "browser_bench: cannot create a docker computer (is the image built?)\n");
		return 1;
	}
	made = 1;
	if (rk_engine_open(&eng, &err) || rk_db_computer_get(eng->db, "bench", &comp, &err)) {
		fprintf(stderr, "browser_bench: %s\n", err.message);
		return 1;
	}
	char *html = page();
	int r = rk_computer_file_write(eng, &comp, "bench/big.html", html, strlen(html), 0, &err);
	free(html);
	if (r) {
		fprintf(stderr, "browser_bench: %s\n", err.message);
		return 1;
	}
	if (cli("computer exec bench -- 'cd bench && setsid -f python3 -m http.server 8000 --bind 127.0.0.1 "
		"</dev/null >/dev/null 2>&1'") != 0) {
		fprintf(stderr, "browser_bench: cannot start the page server in the computer\n");
		return 1;
	}
	struct rk_tools_ctx ctx = {.eng = eng, .computer = &comp};
	struct rk_tool_result res;
	/* the server takes a moment to listen */
	int ok = 0;
	for (int i = 0; i < 50 && !ok; i++) {
		rk_tools_call(&ctx, "browser_navigate", "{\"url\":\"http://127.0.0.1:8000/big.html\"}", &res);
		ok = !res.is_error && hits_of(res.text) == 0;
		rk_tool_result_release(&res);
		if (!ok)
			rk_sleep_ms(200);
	}
	if (!ok) {
		fprintf(stderr, "browser_bench: the page did not load in the computer's browser\n");
		return 1;
	}
	/* warm both paths: the screen engine's holder, the page's refs */
	if (tool(&ctx, "computer_observe", "{}", &res))
		return 1;
	rk_tool_result_release(&res);
	if (tool(&ctx, "browser_snapshot", "{}", &res))
		return 1;
	/* the first button's ref: the tree's first "button" line */
	const char *line = strstr(res.text, "button \\\"b0\\\" [ref=");
	char ref[16] = "";
	if (line)
		sscanf(line + strlen("button \\\"b0\\\" [ref="), "%15[e0-9]", ref);
	rk_tool_result_release(&res);
	if (!ref[0]) {
		fprintf(stderr, "browser_bench: no ref for the first button in the snapshot\n");
		return 1;
	}

	if (want("browser_snapshot")) {
		int64_t ours[N], base[N];
		for (int i = 0; i < N; i++) {
			int64_t t0 = rk_monotonic_us();
			if (tool(&ctx, "browser_snapshot", "{}", &res))
				return 1;
			int64_t t1 = rk_monotonic_us();
			const char *e = strstr(res.text, "\"elements\":");
			int n = e ? atoi(e + strlen("\"elements\":")) : 0;
			rk_tool_result_release(&res);
			if (n < BUTTONS + LINKS) {
				fprintf(stderr, "browser_bench: the snapshot has %d elements, not %d\n", n, BUTTONS + LINKS);
				return 1;
			}
			int64_t t2 = rk_monotonic_us();
			if (tool(&ctx, "computer_observe", "{}", &res))
				return 1;
			int64_t t3 = rk_monotonic_us();
			int shot = res.png != NULL;
			rk_tool_result_release(&res);
			if (!shot) {
				fprintf(stderr, "browser_bench: computer_observe gave no screenshot\n");
				return 1;
			}
			ours[i] = t1 - t0;
			base[i] = t3 - t2;
		}
		double o = median_ms(ours, N), b = median_ms(base, N);
		printf("bench: browser_snapshot ours=%.1f ms base=%.1f ms ratio=%.2f\n", o, b, b > 0 ? o / b : 0);
	}

	if (want("browser_click")) {
		int64_t ours[N], base[N];
		char *click = rk_xasprintf("{\"action\":\"click\",\"ref\":\"%s\"}", ref);
		int hits = -1;
		for (int i = 0; i < N; i++) {
			int64_t t0 = rk_monotonic_us();
			if (tool(&ctx, "browser_act", click, &res))
				return 1;
			int64_t t1 = rk_monotonic_us();
			int h = hits_of(res.text);
			rk_tool_result_release(&res);
			if (hits >= 0 && h != hits + 2) {
				fprintf(stderr, "browser_bench: a click was lost (the page counts %d, expected %d)\n", h,
					hits + 2);
				return 1;
			}
			hits = h;
			/* the middle of the screen, inside the viewport: the buttons tile it */
			int64_t t2 = rk_monotonic_us();
			if (tool(&ctx, "computer_act", "{\"actions\":[{\"action\":\"click\",\"x\":640,\"y\":420}]}", &res))
				return 1;
			int64_t t3 = rk_monotonic_us();
			int shot = res.png != NULL;
			rk_tool_result_release(&res);
			if (!shot) {
				fprintf(stderr, "browser_bench: computer_act gave no screenshot\n");
				return 1;
			}
			ours[i] = t1 - t0;
			base[i] = t3 - t2;
		}
		free(click);
		/* the last screen click counted too */
		if (tool(&ctx, "browser_snapshot", "{}", &res))
			return 1;
		int h = hits_of(res.text);
		rk_tool_result_release(&res);
		if (h != 2 * N) {
			fprintf(stderr, "browser_bench: the page counts %d clicks, not %d\n", h, 2 * N);
			return 1;
		}
		double o = median_ms(ours, N), b = median_ms(base, N);
		printf("bench: browser_click ours=%.1f ms base=%.1f ms ratio=%.2f\n", o, b, b > 0 ? o / b : 0);
	}
	return 0;
}

int main(void)
{
	rk_engine_hooks_init();
	if (getenv("RAKAZO_BENCH") && *getenv("RAKAZO_BENCH") && !want("browser_snapshot") && !want("browser_click"))
		return 0;
	struct rk_error err = {0};
	const struct rk_provider_ops *dops = rk_provider_find("docker");
	if (!dops || !dops->check || dops->check(&err) != 0) {
		printf("skip: browser (docker is down)\n");
		return 0;
	}
	bin = getenv("RAKAZO_BIN");
	if (!bin || access(bin, X_OK) != 0)
		bin = "build/rakazo";
	if (!mkdtemp(dir)) {
		fprintf(stderr, "browser_bench: mkdtemp failed\n");
		return 1;
	}
	setenv("RAKAZO_DATA_DIR", dir, 1);
	setenv("RAKAZO_OWNER", "user:bench", 1);
	setenv("NO_COLOR", "1", 1);
	if (!getenv("RAKAZO_TEST_LABEL")) {
		char *label = rk_id_new("bench");
		setenv("RAKAZO_TEST_LABEL", label, 1);
		free(label);
	}
	int status = run();
	rk_computer_release(&comp);
	rk_engine_free(eng);
	if (made && cli("computer delete bench --wait") != 0)
		fprintf(stderr, "browser_bench: the computer 'bench' of %s was not deleted\n", dir);
	else
		rk_fs_remove_tree(dir, NULL);
	return status;
}
