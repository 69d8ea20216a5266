/*
 * Standalone tests of the C core, built with -fsanitize=address,undefined by
 * `make test` (the native/tests rule of the top Makefile).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "feltlab_core.h"

#include "check.h"


static void hex_to_bytes(const char *hex, uint8_t *out, size_t n) {
    for (size_t i = 0; i < n; i++) {
        unsigned v;
        sscanf(hex + 2 * i, "%2x", &v);
        out[i] = (uint8_t)v;
    }
}

/* RFC 8439 section 2.3.2: the ChaCha20 block function test vector. */
static void test_chacha_block(void) {
    uint8_t key[32], nonce[12];
    for (int i = 0; i < 32; i++) key[i] = (uint8_t)i;
    hex_to_bytes("000000090000004a00000000", nonce, 12);
    fl_rng g;
    CHECK(fl_rng_seed_chacha(&g, key, nonce, 1) == FL_OK);
    uint8_t ks[64], want[64];
    hex_to_bytes("10f1e7e4d13b5915500fdd1fa32071c4c7d1f4c733c068030422aa9ac3d46c4e"
                 "d2826446079faa0914c2d705d98b02a2b5129cd1de164eb9cbd083e8a2503c4e",
                 want, 64);
    CHECK(fl_chacha_keystream(&g, ks, 64) == FL_OK);
    CHECK(memcmp(ks, want, 64) == 0);
}

/* RFC 8439 section 2.4.2: encryption of "Ladies and Gentlemen ..." */
static void test_chacha_encrypt(void) {
    static const char *plain = "Ladies and Gentlemen of the class of '99: If I could offer you "
                               "only one tip for the future, sunscreen would be it.";
    uint8_t key[32], nonce[12], want[114];
    for (int i = 0; i < 32; i++) key[i] = (uint8_t)i;
    hex_to_bytes("000000000000004a00000000", nonce, 12);
    hex_to_bytes("6e2e359a2568f98041ba0728dd0d6981e97e7aec1d4360c20a27afccfd9fae0b"
                 "f91b65c5524733ab8f593dabcd62b3571639d624e65152ab8f530c359f0861d8"
                 "07ca0dbf500d6a6156a38e088a22b65e52bc514d16ccf806818ce91ab7793736"
                 "5af90bbf74a35be6b40b8eedf2785e42874d",
                 want, 114);
    size_t n = strlen(plain);
    CHECK(n == 114);
    fl_rng g;
    CHECK(fl_rng_seed_chacha(&g, key, nonce, 1) == FL_OK);
    uint8_t ks[114];
    /* draw in uneven pieces to exercise block boundaries */
    CHECK(fl_chacha_keystream(&g, ks, 7) == FL_OK);
    CHECK(fl_chacha_keystream(&g, ks + 7, 60) == FL_OK);
    CHECK(fl_chacha_keystream(&g, ks + 67, 47) == FL_OK);
    for (size_t i = 0; i < n; i++) ks[i] ^= (uint8_t)plain[i];
    CHECK(memcmp(ks, want, 114) == 0);
}

/* The first outputs of xoshiro256** from state {1, 2, 3, 4}, worked by hand
 * from the reference code: s1*5 = 10, rotl 7 = 1280, *9 = 11520. */
static void test_xoshiro_first_output(void) {
    fl_rng g;
    uint64_t s[4] = {1, 2, 3, 4}, x;
    CHECK(fl_rng_set_xoshiro(&g, s) == FL_OK);
    CHECK(fl_rng_fill_u64(&g, &x, 1) == FL_OK);
    CHECK(x == 11520);
    uint64_t zero[4] = {0, 0, 0, 0};
    CHECK(fl_rng_set_xoshiro(&g, zero) == FL_ERR_RANGE);
}

static void test_shuffle_is_permutation(void) {
    fl_rng g;
    fl_rng_seed_xoshiro(&g, 42);
    for (unsigned decks = 1; decks <= FL_MAX_DECKS; decks++) {
        size_t m = decks * 52;
        uint16_t *out = malloc(3 * m * sizeof *out);
        CHECK(fl_shuffle_batch_ids(&g, decks, out, 3) == FL_OK);
        for (int s = 0; s < 3; s++) {
            int seen[FL_MAX_DECKS * 52] = {0};
            for (size_t p = 0; p < m; p++) {
                CHECK(out[s * m + p] < m);
                if (out[s * m + p] < m) seen[out[s * m + p]]++;
            }
            for (size_t p = 0; p < m; p++) CHECK(seen[p] == 1);
        }
        free(out);
    }
    /* long arrays cross every batch-size regime (k = 6, 5, 4, 3) */
    size_t n = 70000;
    uint16_t *a = malloc(n * sizeof *a);
    for (size_t i = 0; i < n; i++) a[i] = (uint16_t)i;
    fl_rng_seed_xoshiro(&g, 7);
    CHECK(fl_shuffle_u16(&g, a, n) == FL_OK);
    uint8_t *seen = calloc(65536, 1);
    size_t dups = 0;
    for (size_t i = 0; i < n; i++) {
        if (seen[a[i]]) dups++;
        seen[a[i]] = 1;
    }
    CHECK(dups == n - 65536); /* 70000 values mod 2^16: 4464 repeats */
    free(seen);
    free(a);
}

static void test_bad_arguments(void) {
    fl_rng g;
    fl_rng_seed_xoshiro(&g, 1);
    uint8_t buf[416];
    CHECK(fl_shuffle_batch_codes(&g, 0, buf, 1) == FL_ERR_DECKS);
    CHECK(fl_shuffle_batch_codes(&g, 9, buf, 1) == FL_ERR_DECKS);
    CHECK(fl_shuffle_batch_codes(NULL, 1, buf, 1) == FL_ERR_NULL);
    CHECK(fl_new_shoe_codes(2, buf, 52) == FL_ERR_RANGE);
    uint64_t x;
    CHECK(fl_rng_bounded(&g, 0, &x, 1) == FL_ERR_RANGE);
    fl_rng bad;
    memset(&bad, 0, sizeof bad);
    CHECK(fl_shuffle_u8(&bad, buf, 10) == FL_ERR_KIND);
    CHECK(fl_xoshiro_jump(&bad) == FL_ERR_KIND);
    uint64_t idx[8];
    CHECK(fl_batch_draw_word(300, 8, 17, 2, 272, idx) == -1); /* x >= 2^w */
    CHECK(fl_batch_draw_word(3, 8, 17, 2, 100, idx) == -1);   /* bound < 17*16 */
    CHECK(fl_batch_draw_word(3, 8, 17, 3, 1000, idx) == -1);  /* product > 2^8 */
}

