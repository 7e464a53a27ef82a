/* make bench: the screen gateway, on a real docker computer driven through
 * the rakazo CLI ($RAKAZO_BIN).
 *
 *   gateway_frame        one full 1280x800 frame (FramebufferUpdateRequest,
 *                        non-incremental, raw encoding, 32 bpp) until the
 *                        whole update has arrived: ours through
 *                        `rakazo screen gateway` with a view token (WebSocket,
 *                        the capability's forwarder and its RFB filter),
 *                        base straight on the display's x11vnc unix socket.
 *                        Alternated, p50 and p95; gateway_frame_added is
 *                        their difference. gateway_small_frame: the same
 *                        for a 64x64 region (the per-message cost).
 *   gateway_frame_box    the same for a box desktop (tests/emulators/box):
 *                        ours through the gateway, whose forwarder is a
 *                        WebSocket client of the desktop's websockify;
 *                        base straight on that websockify endpoint (both
 *                        reach the box's x11vnc through the emulator's
 *                        relay). A full 1920x1080 frame, and
 *                        gateway_small_frame_box for 64x64.
 * (The cost of idle desktops, desktop_marginal_mb and desktop_idle_cpu, is
 * team_bench.c's.)
 *
 * RAKAZO_BENCH=NAME runs only that figure. Without docker or the image it
 * prints "skip: ..." and exits 0; a broken frame exits 1. Everything made (a data dir under /tmp, one container
 * labelled rakazo.test, the processes of that data dir) goes at the end. */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <arpa/inet.h>

#include "engine/util/buf.h"
#include "engine/util/fs.h"
#include "engine/util/id.h"
#include "engine/util/json.h"
#include "engine/util/time.h"
#include "providers/docker/api.h"
#include "emulator.h"

#define N_FRAMES 20
#define IO_MS 20000

static char data_dir[128];
static const char *bin;
static pid_t gw_pid;
static char gw_addr[64];

static int want(const char *name)
{
	const char *w = getenv("RAKAZO_BENCH");
	return !w || !*w || strcmp(w, name) == 0 || !strncmp(name, w, strlen(w));
}

