/*
 * The combinatorial analyzer of the main wager: exact expected values of one
 * box played from a given shoe composition, by enumeration of hand
 * compositions (E. O. Thorp and P. Griffin's method, as in every
 * combinatorial analyzer).  Written for feltlab from the published method; no
 * code of any other analyzer is used.
 *
 * Shoe: counts of the ten card values (index 0 aces .. 9 ten-valued cards).
 * Cards are exchangeable, so the value of a hand depends only on the multiset
 * of cards it holds and the cards removed from the shoe.
 *
 * Dealer: the distribution of the dealer's final total (17..21, bust,
 * blackjack) is computed for each composition by a forward pass over the DAG
 * of the dealer's drawn multisets (each multiset's probability is the same
 * for every order of its cards, so orders merge).  Under peek and an ace or
 * ten up, the hole card is conditioned on not completing a blackjack, and so
 * is every card the player draws: p(c) = n_c (N - 1 - n_X + [c = X]) /
 * ((N - 1)(N - n_X)), X the excluded hole value (Bayes; the hole is one of the
 * unseen cards).
 *
 * Strategies: FL_AN_CDZ is the composition-dependent optimum of each hand
 * (stand, hit, double, split, surrender) with the pre-split strategy reused
 * after splitting (CDZ-, E. Farmer's term; bjstrat.net and
 * blackjacktheforum.com threads on CDZ-): a post-split hand plays as the
 * same cards would play as an unsplit hand (its decision computed against the
 * shoe less its own cards and the up card), and doubles only under DAS.
 * FL_AN_TABLE plays the total-dependent tables of the round simulator
 * (sim.c) exactly as the simulator does.
 *
 * Splits are exact for a zero-memory strategy (both strategies are): the
 * second cards of the split hands are drawn first (exchangeability), each
 * pair card drawn while hands < limit makes a new hand; a hand completed with
 * a non-pair card while resplitting was possible is an "N" hand, one filled
 * after the limit an "x" hand.  For each such pattern the value of a hand,
 * conditioned on the statuses of the other second cards, is expanded by
 * inclusion-exclusion (1{non-pair} = 1 - 1{pair}) into sums of EV_N(k) and
 * EV_x(k): the expected value of one hand from the shoe with k pair cards
 * removed (E. Farmer's grouping of split outcomes by pattern, by linearity of
 * expectation).
 *
 * No hole card (European): the dealer's blackjack is an outcome of the
 * dealer's draw.  Under "all" it takes every wager.  Under "original" and
 * "original and busted", an unsplit hand's live wager loses one unit and a
 * busted one its whole wager; a split box loses one unit once (-P(dealer
 * blackjack), exact by exchangeability), busted hands their stakes (or, under
 * "original", only when no blackjack shows), and the event where every split
 * hand busts first (the dealer then takes no second card: every wager lost
 * whole) is enumerated exactly over the hands' busting plays (all_bust_
 * correction).  A split with too many busting plays for the budget keeps the
 * one-unit count and is reported in fl_analysis.p_split_approx.
 *
 * No global state: every buffer is allocated per call and freed.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "feltlab_core.h"

#define NV 10
#define NODE_CAP 3200 /* multisets of values 1..10 with sum <= 21: 3083 */
#define DSTATE_CAP 2048
#define HASH_BITS 13
#define HASH_SIZE (1u << HASH_BITS)
#define MAXK 10
#define DHASH_SIZE 4096u
#define FL_AN_ALL_BUST_BUDGET 2000000L

typedef struct {
    uint8_t cnt[NV];
    uint8_t n, hard;
    int16_t child[NV]; /* -1: bust */
} an_node;

typedef struct {
    uint8_t d[NV];
    uint8_t nd;
    int16_t next[NV]; /* >= 0 state, < 0: -(1 + outcome) */
} an_dstate;

enum { OUT_BUST = 5, OUT_BJ = 6, N_OUT = 7 };

/* composition -> dealer distribution cache (per up card) */
typedef struct {
    uint64_t *keys;
    int32_t *slot;
    uint32_t cap; /* power of two */
    uint32_t used;
    double (*dist)[N_OUT];
    uint32_t dcap;
} an_cache;

typedef struct {
    const fl_analyzer_rules *r;
    an_node *nodes;
    int nn;
    uint64_t *hkeys;
    int16_t *hidx;
    an_dstate *ds;
    int nds;
    uint64_t *dkeys;
    int16_t *didx;
    double *dprob;
    an_cache cache;
    /* per up card */
    int up;          /* 1..10 */
    int hole_x;      /* excluded hole value index (peek), -1 none */
    int bj_x;        /* value index completing a dealer blackjack, -1 none */
    int32_t s0[NV];  /* shoe less the up card */
    int32_t n0;
    double *stand, *hit, *best, *dbl, *nobj, *pbj;
    double (*vec)[3];    /* the strategy's play of an unsplit hand: P(+1), P(0), P(-1) */
    double (*svec)[3];   /* standing */
    double (*hvec)[3];   /* hitting, then the strategy */
    double (*dvec)[4];   /* doubling, two-card hands: P(-2), P(-1), P(0), P(+2) */
    uint8_t *dec; /* 0 stand 1 hit 2 double (two-card nodes) */
    uint8_t *valid;
    /* split pass */
    double *vk;
    int32_t *stamp;
    int32_t cur_stamp;
    long ab_budget; /* calls left for the all-bust enumeration of one split */
    int ab_failed;  /* the enumeration ran out of budget: correction not added */
    int last_split_approx;
    int split_p;  /* pair value index */
    int split_k;  /* pair cards removed (including the hand's own) */
    int err;
} an_ctx;

static uint64_t key_of(const uint8_t *cnt) {
    uint64_t k = 0;
    for (int i = 0; i < NV; i++) k |= (uint64_t)cnt[i] << (6 * i);
    return k;
}

static uint32_t hash64(uint64_t k) {
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    return (uint32_t)k;
}

static int node_find(const an_ctx *c, const uint8_t *cnt) {
    uint64_t k = key_of(cnt) + 1;
    uint32_t h = hash64(k) & (HASH_SIZE - 1);
    while (c->hkeys[h]) {
        if (c->hkeys[h] == k) return c->hidx[h];
        h = (h + 1) & (HASH_SIZE - 1);
    }
    return -1;
}

