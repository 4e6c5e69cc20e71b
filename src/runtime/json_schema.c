/* The schema walk: every subschema becomes one GBNF rule (a $ref target
   too, compiled once, so recursive schemas become recursive rules). */
#include "runtime/json_schema.h"
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/alloc.h"
#include "core/error.h"
#include "runtime/grammar.h"
#include "runtime/json_schema_internal.h"

typedef struct {
    const cJSON *root;
    jsg_buf out;          /* the rules written so far */
    char **names;         /* (n_names) rule names in use */
    size_t n_names, cap_names;
    struct { char *ref, *rule; } refs[MLLM_JSG_MAX_REFS];
    int n_refs;
    unsigned prims;       /* JSG_* rules to write at the end */
    int depth;
    char path[256];       /* JSON pointer of the subschema being compiled */
    mllm_status st;
} jsg;

static char *fail(jsg *J, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static char *fail(jsg *J, const char *fmt, ...) {
    if (J->st != MLLM_OK) return NULL;
    char msg[384];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    J->st = mllm_err(MLLM_ERR_INVALID_ARG, "json schema: at #%s: %s", J->path, msg);
    return NULL;
}

static char *nomem(jsg *J) {
    if (J->st == MLLM_OK) J->st = mllm_err(MLLM_ERR_NOMEM, "json schema: out of memory");
    return NULL;
}

static size_t path_push(jsg *J, const char *seg) {
    size_t n = strlen(J->path);
    snprintf(J->path + n, sizeof J->path - n, "/%s", seg);
    return n;
}
static void path_pop(jsg *J, size_t n) { J->path[n] = 0; }

/* ---- rule names ------------------------------------------------------- */
static bool name_used(const jsg *J, const char *s) {
    for (size_t i = 0; i < J->n_names; i++)
        if (!strcmp(J->names[i], s)) return true;
    static const char *const prims[] = {"ws", "char", "string", "integer", "number", "nonneg-number", "boolean",
                                        "null", "value", "object", "array", "date", "time", "date-time", "uuid", "root"};
    for (size_t i = 0; i < sizeof prims / sizeof prims[0]; i++)
        if (!strcmp(prims[i], s)) return true;
    return false;
}

/* A fresh rule name from hint ([a-zA-Z0-9-] only), owned by J. */
static const char *new_name(jsg *J, const char *hint) {
    char base[48], name[64];
    size_t k = 0;
    for (const char *p = hint; *p && k < sizeof base - 1; p++) {
        char c = *p;
        bool word = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
        base[k++] = word ? c : '-';
    }
    base[k] = 0;
    if (!k) snprintf(base, sizeof base, "r");
    snprintf(name, sizeof name, "%s", base);
    for (int i = 1; name_used(J, name); i++) snprintf(name, sizeof name, "%s-%d", base, i);
    if (J->n_names == J->cap_names) {
        size_t cap = J->cap_names ? 2 * J->cap_names : 32;
        char **t = mllm_realloc(J->names, cap * sizeof *t);
        if (!t) return nomem(J);
        J->names = t;
        J->cap_names = cap;
    }
    char *s = mllm_strndup(name, strlen(name));
    if (!s) return nomem(J);
    J->names[J->n_names++] = s;
    return s;
}

static void write_rule(jsg *J, const char *name, const jsg_buf *body) {
    jsg_printf(&J->out, "%s ::= ", name);
    /* An empty body would let the next line continue the rule (newlines may follow ::=). */
    jsg_putn(&J->out, body->n ? body->s : "\"\"", body->n ? body->n : 2);
    jsg_puts(&J->out, "\n");
    if (J->out.n > MLLM_GRAMMAR_MAX_TEXT)
        fail(J, "the grammar grows past MLLM_GRAMMAR_MAX_TEXT (%u bytes)", MLLM_GRAMMAR_MAX_TEXT);
}

/* A new rule with this body; its name (owned by J) or NULL. */
static const char *add_rule(jsg *J, const char *hint, jsg_buf *body) {
    const char *name = body->oom ? nomem(J) : new_name(J, hint);
    if (name && J->st == MLLM_OK) write_rule(J, name, body);
    mllm_free(body->s);
    return J->st == MLLM_OK ? name : NULL;
}

static const char *prim(jsg *J, unsigned bit) { return jsg_prim_name(bit, &J->prims); }

/* ---- keywords --------------------------------------------------------- */
static const char *const REFUSED[] = {
    "pattern", "patternProperties", "prefixItems", "contains", "minContains", "maxContains", "not", "if", "then",
    "else", "dependentRequired", "dependentSchemas", "dependencies", "propertyNames", "unevaluatedProperties",
    "unevaluatedItems", "minProperties", "maxProperties", "multipleOf", "additionalItems", "$dynamicRef",
    "$recursiveRef"};
/* Keywords that constrain a value (beside $ref or anyOf, not supported). */
static const char *const CONSTRAINTS[] = {
    "type", "properties", "required", "additionalProperties", "items", "minItems", "maxItems", "minLength",
    "maxLength", "format", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "enum", "const",
    "anyOf", "oneOf", "allOf", "$ref"};

static const cJSON *kw(const cJSON *s, const char *name) { return cJSON_GetObjectItemCaseSensitive(s, name); }

static bool check_refused(jsg *J, const cJSON *s) {
    for (size_t i = 0; i < sizeof REFUSED / sizeof REFUSED[0]; i++)
        if (kw(s, REFUSED[i])) return fail(J, "'%s' is not supported", REFUSED[i]), false;
    const cJSON *u = kw(s, "uniqueItems");
    if (u && !cJSON_IsFalse(u)) return fail(J, "'uniqueItems' is not supported (only false)"), false;
    return true;
}

/* The one constraint keyword beside `only`, or NULL. */
static const char *other_constraint(const cJSON *s, const char *only) {
    for (size_t i = 0; i < sizeof CONSTRAINTS / sizeof CONSTRAINTS[0]; i++)
        if (strcmp(CONSTRAINTS[i], only) && kw(s, CONSTRAINTS[i])) return CONSTRAINTS[i];
    return NULL;
}

/* A non-negative integer keyword within MLLM_GRAMMAR_MAX_REPEAT; -1 if absent. */
static long count_kw(jsg *J, const cJSON *s, const char *name, bool *bad) {
    const cJSON *v = kw(s, name);
    if (!v) return -1;
    if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble != floor(v->valuedouble)) {
        *bad = true;
        fail(J, "'%s' must be a non-negative integer", name);
        return -1;
    }
    if (v->valuedouble > MLLM_GRAMMAR_MAX_REPEAT) {
        *bad = true;
        fail(J, "'%s' %.0f is over the limit of %d (MLLM_GRAMMAR_MAX_REPEAT)", name, v->valuedouble,
             MLLM_GRAMMAR_MAX_REPEAT);
        return -1;
    }
    return (long)v->valuedouble;
}

