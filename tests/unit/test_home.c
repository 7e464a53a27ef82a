/* engine/home and engine/checkpoint (issue 6): the local home store, strict
 * imports, restore on replacement, and kill -9 during checkpoints and
 * restores, of the store and of computers (with their database record). Real files in a temporary DATA_DIR. */

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "engine/agent/hooks.h"
#include "engine/machine/checkpoint.h"
#include "engine/state/db.h"
#include "engine/state/engine.h"
#include "engine/machine/machine.h"
#include "engine/machine/execution.h"
#include "engine/store/workspace.h"
#include "engine/util/buf.h"
#include "engine/util/fs.h"
#include "engine/util/id.h"
#include "engine/util/time.h"
#include "engine/machine/worker.h"
#include "check.h"

static char *new_data_dir(void)
{
	char tmpl[] = "/tmp/rk-home-XXXXXX";
	char *d = mkdtemp(tmpl);
	setenv("RAKAZO_DATA_DIR", d, 1);
	return rk_xstrdup(d);
}

static void put(const char *root, const char *rel, const char *text)
{
	char *p = rk_path_join(root, rel);
	char *slash = strrchr(p, '/');
	*slash = '\0';
	rk_fs_mkdirs(p, 0755, NULL);
	*slash = '/';
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd >= 0) {
		rk_fs_write_fd(fd, text, strlen(text));
		close(fd);
	}
	free(p);
}

static char *get(const char *root, const char *rel)
{
	char *p = rk_path_join(root, rel);
	struct rk_buf b;
	rk_buf_init(&b);
	int r = rk_fs_read_all(p, 1 << 20, &b, NULL);
	free(p);
	if (r) {
		rk_buf_release(&b);
		return NULL;
	}
	return rk_buf_detach(&b, NULL);
}

static int has(const char *root, const char *rel)
{
	char *p = rk_path_join(root, rel);
	int e = rk_fs_exists(p);
	free(p);
	return e;
}

TEST(exclusion_precision)
{
	/* transient browser files inside .browser-profiles only */
	CHECK(rk_workspace_excluded(".browser-profiles/default/Default/Cache/data_0"));
	CHECK(rk_workspace_excluded(".browser-profiles/default/Default/Code Cache/js/x"));
	CHECK(rk_workspace_excluded(".browser-profiles/default/GrShaderCache/a"));
	CHECK(rk_workspace_excluded(".browser-profiles/default/Default/Service Worker/CacheStorage/x"));
	CHECK(rk_workspace_excluded(".browser-profiles/default/SingletonLock"));
	CHECK(rk_workspace_excluded(".browser-profiles/default/SingletonSocket"));
	CHECK(rk_workspace_excluded(".browser-profiles/firefox/p/lock"));
	CHECK(rk_workspace_excluded(".browser-profiles/firefox/p/.parentlock"));
	CHECK(rk_workspace_excluded(".browser-profiles/default/Default/x.tmp"));
	CHECK(rk_workspace_excluded(".browser-profiles/default/Cache"));
	/* what makes a profile worth keeping stays */
	CHECK(!rk_workspace_excluded(".browser-profiles/default/Default/Cookies"));
	CHECK(!rk_workspace_excluded(".browser-profiles/default/Default/Cookies-journal"));
	CHECK(!rk_workspace_excluded(".browser-profiles/default/Default/Local Storage/leveldb/000003.log"));
	CHECK(!rk_workspace_excluded(".browser-profiles/default/Default/Service Worker/Database/x"));
	CHECK(!rk_workspace_excluded(".browser-profiles"));
	/* the same names elsewhere in the workspace stay */
	CHECK(!rk_workspace_excluded("project/Cache/x"));
	CHECK(!rk_workspace_excluded("project/lock"));
	CHECK(!rk_workspace_excluded("SingletonLock"));
	CHECK(!rk_workspace_excluded("notes.tmp"));
	CHECK(!rk_workspace_excluded("x/.browser-profiles/default/Cache/a"));
	CHECK(!rk_workspace_excluded(".browser-profilesX/Cache/a"));
}