static void test_hands(void) {
    /* A-K, 10-6-5, A-A-9, K-Q-5 (bust), A-6 (soft 17) */
    const uint8_t F = FL_NO_CARD;
    uint8_t cards[5 * 3] = {0, 48, F, 36, 20, 16, 1, 2, 32, 51, 46, 17, 3, 21, F};
    uint8_t hard[5], total[5], flags[5];
    size_t bad = 0;
    CHECK(fl_evaluate_hands(cards, 5, 3, hard, total, flags, &bad) == FL_OK);
    CHECK(total[0] == 21 && flags[0] == (FL_HAND_BLACKJACK | FL_HAND_SOFT));
    CHECK(total[1] == 21 && hard[1] == 21 && flags[1] == 0);
    CHECK(total[2] == 21 && hard[2] == 11 && flags[2] == FL_HAND_SOFT);
    CHECK(hard[3] == 25 && flags[3] == FL_HAND_BUST);
    CHECK(total[4] == 17 && hard[4] == 7 && flags[4] == FL_HAND_SOFT);
    cards[4] = 52;
    CHECK(fl_evaluate_hands(cards, 5, 3, hard, total, flags, &bad) == FL_ERR_CARD);
    CHECK(bad == 4);
}

/* number of rising sequences of a permutation of 0..n-1 (Bayer-Diaconis) */
static unsigned rising_sequences(const uint16_t *a, size_t n) {
    size_t pos[FL_MAX_MODEL_CARDS];
    for (size_t i = 0; i < n; i++) pos[a[i]] = i;
    unsigned r = 1;
    for (size_t v = 1; v < n; v++)
        if (pos[v] < pos[v - 1]) r++;
    return r;
}

static void test_models(void) {
    fl_rng g;
    fl_rng_seed_xoshiro(&g, 99);
    uint16_t a[312];
    for (int trial = 0; trial < 50; trial++) {
        for (int i = 0; i < 312; i++) a[i] = (uint16_t)i;
        CHECK(fl_riffle_u16(&g, a, 312, 1) == FL_OK);
        CHECK(rising_sequences(a, 312) <= 2); /* one riffle: at most 2 rising sequences */
        for (int i = 0; i < 312; i++) a[i] = (uint16_t)i;
        CHECK(fl_riffle_u16(&g, a, 312, 3) == FL_OK);
        CHECK(rising_sequences(a, 312) <= 8); /* k riffles: at most 2^k */
        for (int i = 0; i < 312; i++) a[i] = (uint16_t)i;
        CHECK(fl_shelf_u16(&g, a, 312, 10, 1) == FL_OK);
        int seen[312] = {0};
        for (int i = 0; i < 312; i++) seen[a[i]]++;
        for (int i = 0; i < 312; i++) CHECK(seen[i] == 1);
    }
    uint8_t small[4] = {0, 1, 2, 3};
    CHECK(fl_shelf_u8(&g, small, 4, 0, 1) == FL_ERR_RANGE);
    CHECK(fl_shelf_u8(&g, small, 4, 257, 1) == FL_ERR_RANGE);
    CHECK(fl_riffle_u8(&g, small, FL_MAX_MODEL_CARDS + 1, 1) == FL_ERR_RANGE);
    CHECK(fl_riffle_u8(NULL, small, 4, 1) == FL_ERR_NULL);
}


/* the library of shuffle models (fl_model_init, fl_model_shoes) */
static int is_perm(const uint16_t *a, size_t n) {
    uint8_t seen[FL_MAX_MODEL_CARDS] = {0};
    for (size_t i = 0; i < n; i++) {
        if (a[i] >= n || seen[a[i]]) return 0;
        seen[a[i]] = 1;
    }
    return 1;
}

