/* The local home store (see home.h for the layout and the guarantees).
 *
 * Crash safety, step by step for a snapshot checkpoint:
 *   1. objects are written to objects/tmp/<random> and renamed to
 *      objects/<2 hex>/<sha256>; syncfs() makes them all durable at once
 *      (one flush instead of one fsync per file);
 *   2. the revision file (header + manifest) is written to a temp name,
 *      fsynced and renamed to revs/<id>, and the dir fsynced;
 *   3. `latest` is replaced the same way: from here the revision is latest;
 *   4. older revisions past `keep` are removed, then the objects only they
 *      named (checked against every home's manifests under the objects lock).
 * A kill between any two steps leaves the previous latest and every object it
 * names in place; what is left over (temp files, unreferenced objects) is
 * garbage that gc and the next checkpoint remove. Restores build a staging
 * dir beside the destination and swap it in with two renames; recovery puts
 * a .previous dir back when the kill fell between them. */

#include "engine/store/workspace.h"
#include "engine/store/manifest.h"

#include <archive.h>
#include <archive_entry.h>
#include <cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/util/buf.h"
#include "engine/util/fs.h"
#include "engine/util/id.h"
#include "engine/util/json.h"
#include "engine/util/log.h"
#include "engine/util/time.h"

#define RK_WORKSPACE_IOBUF (1u << 20)
#define RK_WORKSPACE_MANIFEST_MAX (1024u * 1024 * 1024)

/* --- paths and locks --------------------------------------------------------- */

struct local {
	struct rk_workspace_store base;
	char *data_dir, *objects, *revisions, *homes;
};


int rk_workspace_dir(const char *data_dir, const char *key, char **out, struct rk_error *err)
{
	int r = rk_workspace_check_key(key, err);
	if (r)
		return r;
	*out = rk_xasprintf("%s/homes/%s", data_dir, key);
	return 0;
}


static char *key_dir(struct local *s, const char *key)
{
	return rk_path_join(s->revisions, key);
}

static int lock_key(struct local *s, const char *key, int how, struct rk_error *err)
{
	char *dir = key_dir(s, key);
	int r = rk_fs_mkdirs(dir, 0700, err);
	if (r == 0) {
		char *p = rk_path_join(dir, "lock");
		r = rk_workspace_take_lock(p, how, err);
		free(p);
	}
	free(dir);
	return r;
}

static int lock_objects(struct local *s, int how, struct rk_error *err)
{
	int r = rk_fs_mkdirs(s->objects, 0700, err);
	if (r)
		return r;
	char *p = rk_path_join(s->objects, "lock");
	r = rk_workspace_take_lock(p, how, err);
	free(p);
	return r;
}

static void unlock(int fd)
{
	if (fd >= 0)
		close(fd); /* closing drops the flock */
}

/* --- swapping a staged dir in ------------------------------------------------ */


int rk_workspace_recover(const char *data_dir, const char *key, struct rk_error *err)
{
	struct local s = {.revisions = rk_path_join(data_dir, "home-revisions")};
	char *home = NULL;
	int r = rk_workspace_dir(data_dir, key, &home, err);
	int fd = r ? r : lock_key(&s, key, LOCK_EX, err);
	if (fd >= 0) {
		r = rk_workspace_swap_recover(home, err);
		unlock(fd);
	} else {
		r = fd;
	}
	free(home);
	free(s.revisions);
	return r;
}

int rk_workspace_staging_new(const char *data_dir, const char *key, char **out, struct rk_error *err)
{
	char *home = NULL;
	int r = rk_workspace_dir(data_dir, key, &home, err);
	if (r == 0)
		r = rk_workspace_staging_for(home, out, err);
	free(home);
	return r;
}

int rk_workspace_swap_in(const char *data_dir, const char *key, const char *staging, struct rk_error *err)
{
	char *home = NULL;
	int r = rk_workspace_dir(data_dir, key, &home, err);
	if (r == 0)
		r = rk_workspace_swap_dir(home, staging, err);
	free(home);
	return r;
}

int rk_workspace_lock_key(const char *data_dir, const char *key, int how, struct rk_error *err)
{
	struct local s = {.revisions = rk_path_join(data_dir, "home-revisions")};
	int r = rk_workspace_check_key(key, err);
	if (r == 0)
		r = lock_key(&s, key, how, err);
	free(s.revisions);
	return r;
}

int64_t rk_workspace_gc_staging(const char *data_dir)
{
	/* staging dirs of homes whose lock is free */
	int64_t removed = 0;
	char *homes = rk_path_join(data_dir, "homes");
	DIR *hd = opendir(homes);
	struct dirent *de;
	while (hd && (de = readdir(hd))) {
		const char *n = de->d_name;
		const char *st = strstr(n, ".staging-");
		const char *pv = strstr(n, ".previous");
		if (n[0] != '.' || (!st && !pv))
			continue;
		char *key = rk_xstrndup(n + 1, (size_t)((st ? st : pv) - n - 1));
		struct rk_error e2;
		int k = rk_workspace_lock_key(data_dir, key, LOCK_EX | LOCK_NB, &e2);
		if (k >= 0) {
			char *home = rk_path_join(homes, key);
			rk_workspace_swap_recover(home, NULL);
			free(home);
			unlock(k);
			removed++;
		}
		free(key);
	}
	if (hd)
		closedir(hd);
	free(homes);
	return removed;
}


static char *rev_path(struct local *s, const char *key, const char *rev)
{
	return rk_xasprintf("%s/%s/revs/%s", s->revisions, key, rev);
}

