/* Trust (issue 11): secrets, memory, approval rules and authorization,
 * against a real SQLite state and, for secret_request, the loopback
 * tests/fixtures/echo_server. */

#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "engine/agent/hooks.h"
#include "engine/access/approval.h"
#include "engine/access/authz.h"
#include "engine/state/db_runs.h"
#include "engine/state/engine.h"
#include "engine/agent/memory.h"
#include "engine/agent/model.h"
#include "engine/agent/run.h"
#include "engine/access/secret.h"
#include "engine/agent/tools.h"
#include "engine/util/buf.h"
#include "engine/util/fs.h"
#include "engine/util/json.h"
#include "engine/util/time.h"
#include "check.h"
#include "fresh_db.h"

static struct rk_engine *eng;

static void fresh_engine(void)
{
	if (eng)
		rk_engine_free(eng);
	eng = NULL;
	char tmpl[] = "/tmp/rakazo-trust-XXXXXX";
	char *d = mkdtemp(tmpl);
	setenv("RAKAZO_DATA_DIR", d, 1);
	fresh_database();
	struct rk_error e;
	if (rk_engine_open(&eng, &e) != 0) {
		printf("cannot open the engine: %s\n", e.message);
		exit(1);
	}
}

static void actor(struct rk_actor *a, const char *user, const char *space, const char *bot)
{
	struct rk_error e;
	setenv("RAKAZO_USER", user, 1);
	if (rk_actor_resolve(a, eng, space, bot, &e) != 0) {
		printf("actor: %s\n", e.message);
		exit(1);
	}
}

/* --- secrets ------------------------------------------------------------------------- */

TEST(origin_checks)
{
	const struct {
		const char *url, *origin;
		int ok;
	} cases[] = {
		{"https://API.example.com", "https://api.example.com:443", 1},
		{"https://api.example.com:443/", "https://api.example.com:443", 1},
		{"http://127.0.0.1:8080/v1?x=1", "http://127.0.0.1:8080", 1},
		{"http://[::1]:9/", "http://[::1]:9", 1},
		{"https://api.example.com/find?email=a@b.example", "https://api.example.com:443", 1},
		{"https://api.example.com@evil.example/", NULL, 0},
		{"https://evil.example\\@api.example.com/", NULL, 0},
		{"https://user@api.example.com/", NULL, 0},
		{"https://user:pw@api.example.com/", NULL, 0},
		{"https://api.example.com/#frag", NULL, 0},
		{"https://api.example.com#", NULL, 0},
		{"ftp://api.example.com/", NULL, 0},
		{"file:///etc/passwd", NULL, 0},
		{"not a url", NULL, 0},
		{"", NULL, 0},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *o = NULL;
		struct rk_error e = {0};
		int r = rk_secret_origin(cases[i].url, 0, &o, &e);
		CHECK_EQ_INT(r == 0, cases[i].ok);
		if (cases[i].ok)
			CHECK_EQ_STR(o, cases[i].origin);
		free(o);
	}
	/* a stored origin is only an origin */
	char *o = NULL;
	struct rk_error e;
	CHECK(rk_secret_origin("https://api.example.com/v1", 1, &o, &e) == -RK_EINVALID);
	CHECK(rk_secret_origin("https://api.example.com/?q=1", 1, &o, &e) == -RK_EINVALID);
	CHECK(rk_secret_origin("https://u@api.example.com", 1, &o, &e) == -RK_EDENIED);
}

TEST(auth_specs)
{
	const char *good[] = {"bearer", "basic", "header:X-Api-Key", "query:api_key"};
	const char *bad[] = {"", "Bearer", "header:", "header:a b", "query:", "header:Host", "token", "header:X\r\n"};
	for (size_t i = 0; i < 4; i++) {
		char *k, *p;
		struct rk_error e;
		CHECK_EQ_INT(rk_secret_auth_parse(good[i], &k, &p, &e), 0);
		free(k);
		free(p);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *k, *p;
		struct rk_error e;
		CHECK_EQ_INT(rk_secret_auth_parse(bad[i], &k, &p, &e), -RK_EINVALID);
	}
}

TEST(redaction_forms)
{
	const char *secret = "s3cr3t/t0ken+with spaces&=";
	struct rk_buf b = RK_BUF_INIT;
	rk_buf_init(&b);
	/* raw, base64 (padded and not), base64url, hex both cases, percent both cases, form */
	rk_buf_printf(&b,
		      "raw=%s|b64=czNjcjN0L3Qwa2VuK3dpdGggc3BhY2VzJj0=|b64np=czNjcjN0L3Qwa2VuK3dpdGggc3BhY2VzJj0|"
		      "b64url=czNjcjN0L3Qwa2VuK3dpdGggc3BhY2VzJj0|hex=7333637233742f74306b656e2b776974682073706163657326"
		      "3d|HEX=7333637233742F74306B656E2B7769746820737061636573263D|pct=s3cr3t%%2Ft0ken%%2Bwith%%20spaces"
		      "%%26%%3D|pctl=s3cr3t%%2ft0ken%%2bwith%%20spaces%%26%%3d|form=s3cr3t%%2Ft0ken%%2Bwith+spaces%%26%%3D|end",
		      secret);
	rk_secret_redact(&b, secret, strlen(secret));
	CHECK(strstr(b.data, "s3cr3t") == NULL);
	CHECK(strstr(b.data, "czNjcjN0") == NULL);
	CHECK(strstr(b.data, "7333637233") == NULL);
	CHECK(strstr(b.data, "t0ken") == NULL);
	CHECK(strstr(b.data, "raw=[redacted]|") != NULL);
	CHECK(strstr(b.data, "HEX=[redacted]|") != NULL);
	CHECK(strstr(b.data, "form=[redacted]|end") != NULL);
	/* basic: the password alone too */
	rk_buf_reset(&b);
	rk_buf_adds(&b, "user alice, password hunter22, pair alice:hunter22");
	rk_secret_redact(&b, "alice:hunter22", 14);
	CHECK(strstr(b.data, "hunter22") == NULL);
	rk_buf_release(&b);
}

/* Issue 20: every form of a secret, one row each; the form stands between
 * '<' and '>', and all of it must become [redacted]. */
static const char form_secret[] = "pa\"ss/w\xc3\xb6rd+ 42&x?>";
static const struct {
	const char *name, *text;
} form_cases[] = {
		{"plain", "<pa\"ss/w\xc3""\xb6""rd+ 42&x?>>"},
		{"json (as cJSON prints it)", "<pa\\\"ss/w\xc3""\xb6""rd+ 42&x?>>"},
		{"json, slash escaped", "<pa\\\"ss\\/w\xc3""\xb6""rd+ 42&x?>>"},
		{"json, every char as \\uXXXX", "<\\u0070\\u0061\\u0022\\u0073\\u0073\\u002f\\u0077\\u00f6\\u0072\\u0064\\u002b\\u0020\\u0034\\u0032\\u0026\\u0078\\u003f\\u003e>"},
		{"json, some as \\u00XX", "<p\\u0061\\\"ss\\/w\\u00F6rd+\\u002042&x?\\u003e>"},
		{"url, upper", "<pa%22ss%2Fw%C3%B6rd%2B%2042%26x%3F%3E>"},
		{"url, lower", "<pa%22ss%2fw%c3%b6rd%2b%2042%26x%3f%3e>"},
		{"url, form", "<pa%22ss%2Fw%C3%B6rd%2B+42%26x%3F%3E>"},
		{"url, every byte", "<%70%61%22%73%73%2F%77%C3%B6%72%64%2B%20%34%32%26%78%3F%3E>"},
		{"base64", "<cGEic3Mvd8O2cmQrIDQyJng/Pg==>"},
		{"base64, no padding", "<cGEic3Mvd8O2cmQrIDQyJng/Pg>"},
		{"base64url", "<cGEic3Mvd8O2cmQrIDQyJng_Pg==>"},
		{"base64url, no padding", "<cGEic3Mvd8O2cmQrIDQyJng_Pg>"},
		{"hex", "<70612273732f77c3b672642b20343226783f3e>"},
		{"hex, upper", "<70612273732F77C3B672642B20343226783F3E>"},
		{"hex, mixed case", "<70612273732F77c3b672642B20343226783F3E>"},
};
#define NFORM_CASES (sizeof(form_cases) / sizeof(form_cases[0]))
/* base64 of a longer text with the secret at each of the 3 offsets of a
 * group: the characters that come from the secret alone go */
static const char *const form_inside[] = {"cGEic3Mvd8O2cmQrIDQyJng/PnRhaWw=", "AXBhInNzL3fDtnJkKyA0MiZ4Pz50YWls",
					  "AQJwYSJzcy93w7ZyZCsgNDImeD8+dGFpbA=="};

