#ifndef RK_ID_H
#define RK_ID_H
#include <stddef.h>
/* A new random id, prefix + "_" + 20 lowercase base32 chars (100 bits):
 * "cmp_...", "exe_...". malloc'd. */
char *rk_id_new(const char *prefix);
/* Random bytes from the kernel (libsodium's randombytes). */
void rk_random_bytes(void *out, size_t n);
/* Lowercase hex of a SHA-256 digest of data; out >= 65 bytes. */
void rk_sha256_hex(const void *data, size_t len, char out[65]);
#endif