/* The first line of a file (bounded), for listing without reading manifests. */
static int read_first_line(const char *path, struct rk_buf *out, struct rk_error *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return rk_error_errno(err, errno == ENOENT ? RK_ENOTFOUND : RK_EIO, errno, "cannot open %s", path);
	char buf[4096];
	ssize_t n = rk_fs_read_fd(fd, buf, sizeof(buf));
	close(fd);
	if (n < 0)
		return rk_error_errno(err, RK_EIO, errno, "cannot read %s", path);
	char *nl = memchr(buf, '\n', (size_t)n);
	if (!nl)
		return rk_error_set(err, RK_ECORRUPT, "%s has no header line", path);
	rk_buf_add(out, buf, (size_t)(nl - buf + 1));
	return 0;
}

/* Reads revs/<rev>: the header always (want_entries -1: only the header,
 * unchecked); the manifest checksum is checked and with want_entries 1 the
 * entries parsed. */
static int manifest_load(struct local *s, const char *key, const char *rev, int want_entries, struct rk_manifest *m,
			 struct rk_error *err)
{
	memset(m, 0, sizeof(*m));
	rk_buf_init(&m->text);
	if (!rk_workspace_valid_rev(rev))
		return rk_error_set(err, RK_ENOTFOUND, "no checkpoint '%s' (see `rakazo checkpoint list`)",
				    rev ? rev : "");
	char *p = rev_path(s, key, rev);
	int r = want_entries < 0 ? read_first_line(p, &m->text, err)
				 : rk_fs_read_all(p, RK_WORKSPACE_MANIFEST_MAX, &m->text, err);
	if (r == -RK_ENOTFOUND)
		r = rk_error_set(err, RK_ENOTFOUND, "no checkpoint '%s' of workspace %s", rev, key);
	free(p);
	if (r)
		return r;
	return rk_manifest_parse(m, rev, want_entries, err);
}

static int read_latest_id(struct local *s, const char *key, char **out, struct rk_error *err)
{
	char *p = rk_xasprintf("%s/%s/latest", s->revisions, key);
	struct rk_buf b;
	rk_buf_init(&b);
	int r = rk_fs_read_all(p, 256, &b, err);
	free(p);
	if (r == -RK_ENOTFOUND) {
		rk_buf_release(&b);
		return rk_error_set(err, RK_ENOTFOUND, "workspace %s has no checkpoint yet", key);
	}
	if (r == 0) {
		b.data[strcspn(b.data, "\n")] = '\0';
		if (!rk_workspace_valid_rev(b.data))
			r = rk_error_set(err, RK_ECORRUPT, "workspace %s: the latest marker is damaged", key);
	}
	if (r == 0)
		*out = rk_buf_detach(&b, NULL);
	rk_buf_release(&b);
	return r;
}


/* --- objects ------------------------------------------------------------------ */

static char *object_path(struct local *s, const char *hex)
{
	return rk_xasprintf("%s/%.2s/%s", s->objects, hex, hex);
}

static int object_ok(struct local *s, const char *hex, int64_t size)
{
	char *p = object_path(s, hex);
	struct stat st;
	int ok = stat(p, &st) == 0 && S_ISREG(st.st_mode) && st.st_size == size;
	free(p);
	return ok;
}

#define FSYNC_EACH_MAX 32

struct walk {
	struct rk_workspace_walk base; /* first: store gets &base */
	struct local *s;
	char **fresh; /* objects written by this checkpoint (paths), up to FSYNC_EACH_MAX + 1 */
	size_t nfresh;
	unsigned char made[256];
};

static int publish_object(struct walk *w, const char *tmp, const char *hex, int64_t size)
{
	unsigned idx = (unsigned)strtoul((char[3]){hex[0], hex[1], 0}, NULL, 16);
	char *p = object_path(w->s, hex);
	if (!w->made[idx]) {
		char *d = rk_xasprintf("%s/%.2s", w->s->objects, hex);
		if (mkdir(d, 0700) != 0 && errno != EEXIST) {
			int r = rk_error_errno(w->base.err, RK_EIO, errno, "cannot make %s", d);
			free(d);
			free(p);
			unlink(tmp);
			return r;
		}
		free(d);
		w->made[idx] = 1;
	}
	struct stat st;
	if (stat(p, &st) == 0 && st.st_size == size) {
		unlink(tmp); /* the same content is already stored */
	} else if (rename(tmp, p) != 0) {
		int r = rk_error_errno(w->base.err, RK_EIO, errno, "cannot store object %s", p);
		free(p);
		unlink(tmp);
		return r;
	} else if (w->nfresh <= FSYNC_EACH_MAX) {
		w->fresh = rk_xrealloc(w->fresh, (w->nfresh + 1) * sizeof(*w->fresh));
		w->fresh[w->nfresh++] = p;
		return 0;
	}
	free(p);
	return 0;
}

static int new_tmp(struct walk *w, char **path)
{
	char *p = rk_xasprintf("%s/tmp/o-XXXXXX", w->s->objects);
	int fd = mkostemp(p, O_CLOEXEC);
	if (fd < 0) {
		int r = rk_error_errno(w->base.err, RK_EIO, errno, "cannot write in %s/tmp", w->s->objects);
		free(p);
		return r;
	}
	*path = p;
	return fd;
}