TEST(redaction_every_form)
{
	const char *secret = form_secret;
	struct rk_buf b = RK_BUF_INIT;
	rk_buf_init(&b);
	for (size_t i = 0; i < NFORM_CASES; i++) {
		rk_buf_reset(&b);
		rk_buf_adds(&b, form_cases[i].text);
		rk_secret_redact(&b, secret, strlen(secret));
		if (strcmp(b.data, "<[redacted]>"))
			printf("  %s: \"%s\" gave \"%s\"\n", form_cases[i].name, form_cases[i].text, b.data);
		CHECK_EQ_STR(b.data, "<[redacted]>");
	}
	const char *core[] = {"d8O2cmQrIDQy", "L3fDtnJkKyA0", "cy93w7ZyZCsg"};
	for (size_t i = 0; i < 3; i++) {
		rk_buf_reset(&b);
		rk_buf_adds(&b, form_inside[i]);
		rk_secret_redact(&b, secret, strlen(secret));
		CHECK(strstr(b.data, core[i]) == NULL);
		CHECK(strstr(b.data, "[redacted]") != NULL);
	}
	/* a text with no form of it is left alone */
	rk_buf_reset(&b);
	rk_buf_adds(&b, "pa\\\"ss %2F w\\u00f6rd pa%22ss+ 7061227373 cGEic3");
	rk_secret_redact(&b, secret, strlen(secret));
	CHECK_EQ_STR(b.data, "pa\\\"ss %2F w\\u00f6rd pa%22ss+ 7061227373 cGEic3");
	rk_buf_release(&b);
}

/* text[0..n) as a stream hands it on in two pieces, cut at k: the first
 * keeps back what rk_secret_redactor_hold says, the second (the end) all;
 * each piece redacted on its own. */
static char *stream_in_two(const struct rk_secret_redactor *r, const char *text, size_t n, size_t k)
{
	struct rk_buf out = RK_BUF_INIT, piece = RK_BUF_INIT;
	rk_buf_init(&out);
	rk_buf_init(&piece);
	size_t hold = rk_secret_redactor_hold(r, text, k);
	CHECK(hold < rk_secret_redactor_span(r));
	rk_buf_add(&piece, text, k - hold);
	rk_secret_redactor_buf(r, &piece);
	rk_buf_add(&out, piece.data, piece.len);
	rk_buf_reset(&piece);
	rk_buf_add(&piece, text + k - hold, n - (k - hold));
	rk_secret_redactor_buf(r, &piece);
	rk_buf_add(&out, piece.data, piece.len);
	rk_buf_release(&piece);
	return rk_buf_detach(&out, NULL);
}

/* Issue 20 (the second pass): a value split between two pieces of a stream
 * (a command's output read twice) in any form, cut anywhere, comes out
 * redacted as if it had come whole; ordinary text is not kept back. */
TEST(redaction_stream)
{
	fresh_engine();
	struct rk_actor a;
	actor(&a, "alice", NULL, NULL);
	struct rk_error e;
	REQUIRE(rk_secret_set(eng, &a, "s", "https://a.example", "bearer", form_secret, strlen(form_secret), &e) == 0);
	struct rk_secret_redactor *r = rk_secret_redactor_new(eng, &a);
	CHECK_EQ_INT((int)rk_secret_redactor_span(r), (int)(6 * strlen(form_secret)));
	/* every form; and a whole value right before what begins another form
	 * (its hex, its base64), or itself again */
	const char *texts[NFORM_CASES + 6];
	for (size_t i = 0; i < NFORM_CASES; i++)
		texts[i] = form_cases[i].text;
	for (size_t i = 0; i < 3; i++)
		texts[NFORM_CASES + i] = form_inside[i];
	texts[NFORM_CASES + 3] = "pa\"ss/w\xc3\xb6rd+ 42&x?>7061227373";
	texts[NFORM_CASES + 4] = "pa\"ss/w\xc3\xb6rd+ 42&x?>cGEic3Mvd8O2";
	texts[NFORM_CASES + 5] = "pa\"ss/w\xc3\xb6rd+ 42&x?>pa\"ss/w\xc3\xb6rd+ 42&x?>!";
	int bad = 0;
	for (size_t i = 0; i < NFORM_CASES + 6; i++) {
		char *whole = rk_secret_redactor_text(r, texts[i]);
		size_t n = strlen(texts[i]);
		for (size_t k = 1; k < n; k++) {
			char *got = stream_in_two(r, texts[i], n, k);
			if (strcmp(got, whole) && bad++ < 5)
				printf("  \"%s\" cut at %zu gave \"%s\"\n", texts[i], k, got);
			CHECK_EQ_STR(got, whole);
			free(got);
		}
		free(whole);
	}
	const char *plain[] = {"total 12\n$ ", "Continue? [y/N] ", "done\n", "pb", "ok: 50"};
	for (size_t i = 0; i < sizeof(plain) / sizeof(plain[0]); i++)
		CHECK_EQ_INT((int)rk_secret_redactor_hold(r, plain[i], strlen(plain[i])), 0);
	CHECK_EQ_INT((int)rk_secret_redactor_hold(r, "out: pa", 7), 2);
	CHECK_EQ_INT((int)rk_secret_redactor_hold(r, "out: pa%2", 9), 4);
	CHECK_EQ_INT((int)rk_secret_redactor_hold(r, "out: pa\\u00", 11), 6);
	rk_secret_redactor_free(r);
	/* no values, nothing kept back */
	struct rk_actor bob;
	actor(&bob, "bob", NULL, NULL);
	r = rk_secret_redactor_new(eng, &bob);
	CHECK_EQ_INT((int)rk_secret_redactor_span(r), 0);
	CHECK_EQ_INT((int)rk_secret_redactor_hold(r, "out: pa", 7), 0);
	rk_secret_redactor_free(r);
	rk_actor_release(&bob);
	rk_actor_release(&a);
}

TEST(redaction_patterns)
{
	const struct {
		const char *in, *want;
	} cases[] = {
		{"curl -H 'Authorization: Bearer abc.def-123' https://x", "curl -H 'Authorization: Bearer [redacted]' https://x"},
		{"curl -H \"authorization: token ghx\" x", "curl -H \"authorization: token [redacted]\" x"},
		{"Authorization: abcdef", "Authorization: [redacted]"},
		{"echo bearer xyz789; ls", "echo bearer [redacted]; ls"},
		{"export OPENAI_API_KEY=sk-abc && run", "export OPENAI_API_KEY=[redacted] && run"},
		{"GITHUB_TOKEN=\"a b c\" gh pr list", "GITHUB_TOKEN=\"[redacted]\" gh pr list"},
		{"db_password='p@ss;word' ./app", "db_password='[redacted]' ./app"},
		{"mysql --password=hunter2 -u root", "mysql --password=[redacted] -u root"},
		{"tool --token abc123 --api-key=k9", "tool --token [redacted] --api-key=[redacted]"},
		{"git clone https://bob:s3cret@git.example.com/r.git", "git clone https://bob:[redacted]@git.example.com/r.git"},
		{"X-Api-Key: 0123456789", "X-Api-Key: [redacted]"},
		{"echo sk-proj-ABCDEFGHIJKLMNOPQRST done", "echo [redacted] done"},
		{"aws AKIAABCDEFGHIJKLMNOP x", "aws [redacted] x"},
		{"t=ghp_abcdefghijklmnopqrstuvwxyz012345", "t=[redacted]"},
		/* no credential: untouched */
		{"cd /tmp && PWD=x ls -la; echo $HOME; a==b", "cd /tmp && PWD=x ls -la; echo $HOME; a==b"},
		{"https://example.com/path?x=1 user@host", "https://example.com/path?x=1 user@host"},
		{"task-list --tokens", "task-list --tokens"},
		{"", ""},
	};
	struct rk_buf b = RK_BUF_INIT;
	rk_buf_init(&b);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		rk_buf_reset(&b);
		rk_buf_adds(&b, cases[i].in);
		rk_secret_redact_patterns(&b);
		const char *got = b.data ? b.data : "";
		if (strcmp(got, cases[i].want))
			printf("  case %zu: \"%s\" gave \"%s\"\n", i, cases[i].in, got);
		CHECK_EQ_STR(got, cases[i].want);
	}
	rk_buf_release(&b);
}

