#include "checkpoint.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "db_runs.h"
#include "idle.h"
#include "util/buf.h"
#include "util/fs.h"
#include "util/json.h"
#include "util/log.h"
#include "util/time.h"

/* Stops the browsers whose profile lives in this workspace and waits for
 * them (SIGKILL after 5 s). The [-] keeps the pattern from matching the
 * shell that runs it; browsers elsewhere on the machine are left alone. */
#define QUIESCE_SH                                                                              \
	"pat=\"[-]-user-data-dir=$PWD/.browser-profiles\"\n"                                    \
	"pkill -TERM -f -- \"$pat\" 2>/dev/null || exit 0\n"                                    \
	"i=0\n"                                                                                 \
	"while pkill -0 -f -- \"$pat\" 2>/dev/null; do\n"                                       \
	"  i=$((i+1)); if [ $i -ge 50 ]; then pkill -KILL -f -- \"$pat\"; sleep 0.2; break; fi\n" \
	"  sleep 0.1\n"                                                                         \
	"done\n"                                                                                \
	"exit 0\n"

struct rk_home_store *rk_checkpoint_store(struct rk_engine *eng)
{
	/* RAKAZO_HOME_STORE=s3://bucket/prefix: the S3-compatible store; a
	 * wrong setting fails every checkpoint operation with its reason */
	const char *url = getenv("RAKAZO_HOME_STORE");
	if (!url || !*url || !strcmp(url, "local"))
		return rk_home_store_local_new(eng->data_dir);
	struct rk_error e;
	struct rk_home_store *s = rk_home_store_s3_new(url, eng->data_dir, &e);
	return s ? s : rk_home_store_failed_new(&e);
}

/* A store without markers (S3) snapshots even with revisions_kept 1. */
static int store_has_markers(struct rk_home_store *s)
{
	struct rk_home_desc d = {0};
	struct rk_error e;
	int has = s->ops->describe(s, &d, &e) != 0 || (d.caps & RK_HOME_MARKERS);
	free(d.location);
	return has;
}

int rk_checkpoint_home_mounted(const struct rk_provider_ops *ops)
{
	/* docker bind-mounts m->home_dir, fake runs in it; a machine with its
	 * own disk goes through export/import */
	return ops && (ops->caps & RK_CAP_HOST_HOME);
}

cJSON *rk_home_revision_to_json(const struct rk_home_revision *r, const char *latest_id)
{
	char t[40];
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "id", r->id);
	cJSON_AddStringToObject(o, "created_at", rk_iso8601(r->created_at, t, sizeof(t)));
	cJSON_AddStringToObject(o, "reason", r->reason ? r->reason : "");
	cJSON_AddStringToObject(o, "kind", rk_home_kind_name(r->kind));
	if (r->bytes >= 0)
		cJSON_AddNumberToObject(o, "bytes", (double)r->bytes);
	else
		cJSON_AddNullToObject(o, "bytes");
	if (r->files >= 0)
		cJSON_AddNumberToObject(o, "files", (double)r->files);
	else
		cJSON_AddNullToObject(o, "files");
	rk_json_add_str_or_null(o, "checksum", r->checksum);
	cJSON_AddNumberToObject(o, "ms", (double)r->ms);
	if (r->kind == RK_HOME_SNAPSHOT) {
		cJSON_AddNumberToObject(o, "files_reused", (double)r->reused);
		cJSON_AddNumberToObject(o, "files_hashed", (double)r->hashed);
	}
	if (latest_id)
		cJSON_AddBoolToObject(o, "latest", !strcmp(latest_id, r->id));
	return o;
}

/* --- locks and small helpers ------------------------------------------------------ */

/* Serializes checkpoint, restore and import of one computer across processes. */
static int lock_computer(struct rk_engine *eng, const struct rk_computer *c, struct rk_error *err)
{
	char *dir = rk_xasprintf("%s/home-revisions/%s", eng->data_dir, c->home_key);
	int r = rk_fs_mkdirs(dir, 0700, err);
	char *p = rk_path_join(dir, "checkpoint.lock");
	free(dir);
	if (r) {
		free(p);
		return r;
	}
	int fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0) {
		r = rk_error_errno(err, RK_EIO, errno, "cannot open %s", p);
		free(p);
		return r;
	}
	free(p);
	while (flock(fd, LOCK_EX) != 0) {
		if (errno != EINTR) {
			r = rk_error_errno(err, RK_EIO, errno, "cannot lock the checkpoints of %s", c->name);
			close(fd);
			return r;
		}
	}
	return fd;
}

