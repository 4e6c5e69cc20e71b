/* The server's request-head rules (src/server/http_check.c) on header
   bytes given with their lengths: media types, the exact API key (a NUL
   does not end it), the origin list, duplicate Content-Length, Host. */
#include <string.h>
#include "server/internal.h"
#include "testutil.h"

#define S(lit) ((srv_str){lit, sizeof lit - 1})

static void add(srv_head *h, const char *name, const char *value, size_t vlen) {
    srv_head_add(h, name, strlen(name), value, vlen);
}

static void test_media_type(void **state) {
    (void)state;
    assert_true(srv_media_is_json(S("application/json")));
    assert_true(srv_media_is_json(S("Application/JSON; charset=utf-8")));
    assert_true(srv_media_is_json(S(" application/json ;charset=UTF-8")));
    assert_false(srv_media_is_json(S("application/jsonp")));
    assert_false(srv_media_is_json(S("text/plain")));
    assert_false(srv_media_is_json(S("application/x-www-form-urlencoded")));
    assert_false(srv_media_is_json(S("")));
    assert_false(srv_media_is_json((srv_str){NULL, 0}));
}

static void test_key_exact_bytes(void **state) {
    (void)state;
    srv_policy p = {.api_key = "k3y", .api_key_len = 3};
    assert_true(srv_key_ok(&p, S("Bearer k3y")));
    assert_false(srv_key_ok(&p, S("Bearer k3y\0junk")));
    assert_false(srv_key_ok(&p, S("Bearer k3")));
    assert_false(srv_key_ok(&p, S("Bearer k3yy")));
    assert_false(srv_key_ok(&p, S("Bearer K3y")));
    assert_false(srv_key_ok(&p, S("bearer k3y")));
    assert_false(srv_key_ok(&p, S("k3y")));
    assert_false(srv_key_ok(&p, (srv_str){NULL, 0}));
    srv_policy open = {0};
    assert_true(srv_key_ok(&open, (srv_str){NULL, 0}));
}

static void test_origins(void **state) {
    (void)state;
    const char *list = "http://a.example, https://b.example:8443";
    assert_true(srv_origin_allowed(list, S("http://a.example")));
    assert_true(srv_origin_allowed(list, S("https://b.example:8443")));
    assert_false(srv_origin_allowed(list, S("https://b.example")));
    assert_false(srv_origin_allowed(list, S("http://a.example.evil")));
    assert_false(srv_origin_allowed(list, S("http://a.exampl")));
    assert_false(srv_origin_allowed(list, S("null")));
    assert_false(srv_origin_allowed(NULL, S("http://a.example")));
    assert_true(srv_origin_allowed("*", S("null")));
    assert_true(srv_origins_valid(NULL));
    assert_true(srv_origins_valid("*"));
    assert_true(srv_origins_valid(list));
    assert_false(srv_origins_valid("a.example"));
    assert_false(srv_origins_valid("http://a.example/"));
    assert_false(srv_origins_valid("http://*.example"));
    assert_false(srv_origins_valid("http://"));
}

/* The server's own chat page posts with Origin = http:// + Host; only an
   address (not a name a hostile DNS could rebind) counts as the same. */
