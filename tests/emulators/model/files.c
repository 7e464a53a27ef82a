/* The vendors' Files APIs: an image uploaded once and referred to by id
 * in later requests. Anthropic's (POST /v1/files with the
 * files-api-2025-04-14 beta; BetaFileMetadata, BetaDeletedFile, a
 * {"type":"file","file_id"} image source) as @anthropic-ai/sdk 1.17's
 * resources/beta/files.d.ts and BetaFileImageSource describe them;
 * OpenAI's (POST /v1/files with a purpose; FileObject, FileDeleted, an
 * input_image's or a computer_screenshot's file_id) as openai 7.60's
 * resources/files.d.ts and resources/responses/responses.d.ts do. The
 * bytes stay in memory until deleted, so the image checks and the token
 * estimate see what a file_id stands for. */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "engine/util/id.h"
#include "engine/util/json.h"
#include "tests/emulators/model/model.h"

#define FILES_BETA "files-api-2025-04-14"

static struct stored_file **files;
static size_t nfiles, capfiles;
static long long uploaded_bytes;
static int deleted, duplicates, referenced;
static cJSON *hashes; /* sha256 of every upload, to count repeats */

static struct stored_file *find_any(const char *id)
{
	for (size_t i = 0; id && i < nfiles; i++)
		if (strcmp(files[i]->id, id) == 0)
			return files[i];
	return NULL;
}

const struct stored_file *files_find(const char *id)
{
	const struct stored_file *f = find_any(id);
	return f && !f->deleted ? f : NULL;
}

int files_live(void)
{
	int n = 0;
	for (size_t i = 0; i < nfiles; i++)
		n += !files[i]->deleted;
	return n;
}

cJSON *files_report(void)
{
	cJSON *r = cJSON_CreateObject();
	cJSON_AddNumberToObject(r, "uploaded", (double)nfiles);
	cJSON_AddNumberToObject(r, "uploaded_bytes", (double)uploaded_bytes);
	cJSON_AddNumberToObject(r, "deleted", deleted);
	cJSON_AddNumberToObject(r, "live", files_live());
	cJSON_AddNumberToObject(r, "duplicate_uploads", duplicates);
	cJSON_AddNumberToObject(r, "referenced", referenced);
	return r;
}

void files_release(void)
{
	for (size_t i = 0; i < nfiles; i++) {
		rk_buf_release(&files[i]->bytes);
		free(files[i]);
	}
	free(files);
	files = NULL;
	nfiles = capfiles = 0;
	cJSON_Delete(hashes);
	hashes = NULL;
}

/* ---- errors in each vendor's shape ---- */

static cJSON *error_doc(enum protocol vendor, const char *type, const char *msg, const char *param)
{
	cJSON *doc = cJSON_CreateObject();
	if (vendor == PROTO_MESSAGES)
		cJSON_AddStringToObject(doc, "type", "error");
	cJSON *e = cJSON_AddObjectToObject(doc, "error");
	cJSON_AddStringToObject(e, "type", type);
	cJSON_AddStringToObject(e, "message", msg);
	if (vendor != PROTO_MESSAGES) {
		rk_json_add_str_or_null(e, "param", param);
		cJSON_AddNullToObject(e, "code");
	}
	return doc;
}

/* ---- multipart/form-data ---- */

struct form_part {
	char name[64], filename[128], type[64];
	const char *data;
	size_t len;
};

static const char *find_mem(const char *hay, size_t hl, const char *needle, size_t nl)
{
	return nl <= hl ? memmem(hay, hl, needle, nl) : NULL;
}

/* A header parameter's value (name="value" or name=value) into out. */
static void param(const char *line, size_t len, const char *name, char *out, size_t sz)
{
	out[0] = '\0';
	size_t nl = strlen(name);
	for (size_t i = 0; i + nl + 1 < len; i++) {
		if ((i == 0 || line[i - 1] == ' ' || line[i - 1] == ';') && strncasecmp(line + i, name, nl) == 0 &&
		    line[i + nl] == '=') {
			const char *v = line + i + nl + 1, *end = line + len;
			if (*v == '"') {
				const char *q = memchr(v + 1, '"', (size_t)(end - v - 1));
				end = q ? q : end;
				v++;
			} else {
				const char *semi = memchr(v, ';', (size_t)(end - v));
				end = semi ? semi : end;
			}
			snprintf(out, sz, "%.*s", (int)(end - v), v);
			return;
		}
	}
}