static const struct rk_provider_ops *provider_of(const struct rk_computer *c, struct rk_error *err)
{
	const struct rk_provider_ops *ops = rk_provider_find(c->kind);
	if (!ops)
		rk_error_set(err, RK_EUNAVAILABLE, "computer '%s' uses provider '%s', which this rakazo does not have",
			     c->name, c->kind);
	return ops;
}

static enum rk_machine_state machine_state(const struct rk_provider_ops *ops, const struct rk_machine *m)
{
	enum rk_machine_state st = RK_MACHINE_GONE;
	struct rk_error e;
	if (!m->ref || !ops->status || ops->status(m, &st, &e) != 0)
		return RK_MACHINE_GONE;
	return st;
}

static void quiesce_browsers(const struct rk_provider_ops *ops, const struct rk_machine *m)
{
	if (!ops->exec_spawn || machine_state(ops, m) != RK_MACHINE_RUNNING)
		return;
	struct rk_buf out;
	rk_buf_init(&out);
	struct rk_exit_status st;
	struct rk_error e;
	if (rk_provider_run(ops, m, QUIESCE_SH, 15000, 65536, &out, &st, &e) != 0)
		rk_log(RK_LOG_WARN, "checkpoint %s: cannot quiesce browsers: %s", m->computer_id, e.message);
	rk_buf_release(&out);
}

/* Mirrors the store's revisions of c into the database, in one transaction. */
static int record_revision(struct rk_engine *eng, struct rk_home_store *store, const struct rk_computer *c,
			   const struct rk_home_revision *rev, struct rk_error *err)
{
	struct rk_home_revision *revs = NULL;
	size_t n = 0;
	struct rk_error e2;
	if (store->ops->list(store, c->home_key, &revs, &n, &e2) != 0)
		n = 0;
	const char **keep = rk_xcalloc(n + 1, sizeof(*keep));
	for (size_t i = 0; i < n; i++)
		keep[i] = revs[i].id;
	struct rk_home_revision_row row = {
		.id = rev->id,
		.home_key = c->home_key,
		.computer_id = c->id,
		.reason = rev->reason,
		.kind = rk_home_kind_name(rev->kind),
		.checksum = rev->checksum,
		.bytes = rev->bytes < 0 ? 0 : rev->bytes,
		.files = rev->files < 0 ? 0 : rev->files,
		.created_at = rev->created_at,
	};
	int r = rk_db_begin(eng->db, err);
	if (r == 0 && (r = rk_db_computer_set_home_revision(eng->db, c->id, rev->id, err)) == 0 &&
	    (r = rk_db_home_revision_record(eng->db, &row, err)) == 0 &&
	    (r = n ? rk_db_home_revision_prune(eng->db, c->home_key, keep, n, err) : 0) == 0)
		r = rk_db_commit(eng->db, err);
	if (r)
		rk_db_rollback(eng->db);
	free(keep);
	rk_home_revisions_free(revs, n);
	return r;
}

/* A temp file under DATA_DIR/tmp, already unlinked. */
static int temp_file(struct rk_engine *eng, struct rk_error *err)
{
	char *dir = rk_path_join(eng->data_dir, "tmp");
	int r = rk_fs_mkdirs(dir, 0700, err);
	if (r) {
		free(dir);
		return r;
	}
	int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (fd < 0) {
		char *p = rk_xasprintf("%s/tar-XXXXXX", dir);
		fd = mkostemp(p, O_CLOEXEC);
		if (fd >= 0)
			unlink(p);
		free(p);
	}
	if (fd < 0)
		r = rk_error_errno(err, RK_EIO, errno, "cannot make a temp file in %s", dir);
	free(dir);
	return fd < 0 ? r : fd;
}

/* --- checkpoint ------------------------------------------------------------------------ */