/* Hashes the file open on fd and stores its content as an object. */
static int store_file(struct rk_workspace_walk *base, int fd, char hex[65], int64_t *size)
{
	struct walk *w = (struct walk *)base;
	crypto_hash_sha256_state h;
	crypto_hash_sha256_init(&h);
	ssize_t n = rk_fs_read_fd(fd, w->base.io, RK_WORKSPACE_IOBUF);
	if (n < 0)
		return rk_error_errno(w->base.err, RK_EIO, errno, "cannot read a workspace file");
	unsigned char d[32];
	if ((size_t)n < RK_WORKSPACE_IOBUF) {
		/* small file: hash first, write only when the content is new */
		crypto_hash_sha256_update(&h, w->base.io, (size_t)n);
		crypto_hash_sha256_final(&h, d);
		sodium_bin2hex(hex, 65, d, sizeof(d));
		*size = n;
		if (object_ok(w->s, hex, n))
			return 0;
		char *tmp;
		int out = new_tmp(w, &tmp);
		if (out < 0)
			return out;
		int r = 0;
		if (rk_fs_write_fd(out, w->base.io, (size_t)n) != 0)
			r = rk_error_errno(w->base.err, RK_EIO, errno, "cannot write object %s", tmp);
		close(out);
		if (r == 0)
			r = publish_object(w, tmp, hex, n);
		else
			unlink(tmp);
		free(tmp);
		return r;
	}
	char *tmp;
	int out = new_tmp(w, &tmp);
	if (out < 0)
		return out;
	int64_t total = 0;
	int r = 0;
	while (n > 0) {
		crypto_hash_sha256_update(&h, w->base.io, (size_t)n);
		if (rk_fs_write_fd(out, w->base.io, (size_t)n) != 0) {
			r = rk_error_errno(w->base.err, RK_EIO, errno, "cannot write object %s", tmp);
			break;
		}
		total += n;
		n = rk_fs_read_fd(fd, w->base.io, RK_WORKSPACE_IOBUF);
	}
	if (r == 0 && n < 0)
		r = rk_error_errno(w->base.err, RK_EIO, errno, "cannot read a workspace file");
	close(out);
	if (r == 0) {
		crypto_hash_sha256_final(&h, d);
		sodium_bin2hex(hex, 65, d, sizeof(d));
		*size = total;
		r = publish_object(w, tmp, hex, total);
	} else {
		unlink(tmp);
	}
	free(tmp);
	return r;
}


/* --- revisions on disk ------------------------------------------------------------ */


static int write_revision(struct local *s, const char *key, const struct rk_workspace_checkpoint *meta,
			  const struct rk_buf *body, struct rk_error *err)
{
	char *dir = rk_xasprintf("%s/%s/revs", s->revisions, key);
	int r = rk_fs_mkdirs(dir, 0700, err);
	free(dir);
	if (r)
		return r;
	struct rk_buf all;
	rk_buf_init(&all);
	rk_manifest_compose(meta, body, &all);
	char *p = rev_path(s, key, meta->id);
	r = rk_fs_write_atomic(p, all.data, all.len, 0600, err);
	free(p);
	rk_buf_release(&all);
	if (r)
		return r;
	p = rk_xasprintf("%s/%s/latest", s->revisions, key);
	char *text = rk_xasprintf("%s\n", meta->id);
	r = rk_fs_write_atomic(p, text, strlen(text), 0600, err);
	free(text);
	free(p);
	return r;
}


/* Headers of every revision of key, newest first. */
static int list_locked(struct local *s, const char *key, struct rk_workspace_checkpoint **out, size_t *n,
		       struct rk_error *err)
{
	*out = NULL;
	*n = 0;
	char *dir = rk_xasprintf("%s/%s/revs", s->revisions, key);
	DIR *d = opendir(dir);
	free(dir);
	if (!d)
		return errno == ENOENT ? 0 : rk_error_errno(err, RK_EIO, errno, "cannot list checkpoints of %s", key);
	size_t cap = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (!rk_workspace_valid_rev(de->d_name))
			continue; /* temp files of an interrupted write */
		struct rk_manifest m;
		struct rk_error e2;
		if (manifest_load(s, key, de->d_name, -1, &m, &e2) != 0) {
			rk_log(RK_LOG_WARN, "workspace %s: skipping checkpoint %s: %s", key, de->d_name, e2.message);
			continue;
		}
		if (*n == cap) {
			cap = cap ? cap * 2 : 8;
			*out = rk_xrealloc(*out, cap * sizeof(**out));
		}
		rk_manifest_take_meta(&m, &(*out)[(*n)++]);
	}
	closedir(d);
	if (*n)
		qsort(*out, *n, sizeof(**out), rk_workspace_cmp_rev_desc);
	return 0;
}

/* Hashes named by every manifest of every home, except skip_key/skip_rev. */
static void collect_refs(struct local *s, struct rk_hset *refs)
{
	DIR *d = opendir(s->revisions);
	struct dirent *de;
	while (d && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		char *rdir = rk_xasprintf("%s/%s/revs", s->revisions, de->d_name);
		DIR *rd = opendir(rdir);
		struct dirent *re;
		while (rd && (re = readdir(rd))) {
			if (!rk_workspace_valid_rev(re->d_name))
				continue;
			struct rk_manifest m;
			if (manifest_load(s, de->d_name, re->d_name, 1, &m, NULL) != 0)
				continue;
			for (size_t i = 0; i < m.n; i++)
				if (m.e[i].type == 'f')
					rk_hset_add(refs, m.e[i].ref);
			rk_manifest_release(&m);
		}
		if (rd)
			closedir(rd);
		free(rdir);
	}
	if (d)
		closedir(d);
}

/* Which of a few candidate hashes any manifest of any home names: a search
 * of the manifests' text, cheaper than parsing them all. */