static const char *visit(jsg *J, const cJSON *s, const char *hint);

/* Whether s is UTF-8 as the grammar parser reads it (no overlong forms,
   surrogates or code points past U+10FFFF); cJSON does not check. */
static bool utf8_ok(const char *s) {
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        int n = *p < 0x80 ? 1 : (*p >> 5) == 6 ? 2 : (*p >> 4) == 14 ? 3 : (*p >> 3) == 30 ? 4 : 0;
        if (!n) return false;
        uint32_t c = n == 1 ? *p : *p & (0x7F >> n);
        for (int k = 1; k < n; k++) {
            if ((p[k] & 0xC0) != 0x80) return false;
            c = c << 6 | (p[k] & 0x3F);
        }
        static const uint32_t min[5] = {0, 0, 0x80, 0x800, 0x10000};
        if (c < min[n] || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) return false;
        p += n;
    }
    return true;
}

/* The GBNF literal of a JSON value as cJSON prints it (compact). */
static bool put_value_literal(jsg *J, jsg_buf *b, const cJSON *v) {
    char *text = cJSON_PrintUnformatted(v);
    if (!text) return nomem(J), false;
    if (!utf8_ok(text)) {
        cJSON_free(text);
        return fail(J, "a value of 'enum' / 'const' is not valid UTF-8"), false;
    }
    jsg_literal(b, text, strlen(text));
    cJSON_free(text);
    return true;
}

static bool type_matches(const cJSON *v, const char *type) {
    if (!strcmp(type, "string")) return cJSON_IsString(v);
    if (!strcmp(type, "number")) return cJSON_IsNumber(v);
    if (!strcmp(type, "integer")) return cJSON_IsNumber(v) && v->valuedouble == floor(v->valuedouble);
    if (!strcmp(type, "boolean")) return cJSON_IsBool(v);
    if (!strcmp(type, "null")) return cJSON_IsNull(v);
    if (!strcmp(type, "object")) return cJSON_IsObject(v);
    if (!strcmp(type, "array")) return cJSON_IsArray(v);
    return false;
}

static bool value_allowed(const cJSON *v, const cJSON *type) {
    if (!type) return true;
    if (cJSON_IsString(type)) return type_matches(v, type->valuestring);
    const cJSON *t;
    cJSON_ArrayForEach(t, type) if (cJSON_IsString(t) && type_matches(v, t->valuestring)) return true;
    return false;
}

/* enum / const: the values as literals (those of the schema's type). */
static const char *visit_enum(jsg *J, const cJSON *s, const char *hint) {
    const cJSON *e = kw(s, "enum"), *c = kw(s, "const"), *type = kw(s, "type"), *v;
    if (e && !cJSON_IsArray(e)) return fail(J, "'enum' must be an array");
    int n = e ? cJSON_GetArraySize(e) : 1;
    if (n > MLLM_JSG_MAX_ENUM) return fail(J, "'enum' has %d values, over the limit of %d (MLLM_JSG_MAX_ENUM)", n, MLLM_JSG_MAX_ENUM);
    jsg_buf b = {0};
    int k = 0;
    if (c) {
        if (value_allowed(c, type)) k += put_value_literal(J, &b, c);
    } else {
        cJSON_ArrayForEach(v, e) {
            if (!value_allowed(v, type)) continue;
            if (k++) jsg_puts(&b, " | ");
            if (!put_value_literal(J, &b, v)) break;
        }
    }
    if (k == 0) {
        mllm_free(b.s);
        return fail(J, "no value of '%s' has the schema's type", c ? "const" : "enum");
    }
    return add_rule(J, hint, &b);
}