static int checkpoint_locked(struct rk_engine *eng, struct rk_home_store *store, const struct rk_computer *c,
			     const char *reason, int quiesce, struct rk_home_revision *out, struct rk_error *err)
{
	const struct rk_provider_ops *ops = provider_of(c, err);
	if (!ops)
		return -err->code;
	struct rk_machine_ctx mc;
	rk_machine_ctx_init(&mc, eng, c);
	int keep = c->revisions_kept < 1 ? 1 : c->revisions_kept;
	struct rk_home_revision rev = {0};
	char *staging = NULL;
	int r = rk_home_recover(eng->data_dir, c->home_key, err);
	if (r)
		goto out;
	if (rk_checkpoint_home_mounted(ops)) {
		struct rk_home_checkpoint_req req = {
			.src_dir = mc.home_dir,
			.reason = reason,
			.kind = keep > 1 || !store_has_markers(store) ? RK_HOME_SNAPSHOT : RK_HOME_MARKER,
			.keep = keep,
		};
		if (req.kind == RK_HOME_SNAPSHOT && quiesce && c->desktop)
			quiesce_browsers(ops, &mc.m);
		r = store->ops->checkpoint(store, c->home_key, &req, &rev, err);
	} else {
		/* the machine holds the workspace: export it into staging first */
		if (!ops->workspace_export) {
			r = rk_error_set(err, RK_EUNSUPPORTED, "provider '%s' cannot export a workspace", c->kind);
			goto out;
		}
		if (machine_state(ops, &mc.m) != RK_MACHINE_RUNNING) {
			r = rk_error_set(err, RK_EUNAVAILABLE,
					 "computer '%s' is not running, so its workspace cannot be exported: resume it "
					 "first",
					 c->name);
			goto out;
		}
		if (quiesce && c->desktop)
			quiesce_browsers(ops, &mc.m);
		int fd = temp_file(eng, err);
		if (fd < 0) {
			r = fd;
			goto out;
		}
		r = ops->workspace_export(&mc.m, fd, err);
		if (r == 0 && lseek(fd, 0, SEEK_SET) != 0)
			r = rk_error_errno(err, RK_EIO, errno, "cannot rewind the export");
		if (r == 0)
			r = rk_home_staging_new(eng->data_dir, c->home_key, &staging, err);
		if (r == 0)
			r = rk_home_import_tar(fd, staging, rk_home_import_limit(), NULL, err);
		close(fd);
		struct rk_home_checkpoint_req req = {
			.src_dir = staging, .reason = reason, .kind = RK_HOME_SNAPSHOT, .keep = keep};
		if (r == 0)
			r = store->ops->checkpoint(store, c->home_key, &req, &rev, err);
		if (r == 0 && (r = rk_home_swap_in(eng->data_dir, c->home_key, staging, err)) == 0) {
			free(staging);
			staging = NULL;
		}
	}
	if (r == 0)
		r = record_revision(eng, store, c, &rev, err);
	if (r == 0 && out) {
		*out = rev;
		memset(&rev, 0, sizeof(rev));
	}
out:
	if (staging) {
		rk_fs_remove_tree(staging, NULL);
		free(staging);
	}
	rk_home_revision_release(&rev);
	rk_machine_ctx_release(&mc);
	return r;
}

int rk_checkpoint_create(struct rk_engine *eng, const struct rk_computer *c, const char *reason, int quiesce,
			 struct rk_home_revision *out, struct rk_error *err)
{
	int lk = lock_computer(eng, c, err);
	if (lk < 0)
		return lk;
	struct rk_home_store *store = rk_checkpoint_store(eng);
	int r = checkpoint_locked(eng, store, c, reason ? reason : "manual", quiesce, out, err);
	store->ops->free(store);
	close(lk);
	return r;
}

int rk_checkpoint_run_end(struct rk_engine *eng, const char *computer_id, const char *run_id, int failed,
			  struct rk_error *err)
{
	struct rk_computer c = {0};
	int r = rk_db_computer_get(eng->db, computer_id, &c, err);
	if (r)
		return failed ? 0 : r;
	char *reason = run_id ? rk_xasprintf("%s:%s", failed ? "run-failed" : "run", run_id)
			      : rk_xstrdup(failed ? "run-failed" : "run");
	struct rk_error e2;
	/* on a Team computer, deferred while another bot or a person is at work (issue 6, engine/idle.h) */
	struct rk_run_row run = {0};
	const char *bot = NULL;
	if (run_id && rk_db_run_get(eng->db, run_id, &run, NULL) == 0)
		bot = run.bot_id;
	r = rk_idle_checkpoint(eng, &c, bot, reason, failed ? &e2 : err);
	rk_run_row_release(&run);
	if (r > 0)
		r = 0; /* deferred: made when the last lease or control ends */
	if (r && failed) {
		rk_log(RK_LOG_WARN, "checkpoint after failed run %s: %s", run_id ? run_id : "", e2.message);
		r = 0;
	}
	free(reason);
	rk_computer_release(&c);
	return r;
}

