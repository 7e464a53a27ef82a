#ifndef RK_RFB_H
#define RK_RFB_H
/* The RFB (VNC) client-to-server message stream, read message by message so
 * that a view-only relay passes what a viewer needs and drops what would
 * reach the desktop: SetPixelFormat, SetEncodings and
 * FramebufferUpdateRequest go through; KeyEvent, PointerEvent and
 * ClientCutText are dropped whole; any other message ends the connection,
 * since its length cannot be known and guessing would let the stream slip
 * out of step with the server's reading of it (RFC 6143 section 7.5). */

#include <stddef.h>
#include <stdint.h>

#include "engine/util/buf.h"

struct rk_rfb_filter {
	uint8_t hdr[20];  /* the message's fixed header, as far as read */
	size_t hlen;	  /* bytes of hdr read */
	uint64_t body;	  /* bytes of the current message still to come after hdr */
	int pass;	  /* the current message goes through (else dropped) */
	int in_message;	  /* hdr is complete and body is being streamed */
	uint64_t dropped; /* input messages dropped so far */
};
void rk_rfb_filter_init(struct rk_rfb_filter *f);
/* Feeds n client bytes (after ClientInit); appends what may go to the
 * server to out. -1 on a message type a viewer has no business sending
 * (the relay must close), else 0. */
int rk_rfb_filter_feed(struct rk_rfb_filter *f, const uint8_t *in, size_t n, struct rk_buf *out);

#endif
