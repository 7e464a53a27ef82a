/* engine/api, api_db: tokens, rights, pairing secrets and the request
 * handler without HTTP, on real SQLite in a temporary DATA_DIR. */

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/agent/hooks.h"
#include "api/api.h"
#include "engine/state/engine.h"
#include "engine/util/buf.h"
#include "engine/util/fs.h"
#include "check.h"
#include "fresh_db.h"

static struct rk_engine *eng;
static char *dir;

/* A request to a server that offers fake, as the test suites start it
 * (rakazo serve --providers fake,docker). */
static void handle(const char *method, const char *path, const char *auth, const char *body,
		   struct rk_api_response *out)
{
	static const char *const providers[] = {"fake", "docker", NULL};
	struct rk_api_request req = {.method = method, .path = path, .authorization = auth, .body = body,
				     .body_len = body ? strlen(body) : 0, .providers = providers};
	rk_api_handle(eng, &req, out);
}

static const char *category(const struct rk_api_response *r)
{
	const cJSON *e = cJSON_GetObjectItemCaseSensitive(r->doc, "error");
	const cJSON *c = cJSON_GetObjectItemCaseSensitive(e, "category");
	return cJSON_IsString(c) ? c->valuestring : "";
}

TEST(tokens_hashed_verified_revoked)
{
	char *secret = NULL;
	struct rk_api_token t = {0}, v = {0};
	struct rk_error e;
	CHECK_EQ_INT(rk_api_token_create(eng->db, "ci", NULL, &secret, &t, &e), 0);
	CHECK(secret && !strncmp(secret, t.id, strlen(t.id)) && secret[strlen(t.id)] == '.');
	CHECK_EQ_INT(rk_api_token_create(eng->db, "ci", NULL, &(char *){NULL}, &v, &e), -RK_ECONFLICT);
	CHECK_EQ_INT(rk_api_token_verify(eng->db, secret, &v, &e), 0);
	CHECK(v.id && !strcmp(v.id, t.id) && !v.bot_id);
	rk_api_token_release(&v);
	/* one character off, a missing secret, an unknown id: all denied */
	char *bad = rk_xstrdup(secret);
	bad[strlen(bad) - 1] = bad[strlen(bad) - 1] == '0' ? '1' : '0';
	CHECK_EQ_INT(rk_api_token_verify(eng->db, bad, &v, &e), -RK_EDENIED);
	CHECK_EQ_INT(rk_api_token_verify(eng->db, t.id, &v, &e), -RK_EDENIED);
	CHECK_EQ_INT(rk_api_token_verify(eng->db, "tok_nosuch.00", &v, &e), -RK_EDENIED);
	struct rk_api_token rv = {0};
	CHECK_EQ_INT(rk_api_token_revoke(eng->db, "ci", &rv, &e), 0);
	CHECK(rv.revoked_at > 0);
	CHECK_EQ_INT(rk_api_token_verify(eng->db, secret, &v, &e), -RK_EDENIED);
	CHECK_EQ_INT(rk_api_token_revoke(eng->db, "ci", &rv, &e), -RK_ENOTFOUND);
	CHECK_EQ_INT(rk_api_token_create(eng->db, "bad name", NULL, &(char *){NULL}, &v, &e), -RK_EINVALID);
	rk_api_token_release(&rv);
	rk_api_token_release(&t);
	free(bad);
	free(secret);
}