/* A checkpoint of a live tree, then the files that went in the snapshot. */
TEST(exclusion_in_snapshot_and_export)
{
	char *dir = new_data_dir();
	char *src = rk_path_join(dir, "homes/k1");
	put(src, "project/Cache/x", "keep");
	put(src, "project/lock", "keep");
	put(src, ".browser-profiles/default/Default/Cookies", "cookie");
	put(src, ".browser-profiles/default/Default/Cache/data_1", "drop");
	put(src, ".browser-profiles/default/lockfile", "drop");
	char *lnk = rk_path_join(src, ".browser-profiles/default/SingletonLock");
	CHECK(symlink("host-123", lnk) == 0);
	free(lnk);
	struct rk_workspace_store *s = rk_workspace_store_local_new(dir);
	struct rk_workspace_checkpoint_req req = {.src_dir = src, .reason = "test", .kind = RK_WORKSPACE_SNAPSHOT, .keep = 2};
	struct rk_workspace_checkpoint rev = {0};
	struct rk_error e;
	REQUIRE(s->ops->checkpoint(s, "k1", &req, &rev, &e) == 0);
	CHECK_EQ_INT(rev.files, 3);
	char *dest = rk_path_join(dir, "restored");
	REQUIRE(s->ops->restore(s, "k1", rev.id, dest, NULL, &e) == 0);
	CHECK(has(dest, "project/Cache/x"));
	CHECK(has(dest, "project/lock"));
	CHECK(has(dest, ".browser-profiles/default/Default/Cookies"));
	CHECK(!has(dest, ".browser-profiles/default/Default/Cache/data_1"));
	CHECK(!has(dest, ".browser-profiles/default/lockfile"));
	CHECK(!has(dest, ".browser-profiles/default/SingletonLock"));
	/* and through an export + strict import */
	char *tarp = rk_path_join(dir, "x.tar");
	int fd = open(tarp, O_RDWR | O_CREAT | O_TRUNC, 0600);
	REQUIRE(rk_workspace_export_dir(src, fd, 1, &e) == 0);
	lseek(fd, 0, SEEK_SET);
	char *dest2 = rk_path_join(dir, "imported");
	struct rk_workspace_import_stats st;
	CHECK_EQ_INT(rk_workspace_import_tar(fd, dest2, &(struct rk_tar_opts){.uid = -1, .gid = -1, .max_bytes = 1 << 20}, &st, &e), 0);
	close(fd);
	CHECK(has(dest2, "project/Cache/x"));
	CHECK(has(dest2, ".browser-profiles/default/Default/Cookies"));
	CHECK(!has(dest2, ".browser-profiles/default/SingletonLock"));
	CHECK(!has(dest2, ".browser-profiles/default/Default/Cache/data_1"));
	rk_workspace_checkpoint_release(&rev);
	s->ops->free(s);
	free(tarp);
	free(dest);
	free(dest2);
	free(src);
	rk_fs_remove_tree(dir, NULL);
	free(dir);
}

TEST(marker_checkpoints)
{
	char *dir = new_data_dir();
	char *src = rk_path_join(dir, "homes/k2");
	put(src, "a.txt", "A");
	struct rk_workspace_store *s = rk_workspace_store_local_new(dir);
	struct rk_workspace_checkpoint r1 = {0}, r2 = {0}, latest = {0};
	struct rk_error e;
	struct rk_workspace_checkpoint_req req = {.src_dir = src, .reason = "stop", .kind = RK_WORKSPACE_MARKER, .keep = 1};
	CHECK(s->ops->latest(s, "k2", &latest, &e) == -RK_ENOTFOUND);
	REQUIRE(s->ops->checkpoint(s, "k2", &req, &r1, &e) == 0);
	rk_sleep_ms(2);
	REQUIRE(s->ops->checkpoint(s, "k2", &req, &r2, &e) == 0);
	CHECK(r1.kind == RK_WORKSPACE_MARKER && r1.files == -1);
	CHECK(strcmp(r1.id, r2.id) != 0);
	REQUIRE(s->ops->latest(s, "k2", &latest, &e) == 0);
	CHECK_EQ_STR(latest.id, r2.id);
	struct rk_workspace_checkpoint *revs;
	size_t n;
	REQUIRE(s->ops->list(s, "k2", &revs, &n, &e) == 0);
	CHECK_EQ_INT(n, 1); /* keep 1 */
	rk_workspace_checkpoints_free(revs, n);
	struct rk_workspace_verify v;
	CHECK_EQ_INT(s->ops->verify(s, "k2", NULL, 0, &v, &e), 0);
	CHECK(v.ok);
	/* a marker holds no copy: only the live home "restores" it */
	char *other = rk_path_join(dir, "elsewhere");
	CHECK(s->ops->restore(s, "k2", r2.id, other, NULL, &e) == -RK_EUNSUPPORTED);
	CHECK_EQ_INT(s->ops->restore(s, "k2", r2.id, src, NULL, &e), 0);
	/* the revision metadata lives outside the home: a user's .revision stays theirs */
	CHECK(!has(src, ".revision"));
	free(other);
	rk_workspace_checkpoint_release(&r1);
	rk_workspace_checkpoint_release(&r2);
	rk_workspace_checkpoint_release(&latest);
	s->ops->free(s);
	free(src);
	rk_fs_remove_tree(dir, NULL);
	free(dir);
}