static int build_nodes(an_ctx *c) {
    memset(&c->nodes[0], 0, sizeof c->nodes[0]);
    c->nn = 1;
    {
        uint64_t k = key_of(c->nodes[0].cnt) + 1;
        uint32_t h = hash64(k) & (HASH_SIZE - 1);
        c->hkeys[h] = k;
        c->hidx[h] = 0;
    }
    for (int i = 0; i < c->nn; i++) {
        for (int v = 0; v < NV; v++) {
            an_node *a = &c->nodes[i];
            int hard = a->hard + v + 1;
            if (hard > 21) {
                a->child[v] = -1;
                continue;
            }
            uint8_t cnt[NV];
            memcpy(cnt, a->cnt, NV);
            cnt[v]++;
            int j = node_find(c, cnt);
            if (j < 0) {
                if (c->nn >= NODE_CAP) return 0;
                j = c->nn++;
                an_node *b = &c->nodes[j];
                memcpy(b->cnt, cnt, NV);
                b->n = (uint8_t)(a->n + 1);
                b->hard = (uint8_t)hard;
                uint64_t k = key_of(cnt) + 1;
                uint32_t h = hash64(k) & (HASH_SIZE - 1);
                while (c->hkeys[h]) h = (h + 1) & (HASH_SIZE - 1);
                c->hkeys[h] = k;
                c->hidx[h] = (int16_t)j;
            }
            c->nodes[i].child[v] = (int16_t)j;
        }
    }
    return 1;
}

static int dealer_stands(const fl_analyzer_rules *r, int hard, int ace) {
    int soft = ace && hard <= 11;
    int t = hard + (soft ? 10 : 0);
    return t > 17 || (t == 17 && !(soft && r->h17));
}

/* the dealer's drawn-multiset DAG for up card value `up` (1..10), in BFS order */
static int build_dealer(an_ctx *c, int up) {
    an_dstate *ds = c->ds;
    memset(&ds[0], 0, sizeof ds[0]);
    memset(c->dkeys, 0, sizeof(*c->dkeys) * DHASH_SIZE);
    int n = 1;
    for (int i = 0; i < n; i++) {
        int hard0 = up, ace0 = up == 1;
        for (int v = 0; v < NV; v++) {
            hard0 += ds[i].d[v] * (v + 1);
            ace0 |= v == 0 && ds[i].d[v];
        }
        for (int v = 0; v < NV; v++) {
            int hard = hard0 + v + 1, ace = ace0 || v == 0;
            if (ds[i].nd == 0 && ((up == 1 && v == 9) || (up == 10 && v == 0))) {
                ds[i].next[v] = -(1 + OUT_BJ);
                continue;
            }
            if (hard > 21) {
                ds[i].next[v] = -(1 + OUT_BUST);
                continue;
            }
            if (dealer_stands(c->r, hard, ace)) {
                int t = hard + (ace && hard <= 11 ? 10 : 0);
                ds[i].next[v] = (int16_t)(-(1 + (t - 17)));
                continue;
            }
            /* find or add the state d + v among states of nd + 1 cards (all after i) */
            uint8_t d[NV];
            memcpy(d, ds[i].d, NV);
            d[v]++;
            uint64_t key = key_of(d) + 1;
            uint32_t h = hash64(key) & (DHASH_SIZE - 1);
            int j = -1;
            while (c->dkeys[h]) {
                if (c->dkeys[h] == key) {
                    j = c->didx[h];
                    break;
                }
                h = (h + 1) & (DHASH_SIZE - 1);
            }
            if (j < 0) {
                if (n >= DSTATE_CAP) return 0;
                j = n++;
                memset(&ds[j], 0, sizeof ds[j]);
                memcpy(ds[j].d, d, NV);
                ds[j].nd = (uint8_t)(ds[i].nd + 1);
                c->dkeys[h] = key;
                c->didx[h] = (int16_t)j;
            }
            ds[i].next[v] = (int16_t)j;
        }
    }
    c->nds = n;
    return 1;
}

/* dealer outcome distribution for composition comp (counts, total N) */
static void dealer_pass(an_ctx *c, const int32_t *comp, int32_t N, double out[N_OUT]) {
    for (int o = 0; o < N_OUT; o++) out[o] = 0.0;
    double *pr = c->dprob;
    for (int s = 0; s < c->nds; s++) pr[s] = 0.0;
    pr[0] = 1.0;
    for (int s = 0; s < c->nds; s++) {
        double ps = pr[s];
        if (ps == 0.0) continue;
        const an_dstate *st = &c->ds[s];
        double denom;
        int excl = -1;
        if (s == 0 && c->hole_x >= 0) {
            excl = c->hole_x;
            denom = (double)(N - comp[excl]);
        } else {
            denom = (double)(N - st->nd);
        }
        if (denom <= 0.0) continue;
        double inv = ps / denom;
        for (int v = 0; v < NV; v++) {
            if (v == excl) continue;
            int32_t left = comp[v] - st->d[v];
            if (left <= 0) continue;
            double p = inv * (double)left;
            int nx = st->next[v];
            if (nx >= 0)
                pr[nx] += p;
            else
                out[-nx - 1] += p;
        }
    }
}