/* Runs the CLI with args, stdout into out (may be NULL); its exit status. */
static int cli(struct rk_buf *out, const char *const *args)
{
	int p[2];
	if (pipe(p) != 0)
		return -1;
	pid_t pid = fork();
	if (pid == 0) {
		dup2(p[1], 1);
		close(p[0]);
		close(p[1]);
		int n = 0;
		while (args[n])
			n++;
		char **argv = calloc((size_t)n + 2, sizeof(*argv));
		argv[0] = (char *)bin;
		for (int i = 0; i < n; i++)
			argv[i + 1] = (char *)args[i];
		execv(bin, argv);
		_exit(127);
	}
	close(p[1]);
	char buf[4096];
	ssize_t r;
	while ((r = read(p[0], buf, sizeof(buf))) > 0)
		if (out)
			rk_buf_add(out, buf, (size_t)r);
	close(p[0]);
	int st = 0;
	waitpid(pid, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static cJSON *cli_json(const char *const *args)
{
	struct rk_buf b;
	rk_buf_init(&b);
	cJSON *j = cli(&b, args) == 0 ? cJSON_Parse(b.data ? b.data : "") : NULL;
	rk_buf_release(&b);
	return j;
}

/* --- a tiny RFB client over a unix socket or the gateway's WebSocket ---------------- */

struct conn {
	int fd;
	int ws;
	struct rk_buf raw;  /* ws: bytes not yet parsed into frames */
	struct rk_buf data; /* payload bytes not yet consumed */
	size_t off;         /* consumed prefix of data */
};

static int wait_in(int fd, int64_t deadline)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	int64_t left = deadline - rk_monotonic_ms();
	return left > 0 && poll(&p, 1, (int)left) > 0 ? 0 : -1;
}

/* Reads what the socket has and turns it into payload bytes. */
static int conn_fill(struct conn *c, int64_t deadline)
{
	char buf[1 << 16];
	if (wait_in(c->fd, deadline) != 0)
		return -1;
	ssize_t r = read(c->fd, buf, sizeof(buf));
	if (r <= 0)
		return -1;
	if (c->off > (1u << 20)) {
		rk_buf_consume(&c->data, c->off);
		c->off = 0;
	}
	if (!c->ws) {
		rk_buf_add(&c->data, buf, (size_t)r);
		return 0;
	}
	rk_buf_add(&c->raw, buf, (size_t)r);
	for (;;) {
		const unsigned char *f = (const unsigned char *)c->raw.data;
		size_t have = c->raw.len, hl = 2;
		if (have < 2)
			return 0;
		uint64_t n = f[1] & 0x7f;
		if (n == 126) {
			if (have < 4)
				return 0;
			n = ((uint64_t)f[2] << 8) | f[3];
			hl = 4;
		} else if (n == 127) {
			if (have < 10)
				return 0;
			n = 0;
			for (int i = 0; i < 8; i++)
				n = (n << 8) | f[2 + i];
			hl = 10;
		}
		if (have < hl + n)
			return 0;
		int op = f[0] & 0x0f;
		if (op == 8)
			return -1;
		if (op <= 2)
			rk_buf_add(&c->data, f + hl, (size_t)n);
		rk_buf_consume(&c->raw, hl + (size_t)n);
	}
}

static int conn_read(struct conn *c, void *out, size_t n, int64_t deadline)
{
	while (c->data.len - c->off < n)
		if (conn_fill(c, deadline) != 0)
			return -1;
	if (out)
		memcpy(out, c->data.data + c->off, n);
	c->off += n;
	return 0;
}

static int conn_write(struct conn *c, const void *data, size_t n)
{
	if (!c->ws)
		return rk_fs_write_fd(c->fd, data, n);
	unsigned char hdr[14] = {0x82}, mask[4];
	size_t hl = 2;
	if (n < 126) {
		hdr[1] = 0x80 | (unsigned char)n;
	} else {
		hdr[1] = 0x80 | 126;
		hdr[2] = (unsigned char)(n >> 8);
		hdr[3] = (unsigned char)n;
		hl = 4;
	}
	rk_random_bytes(mask, 4);
	memcpy(hdr + hl, mask, 4);
	hl += 4;
	unsigned char *m = malloc(hl + n);
	memcpy(m, hdr, hl);
	for (size_t i = 0; i < n; i++)
		m[hl + i] = ((const unsigned char *)data)[i] ^ mask[i % 4];
	int r = rk_fs_write_fd(c->fd, m, hl + n);
	free(m);
	return r;
}

static void conn_close(struct conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	rk_buf_release(&c->raw);
	rk_buf_release(&c->data);
	memset(c, 0, sizeof(*c));
	c->fd = -1;
}

static int open_unix(struct conn *c, const char *path)
{
	memset(c, 0, sizeof(*c));
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	c->fd = socket(AF_UNIX, SOCK_STREAM, 0);
	return connect(c->fd, (struct sockaddr *)&sa, sizeof(sa));
}

/* A WebSocket to addr ("HOST:PORT") for path (with its query). */
static int open_ws(struct conn *c, const char *addr, const char *path)
{
	memset(c, 0, sizeof(*c));
	c->ws = 1;
	char host[64];
	int port = 0;
	if (sscanf(addr, "%63[^:]:%d", host, &port) != 2)
		return -1;
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	inet_pton(AF_INET, host, &sa.sin_addr);
	c->fd = socket(AF_INET, SOCK_STREAM, 0);
	if (connect(c->fd, (struct sockaddr *)&sa, sizeof(sa)) != 0)
		return -1;
	char *req = rk_xasprintf("GET %s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\n"
				 "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
				 "Sec-WebSocket-Protocol: binary\r\nSec-WebSocket-Version: 13\r\n\r\n",
				 path, addr);
	int r = rk_fs_write_fd(c->fd, req, strlen(req));
	free(req);
	if (r != 0)
		return -1;
	/* the reply header, byte by byte so no frame byte is taken with it */
	struct rk_buf h;
	rk_buf_init(&h);
	int64_t deadline = rk_monotonic_ms() + IO_MS;
	while (h.len < 4 || memcmp(h.data + h.len - 4, "\r\n\r\n", 4) != 0) {
		char ch;
		if (wait_in(c->fd, deadline) != 0 || read(c->fd, &ch, 1) != 1 || h.len > 8192) {
			rk_buf_release(&h);
			return -1;
		}
		rk_buf_addc(&h, ch);
	}
	int ok = strncmp(h.data, "HTTP/1.1 101", 12) == 0;
	rk_buf_release(&h);
	return ok ? 0 : -1;
}

static uint32_t be32(const unsigned char *p)
{
	return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}

static int w_, h_;

static int rfb_handshake(struct conn *c)
{
	int64_t d = rk_monotonic_ms() + IO_MS;
	unsigned char b[64];
	if (conn_read(c, b, 12, d) || conn_write(c, "RFB 003.008\n", 12) || conn_read(c, b, 1, d) || b[0] == 0)
		return -1;
	unsigned n = b[0];
	if (conn_read(c, b, n, d) || !memchr(b, 1, n))
		return -1;
	if (conn_write(c, "\1", 1) || conn_read(c, b, 4, d) || be32(b) != 0 || conn_write(c, "\1", 1))
		return -1;
	if (conn_read(c, b, 24, d))
		return -1;
	w_ = (b[0] << 8) | b[1];
	h_ = (b[2] << 8) | b[3];
	if (conn_read(c, NULL, be32(b + 20), d))
		return -1;
	static const unsigned char pf[20] = {0, 0, 0, 0, 32, 24, 0, 1, 0, 255, 0, 255, 0, 255, 16, 8, 0, 0, 0, 0};
	static const unsigned char enc[8] = {2, 0, 0, 1, 0, 0, 0, 0}; /* raw only */
	return conn_write(c, pf, sizeof(pf)) || conn_write(c, enc, sizeof(enc)) ? -1 : 0;
}

/* One frame of the top left w x h (non-incremental); its milliseconds, or -1. */
static double rfb_frame(struct conn *c, int w, int h)
{
	unsigned char req[10] = {3, 0, 0, 0, 0, 0, (unsigned char)(w >> 8), (unsigned char)w,
				 (unsigned char)(h >> 8), (unsigned char)h};
	int64_t t0 = rk_monotonic_us(), d = rk_monotonic_ms() + IO_MS;
	if (conn_write(c, req, sizeof(req)))
		return -1;
	long long pixels = 0;
	while (pixels < (long long)w * h) {
		unsigned char t;
		if (conn_read(c, &t, 1, d))
			return -1;
		if (t == 2)
			continue;
		if (t == 3) {
			unsigned char l[7];
			if (conn_read(c, l, 7, d) || conn_read(c, NULL, be32(l + 3), d))
				return -1;
			continue;
		}
		if (t != 0)
			return -1;
		unsigned char hdr[3];
		if (conn_read(c, hdr, 3, d))
			return -1;
		unsigned nrect = (hdr[1] << 8) | hdr[2];
		for (unsigned i = 0; i < nrect; i++) {
			unsigned char r[12];
			if (conn_read(c, r, 12, d))
				return -1;
			unsigned rw = (r[4] << 8) | r[5], rh = (r[6] << 8) | r[7];
			if (be32(r + 8) != 0) /* a pseudo-encoding rect: none asked for */
				return -1;
			if (conn_read(c, NULL, (size_t)rw * rh * 4, d))
				return -1;
			pixels += (long long)rw * rh;
		}
	}
	return (rk_monotonic_us() - t0) / 1000.0;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double pct(double *v, int n, double p)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_d);
	int i = (int)(p * (n - 1) + 0.5);
	return v[i];
}

