/*
 * plain_remap_loop: the reference the agent is measured against. The same clone and dedupe
 * loops as ksandwich-agent (design.md, "Workload shape": op i on its own range i, source of
 * deterministic splitmix64 data fsynced before the timer, clone into a hole, dedupe against
 * identical data, files removed and the filesystem synced after each round), in plain C
 * with nothing around them. If the agent's ns/op is above this beyond noise, the agent
 * adds overhead.
 *
 *   ksandwich-plain-loop clone|dedupe DIR [OPS=10000] [RANGE_BYTES=4096] [ROUNDS=15]
 *
 * Pin it yourself (taskset -c 1 ...). Prints one line per round and the mean.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#define SEED 0x6b73616e64776368ULL /* ksandwch: the agent's kSeed */
#define CHUNK (1 << 20)

static uint64_t splitmix64(uint64_t *state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

static void fill(uint64_t *state, unsigned char *buf, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t v = splitmix64(state);
    memcpy(buf + i, &v, 8);
  }
  if (i < n) {
    uint64_t v = splitmix64(state);
    memcpy(buf + i, &v, n - i);
  }
}

static void die(const char *what, const char *path) {
  fprintf(stderr, "plain_remap_loop: %s %s: %s\n", what, path, strerror(errno));
  exit(1);
}

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Creates PATH holding BYTES of the seeded stream, fsynced. */
static int data_file(const char *path, uint64_t bytes, unsigned char *buf) {
  uint64_t state = SEED;
  int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) die("open", path);
  while (bytes > 0) {
    size_t n = bytes < CHUNK ? (size_t)bytes : CHUNK;
    fill(&state, buf, n);
    if (write(fd, buf, n) != (ssize_t)n) die("write", path);
    bytes -= n;
  }
  if (fsync(fd) != 0) die("fsync", path);
  return fd;
}

int main(int argc, char **argv) {
  if (argc < 3 || (strcmp(argv[1], "clone") != 0 && strcmp(argv[1], "dedupe") != 0)) {
    fprintf(stderr, "usage: %s clone|dedupe DIR [OPS=10000] [RANGE_BYTES=4096] [ROUNDS=15]\n", argv[0]);
    return 2;
  }
  int clone = strcmp(argv[1], "clone") == 0;
  const char *dir = argv[2];
  uint64_t ops = argc > 3 ? strtoull(argv[3], NULL, 10) : 10000;
  uint64_t range = argc > 4 ? strtoull(argv[4], NULL, 10) : 4096;
  int rounds = argc > 5 ? atoi(argv[5]) : 15;
  if (ops == 0 || range == 0 || range % 4096 != 0 || rounds < 1) {
    fprintf(stderr, "plain_remap_loop: OPS and ROUNDS must be >= 1, RANGE_BYTES a multiple of 4096\n");
    return 2;
  }

  char src_path[4096], dst_path[4096];
  snprintf(src_path, sizeof src_path, "%s/ks-%s-src", dir, argv[1]);
  snprintf(dst_path, sizeof dst_path, "%s/ks-%s-dst", dir, argv[1]);
  unsigned char *buf = malloc(CHUNK);
  struct file_dedupe_range *arg = calloc(1, sizeof *arg + sizeof(struct file_dedupe_range_info));
  if (!buf || !arg) return 1;
  double sum = 0;

  for (int round = 0; round < rounds; ++round) {
    uint64_t size = ops * range, failed = 0;
    int src = data_file(src_path, size, buf);
    int dst;
    if (clone) {
      dst = open(dst_path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
      if (dst < 0) die("open", dst_path);
      if (ftruncate(dst, (off_t)size) != 0) die("ftruncate", dst_path);
      if (fsync(dst) != 0) die("fsync", dst_path);
    } else {
      dst = data_file(dst_path, size, buf);
    }
    arg->src_length = range;
    arg->dest_count = 1;
    arg->info[0].dest_fd = dst;

    int64_t start = now_ns();
    if (clone) {
      for (uint64_t i = 0; i < ops; ++i) {
        struct file_clone_range r = {.src_fd = src, .src_offset = i * range, .src_length = range,
                                     .dest_offset = i * range};
        if (ioctl(dst, FICLONERANGE, &r) != 0) ++failed;
      }
    } else {
      for (uint64_t i = 0; i < ops; ++i) {
        arg->src_offset = i * range;
        arg->info[0].dest_offset = i * range;
        arg->info[0].bytes_deduped = 0;
        if (ioctl(src, FIDEDUPERANGE, arg) != 0 || arg->info[0].status != FILE_DEDUPE_RANGE_SAME ||
            arg->info[0].bytes_deduped != range)
          ++failed;
      }
    }
    int64_t elapsed = now_ns() - start;

    close(src);
    close(dst);
    unlink(src_path);
    unlink(dst_path);
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
      syncfs(dfd);
      close(dfd);
    }
    double ns_per_op = (double)elapsed / (double)ops;
    sum += ns_per_op;
    printf("%s round %d: %llu ops, %lld ns, %.1f ns/op, %llu unexpected\n", argv[1], round,
           (unsigned long long)ops, (long long)elapsed, ns_per_op, (unsigned long long)failed);
    fflush(stdout);
  }
  printf("%s mean: %.1f ns/op over %d rounds\n", argv[1], sum / rounds, rounds);
  free(arg);
  free(buf);
  return 0;
}
