/* What the home stores share: see home_manifest.h. */

#include "engine/store/manifest.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "engine/util/fs.h"
#include "engine/util/id.h"
#include "engine/util/json.h"
#include "engine/util/log.h"
#include "engine/util/time.h"

/* Copies the content of e into a new file at dfd/name. */
int rk_workspace_check_key(const char *key, struct rk_error *err)
{
	if (!key || !*key || !strcmp(key, ".") || !strcmp(key, "..") || strchr(key, '/') || strchr(key, '\\') ||
	    strlen(key) > 200)
		return rk_error_set(err, RK_EINVALID, "workspace key '%s' is not one path segment", key ? key : "");
	return 0;
}

/* flock on path (created); returns the fd holding it. */
int rk_workspace_take_lock(const char *path, int how, struct rk_error *err)
{
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return rk_error_errno(err, RK_EIO, errno, "cannot open lock %s", path);
	while (flock(fd, how) != 0) {
		if (errno == EINTR)
			continue;
		int e = errno;
		close(fd);
		if (e == EWOULDBLOCK)
			return rk_error_set(err, RK_ECONFLICT, "%s is locked by another rakazo process", path);
		return rk_error_errno(err, RK_EIO, e, "cannot lock %s", path);
	}
	return fd;
}

static char *sibling(const char *dest, const char *suffix)
{
	const char *slash = strrchr(dest, '/');
	if (!slash)
		return rk_xasprintf(".%s%s", dest, suffix);
	return rk_xasprintf("%.*s/.%s%s", (int)(slash - dest), dest, slash + 1, suffix);
}

static char *parent_of(const char *path)
{
	const char *slash = strrchr(path, '/');
	return slash ? rk_xstrndup(path, (size_t)(slash - path)) : rk_xstrdup(".");
}

/* Puts back dest from dest's .previous when a swap was cut between its two
 * renames, and removes stale staging dirs of dest. Caller holds the lock. */
int rk_workspace_swap_recover(const char *dest, struct rk_error *err)
{
	char *prev = sibling(dest, ".previous");
	int r = 0;
	if (!rk_fs_exists(dest) && rk_fs_exists(prev)) {
		if (rename(prev, dest) != 0)
			r = rk_error_errno(err, RK_EIO, errno, "cannot put back %s from %s", dest, prev);
		else
			rk_log(RK_LOG_WARN, "workspace: put back %s after an interrupted swap", dest);
	} else if (rk_fs_exists(prev)) {
		rk_fs_remove_tree(prev, NULL);
	}
	free(prev);
	char *parent = parent_of(dest);
	const char *base = strrchr(dest, '/') ? strrchr(dest, '/') + 1 : dest;
	char *pattern = rk_xasprintf(".%s.staging-", base);
	DIR *d = opendir(parent);
	struct dirent *de;
	while (d && (de = readdir(d))) {
		if (strncmp(de->d_name, pattern, strlen(pattern)) == 0) {
			char *p = rk_path_join(parent, de->d_name);
			rk_fs_remove_tree(p, NULL);
			free(p);
		}
	}
	if (d)
		closedir(d);
	free(pattern);
	free(parent);
	return r;
}

int rk_workspace_staging_for(const char *dest, char **out, struct rk_error *err)
{
	char *parent = parent_of(dest);
	int r = rk_fs_mkdirs(parent, 0755, err);
	free(parent);
	if (r)
		return r;
	char *tmpl = sibling(dest, ".staging-XXXXXX");
	if (!mkdtemp(tmpl)) {
		r = rk_error_errno(err, RK_EIO, errno, "cannot make a staging dir beside %s", dest);
		free(tmpl);
		return r;
	}
	chmod(tmpl, 0755);
	*out = tmpl;
	return 0;
}

/* dest becomes staging: dest -> .previous, staging -> dest, previous removed. */
int rk_workspace_swap_dir(const char *dest, const char *staging, struct rk_error *err)
{
	char *prev = sibling(dest, ".previous");
	char *parent = parent_of(dest);
	int r = 0;
	rk_fs_remove_tree(prev, NULL);
	int had = rk_fs_exists(dest);
	if (had && rename(dest, prev) != 0) {
		r = rk_error_errno(err, RK_EIO, errno, "cannot move %s aside", dest);
		goto out;
	}
	if (rename(staging, dest) != 0) {
		r = rk_error_errno(err, RK_EIO, errno, "cannot move the staged copy to %s", dest);
		if (had)
			rename(prev, dest);
		goto out;
	}
	rk_fs_fsync_dir(parent);
	if (had)
		rk_fs_remove_tree(prev, NULL);
out:
	free(parent);
	free(prev);
	return r;
}

