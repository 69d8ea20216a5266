/*
 * Side-wager lookup tables of the round simulator (fl_simulate_tally, sim.c): checking a
 * caller's tables once before a run, and counting a tally's rounds in them a batch at a time
 * (one round's lookup, for the per-round arrays path, is inline in side_tables.h).
 */
#include <stddef.h>
#include <string.h>

#include "feltlab_core.h"
#include "side_tables.h"

/* values each per-round input takes: the five cards (codes 0..51 and 52 for none), then the
 * round record's fields (feltlab_core.h).  Each bound holds by construction of the record
 * (record.c): a hand or the dealer holds at most FL_REC_CARDS cards; a total is at most
 * 30 (20, then a ten); n_hands at most FL_REC_HANDS; the flags are 0 or 1. */
#define HANDS4(v) v, v, v, v
static const uint8_t input_values[FL_SIM_INPUTS] = {
    FL_SIDE_CARD_VALUES, FL_SIDE_CARD_VALUES, FL_SIDE_CARD_VALUES, FL_SIDE_CARD_VALUES,
    FL_SIDE_CARD_VALUES,
    FL_REC_HANDS + 1,                /* n_hands */
    HANDS4(FL_REC_CARDS + 1),        /* hand_n_cards */
    HANDS4(32),                      /* hand_total */
    HANDS4(2), HANDS4(2),            /* hand_bust, hand_blackjack */
    HANDS4(2), HANDS4(2),            /* hand_doubled, hand_surrendered */
    FL_REC_CARDS + 1, 32, 2, 2,      /* dealer_n_cards, _total, _bust, _blackjack */
    FL_SIDE_CARD_VALUES, 2,          /* dealer_up (52: none), dealer_suited */
    14, 14, 14};                     /* the dealer's first three ranks (13: none) */

uint32_t fl_side_input_values(uint32_t input) {
    return input < FL_SIM_INPUTS ? input_values[input] : 0;
}

/* where each record input lies in fl_round_record (a byte each) */
#define AT(field) (uint16_t) offsetof(fl_round_record, field)
#define AT4(field) AT(field[0]), AT(field[1]), AT(field[2]), AT(field[3])
static const uint16_t input_offset[FL_SIM_INPUTS] = {
    0, 0, 0, 0, 0, /* the cards: not from the record */
    AT(n_hands),
    AT4(hand_n_cards), AT4(hand_total), AT4(hand_bust), AT4(hand_blackjack),
    AT4(hand_doubled), AT4(hand_surrendered),
    AT(dealer_n_cards), AT(dealer_total), AT(dealer_bust), AT(dealer_blackjack), AT(dealer_up),
    AT(dealer_suited), AT(dealer_cards[0]), AT(dealer_cards[1]), AT(dealer_cards[2])};

void fl_side_record_inputs(const fl_round_record *rec, const uint8_t *used, unsigned n_used,
                           uint8_t in[FL_SIM_INPUTS]) {
    const uint8_t *bytes = (const uint8_t *)rec;
    for (unsigned k = 0; k < n_used; k++) {
        unsigned i = used[k];
        unsigned v = bytes[input_offset[i]];
        if (i == FL_IN_DEALER_UP && v == FL_NO_CARD) v = 52;
        if (i >= FL_IN_DEALER_RANK) v = v == FL_NO_CARD ? 13 : v >> 2; /* a rank */
        /* a value past its bound cannot come from record.c; were it to, it is held at the
         * last value rather than read outside a table */
        in[i] = (uint8_t)(v < input_values[i] ? v : input_values[i] - 1u);
    }
}

unsigned fl_side_record_inputs_used(const fl_side_table *t, size_t n, uint8_t used[FL_SIM_INPUTS]) {
    uint8_t seen[FL_SIM_INPUTS] = {0};
    unsigned n_used = 0;
    for (size_t k = 0; k < n; k++)
        for (uint32_t j = 0; j < t[k].n_inputs; j++) {
            uint32_t i = t[k].input[j];
            if (i >= FL_IN_N_HANDS && i < FL_SIM_INPUTS && !seen[i]) {
                seen[i] = 1;
                used[n_used++] = (uint8_t)i;
            }
        }
    return n_used;
}