/* Splits a multipart body into up to max parts; -1 with why when it is not one. */
static int form_parse(const char *ctype, const char *body, size_t len, struct form_part *parts, int max, char *why,
		      size_t wsz)
{
	char boundary[200];
	if (!ctype || strncasecmp(ctype, "multipart/form-data", 19) != 0) {
		snprintf(why, wsz, "the body must be multipart/form-data, not %.80s", ctype ? ctype : "(none)");
		return -1;
	}
	param(ctype, strlen(ctype), "boundary", boundary, sizeof(boundary));
	if (!boundary[0]) {
		snprintf(why, wsz, "multipart/form-data without a boundary");
		return -1;
	}
	char delim[210];
	int dl = snprintf(delim, sizeof(delim), "--%s", boundary);
	const char *p = find_mem(body, len, delim, (size_t)dl), *end = body + len;
	int n = 0;
	while (p) {
		p += dl;
		if (end - p >= 2 && p[0] == '-' && p[1] == '-')
			return n; /* the closing delimiter */
		if (end - p < 2 || p[0] != '\r' || p[1] != '\n')
			break;
		p += 2;
		const char *hend = find_mem(p, (size_t)(end - p), "\r\n\r\n", 4);
		if (!hend)
			break;
		char dcrlf[212];
		int cl = snprintf(dcrlf, sizeof(dcrlf), "\r\n%s", delim);
		const char *next = find_mem(hend + 4, (size_t)(end - hend - 4), dcrlf, (size_t)cl);
		if (!next)
			break;
		if (n < max) {
			struct form_part *fp = &parts[n];
			memset(fp, 0, sizeof(*fp));
			for (const char *l = p; l < hend;) {
				const char *eol = find_mem(l, (size_t)(hend - l), "\r\n", 2);
				size_t ll = eol ? (size_t)(eol - l) : (size_t)(hend - l);
				if (ll > 20 && strncasecmp(l, "Content-Disposition:", 20) == 0) {
					param(l, ll, "name", fp->name, sizeof(fp->name));
					param(l, ll, "filename", fp->filename, sizeof(fp->filename));
				} else if (ll > 13 && strncasecmp(l, "Content-Type:", 13) == 0) {
					const char *v = l + 13;
					while (*v == ' ')
						v++;
					snprintf(fp->type, sizeof(fp->type), "%.*s", (int)(ll - (size_t)(v - l)), v);
				}
				l += ll + 2;
			}
			fp->data = hend + 4;
			fp->len = (size_t)(next - fp->data);
			n++;
		}
		p = next + 2;
	}
	snprintf(why, wsz, "the multipart/form-data body is malformed (no closing boundary)");
	return -1;
}

/* ---- the documents ---- */

static cJSON *metadata(const struct stored_file *f)
{
	cJSON *d = cJSON_CreateObject();
	cJSON_AddStringToObject(d, "id", f->id);
	if (f->vendor == PROTO_MESSAGES) {
		char at[32];
		time_t t = (time_t)f->created;
		struct tm tm;
		gmtime_r(&t, &tm);
		strftime(at, sizeof(at), "%Y-%m-%dT%H:%M:%SZ", &tm);
		cJSON_AddStringToObject(d, "type", "file");
		cJSON_AddStringToObject(d, "filename", f->filename);
		cJSON_AddStringToObject(d, "mime_type", f->mime);
		cJSON_AddNumberToObject(d, "size_bytes", (double)f->bytes.len);
		cJSON_AddStringToObject(d, "created_at", at);
		cJSON_AddFalseToObject(d, "downloadable");
		cJSON_AddNullToObject(d, "expires_at");
		cJSON_AddNullToObject(d, "scope");
	} else {
		cJSON_AddStringToObject(d, "object", "file");
		cJSON_AddNumberToObject(d, "bytes", (double)f->bytes.len);
		cJSON_AddNumberToObject(d, "created_at", (double)f->created);
		cJSON_AddStringToObject(d, "filename", f->filename);
		cJSON_AddStringToObject(d, "purpose", f->purpose);
		cJSON_AddStringToObject(d, "status", "processed");
		cJSON_AddNullToObject(d, "expires_at");
		cJSON_AddNullToObject(d, "status_details");
	}
	return d;
}

static const char *const purposes[] = {"assistants", "batch", "fine-tune", "vision", "user_data", "evals", NULL};

