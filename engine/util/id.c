#include "engine/util/id.h"

#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#include "engine/util/buf.h"

void rk_random_bytes(void *out, size_t n)
{
	if (sodium_init() < 0)
		abort();
	randombytes_buf(out, n);
}

char *rk_id_new(const char *prefix)
{
	static const char alphabet[] = "0123456789abcdefghjkmnpqrstvwxyz";
	unsigned char raw[20];
	char tail[21];
	rk_random_bytes(raw, sizeof(raw));
	for (size_t i = 0; i < 20; i++)
		tail[i] = alphabet[raw[i] & 31];
	tail[20] = '\0';
	return rk_xasprintf("%s_%s", prefix, tail);
}

void rk_sha256_hex(const void *data, size_t len, char out[65])
{
	unsigned char d[crypto_hash_sha256_BYTES];
	if (sodium_init() < 0)
		abort();
	crypto_hash_sha256(d, data, len);
	sodium_bin2hex(out, 65, d, sizeof(d));
}
