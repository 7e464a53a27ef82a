#ifndef RK_TIME_H
#define RK_TIME_H
#include <stdint.h>
#include <stddef.h>

int64_t rk_now_ms(void);       /* wall clock, ms since the epoch */
int64_t rk_monotonic_ms(void); /* for timeouts and durations */
int64_t rk_monotonic_us(void);
void rk_sleep_ms(int64_t ms);
/* ISO-8601 UTC with milliseconds, "2026-12-02T15:01:28.123Z"; out >= 32 bytes. */
char *rk_iso8601(int64_t epoch_ms, char *out, size_t size);
/* Parses what rk_iso8601 writes; -1 on a malformed string. */
int64_t rk_iso8601_parse(const char *s);
#endif
