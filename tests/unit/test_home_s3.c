/* engine/home_s3 (issue 14): the S3-compatible home store against a local
 * s3rver on loopback (tests/s3/start.sh): round trips, content addressing,
 * multipart, pruning, verify, kill -9 mid-checkpoint, a PUT of `latest` in
 * flight or cut short, forget and the errors of a wrong setting. Skips when node or s3rver is missing, unless
 * RAKAZO_REQUIRE_DOCKER is set (CI), where that fails. */

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "engine/store/workspace.h"
#include "engine/util/buf.h"
#include "engine/util/fs.h"
#include "engine/util/http.h"
#include "engine/util/id.h"
#include "engine/util/time.h"
#include "check.h"

static char *endpoint, *server_dir, *data_dir;
static pid_t server_pid;
static const char *no_server; /* why the server is not there */

static int start_server(void)
{
	char tmpl[] = "/tmp/rk-s3-XXXXXX";
	server_dir = rk_xstrdup(mkdtemp(tmpl));
	char tmpl2[] = "/tmp/rk-s3data-XXXXXX";
	data_dir = rk_xstrdup(mkdtemp(tmpl2));
	const char *root = getenv("RAKAZO_SRC") ? getenv("RAKAZO_SRC") : ".";
	char *cmd = rk_xasprintf("sh '%s/tests/s3/start.sh' '%s' rakazo-test %d", root, server_dir, (int)getpid());
	FILE *p = popen(cmd, "r");
	free(cmd);
	char line[256];
	while (p && fgets(line, sizeof(line), p)) {
		line[strcspn(line, "\n")] = '\0';
		if (!strncmp(line, "endpoint=", 9))
			endpoint = rk_xstrdup(line + 9);
		else if (!strncmp(line, "pid=", 4))
			server_pid = (pid_t)atoi(line + 4);
	}
	int st = p ? pclose(p) : -1;
	if (!endpoint || server_pid <= 0) {
		no_server = WIFEXITED(st) && WEXITSTATUS(st) == 77
				    ? "node or s3rver is missing (sh tests/s3/setup.sh installs s3rver)"
				    : "tests/s3/start.sh could not start s3rver";
		return -1;
	}
	setenv("RAKAZO_S3_ENDPOINT", endpoint, 1);
	setenv("AWS_ACCESS_KEY_ID", "S3RVER", 1);
	setenv("AWS_SECRET_ACCESS_KEY", "S3RVER", 1);
	setenv("AWS_REGION", "us-east-1", 1);
	setenv("RAKAZO_HTTP_BACKOFF_MS", "20", 1);
	return 0;
}

static int need_server(void)
{
	if (endpoint)
		return 1;
	check_skip(no_server);
	return 0;
}

static struct rk_workspace_store *open_store(const char *prefix)
{
	char *url = rk_xasprintf("s3://rakazo-test/%s", prefix);
	struct rk_error e;
	struct rk_workspace_store *s = rk_workspace_store_s3_new(url, data_dir, &e);
	if (!s)
		printf("  store %s: %s\n", url, e.message);
	free(url);
	return s;
}

static void put_bytes(const char *root, const char *rel, const void *data, size_t len, mode_t mode)
{
	char *p = rk_path_join(root, rel);
	char *slash = strrchr(p, '/');
	*slash = '\0';
	rk_fs_mkdirs(p, 0755, NULL);
	*slash = '/';
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd >= 0) {
		rk_fs_write_fd(fd, data, len);
		fchmod(fd, mode);
		close(fd);
	}
	free(p);
}

static void put(const char *root, const char *rel, const char *text)
{
	put_bytes(root, rel, text, strlen(text), 0644);
}

static char *get(const char *root, const char *rel, size_t *len)
{
	char *p = rk_path_join(root, rel);
	struct rk_buf b;
	rk_buf_init(&b);
	int r = rk_fs_read_all(p, 64u << 20, &b, NULL);
	free(p);
	if (r) {
		rk_buf_release(&b);
		return NULL;
	}
	return rk_buf_detach(&b, len);
}

static char *tmp_dir(const char *name)
{
	char *d = rk_xasprintf("%s/%s", data_dir, name);
	rk_fs_remove_tree(d, NULL);
	rk_fs_mkdirs(d, 0755, NULL);
	return d;
}

static int checkpoint(struct rk_workspace_store *s, const char *key, const char *src, int keep, char **id)
{
	struct rk_workspace_checkpoint_req req = {.src_dir = src, .reason = "test", .kind = RK_WORKSPACE_SNAPSHOT, .keep = keep};
	struct rk_workspace_checkpoint r = {0};
	struct rk_error e;
	int rc = s->ops->checkpoint(s, key, &req, &r, &e);
	if (rc)
		printf("  checkpoint %s: %s\n", key, e.message);
	if (id)
		*id = rc ? NULL : rk_xstrdup(r.id);
	rk_workspace_checkpoint_release(&r);
	return rc;
}