TEST(secret_store_binds_bot)
{
	fresh_engine();
	unsetenv("RAKAZO_MASTER_KEY");
	struct rk_actor a, b;
	actor(&a, "alice", NULL, "bot1");
	actor(&b, "alice", NULL, "bot2");
	struct rk_error e;
	const char *v = "tok-AAAA-1111";
	REQUIRE(rk_secret_set(eng, &a, "api", "https://api.example.com", "bearer", v, strlen(v), &e) == 0);
	REQUIRE(rk_secret_set(eng, &b, "api", "https://api.example.com", "bearer", "other-BBBB", 10, &e) == 0);
	/* the master key was made 0600 */
	char *kp = rk_path_join(eng->data_dir, "master.key");
	struct stat sb;
	CHECK(stat(kp, &sb) == 0 && (sb.st_mode & 0777) == 0600);
	char *out;
	size_t n;
	REQUIRE(rk_secret_reveal(eng, &a, "api", &out, &n, &e) == 0);
	CHECK(n == strlen(v) && !memcmp(out, v, n));
	rk_secret_value_free(out, n);
	/* nothing in the database holds the value (SQLite's file, read whole; on
	 * PostgreSQL the rows are the same bytes) */
	struct rk_buf db = RK_BUF_INIT;
	rk_buf_init(&db);
	char *dbp = rk_path_join(eng->data_dir, "rakazo.db");
	if (rk_db_dialect(eng->db) == RK_DIALECT_SQLITE) {
		rk_db_exec(eng->db, "PRAGMA wal_checkpoint(FULL)", NULL);
		CHECK(rk_fs_read_all(dbp, 64u << 20, &db, &e) == 0);
		CHECK(memmem(db.data, db.len, v, strlen(v)) == NULL);
	}
	rk_buf_release(&db);
	/* bot1's ciphertext moved to bot2's row fails to decrypt */
	CHECK(rk_db_exec(eng->db,
			 "UPDATE secrets SET nonce = (SELECT nonce FROM secrets WHERE bot_id = 'bot1'), "
			 "ciphertext = (SELECT ciphertext FROM secrets WHERE bot_id = 'bot1') WHERE bot_id = 'bot2'",
			 &e) == 0);
	CHECK_EQ_INT(rk_secret_reveal(eng, &b, "api", &out, &n, &e), -RK_ECORRUPT);
	CHECK(strstr(e.message, "does not decrypt") != NULL);
	/* and a row renamed fails too */
	CHECK(rk_db_exec(eng->db, "UPDATE secrets SET name = 'api2' WHERE bot_id = 'bot1'", &e) == 0);
	CHECK_EQ_INT(rk_secret_reveal(eng, &a, "api2", &out, &n, &e), -RK_ECORRUPT);
	/* another user sees nothing */
	struct rk_actor c;
	actor(&c, "bob", NULL, "bot1");
	CHECK_EQ_INT(rk_secret_reveal(eng, &c, "api", &out, &n, &e), -RK_ENOTFOUND);
	/* a master key others may read is refused */
	CHECK(chmod(kp, 0644) == 0);
	CHECK_EQ_INT(rk_secret_set(eng, &a, "x", "https://a.example", "bearer", "vvvv", 4, &e), -RK_EDENIED);
	CHECK(chmod(kp, 0600) == 0);
	/* another master key: nothing decrypts */
	setenv("RAKAZO_MASTER_KEY", "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff", 1);
	struct rk_actor a2;
	actor(&a2, "alice", NULL, "bot2");
	CHECK(rk_db_exec(eng->db, "DELETE FROM secrets", &e) == 0);
	REQUIRE(rk_secret_set(eng, &a2, "k", "https://a.example", "bearer", "vvvv", 4, &e) == 0);
	setenv("RAKAZO_MASTER_KEY", "ff112233445566778899aabbccddeeff00112233445566778899aabbccddeeff", 1);
	CHECK_EQ_INT(rk_secret_reveal(eng, &a2, "k", &out, &n, &e), -RK_ECORRUPT);
	setenv("RAKAZO_MASTER_KEY", "short", 1);
	CHECK_EQ_INT(rk_secret_reveal(eng, &a2, "k", &out, &n, &e), -RK_EINVALID);
	unsetenv("RAKAZO_MASTER_KEY");
	free(kp);
	free(dbp);
	rk_actor_release(&a);
	rk_actor_release(&a2);
	rk_actor_release(&b);
	rk_actor_release(&c);
}

static pid_t server_pid;
static char server_url[64];
static char server_log[128];

static int start_echo(void)
{
	const char *build = getenv("BUILD") ? getenv("BUILD") : "build";
	char *bin = rk_xasprintf("%s/tests/fixtures/echo_server", build);
	snprintf(server_log, sizeof(server_log), "%s/echo.log", eng->data_dir);
	int p[2];
	if (access(bin, X_OK) != 0 || pipe(p) != 0) {
		free(bin);
		return -1;
	}
	server_pid = fork();
	if (server_pid == 0) {
		dup2(p[1], 1);
		close(p[0]);
		close(p[1]);
		execl(bin, bin, "--log", server_log, (char *)NULL);
		_exit(127);
	}
	free(bin);
	close(p[1]);
	FILE *f = fdopen(p[0], "r");
	char line[128] = "";
	int ok = fgets(line, sizeof(line), f) && sscanf(line, "listening on %63s", server_url) == 1;
	fclose(f);
	return ok ? 0 : -1;
}

static void stop_echo(void)
{
	if (server_pid > 0) {
		kill(server_pid, SIGTERM);
		waitpid(server_pid, NULL, 0);
	}
	server_pid = 0;
}

static int log_lines(void)
{
	struct rk_buf b = RK_BUF_INIT;
	rk_buf_init(&b);
	struct rk_error e;
	int n = 0;
	if (rk_fs_read_all(server_log, 1 << 20, &b, &e) == 0)
		for (size_t i = 0; i < b.len; i++)
			n += b.data[i] == '\n';
	rk_buf_release(&b);
	return n;
}

/* One secret_request through the tool dispatcher; returns the result text (malloc'd). */
static char *tool(struct rk_tools_ctx *ctx, const char *name, const char *args, char *code, size_t size)
{
	struct rk_tool_result r;
	rk_tools_call(ctx, name, args, &r);
	snprintf(code, size, "%s", r.is_error ? r.error_code : "");
	char *t = r.text;
	r.text = NULL;
	rk_tool_result_release(&r);
	return t;
}