static cJSON *upload(enum protocol vendor, const char *ctype, const char *body, size_t len, unsigned *status)
{
	struct form_part parts[8];
	char why[300];
	int n = form_parse(ctype, body, len, parts, 8, why, sizeof(why));
	*status = 400;
	if (n < 0)
		return error_doc(vendor, "invalid_request_error", why, NULL);
	const struct form_part *file = NULL, *purpose = NULL;
	for (int i = 0; i < n; i++) {
		if (!strcmp(parts[i].name, "file"))
			file = &parts[i];
		else if (!strcmp(parts[i].name, "purpose"))
			purpose = &parts[i];
	}
	if (!file || !file->filename[0] || !file->len)
		return error_doc(vendor, "invalid_request_error",
				 "the form needs a non-empty \"file\" part with a filename", "file");
	char purp[32] = "";
	if (vendor == PROTO_RESPONSES) {
		if (purpose)
			snprintf(purp, sizeof(purp), "%.*s", (int)purpose->len, purpose->data);
		int known = 0;
		for (int i = 0; purposes[i]; i++)
			known |= !strcmp(purp, purposes[i]);
		if (!known) {
			snprintf(why, sizeof(why),
				 "'%.40s' is not one of ['assistants', 'batch', 'fine-tune', 'vision', 'user_data', "
				 "'evals'] - 'purpose'",
				 purp[0] ? purp : "(none)");
			return error_doc(vendor, "invalid_request_error", why, "purpose");
		}
	}
	struct stored_file *f = rk_xcalloc(1, sizeof(*f));
	f->vendor = vendor;
	char *id = vendor == PROTO_MESSAGES ? vendor_id("file_011C", 24, 0) : vendor_id("file-", 22, 0);
	snprintf(f->id, sizeof(f->id), "%s", id);
	free(id);
	snprintf(f->filename, sizeof(f->filename), "%s", file->filename);
	int png = file->len >= 8 && memcmp(file->data, "\x89PNG\r\n\x1a\n", 8) == 0;
	int jpeg = file->len >= 3 && memcmp(file->data, "\xff\xd8\xff", 3) == 0;
	snprintf(f->mime, sizeof(f->mime), "%s",
		 file->type[0] ? file->type
		 : png	       ? "image/png"
		 : jpeg	       ? "image/jpeg"
			       : "application/octet-stream");
	snprintf(f->purpose, sizeof(f->purpose), "%s", purp);
	rk_buf_init(&f->bytes);
	rk_buf_add(&f->bytes, file->data, file->len);
	f->created = (long long)time(NULL);
	char hex[65];
	rk_sha256_hex(file->data, file->len, hex);
	if (!hashes)
		hashes = cJSON_CreateArray();
	const cJSON *hh;
	cJSON_ArrayForEach(hh, hashes)
	{
		if (!strcmp(hh->valuestring, hex)) {
			duplicates++;
			break;
		}
	}
	cJSON_AddItemToArray(hashes, cJSON_CreateString(hex));
	if (nfiles == capfiles) {
		capfiles = capfiles ? 2 * capfiles : 16;
		files = rk_xrealloc(files, capfiles * sizeof(*files));
	}
	files[nfiles++] = f;
	uploaded_bytes += (long long)file->len;
	*status = 200;
	return metadata(f);
}

static cJSON *not_found(enum protocol vendor, const char *id, unsigned *status)
{
	char msg[200];
	*status = 404;
	if (vendor == PROTO_MESSAGES) {
		snprintf(msg, sizeof(msg), "File not found: %.100s", id);
		return error_doc(vendor, "not_found_error", msg, NULL);
	}
	snprintf(msg, sizeof(msg), "No such File object: %.100s", id);
	return error_doc(vendor, "invalid_request_error", msg, "id");
}