/* ---- $ref --------------------------------------------------------------- */
static const cJSON *resolve(jsg *J, const char *ref) {
    if (ref[0] != '#') return fail(J, "$ref '%.80s': only local references (#, #/$defs/...) are supported", ref), NULL;
    const cJSON *at = J->root;
    const char *p = ref + 1;
    while (*p == '/') {
        char seg[128];
        size_t k = 0;
        for (p++; *p && *p != '/'; p++) {
            char ch = *p;
            if (ch == '~' && (p[1] == '0' || p[1] == '1')) ch = *++p == '0' ? '~' : '/';
            if (k + 1 >= sizeof seg) return fail(J, "$ref '%.80s': a path segment is too long", ref), NULL;
            seg[k++] = ch;
        }
        seg[k] = 0;
        if (cJSON_IsArray(at)) {
            char *end;
            long i = strtol(seg, &end, 10);
            at = *seg && !*end && i >= 0 ? cJSON_GetArrayItem(at, (int)i) : NULL;
        } else {
            at = cJSON_IsObject(at) ? cJSON_GetObjectItemCaseSensitive(at, seg) : NULL;
        }
        if (!at) return fail(J, "$ref '%.80s' points to nothing", ref), NULL;
    }
    if (*p) return fail(J, "$ref '%.80s': only JSON pointers (#/a/b) are supported", ref), NULL;
    if (!cJSON_IsObject(at) && !cJSON_IsBool(at)) return fail(J, "$ref '%.80s' is not a schema", ref), NULL;
    return at;
}

static const char *visit_ref(jsg *J, const cJSON *s) {
    const cJSON *r = kw(s, "$ref");
    if (!cJSON_IsString(r)) return fail(J, "'$ref' must be a string");
    const char *other = other_constraint(s, "$ref");
    if (other) return fail(J, "'%s' beside '$ref' is not supported", other);
    for (int i = 0; i < J->n_refs; i++)
        if (!strcmp(J->refs[i].ref, r->valuestring)) return J->refs[i].rule; /* compiled, or being compiled */
    if (J->n_refs >= MLLM_JSG_MAX_REFS)
        return fail(J, "more than %d distinct $ref targets (MLLM_JSG_MAX_REFS)", MLLM_JSG_MAX_REFS);
    /* A chain of bare $refs that comes back to itself never reaches a schema. */
    const cJSON *t = resolve(J, r->valuestring);
    for (int hops = 0; t && cJSON_IsObject(t) && cJSON_IsString(kw(t, "$ref")) && !other_constraint(t, "$ref"); hops++) {
        if (hops > MLLM_JSG_MAX_REFS)
            return fail(J, "$ref '%.80s' is a cycle of references that never reaches a schema", r->valuestring);
        t = resolve(J, kw(t, "$ref")->valuestring);
    }
    if (!t) return NULL;
    t = resolve(J, r->valuestring);
    char hint[64];
    const char *tail = strrchr(r->valuestring, '/');
    snprintf(hint, sizeof hint, "ref-%s", tail && tail[1] ? tail + 1 : "root");
    char *ref = mllm_strndup(r->valuestring, strlen(r->valuestring));
    const char *name = ref ? new_name(J, hint) : nomem(J);
    if (!name) { mllm_free(ref); return NULL; }
    J->refs[J->n_refs].ref = ref;
    J->refs[J->n_refs++].rule = (char *)name;
    char saved[sizeof J->path];
    memcpy(saved, J->path, sizeof saved);
    snprintf(J->path, sizeof J->path, "%s", r->valuestring + 1);
    const char *body = visit(J, t, hint);
    memcpy(J->path, saved, sizeof saved);
    if (!body) return NULL;
    jsg_buf b = {0};
    jsg_puts(&b, body);
    write_rule(J, name, &b);
    mllm_free(b.s);
    return J->st == MLLM_OK ? name : NULL;
}

/* ---- objects ------------------------------------------------------------ */
typedef struct {
    const char *key;
    const char *rule;
    bool required;
} prop;

/* Code points of UTF-8 text (cJSON does not check it); -1 if invalid. */
static int decode_utf8(const char *s, uint32_t *out, int cap) {
    int n = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        int len = *p < 0x80 ? 1 : (*p >> 5) == 6 ? 2 : (*p >> 4) == 14 ? 3 : (*p >> 3) == 30 ? 4 : 0;
        if (!len || n >= cap) return -1;
        uint32_t c = len == 1 ? *p : *p & (0x7F >> len);
        for (int k = 1; k < len; k++) {
            if ((p[k] & 0xC0) != 0x80) return -1;
            c = c << 6 | (p[k] & 0x3F);
        }
        out[n++] = c;
        p += len;
    }
    return n;
}