static const double *cached_dist(an_ctx *c, const uint8_t *removed_extra, int extra_v,
                                 int extra_n) {
    /* composition: s0 less `removed_extra` (a node's counts) less extra_n cards of extra_v */
    uint8_t rem[NV];
    memcpy(rem, removed_extra, NV);
    if (extra_n) rem[extra_v] = (uint8_t)(rem[extra_v] + extra_n);
    uint64_t k = key_of(rem) + 1;
    an_cache *ca = &c->cache;
    uint32_t h = hash64(k) & (ca->cap - 1);
    while (ca->keys[h]) {
        if (ca->keys[h] == k) return ca->dist[ca->slot[h]];
        h = (h + 1) & (ca->cap - 1);
    }
    if (ca->used * 2 >= ca->cap || ca->used >= ca->dcap) {
        /* grow both */
        uint32_t ncap = ca->cap * 2;
        uint64_t *nk = calloc(ncap, sizeof *nk);
        int32_t *ns = calloc(ncap, sizeof *ns);
        double(*nd)[N_OUT] = realloc(ca->dist, sizeof(*nd) * ncap);
        if (!nk || !ns || !nd) {
            free(nk);
            free(ns);
            if (nd) ca->dist = nd;
            c->err = 1;
            return NULL;
        }
        ca->dist = nd;
        ca->dcap = ncap;
        for (uint32_t i = 0; i < ca->cap; i++)
            if (ca->keys[i]) {
                uint32_t j = hash64(ca->keys[i]) & (ncap - 1);
                while (nk[j]) j = (j + 1) & (ncap - 1);
                nk[j] = ca->keys[i];
                ns[j] = ca->slot[i];
            }
        free(ca->keys);
        free(ca->slot);
        ca->keys = nk;
        ca->slot = ns;
        ca->cap = ncap;
        h = hash64(k) & (ca->cap - 1);
        while (ca->keys[h]) h = (h + 1) & (ca->cap - 1);
    }
    int32_t comp[NV], N = 0;
    for (int v = 0; v < NV; v++) {
        comp[v] = c->s0[v] - rem[v];
        N += comp[v];
    }
    uint32_t slot = ca->used++;
    ca->keys[h] = k;
    ca->slot[h] = (int32_t)slot;
    dealer_pass(c, comp, N, ca->dist[slot]);
    return ca->dist[slot];
}

static void cache_reset(an_cache *ca) {
    memset(ca->keys, 0, sizeof(*ca->keys) * ca->cap);
    ca->used = 0;
}

/* draw probabilities of the next player card from comp (total N), hole-conditioned */
static void draw_probs(const an_ctx *c, const int32_t *comp, int32_t N, double p[NV]) {
    int x = c->hole_x;
    if (x < 0 || N < 2 || N - comp[x] <= 0) {
        for (int v = 0; v < NV; v++) p[v] = N > 0 && comp[v] > 0 ? (double)comp[v] / N : 0.0;
        return;
    }
    double den = (double)(N - 1) * (double)(N - comp[x]);
    for (int v = 0; v < NV; v++) {
        double num = (double)comp[v] * (double)(N - 1 - comp[x] + (v == x));
        p[v] = comp[v] > 0 ? num / den : 0.0;
    }
}

static int best_total(int hard, int ace, int *soft) {
    int s = ace && hard <= 11;
    if (soft) *soft = s;
    return hard + (s ? 10 : 0);
}

static int node_total(const an_node *a, int *soft) {
    return best_total(a->hard, a->cnt[0] > 0, soft);
}

/* expectation per unit against the dealer's distribution, excluding a dealer blackjack */
static double stand_nobj(const double d[N_OUT], int t) {
    double ev = d[OUT_BUST];
    for (int o = 0; o < 5; o++) {
        int dt = 17 + o;
        if (t > dt)
            ev += d[o];
        else if (t < dt)
            ev -= d[o];
    }
    return ev;
}

static int may_double(const fl_analyzer_rules *r, const an_node *a) {
    if (a->n != 2) return 0;
    int soft, t = node_total(a, &soft);
    switch (r->double_on) {
    case 0: return 1;
    case 1: return !soft;
    case 2: return !soft && t >= 9 && t <= 11;
    case 3: return !soft && t >= 10 && t <= 11;
    default: return 0;
    }
}

static int comp_of(const an_ctx *c, const an_node *a, int extra_v, int extra_n, int32_t *comp) {
    int32_t N = 0;
    for (int v = 0; v < NV; v++) {
        comp[v] = c->s0[v] - a->cnt[v] - (v == extra_v ? extra_n : 0);
        if (comp[v] < 0) return -1;
        N += comp[v];
    }
    return N;
}

/* table action for a hand: 0 hit 1 stand 2 double-else-hit 3 double-else-stand */
static int table_action(const an_ctx *c, const an_node *a) {
    int soft, t = node_total(a, &soft);
    if (t >= 21) return 1;
    return soft ? c->r->soft[t][c->up] : c->r->hard[t][c->up];
}

/* ------------------------------------------------------------ main (unsplit) pass */

static void main_pass(an_ctx *c) {
    const fl_analyzer_rules *r = c->r;
    int cdz = r->strategy == FL_AN_CDZ;
    for (int i = c->nn - 1; i >= 1; i--) {
        const an_node *a = &c->nodes[i];
        int32_t comp[NV];
        int32_t N = comp_of(c, a, 0, 0, comp);
        c->valid[i] = N >= 0;
        if (N < 0 || a->n < 2) continue;
        int soft, t = node_total(a, &soft);
        const double *d = cached_dist(c, a->cnt, 0, 0);
        if (!d) return;
        c->nobj[i] = stand_nobj(d, t);
        c->pbj[i] = d[OUT_BJ];
        {
            double w = d[OUT_BUST], pu = 0.0;
            for (int o = 0; o < 5; o++) {
                if (t > 17 + o) w += d[o];
                if (t == 17 + o) pu += d[o];
            }
            c->svec[i][0] = w;
            c->svec[i][1] = pu;
            c->svec[i][2] = 1.0 - w - pu;
        }
        double st = c->nobj[i] - d[OUT_BJ]; /* an unsplit live hand loses one unit */
        c->stand[i] = st;
        double p[NV];
        draw_probs(c, comp, N, p);
        double hit = 0.0;
        double hv[3] = {0.0, 0.0, 0.0};
        if (t < 21) {
            for (int v = 0; v < NV; v++) {
                if (p[v] == 0.0) continue;
                int j = a->child[v];
                hit += p[v] * (j < 0 ? -1.0 : c->best[j]);
                if (j < 0) {
                    hv[2] += p[v];
                } else {
                    for (int k = 0; k < 3; k++) hv[k] += p[v] * c->vec[j][k];
                }
            }
        } else {
            hit = -2.0; /* never hit 21 */
            hv[2] = 1.0;
        }
        memcpy(c->hvec[i], hv, sizeof hv);
        c->hit[i] = hit;
        int take_hit;
        if (cdz) {
            take_hit = t < 21 && hit > st;
        } else {
            int act = table_action(c, a);
            take_hit = t < 21 && (act == 0 || act == 2);
        }
        c->dec[i] = (uint8_t)take_hit;
        c->best[i] = take_hit ? hit : st;
        memcpy(c->vec[i], take_hit ? c->hvec[i] : c->svec[i], sizeof c->vec[i]);
        if (a->n == 2) {
            double ld = r->peek ? 0.0 : (r->enhc_takes == 2 ? -2.0 : -1.0);
            double dv = 0.0, dd[4] = {0.0, 0.0, 0.0, 0.0};
            for (int v = 0; v < NV; v++) {
                if (p[v] == 0.0) continue;
                int j = a->child[v];
                if (j < 0) {
                    dv += p[v] * -2.0;
                    dd[0] += p[v];
                } else {
                    int st2, t2 = node_total(&c->nodes[j], &st2);
                    const double *dj = cached_dist(c, c->nodes[j].cnt, 0, 0);
                    if (!dj) return;
                    dv += p[v] * (2.0 * stand_nobj(dj, t2) + dj[OUT_BJ] * ld);
                    double w = dj[OUT_BUST], pu = 0.0;
                    for (int o = 0; o < 5; o++) {
                        if (t2 > 17 + o) w += dj[o];
                        if (t2 == 17 + o) pu += dj[o];
                    }
                    double lose = 1.0 - w - pu - dj[OUT_BJ];
                    dd[3] += p[v] * w;
                    dd[2] += p[v] * pu;
                    dd[0] += p[v] * lose;
                    dd[ld == -1.0 ? 1 : 0] += p[v] * dj[OUT_BJ];
                }
            }
            c->dbl[i] = dv;
            memcpy(c->dvec[i], dd, sizeof dd);
        }
    }
}