int rk_checkpoint_before_lifecycle(struct rk_engine *eng, const struct rk_computer *c, const char *op,
				   struct rk_error *err)
{
	if (strcmp(op, "stop") && strcmp(op, "pause"))
		return 0;
	const struct rk_provider_ops *ops = rk_provider_find(c->kind);
	if (!ops || !c->provider_ref)
		return 0; /* never provisioned: nothing new to keep */
	struct rk_machine_ctx mc;
	rk_machine_ctx_init(&mc, eng, c);
	enum rk_machine_state st = machine_state(ops, &mc.m);
	int mounted = rk_checkpoint_home_mounted(ops);
	int home_there = rk_fs_exists(mc.home_dir);
	rk_machine_ctx_release(&mc);
	/* a machine that is gone has nothing to export; a mounted home is on the host either way */
	if (mounted ? !home_there : st != RK_MACHINE_RUNNING)
		return 0;
	int r = rk_checkpoint_create(eng, c, op, 1, NULL, err);
	if (r)
		rk_error_prefix(err, "checkpoint before %s failed, so the computer was left as it was", op);
	return r;
}

/* --- restore on provision -------------------------------------------------------------------- */

int rk_checkpoint_before_provision(struct rk_engine *eng, const struct rk_computer *c, cJSON *result,
				   struct rk_error *err)
{
	const struct rk_provider_ops *ops = rk_provider_find(c->kind);
	int r = rk_home_recover(eng->data_dir, c->home_key, err);
	if (r || !ops || !rk_checkpoint_home_mounted(ops))
		return r;
	char *home = NULL;
	if ((r = rk_home_dir(eng->data_dir, c->home_key, &home, err)))
		return r;
	if (rk_fs_exists(home)) {
		free(home);
		return 0;
	}
	struct rk_home_store *store = rk_checkpoint_store(eng);
	struct rk_home_revision latest = {0};
	struct rk_error e2;
	if (store->ops->latest(store, c->home_key, &latest, &e2) == 0) {
		cJSON *o = cJSON_AddObjectToObject(result, "home_rebuilt");
		cJSON_AddStringToObject(o, "revision", latest.id);
		if (latest.kind == RK_HOME_SNAPSHOT) {
			int lk = lock_computer(eng, c, err);
			r = lk < 0 ? lk : store->ops->restore(store, c->home_key, latest.id, home, NULL, err);
			if (lk >= 0)
				close(lk);
			if (r)
				rk_error_prefix(err, "the home of '%s' is missing and rebuilding it from %s failed", c->name,
						latest.id);
			cJSON_AddBoolToObject(o, "restored", r == 0);
		} else {
			/* revisions_kept = 1 on a mounted home keeps no copy: say so, start empty */
			rk_log(RK_LOG_ERROR,
			       "computer %s: its home %s is missing and revision %s is a marker (no copy kept)", c->id,
			       home, latest.id);
			cJSON_AddBoolToObject(o, "restored", 0);
			cJSON_AddStringToObject(o, "reason", "the latest revision is a marker: no copy was kept");
		}
	}
	rk_home_revision_release(&latest);
	store->ops->free(store);
	free(home);
	return r;
}

/* Removes Chromium's lock files in a live home: they name the old machine's
 * hostname and pid, and keep the browser from starting on a new one. */
static void drop_browser_locks(const char *dir, int depth)
{
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		char *p = rk_path_join(dir, de->d_name);
		struct stat st;
		if (lstat(p, &st) == 0) {
			if (!strncmp(de->d_name, "Singleton", 9) || !strcmp(de->d_name, "DevToolsActivePort") ||
			    !strcmp(de->d_name, "lockfile") || !strcmp(de->d_name, ".parentlock"))
				unlink(p);
			else if (S_ISDIR(st.st_mode) && depth < 3)
				drop_browser_locks(p, depth + 1);
		}
		free(p);
	}
	closedir(d);
}