/* A rule for the keys of additional properties: none may equal a declared
   key (a duplicate key would be validated by its last value only), so an
   additional key starts with a character no declared key starts with, or
   is empty when no declared key is. A subset of the valid keys, simple
   and never wrong. */
static const char *other_key(jsg *J, const prop *p, int n, const char *hint) {
    if (n == 0) return prim(J, JSG_STRING);
    const char *chr = prim(J, JSG_CHAR);
    jsg_buf b = {0};
    bool empty_declared = false;
    jsg_puts(&b, "\"\\\"\" ( [^\"\\\\\\x7F\\x00-\\x1F");
    for (int i = 0; i < n; i++) {
        uint32_t c[1];
        char first[5] = {0};
        size_t k = 1;
        unsigned char lead = (unsigned char)p[i].key[0];
        if (!lead) { empty_declared = true; continue; }
        k = lead < 0x80 ? 1 : (lead >> 5) == 6 ? 2 : (lead >> 4) == 14 ? 3 : 4;
        memcpy(first, p[i].key, strnlen(p[i].key, k));
        if (decode_utf8(first, c, 1) != 1) {
            mllm_free(b.s);
            return fail(J, "property name '%.40s' is not valid UTF-8", p[i].key);
        }
        jsg_printf(&b, "\\U%08X", c[0]);
    }
    jsg_printf(&b, "] %s* \"\\\"\"%s )", chr, empty_declared ? "" : " | \"\\\"\"");
    return add_rule(J, hint, &b);
}

static const char *visit_object(jsg *J, const cJSON *s, const char *hint) {
    const cJSON *props = kw(s, "properties"), *req = kw(s, "required"), *add = kw(s, "additionalProperties"), *v;
    if (props && !cJSON_IsObject(props)) return fail(J, "'properties' must be an object");
    if (req && !cJSON_IsArray(req)) return fail(J, "'required' must be an array");
    if (add && !cJSON_IsBool(add) && !cJSON_IsObject(add)) return fail(J, "'additionalProperties' must be a boolean or a schema");
    int n = (props ? cJSON_GetArraySize(props) : 0) + (req ? cJSON_GetArraySize(req) : 0);
    if (n > MLLM_JSG_MAX_PROPERTIES)
        return fail(J, "%d properties, over the limit of %d (MLLM_JSG_MAX_PROPERTIES)", n, MLLM_JSG_MAX_PROPERTIES);
    prop p[MLLM_JSG_MAX_PROPERTIES];
    int np = 0;
    char h[96];
    cJSON_ArrayForEach(v, props) {
        size_t at = path_push(J, "properties");
        size_t at2 = path_push(J, v->string);
        snprintf(h, sizeof h, "%s-%s", hint, v->string);
        const char *rule = visit(J, v, h);
        path_pop(J, at2);
        path_pop(J, at);
        if (!rule) return NULL;
        p[np++] = (prop){v->string, rule, false};
    }
    cJSON_ArrayForEach(v, req) {
        if (!cJSON_IsString(v)) return fail(J, "'required' must hold strings");
        int i = 0;
        while (i < np && strcmp(p[i].key, v->valuestring)) i++;
        if (i == np) p[np++] = (prop){v->valuestring, prim(J, JSG_VALUE), false}; /* required, any value */
        p[i].required = true;
    }
    for (int i = 0; i < np; i++)
        if (!utf8_ok(p[i].key)) return fail(J, "a property name is not valid UTF-8");
    /* Additional properties: absent means none when properties are listed. */
    bool extra = add ? !cJSON_IsFalse(add) : !props && !req;
    const char *extra_val = NULL, *extra_key = NULL;
    if (extra) {
        size_t at = path_push(J, "additionalProperties");
        snprintf(h, sizeof h, "%s-additional", hint);
        extra_val = cJSON_IsObject(add) ? visit(J, add, h) : prim(J, JSG_VALUE);
        path_pop(J, at);
        snprintf(h, sizeof h, "%s-other-key", hint);
        extra_key = extra_val ? other_key(J, p, np, h) : NULL;
        if (!extra_key) return NULL;
    }
    const char *ws = prim(J, JSG_WS);
    /* kv_i = key ws ":" ws value; T_j = the properties from j on, after one
       already written; R_i = the same before any was written. */
    jsg_buf kv[MLLM_JSG_MAX_PROPERTIES + 1];
    memset(kv, 0, sizeof kv);
    for (int i = 0; i < np; i++) {
        cJSON *ks = cJSON_CreateString(p[i].key);
        char *kt = ks ? cJSON_PrintUnformatted(ks) : NULL;
        cJSON_Delete(ks);
        if (!kt) return nomem(J);
        jsg_literal(&kv[i], kt, strlen(kt));
        cJSON_free(kt);
        jsg_printf(&kv[i], " %s \":\" %s %s", ws, ws, p[i].rule);
    }
    if (extra) jsg_printf(&kv[np], "%s %s \":\" %s %s", extra_key, ws, ws, extra_val);
    /* tails, last first: tail[j] names T_j ("" for an empty T_n) */
    const char *tail[MLLM_JSG_MAX_PROPERTIES + 1];
    jsg_buf b = {0};
    if (extra) jsg_printf(&b, "( \",\" %s %s %s )*", ws, kv[np].s, ws);
    tail[np] = extra ? add_rule(J, "tail", &b) : "";
    for (int j = np - 1; j >= 1 && J->st == MLLM_OK; j--) { /* T_0 is never used */
        jsg_buf t = {0};
        jsg_printf(&t, p[j].required ? "\",\" %s %s %s %s" : "( \",\" %s %s %s )? %s", ws, kv[j].s, ws,
                   tail[j + 1]);
        snprintf(h, sizeof h, "%s-tail", hint);
        tail[j] = add_rule(J, h, &t);
    }
    /* R_i from the first required property backwards (or from the end). */
    int first_req = 0;
    while (first_req < np && !p[first_req].required) first_req++;
    const char *head = "";
    jsg_buf r = {0};
    if (first_req == np) {
        if (extra) jsg_printf(&r, "( %s %s ( \",\" %s %s %s )* )?", kv[np].s, ws, ws, kv[np].s, ws);
    } else {
        jsg_printf(&r, "%s %s %s", kv[first_req].s, ws, tail[first_req + 1]);
    }
    snprintf(h, sizeof h, "%s-head", hint);
    head = J->st == MLLM_OK ? add_rule(J, h, &r) : (mllm_free(r.s), NULL);
    for (int i = first_req - 1; i >= 0 && head; i--) {
        jsg_buf t = {0};
        jsg_printf(&t, "%s %s %s | %s", kv[i].s, ws, tail[i + 1], head);
        head = add_rule(J, h, &t);
    }
    for (int i = 0; i <= np; i++) mllm_free(kv[i].s);
    if (!head) return NULL;
    jsg_buf o = {0};
    jsg_printf(&o, "\"{\" %s %s \"}\"", ws, head);
    return add_rule(J, hint, &o);
}