/* ------------------------------------------------------------ split passes */

static double bust_value(const an_ctx *c, const an_node *a, int x, double stake) {
    /* a split hand `a` busted by a card of value index x; under no hole card and
     * "original" its wager comes back when the dealer shows a blackjack (some other hand
     * being live: the case where none is, is added exactly by all_bust below) */
    if (c->r->peek || c->r->enhc_takes != 0 || c->bj_x < 0) return -stake;
    int32_t comp[NV];
    int32_t N = comp_of(c, a, c->split_p, c->split_k - 1, comp);
    comp[x]--;
    N--;
    if (N <= 0 || comp[x] < 0) return -stake;
    return -stake * (1.0 - (double)comp[c->bj_x] / N);
}

static double live_bj_loss(const an_ctx *c, double stake) {
    if (c->r->peek) return 0.0;
    return c->r->enhc_takes == 2 ? -stake : 0.0;
}

/* the strategy's play of a split hand at node i: 0 stand, 1 hit, 2 double */
static int split_action(const an_ctx *c, int i) {
    const fl_analyzer_rules *r = c->r;
    const an_node *a = &c->nodes[i];
    int soft, t = node_total(a, &soft);
    if (a->n == 2 && c->split_p == 0 && r->split_aces_one_card) return 0;
    if (t >= 21) return 0;
    if (r->strategy == FL_AN_CDZ) {
        int action = c->dec[i] ? 1 : 0;
        if (a->n == 2 && r->double_after_split && may_double(r, a) &&
            c->dbl[i] > (c->stand[i] > c->hit[i] ? c->stand[i] : c->hit[i]))
            action = 2;
        return action;
    }
    int act = table_action(c, a);
    if (act >= 2 && a->n == 2 && r->double_after_split && may_double(r, a)) return 2;
    return (act == 0 || act == 2) ? 1 : 0;
}

#define AB_MEMO_BITS 16
#define AB_MEMO_SIZE (1u << AB_MEMO_BITS)
#define AB_LIST_CAP 8192

/* one way a split hand busts: the cards it drew after its pair card (the multiset, the
 * second card first in `second`), its stake, and how many orders of those cards the
 * strategy plays to that bust */
typedef struct {
    uint8_t m[NV];
    uint8_t n, second, stake;
    double ways;
} ab_bust;

typedef struct {
    int P, H;
    int32_t base[NV]; /* the unseen cards when the split began */
    uint64_t *keys;   /* memo of ab_next: removed cards, h, pend (0: empty) */
    double (*vals)[2];
    uint32_t used;
    ab_bust *list;
    int nlist;
    int overflow;
} ab_args;

static void ab_add(ab_args *g, const uint8_t *m, int n, int second, int stake, double ways) {
    for (int k = g->nlist - 1; k >= 0; k--) {
        ab_bust *b = &g->list[k];
        if (b->n == n && b->second == second && b->stake == stake && !memcmp(b->m, m, NV)) {
            b->ways += ways;
            return;
        }
    }
    if (g->nlist >= AB_LIST_CAP) {
        g->overflow = 1;
        return;
    }
    ab_bust *b = &g->list[g->nlist++];
    memcpy(b->m, m, NV);
    b->n = (uint8_t)n;
    b->second = (uint8_t)second;
    b->stake = (uint8_t)stake;
    b->ways = ways;
}

/* every busting play of a split hand from node i; m: the cards drawn so far */
static void ab_collect(an_ctx *c, ab_args *g, int i, uint8_t *m, int n, int second) {
    if (g->overflow || --c->ab_budget < 0) {
        g->overflow = 1;
        return;
    }
    int act = split_action(c, i);
    if (act == 0) return;
    const an_node *a = &c->nodes[i];
    for (int x = 0; x < NV; x++) {
        int j = a->child[x];
        m[x]++;
        if (j < 0)
            ab_add(g, m, n + 1, second, act == 2 ? 2 : 1, 1.0);
        else if (act == 1)
            ab_collect(c, g, j, m, n + 1, second);
        m[x]--;
    }
}

/* probability of drawing the multiset m (in one given order) from comp */
static double ab_draw(const int32_t *comp, int32_t N, const uint8_t *m, int n) {
    double p = 1.0;
    int k = 0;
    for (int v = 0; v < NV; v++)
        for (int t = 0; t < m[v]; t++) {
            int32_t left = comp[v] - t;
            if (left <= 0) return 0.0;
            p *= (double)left / (double)(N - k);
            k++;
        }
    (void)n;
    return p;
}

