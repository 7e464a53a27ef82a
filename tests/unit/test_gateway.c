/* The screen gateway's pieces that need no desktop: the view filter over
 * the RFB client stream, the token checks before any lookup succeeds, and
 * a noVNC page's websockify address and the refusals of an upstream that
 * cannot serve. */

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "engine/agent/hooks.h"
#include "engine/access/authz.h"
#include "engine/state/engine.h"
#include "engine/gateway/gateway.h"
#include "engine/gateway/gateway_upstream.h"
#include "engine/screen/rfb.h"
#include "engine/util/buf.h"
#include "engine/util/fs.h"
#include "check.h"

/* Client messages of each kind (RFC 6143 7.5). */
static const uint8_t set_pixel_format[20] = {0, 0, 0, 0, 32, 24, 0, 1, 0, 255, 0, 255, 0, 255, 16, 8, 0, 0, 0, 0};
static const uint8_t set_encodings[12] = {2, 0, 0, 2, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0x21};
static const uint8_t fb_request[10] = {3, 1, 0, 0, 0, 0, 5, 0, 3, 32};
static const uint8_t key_event[8] = {4, 1, 0, 0, 0, 0, 0, 'a'};
static const uint8_t pointer_event[6] = {5, 1, 0, 100, 0, 100};
static const uint8_t cut_text[11] = {6, 0, 0, 0, 0, 0, 0, 3, 'x', 'y', 'z'};
/* the extended clipboard's form: a negative length, |len| bytes follow */
static const uint8_t cut_text_ext[12] = {6, 0, 0, 0, 0xff, 0xff, 0xff, 0xfc, 0, 0, 0, 1};

static void add(struct rk_buf *b, const uint8_t *m, size_t n)
{
	rk_buf_add(b, m, n);
}

/* Feeds in whole, or one byte at a time (a stream splits anywhere). */
static int feed(const struct rk_buf *in, int bytewise, struct rk_buf *out, struct rk_rfb_filter *f)
{
	rk_rfb_filter_init(f);
	if (!bytewise)
		return rk_rfb_filter_feed(f, (const uint8_t *)in->data, in->len, out);
	for (size_t i = 0; i < in->len; i++)
		if (rk_rfb_filter_feed(f, (const uint8_t *)in->data + i, 1, out) != 0)
			return -1;
	return 0;
}

TEST(view_filter_passes_what_a_viewer_needs_and_drops_input)
{
	for (int bytewise = 0; bytewise < 2; bytewise++) {
		struct rk_buf in, out, want;
		rk_buf_init(&in);
		rk_buf_init(&out);
		rk_buf_init(&want);
		add(&in, set_pixel_format, sizeof(set_pixel_format));
		add(&in, key_event, sizeof(key_event));
		add(&in, set_encodings, sizeof(set_encodings));
		add(&in, pointer_event, sizeof(pointer_event));
		add(&in, cut_text, sizeof(cut_text));
		add(&in, fb_request, sizeof(fb_request));
		add(&in, cut_text_ext, sizeof(cut_text_ext));
		add(&in, pointer_event, sizeof(pointer_event));
		add(&in, fb_request, sizeof(fb_request));
		add(&want, set_pixel_format, sizeof(set_pixel_format));
		add(&want, set_encodings, sizeof(set_encodings));
		add(&want, fb_request, sizeof(fb_request));
		add(&want, fb_request, sizeof(fb_request));
		struct rk_rfb_filter f;
		CHECK_EQ_INT(feed(&in, bytewise, &out, &f), 0);
		CHECK_EQ_INT(out.len, want.len);
		CHECK(out.len == want.len && memcmp(out.data, want.data, want.len) == 0);
		CHECK_EQ_INT(f.dropped, 5);
		rk_buf_release(&in);
		rk_buf_release(&out);
		rk_buf_release(&want);
	}
}