static void test_library_models(void) {
    enum { N = 312, SHOES = 12 };
    static uint16_t out[SHOES * N], ref[N];
    static const uint32_t params[FL_MODEL_KINDS][4] = {
        [FL_MODEL_RIFFLE] = {7},         [FL_MODEL_SHELF] = {10, 2},
        [FL_MODEL_OVERHAND] = {3, 20},   [FL_MODEL_STRIP] = {4, 2},
        [FL_MODEL_POSITION_BIAS] = {5, 50, 3},
        [FL_MODEL_MODULO] = {15},        [FL_MODEL_LCG] = {0},
        [FL_MODEL_SHORT_SEED] = {16},    [FL_MODEL_REBOOT] = {5},
        [FL_MODEL_STUCK] = {17},         [FL_MODEL_MISSING] = {311},
        [FL_MODEL_DUPLICATE] = {3},
    };
    fl_model_stream s;
    fl_rng g, h;
    for (uint32_t kind = 0; kind < FL_MODEL_KINDS; kind++) {
        CHECK(fl_model_init(&s, kind, params[kind], 4) == FL_OK);
        fl_rng_seed_xoshiro(&g, 1000 + kind);
        CHECK(fl_model_shoes(&s, &g, out, SHOES, N) == FL_OK);
        CHECK(s.shoes == SHOES);
        for (int r = 0; r < SHOES; r++) {
            const uint16_t *row = out + r * N;
            if (kind == FL_MODEL_MISSING) {
                CHECK(row[N - 1] == FL_NO_POSITION && is_perm(row, N - 1) == 0);
                int seen[N] = {0};
                for (int i = 0; i < N - 1; i++) CHECK(row[i] < N && !seen[row[i]]++);
            } else if (kind == FL_MODEL_DUPLICATE) {
                CHECK(!is_perm(row, N));
            } else {
                CHECK(is_perm(row, N));
            }
            if (kind == FL_MODEL_STUCK) CHECK(row[17] == 17);
            if (kind == FL_MODEL_REBOOT && r >= 5) CHECK(!memcmp(row, out + (r - 5) * N, N * 2));
        }
    }
    /* Fisher-Yates and the riffle draw exactly as fl_shuffle_u16 and fl_riffle_u16 */
    CHECK(fl_model_init(&s, FL_MODEL_FISHER_YATES, NULL, 0) == FL_OK);
    fl_rng_seed_xoshiro(&g, 5);
    fl_rng_seed_xoshiro(&h, 5);
    CHECK(fl_model_shoes(&s, &g, out, SHOES, N) == FL_OK);
    for (int r = 0; r < SHOES; r++) {
        for (int i = 0; i < N; i++) ref[i] = (uint16_t)i;
        CHECK(fl_shuffle_u16(&h, ref, N) == FL_OK);
        CHECK(!memcmp(ref, out + r * N, sizeof ref));
    }
    uint32_t k3 = 3;
    CHECK(fl_model_init(&s, FL_MODEL_RIFFLE, &k3, 1) == FL_OK);
    CHECK(fl_model_shoes(&s, &g, out, SHOES, N) == FL_OK);
    for (int r = 0; r < SHOES; r++) {
        for (int i = 0; i < N; i++) ref[i] = (uint16_t)i;
        CHECK(fl_riffle_u16(&h, ref, N, 3) == FL_OK);
        CHECK(!memcmp(ref, out + r * N, sizeof ref));
    }
    /* the glibc TYPE_0 LCG's bit 0 alternates: two-card shoes alternate */
    uint32_t zero = 0;
    CHECK(fl_model_init(&s, FL_MODEL_LCG, &zero, 1) == FL_OK);
    CHECK(fl_model_shoes(&s, &g, out, 8, 2) == FL_OK);
    for (int r = 2; r < 8; r++) CHECK(out[2 * r] == out[2 * (r - 2)] && out[2 * r] != out[2 * r - 2]);
    /* a 2-bit seed: at most 4 distinct shoes */
    uint32_t two = 2;
    CHECK(fl_model_init(&s, FL_MODEL_SHORT_SEED, &two, 1) == FL_OK);
    CHECK(fl_model_shoes(&s, &g, out, SHOES, N) == FL_OK);
    int distinct = 0;
    for (int r = 0; r < SHOES; r++) {
        int seen_before = 0;
        for (int q = 0; q < r; q++) seen_before |= !memcmp(out + r * N, out + q * N, N * 2);
        distinct += !seen_before;
    }
    CHECK(distinct >= 1 && distinct <= 4);
    /* bad arguments: an error code, never a crash */
    uint32_t bad[5] = {0, 0, 0, 0, 0};
    CHECK(fl_model_init(NULL, 0, NULL, 0) == FL_ERR_NULL);
    CHECK(fl_model_init(&s, 0, NULL, 1) == FL_ERR_NULL);
    CHECK(fl_model_init(&s, FL_MODEL_KINDS, NULL, 0) == FL_ERR_KIND);
    CHECK(fl_model_init(&s, 0, bad, 5) == FL_ERR_RANGE);
    CHECK(fl_model_init(&s, FL_MODEL_SHELF, bad, 2) == FL_ERR_RANGE);      /* 0 shelves */
    CHECK(fl_model_init(&s, FL_MODEL_MODULO, bad, 1) == FL_ERR_RANGE);     /* 0 bits */
    CHECK(fl_model_init(&s, FL_MODEL_REBOOT, bad, 1) == FL_ERR_RANGE);     /* every 0 */
    uint32_t big[4] = {33, 101, 0, 0};
    CHECK(fl_model_init(&s, FL_MODEL_MODULO, big, 1) == FL_ERR_RANGE);
    CHECK(fl_model_init(&s, FL_MODEL_OVERHAND, big, 2) == FL_ERR_RANGE);
    big[0] = 31;
    CHECK(fl_model_init(&s, FL_MODEL_LCG, big, 1) == FL_ERR_RANGE);
    big[0] = 65;
    CHECK(fl_model_init(&s, FL_MODEL_SHORT_SEED, big, 1) == FL_ERR_RANGE);
    CHECK(fl_model_init(&s, FL_MODEL_NAIVE, NULL, 0) == FL_OK);
    CHECK(fl_model_shoes(NULL, &g, out, 1, N) == FL_ERR_NULL);
    CHECK(fl_model_shoes(&s, NULL, out, 1, N) == FL_ERR_NULL);
    CHECK(fl_model_shoes(&s, &g, NULL, 1, N) == FL_ERR_NULL);
    CHECK(fl_model_shoes(&s, &g, NULL, 0, N) == FL_OK);
    CHECK(fl_model_shoes(&s, &g, NULL, 3, 0) == FL_OK);
    CHECK(fl_model_shoes(&s, &g, out, 1, FL_MAX_MODEL_CARDS + 1) == FL_ERR_RANGE);
    fl_rng zeroed;
    memset(&zeroed, 0, sizeof zeroed);
    CHECK(fl_model_shoes(&s, &zeroed, out, 1, N) == FL_ERR_KIND);
    fl_model_stream garbage = s;
    garbage.kind = 99;
    CHECK(fl_model_shoes(&garbage, &g, out, 1, N) == FL_ERR_KIND);
    garbage = s;
    garbage.kind = FL_MODEL_SHELF;
    garbage.param[0] = 0;
    CHECK(fl_model_shoes(&garbage, &g, out, 1, N) == FL_ERR_RANGE);
    uint32_t cuts[2] = {N, 1};
    CHECK(fl_model_init(&s, FL_MODEL_STRIP, cuts, 2) == FL_OK);
    CHECK(fl_model_shoes(&s, &g, out, 1, N) == FL_ERR_RANGE); /* 312 cuts in 311 gaps */
    cuts[0] = N - 1;
    CHECK(fl_model_init(&s, FL_MODEL_STRIP, cuts, 2) == FL_OK);
    CHECK(fl_model_shoes(&s, &g, out, 1, N) == FL_OK);
    for (int i = 0; i < N; i++) CHECK(out[i] == N - 1 - i); /* every gap cut: reversed */
    uint32_t pos = N;
    for (uint32_t kind = FL_MODEL_STUCK; kind <= FL_MODEL_DUPLICATE; kind++) {
        CHECK(fl_model_init(&s, kind, &pos, 1) == FL_OK);
        CHECK(fl_model_shoes(&s, &g, out, 1, N) == FL_ERR_RANGE);
    }
    pos = 0;
    CHECK(fl_model_init(&s, FL_MODEL_DUPLICATE, &pos, 1) == FL_OK);
    CHECK(fl_model_shoes(&s, &g, out, 1, 1) == FL_ERR_RANGE);
    /* a ChaCha20 stream with 8 words left: FL_ERR_EXHAUSTED for every model but the two that
     * draw one word of it and then run their own generator */
    uint8_t key[32] = {0}, nonce[12] = {0};
    for (uint32_t kind = 0; kind < FL_MODEL_KINDS; kind++) {
        fl_rng c;
        CHECK(fl_rng_seed_chacha(&c, key, nonce, 0) == FL_OK);
        CHECK(fl_chacha_seek(&c, UINT64_MAX, 0) == FL_OK);
        CHECK(fl_model_init(&s, kind, params[kind], 4) == FL_OK);
        fl_status st = fl_model_shoes(&s, &c, out, SHOES, N);
        int own = kind == FL_MODEL_LCG || kind == FL_MODEL_REBOOT;
        CHECK(st == (own ? FL_OK : FL_ERR_EXHAUSTED));
    }
}

