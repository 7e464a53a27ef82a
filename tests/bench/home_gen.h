#ifndef RK_BENCH_HOME_GEN_H
#define RK_BENCH_HOME_GEN_H
/* The generated homes and medians of the checkpoint benchmarks
 * (checkpoint_bench.c, s3_bench.c): one tree, so their figures compare. */

#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "engine/util/buf.h"
#include "engine/util/fs.h"
#include "engine/util/id.h"

static inline void write_file(const char *path, const void *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		return;
	rk_fs_write_fd(fd, data, len);
	close(fd);
}

/* small_files text files of 1-16 KB, then big random files of big_mb MB each. */
static inline void generate(const char *root, int small_files, int big_files, int big_mb)
{
	rk_fs_mkdirs(root, 0755, NULL);
	char *text = rk_xmalloc(16384);
	unsigned seed = 7;
	for (int i = 0; i < small_files; i++) {
		if (i % 100 == 0) {
			char *d = rk_xasprintf("%s/src/d%03d", root, i / 100);
			rk_fs_mkdirs(d, 0755, NULL);
			free(d);
		}
		size_t len = 1024 + (size_t)(rand_r(&seed) % 15360);
		for (size_t k = 0; k < len; k++)
			text[k] = (k % 61 == 60) ? '\n' : (char)('a' + (rand_r(&seed) % 26));
		char *p = rk_xasprintf("%s/src/d%03d/file%05d.txt", root, i / 100, i);
		write_file(p, text, len);
		free(p);
	}
	free(text);
	size_t big = (size_t)big_mb << 20;
	unsigned char *buf = rk_xmalloc(big);
	for (int i = 0; i < big_files; i++) {
		rk_random_bytes(buf, big);
		char *p = rk_xasprintf("%s/blob%d.bin", root, i);
		write_file(p, buf, big);
		free(p);
	}
	free(buf);
	char *p = rk_xasprintf("%s/change.bin", root);
	unsigned char *mb = rk_xmalloc(1 << 20);
	rk_random_bytes(mb, 1 << 20);
	write_file(p, mb, 1 << 20);
	free(mb);
	free(p);
}

static inline int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

static inline double median_ms(int64_t *us, int n)
{
	qsort(us, (size_t)n, sizeof(*us), cmp_i64);
	return (double)us[n / 2] / 1000.0;
}

#endif