/* A signed request straight to the bucket, to damage what the store wrote. */
static long raw(const char *method, const char *key, const char *body)
{
	char *url = rk_xasprintf("%s/rakazo-test/%s", endpoint, key);
	char sha[65];
	rk_sha256_hex(body ? body : "", body ? strlen(body) : 0, sha);
	char *h = rk_xasprintf("x-amz-content-sha256: %s", sha);
	const char *headers[] = {h, NULL};
	struct rk_http_request req = {.method = method, .url = url, .headers = headers, .body = body,
				      .body_len = body ? strlen(body) : 0, .aws_sigv4 = "aws:amz:us-east-1:s3",
				      .userpwd = "S3RVER:S3RVER", .content_type = "application/octet-stream"};
	struct rk_http_response resp;
	rk_http_response_init(&resp);
	struct rk_error e;
	rk_http_do(&req, &resp, &e);
	long st = resp.status;
	rk_http_response_release(&resp);
	free(h);
	free(url);
	return st;
}

static char *hash_of(const char *text)
{
	char hex[65];
	rk_sha256_hex(text, strlen(text), hex);
	return rk_xstrdup(hex);
}

TEST(round_trip_modes_links_binary_empty_dirs)
{
	if (!need_server())
		return;
	struct rk_workspace_store *s = open_store("round");
	REQUIRE(s);
	struct rk_workspace_desc d = {0};
	struct rk_error e;
	CHECK_EQ_INT(s->ops->describe(s, &d, &e), 0);
	CHECK_EQ_STR(d.name, "s3");
	CHECK(d.caps & RK_WORKSPACE_REVISIONS);
	CHECK(!(d.caps & RK_WORKSPACE_MARKERS));
	free(d.location);
	char *src = tmp_dir("round-src");
	put(src, "notes/a.txt", "alpha\n");
	put_bytes(src, "bin/run.sh", "#!/bin/sh\necho hi\n", 18, 0751);
	put_bytes(src, "secret/key", "k", 1, 0600);
	unsigned char bin[4096];
	for (size_t i = 0; i < sizeof(bin); i++)
		bin[i] = (unsigned char)(i * 7 + (i >> 3));
	bin[10] = 0;
	put_bytes(src, "data/blob.bin", bin, sizeof(bin), 0644);
	put_bytes(src, "data/empty-file", "", 0, 0644);
	char *empty = rk_path_join(src, "empty/deeper");
	rk_fs_mkdirs(empty, 0755, NULL);
	chmod(empty, 0710);
	char *ln = rk_path_join(src, "notes/link");
	CHECK_EQ_INT(symlink("a.txt", ln), 0);
	char *id = NULL;
	REQUIRE(checkpoint(s, "round", src, 3, &id) == 0);

	struct rk_workspace_checkpoint latest = {0};
	CHECK_EQ_INT(s->ops->latest(s, "round", &latest, &e), 0);
	CHECK_EQ_STR(latest.id, id);
	CHECK_EQ_INT(latest.kind, RK_WORKSPACE_SNAPSHOT);
	CHECK_EQ_INT(latest.files, 5);
	rk_workspace_checkpoint_release(&latest);

	char *dest = rk_xasprintf("%s/round-dest", data_dir);
	rk_fs_remove_tree(dest, NULL);
	struct rk_workspace_checkpoint got = {0};
	REQUIRE(s->ops->restore(s, "round", NULL, dest, &got, &e) == 0);
	CHECK_EQ_STR(got.id, id);
	rk_workspace_checkpoint_release(&got);
	size_t n = 0;
	char *t = get(dest, "notes/a.txt", NULL);
	CHECK_EQ_STR(t, "alpha\n");
	free(t);
	t = get(dest, "data/blob.bin", &n);
	CHECK(t && n == sizeof(bin) && !memcmp(t, bin, n));
	free(t);
	t = get(dest, "data/empty-file", &n);
	CHECK(t && n == 0);
	free(t);
	struct stat st;
	char *p = rk_path_join(dest, "bin/run.sh");
	CHECK(stat(p, &st) == 0 && (st.st_mode & 07777) == 0751);
	free(p);
	p = rk_path_join(dest, "secret/key");
	CHECK(stat(p, &st) == 0 && (st.st_mode & 07777) == 0600);
	free(p);
	p = rk_path_join(dest, "empty/deeper");
	CHECK(stat(p, &st) == 0 && S_ISDIR(st.st_mode) && (st.st_mode & 07777) == 0710);
	free(p);
	p = rk_path_join(dest, "notes/link");
	char target[64] = {0};
	CHECK(readlink(p, target, sizeof(target) - 1) == 5 && !strcmp(target, "a.txt"));
	free(p);
	/* mtimes come back too */
	struct stat a, b;
	char *pa = rk_path_join(src, "notes/a.txt"), *pb = rk_path_join(dest, "notes/a.txt");
	CHECK(stat(pa, &a) == 0 && stat(pb, &b) == 0 && a.st_mtim.tv_sec == b.st_mtim.tv_sec &&
	      a.st_mtim.tv_nsec == b.st_mtim.tv_nsec);
	free(pa);
	free(pb);

	/* a restore over an existing dir replaces it whole */
	put(dest, "stray", "x");
	REQUIRE(s->ops->restore(s, "round", id, dest, NULL, &e) == 0);
	CHECK(!rk_fs_exists(p = rk_path_join(dest, "stray")));
	free(p);

	/* the tar export holds the same files */
	char *tarp = rk_xasprintf("%s/round.tar", data_dir);
	int fd = open(tarp, O_RDWR | O_CREAT | O_TRUNC, 0600);
	CHECK_EQ_INT(s->ops->export_tar(s, "round", NULL, fd, 0, &e), 0);
	close(fd);
	char *cmd = rk_xasprintf("tar -tf '%s' | sort | tr '\\n' ' '", tarp);
	FILE *f = popen(cmd, "r");
	char listing[1024] = {0};
	if (f) {
		size_t k = fread(listing, 1, sizeof(listing) - 1, f);
		listing[k] = '\0';
		pclose(f);
	}
	CHECK(strstr(listing, "data/blob.bin") && strstr(listing, "notes/link") && strstr(listing, "empty/deeper"));
	free(cmd);
	free(tarp);
	free(id);
	free(ln);
	free(empty);
	free(dest);
	free(src);
	s->ops->free(s);
}

