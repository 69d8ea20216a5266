/* The combinatorial analyzer's exact distribution of a split round's net result
 * (method: analyzer.c's header comment, "Distribution of split rounds").
 *
 * Every split hand's play is listed once as the multisets of cards it draws after its pair
 * card, each with its number of orders the strategy plays to it (a path count over the hand
 * DAG: the strategy depends on the hand's cards only), its stake and its final class.  The
 * hands are chained over the unseen cards in the order of play (a pair card drawn as a
 * second card while hands < limit splits again), and at the end of the box the dealer's
 * outcome distribution is taken off the exact composition left (cached by the cards
 * removed, across the pairs split against one up card).  A new composition's distribution is
 * queued and filled with AN_LANES others in one lane-parallel pass over the dealer's DAG; the
 * boxes that wait on it are recorded and settled once it is filled.  The probability of a given sequence of draws depends only on the multiset of
 * cards drawn, so player and dealer probabilities multiply exactly.  Under peek the
 * dealer's blackjack outcome is dropped and the rest renormalised (Bayes).
 *
 * Rounds that re-split (3 or 4 hands) past the enumeration budget are approximated: the
 * hands still to play when the third hand appears are drawn from the composition of that
 * moment, independently of one another and of the dealer's card removal; their mass is
 * returned in *approx so the sheet can name and bound it.
 */
#if defined(__linux__)
#define _DEFAULT_SOURCE /* madvise */
#include <sys/mman.h>
#endif
#include <stdlib.h>
#include <string.h>

#include "analyzer_internal.h"

#define DL_CAP 8192
#define DL_HASH 16384u
#define N_CLASS 7 /* 0: 16 or less, 1..5: 17..21, 6: bust */
#define DL_LEAF_BUDGET 500000L
#define DL_AHEAD 8 /* leaves looked up ahead (prefetch) */
#define DL_FILL_AT 256 /* queued dealer distributions filled at once */
#define DL_PENDING (1ull << 63)

typedef struct {
    uint64_t key; /* key_of(m) */
    uint8_t m[NV];
    uint8_t n, stake, cls;
    double ways_np, ways_p; /* orders whose second card is not / is a pair card */
    uint8_t ns, sv[NV], sm[NV]; /* m's support: ns values sv drawn sm times each */
} dl_entry;

/* the probability of any one order of a multiset drawn from a composition, by tables: ff[v][m]
 * = c_v (c_v - 1) .. (c_v - m + 1) (0 when m > c_v) and ip[n] = 1 / (N (N - 1) .. (N - n + 1)) */
typedef struct {
    double ff[NV][NODE_DEPTH];
    double ip[NODE_DEPTH];
} dl_draw;

/* the dealer's unconditioned outcome distributions of one up card, by the cards removed from
 * the shoe less the up card (shared by every pair split against that up card); a slot is
 * filled at once (scalar pass) or queued and filled in batches of AN_LANES compositions */
/* one bucket a cache line: the cards removed and the dealer's outcome distribution */
struct dl_bucket {
    uint64_t key; /* key_of(removed) + 1, DL_PENDING while d is not filled; 0: empty */
    double d[N_OUT];
};

struct dl_cache {
    int up;
    struct dl_bucket *b; /* open addressing, 64-byte aligned */
    uint32_t cap;        /* power of two */
    uint32_t blk;        /* buckets in b's block (cap or more: a block used again) */
    struct dl_bucket *spare; /* a block kept for the next table (dl_take), spare_blk buckets */
    uint32_t spare_blk;
    uint32_t used;
    uint32_t *todo;      /* buckets queued for the batched pass */
    uint32_t ntodo;
};

/* a box whose dealer outcome is still to be read: its probability, the bucket of the
 * dealer's distribution and the net index for each outcome (-1: none, the peeked blackjack) */
typedef struct {
    double pr;
    uint32_t slot;
    int8_t net[N_OUT];
} dl_rec;

typedef struct {
    an_ctx *c;
    int P, H;
    struct dl_cache *dc;
    dl_entry *e;
    int ne;
    uint64_t *hk;
    int32_t *hv;
    int32_t base[NV]; /* shoe less the up card and the two pair cards */
    double dist[FL_AN_SPLIT_NETS];
    double adist[FL_AN_SPLIT_NETS]; /* the approximated re-split rounds */
    double approx;
    long leaves;
    int exact_resplit;
    dl_rec *rec;
    size_t nrec, rcap;
    int8_t hv8[2 * N_CLASS][8]; /* by (stake - 1) * N_CLASS + class: the hand's result per
                                   final dealer total 17..21 and bust (dl_hand_value) */
} dl_args;

static int cls_of_total(int t) { return t > 21 ? 6 : (t < 17 ? 0 : t - 16); }