/* x with its bare $refs followed. */
static const cJSON *deref(jsg *J, const cJSON *x) {
    for (int hops = 0; x && cJSON_IsObject(x) && cJSON_IsString(kw(x, "$ref")); hops++) {
        if (hops > MLLM_JSG_MAX_REFS) return fail(J, "a cycle of $refs that never reaches a schema"), NULL;
        x = resolve(J, kw(x, "$ref")->valuestring);
    }
    return x;
}

static bool is_object_schema(const cJSON *x) {
    const cJSON *t = kw(x, "type");
    return cJSON_IsObject(x) && (t ? cJSON_IsString(t) && !strcmp(t->valuestring, "object") : kw(x, "properties") != NULL);
}

/* allOf of object schemas: one object with every branch's properties (a
   name twice must be the same schema) and required keys, and no others.
   The schema's own properties / required count as one more branch. */
static const char *visit_allof(jsg *J, const cJSON *s, const char *hint) {
    const cJSON *all = kw(s, "allOf"), *b, *p;
    if (!cJSON_IsArray(all) || cJSON_GetArraySize(all) == 0) return fail(J, "'allOf' must be a non-empty array");
    if (cJSON_GetArraySize(all) == 1 && !other_constraint(s, "allOf")) {
        size_t at = path_push(J, "allOf");
        size_t at2 = path_push(J, "0");
        const char *r = visit(J, all->child, hint);
        path_pop(J, at2);
        path_pop(J, at);
        return r;
    }
    static const char *const own_ok[] = {"allOf", "properties", "required", "type", "additionalProperties"};
    for (size_t i = 0; i < sizeof CONSTRAINTS / sizeof CONSTRAINTS[0]; i++) {
        bool ok = false;
        for (size_t k = 0; k < sizeof own_ok / sizeof own_ok[0]; k++) ok |= !strcmp(CONSTRAINTS[i], own_ok[k]);
        if (!ok && kw(s, CONSTRAINTS[i])) return fail(J, "'%s' beside 'allOf' is not supported", CONSTRAINTS[i]);
    }
    cJSON *m = cJSON_CreateObject(), *props = cJSON_CreateObject(), *req = cJSON_CreateArray();
    if (!m || !props || !req) { cJSON_Delete(m); cJSON_Delete(props); cJSON_Delete(req); return nomem(J); }
    cJSON_AddItemToObject(m, "properties", props);
    cJSON_AddItemToObject(m, "required", req);
    cJSON_AddFalseToObject(m, "additionalProperties");
    const char *bad = NULL;
    int n = cJSON_GetArraySize(all);
    for (int i = 0; i <= n && !bad && J->st == MLLM_OK; i++) {
        const cJSON *x = i < n ? deref(J, cJSON_GetArrayItem(all, i)) : s;
        if (!x) break;
        if (i < n && !is_object_schema(x)) { bad = "every allOf branch must be an object schema"; break; }
        const cJSON *xp = kw(x, "properties");
        if (xp && !cJSON_IsObject(xp)) { bad = "'properties' must be an object"; break; }
        cJSON_ArrayForEach(p, xp) {
            const cJSON *had = cJSON_GetObjectItemCaseSensitive(props, p->string);
            if (had && !cJSON_Compare(had, p, true)) { bad = "two allOf branches define a property differently"; break; }
            if (had) continue;
            cJSON *dup = cJSON_Duplicate(p, true);
            if (!dup || !cJSON_AddItemToObject(props, p->string, dup)) { /* not added: still ours */
                cJSON_Delete(dup);
                nomem(J);
                break;
            }
        }
        cJSON_ArrayForEach(p, kw(x, "required"))
            if (cJSON_IsString(p)) cJSON_AddItemToArray(req, cJSON_CreateString(p->valuestring));
    }
    /* A branch that forbids additional properties must list them all. */
    for (int i = 0; i <= n && !bad && J->st == MLLM_OK; i++) {
        const cJSON *x = i < n ? deref(J, cJSON_GetArrayItem(all, i)) : s;
        if (!x || !cJSON_IsFalse(kw(x, "additionalProperties"))) continue;
        cJSON_ArrayForEach(b, props)
            if (!cJSON_GetObjectItemCaseSensitive(kw(x, "properties"), b->string))
                bad = "a branch with additionalProperties false lacks a property another branch defines";
    }
    const char *r = NULL;
    if (bad) fail(J, "allOf: %s", bad);
    else if (J->st == MLLM_OK) r = visit(J, m, hint); /* its $refs still resolve against the document */
    cJSON_Delete(m);
    return r;
}

