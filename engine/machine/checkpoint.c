#include "engine/machine/checkpoint.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/machine/machine.h"
#include "engine/util/buf.h"
#include "engine/util/fs.h"
#include "engine/util/json.h"
#include "engine/util/log.h"
#include "engine/util/time.h"
#include "providers/script.h"


struct rk_workspace_store *rk_checkpoint_store(struct rk_engine *eng)
{
	/* RAKAZO_HOME_STORE=s3://bucket/prefix: the S3-compatible store; a
	 * wrong setting fails every checkpoint operation with its reason */
	const char *url = getenv("RAKAZO_HOME_STORE");
	if (!url || !*url || !strcmp(url, "local"))
		return rk_workspace_store_local_new(eng->data_dir);
	struct rk_error e;
	struct rk_workspace_store *s = rk_workspace_store_s3_new(url, eng->data_dir, &e);
	return s ? s : rk_workspace_store_failed_new(&e);
}

int rk_checkpoint_home_dir(struct rk_engine *eng, const char *home_key, char **out, struct rk_error *err)
{
	return rk_workspace_dir(eng->data_dir, home_key, out, err);
}

/* A store without markers (S3) snapshots even with revisions_kept 1. */
static int store_has_markers(struct rk_workspace_store *s)
{
	struct rk_workspace_desc d = {0};
	struct rk_error e;
	int has = s->ops->describe(s, &d, &e) != 0 || (d.caps & RK_WORKSPACE_MARKERS);
	free(d.location);
	return has;
}

/* The latest revision of c's home: 0 with *out set, 1 when it has none,
 * or a negative code when the store cannot tell (down, misconfigured):
 * then nothing may act as if the home had never been checkpointed, or a
 * replacement would start empty and an export would give the live tree. */
static int latest_revision(struct rk_workspace_store *store, const struct rk_computer *c,
			   struct rk_workspace_checkpoint *out, struct rk_error *err)
{
	struct rk_error e;
	int r = store->ops->latest(store, c->home_key, out, &e);
	if (r == 0)
		return 0;
	if (r == -RK_ENOTFOUND)
		return 1;
	return rk_error_set(err, e.code, "cannot read the latest checkpoint of '%s' from the %s workspace store: %s",
			    c->name, store->ops->name, e.message);
}

int rk_checkpoint_home_mounted(const struct rk_provider_ops *ops)
{
	/* docker bind-mounts m->home_dir, fake runs in it; a machine with its
	 * own disk goes through export/import */
	return ops && (ops->caps & RK_CAP_HOST_HOME);
}

