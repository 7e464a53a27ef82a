/* The model's configuration: flags, the environment, the config file, and
 * which protocol, endpoint and key they add up to (the rules are in
 * model.h). */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "engine/agent/model.h"
#include "engine/util/buf.h"
#include "engine/util/fs.h"
#include "engine/util/json.h"
#include "engine/util/log.h"

#define CONFIG_MAX_BYTES (1u << 20)
#define RETRY_AFTER_CAP_MS 60000

/* A vendor's own endpoint, reached by a model name "PREFIX/NAME". */
struct vendor {
	const char *prefix;
	enum rk_model_api api;
	const char *host;
	const char *base_url;
	const char *key_env;
};

static const struct vendor vendors[] = {
	{"anthropic/", RK_MODEL_API_MESSAGES, "api.anthropic.com", "https://api.anthropic.com/v1", "ANTHROPIC_API_KEY"},
	{"openai/", RK_MODEL_API_RESPONSES, "api.openai.com", "https://api.openai.com/v1", "OPENAI_API_KEY"},
};
#define NVENDORS (sizeof(vendors) / sizeof(vendors[0]))

static const struct vendor *vendor_of_api(enum rk_model_api api)
{
	for (size_t i = 0; i < NVENDORS; i++)
		if (vendors[i].api == api)
			return &vendors[i];
	return NULL;
}

static const struct vendor *vendor_of_model(const char *model)
{
	for (size_t i = 0; model && i < NVENDORS; i++)
		if (strncmp(model, vendors[i].prefix, strlen(vendors[i].prefix)) == 0)
			return &vendors[i];
	return NULL;
}

static const char *env(const char *name)
{
	const char *v = getenv(name);
	return v && *v ? v : NULL;
}

/* "https://host/v1/" and "https://host/v1/chat/completions" (for chat; the
 * protocol's own path for the others) both become "https://host/v1". */
static int normalize_base_url(const char *in, const char *from, enum rk_model_api api, char **out, struct rk_error *err)
{
	if (strncmp(in, "http://", 7) != 0 && strncmp(in, "https://", 8) != 0)
		return rk_error_set(err, RK_EINVALID,
				    "the model base URL from %s must start with http:// or https:// (as in "
				    "https://api.openai.com/v1)",
				    from);
	char *s = rk_xstrdup(in);
	size_t n = strlen(s);
	while (n > 0 && s[n - 1] == '/')
		s[--n] = '\0';
	const char *suffix = api == RK_MODEL_API_MESSAGES    ? "/messages"
			     : api == RK_MODEL_API_RESPONSES ? "/responses"
							     : "/chat/completions";
	size_t sl = strlen(suffix);
	if (n >= sl && strcmp(s + n - sl, suffix) == 0)
		s[n -= sl] = '\0';
	while (n > 0 && s[n - 1] == '/')
		s[--n] = '\0';
	if (strchr(s, ' ') || strchr(s, '\n') || strchr(s, '\r')) {
		free(s);
		return rk_error_set(err, RK_EINVALID, "the model base URL from %s has whitespace in it", from);
	}
	*out = s;
	return 0;
}

static int read_config_file(const char *path, int must_exist, cJSON **model_obj, cJSON **doc_out, struct rk_error *err)
{
	struct rk_buf b = RK_BUF_INIT;
	struct rk_error e;
	*model_obj = NULL;
	*doc_out = NULL;
	rk_buf_init(&b);
	int rc = rk_fs_read_all(path, CONFIG_MAX_BYTES, &b, &e);
	if (rc == -RK_ENOTFOUND && !must_exist) {
		rk_buf_release(&b);
		return 0;
	}
	if (rc < 0) {
		rk_buf_release(&b);
		return rk_error_set(err, e.code, "cannot read the config file: %s", e.message);
	}
	char what[600];
	snprintf(what, sizeof(what), "the config file %s", path);
	cJSON *doc = rk_json_parse(b.data, b.len, what, err);
	rk_buf_release(&b);
	if (!doc)
		return -RK_EINVALID;
	if (!cJSON_IsObject(doc)) {
		cJSON_Delete(doc);
		return rk_error_set(err, RK_EINVALID, "the config file %s must hold a JSON object", path);
	}
	cJSON *m = cJSON_GetObjectItemCaseSensitive(doc, "model");
	if (m && !cJSON_IsObject(m)) {
		cJSON_Delete(doc);
		return rk_error_set(err, RK_EINVALID,
				    "the config file %s: \"model\" must be an object such as "
				    "{\"base_url\": \"https://api.openai.com/v1\", \"model\": \"gpt-4o\"}",
				    path);
	}
	*model_obj = m;
	*doc_out = doc;
	return 0;
}