/* ---- arrays, strings, numbers ----------------------------------------- */
static void put_repeat(jsg_buf *b, long min, long max) {
    if (min == 0 && max < 0) jsg_puts(b, "*");
    else if (min == 1 && max < 0) jsg_puts(b, "+");
    else if (min == 0 && max == 1) jsg_puts(b, "?");
    else if (max < 0) jsg_printf(b, "{%ld,}", min);
    else if (min == max) jsg_printf(b, "{%ld}", min);
    else jsg_printf(b, "{%ld,%ld}", min, max);
}

static const char *visit_array(jsg *J, const cJSON *s, const char *hint) {
    const cJSON *items = kw(s, "items");
    bool bad = false;
    long min = count_kw(J, s, "minItems", &bad), max = count_kw(J, s, "maxItems", &bad);
    if (bad) return NULL;
    if (min < 0) min = 0;
    if (max >= 0 && max < min) return fail(J, "maxItems %ld < minItems %ld", max, min);
    if (items && !cJSON_IsObject(items) && !cJSON_IsBool(items))
        return fail(J, "'items' must be a schema (a list of schemas is prefixItems, not supported)");
    if (cJSON_IsFalse(items)) max = 0;
    if (max == 0 && min > 0) return fail(J, "'items' false with minItems %ld", min);
    const char *ws = prim(J, JSG_WS), *item = NULL;
    char h[96];
    if (max != 0) {
        snprintf(h, sizeof h, "%s-item", hint);
        size_t at = path_push(J, "items");
        item = items && !cJSON_IsTrue(items) ? visit(J, items, h) : prim(J, JSG_VALUE);
        path_pop(J, at);
        if (!item) return NULL;
    }
    jsg_buf b = {0};
    if (max == 0) {
        jsg_printf(&b, "\"[\" %s \"]\"", ws);
    } else if (min == 0) {
        jsg_printf(&b, "\"[\" %s ( %s %s ( \",\" %s %s %s )", ws, item, ws, ws, item, ws);
        put_repeat(&b, 0, max < 0 ? -1 : max - 1);
        jsg_puts(&b, " )? \"]\"");
    } else {
        jsg_printf(&b, "\"[\" %s %s %s ( \",\" %s %s %s )", ws, item, ws, ws, item, ws);
        put_repeat(&b, min - 1, max < 0 ? -1 : max - 1);
        jsg_puts(&b, " \"]\"");
    }
    return add_rule(J, hint, &b);
}