static int open_fds(void)
{
	int n = 0;
	DIR *d = opendir("/proc/self/fd");
	while (d && readdir(d))
		n++;
	if (d)
		closedir(d);
	return n;
}

TEST(unchanged_files_are_not_uploaded_again)
{
	if (!need_server())
		return;
	struct rk_workspace_store *s = open_store("dedupe");
	REQUIRE(s);
	char *src = tmp_dir("dedupe-src");
	for (int i = 0; i < 40; i++) {
		char name[32], text[64];
		snprintf(name, sizeof(name), "d%d/f%d", i % 4, i);
		snprintf(text, sizeof(text), "file %d content", i);
		put(src, name, text);
	}
	struct rk_workspace_s3_stats s0, s1, s2, s3;
	REQUIRE(checkpoint(s, "dedupe", src, 5, NULL) == 0);
	rk_workspace_s3_stats(s, &s0);
	CHECK_EQ_INT(s0.object_puts, 40);
	/* nothing changed: no object goes up, none is even asked about */
	REQUIRE(checkpoint(s, "dedupe", src, 5, NULL) == 0);
	rk_workspace_s3_stats(s, &s1);
	CHECK_EQ_INT(s1.object_puts - s0.object_puts, 0);
	CHECK_EQ_INT(s1.heads - s0.heads, 0);
	/* one file changed: one object */
	put(src, "d1/f5", "changed");
	REQUIRE(checkpoint(s, "dedupe", src, 5, NULL) == 0);
	rk_workspace_s3_stats(s, &s2);
	CHECK_EQ_INT(s2.object_puts - s1.object_puts, 1);
	/* the upload threads leave no connection behind when they end */
	int fds = open_fds();
	for (int i = 0; i < 4; i++) {
		char text[32];
		snprintf(text, sizeof(text), "round %d", i);
		put(src, "d2/f6", text);
		REQUIRE(checkpoint(s, "dedupe", src, 5, NULL) == 0);
	}
	CHECK_EQ_INT(open_fds(), fds);
	/* a new home with the same files in the same bucket uploads nothing,
	 * and a fresh process (no local state) neither */
	struct rk_workspace_store *s2nd = open_store("dedupe");
	REQUIRE(s2nd);
	char *copy = tmp_dir("dedupe-copy");
	char *cmd = rk_xasprintf("cp -a '%s/.' '%s/'", src, copy);
	CHECK_EQ_INT(system(cmd), 0);
	free(cmd);
	REQUIRE(checkpoint(s2nd, "dedupe-other", copy, 5, NULL) == 0);
	rk_workspace_s3_stats(s2nd, &s3);
	CHECK_EQ_INT(s3.object_puts, 0);
	CHECK_EQ_INT(s3.other_puts, 2); /* its manifest and its latest */
	s2nd->ops->free(s2nd);
	free(copy);
	free(src);
	s->ops->free(s);
}

TEST(multipart_upload_for_a_big_file)
{
	if (!need_server())
		return;
	struct rk_workspace_store *s = open_store("big");
	REQUIRE(s);
	char *src = tmp_dir("big-src");
	size_t len = (20u << 20) + 12345;
	unsigned char *big = rk_xmalloc(len);
	rk_random_bytes(big, len);
	put_bytes(src, "big.bin", big, len, 0644);
	put(src, "small", "s");
	REQUIRE(checkpoint(s, "big", src, 2, NULL) == 0);
	struct rk_workspace_s3_stats st;
	rk_workspace_s3_stats(s, &st);
	CHECK_EQ_INT(st.multipart_uploads, 1);
	CHECK_EQ_INT(st.parts, 3); /* 8 + 8 + 4 MiB */
	CHECK_EQ_INT(st.object_puts, 1);
	struct rk_workspace_verify v;
	struct rk_error e;
	CHECK_EQ_INT(s->ops->verify(s, "big", NULL, 1, &v, &e), 0);
	CHECK(v.ok);
	CHECK_EQ_INT(v.bytes, (int64_t)len + 1);
	char *dest = rk_xasprintf("%s/big-dest", data_dir);
	REQUIRE(s->ops->restore(s, "big", NULL, dest, NULL, &e) == 0);
	size_t n = 0;
	char *t = get(dest, "big.bin", &n);
	CHECK(t && n == len && !memcmp(t, big, len));
	free(t);
	/* unchanged: not uploaded again */
	REQUIRE(checkpoint(s, "big", src, 2, NULL) == 0);
	struct rk_workspace_s3_stats st2;
	rk_workspace_s3_stats(s, &st2);
	CHECK_EQ_INT(st2.parts - st.parts, 0);
	free(dest);
	free(big);
	free(src);
	s->ops->free(s);
}