static void dl_add(dl_args *g, const uint8_t *cnt, int extra, int stake, int cls, int second_p,
                   double ways) {
    uint8_t m[NV];
    memcpy(m, cnt, NV);
    m[g->P]--; /* the pair card itself is not drawn */
    if (extra >= 0) m[extra]++;
    uint64_t k = (key_of(m) | (uint64_t)stake << 62) + 1;
    uint32_t h = hash64(k) & (DL_HASH - 1);
    while (g->hk[h]) {
        if (g->hk[h] == k) {
            dl_entry *e = &g->e[g->hv[h]];
            if (second_p) e->ways_p += ways;
            else e->ways_np += ways;
            return;
        }
        h = (h + 1) & (DL_HASH - 1);
    }
    if (g->ne >= DL_CAP) {
        g->c->err = 1;
        return;
    }
    dl_entry *e = &g->e[g->ne];
    memset(e, 0, sizeof *e);
    memcpy(e->m, m, NV);
    e->key = key_of(m);
    int n = 0;
    for (int v = 0; v < NV; v++) n += m[v];
    e->n = (uint8_t)n;
    for (int v = 0; v < NV; v++)
        if (m[v]) {
            e->sv[e->ns] = (uint8_t)v;
            e->sm[e->ns++] = m[v];
        }
    e->stake = (uint8_t)stake;
    e->cls = (uint8_t)cls;
    if (second_p) e->ways_p = ways;
    else e->ways_np = ways;
    g->hk[h] = k;
    g->hv[h] = g->ne++;
}

/* every play of a split hand, by a path count over the hand DAG in level order */
static void dl_list(dl_args *g, double (*ways)[2]) {
    an_ctx *c = g->c;
    int start = c->nodes[0].child[g->P];
    memset(ways, 0, sizeof(*ways) * (size_t)c->nn);
    for (int x = 0; x < NV; x++) ways[c->nodes[start].child[x]][x == g->P] += 1.0;
    for (int i = start + 1; i < c->nn; i++) {
        if (ways[i][0] == 0.0 && ways[i][1] == 0.0) continue;
        const an_node *a = &c->nodes[i];
        int soft, t = node_total(a, &soft);
        int act = split_action(c, i);
        for (int f = 0; f < 2; f++) {
            double w = ways[i][f];
            if (w == 0.0) continue;
            if (act == SPLIT_STAND) {
                dl_add(g, a->cnt, -1, 1, cls_of_total(t), f, w);
                continue;
            }
            for (int x = 0; x < NV; x++) {
                int j = a->child[x];
                if (act == SPLIT_DOUBLE) {
                    int t2 = 22;
                    if (j >= 0) t2 = node_total(&c->nodes[j], &soft);
                    dl_add(g, a->cnt, x, 2, cls_of_total(t2), f, w);
                } else if (j < 0) {
                    dl_add(g, a->cnt, x, 1, 6, f, w);
                } else {
                    ways[j][f] += w;
                }
            }
        }
    }
}

/* the tables of dl_draw for the composition comp of N cards */
static void draw_prep(dl_draw *t, const int32_t *comp, int32_t N) {
    for (int v = 0; v < NV; v++) {
        double f = 1.0;
        t->ff[v][0] = 1.0;
        for (int k = 1; k < NODE_DEPTH; k++) {
            int32_t left = comp[v] - (k - 1);
            f *= left > 0 ? (double)left : 0.0;
            t->ff[v][k] = f;
        }
    }
    double f = 1.0;
    t->ip[0] = 1.0;
    for (int k = 1; k < NODE_DEPTH; k++) {
        f *= N - (k - 1) > 0 ? 1.0 / (double)(N - (k - 1)) : 0.0;
        t->ip[k] = f;
    }
}

/* probability of one given order of the cards of e drawn from the tables' composition */
static inline double draw_seq(const dl_draw *t, const dl_entry *e) {
    double p = t->ip[e->n];
    for (int i = 0; i < e->ns; i++) p *= t->ff[e->sv[i]][e->sm[i]];
    return p;
}

/* one hand's result against the dealer's outcome o (a dealer blackjack: no hole card) */
static int dl_hand_value(int stake, int cls, int o, int bj_takes_all) {
    if (cls == 6) return -stake;
    if (o == OUT_BJ) return bj_takes_all ? -stake : 0;
    if (o == OUT_BUST) return stake;
    if (cls == 0 || cls < o + 1) return -stake;
    return cls > o + 1 ? stake : 0;
}

static void dl_fill(dl_args *g);
static void dl_replay(dl_args *g);

/* A table's memory: blocks of 2 MiB or more are asked for huge pages (the lookups are random
 * over up to 32 MiB: with 4 KiB pages nearly each one missed the TLB), and the blocks are kept
 * for the next up card and the next growth (dl_take), since the kernel's zeroing of fresh
 * pages cost as much as the lookups they served. */