static const char *visit_string(jsg *J, const cJSON *s, const char *hint) {
    bool bad = false;
    long min = count_kw(J, s, "minLength", &bad), max = count_kw(J, s, "maxLength", &bad);
    const cJSON *f = kw(s, "format");
    if (bad) return NULL;
    if (f) {
        if (!cJSON_IsString(f)) return fail(J, "'format' must be a string");
        static const struct { const char *name; unsigned bit; } F[] = {
            {"date", JSG_DATE}, {"time", JSG_TIME}, {"date-time", JSG_DATE_TIME}, {"uuid", JSG_UUID}};
        unsigned bit = 0;
        for (size_t i = 0; i < sizeof F / sizeof F[0]; i++)
            if (!strcmp(F[i].name, f->valuestring)) bit = F[i].bit;
        if (!bit) return fail(J, "format '%.40s' is not supported (only date, time, date-time, uuid)", f->valuestring);
        if (min >= 0 || max >= 0) return fail(J, "minLength / maxLength beside 'format' are not supported");
        jsg_buf b = {0};
        jsg_printf(&b, "\"\\\"\" %s \"\\\"\"", prim(J, bit));
        return add_rule(J, hint, &b);
    }
    if (min < 0 && max < 0) return prim(J, JSG_STRING);
    if (min < 0) min = 0;
    if (max >= 0 && max < min) return fail(J, "maxLength %ld < minLength %ld", max, min);
    jsg_buf b = {0};
    jsg_printf(&b, "\"\\\"\" %s", prim(J, JSG_CHAR));
    put_repeat(&b, min, max);
    jsg_puts(&b, " \"\\\"\"");
    return add_rule(J, hint, &b);
}

/* minimum / maximum (and exclusive ones, draft 4's booleans too) as an
   inclusive integer range. */
static bool int_bounds(jsg *J, const cJSON *s, bool *has_lo, int64_t *lo, bool *has_hi, int64_t *hi) {
    static const char *const names[4] = {"minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"};
    *has_lo = *has_hi = false;
    for (int i = 0; i < 4; i++) {
        const cJSON *v = kw(s, names[i]);
        if (!v || cJSON_IsFalse(v)) continue;
        bool low = i < 2, excl = i == 1 || i == 3;
        if (cJSON_IsTrue(v)) { /* draft 4: the bound beside it is exclusive */
            v = kw(s, low ? "minimum" : "maximum");
            if (!cJSON_IsNumber(v)) return fail(J, "'%s' true without '%s'", names[i], low ? "minimum" : "maximum"), false;
        }
        if (!cJSON_IsNumber(v)) return fail(J, "'%s' must be a number", names[i]), false;
        double d = v->valuedouble;
        if (!(fabs(d) <= (double)MLLM_JSG_MAX_INT))
            return fail(J, "'%s' %g is outside the supported integer range of +-%lld (MLLM_JSG_MAX_INT)", names[i], d,
                        (long long)MLLM_JSG_MAX_INT), false;
        int64_t b = low ? (int64_t)ceil(d) : (int64_t)floor(d);
        if (excl && (double)b == d) b += low ? 1 : -1;
        if (low && (!*has_lo || b > *lo)) { *lo = b; *has_lo = true; }
        if (!low && (!*has_hi || b < *hi)) { *hi = b; *has_hi = true; }
    }
    if (*has_lo && *has_hi && *lo > *hi) return fail(J, "no integer lies between the minimum and the maximum"), false;
    return true;
}

static const char *visit_integer(jsg *J, const cJSON *s, const char *hint) {
    bool has_lo, has_hi;
    int64_t lo = 0, hi = 0;
    if (!int_bounds(J, s, &has_lo, &lo, &has_hi, &hi)) return NULL;
    if (!has_lo && !has_hi) return prim(J, JSG_INTEGER);
    jsg_buf b = {0};
    jsg_int_range(&b, has_lo, lo, has_hi, hi);
    return add_rule(J, hint, &b);
}

static const char *visit_number(jsg *J, const cJSON *s) {
    const cJSON *mn = kw(s, "minimum");
    bool other = kw(s, "maximum") || kw(s, "exclusiveMinimum") || kw(s, "exclusiveMaximum");
    if (!mn && !other) return prim(J, JSG_NUMBER);
    if (!other && cJSON_IsNumber(mn) && mn->valuedouble == 0) return prim(J, JSG_NONNEG_NUMBER);
    return fail(J, "minimum / maximum on numbers are supported only as minimum 0 (use type integer for ranges)");
}

/* ---- the walk ------------------------------------------------------------ */
static const char *visit_type(jsg *J, const cJSON *s, const char *type, const char *hint) {
    if (!strcmp(type, "object")) return visit_object(J, s, hint);
    if (!strcmp(type, "array")) return visit_array(J, s, hint);
    if (!strcmp(type, "string")) return visit_string(J, s, hint);
    if (!strcmp(type, "integer")) return visit_integer(J, s, hint);
    if (!strcmp(type, "number")) return visit_number(J, s);
    if (!strcmp(type, "boolean")) return prim(J, JSG_BOOLEAN);
    if (!strcmp(type, "null")) return prim(J, JSG_NULL);
    return fail(J, "unknown type '%.40s'", type);
}

/* The type a schema without "type" stands for, from its keywords; NULL: any. */
static const char *implied_type(const cJSON *s) {
    if (kw(s, "properties") || kw(s, "required") || kw(s, "additionalProperties")) return "object";
    if (kw(s, "items") || kw(s, "minItems") || kw(s, "maxItems")) return "array";
    if (kw(s, "minLength") || kw(s, "maxLength") || kw(s, "format")) return "string";
    if (kw(s, "minimum") || kw(s, "maximum") || kw(s, "exclusiveMinimum") || kw(s, "exclusiveMaximum"))
        return "number";
    return NULL;
}