static double ab_next(an_ctx *c, ab_args *g, int32_t *comp, int32_t N, int h, int pend,
                      double *stakes) {
    if (N <= 0 || c->ab_failed) return 0.0;
    if (pend == 0) return (double)comp[c->bj_x] / N;
    uint64_t key = 0;
    uint32_t slot = 0;
    int memo = g->keys != NULL;
    for (int v = 0; v < NV && memo; v++) {
        int32_t rem = g->base[v] - comp[v];
        if (rem > 31) memo = 0;
        key |= (uint64_t)rem << (5 * v);
    }
    if (memo) {
        key = (key | (uint64_t)h << 50 | (uint64_t)pend << 53) + 1;
        slot = hash64(key) & (AB_MEMO_SIZE - 1);
        while (g->keys[slot]) {
            if (g->keys[slot] == key) {
                *stakes += g->vals[slot][1];
                return g->vals[slot][0];
            }
            slot = (slot + 1) & (AB_MEMO_SIZE - 1);
        }
    }
    c->ab_budget -= g->nlist + 1;
    if (c->ab_budget < 0) {
        c->ab_failed = 1;
        return 0.0;
    }
    double pr = 0.0, st = 0.0;
    int P = g->P;
    if (h < g->H && comp[P] > 0) { /* a pair card: the hand splits again */
        double p = (double)comp[P] / N, s = 0.0;
        comp[P]--;
        double q = ab_next(c, g, comp, N - 1, h + 1, pend + 1, &s);
        comp[P]++;
        pr += p * q;
        st += p * s;
    }
    for (int k = 0; k < g->nlist; k++) {
        const ab_bust *b = &g->list[k];
        if (h < g->H && b->second == P) continue;
        double p = b->ways * ab_draw(comp, N, b->m, b->n);
        if (p == 0.0) continue;
        for (int v = 0; v < NV; v++) comp[v] -= b->m[v];
        double s = 0.0;
        double q = ab_next(c, g, comp, N - b->n, h, pend - 1, &s);
        for (int v = 0; v < NV; v++) comp[v] += b->m[v];
        pr += p * q;
        st += p * (s + q * b->stake);
    }
    *stakes += st;
    if (memo && g->used * 2 < AB_MEMO_SIZE) {
        g->keys[slot] = key;
        g->vals[slot][0] = pr;
        g->vals[slot][1] = st;
        g->used++;
    }
    return pr;
}

/*
 * Under no hole card, "original" or "original and busted": the exact probability that
 * every hand of a split box busts and the dealer's next card would make a blackjack (the
 * dealer then takes no second card and the busted wagers are lost whole), and the
 * expectation of the box's stakes on that event, in the order of play.  Each hand's
 * busting plays are listed once as multisets of drawn cards with their number of orders
 * (the strategy depends on the hand's cards only); the hands are then chained over the
 * unseen cards, memoised by the cards removed.  Returns what the split's value gains over
 * the one-unit-per-box count; 0 (and ab_failed) when the busting plays are too many.
 */
static double all_bust_correction(an_ctx *c, int P, int H) {
    int32_t comp[NV], N = 0;
    for (int v = 0; v < NV; v++) {
        comp[v] = c->s0[v] - (v == P ? 2 : 0);
        if (comp[v] < 0) return 0.0;
        N += comp[v];
    }
    ab_args g;
    memset(&g, 0, sizeof g);
    g.P = P;
    g.H = H;
    memcpy(g.base, comp, sizeof comp);
    g.keys = calloc(AB_MEMO_SIZE, sizeof *g.keys);
    g.vals = malloc(sizeof(*g.vals) * AB_MEMO_SIZE);
    g.list = malloc(sizeof(*g.list) * AB_LIST_CAP);
    c->split_p = P;
    c->split_k = 2; /* split_action reads only pre-split decisions */
    c->ab_budget = FL_AN_ALL_BUST_BUDGET;
    c->ab_failed = 0;
    double pr = 0.0, stakes = 0.0;
    if (!g.keys || !g.vals || !g.list) {
        c->ab_failed = 1;
    } else {
        int start = c->nodes[0].child[P];
        uint8_t m[NV] = {0};
        for (int x = 0; x < NV; x++) {
            m[x]++;
            ab_collect(c, &g, c->nodes[start].child[x], m, 1, x);
            m[x]--;
        }
        if (g.overflow)
            c->ab_failed = 1;
        else
            pr = ab_next(c, &g, comp, N, 2, 2, &stakes);
    }
    free(g.keys);
    free(g.vals);
    free(g.list);
    if (c->ab_failed) return 0.0; /* too many busting plays: left approximate */
    /* "original": the event was counted as -1, it costs the stakes;
     * "original and busted": counted as the stakes plus one unit, it costs the stakes */
    return c->r->enhc_takes == 0 ? pr - stakes : pr;
}

/* value of a split hand at node i (one of its cards a pair card), k pair cards out */
static double split_value(an_ctx *c, int i) {
    if (c->stamp[i] == c->cur_stamp) return c->vk[i];
    const an_node *a = &c->nodes[i];
    int32_t comp[NV];
    int32_t N = comp_of(c, a, c->split_p, c->split_k - 1, comp);
    double v = 0.0;
    if (N < 0) {
        v = 0.0; /* impossible hand: weight 0 */
    } else {
        int soft, t = node_total(a, &soft);
        int action = split_action(c, i); /* 0 stand 1 hit 2 double */
        if (action == 0) {
            const double *d = cached_dist(c, a->cnt, c->split_p, c->split_k - 1);
            if (!d) return 0.0;
            v = stand_nobj(d, t) + d[OUT_BJ] * live_bj_loss(c, 1.0);
        } else {
            double p[NV];
            draw_probs(c, comp, N, p);
            for (int x = 0; x < NV; x++) {
                if (p[x] == 0.0) continue;
                int j = a->child[x];
                double w;
                if (action == 1) {
                    w = j < 0 ? bust_value(c, a, x, 1.0) : split_value(c, j);
                } else if (j < 0) {
                    w = bust_value(c, a, x, 2.0);
                } else {
                    int s2, t2 = node_total(&c->nodes[j], &s2);
                    const double *d = cached_dist(c, c->nodes[j].cnt, c->split_p, c->split_k - 1);
                    if (!d) return 0.0;
                    w = 2.0 * stand_nobj(d, t2) + d[OUT_BJ] * live_bj_loss(c, 2.0);
                }
                v += p[x] * w;
            }
        }
    }
    c->stamp[i] = c->cur_stamp;
    c->vk[i] = v;
    return v;
}

