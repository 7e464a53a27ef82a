/* The S3-compatible home store (see home.h for the interface and
 * home_manifest.h for the revision format it shares with the local store).
 *
 * In the bucket, under the prefix:
 *   objects/<sha256>             file contents, shared by every revision and
 *                                every home (content-addressed: a file
 *                                already there is never uploaded again)
 *   homes/<key>/revs/<revision>  a JSON header line, then the manifest
 *   homes/<key>/latest           the id of the latest revision
 *
 * Crash safety: every object a manifest names is uploaded (and, for a
 * multipart upload, completed) before the manifest, and the manifest before
 * `latest`, so a kill at any point leaves the previous latest and all its
 * objects in place. What a kill leaves over (objects no manifest names, an
 * unfinished multipart upload) is garbage for gc (and the bucket's lifecycle
 * rule for stale multipart uploads). Restores download into a staging dir
 * beside the destination, check every object's sha256, and swap it in.
 *
 * Writers on this host are serialized by the home's lock (the local
 * store's) and an objects lock under DATA_DIR/home-s3/;
 * S3 offers no lock, so two hosts must not checkpoint one home at once (the
 * computer's lease already keeps that so) and gc must not run while another
 * host checkpoints.
 *
 * Requests are signed by libcurl (AWS SigV4, path-style URLs); the secret
 * key goes only to libcurl and is never logged or put into a message. */

#include "engine/store/workspace.h"
#include "engine/store/manifest.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/util/buf.h"
#include "engine/util/fs.h"
#include "engine/util/http.h"
#include "engine/util/id.h"
#include "engine/util/log.h"
#include "engine/util/time.h"

#define MULTIPART_MIN (16LL << 20) /* files this big go up in parts */
#define PART_SIZE (8LL << 20)
#define HEADER_RANGE 4096	    /* a revision's header line fits in this */
#define LIST_PAGES_FIRST 20	    /* a first checkpoint lists up to this many pages of objects */
#define UPLOAD_THREADS 4	    /* small files go up this many at a time */
#define UPLOAD_INFLIGHT (64u << 20) /* at most this much file content waits for them */

struct s3 {
	struct rk_workspace_store base;
	char *url, *endpoint, *bucket, *prefix; /* prefix: "" or "a/b/" */
	char *sigv4, *userpwd, *token;
	char *data_dir, *locks;
	pthread_mutex_t stats_mu; /* uploads run on threads */
	struct rk_workspace_s3_stats stats;
};

static const char empty_sha[] = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

/* --- requests ------------------------------------------------------------------- */

struct s3_req {
	const char *method;
	char *key;	   /* the object key below the prefix ("objects/..."); NULL: the bucket */
	const char *query; /* already canonical: sorted, escaped, "name=" for flags */
	const void *body;
	size_t len;
	const char *range;
	size_t max_response;
	int (*on_data)(void *ctx, const void *data, size_t len);
	void *ctx;
};

/* The bucket-relative URL path of key, each segment escaped. */
static void add_path(struct rk_buf *b, const char *full)
{
	const char *p = full;
	while (*p) {
		const char *slash = strchr(p, '/');
		size_t n = slash ? (size_t)(slash - p) : strlen(p);
		char *seg = rk_xstrndup(p, n);
		char *esc = rk_http_escape(seg);
		rk_buf_adds(b, esc);
		free(esc);
		free(seg);
		if (!slash)
			break;
		rk_buf_addc(b, '/');
		p = slash + 1;
	}
}

/* An XML element's text (the first after *from), entities decoded; malloc'd or NULL. */
static char *xml_text(const char *xml, size_t len, const char *tag, const char **from)
{
	char open[64], close[64];
	snprintf(open, sizeof(open), "<%s>", tag);
	snprintf(close, sizeof(close), "</%s>", tag);
	const char *end = xml + len;
	const char *start = from && *from ? *from : xml;
	const char *a = memmem(start, (size_t)(end - start), open, strlen(open));
	if (!a)
		return NULL;
	a += strlen(open);
	const char *b = memmem(a, (size_t)(end - a), close, strlen(close));
	if (!b)
		return NULL;
	if (from)
		*from = b + strlen(close);
	struct rk_buf out;
	rk_buf_init(&out);
	static const char *const ent[][2] = {{"&amp;", "&"},  {"&lt;", "<"},   {"&gt;", ">"}, {"&quot;", "\""},
					     {"&apos;", "'"}, {"&#34;", "\""}, {"&#39;", "'"}};
	for (const char *p = a; p < b;) {
		size_t k = 0;
		if (*p == '&')
			for (; k < sizeof(ent) / sizeof(ent[0]); k++)
				if (!strncmp(p, ent[k][0], strlen(ent[k][0])))
					break;
		if (*p == '&' && k < sizeof(ent) / sizeof(ent[0])) {
			rk_buf_adds(&out, ent[k][1]);
			p += strlen(ent[k][0]);
		} else {
			rk_buf_addc(&out, *p++);
		}
	}
	return rk_buf_detach(&out, NULL);
}

static void count(struct s3 *s, const struct s3_req *q)
{
	const char *m = q->method;
	int object = q->key && !strncmp(q->key, "objects/", 8);
	pthread_mutex_lock(&s->stats_mu);
	if (!strcmp(m, "PUT") && object && q->query) {
		s->stats.parts++;
		s->stats.bytes_uploaded += (int64_t)q->len;
	} else if (!strcmp(m, "PUT") && object) {
		s->stats.object_puts++;
		s->stats.bytes_uploaded += (int64_t)q->len;
	} else if (!strcmp(m, "PUT")) {
		s->stats.other_puts++;
	} else if (!strcmp(m, "HEAD")) {
		s->stats.heads++;
	} else if (!strcmp(m, "GET") && !q->key) {
		s->stats.lists++;
	} else if (!strcmp(m, "GET")) {
		s->stats.gets++;
	} else if (!strcmp(m, "DELETE")) {
		s->stats.deletes++;
	} else if (!strcmp(m, "POST")) {
		s->stats.posts++;
	}
	pthread_mutex_unlock(&s->stats_mu);
}

/* One signed request. resp is initialized here; the caller releases it.
 * Errors name the method and the object key and carry S3's own code. */
static int s3_do(struct s3 *s, const struct s3_req *q, struct rk_http_response *resp, struct rk_error *err)
{
	rk_http_response_init(resp);
	struct rk_buf url;
	rk_buf_init(&url);
	rk_buf_printf(&url, "%s/%s", s->endpoint, s->bucket);
	char *full = q->key ? rk_xasprintf("%s%s", s->prefix, q->key) : NULL;
	if (full) {
		rk_buf_addc(&url, '/');
		add_path(&url, full);
	}
	if (q->query)
		rk_buf_printf(&url, "?%s", q->query);
	char sha[65];
	if (q->body && q->len)
		rk_sha256_hex(q->body, q->len, sha);
	else
		memcpy(sha, empty_sha, 65);
	char *h_sha = rk_xasprintf("x-amz-content-sha256: %s", sha);
	char *h_range = q->range ? rk_xasprintf("Range: %s", q->range) : NULL;
	char *h_token = s->token ? rk_xasprintf("x-amz-security-token: %s", s->token) : NULL;
	const char *headers[4] = {h_sha, NULL, NULL, NULL};
	size_t nh = 1;
	if (h_range)
		headers[nh++] = h_range;
	if (h_token)
		headers[nh++] = h_token;
	char *what = rk_xasprintf("s3 %s %s", q->method, full ? full : s->bucket);
	struct rk_http_request req = {
		.method = q->method,
		.url = url.data,
		.headers = headers,
		.content_type = "application/octet-stream",
		.body = q->body,
		.body_len = q->len,
		.timeout_ms = 300000,
		.max_response = q->max_response ? q->max_response : (16u << 20),
		.what = what,
		.on_data = q->on_data,
		.on_data_ctx = q->ctx,
		.aws_sigv4 = s->sigv4,
		.userpwd = s->userpwd,
	};
	count(s, q);
	int r = rk_http_do(&req, resp, err);
	if (r && resp->status >= 400) {
		char *code = xml_text(resp->body.data, resp->body.len, "Code", NULL);
		char *msg = xml_text(resp->body.data, resp->body.len, "Message", NULL);
		const char *hint = resp->status == 403
					   ? ": check AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and the bucket's policy"
				   : code && !strcmp(code, "NoSuchBucket")
					   ? ": create the bucket or fix RAKAZO_HOME_STORE"
					   : "";
		if (code || resp->status != 404)
			rk_error_set(err, rk_http_status_code(resp->status), "%s: %s%s%s (HTTP %ld)%s", what,
				     code ? code : "error", msg ? ": " : "", msg ? msg : "", resp->status, hint);
		free(code);
		free(msg);
	} else if (r && resp->status == 0 && rk_err(err)->code != RK_EINTERRUPTED) {
		rk_error_prefix(err, "the S3 endpoint %s", s->endpoint);
	}
	free(what);
	free(h_sha);
	free(h_range);
	free(h_token);
	free(full);
	rk_buf_release(&url);
	return r;
}