static int host_is(const char *url, const char *domain)
{
	const char *h = strstr(url, "://");
	if (!h)
		return 0;
	h += 3;
	size_t hl = strcspn(h, ":/");
	size_t dl = strlen(domain);
	if (hl < dl || strncmp(h + hl - dl, domain, dl) != 0)
		return 0;
	return hl == dl || h[hl - dl - 1] == '.';
}

/* The protocol named by flags, the environment or the file; 0 and *set = 0
 * when none names one. */
static int explicit_api(const char *flag, const char *file, enum rk_model_api *api, int *set, struct rk_error *err)
{
	const char *name = flag, *from = "--api";
	if (!name && env("RAKAZO_MODEL_API"))
		name = env("RAKAZO_MODEL_API"), from = "RAKAZO_MODEL_API";
	if (!name && file && *file)
		name = file, from = "the config file";
	*set = 0;
	if (!name)
		return 0;
	for (int i = RK_MODEL_API_CHAT; i <= RK_MODEL_API_RESPONSES; i++) {
		if (strcmp(name, rk_model_api_name((enum rk_model_api)i)) == 0) {
			*api = (enum rk_model_api)i;
			*set = 1;
			return 0;
		}
	}
	return rk_error_set(err, RK_EUSAGE, "unknown model API '%.64s' from %s: use chat, messages or responses", name,
			    from);
}

/* "price": {"input", "output", "cached", "cache_write"} in USD per million
 * tokens (absent: NULL, nothing set); cached and cache_write default to
 * input. */
static int read_price(const cJSON *o, struct rk_model_price *p, struct rk_error *err)
{
	if (!o)
		return 0;
	if (!cJSON_IsObject(o))
		return rk_error_set(err, RK_EINVALID,
				    "the config file: \"price\" must be an object {\"input\": USD, \"output\": USD, "
				    "\"cached\": USD, \"cache_write\": USD} (per million tokens)");
	static const char *const keys[] = {"input", "output", "cached", "cache_write"};
	double v[4];
	for (int i = 0; i < 4; i++) {
		const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, keys[i]);
		if (!x && i >= 2) {
			v[i] = v[0];
			continue;
		}
		if (!x || !cJSON_IsNumber(x) || x->valuedouble < 0 || x->valuedouble > 1e6)
			return rk_error_set(err, RK_EINVALID,
					    "the config file: price.%s must be a number of USD per million tokens (0 "
					    "or more)%s",
					    keys[i], x ? "" : "; it is required");
		v[i] = x->valuedouble;
	}
	const cJSON *k;
	cJSON_ArrayForEach(k, o)
	{
		int ok = 0;
		for (int i = 0; i < 4; i++)
			ok |= !strcmp(k->string, keys[i]);
		if (!ok)
			return rk_error_set(err, RK_EINVALID,
					    "the config file: price has no key \"%s\" (input, output, cached, "
					    "cache_write)",
					    k->string);
	}
	*p = (struct rk_model_price){.known = 1,
				     .input = v[0],
				     .output = v[1],
				     .cached = v[2],
				     .cache_write = v[3],
				     .source = "config file"};
	return 0;
}

/* Input windows by model name prefix, longest prefix first where they
 * overlap (the vendors' model pages). */
static const struct {
	const char *prefix;
	int64_t tokens;
} windows[] = {
	{"computer-use-preview", 8192},
	{"claude-", 200000},
	{"gpt-5", 400000},
	{"gpt-4.1", 1047576},
	{"gpt-4o", 128000},
	{"o3", 200000},
	{"o4-mini", 200000},
};