typedef struct {
    double evn[MAXK + 1], evx[MAXK + 1], pp[MAXK + 1]; /* by k = pair cards out */
    int have[MAXK + 1];
    int ok[MAXK + 1];
} split_terms;

/* EV_N(k), EV_x(k) and p(pair | k out) for pair value index P */
static void split_terms_at(an_ctx *c, split_terms *T, int P, int k) {
    if (T->have[k]) return;
    T->have[k] = 1;
    T->ok[k] = 0;
    int start = c->nodes[0].child[P];
    int32_t comp[NV];
    int32_t N = comp_of(c, &c->nodes[start], P, k - 1, comp);
    if (N <= 0) return;
    T->ok[k] = 1;
    double p[NV];
    draw_probs(c, comp, N, p);
    c->split_p = P;
    c->split_k = k;
    c->cur_stamp++;
    double ex = 0.0, en = 0.0;
    for (int x = 0; x < NV; x++) {
        if (p[x] == 0.0) continue;
        double w = split_value(c, c->nodes[start].child[x]);
        ex += p[x] * w;
        if (x != P) en += p[x] * w;
    }
    T->pp[k] = p[P];
    T->evx[k] = ex;
    T->evn[k] = p[P] < 1.0 ? en / (1.0 - p[P]) : 0.0;
}

static double binom(int n, int k) {
    double b = 1.0;
    for (int i = 1; i <= k; i++) b = b * (n - k + i) / i;
    return b;
}

/* probability that q specific further second cards are all pair cards (2 out already) */
static double pp_prod(an_ctx *c, split_terms *T, int P, int q) {
    double pr = 1.0;
    for (int i = 0; i < q; i++) {
        int k = 2 + i;
        if (k > MAXK) return 0.0;
        split_terms_at(c, T, P, k);
        if (!T->ok[k]) return 0.0;
        pr *= T->pp[k];
        if (pr == 0.0) return 0.0;
    }
    return pr;
}

/* one hand's term: m pair cards and r non-pair cards among the other second cards */
static double hand_term(an_ctx *c, split_terms *T, int P, int m, int r, int is_n) {
    double s = 0.0;
    for (int t = 0; t <= r; t++) {
        double pr = pp_prod(c, T, P, m + t);
        if (pr == 0.0) continue;
        int k = 2 + m + t;
        if (k > MAXK) continue;
        split_terms_at(c, T, P, k);
        if (!T->ok[k]) continue;
        double term = is_n ? (1.0 - T->pp[k]) * T->evn[k] : T->evx[k];
        s += ((t & 1) ? -1.0 : 1.0) * binom(r, t) * pr * term;
    }
    return s;
}

static double split_patterns(an_ctx *c, split_terms *T, int P, int H, int h, int pend, int m,
                             int nn) {
    if (h >= H || pend == 0) {
        double s = 0.0;
        if (nn) s += nn * hand_term(c, T, P, m, nn - 1, 1);
        if (pend) s += pend * hand_term(c, T, P, m, nn, 0);
        return s;
    }
    return split_patterns(c, T, P, H, h + 1, pend + 1, m + 1, nn) +
           split_patterns(c, T, P, H, h, pend - 1, m, nn + 1);
}

static double split_ev(an_ctx *c, int P) {
    const fl_analyzer_rules *r = c->r;
    int H = (int)r->max_hands;
    if (P == 0 && !r->resplit_aces) H = 2;
    split_terms T;
    memset(&T, 0, sizeof T);
    double ev = split_patterns(c, &T, P, H, 2, 2, 0, 0);
    if (!r->peek && r->enhc_takes != 2 && c->bj_x >= 0) {
        /* the box's one unit lost to a dealer blackjack */
        int32_t comp[NV], N = 0;
        for (int v = 0; v < NV; v++) {
            comp[v] = c->s0[v] - (v == P ? 2 : 0);
            N += comp[v];
        }
        if (N > 0) ev -= (double)comp[c->bj_x] / N;
        ev += all_bust_correction(c, P, H);
        c->last_split_approx = c->ab_failed;
    }
    return ev;
}

/* ------------------------------------------------------------ entry point */

static int hand_index(int a, int b) { /* a <= b value indexes 0..9 */
    return a * NV - a * (a - 1) / 2 + (b - a);
}

