#include "engine/gateway/ws_buf.h"

#include <libwebsockets.h>
#include <string.h>

void rk_ws_buf_add(struct rk_buf *b, const void *data, size_t len)
{
	if (b->len == 0) {
		rk_buf_grow(b, LWS_PRE + len);
		memset(b->data, 0, LWS_PRE);
		b->len = LWS_PRE;
	}
	rk_buf_add(b, data, len);
}

void rk_ws_buf_queue(struct rk_buf *b, const void *in, size_t len, struct lws *from, struct lws *to)
{
	rk_ws_buf_add(b, in, len);
	if (to)
		lws_callback_on_writable(to);
	if (rk_ws_buf_len(b) > RK_WS_PAUSE_BYTES)
		lws_rx_flow_control(from, 0);
}

size_t rk_ws_buf_len(const struct rk_buf *b)
{
	return b->len > LWS_PRE ? b->len - LWS_PRE : 0;
}

int rk_ws_buf_send(struct lws *wsi, struct rk_buf *b, size_t *sent)
{
	if (rk_ws_buf_len(b) <= *sent)
		return 0;
	/* one bounded message per writable turn: a bigger one would be copied
	 * again into lws's own buffer for the partial send. The LWS_PRE bytes
	 * before each piece are the reserved ones or already sent, so lws may
	 * write its header there. */
	size_t n = rk_ws_buf_len(b) - *sent;
	if (n > RK_WS_CHUNK)
		n = RK_WS_CHUNK;
	unsigned char *p = (unsigned char *)b->data + LWS_PRE + *sent;
	if (lws_write(wsi, p, n, LWS_WRITE_BINARY) < (int)n)
		return -1;
	*sent += n;
	if (rk_ws_buf_len(b) > *sent) {
		lws_callback_on_writable(wsi);
		return 1;
	}
	b->len = LWS_PRE;
	*sent = 0;
	return 0;
}

int rk_ws_buf_send_raw(struct lws *wsi, struct rk_buf *b)
{
	size_t n = rk_ws_buf_len(b);
	if (!n)
		return 0;
	if (lws_write(wsi, (unsigned char *)b->data + LWS_PRE, n, LWS_WRITE_RAW) < (int)n)
		return -1;
	b->len = LWS_PRE;
	return 1;
}