/* --- manifests ----------------------------------------------------------------- */


void rk_manifest_take_meta(struct rk_manifest *m, struct rk_workspace_checkpoint *out)
{
	*out = m->meta;
	memset(&m->meta, 0, sizeof(m->meta));
	rk_manifest_release(m);
}

void rk_manifest_release(struct rk_manifest *m)
{
	rk_workspace_checkpoint_release(&m->meta);
	rk_buf_release(&m->text);
	free(m->e);
	memset(m, 0, sizeof(*m));
}

static void add_escaped(struct rk_buf *b, const char *s)
{
	for (; *s; s++) {
		if (*s == '\\')
			rk_buf_adds(b, "\\\\");
		else if (*s == '\t')
			rk_buf_adds(b, "\\t");
		else if (*s == '\n')
			rk_buf_adds(b, "\\n");
		else
			rk_buf_addc(b, *s);
	}
}

static void unescape(char *s)
{
	char *w = s;
	for (char *r = s; *r; r++) {
		if (*r == '\\' && r[1]) {
			r++;
			*w++ = *r == 't' ? '\t' : *r == 'n' ? '\n' : *r;
		} else {
			*w++ = *r;
		}
	}
	*w = '\0';
}

int64_t rk_workspace_ns_of(const struct timespec *t)
{
	return (int64_t)t->tv_sec * 1000000000LL + t->tv_nsec;
}

void rk_manifest_add_entry(struct rk_buf *b, char type, const struct stat *st, int64_t size, const char *ref,
			   const char *path)
{
	rk_buf_printf(b, "%c\t%o\t%u\t%u\t%lld\t%lld\t%llu\t%lld\t", type, (unsigned)(st->st_mode & 07777),
		      (unsigned)st->st_uid, (unsigned)st->st_gid, (long long)rk_workspace_ns_of(&st->st_mtim),
		      (long long)size, (unsigned long long)st->st_ino, (long long)rk_workspace_ns_of(&st->st_ctim));
	if (type == 'l')
		add_escaped(b, ref);
	else
		rk_buf_adds(b, ref);
	rk_buf_addc(b, '\t');
	add_escaped(b, path);
	rk_buf_addc(b, '\n');
}

cJSON *rk_workspace_meta_to_json(const struct rk_workspace_checkpoint *r)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "id", r->id);
	cJSON_AddNumberToObject(o, "created_at", (double)r->created_at);
	cJSON_AddStringToObject(o, "reason", r->reason ? r->reason : "");
	cJSON_AddStringToObject(o, "kind", rk_workspace_kind_name(r->kind));
	cJSON_AddNumberToObject(o, "bytes", (double)r->bytes);
	cJSON_AddNumberToObject(o, "files", (double)r->files);
	rk_json_add_str_or_null(o, "checksum", r->checksum);
	cJSON_AddNumberToObject(o, "ms", (double)r->ms);
	cJSON_AddNumberToObject(o, "reused", (double)r->reused);
	cJSON_AddNumberToObject(o, "hashed", (double)r->hashed);
	if (r->skipped > 0)
		cJSON_AddNumberToObject(o, "skipped", (double)r->skipped);
	return o;
}