static void find_refs(struct local *s, const struct rk_hset *cand, struct rk_hset *refs)
{
	DIR *d = opendir(s->revisions);
	struct dirent *de;
	while (d && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		char *rdir = rk_xasprintf("%s/%s/revs", s->revisions, de->d_name);
		DIR *rd = opendir(rdir);
		struct dirent *re;
		while (rd && (re = readdir(rd))) {
			if (!rk_workspace_valid_rev(re->d_name))
				continue;
			char *p = rk_path_join(rdir, re->d_name);
			struct rk_buf b;
			rk_buf_init(&b);
			if (rk_fs_read_all(p, RK_WORKSPACE_MANIFEST_MAX, &b, NULL) == 0)
				for (size_t i = 0; i <= cand->mask; i++)
					if (cand->k[i][0] && memmem(b.data, b.len, cand->k[i], 64))
						rk_hset_add(refs, cand->k[i]);
			rk_buf_release(&b);
			free(p);
		}
		if (rd)
			closedir(rd);
		free(rdir);
	}
	if (d)
		closedir(d);
}

/* Removes revisions past keep (never the latest) and the objects only they named. */
static int prune_locked(struct local *s, const char *key, const char *latest, int keep, struct rk_error *err)
{
	struct rk_workspace_checkpoint *revs;
	size_t n;
	int r = list_locked(s, key, &revs, &n, err);
	if (r)
		return r;
	struct rk_hset candidates = {0};
	int kept = latest ? 1 : 0; /* the latest always stays */
	for (size_t i = 0; i < n; i++) {
		if (latest && !strcmp(revs[i].id, latest))
			continue;
		if (kept < keep) {
			kept++;
			continue;
		}
		struct rk_manifest m;
		if (revs[i].kind == RK_WORKSPACE_SNAPSHOT && manifest_load(s, key, revs[i].id, 1, &m, NULL) == 0) {
			for (size_t k = 0; k < m.n; k++)
				if (m.e[k].type == 'f')
					rk_hset_add(&candidates, m.e[k].ref);
			rk_manifest_release(&m);
		}
		char *p = rev_path(s, key, revs[i].id);
		unlink(p);
		free(p);
	}
	rk_workspace_checkpoints_free(revs, n);
	if (!candidates.n) {
		free(candidates.k);
		return 0;
	}
	char *dir = rk_xasprintf("%s/%s/revs", s->revisions, key);
	rk_fs_fsync_dir(dir);
	free(dir);
	/* an object goes only when no manifest of any home names it; the
	 * exclusive objects lock keeps other checkpoints from reusing one meanwhile */
	int lk = lock_objects(s, LOCK_EX, err);
	if (lk < 0) {
		free(candidates.k);
		return lk;
	}
	struct rk_hset refs = {0};
	if (candidates.n <= 64)
		find_refs(s, &candidates, &refs);
	else
		collect_refs(s, &refs);
	for (size_t i = 0; i <= candidates.mask; i++) {
		if (!candidates.k[i][0] || rk_hset_has(&refs, candidates.k[i]))
			continue;
		char *p = object_path(s, candidates.k[i]);
		unlink(p);
		free(p);
	}
	unlock(lk);
	free(refs.k);
	free(candidates.k);
	return 0;
}

/* --- the store's operations ------------------------------------------------------------ */

static int local_describe(struct rk_workspace_store *base, struct rk_workspace_desc *out, struct rk_error *err)
{
	struct local *s = (struct local *)base;
	(void)err;
	out->name = "local";
	out->caps = RK_WORKSPACE_REVISIONS | RK_WORKSPACE_MARKERS;
	out->location = rk_xstrdup(s->data_dir);
	return 0;
}

static int local_latest(struct rk_workspace_store *base, const char *key, struct rk_workspace_checkpoint *out,
			struct rk_error *err)
{
	struct local *s = (struct local *)base;
	int r = rk_workspace_check_key(key, err);
	if (r)
		return r;
	char *id = NULL;
	if ((r = read_latest_id(s, key, &id, err)))
		return r;
	struct rk_manifest m;
	r = manifest_load(s, key, id, 0, &m, err);
	free(id);
	if (r)
		return r;
	rk_manifest_take_meta(&m, out);
	return 0;
}

static int local_show(struct rk_workspace_store *base, const char *key, const char *rev,
		      struct rk_workspace_checkpoint *out, struct rk_error *err)
{
	struct local *s = (struct local *)base;
	int r = rk_workspace_check_key(key, err);
	if (r)
		return r;
	if (!rev)
		return local_latest(base, key, out, err);
	struct rk_manifest m;
	if ((r = manifest_load(s, key, rev, 0, &m, err)))
		return r;
	rk_manifest_take_meta(&m, out);
	return 0;
}

static int local_list(struct rk_workspace_store *base, const char *key, struct rk_workspace_checkpoint **out, size_t *n,
		      struct rk_error *err)
{
	struct local *s = (struct local *)base;
	int r = rk_workspace_check_key(key, err);
	if (r)
		return r;
	int lk = lock_key(s, key, LOCK_SH, err);
	if (lk < 0)
		return lk;
	r = list_locked(s, key, out, n, err);
	unlock(lk);
	return r;
}