int64_t rk_model_context_window(enum rk_model_api api, const char *model)
{
	for (size_t i = 0; model && i < sizeof(windows) / sizeof(windows[0]); i++)
		if (strncmp(model, windows[i].prefix, strlen(windows[i].prefix)) == 0)
			return windows[i].tokens;
	return api == RK_MODEL_API_MESSAGES ? 200000 : api == RK_MODEL_API_RESPONSES ? 128000 : 32768;
}

/* "compact_at" (a fraction of the window, 0 turns compaction off) and
 * "compact" ("auto", "summary", "off", or true / false). */
static int compact_settings(const cJSON *file, struct rk_model_config *cfg, struct rk_error *err)
{
	const cJSON *at = cJSON_GetObjectItemCaseSensitive(file, "compact_at");
	if (at) {
		if (!cJSON_IsNumber(at) || at->valuedouble < 0 || at->valuedouble >= 1)
			return rk_error_set(err, RK_EINVALID,
					    "the config file: \"compact_at\" must be a fraction of the context window "
					    "from 0 (never compact) to below 1, such as 0.8");
		cfg->compact_at = at->valuedouble;
	}
	const cJSON *c = cJSON_GetObjectItemCaseSensitive(file, "compact");
	if (!c)
		return 0;
	if (cJSON_IsBool(c)) {
		cfg->compact = cJSON_IsTrue(c) ? RK_MODEL_COMPACT_AUTO : RK_MODEL_COMPACT_OFF;
		return 0;
	}
	static const char *const names[] = {
		[RK_MODEL_COMPACT_AUTO] = "auto", [RK_MODEL_COMPACT_SUMMARY] = "summary", [RK_MODEL_COMPACT_OFF] = "off"};
	for (int i = 0; cJSON_IsString(c) && i <= RK_MODEL_COMPACT_OFF; i++)
		if (!strcmp(c->valuestring, names[i])) {
			cfg->compact = (enum rk_model_compact_mode)i;
			return 0;
		}
	return rk_error_set(err, RK_EINVALID,
			    "the config file: \"compact\" must be \"auto\", \"summary\", \"off\", true or false");
}

int rk_model_config_load(const struct rk_model_flags *flags, const char *data_dir, struct rk_model_config *cfg,
			 struct rk_error *err)
{
	static const struct rk_model_flags none = RK_MODEL_FLAGS_INIT;
	if (!flags)
		flags = &none;
	memset(cfg, 0, sizeof(*cfg));
	cfg->timeout_ms = RK_MODEL_TIMEOUT_MS_DEFAULT;
	cfg->connect_timeout_ms = RK_MODEL_CONNECT_TIMEOUT_MS_DEFAULT;
	cfg->max_retries = RK_MODEL_RETRIES_DEFAULT;
	cfg->backoff_ms = RK_MODEL_BACKOFF_MS_DEFAULT;
	cfg->retry_after_cap_ms = RETRY_AFTER_CAP_MS;
	cfg->keep_images = RK_MODEL_KEEP_IMAGES_DEFAULT;
	cfg->prune_block = RK_MODEL_PRUNE_BLOCK_DEFAULT;
	cfg->prompt_cache = 1;
	cfg->stream = 1;
	cfg->compact_at = RK_MODEL_COMPACT_AT_DEFAULT;

	int must_exist = 1;
	if (flags->config_path)
		cfg->config_path = rk_xstrdup(flags->config_path);
	else if (env("RAKAZO_CONFIG"))
		cfg->config_path = rk_xstrdup(env("RAKAZO_CONFIG"));
	else if (data_dir) {
		cfg->config_path = rk_path_join(data_dir, "config.json");
		must_exist = 0;
	}
	cJSON *doc = NULL, *file = NULL;
	int rc = 0;
	if (cfg->config_path && (rc = read_config_file(cfg->config_path, must_exist, &file, &doc, err)) < 0)
		goto fail;