int rk_workspace_meta_from_json(const char *text, size_t len, struct rk_workspace_checkpoint *r, struct rk_error *err)
{
	cJSON *o = rk_json_parse(text, len, "checkpoint header", err);
	if (!o)
		return -RK_ECORRUPT;
	const char *id = rk_json_string(o, "id", NULL);
	if (!id || strncmp(id, "rev-", 4)) {
		cJSON_Delete(o);
		return rk_error_set(err, RK_ECORRUPT, "checkpoint header has no id");
	}
	memset(r, 0, sizeof(*r));
	r->id = rk_xstrdup(id);
	r->reason = rk_xstrdup(rk_json_string(o, "reason", ""));
	r->kind = !strcmp(rk_json_string(o, "kind", "snapshot"), "marker") ? RK_WORKSPACE_MARKER
									   : RK_WORKSPACE_SNAPSHOT;
	const cJSON *v;
	if ((v = cJSON_GetObjectItemCaseSensitive(o, "created_at")) && cJSON_IsNumber(v))
		r->created_at = (int64_t)v->valuedouble;
	r->bytes = (v = cJSON_GetObjectItemCaseSensitive(o, "bytes")) && cJSON_IsNumber(v) ? (int64_t)v->valuedouble
											   : -1;
	r->files = (v = cJSON_GetObjectItemCaseSensitive(o, "files")) && cJSON_IsNumber(v) ? (int64_t)v->valuedouble
											   : -1;
	r->ms = (v = cJSON_GetObjectItemCaseSensitive(o, "ms")) && cJSON_IsNumber(v) ? (int64_t)v->valuedouble : 0;
	r->reused = (v = cJSON_GetObjectItemCaseSensitive(o, "reused")) && cJSON_IsNumber(v) ? (int64_t)v->valuedouble
											     : 0;
	r->hashed = (v = cJSON_GetObjectItemCaseSensitive(o, "hashed")) && cJSON_IsNumber(v) ? (int64_t)v->valuedouble
											     : 0;
	r->skipped = (v = cJSON_GetObjectItemCaseSensitive(o, "skipped")) && cJSON_IsNumber(v) ? (int64_t)v->valuedouble
											       : 0;
	r->checksum = rk_xstrdup(rk_json_string(o, "checksum", NULL));
	cJSON_Delete(o);
	return 0;
}

int rk_workspace_valid_rev(const char *rev)
{
	if (!rev || strncmp(rev, "rev-", 4) || strlen(rev) > 64)
		return 0;
	for (const char *p = rev; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '-'))
			return 0;
	return 1;
}

int rk_manifest_parse(struct rk_manifest *m, const char *rev, int want_entries, struct rk_error *err)
{
	int r;
	char *nl = m->text.len ? memchr(m->text.data, '\n', m->text.len) : NULL;
	if (!nl) {
		r = rk_error_set(err, RK_ECORRUPT, "checkpoint %s has no header line", rev);
		goto fail;
	}
	if ((r = rk_workspace_meta_from_json(m->text.data, (size_t)(nl - m->text.data), &m->meta, err)))
		goto fail;
	if (strcmp(m->meta.id, rev)) {
		r = rk_error_set(err, RK_ECORRUPT, "checkpoint file %s names checkpoint %s", rev, m->meta.id);
		goto fail;
	}
	if (want_entries < 0)
		return 0;
	if (m->meta.kind == RK_WORKSPACE_SNAPSHOT) {
		char *body = nl + 1;
		size_t blen = m->text.len - (size_t)(body - m->text.data);
		char hex[65];
		rk_sha256_hex(body, blen, hex);
		if (!m->meta.checksum || strcmp(hex, m->meta.checksum)) {
			r = rk_error_set(err, RK_ECORRUPT, "checkpoint %s: manifest checksum mismatch", rev);
			goto fail;
		}
	}
	if (!want_entries || m->meta.kind == RK_WORKSPACE_MARKER)
		return 0;
	for (char *line = nl + 1; line < m->text.data + m->text.len;) {
		char *end = memchr(line, '\n', (size_t)(m->text.data + m->text.len - line));
		if (!end) {
			r = rk_error_set(err, RK_ECORRUPT, "checkpoint %s: truncated manifest", rev);
			goto fail;
		}
		*end = '\0';
		char *f[10];
		int nf = 0;
		for (char *q = line; nf < 10;) {
			f[nf++] = q;
			char *t = strchr(q, '\t');
			if (!t)
				break;
			*t = '\0';
			q = t + 1;
		}
		if (nf != 10 || (f[0][0] != 'f' && f[0][0] != 'd' && f[0][0] != 'l')) {
			r = rk_error_set(err, RK_ECORRUPT, "checkpoint %s: bad manifest line", rev);
			goto fail;
		}
		if (m->n == m->cap) {
			m->cap = m->cap ? m->cap * 2 : 256;
			m->e = rk_xrealloc(m->e, m->cap * sizeof(*m->e));
		}
		struct rk_mentry *e = &m->e[m->n++];
		e->type = f[0][0];
		e->mode = (unsigned)strtoul(f[1], NULL, 8);
		e->uid = (unsigned)strtoul(f[2], NULL, 10);
		e->gid = (unsigned)strtoul(f[3], NULL, 10);
		e->mtime_ns = strtoll(f[4], NULL, 10);
		e->size = strtoll(f[5], NULL, 10);
		e->ino = strtoull(f[6], NULL, 10);
		e->ctime_ns = strtoll(f[7], NULL, 10);
		unescape(f[8]);
		unescape(f[9]);
		e->ref = f[8];
		e->path = f[9];
		char *norm = NULL;
		if (rk_path_normalize(e->path, &norm, NULL) != 0 || strcmp(norm, e->path) || !*norm ||
		    (e->type == 'f' && strlen(e->ref) != 64)) {
			free(norm);
			r = rk_error_set(err, RK_ECORRUPT, "checkpoint %s: bad manifest entry", rev);
			goto fail;
		}
		free(norm);
		line = end + 1;
	}
	return 0;
fail:
	rk_manifest_release(m);
	return r;
}

