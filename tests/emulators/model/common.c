/* What the three protocols share: the request summary, assertions, tool
 * call arguments, ids, token estimates and server-sent events. */

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "engine/util/id.h"
#include "engine/util/json.h"
#include "tests/emulators/model/model.h"

const char *protocol_name(enum protocol p)
{
	return p == PROTO_MESSAGES ? "messages" : p == PROTO_RESPONSES ? "responses" : "chat";
}

int has_bearer(const struct http_in *h)
{
	const char *a = h->authorization;
	return a && strncasecmp(a, "Bearer ", 7) == 0 && a[7];
}

void summary_init(struct summary *s, enum protocol p)
{
	memset(s, 0, sizeof(*s));
	s->proto = p;
	s->last_tool = -1;
	s->store = 1;
	s->tools = cJSON_CreateArray();
	s->roles = cJSON_CreateArray();
	s->seen = cJSON_CreateArray();
	rk_buf_init(&s->all_text);
}

void summary_release(struct summary *s)
{
	free(s->last_tool_text);
	rk_buf_release(&s->all_text);
	cJSON_Delete(s->tools);
	cJSON_Delete(s->roles);
	cJSON_Delete(s->seen);
	cJSON_Delete(s->acknowledged);
	prompt_free(s->prompt);
}

void summary_add_image(struct summary *s, const struct image *img)
{
	s->images++;
	s->inline_chars += img->encoded;
	if (!img->ok) {
		if (!s->bad_images++)
			snprintf(s->bad_image_why, sizeof(s->bad_image_why), "image %d: %s", s->images, img->why);
	} else {
		const cJSON *h;
		cJSON_ArrayForEach(h, s->seen)
		{
			if (strcmp(h->valuestring, img->hex) == 0)
				s->duplicate_images++;
		}
		cJSON_AddItemToArray(s->seen, cJSON_CreateString(img->hex));
		int edge = img->w > img->h ? img->w : img->h;
		if (edge > s->max_long_edge)
			s->max_long_edge = edge;
	}
	s->last_image = *img;
}

void summary_add_text(struct summary *s, const char *text)
{
	rk_buf_printf(&s->all_text, "%s\n", text);
}

void record(struct verdict *v, const char *name, int ok, const char *fmt, ...)
{
	char detail[500];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	cJSON *a = cJSON_CreateObject();
	cJSON_AddStringToObject(a, "name", name);
	cJSON_AddBoolToObject(a, "ok", ok);
	cJSON_AddStringToObject(a, "detail", detail);
	cJSON_AddItemToArray(v->list, a);
	if (!ok && !v->first_failed[0])
		snprintf(v->first_failed, sizeof(v->first_failed), "%s: %s", name, detail);
}

void refuse(struct verdict *v, const char *name, const char *param, const char *code, const char *msg)
{
	record(v, name, 0, "%s", msg);
	if (v->refused_by)
		return;
	v->refused_by = name;
	snprintf(v->refusal, sizeof(v->refusal), "%s", msg);
	v->refusal_param = param;
	v->refusal_code = code;
}

cJSON *call_arguments_object(const cJSON *call, const char *last_session, const char **raw)
{
	const cJSON *args = cJSON_GetObjectItemCaseSensitive(call, "arguments");
	*raw = NULL;
	cJSON *given;
	if (cJSON_IsString(args)) {
		given = cJSON_Parse(args->valuestring);
		if (!cJSON_IsObject(given)) {
			cJSON_Delete(given);
			*raw = args->valuestring;
			return NULL;
		}
		return given; /* as written: no substitution in raw text */
	}
	given = args ? cJSON_Duplicate(args, 1) : cJSON_CreateObject();
	cJSON *m;
	cJSON_ArrayForEach(m, given)
	{
		if (cJSON_IsString(m) && !strcmp(m->valuestring, "$last_session"))
			cJSON_SetValuestring(m, last_session ? last_session : "");
	}
	return given;
}