fl_status fl_side_check_tables(const fl_side_table *t, size_t n) {
    if (n && !t) return FL_ERR_NULL;
    if (n > FL_SIDE_MAX_TABLES) return FL_ERR_RANGE;
    for (size_t k = 0; k < n; k++) {
        if (!t[k].table || !t[k].counts) return FL_ERR_NULL;
        if (t[k].n_inputs < 1 || t[k].n_inputs > FL_SIDE_MAX_INPUTS) return FL_ERR_RANGE;
        if (t[k].n_pre >= t[k].n_inputs) return FL_ERR_RANGE;
        uint64_t top_pre = 0, top = 0; /* the largest reachable indexes */
        for (uint32_t j = 0; j < t[k].n_inputs; j++) {
            if (t[k].input[j] >= FL_SIM_INPUTS || t[k].stride[j] > ((uint32_t)1 << 26))
                return FL_ERR_RANGE;
            uint64_t step = (uint64_t)t[k].stride[j] * (input_values[t[k].input[j]] - 1);
            if (j < t[k].n_pre)
                top_pre += step;
            else
                top += step;
        }
        if (t[k].n_pre) {
            if (!t[k].pre) return FL_ERR_NULL;
            if (top_pre >= t[k].pre_size || t[k].n_classes < 1 ||
                t[k].class_stride > ((uint32_t)1 << 26))
                return FL_ERR_RANGE;
            for (size_t i = 0; i < t[k].pre_size; i++)
                if (t[k].pre[i] >= t[k].n_classes) return FL_ERR_RANGE;
            top += (uint64_t)(t[k].n_classes - 1) * t[k].class_stride;
        }
        if (top >= t[k].size) return FL_ERR_RANGE;
    }
    return FL_OK;
}


/* the id of the dot over t's inputs j0..j1-1, added when new */
static uint8_t dot_id(fl_side_lookups *L, const fl_side_table *t, uint32_t j0, uint32_t j1) {
    fl_side_dot d;
    memset(&d, 0, sizeof d);
    d.n = (uint8_t)(j1 - j0);
    for (uint32_t j = j0; j < j1; j++) {
        d.input[j - j0] = (uint8_t)t->input[j];
        d.stride[j - j0] = t->stride[j];
    }
    for (unsigned g = 0; g < L->n_dots; g++)
        if (!memcmp(&L->dot[g], &d, sizeof d)) return (uint8_t)g;
    L->dot[L->n_dots] = d;
    return (uint8_t)L->n_dots++;
}

void fl_side_make_lookups(const fl_side_table *t, size_t n, fl_side_lookups *L) {
    memset(&L->dot[0], 0, sizeof L->dot[0]); /* dot 0: no input, always 0 */
    L->n_dots = 1;
    L->n = n;
    for (size_t k = 0; k < n; k++) {
        fl_side_lookup *lk = &L->lk[k];
        lk->table = t[k].table;
        lk->counts = t[k].counts;
        lk->pre = t[k].pre;
        lk->class_stride = t[k].class_stride;
        lk->a = t[k].n_pre ? dot_id(L, &t[k], 0, t[k].n_pre) : 0;
        lk->b = dot_id(L, &t[k], t[k].n_pre, t[k].n_inputs);
        uint8_t top1 = 0; /* 1 + the largest outcome: FL_SIDE_NOT_OFFERED (255) wraps to 0 */
        for (size_t i = 0; i < t[k].size; i++) {
            const uint8_t v = (uint8_t)(t[k].table[i] + 1u);
            top1 = v > top1 ? v : top1;
        }
        lk->top = (uint8_t)(top1 ? top1 - 1 : 0);
        lk->n_pre = (uint8_t)t[k].n_pre;
        lk->n_rest = (uint8_t)(t[k].n_inputs - t[k].n_pre);
        for (uint32_t j = 0; j < t[k].n_inputs; j++) {
            lk->input[j] = (uint8_t)t[k].input[j];
            lk->stride[j] = t[k].stride[j];
        }
    }
}

/* sum of in[ix[j]] * st[j] over j < n (n <= FL_SIDE_MAX_INPUTS), unrolled */
static inline uint32_t input_dot(const uint8_t *in, const uint8_t *ix, const uint32_t *st, unsigned n) {
    uint32_t s = 0;
    switch (n) {
    case 8: s += in[ix[7]] * st[7]; /* fallthrough */
    case 7: s += in[ix[6]] * st[6]; /* fallthrough */
    case 6: s += in[ix[5]] * st[5]; /* fallthrough */
    case 5: s += in[ix[4]] * st[4]; /* fallthrough */
    case 4: s += in[ix[3]] * st[3]; /* fallthrough */
    case 3: s += in[ix[2]] * st[2]; /* fallthrough */
    case 2: s += in[ix[1]] * st[1]; /* fallthrough */
    case 1: s += in[ix[0]] * st[0]; /* fallthrough */
    default: break;
    }
    return s;
}