fl_status fl_analyze(const fl_analyzer_rules *r, fl_analysis *out) {
    if (!r || !out) return FL_ERR_NULL;
    uint32_t total = 0;
    for (int v = 0; v < NV; v++) {
        if (r->counts[v] > FL_AN_MAX_CARDS) return FL_ERR_RANGE;
        total += r->counts[v];
    }
    if (total < FL_AN_MIN_CARDS || total > FL_AN_MAX_CARDS) return FL_ERR_RANGE;
    if (r->h17 > 1 || r->peek > 1 || r->enhc_takes > 2 || r->bj_num < 1 || r->bj_den < 1 ||
        r->bj_num > 1000 || r->bj_den > 1000 || r->double_on > 3 || r->double_after_split > 1 ||
        r->max_hands < 1 || r->max_hands > 4 || r->resplit_aces > 1 ||
        r->split_aces_one_card > 1 || r->surrender > 2 || r->strategy > 1)
        return FL_ERR_RANGE;
    if (r->strategy == FL_AN_TABLE) {
        for (int t = 0; t < 32; t++)
            for (int u = 0; u < 11; u++)
                if (r->hard[t][u] > 3 || r->soft[t][u] > 3 || r->surr[t][u] > 1)
                    return FL_ERR_RANGE;
        for (int k = 0; k < 13; k++)
            for (int u = 0; u < 11; u++)
                if (r->pair[k][u] > 1 || (k >= 9 && r->pair[k][u])) return FL_ERR_RANGE;
    }
    memset(out, 0, sizeof *out);
    an_ctx c;
    memset(&c, 0, sizeof c);
    c.r = r;
    c.nodes = calloc(NODE_CAP, sizeof *c.nodes);
    c.hkeys = calloc(HASH_SIZE, sizeof *c.hkeys);
    c.hidx = calloc(HASH_SIZE, sizeof *c.hidx);
    c.ds = calloc(DSTATE_CAP, sizeof *c.ds);
    c.dprob = calloc(DSTATE_CAP, sizeof *c.dprob);
    c.dkeys = calloc(DHASH_SIZE, sizeof *c.dkeys);
    c.didx = calloc(DHASH_SIZE, sizeof *c.didx);
    double *dbuf = calloc((size_t)NODE_CAP * 7, sizeof(double));
    c.vec = calloc(NODE_CAP, sizeof *c.vec);
    c.svec = calloc(NODE_CAP, sizeof *c.svec);
    c.hvec = calloc(NODE_CAP, sizeof *c.hvec);
    c.dvec = calloc(NODE_CAP, sizeof *c.dvec);
    c.dec = calloc(NODE_CAP, 1);
    c.valid = calloc(NODE_CAP, 1);
    c.stamp = calloc(NODE_CAP, sizeof *c.stamp);
    c.cache.cap = 1u << 14;
    c.cache.keys = calloc(c.cache.cap, sizeof *c.cache.keys);
    c.cache.slot = calloc(c.cache.cap, sizeof *c.cache.slot);
    c.cache.dcap = c.cache.cap;
    c.cache.dist = malloc(sizeof(*c.cache.dist) * c.cache.dcap);
    fl_status status = FL_OK;
    if (!c.nodes || !c.hkeys || !c.hidx || !c.ds || !c.dprob || !c.dkeys || !c.didx || !dbuf || !c.dec || !c.valid ||
        !c.stamp || !c.cache.keys || !c.cache.slot || !c.cache.dist || !c.vec || !c.svec ||
        !c.hvec || !c.dvec) {
        status = FL_ERR_RANGE;
        goto done;
    }
    c.stand = dbuf;
    c.hit = dbuf + NODE_CAP;
    c.best = dbuf + 2 * NODE_CAP;
    c.dbl = dbuf + 3 * NODE_CAP;
    c.nobj = dbuf + 4 * NODE_CAP;
    c.pbj = dbuf + 5 * NODE_CAP;
    c.vk = dbuf + 6 * NODE_CAP;
    if (!build_nodes(&c)) {
        status = FL_ERR_RANGE;
        goto done;
    }
    double bj_pay = (double)r->bj_num / r->bj_den;
    double ev_total = 0.0, p_total = 0.0;
    int32_t S[NV], NS = 0;
    for (int v = 0; v < NV; v++) {
        S[v] = (int32_t)r->counts[v];
        NS += S[v];
    }
    for (int u = 0; u < NV; u++) {
        if (S[u] == 0) continue;
        c.up = u + 1;
        c.bj_x = u == 0 ? 9 : (u == 9 ? 0 : -1);
        c.hole_x = r->peek ? c.bj_x : -1;
        c.n0 = 0;
        for (int v = 0; v < NV; v++) {
            c.s0[v] = S[v] - (v == u);
            c.n0 += c.s0[v];
        }
        if (!build_dealer(&c, u + 1)) {
            status = FL_ERR_RANGE;
            goto done;
        }
        cache_reset(&c.cache);
        {
            /* the dealer's distribution off the shoe less the up card */
            int32_t N = c.n0;
            int saved = c.hole_x;
            c.hole_x = -1;
            dealer_pass(&c, c.s0, N, out->dealer[u]);
            c.hole_x = saved;
        }
        main_pass(&c);
        if (c.err) {
            status = FL_ERR_RANGE;
            goto done;
        }
        double split_cache[NV];
        int split_done[NV] = {0}, split_approx[NV] = {0};
        for (int a = 0; a < NV; a++)
            for (int b = a; b < NV; b++) {
                int hi = hand_index(a, b);
                /* probability of the deal: player a, up u, player b (either order) */
                double pr = 0.0;
                for (int o = 0; o < (a == b ? 1 : 2); o++) {
                    int x = o ? b : a, y = o ? a : b;
                    double n = NS;
                    double f = (double)S[x] / n;
                    f *= (double)(S[u] - (u == x)) / (n - 1);
                    f *= (double)(S[y] - (y == x) - (y == u)) / (n - 2);
                    if (f < 0) f = 0;
                    pr += f;
                }
                out->prob[hi][u] = pr;
                for (int k = 0; k < FL_AN_ACTIONS; k++) out->action_ev[hi][u][k] = NAN;
                if (pr <= 0.0) {
                    out->action[hi][u] = 255;
                    continue;
                }
                int32_t comp0[NV], n0 = 0;
                for (int v = 0; v < NV; v++) {
                    comp0[v] = S[v] - (v == u) - (v == a) - (v == b);
                    n0 += comp0[v];
                }
                double q = c.bj_x >= 0 ? (double)comp0[c.bj_x] / n0 : 0.0;
                out->p_dealer_bj[hi][u] = q;
                double value;
                double *net = out->net_dist; /* -2, -1, -1/2, 0, +1, +2, blackjack */
                if (a == 0 && b == 9) { /* player blackjack: paid unless the dealer has one */
                    value = (1.0 - q) * bj_pay;
                    net[6] += pr * (1.0 - q);
                    net[3] += pr * q;
                    out->action_ev[hi][u][0] = value;
                    out->action[hi][u] = FL_AN_BLACKJACK;
                } else {
                    uint8_t cnt[NV] = {0};
                    cnt[a]++;
                    cnt[b]++;
                    int i = node_find(&c, cnt);
                    const an_node *nd = &c.nodes[i];
                    double cond[FL_AN_ACTIONS] = {0.0, 0.0, 0.0, 0.0, 0.0};
                    int allowed[FL_AN_ACTIONS] = {1, 1, 0, 0, 0};
                    cond[FL_AN_STAND] = c.stand[i];
                    cond[FL_AN_HIT] = c.hit[i];
                    cond[FL_AN_DOUBLE] = c.dbl[i];
                    allowed[FL_AN_DOUBLE] = may_double(r, nd);
                    if (a == b && r->max_hands >= 2) {
                        if (!split_done[a]) {
                            c.last_split_approx = 0;
                            split_cache[a] = split_ev(&c, a);
                            split_approx[a] = c.last_split_approx;
                            split_done[a] = 1;
                            if (c.err) {
                                status = FL_ERR_RANGE;
                                goto done;
                            }
                        }
                        cond[FL_AN_SPLIT] = split_cache[a];
                        allowed[FL_AN_SPLIT] = 1;
                    }
                    cond[FL_AN_SURRENDER] = -0.5;
                    allowed[FL_AN_SURRENDER] = r->surrender != 0;
                    double unc[FL_AN_ACTIONS];
                    for (int k = 0; k < FL_AN_ACTIONS; k++) {
                        if (!allowed[k]) continue;
                        if (r->peek)
                            unc[k] = (1.0 - q) * cond[k] - q;
                        else
                            unc[k] = cond[k];
                        if (k == FL_AN_SURRENDER)
                            unc[k] = r->surrender == 2 ? -0.5 : -0.5 * (1.0 - q) - q;
                        out->action_ev[hi][u][k] = unc[k];
                    }
                    int act = FL_AN_STAND;
                    if (r->strategy == FL_AN_CDZ) {
                        for (int k = 1; k < FL_AN_ACTIONS; k++)
                            if (allowed[k] && unc[k] > unc[act]) act = k;
                    } else {
                        int soft, t = node_total(nd, &soft);
                        int ta = table_action(&c, nd);
                        if (allowed[FL_AN_SPLIT] && r->pair[a][u + 1])
                            act = FL_AN_SPLIT;
                        else if (allowed[FL_AN_SURRENDER] && !soft && r->surr[t][u + 1])
                            act = FL_AN_SURRENDER;
                        else if (ta >= 2 && allowed[FL_AN_DOUBLE])
                            act = FL_AN_DOUBLE;
                        else
                            act = (ta == 0 || ta == 2) && t < 21 ? FL_AN_HIT : FL_AN_STAND;
                    }
                    out->action[hi][u] = (uint8_t)act;
                    value = unc[act];
                    /* an all-bust term left out under "original and busted" raises the
                     * split's value: a split not chosen is then not proven either */
                    if (allowed[FL_AN_SPLIT] && split_approx[a] && act != FL_AN_SPLIT &&
                        r->enhc_takes == 1)
                        out->p_split_approx += r->peek ? pr * (1.0 - q) : pr;
                    /* the round's net distribution (split rounds: mass and value only) */
                    double m = r->peek ? pr * (1.0 - q) : pr; /* conditioned part */
                    if (r->peek) net[1] += pr * q;
                    if (act == FL_AN_STAND || act == FL_AN_HIT) {
                        const double *vv = act == FL_AN_STAND ? c.svec[i] : c.hvec[i];
                        net[4] += m * vv[0];
                        net[3] += m * vv[1];
                        net[1] += m * vv[2];
                    } else if (act == FL_AN_DOUBLE) {
                        net[0] += m * c.dvec[i][0];
                        net[1] += m * c.dvec[i][1];
                        net[3] += m * c.dvec[i][2];
                        net[5] += m * c.dvec[i][3];
                    } else if (act == FL_AN_SURRENDER) {
                        if (r->peek) net[1] -= pr * q; /* undo: counted below */
                        if (r->surrender == 2) {
                            net[2] += pr;
                        } else {
                            net[2] += pr * (1.0 - q);
                            net[1] += pr * q;
                        }
                    } else {
                        out->p_split += m;
                        out->ev_split += m * cond[FL_AN_SPLIT];
                        if (split_approx[a]) out->p_split_approx += m;
                    }
                }
                out->value[hi][u] = value;
                ev_total += pr * value;
                p_total += pr;
            }
    }
    out->ev = ev_total;
    out->p_total = p_total;
    out->nodes = (uint32_t)c.nn;
done:
    free(c.vec);
    free(c.svec);
    free(c.hvec);
    free(c.dvec);
    free(c.dkeys);
    free(c.didx);
    free(c.nodes);
    free(c.hkeys);
    free(c.hidx);
    free(c.ds);
    free(c.dprob);
    free(dbuf);
    free(c.dec);
    free(c.valid);
    free(c.stamp);
    free(c.cache.keys);
    free(c.cache.slot);
    free(c.cache.dist);
    return status;
}