int rk_checkpoint_after_provision(struct rk_engine *eng, const struct rk_computer *c,
				  const struct rk_provider_ops *ops, const struct rk_machine *m,
				  const struct rk_provision_result *pr, cJSON *result, struct rk_error *err)
{
	char *ref_kind = NULL;
	rk_db_computer_ref_kind(eng->db, c->id, &ref_kind, NULL);
	int replacement = pr->fresh || !c->provider_ref || !pr->ref || strcmp(c->provider_ref, pr->ref) != 0 ||
			  (ref_kind && strcmp(ref_kind, c->kind) != 0);
	free(ref_kind);
	cJSON_AddBoolToObject(result, "replacement", replacement);
	if (!replacement)
		return 0;
	struct rk_home_store *store = rk_checkpoint_store(eng);
	struct rk_home_revision latest = {0};
	struct rk_error e2;
	int r = 0;
	if (store->ops->latest(store, c->home_key, &latest, &e2) != 0) {
		store->ops->free(store);
		return 0; /* never checkpointed: nothing to bring back */
	}
	if ((r = rk_db_computer_set_state(eng->db, c->id, "restoring", err)))
		goto out;
	cJSON *o = cJSON_AddObjectToObject(result, "restore");
	cJSON_AddStringToObject(o, "revision", latest.id);
	int64_t t0 = rk_monotonic_ms();
	if (rk_checkpoint_home_mounted(ops)) {
		/* the live home on the host is the latest: check the store still
		 * backs it, and clear the old machine's browser locks */
		cJSON_AddStringToObject(o, "source", "live");
		char *profiles = rk_path_join(m->home_dir, ".browser-profiles");
		drop_browser_locks(profiles, 0);
		free(profiles);
		struct rk_home_verify v;
		if (store->ops->verify(store, c->home_key, latest.id, 0, &v, &e2) == 0) {
			cJSON_AddBoolToObject(o, "verified", v.ok);
			if (!v.ok) {
				cJSON_AddStringToObject(o, "problem", v.problem);
				rk_log(RK_LOG_WARN, "computer %s: latest revision %s does not verify: %s", c->id,
				       latest.id, v.problem);
			}
		}
	} else {
		cJSON_AddStringToObject(o, "source", "store");
		if (!ops->workspace_import) {
			r = rk_error_set(err, RK_EUNSUPPORTED, "provider '%s' cannot import a workspace", c->kind);
			goto fail;
		}
		int fd = temp_file(eng, err);
		if (fd < 0) {
			r = fd;
			goto fail;
		}
		r = store->ops->export_tar(store, c->home_key, latest.id, fd, 0, err);
		if (r == 0 && lseek(fd, 0, SEEK_SET) != 0)
			r = rk_error_errno(err, RK_EIO, errno, "cannot rewind the workspace archive");
		if (r == 0)
			r = ops->workspace_import(m, fd, err);
		close(fd);
		if (r)
			goto fail;
	}
	cJSON_AddNumberToObject(o, "ms", (double)(rk_monotonic_ms() - t0));
	goto out;
fail:
	rk_error_prefix(err, "restoring the workspace of '%s' from %s failed", c->name, latest.id);
	rk_db_computer_set_state(eng->db, c->id, "failed", NULL);
out:
	rk_home_revision_release(&latest);
	store->ops->free(store);
	return r;
}

/* --- restore, export, import, verify --------------------------------------------------------------- */

static int require_down(struct rk_engine *eng, const struct rk_computer *c, const char *what, struct rk_error *err)
{
	const struct rk_provider_ops *ops = rk_provider_find(c->kind);
	if (!ops || !c->provider_ref)
		return 0;
	struct rk_machine_ctx mc;
	rk_machine_ctx_init(&mc, eng, c);
	enum rk_machine_state st = machine_state(ops, &mc.m);
	rk_machine_ctx_release(&mc);
	if (st == RK_MACHINE_RUNNING || st == RK_MACHINE_PAUSED)
		return rk_error_set(err, RK_ECONFLICT,
				    "computer '%s' is %s: stop it first (`rakazo computer stop %s --wait`), then %s",
				    c->name, st == RK_MACHINE_RUNNING ? "running" : "paused", c->name, what);
	return 0;
}