static void test_analyzer(void) {
    static fl_analyzer_rules r;
    static fl_analysis out;
    memset(&r, 0, sizeof r);
    for (int v = 0; v < 10; v++) r.counts[v] = v == 9 ? 16 : 4;
    r.h17 = 1;
    r.peek = 1;
    r.bj_num = 3;
    r.bj_den = 2;
    r.double_after_split = 1;
    r.max_hands = 4;
    r.split_aces_one_card = 1;
    r.strategy = FL_AN_CDZ;
    CHECK(fl_analyze(&r, &out) == FL_OK);
    /* Farmer's CA v7.6: 1 deck H17 DAS, split to 4, no RSA: -0.008735% */
    CHECK(fabs(100.0 * out.ev + 0.008735) <= 1e-6);
    CHECK(fabs(out.p_total - 1.0) < 1e-12);
    /* no hole card, every settlement, table strategy (stand on everything) */
    for (unsigned takes = 0; takes < 3; takes++) {
        r.peek = 0;
        r.enhc_takes = takes;
        r.strategy = FL_AN_TABLE;
        for (int t = 0; t < 32; t++)
            for (int u = 0; u < 11; u++) r.hard[t][u] = r.soft[t][u] = 1;
        CHECK(fl_analyze(&r, &out) == FL_OK);
        CHECK(fabs(out.p_total - 1.0) < 1e-12);
    }
    /* the exact distribution of the net result, split rounds included (the batched dealer
     * passes of analyzer_dist.c): it sums to 1 and its mean is the expectation, peek and no
     * hole card, one deck so every composition is thin */
    r.strategy = FL_AN_CDZ;
    r.split_dist = 1;
    for (unsigned peek = 0; peek < 2; peek++)
        for (unsigned hands = 2; hands <= 4; hands += 2) {
            r.peek = peek;
            r.enhc_takes = FL_TAKES_ALL;
            r.max_hands = hands;
            /* the up cards side by side: the same bits for any thread count (one thread and
             * three; the default count, one a core, is run above); the sums checked on the
             * three threads' result, which must equal the one thread's bit for bit */
            static fl_analysis one;
            r.threads = 1;
            CHECK(fl_analyze(&r, &one) == FL_OK);
            r.threads = 3;
            CHECK(fl_analyze(&r, &out) == FL_OK);
            r.threads = 0;
            static const double nets[7] = {-2.0, -1.0, -0.5, 0.0, 1.0, 2.0, 1.5};
            double mass = 0.0, mean = 0.0;
            for (int k = 0; k < 7; k++) {
                mass += out.net_dist[k];
                mean += nets[k] * out.net_dist[k];
            }
            for (int k = 0; k < FL_AN_SPLIT_NETS; k++) {
                mass += out.split_net[k];
                mean += (k - FL_AN_SPLIT_NET0) * out.split_net[k];
            }
            CHECK(fabs(mass - 1.0) < 1e-12);
            if (out.p_split_dist_approx == 0.0) CHECK(fabs(mean - out.ev) < 1e-12);
            CHECK(one.ev == out.ev);
            CHECK(!memcmp(one.net_dist, out.net_dist, sizeof out.net_dist));
            CHECK(!memcmp(one.split_net, out.split_net, sizeof out.split_net));
            CHECK(!memcmp(one.value, out.value, sizeof out.value));
        }
    r.split_dist = 0;
    r.peek = 1;
    r.enhc_takes = 0;
    r.strategy = FL_AN_TABLE;
    CHECK(fl_analyze(NULL, &out) == FL_ERR_NULL);
    CHECK(fl_analyze(&r, NULL) == FL_ERR_NULL);
    r.max_hands = 5;
    CHECK(fl_analyze(&r, &out) == FL_ERR_RANGE);
    r.max_hands = 4;
    r.counts[9] = 0;
    for (int v = 0; v < 9; v++) r.counts[v] = 2; /* 18 cards: too few */
    CHECK(fl_analyze(&r, &out) == FL_ERR_RANGE);
    /* a shoe a round could run out of: 26 twos split to 2 hands, ten twos a hand's 20 and
     * nine for the dealer's 18: 24 twos (48 pips) but the last two within 2 * 20 + 16 */
    for (int v = 0; v < 10; v++) r.counts[v] = v == 1 ? 26 : 0;
    r.max_hands = 2;
    CHECK(fl_an_may_run_out(r.counts, 2) == 1);
    CHECK(fl_analyze(&r, &out) == FL_ERR_RANGE);
    r.max_hands = 1; /* one hand: 25 twos, 50 pips, beyond 20 + 16 */
    CHECK(fl_an_may_run_out(r.counts, 1) == 0);
    CHECK(fl_analyze(&r, &out) == FL_OK);
    r.counts[1] = 19; /* 18 twos, 36 pips: could run out (below the 26-card minimum too) */
    CHECK(fl_an_may_run_out(r.counts, 1) == 1);
    r.max_hands = 4;
    for (int v = 0; v < 10; v++) r.counts[v] = v == 9 ? 16 : 4; /* one deck */
    CHECK(fl_an_may_run_out(r.counts, 4) == 0);
    r.pair[9][5] = 1; /* tables may not split tens */
    for (int v = 0; v < 10; v++) r.counts[v] = 8;
    CHECK(fl_analyze(&r, &out) == FL_ERR_RANGE);
    double d[7];
    uint32_t counts[10] = {4, 4, 4, 4, 4, 4, 4, 4, 4, 16};
    CHECK(fl_dealer_probabilities(counts, 10, 0, 1, d) == FL_OK);
    CHECK(d[6] == 0.0);
    CHECK(fl_dealer_probabilities(counts, 11, 0, 1, d) == FL_ERR_RANGE);
    CHECK(fl_dealer_probabilities(NULL, 1, 0, 1, d) == FL_ERR_NULL);
}

static void test_can_frame_bits(void) {
    /* id 0, no data: 34 dominant bits (CRC 0), stuff bits after zeros 5..30: 6; 13 fixed. */
    CHECK(fl_can_frame_bits(0, 0, NULL, 0) == 53);
    uint8_t data[8] = {0};
    int bits = fl_can_frame_bits(0x100, 0, data, 8);
    CHECK(bits >= 111 && bits <= 135);
    bits = fl_can_frame_bits(0x1FFFFFFF, 1, data, 8);
    CHECK(bits >= 131 && bits <= 160);
    CHECK(fl_can_frame_bits(0x100, 0, data, 9) == -1);
    CHECK(fl_can_frame_bits(0x100, 0, NULL, 1) == -1);
}

/* The dealer's final hand from a full 6-deck shoe, H17, averaged over the up card: every
 * probability sums to 1 and a bust on exactly 3 cards has the Wizard of Odds' Buster
 * Blackjack probability 0.173032 (six decks, dealer hits soft 17). */
static void test_dealer_final(void) {
    static double out[(FL_DF_MAX_CARDS + 1) * FL_DF_CLASSES];
    double sum = 0, bust3 = 0;
    for (uint32_t up = 0; up < 10; up++) {
        uint32_t c[10];
        for (int v = 0; v < 10; v++) c[v] = v == 9 ? 96 : 24;
        double w = (double)c[up] / 312.0;
        c[up]--;
        CHECK(fl_dealer_final(c, up, 1, out) == FL_OK);
        for (int i = 0; i < (FL_DF_MAX_CARDS + 1) * FL_DF_CLASSES; i++) sum += w * out[i];
        for (int k = 5; k < 10; k++) bust3 += w * out[3 * FL_DF_CLASSES + k];
    }
    CHECK(fabs(sum - 1.0) < 1e-12);
    CHECK(fabs(bust3 - 0.173032) < 5e-7);
    uint32_t c[10] = {0};
    CHECK(fl_dealer_final(NULL, 0, 0, out) == FL_ERR_NULL);
    CHECK(fl_dealer_final(c, 10, 0, out) == FL_ERR_RANGE);
    CHECK(fl_dealer_final(c, 0, 0, out) == FL_ERR_RANGE); /* an empty shoe */
}