#define DL_HUGE ((size_t)2 << 20)

static struct dl_bucket *dl_block(uint32_t cap) {
    size_t size = sizeof(struct dl_bucket) * cap;
    if (size < DL_HUGE) return aligned_alloc(64, size);
    struct dl_bucket *b = aligned_alloc(DL_HUGE, size);
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (b) madvise(b, size, MADV_HUGEPAGE); /* advice only: a refusal changes nothing */
#endif
    return b;
}

/* empty buckets for a table of cap: the spare block when it holds them, else a new block (the
 * spare, too small, freed); NULL when out of memory */
static struct dl_bucket *dl_take(struct dl_cache *dc, uint32_t cap, uint32_t *blk) {
    struct dl_bucket *b = NULL;
    if (dc->spare && dc->spare_blk >= cap) {
        b = dc->spare;
        *blk = dc->spare_blk;
        dc->spare = NULL;
        dc->spare_blk = 0;
    } else {
        b = dl_block(cap);
        *blk = cap;
    }
    if (b) memset(b, 0, sizeof(*b) * cap);
    return b;
}

/* a block no longer in use kept as the spare (the larger of the two kept) */
static void dl_give(struct dl_cache *dc, struct dl_bucket *b, uint32_t blk) {
    if (dc->spare_blk >= blk) {
        free(b);
        return;
    }
    free(dc->spare);
    dc->spare = b;
    dc->spare_blk = blk;
}

/* the bucket of the dealer's distribution off s0 less the cards of `key`, added (queued,
 * DL_PENDING) when new; -1 when out of memory (c->err set).  Growing rehashes, so what is
 * queued is filled and settled first. */
static int64_t dl_slot(dl_args *g, uint64_t key) {
    struct dl_cache *dc = g->dc;
    uint64_t k = key + 1;
    uint32_t h = hash64(k) & (dc->cap - 1);
    while (dc->b[h].key) {
        if ((dc->b[h].key & ~DL_PENDING) == k) return h;
        h = (h + 1) & (dc->cap - 1);
    }
    if (2 * (dc->used + 1) > dc->cap) { /* grow: rehash into twice the buckets */
        dl_fill(g);
        dl_replay(g);
        uint32_t ncap = 2 * dc->cap, nblk;
        struct dl_bucket *nb = dl_take(dc, ncap, &nblk);
        uint32_t *nt = realloc(dc->todo, sizeof(*nt) * ncap);
        if (nt) dc->todo = nt;
        if (!nb || !nt) {
            if (nb) dl_give(dc, nb, nblk);
            g->c->err = 1;
            return -1;
        }
        for (uint32_t i = 0; i < dc->cap; i++) {
            if (!dc->b[i].key) continue;
            uint32_t j = hash64(dc->b[i].key) & (ncap - 1);
            while (nb[j].key) j = (j + 1) & (ncap - 1);
            nb[j] = dc->b[i];
        }
        dl_give(dc, dc->b, dc->blk);
        dc->b = nb;
        dc->blk = nblk;
        dc->cap = ncap;
        h = hash64(k) & (dc->cap - 1);
        while (dc->b[h].key) h = (h + 1) & (dc->cap - 1);
    }
    dc->used++;
    dc->b[h].key = k | DL_PENDING;
    dc->todo[dc->ntodo++] = h;
    return h;
}

/* the bucket of `key` brought towards the cache ahead of its lookup */
static inline void dl_prefetch(const dl_args *g, uint64_t key) {
#if defined(__GNUC__)
    __builtin_prefetch(&g->dc->b[hash64(key + 1) & (g->dc->cap - 1)]);
#else
    (void)g;
    (void)key;
#endif
}

/* the dealer's distribution off s0 less the cards of `key` now (scalar pass; c->hole_x is
 * -1); NULL when out of memory */
static const double *dl_dealer(dl_args *g, uint64_t key) {
    int64_t sl = dl_slot(g, key);
    if (sl < 0) return NULL;
    struct dl_bucket *bk = &g->dc->b[sl];
    if (bk->key & DL_PENDING) {
        int32_t comp[NV], N;
        comp_of_key(g->c, key, comp, &N);
        dealer_pass(g->c, comp, N, bk->d);
        bk->key &= ~DL_PENDING;
    }
    return bk->d;
}