void rk_manifest_compose(const struct rk_workspace_checkpoint *meta, const struct rk_buf *body, struct rk_buf *out)
{
	cJSON *h = rk_workspace_meta_to_json(meta);
	rk_json_print(out, h);
	cJSON_Delete(h);
	rk_buf_addc(out, '\n');
	if (body)
		rk_buf_add(out, body->data, body->len);
}

/* --- path table (previous manifest, by path) ------------------------------------ */


static uint64_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ULL;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return h;
}

void rk_path_table_build(struct rk_path_table *t, const struct rk_manifest *m)
{
	size_t size = 16;
	while (size < m->n * 2 + 1)
		size <<= 1;
	t->slot = rk_xcalloc(size, sizeof(*t->slot));
	t->mask = size - 1;
	t->m = m;
	for (size_t i = 0; i < m->n; i++) {
		size_t h = (size_t)hash_str(m->e[i].path) & t->mask;
		while (t->slot[h])
			h = (h + 1) & t->mask;
		t->slot[h] = i + 1;
	}
}

const struct rk_mentry *rk_path_table_get(const struct rk_path_table *t, const char *path)
{
	if (!t->slot)
		return NULL;
	size_t h = (size_t)hash_str(path) & t->mask;
	while (t->slot[h]) {
		const struct rk_mentry *e = &t->m->e[t->slot[h] - 1];
		if (!strcmp(e->path, path))
			return e;
		h = (h + 1) & t->mask;
	}
	return NULL;
}


void rk_hset_add(struct rk_hset *h, const char *hex)
{
	if (!h->k || (h->n + 1) * 2 > h->mask + 1) {
		size_t size = h->k ? (h->mask + 1) * 2 : 1024;
		char(*old)[65] = h->k;
		size_t oldsize = h->k ? h->mask + 1 : 0;
		h->k = rk_xcalloc(size, 65);
		h->mask = size - 1;
		h->n = 0;
		for (size_t i = 0; i < oldsize; i++)
			if (old[i][0])
				rk_hset_add(h, old[i]);
		free(old);
	}
	size_t i = (size_t)hash_str(hex) & h->mask;
	while (h->k[i][0]) {
		if (!strcmp(h->k[i], hex))
			return;
		i = (i + 1) & h->mask;
	}
	memcpy(h->k[i], hex, 65);
	h->n++;
}

int rk_hset_has(const struct rk_hset *h, const char *hex)
{
	if (!h->k)
		return 0;
	size_t i = (size_t)hash_str(hex) & h->mask;
	while (h->k[i][0]) {
		if (!strcmp(h->k[i], hex))
			return 1;
		i = (i + 1) & h->mask;
	}
	return 0;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Lists a dir's names, sorted (a stable manifest). */
char **rk_workspace_list_names(DIR *d, size_t *n)
{
	char **v = NULL;
	size_t cap = 0;
	*n = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (*n == cap) {
			cap = cap ? cap * 2 : 32;
			v = rk_xrealloc(v, cap * sizeof(*v));
		}
		v[(*n)++] = rk_xstrdup(de->d_name);
	}
	if (*n)
		qsort(v, *n, sizeof(*v), cmp_names);
	return v;
}