TEST(list_show_and_prune)
{
	if (!need_server())
		return;
	struct rk_workspace_store *s = open_store("prune");
	REQUIRE(s);
	char *src = tmp_dir("prune-src");
	put(src, "same", "unchanging");
	char *ids[4] = {0};
	for (int i = 0; i < 4; i++) {
		char text[32];
		snprintf(text, sizeof(text), "version %d", i);
		put(src, "v", text);
		REQUIRE(checkpoint(s, "prune", src, 2, &ids[i]) == 0);
		rk_sleep_ms(3); /* distinct created_at for the order */
	}
	struct rk_workspace_checkpoint *revs = NULL;
	size_t n = 0;
	struct rk_error e;
	REQUIRE(s->ops->list(s, "prune", &revs, &n, &e) == 0);
	CHECK_EQ_INT(n, 2);
	if (n == 2) {
		CHECK_EQ_STR(revs[0].id, ids[3]);
		CHECK_EQ_STR(revs[1].id, ids[2]);
		CHECK_EQ_INT(revs[0].files, 2);
		CHECK(revs[0].checksum && strlen(revs[0].checksum) == 64);
		CHECK_EQ_STR(revs[0].reason, "test");
	}
	rk_workspace_checkpoints_free(revs, n);
	struct rk_workspace_checkpoint r = {0};
	CHECK_EQ_INT(s->ops->show(s, "prune", ids[2], &r, &e), 0);
	CHECK_EQ_STR(r.id, ids[2]);
	rk_workspace_checkpoint_release(&r);
	CHECK_EQ_INT(s->ops->show(s, "prune", ids[0], &r, &e), -RK_ENOTFOUND);
	CHECK_EQ_INT(s->ops->show(s, "prune", "rev-nonsense", &r, &e), -RK_ENOTFOUND);
	/* objects only the pruned revisions named are gone, the rest stay */
	char *h0 = hash_of("version 0"), *h3 = hash_of("version 3"), *hs = hash_of("unchanging");
	char *k0 = rk_xasprintf("prune/objects/%s", h0), *k3 = rk_xasprintf("prune/objects/%s", h3),
	     *ks = rk_xasprintf("prune/objects/%s", hs);
	CHECK_EQ_INT(raw("HEAD", k0, NULL), 404);
	CHECK_EQ_INT(raw("HEAD", k3, NULL), 200);
	CHECK_EQ_INT(raw("HEAD", ks, NULL), 200);
	/* and gc has nothing left to remove but a crashed restore's downloads */
	char *stale = rk_xasprintf("%s/tmp/s3-fetch-prune-AbC123", data_dir);
	rk_fs_mkdirs(stale, 0700, NULL);
	put(stale, "x", "y");
	struct rk_workspace_gc_stats gs;
	CHECK_EQ_INT(s->ops->gc(s, &gs, &e), 0);
	CHECK_EQ_INT(gs.objects_removed, 0);
	CHECK(!rk_fs_exists(stale));
	CHECK_EQ_INT(gs.staging_removed, 1);
	free(stale);
	CHECK_EQ_INT(gs.objects_kept, 3); /* unchanging, version 2, version 3 */
	/* an older revision restores */
	char *dest = rk_xasprintf("%s/prune-dest", data_dir);
	CHECK_EQ_INT(s->ops->restore(s, "prune", ids[2], dest, NULL, &e), 0);
	char *t = get(dest, "v", NULL);
	CHECK_EQ_STR(t, "version 2");
	free(t);
	free(dest);
	free(h0), free(h3), free(hs), free(k0), free(k3), free(ks);
	for (int i = 0; i < 4; i++)
		free(ids[i]);
	free(src);
	s->ops->free(s);
}

