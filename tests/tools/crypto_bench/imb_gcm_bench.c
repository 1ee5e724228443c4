// intel-ipsec-mb 1.3 (libipsec-mb-dev) called directly and synchronously:
// AES-256-GCM with the work of one ESP packet (12-byte AAD, payload + pad + 2
// encrypted in place, 16-byte tag), cycles per packet by rdtsc.  For the
// engine choice in docs/encryption.md; built and run by rounds.sh.
//   imb_gcm_bench [packets] [auto|avx2|avx|sse]
#include <intel-ipsec-mb.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <x86intrin.h>
static volatile int sink;

int main(int argc, char** argv) {
  IMB_MGR* m = alloc_mb_mgr(0);
  IMB_ARCH arch;
  init_mb_mgr_auto(m, &arch);
  if (argc > 2 && strcmp(argv[2], "avx2") == 0) {
    init_mb_mgr_avx2(m);
    arch = IMB_ARCH_AVX2;
  }
  if (argc > 2 && strcmp(argv[2], "avx") == 0) {
    init_mb_mgr_avx(m);
    arch = IMB_ARCH_AVX;
  }
  if (argc > 2 && strcmp(argv[2], "sse") == 0) {
    init_mb_mgr_sse(m);
    arch = IMB_ARCH_SSE;
  }
  printf("arch %d (%s)\n", (int)arch,
         arch == IMB_ARCH_AVX512 ? "avx512"
         : arch == IMB_ARCH_AVX2 ? "avx2"
         : arch == IMB_ARCH_AVX  ? "avx"
                                 : "sse/other");
  uint8_t key[32];
  for (int i = 0; i < 32; i++)
    key[i] = i * 7 + 1;
  struct gcm_key_data kd __attribute__((aligned(64)));
  IMB_AES256_GCM_PRE(m, key, &kd);
  struct gcm_context_data ctx __attribute__((aligned(64)));
  static uint8_t buf[2048];
  uint8_t iv[12] = {0xde, 0xad, 0xbe, 0xef}, aad[12] = {0}, tag[16], tag2[16];
  long n = argc > 1 ? atol(argv[1]) : 1000000;
  size_t sizes[] = {64, 512, 1400};
  printf("%8s %14s %14s\n", "payload", "seal cyc/pkt", "open cyc/pkt");
  for (int s = 0; s < 3; s++) {
    size_t len = sizes[s] + (4 - (sizes[s] + 2) % 4) % 4 + 2;
    uint64_t t0 = __rdtsc();
    for (long i = 0; i < n; i++) {
      memcpy(iv + 4, &i, 8);
      memcpy(aad + 4, &i, 8);
      IMB_AES256_GCM_ENC(m, &kd, &ctx, buf + 16, buf + 16, len, iv, aad, 12, tag, 16);
    }
    uint64_t t1 = __rdtsc();
    for (long i = 0; i < n; i++) {
      memcpy(iv + 4, &i, 8);
      memcpy(aad + 4, &i, 8);
      IMB_AES256_GCM_DEC(m, &kd, &ctx, buf + 16, buf + 16, len, iv, aad, 12, tag2, 16);
      sink += memcmp(tag, tag2, 16);  // the receiver compares the tag
    }
    uint64_t t2 = __rdtsc();
    printf("%8zu %14.0f %14.0f\n", sizes[s], (double)(t1 - t0) / n, (double)(t2 - t1) / n);
  }
  return 0;
}