TEST(secret_request_sends_and_redacts)
{
	fresh_engine();
	if (start_echo() != 0) {
		check_skip("build/tests/fixtures/echo_server is not built");
		return;
	}
	setenv("RAKAZO_USER", "alice", 1);
	struct rk_actor a;
	actor(&a, "alice", NULL, "bot1");
	struct rk_error e;
	char *origin = NULL;
	REQUIRE(rk_secret_origin(server_url, 0, &origin, &e) == 0);
	const char *port = strrchr(server_url, ':') + 1;
	const struct {
		const char *name, *auth, *value;
	} secrets[] = {
		{"bear", "bearer", "Bearer-Token_9f8e7d6c"},
		{"hdr", "header:X-Api-Key", "hdr-key/with+odd=chars"},
		{"basic", "basic", "alice:pa55-w0rd!"},
		{"q", "query:api_key", "query key&more"},
	};
	for (size_t i = 0; i < 4; i++)
		REQUIRE(rk_secret_set(eng, &a, secrets[i].name, server_url, secrets[i].auth, secrets[i].value,
				      strlen(secrets[i].value), &e) == 0);
	struct rk_computer c = {.id = "cmp_x", .name = "x", .kind = "fake", .owner = "user:alice"};
	struct rk_tools_ctx ctx = {.eng = eng, .computer = &c, .bot_id = "bot1"};
	char code[32];
	for (size_t i = 0; i < 4; i++) {
		char *args = rk_xasprintf("{\"name\":\"%s\",\"url\":\"%s/v1/echo?x=1\",\"method\":\"POST\","
					  "\"headers\":{\"X-Trace\":\"t1\"},\"body\":\"hello\"}",
					  secrets[i].name, server_url);
		char *text = tool(&ctx, "secret_request", args, code, sizeof(code));
		CHECK_EQ_STR(code, "");
		cJSON *doc = cJSON_Parse(text);
		REQUIRE(doc != NULL);
		CHECK_EQ_INT(cJSON_GetObjectItem(doc, "status")->valueint, 200);
		const char *body = rk_json_string(doc, "body", "");
		cJSON *echo = cJSON_Parse(body);
		REQUIRE(echo != NULL);
		/* the server got the credential (every form of it came back [redacted]) */
		cJSON *cred = cJSON_GetObjectItem(echo, "credential");
		REQUIRE(cJSON_IsObject(cred));
		const char *forms[] = {"raw", "base64", "base64_nopad", "base64url", "hex", "HEX", "percent"};
		for (size_t k = 0; k < 7; k++)
			CHECK_EQ_STR(rk_json_string(cred, forms[k], ""), RK_SECRET_REDACTED);
		CHECK_EQ_STR(rk_json_string(echo, "body", ""), "hello");
		CHECK_EQ_STR(rk_json_string(cJSON_GetObjectItem(echo, "headers"), "X-Trace", ""), "t1");
		CHECK_EQ_STR(rk_json_string(cJSON_GetObjectItem(doc, "headers"), "x-echo", ""), RK_SECRET_REDACTED);
		CHECK(strstr(text, secrets[i].value) == NULL);
		cJSON_Delete(echo);
		cJSON_Delete(doc);
		free(text);
		free(args);
	}
	int before = log_lines();
	CHECK_EQ_INT(before, 4);
	/* refused before anything is sent: other port, other host, https, userinfo, fragment */
	char *refused[] = {
		rk_xasprintf("http://127.0.0.1:%d/", atoi(port) == 65535 ? 65534 : atoi(port) + 1),
		rk_xasprintf("http://localhost:%s/", port),
		rk_xasprintf("https://127.0.0.1:%s/", port),
		rk_xasprintf("http://u@127.0.0.1:%s/", port),
		rk_xasprintf("http://127.0.0.1:%s/#f", port),
	};
	for (size_t i = 0; i < 5; i++) {
		char *args = rk_xasprintf("{\"name\":\"bear\",\"url\":\"%s\"}", refused[i]);
		char *text = tool(&ctx, "secret_request", args, code, sizeof(code));
		CHECK_EQ_STR(code, "denied");
		free(text);
		free(args);
		free(refused[i]);
	}
	CHECK_EQ_INT(log_lines(), before);
	/* the model cannot set the auth header itself, nor follow a redirect off the origin */
	char *args = rk_xasprintf("{\"name\":\"bear\",\"url\":\"%s/\",\"headers\":{\"Authorization\":\"x\"}}", server_url);
	free(tool(&ctx, "secret_request", args, code, sizeof(code)));
	CHECK_EQ_STR(code, "invalid_argument");
	free(args);
	args = rk_xasprintf("{\"name\":\"bear\",\"url\":\"%s/redirect\"}", server_url);
	char *text = tool(&ctx, "secret_request", args, code, sizeof(code));
	CHECK(strstr(text, "\"status\":302") != NULL);
	CHECK_EQ_INT(log_lines(), before + 1);
	free(text);
	free(args);
	/* another bot of the user has no such secret; the user's own (bot "") is shared by its bots */
	struct rk_tools_ctx other = {.eng = eng, .computer = &c, .bot_id = "bot2"};
	args = rk_xasprintf("{\"name\":\"bear\",\"url\":\"%s/\"}", server_url);
	free(tool(&other, "secret_request", args, code, sizeof(code)));
	CHECK_EQ_STR(code, "not_found");
	free(args);
	/* request_secret records the ask, and then the value is available */
	text = tool(&other, "request_secret", "{\"name\":\"gh\",\"origin\":\"https://api.github.com\",\"auth\":\"bearer\","
			"\"reason\":\"to open a PR\"}", code, sizeof(code));
	CHECK_EQ_STR(code, "");
	CHECK(strstr(text, "\"state\":\"requested\"") && strstr(text, "rakazo secret set gh --origin "
								 "https://api.github.com:443 --auth bearer --bot bot2"));
	free(text);
	cJSON *list;
	struct rk_actor b2;
	actor(&b2, "alice", NULL, NULL);
	REQUIRE(rk_secret_list(eng, &b2, &list, &e) == 0);
	char *ls = cJSON_PrintUnformatted(list);
	CHECK(strstr(ls, "\"name\":\"gh\"") && strstr(ls, "\"state\":\"requested\"") && strstr(ls, "to open a PR"));
	for (size_t i = 0; i < 4; i++)
		CHECK(strstr(ls, secrets[i].value) == NULL);
	free(ls);
	cJSON_Delete(list);
	stop_echo();
	free(origin);
	rk_actor_release(&a);
	rk_actor_release(&b2);
}

/* --- memory ------------------------------------------------------------------------- */

TEST(memory_isolation_and_revisions)
{
	fresh_engine();
	struct rk_actor alice, bob, abot, abot2, other_space;
	actor(&alice, "alice", "team", NULL);
	actor(&bob, "bob", "team", NULL);
	actor(&abot, "alice", "team", "b1");
	actor(&abot2, "alice", "team", "b2");
	actor(&other_space, "alice", "home", NULL);
	struct rk_error e;
	cJSON *o;
	REQUIRE(rk_memory_write(eng, &alice, "notes.md", "# Alice\nThe launch code is zebra.", -1, NULL, &o, &e) == 0);
	CHECK_EQ_INT(cJSON_GetObjectItem(o, "revision")->valueint, 1);
	cJSON_Delete(o);
	REQUIRE(rk_memory_write(eng, &abot, "bot.md", "bot one remembers penguins", -1, "run_1", &o, &e) == 0);
	cJSON_Delete(o);
	/* cross-user: bob reads, lists and searches nothing of alice's */
	CHECK_EQ_INT(rk_memory_read(eng, &bob, "notes.md", &o, &e), -RK_ENOTFOUND);
	REQUIRE(rk_memory_read(eng, &bob, NULL, &o, &e) == 0);
	CHECK_EQ_INT(cJSON_GetArraySize(o), 0);
	cJSON_Delete(o);
	REQUIRE(rk_memory_search(eng, &bob, "zebra", 10, &o, &e) == 0);
	CHECK_EQ_INT(cJSON_GetArraySize(cJSON_GetObjectItem(o, "results")), 0);
	cJSON_Delete(o);
	/* another space: nothing either */
	CHECK_EQ_INT(rk_memory_read(eng, &other_space, "notes.md", &o, &e), -RK_ENOTFOUND);
	/* a bot sees the user's documents and its own, never another bot's */
	REQUIRE(rk_memory_read(eng, &abot, NULL, &o, &e) == 0);
	CHECK_EQ_INT(cJSON_GetArraySize(o), 2);
	cJSON_Delete(o);
	REQUIRE(rk_memory_read(eng, &abot2, NULL, &o, &e) == 0);
	CHECK_EQ_INT(cJSON_GetArraySize(o), 1);
	cJSON_Delete(o);
	CHECK_EQ_INT(rk_memory_read(eng, &abot2, "bot.md", &o, &e), -RK_ENOTFOUND);
	/* expected revision */
	REQUIRE(rk_memory_write(eng, &alice, "notes.md", "v2", 1, NULL, &o, &e) == 0);
	CHECK_EQ_INT(cJSON_GetObjectItem(o, "revision")->valueint, 2);
	cJSON_Delete(o);
	CHECK_EQ_INT(rk_memory_write(eng, &alice, "notes.md", "stale", 1, NULL, &o, &e), -RK_ECONFLICT);
	CHECK_EQ_INT(rk_memory_write(eng, &alice, "notes.md", "new?", 0, NULL, &o, &e), -RK_ECONFLICT);
	REQUIRE(rk_memory_read(eng, &alice, "notes.md", &o, &e) == 0);
	CHECK_EQ_STR(rk_json_string(o, "content", ""), "v2");
	cJSON_Delete(o);
	REQUIRE(rk_memory_history(eng, &alice, "notes.md", &o, &e) == 0);
	CHECK_EQ_INT(cJSON_GetArraySize(o), 2);
	CHECK_EQ_INT(cJSON_GetObjectItem(cJSON_GetArrayItem(o, 0), "revision")->valueint, 2);
	cJSON_Delete(o);
	/* bad input stores nothing */
	CHECK_EQ_INT(rk_memory_write(eng, &alice, "../x.md", "x", -1, NULL, &o, &e), -RK_EINVALID);
	CHECK_EQ_INT(rk_memory_write(eng, &alice, "", "x", -1, NULL, &o, &e), -RK_EINVALID);
	CHECK_EQ_INT(rk_memory_write(eng, &alice, "bin.md", "\xff\xfe", -1, NULL, &o, &e), -RK_EINVALID);
	rk_actor_release(&alice);
	rk_actor_release(&bob);
	rk_actor_release(&abot);
	rk_actor_release(&abot2);
	rk_actor_release(&other_space);
}