static int local_checkpoint(struct rk_workspace_store *base, const char *key,
			    const struct rk_workspace_checkpoint_req *req, struct rk_workspace_checkpoint *out,
			    struct rk_error *err)
{
	struct local *s = (struct local *)base;
	int r = rk_workspace_check_key(key, err);
	if (r)
		return r;
	int64_t t0 = rk_monotonic_ms();
	int lk = lock_key(s, key, LOCK_EX, err);
	if (lk < 0)
		return lk;
	struct rk_workspace_checkpoint meta = {0};
	meta.reason = rk_xstrdup(req->reason ? req->reason : "manual");
	meta.kind = req->kind;
	meta.bytes = meta.files = -1;
	struct walk w = {.base = {.err = err, .store = store_file}, .s = s};
	rk_buf_init(&w.base.body);
	rk_buf_init(&w.base.skipped_names);
	struct rk_manifest prev = {0};
	rk_buf_init(&prev.text);
	int olk = -1;
	struct stat st;
	if (stat(req->src_dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
		r = rk_error_errno(err, RK_ENOTFOUND, errno, "the workspace %s to checkpoint is missing", req->src_dir);
		goto out;
	}
	if (req->kind == RK_WORKSPACE_SNAPSHOT) {
		char *pid = NULL;
		struct rk_error e2;
		if (read_latest_id(s, key, &pid, &e2) == 0) {
			if (manifest_load(s, key, pid, 1, &prev, &e2) == 0)
				rk_path_table_build(&w.base.prev, &prev);
			free(pid);
		}
		char *tmpdir = rk_path_join(s->objects, "tmp");
		r = rk_fs_mkdirs(tmpdir, 0700, err);
		free(tmpdir);
		if (r)
			goto out;
		/* shared: other checkpoints may write objects too, only gc excludes us */
		if ((olk = lock_objects(s, LOCK_SH, err)) < 0) {
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
		int sfd = dup(dfd);
		r = rk_workspace_walk_dir(&w.base, dfd, &rel);
		rk_buf_release(&rel);
		/* every object durable before a manifest names it: a few are
		 * fsynced one by one, many at once with syncfs */
		if (r == 0 && w.nfresh > FSYNC_EACH_MAX && sfd >= 0 && syncfs(sfd) != 0)
			r = rk_error_errno(err, RK_EIO, errno, "cannot flush the objects");
		for (size_t i = 0; r == 0 && w.nfresh <= FSYNC_EACH_MAX && i < w.nfresh; i++) {
			int ofd = open(w.fresh[i], O_RDONLY | O_CLOEXEC);
			if (ofd < 0 || fdatasync(ofd) != 0)
				r = rk_error_errno(err, RK_EIO, errno, "cannot flush object %s", w.fresh[i]);
			if (ofd >= 0)
				close(ofd);
			char *slash = strrchr(w.fresh[i], '/');
			*slash = '\0';
			if (r == 0 && (i == 0 || strcmp(w.fresh[i], w.fresh[i - 1])))
				rk_fs_fsync_dir(w.fresh[i]);
		}
		if (sfd >= 0)
			close(sfd);
		if (r)
			goto out;
		char hex[65];
		rk_sha256_hex(w.base.body.data, w.base.body.len, hex);
		meta.checksum = rk_xstrdup(hex);
		meta.files = w.base.files;
		meta.bytes = w.base.bytes;
		meta.reused = w.base.reused;
		meta.hashed = w.base.hashed;
		meta.skipped = w.base.skipped;
		if (w.base.skipped_names.len)
			meta.skipped_names = rk_buf_detach(&w.base.skipped_names, NULL);
	}
	meta.id = rk_workspace_new_rev_id();
	meta.created_at = rk_now_ms();
	meta.ms = rk_monotonic_ms() - t0;
	if ((r = write_revision(s, key, &meta, req->kind == RK_WORKSPACE_SNAPSHOT ? &w.base.body : NULL, err)))
		goto out;
	unlock(olk);
	olk = -1;
	struct rk_error e3;
	if (prune_locked(s, key, meta.id, req->keep < 1 ? 1 : req->keep, &e3) != 0)
		rk_log(RK_LOG_WARN, "workspace %s: pruning old checkpoints: %s", key, e3.message);
	meta.ms = rk_monotonic_ms() - t0;
	*out = meta;
	memset(&meta, 0, sizeof(meta));
out:
	unlock(olk);
	unlock(lk);
	rk_workspace_checkpoint_release(&meta);
	rk_buf_release(&w.base.body);
	rk_buf_release(&w.base.skipped_names);
	for (size_t i = 0; i < w.nfresh; i++)
		free(w.fresh[i]);
	free(w.fresh);
	free(w.base.prev.slot);
	free(w.base.io);
	rk_manifest_release(&prev);
	return r;
}


/* The object of e, for reading (rk_workspace_open_object_fn). */
static int local_open_object(void *ctx, const struct rk_mentry *e, struct rk_error *err)
{
	char *op = object_path(ctx, e->ref);
	int fd = open(op, O_RDONLY | O_CLOEXEC);
	free(op);
	if (fd < 0)
		return rk_error_errno(err, RK_ECORRUPT, errno, "object %.12s of %s is missing", e->ref, e->path);
	return fd;
}

static int local_restore(struct rk_workspace_store *base, const char *key, const char *rev, const char *dest,
			 struct rk_workspace_checkpoint *out, struct rk_error *err)
{
	struct local *s = (struct local *)base;
	int r = rk_workspace_check_key(key, err);
	if (r)
		return r;
	int lk = lock_key(s, key, LOCK_EX, err);
	if (lk < 0)
		return lk;
	char *id = NULL, *staging = NULL;
	struct rk_manifest m = {0};
	rk_buf_init(&m.text);
	if ((r = rk_workspace_swap_recover(dest, err)))
		goto out;
	if (rev)
		id = rk_xstrdup(rev);
	else if ((r = read_latest_id(s, key, &id, err)))
		goto out;
	if ((r = manifest_load(s, key, id, 1, &m, err)))
		goto out;
	if (m.meta.kind == RK_WORKSPACE_MARKER) {
		char *home = rk_xasprintf("%s/%s", s->homes, key);
		char *latest = NULL;
		int is_latest = read_latest_id(s, key, &latest, NULL) == 0 && !strcmp(latest, id);
		int live = !strcmp(home, dest) && rk_fs_exists(dest);
		free(latest);
		free(home);
		if (!(is_latest && live)) {
			r = rk_error_set(err, RK_EUNSUPPORTED,
					 "checkpoint %s is a marker: the workspace was live and no copy was kept "
					 "(keep more checkpoints with --revisions N to restore older states)",
					 id);
			goto out;
		}
	} else {
		if ((r = rk_workspace_staging_for(dest, &staging, err)) ||
		    (r = rk_workspace_materialize(&m, staging, local_open_object, s, err)) ||
		    (r = rk_workspace_swap_dir(dest, staging, err)))
			goto out;
		free(staging);
		staging = NULL;
	}
	if (out) {
		*out = m.meta;
		memset(&m.meta, 0, sizeof(m.meta));
	}
out:
	if (staging) {
		rk_fs_remove_tree(staging, NULL);
		free(staging);
	}
	rk_manifest_release(&m);
	free(id);
	unlock(lk);
	return r;
}

static int hash_object(struct local *s, const char *hex, int64_t *size, char out[65])
{
	char *p = object_path(s, hex);
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	free(p);
	if (fd < 0)
		return -1;
	crypto_hash_sha256_state h;
	crypto_hash_sha256_init(&h);
	unsigned char *buf = rk_xmalloc(RK_WORKSPACE_IOBUF);
	ssize_t n;
	*size = 0;
	while ((n = rk_fs_read_fd(fd, buf, RK_WORKSPACE_IOBUF)) > 0) {
		crypto_hash_sha256_update(&h, buf, (size_t)n);
		*size += n;
	}
	free(buf);
	close(fd);
	unsigned char d[32];
	crypto_hash_sha256_final(&h, d);
	sodium_bin2hex(out, 65, d, sizeof(d));
	return n < 0 ? -1 : 0;
}

static int local_verify(struct rk_workspace_store *base, const char *key, const char *rev, int deep,
			struct rk_workspace_verify *out, struct rk_error *err)
{
	struct local *s = (struct local *)base;
	memset(out, 0, sizeof(*out));
	int r = rk_workspace_check_key(key, err);
	if (r)
		return r;
	int lk = lock_key(s, key, LOCK_SH, err);
	if (lk < 0)
		return lk;
	char *id = NULL;
	struct rk_manifest m = {0};
	rk_buf_init(&m.text);
	if (rev)
		id = rk_xstrdup(rev);
	else if ((r = read_latest_id(s, key, &id, err)))
		goto out;
	struct rk_error e2;
	if (manifest_load(s, key, id, 1, &m, &e2) != 0) {
		if (e2.code == RK_ENOTFOUND) {
			r = rk_error_set(err, RK_ENOTFOUND, "%s", e2.message);
			goto out;
		}
		snprintf(out->problem, sizeof(out->problem), "%.1000s", e2.message);
		goto out;
	}
	if (m.meta.kind == RK_WORKSPACE_MARKER) {
		char *home = rk_xasprintf("%s/%s", s->homes, key);
		struct stat st;
		if (stat(home, &st) != 0 || !S_ISDIR(st.st_mode))
			snprintf(out->problem, sizeof(out->problem), "marker %s: the live workspace %s is missing", id,
				 home);
		else
			out->ok = 1;
		free(home);
		goto out;
	}
	for (size_t i = 0; i < m.n; i++) {
		const struct rk_mentry *e = &m.e[i];
		if (e->type != 'f')
			continue;
		out->files++;
		out->bytes += e->size;
		int good;
		if (deep) {
			char hex[65];
			int64_t size;
			int read_ok = hash_object(s, e->ref, &size, hex) == 0;
			good = read_ok && size == e->size && !strcmp(hex, e->ref);
			if (!read_ok)
				out->missing++;
			else if (!good)
				out->corrupt++;
		} else {
			good = object_ok(s, e->ref, e->size);
			if (!good)
				out->missing++;
		}
		if (!good && !out->problem[0])
			snprintf(out->problem, sizeof(out->problem), "%s: object %.12s is %s", e->path, e->ref,
				 deep ? "missing or damaged" : "missing or the wrong size");
	}
	out->ok = !out->missing && !out->corrupt;
out:
	rk_manifest_release(&m);
	free(id);
	unlock(lk);
	return r;
}

static int local_gc(struct rk_workspace_store *base, struct rk_workspace_gc_stats *out, struct rk_error *err)
{
	struct local *s = (struct local *)base;
	memset(out, 0, sizeof(*out));
	int lk = lock_objects(s, LOCK_EX, err);
	if (lk < 0)
		return lk;
	struct rk_hset refs = {0};
	collect_refs(s, &refs);
	for (int i = 0; i < 256; i++) {
		char *d = rk_xasprintf("%s/%02x", s->objects, i);
		DIR *dd = opendir(d);
		struct dirent *de;
		while (dd && (de = readdir(dd))) {
			if (strlen(de->d_name) != 64)
				continue;
			if (rk_hset_has(&refs, de->d_name)) {
				out->objects_kept++;
				continue;
			}
			char *p = rk_path_join(d, de->d_name);
			struct stat st;
			if (stat(p, &st) == 0)
				out->bytes_removed += st.st_size;
			if (unlink(p) == 0)
				out->objects_removed++;
			free(p);
		}
		if (dd)
			closedir(dd);
		free(d);
	}
	/* no checkpoint writes objects while we hold the lock: temp files are stale */
	char *tmp = rk_path_join(s->objects, "tmp");
	rk_fs_remove_tree(tmp, NULL);
	free(tmp);
	unlock(lk);
	free(refs.k);
	out->staging_removed = rk_workspace_gc_staging(s->data_dir);
	return 0;
}

static int local_forget(struct rk_workspace_store *base, const char *key, struct rk_error *err)
{
	struct local *s = (struct local *)base;
	int r = rk_workspace_check_key(key, err);
	if (r)
		return r;
	int lk = lock_key(s, key, LOCK_EX, err);
	if (lk < 0)
		return lk;
	char *latest = rk_xasprintf("%s/%s/latest", s->revisions, key);
	unlink(latest);
	free(latest);
	r = prune_locked(s, key, NULL, 0, err);
	if (r == 0) {
		char *revs = rk_xasprintf("%s/%s/revs", s->revisions, key);
		r = rk_fs_remove_tree(revs, err);
		free(revs);
	}
	unlock(lk);
	return r;
}

/* --- tar streams ---------------------------------------------------------------------------- */

static int tar_err(struct archive *a, struct rk_error *err, const char *what)
{
	return rk_error_set(err, RK_EIO, "cannot %s the workspace archive: %s", what,
			    archive_error_string(a) ? archive_error_string(a) : "unknown error");
}

static struct archive *tar_writer(int fd, int zstd, struct rk_error *err)
{
	struct archive *a = archive_write_new();
	archive_write_set_format_pax_restricted(a);
	if (zstd && archive_write_add_filter_zstd(a) != ARCHIVE_OK) {
		tar_err(a, err, "compress");
		archive_write_free(a);
		return NULL;
	}
	archive_write_set_bytes_in_last_block(a, 1);
	if (archive_write_open_fd(a, fd) != ARCHIVE_OK) {
		tar_err(a, err, "start");
		archive_write_free(a);
		return NULL;
	}
	return a;
}

/* Writes the content of fd (size bytes) as the entry's data, padding a file that shrank. */
static int tar_copy(struct archive *a, int fd, int64_t size, unsigned char *buf, struct rk_error *err)
{
	int64_t left = size;
	while (left > 0) {
		ssize_t n = rk_fs_read_fd(fd, buf, left < RK_WORKSPACE_IOBUF ? (size_t)left : RK_WORKSPACE_IOBUF);
		if (n <= 0)
			break;
		if (archive_write_data(a, buf, (size_t)n) < 0)
			return tar_err(a, err, "write");
		left -= n;
	}
	memset(buf, 0, 65536);
	while (left > 0) {
		size_t k = left < 65536 ? (size_t)left : 65536;
		if (archive_write_data(a, buf, k) < 0)
			return tar_err(a, err, "write");
		left -= (int64_t)k;
	}
	return 0;
}

static int export_walk(struct archive *a, int dfd, struct rk_buf *rel, unsigned char *buf, struct rk_error *err)
{
	DIR *d = fdopendir(dfd);
	if (!d) {
		close(dfd);
		return rk_error_errno(err, RK_EIO, errno, "cannot read the workspace");
	}
	size_t n;
	char **names = rk_workspace_list_names(d, &n);
	size_t base = rel->len;
	int r = 0;
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
			continue;
		if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode) && !S_ISLNK(st.st_mode))
			continue;
		struct archive_entry *e = archive_entry_new();
		archive_entry_copy_stat(e, &st);
		archive_entry_set_pathname(e, rel->data);
		archive_entry_set_nlink(e, S_ISDIR(st.st_mode) ? 2 : 1);
		int fd = -1;
		if (S_ISLNK(st.st_mode)) {
			char target[4096];
			ssize_t k = readlinkat(dirfd(d), names[i], target, sizeof(target) - 1);
			if (k < 0) {
				archive_entry_free(e);
				continue;
			}
			target[k] = '\0';
			archive_entry_set_symlink(e, target);
			archive_entry_set_size(e, 0);
		} else if (S_ISREG(st.st_mode)) {
			/* swapped for a FIFO since the stat: refused, never blocked on */
			fd = rk_fs_open_regular(dirfd(d), names[i], rel->data, NULL, NULL);
			if (fd < 0) {
				archive_entry_free(e);
				continue;
			}
		} else {
			archive_entry_set_size(e, 0);
		}
		if (archive_write_header(a, e) != ARCHIVE_OK)
			r = tar_err(a, err, "write");
		if (r == 0 && fd >= 0)
			r = tar_copy(a, fd, st.st_size, buf, err);
		if (fd >= 0)
			close(fd);
		archive_entry_free(e);
		if (r == 0 && S_ISDIR(st.st_mode)) {
			int sub = openat(dirfd(d), names[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (sub >= 0)
				r = export_walk(a, sub, rel, buf, err);
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

static int tar_finish(struct archive *a, int r, struct rk_error *err)
{
	if (archive_write_close(a) != ARCHIVE_OK && r == 0)
		r = tar_err(a, err, "finish");
	archive_write_free(a);
	return r;
}

int rk_workspace_export_dir(const char *dir, int fd, int zstd, struct rk_error *err)
{
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return rk_error_errno(err, errno == ENOENT ? RK_ENOTFOUND : RK_EIO, errno,
				      "cannot open the workspace %s", dir);
	struct archive *a = tar_writer(fd, zstd, err);
	if (!a) {
		close(dfd);
		return -rk_err(err)->code;
	}
	unsigned char *buf = rk_xmalloc(RK_WORKSPACE_IOBUF);
	struct rk_buf rel;
	rk_buf_init(&rel);
	int r = export_walk(a, dfd, &rel, buf, err);
	rk_buf_release(&rel);
	free(buf);
	return tar_finish(a, r, err);
}

int rk_workspace_export_manifest(const struct rk_manifest *m, int fd, int zstd, rk_workspace_open_object_fn open_object,
				 void *ctx, struct rk_error *err)
{
	int r = 0;
	struct archive *a = tar_writer(fd, zstd, err);
	if (!a) {
		return -rk_err(err)->code;
	}
	unsigned char *buf = rk_xmalloc(RK_WORKSPACE_IOBUF);
	for (size_t i = 0; i < m->n && r == 0; i++) {
		const struct rk_mentry *me = &m->e[i];
		struct archive_entry *e = archive_entry_new();
		archive_entry_set_pathname(e, me->path);
		archive_entry_set_perm(e, me->mode & 07777);
		archive_entry_set_uid(e, me->uid);
		archive_entry_set_gid(e, me->gid);
		archive_entry_set_mtime(e, me->mtime_ns / 1000000000LL, me->mtime_ns % 1000000000LL);
		int ofd = -1;
		if (me->type == 'd') {
			archive_entry_set_filetype(e, AE_IFDIR);
		} else if (me->type == 'l') {
			archive_entry_set_filetype(e, AE_IFLNK);
			archive_entry_set_symlink(e, me->ref);
		} else {
			archive_entry_set_filetype(e, AE_IFREG);
			archive_entry_set_size(e, me->size);
			ofd = open_object(ctx, me, err);
			if (ofd < 0)
				r = ofd;
		}
		if (r == 0 && archive_write_header(a, e) != ARCHIVE_OK)
			r = tar_err(a, err, "write");
		if (r == 0 && ofd >= 0)
			r = tar_copy(a, ofd, me->size, buf, err);
		if (ofd >= 0)
			close(ofd);
		archive_entry_free(e);
	}
	free(buf);
	return tar_finish(a, r, err);
}

static int local_export_tar(struct rk_workspace_store *base, const char *key, const char *rev, int fd, int zstd,
			    struct rk_error *err)
{
	struct local *s = (struct local *)base;
	int r = rk_workspace_check_key(key, err);
	if (r)
		return r;
	int lk = lock_key(s, key, LOCK_SH, err);
	if (lk < 0)
		return lk;
	char *id = NULL;
	struct rk_manifest m = {0};
	rk_buf_init(&m.text);
	if (rev)
		id = rk_xstrdup(rev);
	else if ((r = read_latest_id(s, key, &id, err)))
		goto out;
	if ((r = manifest_load(s, key, id, 1, &m, err)))
		goto out;
	if (m.meta.kind == RK_WORKSPACE_MARKER) {
		char *home = rk_path_join(s->homes, key);
		r = rk_workspace_export_dir(home, fd, zstd, err);
		free(home);
		goto out;
	}
	r = rk_workspace_export_manifest(&m, fd, zstd, local_open_object, s, err);
out:
	rk_manifest_release(&m);
	free(id);
	unlock(lk);
	return r;
}

/* --- strict import -------------------------------------------------------------------------------- */

static int skip_excluded(const char *rel)
{
	return rk_workspace_excluded(rel);
}

int rk_workspace_import_tar(int fd, const char *dir, const struct rk_tar_opts *opt,
			    struct rk_workspace_import_stats *stats, struct rk_error *err)
{
	struct rk_tar_opts o = RK_TAR_OPTS_INIT;
	if (opt)
		o = *opt;
	if (!o.skip)
		o.skip = skip_excluded;
	struct rk_tar_stats st = {0};
	int r = rk_tar_unpack(fd, dir, &o, &st, err);
	if (stats) {
		stats->files = (int64_t)st.files;
		stats->bytes = (int64_t)st.bytes;
		stats->skipped = (int64_t)st.skipped;
		stats->special = (int64_t)st.special;
	}
	return r;
}

/* --- construction ------------------------------------------------------------------------------- */

static void local_free(struct rk_workspace_store *base)
{
	struct local *s = (struct local *)base;
	if (!s)
		return;
	free(s->data_dir);
	free(s->objects);
	free(s->revisions);
	free(s->homes);
	free(s);
}

static const struct rk_workspace_store_ops local_ops = {
	.name = "local",
	.describe = local_describe,
	.latest = local_latest,
	.checkpoint = local_checkpoint,
	.list = local_list,
	.show = local_show,
	.restore = local_restore,
	.export_tar = local_export_tar,
	.verify = local_verify,
	.gc = local_gc,
	.forget = local_forget,
	.free = local_free,
};

struct rk_workspace_store *rk_workspace_store_local_new(const char *data_dir)
{
	struct local *s = rk_xcalloc(1, sizeof(*s));
	s->base.ops = &local_ops;
	s->data_dir = rk_xstrdup(data_dir);
	s->objects = rk_path_join(data_dir, "objects");
	s->revisions = rk_path_join(data_dir, "home-revisions");
	s->homes = rk_path_join(data_dir, "homes");
	return &s->base;
}