/* Through the gateway with token, after rfb_handshake on direct. */
static int open_gateway(struct conn *gw, const char *token)
{
	char *path = rk_xasprintf("/websockify?token=%s", token);
	int r = open_ws(gw, gw_addr, path) || rfb_handshake(gw) ? -1 : 0;
	free(path);
	if (r)
		fprintf(stderr, "gateway_bench: cannot connect through the gateway at %s\n", gw_addr);
	return r;
}

/* Alternated frames on direct (base) and gw (ours); figures NAME and
 * NAME_small with suffix after "gateway_frame" / "gateway_small_frame". */
static int bench_pair(struct conn *direct, struct conn *gw, const char *suffix)
{
	static const struct {
		const char *name;
		int small;
	} figs[] = {{"gateway_frame", 0}, {"gateway_small_frame", 1}};
	for (size_t f = 0; f < sizeof(figs) / sizeof(figs[0]); f++) {
		int w = figs[f].small ? 64 : w_, h = figs[f].small ? 64 : h_;
		double ours[N_FRAMES], base[N_FRAMES];
		for (int i = -2; i < N_FRAMES; i++) { /* two warm-up rounds */
			double b = rfb_frame(direct, w, h), o = rfb_frame(gw, w, h);
			if (b < 0 || o < 0) {
				fprintf(stderr, "gateway_bench: a frame did not arrive whole (%s)\n",
					b < 0 ? "direct" : "gateway");
				return -1;
			}
			if (i >= 0) {
				base[i] = b;
				ours[i] = o;
			}
		}
		char name[64];
		snprintf(name, sizeof(name), "%s%s", figs[f].name, suffix);
		double o50 = pct(ours, N_FRAMES, 0.5), b50 = pct(base, N_FRAMES, 0.5);
		double o95 = pct(ours, N_FRAMES, 0.95), b95 = pct(base, N_FRAMES, 0.95);
		printf("bench: %s ours=%.2f ms base=%.2f ms ratio=%.2f\n", name, o50, b50, o50 / b50);
		printf("bench: %s_p95 ours=%.2f ms base=%.2f ms ratio=%.2f\n", name, o95, b95, o95 / b95);
		printf("bench: %s_added ours=%.2f ms\n", name, o50 - b50);
		fflush(stdout);
	}
	return 0;
}