TEST(memory_search_ranks)
{
	fresh_engine();
	struct rk_actor a;
	actor(&a, "alice", NULL, NULL);
	struct rk_error e;
	cJSON *o;
	const char *docs[][2] = {
		{"deploy.md", "deploy deploy deploy: the deploy script is scripts/deploy.sh"},
		{"misc.md", "groceries, and once a note about deploy"},
		{"pets.md", "the cat is called Mischief"},
	};
	for (size_t i = 0; i < 3; i++) {
		REQUIRE(rk_memory_write(eng, &a, docs[i][0], docs[i][1], -1, NULL, &o, &e) == 0);
		cJSON_Delete(o);
	}
	/* the same on both backends: FTS5 on SQLite, text search on PostgreSQL */
	REQUIRE(rk_memory_search(eng, &a, "DEPLOY", 10, &o, &e) == 0);
	CHECK_EQ_STR(rk_json_string(o, "mode", ""), "fts");
	cJSON *res = cJSON_GetObjectItem(o, "results");
	CHECK_EQ_INT(cJSON_GetArraySize(res), 2);
	CHECK_EQ_STR(rk_json_string(cJSON_GetArrayItem(res, 0), "path", ""), "deploy.md");
	CHECK(cJSON_GetObjectItem(cJSON_GetArrayItem(res, 0), "score")->valuedouble >
	      cJSON_GetObjectItem(cJSON_GetArrayItem(res, 1), "score")->valuedouble);
	cJSON_Delete(o);
	/* inside a word: the substring fallback, score 1 */
	REQUIRE(rk_memory_search(eng, &a, "schie", 10, &o, &e) == 0);
	CHECK_EQ_STR(rk_json_string(o, "mode", ""), "substring");
	res = cJSON_GetObjectItem(o, "results");
	CHECK_EQ_INT(cJSON_GetArraySize(res), 1);
	CHECK(cJSON_GetObjectItem(cJSON_GetArrayItem(res, 0), "score")->valuedouble == 1.0);
	cJSON_Delete(o);
	/* every word must be there, in any order */
	REQUIRE(rk_memory_search(eng, &a, "script deploy", 10, &o, &e) == 0);
	CHECK_EQ_STR(rk_json_string(o, "mode", ""), "fts");
	res = cJSON_GetObjectItem(o, "results");
	CHECK_EQ_INT(cJSON_GetArraySize(res), 1);
	CHECK_EQ_STR(rk_json_string(cJSON_GetArrayItem(res, 0), "path", ""), "deploy.md");
	cJSON_Delete(o);
	/* FTS syntax in a query is text: neither backend errs or takes it as OR */
	REQUIRE(rk_memory_search(eng, &a, "deploy\" OR \"cat", 10, &o, &e) == 0);
	CHECK_EQ_INT(cJSON_GetArraySize(cJSON_GetObjectItem(o, "results")), 0);
	cJSON_Delete(o);
	REQUIRE(rk_memory_search(eng, &a, "deploy & !cat | (x", 10, &o, &e) == 0);
	cJSON_Delete(o);
	CHECK_EQ_INT(rk_memory_search(eng, &a, "", 10, &o, &e), -RK_EINVALID);
	rk_actor_release(&a);
}

/* --- approval rules ------------------------------------------------------------------- */

static int asks(struct rk_actor *a, const char *tool)
{
	struct rk_approval_decision d;
	struct rk_error e;
	if (rk_approval_evaluate(eng, a, tool, "{}", 0, &d, &e) != 0)
		return -1;
	return d.ask;
}

static void rule(struct rk_actor *a, const char *effect, const char *match, const char *value, int shared)
{
	char *id;
	struct rk_error e;
	if (rk_approval_rule_add(eng, a, effect, match, value, shared, &id, &e) != 0)
		printf("  rule: %s\n", e.message);
	free(id);
}

TEST(approval_precedence)
{
	fresh_engine();
	unsetenv("RAKAZO_JUDGE_MODEL");
	struct rk_actor a, bob;
	actor(&a, "alice", "team", NULL);
	actor(&bob, "bob", "team", NULL);
	/* no rule: allow */
	CHECK_EQ_INT(asks(&a, "write_file"), 0);
	/* category */
	rule(&a, "require_approval", "category", "write", 0);
	CHECK_EQ_INT(asks(&a, "write_file"), 1);
	CHECK_EQ_INT(asks(&a, "memory_write"), 1);
	CHECK_EQ_INT(asks(&a, "read_file"), 0);
	/* connector over category */
	rule(&a, "allow", "connector", "memory", 0);
	CHECK_EQ_INT(asks(&a, "memory_write"), 0);
	CHECK_EQ_INT(asks(&a, "write_file"), 1);
	/* tool over connector */
	rule(&a, "require_approval", "tool", "memory_write", 0);
	CHECK_EQ_INT(asks(&a, "memory_write"), 1);
	CHECK_EQ_INT(asks(&a, "memory_read"), 0);
	/* within a level require_approval wins */
	rule(&a, "allow", "tool", "memory_write", 0);
	CHECK_EQ_INT(asks(&a, "memory_write"), 1);
	rule(&a, "allow", "tool", "write_file", 0);
	CHECK_EQ_INT(asks(&a, "write_file"), 0);
	/* shell, write_stdin and computer_act are exempt from category rules, not from tool rules */
	rule(&a, "require_approval", "category", "shell", 0);
	rule(&a, "require_approval", "category", "act", 0);
	CHECK_EQ_INT(asks(&a, "shell"), 0);
	CHECK_EQ_INT(asks(&a, "write_stdin"), 0);
	CHECK_EQ_INT(asks(&a, "computer_act"), 0);
	rule(&a, "require_approval", "tool", "shell", 0);
	CHECK_EQ_INT(asks(&a, "shell"), 1);
	/* personal rules in a shared space: bob is under none of alice's */
	CHECK_EQ_INT(asks(&bob, "shell"), 0);
	CHECK_EQ_INT(asks(&bob, "memory_write"), 0);
	/* a shared rule is everyone's */
	rule(&bob, "require_approval", "connector", "http", 1);
	CHECK_EQ_INT(asks(&a, "secret_request"), 1);
	CHECK_EQ_INT(asks(&bob, "secret_request"), 1);
	/* outside a run an ask is a denial */
	struct rk_approval_decision d;
	struct rk_error e;
	CHECK_EQ_INT(rk_approval_check(eng, &a, NULL, NULL, "shell", "{}", 0, &d, &e), -RK_EDENIED);
	/* bad rules */
	char *id;
	CHECK_EQ_INT(rk_approval_rule_add(eng, &a, "maybe", "tool", "x", 0, &id, &e), -RK_EUSAGE);
	CHECK_EQ_INT(rk_approval_rule_add(eng, &a, "allow", "name", "x", 0, &id, &e), -RK_EUSAGE);
	CHECK_EQ_INT(rk_approval_rule_add(eng, &a, "allow", "tool", "", 0, &id, &e), -RK_EUSAGE);
	CHECK_EQ_INT(rk_approval_rule_add(eng, &a, "allow", "tool", "write_file", 0, &id, &e), -RK_ECONFLICT);
	CHECK_EQ_INT(rk_approval_rule_remove(eng, &bob, "apr_nope", &e), -RK_ENOTFOUND);
	rk_actor_release(&a);
	rk_actor_release(&bob);
}

static int asks_webhook(struct rk_actor *a, const char *tool, char *source, size_t size)
{
	struct rk_approval_decision d;
	struct rk_error e;
	if (rk_approval_evaluate(eng, a, tool, "{}", RK_APPROVAL_WEBHOOK, &d, &e) != 0)
		return -1;
	snprintf(source, size, "%s", d.source);
	return d.ask;
}

TEST(approval_always_and_webhook)
{
	fresh_engine();
	unsetenv("RAKAZO_JUDGE_MODEL");
	struct rk_actor a;
	actor(&a, "alice", "hooks", NULL);
	char src[16];
	/* create_space always asks: no rule, a tool allow rule, a shared one */
	CHECK_EQ_INT(asks(&a, "create_space"), 1);
	rule(&a, "allow", "tool", "create_space", 0);
	rule(&a, "allow", "connector", "spaces", 1);
	CHECK_EQ_INT(asks(&a, "create_space"), 1);
	/* a webhook's run: changing calls ask with no rule, the exempt ones too; reads do not */
	CHECK_EQ_INT(asks_webhook(&a, "write_file", src, sizeof(src)), 1);
	CHECK_EQ_STR(src, "webhook");
	CHECK_EQ_INT(asks_webhook(&a, "shell", src, sizeof(src)), 1);
	CHECK_EQ_INT(asks_webhook(&a, "computer_act", src, sizeof(src)), 1);
	CHECK_EQ_INT(asks_webhook(&a, "secret_request", src, sizeof(src)), 1);
	CHECK_EQ_INT(asks_webhook(&a, "read_file", src, sizeof(src)), 0);
	CHECK_EQ_INT(asks_webhook(&a, "computer_observe", src, sizeof(src)), 0);
	/* connector and category allow rules do not let a changing call through; a person's run they do */
	rule(&a, "allow", "category", "write", 0);
	rule(&a, "allow", "connector", "memory", 0);
	CHECK_EQ_INT(asks_webhook(&a, "write_file", src, sizeof(src)), 1);
	CHECK_EQ_INT(asks_webhook(&a, "memory_write", src, sizeof(src)), 1);
	CHECK_EQ_INT(asks(&a, "memory_write"), 0);
	/* a tool rule does; a require rule at any level still asks */
	rule(&a, "allow", "tool", "write_file", 0);
	CHECK_EQ_INT(asks_webhook(&a, "write_file", src, sizeof(src)), 0);
	CHECK_EQ_STR(src, "rule");
	rule(&a, "require_approval", "connector", "computer", 0);
	CHECK_EQ_INT(asks_webhook(&a, "list_files", src, sizeof(src)), 1);
	CHECK_EQ_STR(src, "rule");
	/* and create_space stays asked for in a webhook's run */
	CHECK_EQ_INT(asks_webhook(&a, "create_space", src, sizeof(src)), 1);
	CHECK_EQ_STR(src, "policy");
	rk_actor_release(&a);
}

