/* Screenshots sent once (model.h has the wire format): each image of a
 * conversation goes up through its vendor's Files API before the first
 * request that carries it, and the request builders (model_messages.c,
 * model_responses.c) refer to it by id from then on. A kept screenshot
 * rides in every request until it is pruned (up to keep_images +
 * prune_block of them), so inline its bytes would cross the wire that many
 * times; uploaded, once. Files no image refers to any more are deleted.
 * Everything here is best effort: an image that could not be uploaded is
 * sent inline, and an endpoint without the API (a proxy, a local server)
 * turns uploads off for the conversation. Above model.c, below
 * model_call.c, which calls in before building each request. */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/agent/model.h"
#include "engine/agent/model_wire.h"
#include "engine/util/buf.h"
#include "engine/util/http.h"
#include "engine/util/id.h"
#include "engine/util/json.h"
#include "engine/util/log.h"

#define FILES_BETA "files-api-2025-04-14"
#define FILES_PURPOSE "vision" /* openai FilePurpose: images */
#define ANSWER_MAX (1u << 20)
#define ID_MAX 200

static int files_api(const struct rk_model_config *cfg)
{
	return cfg->upload_images && (cfg->api == RK_MODEL_API_MESSAGES || cfg->api == RK_MODEL_API_RESPONSES);
}

/* The headers of a Files API call (the key's included: wipe and free them
 * with headers_free); NULL-terminated. */
static void headers_fill(const struct rk_model_config *cfg, char *h[5])
{
	int n = 0;
	memset(h, 0, 5 * sizeof(*h));
	h[n++] = rk_xstrdup("Accept: application/json");
	if (cfg->api == RK_MODEL_API_MESSAGES) {
		h[n++] = rk_xstrdup("anthropic-version: " RK_MODEL_ANTHROPIC_VERSION);
		h[n++] = rk_xstrdup("anthropic-beta: " FILES_BETA);
		if (cfg->api_key && *cfg->api_key)
			h[n++] = rk_xasprintf("x-api-key: %s", cfg->api_key);
	} else if (cfg->api_key && *cfg->api_key) {
		h[n++] = rk_xasprintf("Authorization: Bearer %s", cfg->api_key);
	}
}

static void headers_free(char *h[5])
{
	for (int i = 0; i < 5; i++) {
		if (h[i]) {
			memset(h[i], 0, strlen(h[i]));
			free(h[i]);
		}
	}
}

/* An id from the server goes into a URL path and a request body: only
 * the characters the vendors use. */