/* 6 decks, peek, 3:2, split to 4 hands, split aces one card, the cut at 234 cards, $10; a
 * crude strategy: stand on hard `hard_stand` and soft `soft_stand` and up, hit below */
static void sim_test_rules(fl_sim_rules *r, int hard_stand, int soft_stand) {
    memset(r, 0, sizeof *r);
    r->decks = 6;
    r->peek = 1;
    r->bj_num = 3;
    r->bj_den = 2;
    r->max_hands = 4;
    r->split_aces_one_card = 1;
    r->cut_position = 234;
    r->stake = 1000;
    for (int t = 0; t < 32; t++)
        for (int u = 0; u < 11; u++) {
            r->hard[t][u] = t >= hard_stand ? FL_ACT_STAND : FL_ACT_HIT;
            r->soft[t][u] = t >= soft_stand ? FL_ACT_STAND : FL_ACT_HIT;
        }
}

/* a pair side table over P1, P2: outcome 1 a pair of ranks, 0 otherwise */
static uint8_t pair_table[53 * 53];
static void make_pair_table(void) {
    for (int a = 0; a < 53; a++)
        for (int b = 0; b < 53; b++)
            pair_table[a * 53 + b] =
                (a == 52 || b == 52) ? FL_SIDE_NOT_OFFERED : (uint8_t)((a >> 2) == (b >> 2));
}

/* The tally of fl_simulate_tally equals what fl_simulate_rounds' per-round arrays give for
 * the same generator: sums of net and net^2, and a pair table's counts over P1, P2 (a crude
 * strategy: stand on 12 and up, hit below). */
static void test_simulate_tally(void) {
    static fl_sim_rules r;
    sim_test_rules(&r, 12, 18);
    r.double_after_split = 1;
    for (int u = 0; u < 11; u++) r.pair[0][u] = r.pair[7][u] = 1; /* split aces and eights */
    enum { N = 20000 };
    static int32_t net[N];
    static uint8_t init[5 * N];
    make_pair_table();
    fl_rng g1, g2;
    fl_rng_seed_xoshiro(&g1, 77);
    fl_rng_seed_xoshiro(&g2, 77);
    CHECK(fl_simulate_rounds(&g1, &r, N, net, init, NULL, 0, NULL) == FL_OK);
    int64_t sum = 0, sq = 0;
    uint64_t pairs = 0;
    for (int i = 0; i < N; i++) {
        sum += net[i];
        sq += (int64_t)net[i] * net[i];
        pairs += (init[5 * i] >> 2) == (init[5 * i + 1] >> 2);
    }
    uint64_t counts[256];
    memset(counts, 0, sizeof counts);
    fl_side_table t = {pair_table, sizeof pair_table, 2, {0, 1, 0, 0, 0, 0}, {53, 1, 0, 0, 0, 0},
                       counts, NULL, 0, 0, 0, 0};
    fl_sim_sums sums;
    memset(&sums, 0, sizeof sums);
    CHECK(fl_simulate_tally(&g2, &r, N, &t, 1, &sums) == FL_OK);
    CHECK(sums.rounds == N);
    CHECK((int64_t)sums.net_lo == sum && sums.net_hi == (sum < 0 ? UINT64_MAX : 0));
    CHECK(sums.sq_lo == (uint64_t)sq && sums.sq_hi == 0);
    CHECK(counts[1] == pairs && counts[0] == N - pairs && counts[FL_SIDE_NOT_OFFERED] == 0);
    /* both generators were left in the same state (long-jumped once per lane) */
    uint64_t s1[4], s2[4];
    CHECK(fl_xoshiro_get(&g1, s1) == FL_OK && fl_xoshiro_get(&g2, s2) == FL_OK);
    CHECK(memcmp(s1, s2, sizeof s1) == 0);
    /* the same pair table factored in two levels: P1 -> its rank (13 classes), then the
     * class's row over P2 (main[rank][P2]) */
    static uint16_t pre[53];
    static uint8_t main_t[14 * 53];
    for (int a = 0; a < 53; a++) pre[a] = a == 52 ? 13 : (uint16_t)(a >> 2);
    for (int c = 0; c < 14; c++)
        for (int b = 0; b < 53; b++)
            main_t[c * 53 + b] =
                (c == 13 || b == 52) ? FL_SIDE_NOT_OFFERED : (uint8_t)(c == (b >> 2));
    uint64_t counts2[256];
    memset(counts2, 0, sizeof counts2);
    fl_side_table f = {main_t, sizeof main_t, 2, {0, 1, 0, 0, 0, 0}, {1, 1, 0, 0, 0, 0},
                       counts2, pre, 53, 1, 14, 53};
    fl_rng g3;
    fl_rng_seed_xoshiro(&g3, 77);
    fl_sim_sums sums3;
    memset(&sums3, 0, sizeof sums3);
    CHECK(fl_simulate_tally(&g3, &r, N, &f, 1, &sums3) == FL_OK);
    CHECK(memcmp(counts, counts2, sizeof counts) == 0);
    fl_side_table badf = f;
    pre[5] = 14; /* a class beyond the main table */
    CHECK(fl_simulate_tally(&g3, &r, 10, &badf, 1, &sums3) == FL_ERR_RANGE);
    pre[5] = 1;
    badf.n_pre = 2; /* no input left for the main table */
    CHECK(fl_simulate_tally(&g3, &r, 10, &badf, 1, &sums3) == FL_ERR_RANGE);
    badf = f;
    badf.pre = NULL;
    CHECK(fl_simulate_tally(&g3, &r, 10, &badf, 1, &sums3) == FL_ERR_NULL);
    badf = f;
    badf.size = 13 * 53; /* class 13 would index past the end */
    CHECK(fl_simulate_tally(&g3, &r, 10, &badf, 1, &sums3) == FL_ERR_RANGE);
    /* tables whose indexes could leave them, or name no input, are refused */
    fl_side_table bad = t;
    bad.size = 53 * 53 - 1;
    CHECK(fl_simulate_tally(&g2, &r, 10, &bad, 1, &sums) == FL_ERR_RANGE);
    bad = t;
    bad.input[1] = FL_SIM_INPUTS;
    CHECK(fl_simulate_tally(&g2, &r, 10, &bad, 1, &sums) == FL_ERR_RANGE);
    bad = t;
    bad.n_inputs = 0;
    CHECK(fl_simulate_tally(&g2, &r, 10, &bad, 1, &sums) == FL_ERR_RANGE);
    bad = t;
    bad.counts = NULL;
    CHECK(fl_simulate_tally(&g2, &r, 10, &bad, 1, &sums) == FL_ERR_NULL);
    CHECK(fl_simulate_tally(&g2, &r, 10, NULL, 1, &sums) == FL_ERR_NULL);
    CHECK(fl_simulate_tally(&g2, &r, 10, NULL, 0, NULL) == FL_ERR_NULL);
}