/* Starts build/tests/emulators/model_server on scenario text; *url set. */
static pid_t start_model(const char *scenario, char *url, size_t size)
{
	const char *build = getenv("BUILD") ? getenv("BUILD") : "build";
	char *bin = rk_xasprintf("%s/tests/emulators/model_server", build);
	char *path = rk_path_join(eng->data_dir, "judge.json");
	struct rk_error e;
	int p[2];
	pid_t pid = -1;
	if (access(bin, X_OK) == 0 && rk_fs_write_atomic(path, scenario, strlen(scenario), 0600, &e) == 0 &&
	    pipe(p) == 0) {
		pid = fork();
		if (pid == 0) {
			dup2(p[1], 1);
			close(p[0]);
			close(p[1]);
			execl(bin, bin, path, "--keep-running", (char *)NULL);
			_exit(127);
		}
		close(p[1]);
		FILE *f = fdopen(p[0], "r");
		char line[128] = "", u[64] = "";
		if (!fgets(line, sizeof(line), f) || sscanf(line, "listening on %63s", u) != 1) {
			kill(pid, SIGTERM);
			waitpid(pid, NULL, 0);
			pid = -1;
		}
		snprintf(url, size, "%s/v1", u);
		fclose(f);
	}
	free(bin);
	free(path);
	return pid;
}

TEST(approval_judge)
{
	fresh_engine();
	char url[96];
	pid_t pid = start_model("{\"steps\":[{\"reply\":{\"content\":\"ALLOW\"}},{\"reply\":{\"content\":\"ASK\"}},"
				"{\"reply\":{\"content\":\"maybe later\"}},"
				"{\"fault\":\"status\",\"status\":400}]}",
				url, sizeof(url));
	if (pid < 0) {
		check_skip("build/tests/emulators/model_server is not built");
		return;
	}
	setenv("RAKAZO_JUDGE_MODEL", "judge", 1);
	setenv("RAKAZO_JUDGE_BASE_URL", url, 1);
	rk_model_judge_register(); /* as the agent's tools do */
	struct rk_actor a;
	actor(&a, "alice", NULL, NULL);
	struct rk_approval_decision d;
	struct rk_error e;
	/* read-only calls never reach the judge */
	CHECK(rk_approval_evaluate(eng, &a, "read_file", "{}", RK_APPROVAL_JUDGE, &d, &e) == 0 && !d.ask);
	CHECK_EQ_STR(d.source, "default");
	const int want[] = {0, 1, 1, 1}; /* ALLOW, ASK, neither, an error */
	for (int i = 0; i < 4; i++) {
		REQUIRE(rk_approval_evaluate(eng, &a, "write_file", "{\"path\":\"x\"}", RK_APPROVAL_JUDGE, &d, &e) == 0);
		CHECK_EQ_INT(d.ask, want[i]);
		CHECK_EQ_STR(d.source, "judge");
	}
	/* a rule is decided without the judge (the server has no step left: it would fail) */
	rule(&a, "allow", "tool", "write_file", 0);
	REQUIRE(rk_approval_evaluate(eng, &a, "write_file", "{}", RK_APPROVAL_JUDGE, &d, &e) == 0);
	CHECK(!d.ask && !strcmp(d.source, "rule"));
	/* a judge that is down asks */
	kill(pid, SIGTERM);
	waitpid(pid, NULL, 0);
	REQUIRE(rk_approval_evaluate(eng, &a, "memory_write", "{}", RK_APPROVAL_JUDGE, &d, &e) == 0);
	CHECK(d.ask && !strcmp(d.source, "judge"));
	unsetenv("RAKAZO_JUDGE_MODEL");
	unsetenv("RAKAZO_JUDGE_BASE_URL");
	rk_actor_release(&a);
}

static int stub_calls;
static char stub_tool[64], stub_dir[256];

static int stub_judge(const char *data_dir, const char *tool, const char *args_json, char *reason, size_t size)
{
	stub_calls++;
	snprintf(stub_tool, sizeof(stub_tool), "%s", tool);
	snprintf(stub_dir, sizeof(stub_dir), "%s", data_dir);
	snprintf(reason, size, "stub: allowed");
	return 0;
}

/* The judge is a hook the agent wing registers (access never calls the
 * model itself): with none registered a call the judge would see asks a
 * person; a registered one decides, and only for what it is asked. */
TEST(approval_judge_hook)
{
	fresh_engine();
	setenv("RAKAZO_JUDGE_MODEL", "judge", 1);
	struct rk_actor a;
	actor(&a, "alice", NULL, NULL);
	struct rk_approval_decision d;
	struct rk_error e;
	rk_approval_set_judge(NULL);
	REQUIRE(rk_approval_evaluate(eng, &a, "write_file", "{}", RK_APPROVAL_JUDGE, &d, &e) == 0);
	CHECK(d.ask && !strcmp(d.source, "judge"));
	CHECK(strstr(d.reason, "none in this process") != NULL);

	stub_calls = 0;
	rk_approval_set_judge(stub_judge);
	REQUIRE(rk_approval_evaluate(eng, &a, "write_file", "{}", RK_APPROVAL_JUDGE, &d, &e) == 0);
	CHECK(!d.ask && !strcmp(d.source, "judge") && !strcmp(d.reason, "stub: allowed"));
	CHECK_EQ_INT(stub_calls, 1);
	CHECK_EQ_STR(stub_tool, "write_file");
	CHECK_EQ_STR(stub_dir, eng->data_dir);
	/* not asked: without the flag, for a read, or once a rule decides */
	REQUIRE(rk_approval_evaluate(eng, &a, "write_file", "{}", 0, &d, &e) == 0);
	CHECK(!d.ask && !strcmp(d.source, "default"));
	REQUIRE(rk_approval_evaluate(eng, &a, "read_file", "{}", RK_APPROVAL_JUDGE, &d, &e) == 0);
	CHECK_EQ_STR(d.source, "default");
	rule(&a, "require_approval", "tool", "write_file", 0);
	REQUIRE(rk_approval_evaluate(eng, &a, "write_file", "{}", RK_APPROVAL_JUDGE, &d, &e) == 0);
	CHECK(d.ask && !strcmp(d.source, "rule"));
	CHECK_EQ_INT(stub_calls, 1);

	rk_model_judge_register();
	unsetenv("RAKAZO_JUDGE_MODEL");
	rk_actor_release(&a);
}

struct decider {
	const char *run_id;
	int approve;
};

static void *decide_later(void *p)
{
	struct decider *dc = p;
	struct rk_engine *e2;
	struct rk_error e;
	if (rk_engine_open(&e2, &e) != 0)
		return NULL;
	struct rk_actor a;
	rk_actor_resolve(&a, e2, NULL, NULL, &e);
	for (int i = 0; i < 300; i++) { /* until the call waits (30 s at most) */
		cJSON *pend;
		if (rk_approval_pending(e2, dc->run_id, &pend, &e) == 0) {
			int n = cJSON_GetArraySize(pend);
			cJSON_Delete(pend);
			if (n == 1)
				break;
		}
		rk_sleep_ms(100);
	}
	struct rk_run_row row = {0};
	if (rk_db_run_get(e2->db, dc->run_id, &row, &e) == 0) {
		if (strcmp(row.state, "waiting_approval") != 0)
			printf("  the run is %s while it waits\n", row.state);
		rk_run_row_release(&row);
	}
	rk_approval_decide(e2, &a, dc->run_id, dc->approve, dc->approve ? NULL : "not today", &e);
	rk_actor_release(&a);
	rk_engine_free(e2);
	return NULL;
}