TEST(verify_finds_deleted_and_corrupt_objects)
{
	if (!need_server())
		return;
	struct rk_workspace_store *s = open_store("verify");
	REQUIRE(s);
	char *src = tmp_dir("verify-src");
	put(src, "a", "content of a");
	put(src, "b", "content of b");
	REQUIRE(checkpoint(s, "verify", src, 2, NULL) == 0);
	struct rk_workspace_verify v;
	struct rk_error e;
	CHECK_EQ_INT(s->ops->verify(s, "verify", NULL, 0, &v, &e), 0);
	CHECK(v.ok);
	CHECK_EQ_INT(s->ops->verify(s, "verify", NULL, 1, &v, &e), 0);
	CHECK(v.ok);
	CHECK_EQ_INT(v.files, 2);
	/* same size, other bytes: only the deep check sees it */
	char *ha = hash_of("content of a"), *hb = hash_of("content of b");
	char *ka = rk_xasprintf("verify/objects/%s", ha), *kb = rk_xasprintf("verify/objects/%s", hb);
	CHECK_EQ_INT(raw("PUT", ka, "CONTENT OF A"), 200);
	CHECK_EQ_INT(s->ops->verify(s, "verify", NULL, 0, &v, &e), 0);
	CHECK(v.ok);
	CHECK_EQ_INT(s->ops->verify(s, "verify", NULL, 1, &v, &e), 0);
	CHECK(!v.ok);
	CHECK_EQ_INT(v.corrupt, 1);
	CHECK(strstr(v.problem, "a: object") != NULL);
	/* and a restore refuses the damaged object, leaving dest as it was */
	char *dest = tmp_dir("verify-dest");
	put(dest, "keep", "me");
	CHECK_EQ_INT(s->ops->restore(s, "verify", NULL, dest, NULL, &e), -RK_ECORRUPT);
	char *t = get(dest, "keep", NULL);
	CHECK_EQ_STR(t, "me");
	free(t);
	/* a deleted object: the shallow check sees it */
	CHECK_EQ_INT(raw("DELETE", kb, NULL), 204);
	CHECK_EQ_INT(s->ops->verify(s, "verify", NULL, 0, &v, &e), 0);
	CHECK(!v.ok);
	CHECK_EQ_INT(v.missing, 1);
	CHECK_EQ_INT(s->ops->verify(s, "verify", NULL, 1, &v, &e), 0);
	CHECK_EQ_INT(v.missing, 1);
	CHECK_EQ_INT(v.corrupt, 1);
	/* a damaged manifest */
	struct rk_workspace_checkpoint latest = {0};
	REQUIRE(s->ops->latest(s, "verify", &latest, &e) == 0);
	char *km = rk_xasprintf("verify/homes/verify/revs/%s", latest.id);
	char *body = rk_xasprintf("{\"id\":\"%s\",\"kind\":\"snapshot\",\"checksum\":\"%064d\"}\nf\t644\n", latest.id, 0);
	CHECK_EQ_INT(raw("PUT", km, body), 200);
	CHECK_EQ_INT(s->ops->verify(s, "verify", NULL, 0, &v, &e), 0);
	CHECK(!v.ok);
	CHECK(strstr(v.problem, "checksum") != NULL);
	rk_workspace_checkpoint_release(&latest);
	free(body);
	free(km);
	free(dest);
	free(ha), free(hb), free(ka), free(kb);
	free(src);
	s->ops->free(s);
}

/* In a child: change the tree and checkpoint, forever (until killed). Tells
 * the parent on fd when the first checkpoint is in. */
static void churn(const char *src, int seed, int fd)
{
	struct rk_workspace_store *s = open_store("crash");
	if (!s)
		_exit(1);
	for (int round = 0;; round++) {
		for (int i = 0; i < 30; i++) {
			char name[32], text[96];
			snprintf(name, sizeof(name), "d%d/f%d", i % 3, i);
			snprintf(text, sizeof(text), "seed %d round %d file %d", seed, round, i);
			put(src, name, text);
		}
		char gen[32];
		snprintf(gen, sizeof(gen), "%d %d", seed, round);
		put(src, "gen", gen);
		checkpoint(s, "crash", src, 3, NULL);
		if (round == 0 && fd >= 0) {
			if (write(fd, "x", 1) != 1)
				_exit(1);
			close(fd);
			fd = -1;
		}
	}
}

TEST(kill9_mid_checkpoint_keeps_the_previous_latest)
{
	if (!need_server())
		return;
	struct rk_workspace_store *s = open_store("crash");
	REQUIRE(s);
	char *src = tmp_dir("crash-src");
	put(src, "gen", "base");
	REQUIRE(checkpoint(s, "crash", src, 3, NULL) == 0);
	srand(4321);
	int rounds = 0, advanced = 0;
	char *last = NULL;
	for (int i = 0; i < 24; i++) {
		int pfd[2];
		REQUIRE(pipe(pfd) == 0);
		pid_t pid = fork();
		if (pid == 0) {
			close(pfd[0]);
			churn(src, i + 1, pfd[1]);
			_exit(0);
		}
		close(pfd[1]);
		char c;
		ssize_t got = read(pfd[0], &c, 1); /* the first checkpoint is in */
		close(pfd[0]);
		rk_sleep_ms(rand() % 120); /* then somewhere in the next ones */
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		REQUIRE(got == 1);
		rounds++;
		/* the latest is whole: every object there, the manifest intact */
		struct rk_workspace_verify v;
		struct rk_error e;
		if (s->ops->verify(s, "crash", NULL, i % 4 == 0, &v, &e) != 0 || !v.ok) {
			printf("  after kill %d: %s\n", rounds, v.problem[0] ? v.problem : e.message);
			CHECK(0);
			break;
		}
		struct rk_workspace_checkpoint r = {0};
		if (s->ops->latest(s, "crash", &r, &e) == 0) {
			if (!last || strcmp(last, r.id))
				advanced++;
			free(last);
			last = rk_xstrdup(r.id);
		}
		rk_workspace_checkpoint_release(&r);
	}
	CHECK(rounds >= 20);
	CHECK(advanced >= 20); /* each child got at least one checkpoint in */
	/* the latest restores, and its "gen" names one consistent round */
	char *dest = rk_xasprintf("%s/crash-dest", data_dir);
	struct rk_error e;
	CHECK_EQ_INT(s->ops->restore(s, "crash", NULL, dest, NULL, &e), 0);
	char *gen = get(dest, "gen", NULL);
	CHECK(gen != NULL);
	int seed = 0, round = 0;
	if (gen && sscanf(gen, "%d %d", &seed, &round) == 2) {
		char want[96];
		snprintf(want, sizeof(want), "seed %d round %d file %d", seed, round, 29);
		char *f = get(dest, "d2/f29", NULL);
		CHECK_EQ_STR(f, want);
		free(f);
	}
	free(gen);
	/* what the kills left over is garbage gc removes, and the latest survives it */
	struct rk_workspace_gc_stats gs;
	CHECK_EQ_INT(s->ops->gc(s, &gs, &e), 0);
	CHECK(gs.objects_removed > 0); /* kills did land between object uploads and `latest` */
	struct rk_workspace_verify v;
	CHECK_EQ_INT(s->ops->verify(s, "crash", NULL, 1, &v, &e), 0);
	CHECK(v.ok);
	free(last);
	free(dest);
	free(src);
	s->ops->free(s);
}