/* fill every queued bucket, AN_LANES at a time (a short last batch repeats its first lane) */
static void dl_fill(dl_args *g) {
    an_ctx *c = g->c;
    struct dl_cache *dc = g->dc;
    uint32_t lanes[AN_LANES];
    int32_t comp[AN_LANES][NV], N[AN_LANES];
    double out[AN_LANES][N_OUT];
    uint32_t i = 0;
    while (i < dc->ntodo) {
        int n = 0;
        for (; i < dc->ntodo && n < AN_LANES; i++)
            if (dc->b[dc->todo[i]].key & DL_PENDING) lanes[n++] = dc->todo[i];
        if (n == 0) break;
        for (int l = 0; l < AN_LANES; l++) {
            uint64_t key = (dc->b[lanes[l < n ? l : 0]].key & ~DL_PENDING) - 1;
            comp_of_key(c, key, comp[l], &N[l]);
        }
        dealer_pass_lanes(c, -1, (const int32_t(*)[NV])comp, N, c->dwork, out);
        for (int l = 0; l < n; l++) {
            struct dl_bucket *bk = &dc->b[lanes[l]];
            memcpy(bk->d, out[l], sizeof out[l]);
            bk->key &= ~DL_PENDING;
        }
    }
    dc->ntodo = 0;
}

static void dl_record(dl_args *g, double pr, uint32_t slot, const int8_t net[N_OUT]) {
    if (g->nrec >= g->rcap) {
        size_t ncap = g->rcap ? 2 * g->rcap : 4096;
        dl_rec *n = realloc(g->rec, sizeof(*n) * ncap);
        if (!n) {
            g->c->err = 1;
            return;
        }
        g->rec = n;
        g->rcap = ncap;
    }
    dl_rec *r = &g->rec[g->nrec++];
    r->pr = pr;
    r->slot = slot;
    memcpy(r->net, net, N_OUT);
}

/* the recorded boxes' mass by net, in the order they were listed */
static void dl_replay(dl_args *g) {
    const struct dl_cache *dc = g->dc;
    for (size_t i = 0; i < g->nrec; i++) {
        const dl_rec *r = &g->rec[i];
        const double *d = dc->b[r->slot].d;
        for (int o = 0; o < N_OUT; o++)
            if (r->net[o] >= 0) g->dist[r->net[o]] += r->pr * d[o];
    }
    g->nrec = 0;
}

/* the box's hands so far, summed for its leaves: whether some hand stands (live), the busted
 * stakes, every stake, and the net index for each final dealer total or bust (acc) */
typedef struct {
    int live, busted, all;
    int8_t acc[8];
} dl_box;

static void dl_box_start(dl_box *b) {
    b->live = b->busted = b->all = 0;
    for (int o = 0; o < 8; o++) b->acc[o] = o < OUT_BJ ? FL_AN_SPLIT_NET0 : 0;
}

/* b with one more hand of (stake, class) */
static inline void dl_box_add(const dl_args *g, dl_box *b, int stake, int cls) {
    const int8_t *hv = g->hv8[(stake - 1) * N_CLASS + cls];
    if (cls == 6) b->busted += stake;
    else b->live = 1;
    b->all += stake;
    for (int o = 0; o < 8; o++) b->acc[o] = (int8_t)(b->acc[o] + hv[o]);
}

/* a live box's net index for each final dealer total, bust and blackjack (-1: none, the
 * peeked blackjack) */
static inline void dl_net(const dl_args *g, const dl_box *b, int8_t net[N_OUT]) {
    const fl_analyzer_rules *r = g->c->r;
    memcpy(net, b->acc, OUT_BJ);
    if (r->peek) net[OUT_BJ] = -1;
    else {
        int bj = r->enhc_takes == FL_TAKES_ORIGINAL                 ? -1
                 : r->enhc_takes == FL_TAKES_ORIGINAL_AND_BUSTED ? -1 - b->busted
                                                                 : -b->all;
        net[OUT_BJ] = (int8_t)(bj + FL_AN_SPLIT_NET0);
    }
}

/* dl_leaf's live box whose dealer distribution is not filled yet: its bucket found or added,
 * the box recorded, and the queue filled (what waited on it settled) once it is long */
static void dl_leaf_wait(dl_args *g, uint64_t key, double pr, const dl_box *b) {
    int8_t net[N_OUT];
    int64_t sl = dl_slot(g, key);
    if (sl < 0) return;
    dl_net(g, b, net);
    const struct dl_cache *dc = g->dc;
    if (!(dc->b[sl].key & DL_PENDING)) { /* filled by the growth in dl_slot */
        const double *d = dc->b[sl].d;
        for (int o = 0; o < N_OUT; o++)
            if (net[o] >= 0) g->dist[net[o]] += pr * d[o];
        return;
    }
    dl_record(g, pr, (uint32_t)sl, net);
    if (dc->ntodo >= DL_FILL_AT) { /* fill the queue and settle what waited on it */
        dl_fill(g);
        dl_replay(g);
    }
}

/* a finished box (its hands summed in b): its mass by net now when the dealer's distribution
 * off its composition is known (looked up here: the enumeration's inner step), else recorded
 * and read once the queued distributions are filled (dl_leaf_wait) */