TEST(view_filter_refuses_unknown_messages)
{
	/* SetDesktopSize (251), QEMU (255), a shared-flag-looking 1: none pass */
	const uint8_t types[] = {1, 7, 150, 248, 250, 251, 255};
	for (size_t i = 0; i < sizeof(types); i++) {
		struct rk_buf in, out;
		rk_buf_init(&in);
		rk_buf_init(&out);
		add(&in, fb_request, sizeof(fb_request));
		add(&in, &types[i], 1);
		add(&in, key_event, sizeof(key_event));
		struct rk_rfb_filter f;
		CHECK_EQ_INT(feed(&in, 0, &out, &f), -1);
		/* what came before the bad message went through, nothing after it */
		CHECK_EQ_INT(out.len, sizeof(fb_request));
		rk_buf_release(&in);
		rk_buf_release(&out);
	}
}

TEST(view_filter_drops_a_key_event_split_across_reads)
{
	struct rk_rfb_filter f;
	rk_rfb_filter_init(&f);
	struct rk_buf out;
	rk_buf_init(&out);
	CHECK_EQ_INT(rk_rfb_filter_feed(&f, key_event, 3, &out), 0);
	CHECK_EQ_INT(rk_rfb_filter_feed(&f, key_event + 3, 5, &out), 0);
	CHECK_EQ_INT(rk_rfb_filter_feed(&f, fb_request, 10, &out), 0);
	CHECK_EQ_INT(out.len, 10);
	CHECK(out.len == 10 && out.data[0] == 3);
	rk_buf_release(&out);
}

TEST(tokens_malformed_or_unknown_are_401)
{
	char tmpl[] = "/tmp/rk-gateway-XXXXXX";
	char *dir = mkdtemp(tmpl);
	REQUIRE(dir != NULL);
	setenv("RAKAZO_DATA_DIR", dir, 1);
	struct rk_engine *eng = NULL;
	struct rk_error e;
	REQUIRE(rk_engine_open(&eng, &e) == 0);
	struct rk_gateway_cap cap;
	const char *bad[] = {"", "short", "not a token at all, with spaces and more than forty-three chars",
			     "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA!", NULL};
	for (int i = 0; bad[i]; i++) {
		CHECK_EQ_INT(rk_gateway_authorize(eng, bad[i], &cap, &e), -RK_EDENIED);
		CHECK_EQ_INT(rk_gateway_http_status(e.code), 401);
	}
	/* well formed, never issued */
	CHECK_EQ_INT(rk_gateway_authorize(eng, "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", &cap, &e), -RK_EDENIED);
	CHECK_EQ_INT(rk_gateway_http_status(RK_ESTALE), 403);
	int count = -1;
	struct rk_actor a;
	REQUIRE(rk_actor_resolve(&a, eng, NULL, NULL, &e) == 0);
	struct rk_gateway_scope sc = {.actor = &a};
	CHECK_EQ_INT(rk_gateway_revoke(eng, &sc, "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", 0, &count, &e), -RK_ENOTFOUND);
	CHECK_EQ_INT(rk_gateway_revoke(eng, &sc, "cap_nosuch", 0, &count, &e), -RK_ENOTFOUND);
	CHECK_EQ_INT(rk_gateway_revoke(eng, &sc, NULL, 1, &count, &e), 0);
	CHECK_EQ_INT(count, 0);
	rk_actor_release(&a);
	rk_engine_free(eng);
	rk_fs_remove_tree(dir, &e);
}

static void ws_of(const char *page, const char *want)
{
	struct rk_error e;
	char *got = rk_upstream_from_novnc(page, &e);
	CHECK_EQ_STR(got ? got : "(null)", want);
	free(got);
}