TEST(rights_put_get_delete)
{
	struct rk_api_right r = {0};
	struct rk_error e;
	CHECK_EQ_INT(rk_api_right_get(eng->db, "cmp_x", "b1", &r, &e), -RK_ENOTFOUND);
	CHECK_EQ_INT(rk_api_right_put(eng->db, "cmp_x", "b1", "tok_a", &r, &e), 0);
	CHECK(!strcmp(r.granted_by, "tok_a"));
	rk_api_right_release(&r);
	CHECK_EQ_INT(rk_api_right_put(eng->db, "cmp_x", "b1", "tok_b", &r, &e), 0); /* idempotent: the first stays */
	CHECK(!strcmp(r.granted_by, "tok_a"));
	rk_api_right_release(&r);
	struct rk_api_right *rs = NULL;
	size_t n = 0;
	CHECK_EQ_INT(rk_api_right_list(eng->db, "cmp_x", &rs, &n, &e), 0);
	CHECK_EQ_INT(n, 1);
	for (size_t i = 0; i < n; i++)
		rk_api_right_release(&rs[i]);
	free(rs);
	CHECK_EQ_INT(rk_api_right_delete(eng->db, "cmp_x", "b1", &e), 0);
	CHECK_EQ_INT(rk_api_right_delete(eng->db, "cmp_x", "b1", &e), -RK_ENOTFOUND);
	CHECK_EQ_INT(rk_api_right_put(eng->db, "cmp_x", "no/slash", "t", &r, &e), -RK_EINVALID);
}

TEST(pairing_secret)
{
	char *id = NULL, *secret = NULL, *got = NULL;
	struct rk_error e;
	CHECK_EQ_INT(rk_api_pair_create(eng->db, "laptop", "user:t", &id, &secret, &e), 0);
	CHECK_EQ_INT(rk_api_pair_verify(eng->db, secret, &got, &e), 0);
	CHECK(got && !strcmp(got, id));
	free(got);
	got = NULL;
	secret[strlen(secret) - 1] ^= 1;
	CHECK_EQ_INT(rk_api_pair_verify(eng->db, secret, &got, &e), -RK_EDENIED);
	struct rk_computer c = {0};
	CHECK_EQ_INT(rk_db_computer_get(eng->db, id, &c, &e), 0);
	CHECK(!strcmp(c.kind, "paired") && !strcmp(c.state, "offline") && c.pause_after < 0 && !c.desktop);
	rk_computer_release(&c);
	free(id);
	free(secret);
}

TEST(handler_routes_and_errors)
{
	struct rk_api_response r;
	handle("GET", "/v1/health", NULL, NULL, &r);
	CHECK_EQ_INT(r.status, 200);
	rk_api_response_release(&r);
	handle("GET", "/v1/nosuch", NULL, NULL, &r);
	CHECK_EQ_INT(r.status, 404);
	CHECK(!strcmp(category(&r), "route_not_found"));
	rk_api_response_release(&r);
	handle("PATCH", "/v1/computers/cmp_x", NULL, NULL, &r);
	CHECK_EQ_INT(r.status, 405);
	rk_api_response_release(&r);
	handle("GET", "/v1/computers", NULL, NULL, &r);
	CHECK_EQ_INT(r.status, 401);
	CHECK(!strcmp(category(&r), "unauthorized"));
	rk_api_response_release(&r);
	char *secret = NULL;
	struct rk_api_token t = {0};
	struct rk_error e;
	CHECK_EQ_INT(rk_api_token_create(eng->db, "h", NULL, &secret, &t, &e), 0);
	char *auth = rk_xasprintf("Bearer %s", secret);
	handle("POST", "/v1/computers", auth, "{\"commandKey\":", &r);
	CHECK_EQ_INT(r.status, 400);
	CHECK(!strcmp(category(&r), "invalid_request"));
	const cJSON *eid = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(r.doc, "error"), "errorId");
	CHECK(cJSON_IsString(eid) && !strncmp(eid->valuestring, "err_", 4));
	rk_api_response_release(&r);
	handle("GET", "/v1/computers", auth, NULL, &r);
	CHECK_EQ_INT(r.status, 200);
	/* the caller owns what it starts */
	CHECK(!strncmp(eng->owner, "api:tok_", 8));
	rk_api_response_release(&r);
	handle("GET", "/v1/executions/exe_nosuch/observe", auth, NULL, &r);
	CHECK_EQ_INT(r.status, 404);
	CHECK(!r.sse_execution);
	rk_api_response_release(&r);
	free(auth);
	free(secret);
	rk_api_token_release(&t);
}