/* GET key into out (at most max bytes); RK_ENOTFOUND when absent. */
static int s3_get(struct s3 *s, char *key, const char *range, size_t max, struct rk_buf *out, struct rk_error *err)
{
	struct s3_req q = {.method = "GET", .key = key, .range = range, .max_response = max};
	struct rk_http_response resp;
	int r = s3_do(s, &q, &resp, err);
	if (r == 0) {
		rk_buf_add(out, resp.body.data, resp.body.len);
		if (!out->data)
			rk_buf_adds(out, "");
	}
	rk_http_response_release(&resp);
	return r;
}

static int s3_put(struct s3 *s, char *key, const void *data, size_t len, struct rk_error *err)
{
	struct s3_req q = {.method = "PUT", .key = key, .body = data ? data : "", .len = len};
	struct rk_http_response resp;
	int r = s3_do(s, &q, &resp, err);
	rk_http_response_release(&resp);
	return r;
}

static int s3_delete(struct s3 *s, char *key, struct rk_error *err)
{
	struct s3_req q = {.method = "DELETE", .key = key};
	struct rk_http_response resp;
	int r = s3_do(s, &q, &resp, err);
	rk_http_response_release(&resp);
	return r == -RK_ENOTFOUND ? 0 : r;
}

/* 1 when key exists with size bytes (size < 0: any), 0 when not, < 0 on error. */
static int s3_head(struct s3 *s, char *key, int64_t size, struct rk_error *err)
{
	struct s3_req q = {.method = "HEAD", .key = key};
	struct rk_http_response resp;
	int r = s3_do(s, &q, &resp, err);
	long long len = resp.content_length;
	rk_http_response_release(&resp);
	if (r == -RK_ENOTFOUND)
		return 0;
	if (r)
		return r;
	return size < 0 || len == size;
}

/* Keys (below the prefix) and sizes under a prefix, through every page (at
 * most max_pages; *truncated says when more were left). */
struct listing {
	char **keys;
	int64_t *sizes;
	size_t n, cap;
	int truncated;
};

static void listing_release(struct listing *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->keys[i]);
	free(l->keys);
	free(l->sizes);
	memset(l, 0, sizeof(*l));
}

static int s3_list(struct s3 *s, const char *under, int max_pages, struct listing *out, struct rk_error *err)
{
	memset(out, 0, sizeof(*out));
	char *full = rk_xasprintf("%s%s", s->prefix, under);
	char *pfx = rk_http_escape(full);
	char *token = NULL;
	int r = 0;
	for (int page = 0; !max_pages || page < max_pages; page++) {
		char *tok = token ? rk_http_escape(token) : NULL;
		/* canonical order: continuation-token < list-type < prefix */
		char *query = tok ? rk_xasprintf("continuation-token=%s&list-type=2&prefix=%s", tok, pfx)
				  : rk_xasprintf("list-type=2&prefix=%s", pfx);
		free(tok);
		struct s3_req q = {.method = "GET", .query = query, .max_response = 64u << 20};
		struct rk_http_response resp;
		r = s3_do(s, &q, &resp, err);
		free(query);
		if (r) {
			rk_http_response_release(&resp);
			break;
		}
		const char *xml = resp.body.data ? resp.body.data : "";
		size_t len = resp.body.len;
		const char *at = xml;
		char *item;
		while ((item = xml_text(xml, len, "Contents", &at))) {
			char *key = xml_text(item, strlen(item), "Key", NULL);
			char *size = xml_text(item, strlen(item), "Size", NULL);
			if (key && strlen(key) >= strlen(s->prefix) && !strncmp(key, s->prefix, strlen(s->prefix))) {
				if (out->n == out->cap) {
					out->cap = out->cap ? out->cap * 2 : 256;
					out->keys = rk_xrealloc(out->keys, out->cap * sizeof(*out->keys));
					out->sizes = rk_xrealloc(out->sizes, out->cap * sizeof(*out->sizes));
				}
				out->keys[out->n] = rk_xstrdup(key + strlen(s->prefix));
				out->sizes[out->n++] = size ? strtoll(size, NULL, 10) : -1;
			}
			free(key);
			free(size);
			free(item);
		}
		char *trunc = xml_text(xml, len, "IsTruncated", NULL);
		free(token);
		token = trunc && !strcmp(trunc, "true") ? xml_text(xml, len, "NextContinuationToken", NULL) : NULL;
		free(trunc);
		rk_http_response_release(&resp);
		if (!token)
			break;
	}
	out->truncated = token != NULL;
	free(token);
	free(pfx);
	free(full);
	if (r)
		listing_release(out);
	return r;
}

/* --- paths, locks ---------------------------------------------------------------- */

static char *object_key(const char *hex)
{
	return rk_xasprintf("objects/%s", hex);
}

static char *rev_key(const char *key, const char *rev)
{
	return rk_xasprintf("homes/%s/revs/%s", key, rev);
}

static char *latest_key(const char *key)
{
	return rk_xasprintf("homes/%s/latest", key);
}

static int lock_file(struct s3 *s, const char *name, int how, struct rk_error *err)
{
	int r = rk_fs_mkdirs(s->locks, 0700, err);
	if (r)
		return r;
	char *p = rk_path_join(s->locks, name);
	r = rk_workspace_take_lock(p, how, err);
	free(p);
	return r;
}

/* The home's lock on this host, shared with the local store and
 * rk_workspace_recover, so a restore's staging is never taken for stale. */
static int lock_key(struct s3 *s, const char *key, int how, struct rk_error *err)
{
	return rk_workspace_lock_key(s->data_dir, key, how, err);
}

static void unlock(int fd)
{
	if (fd >= 0)
		close(fd);
}

/* --- revisions -------------------------------------------------------------------- */

static int read_latest_id(struct s3 *s, const char *key, char **out, struct rk_error *err)
{
	struct rk_buf b;
	rk_buf_init(&b);
	char *k = latest_key(key);
	int r = s3_get(s, k, NULL, 256, &b, err);
	free(k);
	if (r == -RK_ENOTFOUND)
		r = rk_error_set(err, RK_ENOTFOUND, "workspace %s has no checkpoint yet", key);
	if (r == 0) {
		b.data[strcspn(b.data, "\n")] = '\0';
		if (!rk_workspace_valid_rev(b.data))
			r = rk_error_set(err, RK_ECORRUPT, "workspace %s: the latest marker is damaged", key);
		else
			*out = rk_buf_detach(&b, NULL);
	}
	rk_buf_release(&b);
	return r;
}

/* Reads revision rev of key (want_entries as rk_manifest_parse: -1 fetches
 * only the header's bytes). */
static int manifest_load(struct s3 *s, const char *key, const char *rev, int want_entries, struct rk_manifest *m,
			 struct rk_error *err)
{
	memset(m, 0, sizeof(*m));
	rk_buf_init(&m->text);
	if (!rk_workspace_valid_rev(rev))
		return rk_error_set(err, RK_ENOTFOUND, "no checkpoint '%s' (see `rakazo checkpoint list`)",
				    rev ? rev : "");
	char *k = rev_key(key, rev);
	char range[40];
	snprintf(range, sizeof(range), "bytes=0-%d", HEADER_RANGE - 1);
	int r = s3_get(s, k, want_entries < 0 ? range : NULL, RK_WORKSPACE_MANIFEST_MAX, &m->text, err);
	if (r == 0 && want_entries < 0 && !memchr(m->text.data, '\n', m->text.len)) {
		rk_buf_reset(&m->text); /* a header longer than the range */
		r = s3_get(s, k, NULL, RK_WORKSPACE_MANIFEST_MAX, &m->text, err);
	}
	free(k);
	if (r == -RK_ENOTFOUND)
		r = rk_error_set(err, RK_ENOTFOUND, "no checkpoint '%s' of workspace %s", rev, key);
	if (r) {
		rk_buf_release(&m->text);
		return r;
	}
	return rk_manifest_parse(m, rev, want_entries, err);
}