static int64_t count_objects(const char *dir)
{
	int64_t n = 0;
	for (int i = 0; i < 256; i++) {
		char *d = rk_xasprintf("%s/objects/%02x", dir, i);
		DIR *dd = opendir(d);
		struct dirent *de;
		while (dd && (de = readdir(dd)))
			if (strlen(de->d_name) == 64)
				n++;
		if (dd)
			closedir(dd);
		free(d);
	}
	return n;
}

TEST(incremental_snapshots_restore_and_prune)
{
	char *dir = new_data_dir();
	char *src = rk_path_join(dir, "homes/k3");
	for (int i = 0; i < 50; i++) {
		char name[32], text[64];
		snprintf(name, sizeof(name), "d%d/f%d.txt", i % 5, i);
		snprintf(text, sizeof(text), "file %d", i);
		put(src, name, text);
	}
	put(src, "same1", "dup");
	put(src, "same2", "dup");
	char *lnk = rk_path_join(src, "link");
	CHECK(symlink("d0/f0.txt", lnk) == 0);
	free(lnk);
	struct rk_workspace_store *s = rk_workspace_store_local_new(dir);
	struct rk_error e;
	struct rk_workspace_checkpoint_req req = {.src_dir = src, .reason = "t", .kind = RK_WORKSPACE_SNAPSHOT, .keep = 2};
	struct rk_workspace_checkpoint r1 = {0}, r2 = {0}, r3 = {0};
	REQUIRE(s->ops->checkpoint(s, "k3", &req, &r1, &e) == 0);
	CHECK_EQ_INT(r1.files, 52);
	CHECK_EQ_INT(r1.hashed, 52);
	CHECK_EQ_INT(count_objects(dir), 51); /* same content once */
	put(src, "d1/f1.txt", "changed");
	REQUIRE(s->ops->checkpoint(s, "k3", &req, &r2, &e) == 0);
	CHECK_EQ_INT(r2.hashed, 1);
	CHECK_EQ_INT(r2.reused, 51);
	CHECK_EQ_INT(count_objects(dir), 52);
	/* the older revision comes back whole */
	char *dest = rk_path_join(dir, "old");
	REQUIRE(s->ops->restore(s, "k3", r1.id, dest, NULL, &e) == 0);
	char *t = get(dest, "d1/f1.txt");
	CHECK_EQ_STR(t, "file 1");
	free(t);
	char target[64] = {0};
	char *lp = rk_path_join(dest, "link");
	CHECK(readlink(lp, target, sizeof(target) - 1) > 0);
	CHECK_EQ_STR(target, "d0/f0.txt");
	free(lp);
	/* a third checkpoint prunes r1 and the object only it named */
	put(src, "d2/f2.txt", "changed too");
	REQUIRE(s->ops->checkpoint(s, "k3", &req, &r3, &e) == 0);
	struct rk_workspace_checkpoint *revs;
	size_t n;
	REQUIRE(s->ops->list(s, "k3", &revs, &n, &e) == 0);
	CHECK_EQ_INT(n, 2);
	rk_workspace_checkpoints_free(revs, n);
	CHECK_EQ_INT(count_objects(dir), 52); /* "file 1" and "file 2" objects went, "changed too" came */
	struct rk_workspace_verify v;
	CHECK_EQ_INT(s->ops->verify(s, "k3", NULL, 1, &v, &e), 0);
	CHECK(v.ok);
	/* damage an object: deep verify says so */
	char *opath = NULL;
	{
		struct rk_buf b;
		rk_buf_init(&b);
		char *fp = rk_path_join(src, "d2/f2.txt");
		rk_fs_read_all(fp, 100, &b, NULL);
		free(fp);
		char hex[65];
		rk_sha256_hex(b.data, b.len, hex);
		opath = rk_xasprintf("%s/objects/%.2s/%s", dir, hex, hex);
		rk_buf_release(&b);
	}
	int fd = open(opath, O_WRONLY);
	CHECK(fd >= 0);
	if (fd >= 0) {
		CHECK(write(fd, "X", 1) == 1);
		close(fd);
	}
	CHECK_EQ_INT(s->ops->verify(s, "k3", NULL, 1, &v, &e), 0);
	CHECK(!v.ok);
	CHECK_EQ_INT(v.corrupt, 1);
	free(opath);
	rk_workspace_checkpoint_release(&r1);
	rk_workspace_checkpoint_release(&r2);
	rk_workspace_checkpoint_release(&r3);
	s->ops->free(s);
	free(dest);
	free(src);
	rk_fs_remove_tree(dir, NULL);
	free(dir);
}