	const char *what = "the config file";
	int upload = -1; /* "auto" */
	const char *fbase = NULL, *fmodel = NULL, *fkey = NULL, *fapi = NULL;
	int64_t v;
	if (file) {
		if ((rc = rk_json_get_string(file, "base_url", 0, &fbase, what, err)) < 0 ||
		    (rc = rk_json_get_string(file, "model", 0, &fmodel, what, err)) < 0 ||
		    (rc = rk_json_get_string(file, "api_key", 0, &fkey, what, err)) < 0 ||
		    (rc = rk_json_get_string(file, "api", 0, &fapi, what, err)) < 0)
			goto fail;
		if ((rc = rk_json_get_int(file, "timeout_s", 1, 86400, cfg->timeout_ms / 1000, &v, what, err)) < 0)
			goto fail;
		cfg->timeout_ms = v * 1000;
		if ((rc = rk_json_get_int(file, "max_retries", 0, 20, cfg->max_retries, &v, what, err)) < 0)
			goto fail;
		cfg->max_retries = (int)v;
		if ((rc = rk_json_get_int(file, "max_tokens", 0, 10000000, 0, &v, what, err)) < 0)
			goto fail;
		cfg->max_tokens = (int)v;
		if ((rc = rk_json_get_int(file, "keep_images", 1, 100, cfg->keep_images, &v, what, err)) < 0)
			goto fail;
		cfg->keep_images = (int)v;
		if ((rc = rk_json_get_int(file, "prune_block", 0, 100, cfg->prune_block, &v, what, err)) < 0)
			goto fail;
		cfg->prune_block = (int)v;
		if ((rc = rk_json_get_bool(file, "prompt_cache", cfg->prompt_cache, &cfg->prompt_cache, what, err)) < 0)
			goto fail;
		if ((rc = rk_json_get_bool(file, "stream", cfg->stream, &cfg->stream, what, err)) < 0)
			goto fail;
		const cJSON *up = cJSON_GetObjectItemCaseSensitive(file, "upload_images");
		if (cJSON_IsBool(up)) {
			upload = cJSON_IsTrue(up);
		} else if (up && !cJSON_IsNull(up) && !(cJSON_IsString(up) && !strcmp(up->valuestring, "auto"))) {
			rc = rk_error_set(err, RK_EINVALID, "%s: upload_images must be true, false or \"auto\"", what);
			goto fail;
		}
		if ((rc = read_price(cJSON_GetObjectItemCaseSensitive(file, "price"), &cfg->price, err)) < 0)
			goto fail;
		if ((rc = rk_json_get_int(file, "context_window", 0, INT64_C(100000000), 0, &v, what, err)) < 0)
			goto fail;
		cfg->context_window = v;
		if ((rc = compact_settings(file, cfg, err)) < 0)
			goto fail;
	}

	const char *base = NULL, *base_from = NULL;
	if (flags->base_url)
		base = flags->base_url, base_from = "--model-base-url";
	else if (env("RAKAZO_MODEL_BASE_URL"))
		base = env("RAKAZO_MODEL_BASE_URL"), base_from = "RAKAZO_MODEL_BASE_URL";
	else if (fbase && *fbase)
		base = fbase, base_from = "the config file";
	const char *model = flags->model ? flags->model : env("RAKAZO_MODEL") ? env("RAKAZO_MODEL") : fmodel;

	/* the protocol: named, else the vendor's when the name is
	 * "vendor/NAME" and no other endpoint is set (a router's model names
	 * look the same and stay chat) */
	int named;
	if ((rc = explicit_api(flags->api, fapi, &cfg->api, &named, err)) < 0)
		goto fail;
	const struct vendor *vm = vendor_of_model(model);
	int direct = vm && (!base || host_is(base, vm->host));
	if (!named)
		cfg->api = direct ? vm->api : RK_MODEL_API_CHAT;
	if (direct && vm->api == cfg->api)
		model += strlen(vm->prefix);

	const struct vendor *va = vendor_of_api(cfg->api);
	if (!base && va)
		base = va->base_url, base_from = "the default";
	if (!base) {
		rc = rk_error_set(err, RK_EUSAGE,
				  "no model configured: set RAKAZO_MODEL_BASE_URL (e.g. https://api.openai.com/v1), "
				  "RAKAZO_MODEL and RAKAZO_API_KEY, or put {\"model\": {\"base_url\": ..., \"model\": "
				  "..., \"api_key\": ...}} in %s",
				  cfg->config_path ? cfg->config_path : "DATA_DIR/config.json");
		goto fail;
	}
	if ((rc = normalize_base_url(base, base_from, cfg->api, &cfg->base_url, err)) < 0)
		goto fail;

