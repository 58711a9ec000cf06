/* The crypto calls of `coffer bench sdk`, made directly against libsodium, for comparison.
 * Usage: crypto_bench CALLS MESSAGE_BYTES — prints one JSON object of rates per second. */
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
    int calls = argc > 1 ? atoi(argv[1]) : 20000;
    size_t n = argc > 2 ? (size_t)atoi(argv[2]) : 100;
    if (sodium_init() < 0 || calls < 1 || n < 1) return 2;
    unsigned char *m = malloc(n), *box = malloc(n + crypto_box_SEALBYTES), *out = malloc(n + 1);
    unsigned char pk[crypto_sign_PUBLICKEYBYTES], sk[crypto_sign_SECRETKEYBYTES], sig[crypto_sign_BYTES];
    unsigned char bpk[crypto_box_PUBLICKEYBYTES], bsk[crypto_box_SECRETKEYBYTES];
    randombytes_buf(m, n);
    crypto_sign_keypair(pk, sk);
    crypto_box_keypair(bpk, bsk);
    crypto_sign_detached(sig, NULL, m, n, sk);
    int ok = 1;
    double t = now();
    for (int i = 0; i < calls; i++) crypto_sign_detached(sig, NULL, m, n, sk);
    double sign = calls / (now() - t);
    t = now();
    for (int i = 0; i < calls; i++) ok &= crypto_sign_verify_detached(sig, m, n, pk) == 0;
    double verify = calls / (now() - t);
    t = now();
    for (int i = 0; i < calls; i++) crypto_box_seal(box, m, n, bpk);
    double seal = calls / (now() - t);
    t = now();
    for (int i = 0; i < calls; i++) ok &= crypto_box_seal_open(out, box, n + crypto_box_SEALBYTES, bpk, bsk) == 0;
    double open = calls / (now() - t);
    if (!ok) return 3;
    printf("{\"sign_per_sec\": %.1f, \"verify_per_sec\": %.1f, \"seal_per_sec\": %.1f, \"open_per_sec\": %.1f}\n", sign, verify, seal, open);
    return 0;
}
