/*
 * Permutation-statistics kernels of the certification battery.
 *
 * Input: an (n_shoes, n) C-contiguous array of uint16, each row a shuffled
 * shoe written as input positions: row[j] = the position, in the order the
 * cards were loaded, of the card the shuffler put at output position j.  A
 * fair shuffler makes each row a uniform random permutation of 0..n-1.
 * n <= FL_MAX_MODEL_CARDS.  Rows must be permutations (fl_check_permutations
 * first); the kernels validate that anyway and refuse a bad row.
 *
 * Per-shoe statistics (one pass over each row, the row in L1):
 *   rising sequences  R = 1 + #{v : pos(v+1) < pos(v)}  (Bayer-Diaconis 1992);
 *                      under uniformity P(R = r) = A(n, r-1) / n!  (Eulerian);
 *   turning points    interior peaks and valleys of the row; mean 2(n-2)/3,
 *                      variance (16n-29)/90 under uniformity;
 *   successions       #{j : row[j+1] = row[j] + 1}; mean (n-1)/n;
 *   guesses           correct next-card guesses by the rising-sequence
 *                      guesser: guess the smallest unseen card above the last
 *                      one seen, else the smallest unseen card.  Under
 *                      uniformity the guess at step j is right with
 *                      probability 1/(n-j), independently: mean H_n.
 * Accumulated tables:
 *   position counts   counts[v * n + j] += 1 when input card v lands at j.
 */
#include <string.h>

#include "feltlab_core.h"

/* returns 0 if row is a permutation of 0..n-1, else 1 + the offending column,
 * storing the value in *bad_value */
static size_t check_row(const uint16_t *row, size_t n, uint16_t *pos, uint32_t *bad_value) {
    memset(pos, 0xFF, n * sizeof *pos);
    for (size_t j = 0; j < n; j++) {
        uint16_t v = row[j];
        if (v >= n || pos[v] != 0xFFFF) {
            *bad_value = v;
            return j + 1;
        }
        pos[v] = (uint16_t)j;
    }
    return 0;
}

fl_status fl_check_permutations(const uint16_t *perm, size_t n_shoes, size_t n, size_t *bad_shoe,
                                size_t *bad_column, uint32_t *bad_value) {
    if (!bad_shoe || !bad_column || !bad_value || (n_shoes && n && !perm)) return FL_ERR_NULL;
    if (n < 1 || n > FL_MAX_MODEL_CARDS) return FL_ERR_RANGE;
    uint16_t pos[FL_MAX_MODEL_CARDS];
    for (size_t s = 0; s < n_shoes; s++) {
        size_t c = check_row(perm + s * n, n, pos, bad_value);
        if (c) {
            *bad_shoe = s;
            *bad_column = c - 1;
            return FL_ERR_CARD;
        }
    }
    return FL_OK;
}

static inline size_t next_unseen(const uint64_t *unseen, size_t words, size_t from) {
    size_t w = from >> 6;
    if (w >= words) return (size_t)-1;
    uint64_t bits = unseen[w] & (~(uint64_t)0 << (from & 63));
    while (!bits) {
        if (++w >= words) return (size_t)-1;
        bits = unseen[w];
    }
    return (w << 6) + (size_t)__builtin_ctzll(bits);
}

fl_status fl_battery_pass(const uint16_t *perm, size_t n_shoes, size_t n, uint16_t *rising,
                          uint16_t *turning, uint16_t *successions, uint16_t *guesses,
                          int64_t *position_counts, size_t *bad_shoe) {
    if (!bad_shoe || (n_shoes && (!perm || !rising || !turning || !successions || !guesses)))
        return FL_ERR_NULL;
    if (n < 1 || n > FL_MAX_MODEL_CARDS) return FL_ERR_RANGE;
    uint16_t pos[FL_MAX_MODEL_CARDS];
    uint64_t unseen[FL_MAX_MODEL_CARDS / 64];
    const size_t words = (n + 63) / 64;
    for (size_t s = 0; s < n_shoes; s++) {
        const uint16_t *row = perm + s * n;
        uint32_t bad_value;
        if (check_row(row, n, pos, &bad_value)) {
            *bad_shoe = s;
            return FL_ERR_CARD;
        }
        unsigned r = 1, t = 0, sc = 0, g = 0;
        for (size_t v = 0; v + 1 < n; v++) r += pos[v + 1] < pos[v];
        for (size_t j = 0; j + 1 < n; j++) {
            sc += row[j + 1] == row[j] + 1;
            if (j > 0) {
                int up_before = row[j] > row[j - 1], up_after = row[j + 1] > row[j];
                t += up_before != up_after;
            }
        }
        /* the rising-sequence guesser */
        memset(unseen, 0, words * sizeof *unseen);
        for (size_t v = 0; v < n; v++) unseen[v >> 6] |= (uint64_t)1 << (v & 63);
        size_t last = (size_t)-1;
        for (size_t j = 0; j < n; j++) {
            size_t guess = (size_t)-1;
            if (last != (size_t)-1) guess = next_unseen(unseen, words, last + 1);
            if (guess == (size_t)-1) guess = next_unseen(unseen, words, 0);
            uint16_t v = row[j];
            g += guess == v;
            unseen[v >> 6] &= ~((uint64_t)1 << (v & 63));
            last = v;
        }
        rising[s] = (uint16_t)r;
        turning[s] = (uint16_t)t;
        successions[s] = (uint16_t)sc;
        guesses[s] = (uint16_t)g;
        if (position_counts)
            for (size_t j = 0; j < n; j++) position_counts[(size_t)row[j] * n + j]++;
    }
    return FL_OK;
}

fl_status fl_adjacent_rank_pairs(const uint8_t *codes, size_t n_shoes, size_t n, int64_t *counts) {
    if (!counts || (n_shoes && n && !codes)) return FL_ERR_NULL;
    for (size_t s = 0; s < n_shoes; s++) {
        const uint8_t *row = codes + s * n;
        for (size_t j = 0; j < n; j++)
            if (row[j] >= 52) return FL_ERR_CARD;
        for (size_t j = 0; j + 1 < n; j++) counts[(row[j] >> 2) * 13 + (row[j + 1] >> 2)]++;
    }
    return FL_OK;
}

fl_status fl_successive_shoe_rho(const uint16_t *perm, size_t n_shoes, size_t n, double *rho) {
    if (n_shoes > 1 && (!perm || !rho)) return FL_ERR_NULL;
    if (n < 2 || n > FL_MAX_MODEL_CARDS) return FL_ERR_RANGE;
    uint16_t pa[FL_MAX_MODEL_CARDS], pb[FL_MAX_MODEL_CARDS];
    uint32_t bad;
    if (n_shoes && check_row(perm, n, pa, &bad)) return FL_ERR_CARD;
    /* Spearman's rho of the cards' positions in shoe s and shoe s + 1 */
    const double mean = (double)(n - 1) / 2.0;
    const double denom = (double)n * ((double)n * n - 1.0) / 12.0;
    for (size_t s = 0; s + 1 < n_shoes; s++) {
        if (check_row(perm + (s + 1) * n, n, pb, &bad)) return FL_ERR_CARD;
        double acc = 0.0;
        for (size_t v = 0; v < n; v++) acc += ((double)pa[v] - mean) * ((double)pb[v] - mean);
        rho[s] = acc / denom;
        memcpy(pa, pb, n * sizeof *pa);
    }
    return FL_OK;
}