TEST(novnc_page_maps_to_the_websockify_address_its_page_would_use)
{
	ws_of("http://127.0.0.1:4321/vnc.html?_token=abc", "ws://127.0.0.1:4321/websockify?_token=abc");
	ws_of("https://box-x-6080.on.ascii.dev/vnc.html?_token=abc&autoconnect=1",
	      "wss://box-x-6080.on.ascii.dev/websockify?_token=abc&autoconnect=1");
	ws_of("HTTPS://h/vnc.html?path=ws%2Fproxy&_token=t", "wss://h/ws/proxy?path=ws%2Fproxy&_token=t");
	ws_of("http://u:p@h:81/a/vnc.html", "ws://h:81/websockify");
	ws_of("http://[::1]:5/vnc.html?x=1", "ws://[::1]:5/websockify?x=1");
	ws_of("http://h/vnc.html?_token=t#frag", "ws://h/websockify?_token=t");
	ws_of("http://h", "ws://h/websockify");
	const char *bad[] = {"ftp://h/vnc.html?_token=secret", "vnc.html?_token=secret", "http://:80/?_token=secret",
			     "http://h:99999/?_token=secret", "http://h:8x/?_token=secret", NULL};
	for (int i = 0; bad[i]; i++) {
		struct rk_error e;
		char *got = rk_upstream_from_novnc(bad[i], &e);
		CHECK(got == NULL);
		free(got);
		CHECK_EQ_INT(e.code, RK_EINVALID);
		CHECK(strstr(e.message, "secret") == NULL);
	}
	char *pub = rk_upstream_public("wss://h:1/websockify?_token=secret#x");
	CHECK_EQ_STR(pub, "wss://h:1/websockify");
	free(pub);
}

/* A loopback TCP socket on a free port: listening (it takes connections
 * and never answers) or closed again (connections are refused). */
static int loopback_port(int keep_listening, int *fd)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(sa);
	*fd = socket(AF_INET, SOCK_STREAM, 0);
	if (*fd < 0 || bind(*fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 || listen(*fd, 4) != 0 ||
	    getsockname(*fd, (struct sockaddr *)&sa, &len) != 0)
		return -1;
	if (!keep_listening) {
		close(*fd);
		*fd = -1;
	}
	return ntohs(sa.sin_port);
}

TEST(upstream_refused_or_silent_is_unavailable_and_names_no_secret)
{
	int fd = -1;
	int port = loopback_port(0, &fd);
	REQUIRE(port > 0);
	char *url = rk_xasprintf("ws://127.0.0.1:%d/websockify?_token=secret", port);
	char *pub = rk_xasprintf("ws://127.0.0.1:%d/websockify", port);
	struct rk_upstream *u = NULL;
	struct rk_error e;
	CHECK_EQ_INT(rk_upstream_open(url, 5000, &u, &e), -RK_EUNAVAILABLE);
	CHECK(u == NULL);
	CHECK(strstr(e.message, "cannot reach") != NULL);
	CHECK(strstr(e.message, pub) != NULL);
	CHECK(strstr(e.message, "secret") == NULL);
	CHECK_EQ_INT(rk_upstream_probe(url, 5000, &e), -RK_EUNAVAILABLE);
	free(url);
	free(pub);
	port = loopback_port(1, &fd);
	REQUIRE(port > 0);
	url = rk_xasprintf("ws://127.0.0.1:%d/websockify?_token=secret", port);
	CHECK_EQ_INT(rk_upstream_open(url, 1000, &u, &e), -RK_EUNAVAILABLE);
	CHECK(strstr(e.message, "did not answer within 1 s") != NULL);
	CHECK(strstr(e.message, "secret") == NULL);
	close(fd);
	free(url);
	CHECK_EQ_INT(rk_upstream_open("http://h/websockify", 1000, &u, &e), -RK_EINVALID);
	rk_upstream_free(NULL);
}

int main(void)
{
	rk_engine_hooks_init();
	RUN(view_filter_passes_what_a_viewer_needs_and_drops_input);
	RUN(view_filter_refuses_unknown_messages);
	RUN(view_filter_drops_a_key_event_split_across_reads);
	RUN(tokens_malformed_or_unknown_are_401);
	RUN(novnc_page_maps_to_the_websockify_address_its_page_would_use);
	RUN(upstream_refused_or_silent_is_unavailable_and_names_no_secret);
	return check_summary("gateway");
}