/* The server's files for key (a path in the bucket): 1 once one of them
 * (the object or a temporary beside it) holds exactly size bytes. */
static int server_holds(const char *key, off_t size)
{
	char *path = rk_xasprintf("%s/data/rakazo-test/%s._S3rver_object", server_dir, key);
	char *slash = strrchr(path, '/');
	*slash = '\0';
	const char *name = slash + 1;
	int found = 0;
	DIR *d = opendir(path);
	struct dirent *de;
	while (d && !found && (de = readdir(d))) {
		struct stat st;
		if (strncmp(de->d_name, name, strlen(name)) || fstatat(dirfd(d), de->d_name, &st, 0) != 0)
			continue;
		found = st.st_size == size;
	}
	if (d)
		closedir(d);
	free(path);
	return found;
}

/* An unsigned PUT of key on a connection of its own, with only the first
 * part bytes of body sent: the socket, or -1. */
static int put_begin(const char *key, const char *body, size_t part)
{
	int port = 0;
	if (sscanf(endpoint, "http://127.0.0.1:%d", &port) != 1)
		return -1;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	char *head = rk_xasprintf("PUT /rakazo-test/%s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
				  "Content-Type: application/octet-stream\r\nContent-Length: %zu\r\n\r\n",
				  key, port, strlen(body));
	int ok = rk_fs_write_fd(fd, head, strlen(head)) == 0 && rk_fs_write_fd(fd, body, part) == 0;
	free(head);
	if (!ok) {
		close(fd);
		return -1;
	}
	return fd;
}

static char *latest_id(struct rk_workspace_store *s, const char *key)
{
	struct rk_workspace_checkpoint r = {0};
	struct rk_error e;
	char *id = NULL;
	if (s->ops->latest(s, key, &r, &e) == 0)
		id = rk_xstrdup(r.id);
	else
		printf("  latest of %s: %s\n", key, e.message);
	rk_workspace_checkpoint_release(&r);
	return id;
}

/* Two checkpoints of home "w" under prefix: *a the older, *b the latest. */
static struct rk_workspace_store *two_checkpoints(const char *prefix, char **a, char **b)
{
	struct rk_workspace_store *s = open_store(prefix);
	char *name = rk_xasprintf("%s-src", prefix);
	char *src = tmp_dir(name);
	*a = *b = NULL;
	put(src, "f", "one");
	if (s && checkpoint(s, "w", src, 3, a) == 0) {
		put(src, "f", "two");
		checkpoint(s, "w", src, 3, b);
	}
	free(src);
	free(name);
	return s;
}

/* The kill test above leans on S3 replacing an object whole: a GET during
 * a PUT of `latest` reads the previous one, and a PUT whose client is
 * killed mid-body leaves it be. s3rver wrote into the object's own file as
 * the body came (a GET read it empty or cut short: "the latest marker is
 * damaged", about one run of the kill test in four under load), so
 * tests/s3/s3rver.js gives it S3's behaviour; these two hold it to it. */