	if (!model || !*model) {
		rc = rk_error_set(err, RK_EUSAGE,
				  "no model configured: the endpoint %s is set but no model name is; set RAKAZO_MODEL "
				  "(e.g. %s) or \"model\" in %s",
				  cfg->base_url,
				  cfg->api == RK_MODEL_API_MESSAGES    ? "claude-sonnet-4-5"
				  : cfg->api == RK_MODEL_API_RESPONSES ? "gpt-5"
								       : "gpt-4o",
				  cfg->config_path ? cfg->config_path : "DATA_DIR/config.json");
		goto fail;
	}
	cfg->model = rk_xstrdup(model);
	if (!cfg->price.known)
		rk_model_price_lookup(cfg->model, &cfg->price);

	/* an explicit key wins over the vendors' variables; of those, the
	 * protocol's vendor's, and for chat the one that matches the endpoint
	 * first, so an OpenAI key is not offered to OpenRouter when both are set */
	const char *key = NULL;
	if (flags->api_key)
		key = flags->api_key, cfg->key_source = "--api-key";
	else if (env("RAKAZO_API_KEY"))
		key = env("RAKAZO_API_KEY"), cfg->key_source = "RAKAZO_API_KEY";
	else if (fkey && *fkey) {
		key = fkey, cfg->key_source = "config file";
		struct stat st;
		if (stat(cfg->config_path, &st) == 0 && (st.st_mode & 077))
			rk_log(RK_LOG_WARN, "model: %s holds an API key and others can read it; chmod 600 it",
			       cfg->config_path);
	} else if (va) {
		if (env(va->key_env))
			key = env(va->key_env), cfg->key_source = va->key_env;
	} else if (host_is(cfg->base_url, "openrouter.ai") && env("OPENROUTER_API_KEY"))
		key = env("OPENROUTER_API_KEY"), cfg->key_source = "OPENROUTER_API_KEY";
	else if (env("OPENAI_API_KEY"))
		key = env("OPENAI_API_KEY"), cfg->key_source = "OPENAI_API_KEY";
	else if (env("OPENROUTER_API_KEY"))
		key = env("OPENROUTER_API_KEY"), cfg->key_source = "OPENROUTER_API_KEY";
	if (key && (strchr(key, '\n') || strchr(key, '\r'))) {
		rc = rk_error_set(err, RK_EINVALID, "the API key from %s has a line break in it", cfg->key_source);
		goto fail;
	}
	cfg->api_key = rk_xstrdup(key);

	if (flags->timeout_ms > 0)
		cfg->timeout_ms = flags->timeout_ms;
	if (flags->max_retries >= 0)
		cfg->max_retries = flags->max_retries;
	if (flags->max_tokens > 0)
		cfg->max_tokens = flags->max_tokens;
	if (flags->keep_images > 0)
		cfg->keep_images = flags->keep_images;
	if (flags->no_stream)
		cfg->stream = 0;
	/* chat has no Files API (local servers): inline whatever the file says */
	cfg->upload_images = cfg->api != RK_MODEL_API_CHAT && upload != 0;
	if (cfg->context_window <= 0)
		cfg->context_window = rk_model_context_window(cfg->api, cfg->model);
	cJSON_Delete(doc);
	return 0;
fail:
	cJSON_Delete(doc);
	rk_model_config_release(cfg);
	return rc;
}

void rk_model_config_release(struct rk_model_config *cfg)
{
	if (!cfg)
		return;
	free(cfg->base_url);
	free(cfg->model);
	if (cfg->api_key) {
		memset(cfg->api_key, 0, strlen(cfg->api_key));
		free(cfg->api_key);
	}
	free(cfg->config_path);
	free(cfg->cache_key);
	memset(cfg, 0, sizeof(*cfg));
}