static int id_ok(const char *id)
{
	size_t n = id ? strlen(id) : 0;
	return n > 0 && n <= ID_MAX &&
	       strspn(id, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-") == n;
}

static void server_words(const struct rk_http_response *r, struct rk_buf *out)
{
	if (r->status)
		rk_model_server_message(r->body.data ? r->body.data : "", r->body.len, out);
	else
		rk_buf_adds(out, r->failure_text ? r->failure_text : "no answer");
}

/* multipart/form-data: a boundary the bytes do not hold, the fields, the file. */
static void multipart(const struct rk_model_config *cfg, const struct rk_model_part *p, struct rk_buf *body,
		      char *boundary, size_t bsize)
{
	for (;;) {
		unsigned char r[12];
		rk_random_bytes(r, sizeof(r));
		int n = snprintf(boundary, bsize, "rakazo-");
		for (size_t i = 0; i < sizeof(r) && (size_t)n + 2 < bsize; i++)
			n += snprintf(boundary + n, bsize - (size_t)n, "%02x", r[i]);
		if (!memmem(p->png, p->png_len, boundary, strlen(boundary)))
			break;
	}
	const char *mime = rk_model_part_mime(p);
	char name[32];
	snprintf(name, sizeof(name), "screenshot-%.12s.%s", p->frame_hash[0] ? p->frame_hash : "frame",
		 !strcmp(mime, "image/jpeg") ? "jpg" : "png");
	if (cfg->api == RK_MODEL_API_RESPONSES)
		rk_buf_printf(body, "--%s\r\nContent-Disposition: form-data; name=\"purpose\"\r\n\r\n%s\r\n", boundary,
			      FILES_PURPOSE);
	rk_buf_printf(body,
		      "--%s\r\nContent-Disposition: form-data; name=\"file\"; filename=\"%s\"\r\nContent-Type: "
		      "%s\r\n\r\n",
		      boundary, name, mime);
	rk_buf_add(body, p->png, p->png_len);
	rk_buf_printf(body, "\r\n--%s--\r\n", boundary);
}

enum upload { UPLOADED, LATER, NO_API, STOPPED };

/* POSTs p's bytes; on UPLOADED p->file_id is set. */
static enum upload upload(const struct rk_model_config *cfg, struct rk_model_part *p, struct rk_buf *why)
{
	struct rk_buf body = RK_BUF_INIT;
	rk_buf_init(&body);
	char boundary[48];
	multipart(cfg, p, &body, boundary, sizeof(boundary));
	char *ctype = rk_xasprintf("multipart/form-data; boundary=%s", boundary);
	char *url = rk_xasprintf("%s/files", cfg->base_url);
	char *h[5];
	headers_fill(cfg, h);
	struct rk_http_request q = {
		RK_HTTP_ONCE,
		.method = "POST",
		.url = url,
		.headers = (const char *const *)h,
		.content_type = ctype,
		.body = body.data,
		.body_len = body.len,
		.timeout_ms = cfg->timeout_ms > 0 ? (int)cfg->timeout_ms : -1,
		.connect_timeout_ms = cfg->connect_timeout_ms > 0 ? (int)cfg->connect_timeout_ms : 300000,
		.mutating = 1,
		.max_response = ANSWER_MAX,
		.cancel = (const volatile int *)cfg->cancel,
		.user_agent = "rakazo/" RK_VERSION,
		.what = "the model endpoint's file upload",
	};
	struct rk_http_response r;
	rk_http_response_init(&r);
	int rc = rk_http_do(&q, &r, NULL);
	enum upload o;
	if (rc < 0 && r.failure == RK_HTTP_FAIL_STOPPED) {
		o = STOPPED;
	} else if (r.status >= 200 && r.status < 300) {
		cJSON *doc = cJSON_ParseWithLength(r.body.data ? r.body.data : "", r.body.len);
		const char *id = rk_json_string(doc, "id", NULL);
		if (id_ok(id)) {
			p->file_id = rk_xstrdup(id);
			o = UPLOADED;
		} else {
			rk_buf_printf(why, "HTTP %ld without a file id: ", r.status);
			rk_model_excerpt(why, r.body.data ? r.body.data : "", r.body.len, 120);
			o = NO_API;
		}
		cJSON_Delete(doc);
	} else {
		if (r.status)
			rk_buf_printf(why, "HTTP %ld: ", r.status);
		server_words(&r, why);
		o = r.status >= 400 && r.status < 500 && r.status != 408 && r.status != 429 ? NO_API : LATER;
	}
	rk_log(RK_LOG_INFO, "model: POST %s: %s, %zu image bytes", url,
	       o == UPLOADED  ? p->file_id
	       : o == STOPPED ? "interrupted"
			      : "not uploaded",
	       p->png_len);
	rk_http_response_release(&r);
	headers_free(h);
	free(url);
	free(ctype);
	rk_buf_release(&body);
	return o;
}

/* DELETEs one file; 0, -1 (logged), or -2 when no answer came. A 404 is
 * as good as deleted. */
static int delete_file(const struct rk_model_config *cfg, const char *id)
{
	char *url = rk_xasprintf("%s/files/%s", cfg->base_url, id);
	char *h[5];
	headers_fill(cfg, h);
	struct rk_http_request q = {
		RK_HTTP_ONCE,
		.method = "DELETE",
		.url = url,
		.headers = (const char *const *)h,
		.timeout_ms = (int)(cfg->connect_timeout_ms + 10000),
		.connect_timeout_ms = (int)cfg->connect_timeout_ms,
		.max_response = ANSWER_MAX,
		.cancel = (const volatile int *)cfg->cancel,
		.user_agent = "rakazo/" RK_VERSION,
		.what = "the model endpoint's file delete",
	};
	struct rk_http_response r;
	rk_http_response_init(&r);
	rk_http_do(&q, &r, NULL);
	int ok = (r.status >= 200 && r.status < 300) || r.status == 404, answered = r.status != 0;
	if (!ok) {
		struct rk_buf b = RK_BUF_INIT;
		rk_buf_init(&b);
		server_words(&r, &b);
		rk_log(RK_LOG_WARN, "model: DELETE %s failed (HTTP %ld: %s); the file stays with the vendor", url,
		       r.status, b.data);
		rk_buf_release(&b);
	}
	rk_http_response_release(&r);
	headers_free(h);
	free(url);
	return ok ? 0 : answered ? -1 : -2;
}

/* An endpoint that does not answer one delete is not asked for the rest
 * (each would wait out the timeout): they stay with the vendor, logged. */
static void delete_stale(const struct rk_model_config *cfg, struct rk_model_conversation *c)
{
	size_t i = 0;
	while (i < c->nstale && delete_file(cfg, c->stale_files[i]) != -2)
		free(c->stale_files[i++]);
	if (i < c->nstale)
		rk_log(RK_LOG_WARN, "model: %zu more uploaded screenshots stay with %s (it does not answer)",
		       c->nstale - i - 1, cfg->base_url);
	for (; i < c->nstale; i++)
		free(c->stale_files[i]);
	c->nstale = 0;
}

/* An image of c already uploaded with the same bytes, or NULL. */
static const char *same_bytes(const struct rk_model_conversation *c, const struct rk_model_part *p)
{
	for (size_t i = 0; i < c->n; i++)
		for (size_t k = 0; k < c->msgs[i]->nparts; k++) {
			const struct rk_model_part *o = &c->msgs[i]->parts[k];
			if (o != p && o->kind == RK_MODEL_IMAGE && o->file_id && o->png_len == p->png_len &&
			    !strcmp(o->mime, p->mime) && !memcmp(o->png, p->png, p->png_len))
				return o->file_id;
		}
	return NULL;
}

int rk_model_files_prepare(const struct rk_model_config *cfg, struct rk_model_conversation *c, struct rk_error *err)
{
	if (c->nstale && cfg->base_url)
		delete_stale(cfg, c);
	if (!files_api(cfg) || c->files_off || !cfg->base_url)
		return 0;
	for (size_t i = 0; i < c->n; i++) {
		struct rk_model_message *m = c->msgs[i];
		for (size_t k = 0; k < m->nparts; k++) {
			struct rk_model_part *p = &m->parts[k];
			if (p->kind != RK_MODEL_IMAGE || p->file_id || !p->png_len)
				continue;
			const char *same = same_bytes(c, p);
			if (same) {
				p->file_id = rk_xstrdup(same);
				continue;
			}
			struct rk_buf why = RK_BUF_INIT;
			rk_buf_init(&why);
			enum upload o = upload(cfg, p, &why);
			if (o == NO_API) {
				c->files_off = 1;
				rk_log(RK_LOG_WARN,
				       "model: %s/files did not take a screenshot (%s): the endpoint has no Files "
				       "API, so screenshots go inline for the rest of the run (upload_images false "
				       "in the config file skips the try)",
				       cfg->base_url, why.data);
			} else if (o == LATER) {
				rk_log(RK_LOG_WARN,
				       "model: uploading a screenshot to %s/files failed (%s): it goes inline",
				       cfg->base_url, why.data);
			}
			rk_buf_release(&why);
			if (o == STOPPED)
				return rk_error_set(err, RK_EINTERRUPTED, "the model call was interrupted");
			if (o != UPLOADED)
				return 0; /* the rest inline this turn */
		}
	}
	return 0;
}

int rk_model_files_forget(struct rk_model_conversation *c)
{
	int n = 0;
	for (size_t i = 0; i < c->n; i++)
		for (size_t k = 0; k < c->msgs[i]->nparts; k++) {
			struct rk_model_part *p = &c->msgs[i]->parts[k];
			if (!p->file_id)
				continue;
			n++;
			char *id = p->file_id;
			p->file_id = NULL;
			int listed = 0;
			for (size_t s = 0; s < c->nstale && !listed; s++)
				listed = !strcmp(c->stale_files[s], id);
			if (listed) {
				free(id);
				continue;
			}
			c->stale_files = rk_xrealloc(c->stale_files, (c->nstale + 1) * sizeof(*c->stale_files));
			c->stale_files[c->nstale++] = id;
		}
	c->files_off = 1;
	return n;
}

void rk_model_files_end(const struct rk_model_config *cfg, struct rk_model_conversation *c)
{
	if (!c)
		return;
	int off = c->files_off;
	rk_model_files_forget(c);
	c->files_off = off;
	if (cfg && cfg->base_url && c->nstale) {
		/* cancel may be set already (a cancelled run): these are quick and
		 * still worth sending */
		struct rk_model_config quiet = *cfg;
		quiet.cancel = NULL;
		delete_stale(&quiet, c);
	}
	for (size_t i = 0; i < c->nstale; i++)
		free(c->stale_files[i]);
	c->nstale = 0;
}

/* The beta a request needs when it refers to uploaded files (messages). */
int rk_model_files_http(const struct rk_model_config *cfg, const struct rk_model_conversation *c,
			struct rk_model_http *h)
{
	if (cfg->api != RK_MODEL_API_MESSAGES)
		return 0;
	int refs = 0;
	for (size_t i = 0; i < c->n && !refs; i++)
		for (size_t k = 0; k < c->msgs[i]->nparts; k++)
			refs |= c->msgs[i]->parts[k].kind == RK_MODEL_IMAGE && c->msgs[i]->parts[k].file_id != NULL;
	if (!refs)
		return 0;
	size_t n = 0;
	for (; h->headers[n]; n++) {
		if (!strncmp(h->headers[n], "anthropic-beta: ", 16)) {
			char *joined = rk_xasprintf("%s," FILES_BETA, h->headers[n]);
			free(h->headers[n]);
			h->headers[n] = joined;
			return 1;
		}
	}
	if (n + 1 < sizeof(h->headers) / sizeof(h->headers[0]))
		h->headers[n] = rk_xstrdup("anthropic-beta: " FILES_BETA);
	return 1;
}