fl_status fl_dealer_probabilities(const uint32_t counts[10], unsigned up, unsigned h17,
                                  unsigned peek, double out[7]) {
    if (!counts || !out) return FL_ERR_NULL;
    if (up < 1 || up > 10 || h17 > 1 || peek > 1) return FL_ERR_RANGE;
    fl_analyzer_rules r;
    memset(&r, 0, sizeof r);
    r.h17 = h17;
    uint32_t total = 0;
    for (int v = 0; v < NV; v++) {
        if (counts[v] > FL_AN_MAX_CARDS) return FL_ERR_RANGE;
        total += counts[v];
    }
    if (counts[up - 1] < 1 || total < FL_AN_MIN_CARDS || total > FL_AN_MAX_CARDS)
        return FL_ERR_RANGE;
    an_ctx c;
    memset(&c, 0, sizeof c);
    c.r = &r;
    c.ds = calloc(DSTATE_CAP, sizeof *c.ds);
    c.dprob = calloc(DSTATE_CAP, sizeof *c.dprob);
    c.dkeys = calloc(DHASH_SIZE, sizeof *c.dkeys);
    c.didx = calloc(DHASH_SIZE, sizeof *c.didx);
    fl_status st = FL_OK;
    if (!c.ds || !c.dprob || !c.dkeys || !c.didx || !build_dealer(&c, (int)up)) {
        st = FL_ERR_RANGE;
    } else {
        int32_t comp[NV], N = 0;
        for (int v = 0; v < NV; v++) {
            comp[v] = (int32_t)counts[v] - (v == (int)up - 1);
            N += comp[v];
        }
        int bx = up == 1 ? 9 : (up == 10 ? 0 : -1);
        c.hole_x = peek ? bx : -1;
        dealer_pass(&c, comp, N, out);
    }
    free(c.ds);
    free(c.dprob);
    free(c.dkeys);
    free(c.didx);
    return st;
}
