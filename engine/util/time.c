#include "engine/util/time.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

int64_t rk_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t rk_monotonic_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int64_t rk_monotonic_ms(void)
{
	return rk_monotonic_us() / 1000;
}

void rk_sleep_ms(int64_t ms)
{
	if (ms <= 0)
		return;
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000};
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

char *rk_iso8601(int64_t epoch_ms, char *out, size_t size)
{
	time_t secs = (time_t)(epoch_ms / 1000);
	struct tm tm;
	gmtime_r(&secs, &tm);
	snprintf(out, size, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
		 tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(epoch_ms % 1000));
	return out;
}

int64_t rk_iso8601_parse(const char *s)
{
	struct tm tm;
	int ms = 0, n = 0;
	memset(&tm, 0, sizeof(tm));
	if (!s || sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour, &tm.tm_min,
			 &tm.tm_sec, &n) != 6)
		return -1;
	if (s[n] == '.' && sscanf(s + n + 1, "%3d", &ms) != 1)
		return -1;
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	return (int64_t)timegm(&tm) * 1000 + ms;
}