static void test_origin_same(void **state) {
    (void)state;
    assert_true(srv_origin_same(S("http://127.0.0.1:8080"), S("127.0.0.1:8080")));
    assert_true(srv_origin_same(S("http://127.0.0.1"), S("127.0.0.1")));
    assert_true(srv_origin_same(S("http://[::1]:8080"), S("[::1]:8080")));
    assert_true(srv_origin_same(S("http://localhost:8080"), S("localhost:8080")));
    assert_true(srv_origin_same(S("http://192.168.1.5:80"), S("192.168.1.5:80")));
    assert_false(srv_origin_same(S("http://evil.example:8080"), S("evil.example:8080"))); /* DNS rebinding */
    assert_false(srv_origin_same(S("http://127.0.0.1:8081"), S("127.0.0.1:8080")));
    assert_false(srv_origin_same(S("https://127.0.0.1:8080"), S("127.0.0.1:8080")));
    assert_false(srv_origin_same(S("http://127.0.0.1:8080"), S("localhost:8080")));
    assert_false(srv_origin_same(S("null"), S("127.0.0.1:8080")));
    assert_false(srv_origin_same(S("http://"), S("")));
    assert_false(srv_origin_same(S("http://127.0.0.1:"), S("127.0.0.1:")));
    assert_false(srv_origin_same(S("http://127.0.0.1:80x"), S("127.0.0.1:80x")));
    assert_false(srv_origin_same(S("http://[]:80"), S("[]:80")));
    assert_false(srv_origin_same(S("http://[::1"), S("[::1")));
    assert_false(srv_origin_same(S("http://1.2.3.4.evil"), S("1.2.3.4.evil")));
    assert_false(srv_origin_same(S("http://127.0.0.1\0:80"), S("127.0.0.1\0:80")));
    assert_false(srv_origin_same((srv_str){NULL, 0}, S("127.0.0.1")));
    /* In the head check: one Host, and the rule holds with no --allowed-origins. */
    srv_policy p = {0};
    srv_err e;
    srv_head h = {0};
    add(&h, "Host", "127.0.0.1:9", 11);
    add(&h, "Origin", "http://127.0.0.1:9", 18);
    assert_int_equal(srv_head_check_framing(&p, &h, "HTTP/1.1", &e), 0);
    srv_head r = {0};
    add(&r, "Host", "evil.example:9", 14);
    add(&r, "Origin", "http://evil.example:9", 21);
    assert_int_equal(srv_head_check_framing(&p, &r, "HTTP/1.1", &e), -1);
    assert_int_equal(e.status, 403);
}

static void test_framing(void **state) {
    (void)state;
    srv_policy p = {.max_body = 100};
    srv_err e;
    srv_head h = {0};
    add(&h, "Content-Length", "10", 2);
    add(&h, "content-length", " 10 ", 4);
    assert_int_equal(srv_head_check_framing(&p, &h, "HTTP/1.0", &e), 0); /* equal duplicates: one value */
    add(&h, "Content-Length", "5", 1);
    assert_int_equal(srv_head_check_framing(&p, &h, "HTTP/1.0", &e), -1);
    assert_int_equal(e.status, 400);

    srv_head g = {0};
    assert_int_equal(srv_head_check_framing(&p, &g, "HTTP/1.1", &e), -1); /* no Host */
    assert_string_equal(e.code, "invalid_host");
    add(&g, "Host", "x", 1);
    assert_int_equal(srv_head_check_framing(&p, &g, "HTTP/1.1", &e), 0);
    add(&g, "X-Note", "a\0b", 3);
    assert_int_equal(srv_head_check_framing(&p, &g, "HTTP/1.1", &e), -1);
    assert_string_equal(e.code, "invalid_header");

    srv_head o = {0};
    add(&o, "Origin", "http://evil.example", 19);
    assert_int_equal(srv_head_check_framing(&p, &o, "HTTP/1.0", &e), -1);
    assert_int_equal(e.status, 403);
}

static void test_access(void **state) {
    (void)state;
    srv_policy p = {.api_key = "k3y", .api_key_len = 3, .max_body = 100};
    srv_req_kind post = {.post = true, .need_key = true};
    srv_err e;
    srv_head h = {0};
    add(&h, "Authorization", "Bearer k3y", 10);
    add(&h, "Content-Type", "text/plain", 10);
    assert_int_equal(srv_head_check_access(&p, &h, &post, &e), -1);
    assert_int_equal(e.status, 415);
    srv_head j = {0};
    add(&j, "Content-Type", "application/json", 16);
    assert_int_equal(srv_head_check_access(&p, &j, &post, &e), -1);
    assert_int_equal(e.status, 401);
    add(&j, "Authorization", "Bearer k3y", 10);
    assert_int_equal(srv_head_check_access(&p, &j, &post, &e), 0);
    add(&j, "Content-Length", "101", 3);
    assert_int_equal(srv_head_check_access(&p, &j, &post, &e), -1);
    assert_int_equal(e.status, 413);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_media_type), cmocka_unit_test(test_key_exact_bytes), cmocka_unit_test(test_origins),
        cmocka_unit_test(test_origin_same),
        cmocka_unit_test(test_framing), cmocka_unit_test(test_access),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