/* A batched draw the exact test rejects (probability about 5e-5 a draw) is drawn again from
 * a fresh word, on every path: a seed whose first xoshiro256** word is rejected for a fresh
 * 6-deck shoe (its six ranges 312..307), searched for here, deals the same rounds through
 * the tally's two-shoes loop (its shoes fixed to the cut at once) and the arrays' loop. */
static uint64_t xo_first(const uint64_t s[4]) { /* xoshiro256** 1.0's first output */
    const uint64_t v = s[1] * 5;
    return ((v << 7) | (v >> 57)) * 9;
}
static void test_simulate_rejected_draw(void) {
    uint64_t st[4] = {0, 0x9E3779B97F4A7C15u, 0xBF58476D1CE4E5B9u, 0x94D049BB133111EBu};
    __extension__ typedef unsigned __int128 u128;
    u128 prod = 1;
    for (unsigned i = 0; i < 6; i++) prod *= 312 - i;
    const uint64_t w_mod = (uint64_t)(((u128)1 << 64) % prod);
    int found = 0;
    for (uint64_t k = 1; k < 10000000 && !found; k++) {
        st[1] = k;
        uint64_t w = xo_first(st);
        for (unsigned i = 0; i < 6; i++) w = (uint64_t)((u128)w * (312 - i));
        found = w < w_mod;
    }
    CHECK(found);
    static fl_sim_rules r;
    sim_test_rules(&r, 12, 18);
    enum { N = 300 };
    static int32_t net[N];
    fl_rng g1, g2;
    CHECK(fl_rng_set_xoshiro(&g1, st) == FL_OK && fl_rng_set_xoshiro(&g2, st) == FL_OK);
    CHECK(fl_simulate_rounds(&g1, &r, N, net, NULL, NULL, 0, NULL) == FL_OK);
    int64_t sum = 0;
    for (int i = 0; i < N; i++) sum += net[i];
    fl_sim_sums sums;
    memset(&sums, 0, sizeof sums);
    CHECK(fl_simulate_tally(&g2, &r, N, NULL, 0, &sums) == FL_OK);
    CHECK(sums.rounds == N && (int64_t)sums.net_lo == sum);
}

/* Tables counted a batch of rounds at a time (sim.c's lookup_batch) count what each round's
 * initial cards give, on every path of the loop: two shoes in flight (xoshiro256**, a cut),
 * one shoe at a time (a fresh shoe every round; ChaCha20), a call ending inside a batch,
 * dots shared by tables (kept for the batch) and more dots than a batch keeps (computed
 * table by table).  Table k reads P1 and card 1 + k % 4 with strides 53 + k and 1 (distinct
 * dots), its outcomes 0..k + 1 a hash of the two codes, not offered where either is missing;
 * tables 0 and 1 are read twice over (shared dots). */
enum { BT_MAX = 30 };
static uint8_t bt_table[BT_MAX][52 * (53 + BT_MAX) + 53];
static unsigned bt_outcome(int k, unsigned a, unsigned b) {
    if (a == 52 || b == 52) return FL_SIDE_NOT_OFFERED;
    return (a * 7 + b * 3 + (unsigned)k) % (unsigned)(k % BT_MAX + 2);
}
static void test_simulate_tally_batches(void) {
    static fl_sim_rules r;
    sim_test_rules(&r, 12, 18);
    for (int u = 0; u < 11; u++) r.pair[7][u] = 1; /* split eights */
    enum { N = 1001 }; /* seven batches of 128 and a part (not a multiple of 4) */
    static int32_t net[N];
    static uint8_t init[5 * N];
    for (int k = 0; k < BT_MAX; k++)
        for (unsigned a = 0; a < 53; a++)
            for (unsigned b = 0; b < 53; b++)
                bt_table[k][a * (53u + (unsigned)k) + b] = (uint8_t)bt_outcome(k, a, b);
    static const uint8_t key[32] = {7}, nonce[12] = {9};
    const size_t sizes[3] = {2, 4, BT_MAX}; /* with 2 + shared copies, 4 + 2 shared, 30 */
    for (int path = 0; path < 3; path++)
        for (int z = 0; z < 3; z++) {
            r.cut_position = path == 1 ? 0 : 234;
            fl_rng g1, g2;
            if (path == 2) {
                CHECK(fl_rng_seed_chacha(&g1, key, nonce, 0) == FL_OK);
                CHECK(fl_rng_seed_chacha(&g2, key, nonce, 0) == FL_OK);
            } else {
                fl_rng_seed_xoshiro(&g1, 5 + (uint64_t)path);
                fl_rng_seed_xoshiro(&g2, 5 + (uint64_t)path);
            }
            CHECK(fl_simulate_rounds(&g1, &r, N, net, init, NULL, 0, NULL) == FL_OK);
            size_t n = sizes[z] + (z < 2 ? 2 : 0);
            static fl_side_table t[BT_MAX + 2];
            static uint64_t counts[BT_MAX + 2][256], want[BT_MAX + 2][256];
            memset(counts, 0, sizeof counts);
            memset(want, 0, sizeof want);
            for (size_t j = 0; j < n; j++) {
                int k = j < sizes[z] ? (int)j : (int)(j - sizes[z]); /* a copy of table 0, 1 */
                fl_side_table x = {bt_table[k], sizeof bt_table[k], 2,
                                   {0, 1 + (uint32_t)k % 4, 0, 0, 0, 0},
                                   {53 + (uint32_t)k, 1, 0, 0, 0, 0},
                                   counts[j], NULL, 0, 0, 0, 0};
                t[j] = x;
                for (int i = 0; i < N; i++) {
                    unsigned a = init[5 * i], b = init[5 * i + 1 + k % 4];
                    want[j][bt_outcome(k, a == FL_NO_CARD ? 52 : a, b == FL_NO_CARD ? 52 : b)]++;
                }
            }
            fl_sim_sums sums;
            memset(&sums, 0, sizeof sums);
            CHECK(fl_simulate_tally(&g2, &r, N, t, n, &sums) == FL_OK);
            CHECK(sums.rounds == N);
            CHECK(memcmp(counts, want, sizeof counts) == 0);
        }
}

/* fl_simulate_counted: its totals are fl_simulate_tally's for the same generator, its buckets
 * add up to them; a continuous shuffler with a buffer deals every round; bad counts and a
 * true count off a continuous shuffler are refused. */