static int bench_frame(const char *vnc_sock, const char *token)
{
	struct conn direct, gw;
	if (open_unix(&direct, vnc_sock) || rfb_handshake(&direct)) {
		fprintf(stderr, "gateway_bench: cannot connect to %s\n", vnc_sock);
		return -1;
	}
	int r = open_gateway(&gw, token) || bench_pair(&direct, &gw, "") ? -1 : 0;
	conn_close(&direct);
	conn_close(&gw);
	return r;
}

static int start_gateway(void);
static void kill_ours(void);

/* A box computer on the box emulator, shared through the gateway: frames
 * through it vs on the desktop's own websockify endpoint. */
static int bench_box(void)
{
	/* the data dir's worker and gateway start again with the box's
	 * address in their environment */
	kill_ours();
	char *pf = rk_xasprintf("%s/box-port", data_dir);
	pid_t emu = rk_bench_emulator("box", pf, "bench-box-key");
	int rc = 0;
	struct rk_buf b, u;
	rk_buf_init(&b);
	rk_buf_init(&u);
	cJSON *show = NULL, *sj = NULL;
	struct conn direct = {.fd = -1}, gw = {.fd = -1};
	if (emu < 0) {
		printf("skip: gateway_bench: the box emulator did not start (node, dockerd, the image)\n");
		goto out;
	}
	rk_fs_read_all(pf, 4096, &b, NULL);
	while (b.len && b.data[b.len - 1] == '\n')
		b.data[--b.len] = 0;
	char *api = rk_xasprintf("%s/api/box/v1", b.data);
	setenv("BOX_API_URL", api, 1);
	setenv("BOX_API_KEY", "bench-box-key", 1);
	free(api);
	rc = -1;
	const char *create[] = {"computer", "create", "--provider", "box", "--name", "bx", "--wait", "--json", NULL};
	const char *showa[] = {"computer", "show", "bx", "--json", NULL};
	const char *share[] = {"screen", "share", "bx", "--view", "--json", NULL};
	if (cli(NULL, create) != 0 || !(show = cli_json(showa)) || !(sj = cli_json(share))) {
		fprintf(stderr, "gateway_bench: cannot make and share a box computer\n");
		goto out;
	}
	/* the baseline needs the desktop's own address, secret and all */
	char *file = rk_xasprintf("%s/run/%s/box-desktop.url", data_dir, rk_json_string(show, "id", ""));
	rk_fs_read_all(file, 4096, &u, NULL);
	free(file);
	char addr[64] = "", *path = NULL;
	const char *q = u.len ? strstr(u.data, "?") : NULL;
	if (!q || sscanf(u.data, "http://%63[^/]", addr) != 1) {
		fprintf(stderr, "gateway_bench: no box desktop address\n");
		goto out;
	}
	path = rk_xasprintf("/websockify%s", q);
	int bad = open_ws(&direct, addr, path) || rfb_handshake(&direct);
	free(path);
	if (bad) {
		fprintf(stderr, "gateway_bench: cannot connect to the box desktop's websockify\n");
		goto out;
	}
	if ((!gw_pid && start_gateway() != 0) || open_gateway(&gw, rk_json_string(sj, "token", "")) != 0)
		goto out;
	rc = bench_pair(&direct, &gw, "_box");
out:
	conn_close(&direct);
	conn_close(&gw);
	if (show) {
		const char *del[] = {"computer", "delete", "bx", "--wait", NULL};
		cli(NULL, del);
	}
	if (emu > 0) {
		kill(emu, SIGTERM);
		waitpid(emu, NULL, 0);
	}
	cJSON_Delete(show);
	cJSON_Delete(sj);
	rk_buf_release(&b);
	rk_buf_release(&u);
	free(pf);
	return rc;
}

/* --- setup and teardown -------------------------------------------------------------------- */