static inline void dl_leaf(dl_args *g, int32_t n_left, int32_t bj_left, uint64_t key, double pr,
                           const dl_box *b) {
    an_ctx *c = g->c;
    if (!b->live) { /* every hand busted: lost whole, the dealer's cards do not matter */
        double m = pr;
        if (c->r->peek && c->bj_x >= 0) /* the dealer's hole card: no blackjack */
            m *= 1.0 - (double)bj_left / n_left;
        g->dist[FL_AN_SPLIT_NET0 - b->busted] += m;
        return;
    }
    const struct dl_cache *dc = g->dc;
    uint64_t k = key + 1;
    uint32_t mask = dc->cap - 1, h = hash64(k) & mask;
    for (uint64_t bk; (bk = dc->b[h].key) != 0; h = (h + 1) & mask) {
        if ((bk & ~DL_PENDING) != k) continue;
        if (bk & DL_PENDING) break;
        int8_t net[N_OUT];
        dl_net(g, b, net);
        const double *d = dc->b[h].d;
        for (int o = 0; o < N_OUT; o++)
            if (net[o] >= 0) g->dist[net[o]] += pr * d[o];
        return;
    }
    dl_leaf_wait(g, key, pr, b);
}

/* the approximated rest of a re-split box: state of the hands so far for one dealer outcome,
 * [live][value + FL_AN_SPLIT_NET0]: value the box's net (the busted stakes, negated, for a
 * dealer blackjack under no hole card), live whether some hand stands */
typedef double dl_state[2][FL_AN_SPLIT_NETS];

/* one hand's classes with their probability for one dealer outcome, the zero ones left out:
 * [0] while a re-split is still possible, [1] once not (q[0], q[1] of dl_approx), in the order
 * (stake, class); dk the hand's result, lv whether it stands */
typedef struct {
    int n[2];
    double w[2][2 * N_CLASS];
    int8_t dk[2][2 * N_CLASS];
    uint8_t lv[2][2 * N_CLASS];
} dl_terms;

static void dl_terms_of(const dl_args *g, double q[2][2][N_CLASS], int o, dl_terms *t) {
    for (int r = 0; r < 2; r++) {
        t->n[r] = 0;
        for (int s = 0; s < 2; s++)
            for (int cl = 0; cl < N_CLASS; cl++) {
                double w = q[r][s][cl];
                if (w == 0.0) continue;
                int i = t->n[r]++;
                t->w[r][i] = w;
                t->dk[r][i] =
                    (int8_t)dl_hand_value(s + 1, cl, o, g->c->r->enhc_takes == FL_TAKES_ALL);
                t->lv[r][i] = cl != 6;
            }
    }
}

/* the hands still to play (h hands so far, pend of them pending), each from the class
 * distribution of t (for one dealer outcome) */
static void dl_conv(const dl_args *g, double pp, const dl_terms *t, int h, int pend,
                    dl_state in, dl_state out) {
    if (pend == 0) {
        for (int l = 0; l < 2; l++)
            for (int k = 0; k < FL_AN_SPLIT_NETS; k++) out[l][k] += in[l][k];
        return;
    }
    int can = h < g->H;
    if (can && pp > 0.0) {
        dl_state sub;
        memset(sub, 0, sizeof sub);
        dl_conv(g, pp, t, h + 1, pend + 1, in, sub);
        for (int l = 0; l < 2; l++)
            for (int k = 0; k < FL_AN_SPLIT_NETS; k++) out[l][k] += pp * sub[l][k];
    }
    dl_state next;
    memset(next, 0, sizeof next);
    int r = can ? 0 : 1, n = t->n[r];
    const double *w = t->w[r];
    const int8_t *dk = t->dk[r];
    const uint8_t *lv = t->lv[r];
    for (int l = 0; l < 2; l++)
        for (int k = 0; k < FL_AN_SPLIT_NETS; k++) {
            double x = in[l][k];
            if (x == 0.0) continue;
            for (int i = 0; i < n; i++) {
                int k2 = k + dk[i];
                if (k2 < 0 || k2 >= FL_AN_SPLIT_NETS) continue;
                next[l || lv[i]][k2] += x * w[i];
            }
        }
    dl_conv(g, pp, t, h, pend - 1, next, out);
}

/* rounds that re-split past the budget: the hands still to play (h hands, pend pending)
 * drawn from comp independently of one another and of the dealer's removal */