static void test_simulate_counted(void) {
    static fl_sim_rules r;
    sim_test_rules(&r, 17, 17);
    make_pair_table();
    uint64_t plain_counts[256] = {0};
    fl_side_table t = {pair_table, sizeof pair_table, 2, {0, 1}, {53, 1}, plain_counts,
                       NULL, 0, 0, 0, 0};
    fl_count k;
    memset(&k, 0, sizeof k);
    for (int c = 0; c < 52; c++) k.tags[c] = (int16_t)((c >> 2) == 0 || (c >> 2) >= 9 ? -1
                                                     : (c >> 2) <= 5                ? 1
                                                                                    : 0);
    k.mode = FL_COUNT_TRUE;
    k.resolution = 2;
    k.lowest = -10;
    k.n_buckets = 21;
    enum { N = 30000 };
    fl_rng g1, g2;
    fl_rng_seed_xoshiro(&g1, 5);
    fl_rng_seed_xoshiro(&g2, 5);
    fl_sim_sums plain = {0}, all = {0}, buckets[21];
    memset(buckets, 0, sizeof buckets);
    static uint64_t counts[21 * 256];
    CHECK(fl_simulate_tally(&g1, &r, N, &t, 1, &plain) == FL_OK);
    CHECK(fl_simulate_counted(&g2, &r, N, &t, 1, &k, NULL, &all, buckets, counts) == FL_OK);
    CHECK(all.rounds == N && all.net_lo == plain.net_lo && all.sq_lo == plain.sq_lo);
    uint64_t rounds = 0, net = 0, pairs = 0;
    for (int b = 0; b < 21; b++) {
        rounds += buckets[b].rounds;
        net += buckets[b].net_lo;
        pairs += counts[b * 256 + 1];
    }
    CHECK(rounds == N && net == plain.net_lo && pairs == plain_counts[1]);
    CHECK(buckets[0].rounds > 0 && buckets[20].rounds > 0 && buckets[10].rounds > 0);
    /* a continuous shuffler: a window count, any buffer that leaves the machine a deck */
    fl_csm_model m = {FL_CSM_IDEAL, 0, 260, FL_CSM_RETURN_ROUND, 1};
    k.mode = FL_COUNT_WINDOW;
    k.window = 16;
    memset(&all, 0, sizeof all);
    CHECK(fl_simulate_counted(&g2, &r, N, &t, 1, &k, &m, &all, buckets, counts) == FL_OK);
    CHECK(all.rounds == N);
    m.buffer = 261; /* the machine would keep fewer than 52 cards */
    CHECK(fl_simulate_counted(&g2, &r, 10, &t, 1, &k, &m, &all, buckets, counts) == FL_ERR_RANGE);
    m.buffer = 16;
    k.mode = FL_COUNT_RUNNING; /* which never resets: more than 2^40 rounds could overflow */
    CHECK(fl_simulate_counted(&g2, &r, (size_t)(1ull << 40) + 1, &t, 1, &k, &m, &all, buckets,
                              counts) == FL_ERR_RANGE);
    k.mode = FL_COUNT_TRUE; /* a continuous shuffler never shuffles */
    CHECK(fl_simulate_counted(&g2, &r, 10, &t, 1, &k, &m, &all, buckets, counts) == FL_ERR_RANGE);
    k.mode = FL_COUNT_SUIT_RANGE + 1;
    CHECK(fl_simulate_counted(&g2, &r, 10, &t, 1, &k, NULL, &all, buckets, counts) == FL_ERR_RANGE);
    k.mode = FL_COUNT_WINDOW;
    k.window = 0;
    CHECK(fl_simulate_counted(&g2, &r, 10, &t, 1, &k, NULL, &all, buckets, counts) == FL_ERR_RANGE);
    k.window = 16;
    k.n_buckets = FL_COUNT_MAX_BUCKETS + 1;
    CHECK(fl_simulate_counted(&g2, &r, 10, &t, 1, &k, NULL, &all, buckets, counts) == FL_ERR_RANGE);
    k.n_buckets = 21;
    CHECK(fl_simulate_counted(&g2, &r, 10, &t, 1, &k, NULL, &all, buckets, NULL) == FL_ERR_NULL);
}

/* SP 800-22 kernels: every length from 1 to 200 bits (ending anywhere in a byte or word) runs
 * clean under the sanitizers, and sizes outside a kernel's domain are refused. */
static void test_sp800_22_sizes(void) {
    uint8_t row[26];
    for (unsigned i = 0; i < sizeof row; i++) row[i] = (uint8_t)(i * 37 + 11);
    uint64_t u64[4];
    int64_t i64[3];
    double d[1];
    uint32_t u32[2048];
    int32_t index[8] = {-1, 0, -1, 1, -1, -1, -1, -1};
    uint64_t cycles[1], xi[18];
    uint32_t nu[48];
    for (uint64_t n = 1; n <= 200; n++) {
        CHECK(fl_sts_frequency(row, 1, 26, n, u64) == FL_OK);
        CHECK(u64[0] <= n);
        CHECK(fl_sts_cusum(row, 1, 26, n, i64) == FL_OK);
        CHECK(i64[1] >= 0 && i64[2] <= 0 && i64[1] - i64[2] <= (int64_t)n);
        CHECK(fl_sts_runs(row, 1, 26, n, u64) == FL_OK);
        CHECK(u64[1] >= 1 && u64[1] <= n);
        CHECK(fl_sts_block_frequency(row, 1, 26, n, 1, d) == FL_OK);
        CHECK(fl_sts_pattern_counts(row, 1, 26, n, 1, u32) == FL_OK);
        CHECK(u32[0] + u32[1] == n);
        CHECK(fl_sts_excursions(row, 1, 26, n, cycles, nu, xi) == FL_OK);
        CHECK(cycles[0] >= 1 && cycles[0] <= n);
        if (n % 8 == 0) CHECK(fl_sts_longest_run(row, 1, 26, n, 8, u32) == FL_OK);
        if (n >= 32 * 32) CHECK(fl_sts_rank(row, 1, 26, n, 32, 32, u32) == FL_OK);
        CHECK(fl_sts_rank(row, 1, 26, n, 3, 3, u32) == FL_OK);
        CHECK(u32[0] + u32[1] + u32[2] == n / 9);
        CHECK(fl_sts_rank(row, 1, 26, n, 32, 5, u32) == FL_OK);
        if (n >= 3) {
            CHECK(fl_sts_pattern_counts(row, 1, 26, n, 3, u32) == FL_OK);
            CHECK(fl_sts_overlapping(row, 1, 26, n, 2, n, 5, u32) == FL_OK);
            CHECK(fl_sts_template_counts(row, 1, 26, n, 3, index, 2, 1, u32) == FL_OK);
            CHECK(fl_sts_linear_complexity(row, 1, 26, n, (uint32_t)n, u32) == FL_OK);
            CHECK(fl_sts_universal(row, 1, 26, n, 1, 1, n - 1, u32) == FL_OK);
        }
    }
    CHECK(fl_sts_frequency(row, 1, 25, 201, u64) == FL_ERR_RANGE); /* stride too short */
    CHECK(fl_sts_frequency(row, 1, 26, 0, u64) == FL_ERR_RANGE);
    CHECK(fl_sts_frequency(NULL, 1, 26, 8, u64) == FL_ERR_NULL);
    CHECK(fl_sts_block_frequency(row, 1, 26, 100, 101, d) == FL_ERR_RANGE);
    CHECK(fl_sts_longest_run(row, 1, 26, 200, 12, u32) == FL_ERR_RANGE);
    CHECK(fl_sts_universal(row, 1, 26, 200, 17, 1, 1, u32) == FL_ERR_RANGE);
    CHECK(fl_sts_universal(row, 1, 26, 200, 2, 50, 51, u32) == FL_ERR_RANGE);
    /* Q + K wrapping past 2^64 to 1 or 0 passed Q + K <= n / L */
    CHECK(fl_sts_universal(row, 1, 26, 200, 2, UINT64_MAX, 2, u32) == FL_ERR_RANGE);
    CHECK(fl_sts_universal(row, 1, 26, 200, 2, 2, UINT64_MAX, u32) == FL_ERR_RANGE);
    CHECK(fl_sts_pattern_counts(row, 1, 26, 200, 25, u32) == FL_ERR_RANGE);
    CHECK(fl_sts_template_counts(row, 1, 26, 200, 22, index, 2, 1, u32) == FL_ERR_RANGE);
    CHECK(fl_sts_template_counts(row, 1, 26, 20, 3, index, 2, 8, u32) == FL_ERR_RANGE);
    CHECK(fl_sts_linear_complexity(row, 1, 26, 200, 1, u32) == FL_ERR_RANGE);
    CHECK(fl_sts_overlapping(row, 1, 26, 200, 0, 100, 5, u32) == FL_ERR_RANGE);
    CHECK(fl_sts_rank(row, 1, 26, 200, 0, 3, u32) == FL_ERR_RANGE);
    CHECK(fl_sts_rank(row, 1, 26, 200, 3, 33, u32) == FL_ERR_RANGE);
    /* SP 800-22 2.5.4: 01011001001010101101, M = Q = 3: ranks 2 and 3 (the last 2 bits unused) */
    const uint8_t example[3] = {0x59, 0x2A, 0xD0};
    CHECK(fl_sts_rank(example, 1, 3, 20, 3, 3, u32) == FL_OK);
    CHECK(u32[0] == 1 && u32[1] == 1 && u32[2] == 0);
}

