/*
 * Exact laws of the continuous shuffler models (native/src/csm.c), built with
 * -fsanitize=address,undefined by `make test-native`.  The statistical laws (uniformity of the
 * ideal machine, the next-card law of one slot) are in tests/native/test_csm.py.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "csm.h"
#include "feltlab_core.h"

#include "check.h"


/* The earliest round in which the card dealt j-th in round r can be dealt again: its return
 * index is r * k + j; it enters the machine with the return of index + B, made at the end of
 * the batch of that return's round. */
static size_t earliest_again(size_t r, size_t j, size_t k, size_t buffer, size_t batch) {
    const size_t q = (r * k + j + buffer) / k;
    return (q / batch + 1) * batch;
}

/* One deck (every code once): no card reappears before its earliest round, and the bound is
 * attained (it is the exact law, not merely a bound). */
static void check_holdout(uint32_t kind, uint32_t buffer, uint32_t policy, uint32_t batch,
                          uint32_t k) {
    const size_t n = 4000;
    uint8_t *out = malloc(n * k);
    fl_rng g;
    fl_rng_seed_xoshiro(&g, 2026u + buffer * 7u + batch + k + kind);
    fl_csm_model model = {kind, 7, buffer, policy, batch};
    CHECK(fl_csm_stream(&g, &model, 1, n, k, out) == FL_OK);
    size_t last_r[52], last_j[52];
    int seen[52] = {0};
    size_t violations = 0, attained = 0;
    const size_t b = policy == FL_CSM_RETURN_BATCH ? batch : 1;
    for (size_t r = 0; r < n; r++) {
        for (size_t j = 0; j < k; j++) {
            const uint8_t c = out[r * k + j];
            if (c >= 52) {
                violations++;
                continue;
            }
            if (seen[c]) {
                const size_t e = earliest_again(last_r[c], last_j[c], k, buffer, b);
                violations += r < e;
                attained += r == e;
            }
            for (size_t i = 0; i < j; i++) violations += out[r * k + i] == c; /* one deck */
            seen[c] = 1;
            last_r[c] = r;
            last_j[c] = j;
        }
    }
    CHECK(violations == 0);
    CHECK(attained > 0);
    free(out);
}

/* Every card is in exactly one place: the machine, the buffer, the rack or the table. */
static void check_conservation(uint32_t kind, uint32_t policy) {
    fl_csm_state *m = malloc(fl_csm_state_size());
    fl_rng g;
    fl_rng_seed_xoshiro(&g, 5);
    fl_csm_model model = {kind, 3, 9, policy, 2};
    CHECK(fl_csm_init(m, &model, 2, &g) == FL_OK);
    CHECK(m->n == 104);
    int where[52] = {0}; /* copies of each code outside the machine */
    uint8_t round[5];
    for (int r = 0; r < 500; r++) {
        for (int j = 0; j < 5; j++) {
            round[j] = fl_csm_deal(m);
            CHECK(fl_csm_ok(m));
            where[round[j]]++;
            CHECK(where[round[j]] <= 2); /* two decks */
        }
        fl_csm_return(m, round, 5);
        uint32_t outside = m->buf_len + m->pend_len;
        CHECK(m->n + outside == 104);
        int held[52] = {0};
        for (uint32_t i = 0; i < m->buf_len; i++) held[m->buf[(m->buf_head + i) % 9]]++;
        for (uint32_t i = 0; i < m->pend_len; i++) held[m->pend[i]]++;
        for (int c = 0; c < 52; c++) {
            CHECK(held[c] <= where[c]);
            where[c] = held[c];
        }
        /* the buffer fills with the first 9 returns (round 2, or the first batch) and stays */
        if (r >= 2) CHECK(m->buf_len == 9);
    }
    if (kind == FL_CSM_SLOTS) {
        uint32_t sum = 0, listed = 0;
        for (int s = 0; s < 3; s++) sum += m->slot_len[s];
        for (uint32_t i = 0; i < m->n_nonempty; i++) {
            CHECK(m->slot_len[m->nonempty[i]] > 0);
            CHECK(m->where[m->nonempty[i]] == i);
            listed++;
        }
        CHECK(sum == m->n);
        for (int s = 0; s < 3; s++) listed -= m->slot_len[s] > 0;
        CHECK(listed == 0);
    }
    free(m);
}