TEST(approval_waits_for_a_person)
{
	fresh_engine();
	setenv("RAKAZO_USER", "alice", 1);
	struct rk_actor a;
	actor(&a, "alice", NULL, NULL);
	rule(&a, "require_approval", "tool", "memory_write", 0);
	struct rk_error e;
	struct rk_run_row row = {.id = "run_t1", .task = "t", .state = "running"};
	REQUIRE(rk_db_run_insert(eng->db, &row, &e) == 0);
	struct rk_computer c = {.id = "cmp_x", .name = "x", .kind = "fake", .owner = "user:alice"};
	struct rk_tools_ctx ctx = {.eng = eng, .computer = &c, .run_id = "run_t1"};
	for (int approve = 1; approve >= 0; approve--) {
		struct decider dc = {"run_t1", approve};
		pthread_t th;
		pthread_create(&th, NULL, decide_later, &dc);
		char code[32];
		char *text = tool(&ctx, "memory_write", "{\"path\":\"a.md\",\"content\":\"x\"}", code, sizeof(code));
		pthread_join(th, NULL);
		CHECK_EQ_STR(code, approve ? "" : "denied");
		if (!approve)
			CHECK(strstr(text, "not today") != NULL);
		free(text);
		struct rk_run_row r2 = {0};
		REQUIRE(rk_db_run_get(eng->db, "run_t1", &r2, &e) == 0);
		CHECK_EQ_STR(r2.state, "running");
		rk_run_row_release(&r2);
	}
	cJSON *o;
	REQUIRE(rk_memory_read(eng, &a, "a.md", &o, &e) == 0);
	CHECK_EQ_INT(cJSON_GetObjectItem(o, "revision")->valueint, 1); /* the denied write did not happen */
	cJSON_Delete(o);
	CHECK_EQ_INT(rk_approval_decide(eng, &a, "run_t1", 1, NULL, &e), -RK_ENOTFOUND);
	/* nobody but alice decides alice's calls, and no bot does */
	CHECK(rk_db_exec(eng->db,
			 "INSERT INTO approvals (id, run_id, user_id, tool, reason, created_at) "
			 "VALUES ('apv_x', 'run_t1', 'alice', 'shell', 'rule', 1)",
			 &e) == 0);
	struct rk_actor bob, bot;
	actor(&bob, "bob", NULL, NULL);
	actor(&bot, "alice", NULL, "b1");
	CHECK_EQ_INT(rk_approval_decide(eng, &bob, "run_t1", 1, NULL, &e), -RK_EDENIED);
	CHECK_EQ_INT(rk_approval_decide(eng, &bot, "run_t1", 1, NULL, &e), -RK_EDENIED);
	setenv("RAKAZO_USER", "alice", 1);
	CHECK_EQ_INT(rk_approval_decide(eng, &a, "run_t1", 0, "no", &e), 0);
	rk_actor_release(&bob);
	rk_actor_release(&bot);
	rk_actor_release(&a);
}

/* --- authorization -------------------------------------------------------------------------- */

static void add_computer(const char *id, const char *name, const char *owner, const char *space)
{
	struct rk_computer c = {.id = (char *)id, .name = (char *)name, .kind = "fake", .home_key = (char *)id,
				.state = "stopped", .mode = "private", .owner = (char *)owner, .created_at = 1,
				.updated_at = 1};
	struct rk_error e;
	if (rk_db_computer_insert(eng->db, &c, &e) != 0 || rk_authz_computer_record(eng, id, space, owner, &e) != 0)
		printf("  add_computer: %s\n", e.message);
}

TEST(authz_spaces_and_grants)
{
	fresh_engine();
	add_computer("cmp_a", "a", "user:alice", "team");
	add_computer("cmp_b", "b", "user:alice", "home");
	add_computer("cmp_o", "o", "org", "team");
	struct rk_actor alice, home, bob, bot;
	actor(&alice, "alice", "team", NULL);
	actor(&home, "alice", "home", NULL);
	actor(&bob, "bob", "team", NULL);
	actor(&bot, "alice", "team", "b1");
	struct rk_error e;
	struct rk_computer c;
	/* switching space hides the other space's computers */
	CHECK_EQ_INT(rk_authz_resolve(eng, &alice, "b", NULL, &c, &e), -RK_ENOTFOUND);
	REQUIRE(rk_authz_resolve(eng, &home, "b", NULL, &c, &e) == 0);
	rk_computer_release(&c);
	REQUIRE(rk_authz_resolve(eng, &alice, "a", NULL, &c, &e) == 0);
	/* owner uses and deletes; another member may not; the org computer is everyone's */
	CHECK_EQ_INT(rk_authz_check(eng, &alice, "computers.delete", &c, &e), 0);
	CHECK_EQ_INT(rk_authz_check(eng, &bob, "computers.use", &c, &e), -RK_EDENIED);
	struct rk_computer org;
	REQUIRE(rk_authz_resolve(eng, &bob, "o", NULL, &org, &e) == 0);
	CHECK_EQ_INT(rk_authz_check(eng, &bob, "computers.use", &org, &e), 0);
	rk_computer_release(&org);
	/* the one resolver finds and checks in one call (issue 20): another
	 * member is denied, another space does not see it, a bot needs a grant */
	struct rk_computer x;
	CHECK_EQ_INT(rk_authz_resolve(eng, &bob, "a", "computers.use", &x, &e), -RK_EDENIED);
	CHECK_EQ_INT(rk_authz_resolve(eng, &home, "a", "computers.use", &x, &e), -RK_ENOTFOUND);
	CHECK_EQ_INT(rk_authz_resolve(eng, &bot, "a", "computers.use", &x, &e), -RK_EDENIED);
	REQUIRE(rk_authz_resolve(eng, &alice, "cmp_a", "computers.use", &x, &e) == 0);
	rk_computer_release(&x);
	CHECK(!rk_authz_may_use(eng, &bob, &c) && !rk_authz_may_use(eng, &home, &c) && rk_authz_may_use(eng, &alice, &c));
	/* what outlives a computer (its lifecycle commands): the recorded place decides */
	REQUIRE(rk_db_exec(eng->db, "UPDATE computers SET deleted_at = 2 WHERE id = 'cmp_b'", &e) == 0);
	CHECK_EQ_INT(rk_authz_resolve(eng, &home, "cmp_b", "computers.use", &x, &e), -RK_ENOTFOUND);
	CHECK_EQ_INT(rk_authz_check_id(eng, &home, "cmp_b", "computers.use", &e), 0);
	CHECK_EQ_INT(rk_authz_check_id(eng, &alice, "cmp_b", "computers.use", &e), -RK_ENOTFOUND);
	CHECK_EQ_INT(rk_authz_check_id(eng, &bob, "cmp_a", "computers.use", &e), -RK_EDENIED);
	/* a bot: nothing without a grant, use with one, never create or delete */
	CHECK_EQ_INT(rk_authz_check(eng, &bot, "computers.use", &c, &e), -RK_EDENIED);
	CHECK_EQ_INT(rk_authz_grant(eng, &bob, &c, "b1", &e), -RK_EDENIED);
	REQUIRE(rk_authz_grant(eng, &alice, &c, "b1", &e) == 0);
	CHECK_EQ_INT(rk_authz_check(eng, &bot, "computers.use", &c, &e), 0);
	CHECK_EQ_INT(rk_authz_check(eng, &bot, "computers.acquire", &c, &e), 0);
	CHECK_EQ_INT(rk_authz_check(eng, &bot, "computers.delete", &c, &e), -RK_EDENIED);
	CHECK_EQ_INT(rk_authz_check(eng, &bot, "computers.create", NULL, &e), -RK_EDENIED);
	cJSON *rights;
	REQUIRE(rk_authz_rights(eng, &c, &rights, &e) == 0);
	CHECK_EQ_INT(cJSON_GetArraySize(rights), 1);
	cJSON_Delete(rights);
	/* the approval decider after the rules: a tool rule on the capability */
	char *id;
	REQUIRE(rk_approval_rule_add(eng, &alice, "require_approval", "tool", "computers.delete", 0, &id, &e) == 0);
	free(id);
	CHECK_EQ_INT(rk_authz_check(eng, &alice, "computers.delete", &c, &e), -RK_EDENIED);
	CHECK(strstr(e.message, "needs approval") != NULL);
	/* a revoke stops the next tool call */
	struct rk_tools_ctx ctx = {.eng = eng, .computer = &c, .bot_id = "b1"};
	char code[32];
	free(tool(&ctx, "list_files", "{}", code, sizeof(code)));
	CHECK_EQ_STR(code, "not_found"); /* a run in another space does not see the computer */
	setenv("RAKAZO_SPACE", "team", 1);
	free(tool(&ctx, "list_files", "{\"path\":\"../x\"}", code, sizeof(code)));
	CHECK_EQ_STR(code, "invalid_argument"); /* through the gate (the path itself is refused) */
	REQUIRE(rk_authz_revoke(eng, &alice, &c, "b1", &e) == 0);
	free(tool(&ctx, "write_stdin", "{\"session\":\"ses_x\",\"chars\":\"ls\\n\"}", code, sizeof(code)));
	CHECK_EQ_STR(code, "denied");
	unsetenv("RAKAZO_SPACE");
	CHECK_EQ_INT(rk_authz_revoke(eng, &alice, &c, "b1", &e), -RK_ENOTFOUND);
	rk_computer_release(&c);
	/* names */
	struct rk_actor bad;
	setenv("RAKAZO_USER", "a b", 1);
	CHECK_EQ_INT(rk_actor_resolve(&bad, eng, NULL, NULL, &e), -RK_EINVALID);
	setenv("RAKAZO_USER", "alice", 1);
	CHECK_EQ_INT(rk_actor_resolve(&bad, eng, "sp/ace", NULL, &e), -RK_EINVALID);
	rk_actor_release(&alice);
	rk_actor_release(&home);
	rk_actor_release(&bob);
	rk_actor_release(&bot);
}

