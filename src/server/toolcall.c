/* The tool-call parser (toolcall.h). A call's object is scanned by a small
   structural JSON scanner that can say "more is needed" (a stream stops in
   the middle of a call); a complete object is then checked by cJSON, so a
   call reported complete is valid JSON. */
#include "server/toolcall.h"
#include <cjson/cJSON.h>
#include <stdint.h>
#include <string.h>
#include "core/alloc.h"

typedef enum { JS_OK, JS_MORE, JS_BAD } js_st;

static bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

static size_t skip_ws(const char *s, size_t n, size_t i) {
    while (i < n && is_ws(s[i])) i++;
    return i;
}

/* s[*i] is '"'; on JS_OK *i is past the closing quote. */
static js_st scan_string(const char *s, size_t n, size_t *i) {
    size_t k = *i + 1;
    while (k < n) {
        unsigned char c = (unsigned char)s[k];
        if (c == '"') { *i = k + 1; return JS_OK; }
        if (c == '\\') {
            if (k + 1 >= n) return JS_MORE;
            k += 2;
            continue;
        }
        if (c < 0x20) return JS_BAD;
        k++;
    }
    return JS_MORE;
}

static js_st scan_literal(const char *s, size_t n, size_t *i) {
    static const char *const lits[] = {"true", "false", "null"};
    size_t rest = n - *i;
    for (int l = 0; l < 3; l++) {
        size_t m = strlen(lits[l]);
        if (rest >= m && !memcmp(s + *i, lits[l], m)) { *i += m; return JS_OK; }
        if (rest < m && !memcmp(s + *i, lits[l], rest)) return JS_MORE;
    }
    return JS_BAD;
}