/* Revision ids of key (unsorted), from the bucket listing. */
static int rev_ids(struct s3 *s, const char *key, struct listing *l, struct rk_error *err)
{
	char *under = rk_xasprintf("homes/%s/revs/", key);
	int r = s3_list(s, under, 0, l, err);
	if (r == 0) {
		size_t w = 0;
		for (size_t i = 0; i < l->n; i++) {
			const char *id = l->keys[i] + strlen(under);
			if (rk_workspace_valid_rev(id)) {
				char *copy = rk_xstrdup(id);
				free(l->keys[i]);
				l->keys[w++] = copy;
			} else {
				free(l->keys[i]);
			}
		}
		l->n = w;
	}
	free(under);
	return r;
}

static int list_revs(struct s3 *s, const char *key, struct rk_workspace_checkpoint **out, size_t *n,
		     struct rk_error *err)
{
	*out = NULL;
	*n = 0;
	struct listing l;
	int r = rev_ids(s, key, &l, err);
	if (r)
		return r;
	*out = rk_xcalloc(l.n + 1, sizeof(**out));
	for (size_t i = 0; i < l.n; i++) {
		struct rk_manifest m;
		struct rk_error e2;
		int k = manifest_load(s, key, l.keys[i], -1, &m, &e2);
		if (k == -RK_ENOTFOUND)
			continue; /* pruned meanwhile */
		if (k) {
			if (e2.code != RK_ECORRUPT) {
				r = rk_error_set(err, (enum rk_code)e2.code, "%s", e2.message);
				break;
			}
			rk_log(RK_LOG_WARN, "workspace %s: skipping checkpoint %s: %s", key, l.keys[i], e2.message);
			continue;
		}
		rk_manifest_take_meta(&m, &(*out)[(*n)++]);
	}
	listing_release(&l);
	if (r) {
		rk_workspace_checkpoints_free(*out, *n);
		*out = NULL;
		*n = 0;
		return r;
	}
	if (*n)
		qsort(*out, *n, sizeof(**out), rk_workspace_cmp_rev_desc);
	return 0;
}

/* Hashes named by every manifest of every home under the prefix. */
static int collect_refs(struct s3 *s, struct rk_hset *refs, struct rk_error *err)
{
	struct listing l;
	int r = s3_list(s, "homes/", 0, &l, err);
	for (size_t i = 0; r == 0 && i < l.n; i++) {
		char *revs = strstr(l.keys[i], "/revs/");
		if (!revs || !rk_workspace_valid_rev(revs + 6))
			continue;
		char *home = rk_xstrndup(l.keys[i] + 6, (size_t)(revs - l.keys[i] - 6));
		struct rk_manifest m;
		struct rk_error e2;
		int k = manifest_load(s, home, revs + 6, 1, &m, &e2);
		if (k == 0) {
			for (size_t j = 0; j < m.n; j++)
				if (m.e[j].type == 'f')
					rk_hset_add(refs, m.e[j].ref);
			rk_manifest_release(&m);
		} else if (k != -RK_ENOTFOUND && e2.code != RK_ECORRUPT) {
			/* an unreadable manifest may name anything: delete nothing */
			r = rk_error_set(err, (enum rk_code)e2.code, "%s", e2.message);
		}
		free(home);
	}
	listing_release(&l);
	return r;
}

/* Deletes the revisions of key past keep (never latest; keep 0 and latest
 * NULL: all), then the objects only they named. Caller holds key's lock. */
static int prune(struct s3 *s, const char *key, const char *latest, int keep, struct rk_error *err)
{
	struct rk_workspace_checkpoint *revs;
	size_t n;
	int r = list_revs(s, key, &revs, &n, err);
	if (r)
		return r;
	struct rk_hset cand = {0};
	int kept = latest ? 1 : 0;
	for (size_t i = 0; i < n && r == 0; i++) {
		if (latest && !strcmp(revs[i].id, latest))
			continue;
		if (kept < keep) {
			kept++;
			continue;
		}
		struct rk_manifest m;
		if (manifest_load(s, key, revs[i].id, 1, &m, NULL) == 0) {
			for (size_t k = 0; k < m.n; k++)
				if (m.e[k].type == 'f')
					rk_hset_add(&cand, m.e[k].ref);
			rk_manifest_release(&m);
		}
		char *k = rev_key(key, revs[i].id);
		r = s3_delete(s, k, err);
		free(k);
	}
	rk_workspace_checkpoints_free(revs, n);
	if (r || !cand.n) {
		free(cand.k);
		return r;
	}
	/* on this host, no checkpoint reuses an object while we decide */
	int lk = lock_file(s, "objects.lock", LOCK_EX, err);
	if (lk < 0) {
		free(cand.k);
		return lk;
	}
	struct rk_hset refs = {0};
	r = collect_refs(s, &refs, err);
	for (size_t i = 0; r == 0 && i <= cand.mask; i++) {
		if (!cand.k[i][0] || rk_hset_has(&refs, cand.k[i]))
			continue;
		char *k = object_key(cand.k[i]);
		r = s3_delete(s, k, err);
		free(k);
	}
	unlock(lk);
	free(refs.k);
	free(cand.k);
	return r;
}

/* --- objects ------------------------------------------------------------------------- */

struct sink {
	int fd; /* -1: hash only */
	crypto_hash_sha256_state h;
	int64_t n;
	int werr;
};

static int sink_data(void *ctx, const void *data, size_t len)
{
	struct sink *k = ctx;
	crypto_hash_sha256_update(&k->h, data, len);
	k->n += (int64_t)len;
	if (k->fd >= 0 && rk_fs_write_fd(k->fd, data, len) != 0) {
		k->werr = errno ? errno : EIO;
		return -1;
	}
	return 0;
}

/* Downloads object hex (size bytes) into fd (-1: only hashes it) and checks
 * its content against its name: RK_ECORRUPT when it differs, RK_ENOTFOUND
 * when it is missing. */
static int fetch_object(struct s3 *s, const char *hex, int64_t size, int fd, struct rk_error *err)
{
	struct sink k = {.fd = fd};
	crypto_hash_sha256_init(&k.h);
	char *key = object_key(hex);
	struct s3_req q = {.method = "GET", .key = key, .on_data = sink_data, .ctx = &k};
	struct rk_http_response resp;
	int r = s3_do(s, &q, &resp, err);
	rk_http_response_release(&resp);
	free(key);
	if (k.werr)
		return rk_error_errno(err, RK_EIO, k.werr, "cannot write a downloaded object");
	if (r == -RK_ENOTFOUND)
		return rk_error_set(err, RK_ENOTFOUND, "object %.12s is missing from the bucket", hex);
	if (r)
		return r;
	unsigned char d[32];
	char got[65];
	crypto_hash_sha256_final(&k.h, d);
	sodium_bin2hex(got, sizeof(got), d, sizeof(d));
	if (strcmp(got, hex) || (size >= 0 && k.n != size))
		return rk_error_set(err, RK_ECORRUPT, "object %.12s is damaged: its content does not match its name",
				    hex);
	return 0;
}

/* Restores and exports download first, on UPLOAD_THREADS threads: every
 * object of a manifest, checked, into a cache dir under DATA_DIR/tmp that
 * the materialization (or the tar) then reads. */
struct fetcher {
	struct s3 *s;
	const struct rk_manifest *m;
	char *dir;
	pthread_mutex_t mu;
	size_t next;
	struct rk_hset claimed;
	int failed;
	struct rk_error err;
};