static int status_of(const char *method, const char *path, const char *auth, const char *body,
		     const char *const *providers, const char *want_in_message)
{
	struct rk_api_response r;
	struct rk_api_request req = {.method = method, .path = path, .authorization = auth, .body = body,
				     .body_len = body ? strlen(body) : 0, .providers = providers};
	rk_api_handle(eng, &req, &r);
	int status = r.status;
	const cJSON *m = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(r.doc, "error"), "message");
	if (want_in_message && !(cJSON_IsString(m) && strstr(m->valuestring, want_in_message))) {
		printf("  %s %s: %s lacks '%s'\n", method, path, cJSON_IsString(m) ? m->valuestring : "(none)",
		       want_in_message);
		status = -1;
	}
	rk_api_response_release(&r);
	return status;
}

/* issue 20: the server offers only its providers; fake is for the operator, never a bot */
TEST(providers_offered)
{
	char *member = NULL, *bot = NULL;
	struct rk_api_token t = {0}, b = {0};
	struct rk_error e;
	REQUIRE(rk_api_token_create(eng->db, "pm", NULL, &member, &t, &e) == 0);
	REQUIRE(rk_api_token_create(eng->db, "pb", "b1", &bot, &b, &e) == 0);
	char *am = rk_xasprintf("Bearer %s", member), *ab = rk_xasprintf("Bearer %s", bot);
	const char *fake = "{\"commandKey\":\"pk\",\"name\":\"pf\",\"source\":{\"provider\":\"fake\"}}";
	const char *const docker_only[] = {"docker", NULL}, *const with_fake[] = {"docker", "fake", NULL};
	CHECK_EQ_INT(status_of("POST", "/v1/computers", am, fake, NULL, "(it offers: none;"), 400);
	CHECK_EQ_INT(status_of("POST", "/v1/computers", am, fake, docker_only, "(it offers: docker;"), 400);
	/* a bot's token creates nothing at all (authz), fake or not */
	CHECK_EQ_INT(status_of("POST", "/v1/computers", ab, fake, with_fake, "a bot cannot create a computer"), 403);
	CHECK_EQ_INT(status_of("POST", "/v1/computers", am, fake, with_fake, NULL), 202);
	struct rk_computer c = {0};
	REQUIRE(rk_db_computer_get(eng->db, "pf", &c, &e) == 0);
	char *path = rk_xasprintf("/v1/computers/%s", c.id);
	CHECK_EQ_INT(status_of("GET", path, am, NULL, with_fake, NULL), 200);
	CHECK_EQ_INT(status_of("GET", path, am, NULL, docker_only, "provider 'fake' is not offered"), 403);
	struct rk_api_right right = {0};
	REQUIRE(rk_api_right_put(eng->db, c.id, "b1", t.id, &right, &e) == 0);
	CHECK_EQ_INT(status_of("GET", path, ab, NULL, with_fake, "never reaches provider 'fake'"), 403);
	rk_api_right_release(&right);
	rk_computer_release(&c);
	free(path);
	free(am);
	free(ab);
	free(member);
	free(bot);
	rk_api_token_release(&t);
	rk_api_token_release(&b);
}

TEST(route_table)
{
	CHECK(rk_api_route_count() >= 28);
	CHECK(rk_api_route_forks("POST", "/v1/computers/cmp_x/sessions"));
	CHECK(rk_api_route_forks("POST", "/v1/computers"));
	CHECK(!rk_api_route_forks("POST", "/v1/computers/cmp_x/sessions/cse_y/input"));
	CHECK(!rk_api_route_forks("GET", "/v1/executions/exe_x"));
	CHECK(!rk_api_route_forks("GET", "/v1/paired/connect"));
	/* the MCP server's one endpoint (issue 24) runs tools that start helpers */
	CHECK(rk_api_route_forks("POST", "/mcp"));
	for (size_t i = 0; i < rk_api_route_count(); i++)
		CHECK(!strncmp(rk_api_route(i)->path, "/v1/", 4) || !strcmp(rk_api_route(i)->path, "/mcp"));
}