static void kill_ours(void)
{
	if (gw_pid > 0) {
		kill(gw_pid, SIGTERM);
		waitpid(gw_pid, NULL, 0);
		gw_pid = 0;
	}
	/* the holders and forwarders this data dir started (found by it alone) */
	char want_env[200];
	snprintf(want_env, sizeof(want_env), "RAKAZO_DATA_DIR=%s", data_dir);
	FILE *f = popen("ls /proc", "r");
	char name[64];
	while (f && fscanf(f, "%63s", name) == 1) {
		if (name[0] < '0' || name[0] > '9' || atoi(name) == getpid())
			continue;
		char p[100];
		snprintf(p, sizeof(p), "/proc/%s/environ", name);
		struct rk_buf b;
		rk_buf_init(&b);
		struct rk_error e;
		if (rk_fs_read_all(p, 1 << 20, &b, &e) == 0) {
			for (size_t i = 0; i < b.len; i += strlen(b.data + i) + 1)
				if (!strcmp(b.data + i, want_env)) {
					kill(atoi(name), SIGKILL);
					break;
				}
		}
		rk_buf_release(&b);
	}
	if (f)
		pclose(f);
}

static int start_gateway(void)
{
	int p[2];
	if (pipe(p) != 0)
		return -1;
	gw_pid = fork();
	if (gw_pid == 0) {
		dup2(p[1], 1);
		close(p[0]);
		close(p[1]);
		execl(bin, bin, "screen", "gateway", "--listen", "127.0.0.1:0", "--json", (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	char line[512] = {0};
	size_t n = 0;
	int64_t d = rk_monotonic_ms() + IO_MS;
	while (n < sizeof(line) - 1 && !strchr(line, '\n') && wait_in(p[0], d) == 0) {
		ssize_t r = read(p[0], line + n, sizeof(line) - 1 - n);
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	close(p[0]);
	cJSON *j = cJSON_Parse(line);
	const char *a = rk_json_string(j, "listen", NULL);
	if (a)
		snprintf(gw_addr, sizeof(gw_addr), "%s", a);
	cJSON_Delete(j);
	return a ? 0 : -1;
}

int main(void)
{
	bin = getenv("RAKAZO_BIN");
	if (!bin || !*bin)
		bin = "build/rakazo";
	int docker = want("gateway_frame") || want("gateway_small_frame"), box = want("gateway_frame_box") ||
										    want("gateway_small_frame_box");
	if (!docker && !box)
		return 0;
	struct rk_error e;
	if (rk_docker_ping(&e) != 0) {
		printf("skip: gateway_bench: docker not running\n");
		return 0;
	}
	signal(SIGPIPE, SIG_IGN);
	snprintf(data_dir, sizeof(data_dir), "/tmp/rk-gw-bench-XXXXXX");
	if (!mkdtemp(data_dir))
		return 1;
	setenv("RAKAZO_DATA_DIR", data_dir, 1);
	setenv("RAKAZO_DISPLAY_IDLE_MS", "120000", 1);
	if (!getenv("RAKAZO_TEST_LABEL")) {
		char *label = rk_id_new("bench");
		setenv("RAKAZO_TEST_LABEL", label, 1);
		free(label);
	}
	int rc = 1;
	char *vnc = NULL;
	cJSON *show = NULL;
	if (!docker)
		goto box;
	const char *create[] = {"computer", "create", "--name", "b", "--wait", "--json", NULL};
	if (cli(NULL, create) != 0) {
		printf("skip: gateway_bench: cannot create a docker computer (is the image built? make image)\n");
		rc = 0;
		goto out;
	}
	const char *showa[] = {"computer", "show", "b", "--json", NULL};
	show = cli_json(showa);
	const char *cid = rk_json_string(show, "id", NULL);
	if (!cid) {
		fprintf(stderr, "gateway_bench: no computer id\n");
		goto out;
	}
	{
		const char *info[] = {"screen", "info", "b", "--display", "1", "--json", NULL};
		cJSON *ij = cli_json(info);
		cJSON_Delete(ij);
		const char *share[] = {"screen", "share", "b", "--display", "1", "--view", "--json", NULL};
		cJSON *sj = cli_json(share);
		const char *tok = rk_json_string(sj, "token", NULL);
		vnc = rk_xasprintf("%s/run/%s/vnc/1.sock", data_dir, cid);
		if (!ij || !tok || start_gateway() != 0 || bench_frame(vnc, tok) != 0) {
			fprintf(stderr, "gateway_bench: gateway_frame failed\n");
			cJSON_Delete(sj);
			goto out;
		}
		cJSON_Delete(sj);
	}
box:
	if (box && bench_box() != 0) {
		fprintf(stderr, "gateway_bench: gateway_frame_box failed\n");
		goto out;
	}
	rc = 0;
out:
	kill_ours();
	const char *del[] = {"computer", "delete", "b", "--wait", NULL};
	if (docker)
		cli(NULL, del);
	kill_ours();
	rk_fs_remove_tree(data_dir, &e);
	free(vnc);
	cJSON_Delete(show);
	return rc;
}
