/*
 * The round record (fl_round_record, feltlab_core.h): filled by the round simulator
 * (sim.c) from its hands after settlement.  The same values as feltlab.record builds from
 * the Python round engine: totals from fl_card_value, blackjack a two-card 21 not from a
 * split, suited when every dealer card has one suit.
 */
#include <stddef.h>
#include <string.h>

#include "internal.h"

static unsigned best_of(const uint8_t *cards, unsigned n) {
    unsigned hard = 0, aces = 0;
    for (unsigned i = 0; i < n; i++) {
        hard += fl_card_value[cards[i]];
        aces += fl_card_value[cards[i]] == 1;
    }
    return aces && hard <= 11 ? hard + 10 : hard;
}

void fl_record_clear(fl_round_record *rec) {
    memset(rec, 0, sizeof *rec);
    memset(rec->hand_cards, FL_NO_CARD, sizeof rec->hand_cards);
    memset(rec->dealer_cards, FL_NO_CARD, sizeof rec->dealer_cards);
}

void fl_record_clear_fields(fl_round_record *rec) {
    /* every field before the hands' cards, and the dealer's scalars after them */
    memset(rec, 0, offsetof(fl_round_record, hand_cards));
    memset(&rec->dealer_n_cards, 0,
           offsetof(fl_round_record, dealer_cards) - offsetof(fl_round_record, dealer_n_cards));
}

void fl_record_hand(fl_round_record *rec, const uint8_t *cards, unsigned n, int doubled,
                    int from_split, int surrendered) {
    unsigned i = rec->n_hands;
    if (i >= FL_REC_HANDS) return;
    if (n > FL_REC_CARDS) n = FL_REC_CARDS;
    unsigned t = best_of(cards, n);
    memcpy(rec->hand_cards[i], cards, n);
    rec->hand_n_cards[i] = (uint8_t)n;
    rec->hand_total[i] = (uint8_t)t;
    rec->hand_bust[i] = t > 21;
    rec->hand_blackjack[i] = n == 2 && t == 21 && !from_split;
    rec->hand_doubled[i] = doubled != 0;
    rec->hand_surrendered[i] = surrendered != 0;
    rec->n_hands = (uint8_t)(i + 1);
}

void fl_record_dealer(fl_round_record *rec, const uint8_t *cards, unsigned n) {
    if (n > FL_REC_CARDS) n = FL_REC_CARDS;
    unsigned t = best_of(cards, n);
    int suited = n > 0;
    for (unsigned i = 1; i < n; i++) suited &= (cards[i] & 3) == (cards[0] & 3);
    memcpy(rec->dealer_cards, cards, n);
    rec->dealer_n_cards = (uint8_t)n;
    rec->dealer_total = (uint8_t)t;
    rec->dealer_bust = t > 21;
    rec->dealer_blackjack = n == 2 && t == 21;
    rec->dealer_up = n ? cards[0] : FL_NO_CARD;
    rec->dealer_suited = (uint8_t)suited;
}
