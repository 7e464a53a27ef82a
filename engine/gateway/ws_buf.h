#ifndef RK_WS_BUF_H
#define RK_WS_BUF_H
/* Byte buffers bound for lws_write: LWS_PRE bytes of headroom in front of
 * the data, so libwebsockets can put a frame header there without a copy.
 * The screen gateway's server side (gateway_server.c) and its WebSocket
 * upstreams (gateway_upstream.c) queue through them. */

#include <stddef.h>

#include "engine/util/buf.h"

struct lws;

/* Appends len bytes (adding the headroom first when b is empty). */
void rk_ws_buf_add(struct rk_buf *b, const void *data, size_t len);
/* Queues len bytes read from connection from for connection to (NULL: not
 * there yet): asks to for a writable callback, and pauses reading from once
 * more than RK_WS_PAUSE_BYTES wait (the writer resumes it). */
void rk_ws_buf_queue(struct rk_buf *b, const void *in, size_t len, struct lws *from, struct lws *to);
/* Bytes of data queued (the headroom not counted). */
size_t rk_ws_buf_len(const struct rk_buf *b);
/* From a writable callback: sends the data past *sent as one binary message
 * of at most RK_WS_CHUNK bytes. 1: more remains (another writable callback
 * is asked for), 0: all of it is sent (b is emptied, *sent is 0), -1: the
 * write failed (close the connection). */
int rk_ws_buf_send(struct lws *wsi, struct rk_buf *b, size_t *sent);

/* From a raw connection's writable callback: writes all of b's data (lws
 * keeps what the socket would not take and sends it first) and empties b.
 * 1: something was written, 0: nothing was queued, -1: the write failed. */
int rk_ws_buf_send_raw(struct lws *wsi, struct rk_buf *b);

#define RK_WS_CHUNK (256 * 1024)
#define RK_WS_PAUSE_BYTES (1 << 20)

#endif