static bool num_char(char c) { return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E'; }

/* One JSON value from s[*i] (leading whitespace skipped); on JS_OK *i is
   past it. Only the structure is checked here (cJSON checks the rest). */
static js_st scan_value(const char *s, size_t n, size_t *i, int depth) {
    size_t k = skip_ws(s, n, *i);
    if (k >= n) return JS_MORE;
    char c = s[k];
    js_st st;
    if (c == '"') {
        st = scan_string(s, n, &k);
        if (st == JS_OK) *i = k;
        return st;
    }
    if (c == '{' || c == '[') {
        if (depth >= SRV_TC_MAX_DEPTH) return JS_BAD;
        char close = c == '{' ? '}' : ']';
        k = skip_ws(s, n, k + 1);
        if (k >= n) return JS_MORE;
        if (s[k] == close) { *i = k + 1; return JS_OK; }
        for (;;) {
            if (c == '{') {
                k = skip_ws(s, n, k);
                if (k >= n) return JS_MORE;
                if (s[k] != '"') return JS_BAD;
                if ((st = scan_string(s, n, &k)) != JS_OK) return st;
                k = skip_ws(s, n, k);
                if (k >= n) return JS_MORE;
                if (s[k++] != ':') return JS_BAD;
            }
            if ((st = scan_value(s, n, &k, depth + 1)) != JS_OK) return st;
            k = skip_ws(s, n, k);
            if (k >= n) return JS_MORE;
            if (s[k] == ',') { k++; continue; }
            if (s[k] == close) { *i = k + 1; return JS_OK; }
            return JS_BAD;
        }
    }
    if (c == '-' || (c >= '0' && c <= '9')) {
        while (k < n && num_char(s[k])) k++;
        if (k == n) return JS_MORE; /* the number may go on */
        *i = k;
        return JS_OK;
    }
    st = scan_literal(s, n, &k);
    if (st == JS_OK) *i = k;
    return st;
}

/* What the scan of one call object {"name": ..., "arguments": ...} saw. */
typedef struct {
    js_st st;
    size_t end;                  /* past the closing '}' (JS_OK) */
    bool first_known, first_is_name;
    bool name_seen, name_done;
    size_t name_b, name_e;
    bool args_seen, args_done;
    size_t args_b, args_e;       /* args_e: the end of the text while incomplete */
} call_scan;

static bool key_is(const char *s, size_t b, size_t e, const char *name) {
    size_t m = strlen(name);
    return e - b == m + 2 && !memcmp(s + b + 1, name, m);
}

/* s[i] is '{'. */
static void scan_call(const char *s, size_t n, size_t i, call_scan *c) {
    memset(c, 0, sizeof *c);
    size_t k = i + 1;
    int n_keys = 0;
    for (;;) {
        k = skip_ws(s, n, k);
        if (k >= n) { c->st = JS_MORE; return; }
        if (s[k] == '}' && n_keys == 0) { k++; break; }
        if (s[k] != '"') { c->st = JS_BAD; return; }
        size_t kb = k;
        if ((c->st = scan_string(s, n, &k)) != JS_OK) return;
        bool is_name = key_is(s, kb, k, "name");
        bool is_args = key_is(s, kb, k, "arguments") || key_is(s, kb, k, "parameters");
        if (n_keys == 0) {
            c->first_known = true;
            c->first_is_name = is_name;
        }
        k = skip_ws(s, n, k);
        if (k >= n) { c->st = JS_MORE; return; }
        if (s[k++] != ':') { c->st = JS_BAD; return; }
        k = skip_ws(s, n, k);
        if (k >= n) { c->st = JS_MORE; return; }
        size_t vb = k;
        js_st st = scan_value(s, n, &k, 1);
        if (is_name) {
            c->name_seen = true;
            c->name_done = st == JS_OK;
            c->name_b = vb;
            c->name_e = st == JS_OK ? k : n;
        } else if (is_args) {
            c->args_seen = true;
            c->args_done = st == JS_OK;
            c->args_b = vb;
            c->args_e = st == JS_OK ? k : n;
        }
        if (st != JS_OK) { c->st = st; return; }
        n_keys++;
        k = skip_ws(s, n, k);
        if (k >= n) { c->st = JS_MORE; return; }
        if (s[k] == ',') { k++; continue; }
        if (s[k] == '}') { k++; break; }
        c->st = JS_BAD;
        return;
    }
    c->st = JS_OK;
    c->end = k;
}

/* A JSON string's value (NUL-terminated, mllm_malloc), or NULL when
   s[b..e) is not a JSON string; *oom on allocation failure. */
static char *json_string(const char *s, size_t b, size_t e, bool *oom) {
    cJSON *v = cJSON_ParseWithLength(s + b, e - b);
    char *out = NULL;
    if (cJSON_IsString(v)) {
        out = mllm_strndup(v->valuestring, strlen(v->valuestring));
        if (!out) *oom = true;
    }
    cJSON_Delete(v);
    return out;
}

typedef struct {
    srv_tc_result *r;
    char *content;
    size_t len, cap;
    bool oom;
    int max_calls;
} parse_ctx;

static void put(parse_ctx *p, const char *s, size_t n) {
    if (n == 0 || p->oom) return;
    if (n > (size_t)PTRDIFF_MAX - 1 - p->len) { /* len + n + 1 would not fit an object */
        p->oom = true;
        return;
    }
    if (p->len + n + 1 > p->cap) {
        size_t nc = p->cap ? p->cap : 128;
        while (nc < p->len + n + 1) nc *= 2;
        char *t = mllm_realloc(p->content, nc);
        if (!t) { p->oom = true; return; }
        p->content = t;
        p->cap = nc;
    }
    memcpy(p->content + p->len, s, n);
    p->len += n;
}

/* Records the call the scan saw (complete: c->st is JS_OK). Returns
   false when it is malformed: a complete object that is not valid JSON,
   has no name, or whose name is not a string; with require_args, a
   complete one without arguments too. Calls past max_calls are dropped. */
static bool add_call(parse_ctx *p, const char *s, size_t obj_b, const call_scan *c, bool require_args) {
    bool complete = c->st == JS_OK;
    if (complete) {
        cJSON *v = cJSON_ParseWithLength(s + obj_b, c->end - obj_b);
        bool valid = v != NULL;
        cJSON_Delete(v);
        if (!valid || !c->name_seen || (require_args && !c->args_seen)) return false;
    }
    char *name = NULL;
    if (c->name_done) {
        name = json_string(s, c->name_b, c->name_e, &p->oom);
        if (!name) return p->oom; /* a name that is not a string: malformed */
    }
    if (p->r->n_calls >= p->max_calls) { mllm_free(name); return true; }
    /* The arguments' text: an object as written; a string (some models
       quote the object) once it is whole, decoded; nothing else until then. */
    const char *a = "";
    size_t an = 0;
    char *decoded = NULL;
    if (c->args_seen && c->args_done && s[c->args_b] == '"') {
        decoded = json_string(s, c->args_b, c->args_e, &p->oom);
        /* the quoted text must itself be JSON, or the call is malformed */
        cJSON *v = decoded ? cJSON_Parse(decoded) : NULL;
        const bool valid = v != NULL;
        cJSON_Delete(v);
        if (decoded && !valid) {
            mllm_free(decoded);
            mllm_free(name);
            return false;
        }
        a = decoded ? decoded : "";
        an = strlen(a);
    } else if (c->args_seen && (c->args_done || s[c->args_b] == '{' || s[c->args_b] == '[')) {
        a = s + c->args_b;
        an = c->args_e - c->args_b;
    } else if (complete) {
        a = "{}";
        an = 2;
    }
    srv_tc_call *t = &p->r->calls[p->r->n_calls];
    t->args = mllm_strndup(a, an);
    mllm_free(decoded);
    if (!t->args) { mllm_free(name); p->oom = true; return true; }
    t->args_len = an;
    t->name = name;
    t->complete = complete;
    p->r->n_calls++;
    return true;
}

/* The length of the longest proper prefix of tag that s[0..n) ends with. */
static size_t partial_tail(const char *s, size_t n, const char *tag) {
    size_t m = strlen(tag);
    for (size_t k = m - 1; k > 0; k--)
        if (k <= n && !memcmp(s + n - k, tag, k)) return k;
    return 0;
}

static size_t find(const char *s, size_t n, size_t from, const char *tag) {
    size_t m = strlen(tag);
    for (size_t i = from; i + m <= n; i++)
        if (s[i] == tag[0] && !memcmp(s + i, tag, m)) return i;
    return (size_t)-1;
}

static size_t bare_calls(parse_ctx *p, const char *s, size_t n, bool final);

static void parse_hermes(parse_ctx *p, const char *s, size_t n, bool final) {
    static const char OPEN[] = "<tool_call>", CLOSE[] = "</tool_call>";
    const size_t no = sizeof OPEN - 1, nc = sizeof CLOSE - 1;
    size_t pos = bare_calls(p, s, n, final);
    if (pos == (size_t)-1) return;
    while (pos <= n && !p->oom) {
        size_t at = find(s, n, pos, OPEN);
        if (at == (size_t)-1) {
            put(p, s + pos, n - pos - (final ? 0 : partial_tail(s + pos, n - pos, OPEN)));
            return;
        }
        put(p, s + pos, at - pos);
        size_t j = skip_ws(s, n, at + no);
        if (j >= n) {
            if (final) put(p, s + at, n - at);
            return;
        }
        call_scan c;
        if (s[j] == '{') scan_call(s, n, j, &c);
        else c.st = JS_BAD;
        if (c.st == JS_MORE) {
            if (final) put(p, s + at, n - at);           /* never completed: text again */
            else if (!add_call(p, s, j, &c, false)) put(p, s + at, n - at);
            return;
        }
        if (c.st == JS_BAD || !add_call(p, s, j, &c, false)) {
            put(p, s + at, no);                           /* not a call: the marker is text */
            pos = at + no;
            continue;
        }
        size_t k = skip_ws(s, n, c.end);
        if (k + nc <= n && !memcmp(s + k, CLOSE, nc)) pos = k + nc;
        else if (!final && n - k < nc && !memcmp(s + k, CLOSE, n - k)) return; /* the close tag is coming */
        else pos = c.end;                                  /* no close tag: what follows is text */
    }
}

/* s[i..n) starts with a Markdown fence opening a JSON block: "```" or
   "```json", then whitespace. Returns 1 (and *body, where the block's
   text starts), 0 when it does not, -1 when the text so far may still
   become one (not final). */
static int fence_open(const char *s, size_t n, size_t i, bool final, size_t *body) {
    static const char TICKS[] = "```", LANG[] = "json";
    size_t left = n - i;
    if (left < 3) return !final && !memcmp(s + i, TICKS, left) ? -1 : 0;
    if (memcmp(s + i, TICKS, 3)) return 0;
    size_t j = i + 3;
    if (n - j < 4 && !memcmp(s + j, LANG, n - j)) {
        if (!final) return -1;                     /* "```js": may be "```json" */
        if (n > j) return 0;
    } else if (n - j >= 4 && !memcmp(s + j, LANG, 4)) {
        j += 4;
    }
    if (j < n && !is_ws(s[j])) return 0;           /* "```python", "```{": not the fence */
    j = skip_ws(s, n, j);
    if (j >= n) return final ? 0 : -1;
    *body = j;
    return 1;
}

/* Calls written as bare JSON objects at the start of the answer (Llama
   3.x's syntax; small Hermes models often drop their tags too): after an
   optional <|python_tag|>, objects whose first key is "name", separated by
   whitespace or ';'. They may sit in a ```json fence (Qwen2.5-Coder-0.5B
   writes its calls that way about as often as bare: the first token's
   log-probabilities differ by 0.08), which goes with them. Returns where
   they end, or (size_t)-1 when the rest is held (a call, or what may
   still become one, is incomplete). */
static size_t bare_calls(parse_ctx *p, const char *s, size_t n, bool final) {
    static const char TAG[] = "<|python_tag|>";
    const size_t nt = sizeof TAG - 1;
    size_t i = skip_ws(s, n, 0), start = 0;
    if (!final && n - i < nt && !memcmp(s + i, TAG, n - i)) return (size_t)-1; /* may be the tag */
    if (n - i >= nt && !memcmp(s + i, TAG, nt)) i = start = skip_ws(s, n, i + nt);
    size_t body = 0;
    int fenced = fence_open(s, n, i, final, &body);
    if (fenced < 0) return (size_t)-1;
    if (fenced) i = body;
    while (i < n && !p->oom && s[i] == '{') {
        call_scan c;
        scan_call(s, n, i, &c);
        if (c.st == JS_MORE && !final && (!c.first_known || c.first_is_name)) {
            if (c.first_known && !add_call(p, s, i, &c, true)) break;
            return (size_t)-1;
        }
        if (c.st != JS_OK || !c.first_is_name || !add_call(p, s, i, &c, true)) break;
        i = c.end;
        while (i < n && (is_ws(s[i]) || s[i] == ';')) i++;
    }
    if (!p->r->n_calls) return start; /* no call: all is text, but the tag */
    if (fenced) {                     /* the closing fence goes with the calls */
        if (n - i >= 3 && !memcmp(s + i, "```", 3)) return i + 3;
        if (!final && n - i < 3 && !memcmp(s + i, "```", n - i)) return (size_t)-1;
    }
    return i;
}

static void parse_llama(parse_ctx *p, const char *s, size_t n, bool final) {
    size_t i = bare_calls(p, s, n, final);
    if (i < n) put(p, s + i, n - i); /* (size_t)-1: wait for more text; n: nothing left */
}

int srv_tc_parse(srv_tc_style style, const char *text, size_t len, bool final, int max_calls, srv_tc_result *out) {
    memset(out, 0, sizeof *out);
    parse_ctx p = {.r = out, .max_calls = max_calls < 1 ? 1 : max_calls > SRV_TC_MAX_CALLS ? SRV_TC_MAX_CALLS : max_calls};
    if (!text) len = 0;
    if (style == SRV_TC_LLAMA) parse_llama(&p, text, len, final);
    else if (style == SRV_TC_HERMES) parse_hermes(&p, text, len, final);
    else put(&p, text, len);
    /* Trimmed at both ends: trailing whitespace may still be followed by
       text, and held back until it is, so the content only ever grows. */
    size_t b = 0, e = p.len;
    while (b < e && is_ws(p.content[b])) b++;
    while (e > b && is_ws(p.content[e - 1])) e--;
    out->content = p.oom ? NULL : mllm_strndup(p.content ? p.content + b : "", e - b);
    out->content_len = e - b;
    mllm_free(p.content);
    if (!out->content) {
        srv_tc_result_free(out);
        return -1;
    }
    return 0;
}

void srv_tc_result_free(srv_tc_result *r) {
    for (int i = 0; i < r->n_calls; i++) {
        mllm_free(r->calls[i].name);
        mllm_free(r->calls[i].args);
    }
    mllm_free(r->content);
    memset(r, 0, sizeof *r);
}