static void dl_approx(dl_args *g, const int32_t *comp, int32_t N, int h, int pend, double pr,
                      const uint8_t *stake, const uint8_t *cls, int nh) {
    an_ctx *c = g->c;
    double pp = comp[g->P] > 0 ? (double)comp[g->P] / N : 0.0;
    double q[2][2][N_CLASS];
    dl_draw t;
    draw_prep(&t, comp, N);
    memset(q, 0, sizeof q);
    for (int k = 0; k < g->ne; k++) {
        const dl_entry *e = &g->e[k];
        if (e->ways_np == 0.0 && e->ways_p == 0.0) continue;
        double d = draw_seq(&t, e);
        q[0][e->stake - 1][e->cls] += e->ways_np * d;
        q[1][e->stake - 1][e->cls] += (e->ways_np + e->ways_p) * d;
    }
    uint8_t rem[NV];
    for (int v = 0; v < NV; v++) rem[v] = (uint8_t)(c->s0[v] - comp[v]);
    const double *d = dl_dealer(g, key_of(rem));
    if (!d) return;
    for (int o = 0; o < N_OUT; o++) {
        if (d[o] == 0.0 || (o == OUT_BJ && c->r->peek)) continue;
        dl_state in, out;
        memset(in, 0, sizeof in);
        memset(out, 0, sizeof out);
        int v0 = 0, live = 0;
        for (int i = 0; i < nh; i++) {
            v0 += dl_hand_value(stake[i], cls[i], o, c->r->enhc_takes == FL_TAKES_ALL);
            live |= cls[i] != 6;
        }
        in[live][v0 + FL_AN_SPLIT_NET0] = 1.0;
        dl_terms terms;
        dl_terms_of(g, q, o, &terms);
        dl_conv(g, pp, &terms, h, pend, in, out);
        for (int k = 0; k < FL_AN_SPLIT_NETS; k++) {
            int bust_net = k - FL_AN_SPLIT_NET0; /* every hand busted: lost whole */
            g->adist[k] += pr * d[o] * out[0][k];
            if (out[1][k] == 0.0) continue;
            int net = bust_net;
            if (o == OUT_BJ) /* a live hand: the dealer's blackjack settles the box */
                net = c->r->enhc_takes == FL_TAKES_ORIGINAL                 ? -1
                      : c->r->enhc_takes == FL_TAKES_ORIGINAL_AND_BUSTED ? bust_net - 1
                                                                          : net;
            if (net < -FL_AN_SPLIT_NET0) net = -FL_AN_SPLIT_NET0;
            g->adist[net + FL_AN_SPLIT_NET0] += pr * d[o] * out[1][k];
        }
    }
}

static void dl_chain(dl_args *g, int32_t *comp, int32_t N, uint64_t key, int h, int pend,
                     double pr, uint8_t *stake, uint8_t *cls, int nh);

/* a pair card as the next hand's second card (h < H): split again, pend + 1 hands to play */
static void dl_resplit(dl_args *g, int32_t *comp, int32_t N, uint64_t key, int h, int pend,
                       double pr, uint8_t *stake, uint8_t *cls, int nh) {
    int P = g->P;
    if (h >= g->H || comp[P] <= 0) return;
    double p = pr * (double)comp[P] / N;
    comp[P]--;
    if (g->exact_resplit)
        dl_chain(g, comp, N - 1, key + ((uint64_t)1 << (6 * P)), h + 1, pend + 1, p, stake, cls,
                 nh);
    else {
        g->approx += p;
        dl_approx(g, comp, N - 1, h + 1, pend + 1, p, stake, cls, nh);
    }
    comp[P]++;
}

/* the last two hands of a box once neither's second card is a pair card (h hands, the
 * re-splits taken out by the caller): both are played by the same weights, P(m1 then m2) =
 * P(m2 then m1) and the net is symmetric, so each unordered pair is visited once, off-diagonal
 * pairs doubled.  Before the pairs, each first hand's own re-split (its successor's second
 * card a pair card) when h < H. */
static void dl_last_two(dl_args *g, int32_t *comp, int32_t N, uint64_t key, int h, double pr,
                        uint8_t *stake, uint8_t *cls, int nh) {
    dl_draw t0, t1;
    int bj_x = g->c->bj_x, np_only = h < g->H;
    dl_box first;
    dl_box_start(&first);
    for (int i = 0; i < nh; i++) dl_box_add(g, &first, stake[i], cls[i]);
    draw_prep(&t0, comp, N);
    for (int k = 0; k < g->ne; k++) {
        const dl_entry *e = &g->e[k];
        double w = np_only ? e->ways_np : e->ways_np + e->ways_p;
        if (w == 0.0) continue;
        double p = w * draw_seq(&t0, e);
        if (p == 0.0) continue;
        for (int v = 0; v < NV; v++) comp[v] -= e->m[v];
        stake[nh] = e->stake;
        cls[nh] = e->cls;
        if (np_only) dl_resplit(g, comp, N - e->n, key + e->key, h, 1, pr * p, stake, cls, nh + 1);
        draw_prep(&t1, comp, N - e->n);
        dl_box both = first;
        dl_box_add(g, &both, e->stake, e->cls);
        for (int j = k; j < g->ne; j++) {
            const dl_entry *f = &g->e[j];
            if (j + DL_AHEAD < g->ne) dl_prefetch(g, key + e->key + g->e[j + DL_AHEAD].key);
            double w2 = np_only ? f->ways_np : f->ways_np + f->ways_p;
            if (w2 == 0.0) continue;
            double p2 = w2 * draw_seq(&t1, f);
            if (p2 == 0.0) continue;
            dl_box box = both;
            dl_box_add(g, &box, f->stake, f->cls);
            g->leaves++;
            int32_t bj_left = bj_x >= 0 ? comp[bj_x] - f->m[bj_x] : 0;
            dl_leaf(g, N - e->n - f->n, bj_left, key + e->key + f->key,
                    pr * p * p2 * (j == k ? 1.0 : 2.0), &box);
        }
        for (int v = 0; v < NV; v++) comp[v] += e->m[v];
    }
}