static void *fetch_thread(void *arg)
{
	struct fetcher *f = arg;
	for (;;) {
		pthread_mutex_lock(&f->mu);
		const struct rk_mentry *e = NULL;
		while (!f->failed && f->next < f->m->n) {
			const struct rk_mentry *c = &f->m->e[f->next++];
			if (c->type == 'f' && !rk_hset_has(&f->claimed, c->ref)) {
				rk_hset_add(&f->claimed, c->ref);
				e = c;
				break;
			}
		}
		pthread_mutex_unlock(&f->mu);
		if (!e)
			return NULL;
		struct rk_error err = {0};
		char *part = rk_xasprintf("%s/.%s", f->dir, e->ref);
		char *path = rk_path_join(f->dir, e->ref);
		int fd = open(part, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		int r = fd < 0 ? rk_error_errno(&err, RK_EIO, errno, "cannot write %s", part)
			       : fetch_object(f->s, e->ref, e->size, fd, &err);
		if (fd >= 0)
			close(fd);
		if (r == 0 && rename(part, path) != 0)
			r = rk_error_errno(&err, RK_EIO, errno, "cannot rename %s", part);
		if (r) {
			rk_error_prefix(&err, "%s", e->path);
			pthread_mutex_lock(&f->mu);
			if (!f->failed) {
				f->failed = 1;
				f->err = err;
			}
			pthread_mutex_unlock(&f->mu);
		}
		free(part);
		free(path);
	}
}

/* Fills *dir (DATA_DIR/tmp/s3-fetch-<key>-XXXXXX, malloc'd; the caller
 * removes it) with m's objects. Caller holds key's lock: gc removes such
 * dirs left by a crash when the lock is free. */
static int prefetch(struct s3 *s, const char *key, const struct rk_manifest *m, char **dir, struct rk_error *err)
{
	char *tmp = rk_path_join(s->data_dir, "tmp");
	int r = rk_fs_mkdirs(tmp, 0700, err);
	*dir = r ? NULL : rk_xasprintf("%s/s3-fetch-%s-XXXXXX", tmp, key);
	free(tmp);
	if (r)
		return r;
	if (!mkdtemp(*dir)) {
		r = rk_error_errno(err, RK_EIO, errno, "cannot make a download dir %s", *dir);
		free(*dir);
		*dir = NULL;
		return r;
	}
	struct fetcher f = {.s = s, .m = m, .dir = *dir};
	pthread_mutex_init(&f.mu, NULL);
	pthread_t th[UPLOAD_THREADS];
	int n = 0;
	while (n < UPLOAD_THREADS && pthread_create(&th[n], NULL, fetch_thread, &f) == 0)
		n++;
	if (n == 0)
		fetch_thread(&f);
	for (int i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	pthread_mutex_destroy(&f.mu);
	free(f.claimed.k);
	if (f.failed)
		return rk_error_set(err, (enum rk_code)f.err.code, "%s", f.err.message);
	return 0;
}

/* rk_workspace_open_object_fn over a prefetch dir: the object's file there. */
static int open_fetched(void *ctx, const struct rk_mentry *e, struct rk_error *err)
{
	char *p = rk_path_join(ctx, e->ref);
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	free(p);
	if (fd < 0)
		return rk_error_errno(err, RK_EIO, errno, "%s: the downloaded object %.12s is gone", e->path, e->ref);
	return fd;
}

/* --- checkpoint ---------------------------------------------------------------------------- */

/* The small files' uploads, on UPLOAD_THREADS threads: the walk hashes a
 * file and queues its content (at most UPLOAD_INFLIGHT bytes wait); a
 * thread asks the bucket first when need be (HEAD) and PUTs it. The first
 * error stops the walk; all uploads end before the manifest is written. */
struct upload {
	struct upload *next;
	char hex[65];
	int check; /* HEAD first */
	struct rk_buf data;
};

struct uploader {
	struct s3 *s;
	pthread_mutex_t mu;
	pthread_cond_t work, room;
	struct upload *head, *tail;
	size_t waiting; /* bytes queued or being sent */
	int stop, failed, nth;
	pthread_t th[UPLOAD_THREADS];
	struct rk_error err; /* the first failure */
	int64_t uploaded;
};

static void *upload_thread(void *arg)
{
	struct uploader *u = arg;
	pthread_mutex_lock(&u->mu);
	for (;;) {
		while (!u->head && !u->stop)
			pthread_cond_wait(&u->work, &u->mu);
		struct upload *up = u->head;
		if (!up)
			break;
		u->head = up->next;
		if (!u->head)
			u->tail = NULL;
		int skip = u->failed;
		pthread_mutex_unlock(&u->mu);
		struct rk_error e = {0};
		int r = 0, sent = 0;
		if (!skip) {
			char *key = object_key(up->hex);
			r = up->check ? s3_head(u->s, key, (int64_t)up->data.len, &e) : 0;
			if (r == 0) {
				r = s3_put(u->s, key, up->data.data, up->data.len, &e);
				sent = r == 0;
			}
			free(key);
		}
		pthread_mutex_lock(&u->mu);
		if (r < 0 && !u->failed) {
			u->failed = 1;
			u->err = e;
		}
		u->uploaded += sent;
		u->waiting -= up->data.len;
		pthread_cond_broadcast(&u->room);
		rk_buf_release(&up->data);
		free(up);
	}
	pthread_mutex_unlock(&u->mu);
	return NULL;
}

static void uploader_init(struct uploader *u, struct s3 *s)
{
	memset(u, 0, sizeof(*u));
	u->s = s;
	pthread_mutex_init(&u->mu, NULL);
	pthread_cond_init(&u->work, NULL);
	pthread_cond_init(&u->room, NULL);
}

/* Queues data (taken over) as object hex; a failure of an earlier upload
 * comes back here. */
static int uploader_add(struct uploader *u, const char *hex, int check, struct rk_buf *data, struct rk_error *err)
{
	pthread_mutex_lock(&u->mu);
	while (!u->failed && u->waiting && u->waiting + data->len > UPLOAD_INFLIGHT)
		pthread_cond_wait(&u->room, &u->mu);
	if (u->failed) {
		int r = rk_error_set(err, (enum rk_code)u->err.code, "%s", u->err.message);
		pthread_mutex_unlock(&u->mu);
		rk_buf_release(data);
		return r;
	}
	if (u->nth < UPLOAD_THREADS && (u->head || u->nth == 0)) {
		if (pthread_create(&u->th[u->nth], NULL, upload_thread, u) == 0)
			u->nth++;
	}
	struct upload *up = rk_xcalloc(1, sizeof(*up));
	memcpy(up->hex, hex, 65);
	up->check = check;
	up->data = *data;
	rk_buf_init(data);
	if (u->tail)
		u->tail->next = up;
	else
		u->head = up;
	u->tail = up;
	u->waiting += up->data.len;
	int started = u->nth;
	pthread_cond_signal(&u->work);
	pthread_mutex_unlock(&u->mu);
	if (!started) { /* no thread could start: send it from here */
		pthread_mutex_lock(&u->mu);
		u->stop = 1;
		pthread_mutex_unlock(&u->mu);
		upload_thread(u);
		pthread_mutex_lock(&u->mu);
		u->stop = 0;
		int r = u->failed ? rk_error_set(err, (enum rk_code)u->err.code, "%s", u->err.message) : 0;
		pthread_mutex_unlock(&u->mu);
		return r;
	}
	return 0;
}

/* Waits for every queued upload; the first failure, if any. */
static int uploader_finish(struct uploader *u, struct rk_error *err)
{
	pthread_mutex_lock(&u->mu);
	u->stop = 1;
	pthread_cond_broadcast(&u->work);
	pthread_mutex_unlock(&u->mu);
	for (int i = 0; i < u->nth; i++)
		pthread_join(u->th[i], NULL);
	u->nth = 0;
	int r = u->failed && err ? rk_error_set(err, (enum rk_code)u->err.code, "%s", u->err.message) : 0;
	pthread_mutex_destroy(&u->mu);
	pthread_cond_destroy(&u->work);
	pthread_cond_destroy(&u->room);
	return r;
}

struct s3_walk {
	struct rk_workspace_walk base; /* first: store gets &base */
	struct s3 *s;
	struct rk_hset known; /* objects known to be in the bucket, or on their way */
	struct uploader up;
	int listed; /* known holds every object there */
	int64_t uploaded;
};

/* Is object hex (size bytes) in the bucket? 1 yes, 0 no, < 0 error. */
static int object_known(struct s3_walk *w, const char *hex, int64_t size)
{
	if (rk_hset_has(&w->known, hex))
		return 1;
	if (w->listed)
		return 0;
	char *key = object_key(hex);
	int r = s3_head(w->s, key, size, w->base.err);
	free(key);
	if (r == 1)
		rk_hset_add(&w->known, hex);
	return r;
}

static int multipart(struct s3_walk *w, int fd, const char *hex, int64_t total, struct rk_error *err)
{
	struct s3 *s = w->s;
	char *key = object_key(hex);
	struct s3_req q = {.method = "POST", .key = key, .query = "uploads=", .body = "", .len = 0};
	struct rk_http_response resp;
	int r = s3_do(s, &q, &resp, err);
	char *upload = r ? NULL : xml_text(resp.body.data ? resp.body.data : "", resp.body.len, "UploadId", NULL);
	rk_http_response_release(&resp);
	if (r == 0 && !upload)
		r = rk_error_set(err, RK_EFAILED, "s3 POST %s%s: the reply has no UploadId", s->prefix, key);
	char *up = upload ? rk_http_escape(upload) : NULL;
	struct rk_buf done;
	rk_buf_init(&done);
	rk_buf_adds(&done, "<CompleteMultipartUpload>");
	unsigned char *part = r ? NULL : rk_xmalloc((size_t)PART_SIZE);
	crypto_hash_sha256_state h;
	crypto_hash_sha256_init(&h);
	int64_t off = 0;
	for (int no = 1; r == 0 && off < total; no++) {
		size_t want = (size_t)(total - off < PART_SIZE ? total - off : PART_SIZE);
		size_t got = 0;
		while (got < want) {
			ssize_t n = pread(fd, part + got, want - got, off + (off_t)got);
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				break;
			got += (size_t)n;
		}
		if (got != want) {
			r = rk_error_set(err, RK_ECONFLICT,
					 "a %lld-byte file shrank while it was uploaded: checkpoint again",
					 (long long)total);
			break;
		}
		crypto_hash_sha256_update(&h, part, got);
		char *query = rk_xasprintf("partNumber=%d&uploadId=%s", no, up);
		struct s3_req pq = {.method = "PUT", .key = key, .query = query, .body = part, .len = got};
		r = s3_do(s, &pq, &resp, err);
		free(query);
		if (r == 0 && !resp.etag)
			r = rk_error_set(err, RK_EFAILED, "s3 PUT %s%s part %d: the reply has no ETag", s->prefix, key,
					 no);
		if (r == 0)
			rk_buf_printf(&done, "<Part><PartNumber>%d</PartNumber><ETag>%s</ETag></Part>", no, resp.etag);
		rk_http_response_release(&resp);
		off += (int64_t)got;
	}
	free(part);
	rk_buf_adds(&done, "</CompleteMultipartUpload>");
	if (r == 0) {
		unsigned char d[32];
		char got[65];
		crypto_hash_sha256_final(&h, d);
		sodium_bin2hex(got, sizeof(got), d, sizeof(d));
		if (strcmp(got, hex))
			r = rk_error_set(err, RK_ECONFLICT,
					 "a %lld-byte file changed while it was uploaded: checkpoint again",
					 (long long)total);
	}
	if (r == 0) {
		char *query = rk_xasprintf("uploadId=%s", up);
		struct s3_req cq = {.method = "POST", .key = key, .query = query, .body = done.data, .len = done.len};
		r = s3_do(s, &cq, &resp, err);
		/* S3 may answer 200 and put the error in the body */
		if (r == 0 && resp.body.len && memmem(resp.body.data, resp.body.len, "<Error>", 7)) {
			char *msg = xml_text(resp.body.data, resp.body.len, "Message", NULL);
			r = rk_error_set(err, RK_EFAILED, "s3 complete upload of %s%s: %s", s->prefix, key,
					 msg ? msg : "failed");
			free(msg);
		}
		rk_http_response_release(&resp);
		free(query);
	}
	if (r && up) {
		char *query = rk_xasprintf("uploadId=%s", up);
		struct s3_req aq = {.method = "DELETE", .key = key, .query = query};
		struct rk_error e2;
		if (s3_do(s, &aq, &resp, &e2) != 0)
			rk_log(RK_LOG_WARN, "s3: cannot abort the upload of %s: %s", key, e2.message);
		rk_http_response_release(&resp);
		free(query);
	}
	if (r == 0) {
		pthread_mutex_lock(&s->stats_mu);
		s->stats.multipart_uploads++;
		pthread_mutex_unlock(&s->stats_mu);
	}
	rk_buf_release(&done);
	free(up);
	free(upload);
	free(key);
	return r;
}

/* rk_workspace_walk store: hashes the file and uploads it unless the bucket has it. */
static int s3_store_file(struct rk_workspace_walk *base, int fd, char hex[65], int64_t *size)
{
	struct s3_walk *w = (struct s3_walk *)base;
	struct rk_error *err = base->err;
	struct stat st;
	if (fstat(fd, &st) != 0)
		return rk_error_errno(err, RK_EIO, errno, "cannot stat a workspace file");
	crypto_hash_sha256_state h;
	crypto_hash_sha256_init(&h);
	unsigned char d[32];
	if (st.st_size < MULTIPART_MIN) {
		/* read whole: what is hashed is what is sent */
		struct rk_buf b;
		rk_buf_init(&b);
		ssize_t n;
		while ((n = rk_fs_read_fd(fd, base->io, RK_WORKSPACE_IOBUF)) > 0)
			rk_buf_add(&b, base->io, (size_t)n);
		if (n < 0) {
			rk_buf_release(&b);
			return rk_error_errno(err, RK_EIO, errno, "cannot read a workspace file");
		}
		crypto_hash_sha256_update(&h, b.data ? (unsigned char *)b.data : base->io, b.len);
		crypto_hash_sha256_final(&h, d);
		sodium_bin2hex(hex, 65, d, sizeof(d));
		*size = (int64_t)b.len;
		int r = 0;
		if (!rk_hset_has(&w->known, hex)) {
			/* the threads ask the bucket (unless it was listed) and send it */
			rk_hset_add(&w->known, hex);
			r = uploader_add(&w->up, hex, !w->listed, &b, err);
		}
		rk_buf_release(&b);
		return r;
	}
	int64_t total = 0;
	ssize_t n;
	while ((n = rk_fs_read_fd(fd, base->io, RK_WORKSPACE_IOBUF)) > 0) {
		crypto_hash_sha256_update(&h, base->io, (size_t)n);
		total += n;
	}
	if (n < 0)
		return rk_error_errno(err, RK_EIO, errno, "cannot read a workspace file");
	crypto_hash_sha256_final(&h, d);
	sodium_bin2hex(hex, 65, d, sizeof(d));
	*size = total;
	int r = object_known(w, hex, total);
	if (r == 0 && (r = multipart(w, fd, hex, total, err)) == 0) {
		rk_hset_add(&w->known, hex);
		w->uploaded++;
	}
	return r < 0 ? r : 0;
}

static int s3_checkpoint(struct rk_workspace_store *base, const char *key,
			 const struct rk_workspace_checkpoint_req *req, struct rk_workspace_checkpoint *out,
			 struct rk_error *err)
{
	struct s3 *s = (struct s3 *)base;
	int64_t t0 = rk_monotonic_ms();
	int lk = lock_key(s, key, LOCK_EX, err);
	if (lk < 0)
		return lk;
	int r = 0, olk = -1;
	struct rk_workspace_checkpoint meta = {0};
	meta.reason = rk_xstrdup(req->reason ? req->reason : "manual");
	meta.kind = RK_WORKSPACE_SNAPSHOT; /* no markers here: a marker would name a dir on one host */
	struct s3_walk w = {.base = {.err = err, .store = s3_store_file}, .s = s};
	rk_buf_init(&w.base.body);
	rk_buf_init(&w.base.skipped_names);
	uploader_init(&w.up, s);
	struct rk_manifest prev = {0};
	rk_buf_init(&prev.text);
	struct rk_buf text;
	rk_buf_init(&text);
	struct stat st;
	if (stat(req->src_dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
		r = rk_error_errno(err, RK_ENOTFOUND, errno, "the workspace %s to checkpoint is missing", req->src_dir);
		goto out;
	}
	char *pid = NULL;
	struct rk_error e2;
	int pr = read_latest_id(s, key, &pid, &e2);
	if (pr == 0) {
		/* the latest is kept and its objects with it: they need no check */
		if (manifest_load(s, key, pid, 1, &prev, &e2) == 0) {
			rk_path_table_build(&w.base.prev, &prev);
			for (size_t i = 0; i < prev.n; i++)
				if (prev.e[i].type == 'f')
					rk_hset_add(&w.known, prev.e[i].ref);
		}
		free(pid);
	} else if (pr != -RK_ENOTFOUND && e2.code != RK_ECORRUPT) {
		r = rk_error_set(err, (enum rk_code)e2.code, "%s", e2.message);
		goto out;
	} else {
		/* a first checkpoint: one listing instead of a HEAD per file */
		struct listing l;
		if ((r = s3_list(s, "objects/", LIST_PAGES_FIRST, &l, err)))
			goto out;
		for (size_t i = 0; i < l.n; i++)
			if (strlen(l.keys[i]) == 8 + 64)
				rk_hset_add(&w.known, l.keys[i] + 8);
		w.listed = !l.truncated;
		listing_release(&l);
	}
	/* shared: gc and prune on this host wait until the manifest names our objects */
	if ((olk = lock_file(s, "objects.lock", LOCK_SH, err)) < 0) {
		r = olk;
		goto out;
	}
	w.base.io = rk_xmalloc(RK_WORKSPACE_IOBUF);
	int dfd = open(req->src_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		r = rk_error_errno(err, RK_EIO, errno, "cannot open %s", req->src_dir);
		goto out;
	}
	struct rk_buf rel;
	rk_buf_init(&rel);
	r = rk_workspace_walk_dir(&w.base, dfd, &rel);
	rk_buf_release(&rel);
	/* every object is in before the manifest */
	struct rk_error e4;
	int ur = uploader_finish(&w.up, &e4);
	w.uploaded += w.up.uploaded;
	if (r == 0 && ur)
		r = rk_error_set(err, (enum rk_code)e4.code, "%s", e4.message);
	if (r)
		goto out;
	char hex[65];
	rk_sha256_hex(w.base.body.data ? w.base.body.data : "", w.base.body.len, hex);
	meta.checksum = rk_xstrdup(hex);
	meta.files = w.base.files;
	meta.bytes = w.base.bytes;
	meta.reused = w.base.reused;
	meta.hashed = w.base.hashed;
	meta.skipped = w.base.skipped;
	if (w.base.skipped_names.len)
		meta.skipped_names = rk_buf_detach(&w.base.skipped_names, NULL);
	meta.id = rk_workspace_new_rev_id();
	meta.created_at = rk_now_ms();
	meta.ms = rk_monotonic_ms() - t0;
	rk_manifest_compose(&meta, &w.base.body, &text);
	/* every object is in; now the manifest, and `latest` last */
	char *k = rev_key(key, meta.id);
	r = s3_put(s, k, text.data, text.len, err);
	free(k);
	if (r == 0) {
		char *lkey = latest_key(key);
		char *line = rk_xasprintf("%s\n", meta.id);
		r = s3_put(s, lkey, line, strlen(line), err);
		free(line);
		free(lkey);
	}
	if (r)
		goto out;
	unlock(olk);
	olk = -1;
	struct rk_error e3;
	if (prune(s, key, meta.id, req->keep < 1 ? 1 : req->keep, &e3) != 0)
		rk_log(RK_LOG_WARN, "workspace %s: pruning old checkpoints: %s", key, e3.message);
	meta.ms = rk_monotonic_ms() - t0;
	rk_log(RK_LOG_DEBUG, "workspace %s: s3 checkpoint %s: %lld files, %lld uploaded", key, meta.id,
	       (long long)meta.files, (long long)w.uploaded);
	*out = meta;
	memset(&meta, 0, sizeof(meta));
out:
	if (w.up.nth)
		uploader_finish(&w.up, NULL); /* a walk cut short before the wait above */
	unlock(olk);
	unlock(lk);
	rk_workspace_checkpoint_release(&meta);
	rk_buf_release(&text);
	rk_buf_release(&w.base.body);
	rk_buf_release(&w.base.skipped_names);
	free(w.base.prev.slot);
	free(w.base.io);
	free(w.known.k);
	rk_manifest_release(&prev);
	return r;
}

/* --- the other operations --------------------------------------------------------------------- */

static int s3_describe(struct rk_workspace_store *base, struct rk_workspace_desc *out, struct rk_error *err)
{
	struct s3 *s = (struct s3 *)base;
	(void)err;
	out->name = "s3";
	out->caps = RK_WORKSPACE_REVISIONS;
	out->location = rk_xasprintf("%s at %s", s->url, s->endpoint);
	return 0;
}

static int s3_show(struct rk_workspace_store *base, const char *key, const char *rev,
		   struct rk_workspace_checkpoint *out, struct rk_error *err)
{
	struct s3 *s = (struct s3 *)base;
	char *id = NULL;
	int r = rk_workspace_check_key(key, err);
	if (r || (!rev && (r = read_latest_id(s, key, &id, err))))
		return r;
	struct rk_manifest m;
	r = manifest_load(s, key, rev ? rev : id, -1, &m, err);
	free(id);
	if (r == 0)
		rk_manifest_take_meta(&m, out);
	return r;
}

static int s3_latest(struct rk_workspace_store *base, const char *key, struct rk_workspace_checkpoint *out,
		     struct rk_error *err)
{
	return s3_show(base, key, NULL, out, err);
}

static int s3_list_op(struct rk_workspace_store *base, const char *key, struct rk_workspace_checkpoint **out, size_t *n,
		      struct rk_error *err)
{
	struct s3 *s = (struct s3 *)base;
	int r = rk_workspace_check_key(key, err);
	return r ? r : list_revs(s, key, out, n, err);
}

/* The manifest of rev (NULL: the latest), entries parsed. */
static int load_rev(struct s3 *s, const char *key, const char *rev, struct rk_manifest *m, struct rk_error *err)
{
	char *id = NULL;
	int r = rev ? 0 : read_latest_id(s, key, &id, err);
	if (r) {
		memset(m, 0, sizeof(*m));
		return r;
	}
	r = manifest_load(s, key, rev ? rev : id, 1, m, err);
	free(id);
	if (r == 0 && m->meta.kind == RK_WORKSPACE_MARKER) {
		r = rk_error_set(err, RK_EUNSUPPORTED, "checkpoint %s is a marker, which the S3 store does not keep",
				 m->meta.id);
		rk_manifest_release(m);
	}
	return r;
}

static int s3_restore(struct rk_workspace_store *base, const char *key, const char *rev, const char *dest,
		      struct rk_workspace_checkpoint *out, struct rk_error *err)
{
	struct s3 *s = (struct s3 *)base;
	int lk = lock_key(s, key, LOCK_EX, err);
	if (lk < 0)
		return lk;
	char *staging = NULL, *fetched = NULL;
	struct rk_manifest m = {0};
	int r;
	if ((r = rk_workspace_swap_recover(dest, err)) || (r = load_rev(s, key, rev, &m, err)))
		goto out;
	if ((r = prefetch(s, key, &m, &fetched, err)) || (r = rk_workspace_staging_for(dest, &staging, err)) ||
	    (r = rk_workspace_materialize(&m, staging, open_fetched, fetched, err)) ||
	    (r = rk_workspace_swap_dir(dest, staging, err)))
		goto out;
	free(staging);
	staging = NULL;
	if (out) {
		*out = m.meta;
		memset(&m.meta, 0, sizeof(m.meta));
	}
out:
	if (staging) {
		rk_fs_remove_tree(staging, NULL);
		free(staging);
	}
	if (fetched) {
		rk_fs_remove_tree(fetched, NULL);
		free(fetched);
	}
	rk_manifest_release(&m);
	unlock(lk);
	return r;
}

static int s3_export_tar(struct rk_workspace_store *base, const char *key, const char *rev, int fd, int zstd,
			 struct rk_error *err)
{
	struct s3 *s = (struct s3 *)base;
	int lk = lock_key(s, key, LOCK_SH, err);
	if (lk < 0)
		return lk;
	struct rk_manifest m;
	char *fetched = NULL;
	int r = load_rev(s, key, rev, &m, err);
	if (r == 0 && (r = prefetch(s, key, &m, &fetched, err)) == 0)
		r = rk_workspace_export_manifest(&m, fd, zstd, open_fetched, fetched, err);
	if (fetched) {
		rk_fs_remove_tree(fetched, NULL);
		free(fetched);
	}
	rk_manifest_release(&m);
	unlock(lk);
	return r;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int s3_verify(struct rk_workspace_store *base, const char *key, const char *rev, int deep,
		     struct rk_workspace_verify *out, struct rk_error *err)
{
	struct s3 *s = (struct s3 *)base;
	memset(out, 0, sizeof(*out));
	int lk = lock_key(s, key, LOCK_SH, err);
	if (lk < 0)
		return lk;
	char *id = NULL;
	struct rk_manifest m = {0};
	struct listing l = {0};
	int r = rev ? 0 : read_latest_id(s, key, &id, err);
	if (r)
		goto out;
	struct rk_error e2;
	if (manifest_load(s, key, rev ? rev : id, 1, &m, &e2) != 0) {
		if (e2.code != RK_ECORRUPT) {
			r = rk_error_set(err, (enum rk_code)e2.code, "%s", e2.message);
			goto out;
		}
		snprintf(out->problem, sizeof(out->problem), "%.1000s", e2.message);
		goto out;
	}
	/* shallow: one listing of the objects, sorted, for presence and size */
	if (!deep) {
		if ((r = s3_list(s, "objects/", 0, &l, err)))
			goto out;
		/* keys and sizes sorted together: sort an index */
		char **pairs = rk_xcalloc(l.n + 1, sizeof(*pairs));
		for (size_t i = 0; i < l.n; i++)
			pairs[i] = rk_xasprintf("%s %lld", l.keys[i], (long long)l.sizes[i]);
		qsort(pairs, l.n, sizeof(*pairs), cmp_str);
		for (size_t i = 0; i < l.n; i++) {
			free(l.keys[i]);
			l.keys[i] = pairs[i];
		}
		free(pairs);
	}
	struct rk_hset seen = {0};
	for (size_t i = 0; i < m.n; i++) {
		const struct rk_mentry *e = &m.e[i];
		if (e->type != 'f')
			continue;
		out->files++;
		out->bytes += e->size;
		if (rk_hset_has(&seen, e->ref))
			continue; /* one object, checked once */
		rk_hset_add(&seen, e->ref);
		int good;
		if (deep) {
			struct rk_error e3;
			int k = fetch_object(s, e->ref, e->size, -1, &e3);
			if (k && e3.code != RK_ENOTFOUND && e3.code != RK_ECORRUPT) {
				r = rk_error_set(err, (enum rk_code)e3.code, "%s", e3.message);
				break;
			}
			good = k == 0;
			if (k == -RK_ENOTFOUND)
				out->missing++;
			else if (k)
				out->corrupt++;
		} else {
			char *want = rk_xasprintf("objects/%s %lld", e->ref, (long long)e->size);
			good = bsearch(&want, l.keys, l.n, sizeof(*l.keys), cmp_str) != NULL;
			free(want);
			if (!good)
				out->missing++;
		}
		if (!good && !out->problem[0])
			snprintf(out->problem, sizeof(out->problem), "%s: object %.12s is %s", e->path, e->ref,
				 deep ? "missing or damaged" : "missing or the wrong size");
	}
	free(seen.k);
	out->ok = r == 0 && !out->missing && !out->corrupt;
out:
	listing_release(&l);
	rk_manifest_release(&m);
	free(id);
	unlock(lk);
	return r;
}

/* Download dirs a crashed restore or export left, of homes whose lock is free. */
static int64_t gc_fetched(struct s3 *s)
{
	int64_t removed = 0;
	char *tmp = rk_path_join(s->data_dir, "tmp");
	DIR *d = opendir(tmp);
	struct dirent *de;
	while (d && (de = readdir(d))) {
		const char *dash = strrchr(de->d_name, '-');
		if (strncmp(de->d_name, "s3-fetch-", 9) || !dash || dash - de->d_name <= 9)
			continue;
		char *key = rk_xstrndup(de->d_name + 9, (size_t)(dash - de->d_name - 9));
		struct rk_error e;
		int lk = lock_key(s, key, LOCK_EX | LOCK_NB, &e);
		if (lk >= 0) {
			char *p = rk_path_join(tmp, de->d_name);
			if (rk_fs_remove_tree(p, NULL) == 0)
				removed++;
			free(p);
			unlock(lk);
		}
		free(key);
	}
	if (d)
		closedir(d);
	free(tmp);
	return removed;
}

static int s3_gc(struct rk_workspace_store *base, struct rk_workspace_gc_stats *out, struct rk_error *err)
{
	struct s3 *s = (struct s3 *)base;
	memset(out, 0, sizeof(*out));
	int lk = lock_file(s, "objects.lock", LOCK_EX, err);
	if (lk < 0)
		return lk;
	struct rk_hset refs = {0};
	struct listing l = {0};
	int r = collect_refs(s, &refs, err);
	if (r == 0)
		r = s3_list(s, "objects/", 0, &l, err);
	for (size_t i = 0; r == 0 && i < l.n; i++) {
		const char *hex = l.keys[i] + 8;
		if (strlen(hex) != 64 || rk_hset_has(&refs, hex)) {
			out->objects_kept++;
			continue;
		}
		char *k = object_key(hex);
		r = s3_delete(s, k, err);
		free(k);
		if (r == 0) {
			out->objects_removed++;
			out->bytes_removed += l.sizes[i] > 0 ? l.sizes[i] : 0;
		}
	}
	listing_release(&l);
	free(refs.k);
	unlock(lk);
	if (r == 0)
		out->staging_removed = rk_workspace_gc_staging(s->data_dir) + gc_fetched(s);
	return r;
}

static int s3_forget(struct rk_workspace_store *base, const char *key, struct rk_error *err)
{
	struct s3 *s = (struct s3 *)base;
	int lk = lock_key(s, key, LOCK_EX, err);
	if (lk < 0)
		return lk;
	/* `latest` first: from then on no reader sees a half-deleted home */
	char *k = latest_key(key);
	int r = s3_delete(s, k, err);
	free(k);
	if (r == 0)
		r = prune(s, key, NULL, 0, err);
	unlock(lk);
	return r;
}

/* --- construction ------------------------------------------------------------------------------- */

static void s3_free(struct rk_workspace_store *base)
{
	struct s3 *s = (struct s3 *)base;
	if (!s)
		return;
	free(s->url);
	free(s->endpoint);
	free(s->bucket);
	free(s->prefix);
	free(s->sigv4);
	rk_free_secret(&s->userpwd);
	free(s->token);
	free(s->data_dir);
	free(s->locks);
	pthread_mutex_destroy(&s->stats_mu);
	free(s);
}

static const struct rk_workspace_store_ops s3_ops = {
	.name = "s3",
	.describe = s3_describe,
	.latest = s3_latest,
	.checkpoint = s3_checkpoint,
	.list = s3_list_op,
	.show = s3_show,
	.restore = s3_restore,
	.export_tar = s3_export_tar,
	.verify = s3_verify,
	.gc = s3_gc,
	.forget = s3_forget,
	.free = s3_free,
};

static const char *env(const char *name)
{
	const char *v = getenv(name);
	return v && *v ? v : NULL;
}

static int valid_bucket(const char *b, size_t n)
{
	if (n < 3 || n > 63)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!((b[i] >= 'a' && b[i] <= 'z') || (b[i] >= '0' && b[i] <= '9') || b[i] == '-' || b[i] == '.'))
			return 0;
	return 1;
}

/* A prefix (n > 0 bytes, no leading or trailing '/') whose segments a URL
 * path keeps as they are: none empty, "." or "..", no control characters. */
static int valid_prefix(const char *p, size_t n)
{
	size_t seg = 0;
	for (size_t i = 0; i <= n; i++) {
		if (i < n && (unsigned char)p[i] < 0x20)
			return 0;
		if (i < n && p[i] != '/')
			continue;
		size_t len = i - seg;
		if (len == 0 || (len == 1 && p[seg] == '.') || (len == 2 && p[seg] == '.' && p[seg + 1] == '.'))
			return 0;
		seg = i + 1;
	}
	return 1;
}

struct rk_workspace_store *rk_workspace_store_s3_new(const char *url, const char *data_dir, struct rk_error *err)
{
	if (!url || strncmp(url, "s3://", 5)) {
		rk_error_set(err, RK_EINVALID,
			     "RAKAZO_HOME_STORE '%s' is not s3://BUCKET[/PREFIX] (unset it for the local store)",
			     url ? url : "");
		return NULL;
	}
	const char *b = url + 5;
	size_t bn = strcspn(b, "/");
	if (!valid_bucket(b, bn)) {
		rk_error_set(err, RK_EINVALID,
			     "RAKAZO_HOME_STORE '%s': '%.*s' is not a bucket name (3 to 63 of a-z 0-9 . -)", url,
			     (int)bn, b);
		return NULL;
	}
	const char *p = b + bn;
	while (*p == '/')
		p++;
	size_t pn = strlen(p);
	while (pn && p[pn - 1] == '/')
		pn--;
	if (pn && !valid_prefix(p, pn)) {
		rk_error_set(
			err, RK_EINVALID,
			"RAKAZO_HOME_STORE '%s': the prefix holds an empty, '.' or '..' segment or a control character",
			url);
		return NULL;
	}
	const char *id = env("AWS_ACCESS_KEY_ID"), *secret = env("AWS_SECRET_ACCESS_KEY");
	if (!id || !secret) {
		rk_error_set(
			err, RK_EINVALID,
			"the S3 workspace store needs AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY in the environment");
		return NULL;
	}
	if (strchr(id, ':')) {
		rk_error_set(err, RK_EINVALID, "AWS_ACCESS_KEY_ID holds a ':', which no access key id has");
		return NULL;
	}
	const char *region = env("AWS_REGION")		 ? env("AWS_REGION")
			     : env("AWS_DEFAULT_REGION") ? env("AWS_DEFAULT_REGION")
							 : "us-east-1";
	for (const char *c = region; *c; c++)
		if (!((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '-')) {
			rk_error_set(err, RK_EINVALID, "AWS_REGION '%s' is not a region name", region);
			return NULL;
		}
	const char *ep = env("RAKAZO_S3_ENDPOINT");
	char *endpoint = ep ? rk_xstrdup(ep) : rk_xasprintf("https://s3.%s.amazonaws.com", region);
	size_t en = strlen(endpoint);
	while (en && endpoint[en - 1] == '/')
		endpoint[--en] = '\0';
	if ((strncmp(endpoint, "http://", 7) && strncmp(endpoint, "https://", 8)) || strchr(endpoint + 8, '/') ||
	    strchr(endpoint, '?') || strchr(endpoint, '@')) {
		rk_error_set(err, RK_EINVALID, "RAKAZO_S3_ENDPOINT '%s' is not http(s)://HOST[:PORT]", endpoint);
		free(endpoint);
		return NULL;
	}
	struct s3 *s = rk_xcalloc(1, sizeof(*s));
	s->base.ops = &s3_ops;
	pthread_mutex_init(&s->stats_mu, NULL);
	s->url = rk_xstrdup(url);
	s->endpoint = endpoint;
	s->bucket = rk_xstrndup(b, bn);
	s->prefix = pn ? rk_xasprintf("%.*s/", (int)pn, p) : rk_xstrdup("");
	s->sigv4 = rk_xasprintf("aws:amz:%s:s3", region);
	s->userpwd = rk_xasprintf("%s:%s", id, secret);
	s->token = rk_xstrdup(env("AWS_SESSION_TOKEN"));
	s->data_dir = rk_xstrdup(data_dir);
	/* one lock dir per bucket and prefix */
	char where[65];
	char *w = rk_xasprintf("%s/%s/%s", s->endpoint, s->bucket, s->prefix);
	rk_sha256_hex(w, strlen(w), where);
	free(w);
	s->locks = rk_xasprintf("%s/home-s3/%.16s", data_dir, where);
	return &s->base;
}

int rk_workspace_s3_stats(struct rk_workspace_store *base, struct rk_workspace_s3_stats *out)
{
	memset(out, 0, sizeof(*out));
	if (!base || base->ops != &s3_ops)
		return -RK_EINVALID;
	struct s3 *s = (struct s3 *)base;
	pthread_mutex_lock(&s->stats_mu);
	*out = s->stats;
	pthread_mutex_unlock(&s->stats_mu);
	return 0;
}

/* --- a store that only reports why it could not be made ------------------------------------------ */

struct failed {
	struct rk_workspace_store base;
	struct rk_error why;
};

static int fail_with(struct rk_workspace_store *base, struct rk_error *err)
{
	const struct failed *f = (const struct failed *)base;
	return rk_error_set(err, (enum rk_code)f->why.code, "%s", f->why.message);
}

static int failed_describe(struct rk_workspace_store *b, struct rk_workspace_desc *o, struct rk_error *e)
{
	(void)o;
	return fail_with(b, e);
}
static int failed_rev(struct rk_workspace_store *b, const char *k, struct rk_workspace_checkpoint *o,
		      struct rk_error *e)
{
	(void)k, (void)o;
	return fail_with(b, e);
}
static int failed_checkpoint(struct rk_workspace_store *b, const char *k, const struct rk_workspace_checkpoint_req *q,
			     struct rk_workspace_checkpoint *o, struct rk_error *e)
{
	(void)k, (void)q, (void)o;
	return fail_with(b, e);
}
static int failed_list(struct rk_workspace_store *b, const char *k, struct rk_workspace_checkpoint **o, size_t *n,
		       struct rk_error *e)
{
	(void)k;
	*o = NULL;
	*n = 0;
	return fail_with(b, e);
}
static int failed_show(struct rk_workspace_store *b, const char *k, const char *r, struct rk_workspace_checkpoint *o,
		       struct rk_error *e)
{
	(void)k, (void)r, (void)o;
	return fail_with(b, e);
}
static int failed_restore(struct rk_workspace_store *b, const char *k, const char *r, const char *d,
			  struct rk_workspace_checkpoint *o, struct rk_error *e)
{
	(void)k, (void)r, (void)d, (void)o;
	return fail_with(b, e);
}
static int failed_export(struct rk_workspace_store *b, const char *k, const char *r, int fd, int z, struct rk_error *e)
{
	(void)k, (void)r, (void)fd, (void)z;
	return fail_with(b, e);
}
static int failed_verify(struct rk_workspace_store *b, const char *k, const char *r, int d,
			 struct rk_workspace_verify *o, struct rk_error *e)
{
	(void)k, (void)r, (void)d;
	memset(o, 0, sizeof(*o));
	return fail_with(b, e);
}
static int failed_gc(struct rk_workspace_store *b, struct rk_workspace_gc_stats *o, struct rk_error *e)
{
	memset(o, 0, sizeof(*o));
	return fail_with(b, e);
}
static int failed_forget(struct rk_workspace_store *b, const char *k, struct rk_error *e)
{
	(void)k;
	return fail_with(b, e);
}
static void failed_free(struct rk_workspace_store *b)
{
	free(b);
}

static const struct rk_workspace_store_ops failed_ops = {
	.name = "unavailable",
	.describe = failed_describe,
	.latest = failed_rev,
	.checkpoint = failed_checkpoint,
	.list = failed_list,
	.show = failed_show,
	.restore = failed_restore,
	.export_tar = failed_export,
	.verify = failed_verify,
	.gc = failed_gc,
	.forget = failed_forget,
	.free = failed_free,
};

struct rk_workspace_store *rk_workspace_store_failed_new(const struct rk_error *why)
{
	struct failed *f = rk_xcalloc(1, sizeof(*f));
	f->base.ops = &failed_ops;
	f->why = *why;
	return &f->base;
}
