#include "engine/screen/rfb.h"

#include <string.h>

enum {
	MSG_SET_PIXEL_FORMAT = 0,
	MSG_SET_ENCODINGS = 2,
	MSG_FB_UPDATE_REQUEST = 3,
	MSG_KEY_EVENT = 4,
	MSG_POINTER_EVENT = 5,
	MSG_CLIENT_CUT_TEXT = 6,
};

void rk_rfb_filter_init(struct rk_rfb_filter *f)
{
	memset(f, 0, sizeof(*f));
}

/* The fixed header length of a message type, 0 for a type we refuse. */
static size_t header_len(uint8_t type)
{
	switch (type) {
	case MSG_SET_PIXEL_FORMAT:
		return 20;
	case MSG_SET_ENCODINGS:
		return 4;
	case MSG_FB_UPDATE_REQUEST:
		return 10;
	case MSG_KEY_EVENT:
		return 8;
	case MSG_POINTER_EVENT:
		return 6;
	case MSG_CLIENT_CUT_TEXT:
		return 8;
	default:
		return 0;
	}
}

/* Once the header is whole: how much body follows and whether it passes. */
static void decide(struct rk_rfb_filter *f)
{
	uint8_t type = f->hdr[0];
	f->body = 0;
	f->pass = type == MSG_SET_PIXEL_FORMAT || type == MSG_SET_ENCODINGS || type == MSG_FB_UPDATE_REQUEST;
	if (type == MSG_SET_ENCODINGS) {
		f->body = 4ull * (((uint32_t)f->hdr[2] << 8) | f->hdr[3]);
	} else if (type == MSG_CLIENT_CUT_TEXT) {
		/* a negative length is the extended clipboard's (its size is |len|) */
		int32_t len = (int32_t)(((uint32_t)f->hdr[4] << 24) | ((uint32_t)f->hdr[5] << 16) |
					((uint32_t)f->hdr[6] << 8) | f->hdr[7]);
		f->body = len < 0 ? (uint64_t)(-(int64_t)len) : (uint64_t)len;
	}
	if (!f->pass)
		f->dropped++;
}

int rk_rfb_filter_feed(struct rk_rfb_filter *f, const uint8_t *in, size_t n, struct rk_buf *out)
{
	size_t i = 0;
	while (i < n) {
		if (!f->in_message) {
			if (f->hlen == 0 && header_len(in[i]) == 0)
				return -1;
			size_t want = header_len(f->hlen ? f->hdr[0] : in[i]);
			size_t take = want - f->hlen;
			if (take > n - i)
				take = n - i;
			memcpy(f->hdr + f->hlen, in + i, take);
			f->hlen += take;
			i += take;
			if (f->hlen < want)
				break;
			decide(f);
			if (f->pass)
				rk_buf_add(out, f->hdr, f->hlen);
			f->in_message = 1;
		}
		size_t take = f->body < (uint64_t)(n - i) ? (size_t)f->body : n - i;
		if (take && f->pass)
			rk_buf_add(out, in + i, take);
		f->body -= take;
		i += take;
		if (f->body == 0) {
			f->in_message = 0;
			f->hlen = 0;
		}
	}
	/* a header-only message that ended exactly at the input's end */
	if (f->in_message && f->body == 0) {
		f->in_message = 0;
		f->hlen = 0;
	}
	return 0;
}
