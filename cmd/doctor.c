/* rakazo doctor: is the state sound, and what is installed and running. */

#include <archive.h>
#include <cJSON.h>
#include <png.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "engine/util/http.h"
#include "engine/agent/computer_tool.h"
#include "engine/agent/model.h"
#include "cmd.h"
#include "providers/provider.h"
#include "out.h"

static void add_check(cJSON *checks, const char *name, const char *status, const char *detail)
{
	cJSON *c = cJSON_CreateObject();
	cJSON_AddStringToObject(c, "check", name);
	cJSON_AddStringToObject(c, "status", status);
	cJSON_AddStringToObject(c, "detail", detail);
	cJSON_AddItemToArray(checks, c);
}

static int run_doctor(struct cmd_ctx *ctx)
{
	int r = cmd_want_args(ctx, 0, 0, "no arguments");
	if (r)
		return r;
	cJSON *checks = cJSON_CreateArray();
	int failed = 0;
	/* which backend holds the state, named before it is opened: when it is
	 * down, the check that fails says where it was looked for */
	char *backend = rk_engine_backend();
	add_check(checks, "backend", "ok", backend);
	free(backend);
	if (cmd_engine(ctx) != 0) {
		add_check(checks, "state", "fail", ctx->err.message);
		failed = 1;
	} else {
		struct rk_engine_health h;
		struct rk_error e;
		if (rk_engine_health(ctx->eng, &h, &e) != 0) {
			add_check(checks, "database", "fail", e.message);
			failed = 1;
		} else {
			/* what the database says, not what was asked at open: SQLite's
			 * journal mode, PostgreSQL's server version */
			char detail[1024];
			snprintf(detail, sizeof(detail), "%s: integrity %s, schema %d of %d, %s %s", h.path,
				 h.integrity, h.schema, h.migrations, h.pg ? "server" : "journal_mode", h.mode);
			int ok = !strcmp(h.integrity, "ok");
			add_check(checks, "database", ok ? "ok" : "fail", detail);
			failed |= !ok;
			/* WAL lets readers run beside the worker's writes; anything else is worth a look */
			if (!h.pg && strcmp(h.mode, "wal") != 0)
				add_check(checks, "journal mode", "warn",
					  "the database is not in WAL mode: readers wait for writers");
		}
		rk_engine_health_release(&h);
	}
	for (size_t i = 0; rk_providers[i]; i++) {
		const struct rk_provider_ops *p = rk_providers[i];
		struct rk_error e;
		char name[64];
		snprintf(name, sizeof(name), "provider %s", p->name);
		int up = !p->check || p->check(&e) == 0;
		add_check(checks, name, up ? "ok" : "warn", up ? p->summary : e.message);
		if (!p->image_check)
			continue;
		/* a missing image is a warning like a stopped backend: other providers still work */
		snprintf(name, sizeof(name), "%s image", p->name);
		char *detail = NULL;
		if (!up) {
			char *why = rk_xasprintf("not checked: %s", e.message);
			add_check(checks, name, "warn", why);
			free(why);
		} else if (p->image_check(&detail, &e) == 0) {
			add_check(checks, name, "ok", detail);
		} else {
			add_check(checks, name, "warn", e.message);
		}
		free(detail);
	}
	/* the model a run would use: reachable, key accepted, which computer tool */
	struct rk_model_config mc = {0};
	struct rk_error me;
	if (rk_model_config_load(NULL, ctx->eng ? ctx->eng->data_dir : NULL, &mc, &me) != 0) {
		add_check(checks, "model", me.code == RK_EUSAGE ? "warn" : "fail", me.message);
		failed |= me.code != RK_EUSAGE;
	} else {
		char *detail = NULL;
		if (rk_model_probe(&mc, &detail, &me) != 0) {
			add_check(checks, "model", "fail", me.message);
			failed = 1;
		} else {
			struct rk_computer_tool_spec spec;
			int native = rk_computer_tool_spec_for(mc.api, mc.model, &spec, &me);
			char *all = rk_xasprintf("%s; computer tool: %s", detail,
						 native > 0   ? spec.type
						 : native < 0 ? me.message
							      : "computer_observe and computer_act (function tools)");
			add_check(checks, "model", native < 0 ? "fail" : "ok", all);
			failed |= native < 0;
			free(all);
		}
		free(detail);
	}
	rk_model_config_release(&mc);

	char libs[512];
	snprintf(libs, sizeof(libs), "sqlite %s, libpq %s, libcurl %s, cJSON %s, libsodium %s, %s, libpng %s, zstd %s",
		 rk_engine_sqlite_version(), rk_engine_pg_version(), rk_http_version(), cJSON_Version(),
		 sodium_version_string(), archive_version_string(), png_get_libpng_ver(NULL), ZSTD_versionString());
	add_check(checks, "libraries", "ok", libs);

	cJSON *doc = cJSON_CreateObject();
	cJSON_AddStringToObject(doc, "version", RK_VERSION);
	char *dd = rk_data_dir_resolve();
	cJSON_AddStringToObject(doc, "data_dir", dd);
	free(dd);
	cJSON_AddBoolToObject(doc, "ok", !failed);
	if (opt_json) {
		cJSON_AddItemToObject(doc, "checks", checks);
		out_doc(doc);
	} else {
		printf("rakazo %s, data in %s\n", RK_VERSION, cJSON_GetObjectItem(doc, "data_dir")->valuestring);
		cJSON_Delete(doc);
		static const struct out_col cols[] = {{"check", "CHECK"},
						      {"status", "STATUS"},
						      {"detail", "DETAIL"},
						      {0}};
		out_list(checks, cols);
	}
	if (failed)
		return rk_error_set(&ctx->err, RK_EFAILED, "doctor found problems (see above)");
	return 0;
}

const struct cmd_entry cmd_doctor = {
	.name = "doctor",
	.summary = "check the state database and what is installed and running",
	.description = "Runs PRAGMA integrity_check on the state database and reports the schema version\n"
		       "and journal mode, whether each provider's backend answers (dockerd for docker),\n"
		       "whether the computer image (this build's tag, or RAKAZO_IMAGE) is in dockerd,\n"
		       "whether the configured model's endpoint answers and takes its key (GET /models),\n"
		       "and the library versions. Exits 1 when a check fails.",
	.run = run_doctor,
};