static const char *visit_alternatives(jsg *J, const cJSON *list, const char *key, const char *hint) {
    if (!cJSON_IsArray(list) || cJSON_GetArraySize(list) == 0) return fail(J, "'%s' must be a non-empty array", key);
    if (cJSON_GetArraySize(list) > MLLM_JSG_MAX_ENUM)
        return fail(J, "'%s' has over %d branches (MLLM_JSG_MAX_ENUM)", key, MLLM_JSG_MAX_ENUM);
    jsg_buf b = {0};
    const cJSON *v;
    int i = 0;
    char h[96], idx[16];
    cJSON_ArrayForEach(v, list) {
        snprintf(h, sizeof h, "%s-%d", hint, i);
        snprintf(idx, sizeof idx, "%d", i);
        size_t at = path_push(J, key);
        size_t at2 = path_push(J, idx);
        const char *r = visit(J, v, h);
        path_pop(J, at2);
        path_pop(J, at);
        if (!r) { mllm_free(b.s); return NULL; }
        jsg_printf(&b, "%s%s", i++ ? " | " : "", r);
    }
    return add_rule(J, hint, &b);
}

static const char *visit(jsg *J, const cJSON *s, const char *hint) {
    if (J->st != MLLM_OK) return NULL;
    if (cJSON_IsTrue(s)) return prim(J, JSG_VALUE);
    if (cJSON_IsFalse(s)) return fail(J, "schema false matches nothing");
    if (!cJSON_IsObject(s)) return fail(J, "a schema must be an object or a boolean");
    if (J->depth >= MLLM_JSG_MAX_DEPTH)
        return fail(J, "subschemas nested deeper than %d (MLLM_JSG_MAX_DEPTH)", MLLM_JSG_MAX_DEPTH);
    if (!check_refused(J, s)) return NULL;
    J->depth++;
    const char *r;
    const cJSON *type = kw(s, "type"), *alt;
    if (kw(s, "$ref")) r = visit_ref(J, s);
    else if (kw(s, "enum") || kw(s, "const")) r = visit_enum(J, s, hint);
    else if ((alt = kw(s, "anyOf")) || (alt = kw(s, "oneOf"))) {
        const char *key = kw(s, "anyOf") ? "anyOf" : "oneOf", *other = other_constraint(s, key);
        r = other ? fail(J, "'%s' beside '%s' is not supported", other, key) : visit_alternatives(J, alt, key, hint);
    } else if (kw(s, "allOf")) r = visit_allof(J, s, hint);
    else if (cJSON_IsString(type)) r = visit_type(J, s, type->valuestring, hint);
    else if (cJSON_IsArray(type)) {
        /* a list of types: one alternative each, with this schema's keywords */
        jsg_buf b = {0};
        const cJSON *t;
        int i = 0;
        r = NULL;
        cJSON_ArrayForEach(t, type) {
            if (!cJSON_IsString(t)) { r = fail(J, "'type' must hold strings"); break; }
            char h[96];
            snprintf(h, sizeof h, "%s-%s", hint, t->valuestring);
            const char *x = visit_type(J, s, t->valuestring, h);
            if (!x) break;
            jsg_printf(&b, "%s%s", i++ ? " | " : "", x);
        }
        if (i == 0 && J->st == MLLM_OK) r = fail(J, "'type' is an empty list");
        r = J->st == MLLM_OK ? add_rule(J, hint, &b) : (mllm_free(b.s), NULL);
    } else if (type) r = fail(J, "'type' must be a string or a list of strings");
    else {
        const char *t = implied_type(s);
        r = t ? visit_type(J, s, t, hint) : prim(J, JSG_VALUE);
    }
    J->depth--;
    return r;
}

mllm_status mllm_jsg_compile(const cJSON *schema, char **out, size_t *len) {
    *out = NULL;
    jsg *J = mllm_calloc(1, sizeof *J);
    if (!J) return mllm_err(MLLM_ERR_NOMEM, "json schema: out of memory");
    J->root = schema;
    J->st = MLLM_OK;
    const char *root = visit(J, schema, "root-value");
    if (root && J->st == MLLM_OK) {
        jsg_buf b = {0};
        jsg_puts(&b, root);
        write_rule(J, "root", &b);
        mllm_free(b.s);
    }
    if (J->st == MLLM_OK) jsg_prim_rules(&J->out, J->prims);
    if (J->st == MLLM_OK && J->out.oom) nomem(J);
    mllm_status st = J->st;
    if (st == MLLM_OK) {
        *out = J->out.s;
        if (len) *len = J->out.n;
    } else {
        mllm_free(J->out.s);
    }
    for (size_t i = 0; i < J->n_names; i++) mllm_free(J->names[i]);
    mllm_free(J->names);
    for (int i = 0; i < J->n_refs; i++) mllm_free(J->refs[i].ref);
    mllm_free(J);
    return st;
}