cJSON *rk_workspace_checkpoint_to_json(const struct rk_workspace_checkpoint *r, const char *latest_id)
{
	char t[40];
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "id", r->id);
	cJSON_AddStringToObject(o, "created_at", rk_iso8601(r->created_at, t, sizeof(t)));
	cJSON_AddStringToObject(o, "reason", r->reason ? r->reason : "");
	cJSON_AddStringToObject(o, "kind", rk_workspace_kind_name(r->kind));
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
	if (r->kind == RK_WORKSPACE_SNAPSHOT) {
		cJSON_AddNumberToObject(o, "files_reused", (double)r->reused);
		cJSON_AddNumberToObject(o, "files_hashed", (double)r->hashed);
		/* FIFOs, sockets and devices are runtime state: left out, and said so */
		cJSON_AddNumberToObject(o, "skipped", (double)r->skipped);
		if (r->skipped > 0) {
			cJSON *w = cJSON_AddArrayToObject(o, "warnings");
			char *msg = rk_xasprintf(
				"left out %lld special file%s (FIFOs, sockets and devices are never kept)%s%s",
				(long long)r->skipped, r->skipped == 1 ? "" : "s", r->skipped_names ? ": " : "",
				r->skipped_names ? r->skipped_names : "");
			cJSON_AddItemToArray(w, cJSON_CreateString(msg));
			free(msg);
		}
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

static enum rk_machine_state machine_state(const struct rk_machine_ctx *mc)
{
	enum rk_machine_state st = RK_MACHINE_GONE;
	if (!mc->m.ref || rk_machine_status(mc, &st, NULL) != 0)
		return RK_MACHINE_GONE;
	return st;
}

/* Closes the desktop browsers of a running machine before its workspace is
 * copied or marked, cleanly, so their cookies and profile databases are on
 * disk (the image's rakazo-browser-close says how; it prints "closed N").
 * Returns 1 when it closed any and the machine keeps running (RK_QUIESCE):
 * then the caller starts display 0's browser again with reopen_browser once
 * the copy is made. */
static int quiesce_browsers(const struct rk_computer *c, const struct rk_machine_ctx *mc, int quiesce)
{
	if (!quiesce || !c->desktop || !mc->ops->exec_spawn || machine_state(mc) != RK_MACHINE_RUNNING)
		return 0;
	struct rk_buf out;
	rk_buf_init(&out);
	struct rk_exit_status st;
	struct rk_error e;
	int64_t t0 = rk_monotonic_ms();
	int closed = 0;
	char *cmd = rk_script_command("rakazo-browser-close", "workspace");
	int rr = rk_provider_run(mc->ops, &mc->m, cmd, 15000, 65536, &out, &st, &e);
	free(cmd);
	if (rr != 0) {
		rk_log(RK_LOG_WARN, "checkpoint %s: cannot quiesce browsers: %s", mc->m.computer_id, e.message);
	} else if (out.data && strstr(out.data, "closed ")) {
		closed = 1;
		rk_log(RK_LOG_INFO, "checkpoint %s: browsers %.40s in %lld ms", mc->m.computer_id, out.data,
		       (long long)(rk_monotonic_ms() - t0));
	}
	rk_buf_release(&out);
	return closed && quiesce == RK_QUIESCE;
}

/* Display 0's browser again after a quiesce (the display's start is
 * idempotent: only the closed browser comes back). */
static void reopen_browser(const struct rk_machine_ctx *mc)
{
	if (!mc->ops->display_start)
		return;
	struct rk_display_options o = {.profile_dir = ".browser-profiles/default"};
	struct rk_screen_transport tr = {0};
	struct rk_error e;
	if (rk_machine_display_start(mc, 0, &o, &tr, &e) != 0)
		rk_log(RK_LOG_WARN, "checkpoint %s: cannot start the browser again: %s", mc->m.computer_id, e.message);
	free(tr.vnc_socket);
	free(tr.cdp_socket);
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

/* --- pushes to machines without a mount ---------------------------------------------- */

/* Empties the workspace (the command's cwd) so an import leaves exactly the
 * archive's tree; refuses to run anywhere near the root. */
#define CLEAR_SH                                                                                                       \
	"case \"$PWD\" in /|/home|/root|'') exit 3;; esac\n"                                                           \
	"find . -mindepth 1 -maxdepth 1 -exec rm -rf -- {} + || exit 4\n"                                              \
	"exit 0\n"

/* DATA_DIR/home-revisions/<key>/push-pending: the latest revision was
 * recorded while a machine without a mount was down (a restore or an
 * import); its next resume or provision pushes it before any tool runs. */
static char *push_marker(struct rk_engine *eng, const struct rk_computer *c)
{
	return rk_xasprintf("%s/home-revisions/%s/push-pending", eng->data_dir, c->home_key);
}

static int clear_workspace(const struct rk_machine_ctx *mc, struct rk_error *err)
{
	struct rk_buf out;
	rk_buf_init(&out);
	struct rk_exit_status st = {0};
	int r = rk_provider_run(mc->ops, &mc->m, CLEAR_SH, 120000, 4096, &out, &st, err);
	if (r == 0 && (!st.exited || st.code != 0))
		r = rk_error_set(err, RK_EFAILED, "cannot empty the workspace in the machine (exit %d): %.200s",
				 st.code, out.data ? out.data : "");
	rk_buf_release(&out);
	return r;
}

/* The reader's options for a tree that becomes c's workspace: owners are
 * the computer's user, i.e. whoever owns its workspace now (docker gives
 * it to uid 1000), never the archive's; as another user than root, the
 * files are simply ours. */
static struct rk_tar_opts import_opts(struct rk_engine *eng, const struct rk_computer *c)
{
	struct rk_tar_opts o = RK_TAR_OPTS_INIT;
	char *home = NULL;
	struct stat st;
	if (geteuid() == 0 && rk_workspace_dir(eng->data_dir, c->home_key, &home, NULL) == 0 && lstat(home, &st) == 0 &&
	    S_ISDIR(st.st_mode)) {
		o.uid = (int)st.st_uid;
		o.gid = (int)st.st_gid;
	}
	free(home);
	return o;
}

/* Brings a tree to the machine's workspace with the provider's import:
 * revision rev of the store (NULL: the latest) or, when dir is given, that
 * directory. clear: the workspace is emptied first, so it ends up equal to
 * the tree (a machine that held another state). */
static int push_workspace(struct rk_engine *eng, struct rk_workspace_store *store, const struct rk_computer *c,
			  const struct rk_machine_ctx *mc, const char *rev, const char *dir, int clear,
			  struct rk_error *err)
{
	if (!mc->ops->workspace_import)
		return rk_error_set(err, RK_EUNSUPPORTED, "provider '%s' cannot import a workspace", c->kind);
	int fd = temp_file(eng, err);
	if (fd < 0)
		return fd;
	int r = dir ? rk_workspace_export_dir(dir, fd, 0, err)
		    : store->ops->export_tar(store, c->home_key, rev, fd, 0, err);
	if (r == 0 && lseek(fd, 0, SEEK_SET) != 0)
		r = rk_error_errno(err, RK_EIO, errno, "cannot rewind the workspace archive");
	if (r == 0 && clear)
		r = clear_workspace(mc, err);
	if (r == 0)
		r = rk_machine_workspace_import(mc, fd, err);
	close(fd);
	return r;
}

/* Mirrors the store's revisions of c into the database, in one transaction. */
static int record_revision(struct rk_engine *eng, struct rk_workspace_store *store, const struct rk_computer *c,
			   const struct rk_workspace_checkpoint *rev, struct rk_error *err)
{
	struct rk_workspace_checkpoint *revs = NULL;
	size_t n = 0;
	struct rk_error e2;
	if (store->ops->list(store, c->home_key, &revs, &n, &e2) != 0)
		n = 0;
	const char **keep = rk_xcalloc(n + 1, sizeof(*keep));
	for (size_t i = 0; i < n; i++)
		keep[i] = revs[i].id;
	struct rk_workspace_checkpoint_row row = {
		.id = rev->id,
		.home_key = c->home_key,
		.computer_id = c->id,
		.reason = rev->reason,
		.kind = rk_workspace_kind_name(rev->kind),
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
	rk_workspace_checkpoints_free(revs, n);
	return r;
}

/* --- checkpoint ------------------------------------------------------------------------ */

static int checkpoint_locked(struct rk_engine *eng, struct rk_workspace_store *store, const struct rk_computer *c,
			     const char *reason, int quiesce, struct rk_workspace_checkpoint *out, struct rk_error *err)
{
	struct rk_machine_ctx mc;
	int r = rk_machine_open(&mc, eng, c, err);
	if (r)
		return r;
	const struct rk_provider_ops *ops = mc.ops;
	int keep = c->revisions_kept < 1 ? 1 : c->revisions_kept;
	struct rk_workspace_checkpoint rev = {0};
	char *staging = NULL;
	int reopen = 0;
	r = rk_workspace_recover(eng->data_dir, c->home_key, err);
	if (r)
		goto out;
	if (rk_checkpoint_home_mounted(ops)) {
		struct rk_workspace_checkpoint_req req = {
			.src_dir = mc.home_dir,
			.reason = reason,
			.kind = keep > 1 || !store_has_markers(store) ? RK_WORKSPACE_SNAPSHOT : RK_WORKSPACE_MARKER,
			.keep = keep,
		};
		/* a marker too: it says the host dir holds the work up to now, and
		 * Chromium keeps cookies in memory for up to 30 s before it writes them */
		reopen = quiesce_browsers(c, &mc, quiesce);
		r = store->ops->checkpoint(store, c->home_key, &req, &rev, err);
	} else {
		/* the machine holds the workspace: export it into staging first */
		if (!ops->workspace_export) {
			r = rk_error_set(err, RK_EUNSUPPORTED, "provider '%s' cannot export a workspace", c->kind);
			goto out;
		}
		if (machine_state(&mc) != RK_MACHINE_RUNNING) {
			r = rk_error_set(err, RK_EUNAVAILABLE,
					 "computer '%s' is not running, so its workspace cannot be exported: resume it "
					 "first",
					 c->name);
			goto out;
		}
		/* a restore or import the machine has not received yet (a resume
		 * whose push failed): push it first, never export over it */
		char *marker = push_marker(eng, c);
		if (rk_fs_exists(marker) && (r = push_workspace(eng, store, c, &mc, NULL, NULL, 1, err)) == 0)
			unlink(marker);
		free(marker);
		if (r)
			goto out;
		reopen = quiesce_browsers(c, &mc, quiesce);
		int fd = temp_file(eng, err);
		if (fd < 0) {
			r = fd;
			goto out;
		}
		r = rk_machine_workspace_export(&mc, fd, err);
		if (r == 0 && lseek(fd, 0, SEEK_SET) != 0)
			r = rk_error_errno(err, RK_EIO, errno, "cannot rewind the export");
		if (r == 0)
			r = rk_workspace_staging_new(eng->data_dir, c->home_key, &staging, err);
		/* what the machine holds is untrusted: the same reader as an
		 * import, but its FIFOs and sockets are left out (and said so) */
		struct rk_tar_opts o = import_opts(eng, c);
		o.skip_special = 1;
		struct rk_workspace_import_stats ist = {0};
		if (r == 0)
			r = rk_workspace_import_tar(fd, staging, &o, &ist, err);
		close(fd);
		struct rk_workspace_checkpoint_req req = {.src_dir = staging,
							  .reason = reason,
							  .kind = RK_WORKSPACE_SNAPSHOT,
							  .keep = keep};
		if (r == 0)
			r = store->ops->checkpoint(store, c->home_key, &req, &rev, err);
		if (r == 0)
			rev.skipped += ist.special;
		if (r == 0 && (r = rk_workspace_swap_in(eng->data_dir, c->home_key, staging, err)) == 0) {
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
	if (reopen)
		reopen_browser(&mc);
	if (staging) {
		rk_fs_remove_tree(staging, NULL);
		free(staging);
	}
	rk_workspace_checkpoint_release(&rev);
	rk_machine_ctx_release(&mc);
	return r;
}

int rk_checkpoint_create(struct rk_engine *eng, const struct rk_computer *c, const char *reason, int quiesce,
			 struct rk_workspace_checkpoint *out, struct rk_error *err)
{
	int lk = lock_computer(eng, c, err);
	if (lk < 0)
		return lk;
	struct rk_workspace_store *store = rk_checkpoint_store(eng);
	int r = checkpoint_locked(eng, store, c, reason ? reason : "manual", quiesce, out, err);
	store->ops->free(store);
	close(lk);
	return r;
}

int rk_checkpoint_before_lifecycle(struct rk_engine *eng, const struct rk_computer *c, const char *op,
				   struct rk_error *err)
{
	if (strcmp(op, "stop") && strcmp(op, "pause"))
		return 0;
	struct rk_machine_ctx mc;
	if (!c->provider_ref || rk_machine_open(&mc, eng, c, NULL) != 0)
		return 0;			    /* never provisioned (or no provider): nothing new to keep */
	const struct rk_provider_ops *ops = mc.ops; /* static: outlives mc */
	enum rk_machine_state st = machine_state(&mc);
	int mounted = rk_checkpoint_home_mounted(ops);
	int home_there = rk_fs_exists(mc.home_dir);
	rk_machine_ctx_release(&mc);
	/* a machine that is gone has nothing to export; a mounted home is on the host either way */
	if (mounted ? !home_there : st != RK_MACHINE_RUNNING)
		return 0;
	/* a stop ends the browsers anyway; a pause that keeps memory (docker's
	 * freeze) gets display 0's browser back before it, so a resumed desktop
	 * has one, its cookies on disk either way */
	int quiesce = !strcmp(op, "pause") && (ops->caps & RK_CAP_PAUSE) ? RK_QUIESCE : RK_QUIESCE_STOPPING;
	int r = rk_checkpoint_create(eng, c, op, quiesce, NULL, err);
	if (r)
		rk_error_prefix(err, "checkpoint before %s failed, so the computer was left as it was", op);
	return r;
}

/* --- restore on provision -------------------------------------------------------------------- */

int rk_checkpoint_before_provision(struct rk_engine *eng, const struct rk_computer *c, cJSON *result,
				   struct rk_error *err)
{
	const struct rk_provider_ops *ops = rk_provider_find(c->kind);
	int r = rk_workspace_recover(eng->data_dir, c->home_key, err);
	if (r || !ops || !rk_checkpoint_home_mounted(ops))
		return r;
	char *home = NULL;
	if ((r = rk_workspace_dir(eng->data_dir, c->home_key, &home, err)))
		return r;
	if (rk_fs_exists(home)) {
		free(home);
		return 0;
	}
	struct rk_workspace_store *store = rk_checkpoint_store(eng);
	struct rk_workspace_checkpoint latest = {0};
	int have = latest_revision(store, c, &latest, err);
	if (have < 0)
		r = rk_error_prefix(err, "the workspace of '%s' is missing and cannot be rebuilt", c->name);
	else if (have == 0) {
		cJSON *o = cJSON_AddObjectToObject(result, "home_rebuilt");
		cJSON_AddStringToObject(o, "revision", latest.id);
		if (latest.kind == RK_WORKSPACE_SNAPSHOT) {
			int lk = lock_computer(eng, c, err);
			r = lk < 0 ? lk : store->ops->restore(store, c->home_key, latest.id, home, NULL, err);
			if (lk >= 0)
				close(lk);
			if (r)
				rk_error_prefix(
					err,
					"the workspace of '%s' is missing and rebuilding it from checkpoint %s failed",
					c->name, latest.id);
			cJSON_AddBoolToObject(o, "restored", r == 0);
		} else {
			/* revisions_kept = 1 on a mounted home keeps no copy: say so, start empty */
			rk_log(RK_LOG_ERROR,
			       "computer %s: its workspace %s is missing and checkpoint %s is a marker (no copy kept)",
			       c->id, home, latest.id);
			cJSON_AddBoolToObject(o, "restored", 0);
			cJSON_AddStringToObject(o, "reason", "the latest checkpoint is a marker: no copy was kept");
		}
	}
	rk_workspace_checkpoint_release(&latest);
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

/* The latest revision into machine m before any tool runs: the computer is
 * `restoring` meanwhile (a tool call waits for the execution). A mounted
 * machine already has it live on the host: the store is checked to back it
 * and the old machine's browser locks go. Another machine gets it through
 * its import; clear empties a workspace that held another state first. A
 * push marker is done with once the push succeeds. Adds "restore" to result. */
static int bring_latest(struct rk_engine *eng, const struct rk_computer *c, const struct rk_machine_ctx *mc, int clear,
			int pending, cJSON *result, struct rk_error *err)
{
	int lk = lock_computer(eng, c, err);
	if (lk < 0)
		return lk;
	struct rk_workspace_store *store = rk_checkpoint_store(eng);
	struct rk_workspace_checkpoint latest = {0};
	char *marker = push_marker(eng, c);
	struct rk_error e2;
	int r = 0;
	int have = latest_revision(store, c, &latest, err);
	if (have) {
		r = have < 0 ? have : 0; /* 1: never checkpointed, nothing to bring back */
		goto out;
	}
	if ((r = rk_db_computer_set_state(eng->db, c->id, "restoring", err)))
		goto out;
	cJSON *o = cJSON_AddObjectToObject(result, "restore");
	cJSON_AddStringToObject(o, "revision", latest.id);
	if (pending)
		cJSON_AddBoolToObject(o, "pending", 1);
	int64_t t0 = rk_monotonic_ms();
	if (rk_checkpoint_home_mounted(mc->ops)) {
		cJSON_AddStringToObject(o, "source", "live");
		char *profiles = rk_path_join(mc->m.home_dir, ".browser-profiles");
		drop_browser_locks(profiles, 0);
		free(profiles);
		struct rk_workspace_verify v;
		if (store->ops->verify(store, c->home_key, latest.id, 0, &v, &e2) == 0) {
			cJSON_AddBoolToObject(o, "verified", v.ok);
			if (!v.ok) {
				cJSON_AddStringToObject(o, "problem", v.problem);
				rk_log(RK_LOG_WARN, "computer %s: latest checkpoint %s does not verify: %s", c->id,
				       latest.id, v.problem);
			}
		}
	} else {
		cJSON_AddStringToObject(o, "source", "store");
		if ((r = push_workspace(eng, store, c, mc, latest.id, NULL, clear, err))) {
			rk_error_prefix(err, "restoring the workspace of '%s' from %s failed", c->name, latest.id);
			rk_db_computer_set_state(eng->db, c->id, "failed", NULL);
			goto out;
		}
	}
	cJSON_AddNumberToObject(o, "ms", (double)(rk_monotonic_ms() - t0));
out:
	if (r == 0)
		unlink(marker);
	free(marker);
	rk_workspace_checkpoint_release(&latest);
	store->ops->free(store);
	close(lk);
	return r;
}

static int push_pending(struct rk_engine *eng, const struct rk_computer *c, const struct rk_provider_ops *ops)
{
	if (rk_checkpoint_home_mounted(ops))
		return 0;
	char *marker = push_marker(eng, c);
	int pending = rk_fs_exists(marker);
	free(marker);
	return pending;
}

int rk_checkpoint_after_provision(struct rk_engine *eng, const struct rk_computer *c, const struct rk_machine_ctx *mc,
				  const struct rk_provision_result *pr, cJSON *result, struct rk_error *err)
{
	char *ref_kind = NULL;
	rk_db_computer_ref_kind(eng->db, c->id, &ref_kind, NULL);
	int replacement = pr->fresh || !c->provider_ref || !pr->ref || strcmp(c->provider_ref, pr->ref) != 0 ||
			  (ref_kind && strcmp(ref_kind, c->kind) != 0);
	free(ref_kind);
	cJSON_AddBoolToObject(result, "replacement", replacement);
	int pending = push_pending(eng, c, mc->ops);
	if (!replacement && !pending)
		return 0;
	/* the same machine again holds its old state: it is emptied first */
	return bring_latest(eng, c, mc, !replacement, pending, result, err);
}

int rk_checkpoint_after_resume(struct rk_engine *eng, const struct rk_computer *c, const struct rk_machine_ctx *mc,
			       cJSON *result, struct rk_error *err)
{
	if (!push_pending(eng, c, mc->ops))
		return 0;
	return bring_latest(eng, c, mc, 1, 1, result, err);
}

/* --- restore, export, import, verify --------------------------------------------------------------- */

/* A mounted machine binds the host home while it runs or is paused: a
 * restore or an import waits until it is stopped. A machine with its own
 * disk takes the new workspace through its import, now or when it next
 * resumes, so it need not be down. */
static int require_down(struct rk_engine *eng, const struct rk_computer *c, const char *what, struct rk_error *err)
{
	if (!c->provider_ref || !rk_checkpoint_home_mounted(rk_provider_find(c->kind)))
		return 0;
	struct rk_machine_ctx mc;
	if (rk_machine_open(&mc, eng, c, NULL) != 0)
		return 0;
	enum rk_machine_state st = machine_state(&mc);
	rk_machine_ctx_release(&mc);
	if (st == RK_MACHINE_RUNNING || st == RK_MACHINE_PAUSED)
		return rk_error_set(err, RK_ECONFLICT,
				    "computer '%s' is %s: stop it first (`rakazo computer stop %s --wait`), then %s",
				    c->name, st == RK_MACHINE_RUNNING ? "running" : "paused", c->name, what);
	return 0;
}

/* Makes the tree in dir (a staging dir beside the home) c's latest revision
 * and its host home, and brings it to the machine. A mounted machine (down)
 * binds the host home when it next starts. Any other machine gets it now
 * through the provider's import when it runs (browsers closed, workspace
 * emptied first), else on its next resume or provision (the push marker).
 * The host home is swapped in last, so any failure leaves it, the latest
 * revision and a running machine's workspace as they were (a push that
 * fails half way says so). Caller holds the computer's lock; dir is gone
 * on success. */
static int install_locked(struct rk_engine *eng, struct rk_workspace_store *store, const struct rk_computer *c,
			  const char *dir, const char *reason, struct rk_workspace_checkpoint *out,
			  struct rk_error *err)
{
	struct rk_machine_ctx mc;
	int r = rk_machine_open(&mc, eng, c, err);
	if (r)
		return r;
	int mounted = rk_checkpoint_home_mounted(mc.ops);
	enum rk_machine_state st = c->provider_ref ? machine_state(&mc) : RK_MACHINE_GONE;
	char *marker = push_marker(eng, c);
	int marked = 0, stored = 0;
	struct rk_workspace_checkpoint rev = {0};
	if (!mounted && st == RK_MACHINE_RUNNING) {
		int reopen = quiesce_browsers(c, &mc, RK_QUIESCE);
		if ((r = push_workspace(eng, store, c, &mc, NULL, dir, 1, err)))
			rk_error_prefix(err,
					"the workspace of '%s' may be partly replaced in its machine; nothing was "
					"recorded, run it again",
					c->name);
		if (reopen)
			reopen_browser(&mc);
	} else if (!mounted && !rk_fs_exists(marker)) {
		/* before the revision: a crash in between at worst pushes the latest again */
		r = rk_fs_write_atomic(marker, "", 0, 0600, err);
		marked = r == 0;
	}
	struct rk_workspace_checkpoint_req req = {
		.src_dir = dir,
		.reason = reason,
		.kind = RK_WORKSPACE_SNAPSHOT,
		.keep = c->revisions_kept < 1 ? 1 : c->revisions_kept,
	};
	if (r == 0 && (r = store->ops->checkpoint(store, c->home_key, &req, &rev, err)) == 0)
		stored = 1;
	if (r == 0)
		r = record_revision(eng, store, c, &rev, err);
	if (r == 0)
		r = rk_workspace_swap_in(eng->data_dir, c->home_key, dir, err);
	if (r && marked && !stored)
		unlink(marker);
	if (r == 0 && out) {
		*out = rev;
		memset(&rev, 0, sizeof(rev));
	}
	rk_workspace_checkpoint_release(&rev);
	free(marker);
	rk_machine_ctx_release(&mc);
	return r;
}

int rk_checkpoint_restore(struct rk_engine *eng, const struct rk_computer *c, const char *rev,
			  struct rk_workspace_checkpoint *out, struct rk_error *err)
{
	int r = require_down(eng, c, "restore", err);
	if (r)
		return r;
	int lk = lock_computer(eng, c, err);
	if (lk < 0)
		return lk;
	struct rk_workspace_store *store = rk_checkpoint_store(eng);
	char *home = NULL, *staging = NULL, *dir = NULL;
	struct rk_workspace_checkpoint want = {0}, got = {0};
	char *reason = NULL;
	if ((r = rk_workspace_recover(eng->data_dir, c->home_key, err)) ||
	    (r = store->ops->show(store, c->home_key, rev, &want, err)))
		goto out;
	reason = rk_xasprintf("restore:%s", want.id);
	if (want.kind == RK_WORKSPACE_MARKER) {
		/* only the latest marker of a live home restores: to itself,
		 * nothing to copy (the store refuses any other) */
		if ((r = rk_workspace_dir(eng->data_dir, c->home_key, &home, err)) == 0 &&
		    (r = store->ops->restore(store, c->home_key, want.id, home, &got, err)) == 0)
			r = checkpoint_locked(eng, store, c, reason, RK_QUIESCE_NONE, out, err);
		goto out;
	}
	/* the revision is built in staging and installed from there */
	if ((r = rk_workspace_staging_new(eng->data_dir, c->home_key, &staging, err)))
		goto out;
	dir = rk_path_join(staging, "home");
	if ((r = store->ops->restore(store, c->home_key, want.id, dir, &got, err)) == 0)
		r = install_locked(eng, store, c, dir, reason, out, err);
out:
	if (staging) {
		rk_fs_remove_tree(staging, NULL);
		free(staging);
	}
	free(dir);
	free(reason);
	rk_workspace_checkpoint_release(&want);
	rk_workspace_checkpoint_release(&got);
	free(home);
	store->ops->free(store);
	close(lk);
	return r;
}

int rk_checkpoint_export(struct rk_engine *eng, const struct rk_computer *c, const char *rev, int fd, int zstd,
			 struct rk_error *err)
{
	struct rk_workspace_store *store = rk_checkpoint_store(eng);
	struct rk_workspace_checkpoint latest = {0};
	int r, have = rev ? 0 : latest_revision(store, c, &latest, err);
	if (have < 0) {
		r = have;
	} else if (have == 1) {
		/* never checkpointed: the live home is all there is */
		char *home = NULL;
		r = rk_workspace_dir(eng->data_dir, c->home_key, &home, err);
		if (r == 0)
			r = rk_workspace_export_dir(home, fd, zstd, err);
		free(home);
	} else {
		r = store->ops->export_tar(store, c->home_key, rev, fd, zstd, err);
	}
	rk_workspace_checkpoint_release(&latest);
	store->ops->free(store);
	return r;
}

int rk_checkpoint_import(struct rk_engine *eng, const struct rk_computer *c, int fd,
			 struct rk_workspace_checkpoint *out, struct rk_workspace_import_stats *stats,
			 struct rk_error *err)
{
	int r = require_down(eng, c, "import", err);
	if (r)
		return r;
	int lk = lock_computer(eng, c, err);
	if (lk < 0)
		return lk;
	struct rk_workspace_store *store = rk_checkpoint_store(eng);
	char *staging = NULL;
	struct rk_tar_opts o = import_opts(eng, c);
	if ((r = rk_workspace_recover(eng->data_dir, c->home_key, err)) == 0 &&
	    (r = rk_workspace_staging_new(eng->data_dir, c->home_key, &staging, err)) == 0 &&
	    (r = rk_workspace_import_tar(fd, staging, &o, stats, err)) == 0 &&
	    (r = install_locked(eng, store, c, staging, "import", out, err)) == 0) {
		free(staging);
		staging = NULL;
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
			 struct rk_workspace_verify *out, struct rk_error *err)
{
	/* a swap cut short by a crash is put right first, as every reader does */
	int r = rk_workspace_recover(eng->data_dir, c->home_key, err);
	if (r)
		return r;
	struct rk_workspace_store *store = rk_checkpoint_store(eng);
	r = store->ops->verify(store, c->home_key, rev, deep, out, err);
	store->ops->free(store);
	return r;
}

static char *latest_id(struct rk_workspace_store *s, const char *key)
{
	struct rk_workspace_checkpoint r = {0};
	char *id = NULL;
	if (s->ops->latest(s, key, &r, NULL) == 0) {
		id = r.id;
		r.id = NULL;
	}
	rk_workspace_checkpoint_release(&r);
	return id;
}

char *rk_checkpoint_latest_id(struct rk_engine *eng, const char *home_key)
{
	struct rk_workspace_store *s = rk_checkpoint_store(eng);
	char *id = latest_id(s, home_key);
	s->ops->free(s);
	return id;
}

cJSON *rk_checkpoint_to_json(const struct rk_computer *c, const struct rk_workspace_checkpoint *rev, const char *latest)
{
	cJSON *o = rk_workspace_checkpoint_to_json(rev, latest ? latest : "");
	cJSON_AddStringToObject(o, "computer_id", c->id);
	cJSON_AddStringToObject(o, "home_key", c->home_key);
	return o;
}

int rk_checkpoint_list(struct rk_engine *eng, const struct rk_computer *c, cJSON **out, struct rk_error *err)
{
	struct rk_workspace_store *s = rk_checkpoint_store(eng);
	struct rk_workspace_checkpoint *revs = NULL;
	size_t n = 0;
	int r = s->ops->list(s, c->home_key, &revs, &n, err);
	if (r == 0) {
		char *latest = latest_id(s, c->home_key);
		*out = cJSON_CreateArray();
		for (size_t i = 0; i < n; i++)
			cJSON_AddItemToArray(*out, rk_checkpoint_to_json(c, &revs[i], latest));
		free(latest);
	}
	rk_workspace_checkpoints_free(revs, n);
	s->ops->free(s);
	return r;
}

int rk_checkpoint_show(struct rk_engine *eng, const struct rk_computer *c, const char *rev, cJSON **out,
		       struct rk_error *err)
{
	struct rk_workspace_store *s = rk_checkpoint_store(eng);
	struct rk_workspace_checkpoint cp = {0};
	int r = s->ops->show(s, c->home_key, rev, &cp, err);
	if (r == 0) {
		char *latest = latest_id(s, c->home_key);
		*out = rk_checkpoint_to_json(c, &cp, latest);
		free(latest);
	}
	rk_workspace_checkpoint_release(&cp);
	s->ops->free(s);
	return r;
}

int rk_checkpoint_gc(struct rk_engine *eng, cJSON **out, struct rk_error *err)
{
	struct rk_workspace_store *s = rk_checkpoint_store(eng);
	struct rk_workspace_gc_stats st;
	int r = s->ops->gc(s, &st, err);
	s->ops->free(s);
	if (r == 0) {
		*out = cJSON_CreateObject();
		cJSON_AddNumberToObject(*out, "objects_kept", (double)st.objects_kept);
		cJSON_AddNumberToObject(*out, "objects_removed", (double)st.objects_removed);
		cJSON_AddNumberToObject(*out, "bytes_removed", (double)st.bytes_removed);
		cJSON_AddNumberToObject(*out, "staging_removed", (double)st.staging_removed);
	}
	return r;
}

int rk_checkpoint_forget(struct rk_engine *eng, const struct rk_computer *c, struct rk_error *err)
{
	struct rk_workspace_store *store = rk_checkpoint_store(eng);
	int r = store->ops->forget(store, c->home_key, err);
	store->ops->free(store);
	if (r == 0) {
		char *dir = rk_xasprintf("%s/home-revisions/%s", eng->data_dir, c->home_key);
		rk_fs_remove_tree(dir, NULL);
		free(dir);
	}
	return r;
}