static void dl_chain(dl_args *g, int32_t *comp, int32_t N, uint64_t key, int h, int pend,
                     double pr, uint8_t *stake, uint8_t *cls, int nh) {
    an_ctx *c = g->c;
    if (c->err) return;
    if (pend == 0) {
        dl_box box;
        dl_box_start(&box);
        for (int i = 0; i < nh; i++) dl_box_add(g, &box, stake[i], cls[i]);
        g->leaves++;
        dl_leaf(g, N, c->bj_x >= 0 ? comp[c->bj_x] : 0, key, pr, &box);
        return;
    }
    dl_resplit(g, comp, N, key, h, pend, pr, stake, cls, nh);
    if (pend == 2) { /* two last hands, exchangeable: each pair once */
        dl_last_two(g, comp, N, key, h, pr, stake, cls, nh);
        return;
    }
    dl_draw t;
    draw_prep(&t, comp, N);
    for (int k = 0; k < g->ne; k++) {
        const dl_entry *e = &g->e[k];
        if (pend == 1 && k + DL_AHEAD < g->ne) dl_prefetch(g, key + g->e[k + DL_AHEAD].key);
        double w = h < g->H ? e->ways_np : e->ways_np + e->ways_p;
        if (w == 0.0) continue;
        double p = w * draw_seq(&t, e);
        if (p == 0.0) continue;
        for (int v = 0; v < NV; v++) comp[v] -= e->m[v];
        stake[nh] = e->stake;
        cls[nh] = e->cls;
        dl_chain(g, comp, N - e->n, key + e->key, h, pend - 1, pr * p, stake, cls, nh + 1);
        for (int v = 0; v < NV; v++) comp[v] += e->m[v];
    }
}

/* the exact number of leaves of the full enumeration, or budget + 1 when over it: every
 * play of a hand leads to the same subtree, so it is nw times one subtree's leaves */
static long dl_count(const dl_args *g, int h, int pend, long budget) {
    if (pend == 0) return 1;
    long n = h < g->H ? dl_count(g, h + 1, pend + 1, budget) : 0;
    long nw = 0;
    for (int k = 0; k < g->ne; k++) {
        const dl_entry *e = &g->e[k];
        nw += (h < g->H ? e->ways_np : e->ways_np + e->ways_p) != 0.0;
    }
    long sub = nw ? dl_count(g, h, pend - 1, budget) : 0;
    if (n > budget || sub > budget || (nw && sub > (budget - n) / nw)) return budget + 1;
    n += nw * sub;
    return n > budget ? budget + 1 : n;
}

void split_distribution_release(an_ctx *c) {
    struct dl_cache *dc = c->dl_cache;
    if (!dc) return;
    free(dc->b);
    free(dc->spare);
    free(dc->todo);
    free(dc);
    c->dl_cache = NULL;
}

/* the dealer cache of the current up card: kept across the pairs split against it; a new up
 * card's starts empty in the blocks of the last one's */
static struct dl_cache *dl_cache_for_up(an_ctx *c) {
    struct dl_cache *dc = c->dl_cache;
    if (dc && dc->up == c->up) return dc;
    if (!dc) {
        dc = calloc(1, sizeof *dc);
        if (!dc) return NULL;
        c->dl_cache = dc;
        dc->todo = malloc(sizeof(*dc->todo) * (1u << 13));
    } else if (dc->b) {
        dl_give(dc, dc->b, dc->blk);
        dc->b = NULL;
    }
    dc->up = c->up;
    dc->cap = 1u << 13;
    dc->used = 0;
    dc->ntodo = 0;
    dc->b = dl_take(dc, dc->cap, &dc->blk);
    if (!dc->b || !dc->todo) {
        split_distribution_release(c);
        return NULL;
    }
    return dc;
}

/*
 * The distribution of the net result of a box that splits the pair of value index P against
 * the current up card, conditioned on the deal (and, under peek, on no dealer blackjack):
 * out[net + FL_AN_SPLIT_NET0].  *approx: the probability (given the deal) of the re-split
 * rounds approximated because their enumeration exceeds the budget (0: exact); their part
 * is matched to the deal's exact split `value` (conditioned as out) when `value_exact`.
 */
