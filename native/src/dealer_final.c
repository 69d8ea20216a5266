/*
 * The exact distribution of the dealer's final hand by number of cards and final total
 * (fl_dealer_final, feltlab_core.h): the standard recursive draw-out of the dealer's hand
 * over the remaining shoe composition, each card drawn without replacement with
 * probability count / remaining, the dealer standing on hard 17 and on soft 17 unless h17.
 * The dealer completes the hand whatever the players hold (a wager such as Buster Blackjack
 * in play); the hole card is the second card of the draw-out, so a peeked blackjack is the
 * two-card 21 of class 10.  No memo: a draw sequence is at most 24 cards deep and the tree
 * of a 1..8-deck shoe has at most a few hundred thousand nodes.
 */
#include <string.h>

#include "internal.h"

typedef struct {
    uint32_t c[10];
    uint32_t left;
    int h17;
    double *out;
} df_state;

static void draw_out(df_state *s, unsigned hard, unsigned aces, unsigned n, double p) {
    unsigned soft = aces && hard <= 11;
    unsigned total = soft ? hard + 10 : hard;
    if (total > 17 || (total == 17 && !(soft && s->h17))) {
        unsigned k = (n == 2 && total == 21) ? 10u : (total > 26 ? 9u : total - 17);
        if (n > FL_DF_MAX_CARDS) n = FL_DF_MAX_CARDS;
        s->out[n * FL_DF_CLASSES + k] += p;
        return;
    }
    if (s->left == 0 || n >= FL_DF_MAX_CARDS) { /* the shoe ran out: left standing (never
                                                   for a shoe of 26 or more cards) */
        unsigned k = total >= 17 ? total - 17 : 0;
        s->out[n * FL_DF_CLASSES + k] += p;
        return;
    }
    for (unsigned v = 0; v < 10; v++) {
        if (!s->c[v]) continue;
        double q = p * (double)s->c[v] / (double)s->left;
        s->c[v]--;
        s->left--;
        draw_out(s, hard + v + 1, aces + (v == 0), n + 1, q);
        s->c[v]++;
        s->left++;
    }
}

fl_status fl_dealer_final(const uint32_t *counts, uint32_t up, uint32_t h17, double *out) {
    if (!counts || !out) return FL_ERR_NULL;
    if (up > 9) return FL_ERR_RANGE;
    df_state s;
    s.left = 0;
    for (int v = 0; v < 10; v++) {
        if (counts[v] > 4096) return FL_ERR_RANGE;
        s.c[v] = counts[v];
        s.left += counts[v];
    }
    if (s.left < 1 || s.left > 4096) return FL_ERR_RANGE;
    s.h17 = h17 != 0;
    s.out = out;
    memset(out, 0, sizeof(double) * (FL_DF_MAX_CARDS + 1) * FL_DF_CLASSES);
    draw_out(&s, up + 1, up == 0, 1, 1.0);
    return FL_OK;
}
