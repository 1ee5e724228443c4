// DPDK 22.11 cryptodev, synchronous CPU-crypto API
// (rte_cryptodev_sym_cpu_crypto_process, what rte_ipsec runs for
// RTE_SECURITY_ACTION_TYPE_CPU_CRYPTO) on a software PMD, bursts of 32:
// AES-256-GCM, 12-byte AAD, 16-byte tag, the per-packet vector set-up
// included; cycles per packet by rdtsc.  For docs/encryption.md; built and
// run by rounds.sh:  cpu_crypto_bench <EAL args> -- [device name]
#include <rte_cryptodev.h>
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_lcore.h>
#include <stdio.h>
#include <string.h>
#include <x86intrin.h>
#define BURST 32
int main(int argc, char** argv) {
  int r = rte_eal_init(argc, argv);
  if (r < 0)
    return 1;
  int dev = rte_cryptodev_get_dev_id(argc > r + 1 ? argv[r + 1] : "crypto_aesni_gcm");
  if (dev < 0) {
    printf("no dev\n");
    return 1;
  }
  struct rte_cryptodev_info info;
  rte_cryptodev_info_get(dev, &info);
  printf("dev %s cpu_crypto %s\n", info.driver_name,
         (info.feature_flags & RTE_CRYPTODEV_FF_SYM_CPU_CRYPTO) ? "yes" : "no");
  if (!(info.feature_flags & RTE_CRYPTODEV_FF_SYM_CPU_CRYPTO))
    return 2;
  struct rte_cryptodev_config conf = {.socket_id = 0, .nb_queue_pairs = 1};
  if (rte_cryptodev_configure(dev, &conf) < 0) {
    printf("configure\n");
    return 1;
  }
  struct rte_cryptodev_qp_conf qp = {.nb_descriptors = 2048};
  if (rte_cryptodev_queue_pair_setup(dev, 0, &qp, 0) < 0) {
    printf("qp\n");
    return 1;
  }
  if (rte_cryptodev_start(dev) < 0) {
    printf("start\n");
    return 1;
  }
  struct rte_mempool* mp = rte_cryptodev_sym_session_pool_create(
      "sess", 16, rte_cryptodev_sym_get_private_session_size(dev), 0, 0, 0);
  uint8_t key[32];
  for (int i = 0; i < 32; i++)
    key[i] = i * 7 + 1;
  struct rte_crypto_sym_xform x = {0};
  x.type = RTE_CRYPTO_SYM_XFORM_AEAD;
  x.aead.op = RTE_CRYPTO_AEAD_OP_ENCRYPT;
  x.aead.algo = RTE_CRYPTO_AEAD_AES_GCM;
  x.aead.key.data = key;
  x.aead.key.length = 32;
  x.aead.iv.offset = 0;
  x.aead.iv.length = 12;
  x.aead.digest_length = 16;
  x.aead.aad_length = 12;
  void* enc = rte_cryptodev_sym_session_create(dev, &x, mp);
  x.aead.op = RTE_CRYPTO_AEAD_OP_DECRYPT;
  void* dec = rte_cryptodev_sym_session_create(dev, &x, mp);
  if (!enc || !dec) {
    printf("session\n");
    return 1;
  }
  static uint8_t bufs[BURST][2048];
  static uint8_t ivs[BURST][16], aads[BURST][16], tags[BURST][16];
  struct rte_crypto_vec segs[BURST];
  struct rte_crypto_sgl sgl[BURST];
  struct rte_crypto_va_iova_ptr iv[BURST], aad[BURST], dig[BURST];
  int32_t st[BURST];
  long n = 1000000;
  size_t sizes[] = {64, 512, 1400};
  printf("%8s %14s %14s\n", "payload", "seal cyc/pkt", "open cyc/pkt");
  for (int s = 0; s < 3; s++) {
    uint32_t len = sizes[s] + (4 - (sizes[s] + 2) % 4) % 4 + 2;
    uint64_t ce = 0, cd = 0, bad = 0;
    for (long done = 0; done < n; done += BURST) {
      uint64_t t0 = __rdtsc();
      for (int i = 0; i < BURST; i++) {  // per-packet set-up, as rte_ipsec does
        long q = done + i;
        memcpy(ivs[i] + 4, &q, 8);
        memcpy(aads[i] + 4, &q, 8);
        segs[i].base = bufs[i] + 16;
        segs[i].iova = 0;
        segs[i].len = len;
        sgl[i].vec = &segs[i];
        sgl[i].num = 1;
        iv[i].va = ivs[i];
        aad[i].va = aads[i];
        dig[i].va = tags[i];
      }
      struct rte_crypto_sym_vec v = {
          .num = BURST, .src_sgl = sgl, .iv = iv, .digest = dig, .aad = aad, .status = st};
      union rte_crypto_sym_ofs ofs = {.raw = 0};
      rte_cryptodev_sym_cpu_crypto_process(dev, enc, ofs, &v);
      uint64_t t1 = __rdtsc();
      struct rte_crypto_sym_vec w = {
          .num = BURST, .src_sgl = sgl, .iv = iv, .digest = dig, .aad = aad, .status = st};
      rte_cryptodev_sym_cpu_crypto_process(dev, dec, ofs, &w);
      for (int i = 0; i < BURST; i++)
        bad += st[i] != 0;
      uint64_t t2 = __rdtsc();
      ce += t1 - t0;
      cd += t2 - t1;
    }
    printf("%8zu %14.0f %14.0f %s\n", sizes[s], (double)ce / n, (double)cd / n,
           bad ? "VERIFY FAILED" : "");
  }
  return 0;
}