TEST(a_put_of_latest_in_flight_leaves_readers_the_previous)
{
	if (!need_server())
		return;
	char *a, *b;
	struct rk_workspace_store *s = two_checkpoints("inflight", &a, &b);
	REQUIRE(s && a && b);
	const char *key = "inflight/homes/w/latest";
	char *line = rk_xasprintf("%s\n", a);
	size_t part = 9;
	/* the server has part of the new body: a reader sees b */
	int fd = put_begin(key, line, part);
	REQUIRE(fd >= 0);
	for (int i = 0; i < 500 && !server_holds(key, (off_t)part); i++)
		rk_sleep_ms(10);
	CHECK(server_holds(key, (off_t)part));
	char *id = latest_id(s, "w");
	CHECK_EQ_STR(id, b);
	free(id);
	/* the rest comes: the PUT is answered and a reader sees a */
	CHECK_EQ_INT(rk_fs_write_fd(fd, line + part, strlen(line) - part), 0);
	char reply[64] = {0};
	CHECK(read(fd, reply, sizeof(reply) - 1) > 0 && !strncmp(reply, "HTTP/1.1 200", 12));
	close(fd);
	id = latest_id(s, "w");
	CHECK_EQ_STR(id, a);
	free(id);
	free(line);
	free(a);
	free(b);
	s->ops->free(s);
}

TEST(a_put_of_latest_cut_short_keeps_the_previous)
{
	if (!need_server())
		return;
	char *a, *b;
	struct rk_workspace_store *s = two_checkpoints("cut", &a, &b);
	REQUIRE(s && a && b);
	const char *key = "cut/homes/w/latest";
	char *line = rk_xasprintf("%s\n", a);
	size_t part = 9;
	/* the writer is killed mid-body: b stays, whole */
	int fd = put_begin(key, line, part);
	REQUIRE(fd >= 0);
	for (int i = 0; i < 500 && !server_holds(key, (off_t)part); i++)
		rk_sleep_ms(10);
	CHECK(server_holds(key, (off_t)part));
	close(fd);
	for (int i = 0; i < 500 && server_holds(key, (off_t)part); i++)
		rk_sleep_ms(10); /* until the server dropped the cut body */
	char *id = latest_id(s, "w");
	CHECK_EQ_STR(id, b);
	free(id);
	struct rk_workspace_verify v;
	struct rk_error e;
	CHECK_EQ_INT(s->ops->verify(s, "w", NULL, 1, &v, &e), 0);
	CHECK(v.ok);
	free(line);
	free(a);
	free(b);
	s->ops->free(s);
}

TEST(forget_drops_revisions_and_objects)
{
	if (!need_server())
		return;
	struct rk_workspace_store *s = open_store("forget");
	REQUIRE(s);
	char *src = tmp_dir("forget-src");
	put(src, "mine", "only in the forgotten home");
	REQUIRE(checkpoint(s, "gone", src, 3, NULL) == 0);
	put(src, "mine2", "second");
	REQUIRE(checkpoint(s, "gone", src, 3, NULL) == 0);
	/* another home shares one file */
	char *src2 = tmp_dir("forget-src2");
	put(src2, "shared", "second");
	REQUIRE(checkpoint(s, "stays", src2, 3, NULL) == 0);
	struct rk_error e;
	CHECK_EQ_INT(s->ops->forget(s, "gone", &e), 0);
	struct rk_workspace_checkpoint r = {0};
	CHECK_EQ_INT(s->ops->latest(s, "gone", &r, &e), -RK_ENOTFOUND);
	struct rk_workspace_checkpoint *revs = NULL;
	size_t n = 9;
	CHECK_EQ_INT(s->ops->list(s, "gone", &revs, &n, &e), 0);
	CHECK_EQ_INT(n, 0);
	rk_workspace_checkpoints_free(revs, n);
	char *h1 = hash_of("only in the forgotten home"), *h2 = hash_of("second");
	char *k1 = rk_xasprintf("forget/objects/%s", h1), *k2 = rk_xasprintf("forget/objects/%s", h2);
	CHECK_EQ_INT(raw("HEAD", k1, NULL), 404);
	CHECK_EQ_INT(raw("HEAD", k2, NULL), 200);
	struct rk_workspace_verify v;
	CHECK_EQ_INT(s->ops->verify(s, "stays", NULL, 1, &v, &e), 0);
	CHECK(v.ok);
	/* forgetting what was never there is fine */
	CHECK_EQ_INT(s->ops->forget(s, "never", &e), 0);
	free(h1), free(h2), free(k1), free(k2);
	free(src2);
	free(src);
	s->ops->free(s);
}