int rk_workspace_walk_dir(struct rk_workspace_walk *w, int dfd, struct rk_buf *rel)
{
	DIR *d = fdopendir(dfd);
	if (!d) {
		close(dfd);
		return rk_error_errno(w->err, RK_EIO, errno, "cannot read %s", rel->len ? rel->data : "the workspace");
	}
	size_t n;
	char **names = rk_workspace_list_names(d, &n);
	int r = 0;
	size_t base = rel->len;
	for (size_t i = 0; i < n && r == 0; i++) {
		rel->len = base;
		rel->data[base] = '\0';
		if (base)
			rk_buf_addc(rel, '/');
		rk_buf_adds(rel, names[i]);
		if (rk_workspace_excluded(rel->data))
			continue;
		struct stat st;
		if (fstatat(dirfd(d), names[i], &st, AT_SYMLINK_NOFOLLOW) != 0)
			continue; /* gone while we walked: a live workspace changes */
		if (S_ISDIR(st.st_mode)) {
			rk_manifest_add_entry(&w->body, 'd', &st, 0, "-", rel->data);
			int sub = openat(dirfd(d), names[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (sub >= 0)
				r = rk_workspace_walk_dir(w, sub, rel);
		} else if (S_ISLNK(st.st_mode)) {
			char target[4096];
			ssize_t k = readlinkat(dirfd(d), names[i], target, sizeof(target) - 1);
			if (k < 0)
				continue;
			target[k] = '\0';
			rk_manifest_add_entry(&w->body, 'l', &st, 0, target, rel->data);
		} else if (S_ISREG(st.st_mode)) {
			const struct rk_mentry *p = rk_path_table_get(&w->prev, rel->data);
			char hex[65];
			int64_t size = st.st_size;
			if (p && p->type == 'f' && p->size == st.st_size &&
			    p->mtime_ns == rk_workspace_ns_of(&st.st_mtim) && p->ino == (uint64_t)st.st_ino &&
			    p->ctime_ns == rk_workspace_ns_of(&st.st_ctim)) {
				/* the previous manifest is the latest, so its objects are
				 * kept (prune and gc only drop unnamed ones): no stat needed */
				memcpy(hex, p->ref, 65);
				w->reused++;
			} else {
				/* swapped for a FIFO since the stat: refused, never
				 * blocked on while the key's lock is held */
				int fd = rk_fs_open_regular(dirfd(d), names[i], rel->data, NULL, NULL);
				if (fd < 0) {
					w->skipped++;
					continue;
				}
				r = w->store(w, fd, hex, &size);
				close(fd);
				if (r)
					break;
				w->hashed++;
			}
			rk_manifest_add_entry(&w->body, 'f', &st, size, hex, rel->data);
			w->files++;
			w->bytes += size;
		} else {
			/* sockets, fifos, devices: runtime state, never kept (and
			 * never opened); counted so the checkpoint says so */
			w->skipped++;
			if (w->skipped_names.len < 200) {
				if (w->skipped_names.len)
					rk_buf_adds(&w->skipped_names, ", ");
				rk_buf_printf(&w->skipped_names, "%s (%s)", rel->data, rk_fs_kind(st.st_mode));
			}
		}
	}
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	rel->len = base;
	rel->data[base] = '\0';
	closedir(d);
	return r;
}

char *rk_workspace_new_rev_id(void)
{
	unsigned char rnd[4];
	rk_random_bytes(rnd, sizeof(rnd));
	return rk_xasprintf("rev-%013lld-%02x%02x%02x%02x", (long long)rk_now_ms(), rnd[0], rnd[1], rnd[2], rnd[3]);
}

int rk_workspace_cmp_rev_desc(const void *a, const void *b)
{
	const struct rk_workspace_checkpoint *x = a, *y = b;
	if (x->created_at != y->created_at)
		return x->created_at < y->created_at ? 1 : -1;
	return -strcmp(x->id, y->id);
}

static int materialize_file(int dfd, const char *name, const struct rk_mentry *e, int as_root,
			    rk_workspace_open_object_fn open_object, void *ctx, struct rk_error *err)
{
	int in = open_object(ctx, e, err);
	if (in < 0)
		return in;
	int out = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (out < 0) {
		close(in);
		return rk_error_errno(err, RK_EIO, errno, "cannot create %s", e->path);
	}
	int r = 0;
	int64_t left = e->size;
	while (left > 0) {
		ssize_t n = copy_file_range(in, NULL, out, NULL, (size_t)(left > (1 << 30) ? (1 << 30) : left), 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			/* copy_file_range unsupported here: plain copy */
			char buf[65536];
			ssize_t k;
			while (left > 0 && (k = rk_fs_read_fd(in, buf, sizeof(buf))) > 0) {
				if (rk_fs_write_fd(out, buf, (size_t)k) != 0)
					break;
				left -= k;
			}
			break;
		}
		left -= n;
	}
	if (left != 0)
		r = rk_error_set(err, RK_ECORRUPT, "object %s of %s is shorter than recorded", e->ref, e->path);
	if (r == 0 && as_root && fchown(out, e->uid, e->gid) != 0)
		r = rk_error_errno(err, RK_EIO, errno, "cannot chown %s", e->path);
	if (r == 0 && fchmod(out, e->mode & 07777) != 0)
		r = rk_error_errno(err, RK_EIO, errno, "cannot chmod %s", e->path);
	struct timespec ts[2] = {{.tv_sec = e->mtime_ns / 1000000000LL, .tv_nsec = e->mtime_ns % 1000000000LL},
				 {.tv_sec = e->mtime_ns / 1000000000LL, .tv_nsec = e->mtime_ns % 1000000000LL}};
	if (r == 0)
		futimens(out, ts);
	close(out);
	close(in);
	return r;
}

/* Builds the tree of m under dir (an empty dir). */
int rk_workspace_materialize(const struct rk_manifest *m, const char *dir, rk_workspace_open_object_fn open_object,
			     void *ctx, struct rk_error *err)
{
	int as_root = geteuid() == 0;
	int root = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (root < 0)
		return rk_error_errno(err, RK_EIO, errno, "cannot open %s", dir);
	int r = 0;
	for (size_t i = 0; i < m->n && r == 0; i++) {
		const struct rk_mentry *e = &m->e[i];
		const char *leaf;
		int pfd = rk_fs_parent_beneath(dir, e->path, 0, &leaf, err);
		if (pfd < 0) {
			r = pfd;
			break;
		}
		if (e->type == 'd') {
			if (mkdirat(pfd, leaf, 0700) != 0 && errno != EEXIST)
				r = rk_error_errno(err, RK_EIO, errno, "cannot make %s", e->path);
			if (r == 0 && as_root)
				fchownat(pfd, leaf, e->uid, e->gid, AT_SYMLINK_NOFOLLOW);
		} else if (e->type == 'l') {
			if (symlinkat(e->ref, pfd, leaf) != 0)
				r = rk_error_errno(err, RK_EIO, errno, "cannot make link %s", e->path);
			if (r == 0 && as_root)
				fchownat(pfd, leaf, e->uid, e->gid, AT_SYMLINK_NOFOLLOW);
		} else {
			r = materialize_file(pfd, leaf, e, as_root, open_object, ctx, err);
		}
		close(pfd);
	}
	/* directory modes and times last, deepest first, so writing children cannot change them */
	for (size_t i = m->n; i-- > 0 && r == 0;) {
		const struct rk_mentry *e = &m->e[i];
		if (e->type != 'd')
			continue;
		struct timespec ts[2] = {{.tv_sec = e->mtime_ns / 1000000000LL, .tv_nsec = e->mtime_ns % 1000000000LL},
					 {.tv_sec = e->mtime_ns / 1000000000LL, .tv_nsec = e->mtime_ns % 1000000000LL}};
		fchmodat(root, e->path, e->mode & 07777, 0);
		utimensat(root, e->path, ts, AT_SYMLINK_NOFOLLOW);
	}
	if (r == 0 && syncfs(root) != 0)
		r = rk_error_errno(err, RK_EIO, errno, "cannot flush %s", dir);
	close(root);
	return r;
}