TEST(runs_take_waiting_approval)
{
	fresh_engine();
	struct rk_error e;
	struct rk_run_row row = {.id = "run_w", .task = "t", .state = "waiting_approval"};
	CHECK_EQ_INT(rk_db_run_insert(eng->db, &row, &e), 0);
	struct rk_run_row bad = {.id = "run_b", .task = "t", .state = "sleeping"};
	CHECK(rk_db_run_insert(eng->db, &bad, &e) != 0);
	char *ic;
	CHECK(rk_db_integrity_check(eng->db, &ic, &e) == 0 && !strcmp(ic, "ok"));
	free(ic);
}

/* The one target resolver (issue 21): the grammar, id prefixes, the screen forms. */
TEST(target_grammar_and_prefixes)
{
	char *comp, *bot;
	int disp;
	struct rk_error e;
	REQUIRE(rk_target_parse("web", &comp, &bot, &disp, &e) == 0);
	CHECK(!strcmp(comp, "web") && !bot && disp == -1);
	free(comp);
	REQUIRE(rk_target_parse("web:b1", &comp, &bot, &disp, &e) == 0);
	CHECK(!strcmp(comp, "web") && bot && !strcmp(bot, "b1") && disp == -1);
	free(comp);
	free(bot);
	REQUIRE(rk_target_parse("cmp_x:.3", &comp, &bot, &disp, &e) == 0);
	CHECK(!strcmp(comp, "cmp_x") && !bot && disp == 3);
	free(comp);
	CHECK_EQ_INT(rk_target_parse("", &comp, &bot, &disp, &e), -RK_EUSAGE);
	CHECK_EQ_INT(rk_target_parse(":b1", &comp, &bot, &disp, &e), -RK_EINVALID);
	CHECK_EQ_INT(rk_target_parse("web:", &comp, &bot, &disp, &e), -RK_EINVALID);
	CHECK_EQ_INT(rk_target_parse("web:.", &comp, &bot, &disp, &e), -RK_EINVALID);
	CHECK_EQ_INT(rk_target_parse("web:.64", &comp, &bot, &disp, &e), -RK_EINVALID);
	CHECK_EQ_INT(rk_target_parse("web:.1x", &comp, &bot, &disp, &e), -RK_EINVALID);
	CHECK_EQ_INT(rk_target_parse("web:b/1", &comp, &bot, &disp, &e), -RK_EINVALID);
	CHECK(comp == NULL && bot == NULL);

	fresh_engine();
	add_computer("cmp_aaaa1", "one", "user:alice", "team");
	add_computer("cmp_aaaa2", "two", "user:alice", "team");
	add_computer("cmp_bbbb1", "three", "user:alice", "team");
	add_computer("cmp_aaaa3", "far", "user:alice", "home");
	struct rk_actor alice;
	actor(&alice, "alice", "team", NULL);
	struct rk_target t;
	/* a unique prefix finds it; another space's computers do not count */
	REQUIRE(rk_target_resolve(eng, &alice, "cmp_bb", "computers.use", &t, &e) == 0);
	CHECK(!strcmp(t.computer.id, "cmp_bbbb1") && !t.bot && t.display == -1);
	rk_target_release(&t);
	REQUIRE(rk_target_resolve(eng, &alice, "cmp_aaaa2", NULL, &t, &e) == 0);
	CHECK(!strcmp(t.computer.name, "two"));
	rk_target_release(&t);
	CHECK_EQ_INT(rk_target_resolve(eng, &alice, "cmp_aaaa3", NULL, &t, &e), -RK_ENOTFOUND);
	/* an ambiguous prefix names the candidates */
	CHECK_EQ_INT(rk_target_resolve(eng, &alice, "cmp_aa", NULL, &t, &e), -RK_EINVALID);
	CHECK(strstr(e.message, "cmp_aaaa1") && strstr(e.message, "cmp_aaaa2") && !strstr(e.message, "cmp_aaaa3"));
	CHECK(t.computer.id == NULL);
	/* too short to be a prefix: a name that does not exist */
	CHECK_EQ_INT(rk_target_resolve(eng, &alice, "cmp_", NULL, &t, &e), -RK_ENOTFOUND);
	/* the screen forms, by name or by prefix */
	REQUIRE(rk_target_resolve(eng, &alice, "three:b1", NULL, &t, &e) == 0);
	CHECK(!strcmp(t.computer.id, "cmp_bbbb1") && t.bot && !strcmp(t.bot, "b1"));
	rk_target_release(&t);
	REQUIRE(rk_target_resolve(eng, &alice, "cmp_bbb:.2", NULL, &t, &e) == 0);
	CHECK(!strcmp(t.computer.id, "cmp_bbbb1") && t.display == 2);
	rk_target_release(&t);
	/* what acts on a whole computer refuses a screen */
	struct rk_computer c;
	CHECK_EQ_INT(rk_authz_resolve(eng, &alice, "three:b1", NULL, &c, &e), -RK_EINVALID);
	REQUIRE(rk_authz_resolve(eng, &alice, "cmp_bbbb", NULL, &c, &e) == 0);
	rk_computer_release(&c);
	rk_actor_release(&alice);
}

/* Runs by id prefix (issue 21): the TUI shows 13 characters of a run id. */
TEST(run_by_prefix)
{
	fresh_engine();
	struct rk_error e;
	const char *ids[] = {"run_abcdef01", "run_abcdef02", "run_xyz001"};
	for (int i = 0; i < 3; i++) {
		struct rk_run_row row = {.id = (char *)ids[i], .task = "t", .state = "completed"};
		REQUIRE(rk_db_run_insert(eng->db, &row, &e) == 0);
	}
	struct rk_run_row r;
	REQUIRE(rk_run_get(eng, "run_abcdef02", &r, &e) == 0);
	CHECK(!strcmp(r.id, "run_abcdef02"));
	rk_run_row_release(&r);
	REQUIRE(rk_run_get(eng, "run_xy", &r, &e) == 0);
	CHECK(!strcmp(r.id, "run_xyz001"));
	rk_run_row_release(&r);
	CHECK_EQ_INT(rk_run_get(eng, "run_abc", &r, &e), -RK_EINVALID);
	CHECK(strstr(e.message, "run_abcdef01") && strstr(e.message, "run_abcdef02") && !strstr(e.message, "xyz"));
	CHECK_EQ_INT(rk_run_get(eng, "run_", &r, &e), -RK_ENOTFOUND);
	CHECK_EQ_INT(rk_run_get(eng, "run_nosuch", &r, &e), -RK_ENOTFOUND);
	CHECK(strstr(e.message, "no run 'run_nosuch'") != NULL);
}

int main(void)
{
	rk_engine_hooks_init();
	setenv("RAKAZO_NO_WORKER", "1", 1);
	unsetenv("RAKAZO_SPACE");
	unsetenv("RAKAZO_JUDGE_MODEL");
	unsetenv("RAKAZO_MASTER_KEY");
	RUN(origin_checks);
	RUN(auth_specs);
	RUN(redaction_forms);
	RUN(redaction_every_form);
	RUN(redaction_stream);
	RUN(redaction_patterns);
	RUN(secret_store_binds_bot);
	RUN(secret_request_sends_and_redacts);
	RUN(memory_isolation_and_revisions);
	RUN(memory_search_ranks);
	RUN(approval_precedence);
	RUN(approval_always_and_webhook);
	RUN(approval_waits_for_a_person);
	RUN(approval_judge);
	RUN(approval_judge_hook);
	RUN(authz_spaces_and_grants);
	RUN(target_grammar_and_prefixes);
	RUN(run_by_prefix);
	RUN(runs_take_waiting_approval);
	stop_echo();
	rk_engine_free(eng);
	return check_summary("trust");
}