cJSON *files_serve(const char *method, const char *tail, const char *content_type, const char *body, size_t len,
		   const struct http_in *h, int off, unsigned *status, enum protocol *proto)
{
	enum protocol vendor = h->anthropic_version ? PROTO_MESSAGES : PROTO_RESPONSES;
	*proto = vendor;
	if (off) {
		*proto = PROTO_CHAT;
		*status = 404;
		return error_doc(PROTO_CHAT, "not_found", "this endpoint has no Files API (the scenario says so)", NULL);
	}
	int key = (h->x_api_key && h->x_api_key[0]) || has_bearer(h);
	if (vendor == PROTO_MESSAGES ? !key : !has_bearer(h)) {
		*status = 401;
		return error_doc(vendor, "authentication_error",
				 vendor == PROTO_MESSAGES ? "x-api-key header is required"
							  : "You didn't provide an API key.",
				 NULL);
	}
	if (vendor == PROTO_MESSAGES && !messages_beta_has(h->anthropic_beta, FILES_BETA)) {
		*status = 400;
		return error_doc(vendor, "invalid_request_error",
				 "The Files API is in beta: send the anthropic-beta header " FILES_BETA, NULL);
	}
	const char *id = tail[0] == '/' ? tail + 1 : NULL;
	if (!strcmp(method, "POST") && !id)
		return upload(vendor, content_type, body, len, status);
	if (!strcmp(method, "GET") && !id) {
		cJSON *list = cJSON_CreateObject();
		if (vendor != PROTO_MESSAGES)
			cJSON_AddStringToObject(list, "object", "list");
		cJSON *data = cJSON_AddArrayToObject(list, "data");
		const char *first = NULL, *last = NULL;
		for (size_t i = nfiles; i-- > 0;) {
			if (files[i]->deleted || files[i]->vendor != vendor)
				continue;
			cJSON_AddItemToArray(data, metadata(files[i]));
			first = first ? first : files[i]->id;
			last = files[i]->id;
		}
		rk_json_add_str_or_null(list, "first_id", first);
		rk_json_add_str_or_null(list, "last_id", last);
		cJSON_AddFalseToObject(list, "has_more");
		*status = 200;
		return list;
	}
	struct stored_file *f = id ? find_any(id) : NULL;
	if (!f || f->deleted || f->vendor != vendor)
		return not_found(vendor, id ? id : "", status);
	if (!strcmp(method, "GET"))
		return *status = 200, metadata(f);
	if (!strcmp(method, "DELETE")) {
		f->deleted = 1;
		rk_buf_release(&f->bytes);
		rk_buf_init(&f->bytes);
		deleted++;
		cJSON *d = cJSON_CreateObject();
		cJSON_AddStringToObject(d, "id", f->id);
		if (vendor == PROTO_MESSAGES) {
			cJSON_AddStringToObject(d, "type", "file_deleted");
		} else {
			cJSON_AddStringToObject(d, "object", "file");
			cJSON_AddTrueToObject(d, "deleted");
		}
		*status = 200;
		return d;
	}
	*status = 405;
	return error_doc(vendor, "invalid_request_error", "method not allowed on a file", NULL);
}

void files_image(const char *id, enum protocol p, const struct http_in *h, const char *where, struct summary *s,
		 struct verdict *v, struct image *img)
{
	memset(img, 0, sizeof(*img));
	const struct stored_file *f = find_any(id);
	enum protocol vendor = p == PROTO_MESSAGES ? PROTO_MESSAGES : PROTO_RESPONSES;
	char msg[300];
	/* the refusal names where, past this call: a copy that lives on */
	static char param_at[64];
	if (!v->refused_by) {
		snprintf(param_at, sizeof(param_at), "%s", where);
		where = param_at;
	}
	if (f && !f->deleted && f->vendor == vendor) {
		s->file_images++;
		referenced++;
	}
	if (p == PROTO_MESSAGES && !messages_beta_has(h->anthropic_beta, FILES_BETA)) {
		snprintf(msg, sizeof(msg), "%s: an image with a file source needs the anthropic-beta header " FILES_BETA,
			 where);
		refuse(v, "file_source", NULL, NULL, msg);
	} else if (!f || f->deleted || f->vendor != vendor) {
		if (p == PROTO_MESSAGES) {
			int first = v->refused_by == NULL;
			snprintf(msg, sizeof(msg), "File not found: %.100s", id ? id : "(none)");
			refuse(v, "file_id", NULL, NULL, msg);
			if (first) {
				v->refusal_status = 404;
				v->refusal_type = "not_found_error";
			}
		} else {
			snprintf(msg, sizeof(msg), "No file with id '%.100s' was found.", id ? id : "(none)");
			refuse(v, "file_id", where, "invalid_value", msg);
		}
	} else if (strncmp(f->mime, "image/", 6) != 0) {
		snprintf(msg, sizeof(msg), "%s: the file %.100s is %.60s, not an image", where, id, f->mime);
		refuse(v, "file_id", p == PROTO_MESSAGES ? NULL : where, NULL, msg);
	} else if (p != PROTO_MESSAGES && strcmp(f->purpose, "vision") && strcmp(f->purpose, "user_data")) {
		snprintf(msg, sizeof(msg), "%s: the file %.100s was uploaded with purpose '%.30s'; images need 'vision' or "
			 "'user_data'", where, id, f->purpose);
		refuse(v, "file_id", where, "invalid_value", msg);
	}
	if (!f || f->deleted || f->vendor != vendor)
		return; /* refused above: no image to check */
	image_check_bytes(f->mime, f->bytes.data, f->bytes.len, img);
	summary_add_image(s, img);
}