TEST(bad_settings_give_clear_errors)
{
	struct rk_error e;
	const char *dd = data_dir ? data_dir : "/tmp";
	CHECK(rk_workspace_store_s3_new("http://bucket/x", dd, &e) == NULL);
	CHECK_EQ_INT(e.code, RK_EINVALID);
	CHECK(strstr(e.message, "s3://") != NULL);
	CHECK(rk_workspace_store_s3_new("s3://", dd, &e) == NULL);
	CHECK(strstr(e.message, "bucket name") != NULL);
	CHECK(rk_workspace_store_s3_new("s3://Bad_Bucket/p", dd, &e) == NULL);
	CHECK_EQ_INT(e.code, RK_EINVALID);
	CHECK(rk_workspace_store_s3_new("s3://bucket/a/../b", dd, &e) == NULL);
	CHECK(strstr(e.message, "'..'") != NULL);
	CHECK(rk_workspace_store_s3_new("s3://bucket/a//b", dd, &e) == NULL);
	struct rk_workspace_store *ok = rk_workspace_store_s3_new("s3://bucket/a/b.c/", dd, &e);
	CHECK(ok != NULL);
	if (ok)
		ok->ops->free(ok);
	char *id = rk_xstrdup(getenv("AWS_ACCESS_KEY_ID"));
	unsetenv("AWS_ACCESS_KEY_ID");
	CHECK(rk_workspace_store_s3_new("s3://rakazo-test/p", dd, &e) == NULL);
	CHECK(strstr(e.message, "AWS_ACCESS_KEY_ID") != NULL);
	if (id)
		setenv("AWS_ACCESS_KEY_ID", id, 1);
	free(id);
	char *ep = rk_xstrdup(getenv("RAKAZO_S3_ENDPOINT"));
	setenv("RAKAZO_S3_ENDPOINT", "ftp://127.0.0.1:1", 1);
	CHECK(rk_workspace_store_s3_new("s3://rakazo-test/p", dd, &e) == NULL);
	CHECK(strstr(e.message, "RAKAZO_S3_ENDPOINT") != NULL);
	/* the failed store hands its reason to every operation */
	struct rk_workspace_store *f = rk_workspace_store_failed_new(&e);
	struct rk_workspace_checkpoint r = {0};
	struct rk_error e2;
	CHECK_EQ_INT(f->ops->latest(f, "k", &r, &e2), -RK_EINVALID);
	CHECK(strstr(e2.message, "RAKAZO_S3_ENDPOINT") != NULL);
	f->ops->free(f);
	if (!need_server()) {
		free(ep);
		return;
	}
	char *src = tmp_dir("bad-src");
	put(src, "x", "y");
	/* nothing listens there: unavailable, and the message names the endpoint */
	setenv("RAKAZO_S3_ENDPOINT", "http://127.0.0.1:9", 1);
	struct rk_workspace_store *s = open_store("bad");
	REQUIRE(s);
	struct rk_workspace_checkpoint_req req = {.src_dir = src, .reason = "t", .kind = RK_WORKSPACE_SNAPSHOT, .keep = 1};
	CHECK_EQ_INT(s->ops->checkpoint(s, "k", &req, &r, &e), -RK_EUNAVAILABLE);
	CHECK(strstr(e.message, "127.0.0.1:9") != NULL);
	s->ops->free(s);
	setenv("RAKAZO_S3_ENDPOINT", ep, 1);
	/* a wrong access key: denied, with S3's code and never the secret */
	setenv("AWS_ACCESS_KEY_ID", "NOT-A-KEY", 1);
	setenv("AWS_SECRET_ACCESS_KEY", "TOPSECRET-do-not-print", 1);
	s = open_store("bad");
	REQUIRE(s);
	CHECK_EQ_INT(s->ops->checkpoint(s, "k", &req, &r, &e), -RK_EDENIED);
	CHECK(strstr(e.message, "InvalidAccessKeyId") != NULL);
	CHECK(strstr(e.message, "TOPSECRET") == NULL);
	s->ops->free(s);
	setenv("AWS_ACCESS_KEY_ID", "S3RVER", 1);
	setenv("AWS_SECRET_ACCESS_KEY", "S3RVER", 1);
	/* a bucket that is not there */
	char *url = rk_xstrdup("s3://no-such-bucket/p");
	s = rk_workspace_store_s3_new(url, dd, &e);
	REQUIRE(s);
	CHECK_EQ_INT(s->ops->checkpoint(s, "k", &req, &r, &e), -RK_ENOTFOUND);
	CHECK(strstr(e.message, "NoSuchBucket") != NULL);
	s->ops->free(s);
	/* a key that is not one path segment */
	s = open_store("bad");
	CHECK_EQ_INT(s->ops->checkpoint(s, "../x", &req, &r, &e), -RK_EINVALID);
	s->ops->free(s);
	free(url);
	free(ep);
	free(src);
}

int main(void)
{
	int required = getenv("RAKAZO_REQUIRE_DOCKER") && *getenv("RAKAZO_REQUIRE_DOCKER");
	if (start_server() != 0 && required) {
		printf("FAIL s3rver is required (RAKAZO_REQUIRE_DOCKER) but: %s\n", no_server);
		printf("unit: 0 passed, 1 failed\n");
		rk_fs_remove_tree(server_dir, NULL);
		rk_fs_remove_tree(data_dir, NULL);
		return 1;
	}
	RUN(round_trip_modes_links_binary_empty_dirs);
	RUN(unchanged_files_are_not_uploaded_again);
	RUN(multipart_upload_for_a_big_file);
	RUN(list_show_and_prune);
	RUN(verify_finds_deleted_and_corrupt_objects);
	RUN(kill9_mid_checkpoint_keeps_the_previous_latest);
	RUN(a_put_of_latest_in_flight_leaves_readers_the_previous);
	RUN(a_put_of_latest_cut_short_keeps_the_previous);
	RUN(forget_drops_revisions_and_objects);
	RUN(bad_settings_give_clear_errors);
	if (server_pid > 0)
		kill(server_pid, SIGTERM);
	if (server_dir)
		rk_fs_remove_tree(server_dir, NULL);
	if (data_dir)
		rk_fs_remove_tree(data_dir, NULL);
	return check_summary("home_s3");
}
