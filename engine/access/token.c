/* API tokens as a service over the API's tables (engine/state/db_api.c). */
#include "engine/access/token.h"

#include <stdlib.h>

int rk_token_create(struct rk_engine *eng, const char *name, const char *bot_id, char **secret,
		    struct rk_api_token *out, struct rk_error *err)
{
	return rk_api_token_create(eng->db, name, bot_id, secret, out, err);
}

int rk_token_list(struct rk_engine *eng, cJSON **out, struct rk_error *err)
{
	struct rk_api_token *ts;
	size_t n;
	int r = rk_api_token_list(eng->db, &ts, &n, err);
	if (r)
		return r;
	*out = cJSON_CreateArray();
	for (size_t i = 0; i < n; i++) {
		cJSON_AddItemToArray(*out, rk_api_token_to_json(&ts[i]));
		rk_api_token_release(&ts[i]);
	}
	free(ts);
	return 0;
}

int rk_token_revoke(struct rk_engine *eng, const char *id_or_name, cJSON **out, struct rk_error *err)
{
	struct rk_api_token t = {0};
	int r = rk_api_token_revoke(eng->db, id_or_name, &t, err);
	if (r == 0)
		*out = rk_api_token_to_json(&t);
	rk_api_token_release(&t);
	return r;
}

int rk_token_verify(struct rk_engine *eng, const char *secret, struct rk_api_token *out, struct rk_error *err)
{
	return rk_api_token_verify(eng->db, secret, out, err);
}

int rk_token_live(struct rk_engine *eng, const char *id, struct rk_error *err)
{
	return rk_api_token_live(eng->db, id, err);
}