/* The seed search (seedsearch.c): every generator, scaling and direction shuffles to a
 * permutation, and a search of a range holding the seed finds it and only it, from the
 * settled cards (MT19937's lanes included), from the first dealt cards (whole replays) and
 * from every card (the loop's end); MT19937's reference value; bad arguments refused. */
static void test_seedsearch(void) {
    uint64_t w[1300];
    CHECK(fl_ss_words(FL_SS_MT19937, 5489, w, 1300) == FL_OK);
    CHECK(w[0] == 3499211612u);
    uint16_t shoe[312];
    uint8_t obs[312];
    for (int g = FL_SS_GLIBC; g <= FL_SS_CHACHA20; g++) {
        for (int sc = FL_SS_MODULO; sc <= FL_SS_REJECTION; sc++) {
            for (int d = FL_SS_DOWN; d <= FL_SS_UP; d++) {
                uint64_t seed = 1000 + (uint64_t)(g * 7 + sc * 3 + d);
                CHECK(fl_ss_shuffle(g, sc, d, seed, 312, shoe) == FL_OK);
                int seen[312] = {0};
                for (int i = 0; i < 312; i++) seen[shoe[i]]++;
                for (int i = 0; i < 312; i++) CHECK(seen[i] == 1);
                for (int mode = 0; mode < 3; mode++) {
                    memset(obs, FL_NO_CARD, sizeof obs);
                    for (int k = 0; k < 6; k++) {
                        int p = mode == 1 ? k : (d == FL_SS_DOWN ? 311 - k : k);
                        obs[p] = (uint8_t)(shoe[p] % 52);
                    }
                    if (mode == 2)
                        for (int p = 0; p < 312; p++) obs[p] = (uint8_t)(shoe[p] % 52);
                    uint64_t found[4], steps = 0;
                    size_t n_found = 0;
                    uint64_t hi = mode == 1 ? 1080 : 1200; /* replays are slow under ASan */
                    CHECK(fl_ss_search(g, sc, d, 312, obs, 990, hi, found, 4, &n_found, &steps) ==
                          FL_OK);
                    CHECK(n_found == 1 && found[0] == seed);
                    CHECK(steps >= hi - 990);
                }
            }
        }
    }
    uint64_t found[1], steps;
    size_t n_found;
    memset(obs, FL_NO_CARD, sizeof obs);
    CHECK(fl_ss_search(FL_SS_MT19937, 1, 1, 312, obs, 0, 9, found, 1, &n_found, &steps) ==
          FL_ERR_RANGE);
    obs[0] = 52;
    CHECK(fl_ss_search(FL_SS_MT19937, 1, 1, 312, obs, 0, 9, found, 1, &n_found, &steps) ==
          FL_ERR_CARD);
    obs[0] = 3;
    CHECK(fl_ss_search(9, 1, 1, 312, obs, 0, 9, found, 1, &n_found, &steps) == FL_ERR_KIND);
    CHECK(fl_ss_search(FL_SS_MT19937, 4, 1, 312, obs, 0, 9, found, 1, &n_found, &steps) ==
          FL_ERR_KIND);
    CHECK(fl_ss_search(FL_SS_MT19937, 1, 1, 100, obs, 0, 9, found, 1, &n_found, &steps) ==
          FL_ERR_DECKS);
    CHECK(fl_ss_search(FL_SS_MT19937, 1, 1, 312, obs, 9, 0, found, 1, &n_found, &steps) ==
          FL_ERR_RANGE);
    CHECK(fl_ss_search(FL_SS_MT19937, 1, 1, 312, NULL, 0, 9, found, 1, &n_found, &steps) ==
          FL_ERR_NULL);
    CHECK(fl_ss_shuffle(FL_SS_GLIBC, 1, 3, 1, 52, shoe) == FL_ERR_KIND);
    CHECK(fl_ss_words(0, 1, w, 1) == FL_ERR_KIND);
}

int main(void) {
    test_sp800_22_sizes();
    test_simulate_counted();
    test_models();
    test_library_models();
    test_chacha_block();
    test_chacha_encrypt();
    test_xoshiro_first_output();
    test_shuffle_is_permutation();
    test_bad_arguments();
    test_hands();
    test_analyzer();
    test_can_frame_bits();
    test_dealer_final();
    test_simulate_tally();
    test_simulate_tally_batches();
    test_simulate_rejected_draw();
    test_seedsearch();
    if (failures) {
        fprintf(stderr, "%d failed\n", failures);
        return 1;
    }
    printf("native core: all checks passed\n");
    return 0;
}