/* acc[j] = the dot of row j over inputs ix[0..n-1] with strides st (n <= FL_SIDE_MAX_INPUTS),
 * the common widths unrolled with the inputs and strides held in registers */
static inline void rows_dot(uint32_t *acc, const fl_side_batch *b, unsigned m, const uint8_t *ix,
                            const uint32_t *st, unsigned n) {
    const unsigned i0 = ix[0], i1 = n > 1 ? ix[1] : 0, i2 = n > 2 ? ix[2] : 0;
    const uint32_t s0 = st[0], s1 = n > 1 ? st[1] : 0, s2 = n > 2 ? st[2] : 0;
    switch (n) {
    case 0:
        for (unsigned j = 0; j < m; j++) acc[j] = 0;
        return;
    case 1:
        for (unsigned j = 0; j < m; j++) acc[j] = b->in[j][i0] * s0;
        return;
    case 2:
        for (unsigned j = 0; j < m; j++) acc[j] = b->in[j][i0] * s0 + b->in[j][i1] * s1;
        return;
    case 3:
        for (unsigned j = 0; j < m; j++)
            acc[j] = b->in[j][i0] * s0 + b->in[j][i1] * s1 + b->in[j][i2] * s2;
        return;
    default:
        for (unsigned j = 0; j < m; j++) acc[j] = input_dot(b->in[j], ix, st, n);
    }
}

/* count the batch's rows in each table: each row's outcome first (independent loads), then
 * a histogram of the outcomes in four interleaved parts (a count added every round would be
 * a chain through memory), added to the table's counts over the outcomes it has; in a
 * counted run (COUNTED) each row's outcome is counted in its own bucket */
void fl_side_lookup_batch(const fl_side_lookups *L, fl_side_batch *b, const int counted) {
    const unsigned m = b->n;
    const int kept = L->n_dots <= FL_SIDE_BATCH_DOTS;
    uint32_t dots[FL_SIDE_BATCH_DOTS][FL_SIDE_BATCH], da[FL_SIDE_BATCH], db[FL_SIDE_BATCH];
    uint8_t out[FL_SIDE_BATCH];
    uint32_t h[4][256];
    if (kept)
        for (unsigned g = 0; g < L->n_dots; g++)
            rows_dot(dots[g], b, m, L->dot[g].input, L->dot[g].stride, L->dot[g].n);
    for (size_t k = 0; k < L->n; k++) {
        const fl_side_lookup *t = &L->lk[k];
        const uint8_t *tab = t->table;
        const uint32_t *vb = db;
        if (kept) {
            vb = dots[t->b];
        } else {
            rows_dot(db, b, m, t->input + t->n_pre, t->stride + t->n_pre, t->n_rest);
        }
        if (t->n_pre) {
            const uint32_t *va = da;
            if (kept)
                va = dots[t->a];
            else
                rows_dot(da, b, m, t->input, t->stride, t->n_pre);
            const uint16_t *pre = t->pre;
            const uint32_t cs = t->class_stride;
            for (unsigned j = 0; j < m; j++) out[j] = tab[pre[va[j]] * cs + vb[j]];
        } else {
            for (unsigned j = 0; j < m; j++) out[j] = tab[vb[j]];
        }
        uint64_t *counts = t->counts;
        if (counted) {
            for (unsigned j = 0; j < m; j++) counts[b->off[j] + out[j]]++;
            continue;
        }
        const unsigned top = t->top, no = FL_SIDE_NOT_OFFERED;
        for (unsigned q = 0; q < 4; q++) {
            memset(h[q], 0, (top + 1) * sizeof h[q][0]);
            h[q][no] = 0;
        }
        unsigned j = 0;
        for (; j + 4 <= m; j += 4) {
            h[0][out[j]]++;
            h[1][out[j + 1]]++;
            h[2][out[j + 2]]++;
            h[3][out[j + 3]]++;
        }
        for (; j < m; j++) h[0][out[j]]++;
        for (unsigned c = 0; c <= top; c++)
            counts[c] += (uint64_t)h[0][c] + h[1][c] + h[2][c] + h[3][c];
        counts[no] += (uint64_t)h[0][no] + h[1][no] + h[2][no] + h[3][no];
    }
    b->n = 0;
}