char *call_arguments(const cJSON *call, const char *last_session)
{
	const cJSON *args = cJSON_GetObjectItemCaseSensitive(call, "arguments");
	if (cJSON_IsString(args))
		return rk_xstrdup(args->valuestring); /* raw, maybe malformed */
	const char *raw;
	cJSON *given = call_arguments_object(call, last_session, &raw);
	char *a = cJSON_PrintUnformatted(given);
	cJSON_Delete(given);
	return a;
}

char *vendor_id(const char *prefix, int n, int hex)
{
	static const char alnum[] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
	size_t pl = strlen(prefix);
	char *id = rk_xmalloc(pl + (size_t)n + 1);
	memcpy(id, prefix, pl);
	unsigned char r[64];
	if (n > (int)sizeof(r))
		n = (int)sizeof(r);
	rk_random_bytes(r, (size_t)n);
	for (int i = 0; i < n; i++)
		id[pl + (size_t)i] = hex ? "0123456789abcdef"[r[i] % 16] : alnum[r[i] % 62];
	id[pl + (size_t)n] = '\0';
	return id;
}

/* The base64 images in v (a Messages source, or a data URL as OpenAI
 * sends them): their characters and what they cost. */
static void images_in(const cJSON *v, size_t *chars, long *tokens)
{
	struct image img;
	const char *data = NULL;
	if (cJSON_IsString(v) && strncmp(v->valuestring, "data:image/", 11) == 0) {
		data = v->valuestring;
		image_check_data_url(data, &img);
	} else if (cJSON_IsObject(v) && strcmp(rk_json_string(v, "type", ""), "base64") == 0 &&
		   strncmp(rk_json_string(v, "media_type", ""), "image/", 6) == 0 &&
		   (data = rk_json_string(v, "data", NULL))) {
		image_check_base64(rk_json_string(v, "media_type", ""), data, &img);
	}
	if (data) {
		*chars += strlen(data);
		/* about what Claude charges (w*h/750); good enough for GPT too */
		*tokens += img.ok ? ((long)img.w * img.h + 749) / 750 : 0;
		return;
	}
	/* an uploaded image costs what its bytes would inline: a Messages file
	 * source, a Responses input_image or computer_screenshot by file_id */
	const char *type = cJSON_IsObject(v) ? rk_json_string(v, "type", "") : "";
	const char *file_id = cJSON_IsObject(v) ? rk_json_string(v, "file_id", NULL) : NULL;
	const struct stored_file *f = file_id ? files_find(file_id) : NULL;
	if (f && (!strcmp(type, "file") || !strcmp(type, "input_image") || !strcmp(type, "computer_screenshot"))) {
		image_check_bytes(f->mime, f->bytes.data, f->bytes.len, &img);
		*tokens += img.ok ? ((long)img.w * img.h + 749) / 750 : 0;
		return;
	}
	const cJSON *c;
	cJSON_ArrayForEach(c, v)
	{
		images_in(c, chars, tokens);
	}
}

long json_tokens(const cJSON *v, const char *printed)
{
	char *own = printed ? NULL : cJSON_PrintUnformatted(v);
	size_t len = strlen(printed ? printed : own), chars = 0;
	long tokens = 0;
	free(own);
	images_in(v, &chars, &tokens);
	size_t text = len > chars ? len - chars : 0;
	return (long)((text + 3) / 4) + tokens;
}

size_t utf8_piece(const char *s, size_t len, size_t size)
{
	if (len <= size)
		return len;
	size_t n = size;
	while (n < len && ((unsigned char)s[n] & 0xC0) == 0x80)
		n++; /* not inside a character */
	return n;
}

void sse_event(struct rk_buf *out, const char *name, const cJSON *data)
{
	char *text = cJSON_PrintUnformatted(data);
	if (name)
		rk_buf_printf(out, "event: %s\n", name);
	rk_buf_printf(out, "data: %s\n\n", text);
	free(text);
}