/* issue 20: the transport's check on the headers, before any body */
TEST(admit_on_headers)
{
	char *secret = NULL;
	struct rk_api_token t = {0}, rv = {0}, tok = {0};
	struct rk_api_response out;
	struct rk_error e;
	CHECK_EQ_INT(rk_api_token_create(eng->db, "adm", NULL, &secret, &t, &e), 0);
	char *auth = rk_xasprintf("Bearer %s", secret);
	struct rk_api_request req = {.method = "POST", .path = "/v1/computers"};
	CHECK_EQ_INT(rk_api_admit(eng, &req, &tok, &out), 0);
	CHECK_EQ_INT(out.status, 401);
	CHECK(!tok.id);
	rk_api_response_release(&out);
	req.authorization = auth;
	CHECK_EQ_INT(rk_api_admit(eng, &req, &tok, &out), 1);
	CHECK(tok.id && !strcmp(tok.id, t.id) && !tok.bot_id);
	CHECK(!out.status && !out.doc);
	/* the handler takes the admitted caller without a second look */
	struct rk_api_request list = {.method = "GET", .path = "/v1/computers", .admitted = &tok};
	rk_api_handle(eng, &list, &out);
	CHECK_EQ_INT(out.status, 200);
	rk_api_response_release(&out);
	rk_api_token_release(&tok);
	/* unknown routes and methods are answered as the handler would */
	req.path = "/v1/nosuch";
	CHECK_EQ_INT(rk_api_admit(eng, &req, &tok, &out), 0);
	CHECK_EQ_INT(out.status, 404);
	rk_api_response_release(&out);
	req.path = "/v1/health";
	CHECK_EQ_INT(rk_api_admit(eng, &req, &tok, &out), 0);
	CHECK_EQ_INT(out.status, 405);
	rk_api_response_release(&out);
	/* an open route needs no token, and none is named */
	req.method = "GET";
	req.authorization = NULL;
	CHECK_EQ_INT(rk_api_admit(eng, &req, &tok, &out), 1);
	CHECK(!tok.id);
	/* revoked: not live, not admitted */
	CHECK_EQ_INT(rk_api_token_live(eng->db, t.id, &e), 1);
	CHECK_EQ_INT(rk_api_token_revoke(eng->db, "adm", &rv, &e), 0);
	CHECK_EQ_INT(rk_api_token_live(eng->db, t.id, &e), 0);
	CHECK_EQ_INT(rk_api_token_live(eng->db, "tok_nosuch", &e), 0);
	req.method = "POST";
	req.path = "/v1/computers";
	req.authorization = auth;
	CHECK_EQ_INT(rk_api_admit(eng, &req, &tok, &out), 0);
	CHECK_EQ_INT(out.status, 401);
	rk_api_response_release(&out);
	rk_api_token_release(&rv);
	rk_api_token_release(&t);
	free(auth);
	free(secret);
}

int main(void)
{
	rk_engine_hooks_init();
	char tmpl[] = "/tmp/rk-api-XXXXXX";
	dir = mkdtemp(tmpl);
	setenv("RAKAZO_DATA_DIR", dir, 1);
	setenv("RAKAZO_NO_WORKER", "1", 1);
	fresh_database();
	struct rk_error e;
	if (rk_engine_open(&eng, &e) != 0) {
		printf("  engine: %s\n", e.message);
		return 1;
	}
	RUN(tokens_hashed_verified_revoked);
	RUN(rights_put_get_delete);
	RUN(pairing_secret);
	RUN(handler_routes_and_errors);
	RUN(providers_offered);
	RUN(route_table);
	RUN(admit_on_headers);
	rk_engine_free(eng);
	rk_fs_remove_tree(dir, &e);
	return check_summary("api");
}