void split_distribution(an_ctx *c, int P, double value, int value_exact,
                        double out[FL_AN_SPLIT_NETS], double *approx) {
    const fl_analyzer_rules *r = c->r;
    dl_args g;
    memset(&g, 0, sizeof g);
    g.c = c;
    g.P = P;
    g.H = (int)r->max_hands;
    if (P == 0 && !r->resplit_aces) g.H = 2;
    g.e = malloc(sizeof(*g.e) * DL_CAP);
    g.hk = calloc(DL_HASH, sizeof *g.hk);
    g.hv = malloc(sizeof(*g.hv) * DL_HASH);
    double(*ways)[2] = malloc(sizeof(*ways) * NODE_CAP);
    g.dc = dl_cache_for_up(c);
    memset(out, 0, sizeof(double) * FL_AN_SPLIT_NETS);
    *approx = 0.0;
    if (!g.e || !g.hk || !g.hv || !ways || !g.dc) {
        c->err = 1;
        goto done;
    }
    for (int st = 0; st < 2; st++)
        for (int cl = 0; cl < N_CLASS; cl++)
            for (int o = 0; o < OUT_BJ; o++)
                g.hv8[st * N_CLASS + cl][o] = (int8_t)dl_hand_value(st + 1, cl, o, 0);
    c->split_p = P;
    c->split_k = 2;
    dl_list(&g, ways);
    if (c->err) goto done;
    int32_t comp[NV], N = 0;
    for (int v = 0; v < NV; v++) {
        comp[v] = c->s0[v] - (v == P ? 2 : 0);
        if (comp[v] < 0) goto done;
        N += comp[v];
    }
    /* CDP plays a split hand for the pair cards out at each count (the value's patterns);
     * the hands listed here are played as at two out, so past a re-split the rounds are
     * approximated and matched to the exact value like those past the budget */
    g.exact_resplit =
        r->strategy != FL_AN_CDP && dl_count(&g, 2, 2, DL_LEAF_BUDGET) <= DL_LEAF_BUDGET;
    /* the removed cards' keys hold 6 bits a value: an exact round of H hands may remove H
     * pair cards and H times the most cards of a value one hand draws */
    for (int v = 0, most = 0; v < NV && g.exact_resplit; v++) {
        for (int k = 0; k < g.ne; k++)
            if (g.e[k].m[v] > most) most = g.e[k].m[v];
        if (g.H * (most + (v == P)) > 63) g.exact_resplit = 0;
        most = 0;
    }
    /* unconditioned dealer draws (the peeked blackjack is dropped below) */
    int saved_hole = c->hole_x;
    c->hole_x = -1;
    uint8_t stake[FL_AN_MAX_HANDS_DIST], cls[FL_AN_MAX_HANDS_DIST];
    dl_chain(&g, comp, N, (uint64_t)2 << (6 * P), 2, 2, 1.0, stake, cls, 0);
    if (!c->err) dl_fill(&g);
    c->hole_x = saved_hole;
    if (c->err) goto done;
    dl_replay(&g);
    double scale = 1.0; /* under peek: conditioned on no dealer blackjack (Bayes) */
    if (r->peek && c->bj_x >= 0) scale = 1.0 / (1.0 - (double)comp[c->bj_x] / N);
    if (g.approx > 0.0 && value_exact) {
        /* the approximated part matched to the exact expectation of the re-split rounds
         * (the deal's exact split value less the enumerated rounds' part): mass moved
         * between two adjacent nets of its largest cell */
        double m_exact = 0.0, m_approx = 0.0;
        for (int k = 0; k < FL_AN_SPLIT_NETS; k++) {
            m_exact += (k - FL_AN_SPLIT_NET0) * g.dist[k] * scale;
            m_approx += (k - FL_AN_SPLIT_NET0) * g.adist[k] * scale;
        }
        double gap = (value - m_exact - m_approx) / scale;
        int big = 0;
        for (int k = 1; k < FL_AN_SPLIT_NETS - 1; k++)
            if (g.adist[k] > g.adist[big]) big = k;
        int to = gap > 0.0 ? big + 1 : big - 1;
        double move = gap > 0.0 ? gap : -gap;
        if (big > 0 && to < FL_AN_SPLIT_NETS && move <= g.adist[big]) {
            g.adist[big] -= move;
            g.adist[to] += move;
        }
    }
    for (int k = 0; k < FL_AN_SPLIT_NETS; k++) out[k] = (g.dist[k] + g.adist[k]) * scale;
    /* P(re-split | no blackjack) <= P(re-split) / P(no blackjack) */
    *approx = g.approx * scale;
done:
    free(g.rec);
    free(g.e);
    free(g.hk);
    free(g.hv);
    free(ways);
}