/* The same generator, the same stream; another generator (ChaCha20), another stream. */
static void check_determinism(void) {
    uint8_t a[300], b[300];
    fl_csm_model model = {FL_CSM_SLOTS, 38, 16, FL_CSM_RETURN_BATCH, 2};
    fl_rng g;
    fl_rng_seed_xoshiro(&g, 11);
    CHECK(fl_csm_stream(&g, &model, 6, 50, 6, a) == FL_OK);
    fl_rng_seed_xoshiro(&g, 11);
    CHECK(fl_csm_stream(&g, &model, 6, 50, 6, b) == FL_OK);
    CHECK(memcmp(a, b, sizeof a) == 0);
    uint8_t key[32] = {1}, nonce[12] = {0};
    CHECK(fl_rng_seed_chacha(&g, key, nonce, 0) == FL_OK);
    CHECK(fl_csm_stream(&g, &model, 6, 50, 6, a) == FL_OK);
    CHECK(memcmp(a, b, sizeof a) != 0);
}

static void check_bad_arguments(void) {
    uint8_t out[64];
    fl_rng g;
    fl_rng_seed_xoshiro(&g, 1);
    fl_csm_model model = {FL_CSM_IDEAL, 0, 0, FL_CSM_RETURN_ROUND, 1};
    CHECK(fl_csm_stream(NULL, &model, 1, 1, 1, out) == FL_ERR_NULL);
    CHECK(fl_csm_stream(&g, NULL, 1, 1, 1, out) == FL_ERR_NULL);
    CHECK(fl_csm_stream(&g, &model, 1, 1, 1, NULL) == FL_ERR_NULL);
    CHECK(fl_csm_stream(&g, &model, 0, 1, 1, out) == FL_ERR_DECKS);
    CHECK(fl_csm_stream(&g, &model, 9, 1, 1, out) == FL_ERR_DECKS);
    CHECK(fl_csm_stream(&g, &model, 1, 1, 0, out) == FL_ERR_RANGE);
    model.kind = 2;
    CHECK(fl_csm_stream(&g, &model, 1, 1, 1, out) == FL_ERR_KIND);
    model.kind = FL_CSM_SLOTS;
    CHECK(fl_csm_stream(&g, &model, 1, 1, 1, out) == FL_ERR_RANGE); /* 0 slots */
    model.slots = 256;
    CHECK(fl_csm_stream(&g, &model, 1, 1, 1, out) == FL_ERR_RANGE);
    model.slots = 255;
    CHECK(fl_csm_stream(&g, &model, 1, 1, 1, out) == FL_OK);
    model.policy = 2;
    CHECK(fl_csm_stream(&g, &model, 1, 1, 1, out) == FL_ERR_KIND);
    model.policy = FL_CSM_RETURN_BATCH;
    model.batch = 0;
    CHECK(fl_csm_stream(&g, &model, 1, 1, 1, out) == FL_ERR_RANGE);
    model.batch = 5;
    model.buffer = 41; /* 41 + 5 * 2 = 51 < 52: one card always in the machine */
    CHECK(fl_csm_stream(&g, &model, 1, 64 / 2, 2, out) == FL_OK);
    model.buffer = 42;
    CHECK(fl_csm_stream(&g, &model, 1, 1, 2, out) == FL_ERR_RANGE);
    g.kind = 9;
    model.buffer = 0;
    CHECK(fl_csm_stream(&g, &model, 1, 1, 1, out) == FL_ERR_KIND);
}

int main(void) {
    for (uint32_t kind = 0; kind < 2; kind++) {
        check_holdout(kind, 0, FL_CSM_RETURN_ROUND, 1, 1);
        check_holdout(kind, 16, FL_CSM_RETURN_ROUND, 1, 1);
        check_holdout(kind, 16, FL_CSM_RETURN_ROUND, 1, 5);
        check_holdout(kind, 8, FL_CSM_RETURN_BATCH, 3, 4);
        check_holdout(kind, 0, FL_CSM_RETURN_BATCH, 2, 7);
        check_conservation(kind, FL_CSM_RETURN_ROUND);
        check_conservation(kind, FL_CSM_RETURN_BATCH);
    }
    check_determinism();
    check_bad_arguments();
    if (failures) {
        fprintf(stderr, "%d failed\n", failures);
        return 1;
    }
    printf("continuous shufflers: all checks passed\n");
    return 0;
}