int rk_checkpoint_restore(struct rk_engine *eng, const struct rk_computer *c, const char *rev,
			  struct rk_home_revision *out, struct rk_error *err)
{
	int r = require_down(eng, c, "restore", err);
	if (r)
		return r;
	int lk = lock_computer(eng, c, err);
	if (lk < 0)
		return lk;
	struct rk_home_store *store = rk_checkpoint_store(eng);
	char *home = NULL;
	struct rk_home_revision got = {0};
	if ((r = rk_home_dir(eng->data_dir, c->home_key, &home, err)) == 0 &&
	    (r = store->ops->restore(store, c->home_key, rev, home, &got, err)) == 0) {
		/* the restored state is the newest now: record it as latest */
		char *reason = rk_xasprintf("restore:%s", got.id);
		r = checkpoint_locked(eng, store, c, reason, 0, out, err);
		free(reason);
	}
	rk_home_revision_release(&got);
	free(home);
	store->ops->free(store);
	close(lk);
	return r;
}

int rk_checkpoint_export(struct rk_engine *eng, const struct rk_computer *c, const char *rev, int fd, int zstd,
			 struct rk_error *err)
{
	struct rk_home_store *store = rk_checkpoint_store(eng);
	struct rk_home_revision latest = {0};
	struct rk_error e2;
	int r;
	if (!rev && store->ops->latest(store, c->home_key, &latest, &e2) != 0) {
		/* never checkpointed: the live home is all there is */
		char *home = NULL;
		r = rk_home_dir(eng->data_dir, c->home_key, &home, err);
		if (r == 0)
			r = rk_home_export_dir(home, fd, zstd, err);
		free(home);
	} else {
		r = store->ops->export_tar(store, c->home_key, rev, fd, zstd, err);
	}
	rk_home_revision_release(&latest);
	store->ops->free(store);
	return r;
}

int rk_checkpoint_import(struct rk_engine *eng, const struct rk_computer *c, int fd, struct rk_home_revision *out,
			 struct rk_home_import_stats *stats, struct rk_error *err)
{
	int r = require_down(eng, c, "import", err);
	if (r)
		return r;
	int lk = lock_computer(eng, c, err);
	if (lk < 0)
		return lk;
	struct rk_home_store *store = rk_checkpoint_store(eng);
	char *staging = NULL;
	if ((r = rk_home_recover(eng->data_dir, c->home_key, err)) == 0 &&
	    (r = rk_home_staging_new(eng->data_dir, c->home_key, &staging, err)) == 0 &&
	    (r = rk_home_import_tar(fd, staging, rk_home_import_limit(), stats, err)) == 0 &&
	    (r = rk_home_swap_in(eng->data_dir, c->home_key, staging, err)) == 0) {
		free(staging);
		staging = NULL;
		r = checkpoint_locked(eng, store, c, "import", 0, out, err);
	}
	if (staging) {
		rk_fs_remove_tree(staging, NULL);
		free(staging);
	}
	store->ops->free(store);
	close(lk);
	return r;
}

int rk_checkpoint_verify(struct rk_engine *eng, const struct rk_computer *c, const char *rev, int deep,
			 struct rk_home_verify *out, struct rk_error *err)
{
	/* a swap cut short by a crash is put right first, as every reader does */
	int r = rk_home_recover(eng->data_dir, c->home_key, err);
	if (r)
		return r;
	struct rk_home_store *store = rk_checkpoint_store(eng);
	r = store->ops->verify(store, c->home_key, rev, deep, out, err);
	store->ops->free(store);
	return r;
}

int rk_checkpoint_forget(struct rk_engine *eng, const struct rk_computer *c, struct rk_error *err)
{
	struct rk_home_store *store = rk_checkpoint_store(eng);
	int r = store->ops->forget(store, c->home_key, err);
	store->ops->free(store);
	if (r == 0) {
		char *dir = rk_xasprintf("%s/home-revisions/%s", eng->data_dir, c->home_key);
		rk_fs_remove_tree(dir, NULL);
		free(dir);
	}
	return r;
}