/* --- tar slip ---------------------------------------------------------------------- */

static int py(const char *script)
{
	pid_t pid = fork();
	if (pid == 0) {
		execlp("python3", "python3", "-c", script, (char *)NULL);
		_exit(127);
	}
	int st = 0;
	waitpid(pid, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

TEST(tar_slip_refused)
{
	char *dir = new_data_dir();
	static const char *const kinds[] = {"absolute", "dotdot", "symlink_out", "symlink_abs", "hardlink_out",
					    "device", "fifo", "too_big", "through_link", NULL};
	char *script = rk_xasprintf(
		"import tarfile, io, sys\n"
		"d = '%s'\n"
		"def mk(name, members):\n"
		"    with tarfile.open(d + '/' + name + '.tar', 'w') as t:\n"
		"        for m, data in members:\n"
		"            t.addfile(m, io.BytesIO(data) if data is not None else None)\n"
		"def f(n, data=b'x'):\n"
		"    i = tarfile.TarInfo(n); i.size = len(data); return (i, data)\n"
		"def l(n, target, kind=tarfile.SYMTYPE):\n"
		"    i = tarfile.TarInfo(n); i.type = kind; i.linkname = target; return (i, None)\n"
		"def dev(n, kind):\n"
		"    i = tarfile.TarInfo(n); i.type = kind; i.devmajor = 1; i.devminor = 3; return (i, None)\n"
		"mk('absolute', [f('ok'), f('/tmp/rk-slip-abs')])\n"
		"mk('dotdot', [f('ok'), f('a/../../rk-slip-dotdot')])\n"
		"mk('symlink_out', [l('ln', '../../outside')])\n"
		"mk('symlink_abs', [l('ln', '/etc')])\n"
		"mk('hardlink_out', [l('hl', '../outside', tarfile.LNKTYPE)])\n"
		"mk('device', [dev('null', tarfile.CHRTYPE)])\n"
		"mk('fifo', [dev('pipe', tarfile.FIFOTYPE)])\n"
		"mk('too_big', [f('big', b'y' * 5000)])\n"
		"mk('through_link', [l('ln', 'sub'), f('ln/x')])\n",
		dir);
	if (py(script) != 0) {
		check_skip("python3 cannot build the archives");
		free(script);
		rk_fs_remove_tree(dir, NULL);
		free(dir);
		return;
	}
	free(script);
	for (size_t i = 0; kinds[i]; i++) {
		char *tarp = rk_xasprintf("%s/%s.tar", dir, kinds[i]);
		char *dest = rk_xasprintf("%s/box/stage-%s", dir, kinds[i]);
		int fd = open(tarp, O_RDONLY);
		struct rk_error e = {0};
		int r = rk_workspace_import_tar(fd, dest, &(struct rk_tar_opts){.uid = -1, .gid = -1, .max_bytes = 4096}, NULL, &e);
		close(fd);
		if (r == 0)
			printf("  %s was not refused\n", kinds[i]);
		CHECK(r < 0);
		CHECK(e.message[0] != '\0');
		free(tarp);
		free(dest);
	}
	/* nothing landed outside the staging dirs */
	CHECK(!rk_fs_exists("/tmp/rk-slip-abs"));
	char *p = rk_xasprintf("%s/rk-slip-dotdot", dir);
	CHECK(!rk_fs_exists(p));
	free(p);
	p = rk_xasprintf("%s/box/rk-slip-dotdot", dir);
	CHECK(!rk_fs_exists(p));
	free(p);
	p = rk_xasprintf("%s/box/sub", dir);
	CHECK(!rk_fs_exists(p));
	free(p);
	rk_fs_remove_tree(dir, NULL);
	free(dir);
}

/* --- computers: restore on replacement ------------------------------------------------- */

static void drain(struct rk_engine *eng)
{
	struct rk_worker_options o = {.once = 1};
	struct rk_error e;
	rk_worker_run(eng, &o, &e);
}

static int lifecycle(struct rk_engine *eng, const char *op, const char *computer, cJSON *body,
		     struct rk_execution *done)
{
	struct rk_submit s = {.op = op, .computer = computer, .body = body};
	struct rk_execution x = {0};
	struct rk_error e;
	int existed;
	int r = rk_execution_submit(eng, &s, &x, &existed, &e);
	if (r) {
		printf("  submit %s: %s\n", op, e.message);
		return r;
	}
	drain(eng);
	r = rk_execution_get(eng, x.id, done, &e);
	rk_execution_release(&x);
	return r;
}

TEST(replacement_restores_the_workspace)
{
	char *dir = new_data_dir();
	struct rk_engine *eng = NULL;
	struct rk_error e;
	REQUIRE(rk_engine_open(&eng, &e) == 0);
	cJSON *body = cJSON_CreateObject();
	cJSON_AddStringToObject(body, "name", "rep");
	cJSON_AddStringToObject(body, "provider", "fake");
	cJSON_AddNumberToObject(body, "revisions", 3);
	struct rk_execution done = {0};
	REQUIRE(lifecycle(eng, "create", NULL, body, &done) == 0);
	cJSON_Delete(body);
	CHECK_EQ_STR(done.state, "succeeded");
	rk_execution_release(&done);
	struct rk_computer c = {0};
	REQUIRE(rk_db_computer_get(eng->db, "rep", &c, &e) == 0);
	char *home = NULL;
	REQUIRE(rk_workspace_dir(eng->data_dir, c.home_key, &home, &e) == 0);
	put(home, "work/notes.txt", "precious");
	put(home, ".browser-profiles/default/Default/Cookies", "session=1");
	char *lnk = rk_path_join(home, ".browser-profiles/default/SingletonLock");
	CHECK(symlink("oldhost-42", lnk) == 0);
	/* stop checkpoints first */
	REQUIRE(lifecycle(eng, "stop", "rep", NULL, &done) == 0);
	CHECK_EQ_STR(done.state, "succeeded");
	rk_execution_release(&done);
	rk_computer_release(&c);
	REQUIRE(rk_db_computer_get(eng->db, "rep", &c, &e) == 0);
	CHECK(strncmp(c.home_revision, "rev-", 4) == 0);
	/* the machine goes and the host dir with it: the next start rebuilds it */
	const struct rk_provider_ops *ops = rk_provider_find("fake");
	struct rk_machine_ctx mc;
	rk_machine_ctx_init(&mc, eng, &c);
	CHECK_EQ_INT(ops->destroy(&mc.m, &e), 0);
	rk_machine_ctx_release(&mc);
	rk_fs_remove_tree(home, NULL);
	REQUIRE(lifecycle(eng, "resume", "rep", NULL, &done) == 0);
	CHECK_EQ_STR(done.state, "succeeded");
	CHECK(done.result && strstr(done.result, "\"replacement\":true"));
	CHECK(done.result && strstr(done.result, "\"home_rebuilt\""));
	rk_execution_release(&done);
	char *t = get(home, "work/notes.txt");
	CHECK_EQ_STR(t, "precious");
	free(t);
	t = get(home, ".browser-profiles/default/Default/Cookies");
	CHECK_EQ_STR(t, "session=1");
	free(t);
	CHECK(!rk_fs_exists(lnk));
	/* a ref made by another kind is a replacement too (docker -> fake) */
	rk_computer_release(&c);
	REQUIRE(rk_db_computer_get(eng->db, "rep", &c, &e) == 0);
	CHECK_EQ_STR(c.state, "running");
	struct rk_provision_result pr = {.ref = c.provider_ref};
	cJSON *res = cJSON_CreateObject();
	REQUIRE(rk_machine_open(&mc, eng, &c, &e) == 0);
	CHECK_EQ_INT(rk_checkpoint_after_provision(eng, &c, &mc, &pr, res, &e), 0);
	CHECK(cJSON_IsFalse(cJSON_GetObjectItem(res, "replacement")));
	cJSON_Delete(res);
	REQUIRE(rk_db_exec(eng->db, "UPDATE computers SET ref_kind = 'docker' WHERE name = 'rep'", &e) == 0);
	res = cJSON_CreateObject();
	CHECK_EQ_INT(rk_checkpoint_after_provision(eng, &c, &mc, &pr, res, &e), 0);
	CHECK(cJSON_IsTrue(cJSON_GetObjectItem(res, "replacement")));
	cJSON_Delete(res);
	rk_machine_ctx_release(&mc);
	free(lnk);
	free(home);
	rk_computer_release(&c);
	rk_engine_free(eng);
	rk_fs_remove_tree(dir, NULL);
	free(dir);
}

/* --- kill -9 during checkpoints and restores ----------------------------------------- */

static void make_tree(const char *root, int round)
{
	for (int i = 0; i < 120; i++) {
		char name[64];
		snprintf(name, sizeof(name), "d%d/f%d", i % 7, i);
		char *text = rk_xasprintf("round %d file %d %0*d", (i % 10 == 0) ? round : 0, i, 2000 + i * 30, 0);
		put(root, name, text);
		free(text);
	}
}

/* kill -9 to pid and, when > 0, pid2; how many were killed. */
static int kill9(pid_t pid, pid_t pid2)
{
	int n = 0;
	for (int i = 0; i < 2; i++) {
		pid_t p = i ? pid2 : pid;
		if (p > 0) {
			kill(p, SIGKILL);
			waitpid(p, NULL, 0);
			n++;
		}
	}
	return n;
}

/* In a child: checkpoint and restore forever (until killed). */
static void churn(const char *dir, int seed)
{
	srand((unsigned)seed);
	struct rk_workspace_store *s = rk_workspace_store_local_new(dir);
	char *src = rk_path_join(dir, "homes/crash");
	char *dest = rk_path_join(dir, "homes/crash-restored");
	for (int round = 0;; round++) {
		struct rk_error e;
		struct rk_workspace_checkpoint r = {0};
		if (rand() % 3) {
			make_tree(src, round + seed * 1000);
			struct rk_workspace_checkpoint_req req = {.src_dir = src, .reason = "crash", .kind = RK_WORKSPACE_SNAPSHOT,
							     .keep = 3};
			s->ops->checkpoint(s, "crash", &req, &r, &e);
		} else {
			s->ops->restore(s, "crash", NULL, dest, &r, &e);
		}
		rk_workspace_checkpoint_release(&r);
	}
}

TEST(kill9_during_checkpoint_and_restore)
{
	char *dir = new_data_dir();
	char *src = rk_path_join(dir, "homes/crash");
	make_tree(src, 0);
	struct rk_workspace_store *s = rk_workspace_store_local_new(dir);
	struct rk_error e;
	struct rk_workspace_checkpoint r = {0};
	struct rk_workspace_checkpoint_req req = {.src_dir = src, .reason = "base", .kind = RK_WORKSPACE_SNAPSHOT, .keep = 3};
	REQUIRE(s->ops->checkpoint(s, "crash", &req, &r, &e) == 0);
	rk_workspace_checkpoint_release(&r);
	int kills = 0;
	srand(1234);
	for (int i = 0; i < 110; i++) {
		pid_t pid = fork();
		if (pid == 0) {
			churn(dir, i + 1);
			_exit(0);
		}
		/* a second one contending for the same lock now and then */
		pid_t pid2 = i % 5 == 0 ? fork() : -1;
		if (pid2 == 0) {
			churn(dir, i + 5000);
			_exit(0);
		}
		rk_sleep_ms(1 + rand() % 40);
		kills += kill9(pid, pid2);
		/* after every kill the latest revision is whole */
		struct rk_workspace_verify v;
		if (s->ops->verify(s, "crash", NULL, i % 10 == 0, &v, &e) != 0 || !v.ok) {
			printf("  after kill %d: %s\n", kills, v.problem[0] ? v.problem : e.message);
			CHECK(0);
			break;
		}
	}
	CHECK(kills >= 100);
	struct rk_workspace_verify v;
	CHECK_EQ_INT(s->ops->verify(s, "crash", NULL, 1, &v, &e), 0);
	CHECK(v.ok);
	/* and it restores, with the home swap put right first */
	char *dest = rk_path_join(dir, "homes/crash-restored");
	REQUIRE(rk_workspace_recover(dir, "crash-restored", &e) == 0);
	CHECK_EQ_INT(s->ops->restore(s, "crash", NULL, dest, NULL, &e), 0);
	CHECK(has(dest, "d0/f0"));
	struct rk_workspace_gc_stats gs;
	CHECK_EQ_INT(s->ops->gc(s, &gs, &e), 0);
	CHECK_EQ_INT(s->ops->verify(s, "crash", NULL, 1, &v, &e), 0);
	CHECK(v.ok);
	s->ops->free(s);
	free(dest);
	free(src);
	rk_fs_remove_tree(dir, NULL);
	free(dir);
}

/* --- kill -9 during computer checkpoints, restores and imports ------------------------- */

#define CRASH_COMPUTERS 3
static const char *const crash_names[CRASH_COMPUTERS] = {"k0", "k1", "k2"};

/* In a child with its own engine: checkpoints (with their database record),
 * restores and imports of the computers at random, until killed. */
static void churn_computers(const char *archive, const char *done_log, int seed)
{
	srand((unsigned)seed);
	int log = open(done_log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
	struct rk_engine *eng = NULL;
	struct rk_error e;
	if (rk_engine_open(&eng, &e) != 0)
		_exit(1);
	for (int round = 0;; round++) {
		struct rk_computer c = {0};
		if (rk_db_computer_get(eng->db, crash_names[rand() % CRASH_COMPUTERS], &c, &e) != 0)
			_exit(1);
		struct rk_workspace_checkpoint r = {0};
		int op = rand() % 4, ok = -1;
		if (op < 2) {
			char *home = NULL;
			if (rk_workspace_dir(eng->data_dir, c.home_key, &home, &e) == 0 && rk_fs_exists(home))
				make_tree(home, round + seed * 1000);
			free(home);
			ok = rk_checkpoint_create(eng, &c, "crash", RK_QUIESCE_NONE, &r, &e);
		} else if (op == 2) {
			ok = rk_checkpoint_restore(eng, &c, NULL, &r, &e);
		} else {
			int fd = open(archive, O_RDONLY | O_CLOEXEC);
			if (fd >= 0) {
				ok = rk_checkpoint_import(eng, &c, fd, &r, NULL, &e);
				close(fd);
			}
		}
		if (ok == 0 && log >= 0)
			rk_fs_write_fd(log, op < 2 ? "c" : op == 2 ? "r" : "i", 1);
		rk_workspace_checkpoint_release(&r);
		rk_computer_release(&c);
	}
}

/* Every computer's latest revision verifies (deep: every object re-hashed). */
static int computers_verify(struct rk_engine *eng, int deep, int kills)
{
	for (int i = 0; i < CRASH_COMPUTERS; i++) {
		struct rk_computer c = {0};
		struct rk_error e;
		struct rk_workspace_verify v = {0};
		if (rk_db_computer_get(eng->db, crash_names[i], &c, &e) != 0 ||
		    rk_checkpoint_verify(eng, &c, NULL, deep, &v, &e) != 0 || !v.ok) {
			printf("  after kill %d, %s: %s\n", kills, crash_names[i], v.problem[0] ? v.problem : e.message);
			rk_computer_release(&c);
			return -1;
		}
		rk_computer_release(&c);
	}
	return 0;
}

TEST(kill9_during_computer_checkpoints_restores_and_imports)
{
	char *dir = new_data_dir();
	struct rk_engine *eng = NULL;
	struct rk_error e;
	REQUIRE(rk_engine_open(&eng, &e) == 0);
	/* a marker computer (1 revision) and two that keep snapshots, all
	 * stopped so restores and imports may run */
	static const int keep[CRASH_COMPUTERS] = {1, 3, 2};
	for (int i = 0; i < CRASH_COMPUTERS; i++) {
		cJSON *body = cJSON_CreateObject();
		cJSON_AddStringToObject(body, "name", crash_names[i]);
		cJSON_AddStringToObject(body, "provider", "fake");
		cJSON_AddNumberToObject(body, "revisions", keep[i]);
		struct rk_execution done = {0};
		REQUIRE(lifecycle(eng, "create", NULL, body, &done) == 0);
		cJSON_Delete(body);
		rk_execution_release(&done);
		struct rk_computer c = {0};
		REQUIRE(rk_db_computer_get(eng->db, crash_names[i], &c, &e) == 0);
		char *home = NULL;
		REQUIRE(rk_workspace_dir(eng->data_dir, c.home_key, &home, &e) == 0);
		make_tree(home, i);
		free(home);
		rk_computer_release(&c);
		REQUIRE(lifecycle(eng, "stop", crash_names[i], NULL, &done) == 0);
		CHECK_EQ_STR(done.state, "succeeded");
		rk_execution_release(&done);
	}
	/* the archive the imports bring in: k1's workspace */
	char *archive = rk_path_join(dir, "k1.tar.zst");
	struct rk_computer c1 = {0};
	REQUIRE(rk_db_computer_get(eng->db, "k1", &c1, &e) == 0);
	int afd = open(archive, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	REQUIRE(afd >= 0);
	CHECK_EQ_INT(rk_checkpoint_export(eng, &c1, NULL, afd, 1, &e), 0);
	close(afd);
	rk_computer_release(&c1);
	char *done_log = rk_path_join(dir, "done.log");
	int kills = 0;
	srand(4321);
	for (int i = 0; i < 110; i++) {
		pid_t pid = fork();
		if (pid == 0) {
			churn_computers(archive, done_log, i + 1);
			_exit(0);
		}
		pid_t pid2 = i % 4 == 0 ? fork() : -1;
		if (pid2 == 0) {
			churn_computers(archive, done_log, i + 7000);
			_exit(0);
		}
		/* mostly early (opening, the first operation), now and then after
		 * a few operations */
		rk_sleep_ms(rand() % 3 ? 5 + rand() % 80 : 100 + rand() % 300);
		kills += kill9(pid, pid2);
		if (computers_verify(eng, i % 10 == 0, kills) != 0) {
			CHECK(0);
			break;
		}
	}
	CHECK(kills >= 100);
	CHECK_EQ_INT(computers_verify(eng, 1, kills), 0);
	/* the children got work done between the kills (the rest were cut
	 * short at every stage): checkpoints, restores and imports */
	char *done = get(dir, "done.log");
	int seen[3] = {0};
	for (const char *p = done ? done : ""; *p; p++)
		seen[*p == 'c' ? 0 : *p == 'r' ? 1 : 2]++;
	printf("  completed between kills: %d checkpoints, %d restores, %d imports\n", seen[0], seen[1], seen[2]);
	CHECK(seen[0] > 0 && seen[1] > 0 && seen[2] > 0);
	free(done);
	free(done_log);
	struct rk_workspace_store *s = rk_checkpoint_store(eng);
	/* each computer checkpoints again, and its record names the store's latest */
	for (int i = 0; i < CRASH_COMPUTERS; i++) {
		struct rk_computer c = {0};
		REQUIRE(rk_db_computer_get(eng->db, crash_names[i], &c, &e) == 0);
		struct rk_workspace_checkpoint r = {0}, latest = {0};
		CHECK_EQ_INT(rk_checkpoint_create(eng, &c, "after", RK_QUIESCE_NONE, &r, &e), 0);
		CHECK_EQ_INT(s->ops->latest(s, c.home_key, &latest, &e), 0);
		CHECK_EQ_STR(r.id, latest.id);
		rk_computer_release(&c);
		REQUIRE(rk_db_computer_get(eng->db, crash_names[i], &c, &e) == 0);
		CHECK_EQ_STR(c.home_revision, latest.id);
		CHECK_EQ_INT(rk_checkpoint_restore(eng, &c, NULL, NULL, &e), 0);
		rk_workspace_checkpoint_release(&r);
		rk_workspace_checkpoint_release(&latest);
		rk_computer_release(&c);
	}
	CHECK_EQ_INT(computers_verify(eng, 1, kills), 0);
	s->ops->free(s);
	free(archive);
	rk_engine_free(eng);
	rk_fs_remove_tree(dir, NULL);
	free(dir);
}

int main(void)
{
	rk_engine_hooks_init();
	RUN(exclusion_precision);
	RUN(exclusion_in_snapshot_and_export);
	RUN(marker_checkpoints);
	RUN(incremental_snapshots_restore_and_prune);
	RUN(tar_slip_refused);
	RUN(replacement_restores_the_workspace);
	RUN(kill9_during_checkpoint_and_restore);
	RUN(kill9_during_computer_checkpoints_restores_and_imports);
	return check_summary("home");
}
