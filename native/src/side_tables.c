/*
 * Side-wager lookup tables of the round simulator (fl_simulate_tally, sim.c): checking a
 * caller's tables once before a run (the lookup itself is inline in side_tables.h).
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
